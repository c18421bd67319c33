//! The end of an SCTP handshake on a lossy path, as this stack's association
//! (`patches/rtc-sctp`) takes it: the side that started the association (a WebRTC link's
//! DTLS client, the host) waits for the COOKIE ACK, and the other side is up as soon as it
//! sent that ACK and sends its first message (a joining player's hello) at once. When the
//! ACK is lost, or the message overtakes it, the message is the first the starter hears.
//! Driven sans-IO, the two endpoints' datagrams handed over by the test.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use rtc_sctp::{
    Association, ClientConfig, DatagramEvent, Endpoint, EndpointConfig, Event, Payload, PayloadProtocolIdentifier,
    ServerConfig, StreamEvent, TransportConfig,
};
use shared::TransportProtocol;

/// What `association` sends at `now`, datagram by datagram.
pub(super) fn datagrams(association: &mut Association, now: Instant) -> Vec<Bytes> {
    std::iter::from_fn(|| association.poll_transmit(now))
        .flat_map(|t| match t.message {
            Payload::RawEncode(contents) => contents,
            _ => Vec::new(),
        })
        .collect()
}

#[test]
fn data_that_comes_instead_of_a_lost_cookie_ack_brings_the_association_up_and_is_delivered() {
    let now = Instant::now();
    let (host_addr, joiner_addr): (SocketAddr, SocketAddr) =
        ("10.1.0.10:5000".parse().unwrap(), "10.2.0.10:5000".parse().unwrap());
    let mut host_ep = Endpoint::new(host_addr, TransportProtocol::UDP, EndpointConfig::default().into(), None);
    let mut joiner_ep = Endpoint::new(
        joiner_addr,
        TransportProtocol::UDP,
        EndpointConfig::default().into(),
        Some(ServerConfig::new(TransportConfig::default()).into()),
    );
    let (_, mut host) =
        host_ep.connect(now, ClientConfig::new(TransportConfig::default()), joiner_addr).expect("an INIT");
    let mut joiner: Option<Association> = None;

    // INIT → INIT ACK → COOKIE ECHO, each handed over whole.
    for _ in 0..2 {
        for dgram in datagrams(&mut host, now) {
            match joiner_ep.handle(now, host_addr, None, dgram) {
                Some((_, DatagramEvent::NewAssociation(a))) => joiner = Some(a),
                Some((_, DatagramEvent::AssociationEvent(e))) => {
                    joiner.as_mut().expect("an association").handle_event(e)
                }
                _ => {}
            }
        }
        let joiner = joiner.as_mut().expect("the joiner's association");
        if !joiner.is_handshaking() {
            break;
        }
        for dgram in datagrams(joiner, now) {
            if let Some((_, DatagramEvent::AssociationEvent(e))) = host_ep.handle(now, joiner_addr, None, dgram) {
                host.handle_event(e);
            }
        }
    }
    let joiner = joiner.as_mut().expect("the joiner's association");
    assert!(!joiner.is_handshaking(), "the joiner took the COOKIE ECHO");
    assert!(host.is_handshaking(), "the host waits for the COOKIE ACK");

    // The COOKIE ACK is lost; the joiner's hello goes next.
    let lost = datagrams(joiner, now);
    assert!(!lost.is_empty(), "a COOKIE ACK went");
    joiner.open_stream(0, PayloadProtocolIdentifier::Binary).expect("a stream").write(now, b"hello").expect("sent");
    for dgram in datagrams(joiner, now) {
        if let Some((_, DatagramEvent::AssociationEvent(e))) = host_ep.handle(now, joiner_addr, None, dgram) {
            host.handle_event(e);
        }
    }

    assert!(!host.is_handshaking(), "the hello stands for the lost COOKIE ACK");
    let events: Vec<Event> = std::iter::from_fn(|| host.poll()).collect();
    let connected = events.iter().position(|e| matches!(e, Event::Connected));
    let readable = events.iter().position(|e| matches!(e, Event::Stream(StreamEvent::Readable { id: 0 })));
    assert!(connected.is_some_and(|c| readable.is_some_and(|r| c < r)), "up, then the hello: {events:?}");
    let chunks = host.stream(0).expect("stream 0").read_sctp().expect("readable").expect("a message");
    let mut buf = [0; 16];
    let n = chunks.read(&mut buf).expect("the hello");
    assert_eq!(&buf[..n], b"hello");
}
