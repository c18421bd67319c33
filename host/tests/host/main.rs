//! The host as a whole: determinism, dumps that continue bit-identically, map loads, frames.

use vimp_host::engine::map::load::MapLoadError;
use vimp_host::engine::map::state::MapState;
use vimp_host::engine::nav::Nav;
use vimp_host::engine::snapshot::{EventRows, FrameReceivers};
use vimp_host::prelude::*;
use vimp_host::tanks::GAME;
use vimp_host::tanks::bots::{Bot, BotSkill, Mode};
use vimp_host::tanks::figures::BotFigures;
use vimp_host::tanks::tank::Tank;
use vimp_host::tanks::weapons::Bomb;
use vimp_netcode::input::{Aim, InputEvent, KeyAction, ViewTime};
use vimp_netcode::schema::SnapshotSchema;
use vimp_netcode::snapshot::{Block, unpack};

const SMALL: &str = include_str!("../../../maps/test-small.json");
const DEFAULT: &str = include_str!("../../../maps/default.json");
const ROOMS: &str = include_str!("../../../maps/rooms.json");
const BRIDGE: &str = include_str!("../../../maps/bridge.json");

/// `default` cases, or as many as `PROPTEST_CASES` asks for.
pub(crate) fn cases(default: u32) -> proptest::prelude::ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(default);
    proptest::prelude::ProptestConfig::with_cases(cases)
}

fn host(seed: u64, map: &str, bots: u8) -> Host {
    let mut host = Host::new(vimp_host::tanks::init_config(seed), GAME).expect("host");
    host.load_map_json("map", map).expect("the map loads");
    for i in 0..bots {
        host.push(HostCommand::Join { player: PlayerId(i), name: format!("bot{i}"), team: None, bot: true });
    }
    host
}

/// A human player's scripted keys and aims: the same on every host that receives them.
fn script(tick: u32, seq: &mut u32) -> Vec<HostCommand> {
    let player = PlayerId(200);
    let key = |seq: &mut u32, action, name: &str| {
        *seq += 1;
        HostCommand::Input { player, event: InputEvent { seq: *seq, action, name: name.into() } }
    };
    let aim = |seq: &mut u32, at: Option<(f32, f32)>| {
        *seq += 1;
        HostCommand::Aim { player, seq: *seq, aim: at.and_then(|(x, y)| Aim::new(x, y, 0)) }
    };
    // What the player saw as it fired: the world of 150 ms ago, as a client over a 100 ms
    // round trip draws it (the shot is judged against the hulls as they were then).
    let view = |seq: &mut u32| {
        *seq += 1;
        HostCommand::View { player, seq: *seq, view: ViewTime { tick: tick.saturating_sub(18), frac: 77 } }
    };
    match tick % 240 {
        0 => vec![key(seq, KeyAction::Down, "forward"), key(seq, KeyAction::Down, "gunLeft")],
        60 => vec![key(seq, KeyAction::Down, "left"), view(seq), key(seq, KeyAction::Down, "fire")],
        90 => vec![
            key(seq, KeyAction::Up, "left"),
            key(seq, KeyAction::Up, "gunLeft"),
            key(seq, KeyAction::Down, "nextWeapon"),
            aim(seq, Some((256.0, 192.0))),
        ],
        105 => vec![aim(seq, Some((40.0, 40.0)))],
        120 => vec![
            key(seq, KeyAction::Up, "forward"),
            key(seq, KeyAction::Down, "back"),
            view(seq),
            key(seq, KeyAction::Down, "fire"),
        ],
        // The gun again, fired with a view as often as it reloads while bots move about.
        150 | 170 | 190 => vec![view(seq), key(seq, KeyAction::Down, "fire")],
        148 => vec![key(seq, KeyAction::Down, "nextWeapon")],
        200 => vec![key(seq, KeyAction::Up, "back"), key(seq, KeyAction::Down, "right")],
        180 => vec![aim(seq, Some((470.0, 350.0)))],
        230 => vec![key(seq, KeyAction::Up, "right"), aim(seq, None)],
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
        } else if tick == 240 + 169 {
            why = Some("right before a shot judged against the hulls of 150 ms ago");
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
            let twin = Host::restore(vimp_host::tanks::init_config(11), GAME, &bytes).expect("restore");
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
fn a_layered_match_restored_mid_climb_continues_bit_identically() {
    // Bots keep only their route's points up to a ramp or a ledge, and what lies across
    // follows from the map: a bot restored on its way up, on a ramp or falling carries on
    // exactly as the original.
    let mut original = bridge_hunt(6);
    let mut twins: Vec<(u32, &str, Host)> = Vec::new();
    let (mut saw_across, mut saw_riding, mut saw_falling) = (false, false, false);
    // Ten seconds past the last restore is enough to tell.
    let mut until = 2400;
    while original.tick() < until {
        original.step();
        for (_, _, twin) in &mut twins {
            twin.step();
        }
        let tick = original.tick();
        let bytes = original.serialize_state().expect("dump");
        for (at, why, twin) in &mut twins {
            assert!(twin.serialize_state().expect("dump") == bytes, "restored at tick {at} ({why}): differs at {tick}");
        }
        let tanks: Vec<(Tank, Bot)> = original
            .world_mut()
            .query::<(&Tank, &Bot)>()
            .iter(original.world())
            .map(|(t, b)| (t.clone(), b.clone()))
            .collect();
        let state = |t: &Tank| t.level.state;
        let riding = tanks.iter().any(|(t, _)| t.alive && state(t).z > 0.0 && !state(t).is_falling());
        let falling = tanks.iter().any(|(t, _)| state(t).is_falling());
        let across = tanks.iter().any(|(_, b)| b.route.len() >= 2 && b.route.last() != b.goal.as_ref());
        let why = if !saw_across && across {
            saw_across = true;
            Some("a bot on its way to a ramp")
        } else if !saw_riding && riding {
            saw_riding = true;
            Some("a bot on a ramp")
        } else if !saw_falling && falling {
            saw_falling = true;
            Some("a bot falling off a ledge")
        } else {
            None
        };
        if let Some(why) = why {
            twins.push((tick, why, Host::restore(vimp_host::tanks::init_config(6), GAME, &bytes).expect("restore")));
            if saw_across && saw_riding {
                until = until.min(tick + 1200);
            }
        }
    }
    assert!(saw_across && saw_riding, "routes across levels {saw_across}, ramps {saw_riding}");
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

/// What a budget costs the eye, as `vimp sim` measures it: with no budget every receiver holds
/// the host's world on every frame, off by its quantisation alone (format 5 frames by their
/// rounding); under a tight one, rows in view wait, and the measure sees them off and old.
#[test]
fn the_view_error_is_a_step_at_most_with_no_budget_and_shows_what_a_tight_budget_holds_back() {
    use vimp_host::engine::snapshot::{DeltaViewers, FrameReceivers, SnapshotBudget, ViewErrors};
    let run = |budget: u32| -> ViewErrors {
        let mut h = host(4, DEFAULT, 8);
        let bots = (0..8).map(PlayerId);
        h.world_mut().insert_resource(FrameReceivers(bots.clone().collect()));
        h.world_mut().insert_resource(DeltaViewers::perfect(bots).measuring());
        h.world_mut().insert_resource(SnapshotBudget(budget));
        // Ten seconds: the bots spawn, drive and fight.
        for _ in 0..1200 {
            h.step();
            h.take_frames();
        }
        h.world().resource::<DeltaViewers>().view_errors().cloned().expect("measured")
    };
    let max = |v: &[f32]| v.iter().copied().fold(0.0f32, f32::max);
    let free = run(0);
    let (d, v5) = (&free.delta, &free.full);
    assert!(d.on_screen.len() > 1000, "{} rows on screen measured", d.on_screen.len());
    // A delta frame's place is on a step of a twentieth: at most half a step off either way.
    let step = 0.05f32;
    assert!(max(&d.on_screen) <= step && max(&d.beyond) <= step, "with no budget every receiver holds the world");
    assert_eq!(max(&d.age_on_screen_ms), 0.0);
    assert_eq!(free.missing, 0);
    // Format 5 carries hundredths, and every row.
    assert_eq!(v5.on_screen.len() + v5.beyond.len(), d.on_screen.len() + d.beyond.len());
    assert!(max(&v5.on_screen).max(max(&v5.beyond)) <= 0.01, "format 5 is off by rounding alone");
    let tight = run(1500);
    let off = tight.delta.on_screen.iter().chain(&tight.delta.beyond).filter(|e| **e > step).count();
    let (n, missing) = (tight.delta.on_screen.len() + tight.delta.beyond.len(), tight.missing);
    assert!(off > 100, "1,500 B/s holds rows back: {off} of {n} measured off, {missing} missing");
    assert!(max(&tight.delta.age_beyond_ms).max(max(&tight.delta.age_on_screen_ms)) >= 100.0, "and old");
}

/// Every crate of a map rides in each frame's map block, whose ids and count are 8-bit: a map
/// with as many crates as that block holds plays with all of them in every frame, and one
/// with more is refused when it loads, saying why, instead of silencing the match.
#[test]
fn a_map_holds_as_many_crates_as_a_frame_carries_and_no_more() {
    let respawns = [[80.0, 112.0], [80.0, 272.0], [432.0, 272.0], [432.0, 112.0]];
    let crates = |n: usize| {
        let spots = (0..31).flat_map(|r| (0..43).map(move |c| (40.0 + 10.0 * c as f64, 40.0 + 10.0 * r as f64)));
        let free = spots.filter(|&(x, y)| {
            let pillar = (214.0..=298.0).contains(&x) && (150.0..=234.0).contains(&y);
            !pillar && respawns.iter().all(|p| (p[0] - x).hypot(p[1] - y) > 40.0)
        });
        let list: Vec<serde_json::Value> =
            free.take(n).map(|(x, y)| serde_json::json!({ "x": x, "y": y, "width": 6, "height": 6 })).collect();
        assert_eq!(list.len(), n, "room for {n} crates");
        let mut map: serde_json::Value = serde_json::from_str(SMALL).expect("json");
        map["physicsDynamic"] = serde_json::Value::Array(list);
        map.to_string()
    };
    let most = vimp_host::engine::map::MAX_DYNAMIC_OBJECTS;
    let mut h = host(3, SMALL, 2);
    h.load_map_json("full.json", &crates(most)).expect("a full map loads");
    h.world_mut().insert_resource(FrameReceivers([PlayerId(0)].into_iter().collect()));
    let schema = SnapshotSchema::from_json(vimp_host::tanks::rows::SCHEMA_JSON).expect("schema");
    let mut frames = Vec::new();
    for _ in 0..8 {
        h.step();
        frames.extend(h.take_frames().frames);
    }
    assert!(!frames.is_empty(), "frames are packed");
    for (_, bytes) in &frames {
        let frame = unpack(&schema, bytes).expect("decodes");
        match frame.block(5) {
            Some(Block::IndexedNoNull8(rows)) => assert_eq!(rows.len(), most, "every crate in every frame"),
            other => panic!("c1 block: {other:?}"),
        }
    }
    let err = h.load_map_json("over.json", &crates(most + 1)).expect_err("one crate too many");
    assert!(err.to_string().contains(&format!("at most {most}")), "{err}");
}

/// A second, tiny game — pucks pushed by one key — proves the engine needs nothing of tanks:
/// its own schema, its own rows, its own dump hooks.
mod second_game;

#[test]
fn a_second_game_runs_and_dumps_on_the_same_engine() {
    let mut a = Host::new(second_game::config(), second_game::PucksPlugin).expect("host");
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
    let mut b = Host::restore(second_game::config(), second_game::PucksPlugin, &dump).expect("restore");
    b.world_mut().insert_resource(FrameReceivers([PlayerId(0)].into_iter().collect()));
    let schema =
        SnapshotSchema::from_json(&serde_json::to_string(&second_game::config().engine.snapshot).expect("json"))
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
    let pushes: Vec<u32> = b.world_mut().query::<&second_game::Puck>().iter(b.world()).map(|p| p.pushes).collect();
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

/// The middle of the overpass's bridge (level 1), seen from the ground only along the bridge.
const BRIDGE_MIDDLE: [f32; 2] = [19.0 * 32.0 + 16.0, 16.0 * 32.0 + 16.0];

/// The overpass with two bots of team 1 and an idle player of team 2 (player 200) standing in
/// the middle of the bridge.
fn bridge_hunt(seed: u64) -> Host {
    let mut h = host(seed, BRIDGE, 0);
    h.push(HostCommand::Join { player: PlayerId(200), name: "human".into(), team: Some(2), bot: false });
    for i in 0..2 {
        h.push(HostCommand::Join { player: PlayerId(i), name: format!("bot{i}"), team: Some(1), bot: true });
    }
    h.step();
    place(&mut h, PlayerId(200), BRIDGE_MIDDLE, 1);
    h
}

/// Puts `player`'s tank at `at` on `level` of the loaded map, as a respawn would.
fn place(h: &mut Host, player: PlayerId, at: [f32; 2], level: u8) {
    let world = h.world_mut();
    let rules = world.resource::<vimp_host::tanks::TanksRules>().clone();
    let levels = world.resource::<MapState>().map.as_ref().map(|m| m.levels().clone());
    world.resource_scope(|world, mut physics: bevy::prelude::Mut<vimp_host::engine::physics::Physics>| {
        for mut tank in world.query::<&mut Tank>().iter_mut(world) {
            if tank.player == player {
                let spawn = vimp_host::tanks::tank::Spawn { at: [at[0], at[1], 0.0], level };
                vimp_host::tanks::tank::respawn(&mut tank, &mut physics, spawn, &rules, levels.as_ref());
            }
        }
    });
}

#[test]
fn bots_climb_to_the_bridge_and_come_back_down() {
    // The overpass: a bridge on level 1 over a wall band, two ramps up, a ledge to drop off.
    // Two bots of team 1 hunt an idle player of team 2, who stands on the bridge (seen from
    // the ground only along it) until a bot has driven up, then far off on the ground.
    let mut h = bridge_hunt(4);
    let human = PlayerId(200);
    let (bridge, ground) = (BRIDGE_MIDDLE, [36.0 * 32.0 + 16.0, 3.0 * 32.0 + 16.0]);
    let mut figures = BotFigures::default();
    // Per bot, the level it stood on the tick before, while alive.
    let mut last: std::collections::BTreeMap<PlayerId, u8> = Default::default();
    let (mut up, mut down) = (None, None);
    for tick in 0..60 * 120 {
        let human_level = h
            .world_mut()
            .query::<&Tank>()
            .iter(h.world())
            .find(|t| t.player == human)
            .map(|t| (t.alive, t.level.state.level));
        match (up, human_level) {
            (None, Some((true, 0))) => place(&mut h, human, bridge, 1),
            (Some(_), Some((true, 1))) => place(&mut h, human, ground, 0),
            _ => {}
        }
        h.step();
        figures.observe(h.world_mut());
        for t in h.world_mut().query::<&Tank>().iter(h.world()) {
            if t.player == human {
                continue;
            }
            let level = t.level.state.level;
            match last.insert(t.player, level).filter(|_| t.alive) {
                Some(0) if level == 1 => up = up.or(Some(tick)),
                Some(1) if level == 0 && up.is_some() => down = down.or(Some(tick)),
                _ => {}
            }
            if !t.alive {
                last.remove(&t.player);
            }
        }
        if down.is_some() {
            break;
        }
    }
    let up = up.expect("a bot drove up a ramp onto the bridge");
    let down = down.expect("and came back down");
    assert!(figures.ramp_climbs() > 0, "the figures counted the climb");
    assert!(up < 40 * 120 && down - up < 30 * 120, "up at tick {up}, down at {down}");
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
    let mut h = Host::new(config, GAME).expect("host");
    h.load_map_json("small", SMALL).expect("map");
    let mut informs = Vec::new();
    for _ in 0..(120 * 4) {
        h.step();
        informs.extend(h.take_meta().into_iter().filter_map(|m| match m.message {
            vimp_netcode::meta::MetaMessage::GameInform(inform) => Some(u64::from(inform.code)),
            _ => None,
        }));
    }
    // Round 1 starts at load; 1 s later it ends (0), 0.5 s later round 2 starts (1), ends (0),
    // the game is over (2) and a new game's round 1 starts (1).
    assert_eq!(informs[..6], [1, 0, 1, 0, 2, 1], "{informs:?}");
}

/// Host and clients over in-memory links with latency: the session protocol end to end.
mod network;

/// Meta over the network: key sets, panels, personal lines, chat commands, the game's form.
mod meta;

/// Host migration: the log, checkpoints and the successor's shadow.
mod migration;

/// The client's predictor and the host, fed the same keys, agree bit for bit.
mod prediction;

/// Layered maps: climbs, bridges, drops, their prediction and their dumps.
mod levels;
