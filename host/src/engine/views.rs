//! Per-client views (interest management): which rows and events of a frame each client gets.
//!
//! A client sees the match from the place of the player it watches (its own, or the one a
//! spectator follows), an [`Observer`] the game puts in [`SnapshotRows`](crate::engine::snapshot::SnapshotRows)
//! on every snapshot tick. The rows of every placed key ([`BlockSchema::place`]: `x`, `y` or
//! the key's `at`) are bucketed once a frame on a grid of cells `streamingDistance` wide
//! ([`Grid`]); an observer looks at its own cell and the 8 around it and streams the rows
//! within the distance and in its dimension, the nearest first, at most
//! `maxStreamedEntities` of them ([`Grid::view`]). Rows of keys that are not placed, and an
//! observer with no place (a player not spawned yet), see everything.
//!
//! Event rows go only to observers in range of where they happen ([`events_in_view`]): a
//! point within the distance, or a segment (a shot) with either end within it.

use std::collections::BTreeMap;

use vimp_netcode::delta::{self, is_delta_coded};
use vimp_netcode::schema::SnapshotSchema;
use vimp_netcode::snapshot::{Block, FieldValue, Frame, Row};

/// Where a client sees the match from.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Observer {
    /// The place, in the rows' units.
    pub x: f32,
    /// The place, in the rows' units.
    pub y: f32,
    /// The observer's dimension: it sees only rows of the same one (a game may use them for
    /// instances; tanks: all in 0).
    pub dimension: u32,
}

/// One row of a placed key, in the order of the world's rows ([`delta::live_by_id`]).
#[derive(Clone, Copy, Debug)]
struct Placed {
    x: f32,
    y: f32,
    dimension: u32,
    /// A row whose place is not a finite point is seen by everyone.
    placed: bool,
}

/// The rows of one world's placed keys, bucketed by cell.
#[derive(Debug, Default)]
pub struct Grid {
    cell: f32,
    rows: Vec<Placed>,
    /// `(cell, row)`, sorted.
    cells: Vec<((i32, i32), u32)>,
    /// Per key id: where its rows start in `rows`, and how many (`None`: not placed).
    keys: Vec<Option<(usize, usize)>>,
}

/// What one observer streams of a world: a flag per row of the [`Grid`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View(Vec<bool>);

fn f32_at(row: &Row, i: usize) -> Option<f32> {
    match row.get(i) {
        Some(FieldValue::F32(v)) if v.is_finite() => Some(*v),
        _ => None,
    }
}

impl Grid {
    /// The live rows of `world`'s delta-coded, placed keys on cells `cell` wide; a row's
    /// dimension is `dimensions[(key, id)]`, 0 when it has none.
    pub fn of(schema: &SnapshotSchema, world: &Frame, dimensions: &BTreeMap<(u8, u32), u32>, cell: f32) -> Grid {
        let mut grid = Grid { cell, keys: vec![None; 256], ..Grid::default() };
        for (_, bs) in schema.keys() {
            let Some(place) = bs.place().filter(|_| is_delta_coded(bs)) else { continue };
            let rows = delta::live_by_id(world.block(bs.id));
            grid.keys[bs.id as usize] = Some((grid.rows.len(), rows.len()));
            for (id, row) in rows {
                let dimension = dimensions.get(&(bs.id, id)).copied().unwrap_or(0);
                let (x, y) = (f32_at(row, place[0]), f32_at(row, place[1]));
                let placed = x.is_some() && y.is_some();
                let (x, y) = (x.unwrap_or_default(), y.unwrap_or_default());
                if placed {
                    grid.cells.push((grid.cell_of(x, y), grid.rows.len() as u32));
                }
                grid.rows.push(Placed { x, y, dimension, placed });
            }
        }
        grid.cells.sort_unstable();
        grid
    }

    fn cell_of(&self, x: f32, y: f32) -> (i32, i32) {
        ((x / self.cell).floor() as i32, (y / self.cell).floor() as i32)
    }

    /// The rows `observer` streams: in its cell and the 8 around it, within `distance` and
    /// in its dimension, the nearest `max` (ties by the world's order); rows with no place
    /// besides.
    pub fn view(&self, observer: &Observer, distance: f32, max: usize) -> View {
        let mut seen: Vec<bool> = self.rows.iter().map(|p| !p.placed).collect();
        let (cx, cy) = self.cell_of(observer.x, observer.y);
        let mut near: Vec<(f32, u32)> = Vec::new();
        for dx in -1..=1 {
            // A column of three cells is one run of the sorted list.
            let x = cx.saturating_add(dx);
            let from = self.cells.partition_point(|(c, _)| *c < (x, cy.saturating_sub(1)));
            let to = self.cells.partition_point(|(c, _)| *c <= (x, cy.saturating_add(1)));
            for &(_, i) in &self.cells[from..to] {
                let p = self.rows[i as usize];
                let d2 = (p.x - observer.x) * (p.x - observer.x) + (p.y - observer.y) * (p.y - observer.y);
                if p.dimension == observer.dimension && d2 <= distance * distance {
                    near.push((d2, i));
                }
            }
        }
        if near.len() > max {
            near.select_nth_unstable_by(max, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            near.truncate(max);
        }
        for (_, i) in near {
            seen[i as usize] = true;
        }
        View(seen)
    }

    /// Whether a view streams row `index` (its place among the world's rows of `key`); rows
    /// of keys that are not placed, always.
    pub fn sees(&self, view: &View, key: u8, index: usize) -> bool {
        match self.keys.get(key as usize).copied().flatten() {
            Some((start, len)) if index < len => view.0.get(start + index).copied().unwrap_or(true),
            _ => true,
        }
    }
}

/// The event blocks (and hot `list16` blocks) of `blocks` as `observer` gets them: rows of a
/// placed key only where they happen within `distance` (a segment: either end); others whole.
pub fn events_in_view(
    schema: &SnapshotSchema,
    blocks: &[(u8, Block)],
    observer: Option<&Observer>,
    distance: f32,
) -> Vec<(u8, Block)> {
    let mut out = Vec::new();
    for (key, block) in blocks {
        let Some((_, bs)) = schema.by_id(*key) else { continue };
        if is_delta_coded(bs) {
            continue;
        }
        let (Some(observer), Some(place)) = (observer, bs.place()) else {
            out.push((*key, block.clone()));
            continue;
        };
        let seen = |row: &Row| {
            place.chunks(2).any(|xy| match (f32_at(row, xy[0]), f32_at(row, xy[1])) {
                (Some(x), Some(y)) => (x - observer.x).powi(2) + (y - observer.y).powi(2) <= distance * distance,
                _ => true,
            })
        };
        let mut kept = Block::empty(bs.kind);
        for (id, row) in block.entries() {
            // A removal names no place: it goes to everyone.
            if row.is_none_or(seen) {
                kept.push(id.unwrap_or_default(), row.cloned());
            }
        }
        if !kept.is_empty() {
            out.push((*key, kept));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use vimp_netcode::schema::{BlockClass, BlockKind, BlockSchema, FieldSchema, FieldType};

    use super::*;

    fn schema() -> SnapshotSchema {
        let f = |name| FieldSchema::new(name, FieldType::F32);
        SnapshotSchema::new([
            ("tanks".to_owned(), BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot).field(f("x")).field(f("y"))),
            ("flags".to_owned(), BlockSchema::new(2, BlockKind::Indexed8, BlockClass::Hot).field(f("hp"))),
            (
                "shots".to_owned(),
                BlockSchema::new(3, BlockKind::List16, BlockClass::Event)
                    .field(f("sx"))
                    .field(f("sy"))
                    .field(f("ex"))
                    .field(f("ey"))
                    .at(&["sx", "sy", "ex", "ey"]),
            ),
        ])
        .expect("valid")
    }

    fn xy(x: f32, y: f32) -> Option<Row> {
        Some(vec![FieldValue::F32(x), FieldValue::F32(y)])
    }

    #[test]
    fn an_observer_streams_the_rows_near_it_in_its_dimension_nearest_first() {
        let s = schema();
        let tanks = Block::Indexed8(vec![
            (0, xy(0.0, 0.0)),
            (1, xy(80.0, 0.0)),
            (2, xy(0.0, 99.0)),
            (3, xy(101.0, 0.0)),
            (4, xy(-250.0, 0.0)),
            (5, xy(50.0, 50.0)),
            (6, None),
        ]);
        let world = Frame {
            seq: 1,
            server_time_ms: 0.0,
            player: None,
            blocks: vec![(1, tanks), (2, Block::Indexed8(vec![(9, Some(vec![FieldValue::F32(1.0)]))]))],
            streamed_out: Vec::new(),
        };
        let dims = BTreeMap::from([((1, 5), 7)]);
        let grid = Grid::of(&s, &world, &dims, 100.0);
        // Tank ids by their index among the world's rows (6 is null: not a row).
        let seen = |view: &View| (0..6).filter(|&i| grid.sees(view, 1, i)).collect::<Vec<_>>();
        let me = Observer { x: 0.0, y: 0.0, dimension: 0 };
        assert_eq!(seen(&grid.view(&me, 100.0, 10)), vec![0, 1, 2], "within 100, not tank 5 (dimension 7)");
        assert_eq!(seen(&grid.view(&me, 100.0, 2)), vec![0, 1], "the nearest two");
        assert_eq!(seen(&grid.view(&Observer { dimension: 7, ..me }, 100.0, 10)), vec![5]);
        // Across a cell border: from (150, 0), in cell (1, 0), tank 1 at 80 in cell (0, 0).
        assert_eq!(seen(&grid.view(&Observer { x: 150.0, ..me }, 100.0, 10)), vec![1, 3]);
        let view = grid.view(&me, 100.0, 10);
        assert!(grid.sees(&view, 2, 0), "flags have no place: everyone sees them");
    }

    #[test]
    fn events_reach_observers_in_range_of_either_end() {
        let s = schema();
        let shot = |sx: f32, ex: f32| {
            vec![FieldValue::F32(sx), FieldValue::F32(0.0), FieldValue::F32(ex), FieldValue::F32(0.0)]
        };
        let blocks = vec![(3, Block::List16(vec![shot(0.0, 10.0), shot(500.0, 20.0), shot(500.0, 600.0)]))];
        let me = Observer::default();
        assert_eq!(
            events_in_view(&s, &blocks, Some(&me), 100.0),
            vec![(3, Block::List16(vec![shot(0.0, 10.0), shot(500.0, 20.0)]))],
            "a shot from afar that lands near is seen"
        );
        assert_eq!(events_in_view(&s, &blocks, None, 100.0), blocks, "no place: everything");
    }
}
