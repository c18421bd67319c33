//! What a peer says and when it goes: a hello through the roster to a welcome, key events,
//! aims and views into the match, meta to its handlers; a peer that leaves gives its slot up,
//! one that drops keeps it for its token.

use std::time::Duration;

use vimp_netcode::frame::{Channel, op};
use vimp_netcode::input::{InputEvent, ViewTime, WireInput};
use vimp_netcode::meta::{ChatHistory, ChatMessage, Encoded, EngineLine, MetaMessage, TechInform};
use vimp_netcode::migration::{Claim, Links};
use vimp_netcode::session::{Hello, HostEvent, Welcome, close};
use vimp_netcode::transport::PeerKey;

use super::{MigrationRoles, ServerCore, ServerEvent};
use crate::engine::players::{HostCommand, Participants, PlayerKeys};
use crate::engine::roster::fresh_token;
use crate::engine::snapshot::DeltaViewers;

impl ServerCore {
    /// A hello the roster admitted: the welcome and config, the meta every client starts
    /// with ([`Self::greet`]), the chat said meanwhile for a seat taken back, the line to
    /// everyone. A seat taken back keeps playing or watching, whatever the hello says.
    pub(super) fn admit(
        &mut self,
        peer: PeerKey,
        hello: &vimp_netcode::session::Hello,
        a: crate::engine::roster::Admission,
    ) {
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

    /// What a peer's session says, each to its handler.
    pub(super) fn on_event(&mut self, peer: PeerKey, event: HostEvent, now: Duration) {
        match event {
            HostEvent::Hello(hello) => self.on_hello(peer, hello, now),
            HostEvent::Input(events) => self.on_inputs(peer, events),
            HostEvent::TextInput(event) => self.on_text_input(peer, event),
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
            HostEvent::Claim(payload) => self.on_claim(peer, &payload, now),
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

    /// A hello: admitted to a slot and welcomed, or refused with its close code (a full server
    /// says so first).
    fn on_hello(&mut self, peer: PeerKey, hello: Hello, now: Duration) {
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
                    let full =
                        MetaMessage::TechInform(TechInform::Show { code: TechInform::SERVER_FULL, params: None });
                    let full = full.encoded();
                    session.send(Channel::Reliable, full.port, &full.bytes);
                }
                // A lobby with a password, and a hello that gave none, is told as such.
                let reason = (code == close::BAD_PASSWORD && hello.password.is_none())
                    .then_some("this lobby needs a password: join with it");
                session.reject(code, reason)
            }
            Ok(a) => self.admit(peer, &hello, a),
        }
    }

    /// A batch of binary inputs: a spectator's keys switch whom it watches; a player's keys,
    /// aims and views become the match's commands (a view only from a peer that offered them,
    /// clamped to what its link explains).
    fn on_inputs(&mut self, peer: PeerKey, events: Vec<WireInput>) {
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

    /// A key event in the text form.
    fn on_text_input(&mut self, peer: PeerKey, event: InputEvent) {
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

    /// A claim of the match: this host keeps it against one that does not hold the room, or
    /// is superseded by the best.
    fn on_claim(&mut self, peer: PeerKey, payload: &[u8], now: Duration) {
        match Claim::decode(payload) {
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
        }
    }

    /// `peer` is gone. One that left (it closed with a normal close: the window's Leave, a
    /// quit) gives its slot up at once, its tank with it; one that dropped (its link went, it
    /// timed out, it was kicked) keeps its slot for [`Roster::resume_window`].
    pub(super) fn drop_peer(&mut self, peer: PeerKey, now: Duration) {
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
