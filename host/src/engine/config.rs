//! The host's init config: the engine half it reads and the game half it only delivers.
//!
//! The spec's "Init JSON" is one object `{ engine, game }`. The engine owns
//! `engine` (time step in SECONDS, map scale, map set id, fall time, snapshot
//! schema, seed, streaming distance and the most streamed rows per client); `game` is opaque to it and handed to the game once, at start, but for
//! the few keys of the spec's `gameConfig` the engine acts on: `migration.midRound`
//! ([`GameMigration`](crate::engine::game::GameMigration)) and the RTT overrides the
//! server reads ([`session_config`](crate::engine::server::session_config)).

use serde::{Deserialize, Serialize};
use vimp_netcode::schema::{SnapshotConfig, SnapshotSchema};

/// The fixed step the engine is built for: 120 Hz.
pub const DEFAULT_TIME_STEP: f32 = 1.0 / 120.0;

/// [`EngineConfig::streaming_distance`] by default.
pub const DEFAULT_STREAMING_DISTANCE: f32 = 900.0;

/// [`EngineConfig::max_streamed_entities`] by default.
pub const DEFAULT_MAX_STREAMED_ENTITIES: u32 = 128;

/// The engine half of the init config (camelCase JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EngineConfig {
    /// Fixed step in SECONDS (the client's twin is `timeStepMs`, in milliseconds).
    pub time_step: f32,
    /// Map units → world units.
    pub map_scale: f32,
    /// The snapshot key of the map's dynamic bodies when the map names none.
    pub map_set_id: String,
    /// Seconds a body takes to fall one level (layered maps).
    pub map_fall_time: f32,
    /// A snapshot frame every this many ticks (4 → 30 Hz at 120 Hz).
    pub network_send_rate: u32,
    /// The game's snapshot schema, in the spec's JSON form.
    pub snapshot: SnapshotConfig,
    /// The seed of the match's random numbers; `null` means 0.
    pub seed: Option<u64>,
    /// How far a client sees, in the units of the rows' positions (world units): a delta
    /// frame carries the rows within this distance of the player it watches (and the events
    /// that happen there), found on a grid of cells this wide, the watcher's cell and the 8
    /// around it. The default, 900, is half the diagonal of a 1280×720 view (734) plus a
    /// margin, so that a row streams in before it comes on screen.
    pub streaming_distance: f32,
    /// At most this many rows of placed keys in one client's view, the nearest first.
    pub max_streamed_entities: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            time_step: DEFAULT_TIME_STEP,
            map_scale: 1.0,
            map_set_id: "c1".into(),
            map_fall_time: 0.35,
            network_send_rate: 4,
            snapshot: SnapshotConfig::default(),
            seed: None,
            streaming_distance: DEFAULT_STREAMING_DISTANCE,
            max_streamed_entities: DEFAULT_MAX_STREAMED_ENTITIES,
        }
    }
}

/// The whole init config: `{ "engine": {…}, "game": {…} }`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct InitConfig {
    /// What the engine reads.
    pub engine: EngineConfig,
    /// What the game reads; the engine only delivers it.
    pub game: serde_json::Value,
}

/// An init config the engine cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The JSON does not parse into the config's shape.
    #[error("init config: {0}")]
    Json(#[from] serde_json::Error),
    /// A number out of its range.
    #[error("init config: engine.{field} {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The snapshot schema breaks a rule.
    #[error("init config: engine.snapshot: {0}")]
    Schema(#[from] vimp_netcode::schema::SchemaError),
}

impl InitConfig {
    /// Parses the spec's JSON form.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let cfg: InitConfig = serde_json::from_str(text)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the engine half; returns the validated snapshot schema.
    pub fn validate(&self) -> Result<SnapshotSchema, ConfigError> {
        let e = &self.engine;
        let bad = |field, reason: &str| ConfigError::Invalid { field, reason: reason.to_owned() };
        if !(e.time_step.is_finite() && e.time_step > 0.0 && e.time_step <= 0.1) {
            return Err(bad("timeStep", "must be in (0, 0.1] seconds"));
        }
        if !(e.map_scale.is_finite() && e.map_scale > 0.0) {
            return Err(bad("mapScale", "must be finite and > 0"));
        }
        if !(e.map_fall_time.is_finite() && e.map_fall_time > 0.0) {
            return Err(bad("mapFallTime", "must be finite and > 0"));
        }
        if e.network_send_rate == 0 {
            return Err(bad("networkSendRate", "must be at least 1"));
        }
        if e.map_set_id.is_empty() {
            return Err(bad("mapSetId", "must not be empty"));
        }
        if !(e.streaming_distance.is_finite() && e.streaming_distance > 0.0) {
            return Err(bad("streamingDistance", "must be finite and > 0"));
        }
        if e.max_streamed_entities == 0 {
            return Err(bad("maxStreamedEntities", "must be at least 1"));
        }
        Ok(SnapshotSchema::new(e.snapshot.keys.clone())?)
    }

    /// The seed, `null` read as 0.
    pub fn seed(&self) -> u64 {
        self.engine.seed.unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_spec_example() {
        let cfg = InitConfig::from_json(
            r#"{ "engine": { "timeStep": 0.008333333, "mapScale": 0.3, "mapSetId": "c1", "mapFallTime": 0.35,
                 "snapshot": { "version": 5, "port": 5, "keys": {} }, "seed": null },
                 "game": { "friendlyFire": false, "models": {} } }"#,
        )
        .expect("the spec's example parses");
        assert_eq!(cfg.engine.time_step, 0.008333333);
        assert_eq!(cfg.engine.map_scale, 0.3);
        assert_eq!(cfg.engine.network_send_rate, 4, "default");
        assert_eq!(cfg.seed(), 0);
        assert_eq!(cfg.game["friendlyFire"], serde_json::json!(false));
    }

    #[test]
    fn rejects_a_step_in_milliseconds() {
        let err = InitConfig::from_json(r#"{ "engine": { "timeStep": 8.333 } }"#).expect_err("8.333 s is not a step");
        assert!(err.to_string().contains("engine.timeStep"), "{err}");
    }

    #[test]
    fn rejects_a_bad_schema() {
        let err = InitConfig::from_json(
            r#"{ "engine": { "snapshot": { "keys": {
                "a": { "id": 1, "kind": "list16", "class": "event", "fields": [] },
                "b": { "id": 1, "kind": "list16", "class": "event", "fields": [] } } } } }"#,
        )
        .expect_err("duplicate id");
        assert!(matches!(err, ConfigError::Schema(_)), "{err}");
    }
}
