//! The embedded host: the authoritative match as its own `App` on its own thread.
//!
//! It steps at 120 Hz from its own clock whatever the window's frame rate, and serves
//! the hosting player's client through an in-memory link, exactly like a remote
//! client — plus, when hosting online, friends over WebRTC through the same server
//! (a [`Joined`] transport). A local match watches its map file: on save the map is
//! validated and loaded (the round restarts on it); a map with errors is reported to
//! the window and the match goes on on the old one. When an online host stops (the
//! hosting player leaves), the match is handed to the first successor (log, final
//! checkpoint, `HANDOFF`): the friends play on from the very last tick. When the players
//! vote for another host (`@changeHost`), the match goes to it the same way and the
//! hosting player's client follows it over the mesh ([`EmbeddedHost::take_retired`]).
//!
//! The match is of the [`Game`] the config names. What the window shows of the host's world
//! beyond snapshots (the designers' navigation overlay) is the config's [`Capture`], made on
//! this thread while the window wants it ([`EmbeddedHost::view`]).

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use vimp_host::engine::game::{BotSkill, Game};
use vimp_host::engine::map::MapConfig;
use vimp_host::engine::server::PlayerLink;
use vimp_host::engine::server::{Server, ServerConfig};
use vimp_netcode::link::LinkConfig;
use vimp_netcode::lobby::{LobbyCode, room_url};
use vimp_netcode::signal::{SignalConfig, SignalServer};
use vimp_netcode::transport::webrtc::WebRtcTransport;
use vimp_netcode::transport::{Joined, MemoryTransport, PeerKey, Transport};

use crate::setup::IceArgs;
use vimp_host::engine::successor::{Retired, RetiredWhy};

/// The embedded host's end of the in-memory link.
pub const HOST_PEER: PeerKey = PeerKey(1);
/// The hosting player's end of the in-memory link.
pub const LOCAL_PEER: PeerKey = PeerKey(2);

/// How often the window's view is captured while wanted.
const VIEW_INTERVAL: Duration = Duration::from_millis(100);

/// How often a watched map file is looked at.
const WATCH_INTERVAL: Duration = Duration::from_millis(250);

/// Captures, on the host thread, what the window shows of the host's world that snapshots
/// do not carry; `None` without it (no map yet).
pub type Capture = fn(&mut vimp_host::Host) -> Option<Box<dyn Any + Send>>;

/// What the embedded host is asked to run.
#[derive(Clone, Debug)]
pub struct EmbeddedConfig {
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
    /// What the window may want to see of the host's world ([`EmbeddedHost::view`]).
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

/// What the host thread tells the window.
#[derive(Clone, Debug, PartialEq)]
pub enum HostNote {
    /// The watched map was saved and is being played now.
    MapReloaded(String),
    /// The watched map was saved with errors (one per line); the old map goes on.
    MapInvalid(String),
    /// The map being played (at the start, or just reloaded) has warnings (`field: warning: reason`).
    MapWarnings(Vec<String>),
    /// The host stopped on an error.
    Failed(String),
}

/// A running embedded host (stopped when dropped).
pub struct EmbeddedHost {
    stop: Arc<AtomicBool>,
    /// The window wants its view of the host's world.
    view_wanted: Arc<AtomicBool>,
    /// The newest capture of it, while wanted.
    view: Arc<std::sync::Mutex<Option<Box<dyn Any + Send>>>>,
    /// The links to the players, refreshed twice a second while hosting online.
    links: Arc<std::sync::Mutex<Vec<PlayerLink>>>,
    thread: Option<JoinHandle<()>>,
    notes: mpsc::Receiver<HostNote>,
    retired: mpsc::Receiver<Retired<Box<dyn Transport>>>,
    /// The lobby code and room URL, when hosting online.
    pub lobby: Option<(LobbyCode, String)>,
}

impl std::fmt::Debug for EmbeddedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedHost").field("lobby", &self.lobby).finish_non_exhaustive()
    }
}

impl EmbeddedHost {
    /// Builds the match (map loaded, bots joined) and starts its thread; returns it with
    /// the client's end of the in-memory link. `clock` is the time base both ends share.
    pub fn start(config: EmbeddedConfig, clock: Instant) -> anyhow::Result<(EmbeddedHost, MemoryTransport)> {
        let mut host_end = MemoryTransport::new(HOST_PEER);
        let mut client_end = MemoryTransport::new(LOCAL_PEER);
        MemoryTransport::connect(&mut host_end, &mut client_end, LinkConfig::default());

        // A Bevy `App` stays on the thread that built it, so the thread builds the match
        // and reports back whether it could.
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, notes) = mpsc::channel();
        let (ready_tx, ready) = mpsc::sync_channel(1);
        let flag = Arc::clone(&stop);
        let (retired_tx, retired) = mpsc::channel();
        let view_wanted = Arc::new(AtomicBool::new(false));
        let view = Arc::new(std::sync::Mutex::new(None));
        let (wanted, slot) = (Arc::clone(&view_wanted), Arc::clone(&view));
        let links = Arc::new(std::sync::Mutex::new(Vec::new()));
        let links_slot = Arc::clone(&links);
        let thread = std::thread::Builder::new().name("vimp-host".into()).spawn(move || {
            let (mut hosted, keep_alive, lobby) = match build(&config, host_end) {
                Ok(built) => built,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            let _ = ready_tx.send(Ok(lobby));
            // The signalling server (when embedded) stays up as long as this thread, even
            // after the match went to another host: friends still join by the code.
            let _signal = keep_alive;
            let mut watch = config.watch.then(|| Watch::new(config.map.clone()));
            if let (Some(_), Hosted::Local(server)) = (&watch, &mut hosted)
                && let Some(note) = warnings_of(&config.game, server.host_mut())
            {
                let _ = tx.send(note);
            }
            let mut next_view = Instant::now();
            let mut next_links = Instant::now();
            while !flag.load(Ordering::Relaxed) {
                let now = clock.elapsed();
                match &mut hosted {
                    Hosted::Local(server) => {
                        server.update(now);
                        if let Some(w) = watch.as_mut() {
                            for note in w.poll(&config.game, server) {
                                let _ = tx.send(note);
                            }
                        }
                    }
                    Hosted::Online(server) => {
                        server.update(now);
                        if Instant::now() >= next_links {
                            next_links = Instant::now() + Duration::from_millis(500);
                            *links_slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = server.links();
                        }
                    }
                    Hosted::Gone => {}
                }
                if let Some(capture) = config.capture
                    && wanted.load(Ordering::Relaxed)
                    && Instant::now() >= next_view
                {
                    next_view = Instant::now() + VIEW_INTERVAL;
                    let captured = match &mut hosted {
                        Hosted::Local(server) => capture(server.host_mut()),
                        Hosted::Online(server) => capture(server.host_mut()),
                        Hosted::Gone => None,
                    };
                    *slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = captured;
                }
                if let Hosted::Online(server) = &hosted
                    && let Some(to) = server.handed_off()
                    && let Hosted::Online(server) = std::mem::replace(&mut hosted, Hosted::Gone)
                {
                    // The players voted for another host: the hosting player follows it
                    // over the mesh like everyone else.
                    let peers = server.linked_peers().into_iter().filter(|p| *p != LOCAL_PEER).collect();
                    let (_local, mesh) = server.into_transport().into_parts();
                    let why = RetiredWhy::HandedOff { to };
                    let _ = retired_tx.send(Retired { mesh: Box::new(mesh) as Box<dyn Transport>, peers, why });
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            // Friends play on: the match goes to the first successor, not a tick lost.
            if let Hosted::Online(server) = &mut hosted
                && server.hand_off(clock.elapsed()).is_some()
            {
                crate::setup::linger();
            }
        })?;
        let lobby = match ready.recv() {
            Ok(Ok(lobby)) => lobby,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                anyhow::bail!("the host thread stopped while starting");
            }
        };
        Ok((EmbeddedHost { stop, view_wanted, view, links, thread: Some(thread), notes, retired, lobby }, client_end))
    }

    /// Asks the host thread for the window's view (its config's [`Capture`]), or to stop
    /// making it.
    pub fn want_view(&self, on: bool) {
        self.view_wanted.store(on, Ordering::Relaxed);
    }

    /// A copy of the newest view, once asked for, when it is a `T`.
    pub fn view<T: Clone + 'static>(&self) -> Option<T> {
        let slot = self.view.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.as_ref().and_then(|v| v.downcast_ref::<T>()).cloned()
    }

    /// The links to the players who joined over the network: how each goes and its round
    /// trip (empty for a local match).
    pub fn links(&self) -> Vec<PlayerLink> {
        self.links
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .filter(|l| l.path.is_some())
            .cloned()
            .collect()
    }

    /// What the host said since the last call.
    pub fn notes(&self) -> Vec<HostNote> {
        self.notes.try_iter().collect()
    }

    /// Once the players voted for another host (`@changeHost`) and the match was handed
    /// to it: the mesh, for the hosting player's client to follow it ([`Retired::rejoin`]).
    pub fn take_retired(&self) -> Option<Retired<Box<dyn Transport>>> {
        self.retired.try_recv().ok()
    }
}

impl Drop for EmbeddedHost {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The match this thread hosts.
enum Hosted {
    /// A local match: the hosting player only, through the in-memory link.
    Local(Box<Server<MemoryTransport>>),
    /// Hosting for friends: the in-memory link joined with WebRTC.
    Online(Box<Server<Joined<MemoryTransport, WebRtcTransport>>>),
    /// Handed to another host.
    Gone,
}

type Built = (Hosted, Option<SignalServer>, Option<(LobbyCode, String)>);

/// Builds the match (map loaded, bots joined) and its server, on the host thread.
fn build(config: &EmbeddedConfig, host_end: MemoryTransport) -> anyhow::Result<Built> {
    let (host, init) = crate::setup::new_match(&config.game, &config.map, config.bots, config.skill, config.seed)?;

    let mut keep_alive = None;
    let mut lobby = None;
    let mut password = None;
    let webrtc = match &config.online {
        None => None,
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
            Some(webrtc)
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
    let hosted = match webrtc {
        None => Hosted::Local(Box::new(Server::new(host, host_end, server_config))),
        Some(webrtc) => Hosted::Online(Box::new(Server::new(host, Joined::new(host_end, webrtc), server_config))),
    };
    Ok((hosted, keep_alive, lobby))
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
        Ok(()) => {
            [Some(HostNote::MapReloaded(label)), warnings_of(game, server.host_mut())].into_iter().flatten().collect()
        }
        Err(e) => vec![HostNote::MapInvalid(e.to_string())],
    }
}

/// The warnings of the map `host` plays ([`Game::map_warnings`]), if it has any.
fn warnings_of(game: &Game, host: &mut vimp_host::Host) -> Option<HostNote> {
    let map = host.world().resource::<vimp_host::engine::mapstate::MapState>().config.clone()?;
    let warnings = (game.map_warnings)(&map).ok()?;
    (!warnings.is_empty()).then(|| HostNote::MapWarnings(warnings.iter().map(ToString::to_string).collect()))
}
