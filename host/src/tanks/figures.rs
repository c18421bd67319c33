//! Figures of a match of bots, read from the outside after every tick: stalls, bot-time, first contact.
//!
//! `vimp sim` feeds [`BotFigures::observe`] the host's world after each tick. Nothing here
//! feeds the sim: it only reads the tanks, their bots and the physics world.
//!
//! - **Stalls.** A living bot *wants to move* while it has a route or holds a drive key
//!   (forward or back). It *makes progress* when it gets [`PROGRESS`] world units away
//!   from where it last made progress. A bot that wants to move and makes no progress for
//!   over [`STALL_SECONDS`] is stuck: [`BotFigures::stuck_seconds`] sums the whole of every
//!   such stall (its first second included).
//! - **First contact.** The first tick at which two living tanks of different teams see
//!   each other: a ray from one hull's centre to the other's hits the other hull before
//!   anything else (walls and crates block it; on a layered map it flies level by level as
//!   a shot does).
//! - **Levels** (layered maps). Bot-time per level a bot stands on
//!   ([`BotFigures::seconds_by_level`]); ramp climbs, every time a tank comes off a ramp's top
//!   onto the level above; falls, every time a tank begins to fall; and the fall damage
//!   dealt on their landings (`fallDamage` per level fallen).

use std::collections::BTreeMap;

use bevy::prelude::*;
use rapier2d::prelude::{QueryFilter, Vector};
use serde_json::{Map, Value, json};

use crate::engine::game::MatchFigures;
use crate::engine::map::MapLevels;
use crate::engine::map::bodies::ray_groups;
use crate::engine::map::state::MapState;
use crate::engine::nav::level_segments;
use crate::engine::physics::Physics;
use crate::engine::players::{Participants, PlayerId};
use crate::engine::sim::{EngineSettings, Tick};
use crate::tanks::TanksRules;
use crate::tanks::bots::Bot;
use crate::tanks::config::keys;
use crate::tanks::level::TankLevel;
use crate::tanks::rounds::Round;
use crate::tanks::tank::{Tank, layered};

/// How far a bot must get from where it last made progress for it to count as progress, world units.
pub const PROGRESS: f32 = 8.0;

/// How long a bot may want to move without progress before it counts as stuck, seconds.
pub const STALL_SECONDS: f32 = 1.0;

#[derive(Clone, Copy, Debug)]
struct Stall {
    anchor: [f32; 2],
    seconds: f32,
}

/// The figures gathered so far (see the module docs).
#[derive(Debug, Default)]
pub struct BotFigures {
    stalls: BTreeMap<PlayerId, Stall>,
    stuck_seconds: f64,
    bot_seconds: f64,
    first_contact_tick: Option<u32>,
    seconds_by_level: Vec<f64>,
    /// Each living tank's level as the last tick left it (a respawn starts afresh).
    levels: BTreeMap<PlayerId, TankLevel>,
    ramp_climbs: u32,
    falls: u32,
    fall_damage: f64,
}

impl BotFigures {
    /// Reads the world after a tick.
    pub fn observe(&mut self, world: &mut World) {
        let dt = world.resource::<EngineSettings>().dt();
        if !world.resource::<Round>().is_playing() {
            self.stalls.clear();
            return;
        }
        let mut tanks: Vec<(Tank, Option<Bot>)> =
            world.query::<(&Tank, Option<&Bot>)>().iter(world).map(|(t, b)| (t.clone(), b.cloned())).collect();
        tanks.sort_by_key(|(t, _)| t.player);
        let fall_damage = world.resource::<TanksRules>().0.fall_damage;
        let levels = layered(world.resource::<MapState>()).cloned();
        let physics = world.resource::<Physics>();
        let participants = world.resource::<Participants>();
        for (tank, _) in &tanks {
            let now = tank.level;
            if !tank.alive {
                // A respawn is no climb: a tank's levels are followed while it lives.
                self.levels.remove(&tank.player);
                continue;
            }
            let before = self.levels.insert(tank.player, now).unwrap_or(now);
            if levels.is_none() {
                continue;
            }
            if now.state.is_falling() && !before.state.is_falling() {
                self.falls += 1;
            }
            if before.state.is_falling() && !now.state.is_falling() {
                self.fall_damage += f64::from(fall_damage * before.falling);
            }
            if !now.state.is_falling() && !before.state.is_falling() && now.state.level > before.state.level {
                self.ramp_climbs += 1;
            }
        }
        for (tank, bot) in &tanks {
            let Some(bot) = bot else { continue };
            if !tank.alive {
                self.stalls.remove(&tank.player);
                continue;
            }
            self.bot_seconds += f64::from(dt);
            let pos = tank.position(physics);
            let level = usize::from(tank.level.state.level);
            if self.seconds_by_level.len() <= level {
                self.seconds_by_level.resize(level + 1, 0.0);
            }
            self.seconds_by_level[level] += f64::from(dt);
            let held = participants.0.get(&tank.player).map(|p| p.bits).unwrap_or_default();
            let wants = bot.has_route() || held.is_held(keys::FORWARD) || held.is_held(keys::BACK);
            let stall = self.stalls.entry(tank.player).or_insert(Stall { anchor: pos, seconds: 0.0 });
            if !wants || libm::hypotf(pos[0] - stall.anchor[0], pos[1] - stall.anchor[1]) >= PROGRESS {
                *stall = Stall { anchor: pos, seconds: 0.0 };
                continue;
            }
            let before = stall.seconds;
            stall.seconds += dt;
            if stall.seconds > STALL_SECONDS {
                self.stuck_seconds += f64::from(if before > STALL_SECONDS { dt } else { stall.seconds });
            }
        }
        if self.first_contact_tick.is_none() && any_enemies_in_sight(physics, levels.as_ref(), &tanks) {
            self.first_contact_tick = Some(world.resource::<Tick>().0);
        }
    }

    /// Seconds bots spent stuck (see the module docs).
    pub fn stuck_seconds(&self) -> f64 {
        self.stuck_seconds
    }

    /// Seconds of living bots, summed over the bots (the base of [`Self::stuck_seconds`]).
    pub fn bot_seconds(&self) -> f64 {
        self.bot_seconds
    }

    /// The tick at which two enemies first saw each other, if they did.
    pub fn first_contact_tick(&self) -> Option<u32> {
        self.first_contact_tick
    }

    /// Seconds of living bots on each level they stood on (index = level; a bot on a ramp
    /// counts on its foot's level, a falling one on the level it lands on).
    pub fn seconds_by_level(&self) -> &[f64] {
        &self.seconds_by_level
    }

    /// Times a tank came off a ramp's top onto the level above.
    pub fn ramp_climbs(&self) -> u32 {
        self.ramp_climbs
    }

    /// Times a tank began to fall.
    pub fn falls(&self) -> u32 {
        self.falls
    }

    /// Fall damage dealt on landings.
    pub fn fall_damage(&self) -> f64 {
        self.fall_damage
    }
}

impl MatchFigures for BotFigures {
    fn observe(&mut self, world: &mut World) {
        BotFigures::observe(self, world);
    }

    /// Frags (tank deaths) and their rate, bot-time and its stalls, first contact, and the
    /// round reached.
    fn report(&self, world: &mut World, seconds: f64) -> Map<String, Value> {
        let dt = f64::from(world.resource::<EngineSettings>().dt());
        let frags: u32 = world.query::<&Tank>().iter(world).map(|t| t.deaths).sum();
        let round = world.resource::<Round>();
        let per_minute = if seconds > 0.0 { f64::from(frags) * 60.0 / seconds } else { 0.0 };
        let stuck_share = if self.bot_seconds > 0.0 { self.stuck_seconds / self.bot_seconds } else { 0.0 };
        let fields = [
            ("frags", json!(frags)),
            ("frags_per_minute", json!(per_minute)),
            ("bot_seconds", json!(self.bot_seconds)),
            ("bot_stuck_seconds", json!(self.stuck_seconds)),
            ("bot_stuck_share", json!(stuck_share)),
            ("first_contact_s", json!(self.first_contact_tick.map(|t| f64::from(t) * dt))),
            ("bot_seconds_by_level", json!(self.seconds_by_level)),
            ("ramp_climbs", json!(self.ramp_climbs)),
            ("falls", json!(self.falls)),
            ("fall_damage", json!(self.fall_damage)),
            ("round", json!(round.number)),
            ("games_finished", json!(round.games)),
        ];
        fields.into_iter().map(|(key, value)| (key.to_owned(), value)).collect()
    }

    fn lines(&self, report: &Map<String, Value>) -> Vec<String> {
        let number = |key: &str| report.get(key).and_then(Value::as_f64).unwrap_or(0.0);
        let contact = report
            .get("first_contact_s")
            .and_then(Value::as_f64)
            .map_or("never".to_owned(), |s| format!("at {s:.2} s"));
        let mut lines = vec![
            format!(
                "frags {} ({:.1} a minute); round {}",
                number("frags"),
                number("frags_per_minute"),
                number("round")
            ),
            format!(
                "bots: stuck {:.1} s of {:.0} bot-seconds; enemies first in sight {contact}",
                number("bot_stuck_seconds"),
                number("bot_seconds")
            ),
        ];
        let by_level: Vec<String> = report
            .get("bot_seconds_by_level")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).map(|s| format!("{s:.0}")).collect())
            .unwrap_or_default();
        if by_level.len() > 1 {
            lines.push(format!(
                "levels: bot-seconds {} (ground first); {} ramp climbs, {} falls, {:.0} fall damage",
                by_level.join(" / "),
                number("ramp_climbs"),
                number("falls"),
                number("fall_damage")
            ));
        }
        lines
    }
}

/// Whether two living tanks of different teams see each other.
fn any_enemies_in_sight(physics: &Physics, levels: Option<&MapLevels>, tanks: &[(Tank, Option<Bot>)]) -> bool {
    let alive: Vec<&Tank> = tanks.iter().map(|(t, _)| t).filter(|t| t.alive).collect();
    alive
        .iter()
        .enumerate()
        .any(|(i, a)| alive[i + 1..].iter().any(|b| a.team != b.team && sees(physics, levels, a, b)))
}

/// Whether a ray from `a`'s centre hits `b` first; on a layered map (`levels`) it flies level
/// by level from `a`'s, as a shot does ([`level_segments`]).
pub fn sees(physics: &Physics, levels: Option<&MapLevels>, a: &Tank, b: &Tank) -> bool {
    let (pa, pb) = (a.position(physics), b.position(physics));
    let d = Vector::new(pb[0] - pa[0], pb[1] - pa[1]);
    let len = d.length();
    if len < 1e-3 {
        return true;
    }
    let (origin, dir) = (Vector::new(pa[0], pa[1]), d / len);
    let filter = QueryFilter::default().exclude_rigid_body(a.body);
    let hit = match levels {
        None => physics.cast_ray(origin, dir, len, filter),
        Some(levels) => {
            let level = a.level.state.effective_level(levels, pa, true);
            level_segments(levels, pa, [dir.x, dir.y], len, level).iter().find_map(|s| {
                physics.cast_ray(origin + dir * s.start, dir, s.end - s.start, filter.groups(ray_groups(s.level)))
            })
        }
    };
    hit.is_some_and(|h| h.body == Some(b.body))
}
