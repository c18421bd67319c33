//! The loaded map as engine state: the map, a byte per dynamic body and their levels, and the
//! state bytes; [`super::load`] puts a map in and takes it out.

use bevy::prelude::*;
use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::engine::config::EngineConfig;
use crate::engine::map::{FallModel, GameMap, LevelState, MapConfig};
use crate::engine::physics::Physics;
use crate::engine::sim::EngineSettings;

/// The current map, if any, and the engine's per-body state.
///
/// In a dump it is its four first fields and, only when the map is layered, the dynamic
/// bodies' levels after them: a flat map's dump is the one it was before levels existed.
#[derive(Resource, Debug, Default, PartialEq)]
pub struct MapState {
    /// The map's bodies and data, once built.
    pub map: Option<GameMap>,
    /// The map as loaded (its JSON form).
    pub config: Option<MapConfig>,
    /// One byte per dynamic body, written by the game (`role: state` in the snapshot).
    pub body_state: Vec<u8>,
    /// How many maps have been loaded (a new load also reloads the same map).
    pub loads: u32,
    /// Where each dynamic body is in height (all on the ground on a flat map).
    pub levels: Vec<LevelState>,
}

impl Serialize for MapState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let layered = self.is_layered();
        let mut t = serializer.serialize_tuple(4 + usize::from(layered))?;
        t.serialize_element(&self.map)?;
        t.serialize_element(&self.config)?;
        t.serialize_element(&self.body_state)?;
        t.serialize_element(&self.loads)?;
        if layered {
            t.serialize_element(&self.levels)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for MapState {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StateVisitor;
        impl<'de> Visitor<'de> for StateVisitor {
            type Value = MapState;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map state")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MapState, A::Error> {
                fn next<'de, A: SeqAccess<'de>, T: Deserialize<'de>>(seq: &mut A, n: usize) -> Result<T, A::Error> {
                    seq.next_element()?.ok_or_else(|| de::Error::invalid_length(n, &"5 fields"))
                }
                let map: Option<GameMap> = next(&mut seq, 0)?;
                let config: Option<MapConfig> = next(&mut seq, 1)?;
                let body_state: Vec<u8> = next(&mut seq, 2)?;
                let loads: u32 = next(&mut seq, 3)?;
                let mut state = MapState { map, config, body_state, loads, levels: Vec::new() };
                state.levels = if state.is_layered() {
                    next(&mut seq, 4)?
                } else {
                    state.map.as_ref().map(GameMap::initial_dynamic_levels).unwrap_or_default()
                };
                Ok(state)
            }
        }
        deserializer.deserialize_tuple(5, StateVisitor)
    }
}

impl MapState {
    /// Whether the loaded map is layered.
    pub fn is_layered(&self) -> bool {
        self.map.as_ref().is_some_and(|m| m.levels().is_layered())
    }

    /// The fall of the loaded map's bodies: its level height, the engine's `mapFallTime`.
    pub fn fall_model(&self, engine: &EngineConfig) -> Option<FallModel> {
        let map = self.map.as_ref()?;
        Some(FallModel::new(map.levels().level_height(), engine.map_fall_time))
    }

    /// The snapshot key of the map's dynamic bodies: the map's own, else the engine's default.
    pub fn set_id<'a>(&'a self, engine: &'a EngineConfig) -> &'a str {
        match &self.config {
            Some(c) if !c.set_id.is_empty() => &c.set_id,
            _ => &engine.map_set_id,
        }
    }
}

/// One fixed step of the map's dynamic bodies' levels, before the physics step
/// ([`GameMap::step_dynamic_levels`]); nothing on a flat map.
pub fn step_map_levels(settings: Res<EngineSettings>, mut map: ResMut<MapState>, mut physics: ResMut<Physics>) {
    if !map.is_layered() {
        return;
    }
    let Some(fall) = map.fall_model(&settings.config) else { return };
    let dt = physics.dt();
    let state = &mut *map;
    if let Some(game_map) = state.map.as_ref() {
        game_map.step_dynamic_levels(physics.world_mut(), &mut state.levels, &fall, dt);
    }
}
