//! Lag compensation for the hitscan gun: the hulls as the shooter saw them.
//!
//! A client draws every other tank as it was 100 ms ago (its interpolation time), and its
//! press reaches the host half a round trip later: on a 100 ms round trip a tank at full
//! speed has moved on by more than its hull is long when the host casts the ray. So a client
//! says, with each press of `fire`, which moment it drew ([`KeyBits::view`]); the server has
//! already bounded it by what the shooter's link explains and by `maxRewindMs`
//! ([`ServerCore::view_bounds`](crate::engine::server::ServerCore::view_bounds)).
//!
//! - [`HullHistory`] keeps every tank's hull at each snapshot tick of the last
//!   `maxRewindMs`: the poses the clients got and blend between. It is part of the match's
//!   state (dumps and checkpoints carry it), so that a successor and a restored host judge
//!   every shot as the original did.
//! - [`HullHistory::seen_at`] blends them for a moment the way a client's interpolation
//!   does: position along the line, heading along the shorter arc (here normalised between
//!   the two rotations, which needs no trigonometry and stays bit-identical everywhere), a
//!   tank gone in the later frame drawn from the earlier, one not yet in the earlier not drawn.
//! - [`trace`](crate::tanks::weapons::trace) then casts the shot against those hulls and
//!   against walls, crates and bombs as they are now; damage applies now, and only to a tank
//!   still in the life it was seen in (one that died and came back since is not hit).
//!
//! Bombs are projectiles: they fly in the present and are never rewound.

use std::collections::VecDeque;

use bevy::prelude::*;
use rapier2d::prelude::*;
use serde::{Deserialize, Serialize};
use vimp_netcode::input::ViewTime;
use vimp_netcode::interp::lerp;

use crate::engine::physics::Physics;
use crate::engine::players::{MaxRewind, PlayerId};
use crate::engine::sim::{EngineSettings, Tick};
use crate::tanks::tank::Tank;

/// One tank's hull at one tick.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HullPose {
    /// Its player.
    pub player: PlayerId,
    /// Its life: the tank's deaths so far (a hit on an earlier life is no hit).
    pub life: u32,
    /// Its centre.
    pub x: f32,
    /// Its centre.
    pub y: f32,
    /// Its heading's cosine.
    pub cos: f32,
    /// Its heading's sine.
    pub sin: f32,
    /// Its collider's collision groups (on a layered map, the levels a ray meets it on).
    pub groups: InteractionGroups,
}

impl HullPose {
    /// The hull's pose.
    pub fn pose(&self) -> Pose {
        Pose::from_parts(Vector::new(self.x, self.y), Rotation::from_cos_sin_unchecked(self.cos, self.sin))
    }

    /// This hull `t` of the way to `to`, as a client blends it.
    fn toward(&self, to: &HullPose, t: f32) -> HullPose {
        let (mut cos, mut sin) = (lerp(self.cos, to.cos, t), lerp(self.sin, to.sin, t));
        let norm = (cos * cos + sin * sin).sqrt();
        if norm > 1e-6 {
            (cos, sin) = (cos / norm, sin / norm);
        } else {
            (cos, sin) = (self.cos, self.sin);
        }
        HullPose { x: lerp(self.x, to.x, t), y: lerp(self.y, to.y, t), cos, sin, ..*self }
    }
}

/// A tank's hull where a shooter saw it, for [`trace`](crate::tanks::weapons::trace): the
/// shape of the tank model at `pose`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeenHull {
    /// Its player.
    pub player: PlayerId,
    /// The tank's body now (a hit names it).
    pub body: RigidBodyHandle,
    /// The tank's body's `user_data` (its tag).
    pub tag: u128,
    /// Where it was seen.
    pub pose: Pose,
    /// The levels a ray meets it on.
    pub groups: InteractionGroups,
}

/// The hulls of every tank at each snapshot tick of the last `maxRewindMs` (see the module
/// docs), oldest first, each tick's sorted by player.
#[derive(Resource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HullHistory(pub VecDeque<(u32, Vec<HullPose>)>);

impl HullHistory {
    /// The hulls blended at `view` from the recorded ticks and `present` (the hulls now, at
    /// tick `now`), as a client drawing that moment saw them; a view before the oldest tick
    /// kept is the oldest, one at or after `now` the present.
    pub fn seen_at(&self, view: ViewTime, now: u32, present: &[HullPose]) -> Vec<HullPose> {
        let v = view.in_256ths();
        let frames: Vec<(u32, &[HullPose])> = self
            .0
            .iter()
            .filter(|(tick, _)| *tick < now)
            .map(|(tick, hulls)| (*tick, hulls.as_slice()))
            .chain(std::iter::once((now, present)))
            .collect();
        let after = frames.iter().position(|(tick, _)| u64::from(*tick) << 8 > v);
        let (older, newer) = match after {
            None | Some(0) => {
                let (_, hulls) = if after.is_none() { frames[frames.len() - 1] } else { frames[0] };
                return hulls.to_vec();
            }
            Some(i) => (frames[i - 1], frames[i]),
        };
        let span = (u64::from(newer.0 - older.0) << 8) as f32;
        let t = (v - (u64::from(older.0) << 8)) as f32 / span;
        older
            .1
            .iter()
            .map(|a| match newer.1.iter().find(|b| b.player == a.player && b.life == a.life) {
                Some(b) => a.toward(b, t),
                None => *a,
            })
            .collect()
    }
}

/// Every live tank's hull now, sorted by player.
pub fn hulls_now<T: std::ops::Deref<Target = Tank>>(tanks: &[T], physics: &Physics) -> Vec<HullPose> {
    let world = physics.world();
    let mut hulls: Vec<HullPose> = tanks
        .iter()
        .filter(|t| t.alive)
        .filter_map(|t| {
            let body = world.bodies.get(t.body)?;
            let groups = body
                .colliders()
                .first()
                .and_then(|c| world.colliders.get(*c))
                .map_or(InteractionGroups::default(), |c| c.collision_groups());
            let (p, r) = (body.translation(), body.rotation());
            Some(HullPose { player: t.player, life: t.deaths, x: p.x, y: p.y, cos: r.cos(), sin: r.sin(), groups })
        })
        .collect();
    hulls.sort_by_key(|h| h.player);
    hulls
}

/// The hulls `shooter` may hit as it saw them at `view`: every other tank alive now and in
/// the life it was seen in, where it was seen.
pub fn seen_hulls<T: std::ops::Deref<Target = Tank>>(
    history: &HullHistory,
    view: ViewTime,
    now: u32,
    shooter: PlayerId,
    tanks: &[T],
    physics: &Physics,
) -> Vec<SeenHull> {
    let present = hulls_now(tanks, physics);
    history
        .seen_at(view, now, &present)
        .into_iter()
        .filter(|h| h.player != shooter)
        .filter_map(|h| {
            let tank = tanks.iter().find(|t| t.player == h.player && t.alive && t.deaths == h.life)?;
            let tag = physics.world().bodies.get(tank.body)?.user_data;
            Some(SeenHull { player: h.player, body: tank.body, tag, pose: h.pose(), groups: h.groups })
        })
        .collect()
}

/// Records every live tank's hull at the end of each snapshot tick, and forgets the ticks
/// older than [`MaxRewind`] and a snapshot interval (the older end of the oldest blend).
pub(crate) fn record_hulls(
    tick: Res<Tick>,
    settings: Res<EngineSettings>,
    max_rewind: Res<MaxRewind>,
    physics: Res<Physics>,
    mut history: ResMut<HullHistory>,
    tanks: Query<&Tank>,
) {
    let every = settings.config.network_send_rate.max(1);
    if max_rewind.0.is_zero() {
        history.0.clear();
        return;
    }
    if !tick.0.is_multiple_of(every) {
        return;
    }
    let tanks = crate::tanks::tank::sorted(tanks.iter());
    history.0.push_back((tick.0, hulls_now(&tanks, &physics)));
    let keep = (max_rewind.0.as_secs_f64() / f64::from(settings.dt())).ceil() as u32 + every;
    while history.0.front().is_some_and(|(t, _)| tick.0.saturating_sub(*t) > keep) {
        history.0.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hull(player: u8, life: u32, x: f32) -> HullPose {
        HullPose { player: PlayerId(player), life, x, y: 0.0, cos: 1.0, sin: 0.0, groups: InteractionGroups::default() }
    }

    fn at(tick: u32, frac: u8) -> ViewTime {
        ViewTime { tick, frac }
    }

    #[test]
    fn a_moment_between_two_ticks_blends_them_as_a_client_does() {
        let history =
            HullHistory(VecDeque::from([(4, vec![hull(1, 0, 0.0), hull(2, 0, 50.0)]), (8, vec![hull(1, 0, 40.0)])]));
        let present = [hull(1, 0, 60.0), hull(3, 0, 9.0)];
        // A quarter of the way from tick 4 to tick 8.
        let seen = history.seen_at(at(5, 0), 10, &present);
        assert_eq!(
            seen.iter().map(|h| (h.player.0, h.x)).collect::<Vec<_>>(),
            [(1, 10.0), (2, 50.0)],
            "2 gone at 8: drawn from 4"
        );
        // Between the last tick kept and the present: toward the present; 3 not drawn before it.
        let seen = history.seen_at(at(9, 0), 10, &present);
        assert_eq!(seen.iter().map(|h| (h.player.0, h.x)).collect::<Vec<_>>(), [(1, 50.0)]);
        // Before the oldest: the oldest; now or later: the present.
        assert_eq!(history.seen_at(at(1, 0), 10, &present).len(), 2);
        assert_eq!(history.seen_at(at(2, 128), 10, &present)[0].x, 0.0);
        assert_eq!(history.seen_at(at(10, 0), 10, &present), present.to_vec());
        assert_eq!(history.seen_at(at(u32::MAX, 255), 10, &present), present.to_vec());
    }

    #[test]
    fn a_new_life_is_not_blended_with_the_old_one() {
        let history = HullHistory(VecDeque::from([(4, vec![hull(1, 0, 0.0)]), (8, vec![hull(1, 1, 400.0)])]));
        let seen = history.seen_at(at(6, 0), 12, &[]);
        assert_eq!((seen[0].x, seen[0].life), (0.0, 0), "the old life where it was");
    }

    #[test]
    fn headings_blend_the_shorter_way_and_stay_unit() {
        let a = HullPose { cos: 0.0, sin: 1.0, ..hull(1, 0, 0.0) };
        let b = HullPose { cos: 1.0, sin: 0.0, ..hull(1, 0, 0.0) };
        let mid = a.toward(&b, 0.5);
        assert!((mid.cos - mid.sin).abs() < 1e-6 && (mid.cos * mid.cos + mid.sin * mid.sin - 1.0).abs() < 1e-6);
        // Opposite headings: no direction to blend along, the older one holds.
        let c = HullPose { cos: -1.0, sin: 0.0, ..hull(1, 0, 0.0) };
        assert_eq!((b.toward(&c, 0.5).cos, b.toward(&c, 0.5).sin), (1.0, 0.0));
    }
}
