//! Map errors: [`MapError`] names the file, the field (a JSON path) and the rule each problem breaks.

use std::fmt;

use super::config::{MAX_DYNAMIC_OBJECTS, MAX_GRID_SIDE, MAX_SET_ID_LEN};

/// Everything that can go wrong with a map, from its text to its physics.
///
/// Every variant displays as `file:field: reason`, one line per problem, so that
/// `vimp map check` output reads like a compiler's and editors can jump to it:
///
/// ```text
/// maps/arena.json:14:7: expected `,` or `]`
/// maps/arena.json:physicsDynamic[3].width: must be greater than 0, got -4
/// maps/arena.json:respawns.2[0]: stands on the wall tile at column 0, row 5
/// ```
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MapError {
    /// The text is not JSON, or not the map format (a wrong type, a missing or unknown
    /// field). Parsing stops at the first such problem, so there is exactly one.
    #[error("{file}:{line}:{column}: {message}")]
    Json {
        /// The file label given to [`MapConfig::from_json`](super::MapConfig::from_json).
        file: String,
        /// 1-based line of the problem (0 for the rare error serde_json gives no position).
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What is wrong, as serde_json words it.
        message: String,
    },
    /// The map parses but breaks rules: every problem found, in the order of the fields.
    #[error("{}", display_issues(file, issues, *omitted))]
    Invalid {
        /// The file label.
        file: String,
        /// The problems, at most [`MAX_ISSUES`] of them.
        issues: Vec<MapIssue>,
        /// How many more problems were found and not kept (beyond [`MAX_ISSUES`]).
        omitted: usize,
    },
    /// The engine's `mapScale` is not a finite number greater than 0, or it makes some
    /// value of this map infinite or zero once scaled.
    #[error(
        "engine config:mapScale: {scale} is not a finite number greater than 0 that keeps this map's sizes finite and non-zero"
    )]
    BadScale {
        /// The scale given.
        scale: f32,
    },
    /// A state dump's map part does not fit together (its body handles do not match its map).
    #[error("state dump:map: {reason}")]
    Dump {
        /// What does not fit.
        reason: String,
    },
}

impl MapError {
    /// The rule problems of an [`MapError::Invalid`]; empty for every other variant.
    pub fn issues(&self) -> &[MapIssue] {
        match self {
            MapError::Invalid { issues, .. } => issues,
            _ => &[],
        }
    }
}

/// Most problems one [`MapError::Invalid`] keeps; the rest are only counted.
pub const MAX_ISSUES: usize = 100;

fn display_issues(file: &str, issues: &[MapIssue], omitted: usize) -> String {
    let mut out = String::new();
    for (n, issue) in issues.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{file}:{issue}"));
    }
    if omitted > 0 {
        out.push_str(&format!("\n{file}: and {omitted} more problems"));
    }
    out
}

/// One broken rule: where (a JSON path such as `physicsDynamic[3].width`) and which rule.
///
/// Paths start at a top-level field name; `[n]` indexes an array, `.key` names an object
/// key made of ASCII letters, digits and `_` only, and any other key is written as a JSON
/// string in brackets: `respawns["team one"][0]`.
#[derive(Clone, Debug, PartialEq)]
pub struct MapIssue {
    /// The JSON path of the value at fault.
    pub field: String,
    /// The rule it breaks.
    pub rule: MapRule,
}

impl fmt::Display for MapIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.rule)
    }
}

/// The rules a map can break (see `maps/README.md` for the full list with examples).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MapRule {
    /// A name (map, team, layer) is empty or only whitespace.
    #[error("must not be empty")]
    Empty,
    /// `setId` is not a valid snapshot key name.
    #[error("must be 1 to {MAX_SET_ID_LEN} ASCII letters, digits or `_`")]
    BadSetId,
    /// A number is infinite or NaN (JSON like `1e39` overflows an f32 to infinity).
    #[error("must be a finite number, got {0}")]
    NotFinite(f32),
    /// A size is zero or negative.
    #[error("must be greater than 0, got {0}")]
    NotPositive(f32),
    /// A value that cannot be negative is.
    #[error("must not be negative, got {0}")]
    Negative(f32),
    /// `map` has no rows.
    #[error("the grid has no rows")]
    EmptyGrid,
    /// A row of `map` has no tiles.
    #[error("the row has no tiles")]
    EmptyRow,
    /// A row of `map` is not as long as row 0.
    #[error("the row has {len} tiles but row 0 has {expected}: all rows must be the same length")]
    RaggedRow {
        /// This row's length.
        len: usize,
        /// Row 0's length.
        expected: usize,
    },
    /// `map` is wider or taller than [`MAX_GRID_SIDE`] tiles.
    #[error("the grid is {cols}×{rows} tiles, at most {MAX_GRID_SIDE}×{MAX_GRID_SIDE} are allowed")]
    GridTooLarge {
        /// Columns.
        cols: usize,
        /// Rows.
        rows: usize,
    },
    /// `physicsDynamic` has more than [`MAX_DYNAMIC_OBJECTS`] entries.
    #[error("{0} objects, at most {MAX_DYNAMIC_OBJECTS} are allowed (a snapshot's map block has 8-bit ids)")]
    TooManyObjects(usize),
    /// `game` (of the map or of an object) is present and not a JSON object.
    #[error("must be a JSON object (or left out)")]
    NotAnObject,
    /// A key of `levels` is not a level above the ground: `"1"` to `"7"`.
    #[error("levels above the ground are named \"1\" to \"7\", not {0:?}")]
    BadLevelName(String),
    /// A level number is past the highest level.
    #[error("must be a level from 0 to 7, got {0}")]
    LevelOutOfRange(u8),
    /// A respawn point's level (its 4th number) is not a whole number from 0 to 7.
    #[error("a point's level is a whole number from 0 to 7, got {0}")]
    BadLevelNumber(f32),
    /// A level is named that the map does not declare in `levels`.
    #[error("level {0} is not declared in `levels`")]
    UnknownLevel(u8),
    /// A level's grid is not the ground grid's size.
    #[error(
        "the level's grid is {cols}×{rows} tiles but the ground's is {ground_cols}×{ground_rows}: every level has the ground's size"
    )]
    LevelGridSize {
        /// Columns of the level's grid (its row 0).
        cols: usize,
        /// Rows of the level's grid.
        rows: usize,
        /// Columns of the ground grid.
        ground_cols: usize,
        /// Rows of the ground grid.
        ground_rows: usize,
    },
    /// A rail tile (in a level's `walls`) is not in its `floor`.
    #[error(
        "rail tile {0} is not in `floor`: a rail stands on the slab (off it, it would hang in the air and not screen shots from below)"
    )]
    RailNotFloor(u16),
    /// A ramp's `to` is not above its `from`.
    #[error("must be above `from` ({from}), got {to}")]
    RampGoesNowhere {
        /// The ramp's bottom level.
        from: u8,
        /// Its top level.
        to: u8,
    },
    /// No cell of a ramp's bottom level has its tile id.
    #[error("no cell of level {level}'s grid has tile {tile}: the ramp has no cells")]
    RampWithoutCells {
        /// The ramp's tile id.
        tile: u16,
        /// The level whose grid was searched (the ramp's `from`).
        level: u8,
    },
    /// A ramp's cell is a wall of its bottom level.
    #[error("its cell at column {col}, row {row} is a wall of level {level}: a ramp cannot rise out of a wall")]
    RampOnWall {
        /// Column of the cell.
        col: usize,
        /// Row of the cell.
        row: usize,
        /// The ramp's bottom level.
        level: u8,
    },
    /// Two ramps claim one cell.
    #[error("shares the cell at column {col}, row {row} with ramps[{other}]: two ramps cannot share a cell")]
    RampsShareCell {
        /// The earlier ramp.
        other: usize,
        /// Column of the cell.
        col: usize,
        /// Row of the cell.
        row: usize,
    },
    /// A ramp's run rises off the grid.
    #[error("its run at column {col}, row {row} rises off the grid: a ramp must lead onto floor of level {level}")]
    RampLeadsOffGrid {
        /// Column of the run's top cell.
        col: usize,
        /// Row of the run's top cell.
        row: usize,
        /// The ramp's top level.
        level: u8,
    },
    /// The cell past a ramp's top is not drivable floor of the ramp's top level.
    #[error(
        "its run leads onto column {col}, row {row}, which is not drivable floor of level {level}: a tank would reach the top and drop at once"
    )]
    RampLeadsNowhere {
        /// Column of the cell past the top.
        col: usize,
        /// Row of the cell past the top.
        row: usize,
        /// The ramp's top level.
        level: u8,
    },
    /// A ramp's run passes under the floor of a level between its bottom and its top.
    #[error("its run passes under the floor of level {level} at column {col}, row {row}")]
    RampUnderFloor {
        /// The level whose floor is over the run.
        level: u8,
        /// Column of the cell.
        col: usize,
        /// Row of the cell.
        row: usize,
    },
    /// A floor cell's edge has no rail and leads off the grid.
    #[error("the floor's {dir} edge has no rail and drops off the grid")]
    EdgeOffGrid {
        /// Which edge: north, south, west or east.
        dir: &'static str,
    },
    /// A floor cell's edge has no rail, and a body falling off it lands in a wall.
    #[error(
        "the floor's {dir} edge has no rail and drops onto the wall at column {col}, row {row} of level {level}: what falls off it would land in the wall"
    )]
    EdgeOverWall {
        /// Which edge: north, south, west or east.
        dir: &'static str,
        /// Column of the cell it drops into.
        col: usize,
        /// Row of that cell.
        row: usize,
        /// The level it lands on.
        level: u8,
    },
    /// A body (a crate, a respawn point) stands on a level with no floor under it.
    #[error("stands on level {level}, which has no floor at column {col}, row {row}")]
    NoFloorOnLevel {
        /// The body's level.
        level: u8,
        /// Column of the cell.
        col: usize,
        /// Row of the cell.
        row: usize,
    },
    /// A dynamic object overlaps a rail of its level.
    #[error("overlaps the rail at column {col}, row {row} of level {level}")]
    ObjectInRail {
        /// Column of the tile.
        col: usize,
        /// Row of the tile.
        row: usize,
        /// The level.
        level: u8,
    },
    /// A respawn point stands on a rail of its level.
    #[error("stands on the rail at column {col}, row {row} of level {level}")]
    PointInRail {
        /// Column of the tile.
        col: usize,
        /// Row of the tile.
        row: usize,
        /// The level.
        level: u8,
    },
    /// A tile id used in `map` is drawn by no layer of a non-empty `layers`.
    #[error("tile {0} is used here (first use) but no layer of `layers` draws it")]
    UndrawnTile(u16),
    /// A `volumes` key names no layer of `layers`.
    #[error("names no layer of `layers`")]
    UnknownLayer,
    /// A dynamic object reaches outside the map.
    #[error(
        "reaches outside the map: its box spans x {min_x}..{max_x}, y {min_y}..{max_y}, the map spans x 0..{width}, y 0..{height}"
    )]
    ObjectOutsideMap {
        /// Left edge of the object's bounding box (map units).
        min_x: f32,
        /// Top edge.
        min_y: f32,
        /// Right edge.
        max_x: f32,
        /// Bottom edge.
        max_y: f32,
        /// Map width (map units).
        width: f32,
        /// Map height.
        height: f32,
    },
    /// A dynamic object overlaps a wall tile (the first one in row-major order).
    #[error("overlaps the wall tile at column {col}, row {row}")]
    ObjectInWall {
        /// Column of the tile.
        col: usize,
        /// Row of the tile.
        row: usize,
    },
    /// Two dynamic objects overlap; reported on the later one.
    #[error("overlaps physicsDynamic[{0}]")]
    ObjectsOverlap(usize),
    /// `respawns` has no team.
    #[error("declares no team: at least one team with one point is needed")]
    NoTeams,
    /// A team has no respawn point.
    #[error("the team has no respawn point")]
    NoPoints,
    /// A respawn point is not `[x, y, angleDeg]` or `[x, y, angleDeg, level]`.
    #[error("a respawn point is [x, y, angleDeg] or [x, y, angleDeg, level], this one has {0} numbers")]
    BadPoint(usize),
    /// A respawn point lies outside the map.
    #[error("({x}, {y}) lies outside the map, which spans x 0..{width}, y 0..{height}")]
    PointOutsideMap {
        /// The point's x (map units).
        x: f32,
        /// The point's y.
        y: f32,
        /// Map width (map units).
        width: f32,
        /// Map height.
        height: f32,
    },
    /// A respawn point stands on a wall tile.
    #[error("stands on the wall tile at column {col}, row {row}")]
    PointInWall {
        /// Column of the tile.
        col: usize,
        /// Row of the tile.
        row: usize,
    },
    /// A respawn point stands inside a dynamic object.
    #[error("stands inside physicsDynamic[{0}]")]
    PointInObject(usize),
}

/// Collects issues up to [`MAX_ISSUES`] and counts the rest.
#[derive(Debug, Default)]
pub(super) struct Issues {
    list: Vec<MapIssue>,
    omitted: usize,
}

impl Issues {
    /// Records `rule` broken at `field`.
    pub(super) fn push(&mut self, field: impl Into<String>, rule: MapRule) {
        if self.list.len() < MAX_ISSUES {
            self.list.push(MapIssue { field: field.into(), rule });
        } else {
            self.omitted += 1;
        }
    }

    /// How many issues were recorded (kept or omitted).
    pub(super) fn count(&self) -> usize {
        self.list.len() + self.omitted
    }

    /// `Ok` when nothing was recorded, else [`MapError::Invalid`] for `file`.
    pub(super) fn finish(self, file: &str) -> Result<(), MapError> {
        if self.count() == 0 {
            Ok(())
        } else {
            Err(MapError::Invalid { file: file.to_owned(), issues: self.list, omitted: self.omitted })
        }
    }
}

/// `parent.key` for a plain key, `parent["key"]` (a JSON string) for any other.
pub(super) fn key_path(parent: &str, key: &str) -> String {
    if !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        format!("{parent}.{key}")
    } else {
        // Serialising a &str to JSON cannot fail.
        let quoted = serde_json::to_string(key).unwrap_or_else(|_| String::from("\"?\""));
        format!("{parent}[{quoted}]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_quote_keys_that_are_not_plain() {
        assert_eq!(key_path("respawns", "1"), "respawns.1");
        assert_eq!(key_path("respawns", "red_2"), "respawns.red_2");
        assert_eq!(key_path("respawns", "team one"), r#"respawns["team one"]"#);
        assert_eq!(key_path("respawns", ""), r#"respawns[""]"#);
        assert_eq!(key_path("layers", "a\"b"), r#"layers["a\"b"]"#);
    }

    #[test]
    fn invalid_displays_one_file_field_reason_line_per_issue() {
        let mut issues = Issues::default();
        issues.push("tileSize", MapRule::NotPositive(-2.0));
        issues.push("respawns.2[0]", MapRule::PointInWall { col: 0, row: 5 });
        let err = issues.finish("maps/a.json").unwrap_err();
        assert_eq!(
            err.to_string(),
            "maps/a.json:tileSize: must be greater than 0, got -2\n\
             maps/a.json:respawns.2[0]: stands on the wall tile at column 0, row 5"
        );
        assert_eq!(err.issues().len(), 2);
    }

    #[test]
    fn issues_beyond_the_cap_are_counted_not_kept() {
        let mut issues = Issues::default();
        for n in 0..MAX_ISSUES + 3 {
            issues.push(format!("map[{n}]"), MapRule::EmptyRow);
        }
        assert_eq!(issues.count(), MAX_ISSUES + 3);
        let err = issues.finish("f").unwrap_err();
        assert_eq!(err.issues().len(), MAX_ISSUES);
        assert!(err.to_string().ends_with("\nf: and 3 more problems"), "{err}");
    }

    #[test]
    fn json_errors_display_as_file_line_column() {
        let err = MapError::Json { file: "m.json".into(), line: 3, column: 9, message: "expected `,`".into() };
        assert_eq!(err.to_string(), "m.json:3:9: expected `,`");
        assert!(err.issues().is_empty());
    }

    #[test]
    fn no_issue_is_ok() {
        assert_eq!(Issues::default().finish("f"), Ok(()));
    }
}
