//! Tanks on layered maps: the level a tank drives on, its ramps and falls, the one rule host and predictor share.
//!
//! Each fixed step, after the physics step, [`step_tank_level`] moves a tank's [`TankLevel`]
//! on from where its body now stands ([`step_body_level`]: tanks ride ramps) and gives the
//! body its level's collision groups for the next step. So the level a frame shows is the
//! one of the position it shows: on a ramp, z is the run's height there; falling, whole
//! steps of drop; else 0 ([`state_from_row`] reads it back exactly). Before the next physics
//! step, [`footing`] says what the tank's drive may do:
//!
//! - on a ramp the slope acts on the tank: climbing, its top speed is
//!   `1 − climbDrag · grade` of its own, coming down more (the grade is the run's slope along
//!   the hull's heading, [`RampSample::slope`](crate::engine::map::RampSample::slope) times
//!   the dot product of the run's uphill direction and the heading);
//! - while it falls the tank's keys are locked: it flies on as it left the edge, meets
//!   walls but no body, and lands on its [`MapLevels::landing_level`];
//! - landing costs `fallDamage` per level fallen (the game config), dealt by the host.
//!
//! The host's tanks and the client's predictor both step through this module, so a
//! predicted climb, crossing and fall are the host's bit for bit. On a flat map nothing
//! here runs: no groups are set and the drive is the flat one.

use rapier2d::prelude::RigidBodyHandle;
use serde::{Deserialize, Serialize};

use crate::engine::map::bodies::set_body_groups;
use crate::engine::map::{FallModel, LevelState, LevelStep, MapLevels, step_body_level};
use crate::engine::physics::Physics;

/// Where a tank is in height, and the fall under way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TankLevel {
    /// Its level, its height above it and its fall ([`LevelState`]).
    pub state: LevelState,
    /// Levels the fall under way drops (its damage is dealt on landing); 0 when not falling.
    pub falling: f32,
}

impl TankLevel {
    /// A tank standing on level `n`.
    pub fn on(n: u8) -> TankLevel {
        TankLevel { state: LevelState::on(n), falling: 0.0 }
    }
}

/// What the ground lets a tank's drive do this step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Footing {
    /// The tank falls: its keys do nothing.
    pub locked: bool,
    /// The ground's gradient: the run's slope times its uphill direction (zero off a ramp).
    pub slope: [f32; 2],
}

/// What one step did to a tank's level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LevelChange {
    /// The step ([`LevelStep`]).
    pub step: LevelStep,
    /// Levels fallen, on the step it lands (0 on every other step): what its damage is for.
    pub landed_from: f32,
}

/// One fixed step of a tank's level after the physics step (see the module docs): returns
/// what the step did.
pub fn step_tank_level(
    physics: &mut Physics,
    body: RigidBodyHandle,
    level: &mut TankLevel,
    levels: &MapLevels,
    fall: &FallModel,
) -> LevelChange {
    let dt = physics.dt();
    let Some(p) = physics.world().bodies.get(body).map(|b| [b.translation().x, b.translation().y]) else {
        return LevelChange { step: LevelStep::Stands, landed_from: 0.0 };
    };
    let step = step_body_level(&mut level.state, levels, fall, dt, p, true);
    let mut landed_from = 0.0;
    match step {
        LevelStep::Fell { height, .. } => level.falling = height / levels.level_height(),
        LevelStep::Landed => landed_from = std::mem::take(&mut level.falling),
        _ => {}
    }
    set_body_groups(physics.world_mut(), body, level.state.groups(levels, p, true));
    LevelChange { step, landed_from }
}

/// What the ground lets the drive do for a tank at `p`.
pub fn footing(level: &TankLevel, levels: &MapLevels, p: [f32; 2]) -> Footing {
    if level.state.is_falling() {
        return Footing { locked: true, slope: [0.0; 2] };
    }
    let slope = match level.state.ramp(levels, p, true) {
        Some(run) => {
            let s = levels.sample(run, p[0], p[1]);
            [s.dir[0] * s.slope, s.dir[1] * s.slope]
        }
        None => [0.0; 2],
    };
    Footing { locked: false, slope }
}

/// Puts a tank's level and its body's groups where a respawn on level `n` puts them.
pub fn place_on_level(physics: &mut Physics, body: RigidBodyHandle, level: &mut TankLevel, levels: &MapLevels, n: u8) {
    *level = TankLevel::on(n);
    let Some(p) = physics.world().bodies.get(body).map(|b| [b.translation().x, b.translation().y]) else { return };
    set_body_groups(physics.world_mut(), body, level.state.groups(levels, p, true));
}

/// The levels a falling `state` still drops (0 when it stands): what a replica takes for the
/// height of a fall it did not see begin.
pub fn fall_levels(levels: &MapLevels, state: LevelState) -> f32 {
    if state.is_falling() { state.z / levels.level_height() } else { 0.0 }
}

/// How far a row's z may be from the host's: its rounding to 2 decimals (the v6 codec's
/// quantization of z is finer), and a little more.
const ROW_Z_TOLERANCE: f32 = 0.011;

/// The level state a client reads back from its own tank's row: the row's `level` and
/// (rounded) `z`, at the body's exact position `p` (the player block's).
///
/// After a step a tank stands (z 0), rides a run of its level (z the run's height at `p`)
/// or falls (z whole steps of drop): a z the run under `p` explains is the ramp, any other
/// is a fall whose steps still to go are z over one step's drop (a fall lasts whole steps,
/// so the rounding of the row's z cannot mislead it). `previous` (the prediction's own
/// state) is kept when it already says the same.
pub fn state_from_row(
    levels: &MapLevels,
    fall: &FallModel,
    dt: f32,
    level: u8,
    z: f32,
    p: [f32; 2],
    previous: LevelState,
) -> LevelState {
    let standing = LevelState::on(level);
    if let Some(run) = standing.ramp(levels, p, true) {
        let height = levels.sample(run, p[0], p[1]).height;
        if (height - z).abs() <= ROW_Z_TOLERANCE {
            return LevelState { level, z: height, fall: 0 };
        }
    }
    if z <= 0.005 {
        return standing;
    }
    let drop = fall.drop_per_step(dt);
    if previous.level == level && previous.is_falling() && (previous.z - z).abs() <= ROW_Z_TOLERANCE {
        return previous;
    }
    let steps = (z / drop).round().clamp(1.0, f32::from(u16::MAX)) as u16;
    LevelState { level, z: f32::from(steps) * drop, fall: steps }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::map::MapConfig;

    fn levels() -> MapLevels {
        let table: serde_json::Value =
            serde_json::from_str(include_str!("../engine/map/levels/cases.json")).expect("the table");
        let cfg = MapConfig::from_json("base", &table["base"].to_string()).expect("valid");
        MapLevels::new(&cfg, 1.0)
    }

    #[test]
    fn a_row_gives_back_the_state_it_came_from() {
        let levels = levels();
        let fall = FallModel::new(levels.level_height(), 0.35);
        let dt = 1.0 / 120.0;
        let round2 = |v: f32| (v * 100.0).round() / 100.0;
        // On the ramp (columns 2 and 3 of rows 2 and 3, rising east; tile 10).
        let p = [27.3, 25.0];
        let on_ramp = LevelState { level: 0, z: levels.ramp_at(p[0], p[1]).unwrap().height, fall: 0 };
        assert_eq!(state_from_row(&levels, &fall, dt, 0, round2(on_ramp.z), p, LevelState::default()), on_ramp);
        // Falling off the slab's east edge at every step of the fall.
        for steps in 1..=fall.steps(10.0, dt) {
            let falling = LevelState { level: 0, z: f32::from(steps) * fall.drop_per_step(dt), fall: steps };
            let got = state_from_row(&levels, &fall, dt, 0, round2(falling.z), [75.0, 25.0], LevelState::default());
            assert_eq!(got, falling, "{steps}");
        }
        assert_eq!(state_from_row(&levels, &fall, dt, 1, 0.0, [45.0, 25.0], on_ramp), LevelState::on(1));
    }
}
