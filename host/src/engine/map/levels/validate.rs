//! The shape rules of layered maps ([`validate_levels`]): one free function over the raw fields, for the host and any replica.

use indexmap::IndexMap;
use serde_json::Value;

use super::super::config::{LevelConfig, RampConfig};
use super::super::error::{MapIssue, MapRule, key_path};
use super::{MAX_LEVELS, MapLevels, Surface, level_config};

/// The four edges of a cell, as `(name, dcol, drow)`.
const EDGES: [(&str, i64, i64); 4] = [("north", 0, -1), ("south", 0, 1), ("west", -1, 0), ("east", 1, 0)];

/// Checks the layered fields of a map against every rule of the format and returns what
/// they break, each at its JSON path (see `maps/README.md`, *Layered maps*):
///
/// - `levelHeight` is finite and greater than 0;
/// - levels are named `"1"` to `"7"`; a level's grid has the ground grid's size; its rails
///   are floor; its layers and volumes follow the ground's rules;
/// - a ramp's `from` and `to` are levels that exist, `to` above `from`; its tile has cells in
///   level `from`'s grid, none of them a wall; no two ramps share a cell;
/// - a ramp leads onto drivable floor of its top level, and its run passes under no floor of
///   a level between its bottom and its top;
/// - every floor edge of a level has a rail, or what falls off it lands on something a body
///   can stand on ([`MapLevels::landing_level`]): never off the grid, never in a wall.
///
/// `map`, `physicsStatic` and `tileSize` are the ground's, as in the file (map units). The
/// geometric rules run only once the grids have the right shapes, so one mistake does not
/// cascade. The host runs this inside [`MapConfig::validate`](super::super::MapConfig::validate),
/// and a client that receives the map runs the very same function on it.
pub fn validate_levels(
    map: &[Vec<u16>],
    physics_static: &[u16],
    tile_size: f32,
    levels: &IndexMap<String, LevelConfig>,
    ramps: &[RampConfig],
    level_height: Option<f32>,
) -> Vec<MapIssue> {
    let mut out = Vec::new();
    let mut push = |field: String, rule: MapRule| out.push(MapIssue { field, rule });
    if let Some(h) = level_height {
        if !h.is_finite() {
            push("levelHeight".into(), MapRule::NotFinite(h));
        } else if h <= 0.0 {
            push("levelHeight".into(), MapRule::NotPositive(h));
        }
    }
    let ground_cols = map.first().map_or(0, Vec::len);
    let ground_ok = ground_cols > 0 && map.iter().all(|r| r.len() == ground_cols);
    let mut shapes_ok = ground_ok;
    for (name, level) in levels {
        let path = key_path("levels", name);
        let named = (1..MAX_LEVELS).any(|n| n.to_string() == *name);
        if !named {
            push(path.clone(), MapRule::BadLevelName(name.clone()));
            shapes_ok = false;
        }
        shapes_ok &= check_level_grid(&mut push, &path, level, map.len(), ground_cols, ground_ok);
        for (i, &tile) in level.walls.iter().enumerate() {
            if !level.floor.contains(&tile) {
                push(format!("{path}.walls[{i}]"), MapRule::RailNotFloor(tile));
            }
        }
        check_layers(&mut push, &path, level);
    }
    let declared = |n: u8| n == 0 || level_config(levels, n).is_some();
    let mut ramps_ok = true;
    for (i, ramp) in ramps.iter().enumerate() {
        let path = format!("ramps[{i}]");
        for (field, n) in [("from", ramp.from), ("to", ramp.to)] {
            if n as usize >= MAX_LEVELS {
                push(format!("{path}.{field}"), MapRule::LevelOutOfRange(n));
                ramps_ok = false;
            } else if !declared(n) {
                push(format!("{path}.{field}"), MapRule::UnknownLevel(n));
                ramps_ok = false;
            }
        }
        if ramp.to <= ramp.from {
            push(format!("{path}.to"), MapRule::RampGoesNowhere { from: ramp.from, to: ramp.to });
            ramps_ok = false;
        }
    }
    if !shapes_ok {
        return out;
    }
    let geometry = MapLevels::from_fields(map, physics_static, tile_size, levels, ramps, level_height, 1.0);
    let (cols, rows) = geometry.grid_size();
    if ramps_ok {
        check_ramps(&mut push, &geometry, ramps, cols, rows);
    }
    check_edges(&mut push, &geometry, levels, cols, rows);
    out
}

/// A level's grid has the ground's size; false when it does not (the geometry is skipped).
fn check_level_grid(
    push: &mut impl FnMut(String, MapRule),
    path: &str,
    level: &LevelConfig,
    ground_rows: usize,
    ground_cols: usize,
    ground_ok: bool,
) -> bool {
    let field = format!("{path}.map");
    let cols = level.map.first().map_or(0, Vec::len);
    if level.map.is_empty() {
        push(field, MapRule::EmptyGrid);
        return false;
    }
    let mut ok = true;
    for (r, tiles) in level.map.iter().enumerate() {
        if tiles.is_empty() {
            push(format!("{field}[{r}]"), MapRule::EmptyRow);
            ok = false;
        } else if tiles.len() != cols {
            push(format!("{field}[{r}]"), MapRule::RaggedRow { len: tiles.len(), expected: cols });
            ok = false;
        }
    }
    if ok && ground_ok && (cols != ground_cols || level.map.len() != ground_rows) {
        let rule = MapRule::LevelGridSize { cols, rows: level.map.len(), ground_cols, ground_rows };
        push(field, rule);
        ok = false;
    }
    ok
}

/// A level's layers: names not empty, volumes name layers and are finite and not negative,
/// every tile its grid uses (but 0) drawn by a layer when it has layers.
fn check_layers(push: &mut impl FnMut(String, MapRule), path: &str, level: &LevelConfig) {
    for name in level.layers.keys() {
        if name.trim().is_empty() {
            push(key_path(&format!("{path}.layers"), name), MapRule::Empty);
        }
    }
    for (name, &volume) in &level.volumes {
        let field = key_path(&format!("{path}.volumes"), name);
        if !level.layers.contains_key(name) {
            push(field.clone(), MapRule::UnknownLayer);
        }
        if !volume.is_finite() {
            push(field, MapRule::NotFinite(volume));
        } else if volume < 0.0 {
            push(field, MapRule::Negative(volume));
        }
    }
    if level.layers.is_empty() {
        return;
    }
    let mut seen: Vec<u16> = level.layers.values().flatten().copied().collect();
    seen.push(0);
    for (r, tiles) in level.map.iter().enumerate() {
        for (c, &tile) in tiles.iter().enumerate() {
            if !seen.contains(&tile) {
                seen.push(tile);
                push(format!("{path}.map[{r}][{c}]"), MapRule::UndrawnTile(tile));
            }
        }
    }
}

/// The ramps' cells and where their runs lead.
fn check_ramps(
    push: &mut impl FnMut(String, MapRule),
    geometry: &MapLevels,
    ramps: &[RampConfig],
    cols: usize,
    rows: usize,
) {
    let mut owner: Vec<Option<usize>> = vec![None; cols * rows];
    for (i, ramp) in ramps.iter().enumerate() {
        let path = format!("ramps[{i}]");
        let runs: Vec<_> = geometry.runs().iter().filter(|r| r.ramp == i).copied().collect();
        if runs.is_empty() {
            push(format!("{path}.tile"), MapRule::RampWithoutCells { tile: ramp.tile, level: ramp.from });
            continue;
        }
        let mut shared = false;
        for run in &runs {
            for (c, r) in run.cells() {
                if geometry.surface(ramp.from, c, r) == Surface::Wall {
                    push(path.clone(), MapRule::RampOnWall { col: c, row: r, level: ramp.from });
                }
                match owner[r * cols + c] {
                    Some(other) if !shared => {
                        push(path.clone(), MapRule::RampsShareCell { other, col: c, row: r });
                        shared = true;
                    }
                    Some(_) => {}
                    None => owner[r * cols + c] = Some(i),
                }
                for m in ramp.from + 1..ramp.to {
                    if geometry.surface(m, c, r) != Surface::Empty {
                        push(path.clone(), MapRule::RampUnderFloor { level: m, col: c, row: r });
                    }
                }
            }
            let (bc, br) = run.beyond_top();
            let (tc, tr) = run.cell(run.len() - 1);
            if bc < 0 || br < 0 || bc as usize >= cols || br as usize >= rows {
                push(path.clone(), MapRule::RampLeadsOffGrid { col: tc, row: tr, level: ramp.to });
            } else if geometry.surface(ramp.to, bc as usize, br as usize) != Surface::Floor {
                push(path.clone(), MapRule::RampLeadsNowhere { col: bc as usize, row: br as usize, level: ramp.to });
            }
        }
    }
}

/// Every floor edge of every level above the ground is railed or lands on something a body can stand on.
fn check_edges(
    push: &mut impl FnMut(String, MapRule),
    geometry: &MapLevels,
    levels: &IndexMap<String, LevelConfig>,
    cols: usize,
    rows: usize,
) {
    for (name, _) in levels {
        let Some(n) = name.parse::<u8>().ok().filter(|&n| (1..MAX_LEVELS as u8).contains(&n)) else { continue };
        for r in 0..rows {
            for c in 0..cols {
                if geometry.surface(n, c, r) != Surface::Floor {
                    continue;
                }
                for (dir, dc, dr) in EDGES {
                    let (nc, nr) = (c as i64 + dc, r as i64 + dr);
                    let field = || format!("{}.map[{r}][{c}]", key_path("levels", name));
                    if nc < 0 || nr < 0 || nc as usize >= cols || nr as usize >= rows {
                        push(field(), MapRule::EdgeOffGrid { dir });
                        continue;
                    }
                    let (nc, nr) = (nc as usize, nr as usize);
                    if geometry.surface(n, nc, nr) != Surface::Empty {
                        continue;
                    }
                    // Driving onto a ramp that starts or ends on this level is not a drop.
                    let ramp = geometry.run_at_cell(nc, nr).map(|run| geometry.runs()[run]);
                    if ramp.is_some_and(|run| run.from == n || run.to == n) {
                        continue;
                    }
                    let level = geometry.landing_level_cell(n, nc, nr);
                    if geometry.surface(level, nc, nr) == Surface::Wall {
                        push(field(), MapRule::EdgeOverWall { dir, col: nc, row: nr, level });
                    }
                }
            }
        }
    }
}

/// The table of the layered rules' cases: per rule, a valid map and an invalid one with the
/// problems `vimp map check` names, each a `field: reason` line (see `cases.json`: each map is
/// its `base` with the case's JSON merge patch applied). The unit tests and the command-line
/// test both run it.
pub const RULE_CASES: &str = include_str!("cases.json");

/// One row of [`RULE_CASES`].
#[derive(Clone, Debug, PartialEq)]
pub struct RuleCase {
    /// The rule, in words.
    pub rule: String,
    /// A map that keeps it (JSON text).
    pub valid: String,
    /// A map that breaks it (JSON text).
    pub invalid: String,
    /// What the check says of the invalid map, one `field: reason` per problem, in order.
    pub errors: Vec<String>,
}

/// The rows of [`RULE_CASES`], their maps made.
pub fn rule_cases() -> Vec<RuleCase> {
    let table: Value = serde_json::from_str(RULE_CASES).unwrap_or(Value::Null);
    let base = &table["base"];
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    table["cases"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|case| {
            let made = |which: &str| {
                let mut map = base.clone();
                merge_patch(&mut map, &case[which]);
                map.to_string()
            };
            let errors = case["errors"].as_array().map(Vec::as_slice).unwrap_or_default().iter().map(text).collect();
            RuleCase { rule: text(&case["rule"]), valid: made("valid"), invalid: made("invalid"), errors }
        })
        .collect()
}

/// A JSON merge patch (RFC 7386): objects merge key by key, `null` removes a key, anything
/// else replaces.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let Some(target) = target.as_object_mut() else { return };
    for (key, value) in patch {
        if value.is_null() {
            target.remove(key);
        } else {
            merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::Value;

    use super::super::super::{MapConfig, MapError};
    use super::{RULE_CASES, rule_cases};

    #[test]
    fn the_table_base_is_valid_and_layered() {
        let table: Value = serde_json::from_str(RULE_CASES).unwrap();
        let cfg = MapConfig::from_json("base", &table["base"].to_string()).unwrap_or_else(|e| panic!("{e}"));
        assert!(cfg.is_layered());
    }

    #[test]
    fn every_rule_accepts_its_valid_map_and_names_each_problem_of_its_invalid_one() {
        let cases = rule_cases();
        assert!(cases.len() >= 15, "a case per rule");
        for case in cases {
            if let Err(e) = MapConfig::from_json("m.json", &case.valid) {
                panic!("{}: the valid map is refused:\n{e}", case.rule);
            }
            let err = MapConfig::from_json("m.json", &case.invalid).expect_err(&case.rule);
            let MapError::Invalid { issues, .. } = &err else { panic!("{}: {err}", case.rule) };
            let got: Vec<String> = issues.iter().map(|i| i.to_string()).collect();
            assert_eq!(got, case.errors, "{}", case.rule);
        }
    }
}
