//! The host as a whole: determinism, dumps that continue bit-identically, map loads, frames.

use vimp_host::engine::mapstate::{MapLoadError, MapState};
use vimp_host::engine::nav::Nav;
use vimp_host::engine::snapshot::{EventRows, FrameReceivers};
use vimp_host::prelude::*;
use vimp_host::tanks::bots::{Bot, BotSkill, Mode};
use vimp_host::tanks::figures::BotFigures;
use vimp_host::tanks::tank::Tank;
use vimp_host::tanks::weapons::Bomb;
use vimp_netcode::input::{InputEvent, KeyAction};
use vimp_netcode::schema::SnapshotSchema;
use vimp_netcode::snapshot::{Block, unpack};

const SMALL: &str = include_str!("../../maps/test-small.json");
const DEFAULT: &str = include_str!("../../maps/default.json");
const ROOMS: &str = include_str!("../../maps/rooms.json");

fn host(seed: u64, map: &str, bots: u8) -> Host {
    let mut host = Host::new(vimp_host::tanks::init_config(seed), TanksPlugin).expect("host");
    host.load_map_json("map", map).expect("the map loads");
    for i in 0..bots {
        host.push(HostCommand::Join { player: PlayerId(i), name: format!("bot{i}"), team: None, bot: true });
    }
    host
}

/// A human player's scripted keys: the same on every host that receives them.
fn script(tick: u32, seq: &mut u32) -> Vec<HostCommand> {
    let player = PlayerId(200);
    let key = |seq: &mut u32, action, name: &str| {
        *seq += 1;
        HostCommand::Input { player, event: InputEvent { seq: *seq, action, name: name.into() } }
    };
    match tick % 240 {
        0 => vec![key(seq, KeyAction::Down, "forward"), key(seq, KeyAction::Down, "gunLeft")],
        60 => vec![key(seq, KeyAction::Down, "left"), key(seq, KeyAction::Down, "fire")],
        90 => vec![
            key(seq, KeyAction::Up, "left"),
            key(seq, KeyAction::Up, "gunLeft"),
            key(seq, KeyAction::Down, "nextWeapon"),
        ],
        120 => vec![
            key(seq, KeyAction::Up, "forward"),
            key(seq, KeyAction::Down, "back"),
            key(seq, KeyAction::Down, "fire"),
        ],
        200 => vec![key(seq, KeyAction::Up, "back"), key(seq, KeyAction::Down, "right")],
        230 => vec![key(seq, KeyAction::Up, "right")],
        _ => vec![],
    }
}

fn has_bomb(host: &mut Host) -> bool {
    host.world_mut().query::<&Bomb>().iter(host.world()).next().is_some()
}

fn has_pending_blast(host: &mut Host) -> bool {
    host.world().resource::<EventRows>().0.contains_key(&vimp_host::tanks::rows::key::BLASTS)
}

fn has_dead_tank(host: &mut Host) -> bool {
    host.world_mut().query::<&Tank>().iter(host.world()).any(|t| !t.alive)
}

fn bots(host: &mut Host) -> Vec<Bot> {
    host.world_mut().query::<&Bot>().iter(host.world()).cloned().collect()
}

#[test]
fn a_dump_restored_into_a_fresh_host_continues_bit_identically() {
    const TICKS: u32 = 1200;
    let mut original = host(11, SMALL, 8);
    original.push(HostCommand::Join { player: PlayerId(200), name: "human".into(), team: None, bot: false });
    let mut seq = 0;
    // Dump points: fixed ticks, plus the first tick with a bomb in flight, the first right after a
    // blast (its row not sent yet) and the first with a dead tank.
    let mut dumps: Vec<(u32, &str, Vec<u8>)> = Vec::new();
    let mut twins: Vec<(u32, &str, Host)> = Vec::new();
    let (mut saw_bomb, mut saw_blast, mut saw_dead) = (false, false, false);
    let (mut saw_fight, mut saw_route, mut saw_unstick) = (false, false, false);
    let mut hashes_checked = 0;
    for _ in 0..TICKS {
        let tick = original.tick();
        let inputs = script(tick, &mut seq);
        for c in &inputs {
            original.push(c.clone());
        }
        for (_, _, twin) in &mut twins {
            for c in &inputs {
                twin.push(c.clone());
            }
        }
        original.step();
        for (_, _, twin) in &mut twins {
            twin.step();
        }
        let tick = original.tick();
        let bytes = original.serialize_state().expect("dump");
        for (at, why, twin) in &mut twins {
            let twin_bytes = twin.serialize_state().expect("dump");
            assert!(
                twin_bytes == bytes,
                "restored at tick {at} ({why}): the state differs at tick {tick} ({} vs {} bytes)",
                twin_bytes.len(),
                bytes.len()
            );
            hashes_checked += 1;
        }
        let mut why = None;
        if [1, 100, 480].contains(&tick) {
            why = Some("fixed tick");
        } else if !saw_bomb && has_bomb(&mut original) {
            saw_bomb = true;
            why = Some("bomb in flight");
        } else if !saw_blast && has_pending_blast(&mut original) {
            saw_blast = true;
            why = Some("blast not yet sent");
        } else if !saw_dead && has_dead_tank(&mut original) {
            saw_dead = true;
            why = Some("tank waiting to respawn");
        } else if !saw_route && bots(&mut original).iter().any(|b| b.route.len() >= 3 && b.progress.1 > 0.0) {
            saw_route = true;
            why = Some("a bot half way along a leg of its route");
        } else if !saw_fight && bots(&mut original).iter().any(|b| b.mode == Mode::Fight && b.in_sight) {
            saw_fight = true;
            why = Some("a bot fighting an enemy in sight");
        } else if !saw_unstick && bots(&mut original).iter().any(|b| b.unstick.seconds > 0.0) {
            saw_unstick = true;
            why = Some("a bot backing out of a stall");
        }
        if let Some(why) = why {
            dumps.push((tick, why, bytes.clone()));
            let twin = Host::restore(vimp_host::tanks::init_config(11), TanksPlugin, &bytes).expect("restore");
            twins.push((tick, why, twin));
        }
    }
    assert!(saw_bomb, "the match had a bomb in flight");
    assert!(saw_dead, "the match had a dead tank");
    assert!(saw_blast, "the match had a blast");
    assert!(saw_route && saw_fight, "bots followed routes and fought");
    assert!(dumps.len() >= 8, "dumped at {} points", dumps.len());
    assert!(hashes_checked > 2000, "compared {hashes_checked} states");
    // The state hash agrees too, and debug views are identical.
    for (_, _, twin) in &mut twins {
        assert_eq!(twin.state_hash().expect("hash"), original.state_hash().expect("hash"));
        assert_eq!(twin.debug_json(), original.debug_json());
    }
}

#[test]
fn same_seed_same_match_other_seed_other_match() {
    let run = |seed| {
        let mut h = host(seed, SMALL, 4);
        for _ in 0..600 {
            h.step();
        }
        h.state_hash().expect("hash")
    };
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
}

#[test]
fn an_invalid_map_leaves_the_old_one() {
    let mut h = host(1, SMALL, 2);
    h.step();
    let before = h.world().resource::<MapState>().config.as_ref().map(|c| c.name.clone());
    let err = h.load_map_json("broken.json", r#"{ "name": "x", "tileSize": 32, "map": [] }"#).expect_err("invalid");
    assert!(matches!(err, MapLoadError::Invalid(_)), "{err}");
    assert!(err.to_string().contains("broken.json"), "{err}");
    let after = h.world().resource::<MapState>().config.as_ref().map(|c| c.name.clone());
    assert_eq!(before, after);
    assert!(before.is_some());
}

#[test]
fn a_map_the_game_refuses_leaves_no_map() {
    let mut h = host(1, SMALL, 2);
    let mut map: serde_json::Value = serde_json::from_str(SMALL).expect("json");
    map["respawns"].as_object_mut().expect("respawns").shift_remove("2");
    let err = h.load_map_json("one-team.json", &map.to_string()).expect_err("the game needs both teams");
    assert!(matches!(err, MapLoadError::Hook(_)), "{err}");
    let state = h.world().resource::<MapState>();
    assert!(state.map.is_none() && state.body_state.is_empty(), "no map is left");
    // Only the tanks' bodies remain in the world.
    let bodies = h.world().resource::<vimp_host::engine::physics::Physics>().world().bodies.len();
    assert_eq!(bodies, 0, "the tanks join on the next tick; nothing of either map remains");
}

#[test]
fn frames_decode_with_the_tanks_schema() {
    let mut h = host(2, DEFAULT, 6);
    h.world_mut().insert_resource(FrameReceivers([PlayerId(0), PlayerId(3)].into_iter().collect()));
    let schema = SnapshotSchema::from_json(vimp_host::tanks::rows::SCHEMA_JSON).expect("schema");
    let mut frames = Vec::new();
    for _ in 0..8 {
        h.step();
        let out = h.take_frames();
        frames.extend(out.frames);
    }
    assert_eq!(frames.len(), 4, "two snapshot ticks in 8, two receivers each");
    for (receiver, bytes) in &frames {
        let frame = unpack(&schema, bytes).expect("decodes");
        let tanks = match frame.block(1) {
            Some(Block::Indexed8(rows)) => rows.len(),
            other => panic!("m1 block: {other:?}"),
        };
        assert_eq!(tanks, 6);
        let crates = match frame.block(5) {
            Some(Block::IndexedNoNull8(rows)) => rows.len(),
            other => panic!("c1 block: {other:?}"),
        };
        assert!(crates >= 30, "{crates} crates");
        assert!(frame.player.is_some(), "receiver {receiver:?} gets its player block");
    }
    assert_eq!(frames[0].1[1..5], 1u32.to_be_bytes(), "the first frame has seq 1");
}

/// A second, tiny game — pucks pushed by one key — proves the engine needs nothing of tanks:
/// its own schema, its own rows, its own dump hooks.
mod pucks {
    use bevy::prelude::*;
    use rapier2d::prelude::*;
    use serde::{Deserialize, Serialize};
    use vimp_host::engine::config::InitConfig;
    use vimp_host::engine::physics::Physics;
    use vimp_host::engine::players::{Participants, PlayerId, PlayerKeys, TickEvents};
    use vimp_host::engine::snapshot::{RowsSystems, SnapshotRows};
    use vimp_host::engine::state::GameHooks;
    use vimp_host::engine::tags::encode_tag;
    use vimp_host::{HostSystems, HostTick};
    use vimp_netcode::input::KeyTable;
    use vimp_netcode::snapshot::{Block, FieldValue};

    #[derive(Component, Clone, Serialize, Deserialize)]
    pub(crate) struct Puck {
        pub(crate) player: PlayerId,
        pub(crate) body: RigidBodyHandle,
        pub(crate) pushes: u32,
    }

    pub(crate) struct PucksPlugin;

    pub(crate) fn config() -> InitConfig {
        let mut c = InitConfig::default();
        c.engine.snapshot = serde_json::from_str(
            r#"{ "keys": {
                "p": { "id": 1, "kind": "indexed8", "class": "hot", "fields": [
                    { "name": "x", "ty": "f32", "interp": "lerp" }, { "name": "y", "ty": "f32", "interp": "lerp" },
                    { "name": "pushes", "ty": "u32" } ] },
                "c1": { "id": 2, "kind": "indexedNoNull8", "class": "hot", "fields": [
                    { "name": "x", "ty": "f32" }, { "name": "y", "ty": "f32" }, { "name": "angle", "ty": "f32" } ] } } }"#,
        )
        .expect("schema");
        c.engine.seed = Some(3);
        c
    }

    impl Plugin for PucksPlugin {
        fn build(&self, app: &mut App) {
            let keys = KeyTable::from_json(r#"{ "push": { "bit": 0, "type": 0 } }"#).expect("keys");
            app.insert_resource(PlayerKeys(keys)).insert_resource(GameHooks {
                save: |w| {
                    let mut p: Vec<Puck> = w.query::<&Puck>().iter(w).cloned().collect();
                    p.sort_by_key(|p| p.player);
                    serde_json::to_vec(&p).map_err(|e| e.to_string())
                },
                load: |w, bytes| {
                    for p in serde_json::from_slice::<Vec<Puck>>(bytes).map_err(|e| e.to_string())? {
                        w.spawn(p);
                    }
                    Ok(())
                },
                ..GameHooks::default()
            });
            app.add_systems(HostTick, (spawn, push).chain().in_set(HostSystems::Game))
                .add_systems(HostTick, rows.in_set(HostSystems::Snapshot).in_set(RowsSystems));
        }
    }

    fn spawn(mut commands: Commands, events: Res<TickEvents>, mut physics: ResMut<Physics>) {
        for player in &events.joined {
            let body = RigidBodyBuilder::dynamic()
                .translation(Vector::new(100.0 + 40.0 * player.0 as f32, 100.0))
                .user_data(encode_tag(2, player.0 as u64));
            let (body, _) = physics.insert(body, ColliderBuilder::ball(10.0));
            commands.spawn(Puck { player: *player, body, pushes: 0 });
        }
    }

    fn push(participants: Res<Participants>, mut physics: ResMut<Physics>, mut pucks: Query<&mut Puck>) {
        let mut list: Vec<Mut<Puck>> = pucks.iter_mut().collect();
        list.sort_by_key(|p| p.player);
        for mut puck in list {
            if participants.0.get(&puck.player).is_some_and(|p| p.bits.is_held(0)) {
                puck.pushes += 1;
                if let Some(b) = physics.world_mut().bodies.get_mut(puck.body) {
                    b.apply_impulse(Vector::new(50.0, 10.0), true);
                }
            }
        }
    }

    fn rows(physics: Res<Physics>, pucks: Query<&Puck>, mut rows: ResMut<SnapshotRows>) {
        let mut list: Vec<&Puck> = pucks.iter().collect();
        list.sort_by_key(|p| p.player);
        let block = list
            .into_iter()
            .map(|p| {
                let t = physics.world().bodies[p.body].translation();
                (p.player.0, Some(vec![FieldValue::F32(t.x), FieldValue::F32(t.y), FieldValue::U32(p.pushes)]))
            })
            .collect();
        rows.blocks.push((1, Block::Indexed8(block)));
    }
}

#[test]
fn a_second_game_runs_and_dumps_on_the_same_engine() {
    let mut a = Host::new(pucks::config(), pucks::PucksPlugin).expect("host");
    a.load_map_json("small", SMALL).expect("map");
    a.world_mut().insert_resource(FrameReceivers([PlayerId(0)].into_iter().collect()));
    a.push(HostCommand::Join { player: PlayerId(0), name: "p".into(), team: None, bot: false });
    a.push(HostCommand::Join { player: PlayerId(1), name: "q".into(), team: None, bot: false });
    let down = |seq| HostCommand::Input {
        player: PlayerId(0),
        event: InputEvent { seq, action: KeyAction::Down, name: "push".into() },
    };
    a.push(down(1));
    for _ in 0..100 {
        a.step();
    }
    let dump = a.serialize_state().expect("dump");
    let mut b = Host::restore(pucks::config(), pucks::PucksPlugin, &dump).expect("restore");
    b.world_mut().insert_resource(FrameReceivers([PlayerId(0)].into_iter().collect()));
    let schema = SnapshotSchema::from_json(&serde_json::to_string(&pucks::config().engine.snapshot).expect("json"))
        .expect("schema");
    for _ in 0..200 {
        a.step();
        b.step();
        assert_eq!(a.serialize_state().expect("dump"), b.serialize_state().expect("dump"), "tick {}", a.tick());
        let (fa, fb) = (a.take_frames(), b.take_frames());
        assert_eq!(fa, fb);
        if let Some((_, bytes)) = fa.frames.first() {
            let frame = unpack(&schema, bytes).expect("decodes");
            let Some(Block::Indexed8(rows)) = frame.block(1) else { panic!("puck rows") };
            assert_eq!(rows.len(), 2);
            assert!(frame.block(2).is_some(), "the engine adds the map's movable boxes under the set key");
        }
    }
    let pushes: Vec<u32> = b.world_mut().query::<&pucks::Puck>().iter(b.world()).map(|p| p.pushes).collect();
    assert!(pushes.contains(&300), "player 0 held push for all 300 ticks: {pushes:?}");
}

/// A match of `bots` bots on `map` run for `seconds`, watched from outside: the figures and
/// the frags per team (deaths of the other team's tanks).
fn bot_match(map: &str, seed: u64, bots: u8, seconds: u32, skills: &[(u8, BotSkill)]) -> (BotFigures, [u32; 2]) {
    let mut h = host(seed, map, bots);
    h.step();
    for (team, skill) in skills {
        for (tank, mut bot) in h.world_mut().query::<(&Tank, &mut Bot)>().iter_mut(h.world_mut()) {
            if tank.team == *team {
                bot.skill = *skill;
            }
        }
    }
    let mut figures = BotFigures::default();
    for _ in 0..seconds * 120 {
        h.step();
        figures.observe(h.world_mut());
    }
    let mut frags = [0u32; 2];
    for t in h.world_mut().query::<&Tank>().iter(h.world()) {
        // A tank's deaths are frags of the other team (friendly fire is off).
        frags[(2 - t.team) as usize] += t.deaths;
    }
    (figures, frags)
}

#[test]
fn bots_find_each_other_through_narrow_doors_and_do_not_get_stuck() {
    // Rooms joined by doors two tiles wide: every fight needs a route through two doors.
    let (figures, frags) = bot_match(ROOMS, 3, 4, 60, &[]);
    let contact = figures.first_contact_tick().expect("two enemies saw each other");
    assert!(contact < 30 * 120, "first contact only at tick {contact}");
    assert!(frags[0] + frags[1] >= 6, "a minute of 2 against 2 gives frags: {frags:?}");
    let share = figures.stuck_seconds() / figures.bot_seconds();
    assert!(share < 0.03, "bots were stuck {:.1} of {:.0} bot-seconds", figures.stuck_seconds(), figures.bot_seconds());
}

#[test]
fn hard_bots_beat_easy_bots() {
    let (_, frags) = bot_match(DEFAULT, 8, 8, 90, &[(1, BotSkill::Hard), (2, BotSkill::Easy)]);
    assert!(frags[0] > frags[1] + 3, "team 1 (hard) against team 2 (easy): {frags:?}");
    let (_, swapped) = bot_match(DEFAULT, 8, 8, 90, &[(1, BotSkill::Easy), (2, BotSkill::Hard)]);
    assert!(swapped[1] > swapped[0] + 3, "team 1 (easy) against team 2 (hard): {swapped:?}");
}

#[test]
fn the_navigation_follows_every_map_load_and_the_debug_dump_shows_it() {
    let mut h = host(2, SMALL, 3);
    h.step();
    let dump = h.debug_json();
    assert_eq!(dump["nav"]["grid"], serde_json::json!([16, 12]));
    assert_eq!(dump["nav"]["step"], serde_json::json!(32.0));
    let walk: Vec<String> = serde_json::from_value(dump["nav"]["walk"].clone()).expect("rows");
    assert_eq!(walk[5], "#......##......#", "the inner wall block of the small map");
    assert_eq!(dump["spatial"]["entries"], serde_json::json!(3), "the three living tanks");
    assert!(dump["nav"]["softObstacles"].as_u64() == Some(4), "the four crates: {}", dump["nav"]);
    h.load_map_json("rooms", ROOMS).expect("the rooms map loads");
    assert_eq!(h.debug_json()["nav"]["grid"], serde_json::json!([48, 32]), "a new map, a new grid");
    let nav = h.world().resource::<Nav>().0.as_ref().expect("a navigation");
    assert!(nav.has_obstacle_between([112.0, 112.0], [1424.0, 112.0]), "walls between the top rooms");
    assert!(nav.reachable([112.0, 112.0], [1424.0, 112.0], 46.0), "through the doors");
    // A map that does not load leaves the navigation of the one that stays.
    let _ = h.load_map_json("broken.json", "{}").expect_err("invalid");
    assert_eq!(h.debug_json()["nav"]["grid"], serde_json::json!([48, 32]));
}

#[test]
fn crates_moved_by_a_blast_move_their_soft_obstacles() {
    let mut h = host(1, SMALL, 0);
    h.step();
    let before = h.world().resource::<Nav>().0.as_ref().expect("nav").soft_values();
    let map = h.world().resource::<MapState>().map.clone().expect("map");
    let handle = map.dynamic_handle(0).expect("a crate");
    h.world_mut()
        .resource_mut::<vimp_host::engine::physics::Physics>()
        .world_mut()
        .bodies
        .get_mut(handle)
        .expect("body")
        .set_linvel(rapier2d::prelude::Vector::new(0.0, 300.0), true);
    for _ in 0..30 {
        h.step();
    }
    let after = h.world().resource::<Nav>().0.as_ref().expect("nav").soft_values();
    assert_ne!(before, after, "the crate slid into other cells");
    assert!(before.iter().map(|&v| u32::from(v)).sum::<u32>() > 0, "the crates cover cells");
}

#[test]
fn map_body_state_is_reset_on_every_load() {
    let mut h = host(1, SMALL, 0);
    let n = h.world().resource::<MapState>().body_state.len();
    assert!(n > 0);
    h.world_mut().resource_mut::<MapState>().body_state.iter_mut().for_each(|b| *b = 7);
    h.load_map_json("again", SMALL).expect("reload");
    assert_eq!(h.world().resource::<MapState>().body_state, vec![0; n]);
}

#[test]
fn rounds_start_end_and_the_game_ends() {
    let mut config = vimp_host::tanks::init_config(4);
    config.game["rounds"] = serde_json::json!({
        "roundSeconds": 1.0, "intermissionSeconds": 0.5, "roundsPerGame": 2, "fragLimit": 0, "respawnSeconds": 1.0
    });
    let mut h = Host::new(config, TanksPlugin).expect("host");
    h.load_map_json("small", SMALL).expect("map");
    let mut informs = Vec::new();
    for _ in 0..(120 * 4) {
        h.step();
        informs.extend(
            h.take_meta()
                .into_iter()
                .filter(|m| m.port == vimp_host::engine::meta::port::GAME_INFORM_DATA)
                .map(|m| m.payload[0].as_u64().expect("code")),
        );
    }
    // Round 1 starts at load; 1 s later it ends (0), 0.5 s later round 2 starts (1), ends (0),
    // the game is over (2) and a new game's round 1 starts (1).
    assert_eq!(informs[..6], [1, 0, 1, 0, 2, 1], "{informs:?}");
}

/// Host and clients over in-memory links with latency: the session protocol end to end.
mod network {
    use std::time::Duration;

    use vimp_host::engine::server::{Server, ServerConfig};
    use vimp_host::prelude::*;
    use vimp_host::tanks::tank::Tank;
    use vimp_netcode::client::Client;
    use vimp_netcode::frame::Channel;
    use vimp_netcode::input::KeyAction;
    use vimp_netcode::link::LinkConfig;
    use vimp_netcode::session::{Hello, PROTOCOL_VERSION, SessionToken, close};
    use vimp_netcode::transport::{MemoryTransport, PeerKey, Transport};

    const HOST: PeerKey = PeerKey(1000);
    const STEP: Duration = Duration::from_millis(5);

    pub(crate) struct Lan {
        pub(crate) server: Server<MemoryTransport>,
        pub(crate) clients: Vec<Client<MemoryTransport>>,
        pub(crate) now: Duration,
        next_id: u128,
    }

    fn hello(name: &str) -> Hello {
        Hello::new(name, "test")
    }

    impl Lan {
        pub(crate) fn new(password: Option<&str>) -> Lan {
            Lan::with_maps(password, Vec::new())
        }

        pub(crate) fn with_maps(password: Option<&str>, maps: Vec<vimp_host::engine::map::MapConfig>) -> Lan {
            let config = vimp_host::tanks::init_config(21);
            let mut host = Host::new(config.clone(), TanksPlugin).expect("host");
            host.load_map_json("small", super::SMALL).expect("map");
            host.push(HostCommand::Join { player: PlayerId(0), name: "bot".into(), team: None, bot: true });
            host.step();
            let server_config = ServerConfig {
                password: password.map(str::to_owned),
                client_config: vimp_host::tanks::client_config(&config),
                maps,
                ..ServerConfig::default()
            };
            let server = Server::new(host, MemoryTransport::new(HOST), server_config);
            Lan { server, clients: Vec::new(), now: Duration::ZERO, next_id: 1 }
        }

        /// A new client linked to the host (20 ms each way, a little jitter).
        pub(crate) fn join(&mut self, hello: Hello) -> usize {
            let mut t = MemoryTransport::new(PeerKey(self.next_id));
            self.next_id += 1;
            let link = LinkConfig::new()
                .latency(Duration::from_millis(20))
                .jitter(Duration::from_millis(2))
                .seed(self.next_id as u64);
            // The server's transport is inside the server: link through a fresh pair of ends.
            MemoryTransport::connect(&mut t, server_transport(&mut self.server), link);
            self.clients.push(Client::new(t, hello));
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
        let x0 = lan.server.host().world().resource::<vimp_host::engine::physics::Physics>().world().bodies
            [before.body]
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
        let moved = ((p.state[0] - x0.x).powi(2) + (p.state[1] - x0.y).powi(2)).sqrt();
        assert_eq!(p.state[7], 1.0, "the host applied ann's forward key: full throttle");
        assert!(moved > 20.0, "ann's tank drove {moved} units");
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
        assert!(rows.iter().any(|r| r[2][0] == "bot"), "the bot has a row too");
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
    fn the_map_comes_at_join_and_again_after_clear_at_a_new_round() {
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
        // The round restarts on the map: clients clear their canvases and get the map again.
        let map = lan.server.host().world().resource::<vimp_host::engine::mapstate::MapState>().config.clone();
        lan.server.host_mut().load_map(map.expect("a map")).expect("reload");
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
                .resource::<vimp_host::engine::mapstate::MapState>()
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
        let watched = |l: &Lan| l.clients[s].last_frame().and_then(|f| f.player).map(|p| (p.state[0], p.state[1]));
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

    #[test]
    fn a_version_mismatch_is_4410_and_a_wrong_password_4401() {
        let mut lan = Lan::new(Some("sesame"));
        let mut old = hello("old");
        old.version = PROTOCOL_VERSION + 1;
        old.password = Some("sesame".into());
        let v = lan.join(old);
        let p = lan.join(hello("nopass"));
        assert!(lan.run_until(Duration::from_secs(2), |l| l.clients.iter().all(|c| c.closed().is_some())));
        assert_eq!(lan.clients[v].closed().map(|c| c.0), Some(close::VERSION));
        assert_eq!(lan.clients[p].closed().map(|c| c.0), Some(close::BAD_PASSWORD));
        assert_eq!(lan.server.roster().seats().count(), 0);
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
        // The client's process hangs: nothing answers the pings any more.
        lan.run(Duration::from_secs(16), Some(&[]));
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
}

/// Host migration: the log, checkpoints and the successor's shadow.
mod migration {
    use std::time::Duration;

    use vimp_host::engine::config::InitConfig;
    use vimp_host::engine::map::MapConfig;
    use vimp_host::engine::migration::{
        Checkpoint, LogBatch, LogEvent, MetaState, MigrationConfig, MigrationError, Shadow,
    };
    use vimp_host::engine::server::{Server, ServerConfig, Takeover};
    use vimp_host::engine::sim::FixedClock;
    use vimp_host::prelude::*;
    use vimp_netcode::client::Client;
    use vimp_netcode::frame::Channel;
    use vimp_netcode::input::KeyAction;
    use vimp_netcode::link::LinkConfig;
    use vimp_netcode::migration::{Claim, MigrationPayload};
    use vimp_netcode::session::Hello;
    use vimp_netcode::transport::{Joined, MemoryTransport, PeerKey, Transport};

    use super::{SMALL, host, script};

    /// Through the wire forms, as a successor gets them.
    fn wire(batch: LogBatch) -> LogBatch {
        LogBatch::decode(&batch.encode().expect("encode")).expect("decode")
    }

    fn wire_checkpoint(c: Checkpoint) -> Checkpoint {
        Checkpoint::decode(&c.encode().expect("encode")).expect("decode")
    }

    /// The shadow's state equals the host's: the same sim hash, and the same dump bytes once the
    /// pacing accumulator (the driver's, not the match's) is the host's.
    fn assert_same_state(host: &mut Host, shadow: &mut Shadow) {
        assert_eq!(shadow.tick(), host.tick(), "the shadow reached the host's tick");
        assert_eq!(shadow.host_mut().sim_hash().expect("hash"), host.sim_hash().expect("hash"));
        let clock = *host.world().resource::<FixedClock>();
        shadow.host_mut().world_mut().insert_resource(clock);
        let (a, b) = (host.serialize_state().expect("dump"), shadow.host_mut().serialize_state().expect("dump"));
        assert!(a == b, "the dumps differ ({} vs {} bytes)", a.len(), b.len());
    }

    /// Runs a logging host for `ticks` with a scripted human, a team change, a bot joining and a
    /// map reload; the log goes to `shadow` in batches of 7 ticks through `edit`.
    fn replay(ticks: u32, mut edit: impl FnMut(&mut LogBatch)) -> (Host, Shadow) {
        let mut original = host(11, SMALL, 6);
        original.start_log(30);
        original.push(HostCommand::Join { player: PlayerId(200), name: "human".into(), team: None, bot: false });
        original.step();
        let checkpoint =
            wire_checkpoint(Checkpoint::capture(&mut original, 1, MetaState::default()).expect("checkpoint"));
        original.take_log();
        let mut shadow =
            Shadow::from_checkpoint(vimp_host::tanks::init_config(11), TanksPlugin, &checkpoint).expect("shadow");
        let map = MapConfig::from_json("small", SMALL).expect("map");
        let mut seq = 0;
        for _ in 0..ticks {
            let tick = original.tick();
            for c in script(tick, &mut seq) {
                original.push(c);
            }
            match tick {
                300 => original.push(HostCommand::SetTeam { player: PlayerId(200), team: 2 }),
                500 => original.push(HostCommand::Join {
                    player: PlayerId(50),
                    name: "late".into(),
                    team: None,
                    bot: true,
                }),
                700 => original.load_map(map.clone()).expect("reload"),
                _ => {}
            }
            original.step();
            if original.tick().is_multiple_of(7) {
                let mut batch = wire(LogBatch::new(1, &original.take_log()));
                edit(&mut batch);
                let _ = shadow.apply(&batch);
            }
        }
        let _ = shadow.apply(&wire(LogBatch::new(1, &original.take_log())));
        (original, shadow)
    }

    #[test]
    fn a_shadow_replaying_the_log_matches_every_hash_and_ends_in_the_same_state() {
        let (mut original, mut shadow) = replay(1500, |_| {});
        assert_eq!(shadow.mismatches(), 0, "{:?}", shadow.divergences());
        assert!(shadow.hashes_checked() >= 1500 / 30, "{} hashes checked", shadow.hashes_checked());
        assert!(!shadow.wants_checkpoint());
        assert_same_state(&mut original, &mut shadow);
    }

    #[test]
    fn a_log_missing_one_command_diverges_and_a_fresh_checkpoint_heals_it() {
        let mut dropped = None;
        let (mut original, mut shadow) = replay(1500, |batch| {
            for event in &mut batch.events {
                if let LogEvent::Step { tick, commands, .. } = event
                    && dropped.is_none()
                    && *tick > 240
                    && let Some(i) = commands.iter().position(|c| matches!(c, HostCommand::Input { .. }))
                {
                    commands.remove(i);
                    dropped = Some(*tick);
                }
            }
        });
        let dropped = dropped.expect("an input was dropped");
        assert!(shadow.mismatches() > 0, "the missing input was noticed");
        let first = shadow.divergences()[0];
        assert!(first.tick >= dropped && first.tick < dropped + 30, "noticed at {} for {dropped}", first.tick);
        assert_ne!(first.expected, first.got);
        assert!(shadow.wants_checkpoint());
        // A fresh checkpoint replaces the diverged state; from there the hashes match again.
        let checkpoint =
            wire_checkpoint(Checkpoint::capture(&mut original, 1, MetaState::default()).expect("checkpoint"));
        assert!(shadow.offer(&checkpoint).expect("offer"), "taken");
        let before = shadow.mismatches();
        for _ in 0..120 {
            original.step();
        }
        shadow.apply(&wire(LogBatch::new(1, &original.take_log()))).expect("apply");
        assert_eq!(shadow.mismatches(), before);
        assert_same_state(&mut original, &mut shadow);
    }

    #[test]
    fn logged_chat_joins_the_shadow_and_an_older_checkpoint_does_not_drop_it() {
        let mut original = host(3, SMALL, 2);
        original.start_log(30);
        let meta =
            |chat: &[&str]| MetaState { chat: chat.iter().map(|l| l.to_string()).collect(), ..MetaState::default() };
        let first = wire_checkpoint(Checkpoint::capture(&mut original, 1, meta(&["old"])).expect("checkpoint"));
        let mut shadow =
            Shadow::from_checkpoint(vimp_host::tanks::init_config(3), TanksPlugin, &first).expect("shadow");
        original.step();
        original.log_chat("a");
        // A checkpoint between the two lines (the server's recent chat has "a" by then).
        let between = wire_checkpoint(Checkpoint::capture(&mut original, 1, meta(&["old", "a"])).expect("checkpoint"));
        original.step();
        original.log_chat("b");
        assert_eq!(shadow.apply(&wire(LogBatch::new(1, &original.take_log()))).expect("apply"), 4);
        assert_eq!(shadow.meta().chat, ["old", "a", "b"], "the logged lines join the checkpoint's");
        // The older checkpoint arrives late: its meta part is taken, the line logged after it stays.
        assert!(!shadow.offer(&between).expect("offer"), "the state stays");
        assert_eq!(shadow.meta().chat, ["old", "a", "b"]);
        assert_eq!(shadow.mismatches(), 0);
    }

    #[test]
    fn a_gap_in_the_log_or_another_epoch_is_refused() {
        let mut original = host(3, SMALL, 2);
        original.start_log(30);
        let checkpoint =
            wire_checkpoint(Checkpoint::capture(&mut original, 4, MetaState::default()).expect("checkpoint"));
        let mut shadow =
            Shadow::from_checkpoint(vimp_host::tanks::init_config(3), TanksPlugin, &checkpoint).expect("shadow");
        for _ in 0..10 {
            original.step();
        }
        let entries = original.take_log();
        assert!(matches!(
            shadow.apply(&LogBatch::new(5, &entries)),
            Err(MigrationError::Epoch { expected: 4, got: 5 })
        ));
        assert!(matches!(
            shadow.apply(&LogBatch::new(4, &entries[3..])),
            Err(MigrationError::Gap { expected: 1, got: 4 })
        ));
        assert!(shadow.wants_checkpoint());
        assert_eq!(shadow.apply(&LogBatch::new(4, &entries)).expect("in order"), 10);
        assert_eq!(shadow.apply(&LogBatch::new(4, &entries)).expect("again"), 0, "entries it holds are skipped");
    }

    const HOST: PeerKey = PeerKey(1000);
    const STEP: Duration = Duration::from_millis(5);

    fn hello(name: &str) -> Hello {
        Hello::new(name, "test")
    }

    /// A client and the shadow it keeps from what it receives as a successor.
    struct Peer {
        client: Client<MemoryTransport>,
        shadow: Option<Shadow>,
        errors: Vec<String>,
        /// Checkpoints received.
        checkpoints: u32,
        /// Drop the inputs of the log batches until the shadow diverges (a log that lost commands).
        drop_inputs: bool,
        /// The match's init config, for the shadow's host.
        config: InitConfig,
    }

    impl Peer {
        fn new(client: Client<MemoryTransport>, config: InitConfig) -> Peer {
            Peer { client, shadow: None, errors: Vec::new(), checkpoints: 0, drop_inputs: false, config }
        }

        /// Feeds what the client received to the shadow and, as `app/successor.rs` does, asks
        /// for a checkpoint while the shadow wants one.
        fn feed(&mut self) {
            for payload in self.client.take_migration() {
                let result = match payload {
                    MigrationPayload::Checkpoint(bytes) => {
                        self.checkpoints += 1;
                        Checkpoint::decode(&bytes).and_then(|c| match &mut self.shadow {
                            Some(shadow) => shadow.offer(&c).map(|_| ()),
                            None => {
                                let config = self.config.clone();
                                self.shadow = Some(Shadow::from_checkpoint(config, TanksPlugin, &c)?);
                                Ok(())
                            }
                        })
                    }
                    MigrationPayload::Log(bytes) => match (LogBatch::decode(&bytes), &mut self.shadow) {
                        (Ok(mut batch), Some(shadow)) => {
                            if self.drop_inputs {
                                drop_inputs(&mut batch);
                            }
                            let applied = shadow.apply(&batch).map(|_| ());
                            self.drop_inputs &= shadow.mismatches() == 0;
                            applied
                        }
                        (Ok(_), None) => Err(MigrationError::Gap { expected: 0, got: 0 }),
                        (Err(e), _) => Err(e.into()),
                    },
                    MigrationPayload::Handoff(_) => Ok(()),
                };
                if let Err(e) = result {
                    self.errors.push(e.to_string());
                }
            }
            if self.shadow.as_ref().is_some_and(|s| s.wants_checkpoint()) {
                self.client.request_checkpoint();
            }
        }
    }

    /// Removes the input commands of `batch`.
    fn drop_inputs(batch: &mut LogBatch) {
        for event in &mut batch.events {
            if let LogEvent::Step { commands, .. } = event {
                commands.retain(|c| !matches!(c, HostCommand::Input { .. }));
            }
        }
    }

    const SEED: u64 = 21;

    /// A match with the host, bots and clients over lossy links, every peer linked to every other.
    struct Mesh {
        server: Server<MemoryTransport>,
        peers: Vec<Peer>,
        now: Duration,
        config: InitConfig,
    }

    impl Mesh {
        fn new() -> Mesh {
            Mesh::with_config(vimp_host::tanks::init_config(SEED))
        }

        /// A match of `config` (a tanks init config).
        fn with_config(config: InitConfig) -> Mesh {
            let mut host = Host::new(config.clone(), TanksPlugin).expect("host");
            host.load_map_json("small", SMALL).expect("map");
            for i in 0..6 {
                host.push(HostCommand::Join {
                    player: PlayerId(100 + i),
                    name: format!("bot{i}"),
                    team: None,
                    bot: true,
                });
            }
            host.step();
            let server_config =
                ServerConfig { client_config: vimp_host::tanks::client_config(&config), ..ServerConfig::default() };
            Mesh {
                server: Server::new(host, MemoryTransport::new(HOST), server_config),
                peers: Vec::new(),
                now: Duration::ZERO,
                config,
            }
        }

        /// A client `ms` away from the host, 5 % loss on the unreliable channel, linked to every other client.
        fn join(&mut self, name: &str, ms: u64) -> usize {
            self.join_except(name, ms, &[])
        }

        /// A client as [`Mesh::join`] makes it, but with no link to the clients of `unlinked`.
        fn join_except(&mut self, name: &str, ms: u64, unlinked: &[usize]) -> usize {
            let id = self.peers.len() as u128 + 1;
            let lossy = |seed: u128| {
                LinkConfig::new()
                    .latency(Duration::from_millis(ms))
                    .jitter(Duration::from_millis(3))
                    .loss(0.05)
                    .seed(seed as u64)
            };
            let mut t = MemoryTransport::new(PeerKey(id));
            MemoryTransport::connect(&mut t, self.server.transport_mut(), lossy(id));
            for (i, other) in self.peers.iter_mut().enumerate().filter(|(i, _)| !unlinked.contains(i)) {
                MemoryTransport::connect(&mut t, other.client.transport_mut(), lossy(id * 100 + i as u128));
            }
            self.peers.push(Peer::new(Client::new(t, hello(name)), self.config.clone()));
            self.peers.len() - 1
        }

        /// Opens a link between clients `a < b`.
        fn link(&mut self, a: usize, b: usize) {
            let (left, right) = self.peers.split_at_mut(b);
            let (ta, tb) = (left[a].client.transport_mut(), right[0].client.transport_mut());
            MemoryTransport::connect(ta, tb, LinkConfig::new().latency(Duration::from_millis(20)).seed(7));
        }

        /// The host stops between two of its updates: what it logged so far goes out, and
        /// the clients alone run `steps` more steps, feeding their shadows.
        fn drain(&mut self, steps: usize) {
            let now = self.now;
            self.server.flush_migration(now);
            for _ in 0..steps {
                self.now += STEP;
                for p in &mut self.peers {
                    p.client.update(self.now);
                    p.feed();
                }
            }
        }
        fn run(&mut self, d: Duration) {
            let end = self.now + d;
            while self.now < end {
                self.now += STEP;
                for p in &mut self.peers {
                    p.client.update(self.now);
                }
                self.server.update(self.now);
                for p in &mut self.peers {
                    p.feed();
                }
            }
        }
    }

    #[test]
    fn the_first_successor_shadows_a_lossy_match_without_a_mismatch() {
        let mut mesh = Mesh::new();
        let ann = mesh.join("ann", 15);
        let bob = mesh.join("bob", 45);
        mesh.run(Duration::from_secs(1));
        let keys = ["forward", "left", "fire", "right", "back", "gunLeft"];
        let mut cy = None;
        let mut bob_player = None;
        // 24 s of match: ann and bob drive, a bot and cy join, bob changes team, the map reloads,
        // people chat, cy leaves.
        for step in 0..240u32 {
            let at = Duration::from_millis(100 * step as u64);
            for (i, p) in mesh.peers.iter_mut().enumerate() {
                let key = keys[(step as usize / 7 + i) % keys.len()];
                let action = if step % 7 == 0 {
                    KeyAction::Down
                } else if step % 7 == 5 {
                    KeyAction::Up
                } else {
                    continue;
                };
                p.client.key(action, key);
            }
            match at.as_millis() {
                3000 => mesh.server.host_mut().push(HostCommand::Join {
                    player: PlayerId(120),
                    name: "late bot".into(),
                    team: None,
                    bot: true,
                }),
                5000 => cy = Some(mesh.join("cy", 70)),
                8000 => {
                    bob_player = mesh.peers[bob].client.welcome().map(|w| w.player_id);
                    mesh.peers[bob].client.send_meta(vimp_netcode::meta::VOTE, br#"["teams", 2]"#);
                }
                12000 => {
                    let map =
                        mesh.server.host().world().resource::<vimp_host::engine::mapstate::MapState>().config.clone();
                    mesh.server.host_mut().load_map(map.expect("a map")).expect("reload");
                }
                14000 => mesh.peers[ann].client.say("still here"),
                16000 => {
                    let now = mesh.now;
                    mesh.peers[cy.expect("cy")].client.leave(now);
                }
                19000 => mesh.server.host_mut().push(HostCommand::Leave { player: PlayerId(101) }),
                _ => {}
            }
            mesh.run(Duration::from_millis(100));
        }
        // The host stops (between two of its updates): what it logged so far reaches the successors.
        mesh.drain(200);

        let ann_key = PeerKey(1);
        let succession = mesh.server.succession().to_vec();
        assert_eq!(succession.first(), Some(&ann_key), "ann is nearest: {succession:?}");
        assert!(succession.contains(&PeerKey(2)) && !succession.contains(&PeerKey(3)), "cy left: {succession:?}");
        for i in [ann, bob] {
            let list = mesh.peers[i].client.succession().map(|s| s.peers.clone());
            assert_eq!(list, Some(succession.clone()), "everyone connected has the list");
        }
        assert!(bob_player.is_some());
        let tick = mesh.server.host().tick();
        assert!(tick >= 20 * 120, "{tick} ticks of match");
        for (name, i) in [("ann", ann), ("bob", bob)] {
            let peer = &mut mesh.peers[i];
            assert!(peer.errors.is_empty(), "{name}: {:?}", peer.errors);
            assert_eq!(peer.client.stats().bad_migration_frames, 0);
            let shadow = peer.shadow.as_mut().expect("a successor's shadow");
            assert_eq!(shadow.mismatches(), 0, "{name}: {:?}", shadow.divergences());
            assert!(shadow.hashes_checked() >= 20 * 4, "{name}: {} hashes checked", shadow.hashes_checked());
            assert_eq!(shadow.rebases(), 0, "{name}: a healthy shadow never reloads");
            assert_same_state(mesh.server.host_mut(), shadow);
            // The meta part: every slot with its token and name.
            let tokens = |seats: Vec<(PlayerId, String, String)>| seats;
            let host_seats = tokens(
                mesh.server.roster().seats().map(|s| (s.player, s.nickname.clone(), s.token.to_string())).collect(),
            );
            let shadow_seats = tokens(
                shadow.meta().roster.seats().map(|s| (s.player, s.nickname.clone(), s.token.to_string())).collect(),
            );
            assert_eq!(shadow_seats, host_seats, "{name}: the roster");
            assert!(shadow.meta().chat.iter().any(|l| l.contains("still here")), "{name}: {:?}", shadow.meta().chat);
        }
        assert!(mesh.peers[cy.expect("cy")].shadow.is_none(), "cy was never a successor");

        let stats = mesh.server.migration_stats().clone();
        let seconds = mesh.now.as_secs_f64() - 1.0;
        let upload: Vec<String> =
            stats.per_successor.iter().map(|(p, b)| format!("peer {}: {:.0} B/s", p.0, *b as f64 / seconds)).collect();
        eprintln!(
            "migration over {seconds:.0} s: checkpoint {} B lz4 ({} B dump), {} checkpoints ({} B), log {:.0} B/s per successor \
             ({} batches, {} entries), successions {}, upload {}",
            stats.last_checkpoint.0,
            stats.last_checkpoint.1,
            stats.checkpoints,
            stats.checkpoint_bytes,
            stats.log_bytes as f64 / seconds / 2.0,
            stats.log_batches,
            stats.log_entries,
            stats.successions,
            upload.join(", ")
        );
        let ann_upload = stats.per_successor.get(&ann_key).copied().unwrap_or_default() as f64 / seconds;
        assert!(ann_upload < 10_000.0, "{ann_upload:.0} B/s to the first successor");
    }

    #[test]
    fn a_client_without_a_link_to_every_other_client_is_no_successor_until_it_has_one() {
        let mut mesh = Mesh::new();
        let ann = mesh.join("ann", 15);
        let bob = mesh.join("bob", 45);
        let cy = mesh.join_except("cy", 30, &[bob]);
        mesh.run(Duration::from_secs(2));
        // bob and cy have no link to each other: either would strand the other if it took
        // over. ann reaches everyone.
        let (ann_key, bob_key, cy_key) = (PeerKey(1), PeerKey(2), PeerKey(3));
        assert_eq!(mesh.server.succession(), [ann_key], "only ann can reach everyone");
        for i in [ann, bob, cy] {
            let list = mesh.peers[i].client.succession().map(|s| s.peers.clone());
            assert_eq!(list, Some(vec![ann_key]), "{i} has the list");
        }
        mesh.link(bob, cy);
        mesh.run(Duration::from_millis(500));
        let mut listed = mesh.server.succession().to_vec();
        listed.sort();
        assert_eq!(listed, [ann_key, bob_key, cy_key], "linked, bob and cy are listed");
        // A link that drops takes its ends off the list again.
        mesh.peers[cy].client.transport_mut().disconnect(bob_key);
        mesh.run(Duration::from_millis(500));
        assert_eq!(mesh.server.succession(), [ann_key], "the link dropped");
    }

    #[test]
    fn a_diverged_shadow_asks_for_a_checkpoint_and_heals_long_before_the_periodic_one() {
        let mut mesh = Mesh::new();
        for (name, ms) in [("ann", 15), ("bob", 45), ("cy", 70)] {
            mesh.join(name, ms);
        }
        // Every 100 ms each client presses or releases a key.
        let keys = ["forward", "left", "fire", "right"];
        let mut step = 0usize;
        let mut play = |mesh: &mut Mesh| {
            for (i, p) in mesh.peers.iter_mut().enumerate() {
                let action = if step.is_multiple_of(2) { KeyAction::Down } else { KeyAction::Up };
                p.client.key(action, keys[(step / 2 + i) % keys.len()]);
            }
            step += 1;
            mesh.run(Duration::from_millis(100));
        };
        // Until everyone's RTT is known (a ping lost on the lossy links waits 3 s for the next)
        // and the list settled (a stream outlives its place in it by 2 s).
        while mesh.server.latencies().len() < 3 {
            play(&mut mesh);
        }
        for _ in 0..25 {
            play(&mut mesh);
        }
        // Peer keys are 1, 2, 3 for clients 0, 1, 2; the first two successors have streams.
        let order: Vec<usize> = mesh.server.succession().iter().map(|p| p.0 as usize - 1).collect();
        assert_eq!(order.len(), 3, "{order:?}");
        let (streamed, other) = (order[1], order[2]);

        // Right after a periodic checkpoint (the next one is 2 s away), the streamed successor's
        // log loses inputs (until its shadow notices).
        let had = mesh.peers[streamed].checkpoints;
        while mesh.peers[streamed].checkpoints == had {
            mesh.run(STEP);
        }
        let periodic_at = mesh.now;
        let had = mesh.peers[streamed].checkpoints;
        mesh.peers[streamed].drop_inputs = true;
        let mut diverged_at = None;
        while mesh.now < periodic_at + Duration::from_secs(2) {
            play(&mut mesh);
            let shadow = mesh.peers[streamed].shadow.as_ref().expect("a shadow");
            if shadow.mismatches() > 0 {
                diverged_at.get_or_insert(mesh.now);
            }
            if diverged_at.is_some() && !shadow.wants_checkpoint() {
                break;
            }
        }
        let diverged_at = diverged_at.expect("the missing input was noticed");
        let healed_at = mesh.now;
        eprintln!(
            "diverged {:?} after the periodic checkpoint, healed {:?} later",
            diverged_at - periodic_at,
            healed_at - diverged_at
        );
        let peer = &mesh.peers[streamed];
        let shadow = peer.shadow.as_ref().expect("a shadow");
        assert!(!shadow.wants_checkpoint(), "healed");
        assert_eq!(shadow.rebases(), 1, "by one checkpoint");
        assert_eq!(peer.checkpoints, had + 1, "the one it asked for");
        assert!(healed_at - diverged_at <= Duration::from_millis(300), "healed {:?} after", healed_at - diverged_at);
        assert!(healed_at - periodic_at < Duration::from_millis(1500), "long before the periodic one");
        let stats = mesh.server.migration_stats().clone();
        assert_eq!((stats.checkpoint_requests, stats.checkpoint_requests_ignored), (1, 0));
        // From there the shadow follows the host again (the host stopped between two updates
        // while the successors catch up).
        for _ in 0..5 {
            play(&mut mesh);
        }
        mesh.drain(40);
        let shadow = mesh.peers[streamed].shadow.as_mut().expect("a shadow");
        let mismatches = shadow.mismatches();
        assert_same_state(mesh.server.host_mut(), shadow);
        assert_eq!(shadow.mismatches(), mismatches, "no new mismatch");

        // A peer without a stream is ignored; a streamed one gets at most one per 250 ms.
        let other_had = mesh.peers[other].checkpoints;
        assert!(mesh.peers[other].client.request_checkpoint(), "sent");
        assert!(!mesh.peers[other].client.request_checkpoint(), "but not twice in 250 ms");
        let request = |mesh: &mut Mesh, from: usize| {
            let now = mesh.now;
            let frame = vec![vimp_netcode::frame::op::CHECKPOINT_REQUEST];
            mesh.peers[from].client.transport_mut().send(now, HOST, Channel::Reliable, frame);
        };
        request(&mut mesh, streamed);
        request(&mut mesh, streamed);
        mesh.run(Duration::from_millis(200));
        let stats = mesh.server.migration_stats().clone();
        assert_eq!((stats.checkpoint_requests, stats.checkpoint_requests_ignored), (2, 2));
        assert_eq!(mesh.peers[streamed].checkpoints, had + 2);
        assert_eq!(mesh.peers[other].checkpoints, other_had, "no checkpoint to a peer without a stream");
    }

    type Standing = (PlayerId, String, u8, i64, u32);

    /// The match as every process sees it, by player: (name, team, score, deaths).
    fn standings(host: &Host) -> Vec<Standing> {
        let world = host.world();
        let scores = world.resource::<vimp_host::engine::players::Scores>();
        world
            .resource::<vimp_host::engine::players::Participants>()
            .0
            .iter()
            .map(|(id, p)| {
                let s = scores.0.get(id).cloned().unwrap_or_default();
                (*id, p.name.clone(), p.team, s.score, s.deaths)
            })
            .collect()
    }

    /// The slots with their names and tokens.
    fn seats<'a>(seats: impl Iterator<Item = &'a vimp_host::engine::roster::Seat>) -> Vec<(PlayerId, String, String)> {
        seats.map(|s| (s.player, s.nickname.clone(), s.token.to_string())).collect()
    }

    type NewHost = Server<Joined<MemoryTransport, MemoryTransport>>;

    /// The mesh through host changes: the first host can be killed (its transport dropped, no
    /// goodbye) or frozen (silent, links open), any client frozen too, and a successor whose
    /// turn comes promotes its shadow into a new host over its mesh transport plus an
    /// in-process link to its own player (as the app's embedded host does).
    struct Migrating {
        mesh: Mesh,
        first_alive: bool,
        frozen: Vec<usize>,
        new_hosts: Vec<(usize, NewHost)>,
        /// (peer, takeover time, the shadow's tick it continued from, the standings there)
        takeovers: Vec<(usize, Duration, u32, Vec<Standing>)>,
        /// The first host's standings after each of its ticks.
        history: std::collections::BTreeMap<u32, Vec<Standing>>,
        /// Peers that promote as soon as they notice the host lost, whoever's turn it is.
        eager: Vec<usize>,
        /// New hosts that stopped hosting: (peer, the better claim it lost to, the successor
        /// it handed off to, its last tick and the standings there). Their players went back
        /// onto the mesh.
        retired: Vec<(usize, Option<(PeerKey, Claim)>, Option<PeerKey>, u32, Vec<Standing>)>,
    }

    impl Migrating {
        fn new(mesh: Mesh) -> Migrating {
            Migrating {
                mesh,
                first_alive: true,
                frozen: Vec::new(),
                new_hosts: Vec::new(),
                takeovers: Vec::new(),
                history: Default::default(),
                eager: Vec::new(),
                retired: Vec::new(),
            }
        }

        /// The first host dies: its links close with nothing more sent.
        fn kill_first_host(&mut self) {
            self.first_alive = false;
            drop(std::mem::replace(self.mesh.server.transport_mut(), MemoryTransport::new(HOST)));
        }

        fn step(&mut self) {
            let mesh = &mut self.mesh;
            mesh.now += STEP;
            let now = mesh.now;
            for (i, p) in mesh.peers.iter_mut().enumerate() {
                if !self.frozen.contains(&i) {
                    p.client.update(now);
                }
            }
            if self.first_alive {
                mesh.server.update(now);
                let tick = mesh.server.host().tick();
                self.history.entry(tick).or_insert_with(|| standings(mesh.server.host()));
            }
            for (_, server) in &mut self.new_hosts {
                server.update(now);
            }
            // A new host that lost to a better claim or handed off stops; its player goes
            // back onto the mesh.
            while let Some(k) =
                self.new_hosts.iter().position(|(_, s)| s.superseded().is_some() || s.handed_off().is_some())
            {
                let (i, server) = self.new_hosts.remove(k);
                self.retire(i, server);
            }
            for i in 0..self.mesh.peers.len() {
                if self.frozen.contains(&i) {
                    continue;
                }
                self.mesh.peers[i].feed();
                let client = &self.mesh.peers[i].client;
                let due = client.takeover_due() || (self.eager.contains(&i) && client.host_lost());
                if due && self.mesh.peers[i].shadow.is_some() {
                    self.promote(i);
                }
            }
        }

        /// Stops new host `i` (superseded or handed off): its mesh transport goes back to its
        /// client, which follows the winner or the successor.
        fn retire(&mut self, i: usize, server: NewHost) {
            let (peers, superseded, handed_off) = (server.linked_peers(), server.superseded(), server.handed_off());
            let (tick, standings) = (server.host().tick(), standings(server.host()));
            let (mesh, _local) = server.into_transport().into_parts();
            let client = &mut self.mesh.peers[i].client;
            match (superseded, handed_off) {
                (Some((winner, claim)), _) => drop(client.step_down(mesh, peers, winner, claim)),
                (None, Some(to)) => drop(client.follow_handoff(mesh, peers, to)),
                (None, None) => unreachable!("only a superseded or handed-off host retires"),
            }
            self.retired.push((i, superseded, handed_off, tick, standings));
        }

        fn promote(&mut self, i: usize) {
            let now = self.mesh.now;
            let peer = &mut self.mesh.peers[i];
            let shadow = peer.shadow.take().expect("a shadow");
            let tick = shadow.tick();
            let me = peer.client.transport().local_id().expect("an id");
            let local = PeerKey(5000 + i as u128);
            let (mut host_end, mut player_end) = (MemoryTransport::new(me), MemoryTransport::new(local));
            MemoryTransport::connect(&mut host_end, &mut player_end, LinkConfig::new());
            let handover = peer.client.hand_over(player_end).expect("a welcomed client hands over");
            let config = vimp_host::tanks::init_config(SEED);
            let server_config = ServerConfig {
                client_config: vimp_host::tanks::client_config(&config),
                migration: MigrationConfig { local_peers: vec![local], ..MigrationConfig::default() },
                ..ServerConfig::default()
            };
            let takeover = Takeover { now, peers: handover.peers, rank: handover.rank };
            let server =
                Server::from_shadow(shadow, Joined::new(handover.transport, host_end), server_config, takeover);
            self.takeovers.push((i, now, tick, standings(server.host())));
            self.new_hosts.push((i, server));
        }

        fn run(&mut self, d: Duration) {
            let end = self.mesh.now + d;
            while self.mesh.now < end {
                self.step();
            }
        }

        /// Runs until `done` holds, at most `limit` of simulated time.
        fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&Migrating) -> bool) -> bool {
            let end = self.mesh.now + limit;
            while self.mesh.now < end {
                self.step();
                if done(self) {
                    return true;
                }
            }
            false
        }

        fn client(&self, i: usize) -> &Client<MemoryTransport> {
            &self.mesh.peers[i].client
        }
    }

    /// ann (15 ms, the first successor), bob (45 ms, the second) and cy (70 ms, no shadow)
    /// play for `seconds` with the host's bots; bob moves to team 2 and ann chats.
    fn three_clients(seconds: u64) -> (Migrating, [usize; 3]) {
        three_clients_with(vimp_host::tanks::init_config(SEED), seconds)
    }

    /// [`three_clients`] in a match of `config`.
    fn three_clients_with(config: InitConfig, seconds: u64) -> (Migrating, [usize; 3]) {
        let mut mesh = Mesh::with_config(config);
        let ann = mesh.join("ann", 15);
        let bob = mesh.join("bob", 45);
        let cy = mesh.join("cy", 70);
        mesh.run(Duration::from_secs(1));
        // The list goes by RTT: wait until the host has everyone's (a ping lost on the lossy
        // links waits 3 s for the next one).
        let deadline = mesh.now + Duration::from_secs(10);
        while mesh.server.latencies().len() < 3 && mesh.now < deadline {
            mesh.run(Duration::from_millis(100));
        }
        let mut m = Migrating::new(mesh);
        drive(&mut m, 0, seconds * 10, |m, step| match step {
            10 => m.mesh.peers[bob].client.send_meta(vimp_netcode::meta::VOTE, br#"["teams", 2]"#),
            20 => m.mesh.peers[ann].client.say("still here"),
            _ => {}
        });
        (m, [ann, bob, cy])
    }

    /// 100-ms steps of everyone pressing and releasing keys, from `from` to `to`.
    fn drive(m: &mut Migrating, from: u64, to: u64, mut also: impl FnMut(&mut Migrating, u64)) {
        let keys = ["forward", "left", "fire", "right", "back", "gunLeft"];
        for step in from..to {
            for (i, p) in m.mesh.peers.iter_mut().enumerate() {
                let key = keys[(step as usize / 7 + i) % keys.len()];
                match step % 7 {
                    0 => p.client.key(KeyAction::Down, key),
                    5 => p.client.key(KeyAction::Up, key),
                    _ => None,
                };
            }
            also(m, step);
            m.run(Duration::from_millis(100));
        }
    }

    #[test]
    fn the_first_successor_takes_over_a_crashed_host_and_nothing_is_lost() {
        let (mut m, [ann, bob, cy]) = three_clients(6);
        assert_eq!(m.mesh.server.succession(), [PeerKey(1), PeerKey(2), PeerKey(3)]);
        let tokens = seats(m.mesh.server.roster().seats());
        let welcomes: Vec<_> = [ann, bob, cy].map(|i| m.client(i).welcome().cloned().expect("welcomed")).into();
        assert_eq!(standings(m.mesh.server.host()).iter().find(|s| s.1 == "bob").map(|s| s.2), Some(2));

        // Right after a checkpoint reaches ann, cy says a line: the successors hear it in the log only.
        let had = m.mesh.peers[ann].checkpoints;
        assert!(m.run_until(Duration::from_secs(3), |m| m.mesh.peers[ann].checkpoints > had));
        let had = m.mesh.peers[ann].checkpoints;
        m.mesh.peers[cy].client.say("just before the crash");
        let logged = |m: &Migrating| {
            let shadow = m.mesh.peers[ann].shadow.as_ref();
            shadow.is_some_and(|s| s.meta().chat.iter().any(|l| l.contains("just before the crash")))
        };
        // Killed mid-round at tick 960 or after (8 s of match), with no goodbye.
        assert!(m.run_until(Duration::from_secs(2), |m| m.mesh.server.host().tick() >= 960 && logged(m)));
        assert_eq!(m.mesh.peers[ann].checkpoints, had, "no checkpoint since the line");
        let lost_tick = m.mesh.server.host().tick();
        let lost_at = m.mesh.now;
        m.kill_first_host();
        // The newest match time each client saw from the old host (frames in flight included).
        let mut last_seen = [ann, bob, cy].map(|i| m.client(i).last_frame().map(|f| f.server_time_ms));
        let resumed = m.run_until(Duration::from_secs(3), |m| {
            for (k, i) in [ann, bob, cy].into_iter().enumerate() {
                if m.client(i).stats().migrations == 0 {
                    last_seen[k] = m.client(i).last_frame().map(|f| f.server_time_ms);
                }
            }
            [ann, bob, cy].iter().all(|i| m.client(*i).stats().migrations == 1)
        });
        assert!(resumed, "everyone resumed: {:?}", [ann, bob, cy].map(|i| m.client(i).stats().clone()));

        // ann took over at once, from the last tick its shadow had.
        assert_eq!(m.takeovers.len(), 1, "one host");
        let (who, at, from_tick, ref start) = m.takeovers[0];
        assert_eq!(who, ann);
        assert_eq!(at, lost_at + STEP, "the dropped link is noticed at the next update");
        let rewind_ticks = lost_tick - from_tick;
        // The log goes every 25 ms over a 15 ± 3 ms reliable link: at most 48 ms are in flight.
        assert!(rewind_ticks <= 12, "{rewind_ticks} ticks rewound (≤ 100 ms)");
        let (_, new_host) = &m.new_hosts[0];
        assert_eq!(new_host.epoch(), 2);
        assert_eq!(m.history.get(&from_tick), Some(start), "scores and teams as the old host had them at that tick");
        assert_eq!(seats(new_host.roster().seats()), tokens, "every slot with its name and token");
        let chat = new_host.meta_state().chat;
        assert!(chat.iter().any(|l| l.contains("still here")), "recent chat carried over");
        assert!(chat.iter().any(|l| l.contains("just before the crash")), "and the chat logged since: {chat:?}");

        // Everyone is back in their own slot, with their token, at epoch 2.
        for (i, old) in [ann, bob, cy].into_iter().zip(&welcomes) {
            let c = m.client(i);
            let w = c.welcome().expect("welcomed");
            assert_eq!((w.player_id, w.token, w.epoch, w.resumed), (old.player_id, old.token, 2, true));
            assert_eq!(c.stats().host_epoch, 2);
            assert!(c.closed().is_none(), "{:?}", c.closed());
        }
        // The new host's chat history reaches everyone who resumed; nobody hears a line twice.
        m.run(Duration::from_millis(300));
        for i in [ann, bob, cy] {
            let times = |text: &str| m.client(i).chat().iter().filter(|l| l[0] == text).count();
            assert_eq!((times("still here"), times("just before the crash")), (1, 1), "{:?}", m.client(i).chat());
        }
        let figures: Vec<(Duration, f64)> = [ann, bob, cy]
            .map(|i| (m.client(i).stats().resume.expect("resumed"), m.client(i).stats().rewind_ms.expect("rewind")))
            .into();
        eprintln!(
            "crash at tick {lost_tick}: {rewind_ticks} ticks rewound by the new host; resume, rewind per client: {figures:?}"
        );
        for (resume, rewind) in &figures {
            assert!(*resume <= Duration::from_secs(1), "resume {resume:?}");
            assert!(*rewind <= 100.0, "rewind {rewind} ms");
        }
        // The rewind is the match time lost: from the newest frame a client saw back to the tick
        // the new host continues from (the claim's), never more than the new host rewound.
        let tick_ms = 1000.0 / 120.0;
        for (k, (_, rewind)) in figures.iter().enumerate() {
            let seen = last_seen[k].expect("frames from the old host");
            let expected = (seen - from_tick as f64 * tick_ms).max(0.0);
            assert!((rewind - expected).abs() < tick_ms, "client {k}: rewind {rewind} ms, expected {expected} ms");
            assert!(
                *rewind <= rewind_ticks as f64 * tick_ms + 0.01,
                "client {k}: {rewind} ms for {rewind_ticks} ticks"
            );
        }

        // The match goes on: bots play, frames reach everyone, inputs and chat work.
        let tick = m.new_hosts[0].1.host().tick();
        let before: Vec<u64> = [ann, bob, cy].map(|i| m.client(i).stats().snapshots).into();
        drive(&mut m, 80, 100, |m, step| {
            if step == 85 {
                m.mesh.peers[bob].client.say("after");
            }
        });
        let new_host = &m.new_hosts[0].1;
        assert!(new_host.host().tick() >= tick + 200, "the new host runs");
        for (k, i) in [ann, bob, cy].into_iter().enumerate() {
            let c = m.client(i);
            assert!(c.stats().snapshots > before[k] + 30, "frames flow to {i}");
            assert!(c.chat().iter().any(|l| l.to_string().contains("after")), "{i} hears the chat");
        }
        let seq = m.mesh.peers[bob].client.key(KeyAction::Up, "forward").expect("a key");
        m.run(Duration::from_millis(500));
        let last_seq = m.mesh.peers[bob].client.last_frame().and_then(|f| f.player.as_ref()).map(|p| p.last_input_seq);
        assert_eq!(last_seq, Some(seq), "bob's keys reach the new host");
        let shadow = m.mesh.peers[bob].shadow.as_ref().expect("bob shadows the new host");
        assert!(
            shadow.meta().chat.iter().any(|l| l.contains("just before the crash")),
            "the new host's checkpoints carry it"
        );
    }

    #[test]
    fn mid_round_migration_is_on_for_tanks_unless_the_game_config_turns_it_off() {
        use vimp_host::engine::migration::GameMigration;
        let mid_round = |config: InitConfig| {
            let host = Host::new(config, TanksPlugin).expect("host");
            host.world().resource::<GameMigration>().mid_round
        };
        let mut config = vimp_host::tanks::init_config(1);
        assert!(mid_round(config.clone()), "the tanks default");
        config.game.as_object_mut().expect("an object").remove("migration");
        assert!(mid_round(config.clone()), "the tanks default, without the key");
        config.game["migration"] = serde_json::json!({ "midRound": false });
        assert!(!mid_round(config), "turned off");
        // The engine alone reads the flag, off without it (spec 002).
        assert!(!GameMigration::from_game(&serde_json::json!({})).mid_round);
        assert!(!GameMigration::from_game(&serde_json::json!(7)).mid_round);
        assert!(GameMigration::from_game(&serde_json::json!({ "migration": { "midRound": true } })).mid_round);
    }

    #[test]
    fn with_mid_round_migration_off_a_takeover_restarts_the_round_and_keeps_the_standings() {
        use vimp_host::engine::mapstate::MapState;
        use vimp_host::engine::physics::Physics;
        use vimp_host::tanks::rounds::Round;
        use vimp_host::tanks::tank::Tank;

        let mut config = vimp_host::tanks::init_config(SEED);
        config.game["migration"] = serde_json::json!({ "midRound": false });
        let (mut m, [ann, bob, cy]) = three_clients_with(config, 6);
        let all = [ann, bob, cy];
        let tokens = seats(m.mesh.server.roster().seats());
        let welcomes = all.map(|i| m.client(i).welcome().cloned().expect("welcomed"));
        let round = m.mesh.server.host().world().resource::<Round>().clone();
        assert!(round.time_left() < 175.0, "the round is well under way: {round:?}");

        m.kill_first_host();
        assert!(m.run_until(Duration::from_secs(2), |m| !m.new_hosts.is_empty()), "a successor took over");
        let (who, _, from_tick, start) = m.takeovers[0].clone();
        assert_eq!(who, ann);
        assert_eq!(m.history.get(&from_tick), Some(&start), "players, teams and scores as the old host had them");

        // The round started again: timer full, team frags cleared, every tank whole at a spawn.
        let host = m.new_hosts[0].1.host_mut();
        let rules = vimp_host::tanks::config::TanksConfig::default();
        let restarted = host.world().resource::<Round>().clone();
        assert!(restarted.time_left() >= rules.rounds.round_seconds - 0.05, "{restarted:?}");
        assert_eq!(restarted.team_frags, [0, 0]);
        assert_eq!((restarted.wins, restarted.games), (round.wins, round.games), "the game's tally stays");
        let world = host.world_mut();
        let tanks: Vec<Tank> = world.query::<&Tank>().iter(world).cloned().collect();
        assert_eq!(tanks.len(), start.len(), "a tank for every participant");
        let (physics, map) = (world.resource::<Physics>(), world.resource::<MapState>());
        let respawns = map.map.as_ref().expect("a map").respawns();
        for t in &tanks {
            assert!(t.alive && t.health == rules.models.tank.health, "{:?} whole", t.player);
            let [x, y] = t.position(physics);
            let spawns = respawns.get(&t.team.to_string()).expect("team respawns");
            let at_spawn = spawns.iter().any(|p| (p[0] - x).abs() < 0.01 && (p[1] - y).abs() < 0.01);
            assert!(at_spawn, "{:?} at a respawn point of team {}: ({x}, {y})", t.player, t.team);
        }

        // Everyone resumes in their own slot, with their token.
        let resumed = m.run_until(Duration::from_secs(3), |m| all.iter().all(|i| m.client(*i).stats().migrations == 1));
        assert!(resumed, "everyone resumed: {:?}", all.map(|i| m.client(i).stats().clone()));
        let new_host = &m.new_hosts[0].1;
        assert_eq!(seats(new_host.roster().seats()), tokens, "every slot with its name and token");
        for (i, old) in all.into_iter().zip(&welcomes) {
            let w = m.client(i).welcome().expect("welcomed");
            assert_eq!((w.player_id, w.token, w.epoch, w.resumed), (old.player_id, old.token, 2, true));
        }
        let after: Vec<(PlayerId, String, u8)> =
            standings(new_host.host()).into_iter().map(|s| (s.0, s.1, s.2)).collect();
        let before: Vec<(PlayerId, String, u8)> = start.iter().map(|s| (s.0, s.1.clone(), s.2)).collect();
        assert_eq!(after, before, "the same players in the same teams");
    }

    #[test]
    fn a_graceful_handoff_loses_no_tick() {
        let (mut m, [ann, bob, cy]) = three_clients(4);
        let now = m.mesh.now;
        let to = m.mesh.server.hand_off(now);
        assert_eq!(to, Some(PeerKey(1)), "ann, the first successor");
        let tick = m.mesh.server.host().tick();
        // The old host's process lingers silently until its last frames are out.
        m.first_alive = false;
        // Ann's snapshots of the old host that came in the batch with its handoff do not
        // count as a host change of their own: one change each, to the new host.
        let resumed = m
            .run_until(Duration::from_secs(2), |m| [ann, bob, cy].iter().all(|i| m.client(*i).stats().migrations == 1));
        assert!([ann, bob, cy].iter().all(|i| m.client(*i).stats().host_epoch == 2), "all at the new host's epoch");
        assert!(resumed, "everyone resumed: {:?}", [ann, bob, cy].map(|i| m.client(i).stats().clone()));
        let (who, _, from_tick, _) = m.takeovers[0];
        assert_eq!(who, ann);
        assert_eq!(from_tick, tick, "the successor continues from the host's very tick");
        let rewinds = [ann, bob, cy].map(|i| m.client(i).stats().rewind_ms);
        eprintln!("handoff at tick {tick}: {} ticks lost; rewind per client {rewinds:?}", tick - from_tick);
        assert!(rewinds.iter().all(|r| *r == Some(0.0)), "no client saw the match go back: {rewinds:?}");
        assert!(m.mesh.peers[ann].errors.is_empty(), "{:?}", m.mesh.peers[ann].errors);
        m.kill_first_host();
        m.run(Duration::from_secs(1));
        assert!(m.new_hosts[0].1.host().tick() >= tick + 100, "the match goes on");
    }

    #[test]
    fn a_host_that_stalls_and_speaks_again_before_anyone_takes_over_keeps_its_clients() {
        let (mut m, [ann, bob, cy]) = three_clients(4);
        let all = [ann, bob, cy];
        // Nobody can take over (no shadow), and the host goes quiet past the timeout.
        for p in &mut m.mesh.peers {
            p.shadow = None;
        }
        m.first_alive = false;
        let noticed = m.run_until(Duration::from_secs(2), |m| all.iter().all(|i| m.client(*i).host_lost()));
        assert!(noticed, "the silence is noticed");
        m.run(Duration::from_millis(300));
        m.first_alive = true;
        let back = m.run_until(Duration::from_secs(2), |m| {
            all.iter().all(|i| !m.client(*i).host_lost() && m.client(*i).stats().stalls_survived == 1)
        });
        assert!(back, "everyone carries on with the host: {:?}", all.map(|i| m.client(i).stats().clone()));
        let before = all.map(|i| m.client(i).stats().snapshots);
        m.run(Duration::from_secs(1));
        for (k, i) in all.into_iter().enumerate() {
            let c = m.client(i);
            assert_eq!(c.closed(), None);
            assert_eq!(c.stats().migrations, 0, "no host change");
            assert!(c.stats().snapshots >= before[k] + 20, "frames flow again: {:?}", c.stats());
        }
        assert!(m.takeovers.is_empty());
    }

    #[test]
    fn when_the_first_successor_is_gone_too_the_next_takes_over() {
        let (mut m, _) = three_clients(4);
        // Peer keys are 1, 2, 3 for clients 0, 1, 2.
        let order: Vec<usize> = m.mesh.server.succession().iter().map(|p| p.0 as usize - 1).collect();
        let [ann, bob, cy] = [order[0], order[1], order[2]];
        let welcomes = [bob, cy].map(|i| m.client(i).welcome().cloned().expect("welcomed"));
        // The host and ann fall silent together (killed over links that do not report it).
        m.first_alive = false;
        m.frozen.push(ann);
        let silent_at = m.mesh.now;
        let resumed =
            m.run_until(Duration::from_secs(4), |m| [bob, cy].iter().all(|i| m.client(*i).stats().migrations == 1));
        assert!(resumed, "bob and cy resumed: {:?}", [bob, cy].map(|i| m.client(i).stats().clone()));
        assert_eq!(m.takeovers.len(), 1);
        let (who, at, _, _) = m.takeovers[0];
        assert_eq!(who, bob, "the second successor");
        let waited = at - silent_at;
        // bob notices the silence after 500 ms and gives ann another 500 ms to claim.
        assert!(waited >= Duration::from_millis(1000), "bob waited for ann: {waited:?}");
        assert!(waited <= Duration::from_millis(1100), "but not longer: {waited:?}");
        assert_eq!(m.new_hosts[0].1.epoch(), 2);
        for (i, old) in [bob, cy].into_iter().zip(&welcomes) {
            let w = m.client(i).welcome().expect("welcomed");
            assert_eq!((w.player_id, w.token, w.epoch, w.resumed), (old.player_id, old.token, 2, true));
        }
        let tick = m.new_hosts[0].1.host().tick();
        m.run(Duration::from_secs(1));
        assert!(m.new_hosts[0].1.host().tick() >= tick + 100, "the match goes on");
        assert!(m.new_hosts[0].1.roster().seat(PlayerId(welcomes[0].player_id)).is_some_and(|s| s.peer.is_some()));
    }

    /// Puts a raw `CLAIM` from `from` on its link to `to`.
    fn claim(m: &mut Migrating, from: usize, to: usize, claim: Claim) {
        let now = m.mesh.now;
        let mut frame = vec![vimp_netcode::frame::op::CLAIM];
        frame.extend_from_slice(&claim.encode());
        let to = m.client(to).transport().local_id().expect("an id");
        m.mesh.peers[from].client.transport_mut().send(now, to, Channel::Reliable, frame);
    }

    #[test]
    fn stale_and_lower_ranked_claims_are_refused() {
        let (mut m, [ann, bob, cy]) = three_clients(3);
        // A claim at the host's own epoch: stale.
        claim(&mut m, ann, cy, Claim { epoch: 1, rank: 0, tick: 0 });
        m.run(Duration::from_millis(300));
        assert_eq!(m.client(cy).stats().claims_refused, 1);
        assert_eq!(m.client(cy).host_peer(), Some(HOST), "cy stays with its host");
        assert_eq!(m.client(cy).stats().migrations, 0);

        // The host dies; ann takes over (epoch 2, rank 0).
        m.kill_first_host();
        assert!(m.run_until(Duration::from_secs(3), |m| m.client(cy).stats().migrations == 1));
        let snapshots = m.client(cy).stats().snapshots;
        // bob at the same epoch but ranked lower, an old-epoch claim, and cy claiming ann's own
        // (epoch, rank) to bob: none beats ann, all refused.
        claim(&mut m, bob, cy, Claim { epoch: 2, rank: 1, tick: 0 });
        claim(&mut m, bob, cy, Claim { epoch: 1, rank: 0, tick: 0 });
        claim(&mut m, cy, bob, Claim { epoch: 2, rank: 0, tick: 0 });
        m.run(Duration::from_millis(500));
        assert_eq!(m.client(cy).stats().claims_refused, 3);
        assert_eq!(m.client(bob).stats().claims_refused, 1);
        for i in [bob, cy] {
            assert_eq!(m.client(i).host_peer(), Some(PeerKey(1)), "{i} stays with ann");
            assert_eq!(m.client(i).stats().migrations, 1);
        }
        assert!(m.client(cy).stats().snapshots > snapshots + 10, "frames keep coming from ann");
    }

    /// Each client's (player, token): what it resumes with after a host change.
    fn slots(m: &Migrating, who: &[usize]) -> Vec<(u8, vimp_netcode::session::SessionToken)> {
        who.iter().map(|i| m.client(*i).welcome().map(|w| (w.player_id, w.token)).expect("welcomed")).collect()
    }

    /// Whether every client of `who` follows `host` at `epoch`, welcomed back into its slot.
    fn all_follow(m: &Migrating, who: &[usize], host: PeerKey, epoch: u32) -> bool {
        who.iter().all(|i| {
            let c = m.client(*i);
            c.host_peer() == Some(host) && c.welcome().is_some_and(|w| w.epoch == epoch && w.resumed)
        })
    }

    #[test]
    fn two_claimants_at_one_epoch_resolve_to_the_better_ranked_and_the_loser_steps_down() {
        let (mut m, [ann, bob, cy]) = three_clients(4);
        let all = [ann, bob, cy];
        let before = slots(&m, &all);
        let tokens = seats(m.mesh.server.roster().seats());
        // bob promotes the moment he notices the loss, like ann: two claims at epoch 2.
        m.eager.push(bob);
        m.kill_first_host();
        let settled = m.run_until(Duration::from_secs(3), |m| {
            !m.retired.is_empty() && all_follow(m, &all, PeerKey(1), 2) && m.client(bob).stats().snapshots > 0
        });
        assert!(
            settled,
            "everyone follows ann: {:?}",
            all.map(|i| (m.client(i).host_peer(), m.client(i).stats().clone()))
        );
        assert_eq!(m.takeovers.len(), 2, "both promoted");
        assert_eq!(m.takeovers[0].1, m.takeovers[1].1, "at the same moment");
        assert_eq!(m.retired.len(), 1);
        let (loser, lost_to, handed_off, _, _) = m.retired[0];
        assert_eq!(loser, bob, "the lower-ranked claimant steps down");
        assert_eq!(lost_to.map(|(p, c)| (p, c.epoch, c.rank)), Some((PeerKey(1), 2, 0)), "to ann's claim");
        assert_eq!(handed_off, None);
        assert_eq!(m.client(bob).stats().step_downs, 1);
        assert_eq!(m.new_hosts.len(), 1);
        assert_eq!(m.new_hosts[0].0, ann);

        // Every client in its own slot, with its token; scores and teams as the old host had them.
        assert_eq!(slots(&m, &all), before, "same slots and tokens");
        let (_, _, from_tick, ref start) = m.takeovers.iter().find(|t| t.0 == ann).cloned().expect("ann took over");
        assert_eq!(m.history.get(&from_tick), Some(start));
        let winner = &m.new_hosts[0].1;
        assert_eq!(seats(winner.roster().seats()), tokens, "every slot with its name and token");
        assert_eq!(standings(winner.host()).iter().find(|s| s.1 == "bob").map(|s| s.2), Some(2), "bob still in team 2");
        for i in all {
            let player = PlayerId(m.client(i).welcome().expect("welcomed").player_id);
            assert!(winner.roster().seat(player).is_some_and(|s| s.peer.is_some()), "{i} is connected to ann");
            assert!(m.client(i).closed().is_none(), "{:?}", m.client(i).closed());
        }

        // The match goes on, and bob's keys reach ann.
        let tick = winner.host().tick();
        let snapshots = all.map(|i| m.client(i).stats().snapshots);
        drive(&mut m, 60, 70, |_, _| {});
        assert!(m.new_hosts[0].1.host().tick() >= tick + 100, "the match goes on");
        for (k, i) in all.into_iter().enumerate() {
            assert!(m.client(i).stats().snapshots > snapshots[k] + 20, "frames flow to {i}");
        }
        let seq = m.mesh.peers[bob].client.key(KeyAction::Up, "forward").expect("a key");
        // (A frame has bob's player block only while his tank lives: a dead one respawns first.)
        let last_seq =
            |m: &Migrating| m.client(bob).last_frame().and_then(|f| f.player.as_ref()).map(|p| p.last_input_seq);
        assert!(
            m.run_until(Duration::from_secs(5), |m| last_seq(m) == Some(seq)),
            "bob's keys reach ann: {:?}",
            last_seq(&m)
        );
    }

    #[test]
    fn a_change_host_vote_hands_the_match_off_and_loses_no_tick() {
        let (mut m, [ann, bob, cy]) = three_clients(4);
        let all = [ann, bob, cy];
        let before = slots(&m, &all);
        // cy calls the vote; everyone but the host sees it.
        let id = m.mesh.peers[cy].client.call_change_host().expect("cy may call it");
        assert!(m.mesh.peers[cy].client.call_change_host().is_none(), "one vote at a time");
        let seen = m.run_until(Duration::from_secs(1), |m| all.iter().all(|i| m.client(*i).host_vote().is_some()));
        assert!(seen, "every client shows the vote");
        let view = m.client(bob).host_vote().expect("a vote");
        assert_eq!((view.id, view.caller, view.yes, view.no, view.electorate), (id, PeerKey(3), 1, 0, 3));
        assert_eq!((view.answer, view.passed), (None, false));
        assert!(view.remaining <= vimp_netcode::migration::HOST_VOTE_TIME);
        assert_eq!(m.client(cy).host_vote().and_then(|v| v.answer), Some(true), "the caller votes yes");
        assert_eq!(m.mesh.server.migration_stats().step_down_requests, 0, "the host knows nothing of it");
        m.run(Duration::from_millis(300));
        assert!(m.mesh.server.handed_off().is_none(), "1 yes of 3 is no majority");

        // bob says yes: 2 of 3, and the host hands off.
        assert!(m.mesh.peers[bob].client.answer_change_host(true));
        assert!(m.run_until(Duration::from_secs(1), |m| m.mesh.server.handed_off().is_some()), "the host steps down");
        assert_eq!(m.mesh.server.handed_off(), Some(PeerKey(1)), "to ann, the first successor");
        let tick = m.mesh.server.host().tick();
        let stats = m.mesh.server.migration_stats();
        assert_eq!((stats.step_down_requests, stats.step_downs_refused), (1, 0));
        let resumed = m.run_until(Duration::from_secs(2), |m| {
            all.iter().all(|i| m.client(*i).stats().migrations == 1) && all_follow(m, &all, PeerKey(1), 2)
        });
        assert!(resumed, "everyone follows ann: {:?}", all.map(|i| m.client(i).stats().clone()));
        assert_eq!(m.mesh.server.host().tick(), tick, "the old host stopped");

        let (who, _, from_tick, ref start) = m.takeovers[0];
        assert_eq!(who, ann);
        assert_eq!(from_tick, tick, "the successor continues from the host's very tick");
        assert_eq!(m.history.get(&tick), Some(start), "scores and teams as the host had them");
        let rewinds = all.map(|i| m.client(i).stats().rewind_ms);
        assert!(rewinds.iter().all(|r| *r == Some(0.0)), "no client saw the match go back: {rewinds:?}");
        assert_eq!(slots(&m, &all), before, "same slots and tokens");
        assert!(all.iter().any(|i| m.client(*i).stats().host_votes_passed == 1), "someone counted the majority");
        assert!(all.iter().all(|i| m.client(*i).host_vote().is_none()), "the vote is over with the host change");
        assert!(m.mesh.peers[ann].errors.is_empty(), "{:?}", m.mesh.peers[ann].errors);
        m.kill_first_host();
        m.run(Duration::from_secs(1));
        assert!(m.new_hosts[0].1.host().tick() >= tick + 100, "the match goes on");
    }

    /// Puts a raw frame from client `from` on its link to client `to`.
    fn raw(m: &mut Migrating, from: usize, to: usize, opcode: u8, payload: &[u8]) {
        let now = m.mesh.now;
        let mut frame = vec![opcode];
        frame.extend_from_slice(payload);
        let to = m.client(to).transport().local_id().expect("an id");
        m.mesh.peers[from].client.transport_mut().send(now, to, Channel::Reliable, frame);
    }

    #[test]
    fn change_host_frames_out_of_place_are_refused_and_so_is_a_step_down_without_a_majority() {
        use vimp_netcode::frame::op;
        use vimp_netcode::migration::{HostVote, StepDown};
        let (mut m, [ann, bob, cy]) = three_clients(3);
        raw(&mut m, ann, cy, op::HOST_VOTE, b"junk");
        raw(&mut m, ann, cy, op::HOST_VOTE, &HostVote { epoch: 9, caller: PeerKey(1), id: 1 }.encode());
        raw(&mut m, ann, cy, op::HOST_VOTE, &HostVote { epoch: 1, caller: PeerKey(2), id: 1 }.encode());
        raw(&mut m, ann, cy, op::HOST_BALLOT, &[0, 0, 0, 1, 7]);
        m.run(Duration::from_millis(300));
        assert_eq!(m.client(cy).stats().votes_refused, 4, "junk, another epoch, a forged caller, a junk ballot");
        assert!(m.client(cy).host_vote().is_none());
        assert!(m.client(cy).closed().is_none());

        // A STEP_DOWN whose majority is not one of the host's own count: refused.
        m.mesh.peers[bob].client.send_meta(op::STEP_DOWN, &StepDown { id: 1, yes: 1, electorate: 1 }.encode());
        m.run(Duration::from_millis(300));
        assert_eq!(m.mesh.server.handed_off(), None);
        let stats = m.mesh.server.migration_stats();
        assert_eq!((stats.step_down_requests, stats.step_downs_refused), (1, 1));
        // One that does not decode closes its sender with 4400, and only it.
        m.mesh.peers[bob].client.send_meta(op::STEP_DOWN, &[0, 0, 0, 1, 0, 3, 0, 2]);
        m.run(Duration::from_millis(300));
        assert_eq!(m.client(bob).closed().map(|c| c.0), Some(4400));
        assert_eq!(m.mesh.server.handed_off(), None);
        assert!(m.client(ann).closed().is_none() && m.client(cy).closed().is_none());
    }

    #[test]
    fn a_host_voted_away_takes_its_own_player_to_the_successor() {
        let (mut m, [ann, bob, cy]) = three_clients(4);
        let all = [ann, bob, cy];
        let before = slots(&m, &all);
        // ann takes over a crash: her player is on the in-process link to her own server.
        m.kill_first_host();
        assert!(m.run_until(Duration::from_secs(3), |m| all_follow(m, &all, PeerKey(1), 2)));
        // ann's list: bob and cy (her own player never), each shadowing her.
        let ready = m.run_until(Duration::from_secs(4), |m| {
            [bob, cy].iter().all(|i| m.mesh.peers[*i].shadow.is_some())
                && m.client(bob).succession().is_some_and(|s| s.epoch == 2 && s.peers.len() == 2)
        });
        assert!(ready, "bob and cy shadow ann: {:?}", m.new_hosts[0].1.succession());
        let first = m.new_hosts[0].1.succession()[0];
        let first_i = first.0 as usize - 1;

        // A vote ann's own player cannot take part in: 2 of 2 say yes.
        assert!(m.mesh.peers[ann].client.call_change_host().is_none(), "the host's own player may not call it");
        m.mesh.peers[bob].client.call_change_host().expect("bob may call it");
        assert!(m.run_until(Duration::from_secs(1), |m| m.client(cy).host_vote().is_some()));
        assert_eq!(m.client(cy).host_vote().map(|v| v.electorate), Some(2));
        assert!(m.mesh.peers[cy].client.answer_change_host(true));
        assert!(m.run_until(Duration::from_secs(1), |m| !m.retired.is_empty()), "ann's server steps down");
        let (who, superseded, handed_off, tick, ref at_handoff) = m.retired[0];
        assert_eq!((who, superseded, handed_off), (ann, None, Some(first)));
        let at_handoff = at_handoff.clone();

        // Everyone, ann included, follows the first successor at epoch 3 in their own slots.
        let resumed = m.run_until(Duration::from_secs(3), |m| {
            all_follow(m, &all, first, 3) && all.iter().all(|i| m.client(*i).stats().migrations == 2)
        });
        assert!(
            resumed,
            "everyone follows {first}: {:?}",
            all.map(|i| (m.client(i).host_peer(), m.client(i).stats().clone()))
        );
        assert_eq!(slots(&m, &all), before, "same slots and tokens");
        assert_eq!(m.client(ann).stats().step_downs, 1);
        let (who, _, from_tick, ref start) = m.takeovers[1];
        assert_eq!((who, from_tick), (first_i, tick), "the successor continues from ann's very tick");
        assert_eq!(start, &at_handoff, "scores and teams as ann's server had them");
        assert!(start.iter().any(|s| s.1 == "ann"), "ann plays on");
        let rewinds = all.map(|i| m.client(i).stats().rewind_ms);
        assert!(rewinds.iter().all(|r| *r == Some(0.0)), "no client saw the match go back: {rewinds:?}");

        // The match goes on with ann as a client, her keys reaching the new host.
        let new_host = &m.new_hosts.iter().find(|(i, _)| *i == first_i).expect("the successor hosts").1;
        let tick = new_host.host().tick();
        let seq = m.mesh.peers[ann].client.key(KeyAction::Down, "left").expect("a key");
        m.run(Duration::from_secs(1));
        let new_host = &m.new_hosts.iter().find(|(i, _)| *i == first_i).expect("the successor hosts").1;
        assert!(new_host.host().tick() >= tick + 100, "the match goes on");
        // (Read on the host: a frame carries ann's player block only while her tank lives.)
        let ann_player = PlayerId(m.client(ann).welcome().expect("welcomed").player_id);
        let participants = new_host.host().world().resource::<vimp_host::engine::players::Participants>();
        let last_seq = participants.0.get(&ann_player).map(|p| p.keys.last_input_seq());
        assert_eq!(last_seq, Some(seq), "ann's keys reach the new host");
    }
}

/// The client's predictor and the host, fed the same keys, agree bit for bit.
mod prediction {
    use vimp_host::engine::map::MapConfig;
    use vimp_host::engine::physics::Physics;
    use vimp_host::engine::tags::{is_map_object, tag_kind};
    use vimp_host::prelude::*;
    use vimp_host::tanks::movement::Motion;
    use vimp_host::tanks::predict::{Predictor, PredictorConfig};
    use vimp_host::tanks::tank::{TANK_KIND, Tank};
    use vimp_netcode::input::{InputEvent, KeyAction};

    const HUMAN: PlayerId = PlayerId(0);

    pub(crate) fn host_motion(host: &mut Host, player: PlayerId) -> Option<Motion> {
        let world = host.world_mut();
        let tank = world.query::<&Tank>().iter(world).find(|t| t.player == player)?.clone();
        Some(tank.motion(world.resource::<Physics>()))
    }

    /// Key changes of the parity drive: turn in place towards the left wall, drive into it
    /// and scrape down it into the corner, back off, turn, drive again, the gun turning and
    /// firing tracers all along, throttle flipping between forward and back.
    fn drive_script(tick: u32) -> &'static [(KeyAction, &'static str)] {
        use KeyAction::{Down, Up};
        match tick {
            2 => &[(Down, "right"), (Down, "gunLeft")],
            80 => &[(Up, "right"), (Down, "forward")],
            150 => &[(Down, "fire")],
            200 => &[(Up, "gunLeft"), (Down, "gunRight")],
            230 => &[(Down, "fire")],
            300 => &[(Up, "forward"), (Down, "back")],
            330 => &[(Up, "gunRight"), (Down, "fire")],
            420 => &[(Down, "right")],
            460 => &[(Up, "back"), (Down, "forward"), (Up, "right"), (Down, "fire")],
            540 => &[(Down, "left")],
            620 => &[(Up, "left"), (Down, "gunLeft")],
            700 => &[(Up, "forward")],
            740 => &[(Down, "back"), (Down, "right")],
            820 => &[(Up, "back"), (Up, "right"), (Up, "gunLeft")],
            _ => &[],
        }
    }

    #[test]
    fn prediction_parity() {
        const TICKS: u32 = 900;
        let init = vimp_host::tanks::init_config(3);
        let client_config = vimp_host::tanks::client_config(&init);
        let map = MapConfig::from_json("small", super::SMALL).expect("map");
        let mut host = Host::new(init, TanksPlugin).expect("host");
        host.load_map(map.clone()).expect("map loads");
        host.push(HostCommand::Join { player: HUMAN, name: "human".into(), team: None, bot: false });
        host.step();
        let mut predictor = Predictor::new(&client_config, &map, HUMAN, PredictorConfig::default()).expect("predictor");
        let start = host_motion(&mut host, HUMAN).expect("the tank joined");
        let first = predictor.on_player_block(host.tick() as f64 * 1000.0 / 120.0, 0, start.to_state());
        assert!(first.is_some_and(|c| c.snapped), "the first block places the tank");

        let (mut seq, mut wall_contacts, mut path) = (0, 0, 0.0);
        let mut last = start;
        for _ in 0..TICKS {
            let tick = host.tick() + 1;
            for &(action, name) in drive_script(tick) {
                seq += 1;
                host.push(HostCommand::Input { player: HUMAN, event: InputEvent { seq, action, name: name.into() } });
                predictor.key(seq, action, name).expect("a known key");
            }
            host.step();
            predictor.step();
            let authoritative = host_motion(&mut host, HUMAN).expect("the tank lives");
            let predicted = predictor.motion().expect("the predictor has a tank");
            let same =
                authoritative.to_state().iter().zip(predicted.to_state()).all(|(a, p)| a.to_bits() == p.to_bits());
            assert!(same, "tick {tick}: host {authoritative:?}\n predictor {predicted:?}");
            path += libm::hypotf(predicted.x - last.x, predicted.y - last.y);
            last = predicted;
            wall_contacts += host
                .world()
                .resource::<Physics>()
                .contacts()
                .iter()
                .filter(|c| c.started)
                .filter(|c| {
                    let (a, b) = (c.user_data1, c.user_data2);
                    (tag_kind(a) == TANK_KIND && is_map_object(b)) || (tag_kind(b) == TANK_KIND && is_map_object(a))
                })
                .count();
        }
        assert!(wall_contacts >= 2, "the drive touches walls: {wall_contacts} contacts started");
        assert!(path > 400.0, "the tank drove {path} units");
    }

    /// A client over a lossy link predicts its tank; after the first seconds the host's
    /// blocks only ever nudge the prediction.
    #[test]
    fn reconciliation_over_a_lossy_link_converges() {
        use std::time::Duration;
        use vimp_host::engine::server::{Server, ServerConfig};
        use vimp_netcode::client::Client;
        use vimp_netcode::frame::op;
        use vimp_netcode::link::LinkConfig;
        use vimp_netcode::session::Hello;
        use vimp_netcode::transport::{MemoryTransport, PeerKey};

        let init = vimp_host::tanks::init_config(9);
        let client_config = vimp_host::tanks::client_config(&init);
        let mut host = Host::new(init, TanksPlugin).expect("host");
        host.load_map_json("small", super::SMALL).expect("map");
        let mut server_transport = MemoryTransport::new(PeerKey(1000));
        let mut transport = MemoryTransport::new(PeerKey(1));
        let link =
            LinkConfig::new().latency(Duration::from_millis(40)).jitter(Duration::from_millis(8)).loss(0.05).seed(17);
        MemoryTransport::connect(&mut transport, &mut server_transport, link);
        let config = ServerConfig { client_config: client_config.clone(), ..ServerConfig::default() };
        let mut server = Server::new(host, server_transport, config);
        let hello = Hello::new("driver", "test");
        let mut client = Client::new(transport, hello);

        let step = 1.0 / 120.0f64;
        let mut predictor: Option<(Predictor, Duration)> = None;
        let (mut last_frame, mut held) = (0, None);
        let mut corrections = Vec::new();
        let keys = ["forward", "left", "forward", "right", "back", "forward", "gunLeft"];
        for ms in 1..=12_000u64 {
            let now = Duration::from_millis(ms);
            client.update(now);
            for (port, payload) in client.take_meta() {
                if port == op::MAP_DATA && predictor.is_none() {
                    let text = std::str::from_utf8(&payload).expect("utf-8");
                    let map = MapConfig::from_json("map", text).expect("the host's map");
                    let player = PlayerId(client.welcome().expect("welcomed").player_id);
                    let p =
                        Predictor::new(&client_config, &map, player, PredictorConfig::default()).expect("predictor");
                    predictor = Some((p, now));
                }
            }
            if let Some((p, since)) = predictor.as_mut() {
                if let Some(frame) = client.last_frame().filter(|f| f.seq > last_frame).cloned() {
                    last_frame = frame.seq;
                    let obstacles = p.obstacles_from(&frame);
                    p.set_obstacles(&obstacles);
                    if let Some(c) = p.on_frame(&frame) {
                        corrections.push((now, c));
                    }
                }
                let want = keys[(ms / 500) as usize % keys.len()];
                if held != Some(want) {
                    for (action, name) in
                        held.map(|old| (KeyAction::Up, old)).into_iter().chain([(KeyAction::Down, want)])
                    {
                        let seq = client.key(action, name).expect("keys are known");
                        p.key(seq, action, name).expect("the same keys");
                    }
                    held = Some(want);
                }
                let due = ((now - *since).as_secs_f64() / step) as u32;
                while p.tick() < due {
                    p.step();
                }
            }
            server.update(now);
        }
        let (p, since) = predictor.expect("the client got the map");
        // The host started ticking at 1 ms, the predictor at `since`: `d` is that offset in
        // ticks plus the quickest one-way trip (32 ms, 3.8 ticks), plus up to a tick of
        // rounding and up to 3 ticks between snapshot ticks (the blocks that acknowledge).
        let offset = (since.as_secs_f64() - 0.001) / step;
        let d = p.delay().expect("inputs were acknowledged") as f64;
        assert!((3.0..=9.0).contains(&(d - offset)), "delay {d} ticks, {:.1} past the clock offset", d - offset);
        let late: Vec<f32> = corrections
            .iter()
            .filter(|(t, c)| *t > Duration::from_secs(3) && !c.snapped)
            .map(|(_, c)| c.distance)
            .collect();
        assert!(late.len() > 200, "{} blocks reconciled", late.len());
        let mut sorted = late.clone();
        sorted.sort_by(f32::total_cmp);
        let (p50, p95, max) = (sorted[sorted.len() / 2], sorted[sorted.len() * 95 / 100], sorted[sorted.len() - 1]);
        eprintln!(
            "corrections after 3 s: {} blocks, p50 {p50:.3} p95 {p95:.3} max {max:.3} units; delay {:?}",
            late.len(),
            p.delay()
        );
        assert!(p50 < 0.5 && p95 < 5.0 && max < 20.0, "p50 {p50} p95 {p95} max {max}");
    }
}
