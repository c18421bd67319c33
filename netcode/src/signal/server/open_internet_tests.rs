//! The rendezvous on the open internet: what one address, one socket or one message can do to
//! everyone else (real sockets on loopback; a second address is 127.0.0.2).

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use tungstenite::protocol::frame::coding::CloseCode;
use tungstenite::{Message as WsMessage, WebSocket};

use super::*;

fn server(limits: Limits) -> SignalServer {
    let bind = SocketAddr::from(([127, 0, 0, 1], 0));
    SignalServer::start(SignalConfig { bind, limits, ..SignalConfig::default() }).expect("starts")
}

fn limits(per_address: usize, deadline_ms: u64) -> Limits {
    Limits {
        per_address,
        upgrades_per_second: 1000.0,
        total: 1000,
        request_deadline: Duration::from_millis(deadline_ms),
    }
}

/// A TCP connection to `to` from `from` (any loopback address: all of 127/8 is this host's).
fn connect_from(from: IpAddr, to: SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    socket.bind(&SocketAddr::new(from, 0).into()).expect("bind");
    socket.connect(&to.into()).expect("connect");
    socket.into()
}

/// A websocket into `room` from `from`, and the id the server assigned it.
fn join(server: &SignalServer, from: IpAddr, room: &str) -> (WebSocket<TcpStream>, String) {
    let stream = connect_from(from, server.addr());
    stream.set_read_timeout(Some(Duration::from_millis(100))).expect("timeout");
    let url = format!("{}/{room}", server.url());
    let (mut ws, _) = tungstenite::client::client(url.as_str(), stream).expect("the upgrade");
    let first = next_event(&mut ws).expect("an event");
    let id = first["IdAssigned"].as_str().expect("IdAssigned first").to_owned();
    (ws, id)
}

/// What the socket says next: a text or a close, or `None` once it is gone. Fails after a
/// deadline.
fn next_message(ws: &mut WebSocket<TcpStream>) -> Option<WsMessage> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match ws.read() {
            Ok(m @ (WsMessage::Text(_) | WsMessage::Close(_))) => return Some(m),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return None,
        }
        assert!(Instant::now() < deadline, "nothing came");
    }
}

fn next_event(ws: &mut WebSocket<TcpStream>) -> Option<serde_json::Value> {
    match next_message(ws)? {
        WsMessage::Text(t) => Some(serde_json::from_str(&t).expect("json")),
        _ => None,
    }
}

fn signal(ws: &mut WebSocket<TcpStream>, to: &str, data: serde_json::Value) {
    let request = serde_json::json!({ "Signal": { "receiver": to, "data": data } });
    ws.send(WsMessage::text(request.to_string())).expect("send");
}

const HOME: [u8; 4] = [127, 0, 0, 1];
const ELSEWHERE: [u8; 4] = [127, 0, 0, 2];

#[test]
fn an_address_holding_its_cap_of_half_open_sockets_locks_no_one_else_out() {
    let server = server(limits(8, 5_000));
    // Eight half requests that say no more, from one address.
    let mut idle: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = connect_from(HOME.into(), server.addr());
            s.write_all(b"GET /K7MP2Q HTTP/1.1\r\nHost: l").expect("write");
            s
        })
        .collect();
    // A ninth from that address is refused at once, and told so before its request is dropped.
    let mut ninth = connect_from(HOME.into(), server.addr());
    ninth
        .write_all(
            b"GET /K7MP2Q HTTP/1.1\r\nHost: l\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        )
        .expect("write");
    ninth.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut answer = String::new();
    let _ = ninth.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer:?}");
    // Meanwhile a room from another address joins and relays.
    let (mut a, a_id) = join(&server, ELSEWHERE.into(), "ROOM01");
    let (mut b, b_id) = join(&server, ELSEWHERE.into(), "ROOM01");
    assert_eq!(next_event(&mut a).expect("news")["NewPeer"], b_id.as_str());
    signal(&mut b, &a_id, serde_json::json!({ "Offer": "sdp" }));
    let got = next_event(&mut a).expect("the signal");
    assert_eq!(got["Signal"]["sender"], b_id.as_str());
    assert_eq!(got["Signal"]["data"]["Offer"], "sdp");
    idle.clear();
    server.stop().expect("stops");
}

#[test]
fn a_message_over_the_limit_closes_its_sender_alone() {
    let server = server(limits(64, 5_000));
    let (mut a, a_id) = join(&server, HOME.into(), "ROOM02");
    let (mut b, b_id) = join(&server, HOME.into(), "ROOM02");
    assert_eq!(next_event(&mut a).expect("news")["NewPeer"], b_id.as_str());
    let big = "x".repeat(65 * 1024);
    signal(&mut b, &a_id, serde_json::json!(big));
    match next_message(&mut b) {
        Some(WsMessage::Close(Some(frame))) => {
            assert_eq!(frame.code, CloseCode::Size);
            assert!(frame.reason.contains("64 KiB"), "{}", frame.reason);
        }
        other => panic!("the sender is closed with a reason, not {other:?}"),
    }
    // The other member hears that it left, and nothing of its message.
    assert_eq!(next_event(&mut a).expect("news")["PeerLeft"], b_id.as_str());
    // And goes on: a newcomer reaches it.
    let (mut c, _) = join(&server, HOME.into(), "ROOM02");
    signal(&mut c, &a_id, serde_json::json!("hello"));
    let news = next_event(&mut a).expect("news");
    assert!(news["NewPeer"].is_string(), "{news}");
    assert_eq!(next_event(&mut a).expect("the signal")["Signal"]["data"], "hello");
    server.stop().expect("stops");
}

#[test]
fn a_socket_that_never_completes_its_request_is_closed_by_the_deadline() {
    let server = server(limits(64, 300));
    // Websockets that upgraded in time are no longer under the deadline.
    let (mut a, a_id) = join(&server, HOME.into(), "ROOM05");
    let (mut b, b_id) = join(&server, HOME.into(), "ROOM05");
    assert_eq!(next_event(&mut a).expect("news")["NewPeer"], b_id.as_str());
    let mut s = connect_from(HOME.into(), server.addr());
    s.write_all(b"GET /K7MP2Q HTTP/1.1\r\nHost: l").expect("write");
    s.set_read_timeout(Some(Duration::from_millis(100))).expect("timeout");
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            // Closed (an error answer before the close is fine too).
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
        assert!(Instant::now() < deadline, "the half request is still open after 10 s");
    }
    signal(&mut b, &a_id, serde_json::json!("still here"));
    assert_eq!(next_event(&mut a).expect("the signal")["Signal"]["data"], "still here");
    server.stop().expect("stops");
}

#[test]
fn a_signal_to_a_peer_of_another_room_is_not_delivered() {
    let server = server(limits(64, 5_000));
    let (mut a, _) = join(&server, HOME.into(), "ROOM03");
    let (mut b, b_id) = join(&server, HOME.into(), "ROOM03");
    let (mut c, c_id) = join(&server, HOME.into(), "ROOM04");
    assert_eq!(next_event(&mut a).expect("news")["NewPeer"], b_id.as_str());
    signal(&mut a, &c_id, serde_json::json!("across"));
    // Once a's next signal is through, the one before it was dealt with.
    signal(&mut a, &b_id, serde_json::json!("marker"));
    assert_eq!(next_event(&mut b).expect("the marker")["Signal"]["data"], "marker");
    // c's own signal to itself comes after anything the server gave it before.
    signal(&mut c, &c_id, serde_json::json!("self"));
    let first = next_event(&mut c).expect("an event");
    assert_eq!(first["Signal"]["data"], "self", "nothing from another room came first: {first}");
    let _ = b.close(None);
    server.stop().expect("stops");
}
