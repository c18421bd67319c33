//! Dead reckoning: what a receiver of delta frames shows of a row the host held back.
//!
//! Under a byte budget the host does not send every changed row in every frame
//! ([`Pick::Hold`](super::Pick::Hold)): the receiver decodes the row as it last had it. A row
//! whose fields name their rates ([`FieldSchema::rate`](crate::schema::FieldSchema::rate):
//! `x` by `vx`) need not stand still meanwhile: [`Reckoner::shown`] carries it forward by its
//! rates for the time since the receiver last decoded it anew, for at most [`RECKON_MS`]. An
//! entity that goes straight on is shown where it is though its row waits; only a turn, a
//! stop or a start shows, as far as it took the entity in that time.
//!
//! The frames a receiver keeps as baselines stay as decoded: the next frame is written
//! against them. Only what it shows (its interpolation buffer) is carried forward. The host
//! reckons the same way when it weighs a row ([`Drift::after`](super::Drift::after)) and
//! when it measures what the budget costs the eye.

use std::collections::BTreeMap;
use std::f32::consts::{PI, TAU};

use crate::schema::{Interp, Quant, SnapshotSchema};
use crate::snapshot::{Block, FieldValue, Frame, Row};

use super::is_delta_coded;

/// The longest a row is carried forward, ms: past it the row stands where it was carried to
/// (a second of a fast entity's speed guessed wrong would be a long way off).
pub const RECKON_MS: f64 = 250.0;

/// What a receiver shows of the delta frames it decodes ([`Reckoner::shown`]).
#[derive(Clone, Debug, Default)]
pub struct Reckoner {
    /// Per row of a key with rates, by `(key, id)`: the row as last decoded, and the server
    /// time of the frame that first brought it so.
    rows: BTreeMap<(u8, u32), (Row, f64)>,
    /// The newest frame shown.
    newest: Option<u32>,
    /// Of its rows, how many were shown carried forward by a step or more.
    carried: usize,
}

/// A field of a key that has a rate.
#[derive(Clone, Copy, Debug)]
struct Rated {
    field: usize,
    rate: usize,
    angle: bool,
    /// The field's step in a delta frame.
    step: f32,
}

/// The fields of a key that have rates.
fn rated(bs: &crate::schema::BlockSchema) -> Vec<Rated> {
    bs.fields
        .iter()
        .enumerate()
        .filter_map(|(field, f)| {
            let rate = bs.rate_of(field)?;
            let step = f.quant.unwrap_or(Quant::DEFAULT).step();
            Some(Rated { field, rate, angle: f.interp == Interp::LerpAngle, step })
        })
        .collect()
}

/// `row` carried forward by its rates for `seconds` (`rated`: what [`rated`] gives for its
/// key; an angle stays in `[-π, π)`), and whether that moved a field by a step or more.
fn carried(row: &Row, rated: &[Rated], seconds: f32) -> (Row, bool) {
    let mut out = row.clone();
    let mut stepped = false;
    for r in rated {
        let (Some(FieldValue::F32(v)), Some(FieldValue::F32(rate))) = (row.get(r.field), row.get(r.rate)) else {
            continue;
        };
        let by = rate * seconds;
        let moved = v + by;
        if !moved.is_finite() {
            continue;
        }
        stepped |= by.abs() >= r.step;
        out[r.field] = FieldValue::F32(if r.angle { (moved + PI).rem_euclid(TAU) - PI } else { moved });
    }
    (out, stepped)
}

impl Reckoner {
    /// What to show of `frame`, a decoded delta frame: its rows of keys with rates that came
    /// as they were in an earlier frame carried forward by their rates since that frame (at
    /// most [`RECKON_MS`]); everything else as it is. A frame older than one shown before is
    /// shown as decoded, and changes nothing.
    pub fn shown(&mut self, schema: &SnapshotSchema, frame: &Frame) -> Frame {
        if self.newest.is_some_and(|n| frame.seq <= n) {
            return frame.clone();
        }
        self.newest = Some(frame.seq);
        let now = frame.server_time_ms;
        let mut shown = frame.clone();
        let mut rows = BTreeMap::new();
        self.carried = 0;
        for (key, block) in &mut shown.blocks {
            let Some((_, bs)) = schema.by_id(*key).filter(|(_, bs)| is_delta_coded(bs)) else { continue };
            let rated = rated(bs);
            if rated.is_empty() {
                continue;
            }
            let mut carried_block = Block::empty(block.kind());
            for (id, row) in block.entries() {
                let (Some(id), Some(row)) = (id, row) else {
                    carried_block.push(id.unwrap_or_default(), row.cloned());
                    continue;
                };
                let since = match self.rows.get(&(*key, id)) {
                    Some((was, since)) if was == row => *since,
                    _ => now,
                };
                let seconds = ((now - since).clamp(0.0, RECKON_MS) / 1000.0) as f32;
                let (row_shown, stepped) =
                    if seconds > 0.0 { carried(row, &rated, seconds) } else { (row.clone(), false) };
                self.carried += usize::from(stepped);
                carried_block.push(id, Some(row_shown));
                rows.insert((*key, id), (row.clone(), since));
            }
            *block = carried_block;
        }
        self.rows = rows;
        shown
    }

    /// How many rows of the newest frame shown were carried forward by a step or more: rows
    /// on the move that the host held back for its byte budget.
    pub fn carried(&self) -> usize {
        self.carried
    }

    /// Forgets every row (a new host, a new schema): the next frame is shown as decoded.
    pub fn clear(&mut self) {
        *self = Reckoner::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{BlockClass, BlockKind, BlockSchema, FieldSchema, FieldType};

    fn schema() -> SnapshotSchema {
        let f32f = |name: &str| FieldSchema::new(name, FieldType::F32);
        let tank = BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
            .field(f32f("x").interp(Interp::Lerp).rate("vx"))
            .field(f32f("y").interp(Interp::Lerp).rate("vy"))
            .field(f32f("angle").interp(Interp::LerpAngle).rate("spin"))
            .field(f32f("vx"))
            .field(f32f("vy"))
            .field(f32f("spin"));
        let wall = BlockSchema::new(2, BlockKind::Indexed8, BlockClass::Hot).field(f32f("x")).field(f32f("vx"));
        SnapshotSchema::new([("m1".to_owned(), tank), ("m2".to_owned(), wall)]).expect("a valid schema")
    }

    fn frame(seq: u32, rows: &[(u8, u32, [f32; 6])]) -> Frame {
        let mut blocks: Vec<(u8, Block)> = Vec::new();
        for &(key, id, v) in rows {
            if blocks.last().is_none_or(|b| b.0 != key) {
                blocks.push((key, Block::empty(BlockKind::Indexed8)));
            }
            let width = if key == 1 { 6 } else { 2 };
            let row = v[..width].iter().map(|&x| FieldValue::F32(x)).collect();
            blocks.last_mut().unwrap().1.push(id, Some(row));
        }
        Frame { seq, server_time_ms: f64::from(seq) * 100.0 / 3.0, player: None, blocks, streamed_out: Vec::new() }
    }

    fn f(frame: &Frame, key: u8, id: u32, field: usize) -> f32 {
        let row = frame.block(key).unwrap().entries().find(|(i, _)| *i == Some(id)).unwrap().1.unwrap();
        let FieldValue::F32(v) = row[field] else { panic!("an f32") };
        v
    }

    #[test]
    fn a_row_that_came_as_before_is_carried_forward_by_its_rates_and_a_new_value_is_shown_as_it_is() {
        let s = schema();
        let mut r = Reckoner::default();
        let moving = [10.0, 20.0, 3.0, 30.0, -60.0, 3.0];
        // Row 8 creeps: carried less than a step in a frame or two.
        let creeping = [1.0, 1.0, 0.0, 0.01, 0.0, 0.0];
        let rows = [(1, 7, moving), (1, 8, creeping), (2, 1, [5.0, 9.0, 0.0, 0.0, 0.0, 0.0])];
        let first = r.shown(&s, &frame(1, &rows));
        assert_eq!(first, frame(1, &rows), "nothing to carry yet");
        // Two frames later (66.7 ms) the row came as it was: carried 2/30 s on.
        let held = r.shown(&s, &frame(3, &rows));
        assert!((f(&held, 1, 7, 0) - 12.0).abs() < 1e-4, "x {}", f(&held, 1, 7, 0));
        assert!((f(&held, 1, 7, 1) - 16.0).abs() < 1e-4, "y {}", f(&held, 1, 7, 1));
        // 3 + 0.2 rad is past π: the angle comes round to the other side.
        assert!((f(&held, 1, 7, 2) - (3.2 - TAU)).abs() < 1e-4, "angle {}", f(&held, 1, 7, 2));
        assert_eq!(f(&held, 1, 7, 3), 30.0, "a rate itself is not carried");
        assert_eq!(f(&held, 2, 1, 0), 5.0, "a key without rates is shown as decoded");
        assert_eq!(r.carried(), 1, "the moving row was carried by a step or more, the creeping one not");
        assert!(f(&held, 1, 8, 0) > 1.0, "though it was carried too");
        // A new value is the truth: shown as it is, and carried from this frame on.
        let fresh = [14.0, 16.0, 0.0, 30.0, -60.0, 0.0];
        let now = r.shown(&s, &frame(4, &[(1, 7, fresh)]));
        assert_eq!(f(&now, 1, 7, 0), 14.0);
        assert_eq!(r.carried(), 0);
        let later = r.shown(&s, &frame(5, &[(1, 7, fresh)]));
        assert!((f(&later, 1, 7, 0) - 15.0).abs() < 1e-4, "x {}", f(&later, 1, 7, 0));
    }

    #[test]
    fn a_row_is_carried_no_longer_than_the_limit_and_an_old_frame_changes_nothing() {
        let s = schema();
        let mut r = Reckoner::default();
        let moving = [0.0, 0.0, 0.0, 30.0, 0.0, 0.0];
        r.shown(&s, &frame(30, &[(1, 1, moving)]));
        let long = r.shown(&s, &frame(60, &[(1, 1, moving)]));
        assert!((f(&long, 1, 1, 0) - 30.0 * RECKON_MS as f32 / 1000.0).abs() < 1e-3, "x {}", f(&long, 1, 1, 0));
        // A frame older than the newest shown, with another value: as decoded, and the row
        // is still carried from frame 30.
        let old = r.shown(&s, &frame(45, &[(1, 1, [1.0, 0.0, 0.0, 30.0, 0.0, 0.0])]));
        assert_eq!(f(&old, 1, 1, 0), 1.0);
        let next = r.shown(&s, &frame(61, &[(1, 1, moving)]));
        assert!((f(&next, 1, 1, 0) - 7.5).abs() < 1e-3, "x {}", f(&next, 1, 1, 0));
        r.clear();
        let cleared = r.shown(&s, &frame(62, &[(1, 1, moving)]));
        assert_eq!(f(&cleared, 1, 1, 0), 0.0, "a cleared reckoner carries nothing");
    }
}
