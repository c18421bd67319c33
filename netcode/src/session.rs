//! Sessions between a host and its clients: handshake, heartbeat, rate limits, close codes — sans-IO.
//!
//! A session is a state machine per peer that takes transport messages and `now`
//! and gives back messages to send, events and its next deadline, in the manner of
//! quinn-proto and str0m: it never reads a clock, opens a socket or spawns a thread.
//! The host runs one [`HostSession`] per connected peer, a client one
//! [`ClientSession`]; any transport (the in-memory link, WebRTC data channels)
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

use crate::frame::{self, Channel, Chunker, Reassembler, op};
use crate::input::{self, Aim, AimEvent, BinaryKeyEvent, KeyAction, WireInput};
use crate::meta::{ClientMeta, MetaRate};

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
    /// The client aims with a pointer ([`AimEvent`]s in its input batches) at a host that
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
    /// The host takes this client's aims ([`AimEvent`]s in its input batches). Said only to
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

/// The host side's settings (defaults from the spec; a game config may override them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HostSessionConfig {
    /// Time between pings (`rttPingInterval`, 3 s).
    pub ping_interval: Duration,
    /// Smoothed latency that gets a client kicked with 4003 (`maxLatency`, 1000 ms).
    pub max_latency_ms: f64,
    /// Pings in a row without an answer that get a client kicked with 4004 (`maxMissedPings`, 5).
    pub max_missed_pings: u32,
    /// Time a new peer has to say hello (4408 after it).
    pub hello_timeout: Duration,
    /// Weight of a new RTT sample in the EMA.
    pub rtt_smoothing: f64,
    /// Input packets: burst and sustained per second.
    pub input_rate: (f64, f64),
    /// Chat lines: burst and sustained per second.
    pub chat_rate: (f64, f64),
    /// Votes and list requests: burst and sustained per second.
    pub vote_rate: (f64, f64),
    /// Frame acknowledgements (`FRAME_ACK`, one per snapshot frame): burst and sustained per second.
    pub ack_rate: (f64, f64),
    /// Everything else a peer sends once in a while — pongs, auth responses, `LINKS`
    /// reports, checkpoint requests, claims: burst and sustained per second, together.
    pub control_rate: (f64, f64),
}

impl Default for HostSessionConfig {
    fn default() -> Self {
        HostSessionConfig {
            ping_interval: Duration::from_secs(3),
            max_latency_ms: 1000.0,
            max_missed_pings: 5,
            hello_timeout: Duration::from_secs(10),
            rtt_smoothing: 0.25,
            input_rate: (250.0, 250.0),
            chat_rate: (5.0, 0.5),
            vote_rate: (10.0, 1.0),
            ack_rate: (120.0, 120.0),
            control_rate: (20.0, 10.0),
        }
    }
}

/// What a host session reports.
#[derive(Clone, Debug, PartialEq)]
pub enum HostEvent {
    /// A peer said hello (version already checked): accept or reject it.
    Hello(Hello),
    /// Key events and aims (possibly repeats of ones already applied: the key state ignores old seqs).
    Input(Vec<WireInput>),
    /// A key event in the spec's text form (`KEYS_DATA` as `"seq:action:name"`), name
    /// unresolved: the host checks it against its key table.
    TextInput(input::InputEvent),
    /// A meta message from the client (auth response, chat, vote) on its port, not yet decoded.
    Meta {
        /// The client→server port.
        port: u8,
        /// The JSON payload.
        payload: Vec<u8>,
    },
    /// A new smoothed latency, ms.
    Latency(f64),
    /// The session is closed: by the host (with its code) or by the peer.
    Closed {
        /// The close code.
        code: u16,
        /// Whether the peer closed it.
        by_peer: bool,
    },
    /// Another peer claims to host the match (a `CLAIM` payload, not yet decoded): the
    /// host compares it with its own and steps down if it loses.
    Claim(Vec<u8>),
    /// The clients voted the host away (`@changeHost`; a `STEP_DOWN` payload, not yet
    /// decoded): the host checks the majority against its own count and hands off.
    StepDown(Vec<u8>),
    /// The peer's open mesh links (a `LINKS` payload, not yet decoded), for the succession rule.
    Links(Vec<u8>),
    /// The peer asks for a checkpoint (`CHECKPOINT_REQUEST`): its shadow diverged.
    CheckpointRequest,
    /// The newest snapshot frame the client holds (`FRAME_ACK`), for its delta frames'
    /// baseline. Any seq: the host checks it against what it sent.
    FrameAck(u32),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum HostState {
    AwaitingHello { since: Duration },
    Deciding,
    Active,
    Closed(u16),
}

/// The host's session with one peer.
#[derive(Debug)]
pub struct HostSession {
    config: HostSessionConfig,
    state: HostState,
    reassembler: Reassembler,
    chunker: Chunker,
    out: VecDeque<(Channel, Vec<u8>)>,
    events: VecDeque<HostEvent>,
    next_ping: Duration,
    ping_nonce: u32,
    outstanding: Option<(u32, Duration)>,
    missed: u32,
    rtt_ema: Option<f64>,
    inputs: RateLimit,
    chat: RateLimit,
    votes: RateLimit,
    acks: RateLimit,
    control: RateLimit,
    now: Duration,
}

impl HostSession {
    /// A session with a peer that just connected at `now`.
    pub fn new(config: HostSessionConfig, now: Duration) -> Self {
        let rate = |(burst, per_s): (f64, f64)| RateLimit::new(burst, per_s);
        HostSession {
            state: HostState::AwaitingHello { since: now },
            reassembler: Reassembler::default(),
            chunker: Chunker::default(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            next_ping: now,
            ping_nonce: 0,
            outstanding: None,
            missed: 0,
            rtt_ema: None,
            inputs: rate(config.input_rate),
            chat: rate(config.chat_rate),
            votes: rate(config.vote_rate),
            acks: rate(config.ack_rate),
            control: rate(config.control_rate),
            config,
            now,
        }
    }

    /// Whether the session is past its handshake and open.
    pub fn is_active(&self) -> bool {
        self.state == HostState::Active
    }

    /// The close code, once closed.
    pub fn close_code(&self) -> Option<u16> {
        match self.state {
            HostState::Closed(code) => Some(code),
            _ => None,
        }
    }

    /// The smoothed round-trip time, ms.
    pub fn latency_ms(&self) -> Option<f64> {
        self.rtt_ema
    }

    /// Takes one transport message.
    pub fn handle_message(&mut self, now: Duration, channel: Channel, bytes: &[u8]) {
        self.now = self.now.max(now);
        if self.close_code().is_some() {
            return;
        }
        let whole = match whole_frame(&mut self.reassembler, channel, bytes) {
            Ok(Some(whole)) => whole,
            Ok(None) => return,
            Err(()) => return self.close(close::PROTOCOL),
        };
        let Ok(frame) = frame::parse(&whole) else { return self.close(close::PROTOCOL) };
        // A hello said again after the first (the client repeats it until answered) is one too.
        let repeated_hello = frame.opcode == op::HELLO && !matches!(self.state, HostState::AwaitingHello { .. });
        let control = repeated_hello
            || matches!(frame.opcode, op::PONG | op::LINKS | op::CHECKPOINT_REQUEST | op::CLAIM)
            || ClientMeta::rate(frame.opcode) == Some(MetaRate::Control);
        if control {
            match self.control.check(now) {
                RateVerdict::Allow => {}
                RateVerdict::Drop => return,
                RateVerdict::Abuse => return self.close(close::RATE),
            }
        }
        match (self.state, frame.opcode) {
            (HostState::AwaitingHello { .. }, op::HELLO) => match serde_json::from_slice::<Hello>(frame.payload) {
                Ok(hello) if hello.version != PROTOCOL_VERSION => {
                    let why = format!("protocol version {}, this host speaks {PROTOCOL_VERSION}", hello.version);
                    self.reject(close::VERSION, Some(&why))
                }
                Ok(hello) => {
                    self.state = HostState::Deciding;
                    self.events.push_back(HostEvent::Hello(hello));
                }
                // Said back, so that the client can say why it is not in.
                Err(e) => self.reject(close::PROTOCOL, Some(&bounded(format!("the hello does not read: {e}")))),
            },
            // The client said hello again before the answer reached it: the first one counts.
            (HostState::Deciding | HostState::Active, op::HELLO) => {}
            (HostState::Active, op::PONG) => self.on_pong(frame.payload),
            // A binary batch, or one event in the spec's text form `seq:action:name` (a batch is
            // at least 100 bytes when its first byte is an ASCII digit, a text event at most 48:
            // neither reads as the other).
            (HostState::Active, op::client::KEYS_DATA) => {
                let event = match input::decode_inputs(frame.payload) {
                    Ok(events) => HostEvent::Input(events),
                    Err(_) => match std::str::from_utf8(frame.payload).map(input::InputEvent::parse) {
                        Ok(Ok(event)) => HostEvent::TextInput(event),
                        _ => return self.close(close::PROTOCOL),
                    },
                };
                match self.inputs.check(now) {
                    RateVerdict::Allow => self.events.push_back(event),
                    RateVerdict::Drop => {}
                    RateVerdict::Abuse => self.close(close::RATE),
                }
            }
            // The client → server meta ports, as their table lists them, each with its bucket.
            (HostState::Active, port) if let Some(rate) = ClientMeta::rate(port) => {
                let verdict = match rate {
                    MetaRate::Chat => self.chat.check(now),
                    MetaRate::Vote => self.votes.check(now),
                    // Drawn on before, with everything else a peer sends once in a while.
                    MetaRate::Control => RateVerdict::Allow,
                };
                match verdict {
                    RateVerdict::Allow => {
                        self.events.push_back(HostEvent::Meta { port, payload: frame.payload.to_vec() })
                    }
                    RateVerdict::Drop => {}
                    RateVerdict::Abuse => self.close(close::RATE),
                }
            }
            (HostState::Active, op::FRAME_ACK) => match <[u8; 4]>::try_from(frame.payload) {
                Ok(seq) => match self.acks.check(now) {
                    RateVerdict::Allow => self.events.push_back(HostEvent::FrameAck(u32::from_be_bytes(seq))),
                    RateVerdict::Drop => {}
                    RateVerdict::Abuse => self.close(close::RATE),
                },
                Err(_) => self.close(close::PROTOCOL),
            },
            (HostState::Active, op::LINKS) => self.events.push_back(HostEvent::Links(frame.payload.to_vec())),
            (HostState::Active, op::CHECKPOINT_REQUEST) if frame.payload.is_empty() => {
                self.events.push_back(HostEvent::CheckpointRequest)
            }
            (HostState::Active, op::STEP_DOWN) => match self.votes.check(now) {
                RateVerdict::Allow => self.events.push_back(HostEvent::StepDown(frame.payload.to_vec())),
                RateVerdict::Drop => {}
                RateVerdict::Abuse => self.close(close::RATE),
            },
            // The `@changeHost` vote runs between clients; one that reaches a host (a peer
            // that just took the match over) was meant for the client it was.
            (_, op::HOST_VOTE | op::HOST_BALLOT) => {}
            // So does a successor's check of the room, and its answers (a peer that took the
            // match over has no host to have heard).
            (_, op::HOST_CHECK | op::HOST_SEEN) => {}
            // A rival claimant (a peer that promoted too) announces itself before any hello.
            (_, op::CLAIM) => self.events.push_back(HostEvent::Claim(frame.payload.to_vec())),
            (_, op::CLOSE) => {
                let code = close_code_of(frame.payload);
                self.state = HostState::Closed(code);
                self.events.push_back(HostEvent::Closed { code, by_peer: true });
            }
            _ => self.close(close::PROTOCOL),
        }
    }

    fn on_pong(&mut self, payload: &[u8]) {
        let Ok(nonce) = <[u8; 4]>::try_from(payload) else { return self.close(close::PROTOCOL) };
        let nonce = u32::from_be_bytes(nonce);
        let Some((expected, sent)) = self.outstanding else { return };
        if nonce != expected {
            return;
        }
        self.outstanding = None;
        self.missed = 0;
        let sample = self.now.saturating_sub(sent).as_secs_f64() * 1000.0;
        let a = self.config.rtt_smoothing;
        let ema = match self.rtt_ema {
            None => sample,
            Some(old) => old + a * (sample - old),
        };
        self.rtt_ema = Some(ema);
        self.events.push_back(HostEvent::Latency(ema));
        if ema > self.config.max_latency_ms {
            self.close(close::LATENCY);
        }
    }

    /// Runs the session's timers (pings, missed pings, hello timeout).
    pub fn handle_timeout(&mut self, now: Duration) {
        self.now = self.now.max(now);
        match self.state {
            HostState::AwaitingHello { since } if now.saturating_sub(since) >= self.config.hello_timeout => {
                self.close(close::HEARTBEAT)
            }
            HostState::Active if now >= self.next_ping => {
                if self.outstanding.is_some() {
                    self.missed += 1;
                    if self.missed >= self.config.max_missed_pings {
                        return self.close(close::MISSED_PINGS);
                    }
                }
                self.ping_nonce = self.ping_nonce.wrapping_add(1);
                self.outstanding = Some((self.ping_nonce, now));
                self.next_ping = now + self.config.ping_interval;
                let mut payload = Vec::with_capacity(16);
                payload.extend_from_slice(&self.ping_nonce.to_be_bytes());
                payload.extend_from_slice(&(now.as_secs_f64() * 1000.0).to_be_bytes());
                payload.extend_from_slice(&(self.rtt_ema.unwrap_or(0.0) as f32).to_be_bytes());
                self.send(Channel::Unreliable, op::PING, &payload);
            }
            _ => {}
        }
    }

    /// When [`HostSession::handle_timeout`] next needs to run.
    pub fn poll_timeout(&self) -> Option<Duration> {
        match self.state {
            HostState::AwaitingHello { since } => Some(since + self.config.hello_timeout),
            HostState::Active => Some(self.next_ping),
            HostState::Deciding | HostState::Closed(_) => None,
        }
    }

    /// Accepts the hello: sends `WELCOME`, then the client config on `CONFIG_DATA`.
    pub fn accept(&mut self, welcome: &Welcome, client_config: &serde_json::Value) {
        if self.state != HostState::Deciding {
            return;
        }
        self.state = HostState::Active;
        self.next_ping = self.now;
        let welcome = serde_json::to_vec(welcome).unwrap_or_default();
        self.send(Channel::Reliable, op::WELCOME, &welcome);
        let config = serde_json::to_vec(client_config).unwrap_or_default();
        self.send(Channel::Reliable, op::CONFIG_DATA, &config);
    }

    /// Refuses the hello with `code` (and an optional reason; the code's own by default), then closes.
    pub fn reject(&mut self, code: u16, reason: Option<&str>) {
        let reject = Reject { code, reason: reason.unwrap_or(close::reason(code)).to_owned() };
        let bytes = serde_json::to_vec(&reject).unwrap_or_default();
        self.send(Channel::Reliable, op::REJECT, &bytes);
        self.close(code);
    }

    /// Sends a frame `[opcode][payload]` (chunked on the reliable channel when large).
    pub fn send(&mut self, channel: Channel, opcode: u8, payload: &[u8]) {
        if self.close_code().is_some() {
            return;
        }
        push_frame(&mut self.out, &mut self.chunker, channel, opcode, payload);
    }

    /// Closes the session with `code`: a `CLOSE` frame goes out, then nothing more. A player
    /// the host kicks (any code but a normal close or a takeover) first gets the "black
    /// screen" message `TECH_INFORM [2, [code, reason]]`.
    pub fn close(&mut self, code: u16) {
        if self.close_code().is_some() {
            return;
        }
        if self.state == HostState::Active && !matches!(code, close::NORMAL | close::REPLACED) {
            let inform =
                crate::meta::MetaMessage::TechInform(crate::meta::TechInform::kicked(code, close::reason(code)));
            push_frame(&mut self.out, &mut self.chunker, Channel::Reliable, op::TECH_INFORM_DATA, &inform.encode());
        }
        push_frame(&mut self.out, &mut self.chunker, Channel::Reliable, op::CLOSE, &close_payload(code));
        self.state = HostState::Closed(code);
        self.events.push_back(HostEvent::Closed { code, by_peer: false });
    }

    /// The next message to put on the transport.
    pub fn poll_transmit(&mut self) -> Option<(Channel, Vec<u8>)> {
        self.out.pop_front()
    }

    /// The next event for the host.
    pub fn poll_event(&mut self) -> Option<HostEvent> {
        self.events.pop_front()
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

/// The client side's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientSessionConfig {
    /// What the client says first.
    pub hello: Hello,
    /// No message from the host for this long closes the session locally with 4408.
    pub host_silence: Duration,
    /// Unacknowledged key events and aims are repeated in every input packet until the host
    /// acknowledges them; beyond this many (a stall), they are collapsed to each key's last
    /// press and last release and the last aim, so that no key's state and no aim is lost.
    pub max_repeated_inputs: usize,
}

impl ClientSessionConfig {
    /// Defaults around a hello.
    pub fn new(hello: Hello) -> Self {
        ClientSessionConfig { hello, host_silence: Duration::from_secs(15), max_repeated_inputs: 64 }
    }
}

/// What a client session reports.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientEvent {
    /// The host accepted.
    Welcomed(Welcome),
    /// The host refused; the session is closed.
    Rejected(Reject),
    /// A snapshot frame (port 5), for the snapshot unpacker.
    Snapshot(Vec<u8>),
    /// A meta frame on a server→client port, for the meta decoder.
    Meta {
        /// The port.
        port: u8,
        /// The JSON payload.
        payload: Vec<u8>,
    },
    /// An engine frame this session does not handle itself (checkpoints, succession…).
    Engine {
        /// The opcode.
        opcode: u8,
        /// The payload.
        payload: Vec<u8>,
    },
    /// The session is closed.
    Closed {
        /// The close code.
        code: u16,
        /// The reason string.
        reason: String,
        /// Whether the host closed it.
        by_peer: bool,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum ClientState {
    Hello,
    Active,
    Closed(u16),
}

/// How long a client waits for an answer to its hello before saying it again: a message sent
/// the moment a WebRTC data channel opens can be lost, and the host would wait for it until
/// its hello timeout (4408). A host takes the first hello and lets the repeats pass.
pub const HELLO_REPEAT: Duration = Duration::from_secs(1);

/// The client's session with the host.
#[derive(Debug)]
pub struct ClientSession {
    config: ClientSessionConfig,
    state: ClientState,
    reassembler: Reassembler,
    chunker: Chunker,
    out: VecDeque<(Channel, Vec<u8>)>,
    events: VecDeque<ClientEvent>,
    last_heard: Duration,
    /// (host clock ms at the ping, local time of receipt, host's RTT estimate ms)
    clock: Option<(f64, Duration, f64)>,
    unacked: VecDeque<WireInput>,
    /// How often `unacked` was collapsed.
    collapsed: u64,
    acked: Option<u32>,
    last_input_send: Option<Duration>,
    last_input_sent_seq: Option<u32>,
    /// The newest frame to acknowledge, and whether it went out.
    frame_ack: Option<(u32, bool)>,
    answered: bool,
    /// When the hello was last said: it is said again every [`HELLO_REPEAT`] until answered.
    hello_said: Duration,
    now: Duration,
}

/// Unacknowledged inputs are sent again this often (60 Hz) until the host acknowledges them.
pub const INPUT_REPEAT_INTERVAL: Duration = Duration::from_micros(16_667);
/// Input packets never go out more often than this (125 Hz), however often the client flushes.
pub const MIN_INPUT_INTERVAL: Duration = Duration::from_millis(8);

impl ClientSession {
    /// A session that says hello at `now`.
    pub fn new(config: ClientSessionConfig, now: Duration) -> Self {
        let mut s = ClientSession {
            state: ClientState::Hello,
            reassembler: Reassembler::default(),
            chunker: Chunker::default(),
            out: VecDeque::new(),
            events: VecDeque::new(),
            last_heard: now,
            clock: None,
            unacked: VecDeque::new(),
            collapsed: 0,
            acked: None,
            last_input_send: None,
            last_input_sent_seq: None,
            frame_ack: None,
            answered: false,
            hello_said: now,
            now,
            config,
        };
        s.say_hello(now);
        s
    }

    /// Says hello (again).
    fn say_hello(&mut self, now: Duration) {
        self.hello_said = now;
        let hello = serde_json::to_vec(&self.config.hello).unwrap_or_default();
        push_frame(&mut self.out, &mut self.chunker, Channel::Reliable, op::HELLO, &hello);
    }

    /// Whether the host accepted and the session is open.
    pub fn is_active(&self) -> bool {
        self.state == ClientState::Active
    }

    /// When the last message from the host arrived (or the session started).
    pub fn last_heard(&self) -> Duration {
        self.last_heard
    }

    /// Whether the peer answered the hello (welcome or reject): only a host does.
    pub fn answered(&self) -> bool {
        self.answered
    }

    /// The close code, once closed.
    pub fn close_code(&self) -> Option<u16> {
        match self.state {
            ClientState::Closed(code) => Some(code),
            _ => None,
        }
    }

    /// Takes one transport message.
    pub fn handle_message(&mut self, now: Duration, channel: Channel, bytes: &[u8]) {
        self.now = self.now.max(now);
        if self.close_code().is_some() {
            return;
        }
        self.last_heard = self.now;
        let whole = match whole_frame(&mut self.reassembler, channel, bytes) {
            Ok(Some(whole)) => whole,
            Ok(None) => return,
            Err(()) => return self.close(close::PROTOCOL),
        };
        let Ok(frame) = frame::parse(&whole) else { return self.close(close::PROTOCOL) };
        match (self.state, frame.opcode) {
            (ClientState::Hello, op::WELCOME) => match serde_json::from_slice::<Welcome>(frame.payload) {
                Ok(welcome) => {
                    self.state = ClientState::Active;
                    self.answered = true;
                    self.events.push_back(ClientEvent::Welcomed(welcome));
                }
                Err(_) => self.close(close::PROTOCOL),
            },
            (ClientState::Hello, op::REJECT) => {
                let reject = serde_json::from_slice::<Reject>(frame.payload)
                    .unwrap_or(Reject { code: close::PROTOCOL, reason: close::reason(close::PROTOCOL).into() });
                self.answered = true;
                self.state = ClientState::Closed(reject.code);
                self.events.push_back(ClientEvent::Rejected(reject));
            }
            // A "black screen" message may come with a refusal (server full).
            (ClientState::Hello, op::TECH_INFORM_DATA) => {
                self.events.push_back(ClientEvent::Meta { port: op::TECH_INFORM_DATA, payload: frame.payload.to_vec() })
            }
            // A host that refuses without a `REJECT` (an older one, or one that is stopping):
            // refused all the same, with the close's code and reason.
            (ClientState::Hello, op::CLOSE) => {
                let code = close_code_of(frame.payload);
                let reason = String::from_utf8_lossy(frame.payload.get(2..).unwrap_or_default()).into_owned();
                self.answered = true;
                self.state = ClientState::Closed(code);
                self.events.push_back(ClientEvent::Closed { code, reason, by_peer: true });
            }
            // Before an answer, the peer may not be a host at all (a fellow client in the mesh
            // saying its own hello): anything else is ignored.
            (ClientState::Hello, _) => {}
            (_, op::CLOSE) => {
                let code = close_code_of(frame.payload);
                let reason = String::from_utf8_lossy(frame.payload.get(2..).unwrap_or_default()).into_owned();
                self.state = ClientState::Closed(code);
                self.events.push_back(ClientEvent::Closed { code, reason, by_peer: true });
            }
            (ClientState::Active, op::PING) => {
                let p = frame.payload;
                if p.len() != 16 {
                    return self.close(close::PROTOCOL);
                }
                let host_ms = f64::from_be_bytes(p[4..12].try_into().unwrap_or_default());
                let rtt = f32::from_be_bytes(p[12..16].try_into().unwrap_or_default()) as f64;
                self.clock = Some((host_ms, self.now, rtt));
                let nonce = p[..4].to_vec();
                push_frame(&mut self.out, &mut self.chunker, Channel::Unreliable, op::PONG, &nonce);
            }
            (ClientState::Active, op::SHOT_DATA) => {
                self.events.push_back(ClientEvent::Snapshot(frame.payload.to_vec()))
            }
            (ClientState::Active, opcode) if opcode < op::HELLO => {
                self.events.push_back(ClientEvent::Meta { port: opcode, payload: frame.payload.to_vec() })
            }
            (ClientState::Active, opcode) if opcode > op::CLOSE => {
                self.events.push_back(ClientEvent::Engine { opcode, payload: frame.payload.to_vec() })
            }
            // What a peer says in a client's role, late from before the roles changed: its
            // hello to whoever may host, its answer to this process's pings when it hosted.
            // Not acted on, and no reason to drop the host.
            (ClientState::Active, op::HELLO | op::PONG) => {}
            _ => self.close(close::PROTOCOL),
        }
    }

    /// Runs the session's timer (host silence).
    pub fn handle_timeout(&mut self, now: Duration) {
        self.repeat_hello(now);
        if self.close_code().is_none() && now.saturating_sub(self.last_heard) >= self.config.host_silence {
            self.state = ClientState::Closed(close::HEARTBEAT);
            let reason = close::reason(close::HEARTBEAT).to_owned();
            self.events.push_back(ClientEvent::Closed { code: close::HEARTBEAT, reason, by_peer: false });
        }
    }

    /// Says the hello again if it is due: every [`HELLO_REPEAT`] until a peer answers. The only
    /// timer of a session with a peer that may be the host or a fellow client (which never
    /// answers, and is not silent for that).
    pub fn repeat_hello(&mut self, now: Duration) {
        self.now = self.now.max(now);
        if self.state == ClientState::Hello && !self.answered && now.saturating_sub(self.hello_said) >= HELLO_REPEAT {
            self.say_hello(now);
        }
    }

    /// When the hello is due again ([`Self::repeat_hello`]), until a peer answers.
    pub fn hello_due(&self) -> Option<Duration> {
        (self.state == ClientState::Hello && !self.answered).then_some(self.hello_said + HELLO_REPEAT)
    }

    /// When [`ClientSession::handle_timeout`] next needs to run.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let silence = self.close_code().is_none().then_some(self.last_heard + self.config.host_silence);
        silence.into_iter().chain(self.hello_due()).min()
    }

    /// The estimated host clock at `now`, ms: the last ping's host time, plus half the RTT,
    /// plus the local time since it arrived.
    pub fn server_time_ms(&self, now: Duration) -> Option<f64> {
        self.clock.map(|(host_ms, at, rtt)| host_ms + rtt / 2.0 + now.saturating_sub(at).as_secs_f64() * 1000.0)
    }

    /// The host's latest RTT estimate for this client, ms.
    pub fn rtt_ms(&self) -> Option<f64> {
        self.clock.map(|(_, _, rtt)| rtt)
    }

    /// Records a key event to send; it is repeated in every input packet until acknowledged.
    pub fn push_input(&mut self, seq: u32, action: KeyAction, bit: u8) {
        self.push(WireInput::Key(BinaryKeyEvent { seq, action, bit }));
    }

    /// Records an aim to send (`None` lets go of the aim); it is repeated in every input
    /// packet until acknowledged, like a key event. Send it only to a host that takes aims
    /// ([`Welcome::aim`]).
    pub fn push_aim(&mut self, seq: u32, aim: Option<Aim>) {
        self.push(WireInput::Aim(AimEvent { seq, aim }));
    }

    /// Records an event of either kind to send (an old seq, or one not after the last, is not).
    pub fn push(&mut self, event: WireInput) {
        let seq = event.seq();
        if self.acked.is_some_and(|a| seq <= a) || self.unacked.back().is_some_and(|e| seq <= e.seq()) {
            return;
        }
        self.unacked.push_back(event);
        if self.unacked.len() > self.config.max_repeated_inputs {
            self.collapse_inputs();
        }
    }

    /// Too many events wait for the host (a stall): only each key's last press and last
    /// release, and the last aim, stay, in order, with the view right before a press kept.
    /// Applied from any state the host may be in, they leave every held key as the player
    /// holds it, fire every one-shot key pressed since (with what the player saw then) and
    /// aim where the player aims last; nothing is dropped that would leave a key down on the
    /// host.
    fn collapse_inputs(&mut self) {
        let mut last = [[false; 2]; 256];
        let mut last_aim = false;
        let mut keep = vec![false; self.unacked.len()];
        for (i, e) in self.unacked.iter().enumerate().rev() {
            let slot = match e {
                WireInput::Key(e) => &mut last[usize::from(e.bit)][usize::from(e.action == KeyAction::Up)],
                WireInput::Aim(_) => &mut last_aim,
                // A view goes with the press after it; the newest one's press is still to come.
                WireInput::View(_) => {
                    keep[i] = keep.get(i + 1).copied().unwrap_or(true);
                    continue;
                }
            };
            keep[i] = !std::mem::replace(slot, true);
        }
        let mut keep = keep.into_iter();
        self.unacked.retain(|_| keep.next().unwrap_or(true));
        self.collapsed += 1;
    }

    /// How many times the events waiting for the host were collapsed ([`Self::push_input`]).
    pub fn inputs_collapsed(&self) -> u64 {
        self.collapsed
    }

    /// The host has applied every event up to `last_input_seq` (from the player block).
    pub fn ack_inputs(&mut self, last_input_seq: u32) {
        self.acked = Some(self.acked.map_or(last_input_seq, |a| a.max(last_input_seq)));
        while self.unacked.front().is_some_and(|e| e.seq() <= last_input_seq) {
            self.unacked.pop_front();
        }
    }

    /// Number of events not yet acknowledged.
    pub fn unacked_inputs(&self) -> usize {
        self.unacked.len()
    }

    /// The client decoded snapshot frame `seq` and keeps it as a baseline: the next
    /// [`ClientSession::flush_inputs`] acknowledges it (`FRAME_ACK`), unless a newer one came.
    pub fn ack_frame(&mut self, seq: u32) {
        if self.frame_ack.is_none_or(|(newest, _)| seq > newest) {
            self.frame_ack = Some((seq, false));
        }
    }

    /// Queues an input packet repeating every unacknowledged event, when one is due: at once
    /// for an event not sent yet (but not more often than [`MIN_INPUT_INTERVAL`]), else every
    /// [`INPUT_REPEAT_INTERVAL`] until the host acknowledges them; and the acknowledgement of
    /// the newest frame decoded ([`ClientSession::ack_frame`]) when it has not gone out. Call
    /// it as often as you like.
    pub fn flush_inputs(&mut self, now: Duration) {
        if !self.is_active() {
            return;
        }
        if let Some((seq, false)) = self.frame_ack {
            self.frame_ack = Some((seq, true));
            push_frame(&mut self.out, &mut self.chunker, Channel::Unreliable, op::FRAME_ACK, &seq.to_be_bytes());
        }
        if self.unacked.is_empty() {
            return;
        }
        let newest = self.unacked.back().map(WireInput::seq);
        let since = self.last_input_send.map_or(Duration::MAX, |t| now.saturating_sub(t));
        let fresh = newest != self.last_input_sent_seq;
        if since < MIN_INPUT_INTERVAL || (!fresh && since < INPUT_REPEAT_INTERVAL) {
            return;
        }
        self.last_input_send = Some(now);
        self.last_input_sent_seq = newest;
        // Events whose seqs jump by more than the batch form allows go in the next packet.
        let mut batch: Vec<WireInput> = Vec::new();
        for e in &self.unacked {
            if batch.last().is_some_and(|prev| e.seq() - prev.seq() > 255) {
                break;
            }
            batch.push(*e);
        }
        let mut payload = Vec::new();
        if input::encode_inputs(&batch, &mut payload).is_ok() {
            push_frame(&mut self.out, &mut self.chunker, Channel::Unreliable, op::client::KEYS_DATA, &payload);
        }
    }

    /// Sends a client→server meta frame (auth response, chat, vote) on the reliable channel.
    pub fn send_meta(&mut self, port: u8, payload: &[u8]) {
        if self.is_active() {
            push_frame(&mut self.out, &mut self.chunker, Channel::Reliable, port, payload);
        }
    }

    /// Closes the session (quitting): a `CLOSE` frame goes out.
    pub fn close(&mut self, code: u16) {
        if self.close_code().is_some() {
            return;
        }
        push_frame(&mut self.out, &mut self.chunker, Channel::Reliable, op::CLOSE, &close_payload(code));
        self.state = ClientState::Closed(code);
        let reason = close::reason(code).to_owned();
        self.events.push_back(ClientEvent::Closed { code, reason, by_peer: false });
    }

    /// The next message to put on the transport.
    pub fn poll_transmit(&mut self) -> Option<(Channel, Vec<u8>)> {
        self.out.pop_front()
    }

    /// The next event for the client.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        self.events.pop_front()
    }
}

/// What the tests of this crate's session and client share.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

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
