//! Rows by name: a game finds each field of a key by the name its schema declares, once when
//! the schema loads, and reads and writes its rows through what it found.
//!
//! A row is a positional `Vec<FieldValue>` on the wire and in the interpolation buffer. Code
//! outside the codec never indexes one by a number: it holds a [`Field`] per field it uses,
//! from [`BlockSchema::named`], or a struct of them declared with
//! [`row_fields!`](crate::row_fields). A field inserted in the middle of a key then moves
//! every position, and no reader notices.
//!
//! ```
//! use vimp_netcode::schema::{BlockClass, BlockKind, BlockSchema, FieldSchema, FieldType};
//! use vimp_netcode::snapshot::FieldValue;
//!
//! vimp_netcode::row_fields! {
//!     /// A tank row, by name.
//!     pub struct Tank { x: "x", team: "teamId" }
//! }
//!
//! let block = BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
//!     .field(FieldSchema::new("teamId", FieldType::U8))
//!     .field(FieldSchema::new("x", FieldType::F32));
//! let tank = Tank::of(&block).expect("both fields are declared");
//! let mut row = tank.row();
//! tank.x.set(&mut row, 12.5);
//! tank.team.set(&mut row, 3.0);
//! assert_eq!(row, vec![FieldValue::U8(3), FieldValue::F32(12.5)]);
//! assert_eq!((tank.x.f32(&row), tank.team.u8(&row)), (12.5, 3));
//! ```

use super::{BlockSchema, FieldType, LEVEL_POSITION, Role, Z_POSITION};
use crate::snapshot::{FieldValue, round2};

/// Where a key's rows keep one field, and its type: found by name ([`BlockSchema::named`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    at: usize,
    ty: FieldType,
}

/// A field a game reads that its key does not declare ([`BlockSchema::named`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("key {key} declares no field named {name:?}")]
pub struct MissingField {
    /// The key's id.
    pub key: u8,
    /// The name looked for.
    pub name: String,
}

impl Field {
    /// The field's value in `row`; `None` where the row is shorter (a row of another key).
    pub fn get(self, row: &[FieldValue]) -> Option<FieldValue> {
        row.get(self.at).copied()
    }

    /// The value as `f32` (0 where the row lacks it).
    pub fn f32(self, row: &[FieldValue]) -> f32 {
        self.get(row).map_or(0.0, FieldValue::as_f32)
    }

    /// The value as `u32` (0 where the row lacks it; an `f32` truncated toward zero).
    pub fn u32(self, row: &[FieldValue]) -> u32 {
        self.get(row).map_or(0, FieldValue::as_u32)
    }

    /// The value as `u8` (saturated).
    pub fn u8(self, row: &[FieldValue]) -> u8 {
        self.u32(row).min(u32::from(u8::MAX)) as u8
    }

    /// Sets the field in `row` to `value`, converted to the field's type: an `f32` with the
    /// two decimals every row carries ([`round2`]), an integer truncated toward zero and
    /// saturated. A row too short is left as it is.
    pub fn set(self, row: &mut [FieldValue], value: f32) {
        if let Some(slot) = row.get_mut(self.at) {
            *slot = match self.ty {
                FieldType::F32 => FieldValue::F32(round2(value)),
                FieldType::U8 => FieldValue::U8(value as u8),
                FieldType::U16 => FieldValue::U16(value as u16),
                FieldType::U32 => FieldValue::U32(value as u32),
            };
        }
    }

    /// The field's type.
    pub fn ty(self) -> FieldType {
        self.ty
    }
}

/// Sets each field of `values` in `row` ([`Field::set`]).
pub fn set_all(row: &mut [FieldValue], values: impl IntoIterator<Item = (Field, f32)>) {
    for (field, value) in values {
        field.set(row, value);
    }
}

impl BlockSchema {
    /// The field named `name`.
    pub fn named(&self, name: &str) -> Result<Field, MissingField> {
        self.fields
            .iter()
            .position(|f| f.name == name)
            .map(|at| Field { at, ty: self.fields[at].ty })
            .ok_or_else(|| MissingField { key: self.id, name: name.to_owned() })
    }

    /// One step of `field`'s quantisation in delta frames ([`super::Quant::step`]): a value
    /// read from a frame is within half of it of the host's.
    pub fn step_of(&self, field: Field) -> f32 {
        self.fields.get(field.at).and_then(|f| f.quant).unwrap_or(super::Quant::DEFAULT).step()
    }

    /// A row of this key with every field zero, for a writer to fill by name.
    pub fn zero_row(&self) -> crate::snapshot::Row {
        self.fields.iter().map(|f| FieldValue::zero(f.ty)).collect()
    }
}

/// Declares a struct of a key's [`Field`]s, each found by the name the schema declares:
/// `Name::of(&block)` finds them all (the error names the first one missing), and
/// `name.row()` gives a row of the key with every field zero, for a writer to fill. See the
/// [module docs](crate::schema::names).
#[macro_export]
macro_rules! row_fields {
    ($(#[$meta:meta])* $vis:vis struct $name:ident { $($(#[$field_meta:meta])* $field:ident: $wire:literal),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        $vis struct $name {
            $($(#[$field_meta])* #[doc = concat!("`", $wire, "`")] pub $field: $crate::schema::Field,)*
            zero: $crate::snapshot::Row,
        }

        impl $name {
            /// Finds each field in `block` by its name.
            pub fn of(block: &$crate::schema::BlockSchema) -> Result<Self, $crate::schema::MissingField> {
                Ok($name { $($field: block.named($wire)?,)* zero: block.zero_row() })
            }

            /// A row of the key with every field zero.
            pub fn row(&self) -> $crate::snapshot::Row {
                self.zero.clone()
            }
        }
    };
}

/// Where a map-dynamics row keeps the engine's values (the table in the [schema
/// docs](super)): the head `x`, `y`, `angle`, the `z`/`level` pair and the `state` byte by their
/// roles, and the velocities `vx`, `vy`, `angvel`, the fields after the head that have no role,
/// in that order. The one row whose layout the spec fixes by position, read here only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapBodyFields {
    /// `x`: the body's corner, world units.
    pub x: Field,
    /// `y`.
    pub y: Field,
    /// `angle`, radians.
    pub angle: Field,
    /// `(z, level)`, when the rows carry them (layered maps).
    pub height: Option<(Field, Field)>,
    /// The game's `state` byte, when declared.
    pub state: Option<Field>,
    /// `vx`, `vy`, `angvel`, as many as the row has.
    pub velocity: [Option<Field>; 3],
}

impl MapBodyFields {
    /// The fields of the map's set key `block` (a schema that passed validation has the head).
    pub fn of(block: &BlockSchema) -> MapBodyFields {
        let field = |at: usize| block.fields.get(at).map(|f| Field { at, ty: f.ty });
        let head = |at: usize| field(at).unwrap_or(Field { at, ty: FieldType::F32 });
        let role = |role: Role| block.role_position(role).and_then(field);
        let height = role(Role::Z).zip(role(Role::Level));
        debug_assert!(height.is_none_or(|(z, l)| (z.at, l.at) == (Z_POSITION, LEVEL_POSITION)));
        let mut tail = (3..block.fields.len()).filter(|&i| block.fields[i].role.is_none()).filter_map(field);
        MapBodyFields {
            x: head(0),
            y: head(1),
            angle: head(2),
            height,
            state: role(Role::State),
            velocity: [tail.next(), tail.next(), tail.next()],
        }
    }

    /// The body's `(level, z)` in `row` (`(0, 0)` where the rows carry none).
    pub fn level(&self, row: &[FieldValue]) -> (u8, f32) {
        self.height.map_or((0, 0.0), |(z, level)| (level.u8(row), z.f32(row)))
    }

    /// The body's `[vx, vy, angvel]` in `row` (0 for what the row lacks).
    pub fn velocity(&self, row: &[FieldValue]) -> [f32; 3] {
        self.velocity.map(|v| v.map_or(0.0, |v| v.f32(row)))
    }
}
