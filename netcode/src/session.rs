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
    /// The client takes its welcome on either channel and lets the second copy pass: the host
    /// sends it on both, so that a lost reliable copy costs nothing (a host of a build before
    /// sends it reliably only, and a client of such a build would refuse a second copy).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub welcome_twice: bool,
}

impl Hello {
    /// A hello of this protocol version from `nickname` (build `build`): no password, no
    /// token, to play, decoding every snapshot format this build knows, able to host and
    /// to aim, answering the room's checks, taking its welcome on either channel.
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
            welcome_twice: true,
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

/// Whether two nicknames are the same name: equal but for case (Unicode lower case) and for
/// characters that look alike ([`crate::identity::nickname_key`]), so that a host keeps names
/// apart as people read them (a Cyrillic `а` does not make a second `alice`) and `/w bob`
/// finds `Bob`.
pub fn same_nickname(a: &str, b: &str) -> bool {
    a == b || crate::identity::nickname_key(a) == crate::identity::nickname_key(b)
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

/// How long after a frame said on the unreliable channel its echo follows ([`Echoes`]): past
/// the moment the first copy left, so that the two never share a packet, and well within a
/// round trip.
pub const ECHO_AFTER: Duration = Duration::from_millis(30);

/// Unreliable frames said once more a little later: a frame that must not wait for a
/// retransmission (a new host's claim and welcome, a hello to a new host) goes on the
/// unreliable channel at once and again [`ECHO_AFTER`] later, in a packet of its own, so that
/// one lost packet does not lose it; the reliable copy behind them is the last resort.
#[derive(Debug, Default)]
struct Echoes(VecDeque<(Duration, Vec<u8>)>);

impl Echoes {
    /// Says the frame `[opcode][payload]` on the unreliable channel now, into `out`, and
    /// keeps it to say again at `now` + [`ECHO_AFTER`].
    fn say(&mut self, out: &mut VecDeque<(Channel, Vec<u8>)>, now: Duration, opcode: u8, payload: &[u8]) {
        let mut bytes = Vec::with_capacity(payload.len() + 1);
        frame::encode(opcode, payload, &mut bytes);
        out.push_back((Channel::Unreliable, bytes.clone()));
        self.0.push_back((now + ECHO_AFTER, bytes));
    }

    /// When the next echo is due.
    fn due(&self) -> Option<Duration> {
        self.0.front().map(|(at, _)| *at)
    }

    /// The echoes due at `now`, into `out`.
    fn flush(&mut self, now: Duration, out: &mut VecDeque<(Channel, Vec<u8>)>) {
        while self.0.front().is_some_and(|(at, _)| *at <= now) {
            if let Some((_, bytes)) = self.0.pop_front() {
                out.push_back((Channel::Unreliable, bytes));
            }
        }
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
mod tests;
