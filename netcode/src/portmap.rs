//! Opens the host's ports on its home router, so that friends in other homes reach the game it
//! hosts: [`PortMapper`] asks the router by UPnP-IGD, PCP or NAT-PMP, on a thread of its own.
//!
//! A host behind a home router is out of reach until the router forwards its ports to it. Most
//! routers do that when asked, and [`PortMapper::start`] asks, in this order:
//!
//! 1. **UPnP-IGD** (the `igd-next` crate, blocking): an SSDP search of at most 3 s, sent from the
//!    address this machine uses toward the internet ([`local_ip_toward`]), then an
//!    `AddPortMapping` for each port.
//! 2. **PCP, then NAT-PMP** (the `crab_nat` crate, on a current-thread tokio runtime of the
//!    mapper's thread), when no UPnP router answered or it would not map: both are asked of the
//!    default gateway at once, 1.25 s at most, and PCP is kept when it answers. The gateway is
//!    the default route's next hop in `/proc/net/route` on Linux; other platforms ask the UPnP
//!    router's address when UPnP found one, so without UPnP they get no mapping.
//!
//! Each port is asked for on the same external port. A WebRTC port
//! ([`PortRequest::webrtc`], `same_port_only`) takes no other, since ICE announces the port it
//! sends from: when that one is taken the port is listed in [`Mapped::failed`]. Signalling and
//! STUN ports take another external port when theirs is taken, and [`Mapped::ports`] says
//! which. Leases last an hour ([`PortMapConfig::lease`]) and are renewed halfway; a router that
//! only takes permanent leases (UPnP error 725) gets one. Every mapping is removed when the
//! mapper is stopped or dropped. The router's own internet address must be public
//! ([`is_public`]): behind a second router or the provider's NAT (CGNAT, 100.64.0.0/10), a
//! mapping on the first one reaches no one, and the outcome is [`PortMapError::NotPublic`].
//!
//! Every network wait is bounded, so the outcome is known within about 5 s even when no router
//! answers (3 s of UPnP search, 1.25 s of PCP/NAT-PMP). What was mapped is logged at info, what
//! failed at warn (`RUST_LOG=vimp_netcode::portmap=info`).
//!
//! When nothing maps, the error's message is what the player reads: what happened, then what to
//! do, with the ports asked for and this machine's address:
//!
//! ```text
//! No router answered a request to open ports (no UPnP router answered within 3 s; no PCP or
//! NAT-PMP answer from 192.168.1.1 (PCP: no answer; NAT-PMP: no answer)). Turn on UPnP in your
//! router's settings, or forward TCP 3536, UDP 3478 and UDP 50000-50009 on your router to
//! 192.168.1.10, or name a public rendezvous in Settings.
//! ```
//!
//! ```no_run
//! use std::time::Duration;
//! use vimp_netcode::portmap::{PortMapper, PortRequest};
//!
//! let mut ports = vec![PortRequest::tcp(3536, "signalling"), PortRequest::udp(3478, "STUN")];
//! ports.extend((50000..50010).map(PortRequest::webrtc));
//! let mapper = PortMapper::start(ports);
//! match mapper.wait(Duration::from_secs(10)) {
//!     Some(Ok(mapped)) => println!("friends reach {} ({:?})", mapped.public_ip, mapped.ports),
//!     Some(Err(e)) => println!("{e}"),
//!     None => println!("still asking"),
//! }
//! mapper.stop(); // the router forwards nothing any more
//! ```
//!
//! The test `portmap::tests::maps_and_unmaps_on_a_real_router` (ignored) runs all of it against
//! a real router: see its doc for how.

mod nat;
mod route;
mod upnp;

pub use route::{is_public, local_ip_toward};

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};

/// How long a lease lasts by default: an hour, renewed halfway, so that the mappings of a host
/// that died without removing them are gone within the hour.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(3600);

/// The shortest lease asked for, in seconds.
const MIN_LEASE_SECS: u64 = 60;

/// How long [`PortMapper::stop`] (and drop) waits for the router to confirm the removals.
pub const STOP_WAIT: Duration = Duration::from_secs(2);

/// An address on the internet, only to find the route there ([`local_ip_toward`]): nothing is
/// sent to it.
const INTERNET: IpAddr = IpAddr::V4(Ipv4Addr::new(1, 1, 1, 1));

/// After a failed renewal, the next try comes halfway to the lease's end, but no sooner than this…
const RETRY_SOONEST: Duration = Duration::from_secs(5);
/// …and no later than this (also the pace once the lease has ended).
const RETRY_LATEST: Duration = Duration::from_secs(60);

/// The transport protocol of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        })
    }
}

/// A port of this machine to open on the router.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PortRequest {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// The port on this machine, and the external port asked for.
    pub port: u16,
    /// What it serves, in a player's words ("signalling", "STUN", "WebRTC"): in logs, messages
    /// and the router's list of mappings ("vimp signalling").
    pub what: &'static str,
    /// Only the same external port will do: when it is taken the request fails rather than take
    /// another.
    pub same_port_only: bool,
}

impl PortRequest {
    /// A TCP port that may be reached on another external port when its own is taken.
    pub fn tcp(port: u16, what: &'static str) -> PortRequest {
        PortRequest { protocol: Protocol::Tcp, port, what, same_port_only: false }
    }

    /// A UDP port that may be reached on another external port when its own is taken.
    pub fn udp(port: u16, what: &'static str) -> PortRequest {
        PortRequest { protocol: Protocol::Udp, port, what, same_port_only: false }
    }

    /// A UDP port of the WebRTC stack: ICE announces the port it sends from, so only the same
    /// external port helps.
    pub fn webrtc(port: u16) -> PortRequest {
        PortRequest { protocol: Protocol::Udp, port, what: "WebRTC", same_port_only: true }
    }
}

impl fmt::Display for PortRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ({})", self.protocol, self.port, self.what)
    }
}

/// How the router was asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// UPnP Internet Gateway Device (`AddPortMapping` over HTTP, found by SSDP).
    Upnp,
    /// Port Control Protocol (RFC 6887), UDP 5351 of the default gateway.
    Pcp,
    /// NAT Port Mapping Protocol (RFC 6886), PCP's predecessor, on the same port.
    NatPmp,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Upnp => "UPnP",
            Method::Pcp => "PCP",
            Method::NatPmp => "NAT-PMP",
        })
    }
}

/// What the router forwards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapped {
    /// How it was asked.
    pub method: Method,
    /// The router asked.
    pub gateway: IpAddr,
    /// This machine's address, where the router forwards to.
    pub local_ip: IpAddr,
    /// The router's own internet address, where friends connect to (checked to be public).
    pub public_ip: IpAddr,
    /// Each port mapped, with the external port it is reached on.
    pub ports: Vec<(PortRequest, u16)>,
    /// Each port the router would not map, with why.
    pub failed: Vec<(PortRequest, String)>,
}

impl Mapped {
    /// The external port that `port` (`protocol`) is reached on, if it was mapped.
    pub fn external_port(&self, protocol: Protocol, port: u16) -> Option<u16> {
        self.ports.iter().find(|(r, _)| r.protocol == protocol && r.port == port).map(|&(_, external)| external)
    }

    /// The address that friends reach `port` (`protocol`) at, if it was mapped.
    pub fn public_addr(&self, protocol: Protocol, port: u16) -> Option<SocketAddr> {
        self.external_port(protocol, port).map(|external| SocketAddr::new(self.public_ip, external))
    }

    /// What the player would forward by hand: the ports that failed; `None` when none did.
    pub fn to_forward(&self) -> Option<Forward> {
        let failed: Vec<PortRequest> = self.failed.iter().map(|(r, _)| *r).collect();
        (!failed.is_empty()).then(|| Forward::new(&failed, Some(self.local_ip)))
    }
}

/// Ports to forward by hand on the router, and where to; its `Display` is the instruction
/// ("TCP 3536, UDP 3478 and UDP 50000-50009 on your router to 192.168.1.10").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forward {
    /// The ports, sorted (TCP first), each once.
    pub ports: Vec<(Protocol, u16)>,
    /// This machine's address on the router's network, when known.
    pub to: Option<IpAddr>,
}

impl Forward {
    /// The ports of `requests`, to forward to `to`.
    pub fn new(requests: &[PortRequest], to: Option<IpAddr>) -> Forward {
        let mut forward = Forward { ports: Vec::new(), to };
        forward.extend(requests);
        forward
    }

    fn extend(&mut self, requests: &[PortRequest]) {
        self.ports.extend(requests.iter().filter(|r| r.port != 0).map(|r| (r.protocol, r.port)));
        self.ports.sort_unstable();
        self.ports.dedup();
    }
}

impl fmt::Display for Forward {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Runs of consecutive ports of one protocol read as a range.
        let mut runs: Vec<(Protocol, u16, u16)> = Vec::new();
        for &(protocol, port) in &self.ports {
            match runs.last_mut() {
                Some((p, _, last)) if *p == protocol && last.checked_add(1) == Some(port) => *last = port,
                _ => runs.push((protocol, port, port)),
            }
        }
        let runs: Vec<String> = runs
            .into_iter()
            .map(
                |(protocol, first, last)| {
                    if first == last { format!("{protocol} {first}") } else { format!("{protocol} {first}-{last}") }
                },
            )
            .collect();
        match runs.split_last() {
            None => f.write_str("this machine's game ports")?,
            Some((last, [])) => f.write_str(last)?,
            Some((last, rest)) => write!(f, "{} and {last}", rest.join(", "))?,
        }
        match self.to {
            Some(to) => write!(f, " on your router to {to}"),
            None => f.write_str(" on your router to this machine"),
        }
    }
}

/// Why the router forwards nothing. The message is the player's: what happened, then what to do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PortMapError {
    /// This machine has no route to the internet.
    #[error("This machine has no route to the internet ({reason}): connect it to a network, then host again.")]
    Offline {
        /// What failed.
        reason: String,
    },
    /// No UPnP router answered, and no PCP or NAT-PMP gateway.
    #[error(
        "No router answered a request to open ports ({reason}). Turn on UPnP in your router's settings, or forward \
         {forward}, or name a public rendezvous in Settings."
    )]
    NoRouter {
        /// What was asked, of whom, and what came back.
        reason: String,
        /// The ports to forward by hand.
        forward: Forward,
    },
    /// The router's own internet address is private or shared (RFC 1918, CGNAT 100.64.0.0/10):
    /// a second router or the provider's NAT is in the way.
    #[error(
        "Your router's internet address, {public_ip}, is not a public one: a second router or your internet \
         provider's NAT stands between it and the internet, so friends cannot reach you through it. If that outer \
         router is yours, forward the same ports on it to this router, and forward {forward}; otherwise name a \
         public rendezvous in Settings."
    )]
    NotPublic {
        /// The address the router said it has.
        public_ip: IpAddr,
        /// The ports to forward by hand.
        forward: Forward,
    },
    /// A router answered but mapped none of the ports.
    #[error(
        "Your router refused to open ports ({reason}). Allow UPnP changes in its settings, or forward {forward}, \
         or name a public rendezvous in Settings."
    )]
    Refused {
        /// What it answered.
        reason: String,
        /// The ports to forward by hand.
        forward: Forward,
    },
    /// The mapper could not run on this machine.
    #[error(
        "This machine could not ask its router to open ports ({reason}). Forward {forward}, or name a public \
         rendezvous in Settings."
    )]
    Unavailable {
        /// What failed.
        reason: String,
        /// The ports to forward by hand.
        forward: Forward,
    },
}

impl PortMapError {
    /// The ports to forward by hand, and where to.
    pub fn forward(&self) -> Option<&Forward> {
        match self {
            PortMapError::Offline { .. } => None,
            PortMapError::NoRouter { forward, .. }
            | PortMapError::NotPublic { forward, .. }
            | PortMapError::Refused { forward, .. }
            | PortMapError::Unavailable { forward, .. } => Some(forward),
        }
    }

    fn forward_mut(&mut self) -> Option<&mut Forward> {
        match self {
            PortMapError::Offline { .. } => None,
            PortMapError::NoRouter { forward, .. }
            | PortMapError::NotPublic { forward, .. }
            | PortMapError::Refused { forward, .. }
            | PortMapError::Unavailable { forward, .. } => Some(forward),
        }
    }
}

/// How [`PortMapper`] asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortMapConfig {
    /// Ask by UPnP-IGD (first).
    pub upnp: bool,
    /// Ask by PCP.
    pub pcp: bool,
    /// Ask by NAT-PMP.
    pub nat_pmp: bool,
    /// The lease asked for (whole seconds, at least a minute); renewed halfway.
    pub lease: Duration,
}

impl Default for PortMapConfig {
    fn default() -> Self {
        PortMapConfig { upnp: true, pcp: true, nat_pmp: true, lease: DEFAULT_LEASE }
    }
}

/// Keeps this machine's ports forwarded on its router, from a thread of its own
/// (`vimp-portmap`), until stopped or dropped.
#[derive(Debug)]
pub struct PortMapper {
    shared: Arc<Shared>,
    commands: mpsc::Sender<Command>,
    stopped: bool,
}

type Outcome = Result<Mapped, PortMapError>;

/// What the mapper's thread and its handle share.
#[derive(Debug, Default)]
struct Shared {
    outcome: Mutex<Option<Outcome>>,
    known: Condvar,
    /// Set by stop: map no further port.
    stopping: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Option<Outcome>> {
        self.outcome.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn settle(&self, outcome: Outcome) {
        *self.lock() = Some(outcome);
        self.known.notify_all();
    }
}

#[derive(Debug)]
enum Command {
    Add(Vec<PortRequest>),
    Stop(mpsc::Sender<()>),
}

impl PortMapper {
    /// Starts mapping `ports` on a thread of its own (`vimp-portmap`), asking as the
    /// [module docs](self) say with [`PortMapConfig::default`]: finds the router (UPnP first,
    /// from the local address that routes toward the internet, then PCP and NAT-PMP to the
    /// default gateway), asks for each port on the same external port (or any, for a request not
    /// [`same_port_only`](PortRequest::same_port_only)), learns the public address, renews each
    /// lease halfway, and removes every mapping when stopped or dropped. Returns at once; the
    /// outcome comes within about 5 s ([`outcome`](Self::outcome), [`wait`](Self::wait)).
    pub fn start(ports: Vec<PortRequest>) -> PortMapper {
        PortMapper::start_with(ports, PortMapConfig::default())
    }

    /// [`start`](Self::start), asking as `config` says.
    pub fn start_with(ports: Vec<PortRequest>, config: PortMapConfig) -> PortMapper {
        let shared = Arc::new(Shared::default());
        let (commands, received) = mpsc::channel();
        let forward = Forward::new(&ports, None);
        let theirs = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("vimp-portmap".into())
            .spawn(move || run(&ports, &config, &theirs, &received));
        if let Err(e) = spawned {
            let reason = format!("cannot start its thread: {e}");
            warn!("port mapping: {reason}");
            shared.settle(Err(PortMapError::Unavailable { reason, forward }));
        }
        PortMapper { shared, commands, stopped: false }
    }

    /// The outcome once known, `None` while still asking. Never blocks. After
    /// [`add`](Self::add), the ports added show once asked for.
    pub fn outcome(&self) -> Option<Result<Mapped, PortMapError>> {
        self.shared.lock().clone()
    }

    /// The outcome, waiting at most `timeout` for it; `None` if it is not known by then.
    pub fn wait(&self, timeout: Duration) -> Option<Result<Mapped, PortMapError>> {
        let guard = self.shared.lock();
        let (guard, _) = self
            .shared
            .known
            .wait_timeout_while(guard, timeout, |o| o.is_none())
            .unwrap_or_else(PoisonError::into_inner);
        guard.clone()
    }

    /// Maps more ports (a host that took a match over, more WebRTC ports), by the method that
    /// mapped the first ones, once the first outcome is known. When nothing mapped, they only
    /// join the error's list of ports to forward by hand.
    pub fn add(&self, ports: Vec<PortRequest>) {
        // The thread only ends after a stop, which takes `self`.
        let _ = self.commands.send(Command::Add(ports));
    }

    /// Removes every mapping now, and waits up to [`STOP_WAIT`] for the router to confirm
    /// (drop does the same). Whatever is not confirmed by then is still removed in the
    /// background, or lapses when its lease ends.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if std::mem::replace(&mut self.stopped, true) {
            return;
        }
        self.shared.stopping.store(true, Ordering::Relaxed);
        let (done, confirmed) = mpsc::channel();
        if self.commands.send(Command::Stop(done)).is_ok() && confirmed.recv_timeout(STOP_WAIT).is_err() {
            warn!(
                "port mapping: not every port was closed within {} s; the rest close in the background, or when \
                 their lease ends",
                STOP_WAIT.as_secs()
            );
        }
    }
}

impl Drop for PortMapper {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The mapper's thread: find, then serve commands and renewals until stopped.
fn run(requests: &[PortRequest], config: &PortMapConfig, shared: &Shared, commands: &mpsc::Receiver<Command>) {
    // A lease of 0 would be permanent (UPnP) or a removal (PCP, NAT-PMP).
    let lease = u32::try_from(config.lease.as_secs().max(MIN_LEASE_SECS)).unwrap_or(u32::MAX);
    let started = Instant::now();
    let mut session = match find(requests, config, lease, &shared.stopping) {
        Ok(session) => {
            session.log(&session.mapped.ports, &session.mapped.failed, started.elapsed());
            shared.settle(Ok(session.mapped.clone()));
            Some(session)
        }
        Err(e) => {
            warn!("port mapping: {e}");
            shared.settle(Err(e));
            None
        }
    };
    loop {
        let command = match session.as_ref().and_then(Session::next_renewal) {
            Some(at) => commands.recv_timeout(at.saturating_duration_since(Instant::now())),
            None => commands.recv().map_err(|_| RecvTimeoutError::Disconnected),
        };
        match command {
            Ok(Command::Add(more)) => match &mut session {
                Some(session) => {
                    let (ports, failed) = session.add(&more, lease, &shared.stopping);
                    session.log(&ports, &failed, Duration::ZERO);
                    shared.settle(Ok(session.mapped.clone()));
                }
                None => {
                    if let Some(Err(e)) = &mut *shared.lock() {
                        e.forward_mut().into_iter().for_each(|f| f.extend(&more));
                    }
                }
            },
            Ok(Command::Stop(done)) => {
                if let Some(session) = session.take() {
                    session.remove_all();
                }
                let _ = done.send(());
                return;
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Some(session) = &mut session
                    && session.renew_due(Instant::now(), lease)
                {
                    shared.settle(Ok(session.mapped.clone()));
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                if let Some(session) = session.take() {
                    session.remove_all();
                }
                return;
            }
        }
    }
}

/// Finds the router and maps `requests` on it: UPnP, then PCP and NAT-PMP.
fn find(
    requests: &[PortRequest],
    config: &PortMapConfig,
    lease: u32,
    stopping: &AtomicBool,
) -> Result<Session, PortMapError> {
    let Some(local_ip) = local_ip_toward(INTERNET) else {
        return Err(PortMapError::Offline { reason: "no IPv4 route".into() });
    };
    let forward = || Forward::new(requests, Some(local_ip));
    // Why each way found no router, and what routers that answered refused.
    let mut silent = Vec::new();
    let mut refused = Vec::new();
    let mut igd = None;
    if config.upnp {
        match upnp::search(local_ip) {
            Ok(gateway) => {
                let upnp = upnp::Upnp::new(gateway, local_ip);
                let router = upnp.router();
                igd = Some(router);
                debug!("port mapping: UPnP router at {router}");
                match upnp.public_ip() {
                    Ok(public_ip) if !is_public(public_ip) => {
                        return Err(PortMapError::NotPublic { public_ip, forward: forward() });
                    }
                    Ok(public_ip) => {
                        let mut session = Session::new(Router::Upnp(upnp), local_ip, public_ip);
                        session.add(requests, lease, stopping);
                        if session.works() {
                            return Ok(session);
                        }
                        refused.push(session.refusal());
                    }
                    Err(reason) => refused.push(format!("UPnP at {router}: {reason}")),
                }
            }
            Err(reason) => silent.push(reason),
        }
    }
    if config.pcp || config.nat_pmp {
        match route::default_gateway().map(IpAddr::from).or(igd) {
            None => silent.push("no default gateway to ask by PCP or NAT-PMP".into()),
            Some(gateway) => {
                let first = requests.iter().find(|r| r.port != 0);
                match nat::probe(gateway, local_ip, first, config.pcp, config.nat_pmp, lease) {
                    Ok(found) => {
                        if !is_public(found.public_ip) {
                            if let Some(Ok(mapping)) = found.first {
                                found.nat.remove(vec![mapping]);
                            }
                            return Err(PortMapError::NotPublic { public_ip: found.public_ip, forward: forward() });
                        }
                        // PCP asked with the first request: it is mapped (or refused) already.
                        let first = match (first, found.first) {
                            (Some(first), Some(mapping)) => {
                                Some((*first, mapping.and_then(|m| found.nat.accept(first, m))))
                            }
                            _ => None,
                        };
                        let mut session = Session::new(Router::Nat(found.nat), local_ip, found.public_ip);
                        let mut rest = requests.to_vec();
                        if let Some((first, mapping)) = first {
                            session.record(first, mapping.map(|m| Held::nat(first, m)));
                            rest.retain(|r| *r != first);
                        }
                        session.add(&rest, lease, stopping);
                        if session.works() {
                            return Ok(session);
                        }
                        refused.push(session.refusal());
                    }
                    Err(nat::NotFound::Silent(reason)) => silent.push(reason),
                    Err(nat::NotFound::Refused(reason)) => refused.push(reason),
                }
            }
        }
    }
    if !refused.is_empty() {
        Err(PortMapError::Refused { reason: refused.join("; "), forward: forward() })
    } else if silent.is_empty() {
        Err(PortMapError::NoRouter { reason: "UPnP, PCP and NAT-PMP are all turned off".into(), forward: forward() })
    } else {
        Err(PortMapError::NoRouter { reason: silent.join("; "), forward: forward() })
    }
}

/// When to renew a lease of `lifetime` seconds granted at `granted`: halfway through; never
/// for a permanent one (0).
fn renew_at(granted: Instant, lifetime: u32) -> Option<Instant> {
    (lifetime > 0).then(|| granted + Duration::from_secs(u64::from(lifetime).div_ceil(2)))
}

/// When to try again after a renewal failed at `now`, for a lease that ends at `expires`:
/// halfway to its end, but no sooner than [`RETRY_SOONEST`] nor later than [`RETRY_LATEST`]
/// (the pace once it has ended).
fn retry_at(now: Instant, expires: Instant) -> Instant {
    let left = expires.saturating_duration_since(now);
    if left.is_zero() { now + RETRY_LATEST } else { now + (left / 2).clamp(RETRY_SOONEST, RETRY_LATEST) }
}

/// A router that answered, and what it forwards for us.
struct Session {
    router: Router,
    mapped: Mapped,
    held: Vec<Held>,
}

enum Router {
    Upnp(upnp::Upnp),
    Nat(nat::Nat),
}

/// One mapping the router holds for us.
struct Held {
    request: PortRequest,
    external: u16,
    /// The lease granted, in seconds; 0 is permanent.
    lifetime: u32,
    renew_at: Option<Instant>,
    expires: Option<Instant>,
    /// PCP/NAT-PMP: what renews and removes it (PCP's nonce).
    nat: Option<crab_nat::PortMapping>,
}

impl Held {
    fn new(request: PortRequest, external: u16, lifetime: u32, nat: Option<crab_nat::PortMapping>) -> Held {
        let mut held = Held { request, external, lifetime, renew_at: None, expires: None, nat };
        held.granted(Instant::now(), lifetime);
        held
    }

    fn nat(request: PortRequest, mapping: crab_nat::PortMapping) -> Held {
        Held::new(request, mapping.external_port().get(), mapping.lifetime(), Some(mapping))
    }

    fn granted(&mut self, now: Instant, lifetime: u32) {
        self.lifetime = lifetime;
        self.renew_at = renew_at(now, lifetime);
        self.expires = (lifetime > 0).then(|| now + Duration::from_secs(lifetime.into()));
    }
}

impl Session {
    fn new(router: Router, local_ip: IpAddr, public_ip: IpAddr) -> Session {
        let (method, gateway) = match &router {
            Router::Upnp(upnp) => (Method::Upnp, upnp.router()),
            Router::Nat(nat) => (nat.method(), nat.router()),
        };
        let mapped = Mapped { method, gateway, local_ip, public_ip, ports: Vec::new(), failed: Vec::new() };
        Session { router, mapped, held: Vec::new() }
    }

    /// Whether the router mapped something, or had nothing to map.
    fn works(&self) -> bool {
        !self.mapped.ports.is_empty() || self.mapped.failed.is_empty()
    }

    /// Why a router that mapped nothing refused, port by port.
    fn refusal(&self) -> String {
        let why: Vec<String> =
            self.mapped.failed.iter().map(|(r, why)| format!("{} {}: {why}", r.protocol, r.port)).collect();
        format!("{} at {}: {}", self.mapped.method, self.mapped.gateway, why.join(", "))
    }

    /// Maps each of `requests` not mapped yet (asking again for those that failed), until
    /// stopped: those mapped, those failed.
    fn add(
        &mut self,
        requests: &[PortRequest],
        lease: u32,
        stopping: &AtomicBool,
    ) -> (Vec<(PortRequest, u16)>, Vec<(PortRequest, String)>) {
        let (mut ports, mut failed) = (Vec::new(), Vec::new());
        for request in requests {
            if stopping.load(Ordering::Relaxed) {
                break;
            }
            let same = |r: &PortRequest| r.protocol == request.protocol && r.port == request.port;
            if self.mapped.ports.iter().any(|(r, _)| same(r)) {
                continue;
            }
            self.mapped.failed.retain(|(r, _)| !same(r));
            let held = self.map(request, lease);
            match &held {
                Ok(held) => ports.push((*request, held.external)),
                Err(why) => failed.push((*request, why.clone())),
            }
            self.record(*request, held);
        }
        (ports, failed)
    }

    fn map(&mut self, request: &PortRequest, lease: u32) -> Result<Held, String> {
        if request.port == 0 {
            return Err("port 0 cannot be forwarded".into());
        }
        match &mut self.router {
            Router::Upnp(upnp) => {
                upnp.map(request, lease).map(|(external, lifetime)| Held::new(*request, external, lifetime, None))
            }
            Router::Nat(nat) => nat.map(request, lease).map(|mapping| Held::nat(*request, mapping)),
        }
    }

    fn record(&mut self, request: PortRequest, held: Result<Held, String>) {
        match held {
            Ok(held) => {
                self.mapped.ports.push((request, held.external));
                self.held.push(held);
            }
            Err(why) => self.mapped.failed.push((request, why)),
        }
    }

    fn log(&self, ports: &[(PortRequest, u16)], failed: &[(PortRequest, String)], took: Duration) {
        let m = &self.mapped;
        if !ports.is_empty() {
            let list: Vec<String> = ports.iter().map(|(r, external)| format!("{r} → {external}")).collect();
            info!(
                method = %m.method, router = %m.gateway, public_ip = %m.public_ip, local_ip = %m.local_ip,
                took_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
                "port mapping: {} forwards {} from {} to {}", m.method, list.join(", "), m.public_ip, m.local_ip
            );
        }
        for (request, why) in failed {
            warn!(method = %m.method, router = %m.gateway, "port mapping: the router would not forward {request}: {why}");
        }
    }

    fn next_renewal(&self) -> Option<Instant> {
        self.held.iter().filter_map(|h| h.renew_at).min()
    }

    /// Renews the leases due by `now`: whether an external port changed.
    fn renew_due(&mut self, now: Instant, lease: u32) -> bool {
        let mut changed = false;
        for held in self.held.iter_mut().filter(|h| h.renew_at.is_some_and(|at| at <= now)) {
            let renewed = match (&mut self.router, &mut held.nat) {
                (Router::Upnp(upnp), _) => upnp.renew(&held.request, held.external, lease).map(|l| (held.external, l)),
                (Router::Nat(nat), Some(mapping)) => {
                    nat.renew(mapping).map(|()| (mapping.external_port().get(), mapping.lifetime()))
                }
                (Router::Nat(_), None) => Err("no mapping to renew".into()),
            };
            match renewed {
                Ok((external, lifetime)) => {
                    debug!("port mapping: renewed {} → {external} for {lifetime} s", held.request);
                    held.granted(now, lifetime);
                    if external != held.external {
                        warn!("port mapping: {} is now reached on external port {external}", held.request);
                        held.external = external;
                        if let Some(entry) = self.mapped.ports.iter_mut().find(|(r, _)| *r == held.request) {
                            entry.1 = external;
                        }
                        changed = true;
                    }
                }
                Err(why) => {
                    let expires = held.expires.unwrap_or(now);
                    warn!("port mapping: the router did not renew {}: {why}; trying again", held.request);
                    held.renew_at = Some(retry_at(now, expires));
                }
            }
        }
        changed
    }

    /// Removes every mapping.
    fn remove_all(self) {
        let Session { router, mapped, held } = self;
        let count = held.len();
        let failed: Vec<(u16, String)> = match &router {
            Router::Upnp(upnp) => held
                .iter()
                .filter_map(|h| upnp.remove(h.request.protocol, h.external).err().map(|why| (h.external, why)))
                .collect(),
            Router::Nat(nat) => nat.remove(held.into_iter().filter_map(|h| h.nat).collect()),
        };
        for (external, why) in &failed {
            warn!("port mapping: the router did not remove external port {external}: {why}");
        }
        if count > 0 {
            info!(
                "port mapping: {} removed {} of {count} mappings from {}",
                mapped.method,
                count - failed.len(),
                mapped.gateway
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_ports() -> Vec<PortRequest> {
        let mut ports = vec![PortRequest::tcp(3536, "signalling"), PortRequest::udp(3478, "STUN")];
        ports.extend((50000..50010).map(PortRequest::webrtc));
        ports
    }

    #[test]
    fn the_ports_to_forward_read_as_an_instruction() {
        let forward = Forward::new(&host_ports(), Some("192.168.1.10".parse().expect("an address")));
        assert_eq!(forward.to_string(), "TCP 3536, UDP 3478 and UDP 50000-50009 on your router to 192.168.1.10");
        let one = Forward::new(&[PortRequest::udp(3478, "STUN")], None);
        assert_eq!(one.to_string(), "UDP 3478 on your router to this machine");
        let split = Forward::new(
            &[
                PortRequest::webrtc(5),
                PortRequest::tcp(4, "a"),
                PortRequest::webrtc(7),
                PortRequest::webrtc(6),
                PortRequest::webrtc(9),
            ],
            None,
        );
        assert_eq!(split.to_string(), "TCP 4, UDP 5-7 and UDP 9 on your router to this machine");
        assert_eq!(
            Forward::new(&[PortRequest::tcp(65535, "x"), PortRequest::tcp(65535, "y")], None).ports,
            vec![(Protocol::Tcp, 65535)],
            "each port once"
        );
    }

    #[test]
    fn every_error_but_offline_says_what_to_forward_and_names_the_rendezvous() {
        let forward = Forward::new(&host_ports(), Some("192.168.1.10".parse().expect("an address")));
        let instruction = "TCP 3536, UDP 3478 and UDP 50000-50009 on your router to 192.168.1.10";
        let errors = [
            PortMapError::NoRouter { reason: "no UPnP router answered within 3 s".into(), forward: forward.clone() },
            PortMapError::NotPublic { public_ip: "100.64.7.1".parse().expect("an address"), forward: forward.clone() },
            PortMapError::Refused { reason: "UPnP at 192.168.1.1: not authorized".into(), forward: forward.clone() },
            PortMapError::Unavailable { reason: "no thread".into(), forward: forward.clone() },
        ];
        for e in &errors {
            let message = e.to_string();
            assert!(message.contains(instruction), "{message}");
            assert!(message.contains("name a public rendezvous in Settings"), "{message}");
            assert_eq!(e.forward(), Some(&forward));
        }
        assert!(errors[1].to_string().contains("100.64.7.1, is not a public one"), "{}", errors[1]);
        assert!(errors[0].to_string().starts_with("No router answered a request to open ports (no UPnP"));
        let offline = PortMapError::Offline { reason: "no default route".into() };
        assert_eq!(offline.forward(), None);
        assert!(offline.to_string().contains("connect it to a network"));
    }

    #[test]
    fn a_mapping_tells_where_friends_reach_each_port() {
        let mapped = Mapped {
            method: Method::Upnp,
            gateway: "192.168.1.1".parse().expect("an address"),
            local_ip: "192.168.1.10".parse().expect("an address"),
            public_ip: "45.0.113.21".parse().expect("an address"),
            ports: vec![(PortRequest::tcp(3536, "signalling"), 40123), (PortRequest::udp(3478, "STUN"), 3478)],
            failed: vec![(PortRequest::webrtc(50000), "taken".into())],
        };
        assert_eq!(mapped.public_addr(Protocol::Tcp, 3536), Some("45.0.113.21:40123".parse().expect("an address")));
        assert_eq!(mapped.external_port(Protocol::Udp, 3478), Some(3478));
        assert_eq!(mapped.external_port(Protocol::Tcp, 3478), None, "TCP 3478 was not asked for");
        let by_hand = mapped.to_forward().expect("a port failed");
        assert_eq!(by_hand.to_string(), "UDP 50000 on your router to 192.168.1.10");
        assert_eq!(Mapped { failed: Vec::new(), ..mapped }.to_forward(), None);
    }

    #[test]
    fn leases_are_renewed_halfway_and_permanent_ones_never() {
        let t = Instant::now();
        assert_eq!(renew_at(t, 3600), Some(t + Duration::from_secs(1800)));
        assert_eq!(renew_at(t, 121), Some(t + Duration::from_secs(61)));
        assert_eq!(renew_at(t, 1), Some(t + Duration::from_secs(1)));
        assert_eq!(renew_at(t, 0), None, "a permanent lease (UPnP error 725) is never renewed");
    }

    #[test]
    fn a_failed_renewal_is_retried_before_the_lease_ends() {
        let t = Instant::now();
        let secs = Duration::from_secs;
        assert_eq!(retry_at(t, t + secs(1800)), t + secs(60), "at most a minute later");
        assert_eq!(retry_at(t, t + secs(40)), t + secs(20), "halfway to the end");
        assert_eq!(retry_at(t, t + secs(4)), t + secs(5), "no sooner than 5 s");
        assert_eq!(retry_at(t + secs(10), t), t + secs(70), "once ended, every minute");
    }

    #[test]
    fn a_mapper_can_live_in_shared_state() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<PortMapper>();
    }

    #[test]
    fn the_defaults_ask_every_way_for_an_hour() {
        let config = PortMapConfig::default();
        assert!(config.upnp && config.pcp && config.nat_pmp);
        assert_eq!(config.lease, Duration::from_secs(3600));
    }

    #[test]
    fn with_every_way_off_the_outcome_says_so_and_stop_returns() {
        let config = PortMapConfig { upnp: false, pcp: false, nat_pmp: false, ..PortMapConfig::default() };
        let mapper = PortMapper::start_with(host_ports(), config);
        let outcome = mapper.wait(Duration::from_secs(10)).expect("an outcome");
        match outcome {
            Err(PortMapError::NoRouter { reason, forward }) => {
                assert!(reason.contains("turned off"), "{reason}");
                assert_eq!(forward.ports.len(), 12);
            }
            // A machine with no route at all.
            Err(PortMapError::Offline { .. }) => {}
            other => panic!("expected no router, got {other:?}"),
        }
        mapper.add(vec![PortRequest::webrtc(50010)]);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            match mapper.outcome().and_then(|o| o.err()).and_then(|e| e.forward().cloned()) {
                Some(f) if f.ports.len() == 13 => break,
                _ => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        if let Some(Err(e)) = mapper.outcome()
            && let Some(forward) = e.forward()
        {
            assert_eq!(forward.ports.len(), 13, "the added port joins the ports to forward by hand");
            assert!(e.to_string().contains("UDP 50000-50010"), "{e}");
        }
        mapper.stop();
    }

    /// Environment for the tests against a real router.
    fn lab(name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    /// Prints the mapper's logs (`RUST_LOG`, info by default).
    fn show_logs() {
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("vimp_netcode::portmap=info"));
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
    }

    /// The mappings a UPnP router lists for `local_ip`: (protocol, external, internal).
    fn upnp_mappings_for(local_ip: IpAddr) -> Vec<(Protocol, u16, u16)> {
        let gateway = upnp::search(local_ip).expect("the UPnP router");
        let mut found = Vec::new();
        for i in 0..1000 {
            let Ok(entry) = gateway.get_generic_port_mapping_entry(i) else { break };
            if entry.internal_client == local_ip.to_string() {
                let protocol = match entry.protocol {
                    igd_next::PortMappingProtocol::TCP => Protocol::Tcp,
                    igd_next::PortMappingProtocol::UDP => Protocol::Udp,
                };
                found.push((protocol, entry.external_port, entry.internal_port));
            }
        }
        found
    }

    /// Serves `mapped`'s ports for `hold`: TCP greets each connection, UDP echoes, so that the
    /// network outside can check the router forwards them.
    fn serve(mapped: &Mapped, hold: Duration) {
        use std::io::Write;
        let until = Instant::now() + hold;
        let mut threads = Vec::new();
        for &(request, external) in &mapped.ports {
            let local = SocketAddr::new(mapped.local_ip, request.port);
            threads.push(std::thread::spawn(move || match request.protocol {
                Protocol::Tcp => {
                    let listener = std::net::TcpListener::bind(local).expect("the TCP port");
                    listener.set_nonblocking(true).expect("non-blocking");
                    while Instant::now() < until {
                        match listener.accept() {
                            Ok((mut peer, from)) => {
                                let _ = writeln!(peer, "vimp {} (external {external}) greets {from}", request.what);
                            }
                            Err(_) => std::thread::sleep(Duration::from_millis(20)),
                        }
                    }
                }
                Protocol::Udp => {
                    let socket = std::net::UdpSocket::bind(local).expect("the UDP port");
                    socket.set_read_timeout(Some(Duration::from_millis(100))).expect("a timeout");
                    let mut buf = [0u8; 1500];
                    while Instant::now() < until {
                        if let Ok((len, from)) = socket.recv_from(&mut buf) {
                            let mut answer = format!("vimp {} echoes: ", request.what).into_bytes();
                            answer.extend_from_slice(&buf[..len]);
                            let _ = socket.send_to(&answer, from);
                        }
                    }
                }
            }));
        }
        for t in threads {
            t.join().expect("a server");
        }
    }

    /// Against a real router: maps TCP 3536 (signalling), UDP 3478 (STUN) and UDP 50000-50001
    /// (WebRTC), then UDP 50002 with [`PortMapper::add`], checks the public address and the
    /// external ports, stops, and checks the mappings are gone (on a UPnP router, from its own
    /// list). Run it on a machine (or in a network namespace) whose default gateway runs a
    /// UPnP-IGD/PCP/NAT-PMP server such as miniupnpd, on its LAN:
    ///
    /// ```text
    /// cargo test -p vimp-netcode --lib --no-run     # prints the test binary's path
    /// ip netns exec a BINARY --ignored --exact portmap::tests::maps_and_unmaps_on_a_real_router --nocapture
    /// ```
    ///
    /// Optional environment: `VIMP_PORTMAP_METHOD` = `upnp`, `pcp` or `natpmp` allows that one way
    /// only and expects it; `VIMP_PORTMAP_PUBLIC_IP` is the router's internet address expected;
    /// `VIMP_PORTMAP_TAKEN` = `tcp:3537,udp:50003` names ports another machine already has
    /// forwarded, which are asked for too (the UDP ones as WebRTC: expected to fail; the TCP
    /// ones as signalling: expected on another external port); `VIMP_PORTMAP_HOLD_SECS` serves
    /// the mapped ports that long before stopping (TCP greets, UDP echoes) for the outside to try;
    /// `VIMP_PORTMAP_LEASE_SECS` asks for shorter leases, which a long enough hold sees renewed.
    #[test]
    #[ignore = "needs a router with UPnP-IGD, PCP or NAT-PMP as the default gateway"]
    fn maps_and_unmaps_on_a_real_router() {
        show_logs();
        let method = lab("VIMP_PORTMAP_METHOD");
        let mut config = match method.as_deref() {
            None => PortMapConfig::default(),
            Some("upnp") => PortMapConfig { pcp: false, nat_pmp: false, ..PortMapConfig::default() },
            Some("pcp") => PortMapConfig { upnp: false, nat_pmp: false, ..PortMapConfig::default() },
            Some("natpmp") => PortMapConfig { upnp: false, pcp: false, ..PortMapConfig::default() },
            Some(other) => panic!("VIMP_PORTMAP_METHOD={other}: upnp, pcp or natpmp"),
        };
        if let Some(secs) = lab("VIMP_PORTMAP_LEASE_SECS") {
            config.lease = Duration::from_secs(secs.parse().expect("seconds"));
        }
        let mut taken = Vec::new();
        for item in lab("VIMP_PORTMAP_TAKEN").iter().flat_map(|v| v.split(',')) {
            let (protocol, port) = item.split_once(':').expect("PROTOCOL:PORT");
            let port: u16 = port.parse().expect("a port");
            taken.push(match protocol {
                "tcp" => PortRequest::tcp(port, "signalling"),
                _ => PortRequest::webrtc(port),
            });
        }
        let mut ports = vec![
            PortRequest::tcp(3536, "signalling"),
            PortRequest::udp(3478, "STUN"),
            PortRequest::webrtc(50000),
            PortRequest::webrtc(50001),
        ];
        ports.extend(&taken);

        let started = Instant::now();
        let mapper = PortMapper::start_with(ports.clone(), config);
        let mapped = match mapper.wait(Duration::from_secs(15)).expect("an outcome within 15 s") {
            Ok(mapped) => mapped,
            Err(e) => panic!("no mapping: {e}"),
        };
        println!("outcome after {} ms: {mapped:#?}", started.elapsed().as_millis());
        let expected = match method.as_deref() {
            Some("pcp") => Some(Method::Pcp),
            Some("natpmp") => Some(Method::NatPmp),
            Some(_) => Some(Method::Upnp),
            None => None,
        };
        if let Some(expected) = expected {
            assert_eq!(mapped.method, expected);
        }
        assert!(is_public(mapped.public_ip), "the router's address {} should be public", mapped.public_ip);
        if let Some(ip) = lab("VIMP_PORTMAP_PUBLIC_IP") {
            assert_eq!(mapped.public_ip.to_string(), ip);
        }
        assert_eq!(Some(mapped.local_ip), local_ip_toward(INTERNET));
        for request in &ports[..4] {
            assert_eq!(
                mapped.external_port(request.protocol, request.port),
                Some(request.port),
                "{request} on its own port"
            );
        }
        for request in &taken {
            match request.protocol {
                Protocol::Udp => assert!(
                    mapped.failed.iter().any(|(r, _)| r == request),
                    "{request} is taken and WebRTC takes no other port: {mapped:?}"
                ),
                Protocol::Tcp => {
                    let external = mapped.external_port(Protocol::Tcp, request.port).expect("another external port");
                    assert_ne!(external, request.port, "{request} is taken by another machine");
                }
            }
        }

        let added = Instant::now();
        mapper.add(vec![PortRequest::webrtc(50002)]);
        let deadline = Instant::now() + Duration::from_secs(10);
        let mapped = loop {
            match mapper.outcome() {
                Some(Ok(m)) if m.external_port(Protocol::Udp, 50002).is_some() => break m,
                _ if Instant::now() > deadline => panic!("UDP 50002 not mapped: {:?}", mapper.outcome()),
                _ => std::thread::sleep(Duration::from_millis(10)),
            }
        };
        println!("UDP 50002 added after {} ms", added.elapsed().as_millis());
        assert_eq!(mapped.external_port(Protocol::Udp, 50002), Some(50002));
        let all_listed = |when: &str| {
            if mapped.method == Method::Upnp {
                let listed = upnp_mappings_for(mapped.local_ip);
                println!("{when}, the router lists for {}: {listed:?}", mapped.local_ip);
                for (request, external) in &mapped.ports {
                    assert!(listed.contains(&(request.protocol, *external, request.port)), "{request} listed {when}");
                }
            }
        };
        all_listed("mapped");
        if let Some(secs) = lab("VIMP_PORTMAP_HOLD_SECS") {
            println!("serving the mapped ports for {secs} s: MAPPED {}", mapped.public_ip);
            serve(&mapped, Duration::from_secs(secs.parse().expect("seconds")));
            all_listed("after the hold");
            assert_eq!(mapper.outcome(), Some(Ok(mapped.clone())), "the same mappings after the hold");
        }

        let stopping = Instant::now();
        mapper.stop();
        println!("stopped after {} ms", stopping.elapsed().as_millis());
        if mapped.method == Method::Upnp {
            let left = upnp_mappings_for(mapped.local_ip);
            assert!(left.is_empty(), "the router still lists {left:?}");
        }
    }

    /// Where no router answers: the outcome is known within a few seconds, as no router, with the
    /// ports to forward by hand. Run it like [`maps_and_unmaps_on_a_real_router`] in a network
    /// whose router runs none of UPnP, PCP and NAT-PMP.
    #[test]
    #[ignore = "needs a network whose router runs none of UPnP, PCP and NAT-PMP"]
    fn finds_no_router_where_none_answers() {
        show_logs();
        let started = Instant::now();
        let mapper = PortMapper::start(vec![PortRequest::tcp(3536, "signalling"), PortRequest::udp(3478, "STUN")]);
        let outcome = mapper.wait(Duration::from_secs(15)).expect("an outcome within 15 s");
        println!("outcome after {} ms: {outcome:?}", started.elapsed().as_millis());
        let e = outcome.expect_err("no router");
        println!("the player reads: {e}");
        assert!(matches!(e, PortMapError::NoRouter { .. }), "{e:?}");
        assert!(e.to_string().contains("TCP 3536 and UDP 3478 on your router to"), "{e}");
        let stopping = Instant::now();
        mapper.stop();
        println!("stopped after {} ms", stopping.elapsed().as_millis());
    }
}
