//! What sessions run over: peers, two channels, messages — and the in-memory transport for tests.
//!
//! A [`Transport`] is one process's view of the mesh: peers appear and disappear,
//! and each carries messages on two channels ([`Channel::Reliable`] and
//! [`Channel::Unreliable`]). Sessions don't care which transport carries them: the
//! same host runs over WebRTC data channels in a real match and over
//! [`MemoryTransport`]s (built on the seeded [`link`](crate::link)) in tests.
//!
//! Time is passed in, as everywhere in this crate: the in-memory transport uses it
//! to deliver what its link conditioner delayed; a socket transport ignores it.

#[cfg(feature = "webrtc")]
pub mod webrtc;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::frame::Channel;
use crate::link::{LinkConfig, LinkEnd, link_pair};

/// A peer in the mesh, as the transport names it (a WebRTC peer id, or a test's number).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PeerKey(pub u128);

impl fmt::Debug for PeerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PeerKey({:08x})", (self.0 >> 96) as u32)
    }
}

impl fmt::Display for PeerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", (self.0 >> 96) as u32)
    }
}

/// Something the transport saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportEvent {
    /// A peer's channels are open.
    Connected(PeerKey),
    /// A peer is gone (its link closed or failed).
    Disconnected(PeerKey),
    /// A message from a peer.
    Message {
        /// Who sent it.
        peer: PeerKey,
        /// On which channel.
        channel: Channel,
        /// The bytes, one transport message (at most 64 KiB; larger frames come chunked).
        bytes: Vec<u8>,
    },
}

/// One process's connection to the mesh.
pub trait Transport: Send {
    /// This process's own id in the mesh, once known.
    fn local_id(&self) -> Option<PeerKey>;
    /// Everything that happened since the last call.
    fn poll(&mut self, now: Duration) -> Vec<TransportEvent>;
    /// Sends one message to a peer (dropped if the peer is not connected).
    fn send(&mut self, now: Duration, peer: PeerKey, channel: Channel, bytes: Vec<u8>);
    /// Closes the link to one peer.
    fn disconnect(&mut self, peer: PeerKey);
    /// Why the transport stopped by itself, if it did (nothing will arrive any more): the
    /// signalling server unreachable or lost, say. `None` while it works.
    fn failure(&self) -> Option<String> {
        None
    }
    /// How the link to `peer` goes, once known: [`LinkPath`].
    fn path(&self, _peer: PeerKey) -> Option<LinkPath> {
        None
    }
}

/// How the link to a peer goes across the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkPath {
    /// Between the two machines' own addresses (a LAN, or a machine with a public address).
    Direct,
    /// Through a NAT's public address, found with STUN (or learned from the peer's packets).
    Reflexive,
    /// Through a TURN server that relays every packet (adds its round trip).
    Relayed,
}

impl LinkPath {
    /// `direct`, `reflexive` or `relayed`.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkPath::Direct => "direct",
            LinkPath::Reflexive => "reflexive",
            LinkPath::Relayed => "relayed",
        }
    }
}

/// An in-memory transport: links to other [`MemoryTransport`]s, each through a seeded conditioner.
#[derive(Debug)]
pub struct MemoryTransport {
    id: PeerKey,
    links: BTreeMap<PeerKey, LinkEnd>,
    announced: Vec<PeerKey>,
}

impl MemoryTransport {
    /// A transport with id `id` and no links yet.
    pub fn new(id: PeerKey) -> Self {
        MemoryTransport { id, links: BTreeMap::new(), announced: Vec::new() }
    }

    /// Links `a` and `b` through a link with `config` (both see the other connect on their next poll).
    pub fn connect(a: &mut MemoryTransport, b: &mut MemoryTransport, config: LinkConfig) {
        let (ab, ba) = link_pair(config);
        a.links.insert(b.id, ab);
        b.links.insert(a.id, ba);
    }

    /// The link to `peer`, for its counters.
    pub fn link(&self, peer: PeerKey) -> Option<&LinkEnd> {
        self.links.get(&peer)
    }
}

impl Transport for MemoryTransport {
    fn local_id(&self) -> Option<PeerKey> {
        Some(self.id)
    }

    fn poll(&mut self, now: Duration) -> Vec<TransportEvent> {
        let mut events = Vec::new();
        for (&peer, link) in &mut self.links {
            if !self.announced.contains(&peer) {
                self.announced.push(peer);
                events.push(TransportEvent::Connected(peer));
            }
            while let Some((channel, bytes)) = link.poll_recv(now) {
                events.push(TransportEvent::Message { peer, channel, bytes });
            }
        }
        let closed: Vec<PeerKey> = self.links.iter().filter(|(_, l)| l.is_closed()).map(|(p, _)| *p).collect();
        for peer in closed {
            self.links.remove(&peer);
            self.announced.retain(|p| *p != peer);
            events.push(TransportEvent::Disconnected(peer));
        }
        events
    }

    fn send(&mut self, now: Duration, peer: PeerKey, channel: Channel, bytes: Vec<u8>) {
        if let Some(link) = self.links.get_mut(&peer) {
            link.send(now, channel, bytes);
        }
    }

    fn disconnect(&mut self, peer: PeerKey) {
        if let Some(link) = self.links.get_mut(&peer) {
            link.close();
        }
    }
}

impl<T: Transport + ?Sized> Transport for Box<T> {
    fn local_id(&self) -> Option<PeerKey> {
        (**self).local_id()
    }

    fn poll(&mut self, now: Duration) -> Vec<TransportEvent> {
        (**self).poll(now)
    }

    fn send(&mut self, now: Duration, peer: PeerKey, channel: Channel, bytes: Vec<u8>) {
        (**self).send(now, peer, channel, bytes)
    }

    fn disconnect(&mut self, peer: PeerKey) {
        (**self).disconnect(peer)
    }

    fn failure(&self) -> Option<String> {
        (**self).failure()
    }

    fn path(&self, peer: PeerKey) -> Option<LinkPath> {
        (**self).path(peer)
    }
}

/// Two transports seen as one: the embedded host serves its own player over an
/// in-memory link and friends over WebRTC with one [`Transport`].
///
/// Peers are routed to the transport that announced them; the two must not share a
/// [`PeerKey`] (memory ids are small numbers, WebRTC ids random 128-bit UUIDs).
#[derive(Debug)]
pub struct Joined<A, B> {
    /// The first transport (its local id is the joined one's).
    pub first: A,
    /// The second transport.
    pub second: B,
    second_peers: std::collections::BTreeSet<PeerKey>,
}

impl<A: Transport, B: Transport> Joined<A, B> {
    /// Joins `first` and `second`.
    pub fn new(first: A, second: B) -> Self {
        Joined { first, second, second_peers: Default::default() }
    }

    /// The two transports apart again, links open (a host that steps down gives its
    /// process the mesh back).
    pub fn into_parts(self) -> (A, B) {
        (self.first, self.second)
    }
}

impl<A: Transport, B: Transport> Transport for Joined<A, B> {
    fn local_id(&self) -> Option<PeerKey> {
        self.first.local_id().or_else(|| self.second.local_id())
    }

    fn poll(&mut self, now: Duration) -> Vec<TransportEvent> {
        let mut events = self.first.poll(now);
        for event in self.second.poll(now) {
            match &event {
                TransportEvent::Connected(p) => {
                    self.second_peers.insert(*p);
                }
                TransportEvent::Disconnected(p) => {
                    self.second_peers.remove(p);
                }
                TransportEvent::Message { .. } => {}
            }
            events.push(event);
        }
        events
    }

    fn send(&mut self, now: Duration, peer: PeerKey, channel: Channel, bytes: Vec<u8>) {
        if self.second_peers.contains(&peer) {
            self.second.send(now, peer, channel, bytes)
        } else {
            self.first.send(now, peer, channel, bytes)
        }
    }

    fn disconnect(&mut self, peer: PeerKey) {
        if self.second_peers.contains(&peer) { self.second.disconnect(peer) } else { self.first.disconnect(peer) }
    }

    fn failure(&self) -> Option<String> {
        self.first.failure().or_else(|| self.second.failure())
    }

    fn path(&self, peer: PeerKey) -> Option<LinkPath> {
        if self.second_peers.contains(&peer) { self.second.path(peer) } else { self.first.path(peer) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_transports_connect_exchange_and_disconnect() {
        let (mut a, mut b) = (MemoryTransport::new(PeerKey(1)), MemoryTransport::new(PeerKey(2)));
        MemoryTransport::connect(&mut a, &mut b, LinkConfig::default().latency(Duration::from_millis(10)));
        assert_eq!(a.poll(Duration::ZERO), [TransportEvent::Connected(PeerKey(2))]);
        assert_eq!(b.poll(Duration::ZERO), [TransportEvent::Connected(PeerKey(1))]);
        a.send(Duration::ZERO, PeerKey(2), Channel::Reliable, b"hi".to_vec());
        assert_eq!(b.poll(Duration::from_millis(9)), []);
        assert_eq!(
            b.poll(Duration::from_millis(10)),
            [TransportEvent::Message { peer: PeerKey(1), channel: Channel::Reliable, bytes: b"hi".to_vec() }]
        );
        a.disconnect(PeerKey(2));
        assert_eq!(b.poll(Duration::from_millis(20)), [TransportEvent::Disconnected(PeerKey(1))]);
        assert_eq!(a.poll(Duration::from_millis(20)), [TransportEvent::Disconnected(PeerKey(2))]);
    }

    #[test]
    fn joined_routes_each_peer_to_the_transport_that_announced_it() {
        let (mut a, mut b, mut c) =
            (MemoryTransport::new(PeerKey(1)), MemoryTransport::new(PeerKey(2)), MemoryTransport::new(PeerKey(3)));
        let mut a2 = MemoryTransport::new(PeerKey(1));
        MemoryTransport::connect(&mut a, &mut b, LinkConfig::default());
        MemoryTransport::connect(&mut a2, &mut c, LinkConfig::default());
        let mut joined: Box<dyn Transport> = Box::new(Joined::new(a, a2));
        let t = Duration::ZERO;
        let mut seen = joined.poll(t);
        seen.sort_by_key(|e| format!("{e:?}"));
        assert_eq!(seen, [TransportEvent::Connected(PeerKey(2)), TransportEvent::Connected(PeerKey(3))]);
        assert_eq!(b.poll(t), [TransportEvent::Connected(PeerKey(1))]);
        assert_eq!(c.poll(t), [TransportEvent::Connected(PeerKey(1))]);
        joined.send(t, PeerKey(3), Channel::Reliable, b"to c".to_vec());
        joined.send(t, PeerKey(2), Channel::Unreliable, b"to b".to_vec());
        assert_eq!(
            c.poll(t),
            [TransportEvent::Message { peer: PeerKey(1), channel: Channel::Reliable, bytes: b"to c".to_vec() }]
        );
        assert_eq!(
            b.poll(t),
            [TransportEvent::Message { peer: PeerKey(1), channel: Channel::Unreliable, bytes: b"to b".to_vec() }]
        );
        joined.disconnect(PeerKey(3));
        assert_eq!(c.poll(t), [TransportEvent::Disconnected(PeerKey(1))]);
        assert!(b.poll(t).is_empty(), "the other link stays up");
    }

    /// A memory transport that says every link of it goes `path` (and that it failed, if told).
    struct Pathed(MemoryTransport, LinkPath, Option<&'static str>);

    impl Transport for Pathed {
        fn local_id(&self) -> Option<PeerKey> {
            self.0.local_id()
        }
        fn poll(&mut self, now: Duration) -> Vec<TransportEvent> {
            self.0.poll(now)
        }
        fn send(&mut self, now: Duration, peer: PeerKey, channel: Channel, bytes: Vec<u8>) {
            self.0.send(now, peer, channel, bytes)
        }
        fn disconnect(&mut self, peer: PeerKey) {
            self.0.disconnect(peer)
        }
        fn failure(&self) -> Option<String> {
            self.2.map(str::to_owned)
        }
        fn path(&self, _peer: PeerKey) -> Option<LinkPath> {
            Some(self.1)
        }
    }

    #[test]
    fn a_joined_transport_tells_each_links_path_and_a_failure_of_either() {
        let (mut a, mut b, mut a2, mut c) = (
            MemoryTransport::new(PeerKey(1)),
            MemoryTransport::new(PeerKey(2)),
            MemoryTransport::new(PeerKey(1)),
            MemoryTransport::new(PeerKey(3)),
        );
        MemoryTransport::connect(&mut a, &mut b, LinkConfig::default());
        MemoryTransport::connect(&mut a2, &mut c, LinkConfig::default());
        let first = Pathed(a, LinkPath::Direct, None);
        let mut joined = Joined::new(first, Pathed(a2, LinkPath::Relayed, Some("signalling lost")));
        assert_eq!(joined.poll(Duration::ZERO).len(), 2);
        assert_eq!(joined.path(PeerKey(2)), Some(LinkPath::Direct));
        assert_eq!(joined.path(PeerKey(3)), Some(LinkPath::Relayed));
        assert_eq!(joined.failure().as_deref(), Some("signalling lost"));
    }

    #[test]
    fn a_joined_transport_comes_apart_with_its_links_open() {
        let (mut a, mut b, mut a2, mut c) = (
            MemoryTransport::new(PeerKey(1)),
            MemoryTransport::new(PeerKey(2)),
            MemoryTransport::new(PeerKey(1)),
            MemoryTransport::new(PeerKey(3)),
        );
        MemoryTransport::connect(&mut a, &mut b, LinkConfig::default());
        MemoryTransport::connect(&mut a2, &mut c, LinkConfig::default());
        let mut joined = Joined::new(a, a2);
        let t = Duration::ZERO;
        assert_eq!(joined.poll(t).len(), 2);
        let (mut a, _a2) = joined.into_parts();
        b.send(t, PeerKey(1), Channel::Reliable, b"still here".to_vec());
        let got = a.poll(t);
        assert_eq!(
            got,
            [TransportEvent::Message { peer: PeerKey(2), channel: Channel::Reliable, bytes: b"still here".to_vec() }]
        );
    }
}
