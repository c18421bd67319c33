//! A layered map's navigation: its levels stacked in one grid, and the ramp and ledge links between them.
//!
//! Each level is a band of rows in the [`NavGrid`], from the ground down, with
//! [`LEVEL_GAP`] blocked rows between two bands: no cell link, sight line, corridor or ring
//! search around a point crosses from one band to another, so everything that works on one
//! grid works on each level as it is. A level's cell is free where the level has floor (the
//! ground: where it is not a wall); the cells of a ramp run are [`RAMP`] on the level the run
//! starts from (not free, but no obstacle to sight). What joins the bands are the links:
//!
//! - **ramps**, both ways, between the run's own two nodes at the centre of its lane just past
//!   its ends (the cell before its foot on its bottom level, the one beyond its top on its top
//!   level; a wide ramp has a pair per lane), as long as the straight line between them. Its
//!   `fit` is the wide ramp's width in lanes (and no more than its two nodes'); its `clear`
//!   is the wide ramp's half width as a cell's `clear` (a body rides up the middle, and no
//!   guard holds a rider: a narrow place is one whose width is narrow);
//! - **ledges**, downward only, from every free cell of a level above the ground whose
//!   neighbour (of four) has no floor of that level — and is not the top of a ramp coming up
//!   to it — to that neighbour on the level a body dropping there lands on
//!   ([`MapLevels::landing_level_cell`]), one cell long. Its `fit` and `clear` are also
//!   those of the opening along the edge it is dropped from.

use crate::engine::map::{MAX_LEVELS, MapLevels, Surface};
use crate::engine::nav::grid::{BLOCKED, FREE, MAX_FIT, NavGrid, RAMP};

use super::{ENTRY_RINGS, LegKind, NavigationSystem};

/// Blocked rows between two levels' bands in a layered navigation's grid: more than twice the
/// rings an entry search looks through, so a search from a point near its band's edge never
/// reaches the next band.
pub const LEVEL_GAP: usize = 2 * ENTRY_RINGS as usize + 2;

/// What a drop off a ledge costs on top of its length, world units per level fallen (times
/// [`PathQuery::ledge_cost_scale`](super::PathQuery::ledge_cost_scale)): a few tiles' drive,
/// so that a route drops where that saves more than a detour by a ramp.
pub const LEDGE_PENALTY: f32 = 128.0;

/// Where one level lies in the grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Band {
    /// Its level.
    pub(super) level: u8,
    /// Its first row in the grid.
    pub(super) first: usize,
    /// Its rows (the map's).
    pub(super) rows: usize,
    /// Its first row's y in the grid, world units.
    pub(super) offset: f32,
}

impl Band {
    /// A point of its level in the grid.
    #[inline]
    pub(super) fn to_grid(self, p: [f32; 2]) -> [f32; 2] {
        if self.offset == 0.0 { p } else { [p[0], p[1] + self.offset] }
    }

    /// A point of the grid in its level's coordinates.
    #[inline]
    pub(super) fn to_level(self, p: [f32; 2]) -> [f32; 2] {
        if self.offset == 0.0 { p } else { [p[0], p[1] - self.offset] }
    }
}

/// A ramp's or a ledge's link between two nodes of different levels (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Link {
    /// The node it leaves, a grid index.
    pub(super) from: u32,
    /// The node it reaches.
    pub(super) to: u32,
    /// [`LegKind::Ramp`] or [`LegKind::Ledge`].
    pub(super) kind: LegKind,
    /// World units between the two nodes' centres.
    pub(super) length: f32,
    /// The widest body that may take it, in cells.
    pub(super) fit: u8,
    /// Its margin, as a cell's `clear`.
    pub(super) clear: u8,
    /// The midpoint of its two nodes' centres, on their levels' common coordinates.
    pub(super) mid: [f32; 2],
    /// The levels of `from` and `to`.
    pub(super) levels: [u8; 2],
}

impl Link {
    /// Whether it is a ledge's (one way, down).
    pub(super) fn is_ledge(&self) -> bool {
        matches!(self.kind, LegKind::Ledge { .. })
    }
}

/// How a navigation's grid holds its levels, and the links between them (a flat map: the
/// ground alone, the whole grid, no links).
#[derive(Clone, Debug)]
pub(super) struct Layers {
    layered: bool,
    /// Rows of one level.
    pub(super) rows: usize,
    /// Rows from a band's first row to the next band's.
    pub(super) stride: usize,
    cell: f32,
    /// Per level, its band (by order in `levels`).
    bands: [Option<u8>; MAX_LEVELS],
    /// Per band, its level, from the ground up.
    pub(super) levels: Vec<u8>,
    /// The links, by `from` then `to`.
    pub(super) links: Vec<Link>,
    /// Per grid index, where its links start in `links` (one more entry for the end); empty
    /// on a flat map.
    first: Vec<u32>,
    /// The links' indices by `to`, then `from`.
    into: Vec<u32>,
    /// Per grid index, where the links into it start in `into`.
    into_first: Vec<u32>,
}

impl Layers {
    /// A flat map's: the ground, `rows` rows of `cell` world units.
    pub(super) fn flat(rows: usize, cell: f32) -> Layers {
        let mut bands = [None; MAX_LEVELS];
        bands[0] = Some(0);
        Layers {
            layered: false,
            rows,
            stride: rows,
            cell,
            bands,
            levels: vec![0],
            links: Vec::new(),
            first: Vec::new(),
            into: Vec::new(),
            into_first: Vec::new(),
        }
    }

    /// Whether it is a layered map's.
    #[inline]
    pub(super) fn is_layered(&self) -> bool {
        self.layered
    }

    /// Where `level` lies; `None` for a level the map does not have.
    #[inline]
    pub(super) fn band(&self, level: u8) -> Option<Band> {
        let b = usize::from((*self.bands.get(usize::from(level))?)?);
        let first = b * self.stride;
        Some(Band { level, first, rows: self.rows, offset: first as f32 * self.cell })
    }

    /// The band of grid index `index` in a grid `cols` wide (the nearest band above for a
    /// gap's cell).
    pub(super) fn band_of(&self, index: usize, cols: usize) -> Band {
        let b = (index / cols.max(1) / self.stride.max(1)).min(self.levels.len() - 1);
        self.band(self.levels[b]).expect("every band has a level")
    }

    /// The links leaving node `n`.
    #[inline]
    pub(super) fn links_from(&self, n: u32) -> &[Link] {
        match self.first.get(n as usize..n as usize + 2) {
            Some(&[a, b]) => &self.links[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The link from `from` to `to`, if any.
    pub(super) fn link(&self, from: u32, to: u32) -> Option<&Link> {
        self.links_from(from).iter().find(|l| l.to == to)
    }

    /// Whether any link goes one way only.
    pub(super) fn has_ledges(&self) -> bool {
        self.links.iter().any(Link::is_ledge)
    }

    /// Calls `f(m, link)` for every link a body needing `need` cells fits between node `n`
    /// and a node `m`, whichever way it goes (leaving `n` first, then into it).
    #[inline]
    pub(super) fn each_undirected(&self, n: u32, need: u32, mut f: impl FnMut(u32, &Link)) {
        if self.first.is_empty() {
            return;
        }
        let fits = |l: &Link| need <= 1 || u32::from(l.fit) >= need;
        for link in self.links_from(n).iter().filter(|l| fits(l)) {
            f(link.to, link);
        }
        let (a, b) = (self.into_first[n as usize] as usize, self.into_first[n as usize + 1] as usize);
        for &k in &self.into[a..b] {
            let link = &self.links[k as usize];
            if fits(link) {
                f(link.from, link);
            }
        }
    }

    /// Sets the links (any order) of a grid of `cells` cells.
    fn set_links(&mut self, mut links: Vec<Link>, cells: usize) {
        links.sort_by_key(|l| (l.from, l.to));
        links.dedup_by_key(|l| (l.from, l.to));
        let mut first = vec![0u32; cells + 1];
        for l in &links {
            first[l.from as usize + 1] += 1;
        }
        for i in 0..cells {
            first[i + 1] += first[i];
        }
        let mut into: Vec<u32> = (0..links.len() as u32).collect();
        into.sort_by_key(|&k| (links[k as usize].to, links[k as usize].from));
        let mut into_first = vec![0u32; cells + 1];
        for l in &links {
            into_first[l.to as usize + 1] += 1;
        }
        for i in 0..cells {
            into_first[i + 1] += into_first[i];
        }
        self.links = links;
        self.first = first;
        self.into = into;
        self.into_first = into_first;
    }
}

impl NavigationSystem {
    /// The navigation of a layered map (see the module docs of
    /// [`navigation`](super)): every level's nodes in one grid, ramps both ways, ledges down.
    /// A flat map's is the ground's alone, as [`NavigationSystem::new`] builds it from its
    /// walls (with no links).
    pub fn generate_layered(levels: &MapLevels) -> NavigationSystem {
        NavigationSystem::layered_with_walls(levels, &[])
    }

    /// [`Self::generate_layered`] with the grid cells `walls` (grid indices, as
    /// [`Self::cells_under_on`] gives them) blocked too: what a map check asks of a map whose
    /// boxes stand as walls. Ramps and ledges whose nodes are walled lose their links.
    pub fn layered_with_walls(levels: &MapLevels, walls: &[u32]) -> NavigationSystem {
        let (cols, rows) = levels.grid_size();
        let cell = levels.tile_size();
        let present: Vec<u8> = levels.levels().collect();
        let stride = rows + LEVEL_GAP;
        let total = stride * present.len().saturating_sub(1) + rows;
        let mut bands = [None; MAX_LEVELS];
        let mut walk = vec![BLOCKED; cols * total];
        for (b, &n) in present.iter().enumerate() {
            bands[usize::from(n)] = Some(b as u8);
            for r in 0..rows {
                for c in 0..cols {
                    if levels.surface(n, c, r) == Surface::Floor {
                        walk[(b * stride + r) * cols + c] = FREE;
                    }
                }
            }
        }
        for run in levels.runs() {
            let Some(b) = bands[usize::from(run.from)] else { continue };
            for (c, r) in run.cells() {
                walk[(usize::from(b) * stride + r) * cols + c] = RAMP;
            }
        }
        for &w in walls {
            if let Some(v) = walk.get_mut(w as usize) {
                *v = BLOCKED;
            }
        }
        let grid = NavGrid::from_walk(cols, total, cell, walk);
        let mut layers = Layers {
            layered: true,
            rows,
            stride,
            cell,
            bands,
            levels: present,
            links: Vec::new(),
            first: Vec::new(),
            into: Vec::new(),
            into_first: Vec::new(),
        };
        let mut links = ramp_links(levels, &grid, &layers);
        links.extend(ledge_links(levels, &grid, &layers));
        layers.set_links(links, grid.walk().len());
        NavigationSystem::with_layers(grid, layers)
    }
}

/// The grid index of cell `(col, row)` of `level` when it is inside the map and free.
fn free_node(grid: &NavGrid, layers: &Layers, level: u8, col: i64, row: i64) -> Option<u32> {
    let band = layers.band(level)?;
    if row < 0 || row >= band.rows as i64 {
        return None;
    }
    let i = grid.index(col, band.first as i64 + row)?;
    grid.is_free(i).then_some(i as u32)
}

/// The centre of grid node `n` on its level.
fn center_on_level(grid: &NavGrid, layers: &Layers, n: u32) -> [f32; 2] {
    layers.band_of(n as usize, grid.cols()).to_level(grid.center(n as usize))
}

/// Both ways over every lane of every ramp whose two nodes are free (see the module docs).
fn ramp_links(levels: &MapLevels, grid: &NavGrid, layers: &Layers) -> Vec<Link> {
    let mut links = Vec::new();
    for run in levels.runs() {
        let ((fc, fr), (tc, tr)) = (run.before_foot(), run.beyond_top());
        let (Some(foot), Some(top)) =
            (free_node(grid, layers, run.from, fc, fr), free_node(grid, layers, run.to, tc, tr))
        else {
            continue;
        };
        let block = &levels.blocks()[run.block];
        let lanes = (block.lane_hi - block.lane_lo + 1).min(usize::from(MAX_FIT)) as u8;
        let fit = lanes.min(grid.fit(foot as usize)).min(grid.fit(top as usize));
        // A rider goes up the middle, and nothing holds it at the sides (it falls off them):
        // as a cell's `clear`, half the wide ramp's width from its middle.
        let clear = lanes / 2 + 1;
        let (a, b) = (center_on_level(grid, layers, foot), center_on_level(grid, layers, top));
        let mid = [(a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0];
        let length = (run.len() + 1) as f32 * grid.cell();
        let kind = LegKind::Ramp { axis: run.axis, sign: run.sign };
        links.push(Link { from: foot, to: top, kind, length, fit, clear, mid, levels: [run.from, run.to] });
        links.push(Link { from: top, to: foot, kind, length, fit, clear, mid, levels: [run.to, run.from] });
    }
    links
}

/// The four sides of a cell, as `(dc, dr)`.
const SIDES: [(i64, i64); 4] = [(1, 0), (0, 1), (-1, 0), (0, -1)];

/// Whether a body on `level` at cell `(col, row)` drops off the level's edge by driving one
/// cell toward `(dc, dr)`: the cell is a free node of the level, and its neighbour that way
/// lies on the map, has no floor of the level, and is not the top of a ramp coming up to it.
fn drops_toward(
    levels: &MapLevels,
    grid: &NavGrid,
    layers: &Layers,
    level: u8,
    (col, row): (i64, i64),
    (dc, dr): (i64, i64),
) -> bool {
    let (cols, rows) = levels.grid_size();
    let (nc, nr) = (col + dc, row + dr);
    if nc < 0 || nr < 0 || nc >= cols as i64 || nr >= rows as i64 {
        return false;
    }
    if free_node(grid, layers, level, col, row).is_none() || levels.surface_at_cell(level, nc, nr) != Surface::Empty {
        return false;
    }
    levels.run_at_cell(nc as usize, nr as usize).is_none_or(|run| levels.runs()[run].to != level)
}

/// Down every open edge of every level above the ground (see the module docs).
fn ledge_links(levels: &MapLevels, grid: &NavGrid, layers: &Layers) -> Vec<Link> {
    let (cols, rows) = levels.grid_size();
    let mut links = Vec::new();
    for &level in layers.levels.iter().filter(|&&l| l > 0) {
        for row in 0..rows as i64 {
            for col in 0..cols as i64 {
                for side in SIDES {
                    if !drops_toward(levels, grid, layers, level, (col, row), side) {
                        continue;
                    }
                    let (nc, nr) = (col + side.0, row + side.1);
                    let lands = levels.landing_level_cell(level, nc as usize, nr as usize);
                    let (Some(from), Some(to)) =
                        (free_node(grid, layers, level, col, row), free_node(grid, layers, lands, nc, nr))
                    else {
                        continue;
                    };
                    // The opening: the cells beside this one, along the edge, that drop the same way.
                    let along = (side.1.abs(), side.0.abs());
                    let open = |k: i64| {
                        drops_toward(levels, grid, layers, level, (col + k * along.0, row + k * along.1), side)
                    };
                    let before = (1..).take_while(|&k| open(-k)).count();
                    let after = (1..).take_while(|&k| open(k)).count();
                    let width = (before + after + 1).min(usize::from(MAX_FIT)) as u8;
                    let margin = (before.min(after) + 1).min(usize::from(u8::MAX)) as u8;
                    let (a, b) = (center_on_level(grid, layers, from), center_on_level(grid, layers, to));
                    links.push(Link {
                        from,
                        to,
                        kind: LegKind::Ledge { height: level - lands },
                        length: grid.cell(),
                        fit: width.min(grid.fit(from as usize)).min(grid.fit(to as usize)),
                        clear: margin.min(grid.clear(to as usize)),
                        mid: [(a[0] + b[0]) / 2.0, (a[1] + b[1]) / 2.0],
                        levels: [level, lands],
                    });
                }
            }
        }
    }
    links
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::map::{Axis, MapConfig};
    use crate::engine::nav::navigation::{Obb, PathPoint, PathQuery, PenaltyZone, Route};

    /// 10×6 tiles of 10. The ground's wall down column 6 parts west from east. A ramp rising
    /// east over columns 2 and 3 (on rows 1 and 2, or on row 1 alone with `lanes` 1) leads up
    /// to a slab on level 1 (columns 4 to 7, rows 1 and 2, railed on rows 0 and 3) that spans
    /// the wall; its east edge is open: a drop onto the ground east of the wall.
    fn test_map(lanes: usize) -> MapLevels {
        let mut ground = vec![vec![0u16; 10]; 6];
        let mut slab = vec![vec![0u16; 10]; 6];
        for (r, row) in ground.iter_mut().enumerate() {
            row[6] = 1;
            if (1..=lanes).contains(&r) {
                row[2] = 5;
                row[3] = 5;
            }
        }
        for (row, tile) in slab.iter_mut().zip([7, 9, 9, 7]) {
            row[4..=7].fill(tile);
        }
        let json = serde_json::json!({
            "name": "t", "tileSize": 10, "map": ground, "physicsStatic": [1],
            "respawns": { "1": [[5, 45, 0]], "2": [[85, 45, 0]] },
            "levels": { "1": { "map": slab, "floor": [7, 9], "walls": [7] } },
            "ramps": [{ "tile": 5, "dir": "east" }]
        });
        let cfg = MapConfig::from_json("t.json", &json.to_string()).unwrap_or_else(|e| panic!("{e}"));
        MapLevels::new(&cfg, 1.0)
    }

    /// The centre of cell `(col, row)` on its level.
    fn at(col: usize, row: usize) -> [f32; 2] {
        [col as f32 * 10.0 + 5.0, row as f32 * 10.0 + 5.0]
    }

    /// The grid index of cell `(col, row)` of `level`.
    fn node(nav: &NavigationSystem, level: u8, col: usize, row: usize) -> u32 {
        (nav.level_range(level).expect("the level").start + row * 10 + col) as u32
    }

    fn kinds(route: &Route) -> Vec<(LegKind, u8)> {
        route.legs.iter().map(|l| (l.kind, l.level)).collect()
    }

    #[test]
    fn a_ramps_cells_are_not_walked_but_seen_across() {
        let nav = NavigationSystem::generate_layered(&test_map(2));
        assert!(nav.is_layered());
        assert_eq!(nav.levels(), [0, 1]);
        let ground = nav.level_range(0).unwrap();
        let slab = nav.level_range(1).unwrap();
        assert_eq!(slab.start - ground.start, (6 + LEVEL_GAP) * 10, "the levels' bands and the gap between");
        let walk = |level: u8, c: usize, r: usize| nav.grid().walk()[node(&nav, level, c, r) as usize];
        assert_eq!([walk(0, 2, 1), walk(0, 3, 2)], [RAMP, RAMP], "the run's cells on its bottom level");
        assert_eq!([walk(1, 2, 1), walk(0, 1, 1), walk(1, 5, 1), walk(1, 5, 0)], [BLOCKED, FREE, FREE, BLOCKED]);
        assert!(!nav.is_walkable_on(0, at(2, 1)) && nav.is_walkable_on(0, at(1, 1)));
        assert!(!nav.has_obstacle_between_on(0, at(0, 1), at(5, 1)), "sight passes over the ramp");
        assert!(nav.has_obstacle_between_on(0, at(5, 1), at(8, 1)), "the ground's wall");
        assert!(!nav.has_obstacle_between_on(1, at(4, 1), at(7, 2)), "along the slab");
        assert!(nav.has_obstacle_between_on(1, at(5, 1), at(5, 4)), "its rail");
        assert!(!nav.has_clear_corridor_on(0, at(0, 1), at(5, 1), 0.0), "no walking across the ramp");
        assert!(nav.has_obstacle_between_on(2, at(1, 1), at(1, 2)), "a level the map lacks is all wall");
        assert_eq!(nav.clearance_on(1, at(5, 1)), 5.0, "next to the rail");
        assert!(nav.fits_on(1, at(5, 1), 20.0) && !nav.fits_on(1, at(5, 1), 21.0), "the slab is two cells wide");
        assert_eq!(nav.nearest_walkable_on(1, at(5, 4), 0.0, 30.0), Some(at(5, 2)), "on the slab, not below it");
        assert_eq!(nav.nearest_walkable_on(0, at(2, 1), 0.0, 30.0), Some(at(2, 0)), "beside the ramp");
        let dump = nav.debug_json();
        assert_eq!(dump["walk"][1], serde_json::json!("..==..#..."));
        assert_eq!(dump["levels"], serde_json::json!([0, 1]));
    }

    #[test]
    fn a_ramp_links_its_own_nodes_both_ways() {
        let levels = test_map(2);
        let nav = NavigationSystem::generate_layered(&levels);
        let ramps: Vec<&Link> = nav.layers.links.iter().filter(|l| !l.is_ledge()).collect();
        assert_eq!(ramps.len(), 4, "two lanes, each both ways");
        for run in levels.runs() {
            let (fc, fr) = run.before_foot();
            let (tc, tr) = run.beyond_top();
            let foot = node(&nav, 0, fc as usize, fr as usize);
            let top = node(&nav, 1, tc as usize, tr as usize);
            let up = nav.layers.link(foot, top).expect("up the lane");
            let down = nav.layers.link(top, foot).expect("down the lane");
            assert_eq!(up.kind, LegKind::Ramp { axis: Axis::X, sign: 1 });
            assert_eq!((up.length, up.fit, up.levels, down.levels), (30.0, 2, [0, 1], [1, 0]));
        }
        let route = nav.find_path_on(PathPoint::new(0, at(0, 4)), PathPoint::new(1, at(6, 2))).expect("up the ramp");
        let ramp = route.legs.iter().position(|l| matches!(l.kind, LegKind::Ramp { .. })).expect("a ramp leg");
        assert_eq!(route.legs[ramp].level, 1);
        assert!([at(4, 1), at(4, 2)].contains(&route.legs[ramp].point), "beyond the top: {route:?}");
        assert!([at(1, 1), at(1, 2)].contains(&route.legs[ramp - 1].point), "before the foot: {route:?}");
        let back = nav.find_path_on(PathPoint::new(1, at(6, 2)), PathPoint::new(0, at(0, 4))).expect("down again");
        assert_eq!(kinds(&back).iter().filter(|(k, _)| matches!(k, LegKind::Ramp { .. })).count(), 1);
        assert_eq!(back.legs.last().map(|l| (l.point, l.kind, l.level)), Some((at(0, 4), LegKind::Walk, 0)));
    }

    #[test]
    fn a_ledge_goes_down_only_and_costs_its_drop() {
        let nav = NavigationSystem::generate_layered(&test_map(2));
        let ledges: Vec<&Link> = nav.layers.links.iter().filter(|l| l.is_ledge()).collect();
        assert_eq!(ledges.len(), 2, "the slab's east edge, rows 1 and 2: {ledges:?}");
        let edge = node(&nav, 1, 7, 1);
        let below = node(&nav, 0, 8, 1);
        let drop = nav.layers.link(edge, below).expect("down the edge");
        assert_eq!((drop.kind, drop.length, drop.fit, drop.levels), (LegKind::Ledge { height: 1 }, 10.0, 2, [1, 0]));
        assert!(nav.layers.link(below, edge).is_none(), "no way back up");
        let (west, east) = (PathPoint::new(0, at(0, 4)), PathPoint::new(0, at(9, 4)));
        assert!(nav.reachable_on(west, east, 0.0) && !nav.reachable_on(east, west, 0.0));
        assert!(nav.find_path_on(east, west).is_none());
        let route = nav.find_path_on(west, east).expect("up, across and off the edge");
        let legs = kinds(&route);
        let ramp = legs.iter().position(|(k, _)| matches!(k, LegKind::Ramp { .. })).expect("a ramp");
        let ledge = legs.iter().position(|(k, _)| *k == LegKind::Ledge { height: 1 }).expect("a ledge");
        assert!(ramp < ledge && legs[ledge].1 == 0 && legs[ramp].1 == 1, "{route:?}");
        assert!([at(8, 1), at(8, 2)].contains(&route.legs[ledge].point));
        assert_eq!(legs.last(), Some(&(LegKind::Walk, 0)));
        let scaled = |scale: f32| {
            nav.find_route_on(west, east, &PathQuery { ledge_cost_scale: scale, ..PathQuery::default() })
                .map(|r| r.cost)
        };
        let (free, once, twice) = (scaled(0.0).unwrap(), scaled(1.0).unwrap(), scaled(2.0).unwrap());
        assert!((once - free - LEDGE_PENALTY).abs() < 1e-2, "{free} {once}");
        assert!((twice - free - 2.0 * LEDGE_PENALTY).abs() < 1e-2, "{free} {twice}");
        assert_eq!(scaled(f32::INFINITY), None, "drops forbidden: no way east");
    }

    #[test]
    fn a_body_wider_than_the_ramp_or_the_drop_does_not_take_it() {
        let (wide, narrow) =
            (NavigationSystem::generate_layered(&test_map(2)), NavigationSystem::generate_layered(&test_map(1)));
        let lane = |nav: &NavigationSystem| nav.layers.links.iter().find(|l| !l.is_ledge()).map(|l| l.fit);
        assert_eq!((lane(&wide), lane(&narrow)), (Some(2), Some(1)));
        let (from, up) = (PathPoint::new(0, at(0, 4)), PathPoint::new(1, at(6, 1)));
        let body = |width: f32| PathQuery { min_width: width, ..PathQuery::default() };
        assert!(wide.find_route_on(from, up, &body(15.0)).is_some(), "two cells wide: two lanes");
        assert!(wide.find_route_on(from, up, &body(25.0)).is_none(), "three cells: wider than ramp and slab");
        assert!(narrow.find_route_on(from, up, &body(10.0)).is_some());
        assert!(narrow.find_route_on(from, up, &body(15.0)).is_none(), "one lane for a body two cells wide");
        assert!(!narrow.reachable_on(from, up, 15.0) && narrow.reachable_on(from, up, 10.0));
    }

    #[test]
    fn a_box_covers_only_its_own_level() {
        let mut nav = NavigationSystem::generate_layered(&test_map(2));
        let box_at = |p: [f32; 2]| Obb::new(p, [4.0, 4.0], 0.0);
        assert!(nav.set_obstacles_on([(0, Some((1, box_at(at(5, 1))))), (1, Some((0, box_at(at(8, 4)))))]));
        assert_eq!((nav.soft_at_on(1, at(5, 1)), nav.soft_at_on(0, at(5, 1))), (1, 0));
        assert_eq!((nav.soft_at_on(0, at(8, 4)), nav.soft_at_on(1, at(8, 4))), (1, 0));
        assert_eq!(nav.obstacles_on(1).count(), 1);
        assert!(nav.set_obstacles_on([(0, None)]), "falling: on no level");
        assert_eq!(nav.soft_at_on(1, at(5, 1)), 0);
        let walled = NavigationSystem::layered_with_walls(&test_map(2), &nav.cells_under_on(1, &box_at(at(5, 1))));
        assert!(!walled.is_walkable_on(1, at(5, 1)) && walled.is_walkable_on(0, at(5, 1)));
    }

    #[test]
    fn penalty_zones_count_on_their_own_level() {
        let nav = NavigationSystem::generate_layered(&test_map(2));
        let (west, east) = (PathPoint::new(0, at(0, 4)), PathPoint::new(0, at(9, 4)));
        let plain = nav.find_path_on(west, east).unwrap().cost;
        let on = |level: u8, center: [f32; 2]| {
            let zones = [PenaltyZone { level, center, radius: 15.0, cost_per_unit: 5.0 }];
            nav.find_route_on(west, east, &PathQuery { penalties: &zones, ..PathQuery::default() }).unwrap().cost
        };
        assert!(on(1, at(5, 2)) > plain + 10.0, "on the slab");
        assert_eq!(on(0, [55.0, 15.0]), plain, "the same place on the ground, under the slab");
        assert_eq!(on(3, at(5, 2)), plain, "a level the map lacks");
    }

    /// `maps/bridge.json`'s levels.
    fn overpass() -> MapLevels {
        let cfg = MapConfig::from_json("bridge.json", include_str!("../../../../../maps/bridge.json"))
            .unwrap_or_else(|e| panic!("{e}"));
        MapLevels::new(&cfg, 1.0)
    }

    /// The centre of tile `(col, row)` of the overpass (32 units).
    fn tile(col: usize, row: usize) -> [f32; 2] {
        [col as f32 * 32.0 + 16.0, row as f32 * 32.0 + 16.0]
    }

    /// Every walk of `route` from `start` stays on its level's floor, in sight all the way.
    fn walks_stay_on_their_levels(nav: &NavigationSystem, start: PathPoint, route: &Route) {
        let mut from = start;
        for leg in &route.legs {
            if leg.kind == LegKind::Walk {
                assert_eq!(leg.level, from.level, "a walk keeps its level: {route:?}");
                assert!(
                    !nav.has_obstacle_between_on(leg.level, from.point, leg.point),
                    "{from:?} → {leg:?} crosses a wall: {route:?}"
                );
            }
            from = PathPoint::new(leg.level, leg.point);
        }
    }

    #[test]
    fn on_the_overpass_a_route_climbs_crosses_and_drops() {
        let nav = NavigationSystem::generate_layered(&overpass());
        let body = PathQuery { min_width: 46.0, ..PathQuery::default() };
        // From the ground west of the west ramp to the ground north of the ledge.
        let (west, north) = (PathPoint::new(0, tile(5, 15)), PathPoint::new(0, tile(24, 12)));
        let route = nav.find_route_on(west, north, &body).expect("a route");
        let legs = kinds(&route);
        let ramp = legs.iter().position(|&k| k == (LegKind::Ramp { axis: Axis::X, sign: 1 }, 1)).expect("up the ramp");
        let ledge = legs.iter().position(|&k| k == (LegKind::Ledge { height: 1 }, 0)).expect("off the ledge");
        assert!(ramp < ledge, "{route:?}");
        assert_eq!(route.legs[ramp].point[0], tile(12, 15)[0], "beyond the west ramp's top: {route:?}");
        let gap = (23.0 * 32.0..26.0 * 32.0).contains(&route.legs[ledge].point[0]);
        assert!(gap && route.legs[ledge].point[1] == tile(0, 14)[1], "below the gap in the rail: {route:?}");
        assert_eq!(legs.last(), Some(&(LegKind::Walk, 0)));
        walks_stay_on_their_levels(&nav, west, &route);
        // The same from the bridge: off the ledge, or, with drops forbidden, down a ramp.
        let bridge = PathPoint::new(1, tile(22, 15));
        let drop = nav.find_route_on(bridge, north, &body).expect("a route");
        assert!(kinds(&drop).contains(&(LegKind::Ledge { height: 1 }, 0)), "{drop:?}");
        let no_drops = PathQuery { ledge_cost_scale: f32::INFINITY, ..body };
        let ramps = nav.find_route_on(bridge, north, &no_drops).expect("a route by a ramp");
        assert!(ramps.legs.iter().all(|l| !matches!(l.kind, LegKind::Ledge { .. })), "{ramps:?}");
        assert!(ramps.legs.iter().any(|l| matches!(l.kind, LegKind::Ramp { .. }) && l.level == 0), "{ramps:?}");
        assert!(ramps.cost > drop.cost, "{} vs {}", ramps.cost, drop.cost);
        walks_stay_on_their_levels(&nav, bridge, &ramps);
        // Under the bridge on the ground, the ground's route: the levels do not leak.
        let (under_w, under_e) = (PathPoint::new(0, tile(17, 12)), PathPoint::new(0, tile(17, 19)));
        let under = nav.find_route_on(under_w, under_e, &body).expect("under the bridge");
        assert_eq!(kinds(&under), [(LegKind::Walk, 0)], "straight under it: {under:?}");
    }
}
