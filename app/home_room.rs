//! The default setup's room: a host at home that serves its room's rendezvous in its own
//! process, opens its ports on the home router and tells friends the invite ([`HomeRoom`]);
//! and a player that follows the room to a new host that serves it ([`RoomFollower`]).
//!
//! A player who presses Host (or runs `vimp host` without `--signal`) gets a rendezvous (the
//! signalling server and a STUN responder) inside its own process. Friends in other homes reach
//! it because the host asks its router to forward the rendezvous's TCP port, the STUN port and
//! a pool of UDP ports for its WebRTC connections (`vimp_netcode::portmap`: UPnP-IGD, PCP,
//! NAT-PMP), then offers its router's public address with each of those ports as a candidate
//! (`RoomPlace::set_reach`): a friend behind any NAT, a strict one included, reaches it there
//! directly, with no TURN server. The invite it shows (and sends every player, `ROOM`) is the
//! room's URL at that public address, and at its address on its own network for players there.
//!
//! When that host goes, its rendezvous goes with it: the successor that takes the match over
//! serves the room in its own process the same way, and every player's socket moves there
//! ([`RoomFollower`]) so that friends can still join, with the new invite.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context;
use vimp_netcode::lobby::{Invite, LobbyCode, room_url};
use vimp_netcode::portmap::{PortMapError, PortMapper, PortRequest, Protocol};
use vimp_netcode::signal::{SignalConfig, SignalServer};
use vimp_netcode::stun::StunServer;
use vimp_netcode::transport::webrtc::RoomPlace;

/// The port a home room's STUN responder takes when it is free.
pub const STUN_PORT: u16 = 3478;

/// The first of the UDP ports a home room's WebRTC connections take (and the router forwards).
pub const WEBRTC_PORTS_FROM: u16 = 3540;

/// Connections a socket keeps made ahead of its handshakes, each holding a port: the pool is
/// the players' links and these.
const SPARE_CONNECTIONS: usize = 4;

/// The links a room taken over is ready for (the engine's default most players).
const TAKEN_OVER_LINKS: usize = 16;

/// Where a process's own socket reaches a rendezvous it serves.
fn loopback(port: u16) -> String {
    format!("ws://127.0.0.1:{port}")
}

/// A room this process serves itself: its rendezvous and STUN responder, the mapping of their
/// ports and its WebRTC ports on the home router, and the invite.
pub struct HomeRoom {
    code: LobbyCode,
    server: SignalServer,
    _stun: Option<StunServer>,
    mapper: Option<PortMapper>,
    /// The UDP ports for WebRTC connections, free when the room opened.
    webrtc_ports: Vec<u16>,
    invite: Invite,
    /// Whether the router's answer came (and was said).
    settled: bool,
}

impl HomeRoom {
    /// Serves room `code`: the rendezvous on `bind` (any free port when that one is taken and
    /// `any_port`), a STUN responder on UDP [`STUN_PORT`] (or any), and, unless `map` is false,
    /// asks the router to forward them and UDP ports for `links` WebRTC links.
    pub fn open(
        code: LobbyCode,
        bind: SocketAddr,
        any_port: bool,
        links: usize,
        map: bool,
    ) -> anyhow::Result<HomeRoom> {
        let stun = StunServer::start(SocketAddr::new(bind.ip(), STUN_PORT))
            .or_else(|_| StunServer::start(SocketAddr::new(bind.ip(), 0)))
            .ok();
        let config =
            |bind| SignalConfig { bind, stun_port: stun.as_ref().map(|s| s.addr().port()), ..Default::default() };
        let server = match SignalServer::start(config(bind)) {
            Ok(server) => server,
            Err(_) if any_port => {
                SignalServer::start(config(SocketAddr::new(bind.ip(), 0))).context("starting the room's rendezvous")?
            }
            Err(e) => return Err(e).context("starting the room's rendezvous"),
        };
        let webrtc_ports = free_udp_ports(bind.ip(), WEBRTC_PORTS_FROM, links + SPARE_CONNECTIONS);
        let own = vimp_netcode::portmap::local_ip_toward(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)))
            .filter(|ip| !ip.is_loopback());
        let mut requests = vec![PortRequest::tcp(server.addr().port(), "signalling")];
        requests.extend(stun.as_ref().map(|s| PortRequest::udp(s.addr().port(), "STUN")));
        requests.extend(webrtc_ports.iter().map(|&p| PortRequest::webrtc(p)));
        let mapper = (map && own.is_some()).then(|| PortMapper::start(requests));
        let lan = own.map(|ip| room_url(&format!("ws://{}", SocketAddr::new(ip, server.addr().port())), &code));
        let invite = Invite { public: None, lan, served: true };
        Ok(HomeRoom { code, server, _stun: stun, mapper, webrtc_ports, invite, settled: !map || own.is_none() })
    }

    /// Serves, in this process that just took over its match, the room `follower` is in: its
    /// host served it and went with it. Its rendezvous on [`DEFAULT_PORT`](vimp_netcode::signal::DEFAULT_PORT)
    /// (any free port when that one is taken), its ports opened on the router when `map`, and
    /// every transport of the process moved there (the caller says the invite). `None`, said why
    /// on stderr, when it cannot.
    pub fn take_over(follower: &mut RoomFollower, map: bool) -> Option<HomeRoom> {
        let code = vimp_netcode::lobby::JoinTarget::parse(follower.current()).ok()?.code();
        let bind = SocketAddr::from(([0, 0, 0, 0], vimp_netcode::signal::DEFAULT_PORT));
        match HomeRoom::open(code, bind, true, TAKEN_OVER_LINKS, map) {
            Ok(home) => {
                follower.serve(&home.local_url());
                eprintln!("serving the room here now (its host served it): {}", home.signal());
                Some(home)
            }
            Err(e) => {
                eprintln!("cannot serve the room here: {e:#}; friends cannot join until someone hosts it");
                None
            }
        }
    }

    /// Where this process's own socket joins the room.
    pub fn local_url(&self) -> String {
        room_url(&loopback(self.server.addr().port()), &self.code)
    }

    /// The rendezvous's own address (`ws://127.0.0.1:PORT`), as this process reaches it.
    pub fn signal(&self) -> String {
        loopback(self.server.addr().port())
    }

    /// The invite: the room's URL for friends in other homes (once the router forwards its
    /// ports), and on this machine's network.
    pub fn invite(&self) -> &Invite {
        &self.invite
    }

    /// The invite to give friends: the public one, else the one on this network, else this
    /// machine's own.
    pub fn best_url(&self) -> String {
        self.invite.public.clone().or_else(|| self.invite.lan.clone()).unwrap_or_else(|| self.local_url())
    }

    /// Takes the router's answer when it came: the public address and forwarded ports go to
    /// the transports (`place`), and the invite gets its public URL. Returns what to tell the
    /// player, once.
    pub fn turn(&mut self, place: &RoomPlace) -> Option<Result<String, String>> {
        if self.settled {
            return None;
        }
        let outcome = self.mapper.as_ref()?.outcome()?;
        self.settled = true;
        Some(self.settle(outcome, place))
    }

    /// Waits up to `limit` for the router's answer (see [`HomeRoom::turn`]).
    pub fn wait(&mut self, place: &RoomPlace, limit: Duration) -> Option<Result<String, String>> {
        if self.settled {
            return None;
        }
        let outcome = self.mapper.as_ref()?.wait(limit)?;
        self.settled = true;
        Some(self.settle(outcome, place))
    }

    fn settle(
        &mut self,
        outcome: Result<vimp_netcode::portmap::Mapped, PortMapError>,
        place: &RoomPlace,
    ) -> Result<String, String> {
        let mapped = outcome.map_err(|e| format!("friends in other homes cannot reach this host yet: {e}"))?;
        let port = self.server.addr().port();
        let Some(external) = mapped.external_port(Protocol::Tcp, port) else {
            let why = mapped.to_forward().map_or_else(String::new, |f| format!(": forward {f}"));
            return Err(format!("the router did not open the rendezvous's port{why}"));
        };
        let forwarded: Vec<u16> =
            self.webrtc_ports.iter().copied().filter(|&p| mapped.external_port(Protocol::Udp, p) == Some(p)).collect();
        place.set_reach(Some((mapped.public_ip, forwarded.clone())));
        let public = room_url(&format!("ws://{}", SocketAddr::new(mapped.public_ip, external)), &self.code);
        self.invite.public = Some(public.clone());
        let mut said = format!(
            "the router ({}) opens this host to other homes at {} ({} of {} WebRTC ports)",
            mapped.method,
            mapped.public_ip,
            forwarded.len(),
            self.webrtc_ports.len()
        );
        if let Some(forward) = mapped.to_forward() {
            said.push_str(&format!("; it refused some: forward {forward}"));
        }
        Ok(said)
    }
}

impl Drop for HomeRoom {
    fn drop(&mut self) {
        // The router forwards nothing once this process no longer serves the room.
        if let Some(mapper) = self.mapper.take() {
            mapper.stop();
        }
    }
}

/// `count` UDP ports from `from` up that this machine can bind on `ip` now (skipping taken ones).
fn free_udp_ports(ip: IpAddr, from: u16, count: usize) -> Vec<u16> {
    (from..=u16::MAX).filter(|&port| std::net::UdpSocket::bind(SocketAddr::new(ip, port)).is_ok()).take(count).collect()
}

/// A player's view of where its room is: when a new host serves the room in its own process
/// (its invite says so), the player's transports move there, with that rendezvous's ICE
/// servers, and its witness asks there.
pub struct RoomFollower {
    place: RoomPlace,
    /// The room URL the transports use now.
    current: String,
    /// The invite last seen, and from which host.
    seen: Option<(vimp_netcode::transport::PeerKey, Invite)>,
    /// This machine's address on its network, to pick the invite's LAN URL when near.
    own: Option<IpAddr>,
}

impl RoomFollower {
    /// Follows the room that `place`'s transports joined at `current`.
    pub fn new(place: RoomPlace, current: &str) -> RoomFollower {
        let own = vimp_netcode::portmap::local_ip_toward(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)));
        RoomFollower { place, current: current.to_owned(), seen: None, own }
    }

    /// The transports' place.
    pub fn place(&self) -> &RoomPlace {
        &self.place
    }

    /// The room URL in use.
    pub fn current(&self) -> &str {
        &self.current
    }

    /// The room URL now points at a rendezvous this process serves (it took the match over).
    pub fn serve(&mut self, local_url: &str) {
        if let Err(e) = self.place.move_room(local_url) {
            tracing::warn!("cannot move the room to {local_url}: {e}");
        }
        self.current = local_url.to_owned();
    }

    /// One turn: a new invite from `client`'s host. When that host serves the room and it is
    /// somewhere else, the transports move there (its ICE servers fetched on a thread of their
    /// own) and `witness` asks there. Returns the invite when it changed, with whether the room
    /// moved.
    pub fn turn(
        &mut self,
        client: &vimp_netcode::client::ClientCore,
        witness: Option<&mut crate::setup::Witnesser>,
    ) -> Option<(Invite, bool)> {
        let (host, invite) = client.room()?;
        if self.seen.as_ref().is_some_and(|(h, i)| *h == host && i == invite) {
            return None;
        }
        self.seen = Some((host, invite.clone()));
        let target = invite.for_player(self.own).map(str::to_owned);
        let moved = match target {
            Some(url) if invite.served && url != self.current => {
                if let Err(e) = self.place.move_room(&url) {
                    tracing::warn!("the host's invite names {url}: {e}");
                    return Some((invite.clone(), false));
                }
                let signal = url.rsplit_once('/').map_or(url.as_str(), |(s, _)| s).to_owned();
                let place = self.place.clone();
                let _ = std::thread::Builder::new().name("vimp-ice-fetch".into()).spawn(move || {
                    let servers = crate::setup::fetch_ice(&signal, None, 0);
                    if let Err(e) = place.set_ice_servers(&servers) {
                        tracing::warn!("the new rendezvous's ICE servers: {e}");
                    }
                });
                if let Some(witness) = witness {
                    witness.ask_at(&url);
                }
                self.current = url;
                true
            }
            _ => false,
        };
        Some((invite.clone(), moved))
    }
}
