//! The WebRTC transport over loopback, each real-WebRTC test in a network namespace of its own.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener};
use std::process::Command;
use std::time::Instant;

use super::*;
use crate::frame::{self, Chunker, Reassembler, op};
use crate::signal::{SignalConfig, SignalServer};

/// Set in the re-executed test process that runs inside its own network namespace.
const IN_NETNS: &str = "VIMP_IN_NETNS";

/// Brings loopback up with a multicast route (mDNS needs one), then runs the test binary.
const LOOPBACK_ONLY: &str = "ip link set lo up && ip link set lo multicast on \
                             && ip route add 224.0.0.0/4 dev lo && exec \"$0\" \"$@\"";

/// Brings loopback up without multicast, then runs the test binary.
const LOOPBACK_WITHOUT_MULTICAST: &str = "ip link set lo up && exec \"$0\" \"$@\"";

/// How long any condition may take before the test fails (ICE gives up after ~30 s).
const DEADLINE: Duration = Duration::from_secs(20);

/// Whether to run the body of the test `name` of this module: `true` in the child that
/// runs in a network namespace of its own with only loopback, set up by the shell
/// command `setup` (WebRTC gathers the machine's addresses, so real-WebRTC tests must
/// not see the machine's network). Otherwise re-executes this test binary for `name`
/// under `unshare`, asserts that it passed, prints its output and returns `false`.
fn in_own_netns(name: &str, setup: &str) -> bool {
    if std::env::var_os(IN_NETNS).is_some() {
        return true;
    }
    let module = module_path!().split_once("::").map_or(module_path!(), |(_, path)| path);
    let test = format!("{module}::{name}");
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = Command::new("unshare")
        .args(["-rn", "sh", "-c", setup])
        .arg(&exe)
        .args(["--exact", &test, "--nocapture"])
        .env(IN_NETNS, "1")
        .output()
        .expect("unshare runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{test} failed in its network namespace ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    print!("{stdout}");
    false
}

fn local_signal_server() -> SignalServer {
    SignalServer::start(SignalConfig { bind: SocketAddr::from(([127, 0, 0, 1], 0)), ..SignalConfig::default() })
        .expect("the signalling server starts")
}

/// A deterministic byte pattern.
fn pattern(len: usize, salt: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt ^ (i >> 8) as u8)).collect()
}

/// One transport and what its polls reported so far.
struct Peer {
    transport: WebRtcTransport,
    connected: BTreeSet<PeerKey>,
    left: BTreeSet<PeerKey>,
    inbox: Vec<(PeerKey, Channel, Vec<u8>)>,
    /// When the first peer connected, since the test's start.
    first_connected: Option<Duration>,
}

impl Peer {
    fn join(url: &str) -> Peer {
        Peer::join_in(&RoomPlace::new(), url)
    }

    fn join_in(place: &RoomPlace, url: &str) -> Peer {
        let transport = WebRtcTransport::connect_in(place, url, &[]).expect("connects");
        Peer { transport, connected: BTreeSet::new(), left: BTreeSet::new(), inbox: Vec::new(), first_connected: None }
    }

    fn id(&self) -> PeerKey {
        self.transport.local_id().expect("the signalling server assigned an id")
    }

    /// The messages from `from` on `channel`, in arrival order.
    fn received(&self, from: PeerKey, channel: Channel) -> Vec<&[u8]> {
        self.inbox.iter().filter(|(p, c, _)| (*p, *c) == (from, channel)).map(|(_, _, b)| b.as_slice()).collect()
    }

    fn poll(&mut self, start: Instant) {
        let me = self.transport.local_id();
        for event in self.transport.poll(start.elapsed()) {
            match event {
                TransportEvent::Connected(peer) => {
                    assert!(self.connected.insert(peer), "{me:?}: {peer} connected twice");
                    self.first_connected.get_or_insert(start.elapsed());
                }
                TransportEvent::Disconnected(peer) => {
                    assert!(self.connected.remove(&peer), "{me:?}: {peer} disconnected while not connected");
                    self.left.insert(peer);
                }
                TransportEvent::Message { peer, channel, bytes } => {
                    assert!(self.connected.contains(&peer), "{me:?}: a message from {peer}, not connected");
                    self.inbox.push((peer, channel, bytes));
                }
            }
        }
    }
}

/// Polls every peer until `done` (which may also send) says so, or fails at the deadline.
fn poll_until(peers: &mut [Peer], start: Instant, what: &str, mut done: impl FnMut(&mut [Peer]) -> bool) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        for peer in peers.iter_mut() {
            peer.poll(start);
        }
        if done(peers) {
            return;
        }
        let reasons: Vec<_> = peers.iter().map(|p| p.transport.close_reason().map(ToString::to_string)).collect();
        assert!(Instant::now() < deadline, "{what}: not done within {DEADLINE:?} (close reasons: {reasons:?})");
        std::thread::park_timeout(Duration::from_millis(1));
    }
}

/// Polls until every peer is connected to every other one.
fn poll_until_meshed(peers: &mut [Peer], start: Instant) {
    let others = peers.len() - 1;
    poll_until(peers, start, "the mesh connects", |peers| peers.iter().all(|p| p.connected.len() == others));
    let ids: BTreeSet<PeerKey> = peers.iter().map(Peer::id).collect();
    for peer in peers.iter() {
        let mut expected = ids.clone();
        expected.remove(&peer.id());
        assert_eq!(peer.connected, expected, "{}: connected to everyone else", peer.id());
    }
}

/// Sends `bytes` on the unreliable channel from `from` to `to` every 50 ms until it arrives.
fn exchange_unreliable(peers: &mut [Peer], start: Instant, from: usize, to: usize, bytes: &[u8]) {
    let (from_id, to_id) = (peers[from].id(), peers[to].id());
    let mut last_sent: Option<Instant> = None;
    poll_until(peers, start, "an unreliable message arrives", |peers| {
        if peers[to].received(from_id, Channel::Unreliable).contains(&bytes) {
            return true;
        }
        if last_sent.is_none_or(|t| t.elapsed() >= Duration::from_millis(50)) {
            peers[from].transport.try_send(to_id, Channel::Unreliable, bytes.to_vec()).expect("sent");
            last_sent = Some(Instant::now());
        }
        false
    });
}

#[test]
fn the_transport_is_send() {
    fn is_send<T: Send>() {}
    is_send::<WebRtcTransport>();
}

#[test]
fn room_urls_are_checked() {
    for ok in ["ws://127.0.0.1:3536/K7MP2Q", "wss://signal.example.net/K7MP2Q?next=2", "ws://h/r/extra"] {
        assert!(check_room_url(ok).is_ok(), "{ok}");
    }
    for bad in ["http://127.0.0.1:3536/K7MP2Q", "ws://127.0.0.1:3536", "ws://127.0.0.1:3536/", "ws:///K7MP2Q", ""] {
        let err = check_room_url(bad).expect_err(bad);
        assert!(matches!(err, WebRtcError::InvalidRoomUrl { .. }), "{bad}: {err}");
    }
}

#[test]
fn no_ice_server_is_added_by_default() {
    let merged = merge_ice_servers(&[]).expect("no servers is fine");
    assert!(merged.urls.is_empty() && merged.username.is_none() && merged.credential.is_none(), "{merged:?}");
}

#[test]
fn ice_servers_merge_into_one_entry() {
    let turn = |url: &str, user: &str| IceServer {
        urls: vec![url.into()],
        username: Some(user.into()),
        credential: Some("secret".into()),
    };
    let stun = IceServer { urls: vec!["stun:stun.example.net:3478".into()], ..IceServer::default() };
    let merged = merge_ice_servers(&[stun.clone(), turn("turn:a.example.net", "u"), turn("turns:b.example.net", "u")])
        .expect("one credential set");
    assert_eq!(merged.urls, ["stun:stun.example.net:3478", "turn:a.example.net", "turns:b.example.net"]);
    assert_eq!((merged.username.as_deref(), merged.credential.as_deref()), (Some("u"), Some("secret")));

    let conflicting = merge_ice_servers(&[turn("turn:a.example.net", "u"), turn("turn:b.example.net", "v")]);
    assert!(matches!(conflicting, Err(WebRtcError::InvalidIceServer { .. })), "{conflicting:?}");
    let anonymous_turn = IceServer { urls: vec!["turn:a.example.net".into()], ..IceServer::default() };
    assert!(matches!(merge_ice_servers(&[anonymous_turn]), Err(WebRtcError::InvalidIceServer { .. })));
    for bad in ["stun.example.net:3478", "http://x", "stun:", "stun::3478"] {
        let server = IceServer { urls: vec![bad.into()], ..IceServer::default() };
        assert!(matches!(merge_ice_servers(&[server]), Err(WebRtcError::InvalidIceServer { .. })), "{bad}");
    }
}

/// Polls `transport` until it closes, within [`DEADLINE`], having met nobody: the
/// signalling server could not be reached.
fn closes_unconnected(transport: &mut WebRtcTransport) {
    let deadline = Instant::now() + DEADLINE;
    while !transport.is_closed() {
        assert_eq!(transport.poll(Duration::ZERO), [], "no peer, no message");
        assert!(Instant::now() < deadline, "still open after {DEADLINE:?}");
        std::thread::park_timeout(Duration::from_millis(1));
    }
    assert!(matches!(transport.close_reason(), Some(WebRtcError::ConnectFailed { .. })), "{transport:?}");
}

#[test]
fn an_unreachable_signalling_server_closes_the_transport_with_its_reason() {
    // A port that was just free: nothing listens there.
    let addr = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port");
    let mut transport = WebRtcTransport::connect(&format!("ws://{addr}/K7MP2Q"), &[]).expect("starts");
    closes_unconnected(&mut transport);
    // Said in a player's words: where, what happened, what to check.
    let said = transport.close_reason().map(ToString::to_string).unwrap_or_default();
    assert!(said.starts_with(&format!("cannot reach the rendezvous at ws://{addr}: nothing answers")), "{said}");
    assert!(said.contains("must be running there"), "{said}");
    assert_eq!(transport.local_id(), None);
    let refused = transport.try_send(PeerKey(1), Channel::Reliable, b"x".to_vec());
    assert!(matches!(refused, Err(WebRtcError::Closed)), "{refused:?}");
    assert_eq!(transport.stats().unsent, 1);
}

#[test]
fn ice_servers_on_their_way_hold_back_neither_a_failed_connect_nor_a_bad_known_server() {
    // A fetch that never returns: the connect's failure still ends the transport.
    let addr = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port");
    let url = format!("ws://{addr}/K7MP2Q");
    let (_never, never_rx) = std::sync::mpsc::channel::<()>();
    let fetch = move |_: &str| {
        let _ = never_rx.recv();
        Vec::new()
    };
    let mut transport = WebRtcTransport::connect_fetching(&url, &[], fetch).expect("starts");
    closes_unconnected(&mut transport);
    // A known server matchbox would fail on is refused at once, before anything starts.
    let bad = IceServer { urls: vec!["stun:".into()], ..IceServer::default() };
    let refused = WebRtcTransport::connect_fetching(&url, &[bad], |_: &str| Vec::new());
    assert!(matches!(refused, Err(WebRtcError::InvalidIceServer { .. })), "{refused:?}");
}

#[test]
fn the_ice_list_is_fetched_for_the_key_the_socket_joins_by_and_minted_credentials_are_renewed() {
    if !in_own_netns(
        "the_ice_list_is_fetched_for_the_key_the_socket_joins_by_and_minted_credentials_are_renewed",
        LOOPBACK_ONLY,
    ) {
        return;
    }
    // The fetch is told the room URL with the socket's key; the room then holds the id that key
    // names, so a rendezvous can mint a credential for exactly this member.
    let server = local_signal_server();
    let (asked_tx, asked) = std::sync::mpsc::channel::<String>();
    let asked_tx = std::sync::Mutex::new(asked_tx);
    let fetch = move |keyed: &str| {
        let _ = asked_tx.lock().map(|tx| tx.send(keyed.to_owned()));
        Vec::new()
    };
    let mut transport =
        WebRtcTransport::connect_fetching(&format!("{}/KEYED1", server.url()), &[], fetch).expect("starts");
    let keyed = asked.recv_timeout(DEADLINE).expect("the fetch ran");
    let (room, key) = crate::signal::room_key(&keyed).expect("a room and a key");
    assert_eq!(room, "KEYED1");
    let deadline = Instant::now() + DEADLINE;
    while transport.local_id().is_none() {
        let _ = transport.poll(Duration::ZERO);
        assert!(Instant::now() < deadline, "no id: {:?}", transport.close_reason());
        std::thread::park_timeout(Duration::from_millis(1));
    }
    let expected = crate::signal::peer_of_room_key(key).expect("a key the rendezvous takes");
    assert_eq!(transport.local_id(), Some(expected), "the key fetched for is the one the socket joined by");
    // No minted credential in that list: nothing is fetched again.
    assert!(asked.recv_timeout(Duration::from_millis(200)).is_err());

    // A list with one is fetched again at half its remaining life (at least 30 s).
    let minted = |expiry: u64| IceServer {
        urls: vec!["turn:t.example.net:3478".into()],
        username: Some(format!("{expiry}:KEYED1-peer")),
        credential: Some("p".into()),
    };
    let now = 1_800_000_000;
    assert_eq!(renew_in(&[minted(now + 600)], now), Some(Duration::from_secs(300)));
    assert_eq!(renew_in(&[minted(now + 600), minted(now + 100)], now), Some(Duration::from_secs(50)));
    assert_eq!(renew_in(&[minted(now + 10)], now), Some(Duration::from_secs(30)));
    let fixed = IceServer { username: Some("alice".into()), ..minted(0) };
    assert_eq!(renew_in(&[fixed], now), None, "a static user name is not renewed");
    assert_eq!(renew_in(&[], now), None);
}

#[test]
fn a_lone_peer_gets_an_id_and_closes_cleanly() {
    let server = local_signal_server();
    let mut transport = WebRtcTransport::connect(&format!("{}/K7MP2Q", server.url()), &[]).expect("starts");
    let deadline = Instant::now() + DEADLINE;
    while transport.local_id().is_none() {
        assert_eq!(transport.poll(Duration::ZERO), []);
        assert!(Instant::now() < deadline, "no id after {DEADLINE:?}: {:?}", transport.close_reason());
        std::thread::park_timeout(Duration::from_millis(1));
    }
    assert!(!transport.is_closed());
    transport.close();
    assert!(transport.is_closed());
    assert!(transport.close_reason().is_none(), "{:?}", transport.close_reason());
    assert_eq!(transport.poll(Duration::ZERO), []);
    let refused = transport.try_send(PeerKey(1), Channel::Unreliable, b"x".to_vec());
    assert!(matches!(refused, Err(WebRtcError::Closed)), "{refused:?}");
    server.stop().expect("stops");
}

#[test]
fn two_peers_exchange_on_both_channels_and_see_each_other_leave() {
    if !in_own_netns("two_peers_exchange_on_both_channels_and_see_each_other_leave", LOOPBACK_ONLY) {
        return;
    }
    let server = local_signal_server();
    let url = format!("{}/K7MP2Q", server.url());
    let start = Instant::now();
    let mut peers = vec![Peer::join(&url), Peer::join(&url)];
    poll_until_meshed(&mut peers, start);
    println!("2 peers: all connected {:?} after connect", start.elapsed());
    let (a, b) = (peers[0].id(), peers[1].id());

    // Reliable, both ways, big messages included.
    let big = pattern(60_000, 1);
    let mut map = Vec::new();
    frame::encode(op::MAP_DATA, &pattern(199_999, 2), &mut map);
    let chunks = Chunker::new().split(&map).expect("chunks");
    assert_eq!(chunks.len(), 4);
    peers[0].transport.send(start.elapsed(), b, Channel::Reliable, b"hello b".to_vec());
    peers[0].transport.send(start.elapsed(), b, Channel::Reliable, big.clone());
    for chunk in &chunks {
        peers[0].transport.try_send(b, Channel::Reliable, chunk.clone()).expect("a chunk fits");
    }
    peers[1].transport.send(start.elapsed(), a, Channel::Reliable, b"hello a".to_vec());
    poll_until(&mut peers, start, "the reliable messages arrive", |p| {
        p[1].received(a, Channel::Reliable).len() == 6 && p[0].received(b, Channel::Reliable).len() == 1
    });
    let at_b = peers[1].received(a, Channel::Reliable);
    assert_eq!(at_b[0], b"hello b");
    assert!(at_b[1] == big.as_slice(), "the 60,000-byte message arrives whole and intact");
    let mut reassembler = Reassembler::new();
    let whole: Vec<Vec<u8>> = at_b[2..].iter().filter_map(|m| reassembler.push(m).expect("valid chunk")).collect();
    assert!(whole.len() == 1 && whole[0] == map, "the chunked 200,000-byte frame is reassembled intact");
    assert_eq!(peers[0].received(b, Channel::Reliable), [b"hello a"]);

    // Over 64 KiB: refused, counted, never handed to matchbox.
    let before = peers[0].transport.stats();
    peers[0].transport.send(start.elapsed(), b, Channel::Reliable, pattern(70_000, 3));
    let refused = peers[0].transport.try_send(b, Channel::Unreliable, pattern(70_000, 4));
    assert!(matches!(refused, Err(WebRtcError::TooLarge { len: 70_000 })), "{refused:?}");
    let after = peers[0].transport.stats();
    assert_eq!(after.oversized, before.oversized + 2);
    assert_eq!((after.reliable, after.unreliable), (before.reliable, before.unreliable));

    // Unreliable, both ways.
    exchange_unreliable(&mut peers, start, 0, 1, b"snapshot to b");
    exchange_unreliable(&mut peers, start, 1, 0, b"input to a");

    let (sent, got) = (peers[0].transport.stats(), peers[1].transport.stats());
    let chunk_bytes: usize = chunks.iter().map(Vec::len).sum();
    assert_eq!(sent.reliable.messages_out, 6);
    assert_eq!(sent.reliable.bytes_out, (7 + 60_000 + chunk_bytes) as u64);
    assert_eq!((got.reliable.messages_in, got.reliable.bytes_in), (6, sent.reliable.bytes_out));
    assert!(got.unreliable.messages_in >= 1 && sent.unreliable.messages_out >= got.unreliable.messages_in);
    let unknown = peers[0].transport.try_send(PeerKey(42), Channel::Reliable, b"x".to_vec());
    assert!(matches!(unknown, Err(WebRtcError::NotConnected(PeerKey(42)))), "{unknown:?}");

    // How the pair connected (known about a second after connecting).
    poll_until(&mut peers, start, "the candidate pairs are known", |p| {
        p[0].transport.candidate_pair(b).is_some() && p[1].transport.candidate_pair(a).is_some()
    });
    println!(
        "2 peers: candidate pairs {:?} / {:?}",
        peers[0].transport.candidate_pair(b),
        peers[1].transport.candidate_pair(a)
    );

    // One leaves: the other sees it go and stays open.
    let leaving = peers.pop().expect("b");
    let left_at = Instant::now();
    drop(leaving);
    poll_until(&mut peers, start, "a sees b leave", |p| p[0].left.contains(&b));
    println!("2 peers: a dropped peer is seen disconnected after {:?}", left_at.elapsed());
    assert!(!peers[0].transport.is_closed());
    assert!(matches!(peers[0].transport.try_send(b, Channel::Reliable, vec![1]), Err(WebRtcError::NotConnected(_))));
    server.stop().expect("stops");
}

#[test]
fn three_peers_form_a_full_mesh_and_survive_one_leaving() {
    if !in_own_netns("three_peers_form_a_full_mesh_and_survive_one_leaving", LOOPBACK_ONLY) {
        return;
    }
    let server = local_signal_server();
    let url = format!("{}/K7MP2Q", server.url());
    let start = Instant::now();
    let mut peers = vec![Peer::join(&url), Peer::join(&url), Peer::join(&url)];
    poll_until_meshed(&mut peers, start);
    let firsts: Vec<_> = peers.iter().map(|p| p.first_connected.expect("connected")).collect();
    println!("3 peers: all connected {:?} after connect; first peer connected at {firsts:?}", start.elapsed());

    let ids: Vec<PeerKey> = peers.iter().map(Peer::id).collect();
    for (from, peer) in peers.iter_mut().enumerate() {
        for to in (0..3).filter(|&to| to != from) {
            let message = format!("{from} to {to}").into_bytes();
            peer.transport.try_send(ids[to], Channel::Reliable, message).expect("sent");
        }
    }
    poll_until(&mut peers, start, "everyone hears from everyone", |p| p.iter().all(|p| p.inbox.len() == 2));
    for (to, peer) in peers.iter().enumerate() {
        for from in (0..3).filter(|&from| from != to) {
            assert_eq!(peer.received(ids[from], Channel::Reliable), [format!("{from} to {to}").as_bytes()]);
        }
    }
    exchange_unreliable(&mut peers, start, 2, 0, b"unreliable 2 to 0");

    // The middle one leaves gracefully; the others see it go and keep their link.
    let left_at = Instant::now();
    peers[1].transport.close();
    assert!(peers[1].transport.is_closed() && peers[1].transport.close_reason().is_none());
    let events = peers[1].transport.poll(start.elapsed());
    let mut others = [ids[0], ids[2]];
    others.sort();
    let expected: Vec<_> = others.into_iter().map(TransportEvent::Disconnected).collect();
    assert_eq!(events, expected, "closing reports every peer disconnected, in key order");
    let mut rest = vec![peers.remove(0), peers.remove(1)];
    poll_until(&mut rest, start, "the others see it leave", |p| p.iter().all(|p| p.left.contains(&ids[1])));
    println!("3 peers: a closed peer is seen disconnected after {:?}", left_at.elapsed());
    rest[1].transport.try_send(ids[0], Channel::Reliable, b"still here".to_vec()).expect("sent");
    poll_until(&mut rest, start, "the remaining link works", |p| {
        p[0].received(ids[2], Channel::Reliable).contains(&b"still here".as_slice())
    });
    server.stop().expect("stops");
}

#[test]
fn linked_peers_join_a_rendezvous_that_came_back_and_a_newcomer_links_with_them() {
    if !in_own_netns("linked_peers_join_a_rendezvous_that_came_back_and_a_newcomer_links_with_them", LOOPBACK_ONLY) {
        return;
    }
    let server = local_signal_server();
    let (addr, room) = (server.addr(), "R3J01N");
    let url = format!("{}/{room}", server.url());
    let start = Instant::now();
    let mut peers = vec![Peer::join(&url), Peer::join(&url)];
    poll_until_meshed(&mut peers, start);
    let ids: Vec<PeerKey> = peers.iter().map(Peer::id).collect();

    // The rendezvous goes away: the link does not.
    server.stop().expect("stops");
    peers[0].transport.try_send(ids[1], Channel::Reliable, b"without it".to_vec()).expect("sent");
    poll_until(&mut peers, start, "the link works without the rendezvous", |p| {
        p[1].received(ids[0], Channel::Reliable).contains(&b"without it".as_slice())
    });

    // It comes back at the same address, knowing nobody: both join their room again, as who
    // they were.
    let server = SignalServer::start(SignalConfig { bind: addr, ..SignalConfig::default() }).expect("starts again");
    let mut asked = Instant::now();
    poll_until(&mut peers, start, "both are in the room again", |_| {
        if asked.elapsed() < Duration::from_millis(20) {
            return false;
        }
        asked = Instant::now();
        let info = crate::signal::fetch_room(&server.url(), room, Duration::from_secs(2)).expect("the room answers");
        ids.iter().all(|&id| info.holds(id) == Some(true)) && info.peers == 2
    });
    println!("rejoined {:?} after the rendezvous came back", asked.elapsed());

    // A newcomer finds them both, and the first link was never dropped nor made twice.
    peers.push(Peer::join(&url));
    poll_until_meshed(&mut peers, start);
    for (peer, id) in peers.iter().zip(&ids) {
        assert_eq!(peer.id(), *id, "the same id as before");
        assert!(peer.left.is_empty(), "{id}: no peer ever left: {:?}", peer.left);
    }
    let newcomer = peers[2].id();
    peers[2].transport.try_send(ids[0], Channel::Reliable, b"hello host".to_vec()).expect("sent");
    peers[1].transport.try_send(ids[0], Channel::Reliable, b"still linked".to_vec()).expect("sent");
    poll_until(&mut peers, start, "the newcomer and the old link both carry", |p| {
        p[0].received(newcomer, Channel::Reliable).contains(&b"hello host".as_slice())
            && p[0].received(ids[1], Channel::Reliable).contains(&b"still linked".as_slice())
    });
    server.stop().expect("stops");
}

#[test]
fn without_multicast_no_peer_connection_is_made_and_nothing_panics() {
    if !in_own_netns("without_multicast_no_peer_connection_is_made_and_nothing_panics", LOOPBACK_WITHOUT_MULTICAST) {
        return;
    }
    let server = local_signal_server();
    let url = format!("{}/K7MP2Q", server.url());
    let start = Instant::now();
    let places = [RoomPlace::new(), RoomPlace::new()];
    let mut peers: Vec<Peer> = places.iter().map(|place| Peer::join_in(place, &url)).collect();
    // Every connection, made ahead or for the offer, fails to be made: said and counted, and
    // the message loop that runs every link of the socket goes on (it used to panic).
    poll_until(&mut peers, start, "connections fail", |_| places.iter().all(|p| p.connections_failed() > 0));
    for peer in &mut peers {
        peer.poll(start);
        assert!(peer.connected.is_empty() && peer.left.is_empty(), "no peer ever connected");
        assert!(!peer.transport.is_closed(), "{:?}", peer.transport.close_reason());
    }
    server.stop().expect("stops");
}
