use super::*;
use crate::engine::tags::is_map_object;

/// 6×5 tiles of 10: a wall ring, one wall tile inside at (3, 2), two boxes.
const SMALL: &str = r#"{
        "name": "small",
        "setId": "crates",
        "tileSize": 10,
        "map": [
            [1, 1, 1, 1, 1, 1],
            [1, 0, 0, 0, 0, 1],
            [1, 0, 0, 1, 0, 1],
            [1, 0, 0, 0, 0, 1],
            [1, 1, 1, 1, 1, 1]
        ],
        "physicsStatic": [1],
        "physicsDynamic": [
            { "x": 10, "y": 10, "width": 8, "height": 6, "game": { "hp": 3 } },
            { "x": 40, "y": 30, "width": 6, "height": 6, "angle": 90 }
        ],
        "respawns": { "1": [[15, 35, 90]], "2": [[45, 15, -180]] },
        "layers": { "floor": [0], "walls": [1] },
        "game": { "mode": "ctf" }
    }"#;

fn small() -> MapConfig {
    MapConfig::from_json("small.json", SMALL).unwrap()
}

fn load(file: &str) -> MapConfig {
    let path = format!("{}/../maps/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    MapConfig::from_json(&path, &text).unwrap_or_else(|e| panic!("{e}"))
}

fn new_world() -> PhysicsWorld {
    PhysicsWorld { gravity: Vector::ZERO, ..PhysicsWorld::default() }
}

fn close(a: f32, b: f32) -> bool {
    (a - b).abs() < 1e-4
}

#[test]
fn the_shipped_default_map_loads() {
    let cfg = load("default.json");
    assert_eq!(cfg.tile_size, 32.0);
    assert_eq!((cfg.map[0].len(), cfg.map.len()), (48, 32));
    assert_eq!(cfg.respawns.keys().collect::<Vec<_>>(), ["1", "2"]);
    assert!(cfg.respawns.values().all(|points| points.len() >= 8), "8 points per team");
    assert!((36..=44).contains(&cfg.physics_dynamic.len()), "about 40 crates");
    assert!(cfg.physics_dynamic.iter().all(|o| (24.0..=32.0).contains(&o.width.min(o.height))));
    assert_eq!(cfg.layers.keys().collect::<Vec<_>>(), ["floor", "walls"]);
    let mut world = new_world();
    let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
    assert_eq!(world.bodies.len(), map.static_blocks().len() + cfg.physics_dynamic.len());
    assert_eq!(map.world_size(), (48.0 * 32.0, 32.0 * 32.0));
    // The outer ring is solid, so every side of the world is walled.
    for col in 0..48 {
        assert!(map.is_solid_at(col as f32 * 32.0 + 16.0, 16.0) && map.is_solid_at(col as f32 * 32.0 + 16.0, 1008.0));
    }
}

#[test]
fn the_shipped_test_map_loads() {
    let cfg = load("test-small.json");
    assert_eq!((cfg.map[0].len(), cfg.map.len()), (16, 12));
    assert_eq!(cfg.physics_dynamic.len(), 4);
    assert!(cfg.respawns.values().all(|points| points.len() == 2));
    let mut world = new_world();
    let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
    assert_eq!(world.bodies.len(), map.static_blocks().len() + 4);
}

#[test]
fn the_readme_example_is_a_valid_map() {
    let path = format!("{}/../maps/README.md", env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(&path).unwrap();
    let start = readme.find("```json\n").expect("an example") + "```json\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let cfg = MapConfig::from_json(&path, &readme[start..end]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(cfg.physics_dynamic.len(), 2);
    let map = GameMap::create(&cfg, 1.0, &mut new_world()).unwrap();
    assert_eq!(map.static_blocks().len(), 5, "top, left, right, the inner 2×1 block, bottom");
}

#[test]
fn static_blocks_are_merged_and_scaled() {
    let map = GameMap::create(&small(), 0.5, &mut new_world()).unwrap();
    let tiles: Vec<TileRect> = map.static_blocks().iter().map(|b| b.tiles).collect();
    let r = |col, row, cols, rows| TileRect { col, row, cols, rows };
    assert_eq!(tiles, vec![r(0, 0, 6, 1), r(0, 1, 1, 3), r(5, 1, 1, 3), r(3, 2, 1, 1), r(0, 4, 6, 1)]);
    // Tile 10 at scale 0.5 is 5 world units.
    assert_eq!(map.static_blocks()[1].world, WorldRect { x: 0.0, y: 5.0, width: 5.0, height: 15.0 });
    assert_eq!(map.static_blocks()[3].world, WorldRect { x: 15.0, y: 10.0, width: 5.0, height: 5.0 });
    assert_eq!(map.tile_size(), 5.0);
    assert_eq!(map.world_size(), (30.0, 25.0));
    assert_eq!(map.grid_size(), (6, 5));
}

#[test]
fn create_builds_tagged_bodies_where_the_map_says() {
    let mut world = new_world();
    let map = GameMap::create(&small(), 1.0, &mut world).unwrap();
    assert_eq!(world.bodies.len(), 5 + 2);
    assert_eq!(world.colliders.len(), 5 + 2);
    for (block, &handle) in map.static_blocks().iter().zip(map.static_handles()) {
        let body = &world.bodies[handle];
        assert!(body.is_fixed());
        assert_eq!(body.user_data, MAP_OBJECT_TAG);
        let (cx, cy) = block.world.center();
        assert_eq!(body.translation(), Vector::new(cx, cy));
        let collider = &world.colliders[body.colliders()[0]];
        assert_eq!(collider.user_data, MAP_OBJECT_TAG);
        assert_eq!(collider.friction(), DEFAULT_FRICTION);
    }
    // The interior wall tile (3, 2) is the block centred at (35, 25).
    assert_eq!(world.bodies[map.static_handles()[3]].translation(), Vector::new(35.0, 25.0));

    let crate0 = &world.bodies[map.dynamic_handle(0).unwrap()];
    assert!(crate0.is_dynamic());
    assert_eq!(crate0.user_data, encode_map_object_at(0));
    assert_eq!(crate0.translation(), Vector::new(10.0, 10.0), "the body sits at the corner");
    assert_eq!(crate0.soft_ccd_prediction(), 6.0, "min(8, 6)");
    assert_eq!(crate0.linear_damping(), DYNAMIC_LINEAR_DAMPING);
    assert_eq!(crate0.angular_damping(), DYNAMIC_ANGULAR_DAMPING);
    let collider = &world.colliders[crate0.colliders()[0]];
    let aabb = collider.compute_aabb();
    assert_eq!(aabb.center(), Vector::new(14.0, 13.0), "corner + half the size");
    assert_eq!((aabb.mins, aabb.maxs), (Vector::new(10.0, 10.0), Vector::new(18.0, 16.0)));
    assert_eq!(collider.user_data, encode_map_object_at(0));
    assert_eq!(collider.restitution(), DEFAULT_RESTITUTION);
    assert!(close(collider.mass(), 48.0), "density 1: mass = area");

    // Turned 90° about its corner (40, 30), the 6×6 crate covers x 34..40, y 30..36.
    let crate1 = &world.bodies[map.dynamic_handle(1).unwrap()];
    assert_eq!(crate1.translation(), Vector::new(40.0, 30.0));
    assert!(close(crate1.rotation().angle(), std::f32::consts::FRAC_PI_2));
    let aabb = world.colliders[crate1.colliders()[0]].compute_aabb();
    assert!(close(aabb.mins.x, 34.0) && close(aabb.maxs.x, 40.0), "{aabb:?}");
    assert!(close(aabb.mins.y, 30.0) && close(aabb.maxs.y, 36.0), "{aabb:?}");
    assert!(map.dynamic_handle(2).is_none());
}

#[test]
fn scale_applies_to_geometry_but_not_to_game_data() {
    let mut world = new_world();
    let map = GameMap::create(&small(), 0.5, &mut world).unwrap();
    let crate0 = &world.bodies[map.dynamic_handle(0).unwrap()];
    assert_eq!(crate0.translation(), Vector::new(5.0, 5.0));
    assert_eq!(crate0.soft_ccd_prediction(), 3.0);
    let aabb = world.colliders[crate0.colliders()[0]].compute_aabb();
    assert_eq!((aabb.mins, aabb.maxs), (Vector::new(5.0, 5.0), Vector::new(9.0, 8.0)));
    assert_eq!(map.dynamic_game_data(0), Some(&serde_json::json!({ "hp": 3 })));
    assert_eq!(map.dynamic_game_data(1), None);
    assert_eq!(map.dynamic_game_data(9), None);
    assert_eq!(map.game_data(), Some(&serde_json::json!({ "mode": "ctf" })));
    let respawns = map.respawns();
    assert_eq!(respawns.keys().collect::<Vec<_>>(), ["1", "2"]);
    assert_eq!(respawns["1"][0][..2], [7.5, 17.5]);
    assert_eq!(respawns["1"][0][2], 90.0, "angles stay in degrees");
    assert_eq!(respawns["2"][0], [22.5, 7.5, -180.0]);
    assert_eq!(map.scale(), 0.5);
    assert_eq!((map.name(), map.set_id()), ("small", "crates"));
    assert_eq!(map.config(), &small());
}

#[test]
fn dynamic_index_comes_from_the_tag() {
    let mut world = new_world();
    let map = GameMap::create(&small(), 1.0, &mut world).unwrap();
    assert_eq!(map.dynamic_count(), 2);
    for i in 0..2 {
        let handle = map.dynamic_handle(i).unwrap();
        assert_eq!(map.dynamic_index_of(&world, handle), Some(i));
        assert!(is_map_object(world.bodies[handle].user_data));
    }
    assert_eq!(map.dynamic_index_of(&world, map.static_handles()[0]), None, "a wall has no index");
    let other = world.insert_body(RigidBodyBuilder::dynamic().user_data(encode_map_object_at(1)));
    assert_eq!(map.dynamic_index_of(&world, other), None, "a forged tag is not this map's body");
}

#[test]
fn solid_lookup_in_world_coordinates() {
    let map = GameMap::create(&small(), 2.0, &mut new_world()).unwrap();
    // Tile 20 world units; wall tile (3, 2) covers x 60..80, y 40..60.
    assert!(map.is_solid_at(60.0, 40.0));
    assert!(map.is_solid_at(79.9, 59.9));
    assert!(!map.is_solid_at(80.0, 50.0), "tiles are half-open");
    assert!(!map.is_solid_at(25.0, 25.0));
    assert!(map.is_solid_at(5.0, 25.0), "outer wall");
    for (x, y) in [(-0.1, 30.0), (30.0, -1.0), (120.0, 30.0), (30.0, 100.0), (f32::NAN, 30.0), (1e30, 30.0)] {
        assert!(map.is_solid_at(x, y), "({x}, {y}) is outside");
    }
    assert_eq!(map.tile_at(65.0, 45.0), Some(1));
    assert_eq!(map.tile_at(25.0, 25.0), Some(0));
    assert_eq!(map.tile_at(-1.0, 25.0), None);
}

#[test]
fn remove_leaves_the_world_empty() {
    let mut world = new_world();
    let mut map = GameMap::create(&small(), 1.0, &mut world).unwrap();
    map.remove(&mut world);
    assert_eq!((world.bodies.len(), world.colliders.len()), (0, 0));
    assert_eq!(map.dynamic_handle(0), None);
    assert!(map.static_handles().is_empty());
    map.remove(&mut world);
    assert_eq!(world.bodies.len(), 0, "a second remove does nothing");
}

#[test]
fn remove_leaves_other_bodies_alone() {
    let mut world = new_world();
    let mine = world.insert_body(RigidBodyBuilder::dynamic().user_data(7));
    let mut map = GameMap::create(&small(), 1.0, &mut world).unwrap();
    map.remove(&mut world);
    assert_eq!(world.bodies.len(), 1);
    assert_eq!(world.bodies[mine].user_data, 7);
}

#[test]
fn create_rejects_bad_maps_and_scales_without_touching_the_new_world() {
    let mut world = new_world();
    let mut cfg = small();
    cfg.tile_size = -1.0;
    let err = GameMap::create(&cfg, 1.0, &mut world).unwrap_err();
    assert_eq!(err.to_string(), "small:tileSize: must be greater than 0, got -1");
    for scale in [0.0, -1.0, f32::NAN, f32::INFINITY, 1e38] {
        let got = GameMap::create(&small(), scale, &mut world);
        assert!(matches!(got, Err(MapError::BadScale { scale: s }) if s.to_bits() == scale.to_bits()), "{scale}");
    }
    assert_eq!(world.bodies.len(), 0);
}

#[test]
fn crates_slow_down_on_the_floor() {
    let mut world = new_world();
    let map = GameMap::create(&small(), 1.0, &mut world).unwrap();
    let handle = map.dynamic_handle(0).unwrap();
    world.integration_parameters.dt = 1.0 / 120.0;
    world.bodies[handle].set_linvel(Vector::new(6.0, 0.0), true);
    for _ in 0..120 {
        world.step();
    }
    let speed = world.bodies[handle].linvel().length();
    assert!(speed > 0.0 && speed < 0.05 * 6.0, "after 1 s a crate keeps ~2 % of its speed, got {speed}");
}

#[test]
fn a_dump_restores_the_map_and_its_handles() {
    let config = bincode::config::standard();
    let mut world = new_world();
    let _unrelated = world.insert_body(RigidBodyBuilder::dynamic());
    let map = GameMap::create(&small(), 0.5, &mut world).unwrap();
    let bytes = bincode::serde::encode_to_vec((&world, &map), config).unwrap();
    let ((world2, map2), used): ((PhysicsWorld, GameMap), usize) =
        bincode::serde::decode_from_slice(&bytes, config).unwrap();
    assert_eq!(used, bytes.len());
    assert_eq!(map2, map);
    assert_eq!(map2.verify_bodies(&world2), Ok(()));
    for i in 0..2 {
        let handle = map2.dynamic_handle(i).unwrap();
        assert_eq!(map2.dynamic_index_of(&world2, handle), Some(i));
        assert_eq!(world2.bodies[handle].translation(), world.bodies[handle].translation());
    }
    assert_eq!(map2.dynamic_game_data(0), Some(&serde_json::json!({ "hp": 3 })));
}

#[test]
fn a_dump_keeps_floats_bit_for_bit() {
    let mut cfg = small();
    cfg.physics_dynamic[0].x = 10.100_001;
    cfg.respawns["1"][0][0] = 15.333_333;
    cfg.game = Some(serde_json::json!({ "ratio": 0.1, "tiny": 1e-300, "big": 12345678901234567890u64 }));
    let map = GameMap::create(&cfg, 0.3, &mut new_world()).unwrap();
    let bytes = bincode::serde::encode_to_vec(&map, bincode::config::standard()).unwrap();
    let (back, _): (GameMap, usize) = bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).unwrap();
    assert_eq!(back.config().physics_dynamic[0].x.to_bits(), 10.100_001f32.to_bits());
    assert_eq!(back.respawns()["1"][0][0].to_bits(), map.respawns()["1"][0][0].to_bits());
    assert_eq!(back.game_data(), cfg.game.as_ref());
    assert_eq!(back, map);
}

#[test]
fn a_removed_map_round_trips_too() {
    let mut world = new_world();
    let mut map = GameMap::create(&small(), 1.0, &mut world).unwrap();
    map.remove(&mut world);
    let bytes = bincode::serde::encode_to_vec(&map, bincode::config::standard()).unwrap();
    let (back, _): (GameMap, usize) = bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).unwrap();
    assert_eq!(back, map);
    assert_eq!(back.verify_bodies(&world), Ok(()));
}

#[test]
fn a_dump_whose_handles_do_not_fit_is_rejected() {
    let mut world = new_world();
    let map = GameMap::create(&small(), 1.0, &mut world).unwrap();
    let mut dump = GameMapBinary {
        config: map.config().clone(),
        scale: 1.0,
        static_bodies: map.static_handles().to_vec(),
        dynamic_bodies: map.dynamic_handles()[..1].to_vec(),
    };
    let bytes = bincode::serde::encode_to_vec(&dump, bincode::config::standard()).unwrap();
    let err = bincode::serde::decode_from_slice::<GameMap, _>(&bytes, bincode::config::standard()).unwrap_err();
    assert!(err.to_string().contains("5 static and 1 dynamic handles for a map of 5 blocks and 2 objects"), "{err}");
    dump.dynamic_bodies = map.dynamic_handles().to_vec();
    dump.scale = f32::NAN;
    let bytes = bincode::serde::encode_to_vec(&dump, bincode::config::standard()).unwrap();
    assert!(bincode::serde::decode_from_slice::<GameMap, _>(&bytes, bincode::config::standard()).is_err());
}

#[test]
fn verify_bodies_notices_a_world_that_does_not_match() {
    let mut world = new_world();
    let map = GameMap::create(&small(), 1.0, &mut world).unwrap();
    assert_eq!(map.verify_bodies(&world), Ok(()));
    let mut other = new_world();
    let _ = GameMap::create(&small(), 1.0, &mut other).unwrap();
    assert_eq!(map.verify_bodies(&other), Ok(()), "same map, same order: same handles");
    let err = map.verify_bodies(&PhysicsWorld::default()).unwrap_err();
    assert_eq!(err.to_string(), "state dump:map: static block 0's body is missing from the world");
    world.bodies[map.dynamic_handle(1).unwrap()].user_data = 0;
    let err = map.verify_bodies(&world).unwrap_err();
    assert_eq!(err.to_string(), "state dump:map: physicsDynamic[1]'s body is not a dynamic body with its tag");
}

#[test]
fn a_json_dump_round_trips_as_well() {
    let map = GameMap::create(&small(), 1.0, &mut new_world()).unwrap();
    let text = serde_json::to_string(&map).unwrap();
    assert_eq!(serde_json::from_str::<GameMap>(&text).unwrap(), map);
}

/// The layered table's base map: a bridge on level 1 over a wall band, a ramp up to it.
fn layered() -> MapConfig {
    let table: serde_json::Value = serde_json::from_str(levels::RULE_CASES).unwrap();
    MapConfig::from_json("layered", &table["base"].to_string()).unwrap()
}

#[test]
fn a_layered_map_builds_rails_and_guards_in_their_levels_groups() {
    let cfg = layered();
    let mut world = new_world();
    let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
    let levels = map.levels();
    assert!(levels.is_layered());
    let (ground, rails, guards) =
        (levels.static_blocks(0).len(), levels.static_blocks(1).len(), ramp_guards(levels).len());
    assert_eq!((rails, guards), (2, 3), "two rails, two sides and the top end of one wide ramp");
    assert_eq!(map.static_handles().len(), ground + rails + guards);
    assert_eq!(world.bodies.len(), ground + rails + guards + 2);
    let groups = |h: RigidBodyHandle| world.colliders[world.bodies[h].colliders()[0]].collision_groups();
    assert_eq!(groups(map.static_handles()[0]), bodies::wall_interaction(0));
    assert_eq!(groups(map.static_handles()[ground]), bodies::wall_interaction(1));
    assert_eq!(groups(map.static_handles()[ground + rails]), bodies::guard_interaction(0));
    assert_eq!(groups(map.dynamic_handle(0).unwrap()), level_interaction(1), "the crate on the bridge");
    assert_eq!(groups(map.dynamic_handle(1).unwrap()), level_interaction(0));
    assert_eq!(map.respawn_levels()["2"], vec![0, 1]);
    assert_eq!(map.initial_dynamic_levels(), vec![LevelState::on(1), LevelState::on(0)]);
    assert_eq!(map.verify_bodies(&world), Ok(()));
}

#[test]
fn a_layered_dump_round_trips_with_its_levels() {
    let config = bincode::config::standard();
    let mut world = new_world();
    let map = GameMap::create(&layered(), 0.5, &mut world).unwrap();
    let bytes = bincode::serde::encode_to_vec((&world, &map), config).unwrap();
    let ((world2, map2), _): ((PhysicsWorld, GameMap), usize) =
        bincode::serde::decode_from_slice(&bytes, config).unwrap();
    assert_eq!(map2, map);
    assert_eq!(map2.config(), &layered());
    assert_eq!(map2.verify_bodies(&world2), Ok(()));
}

#[test]
fn a_flat_map_dumps_byte_for_byte_as_before_levels_existed() {
    // The dump form of a config before layered maps: `game` last, as an `Option`.
    #[derive(Serialize)]
    struct Before {
        name: String,
        set_id: String,
        tile_size: f32,
        map: Vec<Vec<u16>>,
        physics_static: Vec<u16>,
        physics_dynamic: Vec<(f32, f32, f32, f32, f32, Option<Vec<u8>>)>,
        respawns: IndexMap<String, Vec<Vec<f32>>>,
        layers: IndexMap<String, Vec<u16>>,
        volumes: IndexMap<String, f32>,
        game: Option<()>,
    }
    let mut cfg = small();
    cfg.game = None;
    for o in &mut cfg.physics_dynamic {
        o.game = None;
    }
    let before = Before {
        name: cfg.name.clone(),
        set_id: cfg.set_id.clone(),
        tile_size: cfg.tile_size,
        map: cfg.map.clone(),
        physics_static: cfg.physics_static.clone(),
        physics_dynamic: cfg.physics_dynamic.iter().map(|o| (o.x, o.y, o.width, o.height, o.angle, None)).collect(),
        respawns: cfg.respawns.clone(),
        layers: cfg.layers.clone(),
        volumes: cfg.volumes.clone(),
        game: None,
    };
    let config = bincode::config::standard();
    assert_eq!(
        bincode::serde::encode_to_vec(&cfg, config).unwrap(),
        bincode::serde::encode_to_vec(&before, config).unwrap()
    );
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// Mostly plausible map-unit values, sometimes a hostile one.
    fn number() -> impl Strategy<Value = f64> {
        prop_oneof![
            8 => 0.0..60.0f64,
            1 => prop_oneof![Just(-1.0), Just(0.0), Just(1e39), Just(-1e39), Just(1e-40), -20.0..90.0f64],
        ]
    }

    /// A coordinate mostly inside `0..extent`, sometimes a hostile number.
    fn coordinate(extent: f64) -> impl Strategy<Value = f64> {
        prop_oneof![8 => 0.0..extent, 1 => number()]
    }

    fn map_json() -> impl Strategy<Value = String> {
        (1usize..8, 1usize..6)
            .prop_flat_map(|(cols, rows)| {
                let (w, h) = (cols as f64 * 10.0, rows as f64 * 10.0);
                let tiles = prop_oneof![5 => Just(0u16), 1 => Just(1u16), 1 => Just(2u16)];
                let row = prop::collection::vec(tiles, cols);
                let grid =
                    prop::collection::vec(prop_oneof![12 => row, 1 => prop::collection::vec(0u16..3, 0..8)], rows);
                let size = prop_oneof![4 => 2.0..12.0f64, 1 => number()];
                let object = (coordinate(w), coordinate(h), size.clone(), size, prop_oneof![Just(0.0), number()]);
                let objects = prop::collection::vec(object, 0..4);
                let point = prop_oneof![
                    8 => (coordinate(w), coordinate(h), number()).prop_map(|(x, y, a)| vec![x, y, a]),
                    1 => prop::collection::vec(number(), 0..6),
                ];
                let teams = prop::collection::vec(prop::collection::vec(point, 1..3), 0..3usize);
                (prop_oneof![6 => Just(10.0), 1 => number()], grid, objects, teams)
            })
            .prop_map(|(tile, grid, objects, teams)| {
                let objects: Vec<Value> = objects
                    .into_iter()
                    .map(|(x, y, w, h, a)| serde_json::json!({ "x": x, "y": y, "width": w, "height": h, "angle": a }))
                    .collect();
                let teams: serde_json::Map<String, Value> = teams
                    .into_iter()
                    .enumerate()
                    .map(|(n, points)| (n.to_string(), serde_json::json!(points)))
                    .collect();
                serde_json::json!({
                    "name": "fuzz", "tileSize": tile, "map": grid, "physicsStatic": [1],
                    "physicsDynamic": objects, "respawns": teams, "layers": { "all": [0, 1, 2] }
                })
                .to_string()
            })
    }

    proptest! {
        // About one generated map in sixteen is valid: run enough cases to build dozens
        // (or as many as `PROPTEST_CASES` asks for).
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(1024)
        ))]

        /// Whatever the map says, parsing never panics, and a map that validates builds.
        #[test]
        fn any_map_parses_or_fails_cleanly_and_valid_ones_build(text in map_json()) {
            if let Ok(cfg) = MapConfig::from_json("fuzz", &text) {
                let mut world = new_world();
                let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
                prop_assert_eq!(world.bodies.len(), map.static_blocks().len() + cfg.physics_dynamic.len());
                for i in 0..cfg.physics_dynamic.len() {
                    prop_assert_eq!(map.dynamic_index_of(&world, map.dynamic_handle(i).unwrap()), Some(i));
                }
                for points in map.respawns().values() {
                    for p in points {
                        prop_assert!(!map.is_solid_at(p[0], p[1]), "a valid respawn point is on free ground");
                    }
                }
            }
        }

        /// Whatever a layered map says, parsing never panics; one that validates builds, and
        /// every question its levels answer, and a body's step anywhere on it, is answered
        /// without a panic (bodies land on a level that exists).
        #[test]
        fn any_layered_map_parses_or_fails_cleanly_and_valid_ones_play(text in prop_oneof![layered_json(), ramped_json()], probes in prop::collection::vec((-10.0..90.0f32, -10.0..70.0f32, 0u8..4), 1..12)) {
            if let Ok(cfg) = MapConfig::from_json("fuzz", &text) {
                let mut world = new_world();
                let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
                let levels = map.levels();
                let fall = FallModel::new(levels.level_height(), 0.35);
                for (x, y, n) in probes {
                    let _ = (levels.level_at(x, y), levels.has_floor(n, x, y), levels.is_solid(n, x, y));
                    let _ = (levels.ramp_at(x, y), levels.landing_level(n, x, y));
                    let existing: Vec<u8> = levels.levels().collect();
                    let mut state = LevelState::on(existing[usize::from(n) % existing.len()]);
                    for rides in [true, false] {
                        for _ in 0..50 {
                            step_body_level(&mut state, levels, &fall, 1.0 / 120.0, [x, y], rides);
                            let _ = state.groups(levels, [x, y], rides);
                        }
                        prop_assert!(levels.has_level(state.level), "{:?}", state);
                    }
                }
                for guard in ramp_guards(levels) {
                    prop_assert!(guard.rect.width > 0.0 && guard.rect.height > 0.0);
                }
            }
        }
    }

    /// A layered map that is most often valid: a ramp of two cells (one or two lanes) in
    /// any direction up to a slab of level 1 (or 2, over an empty level 1) beyond its top,
    /// now and then a rail or a wall put where it breaks a rule.
    fn ramped_json() -> impl Strategy<Value = String> {
        let dir = prop_oneof![
            Just(("east", 1i64, 0i64)),
            Just(("west", -1, 0)),
            Just(("south", 0, 1)),
            Just(("north", 0, -1))
        ];
        (
            dir,
            1usize..4,
            1usize..3,
            1u8..3,
            prop::option::of((0usize..10, 0usize..8, prop_oneof![Just(1u16), Just(7u16)])),
        )
            .prop_map(|((name, dc, dr), at, lanes, to, noise)| {
                let (cols, rows) = (10usize, 8usize);
                let mut ground = vec![vec![0u16; cols]; rows];
                let mut slab = vec![vec![0u16; cols]; rows];
                // The run's cells: two along the direction, `lanes` across, from the middle.
                let (c0, r0) = (4i64 - dc * at as i64 / 2, 3i64 - dr * at as i64 / 2);
                for lane in 0..lanes as i64 {
                    let (lc, lr) = (c0 + lane * dr.abs(), r0 + lane * dc.abs());
                    for k in 0..2 {
                        let (c, r) = (lc + dc * k, lr + dr * k);
                        ground[r as usize][c as usize] = 5;
                    }
                    for k in 2..4 {
                        let (c, r) = (lc + dc * k, lr + dr * k);
                        if (0..cols as i64).contains(&c) && (0..rows as i64).contains(&r) {
                            slab[r as usize][c as usize] = 9;
                        }
                    }
                }
                if let Some((c, r, tile)) = noise {
                    if tile == 1 { ground[r][c] = 1 } else { slab[r][c] = 7 }
                }
                let mut levels = serde_json::Map::new();
                if to == 2 {
                    levels.insert("1".into(), serde_json::json!({ "map": vec![vec![0u16; cols]; rows] }));
                }
                levels.insert(to.to_string(), serde_json::json!({ "map": slab, "floor": [7, 9], "walls": [7] }));
                serde_json::json!({
                    "name": "ramped", "tileSize": 10, "map": ground, "physicsStatic": [1],
                    "respawns": { "1": [[95, 75, 0]] }, "levels": levels,
                    "ramps": [{ "tile": 5, "dir": name, "to": to }]
                })
                .to_string()
            })
    }

    /// A small layered map: a ground grid with walls and ramp tiles, levels 1 and 2 (and
    /// now and then a bad name) with floor, rails and gaps, ramps of any direction and levels.
    fn layered_json() -> impl Strategy<Value = String> {
        let cell = prop_oneof![12 => Just(0u16), 1 => Just(1u16), 2 => Just(5u16), 1 => Just(6u16)];
        let ground = prop::collection::vec(prop::collection::vec(cell, 8), 6);
        let slab = prop_oneof![4 => Just(0u16), 4 => Just(9u16), 2 => Just(7u16), 1 => Just(5u16)];
        // Slabs in the grid's inner cells only (an edge on the grid's border drops off it).
        let level = prop::collection::vec(prop::collection::vec(slab, 6), 4).prop_map(|inner| {
            let mut grid = vec![vec![0u16; 8]; 6];
            for (r, row) in inner.into_iter().enumerate() {
                for (c, t) in row.into_iter().enumerate() {
                    grid[r + 1][c + 1] = t;
                }
            }
            grid
        });
        let dir = prop_oneof![Just("north"), Just("south"), Just("west"), Just("east")];
        let ramp = (prop_oneof![Just(5u16), Just(6u16)], dir, 0u8..3, 0u8..4);
        let name = prop_oneof![8 => Just("1"), 4 => Just("2"), 1 => Just("8")];
        (
            ground,
            prop::collection::vec((name, level), 0..3),
            prop::collection::vec(ramp, 0..3),
            prop::option::of(0.0..40.0f32),
        )
            .prop_map(|(ground, levels, ramps, height)| {
                let levels: serde_json::Map<String, Value> = levels
                    .into_iter()
                    .map(|(n, map)| (n.to_owned(), serde_json::json!({ "map": map, "floor": [7, 9], "walls": [7] })))
                    .collect();
                let ramps: Vec<Value> = ramps
                    .into_iter()
                    .map(
                        |(tile, dir, from, to)| serde_json::json!({ "tile": tile, "dir": dir, "from": from, "to": to }),
                    )
                    .collect();
                let mut map = serde_json::json!({
                    "name": "fuzz", "tileSize": 10, "map": ground, "physicsStatic": [1],
                    "respawns": { "1": [[5, 5, 0]] }, "levels": levels, "ramps": ramps
                });
                if let Some(h) = height {
                    map["levelHeight"] = serde_json::json!(h);
                }
                map.to_string()
            })
    }
}

#[test]
fn a_map_that_is_not_this_json_names_the_line_and_column_in_a_map_maker_s_words() {
    let wrong_type = SMALL.replace(r#""tileSize": 10"#, r#""tileSize": "big""#);
    let err = MapConfig::from_json("m.json", &wrong_type).unwrap_err().to_string();
    assert!(err.starts_with("m.json:4:"), "{err}");
    assert!(err.contains("expected a number") && !err.contains("f32"), "{err}");
    let bare_key = SMALL.replace(r#""1": [[15"#, r#"1: [[15"#);
    let err = MapConfig::from_json("m.json", &bare_key).unwrap_err().to_string();
    assert!(err.starts_with("m.json:17:"), "{err}");
    assert!(err.contains("double quotes"), "{err}");
}
