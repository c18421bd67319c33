//! How bodies live on a layered map: collision groups per level, ramp guards, falls, and the step between levels.
//!
//! # Collision groups
//!
//! Levels are kept apart by rapier's collision groups, one bit per level ([`level_group`]:
//! the ground is bit 0, `GROUP_1`; level 1 is `GROUP_2`…), so a tank on a bridge and one
//! under it drive through each other's space without touching:
//!
//! | collider | memberships | filter |
//! |---|---|---|
//! | a wall of level n ([`wall_interaction`]) | level n, [`STATIC_LEVEL_GROUP`] | level n, [`FALLING_GROUP`] |
//! | a ramp guard of a run from level n ([`guard_interaction`]) | [`RAMP_GUARD_GROUP`] | level n |
//! | a body on level n ([`level_interaction`]) | level n | level n, [`RAMP_GUARD_GROUP`] |
//! | a body riding a ramp ([`body_filter`]`(mask, true)`) | its mask | its mask |
//! | a falling body ([`falling_interaction`]) | [`FALLING_GROUP`] | [`STATIC_LEVEL_GROUP`] |
//! | a shot's ray on level n ([`ray_groups`]) | level n | level n |
//!
//! So a body meets the walls and bodies of its own level; a body of a run's bottom level meets
//! the run's guards, one that rides the run does not; a falling body meets walls but no body;
//! a ray meets walls and bodies of its level and passes guards. Flat maps set no groups at
//! all: every collider stays in `Group::ALL`, exactly as before levels existed.
//!
//! # Ramp guards
//!
//! A body of a run's bottom level may enter a ramp only at its foot: [`ramp_guards`] fences
//! each wide ramp (block) along both sides, from one cell past the foot to the top, and
//! across its top end (a body under the slab must not drive up into the ramp from above). A
//! run one cell long is all foot and gets no side guards. The foot cell is open on every
//! side, so a body may drive onto it head-on, slanting or from the side. [`ramp_rail_span`]
//! gives the same spans per cell for a game that draws them. Guards never hold a body that
//! rides the ramp: it leaves over a side at will, and falls.
//!
//! # Falls
//!
//! [`FallModel`]: z falls linearly, one level in `mapFallTime` (0.35 s by default), so a fall
//! lasts longer the higher it starts. A body's fall is counted in whole fixed steps
//! ([`LevelState::fall`]), so its height is a whole number of steps' drops and a client can
//! read the fall's phase back from a frame's z exactly ([`FallModel::elapsed_at`]).
//!
//! # The step between levels
//!
//! [`step_body_level`] moves a body's [`LevelState`] on by one fixed step from where the body
//! stands, before the physics step: a falling body falls on (and lands, taking its landing
//! level's groups); a body that rides ramps and stands on a run of its level climbs it (its
//! z follows the run), leaves it at the top onto the upper level, back at the foot, or over a
//! side and falls; a body with no floor of its level under its centre falls to the
//! [`MapLevels::landing_level`]. Bodies pushed rather than driven (a map's boxes) do not ride
//! ramps: on a ramp cell they keep their level.

use rapier2d::prelude::{Group, InteractionGroups, InteractionTestMode, PhysicsWorld, RigidBodyHandle};
use serde::{Deserialize, Serialize};

use super::WorldRect;
use super::levels::{Axis, MapLevels, RampRun, Surface};

/// The group every wall collider is a member of, whatever its level: what a falling body meets.
pub const STATIC_LEVEL_GROUP: Group = Group::GROUP_9;

/// The group of the ramps' guards.
pub const RAMP_GUARD_GROUP: Group = Group::GROUP_10;

/// The group a falling body is a member of: walls take it in their filter, bodies do not.
pub const FALLING_GROUP: Group = Group::GROUP_11;

/// Thickness of a ramp guard, as a share of the tile size.
pub const RAMP_GUARD_THICKNESS: f32 = 0.125;

/// The group of level `n` (bit `n`; levels above 7 have none).
pub fn level_group(n: u8) -> Group {
    Group::from_bits_truncate(1u32.checked_shl(u32::from(n)).unwrap_or(0) & 0xff)
}

/// The collision groups of a body standing on level `n`.
pub fn level_interaction(n: u8) -> InteractionGroups {
    levels_interaction(level_group(n))
}

/// The collision groups of a body on the levels of `mask` that does not ride a ramp: it
/// meets those levels' walls and bodies, and the guards of runs starting there.
pub fn levels_interaction(mask: Group) -> InteractionGroups {
    InteractionGroups::new(mask, mask | RAMP_GUARD_GROUP, InteractionTestMode::And)
}

/// The collision groups of a body on the levels of `mask` riding a ramp: no guard holds it.
pub fn levels_interaction_on_ramp(mask: Group) -> InteractionGroups {
    InteractionGroups::new(mask, mask, InteractionTestMode::And)
}

/// A body's filter for its level `mask`, riding a ramp (`on_ramp`) or not: the one place
/// the rule lives ([`levels_interaction`], [`levels_interaction_on_ramp`]).
pub fn body_filter(mask: Group, on_ramp: bool) -> InteractionGroups {
    if on_ramp { levels_interaction_on_ramp(mask) } else { levels_interaction(mask) }
}

/// The collision groups of a wall (or rail) of level `n`.
pub fn wall_interaction(n: u8) -> InteractionGroups {
    InteractionGroups::new(
        level_group(n) | STATIC_LEVEL_GROUP,
        level_group(n) | FALLING_GROUP,
        InteractionTestMode::And,
    )
}

/// The collision groups of a guard of a run whose foot is on level `from`.
pub fn guard_interaction(from: u8) -> InteractionGroups {
    InteractionGroups::new(RAMP_GUARD_GROUP, level_group(from), InteractionTestMode::And)
}

/// The collision groups of a falling body: walls, no bodies.
pub fn falling_interaction() -> InteractionGroups {
    InteractionGroups::new(FALLING_GROUP, STATIC_LEVEL_GROUP, InteractionTestMode::And)
}

/// The query groups of a ray on level `n`: the walls and bodies of that level.
pub fn ray_groups(n: u8) -> InteractionGroups {
    InteractionGroups::new(level_group(n), level_group(n), InteractionTestMode::And)
}

/// Sets the collision groups of every collider of `body` (those that already have them are
/// left untouched, so an unchanged body costs the broad phase nothing).
pub fn set_body_groups(world: &mut PhysicsWorld, body: RigidBodyHandle, groups: InteractionGroups) {
    let Some(b) = world.bodies.get(body) else { return };
    let colliders: Vec<_> = b.colliders().to_vec();
    for c in colliders {
        if let Some(collider) = world.colliders.get_mut(c)
            && collider.collision_groups() != groups
        {
            collider.set_collision_groups(groups);
        }
    }
}

/// One guard of a wide ramp: an axis-aligned box that bodies of the run's bottom level meet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RampGuard {
    /// The block (wide ramp) it fences, an index into [`MapLevels::blocks`].
    pub block: usize,
    /// The level at the block's foot: the level whose bodies it holds.
    pub from: u8,
    /// Its box, world units.
    pub rect: WorldRect,
}

/// The guards of every wide ramp (see the module docs): per block, in block order, its two
/// side guards (when it is longer than one cell) and the one across its top end.
///
/// The host builds its guard colliders from this list, and a client's prediction world must
/// be built from the same call.
pub fn ramp_guards(levels: &MapLevels) -> Vec<RampGuard> {
    let t = levels.tile_size();
    let th = t * RAMP_GUARD_THICKNESS;
    let mut out = Vec::new();
    for (b, block) in levels.blocks().iter().enumerate() {
        let run = &levels.runs()[block.runs[0]];
        let lane_lo = block.lane_lo as f32 * t;
        let lane_hi = (block.lane_hi + 1) as f32 * t;
        let rect = |along: (f32, f32), across: (f32, f32)| match run.axis {
            Axis::X => WorldRect { x: along.0, y: across.0, width: along.1 - along.0, height: across.1 - across.0 },
            Axis::Y => WorldRect { x: across.0, y: along.0, width: across.1 - across.0, height: along.1 - along.0 },
        };
        if let Some(span) = side_span(levels, run) {
            for line in [lane_lo, lane_hi] {
                out.push(RampGuard { block: b, from: run.from, rect: rect(span, (line - th / 2.0, line + th / 2.0)) });
            }
        }
        let top = if run.sign > 0 { (run.last + 1) as f32 * t } else { run.first as f32 * t };
        out.push(RampGuard {
            block: b,
            from: run.from,
            rect: rect((top - th / 2.0, top + th / 2.0), (lane_lo, lane_hi)),
        });
    }
    out
}

/// Where along its axis a run's side guards stand, world units: from one cell past the foot
/// to the top end; `None` for a run one cell long.
fn side_span(levels: &MapLevels, run: &RampRun) -> Option<(f32, f32)> {
    if run.len() < 2 {
        return None;
    }
    let t = levels.tile_size();
    Some(if run.sign > 0 {
        ((run.first + 1) as f32 * t, (run.last + 1) as f32 * t)
    } else {
        (run.first as f32 * t, run.last as f32 * t)
    })
}

/// Where along its axis the side guards stand in the cell `k` cells up from `run`'s foot,
/// world units (`(low, high)` along the axis); `None` where there are none (the foot, a run
/// one cell long, `k` past the top). A game that draws a ramp's sides takes them from here.
pub fn ramp_rail_span(levels: &MapLevels, run: &RampRun, k: usize) -> Option<(f32, f32)> {
    if k == 0 || k >= run.len() {
        return None;
    }
    side_span(levels, run)?;
    let (c, r) = run.cell(k);
    let t = levels.tile_size();
    let lo = match run.axis {
        Axis::X => c as f32 * t,
        Axis::Y => r as f32 * t,
    };
    Some((lo, lo + t))
}

/// How a body falls (see the module docs): linear in z, one level in `fall_time` seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FallModel {
    /// The height of one level, world units.
    pub level_height: f32,
    /// Seconds a fall of one level lasts (the engine's `mapFallTime`).
    pub fall_time: f32,
}

impl FallModel {
    /// The model for levels `level_height` high, `fall_time` seconds a level.
    pub fn new(level_height: f32, fall_time: f32) -> FallModel {
        FallModel { level_height, fall_time }
    }

    /// How fast z falls, world units a second.
    pub fn speed(&self) -> f32 {
        self.level_height / self.fall_time
    }

    /// Seconds a fall from `height` lasts.
    pub fn duration(&self, height: f32) -> f32 {
        height / self.speed()
    }

    /// The height above the landing level `elapsed` seconds into a fall from `height`.
    pub fn z_at(&self, height: f32, elapsed: f32) -> f32 {
        (height - elapsed * self.speed()).max(0.0)
    }

    /// The inverse of [`Self::z_at`]: how long a fall from `height` has lasted when it is at `z`.
    pub fn elapsed_at(&self, height: f32, z: f32) -> f32 {
        ((height - z) / self.speed()).clamp(0.0, self.duration(height))
    }

    /// How far z falls in one step of `dt` seconds.
    pub fn drop_per_step(&self, dt: f32) -> f32 {
        self.speed() * dt
    }

    /// Whole steps of `dt` a fall from `height` takes (at least one).
    pub fn steps(&self, height: f32, dt: f32) -> u16 {
        let steps = (height / self.drop_per_step(dt)).ceil();
        if steps.is_finite() { steps.clamp(1.0, f32::from(u16::MAX)) as u16 } else { 1 }
    }
}

/// Where a body is in height: the level it stands on and how far above it (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelState {
    /// The level it stands on; on a ramp, the run's bottom level; while falling, the level it
    /// will land on.
    pub level: u8,
    /// Its height above `level`, world units: how far up a ramp it is, or how far it still
    /// has to fall.
    pub z: f32,
    /// Steps of its fall still to go; 0 when it does not fall.
    pub fall: u16,
}

/// What one [`step_body_level`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LevelStep {
    /// It stands where it stood (on floor, or off the map).
    Stands,
    /// It is on a ramp (climbing, coming down or standing on it).
    OnRamp {
        /// The run, an index into [`MapLevels::runs`].
        run: usize,
    },
    /// It left a ramp at the top onto level `level`.
    ReachedTop {
        /// The level it now stands on.
        level: u8,
    },
    /// It left a ramp at the bottom.
    LeftRamp,
    /// It lost its floor and began to fall.
    Fell {
        /// The level it will land on.
        to: u8,
        /// How far it falls, world units.
        height: f32,
    },
    /// It falls on.
    Falling,
    /// It landed on its level.
    Landed,
}

impl LevelState {
    /// A body standing on level `n`.
    pub fn on(n: u8) -> LevelState {
        LevelState { level: n, z: 0.0, fall: 0 }
    }

    /// Whether it is falling.
    pub fn is_falling(&self) -> bool {
        self.fall > 0
    }

    /// Its height above the ground, world units.
    pub fn height(&self, level_height: f32) -> f32 {
        f32::from(self.level) * level_height + self.z
    }

    /// The run it rides at `p`, when it `rides_ramps`: it stands (does not fall) on a cell of a
    /// run whose bottom is its level.
    pub fn ramp(&self, levels: &MapLevels, p: [f32; 2], rides_ramps: bool) -> Option<usize> {
        if !rides_ramps || self.is_falling() {
            return None;
        }
        let (c, r) = levels.cell_of(p[0], p[1])?;
        levels.run_at_cell(c, r).filter(|&run| levels.runs()[run].from == self.level)
    }

    /// The level whose walls and bodies it meets at `p`: on a run, the run's level nearest
    /// its height; else its own (while it falls, the one it will land on).
    pub fn effective_level(&self, levels: &MapLevels, p: [f32; 2], rides_ramps: bool) -> u8 {
        match self.ramp(levels, p, rides_ramps) {
            Some(run) => {
                let s = levels.sample(run, p[0], p[1]);
                let m = s.from + (s.progress * f32::from(s.to - s.from)).round() as u8;
                m.min(s.to)
            }
            None => self.level,
        }
    }

    /// Its collision groups at `p` (see the module docs): falling, riding a run (its mask the
    /// run's level nearest its height), or standing on its level.
    pub fn groups(&self, levels: &MapLevels, p: [f32; 2], rides_ramps: bool) -> InteractionGroups {
        if self.is_falling() {
            return falling_interaction();
        }
        let on_ramp = self.ramp(levels, p, rides_ramps).is_some();
        body_filter(level_group(self.effective_level(levels, p, rides_ramps)), on_ramp)
    }

    /// Starts a fall from where it is at cell `(c, r)` of `levels`: to its own level's floor
    /// when the cell has it (from a ramp's side), else to the landing level below.
    fn fall_from(&mut self, levels: &MapLevels, fall: &FallModel, dt: f32, c: usize, r: usize) -> LevelStep {
        let to = if self.level > 0 && levels.surface(self.level, c, r) == Surface::Empty {
            levels.landing_level_cell(self.level, c, r)
        } else {
            self.level
        };
        let height = f32::from(self.level - to) * levels.level_height() + self.z;
        self.level = to;
        self.fall = fall.steps(height, dt);
        self.z = f32::from(self.fall) * fall.drop_per_step(dt);
        LevelStep::Fell { to, height }
    }
}

/// Moves `state` on by one fixed step of `dt` for a body whose centre is at `p` (see the
/// module docs). Bodies that `rides_ramps` climb ramps; others keep their level on a ramp cell.
pub fn step_body_level(
    state: &mut LevelState,
    levels: &MapLevels,
    fall: &FallModel,
    dt: f32,
    p: [f32; 2],
    rides_ramps: bool,
) -> LevelStep {
    if state.fall > 0 {
        state.fall -= 1;
        state.z = f32::from(state.fall) * fall.drop_per_step(dt);
        return if state.fall == 0 { LevelStep::Landed } else { LevelStep::Falling };
    }
    let Some((c, r)) = levels.cell_of(p[0], p[1]) else { return LevelStep::Stands };
    if rides_ramps {
        if let Some(run) = levels.run_at_cell(c, r) {
            let rr = &levels.runs()[run];
            let onto_from_top = rr.to == state.level && levels.surface(rr.to, c, r) == Surface::Empty;
            if rr.from == state.level || onto_from_top {
                state.level = rr.from;
                state.z = levels.sample(run, p[0], p[1]).height;
                return LevelStep::OnRamp { run };
            }
        }
        if state.z > 0.0 {
            // It rode a ramp last step and is off it now.
            let up = state.z / levels.level_height();
            let above = (state.level + 1..=levels.top_level())
                .rev()
                .find(|&m| levels.surface(m, c, r) == Surface::Floor && (f32::from(m - state.level) - up).abs() <= 0.5);
            if let Some(m) = above {
                *state = LevelState::on(m);
                return LevelStep::ReachedTop { level: m };
            }
            if up <= 0.25 && levels.surface(state.level, c, r) != Surface::Empty {
                state.z = 0.0;
                return LevelStep::LeftRamp;
            }
            return state.fall_from(levels, fall, dt, c, r);
        }
    }
    if levels.surface(state.level, c, r) != Surface::Empty {
        state.z = 0.0;
        return LevelStep::Stands;
    }
    state.fall_from(levels, fall, dt, c, r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::map::MapConfig;

    fn bridge() -> MapLevels {
        let cfg: MapConfig = serde_json::from_str(
            r#"{
            "name": "bridge", "tileSize": 10,
            "map": [
                [0, 0, 0, 0, 1, 0, 0, 0],
                [0, 5, 5, 0, 1, 0, 0, 0],
                [0, 5, 5, 0, 1, 0, 0, 0],
                [0, 0, 0, 0, 1, 0, 0, 0]
            ],
            "physicsStatic": [1],
            "respawns": { "1": [[5, 5, 0]] },
            "levels": { "1": {
                "map": [
                    [0, 0, 0, 7, 7, 7, 0, 0],
                    [0, 0, 0, 9, 9, 9, 0, 0],
                    [0, 0, 0, 9, 9, 9, 0, 0],
                    [0, 0, 0, 7, 7, 7, 0, 0]
                ],
                "floor": [7, 9], "walls": [7]
            } },
            "ramps": [{ "tile": 5, "dir": "east" }]
        }"#,
        )
        .unwrap();
        MapLevels::new(&cfg, 1.0)
    }

    #[test]
    fn groups_keep_levels_apart_and_guards_hold_only_the_bottom_level() {
        let meets = |a: InteractionGroups, b: InteractionGroups| a.test(b);
        assert!(meets(level_interaction(0), wall_interaction(0)));
        assert!(!meets(level_interaction(1), wall_interaction(0)), "a bridge tank passes over ground walls");
        assert!(meets(level_interaction(1), wall_interaction(1)), "rails hold it");
        assert!(meets(level_interaction(1), level_interaction(1)));
        assert!(!meets(level_interaction(0), level_interaction(1)));
        assert!(meets(level_interaction(0), guard_interaction(0)));
        assert!(!meets(levels_interaction_on_ramp(level_group(0)), guard_interaction(0)), "a climber passes");
        assert!(!meets(level_interaction(1), guard_interaction(0)), "other levels never meet a guard");
        assert!(meets(falling_interaction(), wall_interaction(0)) && meets(falling_interaction(), wall_interaction(1)));
        assert!(
            !meets(falling_interaction(), level_interaction(0)) && !meets(falling_interaction(), falling_interaction())
        );
        assert!(meets(ray_groups(1), wall_interaction(1)) && meets(ray_groups(1), level_interaction(1)));
        assert!(!meets(ray_groups(1), guard_interaction(0)) && !meets(ray_groups(0), falling_interaction()));
        assert_eq!(level_group(8), Group::empty());
    }

    #[test]
    fn guards_fence_the_block_but_its_foot() {
        let levels = bridge();
        let guards = ramp_guards(&levels);
        assert_eq!(guards.len(), 3, "two sides and the top end of one wide ramp");
        let th = 10.0 * RAMP_GUARD_THICKNESS;
        // The block covers columns 1..=2, rows 1..=2: sides along y = 10 and y = 30 from x 20 to 30.
        assert_eq!(guards[0].rect, WorldRect { x: 20.0, y: 10.0 - th / 2.0, width: 10.0, height: th });
        assert_eq!(guards[1].rect, WorldRect { x: 20.0, y: 30.0 - th / 2.0, width: 10.0, height: th });
        assert_eq!(guards[2].rect, WorldRect { x: 30.0 - th / 2.0, y: 10.0, width: th, height: 20.0 });
        let run = levels.runs()[0];
        assert_eq!(ramp_rail_span(&levels, &run, 0), None, "the foot is open");
        assert_eq!(ramp_rail_span(&levels, &run, 1), Some((20.0, 30.0)));
        assert_eq!(ramp_rail_span(&levels, &run, 2), None);
    }

    #[test]
    fn the_fall_model_is_linear_and_longer_from_higher() {
        let f = FallModel::new(32.0, 0.35);
        assert!((f.duration(64.0) - 0.7).abs() < 1e-6);
        assert_eq!(f.z_at(64.0, 0.0), 64.0);
        assert!((f.z_at(64.0, 0.35) - 32.0).abs() < 1e-4);
        assert_eq!(f.z_at(64.0, 1.0), 0.0);
        assert!((f.elapsed_at(64.0, 32.0) - 0.35).abs() < 1e-6);
        assert_eq!(f.steps(32.0, 1.0 / 120.0), 42);
    }

    #[test]
    fn a_body_climbs_crosses_and_drops_off_the_open_edge() {
        let levels = bridge();
        let fall = FallModel::new(10.0, 0.35);
        let dt = 1.0 / 120.0;
        let mut s = LevelState::on(0);
        assert_eq!(step_body_level(&mut s, &levels, &fall, dt, [5.0, 15.0], true), LevelStep::Stands);
        assert_eq!(step_body_level(&mut s, &levels, &fall, dt, [15.0, 15.0], true), LevelStep::OnRamp { run: 0 });
        assert!((s.z - 2.5).abs() < 1e-6 && s.level == 0);
        assert_eq!(s.groups(&levels, [15.0, 15.0], true), body_filter(level_group(0), true));
        assert_eq!(s.groups(&levels, [26.0, 15.0], true), body_filter(level_group(1), true), "upper half");
        step_body_level(&mut s, &levels, &fall, dt, [29.0, 15.0], true);
        assert_eq!(step_body_level(&mut s, &levels, &fall, dt, [31.0, 15.0], true), LevelStep::ReachedTop { level: 1 });
        assert_eq!(s, LevelState::on(1));
        assert_eq!(
            step_body_level(&mut s, &levels, &fall, dt, [45.0, 15.0], true),
            LevelStep::Stands,
            "over the wall band"
        );
        // East of the slab (column 6) there is no floor on level 1: it falls one level.
        let got = step_body_level(&mut s, &levels, &fall, dt, [61.0, 15.0], true);
        assert_eq!(got, LevelStep::Fell { to: 0, height: 10.0 });
        assert!(s.is_falling() && s.level == 0 && s.z > 0.0);
        assert_eq!(s.groups(&levels, [61.0, 15.0], true), falling_interaction());
        let mut steps = 0;
        while step_body_level(&mut s, &levels, &fall, dt, [61.0, 15.0], true) != LevelStep::Landed {
            steps += 1;
        }
        assert_eq!(steps + 1, usize::from(fall.steps(10.0, dt)), "{steps}");
        assert_eq!(s, LevelState::on(0));
    }

    #[test]
    fn a_body_coming_down_rides_the_ramp_and_one_off_its_side_falls() {
        let levels = bridge();
        let fall = FallModel::new(10.0, 0.35);
        let dt = 1.0 / 120.0;
        let mut s = LevelState::on(1);
        assert_eq!(step_body_level(&mut s, &levels, &fall, dt, [29.0, 15.0], true), LevelStep::OnRamp { run: 0 });
        assert_eq!(s.level, 0);
        assert!((s.z - 9.5).abs() < 1e-5);
        // Off the ramp's north side at row 0, column 2: three quarters up, no floor above: it falls.
        let got = step_body_level(&mut s, &levels, &fall, dt, [27.5, 9.0], true);
        assert!(matches!(got, LevelStep::Fell { to: 0, .. }), "{got:?}");
        // Down and out at the foot.
        let mut s = LevelState::on(0);
        step_body_level(&mut s, &levels, &fall, dt, [11.0, 15.0], true);
        assert_eq!(step_body_level(&mut s, &levels, &fall, dt, [9.0, 15.0], true), LevelStep::LeftRamp);
        assert_eq!(s, LevelState::on(0));
    }

    #[test]
    fn a_pushed_body_keeps_its_level_on_a_ramp() {
        let levels = bridge();
        let fall = FallModel::new(10.0, 0.35);
        let mut s = LevelState::on(0);
        assert_eq!(step_body_level(&mut s, &levels, &fall, 1.0 / 120.0, [25.0, 15.0], false), LevelStep::Stands);
        assert_eq!(s, LevelState::on(0));
        assert_eq!(s.groups(&levels, [25.0, 15.0], false), level_interaction(0));
    }
}
