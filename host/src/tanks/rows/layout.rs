//! Where the tanks game's rows sit in a snapshot schema: each key's fields found by name once
//! ([`Rows`]), and the game's own schema ([`SCHEMA_JSON`]).

use bevy::prelude::*;
use vimp_netcode::schema::SnapshotSchema;
use vimp_netcode::snapshot::FieldValue;

use crate::tanks::rows::key;

/// The tanks game's snapshot schema (the spec's example), as data.
pub const SCHEMA_JSON: &str = include_str!("../snapshot.json");

vimp_netcode::row_fields! {
    /// A tank's row (`m1`), by name.
    pub struct TankRow {
        x: "x", y: "y", angle: "angle", gun: "gunRotation", vx: "vx", vy: "vy",
        engine_load: "engineLoad", condition: "condition", size: "size", team: "teamId",
        angvel: "angvel", z: "z", level: "level",
    }
}

vimp_netcode::row_fields! {
    /// A bomb's row (`w2`), by name.
    pub struct BombRow { x: "x", y: "y", angle: "angle", size: "size", time: "time", owner: "ownerId" }
}

vimp_netcode::row_fields! {
    /// A tracer's row (`w1`), by name.
    pub struct TracerRow {
        start_x: "startX", start_y: "startY", end_x: "endX", end_y: "endY",
        body_x: "bodyX", body_y: "bodyY", was_hit: "wasHit", shooter: "shooterId",
    }
}

vimp_netcode::row_fields! {
    /// A blast's row (`w2e`), by name.
    pub struct BlastRow { x: "x", y: "y", radius: "radius" }
}

/// The tanks game's rows, each key's fields found by name once when the schema loads: what
/// the host writes, the predictor and the window read.
#[derive(Resource, Clone, Debug, PartialEq)]
pub struct Rows {
    /// `m1`.
    pub tanks: TankRow,
    /// `w2`.
    pub bombs: BombRow,
    /// `w1`.
    pub tracers: TracerRow,
    /// `w2e`.
    pub blasts: BlastRow,
}

/// Why a schema cannot carry the tanks game's rows.
#[derive(Debug, thiserror::Error)]
pub enum RowsError {
    /// It has no key of this name, or the key has another id.
    #[error("the snapshot schema has no key {0:?} with id {1}")]
    Key(&'static str, u8),
    /// A key lacks a field the game writes.
    #[error(transparent)]
    Field(#[from] vimp_netcode::schema::MissingField),
}

impl Rows {
    /// Finds every field the game uses in `schema`.
    pub fn of(schema: &SnapshotSchema) -> Result<Rows, RowsError> {
        let block =
            |name: &'static str, id: u8| schema.by_name(name).filter(|b| b.id == id).ok_or(RowsError::Key(name, id));
        Ok(Rows {
            tanks: TankRow::of(block("m1", key::TANKS)?)?,
            bombs: BombRow::of(block("w2", key::BOMBS)?)?,
            tracers: TracerRow::of(block("w1", key::TRACERS)?)?,
            blasts: BlastRow::of(block("w2e", key::BLASTS)?)?,
        })
    }

    /// The rows of the game's own schema ([`SCHEMA_JSON`]).
    pub fn builtin() -> Rows {
        let schema = SnapshotSchema::from_json(SCHEMA_JSON).expect("the tanks schema is valid");
        Rows::of(&schema).expect("the tanks schema has the tanks' rows")
    }

    /// `schema`'s rows, or, when it cannot carry them, the game's own (said once: the rows the
    /// host writes then do not fit its frames, which count and log it).
    pub fn of_or_builtin(schema: &SnapshotSchema) -> Rows {
        Rows::of(schema).unwrap_or_else(|e| {
            tracing::error!("{e}: the tanks game's rows do not fit this schema");
            Rows::builtin()
        })
    }
}

impl TankRow {
    /// A tank row's `(level, z)`.
    pub fn level(&self, row: &[FieldValue]) -> (u8, f32) {
        (self.level.u8(row), self.z.f32(row))
    }
}
