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

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

use crate::engine::map::state::MapState;
use crate::engine::nav::{Nav, PenaltyZone, Spatial};
use crate::engine::physics::Physics;
use crate::engine::players::{Participants, PlayerId};
use crate::engine::sim::{EngineSettings, SimRng};
use crate::tanks::TanksRules;
use crate::tanks::rounds::Round;
use crate::tanks::tank::{Tank, layered, sorted};
use crate::tanks::weapons::Bomb;

pub use crate::engine::game::BotSkill;

impl BotSkill {
    /// What the level means for a tank.
    pub fn profile(self) -> SkillProfile {
        match self {
            BotSkill::Easy => SkillProfile { reaction: 0.7, aim_error: 0.09, awareness: 450.0, think: 0.2 },
            BotSkill::Normal => SkillProfile { reaction: 0.35, aim_error: 0.04, awareness: 700.0, think: 0.1 },
            BotSkill::Hard => SkillProfile { reaction: 0.15, aim_error: 0.012, awareness: 1000.0, think: 0.05 },
        }
    }
}

/// The numbers behind a [`BotSkill`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SkillProfile {
    /// Seconds an enemy must be in sight before the first shot at it.
    pub reaction: f32,
    /// The largest aim error, rad (drawn anew at every look).
    pub aim_error: f32,
    /// How far the bot notices enemies, world units.
    pub awareness: f32,
    /// Seconds between two looks around.
    pub think: f32,
}

/// What a bot is doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mode {
    /// Going after an enemy it does not see (its last seen place, or the nearest one).
    #[default]
    Hunt,
    /// Shooting at an enemy in sight, closing in or backing off to a good range.
    Fight,
    /// Out of sight of its enemies until it can fight again.
    Cover,
    /// Getting out of a bomb's or a fresh blast's reach.
    Flee,
    /// No enemy alive: driving to random places.
    Roam,
}

/// A place a bot keeps out of for a while (a crate or a tank that blocked it).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Avoid {
    /// The centre, world units.
    pub center: [f32; 2],
    /// Seconds left.
    pub seconds: f32,
}

/// How a bot gets out of a stall: for `seconds`, turning `turn` (−1 left, 1 right) and
/// driving `drive` (−1 back, 1 forward, 0 not at all).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Unstick {
    /// Seconds left.
    pub seconds: f32,
    /// The turn.
    pub turn: f32,
    /// The throttle.
    pub drive: f32,
}

/// A bot's memory between steps; all of it is part of the match state (dumps carry it).
#[derive(Component, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Bot {
    /// Its level.
    pub skill: BotSkill,
    /// What it is doing.
    pub mode: Mode,
    /// Seconds left in the current mode (cover, flee).
    pub mode_left: f32,
    /// The route still to drive: the points of its legs, the next first. On a layered map it
    /// ends at its first ramp or ledge, across from the tank's level, when it has one: its
    /// last point is then not the goal ([`brain::route_points`], [`brain::transition`]).
    pub route: Vec<[f32; 2]>,
    /// Where the route was planned to (its end may be moved to the nearest place the tank fits).
    pub goal: Option<[f32; 2]>,
    /// Seconds until the route is planned again.
    pub replan_in: f32,
    /// Seconds until the next look around.
    pub think_in: f32,
    /// The enemy it fights or hunts.
    pub target: Option<PlayerId>,
    /// Whether the target was in sight at the last look.
    pub in_sight: bool,
    /// How many enemies were in sight at the last look.
    pub enemies_in_sight: u8,
    /// Seconds the target has been in sight without a break.
    pub seen_for: f32,
    /// Where the target was last seen, and how many seconds ago.
    pub last_seen: Option<([f32; 2], f32)>,
    /// The aim error drawn at the last look, rad.
    pub aim_offset: f32,
    /// The distance to the next route point it got closest to, and the seconds since it did.
    pub progress: (f32, f32),
    /// Seconds at full throttle without speed.
    pub blocked: f32,
    /// Getting out of a stall.
    pub unstick: Unstick,
    /// Crates and tanks that blocked it lately.
    pub avoid: Vec<Avoid>,
}

impl Bot {
    /// A bot of `skill`; it looks around at once.
    pub fn new(skill: BotSkill) -> Bot {
        Bot { skill, ..Bot::default() }
    }

    /// A bot of `skill` joining as `player`: bots that join together look around on different
    /// ticks (one of twelve, by player), so their thinking spreads over the steps.
    pub fn joining(skill: BotSkill, player: PlayerId) -> Bot {
        Bot { think_in: f32::from(player.0 % 12) / 120.0, ..Bot::new(skill) }
    }

    /// Whether the bot is following a route.
    pub fn has_route(&self) -> bool {
        !self.route.is_empty()
    }

    /// Forgets everything but its skill (death, respawn, a new map); it looks around on its
    /// own tick again ([`Bot::joining`]).
    pub fn reset(&mut self, player: PlayerId) {
        *self = Bot::joining(self.skill, player);
    }
}

/// Blasts of the last moments, which bots keep out of: centre, radius and age in seconds.
#[derive(Resource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RecentBlasts(pub Vec<([f32; 2], f32, f32)>);

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
