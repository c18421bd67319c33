//! The binary snapshot frame, format version 5: packer, unpacker and the values they carry.
//!
//! A frame is what the host sends every snapshot tick (30 Hz) on port 5
//! (`SHOT_DATA`). Its body is driven by a [`SnapshotSchema`]: the game declares the
//! keys and their rows, this module lays them out byte for byte as the spec's
//! tables say. Every multi-byte number is big-endian.
//!
//! # Frame layout
//!
//! The spec fixes the body; the header is ours, and is this:
//!
//! | offset | size | field | notes |
//! |---|---|---|---|
//! | 0 | 1 | `version` | [`SNAPSHOT_FORMAT_VERSION`] (5); any other value is rejected |
//! | 1 | 4 | `seq` | u32, the frame's sequence number, +1 per frame |
//! | 5 | 8 | `serverTime` | f64, the host's match time in milliseconds |
//! | 13 | 1 | `flags` | bit 0: a player block follows; bit 1: `centering` (only with bit 0); other bits 0 |
//! | 14 | 36 | player block | only with flag bit 0: u32 `lastInputSeq`, then [`PLAYER_STATE_LEN`] raw f32 |
//! | … | … | body | `[u8 keyId][block]` for each key with content this tick, to the end of the frame |
//!
//! # Blocks
//!
//! | kind | count prefix | row |
//! |---|---|---|
//! | `indexed8` | u8 | u8 id, u8 hasData, fields |
//! | `indexed32` | u16 | u32 id, u8 hasData, fields |
//! | `list16` | u16 | fields |
//! | `indexedNoNull8` | u8 | u8 index, fields |
//!
//! `hasData` is 0 for null (the entity was removed: no fields follow) and 1 for a
//! row; any other value is an error. When the key declares `optionalFrom`, the
//! fields of a row start with a flag byte: 1 — the optional tail follows the
//! required fields, 0 — the row ends after them. The packer writes the tail only
//! when one of its values is non-zero, and the unpacker always returns rows of
//! full width, reading an absent tail as zeros ("the body rests").
//!
//! # Rounding
//!
//! Every f32 of the body is meant to carry two decimals: the host rounds with
//! [`round2`] what it packs, the packer writes f32 as they are, and the unpacker
//! passes every body f32 through [`round2`] again. The player block is the
//! exception: prediction needs full precision, so it travels and arrives raw.

use thiserror::Error;

use crate::bytes::{Reader, Truncated};
use crate::schema::{BlockKind, BlockSchema, FieldType, SNAPSHOT_FORMAT_VERSION, SnapshotSchema};

/// Number of f32 in the player block: the whole reconciliation channel of the local actor.
pub const PLAYER_STATE_LEN: usize = 8;

/// Bytes of the frame header without a player block.
pub const HEADER_LEN: usize = 14;

/// Bytes of the player block.
pub const PLAYER_BLOCK_LEN: usize = 4 + 4 * PLAYER_STATE_LEN;

const FLAG_PLAYER: u8 = 0b01;
const FLAG_CENTERING: u8 = 0b10;

/// Rounds to two decimals and back to f32, the way every body f32 is carried.
///
/// Computed in f64 (`round(v × 100) / 100`, halves away from zero) so that it is
/// idempotent over the range game coordinates live in. Non-finite values pass through.
pub fn round2(v: f32) -> f32 {
    if !v.is_finite() {
        return v;
    }
    ((v as f64 * 100.0).round() / 100.0) as f32
}

/// One cell of a row, typed as its field.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum FieldValue {
    /// An `f32` field.
    F32(f32),
    /// A `u8` field.
    U8(u8),
    /// A `u16` field.
    U16(u16),
    /// A `u32` field.
    U32(u32),
}

impl FieldValue {
    /// The zero of type `ty`.
    pub fn zero(ty: FieldType) -> Self {
        match ty {
            FieldType::F32 => FieldValue::F32(0.0),
            FieldType::U8 => FieldValue::U8(0),
            FieldType::U16 => FieldValue::U16(0),
            FieldType::U32 => FieldValue::U32(0),
        }
    }

    /// The value's type.
    pub fn ty(self) -> FieldType {
        match self {
            FieldValue::F32(_) => FieldType::F32,
            FieldValue::U8(_) => FieldType::U8,
            FieldValue::U16(_) => FieldType::U16,
            FieldValue::U32(_) => FieldType::U32,
        }
    }

    /// Whether the value is zero (`-0.0` counts as zero).
    pub fn is_zero(self) -> bool {
        match self {
            FieldValue::F32(v) => v == 0.0,
            FieldValue::U8(v) => v == 0,
            FieldValue::U16(v) => v == 0,
            FieldValue::U32(v) => v == 0,
        }
    }

    /// The value as f32 (a u32 above 2^24 loses precision).
    pub fn as_f32(self) -> f32 {
        match self {
            FieldValue::F32(v) => v,
            FieldValue::U8(v) => v as f32,
            FieldValue::U16(v) => v as f32,
            FieldValue::U32(v) => v as f32,
        }
    }

    /// The value as u32 (an f32 is truncated toward zero and saturated).
    pub fn as_u32(self) -> u32 {
        match self {
            FieldValue::F32(v) => v as u32,
            FieldValue::U8(v) => v as u32,
            FieldValue::U16(v) => v as u32,
            FieldValue::U32(v) => v,
        }
    }
}

/// A row: one value per field of its key, in schema order.
pub type Row = Vec<FieldValue>;

/// One key's content in a frame, shaped as its [`BlockKind`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Block {
    /// `indexed8`: (u8 id, row or `None` = removed).
    Indexed8(Vec<(u8, Option<Row>)>),
    /// `indexed32`: (u32 id, row or `None` = removed).
    Indexed32(Vec<(u32, Option<Row>)>),
    /// `list16`: anonymous rows.
    List16(Vec<Row>),
    /// `indexedNoNull8`: (u8 slot index, row).
    IndexedNoNull8(Vec<(u8, Row)>),
}

impl Block {
    /// An empty block of `kind`.
    pub fn empty(kind: BlockKind) -> Self {
        match kind {
            BlockKind::Indexed8 => Block::Indexed8(Vec::new()),
            BlockKind::Indexed32 => Block::Indexed32(Vec::new()),
            BlockKind::List16 => Block::List16(Vec::new()),
            BlockKind::IndexedNoNull8 => Block::IndexedNoNull8(Vec::new()),
        }
    }

    /// The block's wire shape.
    pub fn kind(&self) -> BlockKind {
        match self {
            Block::Indexed8(_) => BlockKind::Indexed8,
            Block::Indexed32(_) => BlockKind::Indexed32,
            Block::List16(_) => BlockKind::List16,
            Block::IndexedNoNull8(_) => BlockKind::IndexedNoNull8,
        }
    }

    /// Appends the rows of `other` (of the same kind); returns `other` back when the kinds differ.
    pub fn extend(&mut self, other: Block) -> Result<(), Block> {
        match (self, other) {
            (Block::Indexed8(a), Block::Indexed8(b)) => a.extend(b),
            (Block::Indexed32(a), Block::Indexed32(b)) => a.extend(b),
            (Block::List16(a), Block::List16(b)) => a.extend(b),
            (Block::IndexedNoNull8(a), Block::IndexedNoNull8(b)) => a.extend(b),
            (_, other) => return Err(other),
        }
        Ok(())
    }

    /// Appends the row of entity `id` (`None`: removed). `list16` has no ids, and a null row
    /// of `indexedNoNull8` is left out (that kind has none); ids are cut to the kind's width.
    pub fn push(&mut self, id: u32, row: Option<Row>) {
        match self {
            Block::Indexed8(rows) => rows.push((id as u8, row)),
            Block::Indexed32(rows) => rows.push((id, row)),
            Block::List16(rows) => rows.extend(row),
            Block::IndexedNoNull8(rows) => rows.extend(row.map(|r| (id as u8, r))),
        }
    }

    /// Number of rows (nulls included).
    pub fn len(&self) -> usize {
        match self {
            Block::Indexed8(r) => r.len(),
            Block::Indexed32(r) => r.len(),
            Block::List16(r) => r.len(),
            Block::IndexedNoNull8(r) => r.len(),
        }
    }

    /// Whether the block has no rows (such a block is not written).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rows as `(id, row)`: the id widened to u32 (`None` for `list16`), the row `None` for null.
    pub fn entries(&self) -> Box<dyn Iterator<Item = (Option<u32>, Option<&Row>)> + '_> {
        match self {
            Block::Indexed8(r) => Box::new(r.iter().map(|(id, row)| (Some(*id as u32), row.as_ref()))),
            Block::Indexed32(r) => Box::new(r.iter().map(|(id, row)| (Some(*id), row.as_ref()))),
            Block::List16(r) => Box::new(r.iter().map(|row| (None, Some(row)))),
            Block::IndexedNoNull8(r) => Box::new(r.iter().map(|(id, row)| (Some(*id as u32), Some(row)))),
        }
    }
}

/// The player block: the authoritative state of the receiving player's own actor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayerBlock {
    /// The newest input seq the host had applied when it built this state.
    pub last_input_seq: u32,
    /// The actor's state, raw (never rounded): the game decides what the 8 floats mean.
    pub state: [f32; PLAYER_STATE_LEN],
    /// The game's centering flag (tanks: the gun is centering).
    pub centering: bool,
}

/// A whole snapshot frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Sequence number, +1 per frame.
    pub seq: u32,
    /// The host's match time when the frame was built, in milliseconds.
    pub server_time_ms: f64,
    /// The receiving player's own state; `None` for spectators.
    pub player: Option<PlayerBlock>,
    /// `(key id, block)` for each key with content, in wire order.
    pub blocks: Vec<(u8, Block)>,
    /// `(key id, row id)` of the rows that left the receiver's view with this frame (a delta
    /// frame's stream-out, [`crate::delta`]): still in the match, no longer sent to it. Not a
    /// removal: the entity did not die. Always empty in format 5.
    pub streamed_out: Vec<(u8, u32)>,
}

impl Frame {
    /// The block of key `id`, if the frame carries it.
    pub fn block(&self, id: u8) -> Option<&Block> {
        self.blocks.iter().find(|(k, _)| *k == id).map(|(_, b)| b)
    }
}

/// Why a frame could not be packed: the game handed rows that do not fit its schema.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum PackError {
    /// A block for a key id the schema does not have.
    #[error("key id {0} is not in the snapshot schema")]
    UnknownKey(u8),
    /// Two blocks of one key in a frame.
    #[error("key `{0}` appears twice in one frame")]
    DuplicateKey(String),
    /// The block's shape is not the key's kind.
    #[error("key `{key}` is {want:?}, the block is {got:?}")]
    KindMismatch {
        /// The key.
        key: String,
        /// The schema's kind.
        want: BlockKind,
        /// The block's kind.
        got: BlockKind,
    },
    /// More rows than the kind's counter holds.
    #[error("key `{key}`: {count} rows, at most {max} fit")]
    TooManyRows {
        /// The key.
        key: String,
        /// Rows given.
        count: usize,
        /// The kind's maximum.
        max: usize,
    },
    /// A row is neither full width nor exactly its required part.
    #[error("key `{key}` row {row}: {got} fields, expected {want}")]
    RowWidth {
        /// The key.
        key: String,
        /// The row's position in the block.
        row: usize,
        /// Fields given.
        got: usize,
        /// Fields expected.
        want: usize,
    },
    /// A value's type is not its field's.
    #[error("key `{key}` row {row} field `{field}`: a {got} value in a {want} field")]
    FieldType {
        /// The key.
        key: String,
        /// The row's position in the block.
        row: usize,
        /// The field's name.
        field: String,
        /// The field's type.
        want: FieldType,
        /// The value's type.
        got: FieldType,
    },
}

/// Why bytes are not a valid frame. Nothing in the unpacker panics on any input.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The frame ends before a field that must be there.
    #[error("frame truncated at byte {at}: {what} needs {need} more byte(s)")]
    Truncated {
        /// Offset where the missing field starts.
        at: usize,
        /// What was being read.
        what: &'static str,
        /// Bytes missing.
        need: usize,
    },
    /// A frame of another format version.
    #[error("snapshot format version {found}, this build speaks {SNAPSHOT_FORMAT_VERSION}")]
    Version {
        /// The version byte found.
        found: u8,
    },
    /// The header's flag byte has unknown bits set, or centering without a player block.
    #[error("bad header flags {0:#04x}")]
    HeaderFlags(u8),
    /// A key id the schema does not have.
    #[error("unknown snapshot key id {key} at byte {at}")]
    UnknownKey {
        /// The key id.
        key: u8,
        /// Its offset.
        at: usize,
    },
    /// A key that appears twice in one frame.
    #[error("snapshot key id {key} appears twice (second at byte {at})")]
    DuplicateKey {
        /// The key id.
        key: u8,
        /// The offset of the second occurrence.
        at: usize,
    },
    /// A `hasData` byte other than 0 or 1.
    #[error("key id {key}: hasData byte {value} at byte {at}")]
    HasData {
        /// The key id.
        key: u8,
        /// The byte found.
        value: u8,
        /// Its offset.
        at: usize,
    },
    /// An optional-tail flag byte other than 0 or 1.
    #[error("key id {key}: optional-tail flag byte {value} at byte {at}")]
    TailFlag {
        /// The key id.
        key: u8,
        /// The byte found.
        value: u8,
        /// Its offset.
        at: usize,
    },
    /// A delta frame ([`crate::delta`]) against a baseline the receiver does not hold.
    #[error("the delta frame's baseline {seq} is not held")]
    MissingBaseline {
        /// The baseline's seq.
        seq: u32,
    },
    /// A malformed entry of a delta-coded block.
    #[error("delta frame: {what} at byte {at}")]
    Delta {
        /// Its offset.
        at: usize,
        /// What is wrong.
        what: &'static str,
    },
}

/// Packs `frame` into `out` (appended), byte-exact to the spec. Empty blocks are skipped.
pub fn pack(schema: &SnapshotSchema, frame: &Frame, out: &mut Vec<u8>) -> Result<(), PackError> {
    let start = out.len();
    let result = pack_inner(schema, frame, out);
    if result.is_err() {
        out.truncate(start);
    }
    result
}

fn pack_inner(schema: &SnapshotSchema, frame: &Frame, out: &mut Vec<u8>) -> Result<(), PackError> {
    pack_header(frame.seq, frame.server_time_ms, frame.player.as_ref(), out);
    pack_body(schema, &frame.blocks, out)
}

/// Writes a frame header (and the player block, if any) into `out`.
///
/// With [`pack_body`] this lets a host pack the body shared by every receiver once
/// and put a header of each receiver's own in front of it.
pub fn pack_header(seq: u32, server_time_ms: f64, player: Option<&PlayerBlock>, out: &mut Vec<u8>) {
    out.push(SNAPSHOT_FORMAT_VERSION);
    out.extend_from_slice(&seq.to_be_bytes());
    out.extend_from_slice(&server_time_ms.to_be_bytes());
    put_player(player, out);
}

/// Writes a header's flag byte and the player block, if any (formats 5 and 6 alike).
pub(crate) fn put_player(player: Option<&PlayerBlock>, out: &mut Vec<u8>) {
    match player {
        None => out.push(0),
        Some(p) => {
            out.push(FLAG_PLAYER | if p.centering { FLAG_CENTERING } else { 0 });
            out.extend_from_slice(&p.last_input_seq.to_be_bytes());
            for v in p.state {
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
    }
}

/// Reads a header's flag byte and the player block it announces (formats 5 and 6 alike).
pub(crate) fn read_player(r: &mut Reader<'_>) -> Result<Option<PlayerBlock>, DecodeError> {
    let flags = r.u8("header flags")?;
    if flags & !(FLAG_PLAYER | FLAG_CENTERING) != 0 || flags == FLAG_CENTERING {
        return Err(DecodeError::HeaderFlags(flags));
    }
    if flags & FLAG_PLAYER == 0 {
        return Ok(None);
    }
    let last_input_seq = r.u32("lastInputSeq")?;
    let mut state = [0.0; PLAYER_STATE_LEN];
    for v in &mut state {
        *v = f32::from_be_bytes(r.array("player state")?);
    }
    Ok(Some(PlayerBlock { last_input_seq, state, centering: flags & FLAG_CENTERING != 0 }))
}

/// Writes the body (`[u8 keyId][block]` per non-empty block) into `out`; on error `out` is
/// left with a partial body (use [`pack`] for all-or-nothing).
pub fn pack_body(schema: &SnapshotSchema, blocks: &[(u8, Block)], out: &mut Vec<u8>) -> Result<(), PackError> {
    let mut seen = [false; 256];
    for (id, block) in blocks {
        let (name, bs) = schema.by_id(*id).ok_or(PackError::UnknownKey(*id))?;
        if std::mem::replace(&mut seen[*id as usize], true) {
            return Err(PackError::DuplicateKey(name.to_owned()));
        }
        if block.is_empty() {
            continue;
        }
        pack_block(name, bs, block, out)?;
    }
    Ok(())
}

/// Packs one key's `[u8 keyId][block]` into `out`.
pub fn pack_block(name: &str, bs: &BlockSchema, block: &Block, out: &mut Vec<u8>) -> Result<(), PackError> {
    if block.kind() != bs.kind {
        return Err(PackError::KindMismatch { key: name.to_owned(), want: bs.kind, got: block.kind() });
    }
    let count = block.len();
    if count > bs.kind.max_rows() {
        return Err(PackError::TooManyRows { key: name.to_owned(), count, max: bs.kind.max_rows() });
    }
    out.push(bs.id);
    match block {
        Block::Indexed8(rows) => {
            out.push(count as u8);
            for (i, (id, row)) in rows.iter().enumerate() {
                out.push(*id);
                pack_nullable(name, bs, i, row.as_deref(), out)?;
            }
        }
        Block::Indexed32(rows) => {
            out.extend_from_slice(&(count as u16).to_be_bytes());
            for (i, (id, row)) in rows.iter().enumerate() {
                out.extend_from_slice(&id.to_be_bytes());
                pack_nullable(name, bs, i, row.as_deref(), out)?;
            }
        }
        Block::List16(rows) => {
            out.extend_from_slice(&(count as u16).to_be_bytes());
            for (i, row) in rows.iter().enumerate() {
                pack_row(name, bs, i, row, out)?;
            }
        }
        Block::IndexedNoNull8(rows) => {
            out.push(count as u8);
            for (i, (id, row)) in rows.iter().enumerate() {
                out.push(*id);
                pack_row(name, bs, i, row, out)?;
            }
        }
    }
    Ok(())
}

fn pack_nullable(
    name: &str,
    bs: &BlockSchema,
    i: usize,
    row: Option<&[FieldValue]>,
    out: &mut Vec<u8>,
) -> Result<(), PackError> {
    match row {
        None => {
            out.push(0);
            Ok(())
        }
        Some(row) => {
            out.push(1);
            pack_row(name, bs, i, row, out)
        }
    }
}

fn pack_row(name: &str, bs: &BlockSchema, i: usize, row: &[FieldValue], out: &mut Vec<u8>) -> Result<(), PackError> {
    let required = bs.required_width();
    let width = bs.width();
    if row.len() != width && row.len() != required {
        return Err(PackError::RowWidth { key: name.to_owned(), row: i, got: row.len(), want: width });
    }
    let written = if bs.optional_from.is_some() {
        let with_tail = row.len() == width && row[required..].iter().any(|v| !v.is_zero());
        out.push(with_tail as u8);
        if with_tail { width } else { required }
    } else {
        width
    };
    for (v, f) in row[..written].iter().zip(&bs.fields) {
        match (*v, f.ty) {
            (FieldValue::F32(x), FieldType::F32) => out.extend_from_slice(&x.to_be_bytes()),
            (FieldValue::U8(x), FieldType::U8) => out.push(x),
            (FieldValue::U16(x), FieldType::U16) => out.extend_from_slice(&x.to_be_bytes()),
            (FieldValue::U32(x), FieldType::U32) => out.extend_from_slice(&x.to_be_bytes()),
            (v, want) => {
                return Err(PackError::FieldType {
                    key: name.to_owned(),
                    row: i,
                    field: f.name.clone(),
                    want,
                    got: v.ty(),
                });
            }
        }
    }
    Ok(())
}

/// Reads a frame. Body f32 pass through [`round2`]; the player block arrives raw.
pub fn unpack(schema: &SnapshotSchema, bytes: &[u8]) -> Result<Frame, DecodeError> {
    let mut r = Reader::new(bytes);
    let version = r.u8("version")?;
    if version != SNAPSHOT_FORMAT_VERSION {
        return Err(DecodeError::Version { found: version });
    }
    let seq = r.u32("frame seq")?;
    let server_time_ms = f64::from_be_bytes(r.array("server time")?);
    let player = read_player(&mut r)?;
    let mut blocks = Vec::new();
    let mut seen = [false; 256];
    while !r.is_empty() {
        let at = r.position();
        let key = r.u8("key id")?;
        let (_, bs) = schema.by_id(key).ok_or(DecodeError::UnknownKey { key, at })?;
        if std::mem::replace(&mut seen[key as usize], true) {
            return Err(DecodeError::DuplicateKey { key, at });
        }
        blocks.push((key, unpack_block(bs, &mut r)?));
    }
    Ok(Frame { seq, server_time_ms, player, blocks, streamed_out: Vec::new() })
}

pub(crate) fn unpack_block(bs: &BlockSchema, r: &mut Reader<'_>) -> Result<Block, DecodeError> {
    // Every row takes at least one byte, so a count past the end fails on the first
    // missing row; capping the reservation keeps a lying count from allocating.
    let cap = |count: usize, r: &Reader<'_>| count.min(r.remaining());
    Ok(match bs.kind {
        BlockKind::Indexed8 => {
            let count = r.u8("row count")? as usize;
            let mut rows = Vec::with_capacity(cap(count, r));
            for _ in 0..count {
                let id = r.u8("row id")?;
                rows.push((id, unpack_nullable(bs, r)?));
            }
            Block::Indexed8(rows)
        }
        BlockKind::Indexed32 => {
            let count = r.u16("row count")? as usize;
            let mut rows = Vec::with_capacity(cap(count, r));
            for _ in 0..count {
                let id = r.u32("row id")?;
                rows.push((id, unpack_nullable(bs, r)?));
            }
            Block::Indexed32(rows)
        }
        BlockKind::List16 => {
            let count = r.u16("row count")? as usize;
            let mut rows = Vec::with_capacity(cap(count, r));
            for _ in 0..count {
                rows.push(unpack_row(bs, r)?);
            }
            Block::List16(rows)
        }
        BlockKind::IndexedNoNull8 => {
            let count = r.u8("row count")? as usize;
            let mut rows = Vec::with_capacity(cap(count, r));
            for _ in 0..count {
                let id = r.u8("row index")?;
                rows.push((id, unpack_row(bs, r)?));
            }
            Block::IndexedNoNull8(rows)
        }
    })
}

fn unpack_nullable(bs: &BlockSchema, r: &mut Reader<'_>) -> Result<Option<Row>, DecodeError> {
    let at = r.position();
    match r.u8("hasData")? {
        0 => Ok(None),
        1 => unpack_row(bs, r).map(Some),
        value => Err(DecodeError::HasData { key: bs.id, value, at }),
    }
}

fn unpack_row(bs: &BlockSchema, r: &mut Reader<'_>) -> Result<Row, DecodeError> {
    let written = match bs.optional_from {
        None => bs.width(),
        Some(from) => {
            let at = r.position();
            match r.u8("optional-tail flag")? {
                0 => from,
                1 => bs.width(),
                value => return Err(DecodeError::TailFlag { key: bs.id, value, at }),
            }
        }
    };
    let mut row = Vec::with_capacity(bs.width());
    for f in &bs.fields[..written] {
        row.push(match f.ty {
            FieldType::F32 => FieldValue::F32(round2(f32::from_be_bytes(r.array("f32 field")?))),
            FieldType::U8 => FieldValue::U8(r.u8("u8 field")?),
            FieldType::U16 => FieldValue::U16(r.u16("u16 field")?),
            FieldType::U32 => FieldValue::U32(r.u32("u32 field")?),
        });
    }
    row.extend(bs.fields[written..].iter().map(|f| FieldValue::zero(f.ty)));
    Ok(row)
}

impl From<Truncated> for DecodeError {
    fn from(t: Truncated) -> Self {
        DecodeError::Truncated { at: t.at, what: t.what, need: t.need }
    }
}

#[cfg(test)]
mod tests;
