//! The signalling server itself (feature `signal-server`): matchbox's signalling protocol (its
//! full mesh: every signal relayed to the peer it names within the sender's room, `NewPeer` and
//! `PeerLeft` to the room) with `GET /ice` and `GET /rooms/CODE` beside it, on a thread and a
//! tokio runtime of its own.
//!
//! One registry ([`rooms::Rooms`]) holds who is in which room, so that a join, a leave and a
//! signal each cost what their room does, whatever else the server holds. It also notes when
//! each member's socket was last heard, which the room list says (`idle_ms`), so that a
//! successor can ask whether its lost host's process is still there.
//!
//! The server is on the open internet, so it holds each connection to little: a request (an
//! upgrade included) must come whole within [`Limits::request_deadline`]; an address may hold
//! [`Limits::per_address`] connections and open [`Limits::upgrades_per_second`] websockets; past
//! [`Limits::total`] new connections are refused at once (HTTP 503, or 429 for an address
//! at its cap), not left to stall; a websocket keeps small buffers ([`WS_BUFFER`]), and a message
//! over [`MAX_SIGNAL`] closes its sender's socket alone.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use futures::{SinkExt, StreamExt};
use matchbox_protocol::{JsonPeerEvent, JsonPeerRequest, PeerId, PeerRequest};
use tokio::sync::{mpsc, watch};

use super::{DEFAULT_PORT, ICE_PATH, IceConfig, IceServer, PeerAddr, ROOMS_PATH, SignalError};

mod gate;
#[cfg(test)]
mod open_internet_tests;
mod rooms;

use gate::{Act, Bucket, Gate, Refusal, Ticket};
pub use gate::{
    DEFAULT_IDLE, DEFAULT_LOOKUPS_PER_SECOND, DEFAULT_MESSAGES_PER_ADDRESS, DEFAULT_MESSAGES_PER_SECOND,
    DEFAULT_PER_ADDRESS, DEFAULT_REQUEST_DEADLINE, DEFAULT_UPGRADES_PER_SECOND, Limits, RESERVED_FILES,
    connections_allowed, open_files_limit, raise_open_files_limit,
};
use rooms::{Rooms, Undelivered};

/// The most a signalling message may take, bytes: an SDP is a few KiB. A larger one closes its
/// sender's socket (close code 1009, with the reason).
pub const MAX_SIGNAL: usize = 64 * 1024;

/// The longest room name, bytes: a room is named by letters, digits, `-` and `_` (a lobby code
/// is six).
pub const MAX_ROOM: usize = 64;

/// A websocket's read buffer, and the write buffer it fills before it writes, bytes: an idle
/// socket holds little more than these.
pub const WS_BUFFER: usize = 4 * 1024;

/// How many messages wait in a member's outbox for its socket; past that, what comes for it is
/// dropped (a peer that reads nothing holds no more memory than this).
const OUTBOX: usize = 64;

/// How long a closing socket's last messages have to go out.
const LINGER: Duration = Duration::from_secs(2);

/// How to run the signalling server.
#[derive(Clone, Debug, PartialEq)]
pub struct SignalConfig {
    /// Where to listen.
    pub bind: SocketAddr,
    /// The ICE servers to hand out.
    pub ice: IceConfig,
    /// TURN servers whose credentials are minted per request, handed out after `ice`'s.
    pub turn_secret: Option<TurnSecret>,
    /// The UDP port of a STUN responder beside this server ([`crate::stun::StunServer`]),
    /// handed out first as `stun:HOST:PORT`, `HOST` being the host the asking peer reached
    /// this server at (its `Host` header).
    pub stun_port: Option<u16>,
    /// What a connection, an address and the server may hold.
    pub limits: Limits,
    /// Balancers in front of this server: a request that comes from one of them is taken as
    /// coming from the last address its `X-Forwarded-For` names (HAProxy's `option
    /// forwardfor`), for the routes that look at who asks ([`super::PeerAddr`]: rate limits,
    /// and the homes a round's players play from). Connections are still counted by the
    /// address they come from.
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

impl Default for SignalConfig {
    fn default() -> Self {
        SignalConfig {
            bind: SocketAddr::from(([0, 0, 0, 0], DEFAULT_PORT)),
            ice: IceConfig::default(),
            turn_secret: None,
            stun_port: None,
            limits: Limits::default(),
            trusted_proxies: Vec::new(),
        }
    }
}

/// How long minted TURN credentials last by default, and at most: ten minutes. A relay once
/// allocated lives on past it (the TURN server checks a credential when a relay is made, not
/// while it is kept); a player still in its room fetches a fresh one for the links it makes
/// later.
pub const DEFAULT_TURN_TTL_SECS: u64 = 10 * 60;

/// How long `GET /ice?room=CODE&key=KEY` waits for the asking peer's socket to be in its room
/// before it answers without a TURN credential (at most half the request deadline): a player
/// fetches its ICE list while its websocket connects, so the two meet within a round trip or
/// two.
pub(super) const ICE_WAIT: Duration = Duration::from_secs(3);

/// TURN servers sharing a secret with the signalling server (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnSecret {
    /// The servers' `turn:` / `turns:` URLs.
    pub urls: Vec<String>,
    /// The shared secret (coturn's `static-auth-secret`).
    pub secret: String,
    /// How long a credential lasts, seconds.
    pub ttl_secs: u64,
}

impl TurnSecret {
    /// The TURN server entry with a credential for `peer` (`ROOM-PEER_ID`: the room and the
    /// peer it was handed to), valid until `now_unix + ttl_secs`.
    pub fn mint(&self, now_unix: u64, peer: &str) -> IceServer {
        let username = format!("{}:{peer}", now_unix.saturating_add(self.ttl_secs));
        let credential = turn_password(&self.secret, &username);
        IceServer { urls: self.urls.clone(), username: Some(username), credential: Some(credential) }
    }
}

/// The TURN REST API's password for `username`: `base64(HMAC-SHA1(secret, username))`.
pub fn turn_password(secret: &str, username: &str) -> String {
    use base64::Engine as _;
    use hmac::Mac as _;
    let mut mac = hmac::Hmac::<sha1::Sha1>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(username.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// The host of an HTTP `Host` value (`HOST[:PORT]`, `[V6][:PORT]`), if it looks like one.
fn host_of(authority: &str) -> Option<&str> {
    let host = match authority.strip_prefix('[') {
        Some(rest) => &authority[..rest.find(']')? + 2],
        None => authority.split(':').next()?,
    };
    let ok = !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || "-.:[]".contains(c));
    ok.then_some(host)
}

/// What the handlers share.
#[derive(Clone)]
struct Shared {
    rooms: Arc<Mutex<Rooms>>,
    gate: Arc<Gate>,
    /// What `GET /ice` hands out.
    ice: Arc<IceRoute>,
    /// Becomes true when the server stops: every websocket closes.
    closing: watch::Receiver<bool>,
}

/// A running signalling server.
#[derive(Debug)]
pub struct SignalServer {
    addr: SocketAddr,
    limits: Limits,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), SignalError>>>,
}

impl SignalServer {
    /// Binds `config.bind` and serves on a thread of its own.
    pub fn start(config: SignalConfig) -> Result<SignalServer, SignalError> {
        SignalServer::start_with(config, Router::new())
    }

    /// As [`SignalServer::start`], serving `routes` too, under the same limits on
    /// connections (each request carries the [`super::PeerAddr`] it came from).
    pub fn start_with(config: SignalConfig, routes: Router) -> Result<SignalServer, SignalError> {
        let std_listener = std::net::TcpListener::bind(config.bind)
            .map_err(|e| SignalError::Bind { addr: config.bind, reason: e.to_string() })?;
        let addr =
            std_listener.local_addr().map_err(|e| SignalError::Bind { addr: config.bind, reason: e.to_string() })?;
        std_listener
            .set_nonblocking(true)
            .map_err(|e| SignalError::Bind { addr: config.bind, reason: e.to_string() })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .thread_name("vimp-signal")
            .build()
            .map_err(|e| SignalError::Runtime(e.to_string()))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let limits = config.limits;
        let thread = std::thread::Builder::new()
            .name("vimp-signal".into())
            .spawn(move || runtime.block_on(serve(std_listener, config, routes, rx)))
            .map_err(|e| SignalError::Runtime(e.to_string()))?;
        Ok(SignalServer { addr, limits, shutdown: Some(tx), thread: Some(thread) })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it holds each connection, address and itself to.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// `ws://HOST:PORT`, the base of room URLs (an unspecified bind address shows as loopback).
    pub fn url(&self) -> String {
        let mut addr = self.addr;
        if addr.ip().is_unspecified() {
            addr.set_ip(if addr.is_ipv4() { [127, 0, 0, 1].into() } else { std::net::Ipv6Addr::LOCALHOST.into() });
        }
        format!("ws://{addr}")
    }

    /// Blocks until the server stops (it stops only on error or [`SignalServer::stop`]).
    pub fn wait(mut self) -> Result<(), SignalError> {
        match self.thread.take() {
            Some(t) => t.join().unwrap_or_else(|_| Err(SignalError::Serve("the server thread panicked".into()))),
            None => Ok(()),
        }
    }

    /// Stops accepting peers, closes their websockets and waits for the thread.
    pub fn stop(mut self) -> Result<(), SignalError> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.wait()
    }
}

impl Drop for SignalServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// What `GET /ice` hands out: the configured list, the STUN responder beside this server, and
/// TURN credentials minted for peers in rooms.
struct IceRoute {
    ice: IceConfig,
    turn: Option<TurnSecret>,
    stun_port: Option<u16>,
}

/// `GET /ice[?room=CODE&key=KEY]`: the ICE servers, this server's STUN responder first (at the
/// host the peer asked, its `Host`). A TURN credential is minted only for a peer in a room: the
/// peer names the room and the key its socket there names itself by (`?key=`, see
/// [`peer_of_key`]), and the credential names that room and peer and lasts
/// [`TurnSecret::ttl_secs`]. Its socket may still be connecting: the answer waits for it up to
/// [`ICE_WAIT`] (or half the request deadline), then comes without TURN.
async fn ice_list(
    State(shared): State<Shared>,
    peer: Peer,
    RawQuery(query): RawQuery,
    headers: axum::http::HeaderMap,
) -> Response {
    if let Err(refused) = lookup(&shared, peer) {
        return refused.into_response();
    }
    let route = &shared.ice;
    let mut list = route.ice.clone();
    let host = headers.get(axum::http::header::HOST).and_then(|h| h.to_str().ok()).and_then(host_of);
    if let (Some(port), Some(host)) = (route.stun_port, host) {
        list.ice_servers.insert(0, IceServer { urls: vec![format!("stun:{host}:{port}")], ..IceServer::default() });
    }
    let Some(turn) = &route.turn else { return axum::Json(list).into_response() };
    let param = |name: &str| {
        query.as_deref().and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('=')))
    };
    let (Some(room), Some(member)) = (param("room"), param("key").and_then(peer_of_key)) else {
        return axum::Json(list).into_response();
    };
    if room_name(room).is_err() {
        return axum::Json(list).into_response();
    }
    let (waited_from, wait) = (Instant::now(), ICE_WAIT.min(shared.gate.limits().request_deadline / 2));
    loop {
        if shared.rooms.lock().is_ok_and(|rooms| rooms.holds(room, member)) {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            list.ice_servers.push(turn.mint(now, &format!("{room}-{member}")));
            break;
        }
        if waited_from.elapsed() >= wait {
            tracing::debug!("no TURN credential for {member}: not in room {room} within {wait:?}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    axum::Json(list).into_response()
}

/// The routes: `GET /ice`, `GET /rooms/CODE`, and a websocket at `/CODE` (`/` for the room
/// matchbox calls `world`).
fn router(shared: Shared) -> Router {
    let list = |State(shared): State<Shared>, peer: Peer, Path(room): Path<String>| {
        let answer = lookup(&shared, peer).and_then(|()| room_name(&room)).map(|()| {
            let info = shared.rooms.lock().map(|r| r.info(&room, Instant::now())).unwrap_or_default();
            axum::Json(info).into_response()
        });
        std::future::ready(answer.unwrap_or_else(IntoResponse::into_response))
    };
    let load = |State(shared): State<Shared>, peer: Peer| {
        let answer = lookup(&shared, peer).map(|()| {
            let load = shared.rooms.lock().map(|r| r.load()).unwrap_or_default();
            axum::Json(load).into_response()
        });
        std::future::ready(answer.unwrap_or_else(IntoResponse::into_response))
    };
    Router::new()
        .route(ICE_PATH, get(ice_list))
        .route(ROOMS_PATH, get(load))
        .route(&format!("{ROOMS_PATH}/{{room}}"), get(list))
        .route("/", get(|ws, query, ticket, from, state| join(ws, None, query, ticket, from, state)))
        .route(
            "/{room}",
            get(|ws, Path(room): Path<String>, query, ticket, from, state| {
                join(ws, Some(room), query, ticket, from, state)
            }),
        )
        .with_state(shared)
}

/// The address a request came from (a trusted balancer's forwarded one), as
/// [`connection`] puts it in every request.
type Peer = Option<Extension<PeerAddr>>;

/// A refused request: its status and why, answered as `{"error": why}`.
struct Refused(StatusCode, String);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let Refused(status, why) = self;
        let mut answer = (status, axum::Json(serde_json::json!({ "error": why }))).into_response();
        if status == StatusCode::TOO_MANY_REQUESTS {
            answer.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from_static("1"));
        }
        answer
    }
}

/// Whether `peer` may look something up now ([`Limits::lookups_per_second`]): the refusal to
/// answer when not.
fn lookup(shared: &Shared, peer: Peer) -> Result<(), Refused> {
    let Some(Extension(PeerAddr(peer))) = peer else { return Ok(()) };
    if shared.gate.allows(peer.ip(), Act::Lookup, Instant::now()) {
        return Ok(());
    }
    let rate = shared.gate.limits().lookups_per_second;
    Err(Refused(StatusCode::TOO_MANY_REQUESTS, format!("more than {rate} lookups a second from this address")))
}

/// Whether `room` may name a room (1 to [`MAX_ROOM`] letters, digits, `-` or `_`): the
/// refusal to answer when not.
fn room_name(room: &str) -> Result<(), Refused> {
    let fits = (1..=MAX_ROOM).contains(&room.len());
    if fits && room.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Ok(());
    }
    Err(Refused(StatusCode::BAD_REQUEST, format!("a room is named by 1 to {MAX_ROOM} letters, digits, - or _")))
}

/// Accepts connections until `shutdown`, each served under the gate's limits; then closes
/// every websocket.
async fn serve(
    listener: std::net::TcpListener,
    config: SignalConfig,
    routes: Router,
    mut shutdown: tokio::sync::oneshot::Receiver<()>,
) -> Result<(), SignalError> {
    let listener = tokio::net::TcpListener::from_std(listener).map_err(|e| SignalError::Serve(e.to_string()))?;
    let (close_all, closing) = watch::channel(false);
    let ice =
        Arc::new(IceRoute { ice: config.ice.clone(), turn: config.turn_secret.clone(), stun_port: config.stun_port });
    let shared = Shared { rooms: Arc::default(), gate: Gate::new(config.limits), ice, closing };
    let app = router(shared.clone()).merge(routes);
    let deadline = config.limits.request_deadline;
    let mut accept_failed_at: Option<Instant> = None;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = &mut shutdown => break,
        };
        let (stream, from) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of open files, mostly: said once a minute; the listener is tried again
                // shortly (its backlog holds the connection meanwhile).
                if accept_failed_at.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                    tracing::warn!("accepting a connection failed: {e}");
                    accept_failed_at = Some(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Signalling is small messages, each one waited for: without Nagle's algorithm each goes
        // at once instead of after the peer's ACK of the one before.
        let _ = stream.set_nodelay(true);
        match shared.gate.admit(from.ip(), Instant::now()) {
            Ok(ticket) => {
                let proxied = config.trusted_proxies.contains(&from.ip());
                tokio::spawn(connection(stream, from, proxied, ticket, app.clone(), deadline));
            }
            Err(refusal) => {
                tokio::spawn(refuse(stream, refusal));
            }
        }
    }
    let _ = close_all.send(true);
    // Each websocket sends its close and ends; they have a moment to.
    let wait_until = Instant::now() + LINGER;
    while shared.rooms.lock().map_or(0, |r| r.peers()) > 0 && Instant::now() < wait_until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Serves one connection (HTTP/1.1): its request must come whole within `deadline`; a
/// websocket it upgrades to lives on in its own task, holding `ticket`. A connection from a
/// trusted balancer (`proxied`) has each request's peer taken from its `X-Forwarded-For`.
async fn connection(
    stream: tokio::net::TcpStream,
    from: SocketAddr,
    proxied: bool,
    ticket: Ticket,
    app: Router,
    deadline: Duration,
) {
    use tower::Service as _;
    let ticket = Arc::new(ticket);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
        request.extensions_mut().insert(ticket.clone());
        let peer =
            if proxied { forwarded_for(request.headers()).map_or(from, |ip| SocketAddr::new(ip, 0)) } else { from };
        request.extensions_mut().insert(super::PeerAddr(peer));
        let mut app = app.clone();
        async move { app.call(request.map(axum::body::Body::new)).await }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(deadline)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .with_upgrades();
    // A request that does not end within the deadline (or a body that trickles) is closed.
    let _ = tokio::time::timeout(deadline, served).await;
}

/// The address a balancer says a request came from: the last of its `X-Forwarded-For`
/// headers' addresses (the one the balancer itself added; any before it the client could have
/// written).
fn forwarded_for(headers: &axum::http::HeaderMap) -> Option<std::net::IpAddr> {
    let last = headers.get_all("x-forwarded-for").iter().next_back()?.to_str().ok()?;
    last.rsplit(',').next()?.trim().parse().ok()
}

/// Answers a refused connection at once and closes it.
async fn refuse(mut stream: tokio::net::TcpStream, refusal: Refusal) {
    use tokio::io::AsyncWriteExt as _;
    let status = match refusal {
        Refusal::Address => "429 Too Many Requests",
        Refusal::Full => "503 Service Unavailable",
    };
    let answer = format!("HTTP/1.1 {status}\r\nRetry-After: 5\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    // Briefly, each step: a refused connection holds a file, and is counted nowhere.
    let brief = Duration::from_millis(250);
    let _ = tokio::time::timeout(brief, stream.write_all(answer.as_bytes())).await;
    let _ = stream.shutdown().await;
    // What it sent meanwhile is read and dropped (a little): closed with its request unread, the
    // socket would reset, and the answer could be lost before the client reads it.
    let drain = async {
        use tokio::io::AsyncReadExt as _;
        let (mut buf, mut left) = ([0u8; 1024], 16 * 1024usize);
        while left > 0 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    };
    let _ = tokio::time::timeout(brief, drain).await;
}

/// A websocket's upgrade into `room` (matchbox's `world` when none is named), as the peer
/// `?key=KEY` names ([`peer_of_key`]) or a new one.
async fn join(
    ws: WebSocketUpgrade,
    room: Option<String>,
    RawQuery(query): RawQuery,
    Extension(ticket): Extension<Arc<Ticket>>,
    from: Peer,
    State(shared): State<Shared>,
) -> Response {
    let room = room.unwrap_or_else(|| "world".to_owned());
    if let Err(refused) = room_name(&room) {
        return refused.into_response();
    }
    let key = query.as_deref().and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("key=")));
    let peer = match key.map(peer_of_key) {
        None => PeerId(uuid::Uuid::new_v4()),
        Some(Some(peer)) => peer,
        Some(None) => {
            return Refused(StatusCode::BAD_REQUEST, "a peer key is 16 to 64 letters, digits, - or _".into())
                .into_response();
        }
    };
    // Rates go by the address a balancer forwarded for; connections by the balancer's.
    let ip = from.map_or(ticket.ip(), |Extension(PeerAddr(from))| from.ip());
    if !shared.gate.allows(ip, Act::Upgrade, Instant::now()) {
        return Refused(StatusCode::TOO_MANY_REQUESTS, "too many websockets opened from this address".into())
            .into_response();
    }
    ws.read_buffer_size(WS_BUFFER)
        .write_buffer_size(WS_BUFFER)
        .max_write_buffer_size(MAX_SIGNAL * 4)
        // Over the limit but not far over: the reader says why it closes (see `member`).
        .max_message_size(MAX_SIGNAL * 2)
        .max_frame_size(MAX_SIGNAL * 2)
        .on_upgrade(move |socket| member(socket, peer, ip, room, shared, ticket))
}

/// The peer id a websocket that says `?key=KEY` gets: the same on every server, so that a peer
/// whose rendezvous went away takes its place in its room again, on this server or another one
/// (a balancer's), under the id its links know it by. Only who holds the key gets the id (the
/// room sees the id, never the key). `None` for a key that is not 16 to 64 letters, digits,
/// `-` or `_`.
pub(super) fn peer_of_key(key: &str) -> Option<PeerId> {
    use sha1::Digest as _;
    let fits = (16..=64).contains(&key.len());
    if !fits || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return None;
    }
    let digest = sha1::Sha1::new_with_prefix(b"vimp peer key\0").chain_update(key.as_bytes()).finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    Some(PeerId(uuid::Builder::from_custom_bytes(bytes).into_uuid()))
}

/// A member of `room` for as long as its websocket is open: it gets its id, the room hears of it,
/// its signals are relayed, and the room hears when it goes. It is closed when it says nothing
/// for [`Limits::idle`], or says more than its rate or its address's ([`Limits`]) allow.
async fn member(
    socket: WebSocket,
    peer: PeerId,
    ip: std::net::IpAddr,
    room: String,
    shared: Shared,
    ticket: Arc<Ticket>,
) {
    let (mut sink, mut stream) = socket.split();
    let (outbox, mut outgoing) = mpsc::channel::<Message>(OUTBOX);
    let _ = outbox.try_send(Message::Text(JsonPeerEvent::IdAssigned(peer).to_string().into()));
    let mut writer = tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            let closing = matches!(message, Message::Close(_));
            if sink.send(message).await.is_err() || closing {
                break;
            }
        }
        let _ = sink.close().await;
    });
    let heard = |rooms: &Arc<Mutex<Rooms>>| {
        if let Ok(mut rooms) = rooms.lock() {
            rooms.heard(peer, Instant::now());
        }
    };
    let seat = shared.rooms.lock().map(|mut rooms| rooms.join(peer, &room, outbox.clone(), Instant::now())).ok();
    let mut closing = shared.closing.clone();
    let (mut written, mut stopping) = (false, false);
    let close = |code: u16, reason: &str| Message::Close(Some(CloseFrame { code, reason: reason.into() }));
    let limits = *shared.gate.limits();
    let (rate, burst) = (limits.messages_per_second, limits.messages_per_second * 2.0);
    let mut said = Bucket::full(burst, Instant::now());
    loop {
        let message = tokio::select! {
            message = tokio::time::timeout(limits.idle, stream.next()) => match message {
                Ok(message) => message,
                Err(_) => {
                    let why = format!("silent for {} s", limits.idle.as_secs());
                    let _ = outbox.try_send(close(1008, &why));
                    break;
                }
            },
            _ = closing.wait_for(|c| *c) => {
                let _ = outbox.try_send(close(1001, "the rendezvous is stopping"));
                stopping = true;
                break;
            }
            // Its socket closed (the peer took its place again on another socket), or a write
            // failed: nothing more goes out on it.
            _ = &mut writer => {
                written = true;
                break;
            }
        };
        if matches!(message, Some(Ok(Message::Text(_) | Message::Binary(_) | Message::Ping(_) | Message::Pong(_)))) {
            let now = Instant::now();
            let too_fast = if !said.take(rate, burst, now) {
                Some(format!("more than {rate} messages a second"))
            } else if !shared.gate.allows(ip, Act::Message, now) {
                Some(format!("more than {} messages a second from this address", limits.messages_per_address))
            } else {
                None
            };
            if let Some(why) = too_fast {
                tracing::debug!("peer {peer} in room {room}: closed, {why}");
                let _ = outbox.try_send(close(1008, &why));
                break;
            }
        }
        match message {
            Some(Ok(Message::Text(text))) if text.len() > MAX_SIGNAL => {
                let _ = outbox.try_send(close(1009, "a signalling message is at most 64 KiB"));
                break;
            }
            Some(Ok(Message::Text(text))) => {
                heard(&shared.rooms);
                // Not a request of the protocol: skipped, as matchbox's own server does.
                let Ok(request) = text.as_str().parse::<JsonPeerRequest>() else { continue };
                if let PeerRequest::Signal { receiver, data } = request {
                    let relayed = shared.rooms.lock().map(|r| r.relay(peer, receiver, data));
                    if let Ok(Err(Undelivered::Full)) = relayed {
                        tracing::debug!("a signal for {receiver} dropped: its outbox is full");
                    }
                }
            }
            Some(Ok(Message::Binary(bytes))) if bytes.len() > MAX_SIGNAL => {
                let _ = outbox.try_send(close(1009, "a signalling message is at most 64 KiB"));
                break;
            }
            Some(Ok(Message::Close(_))) | None => break,
            Some(Ok(_)) => heard(&shared.rooms),
            Some(Err(_)) => {
                // Mostly a message far over the limit, or a connection reset.
                let _ = outbox.try_send(close(1009, "a signalling message is at most 64 KiB"));
                break;
            }
        }
    }
    match (shared.rooms.lock(), seat) {
        (Ok(mut rooms), Some(seat)) if stopping => rooms.forget(peer, seat),
        (Ok(mut rooms), Some(seat)) => rooms.leave(peer, seat),
        _ => {}
    }
    drop(outbox);
    // Its last messages (a close) go out, or the socket is dropped.
    if !written {
        let _ = tokio::time::timeout(LINGER, writer).await;
    }
    drop(ticket);
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::signal::{fetch_ice, fetch_room};
    use crate::transport::PeerKey;

    fn local() -> SignalConfig {
        SignalConfig { bind: SocketAddr::from(([127, 0, 0, 1], 0)), ..SignalConfig::default() }
    }

    /// [`local`], minting credentials for one TURN server (secret `s3`, ten minutes).
    fn minting() -> SignalConfig {
        let turn = TurnSecret { urls: vec!["turn:t.example.net:3478".into()], secret: "s3".into(), ttl_secs: 600 };
        SignalConfig { turn_secret: Some(turn), ..local() }
    }

    #[test]
    fn a_balancer_s_forwarded_address_is_the_last_it_added() {
        let mut headers = axum::http::HeaderMap::new();
        assert_eq!(forwarded_for(&headers), None);
        headers.append("x-forwarded-for", "203.0.113.9".parse().unwrap());
        assert_eq!(forwarded_for(&headers), "203.0.113.9".parse().ok());
        // What the client wrote comes first; the balancer's own, last.
        headers.append("x-forwarded-for", "10.0.0.1, 2001:db8::7".parse().unwrap());
        assert_eq!(forwarded_for(&headers), "2001:db8::7".parse().ok());
        headers.append("x-forwarded-for", "not an address".parse().unwrap());
        assert_eq!(forwarded_for(&headers), None);
    }

    /// Reads from `stream` until `done` says the bytes are complete, with a deadline.
    fn read_until(stream: &mut TcpStream, done: impl Fn(&[u8]) -> bool) -> Vec<u8> {
        stream.set_read_timeout(Some(Duration::from_millis(200))).expect("timeout");
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        while !done(&buf) {
            assert!(Instant::now() < deadline, "no complete answer in time: {:?}", String::from_utf8_lossy(&buf));
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(e) => panic!("read: {e}"),
            }
        }
        buf
    }

    #[test]
    fn the_stun_url_names_the_host_the_peer_asked() {
        assert_eq!(host_of("203.0.113.5:3536"), Some("203.0.113.5"));
        assert_eq!(host_of("rendezvous.example.net"), Some("rendezvous.example.net"));
        assert_eq!(host_of("[2001:db8::1]:3536"), Some("[2001:db8::1]"));
        assert_eq!(host_of("[2001:db8::1"), None);
        assert_eq!(host_of(""), None);
        assert_eq!(host_of("evil\"host:1"), None);
        let server = SignalServer::start(SignalConfig { stun_port: Some(3478), ..local() }).expect("start");
        let ice = fetch_ice(&server.url(), Duration::from_secs(5)).expect("ice");
        assert_eq!(ice.ice_servers[0].urls, ["stun:127.0.0.1:3478"]);
        server.stop().expect("stop");
    }

    #[test]
    fn turn_passwords_are_the_rest_apis() {
        // Computed independently: Python's `base64.b64encode(hmac.new(b"north-wind",
        // b"1700086400:peer-1", hashlib.sha1).digest())`.
        assert_eq!(turn_password("north-wind", "1700086400:peer-1"), "VKlwgioltei0kn+zDgJOJyz4pxI=");
        let turn =
            TurnSecret { urls: vec!["turn:t.example.net:3478".into()], secret: "north-wind".into(), ttl_secs: 86_400 };
        let minted = turn.mint(1_700_000_000, "peer-1");
        assert_eq!(minted.username.as_deref(), Some("1700086400:peer-1"));
        assert_eq!(minted.credential.as_deref(), Some("VKlwgioltei0kn+zDgJOJyz4pxI="));
        assert_ne!(turn.mint(1_700_000_000, "peer-2").credential, minted.credential);
    }

    #[test]
    fn mints_turn_credentials_for_a_peer_in_its_room_alone() {
        use crate::signal::{fetch_ice_in, room_key};
        let server = SignalServer::start(minting()).expect("start");
        let turn = |ice: &IceConfig| ice.ice_servers.iter().find(|s| s.urls == ["turn:t.example.net:3478"]).cloned();
        // A stranger in no room gets none.
        let stranger = fetch_ice(&server.url(), Duration::from_secs(5)).expect("ice");
        assert_eq!(turn(&stranger), None, "{stranger:?}");
        // A peer in its room gets one naming the room and its id, for ten minutes.
        let key = "3f1c0a9e5b7d42e8a6c1f0b9d2e4a7c3";
        let (_socket, id) = enter_with_id(&server, &format!("TURN01?key={key}"));
        let room_url = format!("{}/TURN01?key={key}", server.url());
        let (room, key) = room_key(&room_url).expect("a room and a key");
        let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
        let ice = fetch_ice_in(&server.url(), room, key, Duration::from_secs(10)).expect("ice");
        let minted = turn(&ice).expect("a TURN server for a member");
        let user = minted.username.as_deref().expect("a user name");
        let (expiry, peer) = user.split_once(':').expect("EXPIRY:PEER");
        let expiry: u64 = expiry.parse().expect("Unix seconds");
        assert!((before + 600..before + 660).contains(&expiry), "{expiry} vs {before}");
        assert_eq!(peer, format!("TURN01-{id}"));
        assert_eq!(minted.credential.as_deref(), Some(turn_password("s3", user).as_str()));
        // The key of a member, but another room: none (after the wait).
        let elsewhere = fetch_ice_in(&server.url(), "TURN02", key, Duration::from_secs(10)).expect("ice");
        assert_eq!(turn(&elsewhere), None);
        // A member's id without its key is nothing to ask by.
        let by_id = fetch_ice_in(&server.url(), room, &id.replace('-', ""), Duration::from_secs(10)).expect("ice");
        assert_eq!(turn(&by_id), None);
        server.stop().expect("stop");
    }

    #[test]
    fn a_peer_whose_socket_is_still_connecting_gets_its_credential_once_it_is_in() {
        let server = SignalServer::start(minting()).expect("start");
        let key = "9a8b7c6d5e4f30112233445566778899";
        // Asked first, as a player asks while its websocket connects: the whole request is
        // written before the socket is opened.
        let mut asked = TcpStream::connect(server.addr()).expect("connect");
        write!(asked, "GET /ice?room=TURN03&key={key} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .expect("write");
        let _socket = enter(&server, &format!("TURN03?key={key}"));
        let answer = String::from_utf8(read_until(&mut asked, |_| false)).expect("utf-8");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let body = answer.split("\r\n\r\n").nth(1).expect("body");
        let ice: IceConfig = serde_json::from_str(body).expect("json");
        assert!(ice.ice_servers.iter().any(|s| s.username.is_some()), "{ice:?}");
        server.stop().expect("stop");
    }

    #[test]
    fn serves_the_configured_ice_servers() {
        let mut config = local();
        config.ice.ice_servers.push(IceServer {
            urls: vec!["turn:turn.example.net:3478".into()],
            username: Some("u".into()),
            credential: Some("p".into()),
        });
        let server = SignalServer::start(config).expect("starts");
        let mut s = TcpStream::connect(server.addr()).expect("connect");
        write!(s, "GET /ice HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").expect("write");
        let answer = String::from_utf8(read_until(&mut s, |_| false)).expect("utf-8");
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        let body = answer.split("\r\n\r\n").nth(1).expect("body");
        let ice: IceConfig = serde_json::from_str(body).expect("json");
        assert_eq!(ice.ice_servers[0].urls, ["turn:turn.example.net:3478"]);
        assert_eq!(ice.ice_servers[0].credential.as_deref(), Some("p"));
        server.stop().expect("stops");
    }

    #[test]
    fn a_peer_joining_a_room_is_assigned_an_id() {
        let server = SignalServer::start(local()).expect("starts");
        assert!(server.url().starts_with("ws://127.0.0.1:"));
        let mut s = TcpStream::connect(server.addr()).expect("connect");
        write!(
            s,
            "GET /K7MP2Q HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .expect("write");
        // The upgrade answer, then the first websocket frame: a text frame `{"IdAssigned":"…"}`.
        let bytes = read_until(&mut s, |b| {
            let Some(end) = b.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
            let frame = &b[end + 4..];
            frame.len() >= 2 && frame.len() >= 2 + (frame[1] & 0x7f) as usize
        });
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.starts_with("HTTP/1.1 101"), "{text}");
        let end = bytes.windows(4).position(|w| w == b"\r\n\r\n").expect("headers") + 4;
        let frame = &bytes[end..];
        assert_eq!(frame[0], 0x81, "a final text frame");
        let len = (frame[1] & 0x7f) as usize;
        let msg: serde_json::Value = serde_json::from_slice(&frame[2..2 + len]).expect("json");
        assert!(msg["IdAssigned"].is_string(), "{msg}");
        drop(s);
        server.stop().expect("stops");
    }

    /// Opens a websocket into `room` and waits for its id.
    fn enter(server: &SignalServer, room: &str) -> TcpStream {
        enter_with_id(server, room).0
    }

    /// Opens a websocket into `room`: the stream and the id the server assigned.
    fn enter_with_id(server: &SignalServer, room: &str) -> (TcpStream, String) {
        let mut s = TcpStream::connect(server.addr()).expect("connect");
        write!(
            s,
            "GET /{room} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .expect("write");
        let bytes = read_until(&mut s, |b| {
            let text = String::from_utf8_lossy(b);
            text.find("IdAssigned").is_some_and(|at| text[at..].matches('"').count() >= 3)
        });
        let text = String::from_utf8_lossy(&bytes);
        let id = text[text.find("IdAssigned").expect("assigned")..].split('"').nth(2).expect("an id").to_owned();
        (s, id)
    }

    /// Sends a client's (masked) text frame.
    fn send_text(s: &mut TcpStream, text: &str) {
        let mask = [0x5a, 0x17, 0x33, 0xc4];
        let mut frame = vec![0x81, 0x80 | text.len() as u8];
        frame.extend_from_slice(&mask);
        frame.extend(text.bytes().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        s.write_all(&frame).expect("write");
    }

    /// Polls `GET /rooms/ROOM` until it says `want`, or fails after a deadline.
    fn await_count(server: &SignalServer, room: &str, want: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let info = fetch_room(&server.url(), room, Duration::from_secs(2)).expect("the room answers");
            if info.peers == want {
                return;
            }
            assert!(Instant::now() < deadline, "room {room}: {} peers, not {want}", info.peers);
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_peer_key_gives_the_same_id_on_every_server_and_a_second_socket_takes_the_first_ones_place() {
        let (one, two) = (SignalServer::start(local()).expect("starts"), SignalServer::start(local()).expect("starts"));
        let key = "3f1c0a9e5b7d42e8a6c1f0b9d2e4a7c3";
        let (mut first, id) = enter_with_id(&one, &format!("K3YR00?key={key}"));
        let (_other, id_there) = enter_with_id(&two, &format!("K3YR00?key={key}"));
        assert_eq!(id, id_there, "the same key, the same id, whichever server");
        assert_eq!(id, peer_of_key(key).expect("a key").0.to_string());
        let (_stranger, stranger) = enter_with_id(&one, "K3YR00");
        assert_ne!(stranger, id, "no key: an id of its own");
        await_count(&one, "K3YR00", 2);
        // The key's holder again, on a new socket: its place, not a second one; the old socket
        // is closed.
        let (_again, again) = enter_with_id(&one, &format!("K3YR00?key={key}"));
        assert_eq!(again, id);
        // The old socket is told why it closes.
        read_until(&mut first, |b| String::from_utf8_lossy(b).contains("joined again"));
        drop(first);
        await_count(&one, "K3YR00", 2);
        // A key that is not one is refused.
        for bad in ["short", "has%20a%20space%20in%20it%20x", &"x".repeat(65)] {
            let mut s = TcpStream::connect(one.addr()).expect("connect");
            write!(
                s,
                "GET /K3YR00?key={bad} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            )
            .expect("write");
            let answer = read_until(&mut s, |b| b.windows(4).any(|w| w == b"\r\n\r\n"));
            assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 400"), "key {bad:?}");
        }
        one.stop().expect("stops");
        two.stop().expect("stops");
    }

    #[test]
    fn rooms_count_who_is_in_them() {
        let server = SignalServer::start(local()).expect("starts");
        await_count(&server, "K7MP2Q", 0);
        let a = enter(&server, "K7MP2Q");
        let b = enter(&server, "K7MP2Q");
        let other = enter(&server, "ABCDEF");
        await_count(&server, "K7MP2Q", 2);
        await_count(&server, "ABCDEF", 1);
        let load = crate::signal::fetch_load(&server.url(), Duration::from_secs(2)).expect("the load answers");
        assert_eq!((load.rooms, load.peers), (2, 3), "the server's rooms and peers");
        drop(a);
        await_count(&server, "K7MP2Q", 1);
        drop(b);
        drop(other);
        await_count(&server, "K7MP2Q", 0);
        await_count(&server, "ABCDEF", 0);
        server.stop().expect("stops");
    }

    #[test]
    fn the_room_list_names_each_member_and_how_long_its_socket_was_silent() {
        let server = SignalServer::start(local()).expect("starts");
        let (mut a, a_id) = enter_with_id(&server, "W1TNES");
        let (b, b_id) = enter_with_id(&server, "W1TNES");
        await_count(&server, "W1TNES", 2);
        let idle = |id: &str| {
            let info = fetch_room(&server.url(), "W1TNES", Duration::from_secs(2)).expect("the room answers");
            info.members.iter().find(|m| m.id == id).map(|m| m.idle_ms)
        };
        // Both listed by the ids they were assigned; silent, their idle times grow.
        let deadline = Instant::now() + Duration::from_secs(10);
        while idle(&a_id).expect("a listed") < 300 || idle(&b_id).expect("b listed") < 300 {
            assert!(Instant::now() < deadline, "the idle times never grew");
            std::thread::sleep(Duration::from_millis(20));
        }
        // A keep-alive from a: its idle time starts again, b's goes on.
        send_text(&mut a, "\"KeepAlive\"");
        let deadline = Instant::now() + Duration::from_secs(10);
        while idle(&a_id).expect("a listed") >= idle(&b_id).expect("b listed") {
            assert!(Instant::now() < deadline, "a's keep-alive was not noted");
            std::thread::sleep(Duration::from_millis(5));
        }
        let peer = |id: &str| PeerKey(u128::from_str_radix(&id.replace('-', ""), 16).expect("a uuid"));
        let info = fetch_room(&server.url(), "W1TNES", Duration::from_secs(2)).expect("the room answers");
        assert_eq!(info.holds(peer(&a_id)), Some(true), "a was heard just now: {info:?}");
        assert_eq!(crate::signal::peer_id(peer(&b_id)), b_id, "a key is written back as the id it came from");
        assert_eq!(info.holds(PeerKey(7)), Some(false), "a stranger is not in the room");
        drop(b);
        await_count(&server, "W1TNES", 1);
        assert_eq!(idle(&b_id), None, "b left");
        let info = fetch_room(&server.url(), "W1TNES", Duration::from_secs(2)).expect("the room answers");
        assert_eq!(info.holds(peer(&b_id)), Some(false));
        assert_eq!(info.holds_others_than(peer(&a_id)), Some(false), "a is alone in the room");
        assert_eq!(info.holds_others_than(peer(&b_id)), Some(true), "a is there besides b");
        server.stop().expect("stops");
    }

    #[test]
    fn fetch_ice_reads_the_list_back() {
        let mut config = local();
        config
            .ice
            .ice_servers
            .push(IceServer { urls: vec!["stun:stun.example.net:3478".into()], ..Default::default() });
        let server = SignalServer::start(config.clone()).expect("starts");
        let got = fetch_ice(&server.url(), Duration::from_secs(5)).expect("fetched");
        assert_eq!(got, config.ice);
        let url = server.url();
        server.stop().expect("stops");
        // Nothing listens there now: said so at once, as a refusal.
        match fetch_ice(&url, Duration::from_secs(30)) {
            Err(SignalError::Unreachable { refused: true, .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_taken_port_is_a_clear_error() {
        let first = SignalServer::start(local()).expect("starts");
        let err = SignalServer::start(SignalConfig { bind: first.addr(), ..SignalConfig::default() })
            .expect_err("the port is taken");
        assert!(err.to_string().contains(&first.addr().to_string()), "{err}");
        first.stop().expect("stops");
    }
}
