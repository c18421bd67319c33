//! The window's node thread: the match's host when this window hosts it, its shadow when
//! the window joined it — one thread, one [`Successor`], whatever the role.
//!
//! A Bevy `App` stays on the thread that built it, and a host must step at 120 Hz whatever
//! the window's frame rate, so the match's host and the shadow live on a thread of their
//! own. The window's client stays with the window; the thread runs the roles:
//!
//! - **Hosting a match this window made** ([`NodeThread::host`]): a local match (the
//!   hosting player only), or hosting for friends over WebRTC. The hosting player's client
//!   talks to the server through an in-memory link ([`HOST_PEER`] ↔ [`LOCAL_PEER`]),
//!   exactly like a remote client. A local match watches its map file: on save the map is
//!   validated and loaded (the round restarts on it); a map with errors is reported to the
//!   window and the match goes on on the old one.
//! - **Shadowing a match this window joined** ([`NodeThread::standby`]): the window hands
//!   the thread what the host streams ([`NodeThread::update`]), and when this client's turn
//!   comes ([`ClientCore::takeover_due`](vimp_netcode::client::ClientCore::takeover_due)) the client is handed over to an in-memory link and the
//!   mesh transport goes to the thread, where the shadow becomes the host
//!   ([`Successor::promote`]). From then on the window is a client of its own process's
//!   host; no menu, no reconnect screen, only the "host changed" banner.
//!
//! Either way the host stops the same way ([`Successor::retire`]): another claimant's claim
//! won the race, or the players voted for another host (`@changeHost`) and the match was
//! handed to it. The mesh then comes back to the window's client, which follows the new host
//! with its token ([`NodeThread::take_events`]); the thread shadows again. When the window
//! leaves a match it hosts, the thread hands the match to the first successor (log, final
//! checkpoint, `HANDOFF`) before it stops: the friends play on from the very last tick.
//!
//! The match is of the [`Game`] it is given. What the window shows of the host's world
//! beyond snapshots (the designers' navigation overlay) is the config's [`Capture`], made on
//! this thread while the window wants it ([`NodeThread::view`]).

use std::any::Any;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use vimp_host::engine::game::{BotSkill, Game};
use vimp_host::engine::map::MapConfig;
use vimp_host::engine::server::{PlayerLink, Server, ServerConfig};
use vimp_host::engine::successor::{PromotedServer, Retired, Successor, SuccessorEvent, promoted_link};
use vimp_netcode::client::{Client, Handover};
use vimp_netcode::link::LinkConfig;
use vimp_netcode::lobby::{LobbyCode, room_url};
use vimp_netcode::migration::MigrationPayload;
use vimp_netcode::signal::{SignalConfig, SignalServer};
use vimp_netcode::transport::webrtc::WebRtcTransport;
use vimp_netcode::transport::{Joined, MemoryTransport, PeerKey, Transport};

use crate::setup::IceArgs;

/// The host's end of the in-memory link to the player of a match this window made.
pub const HOST_PEER: PeerKey = PeerKey(1);
/// The hosting player's end of that link.
pub const LOCAL_PEER: PeerKey = PeerKey(2);

/// How often the window's view is captured while wanted.
const VIEW_INTERVAL: Duration = Duration::from_millis(100);

/// How often a watched map file is looked at.
const WATCH_INTERVAL: Duration = Duration::from_millis(250);

/// How often the links to the players are refreshed for the window.
const LINKS_INTERVAL: Duration = Duration::from_millis(500);

/// Captures, on the node thread, what the window shows of the host's world that snapshots
/// do not carry; `None` without it (no map yet).
pub type Capture = fn(&mut vimp_host::Host) -> Option<Box<dyn Any + Send>>;

/// A match this window makes and hosts.
#[derive(Clone, Debug)]
pub struct HostConfig {
    /// The game.
    pub game: Game,
    /// The map file.
    pub map: PathBuf,
    /// Bots in the match.
    pub bots: u8,
    /// How good they are.
    pub skill: BotSkill,
    /// The match seed.
    pub seed: u64,
    /// Reload the map when its file changes.
    pub watch: bool,
    /// Serve friends over WebRTC too.
    pub online: Option<OnlineConfig>,
    /// What the window may want to see of the host's world ([`NodeThread::view`]).
    pub capture: Option<Capture>,
}

/// Hosting for friends.
#[derive(Clone, Debug)]
pub struct OnlineConfig {
    /// The signalling server; `None` embeds one on `bind`.
    pub signal: Option<String>,
    /// Where an embedded signalling server listens.
    pub bind: std::net::SocketAddr,
    /// The lobby code.
    pub code: LobbyCode,
    /// ICE servers.
    pub ice: IceArgs,
    /// A lobby password.
    pub password: Option<String>,
}

/// What the host tells the window about the map it plays.
#[derive(Clone, Debug, PartialEq)]
pub enum HostNote {
    /// The watched map was saved and is being played now.
    MapReloaded(String),
    /// The watched map was saved with errors (one per line); the old map goes on.
    MapInvalid(String),
    /// The map being played (at the start, or just reloaded) has warnings (`field: warning: reason`).
    MapWarnings(Vec<String>),
}

/// A change of role the thread reports, or why the shadow could not become the host (the
/// client then waits for another one).
pub type NodeEvent = Result<SuccessorEvent, String>;

/// What the window asks of the thread.
enum Command {
    /// Migration payloads the host streamed, oldest first.
    Feed(Vec<MigrationPayload>),
    /// Take the match over now.
    Promote(Handover<Box<dyn Transport>>, MemoryTransport, Duration),
}

/// What the thread sends the window.
enum Report {
    Event(NodeEvent),
    /// This process stopped hosting; the mesh comes back for the client.
    Retired(Retired<Box<dyn Transport>>),
    Note(HostNote),
}

/// What the thread keeps for the window to read at any time.
#[derive(Default)]
struct Shared {
    hosting: AtomicBool,
    shadowing: AtomicBool,
    wants_checkpoint: AtomicBool,
    checkpoints: AtomicU64,
    mismatches: AtomicU64,
    errors: AtomicU64,
    /// The window wants its view of the host's world.
    view_wanted: AtomicBool,
    /// The newest capture of it, while wanted.
    view: Mutex<Option<Box<dyn Any + Send>>>,
    /// The links to the players, while hosting.
    links: Mutex<Vec<PlayerLink>>,
}

impl Shared {
    /// What the window reads of `successor`.
    fn publish(&self, successor: &Successor<Box<dyn Transport>>) {
        self.hosting.store(successor.server().is_some(), Ordering::Relaxed);
        self.shadowing.store(successor.is_shadowing(), Ordering::Relaxed);
        self.wants_checkpoint.store(successor.wants_checkpoint(), Ordering::Relaxed);
        self.checkpoints.store(successor.checkpoints(), Ordering::Relaxed);
        self.mismatches.store(successor.mismatches(), Ordering::Relaxed);
        self.errors.store(successor.errors().len() as u64, Ordering::Relaxed);
    }
}

/// The running thread (stopped, and handing the match off if it hosts, when dropped).
pub struct NodeThread {
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
    commands: mpsc::Sender<Command>,
    reports: mpsc::Receiver<Report>,
    thread: Option<JoinHandle<()>>,
    /// Notes not taken yet.
    notes: Vec<HostNote>,
    /// The window's client was handed over for a takeover.
    promoting: bool,
    announced: bool,
    /// The lobby code and room URL, when this window hosts a match it made online.
    pub lobby: Option<(LobbyCode, String)>,
}

impl std::fmt::Debug for NodeThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeThread")
            .field("hosting", &self.is_hosting())
            .field("shadowing", &self.is_shadowing())
            .field("promoting", &self.promoting)
            .field("lobby", &self.lobby)
            .finish_non_exhaustive()
    }
}

impl NodeThread {
    /// Builds the match (map loaded, bots joined) and starts the thread hosting it; returns
    /// it with the client's end of the in-memory link. `clock` is the time base both ends
    /// share.
    pub fn host(config: HostConfig, clock: Instant) -> anyhow::Result<(NodeThread, MemoryTransport)> {
        let mut host_end = MemoryTransport::new(HOST_PEER);
        let mut client_end = MemoryTransport::new(LOCAL_PEER);
        MemoryTransport::connect(&mut host_end, &mut client_end, LinkConfig::default());
        let (ready_tx, ready) = mpsc::sync_channel(1);
        let start = move |reports: &mpsc::Sender<Report>| {
            let built = build(&config, host_end);
            let (server, keep_alive, lobby) = match built {
                Ok(built) => built,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return None;
                }
            };
            let _ = ready_tx.send(Ok(lobby));
            let watch = config.watch.then(|| Watch::new(config.map.clone()));
            let mut successor = Successor::hosting(config.game, server);
            if watch.is_some()
                && let Some(note) = successor.server_mut().and_then(|s| warnings_of(&config.game, s))
            {
                let _ = reports.send(Report::Note(note));
            }
            Some(Start { game: config.game, successor, keep_alive, capture: config.capture, watch })
        };
        let mut node = NodeThread::spawn("vimp-host", clock, start)?;
        node.lobby = match ready.recv() {
            Ok(Ok(lobby)) => lobby,
            Ok(Err(e)) => return Err(e),
            Err(_) => anyhow::bail!("the host thread stopped while starting"),
        };
        Ok((node, client_end))
    }

    /// Starts the thread for a match this window joined: it shadows while this client is
    /// among the first successors and takes the match over when its turn comes.
    pub fn standby(game: Game, clock: Instant) -> std::io::Result<NodeThread> {
        let start = move |_: &mpsc::Sender<Report>| {
            Some(Start { game, successor: Successor::new(game), keep_alive: None, capture: None, watch: None })
        };
        NodeThread::spawn("vimp-standby", clock, start)
    }

    fn spawn(
        name: &str,
        clock: Instant,
        start: impl FnOnce(&mpsc::Sender<Report>) -> Option<Start> + Send + 'static,
    ) -> std::io::Result<NodeThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared::default());
        let (commands, rx) = mpsc::channel();
        let (tx, reports) = mpsc::channel();
        let (flag, figures) = (Arc::clone(&stop), Arc::clone(&shared));
        let thread = std::thread::Builder::new().name(name.into()).spawn(move || {
            if let Some(start) = start(&tx) {
                run(start, &flag, &figures, &rx, &tx, clock);
            }
        })?;
        Ok(NodeThread {
            stop,
            shared,
            commands,
            reports,
            thread: Some(thread),
            notes: Vec::new(),
            promoting: false,
            announced: false,
            lobby: None,
        })
    }

    /// Whether this process hosts the match now (one it made, or one it took over).
    pub fn is_hosting(&self) -> bool {
        self.shared.hosting.load(Ordering::Relaxed)
    }

    /// Whether a shadow is kept (this client is among the first successors).
    pub fn is_shadowing(&self) -> bool {
        self.shared.shadowing.load(Ordering::Relaxed)
    }

    /// Whether this process took the match over (or is doing so).
    pub fn is_promoted(&self) -> bool {
        self.promoting
    }

    /// Checkpoints received, shadow hash mismatches and shadowing errors so far.
    pub fn figures(&self) -> (u64, u64, u64) {
        (
            self.shared.checkpoints.load(Ordering::Relaxed),
            self.shared.mismatches.load(Ordering::Relaxed),
            self.shared.errors.load(Ordering::Relaxed),
        )
    }

    /// One window frame: passes on what the host streamed and, when this client's turn
    /// to take over has come and the shadow is there, hands the client over to the new
    /// host on the thread. Nothing while this process hosts.
    pub fn update(&mut self, client: &mut Client<Box<dyn Transport>>, now: Duration) {
        if self.promoting || self.is_hosting() {
            return;
        }
        let payloads = client.take_migration();
        if !payloads.is_empty() {
            let _ = self.commands.send(Command::Feed(payloads));
        }
        if self.shared.wants_checkpoint.load(Ordering::Relaxed) {
            // At most one request per 250 ms goes out, however often this asks.
            client.request_checkpoint();
        }
        if !self.announced && self.is_shadowing() {
            self.announced = true;
            bevy::log::info!("shadowing the host (first checkpoint in)");
        }
        if !client.takeover_due() || !self.is_shadowing() {
            return;
        }
        let (host_end, player_end) = promoted_link(client);
        if let Some(handover) = client.hand_over(Box::new(player_end)) {
            // The feed sent before is applied first: the channel keeps order.
            self.promoting = self.commands.send(Command::Promote(handover, host_end, now)).is_ok();
        }
    }

    /// What happened since the last call. When this process stopped hosting, the client
    /// is put back on the mesh, after the host that took over, before this returns.
    pub fn take_events(&mut self, client: &mut Client<Box<dyn Transport>>) -> Vec<NodeEvent> {
        let mut events = Vec::new();
        for report in self.reports.try_iter() {
            match report {
                Report::Event(event) => events.push(event),
                Report::Retired(retired) => {
                    events.push(Ok(SuccessorEvent::from(retired.why)));
                    retired.rejoin(client);
                    self.promoting = false;
                    self.announced = false;
                }
                Report::Note(note) => self.notes.push(note),
            }
        }
        events
    }

    /// What the host said about its map since the last call (after [`Self::take_events`]).
    pub fn notes(&mut self) -> Vec<HostNote> {
        std::mem::take(&mut self.notes)
    }

    /// Asks the thread for the window's view (its config's [`Capture`]), or to stop making it.
    pub fn want_view(&self, on: bool) {
        self.shared.view_wanted.store(on, Ordering::Relaxed);
    }

    /// A copy of the newest view, once asked for, when it is a `T`.
    pub fn view<T: Clone + 'static>(&self) -> Option<T> {
        let slot = self.shared.view.lock().unwrap_or_else(PoisonError::into_inner);
        slot.as_ref().and_then(|v| v.downcast_ref::<T>()).cloned()
    }

    /// The links to the players who joined over the network: how each goes and its round
    /// trip (empty unless this process hosts online).
    pub fn links(&self) -> Vec<PlayerLink> {
        let links = self.shared.links.lock().unwrap_or_else(PoisonError::into_inner);
        links.iter().filter(|l| l.path.is_some()).cloned().collect()
    }
}

impl Drop for NodeThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the thread starts with: its successor (hosting or not), what must live as long as
/// it, the view it captures and the map file it watches (a local match's).
struct Start {
    game: Game,
    successor: Successor<Box<dyn Transport>>,
    /// An embedded signalling server: friends still join by the code after the match went
    /// to another host.
    keep_alive: Option<SignalServer>,
    capture: Option<Capture>,
    watch: Option<Watch>,
}

/// The thread: host while the successor hosts, shadow otherwise; hand off when stopped
/// while hosting.
fn run(
    start: Start,
    stop: &AtomicBool,
    shared: &Shared,
    commands: &mpsc::Receiver<Command>,
    reports: &mpsc::Sender<Report>,
    clock: Instant,
) {
    let Start { game, mut successor, keep_alive: _signal, capture, mut watch } = start;
    let (mut next_view, mut next_links) = (Instant::now(), Instant::now());
    shared.publish(&successor);
    while !stop.load(Ordering::Relaxed) {
        if successor.server().is_some() {
            successor.update_server(clock.elapsed());
            if let Some(server) = successor.server_mut() {
                for note in watch.as_mut().map(|w| w.poll(&game, server)).unwrap_or_default() {
                    let _ = reports.send(Report::Note(note));
                }
                if Instant::now() >= next_links {
                    next_links = Instant::now() + LINKS_INTERVAL;
                    *shared.links.lock().unwrap_or_else(PoisonError::into_inner) = server.links();
                }
                if let Some(capture) = capture
                    && shared.view_wanted.load(Ordering::Relaxed)
                    && Instant::now() >= next_view
                {
                    next_view = Instant::now() + VIEW_INTERVAL;
                    *shared.view.lock().unwrap_or_else(PoisonError::into_inner) = capture(server.host_mut());
                }
            }
            if let Some(retired) = successor.retire() {
                shared.links.lock().unwrap_or_else(PoisonError::into_inner).clear();
                *shared.view.lock().unwrap_or_else(PoisonError::into_inner) = None;
                let _ = reports.send(Report::Retired(retired));
                shared.publish(&successor);
            }
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        match commands.recv_timeout(Duration::from_millis(10)) {
            Ok(Command::Feed(payloads)) => successor.feed_all(payloads),
            Ok(Command::Promote(handover, host_end, now)) => {
                let event = successor.promote(handover, host_end, now);
                let _ = reports.send(Report::Event(event.ok_or("no shadow to take the match over from".into())));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        // After every command: a promoted successor has no shadow any more, so the window
        // never hands its client over to a successor that cannot take the match.
        shared.publish(&successor);
    }
    // Friends play on: the match goes to the first successor, not a tick lost.
    if successor.hand_off(clock.elapsed()) {
        crate::setup::linger();
    }
}

type Built = (PromotedServer<Box<dyn Transport>>, Option<SignalServer>, Option<(LobbyCode, String)>);

/// Builds the match (map loaded, bots joined) and its server, on the node thread: over
/// WebRTC and the in-memory link to the hosting player when online, over the link alone
/// (with a mesh no one is on) when local.
fn build(config: &HostConfig, host_end: MemoryTransport) -> anyhow::Result<Built> {
    let (host, init) = crate::setup::new_match(&config.game, &config.map, config.bots, config.skill, config.seed)?;
    let mut keep_alive = None;
    let mut lobby = None;
    let mut password = None;
    let mesh: Box<dyn Transport> = match &config.online {
        None => Box::new(MemoryTransport::new(HOST_PEER)),
        Some(online) => {
            let signal = match &online.signal {
                Some(url) => url.trim_end_matches('/').to_owned(),
                None => {
                    let server = SignalServer::start(SignalConfig { bind: online.bind, ..Default::default() })?;
                    let url = server.url();
                    keep_alive = Some(server);
                    url
                }
            };
            let url = room_url(&signal, &online.code);
            let webrtc = WebRtcTransport::connect(&url, &online.ice.resolve(&signal)?)?;
            lobby = Some((online.code, url));
            password = online.password.clone();
            Box::new(webrtc)
        }
    };
    let server_config = ServerConfig {
        match_id: format!("local-{:016x}", config.seed),
        password,
        client_config: (config.game.client_config)(&init),
        session: vimp_host::engine::server::session_config(&init.game),
        // The hosting player lives in this process: it can never take the match over.
        migration: vimp_host::engine::migration::MigrationConfig {
            local_peers: vec![LOCAL_PEER],
            ..Default::default()
        },
        ..ServerConfig::default()
    };
    Ok((Server::new(host, Joined::new(mesh, host_end), server_config), keep_alive, lobby))
}

/// A watched map file.
struct Watch {
    path: PathBuf,
    seen: Option<SystemTime>,
    next: Instant,
}

impl Watch {
    fn new(path: PathBuf) -> Self {
        let seen = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        Watch { path, seen, next: Instant::now() }
    }

    /// Loads the map when its file changed since the last look.
    fn poll<T: Transport>(&mut self, game: &Game, server: &mut Server<T>) -> Vec<HostNote> {
        if Instant::now() < self.next {
            return Vec::new();
        }
        self.next = Instant::now() + WATCH_INTERVAL;
        let Ok(modified) = std::fs::metadata(&self.path).and_then(|m| m.modified()) else { return Vec::new() };
        if self.seen == Some(modified) {
            return Vec::new();
        }
        self.seen = Some(modified);
        reload(game, server, &self.path)
    }
}

/// Reads, validates and loads the map at `path`: the round restarts on it, and its warnings
/// (if any) follow the note; on any error the match goes on on the map it had.
pub fn reload<T: Transport>(game: &Game, server: &mut Server<T>, path: &std::path::Path) -> Vec<HostNote> {
    let label = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return vec![HostNote::MapInvalid(format!("{label}: {e}"))],
    };
    let map = match MapConfig::from_json(&label, &text) {
        Ok(m) => m,
        Err(e) => return vec![HostNote::MapInvalid(e.to_string())],
    };
    match server.host_mut().load_map(map) {
        Ok(()) => [Some(HostNote::MapReloaded(label)), warnings_of(game, server)].into_iter().flatten().collect(),
        Err(e) => vec![HostNote::MapInvalid(e.to_string())],
    }
}

/// The warnings of the map `server` plays ([`Game::map_warnings`]), if it has any.
fn warnings_of<T: Transport>(game: &Game, server: &mut Server<T>) -> Option<HostNote> {
    let map = server.host().world().resource::<vimp_host::engine::mapstate::MapState>().config.clone()?;
    let warnings = (game.map_warnings)(&map).ok()?;
    (!warnings.is_empty()).then(|| HostNote::MapWarnings(warnings.iter().map(ToString::to_string).collect()))
}
