//! Maps: the JSON format ([`MapConfig`]), its validation ([`MapError`]) and the map's physics bodies ([`GameMap`]).
//!
//! A map is a JSON file (`maps/README.md` documents every field with an example): a
//! tile grid with the ids of the wall tiles, movable boxes, respawn points per
//! team, render layers and opaque `game` data. A layered (2.5D) map adds levels above the
//! ground (`levels`), ramps between them (`ramps`) and the height of a level
//! (`levelHeight`); its boxes and respawn points may name their level. [`MapLevels`] holds
//! that geometry, and [`bodies`] the rules bodies live by on it (collision groups per level,
//! ramp guards, falls).
//!
//! ```text
//!  text ──MapConfig::from_json──► MapConfig ──GameMap::create(cfg, mapScale, world)──► GameMap + bodies
//!        (parse + validate:          (raw form,        static walls merged into blocks (fixed bodies),
//!         every broken rule,          map units)       physicsDynamic[i] → dynamic body, tag i
//!         file:field: reason)
//! ```
//!
//! # Units and coordinates
//!
//! The map file is in **map units**; the engine's `mapScale` multiplies every length
//! (tile size, object corners and sizes, respawn points) when [`GameMap`] is built, and
//! everything [`GameMap`] returns is in **world units** (scaled). `game` data is never
//! scaled. x grows right (columns), y grows down (rows); tile `(col, row)` covers
//! `[col·t, (col+1)·t) × [row·t, (row+1)·t)` for the tile size `t`. Angles in the file
//! are degrees everywhere (file and [`GameMap::respawns`]); rapier bodies get radians. A
//! positive angle turns +x towards +y.
//!
//! # Bodies
//!
//! * Each merged wall block ([`merge_static`]) is one fixed body at the block's centre
//!   with one cuboid collider; body and collider carry `user_data` [`MAP_OBJECT_TAG`].
//! * `physicsDynamic[i]` is one dynamic body whose translation is the object's **corner**
//!   (as in the map data) and whose rotation is its angle; its cuboid collider is offset by
//!   half the size, so at angle 0 it covers `[x, x + w] × [y, y + h]`. Body and collider
//!   carry `user_data` [`encode_map_object_at`]`(i)`; the body predicts contacts over its
//!   own thickness (`soft_ccd_prediction(min(w, h))`) and is damped like a box sliding on
//!   a floor (top-down worlds have no gravity).
//! * Materials: [`DEFAULT_FRICTION`], [`DEFAULT_RESTITUTION`], [`DYNAMIC_DENSITY`],
//!   [`DYNAMIC_LINEAR_DAMPING`], [`DYNAMIC_ANGULAR_DAMPING`]. A flat map sets no collision
//!   groups (every collider stays in `Group::ALL`).
//! * A layered map also builds, after the ground's blocks, each level's rails merged into
//!   blocks the same way (level by level, from 1 up), then the ramps' guards
//!   ([`ramp_guards`]), all fixed bodies tagged [`MAP_OBJECT_TAG`]; every map collider gets
//!   its level's collision groups ([`bodies`]), a box those of the level it stands on.
//!
//! Map bodies belong to the engine: a game must never remove one (disable it instead);
//! the engine calls [`GameMap::remove`] before it loads the next map.
//!
//! [`MAP_OBJECT_TAG`]: crate::engine::tags::MAP_OBJECT_TAG
//! [`encode_map_object_at`]: crate::engine::tags::encode_map_object_at

mod binary;
pub mod bodies;
mod config;
mod error;
pub mod levels;
pub mod load;
mod merge;
pub mod state;

use indexmap::IndexMap;
use rapier2d::math::Vector;
use rapier2d::prelude::{
    ColliderBuilder, InteractionGroups, PhysicsWorld, RigidBodyBuilder, RigidBodyHandle, RigidBodyType,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::engine::tags::{MAP_OBJECT_TAG, encode_map_object_at, map_object_index};

pub use bodies::{
    FallModel, LevelState, LevelStep, RampGuard, body_filter, level_interaction, levels_interaction,
    levels_interaction_on_ramp, ramp_guards, ramp_rail_span, step_body_level,
};
pub use config::{
    DEFAULT_SET_ID, DynamicObjectConfig, LevelConfig, MAX_DYNAMIC_OBJECTS, MAX_GRID_SIDE, MAX_SET_ID_LEN, MapConfig,
    RampConfig, RampDir,
};
pub use error::{MAX_ISSUES, MapError, MapIssue, MapRule};
pub use levels::{
    Axis, MAX_LEVELS, MapLevels, RULE_CASES, RampBlock, RampRun, RampSample, RuleCase, Surface, rule_cases,
    validate_levels,
};
pub use merge::{TileRect, merge_static};

use binary::GameMapBinary;
use merge::SolidGrid;

/// Friction of every map collider (walls and dynamic objects); rapier combines two
/// colliders' coefficients by their average.
pub const DEFAULT_FRICTION: f32 = 0.5;

/// Restitution (bounciness) of every map collider: a slight bump, no real bounce.
pub const DEFAULT_RESTITUTION: f32 = 0.1;

/// Density of dynamic objects' colliders: a box's mass is its area in world units².
pub const DYNAMIC_DENSITY: f32 = 1.0;

/// Linear damping of dynamic objects, per second: the floor's drag on a pushed box.
/// Each step scales the velocity by `1 / (1 + dt · 4)`, so at 120 Hz a box keeps about
/// 2 % of its speed after one second.
pub const DYNAMIC_LINEAR_DAMPING: f32 = 4.0;

/// Angular damping of dynamic objects, per second (same law as the linear damping).
pub const DYNAMIC_ANGULAR_DAMPING: f32 = 4.0;

/// A rectangle in world units: `[x, x + width] × [y, y + height]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldRect {
    /// Left edge.
    pub x: f32,
    /// Top edge.
    pub y: f32,
    /// Width.
    pub width: f32,
    /// Height.
    pub height: f32,
}

impl WorldRect {
    /// The centre point `(x + width / 2, y + height / 2)`.
    pub fn center(&self) -> (f32, f32) {
        (self.x + self.width / 2.0, self.y + self.height / 2.0)
    }
}

/// One merged block of wall tiles: its tiles and the world rectangle they cover.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StaticBlock {
    /// The tiles, from [`merge_static`].
    pub tiles: TileRect,
    /// The same rectangle in world units (scaled).
    pub world: WorldRect,
}

/// A loaded map: its config, its derived geometry in world units and the handles of the
/// rapier bodies it built.
///
/// Its serde form is meant for state dumps (bincode): the config with its numbers bit
/// for bit, the scale, and the body handles, which stay valid with the rapier world
/// dumped next to it. Everything derived (blocks, solid grid, scaled respawns) is rebuilt
/// on deserialisation by the same code, so it is identical; a dump whose handles do not
/// match its map fails to deserialise with [`MapError::Dump`]. After restoring both,
/// [`verify_bodies`](Self::verify_bodies) checks the handles against the world.
#[derive(Clone, Debug, PartialEq)]
pub struct GameMap {
    config: MapConfig,
    scale: f32,
    tile_size: f32,
    world_size: (f32, f32),
    grid: SolidGrid,
    levels: MapLevels,
    respawns: IndexMap<String, Vec<[f32; 3]>>,
    respawn_levels: IndexMap<String, Vec<u8>>,
    static_bodies: Vec<RigidBodyHandle>,
    dynamic_bodies: Vec<RigidBodyHandle>,
}

impl GameMap {
    /// Builds the map's bodies into `world` and returns the map.
    ///
    /// `cfg` is validated first ([`MapConfig::validate`], errors labelled with the map's
    /// `name`), then `scale` (the engine's `mapScale`) must be a finite number greater than
    /// 0 that keeps every scaled size finite and non-zero ([`MapError::BadScale`]). On any
    /// error `world` is left untouched.
    ///
    /// Bodies are inserted in a fixed order: static blocks in [`merge_static`] order, then
    /// `physicsDynamic` in index order, so the same world and map give the same handles.
    pub fn create(cfg: &MapConfig, scale: f32, world: &mut PhysicsWorld) -> Result<GameMap, MapError> {
        let label = if cfg.name.trim().is_empty() { "map" } else { cfg.name.as_str() };
        cfg.validate(label)?;
        let mut map = GameMap::layout(cfg.clone(), scale)?;
        let layered = map.levels.is_layered();
        let mut fixed = |rect: &WorldRect, groups: Option<InteractionGroups>| {
            let (cx, cy) = rect.center();
            let (hx, hy) = (rect.width / 2.0, rect.height / 2.0);
            let body = RigidBodyBuilder::fixed().translation(Vector::new(cx, cy)).user_data(MAP_OBJECT_TAG);
            let mut collider = ColliderBuilder::cuboid(hx, hy)
                .friction(DEFAULT_FRICTION)
                .restitution(DEFAULT_RESTITUTION)
                .user_data(MAP_OBJECT_TAG);
            if let Some(groups) = groups {
                collider = collider.collision_groups(groups);
            }
            world.insert(body, collider).0
        };
        for n in map.levels.levels().collect::<Vec<_>>() {
            let groups = layered.then(|| bodies::wall_interaction(n));
            for block in map.levels.static_blocks(n) {
                map.static_bodies.push(fixed(&block.world, groups));
            }
        }
        for guard in ramp_guards(&map.levels) {
            map.static_bodies.push(fixed(&guard.rect, Some(bodies::guard_interaction(guard.from))));
        }
        for (i, object) in cfg.physics_dynamic.iter().enumerate() {
            let placed = Placed::of(object, scale);
            let (body, mut collider) = dynamic_box(i, placed.corner, placed.angle, placed.width, placed.height);
            if layered {
                collider = collider.collision_groups(level_interaction(object.level.unwrap_or(0)));
            }
            map.dynamic_bodies.push(world.insert(body, collider).0);
        }
        Ok(map)
    }

    /// How many fixed bodies [`create`](Self::create) builds: every level's wall blocks, then
    /// the ramps' guards.
    fn static_body_count(&self) -> usize {
        self.levels.levels().map(|n| self.levels.static_blocks(n).len()).sum::<usize>()
            + ramp_guards(&self.levels).len()
    }

    /// Everything but the bodies: scaled geometry derived from a valid config.
    fn layout(config: MapConfig, scale: f32) -> Result<GameMap, MapError> {
        let bad_scale = MapError::BadScale { scale };
        let fine = |v: f32| v.is_finite();
        let positive = |v: f32| v.is_finite() && v > 0.0;
        if !positive(scale) {
            return Err(bad_scale);
        }
        let grid = SolidGrid::new(&config.map, &config.physics_static);
        let tile_size = config.tile_size * scale;
        let world_size = (grid.cols() as f32 * tile_size, grid.rows() as f32 * tile_size);
        if !positive(tile_size) || !fine(world_size.0) || !fine(world_size.1) {
            return Err(bad_scale);
        }
        for object in &config.physics_dynamic {
            let p = Placed::of(object, scale);
            if !fine(p.corner.x) || !fine(p.corner.y) || !positive(p.width) || !positive(p.height) {
                return Err(bad_scale);
            }
        }
        let levels = MapLevels::new(&config, scale);
        let mut respawns = IndexMap::with_capacity(config.respawns.len());
        let mut respawn_levels = IndexMap::with_capacity(config.respawns.len());
        for (team, points) in &config.respawns {
            let of = |p: &Vec<f32>| config.respawn_level(p).unwrap_or(0);
            respawn_levels.insert(team.clone(), points.iter().map(of).collect());
            let scaled: Vec<[f32; 3]> = points
                .iter()
                .map(|p| {
                    let n = |k: usize| p.get(k).copied().unwrap_or(0.0);
                    [n(0) * scale, n(1) * scale, n(2)]
                })
                .collect();
            if scaled.iter().flatten().any(|v| !v.is_finite()) {
                return Err(bad_scale);
            }
            respawns.insert(team.clone(), scaled);
        }
        if !positive(levels.level_height()) {
            return Err(bad_scale);
        }
        Ok(GameMap {
            config,
            scale,
            tile_size,
            world_size,
            grid,
            levels,
            respawns,
            respawn_levels,
            static_bodies: Vec::new(),
            dynamic_bodies: Vec::new(),
        })
    }

    /// Removes every body this map built from `world` and forgets their handles.
    ///
    /// Calling it twice is harmless (the second call has nothing to remove). The map's
    /// config and geometry stay readable; [`dynamic_handle`](Self::dynamic_handle) returns
    /// `None` afterwards.
    pub fn remove(&mut self, world: &mut PhysicsWorld) {
        for handle in self.static_bodies.drain(..).chain(self.dynamic_bodies.drain(..)) {
            world.remove_body(handle);
        }
    }

    /// Checks that every handle of this map names a body of `world` of the right type
    /// carrying the right tag (use it after restoring a dump); the first mismatch is a
    /// [`MapError::Dump`].
    pub fn verify_bodies(&self, world: &PhysicsWorld) -> Result<(), MapError> {
        let wrong = |what: String| Err(MapError::Dump { reason: what });
        for (n, &handle) in self.static_bodies.iter().enumerate() {
            match world.bodies.get(handle) {
                Some(b) if b.body_type() == RigidBodyType::Fixed && b.user_data == MAP_OBJECT_TAG => {}
                Some(_) => return wrong(format!("static block {n}'s body is not a tagged fixed body")),
                None => return wrong(format!("static block {n}'s body is missing from the world")),
            }
        }
        for (i, &handle) in self.dynamic_bodies.iter().enumerate() {
            match world.bodies.get(handle) {
                Some(b) if b.body_type() == RigidBodyType::Dynamic && b.user_data == encode_map_object_at(i) => {}
                Some(_) => return wrong(format!("physicsDynamic[{i}]'s body is not a dynamic body with its tag")),
                None => return wrong(format!("physicsDynamic[{i}]'s body is missing from the world")),
            }
        }
        Ok(())
    }

    /// The config the map was built from (map units).
    pub fn config(&self) -> &MapConfig {
        &self.config
    }

    /// The map's name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The snapshot key of the map's dynamic bodies (`setId`).
    pub fn set_id(&self) -> &str {
        &self.config.set_id
    }

    /// The `mapScale` the map was built with.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// World units per tile (`tileSize · mapScale`).
    pub fn tile_size(&self) -> f32 {
        self.tile_size
    }

    /// Grid size in tiles: `(columns, rows)`.
    pub fn grid_size(&self) -> (usize, usize) {
        (self.grid.cols(), self.grid.rows())
    }

    /// World size: `(columns · tile_size, rows · tile_size)`.
    pub fn world_size(&self) -> (f32, f32) {
        self.world_size
    }

    /// Whether the world point `(x, y)` is on a wall tile; anything outside the map (and
    /// NaN) counts as solid.
    pub fn is_solid_at(&self, x: f32, y: f32) -> bool {
        match self.tile_of(x, y) {
            Some((col, row)) => self.grid.is_solid(col, row),
            None => true,
        }
    }

    /// Whether tile `(col, row)` is a wall; `false` outside the grid.
    pub fn is_solid_tile(&self, col: usize, row: usize) -> bool {
        self.grid.is_solid(col, row)
    }

    /// The tile id under the world point `(x, y)`; `None` outside the map.
    pub fn tile_at(&self, x: f32, y: f32) -> Option<u16> {
        let (col, row) = self.tile_of(x, y)?;
        self.config.map.get(row)?.get(col).copied()
    }

    fn tile_of(&self, x: f32, y: f32) -> Option<(usize, usize)> {
        let (col, row) = ((x / self.tile_size).floor(), (y / self.tile_size).floor());
        // NaN fails both comparisons; casts saturate, so huge values land outside.
        if !(col >= 0.0 && row >= 0.0) {
            return None;
        }
        let (col, row) = (col as usize, row as usize);
        (col < self.grid.cols() && row < self.grid.rows()).then_some((col, row))
    }

    /// The ground's merged wall blocks, in [`merge_static`] order (tile and world
    /// rectangles); the rails of levels above it are [`MapLevels::static_blocks`].
    pub fn static_blocks(&self) -> &[StaticBlock] {
        self.levels.static_blocks(0)
    }

    /// The layered geometry: levels, ramps, landings (only the ground on a flat map).
    pub fn levels(&self) -> &MapLevels {
        &self.levels
    }

    /// The level the world point stands on by the map's geometry: the highest level whose
    /// floor is under it ([`MapLevels::level_at`]).
    pub fn level_at(&self, x: f32, y: f32) -> u8 {
        self.levels.level_at(x, y)
    }

    /// The fixed bodies: the ground's [`static_blocks`](Self::static_blocks) first, in the
    /// same order, then (on a layered map) each level's rail blocks and the ramps' guards;
    /// empty after [`remove`](Self::remove).
    pub fn static_handles(&self) -> &[RigidBodyHandle] {
        &self.static_bodies
    }

    /// The dynamic bodies, indexed like `physicsDynamic`; empty after [`remove`](Self::remove).
    pub fn dynamic_handles(&self) -> &[RigidBodyHandle] {
        &self.dynamic_bodies
    }

    /// Number of dynamic objects the map declares (`physicsDynamic.len()`).
    pub fn dynamic_count(&self) -> usize {
        self.config.physics_dynamic.len()
    }

    /// The body of `physicsDynamic[i]`; `None` past the end or after [`remove`](Self::remove).
    pub fn dynamic_handle(&self, i: usize) -> Option<RigidBodyHandle> {
        self.dynamic_bodies.get(i).copied()
    }

    /// The `physicsDynamic` index of a body, read from its tag: `None` when the body is not
    /// in `world`, is not a dynamic map body, or is not this map's.
    pub fn dynamic_index_of(&self, world: &PhysicsWorld, handle: RigidBodyHandle) -> Option<usize> {
        let i = map_object_index(world.bodies.get(handle)?.user_data)?;
        (self.dynamic_bodies.get(i) == Some(&handle)).then_some(i)
    }

    /// The map's opaque `game` object, as declared (never scaled).
    pub fn game_data(&self) -> Option<&Value> {
        self.config.game.as_ref()
    }

    /// The `game` object of `physicsDynamic[i]`, as declared.
    pub fn dynamic_game_data(&self, i: usize) -> Option<&Value> {
        self.config.physics_dynamic.get(i)?.game.as_ref()
    }

    /// Team name → respawn points `[x, y, angle]` in declaration order: `x`, `y` in world
    /// units (scaled), `angle` in **degrees**, as in the file (not scaled; convert with
    /// `to_radians` before handing it to rapier).
    pub fn respawns(&self) -> &IndexMap<String, Vec<[f32; 3]>> {
        &self.respawns
    }

    /// Team name → the level of each respawn point, in the order of
    /// [`respawns`](Self::respawns): its 4th number, else the level its geometry gives.
    pub fn respawn_levels(&self) -> &IndexMap<String, Vec<u8>> {
        &self.respawn_levels
    }

    /// The level `physicsDynamic[i]` starts on (0 past the end).
    pub fn dynamic_level(&self, i: usize) -> u8 {
        self.config.physics_dynamic.get(i).and_then(|o| o.level).unwrap_or(0)
    }

    /// The level states of the dynamic bodies when the map is loaded: each on its level.
    pub fn initial_dynamic_levels(&self) -> Vec<LevelState> {
        (0..self.dynamic_count()).map(|i| LevelState::on(self.dynamic_level(i))).collect()
    }

    /// The centre of `physicsDynamic[i]`'s box in `world` (its body sits on a corner).
    pub fn dynamic_center(&self, world: &PhysicsWorld, i: usize) -> Option<[f32; 2]> {
        let body = world.bodies.get(self.dynamic_handle(i)?)?;
        let collider = world.colliders.get(*body.colliders().first()?)?;
        let t = collider.position().translation;
        Some([t.x, t.y])
    }

    /// One fixed step of the dynamic bodies' levels (see [`bodies`]): each enabled body whose
    /// floor is gone falls to its landing level, meeting walls but no bodies on the way, and
    /// takes its new level's collision groups when it lands. Boxes do not ride ramps. A flat
    /// map has nothing to do. Returns how many bodies began to fall.
    pub fn step_dynamic_levels(
        &self,
        world: &mut PhysicsWorld,
        states: &mut [LevelState],
        fall: &FallModel,
        dt: f32,
    ) -> usize {
        if !self.levels.is_layered() {
            return 0;
        }
        let mut falls = 0;
        for (i, state) in states.iter_mut().enumerate().take(self.dynamic_count()) {
            let Some(handle) = self.dynamic_handle(i) else { continue };
            if !world.bodies.get(handle).is_some_and(|b| b.is_enabled()) {
                continue;
            }
            let Some(p) = self.dynamic_center(world, i) else { continue };
            if matches!(step_body_level(state, &self.levels, fall, dt, p, false), LevelStep::Fell { .. }) {
                falls += 1;
            }
            bodies::set_body_groups(world, handle, state.groups(&self.levels, p, false));
        }
        falls
    }

    fn from_dump(dump: GameMapBinary) -> Result<GameMap, MapError> {
        dump.config.validate("state dump")?;
        let mut map = GameMap::layout(dump.config, dump.scale)?;
        let removed = dump.static_bodies.is_empty() && dump.dynamic_bodies.is_empty();
        let whole = dump.static_bodies.len() == map.static_body_count()
            && dump.dynamic_bodies.len() == map.config.physics_dynamic.len();
        if !removed && !whole {
            return Err(MapError::Dump {
                reason: format!(
                    "{} static and {} dynamic handles for a map of {} blocks and {} objects",
                    dump.static_bodies.len(),
                    dump.dynamic_bodies.len(),
                    map.static_body_count(),
                    map.config.physics_dynamic.len()
                ),
            });
        }
        map.static_bodies = dump.static_bodies;
        map.dynamic_bodies = dump.dynamic_bodies;
        Ok(map)
    }
}

/// A dynamic object in world units.
struct Placed {
    corner: Vector,
    width: f32,
    height: f32,
    /// Radians.
    angle: f32,
}

/// The body and collider of the map's `index`-th movable box, `width × height` world units,
/// its corner at `corner` and turned by `angle` (rad) about it: a damped dynamic body whose
/// collider sits on its corner. The host's map and a client's predictor build their boxes
/// with this one rule, so a predicted box is pushed as the host's is.
pub fn dynamic_box(
    index: usize,
    corner: Vector,
    angle: f32,
    width: f32,
    height: f32,
) -> (RigidBodyBuilder, ColliderBuilder) {
    let tag = encode_map_object_at(index);
    let (hx, hy) = (width / 2.0, height / 2.0);
    let body = RigidBodyBuilder::dynamic()
        .translation(corner)
        .rotation(angle)
        .linear_damping(DYNAMIC_LINEAR_DAMPING)
        .angular_damping(DYNAMIC_ANGULAR_DAMPING)
        .soft_ccd_prediction(width.min(height))
        .user_data(tag);
    let collider = ColliderBuilder::cuboid(hx, hy)
        .translation(Vector::new(hx, hy))
        .density(DYNAMIC_DENSITY)
        .friction(DEFAULT_FRICTION)
        .restitution(DEFAULT_RESTITUTION)
        .user_data(tag);
    (body, collider)
}

impl Placed {
    fn of(object: &DynamicObjectConfig, scale: f32) -> Placed {
        Placed {
            corner: Vector::new(object.x * scale, object.y * scale),
            width: object.width * scale,
            height: object.height * scale,
            angle: object.angle.to_radians(),
        }
    }
}

impl Serialize for GameMap {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        GameMapBinary {
            config: self.config.clone(),
            scale: self.scale,
            static_bodies: self.static_bodies.clone(),
            dynamic_bodies: self.dynamic_bodies.clone(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for GameMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let dump = GameMapBinary::deserialize(deserializer)?;
        GameMap::from_dump(dump).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests;
