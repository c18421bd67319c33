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
    /// A field of layered (2.5D) maps: `levels`, `ramps`, `levelHeight`,
    /// `physicsDynamic[].level` or a respawn point's 4th number.
    #[error("layered maps (levels, ramps) are not supported yet")]
    LayeredNotSupported,
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
    /// A respawn point is not `[x, y, angleDeg]`.
    #[error("a respawn point is [x, y, angleDeg], this one has {0} numbers")]
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
