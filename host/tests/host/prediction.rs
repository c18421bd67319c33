//! The client's predictor and the host, fed the same keys and aims, agree bit for bit.

use std::time::Duration;
use vimp_host::engine::map::MapConfig;
use vimp_host::engine::physics::Physics;
use vimp_host::engine::tags::{is_map_object, tag_kind};
use vimp_host::prelude::*;

use vimp_host::tanks::GAME;
use vimp_host::tanks::duel::{self, Duel};
use vimp_host::tanks::movement::Motion;
use vimp_host::tanks::predict::{Predictor, PredictorConfig};
use vimp_host::tanks::tank::{TANK_KIND, Tank};
use vimp_netcode::input::{AIM_PRESSED, Aim, InputEvent, KeyAction};

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

/// Aim changes of the parity drive (`Some(None)` lets go): the pointer aims while the gun
/// keys are held (they win) and while they are not, moves, presses, lets go, aims again.
fn aim_script(tick: u32) -> Option<Option<Aim>> {
    let at = |x, y, flags| Some(Aim::new(x, y, flags));
    match tick {
        100 => at(256.0, 192.0, 0),
        360 => at(450.0, 60.0, AIM_PRESSED),
        430 => at(449.5, 61.25, 0),
        500 => at(60.0, 350.0, 0),
        600 => Some(None),
        700 => at(480.0, 300.0, 0),
        860 => at(30.0, 30.0, AIM_PRESSED),
        _ => None,
    }
}

#[test]
fn prediction_parity() {
    const TICKS: u32 = 900;
    let init = vimp_host::tanks::init_config(3);
    let client_config = vimp_host::tanks::client_config(&init);
    let map = MapConfig::from_json("small", super::SMALL).expect("map");
    let mut host = Host::new(init, GAME).expect("host");
    host.load_map(map.clone()).expect("map loads");
    host.push(HostCommand::Join { player: HUMAN, name: "human".into(), team: None, bot: false });
    host.step();
    let mut predictor = Predictor::new(&client_config, &map, HUMAN, PredictorConfig::default()).expect("predictor");
    let start = host_motion(&mut host, HUMAN).expect("the tank joined");
    let first = predictor.on_player_block(host.tick() as f64 * 1000.0 / 120.0, 0, start.to_state());
    assert!(first.is_some_and(|c| c.snapped), "the first block places the tank");

    let (mut seq, mut wall_contacts, mut path) = (0, 0, 0.0);
    let (mut aim, mut gun_keys, mut on_target) = (None, 0, 0);
    let mut last = start;
    for _ in 0..TICKS {
        let tick = host.tick() + 1;
        for &(action, name) in drive_script(tick) {
            seq += 1;
            host.push(HostCommand::Input { player: HUMAN, event: InputEvent { seq, action, name: name.into() } });
            predictor.key(seq, action, name).expect("a known key");
            if name.starts_with("gun") {
                gun_keys = if action == KeyAction::Down { gun_keys + 1 } else { gun_keys - 1 };
            }
        }
        if let Some(change) = aim_script(tick) {
            seq += 1;
            host.push(HostCommand::Aim { player: HUMAN, seq, aim: change });
            assert!(predictor.aim(seq, change), "a new seq");
            aim = change;
        }
        host.step();
        predictor.step();
        let authoritative = host_motion(&mut host, HUMAN).expect("the tank lives");
        let predicted = predictor.motion().expect("the predictor has a tank");
        let same = authoritative.to_state().iter().zip(predicted.to_state()).all(|(a, p)| a.to_bits() == p.to_bits());
        assert!(same, "tick {tick}: host {authoritative:?}\n predictor {predicted:?}");
        if let Some(a) = aim.filter(|_| gun_keys == 0) {
            // The gun turned toward the point, from where the tank stood before the step.
            let toward = libm::atan2f(a.y - last.y, a.x - last.x);
            if vimp_netcode::wrap_angle(last.angle + authoritative.gun - toward).abs() < 1e-4 {
                on_target += 1;
            }
        }
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
    assert!(on_target > 100, "the gun follows the aim: on target after {on_target} ticks");
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
    let mut host = Host::new(init, GAME).expect("host");
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
                let p = Predictor::new(&client_config, &map, player, PredictorConfig::default()).expect("predictor");
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
                for (action, name) in held.map(|old| (KeyAction::Up, old)).into_iter().chain([(KeyAction::Down, want)])
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

/// Two players over in-memory links: Ann sweeps her pointer round her tank and stops, Bob
/// only drives. Ann's aims reach the host at most 30 a second; her gun turns toward the
/// pointer on the host and in her predictor alike, to the same bits once it rests, and Bob
/// sees it turn. Bob's gun stays as it was.
#[test]
fn aim_moves_the_gun_on_the_host_and_in_the_predictor_identically() {
    use std::time::Duration;
    use vimp_netcode::snapshot::Block;

    let mut lan = crate::network::Lan::with_setup(None, Vec::new(), super::SMALL, 0, |_| {});
    let (ann, bob) = (
        lan.join(vimp_netcode::session::Hello::new("ann", "test")),
        lan.join(vimp_netcode::session::Hello::new("bob", "test")),
    );
    let ready = |l: &crate::network::Lan| l.clients.iter().all(|c| c.last_frame().is_some_and(|f| f.player.is_some()));
    assert!(lan.run_until(Duration::from_secs(3), ready), "both play");
    assert!(lan.clients[ann].welcome().is_some_and(|w| w.aim), "the host takes aims");
    let player = |lan: &crate::network::Lan, i: usize| PlayerId(lan.clients[i].welcome().expect("welcomed").player_id);
    let (ann_id, bob_id) = (player(&lan, ann), player(&lan, bob));
    let client_config = lan.clients[ann].config().cloned().expect("the config");
    let map = MapConfig::from_json("small", super::SMALL).expect("map");
    let mut predictor = Predictor::new(&client_config, &map, ann_id, PredictorConfig::default()).expect("predictor");
    let step = Duration::from_secs_f64(predictor.dt() as f64);
    let (mut predicted_to, mut last_frame) = (lan.now, 0);
    let centre = lan.tank(ann_id.0).expect("Ann's tank").motion(lan.server.host().world().resource::<Physics>());
    let bob_gun = lan.tank(bob_id.0).expect("Bob's tank").gun;
    let (mut aims, mut sweep_end, mut rest) = (0u32, None, None);
    let start = lan.now;
    let schema = vimp_netcode::schema::SnapshotSchema::from_value(client_config["engine"]["snapshot"].clone());
    let gun = vimp_host::tanks::rows::Rows::of(&schema.expect("the schema")).expect("the tanks' rows").tanks.gun;
    let mut bob_saw = Vec::new();
    while lan.now < start + Duration::from_secs(5) {
        let t = (lan.now - start).as_secs_f32();
        // A sweep of 2 s at 1 rad/s round the tank, 150 units out, then the pointer rests.
        let a = 1.0 * t.min(2.0) + 0.5;
        let point = Aim::new(centre.x + 150.0 * libm::cosf(a), centre.y + 150.0 * libm::sinf(a), 0);
        let now = lan.now;
        if let Some(seq) = lan.clients[ann].aim(now, point) {
            assert!(predictor.aim(seq, point), "a new seq");
            aims += 1;
            if t >= 2.0 {
                rest.get_or_insert(point.expect("a point"));
            } else {
                sweep_end = Some(now);
            }
        }
        if (lan.now - start).as_millis() == 1000 {
            let seq = lan.clients[bob].key(KeyAction::Down, "forward").expect("a key");
            assert!(seq > 0);
        }
        lan.run(Duration::from_millis(5), None);
        if let Some(frame) = lan.clients[ann].last_frame().filter(|f| f.seq > last_frame).cloned() {
            last_frame = frame.seq;
            let obstacles = predictor.obstacles_from(&frame);
            predictor.set_obstacles(&obstacles);
            predictor.on_frame(&frame);
        }
        while predicted_to + step <= lan.now {
            predictor.step();
            predicted_to += step;
        }
        if let Some(Block::Indexed8(rows)) = lan.clients[bob].last_frame().and_then(|f| f.block(1))
            && let Some((_, Some(row))) = rows.iter().find(|(id, _)| *id == ann_id.0)
        {
            bob_saw.push(gun.f32(row));
        }
    }
    let sweep = sweep_end.expect("the sweep sent aims") - start;
    assert!(aims >= 40, "{aims} aims in 2 s");
    assert!(aims as f64 <= sweep.as_secs_f64() * 30.0 + 2.0, "{aims} aims in {sweep:?}: at most 30 a second");
    let rest = rest.expect("the resting aim went");
    let host = lan.tank(ann_id.0).expect("Ann's tank").motion(lan.server.host().world().resource::<Physics>());
    let toward = libm::atan2f(rest.y - host.y, rest.x - host.x);
    assert!(
        vimp_netcode::wrap_angle(host.gun_heading() - toward).abs() < 1e-5,
        "the host's gun points at the pointer: {host:?}"
    );
    let predicted = predictor.motion().expect("the predictor has Ann's tank");
    assert_eq!(
        predicted.to_state().map(f32::to_bits),
        host.to_state().map(f32::to_bits),
        "host {host:?}\n predictor {predicted:?}"
    );
    let seen = *bob_saw.last().expect("Bob sees Ann's tank");
    assert!(
        vimp_netcode::wrap_angle(seen - host.gun).abs() < 0.01,
        "Bob sees the gun at {seen}, the host has {}",
        host.gun
    );
    let turned = bob_saw.iter().map(|g| vimp_netcode::wrap_angle(g - bob_saw[0]).abs()).fold(0.0, f32::max);
    assert!(turned > 1.0, "Bob saw the gun sweep: {turned} rad");
    assert_eq!(lan.tank(bob_id.0).expect("Bob's tank").gun, bob_gun, "Bob's gun stays");
    // Over the link an aim may land a tick off the predictor's estimate of its delay: the
    // gun, and only the gun, is then a step or two of its rate from the host's.
    let gun_step = predictor.rules().models.tank.gun_rate * predictor.dt();
    for d in predictor.take_divergence() {
        assert!(d.components.iter().all(|c| c.index == 6 && c.delta.abs() <= 2.5 * gun_step), "{d:?}");
    }
}

/// Lag compensation: a shooter over a 100 ms round trip aims at the centre of a circling
/// tank exactly as its interpolated view draws it, and fires. Judged against the hulls as
/// the shooter saw them, nearly every shot hits; judged against the present, the target
/// has moved on by about a hull's length and many miss (the figure: `cargo bench -p
/// vimp-host --bench lagcomp`).
#[test]
fn a_shot_at_what_its_shooter_sees_hits_with_lag_compensation_and_often_misses_without() {
    let rtt = Duration::from_millis(100);
    let run = |compensated| duel::run(Duel { firing: Duration::from_secs(6), ..Duel::new(rtt, compensated) });
    let (with, without) = (run(true), run(false));
    assert!(with.shots >= 15 && without.shots >= 15, "shots fired: {with:?} {without:?}");
    assert!(with.views.0 >= u64::from(with.shots), "every shot went with a view: {with:?}");
    assert_eq!(with.views.1, 0, "no view was older than the link explains: {with:?}");
    assert!(with.hit_rate() >= 0.95, "compensated: {} of {} hit", with.hits, with.shots);
    assert_eq!(without.views.0, 0, "a shooter that does not offer views sends none");
    assert!(
        without.hit_rate() <= with.hit_rate() - 0.2,
        "the duel tells compensation apart: {} of {} hit without, {} of {} with",
        without.hits,
        without.shots,
        with.hits,
        with.shots
    );
}

/// The same duel at a 200 ms round trip under a tight byte budget (3,000 B/s): the host holds
/// the target's row back for frames at a time, and a client that drew it where its last row
/// left it would aim at where the tank was, not where the host's history has it at the view
/// (three shots in four hit so). The client carries a held row forward by its rates
/// (`delta::Reckoner`), so it draws the circling tank near enough where it is, and its shots
/// hit.
#[test]
fn under_a_tight_budget_a_shooter_draws_a_held_back_target_carried_forward_and_hits_it() {
    let duel = Duel { firing: Duration::from_secs(6), budget: 3_000, ..Duel::new(Duration::from_millis(200), true) };
    let figures = duel::run(duel);
    assert!(figures.shots >= 15, "shots fired: {figures:?}");
    assert!(figures.hit_rate() >= 0.9, "{} of {} hit: {figures:?}", figures.hits, figures.shots);
}

/// What a client's readers make of a match: every field they read by name from the frames
/// (tanks, bombs, tracers, blasts, the map's boxes) and the obstacles the predictor builds.
#[derive(Debug, Default, PartialEq)]
struct Readings {
    values: Vec<Vec<f32>>,
    bombs: usize,
    tracers: usize,
    blasts: usize,
}

/// A match with two bots and a client that drives, fires and throws bombs, `setup` given the
/// init config; what the client's readers read, frame by frame.
fn read_by_name(setup: impl FnOnce(&mut vimp_host::engine::config::InitConfig)) -> Readings {
    use vimp_host::engine::server::{Server, ServerConfig};
    use vimp_host::tanks::rows::Rows;
    use vimp_netcode::client::Client;
    use vimp_netcode::frame::op;
    use vimp_netcode::link::LinkConfig;
    use vimp_netcode::schema::{MapBodyFields, SnapshotSchema};
    use vimp_netcode::session::Hello;
    use vimp_netcode::snapshot::Block;
    use vimp_netcode::transport::{MemoryTransport, PeerKey};

    let mut init = vimp_host::tanks::init_config(5);
    setup(&mut init);
    let client_config = vimp_host::tanks::client_config(&init);
    let mut host = Host::new(init, GAME).expect("host");
    host.load_map_json("small", super::SMALL).expect("map");
    for i in 0..2 {
        host.push(HostCommand::Join { player: PlayerId(i), name: format!("bot{i}"), team: None, bot: true });
    }
    let mut server_transport = MemoryTransport::new(PeerKey(1000));
    let mut transport = MemoryTransport::new(PeerKey(1));
    let link = LinkConfig::new().latency(Duration::from_millis(20)).jitter(Duration::from_millis(2)).seed(3);
    MemoryTransport::connect(&mut transport, &mut server_transport, link);
    let config = ServerConfig { client_config: client_config.clone(), ..ServerConfig::default() };
    let mut server = Server::new(host, server_transport, config);
    // Format 5: every row in every frame, whatever a row's bytes.
    let mut client = Client::new(transport, Hello { snapshot_formats: Vec::new(), ..Hello::new("driver", "test") });
    let schema = SnapshotSchema::from_value(client_config["engine"]["snapshot"].clone()).expect("the schema");
    let rows = Rows::of(&schema).expect("the tanks' rows");
    let boxes = schema.by_name("c1").expect("the map's set key");
    let (box_key, box_fields) = (boxes.id, MapBodyFields::of(boxes));

    let mut out = Readings::default();
    let (mut predictor, mut last_frame) = (None, 0);
    let keys = [(0, "forward"), (1, "fire"), (2, "nextWeapon"), (3, "left"), (4, "fire"), (5, "fire")];
    for ms in 1..=6_000u64 {
        let now = Duration::from_millis(ms);
        client.update(now);
        for (port, payload) in client.take_meta() {
            if port == op::MAP_DATA && predictor.is_none() {
                let map = MapConfig::from_json("map", std::str::from_utf8(&payload).expect("utf-8")).expect("map");
                let player = PlayerId(client.welcome().expect("welcomed").player_id);
                predictor = Some(Predictor::new(&client_config, &map, player, PredictorConfig::default()).expect("p"));
            }
        }
        if ms % 500 == 0 {
            let (_, key) = keys[(ms / 500) as usize % keys.len()];
            client.key(KeyAction::Down, key);
        }
        if let Some(frame) = client.last_frame().filter(|f| f.seq > last_frame).cloned() {
            last_frame = frame.seq;
            for (key, block) in &frame.blocks {
                for (id, row) in block.entries() {
                    let Some(row) = row else { continue };
                    let id = id.map_or(-1.0, |id| id as f32);
                    let read: Vec<f32> = match (*key, block) {
                        (1, _) => {
                            let t = &rows.tanks;
                            let (level, z) = t.level(row);
                            let named = [t.x, t.y, t.angle, t.gun, t.vx, t.vy, t.engine_load, t.condition, t.size];
                            let mut read: Vec<f32> = named.iter().map(|f| f.f32(row)).collect();
                            read.extend([f32::from(t.team.u8(row)), t.angvel.f32(row), f32::from(level), z]);
                            read
                        }
                        (3, _) => {
                            out.bombs += 1;
                            let b = &rows.bombs;
                            [b.x, b.y, b.angle, b.size, b.time, b.owner].iter().map(|f| f.f32(row)).collect()
                        }
                        (2, Block::List16(_)) => {
                            out.tracers += 1;
                            let t = &rows.tracers;
                            let named =
                                [t.start_x, t.start_y, t.end_x, t.end_y, t.body_x, t.body_y, t.was_hit, t.shooter];
                            named.iter().map(|f| f.f32(row)).collect()
                        }
                        (4, Block::List16(_)) => {
                            out.blasts += 1;
                            let b = &rows.blasts;
                            [b.x, b.y, b.radius].iter().map(|f| f.f32(row)).collect()
                        }
                        (k, _) if k == box_key => {
                            let f = &box_fields;
                            let (level, z) = f.level(row);
                            let mut read = vec![f.x.f32(row), f.y.f32(row), f.angle.f32(row), f32::from(level), z];
                            read.extend(f.velocity(row));
                            read
                        }
                        _ => continue,
                    };
                    out.values.push([vec![f32::from(*key), id], read].concat());
                }
            }
            if let Some(p) = predictor.as_mut() {
                let obstacles = p.obstacles_from(&frame);
                for o in &obstacles {
                    out.values.push(vec![o.x, o.y, o.angle, f32::from(o.level.0), o.level.1, o.velocity[0]]);
                }
                p.set_obstacles(&obstacles);
                p.on_frame(&frame);
                out.values.extend(p.motion().map(|m| m.to_state().to_vec()));
            }
        }
        server.update(now);
    }
    out
}

/// A field inserted in the middle of each of the game's keys moves every position after it,
/// and no reader notices: the host writes, and the client and its predictor read, by name.
#[test]
fn a_field_inserted_in_the_middle_of_every_key_changes_no_reader() {
    use vimp_netcode::schema::{FieldSchema, FieldType};
    let plain = read_by_name(|_| {});
    let spare = read_by_name(|init| {
        for (key, at) in [("m1", 3), ("w2", 2), ("w1", 4), ("w2e", 1)] {
            let block = init.engine.snapshot.keys.get_mut(key).expect("the tanks' key");
            block.fields.insert(at, FieldSchema::new("spare", FieldType::U16));
        }
    });
    assert!(plain.values.len() > 1_000, "{} readings", plain.values.len());
    assert!(plain.bombs > 0 && plain.tracers > 0 && plain.blasts > 0, "{plain:?}");
    assert_eq!(spare.values.len(), plain.values.len(), "as many readings");
    for (i, (a, b)) in plain.values.iter().zip(&spare.values).enumerate() {
        assert_eq!(a, b, "reading {i}");
    }
    assert_eq!(spare, plain);
}
