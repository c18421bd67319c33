//! Sessions between a host and its clients: handshake, heartbeat, rate limits, close codes — sans-IO.
//!
//! A session is a state machine per peer that takes transport messages and `now`
//! and gives back messages to send, events and its next deadline, in the manner of
//! quinn-proto and str0m: it never reads a clock, opens a socket or spawns a thread.
//! The host runs one [`HostSession`] per connected peer (`session/host.rs`), a client one
//! [`ClientSession`] (`session/client.rs`); any transport (the in-memory link, WebRTC data channels)
//! moves the bytes:
//!
//! ```text
//!   transport ──message──► handle_message(now, channel, bytes)
//!   timer     ──────────► handle_timeout(now)
//!             ◄─────────── poll_transmit() -> (channel, bytes)
//!             ◄─────────── poll_event()    -> HostEvent / ClientEvent
//!             ◄─────────── poll_timeout()  -> next deadline
//! ```
//!
//! # Handshake
//!
//! The client's first frame is `HELLO` (JSON [`Hello`]: protocol version, build,
//! nickname, optional lobby password, optional resume token). A version other than
//! [`PROTOCOL_VERSION`] is rejected at once with 4410. Otherwise the host's session
//! reports [`HostEvent::Hello`] and the host decides: [`HostSession::accept`] sends
//! `WELCOME` (JSON [`Welcome`]: match id, player id, session token, host epoch, tick)
//! and then the client config on `CONFIG_DATA`; [`HostSession::reject`] sends
//! `REJECT` and closes with the code.
//!
//! # Heartbeat and latency (spec 000 "RTT и кики")
//!
//! The host pings every [`HostSessionConfig::ping_interval`] (3 s); the client answers
//! at once. Each answer is an RTT sample folded into an EMA, which the host publishes
//! in the stat table's latency column. The host closes the session with 4003 when the
//! EMA passes [`HostSessionConfig::max_latency_ms`] (1000) and with 4004 after
//! [`HostSessionConfig::max_missed_pings`] (5) pings in a row went unanswered; a peer
//! that never says hello within [`HostSessionConfig::hello_timeout`] is closed with 4408.
//! Every ping carries the host's clock and its current RTT estimate, from which the
//! client estimates the server time it interpolates against.
//!
//! # Limits
//!
//! A frame above 256 KiB or one that does not decode closes that peer with 4400 and
//! touches nothing else. Input packets, chat lines and votes go through token buckets;
//! what exceeds a bucket is dropped, and a peer that keeps pushing past it (its drops
//! exhaust a second bucket of the same size) is closed with 4413.
//!
//! # Close codes
//!
//! | code | name | reason string |
//! |---|---|---|
//! | 1000 | normal | `bye` |
//! | 4003 | latency | `latency too high` |
//! | 4004 | missed pings | `missed pings` |
//! | 4400 | protocol | `protocol violation` |
//! | 4401 | password | `wrong lobby password` |
//! | 4408 | heartbeat | `no hello or heartbeat in time` |
//! | 4409 | replaced | `replaced by a new connection` |
//! | 4410 | version | `unsupported protocol version` |
//! | 4413 | rate | `rate limit exceeded` |
//! | 4500 | internal | `internal error` |
//! | 4503 | server full | `server full` |

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::frame::{self, Channel, Chunker, Reassembler};

mod client;
mod host;

pub use client::*;
pub use host::*;

/// The session protocol's version: hello and host must match exactly.
pub const PROTOCOL_VERSION: u32 = 1;

/// Close codes and their reason strings (see the module docs' table).
pub mod close {
    /// Normal close.
    pub const NORMAL: u16 = 1000;
    /// Smoothed latency above the limit.
    pub const LATENCY: u16 = 4003;
    /// Too many pings in a row without an answer.
    pub const MISSED_PINGS: u16 = 4004;
    /// A frame that is too big or does not decode, or a message out of place.
    pub const PROTOCOL: u16 = crate::frame::CLOSE_PROTOCOL_ERROR;
    /// Wrong lobby password.
    pub const BAD_PASSWORD: u16 = 4401;
    /// No hello (or no traffic at all) in time.
    pub const HEARTBEAT: u16 = 4408;
    /// A newer connection took this session's slot.
    pub const REPLACED: u16 = 4409;
    /// The protocol versions differ.
    pub const VERSION: u16 = 4410;
    /// Inputs, chat, votes or control messages (pongs, auth responses, `LINKS`, checkpoint
    /// requests, claims) beyond their rate limits.
    pub const RATE: u16 = 4413;
    /// The host failed.
    pub const INTERNAL: u16 = 4500;
    /// No free slot.
    pub const SERVER_FULL: u16 = 4503;

    /// The short ASCII reason string of a code.
    pub fn reason(code: u16) -> &'static str {
        match code {
            NORMAL => "bye",
            LATENCY => "latency too high",
            MISSED_PINGS => "missed pings",
            PROTOCOL => "protocol violation",
            BAD_PASSWORD => "wrong lobby password",
            HEARTBEAT => "no hello or heartbeat in time",
            REPLACED => "replaced by a new connection",
            VERSION => "unsupported protocol version",
            RATE => "rate limit exceeded",
            INTERNAL => "internal error",
            SERVER_FULL => "server full",
            _ => "closed",
        }
    }
}

/// A session token: 128 random bits issued by the host, the only way back into a slot.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionToken(pub [u8; 16]);

impl SessionToken {
    /// Parses the 32-hex-digit form.
    pub fn parse(text: &str) -> Option<SessionToken> {
        let bytes = text.as_bytes();
        if bytes.len() != 32 {
            return None;
        }
        let mut out = [0u8; 16];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            let hex = |c: u8| (c as char).to_digit(16);
            out[i] = (hex(pair[0])? * 16 + hex(pair[1])?) as u8;
        }
        Some(SessionToken(out))
    }
}

impl fmt::Display for SessionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl fmt::Debug for SessionToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Tokens are secrets: logs show only their first bytes.
        write!(f, "SessionToken({:02x}{:02x}…)", self.0[0], self.0[1])
    }
}

impl Serialize for SessionToken {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SessionToken {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        SessionToken::parse(&text).ok_or_else(|| serde::de::Error::custom("a session token is 32 hex digits"))
    }
}

/// The client's first frame. Fields a host does not know are ignored, so that what a
/// client can do may grow without a new protocol version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hello {
    /// [`PROTOCOL_VERSION`] of the client.
    pub version: u32,
    /// The client's build, for logs.
    pub build: String,
    /// The nickname asked for (the host trims it and makes it unique).
    pub nickname: String,
    /// The lobby password, when the lobby has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// The token of a slot to take back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_token: Option<SessionToken>,
    /// Join to watch, not to play.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spectator: bool,
    /// The snapshot formats the client decodes besides format 5, which every client does
    /// (6: [delta frames](crate::delta)). The host picks the newest it writes too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshot_formats: Vec<u8>,
    /// The client can take the match over (it keeps a shadow of it from checkpoints and the
    /// log, and hosts it when its turn comes): only such a client is ever a successor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub can_host: bool,
    /// The client aims with a pointer ([`AimEvent`](crate::input::AimEvent)s in its input batches) at a host that
    /// takes them: one that says so in its welcome ([`Welcome::aim`]). A host of a build
    /// before aims ignores the field and refuses such batches, so the client never sends one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aim: bool,
    /// The client answers a successor's check of the room before a claim (`HOST_CHECK`, see
    /// [Before a claim](crate::migration#before-a-claim-asking-the-room)): only such peers
    /// are voters, and a successor waits for no other's answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checks: bool,
    /// The client watches and may take the match over, though it does not play: a headless
    /// host that stepped down stays in the room this way, so that the match goes on with it
    /// when the players who hold it leave. Only a spectator's hello says so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keeper: bool,
    /// The client says which world it saw when it pressed a one-shot key (a
    /// [`ViewEvent`](crate::input::ViewEvent) right before the press in its input batch), so
    /// that the host can judge a shot by what its shooter saw (lag compensation), at a host
    /// that takes them: one that says so in its welcome ([`Welcome::view`]). A client that
    /// does not offer them is not compensated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub view: bool,
}

impl Hello {
    /// A hello of this protocol version from `nickname` (build `build`): no password, no
    /// token, to play, decoding every snapshot format this build knows, able to host and
    /// to aim, answering the room's checks.
    pub fn new(nickname: impl Into<String>, build: impl Into<String>) -> Self {
        Hello {
            version: PROTOCOL_VERSION,
            build: build.into(),
            nickname: nickname.into(),
            password: None,
            resume_token: None,
            spectator: false,
            snapshot_formats: vec![crate::delta::DELTA_FORMAT_VERSION],
            can_host: true,
            aim: true,
            checks: true,
            keeper: false,
            view: true,
        }
    }

    /// The snapshot format a host that writes formats 5 and 6 sends this client.
    pub fn snapshot_format(&self) -> u8 {
        if self.snapshot_formats.contains(&crate::delta::DELTA_FORMAT_VERSION) {
            crate::delta::DELTA_FORMAT_VERSION
        } else {
            crate::schema::SNAPSHOT_FORMAT_VERSION
        }
    }
}

/// The host's answer to an accepted hello.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Welcome {
    /// The match.
    pub match_id: String,
    /// The client's player id (its slot).
    pub player_id: u8,
    /// The nickname the host gave (trimmed, unique).
    pub nickname: String,
    /// The token to come back with.
    pub token: SessionToken,
    /// The host's epoch (bumped at every host change).
    pub epoch: u32,
    /// The host's tick when it accepted.
    pub tick: u32,
    /// Whether the slot was taken back with a token (team and score kept).
    pub resumed: bool,
    /// The last input seq the host applied for this slot: a resumed client numbers on from here.
    pub input_seq: u32,
    /// The client watches: its keys are the spectator keys (`nextPlayer`, `prevPlayer`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub spectator: bool,
    /// The snapshot format the host sends this client (5 when absent).
    #[serde(default = "format_5", skip_serializing_if = "is_format_5")]
    pub snapshot_format: u8,
    /// The host takes this client's aims ([`AimEvent`](crate::input::AimEvent)s in its input batches). Said only to
    /// a client whose hello offered them ([`Hello::aim`]): a client of a build before aims
    /// refuses a welcome with a field it does not know.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub aim: bool,
    /// The host takes this client's views ([`ViewEvent`](crate::input::ViewEvent)s before
    /// its presses) and judges its shots by them. Said only to a client whose hello offered them ([`Hello::view`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub view: bool,
}

fn format_5() -> u8 {
    crate::schema::SNAPSHOT_FORMAT_VERSION
}

fn is_format_5(format: &u8) -> bool {
    *format == crate::schema::SNAPSHOT_FORMAT_VERSION
}

/// The key table of spectators (keyset 0): switch the observed player.
pub fn spectator_keys() -> crate::input::KeyTable {
    crate::input::KeyTable::from_json(
        r#"{ "nextPlayer": { "bit": 0, "type": 1 }, "prevPlayer": { "bit": 1, "type": 1 } }"#,
    )
    .unwrap_or_default()
}

/// Why a hello was refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reject {
    /// The close code.
    pub code: u16,
    /// A short human-readable reason.
    pub reason: String,
}

/// Longest nickname, in characters.
pub const MAX_NICKNAME: usize = 16;

/// Trims a nickname and checks it: 1–16 printable characters. Names starting with `@` are
/// the engine's (its votes, its commands), so a leading `@` is dropped.
pub fn clean_nickname(raw: &str) -> Option<String> {
    let name = raw.trim().trim_start_matches('@').trim_start();
    let n = name.chars().count();
    ((1..=MAX_NICKNAME).contains(&n) && name.chars().all(|c| !c.is_control())).then(|| name.to_owned())
}

/// Whether two nicknames are the same name: equal but for case (Unicode lower case), so
/// that a host keeps names apart as people read them and `/w bob` finds `Bob`.
pub fn same_nickname(a: &str, b: &str) -> bool {
    a == b || a.chars().flat_map(char::to_lowercase).eq(b.chars().flat_map(char::to_lowercase))
}

/// `name` if `taken` says it is free, else `name (2)`, `name (3)`… shortened to fit 16 characters.
pub fn unique_nickname(name: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(name) {
        return name.to_owned();
    }
    for k in 2u32.. {
        let suffix = format!(" ({k})");
        let room = MAX_NICKNAME.saturating_sub(suffix.chars().count());
        let base: String = name.chars().take(room).collect();
        let candidate = format!("{}{suffix}", base.trim_end());
        if !taken(&candidate) {
            return candidate;
        }
    }
    unreachable!("some suffix is always free")
}

/// A token bucket: `capacity` at once, refilled at `per_second`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bucket {
    capacity: f64,
    per_second: f64,
    tokens: f64,
    last: Duration,
}

impl Bucket {
    /// A full bucket.
    pub fn new(capacity: f64, per_second: f64) -> Self {
        Bucket { capacity, per_second, tokens: capacity, last: Duration::ZERO }
    }

    /// Takes one token if there is one.
    pub fn take(&mut self, now: Duration) -> bool {
        let elapsed = now.saturating_sub(self.last).as_secs_f64();
        self.last = self.last.max(now);
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.capacity);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// A rate limit that drops what exceeds it and reports abuse when drops keep coming.
#[derive(Clone, Debug, PartialEq)]
pub struct RateLimit {
    allowed: Bucket,
    tolerated_drops: Bucket,
}

/// What a [`RateLimit`] says of one more message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateVerdict {
    /// Within the limit.
    Allow,
    /// Over the limit: drop it.
    Drop,
    /// Over the limit again and again: close the peer (4413).
    Abuse,
}

impl RateLimit {
    /// `burst` messages at once, `per_second` sustained; as many drops again are tolerated.
    pub fn new(burst: f64, per_second: f64) -> Self {
        RateLimit { allowed: Bucket::new(burst, per_second), tolerated_drops: Bucket::new(burst, per_second) }
    }

    /// Judges one more message at `now`.
    pub fn check(&mut self, now: Duration) -> RateVerdict {
        if self.allowed.take(now) {
            RateVerdict::Allow
        } else if self.tolerated_drops.take(now) {
            RateVerdict::Drop
        } else {
            RateVerdict::Abuse
        }
    }
}

/// At most [`MAX_REASON`] bytes of `text`, cut at a character.
fn bounded(mut text: String) -> String {
    if text.len() > MAX_REASON {
        let mut at = MAX_REASON;
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.truncate(at);
    }
    text
}

/// The longest reason a host writes into a `REJECT`, in bytes.
pub const MAX_REASON: usize = 200;

/// A `CLOSE` frame's payload: `[u16 code][reason]`.
fn close_payload(code: u16) -> Vec<u8> {
    let mut payload = code.to_be_bytes().to_vec();
    payload.extend_from_slice(close::reason(code).as_bytes());
    payload
}

/// The code of a `CLOSE` payload (a payload too short to hold one reads as a normal close).
fn close_code_of(payload: &[u8]) -> u16 {
    payload.get(..2).map_or(close::NORMAL, |b| u16::from_be_bytes([b[0], b[1]]))
}

/// A whole frame out of one transport message: reliable messages go through the reassembler
/// (`Ok(None)` while a chunked frame is incomplete); any message above the transport's limit
/// (the chunker never makes one) or a bad chunk is `Err`.
fn whole_frame(reassembler: &mut Reassembler, channel: Channel, bytes: &[u8]) -> Result<Option<Vec<u8>>, ()> {
    if bytes.len() > frame::MAX_MESSAGE {
        return Err(());
    }
    match channel {
        Channel::Reliable => reassembler.push(bytes).map_err(|_| ()),
        Channel::Unreliable => Ok(Some(bytes.to_vec())),
    }
}

fn push_frame(
    out: &mut VecDeque<(Channel, Vec<u8>)>,
    chunker: &mut Chunker,
    channel: Channel,
    opcode: u8,
    payload: &[u8],
) {
    let mut bytes = Vec::with_capacity(payload.len() + 1);
    frame::encode(opcode, payload, &mut bytes);
    match channel {
        Channel::Unreliable => out.push_back((channel, bytes)),
        Channel::Reliable => {
            if let Ok(parts) = chunker.split(&bytes) {
                out.extend(parts.into_iter().map(|p| (Channel::Reliable, p)));
            }
        }
    }
}

/// What the tests of this crate's session and client share.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use crate::frame::op;

    /// The welcome the tests' host gives Ann.
    pub(crate) fn welcome() -> Welcome {
        Welcome {
            match_id: "m1".into(),
            player_id: 3,
            nickname: "ann".into(),
            token: SessionToken([7; 16]),
            epoch: 1,
            tick: 120,
            resumed: false,
            input_seq: 0,
            spectator: false,
            snapshot_format: 6,
            aim: true,
            view: true,
        }
    }

    /// Every opcode either end may send, and any byte besides.
    pub(crate) fn opcode() -> impl proptest::strategy::Strategy<Value = u8> {
        use proptest::prelude::*;
        prop_oneof![
            any::<u8>(),
            (0u8..=18),
            (32u8..=51),
            Just(op::client::KEYS_DATA),
            Just(op::client::CHAT),
            Just(op::CHUNK),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{opcode, welcome};
    use super::*;
    use crate::frame::op;
    use crate::input::{self, Aim, AimEvent, BinaryKeyEvent, KeyAction, WireInput};

    const MS: Duration = Duration::from_millis(1);

    fn hello(name: &str) -> Hello {
        Hello::new(name, "test")
    }

    /// Moves every queued message between the two sessions, `latency` apart, at `now`.
    fn progress(host: &mut HostSession, client: &mut ClientSession, now: Duration) {
        for _ in 0..8 {
            let mut moved = false;
            while let Some((ch, m)) = client.poll_transmit() {
                host.handle_message(now, ch, &m);
                moved = true;
            }
            while let Some((ch, m)) = host.poll_transmit() {
                client.handle_message(now, ch, &m);
                moved = true;
            }
            if !moved {
                break;
            }
        }
    }

    fn connected() -> (HostSession, ClientSession) {
        let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
        let mut client = ClientSession::new(ClientSessionConfig::new(hello("ann")), Duration::ZERO);
        progress(&mut host, &mut client, Duration::ZERO);
        assert_eq!(host.poll_event(), Some(HostEvent::Hello(hello("ann"))));
        host.accept(&welcome(), &serde_json::json!({ "engine": { "timeStepMs": 8.333 } }));
        progress(&mut host, &mut client, Duration::ZERO);
        (host, client)
    }

    fn events(client: &mut ClientSession) -> Vec<ClientEvent> {
        std::iter::from_fn(|| client.poll_event()).collect()
    }

    #[test]
    fn handshake_welcome_then_config() {
        let (host, mut client) = connected();
        assert!(host.is_active() && client.is_active());
        let ev = events(&mut client);
        assert_eq!(ev[0], ClientEvent::Welcomed(welcome()));
        assert_eq!(
            ev[1],
            ClientEvent::Meta { port: op::CONFIG_DATA, payload: br#"{"engine":{"timeStepMs":8.333}}"#.to_vec() }
        );
    }

    #[test]
    fn version_mismatch_is_rejected_with_4410() {
        let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
        let mut config = ClientSessionConfig::new(hello("bob"));
        config.hello.version = PROTOCOL_VERSION + 1;
        let mut client = ClientSession::new(config, Duration::ZERO);
        progress(&mut host, &mut client, Duration::ZERO);
        assert_eq!(host.close_code(), Some(close::VERSION));
        let ev = events(&mut client);
        let why = format!("protocol version {}, this host speaks {PROTOCOL_VERSION}", PROTOCOL_VERSION + 1);
        assert_eq!(ev[0], ClientEvent::Rejected(Reject { code: 4410, reason: why }));
        assert_eq!(client.close_code(), Some(4410));
    }

    #[test]
    fn a_hello_that_does_not_read_gets_a_reject_that_says_why() {
        let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
        let mut hello = serde_json::to_value(Hello::new("bob", "test")).unwrap();
        hello["nickname"] = serde_json::json!(7);
        let mut frame = vec![op::HELLO];
        frame.extend(serde_json::to_vec(&hello).unwrap());
        host.handle_message(MS, Channel::Reliable, &frame);
        assert_eq!(host.close_code(), Some(close::PROTOCOL));
        let mut client = ClientSession::new(ClientSessionConfig::new(Hello::new("bob", "test")), Duration::ZERO);
        while let Some((ch, bytes)) = host.poll_transmit() {
            client.handle_message(MS, ch, &bytes);
        }
        let Some(ClientEvent::Rejected(reject)) =
            events(&mut client).into_iter().find(|e| matches!(e, ClientEvent::Rejected(_)))
        else {
            panic!("a reject")
        };
        assert_eq!(reject.code, close::PROTOCOL);
        assert!(reject.reason.starts_with("the hello does not read: invalid type"), "{}", reject.reason);
        assert!(reject.reason.len() <= MAX_REASON);
        // An unknown field is not a reason: capabilities may grow.
        let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
        let mut hello = serde_json::to_value(Hello::new("bob", "test")).unwrap();
        hello["someDayACapability"] = serde_json::json!({ "a": 1 });
        let mut frame = vec![op::HELLO];
        frame.extend(serde_json::to_vec(&hello).unwrap());
        host.handle_message(MS, Channel::Reliable, &frame);
        assert!(matches!(host.poll_event(), Some(HostEvent::Hello(_))), "{:?}", host.close_code());
    }

    #[test]
    fn a_close_before_the_welcome_is_a_refusal() {
        // A host that closes without a reject (an older one, or one stopping) is an answer: the
        // client is refused with the close's code and reason instead of waiting for ever.
        let mut client = ClientSession::new(ClientSessionConfig::new(hello("bob")), Duration::ZERO);
        let mut frame = vec![op::CLOSE];
        frame.extend_from_slice(&close::SERVER_FULL.to_be_bytes());
        frame.extend_from_slice(b"server full");
        client.handle_message(MS, Channel::Reliable, &frame);
        assert!(client.answered());
        assert_eq!(client.close_code(), Some(close::SERVER_FULL));
        let closed = ClientEvent::Closed { code: close::SERVER_FULL, reason: "server full".into(), by_peer: true };
        assert_eq!(events(&mut client), vec![closed]);
    }

    #[test]
    fn no_hello_in_time_is_4408() {
        let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
        assert_eq!(host.poll_timeout(), Some(Duration::from_secs(10)));
        host.handle_timeout(Duration::from_secs(9));
        assert_eq!(host.close_code(), None);
        host.handle_timeout(Duration::from_secs(10));
        assert_eq!(host.close_code(), Some(close::HEARTBEAT));
    }

    #[test]
    fn a_pong_is_the_pings_nonce_alone_and_an_echo_of_the_whole_ping_is_refused() {
        let (mut host, mut client) = connected();
        host.handle_timeout(Duration::ZERO);
        progress(&mut host, &mut client, MS);
        assert_eq!(host.latency_ms(), Some(1.0), "the client's pong (the nonce) is measured");
        // A pong of the ping's whole 16 bytes, as an echo would be, is a protocol error.
        client.send_meta(op::PONG, &[0; 16]);
        progress(&mut host, &mut client, 2 * MS);
        assert_eq!(host.close_code(), Some(close::PROTOCOL));
    }

    #[test]
    fn pings_measure_latency_and_the_client_estimates_server_time() {
        let (mut host, mut client) = connected();
        host.handle_timeout(Duration::ZERO); // the first ping
        // 80 ms later the ping reaches the client, 80 ms after that the pong reaches the host.
        let (ch, ping) = host.poll_transmit().expect("ping");
        client.handle_message(80 * MS, ch, &ping);
        let (ch, pong) = client.poll_transmit().expect("pong");
        host.handle_message(160 * MS, ch, &pong);
        assert_eq!(host.latency_ms(), Some(160.0));
        assert_eq!(host.poll_event(), Some(HostEvent::Latency(160.0)));
        // The next ping carries the EMA; the client then puts the host clock at ping + rtt/2.
        host.handle_timeout(Duration::from_secs(3));
        let (ch, ping) = host.poll_transmit().expect("ping");
        client.handle_message(Duration::from_secs(3) + 80 * MS, ch, &ping);
        let est = client.server_time_ms(Duration::from_secs(3) + 100 * MS).expect("estimate");
        assert_eq!(est, 3000.0 + 80.0 + 20.0);
        assert_eq!(client.rtt_ms(), Some(160.0));
    }

    #[test]
    fn five_missed_pings_is_4004() {
        let (mut host, _client) = connected();
        for k in 0..5 {
            host.handle_timeout(Duration::from_secs(3 * k));
            assert_eq!(host.close_code(), None, "after ping {k}");
        }
        host.handle_timeout(Duration::from_secs(15));
        assert_eq!(host.close_code(), Some(close::MISSED_PINGS));
    }

    #[test]
    fn a_kicked_player_sees_why_on_the_black_screen() {
        let (mut host, mut client) = connected();
        let _ = events(&mut client);
        host.close(close::RATE);
        progress(&mut host, &mut client, MS);
        let ev = events(&mut client);
        assert_eq!(
            ev[0],
            ClientEvent::Meta { port: op::TECH_INFORM_DATA, payload: br#"[2,[4413,"rate limit exceeded"]]"#.to_vec() }
        );
        assert!(matches!(&ev[1], ClientEvent::Closed { code: 4413, by_peer: true, .. }));
    }

    #[test]
    fn latency_above_the_limit_is_4003() {
        let (mut host, mut client) = connected();
        host.handle_timeout(Duration::ZERO);
        while let Some((ch, m)) = host.poll_transmit() {
            client.handle_message(MS, ch, &m);
        }
        let (ch, pong) = client.poll_transmit().expect("pong");
        host.handle_message(Duration::from_millis(1200), ch, &pong);
        assert_eq!(host.close_code(), Some(close::LATENCY));
    }

    #[test]
    fn garbage_and_oversize_frames_are_4400() {
        let (mut host, _) = connected();
        host.handle_message(MS, Channel::Unreliable, &[]);
        assert_eq!(host.close_code(), Some(close::PROTOCOL));

        let (mut host, _) = connected();
        host.handle_message(MS, Channel::Unreliable, &[op::client::KEYS_DATA, 9, 9]);
        assert_eq!(host.close_code(), Some(close::PROTOCOL), "an input batch that does not decode");

        let (mut host, _) = connected();
        host.handle_message(MS, Channel::Reliable, &vec![op::client::CHAT; frame::MAX_MESSAGE + 1]);
        assert_eq!(host.close_code(), Some(close::PROTOCOL), "a message past the transport limit");
    }

    /// A peer that was this process's client, or a fellow client saying hello to whoever may
    /// host, sends frames of a client's role late, after the roles changed: a host's session
    /// ignores them; a second welcome is still a violation.
    #[test]
    fn a_welcomed_client_ignores_a_hello_and_a_pong_late_from_before_the_roles_changed() {
        let (_, mut client) = connected();
        let hello = serde_json::to_vec(&Hello::new("bob", "test")).expect("json");
        client.handle_message(MS, Channel::Reliable, &[&[op::HELLO][..], &hello].concat());
        client.handle_message(MS, Channel::Unreliable, &[op::PONG, 0, 0, 0, 7]);
        assert!(client.is_active(), "{:?}", client.close_code());
        let welcome = serde_json::to_vec(&welcome()).expect("json");
        client.handle_message(MS, Channel::Reliable, &[&[op::WELCOME][..], &welcome].concat());
        assert_eq!(client.close_code(), Some(close::PROTOCOL));
    }

    #[test]
    fn keys_data_takes_a_binary_batch_or_one_event_in_the_text_form() {
        let (mut host, _) = connected();
        let _ = std::iter::from_fn(|| host.poll_event()).count();
        host.handle_message(MS, Channel::Unreliable, b"\x0512:down:forward");
        let text = input::InputEvent::new(12, KeyAction::Down, "forward").expect("an event");
        assert_eq!(host.poll_event(), Some(HostEvent::TextInput(text)));
        let mut batch = vec![op::client::KEYS_DATA];
        input::encode_events(&[(13, KeyAction::Up, 0)], &mut batch).expect("a batch");
        host.handle_message(MS, Channel::Unreliable, &batch);
        assert!(matches!(host.poll_event(), Some(HostEvent::Input(e)) if e.len() == 1));
        for bad in [&b"12:down"[..], b"12:sideways:forward", b"x:down:forward", b"\xff\xfe", b"12:down:forward "] {
            let (mut host, _) = connected();
            host.handle_message(MS, Channel::Unreliable, &[&[op::client::KEYS_DATA][..], bad].concat());
            assert_eq!(host.close_code(), Some(close::PROTOCOL), "{bad:?}");
        }
    }

    #[test]
    fn links_reports_and_checkpoint_requests_reach_the_host() {
        let (mut host, mut client) = connected();
        let _ = std::iter::from_fn(|| host.poll_event()).count();
        client.send_meta(op::LINKS, &[1; 17]);
        client.send_meta(op::CHECKPOINT_REQUEST, &[]);
        progress(&mut host, &mut client, MS);
        let got: Vec<HostEvent> = std::iter::from_fn(|| host.poll_event()).collect();
        assert_eq!(got, [HostEvent::Links(vec![1; 17]), HostEvent::CheckpointRequest]);
        assert!(host.is_active());

        let (mut host, _) = connected();
        host.handle_message(MS, Channel::Reliable, &[op::CHECKPOINT_REQUEST, 0]);
        assert_eq!(host.close_code(), Some(close::PROTOCOL), "a checkpoint request has no payload");
    }

    #[test]
    fn inputs_repeat_until_acknowledged() {
        let (mut host, mut client) = connected();
        while host.poll_event().is_some() {}
        client.push_input(1, KeyAction::Down, 0);
        client.push_input(2, KeyAction::Down, 6);
        client.flush_inputs(Duration::ZERO);
        client.push_input(3, KeyAction::Up, 0);
        client.flush_inputs(MS);
        assert!(client.poll_transmit().is_some() && client.poll_transmit().is_none(), "one packet within 8 ms");
        client.flush_inputs(10 * MS);
        client.flush_inputs(11 * MS);
        client.flush_inputs(20 * MS);
        assert!(
            client.poll_transmit().is_some() && client.poll_transmit().is_none(),
            "the new event at once, no repeat yet"
        );
        client.flush_inputs(27 * MS);
        progress(&mut host, &mut client, MS);
        let got: Vec<Vec<u32>> = std::iter::from_fn(|| host.poll_event())
            .filter_map(|e| match e {
                HostEvent::Input(ev) => Some(ev.iter().map(WireInput::seq).collect()),
                _ => None,
            })
            .collect();
        assert_eq!(got, [vec![1, 2, 3]], "the repeat after 16.7 ms; the first two packets were dropped above");
        client.ack_inputs(2);
        assert_eq!(client.unacked_inputs(), 1);
        client.push_input(2, KeyAction::Up, 6);
        assert_eq!(client.unacked_inputs(), 1, "an already acknowledged seq is not queued");
    }

    #[test]
    fn chat_flood_is_dropped_then_closed_with_4413() {
        let (mut host, mut client) = connected();
        while host.poll_event().is_some() {}
        for _ in 0..5 {
            client.send_meta(op::client::CHAT, br#""hi""#);
        }
        progress(&mut host, &mut client, MS);
        let chats = std::iter::from_fn(|| host.poll_event()).filter(|e| matches!(e, HostEvent::Meta { .. })).count();
        assert_eq!(chats, 5, "the burst passes");
        for _ in 0..5 {
            client.send_meta(op::client::CHAT, br#""spam""#);
        }
        progress(&mut host, &mut client, 2 * MS);
        assert_eq!(host.close_code(), None, "the next five are dropped");
        assert!(std::iter::from_fn(|| host.poll_event()).all(|e| !matches!(e, HostEvent::Meta { .. })));
        client.send_meta(op::client::CHAT, br#""spam""#);
        progress(&mut host, &mut client, 3 * MS);
        assert_eq!(host.close_code(), Some(close::RATE));
    }

    #[test]
    fn a_flood_of_control_messages_is_dropped_then_closed_with_4413() {
        let (mut host, mut client) = connected();
        while host.poll_event().is_some() {}
        let (burst, _) = HostSessionConfig::default().control_rate;
        for _ in 0..burst as usize * 3 {
            client.send_meta(op::LINKS, &[1; 17]);
        }
        progress(&mut host, &mut client, MS);
        let links = std::iter::from_fn(|| host.poll_event()).filter(|e| matches!(e, HostEvent::Links(_))).count();
        assert_eq!(links, burst as usize, "the burst passes, the rest is dropped");
        assert_eq!(host.close_code(), Some(close::RATE), "and past the drops tolerated, the peer is closed");
    }

    #[test]
    fn frame_acks_go_out_once_per_newer_frame_and_reach_the_host() {
        let (mut host, mut client) = connected();
        while host.poll_event().is_some() {}
        let acks = |host: &mut HostSession| {
            std::iter::from_fn(|| host.poll_event())
                .filter_map(|e| match e {
                    HostEvent::FrameAck(seq) => Some(seq),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        client.ack_frame(5);
        client.ack_frame(3);
        client.flush_inputs(MS);
        client.flush_inputs(2 * MS);
        progress(&mut host, &mut client, 2 * MS);
        assert_eq!(acks(&mut host), vec![5], "the newest, once");
        client.ack_frame(5);
        client.flush_inputs(3 * MS);
        progress(&mut host, &mut client, 3 * MS);
        assert_eq!(acks(&mut host), Vec::<u32>::new(), "a frame acknowledged already goes no more");
        client.ack_frame(6);
        client.ack_frame(7);
        client.flush_inputs(4 * MS);
        let (channel, bytes) = client.poll_transmit().expect("an ack");
        assert_eq!((channel, bytes), (Channel::Unreliable, vec![op::FRAME_ACK, 0, 0, 0, 7]));
    }

    #[test]
    fn a_frame_ack_of_the_wrong_length_is_4400_and_a_flood_of_them_4413() {
        let (mut host, mut client) = connected();
        client.send_meta(op::FRAME_ACK, &[0, 0, 7]);
        progress(&mut host, &mut client, MS);
        assert_eq!(host.close_code(), Some(close::PROTOCOL));

        let (mut host, mut client) = connected();
        while host.poll_event().is_some() {}
        let (burst, _) = HostSessionConfig::default().ack_rate;
        for seq in 0..burst as u32 * 3 {
            client.send_meta(op::FRAME_ACK, &seq.to_be_bytes());
        }
        progress(&mut host, &mut client, MS);
        let acks = std::iter::from_fn(|| host.poll_event()).filter(|e| matches!(e, HostEvent::FrameAck(_))).count();
        assert_eq!(acks, burst as usize, "the burst passes, the rest is dropped");
        assert_eq!(host.close_code(), Some(close::RATE));
    }

    #[test]
    fn a_hello_may_carry_fields_this_host_does_not_know_and_names_the_formats_it_decodes() {
        let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
        let json = br#"{"version":1,"build":"next","nickname":"ann","snapshotFormats":[6,7],"voice":true}"#;
        let mut frame = Vec::new();
        frame::encode(op::HELLO, json, &mut frame);
        host.handle_message(Duration::ZERO, Channel::Reliable, &frame);
        let Some(HostEvent::Hello(hello)) = host.poll_event() else { panic!("a hello: {:?}", host.close_code()) };
        assert_eq!((hello.nickname.as_str(), hello.snapshot_format()), ("ann", 6));
        assert_eq!(Hello::new("a", "b").snapshot_format(), 6, "this build decodes delta frames");
        let old = Hello { snapshot_formats: Vec::new(), ..Hello::new("a", "b") };
        assert_eq!(old.snapshot_format(), 5, "a hello that names none gets format 5");
        assert_eq!(Hello { snapshot_formats: vec![9], ..old }.snapshot_format(), 5);
    }

    #[test]
    fn nicknames_are_trimmed_checked_and_made_unique() {
        assert_eq!(clean_nickname("  Ann  ").as_deref(), Some("Ann"));
        assert_eq!(clean_nickname("   "), None);
        assert_eq!(clean_nickname("a\u{7}b"), None);
        assert_eq!(clean_nickname(&"x".repeat(17)), None);
        assert_eq!(clean_nickname(" @@host").as_deref(), Some("host"), "'@' names are the engine's");
        assert_eq!(clean_nickname("@ "), None);
        assert_eq!(clean_nickname("a@b").as_deref(), Some("a@b"));
        assert!(same_nickname("Ann", "aNN") && same_nickname("ÄRGER", "ärger") && !same_nickname("ann", "anne"));
        let taken = ["Ann", "Ann (2)", "Sixteen-letters!"];
        assert_eq!(unique_nickname("Bob", |n| taken.contains(&n)), "Bob");
        assert_eq!(unique_nickname("Ann", |n| taken.contains(&n)), "Ann (3)");
        assert_eq!(unique_nickname("Sixteen-letters!", |n| taken.contains(&n)), "Sixteen-lett (2)");
    }

    #[test]
    fn tokens_print_as_hex_and_parse_back() {
        let t = SessionToken([0xab; 16]);
        assert_eq!(t.to_string(), "ab".repeat(16));
        assert_eq!(SessionToken::parse(&t.to_string()), Some(t));
        assert_eq!(SessionToken::parse("zz"), None);
        assert_eq!(format!("{t:?}"), "SessionToken(abab…)", "logs never show a whole token");
    }

    #[test]
    fn the_client_notices_a_silent_host() {
        let (_host, mut client) = connected();
        let _ = events(&mut client);
        client.handle_timeout(Duration::from_secs(15));
        assert!(matches!(events(&mut client)[..], [ClientEvent::Closed { code: 4408, by_peer: false, .. }]));
    }

    #[test]
    fn over_a_lossy_link_inputs_all_arrive_and_a_big_frame_is_chunked() {
        use crate::link::{LinkConfig, link_pair};
        let config = LinkConfig::new().latency(50 * MS).jitter(10 * MS).loss(0.1).seed(7);
        let (mut host_end, mut client_end) = link_pair(config);
        let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
        let mut client = ClientSession::new(ClientSessionConfig::new(hello("ann")), Duration::ZERO);
        let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut applied: Option<u32> = None;
        let mut got_big = false;
        let mut welcomed = false;
        let mut now = Duration::ZERO;
        while now < Duration::from_secs(20) {
            now += 5 * MS;
            while let Some((ch, m)) = host_end.poll_recv(now) {
                host.handle_message(now, ch, &m);
            }
            while let Some((ch, m)) = client_end.poll_recv(now) {
                client.handle_message(now, ch, &m);
            }
            host.handle_timeout(now);
            client.handle_timeout(now);
            while let Some(e) = host.poll_event() {
                match e {
                    HostEvent::Hello(_) => {
                        host.accept(&welcome(), &serde_json::json!({}));
                        host.send(Channel::Reliable, op::CHECKPOINT, &big);
                    }
                    // The host applies each seq at most once, in order: the key state's rule.
                    HostEvent::Input(events) => {
                        for e in events {
                            if applied.is_none_or(|a| e.seq() == a + 1) {
                                applied = Some(e.seq());
                            }
                        }
                    }
                    _ => {}
                }
            }
            while let Some(e) = client.poll_event() {
                match e {
                    ClientEvent::Welcomed(_) => welcomed = true,
                    ClientEvent::Engine { opcode: op::CHECKPOINT, payload } => got_big = payload == big,
                    _ => {}
                }
            }
            // The client presses a key every 20 ms for the first 2 s and learns what was applied
            // (as the player block would tell it) with the snapshot rate.
            let ms = now.as_millis() as u32;
            if welcomed && ms.is_multiple_of(20) && ms <= 2000 {
                client.push_input(ms / 20, if ms.is_multiple_of(40) { KeyAction::Down } else { KeyAction::Up }, 0);
            }
            if ms.is_multiple_of(35)
                && let Some(a) = applied
            {
                client.ack_inputs(a);
            }
            client.flush_inputs(now);
            while let Some((ch, m)) = host.poll_transmit() {
                host_end.send(now, ch, m);
            }
            while let Some((ch, m)) = client.poll_transmit() {
                client_end.send(now, ch, m);
            }
            if got_big && applied == Some(100) && client.unacked_inputs() == 0 {
                break;
            }
        }
        assert!(welcomed, "the handshake completes over the lossy link");
        assert!(got_big, "a 200 kB frame crosses the reliable channel in chunks");
        assert_eq!(applied, Some(100), "every input arrived, in order, despite 10% loss");
        assert!(client_end.stats().lost > 0, "the link did lose packets");
        assert_eq!(client.unacked_inputs(), 0);
        assert!(host.is_active(), "nobody was kicked: {:?}", host.close_code());
    }

    proptest::proptest! {
        #[test]
        fn a_stalled_input_queue_collapses_and_loses_no_key(
            // Mostly one key, so that the others' last events lie far back; bit 8 is an aim
            // (let go of when `down` is false).
            events in proptest::collection::vec((proptest::prop_oneof![9 => proptest::strategy::Just(7u8), 1 => 0u8..7, 1 => proptest::strategy::Just(8u8)], proptest::bool::ANY, 1u32..4), 1..500),
            acked_at in proptest::collection::vec(proptest::bool::weighted(0.004), 500),
        ) {
            use crate::input::{KeyKind, KeySpec, KeyState};
            // Bits 0..4 held keys, 4..8 one-shots; the host sometimes acknowledges what it had.
            let spec = |bit: u8| KeySpec { bit, kind: if bit < 4 { KeyKind::Held } else { KeyKind::OneShot } };
            let apply = |state: &mut KeyState, e: &WireInput| match e {
                WireInput::Key(e) => state.apply_bit(e.seq, e.action, spec(e.bit)),
                WireInput::Aim(e) => state.apply_aim(e.seq, e.aim),
                WireInput::View(e) => state.apply_view(e.seq, e.view),
            };
            let (mut host, mut truth) = (KeyState::default(), KeyState::default());
            let mut client = ClientSession::new(ClientSessionConfig::new(hello("a")), Duration::ZERO);
            let mut seq = 0;
            let mut fired = 0u64;
            for (k, &(bit, down, gap)) in events.iter().enumerate() {
                seq += gap;
                let action = if down { KeyAction::Down } else { KeyAction::Up };
                // A one-shot press goes after the view the player saw, as the client sends it.
                if (4..8).contains(&bit) && down {
                    let view = crate::input::ViewEvent { seq, view: crate::input::ViewTime { tick: seq, frac: 0 } };
                    client.push(WireInput::View(view));
                    apply(&mut truth, &WireInput::View(view));
                    seq += 1;
                }
                let event = match bit {
                    8 => WireInput::Aim(AimEvent { seq, aim: down.then_some(Aim { x: seq as f32, y: 1.0, flags: 0 }) }),
                    _ => WireInput::Key(BinaryKeyEvent { seq, action, bit }),
                };
                client.push(event);
                apply(&mut truth, &event);
                fired |= truth.step().fired;
                if acked_at[k] {
                    // What the host got of the queue so far, then acknowledged.
                    for e in client.unacked.clone() {
                        apply(&mut host, &e);
                    }
                    client.ack_inputs(host.last_input_seq());
                }
                proptest::prop_assert!(client.unacked_inputs() <= client.config.max_repeated_inputs.max(16));
            }
            // A press kept keeps the view it went with; no view is kept without its press.
            let left: Vec<WireInput> = client.unacked.iter().copied().collect();
            for (i, e) in left.iter().enumerate() {
                let next = left.get(i + 1);
                match e {
                    WireInput::Key(k) if k.bit >= 4 && k.action == KeyAction::Down && i > 0 => {
                        let before = left[i - 1];
                        let kept = matches!(before, WireInput::View(v) if v.seq + 1 == k.seq && v.view.tick == v.seq);
                        proptest::prop_assert!(kept || k.seq == left[0].seq(), "press {} without its view", k.seq);
                    }
                    WireInput::View(v) => {
                        let press = matches!(next, Some(WireInput::Key(k)) if k.seq == v.seq + 1 && k.action == KeyAction::Down);
                        proptest::prop_assert!(press, "view {} without its press", v.seq);
                    }
                    _ => {}
                }
            }
            // The host gets what is left: every held key ends as the player holds it, every
            // one-shot pressed at some point fires at some point, and it aims where the player does.
            let mut host_fired = 0u64;
            for e in client.unacked.clone() {
                apply(&mut host, &e);
                host_fired |= host.step().fired;
            }
            proptest::prop_assert_eq!(host.held(), truth.held(), "held keys ({} collapses)", client.inputs_collapsed());
            proptest::prop_assert_eq!(host.aim(), truth.aim(), "the aim ({} collapses)", client.inputs_collapsed());
            let pressed_unacked = fired & !0x0f;
            proptest::prop_assert_eq!(host_fired & pressed_unacked, host_fired, "nothing fires that was not pressed");
        }
    }

    #[test]
    fn a_stall_collapses_the_queue_to_each_keys_last_press_and_release() {
        let mut client = ClientSession::new(ClientSessionConfig::new(hello("a")), Duration::ZERO);
        // 200 events on three keys, never acknowledged: key 2 is released last, at seq 3.
        client.push_input(1, KeyAction::Down, 2);
        client.push_input(2, KeyAction::Down, 5);
        client.push_input(3, KeyAction::Up, 2);
        for seq in 4..=200 {
            client.push_input(seq, if seq % 2 == 0 { KeyAction::Down } else { KeyAction::Up }, 7);
        }
        assert!(client.inputs_collapsed() > 0);
        let left: Vec<(u32, KeyAction, u8)> = client
            .unacked
            .iter()
            .filter_map(|e| if let WireInput::Key(e) = e { Some((e.seq, e.action, e.bit)) } else { None })
            .collect();
        assert!(left.len() <= client.config.max_repeated_inputs, "{}", left.len());
        for kept in [(2, KeyAction::Down, 5), (3, KeyAction::Up, 2), (199, KeyAction::Up, 7), (200, KeyAction::Down, 7)]
        {
            assert!(left.contains(&kept), "{kept:?} kept: {left:?}");
        }
        assert!(left.is_sorted_by_key(|e| e.0), "in order");
    }

    #[test]
    fn a_stall_keeps_the_last_aim() {
        let mut client = ClientSession::new(ClientSessionConfig::new(hello("a")), Duration::ZERO);
        let aim = |x: f32| Aim::new(x, 0.0, 0);
        client.push_input(1, KeyAction::Down, 0);
        for seq in 2..=100 {
            client.push_aim(seq, aim(seq as f32));
        }
        assert!(client.inputs_collapsed() > 0);
        let left: Vec<WireInput> = client.unacked.iter().copied().collect();
        // Collapsed at the 65th event to the key and aim 65; aims 66 to 100 came after.
        assert_eq!(left.len(), 1 + 36, "{left:?}");
        assert_eq!(left[1], WireInput::Aim(AimEvent { seq: 65, aim: aim(65.0) }));
        assert!(left.is_sorted_by_key(WireInput::seq), "in order");
        assert!(left.contains(&WireInput::Key(BinaryKeyEvent { seq: 1, action: KeyAction::Down, bit: 0 })));
        assert_eq!(left.last(), Some(&WireInput::Aim(AimEvent { seq: 100, aim: aim(100.0) })), "the newest aim");
        assert!(left.len() <= client.config.max_repeated_inputs);
    }

    #[test]
    fn aims_go_with_the_keys_and_reach_the_host_in_order() {
        let (mut host, mut client) = connected();
        while host.poll_event().is_some() {}
        let aim = Aim::new(120.5, -3.25, input::AIM_PRESSED);
        client.push_input(1, KeyAction::Down, 0);
        client.push_aim(2, aim);
        client.push_aim(3, None);
        client.flush_inputs(MS);
        progress(&mut host, &mut client, MS);
        let got: Vec<HostEvent> = std::iter::from_fn(|| host.poll_event()).collect();
        assert_eq!(
            got,
            [HostEvent::Input(vec![
                WireInput::Key(BinaryKeyEvent { seq: 1, action: KeyAction::Down, bit: 0 }),
                WireInput::Aim(AimEvent { seq: 2, aim }),
                WireInput::Aim(AimEvent { seq: 3, aim: None }),
            ])]
        );
        // A batch with a hostile aim is a protocol violation, like any batch that does not decode.
        let mut frame = vec![op::client::KEYS_DATA, 1, 0, 0, 0, 4, 0x40];
        frame.extend_from_slice(&f32::NAN.to_be_bytes());
        frame.extend_from_slice(&0f32.to_be_bytes());
        frame.push(0);
        host.handle_message(2 * MS, Channel::Unreliable, &frame);
        assert_eq!(host.close_code(), Some(close::PROTOCOL));
    }

    #[test]
    fn aims_are_offered_in_the_hello_and_taken_only_when_welcomed_so() {
        let hello = serde_json::to_value(Hello::new("ann", "test")).expect("json");
        assert_eq!(hello["aim"], serde_json::json!(true), "this build aims");
        let old: Hello = serde_json::from_str(r#"{"version":1,"build":"old","nickname":"ann"}"#).expect("an old hello");
        assert!(!old.aim, "a hello that does not say so does not aim");
        // A welcome that does not take aims says nothing of them: an old client reads it.
        let quiet = serde_json::to_value(Welcome { aim: false, ..test_support::welcome() }).expect("json");
        assert!(quiet.get("aim").is_none(), "{quiet}");
        let mut old_welcome = serde_json::to_value(test_support::welcome()).expect("json");
        old_welcome.as_object_mut().expect("an object").remove("aim");
        let read: Welcome = serde_json::from_value(old_welcome).expect("a welcome of a host before aims");
        assert!(!read.aim);
    }

    #[test]
    fn before_an_answer_other_frames_are_ignored() {
        // A fellow client in the mesh says its own hello: that is no answer and no violation.
        let mut a = ClientSession::new(ClientSessionConfig::new(hello("a")), Duration::ZERO);
        let mut b = ClientSession::new(ClientSessionConfig::new(hello("b")), Duration::ZERO);
        let (ch, hello_b) = b.poll_transmit().expect("b's hello");
        a.handle_message(MS, ch, &hello_b);
        assert_eq!((a.close_code(), a.answered(), a.poll_event()), (None, false, None));
    }

    #[test]
    fn a_lost_hello_is_said_again_until_answered_and_a_repeat_is_no_offence() {
        let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
        let mut client = ClientSession::new(ClientSessionConfig::new(hello("ann")), Duration::ZERO);
        let _lost = client.poll_transmit().expect("the hello");
        client.handle_timeout(MS);
        assert!(client.poll_transmit().is_none(), "not again at once");
        assert!(client.poll_timeout().is_some_and(|t| t <= HELLO_REPEAT));
        client.handle_timeout(HELLO_REPEAT);
        let (ch, again) = client.poll_transmit().expect("said again");
        host.handle_message(HELLO_REPEAT, ch, &again);
        assert_eq!(host.poll_event(), Some(HostEvent::Hello(hello("ann"))));
        // A third crosses the welcome on the way: the host lets it pass.
        client.handle_timeout(HELLO_REPEAT * 2);
        let (ch, third) = client.poll_transmit().expect("said a third time");
        host.accept(&welcome(), &serde_json::json!({}));
        host.handle_message(HELLO_REPEAT * 2, ch, &third);
        assert_eq!(host.close_code(), None);
        progress(&mut host, &mut client, HELLO_REPEAT * 2);
        assert!(client.is_active());
        client.handle_timeout(HELLO_REPEAT * 4);
        while let Some((_, bytes)) = client.poll_transmit() {
            assert_ne!(frame::parse(&bytes).map(|f| f.opcode), Ok(op::HELLO), "answered: no more hellos");
        }
    }

    /// A frame a peer might send: an opcode with any payload.
    fn message() -> impl proptest::strategy::Strategy<Value = (bool, Vec<u8>)> {
        use proptest::prelude::*;
        (any::<bool>(), opcode(), proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(reliable, opcode, tail)| {
            let mut m = vec![opcode];
            m.extend(tail);
            (reliable, m)
        })
    }

    proptest::proptest! {
        /// Whatever a peer sends a host session, in any order, before its hello or after its
        /// welcome, nothing panics and a closed session stays closed with its first code.
        /// `PROPTEST_CASES=100000` for a long run.
        #[test]
        fn random_frames_into_a_host_session_never_panic(
            welcomed in proptest::prelude::any::<bool>(),
            frames in proptest::collection::vec(message(), 0..24),
        ) {
            let mut host = if welcomed { connected().0 } else { HostSession::new(HostSessionConfig::default(), Duration::ZERO) };
            let mut now = Duration::ZERO;
            let mut first_close = None;
            for (reliable, bytes) in frames {
                now += MS;
                let channel = if reliable { Channel::Reliable } else { Channel::Unreliable };
                host.handle_message(now, channel, &bytes);
                host.handle_timeout(now);
                while host.poll_transmit().is_some() {}
                while host.poll_event().is_some() {}
                match (first_close, host.close_code()) {
                    (None, code) => first_close = code,
                    (Some(first), code) => proptest::prop_assert_eq!(Some(first), code),
                }
            }
        }

        /// Whatever a peer sends a client session, before or after its welcome, nothing panics.
        #[test]
        fn random_frames_into_a_client_session_never_panic(
            welcomed in proptest::prelude::any::<bool>(),
            frames in proptest::collection::vec(message(), 0..24),
        ) {
            let mut client = if welcomed {
                connected().1
            } else {
                ClientSession::new(ClientSessionConfig::new(hello("ann")), Duration::ZERO)
            };
            let mut now = Duration::ZERO;
            for (reliable, bytes) in frames {
                now += MS;
                let channel = if reliable { Channel::Reliable } else { Channel::Unreliable };
                client.handle_message(now, channel, &bytes);
                client.handle_timeout(now);
                client.push_input(1, KeyAction::Down, 0);
                client.flush_inputs(now);
                while client.poll_transmit().is_some() {}
                while client.poll_event().is_some() {}
            }
        }
    }
}
