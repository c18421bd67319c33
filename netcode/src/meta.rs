//! Typed forms of the JSON meta payloads (auth, informs, panel, stat, chat, vote, keyset…) and their exact bytes.
//!
//! Meta data travels on its own reliable JSON ports, only when it changes (the hot
//! snapshot has the binary port 5, see [`crate::snapshot`]). Every payload here is one
//! JSON value written compactly by `serde_json` (no spaces; object keys in the order
//! shown below, or the map's own order for the objects passed through), so each value
//! has exactly one byte string.
//!
//! # Server → client
//!
//! | port | const | type | JSON form |
//! |-----:|-------|------|-----------|
//! | 0  | [`CONFIG_DATA`]      | [`MetaMessage::Config`] | any object `{…}` (merged client config) |
//! | 1  | [`AUTH_DATA`]        | [`AuthData`]    | `{"elems":…,"params":[{"name":"nick","value":…,"options":…}],"texts":…}`, `texts` optional |
//! | 2  | [`AUTH_RESULT`]      | [`AuthResult`]  | `null` (accepted) or `{"field":"error text",…}` |
//! | 3  | [`MAP_DATA`]         | [`MetaMessage::Map`] | any object `{…}` (the map) |
//! | 4  | [`FIRST_SHOT_DATA`]  | [`FirstShot`]   | `[gameSnapshot,0,serverTime,0]` |
//! | 6  | [`SOUND_DATA`]       | [`Sound`]       | `"roundStart"` |
//! | 7  | [`GAME_INFORM_DATA`] | [`GameInform`]  | `[code]` or `[code,[param,…]]` |
//! | 8  | [`TECH_INFORM_DATA`] | [`TechInform`]  | `null` (hide the black screen), `[code]` or `[code,[param,…]]` |
//! | 11 | [`CLEAR`]            | [`Clear`]       | `null` (everything) or `"setId"` |
//! | 13 | [`PANEL_DATA`]       | [`Panel`]       | `["t:97","h:100","w1:200","wa:w1"]`, `"h"` = key without value |
//! | 14 | [`STAT_DATA`]        | [`StatUpdate`]  | `[[row,…],[head,…]]` or `[[row,…],[head,…],true]` |
//! | 15 | [`CHAT_DATA`]        | [`ChatMessage`] | `["text","author",teamId]` or `"group:code:p1,p2"` |
//! | 16 | [`VOTE_DATA`]        | [`Vote`]        | `{"name":"map","params":["a"],"values":["x","y"]}`; `values` may be `"maps"` or `"teams"` |
//! | 17 | [`KEYSET_DATA`]      | [`Keyset`]      | `0` (spectator) or `1` (player) |
//!
//! [`MetaMessage`] gathers them: [`MetaMessage::port`], [`MetaMessage::encode`] and
//! [`MetaMessage::decode`]. Port 5 (the binary frame) and port 18 (accolades) are not
//! meta payloads of this module: decoding them is [`MetaError::UnknownPort`].
//!
//! # Client → server
//!
//! | port | const | type | JSON form |
//! |-----:|-------|------|-----------|
//! | 1 | [`AUTH_RESPONSE`] | [`AuthResponse`] | `{"nick":"bob",…,"token":"jwt"}` |
//! | 6 | [`CHAT`]          | [`ChatText`]     | `"hello"` or `"/command args"` |
//! | 7 | [`VOTE`]          | [`VoteAnswer`]   | `["voteName",selectedValue]`, or `"maps"` / `"teams"` |
//!
//! [`ClientMeta`] gathers them the same way.
//!
//! # Decoding untrusted bytes
//!
//! Decoding never panics. A payload longer than [`MAX_META_LEN`] (64 KiB) is refused
//! before it is parsed; nesting depth is bounded by `serde_json`'s own recursion limit
//! (128). Then the JSON must have exactly the documented shape: arrays of exactly the
//! listed lengths, integers (not `1.0`) where a code or number is expected, no unknown
//! keys in objects. Anything else is a [`MetaError`].
//!
//! # Encoding and invariants
//!
//! The types have public fields, so a value can break a rule the wire needs (a panel
//! key with a `:`, a chat parameter with a `,`, a non-finite time). [`MetaMessage::encode`]
//! writes what it is given; call `validate` (on the message or the type) to check first.
//! For every value that validates, `decode(port, &encode(x)) == Ok(x)`; decoding runs the
//! same checks, so anything that decodes also validates.
//!
//! # Choices where the spec is silent
//!
//! * Tech inform codes are ours: [`TechInform::SERVER_FULL`] (0), [`TechInform::LOADING`]
//!   (1), [`TechInform::KICKED`] (2, params `[closeCode, reason]`).
//! * Inform params are a JSON array; `[code, null]` is not accepted.
//! * Panel: keys are non-empty and have no `:`; an entry splits at its first `:`, so
//!   values may hold `:`. `"h"` is the key without a value, `"h:"` the empty value.
//!   [`PanelState`] sends only changed keys, and a key that left the panel once, without
//!   a value (the client hides its container).
//! * Stat: row ids are `u32`, table, tbody and head row numbers `u8`. A cell is a string
//!   or a number (set), `""` (clear) or `null` (unchanged: the spec's `undefined`/absent
//!   cell, which a JSON array cannot carry otherwise). Cells past the end of the array are
//!   unchanged too. [`StatTable`] keeps the host side and computes the deltas.
//! * System chat: `"group:code"` when there are no params, `"group:code:p1,p2"` otherwise
//!   (so `"s:3:"` is one empty param); params hold no `,` but may hold `:`. Groups are
//!   1 to [`MAX_CHAT_GROUP_LEN`] ASCII letters, digits or `_`; the code is a `u32` in
//!   plain decimal without leading zeros.
//! * Vote answers naming an engine vote (`@…`) are refused: the spec routes them
//!   outside port 7.
//!
//! ```
//! use vimp_netcode::meta::{MetaMessage, Panel, PANEL_DATA};
//!
//! let panel = Panel(vec![("t".into(), Some("97".into())), ("h".into(), None)]);
//! let msg = MetaMessage::Panel(panel);
//! assert_eq!(msg.encode(), br#"["t:97","h"]"#);
//! assert_eq!(MetaMessage::decode(PANEL_DATA, br#"["t:97","h"]"#), Ok(msg));
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Number, Value};
use thiserror::Error;

// ---- ports ----

/// Server → client: the merged client config (any JSON object).
pub const CONFIG_DATA: u8 = crate::frame::op::CONFIG_DATA;
/// Server → client: the auth form ([`AuthData`]).
pub const AUTH_DATA: u8 = crate::frame::op::AUTH_DATA;
/// Server → client: auth errors or `null` ([`AuthResult`]).
pub const AUTH_RESULT: u8 = crate::frame::op::AUTH_RESULT;
/// Server → client: the map (any JSON object).
pub const MAP_DATA: u8 = crate::frame::op::MAP_DATA;
/// Server → client: the one-off first frame ([`FirstShot`]).
pub const FIRST_SHOT_DATA: u8 = crate::frame::op::FIRST_SHOT_DATA;
/// Server → client: a system sound name ([`Sound`]).
pub const SOUND_DATA: u8 = crate::frame::op::SOUND_DATA;
/// Server → client: an on-screen game message ([`GameInform`]).
pub const GAME_INFORM_DATA: u8 = crate::frame::op::GAME_INFORM_DATA;
/// Server → client: a "black screen" technical message ([`TechInform`]).
pub const TECH_INFORM_DATA: u8 = crate::frame::op::TECH_INFORM_DATA;
/// Server → client: clear the canvases, all or one set ([`Clear`]).
pub const CLEAR: u8 = crate::frame::op::CLEAR;
/// Server → client: the HUD panel, per user, changed keys only ([`Panel`]).
pub const PANEL_DATA: u8 = crate::frame::op::PANEL_DATA;
/// Server → client: the statistics delta, broadcast ([`StatUpdate`]).
pub const STAT_DATA: u8 = crate::frame::op::STAT_DATA;
/// Server → client: a chat message ([`ChatMessage`]).
pub const CHAT_DATA: u8 = crate::frame::op::CHAT_DATA;
/// Server → client: a vote ([`Vote`]).
pub const VOTE_DATA: u8 = crate::frame::op::VOTE_DATA;
/// Server → client: the active key set ([`Keyset`]).
pub const KEYSET_DATA: u8 = crate::frame::op::KEYSET_DATA;

/// Client → server: the filled auth form plus the lobby JWT ([`AuthResponse`]).
pub const AUTH_RESPONSE: u8 = crate::frame::op::client::AUTH_RESPONSE;
/// Client → server: a chat line or `/command` ([`ChatText`]).
pub const CHAT: u8 = crate::frame::op::client::CHAT;
/// Client → server: a vote answer or a list request ([`VoteAnswer`]).
pub const VOTE: u8 = crate::frame::op::client::VOTE;

// ---- limits ----

/// Longest meta payload decoded, in bytes (64 KiB); longer ones are refused unparsed.
///
/// This bounds every port, config and map included: [`MetaMessage::encode`] does not
/// check it, so a host must not send a bigger payload.
pub const MAX_META_LEN: usize = 64 * 1024;

/// Longest chat line a client may send, in characters (Unicode scalar values) after trimming.
pub const MAX_CHAT_LEN: usize = 200;

/// Longest system chat group name, in bytes (groups are ASCII).
pub const MAX_CHAT_GROUP_LEN: usize = 16;

/// The engine's system chat groups; the client has English defaults for them.
pub const ENGINE_CHAT_GROUPS: [&str; 4] = ["s", "v", "m", "c"];

/// The engine's default columns of a player's stat row, in wire order (see [`PlayerStat`]).
pub const PLAYER_COLUMNS: [&str; 5] = ["name", "status", "score", "deaths", "latency"];

// ---- errors ----

/// Why bytes or a value are not a valid meta payload. Nothing in this module panics on input.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MetaError {
    /// The payload is longer than [`MAX_META_LEN`]; it was not parsed.
    #[error("meta payload of {len} bytes is over the {MAX_META_LEN}-byte limit")]
    TooLarge {
        /// The payload's length in bytes.
        len: usize,
    },
    /// The payload is not one JSON value (bad syntax, bad UTF-8, trailing bytes, too deep).
    #[error("meta payload is not valid JSON: {message}")]
    Json {
        /// `serde_json`'s message.
        message: String,
    },
    /// The port carries no meta payload this module decodes (in that direction).
    #[error("port {port} carries no meta payload")]
    UnknownPort {
        /// The port.
        port: u8,
    },
    /// The JSON is valid but not of the expected shape.
    #[error("{what}: expected {expected}")]
    Shape {
        /// The payload or part being read ("stat row", "vote"…).
        what: &'static str,
        /// The shape it must have.
        expected: &'static str,
    },
    /// A panel entry whose key is empty or holds a `:`.
    #[error("panel entry {entry:?}: the key must be non-empty and without ':'")]
    PanelKey {
        /// The entry as written on the wire (`key:value` or `key`).
        entry: String,
    },
    /// A system chat message that does not follow `group:code[:params]`.
    #[error("system chat message {text:?}: {reason}")]
    SystemMessage {
        /// The message as written on the wire.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A chat line that is empty after trimming.
    #[error("chat text is empty")]
    EmptyChat,
    /// A chat line longer than [`MAX_CHAT_LEN`] characters after trimming.
    #[error("chat text is {len} characters long, at most {MAX_CHAT_LEN} are allowed")]
    ChatTooLong {
        /// Its length in characters.
        len: usize,
    },
    /// A chat line holding a control character.
    #[error("chat text holds the control character {ch:?}")]
    ChatControl {
        /// The first control character found.
        ch: char,
    },
    /// A vote (or vote answer) with an empty name.
    #[error("vote name is empty")]
    EmptyVoteName,
    /// A vote answer naming an engine vote (`@…`), which is never answered on the vote port.
    #[error("vote {name:?} is an engine vote and is not answered on the vote port")]
    EngineVoteAnswer {
        /// The vote name.
        name: String,
    },
    /// A number that must be finite is NaN or infinite (it cannot be written as JSON).
    #[error("{what} is not a finite number")]
    NonFinite {
        /// The field.
        what: &'static str,
    },
}

// ---- helpers ----

fn shape(what: &'static str, expected: &'static str) -> MetaError {
    MetaError::Shape { what, expected }
}

/// Size check, then one JSON value.
fn parse(bytes: &[u8]) -> Result<Value, MetaError> {
    if bytes.len() > MAX_META_LEN {
        return Err(MetaError::TooLarge { len: bytes.len() });
    }
    serde_json::from_slice(bytes).map_err(|e| MetaError::Json { message: e.to_string() })
}

fn array(value: Value, what: &'static str, expected: &'static str) -> Result<Vec<Value>, MetaError> {
    match value {
        Value::Array(items) => Ok(items),
        _ => Err(shape(what, expected)),
    }
}

fn string(value: Value, what: &'static str, expected: &'static str) -> Result<String, MetaError> {
    match value {
        Value::String(s) => Ok(s),
        _ => Err(shape(what, expected)),
    }
}

fn object(value: Value, what: &'static str, expected: &'static str) -> Result<Map<String, Value>, MetaError> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(shape(what, expected)),
    }
}

/// An object whose keys are all in `allowed`.
fn object_with(
    value: Value,
    allowed: &[&str],
    what: &'static str,
    expected: &'static str,
) -> Result<Map<String, Value>, MetaError> {
    let map = object(value, what, expected)?;
    if map.keys().all(|k| allowed.contains(&k.as_str())) { Ok(map) } else { Err(shape(what, expected)) }
}

/// A non-negative JSON integer that fits `T` (`1.0` is not an integer).
fn int<T: TryFrom<u64>>(value: &Value, what: &'static str, expected: &'static str) -> Result<T, MetaError> {
    value.as_u64().and_then(|n| T::try_from(n).ok()).ok_or_else(|| shape(what, expected))
}

fn strings(value: Value, what: &'static str, expected: &'static str) -> Result<Vec<String>, MetaError> {
    array(value, what, expected)?.into_iter().map(|v| string(v, what, expected)).collect()
}

fn string_array(items: &[String]) -> Value {
    Value::Array(items.iter().cloned().map(Value::String).collect())
}

/// `[code]` or `[code, params]`.
fn inform_to_json(code: u8, params: Option<&Vec<Value>>) -> Value {
    let mut items = vec![Value::from(code)];
    if let Some(params) = params {
        items.push(Value::Array(params.clone()));
    }
    Value::Array(items)
}

fn inform_from_json(value: Value, what: &'static str) -> Result<(u8, Option<Vec<Value>>), MetaError> {
    const EXPECTED: &str = "[code] or [code, [params…]] with an integer code in 0..=255";
    let mut items = array(value, what, EXPECTED)?;
    let params = match items.len() {
        1 => None,
        2 => match items.pop() {
            Some(Value::Array(params)) => Some(params),
            _ => return Err(shape(what, EXPECTED)),
        },
        _ => return Err(shape(what, EXPECTED)),
    };
    Ok((int(&items[0], what, EXPECTED)?, params))
}

// ---- informs, sound, clear ----

/// An on-screen game message (port 7): `[code]` or `[code, [params…]]`.
///
/// The codes are the engine's `gameCodes`, shared by host and client; see the consts.
#[derive(Clone, Debug, PartialEq)]
pub struct GameInform {
    /// The message code.
    pub code: u8,
    /// Values for the message template, if any.
    pub params: Option<Vec<Value>>,
}

impl GameInform {
    /// A team won the round; params are the game's (e.g. the team).
    pub const TEAM_VICTORY: u8 = 0;
    /// A round starts.
    pub const ROUND_START: u8 = 1;
    /// The game is over.
    pub const GAME_OVER: u8 = 2;

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        inform_to_json(self.code, self.params.as_ref())
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        let (code, params) = inform_from_json(value, "game inform")?;
        Ok(Self { code, params })
    }
}

/// A "black screen" technical message (port 8): shown with `[code]` / `[code, [params…]]`, hidden with `null`.
///
/// The spec names the messages (server full, loading, kicks) but not their numbers;
/// the numbers in the consts are ours.
#[derive(Clone, Debug, PartialEq)]
pub enum TechInform {
    /// `null`: hide the black screen.
    Hide,
    /// Show the black screen with a message.
    Show {
        /// The message code.
        code: u8,
        /// Values for the message template, if any.
        params: Option<Vec<Value>>,
    },
}

impl TechInform {
    /// The room has no free place (ours).
    pub const SERVER_FULL: u8 = 0;
    /// The game is loading (ours).
    pub const LOADING: u8 = 1;
    /// The player was kicked; params are `[closeCode, reason]` (ours).
    pub const KICKED: u8 = 2;

    /// The kick message: `[2, [closeCode, reason]]`.
    pub fn kicked(close_code: u16, reason: impl Into<String>) -> Self {
        Self::Show { code: Self::KICKED, params: Some(vec![Value::from(close_code), Value::String(reason.into())]) }
    }

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Hide => Value::Null,
            Self::Show { code, params } => inform_to_json(*code, params.as_ref()),
        }
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        if value.is_null() {
            return Ok(Self::Hide);
        }
        let (code, params) = inform_from_json(value, "tech inform")?;
        Ok(Self::Show { code, params })
    }
}

/// A system sound to play (port 6): its name as a JSON string, e.g. `"roundStart"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sound(pub String);

impl Sound {
    /// The JSON form.
    pub fn to_json(&self) -> Value {
        Value::String(self.0.clone())
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        string(value, "sound", "a string").map(Self)
    }
}

/// Clear the canvases (port 11): all of them (`null`) or one set (`"setId"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Clear {
    /// `null`: clear everything.
    All,
    /// `"setId"`: clear one set.
    Set(String),
}

impl Clear {
    /// The JSON form.
    pub fn to_json(&self) -> Value {
        match self {
            Self::All => Value::Null,
            Self::Set(id) => Value::String(id.clone()),
        }
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        match value {
            Value::Null => Ok(Self::All),
            Value::String(id) => Ok(Self::Set(id)),
            _ => Err(shape("clear", "null or a set id string")),
        }
    }
}

// ---- panel ----

/// The HUD panel (port 13): `["t:97","h:100","w1:200","wa:w1"]`, one `key:value` string per entry.
///
/// An entry without a value (`"h"`, the spectator's empty panel) is `(key, None)`;
/// `"h:"` is `(key, Some(""))`. Keys are non-empty and hold no `:`; an entry splits at
/// its first `:`, so values may hold `:`. Entries keep their order; duplicates are kept.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Panel(pub Vec<(String, Option<String>)>);

fn panel_entry(key: &str, value: Option<&str>) -> String {
    match value {
        Some(value) => format!("{key}:{value}"),
        None => key.to_owned(),
    }
}

impl Panel {
    /// The one key the engine defines: round time, in seconds.
    pub const TIME_KEY: &str = "t";

    /// Checks every key: non-empty, no `:`.
    pub fn validate(&self) -> Result<(), MetaError> {
        match self.0.iter().find(|(key, _)| key.is_empty() || key.contains(':')) {
            Some((key, value)) => Err(MetaError::PanelKey { entry: panel_entry(key, value.as_deref()) }),
            None => Ok(()),
        }
    }

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        Value::Array(self.0.iter().map(|(k, v)| Value::String(panel_entry(k, v.as_deref()))).collect())
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        const EXPECTED: &str = "an array of \"key:value\" or \"key\" strings";
        let entries = strings(value, "panel", EXPECTED)?
            .into_iter()
            .map(|entry| {
                let (key, value) = match entry.split_once(':') {
                    Some((key, value)) => (key.to_owned(), Some(value.to_owned())),
                    None => (entry.clone(), None),
                };
                if key.is_empty() { Err(MetaError::PanelKey { entry }) } else { Ok((key, value)) }
            })
            .collect::<Result<_, _>>()?;
        Ok(Self(entries))
    }
}

/// What one user's panel last showed, so that only changed keys are sent.
///
/// Keep one per user. [`PanelState::diff`] takes the whole current panel and returns
/// the entries to send:
///
/// * a key never sent, or whose value changed: `key:value`, in `current`'s order;
/// * a key sent before and missing from `current`: the key alone (its container is
///   hidden, as in the spectator's empty panel), after the changed ones, in the order
///   keys were first sent; it is then forgotten;
/// * nothing changed: `None`.
///
/// A key repeated in `current` counts with its first value; the repeats are ignored.
/// [`PanelState::reset`] forgets everything, so the next diff is the full panel (a user
/// entering the game).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PanelState {
    sent: Vec<(String, String)>,
}

impl PanelState {
    /// A state that has sent nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The entries that bring the client from what was sent to `current`, and remembers them as sent.
    pub fn diff(&mut self, current: &[(String, String)]) -> Option<Panel> {
        let mut out = Vec::new();
        for (i, (key, value)) in current.iter().enumerate() {
            if current[..i].iter().any(|(k, _)| k == key) {
                continue;
            }
            match self.sent.iter_mut().find(|(k, _)| k == key) {
                Some((_, sent)) if sent == value => {}
                Some((_, sent)) => {
                    sent.clone_from(value);
                    out.push((key.clone(), Some(value.clone())));
                }
                None => {
                    self.sent.push((key.clone(), value.clone()));
                    out.push((key.clone(), Some(value.clone())));
                }
            }
        }
        self.sent.retain(|(key, _)| {
            let kept = current.iter().any(|(k, _)| k == key);
            if !kept {
                out.push((key.clone(), None));
            }
            kept
        });
        if out.is_empty() { None } else { Some(Panel(out)) }
    }

    /// Forgets what was sent: the next [`PanelState::diff`] sends every key.
    pub fn reset(&mut self) {
        self.sent.clear();
    }

    /// The values last sent, in the order keys were first sent.
    pub fn sent(&self) -> &[(String, String)] {
        &self.sent
    }
}

// ---- stat ----

/// What a stat cell shows: a string or a number. The empty string is an empty cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatValue {
    /// A string; `""` clears the cell.
    Text(String),
    /// A number (always finite).
    Number(Number),
}

impl StatValue {
    /// The empty cell, `""`.
    pub fn empty() -> Self {
        Self::Text(String::new())
    }

    /// Whether this is the empty cell `""`.
    pub fn is_empty(&self) -> bool {
        matches!(self, Self::Text(t) if t.is_empty())
    }

    fn to_json(&self) -> Value {
        match self {
            Self::Text(t) => Value::String(t.clone()),
            Self::Number(n) => Value::Number(n.clone()),
        }
    }
}

impl From<&str> for StatValue {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<String> for StatValue {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<Number> for StatValue {
    fn from(n: Number) -> Self {
        Self::Number(n)
    }
}

macro_rules! stat_value_from_int {
    ($($t:ty),*) => {$(
        impl From<$t> for StatValue {
            fn from(n: $t) -> Self {
                Self::Number(Number::from(n))
            }
        }
    )*};
}
stat_value_from_int!(i32, u32, i64, u64);

/// One cell of a stat row or head on the wire.
///
/// `Set` writes the value (`Set(StatValue::empty())`, i.e. `""`, clears the cell);
/// `Keep` leaves the cell as it is and is written `null` (the spec's "absent" cell).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatCell {
    /// `null`: leave the cell unchanged.
    Keep,
    /// A string or number: show it.
    Set(StatValue),
}

impl StatCell {
    /// The clearing cell, `""`.
    pub fn clear() -> Self {
        Self::Set(StatValue::empty())
    }

    fn to_json(&self) -> Value {
        match self {
            Self::Keep => Value::Null,
            Self::Set(v) => v.to_json(),
        }
    }

    fn from_json(value: Value) -> Result<Self, MetaError> {
        match value {
            Value::Null => Ok(Self::Keep),
            Value::String(t) => Ok(Self::Set(StatValue::Text(t))),
            Value::Number(n) => Ok(Self::Set(StatValue::Number(n))),
            _ => Err(shape("stat cell", "a string, a number or null")),
        }
    }
}

fn cells_to_json(cells: &[StatCell]) -> Value {
    Value::Array(cells.iter().map(StatCell::to_json).collect())
}

fn cells_from_json(value: Value, what: &'static str, expected: &'static str) -> Result<Vec<StatCell>, MetaError> {
    array(value, what, expected)?.into_iter().map(StatCell::from_json).collect()
}

/// A body row of a stat table: `[rowId, tableNo, [cells…] | null, tbodyNo]`; `null` cells remove the row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatRow {
    /// The row id (a player's id for player rows).
    pub id: u32,
    /// The table number.
    pub table: u8,
    /// The cells, or `None` to remove the row.
    pub cells: Option<Vec<StatCell>>,
    /// The tbody the row is in.
    pub tbody: u8,
}

impl StatRow {
    const EXPECTED: &str = "[rowId, tableNo, [cells…] or null, tbodyNo] with integers rowId: u32, tableNo, tbodyNo: u8";

    fn to_json(&self) -> Value {
        let cells = self.cells.as_deref().map_or(Value::Null, cells_to_json);
        Value::Array(vec![Value::from(self.id), Value::from(self.table), cells, Value::from(self.tbody)])
    }

    fn from_json(value: Value) -> Result<Self, MetaError> {
        let what = "stat row";
        let items = array(value, what, Self::EXPECTED)?;
        let Ok([id, table, cells, tbody]) = <[Value; 4]>::try_from(items) else {
            return Err(shape(what, Self::EXPECTED));
        };
        let cells = if cells.is_null() { None } else { Some(cells_from_json(cells, what, Self::EXPECTED)?) };
        Ok(Self {
            id: int(&id, what, Self::EXPECTED)?,
            table: int(&table, what, Self::EXPECTED)?,
            cells,
            tbody: int(&tbody, what, Self::EXPECTED)?,
        })
    }
}

/// A head row of a stat table: `[tableNo, [cells…], headRowNo]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatHead {
    /// The table number.
    pub table: u8,
    /// The cells.
    pub cells: Vec<StatCell>,
    /// The row of the table head.
    pub row: u8,
}

impl StatHead {
    const EXPECTED: &str = "[tableNo, [cells…], headRowNo] with integers tableNo, headRowNo: u8";

    fn to_json(&self) -> Value {
        Value::Array(vec![Value::from(self.table), cells_to_json(&self.cells), Value::from(self.row)])
    }

    fn from_json(value: Value) -> Result<Self, MetaError> {
        let what = "stat head";
        let items = array(value, what, Self::EXPECTED)?;
        let Ok([table, cells, row]) = <[Value; 3]>::try_from(items) else {
            return Err(shape(what, Self::EXPECTED));
        };
        Ok(Self {
            table: int(&table, what, Self::EXPECTED)?,
            cells: cells_from_json(cells, what, Self::EXPECTED)?,
            row: int(&row, what, Self::EXPECTED)?,
        })
    }
}

/// A statistics message (port 14): `[tBodies, tHead]` or `[tBodies, tHead, fullUpdate]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatUpdate {
    /// Body rows, applied in order.
    pub bodies: Vec<StatRow>,
    /// Head rows.
    pub heads: Vec<StatHead>,
    /// The full-update flag, written only when `Some`.
    pub full: Option<bool>,
}

impl StatUpdate {
    /// The JSON form.
    pub fn to_json(&self) -> Value {
        let mut items = vec![
            Value::Array(self.bodies.iter().map(StatRow::to_json).collect()),
            Value::Array(self.heads.iter().map(StatHead::to_json).collect()),
        ];
        if let Some(full) = self.full {
            items.push(Value::Bool(full));
        }
        Value::Array(items)
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        const EXPECTED: &str = "[[rows…], [heads…]] or [[rows…], [heads…], fullUpdate]";
        let what = "stat update";
        let mut items = array(value, what, EXPECTED)?;
        let full = match items.len() {
            2 => None,
            3 => match items.pop() {
                Some(Value::Bool(full)) => Some(full),
                _ => return Err(shape(what, EXPECTED)),
            },
            _ => return Err(shape(what, EXPECTED)),
        };
        let mut items = items.into_iter();
        let (Some(bodies), Some(heads)) = (items.next(), items.next()) else {
            return Err(shape(what, EXPECTED));
        };
        Ok(Self {
            bodies: array(bodies, what, EXPECTED)?.into_iter().map(StatRow::from_json).collect::<Result<_, _>>()?,
            heads: array(heads, what, EXPECTED)?.into_iter().map(StatHead::from_json).collect::<Result<_, _>>()?,
            full,
        })
    }
}

/// A player's row with the engine's default columns, [`PLAYER_COLUMNS`]: `[name, status, score, deaths, latency]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlayerStat {
    /// The nick.
    pub name: String,
    /// The game's status text (may be empty).
    pub status: String,
    /// The score.
    pub score: i64,
    /// Deaths.
    pub deaths: u32,
    /// Smoothed round-trip latency, in milliseconds.
    pub latency_ms: u32,
}

impl PlayerStat {
    /// The row's cells, in [`PLAYER_COLUMNS`] order.
    pub fn cells(&self) -> Vec<StatValue> {
        vec![
            self.name.as_str().into(),
            self.status.as_str().into(),
            self.score.into(),
            self.deaths.into(),
            self.latency_ms.into(),
        ]
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct HeadState {
    table: u8,
    row: u8,
    cells: Vec<StatValue>,
    /// Cells as last broadcast, `None` if never.
    sent: Option<Vec<StatValue>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct RowState {
    table: u8,
    id: u32,
    tbody: u8,
    /// `None`: removed, the removal not yet broadcast.
    cells: Option<Vec<StatValue>>,
    /// Tbody and cells as last broadcast, `None` if never.
    sent: Option<(u8, Vec<StatValue>)>,
}

fn set_all(cells: &[StatValue]) -> Vec<StatCell> {
    cells.iter().cloned().map(StatCell::Set).collect()
}

/// The cells that turn `before` into `now`, unchanged ones `Keep` and trailing `Keep`s
/// cut; a cell past a row's end counts as empty.
fn changed_cells(before: &[StatValue], now: &[StatValue]) -> Vec<StatCell> {
    let empty = StatValue::empty();
    let mut cells: Vec<StatCell> = (0..before.len().max(now.len()))
        .map(|i| {
            let now = now.get(i).unwrap_or(&empty);
            if before.get(i).unwrap_or(&empty) == now { StatCell::Keep } else { StatCell::Set(now.clone()) }
        })
        .collect();
    while cells.last() == Some(&StatCell::Keep) {
        cells.pop();
    }
    cells
}

/// All of `now`, then clears for what `before` showed past its end.
fn whole_cells(before: &[StatValue], now: &[StatValue]) -> Vec<StatCell> {
    let mut cells = set_all(now);
    cells.extend(changed_cells(before, now).into_iter().skip(now.len()));
    cells
}

/// The host's statistics tables: what every client shows, and the delta to broadcast.
///
/// Rows are keyed by `(table, id)` and keep the order they were first set in; heads by
/// `(table, row)`. [`StatTable::delta`] returns what changed since the previous delta:
///
/// * a new row: all its cells;
/// * a changed row: only the changed cells, unchanged ones as [`StatCell::Keep`], with
///   trailing `Keep`s cut. A cell past a row's end counts as an empty one: cells past a
///   shortened row's end are cleared (`""`), and growing a row by empty cells is no change;
/// * a row moved to another tbody: all its cells (and clears past its end), with the new tbody;
/// * a removed row that had been broadcast: `cells: None` with its last broadcast tbody;
/// * a new or changed head: all its cells (and clears past its end);
/// * `full` is `None`, and nothing changed gives `None`.
///
/// [`StatTable::full`] is for a client that just joined: every head and row as of the
/// last delta (`full: Some(true)`), i.e. what every other client shows. Changes made
/// since then are not in it; they reach the new client with the next delta, like
/// everyone else. (A full update of the current state would let a row added and removed
/// between two deltas, never broadcast, stay forever on the new client.)
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatTable {
    heads: Vec<HeadState>,
    rows: Vec<RowState>,
}

impl StatTable {
    /// Empty tables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets a head row of a table.
    pub fn set_head(&mut self, table: u8, row: u8, cells: Vec<StatValue>) {
        match self.heads.iter_mut().find(|h| h.table == table && h.row == row) {
            Some(head) => head.cells = cells,
            None => self.heads.push(HeadState { table, row, cells, sent: None }),
        }
    }

    /// Sets a body row, adding it if it is new.
    pub fn set_row(&mut self, table: u8, id: u32, tbody: u8, cells: Vec<StatValue>) {
        match self.rows.iter_mut().find(|r| r.table == table && r.id == id) {
            Some(row) => {
                row.tbody = tbody;
                row.cells = Some(cells);
            }
            None => self.rows.push(RowState { table, id, tbody, cells: Some(cells), sent: None }),
        }
    }

    /// Sets one cell of an existing row, padding the row with empty cells if it is shorter.
    /// Returns `false` (and does nothing) if the row does not exist.
    pub fn set_cell(&mut self, table: u8, id: u32, column: usize, value: StatValue) -> bool {
        let Some(cells) = self.rows.iter_mut().find(|r| r.table == table && r.id == id).and_then(|r| r.cells.as_mut())
        else {
            return false;
        };
        if cells.len() <= column {
            cells.resize(column + 1, StatValue::empty());
        }
        cells[column] = value;
        true
    }

    /// Removes a body row. Returns `false` if there was no such row.
    pub fn remove_row(&mut self, table: u8, id: u32) -> bool {
        let Some(index) = self.rows.iter().position(|r| r.table == table && r.id == id && r.cells.is_some()) else {
            return false;
        };
        if self.rows[index].sent.is_some() {
            self.rows[index].cells = None;
        } else {
            self.rows.remove(index);
        }
        true
    }

    /// A row's current cells.
    pub fn row(&self, table: u8, id: u32) -> Option<&[StatValue]> {
        self.rows.iter().find(|r| r.table == table && r.id == id).and_then(|r| r.cells.as_deref())
    }

    /// Everything changed since the previous delta (see the type's docs), now counted as broadcast.
    pub fn delta(&mut self) -> Option<StatUpdate> {
        let mut bodies = Vec::new();
        for row in &mut self.rows {
            let cells = match (&row.cells, &row.sent) {
                (None, Some((tbody, _))) => {
                    bodies.push(StatRow { id: row.id, table: row.table, cells: None, tbody: *tbody });
                    continue;
                }
                (None, None) => continue,
                (Some(cells), Some((tbody, sent))) if *tbody == row.tbody => {
                    let delta = changed_cells(sent, cells);
                    if delta.is_empty() {
                        continue;
                    }
                    row.sent = Some((row.tbody, cells.clone()));
                    delta
                }
                (Some(cells), sent) => {
                    let whole = whole_cells(sent.as_ref().map_or(&[][..], |(_, c)| c), cells);
                    row.sent = Some((row.tbody, cells.clone()));
                    whole
                }
            };
            bodies.push(StatRow { id: row.id, table: row.table, cells: Some(cells), tbody: row.tbody });
        }
        self.rows.retain(|r| r.cells.is_some());
        let mut heads = Vec::new();
        for head in &mut self.heads {
            let sent = head.sent.as_deref();
            if sent.is_some_and(|sent| changed_cells(sent, &head.cells).is_empty()) {
                continue;
            }
            heads.push(StatHead {
                table: head.table,
                cells: whole_cells(sent.unwrap_or(&[]), &head.cells),
                row: head.row,
            });
            head.sent = Some(head.cells.clone());
        }
        if bodies.is_empty() && heads.is_empty() { None } else { Some(StatUpdate { bodies, heads, full: None }) }
    }

    /// Every head and row as of the last [`StatTable::delta`], `full: Some(true)`, for a client that just joined.
    pub fn full(&self) -> StatUpdate {
        StatUpdate {
            bodies: self
                .rows
                .iter()
                .filter_map(|r| {
                    let (tbody, cells) = r.sent.as_ref()?;
                    Some(StatRow { id: r.id, table: r.table, cells: Some(set_all(cells)), tbody: *tbody })
                })
                .collect(),
            heads: self
                .heads
                .iter()
                .filter_map(|h| Some(StatHead { table: h.table, cells: set_all(h.sent.as_deref()?), row: h.row }))
                .collect(),
            full: Some(true),
        }
    }
}

// ---- chat ----

/// A chat message from the server (port 15).
///
/// * `User`: `["text","author",teamId]`.
/// * `System`: `"group:code"` without params, `"group:code:p1,p2"` with them; the client
///   builds the text from the game's templates (engine groups, [`ENGINE_CHAT_GROUPS`],
///   fall back to English defaults). The group is 1 to [`MAX_CHAT_GROUP_LEN`] ASCII
///   letters, digits or `_`; params hold no `,` (they may hold `:`); `"s:3:"` is one
///   empty param.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatMessage {
    /// A line a user wrote.
    User {
        /// The line.
        text: String,
        /// The author's nick.
        author: String,
        /// The author's team.
        team: u8,
    },
    /// A system message built from a template.
    System {
        /// The template group (`s`, `v`, `m`, `c` are the engine's).
        group: String,
        /// The template number.
        code: u32,
        /// Values for the template's placeholders.
        params: Vec<String>,
    },
}

const GROUP_RULE: &str = "the group must be 1 to 16 ASCII letters, digits or '_'";

fn valid_group(group: &str) -> bool {
    (1..=MAX_CHAT_GROUP_LEN).contains(&group.len()) && group.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn system_string(group: &str, code: u32, params: &[String]) -> String {
    if params.is_empty() { format!("{group}:{code}") } else { format!("{group}:{code}:{}", params.join(",")) }
}

impl ChatMessage {
    /// Whether this is a system message of an engine group.
    pub fn is_engine(&self) -> bool {
        matches!(self, Self::System { group, .. } if ENGINE_CHAT_GROUPS.contains(&group.as_str()))
    }

    /// Checks a system message's group and params.
    pub fn validate(&self) -> Result<(), MetaError> {
        let Self::System { group, code, params } = self else { return Ok(()) };
        let reason = if !valid_group(group) {
            GROUP_RULE
        } else if params.iter().any(|p| p.contains(',')) {
            "a param holds ','"
        } else {
            return Ok(());
        };
        Err(MetaError::SystemMessage { text: system_string(group, *code, params), reason })
    }

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        match self {
            Self::User { text, author, team } => {
                Value::Array(vec![Value::String(text.clone()), Value::String(author.clone()), Value::from(*team)])
            }
            Self::System { group, code, params } => Value::String(system_string(group, *code, params)),
        }
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        const EXPECTED: &str = "[text, author, teamId] or a \"group:code:params\" string";
        match value {
            Value::String(text) => Self::parse_system(text),
            Value::Array(items) => {
                let what = "chat message";
                let Ok([text, author, team]) = <[Value; 3]>::try_from(items) else {
                    return Err(shape(what, EXPECTED));
                };
                Ok(Self::User {
                    text: string(text, what, EXPECTED)?,
                    author: string(author, what, EXPECTED)?,
                    team: int(&team, what, EXPECTED)?,
                })
            }
            _ => Err(shape("chat message", EXPECTED)),
        }
    }

    fn parse_system(text: String) -> Result<Self, MetaError> {
        let fail = |text: &str, reason| Err(MetaError::SystemMessage { text: text.to_owned(), reason });
        let Some((group, rest)) = text.split_once(':') else { return fail(&text, "no ':' after the group") };
        let (code, params) = match rest.split_once(':') {
            Some((code, params)) => (code, params.split(',').map(str::to_owned).collect()),
            None => (rest, Vec::new()),
        };
        if !valid_group(group) {
            return fail(&text, GROUP_RULE);
        }
        let canonical =
            !code.is_empty() && code.bytes().all(|b| b.is_ascii_digit()) && (code == "0" || !code.starts_with('0'));
        let code = match code.parse::<u32>() {
            Ok(n) if canonical => n,
            _ => return fail(&text, "the code must be a u32 in plain decimal without leading zeros"),
        };
        Ok(Self::System { group: group.to_owned(), code, params })
    }
}

/// Most lines a [`ChatHistory`] carries.
pub const MAX_CHAT_HISTORY: usize = 256;

/// The host's recent chat, oldest first: what a client that resumes its slot gets after its
/// welcome (engine opcode `CHAT_HISTORY`), so that a player back from a crash — or anyone
/// after a host change — has the chat said while it was away. The payload is a JSON array
/// of `CHAT_DATA` payloads (at most [`MAX_CHAT_HISTORY`], each a valid [`ChatMessage`]).
#[derive(Clone, Debug, PartialEq)]
pub struct ChatHistory(pub Vec<ChatMessage>);

impl ChatHistory {
    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        Value::Array(self.0.iter().map(ChatMessage::to_json).collect()).to_string().into_bytes()
    }

    /// Reads a payload; errors, never panics.
    pub fn decode(bytes: &[u8]) -> Result<ChatHistory, MetaError> {
        const EXPECTED: &str = "an array of at most 256 chat messages";
        let items = array(parse(bytes)?, "chat history", EXPECTED)?;
        if items.len() > MAX_CHAT_HISTORY {
            return Err(shape("chat history", EXPECTED));
        }
        items.into_iter().map(ChatMessage::from_json).collect::<Result<_, _>>().map(ChatHistory)
    }
}

/// A chat line a client sends (port 6): a JSON string, plain text or a `/command`.
///
/// [`ChatText::parse`] trims it (Unicode white space) and refuses it when it is then
/// empty, longer than [`MAX_CHAT_LEN`] characters, or holds a control character
/// (`char::is_control`: C0, DEL, C1; a newline inside the line too). A `ChatText` always
/// holds the trimmed, checked text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChatText(String);

impl ChatText {
    /// Trims and checks a chat line.
    pub fn parse(text: &str) -> Result<Self, MetaError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(MetaError::EmptyChat);
        }
        let len = text.chars().count();
        if len > MAX_CHAT_LEN {
            return Err(MetaError::ChatTooLong { len });
        }
        if let Some(ch) = text.chars().find(|c| c.is_control()) {
            return Err(MetaError::ChatControl { ch });
        }
        Ok(Self(text.to_owned()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text, owned.
    pub fn into_string(self) -> String {
        self.0
    }

    /// The command line after the `/` (`"/kick bob"` → `"kick bob"`), or `None` for plain text.
    pub fn command(&self) -> Option<&str> {
        self.0.strip_prefix('/')
    }

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        Value::String(self.0.clone())
    }

    /// Reads the JSON form and checks it as [`ChatText::parse`] does.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        Self::parse(&string(value, "chat text", "a string")?)
    }
}

impl fmt::Display for ChatText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

// ---- vote ----

/// A dynamic list a vote's values come from; the client asks the server for it (port 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListRequest {
    /// `"maps"`: the maps.
    Maps,
    /// `"teams"`: the teams.
    Teams,
}

impl ListRequest {
    /// The wire word: `maps` or `teams`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Maps => "maps",
            Self::Teams => "teams",
        }
    }

    /// Reads the wire word.
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "maps" => Some(Self::Maps),
            "teams" => Some(Self::Teams),
            _ => None,
        }
    }
}

/// The choices of a vote: a ready list, or a list the client must request.
#[derive(Clone, Debug, PartialEq)]
pub enum VoteValues {
    /// `[…]`: the choices.
    List(Vec<Value>),
    /// `"maps"` / `"teams"`: ask the server for the current list.
    Request(ListRequest),
}

/// A vote (port 16): `{"name":…,"params":[…],"values":[…] or "maps" or "teams"}`.
///
/// `params` and `values` are left out when `None`; no other key is accepted. The name
/// is non-empty; names starting with `@` belong to the engine's votes ([`Vote::is_engine`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Vote {
    /// The vote's name (the client picks its template by it).
    pub name: String,
    /// Strings for the title's `{0}`, `{1}`… placeholders.
    pub params: Option<Vec<String>>,
    /// The choices.
    pub values: Option<VoteValues>,
}

impl Vote {
    /// The engine's host-change vote (lobby mode); it never travels on the vote ports.
    pub const CHANGE_HOST: &str = "@changeHost";

    /// Whether the name is reserved for an engine vote (starts with `@`).
    pub fn is_engine(&self) -> bool {
        self.name.starts_with('@')
    }

    /// Checks that the name is non-empty.
    pub fn validate(&self) -> Result<(), MetaError> {
        if self.name.is_empty() { Err(MetaError::EmptyVoteName) } else { Ok(()) }
    }

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), Value::String(self.name.clone()));
        if let Some(params) = &self.params {
            map.insert("params".into(), string_array(params));
        }
        match &self.values {
            Some(VoteValues::List(values)) => {
                map.insert("values".into(), Value::Array(values.clone()));
            }
            Some(VoteValues::Request(request)) => {
                map.insert("values".into(), Value::String(request.as_str().into()));
            }
            None => {}
        }
        Value::Object(map)
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        const EXPECTED: &str =
            "{\"name\": string, \"params\"?: [strings], \"values\"?: [values] or \"maps\" or \"teams\"}";
        let what = "vote";
        let mut map = object_with(value, &["name", "params", "values"], what, EXPECTED)?;
        let name = string(map.remove("name").unwrap_or(Value::Null), what, EXPECTED)?;
        let params = map.remove("params").map(|p| strings(p, what, EXPECTED)).transpose()?;
        let values = match map.remove("values") {
            None => None,
            Some(Value::Array(values)) => Some(VoteValues::List(values)),
            Some(Value::String(word)) => {
                Some(VoteValues::Request(ListRequest::parse(&word).ok_or_else(|| shape(what, EXPECTED))?))
            }
            Some(_) => return Err(shape(what, EXPECTED)),
        };
        let vote = Self { name, params, values };
        vote.validate()?;
        Ok(vote)
    }
}

/// A client's vote message (port 7): an answer `["voteName",selectedValue]` or a list request `"maps"` / `"teams"`.
///
/// Answers to engine votes (`@…`) are refused: they do not go through this port.
#[derive(Clone, Debug, PartialEq)]
pub enum VoteAnswer {
    /// The value picked in a vote.
    Pick {
        /// The vote's name.
        name: String,
        /// The value picked.
        value: Value,
    },
    /// Asks for a dynamic list.
    Request(ListRequest),
}

impl VoteAnswer {
    /// Checks a pick's name: non-empty, not an engine vote.
    pub fn validate(&self) -> Result<(), MetaError> {
        match self {
            Self::Pick { name, .. } if name.is_empty() => Err(MetaError::EmptyVoteName),
            Self::Pick { name, .. } if name.starts_with('@') => Err(MetaError::EngineVoteAnswer { name: name.clone() }),
            _ => Ok(()),
        }
    }

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Pick { name, value } => Value::Array(vec![Value::String(name.clone()), value.clone()]),
            Self::Request(request) => Value::String(request.as_str().into()),
        }
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        const EXPECTED: &str = "[voteName, value], \"maps\" or \"teams\"";
        let what = "vote answer";
        let answer = match value {
            Value::String(word) => Self::Request(ListRequest::parse(&word).ok_or_else(|| shape(what, EXPECTED))?),
            Value::Array(items) => {
                let Ok([name, value]) = <[Value; 2]>::try_from(items) else { return Err(shape(what, EXPECTED)) };
                Self::Pick { name: string(name, what, EXPECTED)?, value }
            }
            _ => return Err(shape(what, EXPECTED)),
        };
        answer.validate()?;
        Ok(answer)
    }
}

// ---- keyset ----

/// The active key set (port 17): `0` spectator, `1` player.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Keyset {
    /// `0`: the spectator's keys.
    Spectator,
    /// `1`: the player's keys.
    Player,
}

impl Keyset {
    /// The JSON form.
    pub fn to_json(self) -> Value {
        Value::from(match self {
            Self::Spectator => 0,
            Self::Player => 1,
        })
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        match value.as_u64() {
            Some(0) => Ok(Self::Spectator),
            Some(1) => Ok(Self::Player),
            _ => Err(shape("keyset", "0 or 1")),
        }
    }
}

// ---- auth ----

/// One field of the auth form: `{"name":…,"value":…,"options":…}`.
///
/// `value` and `options` are the game's (options: control, label, validator key…) and are
/// passed through; when missing on the wire they read as `null`, and are always written.
#[derive(Clone, Debug, PartialEq)]
pub struct AuthParam {
    /// The field's name.
    pub name: String,
    /// Its default value.
    pub value: Value,
    /// Its descriptor (control, label, limits…).
    pub options: Value,
}

impl AuthParam {
    const EXPECTED: &str = "{\"name\": string, \"value\"?: any, \"options\"?: any}";

    fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("name".into(), Value::String(self.name.clone()));
        map.insert("value".into(), self.value.clone());
        map.insert("options".into(), self.options.clone());
        Value::Object(map)
    }

    fn from_json(value: Value) -> Result<Self, MetaError> {
        let what = "auth param";
        let mut map = object_with(value, &["name", "value", "options"], what, Self::EXPECTED)?;
        Ok(Self {
            name: string(map.remove("name").unwrap_or(Value::Null), what, Self::EXPECTED)?,
            value: map.remove("value").unwrap_or(Value::Null),
            options: map.remove("options").unwrap_or(Value::Null),
        })
    }
}

/// The auth form (port 1): `{"elems":…,"params":[…],"texts":…}`, `texts` left out when `None`.
///
/// `elems` (the DOM ids the form uses) and `texts` (`{title, sections}`) are the game's
/// and passed through as they are.
#[derive(Clone, Debug, PartialEq)]
pub struct AuthData {
    /// The DOM ids of the auth screen the game uses.
    pub elems: Value,
    /// The form's fields.
    pub params: Vec<AuthParam>,
    /// Title and sections, if any.
    pub texts: Option<Value>,
}

impl AuthData {
    /// The JSON form.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("elems".into(), self.elems.clone());
        map.insert("params".into(), Value::Array(self.params.iter().map(AuthParam::to_json).collect()));
        if let Some(texts) = &self.texts {
            map.insert("texts".into(), texts.clone());
        }
        Value::Object(map)
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        const EXPECTED: &str = "{\"elems\": any, \"params\": [params…], \"texts\"?: any}";
        let what = "auth data";
        let mut map = object_with(value, &["elems", "params", "texts"], what, EXPECTED)?;
        let elems = map.remove("elems").ok_or_else(|| shape(what, EXPECTED))?;
        let params = map.remove("params").ok_or_else(|| shape(what, EXPECTED))?;
        Ok(Self {
            elems,
            params: array(params, what, EXPECTED)?.into_iter().map(AuthParam::from_json).collect::<Result<_, _>>()?,
            texts: map.remove("texts"),
        })
    }
}

/// The auth verdict (port 2): `null` when accepted, else `{"field":"error",…}`.
///
/// Errors are kept sorted by field, so they are written in that order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthResult {
    /// `null`: no errors.
    Accepted,
    /// Field name → error text.
    Rejected(BTreeMap<String, String>),
}

impl AuthResult {
    /// The JSON form.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Accepted => Value::Null,
            Self::Rejected(errors) => {
                Value::Object(errors.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect())
            }
        }
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        const EXPECTED: &str = "null or an object of field → error string";
        let what = "auth result";
        if value.is_null() {
            return Ok(Self::Accepted);
        }
        let errors = object(value, what, EXPECTED)?
            .into_iter()
            .map(|(k, v)| Ok((k, string(v, what, EXPECTED)?)))
            .collect::<Result<_, MetaError>>()?;
        Ok(Self::Rejected(errors))
    }
}

/// The filled auth form a client sends (port 1): an object of field → value plus the lobby JWT in `token`.
///
/// Kept as the object it is; the host checks fields against its own schema and takes the
/// nick from the verified token, not from a field.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AuthResponse(pub Map<String, Value>);

impl AuthResponse {
    /// The `token` field, if it is a string.
    pub fn token(&self) -> Option<&str> {
        self.0.get("token").and_then(Value::as_str)
    }

    /// The JSON form.
    pub fn to_json(&self) -> Value {
        Value::Object(self.0.clone())
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        object(value, "auth response", "an object").map(Self)
    }
}

// ---- first shot ----

/// The one-off first frame (port 4): `[gameSnapshot, 0, serverTime, 0]`; it skips the interpolation buffer.
///
/// The two zeros are written as `0` and read as any number equal to zero. A time with no
/// fractional part (up to 2^53) is written as an integer (`1234`, as JavaScript does),
/// others as a float; it must be finite. `serde_json` parses floats best-effort, so a
/// time round-trips exactly when its shortest decimal form has at most 15 significant
/// digits (milliseconds with microsecond precision do).
#[derive(Clone, Debug, PartialEq)]
pub struct FirstShot {
    /// The game's snapshot object.
    pub snapshot: Value,
    /// Server time, in milliseconds.
    pub server_time_ms: f64,
}

impl FirstShot {
    /// Checks that the time is finite.
    pub fn validate(&self) -> Result<(), MetaError> {
        if self.server_time_ms.is_finite() { Ok(()) } else { Err(MetaError::NonFinite { what: "first shot time" }) }
    }

    /// The JSON form (a non-finite time is written `null`, which does not decode).
    pub fn to_json(&self) -> Value {
        const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
        let t = self.server_time_ms;
        // Integral and within ±2^53: the cast is exact.
        let time = if t.fract() == 0.0 && t.abs() <= EXACT { Value::from(t as i64) } else { Value::from(t) };
        Value::Array(vec![self.snapshot.clone(), Value::from(0), time, Value::from(0)])
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        const EXPECTED: &str = "[gameSnapshot, 0, serverTime, 0] with a number serverTime";
        let what = "first shot";
        let items = array(value, what, EXPECTED)?;
        let Ok([snapshot, zero1, time, zero2]) = <[Value; 4]>::try_from(items) else {
            return Err(shape(what, EXPECTED));
        };
        if zero1.as_f64() != Some(0.0) || zero2.as_f64() != Some(0.0) {
            return Err(shape(what, EXPECTED));
        }
        let server_time_ms = time.as_f64().ok_or_else(|| shape(what, EXPECTED))?;
        Ok(Self { snapshot, server_time_ms })
    }
}

// ---- messages ----

/// Any server → client meta payload, tagged by its port.
#[derive(Clone, Debug, PartialEq)]
pub enum MetaMessage {
    /// Port 0: the merged client config, a JSON object.
    Config(Value),
    /// Port 1: the auth form.
    AuthData(AuthData),
    /// Port 2: the auth verdict.
    AuthResult(AuthResult),
    /// Port 3: the map, a JSON object.
    Map(Value),
    /// Port 4: the first frame.
    FirstShot(FirstShot),
    /// Port 6: a system sound.
    Sound(Sound),
    /// Port 7: a game message.
    GameInform(GameInform),
    /// Port 8: a technical message.
    TechInform(TechInform),
    /// Port 11: clear canvases.
    Clear(Clear),
    /// Port 13: panel entries.
    Panel(Panel),
    /// Port 14: a statistics update.
    Stat(StatUpdate),
    /// Port 15: a chat message.
    Chat(ChatMessage),
    /// Port 16: a vote.
    Vote(Vote),
    /// Port 17: the active key set.
    Keyset(Keyset),
}

macro_rules! meta_from {
    ($($variant:ident($ty:ty)),*) => {$(
        impl From<$ty> for MetaMessage {
            fn from(value: $ty) -> Self {
                Self::$variant(value)
            }
        }
    )*};
}
meta_from!(
    AuthData(AuthData),
    AuthResult(AuthResult),
    FirstShot(FirstShot),
    Sound(Sound),
    GameInform(GameInform),
    TechInform(TechInform),
    Clear(Clear),
    Panel(Panel),
    Stat(StatUpdate),
    Chat(ChatMessage),
    Vote(Vote),
    Keyset(Keyset)
);

impl MetaMessage {
    /// The port this message goes on.
    pub fn port(&self) -> u8 {
        match self {
            Self::Config(_) => CONFIG_DATA,
            Self::AuthData(_) => AUTH_DATA,
            Self::AuthResult(_) => AUTH_RESULT,
            Self::Map(_) => MAP_DATA,
            Self::FirstShot(_) => FIRST_SHOT_DATA,
            Self::Sound(_) => SOUND_DATA,
            Self::GameInform(_) => GAME_INFORM_DATA,
            Self::TechInform(_) => TECH_INFORM_DATA,
            Self::Clear(_) => CLEAR,
            Self::Panel(_) => PANEL_DATA,
            Self::Stat(_) => STAT_DATA,
            Self::Chat(_) => CHAT_DATA,
            Self::Vote(_) => VOTE_DATA,
            Self::Keyset(_) => KEYSET_DATA,
        }
    }

    /// Checks the invariants the wire needs (see the module docs); what validates round-trips.
    pub fn validate(&self) -> Result<(), MetaError> {
        match self {
            Self::Config(v) if !v.is_object() => Err(shape("config data", "a JSON object")),
            Self::Map(v) if !v.is_object() => Err(shape("map data", "a JSON object")),
            Self::FirstShot(f) => f.validate(),
            Self::Panel(p) => p.validate(),
            Self::Chat(c) => c.validate(),
            Self::Vote(v) => v.validate(),
            _ => Ok(()),
        }
    }

    /// The JSON payload.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Config(v) | Self::Map(v) => v.clone(),
            Self::AuthData(a) => a.to_json(),
            Self::AuthResult(a) => a.to_json(),
            Self::FirstShot(f) => f.to_json(),
            Self::Sound(s) => s.to_json(),
            Self::GameInform(g) => g.to_json(),
            Self::TechInform(t) => t.to_json(),
            Self::Clear(c) => c.to_json(),
            Self::Panel(p) => p.to_json(),
            Self::Stat(s) => s.to_json(),
            Self::Chat(c) => c.to_json(),
            Self::Vote(v) => v.to_json(),
            Self::Keyset(k) => k.to_json(),
        }
    }

    /// Reads the JSON payload of a port.
    pub fn from_json(port: u8, value: Value) -> Result<Self, MetaError> {
        Ok(match port {
            CONFIG_DATA => Self::Config(Value::Object(object(value, "config data", "a JSON object")?)),
            AUTH_DATA => Self::AuthData(AuthData::from_json(value)?),
            AUTH_RESULT => Self::AuthResult(AuthResult::from_json(value)?),
            MAP_DATA => Self::Map(Value::Object(object(value, "map data", "a JSON object")?)),
            FIRST_SHOT_DATA => Self::FirstShot(FirstShot::from_json(value)?),
            SOUND_DATA => Self::Sound(Sound::from_json(value)?),
            GAME_INFORM_DATA => Self::GameInform(GameInform::from_json(value)?),
            TECH_INFORM_DATA => Self::TechInform(TechInform::from_json(value)?),
            CLEAR => Self::Clear(Clear::from_json(value)?),
            PANEL_DATA => Self::Panel(Panel::from_json(value)?),
            STAT_DATA => Self::Stat(StatUpdate::from_json(value)?),
            CHAT_DATA => Self::Chat(ChatMessage::from_json(value)?),
            VOTE_DATA => Self::Vote(Vote::from_json(value)?),
            KEYSET_DATA => Self::Keyset(Keyset::from_json(value)?),
            _ => return Err(MetaError::UnknownPort { port }),
        })
    }

    /// The payload bytes: compact JSON.
    pub fn encode(&self) -> Vec<u8> {
        self.to_json().to_string().into_bytes()
    }

    /// Reads a payload received on `port`: size check, then JSON, then shape.
    pub fn decode(port: u8, bytes: &[u8]) -> Result<Self, MetaError> {
        let value = parse(bytes)?;
        Self::from_json(port, value)
    }
}

/// Any client → server meta payload, tagged by its port.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientMeta {
    /// Port 1: the filled auth form.
    AuthResponse(AuthResponse),
    /// Port 6: a chat line or command.
    Chat(ChatText),
    /// Port 7: a vote answer or list request.
    Vote(VoteAnswer),
}

impl ClientMeta {
    /// The port this message goes on.
    pub fn port(&self) -> u8 {
        match self {
            Self::AuthResponse(_) => AUTH_RESPONSE,
            Self::Chat(_) => CHAT,
            Self::Vote(_) => VOTE,
        }
    }

    /// Checks the invariants the wire needs; what validates round-trips.
    pub fn validate(&self) -> Result<(), MetaError> {
        match self {
            Self::Vote(v) => v.validate(),
            Self::AuthResponse(_) | Self::Chat(_) => Ok(()),
        }
    }

    /// The JSON payload.
    pub fn to_json(&self) -> Value {
        match self {
            Self::AuthResponse(a) => a.to_json(),
            Self::Chat(c) => c.to_json(),
            Self::Vote(v) => v.to_json(),
        }
    }

    /// Reads the JSON payload of a port.
    pub fn from_json(port: u8, value: Value) -> Result<Self, MetaError> {
        Ok(match port {
            AUTH_RESPONSE => Self::AuthResponse(AuthResponse::from_json(value)?),
            CHAT => Self::Chat(ChatText::from_json(value)?),
            VOTE => Self::Vote(VoteAnswer::from_json(value)?),
            _ => return Err(MetaError::UnknownPort { port }),
        })
    }

    /// The payload bytes: compact JSON.
    pub fn encode(&self) -> Vec<u8> {
        self.to_json().to_string().into_bytes()
    }

    /// Reads a payload received on `port`: size check, then JSON, then shape.
    pub fn decode(port: u8, bytes: &[u8]) -> Result<Self, MetaError> {
        let value = parse(bytes)?;
        Self::from_json(port, value)
    }
}

/// A client's view of the stat tables: the cells shown, after every [`StatUpdate`] so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatView {
    /// `(table, row id)` → `(tbody, cells)`.
    pub rows: BTreeMap<(u8, u32), (u8, Vec<StatValue>)>,
    /// `(table, head row)` → cells.
    pub heads: BTreeMap<(u8, u8), Vec<StatValue>>,
}

fn apply_cells(shown: &mut Vec<StatValue>, cells: &[StatCell]) {
    for (i, cell) in cells.iter().enumerate() {
        if let StatCell::Set(v) = cell {
            if shown.len() <= i {
                shown.resize(i + 1, StatValue::empty());
            }
            shown[i] = v.clone();
        }
    }
}

impl StatView {
    /// Applies an update: a full one replaces everything; `null` cells keep what is shown.
    pub fn apply(&mut self, update: &StatUpdate) {
        if update.full == Some(true) {
            *self = Self::default();
        }
        for row in &update.bodies {
            match &row.cells {
                None => {
                    self.rows.remove(&(row.table, row.id));
                }
                Some(cells) => {
                    let entry = self.rows.entry((row.table, row.id)).or_insert((row.tbody, Vec::new()));
                    entry.0 = row.tbody;
                    apply_cells(&mut entry.1, cells);
                }
            }
        }
        for head in &update.heads {
            apply_cells(self.heads.entry((head.table, head.row)).or_default(), &head.cells);
        }
    }
}

impl fmt::Display for StatValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Text(t) => f.write_str(t),
            Self::Number(n) => write!(f, "{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn s(text: &str) -> String {
        text.to_owned()
    }

    /// The exact bytes of a message, as a string.
    fn enc(msg: impl Into<MetaMessage>) -> String {
        String::from_utf8(msg.into().encode()).expect("JSON is UTF-8")
    }

    fn dec(port: u8, text: &str) -> Result<MetaMessage, MetaError> {
        MetaMessage::decode(port, text.as_bytes())
    }

    fn client_dec(port: u8, text: &str) -> Result<ClientMeta, MetaError> {
        ClientMeta::decode(port, text.as_bytes())
    }

    /// `msg` is written as exactly `json`, and `json` reads back as `msg`.
    #[track_caller]
    fn both_ways(msg: impl Into<MetaMessage>, json: &str) {
        let msg = msg.into();
        assert_eq!(msg.validate(), Ok(()), "{msg:?} validates");
        assert_eq!(enc(msg.clone()), json, "encoding {msg:?}");
        assert_eq!(dec(msg.port(), json), Ok(msg), "decoding {json}");
    }

    #[track_caller]
    fn client_both_ways(msg: ClientMeta, json: &str) {
        assert_eq!(String::from_utf8(msg.encode()).expect("UTF-8"), json, "encoding {msg:?}");
        assert_eq!(client_dec(msg.port(), json), Ok(msg), "decoding {json}");
    }

    #[track_caller]
    fn shape_err(port: u8, json: &str, what: &'static str) {
        match dec(port, json) {
            Err(MetaError::Shape { what: w, .. }) => assert_eq!(w, what, "port {port}, {json}"),
            other => panic!("port {port}, {json}: expected a {what} shape error, got {other:?}"),
        }
    }

    fn panel(entries: &[(&str, Option<&str>)]) -> Panel {
        Panel(entries.iter().map(|(k, v)| (s(k), v.map(s))).collect())
    }

    fn pairs(entries: &[(&str, &str)]) -> Vec<(String, String)> {
        entries.iter().map(|(k, v)| (s(k), s(v))).collect()
    }

    fn set(v: impl Into<StatValue>) -> StatCell {
        StatCell::Set(v.into())
    }

    // ---- ports ----

    #[test]
    fn a_chat_history_refuses_too_many_lines_and_lines_that_are_not_chat() {
        let line = json!(["hi", "ann", 1]);
        let ok = Value::Array(vec![line.clone(); MAX_CHAT_HISTORY]).to_string();
        assert_eq!(ChatHistory::decode(ok.as_bytes()).map(|h| h.0.len()), Ok(MAX_CHAT_HISTORY));
        let long = Value::Array(vec![line; MAX_CHAT_HISTORY + 1]).to_string();
        assert!(matches!(ChatHistory::decode(long.as_bytes()), Err(MetaError::Shape { .. })));
        assert!(ChatHistory::decode(br#"[["hi", "ann"]]"#).is_err());
        assert!(ChatHistory::decode(br#"{"a": 1}"#).is_err());
        assert!(ChatHistory::decode(b"[").is_err());
    }

    #[test]
    fn ports_match_the_spec_table() {
        let server = [
            CONFIG_DATA,
            AUTH_DATA,
            AUTH_RESULT,
            MAP_DATA,
            FIRST_SHOT_DATA,
            SOUND_DATA,
            GAME_INFORM_DATA,
            TECH_INFORM_DATA,
            CLEAR,
            PANEL_DATA,
            STAT_DATA,
            CHAT_DATA,
            VOTE_DATA,
            KEYSET_DATA,
        ];
        assert_eq!(server, [0, 1, 2, 3, 4, 6, 7, 8, 11, 13, 14, 15, 16, 17]);
        assert_eq!([AUTH_RESPONSE, CHAT, VOTE], [1, 6, 7]);
    }

    #[test]
    fn every_message_knows_its_port() {
        let cases: Vec<(MetaMessage, u8)> = vec![
            (MetaMessage::Config(json!({})), 0),
            (AuthData { elems: json!({}), params: vec![], texts: None }.into(), 1),
            (AuthResult::Accepted.into(), 2),
            (MetaMessage::Map(json!({})), 3),
            (FirstShot { snapshot: json!({}), server_time_ms: 0.0 }.into(), 4),
            (Sound(s("frag")).into(), 6),
            (GameInform { code: 1, params: None }.into(), 7),
            (TechInform::Hide.into(), 8),
            (Clear::All.into(), 11),
            (Panel::default().into(), 13),
            (StatUpdate::default().into(), 14),
            (ChatMessage::System { group: s("s"), code: 1, params: vec![] }.into(), 15),
            (Vote { name: s("map"), params: None, values: None }.into(), 16),
            (Keyset::Player.into(), 17),
        ];
        for (msg, port) in cases {
            assert_eq!(msg.port(), port, "{msg:?}");
        }
        assert_eq!(ClientMeta::AuthResponse(AuthResponse::default()).port(), 1);
        assert_eq!(ClientMeta::Chat(ChatText::parse("hi").expect("valid")).port(), 6);
        assert_eq!(ClientMeta::Vote(VoteAnswer::Request(ListRequest::Maps)).port(), 7);
    }

    #[test]
    fn unknown_ports_are_refused() {
        for port in [5, 9, 10, 12, 18, 255] {
            assert_eq!(dec(port, "null"), Err(MetaError::UnknownPort { port }));
        }
        for port in [0, 2, 5, 13, 15, 16] {
            assert_eq!(client_dec(port, "\"maps\""), Err(MetaError::UnknownPort { port }));
        }
    }

    // ---- bytes ----

    #[test]
    fn oversize_payloads_are_refused_before_parsing() {
        // Exactly the limit: a valid sound name.
        let name = "a".repeat(MAX_META_LEN - 2);
        let at_limit = format!("\"{name}\"");
        assert_eq!(at_limit.len(), 65_536);
        assert_eq!(dec(SOUND_DATA, &at_limit), Ok(MetaMessage::Sound(Sound(name))));
        // One byte more, valid JSON or not, is refused unparsed.
        let over = format!("\"{}\"", "a".repeat(MAX_META_LEN - 1));
        assert_eq!(dec(SOUND_DATA, &over), Err(MetaError::TooLarge { len: 65_537 }));
        let junk = vec![b'['; MAX_META_LEN + 1];
        assert_eq!(MetaMessage::decode(STAT_DATA, &junk), Err(MetaError::TooLarge { len: 65_537 }));
        assert_eq!(ClientMeta::decode(CHAT, &junk), Err(MetaError::TooLarge { len: 65_537 }));
    }

    #[test]
    fn bad_json_is_an_error() {
        for bytes in [&b""[..], b"[1", b"[1] x", b"\"\xff\"", b"{'a':1}", b"nul", b"[1,]"] {
            assert!(
                matches!(MetaMessage::decode(PANEL_DATA, bytes), Err(MetaError::Json { .. })),
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
        // Nesting past serde_json's recursion limit is an error, not a stack overflow.
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        match dec(CONFIG_DATA, &deep) {
            Err(MetaError::Json { message }) => assert!(message.contains("recursion limit"), "{message}"),
            other => panic!("expected a JSON error, got {other:?}"),
        }
    }

    // ---- informs, sound, clear, keyset ----

    #[test]
    fn game_inform_forms() {
        both_ways(GameInform { code: GameInform::ROUND_START, params: None }, "[1]");
        both_ways(GameInform { code: GameInform::TEAM_VICTORY, params: Some(vec![json!(2)]) }, "[0,[2]]");
        both_ways(
            GameInform { code: GameInform::GAME_OVER, params: Some(vec![json!("red"), json!(3)]) },
            r#"[2,["red",3]]"#,
        );
        both_ways(GameInform { code: 255, params: Some(vec![]) }, "[255,[]]");
    }

    #[test]
    fn game_inform_errors() {
        for json in ["[]", "[256]", "[-1]", "[1.0]", "[\"1\"]", "[1,2]", "[1,null]", "[1,[],3]", "1", "null", "{}"] {
            shape_err(GAME_INFORM_DATA, json, "game inform");
        }
    }

    #[test]
    fn tech_inform_forms() {
        both_ways(TechInform::Hide, "null");
        both_ways(TechInform::Show { code: TechInform::LOADING, params: None }, "[1]");
        both_ways(TechInform::Show { code: TechInform::SERVER_FULL, params: None }, "[0]");
        both_ways(TechInform::kicked(4003, "latency"), r#"[2,[4003,"latency"]]"#);
        for json in ["[]", "\"x\"", "[2,\"latency\"]", "[300]"] {
            shape_err(TECH_INFORM_DATA, json, "tech inform");
        }
    }

    #[test]
    fn sound_and_clear_forms() {
        both_ways(Sound(s("roundStart")), r#""roundStart""#);
        both_ways(Clear::All, "null");
        both_ways(Clear::Set(s("bodies")), r#""bodies""#);
        shape_err(SOUND_DATA, "null", "sound");
        shape_err(SOUND_DATA, "[\"frag\"]", "sound");
        shape_err(CLEAR, "3", "clear");
    }

    #[test]
    fn keyset_forms() {
        both_ways(Keyset::Spectator, "0");
        both_ways(Keyset::Player, "1");
        for json in ["2", "-1", "1.0", "\"1\"", "true", "null"] {
            shape_err(KEYSET_DATA, json, "keyset");
        }
    }

    // ---- panel ----

    #[test]
    fn panel_spec_example() {
        both_ways(
            panel(&[("t", Some("97")), ("h", Some("100")), ("w1", Some("200")), ("wa", Some("w1"))]),
            r#"["t:97","h:100","w1:200","wa:w1"]"#,
        );
    }

    #[test]
    fn panel_keys_without_values_and_colons_in_values() {
        // The spectator's empty panel: time plus keys only.
        both_ways(panel(&[("t", Some("97")), ("h", None), ("w1", None), ("wa", None)]), r#"["t:97","h","w1","wa"]"#);
        // Split at the first colon; an empty value is not a missing one.
        both_ways(panel(&[("clock", Some("12:30")), ("h", Some(""))]), r#"["clock:12:30","h:"]"#);
        both_ways(panel(&[]), "[]");
    }

    #[test]
    fn panel_errors() {
        assert_eq!(dec(PANEL_DATA, r#"["t:97",""]"#), Err(MetaError::PanelKey { entry: s("") }));
        assert_eq!(dec(PANEL_DATA, r#"[":5"]"#), Err(MetaError::PanelKey { entry: s(":5") }));
        for json in [r#"["t",1]"#, r#"{"t":"1"}"#, r#""t:97""#, "null", r#"[["t","97"]]"#] {
            shape_err(PANEL_DATA, json, "panel");
        }
        let bad = MetaMessage::Panel(panel(&[("t", Some("1")), ("a:b", Some("c"))]));
        assert_eq!(bad.validate(), Err(MetaError::PanelKey { entry: s("a:b:c") }));
        assert_eq!(panel(&[("", None)]).validate(), Err(MetaError::PanelKey { entry: s("") }));
    }

    #[test]
    fn panel_state_sends_only_changes() {
        let mut state = PanelState::new();
        let full = pairs(&[("t", "97"), ("h", "100"), ("w1", "200"), ("wa", "w1")]);
        let json = |p: Option<Panel>| p.map(enc);

        assert_eq!(json(state.diff(&full)).as_deref(), Some(r#"["t:97","h:100","w1:200","wa:w1"]"#));
        assert_eq!(state.diff(&full), None, "nothing changed");

        let next = pairs(&[("t", "96"), ("h", "100"), ("w1", "199"), ("wa", "w1")]);
        assert_eq!(json(state.diff(&next)).as_deref(), Some(r#"["t:96","w1:199"]"#));

        // A new key is sent, in current's order.
        let more = pairs(&[("t", "96"), ("w2", "5"), ("h", "100"), ("w1", "199"), ("wa", "w1")]);
        assert_eq!(json(state.diff(&more)).as_deref(), Some(r#"["w2:5"]"#));

        // Becoming a spectator: only the time is left, the other keys go without values.
        let spectator = pairs(&[("t", "95")]);
        assert_eq!(json(state.diff(&spectator)).as_deref(), Some(r#"["t:95","h","w1","wa","w2"]"#));
        assert_eq!(state.sent(), pairs(&[("t", "95")]).as_slice());
        assert_eq!(state.diff(&spectator), None);

        // Entering the game again: everything is new.
        state.reset();
        assert_eq!(json(state.diff(&spectator)).as_deref(), Some(r#"["t:95"]"#));
        assert_eq!(PanelState::new().diff(&[]), None);

        // A repeated key counts with its first value.
        let twice = pairs(&[("t", "95"), ("t", "94")]);
        assert_eq!(state.diff(&twice), None);
        assert_eq!(state.diff(&twice), None);
    }

    // ---- stat ----

    #[test]
    fn stat_update_forms() {
        both_ways(
            StatUpdate {
                bodies: vec![
                    StatRow {
                        id: 7,
                        table: 0,
                        cells: Some(vec![set("bob"), set(""), set(12), set(3), set(45)]),
                        tbody: 1,
                    },
                    StatRow { id: 8, table: 0, cells: None, tbody: 1 },
                ],
                heads: vec![StatHead {
                    table: 0,
                    cells: vec![set("Name"), set("Status"), set("Score"), set("Deaths"), set("Ping")],
                    row: 0,
                }],
                full: None,
            },
            r#"[[[7,0,["bob","",12,3,45],1],[8,0,null,1]],[[0,["Name","Status","Score","Deaths","Ping"],0]]]"#,
        );
        // Unchanged, cleared and set cells; the full flag.
        both_ways(
            StatUpdate {
                bodies: vec![StatRow {
                    id: 4_294_967_295,
                    table: 2,
                    cells: Some(vec![
                        StatCell::Keep,
                        StatCell::clear(),
                        set(-13),
                        set(Number::from_f64(1.5).expect("finite")),
                    ]),
                    tbody: 255,
                }],
                heads: vec![],
                full: Some(true),
            },
            r#"[[[4294967295,2,[null,"",-13,1.5],255]],[],true]"#,
        );
        both_ways(StatUpdate { full: Some(false), ..StatUpdate::default() }, "[[],[],false]");
        assert_eq!(StatCell::clear(), set(""));
        assert!(StatValue::empty().is_empty());
        assert!(!StatValue::from(0).is_empty());
    }

    #[test]
    fn stat_errors() {
        for json in ["[]", "[[]]", "[[],[],true,1]", "[[],[],\"yes\"]", "[[],{}]", "{}", "null", "[null,[]]"] {
            shape_err(STAT_DATA, json, "stat update");
        }
        for json in [
            "[[[1,0,[]]],[]]",
            "[[[1,0,[],0,0]],[]]",
            "[[[-1,0,[],0]],[]]",
            "[[[4294967296,0,[],0]],[]]",
            "[[[1,256,[],0]],[]]",
            "[[[1,0,[],1.5]],[]]",
            "[[[\"1\",0,[],0]],[]]",
            "[[[1,0,\"x\",0]],[]]",
            "[[{}],[]]",
        ] {
            shape_err(STAT_DATA, json, "stat row");
        }
        for json in ["[[],[[0,[],0,0]]]", "[[],[[0,null,0]]]", "[[],[[0,[],300]]]"] {
            shape_err(STAT_DATA, json, "stat head");
        }
        for json in ["[[[1,0,[true],0]],[]]", "[[[1,0,[[1]],0]],[]]", "[[],[[0,[{}],0]]]"] {
            shape_err(STAT_DATA, json, "stat cell");
        }
    }

    #[test]
    fn player_stat_cells() {
        let p = PlayerStat { name: s("bob"), status: s("dead"), score: -2, deaths: 3, latency_ms: 45 };
        assert_eq!(p.cells(), vec![StatValue::from("bob"), "dead".into(), (-2).into(), 3.into(), 45.into()]);
        assert_eq!(PLAYER_COLUMNS, ["name", "status", "score", "deaths", "latency"]);
    }

    fn heads() -> Vec<StatValue> {
        ["Name", "Status", "Score", "Deaths", "Ping"].into_iter().map(StatValue::from).collect()
    }

    fn bob() -> Vec<StatValue> {
        PlayerStat { name: s("bob"), latency_ms: 40, ..PlayerStat::default() }.cells()
    }

    fn alice() -> Vec<StatValue> {
        PlayerStat { name: s("alice"), latency_ms: 55, ..PlayerStat::default() }.cells()
    }

    #[test]
    fn stat_table_sends_deltas() {
        let mut t = StatTable::new();
        let json = |u: Option<StatUpdate>| u.map(enc);
        assert_eq!(t.delta(), None, "empty tables send nothing");

        t.set_head(0, 0, heads());
        t.set_row(0, 7, 1, bob());
        t.set_row(0, 9, 1, alice());
        assert_eq!(
            json(t.delta()).as_deref(),
            Some(
                r#"[[[7,0,["bob","",0,0,40],1],[9,0,["alice","",0,0,55],1]],[[0,["Name","Status","Score","Deaths","Ping"],0]]]"#
            ),
            "first delta: everything",
        );
        assert_eq!(t.delta(), None, "nothing changed");

        // Setting the same values again is no change.
        t.set_head(0, 0, heads());
        t.set_row(0, 7, 1, bob());
        assert_eq!(t.delta(), None);

        // Only the changed cells, trailing unchanged ones cut.
        assert!(t.set_cell(0, 7, 2, 1.into()));
        assert!(t.set_cell(0, 7, 4, 42.into()));
        assert!(t.set_cell(0, 9, 1, "dead".into()));
        assert_eq!(json(t.delta()).as_deref(), Some(r#"[[[7,0,[null,null,1,null,42],1],[9,0,[null,"dead"],1]],[]]"#));

        // A removed row goes as null, once.
        assert!(t.remove_row(0, 7));
        assert!(!t.remove_row(0, 7), "already removed");
        assert_eq!(t.row(0, 7), None);
        assert!(!t.set_cell(0, 7, 0, "x".into()), "no such row");
        assert_eq!(json(t.delta()).as_deref(), Some(r#"[[[7,0,null,1]],[]]"#));
        assert_eq!(t.delta(), None);

        // A shortened row clears the cells past its end (the empty ones stay as they are).
        t.set_row(0, 9, 1, vec!["alice".into()]);
        assert_eq!(json(t.delta()).as_deref(), Some(r#"[[[9,0,[null,"","","",""],1]],[]]"#));
        t.set_row(0, 9, 1, vec!["alice".into(), StatValue::empty()]);
        assert_eq!(t.delta(), None, "an empty cell where there was none is no change");

        // A row moved to another tbody is sent whole.
        t.set_row(0, 9, 2, vec!["alice".into(), StatValue::empty()]);
        assert_eq!(json(t.delta()).as_deref(), Some(r#"[[[9,0,["alice",""],2]],[]]"#));

        // A row added and removed between two deltas is never sent.
        t.set_row(1, 7, 0, bob());
        assert!(t.remove_row(1, 7));
        assert_eq!(t.delta(), None);

        // A changed head is sent whole, clearing past its end; set_cell pads with empty cells.
        t.set_head(0, 0, vec!["Nick".into()]);
        assert!(t.set_cell(0, 9, 3, 1.into()));
        assert_eq!(t.row(0, 9), Some(&["alice".into(), StatValue::empty(), StatValue::empty(), 1.into()][..]));
        assert_eq!(json(t.delta()).as_deref(), Some(r#"[[[9,0,[null,null,null,1],2]],[[0,["Nick","","","",""],0]]]"#));
    }

    #[test]
    fn stat_table_full_is_what_was_broadcast() {
        let mut t = StatTable::new();
        t.set_head(0, 0, heads());
        t.set_row(0, 7, 1, bob());
        assert_eq!(enc(t.full()), "[[],[],true]", "nothing broadcast yet");
        t.set_row(0, 9, 1, alice());
        let _ = t.delta();
        assert!(t.remove_row(0, 7));
        assert!(t.set_cell(0, 9, 2, 5.into()));
        t.set_row(1, 3, 0, vec!["spec".into()]);
        // Changes since the last delta are not in full() yet: the new client gets them with
        // everyone else in the next delta.
        assert_eq!(
            enc(t.full()),
            r#"[[[7,0,["bob","",0,0,40],1],[9,0,["alice","",0,0,55],1]],[[0,["Name","Status","Score","Deaths","Ping"],0]],true]"#
        );
        assert_eq!(json_delta(&mut t), r#"[[[7,0,null,1],[9,0,[null,null,5],1],[3,1,["spec"],0]],[]]"#);
        assert_eq!(
            enc(t.full()),
            r#"[[[9,0,["alice","",5,0,55],1],[3,1,["spec"],0]],[[0,["Name","Status","Score","Deaths","Ping"],0]],true]"#
        );
    }

    fn json_delta(t: &mut StatTable) -> String {
        enc(t.delta().expect("a change"))
    }

    // ---- chat ----

    #[test]
    fn chat_user_form() {
        both_ways(ChatMessage::User { text: s("gg wp"), author: s("bob"), team: 2 }, r#"["gg wp","bob",2]"#);
        both_ways(ChatMessage::User { text: s("\"q\"\n"), author: s("ä"), team: 0 }, r#"["\"q\"\n","ä",0]"#);
    }

    #[test]
    fn chat_system_form() {
        let sys = |group: &str, code, params: &[&str]| ChatMessage::System {
            group: s(group),
            code,
            params: params.iter().map(|p| s(p)).collect(),
        };
        both_ways(sys("s", 3, &[]), r#""s:3""#);
        both_ways(sys("s", 3, &[""]), r#""s:3:""#);
        both_ways(sys("b", 12, &["alice", "bob"]), r#""b:12:alice,bob""#);
        both_ways(sys("m", 0, &["12:30", ""]), r#""m:0:12:30,""#);
        both_ways(sys("game_2", 4_294_967_295, &["x"]), r#""game_2:4294967295:x""#);
        assert!(sys("v", 1, &[]).is_engine());
        assert!(!sys("b", 1, &[]).is_engine());
        assert!(!ChatMessage::User { text: s("s"), author: s("s"), team: 0 }.is_engine());
    }

    #[test]
    fn chat_errors() {
        let reason = |json: &str| match dec(CHAT_DATA, json) {
            Err(MetaError::SystemMessage { text, reason }) => {
                assert_eq!(format!("\"{text}\""), json);
                reason
            }
            other => panic!("{json}: expected a system message error, got {other:?}"),
        };
        assert_eq!(reason(r#""s""#), "no ':' after the group");
        for json in [r#"":3""#, r#""bad group:1""#, r#""é:1""#, r#""abcdefghijklmnopq:1""#] {
            assert!(reason(json).starts_with("the group"), "{json}");
        }
        for json in [r#""s:""#, r#""s:03""#, r#""s:+3""#, r#""s:-1""#, r#""s:4294967296""#, r#""s: 3""#, r#""s:3a:x""#]
        {
            assert!(reason(json).starts_with("the code"), "{json}");
        }
        for json in ["[\"a\",\"b\"]", "[\"a\",\"b\",256]", "[\"a\",1,0]", "[\"a\",\"b\",0,1]", "5", "null", "{}"] {
            shape_err(CHAT_DATA, json, "chat message");
        }
        let comma = ChatMessage::System { group: s("s"), code: 1, params: vec![s("a,b")] };
        assert_eq!(comma.validate(), Err(MetaError::SystemMessage { text: s("s:1:a,b"), reason: "a param holds ','" }));
        let long = ChatMessage::System { group: "g".repeat(17), code: 1, params: vec![] };
        assert!(matches!(long.validate(), Err(MetaError::SystemMessage { .. })));
    }

    #[test]
    fn chat_text_parse() {
        let ok = |text: &str| ChatText::parse(text).map(ChatText::into_string);
        assert_eq!(ok("  hello world \t"), Ok(s("hello world")));
        assert_eq!(ok("/kick bob").as_deref(), Ok("/kick bob"));
        assert_eq!(ChatText::parse("/kick bob").expect("valid").command(), Some("kick bob"));
        assert_eq!(ChatText::parse("hi / there").expect("valid").command(), None);
        assert_eq!(ok(""), Err(MetaError::EmptyChat));
        assert_eq!(ok(" \n\t "), Err(MetaError::EmptyChat));
        assert_eq!(ok(&"é".repeat(200)), Ok("é".repeat(200)), "200 characters, 400 bytes");
        assert_eq!(ok(&format!("  {}  ", "a".repeat(200))), Ok("a".repeat(200)), "trimmed first");
        assert_eq!(ok(&"a".repeat(201)), Err(MetaError::ChatTooLong { len: 201 }));
        assert_eq!(ok("two\nlines"), Err(MetaError::ChatControl { ch: '\n' }));
        assert_eq!(ok("bell\u{7}"), Err(MetaError::ChatControl { ch: '\u{7}' }));
        assert_eq!(ok("c1\u{85}x"), Err(MetaError::ChatControl { ch: '\u{85}' }));
        assert_eq!(ChatText::parse(" hi ").expect("valid").to_string(), "hi");
    }

    #[test]
    fn chat_text_on_the_wire() {
        client_both_ways(ClientMeta::Chat(ChatText::parse("gg").expect("valid")), r#""gg""#);
        assert_eq!(
            client_dec(CHAT, r#""  /vote map ""#),
            Ok(ClientMeta::Chat(ChatText::parse("/vote map").expect("valid")))
        );
        assert_eq!(client_dec(CHAT, r#""a\u0000b""#), Err(MetaError::ChatControl { ch: '\0' }));
        assert_eq!(client_dec(CHAT, r#""""#), Err(MetaError::EmptyChat));
        assert_eq!(client_dec(CHAT, r#"["gg"]"#), Err(MetaError::Shape { what: "chat text", expected: "a string" }));
    }

    // ---- vote ----

    #[test]
    fn vote_forms() {
        both_ways(
            Vote {
                name: s("map"),
                params: Some(vec![s("bob")]),
                values: Some(VoteValues::List(vec![json!("a"), json!(2)])),
            },
            r#"{"name":"map","params":["bob"],"values":["a",2]}"#,
        );
        both_ways(
            Vote { name: s("team"), params: None, values: Some(VoteValues::Request(ListRequest::Teams)) },
            r#"{"name":"team","values":"teams"}"#,
        );
        both_ways(
            Vote { name: s("next"), params: Some(vec![]), values: Some(VoteValues::Request(ListRequest::Maps)) },
            r#"{"name":"next","params":[],"values":"maps"}"#,
        );
        both_ways(Vote { name: s(Vote::CHANGE_HOST), params: None, values: None }, r#"{"name":"@changeHost"}"#);
        // Key order on input does not matter.
        assert_eq!(
            dec(VOTE_DATA, r#"{"values":"maps","name":"m"}"#),
            Ok(MetaMessage::Vote(Vote {
                name: s("m"),
                params: None,
                values: Some(VoteValues::Request(ListRequest::Maps))
            }))
        );
    }

    #[test]
    fn vote_engine_names() {
        let vote = |name: &str| Vote { name: s(name), params: None, values: None };
        assert!(vote("@changeHost").is_engine());
        assert!(!vote("map").is_engine());
        assert!(!vote("m@p").is_engine());
    }

    #[test]
    fn vote_errors() {
        for json in [
            r#"{}"#,
            r#"{"name":1}"#,
            r#"{"name":"m","extra":1}"#,
            r#"{"name":"m","params":"a"}"#,
            r#"{"name":"m","params":[1]}"#,
            r#"{"name":"m","params":null}"#,
            r#"{"name":"m","values":"players"}"#,
            r#"{"name":"m","values":3}"#,
            r#"["m"]"#,
            "null",
        ] {
            shape_err(VOTE_DATA, json, "vote");
        }
        assert_eq!(dec(VOTE_DATA, r#"{"name":""}"#), Err(MetaError::EmptyVoteName));
    }

    #[test]
    fn vote_answer_forms() {
        client_both_ways(
            ClientMeta::Vote(VoteAnswer::Pick { name: s("map"), value: json!("dust") }),
            r#"["map","dust"]"#,
        );
        client_both_ways(
            ClientMeta::Vote(VoteAnswer::Pick { name: s("kick"), value: json!({"id":3}) }),
            r#"["kick",{"id":3}]"#,
        );
        client_both_ways(ClientMeta::Vote(VoteAnswer::Request(ListRequest::Maps)), r#""maps""#);
        client_both_ways(ClientMeta::Vote(VoteAnswer::Request(ListRequest::Teams)), r#""teams""#);
    }

    #[test]
    fn vote_answer_errors() {
        assert_eq!(
            client_dec(VOTE, r#"["@changeHost",true]"#),
            Err(MetaError::EngineVoteAnswer { name: s("@changeHost") })
        );
        assert_eq!(client_dec(VOTE, r#"["",1]"#), Err(MetaError::EmptyVoteName));
        for json in [r#""players""#, r#"["map"]"#, r#"["map",1,2]"#, "[1,2]", "null", "{}"] {
            assert!(
                matches!(client_dec(VOTE, json), Err(MetaError::Shape { what: "vote answer", .. })),
                "{json}: {:?}",
                client_dec(VOTE, json)
            );
        }
        assert_eq!(ListRequest::parse("maps"), Some(ListRequest::Maps));
        assert_eq!(ListRequest::parse("Maps"), None);
    }

    // ---- auth ----

    #[test]
    fn auth_data_forms() {
        both_ways(
            AuthData {
                elems: json!({"authId": "auth", "fieldsId": "fields"}),
                params: vec![AuthParam {
                    name: s("nick"),
                    value: json!(""),
                    options: json!({"control": "input", "maxlength": 16, "validator": "nick"}),
                }],
                texts: Some(json!({"title": "Tanks", "sections": []})),
            },
            r#"{"elems":{"authId":"auth","fieldsId":"fields"},"params":[{"name":"nick","value":"","options":{"control":"input","maxlength":16,"validator":"nick"}}],"texts":{"title":"Tanks","sections":[]}}"#,
        );
        both_ways(AuthData { elems: json!({}), params: vec![], texts: None }, r#"{"elems":{},"params":[]}"#);
        // A param's missing value and options read as null.
        assert_eq!(
            dec(AUTH_DATA, r#"{"params":[{"name":"team"}],"elems":{}}"#),
            Ok(MetaMessage::AuthData(AuthData {
                elems: json!({}),
                params: vec![AuthParam { name: s("team"), value: Value::Null, options: Value::Null }],
                texts: None,
            }))
        );
        for json in [
            r#"{"params":[]}"#,
            r#"{"elems":{}}"#,
            r#"{"elems":{},"params":{}}"#,
            r#"{"elems":{},"params":[],"x":1}"#,
            "[]",
        ] {
            shape_err(AUTH_DATA, json, "auth data");
        }
        for json in [
            r#"{"elems":{},"params":[{}]}"#,
            r#"{"elems":{},"params":[{"name":"a","x":1}]}"#,
            r#"{"elems":{},"params":[1]}"#,
        ] {
            shape_err(AUTH_DATA, json, "auth param");
        }
    }

    #[test]
    fn auth_result_forms() {
        both_ways(AuthResult::Accepted, "null");
        let errors = BTreeMap::from([(s("nick"), s("taken")), (s("pass"), s("short"))]);
        both_ways(AuthResult::Rejected(errors.clone()), r#"{"nick":"taken","pass":"short"}"#);
        // Written sorted by field, whatever the order read.
        assert_eq!(
            dec(AUTH_RESULT, r#"{"pass":"short","nick":"taken"}"#),
            Ok(MetaMessage::AuthResult(AuthResult::Rejected(errors)))
        );
        for json in [r#"{"nick":1}"#, "[]", r#""taken""#] {
            shape_err(AUTH_RESULT, json, "auth result");
        }
    }

    #[test]
    fn auth_response_form() {
        let json = r#"{"nick":"bob","model":2,"token":"e30.e30.sig"}"#;
        let Ok(ClientMeta::AuthResponse(response)) = client_dec(AUTH_RESPONSE, json) else { panic!("decodes") };
        assert_eq!(response.token(), Some("e30.e30.sig"));
        assert_eq!(response.0.get("model"), Some(&json!(2)));
        client_both_ways(ClientMeta::AuthResponse(response), json);
        assert_eq!(AuthResponse::default().token(), None);
        assert_eq!(
            client_dec(AUTH_RESPONSE, "[]"),
            Err(MetaError::Shape { what: "auth response", expected: "an object" })
        );
    }

    // ---- first shot, config, map ----

    #[test]
    fn first_shot_forms() {
        let shot = |t| FirstShot { snapshot: json!({"m1": {"3": [1.5, 2]}}), server_time_ms: t };
        both_ways(shot(1234.0), r#"[{"m1":{"3":[1.5,2]}},0,1234,0]"#);
        both_ways(shot(1234.5), r#"[{"m1":{"3":[1.5,2]}},0,1234.5,0]"#);
        both_ways(shot(-0.25), r#"[{"m1":{"3":[1.5,2]}},0,-0.25,0]"#);
        assert_eq!(
            dec(FIRST_SHOT_DATA, "[null,0.0,7,-0.0]"),
            Ok(MetaMessage::FirstShot(FirstShot { snapshot: Value::Null, server_time_ms: 7.0 }))
        );
        for json in ["[{},1,0,0]", "[{},0,\"7\",0]", "[{},0,7]", "[{},0,7,0,0]", "[{},0,7,null]", "{}"] {
            shape_err(FIRST_SHOT_DATA, json, "first shot");
        }
        let nan = MetaMessage::FirstShot(shot(f64::NAN));
        assert_eq!(nan.validate(), Err(MetaError::NonFinite { what: "first shot time" }));
        assert_eq!(enc(nan), r#"[{"m1":{"3":[1.5,2]}},0,null,0]"#);
    }

    #[test]
    fn config_and_map_are_objects() {
        both_ways(
            MetaMessage::Config(json!({"networkSendRate": 4, "interpolation": {"delay": 100}})),
            r#"{"networkSendRate":4,"interpolation":{"delay":100}}"#,
        );
        both_ways(MetaMessage::Map(json!({"name": "default", "bodies": []})), r#"{"name":"default","bodies":[]}"#);
        shape_err(CONFIG_DATA, "[1]", "config data");
        shape_err(MAP_DATA, "null", "map data");
        assert!(MetaMessage::Config(Value::Null).validate().is_err());
        assert!(MetaMessage::Map(json!([])).validate().is_err());
    }

    #[test]
    fn errors_read_well() {
        assert_eq!(
            MetaError::TooLarge { len: 70_000 }.to_string(),
            "meta payload of 70000 bytes is over the 65536-byte limit"
        );
        assert_eq!(MetaError::Shape { what: "keyset", expected: "0 or 1" }.to_string(), "keyset: expected 0 or 1");
        assert_eq!(
            MetaError::PanelKey { entry: s(":5") }.to_string(),
            "panel entry \":5\": the key must be non-empty and without ':'"
        );
    }

    // ---- properties ----

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            // Floats with few significant digits: serde_json parses those exactly.
            (-1_000_000_000i64..1_000_000_000).prop_map(|n| Value::from(n as f64 / 1000.0)),
            ".{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::vec((".{0,6}", inner), 0..5)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn arb_object() -> impl Strategy<Value = Map<String, Value>> {
        proptest::collection::vec((".{0,6}", arb_json()), 0..5).prop_map(|kv| kv.into_iter().collect())
    }

    fn arb_params() -> impl Strategy<Value = Option<Vec<Value>>> {
        proptest::option::of(proptest::collection::vec(arb_json(), 0..4))
    }

    fn arb_value() -> impl Strategy<Value = StatValue> {
        prop_oneof![
            ".{0,6}".prop_map(StatValue::Text),
            any::<i64>().prop_map(StatValue::from),
            any::<u64>().prop_map(StatValue::from),
            (-100_000i64..100_000).prop_map(|n| StatValue::Number(Number::from_f64(n as f64 / 100.0).expect("finite"))),
        ]
    }

    fn arb_cell() -> impl Strategy<Value = StatCell> {
        prop_oneof![Just(StatCell::Keep), arb_value().prop_map(StatCell::Set)]
    }

    fn arb_stat() -> impl Strategy<Value = StatUpdate> {
        let row =
            (any::<u32>(), any::<u8>(), proptest::option::of(proptest::collection::vec(arb_cell(), 0..6)), any::<u8>())
                .prop_map(|(id, table, cells, tbody)| StatRow { id, table, cells, tbody });
        let head = (any::<u8>(), proptest::collection::vec(arb_cell(), 0..6), any::<u8>())
            .prop_map(|(table, cells, row)| StatHead { table, cells, row });
        (
            proptest::collection::vec(row, 0..5),
            proptest::collection::vec(head, 0..3),
            proptest::option::of(any::<bool>()),
        )
            .prop_map(|(bodies, heads, full)| StatUpdate { bodies, heads, full })
    }

    fn arb_chat() -> impl Strategy<Value = ChatMessage> {
        prop_oneof![
            (".{0,10}", ".{0,8}", any::<u8>()).prop_map(|(text, author, team)| ChatMessage::User {
                text,
                author,
                team
            }),
            ("[A-Za-z0-9_]{1,16}", any::<u32>(), proptest::collection::vec("[^,]{0,5}", 0..4))
                .prop_map(|(group, code, params)| ChatMessage::System { group, code, params }),
        ]
    }

    fn arb_request() -> impl Strategy<Value = ListRequest> {
        prop_oneof![Just(ListRequest::Maps), Just(ListRequest::Teams)]
    }

    fn arb_vote() -> impl Strategy<Value = Vote> {
        let values = prop_oneof![
            proptest::collection::vec(arb_json(), 0..4).prop_map(VoteValues::List),
            arb_request().prop_map(VoteValues::Request),
        ];
        (".{1,8}", proptest::option::of(proptest::collection::vec(".{0,5}", 0..3)), proptest::option::of(values))
            .prop_map(|(name, params, values)| Vote { name, params, values })
    }

    fn arb_auth_data() -> impl Strategy<Value = AuthData> {
        let param =
            (".{0,6}", arb_json(), arb_json()).prop_map(|(name, value, options)| AuthParam { name, value, options });
        (arb_json(), proptest::collection::vec(param, 0..3), proptest::option::of(arb_json()))
            .prop_map(|(elems, params, texts)| AuthData { elems, params, texts })
    }

    fn arb_message() -> impl Strategy<Value = MetaMessage> {
        prop_oneof![
            arb_object().prop_map(|m| MetaMessage::Config(Value::Object(m))),
            arb_auth_data().prop_map(MetaMessage::AuthData),
            prop_oneof![
                Just(AuthResult::Accepted),
                proptest::collection::btree_map(".{0,5}", ".{0,5}", 0..4).prop_map(AuthResult::Rejected),
            ]
            .prop_map(MetaMessage::AuthResult),
            arb_object().prop_map(|m| MetaMessage::Map(Value::Object(m))),
            (arb_json(), -(1i64 << 50)..(1i64 << 50)).prop_map(|(snapshot, us)| {
                MetaMessage::FirstShot(FirstShot { snapshot, server_time_ms: us as f64 / 1000.0 })
            }),
            ".{0,10}".prop_map(|name| MetaMessage::Sound(Sound(name))),
            (any::<u8>(), arb_params()).prop_map(|(code, params)| MetaMessage::GameInform(GameInform { code, params })),
            prop_oneof![
                Just(TechInform::Hide),
                (any::<u8>(), arb_params()).prop_map(|(code, params)| TechInform::Show { code, params }),
            ]
            .prop_map(MetaMessage::TechInform),
            proptest::option::of(".{0,6}").prop_map(|id| MetaMessage::Clear(id.map_or(Clear::All, Clear::Set))),
            proptest::collection::vec(("[^:]{1,5}", proptest::option::of(".{0,6}")), 0..6)
                .prop_map(|entries| MetaMessage::Panel(Panel(entries))),
            arb_stat().prop_map(MetaMessage::Stat),
            arb_chat().prop_map(MetaMessage::Chat),
            arb_vote().prop_map(MetaMessage::Vote),
            prop_oneof![Just(Keyset::Spectator), Just(Keyset::Player)].prop_map(MetaMessage::Keyset),
        ]
    }

    fn arb_client() -> impl Strategy<Value = ClientMeta> {
        prop_oneof![
            arb_object().prop_map(|m| ClientMeta::AuthResponse(AuthResponse(m))),
            "[^\\p{Cc}]{1,210}".prop_filter_map("valid chat", |t| ChatText::parse(&t).ok()).prop_map(ClientMeta::Chat),
            ("[A-Za-z0-9_][A-Za-z0-9_@ ]{0,7}", arb_json())
                .prop_map(|(name, value)| ClientMeta::Vote(VoteAnswer::Pick { name, value })),
            arb_request().prop_map(|r| ClientMeta::Vote(VoteAnswer::Request(r))),
        ]
    }

    impl StatView {
        /// Trailing empty cells look like no cells.
        fn normalized(mut self) -> Self {
            for cells in self.rows.values_mut().map(|(_, c)| c).chain(self.heads.values_mut()) {
                while cells.last().is_some_and(StatValue::is_empty) {
                    cells.pop();
                }
            }
            self
        }
    }

    #[derive(Clone, Debug)]
    enum StatOp {
        SetRow(u8, u32, u8, Vec<StatValue>),
        SetCell(u8, u32, usize, StatValue),
        Remove(u8, u32),
        SetHead(u8, u8, Vec<StatValue>),
        Delta,
        Join,
    }

    fn arb_stat_op() -> impl Strategy<Value = StatOp> {
        let value =
            prop_oneof![Just(StatValue::empty()), Just(StatValue::from("a")), (0u32..3).prop_map(StatValue::from)];
        let cells = proptest::collection::vec(value.clone(), 0..4);
        prop_oneof![
            (0u8..2, 0u32..4, 0u8..2, cells.clone()).prop_map(|(t, id, b, c)| StatOp::SetRow(t, id, b, c)),
            (0u8..2, 0u32..4, 0usize..5, value).prop_map(|(t, id, col, v)| StatOp::SetCell(t, id, col, v)),
            (0u8..2, 0u32..4).prop_map(|(t, id)| StatOp::Remove(t, id)),
            (0u8..2, 0u8..2, cells).prop_map(|(t, r, c)| StatOp::SetHead(t, r, c)),
            Just(StatOp::Delta),
            Just(StatOp::Join),
        ]
    }

    fn round_trips(msg: &MetaMessage) -> Result<(), TestCaseError> {
        prop_assert_eq!(msg.validate(), Ok(()));
        prop_assert_eq!(MetaMessage::decode(msg.port(), &msg.encode()), Ok(msg.clone()));
        Ok(())
    }

    proptest! {
        #[test]
        fn every_message_round_trips(msg in arb_message()) {
            round_trips(&msg)?;
        }

        #[test]
        fn panel_round_trips(entries in proptest::collection::vec(("[^:]{1,5}", proptest::option::of(".{0,6}")), 0..8)) {
            round_trips(&MetaMessage::Panel(Panel(entries)))?;
        }

        #[test]
        fn stat_round_trips(update in arb_stat()) {
            round_trips(&MetaMessage::Stat(update))?;
        }

        #[test]
        fn chat_round_trips(chat in arb_chat()) {
            round_trips(&MetaMessage::Chat(chat))?;
        }

        #[test]
        fn chat_history_round_trips(lines in proptest::collection::vec(arb_chat(), 0..20)) {
            let history = ChatHistory(lines);
            prop_assert_eq!(ChatHistory::decode(&history.encode()), Ok(history));
        }

        #[test]
        fn vote_round_trips(vote in arb_vote()) {
            round_trips(&MetaMessage::Vote(vote))?;
        }

        #[test]
        fn auth_data_round_trips(auth in arb_auth_data()) {
            round_trips(&MetaMessage::AuthData(auth))?;
        }

        #[test]
        fn client_messages_round_trip(msg in arb_client()) {
            prop_assert_eq!(msg.validate(), Ok(()));
            prop_assert_eq!(ClientMeta::decode(msg.port(), &msg.encode()), Ok(msg.clone()));
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            for port in 0..=u8::MAX {
                let _ = MetaMessage::decode(port, &bytes);
                let _ = ClientMeta::decode(port, &bytes);
            }
            let _ = ChatHistory::decode(&bytes);
        }

        #[test]
        fn random_json_never_panics(value in arb_json()) {
            // Whatever decodes validates and round-trips.
            let bytes = value.to_string().into_bytes();
            if let Ok(history) = ChatHistory::decode(&bytes) {
                prop_assert_eq!(ChatHistory::decode(&history.encode()), Ok(history));
            }
            for port in 0..=u8::MAX {
                if let Ok(msg) = MetaMessage::decode(port, &bytes) {
                    round_trips(&msg)?;
                }
                if let Ok(msg) = ClientMeta::decode(port, &bytes) {
                    prop_assert_eq!(ClientMeta::decode(port, &msg.encode()), Ok(msg));
                }
            }
        }

        #[test]
        fn near_valid_strings_never_panic(text in "[a-z0-9:,+ -]{0,16}") {
            let json = Value::String(text.clone()).to_string();
            if let Ok(msg) = dec(CHAT_DATA, &json) {
                round_trips(&msg)?;
            }
            let list = json!([text]).to_string();
            if let Ok(msg) = dec(PANEL_DATA, &list) {
                round_trips(&msg)?;
            }
            let _ = ChatText::parse(&text);
        }

        #[test]
        fn panel_state_keeps_the_client_in_step(
            steps in proptest::collection::vec(proptest::collection::vec(("[a-d]", "[0-2]"), 0..5), 1..12),
        ) {
            let mut state = PanelState::new();
            let mut client: Vec<(String, Option<String>)> = Vec::new();
            for step in steps {
                // Repeated keys count with their first value.
                let mut current: Vec<(String, String)> = Vec::new();
                for (k, v) in &step {
                    if !current.iter().any(|(ck, _)| ck == k) {
                        current.push((k.clone(), v.clone()));
                    }
                }
                if let Some(Panel(entries)) = state.diff(&step) {
                    for (k, v) in entries {
                        let slot = client.iter_mut().find(|(ck, _)| *ck == k);
                        let before = slot.as_ref().and_then(|(_, cv)| cv.clone());
                        prop_assert!(before != v, "{k}: sent {v:?} though the client shows it");
                        prop_assert!(v.is_some() || before.is_some(), "{k}: hid a key that was not shown");
                        match slot {
                            Some((_, cv)) => *cv = v,
                            None => client.push((k, v)),
                        }
                    }
                }
                let mut shown: Vec<(String, String)> =
                    client.iter().filter_map(|(k, v)| Some((k.clone(), v.clone()?))).collect();
                shown.sort();
                let mut want = current.clone();
                want.sort();
                prop_assert_eq!(shown, want);
            }
        }

        #[test]
        fn stat_clients_see_what_the_host_has(ops in proptest::collection::vec(arb_stat_op(), 0..40)) {
            let mut table = StatTable::new();
            let mut clients = vec![StatView::default()];
            for op in ops {
                match op {
                    StatOp::SetRow(t, id, b, c) => table.set_row(t, id, b, c),
                    StatOp::SetCell(t, id, col, v) => {
                        let _ = table.set_cell(t, id, col, v);
                    }
                    StatOp::Remove(t, id) => {
                        let _ = table.remove_row(t, id);
                    }
                    StatOp::SetHead(t, r, c) => table.set_head(t, r, c),
                    StatOp::Delta => {
                        if let Some(update) = table.delta() {
                            prop_assert_eq!(update.full, None);
                            clients.iter_mut().for_each(|c| c.apply(&update));
                        }
                    }
                    StatOp::Join => {
                        let mut view = StatView::default();
                        view.apply(&table.full());
                        clients.push(view);
                    }
                }
            }
            if let Some(update) = table.delta() {
                clients.iter_mut().for_each(|c| c.apply(&update));
            }
            prop_assert_eq!(table.delta(), None);
            let mut truth = StatView::default();
            truth.apply(&table.full());
            let truth = truth.normalized();
            for client in clients {
                prop_assert_eq!(&client.normalized(), &truth);
            }
        }
    }
}
