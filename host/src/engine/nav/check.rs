//! What a map check warns about: respawn points a body cannot drive away from, and objects wedged across a corridor.
//!
//! Warnings are not errors: the map loads and plays. They name the JSON path at fault like
//! [`MapIssue`](crate::engine::map::MapIssue)s do and print as `file:field: warning: reason`.
//!
//! - **Unreachable respawns.** For a body `width` wide, a respawn point from which no
//!   respawn point of any other team can be reached (walls only: objects can be pushed).
//! - **Wedged objects.** With every dynamic object standing as a wall, an object whose
//!   neighbouring cells lie in two or more separate regions of at least
//!   [`MIN_REGION_CELLS`] cells that are one region without the objects: a body `width` wide
//!   gets from one side to the other only by pushing it (or a neighbour of it) away.

use std::collections::BTreeSet;
use std::fmt;

use rapier2d::prelude::PhysicsWorld;

use crate::engine::map::GameMap;
use crate::engine::nav::grid::NavGrid;
use crate::engine::nav::navigation::{NavigationSystem, Obb};

/// The smallest region a wedged object must part from another to be reported, in cells:
/// closing off a nook is not blocking a corridor.
pub const MIN_REGION_CELLS: u32 = 4;

/// A warning about a map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapWarning {
    /// The JSON path of the value it is about (`respawns.1[0]`, `physicsDynamic[3]`).
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for MapWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: warning: {}", self.field, self.reason)
    }
}

/// Every warning for `map`, its bodies built in `world`, and a body `width` world units wide
/// (see the module docs), in map order: respawns by team and point, then objects by index.
pub fn map_warnings(map: &GameMap, world: &PhysicsWorld, width: f32) -> Vec<MapWarning> {
    let mut warnings = Vec::new();
    let open = NavigationSystem::new(super::grid_of(map));
    let respawns = map.respawns();
    if respawns.len() > 1 {
        for (team, points) in respawns {
            for (k, p) in points.iter().enumerate() {
                let here = [p[0], p[1]];
                let others = respawns.iter().filter(|(t, _)| *t != team).flat_map(|(_, ps)| ps.iter());
                if !others.clone().any(|q| open.reachable(here, [q[0], q[1]], width)) {
                    warnings.push(MapWarning {
                        field: format!("respawns{}[{k}]", key_path(team)),
                        reason: format!(
                            "a body {width} units wide cannot reach any respawn point of another team from here"
                        ),
                    });
                }
            }
        }
    }

    let boxes: Vec<Option<Obb>> = map.dynamic_handles().iter().map(|&h| super::obstacle_of(world, h)).collect();
    let covered: Vec<Vec<u32>> = boxes.iter().map(|b| b.map(|b| open.cells_under(&b)).unwrap_or_default()).collect();
    if covered.iter().all(Vec::is_empty) {
        return warnings;
    }
    let g = open.grid();
    let mut blocked = vec![false; g.walk().len()];
    for &c in covered.iter().flatten() {
        blocked[c as usize] = true;
    }
    let cols = g.cols();
    let walled = NavigationSystem::new(NavGrid::new(cols, g.rows(), g.cell(), |c, r| {
        !g.is_free(r * cols + c) || blocked[r * cols + c]
    }));
    let (labels, sizes) = walled.regions(width);
    let (open_labels, _) = open.regions(width);
    for (i, cells) in covered.iter().enumerate() {
        let mut sides = BTreeSet::new();
        for &cell in cells {
            let (c, r) = g.coords(cell as usize);
            for (dc, dr) in [(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)] {
                if let Some(n) = g.index(c as i64 + dc, r as i64 + dr)
                    && labels[n] != 0
                    && sizes[labels[n] as usize] >= MIN_REGION_CELLS
                {
                    sides.insert((open_labels[n], labels[n]));
                }
            }
        }
        // Sides that one region joins when the objects are pushed away.
        let parted =
            sides.iter().any(|&(open_a, a)| sides.iter().any(|&(open_b, b)| open_a == open_b && open_a != 0 && a != b));
        if parted {
            let mut split: Vec<u32> = sides.iter().map(|&(_, l)| sizes[l as usize]).collect();
            split.sort_unstable_by(|a, b| b.cmp(a));
            warnings.push(MapWarning {
                field: format!("physicsDynamic[{i}]"),
                reason: format!(
                    "blocks a corridor: a body {width} units wide gets past it only by pushing it \
                     (it parts regions of {} and {} cells)",
                    split[0], split[1]
                ),
            });
        }
    }
    warnings
}

/// `.key` or `["key"]`, as map paths name a key.
fn key_path(key: &str) -> String {
    if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        format!(".{key}")
    } else {
        format!("[{key:?}]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::map::MapConfig;

    /// The warnings of a map from rows of `#` and `.`, its objects and respawns as JSON.
    fn warnings(rows: &[&str], objects: &str, respawns: &str, width: f32) -> Vec<MapWarning> {
        let grid: Vec<Vec<u16>> = rows.iter().map(|r| r.chars().map(|c| u16::from(c == '#')).collect()).collect();
        let text = format!(
            r#"{{ "name": "t", "tileSize": 10, "map": {}, "physicsStatic": [1], "physicsDynamic": [{objects}], "respawns": {{ {respawns} }} }}"#,
            serde_json::to_string(&grid).unwrap()
        );
        let cfg = MapConfig::from_json("t.json", &text).unwrap_or_else(|e| panic!("{e}"));
        let mut world = PhysicsWorld::default();
        let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
        map_warnings(&map, &world, width)
    }

    const TWO_ROOMS: [&str; 7] =
        ["###########", "#...#.....#", "#...#.....#", "#.........#", "#...#.....#", "#...#.....#", "###########"];

    fn lines(w: Vec<MapWarning>) -> Vec<String> {
        w.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_respawn_walled_off_from_every_enemy_is_reported() {
        let sealed = ["###########", "#...#.....#", "#...#.....#", "#...#.....#", "###########"];
        let respawns = r#""1": [[15, 15, 0]], "2": [[75, 15, 0], [85, 35, 0]], "3": [[25, 25, 0]]"#;
        let w = lines(warnings(&sealed, "", respawns, 8.0));
        let why = "warning: a body 8 units wide cannot reach any respawn point of another team from here";
        assert_eq!(w, [format!("respawns.2[0]: {why}"), format!("respawns.2[1]: {why}")], "teams 1 and 3 share a room");
        // A one-cell door is fine for a body 8 wide, not for one 15 wide.
        let respawns = r#""1": [[15, 15, 0]], "2": [[75, 15, 0]]"#;
        assert!(warnings(&TWO_ROOMS, "", respawns, 8.0).is_empty());
        assert_eq!(warnings(&TWO_ROOMS, "", respawns, 15.0).len(), 2);
    }

    #[test]
    fn a_body_in_the_door_is_wedged_and_one_in_the_open_is_not() {
        let respawns = r#""1": [[15, 15, 0]], "2": [[75, 15, 0]]"#;
        let objects = r#"{ "x": 41, "y": 31, "width": 8, "height": 8 }, { "x": 61, "y": 21, "width": 8, "height": 8 }"#;
        let w = lines(warnings(&TWO_ROOMS, objects, respawns, 8.0));
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("physicsDynamic[0]: warning: blocks a corridor"), "{w:?}");
        assert!(w[0].contains("regions of 24 and 15 cells"), "{w:?}");
        // A body closing off a single cell in a corner parts nothing worth naming.
        let corner = r#"{ "x": 11, "y": 21, "width": 8, "height": 8 }"#;
        assert!(warnings(&TWO_ROOMS, corner, respawns, 8.0).is_empty());
    }

    #[test]
    fn two_bodies_wedged_together_are_both_named() {
        let wide = ["###########", "#...#.....#", "#.........#", "#.........#", "#...#.....#", "###########"];
        let objects = r#"{ "x": 41, "y": 21, "width": 8, "height": 8 }, { "x": 41, "y": 31, "width": 8, "height": 8 }"#;
        let w = warnings(&wide, objects, r#""1": [[15, 15, 0]], "2": [[75, 15, 0]]"#, 8.0);
        let fields: Vec<String> = w.into_iter().map(|w| w.field).collect();
        assert_eq!(fields, ["physicsDynamic[0]", "physicsDynamic[1]"]);
        assert_eq!(key_path("team one"), "[\"team one\"]");
    }
}
