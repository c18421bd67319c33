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

pub mod bodies;
mod config;
mod dump;
mod error;
pub mod levels;
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

use dump::GameMapDump;
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

    fn from_dump(dump: GameMapDump) -> Result<GameMap, MapError> {
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
        GameMapDump {
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
        let dump = GameMapDump::deserialize(deserializer)?;
        GameMap::from_dump(dump).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::tags::is_map_object;

    /// 6×5 tiles of 10: a wall ring, one wall tile inside at (3, 2), two boxes.
    const SMALL: &str = r#"{
        "name": "small",
        "setId": "crates",
        "tileSize": 10,
        "map": [
            [1, 1, 1, 1, 1, 1],
            [1, 0, 0, 0, 0, 1],
            [1, 0, 0, 1, 0, 1],
            [1, 0, 0, 0, 0, 1],
            [1, 1, 1, 1, 1, 1]
        ],
        "physicsStatic": [1],
        "physicsDynamic": [
            { "x": 10, "y": 10, "width": 8, "height": 6, "game": { "hp": 3 } },
            { "x": 40, "y": 30, "width": 6, "height": 6, "angle": 90 }
        ],
        "respawns": { "1": [[15, 35, 90]], "2": [[45, 15, -180]] },
        "layers": { "floor": [0], "walls": [1] },
        "game": { "mode": "ctf" }
    }"#;

    fn small() -> MapConfig {
        MapConfig::from_json("small.json", SMALL).unwrap()
    }

    fn load(file: &str) -> MapConfig {
        let path = format!("{}/../maps/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        MapConfig::from_json(&path, &text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn new_world() -> PhysicsWorld {
        PhysicsWorld { gravity: Vector::ZERO, ..PhysicsWorld::default() }
    }

    fn close(a: f32, b: f32) -> bool {
        (a - b).abs() < 1e-4
    }

    #[test]
    fn the_shipped_default_map_loads() {
        let cfg = load("default.json");
        assert_eq!(cfg.tile_size, 32.0);
        assert_eq!((cfg.map[0].len(), cfg.map.len()), (48, 32));
        assert_eq!(cfg.respawns.keys().collect::<Vec<_>>(), ["1", "2"]);
        assert!(cfg.respawns.values().all(|points| points.len() >= 8), "8 points per team");
        assert!((36..=44).contains(&cfg.physics_dynamic.len()), "about 40 crates");
        assert!(cfg.physics_dynamic.iter().all(|o| (24.0..=32.0).contains(&o.width.min(o.height))));
        assert_eq!(cfg.layers.keys().collect::<Vec<_>>(), ["floor", "walls"]);
        let mut world = new_world();
        let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
        assert_eq!(world.bodies.len(), map.static_blocks().len() + cfg.physics_dynamic.len());
        assert_eq!(map.world_size(), (48.0 * 32.0, 32.0 * 32.0));
        // The outer ring is solid, so every side of the world is walled.
        for col in 0..48 {
            assert!(
                map.is_solid_at(col as f32 * 32.0 + 16.0, 16.0) && map.is_solid_at(col as f32 * 32.0 + 16.0, 1008.0)
            );
        }
    }

    #[test]
    fn the_shipped_test_map_loads() {
        let cfg = load("test-small.json");
        assert_eq!((cfg.map[0].len(), cfg.map.len()), (16, 12));
        assert_eq!(cfg.physics_dynamic.len(), 4);
        assert!(cfg.respawns.values().all(|points| points.len() == 2));
        let mut world = new_world();
        let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
        assert_eq!(world.bodies.len(), map.static_blocks().len() + 4);
    }

    #[test]
    fn the_readme_example_is_a_valid_map() {
        let path = format!("{}/../maps/README.md", env!("CARGO_MANIFEST_DIR"));
        let readme = std::fs::read_to_string(&path).unwrap();
        let start = readme.find("```json\n").expect("an example") + "```json\n".len();
        let end = start + readme[start..].find("```").unwrap();
        let cfg = MapConfig::from_json(&path, &readme[start..end]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cfg.physics_dynamic.len(), 2);
        let map = GameMap::create(&cfg, 1.0, &mut new_world()).unwrap();
        assert_eq!(map.static_blocks().len(), 5, "top, left, right, the inner 2×1 block, bottom");
    }

    #[test]
    fn static_blocks_are_merged_and_scaled() {
        let map = GameMap::create(&small(), 0.5, &mut new_world()).unwrap();
        let tiles: Vec<TileRect> = map.static_blocks().iter().map(|b| b.tiles).collect();
        let r = |col, row, cols, rows| TileRect { col, row, cols, rows };
        assert_eq!(tiles, vec![r(0, 0, 6, 1), r(0, 1, 1, 3), r(5, 1, 1, 3), r(3, 2, 1, 1), r(0, 4, 6, 1)]);
        // Tile 10 at scale 0.5 is 5 world units.
        assert_eq!(map.static_blocks()[1].world, WorldRect { x: 0.0, y: 5.0, width: 5.0, height: 15.0 });
        assert_eq!(map.static_blocks()[3].world, WorldRect { x: 15.0, y: 10.0, width: 5.0, height: 5.0 });
        assert_eq!(map.tile_size(), 5.0);
        assert_eq!(map.world_size(), (30.0, 25.0));
        assert_eq!(map.grid_size(), (6, 5));
    }

    #[test]
    fn create_builds_tagged_bodies_where_the_map_says() {
        let mut world = new_world();
        let map = GameMap::create(&small(), 1.0, &mut world).unwrap();
        assert_eq!(world.bodies.len(), 5 + 2);
        assert_eq!(world.colliders.len(), 5 + 2);
        for (block, &handle) in map.static_blocks().iter().zip(map.static_handles()) {
            let body = &world.bodies[handle];
            assert!(body.is_fixed());
            assert_eq!(body.user_data, MAP_OBJECT_TAG);
            let (cx, cy) = block.world.center();
            assert_eq!(body.translation(), Vector::new(cx, cy));
            let collider = &world.colliders[body.colliders()[0]];
            assert_eq!(collider.user_data, MAP_OBJECT_TAG);
            assert_eq!(collider.friction(), DEFAULT_FRICTION);
        }
        // The interior wall tile (3, 2) is the block centred at (35, 25).
        assert_eq!(world.bodies[map.static_handles()[3]].translation(), Vector::new(35.0, 25.0));

        let crate0 = &world.bodies[map.dynamic_handle(0).unwrap()];
        assert!(crate0.is_dynamic());
        assert_eq!(crate0.user_data, encode_map_object_at(0));
        assert_eq!(crate0.translation(), Vector::new(10.0, 10.0), "the body sits at the corner");
        assert_eq!(crate0.soft_ccd_prediction(), 6.0, "min(8, 6)");
        assert_eq!(crate0.linear_damping(), DYNAMIC_LINEAR_DAMPING);
        assert_eq!(crate0.angular_damping(), DYNAMIC_ANGULAR_DAMPING);
        let collider = &world.colliders[crate0.colliders()[0]];
        let aabb = collider.compute_aabb();
        assert_eq!(aabb.center(), Vector::new(14.0, 13.0), "corner + half the size");
        assert_eq!((aabb.mins, aabb.maxs), (Vector::new(10.0, 10.0), Vector::new(18.0, 16.0)));
        assert_eq!(collider.user_data, encode_map_object_at(0));
        assert_eq!(collider.restitution(), DEFAULT_RESTITUTION);
        assert!(close(collider.mass(), 48.0), "density 1: mass = area");

        // Turned 90° about its corner (40, 30), the 6×6 crate covers x 34..40, y 30..36.
        let crate1 = &world.bodies[map.dynamic_handle(1).unwrap()];
        assert_eq!(crate1.translation(), Vector::new(40.0, 30.0));
        assert!(close(crate1.rotation().angle(), std::f32::consts::FRAC_PI_2));
        let aabb = world.colliders[crate1.colliders()[0]].compute_aabb();
        assert!(close(aabb.mins.x, 34.0) && close(aabb.maxs.x, 40.0), "{aabb:?}");
        assert!(close(aabb.mins.y, 30.0) && close(aabb.maxs.y, 36.0), "{aabb:?}");
        assert!(map.dynamic_handle(2).is_none());
    }

    #[test]
    fn scale_applies_to_geometry_but_not_to_game_data() {
        let mut world = new_world();
        let map = GameMap::create(&small(), 0.5, &mut world).unwrap();
        let crate0 = &world.bodies[map.dynamic_handle(0).unwrap()];
        assert_eq!(crate0.translation(), Vector::new(5.0, 5.0));
        assert_eq!(crate0.soft_ccd_prediction(), 3.0);
        let aabb = world.colliders[crate0.colliders()[0]].compute_aabb();
        assert_eq!((aabb.mins, aabb.maxs), (Vector::new(5.0, 5.0), Vector::new(9.0, 8.0)));
        assert_eq!(map.dynamic_game_data(0), Some(&serde_json::json!({ "hp": 3 })));
        assert_eq!(map.dynamic_game_data(1), None);
        assert_eq!(map.dynamic_game_data(9), None);
        assert_eq!(map.game_data(), Some(&serde_json::json!({ "mode": "ctf" })));
        let respawns = map.respawns();
        assert_eq!(respawns.keys().collect::<Vec<_>>(), ["1", "2"]);
        assert_eq!(respawns["1"][0][..2], [7.5, 17.5]);
        assert_eq!(respawns["1"][0][2], 90.0, "angles stay in degrees");
        assert_eq!(respawns["2"][0], [22.5, 7.5, -180.0]);
        assert_eq!(map.scale(), 0.5);
        assert_eq!((map.name(), map.set_id()), ("small", "crates"));
        assert_eq!(map.config(), &small());
    }

    #[test]
    fn dynamic_index_comes_from_the_tag() {
        let mut world = new_world();
        let map = GameMap::create(&small(), 1.0, &mut world).unwrap();
        assert_eq!(map.dynamic_count(), 2);
        for i in 0..2 {
            let handle = map.dynamic_handle(i).unwrap();
            assert_eq!(map.dynamic_index_of(&world, handle), Some(i));
            assert!(is_map_object(world.bodies[handle].user_data));
        }
        assert_eq!(map.dynamic_index_of(&world, map.static_handles()[0]), None, "a wall has no index");
        let other = world.insert_body(RigidBodyBuilder::dynamic().user_data(encode_map_object_at(1)));
        assert_eq!(map.dynamic_index_of(&world, other), None, "a forged tag is not this map's body");
    }

    #[test]
    fn solid_lookup_in_world_coordinates() {
        let map = GameMap::create(&small(), 2.0, &mut new_world()).unwrap();
        // Tile 20 world units; wall tile (3, 2) covers x 60..80, y 40..60.
        assert!(map.is_solid_at(60.0, 40.0));
        assert!(map.is_solid_at(79.9, 59.9));
        assert!(!map.is_solid_at(80.0, 50.0), "tiles are half-open");
        assert!(!map.is_solid_at(25.0, 25.0));
        assert!(map.is_solid_at(5.0, 25.0), "outer wall");
        for (x, y) in [(-0.1, 30.0), (30.0, -1.0), (120.0, 30.0), (30.0, 100.0), (f32::NAN, 30.0), (1e30, 30.0)] {
            assert!(map.is_solid_at(x, y), "({x}, {y}) is outside");
        }
        assert_eq!(map.tile_at(65.0, 45.0), Some(1));
        assert_eq!(map.tile_at(25.0, 25.0), Some(0));
        assert_eq!(map.tile_at(-1.0, 25.0), None);
    }

    #[test]
    fn remove_leaves_the_world_empty() {
        let mut world = new_world();
        let mut map = GameMap::create(&small(), 1.0, &mut world).unwrap();
        map.remove(&mut world);
        assert_eq!((world.bodies.len(), world.colliders.len()), (0, 0));
        assert_eq!(map.dynamic_handle(0), None);
        assert!(map.static_handles().is_empty());
        map.remove(&mut world);
        assert_eq!(world.bodies.len(), 0, "a second remove does nothing");
    }

    #[test]
    fn remove_leaves_other_bodies_alone() {
        let mut world = new_world();
        let mine = world.insert_body(RigidBodyBuilder::dynamic().user_data(7));
        let mut map = GameMap::create(&small(), 1.0, &mut world).unwrap();
        map.remove(&mut world);
        assert_eq!(world.bodies.len(), 1);
        assert_eq!(world.bodies[mine].user_data, 7);
    }

    #[test]
    fn create_rejects_bad_maps_and_scales_without_touching_the_new_world() {
        let mut world = new_world();
        let mut cfg = small();
        cfg.tile_size = -1.0;
        let err = GameMap::create(&cfg, 1.0, &mut world).unwrap_err();
        assert_eq!(err.to_string(), "small:tileSize: must be greater than 0, got -1");
        for scale in [0.0, -1.0, f32::NAN, f32::INFINITY, 1e38] {
            let got = GameMap::create(&small(), scale, &mut world);
            assert!(matches!(got, Err(MapError::BadScale { scale: s }) if s.to_bits() == scale.to_bits()), "{scale}");
        }
        assert_eq!(world.bodies.len(), 0);
    }

    #[test]
    fn crates_slow_down_on_the_floor() {
        let mut world = new_world();
        let map = GameMap::create(&small(), 1.0, &mut world).unwrap();
        let handle = map.dynamic_handle(0).unwrap();
        world.integration_parameters.dt = 1.0 / 120.0;
        world.bodies[handle].set_linvel(Vector::new(6.0, 0.0), true);
        for _ in 0..120 {
            world.step();
        }
        let speed = world.bodies[handle].linvel().length();
        assert!(speed > 0.0 && speed < 0.05 * 6.0, "after 1 s a crate keeps ~2 % of its speed, got {speed}");
    }

    #[test]
    fn a_dump_restores_the_map_and_its_handles() {
        let config = bincode::config::standard();
        let mut world = new_world();
        let _unrelated = world.insert_body(RigidBodyBuilder::dynamic());
        let map = GameMap::create(&small(), 0.5, &mut world).unwrap();
        let bytes = bincode::serde::encode_to_vec((&world, &map), config).unwrap();
        let ((world2, map2), used): ((PhysicsWorld, GameMap), usize) =
            bincode::serde::decode_from_slice(&bytes, config).unwrap();
        assert_eq!(used, bytes.len());
        assert_eq!(map2, map);
        assert_eq!(map2.verify_bodies(&world2), Ok(()));
        for i in 0..2 {
            let handle = map2.dynamic_handle(i).unwrap();
            assert_eq!(map2.dynamic_index_of(&world2, handle), Some(i));
            assert_eq!(world2.bodies[handle].translation(), world.bodies[handle].translation());
        }
        assert_eq!(map2.dynamic_game_data(0), Some(&serde_json::json!({ "hp": 3 })));
    }

    #[test]
    fn a_dump_keeps_floats_bit_for_bit() {
        let mut cfg = small();
        cfg.physics_dynamic[0].x = 10.100_001;
        cfg.respawns["1"][0][0] = 15.333_333;
        cfg.game = Some(serde_json::json!({ "ratio": 0.1, "tiny": 1e-300, "big": 12345678901234567890u64 }));
        let map = GameMap::create(&cfg, 0.3, &mut new_world()).unwrap();
        let bytes = bincode::serde::encode_to_vec(&map, bincode::config::standard()).unwrap();
        let (back, _): (GameMap, usize) =
            bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).unwrap();
        assert_eq!(back.config().physics_dynamic[0].x.to_bits(), 10.100_001f32.to_bits());
        assert_eq!(back.respawns()["1"][0][0].to_bits(), map.respawns()["1"][0][0].to_bits());
        assert_eq!(back.game_data(), cfg.game.as_ref());
        assert_eq!(back, map);
    }

    #[test]
    fn a_removed_map_round_trips_too() {
        let mut world = new_world();
        let mut map = GameMap::create(&small(), 1.0, &mut world).unwrap();
        map.remove(&mut world);
        let bytes = bincode::serde::encode_to_vec(&map, bincode::config::standard()).unwrap();
        let (back, _): (GameMap, usize) =
            bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).unwrap();
        assert_eq!(back, map);
        assert_eq!(back.verify_bodies(&world), Ok(()));
    }

    #[test]
    fn a_dump_whose_handles_do_not_fit_is_rejected() {
        let mut world = new_world();
        let map = GameMap::create(&small(), 1.0, &mut world).unwrap();
        let mut dump = GameMapDump {
            config: map.config().clone(),
            scale: 1.0,
            static_bodies: map.static_handles().to_vec(),
            dynamic_bodies: map.dynamic_handles()[..1].to_vec(),
        };
        let bytes = bincode::serde::encode_to_vec(&dump, bincode::config::standard()).unwrap();
        let err = bincode::serde::decode_from_slice::<GameMap, _>(&bytes, bincode::config::standard()).unwrap_err();
        assert!(
            err.to_string().contains("5 static and 1 dynamic handles for a map of 5 blocks and 2 objects"),
            "{err}"
        );
        dump.dynamic_bodies = map.dynamic_handles().to_vec();
        dump.scale = f32::NAN;
        let bytes = bincode::serde::encode_to_vec(&dump, bincode::config::standard()).unwrap();
        assert!(bincode::serde::decode_from_slice::<GameMap, _>(&bytes, bincode::config::standard()).is_err());
    }

    #[test]
    fn verify_bodies_notices_a_world_that_does_not_match() {
        let mut world = new_world();
        let map = GameMap::create(&small(), 1.0, &mut world).unwrap();
        assert_eq!(map.verify_bodies(&world), Ok(()));
        let mut other = new_world();
        let _ = GameMap::create(&small(), 1.0, &mut other).unwrap();
        assert_eq!(map.verify_bodies(&other), Ok(()), "same map, same order: same handles");
        let err = map.verify_bodies(&PhysicsWorld::default()).unwrap_err();
        assert_eq!(err.to_string(), "state dump:map: static block 0's body is missing from the world");
        world.bodies[map.dynamic_handle(1).unwrap()].user_data = 0;
        let err = map.verify_bodies(&world).unwrap_err();
        assert_eq!(err.to_string(), "state dump:map: physicsDynamic[1]'s body is not a dynamic body with its tag");
    }

    #[test]
    fn a_json_dump_round_trips_as_well() {
        let map = GameMap::create(&small(), 1.0, &mut new_world()).unwrap();
        let text = serde_json::to_string(&map).unwrap();
        assert_eq!(serde_json::from_str::<GameMap>(&text).unwrap(), map);
    }

    /// The layered table's base map: a bridge on level 1 over a wall band, a ramp up to it.
    fn layered() -> MapConfig {
        let table: serde_json::Value = serde_json::from_str(levels::RULE_CASES).unwrap();
        MapConfig::from_json("layered", &table["base"].to_string()).unwrap()
    }

    #[test]
    fn a_layered_map_builds_rails_and_guards_in_their_levels_groups() {
        let cfg = layered();
        let mut world = new_world();
        let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
        let levels = map.levels();
        assert!(levels.is_layered());
        let (ground, rails, guards) =
            (levels.static_blocks(0).len(), levels.static_blocks(1).len(), ramp_guards(levels).len());
        assert_eq!((rails, guards), (2, 3), "two rails, two sides and the top end of one wide ramp");
        assert_eq!(map.static_handles().len(), ground + rails + guards);
        assert_eq!(world.bodies.len(), ground + rails + guards + 2);
        let groups = |h: RigidBodyHandle| world.colliders[world.bodies[h].colliders()[0]].collision_groups();
        assert_eq!(groups(map.static_handles()[0]), bodies::wall_interaction(0));
        assert_eq!(groups(map.static_handles()[ground]), bodies::wall_interaction(1));
        assert_eq!(groups(map.static_handles()[ground + rails]), bodies::guard_interaction(0));
        assert_eq!(groups(map.dynamic_handle(0).unwrap()), level_interaction(1), "the crate on the bridge");
        assert_eq!(groups(map.dynamic_handle(1).unwrap()), level_interaction(0));
        assert_eq!(map.respawn_levels()["2"], vec![0, 1]);
        assert_eq!(map.initial_dynamic_levels(), vec![LevelState::on(1), LevelState::on(0)]);
        assert_eq!(map.verify_bodies(&world), Ok(()));
    }

    #[test]
    fn a_layered_dump_round_trips_with_its_levels() {
        let config = bincode::config::standard();
        let mut world = new_world();
        let map = GameMap::create(&layered(), 0.5, &mut world).unwrap();
        let bytes = bincode::serde::encode_to_vec((&world, &map), config).unwrap();
        let ((world2, map2), _): ((PhysicsWorld, GameMap), usize) =
            bincode::serde::decode_from_slice(&bytes, config).unwrap();
        assert_eq!(map2, map);
        assert_eq!(map2.config(), &layered());
        assert_eq!(map2.verify_bodies(&world2), Ok(()));
    }

    #[test]
    fn a_flat_map_dumps_byte_for_byte_as_before_levels_existed() {
        // The dump form of a config before layered maps: `game` last, as an `Option`.
        #[derive(Serialize)]
        struct Before {
            name: String,
            set_id: String,
            tile_size: f32,
            map: Vec<Vec<u16>>,
            physics_static: Vec<u16>,
            physics_dynamic: Vec<(f32, f32, f32, f32, f32, Option<Vec<u8>>)>,
            respawns: IndexMap<String, Vec<Vec<f32>>>,
            layers: IndexMap<String, Vec<u16>>,
            volumes: IndexMap<String, f32>,
            game: Option<()>,
        }
        let mut cfg = small();
        cfg.game = None;
        for o in &mut cfg.physics_dynamic {
            o.game = None;
        }
        let before = Before {
            name: cfg.name.clone(),
            set_id: cfg.set_id.clone(),
            tile_size: cfg.tile_size,
            map: cfg.map.clone(),
            physics_static: cfg.physics_static.clone(),
            physics_dynamic: cfg.physics_dynamic.iter().map(|o| (o.x, o.y, o.width, o.height, o.angle, None)).collect(),
            respawns: cfg.respawns.clone(),
            layers: cfg.layers.clone(),
            volumes: cfg.volumes.clone(),
            game: None,
        };
        let config = bincode::config::standard();
        assert_eq!(
            bincode::serde::encode_to_vec(&cfg, config).unwrap(),
            bincode::serde::encode_to_vec(&before, config).unwrap()
        );
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        /// Mostly plausible map-unit values, sometimes a hostile one.
        fn number() -> impl Strategy<Value = f64> {
            prop_oneof![
                8 => 0.0..60.0f64,
                1 => prop_oneof![Just(-1.0), Just(0.0), Just(1e39), Just(-1e39), Just(1e-40), -20.0..90.0f64],
            ]
        }

        /// A coordinate mostly inside `0..extent`, sometimes a hostile number.
        fn coordinate(extent: f64) -> impl Strategy<Value = f64> {
            prop_oneof![8 => 0.0..extent, 1 => number()]
        }

        fn map_json() -> impl Strategy<Value = String> {
            (1usize..8, 1usize..6)
                .prop_flat_map(|(cols, rows)| {
                    let (w, h) = (cols as f64 * 10.0, rows as f64 * 10.0);
                    let tiles = prop_oneof![5 => Just(0u16), 1 => Just(1u16), 1 => Just(2u16)];
                    let row = prop::collection::vec(tiles, cols);
                    let grid =
                        prop::collection::vec(prop_oneof![12 => row, 1 => prop::collection::vec(0u16..3, 0..8)], rows);
                    let size = prop_oneof![4 => 2.0..12.0f64, 1 => number()];
                    let object = (coordinate(w), coordinate(h), size.clone(), size, prop_oneof![Just(0.0), number()]);
                    let objects = prop::collection::vec(object, 0..4);
                    let point = prop_oneof![
                        8 => (coordinate(w), coordinate(h), number()).prop_map(|(x, y, a)| vec![x, y, a]),
                        1 => prop::collection::vec(number(), 0..6),
                    ];
                    let teams = prop::collection::vec(prop::collection::vec(point, 1..3), 0..3usize);
                    (prop_oneof![6 => Just(10.0), 1 => number()], grid, objects, teams)
                })
                .prop_map(|(tile, grid, objects, teams)| {
                    let objects: Vec<Value> = objects
                        .into_iter()
                        .map(|(x, y, w, h, a)| {
                            serde_json::json!({ "x": x, "y": y, "width": w, "height": h, "angle": a })
                        })
                        .collect();
                    let teams: serde_json::Map<String, Value> = teams
                        .into_iter()
                        .enumerate()
                        .map(|(n, points)| (n.to_string(), serde_json::json!(points)))
                        .collect();
                    serde_json::json!({
                        "name": "fuzz", "tileSize": tile, "map": grid, "physicsStatic": [1],
                        "physicsDynamic": objects, "respawns": teams, "layers": { "all": [0, 1, 2] }
                    })
                    .to_string()
                })
        }

        proptest! {
            // About one generated map in sixteen is valid: run enough cases to build dozens
            // (or as many as `PROPTEST_CASES` asks for).
            #![proptest_config(ProptestConfig::with_cases(
                std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(1024)
            ))]

            /// Whatever the map says, parsing never panics, and a map that validates builds.
            #[test]
            fn any_map_parses_or_fails_cleanly_and_valid_ones_build(text in map_json()) {
                if let Ok(cfg) = MapConfig::from_json("fuzz", &text) {
                    let mut world = new_world();
                    let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
                    prop_assert_eq!(world.bodies.len(), map.static_blocks().len() + cfg.physics_dynamic.len());
                    for i in 0..cfg.physics_dynamic.len() {
                        prop_assert_eq!(map.dynamic_index_of(&world, map.dynamic_handle(i).unwrap()), Some(i));
                    }
                    for points in map.respawns().values() {
                        for p in points {
                            prop_assert!(!map.is_solid_at(p[0], p[1]), "a valid respawn point is on free ground");
                        }
                    }
                }
            }

            /// Whatever a layered map says, parsing never panics; one that validates builds, and
            /// every question its levels answer, and a body's step anywhere on it, is answered
            /// without a panic (bodies land on a level that exists).
            #[test]
            fn any_layered_map_parses_or_fails_cleanly_and_valid_ones_play(text in prop_oneof![layered_json(), ramped_json()], probes in prop::collection::vec((-10.0..90.0f32, -10.0..70.0f32, 0u8..4), 1..12)) {
                if let Ok(cfg) = MapConfig::from_json("fuzz", &text) {
                    let mut world = new_world();
                    let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
                    let levels = map.levels();
                    let fall = FallModel::new(levels.level_height(), 0.35);
                    for (x, y, n) in probes {
                        let _ = (levels.level_at(x, y), levels.has_floor(n, x, y), levels.is_solid(n, x, y));
                        let _ = (levels.ramp_at(x, y), levels.landing_level(n, x, y));
                        let existing: Vec<u8> = levels.levels().collect();
                        let mut state = LevelState::on(existing[usize::from(n) % existing.len()]);
                        for rides in [true, false] {
                            for _ in 0..50 {
                                step_body_level(&mut state, levels, &fall, 1.0 / 120.0, [x, y], rides);
                                let _ = state.groups(levels, [x, y], rides);
                            }
                            prop_assert!(levels.has_level(state.level), "{:?}", state);
                        }
                    }
                    for guard in ramp_guards(levels) {
                        prop_assert!(guard.rect.width > 0.0 && guard.rect.height > 0.0);
                    }
                }
            }
        }

        /// A layered map that is most often valid: a ramp of two cells (one or two lanes) in
        /// any direction up to a slab of level 1 (or 2, over an empty level 1) beyond its top,
        /// now and then a rail or a wall put where it breaks a rule.
        fn ramped_json() -> impl Strategy<Value = String> {
            let dir = prop_oneof![
                Just(("east", 1i64, 0i64)),
                Just(("west", -1, 0)),
                Just(("south", 0, 1)),
                Just(("north", 0, -1))
            ];
            (
                dir,
                1usize..4,
                1usize..3,
                1u8..3,
                prop::option::of((0usize..10, 0usize..8, prop_oneof![Just(1u16), Just(7u16)])),
            )
                .prop_map(|((name, dc, dr), at, lanes, to, noise)| {
                    let (cols, rows) = (10usize, 8usize);
                    let mut ground = vec![vec![0u16; cols]; rows];
                    let mut slab = vec![vec![0u16; cols]; rows];
                    // The run's cells: two along the direction, `lanes` across, from the middle.
                    let (c0, r0) = (4i64 - dc * at as i64 / 2, 3i64 - dr * at as i64 / 2);
                    for lane in 0..lanes as i64 {
                        let (lc, lr) = (c0 + lane * dr.abs(), r0 + lane * dc.abs());
                        for k in 0..2 {
                            let (c, r) = (lc + dc * k, lr + dr * k);
                            ground[r as usize][c as usize] = 5;
                        }
                        for k in 2..4 {
                            let (c, r) = (lc + dc * k, lr + dr * k);
                            if (0..cols as i64).contains(&c) && (0..rows as i64).contains(&r) {
                                slab[r as usize][c as usize] = 9;
                            }
                        }
                    }
                    if let Some((c, r, tile)) = noise {
                        if tile == 1 { ground[r][c] = 1 } else { slab[r][c] = 7 }
                    }
                    let mut levels = serde_json::Map::new();
                    if to == 2 {
                        levels.insert("1".into(), serde_json::json!({ "map": vec![vec![0u16; cols]; rows] }));
                    }
                    levels.insert(to.to_string(), serde_json::json!({ "map": slab, "floor": [7, 9], "walls": [7] }));
                    serde_json::json!({
                        "name": "ramped", "tileSize": 10, "map": ground, "physicsStatic": [1],
                        "respawns": { "1": [[95, 75, 0]] }, "levels": levels,
                        "ramps": [{ "tile": 5, "dir": name, "to": to }]
                    })
                    .to_string()
                })
        }

        /// A small layered map: a ground grid with walls and ramp tiles, levels 1 and 2 (and
        /// now and then a bad name) with floor, rails and gaps, ramps of any direction and levels.
        fn layered_json() -> impl Strategy<Value = String> {
            let cell = prop_oneof![12 => Just(0u16), 1 => Just(1u16), 2 => Just(5u16), 1 => Just(6u16)];
            let ground = prop::collection::vec(prop::collection::vec(cell, 8), 6);
            let slab = prop_oneof![4 => Just(0u16), 4 => Just(9u16), 2 => Just(7u16), 1 => Just(5u16)];
            // Slabs in the grid's inner cells only (an edge on the grid's border drops off it).
            let level = prop::collection::vec(prop::collection::vec(slab, 6), 4).prop_map(|inner| {
                let mut grid = vec![vec![0u16; 8]; 6];
                for (r, row) in inner.into_iter().enumerate() {
                    for (c, t) in row.into_iter().enumerate() {
                        grid[r + 1][c + 1] = t;
                    }
                }
                grid
            });
            let dir = prop_oneof![Just("north"), Just("south"), Just("west"), Just("east")];
            let ramp = (prop_oneof![Just(5u16), Just(6u16)], dir, 0u8..3, 0u8..4);
            let name = prop_oneof![8 => Just("1"), 4 => Just("2"), 1 => Just("8")];
            (ground, prop::collection::vec((name, level), 0..3), prop::collection::vec(ramp, 0..3), prop::option::of(0.0..40.0f32))
                .prop_map(|(ground, levels, ramps, height)| {
                    let levels: serde_json::Map<String, Value> = levels
                        .into_iter()
                        .map(|(n, map)| (n.to_owned(), serde_json::json!({ "map": map, "floor": [7, 9], "walls": [7] })))
                        .collect();
                    let ramps: Vec<Value> = ramps
                        .into_iter()
                        .map(|(tile, dir, from, to)| serde_json::json!({ "tile": tile, "dir": dir, "from": from, "to": to }))
                        .collect();
                    let mut map = serde_json::json!({
                        "name": "fuzz", "tileSize": 10, "map": ground, "physicsStatic": [1],
                        "respawns": { "1": [[5, 5, 0]] }, "levels": levels, "ramps": ramps
                    });
                    if let Some(h) = height {
                        map["levelHeight"] = serde_json::json!(h);
                    }
                    map.to_string()
                })
        }
    }
}
