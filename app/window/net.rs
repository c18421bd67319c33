//! A match as the window sees it: the client, what the host said, and what to draw.
//!
//! [`MatchState`] is plain Rust with no window in it: the window calls
//! [`MatchState::update`] once per frame and draws what it holds, and tests drive it the
//! same way without a GPU. It owns the [`NodeThread`] (this process's node: the player's
//! client, and the host or the shadow of the match), the interpolation buffer, and the meta
//! the host sent: panel, stat table, chat, votes, banners and the black screen. What the
//! client holds is read through [`MatchState::client`].

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use vimp_host::PlayerId;
use vimp_host::engine::map::MapConfig;
use vimp_netcode::client::{AIM_INTERVAL, ClientCore, ClientStats};
use vimp_netcode::input::{Aim, KeyAction};
use vimp_netcode::interp::{InterpolationConfig, Interpolator, Sample};
use vimp_netcode::meta::{
    self, AuthData, AuthResponse, AuthResult, ChatMessage, ChatText, ClientMeta, GameInform, Keyset, ListRequest,
    MetaMessage, StatView, TechInform, Vote, VoteAnswer, VoteValues,
};
use vimp_netcode::session::Hello;
use vimp_netcode::transport::LinkPath;

use crate::setup::JoinFailure;
use crate::window::graph::NetGraph;
use crate::window::node::{ClientView, HostNote, NodeThread};
use crate::window::predict::{LocalPrediction, MakePrediction};
use crate::window::tokens::Tokens;
use vimp_host::engine::node::RoleChange;

/// A tank destroyed: by whom, whose, when (the node's clock): the stat table's player ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kill {
    /// Who destroyed it (the victim itself when it destroyed its own tank).
    pub killer: u32,
    /// Whose tank it was.
    pub victim: u32,
    /// When it was heard.
    pub at: Duration,
}

/// How many kills the feed keeps, and how long each is shown.
pub const KILL_FEED: usize = 5;

/// How long a kill stays in the feed.
pub const KILL_SHOWN: Duration = Duration::from_secs(6);

/// How long a banner stays up.
pub const BANNER_TIME: Duration = Duration::from_secs(4);
/// How often a token in use is remembered again.
pub const TOKEN_REFRESH: Duration = Duration::from_secs(60);
/// Chat lines kept.
pub const CHAT_LINES: usize = 100;

/// A chat line as shown.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatLine {
    /// The author (`None` for the system).
    pub author: Option<String>,
    /// The receiver of a personal line (`/w`), shown after the author.
    pub to: Option<String>,
    /// The author's team.
    pub team: u8,
    /// The text.
    pub text: String,
    /// When it arrived.
    pub at: Duration,
}

/// The game's form while the host waits for it (`AUTH_DATA`): what the player typed, and
/// the host's word on each field after an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct GameForm {
    /// The form as the host sent it.
    pub data: AuthData,
    /// What each field holds now, by param name (a param's `value` to begin with).
    pub values: BTreeMap<String, String>,
    /// The host's errors of the last answer, by field.
    pub errors: BTreeMap<String, String>,
    /// An answer went and the host has not said yet.
    pub waiting: bool,
}

impl GameForm {
    /// The form with its fields at their params' values.
    pub fn new(data: AuthData) -> GameForm {
        let text = |v: &serde_json::Value| {
            v.as_str().map_or_else(|| if v.is_null() { String::new() } else { v.to_string() }, str::to_owned)
        };
        let values = data.params.iter().map(|p| (p.name.clone(), text(&p.value))).collect();
        GameForm { data, values, errors: BTreeMap::new(), waiting: false }
    }

    /// The answer to send: each field as typed, a number where the param says `numeric`.
    pub fn answer(&self) -> AuthResponse {
        let mut fields = serde_json::Map::new();
        for param in &self.data.params {
            let typed = self.values.get(&param.name).map_or("", String::as_str).trim();
            let numeric = param.options.get("numeric").and_then(serde_json::Value::as_bool) == Some(true);
            let value = match typed.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
                Some(n) if numeric => serde_json::Value::Number(n),
                _ => serde_json::Value::String(typed.to_owned()),
            };
            fields.insert(param.name.clone(), value);
        }
        AuthResponse(fields)
    }
}

/// A match in progress (see the module docs).
pub struct MatchState {
    /// The time base of this match (shared with the node thread).
    pub clock: Instant,
    /// The node thread: the player's client, and the host when this window hosts (a match it
    /// made, or one it took over) or the shadow ready to take the match over when it joined.
    pub node: NodeThread,
    /// The client's figures as of the last turn (the net graph shows what came since).
    stats_seen: ClientStats,
    /// What the node thread published of the client, as of the last turn.
    view: ClientView,
    /// When this process took the match over: the tick it went on from and its epoch.
    pub promoted: Option<(u32, u32)>,
    /// The room (its URL) and where this player's token for it is remembered.
    pub room: Option<(String, Tokens)>,
    /// The token last remembered, and when.
    token_saved: Option<(vimp_netcode::session::SessionToken, Duration)>,
    /// What the title bar and menus call this match.
    pub title: String,
    /// The interpolation buffer, once the config arrived.
    pub interp: Option<Interpolator>,
    /// The current map, once `MAP_DATA` arrived.
    pub map: Option<MapConfig>,
    /// Bumped on every map (re)load: the drawing rebuilds the map when it changes.
    pub map_version: u64,
    /// The panel entries (`t`, `h`, …) of this player.
    pub panel: BTreeMap<String, String>,
    /// The stat tables.
    pub stat: StatView,
    /// Who in the room is verified, and their places in the global top (`ACCOLADES_DATA`).
    pub accolades: vimp_netcode::meta::Accolades,
    /// Chat lines, oldest first.
    pub chat: VecDeque<ChatLine>,
    /// The vote asked, if any.
    pub vote: Option<Vote>,
    /// The newest game message and when it came.
    pub banner: Option<(GameInform, Duration)>,
    /// The newest tanks destroyed, for the kill feed (at most [`KILL_FEED`]).
    pub kills: std::collections::VecDeque<Kill>,
    /// The black screen, while shown.
    pub tech: Option<TechInform>,
    /// Whether the player plays or watches, as the host last said (`KEYSET_DATA`).
    pub keyset: Option<Keyset>,
    /// The game's form, while the host waits for it.
    pub form: Option<GameForm>,
    /// A map that failed to load on save, with its errors.
    pub map_error: Option<String>,
    /// Meta payloads from the host that did not decode (each one logged), or a map that did
    /// not read; the net graph shows them.
    pub meta_refused: u64,
    /// The warnings of the map being played (one per line), and when they came.
    pub map_warnings: Option<(String, Duration)>,
    /// A short note (map reloaded…) and when it came.
    pub note: Option<(String, Duration)>,
    /// Sounds the host asked for since the last look.
    pub sounds: Vec<String>,
    /// The latest interpolated sample, for drawing.
    pub sample: Sample,
    /// The net graph's history.
    pub graph: NetGraph,
    /// How the game predicts the player's own actor.
    make_prediction: MakePrediction,
    /// The player's own actor's prediction, once config, map and welcome are there (not for
    /// spectators).
    pub predictor: Option<Box<dyn LocalPrediction>>,
    /// The map version the predictor was built for.
    predictor_map: u64,
    /// The match time the predictor has stepped to.
    predicted_to: Duration,
    /// The predicted actor as drawn one step before the newest, to blend between steps.
    previous_render: Option<[f32; 8]>,
    /// Tracers fired locally, not drawn yet.
    local_shots: Vec<([f32; 2], [f32; 2])>,
    /// The server time of the world last drawn (the interpolation's render time), ms: what
    /// a press of a one-shot key says the player saw (lag compensation).
    seen_ms: Option<f64>,
    /// Host changes seen so far (for the banner).
    migrations_seen: u32,
    /// A "host changed" banner and when it came.
    pub host_banner: Option<(String, Duration)>,
    /// The newest divergence record of the predictor.
    pub last_divergence: Option<vimp_netcode::divergence::DivergenceRecord>,
    /// The keys held now, by action name.
    pub held: Vec<String>,
    /// The last aim sent (`None`: let go), when, and its seq.
    aim: Option<(Duration, Option<Aim>, u32)>,
    /// For a match joined over the network: why we are not in, once that is known.
    pub joining: Option<Joining>,
    /// Whether the node was shadowing at the last turn.
    shadow_said: bool,
}

/// The ICE servers a join's socket uses, as they stand: what a player named, then what the
/// rendezvous handed it once fetched (and renewed).
pub type IceSeen = std::sync::Arc<std::sync::Mutex<Vec<vimp_netcode::signal::IceServer>>>;

/// A join that has not been welcomed yet, and what to ask to say why when none comes.
pub struct Joining {
    /// The signalling server.
    pub signal: String,
    /// The room's URL.
    pub url: String,
    /// The ICE servers the join uses: those known, then the rendezvous's once fetched.
    pub ice: IceSeen,
    /// How long to wait for the welcome before saying why there is none.
    pub timeout: Duration,
    /// The diagnosis under way (it asks the signalling server, so not on the frame).
    asked: Option<std::sync::mpsc::Receiver<JoinFailure>>,
    /// Why the join failed, once known.
    pub failure: Option<JoinFailure>,
    /// Whether anyone else is in the room, asked as soon as the socket is in it.
    empty: crate::setup::EmptyRoom,
}

impl Joining {
    /// How long a join waits for its welcome before it says why there is none, by default.
    pub const TIMEOUT: Duration = Duration::from_secs(15);

    /// A join of the room at `url` through `signal`, with `ice`.
    pub fn new(signal: String, url: String, ice: IceSeen) -> Joining {
        let empty = crate::setup::EmptyRoom::new(&signal, &url);
        Joining { signal, url, ice, timeout: Self::TIMEOUT, asked: None, failure: None, empty }
    }

    /// Watches a join not welcomed yet: the signalling server lost, or no welcome within
    /// [`timeout`](Joining::timeout), becomes a [`JoinFailure`].
    fn update(&mut self, client: &ClientView, now: Duration) {
        if self.failure.is_some() || client.welcome().is_some() {
            return;
        }
        if let Some(reason) = client.failure() {
            self.failure = Some(JoinFailure { code: crate::setup::UNREACHABLE, reason: reason.to_owned() });
            return;
        }
        // A room with nobody else in it is said at once: a wrong code.
        if let Some(empty) = self.empty.turn(client.local_id().is_some(), client.linked_peers()) {
            self.failure = Some(empty);
            return;
        }
        if now >= self.timeout && self.asked.is_none() {
            let (tx, rx) = std::sync::mpsc::channel();
            let ice = self.ice.lock().map(|list| list.clone()).unwrap_or_default();
            let (signal, url, linked) = (self.signal.clone(), self.url.clone(), client.linked_peers());
            let waited = now.as_secs_f64();
            std::thread::spawn(move || {
                let _ = tx.send(JoinFailure::diagnose(&signal, &url, &ice, linked, waited));
            });
            self.asked = Some(rx);
        }
        if let Some(answer) = self.asked.as_ref().and_then(|rx| rx.try_recv().ok()) {
            bevy::log::warn!("could not join {}: {}", self.url, answer.reason);
            self.failure = Some(answer);
        }
    }
}

impl std::fmt::Debug for MatchState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatchState").field("title", &self.title).finish_non_exhaustive()
    }
}

impl MatchState {
    /// The hello of this build.
    pub fn hello(nickname: &str, password: Option<String>, spectator: bool) -> Hello {
        Hello { password, spectator, ..Hello::new(nickname, env!("CARGO_PKG_VERSION")) }
    }

    /// A match played through `node`, on the time base `clock` (the node thread's).
    pub fn new(node: NodeThread, clock: Instant, title: String) -> Self {
        MatchState {
            clock,
            node,
            stats_seen: ClientStats::default(),
            view: ClientView::default(),
            promoted: None,
            room: None,
            token_saved: None,
            title,
            interp: None,
            map: None,
            map_version: 0,
            panel: BTreeMap::new(),
            stat: StatView::default(),
            accolades: Default::default(),
            chat: VecDeque::new(),
            vote: None,
            banner: None,
            kills: Default::default(),
            tech: None,
            keyset: None,
            form: None,
            meta_refused: 0,
            map_error: None,
            map_warnings: None,
            note: None,
            sounds: Vec::new(),
            sample: Sample::default(),
            graph: NetGraph::default(),
            make_prediction: crate::PREDICTION,
            predictor: None,
            predictor_map: 0,
            predicted_to: Duration::ZERO,
            previous_render: None,
            local_shots: Vec::new(),
            seen_ms: None,
            last_divergence: None,
            migrations_seen: 0,
            host_banner: None,
            held: Vec::new(),
            aim: None,
            joining: None,
            shadow_said: false,
        }
    }

    /// Time since the match began.
    pub fn now(&self) -> Duration {
        self.clock.elapsed()
    }

    /// What the window reads of the player's client, as of the last [`Self::update`].
    pub fn client(&self) -> &ClientView {
        &self.view
    }

    /// How the link to the host goes, once known (never while this process hosts).
    pub fn host_path(&self) -> Option<LinkPath> {
        self.client().host_path()
    }

    /// This player's id, once welcomed.
    pub fn player_id(&self) -> Option<u32> {
        self.client().welcome().map(|w| w.player_id as u32)
    }

    /// The host's time now, ms (estimated from pings).
    pub fn server_now_ms(&self) -> Option<f64> {
        self.client().server_time_ms(self.now())
    }

    /// One turn at `now` (time since the match began, [`Self::now`] for the wall clock's):
    /// network in, meta applied, frames buffered, a fresh sample to draw. Everything it
    /// decides by time — banners, the join's timeout, prediction steps, the net graph — goes
    /// by `now`, so a test can drive it on its own clock.
    pub fn update(&mut self, now: Duration) {
        let net = self.node.take();
        self.view = self.node.view().clone();
        if let Some(joining) = self.joining.as_mut() {
            joining.update(&self.view, now);
        }
        // A host that stops hosting (a better claim, the players' vote) has its player follow
        // the new host; it may take the match over again one day, like any player.
        for change in &net.changes {
            bevy::log::info!("{change}");
            self.promoted = match change {
                RoleChange::Promoted { tick, epoch, .. } => Some((*tick, *epoch)),
                _ => None,
            };
            self.title = match change {
                RoleChange::Promoted { tick, epoch, .. } => {
                    format!("hosting (took the match over at tick {tick}, epoch {epoch})")
                }
                RoleChange::SteppedDown { .. } => "joined (another player took the match over first)".into(),
                RoleChange::Rejoined { .. } => "joined (the match went on without this host)".into(),
                RoleChange::HandedOff { voted: true, .. } => "joined (the players voted for another host)".into(),
                RoleChange::HandedOff { voted: false, .. } => "joined (the match was handed on)".into(),
            };
        }
        if self.view.shadowing() && !self.shadow_said {
            bevy::log::info!("shadowing the host (first checkpoint in)");
        }
        self.shadow_said = self.view.shadowing();
        let welcome = self.view.welcome().cloned();
        self.remember_token(now, welcome.as_ref());
        let stats = self.view.stats().clone();
        if stats.migrations > self.migrations_seen {
            self.migrations_seen = stats.migrations;
            let text = if self.promoted.is_some() { "host changed: you host the match now" } else { "host changed" };
            bevy::log::info!("{text} (epoch {})", stats.host_epoch);
            self.host_banner = Some((text.into(), now));
        }
        for note in net.notes {
            match note {
                HostNote::MapReloaded(label) => {
                    self.map_error = None;
                    self.map_warnings = None;
                    self.note = Some((format!("{label} reloaded"), now));
                }
                HostNote::MapWarnings(lines) => self.map_warnings = Some((lines.join("\n"), now)),
                HostNote::MapInvalid(errors) => self.map_error = Some(errors),
                HostNote::Reported(line) => self.note = Some((line, now)),
            }
        }
        if self.interp.is_none()
            && let Some(schema) = self.view.schema()
        {
            let config = self
                .view
                .config()
                .and_then(|c| serde_json::from_value::<InterpolationConfig>(c["engine"]["interpolation"].clone()).ok())
                .unwrap_or_default();
            self.interp = Some(Interpolator::new(schema.clone(), config));
        }
        for (port, payload) in net.meta {
            self.on_meta(port, &payload, now);
        }
        for line in net.chat {
            if let Ok(msg) = ChatMessage::from_json(line) {
                self.push_chat(msg, now);
            }
        }
        self.build_predictor(now, welcome.as_ref());
        let mut frames = net.frames;
        if let Some(p) = self.predictor.as_mut() {
            for frame in &mut frames {
                if let Some(c) = p.on_frame(frame)
                    && (c.distance > 1e-3 || c.snapped)
                {
                    self.graph.correction(now, c.distance);
                }
            }
            let dt = Duration::from_secs_f64(p.dt() as f64);
            while self.predicted_to + dt <= now {
                self.previous_render = p.render_state();
                p.step();
                self.predicted_to += dt;
            }
            self.local_shots.extend(p.take_tracers());
            let records = p.take_divergence();
            self.graph.divergences(now, records.len() as u32);
            if let Some(r) = records.last() {
                self.last_divergence = Some(r.clone());
            }
        }
        let server_now = self.client().server_time_ms(now);
        if let (Some(interp), Some(server_now)) = (self.interp.as_mut(), server_now) {
            for frame in frames {
                interp.push(frame, server_now);
            }
            self.sample = interp.sample(server_now);
            self.seen_ms = Some(self.sample.drawn_time_ms);
            if let Some(p) = self.predictor.as_mut() {
                p.seen(&self.sample);
            }
        }
        let before = std::mem::replace(&mut self.stats_seen, stats);
        let after = &self.stats_seen;
        self.graph.record(
            now,
            self.view.rtt_ms(),
            after.snapshots.saturating_sub(before.snapshots) as u32,
            after.bytes_in.saturating_sub(before.bytes_in),
            after.bytes_out.saturating_sub(before.bytes_out),
        );
        let carried = u32::try_from(self.client().rows_carried()).unwrap_or(u32::MAX);
        self.graph.delta(now, carried, after.delta_bytes.saturating_sub(before.delta_bytes));
        if let Some((_, at)) = &self.banner
            && now.saturating_sub(*at) > BANNER_TIME
        {
            self.banner = None;
        }
    }

    /// Keeps this player's token for the room on disk while it is in use (refreshed every
    /// [`TOKEN_REFRESH`]), so that the player can come back to the slot after a crash.
    fn remember_token(&mut self, now: Duration, welcome: Option<&vimp_netcode::session::Welcome>) {
        let (Some((room, tokens)), Some(welcome)) = (&self.room, welcome) else { return };
        if welcome.spectator
            || self.token_saved.is_some_and(|(t, at)| t == welcome.token && now.saturating_sub(at) < TOKEN_REFRESH)
        {
            return;
        }
        // A token that cannot be written only costs the shortcut back: the match goes on.
        let _ = tokens.remember(room, welcome.token, std::time::SystemTime::now());
        self.token_saved = Some((welcome.token, now));
    }

    /// Builds the predictor once the config, the map and the welcome are there, and
    /// again on every new map.
    fn build_predictor(&mut self, now: Duration, welcome: Option<&vimp_netcode::session::Welcome>) {
        if self.predictor_map == self.map_version {
            return;
        }
        let config = self.client().config().cloned();
        let (Some(config), Some(map), Some(welcome)) = (config.as_ref(), &self.map, welcome) else {
            return;
        };
        self.predictor_map = self.map_version;
        self.predictor = if self.watching(welcome) {
            None
        } else {
            (self.make_prediction)(config, map, PlayerId(welcome.player_id))
        };
        // The aim in force goes on in the new prediction, as it does on the host.
        if let (Some(p), Some((_, aim, seq))) = (self.predictor.as_mut(), self.aim) {
            p.aim(seq, aim);
        }
        self.predicted_to = now;
        self.sync_panel();
    }

    /// Whether the player watches: the host's key set, else the welcome's word.
    fn watching(&self, welcome: &vimp_netcode::session::Welcome) -> bool {
        self.keyset.map_or(welcome.spectator, |k| k == Keyset::Spectator)
    }

    /// Tells the prediction what the player's panel shows.
    fn sync_panel(&mut self) {
        if let Some(p) = self.predictor.as_mut() {
            p.panel(&self.panel);
        }
    }

    fn on_meta(&mut self, port: u8, payload: &[u8], now: Duration) {
        let message = match MetaMessage::decode(port, payload) {
            Ok(message) => message,
            Err(e) => {
                tracing::warn!("the host's meta on port {port} does not read: {e}");
                self.meta_refused += 1;
                return;
            }
        };
        match message {
            MetaMessage::Map(json) => match serde_json::from_value::<MapConfig>(json) {
                Ok(map) => {
                    self.map = Some(map);
                    self.map_version += 1;
                }
                Err(e) => {
                    tracing::warn!("the host's map does not read: {e}");
                    self.meta_refused += 1;
                }
            },
            MetaMessage::Clear(meta::Clear::All) => {
                if let Some(interp) = self.interp.as_mut() {
                    interp.clear();
                }
                self.sample = Sample::default();
            }
            MetaMessage::Clear(meta::Clear::Set(set)) => {
                let key = self.client().schema().and_then(|s| s.by_name(&set)).map(|b| b.id);
                if let (Some(interp), Some(key)) = (self.interp.as_mut(), key) {
                    interp.clear_key(key);
                }
            }
            // Playing or watching now: the prediction is built again (or dropped), and keys
            // held belong to the other set.
            MetaMessage::Keyset(keyset) if self.keyset.replace(keyset) != Some(keyset) => {
                self.predictor_map = 0;
                self.held.clear();
            }
            MetaMessage::AuthData(data) => self.form = Some(GameForm::new(data)),
            MetaMessage::AuthResult(AuthResult::Accepted) => self.form = None,
            MetaMessage::AuthResult(AuthResult::Rejected(errors)) => {
                if let Some(form) = self.form.as_mut() {
                    form.errors = errors;
                    form.waiting = false;
                }
            }
            MetaMessage::Panel(panel) => {
                for (key, value) in panel.0 {
                    match value {
                        Some(v) => self.panel.insert(key, v),
                        None => self.panel.remove(&key),
                    };
                }
                self.sync_panel();
            }
            MetaMessage::Stat(update) => self.stat.apply(&update),
            MetaMessage::Accolades(accolades) => self.accolades = accolades,
            MetaMessage::Vote(vote) => self.vote = Some(vote),
            MetaMessage::GameInform(inform) if inform.code == GameInform::FRAG => {
                let id = |i: usize| inform.params.as_ref().and_then(|p| p.get(i)).and_then(serde_json::Value::as_u64);
                if let (Some(killer), Some(victim)) = (id(0), id(1)) {
                    self.kills.push_back(Kill { killer: killer as u32, victim: victim as u32, at: now });
                    while self.kills.len() > KILL_FEED {
                        self.kills.pop_front();
                    }
                }
            }
            MetaMessage::GameInform(inform) => self.banner = Some((inform, now)),
            MetaMessage::TechInform(TechInform::Hide) => self.tech = None,
            MetaMessage::TechInform(t) => self.tech = Some(t),
            MetaMessage::Sound(s) => self.sounds.push(s.0),
            _ => {}
        }
    }

    fn push_chat(&mut self, msg: ChatMessage, at: Duration) {
        let line = match msg {
            ChatMessage::User { text, author, team } => ChatLine { author: Some(author), to: None, team, text, at },
            ChatMessage::Personal { text, author, team, to } => {
                ChatLine { author: Some(author), to: Some(to), team, text, at }
            }
            system @ ChatMessage::System { .. } => {
                ChatLine { author: None, to: None, team: 0, text: system_text(&system), at }
            }
        };
        if self.chat.len() == CHAT_LINES {
            self.chat.pop_front();
        }
        self.chat.push_back(line);
    }

    /// Presses or releases the key of `action`; returns the input seq sent.
    pub fn key(&mut self, action: KeyAction, name: &str) -> Option<u32> {
        match action {
            KeyAction::Down if !self.held.iter().any(|h| h == name) => self.held.push(name.to_owned()),
            KeyAction::Up => self.held.retain(|h| h != name),
            _ => {}
        }
        let owned = name.to_owned();
        let seen = self.seen_ms;
        let seq = self.with_client(move |c| c.key_seen(action, &owned, seen)).flatten()?;
        if let Some(p) = self.predictor.as_mut() {
            p.key(seq, action, name);
        }
        Some(seq)
    }

    /// Aims the pointer at a world point, or lets go of the aim (`None`): sent to the host and
    /// applied to the prediction with its seq, like a key. Nothing is sent for an aim that
    /// says what the last one said, for one at a point sooner than [`AIM_INTERVAL`] after the
    /// last (call again with the pointer's newest point: the latest aim wins), or to a host
    /// that does not take aims ([`ClientCore::aim`]). Returns the seq sent.
    pub fn aim(&mut self, aim: Option<Aim>) -> Option<u32> {
        let now = self.now();
        let last = self.aim;
        if last.map_or(aim.is_none(), |(_, a, _)| a == aim)
            || aim.is_some() && last.is_some_and(|(at, ..)| now.saturating_sub(at) < AIM_INTERVAL)
        {
            return None;
        }
        let seq = self.with_client(move |c| c.aim(now, aim)).flatten()?;
        self.aim = Some((now, aim, seq));
        if let Some(p) = self.predictor.as_mut() {
            p.aim(seq, aim);
        }
        Some(seq)
    }

    /// The aim last sent, while there is one.
    pub fn aiming(&self) -> Option<Aim> {
        self.aim.and_then(|(_, aim, _)| aim)
    }

    /// Releases every held key (the window lost focus, or a text field took the keyboard).
    pub fn release_all(&mut self) -> Vec<(String, Option<u32>)> {
        let held = std::mem::take(&mut self.held);
        held.into_iter().map(|name| (name.clone(), self.key(KeyAction::Up, &name))).collect()
    }

    /// Says a chat line (or a command); `Err` says why it cannot be sent.
    pub fn say(&mut self, text: &str) -> Result<(), meta::MetaError> {
        let text = ChatText::parse(text)?;
        let payload = ClientMeta::Chat(text).encode();
        self.with_client(move |c| c.send_meta(meta::CHAT, &payload));
        Ok(())
    }

    /// Sends the game's form as filled in; the host answers with `AUTH_RESULT`.
    pub fn submit_form(&mut self) {
        let Some(form) = self.form.as_mut() else { return };
        form.waiting = true;
        form.errors.clear();
        let payload = ClientMeta::AuthResponse(form.answer()).encode();
        self.with_client(move |c| c.send_meta(meta::AUTH_RESPONSE, &payload));
    }

    /// Answers the vote asked.
    pub fn answer_vote(&mut self, value: serde_json::Value) {
        if let Some(vote) = self.vote.take() {
            let answer = ClientMeta::Vote(VoteAnswer::Pick { name: vote.name, value });
            let payload = answer.encode();
            self.with_client(move |c| c.send_meta(meta::VOTE, &payload));
        }
    }

    /// Asks the host for a list to vote on (`teams` or `maps`).
    pub fn request_vote(&mut self, list: ListRequest) {
        let payload = ClientMeta::Vote(VoteAnswer::Request(list)).encode();
        self.with_client(move |c| c.send_meta(meta::VOTE, &payload));
    }

    /// The choices of the vote asked.
    pub fn vote_choices(&self) -> Vec<serde_json::Value> {
        match self.vote.as_ref().and_then(|v| v.values.as_ref()) {
            Some(VoteValues::List(values)) => values.clone(),
            _ => Vec::new(),
        }
    }

    /// The player's own actor's predicted state, when a prediction runs.
    ///
    /// Steps are 1/120 s and frames come whenever the display wants them, so the drawn
    /// state is blended between the last two steps by how far into the next step the
    /// frame falls (one step behind the prediction, never ahead of it).
    pub fn local_tank(&self) -> Option<[f32; 8]> {
        let p = self.predictor.as_ref()?;
        let now = p.render_state()?;
        let Some(before) = self.previous_render else { return Some(now) };
        if (now[0] - before[0]).hypot(now[1] - before[1]) > 50.0 {
            return Some(now); // a respawn: no sliding across the map
        }
        let into = self.now().saturating_sub(self.predicted_to).as_secs_f32() / p.dt();
        Some(blend_state(before, now, into.clamp(0.0, 1.0)))
    }

    /// The level the player's own actor stands on and its height above it, as predicted (see
    /// [`LocalPrediction::render_level`]).
    pub fn local_level(&self) -> Option<(u8, f32)> {
        self.predictor.as_ref()?.render_level()
    }

    /// Tracers this client fired since the last look, `(from, to)`, drawn at once (the
    /// host's copies of them are dropped from the frames).
    pub fn take_local_shots(&mut self) -> Vec<([f32; 2], [f32; 2])> {
        std::mem::take(&mut self.local_shots)
    }

    /// Leaves the match (the node thread stops, handing off a match it hosts, when this is
    /// dropped).
    pub fn leave(&mut self) {
        self.node.leave();
    }

    /// Calls the `@changeHost` vote (see [`ClientCore::call_change_host`]).
    pub fn call_change_host(&mut self) -> Option<u32> {
        self.with_client(ClientCore::call_change_host).flatten()
    }

    /// Answers the `@changeHost` vote (see [`ClientCore::answer_change_host`]).
    pub fn answer_change_host(&mut self, yes: bool) -> bool {
        self.with_client(move |c| c.answer_change_host(yes)).unwrap_or(false)
    }

    /// Runs `f` on the player's client, on the node thread, at once (its frames go out then).
    fn with_client<R: Send + 'static>(&self, f: impl FnOnce(&mut ClientCore) -> R + Send + 'static) -> Option<R> {
        self.node.with_node(move |node| node.client_mut().map(f)).flatten()
    }
}

/// Blends two tank states: positions and velocities linearly, angles the short way round.
pub fn blend_state(a: [f32; 8], b: [f32; 8], t: f32) -> [f32; 8] {
    use vimp_netcode::interp::{lerp, lerp_angle};
    let mut out = [0.0; 8];
    for i in 0..8 {
        out[i] = if i == 2 || i == 6 { lerp_angle(a[i], b[i], t) } else { lerp(a[i], b[i], t) };
    }
    out
}

/// The text of a system chat line: the engine's English for its groups, else the line as it came.
pub fn system_text(line: &ChatMessage) -> String {
    if let Some(text) = line.engine_text() {
        return text;
    }
    match line {
        ChatMessage::System { group, code, params } if params.is_empty() => format!("{group}:{code}"),
        ChatMessage::System { group, code, params } => format!("{group}:{code}: {}", params.join(", ")),
        ChatMessage::User { text, .. } | ChatMessage::Personal { text, .. } => text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_starts_at_its_values_and_answers_numbers_where_the_param_says() {
        let param = |name: &str, value, options| meta::AuthParam { name: name.into(), value, options };
        let data = AuthData {
            elems: serde_json::json!({}),
            params: vec![
                param("nick", serde_json::json!("ann"), serde_json::json!({})),
                param("age", serde_json::Value::Null, serde_json::json!({ "numeric": true })),
                param("seat", serde_json::json!(3), serde_json::json!({})),
            ],
            texts: None,
        };
        let mut form = GameForm::new(data);
        let shown: Vec<&str> = form.values.values().map(String::as_str).collect();
        assert_eq!(shown, ["", "ann", "3"], "by name: age, nick, seat");
        form.values.insert("age".into(), " 30 ".into());
        let answer = serde_json::Value::Object(form.answer().0);
        assert_eq!(answer, serde_json::json!({ "nick": "ann", "age": 30.0, "seat": "3" }));
        form.values.insert("age".into(), "old".into());
        assert_eq!(form.answer().0["age"], serde_json::json!("old"), "the host says what is wrong with it");
    }

    #[test]
    fn system_lines_read_in_english_and_a_game_s_as_they_came() {
        let line = |json: &str| ChatMessage::from_json(serde_json::from_str(json).expect("json")).expect("a line");
        assert_eq!(system_text(&line(r#""c:1:bob""#)), "no player named bob");
        assert_eq!(system_text(&line(r#""s:4:ann""#)), "ann is watching");
        assert_eq!(system_text(&line(r#""b:3:ann,bob""#)), "b:3: ann, bob");
    }

    #[test]
    fn blending_goes_the_short_way_round_and_hits_both_ends() {
        let pi = std::f32::consts::PI;
        let a = [0.0, 10.0, pi - 0.1, 1.0, 0.0, 0.0, -pi + 0.1, 0.5];
        let b = [10.0, 20.0, -pi + 0.1, 3.0, 0.0, 0.0, pi - 0.1, 1.0];
        assert_eq!(blend_state(a, b, 0.0), a);
        let end = blend_state(a, b, 1.0);
        for i in [0, 1, 3, 7] {
            assert_eq!(end[i], b[i]);
        }
        let mid = blend_state(a, b, 0.5);
        assert_eq!((mid[0], mid[1], mid[3], mid[7]), (5.0, 15.0, 2.0, 0.75));
        assert!(mid[2].abs() > pi - 0.01, "through ±π, not through 0: {}", mid[2]);
        assert!(mid[6].abs() > pi - 0.01, "{}", mid[6]);
    }
}
