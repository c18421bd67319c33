//! Routes: entry nodes, link prices, the A\* search on the cells and on the lattice, and pulling a path taut.

use std::sync::PoisonError;

use super::layers::{Band, Link};
use super::{
    CellInfo, ENTRY_RINGS, Graph, HEURISTIC_WEIGHT, LEDGE_PENALTY, LEVEL_GAP, LatticeLinks, LegKind, NavigationSystem,
    PathPoint, PathQuery, Pricing, Route, RouteLeg, STEPS, Zone, distance, leg, segment_distance,
};
use crate::engine::nav::grid::MAX_FIT;
use crate::engine::nav::pathfinder::{Frontier, Path, find_path_with};

impl NavigationSystem {
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

    /// [`Self::find_route`] with [`PathQuery::default`]: the shortest route of a point.
    pub fn find_path(&self, start: [f32; 2], end: [f32; 2]) -> Option<Route> {
        self.find_route(start, end, &PathQuery::default())
    }

    /// [`Self::find_route_on`] with [`PathQuery::default`]: the shortest route of a point
    /// between levels (a drop costing [`LEDGE_PENALTY`] per level on top of its length).
    pub fn find_path_on(&self, start: PathPoint, end: PathPoint) -> Option<Route> {
        self.find_route_on(start, end, &PathQuery::default())
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

    /// The entry node of grid point `p` on `band` for a body needing `need` cells (see the
    /// module docs).
    pub(super) fn entry(&self, band: &Band, p: [f32; 2], need: u32) -> Option<u32> {
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

    /// The lattice node for `p` and a body needing `need` cells, `half` wide on each side: where
    /// the body fits `p`'s cell, that cell if it is a lattice node, else the nearest lattice
    /// node a cell link away; otherwise the nearest lattice cell the body fits within
    /// [`ENTRY_RINGS`] rings of lattice cells that the body can drive to from `p` in a straight
    /// line (`from_node`: from the node to `p`). Ties go to the lower index; `None` when there
    /// is none.
    pub(super) fn lattice_entry(&self, p: [f32; 2], need: u32, half: f32, from_node: bool) -> Option<u32> {
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
    pub(super) fn link_cost(&self, n: usize, m: usize, diagonal: bool, _q: &PathQuery<'_>, pricing: &Pricing) -> f32 {
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

    /// The cost of lattice link `k` of lattice node `l` (whose links are `links`): what
    /// [`Self::price`] gives its two cell links, added up the same way.
    #[inline(always)]
    pub(super) fn lattice_price(
        &self,
        l: u32,
        links: &LatticeLinks,
        k: usize,
        _q: &PathQuery<'_>,
        pricing: &Pricing,
    ) -> f32 {
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
}
