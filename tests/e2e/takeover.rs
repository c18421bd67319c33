//! The window's own takeover, without a window: two windows' match logic joined to a host
//! over an in-memory full mesh; the host dies, one window's node thread takes the
//! match over and the other follows it; then that window leaves and hands the match on.

use std::time::{Duration, Instant};

use vimp::window::net::MatchState;
use vimp::window::node::NodeThread;
use vimp_host::engine::migration::MigrationConfig;
use vimp_host::engine::server::{Server, ServerConfig};
use vimp_netcode::link::LinkConfig;
use vimp_netcode::transport::{MemoryTransport, PeerKey};

use crate::repo;

const HOST: PeerKey = PeerKey(10);
const ANN: PeerKey = PeerKey(11);
const BOB: PeerKey = PeerKey(12);

/// The host (while it lives) and two windows, all on one clock.
struct Table {
    clock: Instant,
    host: Option<Server<MemoryTransport>>,
    windows: Vec<MatchState>,
}

impl Table {
    fn new() -> Table {
        let clock = Instant::now();
        let (host, init) =
            vimp::setup::new_match(&vimp::GAME, &repo("maps/test-small.json"), 2, Default::default(), 7, None)
                .expect("the match builds");
        let mut host_end = MemoryTransport::new(HOST);
        let mut ann = MemoryTransport::new(ANN);
        let mut bob = MemoryTransport::new(BOB);
        MemoryTransport::connect(&mut host_end, &mut ann, LinkConfig::default());
        MemoryTransport::connect(&mut host_end, &mut bob, LinkConfig::default());
        MemoryTransport::connect(&mut ann, &mut bob, LinkConfig::default());
        let config = ServerConfig {
            client_config: vimp_host::tanks::client_config(&init),
            session: vimp_host::engine::server::session_config(&init.game),
            migration: MigrationConfig::default(),
            ..ServerConfig::default()
        };
        let server = Server::new(host, host_end, config);
        let windows = [("ann", ann), ("bob", bob)]
            .into_iter()
            .map(|(name, transport)| {
                let hello = MatchState::hello(name, None, false);
                let node = NodeThread::join(
                    vimp::GAME,
                    Box::new(transport),
                    hello,
                    Default::default(),
                    None,
                    None,
                    None,
                    None,
                    clock,
                )
                .expect("the node thread starts");
                MatchState::new(node, clock, format!("{name}'s window"))
            })
            .collect();
        Table { clock, host: Some(server), windows }
    }

    /// Runs everyone every 2 ms until `done` holds; panics with `what` after `limit`.
    fn until(&mut self, limit: Duration, what: &str, mut done: impl FnMut(&Table) -> bool) {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(host) = self.host.as_mut() {
                host.update(self.clock.elapsed());
            }
            for m in &mut self.windows {
                m.update(m.now());
            }
            if done(self) {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Table {
    /// Every window gets 60 more snapshots, in its own slot (`ids`), still connected.
    fn plays_on(&mut self, limit: Duration, ids: &[u32]) {
        let snapshots: Vec<u64> = self.windows.iter().map(|m| m.client().stats().snapshots).collect();
        self.until(limit, "60 more snapshots in every window", |t| {
            t.windows.iter().zip(&snapshots).all(|(m, before)| m.client().stats().snapshots > before + 60)
        });
        for (i, m) in self.windows.iter().enumerate() {
            assert_eq!(m.player_id(), Some(ids[i]), "window {i} kept its slot");
            assert!(m.client().closed().is_none(), "window {i}: {:?}", m.client().closed());
        }
    }
}

fn shadowing(m: &MatchState) -> bool {
    m.node.is_shadowing()
}

fn score_row(m: &MatchState) -> Option<Vec<String>> {
    let me = m.player_id()?;
    m.stat.rows.get(&(0, me)).map(|(_, cells)| cells.iter().map(ToString::to_string).collect())
}

#[test]
fn a_window_takes_the_match_over_on_its_own_thread_and_hands_it_on_when_it_leaves() {
    let limit = Duration::from_secs(30);
    let mut table = Table::new();
    table.until(limit, "both windows shadowing the host, with frames and the stat table", |t| {
        t.windows.iter().all(|m| shadowing(m) && !m.sample.hot.is_empty() && m.stat.rows.len() == 4)
    });
    let ids: Vec<u32> = table.windows.iter().map(|m| m.player_id().unwrap()).collect();
    let names: Vec<Option<String>> =
        table.windows.iter().map(|m| score_row(m).and_then(|r| r.first().cloned())).collect();
    assert!(names.iter().all(Option::is_some), "{names:?}");

    // The host dies without a word.
    table.host = None;
    table.until(limit, "one window hosting and both following it", |t| {
        t.windows.iter().filter(|m| m.promoted.is_some()).count() == 1
            && t.windows.iter().all(|m| m.client().stats().host_epoch == 2 && m.client().stats().migrations == 1)
    });
    let new_host = table.windows.iter().position(|m| m.promoted.is_some()).unwrap();
    let other = 1 - new_host;
    let (tick, epoch) = table.windows[new_host].promoted.unwrap();
    assert_eq!(epoch, 2);
    assert!(tick > 0);
    assert!(table.windows[new_host].host_banner.as_ref().is_some_and(|(text, _)| text.contains("you host")));
    assert!(table.windows[other].host_banner.is_some());

    // Both play on in their own slots, under their own names, with the bots.
    table.plays_on(limit, &ids);
    for (i, m) in table.windows.iter().enumerate() {
        assert_eq!(m.stat.rows.len(), 4, "window {i}: two players and two bots");
        assert_eq!(score_row(m).and_then(|r| r.first().cloned()), names[i], "window {i} kept its name");
    }
    assert!(table.windows.iter().all(|m| m.tech.is_none()), "no black screen");

    // The new host's player leaves: the match goes on to the other window.
    table.until(limit, "the other window shadowing the new host", |t| shadowing(&t.windows[other]));
    let mut leaving = table.windows.remove(new_host);
    leaving.leave();
    drop(leaving);
    table.until(limit, "the other window hosting at epoch 3", |t| {
        t.windows[0].promoted.is_some_and(|(_, epoch)| epoch == 3) && t.windows[0].client().stats().host_epoch == 3
    });
    table.plays_on(limit, &[ids[other]]);
}

#[test]
fn the_players_vote_the_host_away_twice_and_no_tick_is_lost() {
    let limit = Duration::from_secs(30);
    let mut table = Table::new();
    table.until(limit, "both windows shadowing the host, with frames", |t| {
        t.windows.iter().all(|m| shadowing(m) && !m.sample.hot.is_empty())
    });
    let ids: Vec<u32> = table.windows.iter().map(|m| m.player_id().unwrap()).collect();

    // ann calls the vote (her own yes), bob says yes too: 2 of 2.
    assert!(table.windows[0].client().may_call_change_host());
    assert!(table.windows[0].call_change_host().is_some());
    table.until(limit, "bob sees the vote", |t| t.windows[1].client().host_vote().is_some());
    let vote = table.windows[1].client().host_vote().cloned().unwrap();
    assert_eq!((vote.yes, vote.electorate, vote.answer), (1, 2, None));
    assert!(!table.windows[1].client().may_call_change_host(), "one vote at a time");
    assert!(table.windows[1].answer_change_host(true));
    table.until(limit, "the host handing the match off", |t| t.host.as_ref().is_some_and(|h| h.handed_off().is_some()));
    let last_tick = table.host.as_ref().unwrap().host().tick();
    table.until(limit, "one window hosting from the host's last tick, both following it", |t| {
        t.windows.iter().filter(|m| m.promoted.is_some()).count() == 1
            && t.windows.iter().all(|m| m.client().stats().host_epoch == 2)
    });
    let new_host = table.windows.iter().position(|m| m.promoted.is_some()).unwrap();
    let other = 1 - new_host;
    assert_eq!(table.windows[new_host].promoted, Some((last_tick, 2)), "the match went on from the very last tick");
    table.host = None;

    // Now the other one votes the window that hosts away: alone in the electorate (the
    // hosting player votes not), its yes is a majority.
    table.until(limit, "the other window listed as the new host's successor", |t| {
        t.windows[other].client().may_call_change_host() && shadowing(&t.windows[other])
    });
    assert!(!table.windows[new_host].client().may_call_change_host(), "the hosting player does not vote");
    assert!(table.windows[other].call_change_host().is_some());
    table.until(limit, "the other window hosting at epoch 3 and the first one following it", |t| {
        t.windows[other].promoted.is_some_and(|(_, epoch)| epoch == 3)
            && t.windows[new_host].promoted.is_none()
            && t.windows.iter().all(|m| m.client().stats().host_epoch == 3)
    });
    table.plays_on(limit, &ids);
    for (i, m) in table.windows.iter().enumerate() {
        let rewind = m.client().stats().rewind_ms.unwrap_or(0.0);
        assert_eq!(rewind, 0.0, "window {i}: no game time lost to a vote");
    }
}

/// A match (2 bots on the small map) hosted by a node on the in-memory transport `HOST`,
/// with no player of its own.
fn hosting_node() -> vimp_host::engine::node::Node<MemoryTransport> {
    let (host, init) =
        vimp::setup::new_match(&vimp::GAME, &repo("maps/test-small.json"), 2, Default::default(), 9, None)
            .expect("the match builds");
    let config = ServerConfig {
        client_config: vimp_host::tanks::client_config(&init),
        session: vimp_host::engine::server::session_config(&init.game),
        ..ServerConfig::default()
    };
    let server = vimp_host::engine::server::ServerCore::new(host, config);
    vimp_host::engine::node::Node::hosting(vimp::GAME, MemoryTransport::new(HOST), server, None)
}

/// A `Redialer` whose dial takes the transport waiting in `room`, and fails while there is none.
fn dialing_from(room: &std::sync::Arc<std::sync::Mutex<Option<MemoryTransport>>>) -> vimp::setup::Redialer {
    let room = std::sync::Arc::clone(room);
    vimp::setup::Redialer::new(Box::new(move || {
        let fresh = room.lock().expect("the room").take();
        fresh
            .map(|t| Box::new(t) as Box<dyn vimp_netcode::transport::Transport>)
            .ok_or_else(|| anyhow::anyhow!("the room cannot be reached"))
    }))
}

/// A player whose link drops is dialed back in by the `Redialer` the headless client and the
/// window run: at once (here the room cannot be reached yet: the attempt fails), then 2 s
/// later with a fresh transport, back into the same slot with its token. On the match's own
/// clock (no waiting).
#[test]
fn a_dropped_player_is_dialed_back_at_once_then_after_2_s_into_its_slot() {
    use std::sync::{Arc, Mutex};

    use vimp::setup::RedialNote;
    use vimp_host::engine::node::Node;
    use vimp_netcode::client::ClientCore;
    use vimp_netcode::session::Hello;
    use vimp_netcode::transport::Transport;

    let mut host = hosting_node();
    let mut first = MemoryTransport::new(ANN);
    MemoryTransport::connect(&mut first, host.transport_mut(), LinkConfig::default());
    // Ann cannot host: with nobody to take over, her drop ends her session at once.
    let hello = Hello { can_host: false, ..MatchState::hello("ann", None, false) };
    let mut ann: Node<Box<dyn Transport>> =
        Node::playing(vimp::GAME, Box::new(first), ClientCore::new(hello, Default::default()));
    // The room, as the next dial finds it.
    let room: Arc<Mutex<Option<MemoryTransport>>> = Arc::default();
    let mut redialer = dialing_from(&room);
    let (mut now, mut notes) = (Duration::ZERO, Vec::new());
    let mut turn = |host: &mut Node<MemoryTransport>, ann: &mut Node<Box<dyn Transport>>, now: Duration| {
        host.update(now);
        ann.update(now);
        redialer.turn(ann, now)
    };
    while ann.client().and_then(ClientCore::welcome).is_none() {
        now += Duration::from_millis(5);
        notes.extend(turn(&mut host, &mut ann, now));
        assert!(now < Duration::from_secs(5), "ann is welcomed");
    }
    let welcome = ann.client().and_then(ClientCore::welcome).cloned().expect("welcomed");
    ann.transport_mut().disconnect(HOST);
    let mut dropped_at = None;
    while !notes.iter().any(|n| matches!(n, RedialNote::Back { .. })) {
        now += Duration::from_millis(5);
        let new = turn(&mut host, &mut ann, now);
        if dropped_at.is_none() && new.iter().any(|n| matches!(n, RedialNote::Dropped { .. })) {
            dropped_at = Some(now);
        }
        notes.extend(new);
        // A second after the drop the room can be reached again.
        if let Some(at) = dropped_at
            && now >= at + Duration::from_secs(1)
            && room.lock().expect("the room").is_none()
            && !notes.iter().any(|n| matches!(n, RedialNote::Dialing { attempt: 2 }))
        {
            let mut fresh = MemoryTransport::new(PeerKey(13));
            MemoryTransport::connect(&mut fresh, host.transport_mut(), LinkConfig::default());
            *room.lock().expect("the room") = Some(fresh);
        }
        assert!(now < Duration::from_secs(20), "ann is back: {notes:?}");
    }
    let dropped_at = dropped_at.expect("the drop was noticed");
    let dialed: Vec<u8> = notes
        .iter()
        .filter_map(|n| if let RedialNote::Dialing { attempt } = n { Some(*attempt) } else { None })
        .collect();
    assert_eq!(dialed, [1, 2], "{notes:?}");
    assert!(notes.iter().any(|n| matches!(n, RedialNote::Failed { attempt: 1, .. })), "{notes:?}");
    let Some(RedialNote::Back { after, attempt: 2 }) = notes.last() else { panic!("{notes:?}") };
    assert!(*after >= Duration::from_secs(2) && *after < Duration::from_secs(3), "{after:?}");
    assert!(now >= dropped_at + Duration::from_secs(2), "the second attempt waited its 2 s");
    let again = ann.client().and_then(ClientCore::welcome).expect("welcomed again");
    assert!(again.resumed, "her slot was given back");
    assert_eq!(again.player_id, welcome.player_id);
    assert_eq!(redialer.history.len(), 1);
    assert_eq!(redialer.history[0].attempts, 2);
    assert!(redialer.state().is_none(), "the reconnection is over");
}

/// A join whose link to the host came up broken one way (the host never hears its hello and
/// closes it with 4408 before any welcome) is dialed again at once over a fresh transport,
/// and gets in there.
#[test]
fn a_join_the_host_never_heard_is_dialed_again_and_gets_in() {
    use std::sync::{Arc, Mutex};

    use vimp::setup::RedialNote;
    use vimp_host::engine::node::Node;
    use vimp_netcode::client::ClientCore;
    use vimp_netcode::session::{HostSession, HostSessionConfig};
    use vimp_netcode::transport::Transport;

    let mut host = hosting_node();
    // The broken link: the far end is a host session that hears nothing from Ann.
    let mut deaf_end = MemoryTransport::new(PeerKey(20));
    let mut first = MemoryTransport::new(ANN);
    MemoryTransport::connect(&mut first, &mut deaf_end, LinkConfig::default());
    let quick = HostSessionConfig { hello_timeout: Duration::from_millis(100), ..HostSessionConfig::default() };
    let mut deaf = HostSession::new(quick, Duration::ZERO);
    let mut fresh = MemoryTransport::new(PeerKey(13));
    MemoryTransport::connect(&mut fresh, host.transport_mut(), LinkConfig::default());
    let room = Arc::new(Mutex::new(Some(fresh)));
    let mut redialer = dialing_from(&room);
    let hello = MatchState::hello("ann", None, false);
    let mut ann: Node<Box<dyn Transport>> =
        Node::playing(vimp::GAME, Box::new(first), ClientCore::new(hello, Default::default()));
    let (mut now, mut notes) = (Duration::ZERO, Vec::new());
    while ann.client().and_then(ClientCore::welcome).is_none() {
        now += Duration::from_millis(5);
        host.update(now);
        // Whatever Ann says is lost on the way.
        let _ = deaf_end.poll(now);
        deaf.handle_timeout(now);
        while let Some((channel, bytes)) = deaf.poll_transmit() {
            deaf_end.send(now, ANN, channel, bytes);
        }
        ann.update(now);
        notes.extend(redialer.turn(&mut ann, now));
        assert!(now < Duration::from_secs(10), "Ann gets in: {notes:?}");
    }
    assert!(
        matches!(notes.first(), Some(RedialNote::Dropped { code: 4408, .. })),
        "the 4408 before the welcome started it: {notes:?}"
    );
    assert!(matches!(notes.last(), Some(RedialNote::Back { attempt: 1, .. })), "{notes:?}");
    assert!(room.lock().expect("the room").is_none(), "the fresh transport was dialed");
    let welcome = ann.client().and_then(ClientCore::welcome).expect("welcomed");
    assert!(!welcome.resumed, "a first join: no slot to resume");
}
