//! UPnP-IGD: finds the router's Internet Gateway Device by SSDP and asks it for port mappings,
//! with igd-next's blocking client.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use igd_next::{AddAnyPortError, AddPortError, Gateway, GatewayIpVersion, PortMappingProtocol, SearchError};

use super::{PortRequest, Protocol};

/// How long the SSDP search waits for an IGD, in all (igd-next sends its M-SEARCHes at once).
pub(super) const SEARCH_TIME: Duration = Duration::from_secs(3);

/// A router that answered as an IGD, and how it takes leases.
pub(super) struct Upnp {
    gateway: Gateway,
    local_ip: IpAddr,
    /// The router answered 725 (OnlyPermanentLeasesSupported) once: every lease is 0 from then on.
    permanent_only: bool,
}

/// Looks for an IGD from `local_ip` for [`SEARCH_TIME`]: the M-SEARCH leaves from that address,
/// so through the interface that holds it whatever the multicast routes say.
pub(super) fn search(local_ip: IpAddr) -> Result<Gateway, String> {
    let mut options = igd_next::SearchOptions::default();
    options.bind_addr = SocketAddr::new(local_ip, 0);
    options.timeout = Some(SEARCH_TIME);
    options.single_search_timeout = Some(SEARCH_TIME);
    options.gateway_ip_version = if local_ip.is_ipv4() { GatewayIpVersion::V4 } else { GatewayIpVersion::V6 };
    igd_next::search_gateway(options).map_err(|e| match e {
        SearchError::NoResponseWithinTimeout => {
            format!("no UPnP router answered within {} s", SEARCH_TIME.as_secs())
        }
        e => format!("the UPnP search failed: {e}"),
    })
}

impl Upnp {
    /// Mappings on `gateway` for this machine at `local_ip`.
    pub(super) fn new(gateway: Gateway, local_ip: IpAddr) -> Upnp {
        Upnp { gateway, local_ip, permanent_only: false }
    }

    /// The router's address.
    pub(super) fn router(&self) -> IpAddr {
        self.gateway.addr.ip()
    }

    /// The router's own internet address.
    pub(super) fn public_ip(&self) -> Result<IpAddr, String> {
        self.gateway.get_external_ip().map_err(|e| match e {
            igd_next::GetExternalIpError::ActionNotAuthorized => {
                "the router would not tell its internet address".to_string()
            }
            igd_next::GetExternalIpError::RequestError(e) => format!("the router did not answer properly: {e}"),
        })
    }

    /// Maps `request` for `lease` seconds, on the same external port or, where `request` allows
    /// it and that one is taken, on any: the external port and the lease granted (0: permanent).
    pub(super) fn map(&mut self, request: &PortRequest, lease: u32) -> Result<(u16, u32), String> {
        let local = SocketAddr::new(self.local_ip, request.port);
        match self.add(request, request.port, lease) {
            Ok(lease) => Ok((request.port, lease)),
            Err(AddPortError::PortInUse) if request.same_port_only => {
                Err(format!("external port {} is already forwarded to another machine on your network", request.port))
            }
            Err(AddPortError::PortInUse) => {
                let lease = if self.permanent_only { 0 } else { lease };
                let proto = igd_protocol(request.protocol);
                let description = description(request);
                match self.gateway.add_any_port(proto, local, lease, &description) {
                    Ok(external) => Ok((external, lease)),
                    Err(AddAnyPortError::OnlyPermanentLeasesSupported) => {
                        self.permanent_only = true;
                        let external =
                            self.gateway.add_any_port(proto, local, 0, &description).map_err(|e| describe_any(&e))?;
                        Ok((external, 0))
                    }
                    Err(e) => Err(describe_any(&e)),
                }
            }
            Err(e) => Err(describe(&e)),
        }
    }

    /// Asks again for the mapping of `request` on `external`, before its lease ends.
    pub(super) fn renew(&mut self, request: &PortRequest, external: u16, lease: u32) -> Result<u32, String> {
        self.add(request, external, lease).map_err(|e| describe(&e))
    }

    /// Removes the mapping of `external`; one the router no longer has counts as removed.
    pub(super) fn remove(&self, protocol: Protocol, external: u16) -> Result<(), String> {
        match self.gateway.remove_port(igd_protocol(protocol), external) {
            Ok(()) | Err(igd_next::RemovePortError::NoSuchPortMapping) => Ok(()),
            Err(e) => Err(e.to_string()),
        }
    }

    /// AddPortMapping of `external` to `request`'s port here, for `lease` seconds, or
    /// permanently on a router that only takes that: the lease granted.
    fn add(&mut self, request: &PortRequest, external: u16, lease: u32) -> Result<u32, AddPortError> {
        let local = SocketAddr::new(self.local_ip, request.port);
        let proto = igd_protocol(request.protocol);
        let description = description(request);
        if !self.permanent_only {
            match self.gateway.add_port(proto, external, local, lease, &description) {
                Err(AddPortError::OnlyPermanentLeasesSupported) => self.permanent_only = true,
                other => return other.map(|()| lease),
            }
        }
        self.gateway.add_port(proto, external, local, 0, &description).map(|()| 0)
    }
}

fn igd_protocol(protocol: Protocol) -> PortMappingProtocol {
    match protocol {
        Protocol::Tcp => PortMappingProtocol::TCP,
        Protocol::Udp => PortMappingProtocol::UDP,
    }
}

/// What the router's mapping list shows for `request`.
fn description(request: &PortRequest) -> String {
    format!("vimp {}", request.what)
}

fn describe(e: &AddPortError) -> String {
    match e {
        AddPortError::ActionNotAuthorized => {
            "the router does not let this machine open ports (UPnP changes may be off in its settings)".into()
        }
        AddPortError::PortInUse => "the port is already forwarded to another machine on your network".into(),
        e => format!("the router refused: {e}"),
    }
}

fn describe_any(e: &AddAnyPortError) -> String {
    match e {
        AddAnyPortError::ActionNotAuthorized => {
            "the router does not let this machine open ports (UPnP changes may be off in its settings)".into()
        }
        AddAnyPortError::NoPortsAvailable | AddAnyPortError::ExternalPortInUse => {
            "the port is forwarded to another machine on your network, and the router offered no other".into()
        }
        e => format!("the router refused: {e}"),
    }
}
