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
use vimp_netcode::snapshot::{Block, FieldValue, Row};

/// How many frames the host keeps of what it sent each format 6 receiver (about a second at
/// 30 frames a second): an acknowledgement older than that gets a keyframe.
pub const DELTA_HISTORY: usize = 32;

/// How far from the player a client watches a row counts as on screen, world units.
pub const ON_SCREEN: f32 = 640.0;

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

/// One row of the world ([`delta::Steps::row`]).
#[derive(Clone, Copy, Debug)]
struct Placed {
    x: f32,
    y: f32,
    dimension: u32,
    /// A row of a key with no place, or whose place is not a finite point, is seen by everyone.
    placed: bool,
}

/// The rows of one world, those of placed keys bucketed by cell.
#[derive(Debug, Default)]
pub struct Grid {
    cell: f32,
    /// One per row of the world, in its order.
    rows: Vec<Placed>,
    /// `(cell, row)` of the placed rows, sorted when first needed.
    cells: std::cell::OnceCell<Vec<((i32, i32), u32)>>,
    unsorted: Vec<((i32, i32), u32)>,
    /// The lowest and the highest cell any row is in.
    span: Option<((i32, i32), (i32, i32))>,
}

/// What one observer streams of a world: a flag per row ([`delta::Steps::row`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct View(Vec<bool>);

fn f32_at(row: &Row, i: usize) -> Option<f32> {
    match row.get(i) {
        Some(FieldValue::F32(v)) if v.is_finite() => Some(*v),
        _ => None,
    }
}

impl Grid {
    /// The rows of `world` on cells `cell` wide, each where the receiver decodes it; a row's
    /// dimension is `dimensions[(key, id)]`, 0 when it has none.
    pub fn of(schema: &SnapshotSchema, world: &delta::Steps, dimensions: &BTreeMap<(u8, u32), u32>, cell: f32) -> Grid {
        let mut grid = Grid {
            cell,
            rows: Vec::with_capacity(world.rows()),
            cells: std::cell::OnceCell::new(),
            unsorted: Vec::with_capacity(world.rows()),
            span: None,
        };
        for key in world.keys() {
            let Some((_, bs)) = schema.by_id(key) else { continue };
            let dimension = |id: u32| {
                if dimensions.is_empty() { 0 } else { dimensions.get(&(bs.id, id)).copied().unwrap_or(0) }
            };
            let Some((x, y)) = bs.point() else {
                let unplaced = |&id: &u32| Placed { x: 0.0, y: 0.0, dimension: dimension(id), placed: false };
                grid.rows.extend(world.ids(bs.id).iter().map(unplaced));
                continue;
            };
            for (id, x, y) in world.points(bs, x, y) {
                let placed = x.is_finite() && y.is_finite();
                if placed {
                    let (cx, cy) = grid.cell_of(x, y);
                    let ((x0, y0), (x1, y1)) = grid.span.unwrap_or(((cx, cy), (cx, cy)));
                    grid.span = Some(((x0.min(cx), y0.min(cy)), (x1.max(cx), y1.max(cy))));
                    grid.unsorted.push(((cx, cy), grid.rows.len() as u32));
                }
                grid.rows.push(Placed { x, y, dimension: dimension(id), placed });
            }
        }
        debug_assert_eq!(grid.rows.len(), world.rows());
        grid
    }

    /// `(cell, row)` of the placed rows, sorted.
    fn cells(&self) -> &[((i32, i32), u32)] {
        self.cells.get_or_init(|| {
            let mut cells = self.unsorted.clone();
            cells.sort_unstable();
            cells
        })
    }

    fn cell_of(&self, x: f32, y: f32) -> (i32, i32) {
        ((x / self.cell).floor() as i32, (y / self.cell).floor() as i32)
    }

    /// The rows `observer` streams: in its cell and the 8 around it, within `distance` and
    /// in its dimension, the nearest `max` (ties by the world's order); rows with no place
    /// besides.
    pub fn view(&self, observer: &Observer, distance: f32, max: usize) -> View {
        let (cx, cy) = self.cell_of(observer.x, observer.y);
        // With no more placed rows than the most it may stream, every one near enough goes: no
        // need to rank them.
        let placed = self.unsorted.len();
        let rank = placed > max;
        let near_enough = |p: &Placed| {
            let d2 = (p.x - observer.x) * (p.x - observer.x) + (p.y - observer.y) * (p.y - observer.y);
            p.dimension == observer.dimension && d2 <= distance * distance
        };
        let around = |lo: i32, hi: i32, c: i32| lo >= c.saturating_sub(1) && hi <= c.saturating_add(1);
        if !rank && self.span.is_none_or(|((x0, y0), (x1, y1))| around(x0, x1, cx) && around(y0, y1, cy)) {
            // Every row is in the 3×3 cells around the observer (a small map): no cell to look up.
            return View(self.rows.iter().map(|p| !p.placed || near_enough(p)).collect());
        }
        let mut seen: Vec<bool> = self.rows.iter().map(|p| !p.placed).collect();
        let mut near: Vec<(f32, u32)> = Vec::with_capacity(if rank { placed } else { 0 });
        let cells = self.cells();
        for dx in -1..=1 {
            // A column of three cells is one run of the sorted list.
            let x = cx.saturating_add(dx);
            let from = cells.partition_point(|(c, _)| *c < (x, cy.saturating_sub(1)));
            let to = cells.partition_point(|(c, _)| *c <= (x, cy.saturating_add(1)));
            for &(_, i) in &cells[from..to] {
                let p = &self.rows[i as usize];
                if near_enough(p) {
                    if rank {
                        near.push(((p.x - observer.x).powi(2) + (p.y - observer.y).powi(2), i));
                    } else {
                        seen[i as usize] = true;
                    }
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

    /// The place of row `row` of the world, when it has one.
    pub fn place_of(&self, row: usize) -> Option<(f32, f32)> {
        self.rows.get(row).filter(|p| p.placed).map(|p| (p.x, p.y))
    }

    /// Whether a view streams row `row` of the world.
    pub fn sees(&self, view: &View, row: usize) -> bool {
        view.0.get(row).copied().unwrap_or(true)
    }
}

impl View {
    /// Per row of the world: whether the view streams it.
    pub fn rows(&self) -> &[bool] {
        &self.0
    }
}

/// A receiver's byte budget and what its rows waited for (see [`Budget::choose`]).
#[derive(Clone, Debug, Default)]
pub struct Budget {
    /// Bytes it may spend now: a frame's share comes in every frame, what was sent goes out.
    credit: f64,
    /// The bytes of its recent frames, on average (each frame weighs a tenth).
    per_frame: f64,
    /// The priority each changed row not sent yet has gathered, by `(key, id)`, sorted.
    waiting: Vec<((u8, u32), f64)>,
    /// The frame each row was sent in and the version it was sent at, until the receiver
    /// acknowledges that frame or a later one, by `(key, id)`, sorted.
    sent_at: Vec<((u8, u32), (u32, delta::Version))>,
    /// Scratch: the changes that wait their turn, by priority; the priority of each one left
    /// waiting; what `sent_at` was.
    queue: Vec<u128>,
    priority: Vec<Option<f64>>,
    old: Vec<((u8, u32), (u32, delta::Version))>,
}

/// What a [`Budget`] makes of a changed row in a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// It goes as the world has it now.
    Send,
    /// It goes again as it went in a frame since the receiver's baseline, which would otherwise
    /// fall back to the baseline's value; a newer value would keep it owed until that frame is
    /// acknowledged too, and a row that moves every frame would never wait its turn again.
    Resend(delta::Version),
    /// It waits: the receiver keeps what it has.
    Wait,
}

/// How many changes [`Budget::choose`] sorts before it knows whether the rest can still fit.
const FIRST_FEW: usize = 8;

/// How many frames' worth of budget a receiver may owe ([`Budget::spent`]).
pub const DEBT_FRAMES: f64 = 30.0;

/// How much a changed row weighs in one frame: what the receiver would show wrong without
/// it, most for what is on screen.
///
/// - `off`: how far from its place the receiver shows the row, in units (what it holds,
///   carried forward by its rates: [`delta::Drift::after`]); infinite for a row it does not
///   hold, which weighs as [`STREAM_IN`] units.
/// - `magnitude`: its largest change of a field in steps; what did not move the place (an
///   angle, a count) weighs [`TURN`] units for each doubling, gathered frame by frame
///   while it waits, so it goes when a frame has room, and never waits forever.
/// - `distance`: from the player the receiver watches. Within [`ON_SCREEN`] a unit off weighs
///   a unit; beyond, an eighth of that, falling with the square of the distance: rows off
///   screen take what the rows on screen leave.
pub fn weight(magnitude: u64, off: f32, distance: f32) -> f64 {
    let off = if off.is_finite() { f64::from(off.max(0.0)) } else { STREAM_IN };
    let wrong = off + TURN * (1.0 + log2_1p(magnitude.min(1 << 20)));
    let (distance, screen) = (f64::from(distance.max(0.0)), f64::from(ON_SCREEN));
    if distance <= screen { wrong } else { wrong * (screen / distance).powi(2) / 8.0 }
}

/// How far off a change shows, units ([`weight`]'s `off`): what the receiver holds, carried
/// forward for as long as it has held it ([`delta::Change::held_for`]); infinite for a row it
/// does not hold, 0 for a row with no place.
pub fn shown_off(change: &delta::Change) -> f32 {
    match change.drift {
        _ if !change.held || change.magnitude == u64::MAX => f32::INFINITY,
        Some(drift) => drift.after(change.held_for),
        None => 0.0,
    }
}

/// How many units off a change that did not move a row's place counts as, per doubling of
/// its largest change in steps ([`weight`]).
pub const TURN: f64 = 0.05;

/// How many units off a row the receiver does not hold yet counts as ([`weight`]).
pub const STREAM_IN: f64 = 64.0;

/// `log2(1 + m)`, near enough for a weight (exact at powers of two, straight between them)
/// and without a library call: it runs for every changed row of every receiver.
fn log2_1p(m: u64) -> f64 {
    let n = m + 1;
    let e = n.ilog2();
    // 2^-e, exactly: a multiplication, not a division.
    f64::from(e) + (n - (1 << e)) as f64 * f64::from_bits(u64::from(1023 - e) << 52)
}

/// Walks `list` (sorted by row) along with rows asked for in rising order: the entry of `row`.
fn seek<T: Copy>(list: &[((u8, u32), T)], at: &mut usize, row: (u8, u32)) -> Option<T> {
    while *at < list.len() && list[*at].0 < row {
        *at += 1;
    }
    list.get(*at).filter(|e| e.0 == row).map(|e| e.1)
}

impl Budget {
    /// Chooses what becomes of each of `changes` (the rows in view that differ from what the
    /// receiver holds in frame `baseline`, 0 for none, by rising key and id as
    /// [`delta::Worlds::changes`] lists them) in frame `seq`: a [`Choice`] per change into
    /// `choices`.
    ///
    /// - Every change `weigh` gives no weight (`None`: the player's own row, rows of keys
    ///   without a place) goes as it is now.
    /// - A row sent in a frame after the baseline goes again as it went then
    ///   ([`Choice::Resend`]): the receiver decodes against the baseline, and without it would
    ///   fall back to the older value.
    /// - The others go by the priority they gathered, highest first, while they fit in the
    ///   credit left after `fixed` bytes (header, player block, events) and those above;
    ///   each one left out gathers its weight and waits, so a far row goes less often and
    ///   never forever. The credit grows by `per_frame` a frame, up to two frames' worth.
    ///   (When what must go alone overruns the budget for long, the others wait until the
    ///   debt is paid back: a budget too small for the match.)
    #[expect(clippy::too_many_arguments, reason = "one decision, its inputs spelled out")]
    pub fn choose(
        &mut self,
        changes: &[delta::Change],
        seq: u32,
        baseline: u32,
        per_frame: f64,
        fixed: usize,
        weigh: impl Fn(&delta::Change) -> Option<f64>,
        choices: &mut Vec<Choice>,
    ) {
        debug_assert!(changes.is_sorted_by_key(|c| (c.key, c.id)), "changes by rising key and id");
        // Sent in or before the baseline, or before any baseline a receiver may name (the
        // host keeps no older one): no longer in question.
        let history = DELTA_HISTORY as u32;
        self.sent_at.retain(|(_, (at, _))| *at > baseline && seq.wrapping_sub(*at) <= history);
        self.credit = (self.credit + per_frame).min(2.0 * per_frame);
        choices.clear();
        choices.resize(changes.len(), Choice::Wait);
        let mut left = self.credit - fixed as f64;
        self.queue.clear();
        let (mut in_sent, mut in_waiting) = (0, 0);
        for (i, c) in changes.iter().enumerate() {
            let row = (c.key, c.id);
            let owed = seek(&self.sent_at, &mut in_sent, row);
            let waited = seek(&self.waiting, &mut in_waiting, row).unwrap_or(0.0);
            let choice = match (weigh(c), owed) {
                (None, _) => Choice::Send,
                (Some(_), Some((_, version))) => Choice::Resend(version),
                (Some(w), None) => {
                    debug_assert!(w >= 0.0, "a weight is positive");
                    // Highest priority first (a positive float's bits sort as it does), then in
                    // the changes' order: one number to sort by.
                    let priority = waited + w;
                    self.queue.push((u128::from(!priority.to_bits()) << 64) | i as u128);
                    continue;
                }
            };
            choices[i] = choice;
            left -= (c.bytes + 1) as f64;
        }
        // What waits keeps its priority, in the changes' order (that of the list).
        self.priority.clear();
        self.priority.resize(changes.len(), None);
        // A frame has room for a few rows: the first few by priority, sorted, and the rest only
        // while something may still fit.
        let first = FIRST_FEW.min(self.queue.len());
        if first < self.queue.len() {
            self.queue.select_nth_unstable(first);
        }
        self.queue[..first].sort_unstable();
        let mut sorted = first;
        let unpack = |key: u128| (f64::from_bits(!((key >> 64) as u64)), key as u64 as usize);
        for at in 0..self.queue.len() {
            if at == sorted {
                sorted = self.queue.len();
                let fits = |key: &u128| (changes[unpack(*key).1].bytes + 1) as f64 <= left;
                if self.queue[at..].iter().any(fits) {
                    self.queue[at..].sort_unstable();
                } else {
                    // None of the rest fits: they all wait, in whatever order.
                    for &key in &self.queue[at..] {
                        let (priority, i) = unpack(key);
                        self.priority[i] = Some(priority);
                    }
                    break;
                }
            }
            let (priority, i) = unpack(self.queue[at]);
            let c = &changes[i];
            if (c.bytes + 1) as f64 <= left {
                choices[i] = Choice::Send;
                left -= (c.bytes + 1) as f64;
            } else {
                self.priority[i] = Some(priority);
            }
        }
        self.waiting.clear();
        let waits = changes.iter().zip(&self.priority).filter_map(|(c, p)| Some(((c.key, c.id), (*p)?)));
        self.waiting.extend(waits);
        // The rows sent now as they are over what the list had of them: both sorted, merged in
        // one pass, the new frame winning (a row sent again keeps its frame and version).
        std::mem::swap(&mut self.old, &mut self.sent_at);
        self.sent_at.clear();
        let mut o = 0;
        for (c, _) in changes.iter().zip(choices.iter()).filter(|(_, s)| **s == Choice::Send) {
            let row = (c.key, c.id);
            while o < self.old.len() && self.old[o].0 < row {
                self.sent_at.push(self.old[o]);
                o += 1;
            }
            o += usize::from(self.old.get(o).is_some_and(|e| e.0 == row));
            self.sent_at.push((row, (seq, c.version)));
        }
        self.sent_at.extend_from_slice(&self.old[o..]);
    }

    /// `bytes` went out in the frame: taken from the credit. A debt (what went out beyond
    /// the budget: the rows that must go, events) is paid back by later frames, up to a
    /// second's worth of it, so that the average keeps to the budget.
    pub fn spent(&mut self, bytes: usize, per_frame: f64) {
        self.credit = (self.credit - bytes as f64).max(-DEBT_FRAMES * per_frame);
        self.per_frame += (bytes as f64 - self.per_frame) * 0.1;
    }

    /// The bytes of the receiver's recent frames, on average: the budget in use.
    pub fn bytes_per_frame(&self) -> f64 {
        self.per_frame
    }

    /// How many changed rows in its view wait for room in a frame.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
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
    use vimp_netcode::snapshot::Frame;

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
        let frame = Frame {
            seq: 1,
            server_time_ms: 0.0,
            player: None,
            blocks: vec![(1, units), (2, Block::Indexed8(vec![(9, Some(vec![FieldValue::F32(1.0)]))]))],
            streamed_out: Vec::new(),
        };
        let mut worlds = delta::Worlds::new(1);
        let world = worlds.push(&s, &frame).expect("the frame fits");
        let dims = BTreeMap::from([((1, 5), 7)]);
        let grid = Grid::of(&s, world, &dims, 100.0);
        // Row ids by their place among the world's rows (6 is null: not a row).
        let seen = |view: &View| (0..6).filter(|&i| grid.sees(view, world.row(1, i).unwrap())).collect::<Vec<_>>();
        let me = Observer { x: 0.0, y: 0.0, dimension: 0, own: None };
        assert_eq!(seen(&grid.view(&me, 100.0, 10)), vec![0, 1, 2], "within 100, not row 5 (dimension 7)");
        assert_eq!(seen(&grid.view(&me, 100.0, 2)), vec![0, 1], "the nearest two");
        assert_eq!(seen(&grid.view(&Observer { dimension: 7, ..me }, 100.0, 10)), vec![5]);
        // Across a cell border: from (150, 0), in cell (1, 0), row 1 at 80 in cell (0, 0).
        assert_eq!(seen(&grid.view(&Observer { x: 150.0, ..me }, 100.0, 10)), vec![1, 3]);
        let view = grid.view(&me, 100.0, 10);
        assert!(grid.sees(&view, world.row(2, 0).unwrap()), "flags have no place: everyone sees them");
        assert_eq!(grid.place_of(world.row(1, 3).unwrap()), Some((101.0, 0.0)));
        assert_eq!(grid.place_of(world.row(2, 0).unwrap()), None);
    }

    proptest::proptest! {
        #[test]
        fn a_view_is_every_row_within_the_distance_in_the_observer_s_dimension(
            units in proptest::collection::vec((-400.0f32..400.0, -400.0f32..400.0, 0u32..2), 1..40),
            (ox, oy) in (-400.0f32..400.0, -400.0f32..400.0),
            distance in 50.0f32..900.0,
        ) {
            let s = schema();
            let rows = units.iter().enumerate().map(|(i, &(x, y, _))| (i as u8, xy(x, y))).collect();
            let frame = Frame { seq: 1, server_time_ms: 0.0, player: None, blocks: vec![(1, Block::Indexed8(rows))], streamed_out: Vec::new() };
            let mut worlds = delta::Worlds::new(1);
            let world = worlds.push(&s, &frame).expect("the frame fits");
            let dims = units.iter().enumerate().map(|(i, u)| ((1, i as u32), u.2)).collect();
            // Cells as wide as the distance, as a host makes them: a small map is one 3×3.
            let grid = Grid::of(&s, world, &dims, distance);
            let me = Observer { x: ox, y: oy, dimension: 0, own: None };
            let view = grid.view(&me, distance, usize::MAX);
            for (i, &(_, _, dimension)) in units.iter().enumerate() {
                let (x, y) = grid.place_of(world.row(1, i).unwrap()).unwrap();
                let near = (x - ox) * (x - ox) + (y - oy) * (y - oy) <= distance * distance;
                proptest::prop_assert_eq!(grid.sees(&view, world.row(1, i).unwrap()), near && dimension == 0, "row {}", i);
            }
        }
    }

    #[test]
    fn a_budget_sends_the_must_go_rows_then_the_longest_waiting_and_starves_none() {
        use vimp_netcode::delta::{Change, Version};
        let change = |id: u32, bytes: usize, v: u32| Change {
            key: 1,
            id,
            row: id as usize,
            version: Version(v),
            held: true,
            magnitude: 10,
            drift: None,
            held_for: 0.0,
            bytes,
        };
        // Own row 0, a near row 1 and a far row 2, 9 bytes each (10 with the head).
        let changes = [change(0, 9, 1), change(1, 9, 1), change(2, 9, 1)];
        let weigh = |c: &Change| match c.id {
            0 => None,
            1 => Some(weight(10, 2.0, 50.0)),
            _ => Some(weight(10, 2.0, 800.0)),
        };
        let mut b = Budget::default();
        let mut choices = Vec::new();
        let sent = |choices: &[Choice]| choices.iter().map(|c| *c == Choice::Send).collect::<Vec<_>>();
        // 40 bytes a frame, 20 fixed: room for the own row and one more.
        let mut count = [0; 3];
        for seq in 1..=30 {
            b.choose(&changes, seq, seq - 1, 40.0, 20, weigh, &mut choices);
            assert_eq!(choices[0], Choice::Send, "the own row goes in every frame");
            for (n, s) in count.iter_mut().zip(sent(&choices)) {
                *n += usize::from(s);
            }
            b.spent(20 + sent(&choices).iter().filter(|s| **s).count() * 10, 40.0);
        }
        assert_eq!(count[0], 30);
        assert!(count[1] > count[2], "the near row goes more often: {count:?}");
        assert!(count[2] >= 1, "the far one waits, but not forever: {count:?}");
        assert_eq!(count[1] + count[2], 30, "the budget's room is used: {count:?}");

        // A row sent after the receiver's baseline goes again, as it went, until acknowledged.
        let mut b = Budget::default();
        let some = |_: &Change| Some(1.0);
        b.choose(&changes, 10, 9, 1000.0, 0, some, &mut choices);
        assert_eq!(choices, vec![Choice::Send; 3]);
        // The rows move on (version 2); frame 10 is not acknowledged yet.
        let moved = [change(0, 9, 2), change(1, 9, 2), change(2, 9, 2)];
        b.choose(&moved, 11, 9, 0.0, 1000, some, &mut choices);
        assert_eq!(choices, vec![Choice::Resend(Version(1)); 3], "no room, but the receiver may hold frame 10 of them");
        b.choose(&moved[1..], 12, 11, 0.0, 1000, some, &mut choices);
        assert_eq!(choices, vec![Choice::Wait; 2], "frame 10 acknowledged (in 11): they may wait");
        b.choose(&moved, 13, 11, 1000.0, 0, some, &mut choices);
        assert_eq!(choices, vec![Choice::Send; 3], "room again");
        let again = [change(0, 9, 3), change(1, 9, 3)];
        b.choose(&again, 14, 11, 0.0, 1000, some, &mut choices);
        assert_eq!(choices, vec![Choice::Resend(Version(2)); 2], "as frame 13 had them, not newer");
        b.choose(&again, 15, 12, 0.0, 1000, some, &mut choices);
        assert_eq!(
            choices,
            vec![Choice::Resend(Version(2)); 2],
            "still owed: resending did not make them owed for longer"
        );
        b.choose(&again, 16, 13, 0.0, 1000, some, &mut choices);
        assert_eq!(choices, vec![Choice::Wait; 2], "frame 13 acknowledged");
    }

    #[test]
    fn a_row_the_receiver_carries_forward_well_waits_for_one_it_cannot() {
        use vimp_netcode::delta::{Change, Drift, Version};
        // Two rows 100 units a second on: the receiver holds row 1 with that rate (it drives
        // straight on), row 2 with none (it just started). Room for one of them a frame.
        let mut b = Budget::default();
        let mut choices = Vec::new();
        let mut last_sent = [0u32; 2];
        let mut count = [0; 2];
        for seq in 1..=60u32 {
            let change = |i: usize| {
                let held_for = (seq - last_sent[i]) as f32 / 30.0;
                let off = 100.0 * held_for;
                let rate = if i == 0 { 100.0 } else { 0.0 };
                let drift = Some(Drift { off: [off, 0.0], rate: [rate, 0.0] });
                Change {
                    key: 1,
                    id: i as u32 + 1,
                    row: i,
                    version: Version(seq),
                    held: true,
                    magnitude: 60,
                    drift,
                    // The receiver carries a row for a quarter of a second at most.
                    held_for: held_for.min(0.25),
                    bytes: 9,
                }
            };
            let changes = [change(0), change(1)];
            let weigh = |c: &Change| Some(weight(c.magnitude, shown_off(c), 100.0));
            b.choose(&changes, seq, seq - 1, 12.0, 0, weigh, &mut choices);
            for (i, c) in choices.iter().enumerate() {
                if *c == Choice::Send {
                    count[i] += 1;
                    last_sent[i] = seq;
                }
            }
            b.spent(choices.iter().filter(|c| **c == Choice::Send).count() * 10, 12.0);
        }
        assert!(count[1] > 2 * count[0], "the row the receiver cannot carry goes far more often: {count:?}");
        assert!(count[0] >= 2, "the other still goes now and then: {count:?}");
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
