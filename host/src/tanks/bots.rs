//! Bots: tanks that route around walls, hunt, fight with lead and cover, and keep out of blasts.
//!
//! A bot is a participant whose key bits come from here instead of input events. Each tick,
//! for every bot in player order ([`drive_bots`]):
//!
//! ```text
//!  think (every SkillProfile::think s)      steer (every tick)            aim (every tick)
//!  ───────────────────────────────────      ──────────────────            ────────────────
//!  who is in sight (awareness radius,       follow the route's legs:      lead the target (bombs),
//!   walls then a physics ray)               turn, creep or drive, slow    turn the gun, switch
//!  pick a mode: flee a live bomb or a        before sharp corners; back    weapons by range, fire
//!   fresh blast, take cover, fight, hunt,    out and re-plan when no       once the reaction time
//!   roam                                     progress for a while          has passed and the aim
//!  re-plan with find_route when the goal                                   is on
//!   moved, the timer ran out or a crate
//!   blocked the way
//! ```
//!
//! The decisions live in [`brain`], as plain functions over a [`brain::Scene`]; this module
//! holds the types that are part of the match state and the systems that feed them. Every
//! choice uses only the match state and the match rng, in player order: the same seed gives
//! the same match, and a bot restored from a dump carries on exactly where it was.

pub mod brain;
pub mod state;

use bevy::prelude::*;

use crate::engine::map::state::MapState;
use crate::engine::nav::{Nav, PenaltyZone, Spatial};
use crate::engine::physics::Physics;
use crate::engine::players::Participants;
use crate::engine::sim::{EngineSettings, SimRng};
use crate::tanks::TanksRules;
use crate::tanks::rounds::Round;
use crate::tanks::tank::{Tank, layered, sorted};
use crate::tanks::weapons::Bomb;

pub use state::{Avoid, Bot, BotSkill, Mode, RecentBlasts, SkillProfile, Unstick};

/// A bomb slower than this (units/s) is one bots flee from (a fast one is past before they could).
pub const SETTLED_BOMB_SPEED: f32 = 200.0;

/// How long a blast keeps bots away, seconds.
pub const BLAST_MEMORY: f32 = 1.2;

/// Ages the remembered blasts and forgets old ones (before the bots decide).
pub(crate) fn age_blasts(settings: Res<EngineSettings>, mut blasts: ResMut<RecentBlasts>) {
    let dt = settings.dt();
    for b in &mut blasts.0 {
        b.2 += dt;
    }
    blasts.0.retain(|b| b.2 < BLAST_MEMORY);
}

/// Puts every living tank in the spatial grid (id = player), for the bots' target queries.
pub(crate) fn index_tanks(physics: Res<Physics>, mut spatial: ResMut<Spatial>, tanks: Query<&Tank>) {
    spatial.0.clear();
    for t in sorted(tanks.iter()) {
        if t.alive {
            spatial.0.insert(u32::from(t.player.0), t.position(&physics));
        }
    }
}

/// Decides every bot's key bits for this step.
pub(crate) fn drive_bots(
    settings: Res<EngineSettings>,
    physics: Res<Physics>,
    mut rng: ResMut<SimRng>,
    mut participants: ResMut<Participants>,
    rules: Res<TanksRules>,
    round: Res<Round>,
    map: Res<MapState>,
    nav: Res<Nav>,
    spatial: Res<Spatial>,
    blasts: Res<RecentBlasts>,
    bombs: Query<&Bomb>,
    mut bots: Query<(&Tank, &mut Bot)>,
    tanks: Query<&Tank>,
) {
    if !round.is_playing() {
        return;
    }
    let Some(nav) = nav.0.as_ref() else { return };
    let dt = settings.dt();
    let contacts: Vec<brain::Contact> = sorted(tanks.iter())
        .into_iter()
        .filter(|t| t.alive)
        .map(|t| {
            let m = t.motion(&physics);
            brain::Contact {
                player: t.player,
                team: t.team,
                pos: [m.x, m.y],
                vel: [m.vx, m.vy],
                body: t.body,
                level: t.level.state.level,
            }
        })
        .collect();
    let w2 = &rules.0.weapons.w2;
    let mut bombs: Vec<&Bomb> = bombs.iter().collect();
    bombs.sort_by_key(|b| b.id);
    // Bombs that have slowed down or are about to burst: where they will burst is known.
    let bomb_zones: Vec<PenaltyZone> = bombs
        .iter()
        .filter_map(|b| {
            let body = physics.world().bodies.get(b.body)?;
            let (p, v) = (body.translation(), body.linvel());
            if v.length() > SETTLED_BOMB_SPEED && b.fuse > 0.4 {
                return None;
            }
            let t = b.fuse.clamp(0.0, 0.5);
            Some(PenaltyZone {
                level: b.level.level,
                center: [p.x + v.x * t, p.y + v.y * t],
                radius: w2.radius + 20.0,
                cost_per_unit: 8.0,
            })
        })
        .collect();
    // A blast is kept out of on every level (the bots do not remember which it burst on).
    let blasts: Vec<PenaltyZone> = blasts
        .0
        .iter()
        .flat_map(|&(center, radius, _)| {
            nav.levels().iter().map(move |&level| PenaltyZone {
                level,
                center,
                radius: radius + 10.0,
                cost_per_unit: 4.0,
            })
        })
        .collect();
    let scene = brain::Scene {
        nav,
        physics: &physics,
        spatial: &spatial.0,
        tanks: &contacts,
        bombs: &bomb_zones,
        blasts: &blasts,
        rules: &rules.0,
        dt,
        levels: layered(&map),
    };
    let mut list: Vec<_> = bots.iter_mut().collect();
    list.sort_by_key(|(t, _)| t.player);
    for (tank, mut bot) in list {
        let Some(p) = participants.0.get_mut(&tank.player) else { continue };
        p.bits = brain::tick(&mut bot, tank, &scene, &mut rng);
    }
}
