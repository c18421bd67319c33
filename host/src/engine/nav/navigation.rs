//! [`NavigationSystem`]: the grid as a graph, sight and corridors, routes for a [`PathQuery`], soft obstacles.
//!
//! # The graph
//!
//! Every free cell of the [`NavGrid`] is a node, numbered row-major. A node links to its
//! eight neighbours; a diagonal link needs both cells beside it free, so no route cuts a
//! wall's corner. A link is `cell` (straight) or `cell·√2` (diagonal) long, and its `fit` and
//! `clear` are the smaller of its two ends'.
//!
//! # Routes
//!
//! [`NavigationSystem::find_route`] answers in this order:
//!
//! 1. **Straight.** When the segment start → end has a clear corridor as wide as the body
//!    plus, when the query prices narrow links, `comfort_clearance` on each side
//!    ([`NavigationSystem::has_clear_corridor`]), crosses no penalty zone and (with a
//!    `soft_cost`) no soft obstacle, the route is that one leg.
//! 2. **Entry nodes.** Start and end are each tied to a node: their own cell when the body
//!    fits it, else the nearest fitting cell within [`ENTRY_RINGS`] rings of cells around
//!    the point that the point can see, else the nearest fitting one. Start and end tied to
//!    one node give a two-leg route (that node, then the end).
//! 3. **A\*** over the links the body fits (`fit ≥ ceil(min_width / cell)`), each costing
//!    its length, plus `narrow_cost · length · (1 − margin / comfort_clearance)` while the
//!    margin (the link's clearance less half the body) is under `comfort_clearance`, plus
//!    `cost_per_unit · (1 − d / radius) · length` for every penalty zone whose centre is `d`
//!    from the link's midpoint, plus `soft_cost · length` into a cell a soft obstacle covers.
//!    With a `soft_cost`, the margin is measured to soft obstacles too.
//!    The heuristic is the larger of the octile distance and the landmarks' bound (below),
//!    times `heuristic_weight` (1 by default) and `1 + 1/1024`: among equally cheap routes the
//!    search goes deep first, and a route costs at most 0.1 % more than the cheapest. A
//!    weight above 1 makes the search go for the goal instead of widening around every
//!    narrow place, for routes at most that many times dearer found much sooner (the nav
//!    bench prints how much dearer, on average and at worst). Ties on `f` go to the lower
//!    node index. On a large map the search runs on the lattice first (below).
//! 4. **Smoothing.** The cell path is pulled taut: from each leg's start, the farthest point
//!    of the path reachable by a straight leg that passes the same tests as step 1 ends the
//!    leg; where none does, the body's own width is enough for the corridor; where not even
//!    that reaches past the path's next cell, the leg goes to that cell. Only such a one-cell
//!    leg may cut into a penalty zone. Legs are pulled taut only from points within
//!    [`PathQuery::smooth_within`] of the start along the path; past that, the legs are the
//!    path's own turns (a mover that plans again before it gets there needs no more, and a
//!    long route costs no more to smooth than a short one).
//!
//! [`Route::cost`] is the A\* path's cost plus the straight distances from the start to its
//! entry node and from the end's entry node to the end.
//!
//! # The lattice
//!
//! A map with more than [`LATTICE_FROM`] free cells (128×128) is searched on a coarser graph
//! first, as a spec's node grid two tiles apart: the lattice's nodes are the free cells with
//! an even column and row, and a lattice link is two cell links the same way (straight or
//! diagonal) through the cell between, allowed where both are, costing what the two cost. A
//! quarter of the nodes and routes of half as many steps make a search several times
//! cheaper; the routes, pulled taut the same way, come out a few per cent longer (the
//! bench prints by how much). Each lattice node keeps its links' metadata side by side (the
//! smaller `fit` of the two cells a link enters, the smaller `clear` of each cell link's two
//! cells, with and without soft obstacles, and which of its cells they cover), brought up to
//! date wherever soft obstacles move, so an expansion reads one place.
//!
//! Start and end are tied to their own cell when the body fits it and it is a lattice node,
//! else (the body fitting their cell) to the nearest lattice node one cell link away, as the
//! cells' graph would go; else to the nearest lattice node the body fits within
//! [`ENTRY_RINGS`] rings of lattice nodes that it can reach by a straight corridor its own
//! width. Where there is none, or the two lattice nodes are not linked (a passage only one
//! odd row or column wide), the query is answered on the cells as above, so the lattice never
//! loses a route. [`NavigationSystem::with_lattice`] turns it on or off whatever the size.
//!
//! # Landmarks
//!
//! When it is built, the system picks [`LANDMARKS`] nodes far apart (each the node farthest
//! from those picked before) and keeps every node's shortest distance, for a point, from
//! each. For any query the cost from a node `n` to the goal is at least
//! `|d(L, n) − d(L, goal)|` for every landmark `L` (the triangle inequality; a wider body or
//! a priced link only adds to it), which bounds far better than the straight distance where
//! walls force detours. Building them is a Dijkstra search per landmark.
//!
//! On the lattice the landmarks are the body's own: the first search of the lattice for a
//! body size and a narrow-place pricing (`min_width`, `comfort_clearance`, `narrow_cost`)
//! picks landmarks among the lattice nodes that body fits and keeps their costs to every
//! lattice node for that body and pricing, walls only (soft obstacles and penalty zones
//! only add to a cost, so the bound stays below it). Where narrow places make routes
//! dearer than their length, that bound stays within a few per cent of the true cost, and
//! a search expands little more than its route. The last few such sets are kept; a set
//! costs a Dijkstra search per landmark over the lattice once (about 15 ms on a 256×256
//! map).
//!
//! # Layered maps
//!
//! [`NavigationSystem::generate_layered`] builds a layered map's navigation: every level's
//! grid stacked in one, each level a band of rows with [`LEVEL_GAP`] blocked rows between
//! bands, so that every link, sight line, corridor and ring search above stays within its
//! level (the `layers` module has the details). A level's cell is free where it has floor
//! (the ground: where it is not a wall); the cells of a ramp run are [`RAMP`]
//! on the level it starts from, neither free nor an obstacle to sight
//! ([`NavigationSystem::is_walkable_on`] and [`NavigationSystem::has_obstacle_between_on`]): a
//! route crosses a ramp only by its link. Links join the levels' nodes: a ramp's, both ways,
//! from the cell before its foot to the one beyond its top on each lane, costing its length
//! (a body wider than the wide ramp may not take it); a ledge's, downward only, from each
//! cell at a level's open edge to the cell below it on the level it lands on, costing its
//! length plus [`LEDGE_PENALTY`] per level times [`PathQuery::ledge_cost_scale`]. Each link
//! has its `fit` and `clear` like a cell link, and a penalty zone on either of its levels
//! prices it by its midpoint.
//!
//! [`NavigationSystem::find_route_on`] takes a [`PathPoint`] (a level and a point) at each
//! end and answers as above, on the cells: the straight leg only on one level; the search
//! follows the links too, its heuristic the octile distance in the levels' own coordinates
//! and landmarks whose distances take every link either way at its length (so the bound
//! stays below any route's cost); the path is pulled taut level by level, and each link is
//! a leg of its own ([`LegKind::Ramp`], [`LegKind::Ledge`]) carrying the level it reaches.
//! A layered map is not searched on the lattice. Queries per level end in `_on`; the flat
//! ones are the ground's. A flat map builds and answers exactly as before levels existed.
//!
//! # Soft obstacles
//!
//! Things that move (a map's dynamic objects) are not walls: a route may go through them at a price
//! ([`PathQuery::soft_cost`]). [`NavigationSystem::set_obstacle`] records each one's box (on a
//! layered map [`NavigationSystem::set_obstacles_on`], on its level); the cells it overlaps
//! carry a count. The engine updates them at the start of every tick from
//! the bodies' poses ([`crate::engine::nav`]), so what a query sees depends only on the
//! current world.
//!
//! # Determinism
//!
//! Queries read only the grid, the soft counts and their arguments; cells are visited in
//! fixed orders and all arithmetic is `f32` (transcendental functions through `libm`), so the same
//! query on the same state gives the same route on every machine. Scratch buffers are kept
//! behind a mutex between queries; they hold nothing a query's answer depends on.
//!
//! # Files
//!
//! This file holds the types and what the parts share (a node's neighbours, the levels'
//! bands, the graph's counts and its debug dump). In `navigation/`: `build.rs` builds the
//! graph (the cells, the landmarks, the lattice's links and numbering, the connected parts and
//! the lattice's landmarks per body); `search.rs` answers routes (entry nodes, link prices,
//! A\*, pulling taut, [`NavigationSystem::prepare`]); `sight.rs` the other queries (sight,
//! corridors, clearance, fits, the nearest walkable and random points, reachability, regions);
//! `crates.rs` the soft obstacles; `layers.rs` a layered map's bands and links; `tests.rs` the
//! tests.

use std::sync::Mutex;

use serde_json::{Value, json};

use crate::engine::map::Axis;
use crate::engine::nav::grid::{FREE, NavGrid, RAMP};
use crate::engine::nav::pathfinder::SearchScratch;
pub use crate::engine::nav::raycast::Obb;

mod build;
mod crates;
mod layers;
mod search;
mod sight;

use layers::{Band, Layers};
pub use layers::{LEDGE_PENALTY, LEVEL_GAP};

/// How many rings of cells around a point are searched for its entry node.
pub const ENTRY_RINGS: i64 = 4;

/// The heuristic's own weight (see the module docs): ties go deep.
const HEURISTIC_WEIGHT: f32 = 1.0 + 1.0 / 1024.0;

/// Maps with more free cells than this search the lattice first (see the module docs).
pub const LATTICE_FROM: usize = 128 * 128;

/// How many random nodes [`NavigationSystem::random_point_where`] tries before it takes any.
pub const RANDOM_TRIES: u32 = 16;

/// The eight neighbour steps, in the order they are expanded.
const STEPS: [(i64, i64); 8] = [(1, 0), (0, 1), (-1, 0), (0, -1), (1, 1), (-1, 1), (-1, -1), (1, -1)];

/// A circle a route should keep out of: links whose midpoint is inside cost more.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PenaltyZone {
    /// The level it lies on: only links on that level (a ramp's: on either of its levels)
    /// cost more. A flat map has only level 0.
    pub level: u8,
    /// The centre, world units.
    pub center: [f32; 2],
    /// The radius, world units.
    pub radius: f32,
    /// Extra cost per unit of length at the centre, falling linearly to 0 at the edge.
    pub cost_per_unit: f32,
}

/// What a route must respect and what it should prefer (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathQuery<'a> {
    /// The body's width, world units: links it does not fit are forbidden, straight legs
    /// need a corridor this wide. 0: no limit (a point).
    pub min_width: f32,
    /// The margin from walls wanted beyond half the body, world units. 0: no preference.
    pub comfort_clearance: f32,
    /// The extra cost, as a share of a link's length, of a link with no margin at all,
    /// falling linearly to 0 at `comfort_clearance`.
    pub narrow_cost: f32,
    /// The extra cost per unit of length into a cell a soft obstacle covers. 0: soft
    /// obstacles are ignored.
    pub soft_cost: f32,
    /// Circles to keep out of.
    pub penalties: &'a [PenaltyZone],
    /// How much the search weighs its estimate of the rest of the route (at least 1): 1 finds
    /// the cheapest route; above 1 it finds one at most that many times dearer, sooner.
    pub heuristic_weight: f32,
    /// How far along the path, world units, the route is pulled taut (see the module docs);
    /// beyond, its legs are the path's own turns. Infinite: the whole route.
    pub smooth_within: f32,
    /// What a drop off a ledge costs on top of its length, as a multiple of
    /// [`LEDGE_PENALTY`] per level fallen (layered maps): 1 by default, 0 for its length
    /// alone, [`f32::INFINITY`] to forbid drops.
    pub ledge_cost_scale: f32,
}

impl Default for PathQuery<'_> {
    /// A point with no preferences: the shortest route around the walls.
    fn default() -> Self {
        PathQuery {
            min_width: 0.0,
            comfort_clearance: 0.0,
            narrow_cost: 0.0,
            soft_cost: 0.0,
            penalties: &[],
            heuristic_weight: 1.0,
            smooth_within: f32::INFINITY,
            ledge_cost_scale: 1.0,
        }
    }
}

/// A point on one level of the map: where a route starts or ends on a layered map.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PathPoint {
    /// The level (0: the ground).
    pub level: u8,
    /// The point, world units.
    pub point: [f32; 2],
}

impl PathPoint {
    /// `point` on `level`.
    pub fn new(level: u8, point: [f32; 2]) -> PathPoint {
        PathPoint { level, point }
    }

    /// `point` on the ground.
    pub fn ground(point: [f32; 2]) -> PathPoint {
        PathPoint { level: 0, point }
    }
}

/// How a route arrives at one of its points.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LegKind {
    /// Driving on one level (the only kind on a flat map).
    Walk,
    /// Up or down a ramp run, straight along it from the cell before its foot to the cell
    /// beyond its top or back ([`RampRun`](crate::engine::map::RampRun)'s axis and sign).
    Ramp {
        /// The axis the run rises along.
        axis: Axis,
        /// +1 when it rises toward growing x (or y), −1 toward shrinking.
        sign: i8,
    },
    /// Off a slab's open edge down to the level below, one cell across.
    Ledge {
        /// Levels fallen.
        height: u8,
    },
}

/// One leg of a route: where it goes, on which level, and how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RouteLeg {
    /// The point the leg ends at, world units.
    pub point: [f32; 2],
    /// How it gets there.
    pub kind: LegKind,
    /// The level its end is on.
    pub level: u8,
}

/// A route: its legs in order (the last ends at the route's end) and its cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Route {
    /// The legs; the route starts where the caller stands.
    pub legs: Vec<RouteLeg>,
    /// Length plus penalties (see the module docs).
    pub cost: f32,
}

impl Route {
    /// The points of the legs, in order.
    pub fn points(&self) -> impl Iterator<Item = [f32; 2]> + '_ {
        self.legs.iter().map(|l| l.point)
    }
}

/// A soft obstacle: its box, its level and the cells it covers.
#[derive(Clone, Debug, PartialEq)]
struct Soft {
    shape: Obb,
    level: u8,
    cells: Vec<u32>,
}

/// Which graph a search walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Graph {
    /// Every free cell.
    Cells,
    /// The lattice: cells with even column and row, linked two cells apart.
    Lattice,
}

/// Connected parts of the graph for one body size.
#[derive(Clone, Debug)]
struct Components {
    need: u32,
    graph: Graph,
    /// Per cell: 0 where the body does not fit, else its part's number from 1.
    labels: Vec<u32>,
    /// Cells per part (index = label).
    sizes: Vec<u32>,
}

#[derive(Debug, Default)]
struct Search {
    scratch: SearchScratch,
    /// The lattice's, numbered by [`NavigationSystem::lattice_index`].
    lattice_scratch: SearchScratch,
    components: Vec<Components>,
    /// The lattice's landmark distances per body and pricing, newest last.
    profiles: Vec<Profile>,
}

/// How many [`Profile`]s are kept (the oldest goes first).
const PROFILES: usize = 4;

/// Landmark distances on the lattice for one body (`need`) and one narrow-place pricing: the
/// cost, without soft obstacles and penalty zones, from each of a few far-apart lattice
/// nodes to every lattice node, stored like [`Landmarks`].
#[derive(Debug)]
struct Profile {
    need: u32,
    /// [`Pricing::narrow`], as bits.
    narrow: Vec<[u32; 2]>,
    /// Per lattice node ([`NavigationSystem::lattice_index`]), the landmarks' distances.
    marks: Vec<[u16; LANDMARKS]>,
    step: f32,
}

impl Profile {
    /// The lower bound on the cost from `here` to the node whose distances are `goal`
    /// (as [`NavigationSystem::landmark_bound`]).
    #[inline]
    fn bound(&self, here: &[u16; LANDMARKS], goal: &[u16; LANDMARKS]) -> f32 {
        landmark_bound(here, goal, self.step)
    }
}

/// The navigation of one map (see the module docs).
#[derive(Debug)]
pub struct NavigationSystem {
    grid: NavGrid,
    /// What a search reads of each cell, side by side.
    cells: Vec<CellInfo>,
    obstacles: Vec<Option<Soft>>,
    free_cells: Vec<u32>,
    links: usize,
    /// `STEPS` as index offsets.
    offsets: [isize; 8],
    /// Per cell, its column and row.
    coords: Vec<[u16; 2]>,
    landmarks: Landmarks,
    /// Whether routes are searched on the lattice first.
    lattice: bool,
    /// Per lattice node ([`NavigationSystem::lattice_index`]), its links.
    lattice_links: Vec<LatticeLinks>,
    /// Lattice columns, as the shift of the lattice's row stride (a power of two).
    lattice_shift: u32,
    /// `STEPS` as lattice index offsets.
    lattice_offsets: [isize; 8],
    /// The levels' bands in the grid and the links between them (a flat map: one band).
    layers: Layers,
    search: Mutex<Search>,
}

/// What a lattice search reads of a lattice node's links, per direction of `STEPS`, kept
/// together so that an expansion touches one place. A lattice link `n → mid → m` costs its
/// two cell links' prices, each from the smaller `clear` of its two cells.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LatticeLinks {
    /// Bit `k` set when a point may move by `STEPS[k]` twice from the node.
    moves: u8,
    /// Bit `k` set when a soft obstacle covers the middle cell of link `k`.
    soft_mid: u8,
    /// Bit `k` set when a soft obstacle covers the far cell of link `k`.
    soft_far: u8,
    /// The smaller `fit` of the middle and the far cell.
    fit: [u8; 8],
    /// The smaller `clear` of (node, middle) and of (middle, far).
    clear: [[u8; 2]; 8],
    /// The same with soft obstacles counted as blocked.
    soft_clear: [[u8; 2]; 8],
}

/// What a search reads of a cell, kept together so that a step touches one place.
#[derive(Clone, Copy, Debug)]
struct CellInfo {
    /// Bit `k` set when a point may move by `STEPS[k]` from the cell.
    moves: u8,
    /// The grid's `fit`.
    fit: u8,
    /// How many soft obstacles cover it.
    soft: u8,
    /// The grid's `clear`.
    clear: u8,
    /// The grid's `clear` with soft obstacles counted as blocked.
    soft_clear: u8,
}

/// A query's link prices, worked out once per query: a link's length and narrow-place cost
/// depend only on its direction and the smaller `clear` of its two cells.
#[derive(Clone, Debug)]
struct Pricing {
    /// Straight and diagonal link lengths.
    len: [f32; 2],
    /// Whether soft obstacles count (`soft_cost > 0`): margins are then measured to them too.
    soft: bool,
    /// `soft_cost ·` each length.
    soft_cost: [f32; 2],
    /// Per `clear` value below its length, the straight and diagonal costs with the narrow
    /// place's extra; from there on a link costs its length.
    narrow: Vec<[f32; 2]>,
    /// The query's penalty zones where the grid has them.
    zones: Vec<Zone>,
}

/// A penalty zone placed in the grid: on a layered map its level's band.
#[derive(Clone, Copy, Debug)]
struct Zone {
    /// The centre in the grid, world units.
    center: [f32; 2],
    /// The centre on its level, world units.
    local: [f32; 2],
    level: u8,
    /// The grid's y range of its band (and half the gaps beside it): a link whose midpoint
    /// lies outside is on another level. Unbounded on a flat map.
    y: [f32; 2],
    radius: f32,
    cost_per_unit: f32,
}

impl Zone {
    /// The extra cost of a link `len` long whose midpoint is `mid` (grid units), when inside.
    #[inline]
    fn extra(&self, mid: [f32; 2], len: f32) -> Option<f32> {
        if mid[1] < self.y[0] || mid[1] >= self.y[1] {
            return None;
        }
        let (dx, dy) = (mid[0] - self.center[0], mid[1] - self.center[1]);
        let d2 = dx * dx + dy * dy;
        (d2 < self.radius * self.radius).then(|| self.cost_per_unit * (1.0 - d2.sqrt() / self.radius) * len)
    }
}

impl Pricing {
    /// The prices of `q` on a flat grid (penalty zones of level 0 only).
    fn new(grid: &NavGrid, q: &PathQuery<'_>) -> Pricing {
        Pricing::with_zones(grid, q, |z| {
            (z.level == 0).then_some(Zone {
                center: z.center,
                local: z.center,
                level: 0,
                y: [f32::NEG_INFINITY, f32::INFINITY],
                radius: z.radius,
                cost_per_unit: z.cost_per_unit,
            })
        })
    }

    /// The prices of `q` on `grid`, its penalty zones placed by `zone` (`None`: left out).
    fn with_zones(grid: &NavGrid, q: &PathQuery<'_>, zone: impl Fn(&PenaltyZone) -> Option<Zone>) -> Pricing {
        let cell = grid.cell();
        let len = [cell, cell * std::f32::consts::SQRT_2];
        let mut narrow = Vec::new();
        if q.narrow_cost > 0.0 && q.comfort_clearance > 0.0 {
            for clear in 0..=u8::MAX {
                let clearance = if clear == 0 { 0.0 } else { (f32::from(clear) - 0.5) * cell };
                let margin = (clearance - q.min_width / 2.0).max(0.0);
                let share = (1.0 - margin / q.comfort_clearance).max(0.0);
                if share == 0.0 {
                    break;
                }
                narrow.push(len.map(|l| l + q.narrow_cost * l * share));
            }
        }
        let soft = q.soft_cost > 0.0;
        let zones = q.penalties.iter().filter_map(zone).collect();
        Pricing { len, soft, soft_cost: len.map(|l| q.soft_cost * l), narrow, zones }
    }

    /// The cost of a link before penalties and soft obstacles.
    #[inline]
    fn base(&self, clear: u8, diagonal: bool) -> f32 {
        match self.narrow.get(usize::from(clear)) {
            Some(costs) => costs[usize::from(diagonal)],
            None => self.len[usize::from(diagonal)],
        }
    }
}

/// How many landmarks the heuristic uses (fewer on maps with fewer free cells).
pub const LANDMARKS: usize = 8;

/// The landmarks of the A\* heuristic (ALT): shortest distances, for a point, from a few
/// far-apart nodes to every node. For any route cost (it is never below the point's
/// distance), `|d(L, n) − d(L, goal)|` is a lower bound, and a much better one than the
/// straight distance where walls force detours.
///
/// Distances are kept per cell as `u16` steps of `step` world units, rounded down
/// ([`UNREACHED`] where a landmark does not reach or past the last landmark), eight to a cell
/// so that a heuristic reads one place; the bound gives up one step to stay below the true
/// distance.
#[derive(Debug, Default)]
struct Landmarks {
    count: usize,
    step: f32,
    /// Per cell, the landmarks' distances to it.
    marks: Vec<[u16; LANDMARKS]>,
}

/// A landmark distance for a cell the landmark does not reach.
const UNREACHED: u16 = u16::MAX;

impl NavigationSystem {
    /// The grid.
    pub fn grid(&self) -> &NavGrid {
        &self.grid
    }

    /// Nodes of the graph (free cells).
    pub fn node_count(&self) -> usize {
        self.free_cells.len()
    }

    /// Links of the graph for a point body (each counted once).
    pub fn link_count(&self) -> usize {
        self.links
    }

    /// Calls `f(m, diagonal)` for every neighbour `m` of node `n` a body needing `need` cells
    /// may move to, in the order of `STEPS`.
    #[inline]
    fn each_neighbour(&self, n: u32, need: u32, mut f: impl FnMut(u32, bool)) {
        let mut mask = self.cells[n as usize].moves;
        while mask != 0 {
            let k = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let m = (n as isize + self.offsets[k]) as usize;
            if need > 1 && u32::from(self.cells[m].fit) < need {
                continue;
            }
            f(m as u32, k >= 4);
        }
    }

    /// Calls `f(k, m)` for every link `k` (of `STEPS`) of lattice node `l` (by
    /// [`Self::lattice_index`]) a body needing `need` cells fits, `m` the lattice node it
    /// reaches, in the order of `STEPS`.
    #[inline]
    fn each_lattice_link(&self, l: u32, need: u32, mut f: impl FnMut(usize, u32)) {
        let links = &self.lattice_links[l as usize];
        let mut mask = links.moves;
        while mask != 0 {
            let k = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if need > 1 && u32::from(links.fit[k]) < need {
                continue;
            }
            f(k, (l as isize + self.lattice_offsets[k]) as u32);
        }
    }

    /// A link's length for a point.
    fn step_length(&self, diagonal: bool) -> f32 {
        if diagonal { self.grid.cell() * std::f32::consts::SQRT_2 } else { self.grid.cell() }
    }

    /// Whether the navigation is a layered map's: its levels stacked in one grid, with ramp
    /// and ledge links between them (see the module docs).
    pub fn is_layered(&self) -> bool {
        self.layers.is_layered()
    }

    /// The levels the navigation has, from the ground up (`[0]` on a flat map).
    pub fn levels(&self) -> &[u8] {
        &self.layers.levels
    }

    /// The range of grid indices that holds `level`'s cells, row-major over the map's columns
    /// and rows; `None` for a level the map does not have. A flat map's ground is the whole grid.
    pub fn level_range(&self, level: u8) -> Option<std::ops::Range<usize>> {
        let band = self.band(level)?;
        let cols = self.grid.cols();
        Some(band.first * cols..(band.first + band.rows) * cols)
    }

    /// The band of `level` in the grid; `None` for a level the map does not have.
    #[inline]
    fn band(&self, level: u8) -> Option<Band> {
        self.layers.band(level)
    }

    /// The ground's band.
    #[inline]
    fn ground(&self) -> Band {
        self.layers.band(0).expect("the ground is always there")
    }

    /// The cell `(col, row)` of the grid, when it lies in `band`.
    #[inline]
    fn band_cell(&self, band: &Band, col: i64, row: i64) -> Option<usize> {
        if row < band.first as i64 || row >= (band.first + band.rows) as i64 {
            return None;
        }
        self.grid.index(col, row)
    }

    /// The index of the cell under grid point `p`, when it lies in `band`.
    #[inline]
    fn band_index(&self, band: &Band, p: [f32; 2]) -> Option<usize> {
        let (c, r) = self.grid.cell_of(p)?;
        self.band_cell(band, c, r)
    }

    /// The graph for [`crate::engine::debug::debug_json`]: the step, node and link counts, and
    /// the grids as rows of characters (`walk`: `.` free, `#` wall; `fit` and `clear` as one
    /// base-36 digit, `clear` capped at 35; `soft`: the soft counts, capped at 9).
    pub fn debug_json(&self) -> Value {
        let g = &self.grid;
        let rows = |values: &[u8], f: &dyn Fn(u8) -> char| -> Vec<String> {
            values.chunks(g.cols().max(1)).map(|row| row.iter().map(|&v| f(v)).collect()).collect()
        };
        let digit = |v: u8| char::from_digit(u32::from(v).min(35), 36).unwrap_or('?');
        let mut dump = json!({
            "step": g.cell(),
            "grid": [g.cols(), g.rows()],
            "nodes": self.node_count(),
            "links": self.link_count(),
            "landmarks": self.landmarks.count,
            "lattice": self.lattice,
            "softObstacles": self.obstacles.iter().filter(|o| o.is_some()).count(),
            "walk": rows(g.walk(), &|v| match v {
                FREE => '.',
                RAMP => '=',
                _ => '#',
            }),
            "fit": rows(g.fit_values(), &digit),
            "clear": rows(g.clear_values(), &digit),
            "soft": rows(&self.soft_values(), &|v| char::from_digit(u32::from(v).min(9), 10).unwrap_or('?')),
        });
        if self.layers.is_layered() {
            dump["levels"] = json!(self.layers.levels);
            dump["levelRows"] = json!([self.layers.rows, self.layers.stride]);
            dump["ramps"] = json!(self.layers.links.iter().filter(|l| !l.is_ledge()).count());
            dump["ledges"] = json!(self.layers.links.iter().filter(|l| l.is_ledge()).count());
        }
        dump
    }
}

/// The largest difference of two cells' landmark distances (`u16` steps of `step`), less one
/// step for the rounding: a lower bound on the cost between them.
#[inline]
fn landmark_bound(here: &[u16; LANDMARKS], goal: &[u16; LANDMARKS], step: f32) -> f32 {
    let best = here.iter().zip(goal).fold(0u16, |best, (&a, &b)| best.max(a.abs_diff(b)));
    f32::from(best.saturating_sub(1)) * step
}

/// A leg on the ground driving to `point` (a flat map's every leg).
#[cfg_attr(not(test), expect(dead_code, reason = "the tests' shorthand"))]
fn walk(point: [f32; 2]) -> RouteLeg {
    leg(point, LegKind::Walk, 0)
}

fn leg(point: [f32; 2], kind: LegKind, level: u8) -> RouteLeg {
    RouteLeg { point, kind, level }
}

fn distance(a: [f32; 2], b: [f32; 2]) -> f32 {
    ((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1])).sqrt()
}

/// The distance from `p` to the segment `a → b`.
pub fn segment_distance(a: [f32; 2], b: [f32; 2], p: [f32; 2]) -> f32 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let len2 = dx * dx + dy * dy;
    let t = if len2 > 0.0 { (((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len2).clamp(0.0, 1.0) } else { 0.0 };
    distance(p, [a[0] + dx * t, a[1] + dy * t])
}

#[cfg(test)]
mod tests;
