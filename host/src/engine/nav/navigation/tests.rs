//! Tests of the navigation: routes, sight, soft obstacles and the lattice.

use std::ops::ControlFlow;

use super::*;
use crate::engine::nav::raycast::walk_ray_cells;
use crate::engine::rng::SplitMix64;

/// The lattice links of cell `n` worked out from the cells alone (two steps the same way,
/// through cell `mid`), the reference the lattice's records are checked against:
/// `f(mid, mid's info, m, m's info, diagonal)` in the order of `STEPS`.
fn each_lattice_neighbour(
    nav: &NavigationSystem,
    n: u32,
    need: u32,
    mut f: impl FnMut(u32, &CellInfo, u32, &CellInfo, bool),
) {
    let mut mask = nav.cells[n as usize].moves;
    while mask != 0 {
        let k = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let mid = (n as isize + nav.offsets[k]) as usize;
        let cmid = &nav.cells[mid];
        if cmid.moves & (1 << k) == 0 {
            continue;
        }
        let m = (mid as isize + nav.offsets[k]) as usize;
        let cm = &nav.cells[m];
        if need > 1 && (u32::from(cmid.fit) < need || u32::from(cm.fit) < need) {
            continue;
        }
        f(mid as u32, cmid, m as u32, cm, k >= 4);
    }
}

/// A navigation from rows of `#` (wall) and `.` (free), cells of 10 world units.
fn nav(rows: &[&str]) -> NavigationSystem {
    build_nav(rows)
}

fn build_nav(rows: &[&str]) -> NavigationSystem {
    let cells: Vec<Vec<bool>> = rows.iter().map(|r| r.chars().map(|c| c == '#').collect()).collect();
    NavigationSystem::new(NavGrid::new(cells[0].len(), cells.len(), 10.0, |c, r| cells[r][c]))
}

/// The centre of cell `(col, row)`.
fn at(col: usize, row: usize) -> [f32; 2] {
    [col as f32 * 10.0 + 5.0, row as f32 * 10.0 + 5.0]
}

/// Every leg of a route, from `start`, stays off the walls (its centre line).
fn stays_off_walls(nav: &NavigationSystem, start: [f32; 2], route: &Route) -> bool {
    let mut from = start;
    route.points().all(|p| {
        let ok = !nav.has_obstacle_between(from, p);
        from = p;
        ok
    })
}

/// How much of a route, from `start`, runs where `inside` says (length).
fn length_where(start: [f32; 2], route: &Route, inside: impl Fn([f32; 2]) -> bool) -> f32 {
    let mut from = start;
    let mut total = 0.0;
    for p in route.points() {
        for k in 0..20 {
            let t = (k as f32 + 0.5) / 20.0;
            if inside([from[0] + (p[0] - from[0]) * t, from[1] + (p[1] - from[1]) * t]) {
                total += distance(from, p) / 20.0;
            }
        }
        from = p;
    }
    total
}

/// Two rooms joined by a door one cell wide (column 8) and, lower down, one four cells wide.
const ROOMS: [&str; 14] = [
    "#################",
    "#.......#.......#",
    "#.......#.......#",
    "#.......#.......#",
    "#...............#",
    "#.......#.......#",
    "#.......#.......#",
    "#.......#.......#",
    "#.......#.......#",
    "#...............#",
    "#...............#",
    "#...............#",
    "#...............#",
    "#################",
];

#[test]
fn a_straight_route_is_one_leg_and_a_blocked_one_goes_around() {
    let nav = nav(&ROOMS);
    let route = nav.find_path(at(2, 2), at(6, 6)).unwrap();
    assert_eq!(route.legs, vec![walk(at(6, 6))]);
    assert!((route.cost - distance(at(2, 2), at(6, 6))).abs() < 1e-3);
    let route = nav.find_path(at(2, 2), at(14, 2)).unwrap();
    assert!(route.legs.len() >= 2, "through a door: {route:?}");
    assert_eq!(route.legs.last().unwrap().point, at(14, 2));
    assert!(stays_off_walls(&nav, at(2, 2), &route), "{route:?}");
    assert!(route.cost > distance(at(2, 2), at(14, 2)));
}

#[test]
fn a_narrow_door_is_refused_to_a_wide_body() {
    let nav = nav(&ROOMS);
    let (from, to) = (at(2, 2), at(14, 2));
    let thin = nav.find_route(from, to, &PathQuery { min_width: 8.0, ..PathQuery::default() }).unwrap();
    assert!(
        length_where(from, &thin, |p| p[1] < 50.0 && (80.0..90.0).contains(&p[0])) > 0.0,
        "through the door at row 4: {thin:?}"
    );
    let wide = nav.find_route(from, to, &PathQuery { min_width: 25.0, ..PathQuery::default() }).unwrap();
    assert_eq!(
        length_where(from, &wide, |p| p[1] < 60.0 && (80.0..90.0).contains(&p[0])),
        0.0,
        "a body 25 wide takes the wide door: {wide:?}"
    );
    assert!(stays_off_walls(&nav, from, &wide));
    assert!(wide.cost > thin.cost);
    assert!(
        nav.find_route(from, to, &PathQuery { min_width: 45.0, ..PathQuery::default() }).is_none(),
        "no door fits 45"
    );
    assert!(!nav.reachable(from, to, 45.0) && nav.reachable(from, to, 25.0) && nav.reachable(from, to, 8.0));
}

#[test]
fn comfort_clearance_prefers_the_wide_corridor() {
    // Rooms of 4 rows above and below; between them a corridor 2 cells wide (columns
    // 7–8) straight on, and one 6 cells wide (columns 12–17) off to the side.
    let mut rows = vec!["#####################"];
    rows.extend(["#...................#"; 4]);
    rows.extend(["#######..###......###"; 8]);
    rows.extend(["#...................#"; 4]);
    rows.push("#####################");
    let nav = nav(&rows);
    let (from, to) = (at(7, 2), at(7, 15));
    let in_narrow = |p: [f32; 2]| (50.0..130.0).contains(&p[1]) && (70.0..90.0).contains(&p[0]);
    let plain = nav.find_route(from, to, &PathQuery { min_width: 10.0, ..PathQuery::default() }).unwrap();
    assert_eq!(plain.legs.len(), 1, "straight down the narrow corridor: {plain:?}");
    assert!(length_where(from, &plain, in_narrow) > 70.0);
    let comfy = PathQuery { min_width: 10.0, comfort_clearance: 15.0, narrow_cost: 4.0, ..PathQuery::default() };
    let route = nav.find_route(from, to, &comfy).unwrap();
    assert_eq!(length_where(from, &route, in_narrow), 0.0, "{route:?}");
    assert!(length_where(from, &route, |p| (120.0..180.0).contains(&p[0]) && (50.0..130.0).contains(&p[1])) > 70.0);
    assert!(stays_off_walls(&nav, from, &route));
}

#[test]
fn penalty_zones_are_avoided_and_never_cut_through() {
    let rows = [
        "###############",
        "#.............#",
        "#.............#",
        "#.............#",
        "#.............#",
        "#.............#",
        "#.............#",
        "#.............#",
        "###############",
    ];
    let nav = nav(&rows);
    let (from, to) = (at(1, 4), at(13, 4));
    assert_eq!(nav.find_path(from, to).unwrap().legs.len(), 1, "open ground: straight");
    let zone = [PenaltyZone { level: 0, center: at(7, 4), radius: 25.0, cost_per_unit: 10.0 }];
    let route = nav.find_route(from, to, &PathQuery { penalties: &zone, ..PathQuery::default() }).unwrap();
    assert!(route.legs.len() >= 2, "{route:?}");
    let mut prev = from;
    for p in route.points() {
        let d = segment_distance(prev, p, zone[0].center);
        assert!(d > 15.0, "a leg passes {d} from the zone's centre: {route:?}");
        prev = p;
    }
    assert!(route.cost > distance(from, to));
}

#[test]
fn no_route_through_a_wall_and_none_into_one() {
    let rows = ["#########", "#...#...#", "#...#...#", "#...#...#", "#########"];
    let nav = nav(&rows);
    assert!(nav.find_path(at(1, 2), at(7, 2)).is_none(), "two sealed rooms");
    assert!(!nav.reachable(at(1, 2), at(7, 2), 0.0));
    // An end inside a wall is tied to the nearest free cell it can see.
    let route = nav.find_path(at(1, 1), at(4, 2)).unwrap();
    assert!(stays_off_walls(&nav, at(1, 1), &Route { legs: route.legs[..route.legs.len() - 1].to_vec(), cost: 0.0 }));
    assert!(nav.find_path([f32::NAN, 0.0], at(1, 1)).is_none());
    assert!(nav.find_path([-1e6, 5.0], at(1, 1)).is_none(), "far outside the map");
    assert!(nav.find_route(at(1, 1), at(3, 3), &PathQuery { min_width: 1e9, ..PathQuery::default() }).is_none());
}

#[test]
fn the_same_query_gives_the_same_route_and_ties_are_stable() {
    // A pillar in the middle: going round either side is equally long.
    let rows = [
        "#########",
        "#.......#",
        "#.......#",
        "#.......#",
        "#...#...#",
        "#.......#",
        "#.......#",
        "#.......#",
        "#########",
    ];
    let nav = nav(&rows);
    let q = PathQuery { min_width: 12.0, ..PathQuery::default() };
    let first = nav.find_route(at(4, 1), at(4, 7), &q).unwrap();
    for _ in 0..5 {
        assert_eq!(nav.find_route(at(4, 1), at(4, 7), &q).unwrap(), first);
    }
    let twin = build_nav(&rows);
    assert_eq!(twin.find_route(at(4, 1), at(4, 7), &q).unwrap(), first, "a fresh system, the same route");
}

#[test]
fn start_and_end_on_one_node_give_two_legs() {
    let rows = ["#####", "#...#", "#.#.#", "#...#", "#####"];
    let nav = nav(&rows);
    // Both points are in the pillar's cell, near its bottom edge: both tie to the free
    // cell below it (the nearest fitting one; from inside a wall nothing is in sight).
    let (a, b) = ([23.0, 29.0], [27.0, 29.0]);
    let route = nav.find_path(a, b).unwrap();
    assert_eq!(route.legs.len(), 2, "{route:?}");
    assert_eq!(route.legs[1].point, b);
}

#[test]
fn soft_obstacles_cost_but_do_not_block() {
    let rows = ["###########", "#.........#", "#.........#", "#.........#", "###########"];
    let mut nav = nav(&rows);
    // A box across the whole corridor at column 5.
    let wall_of_boxes = Obb::new([55.0, 25.0], [4.0, 15.0], 0.0);
    assert!(nav.set_obstacle(0, Some(wall_of_boxes)));
    assert!(!nav.set_obstacle(0, Some(wall_of_boxes)), "the same pose changes nothing");
    assert_eq!(nav.soft_at(at(5, 2)), 1);
    assert_eq!(nav.soft_at(at(4, 2)), 0, "touching is not covering");
    let q = PathQuery { soft_cost: 3.0, ..PathQuery::default() };
    let route = nav.find_route(at(1, 2), at(9, 2), &q).expect("soft obstacles never block");
    let plain = nav.find_path(at(1, 2), at(9, 2)).unwrap();
    assert_eq!(plain.legs.len(), 1, "without a soft cost the soft obstacles are not seen");
    assert!(route.cost > plain.cost + 3.0 * 10.0 - 1e-3, "{} vs {}", route.cost, plain.cost);
    // Moving it leaves a gap along the top: the route takes it.
    nav.set_obstacle(0, Some(Obb::new([55.0, 30.0], [4.0, 9.0], 0.0)));
    assert_eq!(nav.soft_at(at(5, 1)), 0);
    let route = nav.find_route(at(1, 2), at(9, 2), &q).unwrap();
    assert!(length_where(at(1, 2), &route, |p| nav.soft_at(p) > 0) == 0.0, "{route:?}");
    nav.set_obstacle(0, None);
    assert!(nav.soft_values().iter().all(|&v| v == 0));
}

#[test]
fn a_turned_box_covers_the_cells_it_overlaps() {
    let nav = nav(&["..........", "..........", "..........", "..........", ".........."]);
    // A 10×10 box turned 45° at the centre of cell (4, 2): a diamond reaching 7.07 out.
    let cells = nav.cells_under(&Obb::new(at(4, 2), [5.0, 5.0], std::f32::consts::FRAC_PI_4));
    let coords: Vec<(usize, usize)> = cells.iter().map(|&i| nav.grid().coords(i as usize)).collect();
    assert_eq!(coords, vec![(4, 1), (3, 2), (4, 2), (5, 2), (4, 3)], "the diamond misses the diagonal cells");
}

#[test]
fn helpers_answer_in_world_units() {
    let nav = nav(&ROOMS);
    assert_eq!(nav.clearance(at(1, 1)), 5.0);
    assert_eq!(nav.clearance(at(3, 3)), 25.0);
    assert_eq!(nav.clearance(at(0, 0)), 0.0);
    assert!(nav.fits(at(1, 1), 30.0), "the corner is in a 3-square");
    assert!(nav.fits(at(3, 3), 70.0) && !nav.fits(at(3, 3), 71.0), "the room is 7 cells wide");
    assert!(!nav.fits(at(8, 4), 15.0), "the door is one cell");
    assert!(nav.fits(at(8, 4), 10.0));
    // The nearest free cell to a wall point, ties by y then x.
    assert_eq!(nav.nearest_walkable(at(8, 2), 0.0, 30.0), Some(at(7, 2)), "(7, 2) and (9, 2) tie: smaller x");
    assert_eq!(nav.nearest_walkable(at(8, 4), 0.0, 30.0), Some(at(8, 4)), "the door itself");
    assert_eq!(nav.nearest_walkable(at(8, 4), 25.0, 30.0), Some(at(7, 4)), "a body 25 wide does not fit the door");
    assert_eq!(nav.nearest_walkable(at(0, 0), 0.0, 5.0), None, "nothing within 5");
    assert_eq!(nav.nearest_walkable(at(0, 0), 0.0, 20.0), Some(at(1, 1)));
    assert!(nav.has_obstacle_between(at(2, 2), at(14, 2)));
    assert!(!nav.has_obstacle_between(at(2, 4), at(14, 4)), "through the door");
    assert!(nav.has_clear_corridor(at(2, 4), at(14, 4), 4.0));
    assert!(!nav.has_clear_corridor(at(2, 4), at(14, 4), 6.0), "the door is 10 wide");
}

#[test]
fn random_points_fit_and_repeat_with_the_seed() {
    let nav = nav(&ROOMS);
    let mut a = SplitMix64::new(5);
    let mut b = SplitMix64::new(5);
    for _ in 0..50 {
        let p = nav.random_point_where(&mut a, 0, 25.0).unwrap();
        assert!(nav.fits(p, 25.0));
        assert_eq!(nav.random_point_where(&mut b, 0, 25.0), Some(p));
    }
    let sealed = build_nav(&["###", "###"]);
    assert_eq!(sealed.random_point_where(&mut a, 0, 0.0), None);
}

#[test]
fn the_graph_counts_its_nodes_and_links() {
    let nav = nav(&["####", "#..#", "#..#", "####"]);
    assert_eq!(nav.node_count(), 4);
    assert_eq!(nav.link_count(), 6, "4 sides and 2 diagonals of a 2×2 square");
    let dump = nav.debug_json();
    assert_eq!(dump["walk"], json!(["####", "#..#", "#..#", "####"]));
    assert_eq!(dump["fit"], json!(["0000", "0220", "0220", "0000"]));
    assert_eq!(dump["clear"], json!(["0000", "0110", "0110", "0000"]));
}

#[test]
fn large_maps_search_the_lattice_and_fall_back_to_the_cells() {
    let open = |side: usize| {
        NavigationSystem::new(NavGrid::new(side, side, 10.0, |c, r| c == 0 || r == 0 || c == side - 1 || r == side - 1))
    };
    // 129² free cells is over LATTICE_FROM, 128² is not.
    assert!(open(131).uses_lattice());
    assert!(!open(130).uses_lattice());
    assert!(!nav(&ROOMS).uses_lattice());

    // A wall down column 5 pierced only at row 3: no lattice link (even columns and rows)
    // crosses it, so the lattice has no route and the cells find the one through the door.
    let mut rows = vec!["###########".to_string()];
    for r in 1..8 {
        rows.push(if r == 3 { "#.........#".into() } else { "#....#....#".into() });
    }
    rows.push("###########".into());
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let (a, b) = (at(2, 6), at(8, 6));
    let cells = nav(&rows).find_path(a, b).expect("through the door");
    let lattice = nav(&rows).with_lattice(true);
    assert!(lattice.uses_lattice());
    let route = lattice.find_path(a, b).expect("the cells answer where the lattice cannot");
    assert_eq!(route, cells);

    // Where the lattice has a route, it is sound and near the cells' one.
    let wide = nav(&ROOMS).with_lattice(true);
    let (a, b) = (at(2, 2), at(14, 2));
    let route = wide.find_path(a, b).expect("a route");
    assert!(stays_off_walls(&wide, a, &route));
    let exact = nav(&ROOMS).find_path(a, b).expect("a route").cost;
    assert!(route.cost >= exact * 0.999 && route.cost <= exact * 1.2, "{} vs {exact}", route.cost);
}

#[test]
fn lattice_links_follow_the_soft_obstacles_and_cost_what_their_cells_do() {
    let poses = |step: usize| {
        let x = 20.0 + 17.0 * step as f32;
        [
            (0, Some(Obb::new([x, 45.0], [9.0, 6.0], 0.3 * step as f32))),
            (1, (step % 3 != 2).then(|| Obb::new([150.0 - x, 100.0], [12.0, 4.0], 0.0))),
            (2, Some(Obb::new([85.0, 20.0 + 7.0 * step as f32], [5.0, 5.0], 0.0))),
        ]
    };
    let mut moved = nav(&ROOMS).with_lattice(true);
    for step in 0..7 {
        moved.set_obstacles(poses(step));
        let mut fresh = nav(&ROOMS).with_lattice(true);
        fresh.set_obstacles(poses(step));
        assert_eq!(moved.lattice_links, fresh.lattice_links, "step {step}");
        assert!(moved.lattice_links.iter().any(|l| l.soft_mid | l.soft_far != 0));
    }
    let zones = [PenaltyZone { level: 0, center: [70.0, 60.0], radius: 45.0, cost_per_unit: 2.0 }];
    for q in [
        PathQuery::default(),
        PathQuery {
            min_width: 12.0,
            comfort_clearance: 10.0,
            narrow_cost: 2.0,
            soft_cost: 3.0,
            penalties: &zones,
            ..PathQuery::default()
        },
    ] {
        let pricing = Pricing::new(&moved.grid, &q);
        let mut links = 0;
        for l in 0..moved.lattice_nodes() as u32 {
            let ll = moved.lattice_links[l as usize];
            let Some(n) = moved.lattice_cell(l).filter(|&n| moved.grid.is_free(n as usize)) else {
                assert_eq!(ll.moves, 0, "a wall or the padding has no links");
                continue;
            };
            let mut found = 0;
            each_lattice_neighbour(&moved, n, 1, |mid, _, m, _, diagonal| {
                found += 1;
                let k = (0..8).find(|&k| (n as isize + 2 * moved.offsets[k]) as u32 == m).unwrap();
                assert_eq!((l as isize + moved.lattice_offsets[k]) as usize, moved.lattice_index(m));
                let (n, mid, m) = (n as usize, mid as usize, m as usize);
                let cells =
                    moved.link_cost(n, mid, diagonal, &q, &pricing) + moved.link_cost(mid, m, diagonal, &q, &pricing);
                assert_eq!(moved.lattice_price(l, &ll, k, &q, &pricing), cells, "link {k} of {n}");
                links += 1;
            });
            assert_eq!(found, ll.moves.count_ones(), "the links of {n}");
        }
        assert!(links > 100, "{links}");
    }
}

#[test]
fn a_route_is_pulled_taut_only_within_its_horizon() {
    let nav = nav(&ROOMS).with_lattice(true);
    let (a, b) = (at(2, 2), at(14, 2));
    let taut = nav.find_path(a, b).expect("a route");
    let near = nav.find_route(a, b, &PathQuery { smooth_within: 30.0, ..PathQuery::default() }).expect("a route");
    assert_eq!(near.cost, taut.cost, "the same path");
    assert_eq!(near.legs.last(), taut.legs.last());
    assert!(near.legs.len() > taut.legs.len(), "{near:?} vs {taut:?}");
    assert!(stays_off_walls(&nav, a, &near));
    // Past the horizon every leg ends on a lattice node of the path, one straight run of it apart.
    let ends: Vec<[f32; 2]> = near.points().collect();
    let beyond = ends.iter().position(|&p| distance(a, p) > 60.0).expect("legs past the horizon");
    for pair in ends[beyond..ends.len() - 1].windows(2) {
        let [c0, r0] = pair[0].map(|v| (v / 10.0) as i64);
        let [c1, r1] = pair[1].map(|v| (v / 10.0) as i64);
        assert!((c0 | r0 | c1 | r1) & 1 == 0, "lattice nodes: {pair:?}");
        let (dc, dr) = (c1 - c0, r1 - r0);
        assert!(dc == 0 || dr == 0 || dc.abs() == dr.abs(), "one direction: {pair:?}");
    }
    // A long enough horizon is the whole route.
    let all = nav.find_route(a, b, &PathQuery { smooth_within: 1e6, ..PathQuery::default() }).unwrap();
    assert_eq!(all, taut);
}

#[test]
fn a_point_beside_a_wall_enters_the_lattice_where_its_cell_links() {
    // A 2-cell-wide corridor: a wide body fits its cells (fit 2) but has no straight corridor
    // its own width from any cell centre, so only a cell link ties it to the lattice.
    let mut rows = vec!["##########################".to_string()];
    rows.extend((0..2).map(|_| "#........................#".to_string()));
    rows.push("##########################".into());
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    let nav = nav(&rows).with_lattice(true);
    let q = PathQuery { min_width: 16.0, ..PathQuery::default() };
    let (a, b) = (at(3, 1), at(21, 2));
    assert!(!nav.has_clear_corridor(a, a, 8.0));
    assert!(nav.lattice_entry(a, 2, 8.0, false).is_some());
    let route = nav.find_route(a, b, &q).expect("a route along the corridor");
    assert!(stays_off_walls(&nav, a, &route));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn maze() -> impl Strategy<Value = Vec<String>> {
        (4usize..16, 4usize..12).prop_flat_map(|(cols, rows)| {
            prop::collection::vec(prop::collection::vec(prop::bool::weighted(0.3), cols), rows).prop_map(|cells| {
                cells.iter().map(|r| r.iter().map(|&w| if w { '#' } else { '.' }).collect()).collect()
            })
        })
    }

    /// The corridor test the long way: every one of the `2·lines + 1` parallel lines walked
    /// end to end over the grid.
    fn corridor_by_lines(nav: &NavigationSystem, start: [f32; 2], end: [f32; 2], half: f32) -> bool {
        let cell = nav.grid().cell();
        let lines = (half / cell).ceil() as i64;
        let (dx, dy) = (end[0] - start[0], end[1] - start[1]);
        let len = (dx * dx + dy * dy).sqrt();
        let normal = if len > 1e-6 { [-dy / len, dx / len] } else { [0.0, 1.0] };
        (-lines..=lines).all(|i| {
            let o = if lines == 0 { 0.0 } else { half * i as f32 / lines as f32 };
            let a = [start[0] + normal[0] * o, start[1] + normal[1] * o];
            let b = [end[0] + normal[0] * o, end[1] + normal[1] * o];
            walk_ray_cells(a, b, cell, |c, r| match nav.grid().index(c, r) {
                Some(i) if nav.grid().is_free(i) => ControlFlow::Continue(()),
                _ => ControlFlow::Break(()),
            })
            .is_continue()
        })
    }

    proptest! {
        /// The corridor test's shortcuts (the centre line's clearances, the corners) give
        /// the answer of walking every parallel line.
        #[test]
        fn corridors_match_their_parallel_lines(rows in maze(), a in (0.0f32..160.0, 0.0f32..120.0), b in (0.0f32..160.0, 0.0f32..120.0), half in prop_oneof![Just(0.0f32), 0.0f32..30.0]) {
            let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
            let nav = nav(&rows);
            let (a, b) = ([a.0, a.1], [b.0, b.1]);
            prop_assert_eq!(nav.has_clear_corridor(a, b, half), corridor_by_lines(&nav, a, b, half));
        }

        /// Routes exist exactly between cells the grid connects; they never cross a wall,
        /// fit the body all the way, end at the end, and are found again identically.
        #[test]
        fn routes_are_sound(rows in maze(), a in (0usize..16, 0usize..12), b in (0usize..16, 0usize..12), width in prop_oneof![Just(0.0f32), Just(12.0f32)], lattice in any::<bool>()) {
            let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
            let nav = nav(&rows).with_lattice(lattice);
            // The longest leg that may skip the corridor test: one link.
            let link = if lattice { 20.0 * std::f32::consts::SQRT_2 + 0.01 } else { 15.0 };
            let (cols, rs) = (rows[0].len(), rows.len());
            let (a, b) = (at(a.0 % cols, a.1 % rs), at(b.0 % cols, b.1 % rs));
            prop_assume!(nav.fits(a, width) && nav.fits(b, width));
            let q = PathQuery { min_width: width, ..PathQuery::default() };
            let route = nav.find_route(a, b, &q);
            prop_assert_eq!(route.is_some(), nav.reachable(a, b, width));
            if let Some(route) = route {
                prop_assert_eq!(route.legs.last().unwrap().point, b);
                let mut from = a;
                for p in route.points() {
                    prop_assert!(nav.has_clear_corridor(from, p, width / 2.0) || distance(from, p) <= link,
                        "leg {:?} → {:?} leaves the corridor", from, p);
                    prop_assert!(!nav.has_obstacle_between(from, p), "leg {:?} → {:?} crosses a wall", from, p);
                    from = p;
                }
                prop_assert_eq!(nav.find_route(a, b, &q), Some(route));
            }
        }
    }
}
