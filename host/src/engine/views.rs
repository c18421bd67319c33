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
//! point within the distance, or a segment (a trace from one point to another) with either
//! end within it.

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
    /// instances).
    pub dimension: u32,
    /// The row of the player's own entity, `(key, id)`: sent in every frame whatever the
    /// budget.
    pub own: Option<(u8, u32)>,
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

    /// The place of row `index` of `key`, when it has one.
    pub fn place_of(&self, key: u8, index: usize) -> Option<(f32, f32)> {
        let (start, len) = self.keys.get(key as usize).copied().flatten()?;
        let p = self.rows.get(start + index).filter(|p| index < len && p.placed)?;
        Some((p.x, p.y))
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

/// A receiver's byte budget and what its rows waited for (see [`Budget::choose`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Budget {
    /// Bytes it may spend now: a frame's share comes in every frame, what was sent goes out.
    credit: f64,
    /// The priority each changed row not sent yet has gathered, by `(key, id)`, sorted.
    waiting: Vec<((u8, u32), f64)>,
    /// The frame each row was last sent in, until the receiver acknowledges a later one,
    /// by `(key, id)`, sorted.
    sent_at: Vec<((u8, u32), u32)>,
}

/// How many frames' worth of budget a receiver may owe ([`Budget::spent`]).
pub const DEBT_FRAMES: f64 = 30.0;

/// How much a changed row weighs in one frame: more the nearer it is to the observer and
/// the more it moved (`magnitude` steps), most for a row the receiver does not hold yet.
pub fn weight(magnitude: u64, distance: f32) -> f64 {
    let moved = (1.0 + magnitude.min(1 << 20) as f64).log2();
    (1.0 + moved) / (1.0 + f64::from(distance.max(0.0)) / 100.0)
}

impl Budget {
    /// Chooses which of `changes` (the rows in view that differ from what the receiver holds
    /// in frame `baseline`, 0 for none) go in frame `seq`; returns a flag per change.
    ///
    /// - A row sent in a frame after the baseline goes again: the receiver decodes against
    ///   the baseline, and without it would fall back to the older value.
    /// - So does every change `weigh` gives no weight (`None`: the player's own row, rows
    ///   of keys without a place).
    /// - The others go by the priority they gathered, highest first, while they fit in the
    ///   credit left after `fixed` bytes (header, player block, events) and those above;
    ///   each one left out gathers its weight and waits, so a far row goes less often and
    ///   never forever. The credit grows by `per_frame` a frame, up to two frames' worth.
    ///   (When what must go alone overruns the budget for long, the others wait until the
    ///   debt is paid back: a budget too small for the match.)
    pub fn choose(
        &mut self,
        changes: &[vimp_netcode::delta::Change],
        seq: u32,
        baseline: u32,
        per_frame: f64,
        fixed: usize,
        weigh: impl Fn(&vimp_netcode::delta::Change) -> Option<f64>,
    ) -> Vec<bool> {
        // Sent in or before the baseline, or before any baseline a receiver may name (the
        // host keeps no older one): no longer in question.
        let history = crate::engine::snapshot::DELTA_HISTORY as u32;
        self.sent_at.retain(|(_, at)| *at > baseline && seq.wrapping_sub(*at) <= history);
        self.credit = (self.credit + per_frame).min(2.0 * per_frame);
        let find = |list: &[((u8, u32), f64)], row| list.binary_search_by_key(&row, |e| e.0).ok().map(|j| list[j].1);
        let mut send = vec![false; changes.len()];
        let mut left = self.credit - fixed as f64;
        let mut queue = Vec::with_capacity(changes.len());
        for (i, c) in changes.iter().enumerate() {
            let row = (c.key, c.id);
            let sticky = self.sent_at.binary_search_by_key(&row, |e| e.0).is_ok();
            match weigh(c) {
                Some(w) if !sticky => queue.push((find(&self.waiting, row).unwrap_or(0.0) + w, i)),
                _ => {
                    send[i] = true;
                    left -= (c.bytes + 1) as f64;
                }
            }
        }
        queue.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        self.waiting.clear();
        for (priority, i) in queue {
            let c = &changes[i];
            if (c.bytes + 1) as f64 <= left {
                send[i] = true;
                left -= (c.bytes + 1) as f64;
            } else {
                self.waiting.push(((c.key, c.id), priority));
            }
        }
        self.waiting.sort_unstable_by_key(|e| e.0);
        // The rows sent now, over what the list had of them.
        let mut now: Vec<((u8, u32), u32)> =
            changes.iter().zip(&send).filter(|(_, s)| **s).map(|(c, _)| ((c.key, c.id), seq)).collect();
        now.sort_unstable_by_key(|e| e.0);
        // Both sorted: merged in one pass, the new frame winning.
        let old = std::mem::take(&mut self.sent_at);
        let (mut a, mut b) = (old.into_iter().peekable(), now.into_iter().peekable());
        while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
            match x.0.cmp(&y.0) {
                std::cmp::Ordering::Less => self.sent_at.extend(a.next()),
                std::cmp::Ordering::Equal => {
                    a.next();
                    self.sent_at.extend(b.next());
                }
                std::cmp::Ordering::Greater => self.sent_at.extend(b.next()),
            }
        }
        self.sent_at.extend(a.chain(b));
        send
    }

    /// `bytes` went out in the frame: taken from the credit. A debt (what went out beyond
    /// the budget: the rows that must go, events) is paid back by later frames, up to a
    /// second's worth of it, so that the average keeps to the budget.
    pub fn spent(&mut self, bytes: usize, per_frame: f64) {
        self.credit = (self.credit - bytes as f64).max(-DEBT_FRAMES * per_frame);
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
            ("units".to_owned(), BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot).field(f("x")).field(f("y"))),
            ("flags".to_owned(), BlockSchema::new(2, BlockKind::Indexed8, BlockClass::Hot).field(f("hp"))),
            (
                "traces".to_owned(),
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
        let units = Block::Indexed8(vec![
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
            blocks: vec![(1, units), (2, Block::Indexed8(vec![(9, Some(vec![FieldValue::F32(1.0)]))]))],
            streamed_out: Vec::new(),
        };
        let dims = BTreeMap::from([((1, 5), 7)]);
        let grid = Grid::of(&s, &world, &dims, 100.0);
        // Row ids by their index among the world's rows (6 is null: not a row).
        let seen = |view: &View| (0..6).filter(|&i| grid.sees(view, 1, i)).collect::<Vec<_>>();
        let me = Observer { x: 0.0, y: 0.0, dimension: 0, own: None };
        assert_eq!(seen(&grid.view(&me, 100.0, 10)), vec![0, 1, 2], "within 100, not row 5 (dimension 7)");
        assert_eq!(seen(&grid.view(&me, 100.0, 2)), vec![0, 1], "the nearest two");
        assert_eq!(seen(&grid.view(&Observer { dimension: 7, ..me }, 100.0, 10)), vec![5]);
        // Across a cell border: from (150, 0), in cell (1, 0), row 1 at 80 in cell (0, 0).
        assert_eq!(seen(&grid.view(&Observer { x: 150.0, ..me }, 100.0, 10)), vec![1, 3]);
        let view = grid.view(&me, 100.0, 10);
        assert!(grid.sees(&view, 2, 0), "flags have no place: everyone sees them");
    }

    #[test]
    fn a_budget_sends_the_must_go_rows_then_the_longest_waiting_and_starves_none() {
        use vimp_netcode::delta::Change;
        let change =
            |id: u32, bytes: usize| Change { key: 1, id, index: id as usize, held: true, magnitude: 10, bytes };
        // Own row 0, a near row 1 and a far row 2, 9 bytes each (10 with the head).
        let changes = [change(0, 9), change(1, 9), change(2, 9)];
        let weigh = |c: &Change| match c.id {
            0 => None,
            1 => Some(weight(10, 50.0)),
            _ => Some(weight(10, 800.0)),
        };
        let mut b = Budget::default();
        // 40 bytes a frame, 20 fixed: room for the own row and one more.
        let mut sent = [0; 3];
        for seq in 1..=30 {
            let send = b.choose(&changes, seq, seq - 1, 40.0, 20, weigh);
            assert!(send[0], "the own row goes in every frame");
            for (n, s) in sent.iter_mut().zip(&send) {
                *n += usize::from(*s);
            }
            b.spent(20 + send.iter().filter(|s| **s).count() * 10, 40.0);
        }
        assert_eq!(sent[0], 30);
        assert!(sent[1] > sent[2], "the near row goes more often: {sent:?}");
        assert!(sent[2] >= 1, "the far one waits, but not forever: {sent:?}");
        assert_eq!(sent[1] + sent[2], 30, "the budget's room is used: {sent:?}");

        // A row sent after the receiver's baseline goes again until it is acknowledged.
        let mut b = Budget::default();
        let send = b.choose(&changes, 10, 9, 1000.0, 0, |_| Some(1.0));
        assert_eq!(send, vec![true, true, true]);
        let send = b.choose(&changes, 11, 9, 0.0, 1000, |_| Some(1.0));
        assert_eq!(send, vec![true, true, true], "no room, but the receiver may hold frame 10 of them");
        let send = b.choose(&changes, 12, 11, 0.0, 1000, |_| Some(1.0));
        assert_eq!(send, vec![false, false, false], "frame 11 acknowledged: they may wait");
    }

    #[test]
    fn events_reach_observers_in_range_of_either_end() {
        let s = schema();
        let trace = |sx: f32, ex: f32| {
            vec![FieldValue::F32(sx), FieldValue::F32(0.0), FieldValue::F32(ex), FieldValue::F32(0.0)]
        };
        let blocks = vec![(3, Block::List16(vec![trace(0.0, 10.0), trace(500.0, 20.0), trace(500.0, 600.0)]))];
        let me = Observer::default();
        assert_eq!(
            events_in_view(&s, &blocks, Some(&me), 100.0),
            vec![(3, Block::List16(vec![trace(0.0, 10.0), trace(500.0, 20.0)]))],
            "a trace from afar that ends near is seen"
        );
        assert_eq!(events_in_view(&s, &blocks, None, 100.0), blocks, "no place: everything");
    }
}
