//! The client's side of a session: its hello, the host's answer, pings, inputs and meta
//! (see the [session docs](super)).

use std::collections::VecDeque;
use std::time::Duration;

use super::*;
use crate::frame::{Channel, Chunker, Reassembler, op};
use crate::input::{self, Aim, AimEvent, BinaryKeyEvent, KeyAction, WireInput};

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
    pub(super) config: ClientSessionConfig,
    state: ClientState,
    reassembler: Reassembler,
    chunker: Chunker,
    out: VecDeque<(Channel, Vec<u8>)>,
    events: VecDeque<ClientEvent>,
    last_heard: Duration,
    /// (host clock ms at the ping, local time of receipt, host's RTT estimate ms)
    clock: Option<(f64, Duration, f64)>,
    pub(super) unacked: VecDeque<WireInput>,
    /// How often `unacked` was collapsed.
    collapsed: u64,
    acked: Option<u32>,
    last_input_send: Option<Duration>,
    last_input_sent_seq: Option<u32>,
    /// The newest frame to acknowledge, and whether it went out.
    frame_ack: Option<(u32, bool)>,
    answered: bool,
    /// The welcome as it came: its other copies may still come ([`Hello::welcome_twice`]).
    welcome_copy: Option<Vec<u8>>,
    echoes: Echoes,
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
            welcome_copy: None,
            echoes: Echoes::default(),
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
        let hello = self.hello_json();
        push_frame(&mut self.out, &mut self.chunker, Channel::Reliable, op::HELLO, &hello);
    }

    fn hello_json(&self) -> Vec<u8> {
        serde_json::to_vec(&self.config.hello).unwrap_or_default()
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
                    if self.config.hello.welcome_twice {
                        self.welcome_copy = Some(frame.payload.to_vec());
                    }
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
            // The welcome's other copies: a host sends it on both channels to a client that
            // asked so ([`Hello::welcome_twice`]). Any other welcome is a violation.
            (ClientState::Active, op::WELCOME) if self.welcome_copy.as_deref() == Some(frame.payload) => {}
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
        if self.close_code().is_none() {
            self.echoes.flush(now, &mut self.out);
        }
        if self.state == ClientState::Hello && !self.answered && now.saturating_sub(self.hello_said) >= HELLO_REPEAT {
            self.say_hello(now);
        }
    }

    /// Says the hello once more on the unreliable channel, and again a moment later (see
    /// [`ECHO_AFTER`]), while no answer came: a hello to a new host whose mesh link may hold
    /// its reliable channel up behind a lost chunk. The host takes the first copy and ignores
    /// the others.
    pub fn hello_unreliably(&mut self) {
        if self.state == ClientState::Hello && !self.answered {
            let hello = self.hello_json();
            self.echoes.say(&mut self.out, self.now, op::HELLO, &hello);
        }
    }

    /// Says the hello again now, unless a peer answered: the peer announced it hosts (a
    /// `CLAIM`), and a hello it heard before was said to a fellow client.
    pub fn hello_again(&mut self, now: Duration) {
        self.now = self.now.max(now);
        if self.state == ClientState::Hello && !self.answered {
            self.say_hello(now);
        }
    }

    /// When the hello, or its echo, is due again ([`Self::repeat_hello`]), until a peer answers.
    pub fn hello_due(&self) -> Option<Duration> {
        let unanswered = self.state == ClientState::Hello && !self.answered;
        let repeat = unanswered.then_some(self.hello_said + HELLO_REPEAT);
        repeat.into_iter().chain(self.echoes.due().filter(|_| self.close_code().is_none())).min()
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
