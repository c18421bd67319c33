//! Layered maps (2.5D): the levels above the ground, the ramps between them, and what a body asks of them ([`MapLevels`]).
//!
//! Level 0 is the ground: the map's `map`, `physicsStatic` and `layers`. Levels 1 to 7
//! come from `levels`, each a grid over the ground's cells: a cell of a level is empty (the
//! level below shows), floor (a slab bodies drive on) or a rail (a wall on that level, and
//! floor under it). Ramps join levels: every cell of level `from`'s grid with the ramp's
//! tile id rises toward the ramp's `dir`, up to level `to`.
//!
//! ```text
//!  level 1     . . # = = = # . .      = slab floor, # rail, > ramp rising east
//!  level 0     . > > . # # . . .      the bridge spans the ground's wall band (# # on level 0),
//!              ^foot ^top             ground traffic drives under it
//! ```
//!
//! [`MapLevels`] holds that geometry without a physics world, so the host (inside
//! [`GameMap`](super::GameMap)) and a client's replica build the same structure from the
//! same fields and answer [`MapLevels::level_at`], [`MapLevels::has_floor`],
//! [`MapLevels::is_solid`], [`MapLevels::ramp_at`] and [`MapLevels::landing_level`] with one
//! implementation. Everything it returns is in world units (the map's lengths times
//! `mapScale`).
//!
//! # Ramps: runs and blocks
//!
//! The cells of one ramp that follow each other along its direction, in one row (east, west)
//! or one column (north, south), are a [`RampRun`]: a lane from its foot cell to its top cell.
//! Runs of the same ramp side by side over the same span are one wide ramp, a block, and are
//! fenced together ([`ramp_guards`](super::ramp_guards)). A run's progress goes from 0 at
//! the foot's outer edge to 1 at the top's outer edge; a body there stands
//! `progress · (to − from) · levelHeight` above level `from` ([`RampSample::height`]).
//! `levelHeight` (one level, world units; the tile size by default) makes the slope
//! dimensionless: `rise · levelHeight / span`.

mod validate;

use indexmap::IndexMap;

pub use validate::{RULE_CASES, RuleCase, rule_cases, validate_levels};

use super::config::{LevelConfig, MapConfig, RampConfig, RampDir};
use super::merge::{SolidGrid, merge_solid};
use super::{StaticBlock, WorldRect};

/// Levels a map may have, the ground included: one bit of a rapier collision mask each.
pub const MAX_LEVELS: usize = 8;

/// What a cell of one level holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    /// Nothing: on a level above the ground the level below shows here.
    Empty,
    /// Floor a body drives on.
    Floor,
    /// A wall (on the ground) or a rail (above it): it blocks bodies and shots on its level;
    /// a rail is floor too, so what falls on it lands on it.
    Wall,
}

/// The axis a ramp rises along.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Axis {
    /// x (columns): ramps rising east or west.
    X,
    /// y (rows): ramps rising south or north.
    Y,
}

/// One lane of a ramp: cells that follow each other along its direction (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RampRun {
    /// The ramp (`ramps[i]`) it belongs to.
    pub ramp: usize,
    /// Which way it rises.
    pub dir: RampDir,
    /// The axis it rises along.
    pub axis: Axis,
    /// +1 when it rises toward growing x (or y), −1 toward shrinking.
    pub sign: i8,
    /// Its row (axis x) or column (axis y).
    pub lane: usize,
    /// The lowest cell index along the axis it covers (a column for axis x, a row for y).
    pub first: usize,
    /// The highest, inclusive.
    pub last: usize,
    /// The level at its foot.
    pub from: u8,
    /// The level at its top.
    pub to: u8,
    /// The block (wide ramp) it belongs to, an index into [`MapLevels::blocks`].
    pub block: usize,
}

impl RampRun {
    /// Its length in cells (at least 1).
    pub fn len(&self) -> usize {
        self.last - self.first + 1
    }

    /// Whether it is empty (never: a run has a cell); for symmetry with [`Self::len`].
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Levels it climbs (`to − from`).
    pub fn rise(&self) -> u8 {
        self.to.saturating_sub(self.from)
    }

    /// The cell `(col, row)` `k` cells up from its foot (0 is the foot).
    pub fn cell(&self, k: usize) -> (usize, usize) {
        let along = if self.sign > 0 { self.first + k } else { self.last - k };
        match self.axis {
            Axis::X => (along, self.lane),
            Axis::Y => (self.lane, along),
        }
    }

    /// Its cells from the foot up.
    pub fn cells(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.len()).map(|k| self.cell(k))
    }

    /// The cell just past its top, where it leads (may lie off the grid).
    pub fn beyond_top(&self) -> (i64, i64) {
        let (c, r) = self.cell(self.len() - 1);
        let (dc, dr) = self.dir.step();
        (c as i64 + dc, r as i64 + dr)
    }

    /// The cell just before its foot (may lie off the grid).
    pub fn before_foot(&self) -> (i64, i64) {
        let (c, r) = self.cell(0);
        let (dc, dr) = self.dir.step();
        (c as i64 - dc, r as i64 - dr)
    }

    /// Whether the cell `(col, row)` is one of its cells.
    pub fn contains(&self, col: usize, row: usize) -> bool {
        let (lane, along) = match self.axis {
            Axis::X => (row, col),
            Axis::Y => (col, row),
        };
        lane == self.lane && (self.first..=self.last).contains(&along)
    }

    /// How many cells up from the foot the cell at `along` (its index on the axis) is.
    pub fn step_of(&self, along: usize) -> usize {
        if self.sign > 0 { along - self.first } else { self.last - along }
    }
}

/// A wide ramp: runs of one ramp side by side over the same span, fenced together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RampBlock {
    /// Its runs, in lane order.
    pub runs: Vec<usize>,
    /// The lowest lane.
    pub lane_lo: usize,
    /// The highest lane, inclusive.
    pub lane_hi: usize,
}

/// What [`MapLevels::ramp_at`] says of a point on a ramp.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RampSample {
    /// The run under the point, an index into [`MapLevels::runs`].
    pub run: usize,
    /// How far up the run, from 0 at the foot's outer edge to 1 at the top's.
    pub progress: f32,
    /// The level at the foot.
    pub from: u8,
    /// The level at the top.
    pub to: u8,
    /// The unit vector pointing uphill, world axes.
    pub dir: [f32; 2],
    /// The run's slope, dimensionless (`rise · levelHeight / span`): driving along a heading
    /// `h` (a unit vector) climbs `slope · dot(dir, h)` per unit driven.
    pub slope: f32,
    /// The axis the run rises along.
    pub axis: Axis,
    /// +1 when it rises toward growing x (or y), −1 toward shrinking.
    pub sign: i8,
    /// The height above level `from` at the point, world units (`progress · rise · levelHeight`).
    pub height: f32,
}

/// The layered geometry of a map (see the module docs); flat maps have only the ground.
#[derive(Clone, Debug, PartialEq)]
pub struct MapLevels {
    cols: usize,
    rows: usize,
    tile: f32,
    level_height: f32,
    layered: bool,
    /// Per level, the surface of each cell (row-major); `None` for a level the map does not declare.
    surfaces: Vec<Option<Vec<Surface>>>,
    /// Per level, its walls merged into blocks (empty for an undeclared level).
    blocks: Vec<Vec<StaticBlock>>,
    runs: Vec<RampRun>,
    ramp_blocks: Vec<RampBlock>,
    /// Per cell, the run on it plus one (0: none). Where ramps overlap (an invalid map), the
    /// first run wins.
    ramp_cells: Vec<u32>,
}

/// The tile ids of level `n`'s grid: `cfg.map` for the ground, else the declared level's.
pub(super) fn level_grid<'a>(
    cfg_map: &'a [Vec<u16>],
    levels: &'a IndexMap<String, LevelConfig>,
    n: u8,
) -> Option<&'a [Vec<u16>]> {
    if n == 0 { Some(cfg_map) } else { level_config(levels, n).map(|l| l.map.as_slice()) }
}

/// Level `n`'s config (1..=7), when declared under its exact name.
pub(super) fn level_config(levels: &IndexMap<String, LevelConfig>, n: u8) -> Option<&LevelConfig> {
    if n == 0 || n as usize >= MAX_LEVELS {
        return None;
    }
    levels.get(n.to_string().as_str())
}

impl MapLevels {
    /// The geometry of `cfg` at `scale` (world units = map units · `scale`).
    ///
    /// It never fails: a level whose name is not `"1"`..`"7"` is left out, cells missing
    /// from a short grid are empty, a ramp whose levels are out of range has no runs.
    /// [`MapConfig::validate`] reports all of those; a valid map gives exactly its geometry.
    pub fn new(cfg: &MapConfig, scale: f32) -> MapLevels {
        MapLevels::from_fields(
            &cfg.map,
            &cfg.physics_static,
            cfg.tile_size,
            &cfg.levels,
            &cfg.ramps,
            cfg.level_height,
            scale,
        )
    }

    /// [`MapLevels::new`] from the raw fields (map units, then `scale`).
    pub fn from_fields(
        map: &[Vec<u16>],
        physics_static: &[u16],
        tile_size: f32,
        levels: &IndexMap<String, LevelConfig>,
        ramps: &[RampConfig],
        level_height: Option<f32>,
        scale: f32,
    ) -> MapLevels {
        let cols = map.first().map_or(0, Vec::len);
        let rows = map.len();
        let tile = tile_size * scale;
        let level_height = level_height.unwrap_or(tile_size) * scale;
        let layered = !levels.is_empty() || !ramps.is_empty();
        let mut surfaces = vec![None; MAX_LEVELS];
        let ground = SolidGrid::new(map, physics_static);
        surfaces[0] = Some(
            (0..rows * cols)
                .map(|i| if ground.is_solid(i % cols.max(1), i / cols.max(1)) { Surface::Wall } else { Surface::Floor })
                .collect::<Vec<_>>(),
        );
        for n in 1..MAX_LEVELS as u8 {
            let Some(level) = level_config(levels, n) else { continue };
            let mut cells = vec![Surface::Empty; rows * cols];
            for (r, tiles) in level.map.iter().enumerate().take(rows) {
                for (c, &tile) in tiles.iter().enumerate().take(cols) {
                    cells[r * cols + c] = if tile == 0 {
                        Surface::Empty
                    } else if level.walls.contains(&tile) {
                        Surface::Wall
                    } else if level.floor.contains(&tile) {
                        Surface::Floor
                    } else {
                        Surface::Empty
                    };
                }
            }
            surfaces[n as usize] = Some(cells);
        }
        let blocks = surfaces
            .iter()
            .map(|s| match s {
                Some(cells) => {
                    let walls: Vec<bool> = cells.iter().map(|&s| s == Surface::Wall).collect();
                    merge_solid(&SolidGrid::from_cells(cols, rows, walls))
                        .into_iter()
                        .map(|tiles| StaticBlock {
                            tiles,
                            world: WorldRect {
                                x: tiles.col as f32 * tile,
                                y: tiles.row as f32 * tile,
                                width: tiles.cols as f32 * tile,
                                height: tiles.rows as f32 * tile,
                            },
                        })
                        .collect()
                }
                None => Vec::new(),
            })
            .collect();
        let mut out = MapLevels {
            cols,
            rows,
            tile,
            level_height,
            layered,
            surfaces,
            blocks,
            runs: Vec::new(),
            ramp_blocks: Vec::new(),
            ramp_cells: vec![0; rows * cols],
        };
        for (k, ramp) in ramps.iter().enumerate() {
            out.add_ramp(k, ramp, map, levels);
        }
        out
    }

    fn add_ramp(&mut self, k: usize, ramp: &RampConfig, map: &[Vec<u16>], levels: &IndexMap<String, LevelConfig>) {
        if ramp.from >= ramp.to || ramp.to as usize >= MAX_LEVELS || self.surfaces[ramp.to as usize].is_none() {
            return;
        }
        let Some(grid) = level_grid(map, levels, ramp.from) else { return };
        if ramp.from > 0 && ramp.tile == 0 {
            return;
        }
        let (axis, sign) = match ramp.dir {
            RampDir::East => (Axis::X, 1),
            RampDir::West => (Axis::X, -1),
            RampDir::South => (Axis::Y, 1),
            RampDir::North => (Axis::Y, -1),
        };
        let is_ramp = |c: usize, r: usize| grid.get(r).and_then(|row| row.get(c)) == Some(&ramp.tile);
        let (lanes, length) = match axis {
            Axis::X => (self.rows, self.cols),
            Axis::Y => (self.cols, self.rows),
        };
        let first_run = self.runs.len();
        for lane in 0..lanes {
            let at = |i: usize| match axis {
                Axis::X => is_ramp(i, lane),
                Axis::Y => is_ramp(lane, i),
            };
            let mut i = 0;
            while i < length {
                if !at(i) {
                    i += 1;
                    continue;
                }
                let first = i;
                while i < length && at(i) {
                    i += 1;
                }
                self.runs.push(RampRun {
                    ramp: k,
                    dir: ramp.dir,
                    axis,
                    sign,
                    lane,
                    first,
                    last: i - 1,
                    from: ramp.from,
                    to: ramp.to,
                    block: 0,
                });
            }
        }
        // Blocks: runs over the same span in neighbouring lanes (runs are in lane order).
        for r in first_run..self.runs.len() {
            let run = self.runs[r];
            let joined = self.ramp_blocks.iter().position(|b| {
                let last = &self.runs[*b.runs.last().expect("a block has a run")];
                last.ramp == k && b.lane_hi + 1 == run.lane && last.first == run.first && last.last == run.last
            });
            let b = match joined {
                Some(b) => {
                    self.ramp_blocks[b].runs.push(r);
                    self.ramp_blocks[b].lane_hi = run.lane;
                    b
                }
                None => {
                    self.ramp_blocks.push(RampBlock { runs: vec![r], lane_lo: run.lane, lane_hi: run.lane });
                    self.ramp_blocks.len() - 1
                }
            };
            self.runs[r].block = b;
            for (c, row) in run.cells() {
                let cell = &mut self.ramp_cells[row * self.cols + c];
                if *cell == 0 {
                    *cell = r as u32 + 1;
                }
            }
        }
    }

    /// Whether the map has levels or ramps (a flat map has neither).
    pub fn is_layered(&self) -> bool {
        self.layered
    }

    /// Columns and rows of every level's grid (the ground's).
    pub fn grid_size(&self) -> (usize, usize) {
        (self.cols, self.rows)
    }

    /// World units per tile.
    pub fn tile_size(&self) -> f32 {
        self.tile
    }

    /// The height of one level, world units.
    pub fn level_height(&self) -> f32 {
        self.level_height
    }

    /// Whether level `n` exists: the ground always does, a level above it when the map declares it.
    pub fn has_level(&self, n: u8) -> bool {
        self.surfaces.get(n as usize).is_some_and(Option::is_some)
    }

    /// The levels that exist, from the ground up.
    pub fn levels(&self) -> impl Iterator<Item = u8> + '_ {
        (0..MAX_LEVELS as u8).filter(|&n| self.has_level(n))
    }

    /// The highest level that exists.
    pub fn top_level(&self) -> u8 {
        self.levels().last().unwrap_or(0)
    }

    /// The cell `(col, row)` under the world point, `None` outside the grid (and for NaN).
    pub fn cell_of(&self, x: f32, y: f32) -> Option<(usize, usize)> {
        let (c, r) = ((x / self.tile).floor(), (y / self.tile).floor());
        if !(c >= 0.0 && r >= 0.0) {
            return None;
        }
        let (c, r) = (c as usize, r as usize);
        (c < self.cols && r < self.rows).then_some((c, r))
    }

    /// What level `n` holds in cell `(col, row)`; [`Surface::Empty`] off the grid or for a
    /// level that does not exist.
    pub fn surface(&self, n: u8, col: usize, row: usize) -> Surface {
        if col >= self.cols || row >= self.rows {
            return Surface::Empty;
        }
        match self.surfaces.get(n as usize) {
            Some(Some(cells)) => cells[row * self.cols + col],
            _ => Surface::Empty,
        }
    }

    /// [`Self::surface`] for signed coordinates (off the grid: empty).
    pub fn surface_at_cell(&self, n: u8, col: i64, row: i64) -> Surface {
        if col < 0 || row < 0 {
            return Surface::Empty;
        }
        self.surface(n, col as usize, row as usize)
    }

    /// Whether level `n` has floor under the world point (a rail is floor; the ground has
    /// floor everywhere on the map, walls included); `false` off the map.
    pub fn has_floor(&self, n: u8, x: f32, y: f32) -> bool {
        self.cell_of(x, y).is_some_and(|(c, r)| self.surface(n, c, r) != Surface::Empty)
    }

    /// Whether the world point is in a wall of level `n` (a rail above the ground); off the
    /// map counts as solid.
    pub fn is_solid(&self, n: u8, x: f32, y: f32) -> bool {
        self.cell_of(x, y).is_none_or(|(c, r)| self.surface(n, c, r) == Surface::Wall)
    }

    /// Whether a body may drive at the world point on level `n`: floor, and not a wall.
    pub fn is_walkable(&self, n: u8, x: f32, y: f32) -> bool {
        self.cell_of(x, y).is_some_and(|(c, r)| self.surface(n, c, r) == Surface::Floor)
    }

    /// The highest level whose floor is under the world point (0 where no level is, and off
    /// the map): where a body placed there without a level stands.
    pub fn level_at(&self, x: f32, y: f32) -> u8 {
        let Some((c, r)) = self.cell_of(x, y) else { return 0 };
        (1..MAX_LEVELS as u8).rev().find(|&n| self.surface(n, c, r) != Surface::Empty).unwrap_or(0)
    }

    /// Where a body that leaves level `n`'s floor in cell `(col, row)` lands: the nearest
    /// level below with floor in that cell, else the ground.
    pub fn landing_level_cell(&self, n: u8, col: usize, row: usize) -> u8 {
        (1..n).rev().find(|&m| self.surface(m, col, row) != Surface::Empty).unwrap_or(0)
    }

    /// [`Self::landing_level_cell`] at a world point (the ground off the map).
    pub fn landing_level(&self, n: u8, x: f32, y: f32) -> u8 {
        self.cell_of(x, y).map_or(0, |(c, r)| self.landing_level_cell(n, c, r))
    }

    /// Level `n`'s walls merged into blocks (the ground's walls for 0, a level's rails above
    /// it), in [`merge_static`](super::merge_static) order; empty for a level that does not exist.
    pub fn static_blocks(&self, n: u8) -> &[StaticBlock] {
        self.blocks.get(n as usize).map_or(&[], Vec::as_slice)
    }

    /// Every ramp run, by ramp, then lane, then position.
    pub fn runs(&self) -> &[RampRun] {
        &self.runs
    }

    /// Every wide ramp (block of runs).
    pub fn blocks(&self) -> &[RampBlock] {
        &self.ramp_blocks
    }

    /// The run on cell `(col, row)`, if any.
    pub fn run_at_cell(&self, col: usize, row: usize) -> Option<usize> {
        if col >= self.cols || row >= self.rows {
            return None;
        }
        self.ramp_cells[row * self.cols + col].checked_sub(1).map(|r| r as usize)
    }

    /// The ramp under the world point, if any (see [`RampSample`]).
    pub fn ramp_at(&self, x: f32, y: f32) -> Option<RampSample> {
        let (c, r) = self.cell_of(x, y)?;
        let run = self.run_at_cell(c, r)?;
        Some(self.sample(run, x, y))
    }

    /// What run `run` says of the world point (its progress clamped to `[0, 1]`), whether or
    /// not the point is on it.
    pub fn sample(&self, run: usize, x: f32, y: f32) -> RampSample {
        let rr = &self.runs[run];
        let span = rr.len() as f32 * self.tile;
        let along = match rr.axis {
            Axis::X => x,
            Axis::Y => y,
        };
        let lo = rr.first as f32 * self.tile;
        let progress = if rr.sign > 0 { (along - lo) / span } else { (lo + span - along) / span }.clamp(0.0, 1.0);
        let (dc, dr) = rr.dir.step();
        let rise = f32::from(rr.rise());
        RampSample {
            run,
            progress,
            from: rr.from,
            to: rr.to,
            dir: [dc as f32, dr as f32],
            slope: rise * self.level_height / span,
            axis: rr.axis,
            sign: rr.sign,
            height: progress * rise * self.level_height,
        }
    }

    /// The world rectangle of cell `(col, row)`.
    pub fn cell_rect(&self, col: usize, row: usize) -> WorldRect {
        WorldRect { x: col as f32 * self.tile, y: row as f32 * self.tile, width: self.tile, height: self.tile }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 8×4 tiles of 10: a bridge on level 1 over the ground's wall column 4, reached by a
    /// ramp rising east over columns 1 and 2 of rows 1 and 2 (tile 5), rails on row 0 and 3.
    pub(crate) fn bridge() -> MapConfig {
        let text = r#"{
            "name": "bridge", "tileSize": 10,
            "map": [
                [0, 0, 0, 0, 1, 0, 0, 0],
                [0, 5, 5, 0, 1, 0, 0, 0],
                [0, 5, 5, 0, 1, 0, 0, 0],
                [0, 0, 0, 0, 1, 0, 0, 0]
            ],
            "physicsStatic": [1],
            "respawns": { "1": [[5, 5, 0]] },
            "levels": { "1": {
                "map": [
                    [0, 0, 0, 7, 7, 7, 0, 0],
                    [0, 0, 0, 9, 9, 9, 0, 0],
                    [0, 0, 0, 9, 9, 9, 0, 0],
                    [0, 0, 0, 7, 7, 7, 0, 0]
                ],
                "floor": [7, 9], "walls": [7]
            } },
            "ramps": [{ "tile": 5, "dir": "east" }]
        }"#;
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn surfaces_levels_and_landings() {
        let l = MapLevels::new(&bridge(), 2.0);
        assert!(l.is_layered());
        assert_eq!((l.tile_size(), l.level_height()), (20.0, 20.0), "levelHeight defaults to the tile");
        assert_eq!(l.levels().collect::<Vec<_>>(), [0, 1]);
        assert_eq!(l.surface(0, 4, 1), Surface::Wall);
        assert_eq!(l.surface(1, 4, 1), Surface::Floor);
        assert_eq!(l.surface(1, 4, 0), Surface::Wall, "a rail");
        assert_eq!(l.surface(1, 0, 0), Surface::Empty);
        // Cell (4, 1) is at x 80..100, y 20..40 (tile 20).
        assert!(l.has_floor(1, 85.0, 25.0) && l.is_walkable(1, 85.0, 25.0));
        assert!(l.is_solid(0, 85.0, 25.0) && !l.is_solid(1, 85.0, 25.0));
        assert!(l.has_floor(1, 85.0, 5.0) && !l.is_walkable(1, 85.0, 5.0) && l.is_solid(1, 85.0, 5.0));
        assert!(l.is_solid(1, -1.0, 5.0), "off the map is solid");
        assert_eq!(l.level_at(85.0, 25.0), 1);
        assert_eq!(l.level_at(5.0, 5.0), 0);
        assert_eq!(l.landing_level(1, 5.0, 5.0), 0);
        assert_eq!(l.static_blocks(1).len(), 2, "two rails");
        assert_eq!(l.static_blocks(0).len(), 1, "the wall column");
        assert!(l.static_blocks(3).is_empty());
    }

    #[test]
    fn ramp_runs_blocks_and_samples() {
        let l = MapLevels::new(&bridge(), 1.0);
        assert_eq!(l.runs().len(), 2);
        let run = l.runs()[0];
        assert_eq!((run.lane, run.first, run.last, run.from, run.to, run.block), (1, 1, 2, 0, 1, 0));
        assert_eq!(run.cell(0), (1, 1), "the foot is the west end of an east ramp");
        assert_eq!(run.beyond_top(), (3, 1));
        assert_eq!(l.blocks().len(), 1, "two lanes over the same span are one block");
        assert_eq!(l.blocks()[0].runs, vec![0, 1]);
        let s = l.ramp_at(15.0, 15.0).expect("on the ramp");
        assert_eq!(s.run, 0);
        assert!((s.progress - 0.25).abs() < 1e-6, "{}", s.progress);
        assert_eq!(s.dir, [1.0, 0.0]);
        assert!((s.slope - 0.5).abs() < 1e-6, "one level of 10 over 20 units");
        assert!((s.height - 2.5).abs() < 1e-6);
        assert_eq!(l.ramp_at(35.0, 15.0), None);
    }

    #[test]
    fn a_flat_map_has_only_the_ground() {
        let mut cfg = bridge();
        cfg.levels.clear();
        cfg.ramps.clear();
        let l = MapLevels::new(&cfg, 1.0);
        assert!(!l.is_layered());
        assert_eq!(l.levels().collect::<Vec<_>>(), [0]);
        assert!(l.runs().is_empty());
        assert_eq!(l.level_at(45.0, 15.0), 0);
    }

    #[test]
    fn a_westward_ramp_counts_progress_from_its_east_end() {
        let mut cfg = bridge();
        cfg.ramps[0].dir = RampDir::West;
        let l = MapLevels::new(&cfg, 1.0);
        let s = l.ramp_at(29.0, 15.0).unwrap();
        assert!((s.progress - 0.05).abs() < 1e-5, "{}", s.progress);
        assert_eq!(s.dir, [-1.0, 0.0]);
        assert_eq!(l.runs()[0].cell(0), (2, 1));
        assert_eq!(l.runs()[0].beyond_top(), (0, 1));
    }
}
