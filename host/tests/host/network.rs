//! Host and clients over in-memory links with latency: the session protocol end to end.

use std::collections::BTreeMap;
use std::time::Duration;

use vimp_host::engine::server::{Server, ServerConfig};
use vimp_host::prelude::*;
use vimp_host::tanks::GAME;
use vimp_host::tanks::movement::Motion;
use vimp_host::tanks::rows::Rows;
use vimp_host::tanks::tank::Tank;
use vimp_netcode::client::{Client, ClientConfig};
use vimp_netcode::frame::{Channel, op};
use vimp_netcode::input::KeyAction;
use vimp_netcode::link::LinkConfig;
use vimp_netcode::schema::SnapshotSchema;
use vimp_netcode::session::{Hello, PROTOCOL_VERSION, SessionToken, close};
use vimp_netcode::snapshot::{Block, FieldValue, Frame};
use vimp_netcode::transport::{MemoryTransport, PeerKey, Transport};

pub(crate) const HOST: PeerKey = PeerKey(1000);
const STEP: Duration = Duration::from_millis(5);

pub(crate) struct Lan {
    pub(crate) server: Server<MemoryTransport>,
    pub(crate) clients: Vec<Client<MemoryTransport>>,
    pub(crate) now: Duration,
    next_id: u128,
    /// What each client's stat table shows so far ([`Lan::stat_names`]).
    stat_views: BTreeMap<usize, vimp_netcode::meta::StatView>,
}

fn hello(name: &str) -> Hello {
    Hello::new(name, "test")
}

impl Lan {
    pub(crate) fn new(password: Option<&str>) -> Lan {
        Lan::with_maps(password, Vec::new())
    }

    pub(crate) fn with_maps(password: Option<&str>, maps: Vec<vimp_host::engine::map::MapConfig>) -> Lan {
        Lan::with_setup(password, maps, super::SMALL, 1, |_| {})
    }

    /// A host on `map` with `bots` bots and its init config changed by `setup`.
    pub(crate) fn with_setup(
        password: Option<&str>,
        maps: Vec<vimp_host::engine::map::MapConfig>,
        map: &str,
        bots: u8,
        setup: impl FnOnce(&mut InitConfig),
    ) -> Lan {
        let mut config = vimp_host::tanks::init_config(21);
        setup(&mut config);
        let mut host = Host::new(config.clone(), GAME).expect("host");
        host.load_map_json("map", map).expect("map");
        for i in 0..bots {
            host.push(HostCommand::Join { player: PlayerId(i), name: format!("bot{i}"), team: None, bot: true });
        }
        host.step();
        let server_config = ServerConfig {
            password: password.map(str::to_owned),
            client_config: vimp_host::tanks::client_config(&config),
            maps,
            ..ServerConfig::default()
        };
        let server = Server::new(host, MemoryTransport::new(HOST), server_config);
        Lan { server, clients: Vec::new(), now: Duration::ZERO, next_id: 1, stat_views: BTreeMap::new() }
    }

    /// A new client linked to the host (20 ms each way, a little jitter).
    pub(crate) fn join(&mut self, hello: Hello) -> usize {
        let link = LinkConfig::new().latency(Duration::from_millis(20)).jitter(Duration::from_millis(2));
        self.join_over(hello, link)
    }

    /// A new client linked to the host over `link` (its seed set per client).
    pub(crate) fn join_over(&mut self, hello: Hello, link: LinkConfig) -> usize {
        self.join_with(hello, link, ClientConfig::default())
    }

    /// [`Self::join_over`] with the client's settings.
    pub(crate) fn join_with(&mut self, hello: Hello, link: LinkConfig, config: ClientConfig) -> usize {
        let mut t = MemoryTransport::new(PeerKey(self.next_id));
        self.next_id += 1;
        let link = link.seed(self.next_id as u64);
        // The server's transport is inside the server: link through a fresh pair of ends.
        MemoryTransport::connect(&mut t, server_transport(&mut self.server), link);
        self.clients.push(Client::with_config(t, hello, config));
        self.clients.len() - 1
    }

    /// Runs everyone for `d` of simulated time (only the clients in `live`, if given).
    pub(crate) fn run(&mut self, d: Duration, live: Option<&[usize]>) {
        let end = self.now + d;
        while self.now < end {
            self.now += STEP;
            for (i, c) in self.clients.iter_mut().enumerate() {
                if live.is_none_or(|l| l.contains(&i)) {
                    c.update(self.now);
                }
            }
            self.server.update(self.now);
        }
    }

    /// Runs until `done` holds, at most `limit` of simulated time.
    pub(crate) fn run_until(&mut self, limit: Duration, done: impl Fn(&Lan) -> bool) -> bool {
        let end = self.now + limit;
        while self.now < end {
            if done(self) {
                return true;
            }
            self.run(STEP, None);
        }
        done(self)
    }

    /// The names in the first column of the stat table client `i` shows, from every table
    /// update it got so far (its meta taken).
    pub(crate) fn stat_names(&mut self, i: usize) -> Vec<String> {
        use vimp_netcode::meta::{MetaMessage, STAT_DATA, StatValue};
        let mut view = self.stat_views.remove(&i).unwrap_or_default();
        for (port, bytes) in self.clients[i].take_meta() {
            if port == STAT_DATA
                && let Ok(MetaMessage::Stat(update)) = MetaMessage::decode(port, &bytes)
            {
                view.apply(&update);
            }
        }
        let names = view
            .rows
            .values()
            .filter_map(|(_, cells)| match cells.first() {
                Some(StatValue::Text(name)) => Some(name.clone()),
                _ => None,
            })
            .collect();
        self.stat_views.insert(i, view);
        names
    }

    pub(crate) fn tank(&mut self, player: u8) -> Option<Tank> {
        let world = self.server.host_mut().world_mut();
        world.query::<&Tank>().iter(world).find(|t| t.player == PlayerId(player)).cloned()
    }
}

/// The server's own transport, to link new clients to it.
fn server_transport(server: &mut Server<MemoryTransport>) -> &mut MemoryTransport {
    server.transport_mut()
}

#[test]
fn clients_join_play_and_chat() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    let b = lan.join(hello("ann"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    let wa = lan.clients[a].welcome().cloned().expect("welcome");
    let wb = lan.clients[b].welcome().cloned().expect("welcome");
    assert_eq!((wa.nickname.as_str(), wb.nickname.as_str()), ("ann", "ann (2)"), "names are made unique");
    assert_ne!(wa.player_id, wb.player_id);
    assert_ne!(wa.player_id, 0, "the bot's slot is not given away");

    // Two seconds of play: ~30 snapshots a second each; ann drives forward.
    let before = lan.tank(wa.player_id).expect("ann's tank");
    let x0 = lan.server.host().world().resource::<vimp_host::engine::physics::Physics>().world().bodies[before.body]
        .translation();
    let counts: Vec<u64> = lan.clients.iter().map(|c| c.stats().snapshots).collect();
    lan.clients[a].key(KeyAction::Down, "forward").expect("a key of the table");
    lan.run(Duration::from_secs(2), None);
    for (c, n0) in lan.clients.iter().zip(counts) {
        let got = c.stats().snapshots - n0;
        assert!((55..=65).contains(&got), "{got} snapshots in 2 s");
        assert_eq!(c.stats().bad_snapshots, 0);
    }
    let p = lan.clients[a].last_frame().and_then(|f| f.player).expect("ann's player block");
    assert_eq!(Motion::from_state(p.state).throttle, 1.0, "the host applied ann's forward key: full throttle");
    let moved = |lan: &Lan| {
        let p = lan.clients[a]
            .last_frame()
            .and_then(|f| f.player)
            .map(|p| Motion::from_state(p.state))
            .map_or([x0.x, x0.y], |m| [m.x, m.y]);
        ((p[0] - x0.x).powi(2) + (p[1] - x0.y).powi(2)).sqrt()
    };
    assert!(lan.run_until(Duration::from_secs(3), |l| moved(l) > 20.0), "ann's tank drove {} units", moved(&lan));
    assert!(p.last_input_seq >= 1, "the host echoes the applied seq");

    lan.clients[a].say("hi all");
    lan.clients[b].say("  yo  ");
    let user_lines = |c: &Client<MemoryTransport>| c.chat().iter().filter(|l| l.is_array()).count();
    assert!(lan.run_until(Duration::from_secs(1), |l| l.clients.iter().all(|c| user_lines(c) == 2)));
    // System lines of the engine's group s: whoever joined second was announced to the first.
    let joined =
        |c: &Client<MemoryTransport>| c.chat().iter().any(|l| l.as_str().is_some_and(|s| s.starts_with("s:1:ann")));
    assert!(lan.clients.iter().any(joined), "{:?}", lan.clients[a].chat());
    let team_a = lan.tank(wa.player_id).map(|t| t.team).expect("team");
    assert!(lan.clients[b].chat().contains(&serde_json::json!(["hi all", "ann", team_a])));
    assert!(lan.clients[a].chat().iter().any(|l| l[0] == "yo" && l[1] == "ann (2)"));
}

#[test]
fn clients_in_a_full_mesh_find_the_host() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    let b = lan.join(hello("bob"));
    // The mesh links clients to each other too: each says hello to everyone, only the host answers.
    let (left, right) = lan.clients.split_at_mut(b);
    MemoryTransport::connect(left[a].transport_mut(), right[0].transport_mut(), LinkConfig::default());
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    assert!(lan.clients.iter().all(|c| c.closed().is_none()));
    assert_eq!(lan.server.roster().seats().count(), 2);
}

#[test]
fn the_stat_table_reaches_clients_with_names_and_latency() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    lan.run(Duration::from_secs(8), None);
    let stats: Vec<serde_json::Value> = lan.clients[a]
        .take_meta()
        .into_iter()
        .filter(|(port, _)| *port == vimp_netcode::meta::STAT_DATA)
        .map(|(_, bytes)| serde_json::from_slice(&bytes).expect("json"))
        .collect();
    assert!(stats.len() >= 2, "a full table at join, then deltas: {stats:?}");
    let rows: Vec<&serde_json::Value> = stats.iter().flat_map(|s| s[0].as_array().expect("bodies")).collect();
    let ann = rows.iter().rev().find(|r| r[2][0] == "ann").expect("ann's row");
    assert_eq!(ann[1], 0, "table 0");
    let latency = rows.iter().rev().filter(|r| r[2][0] == "ann" || r[0] == ann[0]).find_map(|r| r[2][4].as_u64());
    assert!(latency.is_some_and(|ms| (30..=60).contains(&ms)), "about 40 ms round trip: {latency:?}");
    assert!(rows.iter().any(|r| r[2][0] == "bot0"), "the bot has a row too");
}

#[test]
fn the_panel_comes_whole_then_only_its_changes_and_the_keyset_says_player() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    lan.run(Duration::from_millis(2500), None);
    let meta = lan.clients[a].take_meta();
    let panels: Vec<Vec<String>> = meta
        .iter()
        .filter(|(port, _)| *port == vimp_netcode::meta::PANEL_DATA)
        .map(|(_, bytes)| serde_json::from_slice(bytes).expect("panel json"))
        .collect();
    assert!(panels.len() >= 2, "{panels:?}");
    let first: Vec<&str> = panels[0].iter().map(|e| e.split(':').next().unwrap_or_default()).collect();
    assert_eq!(first, ["t", "h", "w1", "w2", "wa"], "the whole panel first");
    assert!(panels[0].contains(&"h:100".to_owned()) && panels[0].contains(&"wa:w1".to_owned()));
    // Then only what changed: the clock each second, health when the bot hits ann.
    assert!(panels[1..].iter().all(|p| p.len() < 3), "only changed keys: {panels:?}");
    assert!(panels[1..].iter().any(|p| p == &["t:179".to_owned()]), "{panels:?}");
    assert!(meta.iter().any(|(port, bytes)| *port == vimp_netcode::meta::KEYSET_DATA && bytes == b"1"));
}

#[test]
fn a_team_vote_lists_the_teams_and_moves_the_player() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients[a].stats().snapshots > 0));
    let me = lan.clients[a].welcome().map(|w| w.player_id).expect("welcome");
    let team = lan.tank(me).map(|t| t.team).expect("tank");
    lan.clients[a].send_meta(vimp_netcode::meta::VOTE, br#""teams""#);
    let other = 3 - team;
    lan.clients[a].send_meta(vimp_netcode::meta::VOTE, format!(r#"["teams", {other}]"#).as_bytes());
    lan.run(Duration::from_millis(300), None);
    let votes: Vec<serde_json::Value> = lan.clients[a]
        .take_meta()
        .into_iter()
        .filter(|(port, _)| *port == vimp_netcode::meta::VOTE_DATA)
        .map(|(_, b)| serde_json::from_slice(&b).expect("json"))
        .collect();
    assert_eq!(votes, [serde_json::json!({ "name": "teams", "values": [1, 2] })]);
    assert_eq!(lan.tank(me).map(|t| t.team), Some(other), "the game moved ann");
}

#[test]
fn the_map_comes_at_join_and_again_after_clear_at_a_map_change() {
    let arena = vimp_host::engine::map::MapConfig::from_json("default", super::DEFAULT).expect("map");
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients[a].stats().snapshots > 0));
    let maps = |meta: &[(u8, Vec<u8>)]| {
        meta.iter()
            .filter(|(p, _)| *p == vimp_netcode::meta::MAP_DATA)
            .map(|(_, b)| serde_json::from_slice::<serde_json::Value>(b).expect("json")["name"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(maps(&lan.clients[a].take_meta()), [serde_json::json!("Test small")]);
    // Another map: clients clear their canvases and get the new map.
    lan.server.host_mut().load_map(arena).expect("the arena loads");
    lan.run(Duration::from_millis(300), None);
    let meta = lan.clients[a].take_meta();
    let clear = meta.iter().position(|(p, b)| *p == vimp_netcode::meta::CLEAR && b == b"null");
    let again = meta.iter().position(|(p, _)| *p == vimp_netcode::meta::MAP_DATA);
    assert!(clear.is_some() && again.is_some() && clear < again, "CLEAR, then MAP_DATA");
}

#[test]
fn a_full_server_says_so_and_rejects_with_4503() {
    let mut lan = Lan::new(None);
    for i in 0..16 {
        lan.join(hello(&format!("p{i}")));
    }
    // 16 slots: the bot's and 15 players'; the 16th hello to arrive is refused.
    assert!(lan.run_until(Duration::from_secs(3), |l| {
        l.clients.iter().all(|c| c.welcome().is_some() || c.closed().is_some())
    }));
    let refused: Vec<usize> = (0..16).filter(|&i| lan.clients[i].closed().is_some()).collect();
    assert_eq!(refused.len(), 1);
    let loser = &mut lan.clients[refused[0]];
    assert_eq!(loser.closed().map(|c| c.0), Some(close::SERVER_FULL));
    let informs: Vec<(u8, Vec<u8>)> = loser.take_meta();
    assert!(informs.contains(&(vimp_netcode::meta::TECH_INFORM_DATA, b"[0]".to_vec())), "{informs:?}");
    assert_eq!(lan.clients.iter().filter(|c| c.welcome().is_some()).count(), 15);
}

#[test]
fn a_map_vote_passes_with_a_majority_and_loads_the_map() {
    let arena = vimp_host::engine::map::MapConfig::from_json("default", super::DEFAULT).expect("map");
    let mut lan = Lan::with_maps(None, vec![arena]);
    let a = lan.join(hello("ann"));
    let b = lan.join(hello("bob"));
    let c = lan.join(hello("cy"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    lan.clients[a].send_meta(vimp_netcode::meta::VOTE, br#""maps""#);
    lan.clients[a].send_meta(vimp_netcode::meta::VOTE, br#"["maps", "Arena"]"#);
    lan.run(Duration::from_millis(200), None);
    let asked = |m: &[(u8, Vec<u8>)]| {
        m.iter()
            .filter(|(p, _)| *p == vimp_netcode::meta::VOTE_DATA)
            .map(|(_, b)| serde_json::from_slice::<serde_json::Value>(b).expect("json"))
            .collect::<Vec<_>>()
    };
    let votes_a = asked(&lan.clients[a].take_meta());
    assert_eq!(votes_a[0], serde_json::json!({ "name": "maps", "values": ["Test small", "Arena"] }));
    let ask = serde_json::json!({ "name": "mapChange", "params": ["Arena"], "values": ["yes", "no"] });
    assert_eq!(votes_a[1], ask);
    assert_eq!(asked(&lan.clients[b].take_meta()), std::slice::from_ref(&ask));
    // One of three said yes (the proposer): not yet. cy says no; bob's yes makes two of three.
    lan.clients[c].send_meta(vimp_netcode::meta::VOTE, br#"["mapChange", "no"]"#);
    lan.run(Duration::from_millis(200), None);
    let name = |l: &Lan| {
        l.server
            .host()
            .world()
            .resource::<vimp_host::engine::map::state::MapState>()
            .config
            .as_ref()
            .map(|c| c.name.clone())
    };
    assert_eq!(name(&lan).as_deref(), Some("Test small"));
    lan.clients[b].send_meta(vimp_netcode::meta::VOTE, br#"["mapChange", "yes"]"#);
    lan.run(Duration::from_millis(200), None);
    assert_eq!(name(&lan).as_deref(), Some("Arena"));
    assert!(lan.clients[c].chat().contains(&serde_json::json!("v:1:Arena")));
}

#[test]
fn a_spectator_watches_a_player_and_switches_with_next_player() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    let mut watcher = hello("eve");
    watcher.spectator = true;
    let s = lan.join(watcher);
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    let ann = lan.clients[a].welcome().map(|w| w.player_id).expect("ann");
    let w = lan.clients[s].welcome().cloned().expect("eve is welcomed");
    assert!(w.spectator);
    assert!(lan.tank(w.player_id).is_none(), "a spectator gets no tank");
    assert!(lan.clients[s].take_meta().contains(&(vimp_netcode::meta::KEYSET_DATA, b"0".to_vec())));
    // Eve watches the first participant, the bot: her frames carry the bot's player block.
    let watched = |l: &Lan| {
        l.clients[s].last_frame().and_then(|f| f.player).map(|p| Motion::from_state(p.state)).map(|m| (m.x, m.y))
    };
    let tank_at = |l: &mut Lan, id: u8| {
        let t = l.tank(id).expect("tank");
        let b = l.server.host().world().resource::<vimp_host::engine::physics::Physics>().world().bodies[t.body]
            .translation();
        (b.x, b.y)
    };
    lan.run(Duration::from_millis(500), None);
    let (wx, wy) = watched(&lan).expect("eve's frames have a player block");
    let (bx, by) = tank_at(&mut lan, 0);
    assert!((wx - bx).abs() < 50.0 && (wy - by).abs() < 50.0, "eve sees the bot at ({bx}, {by}): ({wx}, {wy})");
    lan.clients[s].key(KeyAction::Down, "nextPlayer").expect("a spectator key");
    lan.run(Duration::from_millis(500), None);
    let (wx, wy) = watched(&lan).expect("player block");
    let (ax, ay) = tank_at(&mut lan, ann);
    assert!((wx - ax).abs() < 50.0 && (wy - ay).abs() < 50.0, "now eve sees ann at ({ax}, {ay}): ({wx}, {wy})");
    assert!(lan.server.host().world().resource::<vimp_host::engine::players::Participants>().0.len() == 2);
}

/// How far apart two values of field `field` of `key` are: the short way round for an angle.
fn gap(schema: &SnapshotSchema, key: u8, field: usize, a: f32, b: f32) -> f32 {
    let f = schema.by_id(key).map(|(_, bs)| &bs.fields[field]);
    let angle = f.is_some_and(|f| {
        f.interp == vimp_netcode::schema::Interp::LerpAngle
            || matches!(f.quant, Some(vimp_netcode::schema::Quant::AngleBits(_)))
    });
    if angle { vimp_netcode::divergence::wrap_angle(a - b).abs() } else { (a - b).abs() }
}

/// The rows of a frame's hot keys by (key, id), live ones only, and its other blocks.
fn hot_rows(
    schema: &SnapshotSchema,
    frame: &Frame,
) -> (BTreeMap<(u8, u32), Vec<FieldValue>>, Vec<(u8, vimp_netcode::snapshot::Block)>) {
    let mut hot = BTreeMap::new();
    let mut other = Vec::new();
    for (key, block) in &frame.blocks {
        let Some((_, bs)) = schema.by_id(*key) else { continue };
        if vimp_netcode::delta::is_delta_coded(bs) {
            for (id, row) in block.entries() {
                if let (Some(id), Some(row)) = (id, row) {
                    hot.insert((*key, id), row.clone());
                }
            }
        } else {
            other.push((*key, block.clone()));
        }
    }
    (hot, other)
}

#[test]
fn delta_frames_over_a_lossy_link_give_the_world_format_5_gives_within_a_quantisation_step() {
    // No byte budget: every change goes in every frame, as in format 5.
    let mut lan = Lan::with_setup(None, Vec::new(), super::SMALL, 1, |c| c.game["snapshotBudget"] = 0.into());
    // 15 % loss, duplicates and reordering on both links.
    let lossy = || {
        LinkConfig::new()
            .latency(Duration::from_millis(30))
            .jitter(Duration::from_millis(12))
            .loss(0.15)
            .duplicate(0.05)
            .reorder(0.1)
    };
    let ann = lan.join_over(hello("ann"), lossy());
    let bob = lan.join_over(Hello { snapshot_formats: Vec::new(), ..hello("bob") }, lossy());
    assert!(lan.run_until(Duration::from_secs(3), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    assert_eq!(lan.clients[ann].welcome().map(|w| w.snapshot_format), Some(6), "ann asked for delta frames");
    assert_eq!(lan.clients[bob].welcome().map(|w| w.snapshot_format), Some(5), "bob's hello names no format");
    lan.clients[ann].key(KeyAction::Down, "forward").expect("a key");
    lan.clients[bob].key(KeyAction::Down, "left").expect("a key");

    // Every frame each one decodes, by seq, over 6 s of play.
    let mut got: [BTreeMap<u32, Frame>; 2] = Default::default();
    for _ in 0..24 {
        lan.run(Duration::from_millis(250), None);
        for (k, i) in [ann, bob].into_iter().enumerate() {
            for f in lan.clients[i].take_frames() {
                got[k].insert(f.seq, f);
            }
        }
    }
    let schema = lan.clients[ann].schema().cloned().expect("the schema");
    let (sa, sb) = (lan.clients[ann].stats().clone(), lan.clients[bob].stats().clone());
    assert_eq!((sa.bad_snapshots, sb.bad_snapshots), (0, 0));
    assert_eq!(sa.delta_frames, sa.snapshots, "every frame ann decoded is a delta frame");
    assert_eq!(sb.delta_frames, 0, "bob gets format 5 only");
    assert!(sa.keyframes < 10, "keyframes only until acknowledgements come: {sa:?}");
    assert!(got[0].len() > 120, "ann decoded most of 180 frames despite the loss: {}", got[0].len());

    // Wherever both have a frame, ann's world is bob's rows, each value within a step.
    let step = |key: u8, field: usize| match schema.by_id(key).and_then(|(_, bs)| bs.fields[field].quant) {
        Some(vimp_netcode::schema::Quant::PerUnit(n)) => 1.0 / n as f32,
        Some(vimp_netcode::schema::Quant::AngleBits(b)) => std::f32::consts::TAU / (1u32 << b) as f32,
        None => 0.01,
    };
    let mut compared = 0;
    for (seq, fb) in &got[1] {
        let Some(fa) = got[0].get(seq) else { continue };
        compared += 1;
        let ((ha, oa), (hb, ob)) = (hot_rows(&schema, fa), hot_rows(&schema, fb));
        assert_eq!(ha.keys().collect::<Vec<_>>(), hb.keys().collect::<Vec<_>>(), "frame {seq}: the same rows");
        for ((key, id), row) in &hb {
            for (f, (a, b)) in ha[&(*key, *id)].iter().zip(row).enumerate() {
                match (a, b) {
                    (FieldValue::F32(a), FieldValue::F32(b)) => {
                        let d = gap(&schema, *key, f, *a, *b);
                        assert!(d <= step(*key, f) + 0.011, "frame {seq} key {key} row {id} field {f}: {a} vs {b}");
                    }
                    _ => assert_eq!(a, b, "frame {seq} key {key} row {id} field {f}"),
                }
            }
        }
        assert_eq!(oa, ob, "frame {seq}: events as format 5 carries them");
        assert_eq!(fa.server_time_ms, fb.server_time_ms);
    }
    assert!(compared > 60, "{compared} frames both decoded");
    // Each client's frames carry its own exact player block.
    let ann_frame = got[0].values().rev().find(|f| f.player.is_some()).expect("ann's player block");
    assert!(ann_frame.player.is_some_and(|p| p.last_input_seq > 0), "ann's key is acknowledged");
    let stats = lan.server.stats();
    assert!(stats.delta_frames_sent > 0 && stats.delta_frames_sent < stats.frames_sent, "{stats:?}");
}

#[test]
fn under_the_byte_budget_rows_lag_but_never_go_back_and_the_own_tank_is_always_current() {
    // A busy match: 10 bots on the default map, everyone in view, over a lossy link, under a
    // budget that binds. Ann looks at her frames as they decode (not carried forward).
    const BUDGET: u32 = 3_000;
    let mut lan = Lan::with_setup(None, Vec::new(), super::DEFAULT, 10, |c| c.game["snapshotBudget"] = BUDGET.into());
    let lossy = || LinkConfig::new().latency(Duration::from_millis(40)).jitter(Duration::from_millis(10)).loss(0.05);
    let decoded = ClientConfig { reckon: false, ..ClientConfig::default() };
    let ann = lan.join_with(hello("ann"), lossy(), decoded);
    let bob = lan.join_over(Hello { snapshot_formats: Vec::new(), ..hello("bob") }, lossy());
    assert!(lan.run_until(Duration::from_secs(3), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    lan.clients[ann].key(KeyAction::Down, "forward").expect("a key");
    lan.clients[ann].key(KeyAction::Down, "left").expect("a key");
    let me = lan.clients[ann].welcome().map(|w| u32::from(w.player_id)).expect("ann");
    let schema = lan.clients[ann].schema().cloned().expect("schema");
    let mut got: [BTreeMap<u32, Frame>; 2] = Default::default();
    let bytes0 = *lan.server.host().world().resource::<vimp_host::engine::snapshot::DeltaStats>();
    let t0 = lan.now;
    for _ in 0..24 {
        lan.run(Duration::from_millis(250), None);
        for (k, i) in [ann, bob].into_iter().enumerate() {
            got[k].extend(lan.clients[i].take_frames().into_iter().map(|f| (f.seq, f)));
        }
    }
    let delta = *lan.server.host().world().resource::<vimp_host::engine::snapshot::DeltaStats>();
    let seconds = (lan.now - t0).as_secs_f64();
    let ann_bytes_per_s = (delta.bytes - bytes0.bytes) as f64 / seconds;
    // Within the coarsest step of the schema (velocities, a tenth) and format 5's rounding.
    let step: f32 = 0.16;
    let close = |key: u8, a: &[FieldValue], b: &[FieldValue]| {
        a.iter().zip(b).enumerate().all(|(f, (a, b))| match (a, b) {
            (FieldValue::F32(a), FieldValue::F32(b)) => gap(&schema, key, f, *a, *b) <= step,
            _ => a == b,
        })
    };
    // Bob's frames are the truth: each row ann holds at frame n is bob's at some frame m ≤ n,
    // and m never goes back from one of ann's frames to the next.
    let mut since: BTreeMap<(u8, u32), u32> = BTreeMap::new();
    let (mut lagging, mut checked) = (0, 0);
    for (seq, fa) in &got[0] {
        let (ha, _) = hot_rows(&schema, fa);
        for ((key, id), row) in &ha {
            let from = since.get(&(*key, *id)).copied().unwrap_or(0);
            // The newest of bob's frames up to this one with ann's value.
            let truth = got[1]
                .range(..=*seq)
                .rev()
                .find(|(_, fb)| hot_rows(&schema, fb).0.get(&(*key, *id)).is_some_and(|b| close(*key, row, b)));
            let Some((&m, _)) = truth else {
                // Bob lost the frames with this value: nothing to compare with.
                continue;
            };
            assert!(m >= from, "frame {seq}: key {key} row {id} went back to frame {m}'s value after frame {from}'s");
            checked += 1;
            if m < *seq && got[1].contains_key(seq) {
                lagging += 1;
            }
            if *key == 1 && *id == me && got[1].contains_key(seq) {
                let now = hot_rows(&schema, &got[1][seq]).0;
                assert!(close(1, row, &now[&(1, me)]), "frame {seq}: ann's own tank is current");
            }
            since.insert((*key, *id), m);
        }
    }
    eprintln!("ann: {ann_bytes_per_s:.0} B/s of delta frames; {checked} rows checked, {lagging} lagging");
    assert!(checked > 1000, "{checked}");
    assert!(lagging > 0, "the budget held some rows back");
    assert!(ann_bytes_per_s < f64::from(BUDGET) * 1.1, "ann's frames keep to the budget: {ann_bytes_per_s:.0} B/s");
}

#[test]
fn a_client_gets_no_row_and_no_event_from_outside_its_view() {
    const DISTANCE: f32 = 300.0;
    let mut lan = Lan::with_setup(None, Vec::new(), super::DEFAULT, 6, |c| c.engine.streaming_distance = DISTANCE);
    let ann = lan.join(hello("ann"));
    let bob = lan.join(Hello { snapshot_formats: Vec::new(), ..hello("bob") });
    assert!(lan.run_until(Duration::from_secs(3), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    lan.clients[ann].key(KeyAction::Down, "forward").expect("a key");
    let me = lan.clients[ann].welcome().map(|w| u32::from(w.player_id)).expect("ann");
    let schema = lan.clients[ann].schema().cloned().expect("schema");
    let place = |key: u8| schema.by_id(key).and_then(|(_, bs)| bs.place());
    let xy = |row: &[FieldValue], i: usize| row[i].as_f32();
    let tank = Rows::of(&schema).expect("the tanks' rows").tanks;
    let (mut checked, mut streamed_out, mut v5_rows, mut v6_rows) = (0, 0, 0, 0);
    let (mut events_ann, mut events_bob) = (0, 0);
    for _ in 0..40 {
        // Ann's own shots happen where she is: she sees them.
        lan.clients[ann].key(KeyAction::Down, "fire").expect("a key");
        lan.run(Duration::from_millis(250), None);
        let frames = lan.clients[ann].take_frames();
        for f in &frames {
            streamed_out += f.streamed_out.len();
            // Ann sees from her tank: its row in her own frame.
            let Some(Block::Indexed8(tanks)) = f.block(1) else { continue };
            let Some(Some(own)) = tanks.iter().find(|(id, _)| u32::from(*id) == me).map(|(_, r)| r.as_ref()) else {
                continue;
            };
            let (ox, oy) = (tank.x.f32(own), tank.y.f32(own));
            let near = |x: f32, y: f32| (x - ox).powi(2) + (y - oy).powi(2) <= (DISTANCE + 1.0).powi(2);
            checked += 1;
            for (key, block) in &f.blocks {
                let Some(place) = place(*key) else { continue };
                for (id, row) in block.entries() {
                    let Some(row) = row else { continue };
                    let seen = place.chunks(2).any(|p| near(xy(row, p[0]), xy(row, p[1])));
                    assert!(
                        seen,
                        "frame {}: key {key} row {id:?} at ({}, {}) is out of ann's view from ({ox}, {oy})",
                        f.seq,
                        xy(row, place[0]),
                        xy(row, place[1])
                    );
                    if schema.by_id(*key).is_some_and(|(_, bs)| bs.class == vimp_netcode::schema::BlockClass::Event) {
                        events_ann += 1;
                    } else {
                        v6_rows += 1;
                    }
                }
            }
        }
        for f in lan.clients[bob].take_frames() {
            for (key, block) in &f.blocks {
                let live = block.entries().filter(|(_, r)| r.is_some()).count();
                match schema.by_id(*key).map(|(_, bs)| bs) {
                    Some(bs) if vimp_netcode::delta::is_delta_coded(bs) => v5_rows += live,
                    Some(bs) if bs.class == vimp_netcode::schema::BlockClass::Event => events_bob += live,
                    _ => {}
                }
            }
        }
    }
    assert!(checked > 200, "{checked} frames checked");
    assert!(streamed_out > 0, "rows left ann's view as she drove");
    assert!(v6_rows * 2 < v5_rows, "ann holds far fewer rows ({v6_rows}) than the whole match bob gets ({v5_rows})");
    eprintln!("{checked} frames: rows {v6_rows} (ann) / {v5_rows} (bob), events {events_ann} / {events_bob}");
    assert!(events_ann > 0 && events_ann < events_bob, "ann gets the events near her only");
}

#[test]
fn a_version_mismatch_is_4410_and_a_wrong_password_4401() {
    let mut lan = Lan::new(Some("sesame"));
    let mut old = hello("old");
    old.version = PROTOCOL_VERSION + 1;
    old.password = Some("sesame".into());
    let v = lan.join(old);
    let p = lan.join(hello("nopass"));
    let w = lan.join(Hello { password: Some("guess".into()), ..hello("guess") });
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.closed().is_some())));
    assert_eq!(lan.clients[v].closed().map(|c| c.0), Some(close::VERSION));
    // No password and a wrong one are told apart.
    let said = |i: usize| lan.clients[i].closed().cloned().expect("closed");
    assert_eq!(said(p), (close::BAD_PASSWORD, "this lobby needs a password: join with it".to_owned()));
    assert_eq!(said(w), (close::BAD_PASSWORD, "wrong lobby password".to_owned()));
    assert_eq!(lan.server.roster().seats().count(), 0);
}

#[test]
fn a_hostile_aim_closes_only_its_sender_and_an_old_hello_is_not_welcomed_to_aim() {
    let mut lan = Lan::new(None);
    let ann = lan.join(hello("ann"));
    let bob = lan.join(Hello { aim: false, ..hello("bob") });
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    assert!(lan.clients[ann].welcome().is_some_and(|w| w.aim));
    assert!(lan.clients[bob].welcome().is_some_and(|w| !w.aim), "a client that did not offer aims is not told of them");
    let now = lan.now;
    assert_eq!(lan.clients[bob].aim(now, vimp_netcode::input::Aim::new(1.0, 2.0, 0)), None, "so it sends none");
    for (x, y) in [(f32::INFINITY, 0.0), (0.0, f32::NAN), (3e9, 0.0)] {
        let mut lan = Lan::new(None);
        let ann = lan.join(hello("ann"));
        let bob = lan.join(hello("bob"));
        assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
        let mut frame = vec![op::client::KEYS_DATA, 1, 0, 0, 0, 50, 0x40];
        frame.extend_from_slice(&x.to_be_bytes());
        frame.extend_from_slice(&y.to_be_bytes());
        frame.push(0);
        let now = lan.now;
        lan.clients[ann].transport_mut().send(now, HOST, Channel::Unreliable, frame);
        lan.run(Duration::from_millis(200), None);
        assert_eq!(lan.clients[ann].closed().map(|c| c.0), Some(close::PROTOCOL), "({x}, {y})");
        assert!(lan.clients[bob].closed().is_none());
        let before = lan.clients[bob].stats().snapshots;
        lan.run(Duration::from_millis(200), None);
        assert!(lan.clients[bob].stats().snapshots > before, "the match goes on");
    }
}

#[test]
fn a_key_event_in_the_spec_s_text_form_is_applied_like_a_binary_one() {
    let mut lan = Lan::new(None);
    let ann = lan.join(hello("ann"));
    let bob = lan.join(hello("bob"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    let player = vimp_host::PlayerId(lan.clients[ann].welcome().expect("welcomed").player_id);
    let keys = |lan: &Lan| {
        let participants = lan.server.host().world().resource::<vimp_host::engine::players::Participants>();
        let p = &participants.0[&player];
        (p.keys.last_input_seq(), p.keys.held())
    };
    let send = |lan: &mut Lan, client: usize, text: &str| {
        let now = lan.now;
        let frame = [&[op::client::KEYS_DATA][..], text.as_bytes()].concat();
        lan.clients[client].transport_mut().send(now, HOST, Channel::Unreliable, frame);
    };
    send(&mut lan, ann, "5:down:forward");
    assert!(lan.run_until(Duration::from_secs(1), |l| keys(l).0 == 5), "{:?}", keys(&lan));
    assert_eq!(keys(&lan).1, 1 << 0, "forward is held");
    // A name the game has no key for is dropped (its seq not consumed); garbage closes with 4400.
    send(&mut lan, ann, "6:down:jump");
    send(&mut lan, ann, "7:up:forward");
    assert!(lan.run_until(Duration::from_secs(1), |l| keys(l).0 == 7));
    assert_eq!(keys(&lan).1, 0, "forward let go");
    send(&mut lan, bob, "8:sideways:forward");
    lan.run(Duration::from_millis(200), None);
    assert_eq!(lan.clients[bob].closed().map(|c| c.0), Some(close::PROTOCOL));
    assert!(lan.clients[ann].closed().is_none());
}

#[test]
fn a_frame_that_cannot_be_packed_is_counted_and_the_next_ones_go() {
    use vimp_host::engine::snapshot::EventRows;
    use vimp_netcode::schema::BlockKind;
    let mut lan = Lan::new(None);
    let ann = lan.join(hello("ann"));
    let bob = lan.join(Hello { snapshot_formats: Vec::new(), ..hello("bob") });
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    assert_eq!(lan.server.stats().pack_errors, 0);
    // The game pushes an event row that does not fit its schema (a game bug): a blast of one
    // byte where the schema has three floats.
    let settings = lan.server.host().world().resource::<vimp_host::engine::sim::EngineSettings>();
    let blasts = settings.schema.id_of("w2e").expect("the blasts' key");
    let bad = Some(vec![FieldValue::U8(1)]);
    lan.server.host_mut().world_mut().resource_mut::<EventRows>().push(blasts, BlockKind::List16, 0, bad);
    lan.run(Duration::from_millis(100), None);
    assert!(lan.server.stats().pack_errors >= 1, "counted: {:?}", lan.server.stats());
    // The match goes on for both formats: the next frames pack.
    let before = [ann, bob].map(|i| lan.clients[i].stats().snapshots);
    lan.run(Duration::from_millis(500), None);
    for (i, n) in [ann, bob].into_iter().zip(before) {
        assert!(lan.clients[i].stats().snapshots > n + 5, "{i}: {n} → {}", lan.clients[i].stats().snapshots);
    }
}

#[test]
fn garbage_closes_only_its_sender_with_4400() {
    let mut lan = Lan::new(None);
    let good = lan.join(hello("good"));
    let bad = lan.join(hello("bad"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    let now = lan.now;
    lan.clients[bad].transport_mut().send(now, HOST, Channel::Reliable, vec![0x99, 0x42, 0x42]);
    lan.run(Duration::from_millis(200), None);
    assert_eq!(lan.clients[bad].closed().map(|c| c.0), Some(close::PROTOCOL));
    let n0 = lan.clients[good].stats().snapshots;
    lan.run(Duration::from_secs(1), None);
    assert!(lan.clients[good].stats().snapshots >= n0 + 25, "the other client keeps playing");
    assert!(lan.clients[good].closed().is_none());
}

#[test]
fn an_oversize_frame_closes_its_sender_with_4400() {
    let mut lan = Lan::new(None);
    let good = lan.join(hello("good"));
    let big = lan.join(hello("big"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    // Five full chunks announce a 327 kB frame: past 256 KiB before it is even whole.
    let data = vec![7u8; vimp_netcode::frame::MAX_CHUNK_DATA];
    let now = lan.now;
    for index in 0..5 {
        let mut message = Vec::new();
        vimp_netcode::frame::Chunk { id: 1, index, count: 5, data: &data }.encode(&mut message);
        lan.clients[big].transport_mut().send(now, HOST, Channel::Reliable, message);
    }
    lan.run(Duration::from_millis(300), None);
    assert_eq!(lan.clients[big].closed().map(|c| c.0), Some(close::PROTOCOL));
    let n0 = lan.clients[good].stats().snapshots;
    lan.run(Duration::from_secs(1), None);
    assert!(lan.clients[good].stats().snapshots >= n0 + 25, "the other client keeps playing");
}

#[test]
fn resume_with_the_token_keeps_the_slot_and_score_and_a_second_connection_takes_over() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients[a].welcome().is_some()));
    lan.run(Duration::from_millis(100), None);
    let w = lan.clients[a].welcome().cloned().expect("welcome");
    {
        let world = lan.server.host_mut().world_mut();
        let mut q = world.query::<&mut Tank>();
        q.iter_mut(world).find(|t| t.player == PlayerId(w.player_id)).expect("tank").score = 5;
    }
    // A second connection with the token while the first is alive: the first is closed with 4409.
    let mut with_token = hello("ann again");
    with_token.resume_token = Some(w.token);
    let b = lan.join(with_token.clone());
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients[b].welcome().is_some()));
    lan.run(Duration::from_millis(200), None);
    assert_eq!(lan.clients[a].closed().map(|c| c.0), Some(close::REPLACED));
    let wb = lan.clients[b].welcome().cloned().expect("welcome");
    assert_eq!((wb.player_id, wb.resumed, wb.nickname.as_str()), (w.player_id, true, "ann"));
    // b goes away without a word (its process died); a third connection resumes the slot.
    lan.clients[b].transport_mut().disconnect(HOST);
    lan.run(Duration::from_secs(3), Some(&[]));
    assert_eq!(lan.server.roster().seat(PlayerId(w.player_id)).map(|s| s.peer.is_none()), Some(true));
    let c = lan.join(with_token);
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients[c].stats().snapshots > 0));
    let wc = lan.clients[c].welcome().cloned().expect("welcome");
    assert_eq!((wc.player_id, wc.resumed), (w.player_id, true));
    assert_eq!(lan.tank(w.player_id).map(|t| t.score), Some(5), "the score survives");
    assert_ne!(SessionToken([0; 16]), wc.token);
    // What the server said of it, in order: the replaced connection is no departure.
    let events: Vec<String> = std::iter::from_fn(|| lan.server.poll_event()).map(|e| e.to_string()).collect();
    assert_eq!(events, ["ann joined", "ann is back", "ann left", "ann is back"]);
}

#[test]
fn a_player_who_leaves_gives_the_slot_up_at_once_and_one_who_drops_keeps_it() {
    let mut lan = Lan::new(None);
    let ann = lan.join(hello("ann"));
    let bob = lan.join(hello("bob"));
    let cy = lan.join(hello("cy"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.stats().snapshots > 0)));
    let id = |lan: &Lan, i: usize| lan.clients[i].welcome().map(|w| w.player_id).expect("welcomed");
    let (ann_id, bob_id) = (id(&lan, ann), id(&lan, bob));
    let ann_token = lan.clients[ann].welcome().map(|w| w.token).expect("welcomed");
    // ann leaves (the window's Leave, a quit: a normal close); bob's link drops.
    let now = lan.now;
    lan.clients[ann].leave(now);
    lan.clients[bob].transport_mut().disconnect(HOST);
    lan.run(Duration::from_millis(100), Some(&[cy]));
    assert!(lan.server.roster().seat(PlayerId(ann_id)).is_none(), "ann's slot is free at once");
    assert!(lan.tank(ann_id).is_none(), "and her tank gone");
    let bob_seat = lan.server.roster().seat(PlayerId(bob_id)).map(|s| s.peer.is_none());
    assert_eq!(bob_seat, Some(true), "bob's slot waits for him");
    assert!(lan.tank(bob_id).is_some(), "his tank too");
    // cy's table says so within a stat round, and ann's token is worthless now.
    lan.run(Duration::from_millis(600), Some(&[cy]));
    let names: Vec<String> = lan.stat_names(cy);
    assert!(!names.contains(&"ann".to_owned()) && names.contains(&"bob".to_owned()), "{names:?}");
    let back = lan.join(Hello { resume_token: Some(ann_token), ..hello("ann") });
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients[back].welcome().is_some()));
    assert_eq!(lan.clients[back].welcome().map(|w| w.resumed), Some(false), "a newcomer");
    let events: Vec<String> = std::iter::from_fn(|| lan.server.poll_event()).map(|e| e.to_string()).collect();
    assert!(events.contains(&"ann left".to_owned()) && events.contains(&"bob left".to_owned()), "{events:?}");
}

#[test]
fn a_player_back_with_its_token_gets_the_chat_said_while_it_was_away() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    let b = lan.join(hello("bob"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.welcome().is_some())));
    lan.clients[b].say("before");
    lan.run(Duration::from_millis(300), None);
    let token = lan.clients[a].welcome().map(|w| w.token).expect("welcome");
    // ann's process dies; bob goes on talking.
    lan.clients[a].transport_mut().disconnect(HOST);
    lan.run(Duration::from_secs(1), Some(&[b]));
    lan.clients[b].say("while you were away");
    lan.run(Duration::from_millis(300), Some(&[b]));
    let back = lan.join(Hello { resume_token: Some(token), ..hello("ann") });
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients[back].welcome().is_some_and(|w| w.resumed)));
    lan.run(Duration::from_millis(300), None);
    let said = |c: &Client<MemoryTransport>| -> Vec<String> {
        c.chat().iter().filter_map(|l| l[0].as_str().filter(|_| l[1] == "bob").map(str::to_owned)).collect()
    };
    assert_eq!(said(&lan.clients[back]), ["before", "while you were away"], "{:?}", lan.clients[back].chat());
    assert_eq!(said(&lan.clients[b]), ["before", "while you were away"], "bob hears nothing twice");
}

#[test]
fn a_client_that_stops_answering_is_kicked_with_4004() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("quiet"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients[a].welcome().is_some()));
    // The client's process hangs: nothing answers the pings any more. The fifth missed in a
    // row, 3 s apart, comes within 3 + 5 × 3 s of the last answer; not before 12 s.
    lan.run(Duration::from_secs(12), Some(&[]));
    assert_eq!(lan.server.peer_count(), 1, "not kicked before five pings went unanswered");
    let deadline = lan.now + Duration::from_secs(8);
    while lan.server.peer_count() > 0 && lan.now < deadline {
        lan.run(Duration::from_millis(100), Some(&[]));
    }
    assert_eq!(lan.server.peer_count(), 0);
    assert_eq!(lan.server.stats().kicked, 1);
    lan.run(Duration::from_millis(100), None);
    assert_eq!(lan.clients[a].closed().map(|c| c.0), Some(close::MISSED_PINGS));
}

#[test]
fn a_chat_flood_is_closed_with_4413() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("loud"));
    assert!(lan.run_until(Duration::from_secs(2), |l| l.clients[a].welcome().is_some()));
    for i in 0..40 {
        lan.clients[a].say(&format!("spam {i}"));
    }
    lan.run(Duration::from_millis(300), None);
    assert_eq!(lan.clients[a].closed().map(|c| c.0), Some(close::RATE));
}

/// A server core and a client core with nothing between them, linked at time zero: the
/// test hands each one's transmits to the other as messages ([`Cores::exchange`]).
struct Cores {
    server: vimp_host::engine::server::ServerCore,
    client: vimp_netcode::client::ClientCore,
}

/// The server core's key, as the client core knows it.
const CORE_HOST: PeerKey = PeerKey(1);
/// The client core's key, as the server core knows it.
const CORE_ANN: PeerKey = PeerKey(2);

impl Cores {
    fn new(seed: u64) -> Cores {
        use vimp_netcode::transport::TransportEvent;
        let config = vimp_host::tanks::init_config(seed);
        let mut host = Host::new(config.clone(), GAME).expect("host");
        host.load_map_json("small", super::SMALL).expect("map");
        let server_config =
            ServerConfig { client_config: vimp_host::tanks::client_config(&config), ..ServerConfig::default() };
        let mut server = vimp_host::engine::server::ServerCore::new(host, server_config);
        let mut client = vimp_netcode::client::ClientCore::new(hello("ann"), Default::default());
        client.set_local_id(Some(CORE_ANN));
        server.handle(Duration::ZERO, TransportEvent::Connected(CORE_ANN));
        client.handle(Duration::ZERO, TransportEvent::Connected(CORE_HOST));
        Cores { server, client }
    }

    /// Hands what each side has to send to the other, arriving at `now`; whether anything moved.
    fn exchange(&mut self, now: Duration) -> bool {
        use vimp_netcode::transport::TransportEvent;
        let mut moved = false;
        while let Some((to, channel, bytes)) = self.client.poll_transmit() {
            assert_eq!(to, CORE_HOST, "the client speaks to its only peer");
            self.server.handle(now, TransportEvent::Message { peer: CORE_ANN, channel, bytes });
            moved = true;
        }
        while let Some((to, channel, bytes)) = self.server.poll_transmit() {
            assert_eq!(to, CORE_ANN, "the server speaks to its only peer");
            self.client.handle(now, TransportEvent::Message { peer: CORE_HOST, channel, bytes });
            moved = true;
        }
        moved
    }
}

/// The client and the server as cores, with no transport at all: the client is welcomed,
/// configured and fed snapshots as over any link.
#[test]
fn a_client_core_joins_a_server_core_with_nothing_between_them() {
    use vimp_netcode::client::ClientChange;

    let mut cores = Cores::new(5);
    let mut now = Duration::ZERO;
    for _ in 0..400 {
        now += STEP;
        cores.client.handle_timeout(now);
        cores.server.handle_timeout(now);
        cores.exchange(now);
        if cores.client.stats().snapshots >= 10 {
            break;
        }
    }
    let Cores { server, mut client } = cores;
    let welcome = client.welcome().expect("welcomed");
    assert!(client.config().is_some(), "the client config came");
    assert!(client.stats().snapshots >= 10, "{:?}", client.stats());
    assert_eq!(server.roster().seat(PlayerId(welcome.player_id)).and_then(|s| s.peer), Some(CORE_ANN));
    let (player_id, nickname) = (welcome.player_id, welcome.nickname.clone());
    let changes: Vec<ClientChange> = std::iter::from_fn(|| client.poll_event()).collect();
    assert_eq!(changes, [ClientChange::Linked { peers: 1 }, ClientChange::Welcomed { player_id, nickname }]);
}

/// The two cores run only when their `poll_timeout` says (or when the other sent something):
/// the match still ticks on time (snapshots at 30 Hz), pings keep the session alive, and
/// nobody times anybody out.
#[test]
fn cores_woken_only_at_their_poll_timeout_keep_the_match_going() {
    let mut cores = Cores::new(6);
    let mut now = Duration::ZERO;
    let mut turns = 0;
    let mut welcomed_at = None;
    while now < Duration::from_secs(12) {
        // Messages arrive at once; each side runs again right after what it got.
        loop {
            cores.client.handle_timeout(now);
            cores.server.handle_timeout(now);
            if !cores.exchange(now) {
                break;
            }
        }
        if welcomed_at.is_none() && cores.client.welcome().is_some() {
            welcomed_at = Some((now, cores.client.stats().snapshots));
        }
        let next = [cores.client.poll_timeout(), cores.server.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .expect("something pending");
        assert!(next >= now, "a timeout in the past: {next:?} at {now:?}");
        now = next.max(now + Duration::from_micros(1));
        turns += 1;
    }
    let (since, snapshots_then) = welcomed_at.expect("welcomed");
    let seconds = (now - since).as_secs_f64();
    let snapshots = cores.client.stats().snapshots - snapshots_then;
    println!("{turns} turns, {snapshots} snapshots in {seconds:.1} s");
    assert!(snapshots as f64 >= 29.0 * seconds, "snapshots on time: {snapshots} in {seconds:.1} s");
    assert!(!cores.client.host_lost() && cores.client.closed().is_none(), "{:?}", cores.client.closed());
    assert_eq!(cores.server.peer_count(), 1, "the server kept its session");
    // Far fewer turns than a 1 ms loop's 12,000: the cores sleep between ticks.
    assert!(turns < 4000, "{turns} turns");
}

/// A hosting node's own player (the window's) plays through its own server with nothing
/// between them: welcomed, fed snapshots, its keys drive its tank, the host known by the
/// node's own mesh key — and it is never a successor, while a friend on a link is.
#[test]
fn a_hosting_nodes_own_player_plays_with_no_link_between_them_and_is_never_a_successor() {
    use vimp_host::engine::node::{Node, progress};
    use vimp_host::engine::server::ServerCore;
    use vimp_netcode::client::{ClientConfig, ClientCore};
    let config = vimp_host::tanks::init_config(21);
    let mut host = Host::new(config.clone(), GAME).expect("host");
    host.load_map_json("small", super::SMALL).expect("map");
    host.step();
    let server_config =
        ServerConfig { client_config: vimp_host::tanks::client_config(&config), ..ServerConfig::default() };
    let (me, friend) = (PeerKey(7), PeerKey(8));
    let mut own = MemoryTransport::new(me);
    let mut theirs = MemoryTransport::new(friend);
    let link = LinkConfig::new().latency(Duration::from_millis(20)).seed(3);
    MemoryTransport::connect(&mut own, &mut theirs, link);
    let player = |name: &str| ClientCore::new(hello(name), ClientConfig::default());
    let mut nodes = vec![
        Node::hosting(GAME, own, ServerCore::new(host, server_config), Some(player("me"))),
        Node::playing(GAME, theirs, player("friend")),
    ];
    let mut now = Duration::ZERO;
    let mut run =
        |nodes: &mut Vec<Node<MemoryTransport>>, d: Duration, done: &dyn Fn(&[Node<MemoryTransport>]) -> bool| {
            let end = now + d;
            while now < end && !done(nodes) {
                now += STEP;
                progress(nodes, now);
            }
            done(nodes)
        };
    let welcomed = |n: &[Node<MemoryTransport>]| {
        n.iter().all(|n| n.client().is_some_and(|c| c.welcome().is_some() && c.stats().snapshots > 30))
    };
    assert!(run(&mut nodes, Duration::from_secs(5), &welcomed), "both players in, with frames");
    let own_player = nodes[0].client().expect("a player");
    assert_eq!(own_player.host_peer(), Some(me), "its host is its own node, under the node's key");
    let id = PlayerId(own_player.welcome().expect("welcomed").player_id);
    let participants =
        nodes[0].server().expect("hosting").host().world().resource::<vimp_host::engine::players::Participants>();
    assert!(participants.0.contains_key(&id), "the own player is a participant of the match");
    nodes[0].client_mut().expect("a player").key(KeyAction::Down, "forward");
    let moved_from = nodes[0].client().and_then(|c| c.last_frame()).and_then(|f| f.player).map(|p| p.state);
    assert!(
        run(&mut nodes, Duration::from_secs(2), &|n| {
            let now_at = n[0].client().and_then(|c| c.last_frame()).and_then(|f| f.player).map(|p| p.state);
            matches!((moved_from, now_at), (Some(a), Some(b)) if (a[0] - b[0]).hypot(a[1] - b[1]) > 20.0)
        }),
        "its keys reach its server: the tank drove off"
    );
    let listed = |n: &[Node<MemoryTransport>]| n[0].server().is_some_and(|s| !s.succession().is_empty());
    assert!(run(&mut nodes, Duration::from_secs(10), &listed), "a succession list");
    let server = nodes[0].server().expect("hosting");
    assert_eq!(server.succession(), [friend], "the friend only");
    assert_eq!(server.local_peers(), [me]);
    let friend_list = nodes[1].client().and_then(|c| c.succession()).map(|s| s.peers.clone());
    assert_eq!(friend_list, Some(vec![friend]), "the friend has the list too");
}

/// A hello frame from `name`, as its session sends it.
fn hello_frame(name: &str) -> Vec<u8> {
    use vimp_netcode::session::{ClientSession, ClientSessionConfig};
    let mut session = ClientSession::new(ClientSessionConfig::new(hello(name)), Duration::ZERO);
    session.poll_transmit().expect("a hello").1
}

/// What a peer may send the host: its hello, or an opcode either end may send with any payload.
fn peer_frame() -> impl proptest::strategy::Strategy<Value = (u128, bool, Vec<u8>)> {
    use proptest::prelude::*;
    let opcode = prop_oneof![any::<u8>(), 0u8..=18, 32u8..=51, Just(op::CHUNK)];
    let bytes = prop_oneof![
        1 => (0usize..3).prop_map(|i| hello_frame(["ann", "bob", "cy"][i])),
        8 => (opcode, proptest::collection::vec(any::<u8>(), 0..48)).prop_map(|(opcode, tail)| {
            let mut bytes = vec![opcode];
            bytes.extend(tail);
            bytes
        }),
    ];
    (1u128..=4, any::<bool>(), bytes)
}

thread_local! {
    /// One match for every case of the fuzz below (each case goes on from the state the last
    /// left), with one honest player who must keep playing.
    static FUZZED: std::cell::RefCell<Option<Lan>> = const { std::cell::RefCell::new(None) };
}

proptest::proptest! {
    #![proptest_config(super::cases(32))]

    /// Whatever any peer of the room sends the host, in any order (hellos, frames of every
    /// opcode with any payload, links opening and dropping), the host never panics and its
    /// honest player keeps getting frames. `PROPTEST_CASES=100000` for a long run.
    #[test]
    fn random_frames_from_any_peer_never_panic_the_host(frames in proptest::collection::vec(peer_frame(), 1..24)) {
        use vimp_netcode::transport::TransportEvent;
        FUZZED.with(|cell| {
            let mut cell = cell.borrow_mut();
            let lan = cell.get_or_insert_with(|| {
                let mut lan = Lan::new(None);
                lan.join(hello("honest"));
                assert!(lan.run_until(Duration::from_secs(2), |l| l.clients[0].stats().snapshots > 0));
                lan
            });
            let before = lan.clients[0].stats().snapshots;
            for (peer, reliable, bytes) in frames {
                let peer = PeerKey(5000 + peer);
                let channel = if reliable { Channel::Reliable } else { Channel::Unreliable };
                let now = lan.now;
                let core: &mut vimp_host::engine::server::ServerCore = &mut lan.server;
                core.handle(now, TransportEvent::Connected(peer));
                core.handle(now, TransportEvent::Message { peer, channel, bytes });
                if peer == PeerKey(5004) {
                    core.handle(now, TransportEvent::Disconnected(peer));
                }
                lan.run(STEP, None);
            }
            lan.run(Duration::from_millis(100), None);
            proptest::prop_assert!(lan.clients[0].closed().is_none(), "{:?}", lan.clients[0].closed());
            proptest::prop_assert!(lan.clients[0].stats().snapshots > before, "the honest player gets frames");
            Ok(())
        })?;
    }
}
