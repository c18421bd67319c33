//! Delta frames for many receivers: the host's recent worlds, each row with its version, what
//! each receiver holds, and every row's entry worked out once for all who hold the same.

use std::collections::VecDeque;
use std::sync::Arc;

use super::{
    Fields, OP_CHANGED, OP_REMOVED, OP_STREAMED_OUT, OP_WHOLE, by_id_into, check_blocks, check_frame, field_value,
    is_delta_coded, put_header, put_varint, steps, value, zigzag,
};
use crate::schema::{BlockSchema, FieldType, Quant, SnapshotSchema};
use crate::snapshot::{Block, FieldValue, Frame, PackError, pack_block};

/// A version of a row: the numbers it had from one world of the [`Worlds`] on (what a
/// [`Change`] says the newest world has, what a host may write a row at again). The number is
/// the world's: which of the worlds pushed set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u32);

/// What one receiver gets of a row of a delta-coded key, in a frame written for it alone
/// ([`Worlds::encode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The row as the world has it: whole if the receiver does not hold it (a stream-in), else
    /// its changes (nothing when there are none).
    Update,
    /// The row as it was at `Version` (one a frame written since the receiver's baseline
    /// carried): a host that must write a row again, so that the receiver does not fall back to
    /// its baseline's value, and would rather not promise it a newer one. As [`Pick::Update`]
    /// when no world kept has the row at that version (a host that keeps its worlds for as long
    /// as a frame may be a baseline never sees that).
    Resend(Version),
    /// The row as the receiver holds it: nothing written. A row it does not hold is not
    /// streamed in yet.
    Hold,
    /// Out of the receiver's view: streamed out if it holds the row, else nothing.
    Out,
}

/// A row of the newest world that differs from what a receiver holds ([`Worlds::changes`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Change {
    /// The key.
    pub key: u8,
    /// The row's id.
    pub id: u32,
    /// The row's place among the world's rows ([`Steps::row`]).
    pub row: usize,
    /// Its version in the world.
    pub version: Version,
    /// Whether the receiver holds the row (a change) or not (it would stream in whole).
    pub held: bool,
    /// The largest difference of a field, in steps (or values), from what the receiver
    /// holds; `u64::MAX` for a row it does not hold, or holds in a version no longer kept.
    pub magnitude: u64,
    /// How its place drifts from where the receiver holds it: `None` for a key with no place
    /// counted in units ([`BlockSchema::point`](crate::schema::BlockSchema::point)) and for a
    /// row the receiver does not hold (or holds in a version no longer kept).
    pub drift: Option<Drift>,
    /// How long the receiver has held its value, seconds, as the host can tell: since the
    /// frame in which the value was set, at most [`super::RECKON_MS`] (and that much for a
    /// value set before the worlds kept): how far it has carried the row forward.
    pub held_for: f32,
    /// The bytes its entry takes, but for the id's gap (one byte, mostly).
    ///
    /// Exact, but for a receiver that holds a version of the row older than the last one no
    /// other receiver's entry was worked out against this frame: then what the row's last
    /// change took, and `magnitude` that change's (the entry is worked out when written; a
    /// budget that keeps to what is spent absorbs the difference).
    pub bytes: usize,
}

/// How a row's place drifts from where a receiver holds it ([`Change::drift`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Drift {
    /// Where it is now less where the receiver holds it, in units.
    pub off: [f32; 2],
    /// The rate of the place the receiver holds, units a second ([`crate::schema::FieldSchema::rate`];
    /// 0 without one).
    pub rate: [f32; 2],
}

impl Drift {
    /// How far from where it is the receiver shows the row when it carried what it holds
    /// forward for `seconds` ([`super::Reckoner`]).
    pub fn after(&self, seconds: f32) -> f32 {
        let (x, y) = (self.off[0] - self.rate[0] * seconds, self.off[1] - self.rate[1] * seconds);
        // No `hypot`: a library call, and this runs for every changed row of every receiver.
        (x * x + y * y).sqrt()
    }
}

/// One world: a frame's delta-coded rows as numbers (steps for `f32`, values for integers),
/// each with its version, worked out once for every receiver. Keys by rising id, rows by rising
/// id within a key; a row's place in that order is its index ([`Steps::row`]).
#[derive(Clone, Debug, Default)]
pub struct Steps {
    seq: u32,
    /// The server time of its frame, ms.
    time_ms: f64,
    /// Which of the [`Worlds`] this is (its versions count them).
    generation: u32,
    keys: Vec<KeyRows>,
    rows: usize,
    /// `(key, id)` of every row, in order: shared with what receivers hold of it.
    row_ids: Arc<[(u8, u32)]>,
}

#[derive(Clone, Debug)]
struct KeyRows {
    key: u8,
    width: usize,
    fields: Fields,
    /// The index of its first row among all the world's rows.
    start: usize,
    ids: Vec<u32>,
    /// The generation of the world each row's numbers were set in.
    versions: Vec<u32>,
    /// `width` numbers per row.
    numbers: Vec<i64>,
    /// Per row: the bytes and the magnitude of its entry against the numbers it had before its
    /// last change (the whole row's for a row that came with it): what a receiver that holds
    /// an older version is sent, near enough for a budget.
    last: Vec<(u32, u64)>,
}

impl KeyRows {
    fn row(&self, k: usize) -> &[i64] {
        &self.numbers[k * self.width..(k + 1) * self.width]
    }
}

impl Steps {
    /// The seq of the frame this world is of.
    pub fn seq(&self) -> u32 {
        self.seq
    }

    /// How many rows the world has, over all its delta-coded keys.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The delta-coded keys of the world, by rising id ([`Steps::row`] counts their rows in this
    /// order).
    pub fn keys(&self) -> impl Iterator<Item = u8> + '_ {
        self.keys.iter().map(|k| k.key)
    }

    /// The ids of key `key`'s rows, rising (none when it has none).
    pub fn ids(&self, key: u8) -> &[u32] {
        self.key_rows(key).map_or(&[], |k| &k.ids)
    }

    /// The place of row `index` of key `key` among all the world's rows (`0..rows()`), or
    /// `None` when there is no such row.
    pub fn row(&self, key: u8, index: usize) -> Option<usize> {
        self.key_rows(key).filter(|k| index < k.ids.len()).map(|k| k.start + index)
    }

    /// Field `field` (an `f32` of `bs`, the key's schema) of row `index`, as the receiver
    /// decodes it; `None` for a field of another type or a row that is not there.
    pub fn f32_at(&self, bs: &BlockSchema, index: usize, field: usize) -> Option<f32> {
        let rows = self.key_rows(bs.id).filter(|k| index < k.ids.len())?;
        let f = bs.fields.get(field).filter(|f| f.ty == FieldType::F32)?;
        Some(value(f.quant.unwrap_or(Quant::DEFAULT), rows.row(index)[field]))
    }

    /// Each row of key `bs` (by rising id) with its `f32` fields `x` and `y` as the receiver
    /// decodes them.
    pub fn points<'a>(&'a self, bs: &BlockSchema, x: usize, y: usize) -> impl Iterator<Item = (u32, f32, f32)> + 'a {
        let quant = |f: usize| bs.fields.get(f).and_then(|f| f.quant).unwrap_or(Quant::DEFAULT);
        let (qx, qy) = (quant(x), quant(y));
        let rows = self.key_rows(bs.id).filter(|r| x < r.width && y < r.width);
        rows.into_iter().flat_map(move |r| {
            r.ids.iter().enumerate().map(move |(k, &id)| (id, value(qx, r.row(k)[x]), value(qy, r.row(k)[y])))
        })
    }

    /// The version of row `row` (`0..rows()`): the generation of the world its numbers were
    /// set in.
    pub fn version(&self, row: usize) -> Option<u32> {
        let k = self.keys.iter().rev().find(|k| k.start <= row)?;
        k.versions.get(row - k.start).copied()
    }

    fn key_rows(&self, key: u8) -> Option<&KeyRows> {
        self.keys.iter().find(|k| k.key == key)
    }
}

/// What a receiver holds once it decodes a frame written for it ([`Worlds::encode`]): per row of
/// the world the frame was written from, the version it has. Meaningful only with the [`Worlds`]
/// that wrote the frame, while they keep that world.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Held {
    seq: u32,
    /// The world the frame was written from, and its rows' `(key, id)`.
    generation: u32,
    ids: Arc<[(u8, u32)]>,
    /// Per row of that world ([`Steps::row`]): the version held, [`WHOLE`] for none.
    versions: Vec<u32>,
}

impl Held {
    /// The seq of the frame it holds: the baseline that later frames name.
    pub fn seq(&self) -> u32 {
        self.seq
    }

    /// The version it holds of row `row` of the world its frame was written from; `None` for
    /// a row it does not hold.
    pub fn version(&self, row: usize) -> Option<u32> {
        self.versions.get(row).copied().filter(|v| *v != WHOLE)
    }

    /// A receiver that holds every row of `world`, as that world has it.
    pub fn all(world: &Steps) -> Held {
        let versions = world.keys.iter().flat_map(|k| k.versions.iter().copied()).collect();
        Held { seq: world.seq, generation: world.generation, ids: world.row_ids.clone(), versions }
    }
}

/// How the rows of an older world map onto the newest one's, worked out once per frame for all
/// receivers that hold a frame of that world.
#[derive(Clone, Debug, Default)]
struct Remap {
    generation: u32,
    /// Per row of the newest world: its place in the older one, or [`WHOLE`]. Empty when both
    /// have the same rows.
    to: Vec<u32>,
    /// `(key, id, place)` of the older world's rows the newest lacks, by key and id.
    gone: Vec<(u8, u32, u32)>,
}

impl Remap {
    /// What a receiver holding `held` has of the newest world's rows `rows`, into `out`: a
    /// copy while both worlds have the same rows, as most frames do.
    fn versions(&self, held: &Held, rows: std::ops::Range<usize>, out: &mut [u32]) {
        if self.to.is_empty() {
            out.copy_from_slice(&held.versions[rows]);
        } else {
            for (v, &j) in out.iter_mut().zip(&self.to[rows]) {
                *v = if j == WHOLE { WHOLE } else { held.versions[j as usize] };
            }
        }
    }
}

/// The version that asks for a whole row (no real generation is this).
const WHOLE: u32 = u32::MAX;

/// What a row's entry against one version is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum What {
    /// The numbers are those of the version: nothing to write.
    Same,
    /// A changed-fields bitmap and the differences ([`super`]'s op 2).
    Changed,
    /// The whole row (op 1): the receiver does not hold it, or holds a version no longer kept.
    Whole,
}

#[derive(Clone, Copy, Debug)]
struct Diff {
    /// The version it is against.
    version: u32,
    what: What,
    magnitude: u64,
    /// How the row's place drifts from the version's ([`Change::drift`]).
    drift: Option<Drift>,
    /// The entry's payload (after its head) in [`Diffs::bytes`].
    start: u32,
    len: u32,
}

/// The newest world's entries worked out so far, per row and version held.
#[derive(Clone, Debug, Default)]
struct Diffs {
    /// Per row of the newest world, one slot per age of the version held (the newest world's
    /// generation less it; then one for a version older than the worlds kept, and one for a
    /// whole row): `(stamp, entry)`, current when its stamp is this world's.
    slots: Vec<(u32, u32)>,
    /// Slots per row: the worlds kept, one for an older version and one for a whole row.
    ages: usize,
    /// Which world the slots' current entries are of.
    stamp: u32,
    entries: Vec<Diff>,
    bytes: Vec<u8>,
}

impl Diffs {
    fn reset(&mut self, rows: usize, ages: usize) {
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 || self.ages != ages {
            // Stamps came round (or the shape changed): no slot may look current.
            self.slots.clear();
            self.stamp = 1;
            self.ages = ages;
        }
        if self.slots.len() < rows * ages {
            self.slots.resize(rows * ages, (0, 0));
        }
        self.entries.clear();
        self.bytes.clear();
    }

    fn payload(&self, d: &Diff) -> &[u8] {
        &self.bytes[d.start as usize..(d.start + d.len) as usize]
    }
}

/// The last worlds a host wrote delta frames from, with each row's version, and the entries of
/// the newest one worked out so far.
///
/// A host writes one frame per receiver, each against what that receiver holds. Done naively
/// every receiver's frame compares every row it sees with what it holds, field by field, and
/// encodes each difference again. [`Worlds`] keeps the last few worlds as numbers ([`Steps`])
/// and gives every row a **version**: the world in which its numbers last changed. What a
/// receiver holds ([`Held`]) is then, per row, the version it has, so that:
///
/// - a row whose version the receiver holds is unchanged: one comparison of two integers;
/// - a changed row's entry (the changed-fields bitmap and the differences, or the whole row) is
///   worked out once per frame for each version receivers hold of it, and copied into the
///   frame of every receiver that holds that version;
/// - a receiver's state is an integer per row, not a copy of the rows.
///
/// A receiver holding a version no world kept still has (a row held back for longer than they
/// reach) is sent the row whole, which the decoder takes over what it had.
///
/// ```
/// use vimp_netcode::delta::{self, Held, Pick, Worlds};
/// use vimp_netcode::prelude::*;
///
/// let schema = SnapshotSchema::from_json(r#"{ "keys": {
///     "units": { "id": 1, "kind": "indexed8", "class": "hot", "fields": [
///         { "name": "x", "ty": "f32", "quant": { "perUnit": 20 } } ] } } }"#).unwrap();
/// let frame = |seq: u32, x: f32| Frame {
///     seq,
///     server_time_ms: 0.0,
///     player: None,
///     blocks: vec![(1, Block::Indexed8(vec![(7, Some(vec![FieldValue::F32(x)]))]))],
///     streamed_out: Vec::new(),
/// };
/// let mut worlds = Worlds::new(32);
/// let (mut held, mut bytes) = (Held::default(), Vec::new());
/// worlds.push(&schema, &frame(1, 10.0)).unwrap();
/// worlds.encode(&schema, &frame(1, 10.0), None, |_, _, _| Pick::Update, &mut bytes, &mut held).unwrap();
/// let first = delta::decode(&schema, &bytes, |_| None).unwrap();
///
/// // Frame 2 against frame 1, which the receiver holds.
/// worlds.push(&schema, &frame(2, 10.5)).unwrap();
/// let (mut next, mut bytes) = (Held::default(), Vec::new());
/// worlds.encode(&schema, &frame(2, 10.5), Some(&held), |_, _, _| Pick::Update, &mut bytes, &mut next).unwrap();
/// let second = delta::decode(&schema, &bytes, |seq| (seq == 1).then_some(&first)).unwrap();
/// assert_eq!(second.block(1), Some(&Block::Indexed8(vec![(7, Some(vec![FieldValue::F32(10.5)]))])));
/// ```
#[derive(Clone, Debug)]
pub struct Worlds {
    kept: VecDeque<Steps>,
    keep: usize,
    next_generation: u32,
    diffs: Diffs,
    /// A world no longer kept, whose buffers the next one reuses.
    spare: Option<Steps>,
    /// The remaps of older worlds onto the newest worked out this frame.
    remaps: Vec<Remap>,
    /// Where an entry written again ([`Pick::Resend`]) is worked out.
    scratch: Vec<u8>,
    /// What a receiver holds of one key's rows ([`Worlds::changes`]).
    holds: Vec<u32>,
    /// The rows [`Worlds::encode`] was told what becomes of.
    picks: Vec<(usize, Pick)>,
    /// The keys of the schema of the last world pushed.
    layout: Layout,
}

impl Worlds {
    /// Keeps the last `keep` worlds (at least one): a receiver holding a row's version from an
    /// older one gets that row whole.
    pub fn new(keep: usize) -> Worlds {
        Worlds {
            kept: VecDeque::new(),
            keep: keep.max(1),
            next_generation: 0,
            diffs: Diffs::default(),
            spare: None,
            remaps: Vec::new(),
            scratch: Vec::new(),
            holds: Vec::new(),
            picks: Vec::new(),
            layout: Layout::default(),
        }
    }

    /// The newest world.
    pub fn latest(&self) -> Option<&Steps> {
        self.kept.back()
    }

    /// Forgets every world: what receivers held of them means nothing any more.
    pub fn clear(&mut self) {
        self.kept.clear();
        self.remaps.clear();
        self.diffs.reset(0, self.keep + 2);
    }

    /// The world as of `frame`: the newest world's rows with this frame's over them and its
    /// removals (null rows) taken out, what [`super::world`] builds and a receiver decodes. A
    /// row keeps its version while its numbers stay the same. An error when a block does not fit
    /// the schema; nothing changes then.
    pub fn push(&mut self, schema: &SnapshotSchema, frame: &Frame) -> Result<&Steps, PackError> {
        self.add(schema, frame, true)
    }

    /// As [`Worlds::push`] for a frame that is a whole world: rows it does not have are gone.
    pub fn push_world(&mut self, schema: &SnapshotSchema, world: &Frame) -> Result<&Steps, PackError> {
        self.add(schema, world, false)
    }

    fn add(&mut self, schema: &SnapshotSchema, frame: &Frame, carry: bool) -> Result<&Steps, PackError> {
        check_blocks(schema, frame)?;
        if self.layout.stamp != schema.stamp() {
            self.layout = Layout::of(schema);
        }
        let generation = self.next_generation;
        let mut next = self.spare.take().unwrap_or_default();
        next.seq = frame.seq;
        next.time_ms = frame.server_time_ms;
        next.generation = generation;
        let mut keys = std::mem::take(&mut next.keys);
        let prev = self.kept.back();
        let filled = fill(&self.layout, (frame, carry), prev, generation, &mut keys);
        next.keys = keys;
        let Some(rows) = filled else {
            // A row that does not fit its key: nothing changes; the check says which.
            self.spare = Some(next);
            return Err(check_frame(schema, frame).err().unwrap_or(PackError::UnknownKey(0)));
        };
        next.rows = rows;
        // A generation is never the version that asks for a whole row.
        self.next_generation = match generation.wrapping_add(1) {
            WHOLE => 0,
            g => g,
        };
        // Mostly the same rows as the last world: the same list, shared.
        let row_ids = next.keys.iter().flat_map(|k| k.ids.iter().map(|&id| (k.key, id)));
        next.row_ids = match prev {
            Some(p) if p.row_ids.len() == next.rows && row_ids.clone().eq(p.row_ids.iter().copied()) => {
                p.row_ids.clone()
            }
            _ => row_ids.collect(),
        };
        self.diffs.reset(next.rows, self.keep + 2);
        self.kept.push_back(next);
        while self.kept.len() > self.keep {
            self.spare = self.kept.pop_front();
        }
        self.remaps.clear();
        Ok(self.kept.back().expect("just pushed"))
    }

    /// The remap of `held`'s world onto the newest, worked out once a frame; `None` when there is
    /// no world.
    fn remap(&mut self, held: &Held) -> Option<usize> {
        if let Some(i) = self.remaps.iter().position(|m| m.generation == held.generation) {
            return Some(i);
        }
        let newest = self.kept.back()?;
        let mut remap = Remap { generation: held.generation, to: Vec::new(), gone: Vec::new() };
        // A key whose rows changed shape (a new schema) is held by nobody.
        let older = by_generation(&self.kept, held.generation);
        let reshaped = |key: u8| {
            let width = |w: &Steps| w.key_rows(key).map(|k| k.width);
            older.is_some_and(|o| width(o).is_some_and(|w| Some(w) != width(newest)))
        };
        let reshaped_any = older.is_some_and(|o| o.keys.iter().any(|k| reshaped(k.key)));
        if reshaped_any || !(Arc::ptr_eq(&held.ids, &newest.row_ids) || *held.ids == *newest.row_ids) {
            remap.to.resize(newest.rows, WHOLE);
            let (now, was) = (&newest.row_ids[..], &held.ids[..]);
            let mut j = 0;
            for (r, &row) in now.iter().enumerate() {
                while j < was.len() && was[j] < row {
                    remap.gone.push((was[j].0, was[j].1, j as u32));
                    j += 1;
                }
                if was.get(j) == Some(&row) {
                    if !reshaped(row.0) {
                        remap.to[r] = j as u32;
                    }
                    j += 1;
                }
            }
            remap.gone.extend(was[j..].iter().enumerate().map(|(i, &(key, id))| (key, id, (j + i) as u32)));
        }
        self.remaps.push(remap);
        Some(self.remaps.len() - 1)
    }

    /// The rows of the newest world that differ from what a receiver holding `held` has (`None`:
    /// nothing), rows it does not hold included, of the rows `visible(row)` lets through (`row`:
    /// its place among the world's rows, [`Steps::row`]): what a host choosing what to send under
    /// a byte budget weighs. By rising key and id, into `out` (cleared first). Unchanged rows and
    /// removals are not listed; rows whose numbers the receiver holds in an older version (a
    /// value that came back) go into `same` instead (cleared first): written as
    /// [`Pick::Update`] they cost nothing and bring what it holds up to date.
    pub fn changes(
        &mut self,
        held: Option<&Held>,
        mut visible: impl FnMut(usize) -> bool,
        out: &mut Vec<Change>,
        same: &mut Vec<usize>,
    ) {
        out.clear();
        same.clear();
        let remap = held.and_then(|h| self.remap(h)).map(|i| &self.remaps[i]);
        let Some(world) = self.kept.back() else { return };
        // What the receiver holds of one key's rows at a time.
        let mut holds = std::mem::take(&mut self.holds);
        for (n, rows) in world.keys.iter().enumerate() {
            let span = rows.start..rows.start + rows.ids.len();
            holds.clear();
            holds.resize(rows.ids.len(), WHOLE);
            if let Some((h, m)) = held.zip(remap) {
                m.versions(h, span, &mut holds);
            }
            for (k, ((&id, &now), &version)) in rows.ids.iter().zip(&rows.versions).zip(&holds).enumerate() {
                let r = rows.start + k;
                if version == now || !visible(r) {
                    continue;
                }
                // What the entry takes when it was worked out for another receiver already, a
                // whole row (at hand), or else what the row's last change took: a receiver that
                // holds an older version is rarer, and the entry is worked out when written.
                let (what, magnitude, bytes, drift) = match cached_in(world, &self.diffs, n, k, version) {
                    Some(d) => (d.what, d.magnitude, d.len, d.drift),
                    None if version == WHOLE => {
                        let d = diff(&self.kept, &mut self.diffs, n, k, version);
                        (d.what, d.magnitude, d.len, d.drift)
                    }
                    None => match numbers_at(&self.kept, rows.key, rows.width, id, version, k) {
                        Some(was) => {
                            (What::Changed, rows.last[k].1, rows.last[k].0, rows.fields.drift(rows.row(k), was))
                        }
                        // A version no longer kept: the row goes whole.
                        None => (What::Whole, u64::MAX, rows.last[k].0, None),
                    },
                };
                if what == What::Same {
                    same.push(r);
                } else {
                    let magnitude = if what == What::Whole { u64::MAX } else { magnitude };
                    let held = version != WHOLE;
                    let held_for = if held {
                        let set = by_generation(&self.kept, version).map_or(f64::NEG_INFINITY, |w| w.time_ms);
                        ((world.time_ms - set).clamp(0.0, super::RECKON_MS) / 1000.0) as f32
                    } else {
                        0.0
                    };
                    let version = Version(now);
                    let bytes = bytes as usize;
                    out.push(Change { key: rows.key, id, row: r, version, held, magnitude, drift, held_for, bytes });
                }
            }
        }
        self.holds = holds;
    }

    /// Encodes the newest world for one receiver that holds `held` (`None`: a keyframe), into
    /// `out` (appended), and what the receiver then holds into `into`. `target` gives the header
    /// (its seq is the newest world's; the player block) and the blocks of keys that are not
    /// delta-coded (events, written as format 5 writes them: a host filters them per receiver
    /// before). `pick(key, id, row)` says what becomes of each row of the world this receiver may
    /// get (`row`: its place among the world's rows, [`Steps::row`]). A row it holds that the
    /// world no longer has is written as removed (streamed out, in a key without null rows). A
    /// On error `out` is left as it was.
    pub fn encode(
        &mut self,
        schema: &SnapshotSchema,
        target: &Frame,
        held: Option<&Held>,
        mut pick: impl FnMut(u8, u32, usize) -> Pick,
        out: &mut Vec<u8>,
        into: &mut Held,
    ) -> Result<(), PackError> {
        let mut picks = std::mem::take(&mut self.picks);
        picks.clear();
        if let Some(world) = self.kept.back() {
            for rows in &world.keys {
                for (k, &id) in rows.ids.iter().enumerate() {
                    match pick(rows.key, id, rows.start + k) {
                        Pick::Hold => {}
                        p => picks.push((rows.start + k, p)),
                    }
                }
            }
        }
        let written = self.encode_picked(schema, target, held, &picks, out, into);
        self.picks = picks;
        written
    }

    /// As [`Worlds::encode`], with what becomes of each row listed instead of asked: `picks` by
    /// rising row ([`Steps::row`]), a row not listed held ([`Pick::Hold`]). A host that knows
    /// which rows differ from what the receiver holds ([`Worlds::changes`]) and which it does
    /// not see lists those alone, and the rows no frame changes cost nothing.
    pub fn encode_picked(
        &mut self,
        schema: &SnapshotSchema,
        target: &Frame,
        held: Option<&Held>,
        picks: &[(usize, Pick)],
        out: &mut Vec<u8>,
        into: &mut Held,
    ) -> Result<(), PackError> {
        debug_assert!(picks.is_sorted_by_key(|(r, _)| *r), "picks by rising row");
        let remap = held.and_then(|h| self.remap(h));
        let held = held.zip(remap);
        let start = out.len();
        put_header(target.seq, held.map_or(0, |(h, _)| h.seq), target.server_time_ms, target.player.as_ref(), out);
        into.seq = target.seq;
        into.generation = self.kept.back().map_or(0, |w| w.generation);
        into.ids = self.kept.back().map_or_else(|| Arc::from([]), |w| w.row_ids.clone());
        into.versions.clear();
        into.versions.resize(self.kept.back().map_or(0, |w| w.rows), WHOLE);
        for (name, bs) in schema.keys() {
            if is_delta_coded(bs) {
                self.encode_key(bs, held, picks, out, into);
            } else if let Some(block) = target.block(bs.id).filter(|b| !b.is_empty())
                && let Err(e) = pack_block(name, bs, block, out)
            {
                out.truncate(start);
                into.versions.fill(WHOLE);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Writes key `bs`'s block of the newest world's rows against what the receiver holds
    /// (`held`, with the remap of its world) as `picks` (all the world's, by row) say, nothing
    /// when there is nothing to say.
    fn encode_key(
        &mut self,
        bs: &BlockSchema,
        held: Option<(&Held, usize)>,
        picks: &[(usize, Pick)],
        out: &mut Vec<u8>,
        into: &mut Held,
    ) {
        let world = self.kept.back();
        let n = world.and_then(|w| w.keys.iter().position(|k| k.key == bs.id));
        let rows = world.zip(n).map(|(w, n)| &w.keys[n]);
        let (ids, versions) = rows.map_or((&[][..], &[][..]), |r| (&r.ids[..], &r.versions[..]));
        let first = rows.map_or(0, |r| r.start);
        let held = held.map(|(h, m)| (h, &self.remaps[m]));
        // The rows it holds that the world no longer has, by id.
        let gone = held.map_or(&[][..], |(_, m)| {
            let from = m.gone.partition_point(|g| g.0 < bs.id);
            let to = m.gone.partition_point(|g| g.0 <= bs.id);
            &m.gone[from..to]
        });
        let holds = |j: u32| held.is_some_and(|(h, _)| h.versions[j as usize] != WHOLE);
        // The entries go straight into `out`, after the key id and a one-byte count (the count
        // is known at the end; one of 128 or more takes more bytes, made room for then).
        let start = out.len();
        out.push(bs.id);
        out.push(0);
        let mut count = 0u64;
        let mut next = 0u64;
        let mut head = |out: &mut Vec<u8>, id: u32, op: u64| {
            put_varint(out, (u64::from(id) - next) << 2 | op);
            next = u64::from(id) + 1;
            count += 1;
        };
        let gone_op = if bs.kind.has_null() { OP_REMOVED } else { OP_STREAMED_OUT };
        // What the receiver holds of each row: what it keeps of the rows not listed, and is
        // overwritten below for those listed.
        let held_now = &mut into.versions[first..first + ids.len()];
        match held {
            Some((h, m)) => m.versions(h, first..first + ids.len(), held_now),
            None => held_now.fill(WHOLE),
        }
        let listed = &picks[picks.partition_point(|(r, _)| *r < first)..];
        let listed = &listed[..listed.partition_point(|(r, _)| *r < first + ids.len())];
        let mut g = 0;
        for &(r, mut pick) in listed {
            let k = r - first;
            let (id, now) = (ids[k], versions[k]);
            while g < gone.len() && gone[g].1 < id {
                if holds(gone[g].2) {
                    head(out, gone[g].1, gone_op);
                }
                g += 1;
            }
            let version = held_now[k];
            match pick {
                // As it was, and as the receiver holds it.
                Pick::Update if version == now => continue,
                Pick::Resend(Version(v)) if v == now => pick = Pick::Update,
                _ => {}
            }
            let has = version != WHOLE;
            if let Pick::Resend(Version(v)) = pick {
                // What it was at `v`, against what the receiver holds.
                let n = n.expect("a row of the world");
                self.scratch.clear();
                match resend(&self.kept, n, k, v, version, &mut self.scratch) {
                    Some(What::Same) => {}
                    Some(What::Changed) => head(out, id, OP_CHANGED),
                    Some(What::Whole) => head(out, id, OP_WHOLE),
                    None => pick = Pick::Update,
                }
                out.extend_from_slice(&self.scratch);
            }
            held_now[k] = match (pick, has) {
                (Pick::Resend(Version(v)), _) => v,
                (Pick::Update, true) if version == now => now,
                (Pick::Update, _) => {
                    let n = n.expect("a row of the world");
                    let d = diff(&self.kept, &mut self.diffs, n, k, version);
                    match d.what {
                        What::Same => {}
                        What::Changed => head(out, id, OP_CHANGED),
                        What::Whole => head(out, id, OP_WHOLE),
                    }
                    out.extend_from_slice(self.diffs.payload(&d));
                    now
                }
                (Pick::Hold, true) => version,
                (Pick::Out, true) => {
                    head(out, id, OP_STREAMED_OUT);
                    WHOLE
                }
                (Pick::Hold | Pick::Out, false) => WHOLE,
            };
        }
        for &(_, id, j) in &gone[g..] {
            if holds(j) {
                head(out, id, gone_op);
            }
        }
        if count == 0 {
            out.truncate(start);
        } else if count < 0x80 {
            out[start + 1] = count as u8;
        } else {
            let mut varint = Vec::with_capacity(3);
            put_varint(&mut varint, count);
            out.splice(start + 1..start + 2, varint);
        }
    }

    /// The place of row `row` (of key `bs`) and its rate, in units and units a second, as a
    /// receiver holding `held` decodes them, `held` being of the newest world; `None` for a row
    /// it does not hold, whose version is no longer kept, or of a key with no place counted in
    /// units.
    pub fn held_place(&self, bs: &BlockSchema, held: &Held, row: usize) -> Option<([f32; 2], [f32; 2])> {
        let newest = self.kept.back().filter(|w| w.generation == held.generation)?;
        let version = held.version(row)?;
        let &(key, id) = held.ids.get(row)?;
        let rows = newest.key_rows(key).filter(|k| k.key == bs.id)?;
        let numbers = numbers_at(&self.kept, key, rows.width, id, version, row - rows.start)?;
        rows.fields.place(numbers)
    }

    /// The world a receiver holding `held` has, as the host believes it: its rows as they
    /// decode (`f32` on their steps), by key. `None` when a world a version it holds was set in is
    /// no longer kept.
    pub fn held_world(&self, schema: &SnapshotSchema, held: &Held) -> Option<Frame> {
        let mut blocks: Vec<(u8, Block)> = Vec::new();
        for (&(key, id), &version) in held.ids.iter().zip(&held.versions).filter(|(_, v)| **v != WHOLE) {
            let (_, bs) = schema.by_id(key)?;
            if blocks.last().is_none_or(|b| b.0 != key) {
                blocks.push((key, Block::empty(bs.kind)));
            }
            let set_in = by_generation(&self.kept, version)?.key_rows(key)?;
            let j = set_in.ids.binary_search(&id).ok()?;
            let row: Result<Vec<_>, _> =
                set_in.row(j).iter().enumerate().map(|(i, &n)| field_value(bs, i, n, 0)).collect();
            blocks.last_mut()?.1.push(id, Some(row.ok()?));
        }
        Some(Frame { seq: held.seq, server_time_ms: 0.0, player: None, blocks, streamed_out: Vec::new() })
    }
}

/// What [`Worlds::add`] needs of a schema's delta-coded keys, by rising id, worked out once per
/// schema ([`SnapshotSchema::stamp`]).
#[derive(Clone, Debug, Default)]
struct Layout {
    /// The schema it is of; 0 (no schema's) for none.
    stamp: u64,
    keys: Vec<KeyLayout>,
}

#[derive(Clone, Debug)]
struct KeyLayout {
    id: u8,
    /// The row's fields, and how many of them a row must have (the rest an optional tail).
    width: usize,
    required: usize,
    fields: Fields,
    /// Per field: its type, and the quantisation of an `f32`.
    numbering: Vec<(FieldType, Quant)>,
}

impl Layout {
    fn of(schema: &SnapshotSchema) -> Layout {
        let mut keys: Vec<KeyLayout> = schema
            .keys()
            .map(|(_, bs)| bs)
            .filter(|bs| is_delta_coded(bs))
            .map(|bs| KeyLayout {
                id: bs.id,
                width: bs.width(),
                required: bs.required_width(),
                fields: Fields::of(bs),
                numbering: bs.fields.iter().map(|f| (f.ty, f.quant.unwrap_or(Quant::DEFAULT))).collect(),
            })
            .collect();
        keys.sort_by_key(|k| k.id);
        Layout { stamp: schema.stamp(), keys }
    }
}

/// Fills `keys` (their buffers reused) with the world as of `frame` over `prev` (the newest world
/// before it): its rows over the last world's, which it carries over (`carry`) or drops (a whole
/// world), each row's numbers keeping their version while they stay the same and taking
/// `generation` when they change. The rows it has; `None` when a row of the frame does not fit
/// its key (of neither width, or a field of another type).
fn fill(
    layout: &Layout,
    (frame, carry): (&Frame, bool),
    prev: Option<&Steps>,
    generation: u32,
    keys: &mut Vec<KeyRows>,
) -> Option<usize> {
    let mut total = 0;
    keys.truncate(layout.keys.len());
    let mut now = Vec::new();
    for (n, kl) in layout.keys.iter().enumerate() {
        if keys.len() == n {
            keys.push(KeyRows {
                key: kl.id,
                width: 0,
                fields: kl.fields,
                start: 0,
                ids: Vec::new(),
                versions: Vec::new(),
                numbers: Vec::new(),
                last: Vec::new(),
            });
        }
        let rows = &mut keys[n];
        rows.key = kl.id;
        rows.width = kl.width;
        rows.fields = kl.fields;
        rows.start = total;
        rows.ids.clear();
        rows.versions.clear();
        rows.numbers.clear();
        rows.last.clear();
        let was = prev.and_then(|p| p.key_rows(kl.id)).filter(|w| w.width == rows.width);
        let was_ids = was.map_or(&[][..], |w| &w.ids[..]);
        let block = frame.block(kl.id);
        if !by_id_into(block, &mut now) {
            // Rows the order drops (an id named again) are checked all the same.
            let all_fit = block.into_iter().flat_map(|b| b.entries()).all(|(_, row)| row.is_none_or(|r| fits(kl, r)));
            if !all_fit {
                return None;
            }
        }
        let (count, width) = (now.len() + was_ids.len(), rows.width);
        rows.ids.reserve(count);
        rows.versions.reserve(count);
        rows.last.reserve(count);
        rows.numbers.reserve(count * width);
        let mut j = 0;
        // The rows of the last world before id `until` (all of them: `None`), which the frame
        // does not name: carried over, or gone with a whole world.
        let carry_to = |rows: &mut KeyRows, until: Option<u32>, j: &mut usize| {
            while *j < was_ids.len() && until.is_none_or(|id| was_ids[*j] < id) {
                if let Some(w) = was.filter(|_| carry) {
                    rows.ids.push(w.ids[*j]);
                    rows.versions.push(w.versions[*j]);
                    rows.numbers.extend_from_slice(w.row(*j));
                    rows.last.push(w.last[*j]);
                }
                *j += 1;
            }
        };
        for &(id, row) in &now {
            carry_to(rows, Some(id), &mut j);
            let there = (was_ids.get(j) == Some(&id)).then_some(j);
            j += usize::from(there.is_some());
            let Some(row) = row else { continue };
            if row.len() != kl.width && row.len() != kl.required {
                return None;
            }
            let from = rows.numbers.len();
            for (f, &(ty, quant)) in kl.numbering.iter().enumerate() {
                rows.numbers.push(match row.get(f) {
                    Some(&FieldValue::F32(x)) if ty == FieldType::F32 => held_steps(quant, x),
                    Some(v) if v.ty() == ty => i64::from(v.as_u32()),
                    // An absent optional tail.
                    None => 0,
                    Some(_) => return None,
                });
            }
            let same = there.zip(was).filter(|&(j, w)| w.row(j) == &rows.numbers[from..]);
            // What its last change's entry takes (or its whole row's): a receiver that holds an
            // older version is weighed by it.
            let last = match same {
                Some((j, w)) => w.last[j],
                None => measure(rows, &rows.numbers[from..], there.zip(was).map(|(j, w)| w.row(j))),
            };
            rows.ids.push(id);
            rows.versions.push(same.map_or(generation, |(j, w)| w.versions[j]));
            rows.last.push(last);
        }
        carry_to(rows, None, &mut j);
        total += rows.ids.len();
    }
    Some(total)
}

/// Whether `row` fits key `kl` ([`super::check_row`]'s rules).
fn fits(kl: &KeyLayout, row: &[FieldValue]) -> bool {
    (row.len() == kl.width || row.len() == kl.required)
        && row.iter().zip(&kl.numbering).all(|(v, (ty, _))| v.ty() == *ty)
}

/// The steps of `x` as a receiver holds them: the steps of the value they decode to, which are
/// the steps themselves while an `f32` carries them exactly (below 2^22 steps, and every angle
/// of at most 16 bits), and are worked out by the round trip beyond.
#[inline]
fn held_steps(quant: Quant, x: f32) -> i64 {
    let q = steps(quant, x);
    match quant {
        Quant::PerUnit(_) if q.unsigned_abs() >= 1 << 22 => steps(quant, value(quant, q)),
        Quant::AngleBits(bits) if bits > 16 => steps(quant, value(quant, q)),
        _ => q,
    }
}

/// The numbers row `id` of key `key` (of `width` fields) had at `version`, and where: in the
/// world that version was set in, or (a version older than the worlds kept) in the newest world
/// that still had it.
fn numbers_at(kept: &VecDeque<Steps>, key: u8, width: usize, id: u32, version: u32, hint: usize) -> Option<&[i64]> {
    fn find(w: &Steps, key: u8, width: usize, id: u32, hint: usize) -> Option<(&KeyRows, usize)> {
        let rows = w.key_rows(key).filter(|r| r.width == width)?;
        // Rows seldom come and go: the row is mostly where it is in the newest world.
        let j = if rows.ids.get(hint) == Some(&id) { Ok(hint) } else { rows.ids.binary_search(&id) };
        j.ok().map(|j| (rows, j))
    }
    let find = |w| find(w, key, width, id, hint);
    if let Some((rows, j)) = by_generation(kept, version).and_then(find) {
        return (rows.versions[j] == version).then(|| rows.row(j));
    }
    // A version set in a world no longer kept: its numbers stay in every world until the row
    // changes, and a row's versions only grow from one world to the next (a row that went and
    // came back has a newer one), so the oldest world kept has them, or none has.
    let (rows, j) = find(kept.front()?)?;
    (rows.versions[j] == version).then(|| rows.row(j))
}

fn by_generation(kept: &VecDeque<Steps>, generation: u32) -> Option<&Steps> {
    let first = kept.front()?.generation;
    kept.get(generation.wrapping_sub(first) as usize).filter(|w| w.generation == generation)
}

/// Row `k` of key `n` of the newest world against `version` (what a receiver holds of it;
/// [`WHOLE`]: nothing), worked out once per frame and version.
/// The slot of row `k` of key `n` of the newest world against `version` in `diffs`.
#[inline]
fn slot(world: &Steps, diffs: &Diffs, n: usize, k: usize, version: u32) -> usize {
    // Versions older than the worlds kept share a slot: an entry there is for the one it says.
    let age = match version {
        WHOLE => diffs.ages - 1,
        v => (world.generation.wrapping_sub(v) as usize).min(diffs.ages - 2),
    };
    (world.keys[n].start + k) * diffs.ages + age
}

/// Row `k` of key `n` of the newest world against `version`, if worked out already this frame.
#[inline]
fn cached(kept: &VecDeque<Steps>, diffs: &Diffs, n: usize, k: usize, version: u32) -> Option<Diff> {
    cached_in(kept.back()?, diffs, n, k, version)
}

/// [`cached`] of `world`, the newest.
#[inline]
fn cached_in(world: &Steps, diffs: &Diffs, n: usize, k: usize, version: u32) -> Option<Diff> {
    let (stamp, at) = diffs.slots[slot(world, diffs, n, k, version)];
    (stamp == diffs.stamp).then(|| diffs.entries[at as usize]).filter(|d| d.version == version)
}

/// Row `k` of key `n` of the newest world against `version` (what a receiver holds of it;
/// [`WHOLE`]: nothing), worked out once per frame and version.
fn diff(kept: &VecDeque<Steps>, diffs: &mut Diffs, n: usize, k: usize, version: u32) -> Diff {
    if let Some(d) = cached(kept, diffs, n, k, version) {
        return d;
    }
    let world = kept.back().expect("a world");
    let rows = &world.keys[n];
    let id = rows.ids[k];
    let base = (version != WHOLE).then(|| numbers_at(kept, rows.key, rows.width, id, version, k)).flatten();
    let drift = base.and_then(|base| rows.fields.drift(rows.row(k), base));
    let d = Diff { version, drift, ..compute(rows, k, base, &mut diffs.bytes) };
    let at = slot(world, diffs, n, k, version);
    diffs.slots[at] = (diffs.stamp, diffs.entries.len() as u32);
    diffs.entries.push(d);
    d
}

/// Writes row `k` of key `n` of the newest world as it was at version `then`, against `held`
/// (what the receiver holds of it; [`WHOLE`], or a version no longer kept: nothing), into `out`:
/// its entry but for the head. `None` (nothing written) when no world kept has the row at `then`.
fn resend(kept: &VecDeque<Steps>, n: usize, k: usize, then: u32, held: u32, out: &mut Vec<u8>) -> Option<What> {
    let rows = &kept.back()?.keys[n];
    let numbers = |version| numbers_at(kept, rows.key, rows.width, rows.ids[k], version, k);
    let row = numbers(then)?;
    // A version held that is no longer kept: the row whole.
    let base = (held != WHOLE).then(|| numbers(held)).flatten();
    Some(write_entry(rows, row, base, out).what)
}

/// Writes row `k` of `rows` against `base` (the numbers a receiver holds; `None`: nothing) into
/// `out`: its entry but for the head (the diff's version is the caller's to set).
fn compute(rows: &KeyRows, k: usize, base: Option<&[i64]>, out: &mut Vec<u8>) -> Diff {
    write_entry(rows, rows.row(k), base, out)
}

/// The bytes and the magnitude of `row`'s entry against `base` ([`write_entry`] without
/// writing it).
fn measure(rows: &KeyRows, row: &[i64], base: Option<&[i64]>) -> (u32, u64) {
    let len = |v: u64| (64 - v.max(1).leading_zeros()).div_ceil(7);
    match base {
        Some(base) => {
            let (mut mask, mut bytes, mut magnitude) = (0u64, 0, 0u64);
            for (i, (&a, &b)) in row.iter().zip(base).enumerate().filter(|(_, (a, b))| a != b) {
                let d = rows.fields.difference(i, a, b);
                mask |= 1 << i;
                magnitude = magnitude.max(d.unsigned_abs());
                bytes += len(zigzag(d));
            }
            (bytes + len(mask), magnitude)
        }
        None => (row.iter().enumerate().map(|(i, &v)| len(rows.fields.travelling(i, v))).sum(), u64::MAX),
    }
}

/// Writes `row` (numbers of a row of `rows`' key) against `base` into `out`: its entry but for the
/// head (the diff's version is the caller's to set).
fn write_entry(rows: &KeyRows, row: &[i64], base: Option<&[i64]>, out: &mut Vec<u8>) -> Diff {
    let start = out.len();
    // At most a varint per field and one for the bitmap.
    out.reserve(10 * (row.len() + 1));
    let (what, magnitude) = match base {
        Some(base) if base == row => (What::Same, 0),
        Some(base) => {
            let mut mask = 0u64;
            for i in 0..row.len() {
                mask |= u64::from(row[i] != base[i]) << i;
            }
            put_varint(out, mask);
            let mut magnitude = 0u64;
            let mut rest = mask;
            while rest != 0 {
                let i = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                let d = rows.fields.difference(i, row[i], base[i]);
                magnitude = magnitude.max(d.unsigned_abs());
                put_varint(out, zigzag(d));
            }
            (What::Changed, magnitude)
        }
        None => {
            for (i, &v) in row.iter().enumerate() {
                put_varint(out, rows.fields.travelling(i, v));
            }
            (What::Whole, u64::MAX)
        }
    };
    Diff { version: WHOLE, what, magnitude, drift: None, start: start as u32, len: (out.len() - start) as u32 }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn the_short_way_to_held_steps_is_the_round_trip(x in any::<f32>(), n in 1u32..=Quant::MAX_PER_UNIT, bits in Quant::ANGLE_BITS) {
            for quant in [Quant::PerUnit(n), Quant::AngleBits(bits)] {
                prop_assert_eq!(held_steps(quant, x), steps(quant, value(quant, steps(quant, x))), "{:?} of {}", quant, x);
            }
        }
    }

    #[test]
    fn a_row_written_again_is_as_it_was() {
        let s = crate::delta::tests::one_x_schema();
        let f = |seq: u32, x: f32| Frame {
            seq,
            server_time_ms: 0.0,
            player: None,
            blocks: vec![(1, Block::Indexed8(vec![(2, Some(vec![FieldValue::F32(x)]))]))],
            streamed_out: Vec::new(),
        };
        let mut w = Worlds::new(8);
        let first = Held::all(w.push(&s, &f(1, 1.0)).unwrap());
        let mut all = Vec::new();
        w.push(&s, &f(2, 2.0)).unwrap();
        w.changes(None, |_| true, &mut all, &mut Vec::new());
        let then = all[0].version;
        w.push(&s, &f(3, 3.0)).unwrap();
        let (mut out, mut held) = (Vec::new(), Held::default());
        w.encode(&s, &f(3, 3.0), Some(&first), |_, _, _| Pick::Resend(then), &mut out, &mut held).unwrap();
        let base = crate::delta::world(&s, None, &f(1, 1.0));
        let back = crate::delta::decode(&s, &out, |seq| (seq == 1).then_some(&base)).unwrap();
        assert_eq!(back.block(1), Some(&Block::Indexed8(vec![(2, Some(vec![FieldValue::F32(2.0)]))])));
    }
}
