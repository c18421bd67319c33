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
//!
//! # Files
//!
//! Each form has a file: `text.rs` the text form ([`InputEvent`]), `keys.rs` the key table
//! ([`KeyTable`]), `aim.rs` aims and views ([`Aim`], [`ViewTime`]), `state.rs` the key-state
//! rule ([`KeyState`]), `wire.rs` the binary batch ([`WireInput`], [`encode_inputs`],
//! [`decode_inputs`]); this one holds the limits and [`InputError`].

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

mod aim;
mod keys;
mod state;
mod text;
mod wire;

pub use aim::{Aim, ViewTime};
pub use keys::{KeyKind, KeySpec, KeyTable};
pub use state::{KeyBits, KeyState};
pub use text::{InputEvent, KeyAction};
pub use wire::{AimEvent, BinaryKeyEvent, ViewEvent, WireInput, decode_inputs, encode_events, encode_inputs};

#[cfg(test)]
mod tests;
