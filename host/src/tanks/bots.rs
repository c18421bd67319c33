//! Simple bots: drive toward the nearest enemy, aim the gun at it, fire; back out when stuck.
//!
//! A bot is a participant whose key bits come from here instead of input events.
//! Its choices use only the match state and the match rng, so they replay
//! identically on every peer and after a dump.

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use vimp_netcode::input::KeyBits;

use crate::engine::physics::Physics;
use crate::engine::players::Participants;
use crate::engine::schedule::{EngineSettings, SimRng};
use crate::tanks::TanksRules;
use crate::tanks::config::keys;
use crate::tanks::movement::{Motion, wrap};
use crate::tanks::rounds::Round;
use crate::tanks::tank::{Tank, Weapon, sorted};

/// A bot's memory between steps.
#[derive(Component, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bot {
    /// Seconds the bot has pushed forward without getting anywhere.
    pub stuck: f32,
    /// Seconds left of backing out, and the way it turns meanwhile (−1 or 1).
    pub unstick: f32,
    /// Turn direction while backing out.
    pub unstick_turn: f32,
    /// Seconds left of the current wander turn, and its direction.
    pub wander: f32,
    /// Wander turn direction.
    pub wander_turn: f32,
}

impl Bot {
    /// Whether the bot is following a route.
    pub fn has_route(&self) -> bool {
        false
    }
}

fn press(bits: &mut KeyBits, bit: u8) {
    bits.held |= 1 << bit;
}

/// Decides every bot's key bits for this step.
pub(crate) fn drive_bots(
    settings: Res<EngineSettings>,
    physics: Res<Physics>,
    mut rng: ResMut<SimRng>,
    mut participants: ResMut<Participants>,
    rules: Res<TanksRules>,
    round: Res<Round>,
    mut bots: Query<(&Tank, &mut Bot)>,
    tanks: Query<&Tank>,
) {
    if !round.is_playing() {
        return;
    }
    let dt = settings.dt();
    let enemies: Vec<(u8, Motion)> =
        sorted(tanks.iter()).into_iter().filter(|t| t.alive).map(|t| (t.team, t.motion(&physics))).collect();
    let mut list: Vec<_> = bots.iter_mut().collect();
    list.sort_by_key(|(t, _)| t.player);
    for (tank, mut bot) in list {
        let Some(p) = participants.0.get_mut(&tank.player) else { continue };
        let mut bits = KeyBits::default();
        if !tank.alive {
            p.bits = bits;
            continue;
        }
        let me = tank.motion(&physics);
        let target = enemies
            .iter()
            .filter(|(team, _)| *team != tank.team)
            .map(|(_, m)| (m, libm::hypotf(m.x - me.x, m.y - me.y)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        let speed = libm::hypotf(me.vx, me.vy);

        if bot.unstick > 0.0 {
            bot.unstick -= dt;
            press(&mut bits, keys::BACK);
            press(&mut bits, if bot.unstick_turn > 0.0 { keys::RIGHT } else { keys::LEFT });
        } else if let Some((t, dist)) = target {
            let bearing = libm::atan2f(t.y - me.y, t.x - me.x);
            let turn = wrap(bearing - me.angle);
            if turn.abs() > 0.2 {
                press(&mut bits, if turn > 0.0 { keys::RIGHT } else { keys::LEFT });
            }
            if dist > 220.0 && turn.abs() < 1.2 {
                press(&mut bits, keys::FORWARD);
            } else if dist < 90.0 {
                press(&mut bits, keys::BACK);
            }
            let aim = wrap(bearing - me.gun_heading());
            if aim.abs() > 0.03 {
                press(&mut bits, if aim > 0.0 { keys::GUN_RIGHT } else { keys::GUN_LEFT });
            }
            let want = if dist > 160.0 && dist < 420.0 && tank.ammo[1] > 0 && rng.chance(0.004) {
                Weapon::Bomb
            } else if tank.weapon == Weapon::Bomb && (tank.ammo[1] == 0 || dist < 140.0) {
                Weapon::Gun
            } else {
                tank.weapon
            };
            if want != tank.weapon {
                bits.fired |= 1 << keys::NEXT_WEAPON;
            }
            let w = &rules.0.weapons;
            let range = if tank.weapon == Weapon::Gun { w.w1.range } else { w.w2.speed * w.w2.fuse };
            if aim.abs() < 0.12 && dist < range && tank.reload[tank.weapon.index()] <= 0.0 {
                bits.fired |= 1 << keys::FIRE;
            }
        } else {
            if bot.wander <= 0.0 {
                bot.wander = rng.range_f32(0.5, 2.0);
                bot.wander_turn = rng.range_f32(-1.0, 1.0);
            }
            bot.wander -= dt;
            press(&mut bits, keys::FORWARD);
            if bot.wander_turn.abs() > 0.4 {
                press(&mut bits, if bot.wander_turn > 0.0 { keys::RIGHT } else { keys::LEFT });
            }
        }

        if bits.is_held(keys::FORWARD) && speed < 8.0 && tank.throttle > 0.9 {
            bot.stuck += dt;
            if bot.stuck > 0.8 {
                bot.stuck = 0.0;
                bot.unstick = rng.range_f32(0.5, 1.0);
                bot.unstick_turn = if rng.chance(0.5) { 1.0 } else { -1.0 };
            }
        } else {
            bot.stuck = 0.0;
        }
        p.bits = bits;
    }
}
