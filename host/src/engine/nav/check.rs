//! What a map check warns about: respawn points a body cannot drive away from, and objects wedged across a corridor.
//!
//! Warnings are not errors: the map loads and plays. They name the JSON path at fault like
//! [`MapIssue`](crate::engine::map::MapIssue)s do and print as `file:field: warning: reason`.
//!
//! - **Unreachable respawns.** For a body `width` wide, a respawn point from which no
//!   respawn point of any other team can be reached (walls only: objects can be pushed). On
//!   a layered map each point is on its level, and a route may climb ramps and drop off
//!   ledges (never climb them): a respawn on a bridge reaches the ground by them.
//! - **Wedged objects.** With every dynamic object standing as a wall (on a layered map, on
//!   its own level: a crate on a bridge walls no cell of the ground beneath it), an object
//!   whose neighbouring cells lie in two or more separate regions of at least
//!   [`MIN_REGION_CELLS`] cells that are one region without the objects: a body `width` wide
//!   gets from one side to the other only by pushing it (or a neighbour of it) away. Ramps
//!   and ledges join regions like any way round.

use std::collections::BTreeSet;
use std::fmt;

use rapier2d::prelude::PhysicsWorld;

use crate::engine::map::GameMap;
use crate::engine::nav::grid::NavGrid;
use crate::engine::nav::navigation::{NavigationSystem, Obb, PathPoint};

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
    let open = super::navigation_of(map);
    let respawns = map.respawns();
    // Each respawn point on its level.
    let on_level = |team: &str, k: usize, p: &[f32; 3]| {
        let level = map.respawn_levels().get(team).and_then(|l| l.get(k)).copied().unwrap_or(0);
        PathPoint::new(level, [p[0], p[1]])
    };
    if respawns.len() > 1 {
        for (team, points) in respawns {
            for (k, p) in points.iter().enumerate() {
                let here = on_level(team, k, p);
                let mut others = respawns
                    .iter()
                    .filter(|(t, _)| *t != team)
                    .flat_map(|(t, ps)| ps.iter().enumerate().map(move |(j, q)| (t, j, q)));
                if !others.any(|(t, j, q)| open.reachable_on(here, on_level(t, j, q), width)) {
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
    let covered: Vec<Vec<u32>> = boxes
        .iter()
        .enumerate()
        .map(|(i, b)| b.map(|b| open.cells_under_on(map.dynamic_level(i), &b)).unwrap_or_default())
        .collect();
    if covered.iter().all(Vec::is_empty) {
        return warnings;
    }
    let g = open.grid();
    let walled = if open.is_layered() {
        let walls: Vec<u32> = covered.iter().flatten().copied().collect();
        NavigationSystem::layered_with_walls(map.levels(), &walls)
    } else {
        let mut blocked = vec![false; g.walk().len()];
        for &c in covered.iter().flatten() {
            blocked[c as usize] = true;
        }
        let cols = g.cols();
        NavigationSystem::new(NavGrid::new(cols, g.rows(), g.cell(), |c, r| {
            !g.is_free(r * cols + c) || blocked[r * cols + c]
        }))
    };
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

    /// The warnings of a layered map, its objects and respawns as JSON: 10×6 tiles of 10, the
    /// ground parted by a wall down column 6; a ramp rising east over columns 2 and 3 (rows 1
    /// and 2) up to a slab on level 1 (columns 4 to 7, rows 1 and 2, railed on rows 0 and 3)
    /// across the wall, whose open east edge drops onto the ground east of it.
    fn layered_warnings(objects: &str, respawns: &str, width: f32) -> Vec<String> {
        let mut ground = vec![vec![0u16; 10]; 6];
        let mut slab = vec![vec![0u16; 10]; 6];
        for (r, row) in ground.iter_mut().enumerate() {
            row[6] = 1;
            if (1..=2).contains(&r) {
                row[2] = 5;
                row[3] = 5;
            }
        }
        for (row, tile) in slab.iter_mut().zip([7, 9, 9, 7]) {
            row[4..=7].fill(tile);
        }
        let text = format!(
            r#"{{ "name": "t", "tileSize": 10, "map": {}, "physicsStatic": [1], "physicsDynamic": [{objects}],
                "respawns": {{ {respawns} }}, "ramps": [{{ "tile": 5, "dir": "east" }}],
                "levels": {{ "1": {{ "map": {}, "floor": [7, 9], "walls": [7] }} }} }}"#,
            serde_json::to_string(&ground).unwrap(),
            serde_json::to_string(&slab).unwrap()
        );
        let cfg = MapConfig::from_json("t.json", &text).unwrap_or_else(|e| panic!("{e}"));
        let mut world = PhysicsWorld::default();
        let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
        lines(map_warnings(&map, &world, width))
    }

    #[test]
    fn respawns_reach_each_other_up_ramps_and_down_ledges_only() {
        // Team 1 west of the wall, team 2 east of it and on the slab.
        let respawns = r#""1": [[15, 45, 0]], "2": [[85, 45, 0], [55, 15, 0, 1]]"#;
        let why = "warning: a body 8 units wide cannot reach any respawn point of another team from here";
        // West goes up the ramp, across and off the edge; the slab goes down the ramp; but
        // nothing climbs back from the east.
        assert_eq!(layered_warnings("", respawns, 8.0), [format!("respawns.2[0]: {why}")]);
        // A body as wide as three cells takes no ramp two lanes wide: everyone is stuck.
        assert_eq!(layered_warnings("", respawns, 25.0).len(), 3);
    }

    #[test]
    fn a_crate_on_a_level_wedges_that_level_only() {
        let respawns = r#""1": [[15, 45, 0]], "2": [[85, 45, 0]]"#;
        // Two crates across the slab over columns 5 (rows 1 and 2): the way east is shut.
        let on = |level: u8| {
            format!(
                r#"{{ "x": 51, "y": 11, "width": 8, "height": 8, "level": {level} }},
                   {{ "x": 51, "y": 21, "width": 8, "height": 8, "level": {level} }}"#
            )
        };
        let crates = |level: u8| -> Vec<String> {
            layered_warnings(&on(level), respawns, 8.0)
                .into_iter()
                .filter(|w| w.starts_with("physicsDynamic"))
                .collect()
        };
        let w = crates(1);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("physicsDynamic[0]: warning: blocks a corridor"), "{w:?}");
        assert!(w[0].contains("regions of 34 and 22 cells"), "the west and the east side of the slab: {w:?}");
        assert!(w[1].starts_with("physicsDynamic[1]: warning: blocks a corridor"), "{w:?}");
        // The same crates on the ground beneath the slab shut nothing, on the ground or above.
        assert_eq!(crates(0), Vec::<String>::new());
    }

    #[test]
    fn the_overpass_has_no_warnings() {
        let cfg = MapConfig::from_json("bridge.json", include_str!("../../../../maps/bridge.json")).unwrap();
        let mut world = PhysicsWorld::default();
        let map = GameMap::create(&cfg, 1.0, &mut world).unwrap();
        assert_eq!(lines(map_warnings(&map, &world, 46.0)), Vec::<String>::new());
    }
}
