//! Tests of a bot's decisions: leading a bomb, turning onto a heading, choosing a weapon.

use super::*;

#[test]
fn a_bomb_is_led_to_meet_a_crossing_target() {
    // A target 300 ahead crossing at 100/s; the bomb flies at 400.
    let (pos, at, vel, speed) = ([0.0, 0.0], [300.0, 0.0], [0.0, 100.0], 400.0);
    let aim = lead(pos, [0.0, 0.0], at, vel, speed, 2.0);
    // Both get to the meeting point at the same time.
    let t = dist(pos, aim) / speed;
    let target_then = [at[0] + vel[0] * t, at[1] + vel[1] * t];
    assert!(dist(aim, target_then) < 0.5, "{aim:?} vs {target_then:?}");
    // A still target is aimed at directly; the fuse caps the lead.
    assert_eq!(lead(pos, [0.0, 0.0], at, [0.0, 0.0], speed, 2.0), at);
    let capped = lead(pos, [0.0, 0.0], at, vel, speed, 0.1);
    assert!((capped[1] - 10.0).abs() < 1e-3, "{capped:?}");
    // The tank's own speed is carried by the bomb: moving with the target, aim straight.
    assert_eq!(lead(pos, [0.0, 100.0], at, vel, speed, 2.0), at);
    // An unreachable target (faster than the bomb, running away) gets a straight aim, not NaN.
    let away = lead(pos, [0.0, 0.0], at, [900.0, 0.0], speed, 2.0);
    assert!(away.iter().all(|v| v.is_finite()));
}

#[test]
fn turning_lets_go_early_enough_to_stop_on_the_heading() {
    let model = TankModel::default();
    let dt = 1.0 / 120.0;
    let mut m = Motion::default();
    let target = 1.2f32;
    for _ in 0..240 {
        let mut bits = KeyBits::default();
        turn_toward(&m, wrap(target - m.angle), &model, &mut bits);
        let d = crate::tanks::movement::drive(&m, bits, &model, dt);
        m.angvel = d.angvel;
        m.angle += m.angvel * dt;
    }
    assert!((m.angle - target).abs() < 0.05, "settled at {} for {target}", m.angle);
    assert!(m.angvel.abs() < 0.2);
}

#[test]
fn weapons_by_range() {
    let mut tank = Tank { health: 100.0, ammo: [10, 2], ..Tank::new(PlayerId(0), 1, RigidBodyHandle::invalid()) };
    assert_eq!(choose_weapon(&tank, 100.0), Weapon::Gun, "too near for a bomb");
    assert_eq!(choose_weapon(&tank, 300.0), Weapon::Bomb);
    assert_eq!(choose_weapon(&tank, 600.0), Weapon::Gun, "too far for a bomb");
    tank.reload[1] = 0.5;
    assert_eq!(choose_weapon(&tank, 300.0), Weapon::Gun, "tracers while the launcher reloads");
    tank.ammo = [0, 2];
    tank.reload[1] = 0.0;
    assert_eq!(choose_weapon(&tank, 600.0), Weapon::Bomb, "bombs when the gun is empty");
    tank.ammo = [0, 0];
    tank.weapon = Weapon::Bomb;
    assert_eq!(choose_weapon(&tank, 300.0), Weapon::Bomb, "nothing left: no switching");
}
