//! A connection made ahead of its handshake (`patches/webrtc`: `PeerConnection::gather_ahead`,
//! used by `patches/matchbox_socket` for the connections a socket keeps made ahead): it has its
//! server reflexive candidate before it has a description, so its offer or answer carries it
//! instead of a STUN round trip later. A real peer connection on loopback, with a STUN server
//! on loopback.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::executor::block_on;
use webrtc::peer_connection::{
    PeerConnection, PeerConnectionBuilder, PeerConnectionEventHandler, RTCConfigurationBuilder, RTCIceGatheringState,
    RTCIceServer, RTCPeerConnectionIceEvent,
};
use webrtc::runtime::SmolRuntime;

use crate::stun::StunServer;

/// What a connection raised: its local candidates and its gathering states, in order.
#[derive(Default)]
struct Raised {
    candidates: Mutex<Vec<String>>,
    gathering: Mutex<Vec<RTCIceGatheringState>>,
}

#[async_trait::async_trait]
impl PeerConnectionEventHandler for Raised {
    async fn on_ice_candidate(&self, event: RTCPeerConnectionIceEvent) {
        let line = event.candidate.to_json().map(|c| c.candidate).unwrap_or_default();
        self.candidates.lock().unwrap().push(line);
    }

    async fn on_ice_gathering_state_change(&self, state: RTCIceGatheringState) {
        self.gathering.lock().unwrap().push(state);
    }
}

impl Raised {
    fn reflexive(&self) -> usize {
        self.candidates.lock().unwrap().iter().filter(|c| c.contains(" typ srflx")).count()
    }
}

/// A connection on one loopback socket, with `stun` as its only ICE server.
fn connection(stun: &StunServer) -> (Arc<dyn PeerConnection>, Arc<Raised>) {
    let raised = Arc::new(Raised::default());
    let config = RTCConfigurationBuilder::new()
        .with_ice_servers(vec![RTCIceServer { urls: vec![format!("stun:{}", stun.addr())], ..Default::default() }])
        .build();
    let connection = block_on(
        PeerConnectionBuilder::new()
            .with_configuration(config)
            .with_runtime(Arc::new(SmolRuntime))
            .with_handler(Arc::clone(&raised) as Arc<dyn PeerConnectionEventHandler>)
            .with_udp_addrs(vec!["127.0.0.1:0"])
            .build(),
    )
    .expect("a connection");
    let connection: Arc<dyn PeerConnection> = Arc::new(connection);
    block_on(connection.create_data_channel("d", None))
        .expect("a channel, for the offer to have an application section");
    (connection, raised)
}

/// Polls `done` until it holds or 10 s passed.
fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within 10 s");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_connection_gathered_ahead_offers_its_reflexive_candidate_and_gathers_it_once() {
    let stun = StunServer::start("127.0.0.1:0".parse().unwrap()).expect("a STUN server");

    // Made as ever: nothing is gathered before a description, so an offer has no candidate.
    let (plain, plain_raised) = connection(&stun);
    let offer = block_on(plain.create_offer(None)).expect("an offer");
    assert!(!offer.sdp.contains("typ srflx"), "{}", offer.sdp);
    assert_eq!(plain_raised.candidates.lock().unwrap().len(), 0);

    // Gathered ahead: the reflexive candidate is raised with no description, and the offer
    // made afterwards carries it.
    let (ahead, raised) = connection(&stun);
    block_on(ahead.gather_ahead()).expect("gathering ahead");
    eventually("the reflexive candidate gathered ahead", || raised.reflexive() == 1);
    assert!(raised.gathering.lock().unwrap().is_empty(), "no end of candidates before the relays' turn");
    let offer = block_on(ahead.create_offer(None)).expect("an offer");
    assert!(offer.sdp.contains("typ srflx"), "{}", offer.sdp);
    assert!(!offer.sdp.contains("end-of-candidates"), "{}", offer.sdp);

    // The description's own gathering ends with what was gathered ahead, raised once.
    block_on(ahead.set_local_description(offer)).expect("the offer set");
    eventually("the gathering complete", || {
        raised.gathering.lock().unwrap().last() == Some(&RTCIceGatheringState::Complete)
    });
    assert_eq!(raised.reflexive(), 1, "{:?}", raised.candidates.lock().unwrap());
    for connection in [ahead, plain] {
        block_on(connection.close()).expect("closed");
    }
    stun.stop();
}
