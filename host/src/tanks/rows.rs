//! The tanks game's snapshot rows: tanks (`m1`), bombs in flight (`w2`) and each player's own state.

use bevy::prelude::*;
use vimp_netcode::schema::{SnapshotSchema, set_all};
use vimp_netcode::snapshot::{Block, FieldValue, PlayerBlock};

use crate::engine::physics::Physics;
use crate::engine::players::{Panels, Participants, Score, Scores};
use crate::engine::snapshot::SnapshotRows;
use crate::engine::views::Observer;
use crate::tanks::TanksRules;
use crate::tanks::rounds::Round;
use crate::tanks::tank::{Tank, sorted};
use crate::tanks::weapons::Bomb;

/// The tanks game's snapshot schema (the spec's example), as data.
pub const SCHEMA_JSON: &str = include_str!("snapshot.json");

/// Key ids of the schema.
pub mod key {
    /// `m1`: tanks (indexed8, hot).
    pub const TANKS: u8 = 1;
    /// `w1`: tracers (list16, event).
    pub const TRACERS: u8 = 2;
    /// `w2`: bombs in flight (indexed32, hot, delta-coded; null on removal).
    pub const BOMBS: u8 = 3;
    /// `w2e`: blasts (list16, event).
    pub const BLASTS: u8 = 4;
}

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

/// Keeps the engine's scoreboard in step with the tanks (score, deaths, and "dead" while waiting).
pub(crate) fn publish_scores(tanks: Query<&Tank>, mut scores: ResMut<Scores>) {
    scores.0 = tanks
        .iter()
        .map(|t| {
            let status = if t.alive { String::new() } else { "dead".to_owned() };
            (t.player, Score { score: t.score as i64, deaths: t.deaths, status })
        })
        .collect();
}

/// Keeps each player's panel: `t` round time left (s), `h` health, `w1`/`w2` ammo, `wa` active weapon.
pub(crate) fn publish_panels(tanks: Query<&Tank>, round: Res<Round>, mut panels: ResMut<Panels>) {
    let t = round.time_left().ceil().max(0.0) as u32;
    panels.0 = tanks
        .iter()
        .map(|tank| {
            let panel = vec![
                ("t".to_owned(), t.to_string()),
                ("h".to_owned(), (tank.health.ceil().max(0.0) as u32).to_string()),
                ("w1".to_owned(), tank.ammo[0].to_string()),
                ("w2".to_owned(), tank.ammo[1].to_string()),
                ("wa".to_owned(), tank.weapon.name().to_owned()),
            ];
            (tank.player, panel)
        })
        .collect();
}

/// Fills the frame: a row per tank (null while dead), a row per bomb, each player's block.
pub(crate) fn build_rows(
    physics: Res<Physics>,
    participants: Res<Participants>,
    rules: Res<TanksRules>,
    tanks: Query<&Tank>,
    bombs: Query<&Bomb>,
    layout: Res<Rows>,
    mut rows: ResMut<SnapshotRows>,
) {
    let model = &rules.0.models.tank;
    let mut tank_rows = Vec::new();
    for tank in sorted(tanks.iter()) {
        // A player sees the match from its tank, and from where it fell while it waits.
        let m = tank.motion(&physics);
        let own = Some((key::TANKS, u32::from(tank.player.0)));
        rows.observers.insert(tank.player, Observer { x: m.x, y: m.y, dimension: 0, own });
        if !tank.alive {
            tank_rows.push((tank.player.0, None));
            continue;
        }
        let condition = (100.0 * tank.health / model.health).clamp(0.0, 100.0).round();
        let t = &layout.tanks;
        let mut row = t.row();
        set_all(
            &mut row,
            [
                (t.x, m.x),
                (t.y, m.y),
                (t.angle, m.angle),
                (t.gun, m.gun),
                (t.vx, m.vx),
                (t.vy, m.vy),
                (t.engine_load, m.throttle.abs()),
                (t.condition, condition),
                (t.size, 1.0),
                (t.team, f32::from(tank.team)),
                (t.angvel, m.angvel),
                (t.z, tank.level.state.z),
                (t.level, f32::from(tank.level.state.level)),
            ],
        );
        tank_rows.push((tank.player.0, Some(row)));
        if let Some(p) = participants.0.get(&tank.player) {
            rows.players.insert(
                tank.player,
                PlayerBlock { last_input_seq: p.keys.last_input_seq(), state: m.to_state(), centering: false },
            );
        }
    }
    rows.blocks.push((key::TANKS, Block::Indexed8(tank_rows)));

    let mut list: Vec<&Bomb> = bombs.iter().collect();
    list.sort_by_key(|b| b.id);
    let bomb_rows = list
        .into_iter()
        .filter_map(|b| {
            let body = physics.world().bodies.get(b.body)?;
            let p = body.translation();
            let r = &layout.bombs;
            let mut row = r.row();
            set_all(
                &mut row,
                [
                    (r.x, p.x),
                    (r.y, p.y),
                    (r.angle, body.rotation().angle()),
                    (r.size, b.size),
                    (r.time, b.fuse.max(0.0)),
                    (r.owner, f32::from(b.owner.0)),
                ],
            );
            Some((b.id, Some(row)))
        })
        .collect();
    rows.blocks.push((key::BOMBS, Block::Indexed32(bomb_rows)));
}
