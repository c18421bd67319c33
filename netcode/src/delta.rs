//! Delta snapshot frames, format version 6: a frame written against one its receiver already holds.
//!
//! A format 5 frame ([`crate::snapshot`]) carries every row of every hot key, 30 times a second,
//! whether it changed or not. A format 6 frame names a **baseline**, a frame the receiver has
//! acknowledged, and carries only what differs from it:
//!
//! - a row equal to the baseline's (after quantisation) is not written at all;
//! - a changed row carries a bitmap of its changed fields and each one's difference from the
//!   baseline, in whole quantisation steps, as a variable-length integer (an entity that moved a
//!   few units is a few bytes);
//! - a row the baseline does not have is written whole; a removal is one byte.
//!
//! A frame without a baseline (a **keyframe**) is the same encoding against nothing: every row
//! written whole. The receiver decodes a frame into the whole world as it now stands (the
//! baseline's rows with this frame's changes applied), so what it keeps as the next baseline
//! and what its interpolation buffer reads are plain [`Frame`]s, as format 5 gives.
//!
//! Only hot keys with ids (`indexed8`, `indexed32`, `indexedNoNull8`) are delta-coded. Event
//! keys and hot `list16` keys are written exactly as format 5 writes them, in the same body.
//!
//! [`encode`] writes one frame against one baseline. A host writing every frame for many
//! receivers, each against what it holds, keeps its recent worlds in [`Worlds`] instead: each
//! row gets a version, a receiver's state is a version per row ([`Held`]), and an entry is
//! worked out once for all receivers that hold the same version of the row.
//!
//! # Quantisation
//!
//! Every `f32` field of a delta-coded key travels as a whole number of steps of its schema's
//! [`Quant`] (hundredths, format 5's precision, when the schema names none): `perUnit n` is
//! `round(v·n)`, `angleBits b` is the nearest of `2^b` steps of the circle, decoded into
//! `[-π, π)`. [`quantise_row`] is that rounding; integers travel exactly. The player block is
//! never quantised: prediction needs it exact.
//!
//! # Frame layout
//!
//! | offset | size | field | notes |
//! |---|---|---|---|
//! | 0 | 1 | `version` | [`DELTA_FORMAT_VERSION`] (6) |
//! | 1 | 4 | `seq` | u32, as format 5 |
//! | 5 | 4 | `baseline` | u32, the seq of the baseline frame; 0 for a keyframe |
//! | 9 | 8 | `serverTime` | f64, as format 5 |
//! | 17 | 1 | `flags` | as format 5 |
//! | 18 | 36 | player block | as format 5, only with flag bit 0 |
//! | … | … | body | `[u8 keyId][block]` per key with something to say, to the end of the frame |
//!
//! A delta-coded key's block is a varint entry count, then its entries in rising id order,
//! each a varint `gap << 2 | op` (`gap`: the id less the previous entry's id plus one; the first
//! entry's gap is its id) and the op's payload:
//!
//! | op | meaning | payload |
//! |---|---|---|
//! | 0 | removed | none (only kinds with null rows) |
//! | 1 | whole row | every field: `f32` as a zigzag varint of its steps, integers as a varint |
//! | 2 | changed | a varint bitmap (bit `i`: field `i` changed, at least one), then per changed field the zigzag varint of its difference from the baseline's (angles: the shorter way round) |
//! | 3 | streamed out | none: the row left the receiver's view (the entity lives on; [`Frame::streamed_out`] lists it) |
//!
//! Varints are LEB128 (seven bits a byte, low first, at most ten bytes). A key absent from the
//! body is unchanged. The decoder checks everything: a baseline it does not hold, an op a key's
//! kind does not allow, a change to a row the baseline does not have, a bitmap naming fields
//! past the row, a value out of its type's range, an id past the kind's, and any read past the
//! end are [`DecodeError`]s; nothing panics on any input.

use std::collections::BTreeMap;
use std::f64::consts::{PI, TAU};

use crate::bytes::{Reader, WriteBe};
use crate::schema::{BlockClass, BlockSchema, FieldType, Quant, SnapshotSchema};
use crate::snapshot::{
    Block, DecodeError, FieldValue, Frame, PackError, PlayerBlock, Row, put_player, read_player, round2, unpack_block,
};

mod reckon;
mod worlds;

pub use reckon::{RECKON_MS, Reckoner};
pub use worlds::{Change, Drift, Held, Pick, Steps, Version, Worlds};

/// The delta frame's format version.
pub const DELTA_FORMAT_VERSION: u8 = 6;

/// Bytes of a delta frame's header without a player block.
pub const DELTA_HEADER_LEN: usize = 18;

/// The most steps a value is carried as, either way (2^53).
const STEPS_LIMIT: f64 = 9_007_199_254_740_992.0;

const OP_REMOVED: u64 = 0;
const OP_WHOLE: u64 = 1;
const OP_CHANGED: u64 = 2;
const OP_STREAMED_OUT: u64 = 3;

/// Whether a key is delta-coded (hot, with ids); others travel as format 5 writes them.
pub fn is_delta_coded(bs: &BlockSchema) -> bool {
    bs.class == BlockClass::Hot && bs.kind.has_ids()
}

/// The whole number of steps of `quant` nearest to `v`, halves away from zero (non-finite
/// values give 0 or saturate; an angle's steps are taken round the circle, `0..2^bits`).
/// Plain arithmetic, no library call: it runs for every field of every row of every frame.
fn steps(quant: Quant, v: f32) -> i64 {
    // Within ±2^53 steps, so that no difference of two of them overflows.
    let nearest = |x: f64| (x.clamp(-STEPS_LIMIT, STEPS_LIMIT) + 0.5f64.copysign(x)) as i64;
    match quant {
        Quant::PerUnit(n) => nearest(f64::from(v) * f64::from(n)),
        Quant::AngleBits(bits) => {
            let full = 1i64 << bits;
            nearest(f64::from(v) * (full as f64 / TAU)) & (full - 1)
        }
    }
}

/// The value of `q` steps of `quant` (an angle in `[-π, π)`).
fn value(quant: Quant, q: i64) -> f32 {
    match quant {
        Quant::PerUnit(n) => (q as f64 / f64::from(n)) as f32,
        Quant::AngleBits(bits) => {
            let full = 1i64 << bits;
            let a = q.rem_euclid(full) as f64 * TAU / full as f64;
            (if a >= PI { a - TAU } else { a }) as f32
        }
    }
}

/// The row as a delta frame carries it: of full width (an absent optional tail as zeros),
/// every `f32` on its quantisation's step.
pub fn quantise_row(bs: &BlockSchema, row: &[FieldValue]) -> Row {
    bs.fields
        .iter()
        .enumerate()
        .map(|(i, f)| match row.get(i).copied().unwrap_or(FieldValue::zero(f.ty)) {
            FieldValue::F32(v) => {
                let quant = f.quant.unwrap_or(Quant::DEFAULT);
                FieldValue::F32(value(quant, steps(quant, v)))
            }
            other => other,
        })
        .collect()
}

/// A format 5 row as its unpacker returns it: full width, every `f32` through [`round2`].
fn plain_row(bs: &BlockSchema, row: &[FieldValue]) -> Row {
    bs.fields
        .iter()
        .enumerate()
        .map(|(i, f)| match row.get(i).copied().unwrap_or(FieldValue::zero(f.ty)) {
            FieldValue::F32(v) => FieldValue::F32(round2(v)),
            other => other,
        })
        .collect()
}

/// A block of a key that is not delta-coded as a delta frame carries it: its rows as format 5's
/// unpacker returns them (full width, every `f32` through [`round2`]).
pub fn plain_block(bs: &BlockSchema, block: &Block) -> Block {
    let mut plain = Block::empty(bs.kind);
    for (id, row) in block.entries() {
        plain.push(id.unwrap_or_default(), row.map(|r| plain_row(bs, r)));
    }
    plain
}

/// A key's rows by id: `None` for a null (removed) row.
type Rows = BTreeMap<u32, Option<Row>>;

/// The live rows of a block (its null rows left out).
fn live_rows(block: Option<&Block>) -> BTreeMap<u32, &Row> {
    block.into_iter().flat_map(|b| b.entries()).filter_map(|(id, row)| Some((id?, row?))).collect()
}

/// A block's rows by rising id, the last of each id (`None`: null), as a map would keep them.
fn by_id(block: Option<&Block>) -> Vec<(u32, Option<&Row>)> {
    let mut rows: Vec<(u32, Option<&Row>)> =
        block.into_iter().flat_map(|b| b.entries()).map(|(id, row)| (id.unwrap_or_default(), row)).collect();
    if !rows.is_sorted_by(|a, b| a.0 < b.0) {
        // Stable: of equal ids the last stays last, and only it is kept.
        rows.sort_by_key(|(id, _)| *id);
        let mut kept: Vec<(u32, Option<&Row>)> = Vec::with_capacity(rows.len());
        for row in rows {
            match kept.last_mut() {
                Some(last) if last.0 == row.0 => *last = row,
                _ => kept.push(row),
            }
        }
        rows = kept;
    }
    rows
}

/// A block's live rows (its null rows left out) by rising id, the last of each id: what a
/// receiver's world holds of the block, in the order [`Steps`] keeps them.
pub fn live_by_id(block: Option<&Block>) -> Vec<(u32, &Row)> {
    by_id(block).into_iter().filter_map(|(id, row)| Some((id, row?))).collect()
}

/// Walks two id-sorted lists together: `f(id, in a, in b)` for every id of either, rising.
fn merge<A: Copy, B: Copy>(a: &[(u32, A)], b: &[(u32, B)], mut f: impl FnMut(u32, Option<A>, Option<B>)) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let ida = a.get(i).map_or(u64::MAX, |x| u64::from(x.0));
        let idb = b.get(j).map_or(u64::MAX, |x| u64::from(x.0));
        let id = ida.min(idb);
        let x = (ida == id).then(|| a[i].1);
        let y = (idb == id).then(|| b[j].1);
        i += usize::from(x.is_some());
        j += usize::from(y.is_some());
        f(id as u32, x, y);
    }
}

/// A block of `bs`'s kind from rows by id.
fn block_of(bs: &BlockSchema, rows: Rows) -> Block {
    let mut block = Block::empty(bs.kind);
    for (id, row) in rows {
        block.push(id, row);
    }
    block
}

/// The world as a receiver holding `baseline` knows it once `frame` is applied: what
/// [`decode`] returns for `frame` encoded against `baseline`. A delta-coded key keeps the
/// baseline's rows, with this frame's rows (quantised) over them and its removals as null
/// rows; other keys are this frame's blocks as format 5 carries them. Blocks in key id order.
pub fn world(schema: &SnapshotSchema, baseline: Option<&Frame>, frame: &Frame) -> Frame {
    let mut blocks = Vec::new();
    for (_, bs) in schema.keys() {
        let current = frame.block(bs.id);
        let block = if is_delta_coded(bs) {
            // A frame's last row of an id is the one that counts, as the encoder reads it.
            let now = by_id(current);
            let was = live_by_id(baseline.and_then(|b| b.block(bs.id)));
            let mut block = Block::empty(bs.kind);
            merge(&now, &was, |id, now, was| {
                let row = match (now, was) {
                    (Some(Some(row)), _) => Some(quantise_row(bs, row)),
                    (Some(None), Some(_)) => None,
                    (None, Some(was)) => Some(was.clone()),
                    (Some(None), None) | (None, None) => return,
                };
                block.push(id, row);
            });
            block
        } else {
            let Some(block) = current else { continue };
            plain_block(bs, block)
        };
        if !block.is_empty() {
            blocks.push((bs.id, block));
        }
    }
    blocks.sort_by_key(|(id, _)| *id);
    Frame {
        seq: frame.seq,
        server_time_ms: frame.server_time_ms,
        player: frame.player,
        blocks,
        streamed_out: Vec::new(),
    }
}

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn varint(r: &mut Reader<'_>, what: &'static str) -> Result<u64, DecodeError> {
    let at = r.position();
    let mut v = 0u64;
    for k in 0..10 {
        let b = r.u8(what)?;
        if k == 9 && b > 1 {
            return Err(DecodeError::Delta { at, what: "a varint longer than 64 bits" });
        }
        v |= u64::from(b & 0x7f) << (7 * k);
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(DecodeError::Delta { at, what: "a varint longer than 64 bits" })
}

/// Writes the header of a delta frame (and the player block, if any) into `out`.
fn put_header(seq: u32, baseline: u32, server_time_ms: f64, player: Option<&PlayerBlock>, out: &mut Vec<u8>) {
    out.push(DELTA_FORMAT_VERSION);
    out.put_u32(seq);
    out.put_u32(baseline);
    out.extend_from_slice(&server_time_ms.to_be_bytes());
    put_player(player, out);
}

/// Checks a row against its key's fields: full or required width, each value of its type.
fn check_row(name: &str, bs: &BlockSchema, i: usize, row: &[FieldValue]) -> Result<(), PackError> {
    if row.len() != bs.width() && row.len() != bs.required_width() {
        return Err(PackError::RowWidth { key: name.to_owned(), row: i, got: row.len(), want: bs.width() });
    }
    for (v, f) in row.iter().zip(&bs.fields) {
        if v.ty() != f.ty {
            return Err(PackError::FieldType {
                key: name.to_owned(),
                row: i,
                field: f.name.clone(),
                want: f.ty,
                got: v.ty(),
            });
        }
    }
    Ok(())
}

/// A field's steps (`f32`) or value (integers), as one number.
fn number(bs: &BlockSchema, i: usize, v: FieldValue) -> i64 {
    match v {
        FieldValue::F32(x) => steps(bs.fields[i].quant.unwrap_or(Quant::DEFAULT), x),
        other => i64::from(other.as_u32()),
    }
}

/// What the encoder's inner loops need of a key's fields, looked up once per key.
#[derive(Clone, Copy, Debug)]
struct Fields {
    /// Bit `i`: field `i` is an `f32` (its steps travel zigzagged).
    floats: u64,
    /// Per field: the full circle of an angle's steps, 0 for any other field.
    circles: [i64; crate::schema::MAX_DELTA_FIELDS],
    /// The key's place, when both its fields are counted in units.
    point: Option<PointFields>,
}

/// A key's place ([`BlockSchema::point`]): its `x` and `y` fields, each with the units of its
/// step, and their rate fields ([`FieldSchema::rate`](crate::schema::FieldSchema::rate)) with
/// the units a second of their steps.
#[derive(Clone, Copy, Debug)]
struct PointFields {
    x: (usize, f64),
    y: (usize, f64),
    rate_x: Option<(usize, f64)>,
    rate_y: Option<(usize, f64)>,
}

impl Fields {
    fn of(bs: &BlockSchema) -> Fields {
        let unit = |i: usize| match bs.fields.get(i)?.quant.unwrap_or(Quant::DEFAULT) {
            Quant::PerUnit(n) if n > 0 && i < crate::schema::MAX_DELTA_FIELDS => Some((i, 1.0 / f64::from(n))),
            _ => None,
        };
        let rate = |i: usize| unit(bs.rate_of(i)?);
        let point = bs
            .point()
            .and_then(|(x, y)| Some(PointFields { x: unit(x)?, y: unit(y)?, rate_x: rate(x), rate_y: rate(y) }));
        let mut fields = Fields { floats: 0, circles: [0; crate::schema::MAX_DELTA_FIELDS], point };
        for (i, f) in bs.fields.iter().enumerate().take(crate::schema::MAX_DELTA_FIELDS) {
            if f.ty == FieldType::F32 {
                fields.floats |= 1 << i;
                if let Some(Quant::AngleBits(bits)) = f.quant {
                    fields.circles[i] = 1 << bits;
                }
            }
        }
        fields
    }

    /// The place of a row's numbers and its rate, in units and units a second; `None` for a
    /// key with no place counted in units.
    fn place(&self, numbers: &[i64]) -> Option<([f32; 2], [f32; 2])> {
        let p = self.point?;
        let at = |(i, unit): (usize, f64)| numbers.get(i).map_or(0.0, |&n| (n as f64 * unit) as f32);
        let rate = |r: Option<(usize, f64)>| r.map_or(0.0, at);
        Some(([at(p.x), at(p.y)], [rate(p.rate_x), rate(p.rate_y)]))
    }

    /// How a row's place now (`now`'s numbers) drifts from where a receiver holds it (`was`).
    fn drift(&self, now: &[i64], was: &[i64]) -> Option<Drift> {
        let p = self.point?;
        let off = |(i, unit): (usize, f64)| {
            now.get(i).zip(was.get(i)).map_or(0.0, |(a, b)| (a.wrapping_sub(*b) as f64 * unit) as f32)
        };
        let (_, rate) = self.place(was)?;
        Some(Drift { off: [off(p.x), off(p.y)], rate })
    }

    /// The difference `now − was` of field `i`, the shorter way round for an angle.
    #[inline]
    fn difference(&self, i: usize, now: i64, was: i64) -> i64 {
        match self.circles[i] {
            0 => now.wrapping_sub(was),
            full => {
                // Both on the circle, `0..full`, a power of two.
                let d = (now - was) & (full - 1);
                if d >= full / 2 { d - full } else { d }
            }
        }
    }

    /// Field `i`'s number as it travels in a whole row.
    #[inline]
    fn travelling(&self, i: usize, n: i64) -> u64 {
        if self.floats & (1 << i) != 0 { zigzag(n) } else { n as u64 }
    }
}

/// Encodes `target`, a world as [`world`] builds it, against `baseline` (`None`: a keyframe),
/// a world the receiver holds, into `out` (appended): what [`decode`] turns back into
/// `target`'s rows. A row of the baseline that `target` does not have is written as removed.
/// Non-delta-coded keys are written as `target` has them. On error `out` is left as it was.
///
/// A host encoding one world for many receivers keeps its [`Worlds`] and writes each
/// receiver's frame against what that receiver holds ([`Worlds::encode`]).
pub fn encode(
    schema: &SnapshotSchema,
    target: &Frame,
    baseline: Option<&Frame>,
    out: &mut Vec<u8>,
) -> Result<(), PackError> {
    let mut worlds = Worlds::new(2);
    let held = match baseline {
        Some(b) => Some(Held::all(worlds.push_world(schema, b)?)),
        None => None,
    };
    worlds.push_world(schema, target)?;
    worlds.encode(schema, target, held.as_ref(), |_, _, _| Pick::Update, out, &mut Held::default())
}

/// Checks a frame's blocks against the schema: known keys, each once, of their kind and row
/// count, and the rows of delta-coded keys of their fields' width and types.
fn check_frame(schema: &SnapshotSchema, frame: &Frame) -> Result<(), PackError> {
    let mut seen = [false; 256];
    for (id, block) in &frame.blocks {
        let (name, bs) = schema.by_id(*id).ok_or(PackError::UnknownKey(*id))?;
        if std::mem::replace(&mut seen[*id as usize], true) {
            return Err(PackError::DuplicateKey(name.to_owned()));
        }
        if block.kind() != bs.kind {
            return Err(PackError::KindMismatch { key: name.to_owned(), want: bs.kind, got: block.kind() });
        }
        if block.len() > bs.kind.max_rows() {
            return Err(PackError::TooManyRows { key: name.to_owned(), count: block.len(), max: bs.kind.max_rows() });
        }
        if is_delta_coded(bs) {
            for (i, (_, row)) in block.entries().enumerate() {
                if let Some(row) = row {
                    check_row(name, bs, i, row)?;
                }
            }
        }
    }
    Ok(())
}

/// The baseline seq a delta frame names (0: a keyframe), read from its header alone.
pub fn baseline_of(bytes: &[u8]) -> Result<u32, DecodeError> {
    let mut r = Reader::new(bytes);
    let version = r.u8("version")?;
    if version != DELTA_FORMAT_VERSION {
        return Err(DecodeError::Version { found: version });
    }
    r.u32("frame seq")?;
    Ok(r.u32("baseline seq")?)
}

/// Decodes a delta frame into the whole world as it now stands ([`world`]). `baseline(seq)`
/// gives the frame the receiver decoded with that seq, if it still holds it.
pub fn decode<'b>(
    schema: &SnapshotSchema,
    bytes: &[u8],
    baseline: impl FnOnce(u32) -> Option<&'b Frame>,
) -> Result<Frame, DecodeError> {
    let mut r = Reader::new(bytes);
    let version = r.u8("version")?;
    if version != DELTA_FORMAT_VERSION {
        return Err(DecodeError::Version { found: version });
    }
    let seq = r.u32("frame seq")?;
    let base_seq = r.u32("baseline seq")?;
    let server_time_ms = f64::from_be_bytes(r.array("server time")?);
    let player = read_player(&mut r)?;
    let base = match base_seq {
        0 => None,
        seq => Some(baseline(seq).ok_or(DecodeError::MissingBaseline { seq })?),
    };
    let mut blocks: BTreeMap<u8, Block> = BTreeMap::new();
    let mut streamed_out = Vec::new();
    let mut seen = [false; 256];
    while !r.is_empty() {
        let at = r.position();
        let key = r.u8("key id")?;
        let (_, bs) = schema.by_id(key).ok_or(DecodeError::UnknownKey { key, at })?;
        if std::mem::replace(&mut seen[key as usize], true) {
            return Err(DecodeError::DuplicateKey { key, at });
        }
        let block = if is_delta_coded(bs) {
            decode_delta_block(bs, base.and_then(|b| b.block(key)), &mut r, &mut streamed_out)?
        } else {
            unpack_block(bs, &mut r)?
        };
        if !block.is_empty() {
            blocks.insert(key, block);
        }
    }
    // Keys the frame says nothing of stand as in the baseline.
    for (_, bs) in schema.keys() {
        if is_delta_coded(bs) && !seen[bs.id as usize] {
            let rows: Rows =
                live_rows(base.and_then(|b| b.block(bs.id))).into_iter().map(|(id, r)| (id, Some(r.clone()))).collect();
            if !rows.is_empty() {
                blocks.insert(bs.id, block_of(bs, rows));
            }
        }
    }
    Ok(Frame { seq, server_time_ms, player, blocks: blocks.into_iter().collect(), streamed_out })
}

fn decode_delta_block(
    bs: &BlockSchema,
    base: Option<&Block>,
    r: &mut Reader<'_>,
    streamed_out: &mut Vec<(u8, u32)>,
) -> Result<Block, DecodeError> {
    let bad = |at: usize, what: &'static str| DecodeError::Delta { at, what };
    let mut rows: Rows = live_rows(base).into_iter().map(|(id, row)| (id, Some(row.clone()))).collect();
    let at = r.position();
    let count = varint(r, "entry count")?;
    if count > bs.kind.max_rows() as u64 {
        return Err(bad(at, "more entries than the key's kind holds"));
    }
    let mut next = 0u64;
    for _ in 0..count {
        let at = r.position();
        let head = varint(r, "entry")?;
        let id = (head >> 2).checked_add(next).filter(|&id| id <= u64::from(bs.kind.max_id()));
        let Some(id) = id else { return Err(bad(at, "an id past the key's kind")) };
        next = id + 1;
        let id = id as u32;
        match head & 3 {
            OP_REMOVED => {
                if !bs.kind.has_null() {
                    return Err(bad(at, "a removal in a key without null rows"));
                }
                if let Some(slot) = rows.get_mut(&id) {
                    *slot = None;
                }
            }
            OP_WHOLE => {
                let mut row = Vec::with_capacity(bs.width());
                for (i, f) in bs.fields.iter().enumerate() {
                    let at = r.position();
                    let v = varint(r, "field")?;
                    row.push(field_value(bs, i, if f.ty == FieldType::F32 { unzigzag(v) } else { v as i64 }, at)?);
                }
                rows.insert(id, Some(row));
            }
            OP_CHANGED => {
                let Some(Some(was)) = rows.get(&id) else {
                    return Err(bad(at, "a change to a row the baseline lacks"));
                };
                let mut row = was.clone();
                let at = r.position();
                let mask = varint(r, "changed fields")?;
                if mask == 0 || (bs.width() < 64 && mask >> bs.width() != 0) {
                    return Err(bad(at, "a changed-fields bitmap naming no field or one past the row"));
                }
                for (i, slot) in row.iter_mut().enumerate().filter(|(i, _)| mask & (1 << i) != 0) {
                    let at = r.position();
                    let d = unzigzag(varint(r, "field difference")?);
                    let was = number(bs, i, *slot);
                    let now = match bs.fields[i].quant {
                        Some(Quant::AngleBits(_)) => Some(was.wrapping_add(d)),
                        _ => was.checked_add(d),
                    };
                    *slot = field_value(bs, i, now.ok_or(bad(at, "a difference out of range"))?, at)?;
                }
                rows.insert(id, Some(row));
            }
            // OP_STREAMED_OUT, the last of the two bits' four.
            _ => {
                if rows.remove(&id).flatten().is_none() {
                    return Err(bad(at, "a stream-out of a row the baseline lacks"));
                }
                streamed_out.push((bs.id, id));
            }
        }
    }
    Ok(block_of(bs, rows))
}

/// Field `i`'s value from its number (steps for `f32`), checked against its type's range.
fn field_value(bs: &BlockSchema, i: usize, n: i64, at: usize) -> Result<FieldValue, DecodeError> {
    let out_of_range = DecodeError::Delta { at, what: "a field value out of its type's range" };
    let f = &bs.fields[i];
    Ok(match f.ty {
        FieldType::F32 => FieldValue::F32(value(f.quant.unwrap_or(Quant::DEFAULT), n)),
        FieldType::U8 => FieldValue::U8(u8::try_from(n).map_err(|_| out_of_range)?),
        FieldType::U16 => FieldValue::U16(u16::try_from(n).map_err(|_| out_of_range)?),
        FieldType::U32 => FieldValue::U32(u32::try_from(n).map_err(|_| out_of_range)?),
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::schema::{BlockKind, FieldSchema, Interp};
    use crate::snapshot::{pack, unpack};

    /// Keys like a game's: a hot indexed8 with quantised position and angle, a hot indexed32 of
    /// integers, an event list16, and hot slots with an optional tail.
    fn schema() -> SnapshotSchema {
        let f = FieldSchema::new;
        SnapshotSchema::new([
            (
                "m".to_owned(),
                BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
                    .field(f("x", FieldType::F32).interp(Interp::Lerp).quant(Quant::PerUnit(20)))
                    .field(f("angle", FieldType::F32).interp(Interp::LerpAngle).quant(Quant::AngleBits(12)))
                    .field(f("load", FieldType::F32))
                    .field(f("team", FieldType::U8)),
            ),
            (
                "s".to_owned(),
                BlockSchema::new(2, BlockKind::Indexed32, BlockClass::Hot)
                    .field(f("hp", FieldType::U16))
                    .field(f("owner", FieldType::U32)),
            ),
            ("e".to_owned(), BlockSchema::new(3, BlockKind::List16, BlockClass::Event).field(f("r", FieldType::F32))),
            (
                "c".to_owned(),
                BlockSchema::new(4, BlockKind::IndexedNoNull8, BlockClass::Hot)
                    .field(f("x", FieldType::F32).quant(Quant::PerUnit(20)))
                    .field(f("vx", FieldType::F32).quant(Quant::PerUnit(10)))
                    .optional_from(1),
            ),
        ])
        .expect("valid test schema")
    }

    fn unit(x: f32, angle: f32, team: u8) -> Row {
        vec![FieldValue::F32(x), FieldValue::F32(angle), FieldValue::F32(0.25), FieldValue::U8(team)]
    }

    fn frame(seq: u32, blocks: Vec<(u8, Block)>) -> Frame {
        Frame { seq, server_time_ms: f64::from(seq) * 33.3, player: None, blocks, streamed_out: Vec::new() }
    }

    fn encoded(target: &Frame, baseline: Option<&Frame>) -> Vec<u8> {
        let mut out = Vec::new();
        encode(&schema(), target, baseline, &mut out).expect("encode");
        out
    }

    /// The rows of every key, null rows left out: what a receiver's world holds.
    fn live(frame: &Frame) -> Vec<(u8, Vec<(Option<u32>, Row)>)> {
        frame
            .blocks
            .iter()
            .map(|(k, b)| (*k, b.entries().filter_map(|(id, r)| Some((id, r?.clone()))).collect::<Vec<_>>()))
            .filter(|(_, rows)| !rows.is_empty())
            .collect()
    }

    #[test]
    fn a_keyframe_carries_the_world_and_a_quiet_frame_almost_nothing() {
        let s = schema();
        let f1 = frame(
            1,
            vec![(1, Block::Indexed8(vec![(3, Some(unit(100.02, 1.0, 1))), (9, Some(unit(-50.0, -3.0, 2)))]))],
        );
        let w1 = world(&s, None, &f1);
        let key = encoded(&w1, None);
        assert_eq!(baseline_of(&key), Ok(0));
        assert_eq!(decode(&s, &key, |_| None), Ok(w1.clone()));
        // Quantised as the schema says: x in twentieths, angle in 4096ths of a turn.
        let Some(Block::Indexed8(rows)) = w1.block(1) else { panic!("the units") };
        assert_eq!(rows[0].1.as_ref().unwrap()[0], FieldValue::F32(100.0));
        let FieldValue::F32(a) = rows[0].1.as_ref().unwrap()[1] else { panic!() };
        assert!((a - 1.0).abs() < std::f32::consts::TAU / 4096.0 && a != 1.0);

        // The same world again: a header and nothing else.
        let f2 = frame(2, f1.blocks.clone());
        let w2 = world(&s, Some(&w1), &f2);
        let quiet = encoded(&w2, Some(&w1));
        assert_eq!(quiet.len(), DELTA_HEADER_LEN);
        assert_eq!(baseline_of(&quiet), Ok(1));
        assert_eq!(decode(&s, &quiet, |seq| (seq == 1).then_some(&w1)), Ok(w2.clone()));

        // One unit moves a little: its entry is a few bytes, far below format 5's frame.
        let f3 =
            frame(3, vec![(1, Block::Indexed8(vec![(3, Some(unit(101.0, 1.0, 1))), (9, Some(unit(-50.0, -3.0, 2)))]))]);
        assert_eq!(live(&world(&s, Some(&w2), &f3)).len(), 1);
        let w3 = world(&s, Some(&w2), &f3);
        let moved = encoded(&w3, Some(&w2));
        assert!(moved.len() <= DELTA_HEADER_LEN + 5, "{} bytes", moved.len());
        let mut v5 = Vec::new();
        pack(&s, &f3, &mut v5).unwrap();
        assert!(
            moved.len() - DELTA_HEADER_LEN < (v5.len() - crate::snapshot::HEADER_LEN) / 4,
            "{} vs {}",
            moved.len(),
            v5.len()
        );
        assert_eq!(decode(&s, &moved, |seq| (seq == 2).then_some(&w2)), Ok(w3));
    }

    #[test]
    fn removals_reach_a_receiver_whatever_baseline_it_holds() {
        let s = schema();
        let both = |seq, x| {
            frame(seq, vec![(1, Block::Indexed8(vec![(3, Some(unit(x, 0.0, 1))), (9, Some(unit(5.0, 0.0, 2)))]))])
        };
        let w1 = world(&s, None, &both(1, 1.0));
        // Frame 2 removes unit 9 (its one null row); frame 3 no longer names it.
        let f2 = frame(2, vec![(1, Block::Indexed8(vec![(3, Some(unit(2.0, 0.0, 1))), (9, None)]))]);
        let w2 = world(&s, Some(&w1), &f2);
        let f3 = frame(3, vec![(1, Block::Indexed8(vec![(3, Some(unit(3.0, 0.0, 1)))]))]);
        let w3 = world(&s, Some(&w2), &f3);
        assert_eq!(live(&w3), vec![(1, vec![(Some(3), unit(3.0, 0.0, 1))])]);
        // A receiver that lost frame 2 and holds frame 1 still learns that 9 is gone.
        let late = decode(&s, &encoded(&w3, Some(&w1)), |seq| (seq == 1).then_some(&w1)).unwrap();
        assert_eq!(live(&late), live(&w3));
        assert_eq!(late.block(1).unwrap().entries().find(|(id, _)| *id == Some(9)), Some((Some(9), None)));
    }

    #[test]
    fn non_delta_keys_travel_as_format_5_writes_them() {
        let s = schema();
        let f1 = frame(1, vec![(3, Block::List16(vec![vec![FieldValue::F32(1.234)], vec![FieldValue::F32(-7.0)]]))]);
        let w1 = world(&s, None, &f1);
        let bytes = encoded(&w1, None);
        // The host packs rows rounded to hundredths, as the world has them.
        let mut v5 = Vec::new();
        pack(&s, &w1, &mut v5).unwrap();
        assert_eq!(bytes[DELTA_HEADER_LEN..], v5[crate::snapshot::HEADER_LEN..], "the same block bytes");
        let back = decode(&s, &bytes, |_| None).unwrap();
        assert_eq!(back.blocks, unpack(&s, &v5).unwrap().blocks);
    }

    #[test]
    fn changes_list_what_differs_and_what_its_entry_costs() {
        let s = schema();
        let f1 = frame(1, vec![(1, Block::Indexed8(vec![(3, Some(unit(1.0, 0.0, 1))), (9, Some(unit(5.0, 0.0, 1)))]))]);
        let w1 = world(&s, None, &f1);
        let f2 = frame(
            2,
            vec![(
                1,
                Block::Indexed8(vec![
                    (3, Some(unit(2.0, 0.0, 1))),
                    (9, Some(unit(5.0, 0.0, 1))),
                    (12, Some(unit(0.0, 0.0, 2))),
                ]),
            )],
        );
        let w2 = world(&s, Some(&w1), &f2);
        let mut worlds = Worlds::new(4);
        let n1 = Held::all(worlds.push(&s, &f1).unwrap());
        worlds.push(&s, &f2).unwrap();
        let mut c = Vec::new();
        worlds.changes(Some(&n1), |_| true, &mut c);
        assert_eq!(c.iter().map(|c| (c.id, c.row, c.held)).collect::<Vec<_>>(), vec![(3, 0, true), (12, 2, false)]);
        assert_eq!(c[0].magnitude, 20, "x moved one unit: 20 steps of 1/20");
        // Each change's bytes are its entry's, less the one-byte head: the frame tells.
        for (i, change) in c.iter().enumerate() {
            let only = |key: u8, id: u32, _: usize| {
                if key == change.key && id == change.id { Pick::Update } else { Pick::Hold }
            };
            let mut out = Vec::new();
            worlds.encode(&s, &w2, Some(&n1), only, &mut out, &mut Held::default()).unwrap();
            assert_eq!(out.len(), DELTA_HEADER_LEN + 1 + 1 + 1 + change.bytes, "change {i}: key, count, head, entry");
        }
        let mut all = Vec::new();
        worlds.changes(None, |_| true, &mut all);
        assert_eq!(all.len(), 3, "against nothing every row is new");
        worlds.changes(None, |row| row != 1, &mut all);
        assert_eq!(all.len(), 2, "only the rows let through");
    }

    #[test]
    fn a_change_says_how_far_its_place_drifted_from_what_the_receiver_holds_and_for_how_long() {
        let f = FieldSchema::new;
        let tank = BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
            .field(f("x", FieldType::F32).quant(Quant::PerUnit(20)).rate("vx"))
            .field(f("y", FieldType::F32).quant(Quant::PerUnit(20)).rate("vy"))
            .field(f("vx", FieldType::F32).quant(Quant::PerUnit(10)))
            .field(f("vy", FieldType::F32).quant(Quant::PerUnit(10)));
        let s = SnapshotSchema::new([("m".to_owned(), tank)]).unwrap();
        // 30 units a second along x, then turning up.
        let at = |seq: u32, x: f32, y: f32, vx: f32, vy: f32| {
            let row = [x, y, vx, vy].map(FieldValue::F32).to_vec();
            frame(seq, vec![(1, Block::Indexed8(vec![(4, Some(row))]))])
        };
        let mut worlds = Worlds::new(3);
        let held = Held::all(worlds.push(&s, &at(1, 0.0, 0.0, 30.0, 0.0)).unwrap());
        worlds.push(&s, &at(2, 1.0, 0.0, 30.0, 0.0)).unwrap();
        worlds.push(&s, &at(3, 2.0, 0.5, 20.0, 20.0)).unwrap();
        let mut c = Vec::new();
        worlds.changes(Some(&held), |_| true, &mut c);
        let drift = c[0].drift.expect("a placed row held");
        assert_eq!((drift.off, drift.rate), ([2.0, 0.5], [30.0, 0.0]), "against frame 1's place and rate");
        assert!((c[0].held_for - 0.0666).abs() < 1e-3, "held two frames: {}", c[0].held_for);
        assert!((drift.after(c[0].held_for) - 0.5).abs() < 1e-3, "carried 2 units on, it is off by the turn");
        worlds.changes(None, |_| true, &mut c);
        assert_eq!((c[0].held, c[0].drift, c[0].held_for), (false, None, 0.0), "a row not held");
        // Frame 1 ages out of the worlds kept: the receiver's value is gone with it.
        worlds.push(&s, &at(4, 3.0, 1.0, 20.0, 20.0)).unwrap();
        worlds.push(&s, &at(5, 4.0, 1.5, 20.0, 20.0)).unwrap();
        worlds.changes(Some(&held), |_| true, &mut c);
        assert_eq!((c[0].magnitude, c[0].drift), (u64::MAX, None), "goes whole");
        assert_eq!(c[0].held_for, (RECKON_MS / 1000.0) as f32);
    }

    #[test]
    fn a_key_of_more_than_127_entries_counts_them_in_a_longer_varint() {
        let s = schema();
        let rows = (0..300u32).map(|i| (i * 3, Some(vec![FieldValue::U16(i as u16), FieldValue::U32(i)]))).collect();
        let w = world(&s, None, &frame(1, vec![(2, Block::Indexed32(rows))]));
        let bytes = encoded(&w, None);
        assert_eq!(&bytes[DELTA_HEADER_LEN..DELTA_HEADER_LEN + 3], &[2, 0xac, 0x02], "key 2, 300 entries");
        assert_eq!(decode(&s, &bytes, |_| None), Ok(w));
    }

    #[test]
    fn a_baseline_not_held_and_malformed_entries_are_errors() {
        let s = schema();
        let f1 = frame(1, vec![(1, Block::Indexed8(vec![(3, Some(unit(1.0, 0.0, 1)))]))]);
        let w1 = world(&s, None, &f1);
        let f2 = frame(2, vec![(1, Block::Indexed8(vec![(3, Some(unit(2.0, 0.0, 1)))]))]);
        let bytes = encoded(&world(&s, Some(&w1), &f2), Some(&w1));
        assert_eq!(decode(&s, &bytes, |_| None), Err(DecodeError::MissingBaseline { seq: 1 }));
        let header = bytes[..DELTA_HEADER_LEN].to_vec();
        let with = |body: &[u8]| [header.clone(), body.to_vec()].concat();
        let held = |seq: u32| (seq == 1).then_some(&w1);
        for (body, why) in [
            (&[1u8, 1, (5 << 2) | 2, 1, 2][..], "a change to a row the baseline lacks"),
            (&[1, 1, (3 << 2) | 2, 0][..], "a bitmap naming no field"),
            (&[1, 1, (3 << 2) | 2, 0x10, 2][..], "a bitmap past the row"),
            (&[1, 1, (5 << 2) | 3][..], "a stream-out of a row the baseline lacks"),
            (&[1, 1, (3 << 2) | 1, 2, 2, 2, 0x80, 0x02][..], "a u8 of 256"),
            (&[4, 1, (3 << 2)][..], "a removal in a key without null rows"),
            (&[1, 1, 0x81, 0x08][..], "an id past 255 (entry 256 << 2 | 1)"),
            (&[1, 0x80, 0x02][..], "more entries (256) than an indexed8 holds"),
            (&[1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f][..], "an overlong varint"),
            (&[1, 3, (3 << 2) | 2][..], "a truncated entry"),
            (&[9][..], "an unknown key"),
        ] {
            assert!(decode(&s, &with(body), held).is_err(), "{why}");
        }
        let mut v5 = bytes.clone();
        v5[0] = 5;
        assert_eq!(decode(&s, &v5, held), Err(DecodeError::Version { found: 5 }));
    }

    #[test]
    fn rows_that_do_not_fit_the_schema_are_refused_and_nothing_is_written() {
        let s = schema();
        let mut out = vec![7u8];
        let wrong_type = frame(1, vec![(1, Block::Indexed8(vec![(3, Some(vec![FieldValue::U8(1); 4]))]))]);
        assert!(matches!(encode(&s, &wrong_type, None, &mut out), Err(PackError::FieldType { .. })));
        let short = frame(1, vec![(1, Block::Indexed8(vec![(3, Some(vec![FieldValue::F32(1.0)]))]))]);
        assert!(matches!(encode(&s, &short, None, &mut out), Err(PackError::RowWidth { .. })));
        let unknown = frame(1, vec![(9, Block::List16(vec![]))]);
        assert_eq!(encode(&s, &unknown, None, &mut out), Err(PackError::UnknownKey(9)));
        let kind = frame(1, vec![(1, Block::Indexed32(vec![]))]);
        assert!(matches!(encode(&s, &kind, None, &mut out), Err(PackError::KindMismatch { .. })));
        let event = frame(1, vec![(3, Block::List16(vec![vec![FieldValue::U8(1)]]))]);
        assert!(matches!(encode(&s, &event, None, &mut out), Err(PackError::FieldType { .. })));
        assert_eq!(out, [7], "nothing written");
        // A world's numbers, worked out once, encode as `encode` does.
        let w = world(&s, None, &frame(1, vec![(1, Block::Indexed8(vec![(3, Some(unit(1.0, 2.0, 1)))]))]));
        let (mut worlds, mut once) = (Worlds::new(1), Vec::new());
        worlds.push(&s, &w).unwrap();
        worlds.encode(&s, &w, None, |_, _, _| Pick::Update, &mut once, &mut Held::default()).unwrap();
        assert_eq!(once, encoded(&w, None));
    }

    fn row_strategy() -> impl Strategy<Value = Row> {
        (-5000.0f32..5000.0, -10.0f32..10.0, 0.0f32..1.0, 0u8..4).prop_map(|(x, a, l, t)| {
            vec![FieldValue::F32(x), FieldValue::F32(a), FieldValue::F32(l), FieldValue::U8(t)]
        })
    }

    /// A frame of random rows of keys 1, 2, 4 (with nulls) and events, ids from small ranges so
    /// that frames share entities.
    fn frame_strategy() -> impl Strategy<Value = Vec<(u8, Block)>> {
        (
            prop::collection::vec((0u8..12, prop::option::weighted(0.85, row_strategy())), 0..10),
            prop::collection::vec((0u32..6, prop::option::of((any::<u16>(), any::<u32>()))), 0..5),
            prop::collection::vec((0u8..5, -900.0f32..900.0, prop::option::of(-3.0f32..3.0)), 0..6),
            prop::collection::vec(-100.0f32..100.0, 0..3),
        )
            .prop_map(|(units, stats, slots, events)| {
                let mut blocks = vec![
                    (1, Block::Indexed8(units)),
                    (
                        2,
                        Block::Indexed32(
                            stats
                                .into_iter()
                                .map(|(id, r)| (id, r.map(|(hp, o)| vec![FieldValue::U16(hp), FieldValue::U32(o)])))
                                .collect(),
                        ),
                    ),
                    (
                        4,
                        Block::IndexedNoNull8(
                            slots
                                .into_iter()
                                .map(|(id, x, vx)| {
                                    let mut row = vec![FieldValue::F32(x)];
                                    row.extend(vx.map(FieldValue::F32));
                                    (id, row)
                                })
                                .collect(),
                        ),
                    ),
                    (3, Block::List16(events.into_iter().map(|r| vec![FieldValue::F32(r)]).collect())),
                ];
                blocks.retain(|(_, b)| !b.is_empty());
                blocks
            })
    }

    proptest! {
        #[test]
        fn a_receiver_holds_what_its_view_lets_through_whatever_it_acknowledged(
            first in frame_strategy(),
            frames in prop::collection::vec(frame_strategy(), 1..8),
            picks in prop::collection::vec(0u8..4, 1..40),
            acks in prop::collection::vec(any::<prop::sample::Index>(), 8),
            keep in 1usize..5,
        ) {
            let s = schema();
            let mut frames = frames;
            frames.insert(0, first);
            // The host keeps `keep` worlds; the receiver acknowledges any frame it decoded (or
            // none), as loss and reordering would have it; the host writes against that one. A
            // pick of 3 writes a row again as an earlier frame had it.
            let (mut host, mut shadow) = (Worlds::new(keep), Worlds::new(64));
            let mut sent: Vec<(Held, Frame)> = Vec::new();
            let mut last_world: Option<Frame> = None;
            // Per frame: each row's version, and the world.
            let mut history: Vec<(BTreeMap<(u8, u32), Version>, Frame)> = Vec::new();
            for (k, blocks) in frames.into_iter().enumerate() {
                let f = frame(k as u32 + 1, blocks);
                let target = world(&s, last_world.as_ref(), &f);
                host.push(&s, &f).expect("push");
                let mut all = Vec::new();
                host.changes(None, |_| true, &mut all);
                history.push((all.iter().map(|c| ((c.key, c.id), c.version)).collect(), target.clone()));
                let base = acks[k].index(sent.len() + 1).checked_sub(1).map(|i| &sent[i]);
                let earlier = k.saturating_sub(1 + k % 2);
                let pick = |key: u8, id: u32, _: usize| match picks[(key as usize * 31 + id as usize * 7 + k) % picks.len()] {
                    0 => Pick::Update,
                    1 => Pick::Hold,
                    2 => Pick::Out,
                    _ => history[earlier].0.get(&(key, id)).map_or(Pick::Update, |&v| Pick::Resend(v)),
                };
                let (mut bytes, mut now) = (Vec::new(), Held::default());
                host.encode(&s, &target, base.map(|(h, _)| h), pick, &mut bytes, &mut now).expect("encode");
                let was_frame = base.map(|(_, f)| f);
                let back = decode(&s, &bytes, |seq| was_frame.filter(|b| b.seq == seq)).expect("decode");
                // The same worlds kept for longer (the same versions), to read what the host's
                // versions stand for.
                shadow.push(&s, &f).expect("push");
                let believed = shadow.held_world(&s, &now).expect("every version the receiver holds is a row's");
                let mut rows = live(&back);
                rows.retain(|(key, _)| s.by_id(*key).is_some_and(|(_, bs)| is_delta_coded(bs)));
                prop_assert_eq!(live(&believed), rows, "the receiver holds what the host thinks");
                for key in s.keys().filter(|(_, bs)| is_delta_coded(bs)).map(|(_, bs)| bs.id) {
                    let was: BTreeMap<u32, &Row> = live_rows(was_frame.and_then(|b| b.block(key)));
                    let world_rows = live_rows(target.block(key));
                    let then_rows = live_rows(history[earlier].1.block(key));
                    let got = live_rows(back.block(key));
                    for (&id, row) in &world_rows {
                        match pick(key, id, 0) {
                            Pick::Update => prop_assert_eq!(got.get(&id), Some(row), "an update is the world's row"),
                            Pick::Hold => prop_assert_eq!(got.get(&id), was.get(&id), "a held row is what it had"),
                            Pick::Out => prop_assert!(!got.contains_key(&id), "a row out of view is held"),
                            // As it was then while that world is kept, else as it is.
                            Pick::Resend(_) if k - earlier < keep => {
                                prop_assert_eq!(got.get(&id), then_rows.get(&id), "a row written again is as it was")
                            }
                            // (It may be kept all the same: the row had it for longer.)
                            Pick::Resend(_) => prop_assert!(got.get(&id) == then_rows.get(&id) || got.get(&id) == Some(row)),
                        }
                    }
                    prop_assert!(got.keys().all(|id| world_rows.contains_key(id)), "a row the world lacks is held");
                    for &(k2, id) in back.streamed_out.iter().filter(|(k2, _)| *k2 == key) {
                        prop_assert_eq!(k2, key);
                        prop_assert!(was.contains_key(&id), "only a row held streams out");
                        prop_assert!(pick(key, id, 0) == Pick::Out || !world_rows.contains_key(&id));
                    }
                }
                sent.push((now, back));
                last_world = Some(target);
            }
        }

        #[test]
        fn any_baseline_decodes_to_the_world(first in frame_strategy(), frames in prop::collection::vec(frame_strategy(), 1..6), pick in any::<prop::sample::Index>()) {
            let s = schema();
            // The host's worlds, frame by frame.
            let mut worlds = vec![world(&s, None, &frame(1, first))];
            for (k, blocks) in frames.into_iter().enumerate() {
                let next = world(&s, worlds.last(), &frame(k as u32 + 2, blocks));
                worlds.push(next);
            }
            let target = worlds.last().unwrap();
            // A receiver holding any earlier world (or none) gets the newest one's rows.
            let held = &worlds[pick.index(worlds.len())];
            for baseline in [None, Some(held)] {
                let bytes = encoded(target, baseline);
                let back = decode(&s, &bytes, |seq| baseline.filter(|b| b.seq == seq)).expect("decode");
                prop_assert_eq!(live(&back), live(target));
                prop_assert_eq!(back.seq, target.seq);
                // A null row only ever names what the baseline had and the target has not.
                for (key, block) in &back.blocks {
                    for (id, row) in block.entries() {
                        if row.is_none() {
                            let had = baseline.and_then(|b| b.block(*key)).is_some_and(|b| b.entries().any(|(i, r)| i == id && r.is_some()));
                            prop_assert!(had);
                        }
                    }
                }
                // Quantising twice changes nothing: the decoded world re-encodes to itself.
                prop_assert_eq!(encoded(&back, baseline).len(), bytes.len());
            }
        }

        #[test]
        fn quantised_values_stay_within_half_a_step(v in -8000.0f32..8000.0, n in 1u32..=100, bits in 4u8..=16) {
            let q = value(Quant::PerUnit(n), steps(Quant::PerUnit(n), v));
            prop_assert!((q - v).abs() <= 0.5 / n as f32 + v.abs() * 1e-6);
            prop_assert_eq!(value(Quant::PerUnit(n), steps(Quant::PerUnit(n), q)), q);
            let a = value(Quant::AngleBits(bits), steps(Quant::AngleBits(bits), v));
            prop_assert!((-std::f32::consts::PI..std::f32::consts::PI).contains(&a));
            let off = crate::divergence::wrap_angle(a - v).abs();
            prop_assert!(off <= std::f32::consts::PI / (1u32 << bits) as f32 + 1e-3, "{} → {}", v, a);
        }

        #[test]
        fn garbage_never_panics(body in prop::collection::vec(any::<u8>(), 0..200), seq in 0u32..3) {
            let s = schema();
            let w1 = world(&s, None, &frame(1, vec![(1, Block::Indexed8(vec![(3, Some(unit(1.0, 0.5, 1)))])), (2, Block::Indexed32(vec![(1, Some(vec![FieldValue::U16(9), FieldValue::U32(9)]))]))]));
            let mut bytes = vec![DELTA_FORMAT_VERSION];
            bytes.extend_from_slice(&2u32.to_be_bytes());
            bytes.extend_from_slice(&seq.to_be_bytes());
            bytes.extend_from_slice(&0.0f64.to_be_bytes());
            bytes.push(0);
            bytes.extend_from_slice(&body);
            let _ = decode(&s, &bytes, |q| (q == 1).then_some(&w1));
            let _ = decode(&s, &body, |_| Some(&w1));
            let _ = baseline_of(&body);
        }

        #[test]
        fn a_cut_frame_never_panics_and_a_cut_header_is_an_error(first in frame_strategy(), second in frame_strategy()) {
            let s = schema();
            let w1 = world(&s, None, &frame(1, first));
            let w2 = world(&s, Some(&w1), &frame(2, second));
            let bytes = encoded(&w2, Some(&w1));
            for cut in 0..bytes.len() {
                let back = decode(&s, &bytes[..cut], |_| Some(&w1));
                prop_assert!(cut >= DELTA_HEADER_LEN || back.is_err());
            }
        }
    }
}
