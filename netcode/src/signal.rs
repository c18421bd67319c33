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

#[cfg(any(feature = "webrtc", feature = "signal-server"))]
mod http;
#[cfg(feature = "signal-server")]
mod server;
#[cfg(feature = "signal-server")]
pub use server::{
    DEFAULT_IDLE, DEFAULT_LOOKUPS_PER_SECOND, DEFAULT_MESSAGES_PER_ADDRESS, DEFAULT_MESSAGES_PER_SECOND,
    DEFAULT_PER_ADDRESS, DEFAULT_REQUEST_DEADLINE, DEFAULT_TURN_TTL_SECS, DEFAULT_UPGRADES_PER_SECOND, Limits,
    MAX_ROOM, MAX_SIGNAL, RESERVED_FILES, SignalConfig, SignalServer, TurnSecret, WS_BUFFER, connections_allowed,
    open_files_limit, raise_open_files_limit, turn_password,
};

#[cfg(any(feature = "webrtc", feature = "signal-server"))]
use http::http_get;
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
pub use http::http_request;

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
    /// The server failed while serving, or answered what could not be used.
    #[error("the signalling server failed: {0}")]
    Serve(String),
    /// The rendezvous could not be reached: the machine answered that nothing listens at the
    /// address (`refused`), or no answer came in time.
    #[error("cannot reach the rendezvous at {server}: {reason}")]
    Unreachable {
        /// The rendezvous asked (`ws://HOST:PORT`).
        server: String,
        /// Its machine answered that no process listens there: nothing serves it now.
        refused: bool,
        /// What the connection said.
        reason: String,
    },
}

/// Asks the signalling server at `server` (`ws://HOST:PORT`, or `wss://` over TLS) for its
/// ICE list (`GET /ice`): what it hands a stranger, no TURN credential among it (see
/// [`fetch_ice_in`]).
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
pub fn fetch_ice(server: &str, timeout: std::time::Duration) -> Result<IceConfig, SignalError> {
    http_get(server, ICE_PATH, "the ICE list", timeout)
}

/// As [`fetch_ice`], for the peer whose socket is in room `room` under `key` (the `?key=` of
/// its room URL, see [`room_key`]): a rendezvous that mints TURN credentials mints one for such
/// a peer alone, bound to its room and id, and waits a moment for its socket to get there.
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
pub fn fetch_ice_in(
    server: &str,
    room: &str,
    key: &str,
    timeout: std::time::Duration,
) -> Result<IceConfig, SignalError> {
    let safe = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if !(safe(room) && safe(key)) {
        return fetch_ice(server, timeout);
    }
    http_get(server, &format!("{ICE_PATH}?room={room}&key={key}"), "the ICE list", timeout)
}

/// The peer a socket that names itself by `key` (`?key=KEY`) is in its room, on every
/// rendezvous; `None` for a key a rendezvous refuses.
#[cfg(all(test, feature = "signal-server"))]
pub(crate) fn peer_of_room_key(key: &str) -> Option<crate::transport::PeerKey> {
    server::peer_of_key(key).map(|id| crate::transport::PeerKey(id.0.as_u128()))
}

/// The room and the key a room URL (`ws://HOST:PORT/ROOM?key=KEY`) names, if it names both.
pub fn room_key(room_url: &str) -> Option<(&str, &str)> {
    let (path, query) = room_url.split_once('?')?;
    let room = path.rsplit_once('/')?.1;
    let key = query.split('&').find_map(|pair| pair.strip_prefix("key="))?;
    (!room.is_empty() && !key.is_empty()).then_some((room, key))
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
