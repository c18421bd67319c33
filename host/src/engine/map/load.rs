//! Loading a map into the world and taking it out.
//!
//! [`load_map`] follows the spec's order: the map is validated before the old one
//! is touched (an invalid map leaves the match as it was); then the old map's
//! bodies are removed, the new ones built, `map_body_state` (a byte per dynamic
//! body) reset to zeros ([`MapState`]), the navigation rebuilt ([`crate::engine::nav`]), and
//! the game's `on_map_loaded` hook called. When the hook
//! fails there is nothing to go back to — the old map is gone — so the new bodies
//! are removed too and the world is left with no map.

use bevy::prelude::*;

use crate::engine::game::GameHooks;
use crate::engine::map::state::MapState;
use crate::engine::map::{GameMap, MapConfig, MapError};
use crate::engine::physics::Physics;
use crate::engine::sim::EngineSettings;

/// Why a map did not load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MapLoadError {
    /// The map breaks a rule; the old map is untouched.
    #[error("{0}")]
    Invalid(Box<MapError>),
    /// The game's `on_map_loaded` failed; the world now has no map.
    #[error("the game refused the map: {0}")]
    Hook(String),
}

/// Loads `map` into the world (see the module docs for the order and what a failure leaves).
pub fn load_map(world: &mut World, map: MapConfig) -> Result<(), MapLoadError> {
    map.validate(&map.name).map_err(|e| MapLoadError::Invalid(Box::new(e)))?;
    unload_map(world);
    let scale = world.resource::<EngineSettings>().config.map_scale;
    let built = {
        let mut physics = world.resource_mut::<Physics>();
        GameMap::create(&map, scale, physics.world_mut()).map_err(|e| MapLoadError::Invalid(Box::new(e)))?
    };
    {
        let mut state = world.resource_mut::<MapState>();
        state.body_state = vec![0; built.dynamic_count()];
        state.levels = built.initial_dynamic_levels();
        state.map = Some(built);
        state.config = Some(map);
        state.loads += 1;
    }
    crate::engine::nav::rebuild(world);
    let hook = world.resource::<GameHooks>().on_map_loaded;
    if let Err(reason) = hook(world) {
        unload_map(world);
        return Err(MapLoadError::Hook(reason));
    }
    Ok(())
}

/// Removes the map's bodies and forgets the map.
pub fn unload_map(world: &mut World) {
    let old = {
        let mut state = world.resource_mut::<MapState>();
        state.body_state.clear();
        state.levels.clear();
        state.config = None;
        state.map.take()
    };
    if let Some(mut old) = old {
        let mut physics = world.resource_mut::<Physics>();
        old.remove(physics.world_mut());
    }
    world.insert_resource(crate::engine::nav::Nav(None));
}
