//! The window's node thread: this process's [`Node`] — the window's player's client, and
//! the match's host when this window hosts it or its shadow when the window joined it —
//! on a thread of its own, fed and read by the window.
//!
//! A Bevy `App` stays on the thread that built it, and a host must step at 120 Hz whatever
//! the window's frame rate, so the node lives on a thread of its own and the window reaches
//! it without waiting: after each turn the thread publishes what the window reads of the
//! client ([`ClientView`]) and what came for it ([`NodeThread::take`]), and what the window
//! does to the client (a key, a chat line, a vote) runs on the thread at once
//! ([`NodeThread::with_node`]). One code path for every role:
//!
//! - **Hosting a match this window made** ([`NodeThread::host`]): a local match (the
//!   hosting player only, over a transport nobody joins), or hosting for friends over
//!   WebRTC. The hosting player is a client of its own server, reached directly under the
//!   process's mesh key (see [`Node`]). A local match watches its map file: on save the map
//!   is validated and loaded (the round restarts on it); a map with errors is reported to
//!   the window and the match goes on on the old one.
//! - **Playing a match this window joined** ([`NodeThread::join`]): the node shadows the host
//!   while this client is among the first successors, and takes the match over when its turn
//!   comes; from then on the window is a client of its own process's host — no menu, no
//!   reconnect screen, only the "host changed" banner.
//!
//! Either way a host stops the same way: another claimant's claim won the race, or the
//! players voted for another host (`@changeHost`) and the match was handed to it; the node's
//! player then follows the new host with its token ([`Node`]'s role changes, which the window
//! takes with [`Node::poll_change`]). When the window leaves a match it hosts, the thread hands
//! the match to the first successor (log, final checkpoint, `HANDOFF`) before it stops: the
//! friends play on from the very last tick.
//!
//! The match is of the [`Game`] it is given. What the window shows of the host's world
//! beyond snapshots (the designers' navigation overlay) is the config's [`Capture`], made on
//! this thread while the window wants it ([`NodeThread::capture`]).

use std::any::Any;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use vimp_host::engine::game::{BotSkill, Game};
use vimp_host::engine::map::MapConfig;
use vimp_host::engine::node::{Node, RoleChange};
use vimp_host::engine::server::{PlayerLink, ServerConfig, ServerCore};
use vimp_netcode::client::reconnect::Redial;
use vimp_netcode::client::{ClientConfig, ClientCore, ClientStats, HostVoteView, MAX_QUEUED_FRAMES};
use vimp_netcode::identity::{TokenEvent, TokenSource};
use vimp_netcode::lobby::{LobbyCode, room_url};
use vimp_netcode::schema::SnapshotSchema;
use vimp_netcode::session::{Hello, Welcome};
use vimp_netcode::snapshot::Frame;
use vimp_netcode::transport::webrtc::{RoomPlace, WebRtcTransport};
use vimp_netcode::transport::{LinkPath, MemoryTransport, PeerKey, Transport};

use crate::home_room::{HomeRoom, RoomFollower};
use crate::setup::{Dial, IceArgs, Redialer, Witnesser};

/// The node this process runs, as the window holds it.
pub type WindowNode = Node<Box<dyn Transport>>;

/// How often the window's view is captured while wanted.
const VIEW_INTERVAL: Duration = Duration::from_millis(100);

/// How often a watched map file is looked at.
const WATCH_INTERVAL: Duration = Duration::from_millis(250);

/// How often the links to the players are refreshed for the window.
const LINKS_INTERVAL: Duration = Duration::from_millis(500);

/// The longest the thread sleeps between two turns (the transport is polled, not waited on).
const TURN: Duration = Duration::from_millis(1);

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
    /// How long a round lasts, seconds (the game's rules when `None`).
    pub round_seconds: Option<f32>,
    /// Most players, bots included.
    pub max_players: usize,
    /// Map files players may vote for, besides the one played.
    pub vote_maps: Vec<PathBuf>,
    /// Reload the map when its file changes.
    pub watch: bool,
    /// Serve friends over WebRTC too.
    pub online: Option<OnlineConfig>,
    /// What the window may want to see of the host's world ([`NodeThread::capture`]).
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

/// What the node tells the window beside the match: the map it plays, and the top.
#[derive(Clone, Debug, PartialEq)]
pub enum HostNote {
    /// The watched map was saved and is being played now.
    MapReloaded(String),
    /// The watched map was saved with errors (one per line); the old map goes on.
    MapInvalid(String),
    /// The map being played (at the start, or just reloaded) has warnings (`field: warning: reason`).
    MapWarnings(Vec<String>),
    /// What the rendezvous said of the player's report of a round (a line).
    Reported(String),
}

/// What the window reads of its player's client and of the node, as the node thread
/// published it after its last turn.
#[derive(Clone, Debug, Default)]
pub struct ClientView {
    welcome: Option<Welcome>,
    closed: Option<(u16, String)>,
    stats: ClientStats,
    host_vote: Option<HostVoteView>,
    may_call_change_host: bool,
    schema: Option<Arc<SnapshotSchema>>,
    config: Option<Arc<serde_json::Value>>,
    last_frame: Option<Frame>,
    host_peer: Option<PeerKey>,
    host_path: Option<LinkPath>,
    rtt_ms: Option<f64>,
    /// The host's time minus the node's clock, ms.
    server_offset_ms: Option<f64>,
    linked_peers: usize,
    failure: Option<String>,
    hosting: bool,
    shadowing: bool,
    figures: (u64, u64, u64),
    local_id: Option<PeerKey>,
    /// While hosting: snapshot ticks whose frames could not be packed.
    pack_errors: u64,
    /// A reconnection under way, or given up.
    redial: Option<Redial>,
    /// Rows of the newest frame shown carried forward ([`ClientCore::rows_carried`]).
    rows_carried: usize,
    /// Where the room is: the invite of the room this process serves, or its host's.
    invite: Option<vimp_netcode::lobby::Invite>,
    /// Why friends in other homes cannot reach the room this process serves, if they cannot.
    room_note: Option<String>,
}

impl ClientView {
    /// This process's key in the mesh, once the rendezvous gave it one.
    pub fn local_id(&self) -> Option<PeerKey> {
        self.local_id
    }

    /// Where the room is: the invite friends join by (the room this process serves, or the one
    /// its host told), when there is one.
    pub fn invite(&self) -> Option<&vimp_netcode::lobby::Invite> {
        self.invite.as_ref()
    }

    /// Why friends in other homes cannot reach the room this process serves (its router opened
    /// no port), in a player's words, with what to do.
    pub fn room_note(&self) -> Option<&str> {
        self.room_note.as_deref()
    }

    /// Rows of the newest frame shown carried forward by their rates: rows on the move the
    /// host held back for its byte budget ([`ClientCore::rows_carried`]).
    pub fn rows_carried(&self) -> usize {
        self.rows_carried
    }

    /// The welcome, once in ([`ClientCore::welcome`]).
    pub fn welcome(&self) -> Option<&Welcome> {
        self.welcome.as_ref()
    }

    /// A reconnection after a drop, while it goes on or after it gave up (`None`: none).
    pub fn redial(&self) -> Option<Redial> {
        self.redial
    }

    /// Why the client closed, if it did ([`ClientCore::closed`]).
    pub fn closed(&self) -> Option<&(u16, String)> {
        self.closed.as_ref()
    }

    /// The client's figures ([`ClientCore::stats`]).
    pub fn stats(&self) -> &ClientStats {
        &self.stats
    }

    /// The `@changeHost` vote open, if any ([`ClientCore::host_vote`]).
    pub fn host_vote(&self) -> Option<&HostVoteView> {
        self.host_vote.as_ref()
    }

    /// Whether this player may call the `@changeHost` vote now.
    pub fn may_call_change_host(&self) -> bool {
        self.may_call_change_host
    }

    /// The snapshot schema of the host's config.
    pub fn schema(&self) -> Option<&SnapshotSchema> {
        self.schema.as_deref()
    }

    /// The host's config.
    pub fn config(&self) -> Option<&serde_json::Value> {
        self.config.as_deref()
    }

    /// The newest snapshot frame.
    pub fn last_frame(&self) -> Option<&Frame> {
        self.last_frame.as_ref()
    }

    /// The host's key in the mesh (this process's own while it hosts).
    pub fn host_peer(&self) -> Option<PeerKey> {
        self.host_peer
    }

    /// How the link to the host goes, once known (never while this process hosts).
    pub fn host_path(&self) -> Option<LinkPath> {
        self.host_path
    }

    /// The round trip to the host, ms.
    pub fn rtt_ms(&self) -> Option<f64> {
        self.rtt_ms
    }

    /// The host's time at `now` on the node's clock, ms (estimated from pings).
    pub fn server_time_ms(&self, now: Duration) -> Option<f64> {
        self.server_offset_ms.map(|offset| offset + now.as_secs_f64() * 1000.0)
    }

    /// Mesh peers linked.
    pub fn linked_peers(&self) -> usize {
        self.linked_peers
    }

    /// Whether the node keeps a shadow of the match.
    pub fn shadowing(&self) -> bool {
        self.shadowing
    }

    /// Why the transport stopped by itself, if it did.
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }
}

/// What came for the window since it last looked.
#[derive(Default)]
struct Inbox {
    changes: Vec<RoleChange>,
    frames: VecDeque<Frame>,
    meta: Vec<(u8, Vec<u8>)>,
    chat: Vec<serde_json::Value>,
    notes: Vec<HostNote>,
}

/// What the window takes from the node each frame ([`NodeThread::take`]).
#[derive(Default)]
pub struct Taken {
    /// Changes of role, oldest first.
    pub changes: Vec<RoleChange>,
    /// Snapshot frames, oldest first (at most [`MAX_QUEUED_FRAMES`]).
    pub frames: Vec<Frame>,
    /// Meta messages `(port, payload)`, oldest first.
    pub meta: Vec<(u8, Vec<u8>)>,
    /// Chat lines, oldest first.
    pub chat: Vec<serde_json::Value>,
    /// What the host said of its map.
    pub notes: Vec<HostNote>,
}

/// What the thread and the window share.
#[derive(Default)]
struct Shared {
    view: Mutex<ClientView>,
    inbox: Mutex<Inbox>,
    /// The window wants its view of the host's world.
    capture_wanted: AtomicBool,
    /// The newest capture of it, while wanted.
    capture: Mutex<Option<Box<dyn Any + Send>>>,
    /// The links to the players, while hosting.
    links: Mutex<Vec<PlayerLink>>,
    /// The player asked to try again after the reconnection gave up.
    retry: AtomicBool,
}

/// Something for the thread to do to the node, at once.
type Command = Box<dyn FnOnce(&mut WindowNode, Duration) + Send>;

/// The running thread (stopped, and handing the match off if it hosts, when dropped).
pub struct NodeThread {
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
    commands: mpsc::Sender<Command>,
    thread: Option<JoinHandle<()>>,
    /// The lobby code and room URL, when this window hosts a match it made online.
    pub lobby: Option<(LobbyCode, String)>,
}

impl std::fmt::Debug for NodeThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeThread")
            .field("hosting", &self.is_hosting())
            .field("shadowing", &self.is_shadowing())
            .field("lobby", &self.lobby)
            .finish_non_exhaustive()
    }
}

impl NodeThread {
    /// Builds the match (map loaded, bots joined; on the thread, where its Bevy app stays)
    /// and starts the thread hosting it, with the window's player saying `hello` to it.
    /// `clock` is the time base of the match.
    pub fn host(config: HostConfig, hello: Hello, clock: Instant) -> anyhow::Result<NodeThread> {
        let (ready_tx, ready) = mpsc::sync_channel(1);
        let start = move |shared: Arc<Shared>| {
            let (node, home, follower, lobby, tokens, places) = match build(&config, hello) {
                Ok(built) => built,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return None;
                }
            };
            let witness = lobby.as_ref().and_then(|(_, url)| Witnesser::new(url));
            let _ = ready_tx.send(Ok(lobby));
            let mut turns = Turns {
                node,
                shared,
                capture: config.capture,
                watch: None,
                redialer: None,
                witness,
                home,
                follower,
                tokens,
                places,
            };
            if config.watch {
                turns.watch = Some(Watch::new(config.map.clone()));
                let game = config.game;
                if let Some(note) = turns.node.server_mut().and_then(|s| warnings_of(&game, s)) {
                    turns.shared.inbox.lock().unwrap_or_else(PoisonError::into_inner).notes.push(note);
                }
            }
            Some(turns)
        };
        let mut thread = NodeThread::spawn(clock, start)?;
        thread.lobby = match ready.recv() {
            Ok(Ok(lobby)) => lobby,
            Ok(Err(e)) => return Err(e),
            Err(_) => anyhow::bail!("the node thread stopped while starting"),
        };
        Ok(thread)
    }

    /// Starts the thread for a match this window joins over `transport`, the window's player
    /// saying `hello` to whichever host answers: it shadows while this client is among the
    /// first successors and takes the match over when its turn comes. With `dial`, a drop is
    /// dialed back over fresh transports from it ([`Redialer`]; [`ClientView::redial`] says
    /// how it goes, [`NodeThread::retry`] tries again after it gave up). With `witness`, a
    /// successor asks the rendezvous about a lost host before it claims ([`Witnesser`]). With
    /// `tokens`, the player's rendezvous tokens go to the host once it is welcomed.
    ///
    /// With `follower`, the transports follow the room to a host that serves it, and this
    /// process serves it when it takes over a match whose host served it ([`RoomFollower`]).
    #[expect(clippy::too_many_arguments, reason = "a join's parts, each spelled out")]
    pub fn join(
        game: Game,
        transport: Box<dyn Transport>,
        hello: Hello,
        config: ClientConfig,
        dial: Option<Dial>,
        witness: Option<Witnesser>,
        tokens: Option<TokenSource>,
        follower: Option<RoomFollower>,
        clock: Instant,
    ) -> std::io::Result<NodeThread> {
        let start = move |shared: Arc<Shared>| {
            let config = if witness.is_some() { Witnesser::config(config) } else { config };
            let node = Node::playing(game, transport, ClientCore::new(hello, config));
            let redialer = dial.map(Redialer::new);
            Some(Turns {
                node,
                shared,
                capture: None,
                watch: None,
                redialer,
                witness,
                home: None,
                follower,
                tokens,
                places: None,
            })
        };
        NodeThread::spawn(clock, start)
    }

    fn spawn(
        clock: Instant,
        start: impl FnOnce(Arc<Shared>) -> Option<Turns> + Send + 'static,
    ) -> std::io::Result<NodeThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared::default());
        let (commands, rx) = mpsc::channel();
        let (flag, thread_shared) = (Arc::clone(&stop), Arc::clone(&shared));
        let thread = std::thread::Builder::new().name("vimp-node".into()).spawn(move || {
            if let Some(turns) = start(thread_shared) {
                turns.run(&flag, &rx, clock);
            }
        })?;
        Ok(NodeThread { stop, shared, commands, thread: Some(thread), lobby: None })
    }

    /// Runs `f` on the node at once (on its thread) and gives what it returned; `None` when the
    /// thread is gone. The window waits for it: at most one turn of the node.
    pub fn with_node<R: Send + 'static>(&self, f: impl FnOnce(&mut WindowNode) -> R + Send + 'static) -> Option<R> {
        let (tx, rx) = mpsc::sync_channel(1);
        let command: Command = Box::new(move |node, _| {
            let _ = tx.send(f(node));
        });
        self.commands.send(command).ok()?;
        rx.recv().ok()
    }

    /// After the reconnection gave up: one more round of attempts, from now.
    pub fn retry(&self) {
        let command: Command = Box::new(move |_, _| {});
        self.shared.retry.store(true, Ordering::Relaxed);
        let _ = self.commands.send(command);
    }

    /// The player leaves: its close frame goes to the host at once.
    pub fn leave(&self) {
        let (tx, rx) = mpsc::sync_channel(1);
        let command: Command = Box::new(move |node, now| {
            node.leave(now);
            let _ = tx.send(());
        });
        if self.commands.send(command).is_ok() {
            let _ = rx.recv();
        }
    }

    /// What the node thread last published of the client and the node.
    pub fn view(&self) -> std::sync::MutexGuard<'_, ClientView> {
        self.shared.view.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What came since the last call.
    pub fn take(&self) -> Taken {
        let mut inbox = self.shared.inbox.lock().unwrap_or_else(PoisonError::into_inner);
        Taken {
            changes: std::mem::take(&mut inbox.changes),
            frames: std::mem::take(&mut inbox.frames).into(),
            meta: std::mem::take(&mut inbox.meta),
            chat: std::mem::take(&mut inbox.chat),
            notes: std::mem::take(&mut inbox.notes),
        }
    }

    /// Whether this process hosts the match now (one it made, or one it took over).
    pub fn is_hosting(&self) -> bool {
        self.view().hosting
    }

    /// Whether a shadow is kept (this client is among the first successors).
    pub fn is_shadowing(&self) -> bool {
        self.view().shadowing
    }

    /// This process's key in the mesh, once known.
    pub fn local_id(&self) -> Option<PeerKey> {
        self.view().local_id
    }

    /// Checkpoints received, shadow hash mismatches and shadowing errors so far.
    pub fn figures(&self) -> (u64, u64, u64) {
        self.view().figures
    }

    /// While hosting: snapshot ticks whose frames could not be packed (a game bug, logged).
    pub fn pack_errors(&self) -> u64 {
        self.view().pack_errors
    }

    /// Asks the thread for the window's view of the host's world (its config's [`Capture`]),
    /// or to stop making it.
    pub fn want_capture(&self, on: bool) {
        self.shared.capture_wanted.store(on, Ordering::Relaxed);
    }

    /// A copy of the newest capture, once asked for, when it is a `T`.
    pub fn capture<T: Clone + 'static>(&self) -> Option<T> {
        let slot = self.shared.capture.lock().unwrap_or_else(PoisonError::into_inner);
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

/// The thread's node, and what must live as long as it runs.
struct Turns {
    node: WindowNode,
    shared: Arc<Shared>,
    capture: Option<Capture>,
    watch: Option<Watch>,
    /// Dials a dropped player back in, when the window joined the match.
    redialer: Option<Redialer>,
    /// Asks the rendezvous about a lost host, in an online match.
    witness: Option<Witnesser>,
    /// The room this process serves (its rendezvous, the router's mappings, the invite): one it
    /// hosts with no rendezvous named, or took over from a host that served it.
    home: Option<HomeRoom>,
    /// Where the room is, in an online match: the transports follow it to a host that serves it.
    follower: Option<RoomFollower>,
    /// The player's tokens from the rendezvous, sent to the host once welcomed and at each
    /// refresh (none: it plays unverified).
    tokens: Option<TokenSource>,
    /// While hosting online, the verified players' places in the top.
    places: Option<crate::setup::Places>,
}

impl Turns {
    /// A turn of the node every millisecond, or at once when the window asks something (the
    /// transport is polled, not waited on); while hosting, the watched map, the links and the
    /// capture besides; after each turn what the window reads. When stopped while hosting,
    /// hands the match off.
    fn run(mut self, stop: &AtomicBool, commands: &mpsc::Receiver<Command>, clock: Instant) {
        let (mut next_capture, mut next_links) = (Instant::now(), Instant::now());
        let mut chat_seen = 0;
        while !stop.load(Ordering::Relaxed) {
            let now = clock.elapsed();
            self.node.update(now);
            let game = *self.node.game();
            if self.node.is_hosting() && Instant::now() >= next_links {
                next_links = Instant::now() + LINKS_INTERVAL;
                *self.shared.links.lock().unwrap_or_else(PoisonError::into_inner) = self.node.links();
            }
            match self.node.server_mut() {
                Some(server) => {
                    // A match taken over from a host that checked tokens: its places too.
                    let signal = self.tokens.as_ref().map(TokenSource::signal);
                    crate::setup::Places::turn_lazily(&mut self.places, signal, server);
                    let notes = self.watch.as_mut().map(|w| w.poll(&game, server)).unwrap_or_default();
                    self.shared.inbox.lock().unwrap_or_else(PoisonError::into_inner).notes.extend(notes);
                    if let Some(capture) = self.capture
                        && self.shared.capture_wanted.load(Ordering::Relaxed)
                        && Instant::now() >= next_capture
                    {
                        next_capture = Instant::now() + VIEW_INTERVAL;
                        *self.shared.capture.lock().unwrap_or_else(PoisonError::into_inner) =
                            capture(server.host_mut());
                    }
                }
                None => {
                    self.shared.links.lock().unwrap_or_else(PoisonError::into_inner).clear();
                    *self.shared.capture.lock().unwrap_or_else(PoisonError::into_inner) = None;
                }
            }
            if let Some(redialer) = self.redialer.as_mut() {
                if self.shared.retry.swap(false, Ordering::Relaxed) {
                    redialer.retry(now);
                }
                for note in redialer.turn(&mut self.node, now) {
                    eprintln!("{note}");
                }
                let mut view = self.shared.view.lock().unwrap_or_else(PoisonError::into_inner);
                view.redial = redialer.state();
            }
            if let Some(witness) = self.witness.as_mut() {
                witness.turn(&mut self.node);
            }
            self.keep_room();
            if let (Some(tokens), Some(client)) = (self.tokens.as_mut(), self.node.client_mut())
                && client.welcome().is_some()
            {
                match tokens.poll() {
                    Some(TokenEvent::Token(t)) => crate::setup::send_token(client, tokens, &t.token),
                    Some(TokenEvent::Unverified(why)) => eprintln!("playing unverified: {why}"),
                    Some(TokenEvent::Reported { round, answer }) => {
                        let line = crate::setup::report_line(&round, &answer);
                        eprintln!("{line}");
                        let note = HostNote::Reported(line);
                        self.shared.inbox.lock().unwrap_or_else(PoisonError::into_inner).notes.push(note);
                    }
                    None => {}
                }
                // A round's end: the player's signed copy of what its scoreboard showed.
                crate::setup::report_rounds(client, tokens);
            }
            publish(&mut self.node, &self.shared, now, &mut chat_seen);
            let due = self.node.poll_timeout().map_or(TURN, |at| at.saturating_sub(clock.elapsed()));
            match commands.recv_timeout(due.min(TURN)) {
                Ok(command) => {
                    let now = clock.elapsed();
                    command(&mut self.node, now);
                    for command in commands.try_iter() {
                        command(&mut self.node, now);
                    }
                    self.node.send_now(now);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        // Friends play on: the match goes to the first successor, not a tick lost.
        if self.node.hand_off(clock.elapsed()) {
            crate::setup::await_successor(&mut self.node, || clock.elapsed());
        } else if !self.node.is_hosting() && self.node.client().is_some_and(|c| c.closed().is_none()) {
            // The window closed: the player leaves (its slot freed, its tank gone at once), it
            // does not drop.
            let now = clock.elapsed();
            self.node.leave(now);
            self.node.send_now(now);
            crate::setup::linger();
        }
    }
}

impl Turns {
    /// The room's whereabouts: a match taken over from a host that served the room is served
    /// here now; while this process serves it, its invite goes to every player; otherwise the
    /// transports follow the room to a host that serves it. The window reads the invite.
    fn keep_room(&mut self) {
        let Some(follower) = self.follower.as_mut() else { return };
        if self.home.is_none()
            && self.node.is_hosting()
            && self
                .node
                .client()
                .and_then(ClientCore::room)
                .is_some_and(|(host, invite)| invite.served && Some(host) != self.node.transport().local_id())
        {
            self.home = HomeRoom::take_over(follower, true);
            if let Some(home) = &self.home {
                eprintln!("friends join with: vimp join {}", home.best_url());
            }
        }
        // No longer hosting: the room is the new host's to serve.
        if self.home.is_some() && !self.node.is_hosting() {
            self.home = None;
            eprintln!("no longer serving the room here: it follows its new host");
        }
        if let Some(home) = self.home.as_mut() {
            if let Some(said) = home.turn(follower.place()) {
                let text = said.as_ref().unwrap_or_else(|e| e);
                eprintln!("{text}");
                // The window shows why friends in other homes cannot reach this host yet.
                self.shared.view.lock().unwrap_or_else(PoisonError::into_inner).room_note = said.err();
            }
            if let Some(server) = self.node.server_mut() {
                server.set_room(Some(home.invite().clone()));
            }
        } else if !self.node.is_hosting()
            && let Some(client) = self.node.client()
            && let Some((invite, true)) = follower.turn(client, self.witness.as_mut())
        {
            eprintln!(
                "the room moved to the new host's rendezvous: {}",
                invite.public.as_deref().or(invite.lan.as_deref()).unwrap_or_default()
            );
        }
        let invite = match (&self.home, self.node.client().and_then(ClientCore::room)) {
            (Some(home), _) => Some(home.invite().clone()),
            (None, Some((_, invite))) => Some(invite.clone()),
            (None, None) => None,
        };
        let mut view = self.shared.view.lock().unwrap_or_else(PoisonError::into_inner);
        if view.invite != invite {
            view.invite = invite;
        }
    }
}

/// Publishes what the window reads of `node` after a turn at `now`.
fn publish(node: &mut WindowNode, shared: &Shared, now: Duration, chat_seen: &mut usize) {
    let changes: Vec<RoleChange> = std::iter::from_fn(|| node.poll_change()).collect();
    let (failure, local_id) = (node.transport().failure(), node.transport().local_id());
    let host_path = node.client().and_then(ClientCore::host_peer).and_then(|h| node.transport().path(h));
    let (hosting, shadowing) = (node.is_hosting(), node.is_shadowing());
    let figures = (node.checkpoints(), node.mismatches(), node.errors().len() as u64);
    let pack_errors = node.server().map_or(0, |s| s.stats().pack_errors);
    let Some(client) = node.client_mut() else { return };
    let frames = client.take_frames();
    let meta = client.take_meta();
    let chat = client.chat().get(*chat_seen..).unwrap_or_default().to_vec();
    *chat_seen += chat.len();
    {
        let mut view = shared.view.lock().unwrap_or_else(PoisonError::into_inner);
        let stats = client.stats();
        if stats.configs != view.stats.configs || view.config.is_none() != client.config().is_none() {
            view.config = client.config().cloned().map(Arc::new);
            view.schema = client.schema().cloned().map(Arc::new);
        }
        if stats.snapshots != view.stats.snapshots || view.last_frame.is_none() {
            view.last_frame = client.last_frame().cloned();
        }
        if view.welcome.as_ref() != client.welcome() {
            view.welcome = client.welcome().cloned();
        }
        if view.closed.as_ref() != client.closed() {
            view.closed = client.closed().cloned();
        }
        view.stats = stats.clone();
        view.host_vote = client.host_vote();
        view.may_call_change_host = client.may_call_change_host();
        view.host_peer = client.host_peer();
        view.host_path = host_path;
        view.rtt_ms = client.rtt_ms();
        view.server_offset_ms = client.server_time_ms(now).map(|ms| ms - now.as_secs_f64() * 1000.0);
        view.linked_peers = client.linked_peers();
        view.rows_carried = client.rows_carried();
        view.failure = failure;
        (view.hosting, view.shadowing, view.figures, view.local_id) = (hosting, shadowing, figures, local_id);
        view.pack_errors = pack_errors;
    }
    if changes.is_empty() && frames.is_empty() && meta.is_empty() && chat.is_empty() {
        return;
    }
    let mut inbox = shared.inbox.lock().unwrap_or_else(PoisonError::into_inner);
    inbox.changes.extend(changes);
    inbox.frames.extend(frames);
    while inbox.frames.len() > MAX_QUEUED_FRAMES {
        inbox.frames.pop_front();
    }
    inbox.meta.extend(meta);
    inbox.chat.extend(chat);
}

type Built = (
    WindowNode,
    Option<HomeRoom>,
    Option<RoomFollower>,
    Option<(LobbyCode, String)>,
    Option<TokenSource>,
    Option<crate::setup::Places>,
);

/// Builds the match (map loaded, bots joined) and the node hosting it, with the window's
/// player: over WebRTC when online, over a transport nobody joins when local.
fn build(config: &HostConfig, hello: Hello) -> anyhow::Result<Built> {
    let (host, init) = crate::setup::new_match(
        &config.game,
        &config.map,
        config.bots,
        config.skill,
        config.seed,
        config.round_seconds,
    )?;
    let mut home = None;
    let mut follower = None;
    let mut lobby = None;
    let mut password = None;
    let mut identities = None;
    let mut tokens = None;
    let mut places = None;
    let mesh: Box<dyn Transport> = match &config.online {
        // A local match's mesh has only this process on it, under a random key like a
        // WebRTC peer's.
        None => {
            Box::new(MemoryTransport::new(PeerKey(u128::from_le_bytes(vimp_host::engine::roster::fresh_token().0))))
        }
        Some(online) => {
            // Without a rendezvous named, this process serves the room, and asks its router to
            // open it to other homes (the window shows the invite once it did).
            let place = RoomPlace::new();
            let signal = match &online.signal {
                Some(url) => url.trim_end_matches('/').to_owned(),
                None => {
                    let room = HomeRoom::open(online.code, online.bind, false, config.max_players, true)?;
                    let signal = room.signal();
                    home = Some(room);
                    signal
                }
            };
            let url = room_url(&signal, &online.code);
            if online.signal.is_some() {
                // A rendezvous of one's own checks who players are (this one too); an embedded
                // one (a LAN) does not.
                identities = crate::setup::host_identities(&signal, &online.code);
                places = Some(crate::setup::Places::new(&signal));
                tokens = crate::setup::token_source(&signal, &online.code, None, &hello.nickname, false);
            }
            // A host that serves its room gathers no candidate from its own STUN responder.
            let webrtc = if home.is_some() {
                WebRtcTransport::connect_in(&place, &url, &online.ice.known()?)?
            } else {
                let (known, fetch) = online.ice.fetching(&signal)?;
                WebRtcTransport::connect_fetching_in(&place, &url, &known, move |keyed: &str| fetch(keyed))?
            };
            follower = Some(RoomFollower::new(place, &url));
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
        identities,
        max_players: config.max_players,
        maps: crate::setup::load_vote_maps(&config.vote_maps)?,
        ..ServerConfig::default()
    };
    // Online, the player asks the rendezvous before it claims a match it stepped down from.
    let client = if lobby.is_some() { Witnesser::config(ClientConfig::default()) } else { ClientConfig::default() };
    let player = ClientCore::new(hello, client);
    let node = Node::hosting(config.game, mesh, ServerCore::new(host, server_config), Some(player));
    Ok((node, home, follower, lobby, tokens, places))
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
    fn poll(&mut self, game: &Game, server: &mut ServerCore) -> Vec<HostNote> {
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
pub fn reload(game: &Game, server: &mut ServerCore, path: &std::path::Path) -> Vec<HostNote> {
    let label = path.display().to_string();
    let text = match crate::shipped::read_map(path) {
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
fn warnings_of(game: &Game, server: &mut ServerCore) -> Option<HostNote> {
    let map = server.host().world().resource::<vimp_host::engine::map::state::MapState>().config.clone()?;
    let warnings = (game.map_warnings)(&map).ok()?;
    (!warnings.is_empty()).then(|| HostNote::MapWarnings(warnings.iter().map(ToString::to_string).collect()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use vimp_host::engine::map::MapLevels;

    use crate::window::net::MatchState;
    use crate::window::settings::Settings;
    use crate::window::{MatchKind, start_match};

    /// Updates the match until `done` holds, or panics with `what` after 30 s.
    fn until(m: &mut MatchState, what: &str, mut done: impl FnMut(&MatchState) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !done(m) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(5));
            m.update(m.now());
        }
    }

    /// Writes the map file so that its modification time surely changes.
    fn save(path: &Path, text: &str) {
        let before = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        loop {
            std::fs::write(path, text).expect("the scratch map is written");
            if std::fs::metadata(path).and_then(|m| m.modified()).ok() != before {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn shipped(file: &str) -> String {
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).expect("a shipped map")
    }

    #[test]
    fn saving_a_layered_map_restarts_the_round_on_it_and_a_broken_one_names_field_level_and_tile() {
        let dir = std::env::temp_dir().join(format!("vimp-node-{}-layered", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let path = dir.join("map.json");
        std::fs::write(&path, shipped("maps/test-small.json")).expect("the scratch map");
        let kind = MatchKind::Local { map: path.clone(), bots: 1, skill: Default::default() };
        let mut m = start_match(&kind, &Settings::default()).expect("the match starts");
        until(&mut m, "the flat map", |m| m.map.as_ref().is_some_and(|map| map.name == "Test small"));

        // Saved as Overpass: the round restarts on it, levels and all.
        let bridge = shipped("maps/bridge.json");
        save(&path, &bridge);
        until(&mut m, "the layered map", |m| m.map.as_ref().is_some_and(|map| map.name == "Overpass"));
        let levels = MapLevels::new(m.map.as_ref().expect("the map"), 1.0);
        assert_eq!(levels.levels().collect::<Vec<_>>(), [0, 1]);
        assert_eq!(levels.runs().len(), 4, "two ramps two lanes wide");
        assert_eq!(m.map_error, None);

        // The bridge's south rail left out over the ground's wall band: what falls off lands in the wall.
        let mut broken: serde_json::Value = serde_json::from_str(&bridge).expect("json");
        for col in [19, 20] {
            broken["levels"]["1"]["map"][17][col] = serde_json::json!(0);
        }
        let version = m.map_version;
        save(&path, &broken.to_string());
        until(&mut m, "the map's errors", |m| m.map_error.is_some());
        let errors = m.map_error.clone().expect("errors");
        for col in [19, 20] {
            let line = format!(
                "levels.1.map[16][{col}]: the floor's south edge has no rail and drops onto the wall at column {col}, row 17 of level 0"
            );
            assert!(errors.contains(&line), "{line}\nnot in\n{errors}");
        }
        assert_eq!(m.map_version, version, "the match goes on on Overpass");

        // Fixed: it loads again and the errors go.
        save(&path, &bridge.replace("\"Overpass\"", "\"Overpass v2\""));
        until(&mut m, "the fixed map", |m| m.map.as_ref().is_some_and(|map| map.name == "Overpass v2"));
        assert_eq!(m.map_error, None);
        m.leave();
    }
}
