//! Navigation on 256×256-tile maps: the nav build time and µs per `find_route`.
//!
//! Two maps are made here from seeds:
//!
//! - **maze**: a grid of 16×16 rooms of 16 tiles each, every wall between two rooms pierced
//!   by a door 3 tiles wide at a random place, and three 2×2 pillars in every room — routes
//!   wind through a dozen doors;
//! - **arena**: open ground with 900 wall blocks of 1–4 × 1–4 tiles scattered over it, like
//!   the default map's, sixteen times its area.
//!
//! On each, 64 seeded pairs of free points anywhere on the map plus the corner-to-corner
//! one, with the query the tanks' bots plan with on such a map (`route_query`: the default
//! tank's body plus a margin, comfort clearance and narrow cost, soft cost, the large maps'
//! heuristic weight, pulled taut over its first `SMOOTH_WITHIN`), the same pulled taut all the
//! way, the same with weight 1 (the cheapest route on the lattice), and the default query (a
//! point, shortest route, pulled taut all the way). Both maps are large enough for the lattice; the
//! summary also gives the bot query on the cells alone, as the baseline, and how much
//! longer the lattice's routes are than the cells' (weight 1, smoothed length).
//!
//! `cargo bench -p vimp-host --bench nav` prints criterion's timings and a summary line per map.

use std::hint::black_box;
use std::time::Instant;

use criterion::Criterion;
use rapier2d::prelude::PhysicsWorld;
use vimp_host::engine::map::{GameMap, MapConfig};
use vimp_host::engine::nav::{self, NavigationSystem, PathQuery, Route};
use vimp_host::engine::rng::SplitMix64;
use vimp_host::tanks::bots::brain::route_query;
use vimp_host::tanks::config::TankModel;

const SIDE: usize = 256;
const TILE: f32 = 32.0;

fn walled() -> Vec<Vec<u16>> {
    let mut grid = vec![vec![0u16; SIDE]; SIDE];
    for (r, row) in grid.iter_mut().enumerate() {
        for (c, t) in row.iter_mut().enumerate() {
            if r == 0 || c == 0 || r == SIDE - 1 || c == SIDE - 1 {
                *t = 1;
            }
        }
    }
    grid
}

fn maze() -> Vec<Vec<u16>> {
    const ROOM: usize = 16;
    let mut rng = SplitMix64::new(11);
    let mut grid = walled();
    for (r, row) in grid.iter_mut().enumerate() {
        for (c, t) in row.iter_mut().enumerate() {
            if r % ROOM == 0 || c % ROOM == 0 {
                *t = 1;
            }
        }
    }
    let rooms = SIDE / ROOM;
    for i in 0..rooms {
        for j in 0..rooms {
            let (r0, c0) = (i * ROOM, j * ROOM);
            if j > 0 {
                let at = r0 + 2 + rng.below((ROOM - 6) as u32) as usize;
                for k in 0..3 {
                    grid[at + k][c0] = 0;
                }
            }
            if i > 0 {
                let at = c0 + 2 + rng.below((ROOM - 6) as u32) as usize;
                for k in 0..3 {
                    grid[r0][at + k] = 0;
                }
            }
            for _ in 0..3 {
                let (pr, pc) = (r0 + 3 + rng.below(9) as usize, c0 + 3 + rng.below(9) as usize);
                for (dr, dc) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                    grid[pr + dr][pc + dc] = 1;
                }
            }
        }
    }
    grid
}

fn arena() -> Vec<Vec<u16>> {
    let mut rng = SplitMix64::new(12);
    let mut grid = walled();
    for _ in 0..900 {
        let (w, h) = (1 + rng.below(4) as usize, 1 + rng.below(4) as usize);
        let (r0, c0) = (3 + rng.below((SIDE - 10) as u32) as usize, 3 + rng.below((SIDE - 10) as u32) as usize);
        for row in grid.iter_mut().skip(r0).take(h) {
            for t in row.iter_mut().skip(c0).take(w) {
                *t = 1;
            }
        }
    }
    grid
}

fn load(name: &str, grid: Vec<Vec<u16>>) -> GameMap {
    let far = TILE * (SIDE as f32 - 1.5);
    let json = serde_json::json!({
        "name": name, "tileSize": TILE, "map": grid, "physicsStatic": [1],
        "respawns": { "1": [[TILE * 1.5, TILE * 1.5, 0]], "2": [[far, far, 0]] }
    });
    let cfg = MapConfig::from_json(name, &json.to_string()).expect("the bench map is valid");
    GameMap::create(&cfg, 1.0, &mut PhysicsWorld::default()).expect("the bench map builds")
}

/// The mean µs per query over many rounds, and the slowest pair's.
fn time(nav: &NavigationSystem, pairs: &[([f32; 2], [f32; 2])], q: &PathQuery<'_>) -> (f64, f64) {
    let rounds = 20;
    let start = Instant::now();
    for _ in 0..rounds {
        for &(a, b) in pairs {
            black_box(nav.find_route(a, b, q));
        }
    }
    let mean = start.elapsed().as_secs_f64() * 1e6 / (rounds * pairs.len()) as f64;
    let worst = pairs
        .iter()
        .map(|&(a, b)| {
            let t = Instant::now();
            for _ in 0..5 {
                black_box(nav.find_route(a, b, q));
            }
            t.elapsed().as_secs_f64() * 1e6 / 5.0
        })
        .fold(0.0, f64::max);
    (mean, worst)
}

/// The length of a route from `start`.
fn length(start: [f32; 2], route: &Route) -> f32 {
    let mut at = start;
    route
        .points()
        .map(|p| {
            let d = ((p[0] - at[0]).powi(2) + (p[1] - at[1]).powi(2)).sqrt();
            at = p;
            d
        })
        .sum()
}

fn main() {
    let plain = PathQuery::default();
    let mut c = Criterion::default().configure_from_args();
    let mut lines = Vec::new();
    for (name, grid) in [("maze", maze()), ("arena", arena())] {
        let map = load(name, grid);
        let cells = NavigationSystem::new(nav::grid_of(&map)).with_lattice(false);
        // A body and pricing's landmarks are worked out once (`prepare`, or else its first query).
        let fresh = NavigationSystem::new(nav::grid_of(&map));
        let bots = route_query(&TankModel::default(), &NavigationSystem::new(nav::grid_of(&map)), &[]);
        let cheapest = PathQuery { heuristic_weight: 1.0, ..bots };
        // The whole route pulled taut, not only the first `SMOOTH_WITHIN` of it.
        let taut = PathQuery { smooth_within: f32::INFINITY, ..bots };
        let taut_cheapest = PathQuery { smooth_within: f32::INFINITY, ..cheapest };
        let far = TILE * (SIDE as f32 - 1.5);
        let t = Instant::now();
        fresh.prepare(&bots);
        let prepare_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        black_box(fresh.find_route([TILE * 1.5, TILE * 1.5], [far, far], &bots));
        let first_ms = t.elapsed().as_secs_f64() * 1e3;
        let builds = 10;
        let t = Instant::now();
        for _ in 0..builds {
            black_box(NavigationSystem::new(nav::grid_of(&map)));
        }
        let build_ms = t.elapsed().as_secs_f64() * 1e3 / builds as f64;
        let nav = NavigationSystem::new(nav::grid_of(&map));
        let mut rng = SplitMix64::new(3);
        let mut pairs: Vec<([f32; 2], [f32; 2])> = (0..64)
            .map(|_| {
                (nav.random_point_where(&mut rng, 0, 40.0).unwrap(), nav.random_point_where(&mut rng, 0, 40.0).unwrap())
            })
            .filter(|&(a, b)| nav.reachable(a, b, 40.0))
            .collect();
        pairs.push(([TILE * 1.5, TILE * 1.5], [far, far]));
        c.bench_function(&format!("nav build {name} 256×256"), |bench| {
            bench.iter(|| NavigationSystem::new(nav::grid_of(&map)))
        });
        c.bench_function(&format!("find_route {name} 256×256, bot query, {} pairs", pairs.len()), |bench| {
            bench.iter(|| pairs.iter().map(|&(a, b)| nav.find_route(a, b, &bots)).filter(Option::is_some).count())
        });
        c.bench_function(&format!("find_route {name} 256×256, bot query weight 1, {} pairs", pairs.len()), |bench| {
            bench.iter(|| pairs.iter().map(|&(a, b)| nav.find_route(a, b, &cheapest)).filter(Option::is_some).count())
        });
        c.bench_function(&format!("find_route {name} 256×256, default query, {} pairs", pairs.len()), |bench| {
            bench.iter(|| pairs.iter().map(|&(a, b)| nav.find_route(a, b, &plain)).filter(Option::is_some).count())
        });
        let (bot_mean, bot_worst) = time(&nav, &pairs, &bots);
        let (taut_mean, taut_worst) = time(&nav, &pairs, &taut);
        let (cheap_mean, cheap_worst) = time(&nav, &pairs, &cheapest);
        let (plain_mean, plain_worst) = time(&nav, &pairs, &plain);
        let (cells_mean, cells_worst) = time(&cells, &pairs, &bots);
        let longer: Vec<f32> = pairs
            .iter()
            .filter_map(|&(a, b)| {
                let (lattice, cells) = (nav.find_route(a, b, &taut_cheapest)?, cells.find_route(a, b, &taut_cheapest)?);
                Some(length(a, &lattice) / length(a, &cells))
            })
            .collect();
        let longer_mean = longer.iter().sum::<f32>() / longer.len().max(1) as f32;
        let dearer: Vec<f32> = pairs
            .iter()
            .filter_map(|&(a, b)| Some(nav.find_route(a, b, &bots)?.cost / nav.find_route(a, b, &cheapest)?.cost))
            .collect();
        let dearer_mean = dearer.iter().sum::<f32>() / dearer.len().max(1) as f32;
        let dearer_max = dearer.iter().copied().fold(1.0, f32::max);
        lines.push(format!(
            "nav {name} 256×256 ({} nodes, {} links, lattice {}): build {build_ms:.1} ms, preparing the bot query \
             {prepare_ms:.1} ms, then its first query {first_ms:.2} ms; find_route µs per query \
             (mean, slowest pair): bot query {bot_mean:.1}, {bot_worst:.1}; the same pulled taut all \
             the way {taut_mean:.1}, {taut_worst:.1}; weight 1 {cheap_mean:.1}, \
             {cheap_worst:.1}; default {plain_mean:.1}, {plain_worst:.1}; bot query on the cells alone \
             {cells_mean:.1}, {cells_worst:.1}; weight {} routes cost {:.1} % more on average, {:.1} % at worst; \
             lattice routes {:.1} % longer than the cells' on average",
            nav.node_count(),
            nav.link_count(),
            nav.uses_lattice(),
            bots.heuristic_weight,
            (dearer_mean - 1.0) * 100.0,
            (dearer_max - 1.0) * 100.0,
            (longer_mean - 1.0) * 100.0,
        ));
    }
    c.final_summary();
    for line in lines {
        println!("{line}");
    }
}
