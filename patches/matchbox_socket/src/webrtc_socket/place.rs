//! Where a socket's room is and how peers reach it, changed by the application while the socket
//! runs ([`SocketPlace`]).

use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};

use crate::webrtc_socket::RtcIceServerConfig;

/// Where a socket's room is and how its peers reach it, shared with the socket
/// ([`WebRtcSocketBuilder::place`](crate::WebRtcSocketBuilder::place)) and changed by the
/// application while it runs:
///
/// - [`SocketPlace::move_room`]: the room has moved to another signalling server (the one a
///   new host serves). The socket leaves its signalling server at once and joins the room
///   there, under the id its links know it by (with
///   [`signaling_rejoin`](crate::WebRtcSocketBuilder::signaling_rejoin)).
/// - [`SocketPlace::set_ice_server`]: the ICE servers that peer connections made from now on
///   use (the new signalling server's STUN).
/// - [`SocketPlace::set_reach`]: this machine's public address and the UDP ports its router
///   forwards to it. Each peer connection made from now on binds one of those ports while it
///   lives (when one is free), and offers the public address with it as a server reflexive
///   candidate: a peer behind any NAT, a strict one included, reaches it there directly.
#[derive(Clone, Default)]
pub struct SocketPlace {
    inner: Arc<Mutex<PlaceState>>,
    /// Woken on a move, for the signalling loop waiting on its server.
    moved: Arc<Mutex<Vec<futures_channel::mpsc::UnboundedSender<()>>>>,
    /// Peer connections that could not be made ([`SocketPlace::connections_failed`]).
    failed: Arc<std::sync::atomic::AtomicUsize>,
}

#[derive(Default)]
struct PlaceState {
    /// Counts the changes to what a new peer connection is made with (its ICE servers, the
    /// reach): one made ahead before the newest is not used.
    generation: u64,
    room_url: Option<String>,
    ice_server: Option<RtcIceServerConfig>,
    reach: Option<Reach>,
    /// The ports of `reach` no connection holds.
    free: Vec<u16>,
}

/// This machine's public address and the UDP ports its router forwards to it, each to the same
/// port here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach {
    /// The router's public address.
    pub public_ip: IpAddr,
    /// The ports forwarded.
    pub ports: Vec<u16>,
}

/// One port of a [`Reach`], held by a peer connection until it is dropped.
#[derive(Debug)]
pub(crate) struct PortLease {
    pub(crate) port: u16,
    pub(crate) public_ip: IpAddr,
    place: SocketPlace,
}

impl Drop for PortLease {
    fn drop(&mut self) {
        let mut state = self.place.state();
        if state.reach.as_ref().is_some_and(|r| r.ports.contains(&self.port)) && !state.free.contains(&self.port) {
            state.free.push(self.port);
        }
    }
}

impl std::fmt::Debug for SocketPlace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("SocketPlace")
            .field("room_url", &state.room_url.as_ref().map(|u| u.split('?').next().unwrap_or_default().to_owned()))
            .field("reach", &state.reach)
            .finish()
    }
}

impl SocketPlace {
    /// A place that changes nothing: the socket's room and ICE servers are its builder's.
    pub fn new() -> SocketPlace {
        SocketPlace::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PlaceState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The room is at `room_url` now: the socket leaves its signalling server and joins it
    /// there at once, and again there whenever its signalling is lost.
    pub fn move_room(&self, room_url: impl Into<String>) {
        self.state().room_url = Some(room_url.into());
        self.moved.lock().unwrap_or_else(PoisonError::into_inner).retain(|tx| tx.unbounded_send(()).is_ok());
    }

    /// The ICE servers of the peer connections made from now on.
    pub fn set_ice_server(&self, ice_server: RtcIceServerConfig) {
        let mut state = self.state();
        state.ice_server = Some(ice_server);
        state.generation += 1;
    }

    /// This machine's public address and forwarded ports (`None`: none), for the peer
    /// connections made from now on.
    pub fn set_reach(&self, reach: Option<Reach>) {
        let mut state = self.state();
        state.free = reach.as_ref().map(|r| r.ports.iter().rev().copied().collect()).unwrap_or_default();
        state.reach = reach;
        state.generation += 1;
    }

    /// What new peer connections are made with now, as a count of its changes: a connection
    /// made ahead under an older one is made again.
    pub(crate) fn generation(&self) -> u64 {
        self.state().generation
    }

    /// The room's URL, if it moved.
    pub fn room_url(&self) -> Option<String> {
        self.state().room_url.clone()
    }

    /// The ICE servers to use, if they were set.
    pub(crate) fn ice_server(&self) -> Option<RtcIceServerConfig> {
        self.state().ice_server.clone()
    }

    /// A forwarded port for a new peer connection, if one is free: one no connection of this
    /// socket holds, and nothing else on this machine has bound meanwhile.
    pub(crate) fn lease_port(&self) -> Option<PortLease> {
        let mut state = self.state();
        let public_ip = state.reach.as_ref()?.public_ip;
        let bindable = |port: u16| std::net::UdpSocket::bind((std::net::Ipv4Addr::UNSPECIFIED, port)).is_ok();
        let at = state.free.iter().rposition(|&port| bindable(port))?;
        let port = state.free.remove(at);
        drop(state);
        Some(PortLease { port, public_ip, place: self.clone() })
    }

    /// How many peer connections could not be made (webrtc-rs refused to build one: no
    /// interface to bind, a multicast DNS socket the machine does not allow): each ended its
    /// handshake, or was not made ahead, and nothing else.
    pub fn connections_failed(&self) -> usize {
        self.failed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A peer connection could not be made.
    pub(crate) fn connection_failed(&self) {
        self.failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Wakes the receiver on each [`SocketPlace::move_room`].
    pub(crate) fn on_move(&self) -> futures_channel::mpsc::UnboundedReceiver<()> {
        let (tx, rx) = futures_channel::mpsc::unbounded();
        self.moved.lock().unwrap_or_else(PoisonError::into_inner).push(tx);
        rx
    }
}

/// A server reflexive candidate for `public_ip` beside a host candidate on a forwarded port
/// (`candidate:F 1 udp P IP PORT typ host …` with `PORT` the lease's): the same port at the
/// public address, with the host candidate's as its related address. `None` for any other
/// candidate.
pub(crate) fn reflexive_beside(host_candidate: &str, lease_port: u16, public_ip: IpAddr) -> Option<String> {
    let fields: Vec<&str> = host_candidate.split_whitespace().collect();
    let [foundation, component, protocol, _priority, ip, port, typ, kind, ..] = fields[..] else { return None };
    if typ != "typ" || kind != "host" || !protocol.eq_ignore_ascii_case("udp") || port.parse() != Ok(lease_port) {
        return None;
    }
    let local: IpAddr = ip.parse().ok()?;
    if local.is_ipv4() != public_ip.is_ipv4() || local == public_ip || local.is_loopback() {
        return None;
    }
    let component: u32 = component.parse().ok()?;
    // RFC 8445's formula with the server reflexive type preference (100), below host.
    let priority = (100u32 << 24) | (65535 << 8) | (256 - component.min(256));
    let foundation = foundation.strip_prefix("candidate:").unwrap_or(foundation);
    Some(format!(
        "candidate:{foundation}9 {component} udp {priority} {public_ip} {lease_port} typ srflx raddr {local} rport {lease_port}"
    ))
}
