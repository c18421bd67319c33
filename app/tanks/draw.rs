//! Drawing the tanks' world: floor, walls, crates and spawns from the map; tanks, bombs,
//! tracers and explosions from the interpolated snapshot; the camera.
//!
//! Map coordinates have y pointing down and angles turning +x towards +y; Bevy's y points
//! up, so a map point `(x, y)` is drawn at `(x, −y)` and an angle `a` as a rotation of `−a`.
//! Everyone is drawn from the interpolation buffer; the local tank from the predictor
//! when there is one ([`crate::window::net::MatchState::local_tank`]).

use std::collections::BTreeMap;

use bevy::prelude::*;
use bevy::sprite::Anchor;
use vimp_netcode::snapshot::{Block, FieldValue, Row};

use crate::window::{ActiveMatch, Screen};

/// The camera that follows the player.
#[derive(Component, Debug)]
pub struct MainCamera;

/// Adds the drawing systems.
pub struct DrawPlugin;

impl Plugin for DrawPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Drawn>()
            .add_systems(Startup, load_sprites)
            .add_systems(
                Update,
                (rebuild_map, sync_world, age_effects, follow_camera)
                    .chain()
                    .after(crate::window::MatchUpdate)
                    .run_if(in_state(Screen::Match)),
            )
            .add_systems(OnExit(Screen::Match), clear_world);
    }
}

/// The sprites, from `assets/sprites/`.
#[derive(Resource, Debug)]
struct Sprites {
    hull: Handle<Image>,
    turret: Handle<Image>,
    crate_box: Handle<Image>,
    floor: Handle<Image>,
    wall: Handle<Image>,
    bomb: Handle<Image>,
    explosion: Handle<Image>,
    tracer: Handle<Image>,
    spawn: Handle<Image>,
}

fn load_sprites(mut commands: Commands, assets: Res<AssetServer>) {
    commands.insert_resource(Sprites {
        hull: assets.load("sprites/tank_hull.png"),
        turret: assets.load("sprites/tank_turret.png"),
        crate_box: assets.load("sprites/crate.png"),
        floor: assets.load("sprites/floor.png"),
        wall: assets.load("sprites/wall.png"),
        bomb: assets.load("sprites/bomb.png"),
        explosion: assets.load("sprites/explosion.png"),
        tracer: assets.load("sprites/tracer.png"),
        spawn: assets.load("sprites/spawn.png"),
    });
}

/// Draw order.
mod z {
    pub(super) const FLOOR: f32 = 0.0;
    pub(super) const SPAWN: f32 = 0.5;
    pub(super) const WALL: f32 = 1.0;
    pub(super) const CRATE: f32 = 2.0;
    pub(super) const BOMB: f32 = 3.0;
    pub(super) const TANK: f32 = 4.0;
    pub(super) const TRACER: f32 = 5.0;
    pub(super) const BLAST: f32 = 6.0;
    pub(super) const LABEL: f32 = 7.0;
}

/// The turret sprite's pivot: the turret's centre, as a fraction of the sprite from its centre.
const TURRET_PIVOT: Vec2 = Vec2::new(-0.25, 0.0);
/// World units per sprite pixel of the tank sprites.
const TANK_UNITS_PER_PIXEL: f32 = 0.5;
/// How long a tracer shows.
const TRACER_LIFE: f32 = 0.18;
/// How long an explosion shows.
const BLAST_LIFE: f32 = 0.45;

/// Entities drawn for the match, by snapshot id.
#[derive(Resource, Debug, Default)]
struct Drawn {
    map_version: u64,
    map_entities: Vec<Entity>,
    tanks: BTreeMap<u32, TankView>,
    crates: BTreeMap<u32, Entity>,
    bombs: BTreeMap<u32, Entity>,
    crate_sizes: Vec<(f32, f32)>,
}

#[derive(Debug, Clone, Copy)]
struct TankView {
    root: Entity,
    hull: Entity,
    turret: Entity,
    label: Entity,
    bar: Entity,
}

/// A short-lived effect (tracer, explosion).
#[derive(Component, Debug)]
struct Effect {
    born: f32,
    life: f32,
    grow: bool,
}

/// Anything drawn for a match (cleared when it ends).
#[derive(Component, Debug)]
struct MatchDrawing;

fn world(x: f32, y: f32, z: f32) -> Vec3 {
    Vec3::new(x, -y, z)
}

fn turn(angle: f32) -> Quat {
    Quat::from_rotation_z(-angle)
}

fn f(row: &Row, i: usize) -> f32 {
    row.get(i).copied().map_or(0.0, FieldValue::as_f32)
}

fn u(row: &Row, i: usize) -> u32 {
    row.get(i).copied().map_or(0, FieldValue::as_u32)
}

fn rebuild_map(
    mut commands: Commands,
    mut drawn: ResMut<Drawn>,
    mut active: ResMut<ActiveMatch>,
    sprites: Res<Sprites>,
) {
    let m = active.get();
    if m.map_version == drawn.map_version {
        return;
    }
    drawn.map_version = m.map_version;
    for e in drawn.map_entities.drain(..) {
        commands.entity(e).despawn();
    }
    for (_, e) in std::mem::take(&mut drawn.crates) {
        commands.entity(e).despawn();
    }
    let Some(map) = &m.map else { return };
    let t = map.tile_size;
    let mut spawned = Vec::new();
    for (row, tiles) in map.map.iter().enumerate() {
        for (col, tile) in tiles.iter().enumerate() {
            let wall = map.physics_static.contains(tile);
            let image = if wall { sprites.wall.clone() } else { sprites.floor.clone() };
            let center = world((col as f32 + 0.5) * t, (row as f32 + 0.5) * t, if wall { z::WALL } else { z::FLOOR });
            spawned.push(
                commands
                    .spawn((
                        Sprite { image, custom_size: Some(Vec2::splat(t)), ..default() },
                        Transform::from_translation(center),
                        MatchDrawing,
                    ))
                    .id(),
            );
        }
    }
    for (team, points) in &map.respawns {
        let [r, g, b] = super::hud::team_rgb(team.parse().unwrap_or(0));
        for p in points.iter().filter(|p| p.len() >= 2) {
            spawned.push(
                commands
                    .spawn((
                        Sprite {
                            image: sprites.spawn.clone(),
                            color: Color::srgba(r, g, b, 0.8),
                            custom_size: Some(Vec2::splat(44.0)),
                            ..default()
                        },
                        Transform::from_translation(world(p[0], p[1], z::SPAWN)),
                        MatchDrawing,
                    ))
                    .id(),
            );
        }
    }
    drawn.crate_sizes = map.physics_dynamic.iter().map(|c| (c.width, c.height)).collect();
    drawn.map_entities = spawned;
}

/// The tank model's hull size, from the game's config.
fn hull_size(config: Option<&serde_json::Value>) -> Vec2 {
    let tank = config.map(|c| &c["game"]["models"]["tank"]);
    let get = |k: &str, d: f32| tank.and_then(|t| t[k].as_f64()).map_or(d, |v| v as f32);
    Vec2::new(get("length", 40.0), get("width", 30.0))
}

fn sync_world(
    mut commands: Commands,
    mut drawn: ResMut<Drawn>,
    mut active: ResMut<ActiveMatch>,
    sprites: Res<Sprites>,
    time: Res<Time>,
    mut transforms: Query<&mut Transform>,
    mut texts: Query<&mut Text2d>,
    mut sounds: ResMut<crate::window::sound::SoundQueue>,
) {
    let m = active.get();
    let Some(schema) = m.client().schema().cloned() else { return };
    let id = |name: &str| schema.id_of(name);
    let (tanks_key, bombs_key, tracers_key, blasts_key) = (id("m1"), id("w2"), id("w1"), id("w2e"));
    let crates_key = m.map.as_ref().and_then(|map| id(&map.set_id));
    let names: BTreeMap<u32, String> = m
        .stat
        .rows
        .iter()
        .filter(|((t, _), _)| *t == 0)
        .map(|((_, id), (_, c))| (*id, c.first().map(ToString::to_string).unwrap_or_default()))
        .collect();
    let hull = hull_size(m.client().config());
    let local = m.player_id();
    let local_motion = m.local_tank();
    let now = time.elapsed_secs();

    // Tanks.
    let empty = BTreeMap::new();
    let rows = tanks_key.and_then(|k| m.sample.hot.get(&k)).unwrap_or(&empty);
    let gone: Vec<u32> = drawn.tanks.keys().filter(|id| !rows.contains_key(id)).copied().collect();
    for id in gone {
        if let Some(v) = drawn.tanks.remove(&id) {
            commands.entity(v.root).despawn();
        }
    }
    for (&pid, row) in rows {
        let team = u(row, 9) as u8;
        let [r, g, b] = super::hud::team_rgb(team);
        let view = *drawn.tanks.entry(pid).or_insert_with(|| {
            let hull_e = commands
                .spawn((
                    Sprite {
                        image: sprites.hull.clone(),
                        custom_size: Some(hull),
                        color: Color::srgb(r, g, b),
                        ..default()
                    },
                    Transform::default(),
                ))
                .id();
            let turret = commands
                .spawn((
                    Sprite {
                        image: sprites.turret.clone(),
                        custom_size: Some(Vec2::new(64.0, 24.0) * TANK_UNITS_PER_PIXEL),
                        color: Color::srgb(r * 0.85 + 0.1, g * 0.85 + 0.1, b * 0.85 + 0.1),
                        ..default()
                    },
                    Anchor(TURRET_PIVOT),
                    Transform::from_xyz(0.0, 0.0, 0.1),
                ))
                .id();
            let label = commands
                .spawn((
                    Text2d::new(String::new()),
                    TextFont::from_font_size(13.0),
                    TextColor(Color::srgba(1.0, 1.0, 1.0, 0.9)),
                    Transform::from_xyz(0.0, hull.y + 14.0, z::LABEL - z::TANK),
                ))
                .id();
            let bar = commands
                .spawn((
                    Sprite::from_color(Color::srgb(0.4, 0.9, 0.4), Vec2::new(36.0, 4.0)),
                    Anchor::CENTER_LEFT,
                    Transform::from_xyz(-18.0, hull.y + 3.0, z::LABEL - z::TANK),
                ))
                .id();
            let back = commands
                .spawn((
                    Sprite::from_color(Color::srgba(0.0, 0.0, 0.0, 0.6), Vec2::new(38.0, 6.0)),
                    Transform::from_xyz(0.0, hull.y + 3.0, z::LABEL - z::TANK - 0.01),
                ))
                .id();
            let root = commands
                .spawn((Transform::default(), Visibility::default(), MatchDrawing))
                .add_children(&[hull_e, turret, label, bar, back])
                .id();
            TankView { root, hull: hull_e, turret, label, bar }
        });
        let (mut x, mut y, mut angle, mut gun) = (f(row, 0), f(row, 1), f(row, 2), f(row, 3));
        if Some(pid) == local
            && let Some(p) = local_motion
        {
            (x, y, angle, gun) = (p[0], p[1], p[2], p[6]);
        }
        if let Ok(mut t) = transforms.get_mut(view.root) {
            t.translation = world(x, y, z::TANK);
        }
        if let Ok(mut t) = transforms.get_mut(view.hull) {
            t.rotation = turn(angle);
        }
        if let Ok(mut t) = transforms.get_mut(view.turret) {
            t.rotation = turn(angle + gun);
        }
        let health = (u(row, 7) as f32 / 100.0).clamp(0.0, 1.0);
        if let Ok(mut t) = transforms.get_mut(view.bar) {
            t.scale.x = health.max(0.001);
        }
        if let Ok(mut text) = texts.get_mut(view.label) {
            let name = names.get(&pid).cloned().unwrap_or_else(|| format!("#{pid}"));
            if text.0 != name {
                text.0 = name;
            }
        }
    }

    // Crates.
    let rows = crates_key.and_then(|k| m.sample.hot.get(&k)).unwrap_or(&empty);
    for (&i, row) in rows {
        let (w, h) = drawn.crate_sizes.get(i as usize).copied().unwrap_or((32.0, 32.0));
        let (x, y, a) = (f(row, 0), f(row, 1), f(row, 2));
        let (s, c) = a.sin_cos();
        let center = world(x + c * w / 2.0 - s * h / 2.0, y + s * w / 2.0 + c * h / 2.0, z::CRATE);
        let e = *drawn.crates.entry(i).or_insert_with(|| {
            commands
                .spawn((
                    Sprite { image: sprites.crate_box.clone(), custom_size: Some(Vec2::new(w, h)), ..default() },
                    Transform::default(),
                    MatchDrawing,
                ))
                .id()
        });
        if let Ok(mut t) = transforms.get_mut(e) {
            t.translation = center;
            t.rotation = turn(a);
        }
    }

    // Bombs in flight: hot rows, drawn where the buffer blends them, gone with their row.
    let bombs = bombs_key.and_then(|k| m.sample.hot.get(&k)).unwrap_or(&empty);
    let gone: Vec<u32> = drawn.bombs.keys().filter(|id| !bombs.contains_key(id)).copied().collect();
    for id in gone {
        if let Some(e) = drawn.bombs.remove(&id) {
            commands.entity(e).despawn();
        }
    }
    for (bid, row) in bombs {
        let size = f(row, 3).max(6.0);
        let e = *drawn.bombs.entry(*bid).or_insert_with(|| {
            commands
                .spawn((
                    Sprite { image: sprites.bomb.clone(), custom_size: Some(Vec2::splat(size * 2.0)), ..default() },
                    Transform::default(),
                    MatchDrawing,
                ))
                .id()
        });
        if let Ok(mut t) = transforms.get_mut(e) {
            t.translation = world(f(row, 0), f(row, 1), z::BOMB);
            t.rotation = turn(f(row, 2));
        }
    }

    // Events: tracers and blasts are effects.
    for frame in &m.sample.events {
        for (key, block) in &frame.blocks {
            let key = Some(*key);
            if key == tracers_key
                && let Block::List16(rows) = block
            {
                for row in rows {
                    spawn_tracer(&mut commands, &sprites, [f(row, 0), f(row, 1)], [f(row, 2), f(row, 3)], now);
                    sounds.0.push(("shot".into(), Some([f(row, 0), f(row, 1)])));
                }
            } else if key == blasts_key
                && let Block::List16(rows) = block
            {
                for row in rows {
                    sounds.0.push(("blast".into(), Some([f(row, 0), f(row, 1)])));
                    commands.spawn((
                        Sprite {
                            image: sprites.explosion.clone(),
                            custom_size: Some(Vec2::splat(f(row, 2).max(8.0) * 2.0)),
                            ..default()
                        },
                        Transform::from_translation(world(f(row, 0), f(row, 1), z::BLAST)),
                        Effect { born: now, life: BLAST_LIFE, grow: true },
                        MatchDrawing,
                    ));
                }
            }
        }
    }
    for (from, to) in m.take_local_shots() {
        spawn_tracer(&mut commands, &sprites, from, to, now);
        sounds.0.push(("shot".into(), Some(from)));
    }
}

fn spawn_tracer(commands: &mut Commands, sprites: &Sprites, from: [f32; 2], to: [f32; 2], now: f32) {
    let (dx, dy) = (to[0] - from[0], to[1] - from[1]);
    let len = (dx * dx + dy * dy).sqrt().max(1.0);
    let mid = world((from[0] + to[0]) / 2.0, (from[1] + to[1]) / 2.0, z::TRACER);
    commands.spawn((
        Sprite {
            image: sprites.tracer.clone(),
            custom_size: Some(Vec2::new(len, 3.0)),
            color: Color::srgb(1.0, 0.95, 0.6),
            ..default()
        },
        Transform::from_translation(mid).with_rotation(turn(dy.atan2(dx))),
        Effect { born: now, life: TRACER_LIFE, grow: false },
        MatchDrawing,
    ));
}

fn age_effects(
    mut commands: Commands,
    time: Res<Time>,
    mut effects: Query<(Entity, &Effect, &mut Sprite, &mut Transform)>,
) {
    let now = time.elapsed_secs();
    for (e, effect, mut sprite, mut t) in &mut effects {
        let age = (now - effect.born) / effect.life;
        if age >= 1.0 {
            commands.entity(e).despawn();
            continue;
        }
        sprite.color.set_alpha(1.0 - age * age);
        if effect.grow {
            t.scale = Vec3::splat(0.5 + 0.7 * age);
        }
    }
}

fn follow_camera(
    mut active: ResMut<ActiveMatch>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
    windows: Query<&Window>,
) {
    let m = active.get();
    let Ok(mut cam) = camera.single_mut() else { return };
    let target = m
        .local_tank()
        .map(|s| (s[0], s[1]))
        .or_else(|| m.client().last_frame().and_then(|f| f.player).map(|p| (p.state[0], p.state[1])))
        .or_else(|| {
            m.map.as_ref().map(|map| {
                let rows = map.map.len() as f32;
                let cols = map.map.first().map_or(0, Vec::len) as f32;
                (cols * map.tile_size / 2.0, rows * map.tile_size / 2.0)
            })
        });
    let Some((x, y)) = target else { return };
    // Keep the view inside the map when the map is larger than the window.
    let (mut x, mut y) = (x, y);
    if let (Some(map), Ok(window)) = (&m.map, windows.single()) {
        let w = map.map.first().map_or(0, Vec::len) as f32 * map.tile_size;
        let h = map.map.len() as f32 * map.tile_size;
        let (hw, hh) = (window.width() / 2.0, window.height() / 2.0);
        x = if w > 2.0 * hw { x.clamp(hw, w - hw) } else { w / 2.0 };
        y = if h > 2.0 * hh { y.clamp(hh, h - hh) } else { h / 2.0 };
    }
    cam.translation = world(x, y, cam.translation.z);
}

fn clear_world(mut commands: Commands, mut drawn: ResMut<Drawn>, all: Query<Entity, With<MatchDrawing>>) {
    for e in &all {
        commands.entity(e).despawn();
    }
    *drawn = Drawn::default();
}
