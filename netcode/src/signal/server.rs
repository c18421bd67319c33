//! The signalling server itself (feature `signal-server`): matchbox's full-mesh server with
//! `GET /ice` and `GET /rooms/CODE` beside it, on a thread and a tokio runtime of its own.

use std::net::SocketAddr;
use std::thread::JoinHandle;

use axum::routing::get;
use matchbox_signaling::SignalingServer;

use super::{DEFAULT_PORT, ICE_PATH, IceConfig, IceServer, ROOMS_PATH, RoomInfo, SignalError};

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

/// Who is in which room, for `GET /rooms/CODE`. matchbox names the room when a websocket asks
/// to connect, the peer when it assigns an id, and only the peer when it connects and leaves.
#[derive(Debug, Default)]
struct Rooms {
    /// Rooms of websockets that asked to connect and have no id yet, by their address.
    asking: std::collections::HashMap<SocketAddr, String>,
    /// Each connected or connecting peer's room.
    room_of: std::collections::HashMap<matchbox_protocol::PeerId, String>,
    /// Peers per room, connected ones only.
    count: std::collections::HashMap<String, usize>,
}

impl Rooms {
    /// Upgrades that never complete would otherwise pile up here.
    const MAX_ASKING: usize = 4096;

    fn asked(&mut self, origin: SocketAddr, room: String) {
        if self.asking.len() >= Self::MAX_ASKING {
            self.asking.clear();
        }
        self.asking.insert(origin, room);
    }

    fn assigned(&mut self, origin: SocketAddr, peer: matchbox_protocol::PeerId) {
        if let Some(room) = self.asking.remove(&origin) {
            self.room_of.insert(peer, room);
        }
    }

    fn joined(&mut self, peer: matchbox_protocol::PeerId) {
        if let Some(room) = self.room_of.get(&peer) {
            *self.count.entry(room.clone()).or_default() += 1;
        }
    }

    fn left(&mut self, peer: matchbox_protocol::PeerId) {
        let Some(room) = self.room_of.remove(&peer) else { return };
        if let Some(n) = self.count.get_mut(&room) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.count.remove(&room);
            }
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
    #[expect(clippy::result_large_err, reason = "matchbox's connection-request callback returns its HTTP response")]
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
        let rooms = std::sync::Arc::new(std::sync::Mutex::new(Rooms::default()));
        let count = {
            let rooms = rooms.clone();
            move |axum::extract::Path(room): axum::extract::Path<String>| {
                let peers = rooms.lock().map_or(0, |r| r.count.get(&room).copied().unwrap_or(0));
                std::future::ready(axum::Json(RoomInfo { peers }))
            }
        };
        let (asked, assigned, joined, left) = (rooms.clone(), rooms.clone(), rooms.clone(), rooms);
        let mut server = SignalingServer::full_mesh_builder(config.bind)
            .mutate_router(move |router| {
                router.route(ICE_PATH, get(answer)).route(&format!("{ROOMS_PATH}/{{room}}"), get(count))
            })
            .on_connection_request(move |meta| {
                if let Ok(mut rooms) = asked.lock() {
                    rooms.asked(meta.origin, meta.path.unwrap_or_else(|| "world".into()));
                }
                Ok(true)
            })
            .on_id_assignment(move |(origin, peer)| {
                if let Ok(mut rooms) = assigned.lock() {
                    rooms.assigned(origin, peer);
                }
            })
            .on_peer_connected(move |peer| {
                if let Ok(mut rooms) = joined.lock() {
                    rooms.joined(peer);
                }
            })
            .on_peer_disconnected(move |peer| {
                if let Ok(mut rooms) = left.lock() {
                    rooms.left(peer);
                }
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
        let mut s = TcpStream::connect(server.addr()).expect("connect");
        write!(
            s,
            "GET /{room} HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .expect("write");
        read_until(&mut s, |b| String::from_utf8_lossy(b).contains("IdAssigned"));
        s
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
