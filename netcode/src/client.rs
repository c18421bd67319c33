//! A client on the network: finds the host among its peers, keeps the session, decodes snapshots.
//!
//! In a full mesh a client does not know in advance which peer is the host, so it
//! says hello to every peer it meets; the one that answers (welcome or reject) is the
//! host, the others (fellow clients, which run no host session) never answer. From
//! then on [`Client`] feeds snapshot frames through the schema the host sent in its
//! config, acknowledges inputs from the player block, and keeps figures for the
//! headless client's report.
//!
//! Host migration: the client keeps the host's newest [`Succession`] list
//! ([`Client::succession`]) and, when it is one of the first successors, queues the
//! checkpoints (put back together from their parts) and log batches it receives
//! ([`Client::take_migration`]) for the app to feed its shadow.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use crate::frame::op;
use crate::input::{KeyAction, KeyTable};
use crate::migration::{CheckpointAssembler, MigrationPayload, Succession};
use crate::schema::SnapshotSchema;
use crate::session::{ClientEvent, ClientSession, ClientSessionConfig, Hello, Welcome};
use crate::snapshot::{Frame, unpack};
use crate::transport::{PeerKey, Transport, TransportEvent};

/// Figures of a client's life.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientStats {
    /// When the welcome arrived.
    pub welcomed_at: Option<Duration>,
    /// When the first snapshot arrived.
    pub first_snapshot_at: Option<Duration>,
    /// Snapshot frames decoded.
    pub snapshots: u64,
    /// Frames that did not decode.
    pub bad_snapshots: u64,
    /// Bytes received.
    pub bytes_in: u64,
    /// Bytes sent.
    pub bytes_out: u64,
    /// Migration frames received (succession lists, checkpoint parts, log batches, handoffs).
    pub migration_frames: u64,
    /// Migration frames that did not decode (counted and ignored: the sender is the host).
    pub bad_migration_frames: u64,
    /// Migration payloads dropped because the caller did not take them in time.
    pub migration_dropped: u64,
}

/// How many decoded frames [`Client::take_frames`] keeps for a caller that does not take them.
pub const MAX_QUEUED_FRAMES: usize = 64;

/// How many migration payloads [`Client::take_migration`] keeps for a caller that does not take them.
pub const MAX_QUEUED_MIGRATION: usize = 1024;

/// A client (see the module docs).
pub struct Client<T: Transport> {
    transport: T,
    hello: Hello,
    candidates: BTreeMap<PeerKey, ClientSession>,
    host: Option<(PeerKey, ClientSession)>,
    welcome: Option<Welcome>,
    config: Option<serde_json::Value>,
    schema: Option<SnapshotSchema>,
    keys: Option<KeyTable>,
    next_seq: u32,
    last_frame: Option<Frame>,
    frames: Vec<Frame>,
    chat: Vec<serde_json::Value>,
    meta: Vec<(u8, Vec<u8>)>,
    succession: Option<Succession>,
    checkpoints: CheckpointAssembler,
    migration: VecDeque<MigrationPayload>,
    closed: Option<(u16, String)>,
    stats: ClientStats,
}

impl<T: Transport> Client<T> {
    /// A client that will say `hello` to the peers of `transport`.
    pub fn new(transport: T, hello: Hello) -> Self {
        Client {
            transport,
            hello,
            candidates: BTreeMap::new(),
            host: None,
            welcome: None,
            config: None,
            schema: None,
            keys: None,
            next_seq: 1,
            last_frame: None,
            frames: Vec::new(),
            chat: Vec::new(),
            meta: Vec::new(),
            succession: None,
            checkpoints: CheckpointAssembler::new(),
            migration: VecDeque::new(),
            closed: None,
            stats: ClientStats::default(),
        }
    }

    /// The host's welcome, once accepted.
    pub fn welcome(&self) -> Option<&Welcome> {
        self.welcome.as_ref()
    }

    /// The close code and reason, once closed (or rejected).
    pub fn closed(&self) -> Option<&(u16, String)> {
        self.closed.as_ref()
    }

    /// The newest decoded snapshot.
    pub fn last_frame(&self) -> Option<&Frame> {
        self.last_frame.as_ref()
    }

    /// The frames decoded since the last call, oldest first (at most [`MAX_QUEUED_FRAMES`]).
    pub fn take_frames(&mut self) -> Vec<Frame> {
        std::mem::take(&mut self.frames)
    }

    /// The host's `CONFIG_DATA`, once received.
    pub fn config(&self) -> Option<&serde_json::Value> {
        self.config.as_ref()
    }

    /// The snapshot schema from the host's config, once received.
    pub fn schema(&self) -> Option<&SnapshotSchema> {
        self.schema.as_ref()
    }

    /// The key table in use (the game's, or the spectator's), once known.
    pub fn key_table(&self) -> Option<&KeyTable> {
        self.keys.as_ref()
    }

    /// Chat lines received (`[text, author, teamId]`).
    pub fn chat(&self) -> &[serde_json::Value] {
        &self.chat
    }

    /// Other meta messages received, `(port, payload)`, taken.
    pub fn take_meta(&mut self) -> Vec<(u8, Vec<u8>)> {
        std::mem::take(&mut self.meta)
    }

    /// The host's newest succession list, once published.
    pub fn succession(&self) -> Option<&Succession> {
        self.succession.as_ref()
    }

    /// The host that the client is talking to (its peer key), once it answered.
    pub fn host_peer(&self) -> Option<PeerKey> {
        self.host.as_ref().map(|(p, _)| *p)
    }

    /// The migration payloads received since the last call, oldest first: a successor feeds
    /// them to its shadow (at most [`MAX_QUEUED_MIGRATION`] are kept; the oldest go first).
    pub fn take_migration(&mut self) -> Vec<MigrationPayload> {
        self.migration.drain(..).collect()
    }

    /// Figures.
    pub fn stats(&self) -> &ClientStats {
        &self.stats
    }

    /// The host's clock estimate at `now`, ms.
    pub fn server_time_ms(&self, now: Duration) -> Option<f64> {
        self.host.as_ref().and_then(|(_, s)| s.server_time_ms(now))
    }

    /// The host's RTT estimate, ms.
    pub fn rtt_ms(&self) -> Option<f64> {
        self.host.as_ref().and_then(|(_, s)| s.rtt_ms())
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably (tests use it to misbehave).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// Presses or releases a key by name (from the host's key table); returns its seq.
    pub fn key(&mut self, action: KeyAction, name: &str) -> Option<u32> {
        let spec = self.keys.as_ref()?.lookup(name)?;
        let (_, session) = self.host.as_mut()?;
        let seq = self.next_seq;
        self.next_seq += 1;
        session.push_input(seq, action, spec.bit);
        Some(seq)
    }

    /// Sends a chat line.
    pub fn say(&mut self, text: &str) {
        if let Some((_, session)) = self.host.as_mut() {
            let payload = serde_json::to_vec(text).unwrap_or_default();
            session.send_meta(op::client::CHAT, &payload);
        }
    }

    /// Sends a raw client→server meta payload on `port` (votes, auth responses).
    pub fn send_meta(&mut self, port: u8, payload: &[u8]) {
        if let Some((_, session)) = self.host.as_mut() {
            session.send_meta(port, payload);
        }
    }

    /// Leaves: a close frame goes to the host.
    pub fn leave(&mut self, now: Duration) {
        if let Some((_, session)) = self.host.as_mut() {
            session.close(crate::session::close::NORMAL);
        }
        self.flush(now);
    }

    /// One turn of the client's network loop at `now`.
    pub fn update(&mut self, now: Duration) {
        for event in self.transport.poll(now) {
            match event {
                TransportEvent::Connected(peer) => {
                    if self.host.is_none() && self.closed.is_none() {
                        let session = ClientSession::new(ClientSessionConfig::new(self.hello.clone()), now);
                        self.candidates.insert(peer, session);
                    }
                }
                TransportEvent::Disconnected(peer) => {
                    self.candidates.remove(&peer);
                    if self.host.as_ref().is_some_and(|(h, _)| *h == peer) && self.closed.is_none() {
                        self.closed = Some((crate::session::close::HEARTBEAT, "the host's link dropped".into()));
                    }
                }
                TransportEvent::Message { peer, channel, bytes } => {
                    self.stats.bytes_in += bytes.len() as u64;
                    if let Some((h, s)) = self.host.as_mut()
                        && *h == peer
                    {
                        s.handle_message(now, channel, &bytes);
                    } else if let Some(s) = self.candidates.get_mut(&peer) {
                        s.handle_message(now, channel, &bytes);
                    }
                }
            }
        }
        // The candidate that answered is the host.
        if self.host.is_none()
            && let Some(peer) =
                self.candidates.iter().find(|(_, s)| s.is_active() || s.close_code().is_some()).map(|(p, _)| *p)
            && let Some(session) = self.candidates.remove(&peer)
        {
            self.candidates.clear();
            self.host = Some((peer, session));
        }
        if let Some((_, session)) = self.host.as_mut() {
            session.handle_timeout(now);
            let events: Vec<ClientEvent> = std::iter::from_fn(|| session.poll_event()).collect();
            for event in events {
                self.on_event(event, now);
            }
            if let Some((_, session)) = self.host.as_mut() {
                session.flush_inputs(now);
            }
        }
        self.flush(now);
    }

    fn on_event(&mut self, event: ClientEvent, now: Duration) {
        match event {
            ClientEvent::Welcomed(w) => {
                self.stats.welcomed_at = Some(now);
                self.next_seq = w.input_seq + 1;
                if w.spectator {
                    self.keys = Some(crate::session::spectator_keys());
                }
                self.welcome = Some(w);
            }
            ClientEvent::Rejected(r) => self.closed = Some((r.code, r.reason)),
            ClientEvent::Closed { code, reason, .. } => {
                if self.closed.is_none() {
                    self.closed = Some((code, reason));
                }
            }
            ClientEvent::Meta { port: op::CONFIG_DATA, payload } => {
                let config: serde_json::Value = serde_json::from_slice(&payload).unwrap_or_default();
                self.schema = SnapshotSchema::from_value(config["engine"]["snapshot"].clone()).ok();
                if !self.welcome.as_ref().is_some_and(|w| w.spectator) {
                    self.keys = serde_json::from_value(config["game"]["playerKeys"].clone()).ok();
                }
                self.config = Some(config);
            }
            ClientEvent::Meta { port: op::CHAT_DATA, payload } => {
                if let Ok(line) = serde_json::from_slice(&payload) {
                    self.chat.push(line);
                }
            }
            ClientEvent::Meta { port, payload } => self.meta.push((port, payload)),
            ClientEvent::Snapshot(bytes) => {
                let Some(schema) = &self.schema else { return };
                match unpack(schema, &bytes) {
                    Ok(frame) => {
                        self.stats.snapshots += 1;
                        self.stats.first_snapshot_at.get_or_insert(now);
                        if let (Some(p), Some((_, session))) = (&frame.player, self.host.as_mut()) {
                            session.ack_inputs(p.last_input_seq);
                        }
                        if self.frames.len() == MAX_QUEUED_FRAMES {
                            self.frames.remove(0);
                        }
                        self.frames.push(frame.clone());
                        self.last_frame = Some(frame);
                    }
                    Err(_) => self.stats.bad_snapshots += 1,
                }
            }
            ClientEvent::Engine { opcode, payload } => self.on_migration(opcode, &payload),
        }
    }

    /// Migration frames. One that does not decode is counted and ignored: the sender is the
    /// host, and closing the client's only link to the match would lose more than it protects.
    fn on_migration(&mut self, opcode: u8, payload: &[u8]) {
        self.stats.migration_frames += 1;
        let payload = match opcode {
            op::SUCCESSION => {
                match Succession::decode(payload) {
                    Ok(s) => self.succession = Some(s),
                    Err(_) => self.stats.bad_migration_frames += 1,
                }
                return;
            }
            op::CHECKPOINT => match self.checkpoints.push(payload) {
                Ok(Some(bytes)) => MigrationPayload::Checkpoint(bytes),
                Ok(None) => return,
                Err(_) => {
                    self.stats.bad_migration_frames += 1;
                    return;
                }
            },
            op::INPUT_LOG => MigrationPayload::Log(payload.to_vec()),
            op::HANDOFF => MigrationPayload::Handoff(payload.to_vec()),
            _ => {
                self.stats.bad_migration_frames += 1;
                return;
            }
        };
        if self.migration.len() == MAX_QUEUED_MIGRATION {
            self.migration.pop_front();
            self.stats.migration_dropped += 1;
        }
        self.migration.push_back(payload);
    }

    fn flush(&mut self, now: Duration) {
        let mut out = Vec::new();
        if let Some((peer, session)) = self.host.as_mut() {
            while let Some((ch, bytes)) = session.poll_transmit() {
                out.push((*peer, ch, bytes));
            }
        }
        for (peer, session) in &mut self.candidates {
            while let Some((ch, bytes)) = session.poll_transmit() {
                out.push((*peer, ch, bytes));
            }
        }
        for (peer, ch, bytes) in out {
            self.stats.bytes_out += bytes.len() as u64;
            self.transport.send(now, peer, ch, bytes);
        }
    }
}
