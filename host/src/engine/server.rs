//! The host on the network: a [`Host`] plus a transport, a session per peer and the roster.
//!
//! [`Server::update`] is the host process's whole network loop, called as often as
//! the host thread likes (every millisecond or every frame) with the current time:
//!
//! 1. transport events in: peers connect (a [`HostSession`] each), drop, send messages;
//! 2. session events ([`peers`]): hellos go through the [`Roster`] (admission, resume, takeover),
//!    key events become [`HostCommand::Input`], aims [`HostCommand::Aim`] and views
//!    [`HostCommand::View`] (bounded by [`ServerCore::view_bounds`]), chat is relayed,
//!    latencies recorded;
//! 3. the match steps as many fixed ticks as the elapsed time covers, and each tick's
//!    frames go to their receivers on the unreliable channel, its meta messages on the
//!    reliable one ([`output`]);
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
//! Votes ([`vote`]): `"teams"`/`"maps"` list requests; a team pick moves the player; a map pick opens
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
mod output;
mod peers;
mod rounds;
mod status;
mod succession;
mod vote;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use vimp_netcode::frame::{Channel, op};
use vimp_netcode::meta::{Encoded, MetaMessage, PanelState, StatTable};
use vimp_netcode::migration::{Claim, Handoff};
use vimp_netcode::session::{HostEvent, HostSession, HostSessionConfig, close};
use vimp_netcode::transport::{PeerKey, Transport};

use crate::engine::game::GameMigration;
use crate::engine::migration::{MigrationConfig, Shadow};
use crate::engine::players::{HostCommand, MaxRewind, Participants, PlayerId};
use crate::engine::roster::Roster;
use crate::engine::schedule::Host;
use crate::engine::sim::EngineSettings;
pub use succession::MigrationStats;
use vote::MapVote;
pub use vote::{MAP_CHANGE_VOTE, MAP_VOTE_TIME};

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
    /// What checks players' tokens: the rendezvous's keys and the room (`None`: every player
    /// plays unverified). A successor gets them with its checkpoint.
    pub identities: Option<crate::engine::roster::Identities>,
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
            identities: None,
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
    /// The verified players' places in the global top, by key ([`ServerCore::set_places`]).
    places: BTreeMap<String, u64>,
    /// The accolades every client heard last.
    accolades_sent: Option<vimp_netcode::meta::Accolades>,
    /// Where the room is ([`ServerCore::set_room`]).
    room: Option<vimp_netcode::lobby::Invite>,
    /// Round ends told to the clients ([`ServerCore::rounds_ended`]).
    rounds_ended: u64,
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
    /// Hellos the fellows said ahead to this successor (see
    /// [`Handover::hellos`](vimp_netcode::client::Handover::hellos)): taken as if they came
    /// now, after the claim.
    pub hellos: Vec<(PeerKey, Channel, Vec<u8>)>,
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

impl ServerCore {
    /// A server for `host` (map loaded, bots joined).
    pub fn new(mut host: Host, config: ServerConfig) -> Self {
        if config.migration.enabled {
            host.start_log(config.migration.hash_interval);
        }
        let mut roster =
            Roster::new(config.max_players, config.password.as_deref(), crate::engine::roster::fresh_salt());
        roster.reserved = host.world().resource::<Participants>().0.keys().copied().collect();
        roster.set_identities(config.identities.as_ref());
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
            places: BTreeMap::new(),
            accolades_sent: None,
            room: None,
            rounds_ended: 0,
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
            // On both channels: the mesh link to a fellow may have a reliable chunk lost just
            // before (the room's check), and the claim would wait behind its retransmission;
            // the unreliable copy is said twice, in packets of their own, so that one lost
            // packet does not lose it.
            session.send(Channel::Reliable, op::CLAIM, &claim);
            session.send_echoed(op::CLAIM, &claim);
            server.peers.insert(peer, session);
        }
        // The welcomes go right behind the claim to those that said hello ahead.
        for (peer, channel, bytes) in takeover.hellos {
            if let Some(session) = server.peers.get_mut(&peer) {
                session.handle_message(now, channel, &bytes);
            }
        }
        server.on_sessions(now, false);
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

    /// The verified players' places in the global top, by key (what the rendezvous said
    /// last: `GET /top/places`); every client hears them with the next `ACCOLADES_DATA`.
    pub fn set_places(&mut self, places: BTreeMap<String, u64>) {
        self.places = places;
    }

    /// The keys of the verified players in the room: whose places are worth asking for.
    pub fn verified_keys(&self) -> Vec<String> {
        self.roster.seats().filter_map(|s| s.verified.clone()).collect()
    }

    /// The room's accolades now: who is verified, and their places; `None` when this host
    /// checks no tokens (nobody can be verified).
    pub fn accolades(&self) -> Option<vimp_netcode::meta::Accolades> {
        if !self.roster.checks_tokens() {
            return None;
        }
        let room = self.roster.seats().map(|s| {
            let place = s.verified.as_ref().and_then(|k| self.places.get(k)).copied();
            let accolade = vimp_netcode::meta::Accolade { verified: s.verified.is_some(), place };
            (s.player.0.to_string(), accolade)
        });
        Some(vimp_netcode::meta::Accolades(room.collect()))
    }

    /// Sends every client the room's accolades when they changed (`ACCOLADES_DATA`).
    fn broadcast_accolades(&mut self) {
        let now = self.accolades();
        if now != self.accolades_sent {
            if let Some(accolades) = &now {
                self.send_all(&MetaMessage::Accolades(accolades.clone()).encoded());
            }
            self.accolades_sent = now;
        }
    }

    /// Where the room is: the invite friends join by, and whether the rendezvous runs in this
    /// host's process. Every client hears it now (when it changed), and each newcomer at its
    /// welcome (`ROOM`); a player whose host serves the room moves its signalling there.
    pub fn set_room(&mut self, invite: Option<vimp_netcode::lobby::Invite>) {
        if invite == self.room {
            return;
        }
        self.room = invite;
        if let Some(bytes) = self.room.as_ref().map(vimp_netcode::lobby::Invite::encode) {
            for session in self.peers.values_mut().filter(|s| s.is_active()) {
                session.send(Channel::Reliable, op::ROOM, &bytes);
            }
        }
    }

    /// Where the room is, as [`ServerCore::set_room`] said last.
    pub fn room(&self) -> Option<&vimp_netcode::lobby::Invite> {
        self.room.as_ref()
    }

    /// Checks players' tokens with `identities` from now on (`None`: none are checked); the
    /// successors' next checkpoint carries them.
    pub fn set_identities(&mut self, identities: Option<&crate::engine::roster::Identities>) {
        self.roster.set_identities(identities);
        self.migration.meta_dirty = true;
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

    /// What the sessions said (hellos, inputs, meta), acted on peer by peer, each session's
    /// timers run first with `timers`; it stops once the match is handed off.
    fn on_sessions(&mut self, now: Duration, timers: bool) {
        let keys: Vec<PeerKey> = self.peers.keys().copied().collect();
        for peer in keys {
            let Some(session) = self.peers.get_mut(&peer) else { continue };
            if timers {
                session.handle_timeout(now);
            }
            let events: Vec<HostEvent> = std::iter::from_fn(|| session.poll_event()).collect();
            for event in events {
                self.on_event(peer, event, now);
            }
            if self.handed_off.is_some() {
                return;
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
        self.on_sessions(now, true);
        if self.handed_off.is_some() {
            // Voted away: the successor continues from this very tick.
            return;
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
            self.report_round_ends();
        }
        if now >= self.next_stat {
            self.next_stat = now + STAT_INTERVAL;
            self.broadcast_stat();
            self.broadcast_accolades();
        }
        self.stream_migration(now);
        self.flush(now);
    }

    /// The current map as a `MAP_DATA` payload (the map's JSON form).
    fn map_message(&self) -> Option<Encoded> {
        let map = self.host.world().resource::<crate::engine::map::state::MapState>();
        let json = serde_json::to_value(map.config.as_ref()?).ok()?;
        Some(MetaMessage::Map(json).encoded())
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
