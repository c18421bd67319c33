//! Layered maps end to end: a tank climbs a ramp, crosses a bridge over a wall and drops off
//! its open end; the predictor follows it bit for bit; dumps taken mid-climb, mid-fall and
//! with a crate falling continue bit-identically.

use vimp_host::engine::map::state::MapState;
use vimp_host::engine::map::{LevelState, MapConfig};
use vimp_host::engine::physics::Physics;
use vimp_host::prelude::*;
use vimp_host::tanks::GAME;
use vimp_host::tanks::level::TankLevel;
use vimp_host::tanks::movement::Motion;
use vimp_host::tanks::predict::{Predictor, PredictorConfig};
use vimp_host::tanks::tank::Tank;
use vimp_netcode::input::{InputEvent, KeyAction};

/// 20×10 tiles of 32. A ramp (tile 5) rises east over columns 4 to 7 of rows 4 and 5 to a
/// bridge on level 1 (rows 4 and 5, columns 8 to 15; rails on rows 3 and 6, but for columns
/// 13 and 14 of row 3, a ledge) that crosses the ground's wall band (column 12) and ends
/// open over the ground at column 16. Team 1 starts at the ramp's foot facing east, team 2
/// on the far side of the band. A crate stands on the bridge near its open end.
const RAMP_MAP: &str = r#"{
    "name": "ramp test", "tileSize": 32,
    "map": [
        [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],
        [1,0,0,0,0,0,0,0,0,0,0,0,2,0,0,0,0,0,0,1],
        [1,0,0,0,0,0,0,0,0,0,0,0,2,0,0,0,0,0,0,1],
        [1,0,0,0,0,0,0,0,0,0,0,0,2,0,0,0,0,0,0,1],
        [1,0,0,0,5,5,5,5,0,0,0,0,2,0,0,0,0,0,0,1],
        [1,0,0,0,5,5,5,5,0,0,0,0,2,0,0,0,0,0,0,1],
        [1,0,0,0,0,0,0,0,0,0,0,0,2,0,0,0,0,0,0,1],
        [1,0,0,0,0,0,0,0,0,0,0,0,2,0,0,0,0,0,0,1],
        [1,0,0,0,0,0,0,0,0,0,0,0,2,0,0,0,0,0,0,1],
        [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]
    ],
    "physicsStatic": [1, 2],
    "physicsDynamic": [{ "x": 503, "y": 156, "width": 8, "height": 8, "level": 1 }],
    "respawns": { "1": [[64, 160, 0]], "2": [[600, 272, 180]] },
    "layers": { "floor": [0], "walls": [1, 2], "ramps": [5] },
    "levels": { "1": {
        "map": [
            [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],
            [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],
            [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],
            [0,0,0,0,0,0,0,0,7,7,7,7,7,0,0,7,0,0,0,0],
            [0,0,0,0,0,0,0,0,9,9,9,9,9,9,9,9,0,0,0,0],
            [0,0,0,0,0,0,0,0,9,9,9,9,9,9,9,9,0,0,0,0],
            [0,0,0,0,0,0,0,0,7,7,7,7,7,7,7,7,0,0,0,0],
            [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],
            [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],
            [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]
        ],
        "floor": [7, 9], "walls": [7], "layers": { "slab": [9], "rails": [7] }
    } },
    "ramps": [{ "tile": 5, "dir": "east" }]
}"#;

const DRIVER: PlayerId = PlayerId(0);

fn map(with_crate: bool) -> MapConfig {
    let mut map = MapConfig::from_json("ramp test", RAMP_MAP).expect("the test map is valid");
    if !with_crate {
        map.physics_dynamic.clear();
    }
    map
}

fn host(seed: u64, map: &MapConfig) -> Host {
    let mut host = Host::new(vimp_host::tanks::init_config(seed), GAME).expect("host");
    host.load_map(map.clone()).expect("the map loads");
    host.push(HostCommand::Join { player: DRIVER, name: "driver".into(), team: Some(1), bot: false });
    host
}

fn tank(host: &mut Host, player: PlayerId) -> Tank {
    let world = host.world_mut();
    world.query::<&Tank>().iter(world).find(|t| t.player == player).expect("the tank").clone()
}

fn motion(host: &mut Host, player: PlayerId) -> Motion {
    let t = tank(host, player);
    t.motion(host.world().resource::<Physics>())
}

/// The driver's keys: full ahead from tick 2 on, east along the ramp's lane, over the bridge.
fn keys(tick: u32) -> &'static [(KeyAction, &'static str)] {
    match tick {
        2 => &[(KeyAction::Down, "forward")],
        _ => &[],
    }
}

/// What a layered story saw of the driver's tank.
#[derive(Debug, Default)]
struct Seen {
    climbing: bool,
    over_the_wall: bool,
    falling: bool,
    landed_beyond: bool,
}

impl Seen {
    fn note(&mut self, level: TankLevel, m: Motion) {
        let s = level.state;
        self.climbing |= !s.is_falling() && s.level == 0 && s.z > 0.0;
        // The ground's wall band is column 12: x 384..416.
        self.over_the_wall |= s.level == 1 && !s.is_falling() && (384.0..416.0).contains(&m.x);
        self.falling |= s.is_falling();
        self.landed_beyond |= self.falling && !s.is_falling() && s.level == 0 && m.x > 512.0;
    }
}

#[test]
fn a_tank_climbs_the_ramp_crosses_the_bridge_over_the_wall_and_drops_off_its_end() {
    let map = map(true);
    let mut host = host(1, &map);
    let mut seq = 0;
    let mut seen = Seen::default();
    let mut crate_fell = false;
    for _ in 0..720 {
        let tick = host.tick() + 1;
        for &(action, name) in keys(tick) {
            seq += 1;
            host.push(HostCommand::Input { player: DRIVER, event: InputEvent { seq, action, name: name.into() } });
        }
        host.step();
        let t = tank(&mut host, DRIVER);
        seen.note(t.level, motion(&mut host, DRIVER));
        crate_fell |= host.world().resource::<MapState>().levels[0].is_falling();
    }
    assert!(seen.climbing, "the tank climbed the ramp: {seen:?}");
    assert!(seen.over_the_wall, "it crossed the bridge above the ground's wall: {seen:?}");
    assert!(seen.falling && seen.landed_beyond, "it dropped off the open end and landed beyond it: {seen:?}");
    let t = tank(&mut host, DRIVER);
    let rules = vimp_host::tanks::config::TanksConfig::default();
    assert_eq!(t.health, rules.models.tank.health - rules.fall_damage, "a level's fall costs fallDamage");
    assert!(crate_fell, "the tank pushed the bridge's crate off its end");
    assert_eq!(host.world().resource::<MapState>().levels[0], LevelState::on(0), "the crate landed on the ground");
}

/// The predictor runs the host's level rule: fed the same keys, the climb, the crossing and
/// the fall are the host's bit for bit, level and height included, every tick.
#[test]
fn prediction_parity_on_a_layered_map_through_a_climb_a_crossing_and_a_fall() {
    let map = map(false);
    let init = vimp_host::tanks::init_config(2);
    let client_config = vimp_host::tanks::client_config(&init);
    let mut host = host(2, &map);
    host.step();
    let mut predictor = Predictor::new(&client_config, &map, DRIVER, PredictorConfig::default()).expect("predictor");
    let start = motion(&mut host, DRIVER);
    predictor.on_player_block(host.tick() as f64 * 1000.0 / 120.0, 0, start.to_state()).expect("placed");
    let (mut seq, mut seen) = (0, Seen::default());
    for _ in 0..720 {
        let tick = host.tick() + 1;
        for &(action, name) in keys(tick) {
            seq += 1;
            host.push(HostCommand::Input { player: DRIVER, event: InputEvent { seq, action, name: name.into() } });
            predictor.key(seq, action, name).expect("a known key");
        }
        host.step();
        predictor.step();
        let (authoritative, predicted) = (motion(&mut host, DRIVER), predictor.motion().expect("a tank"));
        let same = authoritative.to_state().iter().zip(predicted.to_state()).all(|(a, p)| a.to_bits() == p.to_bits());
        assert!(same, "tick {tick}: host {authoritative:?}\n predictor {predicted:?}");
        let level = tank(&mut host, DRIVER).level;
        assert_eq!(predictor.level().state, level.state, "tick {tick}: the levels agree");
        seen.note(level, authoritative);
    }
    assert!(seen.climbing && seen.over_the_wall && seen.falling && seen.landed_beyond, "{seen:?}");
}

/// A client whose keys reach the host two steps late, one of them three, gets the host's
/// blocks a step later, every step: a block's row gives its level back exactly (mid-climb
/// and mid-fall alike, or the prediction would rewind to a wrong one), the late key's
/// corrections replay the steps over the bridge's end and into the fall, and from then on
/// the prediction at each client step is the host's two steps on, bit for bit, level and
/// height included, to the landing and after.
#[test]
fn blocks_and_replays_over_the_edge_keep_the_prediction_on_the_host_s_level() {
    const LATENCY: u32 = 2;
    let map = map(false);
    let init = vimp_host::tanks::init_config(4);
    let client_config = vimp_host::tanks::client_config(&init);
    let mut host = host(4, &map);
    host.step();
    let mut predictor = Predictor::new(&client_config, &map, DRIVER, PredictorConfig::default()).expect("predictor");
    let start = motion(&mut host, DRIVER);
    predictor.on_player_block(host.tick() as f64 * 1000.0 / 120.0, 0, start.to_state()).expect("placed");
    predictor.step();
    assert_eq!(predictor.tick(), host.tick(), "client ticks count as the host's");
    let round2 = |v: f32| (v * 100.0).round() / 100.0;
    // The client's keys by client tick; the host gets each `LATENCY` ticks later, but for the
    // last, which is a tick later still. The turn ends right before the bridge's end.
    let keys: [(u32, KeyAction, &str); 3] =
        [(2, KeyAction::Down, "forward"), (376, KeyAction::Down, "left"), (378, KeyAction::Up, "left")];
    let host_tick_of = |k: usize| keys[k].0 + LATENCY + u32::from(k == 2);
    let mut hosts: Vec<(Motion, LevelState, u32)> = Vec::new();
    let mut predicted: Vec<(Motion, LevelState)> = Vec::new();
    let (mut replays_into_fall, mut blocks_mid_fall, mut blocks_mid_climb) = (0, 0, 0);
    for t in 2..760u32 {
        for (k, &(at, action, name)) in keys.iter().enumerate() {
            let seq = k as u32 + 1;
            if at == t {
                predictor.key(seq, action, name).expect("a known key");
            }
            if host_tick_of(k) == t {
                host.push(HostCommand::Input { player: DRIVER, event: InputEvent { seq, action, name: name.into() } });
            }
        }
        // The host's block from the last step, with its row's level and rounded z.
        if let Some(&(m, level, seq)) = hosts.last() {
            let ms = f64::from(t - 1) * 1000.0 / 120.0;
            let correction = predictor.reconcile(ms, seq, m.to_state(), Some((level.level, round2(level.z))));
            blocks_mid_fall += usize::from(level.is_falling());
            blocks_mid_climb += usize::from(!level.is_falling() && level.z > 0.0);
            let falling_after = predictor.level().state.is_falling();
            if correction.is_some_and(|c| c.replayed > 0) && falling_after {
                replays_into_fall += 1;
            }
        }
        host.step();
        predictor.step();
        assert_eq!(host.tick(), t, "host and client count the same ticks");
        let seq = keys.iter().enumerate().filter(|&(k, _)| host_tick_of(k) <= t).count() as u32;
        hosts.push((motion(&mut host, DRIVER), tank(&mut host, DRIVER).level.state, seq));
        predicted.push((predictor.motion().expect("a tank"), predictor.level().state));
    }
    assert!(blocks_mid_climb > 50 && blocks_mid_fall > 30, "blocks came mid-climb and mid-fall");
    assert!(replays_into_fall > 0, "a correction replayed steps into the fall");
    // From the late key on, client tick c is host tick c + LATENCY (both lists start at tick 2).
    let first_fall = hosts.iter().position(|(_, l, _)| l.is_falling()).expect("the host's tank fell");
    let from = host_tick_of(2) as usize - 2;
    assert!(from + (LATENCY as usize) <= first_fall + 2, "the check covers the fall: {from} {first_fall}");
    for c in from..predicted.len() - LATENCY as usize {
        let (pm, pl) = predicted[c];
        let (hm, hl, _) = hosts[c + LATENCY as usize];
        let same = pm.to_state().iter().zip(hm.to_state()).all(|(a, b)| a.to_bits() == b.to_bits());
        assert!(same && pl == hl, "client step {c}: {pm:?} {pl:?}\n host: {hm:?} {hl:?}");
    }
}

/// Dumps taken mid-climb, mid-fall and while the crate falls, restored into fresh hosts, run
/// on bit-identically with the original. (A match of bots on a layered map, dumped while they
/// climb, is `a_layered_match_restored_mid_climb_continues_bit_identically`'s and `vimp sim --check-dump-at`'s.)
#[test]
fn dumps_mid_climb_mid_fall_and_with_a_crate_falling_continue_bit_identically() {
    let map = map(true);
    let mut original = host(7, &map);
    let mut twins: Vec<(&str, Host)> = Vec::new();
    let mut seq = 0;
    let mut compared = 0;
    for _ in 0..720 {
        let tick = original.tick() + 1;
        let mut inputs = Vec::new();
        for &(action, name) in keys(tick) {
            seq += 1;
            inputs.push(HostCommand::Input { player: DRIVER, event: InputEvent { seq, action, name: name.into() } });
        }
        for host in std::iter::once(&mut original).chain(twins.iter_mut().map(|(_, h)| h)) {
            for c in &inputs {
                host.push(c.clone());
            }
            host.step();
        }
        let bytes = original.serialize_state().expect("dump");
        for (why, twin) in &mut twins {
            assert!(twin.serialize_state().expect("dump") == bytes, "restored {why}: the state differs at tick {tick}");
            compared += 1;
        }
        let level = tank(&mut original, DRIVER).level.state;
        let crate_falls = original.world().resource::<MapState>().levels[0].is_falling();
        let taken = |why: &str| twins.iter().any(|(w, _)| *w == why);
        let why = if !level.is_falling() && level.z > 0.0 && !taken("mid-climb") {
            Some("mid-climb")
        } else if level.is_falling() && !taken("mid-fall") {
            Some("mid-fall")
        } else if crate_falls && !taken("crate falling") {
            Some("crate falling")
        } else {
            None
        };
        if let Some(why) = why {
            let twin = Host::restore(vimp_host::tanks::init_config(7), GAME, &bytes).expect("restore");
            twins.push((why, twin));
        }
    }
    let names: Vec<&str> = twins.iter().map(|(w, _)| *w).collect();
    assert_eq!(names.len(), 3, "dumped mid-climb, mid-fall and with the crate falling: {names:?}");
    assert!(compared > 300, "compared {compared} states");
}

/// A successor's shadow, from a checkpoint taken mid-climb and the log since, takes the match
/// over while the tank falls off the bridge's end: the fall carries on on the new host, which
/// lands the tank and runs on exactly as the old host would have.
#[test]
fn a_takeover_mid_fall_carries_on() {
    use vimp_host::engine::migration::{Checkpoint, LogBatch, MetaState, Shadow};
    let map = map(true);
    let mut original = host(9, &map);
    original.push(HostCommand::Join { player: PlayerId(1), name: "bot1".into(), team: None, bot: true });
    original.start_log(30);
    let (mut seq, mut shadow) = (0, None::<Shadow>);
    let mut takeover = None;
    for _ in 0..900 {
        let tick = original.tick() + 1;
        for &(action, name) in keys(tick) {
            seq += 1;
            original.push(HostCommand::Input { player: DRIVER, event: InputEvent { seq, action, name: name.into() } });
        }
        original.step();
        let level = tank(&mut original, DRIVER).level.state;
        match shadow.as_mut() {
            None if !level.is_falling() && level.z > 0.0 => {
                let checkpoint = Checkpoint::capture(&mut original, 1, MetaState::default()).expect("checkpoint");
                original.take_log();
                let config = vimp_host::tanks::init_config(9);
                shadow = Some(Shadow::from_checkpoint(config, GAME, &checkpoint).expect("a shadow"));
            }
            Some(s) => {
                let batch = LogBatch::decode(&LogBatch::new(1, &original.take_log()).encode().expect("encode"));
                s.apply(&batch.expect("decode")).expect("the log applies");
                if level.is_falling() && level.fall < 30 && takeover.is_none() {
                    // The host dies here: the shadow, at the host's tick, becomes the new host.
                    let (new_host, _) = shadow.take().expect("the shadow").into_parts();
                    takeover = Some((original.tick(), new_host));
                    break;
                }
            }
            None => {}
        }
    }
    let (at, mut new_host) = takeover.expect("the tank fell while the shadow followed");
    assert_eq!(new_host.tick(), at);
    assert!(tank(&mut new_host, DRIVER).level.state.is_falling(), "the new host has the tank mid-fall");
    let mut landed = false;
    for _ in 0..120 {
        original.step();
        new_host.step();
        let clock = *original.world().resource::<vimp_host::engine::sim::FixedClock>();
        new_host.world_mut().insert_resource(clock);
        assert!(
            new_host.serialize_state().expect("dump") == original.serialize_state().expect("dump"),
            "tick {}",
            new_host.tick()
        );
        landed |= !tank(&mut new_host, DRIVER).level.state.is_falling();
    }
    assert!(landed, "the tank landed on the new host");
}
