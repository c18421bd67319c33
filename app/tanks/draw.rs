//! Drawing the tanks' world: the map level by level (floor, walls, ramps, slabs and their
//! rails, spawns), crates, tanks and bombs from the interpolated snapshot at their level and
//! height, tracers and explosions; the camera.
//!
//! Map coordinates have y pointing down and angles turning +x towards +y; Bevy's y points
//! up, so a map point `(x, y)` is drawn at `(x, −y)` and an angle `a` as a rotation of `−a`.
//! Everyone is drawn from the interpolation buffer; the local tank from the predictor
//! when there is one ([`crate::window::net::MatchState::local_tank`]).
//!
//! What a level, a slab or a height looks like is worked out as plain data in [`levels`]: every
//! level has its band of depth, so what stands under a slab is drawn beneath it and what stands
//! on it above. A tank under a slab is outlined above it (others' faintly, in their team's
//! colour), and the player's own turns the slab see-through around it.
//!
//! A tank's name is painted by egui ([`paint_names`]) on the window's background layer, at the
//! point the camera shows above the tank, before the HUD, so every panel covers it.

pub mod levels;

use std::collections::BTreeMap;

use bevy::prelude::*;
use bevy::sprite::Anchor;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use vimp_host::engine::map::MapLevels;
use vimp_host::tanks::movement::Motion;
use vimp_host::tanks::rows::Rows;
use vimp_netcode::schema::MapBodyFields;
use vimp_netcode::snapshot::Block;

use self::levels::{BodyLook, Look, Piece, ShadowShape, band, body_look, bomb_level, covered, depth, see_through};
use crate::window::game::MainCamera;
use crate::window::{ActiveMatch, Screen};

/// Adds the drawing systems.
pub struct DrawPlugin;

impl Plugin for DrawPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Drawn>()
            .add_systems(Startup, load_sprites)
            .add_systems(
                Update,
                (
                    rebuild_map,
                    sync_tanks,
                    sync_crates,
                    sync_bombs,
                    spawn_effects,
                    see_through_slabs,
                    age_effects,
                    follow_camera,
                )
                    .chain()
                    .after(crate::window::MatchUpdate)
                    .run_if(in_state(Screen::Match)),
            )
            .add_systems(
                EguiPrimaryContextPass,
                paint_names.in_set(crate::window::WorldText).run_if(in_state(Screen::Match)),
            )
            .add_systems(OnExit(Screen::Match), clear_world);
    }
}

/// The sprites, from `assets/sprites/`.
#[derive(Resource, Debug)]
struct Sprites {
    hull: Handle<Image>,
    turret: Handle<Image>,
    outline: Handle<Image>,
    crate_box: Handle<Image>,
    floor: Handle<Image>,
    wall: Handle<Image>,
    deck: Handle<Image>,
    rail: Handle<Image>,
    ramp: Handle<Image>,
    bomb: Handle<Image>,
    explosion: Handle<Image>,
    tracer: Handle<Image>,
    spawn: Handle<Image>,
}

fn load_sprites(mut commands: Commands, assets: Res<AssetServer>) {
    commands.insert_resource(Sprites {
        hull: assets.load("sprites/tank_hull.png"),
        turret: assets.load("sprites/tank_turret.png"),
        outline: assets.load("sprites/tank_outline.png"),
        crate_box: assets.load("sprites/crate.png"),
        floor: assets.load("sprites/floor.png"),
        wall: assets.load("sprites/wall.png"),
        deck: assets.load("sprites/deck.png"),
        rail: assets.load("sprites/rail.png"),
        ramp: assets.load("sprites/ramp.png"),
        bomb: assets.load("sprites/bomb.png"),
        explosion: assets.load("sprites/explosion.png"),
        tracer: assets.load("sprites/tracer.png"),
        spawn: assets.load("sprites/spawn.png"),
    });
}

/// Depths above every level's band ([`levels::band`]).
mod z {
    pub(super) const TRACER: f32 = super::levels::OUTLINE_Z + 0.1;
    pub(super) const BLAST: f32 = super::levels::OUTLINE_Z + 0.2;
    pub(super) const LABEL: f32 = 7.0;
}

/// The turret sprite's pivot: the turret's centre, as a fraction of the sprite from its centre.
const TURRET_PIVOT: Vec2 = Vec2::new(-0.25, 0.0);
/// World units per sprite pixel of the tank sprites.
const TANK_UNITS_PER_PIXEL: f32 = 0.5;
/// The outline sprite against the hull's: 4 px around its 80×60.
const OUTLINE_OVER_HULL: Vec2 = Vec2::new(88.0 / 80.0, 68.0 / 60.0);
/// The rail sprite's height against its curb's (the curb spans 44 of its 64 px).
const RAIL_OVER_CURB: f32 = 64.0 / 44.0;
/// The ramp sprite's width, px: a run's cells share it out from the foot up.
const RAMP_SPRITE_WIDTH: f32 = 256.0;
/// How long a tracer shows.
const TRACER_LIFE: f32 = 0.18;
/// How long an explosion shows.
const BLAST_LIFE: f32 = 0.45;
/// How visible a tank's name and health are while a slab hides the tank.
const HIDDEN_LABEL_ALPHA: f32 = 0.45;
/// How visible the outline of another player's tank is while a slab hides it.
const HIDDEN_OUTLINE_ALPHA: f32 = 0.6;

/// Entities drawn for the match, by snapshot id, and the map's levels.
#[derive(Resource, Debug, Default)]
struct Drawn {
    map_version: u64,
    /// The host's `mapScale` the map was drawn at.
    scale: f32,
    /// The map's levels, as the host builds them.
    levels: Option<MapLevels>,
    map_entities: Vec<Entity>,
    tanks: BTreeMap<u32, TankView>,
    /// Each tank's `(level, z)` this frame (for the bombs their owners fire).
    tank_levels: BTreeMap<u32, (u8, f32)>,
    crates: BTreeMap<u32, BodyView>,
    bombs: BTreeMap<u32, (Entity, u8)>,
    crate_sizes: Vec<(f32, f32)>,
    /// Where the host's schema keeps the game's fields, looked up once per map
    /// (`rows_map`: the map version it was looked up at).
    rows: Option<Rows>,
    rows_map: Option<u64>,
    /// While the player's own tank is under a slab: where it is and the band it is drawn in.
    see_through: Option<([f32; 2], u8)>,
    /// The tanks' names this frame: where (Bevy's world), what, and how visible; the player's
    /// own with its tank's centre and reach, for the mark around it.
    names: Vec<(Vec2, String, f32, Option<(Vec2, f32)>)>,
}

#[derive(Debug, Clone, Copy)]
struct TankView {
    root: Entity,
    hull: Entity,
    turret: Entity,
    shadow: Entity,
    outline: Entity,
    bar: Entity,
    back: Entity,
}

/// A body with its shadow (a crate).
#[derive(Debug, Clone, Copy)]
struct BodyView {
    root: Entity,
    body: Entity,
    shadow: Entity,
}

/// A piece of a slab above the ground: see-through around the player's own tank under it.
#[derive(Component, Debug)]
struct SlabPiece {
    level: u8,
    center: [f32; 2],
    /// Its own opacity.
    alpha: f32,
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

/// The host's `mapScale`, from the game's config (1 when it does not say).
fn map_scale(config: Option<&serde_json::Value>) -> f32 {
    let scale = config.and_then(|c| c["engine"]["mapScale"].as_f64()).map_or(1.0, |s| s as f32);
    if scale.is_finite() && scale > 0.0 { scale } else { 1.0 }
}

fn rebuild_map(
    mut commands: Commands,
    mut drawn: ResMut<Drawn>,
    mut active: ResMut<ActiveMatch>,
    sprites: Res<Sprites>,
) {
    let m = active.get();
    let scale = map_scale(m.client().config());
    if drawn.rows_map != Some(m.map_version)
        && let Some(schema) = m.client().schema()
    {
        drawn.rows = Rows::of(schema).map_err(|e| tracing::warn!("the host's rows cannot be drawn: {e}")).ok();
        drawn.rows_map = Some(m.map_version);
    }
    if m.map_version == drawn.map_version && scale == drawn.scale {
        return;
    }
    drawn.map_version = m.map_version;
    drawn.scale = scale;
    drawn.levels = None;
    for e in drawn.map_entities.drain(..) {
        commands.entity(e).despawn();
    }
    for (_, view) in std::mem::take(&mut drawn.crates) {
        commands.entity(view.root).despawn();
    }
    let Some(map) = &m.map else { return };
    let levels = MapLevels::new(map, scale);
    drawn.map_entities = levels::map_pieces(map, &levels, scale)
        .iter()
        .map(|piece| spawn_piece(&mut commands, &sprites, piece))
        .collect();
    drawn.crate_sizes = map.physics_dynamic.iter().map(|c| (c.width * scale, c.height * scale)).collect();
    drawn.levels = Some(levels);
}

/// Draws one piece of the map.
fn spawn_piece(commands: &mut Commands, sprites: &Sprites, piece: &Piece) -> Entity {
    let size = Vec2::from(piece.size);
    let image = |image: &Handle<Image>, alpha: f32| Sprite {
        image: image.clone(),
        custom_size: Some(size),
        color: Color::srgba(1.0, 1.0, 1.0, alpha),
        ..default()
    };
    let sprite = match piece.look {
        Look::Floor => image(&sprites.floor, 1.0),
        Look::Wall => image(&sprites.wall, 1.0),
        Look::Deck => image(&sprites.deck, 1.0),
        Look::Rail(_) => image(&sprites.rail, 1.0),
        Look::Skirt => {
            Sprite { custom_size: Some(Vec2::new(size.x, size.y * RAIL_OVER_CURB)), ..image(&sprites.rail, 1.0) }
        }
        Look::Lip(dc, dr) => {
            // Lit from the top-left: the north and west lips catch the light, the others are in shade.
            let color = if dc < 0 || dr < 0 {
                Color::srgba(0.86, 0.88, 0.92, 0.7)
            } else {
                Color::srgba(0.04, 0.04, 0.06, 0.75)
            };
            Sprite::from_color(color, size)
        }
        Look::Ramp { k, len } => {
            let w = RAMP_SPRITE_WIDTH / len.max(1) as f32;
            Sprite { rect: Some(Rect::new(w * k as f32, 0.0, w * (k + 1) as f32, 64.0)), ..image(&sprites.ramp, 1.0) }
        }
        Look::Shadow { alpha, shape: ShadowShape::Square } => {
            Sprite::from_color(Color::srgba(0.0, 0.0, 0.0, alpha), size)
        }
        Look::Shadow { alpha, shape: ShadowShape::Rail(_) } => {
            Sprite { color: Color::srgba(0.0, 0.0, 0.0, alpha), ..image(&sprites.rail, alpha) }
        }
        Look::Spawn(team) => {
            let [r, g, b] = super::hud::team_rgb(team);
            Sprite { color: Color::srgba(r, g, b, 0.8), ..image(&sprites.spawn, 0.8) }
        }
    };
    let alpha = sprite.color.alpha();
    let mut e = commands.spawn((
        sprite,
        Transform::from_translation(world(piece.center[0], piece.center[1], piece.z)).with_rotation(turn(piece.angle)),
        MatchDrawing,
    ));
    if piece.is_slab() {
        e.insert(SlabPiece { level: piece.level, center: piece.center, alpha });
    }
    e.id()
}

/// The tank model's hull size, from the game's config.
fn hull_size(config: Option<&serde_json::Value>) -> Vec2 {
    let tank = config.map(|c| &c["game"]["models"]["tank"]);
    let get = |k: &str, d: f32| tank.and_then(|t| t[k].as_f64()).map_or(d, |v| v as f32);
    Vec2::new(get("length", 40.0), get("width", 30.0))
}

/// The names of the players, from the stat table.
fn names(m: &crate::window::net::MatchState) -> BTreeMap<u32, String> {
    m.stat
        .rows
        .iter()
        .filter(|((t, _), _)| *t == 0)
        .map(|((_, id), (_, c))| (*id, c.first().map(ToString::to_string).unwrap_or_default()))
        .collect()
}

fn spawn_tank(commands: &mut Commands, sprites: &Sprites, hull: Vec2, team: u8) -> TankView {
    let [r, g, b] = super::hud::team_rgb(team);
    let sprite = |image: &Handle<Image>, size: Vec2, color: Color| Sprite {
        image: image.clone(),
        custom_size: Some(size),
        color,
        ..default()
    };
    let shadow =
        commands.spawn((sprite(&sprites.hull, hull, Color::srgba(0.0, 0.0, 0.0, 0.4)), Transform::default())).id();
    let hull_e = commands.spawn((sprite(&sprites.hull, hull, Color::srgb(r, g, b)), Transform::default())).id();
    let turret_color = Color::srgb(r * 0.85 + 0.1, g * 0.85 + 0.1, b * 0.85 + 0.1);
    let turret = commands
        .spawn((
            sprite(&sprites.turret, Vec2::new(64.0, 24.0) * TANK_UNITS_PER_PIXEL, turret_color),
            Anchor(TURRET_PIVOT),
            Transform::from_xyz(0.0, 0.0, 0.02),
        ))
        .id();
    let outline = commands
        .spawn((
            sprite(&sprites.outline, hull * OUTLINE_OVER_HULL, Color::srgba(1.0, 1.0, 1.0, 0.9)),
            Transform::default(),
            Visibility::Hidden,
        ))
        .id();
    let bar = commands
        .spawn((
            Sprite::from_color(Color::srgb(0.4, 0.9, 0.4), Vec2::new(36.0, 4.0)),
            Anchor::CENTER_LEFT,
            Transform::default(),
        ))
        .id();
    let back = commands
        .spawn((Sprite::from_color(Color::srgba(0.0, 0.0, 0.0, 0.6), Vec2::new(38.0, 6.0)), Transform::default()))
        .id();
    let root = commands
        .spawn((Transform::default(), Visibility::default(), MatchDrawing))
        .add_children(&[shadow, hull_e, turret, outline, bar, back])
        .id();
    TankView { root, hull: hull_e, turret, shadow, outline, bar, back }
}

/// Puts a body's shadow (a child of a root at depth `root_z`) where its look says.
fn place_shadow(t: &mut Transform, look: &BodyLook, root_z: f32, shadow_depth: f32, angle: f32) {
    let [dx, dy] = look.shadow_offset;
    *t = Transform::from_xyz(dx, -dy, band(look.shadow_level) + shadow_depth - root_z)
        .with_rotation(turn(angle))
        .with_scale(Vec3::splat(look.shadow_scale));
}

fn sync_tanks(
    mut commands: Commands,
    mut drawn: ResMut<Drawn>,
    mut active: ResMut<ActiveMatch>,
    sprites: Res<Sprites>,
    mut transforms: Query<&mut Transform>,
    mut colors: Query<&mut Sprite>,
    mut shown: Query<&mut Visibility>,
) {
    let m = active.get();
    let Some(schema) = m.client().schema().cloned() else { return };
    let drawn = &mut *drawn;
    drawn.see_through = None;
    drawn.tank_levels.clear();
    drawn.names.clear();
    let (Some(levels), Some(Rows { tanks: t, .. })) = (drawn.levels.as_ref(), drawn.rows.as_ref()) else { return };
    let names = names(m);
    let hull = hull_size(m.client().config());
    let local = m.player_id();
    let (local_motion, local_level) = (m.local_tank(), m.local_level());
    let empty = BTreeMap::new();
    let rows = schema.id_of("m1").and_then(|k| m.sample.hot.get(&k)).unwrap_or(&empty);
    let gone: Vec<u32> = drawn.tanks.keys().filter(|id| !rows.contains_key(id)).copied().collect();
    for id in gone {
        if let Some(v) = drawn.tanks.remove(&id) {
            commands.entity(v.root).despawn();
        }
    }
    for (&pid, row) in rows {
        let view = *drawn.tanks.entry(pid).or_insert_with(|| spawn_tank(&mut commands, &sprites, hull, t.team.u8(row)));
        let (mut x, mut y, mut angle, mut gun) = (t.x.f32(row), t.y.f32(row), t.angle.f32(row), t.gun.f32(row));
        let (mut level, mut z) = t.level(row);
        let mine = Some(pid) == local;
        if mine && let Some(p) = local_motion.map(Motion::from_state) {
            (x, y, angle, gun) = (p.x, p.y, p.angle, p.gun);
            (level, z) = local_level.unwrap_or((level, z));
        }
        drawn.tank_levels.insert(pid, (level, z));
        let look = body_look(levels, level, z);
        // Hidden once a slab comes within half its width of its centre.
        let hidden = covered(levels, look.band, [x, y], hull.y * look.scale / 2.0);
        if mine && hidden {
            drawn.see_through = Some(([x, y], look.band));
        }
        let root_z = band(look.band) + depth::TANK;
        let scale = Vec3::splat(look.scale);
        if let Ok(mut t) = transforms.get_mut(view.root) {
            t.translation = world(x, y, root_z);
        }
        if let Ok(mut t) = transforms.get_mut(view.hull) {
            *t = Transform::from_rotation(turn(angle)).with_scale(scale);
        }
        if let Ok(mut t) = transforms.get_mut(view.turret) {
            *t = Transform::from_xyz(0.0, 0.0, 0.02).with_rotation(turn(angle + gun)).with_scale(scale);
        }
        if let Ok(mut t) = transforms.get_mut(view.shadow) {
            place_shadow(&mut t, &look, root_z, depth::TANK_SHADOW, angle);
        }
        if let Ok(mut s) = colors.get_mut(view.shadow) {
            s.color.set_alpha(look.shadow_alpha);
        }
        // A tank under a slab is outlined above every level: the player's own boldly, others
        // faintly in their team's colour.
        if let Ok(mut t) = transforms.get_mut(view.outline) {
            *t = Transform::from_xyz(0.0, 0.0, levels::OUTLINE_Z - root_z).with_rotation(turn(angle)).with_scale(scale);
        }
        if let Ok(mut v) = shown.get_mut(view.outline) {
            v.set_if_neq(if hidden { Visibility::Inherited } else { Visibility::Hidden });
        }
        if hidden && let Ok(mut s) = colors.get_mut(view.outline) {
            let [r, g, b] = super::hud::team_rgb(t.team.u8(row));
            let color =
                if mine { Color::srgba(1.0, 1.0, 1.0, 0.95) } else { Color::srgba(r, g, b, HIDDEN_OUTLINE_ALPHA) };
            if s.color != color {
                s.color = color;
            }
        }
        // Its name and health over everything, fainter while a slab hides it.
        let lift = hull.y * look.scale;
        let label_alpha = if hidden { HIDDEN_LABEL_ALPHA } else { 1.0 };
        for (e, dx, dy, dz) in [(view.bar, -18.0, lift + 3.0, 0.0), (view.back, 0.0, lift + 3.0, -0.01)] {
            if let Ok(mut t) = transforms.get_mut(e) {
                t.translation = Vec3::new(dx, dy, z::LABEL + dz - root_z);
            }
        }
        let health = (f32::from(t.condition.u8(row)) / 100.0).clamp(0.0, 1.0);
        if let Ok(mut t) = transforms.get_mut(view.bar) {
            t.scale.x = health.max(0.001);
        }
        for (e, alpha) in [(view.bar, 1.0), (view.back, 0.6)] {
            if let Ok(mut s) = colors.get_mut(e)
                && s.color.alpha() != alpha * label_alpha
            {
                s.color.set_alpha(alpha * label_alpha);
            }
        }
        let name = names.get(&pid).cloned().unwrap_or_else(|| format!("#{pid}"));
        let center = world(x, y, 0.0).truncate();
        let own = mine.then_some((center, hull.x.max(hull.y) * look.scale * 0.75));
        drawn.names.push((center + Vec2::new(0.0, lift + 14.0), name, 0.9 * label_alpha, own));
    }
}

/// Paints each tank's name where the camera shows the point above it.
fn paint_names(
    mut contexts: EguiContexts,
    drawn: Res<Drawn>,
    camera: Query<(&Camera, &Transform), With<MainCamera>>,
) -> Result {
    let Ok((camera, at)) = camera.single() else { return Ok(()) };
    // The camera's transform as `follow_camera` left it this frame (it has no parent).
    let at = GlobalTransform::from(*at);
    let painter = contexts.ctx_mut()?.layer_painter(egui::LayerId::background());
    for (point, name, alpha, own) in &drawn.names {
        let Ok(p) = camera.world_to_viewport(&at, point.extend(0.0)) else { continue };
        let a = (alpha * 255.0).round() as u8;
        match own {
            // The player's own tank among its teammates: a gold ring around it, its name gold.
            Some((center, reach)) => {
                let (Ok(c), Ok(edge)) = (
                    camera.world_to_viewport(&at, center.extend(0.0)),
                    camera.world_to_viewport(&at, (*center + Vec2::new(*reach, 0.0)).extend(0.0)),
                ) else {
                    continue;
                };
                let gold = egui::Color32::from_rgba_unmultiplied(255, 215, 90, a);
                painter.circle_stroke(
                    egui::pos2(c.x, c.y),
                    (edge.x - c.x).abs().max(8.0),
                    egui::Stroke::new(2.5, gold),
                );
                let text = format!("{name} (you)");
                painter.text(
                    egui::pos2(p.x, p.y),
                    egui::Align2::CENTER_CENTER,
                    text,
                    egui::FontId::monospace(14.0),
                    gold,
                );
            }
            None => {
                let color = egui::Color32::from_white_alpha(a);
                painter.text(
                    egui::pos2(p.x, p.y),
                    egui::Align2::CENTER_CENTER,
                    name,
                    egui::FontId::monospace(13.0),
                    color,
                );
            }
        }
    }
    Ok(())
}

fn sync_crates(
    mut commands: Commands,
    mut drawn: ResMut<Drawn>,
    mut active: ResMut<ActiveMatch>,
    sprites: Res<Sprites>,
    mut transforms: Query<&mut Transform>,
    mut colors: Query<&mut Sprite>,
) {
    let m = active.get();
    let (Some(schema), Some(map)) = (m.client().schema(), m.map.as_ref()) else { return };
    let Some(block) = schema.by_name(&map.set_id) else { return };
    let fields = MapBodyFields::of(block);
    let Some(rows) = m.sample.hot.get(&block.id) else { return };
    let drawn = &mut *drawn;
    let Some(levels) = drawn.levels.as_ref() else { return };
    for (&i, row) in rows {
        let (w, h) = drawn.crate_sizes.get(i as usize).copied().unwrap_or((32.0, 32.0));
        let (x, y, a) = (fields.x.f32(row), fields.y.f32(row), fields.angle.f32(row));
        let (level, z) = fields.level(row);
        let look = body_look(levels, level, z);
        let view = *drawn.crates.entry(i).or_insert_with(|| {
            let sprite = |color| Sprite {
                image: sprites.crate_box.clone(),
                custom_size: Some(Vec2::new(w, h)),
                color,
                ..default()
            };
            let shadow = commands
                .spawn((Sprite::from_color(Color::srgba(0.0, 0.0, 0.0, 0.4), Vec2::new(w, h)), Transform::default()))
                .id();
            let body = commands.spawn((sprite(Color::WHITE), Transform::default())).id();
            let root = commands
                .spawn((Transform::default(), Visibility::default(), MatchDrawing))
                .add_children(&[shadow, body])
                .id();
            BodyView { root, body, shadow }
        });
        // The row's position is the crate's corner; it is drawn about its centre.
        let (s, c) = a.sin_cos();
        let center = [x + c * w / 2.0 - s * h / 2.0, y + s * w / 2.0 + c * h / 2.0];
        let root_z = band(look.band) + depth::CRATE;
        if let Ok(mut t) = transforms.get_mut(view.root) {
            t.translation = world(center[0], center[1], root_z);
        }
        if let Ok(mut t) = transforms.get_mut(view.body) {
            *t = Transform::from_rotation(turn(a)).with_scale(Vec3::splat(look.scale));
        }
        if let Ok(mut t) = transforms.get_mut(view.shadow) {
            place_shadow(&mut t, &look, root_z, depth::CRATE_SHADOW, a);
        }
        if let Ok(mut s) = colors.get_mut(view.shadow)
            && s.color.alpha() != look.shadow_alpha
        {
            s.color.set_alpha(look.shadow_alpha);
        }
    }
}

/// Bombs in flight: hot rows, drawn where the buffer blends them, on the level they fly on,
/// gone with their row.
fn sync_bombs(
    mut commands: Commands,
    mut drawn: ResMut<Drawn>,
    mut active: ResMut<ActiveMatch>,
    sprites: Res<Sprites>,
    mut transforms: Query<&mut Transform>,
) {
    let m = active.get();
    let Some(schema) = m.client().schema() else { return };
    let empty = BTreeMap::new();
    let bombs = schema.id_of("w2").and_then(|k| m.sample.hot.get(&k)).unwrap_or(&empty);
    let drawn = &mut *drawn;
    let gone: Vec<u32> = drawn.bombs.keys().filter(|id| !bombs.contains_key(id)).copied().collect();
    for id in gone {
        if let Some((e, _)) = drawn.bombs.remove(&id) {
            commands.entity(e).despawn();
        }
    }
    let (Some(levels), Some(Rows { bombs: b, .. })) = (drawn.levels.as_ref(), drawn.rows.as_ref()) else { return };
    for (bid, row) in bombs {
        let (x, y) = (b.x.f32(row), b.y.f32(row));
        let owner = drawn.tank_levels.get(&b.owner.u32(row)).copied();
        let level = bomb_level(levels, drawn.bombs.get(bid).map(|b| b.1), owner, [x, y]);
        let size = b.size.f32(row).max(6.0);
        let (e, _) = *drawn.bombs.entry(*bid).or_insert_with(|| {
            let sprite =
                Sprite { image: sprites.bomb.clone(), custom_size: Some(Vec2::splat(size * 2.0)), ..default() };
            (commands.spawn((sprite, Transform::default(), MatchDrawing)).id(), level)
        });
        drawn.bombs.insert(*bid, (e, level));
        if let Ok(mut t) = transforms.get_mut(e) {
            t.translation = world(x, y, band(level) + depth::BOMB);
            t.rotation = turn(b.angle.f32(row));
        }
    }
}

/// Events: tracers and blasts are effects, over every level.
fn spawn_effects(
    mut commands: Commands,
    mut active: ResMut<ActiveMatch>,
    sprites: Res<Sprites>,
    time: Res<Time>,
    mut sounds: ResMut<crate::window::sound::SoundQueue>,
    drawn: Res<Drawn>,
) {
    let m = active.get();
    let (Some(schema), Some(Rows { tracers: t, blasts: b, .. })) = (m.client().schema(), drawn.rows.as_ref()) else {
        return;
    };
    let (tracers_key, blasts_key) = (schema.id_of("w1"), schema.id_of("w2e"));
    let now = time.elapsed_secs();
    for frame in &m.sample.events {
        for (key, block) in &frame.blocks {
            let key = Some(*key);
            if key == tracers_key
                && let Block::List16(rows) = block
            {
                for row in rows {
                    let (from, to) = ([t.start_x.f32(row), t.start_y.f32(row)], [t.end_x.f32(row), t.end_y.f32(row)]);
                    spawn_tracer(&mut commands, &sprites, from, to, now);
                    sounds.0.push(("shot".into(), Some(from)));
                }
            } else if key == blasts_key
                && let Block::List16(rows) = block
            {
                for row in rows {
                    let at = [b.x.f32(row), b.y.f32(row)];
                    sounds.0.push(("blast".into(), Some(at)));
                    commands.spawn((
                        Sprite {
                            image: sprites.explosion.clone(),
                            custom_size: Some(Vec2::splat(b.radius.f32(row).max(8.0) * 2.0)),
                            ..default()
                        },
                        Transform::from_translation(world(at[0], at[1], z::BLAST)),
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

/// While the player's own tank is under a slab, the slabs above it turn see-through around it.
fn see_through_slabs(drawn: Res<Drawn>, mut slabs: Query<(&SlabPiece, &mut Sprite)>) {
    let Some(levels) = drawn.levels.as_ref() else { return };
    let t = levels.tile_size();
    for (piece, mut sprite) in &mut slabs {
        let keep = match drawn.see_through {
            Some((tank, band)) if piece.level > band => see_through(t, piece.center, tank),
            _ => 1.0,
        };
        let alpha = piece.alpha * keep;
        if (sprite.color.alpha() - alpha).abs() > 0.004 {
            sprite.color.set_alpha(alpha);
        }
    }
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
    drawn: Res<Drawn>,
    mut camera: Query<&mut Transform, With<MainCamera>>,
    windows: Query<&Window>,
) {
    let m = active.get();
    let Ok(mut cam) = camera.single_mut() else { return };
    // The map's size in world units.
    let size = drawn.levels.as_ref().map(|l| {
        let (cols, rows) = l.grid_size();
        (cols as f32 * l.tile_size(), rows as f32 * l.tile_size())
    });
    let target = m
        .local_tank()
        .or_else(|| m.client().last_frame().and_then(|f| f.player).map(|p| p.state))
        .map(Motion::from_state)
        .map(|s| (s.x, s.y))
        .or_else(|| size.map(|(w, h)| (w / 2.0, h / 2.0)));
    let Some((x, y)) = target else { return };
    // Keep the view inside the map when the map is larger than the window.
    let (mut x, mut y) = (x, y);
    if let (Some((w, h)), Ok(window)) = (size, windows.single()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_scale_comes_from_the_engine_config_and_defaults_to_one() {
        assert_eq!(map_scale(None), 1.0);
        assert_eq!(map_scale(Some(&serde_json::json!({ "engine": { "mapScale": 0.5 } }))), 0.5);
        assert_eq!(map_scale(Some(&serde_json::json!({ "engine": { "mapScale": -2 } }))), 1.0);
    }
}
