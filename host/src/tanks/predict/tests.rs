use super::*;
use crate::engine::config::DEFAULT_TIME_STEP;

const SMALL: &str = include_str!("../../../../maps/test-small.json");

fn predictor() -> Predictor {
    let client = crate::tanks::client_config(&crate::tanks::init_config(1));
    let map = MapConfig::from_json("small", SMALL).expect("map");
    Predictor::new(&client, &map, PlayerId(4), PredictorConfig::default()).expect("predictor")
}

fn at_rest(x: f32, y: f32) -> [f32; 8] {
    Motion { x, y, ..Motion::default() }.to_state()
}

fn ms(tick: u32) -> f64 {
    tick as f64 * DEFAULT_TIME_STEP as f64 * 1000.0
}

#[test]
fn the_step_survives_the_trip_through_milliseconds_and_only_walls_are_built() {
    let p = predictor();
    assert_eq!(p.dt().to_bits(), DEFAULT_TIME_STEP.to_bits());
    assert_eq!(p.physics().world().bodies.len(), p.map().static_handles().len(), "walls only, no boxes");
    assert!(p.motion().is_none(), "no tank before the first block");
}

#[test]
fn a_block_equal_to_the_prediction_changes_nothing_and_an_offset_one_decays() {
    let mut p = predictor();
    assert!(p.on_player_block(ms(0), 0, at_rest(240.0, 100.0)).is_some_and(|c| c.snapped));
    p.key(1, KeyAction::Down, "forward").expect("key");
    for _ in 0..30 {
        p.step();
    }
    let recorded = |p: &Predictor, tick| p.history.iter().find(|r| r.tick == tick).map(|r| r.motion).unwrap();
    // The client first used seq 1 in its step 1; the host applied it 3 ticks later, at
    // its tick 4, and the block of tick 4 acknowledges it.
    let same = p.on_player_block(ms(4), 1, recorded(&p, 1).to_state()).expect("newer block");
    assert_eq!(p.delay(), Some(3));
    assert_eq!((same.client_tick, same.distance, same.replayed), (1, 0.0, 0), "{same:?}");
    assert!(p.divergence().is_empty());

    // The block of tick 8 has the tank 2 units to the left of the prediction for tick 5.
    let host_tick = 8;
    let mut moved = recorded(&p, 5);
    moved.x -= 2.0;
    let before = p.motion().unwrap();
    let c = p.on_player_block(ms(host_tick), 1, moved.to_state()).expect("newer block");
    assert!(!c.snapped && c.replayed > 0, "{c:?}");
    assert!((c.distance - 2.0).abs() < 0.05, "the present moves by the error: {c:?}");
    assert_eq!(p.divergence().len(), 1, "the divergence is recorded");
    let render = p.render_motion().unwrap();
    assert!((render.x - before.x).abs() < 1e-3, "no visible snap: {} vs {}", render.x, before.x);
    for _ in 0..60 {
        p.step();
    }
    assert!(p.offset()[0].abs() < 2.0 * 0.01, "the offset decays in half a second: {:?}", p.offset());
    assert!(p.on_player_block(ms(host_tick), 1, moved.to_state()).is_none(), "an old block is ignored");
}

#[test]
fn a_far_jump_snaps_and_reset_forgets_the_tank() {
    let mut p = predictor();
    p.on_player_block(ms(4), 0, at_rest(240.0, 100.0));
    p.step();
    let c = p.on_player_block(ms(8), 0, at_rest(80.0, 272.0)).expect("block");
    assert!(c.snapped && c.distance > 100.0, "{c:?}");
    assert_eq!(p.offset(), [0.0; 3]);
    let m = p.render_motion().unwrap();
    assert_eq!((m.x, m.y), (80.0, 272.0));
    p.reset();
    assert!(p.motion().is_none());
    assert_eq!(p.physics().world().bodies.len(), p.map().static_handles().len());
}

#[test]
fn the_tank_pushes_a_map_box_and_a_rewind_puts_the_box_where_the_frame_shows_it() {
    let mut p = predictor();
    p.on_player_block(ms(4), 0, at_rest(240.0, 100.0));
    let key = p.crate_key.expect("the tanks schema has the map's box key");
    let a_box = |x: f32, vx: f32| Obstacle {
        id: ObstacleId { key, index: 0 },
        x,
        y: 88.0,
        angle: 0.0,
        half_extents: [12.0, 12.0],
        offset: [12.0, 12.0],
        friction: DEFAULT_FRICTION,
        restitution: DEFAULT_RESTITUTION,
        velocity: [vx, 0.0, 0.0],
        level: (0, 0.0),
    };
    // The box stands right ahead of the tank's nose (the tank is 40 long).
    p.set_obstacles(&[a_box(262.0, 0.0)]);
    let handle = *p.obstacles.values().next().expect("the box is in the world");
    let box_x = |p: &Predictor| p.physics().world().bodies.get(handle).expect("the box").translation().x;
    p.key(1, KeyAction::Down, "forward").expect("key");
    for _ in 0..240 {
        p.step();
    }
    let x = p.motion().unwrap().x;
    // A kinematic box would hold the tank's nose at 262 (its centre at 242).
    assert!(box_x(&p) > 264.0, "the box was pushed: x = {}", box_x(&p));
    assert!(x > 242.0 + 2.0, "the tank went on past where the box stood: x = {x}");
    // A frame shows the box elsewhere, moving: the rewind puts it there, and the replay
    // moves it on from there.
    p.set_obstacles(&[a_box(400.0, 30.0)]);
    let block = p.history.back().map(|r| r.motion.to_state()).unwrap();
    let mut moved = block;
    moved[0] -= 1.0;
    p.on_player_block(ms(200), 1, moved).expect("a newer block");
    let replayed_to = box_x(&p);
    assert!(replayed_to >= 400.0, "the box is where the frame shows it, or on from there: {replayed_to}");
    assert!(replayed_to < 400.0 + 30.0, "and moved no farther than its speed allows: {replayed_to}");
}

#[test]
fn only_near_obstacles_enter_the_world() {
    let mut p = predictor();
    p.on_player_block(ms(4), 0, at_rest(240.0, 100.0));
    let walls_and_tank = p.physics().world().bodies.len();
    let tank = |index, x| Obstacle {
        id: ObstacleId { key: key::TANKS, index },
        x,
        y: 100.0,
        angle: 0.0,
        half_extents: [20.0, 15.0],
        offset: [0.0; 2],
        friction: TANK_FRICTION,
        restitution: TANK_RESTITUTION,
        velocity: [0.0; 3],
        level: (0, 0.0),
    };
    p.set_obstacles(&[tank(1, 2000.0), tank(4, 240.0)]);
    assert_eq!(p.physics().world().bodies.len(), walls_and_tank, "far ones and the tank itself stay out");
    p.set_obstacles(&[tank(1, 300.0), tank(2, 2000.0)]);
    assert_eq!(p.physics().world().bodies.len(), walls_and_tank + 1);
    // Driving into it stops the tank short of it.
    p.key(1, KeyAction::Down, "forward").expect("key");
    for _ in 0..120 {
        p.step();
    }
    let x = p.motion().unwrap().x;
    assert!(x < 300.0 - 20.0 - 19.0, "the tank bumps into the obstacle: x = {x}");
    p.set_obstacles(&[]);
    assert_eq!(p.physics().world().bodies.len(), walls_and_tank);
}

#[test]
fn a_local_fire_shoots_once_per_reload_along_the_hosts_path() {
    let mut p = predictor();
    p.on_player_block(ms(4), 0, at_rest(240.0, 100.0));
    p.step(); // queries see the walls once a step has put them in the tree
    let Some(LocalShot::Tracer { start, end, hit, .. }) = p.tracer_now() else { panic!("the gun is ready") };
    assert_eq!(start, [240.0 + 24.0, 100.0]);
    assert!(hit && (end[0] - 480.0).abs() < 1e-3 && end[1] == 100.0, "it stops at the wall ahead: {end:?}");
    p.key(1, KeyAction::Down, "fire").expect("key");
    p.step();
    let shots = p.take_shots();
    assert!(matches!(shots[..], [LocalShot::Tracer { id: 1, .. }]), "{shots:?}");
    assert!(p.tracer_now().is_none(), "reloading");
    p.key(2, KeyAction::Down, "fire").expect("key");
    p.step();
    assert!(p.take_shots().is_empty(), "a fire during the reload does nothing, as on the host");
    for _ in 0..20 {
        p.step();
    }
    assert!(p.tracer_now().is_some(), "reloaded after 0.15 s");
}

#[test]
fn own_tracer_rows_are_dropped_others_and_bombs_kept() {
    let tracer = |author: u8| {
        let mut row = vec![FieldValue::F32(0.0); 6];
        row.extend([FieldValue::U8(1), FieldValue::U8(author)]);
        row
    };
    let bomb = |author: u8| vec![FieldValue::F32(1.0), FieldValue::U8(author)];
    let mut frame = Frame {
        seq: 1,
        server_time_ms: 0.0,
        player: None,
        blocks: vec![
            (key::TANKS, Block::Indexed8(vec![(3, Some(vec![FieldValue::U8(3)]))])),
            (key::TRACERS, Block::List16(vec![tracer(3), tracer(5), tracer(3)])),
            (key::BOMBS, Block::Indexed32(vec![(7, Some(bomb(3))), (8, Some(bomb(5))), (7, None)])),
        ],
        streamed_out: Vec::new(),
    };
    let bombs = frame.blocks[2].1.clone();
    assert_eq!(suppress_own_events(&mut frame, PlayerId(3)), 2);
    assert_eq!(frame.blocks[0].1.len(), 1, "hot rows are not events");
    assert_eq!(frame.blocks[1].1, Block::List16(vec![tracer(5)]));
    assert_eq!(frame.blocks[2].1, bombs, "the host's bombs replace the local ones");
}
