//! Soft obstacles (a map's crates and other dynamic objects): recording their boxes and the cells they cover.

use super::{NavigationSystem, Obb, Soft};
use crate::engine::nav::grid::clear_grid;

impl NavigationSystem {
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
        let soft_clear = clear_grid(self.grid.cols(), self.grid.rows(), &blocked);
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
}
