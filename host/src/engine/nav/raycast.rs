//! Rays without a physics world: a DDA walk over grid cells with a per-cell callback, and an OBB slab test.
//!
//! [`walk_ray_cells`] visits, in order, every cell a segment passes through (Amanatides &
//! Woo's traversal) and hands each to a callback that decides whether to go on, so a caller
//! can stop at a wall, count cells or change its rule mid-ray. [`ray_vs_grid`] is the usual
//! "first wall" wrapper; [`ray_vs_obb`] intersects a ray with a turned box.

use std::ops::ControlFlow;

use crate::engine::map::{MAX_LEVELS, MapLevels, Surface};
use crate::engine::nav::grid::NavGrid;

/// The farthest a walk goes, in cells: a longer segment is not walked at all (its callers
/// treat it as blocked), so a point far outside every map cannot make a walk run for ever.
pub const MAX_WALK_CELLS: i64 = 1 << 20;

/// Walks the cells of the segment `a → b` on a grid of `cell` world units, in order from
/// `a`'s cell to `b`'s, calling `visit(col, row)` for each (cells outside any grid included:
/// the callback decides what they mean). Stops at the first `Break`.
///
/// Each step moves to a 4-neighbour: where the segment passes exactly through a corner,
/// the cell across the x edge comes first, then the diagonal one. Returns `Break` without
/// visiting anything when a coordinate is not finite or the walk would exceed
/// [`MAX_WALK_CELLS`].
pub fn walk_ray_cells(
    a: [f32; 2],
    b: [f32; 2],
    cell: f32,
    mut visit: impl FnMut(i64, i64) -> ControlFlow<()>,
) -> ControlFlow<()> {
    if !(a.iter().chain(&b).all(|v| v.is_finite()) && cell.is_finite() && cell > 0.0) {
        return ControlFlow::Break(());
    }
    let limit = MAX_WALK_CELLS as f32;
    let (qa, qb) = ([a[0] / cell, a[1] / cell], [b[0] / cell, b[1] / cell]);
    if qa.iter().chain(&qb).any(|v| v.abs() > limit) {
        return ControlFlow::Break(());
    }
    let (mut cx, mut cy) = (floor(qa[0]), floor(qa[1]));
    let (ex, ey) = (floor(qb[0]), floor(qb[1]));
    if (ex - cx).abs() + (ey - cy).abs() > MAX_WALK_CELLS {
        return ControlFlow::Break(());
    }
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    let (sx, sy) = (dx.signum() as i64, dy.signum() as i64);
    // Parameter t along the segment (0 at `a`, 1 at `b`) at which the next x / y edge is crossed.
    let next_edge = |start: f32, d: f32, c: i64| -> (f32, f32) {
        if d == 0.0 {
            return (f32::INFINITY, f32::INFINITY);
        }
        let edge = if d > 0.0 { (c + 1) as f32 * cell } else { c as f32 * cell };
        ((edge - start) / d, cell / d.abs())
    };
    let (mut tx, step_x) = next_edge(a[0], dx, cx);
    let (mut ty, step_y) = next_edge(a[1], dy, cy);
    visit(cx, cy)?;
    let steps = (ex - cx).abs() + (ey - cy).abs();
    for _ in 0..steps {
        if (tx <= ty && cx != ex) || cy == ey {
            cx += sx;
            tx += step_x;
        } else {
            cy += sy;
            ty += step_y;
        }
        visit(cx, cy)?;
    }
    ControlFlow::Continue(())
}

/// [`walk_ray_cells`] for a segment whose ends both lie inside a grid of `cols` columns
/// (`0 ≤ x / cell < cols` and `0 ≤ y / cell` below the rows, as `f32`), calling `visit(index)` with
/// each cell's row-major index, in the same order. Every cell between the two ends' cells is
/// inside the grid, so no index is out of it.
pub fn walk_ray_indices(
    a: [f32; 2],
    b: [f32; 2],
    cell: f32,
    cols: usize,
    mut visit: impl FnMut(usize) -> ControlFlow<()>,
) -> ControlFlow<()> {
    walk_ray_cells(a, b, cell, |c, r| visit(r as usize * cols + c as usize))
}

/// One stretch of a ray on one level of a layered map: from `start` to `end` along it (world
/// units from its origin).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RaySegment {
    /// Where the stretch begins along the ray.
    pub start: f32,
    /// Where it ends.
    pub end: f32,
    /// The level it flies on: it meets that level's walls and bodies only.
    pub level: u8,
}

/// Cuts the ray from `origin` in the unit direction `dir`, `max_dist` long, that starts on
/// `level`, into stretches by the level it flies on, walking its cells ([`walk_ray_cells`]).
/// Where it passes from cell `a` into cell `b`:
///
/// - on a level above the ground, into a cell without that level's floor (off the slab's
///   edge), it drops to the level the cell would land a body on ([`MapLevels::landing_level`]):
///   a shot from a bridge reaches the ground beyond it;
/// - into a cell that has the floor of a higher level `a` does not have (across that slab's
///   edge from outside), it climbs onto the lowest such level: a shot meets a slab's rails
///   and the bodies on it from outside, while one fired under the slab flies on under it.
///
/// A flat map gives one stretch on the ground; so does a ray that never crosses a slab's edge.
pub fn level_segments(
    levels: &MapLevels,
    origin: [f32; 2],
    dir: [f32; 2],
    max_dist: f32,
    level: u8,
) -> Vec<RaySegment> {
    let mut out = Vec::new();
    if !levels.is_layered() {
        out.push(RaySegment { start: 0.0, end: max_dist, level });
        return out;
    }
    let end = [origin[0] + dir[0] * max_dist, origin[1] + dir[1] * max_dist];
    let tile = levels.tile_size();
    let (mut current, mut start, mut previous) = (level, 0.0f32, None::<(i64, i64)>);
    let _ = walk_ray_cells(origin, end, tile, |c, r| {
        if let Some(a) = previous {
            let next = next_ray_level(levels, current, a, (c, r));
            if next != current {
                let (lo, hi) = ([c as f32 * tile, r as f32 * tile], [(c + 1) as f32 * tile, (r + 1) as f32 * tile]);
                let t = slab(origin, dir, lo, hi).map_or(start, |(t, _)| t).clamp(start, max_dist);
                out.push(RaySegment { start, end: t, level: current });
                (start, current) = (t, next);
            }
        }
        previous = Some((c, r));
        ControlFlow::Continue(())
    });
    out.push(RaySegment { start, end: max_dist, level: current });
    out
}

/// The level a ray on `level` flies on once it passes from cell `a` into cell `b` (see
/// [`level_segments`]).
fn next_ray_level(levels: &MapLevels, level: u8, a: (i64, i64), b: (i64, i64)) -> u8 {
    let surface = |n: u8, (c, r): (i64, i64)| levels.surface_at_cell(n, c, r);
    if level > 0 && surface(level, b) == Surface::Empty {
        return match (usize::try_from(b.0), usize::try_from(b.1)) {
            (Ok(c), Ok(r)) => levels.landing_level_cell(level, c, r),
            _ => level,
        };
    }
    (level + 1..MAX_LEVELS as u8)
        .find(|&m| surface(m, b) != Surface::Empty && surface(m, a) == Surface::Empty)
        .unwrap_or(level)
}

/// `v.floor()` as an integer, for `|v|` within [`MAX_WALK_CELLS`] (without a call to `floorf`).
fn floor(v: f32) -> i64 {
    let t = v as i64;
    if (t as f32) > v { t - 1 } else { t }
}

/// The distance along the ray from `origin` in the unit direction `dir` to the first
/// blocked cell of `grid` (the map edge counts as blocked), within `max_dist`; `None` when
/// the ray reaches `max_dist` in free cells. A ray starting in a wall hits it at 0.
pub fn ray_vs_grid(grid: &NavGrid, origin: [f32; 2], dir: [f32; 2], max_dist: f32) -> Option<f32> {
    let end = [origin[0] + dir[0] * max_dist, origin[1] + dir[1] * max_dist];
    let mut hit = None;
    let flow = walk_ray_cells(origin, end, grid.cell(), |c, r| {
        if grid.is_obstacle_at(c, r) {
            hit = Some((c, r));
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    let (c, r) = match (flow, hit) {
        (ControlFlow::Continue(()), _) => return None,
        (ControlFlow::Break(()), None) => return Some(0.0),
        (ControlFlow::Break(()), Some(cell)) => cell,
    };
    let s = grid.cell();
    let (lo, hi) = ([c as f32 * s, r as f32 * s], [(c + 1) as f32 * s, (r + 1) as f32 * s]);
    Some(slab(origin, dir, lo, hi).map_or(0.0, |(t, _)| t.max(0.0)))
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
    pub(crate) fn overlaps_square(&self, lo: [f32; 2], side: f32, slack: f32) -> bool {
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

/// The distance along the ray from `origin` in the unit direction `dir` at which it enters
/// the box centred at `center` with half-extents `half`, turned by `angle` rad (+x towards
/// +y), within `max_dist`; 0 when `origin` is inside; `None` when it misses
/// ([`Obb::ray`] with the box's turn given as an angle).
pub fn ray_vs_obb(
    origin: [f32; 2],
    dir: [f32; 2],
    max_dist: f32,
    center: [f32; 2],
    half: [f32; 2],
    angle: f32,
) -> Option<f32> {
    Obb::new(center, half, angle).ray(origin, dir, max_dist)
}

/// The slab test of the ray `o + t·d` against the axis-aligned box `[lo, hi]`: the entry and
/// exit parameters, or `None` when the line misses the box.
pub(crate) fn slab(o: [f32; 2], d: [f32; 2], lo: [f32; 2], hi: [f32; 2]) -> Option<(f32, f32)> {
    let (mut t_in, mut t_out) = (f32::NEG_INFINITY, f32::INFINITY);
    for k in 0..2 {
        if d[k] == 0.0 {
            if o[k] < lo[k] || o[k] > hi[k] {
                return None;
            }
            continue;
        }
        let (a, b) = ((lo[k] - o[k]) / d[k], (hi[k] - o[k]) / d[k]);
        let (near, far) = if a < b { (a, b) } else { (b, a) };
        t_in = t_in.max(near);
        t_out = t_out.min(far);
    }
    (t_in <= t_out).then_some((t_in, t_out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::nav::grid::NavGrid;

    fn cells(a: [f32; 2], b: [f32; 2]) -> Vec<(i64, i64)> {
        let mut out = Vec::new();
        let _ = walk_ray_cells(a, b, 1.0, |c, r| {
            out.push((c, r));
            ControlFlow::Continue(())
        });
        out
    }

    #[test]
    fn a_walk_visits_every_cell_the_segment_crosses_in_order() {
        assert_eq!(cells([0.5, 0.5], [3.5, 0.5]), [(0, 0), (1, 0), (2, 0), (3, 0)]);
        assert_eq!(cells([3.5, 0.5], [0.5, 0.5]), [(3, 0), (2, 0), (1, 0), (0, 0)]);
        assert_eq!(cells([0.5, 0.5], [0.5, -1.5]), [(0, 0), (0, -1), (0, -2)]);
        assert_eq!(cells([0.2, 0.5], [2.8, 1.5]), [(0, 0), (1, 0), (1, 1), (2, 1)]);
        assert_eq!(cells([0.5, 0.5], [0.7, 0.6]), [(0, 0)], "one cell");
        // Through a corner: x first, then the diagonal cell.
        assert_eq!(cells([0.5, 0.5], [1.5, 1.5]), [(0, 0), (1, 0), (1, 1)]);
    }

    #[test]
    fn a_walk_stops_where_the_callback_says() {
        let mut seen = 0;
        let flow = walk_ray_cells([0.5, 0.5], [9.5, 0.5], 1.0, |c, _| {
            seen += 1;
            if c == 3 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        });
        assert_eq!((flow, seen), (ControlFlow::Break(()), 4));
    }

    #[test]
    fn a_walk_refuses_what_it_cannot_walk() {
        let never = |_: i64, _: i64| -> ControlFlow<()> { panic!("no cell may be visited") };
        assert!(walk_ray_cells([f32::NAN, 0.0], [1.0, 1.0], 1.0, never).is_break());
        assert!(walk_ray_cells([0.0, 0.0], [1e30, 1.0], 1.0, never).is_break());
        assert!(walk_ray_cells([0.0, 0.0], [1.0, 1.0], 0.0, never).is_break());
    }

    #[test]
    fn a_ray_stops_at_the_first_wall() {
        let rows = ["#####", "#...#", "#.#.#", "#...#", "#####"];
        let cells: Vec<Vec<bool>> = rows.iter().map(|r| r.chars().map(|c| c == '#').collect()).collect();
        let g = NavGrid::new(5, 5, 10.0, |c, r| cells[r][c]);
        let hit = ray_vs_grid(&g, [15.0, 25.0], [1.0, 0.0], 100.0).unwrap();
        assert!((hit - 5.0).abs() < 1e-4, "the pillar's left face is 5 away: {hit}");
        assert_eq!(ray_vs_grid(&g, [15.0, 15.0], [1.0, 0.0], 10.0), None, "short of the wall");
        let hit = ray_vs_grid(&g, [15.0, 15.0], [0.0, -1.0], 100.0).unwrap();
        assert!((hit - 5.0).abs() < 1e-4, "{hit}");
        assert_eq!(ray_vs_grid(&g, [5.0, 5.0], [1.0, 0.0], 100.0), Some(0.0), "starting in a wall");
    }

    #[test]
    fn the_slab_test_of_a_turned_box() {
        // A 2×1 box (half 1 × 0.5) at (10, 0).
        let hit = ray_vs_obb([0.0, 0.0], [1.0, 0.0], 100.0, [10.0, 0.0], [1.0, 0.5], 0.0).unwrap();
        assert!((hit - 9.0).abs() < 1e-5, "{hit}");
        // Turned a quarter: its long side now runs along y, so the ray meets it 0.5 from the centre.
        let hit = ray_vs_obb([0.0, 0.0], [1.0, 0.0], 100.0, [10.0, 0.0], [1.0, 0.5], std::f32::consts::FRAC_PI_2);
        assert!((hit.unwrap() - 9.5).abs() < 1e-4, "{hit:?}");
        // Passing above it, too short, behind, and from inside.
        assert_eq!(ray_vs_obb([0.0, 2.0], [1.0, 0.0], 100.0, [10.0, 0.0], [1.0, 0.5], 0.0), None);
        assert_eq!(ray_vs_obb([0.0, 0.0], [1.0, 0.0], 8.0, [10.0, 0.0], [1.0, 0.5], 0.0), None);
        assert_eq!(ray_vs_obb([0.0, 0.0], [-1.0, 0.0], 100.0, [10.0, 0.0], [1.0, 0.5], 0.0), None);
        assert_eq!(ray_vs_obb([10.2, 0.1], [1.0, 0.0], 100.0, [10.0, 0.0], [1.0, 0.5], 0.3), Some(0.0));
        // A diagonal ray into a box turned 45°: in the box's frame it runs along +x into a face.
        let s = std::f32::consts::FRAC_1_SQRT_2;
        let hit = ray_vs_obb([0.0, 0.0], [s, s], 100.0, [10.0, 10.0], [1.0, 1.0], std::f32::consts::FRAC_PI_4);
        let expected = 200f32.sqrt() - 1.0;
        assert!((hit.unwrap() - expected).abs() < 1e-3, "{hit:?} vs {expected}");
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// The walk is 4-connected, starts in `a`'s cell and ends in `b`'s, and every
            /// cell it visits is touched by the segment.
            #[test]
            fn walks_are_connected_and_touch_the_segment(
                a in (-20.0f32..20.0, -20.0f32..20.0), b in (-20.0f32..20.0, -20.0f32..20.0)
            ) {
                let (a, b) = ([a.0, a.1], [b.0, b.1]);
                let got = cells(a, b);
                prop_assert_eq!(got[0], (a[0].floor() as i64, a[1].floor() as i64));
                prop_assert_eq!(*got.last().unwrap(), (b[0].floor() as i64, b[1].floor() as i64));
                for w in got.windows(2) {
                    prop_assert_eq!((w[0].0 - w[1].0).abs() + (w[0].1 - w[1].1).abs(), 1);
                }
                let d = [b[0] - a[0], b[1] - a[1]];
                for &(c, r) in &got {
                    let lo = [c as f32 - 1e-3, r as f32 - 1e-3];
                    let hi = [c as f32 + 1.0 + 1e-3, r as f32 + 1.0 + 1e-3];
                    let touched = slab(a, d, lo, hi).is_some_and(|(t0, t1)| t1 >= -1e-3 && t0 <= 1.0 + 1e-3);
                    prop_assert!(touched, "cell ({}, {}) is off the segment", c, r);
                }
            }
        }
    }
}
