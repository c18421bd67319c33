//! A bot's decisions: looking around, choosing a mode, planning a route, steering along it, aiming and firing.
//!
//! [`tick`] runs one step of one bot against a [`Scene`] (what every bot may know this
//! step) and returns its key bits. It reads the physics world only through rays and the
//! tanks' motion; everything it remembers is in the [`Bot`].
//!
//! - **Looking** (every [`SkillProfile::think`](super::SkillProfile::think) seconds): the
//!   enemies within the awareness radius ([`SpatialGrid`] query), nearest first; the first
//!   [`SIGHT_CHECKS`] are checked for sight (no wall between on the nav grid, then a physics
//!   ray whose first hit is the enemy, so crates and teammates block it too). The target is
//!   kept while in sight unless another is much nearer. The aim error is drawn anew.
//! - **Modes**: inside a live bomb's reach → flee out of it; an enemy in
//!   sight → fight it (close in along a route when far, back off when too near), unless out
//!   of ammunition, out of tracers while the launcher reloads, or weak and outnumbered →
//!   cover (a nearby place with a wall between it and the enemy) until it can fight again;
//!   no enemy in sight → hunt (where the target was last seen, else the nearest enemy); no
//!   enemy at all → roam.
//! - **Routes**: [`NavigationSystem::find_route`] for a body [`route_width`] wide with a
//!   comfort margin, crates as soft obstacles, bombs, blasts and crates that blocked the bot
//!   as penalty zones; re-planned when the goal moves [`GOAL_MOVED`] or a quarter of the way
//!   to it (whichever is more), when the
//!   mode's timer runs out (drawn ±20 % around its length, so that bots do not all plan on
//!   one tick), and after backing out of a stall.
//! - **Steering**: toward the next route point (or the one after when it is near and in
//!   straight reach), turning on the spot when it lies far to the side, creeping while
//!   half turned, backing up to it when it is close behind and there is room, easing away from a wall or crate
//!   too near to turn by, releasing the throttle before a
//!   sharp corner; the turn keys are let go early enough for the hull to stop on the heading.
//! - **Stalls**: not getting closer to the next route point for [`STALL_SECONDS`] (while
//!   driving, or while a turn on the spot does not turn), or full throttle without speed for
//!   [`BLOCKED_SECONDS`] → back out turning for
//!   [`UNSTICK_SECONDS`], remember a crate or a tank in the way for a while (a penalty zone
//!   in its next routes), and re-plan.
//! - **Aim**: the gun at the target (bombs led: the intercept of the target's velocity
//!   with the bomb's speed, the tank's own velocity added as the launcher does), plus the
//!   drawn error; tracers near and far, bombs in between when one is ready; fire when the
//!   target has been in sight for the reaction time and the gun is on it.

use rapier2d::prelude::{QueryFilter, RigidBodyHandle, Vector};
use vimp_netcode::input::KeyBits;

use crate::engine::nav::{NavigationSystem, PathQuery, PenaltyZone, SpatialGrid};
use crate::engine::physics::Physics;
use crate::engine::players::PlayerId;
use crate::engine::rng::SplitMix64;
use crate::tanks::bots::{Avoid, Bot, Mode, Unstick};
use crate::tanks::config::{TankModel, TanksConfig, keys};
use crate::tanks::movement::{Motion, wrap};
use crate::tanks::tank::{Tank, Weapon};

/// How many of the nearest enemies are checked for sight at each look.
pub const SIGHT_CHECKS: usize = 6;
/// Seconds between two plans while hunting (easy bots take twice as long).
pub const HUNT_REPLAN: f32 = 1.2;
/// Seconds between two plans while closing in on an enemy in sight.
pub const FIGHT_REPLAN: f32 = 0.6;
/// A goal that moved this far (world units) is planned for again.
pub const GOAL_MOVED: f32 = 96.0;
/// Farther than this from an enemy in sight, a bot closes in.
pub const ENGAGE_FAR: f32 = 380.0;
/// Nearer than this, it backs off.
pub const ENGAGE_NEAR: f32 = 140.0;
/// Seconds a last sighting stays worth going to.
pub const LAST_SEEN_MEMORY: f32 = 4.0;
/// Bombs are for enemies between these distances (nearer, the blast would reach the bot).
pub const BOMB_RANGE: (f32, f32) = (190.0, 420.0);
/// Seconds in cover.
pub const COVER_SECONDS: f32 = 2.5;
/// Seconds of fleeing before looking again at what to do.
pub const FLEE_SECONDS: f32 = 1.2;
/// Seconds of driving without getting closer to the next route point that make a stall.
pub const STALL_SECONDS: f32 = 0.4;
/// Slower than this (units/s) at full throttle, a tank is pressed against something.
pub const BLOCKED_SPEED: f32 = 20.0;
/// Seconds pressed against something that make a stall.
pub const BLOCKED_SECONDS: f32 = 0.25;
/// How much nearer the next route point must get to count as progress, world units (a
/// crate a tank pushes creeps along slower than that).
pub const PROGRESS_STEP: f32 = 6.0;
/// Seconds of backing out of a stall.
pub const UNSTICK_SECONDS: f32 = 0.45;
/// Seconds a crate or tank that blocked a bot is kept out of its routes, and how wide.
pub const AVOID: (f32, f32) = (4.0, 44.0);
/// A route point further round than this (rad) and nearer than [`REVERSE_REACH`] is backed up to.
pub const REVERSE_ANGLE: f32 = 2.2;
/// See [`REVERSE_ANGLE`], world units.
pub const REVERSE_REACH: f32 = 120.0;
/// How near the route point after next must be to steer for it, world units.
pub const LOOK_AHEAD: f32 = 56.0;

/// A living tank as every bot may see it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// Its player.
    pub player: PlayerId,
    /// Its team.
    pub team: u8,
    /// Its position.
    pub pos: [f32; 2],
    /// Its velocity.
    pub vel: [f32; 2],
    /// Its body, which rays hit.
    pub body: RigidBodyHandle,
}

/// What every bot may know this step.
pub struct Scene<'a> {
    /// The map's navigation.
    pub nav: &'a NavigationSystem,
    /// The physics world, for rays.
    pub physics: &'a Physics,
    /// The living tanks by position (id = player).
    pub spatial: &'a SpatialGrid,
    /// The living tanks, in player order.
    pub tanks: &'a [Contact],
    /// Live bombs' reach (where they may burst).
    pub bombs: &'a [PenaltyZone],
    /// Fresh blasts' reach.
    pub blasts: &'a [PenaltyZone],
    /// The game's rules.
    pub rules: &'a TanksConfig,
    /// Seconds per step.
    pub dt: f32,
}

impl Scene<'_> {
    fn contact(&self, player: PlayerId) -> Option<&Contact> {
        self.tanks.iter().find(|c| c.player == player)
    }
}

/// The width a bot's routes are planned for: the hull's width and a margin for turning.
pub fn route_width(model: &TankModel) -> f32 {
    model.width + 16.0
}

/// The heuristic weight on maps large enough for the navigation's lattice: routes at most
/// 60 % dearer than the cheapest (on the 256×256 bench maps a few per cent on average), found
/// in a fraction of the time (`cargo bench -p vimp-host --bench nav`).
pub const LARGE_MAP_WEIGHT: f32 = 1.6;

/// How far along a route, world units, a bot's routes are pulled taut: more than a bot drives
/// (at most 6 s between plans at 170 units/s) before it plans again. Past it the legs follow
/// the navigation graph's turns.
pub const SMOOTH_WITHIN: f32 = 1024.0;

/// How near a route point must be to count as reached.
fn reach(model: &TankModel) -> f32 {
    model.length * 0.65
}

fn press(bits: &mut KeyBits, bit: u8) {
    bits.held |= 1 << bit;
}

fn dist(a: [f32; 2], b: [f32; 2]) -> f32 {
    libm::hypotf(a[0] - b[0], a[1] - b[1])
}

fn bearing(from: [f32; 2], to: [f32; 2]) -> f32 {
    libm::atan2f(to[1] - from[1], to[0] - from[0])
}

/// One step of a bot (see the module docs); a dead tank's bot forgets and presses nothing.
pub fn tick(bot: &mut Bot, tank: &Tank, scene: &Scene<'_>, rng: &mut SplitMix64) -> KeyBits {
    let mut bits = KeyBits::default();
    if !tank.alive {
        bot.reset(tank.player);
        return bits;
    }
    let dt = scene.dt;
    let m = tank.motion(scene.physics);
    bot.replan_in -= dt;
    bot.mode_left = (bot.mode_left - dt).max(0.0);
    if bot.in_sight {
        bot.seen_for += dt;
    }
    if let Some((_, age)) = &mut bot.last_seen {
        *age += dt;
    }
    for a in &mut bot.avoid {
        a.seconds -= dt;
    }
    bot.avoid.retain(|a| a.seconds > 0.0);
    bot.think_in -= dt;
    if bot.think_in <= 0.0 {
        think(bot, tank, &m, scene, rng);
        bot.think_in = bot.skill.profile().think;
    }
    steer(bot, tank, &m, scene, &mut bits);
    aim(bot, tank, &m, scene, &mut bits);
    watch_progress(bot, tank, &m, scene, rng, bits);
    bits
}

/// Whether the tank with `body` at `from` sees `c` (see the module docs).
pub fn sees(scene: &Scene<'_>, body: RigidBodyHandle, from: [f32; 2], c: &Contact) -> bool {
    if scene.nav.has_obstacle_between(from, c.pos) {
        return false;
    }
    let d = Vector::new(c.pos[0] - from[0], c.pos[1] - from[1]);
    let len = d.length();
    if len < 1e-3 {
        return true;
    }
    let filter = QueryFilter::default().exclude_rigid_body(body);
    let hit = scene.physics.cast_ray(Vector::new(from[0], from[1]), d / len, len, filter);
    hit.is_some_and(|h| h.body == Some(c.body))
}

/// A look around, then a decision.
fn think(bot: &mut Bot, tank: &Tank, m: &Motion, scene: &Scene<'_>, rng: &mut SplitMix64) {
    let profile = bot.skill.profile();
    let pos = [m.x, m.y];
    let mut near: Vec<(f32, &Contact)> = scene
        .spatial
        .query_radius(pos, profile.awareness)
        .iter()
        .filter_map(|e| scene.tanks.iter().find(|c| u32::from(c.player.0) == e.id))
        .filter(|c| c.team != tank.team)
        .map(|c| (dist(pos, c.pos), c))
        .collect();
    near.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.player.cmp(&b.1.player)));
    let visible: Vec<(f32, &Contact)> =
        near.iter().take(SIGHT_CHECKS).filter(|(_, c)| sees(scene, tank.body, pos, c)).copied().collect();
    bot.enemies_in_sight = visible.len().min(u8::MAX as usize) as u8;
    let kept = bot.target.and_then(|t| visible.iter().find(|(_, c)| c.player == t)).copied();
    let chosen = match (kept, visible.first().copied()) {
        (Some(k), Some(n)) if n.0 < k.0 * 0.6 => Some(n),
        (Some(k), _) => Some(k),
        (None, n) => n,
    };
    match chosen {
        Some((_, c)) => {
            if bot.target != Some(c.player) || !bot.in_sight {
                bot.seen_for = 0.0;
            }
            bot.target = Some(c.player);
            bot.in_sight = true;
            bot.last_seen = Some((c.pos, 0.0));
        }
        None => {
            bot.in_sight = false;
            bot.seen_for = 0.0;
        }
    }
    bot.aim_offset = rng.range_f32(-profile.aim_error, profile.aim_error);
    decide(bot, tank, pos, scene, rng);
}

/// Picks the mode and plans for it (see the module docs).
fn decide(bot: &mut Bot, tank: &Tank, pos: [f32; 2], scene: &Scene<'_>, rng: &mut SplitMix64) {
    let model = &scene.rules.models.tank;
    let width = route_width(model);
    let danger = scene
        .bombs
        .iter()
        .filter(|z| dist(pos, z.center) < z.radius)
        .min_by(|a, b| dist(pos, a.center).total_cmp(&dist(pos, b.center)));
    if let Some(zone) = danger {
        if bot.mode == Mode::Flee && bot.has_route() {
            return;
        }
        if let Some(goal) = flee_point(pos, zone, scene.nav, width) {
            bot.mode = Mode::Flee;
            bot.mode_left = FLEE_SECONDS;
            plan(bot, pos, goal, scene);
            return;
        }
    }
    if bot.mode == Mode::Flee && bot.mode_left > 0.0 && bot.has_route() {
        return;
    }
    let target = bot.target.and_then(|t| scene.contact(t)).copied();
    if let Some(t) = target.filter(|_| bot.in_sight) {
        let out_of_ammo = tank.ammo == [0, 0];
        let weak = tank.health < 0.3 * model.health && bot.enemies_in_sight >= 2;
        // Tracers gone and the launcher reloading: nothing to shoot back with for a while.
        let reloading = tank.ammo[0] == 0 && tank.ammo[1] > 0 && tank.reload[1] > 0.3;
        let hide = out_of_ammo || weak || reloading;
        if hide
            && !(bot.mode == Mode::Cover && bot.has_route())
            && let Some(place) = cover_point(pos, t.pos, scene.nav, width)
        {
            bot.mode = Mode::Cover;
            bot.mode_left = if reloading && !weak { tank.reload[1] + 0.2 } else { COVER_SECONDS };
            plan(bot, pos, place, scene);
            return;
        }
        if bot.mode == Mode::Cover && bot.mode_left > 0.0 && hide {
            return;
        }
        bot.mode = Mode::Fight;
        if dist(pos, t.pos) > ENGAGE_FAR {
            if needs_plan(bot, pos, t.pos) {
                plan(bot, pos, t.pos, scene);
                bot.replan_in = FIGHT_REPLAN * rng.range_f32(0.8, 1.2);
            }
        } else {
            bot.route.clear();
            bot.goal = None;
        }
        return;
    }
    if bot.mode == Mode::Cover && bot.mode_left > 0.0 {
        return;
    }
    if let Some((p, _)) = bot.last_seen
        && dist(pos, p) < reach(model) * 2.0
    {
        bot.last_seen = None;
    }
    let last_seen = bot.last_seen.filter(|(_, age)| *age < LAST_SEEN_MEMORY).map(|(p, _)| p);
    let nearest = scene
        .tanks
        .iter()
        .filter(|c| c.team != tank.team)
        .min_by(|a, b| dist(pos, a.pos).total_cmp(&dist(pos, b.pos)).then(a.player.cmp(&b.player)));
    if last_seen.is_none()
        && let Some(n) = nearest
    {
        bot.target = Some(n.player);
    }
    match last_seen.or(nearest.map(|n| n.pos)) {
        Some(goal) => {
            bot.mode = Mode::Hunt;
            if needs_plan(bot, pos, goal) {
                plan(bot, pos, goal, scene);
                let slow = if bot.skill == super::BotSkill::Easy { 2.0 } else { 1.0 };
                bot.replan_in = HUNT_REPLAN * slow * rng.range_f32(0.8, 1.2);
            }
        }
        None => {
            if bot.mode != Mode::Roam || !bot.has_route() || bot.replan_in <= 0.0 {
                bot.mode = Mode::Roam;
                if let Some(goal) = scene.nav.random_point_where(rng, width) {
                    plan(bot, pos, goal, scene);
                }
                bot.replan_in = 6.0;
            }
        }
    }
}

/// Whether a bot at `pos` going for `goal` plans again: no route, its time is up, or the goal
/// moved [`GOAL_MOVED`] or a quarter of the way to it, whichever is more, since the plan.
fn needs_plan(bot: &Bot, pos: [f32; 2], goal: [f32; 2]) -> bool {
    let moved = GOAL_MOVED.max(0.25 * dist(pos, goal));
    !bot.has_route() || bot.replan_in <= 0.0 || bot.goal.is_none_or(|g| dist(g, goal) > moved)
}

/// The query a bot plans with on `nav`: its routes avoid `zones`.
pub fn route_query<'a>(model: &TankModel, nav: &NavigationSystem, zones: &'a [PenaltyZone]) -> PathQuery<'a> {
    PathQuery {
        min_width: route_width(model),
        comfort_clearance: 20.0,
        narrow_cost: 3.0,
        soft_cost: 6.0,
        penalties: zones,
        heuristic_weight: if nav.uses_lattice() { LARGE_MAP_WEIGHT } else { 1.0 },
        smooth_within: SMOOTH_WITHIN,
    }
}

/// Works out now what the navigation needs for the bots' two route queries (the comfortable
/// width and the bare hull's, [`NavigationSystem::prepare`]): called when a map loads or a
/// match is restored, so that the first bot to plan does not stall a tick.
pub fn prepare(model: &TankModel, nav: &NavigationSystem) {
    let query = route_query(model, nav, &[]);
    nav.prepare(&query);
    nav.prepare(&PathQuery { min_width: model.width, ..query });
}

/// Plans a route from `from` to `goal`: for the comfortable width first, the bare hull's if
/// that finds none. No route leaves the bot without one (it looks again soon).
fn plan(bot: &mut Bot, from: [f32; 2], goal: [f32; 2], scene: &Scene<'_>) {
    let model = &scene.rules.models.tank;
    let mut zones: Vec<PenaltyZone> = scene.bombs.iter().chain(scene.blasts).copied().collect();
    zones.extend(bot.avoid.iter().map(|a| PenaltyZone { center: a.center, radius: AVOID.1, cost_per_unit: 3.0 }));
    let query = route_query(model, scene.nav, &zones);
    let route = scene
        .nav
        .find_route(from, goal, &query)
        .or_else(|| scene.nav.find_route(from, goal, &PathQuery { min_width: model.width, ..query }));
    bot.goal = Some(goal);
    bot.route = route.map(|r| r.points().collect()).unwrap_or_default();
    bot.progress = (f32::INFINITY, 0.0);
}

/// A place out of `zone`'s reach, away from its centre (or to a side), that the tank fits.
fn flee_point(pos: [f32; 2], zone: &PenaltyZone, nav: &NavigationSystem, width: f32) -> Option<[f32; 2]> {
    let (dx, dy) = (pos[0] - zone.center[0], pos[1] - zone.center[1]);
    let len = libm::hypotf(dx, dy);
    let away = if len > 1e-3 { [dx / len, dy / len] } else { [1.0, 0.0] };
    let out = zone.radius + 60.0;
    // Away, then turned ±0.8 and ±1.6 rad.
    for turn in [0.0f32, 0.8, -0.8, 1.6, -1.6] {
        let (s, c) = (libm::sinf(turn), libm::cosf(turn));
        let dir = [away[0] * c - away[1] * s, away[0] * s + away[1] * c];
        let p = [zone.center[0] + dir[0] * out, zone.center[1] + dir[1] * out];
        if let Some(q) = nav.nearest_walkable(p, width, 64.0)
            && dist(q, zone.center) > zone.radius
        {
            return Some(q);
        }
    }
    None
}

/// The nearest of a ring of places around `pos` that the tank fits and that a wall hides from `threat`.
fn cover_point(pos: [f32; 2], threat: [f32; 2], nav: &NavigationSystem, width: f32) -> Option<[f32; 2]> {
    let mut best: Option<(f32, [f32; 2])> = None;
    for k in 0..12 {
        let a = k as f32 * std::f32::consts::TAU / 12.0;
        let dir = [libm::cosf(a), libm::sinf(a)];
        for r in [120.0, 200.0] {
            let p = [pos[0] + dir[0] * r, pos[1] + dir[1] * r];
            let Some(q) = nav.nearest_walkable(p, width, 48.0) else { continue };
            if nav.has_obstacle_between(q, threat) && best.is_none_or(|(d, _)| dist(pos, q) < d) {
                best = Some((dist(pos, q), q));
            }
        }
    }
    best.map(|(_, q)| q)
}

/// Turns the hull toward the heading error `err` (rad), letting go early enough to stop on it.
fn turn_toward(m: &Motion, err: f32, model: &TankModel, bits: &mut KeyBits) {
    let w = m.angvel;
    let stop = w * w / (2.0 * model.turn_acceleration.max(1e-3));
    if err.abs() < 0.04 && w.abs() < 0.3 {
        return;
    }
    if err > 0.0 {
        if !(w > 0.0 && err < stop) {
            press(bits, keys::RIGHT);
        }
    } else if !(w < 0.0 && -err < stop) {
        press(bits, keys::LEFT);
    }
}

/// Follows the route (see the module docs), or backs off from a too-near enemy.
fn steer(bot: &mut Bot, tank: &Tank, m: &Motion, scene: &Scene<'_>, bits: &mut KeyBits) {
    let model = &scene.rules.models.tank;
    let pos = [m.x, m.y];
    if bot.unstick.seconds > 0.0 {
        if bot.unstick.drive < 0.0 {
            press(bits, keys::BACK);
        } else if bot.unstick.drive > 0.0 {
            press(bits, keys::FORWARD);
        }
        press(bits, if bot.unstick.turn > 0.0 { keys::RIGHT } else { keys::LEFT });
        return;
    }
    if bot.mode == Mode::Fight
        && bot.in_sight
        && let Some(t) = bot.target.and_then(|t| scene.contact(t))
        && dist(pos, t.pos) < ENGAGE_NEAR
    {
        // Face it and back away while there is room behind: the gun keeps it in sight.
        turn_toward(m, wrap(bearing(pos, t.pos) - m.angle), model, bits);
        if room(scene, tank.body, pos, wrap(m.angle + std::f32::consts::PI)) > model.length {
            press(bits, keys::BACK);
        }
        return;
    }
    let r = reach(model);
    while let Some(&next) = bot.route.first() {
        let d = dist(pos, next);
        let passed = bot.route.get(1).is_some_and(|&after| {
            let (ax, ay) = (after[0] - next[0], after[1] - next[1]);
            d < 3.0 * r && (pos[0] - next[0]) * ax + (pos[1] - next[1]) * ay > 0.0
        });
        let reached = if bot.route.len() == 1 { d < r * 0.6 } else { d < r || passed };
        if !reached {
            break;
        }
        bot.route.remove(0);
        bot.progress = (f32::INFINITY, 0.0);
    }
    let Some(&next) = bot.route.first() else { return };
    let mut toward = next;
    if let Some(&after) = bot.route.get(1)
        && dist(pos, next) < LOOK_AHEAD
        && scene.nav.has_clear_corridor(pos, after, model.width / 2.0)
    {
        toward = after;
    }
    let err = wrap(bearing(pos, toward) - m.angle);
    let speed = libm::hypotf(m.vx, m.vy);
    if err.abs() > REVERSE_ANGLE
        && dist(pos, toward) < REVERSE_REACH
        && room(scene, tank.body, pos, wrap(m.angle + std::f32::consts::PI)) > model.length
    {
        // Close behind: back up to it rather than turn round.
        let rear = wrap(err - std::f32::consts::PI);
        turn_toward(m, rear, model, bits);
        if rear.abs() < 0.8 {
            press(bits, keys::BACK);
        }
        return;
    }
    turn_toward(m, err, model, bits);
    if err.abs() > 1.0 && scene.nav.soft_clearance(pos) < libm::hypotf(model.length, model.width) / 2.0 {
        // Too near a wall or a crate to turn on the spot: ease away from it while turning.
        let behind = room(scene, tank.body, pos, wrap(m.angle + std::f32::consts::PI));
        let ahead = room(scene, tank.body, pos, m.angle);
        if behind > ahead && behind > 8.0 {
            press(bits, keys::BACK);
        } else if ahead > 8.0 && speed < 40.0 {
            press(bits, keys::FORWARD);
        }
        return;
    }
    let forward = match err.abs() {
        e if e > 1.8 => false,
        e if e > 1.0 => speed < 40.0,
        e if e > 0.45 => speed < 90.0,
        _ => true,
    };
    let corner = bot.route.get(1).map_or(0.0, |&after| wrap(bearing(next, after) - bearing(pos, next)).abs());
    let braking = toward == next && corner > 1.0 && speed > 100.0 && dist(pos, next) < 30.0 + speed * 0.35;
    if forward && !braking {
        press(bits, keys::FORWARD);
    }
}

/// The weapon for an enemy `d` away (see the module docs).
fn choose_weapon(tank: &Tank, d: f32) -> Weapon {
    let bombs_ready = tank.ammo[1] > 0 && tank.reload[1] <= 0.0;
    if bombs_ready && (BOMB_RANGE.0..BOMB_RANGE.1).contains(&d) {
        Weapon::Bomb
    } else if tank.ammo[0] > 0 {
        Weapon::Gun
    } else if tank.ammo[1] > 0 && d > BOMB_RANGE.0 {
        Weapon::Bomb
    } else {
        tank.weapon
    }
}

/// Where to aim a bomb launched at `speed` from `pos` moving at `own` (the bomb takes the
/// tank's velocity) to meet a target at `at` moving at `vel`; at most `fuse` seconds ahead.
pub fn lead(pos: [f32; 2], own: [f32; 2], at: [f32; 2], vel: [f32; 2], speed: f32, fuse: f32) -> [f32; 2] {
    let d = [at[0] - pos[0], at[1] - pos[1]];
    let w = [vel[0] - own[0], vel[1] - own[1]];
    let a = w[0] * w[0] + w[1] * w[1] - speed * speed;
    let b = 2.0 * (d[0] * w[0] + d[1] * w[1]);
    let c = d[0] * d[0] + d[1] * d[1];
    let straight = c.sqrt() / speed.max(1e-3);
    let t = if a.abs() < 1e-6 {
        if b.abs() > 1e-6 { -c / b } else { straight }
    } else {
        let disc = b * b - 4.0 * a * c;
        if disc < 0.0 {
            straight
        } else {
            let root = disc.sqrt();
            let (t1, t2) = ((-b - root) / (2.0 * a), (-b + root) / (2.0 * a));
            match (t1 > 0.0, t2 > 0.0) {
                (true, true) => t1.min(t2),
                (true, false) => t1,
                (false, true) => t2,
                (false, false) => straight,
            }
        }
    };
    let t = if t.is_finite() { t.clamp(0.0, fuse) } else { 0.0 };
    [pos[0] + d[0] + w[0] * t, pos[1] + d[1] + w[1] * t]
}

/// Turns the gun, switches weapons and fires (see the module docs).
fn aim(bot: &mut Bot, tank: &Tank, m: &Motion, scene: &Scene<'_>, bits: &mut KeyBits) {
    let pos = [m.x, m.y];
    let model = &scene.rules.models.tank;
    let deadband = model.gun_rate * scene.dt * 0.5;
    let Some(t) = bot.target.and_then(|t| scene.contact(t)).copied().filter(|_| bot.in_sight || bot.mode == Mode::Hunt)
    else {
        // Nothing to aim at: the gun back over the front.
        if m.gun > deadband {
            press(bits, keys::GUN_LEFT);
        } else if m.gun < -deadband {
            press(bits, keys::GUN_RIGHT);
        }
        return;
    };
    let w = &scene.rules.weapons;
    let d = dist(pos, t.pos);
    let want = choose_weapon(tank, d);
    if want != tank.weapon {
        bits.fired |= 1 << keys::NEXT_WEAPON;
    }
    let point = match want {
        Weapon::Bomb if bot.skill != super::BotSkill::Easy => {
            lead(pos, [m.vx, m.vy], t.pos, t.vel, w.w2.speed, w.w2.fuse)
        }
        _ => t.pos,
    };
    let desired = bearing(pos, point) + bot.aim_offset;
    let err = wrap(desired - m.gun_heading() - m.angvel * scene.dt);
    if err > deadband {
        press(bits, keys::GUN_RIGHT);
    } else if err < -deadband {
        press(bits, keys::GUN_LEFT);
    }
    let range = match tank.weapon {
        Weapon::Gun => w.w1.range,
        Weapon::Bomb => w.w2.speed * w.w2.fuse,
    };
    let tolerance = (model.width * 0.6 / d.max(1.0)).clamp(0.02, 0.3);
    let ready = tank.reload[tank.weapon.index()] <= 0.0 && tank.ammo[tank.weapon.index()] > 0;
    let safe = tank.weapon != Weapon::Bomb || d > BOMB_RANGE.0 * 0.8;
    if bot.in_sight
        && bot.seen_for >= bot.skill.profile().reaction
        && tank.weapon == want
        && ready
        && safe
        && d < range * 0.95
        && err.abs() < tolerance
    {
        bits.fired |= 1 << keys::FIRE;
    }
}

/// Notices a stall (see the module docs) and starts backing out of it.
fn watch_progress(bot: &mut Bot, tank: &Tank, m: &Motion, scene: &Scene<'_>, rng: &mut SplitMix64, bits: KeyBits) {
    let pos = [m.x, m.y];
    if bot.unstick.seconds > 0.0 {
        bot.unstick.seconds -= scene.dt;
        if bot.unstick.seconds <= 0.0 {
            // Out of it: plan again at the next look, which comes at once.
            bot.unstick.seconds = 0.0;
            bot.route.clear();
            bot.replan_in = 0.0;
            bot.think_in = 0.0;
        }
        return;
    }
    let Some(&next) = bot.route.first() else {
        bot.progress = (f32::INFINITY, 0.0);
        return;
    };
    // Full throttle without speed: pressed against something.
    let driving = bits.is_held(keys::FORWARD) || bits.is_held(keys::BACK);
    if driving && m.throttle.abs() > 0.7 && libm::hypotf(m.vx, m.vy) < BLOCKED_SPEED {
        bot.blocked += scene.dt;
    } else {
        bot.blocked = 0.0;
    }
    let d = dist(pos, next);
    if d < bot.progress.0 - PROGRESS_STEP {
        bot.progress = (d, 0.0);
    } else if bits.is_held(keys::FORWARD) || m.angvel.abs() <= 1.0 {
        // Turning on the spot toward the next point is not a stall; turning that does not turn is.
        bot.progress.1 += scene.dt;
    }
    if bot.progress.1 < STALL_SECONDS && bot.blocked < BLOCKED_SECONDS {
        return;
    }
    bot.blocked = 0.0;
    let model = &scene.rules.models.tank;
    let heading = [next[0] - pos[0], next[1] - pos[1]];
    let len = libm::hypotf(heading[0], heading[1]).max(1e-3);
    let dir = [heading[0] / len, heading[1] / len];
    let look = len.min(80.0) + model.length / 2.0;
    // A crate or a tank in the way is kept out of the next routes for a while.
    let crate_in_way = scene.nav.obstacles().find(|c| c.ray(pos, dir, look).is_some()).map(|c| c.center);
    let tank_in_way = scene
        .tanks
        .iter()
        .filter(|c| c.body != tank.body && dist(c.pos, pos) < look + model.length / 2.0)
        .find(|c| {
            let to = [c.pos[0] - pos[0], c.pos[1] - pos[1]];
            let along = to[0] * dir[0] + to[1] * dir[1];
            along > 0.0 && along > 0.5 * libm::hypotf(to[0], to[1])
        })
        .map(|c| c.pos);
    for center in [crate_in_way, tank_in_way].into_iter().flatten() {
        if !bot.avoid.iter().any(|a| dist(a.center, center) < 1.0) {
            bot.avoid.push(Avoid { center, seconds: AVOID.0 });
        }
    }
    // Back out if there is room behind, else forward, else turn on the spot; turn toward the
    // side the next point is on, or either way when it is dead ahead.
    let behind = room(scene, tank.body, pos, wrap(m.angle + std::f32::consts::PI));
    let ahead = room(scene, tank.body, pos, m.angle);
    let drive = if behind > model.length {
        -1.0
    } else if ahead > model.length {
        1.0
    } else {
        0.0
    };
    let err = wrap(bearing(pos, next) - m.angle);
    let side = if err.abs() < 0.2 { if rng.chance(0.5) { 1.0 } else { -1.0 } } else { err.signum() };
    // Backing out turns the nose the other way round.
    let turn = if drive < 0.0 { -side } else { side };
    bot.unstick = Unstick { seconds: UNSTICK_SECONDS, turn, drive };
    bot.progress = (f32::INFINITY, 0.0);
}

/// How far the hull could go along `heading` before it hits anything else (walls, crates,
/// tanks): the shortest of three rays, along its centre line and both its sides, up to 100
/// units beyond the hull's half length.
fn room(scene: &Scene<'_>, body: RigidBodyHandle, pos: [f32; 2], heading: f32) -> f32 {
    let model = &scene.rules.models.tank;
    let half = model.length / 2.0;
    let max = half + 100.0;
    let (c, s) = (libm::cosf(heading), libm::sinf(heading));
    let dir = Vector::new(c, s);
    let filter = QueryFilter::default().exclude_rigid_body(body);
    // Along the centre line and both sides of the hull.
    let side = model.width / 2.0 - 2.0;
    [-side, 0.0, side]
        .into_iter()
        .map(|o| {
            let from = Vector::new(pos[0] - s * o, pos[1] + c * o);
            scene.physics.cast_ray(from, dir, max, filter).map_or(max, |h| h.toi)
        })
        .fold(max, f32::min)
        - half
}

#[cfg(test)]
mod tests {
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
}
