//! SNAP as this stack's association (`patches/rtc-sctp`) takes it: each side makes an SCTP
//! INIT to give the other out of band (a WebRTC link puts it in its SDP, `a=sctp-init`), and
//! both open their association established from the two, with no handshake on the path. The
//! joiner (up first, as the DTLS server) sends its hello at once; it is the first packet the
//! host hears, and the host answers it. Driven sans-IO, the datagrams handed over by the test.

use std::net::SocketAddr;
use std::time::Instant;

use bytes::Bytes;
use rtc_sctp::{
    Association, ClientConfig, ConnectError, DatagramEvent, Endpoint, EndpointConfig, Event, PayloadProtocolIdentifier,
    StreamEvent, TransportConfig, generate_snap_init,
};
use shared::TransportProtocol;

use super::sctp_handshake::datagrams;

/// The chunk type of each chunk in an SCTP packet (after its 12-byte common header).
fn chunk_types(packet: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    let mut at = 12;
    while at + 4 <= packet.len() {
        types.push(packet[at]);
        let len = u16::from_be_bytes([packet[at + 2], packet[at + 3]]) as usize;
        at += len.max(4).div_ceil(4) * 4;
    }
    types
}

const DATA: u8 = 0;
const INIT: u8 = 1;

fn deliver(to: &mut Endpoint, from: SocketAddr, association: &mut Association, now: Instant, dgrams: Vec<Bytes>) {
    for dgram in dgrams {
        match to.handle(now, from, None, dgram) {
            Some((_, DatagramEvent::AssociationEvent(e))) => association.handle_event(e),
            Some(_) => panic!("a packet opened another association"),
            None => panic!("a packet belonged to no association"),
        }
    }
}

fn read(association: &mut Association, id: u16) -> Vec<u8> {
    let chunks = association.stream(id).expect("the stream").read_sctp().expect("readable").expect("a message");
    let mut buf = [0; 64];
    let n = chunks.read(&mut buf).expect("the message");
    buf[..n].to_vec()
}

#[test]
fn two_inits_given_out_of_band_open_both_sides_and_the_first_packet_on_the_path_is_data() {
    let now = Instant::now();
    let (host_addr, joiner_addr): (SocketAddr, SocketAddr) =
        ("10.1.0.10:5000".parse().unwrap(), "10.2.0.10:5000".parse().unwrap());
    let config = TransportConfig::default();
    let (host_init, joiner_init) = (generate_snap_init(&config), generate_snap_init(&config));
    assert_ne!(host_init, joiner_init, "each side's INIT has its own tag and TSN");

    let mut host_ep = Endpoint::new(host_addr, TransportProtocol::UDP, EndpointConfig::default().into(), None);
    let mut joiner_ep = Endpoint::new(joiner_addr, TransportProtocol::UDP, EndpointConfig::default().into(), None);
    let (_, mut joiner) = joiner_ep
        .connect_snap(ClientConfig::new(config.clone()), host_addr, &joiner_init, &host_init)
        .expect("the joiner opens by SNAP");
    let (_, mut host) = host_ep
        .connect_snap(ClientConfig::new(config), joiner_addr, &host_init, &joiner_init)
        .expect("the host opens by SNAP");

    for side in [&mut host, &mut joiner] {
        assert!(!side.is_handshaking(), "established without a handshake");
        assert!(matches!(side.poll(), Some(Event::Connected)), "and says so at once");
        assert!(datagrams(side, now).is_empty(), "nothing on the path before the first message");
    }

    joiner.open_stream(0, PayloadProtocolIdentifier::Binary).expect("a stream").write(now, b"hello").expect("sent");
    let hello = datagrams(&mut joiner, now);
    assert_eq!(
        hello.iter().map(|d| chunk_types(d)).collect::<Vec<_>>(),
        vec![vec![DATA]],
        "the hello is the first packet"
    );
    deliver(&mut host_ep, joiner_addr, &mut host, now, hello);
    let readable =
        std::iter::from_fn(|| host.poll()).any(|e| matches!(e, Event::Stream(StreamEvent::Readable { id: 0 })));
    assert!(readable, "the host hears the hello");
    assert!(host.accept_stream().is_some(), "on the joiner's stream");
    assert_eq!(read(&mut host, 0), b"hello");

    host.stream(0).expect("stream 0").write(now, b"welcome").expect("sent");
    let welcome = datagrams(&mut host, now);
    assert!(welcome.iter().all(|d| !chunk_types(d).contains(&INIT)), "no INIT either way");
    deliver(&mut joiner_ep, host_addr, &mut joiner, now, welcome);
    assert_eq!(read(&mut joiner, 0), b"welcome");
}

#[test]
fn an_init_given_out_of_band_that_is_not_one_opens_nothing() {
    let config = TransportConfig::default();
    let good = generate_snap_init(&config);
    let peer: SocketAddr = "10.2.0.10:5000".parse().unwrap();
    let mut endpoint = Endpoint::new(
        "10.1.0.10:5000".parse().unwrap(),
        TransportProtocol::UDP,
        EndpointConfig::default().into(),
        None,
    );
    let mut zero_tag = good.to_vec();
    zero_tag[4..8].copy_from_slice(&[0; 4]);
    let mut as_ack = good.to_vec();
    as_ack[0] = 2;
    let bad: [(&str, Vec<u8>); 5] = [
        ("empty", Vec::new()),
        ("cut short", good[..10].to_vec()),
        ("a zero tag", zero_tag),
        ("an INIT ACK", as_ack),
        ("too long", vec![1; rtc_sctp::MAX_SNAP_INIT_BYTES + 1]),
    ];
    for (what, init) in bad {
        for (local, remote) in [(&good[..], &init[..]), (&init[..], &good[..])] {
            let opened = endpoint.connect_snap(ClientConfig::new(config.clone()), peer, local, remote);
            assert!(matches!(opened, Err(ConnectError::InvalidSnapInit(_))), "{what}: {:?}", opened.map(|_| ()));
        }
    }
    // Garbage of every length up to a few INITs' worth never panics.
    let mut seed = 0x9e37_79b9_u32;
    for len in 0..300 {
        let junk: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                seed as u8
            })
            .collect();
        let _ = endpoint.connect_snap(ClientConfig::new(config.clone()), peer, &good, &junk);
    }
}
