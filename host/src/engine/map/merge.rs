//! Static walls merged into rectangles: the solid-tile grid and the greedy run merge.

/// A rectangle of whole tiles: columns `col..col + cols`, rows `row..row + rows`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileRect {
    /// Leftmost column.
    pub col: usize,
    /// Top row.
    pub row: usize,
    /// Width in tiles (at least 1).
    pub cols: usize,
    /// Height in tiles (at least 1).
    pub rows: usize,
}

/// Merges the wall tiles of a grid into rectangles, deterministically.
///
/// A tile is a wall when its id is in `physics_static`. The merge is greedy:
///
/// 1. each row is cut into its **maximal horizontal runs** of wall tiles;
/// 2. rows are visited top to bottom and runs left to right; a run not yet used starts a
///    rectangle, which grows downward for as long as the row below has **the identical
///    run** (same first column, same length, also maximal there); those runs are used up.
///
/// Rectangles come out ordered by their top-left tile (row, then column). Every wall tile
/// is in exactly one rectangle and rectangles never overlap. The grid may be ragged (a
/// missing tile is not a wall), so this never fails; [`MapConfig::validate`](super::MapConfig::validate)
/// rejects ragged grids before any physics is built.
///
/// ```text
/// row 0  ##########   → { col 0, row 0, cols 10, rows 1 }
/// row 1  #..##....#   → { col 0, row 1, cols 1, rows 3 }, { col 3, row 1, cols 2, rows 2 },
/// row 2  #..##....#     { col 9, row 1, cols 1, rows 3 }
/// row 3  #........#
/// row 4  ##########   → { col 0, row 4, cols 10, rows 1 }
/// ```
pub fn merge_static(map: &[Vec<u16>], physics_static: &[u16]) -> Vec<TileRect> {
    merge_solid(&SolidGrid::new(map, physics_static))
}

/// Which tiles of a grid are walls, row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct SolidGrid {
    cols: usize,
    rows: usize,
    cells: Vec<bool>,
}

impl SolidGrid {
    /// The wall tiles of `map` (`map[row][col]`) for the wall ids `solid`; the width is the
    /// longest row's, missing tiles of shorter rows are not walls.
    pub(super) fn new(map: &[Vec<u16>], solid: &[u16]) -> SolidGrid {
        let mut ids = solid.to_vec();
        ids.sort_unstable();
        ids.dedup();
        let cols = map.iter().map(Vec::len).max().unwrap_or(0);
        let rows = map.len();
        let mut cells = vec![false; cols * rows];
        for (row, tiles) in map.iter().enumerate() {
            for (col, tile) in tiles.iter().enumerate() {
                cells[row * cols + col] = ids.binary_search(tile).is_ok();
            }
        }
        SolidGrid { cols, rows, cells }
    }

    /// A grid of `cols × rows` from its cells, row-major (`true`: a wall).
    pub(super) fn from_cells(cols: usize, rows: usize, cells: Vec<bool>) -> SolidGrid {
        debug_assert_eq!(cells.len(), cols * rows);
        SolidGrid { cols, rows, cells }
    }

    /// Number of columns.
    pub(super) fn cols(&self) -> usize {
        self.cols
    }

    /// Number of rows.
    pub(super) fn rows(&self) -> usize {
        self.rows
    }

    /// Whether tile `(col, row)` is a wall; `false` outside the grid.
    pub(super) fn is_solid(&self, col: usize, row: usize) -> bool {
        col < self.cols && row < self.rows && self.cells[row * self.cols + col]
    }

    /// The maximal runs of walls in `row` as `(first column, length)`, left to right.
    fn runs(&self, row: usize) -> Vec<(usize, usize)> {
        let mut runs = Vec::new();
        let mut col = 0;
        while col < self.cols {
            if self.is_solid(col, row) {
                let start = col;
                while col < self.cols && self.is_solid(col, row) {
                    col += 1;
                }
                runs.push((start, col - start));
            } else {
                col += 1;
            }
        }
        runs
    }
}

/// The greedy merge of [`merge_static`] over a prepared grid.
pub(super) fn merge_solid(grid: &SolidGrid) -> Vec<TileRect> {
    let runs: Vec<Vec<(usize, usize)>> = (0..grid.rows).map(|row| grid.runs(row)).collect();
    // used[row] holds the first columns of the runs of `row` already inside a rectangle.
    let mut used: Vec<Vec<usize>> = vec![Vec::new(); grid.rows];
    let mut rects = Vec::new();
    for row in 0..grid.rows {
        for &(col, cols) in &runs[row] {
            if used[row].contains(&col) {
                continue;
            }
            let mut rows = 1;
            while row + rows < grid.rows && runs[row + rows].binary_search(&(col, cols)).is_ok() {
                used[row + rows].push(col);
                rows += 1;
            }
            rects.push(TileRect { col, row, cols, rows });
        }
    }
    rects
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses a drawing: `#` is tile 1 (a wall), anything else tile 0.
    fn grid(drawing: &[&str]) -> Vec<Vec<u16>> {
        drawing.iter().map(|line| line.chars().map(|c| u16::from(c == '#')).collect()).collect()
    }

    fn merged(drawing: &[&str]) -> Vec<TileRect> {
        merge_static(&grid(drawing), &[1])
    }

    fn r(col: usize, row: usize, cols: usize, rows: usize) -> TileRect {
        TileRect { col, row, cols, rows }
    }

    #[test]
    fn the_documented_example() {
        let got = merged(&["##########", "#..##....#", "#..##....#", "#........#", "##########"]);
        assert_eq!(got, vec![r(0, 0, 10, 1), r(0, 1, 1, 3), r(3, 1, 2, 2), r(9, 1, 1, 3), r(0, 4, 10, 1)]);
    }

    #[test]
    fn a_full_block_is_one_rectangle() {
        assert_eq!(merged(&["###", "###", "###"]), vec![r(0, 0, 3, 3)]);
    }

    #[test]
    fn a_run_grows_down_only_while_the_run_below_is_identical() {
        // Row 1's run 0..3 is not row 0's 0..2: it starts its own rectangle.
        let got = merged(&["##..", "###.", "###.", "#..."]);
        assert_eq!(got, vec![r(0, 0, 2, 1), r(0, 1, 3, 2), r(0, 3, 1, 1)]);
    }

    #[test]
    fn a_run_inside_a_longer_run_below_does_not_merge() {
        // Row 1 has the run 1..3 but it is part of the maximal run 0..4, so no merge.
        let got = merged(&[".##.", "####", ".##."]);
        assert_eq!(got, vec![r(1, 0, 2, 1), r(0, 1, 4, 1), r(1, 2, 2, 1)]);
    }

    #[test]
    fn separate_runs_merge_independently() {
        let got = merged(&["#.#.#", "#.#..", "#...#", "#...#"]);
        assert_eq!(got, vec![r(0, 0, 1, 4), r(2, 0, 1, 2), r(4, 0, 1, 1), r(4, 2, 1, 2)]);
    }

    #[test]
    fn an_open_or_empty_grid_has_no_walls() {
        assert_eq!(merged(&["....", "...."]), vec![]);
        assert_eq!(merge_static(&[], &[1]), vec![]);
        assert_eq!(merge_static(&[vec![]], &[1]), vec![]);
    }

    #[test]
    fn several_wall_ids_count_alike_and_other_ids_do_not() {
        let map = vec![vec![3, 7, 0, 7], vec![2, 2, 2, 2]];
        assert_eq!(merge_static(&map, &[7, 3, 7]), vec![r(0, 0, 2, 1), r(3, 0, 1, 1)]);
    }

    #[test]
    fn ragged_grids_do_not_panic() {
        let map = vec![vec![1, 1, 1], vec![1], vec![]];
        assert_eq!(merge_static(&map, &[1]), vec![r(0, 0, 3, 1), r(0, 1, 1, 1)]);
    }

    #[test]
    fn every_wall_tile_is_covered_exactly_once() {
        let drawing = ["#.##.###", "#.##.#.#", "###..#.#", "..######", "#.#.#.#."];
        let map = grid(&drawing);
        let mut count = vec![vec![0; 8]; 5];
        for rect in merge_static(&map, &[1]) {
            for row in &mut count[rect.row..rect.row + rect.rows] {
                for tile in &mut row[rect.col..rect.col + rect.cols] {
                    *tile += 1;
                }
            }
        }
        for (row, line) in drawing.iter().enumerate() {
            for (col, c) in line.chars().enumerate() {
                assert_eq!(count[row][col], u8::from(c == '#'), "tile ({col}, {row})");
            }
        }
    }
}
