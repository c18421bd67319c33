//! A client's snapshots: the schema from the host's config, the worlds of the recent delta
//! frames it decodes against, what it shows of them, and the frames decoded for its caller.

use std::collections::VecDeque;

use crate::delta;
use crate::schema::SnapshotSchema;
use crate::snapshot::{DecodeError, Frame, unpack};

/// How many decoded frames [`ClientCore::take_frames`](super::ClientCore::take_frames) keeps
/// for a caller that does not take them.
pub const MAX_QUEUED_FRAMES: usize = 64;

/// How many decoded worlds a client keeps as baselines for format 6 frames (about a second
/// at 30 frames a second): as many as the host keeps of what it sent.
pub const DELTA_BASELINES: usize = 32;

/// The snapshot frames of the host followed, decoded: a whole frame (format 5) alone, a delta
/// frame (format 6) against the baseline it names, of those this client kept. What is shown
/// of a delta frame carries the rows the host held back forward by their rates. The host's
/// session hears which baselines are kept from [`ClientCore`](super::ClientCore).
#[derive(Debug)]
pub(super) struct Snapshots {
    /// The snapshot schema from the host's config, once received.
    schema: Option<SnapshotSchema>,
    /// The worlds of the last [`DELTA_BASELINES`] delta frames decoded from the host followed,
    /// by seq: the baselines its next frames may name.
    baselines: VecDeque<Frame>,
    /// What it shows of the delta frames: rows held back carried forward by their rates.
    reckoner: delta::Reckoner,
    /// Whether the rows held back are shown carried forward
    /// ([`ClientConfig::reckon`](super::ClientConfig::reckon)).
    reckon: bool,
    /// The frames shown and not taken yet, oldest first (at most [`MAX_QUEUED_FRAMES`]).
    queued: VecDeque<Frame>,
    /// The newest frame shown.
    last: Option<Frame>,
}

/// A snapshot frame decoded ([`Snapshots::decode`]).
#[derive(Debug)]
pub(super) struct Decoded {
    /// The frame to show (a delta frame's with its rows carried forward).
    pub(super) frame: Frame,
    /// Whether it came as a delta frame.
    pub(super) delta: bool,
    /// The seq of the world kept as a baseline now, for the host to be told.
    pub(super) kept: Option<u32>,
}

impl Snapshots {
    /// Nothing decoded yet; `reckon`: whether rows held back are shown carried forward.
    pub(super) fn new(reckon: bool) -> Snapshots {
        Snapshots {
            schema: None,
            baselines: VecDeque::new(),
            reckoner: delta::Reckoner::default(),
            reckon,
            queued: VecDeque::new(),
            last: None,
        }
    }

    /// The snapshot schema, once received.
    pub(super) fn schema(&self) -> Option<&SnapshotSchema> {
        self.schema.as_ref()
    }

    /// The schema of a new config (`None`: it names none that holds): rows carried forward are
    /// of the old one.
    pub(super) fn configured(&mut self, schema: Option<SnapshotSchema>) {
        self.schema = schema;
        self.reckoner.clear();
    }

    /// A new session (a welcome, or dialing again): the host knows no baseline of this
    /// client's yet, and the old host's seqs mean nothing to it.
    pub(super) fn new_session(&mut self) {
        self.baselines.clear();
        self.reckoner.clear();
    }

    /// Decodes a snapshot frame (a delta frame against the baseline it names) and keeps a
    /// delta frame's world as a baseline; `None` without a schema.
    pub(super) fn decode(&mut self, bytes: &[u8]) -> Option<Result<Decoded, DecodeError>> {
        let schema = self.schema.as_ref()?;
        let delta = bytes.first() == Some(&delta::DELTA_FORMAT_VERSION);
        let decoded = if delta {
            let baselines = &self.baselines;
            delta::decode(schema, bytes, |seq| baselines.iter().find(|b| b.seq == seq))
        } else {
            unpack(schema, bytes)
        };
        let mut frame = match decoded {
            Ok(frame) => frame,
            Err(e) => return Some(Err(e)),
        };
        let mut kept = None;
        if delta {
            kept = self.keep_baseline(&frame).then_some(frame.seq);
            // Kept as decoded; shown with the rows held back carried forward.
            if let Some(schema) = self.schema.as_ref().filter(|_| self.reckon) {
                frame = self.reckoner.shown(schema, &frame);
            }
        }
        Some(Ok(Decoded { frame, delta, kept }))
    }

    /// Keeps a decoded delta frame's world as a baseline (the newest [`DELTA_BASELINES`] by
    /// seq; a frame seen before is kept once); returns whether it was kept now.
    fn keep_baseline(&mut self, world: &Frame) -> bool {
        if self.baselines.iter().any(|b| b.seq == world.seq) {
            return false;
        }
        let at = self.baselines.partition_point(|b| b.seq < world.seq);
        if at == 0 && self.baselines.len() == DELTA_BASELINES {
            return false;
        }
        self.baselines.insert(at, world.clone());
        if self.baselines.len() > DELTA_BASELINES {
            self.baselines.pop_front();
        }
        true
    }

    /// A frame shown: the newest, and queued for the caller (the oldest dropped past
    /// [`MAX_QUEUED_FRAMES`]).
    pub(super) fn show(&mut self, frame: Frame) {
        if self.queued.len() == MAX_QUEUED_FRAMES {
            self.queued.pop_front();
        }
        self.queued.push_back(frame.clone());
        self.last = Some(frame);
    }

    /// The newest frame shown.
    pub(super) fn last(&self) -> Option<&Frame> {
        self.last.as_ref()
    }

    /// The newest frame's match time, ms.
    pub(super) fn last_time_ms(&self) -> Option<f64> {
        self.last.as_ref().map(|f| f.server_time_ms)
    }

    /// The frames shown since the last call, oldest first.
    pub(super) fn take(&mut self) -> Vec<Frame> {
        std::mem::take(&mut self.queued).into()
    }

    /// How many rows of the newest delta frame are shown carried forward.
    pub(super) fn rows_carried(&self) -> usize {
        self.reckoner.carried()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{BlockClass, BlockKind, BlockSchema, FieldSchema, FieldType};
    use crate::snapshot::{Block, FieldValue, pack};

    fn schema() -> SnapshotSchema {
        let block = BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
            .field(FieldSchema::new("x", FieldType::F32))
            .field(FieldSchema::new("vx", FieldType::F32));
        SnapshotSchema::new([("m".to_owned(), block)]).expect("a valid schema")
    }

    /// A world of one row at `x`.
    fn world(seq: u32, x: f32) -> Frame {
        let mut block = Block::empty(BlockKind::Indexed8);
        block.push(4, Some(vec![FieldValue::F32(x), FieldValue::F32(0.0)]));
        Frame {
            seq,
            server_time_ms: f64::from(seq) * 33.0,
            player: None,
            blocks: vec![(1, block)],
            streamed_out: vec![],
        }
    }

    fn delta(target: &Frame, baseline: Option<&Frame>) -> Vec<u8> {
        let mut out = Vec::new();
        delta::encode(&schema(), target, baseline, &mut out).expect("encodes");
        out
    }

    fn seqs(s: &Snapshots) -> Vec<u32> {
        s.baselines.iter().map(|b| b.seq).collect()
    }

    #[test]
    fn delta_frames_decode_against_the_baselines_kept_and_whole_frames_alone() {
        let mut s = Snapshots::new(true);
        assert!(s.decode(&delta(&world(1, 0.0), None)).is_none(), "nothing decodes without a schema");
        s.configured(Some(schema()));
        let key = s.decode(&delta(&world(5, 1.0), None)).expect("a schema").expect("a keyframe decodes");
        assert_eq!((key.delta, key.kept), (true, Some(5)));
        let next = s.decode(&delta(&world(6, 2.0), Some(&key.frame))).expect("a schema").expect("decodes");
        assert_eq!((next.kept, next.frame.block(1)), (Some(6), world(6, 2.0).block(1)));
        let again = s.decode(&delta(&world(6, 2.0), Some(&key.frame))).expect("a schema").expect("decodes");
        assert_eq!(again.kept, None, "a frame seen before is kept once");
        let unknown = s.decode(&delta(&world(8, 3.0), Some(&world(7, 2.5)))).expect("a schema");
        assert!(matches!(unknown, Err(DecodeError::MissingBaseline { .. })), "{unknown:?}");
        let mut whole = Vec::new();
        pack(&schema(), &world(9, 4.0), &mut whole).expect("packs");
        let whole = s.decode(&whole).expect("a schema").expect("a whole frame decodes");
        assert_eq!((whole.delta, whole.kept, whole.frame.seq), (false, None, 9));
        assert_eq!(seqs(&s), [5, 6], "a whole frame is no baseline");
        s.new_session();
        assert!(seqs(&s).is_empty(), "a new host holds none of them");
        let lost = s.decode(&delta(&world(10, 4.0), Some(&key.frame))).expect("a schema");
        assert!(matches!(lost, Err(DecodeError::MissingBaseline { .. })));
    }

    #[test]
    fn the_newest_baselines_are_kept_in_seq_order() {
        let mut s = Snapshots::new(false);
        for seq in [3, 1, 2, 2] {
            s.keep_baseline(&world(seq, 0.0));
        }
        assert_eq!(seqs(&s), [1, 2, 3]);
        for seq in 4..=DELTA_BASELINES as u32 + 2 {
            assert!(s.keep_baseline(&world(seq, 0.0)));
        }
        assert_eq!(seqs(&s).first(), Some(&3), "the two oldest gave way");
        assert_eq!(s.baselines.len(), DELTA_BASELINES);
        assert!(!s.keep_baseline(&world(2, 0.0)), "older than every one kept, and no room");
        assert!(s.keep_baseline(&world(100, 0.0)));
        assert_eq!(seqs(&s).first(), Some(&4));
    }

    #[test]
    fn the_frames_shown_queue_up_to_the_limit_for_a_caller_that_does_not_take_them() {
        let mut s = Snapshots::new(true);
        for seq in 1..=MAX_QUEUED_FRAMES as u32 + 5 {
            s.show(world(seq, 0.0));
        }
        let taken = s.take();
        assert_eq!(taken.len(), MAX_QUEUED_FRAMES);
        assert_eq!(taken.first().map(|f| f.seq), Some(6), "the oldest dropped");
        assert_eq!(s.last().map(|f| f.seq), Some(MAX_QUEUED_FRAMES as u32 + 5));
        assert_eq!(s.last_time_ms(), Some(f64::from(MAX_QUEUED_FRAMES as u32 + 5) * 33.0));
        assert!(s.take().is_empty(), "taken once");
    }
}
