//! The tanks game's snapshot rows: tanks (`m1`), bombs in flight (`w2`) and each player's own state.

use bevy::prelude::*;
use vimp_netcode::snapshot::{Block, FieldValue, PlayerBlock, Row, round2};

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

/// Where a tank row (`m1`) keeps its height above its level, `z` (f32).
pub const TANK_Z: usize = 11;
/// Where a tank row keeps its level (u8).
pub const TANK_LEVEL: usize = 12;

/// A tank row's `(level, z)` (0 where the row is shorter).
pub fn tank_row_level(row: &Row) -> (u8, f32) {
    let level = row.get(TANK_LEVEL).map_or(0, |v| v.as_f32() as u8);
    (level, row.get(TANK_Z).map_or(0.0, |v| v.as_f32()))
}

fn f(v: f32) -> FieldValue {
    FieldValue::F32(round2(v))
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
        let condition = (100.0 * tank.health / model.health).clamp(0.0, 100.0).round() as u8;
        tank_rows.push((
            tank.player.0,
            Some(vec![
                f(m.x),
                f(m.y),
                f(m.angle),
                f(m.gun),
                f(m.vx),
                f(m.vy),
                f(m.throttle.abs()),
                FieldValue::U8(condition),
                FieldValue::U8(1),
                FieldValue::U8(tank.team),
                f(m.angvel),
                f(tank.level.state.z),
                FieldValue::U8(tank.level.state.level),
            ]),
        ));
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
            Some((
                b.id,
                Some(vec![
                    f(p.x),
                    f(p.y),
                    f(body.rotation().angle()),
                    f(b.size),
                    f(b.fuse.max(0.0)),
                    FieldValue::U8(b.owner.0),
                ]),
            ))
        })
        .collect();
    rows.blocks.push((key::BOMBS, Block::Indexed32(bomb_rows)));
}
