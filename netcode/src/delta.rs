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
    let mut rows = Vec::new();
    by_id_into(block, &mut rows);
    rows
}

/// [`by_id`] into `rows` (cleared first); whether the block had them so (rising ids, none
/// twice), as a host writes its blocks.
fn by_id_into<'a>(block: Option<&'a Block>, rows: &mut Vec<(u32, Option<&'a Row>)>) -> bool {
    rows.clear();
    rows.extend(block.into_iter().flat_map(|b| b.entries()).map(|(id, row)| (id.unwrap_or_default(), row)));
    let in_order = rows.is_sorted_by(|a, b| a.0 < b.0);
    if !in_order {
        // Stable: of equal ids the last stays last, and only it is kept.
        rows.sort_by_key(|(id, _)| *id);
        // Of equal ids the last stays.
        let mut kept = 0;
        for i in 0..rows.len() {
            if kept > 0 && rows[kept - 1].0 == rows[i].0 {
                rows[kept - 1] = rows[i];
            } else {
                rows[kept] = rows[i];
                kept += 1;
            }
        }
        rows.truncate(kept);
    }
    in_order
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
    check_blocks(schema, frame)?;
    for (id, block) in &frame.blocks {
        match schema.by_id(*id) {
            Some((name, bs)) if is_delta_coded(bs) => check_rows(name, bs, block)?,
            _ => {}
        }
    }
    Ok(())
}

/// The rows of `block` (of key `name`, `bs`) of their fields' width and types ([`check_row`]).
fn check_rows(name: &str, bs: &BlockSchema, block: &Block) -> Result<(), PackError> {
    for (i, (_, row)) in block.entries().enumerate() {
        if let Some(row) = row {
            check_row(name, bs, i, row)?;
        }
    }
    Ok(())
}

/// [`check_frame`] but for the rows: known keys, each once, of their kind and row count.
fn check_blocks(schema: &SnapshotSchema, frame: &Frame) -> Result<(), PackError> {
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
mod tests;
