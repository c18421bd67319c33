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

use std::ops::ControlFlow;
use std::sync::{Mutex, PoisonError};

use serde_json::{Value, json};

use crate::engine::map::Axis;
use crate::engine::nav::grid::{FREE, MAX_FIT, NavGrid, RAMP};
use crate::engine::nav::pathfinder::{Frontier, Path, SearchScratch, find_path_with};
use crate::engine::nav::raycast::{slab, walk_ray_cells, walk_ray_indices};
use crate::engine::rng::SplitMix64;

mod layers;

use layers::{Band, Layers, Link};
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

/// A turned box: a soft obstacle's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Obb {
    /// Its centre, world units.
    pub center: [f32; 2],
    /// Half its size along its own axes.
    pub half: [f32; 2],
    /// The cosine and sine of its turn (+x towards +y).
    pub rot: [f32; 2],
}

impl Obb {
    /// A box at `center`, `half` its size, turned by `angle` rad.
    pub fn new(center: [f32; 2], half: [f32; 2], angle: f32) -> Obb {
        Obb { center, half, rot: [libm::cosf(angle), libm::sinf(angle)] }
    }

    /// The distance along the ray from `origin` in the unit direction `dir` at which it enters
    /// the box, within `max_dist`; 0 when `origin` is inside; `None` when it misses (the slab
    /// test in the box's own frame).
    pub fn ray(&self, origin: [f32; 2], dir: [f32; 2], max_dist: f32) -> Option<f32> {
        let [c, s] = self.rot;
        // Into the box's frame: turn back by its angle.
        let local = |v: [f32; 2]| [v[0] * c + v[1] * s, -v[0] * s + v[1] * c];
        let o = local([origin[0] - self.center[0], origin[1] - self.center[1]]);
        let (t_in, t_out) = slab(o, local(dir), [-self.half[0], -self.half[1]], self.half)?;
        (t_out >= 0.0 && t_in <= max_dist).then_some(t_in.max(0.0))
    }

    /// Whether it overlaps the axis-aligned square `[lo, lo + side]²` by more than `slack`
    /// (a separating-axis test on the square's two axes and the box's two).
    fn overlaps_square(&self, lo: [f32; 2], side: f32, slack: f32) -> bool {
        let h = side / 2.0;
        let d = [lo[0] + h - self.center[0], lo[1] + h - self.center[1]];
        let [c, s] = self.rot;
        let (ax, ay) = ([c, s], [-s, c]);
        // The box's extent along the world axes.
        let ex = self.half[0] * c.abs() + self.half[1] * s.abs();
        let ey = self.half[0] * s.abs() + self.half[1] * c.abs();
        if d[0].abs() >= ex + h - slack || d[1].abs() >= ey + h - slack {
            return false;
        }
        // The square's extent along the box's axes.
        let sq = h * (c.abs() + s.abs());
        let along = |a: [f32; 2]| (d[0] * a[0] + d[1] * a[1]).abs();
        along(ax) < self.half[0] + sq - slack && along(ay) < self.half[1] + sq - slack
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
    /// The navigation of a grid, with no soft obstacles.
    pub fn new(grid: NavGrid) -> NavigationSystem {
        let layers = Layers::flat(grid.rows(), grid.cell());
        NavigationSystem::with_layers(grid, layers)
    }

    /// The navigation of a grid whose bands and links are `layers`: on a layered map the
    /// lattice is left out (its routes cross levels only on the cells).
    fn with_layers(grid: NavGrid, layers: Layers) -> NavigationSystem {
        let layered = layers.is_layered();
        let free_cells: Vec<u32> = (0..grid.walk().len()).filter(|&i| grid.is_free(i)).map(|i| i as u32).collect();
        let mut nav = NavigationSystem {
            cells: Vec::new(),
            grid,
            obstacles: Vec::new(),
            free_cells,
            links: 0,
            offsets: [0; 8],
            coords: Vec::new(),
            landmarks: Landmarks::default(),
            lattice: false,
            lattice_links: Vec::new(),
            lattice_shift: 0,
            lattice_offsets: [0; 8],
            layers,
            search: Mutex::new(Search::default()),
        };
        let cols = nav.grid.cols();
        nav.offsets = STEPS.map(|(dc, dr)| dr as isize * cols as isize + dc as isize);
        nav.coords = (0..nav.grid.walk().len()).map(|i| [(i % cols) as u16, (i / cols) as u16]).collect();
        nav.cells = (0..nav.grid.walk().len())
            .map(|i| {
                let g = &nav.grid;
                let (c, r) = g.coords(i);
                let (c, r) = (c as i64, r as i64);
                let mut moves = 0u8;
                for (k, &(dc, dr)) in STEPS.iter().enumerate() {
                    let ok =
                        g.is_free_at(c + dc, r + dr) && (k < 4 || (g.is_free_at(c + dc, r) && g.is_free_at(c, r + dr)));
                    if ok {
                        moves |= 1 << k;
                    }
                }
                CellInfo { clear: g.clear(i), soft_clear: g.clear(i), moves, fit: g.fit(i), soft: 0 }
            })
            .collect();
        let mut links = 0;
        for &i in &nav.free_cells {
            nav.each_neighbour(i, 1, |m, _| links += usize::from(m > i));
        }
        // A ramp counts once (two links, one each way), a ledge once.
        nav.links = links + nav.layers.links.iter().filter(|l| l.is_ledge() || l.from < l.to).count();
        nav.lattice_shift = nav.grid.cols().div_ceil(2).next_power_of_two().trailing_zeros();
        nav.lattice_offsets = STEPS.map(|(dc, dr)| dr as isize * (1isize << nav.lattice_shift) + dc as isize);
        if !layered {
            nav.lattice_links = vec![LatticeLinks::default(); nav.lattice_nodes()];
            for l in 0..nav.lattice_nodes() as u32 {
                nav.link_lattice_node(l);
            }
        }
        nav.place_landmarks();
        nav.lattice = !layered && nav.free_cells.len() > LATTICE_FROM;
        nav
    }

    /// The same navigation searching the lattice first (`true`) or only the cells, whatever the
    /// map's size. A layered map's navigation searches only the cells.
    pub fn with_lattice(mut self, on: bool) -> NavigationSystem {
        self.lattice = on && !self.layers.is_layered();
        self
    }

    /// Whether routes are searched on the lattice first (see the module docs).
    pub fn uses_lattice(&self) -> bool {
        self.lattice
    }

    /// Shortest distances for a point from `start` to every cell (infinite where unreached),
    /// ramps and ledges taken either way at their length: what no route costs less than.
    fn distances_from(&self, start: u32) -> Vec<f32> {
        self.dijkstra(start, |n, reach| {
            self.each_neighbour(n, 1, |m, diagonal| reach(m, self.step_length(diagonal)));
            self.layers.each_undirected(n, 1, |m, link| reach(m, link.length));
        })
    }

    /// The cheapest costs from `start` to every cell (infinite where unreached) over the links
    /// `links(n, reach)` offers as `reach(m, cost)`.
    fn dijkstra(&self, start: u32, links: impl Fn(u32, &mut dyn FnMut(u32, f32))) -> Vec<f32> {
        let mut dist = vec![f32::INFINITY; self.grid.walk().len()];
        let mut heap = std::collections::BinaryHeap::new();
        dist[start as usize] = 0.0;
        heap.push(std::cmp::Reverse((0u32, start)));
        while let Some(std::cmp::Reverse((key, n))) = heap.pop() {
            let d = f32::from_bits(key);
            if d > dist[n as usize] {
                continue;
            }
            links(n, &mut |m, cost| {
                let nd = d + cost;
                if nd < dist[m as usize] {
                    dist[m as usize] = nd;
                    heap.push(std::cmp::Reverse((nd.to_bits(), m)));
                }
            });
        }
        dist
    }

    /// Picks the landmarks: each the node farthest from those picked so far (a node no
    /// landmark reaches first, so every part of the map gets one), ties to the lower index.
    fn place_landmarks(&mut self) {
        let count = LANDMARKS.min(self.free_cells.len());
        if count == 0 {
            self.landmarks.marks = vec![[UNREACHED; LANDMARKS]; self.grid.walk().len()];
            return;
        }
        let columns = farthest_landmarks(&self.free_cells, self.grid.walk().len(), |n| self.distances_from(n));
        let (marks, step) = quantise(&columns, self.grid.walk().len());
        self.landmarks = Landmarks { count, step, marks };
    }

    /// The landmarks' lower bound on the cost from `n` to the node whose distances are `goal`.
    ///
    /// A landmark reaches all of a connected part of the map or none of it, and a search
    /// only visits the part its goal is in: so `n` and the goal are either both
    /// [`UNREACHED`] by a landmark (their difference is 0) or both reached.
    fn landmark_bound(&self, n: u32, goal: &[u16; LANDMARKS]) -> f32 {
        landmark_bound(&self.landmarks.marks[n as usize], goal, self.landmarks.step)
    }

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

    /// Whether a wall (or the map edge) stands between `a` and `b`: the segment's cells, walked
    /// in order ([`walk_ray_cells`]), include a blocked one. Soft obstacles do not block sight.
    pub fn has_obstacle_between(&self, a: [f32; 2], b: [f32; 2]) -> bool {
        self.has_obstacle_between_on(0, a, b)
    }

    /// [`Self::has_obstacle_between`] on `level`: its walls and the edges of its floor block,
    /// a ramp's cells do not (sight and shots pass over them). A level the map does not have
    /// is all obstacle.
    pub fn has_obstacle_between_on(&self, level: u8, a: [f32; 2], b: [f32; 2]) -> bool {
        let Some(band) = self.band(level) else { return true };
        self.obstacle_between(&band, band.to_grid(a), band.to_grid(b))
    }

    /// [`Self::has_obstacle_between_on`] for grid points.
    fn obstacle_between(&self, band: &Band, a: [f32; 2], b: [f32; 2]) -> bool {
        let (lo, hi) = (band.first as i64, (band.first + band.rows) as i64);
        walk_ray_cells(a, b, self.grid.cell(), |c, r| {
            if r < lo || r >= hi || self.grid.is_obstacle_at(c, r) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .is_break()
    }

    /// Whether a body `2·half_width` wide can go straight from `start` to `end`: the centre
    /// line and lines parallel to it on both sides, at most a cell apart and out to
    /// `±half_width`, pass only through free cells.
    pub fn has_clear_corridor(&self, start: [f32; 2], end: [f32; 2], half_width: f32) -> bool {
        self.has_clear_corridor_on(0, start, end, half_width)
    }

    /// [`Self::has_clear_corridor`] on `level` (a ramp's cells are not free: a body crosses
    /// them only up or down the ramp).
    pub fn has_clear_corridor_on(&self, level: u8, start: [f32; 2], end: [f32; 2], half_width: f32) -> bool {
        let Some(band) = self.band(level) else { return false };
        self.corridor_in(&band, band.to_grid(start), band.to_grid(end), half_width, false)
    }

    fn corridor(&self, start: [f32; 2], end: [f32; 2], half_width: f32, avoid_soft: bool) -> bool {
        self.corridor_in(&self.ground(), start, end, half_width, avoid_soft)
    }

    /// The corridor test for grid points within `band`.
    fn corridor_in(&self, band: &Band, start: [f32; 2], end: [f32; 2], half_width: f32, avoid_soft: bool) -> bool {
        let cell = self.grid.cell();
        let half = half_width.max(0.0);
        let lines = (half / cell).ceil();
        if !lines.is_finite() || lines > 64.0 || !start.iter().chain(&end).all(|v| v.is_finite()) {
            return false;
        }
        let lines = lines as i64;
        let (dx, dy) = (end[0] - start[0], end[1] - start[1]);
        let len = (dx * dx + dy * dy).sqrt();
        let normal = if len > 1e-6 { [-dy / len, dx / len] } else { [0.0, 1.0] };
        // The outermost lines' ends are the corridor's corners: one outside the band is a
        // cell outside it on that line (and the map edge counts as blocked).
        let (cols, lo, hi) = (self.grid.cols() as f32, band.first as f32, (band.first + band.rows) as f32);
        let inside = |p: [f32; 2]| {
            let (c, r) = (p[0] / cell, p[1] / cell);
            c >= 0.0 && r >= lo && c < cols && r < hi
        };
        let offset = |p: [f32; 2], o: f32| [p[0] + normal[0] * o, p[1] + normal[1] * o];
        let edge = if lines == 0 { 0.0 } else { half };
        if ![start, end].iter().all(|&p| inside(offset(p, edge)) && inside(offset(p, -edge))) {
            return false;
        }
        // A cell is passable when its clearance is not 0 (blocked, or under a soft obstacle).
        let clear = |i: usize| if avoid_soft { self.cells[i].soft_clear } else { self.cells[i].clear };
        let cols = self.grid.cols();
        // The centre line first, and with it the quick answers: a point of a parallel line
        // `o` away lies in a cell within `⌊|o|/cell⌋ + 1` cells (Chebyshev) of a cell the centre
        // line crosses, so a line whose reach is below the centre line's narrowest `clear`
        // (1 + the Chebyshev distance to the nearest blocked cell) passes only free cells.
        let mut narrowest = u8::MAX;
        let centre = walk_ray_indices(start, end, cell, cols, |i| match clear(i) {
            0 => ControlFlow::Break(()),
            c => {
                narrowest = narrowest.min(c);
                ControlFlow::Continue(())
            }
        });
        if centre.is_break() {
            return false;
        }
        let pass = |i: usize| if clear(i) == 0 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) };
        // The outer lines first: a corridor that fails mostly fails there.
        (1..=lines).rev().flat_map(|i| [i, -i]).all(|i| {
            let o = half * i as f32 / lines as f32;
            let reach = (o.abs() / cell).floor() + 1.0;
            reach < f32::from(narrowest)
                || walk_ray_indices(offset(start, o), offset(end, o), cell, cols, pass).is_continue()
        })
    }

    /// World units from the centre of the cell under `p` to the nearest wall or the map edge;
    /// 0 on a wall and outside the map.
    pub fn clearance(&self, p: [f32; 2]) -> f32 {
        self.clearance_on(0, p)
    }

    /// [`Self::clearance`] on `level`: to the nearest cell of it that is not free.
    pub fn clearance_on(&self, level: u8, p: [f32; 2]) -> f32 {
        let Some(band) = self.band(level) else { return 0.0 };
        self.band_index(&band, band.to_grid(p)).map_or(0.0, |i| self.grid.clearance_index(i))
    }

    /// [`Self::clearance`] with soft obstacles counted as walls.
    pub fn soft_clearance(&self, p: [f32; 2]) -> f32 {
        self.soft_clearance_on(0, p)
    }

    /// [`Self::soft_clearance`] on `level` (its own soft obstacles).
    pub fn soft_clearance_on(&self, level: u8, p: [f32; 2]) -> f32 {
        let Some(band) = self.band(level) else { return 0.0 };
        match self.band_index(&band, band.to_grid(p)).map_or(0, |i| self.cells[i].soft_clear) {
            0 => 0.0,
            d => (f32::from(d) - 0.5) * self.grid.cell(),
        }
    }

    /// Whether a body `width` wide fits the cell under `p`.
    pub fn fits(&self, p: [f32; 2], width: f32) -> bool {
        self.fits_on(0, p, width)
    }

    /// [`Self::fits`] on `level`.
    pub fn fits_on(&self, level: u8, p: [f32; 2], width: f32) -> bool {
        let Some(band) = self.band(level) else { return false };
        let need = self.grid.cells_for(width);
        self.band_index(&band, band.to_grid(p)).is_some_and(|i| self.grid.fits_index(i, need))
    }

    /// Whether the cell under `p` is free on `level` (a body may stand there; not a wall,
    /// not off its floor, not a ramp's cell).
    pub fn is_walkable_on(&self, level: u8, p: [f32; 2]) -> bool {
        let Some(band) = self.band(level) else { return false };
        self.band_index(&band, band.to_grid(p)).is_some_and(|i| self.grid.is_free(i))
    }

    /// How many soft obstacles cover the cell under `p` (0 outside the map).
    pub fn soft_at(&self, p: [f32; 2]) -> u8 {
        self.soft_at_on(0, p)
    }

    /// [`Self::soft_at`] on `level`.
    pub fn soft_at_on(&self, level: u8, p: [f32; 2]) -> u8 {
        let Some(band) = self.band(level) else { return 0 };
        self.band_index(&band, band.to_grid(p)).map_or(0, |i| self.cells[i].soft)
    }

    /// The soft counts, row-major (every level's, as [`Self::level_range`] lays them out).
    pub fn soft_values(&self) -> Vec<u8> {
        self.cells.iter().map(|c| c.soft).collect()
    }

    /// The soft obstacles' boxes, by index (the ones recorded and not removed), whatever
    /// their level.
    pub fn obstacles(&self) -> impl Iterator<Item = &Obb> + '_ {
        self.obstacles.iter().flatten().map(|s| &s.shape)
    }

    /// The soft obstacles' boxes on `level`, by index.
    pub fn obstacles_on(&self, level: u8) -> impl Iterator<Item = &Obb> + '_ {
        self.obstacles.iter().flatten().filter(move |s| s.level == level).map(|s| &s.shape)
    }

    /// The centre of the nearest free cell within `max_radius` of `p` that a body `width`
    /// wide fits; ties go to the smaller distance, then the smaller y, then the smaller x.
    pub fn nearest_walkable(&self, p: [f32; 2], width: f32, max_radius: f32) -> Option<[f32; 2]> {
        self.nearest_walkable_on(0, p, width, max_radius)
    }

    /// [`Self::nearest_walkable`] on `level`.
    pub fn nearest_walkable_on(&self, level: u8, p: [f32; 2], width: f32, max_radius: f32) -> Option<[f32; 2]> {
        let band = self.band(level)?;
        let need = self.grid.cells_for(width);
        let p = band.to_grid(p);
        let (pc, pr) = self.grid.cell_of(p)?;
        let (cols, lo, hi) = (self.grid.cols() as i64, band.first as i64, (band.first + band.rows) as i64);
        let cell = self.grid.cell();
        let reach = (max_radius.max(0.0) / cell).ceil().min(1e9) as i64 + 1;
        let cover = (pc.abs().max((pc - cols + 1).abs())).max((pr - lo).abs().max((pr - hi + 1).abs()));
        let mut best: Option<(f32, usize)> = None;
        let limit2 = max_radius * max_radius;
        for ring in 0..=reach.min(cover) {
            if let Some((d2, _)) = best {
                let near = (ring as f32 - 0.5) * cell;
                if near > 0.0 && near * near > d2 {
                    break;
                }
            }
            self.ring_cells_in(&band, pc, pr, ring, |i| {
                if !self.grid.fits_index(i, need) {
                    return;
                }
                let c = self.grid.center(i);
                let d2 = (c[0] - p[0]) * (c[0] - p[0]) + (c[1] - p[1]) * (c[1] - p[1]);
                if d2 > limit2 {
                    return;
                }
                // Row-major indices order equal distances by y, then x.
                if best.is_none_or(|(bd, bi)| d2 < bd || (d2 == bd && i < bi)) {
                    best = Some((d2, i));
                }
            });
        }
        best.map(|(_, i)| band.to_level(self.grid.center(i)))
    }

    /// Calls `f` with every cell of `band` at Chebyshev distance `ring` from `(pc, pr)`, in a
    /// fixed order.
    fn ring_cells_in(&self, band: &Band, pc: i64, pr: i64, ring: i64, mut f: impl FnMut(usize)) {
        let (cols, lo, hi) = (self.grid.cols() as i64, band.first as i64, (band.first + band.rows) as i64);
        if ring == 0 {
            if let Some(i) = self.band_cell(band, pc, pr) {
                f(i);
            }
            return;
        }
        let (c0, c1) = ((pc - ring).max(0), (pc + ring).min(cols - 1));
        for r in [pr - ring, pr + ring] {
            if (lo..hi).contains(&r) {
                for c in c0..=c1 {
                    f(r as usize * cols as usize + c as usize);
                }
            }
        }
        let (r0, r1) = ((pr - ring + 1).max(lo), (pr + ring - 1).min(hi - 1));
        for c in [pc - ring, pc + ring] {
            if (0..cols).contains(&c) {
                for r in r0..=r1 {
                    f(r as usize * cols as usize + c as usize);
                }
            }
        }
    }

    /// The free cells of `band`, in index order.
    fn free_cells_in(&self, band: &Band) -> &[u32] {
        let cols = self.grid.cols();
        let (lo, hi) = ((band.first * cols) as u32, ((band.first + band.rows) * cols) as u32);
        let from = self.free_cells.partition_point(|&i| i < lo);
        let to = self.free_cells.partition_point(|&i| i < hi);
        &self.free_cells[from..to]
    }

    /// A random node of `level` a body `width` wide fits: up to [`RANDOM_TRIES`] random nodes
    /// of the level, then any random node of it. `None` on a level without a free cell (or
    /// one the map does not have).
    pub fn random_point_where(&self, rng: &mut SplitMix64, level: u8, width: f32) -> Option<[f32; 2]> {
        let band = self.band(level)?;
        let cells = self.free_cells_in(&band);
        let need = self.grid.cells_for(width);
        for _ in 0..RANDOM_TRIES {
            let i = *cells.get(rng.below(cells.len() as u32) as usize)?;
            if self.grid.fits_index(i as usize, need) {
                return Some(band.to_level(self.grid.center(i as usize)));
            }
        }
        self.random_point_on(rng, level)
    }

    /// The centre of a random node on the ground; `None` without a free cell there.
    pub fn random_point(&self, rng: &mut SplitMix64) -> Option<[f32; 2]> {
        self.random_point_on(rng, 0)
    }

    /// The centre of a random node of `level`; `None` without a free cell there.
    pub fn random_point_on(&self, rng: &mut SplitMix64, level: u8) -> Option<[f32; 2]> {
        let band = self.band(level)?;
        let cells = self.free_cells_in(&band);
        let i = *cells.get(rng.below(cells.len() as u32) as usize)?;
        Some(band.to_level(self.grid.center(i as usize)))
    }

    /// The entry node of grid point `p` on `band` for a body needing `need` cells (see the
    /// module docs).
    fn entry(&self, band: &Band, p: [f32; 2], need: u32) -> Option<u32> {
        let (pc, pr) = self.grid.cell_of(p)?;
        if let Some(i) = self.band_cell(band, pc, pr)
            && self.grid.fits_index(i, need)
        {
            return Some(i as u32);
        }
        let mut candidates: Vec<(f32, usize)> = Vec::new();
        for ring in 1..=ENTRY_RINGS {
            self.ring_cells_in(band, pc, pr, ring, |i| {
                if self.grid.fits_index(i, need) {
                    let c = self.grid.center(i);
                    candidates.push(((c[0] - p[0]) * (c[0] - p[0]) + (c[1] - p[1]) * (c[1] - p[1]), i));
                }
            });
        }
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let visible = candidates.iter().find(|(_, i)| !self.obstacle_between(band, p, self.grid.center(*i)));
        visible.or(candidates.first()).map(|&(_, i)| i as u32)
    }

    /// The labels of the graph's connected parts for a body needing `need` cells, computed
    /// once. Ramps and ledges join parts whichever way they go.
    fn with_components<R>(&self, need: u32, graph: Graph, f: impl FnOnce(&Components) -> R) -> R {
        let mut search = self.search.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(c) = search.components.iter().find(|c| c.need == need && c.graph == graph) {
            return f(c);
        }
        let n = self.grid.walk().len();
        let mut labels = vec![0u32; n];
        let mut sizes = vec![0u32];
        let mut stack = Vec::new();
        for &start in &self.free_cells {
            if labels[start as usize] != 0
                || !self.grid.fits_index(start as usize, need)
                || (graph == Graph::Lattice && !self.on_lattice(start))
            {
                continue;
            }
            let label = sizes.len() as u32;
            sizes.push(0);
            labels[start as usize] = label;
            stack.push(start);
            while let Some(i) = stack.pop() {
                sizes[label as usize] += 1;
                let mut visit = |m: u32| {
                    if labels[m as usize] == 0 {
                        labels[m as usize] = label;
                        stack.push(m);
                    }
                };
                match graph {
                    Graph::Cells => {
                        self.each_neighbour(i, need, |m, _| visit(m));
                        self.layers.each_undirected(i, need, |m, _| visit(m));
                    }
                    Graph::Lattice => self.each_lattice_link(self.lattice_index(i) as u32, need, |_, m| {
                        visit(self.lattice_cell(m).expect("a lattice link reaches a lattice cell"))
                    }),
                }
            }
        }
        search.components.push(Components { need, graph, labels, sizes });
        f(search.components.last().expect("just pushed"))
    }

    /// Whether cell `i` is a lattice node's (even column and row).
    fn on_lattice(&self, i: u32) -> bool {
        let [c, r] = self.coords[i as usize];
        (c | r) & 1 == 0
    }

    /// The lattice node for `p` and a body needing `need` cells, `half` wide on each side: where
    /// the body fits `p`'s cell, that cell if it is a lattice node, else the nearest lattice
    /// node a cell link away; otherwise the nearest lattice cell the body fits within
    /// [`ENTRY_RINGS`] rings of lattice cells that the body can drive to from `p` in a straight
    /// line (`from_node`: from the node to `p`). Ties go to the lower index; `None` when there
    /// is none.
    fn lattice_entry(&self, p: [f32; 2], need: u32, half: f32, from_node: bool) -> Option<u32> {
        let (pc, pr) = self.grid.cell_of(p)?;
        // The body fits the point's own cell: that cell, when it is a lattice node, else the
        // nearest lattice node one cell link away, as the cells' graph would go.
        if let Some(i) = self.grid.index(pc, pr)
            && self.grid.fits_index(i, need)
        {
            if self.on_lattice(i as u32) {
                return Some(i as u32);
            }
            let mut best: Option<(f32, u32)> = None;
            self.each_neighbour(i as u32, need, |m, _| {
                if self.on_lattice(m) {
                    let d = distance(p, self.grid.center(m as usize));
                    if best.is_none_or(|(bd, bm)| d < bd || (d == bd && m < bm)) {
                        best = Some((d, m));
                    }
                }
            });
            if let Some((_, m)) = best {
                return Some(m);
            }
        }
        let reach = 2 * ENTRY_RINGS;
        let mut candidates: Vec<(f32, usize)> = Vec::new();
        for r in ((pr - reach).max(0) & !1..=pr + reach).step_by(2) {
            for c in ((pc - reach).max(0) & !1..=pc + reach).step_by(2) {
                if let Some(i) = self.grid.index(c, r)
                    && self.grid.fits_index(i, need)
                {
                    let q = self.grid.center(i);
                    candidates.push(((q[0] - p[0]) * (q[0] - p[0]) + (q[1] - p[1]) * (q[1] - p[1]), i));
                }
            }
        }
        // Nearest first, but without sorting them all: the nearest is nearly always seen.
        while !candidates.is_empty() {
            let (k, &(_, i)) = candidates
                .iter()
                .enumerate()
                .min_by(|(_, a), (_, b)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
                .expect("not empty");
            let c = self.grid.center(i);
            if if from_node { self.corridor(c, p, half, false) } else { self.corridor(p, c, half, false) } {
                return Some(i as u32);
            }
            candidates.swap_remove(k);
        }
        None
    }

    /// Whether a body `width` wide can drive from `a` to `b` (soft obstacles pushed aside).
    pub fn reachable(&self, a: [f32; 2], b: [f32; 2], width: f32) -> bool {
        self.reachable_on(PathPoint::ground(a), PathPoint::ground(b), width)
    }

    /// [`Self::reachable`] between levels: over ramps either way and down ledges.
    pub fn reachable_on(&self, a: PathPoint, b: PathPoint, width: f32) -> bool {
        let need = self.grid.cells_for(width);
        if need > u32::from(MAX_FIT) {
            return false;
        }
        let (Some(band_a), Some(band_b)) = (self.band(a.level), self.band(b.level)) else { return false };
        let (Some(s), Some(g)) =
            (self.entry(&band_a, band_a.to_grid(a.point), need), self.entry(&band_b, band_b.to_grid(b.point), need))
        else {
            return false;
        };
        let joined = self.with_components(need, Graph::Cells, |c| c.labels[s as usize] == c.labels[g as usize]);
        if !joined || !self.layers.has_ledges() {
            return joined;
        }
        self.reaches(s, g, need)
    }

    /// Whether node `g` can be reached from node `s` by a body needing `need` cells, ledges
    /// taken only downward (a search of the nodes `s` reaches).
    fn reaches(&self, s: u32, g: u32, need: u32) -> bool {
        let mut seen = vec![false; self.grid.walk().len()];
        let mut stack = vec![s];
        seen[s as usize] = true;
        while let Some(n) = stack.pop() {
            if n == g {
                return true;
            }
            let mut visit = |m: u32| {
                if !seen[m as usize] {
                    seen[m as usize] = true;
                    stack.push(m);
                }
            };
            self.each_neighbour(n, need, |m, _| visit(m));
            for link in self.layers.links_from(n) {
                if need <= 1 || u32::from(link.fit) >= need {
                    visit(link.to);
                }
            }
        }
        false
    }

    /// The connected parts of the free area for a body `width` wide: per cell its part's
    /// number from 1 (0 where the body does not fit), and each part's size in cells
    /// (index = number; index 0 unused). On a layered map the cells are the grid's (every
    /// level, [`Self::level_range`]), and ramps and ledges join parts whichever way they go.
    pub fn regions(&self, width: f32) -> (Vec<u32>, Vec<u32>) {
        let need = self.grid.cells_for(width);
        self.with_components(need, Graph::Cells, |c| (c.labels.clone(), c.sizes.clone()))
    }

    /// Whether a straight leg `a → b` (grid points on `band`) with a corridor `half` wide on each
    /// side passes the tests of a route's straight legs.
    fn straight(&self, band: &Band, a: [f32; 2], b: [f32; 2], half: f32, q: &PathQuery<'_>, pricing: &Pricing) -> bool {
        self.corridor_in(band, a, b, half, q.soft_cost > 0.0)
            && !pricing.zones.iter().any(|z| z.level == band.level && segment_distance(a, b, z.center) < z.radius)
    }

    /// The prices of `query` on this navigation: on a layered map its penalty zones are
    /// placed in their levels' bands (a zone on a level the map does not have is left out).
    fn pricing(&self, query: &PathQuery<'_>) -> Pricing {
        if !self.layers.is_layered() {
            return Pricing::new(&self.grid, query);
        }
        let cell = self.grid.cell();
        let gap = LEVEL_GAP as f32 / 2.0 * cell;
        Pricing::with_zones(&self.grid, query, |z| {
            let band = self.band(z.level)?;
            Some(Zone {
                center: band.to_grid(z.center),
                local: z.center,
                level: z.level,
                y: [band.first as f32 * cell - gap, (band.first + band.rows) as f32 * cell + gap],
                radius: z.radius,
                cost_per_unit: z.cost_per_unit,
            })
        })
    }

    /// The half-widths of a straight leg's corridor: with the comfort margin (when the query
    /// prices narrow links), and the body's alone.
    fn halves(q: &PathQuery<'_>) -> (f32, f32) {
        let body = q.min_width.max(0.0) / 2.0;
        let comfort = if q.narrow_cost > 0.0 { q.comfort_clearance.max(0.0) } else { 0.0 };
        (body + comfort, body)
    }

    /// The cost of the link from cell `n` to its neighbour `m` (`diagonal` or straight) for
    /// the query `pricing` was worked out for.
    #[inline]
    fn link_cost(&self, n: usize, m: usize, diagonal: bool, _q: &PathQuery<'_>, pricing: &Pricing) -> f32 {
        self.price(n, &self.cells[n], m, &self.cells[m], diagonal, pricing)
    }

    /// [`Self::link_cost`] with the two cells' infos at hand.
    #[inline(always)]
    fn price(&self, n: usize, a: &CellInfo, m: usize, b: &CellInfo, diagonal: bool, pricing: &Pricing) -> f32 {
        let clear = if pricing.soft { a.soft_clear.min(b.soft_clear) } else { a.clear.min(b.clear) };
        let mut cost = pricing.base(clear, diagonal);
        if !pricing.zones.is_empty() {
            let len = pricing.len[usize::from(diagonal)];
            // The midpoint of the two cells' centres, from their coordinates.
            let ([ca, ra], [cb, rb]) = (self.coords[n], self.coords[m]);
            let half = self.grid.cell() / 2.0;
            let mid = [(f32::from(ca) + f32::from(cb) + 1.0) * half, (f32::from(ra) + f32::from(rb) + 1.0) * half];
            for z in &pricing.zones {
                if let Some(extra) = z.extra(mid, len) {
                    cost += extra;
                }
            }
        }
        if pricing.soft && b.soft > 0 {
            cost += pricing.soft_cost[usize::from(diagonal)];
        }
        cost
    }

    /// The cost of a ramp or ledge link for `q`: its length, with a narrow place's extra
    /// from its `clear`, a drop's [`LEDGE_PENALTY`] per level times `ledge_cost_scale`
    /// (infinite: no link), and the penalty zones on either of its levels around its midpoint.
    fn link_price(&self, link: &Link, q: &PathQuery<'_>, pricing: &Pricing) -> f32 {
        let mut cost = link.length * (pricing.base(link.clear, false) / pricing.len[0]);
        if let LegKind::Ledge { height } = link.kind {
            let scale = q.ledge_cost_scale;
            if scale == f32::INFINITY {
                return f32::INFINITY;
            }
            let scale = if scale.is_nan() { 1.0 } else { scale.max(0.0) };
            cost += LEDGE_PENALTY * f32::from(height) * scale;
        }
        for z in &pricing.zones {
            if z.level != link.levels[0] && z.level != link.levels[1] {
                continue;
            }
            let (dx, dy) = (link.mid[0] - z.local[0], link.mid[1] - z.local[1]);
            let d2 = dx * dx + dy * dy;
            if d2 < z.radius * z.radius {
                cost += z.cost_per_unit * (1.0 - d2.sqrt() / z.radius) * link.length;
            }
        }
        cost
    }

    /// A route from `start` to `end` on the ground for `query` (see the module docs); `None`
    /// when the body cannot get there.
    pub fn find_route(&self, start: [f32; 2], end: [f32; 2], query: &PathQuery<'_>) -> Option<Route> {
        self.find_route_on(PathPoint::ground(start), PathPoint::ground(end), query)
    }

    /// A route from `start` to `end`, each on its level, for `query` (see the module docs):
    /// over ramps either way and down ledges where the levels differ or that is cheaper;
    /// `None` when the body cannot get there (or a point's level does not exist).
    pub fn find_route_on(&self, start: PathPoint, end: PathPoint, query: &PathQuery<'_>) -> Option<Route> {
        let need = self.grid.cells_for(query.min_width);
        if need > u32::from(MAX_FIT) || !start.point.iter().chain(&end.point).all(|v| v.is_finite()) {
            return None;
        }
        let (bs, be) = (self.band(start.level)?, self.band(end.level)?);
        let (a, b) = (bs.to_grid(start.point), be.to_grid(end.point));
        let pricing = self.pricing(query);
        if start.level == end.level && self.straight(&bs, a, b, Self::halves(query).0, query, &pricing) {
            let cost = distance(start.point, end.point);
            return Some(Route { legs: vec![leg(end.point, LegKind::Walk, end.level)], cost });
        }
        let s = self.entry(&bs, a, need)?;
        let g = self.entry(&be, b, need)?;
        if s == g {
            return Some(self.two_legs(start, s, end));
        }
        if !self.with_components(need, Graph::Cells, |c| c.labels[s as usize] == c.labels[g as usize]) {
            return None;
        }
        if self.lattice
            && let Some(route) = self.lattice_route(start, end, need, query, &pricing)
        {
            return Some(route);
        }
        let path = self.search(Graph::Cells, s, g, need, query, &pricing)?;
        Some(self.finish(start, end, &path, query, &pricing))
    }

    /// The route through node `n`.
    fn two_legs(&self, start: PathPoint, n: u32, end: PathPoint) -> Route {
        let band = self.layers.band_of(n as usize, self.grid.cols());
        let c = band.to_level(self.grid.center(n as usize));
        Route {
            legs: vec![leg(c, LegKind::Walk, band.level), leg(end.point, LegKind::Walk, end.level)],
            cost: distance(start.point, c) + distance(c, end.point),
        }
    }

    /// The route over the lattice, when start and end both see a lattice node the body fits
    /// and those nodes are linked; `None` sends the query to the cells.
    fn lattice_route(
        &self,
        start: PathPoint,
        end: PathPoint,
        need: u32,
        query: &PathQuery<'_>,
        pricing: &Pricing,
    ) -> Option<Route> {
        let half = Self::halves(query).1;
        let s = self.lattice_entry(start.point, need, half, false)?;
        let g = self.lattice_entry(end.point, need, half, true)?;
        if s == g {
            return Some(self.two_legs(start, s, end));
        }
        if !self.with_components(need, Graph::Lattice, |c| c.labels[s as usize] == c.labels[g as usize]) {
            return None;
        }
        let path = self.search(Graph::Lattice, s, g, need, query, pricing)?;
        Some(self.finish(start, end, &path, query, pricing))
    }

    /// A\* from node `s` to node `g` over `graph`.
    fn search(&self, graph: Graph, s: u32, g: u32, need: u32, q: &PathQuery<'_>, pricing: &Pricing) -> Option<Path> {
        let [gc, gr] = self.coords[g as usize].map(f32::from);
        let cell = self.grid.cell();
        let weight = HEURISTIC_WEIGHT * if q.heuristic_weight > 1.0 { q.heuristic_weight.min(16.0) } else { 1.0 };
        let octile = |n: u32| {
            let [c, r] = self.coords[n as usize];
            let (dx, dy) = ((f32::from(c) - gc).abs(), (f32::from(r) - gr).abs());
            let (lo, hi) = if dx < dy { (dx, dy) } else { (dy, dx) };
            (hi + (std::f32::consts::SQRT_2 - 1.0) * lo) * cell
        };
        let nodes = self.grid.walk().len();
        let mut guard = self.search.lock().unwrap_or_else(PoisonError::into_inner);
        match graph {
            Graph::Cells if self.layers.is_layered() => {
                // The octile distance between points of any levels, in their own coordinates:
                // a ramp or a ledge costs at least the distance it spans.
                let stride = self.layers.stride as u16;
                let local = |n: u32| {
                    let [c, r] = self.coords[n as usize];
                    [f32::from(c), f32::from(r % stride)]
                };
                let [gc, gr] = local(g);
                let goal = self.landmarks.marks[g as usize];
                let heuristic = |n: u32| {
                    let [c, r] = local(n);
                    let (dx, dy) = ((c - gc).abs(), (r - gr).abs());
                    let (lo, hi) = if dx < dy { (dx, dy) } else { (dy, dx) };
                    let octile = (hi + (std::f32::consts::SQRT_2 - 1.0) * lo) * cell;
                    octile.max(self.landmark_bound(n, &goal)) * weight
                };
                let successors = |n: u32, frontier: &mut Frontier<'_, _>| {
                    self.each_neighbour(n, need, |m, diagonal| {
                        if !frontier.is_closed(m) {
                            frontier.offer(m, self.link_cost(n as usize, m as usize, diagonal, q, pricing));
                        }
                    });
                    for link in self.layers.links_from(n) {
                        if (need <= 1 || u32::from(link.fit) >= need) && !frontier.is_closed(link.to) {
                            frontier.offer(link.to, self.link_price(link, q, pricing));
                        }
                    }
                };
                find_path_with(nodes, s, g, heuristic, successors, &mut guard.scratch)
            }
            Graph::Cells => {
                let goal = self.landmarks.marks[g as usize];
                let heuristic = |n: u32| octile(n).max(self.landmark_bound(n, &goal)) * weight;
                let successors = |n: u32, frontier: &mut Frontier<'_, _>| {
                    self.each_neighbour(n, need, |m, diagonal| {
                        if !frontier.is_closed(m) {
                            frontier.offer(m, self.link_cost(n as usize, m as usize, diagonal, q, pricing));
                        }
                    });
                };
                find_path_with(nodes, s, g, heuristic, successors, &mut guard.scratch)
            }
            Graph::Lattice => {
                let search = &mut *guard;
                let profile = self.profile(&mut search.profiles, need, pricing);
                let goal = profile.marks[self.lattice_index(g)];
                let [glc, glr] = self.lattice_coords(self.lattice_index(g) as u32).map(|v| v as f32);
                // The search numbers the lattice's nodes by `lattice_index`; a lattice step is two cells.
                let heuristic = |l: u32| {
                    let [c, r] = self.lattice_coords(l);
                    let (dx, dy) = ((c as f32 - glc).abs(), (r as f32 - glr).abs());
                    let (lo, hi) = if dx < dy { (dx, dy) } else { (dy, dx) };
                    let octile = (hi + (std::f32::consts::SQRT_2 - 1.0) * lo) * 2.0 * cell;
                    octile.max(profile.bound(&profile.marks[l as usize], &goal)) * weight
                };
                let successors = |l: u32, frontier: &mut Frontier<'_, _>| {
                    let links = &self.lattice_links[l as usize];
                    self.each_lattice_link(l, need, |k, m| {
                        if !frontier.is_closed(m) {
                            frontier.offer(m, self.lattice_price(l, links, k, q, pricing));
                        }
                    });
                };
                let (ls, lg) = (self.lattice_index(s) as u32, self.lattice_index(g) as u32);
                let mut path =
                    find_path_with(self.lattice_nodes(), ls, lg, heuristic, successors, &mut search.lattice_scratch)?;
                for n in &mut path.nodes {
                    *n = self.lattice_cell(*n).expect("a search reaches only lattice cells");
                }
                Some(path)
            }
        }
    }

    /// The lattice's numbering's size: its rows times a row stride of a power of two at least
    /// its columns, counting the places of blocked cells and of the padding.
    fn lattice_nodes(&self) -> usize {
        self.grid.rows().div_ceil(2) << self.lattice_shift
    }

    /// The lattice's number of lattice cell `i` (even column and row): row-major over the
    /// lattice, `2^lattice_shift` to a row.
    #[inline]
    fn lattice_index(&self, i: u32) -> usize {
        let [c, r] = self.coords[i as usize];
        usize::from(r / 2) << self.lattice_shift | usize::from(c / 2)
    }

    /// The lattice column and row of lattice number `l`.
    #[inline]
    fn lattice_coords(&self, l: u32) -> [u32; 2] {
        [l & ((1 << self.lattice_shift) - 1), l >> self.lattice_shift]
    }

    /// The cell of lattice number `l`, `None` for the padding past the last column.
    #[inline]
    fn lattice_cell(&self, l: u32) -> Option<u32> {
        let [lc, lr] = self.lattice_coords(l);
        let (c, r) = (2 * lc as usize, 2 * lr as usize);
        (c < self.grid.cols() && r < self.grid.rows()).then(|| (r * self.grid.cols() + c) as u32)
    }

    /// The cost of lattice link `k` of lattice node `l` (whose links are `links`): what
    /// [`Self::price`] gives its two cell links, added up the same way.
    #[inline(always)]
    fn lattice_price(&self, l: u32, links: &LatticeLinks, k: usize, _q: &PathQuery<'_>, pricing: &Pricing) -> f32 {
        let diagonal = k >= 4;
        let d = usize::from(diagonal);
        let clear = if pricing.soft { links.soft_clear[k] } else { links.clear[k] };
        let mut first = pricing.base(clear[0], diagonal);
        let mut second = pricing.base(clear[1], diagonal);
        if !pricing.zones.is_empty() {
            let [lc, lr] = self.lattice_coords(l).map(|v| 2 * v as i64);
            let (dc, dr) = STEPS[k];
            let len = pricing.len[d];
            self.add_zones(&mut first, [lc, lr], [lc + dc, lr + dr], len, pricing);
            self.add_zones(&mut second, [lc + dc, lr + dr], [lc + 2 * dc, lr + 2 * dr], len, pricing);
        }
        if pricing.soft {
            let bit = 1 << k;
            if links.soft_mid & bit != 0 {
                first += pricing.soft_cost[d];
            }
            if links.soft_far & bit != 0 {
                second += pricing.soft_cost[d];
            }
        }
        first + second
    }

    /// Adds to `cost` the penalty zones' share of the cell link `a → b` (column, row) `len`
    /// long, as [`Self::price`] does.
    #[inline(always)]
    fn add_zones(&self, cost: &mut f32, a: [i64; 2], b: [i64; 2], len: f32, pricing: &Pricing) {
        let half = self.grid.cell() / 2.0;
        let mid = [(a[0] as f32 + b[0] as f32 + 1.0) * half, (a[1] as f32 + b[1] as f32 + 1.0) * half];
        for z in &pricing.zones {
            if let Some(extra) = z.extra(mid, len) {
                *cost += extra;
            }
        }
    }

    /// Works out lattice node `l`'s links from its cells' infos.
    fn link_lattice_node(&mut self, l: u32) {
        let mut links = LatticeLinks::default();
        if let Some(n) = self.lattice_cell(l) {
            let cn = self.cells[n as usize];
            if self.grid.is_free(n as usize) {
                for k in 0..8 {
                    if cn.moves & (1 << k) == 0 {
                        continue;
                    }
                    let mid = (n as isize + self.offsets[k]) as usize;
                    let cmid = self.cells[mid];
                    if cmid.moves & (1 << k) == 0 {
                        continue;
                    }
                    let cm = self.cells[(mid as isize + self.offsets[k]) as usize];
                    links.moves |= 1 << k;
                    links.soft_mid |= u8::from(cmid.soft > 0) << k;
                    links.soft_far |= u8::from(cm.soft > 0) << k;
                    links.fit[k] = cmid.fit.min(cm.fit);
                    links.clear[k] = [cn.clear.min(cmid.clear), cmid.clear.min(cm.clear)];
                    links.soft_clear[k] = [cn.soft_clear.min(cmid.soft_clear), cmid.soft_clear.min(cm.soft_clear)];
                }
            }
        }
        self.lattice_links[l as usize] = links;
    }

    /// The lattice's landmarks for a body needing `need` cells and `pricing`'s narrow places
    /// (see the module docs), computed on first use and kept.
    fn profile<'p>(&self, profiles: &'p mut Vec<Profile>, need: u32, pricing: &Pricing) -> &'p Profile {
        let narrow: Vec<[u32; 2]> = pricing.narrow.iter().map(|c| c.map(f32::to_bits)).collect();
        if let Some(k) = profiles.iter().position(|p| p.need == need && p.narrow == narrow) {
            return &profiles[k];
        }
        if profiles.len() >= PROFILES {
            profiles.remove(0);
        }
        // Walls only: soft obstacles and penalty zones only add to a route's cost.
        let walls = Pricing { soft: false, soft_cost: [0.0; 2], zones: Vec::new(), ..pricing.clone() };
        let none = PathQuery::default();
        let distances = |start: u32| {
            self.dijkstra(start, |n, reach| {
                let l = self.lattice_index(n) as u32;
                let links = &self.lattice_links[l as usize];
                self.each_lattice_link(l, need, |k, m| {
                    let m = self.lattice_cell(m).expect("a lattice link reaches a lattice cell");
                    reach(m, self.lattice_price(l, links, k, &none, &walls));
                });
            })
        };
        let nodes: Vec<u32> = self
            .free_cells
            .iter()
            .copied()
            .filter(|&i| self.on_lattice(i) && self.grid.fits_index(i as usize, need))
            .collect();
        let columns: Vec<Vec<f32>> = farthest_landmarks(&nodes, self.grid.walk().len(), distances)
            .iter()
            .map(|column| {
                (0..self.lattice_nodes() as u32)
                    .map(|l| self.lattice_cell(l).map_or(f32::INFINITY, |n| column[n as usize]))
                    .collect()
            })
            .collect();
        let (marks, step) = quantise(&columns, self.lattice_nodes());
        profiles.push(Profile { need, narrow, marks, step });
        profiles.last().expect("just pushed")
    }

    /// The route along a path's nodes from `start` to `end`: priced, and pulled taut level by
    /// level, each ramp or ledge a leg of its own between the nodes it links.
    fn finish(&self, start: PathPoint, end: PathPoint, path: &Path, query: &PathQuery<'_>, pricing: &Pricing) -> Route {
        let (Some(&s), Some(&g)) = (path.nodes.first(), path.nodes.last()) else {
            return Route {
                legs: vec![leg(end.point, LegKind::Walk, end.level)],
                cost: distance(start.point, end.point),
            };
        };
        let cols = self.grid.cols();
        let (bs, bg) = (self.layers.band_of(s as usize, cols), self.layers.band_of(g as usize, cols));
        let cost = path.cost
            + distance(start.point, bs.to_level(self.grid.center(s as usize)))
            + distance(bg.to_level(self.grid.center(g as usize)), end.point);
        let mut legs = Vec::new();
        let mut part: Vec<[f32; 2]> = Vec::with_capacity(path.nodes.len() + 2);
        part.push(bs.to_grid(start.point));
        let (mut band, mut horizon, mut previous) = (bs, query.smooth_within, s);
        for &n in &path.nodes {
            let here = self.layers.band_of(n as usize, cols);
            if here.first != band.first {
                horizon = self.pull_part(&mut legs, &mut part, &band, horizon, query, pricing);
                let link = self.layers.link(previous, n).expect("a path changes level only over a link");
                legs.push(leg(here.to_level(self.grid.center(n as usize)), link.kind, here.level));
                horizon -= link.length;
                band = here;
                part.clear();
            }
            part.push(self.grid.center(n as usize));
            previous = n;
        }
        part.push(band.to_grid(end.point));
        self.pull_part(&mut legs, &mut part, &band, horizon, query, pricing);
        Route { legs, cost }
    }

    /// Pulls one level's part of a path taut (its points, grid units, from where the mover
    /// stands) into `legs`, smoothed within `horizon` of its start; returns what is left of the
    /// horizon after it.
    fn pull_part(
        &self,
        legs: &mut Vec<RouteLeg>,
        part: &mut Vec<[f32; 2]>,
        band: &Band,
        horizon: f32,
        query: &PathQuery<'_>,
        pricing: &Pricing,
    ) -> f32 {
        part.dedup();
        legs.extend(self.pull_taut(part, query, pricing, band, horizon));
        horizon - part.windows(2).map(|w| distance(w[0], w[1])).sum::<f32>()
    }

    /// Works out now what the first [`Self::find_route`] for `query`'s body and narrow-place
    /// pricing would: the graph's connected parts for that body and, on the lattice, its
    /// landmarks (tens of milliseconds on a 256×256 map). A game calls it when a map loads, so
    /// that no tick pays for it. Routes are the same either way.
    pub fn prepare(&self, query: &PathQuery<'_>) {
        let need = self.grid.cells_for(query.min_width);
        if need > u32::from(MAX_FIT) {
            return;
        }
        self.with_components(need, Graph::Cells, |_| ());
        if self.lattice {
            self.with_components(need, Graph::Lattice, |_| ());
            let pricing = self.pricing(query);
            let mut search = self.search.lock().unwrap_or_else(PoisonError::into_inner);
            self.profile(&mut search.profiles, need, &pricing);
        }
    }

    /// [`Self::find_route`] with [`PathQuery::default`]: the shortest route of a point.
    pub fn find_path(&self, start: [f32; 2], end: [f32; 2]) -> Option<Route> {
        self.find_route(start, end, &PathQuery::default())
    }

    /// [`Self::find_route_on`] with [`PathQuery::default`]: the shortest route of a point
    /// between levels (a drop costing [`LEDGE_PENALTY`] per level on top of its length).
    pub fn find_path_on(&self, start: PathPoint, end: PathPoint) -> Option<Route> {
        self.find_route_on(start, end, &PathQuery::default())
    }

    /// The smoothing step (see the module docs): `points` is start, the path's cell centres, end.
    ///
    /// A straight leg keeps the comfort margin where it can; where it cannot (a corridor
    /// narrower than body and margin), the body's own width is enough; where not even that
    /// reaches a farther point, the leg goes to the next cell of the path.
    fn pull_taut(
        &self,
        points: &[[f32; 2]],
        q: &PathQuery<'_>,
        pricing: &Pricing,
        band: &Band,
        smooth_within: f32,
    ) -> Vec<RouteLeg> {
        let last = points.len() - 1;
        let dir = |i: usize| {
            let (a, b) = (points[i], points[i + 1]);
            ((b[0] - a[0]).to_bits(), (b[1] - a[1]).to_bits())
        };
        // The points where the path turns, and the end.
        let turns: Vec<usize> = (1..last).filter(|&i| dir(i - 1) != dir(i)).chain([last]).collect();
        let (strict, loose) = Self::halves(q);
        // Legs are pulled taut from the points `..within` (those within the horizon).
        let mut within = points.len();
        let mut along = 0.0;
        for (i, w) in points.windows(2).enumerate() {
            along += distance(w[0], w[1]);
            if along > smooth_within {
                within = i + 1;
                break;
            }
        }
        let mut legs = Vec::new();
        let mut anchor = 0;
        while anchor < within && anchor < last {
            let ahead = &turns[turns.partition_point(|&i| i <= anchor)..];
            let next = self
                .farthest(points, ahead, anchor, strict, q, pricing, band)
                .or_else(|| {
                    if loose < strict { self.farthest(points, ahead, anchor, loose, q, pricing, band) } else { None }
                })
                .unwrap_or(anchor + 1);
            legs.push(leg(band.to_level(points[next]), LegKind::Walk, band.level));
            anchor = next;
        }
        // Past the horizon, the path's own turns.
        legs.extend(
            turns.iter().filter(|&&i| i > anchor).map(|&i| leg(band.to_level(points[i]), LegKind::Walk, band.level)),
        );
        legs
    }

    /// The farthest point of `points` after `anchor` that a straight leg with a corridor `half`
    /// wide reaches: among the turns, found by galloping (the 1st, 2nd, 4th, 8th… turn while in
    /// reach) and then halving between the last turn in reach and the first out of it; then
    /// the farthest path point before that first turn out of reach (halving again). `None`
    /// when not even the next point is in reach.
    #[expect(clippy::too_many_arguments, reason = "the path, where it stands and the query's tests")]
    fn farthest(
        &self,
        points: &[[f32; 2]],
        turns: &[usize],
        anchor: usize,
        half: f32,
        q: &PathQuery<'_>,
        pricing: &Pricing,
        band: &Band,
    ) -> Option<usize> {
        let reach = |i: usize| self.straight(band, points[anchor], points[i], half, q, pricing);
        // Turns `..ok` are taken to be in reach, `out..` out of it.
        let (mut ok, mut out) = (0usize, turns.len());
        let mut step = 1;
        while ok < out {
            let probe = (ok + step - 1).min(out - 1);
            if reach(turns[probe]) {
                ok = probe + 1;
                step *= 2;
            } else {
                out = probe;
                break;
            }
        }
        while ok < out {
            let mid = ok + (out - ok) / 2;
            if reach(turns[mid]) {
                ok = mid + 1;
            } else {
                out = mid;
            }
        }
        let mut best = ok.checked_sub(1).map(|k| turns[k]);
        let limit = turns.get(ok).copied().unwrap_or(points.len());
        let (mut lo, mut hi) = (best.unwrap_or(anchor) + 1, limit.saturating_sub(1));
        while lo <= hi && hi < points.len() {
            let mid = lo + (hi - lo) / 2;
            if reach(mid) {
                best = Some(mid);
                lo = mid + 1;
            } else {
                hi = mid - 1;
            }
        }
        best
    }

    /// Records soft obstacle `i` (a map's dynamic object, by index) as `shape`, or removes it
    /// with `None`. Returns whether the covered cells changed.
    pub fn set_obstacle(&mut self, i: usize, shape: Option<Obb>) -> bool {
        self.set_obstacles([(i, shape)])
    }

    /// [`Self::set_obstacle`] for several obstacles at once (the margins to soft obstacles are
    /// measured again once, at the end, when any covered cell changed).
    pub fn set_obstacles(&mut self, shapes: impl IntoIterator<Item = (usize, Option<Obb>)>) -> bool {
        self.set_obstacles_on(shapes.into_iter().map(|(i, shape)| (i, shape.map(|s| (0, s)))))
    }

    /// [`Self::set_obstacles`] with each obstacle on its level (`None`: removed; a box that
    /// falls between levels is on none): it covers cells of that level only.
    pub fn set_obstacles_on(&mut self, shapes: impl IntoIterator<Item = (usize, Option<(u8, Obb)>)>) -> bool {
        // The cells whose soft count or margin changed.
        let mut dirty = Vec::new();
        for (i, shape) in shapes {
            self.place(i, shape, &mut dirty);
        }
        if dirty.is_empty() {
            return false;
        }
        let blocked: Vec<u8> =
            self.grid.walk().iter().zip(&self.cells).map(|(&w, c)| u8::from(w != 0 || c.soft > 0)).collect();
        let soft_clear = super::grid::clear_grid(self.grid.cols(), self.grid.rows(), &blocked);
        for (i, (info, d)) in self.cells.iter_mut().zip(soft_clear).enumerate() {
            if info.soft_clear != d {
                info.soft_clear = d;
                dirty.push(i as u32);
            }
        }
        if self.lattice_links.is_empty() {
            return true;
        }
        // A lattice node's links read the cells up to two steps away.
        dirty.sort_unstable();
        dirty.dedup();
        let (lcols, lrows) = (self.grid.cols().div_ceil(2) as i64, self.grid.rows().div_ceil(2) as i64);
        for i in dirty {
            let [c, r] = self.coords[i as usize].map(i64::from);
            for lr in (r - 1).div_euclid(2).max(0)..=((r + 2) / 2).min(lrows - 1) {
                for lc in (c - 1).div_euclid(2).max(0)..=((c + 2) / 2).min(lcols - 1) {
                    self.link_lattice_node(((lr as u32) << self.lattice_shift) | lc as u32);
                }
            }
        }
        true
    }

    /// Records obstacle `i` as `shape`; when the cells it covers change, the old and new ones
    /// go to `dirty`.
    fn place(&mut self, i: usize, shape: Option<(u8, Obb)>, dirty: &mut Vec<u32>) {
        if self.obstacles.len() <= i {
            self.obstacles.resize(i + 1, None);
        }
        if self.obstacles[i].as_ref().map(|s| (s.level, s.shape)) == shape {
            return;
        }
        let cells = shape.map(|(level, s)| self.cells_under_on(level, &s)).unwrap_or_default();
        let old = self.obstacles[i].take();
        let old_cells = old.as_ref().map_or(&[][..], |s| &s.cells[..]);
        if old_cells != &cells[..] {
            dirty.extend(old_cells.iter().chain(&cells));
        }
        for &c in old_cells {
            self.cells[c as usize].soft = self.cells[c as usize].soft.saturating_sub(1);
        }
        for &c in &cells {
            self.cells[c as usize].soft = self.cells[c as usize].soft.saturating_add(1);
        }
        self.obstacles[i] = shape.map(|(level, shape)| Soft { shape, level, cells });
    }

    /// The cells a box overlaps (touching is not overlapping).
    pub fn cells_under(&self, shape: &Obb) -> Vec<u32> {
        self.cells_under_on(0, shape)
    }

    /// The cells of `level` a box on it overlaps, as grid indices ([`Self::level_range`]);
    /// none on a level the map does not have.
    pub fn cells_under_on(&self, level: u8, shape: &Obb) -> Vec<u32> {
        let Some(band) = self.band(level) else { return Vec::new() };
        let shape = Obb { center: band.to_grid(shape.center), ..*shape };
        let cell = self.grid.cell();
        let ex = shape.half[0] * shape.rot[0].abs() + shape.half[1] * shape.rot[1].abs();
        let ey = shape.half[0] * shape.rot[1].abs() + shape.half[1] * shape.rot[0].abs();
        let (Some((c0, r0)), Some((c1, r1))) = (
            self.grid.cell_of([shape.center[0] - ex, shape.center[1] - ey]),
            self.grid.cell_of([shape.center[0] + ex, shape.center[1] + ey]),
        ) else {
            return Vec::new();
        };
        let (cols, lo, hi) = (self.grid.cols() as i64, band.first as i64, (band.first + band.rows) as i64);
        let slack = cell * 1e-3;
        let mut cells = Vec::new();
        for r in r0.max(lo)..=r1.min(hi - 1) {
            for c in c0.max(0)..=c1.min(cols - 1) {
                if shape.overlaps_square([c as f32 * cell, r as f32 * cell], cell, slack) {
                    cells.push((r * cols + c) as u32);
                }
            }
        }
        cells
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

/// Picks up to [`LANDMARKS`] of `nodes` far apart, each the node farthest from those picked so
/// far (a node no landmark reaches first, so every part of the graph gets one; ties to the
/// earlier node; the first is the node farthest from `nodes[0]`), and returns each one's
/// distances (`distances(landmark)`, over `cells` cells, infinite where unreached).
fn farthest_landmarks(nodes: &[u32], cells: usize, distances: impl Fn(u32) -> Vec<f32>) -> Vec<Vec<f32>> {
    let count = LANDMARKS.min(nodes.len());
    let Some(&first) = nodes.first() else { return Vec::new() };
    let pick = |nearest: &[f32]| -> u32 {
        let mut best = (f32::NEG_INFINITY, first);
        for &i in nodes {
            let d = nearest[i as usize];
            if d > best.0 {
                best = (d, i);
            }
        }
        best.1
    };
    let seed = distances(first);
    let mut next = pick(&seed.iter().map(|&d| if d.is_finite() { d } else { f32::NEG_INFINITY }).collect::<Vec<_>>());
    let mut nearest = vec![f32::INFINITY; cells];
    let mut columns: Vec<Vec<f32>> = Vec::with_capacity(count);
    for _ in 0..count {
        let column = distances(next);
        for (m, &d) in nearest.iter_mut().zip(&column) {
            if d < *m {
                *m = d;
            }
        }
        columns.push(column);
        next = pick(&nearest);
    }
    columns
}

/// The largest difference of two cells' landmark distances (`u16` steps of `step`), less one
/// step for the rounding: a lower bound on the cost between them.
#[inline]
fn landmark_bound(here: &[u16; LANDMARKS], goal: &[u16; LANDMARKS], step: f32) -> f32 {
    let best = here.iter().zip(goal).fold(0u16, |best, (&a, &b)| best.max(a.abs_diff(b)));
    f32::from(best.saturating_sub(1)) * step
}

/// The landmarks' distances per cell as `u16` steps (rounded down; [`UNREACHED`] where a
/// landmark does not reach or there is no landmark), and the step.
fn quantise(columns: &[Vec<f32>], cells: usize) -> (Vec<[u16; LANDMARKS]>, f32) {
    let longest = columns.iter().flatten().filter(|d| d.is_finite()).fold(0.0f32, |a, &d| a.max(d));
    let step = (longest / f32::from(UNREACHED - 1)).max(1e-3);
    let mut marks = vec![[UNREACHED; LANDMARKS]; cells];
    for (k, column) in columns.iter().enumerate() {
        for (cell, &d) in marks.iter_mut().zip(column) {
            if d.is_finite() {
                cell[k] = ((d / step) as u32).min(u32::from(UNREACHED - 1)) as u16;
            }
        }
    }
    (marks, step)
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
mod tests {
    use super::*;

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
        assert!(stays_off_walls(
            &nav,
            at(1, 1),
            &Route { legs: route.legs[..route.legs.len() - 1].to_vec(), cost: 0.0 }
        ));
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
            NavigationSystem::new(NavGrid::new(side, side, 10.0, |c, r| {
                c == 0 || r == 0 || c == side - 1 || r == side - 1
            }))
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
                    let cells = moved.link_cost(n, mid, diagonal, &q, &pricing)
                        + moved.link_cost(mid, m, diagonal, &q, &pricing);
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
}
