//! A client on the network: finds the host among its peers, keeps the session, decodes snapshots.
//!
//! In a full mesh a client does not know in advance which peer is the host, so it
//! says hello to every peer it meets; the one that answers (welcome or reject) is the
//! host, the others (fellow clients, which run no host session) never answer. From
//! then on [`Client`] feeds snapshot frames through the schema the host sent in its
//! config, acknowledges inputs from the player block, and keeps figures for the
//! headless client's report.
//!
//! [`ClientCore`] is all of it without a transport, like [`crate::session`]: its driver
//! hands it what the transport reported ([`ClientCore::handle`]), runs its timers
//! ([`ClientCore::handle_timeout`], due again at [`ClientCore::poll_timeout`]), sends what it
//! gives ([`ClientCore::poll_transmit`]) and hears what changed ([`ClientCore::poll_event`]).
//! [`Client`] is that driver over a [`Transport`]. When the host changes, the core changes
//! whom it follows ([`ClientCore::follow_own_host`], [`ClientCore::step_down`],
//! [`ClientCore::follow_handoff`]); no transport moves.
//!
//! The core composes parts, each in its file under `client/` with its state, the rules that
//! need only that state, and its tests: the session with the host followed (`HostLink`:
//! the hello, the candidates, the welcome and config, the silence), the snapshots
//! (`Snapshots`), whom it follows and who comes after (`Following`: the epoch and rank, the
//! succession list, the claims heard, the host lost, the host change under way), the shadow's
//! stream (`Shadow`), the `@changeHost` votes (`Votes`), dialing again (`Redialing`), the keys
//! (`Keys`) and the chat (`Chat`). A rule that needs two parts is the core's, in the file of
//! its concern (`takeover.rs`, `dial.rs`, `host_frames.rs`, `change_host.rs`, `inputs.rs`).
//!
//! Host migration: the client keeps the host's newest [`Succession`] list
//! ([`ClientCore::succession`]) and, when it is one of the first successors, queues the
//! checkpoints (put back together from their parts) and log batches it receives
//! ([`ClientCore::take_migration`]) for the app to feed its shadow. It reports its open mesh
//! links to the host (`LINKS`, once after the welcome and whenever they change): the host
//! lists only successors linked to every other peer. A successor whose shadow diverged or
//! missed log entries asks for a fresh checkpoint with [`ClientCore::request_checkpoint`].
//!
//! # Losing the host
//!
//! No frame from the host on either channel for [`ClientCore::host_timeout`] (what the link
//! has shown: three times its longest recent gap between frames, 150 to 500 ms,
//! [`SilenceWatch`]), its link dropping, or its `HANDOFF` means the host is lost. From then on:
//!
//! - the successor whose turn it is ([`ClientCore::takeover_due`]: the `k`-th successor still
//!   linked waits `k` of its timeouts, each with the time a check of the room and a claim
//!   take to come, a handed-off one none) promotes its shadow, and its client
//!   follows that new host in its own process ([`ClientCore::follow_own_host`]), which it
//!   reaches under its own mesh key;
//! - every other client waits for a `CLAIM` ([`Claim`]) from a peer of the succession list
//!   that beats the host it follows by `(epoch, −rank)`, opens a new session to it with its
//!   session token and sends again every recent input the new host has not applied
//!   (the welcome says which). Stale and lower-ranked claims are refused and counted;
//! - a claim from a peer of the mesh that its list does not name is refused too, but once
//!   its host is lost the client says hello to the claimer with its token, as after dialing
//!   the room again, and follows it only if it hosts and welcomes it: the list naming the
//!   claimer may have been lost with the host's line;
//! - nobody claiming within [`ClientConfig::give_up`] closes the client with 4408.
//!
//! # A successor that finds nobody hosting
//!
//! A successor that gave up on its lost host (its rendezvous could not say the host had gone,
//! or said it was still there) keeps what it knew: the host, the succession list and its
//! place in it ([`Orphaned`](redialing::Orphaned)). Its driver dials the room again ([`ClientCore::reconnect`]).
//! When nobody answers that hello within [`UNANSWERED_HELLO`] — nobody took the match over —
//! the successor counts its old host lost again, on the new links: the `k`-th of the list
//! waits `k` turns of [`ORPHAN_TURN`] (an earlier successor that took over welcomes it
//! meanwhile, since its hello is said again every second), then asks the room and the
//! rendezvous as before a first claim, and claims at the next epoch when the host's socket
//! has left the room and no peer says the host plays on. Without a rendezvous to ask it
//! never does: a successor cut off from a live host must not host a match beside it.
//!
//! # Two hosts at once, and the process that hosted
//!
//! Two successors may claim at the same epoch (both promoted at once, or each first in a
//! different list). The loser's server notices the better claim ([`Claim::beats`], or at
//! the same rank [`Claim::precedes`]); its process stops it and calls
//! [`ClientCore::step_down`]: the client that followed its own server goes back to the mesh
//! peers and follows the winner with its token, like any client that hears a better claim.
//! A process whose server handed the match off (a graceful quit, or the `@changeHost` vote
//! below) does the same with [`ClientCore::follow_handoff`]: its player waits for the
//! successor's claim.
//!
//! # The `@changeHost` vote
//!
//! Any player of the host's succession list may call it ([`Client::call_change_host`]);
//! it runs between the clients (`HOST_VOTE`, `HOST_BALLOT`), the host never sees it. Every
//! client that takes it shows it ([`ClientCore::host_vote`], a [`HostVoteView`]) and answers
//! with [`Client::answer_change_host`]; whoever counts a strict majority of yes asks the
//! host to step down (`STEP_DOWN`), and the host hands the match off. The rule and the
//! payloads are in [`crate::migration`'s docs](crate::migration#the-changehost-vote).
//!
//! [`ClientStats`] keeps the figures: host changes, resume time (host loss noticed →
//! first snapshot from the new host) and rewind (match time lost: the old host's newest
//! snapshot minus the tick the new host continues from, which its `CLAIM` says).

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use crate::delta;
use crate::frame::{self, Channel, op};
use crate::input::{Aim, KeyAction, KeyTable};
use crate::meta::{ChatHistory, ChatMessage, EngineLine, Keyset, MetaMessage};
use crate::migration::{
    ALIVE_WITHIN, CHECK_TIME, Claim, Evidence, Handoff, HostBallot, HostCheck, HostSeen, HostVote, MigrationPayload,
    Succession,
};
use crate::schema::SnapshotSchema;
use crate::session::{ClientEvent, ClientSession, Hello, Welcome};
use crate::snapshot::{DecodeError, Frame};
use crate::transport::{PeerKey, Transport, TransportEvent};

mod change_host;
mod chat;
mod dial;
mod following;
mod host_check;
mod host_frames;
mod host_link;
mod host_vote;
mod inputs;
mod keys;
pub mod reconnect;
mod redialing;
mod report;
mod rounds;
mod shadow;
mod silence;
mod snapshots;
mod takeover;
mod votes;

pub use silence::{GAP_FACTOR, MIN_GAPS, SilenceWatch, WINDOW};

pub use chat::MAX_UNSENT_CHAT;
pub use dial::UNANSWERED_HELLO;
pub use following::{HELLO_AHEAD_FRESH, MAX_HELLO_AHEAD};
pub use host_check::Witness;
pub use host_vote::HostVoteView;
pub use keys::AIM_INTERVAL;
use report::Reported;
pub use report::{ClientChange, ClientStats, MAX_QUEUED_CHANGES};
pub use shadow::MAX_QUEUED_MIGRATION;
pub use snapshots::{DELTA_BASELINES, MAX_QUEUED_FRAMES};
pub use takeover::ORPHAN_TURN;
pub use votes::MAX_EARLY_BALLOTS;

/// How a client notices a lost host.
#[derive(Clone, Debug, PartialEq)]
pub struct ClientConfig {
    /// No frame from the host on either channel for this long: the host is lost (500 ms). A
    /// link that has shown how it goes is judged sooner: three times its longest gap between
    /// the host's frames over the last 10 s, at least [`ClientConfig::min_host_timeout`]
    /// ([`SilenceWatch`]).
    pub host_timeout: Duration,
    /// The shortest silence that counts the host as lost, however steady its link (150 ms).
    pub min_host_timeout: Duration,
    /// Host lost and no acceptable claim for this long: the client closes with 4408 (10 s).
    pub give_up: Duration,
    /// Recent key events and aims kept to send again to a new host (64).
    pub input_history: usize,
    /// The client's driver asks a rendezvous about a lost host ([`ClientCore::witness_wanted`],
    /// [`ClientCore::witness`]): a successor alone with its host, or whose room is silent,
    /// claims only once the rendezvous says the host's process is gone. Without one (false,
    /// the default: a match over in-memory links or on a LAN), its own silence decides.
    pub witness: bool,
    /// Shows the rows the host held back for its byte budget carried forward by their rates
    /// ([`delta::Reckoner`]; true, the default). False shows each delta frame as it decodes:
    /// for comparing worlds row by row.
    pub reckon: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            host_timeout: Duration::from_millis(500),
            min_host_timeout: Duration::from_millis(150),
            give_up: Duration::from_secs(10),
            input_history: 64,
            witness: false,
            reckon: true,
        }
    }
}

/// What [`ClientCore::follow_own_host`] gives the process that takes the match over.
#[derive(Clone, Debug, PartialEq)]
pub struct Handover {
    /// The mesh peers linked (their links are open already: the new host greets them).
    pub peers: Vec<PeerKey>,
    /// The lost host's epoch (the new host's is one more).
    pub epoch: u32,
    /// This client's place in the succession list it succeeds by (its claim's rank).
    pub rank: u8,
    /// That list: the peers that may claim the match at the same epoch (a race).
    pub successors: Vec<PeerKey>,
    /// The host lost, whose claim of a later epoch unseats the new host (it played on and
    /// kept the match).
    pub predecessor: Option<PeerKey>,
    /// What the claim rests on: the room's answers (nothing for a handed-off successor).
    pub evidence: Evidence,
    /// The hellos with a token that fellows said to this client ahead of its claim (see
    /// [Hellos said ahead](crate::migration#hellos-said-ahead)), as they came: the new host
    /// takes them as if they came now, and its welcomes go right behind its claim.
    pub hellos: Vec<(PeerKey, Channel, Vec<u8>)>,
}

/// The log target of what a takeover did and when (at debug level).
pub const TAKEOVER_LOG: &str = "vimp_netcode::takeover";

/// The client's whole state and rules, without a transport (the `quinn-proto`/`str0m`
/// shape, like [`crate::session`]): [`ClientCore::handle`] takes what the transport
/// reported, [`ClientCore::handle_timeout`] runs the timers, and [`ClientCore::poll_transmit`]
/// gives what to send. [`Client`] drives one over a [`Transport`]; every method here is
/// reachable through it.
pub struct ClientCore {
    /// This process's key on the transport, as its driver last saw it.
    me: Option<PeerKey>,
    /// The newest time its driver gave.
    now: Duration,
    /// How it notices a lost host.
    settings: ClientConfig,
    /// Mesh peers whose links are open.
    peers: BTreeSet<PeerKey>,
    /// What to send, in order: (peer, channel, bytes).
    outbox: VecDeque<(PeerKey, Channel, Vec<u8>)>,
    /// The close code and reason, once closed (or rejected).
    closed: Option<(u16, String)>,
    /// Figures.
    stats: ClientStats,
    /// Meta messages received that no part takes, `(port, payload)`, until taken.
    meta: Vec<(u8, Vec<u8>)>,
    /// Changes not taken yet, and what they were found against.
    changes: VecDeque<ClientChange>,
    /// What [`Self::poll_event`] last reported.
    reported: Reported,
    /// The session with the host followed, the candidates said hello to, and what the host
    /// said of the match.
    link: host_link::HostLink,
    /// The schema, the baselines, the frames decoded and what is shown of them.
    snapshots: snapshots::Snapshots,
    /// The followed host's place in the succession, its list, the claims heard, the host
    /// lost and the host change under way.
    following: following::Following,
    /// What this client's shadow of the host followed is fed from, and what it knows of it.
    shadow: shadow::Shadow,
    /// The `@changeHost` vote open, the votes called, the ballots ahead of their vote.
    votes: votes::Votes,
    /// Dialing again after a drop ([`Self::reconnect`]), until a welcome, and what a
    /// successor that gave up on its host keeps meanwhile.
    redialing: redialing::Redialing,
    /// The key table in use, the seqs, and the inputs kept to send again to a new host.
    keys: keys::Keys,
    /// The lines heard, and those said that wait for a host.
    chat: chat::Chat,
    /// The scoreboard, and the round ends heard, for a verified player to sign.
    rounds: rounds::Rounds,
    /// Where the room is, as the host it came from said last ([`op::ROOM`](crate::frame::op::ROOM)).
    room: Option<(PeerKey, crate::lobby::Invite)>,
    /// What the rendezvous said of the host followed while it was only quiet, and when
    /// ([`Self::witness_wanted`]).
    early_witness: Option<(PeerKey, Witness, Duration)>,
}

impl ClientCore {
    /// A client that will say `hello` to the peers its driver reports, with its host-loss
    /// settings.
    pub fn new(hello: Hello, config: ClientConfig) -> Self {
        ClientCore {
            me: None,
            now: Duration::ZERO,
            peers: BTreeSet::new(),
            outbox: VecDeque::new(),
            closed: None,
            stats: ClientStats::default(),
            meta: Vec::new(),
            changes: VecDeque::new(),
            reported: Reported::default(),
            link: host_link::HostLink::new(hello),
            snapshots: snapshots::Snapshots::new(config.reckon),
            following: following::Following::default(),
            shadow: shadow::Shadow::default(),
            votes: votes::Votes::default(),
            redialing: redialing::Redialing::default(),
            keys: keys::Keys::new(config.input_history),
            chat: chat::Chat::default(),
            rounds: rounds::Rounds::default(),
            room: None,
            early_witness: None,
            settings: config,
        }
    }

    /// Where the room is, as a host said last: the invite friends join by, and whether the
    /// rendezvous runs in that host's process; with the host that said it.
    pub fn room(&self) -> Option<(PeerKey, &crate::lobby::Invite)> {
        self.room.as_ref().map(|(host, invite)| (*host, invite))
    }

    /// How long the host may be silent before it counts as lost: what its link has shown
    /// ([`SilenceWatch`]), between [`ClientConfig::min_host_timeout`] and
    /// [`ClientConfig::host_timeout`].
    pub fn host_timeout(&self) -> Duration {
        self.link.timeout(&self.settings)
    }

    /// Whether the host is lost and no new one followed yet.
    pub fn host_lost(&self) -> bool {
        self.following.lost.is_some()
    }

    /// A frame from a mesh peer that is neither the host followed nor a candidate answering
    /// the hello: a fellow client may send a `CLAIM`, the `@changeHost` vote, the check of the
    /// room before a claim and its answers (each counted apart when refused), and its own
    /// hello, said to every peer it meets; anything else only the host may send, and is
    /// refused ([`ClientStats::peer_frames_refused`]).
    fn on_peer_frame(&mut self, peer: PeerKey, channel: Channel, bytes: &[u8], now: Duration) {
        let taken = match frame::parse(bytes) {
            Ok(f) if f.opcode == op::HELLO => {
                self.keep_hello_ahead(peer, channel, bytes, f.payload, now);
                true
            }
            // The check of the room comes on both channels (see `check_the_room`).
            Ok(f) if f.opcode == op::HOST_CHECK => self.on_host_check(peer, f.payload, now),
            Ok(f) if f.opcode == op::HOST_SEEN => self.on_host_seen(peer, f.payload),
            // A new host's claim comes on both channels (see `ServerCore::from_shadow`).
            Ok(f) if f.opcode == op::CLAIM => {
                match Claim::decode(f.payload) {
                    Ok(claim) => self.on_claim(peer, claim, now),
                    Err(_) => self.stats.claims_refused += 1,
                }
                true
            }
            Ok(f) if channel == Channel::Reliable => match f.opcode {
                op::HOST_VOTE | op::HOST_BALLOT => {
                    self.on_vote_frame(peer, f.opcode, f.payload, now);
                    true
                }
                op::HOST_CHECK => self.on_host_check(peer, f.payload, now),
                op::HOST_SEEN => self.on_host_seen(peer, f.payload),
                _ => false,
            },
            _ => false,
        };
        if !taken {
            self.stats.peer_frames_refused += 1;
        }
    }

    /// A fellow's hello, kept if it carries a token (it lost the host, and says hello ahead
    /// to this client, a successor): should this client take the match over, its new host
    /// answers it at once. A join's hello, said to every peer met, has no token.
    fn keep_hello_ahead(&mut self, peer: PeerKey, channel: Channel, bytes: &[u8], payload: &[u8], now: Duration) {
        if self.link.welcome.is_none() || !self.peers.contains(&peer) {
            return;
        }
        self.following.keep_hello_ahead(peer, channel, bytes, payload, now);
    }

    /// The mesh peers this client has an open link to (the host and fellow clients).
    pub fn linked_peers(&self) -> usize {
        self.peers.len()
    }

    /// The host's welcome, once accepted.
    pub fn welcome(&self) -> Option<&Welcome> {
        self.link.welcome.as_ref()
    }

    /// The close code and reason, once closed (or rejected).
    pub fn closed(&self) -> Option<&(u16, String)> {
        self.closed.as_ref()
    }

    /// How many rows of the newest delta frame it shows carried forward by their rates: rows
    /// on the move that the host held back for its byte budget ([`delta::Reckoner`]).
    pub fn rows_carried(&self) -> usize {
        self.snapshots.rows_carried()
    }

    /// The newest decoded snapshot.
    pub fn last_frame(&self) -> Option<&Frame> {
        self.snapshots.last()
    }

    /// The frames decoded since the last call, oldest first (at most [`MAX_QUEUED_FRAMES`]).
    pub fn take_frames(&mut self) -> Vec<Frame> {
        self.snapshots.take()
    }

    /// The host's `CONFIG_DATA`, once received.
    pub fn config(&self) -> Option<&serde_json::Value> {
        self.link.config.as_ref()
    }

    /// The snapshot schema from the host's config, once received.
    pub fn schema(&self) -> Option<&SnapshotSchema> {
        self.snapshots.schema()
    }

    /// The key table in use (the game's, or the spectator's), once known.
    pub fn key_table(&self) -> Option<&KeyTable> {
        self.keys.table()
    }

    /// The key set the host last named (`KEYSET_DATA`): whether this client plays or watches.
    pub fn keyset(&self) -> Option<Keyset> {
        self.keys.keyset()
    }

    /// Chat lines received (`[text, author, teamId]`).
    pub fn chat(&self) -> &[serde_json::Value] {
        self.chat.lines()
    }

    /// Says that this client's player plays verified under the identity `key` (its
    /// [`PublicKey`](crate::identity::PublicKey)'s text), or no longer does (`None`): the round
    /// ends its hosts send are checked for it from now on ([`Self::take_round`]). Its process
    /// says so as it sends each token; a refusal of the host's (`c:8`) takes it back.
    pub fn set_identity_key(&mut self, key: Option<String>) {
        self.rounds.set_key(key);
    }

    /// The oldest round end heard and not taken, for a verified player: the results to sign
    /// and send the rendezvous ([`RoundReport::sign`](crate::rounds::RoundReport::sign)), or
    /// why they are not this player's to sign (they disagree with its scoreboard, or do not
    /// read). Each round end is taken once.
    pub fn take_round(&mut self) -> Option<Result<crate::rounds::RoundResults, crate::rounds::RoundError>> {
        self.rounds.take()
    }

    /// Other meta messages received, `(port, payload)`, taken.
    pub fn take_meta(&mut self) -> Vec<(u8, Vec<u8>)> {
        std::mem::take(&mut self.meta)
    }

    /// The host's newest succession list, once published.
    pub fn succession(&self) -> Option<&Succession> {
        self.following.succession.as_ref()
    }

    /// The host that the client is talking to (its peer key), once it answered.
    pub fn host_peer(&self) -> Option<PeerKey> {
        self.link.peer()
    }

    /// The migration payloads received since the last call, oldest first: a successor feeds
    /// them to its shadow (at most [`MAX_QUEUED_MIGRATION`] are kept; the oldest go first).
    pub fn take_migration(&mut self) -> Vec<MigrationPayload> {
        self.shadow.take()
    }

    /// Asks the host for a fresh checkpoint (`CHECKPOINT_REQUEST`): a successor calls it while
    /// its shadow wants one (it diverged or missed log entries), and may call it every frame:
    /// a request goes at most once per [`MIN_REQUEST_INTERVAL`](crate::migration::MIN_REQUEST_INTERVAL) (the host answers no more
    /// often), on the next [`Client::update`]. Returns whether one was queued (not without
    /// a host, nor too soon after the last). The host answers only the successors it streams to.
    pub fn request_checkpoint(&mut self) -> bool {
        let now = self.now;
        if !self.shadow.may_request(now) {
            return false;
        }
        let Some(session) = self.link.active() else { return false };
        session.send_meta(op::CHECKPOINT_REQUEST, &[]);
        self.shadow.requested(now);
        true
    }

    /// Figures.
    pub fn stats(&self) -> &ClientStats {
        &self.stats
    }

    /// The host's clock estimate at `now`, ms.
    pub fn server_time_ms(&self, now: Duration) -> Option<f64> {
        self.link.host.as_ref().and_then(|(_, s)| s.server_time_ms(now))
    }

    /// The host's RTT estimate, ms.
    pub fn rtt_ms(&self) -> Option<f64> {
        self.link.host.as_ref().and_then(|(_, s)| s.rtt_ms())
    }

    /// Sends a chat line.
    ///
    /// A line said while no host is followed (before the welcome, the host silent or lost, a
    /// host change under way) waits for the next one, the oldest dropped past
    /// [`MAX_UNSENT_CHAT`].
    pub fn say(&mut self, text: &str) {
        self.chat.say(text);
        self.send_chat();
    }

    /// Sends the lines waiting for a host, once one is followed.
    fn send_chat(&mut self) {
        let Some(session) = self.link.active() else { return };
        for text in self.chat.take_unsent() {
            let payload = serde_json::to_vec(&text).unwrap_or_default();
            session.send_meta(op::client::CHAT, &payload);
        }
    }

    /// Sends a raw client→server meta payload on `port` (votes, auth responses).
    pub fn send_meta(&mut self, port: u8, payload: &[u8]) {
        if let Some((_, session)) = self.link.host.as_mut() {
            session.send_meta(port, payload);
        }
    }

    /// Leaves: a close frame goes to the host.
    pub fn leave(&mut self, now: Duration) {
        self.now = self.now.max(now);
        if let Some((_, session)) = self.link.host.as_mut() {
            session.close(crate::session::close::NORMAL);
        }
        self.flush();
    }

    /// What the transport reported at `now`: a link opened or dropped, or a message.
    pub fn handle(&mut self, now: Duration, event: TransportEvent) {
        self.now = self.now.max(now);
        {
            match event {
                TransportEvent::Connected(peer) => {
                    self.peers.insert(peer);
                    if self.link.searching && self.link.host.is_none() && self.closed.is_none() {
                        // Both ways: a lost reliable hello waits for the new association's
                        // first retransmission timeout (500 ms, no round trip measured yet).
                        self.link.dial(peer, now);
                        self.link.last_candidate_at = now;
                    }
                }
                TransportEvent::Disconnected(peer) => {
                    self.peers.remove(&peer);
                    self.link.candidates.remove(&peer);
                    self.following.unlinked(peer);
                    if self.link.host.as_ref().is_some_and(|(h, _)| *h == peer) && self.closed.is_none() {
                        self.on_host_lost(now, None, "the host's link dropped");
                    }
                }
                TransportEvent::Message { peer, channel, bytes } => {
                    self.stats.bytes_in += bytes.len() as u64;
                    if self.link.take_host_frame(peer, channel, &bytes, now) {
                        // The host's session took it.
                    } else if self.link.candidates.contains_key(&peer) {
                        self.on_candidate_frame(peer, channel, &bytes, now);
                    } else if self.link.host.is_none()
                        && let Some(lost) = self.following.lost.as_mut()
                        && lost.host == Some(peer)
                        && let Some(mut session) = lost.stalled.take()
                    {
                        // The host was only stalled: back to it, as if nothing happened.
                        session.handle_message(now, channel, &bytes);
                        self.following.lost = None;
                        self.following.resuming = None;
                        self.stats.stalls_survived += 1;
                        self.link.host = Some((peer, *session));
                    } else {
                        self.on_peer_frame(peer, channel, &bytes, now);
                    }
                }
            }
        }
    }

    /// The client's timers at `now`, after the transport's events: the answering candidate
    /// becomes the host, the host's events are acted on, a silent host is lost, a lost one
    /// given up, the `@changeHost` vote settled; what is due goes to
    /// [`Self::poll_transmit`]. Call it every turn of the network loop.
    pub fn handle_timeout(&mut self, now: Duration) {
        self.now = self.now.max(now);
        // Every peer that may be the host hears the hello again until one answers, and the
        // candidate that answered is the host.
        self.link.search(now);
        if let Some((host, session)) = self.link.host.as_mut() {
            session.handle_timeout(now);
            let host = *host;
            let events: Vec<ClientEvent> = std::iter::from_fn(|| session.poll_event()).collect();
            for event in events {
                // An event of the batch lost the host (its `HANDOFF`): the rest is the old
                // host's, and a snapshot of it must not count as the new host's first.
                if self.link.host.as_ref().is_none_or(|(h, _)| *h != host) {
                    break;
                }
                self.on_event(event, now);
            }
            if let Some((_, session)) = self.link.host.as_mut() {
                session.flush_inputs(now);
            }
        }
        // The host hears of the open mesh links when they change.
        self.link.report_links(&self.peers);
        if let Some((_, session)) = &self.link.host
            && session.is_active()
            && now.saturating_sub(session.last_heard()) >= self.host_timeout()
        {
            self.on_host_silent(now);
        }
        if let Some(lost) = self.following.lost.as_ref().filter(|l| now.saturating_sub(l.at) >= self.settings.give_up) {
            // A successor keeps what it knew, to take the match over should dialing the room
            // again find nobody hosting it.
            if !lost.orphan {
                self.redialing.gave_up(lost.host, &lost.successors, self.me);
            }
            self.following.lost = None;
            self.following.resuming = None;
            let reason = "the host is gone and nobody took over".to_owned();
            self.closed.get_or_insert((crate::session::close::HEARTBEAT, reason));
        }
        self.give_up_unanswered(now);
        self.send_chat();
        self.check_the_room(now);
        self.settle_host_vote(now);
        self.flush();
        self.note_changes();
    }

    /// A tick's match time, ms: the host config's `engine.timeStepMs` (120 Hz without one).
    fn tick_ms(&self) -> f64 {
        self.link.tick_ms()
    }

    /// Puts what the sessions have to send in the outbox.
    fn flush(&mut self) {
        for (peer, ch, bytes) in self.link.transmit() {
            self.stats.bytes_out += bytes.len() as u64;
            self.outbox.push_back((peer, ch, bytes));
        }
    }
}

impl ClientCore {
    /// The next message to send: `(peer, channel, bytes)`, in order.
    pub fn poll_transmit(&mut self) -> Option<(PeerKey, Channel, Vec<u8>)> {
        self.outbox.pop_front()
    }

    /// When [`Self::handle_timeout`] next needs to run, if nothing arrives before: a session's
    /// timer, the host's silence counting as lost, the next successor's turn to take over and
    /// the give-up time after a loss, the `@changeHost` vote's end. `None` when nothing is
    /// pending (closed).
    pub fn poll_timeout(&self) -> Option<Duration> {
        if self.closed.is_some() {
            return None;
        }
        let sessions = self.link.session_due();
        let host = self.link.host.as_ref().map(|(_, s)| s);
        let silence = host.filter(|s| s.is_active()).map(|s| s.last_heard() + self.host_timeout());
        // After a loss every host timeout is some successor's turn, and then comes the end.
        let lost = self.following.lost.as_ref().map(|l| {
            let timeout = l.turn.max(Duration::from_millis(1));
            let turns = (self.now.saturating_sub(l.at).as_nanos() / timeout.as_nanos()) as u32 + 1;
            (l.at + timeout * turns).min(l.at + self.settings.give_up)
        });
        let vote = self.votes.until();
        let check = self.following.lost.as_ref().and_then(|l| l.check.as_ref()).and_then(host_check::Check::round_end);
        let joining = self.link.welcome.is_none() || self.redialing.under_way();
        let unanswered = self.link.waiting_since().filter(|_| joining).map(|at| at + UNANSWERED_HELLO);
        sessions.into_iter().chain(silence).chain(lost).chain(vote).chain(check).chain(unanswered).min()
    }

    /// This process's key on the transport (a WebRTC id comes once the signalling server
    /// gave one, so a driver passes it every turn).
    pub fn set_local_id(&mut self, me: Option<PeerKey>) {
        self.me = me;
    }
}

/// A [`ClientCore`] driven over a transport `T`: [`Client::update`] polls the transport,
/// hands its events to the core, runs the core's timers and sends what the core gives.
/// Every [`ClientCore`] method is reachable through it (it dereferences to its core). A
/// client that can take the match over is driven by its process's node instead (the host
/// crate's `engine::node`), which holds the one transport whatever the role.
pub struct Client<T: Transport> {
    core: ClientCore,
    transport: T,
}

impl<T: Transport> std::ops::Deref for Client<T> {
    type Target = ClientCore;

    fn deref(&self) -> &ClientCore {
        &self.core
    }
}

impl<T: Transport> std::ops::DerefMut for Client<T> {
    fn deref_mut(&mut self) -> &mut ClientCore {
        &mut self.core
    }
}

impl<T: Transport> Client<T> {
    /// A client that will say `hello` to the peers of `transport`.
    pub fn new(transport: T, hello: Hello) -> Self {
        Self::with_config(transport, hello, ClientConfig::default())
    }

    /// A client with its host-loss settings.
    pub fn with_config(transport: T, hello: Hello, config: ClientConfig) -> Self {
        let mut core = ClientCore::new(hello, config);
        core.set_local_id(transport.local_id());
        Client { core, transport }
    }

    /// One turn of the client's network loop at `now`: the transport's events in, the
    /// timers run, what is due out.
    pub fn update(&mut self, now: Duration) {
        self.core.set_local_id(self.transport.local_id());
        for event in self.transport.poll(now) {
            self.core.handle(now, event);
        }
        self.core.handle_timeout(now);
        self.send(now);
    }

    /// Puts what the core has to send on the transport.
    fn send(&mut self, now: Duration) {
        while let Some((peer, channel, bytes)) = self.core.poll_transmit() {
            self.transport.send(now, peer, channel, bytes);
        }
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably (tests use it to misbehave).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }

    /// The core, for a caller that drives it alike.
    pub fn core(&self) -> &ClientCore {
        &self.core
    }

    /// Leaves: a close frame goes to the host, on the transport at once.
    pub fn leave(&mut self, now: Duration) {
        self.core.leave(now);
        self.send(now);
    }

    /// [`ClientCore::call_change_host`], its frames on the transport at once.
    pub fn call_change_host(&mut self) -> Option<u32> {
        let id = self.core.call_change_host();
        self.send(self.core.now);
        id
    }

    /// [`ClientCore::answer_change_host`], its frames on the transport at once.
    pub fn answer_change_host(&mut self, yes: bool) -> bool {
        let answered = self.core.answer_change_host(yes);
        self.send(self.core.now);
        answered
    }
}

#[cfg(test)]
mod tests;
