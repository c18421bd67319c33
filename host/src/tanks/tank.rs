//! Tanks as entities: joining, teams, spawning, driving, damage, death and respawn.

use bevy::prelude::*;
use rapier2d::prelude::*;
use serde::{Deserialize, Serialize};
use vimp_netcode::input::KeyBits;
use vimp_netcode::schema::BlockKind;

use crate::engine::map::MapLevels;
use crate::engine::map::bodies::set_body_groups;
use crate::engine::map::state::MapState;
use crate::engine::meta::MetaOutbox;
use crate::engine::physics::Physics;
use crate::engine::players::{Participants, PlayerId, TickEvents};
use crate::engine::sim::{EngineSettings, SimRng};
use crate::engine::snapshot::EventRows;
use crate::engine::tags::encode_tag;
use crate::tanks::TanksRules;
use crate::tanks::bots::state::Bot;
use crate::tanks::config::TankModel;
use crate::tanks::level::{Footing, TankLevel, footing, place_on_level, step_tank_level};
use crate::tanks::movement::{Motion, drive_on};
use crate::tanks::rounds::Round;
use crate::tanks::rows::key;

/// Body tag kind of a tank (the payload is the player id).
pub const TANK_KIND: u8 = 2;
/// Body tag kind of a bomb (the payload is the bomb id).
pub const BOMB_KIND: u8 = 3;

/// The two teams.
pub const TEAMS: [u8; 2] = [1, 2];

/// The active weapon.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Weapon {
    /// `w1`: the hitscan gun.
    #[default]
    Gun,
    /// `w2`: the bomb launcher.
    Bomb,
}

impl Weapon {
    /// Index into per-weapon arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The panel name of the weapon.
    pub fn name(self) -> &'static str {
        match self {
            Weapon::Gun => "w1",
            Weapon::Bomb => "w2",
        }
    }
}

/// A player's tank.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tank {
    /// Its player.
    pub player: PlayerId,
    /// Its team (1 or 2).
    pub team: u8,
    /// Its rapier body.
    pub body: RigidBodyHandle,
    /// Gun angle relative to the hull.
    pub gun: f32,
    /// Engine throttle in [−1, 1].
    pub throttle: f32,
    /// Hit points left.
    pub health: f32,
    /// Alive (a dead tank's body is disabled until it respawns).
    pub alive: bool,
    /// Seconds until respawn, while dead.
    pub respawn_in: f32,
    /// The active weapon.
    pub weapon: Weapon,
    /// Ammo per weapon.
    pub ammo: [u32; 2],
    /// Seconds until each weapon can fire again.
    pub reload: [f32; 2],
    /// Frags (minus team kills and suicides).
    pub score: i32,
    /// Deaths.
    pub deaths: u32,
    /// Its level on a layered map (the ground on a flat one). A dump of a layered match
    /// carries it apart from the tank, so a flat match's dump is what it always was.
    #[serde(skip)]
    pub level: TankLevel,
}

impl Tank {
    /// A new tank of `player` in `team` with `body`: no score, the gun, nothing loaded yet
    /// ([`respawn`] arms it).
    pub fn new(player: PlayerId, team: u8, body: RigidBodyHandle) -> Tank {
        Tank {
            player,
            team,
            body,
            gun: 0.0,
            throttle: 0.0,
            health: 0.0,
            alive: true,
            respawn_in: 0.0,
            weapon: Weapon::Gun,
            ammo: [0; 2],
            reload: [0.0; 2],
            score: 0,
            deaths: 0,
            level: TankLevel::default(),
        }
    }

    /// The tank's position.
    pub fn position(&self, physics: &Physics) -> [f32; 2] {
        physics.world().bodies.get(self.body).map_or([0.0; 2], |b| [b.translation().x, b.translation().y])
    }

    /// The tank's motion state as the movement module and the player block see it.
    pub fn motion(&self, physics: &Physics) -> Motion {
        body_motion(physics, self.body, self.gun, self.throttle)
    }
}

/// The motion state of a tank's body, with the gun angle and throttle the body does not hold.
pub fn body_motion(physics: &Physics, body: RigidBodyHandle, gun: f32, throttle: f32) -> Motion {
    let Some(b) = physics.world().bodies.get(body) else { return Motion::default() };
    let p = b.translation();
    let v = b.linvel();
    Motion { x: p.x, y: p.y, angle: b.rotation().angle(), vx: v.x, vy: v.y, angvel: b.angvel(), gun, throttle }
}

/// One step of the movement rule applied to a tank's body, before the physics step: reads
/// its motion, runs [`drive_on`] with `bits` on the ground's `footing` and sets the body's
/// velocities. Returns the new `(gun, throttle)`. A tank whose footing is locked (it falls)
/// keeps all of them. The host's tanks and the client's predictor both step through this.
pub fn drive_body(
    physics: &mut Physics,
    body: RigidBodyHandle,
    gun: f32,
    throttle: f32,
    bits: KeyBits,
    model: &TankModel,
    dt: f32,
    footing: Footing,
) -> (f32, f32) {
    if footing.locked {
        return (gun, throttle);
    }
    let d = drive_on(&body_motion(physics, body, gun, throttle), bits, model, dt, footing.slope);
    if let Some(b) = physics.world_mut().bodies.get_mut(body) {
        b.set_linvel(Vector::new(d.vx, d.vy), true);
        b.set_angvel(d.angvel, true);
    }
    (d.gun, d.throttle)
}

/// Every tank, sorted by player: the order every system works in.
pub fn sorted<T: std::ops::Deref<Target = Tank>>(tanks: impl Iterator<Item = T>) -> Vec<T> {
    let mut v: Vec<T> = tanks.collect();
    v.sort_by_key(|t| t.player);
    v
}

/// Friction of a tank's hull.
pub const TANK_FRICTION: f32 = 0.3;
/// Restitution of a tank's hull.
pub const TANK_RESTITUTION: f32 = 0.1;

/// Builds the tank's body: a dynamic box with the player's tag.
pub fn spawn_body(physics: &mut Physics, model: &TankModel, player: PlayerId, at: [f32; 3]) -> RigidBodyHandle {
    let body = RigidBodyBuilder::dynamic()
        .translation(Vector::new(at[0], at[1]))
        .rotation(at[2])
        .user_data(encode_tag(TANK_KIND, player.0 as u64))
        .soft_ccd_prediction(model.length.min(model.width))
        .can_sleep(false);
    let collider = ColliderBuilder::cuboid(model.length / 2.0, model.width / 2.0)
        .density(model.density / 100.0)
        .friction(TANK_FRICTION)
        .restitution(TANK_RESTITUTION);
    physics.insert(body, collider).0
}

/// Where a tank (re)spawns: `[x, y, angle rad]` and the level it stands on.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spawn {
    /// `[x, y, angle]`, the angle in radians.
    pub at: [f32; 3],
    /// The level of the respawn point (0 on a flat map).
    pub level: u8,
}

/// The respawn points of `team` with their levels.
fn team_points(map: &MapState, team: u8) -> Vec<Spawn> {
    let Some(m) = map.map.as_ref() else { return Vec::new() };
    let key = team.to_string();
    let (Some(points), levels) = (m.respawns().get(&key), m.respawn_levels().get(&key)) else { return Vec::new() };
    points
        .iter()
        .enumerate()
        .map(|(i, p)| Spawn {
            at: [p[0], p[1], p[2].to_radians()],
            level: levels.and_then(|l| l.get(i)).copied().unwrap_or(0),
        })
        .collect()
}

/// A respawn point for `team`, drawn with the match rng.
pub fn respawn_point(map: &MapState, team: u8, rng: &mut SimRng) -> Spawn {
    let points = team_points(map, team);
    if points.is_empty() {
        return Spawn::default();
    }
    points[rng.below(points.len() as u32) as usize]
}

/// A respawn point for `team` away from the positions in `taken` (any point if all are near one).
pub fn free_respawn_point(map: &MapState, team: u8, taken: &[[f32; 2]], rng: &mut SimRng) -> Spawn {
    let points = team_points(map, team);
    let free: Vec<&Spawn> = points
        .iter()
        .filter(|p| taken.iter().all(|t| libm::hypotf(t[0] - p.at[0], t[1] - p.at[1]) > SPAWN_CLEARANCE))
        .collect();
    if free.is_empty() {
        return respawn_point(map, team, rng);
    }
    *free[rng.below(free.len() as u32) as usize]
}

/// How far a respawn point must be from a living tank to count as free.
pub const SPAWN_CLEARANCE: f32 = 48.0;

/// The layered geometry of the loaded map, when it is layered.
pub fn layered(map: &MapState) -> Option<&MapLevels> {
    map.map.as_ref().map(|m| m.levels()).filter(|l| l.is_layered())
}

/// Puts a tank back at a respawn point, whole, with full ammo, on the point's level (its
/// body taking that level's collision groups when `levels` is a layered map's).
pub fn respawn(tank: &mut Tank, physics: &mut Physics, spawn: Spawn, rules: &TanksRules, levels: Option<&MapLevels>) {
    let at = spawn.at;
    tank.alive = true;
    tank.health = rules.0.models.tank.health;
    tank.respawn_in = 0.0;
    tank.gun = 0.0;
    tank.throttle = 0.0;
    tank.ammo = [rules.0.weapons.w1.ammo, rules.0.weapons.w2.ammo];
    tank.reload = [0.0; 2];
    if let Some(b) = physics.world_mut().bodies.get_mut(tank.body) {
        b.set_enabled(true);
        b.set_translation(Vector::new(at[0], at[1]), true);
        b.set_rotation(Rotation::from_angle(at[2]), true);
        b.set_linvel(Vector::ZERO, true);
        b.set_angvel(0.0, true);
    }
    tank.level = TankLevel::on(spawn.level);
    match levels {
        Some(levels) => place_on_level(physics, tank.body, &mut tank.level, levels, spawn.level),
        // After a layered map, a flat one: back to every group (a no-op on a body that has them).
        None => set_body_groups(physics.world_mut(), tank.body, InteractionGroups::all()),
    }
}

/// Players per team (teams 1 and 2).
fn team_counts<'a>(tanks: impl Iterator<Item = &'a Tank>) -> [usize; 2] {
    let mut count = [0usize; 2];
    for t in tanks {
        if let Some(i) = TEAMS.iter().position(|&team| team == t.team) {
            count[i] += 1;
        }
    }
    count
}

/// Spawns tanks for joins, removes them for leaves, moves them for team changes.
pub(crate) fn join_and_leave(
    mut commands: Commands,
    events: Res<TickEvents>,
    mut participants: ResMut<Participants>,
    mut physics: ResMut<Physics>,
    mut rng: ResMut<SimRng>,
    mut event_rows: ResMut<EventRows>,
    map: Res<MapState>,
    rules: Res<TanksRules>,
    mut tanks: Query<(Entity, &mut Tank)>,
) {
    for player in &events.left {
        let Some((entity, tank)) = tanks.iter().find(|(_, t)| t.player == *player) else { continue };
        physics.queue_removal(tank.body);
        commands.entity(entity).despawn();
        event_rows.push(key::TANKS, BlockKind::Indexed8, player.0 as u32, None);
    }
    // Spawns go through `commands`, so this tick's joiners are counted here, not by the query.
    let mut count = team_counts(tanks.iter().map(|(_, t)| t).filter(|t| !events.left.contains(&t.player)));
    let mut taken: Vec<[f32; 2]> = tanks.iter().filter(|(_, t)| t.alive).map(|(_, t)| t.position(&physics)).collect();
    for player in &events.joined {
        let Some(p) = participants.0.get_mut(player) else { continue };
        let team = match p.requested_team.take() {
            Some(t) if TEAMS.contains(&t) => t,
            _ if count[1] < count[0] => TEAMS[1],
            _ => TEAMS[0],
        };
        count[(team - 1) as usize] += 1;
        p.team = team;
        let spawn = free_respawn_point(&map, team, &taken, &mut rng);
        taken.push([spawn.at[0], spawn.at[1]]);
        let body = spawn_body(&mut physics, &rules.0.models.tank, *player, spawn.at);
        let mut tank = Tank::new(*player, team, body);
        respawn(&mut tank, &mut physics, spawn, &rules, layered(&map));
        let mut entity = commands.spawn(tank);
        if p.bot {
            entity.insert(Bot::joining(rules.0.bots.skill, *player));
        }
    }
    for player in &events.team_requests {
        let Some(p) = participants.0.get_mut(player) else { continue };
        let Some(team) = p.requested_team.take().filter(|t| TEAMS.contains(t)) else { continue };
        let Some((_, mut tank)) = tanks.iter_mut().find(|(_, t)| t.player == *player) else { continue };
        if tank.team != team {
            p.team = team;
            tank.team = team;
            let spawn = respawn_point(&map, team, &mut rng);
            respawn(&mut tank, &mut physics, spawn, &rules, layered(&map));
        }
    }
}

/// Counts down respawn timers and brings dead tanks back.
pub(crate) fn respawn_dead(
    settings: Res<EngineSettings>,
    mut physics: ResMut<Physics>,
    mut rng: ResMut<SimRng>,
    map: Res<MapState>,
    rules: Res<TanksRules>,
    round: Res<Round>,
    mut tanks: Query<&mut Tank>,
) {
    if !round.is_playing() {
        return;
    }
    let mut tanks = sorted(tanks.iter_mut());
    let mut taken: Vec<[f32; 2]> = tanks.iter().filter(|t| t.alive).map(|t| t.position(&physics)).collect();
    for tank in &mut tanks {
        if tank.alive {
            continue;
        }
        tank.respawn_in -= settings.dt();
        if tank.respawn_in <= 0.0 {
            let spawn = free_respawn_point(&map, tank.team, &taken, &mut rng);
            taken.push([spawn.at[0], spawn.at[1]]);
            respawn(tank, &mut physics, spawn, &rules, layered(&map));
        }
    }
}

/// Applies the movement rule to every living tank (players' keys, or what their bot
/// decided); on a layered map on the footing its level gives ([`footing`]: a ramp slows or
/// speeds it, a fall locks its keys).
pub(crate) fn drive_tanks(
    settings: Res<EngineSettings>,
    participants: Res<Participants>,
    mut physics: ResMut<Physics>,
    rules: Res<TanksRules>,
    round: Res<Round>,
    map: Res<MapState>,
    mut tanks: Query<&mut Tank>,
) {
    let model = &rules.0.models.tank;
    let levels = layered(&map);
    for mut tank in sorted(tanks.iter_mut()) {
        if !tank.alive {
            continue;
        }
        let footing = levels.map_or(Footing::default(), |l| footing(&tank.level, l, tank.position(&physics)));
        let bits = match (round.is_playing(), participants.0.get(&tank.player)) {
            (true, Some(p)) => p.bits,
            _ => Default::default(),
        };
        (tank.gun, tank.throttle) =
            drive_body(&mut physics, tank.body, tank.gun, tank.throttle, bits, model, settings.dt(), footing);
    }
}

/// On a layered map, one fixed step of every living tank's level after the physics step
/// ([`step_tank_level`]): it climbs, crosses, drops off an edge or lands where its body now
/// stands, and takes its level's collision groups for the next step; landing costs
/// `fallDamage` per level fallen.
pub(crate) fn step_tank_levels(
    settings: Res<EngineSettings>,
    mut physics: ResMut<Physics>,
    rules: Res<TanksRules>,
    mut round: ResMut<Round>,
    map: Res<MapState>,
    mut outbox: ResMut<MetaOutbox>,
    mut tanks: Query<&mut Tank>,
) {
    let (Some(levels), Some(fall)) = (layered(&map), map.fall_model(&settings.config)) else { return };
    let mut tanks = sorted(tanks.iter_mut());
    let mut falls = Vec::new();
    for tank in &mut tanks {
        if !tank.alive {
            continue;
        }
        let body = tank.body;
        let change = step_tank_level(&mut physics, body, &mut tank.level, levels, &fall);
        if change.landed_from > 0.0 {
            let amount = rules.0.fall_damage * change.landed_from;
            falls.push(Damage { target: tank.player, amount, from: tank.player });
        }
    }
    if !falls.is_empty() {
        apply_damage(&falls, &mut tanks, &mut physics, &rules, &mut round, &mut outbox);
    }
}

/// Damage dealt this tick, applied in order after the weapons ran.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Damage {
    /// Who is hit.
    pub target: PlayerId,
    /// How much.
    pub amount: f32,
    /// Who dealt it.
    pub from: PlayerId,
}

/// Applies damage to tanks; kills, scores and team frags follow.
pub fn apply_damage<T: std::ops::DerefMut<Target = Tank>>(
    damage: &[Damage],
    tanks: &mut [T],
    physics: &mut Physics,
    rules: &TanksRules,
    round: &mut Round,
    outbox: &mut MetaOutbox,
) {
    for d in damage {
        let Some(ti) = tanks.iter().position(|t| t.player == d.target) else { continue };
        let attacker_team = tanks.iter().find(|t| t.player == d.from).map(|t| t.team);
        let target = &mut tanks[ti];
        if !target.alive || d.amount <= 0.0 {
            continue;
        }
        let same_team = attacker_team == Some(target.team);
        if same_team && !rules.0.friendly_fire && d.from != d.target {
            continue;
        }
        target.health -= d.amount;
        if target.health > 0.0 {
            continue;
        }
        target.health = 0.0;
        target.alive = false;
        target.deaths += 1;
        target.respawn_in = rules.0.rounds.respawn_seconds;
        target.throttle = 0.0;
        if let Some(b) = physics.world_mut().bodies.get_mut(target.body) {
            b.set_linvel(Vector::ZERO, false);
            b.set_angvel(0.0, false);
            b.set_enabled(false);
        }
        let target_team = target.team;
        if let Some(killer) = tanks.iter_mut().find(|t| t.player == d.from) {
            if killer.player == d.target || killer.team == target_team {
                killer.score -= 1;
            } else {
                killer.score += 1;
                round.add_frag(killer.team);
            }
        }
        outbox.broadcast(vimp_netcode::meta::Sound(super::SOUND_FRAG.into()));
        // Who destroyed whom, for every player's kill feed.
        let params = vec![serde_json::json!(d.from.0), serde_json::json!(d.target.0)];
        outbox.broadcast(vimp_netcode::meta::GameInform {
            code: vimp_netcode::meta::GameInform::FRAG,
            params: Some(params),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tanks::config::TanksConfig;

    fn tank(physics: &mut Physics, player: u8, team: u8) -> Tank {
        let model = TankModel::default();
        let body = spawn_body(physics, &model, PlayerId(player), [player as f32 * 100.0, 0.0, 0.0]);
        Tank { health: model.health, ammo: [1, 1], ..Tank::new(PlayerId(player), team, body) }
    }

    fn hit(target: u8, amount: f32, from: u8) -> Damage {
        Damage { target: PlayerId(target), amount, from: PlayerId(from) }
    }

    #[test]
    fn friendly_fire_off_spares_teammates_and_kills_score() {
        let mut physics = Physics::new(1.0 / 120.0);
        let rules = TanksRules(TanksConfig::default());
        let (mut round, mut outbox) = (Round::default(), MetaOutbox::default());
        let mut tanks = [tank(&mut physics, 0, 1), tank(&mut physics, 1, 1), tank(&mut physics, 2, 2)];
        let mut refs: Vec<&mut Tank> = tanks.iter_mut().collect();
        apply_damage(&[hit(1, 50.0, 0), hit(2, 60.0, 0)], &mut refs, &mut physics, &rules, &mut round, &mut outbox);
        assert_eq!((refs[1].health, refs[2].health), (100.0, 40.0), "the teammate is spared");
        apply_damage(&[hit(2, 60.0, 0)], &mut refs, &mut physics, &rules, &mut round, &mut outbox);
        assert!(!refs[2].alive && refs[2].deaths == 1 && refs[2].respawn_in == rules.0.rounds.respawn_seconds);
        assert_eq!(refs[0].score, 1);
        assert_eq!(round.team_frags, [1, 0]);
        assert!(!physics.world().bodies[refs[2].body].is_enabled(), "a dead tank's body is out of the world");
        // The dead take no more damage and give no more frags.
        apply_damage(&[hit(2, 60.0, 0)], &mut refs, &mut physics, &rules, &mut round, &mut outbox);
        assert_eq!((refs[0].score, refs[2].deaths), (1, 1));
    }

    #[test]
    fn friendly_fire_on_costs_the_killer_a_point() {
        let mut physics = Physics::new(1.0 / 120.0);
        let rules = TanksRules(TanksConfig { friendly_fire: true, ..TanksConfig::default() });
        let (mut round, mut outbox) = (Round::default(), MetaOutbox::default());
        let mut tanks = [tank(&mut physics, 0, 1), tank(&mut physics, 1, 1)];
        let mut refs: Vec<&mut Tank> = tanks.iter_mut().collect();
        apply_damage(&[hit(1, 150.0, 0)], &mut refs, &mut physics, &rules, &mut round, &mut outbox);
        assert!(!refs[1].alive);
        assert_eq!(refs[0].score, -1);
        assert_eq!(round.team_frags, [0, 0], "a team kill is no frag");
    }
}
