//! Queries of the grid: sight, corridors, clearance, fits, the nearest walkable point, random points, reachability.

use std::ops::ControlFlow;

use super::layers::Band;
use super::{Graph, NavigationSystem, PathPoint, RANDOM_TRIES};
use crate::engine::nav::grid::MAX_FIT;
use crate::engine::nav::raycast::{walk_ray_cells, walk_ray_indices};
use crate::engine::rng::SplitMix64;

impl NavigationSystem {
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
    pub(super) fn obstacle_between(&self, band: &Band, a: [f32; 2], b: [f32; 2]) -> bool {
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

    pub(super) fn corridor(&self, start: [f32; 2], end: [f32; 2], half_width: f32, avoid_soft: bool) -> bool {
        self.corridor_in(&self.ground(), start, end, half_width, avoid_soft)
    }

    /// The corridor test for grid points within `band`.
    pub(super) fn corridor_in(
        &self,
        band: &Band,
        start: [f32; 2],
        end: [f32; 2],
        half_width: f32,
        avoid_soft: bool,
    ) -> bool {
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
    pub(super) fn ring_cells_in(&self, band: &Band, pc: i64, pr: i64, ring: i64, mut f: impl FnMut(usize)) {
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
}
