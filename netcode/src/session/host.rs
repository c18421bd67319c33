//! The host's side of a session: one per peer, from its hello to its close (see the
//! [session docs](super)).

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::*;
use crate::frame::{Channel, Chunker, Reassembler, op};
use crate::input::{self, WireInput};
use crate::meta::{ClientMeta, MetaRate};

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
    /// The hello asked for its welcome on both channels ([`Hello::welcome_twice`]).
    welcome_twice: bool,
    /// The welcome sent, with its token, for a client that asked for it on both channels.
    welcomed: Option<(SessionToken, Vec<u8>)>,
    echoes: Echoes,
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
            welcome_twice: false,
            welcomed: None,
            echoes: Echoes::default(),
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
                    self.welcome_twice = hello.welcome_twice;
                    self.events.push_back(HostEvent::Hello(hello));
                }
                // Said back, so that the client can say why it is not in.
                Err(e) => self.reject(close::PROTOCOL, Some(&bounded(format!("the hello does not read: {e}")))),
            },
            // The client said hello again before the answer reached it: the first one counts.
            // Said with the token of the welcome sent, it did not reach a session of the
            // client's that waits for one (its process dropped the session it went to: it
            // followed another claimer first), and it goes again.
            (HostState::Active, op::HELLO) => self.welcome_again(frame.payload),
            (HostState::Deciding, op::HELLO) => {}
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
            // What only a host says, from a peer that hosted for a moment: a rival claimant that
            // stepped down to this host and is its client now, whose server told the room where
            // it was (`ROOM`), or welcomed and pinged those that had said hello to it. Late from
            // its former role: not acted on, and no reason to drop the peer.
            (_, op::ROOM | op::PING | op::WELCOME | op::SUCCESSION | op::CHAT_HISTORY | op::ROUND_RESULTS) => {}
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
        if self.close_code().is_none() {
            self.echoes.flush(now, &mut self.out);
        }
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
        let timer = match self.state {
            HostState::AwaitingHello { since } => Some(since + self.config.hello_timeout),
            HostState::Active => Some(self.next_ping),
            HostState::Deciding | HostState::Closed(_) => None,
        };
        let echo = self.echoes.due().filter(|_| self.close_code().is_none());
        timer.into_iter().chain(echo).min()
    }

    /// Accepts the hello: sends `WELCOME`, then the client config on `CONFIG_DATA`.
    pub fn accept(&mut self, welcome: &Welcome, client_config: &serde_json::Value) {
        if self.state != HostState::Deciding {
            return;
        }
        self.state = HostState::Active;
        self.next_ping = self.now;
        let token = welcome.token;
        let welcome = serde_json::to_vec(welcome).unwrap_or_default();
        if self.welcome_twice {
            self.welcomed = Some((token, welcome.clone()));
            // A lost reliable copy would hold the join up for the association's retransmission
            // timeout (a new host's welcome over a mesh link that carried little, most of all);
            // the unreliable one goes at once, and again a moment later, and snapshots follow
            // it on that channel.
            self.echoes.say(&mut self.out, self.now, op::WELCOME, &welcome);
        }
        self.send(Channel::Reliable, op::WELCOME, &welcome);
        let config = serde_json::to_vec(client_config).unwrap_or_default();
        self.send(Channel::Reliable, op::CONFIG_DATA, &config);
    }

    /// The welcome once more, both ways, to a hello with its token (see `handle_message`).
    fn welcome_again(&mut self, hello: &[u8]) {
        let Some((token, welcome)) = &self.welcomed else { return };
        if serde_json::from_slice::<Hello>(hello).is_ok_and(|h| h.resume_token.as_ref() == Some(token)) {
            let welcome = welcome.clone();
            self.echoes.say(&mut self.out, self.now, op::WELCOME, &welcome);
            self.send(Channel::Reliable, op::WELCOME, &welcome);
        }
    }

    /// Refuses the hello with `code` (and an optional reason; the code's own by default), then closes.
    pub fn reject(&mut self, code: u16, reason: Option<&str>) {
        let reject = Reject { code, reason: reason.unwrap_or(close::reason(code)).to_owned() };
        let bytes = serde_json::to_vec(&reject).unwrap_or_default();
        self.send(Channel::Reliable, op::REJECT, &bytes);
        self.close(code);
    }

    /// Sends a frame `[opcode][payload]` on the unreliable channel now and again
    /// [`ECHO_AFTER`] later (see [`Echoes`]), for a frame that must not wait for a
    /// retransmission: a new host's `CLAIM`.
    pub fn send_echoed(&mut self, opcode: u8, payload: &[u8]) {
        if self.close_code().is_none() {
            self.echoes.say(&mut self.out, self.now, opcode, payload);
        }
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
