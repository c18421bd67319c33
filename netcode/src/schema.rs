//! The declarative snapshot schema: which blocks a frame may carry and the shape of their rows.
//!
//! A game does not hand the engine structs to serialise: it declares, per snapshot
//! key, a [`BlockSchema`] — the key's byte on the wire (`id`), the block's wire
//! shape ([`BlockKind`]), whether clients interpolate it ([`BlockClass`]) and the
//! typed fields of a row ([`FieldSchema`]). The packer, the unpacker and the
//! interpolation buffer are all interpreters of this one description.
//!
//! The JSON form is the spec's (camelCase):
//!
//! ```json
//! { "keys": {
//!     "m1": { "id": 1, "kind": "indexed8", "class": "hot", "fields": [
//!         { "name": "x", "ty": "f32", "interp": "lerp" },
//!         { "name": "angle", "ty": "f32", "interp": "lerpAngle" },
//!         { "name": "teamId", "ty": "u8" } ] },
//!     "c1": { "id": 5, "kind": "indexedNoNull8", "class": "hot", "optionalFrom": 3,
//!       "fields": [ ... ] } } }
//! ```
//!
//! [`SnapshotSchema::from_json`] and [`SnapshotSchema::new`] validate every rule of
//! the spec and return a [`SchemaError`] naming the key (and field) at fault.
//!
//! Code outside the codec reads and writes rows by the names the schema declares, never by
//! position: [`BlockSchema::named`], [`row_fields!`](crate::row_fields) ([`names`] module docs).
//!
//! # The map-dynamics row, for a decoder of its own
//!
//! The engine writes the map's movable bodies itself, in the block of the map's set key
//! (`indexedNoNull8`). Field roles ([`Role`]) say where it puts its own values, so a decoder
//! written from this page alone reads a layered map's bodies right:
//!
//! | position | field | type | role | meaning |
//! |---|---|---|---|---|
//! | 0, 1 | `x`, `y` | f32 | — | the body's corner, world units |
//! | 2 | `angle` | f32 | — | radians |
//! | 3 | `z` | f32 | `z` ([`Z_POSITION`]) | height above its level, world units (falling: what it still falls) |
//! | 4 | `level` | u8 | `level` ([`LEVEL_POSITION`]) | the level it stands on (falling: the one it lands on) |
//! | 5 | `state` | u8 | `state` ([`LAYERED_STATE_POSITION`]) | the game's byte for the body, when declared |
//! | next | `vx`, `vy`, `angvel` | f32 | — | the optional tail (`optionalFrom` past the head) |
//!
//! The `z`/`level` pair stands at the head of the row, never in the optional tail: a missing
//! tail decodes as zeros, and a crate at rest on a bridge would read as one on the ground. A
//! schema without the pair keeps the flat row `[x, y, angle, (state,) vx?, vy?, angvel?]`
//! ([`FLAT_STATE_POSITION`]). In format 5 a row is `u8 index`, then (with `optionalFrom`)
//! `u8 tail flag`, then the fields big-endian in this order (the tail only when the flag is
//! 1); format 6 carries the same fields as whole steps of each field's [`Quant`] (the tanks
//! game declares `z` in hundredths) or, for integers, exactly.

use std::fmt;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

pub mod names;

pub use names::{Field, MapBodyFields, MissingField, set_all};

/// The snapshot frame format version this crate speaks (`SNAPSHOT_FORMAT_VERSION`).
pub const SNAPSHOT_FORMAT_VERSION: u8 = 5;

/// Position of the `z` role in a map-dynamics row.
pub const Z_POSITION: usize = 3;
/// Position of the `level` role in a map-dynamics row.
pub const LEVEL_POSITION: usize = 4;
/// Position of the `state` role in a layered row (`[x, y, angle, z, level, state, …]`).
pub const LAYERED_STATE_POSITION: usize = 5;
/// Position of the `state` role in a flat row (`[x, y, angle, state, …]`).
pub const FLAT_STATE_POSITION: usize = 3;

/// The wire shape of a block: counter width, id width and whether rows can be null.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BlockKind {
    /// `u8 count`, rows `u8 id, u8 hasData, fields` — up to 255 addressable entities (players).
    Indexed8,
    /// `u16 count`, rows `u32 id, u8 hasData, fields` — many short-lived entities (projectiles).
    Indexed32,
    /// `u16 count`, rows `fields` — anonymous events (tracers, explosions).
    List16,
    /// `u8 count`, rows `u8 index, fields` — fixed slots that never vanish (map dynamics).
    IndexedNoNull8,
}

impl BlockKind {
    /// Whether rows of this kind carry an entity id (every kind but `list16`).
    pub fn has_ids(self) -> bool {
        !matches!(self, BlockKind::List16)
    }

    /// Whether rows of this kind can be null (entity removed).
    pub fn has_null(self) -> bool {
        matches!(self, BlockKind::Indexed8 | BlockKind::Indexed32)
    }

    /// The largest row count a block of this kind can carry.
    pub fn max_rows(self) -> usize {
        match self {
            BlockKind::Indexed8 | BlockKind::IndexedNoNull8 => u8::MAX as usize,
            BlockKind::Indexed32 | BlockKind::List16 => u16::MAX as usize,
        }
    }

    /// The largest entity id a row of this kind can carry.
    pub fn max_id(self) -> u32 {
        match self {
            BlockKind::Indexed8 | BlockKind::IndexedNoNull8 => u8::MAX as u32,
            BlockKind::Indexed32 => u32::MAX,
            BlockKind::List16 => 0,
        }
    }
}

/// Whether a block is continuous state or a one-off event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum BlockClass {
    /// Continuous state: clients interpolate it between frames.
    Hot,
    /// One-off: delivered exactly once, with its frame, as it is.
    Event,
}

/// A field's wire type (big-endian on the wire).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FieldType {
    /// IEEE-754 single, 4 bytes.
    F32,
    /// Unsigned byte.
    U8,
    /// Unsigned 16-bit, 2 bytes.
    U16,
    /// Unsigned 32-bit, 4 bytes.
    U32,
}

impl FieldType {
    /// Bytes this type takes on the wire.
    pub fn size(self) -> usize {
        match self {
            FieldType::U8 => 1,
            FieldType::U16 => 2,
            FieldType::F32 | FieldType::U32 => 4,
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FieldType::F32 => "f32",
            FieldType::U8 => "u8",
            FieldType::U16 => "u16",
            FieldType::U32 => "u32",
        })
    }
}

/// How a client blends a field between two frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Interp {
    /// Linear blend.
    Lerp,
    /// Blend along the shortest arc of the circle (radians, across ±π).
    LerpAngle,
    /// Jump: the older frame's value until the newer frame is reached.
    #[default]
    Discrete,
}

/// The role a field plays in the engine's contract (the field's `name` belongs to the game).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Role {
    /// Height of a map body above its level; must stand at position 3, paired with `level`.
    Z,
    /// The level a map body stands on; must stand at position 4, paired with `z`.
    Level,
    /// The map body's state byte (u8) at position 5 (layered) or 3 (flat).
    State,
}

/// One field of a row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FieldSchema {
    /// The game's name for the field.
    pub name: String,
    /// The wire type.
    pub ty: FieldType,
    /// How clients blend it (only `f32` fields of `hot` blocks may be other than discrete).
    #[serde(default)]
    pub interp: Interp,
    /// The field's role in the engine's contract, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// How a delta frame (format 6) carries an `f32` field; none: [`Quant::DEFAULT`], the two
    /// decimals of format 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quant: Option<Quant>,
    /// The `f32` field of the same row that is this one's rate, per second (`x`'s is `vx`): a
    /// receiver of delta frames carries a row the host held back forward by it, for up to
    /// [`crate::delta::RECKON_MS`] ([`crate::delta::Reckoner`]). Only on `f32` fields of hot keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<String>,
}

/// The most fields a hot key with ids may have: a delta frame names a row's changed fields in
/// a 64-bit map ([`crate::delta`]).
pub const MAX_DELTA_FIELDS: usize = 64;

/// How a delta frame carries an `f32` field: as a whole number of steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Quant {
    /// Steps of `1 / n` units (`n` from 1 to [`Quant::MAX_PER_UNIT`]): a position in twentieths
    /// is `{"perUnit": 20}`.
    PerUnit(u32),
    /// An angle in radians as one of `2^bits` steps of the circle ([`Quant::ANGLE_BITS`]),
    /// carried wrapped into `[-π, π)`.
    AngleBits(u8),
}

impl Quant {
    /// What a field without a quantisation gets: hundredths, as format 5 carries every f32.
    pub const DEFAULT: Quant = Quant::PerUnit(100);
    /// The finest step: format 5's hundredths (a delta frame carries nothing finer).
    pub const MAX_PER_UNIT: u32 = 100;
    /// The allowed angle resolutions, in bits.
    pub const ANGLE_BITS: std::ops::RangeInclusive<u8> = 4..=16;

    /// One step: `1 / n` units, or `2π / 2^bits` rad (a value read from a frame is within
    /// half of it of the host's).
    pub fn step(self) -> f32 {
        match self {
            Quant::PerUnit(n) => 1.0 / n.max(1) as f32,
            Quant::AngleBits(bits) => std::f32::consts::TAU / (1u32 << bits.min(31)) as f32,
        }
    }
}

impl FieldSchema {
    /// A discrete field without a role.
    pub fn new(name: impl Into<String>, ty: FieldType) -> Self {
        FieldSchema { name: name.into(), ty, interp: Interp::Discrete, role: None, quant: None, rate: None }
    }

    /// The same field with another interpolation mode.
    pub fn interp(mut self, interp: Interp) -> Self {
        self.interp = interp;
        self
    }

    /// The same field with a role.
    pub fn role(mut self, role: Role) -> Self {
        self.role = Some(role);
        self
    }

    /// The same field with a quantisation for delta frames.
    pub fn quant(mut self, quant: Quant) -> Self {
        self.quant = Some(quant);
        self
    }

    /// The same field with field `rate` its rate per second.
    pub fn rate(mut self, rate: impl Into<String>) -> Self {
        self.rate = Some(rate.into());
        self
    }
}

/// The schema of one snapshot key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BlockSchema {
    /// The key's byte on the wire; unique within a schema.
    pub id: u8,
    /// The block's wire shape.
    pub kind: BlockKind,
    /// Continuous state or one-off event.
    pub class: BlockClass,
    /// The row's fields, in wire order.
    pub fields: Vec<FieldSchema>,
    /// Fields from this index on form an optional tail, written only when it carries
    /// something (not all zero); such a row starts with a flag byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional_from: Option<usize>,
    /// The `f32` fields that place a row in the world, for per-client views: `[x, y]` (a
    /// point) or `[x1, y1, x2, y2]` (a segment, seen from where either end is seen). Empty:
    /// the fields named `x` and `y`, when the row has both as `f32`; a key with neither is
    /// seen by everyone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at: Vec<String>,
}

impl BlockSchema {
    /// A block without fields yet.
    pub fn new(id: u8, kind: BlockKind, class: BlockClass) -> Self {
        BlockSchema { id, kind, class, fields: Vec::new(), optional_from: None, at: Vec::new() }
    }

    /// The same block placed in the world by the fields named in `at` (see [`BlockSchema::at`]).
    pub fn at(mut self, at: &[&str]) -> Self {
        self.at = at.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// The positions of the fields that place a row (two for a point, four for a segment),
    /// or `None` for a key seen by everyone.
    pub fn place(&self) -> Option<Vec<usize>> {
        let find = |name: &str| self.fields.iter().position(|f| f.name == name && f.ty == FieldType::F32);
        if self.at.is_empty() {
            return Some(vec![find("x")?, find("y")?]);
        }
        self.at.iter().map(|name| find(name)).collect()
    }

    /// The position of the field that is field `i`'s rate ([`FieldSchema::rate`]), if it names
    /// one the row has.
    pub fn rate_of(&self, i: usize) -> Option<usize> {
        let rate = self.fields.get(i)?.rate.as_deref()?;
        self.fields.iter().position(|f| f.name == rate)
    }

    /// The positions of the fields of the first point that places a row ([`BlockSchema::place`]),
    /// or `None` for a key seen by everyone.
    pub fn point(&self) -> Option<(usize, usize)> {
        let find = |name: &str| self.fields.iter().position(|f| f.name == name && f.ty == FieldType::F32);
        match self.at.as_slice() {
            [] => Some((find("x")?, find("y")?)),
            // A place names whole points; one that does not is no place (as `place` says).
            at if at.len() % 2 == 0 => {
                let all = at.iter().all(|name| find(name).is_some());
                all.then(|| Some((find(&at[0])?, find(&at[1])?))).flatten()
            }
            _ => None,
        }
    }

    /// The same block with one more field.
    pub fn field(mut self, field: FieldSchema) -> Self {
        self.fields.push(field);
        self
    }

    /// The same block with an optional tail from `index` on.
    pub fn optional_from(mut self, index: usize) -> Self {
        self.optional_from = Some(index);
        self
    }

    /// Number of fields of a full row.
    pub fn width(&self) -> usize {
        self.fields.len()
    }

    /// Number of fields always written (the whole row when there is no optional tail).
    pub fn required_width(&self) -> usize {
        self.optional_from.unwrap_or(self.fields.len())
    }

    /// Position of the field with `role`, if any.
    pub fn role_position(&self, role: Role) -> Option<usize> {
        self.fields.iter().position(|f| f.role == Some(role))
    }

    /// Whether rows carry the `z`/`level` pair (a layered map-dynamics row).
    pub fn is_layered(&self) -> bool {
        self.role_position(Role::Z).is_some()
    }

    /// Checks every rule of the spec for one key.
    pub fn validate(&self, key: &str) -> Result<(), SchemaError> {
        let err = |field: Option<&str>, reason: SchemaRule| SchemaError {
            key: key.to_owned(),
            field: field.map(str::to_owned),
            rule: reason,
        };
        for (i, f) in self.fields.iter().enumerate() {
            if self.fields[..i].iter().any(|g| g.name == f.name) {
                return Err(err(Some(&f.name), SchemaRule::DuplicateField));
            }
            if f.interp != Interp::Discrete {
                if f.ty != FieldType::F32 {
                    return Err(err(Some(&f.name), SchemaRule::InterpOnNonFloat(f.ty)));
                }
                if self.class == BlockClass::Event {
                    return Err(err(Some(&f.name), SchemaRule::InterpInEvent));
                }
            }
            if let Some(quant) = f.quant {
                if f.ty != FieldType::F32 {
                    return Err(err(Some(&f.name), SchemaRule::QuantOnNonFloat(f.ty)));
                }
                let fits = match quant {
                    Quant::PerUnit(n) => (1..=Quant::MAX_PER_UNIT).contains(&n),
                    Quant::AngleBits(bits) => Quant::ANGLE_BITS.contains(&bits),
                };
                if !fits {
                    return Err(err(Some(&f.name), SchemaRule::QuantOutOfRange(quant)));
                }
            }
            if let Some(rate) = &f.rate {
                if f.ty != FieldType::F32 {
                    return Err(err(Some(&f.name), SchemaRule::RateOnNonFloat(f.ty)));
                }
                if self.class == BlockClass::Event {
                    return Err(err(Some(&f.name), SchemaRule::RateInEvent));
                }
                match self.fields.iter().find(|g| &g.name == rate) {
                    None => return Err(err(Some(&f.name), SchemaRule::RateUnknownField(rate.clone()))),
                    Some(g) if g.name == f.name => return Err(err(Some(&f.name), SchemaRule::RateOfItself)),
                    Some(g) if g.ty != FieldType::F32 => {
                        return Err(err(Some(&f.name), SchemaRule::RateNonFloat(g.ty)));
                    }
                    Some(_) => {}
                }
            }
        }
        if !self.at.is_empty() {
            if !matches!(self.at.len(), 2 | 4) {
                return Err(err(None, SchemaRule::AtCount(self.at.len())));
            }
            for name in &self.at {
                match self.fields.iter().find(|f| &f.name == name) {
                    None => return Err(err(Some(name), SchemaRule::AtUnknownField)),
                    Some(f) if f.ty != FieldType::F32 => return Err(err(Some(name), SchemaRule::AtNonFloat(f.ty))),
                    Some(_) => {}
                }
            }
        }
        if self.class == BlockClass::Hot && self.kind.has_ids() && self.fields.len() > MAX_DELTA_FIELDS {
            return Err(err(None, SchemaRule::TooManyFields { width: self.fields.len() }));
        }
        if let Some(from) = self.optional_from
            && from >= self.fields.len()
        {
            return Err(err(None, SchemaRule::EmptyOptionalTail { optional_from: from, width: self.fields.len() }));
        }
        // Roles: the z/level pair.
        let z = self.role_position(Role::Z);
        let level = self.role_position(Role::Level);
        for (role, pos, want) in [(Role::Z, z, Z_POSITION), (Role::Level, level, LEVEL_POSITION)] {
            if let Some(pos) = pos {
                if pos != want {
                    return Err(err(Some(&self.fields[pos].name), SchemaRule::RoleMisplaced { role, at: pos, want }));
                }
                if self.fields.iter().filter(|f| f.role == Some(role)).count() > 1 {
                    return Err(err(Some(&self.fields[pos].name), SchemaRule::DuplicateRole(role)));
                }
            }
        }
        match (z, level) {
            (Some(pos), None) | (None, Some(pos)) => {
                return Err(err(Some(&self.fields[pos].name), SchemaRule::UnpairedLayerRole));
            }
            (None, None) => {
                for (pos, name) in [(Z_POSITION, "z"), (LEVEL_POSITION, "level")] {
                    if self.fields.get(pos).is_some_and(|f| f.name == name && f.role.is_none()) {
                        return Err(err(Some(name), SchemaRule::LayerNameWithoutRole { at: pos }));
                    }
                }
            }
            (Some(_), Some(_)) => {}
        }
        // Role: state.
        let states: Vec<usize> =
            self.fields.iter().enumerate().filter(|(_, f)| f.role == Some(Role::State)).map(|(i, _)| i).collect();
        if let Some(&pos) = states.first() {
            let name = &self.fields[pos].name;
            if states.len() > 1 {
                return Err(err(Some(name), SchemaRule::DuplicateRole(Role::State)));
            }
            if self.fields[pos].ty != FieldType::U8 {
                return Err(err(Some(name), SchemaRule::StateNotU8(self.fields[pos].ty)));
            }
            let want = if self.is_layered() { LAYERED_STATE_POSITION } else { FLAT_STATE_POSITION };
            if pos != want {
                return Err(err(Some(name), SchemaRule::RoleMisplaced { role: Role::State, at: pos, want }));
            }
            if let Some(from) = self.optional_from
                && from <= pos
            {
                return Err(err(
                    Some(name),
                    SchemaRule::OptionalTailBeforeState { optional_from: from, state_at: pos },
                ));
            }
        }
        Ok(())
    }
}

/// Which rule of the schema a [`SchemaError`] broke.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaRule {
    /// Two keys share one wire id.
    #[error("id {id} is already used by key `{other}`")]
    DuplicateId {
        /// The shared id.
        id: u8,
        /// The key that has it first.
        other: String,
    },
    /// Two fields of one row share a name.
    #[error("the name is used by two fields")]
    DuplicateField,
    /// `interp` other than discrete on a field that is not f32.
    #[error("only f32 fields can be interpolated, this one is {0}")]
    InterpOnNonFloat(FieldType),
    /// `interp` other than discrete in an event block.
    #[error("fields of an event block cannot be interpolated")]
    InterpInEvent,
    /// A hot key with ids has more fields than a delta frame's changed-fields map names.
    #[error("a hot key with ids has at most {MAX_DELTA_FIELDS} fields, this one {width}")]
    TooManyFields {
        /// The key's fields.
        width: usize,
    },
    /// `quant` on a field that is not f32.
    #[error("only f32 fields are quantised, this one is {0}")]
    QuantOnNonFloat(FieldType),
    /// `quant` with a step out of its range.
    #[error("quantisation {0:?} is out of range (perUnit 1 to 100, angleBits 4 to 16)")]
    QuantOutOfRange(Quant),
    /// `rate` on a field that is not f32.
    #[error("only an f32 field has a rate, this one is {0}")]
    RateOnNonFloat(FieldType),
    /// `rate` in an event block.
    #[error("fields of an event block have no rate")]
    RateInEvent,
    /// `rate` names a field the row does not have.
    #[error("`rate` names {0:?}, a field the row does not have")]
    RateUnknownField(String),
    /// `rate` names the field itself.
    #[error("`rate` names the field itself")]
    RateOfItself,
    /// `rate` names a field that is not f32.
    #[error("`rate` names only an f32 field, this one is {0}")]
    RateNonFloat(FieldType),
    /// `at` names neither a point (2 fields) nor a segment (4).
    #[error("`at` names a point (2 fields) or a segment (4), not {0}")]
    AtCount(usize),
    /// `at` names a field the row does not have.
    #[error("`at` names a field the row does not have")]
    AtUnknownField,
    /// `at` names a field that is not f32.
    #[error("`at` names only f32 fields, this one is {0}")]
    AtNonFloat(FieldType),
    /// `optionalFrom` does not leave a non-empty tail inside `fields`.
    #[error("optionalFrom {optional_from} leaves no tail inside a row of {width} fields")]
    EmptyOptionalTail {
        /// The declared start of the tail.
        optional_from: usize,
        /// The row's width.
        width: usize,
    },
    /// A role stands at a position other than its own.
    #[error("role `{role:?}` stands at position {at}, it belongs at {want}")]
    RoleMisplaced {
        /// The role.
        role: Role,
        /// Where it stands.
        at: usize,
        /// Where it must stand.
        want: usize,
    },
    /// A role is declared on more than one field.
    #[error("role `{0:?}` is declared twice")]
    DuplicateRole(Role),
    /// Only one of the `z`/`level` pair is declared.
    #[error("roles z and level go as a pair; only one is declared")]
    UnpairedLayerRole,
    /// Fields named `z`/`level` stand at 3/4 without their roles.
    #[error("a field named like a layer field stands at position {at} without its role")]
    LayerNameWithoutRole {
        /// The position.
        at: usize,
    },
    /// The `state` role on a field that is not u8.
    #[error("role state must be u8, it is {0}")]
    StateNotU8(FieldType),
    /// `optionalFrom` does not come after the `state` field.
    #[error("optionalFrom {optional_from} must come after the state field at {state_at}")]
    OptionalTailBeforeState {
        /// The declared start of the tail.
        optional_from: usize,
        /// Where the state field stands.
        state_at: usize,
    },
    /// The schema JSON does not parse.
    #[error("{0}")]
    Json(String),
}

/// A schema that breaks a rule: names the key, the field where there is one, and the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("snapshot key `{key}`{}: {rule}", field.as_ref().map(|f| format!(", field `{f}`")).unwrap_or_default())]
pub struct SchemaError {
    /// The key at fault (empty when the JSON itself does not parse).
    pub key: String,
    /// The field at fault, where the rule is about one field.
    pub field: Option<String>,
    /// The rule broken.
    pub rule: SchemaRule,
}

/// The spec's JSON form of a snapshot config: `{ "version"?, "port"?, "keys": {…} }`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotConfig {
    /// Format version; informational (the engine owns it), defaults to 5.
    #[serde(default = "default_version")]
    pub version: u8,
    /// Port (opcode) the frames travel on; defaults to 5.
    #[serde(default = "default_port")]
    pub port: u8,
    /// Key name → block schema, in declaration order.
    pub keys: IndexMap<String, BlockSchema>,
}

fn default_version() -> u8 {
    SNAPSHOT_FORMAT_VERSION
}

fn default_port() -> u8 {
    5
}

/// A validated snapshot schema: keys in declaration order, looked up by wire id in O(1).
#[derive(Clone, Debug)]
pub struct SnapshotSchema {
    keys: Vec<(String, BlockSchema)>,
    by_id: Box<[u16; 256]>,
    /// Which schema this is ([`SnapshotSchema::stamp`]).
    stamp: u64,
}

impl PartialEq for SnapshotSchema {
    fn eq(&self, other: &Self) -> bool {
        // The lookup follows from the keys; the stamp names a schema, it says nothing of it.
        self.keys == other.keys
    }
}

impl Eq for SnapshotSchema {}

/// The stamp of the next schema made ([`SnapshotSchema::stamp`]).
static NEXT_STAMP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

const NO_KEY: u16 = u16::MAX;

impl SnapshotSchema {
    /// Validates `keys` (name → schema, in order) into a schema.
    pub fn new(keys: impl IntoIterator<Item = (String, BlockSchema)>) -> Result<Self, SchemaError> {
        let keys: Vec<(String, BlockSchema)> = keys.into_iter().collect();
        let mut by_id = Box::new([NO_KEY; 256]);
        for (i, (name, block)) in keys.iter().enumerate() {
            let slot = &mut by_id[block.id as usize];
            if *slot != NO_KEY {
                return Err(SchemaError {
                    key: name.clone(),
                    field: None,
                    rule: SchemaRule::DuplicateId { id: block.id, other: keys[*slot as usize].0.clone() },
                });
            }
            *slot = i as u16;
            block.validate(name)?;
        }
        let stamp = NEXT_STAMP.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(SnapshotSchema { keys, by_id, stamp })
    }

    /// A number of this schema's own, never 0: each schema made gets a new one and its clones
    /// keep it. A schema never changes once made, so what a reader works out of one (the
    /// delta coder's layout of its keys) holds for as long as the stamp is the same.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Parses and validates the spec's JSON form: either `{ "keys": {…} }` or the bare key map.
    pub fn from_json(json: &str) -> Result<Self, SchemaError> {
        let value: serde_json::Value = serde_json::from_str(json).map_err(json_error)?;
        Self::from_value(value)
    }

    /// Like [`SnapshotSchema::from_json`] on an already parsed value.
    pub fn from_value(value: serde_json::Value) -> Result<Self, SchemaError> {
        let keys: IndexMap<String, BlockSchema> = if value.get("keys").is_some() {
            serde_json::from_value::<SnapshotConfig>(value).map_err(json_error)?.keys
        } else {
            serde_json::from_value(value).map_err(json_error)?
        };
        Self::new(keys)
    }

    /// The JSON form (`SnapshotConfig`) of this schema.
    pub fn to_config(&self) -> SnapshotConfig {
        SnapshotConfig {
            version: SNAPSHOT_FORMAT_VERSION,
            port: default_port(),
            keys: self.keys.iter().cloned().collect(),
        }
    }

    /// Keys in declaration order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = (&str, &BlockSchema)> {
        self.keys.iter().map(|(n, b)| (n.as_str(), b))
    }

    /// The key with wire id `id`.
    pub fn by_id(&self, id: u8) -> Option<(&str, &BlockSchema)> {
        match self.by_id[id as usize] {
            NO_KEY => None,
            i => self.keys.get(i as usize).map(|(n, b)| (n.as_str(), b)),
        }
    }

    /// The key named `name`.
    pub fn by_name(&self, name: &str) -> Option<&BlockSchema> {
        self.keys.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    /// The wire id of the key named `name`.
    pub fn id_of(&self, name: &str) -> Option<u8> {
        self.by_name(name).map(|b| b.id)
    }
}

fn json_error(e: serde_json::Error) -> SchemaError {
    SchemaError { key: String::new(), field: None, rule: SchemaRule::Json(e.to_string()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32f(name: &str) -> FieldSchema {
        FieldSchema::new(name, FieldType::F32)
    }

    fn flat_dynamics() -> BlockSchema {
        BlockSchema::new(5, BlockKind::IndexedNoNull8, BlockClass::Hot)
            .field(f32f("x").interp(Interp::Lerp))
            .field(f32f("y").interp(Interp::Lerp))
            .field(f32f("angle").interp(Interp::LerpAngle))
            .field(f32f("vx"))
            .field(f32f("vy"))
            .field(f32f("angvel"))
            .optional_from(3)
    }

    fn rule_of(block: BlockSchema) -> (Option<String>, SchemaRule) {
        let e = block.validate("k").expect_err("the schema must be rejected");
        assert_eq!(e.key, "k");
        (e.field, e.rule)
    }

    #[test]
    fn parses_the_spec_json_form() {
        let json = r#"{ "version": 5, "port": 5, "keys": {
            "m1": { "id": 1, "kind": "indexed8", "class": "hot", "fields": [
                { "name": "x", "ty": "f32", "interp": "lerp" },
                { "name": "angle", "ty": "f32", "interp": "lerpAngle" },
                { "name": "teamId", "ty": "u8" } ] },
            "w2e": { "id": 4, "kind": "list16", "class": "event", "fields": [
                { "name": "x", "ty": "f32" } ] },
            "c1": { "id": 5, "kind": "indexedNoNull8", "class": "hot", "optionalFrom": 3, "fields": [
                { "name": "x", "ty": "f32" }, { "name": "y", "ty": "f32" }, { "name": "a", "ty": "f32" },
                { "name": "vx", "ty": "f32" } ] } } }"#;
        let s = SnapshotSchema::from_json(json).expect("valid schema");
        let names: Vec<&str> = s.keys().map(|(n, _)| n).collect();
        assert_eq!(names, ["m1", "w2e", "c1"], "declaration order is kept");
        let m1 = s.by_name("m1").expect("m1");
        assert_eq!(m1.fields[1].interp, Interp::LerpAngle);
        assert_eq!(m1.fields[2].interp, Interp::Discrete, "discrete is the default");
        assert_eq!(s.by_id(5).map(|(n, _)| n), Some("c1"));
        assert_eq!(s.by_id(2), None);
        assert_eq!(s.by_name("c1").and_then(|b| b.optional_from), Some(3));
        // And back: the JSON form round-trips.
        let again = SnapshotSchema::from_value(serde_json::to_value(s.to_config()).expect("json")).expect("valid");
        assert_eq!(again, s);
    }

    #[test]
    fn bare_key_map_is_accepted() {
        let s = SnapshotSchema::from_json(r#"{ "t": { "id": 9, "kind": "list16", "class": "event", "fields": [] } }"#)
            .expect("valid");
        assert_eq!(s.id_of("t"), Some(9));
    }

    #[test]
    fn duplicate_id_names_both_keys() {
        let a = BlockSchema::new(3, BlockKind::List16, BlockClass::Event);
        let e = SnapshotSchema::new([("w1".to_owned(), a.clone()), ("w2".to_owned(), a)]).expect_err("dup");
        assert_eq!(e.key, "w2");
        assert_eq!(e.rule, SchemaRule::DuplicateId { id: 3, other: "w1".into() });
        assert_eq!(e.to_string(), "snapshot key `w2`: id 3 is already used by key `w1`");
    }

    #[test]
    fn a_row_is_placed_by_x_and_y_or_the_fields_at_names() {
        let json = r#"{ "w1": { "id": 2, "kind": "list16", "class": "event", "at": ["sx", "sy", "ex", "ey"],
            "fields": [ { "name": "sx", "ty": "f32" }, { "name": "sy", "ty": "f32" },
                        { "name": "ex", "ty": "f32" }, { "name": "ey", "ty": "f32" } ] } }"#;
        let schema = SnapshotSchema::from_json(json).expect("valid");
        assert_eq!(schema.by_name("w1").unwrap().place(), Some(vec![0, 1, 2, 3]));
        let block = || BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot);
        let xy = block().field(FieldSchema::new("hp", FieldType::U8)).field(f32f("y")).field(f32f("x"));
        assert_eq!(xy.place(), Some(vec![2, 1]), "x and y by name");
        assert_eq!(block().field(f32f("x")).place(), None, "no y: seen by everyone");
        assert_eq!(schema.by_name("w1").unwrap().point(), Some((0, 1)), "a segment's first point");
        assert_eq!(xy.point(), Some((2, 1)));
        assert_eq!(block().field(f32f("x")).point(), None);
        let at = |names: &[&str]| block().field(f32f("a")).field(FieldSchema::new("t", FieldType::U8)).at(names);
        assert_eq!(rule_of(at(&["a"])), (None, SchemaRule::AtCount(1)));
        assert_eq!(rule_of(at(&["a", "b"])), (Some("b".into()), SchemaRule::AtUnknownField));
        assert_eq!(rule_of(at(&["a", "t"])), (Some("t".into()), SchemaRule::AtNonFloat(FieldType::U8)));
        at(&["a", "a"]).validate("k").expect("a point on the diagonal is a point");
    }

    #[test]
    fn quantisations_are_for_floats_and_within_their_ranges() {
        let json = r#"{ "m1": { "id": 1, "kind": "indexed8", "class": "hot", "fields": [
            { "name": "x", "ty": "f32", "interp": "lerp", "quant": { "perUnit": 20 } },
            { "name": "angle", "ty": "f32", "quant": { "angleBits": 12 } } ] } }"#;
        let schema = SnapshotSchema::from_json(json).expect("valid");
        let fields = &schema.by_name("m1").unwrap().fields;
        assert_eq!((fields[0].quant, fields[1].quant), (Some(Quant::PerUnit(20)), Some(Quant::AngleBits(12))));
        let block = |f: FieldSchema| BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot).field(f);
        let u8q = FieldSchema::new("t", FieldType::U8).quant(Quant::PerUnit(1));
        assert_eq!(rule_of(block(u8q)), (Some("t".into()), SchemaRule::QuantOnNonFloat(FieldType::U8)));
        for q in [Quant::PerUnit(0), Quant::PerUnit(101), Quant::AngleBits(3), Quant::AngleBits(17)] {
            assert_eq!(rule_of(block(f32f("x").quant(q))), (Some("x".into()), SchemaRule::QuantOutOfRange(q)));
        }
        for q in [Quant::PerUnit(1), Quant::PerUnit(100), Quant::AngleBits(4), Quant::AngleBits(16)] {
            block(f32f("x").quant(q)).validate("k").expect("in range");
        }
        for bad in [r#"{ "perUnit": -1 }"#, r#"{ "step": 0.5 }"#, r#"{ "perUnit": 2, "angleBits": 8 }"#] {
            let json = format!(
                r#"{{ "t": {{ "id": 1, "kind": "list16", "class": "hot", "fields": [{{ "name": "a", "ty": "f32", "quant": {bad} }}] }} }}"#
            );
            assert!(matches!(SnapshotSchema::from_json(&json).expect_err(bad).rule, SchemaRule::Json(_)), "{bad}");
        }
    }

    #[test]
    fn a_rate_is_another_f32_field_of_a_hot_row() {
        let json = r#"{ "m1": { "id": 1, "kind": "indexed8", "class": "hot", "fields": [
            { "name": "x", "ty": "f32", "interp": "lerp", "rate": "vx" },
            { "name": "vx", "ty": "f32" } ] } }"#;
        let schema = SnapshotSchema::from_json(json).expect("valid");
        assert_eq!(schema.by_name("m1").unwrap().fields[0].rate.as_deref(), Some("vx"));
        let hot = || BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot);
        let t = || FieldSchema::new("t", FieldType::U8);
        assert_eq!(
            rule_of(hot().field(t().rate("vx")).field(f32f("vx"))),
            (Some("t".into()), SchemaRule::RateOnNonFloat(FieldType::U8))
        );
        assert_eq!(
            rule_of(hot().field(f32f("x").rate("vx"))),
            (Some("x".into()), SchemaRule::RateUnknownField("vx".into()))
        );
        assert_eq!(rule_of(hot().field(f32f("x").rate("x"))), (Some("x".into()), SchemaRule::RateOfItself));
        assert_eq!(
            rule_of(hot().field(f32f("x").rate("t")).field(t())),
            (Some("x".into()), SchemaRule::RateNonFloat(FieldType::U8))
        );
        let event =
            BlockSchema::new(2, BlockKind::List16, BlockClass::Event).field(f32f("x").rate("vx")).field(f32f("vx"));
        assert_eq!(rule_of(event), (Some("x".into()), SchemaRule::RateInEvent));
        hot().field(f32f("x").rate("vx")).field(f32f("vx")).validate("k").expect("a rate");
    }

    #[test]
    fn unknown_kind_and_junk_json_are_errors() {
        for json in [
            r#"{ "t": { "id": 1, "kind": "indexed16", "class": "hot", "fields": [] } }"#,
            r#"{ "t": { "id": 300, "kind": "list16", "class": "hot", "fields": [] } }"#,
            r#"{ "t": { "id": 1, "kind": "list16", "class": "hot", "fields": [{ "name": "a", "ty": "f64" }] } }"#,
            r#"{ "t": { "id": 1, "kind": "list16", "class": "warm", "fields": [] } }"#,
            r#"{ "t": { "id": 1, "kind": "list16", "class": "hot", "fields": [], "bogus": 1 } }"#,
            "[1, 2",
        ] {
            let e = SnapshotSchema::from_json(json).expect_err(json);
            assert!(matches!(e.rule, SchemaRule::Json(_)), "{json}: {e}");
        }
    }

    #[test]
    fn optional_from_must_leave_a_tail() {
        let (_, rule) = rule_of(flat_dynamics().optional_from(6));
        assert_eq!(rule, SchemaRule::EmptyOptionalTail { optional_from: 6, width: 6 });
        let (_, rule) = rule_of(flat_dynamics().optional_from(9));
        assert_eq!(rule, SchemaRule::EmptyOptionalTail { optional_from: 9, width: 6 });
        assert!(flat_dynamics().optional_from(5).validate("k").is_ok());
    }

    #[test]
    fn interp_only_on_hot_f32() {
        let b = BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
            .field(FieldSchema::new("team", FieldType::U8).interp(Interp::Lerp));
        assert_eq!(rule_of(b), (Some("team".into()), SchemaRule::InterpOnNonFloat(FieldType::U8)));
        let b = BlockSchema::new(1, BlockKind::List16, BlockClass::Event).field(f32f("x").interp(Interp::LerpAngle));
        assert_eq!(rule_of(b), (Some("x".into()), SchemaRule::InterpInEvent));
    }

    #[test]
    fn duplicate_field_names_are_rejected() {
        let b = BlockSchema::new(1, BlockKind::List16, BlockClass::Event).field(f32f("x")).field(f32f("x"));
        assert_eq!(rule_of(b), (Some("x".into()), SchemaRule::DuplicateField));
    }

    fn layered() -> BlockSchema {
        BlockSchema::new(5, BlockKind::IndexedNoNull8, BlockClass::Hot)
            .field(f32f("x"))
            .field(f32f("y"))
            .field(f32f("angle"))
            .field(f32f("z").role(Role::Z))
            .field(FieldSchema::new("level", FieldType::U8).role(Role::Level))
    }

    #[test]
    fn layer_roles_in_place_are_accepted() {
        assert!(layered().validate("c1").is_ok());
        assert!(layered().is_layered());
    }

    #[test]
    fn layer_roles_out_of_place() {
        let mut b = layered();
        b.fields.swap(3, 4);
        let (field, rule) = rule_of(b);
        assert_eq!(field.as_deref(), Some("z"));
        assert_eq!(rule, SchemaRule::RoleMisplaced { role: Role::Z, at: 4, want: 3 });

        let b = BlockSchema::new(5, BlockKind::IndexedNoNull8, BlockClass::Hot)
            .field(f32f("x"))
            .field(f32f("y"))
            .field(f32f("angle"))
            .field(f32f("z").role(Role::Z))
            .field(f32f("q"))
            .field(f32f("lvl").role(Role::Level));
        assert_eq!(rule_of(b).1, SchemaRule::RoleMisplaced { role: Role::Level, at: 5, want: 4 });
    }

    #[test]
    fn layer_roles_come_in_pairs() {
        let mut b = layered();
        b.fields[4].role = None;
        b.fields[4].name = "lvl".into();
        assert_eq!(rule_of(b), (Some("z".into()), SchemaRule::UnpairedLayerRole));
    }

    #[test]
    fn layer_names_without_roles_are_rejected() {
        let mut b = layered();
        b.fields[3].role = None;
        b.fields[4].role = None;
        assert_eq!(rule_of(b), (Some("z".into()), SchemaRule::LayerNameWithoutRole { at: 3 }));
        let b = BlockSchema::new(5, BlockKind::IndexedNoNull8, BlockClass::Hot)
            .field(f32f("x"))
            .field(f32f("y"))
            .field(f32f("angle"))
            .field(f32f("height"))
            .field(f32f("level"));
        assert_eq!(rule_of(b), (Some("level".into()), SchemaRule::LayerNameWithoutRole { at: 4 }));
    }

    #[test]
    fn state_role_rules() {
        let state = || FieldSchema::new("state", FieldType::U8).role(Role::State);
        // Flat: position 3, optional tail after it.
        let flat = BlockSchema::new(5, BlockKind::IndexedNoNull8, BlockClass::Hot)
            .field(f32f("x"))
            .field(f32f("y"))
            .field(f32f("angle"))
            .field(state())
            .field(f32f("vx"))
            .optional_from(4);
        assert!(flat.validate("c1").is_ok());
        let (_, rule) = rule_of(flat.clone().optional_from(3));
        assert_eq!(rule, SchemaRule::OptionalTailBeforeState { optional_from: 3, state_at: 3 });
        // Layered: position 5.
        let ok = layered().field(state()).field(f32f("vx")).optional_from(6);
        assert!(ok.validate("c1").is_ok());
        let bad = layered().field(f32f("pad")).field(state());
        assert_eq!(rule_of(bad).1, SchemaRule::RoleMisplaced { role: Role::State, at: 6, want: 5 });
        // Not u8.
        let mut wide = flat;
        wide.fields[3].ty = FieldType::U16;
        assert_eq!(rule_of(wide).1, SchemaRule::StateNotU8(FieldType::U16));
    }
}
