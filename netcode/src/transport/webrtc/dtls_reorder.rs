//! The end of a DTLS handshake on a path that reorders, as this stack's DTLS (`patches/rtc-dtls`)
//! takes it. The answerer of a WebRTC link is the DTLS server: it is up as soon as the
//! offerer's last flight is in, and with SNAP (`patches/rtc`) its first SCTP packet, a joining
//! player's hello, goes right behind its own ChangeCipherSpec and Finished. A few milliseconds
//! of jitter can put the hello first at the offerer. Driven sans-IO, the datagrams handed over
//! by the test in the order it chooses.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::BytesMut;
use rtc_dtls::cipher_suite::CipherSuiteId;
use rtc_dtls::config::{ConfigBuilder, HandshakeConfig};
use rtc_dtls::crypto::Certificate;
use rtc_dtls::crypto_provider::RTCCryptoProvider;
use rtc_dtls::endpoint::{Endpoint, EndpointEvent};
use shared::TransportProtocol;

fn config(provider: &Arc<dyn RTCCryptoProvider>, is_client: bool) -> Arc<HandshakeConfig> {
    let mut builder = ConfigBuilder::default()
        .with_crypto_provider(provider.clone())
        .with_cipher_suites(vec![CipherSuiteId::Tls_Ecdhe_Ecdsa_With_Aes_128_Gcm_Sha256])
        .with_insecure_skip_verify(true);
    if !is_client {
        builder = builder.with_certificates(vec![
            Certificate::generate_self_signed(vec!["localhost".to_owned()], provider.crypto()).expect("a certificate"),
        ]);
    }
    Arc::new(builder.build(is_client, None).expect("a config"))
}

fn names(events: &[EndpointEvent]) -> Vec<&'static str> {
    events
        .iter()
        .map(|e| match e {
            EndpointEvent::HandshakeComplete => "up",
            EndpointEvent::ApplicationData(_) => "data",
            EndpointEvent::PeerClosed => "closed",
            _ => "other",
        })
        .collect()
}

fn sent(endpoint: &mut Endpoint) -> Vec<BytesMut> {
    std::iter::from_fn(|| endpoint.poll_transmit()).map(|t| t.message).collect()
}

#[test]
fn the_servers_first_data_ahead_of_its_finished_is_delivered_once_the_handshake_completes() {
    let provider: Arc<dyn RTCCryptoProvider> = Arc::new(rtc_dtls::crypto_provider::providers::RingProvider::new());
    let now = Instant::now();
    let (offerer_addr, answerer_addr): (SocketAddr, SocketAddr) =
        ("10.1.0.10:4444".parse().unwrap(), "10.2.0.10:4445".parse().unwrap());
    let mut answerer = Endpoint::new(answerer_addr, TransportProtocol::UDP, Some(config(&provider, false)));
    let mut offerer = Endpoint::new(offerer_addr, TransportProtocol::UDP, None);
    offerer.connect(now, answerer_addr, config(&provider, true), None).expect("a ClientHello");

    // ClientHello → the server's flight → the client's last flight; the server is then up.
    let mut answerer_up = false;
    for _ in 0..4 {
        for dgram in sent(&mut offerer) {
            let events = answerer.read(now, offerer_addr, None, dgram).expect("the answerer reads");
            answerer_up |= events.iter().any(|e| matches!(e, EndpointEvent::HandshakeComplete));
        }
        if answerer_up {
            break;
        }
        for dgram in sent(&mut answerer) {
            let events = offerer.read(now, answerer_addr, None, dgram).expect("the offerer reads");
            assert!(events.is_empty(), "the offerer waits for the server's Finished: {:?}", names(&events));
        }
    }
    assert!(answerer_up, "the answerer took the offerer's last flight");

    // Its ChangeCipherSpec and Finished, then at once its first message; the message arrives first.
    let finished = sent(&mut answerer);
    assert!(!finished.is_empty(), "the server's Finished went");
    answerer.write(now, offerer_addr, b"hello").expect("the answerer is up");
    let hello = sent(&mut answerer);
    let mut events = Vec::new();
    for dgram in hello.into_iter().chain(finished) {
        events.extend(offerer.read(now, answerer_addr, None, dgram).expect("the offerer reads"));
    }

    let up = events.iter().position(|e| matches!(e, EndpointEvent::HandshakeComplete));
    let data = events.iter().position(|e| matches!(e, EndpointEvent::ApplicationData(d) if &d[..] == b"hello"));
    assert!(up.is_some(), "the offerer is up: {:?}", names(&events));
    assert!(data.is_some(), "and the hello that overtook the Finished is not lost: {:?}", names(&events));
}
