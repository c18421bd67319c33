//! The interpolation buffer: what the client draws of everyone but itself, 100 ms in the past.
//!
//! Frames arrive at 30 Hz over an unreliable channel: late, twice, or out of order.
//! The client draws the world as it was at `render time = serverNow − delay`
//! (default 100 ms, about three frames of buffer), blending each entity between the
//! two frames around that time, field by field as the schema says:
//!
//! - `lerp` f32 fields blend linearly, `lerpAngle` along the shortest arc (across ±π),
//!   everything else (`discrete`) holds the older frame's value;
//! - an entity that is null (removed) in the newer frame is drawn from the older one
//!   until render time reaches the newer frame, then it is gone; an entity that first
//!   appears in the newer frame appears when render time reaches it;
//! - an indexed key absent from a frame leaves its entities as they were (removal is
//!   only ever the null row); a hot `list16` key absent from a frame is empty;
//! - an entity a delta frame streams out (it left the view, [`Frame::streamed_out`]) goes
//!   as a removed one does, at its frame, and [`Sample::streamed_out`] names it, so a game
//!   can tell it from a death;
//! - event blocks are delivered exactly once each, when render time reaches their
//!   frame (late if the frame itself came late), duplicates of a frame are ignored;
//! - frames older than `serverNow − maxFrameAge` (default 1000 ms) are dropped, on
//!   arrival or once render time has moved past them.
//!
//! There is no extrapolation: past the newest frame the newest state holds.
//!
//! The buffer reads no clock: the caller passes `serverNow` (its estimate of the
//! host's clock, in the milliseconds of [`Frame::server_time_ms`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};

use crate::divergence::wrap_angle;
use crate::schema::{BlockClass, BlockKind, Interp, SnapshotSchema};
use crate::snapshot::{Block, FieldValue, Frame, Row};

/// How far in the past the client draws, and how old a frame may get.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InterpolationConfig {
    /// Render time lags the server clock by this much, in ms (spec default 100).
    pub delay: f64,
    /// Frames older than this relative to the server clock are dropped, in ms (spec default 1000).
    pub max_frame_age: f64,
}

impl Default for InterpolationConfig {
    fn default() -> Self {
        InterpolationConfig { delay: 100.0, max_frame_age: 1000.0 }
    }
}

/// A hard cap on buffered frames, whatever the caller's clock says (30 Hz × 8 s).
const MAX_FRAMES: usize = 240;
/// How many recent frame seqs are remembered to ignore duplicates.
const SEEN_WINDOW: u32 = 1024;

/// What [`Interpolator::push`] did with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushOutcome {
    /// Buffered.
    Accepted,
    /// Older than the newest buffered frame's base: its hot state is superseded, but its
    /// events (if any) are still delivered once.
    Late,
    /// A frame with this seq was already received.
    Duplicate,
    /// Older than `maxFrameAge`: dropped whole.
    Stale,
}

/// Entities of one hot key: id (slot index for `indexedNoNull8`, position for `list16`) → row.
pub type Entities = BTreeMap<u32, Row>;

/// One frame's event blocks, delivered once.
#[derive(Clone, Debug, PartialEq)]
pub struct EventFrame {
    /// The frame's seq.
    pub seq: u32,
    /// The frame's server time, ms.
    pub server_time_ms: f64,
    /// `(key id, block)` of every event key the frame carried.
    pub blocks: Vec<(u8, Block)>,
}

/// What to draw now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// The time drawn, ms of server time.
    pub render_time_ms: f64,
    /// The moment the world drawn is of, ms of server time: the render time, or the newest
    /// frame's when render time has gone past it (nothing is extrapolated: the newest state
    /// holds). What a shot says its shooter saw (lag compensation).
    pub drawn_time_ms: f64,
    /// Per hot key id (ascending): its entities, blended.
    pub hot: BTreeMap<u8, Entities>,
    /// Event frames that became due since the previous sample, oldest first.
    pub events: Vec<EventFrame>,
    /// `(key id, row id)` of the entities that left the view in the frames that became due
    /// since the previous sample (a delta frame's stream-out): gone from `hot` like a removed
    /// one, but alive in the match — a game shows no death for them. A null row is a removal.
    pub streamed_out: Vec<(u8, u32)>,
}

type HotState = BTreeMap<u8, Entities>;

#[derive(Debug)]
struct Buffered {
    seq: u32,
    time: f64,
    /// This frame's own hot blocks, kept to rebuild `state` when an older frame arrives late.
    hot: Vec<(u8, Block)>,
    /// The accumulated hot state after this frame.
    state: HotState,
    events: Option<EventFrame>,
    /// The entities this frame streamed out, and whether a sample reported them.
    streamed_out: Vec<(u8, u32)>,
    out_reported: bool,
}

/// The client's snapshot buffer for interpolated entities.
#[derive(Debug)]
pub struct Interpolator {
    schema: SnapshotSchema,
    config: InterpolationConfig,
    /// Buffered frames by ascending seq.
    frames: VecDeque<Buffered>,
    /// The accumulated state before the oldest buffered frame.
    base: HotState,
    /// Seq of the newest frame folded into `base`.
    base_seq: Option<u32>,
    /// Event frames due or orphaned, not yet handed out.
    pending_events: Vec<EventFrame>,
    /// Stream-outs of frames folded into `base` before a sample reported them.
    pending_out: Vec<(u8, u32)>,
    seen: BTreeSet<u32>,
}

impl Interpolator {
    /// An empty buffer for frames of `schema`.
    pub fn new(schema: SnapshotSchema, config: InterpolationConfig) -> Self {
        Interpolator {
            schema,
            config,
            frames: VecDeque::new(),
            base: HotState::new(),
            base_seq: None,
            pending_events: Vec::new(),
            pending_out: Vec::new(),
            seen: BTreeSet::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> InterpolationConfig {
        self.config
    }

    /// Number of buffered frames.
    pub fn len(&self) -> usize {
        self.frames.len()
    }

    /// Whether no frame is buffered.
    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Seq and server time of the newest buffered frame.
    pub fn newest(&self) -> Option<(u32, f64)> {
        self.frames.back().map(|f| (f.seq, f.time))
    }

    /// Forgets everything (a new map, a new host).
    pub fn clear(&mut self) {
        self.frames.clear();
        self.base.clear();
        self.base_seq = None;
        self.pending_events.clear();
        self.pending_out.clear();
        self.seen.clear();
    }

    /// Forgets the rows of one hot key (`CLEAR "setId"`: that set started over, as a map's
    /// crates at a new round), so they jump to where the next frames put them instead of
    /// sliding there; every other key goes on as it was. Frames that come later bring the
    /// key's rows back.
    pub fn clear_key(&mut self, key: u8) {
        self.base.remove(&key);
        for frame in &mut self.frames {
            frame.hot.retain(|(k, _)| *k != key);
            frame.state.remove(&key);
        }
    }

    /// Takes a decoded frame; `server_now_ms` is the caller's estimate of the server clock.
    pub fn push(&mut self, frame: Frame, server_now_ms: f64) -> PushOutcome {
        if frame.server_time_ms < server_now_ms - self.config.max_frame_age {
            return PushOutcome::Stale;
        }
        if !self.seen.insert(frame.seq) {
            return PushOutcome::Duplicate;
        }
        if let Some(&newest) = self.seen.last() {
            let floor = newest.saturating_sub(SEEN_WINDOW);
            self.seen = self.seen.split_off(&floor);
        }
        let (mut hot, mut events) = (Vec::new(), Vec::new());
        for (id, block) in frame.blocks {
            match self.schema.by_id(id) {
                Some((_, bs)) if bs.class == BlockClass::Event => events.push((id, block)),
                Some(_) => hot.push((id, block)),
                None => {}
            }
        }
        let events = (!events.is_empty()).then_some(EventFrame {
            seq: frame.seq,
            server_time_ms: frame.server_time_ms,
            blocks: events,
        });
        let at = self.frames.partition_point(|f| f.seq < frame.seq);
        if self.base_seq.is_some_and(|b| frame.seq < b) {
            // Older than what the buffer's base already reflects: only its events still count.
            self.pending_events.extend(events);
            return PushOutcome::Late;
        }
        let buffered = Buffered {
            seq: frame.seq,
            time: frame.server_time_ms,
            hot,
            state: HotState::new(),
            events,
            streamed_out: frame.streamed_out,
            out_reported: false,
        };
        self.frames.insert(at, buffered);
        self.rebuild_from(at);
        while self.frames.len() > MAX_FRAMES {
            self.drop_oldest();
        }
        PushOutcome::Accepted
    }

    /// The world at `server_now_ms − delay`, plus the events that became due.
    pub fn sample(&mut self, server_now_ms: f64) -> Sample {
        let rt = server_now_ms - self.config.delay;
        // Drop frames too old, keeping the newest one at or before render time as the base.
        while self.frames.len() >= 2
            && self.frames[0].time < server_now_ms - self.config.max_frame_age
            && self.frames[1].time <= rt
        {
            self.drop_oldest();
        }
        let mut events = std::mem::take(&mut self.pending_events);
        let mut streamed_out = std::mem::take(&mut self.pending_out);
        for f in self.frames.iter_mut().filter(|f| f.time <= rt) {
            events.extend(f.events.take());
            if !std::mem::replace(&mut f.out_reported, true) {
                streamed_out.extend_from_slice(&f.streamed_out);
            }
        }
        events.sort_by_key(|e| e.seq);
        let hot = self.blend_at(rt);
        Sample { render_time_ms: rt, drawn_time_ms: self.drawn_at(rt), hot, events, streamed_out }
    }

    /// The moment the world blended at render time `rt` is of: `rt`, or the newest frame's
    /// time when `rt` is past it.
    fn drawn_at(&self, rt: f64) -> f64 {
        self.frames.back().map_or(rt, |newest| rt.min(newest.time))
    }

    /// The blended hot state at render time `rt` (no event delivery, no dropping).
    pub fn state_at(&self, rt: f64) -> BTreeMap<u8, Entities> {
        self.blend_at(rt)
    }

    fn blend_at(&self, rt: f64) -> HotState {
        let b = self.frames.partition_point(|f| f.time <= rt);
        if b == 0 {
            // Before the oldest frame: the base, or, before any history, the oldest frame.
            return match self.frames.front() {
                Some(f) if self.base_seq.is_none() => f.state.clone(),
                _ => self.base.clone(),
            };
        }
        let older = &self.frames[b - 1];
        let Some(newer) = self.frames.get(b) else {
            return older.state.clone();
        };
        let span = newer.time - older.time;
        let alpha = if span > 0.0 { ((rt - older.time) / span).clamp(0.0, 1.0) as f32 } else { 0.0 };
        let mut out = HotState::new();
        for (key, ents) in &older.state {
            let Some((_, bs)) = self.schema.by_id(*key) else { continue };
            let next = newer.state.get(key);
            let blended: Entities = ents
                .iter()
                .map(|(id, row)| match next.and_then(|n| n.get(id)) {
                    Some(to) => (*id, blend_row(&bs.fields, row, to, alpha)),
                    None => (*id, row.clone()),
                })
                .collect();
            if !blended.is_empty() {
                out.insert(*key, blended);
            }
        }
        out
    }

    fn drop_oldest(&mut self) {
        if let Some(mut f) = self.frames.pop_front() {
            self.pending_events.extend(f.events.take());
            if !f.out_reported {
                self.pending_out.append(&mut f.streamed_out);
            }
            self.base = f.state;
            self.base_seq = Some(f.seq);
        }
    }

    fn rebuild_from(&mut self, at: usize) {
        for i in at..self.frames.len() {
            let prev = if i == 0 { self.base.clone() } else { self.frames[i - 1].state.clone() };
            let state = apply_hot(&self.schema, prev, &self.frames[i].hot, &self.frames[i].streamed_out);
            self.frames[i].state = state;
        }
    }
}

/// Applies one frame's hot blocks and stream-outs to an accumulated state.
fn apply_hot(schema: &SnapshotSchema, mut state: HotState, blocks: &[(u8, Block)], out: &[(u8, u32)]) -> HotState {
    for (key, id) in out {
        if let Some(ents) = state.get_mut(key) {
            ents.remove(id);
            if ents.is_empty() {
                state.remove(key);
            }
        }
    }
    // A hot list16 key is whole in every frame it has content in; absent means empty.
    for (id, bs) in schema.keys().map(|(_, b)| (b.id, b)) {
        if bs.class == BlockClass::Hot && bs.kind == BlockKind::List16 && !blocks.iter().any(|(k, _)| *k == id) {
            state.remove(&id);
        }
    }
    for (key, block) in blocks {
        let ents = state.entry(*key).or_default();
        if let Block::List16(rows) = block {
            *ents = rows.iter().cloned().enumerate().map(|(i, r)| (i as u32, r)).collect();
        } else {
            for (id, row) in block.entries() {
                let id = id.unwrap_or_default();
                match row {
                    Some(row) => ents.insert(id, row.clone()),
                    None => ents.remove(&id),
                };
            }
        }
        if ents.is_empty() {
            state.remove(key);
        }
    }
    state
}

/// Blends two rows of one key field by field.
pub fn blend_row(fields: &[crate::schema::FieldSchema], from: &Row, to: &Row, alpha: f32) -> Row {
    from.iter()
        .zip(to)
        .zip(fields)
        .map(|((a, b), f)| match (*a, *b, f.interp) {
            (FieldValue::F32(a), FieldValue::F32(b), Interp::Lerp) => FieldValue::F32(lerp(a, b, alpha)),
            (FieldValue::F32(a), FieldValue::F32(b), Interp::LerpAngle) => FieldValue::F32(lerp_angle(a, b, alpha)),
            (a, _, _) => a,
        })
        .collect()
}

/// Linear blend that returns exactly `a` at 0 and exactly `b` at 1.
pub fn lerp(a: f32, b: f32, t: f32) -> f32 {
    if t >= 1.0 { b } else { a + (b - a) * t }
}

/// Blend of two angles (radians) along the shortest arc; the result is wrapped to (−π, π].
pub fn lerp_angle(a: f32, b: f32, t: f32) -> f32 {
    wrap_angle(a + wrap_angle(b - a) * t.min(1.0))
}

#[cfg(test)]
mod tests {
    use std::f32::consts::PI;

    use proptest::prelude::*;

    use super::*;
    use crate::schema::{BlockSchema, FieldSchema, FieldType};

    /// Key 1: indexed8 hot [x lerp, a lerpAngle, team discrete]; key 2: list16 event [r];
    /// key 3: hot list16 [x lerp].
    fn schema() -> SnapshotSchema {
        SnapshotSchema::new([
            (
                "p".to_owned(),
                BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
                    .field(FieldSchema::new("x", FieldType::F32).interp(Interp::Lerp))
                    .field(FieldSchema::new("a", FieldType::F32).interp(Interp::LerpAngle))
                    .field(FieldSchema::new("team", FieldType::U8)),
            ),
            (
                "e".to_owned(),
                BlockSchema::new(2, BlockKind::List16, BlockClass::Event).field(FieldSchema::new("r", FieldType::F32)),
            ),
            (
                "l".to_owned(),
                BlockSchema::new(3, BlockKind::List16, BlockClass::Hot)
                    .field(FieldSchema::new("x", FieldType::F32).interp(Interp::Lerp)),
            ),
        ])
        .expect("schema")
    }

    fn row(x: f32, a: f32, team: u8) -> Row {
        vec![FieldValue::F32(x), FieldValue::F32(a), FieldValue::U8(team)]
    }

    fn frame(seq: u32, t: f64, blocks: Vec<(u8, Block)>) -> Frame {
        Frame { seq, server_time_ms: t, player: None, blocks, streamed_out: Vec::new() }
    }

    fn tank(seq: u32, t: f64, x: f32, a: f32, team: u8) -> Frame {
        frame(seq, t, vec![(1, Block::Indexed8(vec![(7, Some(row(x, a, team)))]))])
    }

    fn x_of(s: &Sample, id: u32) -> Option<f32> {
        s.hot.get(&1).and_then(|e| e.get(&id)).map(|r| r[0].as_f32())
    }

    fn interp() -> Interpolator {
        Interpolator::new(schema(), InterpolationConfig::default())
    }

    #[test]
    fn renders_100ms_in_the_past_between_two_frames() {
        let mut i = interp();
        assert_eq!(i.push(tank(1, 1000.0, 0.0, 0.0, 1), 1000.0), PushOutcome::Accepted);
        assert_eq!(i.push(tank(2, 1040.0, 8.0, 0.0, 2), 1040.0), PushOutcome::Accepted);
        // now 1120 → render time 1020: halfway between the frames.
        let s = i.sample(1120.0);
        assert_eq!((s.render_time_ms, s.drawn_time_ms), (1020.0, 1020.0));
        assert_eq!(x_of(&s, 7), Some(4.0));
        assert_eq!(s.hot[&1][&7][2], FieldValue::U8(1), "discrete holds the older value");
        // Past the newest frame: hold, no extrapolation; what is drawn is of the newest frame.
        let s = i.sample(1500.0);
        assert_eq!(x_of(&s, 7), Some(8.0));
        assert_eq!(s.hot[&1][&7][2], FieldValue::U8(2));
        assert_eq!((s.render_time_ms, s.drawn_time_ms), (1400.0, 1040.0));
    }

    #[test]
    fn a_cleared_key_jumps_to_its_next_place_and_the_other_keys_go_on() {
        let mut i = interp();
        let both = |seq, t, x: f32| {
            let list = Block::List16(vec![vec![FieldValue::F32(x)]]);
            frame(seq, t, vec![(1, Block::Indexed8(vec![(7, Some(row(x, 0.0, 0)))])), (3, list)])
        };
        i.push(both(1, 0.0, 0.0), 0.0);
        i.push(both(2, 40.0, 8.0), 40.0);
        i.clear_key(1);
        // The key's rows start over far away: never drawn between the old place and the new.
        i.push(both(3, 80.0, 100.0), 80.0);
        for now in [120.0, 140.0, 170.0] {
            let s = i.sample(now);
            assert!(x_of(&s, 7).is_none_or(|x| x == 100.0), "at {now}: {:?}", x_of(&s, 7));
        }
        assert_eq!(x_of(&i.sample(180.0), 7), Some(100.0));
        // Key 3 was not cleared: it slides as before.
        let mut j = interp();
        j.push(both(1, 0.0, 0.0), 0.0);
        j.push(both(2, 40.0, 8.0), 40.0);
        j.clear_key(1);
        j.push(both(3, 80.0, 100.0), 80.0);
        let l = j.sample(160.0).hot[&3][&0][0].as_f32();
        assert!(l > 8.0 && l < 100.0, "halfway between its frames: {l}");
    }

    #[test]
    fn angles_take_the_shortest_arc() {
        let mut i = interp();
        i.push(tank(1, 0.0, 0.0, 3.0, 0), 0.0);
        i.push(tank(2, 100.0, 0.0, -3.0, 0), 100.0);
        let s = i.sample(150.0); // rt 50: halfway
        let a = s.hot[&1][&7][1].as_f32();
        // The short way from 3.0 to -3.0 crosses π: the midpoint is at ±π, not at 0.
        assert!((a.abs() - PI).abs() < 1e-5, "midpoint {a}");
        assert_eq!(lerp_angle(3.0, -3.0, 0.25), wrap_angle(3.0 + (2.0 * PI - 6.0) * 0.25));
    }

    #[test]
    fn out_of_order_and_duplicate_frames() {
        let mut i = interp();
        i.push(tank(1, 0.0, 0.0, 0.0, 0), 0.0);
        i.push(tank(3, 66.0, 6.0, 0.0, 0), 66.0);
        assert_eq!(i.push(tank(2, 33.0, 1.0, 0.0, 0), 70.0), PushOutcome::Accepted);
        assert_eq!(i.push(tank(2, 33.0, 1.0, 0.0, 0), 70.0), PushOutcome::Duplicate);
        assert_eq!(i.len(), 3);
        // rt 33: exactly the late frame's value, not the blend of 1 and 3 (which would be 3.0).
        assert_eq!(x_of(&i.sample(133.0), 7), Some(1.0));
    }

    #[test]
    fn a_stream_out_removes_at_its_frame_and_is_reported_once_unlike_a_death() {
        let mut i = interp();
        let both = vec![(1, Block::Indexed8(vec![(7, Some(row(1.0, 0.0, 0))), (8, Some(row(5.0, 0.0, 0)))]))];
        i.push(frame(1, 0.0, both), 0.0);
        // Frame 2 (a delta frame's world): 8 left the view, 7 died.
        let mut out = frame(2, 33.0, vec![(1, Block::Indexed8(vec![(7, None)]))]);
        out.streamed_out = vec![(1, 8)];
        i.push(out, 33.0);
        let s = i.sample(120.0); // rt 20: before frame 2
        assert_eq!((x_of(&s, 7), x_of(&s, 8)), (Some(1.0), Some(5.0)));
        assert!(s.streamed_out.is_empty());
        let s = i.sample(140.0); // rt 40: past frame 2
        assert_eq!((x_of(&s, 7), x_of(&s, 8)), (None, None), "both gone at their frame");
        assert_eq!(s.streamed_out, vec![(1, 8)], "only 8 left the view; 7 died");
        assert!(i.sample(150.0).streamed_out.is_empty(), "reported once");
        // Back in view with a keyframe row: it comes back.
        i.push(frame(3, 66.0, vec![(1, Block::Indexed8(vec![(8, Some(row(9.0, 0.0, 0)))]))]), 66.0);
        assert_eq!(x_of(&i.sample(200.0), 8), Some(9.0));
    }

    #[test]
    fn null_removes_at_its_frame_and_absent_keys_keep_entities() {
        let mut i = interp();
        i.push(
            frame(1, 0.0, vec![(1, Block::Indexed8(vec![(7, Some(row(1.0, 0.0, 0))), (8, Some(row(5.0, 0.0, 0)))]))]),
            0.0,
        );
        // Frame 2 carries no key 1 at all: both stay.
        i.push(frame(2, 33.0, vec![]), 33.0);
        // Frame 3 removes 8 and adds 9.
        i.push(frame(3, 66.0, vec![(1, Block::Indexed8(vec![(8, None), (9, Some(row(2.0, 0.0, 0)))]))]), 66.0);
        let s = i.sample(150.0); // rt 50, between 2 and 3
        assert_eq!(x_of(&s, 7), Some(1.0));
        assert_eq!(x_of(&s, 8), Some(5.0), "drawn until its removal frame is reached");
        assert_eq!(x_of(&s, 9), None, "not drawn before its first frame is reached");
        let s = i.sample(166.0); // rt 66
        assert_eq!(x_of(&s, 8), None);
        assert_eq!(x_of(&s, 9), Some(2.0));
    }

    #[test]
    fn hot_list_absent_means_empty() {
        let mut i = interp();
        i.push(frame(1, 0.0, vec![(3, Block::List16(vec![vec![FieldValue::F32(1.0)]]))]), 0.0);
        i.push(frame(2, 33.0, vec![]), 33.0);
        assert!(i.sample(100.0).hot.contains_key(&3));
        assert!(!i.sample(133.0).hot.contains_key(&3));
    }

    #[test]
    fn events_are_delivered_once_at_their_frame() {
        let mut i = interp();
        let ev = |seq, t, r| frame(seq, t, vec![(2, Block::List16(vec![vec![FieldValue::F32(r)]]))]);
        i.push(ev(1, 0.0, 1.0), 0.0);
        i.push(ev(2, 33.0, 2.0), 33.0);
        assert!(i.sample(50.0).events.is_empty(), "rt -50: nothing due yet");
        let s = i.sample(100.0); // rt 0
        assert_eq!(s.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1]);
        assert!(i.sample(110.0).events.is_empty(), "not twice");
        // A duplicate of an already delivered frame is ignored.
        assert_eq!(i.push(ev(1, 0.0, 1.0), 110.0), PushOutcome::Duplicate);
        let s = i.sample(140.0);
        assert_eq!(s.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [2]);
        assert_eq!(s.events[0].blocks, vec![(2, Block::List16(vec![vec![FieldValue::F32(2.0)]]))]);
        assert!(i.sample(5000.0).events.is_empty());
    }

    #[test]
    fn old_frames_are_dropped_and_stale_arrivals_refused() {
        let mut i = interp();
        for k in 0..60u32 {
            i.push(tank(k, k as f64 * 33.0, k as f32, 0.0, 0), k as f64 * 33.0);
        }
        let now = 59.0 * 33.0;
        i.sample(now);
        let oldest_kept = i.frames.front().map(|f| f.time).expect("frames");
        assert!(oldest_kept >= now - 1000.0 - 33.0, "kept {oldest_kept}");
        assert_eq!(i.push(tank(100, now - 1500.0, 0.0, 0.0, 0), now), PushOutcome::Stale);
        // What was dropped still shapes the state: x at the newest frame.
        assert_eq!(x_of(&i.sample(now + 100.0), 7), Some(59.0));
    }

    #[test]
    fn late_frame_behind_the_base_still_delivers_its_events() {
        let mut i = interp();
        // More frames than the buffer holds, all within max age: the oldest are folded into the base.
        for k in 10..(10 + MAX_FRAMES as u32 + 5) {
            i.push(tank(k, k as f64, k as f32, 0.0, 0), k as f64);
        }
        let now = 300.0;
        let late = frame(3, 3.0, vec![(2, Block::List16(vec![vec![FieldValue::F32(9.0)]]))]);
        assert_eq!(i.push(late, now), PushOutcome::Late);
        let s = i.sample(now + 1000.0);
        assert_eq!(s.events.iter().map(|e| e.seq).collect::<Vec<_>>(), [3]);
        assert_eq!(x_of(&s, 7), Some(254.0), "its hot state does not roll the world back");
    }

    proptest! {
        #[test]
        fn interpolation_stays_between_the_two_frames(
            x0 in -1e4f32..1e4, x1 in -1e4f32..1e4,
            a0 in -PI..PI, a1 in -PI..PI,
            gap in 1.0f64..200.0, at in 0.0f64..1.0,
        ) {
            let mut i = interp();
            i.push(tank(1, 0.0, x0, a0, 0), 0.0);
            i.push(tank(2, gap, x1, a1, 0), gap);
            let s = i.sample(100.0 + gap * at);
            let r = &s.hot[&1][&7];
            let x = r[0].as_f32();
            prop_assert!(x >= x0.min(x1) - 1e-3 && x <= x0.max(x1) + 1e-3, "x {} outside [{}, {}]", x, x0, x1);
            // The angle lies on the short arc from a0 to a1.
            let arc = wrap_angle(a1 - a0);
            let went = wrap_angle(r[1].as_f32() - a0);
            prop_assert!(went.abs() <= arc.abs() + 1e-4, "went {} of arc {}", went, arc);
            prop_assert!(went == 0.0 || arc == 0.0 || went.signum() == arc.signum() || went.abs() < 1e-4);
        }
    }
}
