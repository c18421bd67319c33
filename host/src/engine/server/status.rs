//! Who plays and who watches: what a welcomed peer is told, `/spectate` and `/play`, the game's form, key sets, panels and map changes.
//!
//! A seat either plays (it has an actor in the game) or watches (it is in `watching`,
//! with the player it follows). The client hears which by `KEYSET_DATA` (1 plays, 0
//! watches) at its welcome and at every change:
//!
//! * a hello with `spectator` watches; any other plays at once, or, when the game has a
//!   form ([`AuthForm`]), watches until an `AUTH_RESPONSE` passes its checks;
//! * `/spectate` takes a player's actor out of the game and makes it watch;
//! * `/play` puts a spectator in the game, through the form when the game has one (an
//!   answer to the form from a spectator is a `/play` with it);
//! * a resumed seat keeps what it was doing, whatever its new hello says.
//!
//! Each change is a system line to everyone ([`EngineLine::Watching`], [`EngineLine::Playing`]).
//!
//! Every `MAP_DATA` goes between `TECH_INFORM [1]` (loading) and `TECH_INFORM null`
//! (hide), in the same flush, so a client shows the black screen while it builds the map:
//! at a map change, at a join, and at the welcome of a seat taken back (after a crash, or
//! at a host that took the match over from a checkpoint). A map change tells each client, in
//! the spec's order: a spectator its key set `0` right before `CLEAR`; then loading,
//! `CLEAR null`, the map, a player its key set `1`, hide. A map loaded again unchanged (a
//! new round) changes only its dynamic bodies: `CLEAR "setId"` (the map's set) and nothing
//! else. Panels start over after a map change.
//!
//! Panels: a player gets its own, whole at first and then only what changed; a spectator
//! gets the spec's empty panel — the round time (`t`, of the player it watches) and the
//! game's other panel keys without values — so its HUD shows nothing stale.

use vimp_netcode::frame::op;
use vimp_netcode::meta::{
    AuthResult, Clear, ClientMeta, Encoded, EngineLine, Keyset, MetaMessage, Panel, PanelState, TechInform,
};
use vimp_netcode::transport::PeerKey;

use super::ServerCore;
use super::chat::NO_PARAMS;
use crate::engine::auth::{AuthForm, TOKEN_FIELD};
use crate::engine::map::state::MapState;
use crate::engine::players::{HostCommand, Panels, Participants, PlayerId};
use crate::engine::sim::EngineSettings;

/// `TECH_INFORM [1]`: the black screen says "loading".
fn loading() -> Encoded {
    MetaMessage::TechInform(TechInform::Show { code: TechInform::LOADING, params: None }).encoded()
}

/// `TECH_INFORM null`: the black screen goes.
fn hide() -> Encoded {
    MetaMessage::TechInform(TechInform::Hide).encoded()
}

fn keyset(playing: bool) -> Encoded {
    MetaMessage::Keyset(if playing { Keyset::Player } else { Keyset::Spectator }).encoded()
}

impl ServerCore {
    /// What a peer gets right after its welcome and config, between loading and hide: the
    /// map, the whole stat table, its key set; and its panel starts over. A new player joins
    /// the game here, or watches and gets the game's form (`spectator`: the hello asked to
    /// watch).
    pub(super) fn greet(&mut self, peer: PeerKey, player: PlayerId, resumed: bool, spectator: bool) {
        let form = self.host.world().get_resource::<AuthForm>().map(|f| MetaMessage::AuthData(f.data.clone()));
        if !resumed {
            if spectator || form.is_some() {
                let first = self.first_other(player);
                self.watching.insert(player, first);
            } else {
                let name = self.roster.seat(player).map(|s| s.nickname.clone()).unwrap_or_default();
                self.host.push(HostCommand::Join { player, name, team: None, bot: false });
            }
        }
        let playing = !self.watching.contains_key(&player);
        // The client loads the map (a first join's, or a seat's taken back after a crash or
        // at a host that restored a checkpoint) behind the black screen.
        self.send_to(peer, &loading());
        if let Some(map) = self.map_message() {
            self.send_to(peer, &map);
        }
        self.send_to(peer, &MetaMessage::Stat(self.stat.full()).encoded());
        self.send_to(peer, &keyset(playing));
        if let Some(accolades) = self.accolades() {
            self.send_to(peer, &MetaMessage::Accolades(accolades).encoded());
        }
        if let (Some(room), Some(session)) = (self.room.as_ref(), self.peers.get_mut(&peer)) {
            session.send(vimp_netcode::frame::Channel::Reliable, vimp_netcode::frame::op::ROOM, &room.encode());
        }
        self.send_to(peer, &hide());
        self.panels.insert(peer, PanelState::new());
        if let Some(form) = form.filter(|_| !resumed && !spectator) {
            self.send_to(peer, &form.encoded());
        }
    }

    /// `/spectate`: the player's actor leaves the game and the player watches.
    pub(super) fn watch(&mut self, player: PlayerId) {
        let Some(peer) = self.roster.seat(player).and_then(|s| s.peer) else { return };
        if self.watching.contains_key(&player) {
            return self.reply(peer, EngineLine::AlreadyWatching, NO_PARAMS);
        }
        self.host.push(HostCommand::Leave { player });
        let first = self.first_other(player);
        self.watching.insert(player, first);
        self.auth_values.remove(&player);
        self.send_to(peer, &keyset(false));
        self.status_changed(player, EngineLine::Watching);
    }

    /// `/play`: a spectator joins the game, or gets the game's form first.
    pub(super) fn play(&mut self, peer: PeerKey, player: PlayerId) {
        if !self.watching.contains_key(&player) {
            return self.reply(peer, EngineLine::AlreadyPlaying, NO_PARAMS);
        }
        match self.host.world().get_resource::<AuthForm>() {
            Some(form) => {
                let data = MetaMessage::AuthData(form.data.clone()).encoded();
                self.send_to(peer, &data);
            }
            None => self.enter_game(player),
        }
    }

    /// An answer to the game's form (`AUTH_RESPONSE`), which may carry the player's token
    /// (`token`, the rendezvous's JWT of its identity) with or without a form.
    ///
    /// - A token is checked first ([`crate::engine::roster::Roster::verify`]): one that holds
    ///   verifies the seat, which takes the token's nickname (`s:6` to everyone; an unverified
    ///   holder of the name is renamed, `s:7`); one that does not leaves the seat unverified
    ///   and its player is told why (`c:8`, and `AUTH_RESULT {"token": why}` when the game has
    ///   no form). A later token of the same identity is a refresh, taken quietly.
    /// - A spectator whose answer passes the game's form joins the game (`AUTH_RESULT null`);
    ///   one whose answer fails gets an error per field. An answer from a player, or to a game
    ///   without a form, is ignored.
    ///
    /// Bytes that are not an answer close the peer.
    pub(super) fn on_auth(&mut self, peer: PeerKey, payload: &[u8]) {
        let Some(player) = self.roster.player_of(peer) else { return };
        let answer = match ClientMeta::decode(op::client::AUTH_RESPONSE, payload) {
            Ok(ClientMeta::AuthResponse(answer)) => answer,
            _ => {
                self.protocol_error(peer);
                return;
            }
        };
        let has_form = self.host.world().get_resource::<AuthForm>().is_some();
        if let Some(token) = answer.0.get(TOKEN_FIELD).and_then(|t| t.as_str()) {
            self.on_token(peer, player, token, has_form);
        }
        if !self.watching.contains_key(&player) {
            return;
        }
        let Some(checked) = self.host.world().get_resource::<AuthForm>().map(|form| form.check(&answer)) else {
            return;
        };
        let result = match checked {
            Ok(values) => {
                self.auth_values.insert(player, values);
                AuthResult::Accepted
            }
            Err(errors) => AuthResult::Rejected(errors),
        };
        let accepted = result == AuthResult::Accepted;
        self.send_to(peer, &MetaMessage::AuthResult(result).encoded());
        if accepted {
            self.enter_game(player);
        }
    }

    /// A player's token (see [`ServerCore::on_auth`]).
    fn on_token(&mut self, peer: PeerKey, player: PlayerId, token: &str, has_form: bool) {
        let before = self.roster.seat(player).and_then(|s| s.verified.clone());
        match self.roster.verify(player, token, vimp_netcode::identity::unix_now()) {
            Ok(verified) => {
                let refresh = before.is_some() && verified.was == verified.nickname;
                if let Some((other, old, new)) = &verified.renamed {
                    self.rename(*other, new);
                    self.announce(EngineLine::Renamed, [old.clone(), new.clone()]);
                }
                if verified.was != verified.nickname {
                    self.rename(player, &verified.nickname);
                }
                if !refresh {
                    self.announce(EngineLine::Verified, [verified.nickname.clone(), verified.was.clone()]);
                    self.migration.meta_dirty = true;
                    self.next_stat = std::time::Duration::ZERO;
                }
                if !has_form {
                    self.send_to(peer, &MetaMessage::AuthResult(AuthResult::Accepted).encoded());
                }
            }
            Err(why) => {
                tracing::info!("{player:?}'s token was refused: {why}");
                self.reply(peer, EngineLine::TokenRefused, [why.to_string()]);
                if !has_form {
                    let errors = [(TOKEN_FIELD.to_owned(), why.to_string())].into_iter().collect();
                    self.send_to(peer, &MetaMessage::AuthResult(AuthResult::Rejected(errors)).encoded());
                }
            }
        }
    }

    /// `player` is now called `name` (its seat says so already): the game's participant too.
    fn rename(&mut self, player: PlayerId, name: &str) {
        self.host.push(HostCommand::Rename { player, name: name.to_owned() });
        self.next_stat = std::time::Duration::ZERO;
    }

    /// A spectator joins the game: its actor, key set 1, a whole panel, the line to everyone.
    fn enter_game(&mut self, player: PlayerId) {
        let Some(seat) = self.roster.seat(player) else { return };
        let (name, peer) = (seat.nickname.clone(), seat.peer);
        self.watching.remove(&player);
        self.host.push(HostCommand::Join { player, name, team: None, bot: false });
        if let Some(peer) = peer {
            self.send_to(peer, &keyset(true));
            if let Some(state) = self.panels.get_mut(&peer) {
                state.reset();
            }
        }
        self.status_changed(player, EngineLine::Playing);
    }

    /// After a seat began or stopped playing: the line to everyone, the frames' receivers,
    /// the successors' next checkpoint and the stat table at once.
    fn status_changed(&mut self, player: PlayerId, line: EngineLine) {
        let name = self.roster.seat(player).map(|s| s.nickname.clone()).unwrap_or_default();
        self.announce(line, [name]);
        self.migration.meta_dirty = true;
        self.next_stat = std::time::Duration::ZERO;
        self.update_receivers();
    }

    /// The participant a new spectator watches: the first one that is not itself.
    fn first_other(&self, player: PlayerId) -> Option<PlayerId> {
        self.host.world().resource::<Participants>().0.keys().copied().find(|p| *p != player)
    }

    /// After a map load (a new map, or the same one for a new round), what each client is
    /// told (see the module docs).
    pub(super) fn announce_map_changes(&mut self) {
        let loads = self.host.world().resource::<MapState>().loads;
        if loads == self.map_loads {
            return;
        }
        self.map_loads = loads;
        let map = self.map_message();
        if map.is_some() && map == self.map_sent {
            return self.clear_dynamic_set();
        }
        self.map_sent.clone_from(&map);
        let active: Vec<(PeerKey, bool)> = self
            .peers
            .iter()
            .filter(|(_, s)| s.is_active())
            .map(|(peer, _)| (*peer, self.roster.player_of(*peer).is_none_or(|p| !self.watching.contains_key(&p))))
            .collect();
        let clear = MetaMessage::Clear(Clear::All).encoded();
        for (peer, playing) in active {
            if !playing {
                self.send_to(peer, &keyset(false));
            }
            self.send_to(peer, &loading());
            self.send_to(peer, &clear);
            if let Some(map) = &map {
                self.send_to(peer, map);
            }
            if playing {
                self.send_to(peer, &keyset(true));
            }
            self.send_to(peer, &hide());
        }
        for state in self.panels.values_mut() {
            state.reset();
        }
    }

    /// The map loaded again as it was: only its dynamic bodies start over, `CLEAR "setId"`.
    fn clear_dynamic_set(&mut self) {
        let world = self.host.world();
        let set = world.resource::<MapState>().set_id(&world.resource::<EngineSettings>().config).to_owned();
        let clear = MetaMessage::Clear(Clear::Set(set)).encoded();
        let active: Vec<PeerKey> = self.peers.iter().filter(|(_, s)| s.is_active()).map(|(p, _)| *p).collect();
        for peer in active {
            self.send_to(peer, &clear);
        }
    }

    /// Each seat's panel, on a snapshot tick: a player's own changes, a spectator's empty panel.
    pub(super) fn send_panels(&mut self) {
        let panels = &self.host.world().resource::<Panels>().0;
        let mut keys: Vec<String> = Vec::new();
        for (key, _) in panels.values().flatten() {
            if !keys.contains(key) {
                keys.push(key.clone());
            }
        }
        let time_of = |player: Option<PlayerId>| {
            let panel = player.and_then(|p| panels.get(&p)).or_else(|| panels.values().next())?;
            panel.iter().find(|(k, _)| k == Panel::TIME_KEY).map(|(_, v)| v.clone())
        };
        for seat in self.roster.seats() {
            let Some(peer) = seat.peer else { continue };
            let (Some(state), Some(session)) = (self.panels.get_mut(&peer), self.peers.get_mut(&peer)) else {
                continue;
            };
            let diff = match self.watching.get(&seat.player) {
                Some(watched) => time_of(*watched).and_then(|t| state.empty(&t, &keys)),
                None => panels.get(&seat.player).and_then(|panel| state.diff(panel)),
            };
            if let Some(diff) = diff.filter(|_| session.is_active()) {
                let panel = MetaMessage::Panel(diff).encoded();
                session.send(vimp_netcode::frame::Channel::Reliable, panel.port, &panel.bytes);
            }
        }
    }
}
