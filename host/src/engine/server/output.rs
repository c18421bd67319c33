//! What goes out: which players' frames are packed and for whom, each tick's frames and meta
//! messages to their receivers, the stat table, and every session's queue onto the outbox.

use std::collections::BTreeMap;
use std::time::Duration;

use vimp_netcode::frame::{Channel, op};
use vimp_netcode::meta::{MetaMessage, PlayerStat};

use super::ServerCore;
use crate::engine::meta::Outgoing;
use crate::engine::players::{Participants, Scores};
use crate::engine::snapshot::{DeltaViewer, DeltaViewers, FrameReceivers};

impl ServerCore {
    /// Frames are packed for connected players and for the players spectators watch: format 5
    /// once per watched player, delta frames per receiving seat (each has its own baseline).
    pub(super) fn update_receivers(&mut self) {
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

    /// Brings the stat table up to date (a row per participant: name, status, score, deaths,
    /// latency, in its team's tbody) and sends what changed to every client.
    pub(super) fn broadcast_stat(&mut self) {
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
            // A row's tbody is its player's team.
            self.stat.set_row(0, player.0 as u32, p.team, row.cells());
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
    pub(super) fn send_tick_output(&mut self) {
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

    pub(super) fn flush(&mut self, now: Duration) {
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
}
