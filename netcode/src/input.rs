//! Player input on the wire: key events, pointer aims, the `playerKeys` table, the shared input-state rule and the binary batch form.
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
//! # Pointer aims
//!
//! The spec's `apply_aim(seq, x, y, flags)` is the pointer's channel beside the keys: an
//! [`AimEvent`] carries a world point and the pointer's flags ([`Aim`]: bit 0
//! [`AIM_PRESSED`], bit 1 [`AIM_DOUBLE_TAP`]), or `None` to let go of the aim. Aims share
//! the keys' seq space, so they are acknowledged, repeated and replayed with them, and
//! [`KeyState`] applies them by the same rule: at most once, in seq order, the latest one
//! wins and stays until the next ([`KeyState::apply_aim`]); every step's [`KeyBits::aim`]
//! is the aim in force. What an aim does is the game's (the tanks turn the gun toward
//! the point); the host and the predictor read it from the same bits.
//!
//! An aim's point is finite and within ±[`MAX_AIM_COORD`] on both axes: [`Aim::new`]
//! refuses NaN and infinities and clamps larger values, the decoder refuses them, and
//! [`KeyState::apply_aim`] ignores an aim that is not [`Aim::is_valid`].
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
//! | field      | size | meaning                                                              |
//! |------------|------|----------------------------------------------------------------------|
//! | `count`    | 1    | number of events, `0..=255`; `0` is an empty batch and ends here     |
//! | `firstSeq` | 4    | seq of event 0 (`u32`)                                               |
//! | `code[0]`  | 1    | event 0's code (below)                                               |
//! | `aim[0]`   | 0/9  | event 0's aim, only after code `0x40`: `x` f32, `y` f32, `flags` u8 |
//! | `seqDelta` | 1    | event i (i ≥ 1): seq − seq of event i−1, `1..=255`                   |
//! | `code[i]`  | 1    | event i's code                                                       |
//! | `aim[i]`   | 0/9  | event i's aim, only after code `0x40`                                |
//!
//! A code is `(action == Down) << 7 | bit` for a key event (`bit < 64`: `0x00..=0x3F` up,
//! `0x80..=0xBF` down), `0x40` for an aim at a point (the 9 bytes follow), `0x41` for
//! letting go of the aim and `0x42` for a view (5 bytes follow: `tick` u32 and `frac` u8,
//! see below); every other code (`0x43..=0x7F`, `0xC0..=0xFF`) is refused. A batch of
//! `count ≥ 1` events is therefore `4 + 2·count + 9·aims + 5·views` bytes long, and one of
//! key events only is exactly what vimp sent before aims existed (a host says in its
//! welcome whether it takes aims, [`crate::session::Welcome::aim`], and views,
//! [`crate::session::Welcome::view`]).
//!
//! # Views (lag compensation)
//!
//! A client draws everyone else in the past (its interpolation time), so a shot aimed at
//! what it sees is aimed at where the target was. A [`ViewEvent`] says which world the
//! player saw: the host's tick of it, `tick + frac / 256` (the server time of the world
//! drawn, in ticks: [`Frame::server_time_ms`](crate::snapshot::Frame::server_time_ms) over
//! the tick's length). A client sends one right before each one-shot press, in the same
//! batch; [`KeyState`] holds it for the next [`KeyState::step`] only ([`KeyBits::view`]), so
//! it goes with the shots of that step and no later one. What the game does with it (the
//! tanks cast a hitscan shot against the hulls as they were then) is the game's; the host
//! bounds how far back a view may go before it reaches the sim.
//!
//! Seqs in a batch are strictly increasing with gaps of at most 255; a batch that breaks
//! this cannot be encoded ([`encode_inputs`] returns an error and leaves the output
//! untouched). [`decode_inputs`] rejects truncated input, bytes after the batch, bits
//! of 64 and above and unknown codes, aims that are not finite or beyond
//! ±[`MAX_AIM_COORD`], a zero delta and seqs that would pass `u32::MAX`. Any batch that
//! decodes re-encodes to the very same bytes.

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

/// Binary event code of an aim at a point (its 9 bytes follow).
const CODE_AIM: u8 = 0x40;

/// Binary event code of letting go of the aim.
const CODE_AIM_OFF: u8 = 0x41;

/// Bytes an aim's point and flags take in the binary form.
const AIM_BYTES: usize = 9;

/// Binary event code of a view (its 5 bytes follow).
const CODE_VIEW: u8 = 0x42;

/// Bytes a view's tick and fraction take in the binary form.
const VIEW_BYTES: usize = 5;

/// Largest aim coordinate, in absolute value, on either axis (world units).
pub const MAX_AIM_COORD: f32 = 1_000_000.0;

/// Flag of an [`Aim`]: the pointer is pressed (bit 0).
pub const AIM_PRESSED: u8 = 1;

/// Flag of an [`Aim`]: the press is a double tap (bit 1).
pub const AIM_DOUBLE_TAP: u8 = 2;

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
    /// An event in a binary batch has a bit of 64 or above (for a decoded code: a code that is
    /// neither a key event nor an aim, its low 7 bits as the bit).
    #[error("event {index} of the batch has bit {bit}, bits must be below {KEY_BITS}")]
    InvalidEventBit {
        /// Position of the event in the batch.
        index: usize,
        /// The bit it carried.
        bit: u8,
    },
    /// An aim's point is not finite or lies beyond ±[`MAX_AIM_COORD`].
    #[error("event {index} of the batch aims at a point that is not finite or beyond ±{MAX_AIM_COORD}")]
    InvalidAim {
        /// Position of the event in the batch.
        index: usize,
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

/// A pointer aim: a world point and the pointer's flags (see the module docs).
///
/// Two aims are equal when their bits are: the host and the predictor must agree to the
/// bit, and a valid aim holds no NaN.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Aim {
    /// The point's x, world units.
    pub x: f32,
    /// The point's y, world units.
    pub y: f32,
    /// The pointer's flags: [`AIM_PRESSED`], [`AIM_DOUBLE_TAP`]; other bits are carried as they are.
    pub flags: u8,
}

impl Aim {
    /// An aim at `(x, y)`, each coordinate clamped to ±[`MAX_AIM_COORD`]; `None` when either
    /// is NaN (an infinity clamps).
    pub fn new(x: f32, y: f32, flags: u8) -> Option<Aim> {
        if x.is_nan() || y.is_nan() {
            return None;
        }
        let clamp = |v: f32| v.clamp(-MAX_AIM_COORD, MAX_AIM_COORD);
        Some(Aim { x: clamp(x), y: clamp(y), flags })
    }

    /// Whether both coordinates are finite and within ±[`MAX_AIM_COORD`].
    pub fn is_valid(&self) -> bool {
        let ok = |v: f32| v.is_finite() && v.abs() <= MAX_AIM_COORD;
        ok(self.x) && ok(self.y)
    }

    /// Whether the pointer is pressed ([`AIM_PRESSED`]).
    pub fn pressed(&self) -> bool {
        self.flags & AIM_PRESSED != 0
    }

    /// Whether the press is a double tap ([`AIM_DOUBLE_TAP`]).
    pub fn double_tap(&self) -> bool {
        self.flags & AIM_DOUBLE_TAP != 0
    }
}

impl PartialEq for Aim {
    fn eq(&self, other: &Self) -> bool {
        self.x.to_bits() == other.x.to_bits() && self.y.to_bits() == other.y.to_bits() && self.flags == other.flags
    }
}

impl Eq for Aim {}

impl std::hash::Hash for Aim {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.x.to_bits(), self.y.to_bits(), self.flags).hash(state);
    }
}

/// A moment of the host's match as a client drew it: tick `tick` and `frac / 256` of the
/// next (see [Views](self#views-lag-compensation)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct ViewTime {
    /// The whole tick.
    pub tick: u32,
    /// How far on to the next tick, in 256ths.
    pub frac: u8,
}

impl ViewTime {
    /// The moment `ticks` (a tick count with its fraction), rounded down to a 256th; `None`
    /// for a moment that is not finite, before tick 0 or past `u32::MAX`.
    pub fn from_ticks(ticks: f64) -> Option<ViewTime> {
        if !ticks.is_finite() || ticks < 0.0 || ticks >= f64::from(u32::MAX) {
            return None;
        }
        let whole = ticks.floor();
        let frac = ((ticks - whole) * 256.0).floor().clamp(0.0, 255.0) as u8;
        Some(ViewTime { tick: whole as u32, frac })
    }

    /// The moment in ticks.
    pub fn ticks(self) -> f64 {
        f64::from(self.tick) + f64::from(self.frac) / 256.0
    }

    /// The moment in 256ths of a tick: what the host compares and clamps.
    pub fn in_256ths(self) -> u64 {
        u64::from(self.tick) << 8 | u64::from(self.frac)
    }

    /// The moment `n` 256ths of a tick after tick 0 (`u32::MAX` ticks at most).
    pub fn from_256ths(n: u64) -> ViewTime {
        let n = n.min((u64::from(u32::MAX) << 8) | 0xFF);
        ViewTime { tick: (n >> 8) as u32, frac: (n & 0xFF) as u8 }
    }
}

/// The input of one fixed step, as produced by [`KeyState::step`]: key bits and the aim in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct KeyBits {
    /// Held keys that are down during this step.
    pub held: u64,
    /// One-shot keys that fire in this step.
    pub fired: u64,
    /// The pointer's aim, while there is one (the latest [`AimEvent`]'s).
    pub aim: Option<Aim>,
    /// The world the player saw when it pressed this step's one-shots (the step's
    /// [`ViewEvent`], if one came since the last step).
    pub view: Option<ViewTime>,
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

/// The input state of one player: turns key events and aims into per-step [`KeyBits`].
///
/// The host and the client predictor both use this type, so they apply the same rule
/// (see the module docs): events at most once and in seq order, held keys in
/// [`held`](Self::held), one-shot presses in [`pending`](Self::pending) until the
/// next [`step`](Self::step), the latest aim in [`aim`](Self::aim).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyState {
    /// Bits of held keys that are down.
    held: u64,
    /// Bits of one-shot keys pressed since the last step.
    pending: u64,
    /// Seq of the last applied event, `None` before the first.
    last_input_seq: Option<u32>,
    /// The latest aim, until one lets go of it.
    aim: Option<Aim>,
    /// The view that came since the last step, for its one-shots.
    #[serde(default)]
    view: Option<ViewTime>,
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

    /// Applies an aim event: `Some` aims at its point until the next aim, `None` lets go.
    ///
    /// Returns whether it was accepted, by the keys' seq rule ([`apply`](Self::apply)). An
    /// aim that is not [`Aim::is_valid`] (which no decoded batch holds) is ignored: `false`,
    /// seq not consumed.
    pub fn apply_aim(&mut self, seq: u32, aim: Option<Aim>) -> bool {
        if self.last_input_seq.is_some_and(|last| seq <= last) || aim.is_some_and(|a| !a.is_valid()) {
            return false;
        }
        self.aim = aim;
        self.last_input_seq = Some(seq);
        true
    }

    /// Applies a view: the world the player saw for the one-shots of the next step (a later
    /// view before that step replaces it).
    ///
    /// Returns whether it was accepted, by the keys' seq rule ([`apply`](Self::apply)).
    pub fn apply_view(&mut self, seq: u32, view: ViewTime) -> bool {
        if self.last_input_seq.is_some_and(|last| seq <= last) {
            return false;
        }
        self.view = Some(view);
        self.last_input_seq = Some(seq);
        true
    }

    /// Applies a binary event of any kind ([`apply_binary`](Self::apply_binary),
    /// [`apply_aim`](Self::apply_aim), [`apply_view`](Self::apply_view)).
    pub fn apply_input(&mut self, table: &KeyTable, input: &WireInput) -> Result<bool, InputError> {
        match input {
            WireInput::Key(ev) => self.apply_binary(table, ev),
            WireInput::Aim(ev) => Ok(self.apply_aim(ev.seq, ev.aim)),
            WireInput::View(ev) => Ok(self.apply_view(ev.seq, ev.view)),
        }
    }

    /// Produces the input of one fixed step and clears the pending one-shots and view.
    pub fn step(&mut self) -> KeyBits {
        let bits = KeyBits { held: self.held, fired: self.pending, aim: self.aim, view: self.view.take() };
        self.pending = 0;
        bits
    }

    /// Lets go of every key and of the aim (a player whose connection dropped), keeping the
    /// seq already applied.
    pub fn release_all(&mut self) {
        self.held = 0;
        self.pending = 0;
        self.aim = None;
        self.view = None;
    }

    /// The aim in force, if any.
    pub fn aim(&self) -> Option<Aim> {
        self.aim
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

/// An aim event: the binary form's aim, in the keys' seq space (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AimEvent {
    /// The event's sequence number.
    pub seq: u32,
    /// The point aimed at, or `None` to let go of the aim.
    pub aim: Option<Aim>,
}

/// A view event: the world the player saw for the one-shots that follow (see
/// [Views](self#views-lag-compensation)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ViewEvent {
    /// The event's sequence number.
    pub seq: u32,
    /// The moment drawn.
    pub view: ViewTime,
}

/// One event of a binary batch: a key event, an aim or a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WireInput {
    /// A key went down or up.
    Key(BinaryKeyEvent),
    /// The pointer aims somewhere, or lets go.
    Aim(AimEvent),
    /// The world the player saw, for the one-shots that follow.
    View(ViewEvent),
}

impl WireInput {
    /// The event's sequence number.
    pub fn seq(&self) -> u32 {
        match self {
            WireInput::Key(e) => e.seq,
            WireInput::Aim(e) => e.seq,
            WireInput::View(e) => e.seq,
        }
    }
}

impl From<ViewEvent> for WireInput {
    fn from(ev: ViewEvent) -> Self {
        WireInput::View(ev)
    }
}

impl From<BinaryKeyEvent> for WireInput {
    fn from(ev: BinaryKeyEvent) -> Self {
        WireInput::Key(ev)
    }
}

impl From<(u32, KeyAction, u8)> for WireInput {
    fn from(ev: (u32, KeyAction, u8)) -> Self {
        WireInput::Key(ev.into())
    }
}

impl From<AimEvent> for WireInput {
    fn from(ev: AimEvent) -> Self {
        WireInput::Aim(ev)
    }
}

/// Appends a batch of `(seq, action, bit)` key events to `out` in the binary form (see
/// [`encode_inputs`]).
pub fn encode_events(events: &[(u32, KeyAction, u8)], out: &mut Vec<u8>) -> Result<(), InputError> {
    let inputs: Vec<WireInput> = events.iter().copied().map(WireInput::from).collect();
    encode_inputs(&inputs, out)
}

/// Appends a batch of events to `out` in the binary form (see the module docs).
///
/// Fails, leaving `out` untouched, on more than 255 events, a bit of 64 or above, an aim
/// that is not [`Aim::is_valid`], or seqs that are not strictly increasing or jump by
/// more than 255.
pub fn encode_inputs(events: &[WireInput], out: &mut Vec<u8>) -> Result<(), InputError> {
    let count = u8::try_from(events.len()).map_err(|_| InputError::TooManyEvents { count: events.len() })?;
    let mut previous: Option<u32> = None;
    let mut len = 1;
    for (index, event) in events.iter().enumerate() {
        match event {
            WireInput::Key(e) if e.bit >= KEY_BITS => return Err(InputError::InvalidEventBit { index, bit: e.bit }),
            WireInput::Aim(AimEvent { aim: Some(aim), .. }) if !aim.is_valid() => {
                return Err(InputError::InvalidAim { index });
            }
            WireInput::Aim(AimEvent { aim: Some(_), .. }) => len += AIM_BYTES,
            WireInput::View(_) => len += VIEW_BYTES,
            _ => {}
        }
        let seq = event.seq();
        match previous {
            None => len += 5,
            Some(previous) if seq <= previous => return Err(InputError::SeqNotIncreasing { index, previous, seq }),
            Some(previous) if seq - previous > u32::from(u8::MAX) => {
                return Err(InputError::SeqGapTooLarge { index, previous, seq });
            }
            Some(_) => len += 2,
        }
        previous = Some(seq);
    }

    out.reserve(len);
    out.push(count);
    let mut previous: Option<u32> = None;
    for event in events {
        let seq = event.seq();
        match previous {
            None => out.extend_from_slice(&seq.to_be_bytes()),
            // Checked above: 1..=255.
            Some(previous) => out.push(u8::try_from(seq - previous).unwrap_or(u8::MAX)),
        }
        match event {
            WireInput::Key(e) => out.push(if e.action == KeyAction::Down { CODE_DOWN } else { 0 } | e.bit),
            WireInput::Aim(AimEvent { aim: None, .. }) => out.push(CODE_AIM_OFF),
            WireInput::Aim(AimEvent { aim: Some(aim), .. }) => {
                out.push(CODE_AIM);
                out.extend_from_slice(&aim.x.to_be_bytes());
                out.extend_from_slice(&aim.y.to_be_bytes());
                out.push(aim.flags);
            }
            WireInput::View(ViewEvent { view, .. }) => {
                out.push(CODE_VIEW);
                out.extend_from_slice(&view.tick.to_be_bytes());
                out.push(view.frac);
            }
        }
        previous = Some(seq);
    }
    Ok(())
}

/// Reads one binary batch (see the module docs); the whole of `bytes` must be the batch.
pub fn decode_inputs(bytes: &[u8]) -> Result<Vec<WireInput>, InputError> {
    let Some((&count, rest)) = bytes.split_first() else {
        return Err(InputError::Truncated { expected: 1, found: 0 });
    };
    if count == 0 {
        return match rest.len() {
            0 => Ok(Vec::new()),
            extra => Err(InputError::TrailingBytes { extra }),
        };
    }
    // The length of the batch as far as known: every event's seq and code, plus the points
    // of the aims read so far.
    let mut expected = 4 + 2 * usize::from(count);
    if bytes.len() < expected {
        return Err(InputError::Truncated { expected, found: bytes.len() });
    }
    let mut r = Reader::new(rest);
    let mut events = Vec::with_capacity(usize::from(count));
    let mut seq = 0;
    for index in 0..usize::from(count) {
        let truncated = |expected| InputError::Truncated { expected, found: bytes.len() };
        if index == 0 {
            seq = r.u32("first seq").map_err(|_| truncated(expected))?;
        } else {
            let delta = r.u8("seq delta").map_err(|_| truncated(expected))?;
            if delta == 0 {
                return Err(InputError::ZeroSeqDelta { index });
            }
            seq = seq.checked_add(u32::from(delta)).ok_or(InputError::BatchSeqOverflow { index })?;
        }
        let code = r.u8("code").map_err(|_| truncated(expected))?;
        let event = match code {
            CODE_AIM => {
                expected += AIM_BYTES;
                let [x0, x1, x2, x3, y0, y1, y2, y3, flags] =
                    r.array::<AIM_BYTES>("aim").map_err(|_| truncated(expected))?;
                let aim =
                    Aim { x: f32::from_be_bytes([x0, x1, x2, x3]), y: f32::from_be_bytes([y0, y1, y2, y3]), flags };
                if !aim.is_valid() {
                    return Err(InputError::InvalidAim { index });
                }
                WireInput::Aim(AimEvent { seq, aim: Some(aim) })
            }
            CODE_AIM_OFF => WireInput::Aim(AimEvent { seq, aim: None }),
            CODE_VIEW => {
                expected += VIEW_BYTES;
                let [t0, t1, t2, t3, frac] = r.array::<VIEW_BYTES>("view").map_err(|_| truncated(expected))?;
                WireInput::View(ViewEvent { seq, view: ViewTime { tick: u32::from_be_bytes([t0, t1, t2, t3]), frac } })
            }
            code if code & !CODE_DOWN >= KEY_BITS => {
                return Err(InputError::InvalidEventBit { index, bit: code & !CODE_DOWN });
            }
            code => {
                let action = if code & CODE_DOWN != 0 { KeyAction::Down } else { KeyAction::Up };
                WireInput::Key(BinaryKeyEvent { seq, action, bit: code & !CODE_DOWN })
            }
        };
        events.push(event);
    }
    if !r.is_empty() {
        return Err(InputError::TrailingBytes { extra: r.remaining() });
    }
    Ok(events)
}

#[cfg(test)]
mod tests;
