//! The tanks game's snapshot rows: tanks (`m1`), bombs in flight (`w2`) and each player's own state.

use bevy::prelude::*;
use vimp_netcode::schema::set_all;
use vimp_netcode::snapshot::{Block, PlayerBlock};

use crate::engine::physics::Physics;
use crate::engine::players::{Panels, Participants, Score, Scores};
use crate::engine::snapshot::SnapshotRows;
use crate::engine::views::Observer;
use crate::tanks::TanksRules;
use crate::tanks::rounds::Round;
use crate::tanks::tank::{Tank, sorted};
use crate::tanks::weapons::Bomb;

pub mod key;
pub mod layout;

pub use layout::{BlastRow, BombRow, Rows, RowsError, SCHEMA_JSON, TankRow, TracerRow};

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

/// Keeps each player's panel: `t` round time left (s), `h` health, `w1`/`w2` ammo, `wa` active
/// weapon, and while its tank is destroyed `r`, the seconds until it is back.
pub(crate) fn publish_panels(tanks: Query<&Tank>, round: Res<Round>, mut panels: ResMut<Panels>) {
    let t = round.time_left().ceil().max(0.0) as u32;
    panels.0 = tanks
        .iter()
        .map(|tank| {
            let mut panel = vec![
                ("t".to_owned(), t.to_string()),
                ("h".to_owned(), (tank.health.ceil().max(0.0) as u32).to_string()),
                ("w1".to_owned(), tank.ammo[0].to_string()),
                ("w2".to_owned(), tank.ammo[1].to_string()),
                ("wa".to_owned(), tank.weapon.name().to_owned()),
            ];
            if !tank.alive {
                panel.push(("r".to_owned(), (tank.respawn_in.ceil().max(0.0) as u32).to_string()));
            }
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
