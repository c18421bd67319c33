//! `debug_json`: a curated, deterministic view of the match, meant to be read and diffed.
//!
//! The state dump is bytes; this is its readable neighbour: bodies, colliders, the
//! map, the navigation graph and its grids, the spatial grid, the rng state, the tick and
//! the fixed-step accumulator, then the game's own part. Entries come in handle order, so two dumps diff line by line.

use bevy::prelude::*;
use rapier2d::prelude::*;
use serde_json::{Value, json};

use crate::engine::game::GameHooks;
use crate::engine::map::state::MapState;
use crate::engine::nav::{Nav, NavigationSystem, Spatial};
use crate::engine::physics::Physics;
use crate::engine::sim::{EngineSettings, FixedClock, SimRng, Tick};
use crate::engine::tags;

/// The curated dump of `world` (see the module docs).
pub fn debug_json(world: &mut World) -> Value {
    let game_debug = world.resource::<GameHooks>().debug;
    let game = game_debug(world);
    let physics = world.resource::<Physics>();
    let w = physics.world();
    let mut bodies: Vec<_> = w.bodies.iter().collect();
    bodies.sort_by_key(|(h, _)| h.into_raw_parts());
    let bodies: Vec<Value> = bodies
        .into_iter()
        .map(|(h, b)| {
            let (index, generation) = h.into_raw_parts();
            json!({
                "handle": [index, generation],
                "tag": tags::tag_kind(b.user_data),
                "userData": format!("{:#x}", b.user_data),
                "translation": [b.translation().x, b.translation().y],
                "rotation": b.rotation().angle(),
                "linvel": [b.linvel().x, b.linvel().y],
                "angvel": b.angvel(),
                "mass": b.mass(),
                "bodyType": format!("{:?}", b.body_type()),
                "ccd": b.is_ccd_enabled(),
                "softCcd": b.soft_ccd_prediction(),
                "enabled": b.is_enabled(),
                "sleeping": b.is_sleeping(),
            })
        })
        .collect();
    let mut colliders: Vec<_> = w.colliders.iter().collect();
    colliders.sort_by_key(|(h, _)| h.into_raw_parts());
    let colliders: Vec<Value> = colliders
        .into_iter()
        .map(|(h, c)| {
            let shape = match c.shape().as_typed_shape() {
                TypedShape::Cuboid(b) => json!({ "cuboid": { "halfExtents": [b.half_extents.x, b.half_extents.y] } }),
                TypedShape::Ball(b) => json!({ "ball": { "radius": b.radius } }),
                _ => json!(format!("{:?}", c.shape().shape_type())),
            };
            let groups = c.collision_groups();
            let solver = c.solver_groups();
            json!({
                "handle": [h.into_raw_parts().0, h.into_raw_parts().1],
                "shape": shape,
                "isSensor": c.is_sensor(),
                "collisionGroups": [format!("{:#x}", groups.memberships.bits()), format!("{:#x}", groups.filter.bits())],
                "solverGroups": [format!("{:#x}", solver.memberships.bits()), format!("{:#x}", solver.filter.bits())],
                "parent": c.parent().map(|p| [p.into_raw_parts().0, p.into_raw_parts().1]),
                "friction": c.friction(),
                "restitution": c.restitution(),
            })
        })
        .collect();
    let settings = world.resource::<EngineSettings>();
    let map = world.resource::<MapState>();
    let map_json = match (&map.map, &map.config) {
        (Some(m), Some(c)) => {
            let mut out = json!({
            "name": c.name,
            "setId": map.set_id(&settings.config),
            "tileSize": m.tile_size(),
            "grid": [c.map.first().map_or(0, |r| r.len()), c.map.len()],
            "worldSize": [m.world_size().0, m.world_size().1],
            "staticBlocks": m.static_blocks().len(),
            "dynamicBodies": m.dynamic_count(),
            "respawns": m.respawns(),
            "bodyState": map.body_state,
            "loads": map.loads,
            });
            let levels = m.levels();
            if levels.is_layered() {
                out["layers"] = json!({
                    "levels": levels.levels().collect::<Vec<_>>(),
                    "levelHeight": levels.level_height(),
                    "wallBlocks": levels.levels().map(|n| levels.static_blocks(n).len()).collect::<Vec<_>>(),
                    "rampRuns": levels.runs().len(),
                    "rampBlocks": levels.blocks().len(),
                    "bodyLevels": map.levels.iter().map(|l| json!([l.level, l.z, l.fall])).collect::<Vec<_>>(),
                });
            }
            out
        }
        _ => Value::Null,
    };
    let nav = world.resource::<Nav>().0.as_ref().map_or(Value::Null, NavigationSystem::debug_json);
    let spatial = world.resource::<Spatial>().0.debug_json();
    json!({
        "tick": world.resource::<Tick>().0,
        "accumulator": world.resource::<FixedClock>().accumulator,
        "rng": { "state": format!("{:#018x}", world.resource::<SimRng>().state()) },
        "bodies": bodies,
        "colliders": colliders,
        "map": map_json,
        "nav": nav,
        "spatial": spatial,
        "game": game,
    })
}
