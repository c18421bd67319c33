//! A bot's state, part of the match state: its skill and what it is doing ([`Bot`]), and the
//! blasts bots keep out of ([`RecentBlasts`]). The systems that feed them are in
//! [`super`], the decisions in [`super::brain`].

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

use crate::engine::players::PlayerId;

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
