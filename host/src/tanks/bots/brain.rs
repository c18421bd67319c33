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
//! - **Levels** (layered maps): a bot knows the level its tank stands on and plans with
//!   [`NavigationSystem::find_route_on`] to targets on any level; it keeps a route up to its
//!   first ramp or ledge and plans again once across ([`route_points`]; what the last point
//!   is across follows from the map, [`transition`]). On a ramp it drives straight up or down
//!   the run, along the middle of the wide ramp, and plans nothing until it is off; it drives
//!   off a ledge's edge and lets the fall happen. It sees along the shot's own path
//!   ([`level_segments`]: dropping off open edges, climbing across a slab's edge), so it
//!   fights across levels exactly where its tracers would hit, and takes no bombs to a
//!   target on another level. Bombs' reach counts on their own level, fresh blasts on every
//!   level.

use rapier2d::prelude::{QueryFilter, RigidBodyHandle, Vector};
use vimp_netcode::input::KeyBits;

use crate::engine::map::bodies::ray_groups;
use crate::engine::map::{Axis, MapLevels, Surface};
use crate::engine::nav::{
    LegKind, NavigationSystem, PathPoint, PathQuery, PenaltyZone, RouteLeg, SpatialGrid, level_segments,
};
use crate::engine::physics::Physics;
use crate::engine::players::PlayerId;
use crate::engine::rng::SplitMix64;
use crate::tanks::bots::state::{Avoid, Bot, Mode, Unstick};
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
    /// The level it stands on (on a ramp, the run's bottom level; falling, the one it lands on).
    pub level: u8,
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
    /// The map's levels when it is layered; `None` on a flat map.
    pub levels: Option<&'a MapLevels>,
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

/// What a narrow place costs a bot's route, as a share of its length at no margin at all
/// ([`PathQuery::narrow_cost`]): bots keep off walls and take wide doors where they can.
pub const NARROW_COST: f32 = 3.0;

/// [`NARROW_COST`] on a layered map: a sixth of it. Its bridges are narrow by design (a slab
/// two tiles wide between its rails has no cell off them), and at the full price a bot would
/// always go round by the ground: on `maps/bridge.json` (8 bots, 120 s, seeds 1 to 4) bots
/// climb a ramp 18, 17, 4 and 19 times at this price, and 0, 4, 1 and 0 times at the full one.
pub const LAYERED_NARROW_COST: f32 = 0.5;

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
    // A falling tank's keys do nothing: it looks around once it has landed.
    if bot.think_in <= 0.0 && !tank.level.state.is_falling() {
        think(bot, tank, &m, scene, rng);
        bot.think_in = bot.skill.profile().think;
    }
    steer(bot, tank, &m, scene, &mut bits);
    aim(bot, tank, &m, scene, &mut bits);
    watch_progress(bot, tank, &m, scene, rng, bits);
    bits
}

/// The level a tank at `pos` meets walls and bodies on (its rays' level): on a ramp, the
/// run's level nearest its height; 0 on a flat map.
fn eye_level(tank: &Tank, scene: &Scene<'_>, pos: [f32; 2]) -> u8 {
    scene.levels.map_or(0, |l| tank.level.state.effective_level(l, pos, true))
}

/// What a ray from the hull of `tank` at `pos` meets when it feels for room: every body and
/// wall on a flat map; on a layered one what the hull itself collides with (its level's walls
/// and bodies, and the ramp guards unless it rides a ramp).
fn hull_filter(scene: &Scene<'_>, tank: &Tank, pos: [f32; 2]) -> QueryFilter<'static> {
    let filter = QueryFilter::default().exclude_rigid_body(tank.body);
    match scene.levels {
        Some(levels) => filter.groups(tank.level.state.groups(levels, pos, true)),
        None => filter,
    }
}

/// Whether the tank with `body` at `from`, its rays flying on `level`, sees `c` (see the
/// module docs): on a layered map, whether a shot's ray from there, level by level
/// ([`level_segments`]), meets `c` before anything else.
pub fn sees(scene: &Scene<'_>, body: RigidBodyHandle, from: [f32; 2], level: u8, c: &Contact) -> bool {
    if let Some(levels) = scene.levels {
        let d = [c.pos[0] - from[0], c.pos[1] - from[1]];
        let len = libm::hypotf(d[0], d[1]);
        if len < 1e-3 {
            return c.level == level;
        }
        let dir = Vector::new(d[0] / len, d[1] / len);
        let origin = Vector::new(from[0], from[1]);
        let filter = QueryFilter::default().exclude_rigid_body(body);
        return level_segments(levels, from, [dir.x, dir.y], len, level)
            .iter()
            .filter(|s| s.end > s.start)
            .find_map(|s| {
                scene.physics.cast_ray(origin + dir * s.start, dir, s.end - s.start, filter.groups(ray_groups(s.level)))
            })
            .is_some_and(|h| h.body == Some(c.body));
    }
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
    let eye = eye_level(tank, scene, pos);
    let visible: Vec<(f32, &Contact)> =
        near.iter().take(SIGHT_CHECKS).filter(|(_, c)| sees(scene, tank.body, pos, eye, c)).copied().collect();
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
    let level = tank.level.state.level;
    if scene.levels.is_some_and(|l| tank.level.state.ramp(l, pos, true).is_some()) {
        // On a ramp: up or down it first, then plan.
        return;
    }
    let here = PathPoint::new(level, pos);
    let danger = scene
        .bombs
        .iter()
        .filter(|z| z.level == level && dist(pos, z.center) < z.radius)
        .min_by(|a, b| dist(pos, a.center).total_cmp(&dist(pos, b.center)));
    if let Some(zone) = danger {
        if bot.mode == Mode::Flee && bot.has_route() {
            return;
        }
        if let Some(goal) = flee_point(pos, level, zone, scene.nav, width) {
            bot.mode = Mode::Flee;
            bot.mode_left = FLEE_SECONDS;
            plan(bot, here, PathPoint::new(level, goal), scene);
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
            && let Some(place) = cover_point(here, PathPoint::new(t.level, t.pos), scene, width)
        {
            bot.mode = Mode::Cover;
            bot.mode_left = if reloading && !weak { tank.reload[1] + 0.2 } else { COVER_SECONDS };
            plan(bot, here, PathPoint::new(level, place), scene);
            return;
        }
        if bot.mode == Mode::Cover && bot.mode_left > 0.0 && hide {
            return;
        }
        bot.mode = Mode::Fight;
        if dist(pos, t.pos) > ENGAGE_FAR {
            if needs_plan(bot, pos, t.pos) {
                plan(bot, here, PathPoint::new(t.level, t.pos), scene);
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
    // Where the target was seen is on the level it stands on now, as far as the bot can tell.
    let seen_level =
        |p: [f32; 2]| bot.target.and_then(|t| scene.contact(t)).map_or_else(|| floor_level(scene, p), |c| c.level);
    match last_seen.map(|p| PathPoint::new(seen_level(p), p)).or(nearest.map(|n| PathPoint::new(n.level, n.pos))) {
        Some(goal) => {
            bot.mode = Mode::Hunt;
            if needs_plan(bot, pos, goal.point) {
                plan(bot, here, goal, scene);
                let slow = if bot.skill == super::BotSkill::Easy { 2.0 } else { 1.0 };
                bot.replan_in = HUNT_REPLAN * slow * rng.range_f32(0.8, 1.2);
            }
        }
        None => {
            if bot.mode != Mode::Roam || !bot.has_route() || bot.replan_in <= 0.0 {
                bot.mode = Mode::Roam;
                // Any level of a layered map (a flat map's ground takes no draw).
                let levels = scene.nav.levels();
                let to = if levels.len() > 1 { levels[rng.below(levels.len() as u32) as usize] } else { 0 };
                if let Some(goal) = scene.nav.random_point_where(rng, to, width) {
                    plan(bot, here, PathPoint::new(to, goal), scene);
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
        narrow_cost: if nav.is_layered() { LAYERED_NARROW_COST } else { NARROW_COST },
        soft_cost: 6.0,
        penalties: zones,
        heuristic_weight: if nav.uses_lattice() { LARGE_MAP_WEIGHT } else { 1.0 },
        smooth_within: SMOOTH_WITHIN,
        ledge_cost_scale: 1.0,
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
/// that finds none. No route leaves the bot without one (it looks again soon). The crates
/// and tanks that blocked the bot lately are kept out of on its own level.
fn plan(bot: &mut Bot, from: PathPoint, goal: PathPoint, scene: &Scene<'_>) {
    let model = &scene.rules.models.tank;
    let mut zones: Vec<PenaltyZone> = scene.bombs.iter().chain(scene.blasts).copied().collect();
    zones.extend(bot.avoid.iter().map(|a| PenaltyZone {
        level: from.level,
        center: a.center,
        radius: AVOID.1,
        cost_per_unit: 3.0,
    }));
    let query = route_query(model, scene.nav, &zones);
    let route = scene
        .nav
        .find_route_on(from, goal, &query)
        .or_else(|| scene.nav.find_route_on(from, goal, &PathQuery { min_width: model.width, ..query }));
    bot.goal = Some(goal.point);
    bot.route = route.map(|r| route_points(&r.legs)).unwrap_or_default();
    bot.progress = (f32::INFINITY, 0.0);
}

/// The points a bot keeps of a route's legs: up to and including its first ramp or ledge
/// (all of them on a flat map). Once across, the bot plans again from where it got to.
pub fn route_points(legs: &[RouteLeg]) -> Vec<[f32; 2]> {
    let end = legs.iter().position(|l| l.kind != LegKind::Walk).map_or(legs.len(), |k| k + 1);
    legs[..end].iter().map(|l| l.point).collect()
}

/// How a route's point `p` lies across from `level` (layered maps): the leg that gets there —
/// up or down a ramp it is an end node of (the cell beyond the top of a run rising from
/// `level`, the cell before the foot of one coming up to it) or off the level's edge (a cell
/// without its floor) — and the level it is on; `None` when it lies on `level`.
///
/// A bot's route ends across a ramp or a ledge exactly when its last point is not its goal
/// ([`route_points`]), and this is what that point is: so a bot restored from a dump follows
/// its route as it did before.
pub fn transition(levels: &MapLevels, level: u8, p: [f32; 2]) -> Option<(LegKind, u8)> {
    let (c, r) = levels.cell_of(p[0], p[1])?;
    let cell = (c as i64, r as i64);
    for run in levels.runs() {
        let kind = LegKind::Ramp { axis: run.axis, sign: run.sign };
        if run.from == level && run.beyond_top() == cell {
            return Some((kind, run.to));
        }
        if run.to == level && run.before_foot() == cell {
            return Some((kind, run.from));
        }
    }
    if level > 0 && levels.surface(level, c, r) == Surface::Empty {
        let lands = levels.landing_level_cell(level, c, r);
        return Some((LegKind::Ledge { height: level - lands }, lands));
    }
    None
}

/// The legs of a bot's route as it drives them from `level` (the overlay draws them): walks
/// on its level, and on a layered map a last leg over a ramp or off a ledge when its route
/// ends across one ([`transition`]).
pub fn route_legs(bot: &Bot, level: u8, levels: Option<&MapLevels>) -> Vec<RouteLeg> {
    let last = bot.route.len().wrapping_sub(1);
    bot.route
        .iter()
        .enumerate()
        .map(|(k, &point)| {
            let across =
                levels.filter(|_| k == last && bot.goal != Some(point)).and_then(|l| transition(l, level, point));
            match across {
                Some((kind, to)) => RouteLeg { point, kind, level: to },
                None => RouteLeg { point, kind: LegKind::Walk, level },
            }
        })
        .collect()
}

/// The level a goal at `p` is taken to be on when nothing tells: the highest whose node there
/// is free, else the ground.
fn floor_level(scene: &Scene<'_>, p: [f32; 2]) -> u8 {
    scene.nav.levels().iter().rev().copied().find(|&l| scene.nav.is_walkable_on(l, p)).unwrap_or(0)
}

/// Whether walls hide `to` from `from` (the navigation's grid): on a layered map along a
/// shot's path level by level ([`level_segments`]), which must also end on `to`'s level.
fn hidden(scene: &Scene<'_>, from: PathPoint, to: PathPoint) -> bool {
    let Some(levels) = scene.levels else { return scene.nav.has_obstacle_between(from.point, to.point) };
    let d = [to.point[0] - from.point[0], to.point[1] - from.point[1]];
    let len = libm::hypotf(d[0], d[1]);
    if len < 1e-3 {
        return from.level != to.level;
    }
    let dir = [d[0] / len, d[1] / len];
    let segments = level_segments(levels, from.point, dir, len, from.level);
    if segments.last().map(|s| s.level) != Some(to.level) {
        return true;
    }
    // Each stretch a little short of the cell edges it starts and ends on.
    let at = |t: f32| [from.point[0] + dir[0] * t, from.point[1] + dir[1] * t];
    segments.iter().any(|s| {
        let (a, b) = (s.start + 0.5, s.end - 0.5);
        b > a && scene.nav.has_obstacle_between_on(s.level, at(a), at(b))
    })
}

/// A place on `level` out of `zone`'s reach, away from its centre (or to a side), that the tank fits.
fn flee_point(pos: [f32; 2], level: u8, zone: &PenaltyZone, nav: &NavigationSystem, width: f32) -> Option<[f32; 2]> {
    let (dx, dy) = (pos[0] - zone.center[0], pos[1] - zone.center[1]);
    let len = libm::hypotf(dx, dy);
    let away = if len > 1e-3 { [dx / len, dy / len] } else { [1.0, 0.0] };
    let out = zone.radius + 60.0;
    // Away, then turned ±0.8 and ±1.6 rad.
    for turn in [0.0f32, 0.8, -0.8, 1.6, -1.6] {
        let (s, c) = (libm::sinf(turn), libm::cosf(turn));
        let dir = [away[0] * c - away[1] * s, away[0] * s + away[1] * c];
        let p = [zone.center[0] + dir[0] * out, zone.center[1] + dir[1] * out];
        if let Some(q) = nav.nearest_walkable_on(level, p, width, 64.0)
            && dist(q, zone.center) > zone.radius
        {
            return Some(q);
        }
    }
    None
}

/// The nearest of a ring of places around `here` (on its level) that the tank fits and that a
/// wall hides from `threat`.
fn cover_point(here: PathPoint, threat: PathPoint, scene: &Scene<'_>, width: f32) -> Option<[f32; 2]> {
    let (pos, nav) = (here.point, scene.nav);
    let mut best: Option<(f32, [f32; 2])> = None;
    for k in 0..12 {
        let a = k as f32 * std::f32::consts::TAU / 12.0;
        let dir = [libm::cosf(a), libm::sinf(a)];
        for r in [120.0, 200.0] {
            let p = [pos[0] + dir[0] * r, pos[1] + dir[1] * r];
            let Some(q) = nav.nearest_walkable_on(here.level, p, width, 48.0) else { continue };
            if hidden(scene, PathPoint::new(here.level, q), threat) && best.is_none_or(|(d, _)| dist(pos, q) < d) {
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
    let level = tank.level.state.level;
    let hull = hull_filter(scene, tank, pos);
    if let Some(levels) = scene.levels {
        if tank.level.state.is_falling() {
            return;
        }
        if let Some(run) = tank.level.state.ramp(levels, pos, true) {
            ride(bot, levels, run, m, model, bits);
            return;
        }
    }
    if bot.mode == Mode::Fight
        && bot.in_sight
        && let Some(t) = bot.target.and_then(|t| scene.contact(t))
        && dist(pos, t.pos) < ENGAGE_NEAR
    {
        // Face it and back away while there is room behind: the gun keeps it in sight.
        turn_toward(m, wrap(bearing(pos, t.pos) - m.angle), model, bits);
        if room(scene, hull, pos, wrap(m.angle + std::f32::consts::PI)) > model.length {
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
        // The end of a ramp or a ledge the route ends across (layered maps): reached once the
        // tank is on its level, and the bot plans on from there at once.
        let across = scene.levels.filter(|_| bot.route.len() == 1 && bot.goal != Some(next));
        let reached = match across {
            Some(levels) => transition(levels, level, next).is_none() && d < r,
            None if bot.route.len() == 1 => d < r * 0.6,
            None => d < r || passed,
        };
        if !reached {
            break;
        }
        bot.route.remove(0);
        bot.progress = (f32::INFINITY, 0.0);
        if across.is_some() {
            bot.think_in = 0.0;
        }
    }
    let Some(&next) = bot.route.first() else { return };
    let mut toward = next;
    if let Some(&after) = bot.route.get(1)
        && dist(pos, next) < LOOK_AHEAD
        && scene.nav.has_clear_corridor_on(level, pos, after, model.width / 2.0)
    {
        toward = after;
    }
    let err = wrap(bearing(pos, toward) - m.angle);
    let speed = libm::hypotf(m.vx, m.vy);
    if err.abs() > REVERSE_ANGLE
        && dist(pos, toward) < REVERSE_REACH
        && room(scene, hull, pos, wrap(m.angle + std::f32::consts::PI)) > model.length
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
    if err.abs() > 1.0 && scene.nav.soft_clearance_on(level, pos) < libm::hypotf(model.length, model.width) / 2.0 {
        // Too near a wall or a crate to turn on the spot: ease away from it while turning.
        let behind = room(scene, hull, pos, wrap(m.angle + std::f32::consts::PI));
        let ahead = room(scene, hull, pos, m.angle);
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

/// On ramp run `run`: drives straight to the end the route goes to (beyond the top when its
/// last point is beyond the top of a lane of this wide ramp, before the foot when it is before
/// the foot of one; else the nearer end), along the middle of the wide ramp, where its sides
/// are farthest. The route's points before that end are done with.
fn ride(bot: &mut Bot, levels: &MapLevels, run: usize, m: &Motion, model: &TankModel, bits: &mut KeyBits) {
    let pos = [m.x, m.y];
    let rr = levels.runs()[run];
    let block = &levels.blocks()[rr.block];
    let lanes = || block.runs.iter().map(|&k| levels.runs()[k]);
    let last = bot.route.last().and_then(|&p| levels.cell_of(p[0], p[1])).map(|(c, r)| (c as i64, r as i64));
    let up = match last {
        Some(cell) if lanes().any(|l| l.beyond_top() == cell) => Some(true),
        Some(cell) if lanes().any(|l| l.before_foot() == cell) => Some(false),
        _ => None,
    };
    if up.is_some() {
        let keep = bot.route.len().saturating_sub(1);
        bot.route.drain(..keep);
    }
    let up = up.unwrap_or_else(|| levels.sample(run, pos[0], pos[1]).progress >= 0.5);
    let (ec, er) = if up { rr.beyond_top() } else { rr.before_foot() };
    let t = levels.tile_size();
    let middle = (block.lane_lo + block.lane_hi + 1) as f32 / 2.0 * t;
    let target = match rr.axis {
        Axis::X => [(ec as f32 + 0.5) * t, middle],
        Axis::Y => [middle, (er as f32 + 0.5) * t],
    };
    let err = wrap(bearing(pos, target) - m.angle);
    if err.abs() > REVERSE_ANGLE {
        // The end is behind: back down (or up) to it.
        let rear = wrap(err - std::f32::consts::PI);
        turn_toward(m, rear, model, bits);
        if rear.abs() < 0.5 {
            press(bits, keys::BACK);
        }
        return;
    }
    turn_toward(m, err, model, bits);
    if err.abs() < 0.5 {
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
    // A target on another level is for tracers: a bomb falls off edges and bursts on its own level.
    let across = t.level != tank.level.state.level;
    let want = if across { Weapon::Gun } else { choose_weapon(tank, d) };
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
    if tank.level.state.is_falling() {
        // It flies on as it left the edge: no stall to see.
        bot.progress = (f32::INFINITY, 0.0);
        return;
    }
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
    // A crate or a tank in the way (on the tank's level) is kept out of the next routes for a while.
    let level = tank.level.state.level;
    let hull = hull_filter(scene, tank, pos);
    let crate_in_way = scene.nav.obstacles_on(level).find(|c| c.ray(pos, dir, look).is_some()).map(|c| c.center);
    let tank_in_way = scene
        .tanks
        .iter()
        .filter(|c| c.body != tank.body && c.level == level && dist(c.pos, pos) < look + model.length / 2.0)
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
    let behind = room(scene, hull, pos, wrap(m.angle + std::f32::consts::PI));
    let ahead = room(scene, hull, pos, m.angle);
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
/// tanks; `filter` says which: [`hull_filter`]): the shortest of three rays, along its centre
/// line and both its sides, up to 100 units beyond the hull's half length.
fn room(scene: &Scene<'_>, filter: QueryFilter<'_>, pos: [f32; 2], heading: f32) -> f32 {
    let model = &scene.rules.models.tank;
    let half = model.length / 2.0;
    let max = half + 100.0;
    let (c, s) = (libm::cosf(heading), libm::sinf(heading));
    let dir = Vector::new(c, s);
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
mod tests;
