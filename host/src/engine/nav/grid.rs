//! The navigation grid: which cells a body may stand on, and the derived `fit` and `clear` grids.
//!
//! One cell per map tile. A cell is free when its tile is not a wall; the map edge counts
//! as blocked. A layered map's navigation stacks its levels' grids in one (see
//! [`NavigationSystem`](super::NavigationSystem)), and marks the cells of a ramp run
//! [`RAMP`] on the level the run starts from: not free, yet no obstacle to sight. Two grids
//! are derived from the walk values, last, so nothing else depends on them:
//!
//! - `fit`: the side, in cells (at most [`MAX_FIT`]), of the largest free square that
//!   contains the cell; 0 on a blocked cell. A body `w` wide fits a cell when
//!   `fit ≥ ceil(w / cell)` ([`NavGrid::cells_for`]).
//! - `clear`: the Chebyshev distance, in cells, to the nearest blocked cell or the map
//!   edge; 1 next to a wall, 0 on a blocked cell.
//!
//! ```text
//!  walk      fit       clear
//!  #####     00000     00000
//!  #...#     03330     01110
//!  #...#     03330     01210
//!  #...#     03330     01110
//!  #####     00000     00000
//! ```

/// The largest `fit` value: squares are measured up to this side.
pub const MAX_FIT: u8 = 15;

/// A free cell in [`NavGrid::walk`].
pub const FREE: u8 = 0;
/// A blocked cell (a wall) in [`NavGrid::walk`].
pub const BLOCKED: u8 = 1;
/// A cell of a ramp run on the level the run starts from, in [`NavGrid::walk`]: a body does
/// not stand on it (only a ramp link crosses it), but sight and shots pass over it.
pub const RAMP: u8 = 2;

/// The walkability grid with its `fit` and `clear` grids (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct NavGrid {
    cols: usize,
    rows: usize,
    cell: f32,
    walk: Vec<u8>,
    fit: Vec<u8>,
    clear: Vec<u8>,
}

impl NavGrid {
    /// A grid of `cols × rows` cells of `cell` world units; `blocked(col, row)` says which are walls.
    pub fn new(cols: usize, rows: usize, cell: f32, blocked: impl Fn(usize, usize) -> bool) -> NavGrid {
        let mut walk = vec![FREE; cols * rows];
        for row in 0..rows {
            for col in 0..cols {
                if blocked(col, row) {
                    walk[row * cols + col] = BLOCKED;
                }
            }
        }
        NavGrid::from_walk(cols, rows, cell, walk)
    }

    /// A grid of `cols × rows` cells of `cell` world units from its walk values, row-major
    /// ([`FREE`], [`BLOCKED`] or [`RAMP`]; any value but [`FREE`] is not free).
    ///
    /// # Panics
    ///
    /// When `walk` does not hold `cols × rows` values.
    pub fn from_walk(cols: usize, rows: usize, cell: f32, walk: Vec<u8>) -> NavGrid {
        assert_eq!(walk.len(), cols * rows, "one walk value per cell");
        let fit = fit_grid(cols, rows, &walk);
        let clear = clear_grid(cols, rows, &walk);
        NavGrid { cols, rows, cell, walk, fit, clear }
    }

    /// Columns.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// World units per cell.
    pub fn cell(&self) -> f32 {
        self.cell
    }

    /// The walkability values, row-major: [`FREE`], [`BLOCKED`] or [`RAMP`].
    pub fn walk(&self) -> &[u8] {
        &self.walk
    }

    /// The `fit` values, row-major.
    pub fn fit_values(&self) -> &[u8] {
        &self.fit
    }

    /// The `clear` values, row-major.
    pub fn clear_values(&self) -> &[u8] {
        &self.clear
    }

    /// The row-major index of `(col, row)`; `None` outside the grid.
    pub fn index(&self, col: i64, row: i64) -> Option<usize> {
        (col >= 0 && row >= 0 && (col as usize) < self.cols && (row as usize) < self.rows)
            .then(|| row as usize * self.cols + col as usize)
    }

    /// The cell `(col, row)` under a world point, which may lie outside the grid; `None` for
    /// a point that is not finite or too far away to name.
    pub fn cell_of(&self, p: [f32; 2]) -> Option<(i64, i64)> {
        let (c, r) = ((p[0] / self.cell).floor(), (p[1] / self.cell).floor());
        let limit = 1e15;
        (c.is_finite() && r.is_finite() && c.abs() < limit && r.abs() < limit).then_some((c as i64, r as i64))
    }

    /// The index of the cell under a world point; `None` outside the grid.
    pub fn index_of(&self, p: [f32; 2]) -> Option<usize> {
        let (c, r) = self.cell_of(p)?;
        self.index(c, r)
    }

    /// The `(col, row)` of an index.
    pub fn coords(&self, index: usize) -> (usize, usize) {
        (index % self.cols, index / self.cols)
    }

    /// The world point at the centre of a cell.
    pub fn center(&self, index: usize) -> [f32; 2] {
        let (c, r) = self.coords(index);
        [(c as f32 + 0.5) * self.cell, (r as f32 + 0.5) * self.cell]
    }

    /// Whether the cell at `index` is free.
    pub fn is_free(&self, index: usize) -> bool {
        self.walk[index] == FREE
    }

    /// Whether `(col, row)` is inside the grid and free.
    pub fn is_free_at(&self, col: i64, row: i64) -> bool {
        self.index(col, row).is_some_and(|i| self.walk[i] == FREE)
    }

    /// Whether `(col, row)` is an obstacle to sight: a wall, or outside the grid (a ramp's
    /// cell is not).
    pub fn is_obstacle_at(&self, col: i64, row: i64) -> bool {
        self.index(col, row).is_none_or(|i| self.walk[i] == BLOCKED)
    }

    /// `fit` of a cell.
    pub fn fit(&self, index: usize) -> u8 {
        self.fit[index]
    }

    /// `clear` of a cell.
    pub fn clear(&self, index: usize) -> u8 {
        self.clear[index]
    }

    /// The `fit` a body `width` world units wide needs: `ceil(width / cell)`, at least 1
    /// (a body must stand on a free cell). A value above [`MAX_FIT`] fits nowhere.
    pub fn cells_for(&self, width: f32) -> u32 {
        let n = (width.max(0.0) / self.cell).ceil();
        if n.is_finite() { (n as u32).max(1) } else { u32::MAX }
    }

    /// Whether a body that needs `need` cells ([`Self::cells_for`]) fits the cell at `index`.
    pub fn fits_index(&self, index: usize, need: u32) -> bool {
        self.walk[index] == FREE && u32::from(self.fit[index]) >= need
    }

    /// World units from the cell's centre to the nearest blocked cell or the map edge: 0 on a
    /// blocked cell, half a cell next to a wall.
    pub fn clearance_index(&self, index: usize) -> f32 {
        match self.clear[index] {
            0 => 0.0,
            d => (f32::from(d) - 0.5) * self.cell,
        }
    }
}

/// `fit` (see the module docs). `dp` is the side of the largest free square whose
/// bottom-right cell is the cell; a `k`-square containing `(x, y)` exists exactly when a
/// cell of the `k × k` window starting at `(x, y)` has `dp ≥ k`, and the window maximum for
/// `k + 1` is the maximum of four windows for `k`.
fn fit_grid(cols: usize, rows: usize, walk: &[u8]) -> Vec<u8> {
    let n = cols * rows;
    let mut dp = vec![0u8; n];
    for r in 0..rows {
        for c in 0..cols {
            let i = r * cols + c;
            if walk[i] != FREE {
                continue;
            }
            let up = if r > 0 { dp[i - cols] } else { 0 };
            let left = if c > 0 { dp[i - 1] } else { 0 };
            let diag = if r > 0 && c > 0 { dp[i - cols - 1] } else { 0 };
            dp[i] = (1 + up.min(left).min(diag)).min(MAX_FIT);
        }
    }
    let mut fit: Vec<u8> = dp.iter().map(|&d| u8::from(d >= 1)).collect();
    let mut window = dp;
    for k in 2..=MAX_FIT {
        let mut any = false;
        for r in 0..rows {
            for c in 0..cols {
                let i = r * cols + c;
                let right = if c + 1 < cols { window[i + 1] } else { 0 };
                let down = if r + 1 < rows { window[i + cols] } else { 0 };
                let corner = if c + 1 < cols && r + 1 < rows { window[i + cols + 1] } else { 0 };
                // Cells after `i` are still the `k − 1` windows: row-major order reads them first.
                window[i] = window[i].max(right).max(down).max(corner);
                if window[i] >= k && walk[i] == FREE {
                    fit[i] = k;
                    any = true;
                }
            }
        }
        if !any {
            break;
        }
    }
    fit
}

/// `clear` (see the module docs): a two-pass chamfer transform with unit steps to all eight
/// neighbours, which is exact for the Chebyshev distance.
pub(crate) fn clear_grid(cols: usize, rows: usize, walk: &[u8]) -> Vec<u8> {
    let mut d = vec![0u32; cols * rows];
    for r in 0..rows {
        for c in 0..cols {
            let i = r * cols + c;
            if walk[i] == FREE {
                d[i] = (r + 1).min(c + 1).min(rows - r).min(cols - c) as u32;
            }
        }
    }
    let at = |d: &[u32], c: i64, r: i64| -> u32 {
        if c < 0 || r < 0 || c as usize >= cols || r as usize >= rows { 0 } else { d[r as usize * cols + c as usize] }
    };
    for r in 0..rows as i64 {
        for c in 0..cols as i64 {
            let i = r as usize * cols + c as usize;
            if d[i] == 0 {
                continue;
            }
            let m = at(&d, c - 1, r - 1).min(at(&d, c, r - 1)).min(at(&d, c + 1, r - 1)).min(at(&d, c - 1, r));
            d[i] = d[i].min(m + 1);
        }
    }
    for r in (0..rows as i64).rev() {
        for c in (0..cols as i64).rev() {
            let i = r as usize * cols + c as usize;
            if d[i] == 0 {
                continue;
            }
            let m = at(&d, c + 1, r + 1).min(at(&d, c, r + 1)).min(at(&d, c - 1, r + 1)).min(at(&d, c + 1, r));
            d[i] = d[i].min(m + 1);
        }
    }
    d.into_iter().map(|v| v.min(u32::from(u8::MAX)) as u8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grid from rows of `#` (wall) and `.` (free).
    pub(crate) fn grid(rows: &[&str], cell: f32) -> NavGrid {
        let cells: Vec<Vec<bool>> = rows.iter().map(|r| r.chars().map(|c| c == '#').collect()).collect();
        NavGrid::new(cells[0].len(), cells.len(), cell, |c, r| cells[r][c])
    }

    fn show(g: &NavGrid, values: &[u8]) -> Vec<String> {
        values
            .chunks(g.cols())
            .map(|row| row.iter().map(|v| char::from_digit(u32::from(*v), 16).unwrap()).collect())
            .collect()
    }

    /// `fit` by brute force: the largest free square (up to MAX_FIT) containing the cell.
    fn fit_brute(g: &NavGrid, col: usize, row: usize) -> u8 {
        let free = |c: i64, r: i64| g.is_free_at(c, r);
        let mut best = 0;
        for k in 1..=i64::from(MAX_FIT) {
            let (col, row) = (col as i64, row as i64);
            let found = (col - k + 1..=col)
                .any(|x0| (row - k + 1..=row).any(|y0| (x0..x0 + k).all(|x| (y0..y0 + k).all(|y| free(x, y)))));
            if found {
                best = k as u8;
            }
        }
        best
    }

    #[test]
    fn fit_and_clear_of_a_room_with_a_pillar() {
        let g =
            grid(&["#########", "#.......#", "#.......#", "#...#...#", "#.......#", "#.......#", "#########"], 10.0);
        assert_eq!(
            show(&g, g.fit_values()),
            ["000000000", "033323330", "033323330", "033303330", "033323330", "033323330", "000000000"]
        );
        assert_eq!(
            show(&g, g.clear_values()),
            ["000000000", "011111110", "012111210", "012101210", "012111210", "011111110", "000000000"]
        );
    }

    #[test]
    fn the_map_edge_counts_as_blocked() {
        let g = grid(&["....", "....", "...."], 1.0);
        assert_eq!(show(&g, g.clear_values()), ["1111", "1221", "1111"]);
        assert_eq!(show(&g, g.fit_values()), ["3333", "3333", "3333"]);
        assert_eq!(g.clearance_index(g.index(0, 0).unwrap()), 0.5);
        assert_eq!(g.clearance_index(g.index(1, 1).unwrap()), 1.5);
    }

    #[test]
    fn fit_is_capped_and_a_door_is_one_cell() {
        let mut rows = vec![".".repeat(40); 40];
        rows[20] = format!("{}.{}", "#".repeat(20), "#".repeat(19));
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let g = grid(&rows, 1.0);
        assert_eq!(g.fit(g.index(20, 20).unwrap()), 1, "the door");
        assert_eq!(g.fit(g.index(5, 3).unwrap()), MAX_FIT, "an open field");
        assert_eq!(g.fit(g.index(0, 20).unwrap()), 0, "a wall");
        assert_eq!(g.cells_for(0.0), 1);
        assert_eq!(g.cells_for(1.0), 1);
        assert_eq!(g.cells_for(1.5), 2);
        assert_eq!(g.cells_for(f32::INFINITY), u32::MAX);
    }

    #[test]
    fn cells_outside_and_points_that_are_not_numbers() {
        let g = grid(&["..", ".."], 10.0);
        assert_eq!(g.index_of([5.0, 15.0]), Some(2));
        assert_eq!(g.index_of([-0.1, 5.0]), None);
        assert_eq!(g.index_of([20.0, 5.0]), None);
        assert_eq!(g.cell_of([f32::NAN, 1.0]), None);
        assert_eq!(g.cell_of([1e30, 1.0]), None);
        assert!(g.is_obstacle_at(-1, 0) && g.is_obstacle_at(2, 0) && !g.is_obstacle_at(1, 1));
        assert_eq!(g.center(3), [15.0, 15.0]);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn fit_and_clear_match_their_definitions(
                (cols, rows, walls) in (1usize..14, 1usize..14).prop_flat_map(|(c, r)| {
                    (Just(c), Just(r), prop::collection::vec(prop::bool::weighted(0.25), c * r))
                })
            ) {
                let g = NavGrid::new(cols, rows, 1.0, |c, r| walls[r * cols + c]);
                for r in 0..rows {
                    for c in 0..cols {
                        let i = r * cols + c;
                        prop_assert_eq!(g.fit(i), fit_brute(&g, c, r), "fit at ({}, {})", c, r);
                        let mut clear = u8::MAX;
                        for rr in -1..=rows as i64 {
                            for cc in -1..=cols as i64 {
                                if g.is_obstacle_at(cc, rr) {
                                    let d = (cc - c as i64).abs().max((rr - r as i64).abs());
                                    clear = clear.min(d as u8);
                                }
                            }
                        }
                        prop_assert_eq!(g.clear(i), clear, "clear at ({}, {})", c, r);
                    }
                }
            }
        }
    }
}
