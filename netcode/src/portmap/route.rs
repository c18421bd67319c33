//! Where this machine meets the internet: its own address toward it, its default gateway (from
//! Linux's `/proc/net/route`), and which addresses are public.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};

/// The address this machine sends from toward `dest`, as its routing table decides; `None` when
/// no route leads there. A UDP socket is connected to `dest`, which only looks the route up:
/// nothing is sent, no name is resolved.
pub fn local_ip_toward(dest: IpAddr) -> Option<IpAddr> {
    let any: IpAddr = match dest {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let socket = UdpSocket::bind(SocketAddr::new(any, 0)).ok()?;
    socket.connect(SocketAddr::new(dest, 9)).ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_unspecified()).then_some(ip)
}

/// Whether `ip` is a public internet address: outside the private (RFC 1918), shared (CGNAT,
/// 100.64.0.0/10), loopback, link-local, documentation, benchmarking, multicast and reserved
/// blocks (IPv4: the list miniupnpd and miniupnpc use to judge a router's external address;
/// IPv6: outside unique-local, link-local, documentation and the like). A router whose own
/// address is not public sits behind another NAT, and mappings on it alone reach no one outside.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

/// The IPv4 blocks that are not public, as (network, prefix length).
const RESERVED_V4: [([u8; 4], u32); 18] = [
    ([0, 0, 0, 0], 8),
    ([10, 0, 0, 0], 8),
    ([100, 64, 0, 0], 10),
    ([127, 0, 0, 0], 8),
    ([169, 254, 0, 0], 16),
    ([172, 16, 0, 0], 12),
    ([192, 0, 0, 0], 24),
    ([192, 0, 2, 0], 24),
    ([192, 31, 196, 0], 24),
    ([192, 52, 193, 0], 24),
    ([192, 88, 99, 0], 24),
    ([192, 168, 0, 0], 16),
    ([192, 175, 48, 0], 24),
    ([198, 18, 0, 0], 15),
    ([198, 51, 100, 0], 24),
    ([203, 0, 113, 0], 24),
    ([224, 0, 0, 0], 4),
    ([240, 0, 0, 0], 4),
];

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let ip = u32::from(ip);
    !RESERVED_V4.iter().any(|&(net, len)| {
        let mask = u32::MAX << (32 - len);
        ip & mask == u32::from(Ipv4Addr::from(net))
    })
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || s[0] & 0xfe00 == 0xfc00 // unique local, fc00::/7
        || s[0] & 0xffc0 == 0xfe80 // link-local, fe80::/10
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation, 2001:db8::/32
        || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])) // discard, 100::/64
}

/// The default gateway: the next hop of the default route with the lowest metric. Linux only
/// (`/proc/net/route`); `None` elsewhere, where PCP and NAT-PMP are asked of the UPnP router's
/// address when UPnP found one.
pub(super) fn default_gateway() -> Option<Ipv4Addr> {
    if cfg!(target_os = "linux") {
        std::fs::read_to_string("/proc/net/route").ok().and_then(|table| default_gateway_in(&table))
    } else {
        None
    }
}

/// The default gateway in the text of `/proc/net/route`: among the routes to 0.0.0.0/0 that are
/// up and go through a gateway, the one with the lowest metric.
pub(super) fn default_gateway_in(table: &str) -> Option<Ipv4Addr> {
    table.lines().filter_map(default_route).min_by_key(|&(_, metric)| metric).map(|(gateway, _)| gateway)
}

/// A default route's gateway and metric, from one line of `/proc/net/route`
/// (`Iface Destination Gateway Flags RefCnt Use Metric Mask …`, addresses as the kernel's
/// 32-bit words in hex, so in this machine's byte order); `None` for any other line.
fn default_route(line: &str) -> Option<(Ipv4Addr, u32)> {
    /// RTF_UP | RTF_GATEWAY.
    const UP_VIA_GATEWAY: u32 = 0x1 | 0x2;
    let fields: Vec<&str> = line.split_whitespace().collect();
    let [_iface, destination, gateway, flags, _refcnt, _use, metric, mask, ..] = fields[..] else { return None };
    let word = |s: &str| u32::from_str_radix(s, 16).ok();
    let flags = word(flags)?;
    if word(destination)? != 0 || word(mask)? != 0 || flags & UP_VIA_GATEWAY != UP_VIA_GATEWAY {
        return None;
    }
    let gateway = Ipv4Addr::from(word(gateway)?.to_ne_bytes());
    (!gateway.is_unspecified()).then_some((gateway, metric.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ip` as `/proc/net/route` writes it on this machine.
    fn hex(ip: Ipv4Addr) -> String {
        format!("{:08X}", u32::from_ne_bytes(ip.octets()))
    }

    const HEADER: &str = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT";

    #[test]
    fn the_default_route_with_the_lowest_metric_gives_the_gateway() {
        let route = |iface: &str, dest: &str, gw: Ipv4Addr, flags: &str, metric: u32, mask: &str| {
            format!("{iface}\t{dest}\t{}\t{flags}\t0\t0\t{metric}\t{mask}\t0\t0\t0", hex(gw))
        };
        let table = [
            HEADER.to_string(),
            route("wlan0", "00000000", Ipv4Addr::new(10, 0, 0, 1), "0003", 600, "00000000"),
            route("eth0", "00000000", Ipv4Addr::new(192, 168, 1, 1), "0003", 100, "00000000"),
            // The LAN itself: no gateway.
            route("eth0", &hex(Ipv4Addr::new(192, 168, 1, 0)), Ipv4Addr::UNSPECIFIED, "0001", 0, "00FFFFFF"),
            // A default route that is down.
            route("eth1", "00000000", Ipv4Addr::new(172, 16, 0, 1), "0002", 1, "00000000"),
        ]
        .join("\n");
        assert_eq!(default_gateway_in(&table), Some(Ipv4Addr::new(192, 168, 1, 1)));
    }

    #[cfg(target_endian = "little")]
    #[test]
    fn a_real_route_table_reads_in_the_kernels_byte_order() {
        let table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
                     eth0\t00000000\t0101A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n\
                     eth0\t0001A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n";
        assert_eq!(default_gateway_in(table), Some(Ipv4Addr::new(192, 168, 1, 1)));
    }

    #[test]
    fn no_default_route_and_garbage_give_no_gateway() {
        assert_eq!(default_gateway_in(""), None);
        assert_eq!(default_gateway_in(HEADER), None);
        assert_eq!(default_gateway_in("eth0\t00000000\tZZZZ\t0003\t0\t0\t0\t00000000\t0\t0\t0"), None);
        assert_eq!(default_gateway_in("eth0 00000000 0101A8C0"), None);
        // Up, via gateway 0.0.0.0: not a next hop.
        assert_eq!(default_gateway_in("eth0\t00000000\t00000000\t0003\t0\t0\t0\t00000000\t0\t0\t0"), None);
    }

    #[test]
    fn private_shared_and_reserved_addresses_are_not_public() {
        for ip in [
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "169.254.3.4",
            "0.0.0.0",
            "192.0.2.7",
            "198.51.100.1",
            "203.0.113.9",
            "198.19.0.1",
            "224.0.0.251",
            "255.255.255.255",
            "::",
            "::1",
            "fe80::1",
            "fd00::1",
            "2001:db8::1",
            "::ffff:192.168.1.1",
        ] {
            assert!(!is_public(ip.parse().expect("an address")), "{ip} is not public");
        }
    }

    #[test]
    fn internet_addresses_are_public() {
        for ip in
            ["45.0.113.21", "100.63.255.255", "100.128.0.1", "172.32.0.1", "8.8.8.8", "2a00:1450::1", "::ffff:1.1.1.1"]
        {
            assert!(is_public(ip.parse().expect("an address")), "{ip} is public");
        }
    }

    #[test]
    fn the_address_toward_loopback_is_loopback() {
        assert_eq!(local_ip_toward(Ipv4Addr::LOCALHOST.into()), Some(Ipv4Addr::LOCALHOST.into()));
    }
}
