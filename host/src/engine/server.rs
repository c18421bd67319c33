//! The host on the network: a [`Host`] plus a transport, a session per peer and the roster.
//!
//! [`Server::update`] is the host process's whole network loop, called as often as
//! the host thread likes (every millisecond or every frame) with the current time:
//!
//! 1. transport events in: peers connect (a [`HostSession`] each), drop, send messages;
//! 2. session events: hellos go through the [`Roster`] (admission, resume, takeover),
//!    key events become [`HostCommand::Input`], aims [`HostCommand::Aim`] and views
//!    [`HostCommand::View`] (bounded by [`ServerCore::view_bounds`]), chat is relayed,
//!    latencies recorded;
//! 3. the match steps as many fixed ticks as the elapsed time covers, and each tick's
//!    frames go to their receivers on the unreliable channel, its meta messages on the
//!    reliable one;
//! 4. every session's queued messages go out on the transport.
//!
//! [`ServerCore`] is all of it without a transport: steps 1 are [`ServerCore::handle`], steps
//! 2–3 [`ServerCore::handle_timeout`] (due again at [`ServerCore::poll_timeout`]), and step 4
//! is its driver taking [`ServerCore::poll_transmit`]; what changed (a player seated or gone,
//! a better claim, a handoff) comes out of [`ServerCore::poll_event`]. [`Server`] is that driver over a [`Transport`]; a test can
//! drive two cores against each other with nothing between them.
//!
//! A peer that misbehaves (garbage, oversize frames, floods) is closed with its code
//! by its own session; nothing else in the match notices.
//!
//! Spectators (a hello with `spectator`, a player's `/spectate`, a player still to fill in the
//! game's form) take a slot but join no game (no actor): they get keyset 0, the empty panel
//! and the frames of the player they watch (player block included), and
//! `nextPlayer`/`prevPlayer` switch it; `/play` puts them in the game ([`status`]).
//!
//! Votes: `"teams"`/`"maps"` list requests; a team pick moves the player; a map pick opens
//! a [`MAP_CHANGE_VOTE`] (`yes`/`no`, 15 s) that loads the map when more than half of the
//! connected players say yes.
//!
//! Chat ([`chat`]): lines to everyone, personal lines (`/w name text`), the engine's commands
//! and its system lines ([`vimp_netcode::meta::EngineLine`]): `s:1:name` — joined,
//! `s:2:name` — left (its slot waits for a resume), `s:3:name` — came back with its token,
//! `s:4`/`s:5` — watches/plays; answers to a command (group `c`) go to its sender only.
//!
//! Host migration ([`succession`]): the server ranks its players (those linked to every
//! other peer, by their `LINKS` reports) into a succession list, publishes it to everyone and streams checkpoints and the log to the first successors
//! ([`ServerConfig::migration`]). A successor's process turns its shadow into a server
//! with [`Server::from_shadow`] (epoch + 1, every slot waiting for its token, a `CLAIM` to
//! every peer of the mesh); a leaving host hands the match off with [`Server::hand_off`].
//! A server that hears a better claim than its own ([`Claim::beats`]) reports it in
//! [`ServerCore::superseded`]: its node drops it and its player joins the winner as a client.
//! Players may vote the host away (`@changeHost`, run between the clients): a `STEP_DOWN`
//! from a peer of the succession list whose yes votes are a strict majority of that list
//! makes the server hand the match off ([`ServerCore::handed_off`]). A server that handed off
//! does nothing more; its node drops it and its own player joins the successor as a client
//! among the server's peers ([`ServerCore::linked_peers`]). The node (`engine::node`) makes
//! every one of these changes.

mod chat;
mod status;
mod succession;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use vimp_netcode::frame::{Channel, op};
use vimp_netcode::input::{ViewTime, WireInput};
use vimp_netcode::meta::{
    ChatHistory, ChatMessage, ClientMeta, Encoded, EngineLine, ListRequest, MetaMessage, PanelState, PlayerStat,
    StatTable, TechInform, Vote, VoteAnswer, VoteValues,
};
use vimp_netcode::migration::{Claim, Handoff, Links};
use vimp_netcode::session::{HostEvent, HostSession, HostSessionConfig, SessionToken, Welcome, close};
use vimp_netcode::transport::{PeerKey, Transport};

use crate::engine::meta::Outgoing;
use crate::engine::migration::{GameMigration, MigrationConfig, Shadow};
use crate::engine::players::{HostCommand, MaxRewind, Participants, PlayerId, PlayerKeys, Scores};
use crate::engine::roster::Roster;
use crate::engine::schedule::Host;
use crate::engine::sim::EngineSettings;
use crate::engine::snapshot::{DeltaViewer, DeltaViewers, FrameReceivers};
pub use succession::MigrationStats;

/// How the host meets its peers.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The match's id, told to every client.
    pub match_id: String,
    /// The host's epoch (bumped at every host change).
    pub epoch: u32,
    /// Most players (bots included).
    pub max_players: usize,
    /// The lobby password, if any.
    pub password: Option<String>,
    /// Heartbeat, latency and rate limits of every session.
    pub session: HostSessionConfig,
    /// What clients get on `CONFIG_DATA` right after their welcome.
    pub client_config: serde_json::Value,
    /// Maps players may vote for, besides the current one.
    pub maps: Vec<crate::engine::map::MapConfig>,
    /// The succession list and streaming to the successors.
    pub migration: MigrationConfig,
}

/// The name of the map-change vote players answer `yes` or `no`.
pub const MAP_CHANGE_VOTE: &str = "mapChange";

/// How long a map vote stays open.
pub const MAP_VOTE_TIME: Duration = Duration::from_secs(15);

/// A map vote in progress.
#[derive(Clone, Debug, PartialEq)]
struct MapVote {
    map: String,
    until: Duration,
    yes: std::collections::BTreeSet<PlayerId>,
    no: std::collections::BTreeSet<PlayerId>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            match_id: String::from("match"),
            epoch: 1,
            max_players: 16,
            password: None,
            session: HostSessionConfig::default(),
            client_config: serde_json::Value::Null,
            maps: Vec::new(),
            migration: MigrationConfig::default(),
        }
    }
}

/// The session settings with the game's overrides of the engine's RTT defaults (spec 000):
/// `rttPingInterval` (ms), `maxLatency` (ms) and `maxMissedPings` in the init config's `game` half.
pub fn session_config(game: &serde_json::Value) -> HostSessionConfig {
    let mut config = HostSessionConfig::default();
    if let Some(ms) = game.get("rttPingInterval").and_then(|v| v.as_f64()).filter(|ms| *ms >= 100.0) {
        config.ping_interval = Duration::from_secs_f64(ms / 1000.0);
    }
    if let Some(ms) = game.get("maxLatency").and_then(|v| v.as_f64()).filter(|ms| *ms > 0.0) {
        config.max_latency_ms = ms;
    }
    if let Some(n) = game.get("maxMissedPings").and_then(|v| v.as_u64()).filter(|n| *n > 0) {
        config.max_missed_pings = n.min(u32::MAX as u64) as u32;
    }
    config
}

/// Figures of the server's traffic.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServerStats {
    /// Snapshot frames sent, over all peers (of both formats).
    pub frames_sent: u64,
    /// Of those, delta frames (format 6).
    pub delta_frames_sent: u64,
    /// Bytes handed to the transport.
    pub bytes_out: u64,
    /// Bytes received from the transport.
    pub bytes_in: u64,
    /// Sessions closed by the host, by misbehaviour or timeouts.
    pub kicked: u64,
    /// Seated players whose link dropped (their slots wait for their tokens).
    pub dropped: u64,
    /// Snapshot ticks whose frames could not be packed (a game bug: rows that do not fit the
    /// schema; the first is logged with its reason).
    pub pack_errors: u64,
    /// Views (what a shooter saw) taken for lag compensation.
    pub views: u64,
    /// Of those, views older than the shooter's link explains or `maxRewindMs` allows,
    /// clamped to the oldest allowed ([`ServerCore::view_bounds`]).
    pub views_clamped: u64,
    /// Views from a client whose welcome did not take them, dropped.
    pub views_refused: u64,
    /// Meta messages of the game's that do not validate (a game bug), not sent; the first
    /// is logged with its reason.
    pub meta_refused: u64,
}

/// The link to one seated player ([`Server::links`]).
#[derive(Clone, Debug, PartialEq)]
pub struct PlayerLink {
    /// The player.
    pub player: PlayerId,
    /// Its shown name.
    pub nickname: String,
    /// How the link goes, once known (`None` for an in-memory link).
    pub path: Option<vimp_netcode::transport::LinkPath>,
    /// The smoothed round trip, ms, once measured.
    pub rtt_ms: Option<f64>,
    /// Its delta frames' byte budget, when it takes delta frames under one.
    pub budget: Option<BudgetUse>,
}

/// What a player's delta frames make of their byte budget ([`PlayerLink::budget`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BudgetUse {
    /// The budget, bytes a second.
    pub per_second: u32,
    /// What its recent frames took, bytes a second.
    pub in_use: f64,
    /// Changed rows in its view waiting for room in a frame.
    pub waiting: usize,
}

/// The host on the network without a transport (see the module docs), like the sessions
/// it keeps: [`ServerCore::handle`] takes what the transport reported,
/// [`ServerCore::handle_timeout`] runs the match and the timers, [`ServerCore::poll_transmit`]
/// gives what to send. [`Server`] drives one over a [`Transport`]; every method here is
/// reachable through it.
pub struct ServerCore {
    host: Host,
    /// What to send, in order: (peer, channel, bytes).
    outbox: VecDeque<(PeerKey, Channel, Vec<u8>)>,
    config: ServerConfig,
    roster: Roster,
    peers: BTreeMap<PeerKey, HostSession>,
    /// The accepted peers that get delta frames (format 6, their hello's choice); the others
    /// get format 5.
    delta_peers: std::collections::BTreeSet<PeerKey>,
    /// The accepted peers whose views this host takes (their hello offered them).
    view_peers: std::collections::BTreeSet<PeerKey>,
    /// The seq of each player's newest view counted ([`ServerStats::views`]).
    view_seqs: BTreeMap<PlayerId, u32>,
    /// What each accepted peer's hello said it can do in a host change.
    roles: BTreeMap<PeerKey, MigrationRoles>,
    latency: BTreeMap<PlayerId, f64>,
    last: Option<Duration>,
    stats: ServerStats,
    stat: StatTable,
    next_stat: Duration,
    panels: BTreeMap<PeerKey, PanelState>,
    map_loads: u32,
    /// The `MAP_DATA` clients last got: a map loaded again unchanged clears only its set.
    map_sent: Option<Encoded>,
    /// What each player's answer to the game's form said, once it passed.
    auth_values: BTreeMap<PlayerId, serde_json::Map<String, serde_json::Value>>,
    map_vote: Option<MapVote>,
    /// Spectators' seats and the player each one watches.
    watching: BTreeMap<PlayerId, Option<PlayerId>>,
    migration: succession::Migration,
    /// This host's rank in the succession it took over by (0 for the first host).
    rank: u8,
    /// The succession list it took over by (empty for the first host): who may claim at its epoch.
    rivals: Vec<PeerKey>,
    /// The host this one took over from, whose claim of a later epoch unseats it.
    predecessor: Option<PeerKey>,
    /// When this host took the match over (`None` for the first host): a rival's claim is
    /// heard until [`RIVAL_WINDOW`](vimp_netcode::migration::RIVAL_WINDOW) after it.
    took_over_at: Option<Duration>,
    /// A peer whose claim beats this host's, and that claim.
    superseded: Option<(PeerKey, Claim)>,
    /// The successor this server handed the match off to.
    handed_off: Option<PeerKey>,
    /// Slots restored at a takeover whose keys are let go if no token comes back by then.
    release_due: Vec<(PlayerId, Duration)>,
    /// Peers that closed their session themselves with a normal close: they left (the slot is
    /// freed at once), they did not drop (the slot waits).
    leaving: std::collections::BTreeSet<PeerKey>,
    /// What changed, not taken yet ([`ServerCore::poll_event`]).
    events: VecDeque<ServerEvent>,
}

/// Something that changed on the server ([`ServerCore::poll_event`]).
#[derive(Clone, Debug, PartialEq)]
pub enum ServerEvent {
    /// A player took a seat: a new one, or one back with its token.
    Joined {
        /// The player.
        player: PlayerId,
        /// Its nickname.
        nickname: String,
        /// Back in its slot with its token.
        resumed: bool,
    },
    /// A seated player's link dropped (the slot waits for its token).
    Left {
        /// The player.
        player: PlayerId,
        /// Its nickname.
        nickname: String,
    },
    /// A claim that beats this host's came from `winner` ([`ServerCore::superseded`]).
    Superseded {
        /// Who claimed.
        winner: PeerKey,
        /// Its claim.
        claim: Claim,
    },
    /// The match was handed to `to` ([`ServerCore::handed_off`]).
    HandedOff {
        /// The successor.
        to: PeerKey,
    },
    /// `claimant` claimed the match on too little (not a majority of the room that
    /// answered it): this host kept it and took `epoch` ([Claims a live host
    /// refuses](vimp_netcode::migration#claims-a-live-host-refuses)).
    KeptTheMatch {
        /// Who claimed.
        claimant: PeerKey,
        /// Its claim.
        claim: Claim,
        /// The epoch this host took.
        epoch: u32,
    },
}

impl std::fmt::Display for ServerEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerEvent::Joined { nickname, resumed: false, .. } => write!(f, "{nickname} joined"),
            ServerEvent::Joined { nickname, resumed: true, .. } => write!(f, "{nickname} is back"),
            ServerEvent::Left { nickname, .. } => write!(f, "{nickname} left"),
            ServerEvent::Superseded { winner, claim } => {
                write!(f, "{winner} took the match over at epoch {}", claim.epoch)
            }
            ServerEvent::HandedOff { to } => write!(f, "handed the match to {to}"),
            ServerEvent::KeptTheMatch { claimant, claim, epoch } => write!(
                f,
                "{claimant} claimed the match on {} of {} members that answered, while this host played on: \
                 kept it (epoch {epoch})",
                claim.evidence.lost, claim.evidence.answered
            ),
        }
    }
}

/// How many [`ServerEvent`]s a server keeps for a caller that does not take them.
pub const MAX_QUEUED_EVENTS: usize = 256;

/// How long a slot restored at a takeover keeps its keys pressed while its player resumes.
pub const TAKEOVER_RELEASE: Duration = Duration::from_secs(2);

/// What [`ServerCore::from_shadow`] needs besides the shadow.
#[derive(Clone, Debug, PartialEq)]
pub struct Takeover {
    /// The time of the takeover.
    pub now: Duration,
    /// The mesh peers whose links are already open (the transport will not announce them
    /// again): each gets a session and the `CLAIM`.
    pub peers: Vec<PeerKey>,
    /// This successor's place in the succession list (the claim's rank).
    pub rank: u8,
    /// That list: the peers that may claim the match at the same epoch (a race).
    pub successors: Vec<PeerKey>,
    /// The host this one took over from: should it play on and keep the match (the claim
    /// did not hold the room), its claim unseats this one.
    pub predecessor: Option<PeerKey>,
    /// What the claim rests on (the room's answers to this successor's check).
    pub evidence: vimp_netcode::migration::Evidence,
}

/// What a peer's hello said it can do in a host change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MigrationRoles {
    /// It can take the match over: only such a peer is a successor.
    pub(crate) can_host: bool,
    /// It answers the room's check before a claim: a voter.
    pub(crate) checks: bool,
    /// It watches and may take the match over all the same
    /// ([`Hello::keeper`](vimp_netcode::session::Hello::keeper)): a successor like a player.
    pub(crate) keeper: bool,
}

impl MigrationRoles {
    fn of(hello: &vimp_netcode::session::Hello) -> MigrationRoles {
        MigrationRoles {
            can_host: hello.can_host,
            checks: hello.checks,
            keeper: hello.keeper && hello.spectator && hello.can_host,
        }
    }
}

/// How often the stat table's changes are broadcast.
pub const STAT_INTERVAL: Duration = Duration::from_millis(500);

/// Draws a fresh random session token from the operating system.
pub fn fresh_token() -> SessionToken {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: fall back to the clock and the address of a stack value, mixed.
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos()
            ^ (&bytes as *const _ as usize as u128);
        let mut rng = crate::engine::rng::SplitMix64::new(seed as u64 ^ (seed >> 64) as u64);
        bytes[..8].copy_from_slice(&rng.next().to_le_bytes());
        bytes[8..].copy_from_slice(&rng.next().to_le_bytes());
    }
    SessionToken(bytes)
}

impl ServerCore {
    /// A server for `host` (map loaded, bots joined).
    pub fn new(mut host: Host, config: ServerConfig) -> Self {
        if config.migration.enabled {
            host.start_log(config.migration.hash_interval);
        }
        let mut roster =
            Roster::new(config.max_players, config.password.as_deref(), crate::engine::roster::fresh_salt());
        roster.reserved = host.world().resource::<Participants>().0.keys().copied().collect();
        let mut core = ServerCore {
            host,
            outbox: VecDeque::new(),
            roster,
            peers: BTreeMap::new(),
            delta_peers: std::collections::BTreeSet::new(),
            view_peers: std::collections::BTreeSet::new(),
            view_seqs: BTreeMap::new(),
            roles: BTreeMap::new(),
            latency: BTreeMap::new(),
            last: None,
            stats: ServerStats::default(),
            stat: StatTable::new(),
            next_stat: Duration::ZERO,
            panels: BTreeMap::new(),
            map_loads: 0,
            map_sent: None,
            auth_values: BTreeMap::new(),
            map_vote: None,
            watching: BTreeMap::new(),
            migration: succession::Migration::new(config.migration.clone()),
            config,
            rank: 0,
            rivals: Vec::new(),
            predecessor: None,
            took_over_at: None,
            superseded: None,
            handed_off: None,
            release_due: Vec::new(),
            leaving: std::collections::BTreeSet::new(),
            events: VecDeque::new(),
        };
        core.map_sent = core.map_message();
        core.map_loads = core.host.world().resource::<crate::engine::map::state::MapState>().loads;
        core
    }

    /// A successor takes the match over: `shadow` (the last checkpoint plus the log up to the
    /// last tick received) becomes the match at epoch `shadow.epoch() + 1` (whatever
    /// `config.epoch` says). Every slot waits for its token (five minutes, like any dropped slot),
    /// spectators, recent chat and a map vote in progress carry over, and every peer of
    /// `takeover.peers` gets a session and the `CLAIM`, queued at once.
    ///
    /// When the game's `migration.midRound` is off ([`GameMigration`]), the round does not
    /// carry over: the current map is loaded again, so the game respawns everyone and starts
    /// the round afresh; participants, tokens, teams and scores stay.
    pub fn from_shadow(shadow: Shadow, mut config: ServerConfig, takeover: Takeover) -> Self {
        let now = takeover.now;
        let epoch = shadow.epoch() + 1;
        let (mut host, meta) = shadow.into_parts();
        if !host.world().get_resource::<GameMigration>().is_some_and(|g| g.mid_round) {
            let map = host.world().resource::<crate::engine::map::state::MapState>().config.clone();
            if let Some(Err(e)) = map.map(|map| host.load_map(map)) {
                tracing::error!("restarting the round at the takeover: the map does not load again: {e}");
            }
        }
        config.epoch = epoch;
        let mut server = ServerCore::new(host, config);
        let mut roster = meta.roster;
        roster.detach_all(Some(now));
        server.roster = roster;
        server.watching = meta.watching.into_iter().collect();
        server.settle_status();
        server.migration.restore_chat(meta.chat);
        server.map_vote = meta.vote.filter(|v| v.name == MAP_CHANGE_VOTE).map(|v| MapVote {
            map: v.subject,
            until: now + v.remaining,
            yes: v.yes.into_iter().collect(),
            no: v.no.into_iter().collect(),
        });
        server.release_due = server
            .roster
            .seats()
            .filter(|s| !server.watching.contains_key(&s.player))
            .map(|s| (s.player, now + TAKEOVER_RELEASE))
            .collect();
        server.rank = takeover.rank;
        server.rivals = takeover.successors;
        server.predecessor = takeover.predecessor;
        server.took_over_at = Some(now);
        server.last = Some(now);
        server.update_receivers();
        tracing::debug!(
            target: vimp_netcode::client::TAKEOVER_LOG,
            "{:.3} s: took the match over at epoch {epoch}; claiming to {:?}",
            now.as_secs_f64(),
            takeover.peers,
        );
        let claim =
            Claim { epoch, rank: takeover.rank, tick: server.host.tick(), evidence: takeover.evidence }.encode();
        for peer in takeover.peers {
            let mut session = HostSession::new(server.config.session.clone(), now);
            session.send(Channel::Reliable, op::CLAIM, &claim);
            server.peers.insert(peer, session);
        }
        server.flush(now);
        server
    }

    /// `peer` sent bytes that break the protocol: its session is closed with 4400.
    fn protocol_error(&mut self, peer: PeerKey) {
        if let Some(s) = self.peers.get_mut(&peer) {
            s.close(close::PROTOCOL);
        }
    }

    /// After a takeover: the match agrees with who watches. A status change the old host made
    /// just before it died reached this shadow in the checkpoint's roster but not in the log
    /// (the crash took the last entries): a seat that watches and still has its actor leaves
    /// the game now, and a seat that plays but has none joins it.
    fn settle_status(&mut self) {
        let participants = &self.host.world().resource::<Participants>().0;
        let mut commands = Vec::new();
        for seat in self.roster.seats() {
            match (self.watching.contains_key(&seat.player), participants.contains_key(&seat.player)) {
                (true, true) => commands.push(HostCommand::Leave { player: seat.player }),
                (false, false) => commands.push(HostCommand::Join {
                    player: seat.player,
                    name: seat.nickname.clone(),
                    team: None,
                    bot: false,
                }),
                _ => {}
            }
        }
        for command in commands {
            self.host.push(command);
        }
    }

    /// Leaves gracefully: the log so far and a final checkpoint go to the successors, then a
    /// `HANDOFF` naming the first of them to every peer, all put on the transport. The
    /// successor continues from this very tick. Returns it (`None`: nobody can take over,
    /// and nothing is sent). The server does nothing more afterwards ([`ServerCore::handed_off`]).
    pub fn hand_off(&mut self, now: Duration) -> Option<PeerKey> {
        if let Some(to) = self.handed_off {
            return Some(to);
        }
        let to = self.migration.first_stream()?;
        self.handed_off = Some(to);
        self.note(ServerEvent::HandedOff { to });
        self.flush_migration(now);
        let streams = self.migration.stream_peers();
        self.send_checkpoint(&streams, now);
        let handoff = Handoff { epoch: self.config.epoch, to }.encode();
        for session in self.peers.values_mut().filter(|s| s.is_active()) {
            session.send(Channel::Reliable, op::HANDOFF, &handoff);
        }
        self.flush(now);
        Some(to)
    }

    /// The host's epoch.
    pub fn epoch(&self) -> u32 {
        self.config.epoch
    }

    /// A peer whose claim beats this host's, with that claim, once one was heard: this
    /// process's node drops the server and its player joins that peer as a client (the
    /// netcode `ClientCore::step_down`, with [`ServerCore::linked_peers`]).
    pub fn superseded(&self) -> Option<(PeerKey, Claim)> {
        self.superseded
    }

    /// The successor this server handed the match off to ([`Server::hand_off`], called by the
    /// process or after a passed `@changeHost` vote). From then on [`Server::update`] does
    /// nothing: the node drops it and its own player follows the successor (the netcode
    /// `ClientCore::follow_handoff`, with [`ServerCore::linked_peers`]).
    pub fn handed_off(&self) -> Option<PeerKey> {
        self.handed_off
    }

    /// The peers with a session (the mesh peers and this process's own player), for the
    /// process's client when the server stops hosting.
    pub fn linked_peers(&self) -> Vec<PeerKey> {
        self.peers.keys().copied().collect()
    }

    /// The peers that are this process's own players ([`MigrationConfig::local_peers`]): never
    /// successors, and not on the mesh when the server stops hosting.
    pub fn local_peers(&self) -> &[PeerKey] {
        &self.migration.config.local_peers
    }

    /// Counts `peer` among [`Self::local_peers`] from now on (a node's own player, once its
    /// mesh key is known).
    pub fn add_local_peer(&mut self, peer: PeerKey) {
        if !self.migration.config.local_peers.contains(&peer) {
            self.migration.config.local_peers.push(peer);
        }
    }

    /// The match.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The match, mutably (to push commands, load maps).
    pub fn host_mut(&mut self) -> &mut Host {
        &mut self.host
    }

    /// The slots.
    pub fn roster(&self) -> &Roster {
        &self.roster
    }

    /// Whether `player` watches rather than plays (a spectator, or a player still to fill in
    /// the game's form).
    pub fn is_watching(&self, player: PlayerId) -> bool {
        self.watching.contains_key(&player)
    }

    /// What `player`'s answer to the game's form ([`crate::engine::auth::AuthForm`]) said,
    /// once it passed; until the player leaves or starts watching. A host that took the
    /// match over has none: a checkpoint does not carry them.
    pub fn auth_values(&self, player: PlayerId) -> Option<&serde_json::Map<String, serde_json::Value>> {
        self.auth_values.get(&player)
    }

    /// Traffic figures.
    pub fn stats(&self) -> ServerStats {
        let pack_errors = self.host.world().resource::<crate::engine::snapshot::SnapshotStats>().pack_errors;
        ServerStats { pack_errors, ..self.stats }
    }

    /// The smoothed latency of each connected player, ms.
    pub fn latencies(&self) -> &BTreeMap<PlayerId, f64> {
        &self.latency
    }

    /// The link to each seated player's peer: how it goes across the network (`path` says,
    /// once known) and its smoothed round trip.
    pub fn links_by(&self, path: impl Fn(PeerKey) -> Option<vimp_netcode::transport::LinkPath>) -> Vec<PlayerLink> {
        let world = self.host.world();
        let per_second = world.resource::<crate::engine::snapshot::SnapshotBudget>().0;
        let viewers = world.resource::<crate::engine::snapshot::DeltaViewers>();
        let frames_per_second = world.resource::<crate::engine::sim::EngineSettings>().frames_per_second();
        self.roster
            .seats()
            .filter_map(|seat| {
                let peer = seat.peer?;
                let budget = viewers.viewers.get(&seat.player).filter(|_| per_second > 0).map(|v| BudgetUse {
                    per_second,
                    in_use: v.budget().bytes_per_frame() * frames_per_second,
                    waiting: v.budget().waiting(),
                });
                Some(PlayerLink {
                    player: seat.player,
                    nickname: seat.nickname.clone(),
                    path: path(peer),
                    rtt_ms: self.latency.get(&seat.player).copied(),
                    budget,
                })
            })
            .collect()
    }

    /// Peers with a session (connected and not closed).
    pub fn peer_count(&self) -> usize {
        self.peers.len()
    }

    /// What the transport reported at `now`: a link opened or dropped, or a message.
    /// Nothing once handed off.
    pub fn handle(&mut self, now: Duration, event: vimp_netcode::transport::TransportEvent) {
        if self.handed_off.is_some() {
            return;
        }
        {
            match event {
                vimp_netcode::transport::TransportEvent::Connected(peer) => {
                    self.peers.insert(peer, HostSession::new(self.config.session.clone(), now));
                }
                vimp_netcode::transport::TransportEvent::Disconnected(peer) => self.drop_peer(peer, now),
                vimp_netcode::transport::TransportEvent::Message { peer, channel, bytes } => {
                    self.stats.bytes_in += bytes.len() as u64;
                    // The host this one took over from, until it is admitted as a client: what
                    // it still sends as a host (frames, meta, streams to its successors) is
                    // dropped rather than taken for a client's protocol error; its claim (it
                    // played on and kept the match) and its hello count. Until admitted, not
                    // only until its hello: a turn's messages come reliable channel first, so
                    // the snapshots it sent just before its hello come in just after it.
                    let from_predecessor = Some(peer) == self.predecessor
                        && self.peers.get(&peer).is_some_and(|s| !s.is_active())
                        && !vimp_netcode::frame::parse(&bytes)
                            .is_ok_and(|f| f.opcode == op::CLAIM || f.opcode == op::HELLO);
                    if from_predecessor {
                        return;
                    }
                    if let Some(s) = self.peers.get_mut(&peer) {
                        s.handle_message(now, channel, &bytes);
                    }
                }
            }
        }
    }

    /// The rest of a turn of the network loop at `now`, after the transport's events: each
    /// session's events acted on, the match stepped, the snapshots, stats and migration
    /// streams queued for [`Self::poll_transmit`]. Nothing once handed off.
    pub fn handle_timeout(&mut self, now: Duration) {
        if self.handed_off.is_some() {
            return;
        }
        let keys: Vec<PeerKey> = self.peers.keys().copied().collect();
        for peer in keys {
            let Some(session) = self.peers.get_mut(&peer) else { continue };
            session.handle_timeout(now);
            let events: Vec<HostEvent> = std::iter::from_fn(|| session.poll_event()).collect();
            for event in events {
                self.on_event(peer, event, now);
            }
            if self.handed_off.is_some() {
                // Voted away: the successor continues from this very tick.
                return;
            }
        }
        let due: Vec<PlayerId> = self.release_due.iter().filter(|(_, at)| now >= *at).map(|(p, _)| *p).collect();
        self.release_due.retain(|(_, at)| now < *at);
        for player in due {
            if self.roster.seat(player).is_some_and(|s| s.peer.is_none()) {
                self.host.push(HostCommand::Release { player });
            }
        }
        for player in self.roster.expire(now) {
            self.host.push(HostCommand::Leave { player });
            self.watching.remove(&player);
            self.auth_values.remove(&player);
            self.migration.freed(player);
        }
        self.settle_map_vote(now);

        let elapsed = self.last.map_or(Duration::ZERO, |l| now.saturating_sub(l));
        self.last = Some(now);
        let steps = self.host.due_steps(elapsed);
        for _ in 0..steps {
            self.host.step();
            self.send_tick_output();
        }
        if now >= self.next_stat {
            self.next_stat = now + STAT_INTERVAL;
            self.broadcast_stat();
        }
        self.stream_migration(now);
        self.flush(now);
    }

    /// A hello the roster admitted: the welcome and config, the meta every client starts
    /// with ([`Self::greet`]), the chat said meanwhile for a seat taken back, the line to
    /// everyone. A seat taken back keeps playing or watching, whatever the hello says.
    fn admit(&mut self, peer: PeerKey, hello: &vimp_netcode::session::Hello, a: crate::engine::roster::Admission) {
        let input_seq =
            self.host.world().resource::<Participants>().0.get(&a.player).map_or(0, |p| p.keys.last_input_seq());
        let welcome = Welcome {
            match_id: self.config.match_id.clone(),
            player_id: a.player.0,
            nickname: a.nickname.clone(),
            token: a.token,
            epoch: self.config.epoch,
            tick: self.host.tick(),
            resumed: a.resumed,
            input_seq,
            spectator: if a.resumed { self.watching.contains_key(&a.player) } else { hello.spectator },
            snapshot_format: hello.snapshot_format(),
            // Aims go to a host that takes them; a seat that watches now may play later.
            aim: hello.aim,
            view: hello.view,
        };
        if welcome.snapshot_format == vimp_netcode::delta::DELTA_FORMAT_VERSION {
            self.delta_peers.insert(peer);
        }
        if welcome.view {
            self.view_peers.insert(peer);
        } else {
            self.view_peers.remove(&peer);
        }
        self.roles.insert(peer, MigrationRoles::of(hello));
        // A new session holds no frame of the old one's: its first is a keyframe.
        self.host.world_mut().resource_mut::<DeltaViewers>().viewers.remove(&a.player);
        let Some(session) = self.peers.get_mut(&peer) else { return };
        session.accept(&welcome, &self.config.client_config);
        self.greet(peer, a.player, a.resumed, hello.spectator);
        if let Some(old) = a.replaced
            && let Some(old_session) = self.peers.get_mut(&old)
        {
            old_session.close(close::REPLACED);
        }
        if a.resumed {
            // Back in its slot (after a crash, or at a new host): the chat said meanwhile.
            // The client drops the lines it already has.
            let lines = self.migration.recent_chat().filter_map(|l| serde_json::from_str(l).ok());
            let history = lines.filter_map(|v| ChatMessage::from_json(v).ok()).collect::<Vec<_>>();
            if !history.is_empty() {
                self.send_to(peer, &Encoded { port: op::CHAT_HISTORY, bytes: ChatHistory(history).encode() });
            }
        }
        self.migration.joined(a.player);
        let line = if a.resumed { EngineLine::Back } else { EngineLine::Joined };
        self.note(ServerEvent::Joined { player: a.player, nickname: a.nickname.clone(), resumed: a.resumed });
        self.announce(line, [a.nickname]);
        self.update_receivers();
    }

    fn on_event(&mut self, peer: PeerKey, event: HostEvent, now: Duration) {
        match event {
            HostEvent::Hello(hello) => {
                let admitted = self.roster.admit(peer, &hello, now, fresh_token);
                if self.took_over_at.is_some() {
                    tracing::debug!(
                        target: vimp_netcode::client::TAKEOVER_LOG,
                        "{:.3} s: hello from {peer} (resuming {}): {}",
                        now.as_secs_f64(),
                        hello.resume_token.is_some(),
                        if admitted.is_ok() { "admitted" } else { "refused" },
                    );
                }
                let Some(session) = self.peers.get_mut(&peer) else { return };
                match admitted {
                    Err(code) => {
                        if code == close::SERVER_FULL {
                            let full = MetaMessage::TechInform(TechInform::Show {
                                code: TechInform::SERVER_FULL,
                                params: None,
                            });
                            let full = full.encoded();
                            session.send(Channel::Reliable, full.port, &full.bytes);
                        }
                        session.reject(code, None)
                    }
                    Ok(a) => self.admit(peer, &hello, a),
                }
            }
            HostEvent::Input(events) => {
                let Some(player) = self.roster.player_of(peer) else { return };
                if self.watching.contains_key(&player) {
                    for e in events.iter().filter_map(|e| if let WireInput::Key(e) = e { Some(e) } else { None }) {
                        if e.action == vimp_netcode::input::KeyAction::Down {
                            self.switch_watched(player, e.bit == 0);
                        }
                    }
                    return;
                }
                let mut inputs = Vec::with_capacity(events.len());
                for e in &events {
                    let input = match e {
                        WireInput::Key(e) => {
                            let table = &self.host.world().resource::<PlayerKeys>().0;
                            table.to_event(e).ok().map(|event| HostCommand::Input { player, event })
                        }
                        WireInput::Aim(e) => Some(HostCommand::Aim { player, seq: e.seq, aim: e.aim }),
                        WireInput::View(e) if self.view_peers.contains(&peer) => {
                            let (oldest, newest) = self.view_bounds(player);
                            let said = e.view.in_256ths();
                            // A batch repeats what is not acknowledged yet: count each view once.
                            if self.view_seqs.get(&player).is_none_or(|last| e.seq > *last) {
                                self.view_seqs.insert(player, e.seq);
                                self.stats.views += 1;
                                self.stats.views_clamped += u64::from(said < oldest);
                            }
                            let view = ViewTime::from_256ths(said.clamp(oldest, newest));
                            Some(HostCommand::View { player, seq: e.seq, view })
                        }
                        WireInput::View(_) => {
                            self.stats.views_refused += 1;
                            None
                        }
                    };
                    inputs.extend(input);
                }
                for input in inputs {
                    self.host.push(input);
                }
            }
            HostEvent::TextInput(event) => {
                let Some(player) = self.roster.player_of(peer) else { return };
                if self.watching.contains_key(&player) {
                    // A spectator's keys: the next or the previous player to watch.
                    let keys = vimp_netcode::session::spectator_keys();
                    if event.action == vimp_netcode::input::KeyAction::Down
                        && let Ok(key) = keys.resolve(&event)
                    {
                        self.switch_watched(player, key.bit == 0);
                    }
                    return;
                }
                // A name the game's keys do not have is dropped, as a bit outside them is.
                if self.host.world().resource::<PlayerKeys>().0.resolve(&event).is_ok() {
                    self.host.push(HostCommand::Input { player, event });
                }
            }
            HostEvent::Meta { port: op::client::CHAT, payload } => self.on_chat(peer, &payload),
            HostEvent::Meta { port: op::client::VOTE, payload } => self.on_vote(peer, &payload),
            HostEvent::Meta { port: op::client::AUTH_RESPONSE, payload } => self.on_auth(peer, &payload),
            HostEvent::Meta { .. } => {}
            HostEvent::Latency(ms) => {
                if let Some(player) = self.roster.player_of(peer) {
                    self.latency.insert(player, ms);
                }
            }
            HostEvent::Closed { by_peer, code } => {
                if !by_peer {
                    self.stats.kicked += 1;
                } else if code == close::NORMAL {
                    self.leaving.insert(peer);
                }
            }
            HostEvent::CheckpointRequest => self.migration.checkpoint_requested(peer, now),
            HostEvent::Links(payload) => match Links::decode(&payload) {
                Ok(links) => self.migration.links(peer, Some(links.peers)),
                Err(_) => {
                    self.protocol_error(peer);
                }
            },
            HostEvent::Claim(payload) => match Claim::decode(&payload) {
                Ok(claim) if self.may_claim(peer, &claim, now) => {
                    let over_this_host = claim.epoch == self.config.epoch.wrapping_add(1);
                    if over_this_host && self.predecessor != Some(peer) && !claim.evidence.holds_the_room() {
                        self.keep_the_match(peer, claim, now);
                    } else if self.superseded.is_none_or(|(_, best)| claim.beats(best.epoch, best.rank)) {
                        self.superseded = Some((peer, claim));
                        self.note(ServerEvent::Superseded { winner: peer, claim });
                    }
                }
                _ => self.migration.stats.claims_refused += 1,
            },
            HostEvent::StepDown(payload) => self.on_step_down(peer, &payload, now),
            HostEvent::FrameAck(seq) => {
                if let Some(player) = self.roster.player_of(peer)
                    && let Some(viewer) = self.host.world_mut().resource_mut::<DeltaViewers>().viewers.get_mut(&player)
                {
                    viewer.ack(seq);
                }
            }
        }
    }

    /// The current map as a `MAP_DATA` payload (the map's JSON form).
    fn map_message(&self) -> Option<Encoded> {
        let map = self.host.world().resource::<crate::engine::map::state::MapState>();
        let json = serde_json::to_value(map.config.as_ref()?).ok()?;
        Some(MetaMessage::Map(json).encoded())
    }

    /// Frames are packed for connected players and for the players spectators watch: format 5
    /// once per watched player, delta frames per receiving seat (each has its own baseline).
    fn update_receivers(&mut self) {
        let mut receivers = std::collections::BTreeSet::new();
        let mut viewers = BTreeMap::new();
        for seat in self.roster.seats() {
            let Some(peer) = seat.peer else { continue };
            let Some(watches) = self.watching.get(&seat.player).copied().unwrap_or(Some(seat.player)) else {
                continue;
            };
            if self.delta_peers.contains(&peer) {
                viewers.insert(seat.player, watches);
            } else {
                receivers.insert(watches);
            }
        }
        self.host.world_mut().resource_mut::<FrameReceivers>().0 = receivers;
        let mut deltas = self.host.world_mut().resource_mut::<DeltaViewers>();
        deltas.viewers.retain(|seat, _| viewers.contains_key(seat));
        for (seat, watches) in viewers {
            let viewer = deltas.viewers.entry(seat).or_insert_with(|| DeltaViewer::new(watches));
            viewer.watches = watches;
        }
    }

    /// A spectator's `nextPlayer` (`forward`) or `prevPlayer`: the next participant in id order.
    fn switch_watched(&mut self, spectator: PlayerId, forward: bool) {
        let ids: Vec<PlayerId> = self.host.world().resource::<Participants>().0.keys().copied().collect();
        let Some(watched) = self.watching.get_mut(&spectator) else { return };
        let at = watched.and_then(|w| ids.iter().position(|p| *p == w));
        let next = match (at, forward) {
            _ if ids.is_empty() => None,
            (None, _) => ids.first().copied(),
            (Some(i), true) => ids.get((i + 1) % ids.len()).copied(),
            (Some(i), false) => ids.get((i + ids.len() - 1) % ids.len()).copied(),
        };
        *watched = next;
        self.migration.meta_dirty = true;
        self.update_receivers();
    }

    /// The maps a vote may pick: the current one, then the configured ones.
    fn map_names(&self) -> Vec<String> {
        let current = self.host.world().resource::<crate::engine::map::state::MapState>();
        let mut names: Vec<String> = current.config.iter().map(|c| c.name.clone()).collect();
        for m in &self.config.maps {
            if !names.contains(&m.name) {
                names.push(m.name.clone());
            }
        }
        names
    }

    /// Ends the map vote once more than half of the connected players said yes (the map loads),
    /// more than half said no, or its time is up. System chat `v:1:map` — passed, `v:2:map` — failed.
    fn settle_map_vote(&mut self, now: Duration) {
        let Some(vote) = &self.map_vote else { return };
        let voters = self.roster.seats().filter(|s| s.peer.is_some()).count().max(1);
        let passed = vote.yes.len() * 2 > voters;
        if !passed && vote.no.len() * 2 < voters && now < vote.until {
            return;
        }
        let map_name = vote.map.clone();
        self.map_vote = None;
        self.migration.meta_dirty = true;
        let chosen = if passed {
            let current = self.host.world().resource::<crate::engine::map::state::MapState>().config.clone();
            current
                .filter(|c| c.name == map_name)
                .or_else(|| self.config.maps.iter().find(|m| m.name == map_name).cloned())
        } else {
            None
        };
        let loaded = chosen.is_some_and(|map| self.host.load_map(map).is_ok());
        self.announce(if loaded { EngineLine::VotePassed } else { EngineLine::VoteFailed }, [map_name]);
    }

    /// Votes: a team request answers with the teams; a team pick asks the game to move the
    /// player (it decides); the map list is the current map until map rotation exists.
    fn on_vote(&mut self, peer: PeerKey, payload: &[u8]) {
        let Some(player) = self.roster.player_of(peer) else { return };
        let answer = match ClientMeta::decode(op::client::VOTE, payload) {
            Ok(ClientMeta::Vote(answer)) => answer,
            _ => {
                self.protocol_error(peer);
                return;
            }
        };
        let reply = match answer {
            VoteAnswer::Request(ListRequest::Teams) => Some(Vote {
                name: "teams".into(),
                params: None,
                values: Some(VoteValues::List(vec![1.into(), 2.into()])),
            }),
            VoteAnswer::Request(ListRequest::Maps) => {
                let names = self.map_names().into_iter().map(Into::into).collect();
                Some(Vote { name: "maps".into(), params: None, values: Some(VoteValues::List(names)) })
            }
            VoteAnswer::Pick { name, value } if name == "maps" => {
                let wanted = value.as_str().unwrap_or_default().to_owned();
                if self.map_vote.is_none() && self.map_names().contains(&wanted) {
                    let mut vote = MapVote {
                        map: wanted.clone(),
                        until: self.last.unwrap_or_default() + MAP_VOTE_TIME,
                        yes: Default::default(),
                        no: Default::default(),
                    };
                    vote.yes.insert(player);
                    self.map_vote = Some(vote);
                    self.migration.meta_dirty = true;
                    let ask = Vote {
                        name: MAP_CHANGE_VOTE.into(),
                        params: Some(vec![wanted]),
                        values: Some(VoteValues::List(vec!["yes".into(), "no".into()])),
                    };
                    self.send_all(&MetaMessage::Vote(ask).encoded());
                }
                None
            }
            VoteAnswer::Pick { name, value } if name == MAP_CHANGE_VOTE => {
                if let Some(vote) = self.map_vote.as_mut() {
                    let (add, remove) =
                        if value == "yes" { (&mut vote.yes, &mut vote.no) } else { (&mut vote.no, &mut vote.yes) };
                    remove.remove(&player);
                    add.insert(player);
                    self.migration.meta_dirty = true;
                }
                None
            }
            VoteAnswer::Pick { name, value } if name == "teams" => {
                let team = value.as_u64().or_else(|| value.as_str().and_then(|s| s.parse().ok()));
                if let Some(team) = team.and_then(|t| u8::try_from(t).ok()) {
                    self.host.push(HostCommand::SetTeam { player, team });
                }
                None
            }
            VoteAnswer::Pick { .. } => None,
        };
        if let Some(vote) = reply {
            self.send_to(peer, &MetaMessage::Vote(vote).encoded());
        }
    }

    /// Brings the stat table up to date (a row per participant: name, status, score, deaths,
    /// latency) and sends what changed to every client.
    fn broadcast_stat(&mut self) {
        let world = self.host.world();
        let participants = world.resource::<Participants>();
        let scores = world.resource::<Scores>();
        let mut present = Vec::new();
        for (player, p) in &participants.0 {
            let score = scores.0.get(player).cloned().unwrap_or_default();
            let row = PlayerStat {
                name: p.name.clone(),
                status: if p.bot { format!("bot {}", score.status).trim().to_owned() } else { score.status },
                score: score.score,
                deaths: score.deaths,
                latency_ms: self.latency.get(player).map_or(0, |ms| ms.round() as u32),
            };
            self.stat.set_row(0, player.0 as u32, 0, row.cells());
            present.push(player.0 as u32);
        }
        let gone: Vec<u32> =
            (0..=u8::MAX as u32).filter(|id| !present.contains(id) && self.stat.row(0, *id).is_some()).collect();
        for id in gone {
            self.stat.remove_row(0, id);
        }
        if let Some(delta) = self.stat.delta() {
            self.send_all(&MetaMessage::Stat(delta).encoded());
        }
    }

    /// Sends the last tick's frames and meta messages to their receivers.
    fn send_tick_output(&mut self) {
        self.announce_map_changes();
        let frames = self.host.take_frames();
        for (player, bytes) in &frames.frames {
            // The player itself (unless it is a watched bot), and everyone watching it, that
            // take format 5.
            let viewers = self
                .roster
                .seat(*player)
                .filter(|s| !self.watching.contains_key(&s.player))
                .and_then(|s| s.peer)
                .into_iter()
                .chain(
                    self.watching
                        .iter()
                        .filter(|(_, w)| **w == Some(*player))
                        .filter_map(|(s, _)| self.roster.seat(*s).and_then(|s| s.peer)),
                );
            for peer in viewers.filter(|p| !self.delta_peers.contains(p)).collect::<Vec<_>>() {
                if let Some(session) = self.peers.get_mut(&peer).filter(|s| s.is_active()) {
                    session.send(Channel::Unreliable, op::SHOT_DATA, bytes);
                    self.stats.frames_sent += 1;
                }
            }
        }
        for (seat, bytes) in &frames.deltas {
            let Some(peer) = self.roster.seat(*seat).and_then(|s| s.peer) else { continue };
            if let Some(session) = self.peers.get_mut(&peer).filter(|s| s.is_active()) {
                session.send(Channel::Unreliable, op::SHOT_DATA, bytes);
                self.stats.frames_sent += 1;
                self.stats.delta_frames_sent += 1;
            }
        }
        // The game publishes panels on snapshot ticks only (`frames.seq` is set on those).
        if frames.seq != 0 {
            self.send_panels();
        }
        for Outgoing { to, message } in self.host.take_meta() {
            // A message the wire cannot carry (a game's bug): logged once, counted always.
            if let Err(e) = message.validate() {
                if self.stats.meta_refused == 0 {
                    tracing::error!("a meta message on port {} does not validate: {e}", message.port());
                }
                self.stats.meta_refused += 1;
                continue;
            }
            let message = message.encoded();
            // `None`: everyone; `Some(None)`: a player not linked now, nobody.
            let target = to.map(|p| self.roster.seat(p).and_then(|s| s.peer));
            for (peer, session) in self.peers.iter_mut().filter(|(_, s)| s.is_active()) {
                if target.is_none_or(|t| t == Some(*peer)) {
                    session.send(Channel::Reliable, message.port, &message.bytes);
                }
            }
        }
    }

    fn flush(&mut self, now: Duration) {
        let mut closed = Vec::new();
        for (peer, session) in &mut self.peers {
            while let Some((channel, bytes)) = session.poll_transmit() {
                self.stats.bytes_out += bytes.len() as u64;
                self.outbox.push_back((*peer, channel, bytes));
            }
            if session.close_code().is_some() {
                closed.push(*peer);
            }
        }
        for peer in closed {
            self.drop_peer(peer, now);
        }
    }

    /// The moments a view of `player` may name, in 256ths of a tick: from the oldest its link
    /// explains — its round trip, the interpolation delay its client draws with and a
    /// snapshot interval, at most [`MaxRewind`] — to the present (the last tick run). A view
    /// in the future is the present; an older one is clamped to the oldest
    /// ([`ServerStats::views_clamped`]).
    pub fn view_bounds(&self, player: PlayerId) -> (u64, u64) {
        let world = self.host.world();
        let settings = world.resource::<EngineSettings>();
        let tick_ms = f64::from(settings.dt()) * 1000.0;
        let frame_ms = tick_ms * f64::from(settings.config.network_send_rate.max(1));
        let delay_ms = self.config.client_config["engine"]["interpolation"]["delay"]
            .as_f64()
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .unwrap_or(vimp_netcode::interp::InterpolationConfig::default().delay);
        let rtt_ms = self.latency.get(&player).copied().filter(|ms| ms.is_finite()).unwrap_or(0.0).max(0.0);
        let max_ms = world.get_resource::<MaxRewind>().copied().unwrap_or_default().0.as_secs_f64() * 1000.0;
        let back_ms = (rtt_ms + delay_ms + frame_ms).min(max_ms);
        let newest = u64::from(self.host.tick()) << 8;
        let back = (back_ms / tick_ms * 256.0).round() as u64;
        (newest.saturating_sub(back), newest)
    }

    /// `peer` is gone. One that left (it closed with a normal close: the window's Leave, a
    /// quit) gives its slot up at once, its tank with it; one that dropped (its link went, it
    /// timed out, it was kicked) keeps its slot for [`Roster::resume_window`].
    fn drop_peer(&mut self, peer: PeerKey, now: Duration) {
        self.peers.remove(&peer);
        self.delta_peers.remove(&peer);
        self.view_peers.remove(&peer);
        self.roles.remove(&peer);
        self.panels.remove(&peer);
        self.migration.links(peer, None);
        if self.leaving.remove(&peer)
            && let Some(seat) = self.roster.leave(peer)
        {
            let player = seat.player;
            self.migration.meta_dirty = true;
            self.note(ServerEvent::Left { player, nickname: seat.nickname.clone() });
            self.announce(EngineLine::Left, [seat.nickname]);
            self.latency.remove(&player);
            self.view_seqs.remove(&player);
            self.watching.remove(&player);
            self.auth_values.remove(&player);
            self.migration.freed(player);
            self.host.push(HostCommand::Leave { player });
            // Everyone's table drops the player now, not at the next round of it.
            self.next_stat = now;
            self.update_receivers();
            return;
        }
        if let Some(player) = self.roster.disconnected(peer, now) {
            self.migration.meta_dirty = true;
            self.stats.dropped += 1;
            if let Some(name) = self.roster.seat(player).map(|s| s.nickname.clone()) {
                self.note(ServerEvent::Left { player, nickname: name.clone() });
                self.announce(EngineLine::Left, [name]);
            }
            self.latency.remove(&player);
            if !self.watching.contains_key(&player) {
                self.host.push(HostCommand::Release { player });
            }
            self.update_receivers();
        }
    }
}

impl ServerCore {
    /// The next change since the last call, oldest first (at most [`MAX_QUEUED_EVENTS`] are
    /// kept): a player seated or gone, a better claim heard, the match handed off.
    pub fn poll_event(&mut self) -> Option<ServerEvent> {
        self.events.pop_front()
    }

    fn note(&mut self, event: ServerEvent) {
        if self.events.len() == MAX_QUEUED_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(event);
    }

    /// The next message to send: `(peer, channel, bytes)`, in order.
    pub fn poll_transmit(&mut self) -> Option<(PeerKey, Channel, Vec<u8>)> {
        self.outbox.pop_front()
    }

    /// When [`Self::handle_timeout`] next needs to run, if nothing arrives before: the match's
    /// next tick (the stat table, the migration streams, slot expiries and votes are looked at
    /// every turn, so at the latest then) or a session's timer. `None` once handed off;
    /// `Duration::ZERO` (at once) before the first turn.
    pub fn poll_timeout(&self) -> Option<Duration> {
        if self.handed_off.is_some() {
            return None;
        }
        let Some(last) = self.last else { return Some(Duration::ZERO) };
        let clock = *self.host.world().resource::<crate::engine::sim::FixedClock>();
        // A hair past the due time, so that the turn then finds the whole step there.
        let tick = last + Duration::from_secs_f64((clock.step - clock.accumulator).max(0.0)) + Duration::from_micros(1);
        self.peers.values().filter_map(HostSession::poll_timeout).chain([tick]).min()
    }
}

/// A [`ServerCore`] driven over a transport `T`: [`Server::update`] polls the transport, hands
/// its events to the core, runs the core's turn and sends what the core gives. Every
/// [`ServerCore`] method is reachable through it (it dereferences to its core).
pub struct Server<T: Transport> {
    core: ServerCore,
    transport: T,
}

impl<T: Transport> std::ops::Deref for Server<T> {
    type Target = ServerCore;

    fn deref(&self) -> &ServerCore {
        &self.core
    }
}

impl<T: Transport> std::ops::DerefMut for Server<T> {
    fn deref_mut(&mut self) -> &mut ServerCore {
        &mut self.core
    }
}

impl<T: Transport> Server<T> {
    /// A server for `host` (map loaded, bots joined) over `transport`.
    pub fn new(host: Host, transport: T, config: ServerConfig) -> Self {
        Server { core: ServerCore::new(host, config), transport }
    }

    /// [`ServerCore::from_shadow`] over `transport`; the `CLAIM`s go out at once.
    pub fn from_shadow(shadow: Shadow, transport: T, config: ServerConfig, takeover: Takeover) -> Self {
        let now = takeover.now;
        let mut server = Server { core: ServerCore::from_shadow(shadow, config, takeover), transport };
        server.send(now);
        server
    }

    /// One turn of the network loop at `now` (see the module docs). Nothing once handed off.
    pub fn update(&mut self, now: Duration) {
        if self.core.handed_off().is_some() {
            return;
        }
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

    /// [`ServerCore::hand_off`], all of it on the transport at once.
    pub fn hand_off(&mut self, now: Duration) -> Option<PeerKey> {
        let to = self.core.hand_off(now);
        self.send(now);
        to
    }

    /// [`ServerCore::flush_migration`], on the transport at once.
    pub fn flush_migration(&mut self, now: Duration) {
        self.core.flush_migration(now);
        self.send(now);
    }

    /// The link to each seated player's peer: how it goes across the network (once known;
    /// never for an in-memory link) and its smoothed round trip.
    pub fn links(&self) -> Vec<PlayerLink> {
        self.core.links_by(|peer| self.transport.path(peer))
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably (to link peers in tests, or to close it).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_game_may_override_the_rtt_defaults() {
        let d = session_config(&serde_json::json!({}));
        assert_eq!((d.ping_interval, d.max_latency_ms, d.max_missed_pings), (Duration::from_secs(3), 1000.0, 5));
        let o = session_config(&serde_json::json!({ "rttPingInterval": 1500, "maxLatency": 400, "maxMissedPings": 3 }));
        assert_eq!((o.ping_interval, o.max_latency_ms, o.max_missed_pings), (Duration::from_millis(1500), 400.0, 3));
        let junk = session_config(&serde_json::json!({ "rttPingInterval": 5, "maxLatency": -1, "maxMissedPings": 0 }));
        assert_eq!(junk, d, "values out of range keep the defaults");
    }
}
