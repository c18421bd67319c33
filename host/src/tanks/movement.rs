//! How a tank drives: the one movement rule the host and the client's predictor both run.
//!
//! Given a tank's motion state and this step's key bits, [`drive`] returns the
//! velocities to give its rapier body and the new gun angle and throttle. The
//! host runs it before each physics step; the client's predictor runs the very
//! same function before its own step, so the two cannot drift apart. All
//! transcendental math goes through `libm`.
//!
//! The gun turns one of two ways, at the model's `gun_rate` either way: with the gun keys
//! (`gunLeft`, `gunRight`), or toward the pointer's aim when the step has one
//! ([`KeyBits::aim`], see [`gun_toward`]). A gun key held wins over the aim.

use serde::{Deserialize, Serialize};
use vimp_netcode::input::{Aim, KeyBits};

use crate::tanks::config::{TankModel, keys};

/// The motion state of a tank: exactly the 8 floats of the player block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Motion {
    /// Position x.
    pub x: f32,
    /// Position y.
    pub y: f32,
    /// Hull heading, rad.
    pub angle: f32,
    /// Velocity x.
    pub vx: f32,
    /// Velocity y.
    pub vy: f32,
    /// Turn rate, rad/s.
    pub angvel: f32,
    /// Gun angle relative to the hull, rad, in (−π, π].
    pub gun: f32,
    /// Engine throttle in [−1, 1].
    pub throttle: f32,
}

impl Motion {
    /// The player block's 8 floats: `[x, y, angle, vx, vy, angvel, gunRotation, engineThrottle]`.
    pub fn to_state(self) -> [f32; 8] {
        [self.x, self.y, self.angle, self.vx, self.vy, self.angvel, self.gun, self.throttle]
    }

    /// The inverse of [`Motion::to_state`].
    pub fn from_state(s: [f32; 8]) -> Self {
        Motion { x: s[0], y: s[1], angle: s[2], vx: s[3], vy: s[4], angvel: s[5], gun: s[6], throttle: s[7] }
    }

    /// The gun's heading in the world, rad.
    pub fn gun_heading(&self) -> f32 {
        wrap(self.angle + self.gun)
    }
}

/// What one step of driving asks of the body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Drive {
    /// Linear velocity to set.
    pub vx: f32,
    /// Linear velocity to set.
    pub vy: f32,
    /// Angular velocity to set.
    pub angvel: f32,
    /// The new gun angle relative to the hull.
    pub gun: f32,
    /// The new throttle.
    pub throttle: f32,
}

/// One step of driving on flat ground (see the module docs).
pub fn drive(m: &Motion, bits: KeyBits, model: &TankModel, dt: f32) -> Drive {
    drive_on(m, bits, model, dt, [0.0; 2])
}

/// One step of driving on ground whose gradient is `slope` (a ramp's slope times its uphill
/// direction; zero on flat ground, where this is [`drive`]): the slope along the heading
/// scales the top speed by `1 − climbDrag · grade`, within 0.25 and 1.5
/// ([`TankModel::climb_drag`]).
pub fn drive_on(m: &Motion, bits: KeyBits, model: &TankModel, dt: f32, slope: [f32; 2]) -> Drive {
    let axis = |plus: u8, minus: u8| (bits.is_held(plus) as i8 - bits.is_held(minus) as i8) as f32;
    let throttle_target = axis(keys::FORWARD, keys::BACK);
    let throttle = approach(m.throttle, throttle_target, model.throttle_rate * dt);

    let (sin, cos) = (libm::sinf(m.angle), libm::cosf(m.angle));
    let forward = m.vx * cos + m.vy * sin;
    let lateral = -m.vx * sin + m.vy * cos;
    let mut top = if throttle >= 0.0 { model.max_speed } else { model.reverse_speed };
    if slope != [0.0; 2] {
        // Reversing up a slope climbs along −heading.
        let grade = (slope[0] * cos + slope[1] * sin) * throttle.signum();
        top *= (1.0 - model.climb_drag * grade).clamp(0.25, 1.5);
    }
    let forward = approach(forward, throttle * top, model.acceleration * dt);
    let lateral = lateral * libm::expf(-model.grip * dt);
    let vx = forward * cos - lateral * sin;
    let vy = forward * sin + lateral * cos;

    let turn = axis(keys::RIGHT, keys::LEFT);
    let angvel = approach(m.angvel, turn * model.turn_rate, model.turn_acceleration * dt);

    let gun_keys = bits.is_held(keys::GUN_LEFT) || bits.is_held(keys::GUN_RIGHT);
    let gun = match bits.aim {
        Some(aim) if !gun_keys => gun_toward(m, aim, model.gun_rate * dt),
        _ => wrap(m.gun + axis(keys::GUN_RIGHT, keys::GUN_LEFT) * model.gun_rate * dt),
    };
    Drive { vx, vy, angvel, gun, throttle }
}

/// Closer than this to the tank's centre (world units), an aim leaves the gun where it is:
/// its direction means nothing there.
pub const MIN_AIM_DISTANCE: f32 = 1.0;

/// The gun angle (relative to the hull) after one step of turning toward the world point
/// `aim` from the tank's centre: by at most `step` rad, the shorter way round, never past
/// the point's direction. An aim within [`MIN_AIM_DISTANCE`] of the centre leaves it.
pub fn gun_toward(m: &Motion, aim: Aim, step: f32) -> f32 {
    let (dx, dy) = (aim.x - m.x, aim.y - m.y);
    if dx * dx + dy * dy < MIN_AIM_DISTANCE * MIN_AIM_DISTANCE {
        return m.gun;
    }
    let target = wrap(libm::atan2f(dy, dx) - m.angle);
    let left = wrap(target - m.gun);
    if left.abs() <= step { target } else { wrap(m.gun + step.copysign(left)) }
}

/// Moves `value` toward `target` by at most `step`.
pub fn approach(value: f32, target: f32, step: f32) -> f32 {
    if value < target { (value + step).min(target) } else { (value - step).max(target) }
}

/// Wraps an angle to (−π, π].
pub fn wrap(a: f32) -> f32 {
    vimp_netcode::divergence::wrap_angle(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(held: &[u8]) -> KeyBits {
        KeyBits { held: held.iter().fold(0, |m, b| m | 1 << b), fired: 0, aim: None, view: None }
    }

    const DT: f32 = 1.0 / 120.0;

    #[test]
    fn forward_accelerates_along_the_heading_up_to_top_speed() {
        let model = TankModel::default();
        let mut m = Motion { angle: std::f32::consts::FRAC_PI_2, ..Motion::default() };
        for _ in 0..600 {
            let d = drive(&m, bits(&[keys::FORWARD]), &model, DT);
            m = Motion { vx: d.vx, vy: d.vy, angvel: d.angvel, gun: d.gun, throttle: d.throttle, ..m };
        }
        assert!(m.vx.abs() < 1e-3, "no sideways speed: {}", m.vx);
        assert!((m.vy - model.max_speed).abs() < 1e-3, "top speed along +y: {}", m.vy);
        assert_eq!(m.throttle, 1.0);
    }

    #[test]
    fn sideways_sliding_dies_out_without_keys() {
        let model = TankModel::default();
        let m = Motion { vx: 0.0, vy: 100.0, ..Motion::default() }; // heading +x, sliding along +y
        let d = drive(&m, KeyBits::default(), &model, DT);
        let expected = 100.0 * libm::expf(-model.grip * DT);
        assert!((d.vy - expected).abs() < 1e-4, "{} vs {}", d.vy, expected);
    }

    #[test]
    fn throttle_and_turn_ramp_and_the_gun_turns_relative_to_the_hull() {
        let model = TankModel::default();
        let m = Motion::default();
        let d = drive(&m, bits(&[keys::BACK, keys::LEFT, keys::GUN_RIGHT]), &model, DT);
        assert_eq!(d.throttle, -model.throttle_rate * DT);
        assert_eq!(d.angvel, -model.turn_acceleration * DT);
        assert_eq!(d.gun, model.gun_rate * DT);
    }

    fn aiming(x: f32, y: f32, held: &[u8]) -> KeyBits {
        KeyBits { aim: Aim::new(x, y, 0), ..bits(held) }
    }

    #[test]
    fn the_gun_turns_toward_the_aim_at_the_gun_rate_and_stops_on_it() {
        use std::f32::consts::{FRAC_PI_2, PI};
        let model = TankModel::default();
        let step = model.gun_rate * DT;
        // The hull faces +y (a quarter turn); the point lies along +x: a quarter turn to the gun's left.
        let mut m = Motion { x: 100.0, y: 50.0, angle: FRAC_PI_2, ..Motion::default() };
        let first = drive(&m, aiming(300.0, 50.0, &[]), &model, DT);
        assert_eq!(first.gun, -step, "one step of the gun rate, the short way (−π/2 away)");
        let mut steps = 0u32;
        while m.gun_heading() != 0.0 {
            m.gun = drive(&m, aiming(300.0, 50.0, &[]), &model, DT).gun;
            steps += 1;
            assert!(steps < 1000, "the gun reaches the point");
        }
        assert_eq!(m.gun, -FRAC_PI_2, "exactly on the point, not past it");
        assert!(steps.abs_diff(libm::ceilf(FRAC_PI_2 / step) as u32) <= 1, "{steps} steps");
        assert_eq!(drive(&m, aiming(300.0, 50.0, &[]), &model, DT).gun, -FRAC_PI_2, "and it stays there");
        // The shorter way round across ±π: from just left of behind to just right of behind.
        let m = Motion { gun: PI - 0.01, ..Motion::default() };
        let d = drive(&m, aiming(-100.0, -3.0, &[]), &model, DT);
        assert!(d.gun < -PI + 0.05 || d.gun > PI - 0.01, "through π, not back through 0: {}", d.gun);
        // An aim on the tank itself leaves the gun alone.
        let m = Motion { x: 5.0, y: 5.0, gun: 0.3, ..Motion::default() };
        assert_eq!(drive(&m, aiming(5.5, 5.0, &[]), &model, DT).gun, 0.3);
    }

    #[test]
    fn a_gun_key_held_wins_over_the_aim_and_no_aim_leaves_the_keys() {
        let model = TankModel::default();
        let m = Motion::default();
        let step = model.gun_rate * DT;
        assert_eq!(drive(&m, aiming(0.0, -100.0, &[keys::GUN_RIGHT]), &model, DT).gun, step);
        assert_eq!(drive(&m, aiming(0.0, 100.0, &[keys::GUN_LEFT]), &model, DT).gun, -step);
        assert_eq!(drive(&m, aiming(0.0, 100.0, &[keys::GUN_LEFT, keys::GUN_RIGHT]), &model, DT).gun, 0.0);
        assert_eq!(drive(&m, aiming(0.0, 100.0, &[]), &model, DT).gun, step, "toward +y: turning right");
        assert_eq!(drive(&m, bits(&[]), &model, DT).gun, 0.0);
    }

    #[test]
    fn state_round_trip() {
        let m = Motion { x: 1.0, y: 2.0, angle: 3.0, vx: 4.0, vy: 5.0, angvel: 6.0, gun: 0.5, throttle: -0.25 };
        assert_eq!(m.to_state(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 0.5, -0.25]);
        assert_eq!(Motion::from_state(m.to_state()), m);
    }
}
