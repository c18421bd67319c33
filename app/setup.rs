//! What the window and the headless commands share: the default rendezvous, the flags of
//! several commands (ICE servers, `--bot-skill`, `--frames`/`--screenshot`), the client's
//! settings, a new match, the wait after a handoff, why a join did not get in, and dialing a
//! dropped player back in.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use vimp_host::engine::game::{BotSkill, Game};
use vimp_host::engine::node::Node;
use vimp_host::{Host, HostCommand, PlayerId};
use vimp_netcode::client::reconnect::{ATTEMPT_TIMEOUT, RECONNECT_DELAYS, Reconnect, Redial, is_drop};
use vimp_netcode::client::{ClientConfig, Witness};
use vimp_netcode::lobby::LobbyCode;
use vimp_netcode::session::close;
use vimp_netcode::signal::IceServer;
use vimp_netcode::transport::Transport;
use vimp_netcode::transport::webrtc::WebRtcTransport;

/// Where a player's identity is kept by default: `identity.json` beside the settings.
pub fn identity_path() -> Option<PathBuf> {
    crate::window::settings::settings_path().map(|p| p.with_file_name("identity.json"))
}

/// The tokens of the player `identity` (a file; the default one when `None`) for `room` at the
/// rendezvous `signal`, fetched beside the join; `None` when the player plays unverified
/// (`unverified`, or no identity could be made: said why).
pub fn token_source(
    signal: &str,
    room: &LobbyCode,
    identity: Option<&std::path::Path>,
    nickname: &str,
    unverified: bool,
) -> Option<vimp_netcode::identity::TokenSource> {
    if unverified {
        return None;
    }
    let path = identity.map(std::path::Path::to_path_buf).or_else(identity_path)?;
    match vimp_netcode::identity::Identity::load_or_create(&path) {
        Ok((identity, made)) => {
            if made {
                eprintln!("made this player's identity (key {}) in {}", identity.public_key(), path.display());
            }
            Some(vimp_netcode::identity::TokenSource::start(signal, room.as_str(), identity, nickname))
        }
        Err(e) => {
            eprintln!("playing unverified: no identity: {e}");
            None
        }
    }
}

/// What a host checks its players' tokens against: the keys of the rendezvous at `signal`,
/// for the room `code`; `None` (said why) when it serves no identities.
pub fn host_identities(signal: &str, code: &LobbyCode) -> Option<vimp_host::engine::roster::Identities> {
    match vimp_netcode::identity::fetch_token_keys(signal) {
        Ok(keys) => {
            println!("players' tokens are checked against the rendezvous's keys (issuer {:?})", keys.issuer);
            Some(vimp_host::engine::roster::Identities { keys, room: code.as_str().to_owned() })
        }
        Err(why) => {
            println!("players play unverified: {why}");
            None
        }
    }
}

/// A host's fetches of its verified players' places in the global top: when they change, a
/// few seconds after each round's end, and every minute, on a thread beside the match; the
/// answer goes to the server, which tells every client (`ACCOLADES_DATA`).
pub struct Places {
    signal: String,
    asked: Vec<String>,
    next_at: std::time::Instant,
    /// When the verified players were looked at last (a node turns every millisecond).
    looked_at: Option<std::time::Instant>,
    pending: Option<std::sync::mpsc::Receiver<Result<std::collections::BTreeMap<String, u64>, String>>>,
    /// The server's round ends when they were looked at last.
    rounds_seen: u64,
}

impl Places {
    /// How often places are asked for again when nothing changed.
    const EVERY: Duration = Duration::from_secs(60);

    /// How often the verified players are looked at for a change.
    const LOOK: Duration = Duration::from_secs(1);

    /// How long after a round's end places are asked for again: the time its players' reports
    /// take to reach the rendezvous and record it.
    const AFTER_ROUND: Duration = Duration::from_secs(5);

    /// Fetches from the rendezvous at `signal`.
    pub fn new(signal: &str) -> Places {
        Places {
            signal: signal.to_owned(),
            asked: Vec::new(),
            next_at: std::time::Instant::now(),
            looked_at: None,
            pending: None,
            rounds_seen: 0,
        }
    }

    /// A host's fetches when it checks its players' tokens (one that took a match over from
    /// a host that did), from the rendezvous at `signal` (none: only those made already):
    /// made once, on the first turn that hosts.
    pub fn turn_lazily(
        places: &mut Option<Places>,
        signal: Option<&str>,
        server: &mut vimp_host::engine::server::ServerCore,
    ) {
        if let Some(signal) = signal
            && places.is_none()
            && server.roster().checks_tokens()
        {
            *places = Some(Places::new(signal));
        }
        if let Some(places) = places {
            places.turn(server);
        }
    }

    /// A turn: hands the server what came, asks again when due.
    pub fn turn(&mut self, server: &mut vimp_host::engine::server::ServerCore) {
        if let Some(rx) = &self.pending {
            match rx.try_recv() {
                Ok(Ok(places)) => {
                    server.set_places(places);
                    self.pending = None;
                }
                Ok(Err(why)) => {
                    tracing::debug!("the players' places: {why}");
                    self.pending = None;
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => return,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => self.pending = None,
            }
        }
        if self.pending.is_some() || self.looked_at.is_some_and(|at| at.elapsed() < Self::LOOK) {
            return;
        }
        self.looked_at = Some(std::time::Instant::now());
        if server.rounds_ended() > self.rounds_seen {
            // A round ended: its players' places change once the rendezvous records it.
            self.rounds_seen = server.rounds_ended();
            self.next_at = self.next_at.min(std::time::Instant::now() + Self::AFTER_ROUND);
        }
        let keys = server.verified_keys();
        if keys.is_empty() || (keys == self.asked && std::time::Instant::now() < self.next_at) {
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (signal, asked) = (self.signal.clone(), keys.clone());
        if std::thread::Builder::new()
            .name("vimp-places".into())
            .spawn(move || {
                let _ = tx.send(vimp_netcode::identity::fetch_places(&signal, &asked));
            })
            .is_ok()
        {
            self.pending = Some(rx);
        }
        self.asked = keys;
        self.next_at = std::time::Instant::now() + Self::EVERY;
    }
}

/// One line on what the rendezvous said of a round report.
pub fn report_line(round: &str, answer: &Result<vimp_netcode::identity::ReportAnswer, String>) -> String {
    use vimp_netcode::identity::ReportAnswer;
    match answer {
        Ok(a) if a.recorded => {
            format!("round {round}: recorded in the global top (signed by {}, {} needed)", a.signed, a.needed)
        }
        Ok(ReportAnswer { signed, needed, homes_signed: Some(at), homes: Some(of), .. }) if signed >= needed => {
            format!(
                "round {round}: reported (signed by {signed}, {needed} needed, but from {at} of the players' {of} homes: a majority of them must sign)"
            )
        }
        Ok(a) => format!("round {round}: reported (signed by {} so far, {} needed)", a.signed, a.needed),
        Err(why) => format!("round {round}: not reported: {why}"),
    }
}

/// Sends `token`, one of `tokens`', to the host as the engine's `AUTH_RESPONSE {"token": …}`:
/// from now on the client checks the round ends it hears for `tokens`' key.
pub fn send_token(
    client: &mut vimp_netcode::client::ClientCore,
    tokens: &vimp_netcode::identity::TokenSource,
    token: &str,
) {
    let answer = serde_json::json!({ vimp_host::engine::auth::TOKEN_FIELD: token }).to_string();
    client.send_meta(vimp_netcode::meta::AUTH_RESPONSE, answer.as_bytes());
    client.set_identity_key(Some(tokens.public_key().to_string()));
}

/// The round ends `client` heard since the last call: each that agrees with its scoreboard
/// signed and sent to the rendezvous (`TokenSource::report`); why each other was not, said on
/// stderr and returned.
pub fn report_rounds(
    client: &mut vimp_netcode::client::ClientCore,
    tokens: &mut vimp_netcode::identity::TokenSource,
) -> Vec<String> {
    let mut refused = Vec::new();
    while let Some(heard) = client.take_round() {
        match heard {
            Ok(results) => tokens.report(results),
            Err(why) => {
                eprintln!("a round's results not signed: {why}");
                refused.push(why.to_string());
            }
        }
    }
    refused
}

/// The signalling server used when none is named.
pub const DEFAULT_SIGNAL: &str = "ws://127.0.0.1:3536";

/// ICE servers from flags (none by default: no third-party server is contacted unless named).
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct IceArgs {
    /// A STUN server (repeatable), e.g. `stun:stun.example.net:3478`.
    #[arg(long = "stun", value_name = "URL")]
    pub stun: Vec<String>,
    /// A TURN server (repeatable).
    #[arg(long = "turn", value_name = "URL")]
    pub turn: Vec<String>,
    /// The TURN user name.
    #[arg(long, requires = "turn")]
    pub turn_user: Option<String>,
    /// The TURN password.
    #[arg(long, requires = "turn")]
    pub turn_pass: Option<String>,
}

/// The environment variable with more ICE servers, as JSON: `[{"urls": ["stun:…"]}, …]`.
pub const ICE_ENV: &str = "VIMP_ICE_SERVERS";

/// How a socket in a room gets its ICE servers ([`IceArgs::fetching`]): given the room URL
/// with the socket's key, the whole list.
pub type IceFetch = Arc<dyn Fn(&str) -> Vec<IceServer> + Send + Sync>;

impl IceArgs {
    /// The ICE servers for a socket in a room at the rendezvous `signal`: these flags, then
    /// `VIMP_ICE_SERVERS` (`known`, checked now), and a fetch that adds what the rendezvous hands
    /// the room member the socket's key names (TURN credentials are minted for members alone),
    /// for [`WebRtcTransport::connect_fetching_in`]: it runs the fetch while the websocket
    /// connects, and again while minted credentials are renewed. None of them by default.
    pub fn fetching(&self, signal: &str) -> anyhow::Result<(Vec<IceServer>, IceFetch)> {
        let known = self.known()?;
        WebRtcTransport::check_ice_servers(&known)?;
        let (signal, kept) = (signal.to_owned(), known.clone());
        let fetch = move |keyed: &str| {
            let fetched = fetch_ice(&signal, Some(keyed), kept.len());
            let all: Vec<_> = kept.iter().chain(&fetched).cloned().collect();
            match WebRtcTransport::check_ice_servers(&all) {
                Ok(()) => all,
                Err(e) => {
                    eprintln!("note: {e}; going on without the rendezvous's ICE servers");
                    kept.clone()
                }
            }
        };
        Ok((known, Arc::new(fetch)))
    }

    /// The ICE servers named here: these flags, then `VIMP_ICE_SERVERS`.
    pub fn known(&self) -> anyhow::Result<Vec<IceServer>> {
        let mut out = self.servers();
        if let Ok(json) = std::env::var(ICE_ENV) {
            let more: Vec<IceServer> =
                serde_json::from_str(&json).with_context(|| format!("{ICE_ENV} is not a JSON list of ICE servers"))?;
            out.extend(more);
        }
        Ok(out)
    }

    /// These flags' servers, then `more`'s.
    pub fn then(&self, more: &IceArgs) -> IceArgs {
        let mut all = self.clone();
        all.stun.extend(more.stun.iter().cloned());
        all.turn.extend(more.turn.iter().cloned());
        all.turn_user = all.turn_user.or_else(|| more.turn_user.clone());
        all.turn_pass = all.turn_pass.or_else(|| more.turn_pass.clone());
        all
    }

    /// The ICE servers these flags name.
    pub fn servers(&self) -> Vec<IceServer> {
        let mut out = Vec::new();
        if !self.stun.is_empty() {
            out.push(IceServer { urls: self.stun.clone(), ..IceServer::default() });
        }
        if !self.turn.is_empty() {
            out.push(IceServer {
                urls: self.turn.clone(),
                username: self.turn_user.clone(),
                credential: self.turn_pass.clone(),
            });
        }
        out
    }
}

/// The ICE servers the signalling server at `signal` hands out, to the member of the room that
/// `room_url`'s key names (`?key=`) if it names one; none, with a note, if it does not answer
/// (`known` servers are there beside them).
pub fn fetch_ice(signal: &str, room_url: Option<&str>, known: usize) -> Vec<IceServer> {
    let fetched = match room_url.and_then(vimp_netcode::signal::room_key) {
        // The rendezvous waits up to 3 s for the member's socket to be in the room.
        Some((room, key)) => vimp_netcode::signal::fetch_ice_in(signal, room, key, Duration::from_secs(6)),
        None => vimp_netcode::signal::fetch_ice(signal, Duration::from_secs(3)),
    };
    match fetched {
        Ok(list) => list.ice_servers,
        Err(e) => {
            eprintln!("note: {e}; going on with {known} ICE server(s)");
            Vec::new()
        }
    }
}

/// How long a host that handed the match off keeps its links open, so that what it put on
/// them (the last log, the final checkpoint, the handoff) gets out before the process ends.
const HANDOFF_LINGER: Duration = Duration::from_millis(300);

/// Waits for [`HANDOFF_LINGER`] with the links still open.
pub(crate) fn linger() {
    std::thread::sleep(HANDOFF_LINGER);
}

/// The longest a player's process that handed the match off waits for the successor to take it.
const HANDOFF_WAIT: Duration = Duration::from_secs(2);

/// After a player's process handed the match off ([`Node::hand_off`]): keeps its links going
/// until the successor's claim is heard (the process's own client follows a host again) or
/// [`HANDOFF_WAIT`] passed, then [`linger`]s. On a lossy line a `HANDOFF` lost once goes again
/// only after SCTP's retransmission timeout, later than a fixed linger: the process would be
/// gone, its links with it, and every successor would claim on its own, at the same epoch.
/// `now` is the node's clock.
pub(crate) fn await_successor<T: Transport>(node: &mut Node<T>, now: impl Fn() -> Duration) {
    let until = now() + HANDOFF_WAIT;
    while node.client().is_some_and(|c| c.host_peer().is_none()) && now() < until {
        node.update(now());
        std::thread::sleep(Duration::from_millis(1));
    }
    linger();
}

/// The client's settings with a host timeout of `host_timeout_ms`.
pub fn client_config(host_timeout_ms: u64) -> ClientConfig {
    ClientConfig { host_timeout: Duration::from_millis(host_timeout_ms.max(1)), ..ClientConfig::default() }
}

/// A match of `game` on the map file `map` with `bots` bots of `skill` joined and one tick stepped
/// (rounds of `round_seconds` when given); with its config.
pub fn new_match(
    game: &Game,
    map: &std::path::Path,
    bots: u8,
    skill: BotSkill,
    seed: u64,
    round_seconds: Option<f32>,
) -> anyhow::Result<(Host, vimp_host::InitConfig)> {
    let mut config = (game.init_config)(seed, skill);
    if let Some(seconds) = round_seconds {
        config.game["rounds"]["roundSeconds"] = serde_json::json!(seconds);
    }
    let label = map.display().to_string();
    let text = crate::shipped::read_map(map).with_context(|| format!("reading {label}"))?;
    let mut host = Host::new(config.clone(), *game)?;
    host.load_map_json(&label, &text)?;
    for i in 0..bots {
        host.push(HostCommand::Join { player: PlayerId(i), name: format!("bot{}", i + 1), team: None, bot: true });
    }
    host.step();
    Ok((host, config))
}

/// The maps of `--vote-map` flags, read and checked.
pub fn load_vote_maps(paths: &[PathBuf]) -> anyhow::Result<Vec<vimp_host::engine::map::MapConfig>> {
    paths
        .iter()
        .map(|path| {
            let label = path.display().to_string();
            let text = crate::shipped::read_map(path).with_context(|| format!("reading {label}"))?;
            Ok(vimp_host::engine::map::MapConfig::from_json(&label, &text)?)
        })
        .collect()
}

/// `vimp join`'s exit code when the signalling server cannot be reached or is lost before the
/// welcome.
pub const UNREACHABLE: i32 = 3;

/// `vimp join`'s exit code when no host welcomed us within `--join-timeout`: no host in the
/// room, or linked but not welcomed.
pub const TIMED_OUT: i32 = 4;

/// `vimp join`'s exit code when the room has a host but no network path to it was found
/// within `--join-timeout` (strict NATs on both sides and no TURN relay that gets through).
pub const NO_PATH: i32 = 5;

/// `vimp join`'s exit code when the host refused us (a `REJECT`, or a close before any
/// welcome): a wrong password, a full server, another protocol version; the host's reason is
/// said.
pub const REFUSED: i32 = 6;

/// Why a join got no welcome in time, and the exit code that says so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JoinFailure {
    /// [`UNREACHABLE`], [`TIMED_OUT`], [`NO_PATH`] or [`REFUSED`].
    pub code: i32,
    /// What to tell the player.
    pub reason: String,
}

impl JoinFailure {
    /// The host refused us with close `code` and its `reason`.
    pub fn refused(code: u16, reason: &str) -> JoinFailure {
        JoinFailure { code: REFUSED, reason: format!("the host refused us: {reason} ({code})") }
    }

    /// Works out why: linked to a peer but not welcomed; or, asking the signalling server
    /// `signal` who is in the room of `room_url` (`GET /rooms/CODE`, `vimp signal` only), no
    /// host there, or a host with no network path to it (`ice`: were we given a TURN relay?).
    pub fn diagnose(signal: &str, room_url: &str, ice: &[IceServer], linked: usize, waited_s: f64) -> JoinFailure {
        let room = room_url.rsplit_once('/').map_or(room_url, |(_, room)| room);
        let code = LobbyCode::parse(room).map_or_else(|_| room.to_owned(), |c| c.grouped());
        let timed_out = |reason: String| JoinFailure { code: TIMED_OUT, reason };
        if linked > 0 {
            return timed_out(format!("linked to room {code}, but no host welcomed us in {waited_s:.0} s"));
        }
        match vimp_netcode::signal::fetch_room(signal, room, Duration::from_secs(2)) {
            // We are one of them.
            Ok(info) if info.peers <= 1 => {
                timed_out(format!("no host in room {code}: check the code (or the host has left)"))
            }
            Ok(_) => {
                let relayed =
                    ice.iter().flat_map(|s| &s.urls).any(|u| u.starts_with("turn:") || u.starts_with("turns:"));
                let reason = if relayed {
                    format!(
                        "room {code} has a host, but no network path to it was found in {waited_s:.0} s, not even \
                         through the TURN relay (can it be reached on UDP 3478 and its relay ports?)"
                    )
                } else {
                    format!(
                        "room {code} has a host, but no network path to it was found in {waited_s:.0} s: both sides \
                         are behind strict NATs, and a TURN relay is needed (the rendezvous hands out none: \
                         `vimp signal --turn URL` with VIMP_TURN_SECRET)"
                    )
                };
                JoinFailure { code: NO_PATH, reason }
            }
            Err(_) => timed_out(format!(
                "no peer of room {code} could be reached in {waited_s:.0} s: no host in the room (check the code), \
                 or no network path to it (behind strict NATs on both sides a TURN relay is needed)"
            )),
        }
    }
}

/// Tells at once that a join's room has no host, rather than when the join's time is up: once
/// the joiner's socket is in the room and linked to nobody, the rendezvous is asked who else is
/// there, half a second in and again two seconds in (a host's socket that was joining the room
/// again meanwhile is there by then); nobody both times is a wrong code, or a host that left.
#[derive(Debug)]
pub struct EmptyRoom {
    signal: String,
    room_url: String,
    /// When the socket was first seen in the room.
    since: Option<std::time::Instant>,
    /// The answers of the questions asked: whether anyone else is in the room.
    asked: Vec<std::sync::mpsc::Receiver<Option<bool>>>,
    answers: Vec<Option<bool>>,
}

impl EmptyRoom {
    /// When each question is asked, after the socket came into the room.
    const ASK_AT: [Duration; 2] = [Duration::from_millis(500), Duration::from_secs(2)];

    /// Watches the join of the room at `room_url` through the rendezvous `signal`.
    pub fn new(signal: &str, room_url: &str) -> EmptyRoom {
        EmptyRoom {
            signal: signal.to_owned(),
            room_url: room_url.to_owned(),
            since: None,
            asked: Vec::new(),
            answers: Vec::new(),
        }
    }

    /// One turn: `in_room`, the socket has its id in the room; `linked`, peers linked. The
    /// failure to say once both answers said nobody else is there.
    pub fn turn(&mut self, in_room: bool, linked: usize) -> Option<JoinFailure> {
        if !in_room || linked > 0 || self.answers.len() == Self::ASK_AT.len() {
            return None;
        }
        let since = *self.since.get_or_insert_with(std::time::Instant::now);
        if let Some(&at) = Self::ASK_AT.get(self.asked.len())
            && since.elapsed() >= at
        {
            let (tx, rx) = std::sync::mpsc::channel();
            let (server, room) = (self.signal.clone(), self.room_url.clone());
            let room = room.rsplit_once('/').map_or(room.as_str(), |(_, r)| r).to_owned();
            let _ = std::thread::Builder::new().name("vimp-room".into()).spawn(move || {
                let info = vimp_netcode::signal::fetch_room(&server, &room, Duration::from_secs(2)).ok();
                // Anyone but this socket (a server that lists no members counts heads).
                let _ = tx.send(info.map(|i| i.peers > 1));
            });
            self.asked.push(rx);
        }
        for rx in &self.asked[self.answers.len()..] {
            match rx.try_recv() {
                Ok(answer) => self.answers.push(answer),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => self.answers.push(None),
                Err(std::sync::mpsc::TryRecvError::Empty) => break,
            }
        }
        let empty = self.answers.len() == Self::ASK_AT.len() && self.answers.iter().all(|a| *a == Some(false));
        empty.then(|| {
            let room = self.room_url.rsplit_once('/').map_or(self.room_url.as_str(), |(_, r)| r);
            let code = LobbyCode::parse(room).map_or_else(|_| room.to_owned(), |c| c.grouped());
            JoinFailure {
                code: TIMED_OUT,
                reason: format!("no host in room {code}: check the code (or the host has left)"),
            }
        })
    }
}

/// A fresh transport into the match's room, for each reconnection attempt.
pub type Dial = Box<dyn FnMut() -> anyhow::Result<Box<dyn Transport>> + Send>;

/// One reconnection, as the JSON report and the window tell it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Redialed {
    /// The close code of the drop.
    pub code: u16,
    /// Its reason.
    pub reason: String,
    /// When the session dropped, ms since the start.
    pub dropped_at_ms: f64,
    /// From the drop to the host's welcome, ms (`None`: not back).
    pub back_after_ms: Option<f64>,
    /// Attempts made.
    pub attempts: u32,
}

/// What a reconnection did on a turn, to say.
#[derive(Clone, Debug, PartialEq)]
pub enum RedialNote {
    /// The session dropped; dialing again.
    Dropped {
        /// The close code.
        code: u16,
        /// Its reason.
        reason: String,
    },
    /// An attempt started.
    Dialing {
        /// Which (1-based).
        attempt: u8,
    },
    /// An attempt failed.
    Failed {
        /// Which.
        attempt: u8,
        /// Why.
        why: String,
    },
    /// Back in the match.
    Back {
        /// From the drop to the welcome.
        after: Duration,
        /// The attempt that got in.
        attempt: u8,
    },
    /// Every attempt failed.
    GaveUp,
}

impl std::fmt::Display for RedialNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let of = RECONNECT_DELAYS.len();
        match self {
            RedialNote::Dropped { code, reason } => {
                write!(f, "the link to the match dropped ({reason}, {code}): reconnecting")
            }
            RedialNote::Dialing { attempt } => write!(f, "reconnecting: attempt {attempt} of {of}"),
            RedialNote::Failed { attempt, why } => write!(f, "reconnection attempt {attempt} failed: {why}"),
            RedialNote::Back { after, attempt } => {
                write!(f, "back in the match after {:.0} ms (attempt {attempt})", after.as_secs_f64() * 1000.0)
            }
            RedialNote::GaveUp => write!(f, "can't connect: {of} reconnection attempts failed"),
        }
    }
}

/// Dials a dropped player back into its match (see [`vimp_netcode::client::reconnect`]): at
/// once, then 2, 10 and 30 s after each failed attempt, each with a fresh transport from
/// `dial` and the slot's token; then it gives up until [`Redialer::retry`]. The headless
/// client and the window's node thread run one each turn.
pub struct Redialer {
    dial: Dial,
    now: Option<Reconnect>,
    /// Every reconnection so far, the one under way last.
    pub history: Vec<Redialed>,
}

impl std::fmt::Debug for Redialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redialer").field("now", &self.now).field("history", &self.history).finish_non_exhaustive()
    }
}

impl Redialer {
    /// Reconnects with transports from `dial`.
    pub fn new(dial: Dial) -> Self {
        Redialer { dial, now: None, history: Vec::new() }
    }

    /// Where the reconnection under way stands (`None`: none, or it is back).
    pub fn state(&self) -> Option<Redial> {
        self.now.as_ref().map(Reconnect::state)
    }

    /// Whether every attempt failed: the client is done unless the player retries.
    pub fn gave_up(&self) -> bool {
        matches!(self.state(), Some(Redial::GaveUp { .. }))
    }

    /// After giving up: one more round of attempts from `now`.
    pub fn retry(&mut self, now: Duration) {
        if let Some(r) = self.now.as_mut() {
            r.retry(now);
        }
    }

    /// A turn at `now`, after the node's: notices a drop, starts an attempt when due, tells
    /// a failed one (no welcome within its time, a transport that failed, or a close; a close
    /// that is not a drop gives up at once) and the way back in.
    pub fn turn(&mut self, node: &mut Node<Box<dyn Transport>>, now: Duration) -> Vec<RedialNote> {
        let mut notes = Vec::new();
        let Some(client) = node.client() else { return notes };
        if node.is_hosting() {
            return notes;
        }
        let Some(redial) = self.now.as_mut() else {
            // A drop after the welcome, or a join the host closed for want of a hello (its
            // link came up broken one way: a fresh one is the cure).
            if let Some((code, reason)) = client.closed()
                && (client.welcome().is_some() && is_drop(*code)
                    || client.welcome().is_none() && *code == close::HEARTBEAT)
            {
                notes.push(RedialNote::Dropped { code: *code, reason: reason.clone() });
                self.history.push(Redialed {
                    code: *code,
                    reason: reason.clone(),
                    dropped_at_ms: now.as_secs_f64() * 1000.0,
                    back_after_ms: None,
                    attempts: 0,
                });
                self.now = Some(Reconnect::new(now));
                notes.extend(self.turn(node, now));
            }
            return notes;
        };
        match redial.state() {
            Redial::Dialing { attempt, .. } => {
                if !client.reconnecting() && client.closed().is_none() {
                    let after = now.saturating_sub(redial.dropped_at());
                    if let Some(h) = self.history.last_mut() {
                        h.back_after_ms = Some(after.as_secs_f64() * 1000.0);
                    }
                    self.now = None;
                    notes.push(RedialNote::Back { after, attempt });
                    return notes;
                }
                let why = match (client.closed(), node.transport().failure()) {
                    (Some((code, reason)), _) => Some((format!("{reason} ({code})"), !is_drop(*code))),
                    (None, Some(failure)) => Some((failure, false)),
                    // A successor that found nobody hosting counts its old host lost until
                    // it takes the match over or gives up (a close).
                    (None, None) if redial.timed_out(now) && !client.host_lost() => {
                        Some((format!("no welcome in {} s", ATTEMPT_TIMEOUT.as_secs()), false))
                    }
                    (None, None) => None,
                };
                if let Some((why, refused)) = why {
                    notes.push(RedialNote::Failed { attempt, why });
                    if refused {
                        redial.give_up(now);
                    } else {
                        redial.failed(now);
                    }
                    if redial.state() == (Redial::GaveUp { at: now }) {
                        notes.push(RedialNote::GaveUp);
                    }
                }
            }
            Redial::Waiting { .. } => {
                if let Some(attempt) = redial.poll(now) {
                    if let Some(h) = self.history.last_mut() {
                        h.attempts = redial.attempts();
                    }
                    notes.push(RedialNote::Dialing { attempt });
                    match (self.dial)() {
                        Ok(transport) => {
                            // The client is closed (a drop, or the attempt before failed).
                            if !node.reconnect(transport, now) {
                                redial.give_up(now);
                                notes.push(RedialNote::GaveUp);
                            }
                        }
                        Err(e) => {
                            notes.push(RedialNote::Failed { attempt, why: format!("{e:#}") });
                            redial.failed(now);
                        }
                    }
                }
            }
            Redial::GaveUp { .. } => {}
        }
        notes
    }
}

/// How often a successor may ask the rendezvous about its lost host.
pub const WITNESS_INTERVAL: Duration = Duration::from_millis(250);

/// How long one question to the rendezvous may take before it counts as unanswered.
pub const WITNESS_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a question to a rendezvous in the lost host's own process may take at least before
/// it counts as unanswered (three round trips of the host's link, up to [`WITNESS_TIMEOUT`]).
/// Such a question is asked while the host is only quiet (half its timeout), so this runs
/// beside the rest of that timeout.
pub const SERVED_WITNESS_TIMEOUT: Duration = Duration::from_millis(300);

/// Most questions to the rendezvous in flight at once.
pub const WITNESS_IN_FLIGHT: usize = 4;

/// Asks the rendezvous, off the node's thread, whether a lost host's process is still in its
/// room, for the client's check before a claim ([`ClientCore::witness_wanted`]; see
/// [the rule](vimp_netcode::migration#before-a-claim-asking-the-room)): `GET /rooms/CODE` on
/// its own thread, a new question every [`WITNESS_INTERVAL`] while the client wants one,
/// up to [`WITNESS_IN_FLIGHT`] at once. On a lossy line a question whose connection lost a
/// packet waits a retransmission (a lost SYN, a second); the next one, asked meanwhile, may
/// answer first. An answer older than one already given is dropped: a host there at the
/// older question may be gone at the newer. The headless client and the window's node
/// thread run one each turn.
///
/// [`ClientCore::witness_wanted`]: vimp_netcode::client::ClientCore::witness_wanted
#[derive(Debug)]
pub struct Witnesser {
    server: String,
    room: String,
    /// The questions in flight, oldest first: their number, the host asked about, the answer.
    asked: std::collections::VecDeque<(u64, vimp_netcode::transport::PeerKey, std::sync::mpsc::Receiver<Witness>)>,
    /// The next question's number, and the newest one whose answer went to the client.
    next: u64,
    answered: Option<u64>,
    last: Option<std::time::Instant>,
    /// The round trip of the link to the host, as last measured.
    rtt_ms: Option<f64>,
}

impl Witnesser {
    /// A witness for the room at `room_url` (`ws://HOST:PORT/CODE`, or `wss://` over TLS);
    /// `None` for a URL that names no rendezvous: the client then goes by its own silence, as
    /// without a rendezvous.
    pub fn new(room_url: &str) -> Option<Witnesser> {
        let (server, room) = split_room(room_url)?;
        Some(Witnesser {
            server,
            room,
            asked: std::collections::VecDeque::new(),
            next: 0,
            answered: None,
            last: None,
            rtt_ms: None,
        })
    }

    /// Asks the rendezvous at `room_url` from now on: the room moved there (a new host serves
    /// it). Questions already asked elsewhere count no more.
    pub fn ask_at(&mut self, room_url: &str) {
        if let Some((server, room)) = split_room(room_url) {
            (self.server, self.room) = (server, room);
            self.answered = Some(self.next);
            self.asked.clear();
        }
    }

    /// Asks the rendezvous, off the calling thread, whether the room holds a process other
    /// than `me`'s: the answer comes on the receiver (`None`: it could not say).
    pub fn others_than(&self, me: vimp_netcode::transport::PeerKey) -> std::sync::mpsc::Receiver<Option<bool>> {
        let (tx, rx) = std::sync::mpsc::channel();
        let (server, room) = (self.server.clone(), self.room.clone());
        // Without a thread the sender is dropped: nothing said, and the caller asks the room.
        let _ = std::thread::Builder::new().name("vimp-witness".into()).spawn(move || {
            let info = vimp_netcode::signal::fetch_room(&server, &room, WITNESS_TIMEOUT).ok();
            let _ = tx.send(info.and_then(|i| i.holds_others_than(me)));
        });
        rx
    }

    /// The client's settings for a node that runs this witness: it asks before it claims.
    pub fn config(config: ClientConfig) -> ClientConfig {
        ClientConfig { witness: true, ..config }
    }

    /// One turn: an answer that came goes to the client; a question the client has is asked.
    pub fn turn<T: Transport>(&mut self, node: &mut Node<T>) {
        let Some(client) = node.client_mut() else { return };
        let answered = &mut self.answered;
        self.asked.retain(|(n, host, rx)| match rx.try_recv() {
            Ok(witness) => {
                if answered.is_none_or(|a| *n > a) {
                    client.witness(*host, witness);
                    *answered = Some(*n);
                }
                false
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => true,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => false,
        });
        self.rtt_ms = client.rtt_ms().or(self.rtt_ms);
        let Some(host) = client.witness_wanted() else { return };
        if self.asked.len() >= WITNESS_IN_FLIGHT || self.last.is_some_and(|at| at.elapsed() < WITNESS_INTERVAL) {
            return;
        }
        self.last = Some(std::time::Instant::now());
        // A rendezvous in the lost host's own process is asked of the host's machine itself,
        // whose link has been silent a while already: a few round trips of that link without
        // an answer are its silence.
        let served = client.room().is_some_and(|(by, invite)| by == host && invite.served);
        let timeout = match (served, self.rtt_ms) {
            (true, Some(rtt)) => {
                Duration::from_secs_f64(3.0 * rtt / 1000.0).clamp(SERVED_WITNESS_TIMEOUT, WITNESS_TIMEOUT)
            }
            (true, None) => SERVED_WITNESS_TIMEOUT,
            (false, _) => WITNESS_TIMEOUT,
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let (server, room) = (self.server.clone(), self.room.clone());
        let asked = std::thread::Builder::new().name("vimp-witness".into()).spawn(move || {
            let witness = match vimp_netcode::signal::fetch_room(&server, &room, timeout) {
                Ok(info) => match info.holds(host) {
                    Some(true) => Witness::There,
                    Some(false) => Witness::Gone,
                    None => Witness::Unreachable,
                },
                // Its machine says nothing listens there: what serves the room is gone.
                Err(vimp_netcode::signal::SignalError::Unreachable { refused: true, .. }) => Witness::Refused,
                Err(_) => Witness::Unreachable,
            };
            let _ = tx.send(witness);
        });
        if asked.is_ok() {
            self.asked.push_back((self.next, host, rx));
            self.next += 1;
        }
    }
}

/// The rendezvous (`ws://HOST:PORT` or `wss://…`) and the room of a room URL.
fn split_room(room_url: &str) -> Option<(String, String)> {
    let (server, room) = room_url.trim_end_matches('/').rsplit_once('/')?;
    let room = room.split('?').next().unwrap_or(room);
    let named = (server.starts_with("ws://") || server.starts_with("wss://")) && server.contains("://");
    (named && !room.is_empty() && !server.ends_with(':') && !server.ends_with('/'))
        .then(|| (server.to_owned(), room.to_owned()))
}

/// Parses `--bot-skill` (easy, normal or hard, any case).
pub fn bot_skill(s: &str) -> Result<BotSkill, String> {
    s.parse()
}

/// `--frames N --screenshot FILE`: a window that renders N frames, saves the last, and exits.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CaptureArgs {
    /// Render this many frames, then exit (window only).
    #[arg(long, value_name = "N")]
    pub frames: Option<u32>,
    /// Save the last frame as a PNG (window only; alone it means 240 frames).
    #[arg(long, value_name = "FILE")]
    pub screenshot: Option<PathBuf>,
}

impl CaptureArgs {
    /// Whether any was given (they mean nothing without a window).
    pub fn is_set(&self) -> bool {
        self.frames.is_some() || self.screenshot.is_some()
    }
}
