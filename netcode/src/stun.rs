//! A STUN binding responder (RFC 8489 §6.3.1): answers a Binding request on UDP with the
//! address it came from, so that a peer behind a NAT learns its server-reflexive address.
//!
//! [`binding_response`] is the whole protocol, sans I/O: a datagram and its source in, the
//! answer out (`None` for anything but a well-formed Binding request, which is dropped
//! unanswered, as the RFC says of what a server does not understand). [`StunServer`] runs it
//! on a UDP socket on a thread of its own. The codec is `rtc-stun`'s, the one the WebRTC
//! stack checks candidates with.

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use rtc_stun::fingerprint::FINGERPRINT;
use rtc_stun::message::{BINDING_REQUEST, BINDING_SUCCESS, Message, Setter};
use rtc_stun::xoraddr::XorMappedAddress;

use crate::signal::SignalError;

/// The default STUN port.
pub const DEFAULT_STUN_PORT: u16 = 3478;

/// The largest datagram looked at; a Binding request is a few dozen bytes.
const MAX_DATAGRAM: usize = 1500;

/// The answer to `datagram` from `from`: a Binding success response carrying `from` as its
/// XOR-MAPPED-ADDRESS and a FINGERPRINT, with the request's transaction id; `None` when
/// `datagram` is not a well-formed STUN Binding request.
pub fn binding_response(datagram: &[u8], from: SocketAddr) -> Option<Vec<u8>> {
    if datagram.len() > MAX_DATAGRAM || !rtc_stun::message::is_stun_message(datagram) {
        return None;
    }
    let mut request = Message::new();
    request.unmarshal_binary(datagram).ok()?;
    if request.typ != BINDING_REQUEST {
        return None;
    }
    let mut response = Message::new();
    let setters: [Box<dyn Setter>; 4] = [
        Box::new(BINDING_SUCCESS),
        Box::new(request.transaction_id),
        Box::new(XorMappedAddress { ip: from.ip(), port: from.port() }),
        Box::new(FINGERPRINT),
    ];
    response.build(&setters).ok()?;
    Some(response.raw)
}

/// A running STUN binding responder.
#[derive(Debug)]
pub struct StunServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StunServer {
    /// Binds `bind` (UDP) and answers on a thread of its own.
    pub fn start(bind: SocketAddr) -> Result<StunServer, SignalError> {
        let fail = |e: std::io::Error| SignalError::Bind { addr: bind, reason: format!("STUN (UDP): {e}") };
        let socket = UdpSocket::bind(bind).map_err(fail)?;
        let addr = socket.local_addr().map_err(fail)?;
        // The thread looks at the stop flag this often.
        socket.set_read_timeout(Some(Duration::from_millis(200))).map_err(fail)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("vimp-stun".into())
            .spawn(move || {
                let mut buf = [0u8; MAX_DATAGRAM + 1];
                while !flag.load(Ordering::Relaxed) {
                    let Ok((len, from)) = socket.recv_from(&mut buf) else { continue };
                    if let Some(answer) = binding_response(&buf[..len], from) {
                        // A lost answer is the client's to retry, as over any UDP path.
                        let _ = socket.send_to(&answer, from);
                    }
                }
            })
            .map_err(|e| SignalError::Runtime(e.to_string()))?;
        Ok(StunServer { addr, stop, thread: Some(thread) })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops answering and waits for the thread.
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for StunServer {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rtc_stun::message::{Getter, TransactionId};

    fn request() -> Message {
        let mut m = Message::new();
        let setters: [Box<dyn Setter>; 2] = [Box::new(BINDING_REQUEST), Box::new(TransactionId::new())];
        m.build(&setters).expect("a request");
        m
    }

    /// The address a response maps, after checking its type, transaction id and fingerprint.
    fn mapped(answer: &[u8], request: &Message) -> SocketAddr {
        let mut m = Message::new();
        m.unmarshal_binary(answer).expect("a STUN message");
        assert_eq!(m.typ, BINDING_SUCCESS);
        assert_eq!(m.transaction_id, request.transaction_id);
        FINGERPRINT.check(&m).expect("a good fingerprint");
        let mut addr = XorMappedAddress::default();
        addr.get_from(&m).expect("XOR-MAPPED-ADDRESS");
        SocketAddr::new(addr.ip, addr.port)
    }

    #[test]
    fn a_binding_request_learns_where_it_came_from() {
        let req = request();
        for from in ["203.0.113.7:40000", "[2001:db8::1]:3478"] {
            let from: SocketAddr = from.parse().expect("an address");
            let answer = binding_response(&req.raw, from).expect("an answer");
            assert_eq!(mapped(&answer, &req), from);
        }
    }

    #[test]
    fn anything_else_goes_unanswered() {
        let from: SocketAddr = "127.0.0.1:9".parse().expect("an address");
        let req = request();
        let answer = binding_response(&req.raw, from).expect("an answer");
        assert_eq!(binding_response(&answer, from), None, "a response is not a request");
        assert_eq!(binding_response(&req.raw[..19], from), None, "a cut header");
        assert_eq!(binding_response(b"GET / HTTP/1.1\r\n\r\n", from), None);
        let mut long = req.raw.clone();
        long[3] = 200; // an attribute section longer than the datagram
        assert_eq!(binding_response(&long, from), None);
    }

    #[test]
    fn the_server_answers_over_udp() {
        let server = StunServer::start("127.0.0.1:0".parse().expect("an address")).expect("start");
        let client = UdpSocket::bind("127.0.0.1:0").expect("bind");
        client.set_read_timeout(Some(Duration::from_millis(500))).expect("timeout");
        let req = request();
        let mut buf = [0u8; 1500];
        // UDP: ask again until an answer comes, within a deadline.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let len = loop {
            client.send_to(&req.raw, server.addr()).expect("send");
            if let Ok((len, _)) = client.recv_from(&mut buf) {
                break len;
            }
            assert!(std::time::Instant::now() < deadline, "no answer");
        };
        assert_eq!(mapped(&buf[..len], &req), client.local_addr().expect("bound"));
        server.stop();
    }

    proptest! {
        /// Garbage, and requests with bytes flipped, never panic and are answered only as a
        /// Binding request.
        #[test]
        fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..200), flip in (0usize..64, any::<u8>())) {
            let from: SocketAddr = "198.51.100.2:5000".parse().expect("an address");
            let _ = binding_response(&bytes, from);
            let mut req = request().raw;
            req.extend_from_slice(&bytes);
            let at = flip.0 % req.len();
            req[at] ^= flip.1;
            if let Some(answer) = binding_response(&req, from) {
                let mut m = Message::new();
                prop_assert!(m.unmarshal_binary(&answer).is_ok());
                prop_assert_eq!(m.typ, BINDING_SUCCESS);
            }
        }
    }
}
