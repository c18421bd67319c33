use super::*;
use crate::input::{AimEvent, BinaryKeyEvent, KeyTable, ViewEvent, ViewTime, WireInput};
use crate::migration::Succession;

/// Without any transport: a peer whose link opens gets a hello, a peer whose link
/// dropped gets nothing more.
#[test]
fn the_core_says_hello_to_the_peers_that_link_and_nothing_to_one_that_dropped() {
    let mut core = ClientCore::new(Hello::new("ann", "test"), ClientConfig::default());
    core.set_local_id(Some(PeerKey(7)));
    let now = Duration::from_millis(10);
    core.handle(now, TransportEvent::Connected(PeerKey(1)));
    core.handle(now, TransportEvent::Connected(PeerKey(2)));
    core.handle_timeout(now);
    let sent: Vec<_> = std::iter::from_fn(|| core.poll_transmit()).collect();
    let to: BTreeSet<PeerKey> = sent.iter().map(|(p, ..)| *p).collect();
    assert_eq!(to, BTreeSet::from([PeerKey(1), PeerKey(2)]));
    for peer in [PeerKey(1), PeerKey(2)] {
        let mut channels: Vec<Channel> = sent.iter().filter(|(p, ..)| *p == peer).map(|(_, c, _)| *c).collect();
        channels.sort_by_key(|c| *c == Channel::Unreliable);
        assert_eq!(channels, [Channel::Reliable, Channel::Unreliable], "the hello both ways to {peer}");
    }
    for (_, _, bytes) in &sent {
        assert_eq!(frame::parse(bytes).expect("a frame").opcode, op::HELLO);
    }
    assert!(core.welcome().is_none() && core.host_peer().is_none(), "nobody answered yet");
    assert_eq!(core.poll_event(), Some(ClientChange::Linked { peers: 2 }));
    assert_eq!(core.poll_event(), None, "nothing else changed");
    core.handle(now, TransportEvent::Disconnected(PeerKey(2)));
    for later in 1..20 {
        core.handle_timeout(now + Duration::from_millis(250 * later));
        while let Some((peer, ..)) = core.poll_transmit() {
            assert_eq!(peer, PeerKey(1), "nothing to the dropped peer");
        }
    }
    assert_eq!(core.poll_event(), Some(ClientChange::Linked { peers: 1 }));
    assert_eq!(core.poll_event(), None);
}

#[test]
fn a_hello_nobody_answers_for_5_s_after_the_newest_link_closes_the_join_with_4408() {
    let ms = Duration::from_millis;
    let mut core = ClientCore::new(Hello::new("ann", "test"), ClientConfig::default());
    core.set_local_id(Some(PeerKey(7)));
    core.handle(ms(0), TransportEvent::Connected(PeerKey(1)));
    // Another peer links 3 s in: every link gets its 5 s.
    core.handle(ms(3000), TransportEvent::Connected(PeerKey(2)));
    let mut t = ms(0);
    while t < ms(7900) {
        core.handle_timeout(t);
        assert_eq!(core.closed(), None, "still waiting at {t:?}");
        t += ms(100);
    }
    let hellos = std::iter::from_fn(|| core.poll_transmit())
        .filter(|(p, _, b)| *p == PeerKey(1) && frame::parse(b).is_ok_and(|f| f.opcode == op::HELLO))
        .count();
    assert_eq!(hellos, 10, "the hello both ways and its echo, then again every second until 7.9 s");
    assert!(core.poll_timeout().is_some_and(|t| t <= ms(8000)), "the driver is woken by the end");
    core.handle_timeout(ms(8000));
    let (code, reason) = core.closed().expect("closed");
    assert_eq!(*code, crate::session::close::HEARTBEAT);
    assert!(reason.contains("no host answered"), "{reason}");
    // Its driver dials again over a fresh transport: the wait starts over.
    assert!(core.reconnect(ms(8000)));
    core.handle(ms(8100), TransportEvent::Connected(PeerKey(3)));
    core.handle_timeout(ms(13000));
    assert_eq!(core.closed(), None);
    core.handle_timeout(ms(13100));
    assert!(core.closed().is_some());
}

/// A core welcomed by a real host session on peer 1 (a match with a snapshot schema of
/// one block, so frames decode), linked to peers 2 and 3 too.
fn welcomed_core() -> ClientCore {
    use crate::session::{HostSession, HostSessionConfig};
    let mut core = ClientCore::new(Hello::new("ann", "test"), ClientConfig::default());
    core.set_local_id(Some(PeerKey(9)));
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    for peer in 1..=3 {
        core.handle(Duration::ZERO, TransportEvent::Connected(PeerKey(peer)));
    }
    core.handle_timeout(Duration::ZERO);
    for round in 0..4 {
        let now = Duration::from_millis(round);
        for (peer, channel, bytes) in std::iter::from_fn(|| core.poll_transmit()).collect::<Vec<_>>() {
            if peer == PeerKey(1) {
                host.handle_message(now, channel, &bytes);
            }
        }
        while let Some(event) = host.poll_event() {
            if let crate::session::HostEvent::Hello(_) = event {
                host.accept(
                    &crate::session::test_support::welcome(),
                    &serde_json::json!({ "engine": { "timeStepMs": 8.333 } }),
                );
            }
        }
        while let Some((channel, bytes)) = host.poll_transmit() {
            core.handle(now, TransportEvent::Message { peer: PeerKey(1), channel, bytes });
        }
        core.handle_timeout(now);
    }
    assert!(core.welcome().is_some(), "the real host welcomed the core");
    core
}

/// `HOST_CHECK` about the host of `epoch`, framed.
fn host_check(epoch: u32) -> Vec<u8> {
    framed(op::HOST_CHECK, &HostCheck { epoch, passes: false }.encode())
}

fn framed(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    frame::encode(opcode, payload, &mut bytes);
    bytes
}

/// A welcomed core (peer 9) that its host lists second, after peer 2, and that keeps a
/// shadow of the host (a whole checkpoint came).
fn second_successor() -> ClientCore {
    let mut core = welcomed_core();
    let epoch = core.following.host.0;
    let list = Succession { epoch, peers: vec![PeerKey(2), PeerKey(9)], voters: None };
    let mut frames = vec![framed(op::SUCCESSION, &list.encode())];
    let parts = crate::migration::checkpoint_parts(1, b"the match").expect("parts");
    frames.extend(parts.iter().map(|p| framed(op::CHECKPOINT, p)));
    for bytes in frames {
        core.handle(Duration::ZERO, TransportEvent::Message { peer: PeerKey(1), channel: Channel::Reliable, bytes });
    }
    core.handle_timeout(Duration::ZERO);
    assert!(core.shadow.shadowed, "the checkpoint came");
    std::iter::from_fn(|| core.poll_transmit()).for_each(drop);
    core
}

/// The `HOST_CHECK`s in `sent`.
fn checks(sent: &[(PeerKey, Channel, Vec<u8>)]) -> Vec<HostCheck> {
    sent.iter()
        .filter_map(|(_, _, b)| {
            let f = frame::parse(b).ok().filter(|f| f.opcode == op::HOST_CHECK)?;
            Some(HostCheck::decode(f.payload).expect("a check decodes"))
        })
        .collect()
}

#[test]
fn a_successor_takes_its_turn_at_once_when_the_one_before_it_passes_for_want_of_a_shadow() {
    let ms = Duration::from_millis;
    let mut core = second_successor();
    // A room of three, peers 2, 3 and 4: peer 2's pass, which says it lost the host, is no
    // majority of it alone.
    core.handle(ms(1), TransportEvent::Connected(PeerKey(4)));
    let epoch = core.following.host.0;
    core.handle_timeout(ms(600));
    assert!(core.host_lost(), "500 ms of silence");
    let warned = checks(&std::iter::from_fn(|| core.poll_transmit()).collect::<Vec<_>>());
    assert!(!warned.is_empty() && warned.iter().all(|c| !c.passes), "it keeps a shadow: it does not pass");
    assert!(!core.my_turn(), "peer 2 goes first");
    // Peer 2, first in line, keeps no shadow: its own check says it passes.
    let pass = framed(op::HOST_CHECK, &HostCheck { epoch, passes: true }.encode());
    core.handle(ms(650), TransportEvent::Message { peer: PeerKey(2), channel: Channel::Reliable, bytes: pass });
    core.handle_timeout(ms(650));
    assert!(core.my_turn(), "its turn now, not 500 + 200 ms after the loss");
    let asked = checks(&std::iter::from_fn(|| core.poll_transmit()).collect::<Vec<_>>());
    assert!(!asked.is_empty(), "it asks the room");
    // A pass from a peer it does not list changes nothing; nor does one about another host.
    let mut other = second_successor();
    other.handle_timeout(ms(600));
    let elsewhere = framed(op::HOST_CHECK, &HostCheck { epoch: epoch + 1, passes: true }.encode());
    other.handle(ms(650), TransportEvent::Message { peer: PeerKey(2), channel: Channel::Reliable, bytes: elsewhere });
    let stranger = framed(op::HOST_CHECK, &HostCheck { epoch, passes: true }.encode());
    other.handle(ms(650), TransportEvent::Message { peer: PeerKey(3), channel: Channel::Reliable, bytes: stranger });
    other.handle_timeout(ms(650));
    assert!(!other.my_turn(), "peer 2 still goes first");
}

#[test]
fn the_room_s_answers_to_a_successor_s_warning_count_once_its_turn_comes() {
    let ms = Duration::from_millis;
    let run = |answered_at: Duration, turn_at: Duration| {
        let mut core = second_successor();
        // A room of three (peers 2, 3 and 4): peer 2's pass, which says it lost the host,
        // and one answer more are a majority.
        core.handle(ms(1), TransportEvent::Connected(PeerKey(4)));
        let epoch = core.following.host.0;
        core.handle_timeout(ms(600));
        assert!(core.host_lost());
        // Peer 3 answers the warning: it lost the host too.
        let seen = framed(op::HOST_SEEN, &HostSeen { asked: epoch, following: epoch, silence_ms: u32::MAX }.encode());
        core.handle(answered_at, TransportEvent::Message { peer: PeerKey(3), channel: Channel::Reliable, bytes: seen });
        core.handle_timeout(answered_at);
        assert!(!core.takeover_due(), "not before its turn");
        let pass = framed(op::HOST_CHECK, &HostCheck { epoch, passes: true }.encode());
        core.handle(turn_at, TransportEvent::Message { peer: PeerKey(2), channel: Channel::Reliable, bytes: pass });
        core.handle_timeout(turn_at);
        core.takeover_due()
    };
    assert!(run(ms(700), ms(750)), "2 of the 3 asked and itself: the room agrees at once");
    assert!(!run(ms(700), ms(1300)), "an answer older than a round is asked again");
}

/// The `HOST_SEEN` answers in `sent`, by receiver.
fn answers(sent: &[(PeerKey, Channel, Vec<u8>)]) -> Vec<(PeerKey, HostSeen)> {
    sent.iter()
        .filter_map(|(p, _, b)| {
            let f = frame::parse(b).ok().filter(|f| f.opcode == op::HOST_SEEN)?;
            Some((*p, HostSeen::decode(f.payload).expect("an answer decodes")))
        })
        .collect()
}

#[test]
fn a_client_still_joining_answers_a_check_by_its_newest_link_and_says_hello_again_to_a_claimer() {
    let ms = Duration::from_millis;
    let mut core = ClientCore::new(Hello::new("cy", "test"), ClientConfig::default());
    core.set_local_id(Some(PeerKey(9)));
    core.handle(ms(0), TransportEvent::Connected(PeerKey(1)));
    core.handle(ms(100), TransportEvent::Connected(PeerKey(2)));
    core.handle_timeout(ms(100));
    std::iter::from_fn(|| core.poll_transmit()).for_each(drop);
    // Asked 50 ms after its newest link: a host there may not have answered the hello yet.
    let check = TransportEvent::Message { peer: PeerKey(2), channel: Channel::Reliable, bytes: host_check(1) };
    core.handle(ms(150), check.clone());
    let sent: Vec<_> = std::iter::from_fn(|| core.poll_transmit()).collect();
    let seen = answers(&sent);
    assert_eq!(seen.len(), 1, "once, unreliably: {sent:?}");
    assert!(sent.iter().all(|(_, c, _)| *c == Channel::Unreliable), "a lost answer holds nothing up");
    assert_eq!(seen[0], (PeerKey(2), HostSeen { asked: 1, following: 0, silence_ms: 50 }));
    assert!(seen[0].1.alive_within(ALIVE_WITHIN), "too soon to say the host is lost");
    // Asked again 400 ms after its newest link, with no welcome: no live host there.
    core.handle(ms(500), check);
    let seen = answers(&std::iter::from_fn(|| core.poll_transmit()).collect::<Vec<_>>());
    assert_eq!(seen[0].1, HostSeen { asked: 1, following: 0, silence_ms: 400 });
    assert!(!seen[0].1.alive_within(ALIVE_WITHIN));
    // Peer 2 took the match over: the hello goes there at once, not at its next repeat.
    let mut claim = Vec::new();
    frame::encode(op::CLAIM, &Claim::new(2, 0, 100).encode(), &mut claim);
    core.handle(ms(600), TransportEvent::Message { peer: PeerKey(2), channel: Channel::Reliable, bytes: claim });
    core.handle_timeout(ms(600));
    let hellos: Vec<PeerKey> = std::iter::from_fn(|| core.poll_transmit())
        .filter(|(_, _, b)| frame::parse(b).is_ok_and(|f| f.opcode == op::HELLO))
        .map(|(p, ..)| p)
        .collect();
    assert!(
        hellos.len() >= 2 && hellos.iter().all(|p| *p == PeerKey(2)),
        "to the claimer alone, both ways: {hellos:?}"
    );
    assert_eq!(core.closed(), None);
}

#[test]
fn a_fellow_s_check_counts_the_host_lost_once_silent_for_half_the_timeout_and_the_room_hears_of_it() {
    let ms = Duration::from_millis;
    let mut core = welcomed_core();
    std::iter::from_fn(|| core.poll_transmit()).for_each(drop);
    // No snapshot came, so the link is not judged: 500 ms allowed, 250 ms on a fellow's word.
    assert_eq!(core.host_timeout(), ms(500));
    let check =
        |at| (at, TransportEvent::Message { peer: PeerKey(2), channel: Channel::Reliable, bytes: host_check(1) });
    let (at, event) = check(ms(200));
    core.handle(at, event);
    core.handle_timeout(at);
    assert!(!core.host_lost(), "200 ms of silence is no loss");
    let seen = answers(&std::iter::from_fn(|| core.poll_transmit()).collect::<Vec<_>>());
    assert!(seen.iter().all(|(p, s)| *p == PeerKey(2) && s.following == 1 && s.silence_ms >= 196));
    let (at, event) = check(ms(300));
    core.handle(at, event);
    core.handle_timeout(at);
    assert!(core.host_lost(), "300 ms, and a fellow lost the host too");
    let sent: Vec<_> = std::iter::from_fn(|| core.poll_transmit()).collect();
    let seen = answers(&sent);
    assert!(!seen.is_empty() && seen.iter().all(|(p, s)| *p == PeerKey(2) && s.silence_ms >= 296));
    let told: BTreeSet<PeerKey> = sent
        .iter()
        .filter(|(_, _, b)| frame::parse(b).is_ok_and(|f| f.opcode == op::HOST_CHECK))
        .map(|(p, ..)| *p)
        .collect();
    assert_eq!(told, BTreeSet::from([PeerKey(2), PeerKey(3)]), "the room hears the host is lost");
}

#[test]
fn a_line_said_while_the_host_is_silent_goes_when_it_speaks_again() {
    let chat_to_host = |core: &mut ClientCore| {
        std::iter::from_fn(|| core.poll_transmit())
            .filter(|(p, _, b)| *p == PeerKey(1) && frame::parse(b).is_ok_and(|f| f.opcode == op::client::CHAT))
            .map(|(_, _, b)| frame::parse(&b).map(|f| f.payload.to_vec()).unwrap_or_default())
            .collect::<Vec<_>>()
    };
    let mut core = welcomed_core();
    let silent = Duration::from_millis(600);
    core.handle_timeout(silent);
    assert!(core.host_lost(), "the host went silent");
    core.say("said while the host was silent");
    core.handle_timeout(silent);
    assert!(chat_to_host(&mut core).is_empty(), "nobody to say it to yet");
    // The host speaks again (a ping): it was only a stall, and the line goes.
    let mut ping = Vec::new();
    frame::encode(op::PING, &[0; 16], &mut ping);
    let back = silent + Duration::from_millis(50);
    core.handle(back, TransportEvent::Message { peer: PeerKey(1), channel: Channel::Unreliable, bytes: ping });
    core.handle_timeout(back);
    assert!(!core.host_lost());
    assert_eq!(chat_to_host(&mut core), vec![br#""said while the host was silent""#.to_vec()]);
}

#[test]
fn aims_go_at_most_30_a_second_only_when_they_change_and_only_to_a_host_that_takes_them() {
    let ms = Duration::from_millis;
    let mut core = welcomed_core();
    let _ = std::iter::from_fn(|| core.poll_transmit()).count();
    let (a, b) = (Aim::new(10.0, 20.0, 0), Aim::new(-4.0, 8.5, crate::input::AIM_PRESSED));
    assert_eq!(core.aim(ms(10), None), None, "no aim to let go of yet");
    let first = core.aim(ms(10), a).expect("the first aim goes");
    assert_eq!(core.aim(ms(20), b), None, "10 ms later: held back");
    assert_eq!(core.aim(ms(43), a), None, "the same aim again says nothing new");
    let second = core.aim(ms(44), b).expect("34 ms later, a new point goes");
    assert_eq!(second, first + 1, "aims number on in the keys' seq space");
    let off = core.aim(ms(45), None).expect("letting go is never held back");
    assert_eq!(core.aim(ms(100), None), None);
    core.handle_timeout(ms(100));
    let batches: Vec<Vec<WireInput>> = std::iter::from_fn(|| core.poll_transmit())
        .filter_map(|(_, _, bytes)| {
            let frame = frame::parse(&bytes).ok()?;
            (frame.opcode == op::client::KEYS_DATA).then(|| crate::input::decode_inputs(frame.payload).ok())?
        })
        .collect();
    let expected = vec![
        WireInput::Aim(AimEvent { seq: first, aim: a }),
        WireInput::Aim(AimEvent { seq: second, aim: b }),
        WireInput::Aim(AimEvent { seq: off, aim: None }),
    ];
    assert_eq!(batches.last(), Some(&expected), "{batches:?}");
    // A host that does not say it takes aims gets none.
    if let Some(w) = core.link.welcome.as_mut() {
        w.aim = false;
    }
    assert_eq!(core.aim(ms(200), a), None);
}

#[test]
fn a_one_shot_press_says_what_was_drawn_to_a_host_that_takes_views_and_nothing_else_does() {
    let ms = Duration::from_millis;
    let mut core = welcomed_core();
    core.keys.table = Some(
        KeyTable::from_json(r#"{ "forward": { "bit": 0, "type": 0 }, "fire": { "bit": 6, "type": 1 } }"#)
            .expect("keys"),
    );
    let _ = std::iter::from_fn(|| core.poll_transmit()).count();
    let tick_ms = core.tick_ms();
    let fire = core.key_seen(KeyAction::Down, "fire", Some(tick_ms * 40.5)).expect("fire goes");
    let up = core.key_seen(KeyAction::Up, "fire", Some(tick_ms * 41.0)).expect("its release goes");
    let forward = core.key_seen(KeyAction::Down, "forward", Some(tick_ms * 41.0)).expect("a held key goes");
    core.handle_timeout(ms(100));
    let sent: Vec<WireInput> = std::iter::from_fn(|| core.poll_transmit())
        .filter_map(|(_, _, bytes)| {
            let frame = frame::parse(&bytes).ok()?;
            (frame.opcode == op::client::KEYS_DATA).then(|| crate::input::decode_inputs(frame.payload).ok())?
        })
        .last()
        .expect("a batch");
    let view = ViewTime { tick: 40, frac: 128 };
    assert_eq!(
        sent,
        [
            WireInput::View(ViewEvent { seq: fire - 1, view }),
            WireInput::Key(BinaryKeyEvent { seq: fire, action: KeyAction::Down, bit: 6 }),
            WireInput::Key(BinaryKeyEvent { seq: up, action: KeyAction::Up, bit: 6 }),
            WireInput::Key(BinaryKeyEvent { seq: forward, action: KeyAction::Down, bit: 0 }),
        ],
        "a view before the one-shot press only"
    );
    // A host that does not say it takes views gets none.
    if let Some(w) = core.link.welcome.as_mut() {
        w.view = false;
    }
    let again = core.key_seen(KeyAction::Down, "fire", Some(tick_ms * 50.0)).expect("fire goes");
    assert_eq!(again, forward + 1, "no seq spent on a view");
}

/// A core welcomed by a host session on peer 1 whose config names the game's keys, and
/// that host session: [`deliver`] carries what one sends to the other.
fn core_with_keys() -> (ClientCore, crate::session::HostSession) {
    use crate::session::{HostSession, HostSessionConfig};
    let mut core = ClientCore::new(Hello::new("ann", "test"), ClientConfig::default());
    core.set_local_id(Some(PeerKey(9)));
    let mut host = HostSession::new(HostSessionConfig::default(), Duration::ZERO);
    core.handle(Duration::ZERO, TransportEvent::Connected(PeerKey(1)));
    let config = serde_json::json!({ "game": { "playerKeys": { "forward": { "bit": 0, "type": 0 } } } });
    for round in 0..4 {
        let now = Duration::from_millis(round);
        core.handle_timeout(now);
        for (_, channel, bytes) in std::iter::from_fn(|| core.poll_transmit()).collect::<Vec<_>>() {
            host.handle_message(now, channel, &bytes);
        }
        while let Some(event) = host.poll_event() {
            if let crate::session::HostEvent::Hello(_) = event {
                host.accept(&crate::session::test_support::welcome(), &config);
            }
        }
        deliver(&mut core, &mut host, now);
    }
    assert!(core.welcome().is_some());
    (core, host)
}

/// Hands each side's frames to the other at `now`; the input events the host read.
fn deliver(core: &mut ClientCore, host: &mut crate::session::HostSession, now: Duration) -> Vec<u32> {
    for (_, channel, bytes) in std::iter::from_fn(|| core.poll_transmit()).collect::<Vec<_>>() {
        host.handle_message(now, channel, &bytes);
    }
    let mut seqs = Vec::new();
    while let Some(event) = host.poll_event() {
        if let crate::session::HostEvent::Input(events) = event {
            seqs.extend(events.iter().map(|e| e.seq()));
        }
    }
    while let Some((channel, bytes)) = host.poll_transmit() {
        core.handle(now, TransportEvent::Message { peer: PeerKey(1), channel, bytes });
    }
    core.handle_timeout(now);
    seqs
}

#[test]
fn a_keyset_from_the_host_switches_the_keys_and_drops_events_of_the_other_set() {
    let (mut core, mut host) = core_with_keys();
    let ms = Duration::from_millis;
    assert_eq!(core.keyset(), None, "no key set named yet: the game's keys");
    assert!(core.key(KeyAction::Down, "forward").is_some());
    assert!(core.key(KeyAction::Down, "nextPlayer").is_none());

    host.send(Channel::Reliable, op::KEYSET_DATA, b"0");
    deliver(&mut core, &mut host, ms(10));
    assert_eq!(core.keyset(), Some(Keyset::Spectator));
    assert!(core.key(KeyAction::Down, "forward").is_none(), "a spectator has no forward key");
    let next = core.key(KeyAction::Down, "nextPlayer").expect("a spectator key");
    assert!(core.take_meta().contains(&(op::KEYSET_DATA, b"0".to_vec())), "the app sees it too");

    // Back to playing before the host acknowledged `nextPlayer`: it is never sent again,
    // since the host would read its bit as one of the game's keys.
    host.send(Channel::Reliable, op::KEYSET_DATA, b"1");
    deliver(&mut core, &mut host, ms(11));
    assert_eq!(core.keyset(), Some(Keyset::Player));
    let forward = core.key(KeyAction::Down, "forward").expect("the game's keys again");
    let mut heard = Vec::new();
    for t in (20..600).step_by(10) {
        core.handle_timeout(ms(t));
        heard.extend(deliver(&mut core, &mut host, ms(t)));
    }
    assert!(heard.contains(&forward), "{heard:?}");
    assert!(!heard.iter().any(|seq| (next..forward).contains(seq)), "{heard:?}: nothing of the old set after {next}");
}

/// What the transport may report: a link opening or dropping, or a frame from one of
/// four peers (the host is peer 1), an opcode either end may send with any payload.
fn transport_event() -> impl proptest::strategy::Strategy<Value = (u16, TransportEvent)> {
    use proptest::prelude::*;
    let opcode = crate::session::test_support::opcode();
    let message = (1u128..=4, any::<bool>(), opcode, proptest::collection::vec(any::<u8>(), 0..48)).prop_map(
        |(peer, reliable, opcode, tail)| {
            let mut bytes = vec![opcode];
            bytes.extend(tail);
            let channel = if reliable { Channel::Reliable } else { Channel::Unreliable };
            TransportEvent::Message { peer: PeerKey(peer), channel, bytes }
        },
    );
    let event = prop_oneof![
        8 => message,
        1 => (1u128..=4).prop_map(|p| TransportEvent::Connected(PeerKey(p))),
        1 => (1u128..=4).prop_map(|p| TransportEvent::Disconnected(PeerKey(p))),
    ];
    (0u16..700, event)
}

proptest::proptest! {
    /// Whatever the transport reports, in any order, at any pace (a host that answers,
    /// peers that forge, links that drop), a client core never panics, before its welcome
    /// or after it, and a dropped one dials back in without panicking either.
    /// `PROPTEST_CASES=100000` for a long run.
    #[test]
    fn random_transport_events_never_panic_a_client_core(
        welcomed in proptest::prelude::any::<bool>(),
        events in proptest::collection::vec(transport_event(), 0..32),
    ) {
        let mut core = if welcomed {
            welcomed_core()
        } else {
            let mut core = ClientCore::new(Hello::new("ann", "test"), ClientConfig::default());
            core.set_local_id(Some(PeerKey(9)));
            core
        };
        let mut now = Duration::from_millis(10);
        for (gap_ms, event) in events {
            now += Duration::from_millis(u64::from(gap_ms));
            core.handle(now, event);
            core.handle_timeout(now);
            let _ = core.key(KeyAction::Down, "forward");
            let _ = core.aim(now, Aim::new(f32::from(gap_ms), -1.0, 0));
            let _ = (core.take_frames(), core.take_meta(), core.take_migration(), core.takeover_due());
            while core.poll_transmit().is_some() {}
            while core.poll_event().is_some() {}
            if core.closed().is_some() {
                let _ = core.reconnect(now);
            }
        }
    }
}

#[test]
fn a_claim_that_comes_unreliably_is_followed_with_a_hello_both_ways_and_its_reliable_copy_is_no_second_claim() {
    let ms = Duration::from_millis;
    let mut core = second_successor();
    core.handle_timeout(ms(600));
    assert!(core.host_lost());
    std::iter::from_fn(|| core.poll_transmit()).for_each(drop);
    let claim = framed(op::CLAIM, &Claim::new(2, 0, 100).encode());
    core.handle(
        ms(700),
        TransportEvent::Message { peer: PeerKey(2), channel: Channel::Unreliable, bytes: claim.clone() },
    );
    core.handle_timeout(ms(700));
    let mut hellos: Vec<Channel> = std::iter::from_fn(|| core.poll_transmit())
        .filter(|(p, _, b)| *p == PeerKey(2) && frame::parse(b).is_ok_and(|f| f.opcode == op::HELLO))
        .map(|(_, c, _)| c)
        .collect();
    hellos.sort_by_key(|c| *c == Channel::Unreliable);
    hellos.dedup();
    assert_eq!(hellos, [Channel::Reliable, Channel::Unreliable], "the claimer is followed, the hello said both ways");
    core.handle(ms(800), TransportEvent::Message { peer: PeerKey(2), channel: Channel::Reliable, bytes: claim });
    core.handle_timeout(ms(800));
    assert_eq!(core.stats().claims_refused, 0, "the copy is not a claim refused");
    assert_eq!(core.closed(), None);
}

#[test]
fn a_player_that_lost_its_host_says_hello_ahead_to_the_first_successor_and_follows_its_welcome_before_its_claim() {
    use crate::session::{HostEvent, HostSession, HostSessionConfig};
    let ms = Duration::from_millis;
    let mut core = second_successor();
    let epoch = core.following.host.0;
    let token = core.welcome().expect("welcomed").token;
    core.handle_timeout(ms(600));
    assert!(core.host_lost(), "500 ms of silence");
    let sent: Vec<_> = std::iter::from_fn(|| core.poll_transmit()).collect();
    let hellos: Vec<_> = sent.iter().filter(|(_, _, b)| frame::parse(b).is_ok_and(|f| f.opcode == op::HELLO)).collect();
    assert!(hellos.iter().all(|(p, ..)| *p == PeerKey(2)), "to peer 2, first in line, alone");
    let channels: Vec<Channel> = hellos.iter().map(|(_, c, _)| *c).collect();
    assert!(channels.contains(&Channel::Reliable) && channels.contains(&Channel::Unreliable), "{channels:?}");
    let said: Hello = serde_json::from_slice(frame::parse(&hellos[0].2).expect("a frame").payload).expect("a hello");
    assert_eq!(said.resume_token, Some(token));
    assert_eq!(core.stats().hellos_ahead, 1);

    // Peer 2 takes the match over and its new host answers the hello; the welcome's
    // unreliable copy comes ahead of the claim.
    let mut host = HostSession::new(HostSessionConfig::default(), ms(650));
    for (_, channel, bytes) in &hellos {
        host.handle_message(ms(650), *channel, bytes);
    }
    assert!(matches!(host.poll_event(), Some(HostEvent::Hello(h)) if h.resume_token == Some(token)));
    let welcome =
        crate::session::Welcome { epoch: epoch + 1, resumed: true, ..crate::session::test_support::welcome() };
    host.accept(&welcome, &serde_json::json!({ "engine": { "timeStepMs": 8.333 } }));
    let out: Vec<_> = std::iter::from_fn(|| host.poll_transmit()).collect();
    let (unreliable, reliable): (Vec<_>, Vec<_>) = out.into_iter().partition(|(c, _)| *c == Channel::Unreliable);
    for (channel, bytes) in unreliable {
        core.handle(ms(700), TransportEvent::Message { peer: PeerKey(2), channel, bytes });
    }
    core.handle_timeout(ms(700));
    assert_eq!(core.host_peer(), Some(PeerKey(2)), "following peer 2 on its welcome");
    assert_eq!(core.welcome().map(|w| w.epoch), Some(epoch + 1));
    assert!(!core.host_lost());
    std::iter::from_fn(|| core.poll_transmit()).for_each(drop);

    // The claim comes after: it names the rank, and the session that was welcomed stays.
    let claim = Claim { epoch: epoch + 1, rank: 0, tick: 120, evidence: Evidence { lost: 2, answered: 2 } };
    for channel in Channel::ALL {
        let bytes = framed(op::CLAIM, &claim.encode());
        core.handle(ms(710), TransportEvent::Message { peer: PeerKey(2), channel, bytes });
    }
    for (channel, bytes) in reliable {
        core.handle(ms(720), TransportEvent::Message { peer: PeerKey(2), channel, bytes });
    }
    core.handle_timeout(ms(720));
    let after: Vec<_> = std::iter::from_fn(|| core.poll_transmit()).collect();
    assert!(!after.iter().any(|(_, _, b)| frame::parse(b).is_ok_and(|f| f.opcode == op::HELLO)), "no hello again");
    assert_eq!((core.host_peer(), core.following.host), (Some(PeerKey(2)), (epoch + 1, 0)));
    assert_eq!((core.closed(), core.stats().claims_refused), (None, 0));
}

#[test]
fn a_successor_keeps_a_fellow_s_hello_with_a_token_for_its_takeover_and_not_a_join_s() {
    let ms = Duration::from_millis;
    let mut core = second_successor();
    let with_token = Hello { resume_token: Some(crate::session::SessionToken([5; 16])), ..Hello::new("bo", "test") };
    let said = |hello: &Hello| framed(op::HELLO, &serde_json::to_vec(hello).expect("json"));
    // A join's hello (no token) from peer 3, then a hello with a token from peer 2, twice.
    core.handle(
        ms(10),
        TransportEvent::Message {
            peer: PeerKey(3),
            channel: Channel::Reliable,
            bytes: said(&Hello::new("cy", "test")),
        },
    );
    core.handle(
        ms(20),
        TransportEvent::Message { peer: PeerKey(2), channel: Channel::Unreliable, bytes: said(&with_token) },
    );
    core.handle(
        ms(30),
        TransportEvent::Message { peer: PeerKey(2), channel: Channel::Reliable, bytes: said(&with_token) },
    );
    core.handle_timeout(ms(30));
    let handover = core.follow_own_host().expect("a handover");
    assert_eq!(handover.hellos, vec![(PeerKey(2), Channel::Reliable, said(&with_token))], "the newest, peer 2's");
}

#[test]
fn a_fellow_s_own_check_counts_as_its_answer_that_it_lost_the_host() {
    let ms = Duration::from_millis;
    let run = |fellows_check: bool| {
        let mut core = second_successor();
        // A room of three: peers 2, 3 and 4.
        core.handle(ms(1), TransportEvent::Connected(PeerKey(4)));
        let epoch = core.following.host.0;
        core.handle_timeout(ms(600));
        assert!(core.host_lost());
        // Peer 3 lost the host too and says so in its own check (its warning); peer 2, first
        // in line, keeps no shadow and passes: its check says it lost the host as well.
        if fellows_check {
            core.handle(
                ms(700),
                TransportEvent::Message { peer: PeerKey(3), channel: Channel::Unreliable, bytes: host_check(epoch) },
            );
        }
        let pass = framed(op::HOST_CHECK, &HostCheck { epoch, passes: true }.encode());
        core.handle(ms(750), TransportEvent::Message { peer: PeerKey(2), channel: Channel::Unreliable, bytes: pass });
        core.handle_timeout(ms(750));
        core.takeover_due()
    };
    assert!(run(true), "two of three fellows said they lost the host: the room agrees without a round of asking");
    assert!(!run(false), "one of three is no majority: the room is asked");
}

#[test]
fn a_player_that_lost_its_host_before_any_list_came_says_hello_ahead_to_every_fellow() {
    let ms = Duration::from_millis;
    let mut core = welcomed_core();
    assert!(core.succession().is_none(), "no list came");
    std::iter::from_fn(|| core.poll_transmit()).for_each(drop);
    core.handle_timeout(ms(600));
    assert!(core.host_lost(), "500 ms of silence");
    let token = core.welcome().expect("welcomed").token;
    let mut hellos: Vec<PeerKey> = std::iter::from_fn(|| core.poll_transmit())
        .filter(|(_, _, b)| {
            let hello = frame::parse(b).ok().filter(|f| f.opcode == op::HELLO);
            hello
                .and_then(|f| serde_json::from_slice::<Hello>(f.payload).ok())
                .is_some_and(|h| h.resume_token == Some(token))
        })
        .map(|(p, ..)| p)
        .collect();
    hellos.dedup();
    assert_eq!(hellos, [PeerKey(2), PeerKey(3)], "to both fellows, not to the lost host");
    assert_eq!(core.stats().hellos_ahead, 2);
}

#[test]
fn a_rival_at_the_epoch_of_the_claimant_followed_wins_by_rank_whatever_its_evidence() {
    let ms = Duration::from_millis;
    let mut core = second_successor();
    let epoch = core.following.host.0;
    let list = Succession { epoch, peers: vec![PeerKey(3), PeerKey(2), PeerKey(9)], voters: None };
    let bytes = framed(op::SUCCESSION, &list.encode());
    core.handle(ms(10), TransportEvent::Message { peer: PeerKey(1), channel: Channel::Reliable, bytes });
    core.handle_timeout(ms(10));
    core.handle_timeout(ms(600));
    assert!(core.host_lost());
    // Peer 2 (second in the list) claims first, and is followed; then peer 3, first in the
    // list, claims the same epoch having asked nobody (a race of claimants that both promoted).
    let claim =
        |rank| framed(op::CLAIM, &Claim { epoch: epoch + 1, rank, tick: 100, evidence: Evidence::default() }.encode());
    core.handle(ms(650), TransportEvent::Message { peer: PeerKey(2), channel: Channel::Reliable, bytes: claim(1) });
    core.handle_timeout(ms(650));
    assert_eq!(core.host_peer(), Some(PeerKey(2)));
    core.handle(ms(660), TransportEvent::Message { peer: PeerKey(3), channel: Channel::Reliable, bytes: claim(0) });
    core.handle_timeout(ms(660));
    assert_eq!(core.host_peer(), Some(PeerKey(3)), "the better-ranked rival is followed: peer 2 steps down to it");
    assert_eq!(core.following.host, (epoch + 1, 0));
}

#[test]
fn a_check_from_a_successor_that_may_claim_itself_is_no_answer() {
    let ms = Duration::from_millis;
    let mut core = second_successor();
    let epoch = core.following.host.0;
    // This core first in line, peer 2 after it.
    let list = Succession { epoch, peers: vec![PeerKey(9), PeerKey(2)], voters: None };
    let bytes = framed(op::SUCCESSION, &list.encode());
    core.handle(ms(10), TransportEvent::Message { peer: PeerKey(1), channel: Channel::Reliable, bytes });
    core.handle_timeout(ms(600));
    assert!(core.host_lost());
    // Peer 2 asks too (its list may name it first): that is no answer of the room's.
    core.handle(
        ms(620),
        TransportEvent::Message { peer: PeerKey(2), channel: Channel::Unreliable, bytes: host_check(epoch) },
    );
    core.handle_timeout(ms(620));
    assert!(!core.takeover_due(), "a rival's check is not counted");
    // Peer 3, no successor, says it lost the host in its own check: that counts.
    core.handle(
        ms(630),
        TransportEvent::Message { peer: PeerKey(3), channel: Channel::Unreliable, bytes: host_check(epoch) },
    );
    core.handle_timeout(ms(630));
    assert!(core.takeover_due(), "1 of 2 and itself");
}

/// A claimant that loses to a rival at its epoch (two took the match over at once) forgets
/// where its own host said the room was: a player that followed that stale invite moved its
/// transports to the rendezvous its own process had just stopped, and dropped out of the
/// match (seen in the lab, one SIGKILL in twenty at 25:8:1). The winner's invite comes with
/// its welcome.
#[test]
fn a_claimant_that_steps_down_forgets_its_own_host_s_invite() {
    let ms = Duration::from_millis;
    let mut core = welcomed_core();
    let invite =
        |host: &str| crate::lobby::Invite { public: Some(format!("ws://{host}:3536/K7MP2Q")), lan: None, served: true };
    let room = |from: u128, host: &str| TransportEvent::Message {
        peer: PeerKey(from),
        channel: Channel::Reliable,
        bytes: framed(op::ROOM, &invite(host).encode()),
    };
    // Its host (peer 1, this process's own for the test) says where it serves the room.
    core.handle(ms(5), room(1, "203.0.113.1"));
    core.handle_timeout(ms(5));
    assert_eq!(core.room(), Some((PeerKey(1), &invite("203.0.113.1"))));
    // It loses to peer 2's claim at epoch 2 and follows peer 2: the invite is gone.
    core.step_down([PeerKey(2), PeerKey(3)], PeerKey(2), crate::migration::Claim::new(2, 0, 100));
    assert_eq!(core.room(), None, "its own host's invite is no longer where the room is");
    // An invite the winner itself said is kept.
    let mut core = welcomed_core();
    core.handle(ms(5), room(1, "203.0.113.1"));
    core.handle_timeout(ms(5));
    core.step_down([PeerKey(2), PeerKey(3)], PeerKey(1), crate::migration::Claim::new(2, 0, 100));
    assert_eq!(core.room(), Some((PeerKey(1), &invite("203.0.113.1"))));
}
