//! The signalling server itself (feature `signal-server`): matchbox's full-mesh server with
//! `GET /ice` and `GET /rooms/CODE` beside it, on a thread and a tokio runtime of its own.
//! Its mesh is matchbox's, but for one thing: it notes when each member's socket was last
//! heard, which the room list says (`idle_ms`), so that a successor can ask whether its lost
//! host's process is still there.

use std::net::SocketAddr;
use std::thread::JoinHandle;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::ws::Message;
use axum::routing::get;
use futures::StreamExt;
use matchbox_protocol::{JsonPeerEvent, PeerId, PeerRequest};
use matchbox_signaling::common_logic::parse_request;
use matchbox_signaling::topologies::full_mesh::FullMeshState;
use matchbox_signaling::{ClientRequestError, NoCallbacks, SignalingServerBuilder, SignalingTopology, WsStateMeta};

use super::{DEFAULT_PORT, ICE_PATH, IceConfig, IceServer, ROOMS_PATH, RoomInfo, RoomMember, SignalError};

/// How to run the signalling server.
#[derive(Clone, Debug, PartialEq, Eq)]
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
}

impl Default for SignalConfig {
    fn default() -> Self {
        SignalConfig {
            bind: SocketAddr::from(([0, 0, 0, 0], DEFAULT_PORT)),
            ice: IceConfig::default(),
            turn_secret: None,
            stun_port: None,
        }
    }
}

/// How long minted TURN credentials last by default: a day, the TURN REST API's usual.
pub const DEFAULT_TURN_TTL_SECS: u64 = 24 * 60 * 60;

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
    /// The TURN server entry with a credential for `peer`, valid until `now_unix + ttl_secs`.
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

/// Who is in which room, for `GET /rooms/CODE`, and when each member's socket last said
/// anything (its signals and matchbox's keep-alives, every [`KEEP_ALIVE`](super::KEEP_ALIVE)).
#[derive(Debug, Default)]
struct Rooms {
    /// Each connected peer's room and when it was last heard.
    members: HashMap<PeerId, (String, Instant)>,
    /// Members per room.
    by_room: HashMap<String, BTreeSet<PeerId>>,
}

impl Rooms {
    fn joined(&mut self, peer: PeerId, room: &str, now: Instant) {
        self.members.insert(peer, (room.to_owned(), now));
        self.by_room.entry(room.to_owned()).or_default().insert(peer);
    }

    fn heard(&mut self, peer: PeerId, now: Instant) {
        if let Some((_, at)) = self.members.get_mut(&peer) {
            *at = now;
        }
    }

    fn left(&mut self, peer: PeerId) {
        let Some((room, _)) = self.members.remove(&peer) else { return };
        if let Some(set) = self.by_room.get_mut(&room) {
            set.remove(&peer);
            if set.is_empty() {
                self.by_room.remove(&room);
            }
        }
    }

    fn info(&self, room: &str, now: Instant) -> RoomInfo {
        let members: Vec<RoomMember> = self
            .by_room
            .get(room)
            .into_iter()
            .flatten()
            .filter_map(|peer| {
                let (_, at) = self.members.get(peer)?;
                let idle_ms = now.saturating_duration_since(*at).as_millis().min(u128::from(u64::MAX)) as u64;
                Some(RoomMember { id: peer.0.to_string(), idle_ms })
            })
            .collect();
        RoomInfo { peers: members.len(), members }
    }
}

/// What every socket's state machine shares: matchbox's full-mesh registry and the room list.
#[derive(Clone, Default)]
struct MeshState {
    mesh: FullMeshState,
    rooms: Arc<Mutex<Rooms>>,
}

impl matchbox_signaling::SignalingState for MeshState {}

/// matchbox's full mesh (every signal relayed to the peer it names, `NewPeer` and
/// `PeerLeft` to the room), noting in [`Rooms`] when each socket was last heard.
#[derive(Debug, Default)]
struct WitnessedMesh;

#[async_trait::async_trait]
impl SignalingTopology<NoCallbacks, MeshState> for WitnessedMesh {
    async fn state_machine(upgrade: WsStateMeta<NoCallbacks, MeshState>) {
        let WsStateMeta { room, peer_id, sender, mut receiver, mut state, .. } = upgrade;
        state.mesh.add_peer(peer_id, sender, room.clone());
        if let Ok(mut rooms) = state.rooms.lock() {
            rooms.joined(peer_id, &room, Instant::now());
        }
        while let Some(request) = receiver.next().await {
            if let Ok(mut rooms) = state.rooms.lock() {
                rooms.heard(peer_id, Instant::now());
            }
            let request = match parse_request(request) {
                Ok(request) => request,
                // Not a request of the protocol: skipped, as matchbox's own mesh does.
                Err(ClientRequestError::Json(_) | ClientRequestError::UnsupportedType(_)) => continue,
                Err(_) => break,
            };
            match request {
                PeerRequest::Signal { receiver, data } => {
                    let event = Message::Text(JsonPeerEvent::Signal { sender: peer_id, data }.to_string().into());
                    // A signal to a peer that left meanwhile goes nowhere.
                    let _ = state.mesh.try_send_to_peer(receiver, event, room.clone());
                }
                PeerRequest::KeepAlive => {}
            }
        }
        state.mesh.remove_peer(&peer_id);
        if let Ok(mut rooms) = state.rooms.lock() {
            rooms.left(peer_id);
        }
    }
}

/// A running signalling server.
#[derive(Debug)]
pub struct SignalServer {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), SignalError>>>,
}

impl SignalServer {
    /// Binds `config.bind` and serves on a thread of its own.
    pub fn start(config: SignalConfig) -> Result<SignalServer, SignalError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let ice = config.ice.clone();
        let turn = config.turn_secret.clone();
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stun_port = config.stun_port;
        let answer = move |headers: axum::http::HeaderMap| {
            let mut list = ice.clone();
            let host = headers.get(axum::http::header::HOST).and_then(|h| h.to_str().ok()).and_then(host_of);
            if let (Some(port), Some(host)) = (stun_port, host) {
                list.ice_servers
                    .insert(0, IceServer { urls: vec![format!("stun:{host}:{port}")], ..IceServer::default() });
            }
            if let Some(turn) = &turn {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
                let n = asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                list.ice_servers.push(turn.mint(now, &format!("vimp-{n}")));
            }
            std::future::ready(axum::Json(list))
        };
        let state = MeshState::default();
        let rooms = state.rooms.clone();
        let list = move |axum::extract::Path(room): axum::extract::Path<String>| {
            let info = rooms.lock().map(|r| r.info(&room, Instant::now())).unwrap_or_default();
            std::future::ready(axum::Json(info))
        };
        let mut server = SignalingServerBuilder::new(config.bind, WitnessedMesh, state)
            .mutate_router(move |router| {
                router.route(ICE_PATH, get(answer)).route(&format!("{ROOMS_PATH}/{{room}}"), get(list))
            })
            .with_shutdown(rx)
            .build();
        let addr = server.bind().map_err(|e| SignalError::Bind { addr: config.bind, reason: e.to_string() })?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .thread_name("vimp-signal")
            .build()
            .map_err(|e| SignalError::Runtime(e.to_string()))?;
        let thread = std::thread::Builder::new()
            .name("vimp-signal".into())
            .spawn(move || runtime.block_on(server.serve()).map_err(|e| SignalError::Serve(e.to_string())))
            .map_err(|e| SignalError::Runtime(e.to_string()))?;
        Ok(SignalServer { addr, shutdown: Some(tx), thread: Some(thread) })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
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
    fn serves_minted_turn_credentials_that_expire_later() {
        let mut config = local();
        config.turn_secret =
            Some(TurnSecret { urls: vec!["turn:t.example.net:3478".into()], secret: "s3".into(), ttl_secs: 600 });
        let server = SignalServer::start(config).expect("start");
        let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs();
        let first = fetch_ice(&server.url(), Duration::from_secs(5)).expect("ice");
        let second = fetch_ice(&server.url(), Duration::from_secs(5)).expect("ice");
        let (a, b) = (&first.ice_servers[0], &second.ice_servers[0]);
        assert_eq!(a.urls, ["turn:t.example.net:3478"]);
        let user = a.username.as_deref().expect("a user name");
        let (expiry, peer) = user.split_once(':').expect("EXPIRY:PEER");
        let expiry: u64 = expiry.parse().expect("Unix seconds");
        assert!((before + 600..before + 660).contains(&expiry), "{expiry} vs {before}");
        assert!(!peer.is_empty());
        assert_eq!(a.credential.as_deref(), Some(turn_password("s3", user).as_str()));
        assert_ne!(a.username, b.username, "each peer gets its own");
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
    fn rooms_count_who_is_in_them() {
        let server = SignalServer::start(local()).expect("starts");
        await_count(&server, "K7MP2Q", 0);
        let a = enter(&server, "K7MP2Q");
        let b = enter(&server, "K7MP2Q");
        let other = enter(&server, "ABCDEF");
        await_count(&server, "K7MP2Q", 2);
        await_count(&server, "ABCDEF", 1);
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
        assert!(fetch_ice("wss://example.net", Duration::from_secs(1)).is_err());
        server.stop().expect("stops");
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
