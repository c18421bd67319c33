//! The key table (`playerKeys`): which key names a game has, their bits and kinds.

use super::*;

/// How a key behaves: the `type` of a `playerKeys` entry.
///
/// Serialized as the integer `0` ([`KeyKind::Held`]) or `1` ([`KeyKind::OneShot`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum KeyKind {
    /// `type` 0: the key's bit is set from its `down` until its `up`.
    Held,
    /// `type` 1: a `down` fires the key in exactly one following step; `up` is ignored.
    OneShot,
}

impl TryFrom<u8> for KeyKind {
    type Error = InputError;

    fn try_from(value: u8) -> Result<Self, Self::Error> {
        match value {
            0 => Ok(KeyKind::Held),
            1 => Ok(KeyKind::OneShot),
            _ => Err(InputError::UnknownKeyKind { value }),
        }
    }
}

impl From<KeyKind> for u8 {
    fn from(kind: KeyKind) -> u8 {
        match kind {
            KeyKind::Held => 0,
            KeyKind::OneShot => 1,
        }
    }
}

/// One entry of the key table: `{ "bit": 0, "type": 0 }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeySpec {
    /// The key's bit in the per-step masks; a [`KeyTable`] guarantees it is below [`KEY_BITS`].
    pub bit: u8,
    /// Held or one-shot (`type` in JSON).
    #[serde(rename = "type")]
    pub kind: KeyKind,
}

/// The validated key table (`playerKeys`): command name → [`KeySpec`], in declaration order.
///
/// Every name is valid ([`validate_name`]), every bit is below [`KEY_BITS`], and no two
/// keys share a bit, so a table holds at most 64 keys. Deserializing validates;
/// serializing writes the same JSON object form back, in declaration order.
#[derive(Clone)]
pub struct KeyTable {
    /// The keys, in declaration order.
    keys: IndexMap<String, KeySpec>,
    /// For each bit, the index in `keys` of the key on it.
    by_bit: [Option<u8>; KEY_BITS as usize],
}

impl KeyTable {
    /// Builds and validates a table from name → spec, keeping the map's order.
    pub fn new(keys: IndexMap<String, KeySpec>) -> Result<Self, InputError> {
        Self::from_entries(keys)
    }

    /// Reads and validates a table from its JSON object form.
    ///
    /// Validation problems come back as their own variants (naming the key); a
    /// malformed document or an entry of the wrong shape as [`InputError::Json`].
    pub fn from_json(json: &str) -> Result<Self, InputError> {
        let RawEntries(entries) =
            serde_json::from_str(json).map_err(|e| InputError::Json { message: e.to_string() })?;
        Self::from_entries(entries)
    }

    /// Validates entries in order; shared by every way of building a table.
    fn from_entries(entries: impl IntoIterator<Item = (String, KeySpec)>) -> Result<Self, InputError> {
        let mut table = KeyTable::default();
        for (name, spec) in entries {
            validate_name(&name)?;
            if table.keys.contains_key(&name) {
                return Err(InputError::DuplicateKeyName { name });
            }
            let Some(slot) = table.by_bit.get_mut(usize::from(spec.bit)) else {
                return Err(InputError::KeyBitOutOfRange { name, bit: spec.bit });
            };
            if let Some(first) = *slot {
                let first = table.keys.get_index(usize::from(first)).map(|(n, _)| n.clone()).unwrap_or_default();
                return Err(InputError::DuplicateKeyBit { bit: spec.bit, first, second: name });
            }
            // At most one key per bit and 64 bits, so the index is below 64.
            *slot = u8::try_from(table.keys.len()).ok();
            table.keys.insert(name, spec);
        }
        Ok(table)
    }

    /// The spec of the key called `name`, if any.
    pub fn lookup(&self, name: &str) -> Option<KeySpec> {
        self.keys.get(name).copied()
    }

    /// The name of the key on `bit`, if any.
    pub fn name_of(&self, bit: u8) -> Option<&str> {
        self.by_bit(bit).map(|(name, _)| name)
    }

    /// The name and spec of the key on `bit`, if any.
    pub fn by_bit(&self, bit: u8) -> Option<(&str, KeySpec)> {
        let index = (*self.by_bit.get(usize::from(bit))?)?;
        self.keys.get_index(usize::from(index)).map(|(name, spec)| (name.as_str(), *spec))
    }

    /// The keys in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, KeySpec)> {
        self.keys.iter().map(|(name, spec)| (name.as_str(), *spec))
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the table has no keys.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Replaces an event's name by its bit, for the binary form.
    pub fn resolve(&self, ev: &InputEvent) -> Result<BinaryKeyEvent, InputError> {
        let spec = self.lookup(&ev.name).ok_or_else(|| InputError::UnknownKey { name: ev.name.clone() })?;
        Ok(BinaryKeyEvent { seq: ev.seq, action: ev.action, bit: spec.bit })
    }

    /// Replaces a binary event's bit by its key's name.
    pub fn to_event(&self, b: &BinaryKeyEvent) -> Result<InputEvent, InputError> {
        let name = self.name_of(b.bit).ok_or(InputError::UnboundBit { bit: b.bit })?;
        Ok(InputEvent { seq: b.seq, action: b.action, name: name.to_owned() })
    }
}

impl Default for KeyTable {
    fn default() -> Self {
        KeyTable { keys: IndexMap::new(), by_bit: [None; KEY_BITS as usize] }
    }
}

impl fmt::Debug for KeyTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// Two tables are equal when they hold the same keys in the same order.
impl PartialEq for KeyTable {
    fn eq(&self, other: &Self) -> bool {
        self.keys.iter().eq(other.keys.iter())
    }
}

impl Eq for KeyTable {}

impl TryFrom<IndexMap<String, KeySpec>> for KeyTable {
    type Error = InputError;

    fn try_from(keys: IndexMap<String, KeySpec>) -> Result<Self, Self::Error> {
        KeyTable::new(keys)
    }
}

impl Serialize for KeyTable {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.keys.iter())
    }
}

impl<'de> Deserialize<'de> for KeyTable {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let RawEntries(entries) = RawEntries::deserialize(deserializer)?;
        KeyTable::from_entries(entries).map_err(serde::de::Error::custom)
    }
}

/// The key table's JSON object read as-is, every entry in order, repeated names kept
/// (so validation can report them instead of the last one silently winning).
struct RawEntries(Vec<(String, KeySpec)>);

impl<'de> Deserialize<'de> for RawEntries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = RawEntries;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object from key name to { \"bit\", \"type\" }")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<RawEntries, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry::<String, KeySpec>()? {
                    entries.push(entry);
                }
                Ok(RawEntries(entries))
            }
        }

        deserializer.deserialize_map(Visitor)
    }
}
