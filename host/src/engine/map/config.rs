//! The map's JSON form ([`MapConfig`]): parsing, and validation that reports every broken rule.

use indexmap::IndexMap;
use rapier2d::math::{Pose, Vector};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::binary::ConfigBinary;
use super::error::{Issues, MapError, MapRule, key_path};
use super::levels::{MAX_LEVELS, MapLevels, Surface, validate_levels};
use super::merge::SolidGrid;

/// The snapshot key of the map's dynamic bodies when the map does not name one.
pub const DEFAULT_SET_ID: &str = "c1";

/// Longest `setId` accepted, in characters.
pub const MAX_SET_ID_LEN: usize = 32;

/// Most columns, and most rows, a map grid may have.
pub const MAX_GRID_SIDE: usize = 4096;

/// Most entries `physicsDynamic` may have: every snapshot carries them all in the map's
/// dynamics block, whose row count and ids are 8-bit (spec 000, `indexedNoNull8`).
pub const MAX_DYNAMIC_OBJECTS: usize = 255;

/// A flat map as written in its JSON file (camelCase keys); `maps/README.md` documents every field.
///
/// All lengths are in **map units**: the engine multiplies them by its `mapScale` when it
/// builds physics ([`GameMap::create`](super::GameMap::create)); `game` data is never scaled.
///
/// Its serde form depends on the format. Human-readable formats (serde_json) get the
/// JSON file format. Binary formats (bincode: `is_human_readable()` is false) get an exact
/// dump form: every f32 bit for bit and the opaque `game` values as a flat token list,
/// because the file form holds [`Value`]s, which bincode cannot read back (it has no
/// `deserialize_any`). Each form reads back what it wrote, so a `MapConfig` can sit in a
/// bincode state dump. Deserialising does not validate; [`from_json`](Self::from_json)
/// and [`GameMap`](super::GameMap)'s own deserialisation do.
///
/// A map without `levels` and `ramps` is flat: everything stands on level 0, the ground.
/// `levels`, `ramps` and `levelHeight` make it layered (2.5D): slabs above the ground that
/// bodies drive on, ramps up to them and open edges to drop off ([`MapLevels`](super::MapLevels)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", rename_all = "camelCase", deny_unknown_fields)]
pub struct MapConfig {
    /// Human-readable name of the map; not empty.
    pub name: String,
    /// Snapshot key of the map's dynamic bodies; defaults to [`DEFAULT_SET_ID`].
    #[serde(default = "default_set_id")]
    pub set_id: String,
    /// World units per tile before scaling; finite and greater than 0.
    pub tile_size: f32,
    /// The tile grid, one array of tile ids per row: `map[row][col]`, row = y, col = x.
    /// Tile `(col, row)` covers `[col·tileSize, (col+1)·tileSize) × [row·tileSize, (row+1)·tileSize)`.
    pub map: Vec<Vec<u16>>,
    /// Tile ids that are solid walls.
    #[serde(default)]
    pub physics_static: Vec<u16>,
    /// Movable objects, in index order.
    #[serde(default)]
    pub physics_dynamic: Vec<DynamicObjectConfig>,
    /// Team name → respawn points `[x, y, angleDeg]` or `[x, y, angleDeg, level]`, in
    /// declaration order. Without its 4th number a point stands on the highest level whose
    /// floor is under it ([`MapLevels::level_at`](super::MapLevels::level_at)).
    ///
    /// Points are kept as plain number lists so that a wrong length is reported with its
    /// path by [`validate`](Self::validate); a valid point has 3 or 4.
    #[serde(default)]
    pub respawns: IndexMap<String, Vec<Vec<f32>>>,
    /// Render layer name → tile ids drawn in that layer, in drawing order (rendering only).
    #[serde(default)]
    pub layers: IndexMap<String, Vec<u16>>,
    /// Render layer name → visual height of the layer (rendering only; optional).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub volumes: IndexMap<String, f32>,
    /// Opaque data for the game; a JSON object or absent (`null` counts as absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game: Option<Value>,
    /// The levels above the ground, by number `"1"` to `"7"` (level 0, the ground, is `map`,
    /// `physicsStatic` and `layers`).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub levels: IndexMap<String, LevelConfig>,
    /// The ramps between levels, in index order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ramps: Vec<RampConfig>,
    /// The height of one level, map units; the tile size when absent. Finite and greater than 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level_height: Option<f32>,
}

/// One level above the ground (`levels."N"`): its own grid over the ground's, its floor and its rails.
///
/// `map` has the ground grid's size; a tile id 0 means "no level here" (the level below shows).
/// A tile in `floor` is a slab bodies drive on; a tile in `walls` is a rail: it blocks bodies
/// and shots on this level, and it is floor too (every rail id must be in `floor`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LevelConfig {
    /// The level's grid, `map[row][col]`, the ground grid's size; 0 = no level in that cell.
    pub map: Vec<Vec<u16>>,
    /// Tile ids of the level's floor (slabs, rails included).
    #[serde(default)]
    pub floor: Vec<u16>,
    /// Tile ids of the level's rails (walls on this level).
    #[serde(default)]
    pub walls: Vec<u16>,
    /// Render layer name → tile ids drawn in that layer (rendering only).
    #[serde(default)]
    pub layers: IndexMap<String, Vec<u16>>,
    /// Render layer name → visual height of the layer, in levels (rendering only).
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub volumes: IndexMap<String, f32>,
}

/// Which way a ramp rises: north is −y, south +y, west −x, east +x.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RampDir {
    /// Rises toward −y.
    North,
    /// Rises toward +y.
    South,
    /// Rises toward −x.
    West,
    /// Rises toward +x.
    East,
}

impl RampDir {
    /// The unit step of the rise in cells: `(dcol, drow)`.
    pub fn step(self) -> (i64, i64) {
        match self {
            RampDir::North => (0, -1),
            RampDir::South => (0, 1),
            RampDir::West => (-1, 0),
            RampDir::East => (1, 0),
        }
    }

    /// The name in the file.
    pub fn name(self) -> &'static str {
        match self {
            RampDir::North => "north",
            RampDir::South => "south",
            RampDir::West => "west",
            RampDir::East => "east",
        }
    }
}

/// One ramp (`ramps[i]`): every cell of level `from`'s grid whose tile id is `tile` is part of
/// it, rising toward `dir` from level `from` to level `to`.
///
/// The cells of one row (for east and west) or one column (north and south) that follow each
/// other make one run; runs side by side over the same span make one wide ramp.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RampConfig {
    /// The tile id of the ramp's cells in level `from`'s grid.
    pub tile: u16,
    /// Which way it rises.
    pub dir: RampDir,
    /// The level at its foot; 0 by default.
    #[serde(default)]
    pub from: u8,
    /// The level at its top; 1 by default.
    #[serde(default = "default_ramp_top")]
    pub to: u8,
}

fn default_ramp_top() -> u8 {
    1
}

impl Serialize for MapConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            // The derived file form (`remote = "Self"` makes it an inherent function).
            MapConfig::serialize(self, serializer)
        } else {
            ConfigBinary::of(self).serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for MapConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            MapConfig::deserialize(deserializer)
        } else {
            ConfigBinary::deserialize(deserializer)?.into_config().map_err(serde::de::Error::custom)
        }
    }
}

fn default_set_id() -> String {
    DEFAULT_SET_ID.to_owned()
}

/// One `physicsDynamic` entry: a movable box, in map units.
///
/// `(x, y)` is the object's **corner** as the map data gives it; the body sits there and
/// its box collider is offset by half the size, so with `angle` 0 the box covers
/// `[x, x + width] × [y, y + height]`. `angle` turns the box about that corner.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DynamicObjectConfig {
    /// Corner x.
    pub x: f32,
    /// Corner y.
    pub y: f32,
    /// Size along the object's own x axis; greater than 0.
    pub width: f32,
    /// Size along the object's own y axis; greater than 0.
    pub height: f32,
    /// Rotation about the corner, in degrees (positive turns +x towards +y); default 0.
    #[serde(default)]
    pub angle: f32,
    /// Opaque data for the game; a JSON object or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub game: Option<Value>,
    /// The level it stands on (layered maps); the ground (0) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<u8>,
}

impl DynamicObjectConfig {
    /// The object's pose in map units: translation = corner, rotation = `angle` in radians.
    pub fn pose(&self) -> Pose {
        Pose::new(Vector::new(self.x, self.y), self.angle.to_radians())
    }
}

impl MapConfig {
    /// Parses a map from its JSON text and [validates](Self::validate) it.
    ///
    /// `file_label` names the map in errors (usually its path). Text that is not JSON or
    /// not this format gives [`MapError::Json`] with the line and column of the first
    /// problem; a map that parses and breaks rules gives [`MapError::Invalid`] with all of
    /// them.
    pub fn from_json(file_label: &str, text: &str) -> Result<MapConfig, MapError> {
        let cfg: MapConfig = serde_json::from_str(text).map_err(|e| json_error(file_label, &e))?;
        cfg.validate(file_label)?;
        Ok(cfg)
    }

    /// The map as pretty JSON text (the file format); [`from_json`](Self::from_json) reads it back.
    pub fn to_json_pretty(&self) -> String {
        // A MapConfig holds only strings, numbers, maps and JSON values: serialising it cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Checks every rule of the format and reports **all** broken ones (up to
    /// [`MAX_ISSUES`](super::MAX_ISSUES)) as [`MapError::Invalid`], naming `file_label`.
    ///
    /// Geometric rules (bounds, walls, overlaps) are checked only when the grid and
    /// `tileSize` are valid, and only for objects and points whose own numbers are valid,
    /// so one mistake does not cascade into dozens of messages.
    pub fn validate(&self, file_label: &str) -> Result<(), MapError> {
        let mut issues = Issues::default();
        self.check_names(&mut issues);
        let tile_ok = check_positive(&mut issues, "tileSize", self.tile_size);
        let grid_ok = self.check_grid(&mut issues);
        self.check_layers(&mut issues, grid_ok);
        check_game(&mut issues, "game", self.game.as_ref());
        let level_issues = validate_levels(
            &self.map,
            &self.physics_static,
            self.tile_size,
            &self.levels,
            &self.ramps,
            self.level_height,
        );
        let levels_ok = level_issues.is_empty();
        for issue in level_issues {
            issues.push(issue.field, issue.rule);
        }
        let geometry = (tile_ok && grid_ok).then(|| Geometry::new(self, levels_ok));
        let boxes = self.check_dynamic(&mut issues, geometry.as_ref());
        self.check_respawns(&mut issues, geometry.as_ref(), &boxes);
        issues.finish(file_label)
    }

    /// Whether the map has levels or ramps (a layered map).
    pub fn is_layered(&self) -> bool {
        !self.levels.is_empty() || !self.ramps.is_empty()
    }

    /// The level a respawn point stands on: its 4th number, else the highest level whose
    /// floor is under it. `None` for a point that is not valid.
    pub fn respawn_level(&self, point: &[f32]) -> Option<u8> {
        match point {
            [x, y, _] => Some(MapLevels::new(self, 1.0).level_at(*x, *y)),
            [_, _, _, level] => level_number(*level),
            _ => None,
        }
    }

    fn check_names(&self, issues: &mut Issues) {
        if self.name.trim().is_empty() {
            issues.push("name", MapRule::Empty);
        }
        let id_ok = !self.set_id.is_empty()
            && self.set_id.len() <= MAX_SET_ID_LEN
            && self.set_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !id_ok {
            issues.push("setId", MapRule::BadSetId);
        }
    }

    /// Grid shape rules; true when the grid is a non-empty rectangle within the size limit.
    fn check_grid(&self, issues: &mut Issues) -> bool {
        let before = issues.count();
        let Some(first) = self.map.first() else {
            issues.push("map", MapRule::EmptyGrid);
            return false;
        };
        let cols = first.len();
        if cols > MAX_GRID_SIDE || self.map.len() > MAX_GRID_SIDE {
            issues.push("map", MapRule::GridTooLarge { cols, rows: self.map.len() });
        }
        for (row, tiles) in self.map.iter().enumerate() {
            if tiles.is_empty() {
                issues.push(format!("map[{row}]"), MapRule::EmptyRow);
            } else if tiles.len() != cols && cols > 0 {
                issues.push(format!("map[{row}]"), MapRule::RaggedRow { len: tiles.len(), expected: cols });
            }
        }
        issues.count() == before
    }

    fn check_layers(&self, issues: &mut Issues, grid_ok: bool) {
        for name in self.layers.keys() {
            if name.trim().is_empty() {
                issues.push(key_path("layers", name), MapRule::Empty);
            }
        }
        for (name, &volume) in &self.volumes {
            let field = key_path("volumes", name);
            if !self.layers.contains_key(name) {
                issues.push(field.clone(), MapRule::UnknownLayer);
            }
            if !volume.is_finite() {
                issues.push(field, MapRule::NotFinite(volume));
            } else if volume < 0.0 {
                issues.push(field, MapRule::Negative(volume));
            }
        }
        if !grid_ok || self.layers.is_empty() {
            return;
        }
        // One flag per possible tile id: drawn by a layer, or already reported.
        let mut seen = vec![false; usize::from(u16::MAX) + 1];
        for &tile in self.layers.values().flatten() {
            seen[usize::from(tile)] = true;
        }
        for (row, tiles) in self.map.iter().enumerate() {
            for (col, &tile) in tiles.iter().enumerate() {
                if !std::mem::replace(&mut seen[usize::from(tile)], true) {
                    issues.push(format!("map[{row}][{col}]"), MapRule::UndrawnTile(tile));
                }
            }
        }
    }

    /// Dynamic object rules; returns the boxes of the objects whose numbers are valid, with
    /// their levels.
    fn check_dynamic(&self, issues: &mut Issues, geometry: Option<&Geometry>) -> Vec<(usize, u8, Obb)> {
        if self.physics_dynamic.len() > MAX_DYNAMIC_OBJECTS {
            issues.push("physicsDynamic", MapRule::TooManyObjects(self.physics_dynamic.len()));
        }
        let mut boxes = Vec::new();
        for (i, object) in self.physics_dynamic.iter().enumerate() {
            let path = format!("physicsDynamic[{i}]");
            let mut ok = true;
            for (name, value) in [("x", object.x), ("y", object.y), ("angle", object.angle)] {
                ok &= check_finite(issues, &format!("{path}.{name}"), value);
            }
            for (name, value) in [("width", object.width), ("height", object.height)] {
                ok &= check_positive(issues, &format!("{path}.{name}"), value);
            }
            check_game(issues, &format!("{path}.game"), object.game.as_ref());
            let level = object.level.unwrap_or(0);
            ok &= self.check_level(issues, &format!("{path}.level"), level);
            if !ok {
                continue;
            }
            let obb = Obb::of(object);
            if let Some(geometry) = geometry {
                let (min, max) = obb.aabb();
                let eps = geometry.eps;
                if min.x < -eps || min.y < -eps || max.x > geometry.width + eps || max.y > geometry.height + eps {
                    issues.push(
                        path.clone(),
                        MapRule::ObjectOutsideMap {
                            min_x: min.x,
                            min_y: min.y,
                            max_x: max.x,
                            max_y: max.y,
                            width: geometry.width,
                            height: geometry.height,
                        },
                    );
                } else if let Some(rule) = geometry.object_on_level(&obb, level) {
                    issues.push(path.clone(), rule);
                }
            }
            let eps = geometry.map_or(0.0, |g| g.eps);
            if let Some(&(other, _, _)) = boxes.iter().find(|(_, l, b)| *l == level && obb.overlaps(b, eps)) {
                issues.push(path, MapRule::ObjectsOverlap(other));
            }
            boxes.push((i, level, obb));
        }
        boxes
    }

    /// A body's level is one that exists: the ground, or a declared level up to 7.
    fn check_level(&self, issues: &mut Issues, field: &str, level: u8) -> bool {
        if usize::from(level) >= MAX_LEVELS {
            issues.push(field, MapRule::LevelOutOfRange(level));
            false
        } else if level > 0 && !self.levels.contains_key(level.to_string().as_str()) {
            issues.push(field, MapRule::UnknownLevel(level));
            false
        } else {
            true
        }
    }

    fn check_respawns(&self, issues: &mut Issues, geometry: Option<&Geometry>, boxes: &[(usize, u8, Obb)]) {
        if self.respawns.is_empty() {
            issues.push("respawns", MapRule::NoTeams);
        }
        for (team, points) in &self.respawns {
            let team_path = key_path("respawns", team);
            if team.trim().is_empty() {
                issues.push(team_path.clone(), MapRule::Empty);
            }
            if points.is_empty() {
                issues.push(team_path.clone(), MapRule::NoPoints);
            }
            for (k, point) in points.iter().enumerate() {
                let path = format!("{team_path}[{k}]");
                if !(3..=4).contains(&point.len()) {
                    issues.push(path, MapRule::BadPoint(point.len()));
                    continue;
                }
                let mut ok = true;
                for (n, &value) in point.iter().take(3).enumerate() {
                    ok &= check_finite(issues, &format!("{path}[{n}]"), value);
                }
                let explicit = match point.get(3) {
                    Some(&n) => match level_number(n) {
                        Some(level) => {
                            ok &= self.check_level(issues, &format!("{path}[3]"), level);
                            Some(level)
                        }
                        None => {
                            issues.push(format!("{path}[3]"), MapRule::BadLevelNumber(n));
                            ok = false;
                            None
                        }
                    },
                    None => None,
                };
                let (Some(geometry), true) = (geometry, ok) else { continue };
                let (x, y) = (point[0], point[1]);
                if !(0.0..geometry.width).contains(&x) || !(0.0..geometry.height).contains(&y) {
                    let (width, height) = (geometry.width, geometry.height);
                    issues.push(path, MapRule::PointOutsideMap { x, y, width, height });
                    continue;
                }
                let level = explicit.unwrap_or_else(|| geometry.levels.level_at(x, y));
                if let Some(rule) = geometry.point_on_level(x, y, level) {
                    issues.push(path, rule);
                } else if let Some(&(index, _, _)) =
                    boxes.iter().find(|(_, l, b)| *l == level && b.contains(Vector::new(x, y)))
                {
                    issues.push(path, MapRule::PointInObject(index));
                }
            }
        }
    }
}

/// A respawn point's 4th number as a level: a whole number from 0 to 255 (range-checked
/// apart), `None` for anything else.
fn level_number(n: f32) -> Option<u8> {
    (n.is_finite() && n.fract() == 0.0 && (0.0..=255.0).contains(&n)).then_some(n as u8)
}

/// Turns a serde_json error into [`MapError::Json`], its position moved out of the message.
fn json_error(file: &str, e: &serde_json::Error) -> MapError {
    let (line, column) = (e.line(), e.column());
    let text = e.to_string();
    let suffix = format!(" at line {line} column {column}");
    let message = plain_json_words(text.strip_suffix(&suffix).unwrap_or(&text));
    MapError::Json { file: file.to_owned(), line, column, message }
}

/// serde's words for what a JSON value should have been, in a map maker's: "expected f32" is
/// "expected a number", "key must be a string" says the key wants double quotes.
fn plain_json_words(message: &str) -> String {
    if message == "key must be a string" {
        return "a key must be text in double quotes (\"1\": …, not 1: …)".to_owned();
    }
    let mut out = message.to_owned();
    for (rust, words) in [
        ("f32", "a number"),
        ("f64", "a number"),
        ("u8", "a whole number from 0 to 255"),
        ("u16", "a whole number from 0 to 65535"),
        ("u32", "a whole number, 0 or more"),
        ("usize", "a whole number, 0 or more"),
        ("i32", "a whole number"),
        ("a sequence", "a list [ … ]"),
        ("a map", "an object { … }"),
    ] {
        out = out.replace(&format!("expected {rust}"), &format!("expected {words}"));
    }
    out
}

fn check_finite(issues: &mut Issues, field: &str, value: f32) -> bool {
    let ok = value.is_finite();
    if !ok {
        issues.push(field, MapRule::NotFinite(value));
    }
    ok
}

fn check_positive(issues: &mut Issues, field: &str, value: f32) -> bool {
    if !check_finite(issues, field, value) {
        return false;
    }
    let ok = value > 0.0;
    if !ok {
        issues.push(field, MapRule::NotPositive(value));
    }
    ok
}

fn check_game(issues: &mut Issues, field: &str, game: Option<&Value>) {
    if game.is_some_and(|g| !g.is_object()) {
        issues.push(field, MapRule::NotAnObject);
    }
}

/// The valid grid in map units, for the geometric rules.
struct Geometry {
    grid: SolidGrid,
    /// The levels (map units); only the ground's walls when the layered fields break rules.
    levels: MapLevels,
    /// Whether the layered fields are valid: bodies on levels above the ground are checked
    /// against those levels only then.
    levels_ok: bool,
    tile: f32,
    width: f32,
    height: f32,
    /// Tolerance for touching boxes and rounding of rotated corners: 1/10000 of a tile.
    eps: f32,
}

impl Geometry {
    fn new(cfg: &MapConfig, levels_ok: bool) -> Geometry {
        let grid = SolidGrid::new(&cfg.map, &cfg.physics_static);
        let tile = cfg.tile_size;
        let (width, height) = (grid.cols() as f32 * tile, grid.rows() as f32 * tile);
        let levels = MapLevels::new(cfg, 1.0);
        Geometry { grid, levels, levels_ok, tile, width, height, eps: tile * 1e-4 }
    }

    /// What is wrong with a point inside the map standing on `level`: a ground wall under a
    /// point on the ground; no floor, or a rail, under a point on a level above it.
    fn point_on_level(&self, x: f32, y: f32, level: u8) -> Option<MapRule> {
        let (col, row) = ((x / self.tile) as usize, (y / self.tile) as usize);
        if level == 0 {
            return self.grid.is_solid(col, row).then_some(MapRule::PointInWall { col, row });
        }
        if !self.levels_ok {
            return None;
        }
        match self.levels.surface(level, col, row) {
            Surface::Empty => Some(MapRule::NoFloorOnLevel { level, col, row }),
            Surface::Wall => Some(MapRule::PointInRail { col, row, level }),
            Surface::Floor => None,
        }
    }

    /// What is wrong with a box inside the map standing on `level`: on the ground, a wall
    /// under it; above it, no floor under its centre or a rail under it.
    fn object_on_level(&self, obb: &Obb, level: u8) -> Option<MapRule> {
        if level == 0 {
            return self
                .first_tile_under(obb, |c, r| self.grid.is_solid(c, r))
                .map(|(col, row)| MapRule::ObjectInWall { col, row });
        }
        if !self.levels_ok {
            return None;
        }
        let center = obb.pose.transform_point(Vector::new(obb.width / 2.0, obb.height / 2.0));
        let (col, row) = ((center.x / self.tile) as usize, (center.y / self.tile) as usize);
        if self.levels.surface(level, col, row) == Surface::Empty {
            return Some(MapRule::NoFloorOnLevel { level, col, row });
        }
        self.first_tile_under(obb, |c, r| self.levels.surface(level, c, r) == Surface::Wall)
            .map(|(col, row)| MapRule::ObjectInRail { col, row, level })
    }

    /// The first tile (row-major) for which `solid` holds that the box overlaps by more than
    /// the tolerance.
    fn first_tile_under(&self, obb: &Obb, solid: impl Fn(usize, usize) -> bool) -> Option<(usize, usize)> {
        let (min, max) = obb.aabb();
        let span = |lo: f32, hi: f32, n: usize| {
            let first = ((lo + self.eps) / self.tile).floor().max(0.0) as usize;
            let last = (((hi - self.eps) / self.tile).ceil().max(0.0) as usize).min(n);
            first..last
        };
        for row in span(min.y, max.y, self.grid.rows()) {
            for col in span(min.x, max.x, self.grid.cols()) {
                if solid(col, row) {
                    let (x, y) = (col as f32 * self.tile, row as f32 * self.tile);
                    let tile = Obb::new(Pose::new(Vector::new(x, y), 0.0), self.tile, self.tile);
                    if obb.overlaps(&tile, self.eps) {
                        return Some((col, row));
                    }
                }
            }
        }
        None
    }
}

/// An oriented box: its four corners, its two edge directions and its bounding box.
#[derive(Clone, Copy, Debug)]
struct Obb {
    corners: [Vector; 4],
    axes: [Vector; 2],
    min: Vector,
    max: Vector,
    pose: Pose,
    width: f32,
    height: f32,
}

impl Obb {
    fn of(object: &DynamicObjectConfig) -> Obb {
        Obb::new(object.pose(), object.width, object.height)
    }

    fn new(pose: Pose, width: f32, height: f32) -> Obb {
        let corners = [
            pose.transform_point(Vector::new(0.0, 0.0)),
            pose.transform_point(Vector::new(width, 0.0)),
            pose.transform_point(Vector::new(width, height)),
            pose.transform_point(Vector::new(0.0, height)),
        ];
        let axes = [pose.transform_vector(Vector::X), pose.transform_vector(Vector::Y)];
        let min = corners.iter().fold(Vector::splat(f32::INFINITY), |m, c| m.min(*c));
        let max = corners.iter().fold(Vector::splat(f32::NEG_INFINITY), |m, c| m.max(*c));
        Obb { corners, axes, min, max, pose, width, height }
    }

    fn aabb(&self) -> (Vector, Vector) {
        (self.min, self.max)
    }

    /// Separating-axis test: true when the boxes overlap by more than `eps` on every axis.
    fn overlaps(&self, other: &Obb, eps: f32) -> bool {
        let apart = |lo: Vector, hi: Vector| (hi.x - lo.x) <= eps || (hi.y - lo.y) <= eps;
        if apart(self.min.max(other.min), self.max.min(other.max)) {
            return false;
        }
        let project = |obb: &Obb, axis: Vector| {
            obb.corners.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), c| {
                let d = c.dot(axis);
                (lo.min(d), hi.max(d))
            })
        };
        self.axes.iter().chain(other.axes.iter()).all(|&axis| {
            let (a_lo, a_hi) = project(self, axis);
            let (b_lo, b_hi) = project(other, axis);
            a_hi.min(b_hi) - a_lo.max(b_lo) > eps
        })
    }

    /// True when `p` lies strictly inside the box.
    fn contains(&self, p: Vector) -> bool {
        let local = self.pose.inverse_transform_point(p);
        local.x > 0.0 && local.x < self.width && local.y > 0.0 && local.y < self.height
    }
}

#[cfg(test)]
mod tests;
