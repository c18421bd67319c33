//! Player input on the wire: key events, the `playerKeys` table, the shared key-state rule and the binary batch form.
//!
//! # Text form of a key event
//!
//! A key event travels as `"seq:action:name"`, for example `"12:down:forward"`:
//!
//! * `seq` — the event's sequence number, a `u32` in plain decimal: ASCII digits only
//!   (no sign, no `+`, no whitespace), at most 10 digits, and at most `4294967295`.
//!   Leading zeros are accepted on input; [`InputEvent`]'s `Display` never writes them.
//! * `action` — `down` or `up` (lower case), see [`KeyAction`].
//! * `name` — the command (`forward`, `fire`, `nextPlayer`, …): 1 to [`MAX_NAME_LEN`]
//!   ASCII letters, digits and `_`.
//!
//! Exactly two `:` separate the three parts. Anything else is an [`InputError`];
//! parsing never panics. [`InputEvent::parse`] (also `FromStr`) reads the form and
//! `Display` writes it, so `parse(format(x)) == x`.
//!
//! # The key table (`playerKeys`)
//!
//! The game declares its keys as a JSON object from name to `{ "bit", "type" }`:
//!
//! ```json
//! { "forward": { "bit": 0, "type": 0 }, "fire": { "bit": 6, "type": 1 } }
//! ```
//!
//! `bit` is the key's bit in the per-step masks (`0..64`), `type` is `0` for a held key
//! and `1` for a one-shot (trigger) key, see [`KeyKind`]. [`KeyTable`] keeps the
//! declaration order and is validated when built: every name is a valid command name,
//! every bit is below [`KEY_BITS`], no bit is used by two names and no name appears
//! twice. Unknown fields in an entry are rejected. It serializes back to the same JSON.
//!
//! # The key-state rule
//!
//! [`KeyState`] is the one type that both the authoritative host and the client
//! predictor use to turn events into per-step key bits, so the two cannot disagree:
//!
//! * events are applied at most once and in order: an event whose `seq` is not greater
//!   than the last applied one is ignored (the very first event may carry any seq,
//!   including 0);
//! * a held key (`type` 0): `down` sets its bit in `held`, `up` clears it;
//! * a one-shot key (`type` 1): `down` sets its bit in `pending`, and exactly one
//!   following [`KeyState::step`] reports it in [`KeyBits::fired`] and clears it; its
//!   `up` is accepted (its seq is consumed) but changes nothing. A one-shot pressed and
//!   released before a step therefore still fires in exactly one step;
//! * an event naming a key the table does not have is an error and does not consume
//!   its seq.
//!
//! # Binary batch form
//!
//! On the unreliable channel a packet (`KEYS_DATA`) carries a batch of events (it repeats
//! the ones not yet acknowledged): what vimp clients send. A host takes a `KEYS_DATA` of one
//! event in the text form too, as the spec writes it; the two cannot be mistaken for each
//! other (a batch whose first byte is an ASCII digit is at least 100 bytes long, a text
//! event at most 48). Names are replaced by their bits ([`KeyTable::resolve`],
//! [`KeyTable::to_event`]) and the batch is laid out as follows, multi-byte integers
//! big-endian:
//!
//! | offset          | size | field      | meaning                                                           |
//! |-----------------|------|------------|-------------------------------------------------------------------|
//! | 0               | 1    | `count`    | number of events, `0..=255`; `0` is an empty batch and ends here  |
//! | 1               | 4    | `firstSeq` | seq of event 0 (`u32`)                                            |
//! | 5               | 1    | `code[0]`  | event 0: `(action == Down) << 7 \| bit`, `bit < 64`                 |
//! | 6 + 2(i−1)      | 1    | `seqDelta` | event i (i ≥ 1): seq − seq of event i−1, `1..=255`                |
//! | 7 + 2(i−1)      | 1    | `code[i]`  | event i: same layout as `code[0]`                                  |
//!
//! A batch of `count ≥ 1` events is therefore exactly `4 + 2·count` bytes long.
//! Seqs in a batch are strictly increasing with gaps of at most 255; a batch that breaks
//! this cannot be encoded ([`encode_events`] returns an error and leaves the output
//! untouched). [`decode_events`] rejects truncated input, bytes after the batch, bits
//! of 64 and above (bit 6 of a code set), a zero delta and seqs that would pass
//! `u32::MAX`. Any batch that decodes re-encodes to the very same bytes.

use std::fmt;
use std::str::FromStr;

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::bytes::Reader;

/// Longest command name accepted, in characters (names are ASCII, so also in bytes).
pub const MAX_NAME_LEN: usize = 32;

/// Number of key bits: every key's bit is in `0..KEY_BITS`.
pub const KEY_BITS: u8 = 64;

/// Most events one binary batch can hold (its count is one byte).
pub const MAX_BATCH_EVENTS: usize = 255;

/// Longest decimal seq accepted in the text form, in digits.
const MAX_SEQ_DIGITS: usize = 10;

/// Bit of a binary event code that marks a `down`.
const CODE_DOWN: u8 = 0x80;

/// Everything that can go wrong reading or applying player input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The text event does not have exactly three `:`-separated parts.
    #[error("input event {input:?} is not `seq:action:name` (found {found} part(s), expected 3)")]
    WrongPartCount {
        /// The whole text that was parsed.
        input: String,
        /// How many `:`-separated parts it has.
        found: usize,
    },
    /// The seq part is empty or holds something other than ASCII digits.
    #[error("input seq {text:?} is not a plain decimal number")]
    InvalidSeq {
        /// The seq part as received.
        text: String,
    },
    /// The seq part is digits, but longer than 10 of them or above `u32::MAX`.
    #[error("input seq {text:?} does not fit in a u32 (at most 10 digits, at most 4294967295)")]
    SeqOutOfRange {
        /// The seq part as received.
        text: String,
    },
    /// The action part is neither `down` nor `up`.
    #[error("input action {text:?} is neither `down` nor `up`")]
    UnknownAction {
        /// The action part as received.
        text: String,
    },
    /// A command name is empty.
    #[error("command name is empty")]
    EmptyName,
    /// A command name is longer than [`MAX_NAME_LEN`].
    #[error("command name {name:?} is {len} bytes long, the limit is {MAX_NAME_LEN}")]
    NameTooLong {
        /// The name as received.
        name: String,
        /// Its length in bytes.
        len: usize,
    },
    /// A command name holds a character other than an ASCII letter, digit or `_`.
    #[error("command name {name:?} contains {ch:?}; only ASCII letters, digits and `_` are allowed")]
    InvalidNameChar {
        /// The name as received.
        name: String,
        /// The first offending character.
        ch: char,
    },
    /// A key in the key table has a bit of 64 or above.
    #[error("key {name:?} has bit {bit}, bits must be below {KEY_BITS}")]
    KeyBitOutOfRange {
        /// The key's name.
        name: String,
        /// The bit it asked for.
        bit: u8,
    },
    /// Two keys in the key table share one bit.
    #[error("keys {first:?} and {second:?} both use bit {bit}")]
    DuplicateKeyBit {
        /// The shared bit.
        bit: u8,
        /// The key declared first.
        first: String,
        /// The key declared later.
        second: String,
    },
    /// A name appears twice in the key table.
    #[error("key {name:?} is declared twice")]
    DuplicateKeyName {
        /// The repeated name.
        name: String,
    },
    /// A key's `type` is neither 0 (held) nor 1 (one-shot).
    #[error("key type {value} is neither 0 (held) nor 1 (one-shot)")]
    UnknownKeyKind {
        /// The value received.
        value: u8,
    },
    /// The key table JSON is malformed or has the wrong shape.
    #[error("key table JSON: {message}")]
    Json {
        /// The JSON reader's message.
        message: String,
    },
    /// An event names a key that the key table does not have.
    #[error("no key named {name:?} in the key table")]
    UnknownKey {
        /// The name the event carried.
        name: String,
    },
    /// A binary event's bit has no key in the key table.
    #[error("no key on bit {bit} in the key table")]
    UnboundBit {
        /// The bit the event carried.
        bit: u8,
    },
    /// A batch holds more events than one binary batch can carry.
    #[error("a batch of {count} events does not fit, the limit is {MAX_BATCH_EVENTS}")]
    TooManyEvents {
        /// How many events were given.
        count: usize,
    },
    /// An event in a binary batch has a bit of 64 or above.
    #[error("event {index} of the batch has bit {bit}, bits must be below {KEY_BITS}")]
    InvalidEventBit {
        /// Position of the event in the batch.
        index: usize,
        /// The bit it carried.
        bit: u8,
    },
    /// An event's seq is not greater than the previous event's in the batch.
    #[error("event {index} of the batch has seq {seq}, not after the previous seq {previous}")]
    SeqNotIncreasing {
        /// Position of the event in the batch.
        index: usize,
        /// Seq of the previous event.
        previous: u32,
        /// Seq of this event.
        seq: u32,
    },
    /// An event's seq is more than 255 after the previous event's in the batch.
    #[error("event {index} of the batch has seq {seq}, more than 255 after the previous seq {previous}")]
    SeqGapTooLarge {
        /// Position of the event in the batch.
        index: usize,
        /// Seq of the previous event.
        previous: u32,
        /// Seq of this event.
        seq: u32,
    },
    /// A binary batch has a seq delta of 0.
    #[error("event {index} of the batch has a seq delta of 0")]
    ZeroSeqDelta {
        /// Position of the event in the batch.
        index: usize,
    },
    /// A binary batch's seqs run past `u32::MAX`.
    #[error("event {index} of the batch has a seq past {max}", max = u32::MAX)]
    BatchSeqOverflow {
        /// Position of the event in the batch.
        index: usize,
    },
    /// A binary batch is shorter than its count says.
    #[error("batch is truncated: {expected} bytes needed, {found} present")]
    Truncated {
        /// Bytes the batch needs (as far as could be told).
        expected: usize,
        /// Bytes present.
        found: usize,
    },
    /// Bytes follow the end of a binary batch.
    #[error("{extra} byte(s) after the end of the batch")]
    TrailingBytes {
        /// How many bytes follow the batch.
        extra: usize,
    },
}

/// Checks that `name` is a valid command name: 1 to [`MAX_NAME_LEN`] ASCII letters,
/// digits and `_`.
pub fn validate_name(name: &str) -> Result<(), InputError> {
    if name.is_empty() {
        return Err(InputError::EmptyName);
    }
    if name.len() > MAX_NAME_LEN {
        return Err(InputError::NameTooLong { name: name.to_owned(), len: name.len() });
    }
    if let Some(ch) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return Err(InputError::InvalidNameChar { name: name.to_owned(), ch });
    }
    Ok(())
}

/// Whether a key went down or came up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KeyAction {
    /// The key was pressed (`down` on the wire).
    Down,
    /// The key was released (`up` on the wire).
    Up,
}

impl KeyAction {
    /// The wire word: `"down"` or `"up"`.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyAction::Down => "down",
            KeyAction::Up => "up",
        }
    }
}

impl fmt::Display for KeyAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KeyAction {
    type Err = InputError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "down" => Ok(KeyAction::Down),
            "up" => Ok(KeyAction::Up),
            _ => Err(InputError::UnknownAction { text: s.to_owned() }),
        }
    }
}

/// One key event as named in the text form `"seq:action:name"`.
///
/// Its serde form is a plain struct (dumps and logs); the wire form is the text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct InputEvent {
    /// The event's sequence number.
    pub seq: u32,
    /// Down or up.
    pub action: KeyAction,
    /// The command name, e.g. `forward`.
    pub name: String,
}

impl InputEvent {
    /// Builds an event, checking the name with [`validate_name`].
    pub fn new(seq: u32, action: KeyAction, name: impl Into<String>) -> Result<Self, InputError> {
        let name = name.into();
        validate_name(&name)?;
        Ok(InputEvent { seq, action, name })
    }

    /// Reads the text form `"seq:action:name"` (see the module docs).
    pub fn parse(text: &str) -> Result<Self, InputError> {
        let parts: Vec<&str> = text.split(':').collect();
        let [seq, action, name] = parts.as_slice() else {
            return Err(InputError::WrongPartCount { input: text.to_owned(), found: parts.len() });
        };
        let seq = parse_seq(seq)?;
        let action = action.parse::<KeyAction>()?;
        validate_name(name)?;
        Ok(InputEvent { seq, action, name: (*name).to_owned() })
    }
}

/// Reads the seq part of the text form.
fn parse_seq(text: &str) -> Result<u32, InputError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(InputError::InvalidSeq { text: text.to_owned() });
    }
    let out_of_range = || InputError::SeqOutOfRange { text: text.to_owned() };
    if text.len() > MAX_SEQ_DIGITS {
        return Err(out_of_range());
    }
    // Only ASCII digits and at most 10 of them: overflow is the only possible failure.
    text.parse::<u32>().map_err(|_| out_of_range())
}

impl fmt::Display for InputEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.seq, self.action, self.name)
    }
}

impl FromStr for InputEvent {
    type Err = InputError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        InputEvent::parse(s)
    }
}

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

/// The key bits of one fixed step, as produced by [`KeyState::step`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct KeyBits {
    /// Held keys that are down during this step.
    pub held: u64,
    /// One-shot keys that fire in this step.
    pub fired: u64,
}

/// The mask with only `bit` set, or 0 for a bit of 64 or above.
fn bit_mask(bit: u8) -> u64 {
    1u64.checked_shl(u32::from(bit)).unwrap_or(0)
}

impl KeyBits {
    /// Whether the held key on `bit` is down (false for a bit of 64 or above).
    pub fn is_held(&self, bit: u8) -> bool {
        self.held & bit_mask(bit) != 0
    }

    /// Whether the one-shot key on `bit` fires (false for a bit of 64 or above).
    pub fn fired(&self, bit: u8) -> bool {
        self.fired & bit_mask(bit) != 0
    }
}

/// The key state of one player: turns key events into per-step [`KeyBits`].
///
/// The host and the client predictor both use this type, so they apply the same rule
/// (see the module docs): events at most once and in seq order, held keys in
/// [`held`](Self::held), one-shot presses in [`pending`](Self::pending) until the
/// next [`step`](Self::step).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyState {
    /// Bits of held keys that are down.
    held: u64,
    /// Bits of one-shot keys pressed since the last step.
    pending: u64,
    /// Seq of the last applied event, `None` before the first.
    last_input_seq: Option<u32>,
}

impl KeyState {
    /// A state with no key down and no event applied.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a text-form event, looking its key up in `table`.
    ///
    /// Returns `Ok(true)` when the event was accepted (its seq is consumed, even if,
    /// like a one-shot `up`, it changes no bit) and `Ok(false)` when it was ignored as a
    /// duplicate or out of order (`seq <= last_input_seq`). An unknown name is
    /// [`InputError::UnknownKey`], whatever the seq, and does not consume the seq.
    pub fn apply(&mut self, table: &KeyTable, ev: &InputEvent) -> Result<bool, InputError> {
        let spec = table.lookup(&ev.name).ok_or_else(|| InputError::UnknownKey { name: ev.name.clone() })?;
        Ok(self.apply_bit(ev.seq, ev.action, spec))
    }

    /// Applies a binary-form event, looking its bit up in `table`.
    ///
    /// Like [`apply`](Self::apply); a bit with no key is [`InputError::UnboundBit`]
    /// and does not consume the seq.
    pub fn apply_binary(&mut self, table: &KeyTable, ev: &BinaryKeyEvent) -> Result<bool, InputError> {
        let (_, spec) = table.by_bit(ev.bit).ok_or(InputError::UnboundBit { bit: ev.bit })?;
        Ok(self.apply_bit(ev.seq, ev.action, spec))
    }

    /// Applies an event whose key is already resolved to `spec`.
    ///
    /// Returns whether it was accepted, as [`apply`](Self::apply) does. A spec whose
    /// bit is 64 or above (which no [`KeyTable`] holds) is ignored: `false`, seq not
    /// consumed.
    pub fn apply_bit(&mut self, seq: u32, action: KeyAction, spec: KeySpec) -> bool {
        if self.last_input_seq.is_some_and(|last| seq <= last) {
            return false;
        }
        let mask = bit_mask(spec.bit);
        if mask == 0 {
            return false;
        }
        match (spec.kind, action) {
            (KeyKind::Held, KeyAction::Down) => self.held |= mask,
            (KeyKind::Held, KeyAction::Up) => self.held &= !mask,
            (KeyKind::OneShot, KeyAction::Down) => self.pending |= mask,
            (KeyKind::OneShot, KeyAction::Up) => {}
        }
        self.last_input_seq = Some(seq);
        true
    }

    /// Produces the key bits of one fixed step and clears the pending one-shots.
    pub fn step(&mut self) -> KeyBits {
        let bits = KeyBits { held: self.held, fired: self.pending };
        self.pending = 0;
        bits
    }

    /// Lets go of every key (a player whose connection dropped), keeping the seq already applied.
    pub fn release_all(&mut self) {
        self.held = 0;
        self.pending = 0;
    }

    /// Bits of held keys that are down.
    pub fn held(&self) -> u64 {
        self.held
    }

    /// Bits of one-shot keys pressed since the last step.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// Seq of the last applied event, or 0 when none was applied yet.
    pub fn last_input_seq(&self) -> u32 {
        self.last_input_seq.unwrap_or(0)
    }

    /// Seq of the last applied event, or `None` when none was applied yet.
    pub fn last_input_seq_opt(&self) -> Option<u32> {
        self.last_input_seq
    }
}

/// One key event in the binary form: the key is named by its bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BinaryKeyEvent {
    /// The event's sequence number.
    pub seq: u32,
    /// Down or up.
    pub action: KeyAction,
    /// The key's bit.
    pub bit: u8,
}

impl From<(u32, KeyAction, u8)> for BinaryKeyEvent {
    fn from((seq, action, bit): (u32, KeyAction, u8)) -> Self {
        BinaryKeyEvent { seq, action, bit }
    }
}

impl From<BinaryKeyEvent> for (u32, KeyAction, u8) {
    fn from(ev: BinaryKeyEvent) -> Self {
        (ev.seq, ev.action, ev.bit)
    }
}

/// Appends a batch of `(seq, action, bit)` events to `out` in the binary form (see the
/// module docs).
///
/// Fails, leaving `out` untouched, on more than 255 events, a bit of 64 or above, or
/// seqs that are not strictly increasing or jump by more than 255.
pub fn encode_events(events: &[(u32, KeyAction, u8)], out: &mut Vec<u8>) -> Result<(), InputError> {
    let count = u8::try_from(events.len()).map_err(|_| InputError::TooManyEvents { count: events.len() })?;
    let mut previous: Option<u32> = None;
    for (index, &(seq, _, bit)) in events.iter().enumerate() {
        if bit >= KEY_BITS {
            return Err(InputError::InvalidEventBit { index, bit });
        }
        if let Some(previous) = previous {
            if seq <= previous {
                return Err(InputError::SeqNotIncreasing { index, previous, seq });
            }
            if seq - previous > u32::from(u8::MAX) {
                return Err(InputError::SeqGapTooLarge { index, previous, seq });
            }
        }
        previous = Some(seq);
    }

    out.reserve(batch_len(count));
    out.push(count);
    let mut previous: Option<u32> = None;
    for &(seq, action, bit) in events {
        match previous {
            None => out.extend_from_slice(&seq.to_be_bytes()),
            // Checked above: 1..=255.
            Some(previous) => out.push(u8::try_from(seq - previous).unwrap_or(u8::MAX)),
        }
        let down = if action == KeyAction::Down { CODE_DOWN } else { 0 };
        out.push(down | bit);
        previous = Some(seq);
    }
    Ok(())
}

/// Length in bytes of a binary batch of `count` events.
fn batch_len(count: u8) -> usize {
    match count {
        0 => 1,
        n => 4 + 2 * usize::from(n),
    }
}

/// Reads one binary batch (see the module docs); the whole of `bytes` must be the batch.
pub fn decode_events(bytes: &[u8]) -> Result<Vec<BinaryKeyEvent>, InputError> {
    let Some((&count, rest)) = bytes.split_first() else {
        return Err(InputError::Truncated { expected: 1, found: 0 });
    };
    let expected = batch_len(count);
    if bytes.len() < expected {
        return Err(InputError::Truncated { expected, found: bytes.len() });
    }
    if bytes.len() > expected {
        return Err(InputError::TrailingBytes { extra: bytes.len() - expected });
    }
    if count == 0 {
        return Ok(Vec::new());
    }
    let truncated = |_| InputError::Truncated { expected, found: bytes.len() };
    let mut r = Reader::new(rest);
    let mut seq = r.u32("first seq").map_err(truncated)?;
    let first_code = r.u8("first code").map_err(truncated)?;

    let mut events = Vec::with_capacity(usize::from(count));
    events.push(decode_code(0, seq, first_code)?);
    for index in 1..usize::from(count) {
        let [delta, code] = r.array::<2>("seq delta and code").map_err(truncated)?;
        if delta == 0 {
            return Err(InputError::ZeroSeqDelta { index });
        }
        seq = seq.checked_add(u32::from(delta)).ok_or(InputError::BatchSeqOverflow { index })?;
        events.push(decode_code(index, seq, code)?);
    }
    Ok(events)
}

/// Reads one event code byte.
fn decode_code(index: usize, seq: u32, code: u8) -> Result<BinaryKeyEvent, InputError> {
    let bit = code & !CODE_DOWN;
    if bit >= KEY_BITS {
        return Err(InputError::InvalidEventBit { index, bit });
    }
    let action = if code & CODE_DOWN != 0 { KeyAction::Down } else { KeyAction::Up };
    Ok(BinaryKeyEvent { seq, action, bit })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEYS_JSON: &str = r#"{ "forward": { "bit": 0, "type": 0 }, "fire": { "bit": 6, "type": 1 } }"#;

    fn table() -> KeyTable {
        KeyTable::from_json(KEYS_JSON).expect("the test table is valid")
    }

    fn ev(seq: u32, action: KeyAction, name: &str) -> InputEvent {
        InputEvent { seq, action, name: name.to_owned() }
    }

    fn spec(bit: u8, kind: KeyKind) -> KeySpec {
        KeySpec { bit, kind }
    }

    // ---- text form ----

    #[test]
    fn parses_examples() {
        assert_eq!(InputEvent::parse("12:down:forward"), Ok(ev(12, KeyAction::Down, "forward")));
        assert_eq!("0:up:nextPlayer".parse::<InputEvent>(), Ok(ev(0, KeyAction::Up, "nextPlayer")));
        assert_eq!(InputEvent::parse("4294967295:down:fire_2"), Ok(ev(u32::MAX, KeyAction::Down, "fire_2")));
        assert_eq!(InputEvent::parse("0000000007:up:a"), Ok(ev(7, KeyAction::Up, "a")));
        let name32 = "abcdefghijklmnopqrstuvwxyz012345";
        assert_eq!(InputEvent::parse(&format!("1:up:{name32}")), Ok(ev(1, KeyAction::Up, name32)));
    }

    #[test]
    fn formats_examples() {
        assert_eq!(ev(12, KeyAction::Down, "forward").to_string(), "12:down:forward");
        assert_eq!(ev(0, KeyAction::Up, "fire").to_string(), "0:up:fire");
        assert_eq!(KeyAction::Down.to_string(), "down");
        assert_eq!(KeyAction::Up.to_string(), "up");
    }

    #[test]
    fn rejects_junk_strings() {
        let s = |t: &str| t.to_owned();
        let cases: Vec<(&str, InputError)> = vec![
            ("", InputError::WrongPartCount { input: s(""), found: 1 }),
            ("1:down", InputError::WrongPartCount { input: s("1:down"), found: 2 }),
            ("1:down:a:b", InputError::WrongPartCount { input: s("1:down:a:b"), found: 4 }),
            ("x:down:fire", InputError::InvalidSeq { text: s("x") }),
            ("-1:up:fire", InputError::InvalidSeq { text: s("-1") }),
            ("+1:up:fire", InputError::InvalidSeq { text: s("+1") }),
            (" 1:up:fire", InputError::InvalidSeq { text: s(" 1") }),
            (":up:fire", InputError::InvalidSeq { text: s("") }),
            ("4294967296:up:fire", InputError::SeqOutOfRange { text: s("4294967296") }),
            ("00000000001:up:fire", InputError::SeqOutOfRange { text: s("00000000001") }),
            ("1:press:fire", InputError::UnknownAction { text: s("press") }),
            ("1:Down:fire", InputError::UnknownAction { text: s("Down") }),
            ("1: down:fire", InputError::UnknownAction { text: s(" down") }),
            ("1:down:", InputError::EmptyName),
            ("1:down:fi re", InputError::InvalidNameChar { name: s("fi re"), ch: ' ' }),
            ("1:down:fire\n", InputError::InvalidNameChar { name: s("fire\n"), ch: '\n' }),
            ("1:down:fé", InputError::InvalidNameChar { name: s("fé"), ch: 'é' }),
            (
                "1:down:abcdefghijklmnopqrstuvwxyz0123456",
                InputError::NameTooLong { name: s("abcdefghijklmnopqrstuvwxyz0123456"), len: 33 },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(InputEvent::parse(text), Err(expected), "input {text:?}");
        }
    }

    #[test]
    fn new_validates_name() {
        assert_eq!(InputEvent::new(3, KeyAction::Up, "fire"), Ok(ev(3, KeyAction::Up, "fire")));
        assert_eq!(InputEvent::new(3, KeyAction::Up, ""), Err(InputError::EmptyName));
    }

    // ---- key table ----

    #[test]
    fn key_table_reads_and_looks_up() {
        let t = table();
        assert_eq!(t.len(), 2);
        assert_eq!(t.lookup("forward"), Some(spec(0, KeyKind::Held)));
        assert_eq!(t.lookup("fire"), Some(spec(6, KeyKind::OneShot)));
        assert_eq!(t.lookup("jump"), None);
        assert_eq!(t.name_of(0), Some("forward"));
        assert_eq!(t.name_of(6), Some("fire"));
        assert_eq!(t.name_of(1), None);
        assert_eq!(t.name_of(200), None);
        let order: Vec<&str> = t.iter().map(|(n, _)| n).collect();
        assert_eq!(order, ["forward", "fire"]);
    }

    #[test]
    fn key_table_keeps_declaration_order() {
        let t =
            KeyTable::from_json(r#"{"zeta":{"bit":3,"type":0},"alpha":{"bit":1,"type":1},"mid":{"bit":2,"type":0}}"#)
                .expect("valid table");
        let order: Vec<&str> = t.iter().map(|(n, _)| n).collect();
        assert_eq!(order, ["zeta", "alpha", "mid"]);
    }

    #[test]
    fn key_table_serializes_to_the_same_json() {
        let json = serde_json::to_string(&table()).expect("a table serializes");
        assert_eq!(json, r#"{"forward":{"bit":0,"type":0},"fire":{"bit":6,"type":1}}"#);
        let back: KeyTable = serde_json::from_str(&json).expect("and reads back");
        assert_eq!(back, table());
    }

    #[test]
    fn key_table_validation_errors() {
        assert_eq!(
            KeyTable::from_json(r#"{"forward":{"bit":64,"type":0}}"#),
            Err(InputError::KeyBitOutOfRange { name: "forward".into(), bit: 64 })
        );
        assert_eq!(
            KeyTable::from_json(r#"{"forward":{"bit":3,"type":0},"fire":{"bit":3,"type":1}}"#),
            Err(InputError::DuplicateKeyBit { bit: 3, first: "forward".into(), second: "fire".into() })
        );
        assert_eq!(
            KeyTable::from_json(r#"{"fire":{"bit":1,"type":1},"fire":{"bit":2,"type":1}}"#),
            Err(InputError::DuplicateKeyName { name: "fire".into() })
        );
        assert_eq!(
            KeyTable::from_json(r#"{"fi re":{"bit":1,"type":1}}"#),
            Err(InputError::InvalidNameChar { name: "fi re".into(), ch: ' ' })
        );
        assert_eq!(KeyTable::from_json(r#"{"":{"bit":1,"type":1}}"#), Err(InputError::EmptyName));
        for bad in [
            r#"{"fire":{"bit":1,"type":2}}"#,
            r#"{"fire":{"bit":1}}"#,
            r#"{"fire":{"bit":1,"type":0,"extra":1}}"#,
            r#"{"fire":{"bit":300,"type":0}}"#,
            r#"{"fire":{"bit":-1,"type":0}}"#,
            r#"[]"#,
            r#"{"fire":"#,
        ] {
            assert!(matches!(KeyTable::from_json(bad), Err(InputError::Json { .. })), "{bad}");
        }
        // Through serde the same validation applies.
        assert!(serde_json::from_str::<KeyTable>(r#"{"a":{"bit":64,"type":0}}"#).is_err());
        // A table built from a map is validated too.
        let mut map = IndexMap::new();
        map.insert("a".to_owned(), spec(63, KeyKind::Held));
        map.insert("b".to_owned(), spec(63, KeyKind::OneShot));
        assert_eq!(
            KeyTable::try_from(map),
            Err(InputError::DuplicateKeyBit { bit: 63, first: "a".into(), second: "b".into() })
        );
        assert_eq!(KeyKind::try_from(7), Err(InputError::UnknownKeyKind { value: 7 }));
    }

    #[test]
    fn key_table_resolves_and_names_events() {
        let t = table();
        assert_eq!(
            t.resolve(&ev(9, KeyAction::Down, "fire")),
            Ok(BinaryKeyEvent { seq: 9, action: KeyAction::Down, bit: 6 })
        );
        assert_eq!(t.resolve(&ev(9, KeyAction::Down, "jump")), Err(InputError::UnknownKey { name: "jump".into() }));
        assert_eq!(
            t.to_event(&BinaryKeyEvent { seq: 4, action: KeyAction::Up, bit: 0 }),
            Ok(ev(4, KeyAction::Up, "forward"))
        );
        assert_eq!(
            t.to_event(&BinaryKeyEvent { seq: 4, action: KeyAction::Up, bit: 5 }),
            Err(InputError::UnboundBit { bit: 5 })
        );
    }

    // ---- key state ----

    #[test]
    fn one_shot_down_and_up_before_a_step_fires_once() {
        let t = table();
        let mut s = KeyState::new();
        assert_eq!(s.apply(&t, &ev(1, KeyAction::Down, "fire")), Ok(true));
        assert_eq!(s.apply(&t, &ev(2, KeyAction::Up, "fire")), Ok(true));
        assert_eq!(s.pending(), 1 << 6);
        assert_eq!(s.held(), 0);
        let first = s.step();
        assert_eq!(first, KeyBits { held: 0, fired: 1 << 6 });
        assert!(first.fired(6));
        assert!(!first.is_held(6));
        assert_eq!(s.step(), KeyBits { held: 0, fired: 0 });
        assert_eq!(s.pending(), 0);
    }

    #[test]
    fn held_key_stays_down_until_up() {
        let t = table();
        let mut s = KeyState::new();
        assert_eq!(s.apply(&t, &ev(5, KeyAction::Down, "forward")), Ok(true));
        assert_eq!(s.step(), KeyBits { held: 1, fired: 0 });
        assert_eq!(s.step(), KeyBits { held: 1, fired: 0 });
        assert!(KeyBits { held: 1, fired: 0 }.is_held(0));
        assert_eq!(s.apply(&t, &ev(6, KeyAction::Up, "forward")), Ok(true));
        assert_eq!(s.held(), 0);
        assert_eq!(s.step(), KeyBits { held: 0, fired: 0 });
    }

    #[test]
    fn held_key_is_untouched_by_one_shots() {
        let t = table();
        let mut s = KeyState::new();
        assert_eq!(s.apply(&t, &ev(1, KeyAction::Down, "forward")), Ok(true));
        assert_eq!(s.apply(&t, &ev(2, KeyAction::Down, "fire")), Ok(true));
        assert_eq!(s.step(), KeyBits { held: 1, fired: 0x40 });
        assert_eq!(s.step(), KeyBits { held: 1, fired: 0 });
    }

    #[test]
    fn duplicate_and_old_seqs_are_ignored() {
        let t = table();
        let mut s = KeyState::new();
        assert_eq!(s.last_input_seq(), 0);
        assert_eq!(s.last_input_seq_opt(), None);
        // The very first event may carry seq 0.
        assert_eq!(s.apply(&t, &ev(0, KeyAction::Down, "forward")), Ok(true));
        assert_eq!(s.last_input_seq_opt(), Some(0));
        assert_eq!(s.apply(&t, &ev(0, KeyAction::Up, "forward")), Ok(false));
        assert_eq!(s.held(), 1);
        assert_eq!(s.apply(&t, &ev(10, KeyAction::Down, "fire")), Ok(true));
        s.step();
        // A repeat of seq 10 does not fire again, nor does an older one.
        assert_eq!(s.apply(&t, &ev(10, KeyAction::Down, "fire")), Ok(false));
        assert_eq!(s.apply(&t, &ev(7, KeyAction::Down, "fire")), Ok(false));
        assert_eq!(s.apply(&t, &ev(9, KeyAction::Up, "forward")), Ok(false));
        assert_eq!(s.step(), KeyBits { held: 1, fired: 0 });
        assert_eq!(s.last_input_seq(), 10);
    }

    #[test]
    fn unknown_name_errors_and_keeps_the_seq() {
        let t = table();
        let mut s = KeyState::new();
        assert_eq!(s.apply(&t, &ev(3, KeyAction::Down, "forward")), Ok(true));
        assert_eq!(s.apply(&t, &ev(4, KeyAction::Down, "jump")), Err(InputError::UnknownKey { name: "jump".into() }));
        assert_eq!(s.last_input_seq(), 3);
        // Seq 4 is still free.
        assert_eq!(s.apply(&t, &ev(4, KeyAction::Up, "forward")), Ok(true));
        assert_eq!(s.held(), 0);
        assert_eq!(s.last_input_seq(), 4);
    }

    #[test]
    fn apply_binary_and_apply_bit() {
        let t = table();
        let mut s = KeyState::new();
        let b = |seq, action, bit| BinaryKeyEvent { seq, action, bit };
        assert_eq!(s.apply_binary(&t, &b(1, KeyAction::Down, 6)), Ok(true));
        assert_eq!(s.apply_binary(&t, &b(2, KeyAction::Down, 5)), Err(InputError::UnboundBit { bit: 5 }));
        assert_eq!(s.last_input_seq(), 1);
        // A bit no table can hold is ignored and leaves the seq free.
        assert!(!s.apply_bit(2, KeyAction::Down, spec(64, KeyKind::Held)));
        assert!(s.apply_bit(2, KeyAction::Down, spec(63, KeyKind::Held)));
        assert_eq!(s.step(), KeyBits { held: 1 << 63, fired: 1 << 6 });
        assert!(!KeyBits { held: u64::MAX, fired: u64::MAX }.is_held(64));
    }

    #[test]
    fn key_state_serde_round_trip() {
        let t = table();
        let mut s = KeyState::new();
        assert_eq!(s.apply(&t, &ev(8, KeyAction::Down, "forward")), Ok(true));
        assert_eq!(s.apply(&t, &ev(9, KeyAction::Down, "fire")), Ok(true));
        let json = serde_json::to_string(&s).expect("a state serializes");
        assert_eq!(json, r#"{"held":1,"pending":64,"last_input_seq":9}"#);
        let back: KeyState = serde_json::from_str(&json).expect("and reads back");
        assert_eq!(back, s);
        let fresh: KeyState =
            serde_json::from_str(r#"{"held":0,"pending":0,"last_input_seq":null}"#).expect("an empty state reads");
        assert_eq!(fresh, KeyState::default());
    }

    // ---- binary form ----

    #[test]
    fn encodes_golden_batch() {
        let mut out = vec![0xAA];
        let events = [(7, KeyAction::Down, 0), (8, KeyAction::Down, 6), (10, KeyAction::Up, 0)];
        assert_eq!(encode_events(&events, &mut out), Ok(()));
        assert_eq!(out, [0xAA, 0x03, 0, 0, 0, 7, 0x80, 0x01, 0x86, 0x02, 0x00]);
        let decoded = decode_events(&out[1..]).expect("the golden batch decodes");
        assert_eq!(
            decoded,
            [
                BinaryKeyEvent { seq: 7, action: KeyAction::Down, bit: 0 },
                BinaryKeyEvent { seq: 8, action: KeyAction::Down, bit: 6 },
                BinaryKeyEvent { seq: 10, action: KeyAction::Up, bit: 0 },
            ]
        );
    }

    #[test]
    fn encodes_edge_batches() {
        let mut out = Vec::new();
        assert_eq!(encode_events(&[], &mut out), Ok(()));
        assert_eq!(out, [0x00]);
        assert_eq!(decode_events(&[0x00]), Ok(vec![]));

        let mut out = Vec::new();
        let events = [(0x0102_0304, KeyAction::Up, 63), (0x0102_0403, KeyAction::Down, 1)];
        assert_eq!(encode_events(&events, &mut out), Ok(()));
        assert_eq!(out, [0x02, 0x01, 0x02, 0x03, 0x04, 0x3F, 0xFF, 0x81]);
    }

    #[test]
    fn encode_rejects_bad_batches_and_leaves_output() {
        let mut out = vec![9];
        assert_eq!(
            encode_events(&[(1, KeyAction::Down, 64)], &mut out),
            Err(InputError::InvalidEventBit { index: 0, bit: 64 })
        );
        assert_eq!(
            encode_events(&[(1, KeyAction::Down, 0), (1, KeyAction::Up, 0)], &mut out),
            Err(InputError::SeqNotIncreasing { index: 1, previous: 1, seq: 1 })
        );
        assert_eq!(
            encode_events(&[(5, KeyAction::Down, 0), (4, KeyAction::Up, 0)], &mut out),
            Err(InputError::SeqNotIncreasing { index: 1, previous: 5, seq: 4 })
        );
        assert_eq!(
            encode_events(&[(5, KeyAction::Down, 0), (261, KeyAction::Up, 0)], &mut out),
            Err(InputError::SeqGapTooLarge { index: 1, previous: 5, seq: 261 })
        );
        let many: Vec<(u32, KeyAction, u8)> = (0..256).map(|s| (s, KeyAction::Down, 0)).collect();
        assert_eq!(encode_events(&many, &mut out), Err(InputError::TooManyEvents { count: 256 }));
        assert_eq!(out, [9]);
        // A gap of exactly 255 is fine.
        assert_eq!(encode_events(&[(5, KeyAction::Down, 0), (260, KeyAction::Up, 0)], &mut out), Ok(()));
        assert_eq!(out, [9, 0x02, 0, 0, 0, 5, 0x80, 0xFF, 0x00]);
    }

    #[test]
    fn decode_rejects_bad_bytes() {
        let golden = [0x03, 0, 0, 0, 7, 0x80, 0x01, 0x86, 0x02, 0x00];
        assert_eq!(decode_events(&[]), Err(InputError::Truncated { expected: 1, found: 0 }));
        assert_eq!(decode_events(&golden[..9]), Err(InputError::Truncated { expected: 10, found: 9 }));
        assert_eq!(decode_events(&[0x01, 0, 0]), Err(InputError::Truncated { expected: 6, found: 3 }));
        let mut trailing = golden.to_vec();
        trailing.extend_from_slice(&[0, 0]);
        assert_eq!(decode_events(&trailing), Err(InputError::TrailingBytes { extra: 2 }));
        assert_eq!(decode_events(&[0x00, 0x00]), Err(InputError::TrailingBytes { extra: 1 }));
        // Code 0xC0: down, bit 64.
        assert_eq!(decode_events(&[0x01, 0, 0, 0, 1, 0xC0]), Err(InputError::InvalidEventBit { index: 0, bit: 64 }));
        assert_eq!(
            decode_events(&[0x02, 0, 0, 0, 1, 0x00, 0x01, 0x7F]),
            Err(InputError::InvalidEventBit { index: 1, bit: 127 })
        );
        assert_eq!(decode_events(&[0x02, 0, 0, 0, 1, 0x00, 0x00, 0x01]), Err(InputError::ZeroSeqDelta { index: 1 }));
        assert_eq!(
            decode_events(&[0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x01, 0x01]),
            Err(InputError::BatchSeqOverflow { index: 1 })
        );
    }

    // ---- properties ----

    fn action() -> impl Strategy<Value = KeyAction> {
        prop_oneof![Just(KeyAction::Down), Just(KeyAction::Up)]
    }

    fn event() -> impl Strategy<Value = InputEvent> {
        (any::<u32>(), action(), "[A-Za-z0-9_]{1,32}").prop_map(|(seq, action, name)| InputEvent { seq, action, name })
    }

    /// A valid batch: strictly increasing seqs with gaps of 1..=255, bits below 64.
    fn batch() -> impl Strategy<Value = Vec<(u32, KeyAction, u8)>> {
        (any::<u32>(), proptest::collection::vec((1u8..=255, action(), 0u8..64), 0..=255)).prop_map(|(first, steps)| {
            let mut seq = Some(first);
            let mut out = Vec::new();
            for (delta, action, bit) in steps {
                let Some(current) = seq else { break };
                out.push((current, action, bit));
                seq = current.checked_add(u32::from(delta));
            }
            out
        })
    }

    proptest! {
        #[test]
        fn text_round_trip(e in event()) {
            prop_assert_eq!(InputEvent::parse(&e.to_string()), Ok(e.clone()));
        }

        #[test]
        fn binary_round_trip(events in batch()) {
            let mut bytes = Vec::new();
            prop_assert_eq!(encode_events(&events, &mut bytes), Ok(()));
            let expected_len = if events.is_empty() { 1 } else { 4 + 2 * events.len() };
            prop_assert_eq!(bytes.len(), expected_len);
            let expected: Vec<BinaryKeyEvent> = events.iter().copied().map(Into::into).collect();
            prop_assert_eq!(decode_events(&bytes), Ok(expected));
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
            // Whatever decodes re-encodes to the same bytes.
            if let Ok(events) = decode_events(&bytes) {
                let tuples: Vec<(u32, KeyAction, u8)> = events.into_iter().map(Into::into).collect();
                let mut again = Vec::new();
                prop_assert_eq!(encode_events(&tuples, &mut again), Ok(()));
                prop_assert_eq!(again, bytes);
            }
        }

        #[test]
        fn near_valid_bytes_never_panic(
            count in any::<u8>(),
            body in proptest::collection::vec(any::<u8>(), 0..520),
        ) {
            let mut bytes = vec![count];
            bytes.extend_from_slice(&body);
            let _ = decode_events(&bytes);
        }

        #[test]
        fn random_strings_never_panic(text in any::<String>()) {
            let _ = InputEvent::parse(&text);
            let _ = KeyTable::from_json(&text);
        }

        #[test]
        fn near_valid_strings_never_panic(text in "[0-9a-z:_ +-]{0,48}") {
            // Whatever parses formats back to an equivalent event.
            if let Ok(e) = InputEvent::parse(&text) {
                prop_assert_eq!(InputEvent::parse(&e.to_string()), Ok(e));
            }
        }

        #[test]
        fn retransmitted_events_change_nothing(
            events in proptest::collection::vec(
                (0u32..40, action(), prop_oneof![Just("forward"), Just("fire"), Just("jump")]),
                0..40,
            ),
        ) {
            let t = table();
            let mut once = KeyState::new();
            let mut twice = KeyState::new();
            for (seq, action, name) in &events {
                let e = ev(*seq, *action, name);
                let _ = once.apply(&t, &e);
                let _ = twice.apply(&t, &e);
            }
            for (seq, action, name) in &events {
                let e = ev(*seq, *action, name);
                prop_assert!(!matches!(twice.apply(&t, &e), Ok(true)));
            }
            prop_assert_eq!(once, twice);
        }
    }
}
