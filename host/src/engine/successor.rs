//! A client that can take the match over: it shadows the host from the checkpoints and
//! log it streams, and when its turn comes it becomes the host.
//!
//! Every client runs one. While this client is among the first successors the host
//! streams to, [`Successor::update`] feeds what arrives into a [`Shadow`] (the last
//! checkpoint plus the log replayed tick by tick, every logged hash checked). When the
//! host is lost and this client's turn comes ([`ClientCore::takeover_due`](vimp_netcode::client::ClientCore::takeover_due)), the shadow
//! becomes a [`Server`] over the mesh transport the client already holds — no new
//! signalling — joined with an in-memory link to this process's own player, which says
//! hello there with its token like every other client.

use std::time::Duration;

use crate::engine::game::Game;
use crate::engine::migration::{Checkpoint, LogBatch, MigrationConfig, MigrationError, Shadow};
use crate::engine::server::{Server, ServerConfig, Takeover};
use vimp_netcode::client::{Client, Handover};
use vimp_netcode::link::LinkConfig;
use vimp_netcode::migration::{Claim, MigrationPayload};
use vimp_netcode::transport::{Joined, MemoryTransport, PeerKey, Transport};

/// The new host's end of the link to this process's own player.
const PROMOTED_HOST_END: u128 = 0xffff_0001;
/// This process's own player's end of that link (never a successor: it lives here).
const PROMOTED_PLAYER_END: u128 = 0xffff_0002;

/// A client's transport, as a successor's client holds it: the mesh to every peer — and,
/// once its process took the match over, the in-memory link to the new host in the same
/// process ([`Mesh::local`]).
pub trait Mesh: Transport + Sized {
    /// The client's transport over the in-memory link `link`.
    fn local(link: MemoryTransport) -> Self;
}

impl Mesh for Box<dyn Transport> {
    fn local(link: MemoryTransport) -> Self {
        Box::new(link)
    }
}

impl Mesh for MemoryTransport {
    fn local(link: MemoryTransport) -> Self {
        link
    }
}

/// The server a promoted successor runs.
pub type PromotedServer<T> = Server<Joined<T, MemoryTransport>>;

/// What happened in one [`Successor::update`].
#[derive(Debug, Clone, PartialEq)]
pub enum SuccessorEvent {
    /// This process took the match over, continuing from this tick.
    Promoted {
        /// The tick the new host continues from.
        tick: u32,
        /// The new host's epoch.
        epoch: u32,
    },
    /// Another claimant won the race to take over: this process follows it as a client.
    SteppedDown {
        /// The winner.
        winner: PeerKey,
        /// Its epoch.
        epoch: u32,
    },
    /// The players voted for another host: the match went to `to`, followed as a client.
    HandedOff {
        /// The successor.
        to: PeerKey,
    },
}

impl std::fmt::Display for SuccessorEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SuccessorEvent::Promoted { tick, epoch } => write!(f, "took the match over at tick {tick} (epoch {epoch})"),
            SuccessorEvent::SteppedDown { winner, epoch } => {
                write!(f, "stepped down: {winner} took the match over first (epoch {epoch})")
            }
            SuccessorEvent::HandedOff { to } => {
                write!(f, "the players voted for another host: handed the match to {to}")
            }
        }
    }
}

impl From<RetiredWhy> for SuccessorEvent {
    fn from(why: RetiredWhy) -> Self {
        match why {
            RetiredWhy::SteppedDown { winner, claim } => SuccessorEvent::SteppedDown { winner, epoch: claim.epoch },
            RetiredWhy::HandedOff { to } => SuccessorEvent::HandedOff { to },
        }
    }
}

/// The two ends of the link between a promoted host and this process's own player:
/// `(host end, player end)`. The client is handed over to the player end. The host end
/// carries `client`'s own mesh key, so the player sees its host under the key every other
/// peer sees it by.
pub fn promoted_link<T: Transport>(client: &Client<T>) -> (MemoryTransport, MemoryTransport) {
    let me = client.transport().local_id().unwrap_or(PeerKey(PROMOTED_HOST_END));
    let mut host_end = MemoryTransport::new(me);
    let mut player_end = MemoryTransport::new(PeerKey(PROMOTED_PLAYER_END));
    MemoryTransport::connect(&mut host_end, &mut player_end, LinkConfig::new());
    (host_end, player_end)
}

/// Why a promoted successor stopped hosting, with what its own player needs to go on as
/// a client: the mesh transport and the peers it is linked to.
pub struct Retired<T> {
    /// The mesh transport (the link to this process's own player is dropped).
    pub mesh: T,
    /// The mesh peers linked.
    pub peers: Vec<PeerKey>,
    /// Why.
    pub why: RetiredWhy,
}

impl<T> std::fmt::Debug for Retired<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retired").field("peers", &self.peers).field("why", &self.why).finish_non_exhaustive()
    }
}

/// Why a promoted successor stopped hosting.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RetiredWhy {
    /// Another claimant's claim beat this one: it hosts.
    SteppedDown {
        /// The winner.
        winner: PeerKey,
        /// Its claim.
        claim: Claim,
    },
    /// The players voted for another host (`@changeHost`): the match was handed to `to`.
    HandedOff {
        /// The successor that took it.
        to: PeerKey,
    },
}

impl<T: Transport> Retired<T> {
    /// Puts this process's own player back on the mesh, following the host that took over.
    pub fn rejoin(self, client: &mut Client<T>) {
        let local = match self.why {
            RetiredWhy::SteppedDown { winner, claim } => client.step_down(self.mesh, self.peers, winner, claim),
            RetiredWhy::HandedOff { to } => client.follow_handoff(self.mesh, self.peers, to),
        };
        drop(local);
    }
}

/// A client's readiness to take the match over (see the module docs).
pub struct Successor<T: Transport> {
    game: Game,
    shadow: Option<Shadow>,
    server: Option<PromotedServer<T>>,
    errors: Vec<String>,
    checkpoints: u64,
}

impl<T: Transport> std::fmt::Debug for Successor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Successor")
            .field("shadowing", &self.shadow.is_some())
            .field("promoted", &self.server.is_some())
            .field("errors", &self.errors.len())
            .finish_non_exhaustive()
    }
}

impl<T: Mesh> Successor<T> {
    /// Ready to shadow a match of `game`.
    pub fn new(game: Game) -> Self {
        Successor { game, shadow: None, server: None, errors: Vec::new(), checkpoints: 0 }
    }

    /// A successor that hosts from the start: `server` is the match this process made, over
    /// the mesh and the in-memory link to its own player (whose key is among the server's
    /// [`local_peers`](crate::engine::server::ServerCore::local_peers)). It stops hosting like a promoted one — a
    /// better claim, the players' vote ([`Self::retire`]) — and hands off the same way.
    pub fn hosting(game: Game, server: PromotedServer<T>) -> Self {
        Successor { server: Some(server), ..Successor::new(game) }
    }

    /// Whether a shadow is kept (this client is among the first successors).
    pub fn is_shadowing(&self) -> bool {
        self.shadow.is_some()
    }

    /// The server this process runs since it took over.
    pub fn server(&self) -> Option<&PromotedServer<T>> {
        self.server.as_ref()
    }

    /// [`Self::server`], to change.
    pub fn server_mut(&mut self) -> Option<&mut PromotedServer<T>> {
        self.server.as_mut()
    }

    /// The shadow kept while this client is among the first successors.
    pub fn shadow(&self) -> Option<&Shadow> {
        self.shadow.as_ref()
    }

    /// [`Self::shadow`], to change.
    pub fn shadow_mut(&mut self) -> Option<&mut Shadow> {
        self.shadow.as_mut()
    }

    /// Hash mismatches of the shadow so far.
    pub fn mismatches(&self) -> u64 {
        self.shadow.as_ref().map_or(0, Shadow::mismatches)
    }

    /// Whether the shadow diverged from the host (a hash mismatch, a gap in the log) and
    /// needs a fresh checkpoint ([`ClientCore::request_checkpoint`](vimp_netcode::client::ClientCore::request_checkpoint) asks for one).
    pub fn wants_checkpoint(&self) -> bool {
        self.shadow.as_ref().is_some_and(Shadow::wants_checkpoint)
    }

    /// Checkpoints received.
    pub fn checkpoints(&self) -> u64 {
        self.checkpoints
    }

    /// Problems met while shadowing (a gap in the log, a checkpoint that does not restore).
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// One turn: shadow what the host streamed, take over when due, run the server once
    /// taken — and when it stops hosting (a better claim, or the players' vote), put the
    /// client back on the mesh after the host that took over.
    pub fn update(&mut self, client: &mut Client<T>, now: Duration) -> Option<SuccessorEvent> {
        if self.server.is_some() {
            self.update_server(now);
            return self.rejoin_if_retired(client);
        }
        self.feed_all(client.take_migration());
        if self.wants_checkpoint() {
            client.request_checkpoint();
        }
        if !client.takeover_due() {
            return None;
        }
        self.take_over(client, now)
    }

    /// Takes the match over now, whether or not it is this client's turn (what
    /// [`Self::update`] does when it is): the client is handed over to an in-memory link to
    /// this process's new host, which runs the shadow over the client's mesh. `None` without
    /// a shadow, or when the client has no mesh to give (not welcomed).
    pub fn take_over(&mut self, client: &mut Client<T>, now: Duration) -> Option<SuccessorEvent> {
        self.shadow.as_ref()?;
        let (host_end, player_end) = promoted_link(client);
        let handover = client.hand_over(T::local(player_end))?;
        self.promote(handover, host_end, now)
    }

    /// When the server this process runs stopped hosting ([`Self::retire`]): puts the client
    /// back on the mesh after the host that took over, and says why.
    pub fn rejoin_if_retired(&mut self, client: &mut Client<T>) -> Option<SuccessorEvent> {
        let retired = self.retire()?;
        let event = SuccessorEvent::from(retired.why);
        retired.rejoin(client);
        Some(event)
    }

    /// Feeds what the host streamed to the shadow (problems go to [`Successor::errors`]).
    pub fn feed_all(&mut self, payloads: Vec<MigrationPayload>) {
        for payload in payloads {
            if let Err(e) = self.feed(payload) {
                self.errors.push(e.to_string());
            }
        }
    }

    /// Turns the shadow into the host, over the mesh `handover` carries plus `host_end`
    /// (the new host's end of [`promoted_link`], whose other end the client was handed
    /// over to). `None` without a shadow (the transport is dropped then).
    pub fn promote(
        &mut self,
        handover: Handover<T>,
        host_end: MemoryTransport,
        now: Duration,
    ) -> Option<SuccessorEvent> {
        let shadow = self.shadow.take()?;
        let tick = shadow.tick();
        // The match's own config, which the first checkpoint carried.
        let init = shadow.host().init_config().clone();
        let config = ServerConfig {
            client_config: (self.game.client_config)(&init),
            session: crate::engine::server::session_config(&init.game),
            migration: MigrationConfig {
                local_peers: vec![PeerKey(PROMOTED_PLAYER_END)],
                ..MigrationConfig::default()
            },
            ..ServerConfig::default()
        };
        let takeover = Takeover { now, peers: handover.peers, rank: handover.rank };
        let server = Server::from_shadow(shadow, Joined::new(handover.transport, host_end), config, takeover);
        let epoch = server.epoch();
        self.server = Some(server);
        Some(SuccessorEvent::Promoted { tick, epoch })
    }

    /// Runs the server once promoted (nothing before).
    pub fn update_server(&mut self, now: Duration) {
        if let Some(server) = self.server.as_mut() {
            server.update(now);
        }
    }

    /// When the server this process runs stops hosting — a better claim beat it, or the
    /// players voted it away and it handed the match off — takes it down and gives back
    /// the mesh; this successor is ready to shadow again.
    pub fn retire(&mut self) -> Option<Retired<T>> {
        let server = self.server.as_ref()?;
        let why = match (server.superseded(), server.handed_off()) {
            (Some((winner, claim)), _) => RetiredWhy::SteppedDown { winner, claim },
            (None, Some(to)) => RetiredWhy::HandedOff { to },
            (None, None) => return None,
        };
        let server = self.server.take()?;
        let local = server.local_peers().to_vec();
        let peers = server.linked_peers().into_iter().filter(|p| !local.contains(p)).collect();
        let (mesh, _player_link) = server.into_transport().into_parts();
        Some(Retired { mesh, peers, why })
    }

    /// When this process hosts (it took over): hands the match to the first successor
    /// (log, final checkpoint, `HANDOFF`). Returns whether anyone could take it.
    pub fn hand_off(&mut self, now: Duration) -> bool {
        self.server.as_mut().is_some_and(|s| s.hand_off(now).is_some())
    }

    fn feed(&mut self, payload: MigrationPayload) -> Result<(), MigrationError> {
        match payload {
            MigrationPayload::Checkpoint(bytes) => {
                let checkpoint = Checkpoint::decode(&bytes)?;
                self.checkpoints += 1;
                match &mut self.shadow {
                    Some(shadow) => shadow.offer(&checkpoint).map(|_| ()),
                    None => {
                        // The shadow's host is built from the match's own init config, which
                        // the checkpoint carries with the state and the random generator.
                        let init = checkpoint.init_config()?;
                        self.shadow = Some(Shadow::from_checkpoint(init, self.game, &checkpoint)?);
                        Ok(())
                    }
                }
            }
            MigrationPayload::Log(bytes) => {
                let batch = LogBatch::decode(&bytes)?;
                match &mut self.shadow {
                    Some(shadow) => shadow.apply(&batch).map(|_| ()),
                    // Log before the first checkpoint: nothing to apply it to yet.
                    None => Ok(()),
                }
            }
            MigrationPayload::Handoff(_) => Ok(()),
        }
    }
}
