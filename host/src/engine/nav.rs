//! Navigation: the map as a graph for routes, sight and corridors; soft obstacles; rays; a spatial grid.
//!
//! Nothing here names a game: bodies have widths, points have teams only as the map's
//! respawn keys, and whatever moves on the map is a soft obstacle.
//!
//! ```text
//!  map load / dump restore ──► NavGrid (walls, fit, clear) ──► NavigationSystem ──► Nav resource
//!                              (a layered map: every level's, stacked, ramps and ledges linking them)
//!  every tick, Inputs set:  dynamic map bodies' boxes ──► soft obstacles (cells of their level)
//!  game systems:            nav.find_route_on(PathPoint, PathPoint, &PathQuery { .. })  → Route { legs, cost }
//!                           nav.has_obstacle_between_on(level, a, b), has_clear_corridor_on, nearest_walkable_on, …
//!                           Spatial: clear + insert each tick → query_radius(center, r)
//! ```
//!
//! - [`grid`]: the walkability grid and its derived `fit` and `clear` grids;
//! - [`navigation`]: [`NavigationSystem`], routes ([`PathQuery`], [`Route`]) and queries;
//! - [`pathfinder`]: A\* over any graph;
//! - [`raycast`]: the DDA cell walk ([`walk_ray_cells`]) and the OBB slab test;
//! - [`spatial`]: the spatial grid for target queries;
//! - [`check`]: what a map check warns about (places a body cannot reach, wedged objects).
//!
//! The [`Nav`] resource is derived state: it is rebuilt from the map on every load and on
//! every dump restore, and its soft obstacles are refreshed from the bodies' poses at the
//! start of every tick ([`refresh_obstacles`], in [`HostSystems::Inputs`]), before any game
//! system can ask it anything. So it is never part of a dump, and a restored host's
//! queries answer exactly as the original's.
//!
//! [`HostSystems::Inputs`]: crate::engine::sim::HostSystems::Inputs

pub mod check;
pub mod grid;
pub mod navigation;
pub mod pathfinder;
pub mod raycast;
pub mod spatial;

use bevy::prelude::*;
use rapier2d::prelude::{PhysicsWorld, RigidBodyHandle};

use crate::engine::map::state::MapState;
use crate::engine::map::{GameMap, LevelState};
use crate::engine::physics::Physics;

pub use grid::{MAX_FIT, NavGrid};
pub use navigation::{
    LEDGE_PENALTY, LegKind, NavigationSystem, Obb, PathPoint, PathQuery, PenaltyZone, Route, RouteLeg,
};
pub use raycast::{RaySegment, level_segments, ray_vs_grid, ray_vs_obb, walk_ray_cells};
pub use spatial::{SpatialEntry, SpatialGrid};

/// The navigation of the loaded map; `None` without a map.
#[derive(Resource, Debug, Default)]
pub struct Nav(pub Option<NavigationSystem>);

/// The spatial grid the game fills each tick for its target queries.
#[derive(Resource, Debug, Default)]
pub struct Spatial(pub SpatialGrid);

/// The navigation grid of a map's ground: one cell per tile, walls blocked.
pub fn grid_of(map: &GameMap) -> NavGrid {
    let (cols, rows) = map.grid_size();
    NavGrid::new(cols, rows, map.tile_size(), |c, r| map.is_solid_tile(c, r))
}

/// The navigation of a map without its bodies: the ground's grid on a flat map, every
/// level's with ramps and ledges on a layered one ([`NavigationSystem::generate_layered`]).
pub fn navigation_of(map: &GameMap) -> NavigationSystem {
    if map.levels().is_layered() {
        NavigationSystem::generate_layered(map.levels())
    } else {
        NavigationSystem::new(grid_of(map))
    }
}

/// The navigation of a map with its dynamic bodies in `world` as soft obstacles, each on
/// its level in `levels` (by index, as [`MapState::levels`] keeps them; missing: the ground).
pub fn build(map: &GameMap, world: &PhysicsWorld, levels: &[LevelState]) -> NavigationSystem {
    let mut nav = navigation_of(map);
    nav.set_obstacles_on(obstacles(map, world, levels));
    nav
}

/// Every dynamic body's box and level, by index: `None` for one out of the world or falling
/// between levels.
fn obstacles<'a>(
    map: &'a GameMap,
    world: &'a PhysicsWorld,
    levels: &'a [LevelState],
) -> impl Iterator<Item = (usize, Option<(u8, Obb)>)> + 'a {
    map.dynamic_handles().iter().enumerate().map(|(i, &h)| {
        let level = levels.get(i).copied().unwrap_or_default();
        (i, obstacle_of(world, h).filter(|_| !level.is_falling()).map(|b| (level.level, b)))
    })
}

/// The box a dynamic body covers: its first collider's cuboid at its pose; `None` for a
/// disabled or missing body (it is out of the world) or one without a cuboid collider.
pub fn obstacle_of(world: &PhysicsWorld, handle: RigidBodyHandle) -> Option<Obb> {
    let body = world.bodies.get(handle).filter(|b| b.is_enabled())?;
    let collider = world.colliders.get(*body.colliders().first()?)?;
    let cuboid = collider.shape().as_cuboid()?;
    let pose = collider.position();
    Some(Obb {
        center: [pose.translation.x, pose.translation.y],
        half: [cuboid.half_extents.x, cuboid.half_extents.y],
        rot: [pose.rotation.re, pose.rotation.im],
    })
}

/// Rebuilds [`Nav`] from the current map and bodies (none without a map).
pub fn rebuild(world: &mut World) {
    let nav = {
        let map = world.resource::<MapState>();
        let physics = world.resource::<Physics>();
        map.map.as_ref().map(|m| build(m, physics.world(), &map.levels))
    };
    world.insert_resource(Nav(nav));
}

/// Moves each soft obstacle to its body's current pose (the engine runs it at the start of
/// every tick). Poses that did not change cost a comparison.
pub fn refresh_obstacles(state: Res<MapState>, physics: Res<Physics>, mut nav: ResMut<Nav>) {
    let (Some(map), Some(nav)) = (state.map.as_ref(), nav.0.as_mut()) else { return };
    nav.set_obstacles_on(obstacles(map, physics.world(), &state.levels));
}
