//! What the payload types share on the wire: the size check, reading a part with serde, and the [`Payload`] trait of the message tables.
//!
//! Serde reads and writes every payload's JSON form. Its errors are only text, so a
//! part whose errors must be named on their own (a stat row inside a stat update) is
//! read in a second step: its parent reads it as an [`Unread`] JSON value and hands it
//! to the part's own [`Part::read`].

use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{MAX_META_LEN, MetaError};

/// A part of a payload still to be read on its own, so that a mismatch inside it names it.
pub(super) type Unread = Value;

/// A payload or a part of one, as its shape errors name it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Part {
    /// What is read ("stat row", "vote"…).
    pub(super) what: &'static str,
    /// The shape it must have.
    pub(super) expected: &'static str,
}

impl Part {
    /// The error for a value that does not have this part's shape.
    pub(super) fn mismatch(self) -> MetaError {
        MetaError::Shape { what: self.what, expected: self.expected }
    }

    /// Reads `value` as `T`; whatever serde refuses is this part's shape error.
    pub(super) fn read<T: DeserializeOwned>(self, value: Value) -> Result<T, MetaError> {
        T::deserialize(value).map_err(|_| self.mismatch())
    }

    /// Reads a JSON object as `T`. Serde would also build a struct from an array, field by
    /// field; the wire has no such form.
    pub(super) fn read_object<T: DeserializeOwned>(self, value: Value) -> Result<T, MetaError> {
        if value.is_object() { self.read(value) } else { Err(self.mismatch()) }
    }
}

/// Size check, then one JSON value.
pub(super) fn parse(bytes: &[u8]) -> Result<Value, MetaError> {
    if bytes.len() > MAX_META_LEN {
        return Err(MetaError::TooLarge { len: bytes.len() });
    }
    serde_json::from_slice(bytes).map_err(|e| MetaError::Json { message: e.to_string() })
}

/// The compact JSON of a payload.
pub(super) fn write(payload: &impl Serialize) -> Vec<u8> {
    // Writing to memory fails only on a map key that is not a string, or on an error a
    // `Serialize` impl raises itself; no payload type has either.
    serde_json::to_vec(payload).expect("a meta payload always serialises")
}

/// A payload as a JSON value.
pub(super) fn to_value(payload: &impl Serialize) -> Value {
    // As in `write`: nothing in a payload makes serde fail.
    serde_json::to_value(payload).expect("a meta payload always serialises")
}

/// For `#[serde(default, deserialize_with = "present")]`: an optional element or field
/// that, when it is there, must be a `T`. Serde's `Option` alone would also take `null`.
pub(super) fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// What the message tables need of the payload type of port `PORT`: serde writes it,
/// [`Payload::read`] reads it (shape, then the type's rules), [`Payload::check`] holds
/// the rules the wire needs beyond the type.
pub(super) trait Payload<const PORT: u8>: Serialize + Sized {
    /// Reads the JSON form.
    fn read(value: Value) -> Result<Self, MetaError>;

    /// Checks the rules the wire needs; what passes round-trips.
    fn check(&self) -> Result<(), MetaError> {
        Ok(())
    }
}
