//! One node per process: the transport, this process's own player's client, and the role
//! the process plays in the match — following a host elsewhere (shadowing it while among
//! the first successors), or hosting.
//!
//! A [`Node`] owns the one transport a process has, whatever its role, and drives the
//! transport-free [`ClientCore`] and [`ServerCore`] over it ([`Node::update`]). What the
//! transport reports goes to the server while this process hosts and to the client
//! otherwise. While it hosts, its own player is a client of that server like any other,
//! but nothing carries their messages: what the server sends to this process's own mesh key
//! goes straight to the client, and the client's messages to that key straight to the
//! server. No transport is joined, moved or made up, and the player is known by the key
//! every peer knows this process by.
//!
//! # Roles, and every change of role
//!
//! - **Following** ([`Node::playing`]): the client follows a host elsewhere. While the host
//!   lists this client among its first successors, what it streams (checkpoints, the log)
//!   feeds a [`Shadow`]: the last checkpoint plus the log replayed tick by tick, every
//!   logged hash checked; a shadow that diverged asks for a fresh checkpoint.
//! - **Hosting** ([`Node::hosting`], or promoted): the node runs the [`ServerCore`].
//!
//! [`Node::update`] makes every change, in one `match` ([`Node::change_role`]):
//!
//! - the host is lost and this client's turn has come
//!   ([`ClientCore::takeover_due`]): the shadow becomes the server
//!   ([`ServerCore::from_shadow`], a `CLAIM` to every mesh peer) and the client follows it
//!   ([`ClientCore::follow_own_host`]) — [`RoleChange::Promoted`];
//! - another claimant's claim beat this host's ([`ServerCore::superseded`]): the server is
//!   dropped and the client follows the winner ([`ClientCore::step_down`]) —
//!   [`RoleChange::SteppedDown`];
//! - this host handed the match off (a graceful quit, [`Node::hand_off`], or the players'
//!   `@changeHost` vote): the server is dropped and the client waits for the successor's
//!   claim ([`ClientCore::follow_handoff`]) — [`RoleChange::HandedOff`].
//!
//! A node without a player ([`Node::hosting`] with no client: the headless `vimp host`)
//! does nothing more once it stopped hosting, unless it [stays as a
//! member](Node::stays_as_member): unseated, it joins the winner as a spectator that may take
//! the match over, and hosts it again when its turn comes.
//!
//! # A host that finds itself alone
//!
//! A host whose process slept, or whose line was cut, long enough for its players' links to
//! fail may never hear the claim of the successor that took the match over meanwhile: no
//! link is left to carry it. Its players' sessions drop one by one, and it would host on
//! alone beside the real match. A headless host that [stays as a
//! member](Node::stays_as_member) and sees every seated player drop asks the room again
//! ([`Node::wants_recheck`], [`Node::recheck`]): over a fresh transport into the same room,
//! a member's hello goes to every peer but its own old socket. A host at a later epoch that
//! welcomes it has the match: the node drops its own, keeps the fresh transport and follows
//! that host as a member ([`RoleChange::Rejoined`]). When nobody welcomes it within
//! [`RECHECK_WINDOW`], the fresh transport is dropped and the node hosts on, as it did all
//! the while.

use std::collections::VecDeque;
use std::time::Duration;

use crate::engine::game::Game;
use crate::engine::migration::{Checkpoint, LogBatch, MigrationConfig, MigrationError, Shadow};
use crate::engine::server::{ServerConfig, ServerCore, Takeover};
use vimp_netcode::client::{ClientConfig, ClientCore};
use vimp_netcode::migration::{Claim, Evidence, MigrationPayload};
use vimp_netcode::session::Hello;
use vimp_netcode::transport::{PeerKey, Transport, TransportEvent};

/// A change of the node's role ([`Node::update`] says).
#[derive(Clone, Debug, PartialEq)]
pub enum RoleChange {
    /// This process took the match over, continuing from this tick.
    Promoted {
        /// The tick the new host continues from.
        tick: u32,
        /// The new host's epoch.
        epoch: u32,
        /// What the claim rested on: the room's answers, or the old host's handoff.
        evidence: Evidence,
    },
    /// Another claimant won the race to take over: this process follows it as a client.
    SteppedDown {
        /// The winner.
        winner: PeerKey,
        /// Its claim.
        claim: Claim,
    },
    /// Every player of this host dropped, and asked again ([`Node::recheck`]) the room
    /// showed a host at a later epoch: this process follows it as a member.
    Rejoined {
        /// The host that has the match.
        host: PeerKey,
        /// Its epoch.
        epoch: u32,
    },
    /// The match went to `to` (this host left gracefully, or the players voted for another
    /// host); this process follows it as a client.
    HandedOff {
        /// The successor.
        to: PeerKey,
        /// The players voted this host away (`@changeHost`); else it left ([`Node::hand_off`]).
        voted: bool,
    },
}

impl std::fmt::Display for RoleChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RoleChange::Promoted { tick, epoch, evidence } => {
                write!(f, "took the match over at tick {tick} (epoch {epoch}, {})", evidence.said())
            }
            RoleChange::SteppedDown { winner, claim } => {
                write!(f, "stepped down: {winner} took the match over first (epoch {})", claim.epoch)
            }
            RoleChange::Rejoined { host, epoch } => write!(
                f,
                "the match went on without this host: {host} hosts it at epoch {epoch}; staying in the room as a member"
            ),
            RoleChange::HandedOff { to, voted: true } => {
                write!(f, "the players voted for another host: handed the match to {to}")
            }
            RoleChange::HandedOff { to, voted: false } => write!(f, "handed the match to {to}"),
        }
    }
}

/// What the node does in the match.
enum Role {
    /// Following a host elsewhere, with a shadow of the match while among its first successors.
    Following { shadow: Option<Box<Shadow>> },
    /// Hosting.
    Hosting(Box<ServerCore>),
}

/// What [`Node::update`] found the role must become.
enum Change {
    Promote,
    StepDown { winner: PeerKey, claim: Claim },
    HandedOff { to: PeerKey },
}

/// How long a host asking the room again ([`Node::recheck`]) waits for another host to
/// welcome it before it hosts on.
pub const RECHECK_WINDOW: Duration = Duration::from_secs(10);

/// A host asking the room whether the match went on without it: a member's client over a
/// fresh transport into the room, until `until`.
struct Recheck<T> {
    transport: T,
    client: ClientCore,
    until: Duration,
}

/// Sees, and may change, every migration payload before the shadow does: tests tamper with
/// the log this way.
pub type Tap = Box<dyn FnMut(MigrationPayload) -> MigrationPayload + Send>;

/// One process in the match (see the module docs).
pub struct Node<T: Transport> {
    game: Game,
    transport: T,
    client: Option<ClientCore>,
    role: Role,
    /// The server knows this process's own player (its mesh key was known and both ends
    /// heard of each other).
    player_linked: bool,
    /// This host handed the match off itself ([`Node::hand_off`]).
    leaving: bool,
    changes: VecDeque<RoleChange>,
    errors: Vec<String>,
    checkpoints: u64,
    tap: Option<Tap>,
    /// What a node without a player says when it stops hosting to stay in the room
    /// ([`Node::stays_as_member`]).
    member: Option<(Hello, ClientConfig)>,
    /// Asking the room whether the match went on without this host ([`Node::recheck`]).
    recheck: Option<Box<Recheck<T>>>,
    /// The server's count of dropped players when the room was last asked again.
    drops_asked: u64,
    /// The host streams its log to this node, which has no shadow to apply it to: it asks
    /// for a checkpoint (its first was spent before the shadow was forgotten, say).
    log_unshadowed: bool,
}

impl<T: Transport> std::fmt::Debug for Node<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("hosting", &self.is_hosting())
            .field("shadowing", &self.is_shadowing())
            .field("player", &self.client.is_some())
            .field("errors", &self.errors.len())
            .finish_non_exhaustive()
    }
}

impl<T: Transport> Node<T> {
    /// A player's node: `client` follows whichever host answers on `transport`, and the node
    /// takes the match of `game` over when its turn comes.
    pub fn playing(game: Game, transport: T, client: ClientCore) -> Self {
        Node::new(game, transport, Some(client), Role::Following { shadow: None })
    }

    /// A node that hosts `server` over `transport` from the start, with this process's own
    /// player `client` (none for a host without one). The player joins once the transport
    /// knows this process's mesh key; the server never counts it as a successor.
    pub fn hosting(game: Game, transport: T, server: ServerCore, client: Option<ClientCore>) -> Self {
        Node::new(game, transport, client, Role::Hosting(Box::new(server)))
    }

    fn new(game: Game, transport: T, client: Option<ClientCore>, role: Role) -> Self {
        Node {
            game,
            transport,
            client,
            role,
            player_linked: false,
            leaving: false,
            changes: VecDeque::new(),
            errors: Vec::new(),
            checkpoints: 0,
            tap: None,
            member: None,
            recheck: None,
            drops_asked: 0,
            log_unshadowed: false,
        }
    }

    /// One turn at `now`: the transport's events in, the role's turn (the server's match and
    /// timers, or the client's and the shadow's), any change of role, what is due out.
    pub fn update(&mut self, now: Duration) {
        let me = self.transport.local_id();
        if let Some(client) = self.client.as_mut() {
            client.set_local_id(me);
        }
        for event in self.transport.poll(now) {
            match &mut self.role {
                Role::Hosting(server) => server.handle(now, event),
                Role::Following { .. } => {
                    if let Some(client) = self.client.as_mut() {
                        client.handle(now, event);
                    }
                }
            }
        }
        self.link_player(now);
        if let Role::Hosting(server) = &mut self.role {
            server.handle_timeout(now);
        }
        if let Some(client) = self.client.as_mut() {
            client.handle_timeout(now);
        }
        self.shadow_what_came();
        self.flush(now);
        if let Some(change) = self.due_change() {
            self.change_role(change, now);
        }
        self.recheck_turn(now);
    }

    /// Whether this node, a headless host that stays as a member, should ask the room
    /// whether the match went on without it (see the module docs): every seated player's
    /// link dropped, and none is linked now. True once per such loss; the caller dials a
    /// fresh transport into the room and hands it to [`Self::recheck`].
    pub fn wants_recheck(&mut self) -> bool {
        let Role::Hosting(server) = &self.role else { return false };
        if self.member.is_none() || self.client.is_some() || self.recheck.is_some() || server.peer_count() > 0 {
            return false;
        }
        let dropped = server.stats().dropped;
        if dropped <= self.drops_asked {
            return false;
        }
        self.drops_asked = dropped;
        true
    }

    /// Asks the room whether the match went on without this host, over `transport` (a fresh
    /// one into the same room): a member's hello goes to every peer it meets but this node's
    /// own old socket, for [`RECHECK_WINDOW`]. Returns whether it asks (only a hosting node
    /// that stays as a member does).
    pub fn recheck(&mut self, transport: T, now: Duration) -> bool {
        let (Role::Hosting(_), Some((hello, config)), None) = (&self.role, &self.member, &self.client) else {
            return false;
        };
        let client = ClientCore::new(hello.clone(), config.clone());
        self.recheck = Some(Box::new(Recheck { transport, client, until: now + RECHECK_WINDOW }));
        true
    }

    /// Whether this host is asking the room again ([`Self::recheck`]).
    pub fn is_rechecking(&self) -> bool {
        self.recheck.is_some()
    }

    /// One turn of asking the room again: a host at a later epoch that welcomes this node has
    /// the match, and the node follows it over the fresh transport; none by the deadline (or
    /// this node no longer hosts), and the fresh transport goes.
    fn recheck_turn(&mut self, now: Duration) {
        let Some(recheck) = self.recheck.as_mut() else { return };
        let Role::Hosting(server) = &self.role else {
            self.recheck = None;
            return;
        };
        let own = self.transport.local_id();
        recheck.client.set_local_id(recheck.transport.local_id());
        for event in recheck.transport.poll(now) {
            let (TransportEvent::Connected(peer)
            | TransportEvent::Disconnected(peer)
            | TransportEvent::Message { peer, .. }) = &event;
            // This host's own old socket is no one to ask.
            if Some(*peer) != own {
                recheck.client.handle(now, event);
            }
        }
        recheck.client.handle_timeout(now);
        while let Some((peer, channel, bytes)) = recheck.client.poll_transmit() {
            recheck.transport.send(now, peer, channel, bytes);
        }
        let later = match (recheck.client.welcome(), recheck.client.host_peer()) {
            (Some(welcome), Some(host)) if welcome.epoch > server.epoch() => Some((host, welcome.epoch)),
            _ => None,
        };
        if let Some((host, epoch)) = later {
            let Some(recheck) = self.recheck.take() else { return };
            let Recheck { transport, client, .. } = *recheck;
            self.transport = transport;
            self.client = Some(client);
            self.member = None;
            self.role = Role::Following { shadow: None };
            self.changes.push_back(RoleChange::Rejoined { host, epoch });
        } else if now >= recheck.until
            || recheck.client.welcome().is_some()
            || recheck.client.closed().is_some()
            || recheck.transport.failure().is_some()
        {
            // Nobody else hosts (or one at no later epoch, or the room refused us): host on.
            self.recheck = None;
        }
    }

    /// A node without a player that, should another claimant unseat it, stays in the room as
    /// a member instead of stopping: its client joins the winner saying `hello` (a
    /// spectator's, [`Hello::keeper`]: it may take the match over, so the match goes on with
    /// it when the players who hold it leave), over the links it has, and shadows the match
    /// like any successor. The headless `vimp host` does this.
    pub fn stays_as_member(mut self, hello: Hello, config: ClientConfig) -> Self {
        let hello = Hello { spectator: true, keeper: true, can_host: true, ..hello };
        self.member = Some((hello, config));
        self
    }

    /// The one place the role changes (see the module docs).
    fn change_role(&mut self, change: Change, now: Duration) {
        let me = self.transport.local_id();
        let role = std::mem::replace(&mut self.role, Role::Following { shadow: None });
        let (role, event) = match (role, change) {
            (Role::Following { shadow: Some(shadow) }, Change::Promote) => {
                let (Some(client), Some(me), false) = (self.client.as_mut(), me, shadow.is_broken()) else {
                    self.role = Role::Following { shadow: Some(shadow) };
                    return;
                };
                let Some(handover) = client.follow_own_host() else {
                    self.role = Role::Following { shadow: Some(shadow) };
                    return;
                };
                let tick = shadow.tick();
                // The match's own config, which the first checkpoint carried.
                let init = shadow.host().init_config().clone();
                let config = ServerConfig {
                    client_config: (self.game.client_config)(&init),
                    session: crate::engine::server::session_config(&init.game),
                    migration: MigrationConfig { local_peers: vec![me], ..MigrationConfig::default() },
                    ..ServerConfig::default()
                };
                let takeover = Takeover {
                    now,
                    peers: handover.peers,
                    rank: handover.rank,
                    successors: handover.successors,
                    predecessor: handover.predecessor,
                    evidence: handover.evidence,
                    hellos: handover.hellos,
                };
                let server = ServerCore::from_shadow(*shadow, config, takeover);
                let epoch = server.epoch();
                (self.player_linked, self.leaving) = (false, false);
                let evidence = handover.evidence;
                (Role::Hosting(Box::new(server)), RoleChange::Promoted { tick, epoch, evidence })
            }
            (Role::Hosting(server), Change::StepDown { winner, claim }) => {
                let peers = mesh_peers(&server);
                match (self.client.as_mut(), self.member.take()) {
                    (Some(client), _) => client.step_down(peers, winner, claim),
                    // A headless host stays as a member: a new client, which meets the peers
                    // its links reach (the transport announced them to the server) and says
                    // hello to them; the winner answers.
                    (None, Some((hello, config))) => {
                        let mut client = ClientCore::new(hello, config);
                        client.set_local_id(me);
                        for peer in peers {
                            client.handle(now, TransportEvent::Connected(peer));
                        }
                        self.client = Some(client);
                    }
                    (None, None) => {}
                }
                (Role::Following { shadow: None }, RoleChange::SteppedDown { winner, claim })
            }
            (Role::Hosting(server), Change::HandedOff { to }) => {
                let peers = mesh_peers(&server);
                if let Some(client) = self.client.as_mut() {
                    client.follow_handoff(peers, to);
                }
                (Role::Following { shadow: None }, RoleChange::HandedOff { to, voted: !self.leaving })
            }
            (role, _) => {
                self.role = role;
                return;
            }
        };
        self.role = role;
        self.changes.push_back(event);
        // The new host's claims, and its player's hello, go out in this same turn.
        self.link_player(now);
        self.flush(now);
    }

    /// What the role must become, if anything.
    fn due_change(&self) -> Option<Change> {
        match &self.role {
            // A shadow whose match panicked has nothing to host.
            Role::Following { shadow: Some(shadow) } if !shadow.is_broken() => {
                self.client.as_ref().is_some_and(ClientCore::takeover_due).then_some(Change::Promote)
            }
            Role::Following { shadow: Some(_) } => None,
            Role::Following { shadow: None } => None,
            Role::Hosting(server) => match (server.superseded(), server.handed_off()) {
                (Some((winner, claim)), _) => Some(Change::StepDown { winner, claim }),
                (None, Some(to)) => Some(Change::HandedOff { to }),
                (None, None) => None,
            },
        }
    }

    /// While hosting: once this process's mesh key is known, its player and its server hear
    /// of each other (a link that opened), and the server counts it as local.
    fn link_player(&mut self, now: Duration) {
        let (Role::Hosting(server), Some(client), Some(me)) =
            (&mut self.role, self.client.as_mut(), self.transport.local_id())
        else {
            return;
        };
        if self.player_linked {
            return;
        }
        self.player_linked = true;
        server.add_local_peer(me);
        server.handle(now, TransportEvent::Connected(me));
        client.set_local_id(Some(me));
        client.handle(now, TransportEvent::Connected(me));
    }

    /// Sends what the server and the client have to send: over the transport, or — between
    /// this process's host and its own player — straight to the other, until neither has
    /// anything more for the other (a few rounds: a hello, its welcome, the config after).
    fn flush(&mut self, now: Duration) {
        let me = self.transport.local_id();
        for _ in 0..4 {
            let mut local = false;
            if let Role::Hosting(server) = &mut self.role {
                while let Some((peer, channel, bytes)) = server.poll_transmit() {
                    match self.client.as_mut() {
                        Some(client) if Some(peer) == me && self.player_linked => {
                            client.handle(now, TransportEvent::Message { peer, channel, bytes });
                            local = true;
                        }
                        _ => self.transport.send(now, peer, channel, bytes),
                    }
                }
                if local && let Some(client) = self.client.as_mut() {
                    client.handle_timeout(now);
                }
            }
            let mut to_server = false;
            if let Some(client) = self.client.as_mut() {
                while let Some((peer, channel, bytes)) = client.poll_transmit() {
                    match &mut self.role {
                        Role::Hosting(server) if Some(peer) == me => {
                            server.handle(now, TransportEvent::Message { peer, channel, bytes });
                            to_server = true;
                        }
                        _ => self.transport.send(now, peer, channel, bytes),
                    }
                }
            }
            match &mut self.role {
                Role::Hosting(server) if to_server => server.handle_timeout(now),
                _ => return,
            }
        }
    }

    /// Feeds what the host streamed to the shadow (problems go to [`Node::errors`]) and asks
    /// for a fresh checkpoint while the shadow wants one.
    fn shadow_what_came(&mut self) {
        let Some(client) = self.client.as_mut() else { return };
        let payloads = client.take_migration();
        for payload in payloads {
            let payload = match self.tap.as_mut() {
                Some(tap) => tap(payload),
                None => payload,
            };
            if let Err(e) = self.feed(payload) {
                self.errors.push(e.to_string());
            }
        }
        if self.wants_checkpoint()
            && let Some(client) = self.client.as_mut()
        {
            // At most one request per 250 ms goes out, however often this asks.
            client.request_checkpoint();
        }
    }

    fn feed(&mut self, payload: MigrationPayload) -> Result<(), MigrationError> {
        let Role::Following { shadow } = &mut self.role else { return Ok(()) };
        match payload {
            MigrationPayload::Checkpoint(bytes) => {
                let checkpoint = Checkpoint::decode(&bytes)?;
                self.checkpoints += 1;
                match shadow {
                    Some(shadow) if !shadow.is_broken() => shadow.offer(&checkpoint).map(|_| ()),
                    // None yet, or one whose match panicked on an earlier state: a fresh one.
                    _ => {
                        // The shadow's host is built from the match's own init config, which
                        // the checkpoint carries with the state and the random generator.
                        let init = checkpoint.init_config()?;
                        *shadow = Some(Box::new(Shadow::from_checkpoint(init, self.game, &checkpoint)?));
                        self.log_unshadowed = false;
                        Ok(())
                    }
                }
            }
            MigrationPayload::Log(bytes) => {
                let batch = LogBatch::decode(&bytes)?;
                match shadow {
                    Some(shadow) => shadow.apply(&batch).map(|_| ()),
                    // Log before the first checkpoint: nothing to apply it to yet, and a
                    // checkpoint to ask for.
                    None => {
                        self.log_unshadowed = true;
                        Ok(())
                    }
                }
            }
            MigrationPayload::Handoff(_) => Ok(()),
        }
    }

    /// Takes the match over now, whether or not it is this client's turn (what
    /// [`Self::update`] does when it is), and says so (the change is queued for
    /// [`Self::poll_change`] too). `None` without a shadow, or before a welcome.
    pub fn take_over(&mut self, now: Duration) -> Option<RoleChange> {
        let before = self.changes.len();
        if !matches!(&self.role, Role::Following { shadow: Some(shadow) } if !shadow.is_broken()) {
            return None;
        }
        self.change_role(Change::Promote, now);
        (self.changes.len() > before).then(|| self.changes.back().cloned()).flatten()
    }

    /// While hosting: hands the match to the first successor (the log, a final checkpoint,
    /// `HANDOFF`, all sent now). The node follows it from its next [`Self::update`]. Returns
    /// whether anyone could take it.
    pub fn hand_off(&mut self, now: Duration) -> bool {
        let Role::Hosting(server) = &mut self.role else { return false };
        let handed = server.hand_off(now).is_some();
        self.leaving |= handed;
        self.flush(now);
        handed
    }

    /// While hosting: sends the successors what the match logged so far at once.
    pub fn flush_migration(&mut self, now: Duration) {
        if let Role::Hosting(server) = &mut self.role {
            server.flush_migration(now);
            self.flush(now);
        }
    }

    /// Dials the match again after the player's session dropped
    /// ([`ClientCore::reconnect`]): `transport` (a fresh one into the same room) replaces the
    /// node's, and the client says hello with its token to whoever answers there. Only a
    /// following node whose client is closed, or not welcomed yet, dials; returns whether it
    /// did. A shadow kept is rebased by the next checkpoint the host sends.
    pub fn reconnect(&mut self, transport: T, now: Duration) -> bool {
        if self.is_hosting() || !self.client.as_ref().is_some_and(ClientCore::may_reconnect) {
            return false;
        }
        self.transport = transport;
        self.client.as_mut().is_some_and(|c| c.reconnect(now))
    }

    /// Leaves: the player's close frame goes to the host, sent now.
    pub fn leave(&mut self, now: Duration) {
        if let Some(client) = self.client.as_mut() {
            client.leave(now);
        }
        self.flush(now);
    }

    /// The next change of role since the last call, oldest first.
    pub fn poll_change(&mut self) -> Option<RoleChange> {
        self.changes.pop_front()
    }

    /// When [`Self::update`] next needs to run if the transport reports nothing before: the
    /// server's or the client's next timer.
    pub fn poll_timeout(&self) -> Option<Duration> {
        let server = match &self.role {
            Role::Hosting(server) => server.poll_timeout(),
            Role::Following { .. } => None,
        };
        let client = self.client.as_ref().and_then(ClientCore::poll_timeout);
        let recheck = self.recheck.as_ref().and_then(|r| r.client.poll_timeout());
        server.into_iter().chain(client).chain(recheck).min()
    }

    /// While hosting, the link to each seated player's peer: how it goes across the network
    /// (once the transport knows; never for this process's own player) and its round trip.
    pub fn links(&self) -> Vec<crate::engine::server::PlayerLink> {
        let me = self.transport.local_id();
        self.server().map_or_else(Vec::new, |s| {
            s.links_by(|peer| if Some(peer) == me { None } else { self.transport.path(peer) })
        })
    }

    /// The game.
    pub fn game(&self) -> &Game {
        &self.game
    }

    /// The player's client (`None`: a host without a player).
    pub fn client(&self) -> Option<&ClientCore> {
        self.client.as_ref()
    }

    /// [`Self::client`], to change (keys, chat, votes; what it sends goes out on the next
    /// [`Self::update`], or at once with [`Self::send_now`]).
    pub fn client_mut(&mut self) -> Option<&mut ClientCore> {
        self.client.as_mut()
    }

    /// Sends what the client and the server have queued, now.
    pub fn send_now(&mut self, now: Duration) {
        self.flush(now);
    }

    /// Whether this process hosts the match now.
    pub fn is_hosting(&self) -> bool {
        matches!(self.role, Role::Hosting(_))
    }

    /// The server, while this process hosts.
    pub fn server(&self) -> Option<&ServerCore> {
        match &self.role {
            Role::Hosting(server) => Some(server),
            Role::Following { .. } => None,
        }
    }

    /// [`Self::server`], to change (load a map, push commands).
    pub fn server_mut(&mut self) -> Option<&mut ServerCore> {
        match &mut self.role {
            Role::Hosting(server) => Some(server),
            Role::Following { .. } => None,
        }
    }

    /// Whether a shadow is kept (this client is among the first successors).
    pub fn is_shadowing(&self) -> bool {
        self.shadow().is_some()
    }

    /// The shadow, while this client is among the first successors.
    pub fn shadow(&self) -> Option<&Shadow> {
        match &self.role {
            Role::Following { shadow } => shadow.as_deref(),
            Role::Hosting(_) => None,
        }
    }

    /// [`Self::shadow`], to change.
    pub fn shadow_mut(&mut self) -> Option<&mut Shadow> {
        match &mut self.role {
            Role::Following { shadow } => shadow.as_deref_mut(),
            Role::Hosting(_) => None,
        }
    }

    /// Forgets the shadow: the node cannot take the match over until the host streams it the
    /// next checkpoint.
    pub fn forget_shadow(&mut self) {
        if let Role::Following { shadow } = &mut self.role {
            *shadow = None;
        }
    }

    /// Hash mismatches of the shadow so far.
    pub fn mismatches(&self) -> u64 {
        self.shadow().map_or(0, Shadow::mismatches)
    }

    /// Whether the node needs a fresh checkpoint (it asks for one): its shadow diverged from
    /// the host (a hash mismatch, a gap in the log), or the host streams it a log with no
    /// shadow to apply it to.
    pub fn wants_checkpoint(&self) -> bool {
        let unshadowed = self.log_unshadowed && matches!(self.role, Role::Following { shadow: None });
        unshadowed || self.shadow().is_some_and(Shadow::wants_checkpoint)
    }

    /// Checkpoints received.
    pub fn checkpoints(&self) -> u64 {
        self.checkpoints
    }

    /// Problems met while shadowing (a gap in the log, a checkpoint that does not restore).
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// Every migration payload goes through `tap` before the shadow sees it.
    pub fn tap_migration(&mut self, tap: Tap) {
        self.tap = Some(tap);
    }

    /// The transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// The transport, mutably (tests link and drop peers with it).
    pub fn transport_mut(&mut self) -> &mut T {
        &mut self.transport
    }
}

/// The peers of `server`'s mesh: its sessions but this process's own player.
fn mesh_peers(server: &ServerCore) -> Vec<PeerKey> {
    let local = server.local_peers();
    server.linked_peers().into_iter().filter(|p| !local.contains(p)).collect()
}

/// One turn of every node at `now`, in order (an in-memory mesh: each node's transport
/// delivers what the others sent, through its links' conditioners).
pub fn progress<T: Transport>(nodes: &mut [Node<T>], now: Duration) {
    for node in nodes {
        node.update(now);
    }
}
