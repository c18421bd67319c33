//! The signalling server: introduces peers of a lobby so that they can open WebRTC links.
//!
//! It speaks matchbox's signalling protocol (its full mesh). A peer connects its
//! websocket to `ws://HOST:PORT/CODE`; the first path segment is the room, and the
//! room is the lobby code, so everyone who types the same code meets. Once the data
//! channels are open the signalling server is no longer needed: established links
//! keep working when it goes away.
//!
//! A peer may name itself by a secret key, `ws://HOST:PORT/CODE?key=KEY`: its id is then
//! derived from the key (the first 16 bytes of SHA-1 over `vimp peer key`, a zero byte and the
//! key), the same on every server, and only who holds the key gets it. Our peers do
//! ([`WebRtcTransport`](crate::transport::webrtc::WebRtcTransport)): when their websocket is
//! lost (the rendezvous restarted, or the one a balancer sends the room to went away) they join
//! the room again, here or on another server, under the id their links know them by. A peer
//! that joins under an id already in the room takes that member's place, and its old socket is
//! closed: the room hears no `PeerLeft`, and a `NewPeer` that its linked peers pass over.
//!
//! It also hands out the ICE servers (STUN/TURN) the peers should use, as JSON at
//! `GET /ice`, the way real deployments hand out TURN credentials. None are built in:
//! the list is empty unless the operator gives one, so no third-party server is ever
//! contacted by default.
//!
//! TURN credentials need not be a static password: given the secret a TURN server shares
//! ([`TurnSecret`]; coturn's `use-auth-secret` with `static-auth-secret`, the "TURN REST
//! API" scheme), every `GET /ice` mints its own, valid for a limited time: the user name is
//! `EXPIRY:PEER` (`EXPIRY` in Unix seconds, `PEER` a name for the one asking) and the
//! password `base64(HMAC-SHA1(secret, user name))`, which the TURN server checks with the
//! same secret and refuses once `EXPIRY` has passed.
//!
//! The server runs on its own thread with its own tokio runtime; [`SignalServer::start`]
//! binds before it returns, so the bound address is known at once (bind to port 0 in
//! tests).

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::transport::PeerKey;

#[cfg(feature = "signal-server")]
mod server;
#[cfg(feature = "signal-server")]
pub use server::{
    DEFAULT_PER_ADDRESS, DEFAULT_REQUEST_DEADLINE, DEFAULT_TURN_TTL_SECS, DEFAULT_UPGRADES_PER_SECOND, Limits,
    MAX_SIGNAL, RESERVED_FILES, SignalConfig, SignalServer, TurnSecret, WS_BUFFER, connections_allowed,
    open_files_limit, raise_open_files_limit, turn_password,
};

/// The path at which the ICE server list is served.
pub const ICE_PATH: &str = "/ice";

/// The path under which a room's head count is served: `GET /rooms/CODE` answers
/// [`RoomInfo`] (`{"peers": N, "members": [...]}`, everyone whose websocket is in room `CODE`
/// now). A peer that cannot get in asks it to tell "no host in the room" from "no network
/// path to it"; a successor that lost its host asks it whether the host's process is still
/// there (the rendezvous as a witness, see [`crate::client::Witness`]).
pub const ROOMS_PATH: &str = "/rooms";

/// How often a peer's socket speaks to the rendezvous when nothing else is said (matchbox's
/// keep-alive): the room list's `idle_ms` of a live member stays under this, give or take a
/// lost segment's retransmission.
pub const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_millis(250);

/// A member whose socket said nothing for this long is gone as far as the witness goes: its
/// line was cut, or its process froze. Six keep-alives missed: on a line losing 2 % of its
/// packets, TCP brings a lost keep-alive within one retransmission timeout (a few hundred
/// ms), and a keep-alive lost twice over (about one in 2,500) still arrives within 1.2 s; a
/// successor alone with its host waits this long after the host's line went dead.
pub const MEMBER_GONE_AFTER: std::time::Duration = std::time::Duration::from_millis(1500);

/// What `GET /rooms` answers: how much the server holds (for an operator's monitoring, and to
/// see where a balancer sent the rooms).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RendezvousLoad {
    /// Rooms with anyone in them.
    pub rooms: usize,
    /// Peers in rooms.
    pub peers: usize,
}

/// What `GET /rooms/CODE` answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomInfo {
    /// How many peers are in the room now, the asking one included if its websocket is open.
    pub peers: usize,
    /// Who they are, and how long ago each socket last said anything (servers before the
    /// list answer without it).
    #[serde(default)]
    pub members: Vec<RoomMember>,
}

/// One member of a room, as `GET /rooms/CODE` lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomMember {
    /// Its peer id (a UUID, as matchbox assigns it; [`peer_id`] writes a [`PeerKey`] so).
    pub id: String,
    /// Milliseconds since its socket last said anything (a signal or a keep-alive).
    pub idle_ms: u64,
}

impl RoomInfo {
    /// Whether `peer`'s process is still in the room: listed, and heard within
    /// [`MEMBER_GONE_AFTER`]. `None` from a server that lists no members.
    pub fn holds(&self, peer: PeerKey) -> Option<bool> {
        let id = peer_id(peer);
        self.holds_any(|member| member == id)
    }

    /// Whether the room holds a process other than `peer`'s: a member listed and heard
    /// within [`MEMBER_GONE_AFTER`]. `None` from a server that lists no members.
    pub fn holds_others_than(&self, peer: PeerKey) -> Option<bool> {
        let id = peer_id(peer);
        self.holds_any(|member| member != id)
    }

    /// Whether a member whose id passes `which` was heard within [`MEMBER_GONE_AFTER`];
    /// `None` from a server that lists no members.
    fn holds_any(&self, which: impl Fn(&str) -> bool) -> Option<bool> {
        if self.members.is_empty() && self.peers > 0 {
            return None;
        }
        let gone_after = MEMBER_GONE_AFTER.as_millis() as u64;
        Some(self.members.iter().any(|m| which(&m.id) && m.idle_ms < gone_after))
    }
}

/// A peer key as the rendezvous writes peer ids: the UUID of which it is the 128 bits,
/// hyphenated (`8-4-4-4-12` lowercase hex digits).
pub fn peer_id(peer: PeerKey) -> String {
    let h = format!("{:032x}", peer.0);
    format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..])
}

/// The address a request to the rendezvous came from, in each request's extensions: what
/// routes served beside the signalling ([`SignalServer::start_with`]) rate-limit by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerAddr(pub std::net::SocketAddr);

/// The default port of the signalling server.
pub const DEFAULT_PORT: u16 = 3536;

/// One ICE server, in the WebRTC `RTCIceServer` JSON form.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IceServer {
    /// `stun:` or `turn:` URLs.
    pub urls: Vec<String>,
    /// TURN user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// TURN password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credential: Option<String>,
}

/// What `GET /ice` answers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IceConfig {
    /// The servers, possibly none.
    pub ice_servers: Vec<IceServer>,
}

/// Why the signalling server did not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignalError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        reason: String,
    },
    /// The runtime could not start.
    #[error("cannot start the signalling runtime: {0}")]
    Runtime(String),
    /// The server failed while serving.
    #[error("the signalling server failed: {0}")]
    Serve(String),
}

/// Asks the signalling server at `server` (`ws://HOST:PORT`) for its ICE list (`GET /ice`).
///
/// Plain `ws://` only (the request is HTTP/1.1 over the same address); a `wss://` server's
/// list comes from flags or settings instead.
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
pub fn fetch_ice(server: &str, timeout: std::time::Duration) -> Result<IceConfig, SignalError> {
    http_get(server, ICE_PATH, "the ICE list", timeout)
}

/// Asks the signalling server at `server` (`ws://HOST:PORT`) how many peers room `room` holds
/// (`GET /rooms/ROOM`). Servers other than `vimp signal` do not answer it.
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
pub fn fetch_room(server: &str, room: &str, timeout: std::time::Duration) -> Result<RoomInfo, SignalError> {
    http_get(server, &format!("{ROOMS_PATH}/{room}"), "the room", timeout)
}

/// Fetches how many rooms and peers the signalling server at `server` holds (`GET /rooms`).
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
pub fn fetch_load(server: &str, timeout: std::time::Duration) -> Result<RendezvousLoad, SignalError> {
    http_get(server, ROOMS_PATH, "the rendezvous's load", timeout)
}

/// How long a connection attempt to the signalling server waits before another one starts
/// beside it (see [`connect_racing`]).
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
const CONNECT_STAGGER: std::time::Duration = std::time::Duration::from_millis(250);

/// Connects to `addr`, starting another attempt beside the ones still waiting every
/// [`CONNECT_STAGGER`] until one connects or `timeout` runs out. A lost SYN or SYN-ACK costs
/// TCP its initial retransmission timeout, 1 s (then 2 s, 4 s): on a line that loses 2 % each
/// way that was one join in a dozen waiting a second or more before anything else began.
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
fn connect_racing(addr: std::net::SocketAddr, timeout: std::time::Duration) -> std::io::Result<std::net::TcpStream> {
    use std::sync::mpsc;
    let deadline = std::time::Instant::now() + timeout;
    let (tx, rx) = mpsc::channel();
    let mut attempts = 0;
    let mut last_error = None;
    loop {
        let now = std::time::Instant::now();
        if now < deadline {
            let tx = tx.clone();
            let left = deadline - now;
            attempts += 1;
            // A losing attempt that connects later is dropped, which closes it.
            std::thread::spawn(move || {
                let _ = tx.send(std::net::TcpStream::connect_timeout(&addr, left));
            });
        }
        let wait = CONNECT_STAGGER.min(deadline.saturating_duration_since(std::time::Instant::now()));
        match rx.recv_timeout(wait) {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => {
                attempts -= 1;
                // Refused or unreachable at once: no use trying again and again.
                if attempts == 0 {
                    return Err(e);
                }
                last_error = Some(e);
            }
            Err(mpsc::RecvTimeoutError::Timeout) if std::time::Instant::now() < deadline => {}
            Err(_) => {
                return Err(last_error.unwrap_or_else(|| std::io::Error::from(std::io::ErrorKind::TimedOut)));
            }
        }
    }
}

/// `GET path` on the signalling server's HTTP side, its JSON answer parsed.
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
fn http_get<T: serde::de::DeserializeOwned>(
    server: &str,
    path: &str,
    what: &str,
    timeout: std::time::Duration,
) -> Result<T, SignalError> {
    let fail = |reason: String| SignalError::Serve(format!("fetching {what} from {server}: {reason}"));
    let (status, body) = http_request(server, "GET", path, None, timeout).map_err(|e| fail(e.to_string()))?;
    if status != 200 {
        return Err(fail(format!("HTTP {status}: {}", body.chars().take(200).collect::<String>())));
    }
    serde_json::from_str(&body).map_err(|e| fail(e.to_string()))
}

/// One HTTP/1.1 request (`method path`, with a JSON `body` if given) to the signalling
/// server at `server` (`ws://HOST:PORT`): the answer's status and body (at most 64 KiB).
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
pub fn http_request(
    server: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
    timeout: std::time::Duration,
) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    use std::net::ToSocketAddrs;

    let fail = |reason: &str| std::io::Error::other(reason.to_owned());
    let authority = server
        .strip_prefix("ws://")
        .ok_or_else(|| fail("only ws:// signalling servers serve it over plain HTTP"))?
        .trim_end_matches('/');
    let authority = authority.split('/').next().unwrap_or(authority);
    let addr = authority.to_socket_addrs()?.next().ok_or_else(|| fail("the address resolves to nothing"))?;
    let mut stream = connect_racing(addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    // One segment, sent at once: `write!` straight to the socket wrote each piece of the
    // format on its own, and Nagle's algorithm held each after the first for the server's
    // delayed ACK, a round trip and more before every join.
    stream.set_nodelay(true)?;
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n");
    match body {
        Some(body) => {
            request.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n\r\n", body.len()));
            request.push_str(body);
        }
        None if method != "GET" => request.push_str("Content-Length: 0\r\n\r\n"),
        None => request.push_str("\r\n"),
    }
    stream.write_all(request.as_bytes())?;
    let mut answer = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut answer)?;
    let text = String::from_utf8_lossy(&answer);
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| fail("no HTTP answer"))?;
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).ok_or_else(|| fail("no HTTP status"))?;
    Ok((status, body.to_owned()))
}

#[cfg(all(test, any(feature = "webrtc", feature = "signal-server")))]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_racing_connect_reaches_a_listener_and_a_refusal_ends_it() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
        let addr = listener.local_addr().expect("an address");
        let stream = connect_racing(addr, Duration::from_secs(10)).expect("connects");
        assert_eq!(stream.peer_addr().expect("a peer"), addr);
        let (_accepted, from) = listener.accept().expect("accepts");
        assert_eq!(from, stream.local_addr().expect("an address"));
        // Nothing listens there any more: refused, not waited for until the timeout.
        drop(listener);
        let refused = connect_racing(addr, Duration::from_secs(3600)).expect_err("nothing listens");
        assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    }
}
