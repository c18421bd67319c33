//! The sessions' tests: the handshake, pings and latency, rate limits, close codes, inputs
//! repeated until acknowledged, and garbage from either side.

use super::test_support::{opcode, welcome};
use super::*;
use crate::frame::op;
use crate::input::{self, Aim, AimEvent, BinaryKeyEvent, KeyAction, WireInput};

const MS: Duration = Duration::from_millis(1);

fn hello(name: &str) -> Hello {
    Hello::new(name, "test")
}

/// Moves every queued message between the two sessions, `latency` apart, at `now`.
fn progress(host: &mut HostSession, client: &mut ClientSession, now: Duration) {
    for _ in 0..8 {
        let mut moved = false;
        while let Some((ch, m)) = client.poll_transmit() {
            host.handle_message(now, ch, &m);
            moved = true;
        }
        while let Some((ch, m)) = host.poll_transmit() {
            client.handle_message(now, ch, &m);
            moved = true;
        }
        if !moved {
            break;
        }
    }
}

fn connected() -> (HostSession, ClientSession) {
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    let mut client = ClientSession::new(ClientSessionConfig::new(hello("ann")), Duration::ZERO);
    progress(&mut host, &mut client, Duration::ZERO);
    assert_eq!(host.poll_event(), Some(HostEvent::Hello(hello("ann"))));
    host.accept(&welcome(), &serde_json::json!({ "engine": { "timeStepMs": 8.333 } }));
    progress(&mut host, &mut client, Duration::ZERO);
    (host, client)
}

fn events(client: &mut ClientSession) -> Vec<ClientEvent> {
    std::iter::from_fn(|| client.poll_event()).collect()
}

#[test]
fn handshake_welcome_then_config() {
    let (host, mut client) = connected();
    assert!(host.is_active() && client.is_active());
    let ev = events(&mut client);
    assert_eq!(ev[0], ClientEvent::Welcomed(welcome()));
    assert_eq!(
        ev[1],
        ClientEvent::Meta { port: op::CONFIG_DATA, payload: br#"{"engine":{"timeStepMs":8.333}}"#.to_vec() }
    );
}

#[test]
fn version_mismatch_is_rejected_with_4410() {
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    let mut config = ClientSessionConfig::new(hello("bob"));
    config.hello.version = PROTOCOL_VERSION + 1;
    let mut client = ClientSession::new(config, Duration::ZERO);
    progress(&mut host, &mut client, Duration::ZERO);
    assert_eq!(host.close_code(), Some(close::VERSION));
    let ev = events(&mut client);
    let why = format!("protocol version {}, this host speaks {PROTOCOL_VERSION}", PROTOCOL_VERSION + 1);
    assert_eq!(ev[0], ClientEvent::Rejected(Reject { code: 4410, reason: why }));
    assert_eq!(client.close_code(), Some(4410));
}

#[test]
fn a_hello_that_does_not_read_gets_a_reject_that_says_why() {
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    let mut hello = serde_json::to_value(Hello::new("bob", "test")).unwrap();
    hello["nickname"] = serde_json::json!(7);
    let mut frame = vec![op::HELLO];
    frame.extend(serde_json::to_vec(&hello).unwrap());
    host.handle_message(MS, Channel::Reliable, &frame);
    assert_eq!(host.close_code(), Some(close::PROTOCOL));
    let mut client = ClientSession::new(ClientSessionConfig::new(Hello::new("bob", "test")), Duration::ZERO);
    while let Some((ch, bytes)) = host.poll_transmit() {
        client.handle_message(MS, ch, &bytes);
    }
    let Some(ClientEvent::Rejected(reject)) =
        events(&mut client).into_iter().find(|e| matches!(e, ClientEvent::Rejected(_)))
    else {
        panic!("a reject")
    };
    assert_eq!(reject.code, close::PROTOCOL);
    assert!(reject.reason.starts_with("the hello does not read: invalid type"), "{}", reject.reason);
    assert!(reject.reason.len() <= MAX_REASON);
    // An unknown field is not a reason: capabilities may grow.
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    let mut hello = serde_json::to_value(Hello::new("bob", "test")).unwrap();
    hello["someDayACapability"] = serde_json::json!({ "a": 1 });
    let mut frame = vec![op::HELLO];
    frame.extend(serde_json::to_vec(&hello).unwrap());
    host.handle_message(MS, Channel::Reliable, &frame);
    assert!(matches!(host.poll_event(), Some(HostEvent::Hello(_))), "{:?}", host.close_code());
}

#[test]
fn a_close_before_the_welcome_is_a_refusal() {
    // A host that closes without a reject (an older one, or one stopping) is an answer: the
    // client is refused with the close's code and reason instead of waiting for ever.
    let mut client = ClientSession::new(ClientSessionConfig::new(hello("bob")), Duration::ZERO);
    let mut frame = vec![op::CLOSE];
    frame.extend_from_slice(&close::SERVER_FULL.to_be_bytes());
    frame.extend_from_slice(b"server full");
    client.handle_message(MS, Channel::Reliable, &frame);
    assert!(client.answered());
    assert_eq!(client.close_code(), Some(close::SERVER_FULL));
    let closed = ClientEvent::Closed { code: close::SERVER_FULL, reason: "server full".into(), by_peer: true };
    assert_eq!(events(&mut client), vec![closed]);
}

#[test]
fn no_hello_in_time_is_4408() {
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    assert_eq!(host.poll_timeout(), Some(Duration::from_secs(10)));
    host.handle_timeout(Duration::from_secs(9));
    assert_eq!(host.close_code(), None);
    host.handle_timeout(Duration::from_secs(10));
    assert_eq!(host.close_code(), Some(close::HEARTBEAT));
}

#[test]
fn a_pong_is_the_pings_nonce_alone_and_an_echo_of_the_whole_ping_is_refused() {
    let (mut host, mut client) = connected();
    host.handle_timeout(Duration::ZERO);
    progress(&mut host, &mut client, MS);
    assert_eq!(host.latency_ms(), Some(1.0), "the client's pong (the nonce) is measured");
    // A pong of the ping's whole 16 bytes, as an echo would be, is a protocol error.
    client.send_meta(op::PONG, &[0; 16]);
    progress(&mut host, &mut client, 2 * MS);
    assert_eq!(host.close_code(), Some(close::PROTOCOL));
}

#[test]
fn pings_measure_latency_and_the_client_estimates_server_time() {
    let (mut host, mut client) = connected();
    host.handle_timeout(Duration::ZERO); // the first ping
    let ping_of = |host: &mut HostSession| {
        std::iter::from_fn(|| host.poll_transmit()).find(|(_, m)| frame::parse(m).map(|f| f.opcode) == Ok(op::PING))
    };
    // 80 ms later the ping reaches the client, 80 ms after that the pong reaches the host.
    let (ch, ping) = ping_of(&mut host).expect("ping");
    client.handle_message(80 * MS, ch, &ping);
    let (ch, pong) = client.poll_transmit().expect("pong");
    host.handle_message(160 * MS, ch, &pong);
    assert_eq!(host.latency_ms(), Some(160.0));
    assert_eq!(host.poll_event(), Some(HostEvent::Latency(160.0)));
    // The next ping carries the EMA; the client then puts the host clock at ping + rtt/2.
    host.handle_timeout(Duration::from_secs(3));
    let (ch, ping) = ping_of(&mut host).expect("ping");
    client.handle_message(Duration::from_secs(3) + 80 * MS, ch, &ping);
    let est = client.server_time_ms(Duration::from_secs(3) + 100 * MS).expect("estimate");
    assert_eq!(est, 3000.0 + 80.0 + 20.0);
    assert_eq!(client.rtt_ms(), Some(160.0));
}

#[test]
fn five_missed_pings_is_4004() {
    let (mut host, _client) = connected();
    for k in 0..5 {
        host.handle_timeout(Duration::from_secs(3 * k));
        assert_eq!(host.close_code(), None, "after ping {k}");
    }
    host.handle_timeout(Duration::from_secs(15));
    assert_eq!(host.close_code(), Some(close::MISSED_PINGS));
}

#[test]
fn a_kicked_player_sees_why_on_the_black_screen() {
    let (mut host, mut client) = connected();
    let _ = events(&mut client);
    host.close(close::RATE);
    progress(&mut host, &mut client, MS);
    let ev = events(&mut client);
    assert_eq!(
        ev[0],
        ClientEvent::Meta { port: op::TECH_INFORM_DATA, payload: br#"[2,[4413,"rate limit exceeded"]]"#.to_vec() }
    );
    assert!(matches!(&ev[1], ClientEvent::Closed { code: 4413, by_peer: true, .. }));
}

#[test]
fn latency_above_the_limit_is_4003() {
    let (mut host, mut client) = connected();
    host.handle_timeout(Duration::ZERO);
    while let Some((ch, m)) = host.poll_transmit() {
        client.handle_message(MS, ch, &m);
    }
    let (ch, pong) = client.poll_transmit().expect("pong");
    host.handle_message(Duration::from_millis(1200), ch, &pong);
    assert_eq!(host.close_code(), Some(close::LATENCY));
}

#[test]
fn garbage_and_oversize_frames_are_4400() {
    let (mut host, _) = connected();
    host.handle_message(MS, Channel::Unreliable, &[]);
    assert_eq!(host.close_code(), Some(close::PROTOCOL));

    let (mut host, _) = connected();
    host.handle_message(MS, Channel::Unreliable, &[op::client::KEYS_DATA, 9, 9]);
    assert_eq!(host.close_code(), Some(close::PROTOCOL), "an input batch that does not decode");

    let (mut host, _) = connected();
    host.handle_message(MS, Channel::Reliable, &vec![op::client::CHAT; frame::MAX_MESSAGE + 1]);
    assert_eq!(host.close_code(), Some(close::PROTOCOL), "a message past the transport limit");
}

/// A peer that was this process's client, or a fellow client saying hello to whoever may
/// host, sends frames of a client's role late, after the roles changed: a host's session
/// ignores them; a welcome other than the one it took is still a violation.
#[test]
fn a_welcomed_client_ignores_a_hello_and_a_pong_late_from_before_the_roles_changed() {
    let (_, mut client) = connected();
    let hello = serde_json::to_vec(&Hello::new("bob", "test")).expect("json");
    client.handle_message(MS, Channel::Reliable, &[&[op::HELLO][..], &hello].concat());
    client.handle_message(MS, Channel::Unreliable, &[op::PONG, 0, 0, 0, 7]);
    assert!(client.is_active(), "{:?}", client.close_code());
    let copy = serde_json::to_vec(&welcome()).expect("json");
    client.handle_message(MS, Channel::Unreliable, &[&[op::WELCOME][..], &copy].concat());
    assert!(client.is_active(), "a copy of its welcome passes: {:?}", client.close_code());
    let other = serde_json::to_vec(&Welcome { epoch: 2, ..welcome() }).expect("json");
    client.handle_message(MS, Channel::Reliable, &[&[op::WELCOME][..], &other].concat());
    assert_eq!(client.close_code(), Some(close::PROTOCOL));
}

/// A rival claimant that stepped down to this host and is its client now: what its server said
/// in the moment it hosted (where the room is, a ping, a welcome, its list) reaches this host's
/// session of it late; ignored, the peer stays. A client's meta on a host's port number is
/// still taken as the client's.
#[test]
fn a_host_session_ignores_what_its_peer_said_while_it_hosted_for_a_moment() {
    let (mut host, _) = connected();
    let room = crate::lobby::Invite { public: None, lan: Some("ws://10.3.0.10:3536/K7MP2Q".into()), served: true };
    for (opcode, payload) in [
        (op::ROOM, room.encode()),
        (op::PING, vec![0; 16]),
        (op::WELCOME, serde_json::to_vec(&welcome()).expect("json")),
        (op::SUCCESSION, vec![1, 2, 3]),
        (op::CHAT_HISTORY, b"[]".to_vec()),
    ] {
        host.handle_message(MS, Channel::Reliable, &[&[opcode][..], &payload].concat());
        assert!(host.is_active(), "{opcode}: {:?}", host.close_code());
    }
    // A snapshot is still no client's to send.
    host.handle_message(MS, Channel::Unreliable, &[op::SHOT_DATA, 1, 2]);
    assert_eq!(host.close_code(), Some(close::PROTOCOL));
}

#[test]
fn keys_data_takes_a_binary_batch_or_one_event_in_the_text_form() {
    let (mut host, _) = connected();
    let _ = std::iter::from_fn(|| host.poll_event()).count();
    host.handle_message(MS, Channel::Unreliable, b"\x0512:down:forward");
    let text = input::InputEvent::new(12, KeyAction::Down, "forward").expect("an event");
    assert_eq!(host.poll_event(), Some(HostEvent::TextInput(text)));
    let mut batch = vec![op::client::KEYS_DATA];
    input::encode_events(&[(13, KeyAction::Up, 0)], &mut batch).expect("a batch");
    host.handle_message(MS, Channel::Unreliable, &batch);
    assert!(matches!(host.poll_event(), Some(HostEvent::Input(e)) if e.len() == 1));
    for bad in [&b"12:down"[..], b"12:sideways:forward", b"x:down:forward", b"\xff\xfe", b"12:down:forward "] {
        let (mut host, _) = connected();
        host.handle_message(MS, Channel::Unreliable, &[&[op::client::KEYS_DATA][..], bad].concat());
        assert_eq!(host.close_code(), Some(close::PROTOCOL), "{bad:?}");
    }
}

#[test]
fn links_reports_and_checkpoint_requests_reach_the_host() {
    let (mut host, mut client) = connected();
    let _ = std::iter::from_fn(|| host.poll_event()).count();
    client.send_meta(op::LINKS, &[1; 17]);
    client.send_meta(op::CHECKPOINT_REQUEST, &[]);
    progress(&mut host, &mut client, MS);
    let got: Vec<HostEvent> = std::iter::from_fn(|| host.poll_event()).collect();
    assert_eq!(got, [HostEvent::Links(vec![1; 17]), HostEvent::CheckpointRequest]);
    assert!(host.is_active());

    let (mut host, _) = connected();
    host.handle_message(MS, Channel::Reliable, &[op::CHECKPOINT_REQUEST, 0]);
    assert_eq!(host.close_code(), Some(close::PROTOCOL), "a checkpoint request has no payload");
}

#[test]
fn inputs_repeat_until_acknowledged() {
    let (mut host, mut client) = connected();
    while host.poll_event().is_some() {}
    client.push_input(1, KeyAction::Down, 0);
    client.push_input(2, KeyAction::Down, 6);
    client.flush_inputs(Duration::ZERO);
    client.push_input(3, KeyAction::Up, 0);
    client.flush_inputs(MS);
    assert!(client.poll_transmit().is_some() && client.poll_transmit().is_none(), "one packet within 8 ms");
    client.flush_inputs(10 * MS);
    client.flush_inputs(11 * MS);
    client.flush_inputs(20 * MS);
    assert!(
        client.poll_transmit().is_some() && client.poll_transmit().is_none(),
        "the new event at once, no repeat yet"
    );
    client.flush_inputs(27 * MS);
    progress(&mut host, &mut client, MS);
    let got: Vec<Vec<u32>> = std::iter::from_fn(|| host.poll_event())
        .filter_map(|e| match e {
            HostEvent::Input(ev) => Some(ev.iter().map(WireInput::seq).collect()),
            _ => None,
        })
        .collect();
    assert_eq!(got, [vec![1, 2, 3]], "the repeat after 16.7 ms; the first two packets were dropped above");
    client.ack_inputs(2);
    assert_eq!(client.unacked_inputs(), 1);
    client.push_input(2, KeyAction::Up, 6);
    assert_eq!(client.unacked_inputs(), 1, "an already acknowledged seq is not queued");
}

#[test]
fn chat_flood_is_dropped_then_closed_with_4413() {
    let (mut host, mut client) = connected();
    while host.poll_event().is_some() {}
    for _ in 0..5 {
        client.send_meta(op::client::CHAT, br#""hi""#);
    }
    progress(&mut host, &mut client, MS);
    let chats = std::iter::from_fn(|| host.poll_event()).filter(|e| matches!(e, HostEvent::Meta { .. })).count();
    assert_eq!(chats, 5, "the burst passes");
    for _ in 0..5 {
        client.send_meta(op::client::CHAT, br#""spam""#);
    }
    progress(&mut host, &mut client, 2 * MS);
    assert_eq!(host.close_code(), None, "the next five are dropped");
    assert!(std::iter::from_fn(|| host.poll_event()).all(|e| !matches!(e, HostEvent::Meta { .. })));
    client.send_meta(op::client::CHAT, br#""spam""#);
    progress(&mut host, &mut client, 3 * MS);
    assert_eq!(host.close_code(), Some(close::RATE));
}

#[test]
fn a_flood_of_control_messages_is_dropped_then_closed_with_4413() {
    let (mut host, mut client) = connected();
    while host.poll_event().is_some() {}
    let (burst, _) = HostSessionConfig::default().control_rate;
    for _ in 0..burst as usize * 3 {
        client.send_meta(op::LINKS, &[1; 17]);
    }
    progress(&mut host, &mut client, MS);
    let links = std::iter::from_fn(|| host.poll_event()).filter(|e| matches!(e, HostEvent::Links(_))).count();
    assert_eq!(links, burst as usize, "the burst passes, the rest is dropped");
    assert_eq!(host.close_code(), Some(close::RATE), "and past the drops tolerated, the peer is closed");
}

#[test]
fn frame_acks_go_out_once_per_newer_frame_and_reach_the_host() {
    let (mut host, mut client) = connected();
    while host.poll_event().is_some() {}
    let acks = |host: &mut HostSession| {
        std::iter::from_fn(|| host.poll_event())
            .filter_map(|e| match e {
                HostEvent::FrameAck(seq) => Some(seq),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    client.ack_frame(5);
    client.ack_frame(3);
    client.flush_inputs(MS);
    client.flush_inputs(2 * MS);
    progress(&mut host, &mut client, 2 * MS);
    assert_eq!(acks(&mut host), vec![5], "the newest, once");
    client.ack_frame(5);
    client.flush_inputs(3 * MS);
    progress(&mut host, &mut client, 3 * MS);
    assert_eq!(acks(&mut host), Vec::<u32>::new(), "a frame acknowledged already goes no more");
    client.ack_frame(6);
    client.ack_frame(7);
    client.flush_inputs(4 * MS);
    let (channel, bytes) = client.poll_transmit().expect("an ack");
    assert_eq!((channel, bytes), (Channel::Unreliable, vec![op::FRAME_ACK, 0, 0, 0, 7]));
}

#[test]
fn a_frame_ack_of_the_wrong_length_is_4400_and_a_flood_of_them_4413() {
    let (mut host, mut client) = connected();
    client.send_meta(op::FRAME_ACK, &[0, 0, 7]);
    progress(&mut host, &mut client, MS);
    assert_eq!(host.close_code(), Some(close::PROTOCOL));

    let (mut host, mut client) = connected();
    while host.poll_event().is_some() {}
    let (burst, _) = HostSessionConfig::default().ack_rate;
    for seq in 0..burst as u32 * 3 {
        client.send_meta(op::FRAME_ACK, &seq.to_be_bytes());
    }
    progress(&mut host, &mut client, MS);
    let acks = std::iter::from_fn(|| host.poll_event()).filter(|e| matches!(e, HostEvent::FrameAck(_))).count();
    assert_eq!(acks, burst as usize, "the burst passes, the rest is dropped");
    assert_eq!(host.close_code(), Some(close::RATE));
}

#[test]
fn a_hello_may_carry_fields_this_host_does_not_know_and_names_the_formats_it_decodes() {
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    let json = br#"{"version":1,"build":"next","nickname":"ann","snapshotFormats":[6,7],"voice":true}"#;
    let mut frame = Vec::new();
    frame::encode(op::HELLO, json, &mut frame);
    host.handle_message(Duration::ZERO, Channel::Reliable, &frame);
    let Some(HostEvent::Hello(hello)) = host.poll_event() else { panic!("a hello: {:?}", host.close_code()) };
    assert_eq!((hello.nickname.as_str(), hello.snapshot_format()), ("ann", 6));
    assert_eq!(Hello::new("a", "b").snapshot_format(), 6, "this build decodes delta frames");
    let old = Hello { snapshot_formats: Vec::new(), ..Hello::new("a", "b") };
    assert_eq!(old.snapshot_format(), 5, "a hello that names none gets format 5");
    assert_eq!(Hello { snapshot_formats: vec![9], ..old }.snapshot_format(), 5);
}

#[test]
fn nicknames_are_trimmed_checked_and_made_unique() {
    assert_eq!(clean_nickname("  Ann  ").as_deref(), Some("Ann"));
    assert_eq!(clean_nickname("   "), None);
    assert_eq!(clean_nickname("a\u{7}b"), None);
    assert_eq!(clean_nickname(&"x".repeat(17)), None);
    assert_eq!(clean_nickname(" @@host").as_deref(), Some("host"), "'@' names are the engine's");
    assert_eq!(clean_nickname("@ "), None);
    assert_eq!(clean_nickname("a@b").as_deref(), Some("a@b"));
    assert!(same_nickname("Ann", "aNN") && same_nickname("ÄRGER", "ärger") && !same_nickname("ann", "anne"));
    let taken = ["Ann", "Ann (2)", "Sixteen-letters!"];
    assert_eq!(unique_nickname("Bob", |n| taken.contains(&n)), "Bob");
    assert_eq!(unique_nickname("Ann", |n| taken.contains(&n)), "Ann (3)");
    assert_eq!(unique_nickname("Sixteen-letters!", |n| taken.contains(&n)), "Sixteen-lett (2)");
}

#[test]
fn tokens_print_as_hex_and_parse_back() {
    let t = SessionToken([0xab; 16]);
    assert_eq!(t.to_string(), "ab".repeat(16));
    assert_eq!(SessionToken::parse(&t.to_string()), Some(t));
    assert_eq!(SessionToken::parse("zz"), None);
    assert_eq!(format!("{t:?}"), "SessionToken(abab…)", "logs never show a whole token");
}

#[test]
fn the_client_notices_a_silent_host() {
    let (_host, mut client) = connected();
    let _ = events(&mut client);
    client.handle_timeout(Duration::from_secs(15));
    assert!(matches!(events(&mut client)[..], [ClientEvent::Closed { code: 4408, by_peer: false, .. }]));
}

#[test]
fn over_a_lossy_link_inputs_all_arrive_and_a_big_frame_is_chunked() {
    use crate::link::{LinkConfig, link_pair};
    let config = LinkConfig::new().latency(50 * MS).jitter(10 * MS).loss(0.1).seed(7);
    let (mut host_end, mut client_end) = link_pair(config);
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    let mut client = ClientSession::new(ClientSessionConfig::new(hello("ann")), Duration::ZERO);
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let mut applied: Option<u32> = None;
    let mut got_big = false;
    let mut welcomed = false;
    let mut now = Duration::ZERO;
    while now < Duration::from_secs(20) {
        now += 5 * MS;
        while let Some((ch, m)) = host_end.poll_recv(now) {
            host.handle_message(now, ch, &m);
        }
        while let Some((ch, m)) = client_end.poll_recv(now) {
            client.handle_message(now, ch, &m);
        }
        host.handle_timeout(now);
        client.handle_timeout(now);
        while let Some(e) = host.poll_event() {
            match e {
                HostEvent::Hello(_) => {
                    host.accept(&welcome(), &serde_json::json!({}));
                    host.send(Channel::Reliable, op::CHECKPOINT, &big);
                }
                // The host applies each seq at most once, in order: the key state's rule.
                HostEvent::Input(events) => {
                    for e in events {
                        if applied.is_none_or(|a| e.seq() == a + 1) {
                            applied = Some(e.seq());
                        }
                    }
                }
                _ => {}
            }
        }
        while let Some(e) = client.poll_event() {
            match e {
                ClientEvent::Welcomed(_) => welcomed = true,
                ClientEvent::Engine { opcode: op::CHECKPOINT, payload } => got_big = payload == big,
                _ => {}
            }
        }
        // The client presses a key every 20 ms for the first 2 s and learns what was applied
        // (as the player block would tell it) with the snapshot rate.
        let ms = now.as_millis() as u32;
        if welcomed && ms.is_multiple_of(20) && ms <= 2000 {
            client.push_input(ms / 20, if ms.is_multiple_of(40) { KeyAction::Down } else { KeyAction::Up }, 0);
        }
        if ms.is_multiple_of(35)
            && let Some(a) = applied
        {
            client.ack_inputs(a);
        }
        client.flush_inputs(now);
        while let Some((ch, m)) = host.poll_transmit() {
            host_end.send(now, ch, m);
        }
        while let Some((ch, m)) = client.poll_transmit() {
            client_end.send(now, ch, m);
        }
        if got_big && applied == Some(100) && client.unacked_inputs() == 0 {
            break;
        }
    }
    assert!(welcomed, "the handshake completes over the lossy link");
    assert!(got_big, "a 200 kB frame crosses the reliable channel in chunks");
    assert_eq!(applied, Some(100), "every input arrived, in order, despite 10% loss");
    assert!(client_end.stats().lost > 0, "the link did lose packets");
    assert_eq!(client.unacked_inputs(), 0);
    assert!(host.is_active(), "nobody was kicked: {:?}", host.close_code());
}

proptest::proptest! {
    #[test]
    fn a_stalled_input_queue_collapses_and_loses_no_key(
        // Mostly one key, so that the others' last events lie far back; bit 8 is an aim
        // (let go of when `down` is false).
        events in proptest::collection::vec((proptest::prop_oneof![9 => proptest::strategy::Just(7u8), 1 => 0u8..7, 1 => proptest::strategy::Just(8u8)], proptest::bool::ANY, 1u32..4), 1..500),
        acked_at in proptest::collection::vec(proptest::bool::weighted(0.004), 500),
    ) {
        use crate::input::{KeyKind, KeySpec, KeyState};
        // Bits 0..4 held keys, 4..8 one-shots; the host sometimes acknowledges what it had.
        let spec = |bit: u8| KeySpec { bit, kind: if bit < 4 { KeyKind::Held } else { KeyKind::OneShot } };
        let apply = |state: &mut KeyState, e: &WireInput| match e {
            WireInput::Key(e) => state.apply_bit(e.seq, e.action, spec(e.bit)),
            WireInput::Aim(e) => state.apply_aim(e.seq, e.aim),
            WireInput::View(e) => state.apply_view(e.seq, e.view),
        };
        let (mut host, mut truth) = (KeyState::default(), KeyState::default());
        let mut client = ClientSession::new(ClientSessionConfig::new(hello("a")), Duration::ZERO);
        let mut seq = 0;
        let mut fired = 0u64;
        for (k, &(bit, down, gap)) in events.iter().enumerate() {
            seq += gap;
            let action = if down { KeyAction::Down } else { KeyAction::Up };
            // A one-shot press goes after the view the player saw, as the client sends it.
            if (4..8).contains(&bit) && down {
                let view = crate::input::ViewEvent { seq, view: crate::input::ViewTime { tick: seq, frac: 0 } };
                client.push(WireInput::View(view));
                apply(&mut truth, &WireInput::View(view));
                seq += 1;
            }
            let event = match bit {
                8 => WireInput::Aim(AimEvent { seq, aim: down.then_some(Aim { x: seq as f32, y: 1.0, flags: 0 }) }),
                _ => WireInput::Key(BinaryKeyEvent { seq, action, bit }),
            };
            client.push(event);
            apply(&mut truth, &event);
            fired |= truth.step().fired;
            if acked_at[k] {
                // What the host got of the queue so far, then acknowledged.
                for e in client.unacked.clone() {
                    apply(&mut host, &e);
                }
                client.ack_inputs(host.last_input_seq());
            }
            proptest::prop_assert!(client.unacked_inputs() <= client.config.max_repeated_inputs.max(16));
        }
        // A press kept keeps the view it went with; no view is kept without its press.
        let left: Vec<WireInput> = client.unacked.iter().copied().collect();
        for (i, e) in left.iter().enumerate() {
            let next = left.get(i + 1);
            match e {
                WireInput::Key(k) if k.bit >= 4 && k.action == KeyAction::Down && i > 0 => {
                    let before = left[i - 1];
                    let kept = matches!(before, WireInput::View(v) if v.seq + 1 == k.seq && v.view.tick == v.seq);
                    proptest::prop_assert!(kept || k.seq == left[0].seq(), "press {} without its view", k.seq);
                }
                WireInput::View(v) => {
                    let press = matches!(next, Some(WireInput::Key(k)) if k.seq == v.seq + 1 && k.action == KeyAction::Down);
                    proptest::prop_assert!(press, "view {} without its press", v.seq);
                }
                _ => {}
            }
        }
        // The host gets what is left: every held key ends as the player holds it, every
        // one-shot pressed at some point fires at some point, and it aims where the player does.
        let mut host_fired = 0u64;
        for e in client.unacked.clone() {
            apply(&mut host, &e);
            host_fired |= host.step().fired;
        }
        proptest::prop_assert_eq!(host.held(), truth.held(), "held keys ({} collapses)", client.inputs_collapsed());
        proptest::prop_assert_eq!(host.aim(), truth.aim(), "the aim ({} collapses)", client.inputs_collapsed());
        let pressed_unacked = fired & !0x0f;
        proptest::prop_assert_eq!(host_fired & pressed_unacked, host_fired, "nothing fires that was not pressed");
    }
}

#[test]
fn a_stall_collapses_the_queue_to_each_keys_last_press_and_release() {
    let mut client = ClientSession::new(ClientSessionConfig::new(hello("a")), Duration::ZERO);
    // 200 events on three keys, never acknowledged: key 2 is released last, at seq 3.
    client.push_input(1, KeyAction::Down, 2);
    client.push_input(2, KeyAction::Down, 5);
    client.push_input(3, KeyAction::Up, 2);
    for seq in 4..=200 {
        client.push_input(seq, if seq % 2 == 0 { KeyAction::Down } else { KeyAction::Up }, 7);
    }
    assert!(client.inputs_collapsed() > 0);
    let left: Vec<(u32, KeyAction, u8)> = client
        .unacked
        .iter()
        .filter_map(|e| if let WireInput::Key(e) = e { Some((e.seq, e.action, e.bit)) } else { None })
        .collect();
    assert!(left.len() <= client.config.max_repeated_inputs, "{}", left.len());
    for kept in [(2, KeyAction::Down, 5), (3, KeyAction::Up, 2), (199, KeyAction::Up, 7), (200, KeyAction::Down, 7)] {
        assert!(left.contains(&kept), "{kept:?} kept: {left:?}");
    }
    assert!(left.is_sorted_by_key(|e| e.0), "in order");
}

#[test]
fn a_stall_keeps_the_last_aim() {
    let mut client = ClientSession::new(ClientSessionConfig::new(hello("a")), Duration::ZERO);
    let aim = |x: f32| Aim::new(x, 0.0, 0);
    client.push_input(1, KeyAction::Down, 0);
    for seq in 2..=100 {
        client.push_aim(seq, aim(seq as f32));
    }
    assert!(client.inputs_collapsed() > 0);
    let left: Vec<WireInput> = client.unacked.iter().copied().collect();
    // Collapsed at the 65th event to the key and aim 65; aims 66 to 100 came after.
    assert_eq!(left.len(), 1 + 36, "{left:?}");
    assert_eq!(left[1], WireInput::Aim(AimEvent { seq: 65, aim: aim(65.0) }));
    assert!(left.is_sorted_by_key(WireInput::seq), "in order");
    assert!(left.contains(&WireInput::Key(BinaryKeyEvent { seq: 1, action: KeyAction::Down, bit: 0 })));
    assert_eq!(left.last(), Some(&WireInput::Aim(AimEvent { seq: 100, aim: aim(100.0) })), "the newest aim");
    assert!(left.len() <= client.config.max_repeated_inputs);
}

#[test]
fn aims_go_with_the_keys_and_reach_the_host_in_order() {
    let (mut host, mut client) = connected();
    while host.poll_event().is_some() {}
    let aim = Aim::new(120.5, -3.25, input::AIM_PRESSED);
    client.push_input(1, KeyAction::Down, 0);
    client.push_aim(2, aim);
    client.push_aim(3, None);
    client.flush_inputs(MS);
    progress(&mut host, &mut client, MS);
    let got: Vec<HostEvent> = std::iter::from_fn(|| host.poll_event()).collect();
    assert_eq!(
        got,
        [HostEvent::Input(vec![
            WireInput::Key(BinaryKeyEvent { seq: 1, action: KeyAction::Down, bit: 0 }),
            WireInput::Aim(AimEvent { seq: 2, aim }),
            WireInput::Aim(AimEvent { seq: 3, aim: None }),
        ])]
    );
    // A batch with a hostile aim is a protocol violation, like any batch that does not decode.
    let mut frame = vec![op::client::KEYS_DATA, 1, 0, 0, 0, 4, 0x40];
    frame.extend_from_slice(&f32::NAN.to_be_bytes());
    frame.extend_from_slice(&0f32.to_be_bytes());
    frame.push(0);
    host.handle_message(2 * MS, Channel::Unreliable, &frame);
    assert_eq!(host.close_code(), Some(close::PROTOCOL));
}

#[test]
fn aims_are_offered_in_the_hello_and_taken_only_when_welcomed_so() {
    let hello = serde_json::to_value(Hello::new("ann", "test")).expect("json");
    assert_eq!(hello["aim"], serde_json::json!(true), "this build aims");
    let old: Hello = serde_json::from_str(r#"{"version":1,"build":"old","nickname":"ann"}"#).expect("an old hello");
    assert!(!old.aim, "a hello that does not say so does not aim");
    // A welcome that does not take aims says nothing of them: an old client reads it.
    let quiet = serde_json::to_value(Welcome { aim: false, ..test_support::welcome() }).expect("json");
    assert!(quiet.get("aim").is_none(), "{quiet}");
    let mut old_welcome = serde_json::to_value(test_support::welcome()).expect("json");
    old_welcome.as_object_mut().expect("an object").remove("aim");
    let read: Welcome = serde_json::from_value(old_welcome).expect("a welcome of a host before aims");
    assert!(!read.aim);
}

#[test]
fn before_an_answer_other_frames_are_ignored() {
    // A fellow client in the mesh says its own hello: that is no answer and no violation.
    let mut a = ClientSession::new(ClientSessionConfig::new(hello("a")), Duration::ZERO);
    let mut b = ClientSession::new(ClientSessionConfig::new(hello("b")), Duration::ZERO);
    let (ch, hello_b) = b.poll_transmit().expect("b's hello");
    a.handle_message(MS, ch, &hello_b);
    assert_eq!((a.close_code(), a.answered(), a.poll_event()), (None, false, None));
}

/// The opcodes of what `host` sends, by channel.
fn sent(host: &mut HostSession) -> Vec<(Channel, Vec<u8>)> {
    std::iter::from_fn(|| host.poll_transmit()).collect()
}

#[test]
fn a_welcome_goes_on_both_channels_when_asked_and_either_copy_alone_opens_the_session() {
    let welcomes = |out: &[(Channel, Vec<u8>)]| {
        out.iter()
            .filter(|(_, m)| frame::parse(m).map(|f| f.opcode) == Ok(op::WELCOME))
            .map(|(c, _)| *c)
            .collect::<Vec<_>>()
    };
    // A client of a build before: reliably only, since it would refuse a second copy.
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    let mut old =
        ClientSession::new(ClientSessionConfig::new(Hello { welcome_twice: false, ..hello("old") }), Duration::ZERO);
    let (ch, said) = old.poll_transmit().expect("the hello");
    host.handle_message(MS, ch, &said);
    assert!(matches!(host.poll_event(), Some(HostEvent::Hello(_))));
    host.accept(&welcome(), &serde_json::json!({}));
    assert_eq!(welcomes(&sent(&mut host)), [Channel::Reliable]);

    for kept in Channel::ALL {
        let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
        let mut client = ClientSession::new(ClientSessionConfig::new(hello("ann")), Duration::ZERO);
        let (ch, said) = client.poll_transmit().expect("the hello");
        host.handle_message(MS, ch, &said);
        assert_eq!(host.poll_event(), Some(HostEvent::Hello(hello("ann"))));
        host.accept(&welcome(), &serde_json::json!({}));
        let out = sent(&mut host);
        assert_eq!(welcomes(&out), [Channel::Unreliable, Channel::Reliable]);
        // One copy is lost; the other opens the session.
        let (first, rest): (Vec<_>, Vec<_>) =
            out.into_iter().partition(|(c, m)| *c == kept && frame::parse(m).map(|f| f.opcode) == Ok(op::WELCOME));
        for (ch, m) in &first {
            client.handle_message(MS * 2, *ch, m);
        }
        assert!(client.is_active(), "welcomed by the {kept:?} copy alone");
        assert_eq!(events(&mut client), [ClientEvent::Welcomed(welcome())]);
        // The other copy, when it comes after all, passes.
        for (ch, m) in &rest {
            client.handle_message(MS * 3, *ch, m);
        }
        assert_eq!(client.close_code(), None);
        // And the unreliable copy's echo, in a packet of its own a moment later.
        host.handle_timeout(MS + ECHO_AFTER);
        let echo = sent(&mut host);
        assert_eq!(welcomes(&echo), [Channel::Unreliable]);
        for (ch, m) in &echo {
            client.handle_message(MS * 40, *ch, m);
        }
        assert_eq!(client.close_code(), None);
        assert!(!events(&mut client).iter().any(|e| matches!(e, ClientEvent::Welcomed(_))), "welcomed once");
    }
}

#[test]
fn a_lost_hello_is_said_again_until_answered_and_a_repeat_is_no_offence() {
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    let mut client = ClientSession::new(ClientSessionConfig::new(hello("ann")), Duration::ZERO);
    let _lost = client.poll_transmit().expect("the hello");
    client.handle_timeout(MS);
    assert!(client.poll_transmit().is_none(), "not again at once");
    assert!(client.poll_timeout().is_some_and(|t| t <= HELLO_REPEAT));
    client.handle_timeout(HELLO_REPEAT);
    let (ch, again) = client.poll_transmit().expect("said again");
    host.handle_message(HELLO_REPEAT, ch, &again);
    assert_eq!(host.poll_event(), Some(HostEvent::Hello(hello("ann"))));
    // A third crosses the welcome on the way: the host lets it pass.
    client.handle_timeout(HELLO_REPEAT * 2);
    let (ch, third) = client.poll_transmit().expect("said a third time");
    host.accept(&welcome(), &serde_json::json!({}));
    host.handle_message(HELLO_REPEAT * 2, ch, &third);
    assert_eq!(host.close_code(), None);
    progress(&mut host, &mut client, HELLO_REPEAT * 2);
    assert!(client.is_active());
    client.handle_timeout(HELLO_REPEAT * 4);
    while let Some((_, bytes)) = client.poll_transmit() {
        assert_ne!(frame::parse(&bytes).map(|f| f.opcode), Ok(op::HELLO), "answered: no more hellos");
    }
}

/// A frame a peer might send: an opcode with any payload.
fn message() -> impl proptest::strategy::Strategy<Value = (bool, Vec<u8>)> {
    use proptest::prelude::*;
    (any::<bool>(), opcode(), proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(reliable, opcode, tail)| {
        let mut m = vec![opcode];
        m.extend(tail);
        (reliable, m)
    })
}

proptest::proptest! {
    /// Whatever a peer sends a host session, in any order, before its hello or after its
    /// welcome, nothing panics and a closed session stays closed with its first code.
    /// `PROPTEST_CASES=100000` for a long run.
    #[test]
    fn random_frames_into_a_host_session_never_panic(
        welcomed in proptest::prelude::any::<bool>(),
        frames in proptest::collection::vec(message(), 0..24),
    ) {
        let mut host = if welcomed { connected().0 } else { HostSession::new(HostSessionConfig::default(), Duration::ZERO) };
        let mut now = Duration::ZERO;
        let mut first_close = None;
        for (reliable, bytes) in frames {
            now += MS;
            let channel = if reliable { Channel::Reliable } else { Channel::Unreliable };
            host.handle_message(now, channel, &bytes);
            host.handle_timeout(now);
            while host.poll_transmit().is_some() {}
            while host.poll_event().is_some() {}
            match (first_close, host.close_code()) {
                (None, code) => first_close = code,
                (Some(first), code) => proptest::prop_assert_eq!(Some(first), code),
            }
        }
    }

    /// Whatever a peer sends a client session, before or after its welcome, nothing panics.
    #[test]
    fn random_frames_into_a_client_session_never_panic(
        welcomed in proptest::prelude::any::<bool>(),
        frames in proptest::collection::vec(message(), 0..24),
    ) {
        let mut client = if welcomed {
            connected().1
        } else {
            ClientSession::new(ClientSessionConfig::new(hello("ann")), Duration::ZERO)
        };
        let mut now = Duration::ZERO;
        for (reliable, bytes) in frames {
            now += MS;
            let channel = if reliable { Channel::Reliable } else { Channel::Unreliable };
            client.handle_message(now, channel, &bytes);
            client.handle_timeout(now);
            client.push_input(1, KeyAction::Down, 0);
            client.flush_inputs(now);
            while client.poll_transmit().is_some() {}
            while client.poll_event().is_some() {}
        }
    }
}

#[test]
fn an_echoed_frame_goes_unreliably_now_and_once_more_a_moment_later_in_a_packet_of_its_own() {
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    host.send_echoed(op::CLAIM, &[1, 2, 3]);
    let claims = |out: Vec<(Channel, Vec<u8>)>| {
        out.into_iter()
            .filter(|(_, m)| frame::parse(m).map(|f| f.opcode) == Ok(op::CLAIM))
            .map(|(c, _)| c)
            .collect::<Vec<_>>()
    };
    assert_eq!(claims(sent(&mut host)), [Channel::Unreliable]);
    assert_eq!(host.poll_timeout(), Some(ECHO_AFTER), "the echo wakes the driver");
    host.handle_timeout(ECHO_AFTER - MS);
    assert!(claims(sent(&mut host)).is_empty(), "not before its time");
    host.handle_timeout(ECHO_AFTER);
    assert_eq!(claims(sent(&mut host)), [Channel::Unreliable]);
    host.handle_timeout(ECHO_AFTER * 10);
    assert!(claims(sent(&mut host)).is_empty(), "once");
    // Nothing after a close.
    host.send_echoed(op::CLAIM, &[1, 2, 3]);
    host.close(close::NORMAL);
    host.handle_timeout(ECHO_AFTER * 20);
    assert_eq!(claims(sent(&mut host)), [Channel::Unreliable], "the first copy only");
}

#[test]
fn a_hello_with_the_token_of_the_welcome_sent_gets_the_welcome_again_and_no_other_does() {
    let token = welcome().token;
    let with = |token: Option<SessionToken>| Hello { resume_token: token, ..hello("ann") };
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    let mut first = ClientSession::new(ClientSessionConfig::new(with(Some(token))), Duration::ZERO);
    let (ch, said) = first.poll_transmit().expect("the hello");
    host.handle_message(MS, ch, &said);
    assert!(matches!(host.poll_event(), Some(HostEvent::Hello(_))));
    host.accept(&welcome(), &serde_json::json!({}));
    // That session's process dropped it (it followed another claimer first) and never got
    // the welcome; a new session says hello again, with the token.
    sent(&mut host);
    let mut again = ClientSession::new(ClientSessionConfig::new(with(Some(token))), MS * 5);
    for (ch, m) in std::iter::from_fn(|| again.poll_transmit()).collect::<Vec<_>>() {
        host.handle_message(MS * 6, ch, &m);
    }
    for (ch, m) in sent(&mut host) {
        again.handle_message(MS * 7, ch, &m);
    }
    assert!(again.is_active(), "welcomed again");
    assert_eq!(events(&mut again), [ClientEvent::Welcomed(welcome())]);
    // A hello without the token, or with another, gets nothing.
    for other in [None, Some(SessionToken([9; 16]))] {
        let mut stranger = ClientSession::new(ClientSessionConfig::new(with(other)), MS * 8);
        for (ch, m) in std::iter::from_fn(|| stranger.poll_transmit()).collect::<Vec<_>>() {
            host.handle_message(MS * 9, ch, &m);
        }
        host.handle_timeout(MS * 9);
        assert!(sent(&mut host).iter().all(|(_, m)| frame::parse(m).map(|f| f.opcode) != Ok(op::WELCOME)));
        assert_eq!(host.close_code(), None);
    }
}
