//! Weapons: the hitscan gun (`w1` tracers), bombs (`w2`) and their blasts (`w2e`).

use bevy::prelude::*;
use rapier2d::parry::query::RayCast;
use rapier2d::prelude::*;
use serde::{Deserialize, Serialize};
use vimp_netcode::input::KeyBits;
use vimp_netcode::schema::{BlockKind, set_all};

use crate::engine::map::bodies::{ray_groups, set_body_groups};
use crate::engine::map::state::MapState;
use crate::engine::map::{LevelState, MapLevels, step_body_level};
use crate::engine::meta::MetaOutbox;
use crate::engine::nav::level_segments;
use crate::engine::physics::{Physics, RayHit};
use crate::engine::players::{Participants, PlayerId};
use crate::engine::sim::{EngineSettings, SimRng, Tick};
use crate::engine::snapshot::EventRows;
use crate::engine::tags::{encode_tag, is_map_object, tag_kind, tag_payload};
use crate::tanks::TanksRules;
use crate::tanks::bots::state::RecentBlasts;
use crate::tanks::config::{BombWeapon, TankModel, TracerWeapon, Weapons, keys};
use crate::tanks::lagcomp::{HullHistory, SeenHull, seen_hulls};
use crate::tanks::movement::Motion;
use crate::tanks::rounds::Round;
use crate::tanks::rows::key;
use crate::tanks::rows::layout::Rows;
use crate::tanks::tank::{BOMB_KIND, Damage, TANK_KIND, Tank, Weapon, apply_damage, layered, sorted};

/// A bomb in flight.
#[derive(Component, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bomb {
    /// The bomb's id on the wire (`w2` rows).
    pub id: u32,
    /// Who fired it.
    pub owner: PlayerId,
    /// Its rapier body.
    pub body: RigidBodyHandle,
    /// Seconds until it bursts.
    pub fuse: f32,
    /// Its radius.
    pub size: f32,
    /// Its level on a layered map (see [`Tank::level`]).
    #[serde(skip)]
    pub level: LevelState,
}

/// The next bomb id.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NextShotId(pub u32);

/// How far ahead of the hull's centre a shot starts: half the hull plus a small gap.
pub fn muzzle_reach(model: &TankModel) -> f32 {
    model.length / 2.0 + 4.0
}

/// Switches and pulls the trigger for one step: the rule the host and the client's
/// predictor share. `nextWeapon` switches first; then `fire` shoots the active weapon
/// unless it is reloading or empty. A shot takes one round and starts the reload.
/// Returns the weapon that fires this step, if any. Reload timers count down apart
/// (see [`cool_down`]), before this is called.
pub fn trigger(
    weapon: &mut Weapon,
    ammo: &mut [u32; 2],
    reload: &mut [f32; 2],
    bits: KeyBits,
    weapons: &Weapons,
) -> Option<Weapon> {
    if bits.fired(keys::NEXT_WEAPON) {
        *weapon = match *weapon {
            Weapon::Gun => Weapon::Bomb,
            Weapon::Bomb => Weapon::Gun,
        };
    }
    let w = weapon.index();
    if !bits.fired(keys::FIRE) || reload[w] > 0.0 || ammo[w] == 0 {
        return None;
    }
    ammo[w] -= 1;
    reload[w] = match weapon {
        Weapon::Gun => weapons.w1.reload,
        Weapon::Bomb => weapons.w2.reload,
    };
    Some(*weapon)
}

/// Counts every reload timer down by one step.
pub fn cool_down(reload: &mut [f32; 2], dt: f32) {
    for r in reload {
        *r = (*r - dt).max(0.0);
    }
}

/// The path of one hitscan shot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TracerPath {
    /// The muzzle.
    pub start: Vector,
    /// The unit direction, spread included.
    pub dir: Vector,
    /// Where it stops: the first collider hit, or the end of its range.
    pub end: Vector,
    /// What it hit.
    pub hit: Option<RayHit>,
}

/// Where a hitscan shot from a tank in `motion` (its body `body`, which the ray ignores)
/// goes, `spread` rad off the gun's heading, against everything in `physics`; with `seen`,
/// against the tanks' hulls where the shooter saw them instead of their bodies now (lag
/// compensation, see [`crate::tanks::lagcomp`]), and everything else as it is now.
///
/// On a layered map (`on` is the map's levels and the level the tank meets walls and bodies
/// on) the ray flies level by level ([`level_segments`], walked from the hull's centre): it
/// meets only the walls and bodies of the level each stretch is on, drops off a slab's open
/// edge and climbs across a slab's edge from outside.
#[expect(
    clippy::too_many_arguments,
    reason = "the shot, the shooter and the world it flies through, as host and predictor each have them"
)]
pub fn trace(
    physics: &Physics,
    motion: &Motion,
    body: RigidBodyHandle,
    model: &TankModel,
    gun: &TracerWeapon,
    spread: f32,
    on: Option<(&MapLevels, u8)>,
    seen: Option<&[SeenHull]>,
) -> TracerPath {
    let heading = motion.gun_heading();
    let dir_angle = heading + spread;
    let dir = Vector::new(libm::cosf(dir_angle), libm::sinf(dir_angle));
    let reach = muzzle_reach(model);
    let center = Vector::new(motion.x, motion.y);
    let start = center + Vector::new(libm::cosf(heading), libm::sinf(heading)) * reach;
    let bodies = &physics.world().bodies;
    let not_a_tank = |_: ColliderHandle, c: &Collider| {
        c.parent().and_then(|b| bodies.get(b)).is_none_or(|b| tag_kind(b.user_data) != TANK_KIND)
    };
    let mut filter = QueryFilter::default().exclude_rigid_body(body);
    if seen.is_some() {
        filter = filter.predicate(&not_a_tank);
    }
    let hull = rapier2d::parry::shape::Cuboid::new(Vector::new(model.length / 2.0, model.width / 2.0));
    let cast = |origin: Vector, len: f32, groups: Option<InteractionGroups>| {
        let filter = match groups {
            Some(g) => filter.groups(g),
            None => filter,
        };
        let hit = physics.cast_ray(origin, dir, len, filter);
        let Some(seen) = seen else { return hit };
        let ray = Ray::new(origin, dir);
        let nearest = seen
            .iter()
            .filter(|h| h.body != body && groups.is_none_or(|g| g.test(h.groups)))
            .filter_map(|h| hull.cast_ray(&h.pose, &ray, len, true).map(|toi| (toi, h)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        match (hit, nearest) {
            (Some(hit), Some((toi, _))) if hit.toi <= toi => Some(hit),
            (_, Some((toi, h))) => Some(RayHit {
                // The hull's collider, where it is now.
                collider: bodies
                    .get(h.body)
                    .and_then(|b| b.colliders().first().copied())
                    .unwrap_or(ColliderHandle::invalid()),
                body: Some(h.body),
                user_data: h.tag,
                toi,
                point: ray.point_at(toi),
                normal: Vector::ZERO,
            }),
            (hit, None) => hit,
        }
    };
    let hit = match on {
        None => cast(start, gun.range, None),
        Some((levels, level)) => {
            // The stretches are walked from the centre along the shot's direction; the shot
            // itself leaves the muzzle, `reach` ahead.
            let segments = level_segments(levels, [center.x, center.y], [dir.x, dir.y], reach + gun.range, level);
            segments.iter().filter(|s| s.end > reach).find_map(|s| {
                let from = s.start.max(reach);
                let origin = start + dir * (from - reach);
                cast(origin, s.end - from, Some(ray_groups(s.level)))
            })
        }
    };
    let end = hit.map_or(start + dir * gun.range, |h| h.point);
    TracerPath { start, dir, end, hit }
}

/// Where a bomb fired from a tank in `motion` appears and how fast it goes.
pub fn bomb_launch(motion: &Motion, model: &TankModel, launcher: &BombWeapon) -> (Vector, Vector) {
    let heading = motion.gun_heading();
    let dir = Vector::new(libm::cosf(heading), libm::sinf(heading));
    let at = Vector::new(motion.x, motion.y) + dir * (muzzle_reach(model) + launcher.size);
    (at, dir * launcher.speed + Vector::new(motion.vx, motion.vy))
}

/// Switches weapons and fires them, in player order; damage is applied after every shot.
pub(crate) fn fire_weapons(
    mut commands: Commands,
    settings: Res<EngineSettings>,
    participants: Res<Participants>,
    mut physics: ResMut<Physics>,
    mut rng: ResMut<SimRng>,
    mut events: ResMut<EventRows>,
    mut next_id: ResMut<NextShotId>,
    mut round: ResMut<Round>,
    mut outbox: ResMut<MetaOutbox>,
    rules: Res<TanksRules>,
    map: Res<MapState>,
    (tick, history, layout): (Res<Tick>, Res<HullHistory>, Res<Rows>),
    mut tanks: Query<&mut Tank>,
) {
    let dt = settings.dt();
    let levels = layered(&map);
    let (gun, launcher, model) = (&rules.0.weapons.w1, &rules.0.weapons.w2, &rules.0.models.tank);
    let mut tanks = sorted(tanks.iter_mut());
    let mut damage = Vec::new();
    let mut shots = Vec::new();
    let playing = round.is_playing();
    for tank in tanks.iter_mut() {
        cool_down(&mut tank.reload, dt);
        if !tank.alive || !playing {
            continue;
        }
        let bits = participants.0.get(&tank.player).map(|p| p.bits).unwrap_or_default();
        let tank = &mut **tank;
        let Some(weapon) = trigger(&mut tank.weapon, &mut tank.ammo, &mut tank.reload, bits, &rules.0.weapons) else {
            continue;
        };
        shots.push((tank.player, weapon, bits.view));
    }
    for (player, weapon, view) in shots {
        let Some(tank) = tanks.iter().find(|t| t.player == player) else { continue };
        let motion = tank.motion(&physics);
        let body = tank.body;
        let on = levels.map(|l| (l, tank.level.state.effective_level(l, [motion.x, motion.y], true)));
        match weapon {
            Weapon::Gun => {
                let spread = rng.range_f32(-gun.spread, gun.spread);
                // The world of this tick's start is the one of the last tick run.
                let now = tick.0.saturating_sub(1);
                let seen = view.map(|view| seen_hulls(&history, view, now, player, &tanks, &physics));
                let path = trace(&physics, &motion, body, model, gun, spread, on, seen.as_deref());
                let (end, dir) = (path.end, path.dir);
                let hit_body = path.hit.and_then(|h| h.body.map(|b| (b, h.user_data)));
                let was_hit = path.hit.is_some();
                let mut body_pos = end;
                if let Some((b, tag)) = hit_body {
                    // A hull hit where its shooter saw it is shown there.
                    let seen_at =
                        seen.as_ref().and_then(|s| s.iter().find(|h| h.body == b)).map(|h| h.pose.translation);
                    if let Some(at) = seen_at {
                        body_pos = at;
                    } else if let Some(rb) = physics.world().bodies.get(b) {
                        body_pos = rb.translation();
                    }
                    if tag_kind(tag) == TANK_KIND {
                        damage.push(Damage {
                            target: PlayerId(tag_payload(tag) as u8),
                            amount: gun.damage,
                            from: player,
                        });
                    } else if is_map_object(tag)
                        && let Some(rb) = physics.world_mut().bodies.get_mut(b)
                    {
                        rb.apply_impulse_at_point(dir * gun.push, end, true);
                    }
                }
                let t = &layout.tracers;
                let mut row = t.row();
                set_all(
                    &mut row,
                    [
                        (t.start_x, path.start.x),
                        (t.start_y, path.start.y),
                        (t.end_x, end.x),
                        (t.end_y, end.y),
                        (t.body_x, body_pos.x),
                        (t.body_y, body_pos.y),
                        (t.was_hit, f32::from(u8::from(was_hit))),
                        (t.shooter, f32::from(player.0)),
                    ],
                );
                events.push(key::TRACERS, BlockKind::List16, 0, Some(row));
            }
            Weapon::Bomb => {
                let (at, velocity) = bomb_launch(&motion, model, launcher);
                let id = next_id.0;
                next_id.0 = next_id.0.wrapping_add(1);
                let rb = RigidBodyBuilder::dynamic()
                    .translation(at)
                    .linvel(velocity)
                    .user_data(encode_tag(BOMB_KIND, id as u64))
                    .linear_damping(0.6)
                    .ccd_enabled(true)
                    .can_sleep(false);
                let mut collider = ColliderBuilder::ball(launcher.size).density(0.5).restitution(0.6).friction(0.2);
                let level = on.map_or(LevelState::default(), |(_, n)| LevelState::on(n));
                if let Some((levels, _)) = on {
                    collider = collider.collision_groups(level.groups(levels, [at.x, at.y], false));
                }
                let (handle, _) = physics.insert(rb, collider);
                let size = launcher.size;
                commands.spawn(Bomb { id, owner: player, body: handle, fuse: launcher.fuse, size, level });
            }
        }
    }
    apply_damage(&damage, &mut tanks, &mut physics, &rules, &mut round, &mut outbox);
}

/// On a layered map, one fixed step of every bomb's level after the physics step: a bomb
/// that flies off a slab's open edge falls to the level below, meeting walls but no tank on
/// the way ([`GameMap::step_dynamic_levels`](crate::engine::map::GameMap::step_dynamic_levels)'s
/// rule: bombs do not ride ramps).
pub(crate) fn step_bomb_levels(
    settings: Res<EngineSettings>,
    map: Res<MapState>,
    mut physics: ResMut<Physics>,
    mut bombs: Query<&mut Bomb>,
) {
    let (Some(levels), Some(fall)) = (layered(&map), map.fall_model(&settings.config)) else { return };
    let dt = physics.dt();
    let mut list: Vec<_> = bombs.iter_mut().collect();
    list.sort_by_key(|b| b.id);
    for mut bomb in list {
        let Some(p) = physics.world().bodies.get(bomb.body).map(|b| [b.translation().x, b.translation().y]) else {
            continue;
        };
        step_body_level(&mut bomb.level, levels, &fall, dt, p, false);
        set_body_groups(physics.world_mut(), bomb.body, bomb.level.groups(levels, p, false));
    }
}

/// Bursts bombs whose fuse ran out or that hit a tank this step.
pub(crate) fn burst_bombs(
    mut commands: Commands,
    settings: Res<EngineSettings>,
    mut physics: ResMut<Physics>,
    mut events: ResMut<EventRows>,
    mut round: ResMut<Round>,
    mut outbox: ResMut<MetaOutbox>,
    mut blasts: ResMut<RecentBlasts>,
    rules: Res<TanksRules>,
    map: Res<MapState>,
    mut bombs: Query<(Entity, &mut Bomb)>,
    mut tanks: Query<&mut Tank>,
    layout: Res<Rows>,
) {
    let hit: Vec<u32> = physics
        .contacts()
        .iter()
        .filter(|c| c.started && !c.removed)
        .filter_map(|c| match (tag_kind(c.user_data1), tag_kind(c.user_data2)) {
            (BOMB_KIND, TANK_KIND) => Some(tag_payload(c.user_data1) as u32),
            (TANK_KIND, BOMB_KIND) => Some(tag_payload(c.user_data2) as u32),
            _ => None,
        })
        .collect();
    let mut bursting: Vec<(Entity, Bomb)> = Vec::new();
    for (entity, mut bomb) in bombs.iter_mut() {
        bomb.fuse -= settings.dt();
        if bomb.fuse <= 0.0 || hit.contains(&bomb.id) || !round.is_playing() {
            bursting.push((entity, bomb.clone()));
        }
    }
    bursting.sort_by_key(|(_, b)| b.id);
    if bursting.is_empty() {
        return;
    }
    let launcher = &rules.0.weapons.w2;
    let mut tanks = sorted(tanks.iter_mut());
    let mut damage = Vec::new();
    let levels = layered(&map);
    for (entity, bomb) in bursting {
        let center = physics.world().bodies.get(bomb.body).map(|b| b.translation()).unwrap_or_default();
        for (handle, tag) in physics.intersect_circle(center, launcher.radius) {
            let Some(rb) = physics.world().bodies.get(handle) else { continue };
            let offset = rb.translation() - center;
            let d = offset.length();
            let falloff = (1.0 - d / launcher.radius).clamp(0.0, 1.0);
            // On a layered map a blast reaches the bodies of its own level only.
            if let Some(levels) = levels
                && blast_level_of(levels, &map, &tanks, &physics, handle, tag) != Some(bomb.level.level)
            {
                continue;
            }
            if tag_kind(tag) == TANK_KIND {
                damage.push(Damage {
                    target: PlayerId(tag_payload(tag) as u8),
                    amount: launcher.damage * falloff,
                    from: bomb.owner,
                });
            } else if is_map_object(tag) && map.map.is_some() && d > 1e-3 {
                let push = offset / d * launcher.push * falloff;
                if let Some(rb) = physics.world_mut().bodies.get_mut(handle) {
                    rb.apply_impulse(push, true);
                }
            }
        }
        let b = &layout.blasts;
        let mut row = b.row();
        set_all(&mut row, [(b.x, center.x), (b.y, center.y), (b.radius, launcher.radius)]);
        events.push(key::BLASTS, BlockKind::List16, 0, Some(row));
        blasts.0.push(([center.x, center.y], launcher.radius, 0.0));
        events.push(key::BOMBS, BlockKind::Indexed32, bomb.id, None);
        physics.queue_removal(bomb.body);
        commands.entity(entity).despawn();
    }
    apply_damage(&damage, &mut tanks, &mut physics, &rules, &mut round, &mut outbox);
}

/// The level a body in a blast's disc meets things on: a tank's, a box's; `None` for other
/// bodies (walls, bombs), which no blast reaches on a layered map.
fn blast_level_of<T: std::ops::Deref<Target = Tank>>(
    levels: &MapLevels,
    map: &MapState,
    tanks: &[T],
    physics: &Physics,
    handle: RigidBodyHandle,
    tag: u128,
) -> Option<u8> {
    if tag_kind(tag) == TANK_KIND {
        let tank = tanks.iter().find(|t| t.body == handle)?;
        let p = tank.position(physics);
        return Some(tank.level.state.effective_level(levels, p, true));
    }
    let i = map.map.as_ref()?.dynamic_index_of(physics.world(), handle)?;
    map.levels.get(i).map(|l| l.level)
}
