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
        lookups_per_second: 1000.0,
        messages_per_second: 1000.0,
        messages_per_address: 10_000.0,
        ..Limits::default()
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

/// The close frame `ws` gets within `time`, if it is closed by then.
fn closed_within(ws: &mut WebSocket<TcpStream>, time: Duration) -> Option<tungstenite::protocol::CloseFrame> {
    let deadline = Instant::now() + time;
    while Instant::now() < deadline {
        match ws.read() {
            Ok(WsMessage::Close(frame)) => return frame,
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return None,
        }
    }
    None
}

/// The signals `ws` gets until it is closed, and its close frame.
fn signals_until_closed(ws: &mut WebSocket<TcpStream>) -> (usize, Option<tungstenite::protocol::CloseFrame>) {
    let mut signals = 0;
    loop {
        match next_message(ws) {
            Some(WsMessage::Text(t)) if t.contains("\"Signal\"") => signals += 1,
            Some(WsMessage::Text(_)) => {}
            Some(WsMessage::Close(frame)) => return (signals, frame),
            Some(_) => {}
            None => return (signals, None),
        }
    }
}

#[test]
fn a_flood_of_signals_closes_its_sender_and_other_rooms_relay_on() {
    let server = server(Limits { messages_per_second: 10.0, ..limits(64, 5_000) });
    let (mut victim, victim_id) = join(&server, HOME.into(), "FLOOD1");
    let (mut flooder, flooder_id) = join(&server, HOME.into(), "FLOOD1");
    assert_eq!(next_event(&mut victim).expect("news")["NewPeer"], flooder_id.as_str());
    let (mut a, a_id) = join(&server, ELSEWHERE.into(), "QUIET1");
    let (mut b, b_id) = join(&server, ELSEWHERE.into(), "QUIET1");
    assert_eq!(next_event(&mut a).expect("news")["NewPeer"], b_id.as_str());
    // A thousand signals at once: a burst of twice the rate goes through, then the socket closes.
    for n in 0..1000 {
        let request = serde_json::json!({ "Signal": { "receiver": victim_id, "data": n } });
        if flooder.send(WsMessage::text(request.to_string())).is_err() {
            break;
        }
    }
    match signals_until_closed(&mut flooder) {
        (_, Some(frame)) => {
            assert_eq!(frame.code, CloseCode::Policy);
            assert!(frame.reason.contains("10 messages a second"), "{}", frame.reason);
        }
        (_, None) => panic!("the flooder was dropped without a reason"),
    }
    // The victim got the burst and then word that the flooder left.
    let mut got = 0;
    loop {
        let event = next_event(&mut victim).expect("news");
        if event["PeerLeft"] == flooder_id.as_str() {
            break;
        }
        assert!(event["Signal"].is_object(), "{event}");
        got += 1;
    }
    assert!((1..=20).contains(&got), "{got} signals relayed: the burst is 20");
    // Another room relays as before.
    signal(&mut b, &a_id, serde_json::json!("still here"));
    assert_eq!(next_event(&mut a).expect("the signal")["Signal"]["data"], "still here");
    server.stop().expect("stops");
}

#[test]
fn many_sockets_of_one_address_flood_no_faster_than_the_address_may() {
    let server = server(Limits { messages_per_second: 1000.0, messages_per_address: 20.0, ..limits(64, 5_000) });
    let (mut victim, victim_id) = join(&server, ELSEWHERE.into(), "FLOOD2");
    // Four sockets from one address, each well within its own rate, together past the address's.
    let mut flooders: Vec<_> = (0..4).map(|_| join(&server, HOME.into(), "FLOOD2").0).collect();
    for n in 0..30 {
        for flooder in &mut flooders {
            let request = serde_json::json!({ "Signal": { "receiver": victim_id, "data": n } });
            let _ = flooder.send(WsMessage::text(request.to_string()));
        }
    }
    // 120 messages against a burst of 40: most of the sockets are closed (which depends on the
    // order the server read them in), each with the reason.
    let mut closed = 0;
    for flooder in &mut flooders {
        if let Some(frame) = closed_within(flooder, Duration::from_secs(2)) {
            assert_eq!(frame.code, CloseCode::Policy);
            assert!(frame.reason.contains("from this address"), "{}", frame.reason);
            closed += 1;
        }
    }
    assert!(closed >= 2, "{closed} sockets of the address were closed");
    // The victim, on another address, is still served: a newcomer's signal reaches it.
    let (mut c, _) = join(&server, ELSEWHERE.into(), "FLOOD2");
    signal(&mut c, &victim_id, serde_json::json!("hello"));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let event = next_event(&mut victim).expect("news");
        if event["Signal"]["data"] == "hello" {
            break;
        }
        assert!(Instant::now() < deadline, "the newcomer's signal never came");
    }
    server.stop().expect("stops");
}

#[test]
fn a_silent_websocket_is_closed_and_one_that_keeps_alive_is_not() {
    let server = server(Limits { idle: Duration::from_millis(600), ..limits(64, 5_000) });
    let started = Instant::now();
    let (mut silent, silent_id) = join(&server, HOME.into(), "IDLE01");
    let (mut alive, _) = join(&server, HOME.into(), "IDLE01");
    let mut last_said = Instant::now();
    // The live one says a keep-alive every 100 ms, and reads what comes, until it hears the
    // silent one left.
    loop {
        if last_said.elapsed() >= Duration::from_millis(100) {
            alive.send(WsMessage::text("\"KeepAlive\"")).expect("still open");
            last_said = Instant::now();
        }
        match alive.read() {
            Ok(WsMessage::Text(t)) if t.contains("PeerLeft") => {
                assert!(t.contains(&silent_id), "{t}");
                break;
            }
            Ok(WsMessage::Close(frame)) => panic!("the live socket was closed: {frame:?}"),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("the live socket: {e}"),
        }
        assert!(started.elapsed() < Duration::from_secs(10), "the silent socket was never closed");
    }
    assert!(started.elapsed() >= Duration::from_millis(600), "closed before its time: {:?}", started.elapsed());
    match signals_until_closed(&mut silent) {
        (_, Some(frame)) => assert!(frame.reason.contains("silent"), "{}", frame.reason),
        (_, None) => panic!("closed without a reason"),
    }
    // The live one stays through another timeout.
    let until = Instant::now() + Duration::from_millis(900);
    while Instant::now() < until {
        alive.send(WsMessage::text("\"KeepAlive\"")).expect("still open");
        match alive.read() {
            Ok(WsMessage::Close(frame)) => panic!("the live socket was closed: {frame:?}"),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => panic!("the live socket: {e}"),
        }
    }
    server.stop().expect("stops");
}

/// One HTTP GET of `path` from `from`: the status and the body.
fn get(server: &SignalServer, from: IpAddr, path: &str) -> (u16, String) {
    let mut s = connect_from(from, server.addr());
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").expect("write");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer.split_once("\r\n\r\n").map_or(String::new(), |(_, body)| body.to_owned()))
}

#[test]
fn lookups_come_at_the_address_s_rate_and_say_why_in_json() {
    let server = server(Limits { lookups_per_second: 5.0, ..limits(64, 5_000) });
    let answers: Vec<_> = (0..30).map(|_| get(&server, HOME.into(), "/rooms/LOOK01")).collect();
    let ok = answers.iter().filter(|(status, _)| *status == 200).count();
    assert!((10..=12).contains(&ok), "{ok} answered: a burst of 10, and what came back meanwhile");
    let (status, body) = answers.last().expect("answers");
    assert_eq!(*status, 429);
    let error: serde_json::Value = serde_json::from_str(body).expect("json");
    assert!(error["error"].as_str().expect("an error").contains("lookups a second"), "{error}");
    // /ice and /rooms count alike; another address is answered.
    assert_eq!(get(&server, HOME.into(), "/ice").0, 429);
    assert_eq!(get(&server, ELSEWHERE.into(), "/ice").0, 200);
    assert_eq!(get(&server, ELSEWHERE.into(), "/rooms").0, 200);
    server.stop().expect("stops");
}

#[test]
fn a_room_is_named_by_a_few_letters_and_digits() {
    let server = server(limits(64, 5_000));
    let long = "A".repeat(MAX_ROOM + 1);
    for bad in [format!("/rooms/{long}"), "/rooms/a%20b".into(), "/rooms/%E2%80%AEabc".into()] {
        let (status, body) = get(&server, HOME.into(), &bad);
        assert_eq!(status, 400, "{bad}: {body}");
        let error: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert!(error["error"].as_str().expect("an error").contains("letters, digits"), "{error}");
    }
    assert_eq!(get(&server, HOME.into(), &format!("/rooms/{}", "A".repeat(MAX_ROOM))).0, 200);
    // Nor does a websocket get into a room of another name.
    let stream = connect_from(HOME.into(), server.addr());
    match tungstenite::client::client(format!("{}/{long}", server.url()).as_str(), stream) {
        Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(answer))) => {
            assert_eq!(answer.status(), 400);
            let body = String::from_utf8_lossy(answer.body().as_deref().unwrap_or_default()).into_owned();
            assert!(body.contains("letters, digits"), "{body}");
        }
        other => panic!("a websocket into a room of 65 letters: {:?}", other.map(|(_, answer)| answer.status())),
    }
    server.stop().expect("stops");
}
