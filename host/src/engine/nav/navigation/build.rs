//! Building a [`NavigationSystem`]: cells, landmarks, the lattice's links and numbering, connected parts.

use std::sync::{Mutex, PoisonError};

use super::layers::Layers;
use super::{
    CellInfo, Components, Graph, LANDMARKS, LATTICE_FROM, Landmarks, LatticeLinks, NavigationSystem, PROFILES,
    PathQuery, Pricing, Profile, STEPS, Search, UNREACHED, landmark_bound,
};
use crate::engine::nav::grid::NavGrid;

impl NavigationSystem {
    /// The navigation of a grid, with no soft obstacles.
    pub fn new(grid: NavGrid) -> NavigationSystem {
        let layers = Layers::flat(grid.rows(), grid.cell());
        NavigationSystem::with_layers(grid, layers)
    }

    /// The navigation of a grid whose bands and links are `layers`: on a layered map the
    /// lattice is left out (its routes cross levels only on the cells).
    pub(super) fn with_layers(grid: NavGrid, layers: Layers) -> NavigationSystem {
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
    pub(super) fn landmark_bound(&self, n: u32, goal: &[u16; LANDMARKS]) -> f32 {
        landmark_bound(&self.landmarks.marks[n as usize], goal, self.landmarks.step)
    }

    /// The labels of the graph's connected parts for a body needing `need` cells, computed
    /// once. Ramps and ledges join parts whichever way they go.
    pub(super) fn with_components<R>(&self, need: u32, graph: Graph, f: impl FnOnce(&Components) -> R) -> R {
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
    pub(super) fn on_lattice(&self, i: u32) -> bool {
        let [c, r] = self.coords[i as usize];
        (c | r) & 1 == 0
    }

    /// The lattice's numbering's size: its rows times a row stride of a power of two at least
    /// its columns, counting the places of blocked cells and of the padding.
    pub(super) fn lattice_nodes(&self) -> usize {
        self.grid.rows().div_ceil(2) << self.lattice_shift
    }

    /// The lattice's number of lattice cell `i` (even column and row): row-major over the
    /// lattice, `2^lattice_shift` to a row.
    #[inline]
    pub(super) fn lattice_index(&self, i: u32) -> usize {
        let [c, r] = self.coords[i as usize];
        usize::from(r / 2) << self.lattice_shift | usize::from(c / 2)
    }

    /// The lattice column and row of lattice number `l`.
    #[inline]
    pub(super) fn lattice_coords(&self, l: u32) -> [u32; 2] {
        [l & ((1 << self.lattice_shift) - 1), l >> self.lattice_shift]
    }

    /// The cell of lattice number `l`, `None` for the padding past the last column.
    #[inline]
    pub(super) fn lattice_cell(&self, l: u32) -> Option<u32> {
        let [lc, lr] = self.lattice_coords(l);
        let (c, r) = (2 * lc as usize, 2 * lr as usize);
        (c < self.grid.cols() && r < self.grid.rows()).then(|| (r * self.grid.cols() + c) as u32)
    }

    /// Works out lattice node `l`'s links from its cells' infos.
    pub(super) fn link_lattice_node(&mut self, l: u32) {
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
    pub(super) fn profile<'p>(&self, profiles: &'p mut Vec<Profile>, need: u32, pricing: &Pricing) -> &'p Profile {
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
