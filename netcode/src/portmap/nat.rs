//! PCP (RFC 6887) and NAT-PMP (RFC 6886) with crab_nat, on a current-thread tokio runtime that
//! lives on the mapper's thread.

use std::net::IpAddr;
use std::num::NonZeroU16;
use std::time::Duration;

use crab_nat::{InternetProtocol, MappingFailure, PortMapping, PortMappingOptions, PortMappingType, TimeoutConfig};
use crab_nat::{natpmp, pcp};
use tokio::runtime::Runtime;

use super::{Method, PortRequest, Protocol};

/// How long one request waits for the gateway: 250 ms, then 500 ms twice, 1.25 s in all.
pub(super) const TIMEOUTS: TimeoutConfig = TimeoutConfig {
    initial_timeout: Duration::from_millis(250),
    max_retries: 2,
    max_retry_timeout: Some(Duration::from_millis(500)),
};

/// A gateway that answered PCP or NAT-PMP.
pub(super) struct Nat {
    runtime: Runtime,
    gateway: IpAddr,
    /// This machine's address on the gateway's network (PCP's client address).
    client: IpAddr,
    method: Method,
}

/// What asking a gateway found.
pub(super) struct Found {
    /// The gateway, and the protocol it answered.
    pub(super) nat: Nat,
    /// Its own internet address.
    pub(super) public_ip: IpAddr,
    /// The mapping of the first request, made while asking by PCP (which has no question
    /// without one); `None` when NAT-PMP answered, or there was no request.
    pub(super) first: Option<Result<PortMapping, String>>,
}

/// Why asking a gateway found nothing.
pub(super) enum NotFound {
    /// Neither protocol answered (no answer in time, or the port is closed).
    Silent(String),
    /// The gateway answered but would not map.
    Refused(String),
}

/// Asks `gateway` by PCP (mapping `first`, when there is one) and by NAT-PMP (its external
/// address) at the same time, each at most [`TIMEOUTS`] long, and keeps PCP when it answered.
pub(super) fn probe(
    gateway: IpAddr,
    client: IpAddr,
    first: Option<&PortRequest>,
    use_pcp: bool,
    use_nat_pmp: bool,
    lease: u32,
) -> Result<Found, NotFound> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| NotFound::Silent(format!("cannot start the PCP/NAT-PMP runtime: {e}")))?;
    let (by_pcp, by_nat_pmp) = runtime.block_on(async {
        let by_pcp = async {
            match first {
                Some(request) if use_pcp => Some(map_pcp(gateway, client, request, lease).await),
                _ => None,
            }
        };
        let by_nat_pmp = async {
            if use_nat_pmp { Some(natpmp::external_address(gateway.into(), Some(TIMEOUTS)).await) } else { None }
        };
        tokio::join!(by_pcp, by_nat_pmp)
    });
    let mut silent = Vec::new();
    let mut refused = Vec::new();
    match by_pcp {
        Some(Ok(mapping)) => {
            let public_ip = match mapping.mapping_type() {
                PortMappingType::Pcp { external_ip, .. } => external_ip,
                PortMappingType::NatPmp => match &by_nat_pmp {
                    Some(Ok(ip)) => (*ip).into(),
                    _ => IpAddr::from([0, 0, 0, 0]),
                },
            };
            let nat = Nat { runtime, gateway, client, method: Method::Pcp };
            return Ok(Found { nat, public_ip, first: Some(Ok(mapping)) });
        }
        Some(Err(e @ (pcp::Failure::Timeout | pcp::Failure::Socket(_) | pcp::Failure::UnsupportedVersion(_)))) => {
            silent.push(format!("PCP: {}", say_pcp(&e)))
        }
        Some(Err(e)) => refused.push(format!("PCP: {}", say_pcp(&e))),
        None => {}
    }
    match by_nat_pmp {
        Some(Ok(ip)) => {
            let nat = Nat { runtime, gateway, client, method: Method::NatPmp };
            return Ok(Found { nat, public_ip: ip.into(), first: None });
        }
        Some(Err(e @ (natpmp::Failure::Timeout | natpmp::Failure::Socket(_)))) => {
            silent.push(format!("NAT-PMP: {}", say_nat_pmp(&e)))
        }
        Some(Err(e)) => refused.push(format!("NAT-PMP: {}", say_nat_pmp(&e))),
        None => {}
    }
    if refused.is_empty() {
        Err(NotFound::Silent(format!("no PCP or NAT-PMP answer from {gateway} ({})", silent.join("; "))))
    } else {
        Err(NotFound::Refused(format!("{gateway} answered {}", refused.join("; "))))
    }
}

impl Nat {
    /// The gateway.
    pub(super) fn router(&self) -> IpAddr {
        self.gateway
    }

    /// PCP or NAT-PMP.
    pub(super) fn method(&self) -> Method {
        self.method
    }

    /// Maps `request` for `lease` seconds, asking for the same external port.
    pub(super) fn map(&self, request: &PortRequest, lease: u32) -> Result<PortMapping, String> {
        let mapping = self.runtime.block_on(async {
            match self.method {
                Method::NatPmp => {
                    let port = port(request)?;
                    natpmp::port_mapping(self.gateway.into(), protocol(request.protocol), port, options(port, lease))
                        .await
                        .map_err(|e| say_nat_pmp(&e))
                }
                _ => map_pcp(self.gateway, self.client, request, lease).await.map_err(|e| say_pcp(&e)),
            }
        })?;
        self.accept(request, mapping)
    }

    /// `mapping` when its external port suits `request`; otherwise it is removed again.
    pub(super) fn accept(&self, request: &PortRequest, mapping: PortMapping) -> Result<PortMapping, String> {
        let external = mapping.external_port().get();
        if request.same_port_only && external != request.port {
            let _ = self.remove(vec![mapping]);
            return Err(format!(
                "the router offered external port {external}, and {} needs the same port number",
                request.what
            ));
        }
        Ok(mapping)
    }

    /// Asks again for `mapping`, with the nonce (PCP) that made it.
    pub(super) fn renew(&self, mapping: &mut PortMapping) -> Result<(), String> {
        self.runtime.block_on(mapping.renew()).map_err(|e| say(&e))
    }

    /// Removes `mappings`, all at once: what failed, with why.
    pub(super) fn remove(&self, mappings: Vec<PortMapping>) -> Vec<(u16, String)> {
        self.runtime.block_on(async {
            let mut removals = tokio::task::JoinSet::new();
            for mapping in mappings {
                let external = mapping.external_port().get();
                removals.spawn(async move { mapping.try_drop().await.map_err(|(e, _)| (external, say(&e))) });
            }
            let mut failed = Vec::new();
            while let Some(done) = removals.join_next().await {
                match done {
                    Ok(Ok(())) => {}
                    Ok(Err(failure)) => failed.push(failure),
                    Err(e) => failed.push((0, e.to_string())),
                }
            }
            failed
        })
    }
}

async fn map_pcp(
    gateway: IpAddr,
    client: IpAddr,
    request: &PortRequest,
    lease: u32,
) -> Result<PortMapping, pcp::Failure> {
    let Ok(port) = port(request) else { return Err(pcp::Failure::MalformedRequest) };
    let base = pcp::BaseMapRequest::new(gateway.into(), client, protocol(request.protocol), port);
    pcp::port_mapping(base, None, None, options(port, lease)).await
}

fn port(request: &PortRequest) -> Result<NonZeroU16, String> {
    NonZeroU16::new(request.port).ok_or_else(|| "port 0 cannot be forwarded".to_string())
}

fn options(port: NonZeroU16, lease: u32) -> PortMappingOptions {
    PortMappingOptions { external_port: Some(port), lifetime_seconds: Some(lease), timeout_config: Some(TIMEOUTS) }
}

fn protocol(protocol: Protocol) -> InternetProtocol {
    match protocol {
        Protocol::Tcp => InternetProtocol::Tcp,
        Protocol::Udp => InternetProtocol::Udp,
    }
}

fn say(e: &MappingFailure) -> String {
    match e {
        MappingFailure::Pcp(e) => say_pcp(e),
        MappingFailure::NatPmp(e) => say_nat_pmp(e),
    }
}

fn say_pcp(e: &pcp::Failure) -> String {
    match e {
        pcp::Failure::Timeout => "no answer".into(),
        pcp::Failure::Socket(e) => say_io(e),
        pcp::Failure::UnsupportedVersion(_) => "not spoken here".into(),
        pcp::Failure::NotAuthorized(_) => "this machine may not open ports".into(),
        e => e.to_string(),
    }
}

fn say_nat_pmp(e: &natpmp::Failure) -> String {
    match e {
        natpmp::Failure::Timeout => "no answer".into(),
        natpmp::Failure::Socket(e) => say_io(e),
        natpmp::Failure::NotAuthorized => "this machine may not open ports".into(),
        e => e.to_string(),
    }
}

fn say_io(e: &std::io::Error) -> String {
    match e.kind() {
        // The gateway answered with ICMP port unreachable.
        std::io::ErrorKind::ConnectionRefused => "not running there".into(),
        _ => e.to_string(),
    }
}
