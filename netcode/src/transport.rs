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

/// A peer in the mesh, as the transport names it (a WebRTC peer id, or a test's number). The
/// rendezvous gives each peer its id, so every member of a room names a peer alike.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
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

    /// How a player reads it: `direct`, `through a NAT` or `relayed by a TURN server`.
    pub fn words(self) -> &'static str {
        match self {
            LinkPath::Direct => "direct",
            LinkPath::Reflexive => "through a NAT",
            LinkPath::Relayed => "relayed by a TURN server",
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

    /// Changes the conditions of the link to `peer` from now on ([`LinkEnd::set_config`]);
    /// `false` when there is no such link.
    pub fn condition(&mut self, peer: PeerKey, config: LinkConfig) -> bool {
        self.links.get_mut(&peer).map(|l| l.set_config(config)).is_some()
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
}
