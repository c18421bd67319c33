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
//! | 4  | [`FIRST_SHOT_DATA`]  | [`FirstShot`]   | `[gameSnapshot,0,serverTime,0]` (reserved: a vimp host never sends it, the first snapshot frame is the whole world) |
//! | 6  | [`SOUND_DATA`]       | [`Sound`]       | `"roundStart"` |
//! | 7  | [`GAME_INFORM_DATA`] | [`GameInform`]  | `[code]` or `[code,[param,…]]` |
//! | 8  | [`TECH_INFORM_DATA`] | [`TechInform`]  | `null` (hide the black screen), `[code]` or `[code,[param,…]]` |
//! | 11 | [`CLEAR`]            | [`Clear`]       | `null` (everything) or `"setId"` |
//! | 13 | [`PANEL_DATA`]       | [`Panel`]       | `["t:97","h:100","w1:200","wa:w1"]`, `"h"` = key without value |
//! | 14 | [`STAT_DATA`]        | [`StatUpdate`]  | `[[row,…],[head,…]]` or `[[row,…],[head,…],true]` |
//! | 15 | [`CHAT_DATA`]        | [`ChatMessage`] | `["text","author",teamId]`, `["text","author",teamId,"to"]` (personal) or `"group:code:p1,p2"` |
//! | 16 | [`VOTE_DATA`]        | [`Vote`]        | `{"name":"map","params":["a"],"values":["x","y"]}`; `values` may be `"maps"` or `"teams"` |
//! | 17 | [`KEYSET_DATA`]      | [`Keyset`]      | `0` (spectator) or `1` (player) |
//! | 18 | [`ACCOLADES_DATA`]   | [`Accolades`]   | `{"3":{"verified":true,"place":12},"4":{"verified":false}}` (the whole room, by player id) |
//!
//! [`MetaMessage`] gathers them: [`MetaMessage::port`], [`MetaMessage::encode`] and
//! [`MetaMessage::decode`]. Port 5 (the binary frame) is not a meta payload of this module:
//! decoding it is [`MetaError::UnknownPort`].
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
//!
//! # Layout
//!
//! Each family of messages has its file: `auth`, `inform` (game and tech informs,
//! sounds, clears), `first_shot`, `panel`, `stat`, `chat` (and `lines`, the engine's
//! system lines with their English texts), `vote`, `keyset`; `wire` holds what they share. Serde writes every payload and reads its shape; a type's own rules
//! (a panel key, a system chat string, a vote name) are checked after. One table per
//! direction generates [`MetaMessage`] and [`ClientMeta`] with their `port`, `encode`,
//! `decode`, `validate` and `From` conversions. Adding a message is its port in
//! [`crate::frame::op`] and a const here, its type (serde's derive, and `wire::Payload`
//! for its port), and one row in the table.

mod accolades;
mod auth;
mod chat;
mod error;
mod first_shot;
mod inform;
mod keyset;
mod lines;
mod panel;
mod stat;
#[cfg(test)]
mod testing;
mod vote;
mod wire;

pub use accolades::{Accolade, Accolades};
pub use auth::{AuthData, AuthParam, AuthResponse, AuthResult};
pub use chat::{ChatHistory, ChatMessage, ChatText, MAX_CHAT_HISTORY};
pub use error::MetaError;
pub use first_shot::FirstShot;
pub use inform::{Clear, GameInform, Sound, TechInform};
pub use keyset::Keyset;
pub use lines::EngineLine;
pub use panel::{Panel, PanelState};
pub use stat::{PlayerStat, StatCell, StatHead, StatRow, StatTable, StatUpdate, StatValue, StatView};
pub use vote::{ListRequest, Vote, VoteAnswer, VoteValues};

use serde_json::Value;

use wire::{Part, Payload};

// ---- ports ----

// Each port's number is written once, in the frame layer's opcode table.
pub use crate::frame::op::client::{AUTH_RESPONSE, CHAT, VOTE};
pub use crate::frame::op::{
    ACCOLADES_DATA, AUTH_DATA, AUTH_RESULT, CHAT_DATA, CLEAR, CONFIG_DATA, FIRST_SHOT_DATA, GAME_INFORM_DATA,
    KEYSET_DATA, MAP_DATA, PANEL_DATA, SOUND_DATA, STAT_DATA, TECH_INFORM_DATA, VOTE_DATA,
};

/// A message as it goes on the wire: its port, which follows from its type, and its bytes
/// ([`MetaMessage::encoded`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Encoded {
    /// The port.
    pub port: u8,
    /// The payload: compact JSON.
    pub bytes: Vec<u8>,
}

/// Which of a host session's token buckets a client → server meta message draws on
/// ([`ClientMeta::rate`]): its table says, so a new message needs no other list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetaRate {
    /// Chat lines and commands.
    Chat,
    /// Votes and list requests.
    Vote,
    /// What a peer sends once in a while (the auth response, among others).
    Control,
}

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

// ---- the message tables ----

/// Writes a meta enum from its port table, one `(PORT, Variant, Type)` row per port (a
/// client → server row adds the [`MetaRate`] it draws on), `Type` being one name that
/// implements `Payload<PORT>`: the enum, its `PORTS`, `rate`, `port`,
/// `validate`, `to_json`, `from_json`, `encode` and `decode`, and `From<Type>` for every
/// row but those of a bare `Value` (two ports carry one, so it cannot convert to either).
macro_rules! meta_table {
    (@bucket) => { None };
    (@bucket $bucket:ident) => { Some(MetaRate::$bucket) };
    (@from $name:ident $variant:ident Value) => {};
    (@from $name:ident $variant:ident $ty:ty) => {
        impl From<$ty> for $name {
            fn from(payload: $ty) -> Self {
                Self::$variant(payload)
            }
        }
    };
    (
        $(#[$attr:meta])*
        pub enum $name:ident {
            $( $(#[$doc:meta])* ($port:ident, $variant:ident, $ty:tt $(, $bucket:ident)?), )*
        }
    ) => {
        $(#[$attr])*
        pub enum $name {
            $( $(#[$doc])* $variant($ty), )*
        }

        impl $name {
            /// The ports of this table, in its order.
            pub const PORTS: &[u8] = &[$( $port, )*];

            /// The token bucket a message on `port` draws on, for a table whose rows name one
            /// (client → server); `None` for a port not in the table.
            pub fn rate(port: u8) -> Option<MetaRate> {
                match port {
                    $( $port => meta_table!(@bucket $($bucket)?), )*
                    _ => None,
                }
            }

            /// The port this message goes on.
            pub fn port(&self) -> u8 {
                match self {
                    $( Self::$variant(_) => $port, )*
                }
            }

            /// Checks the invariants the wire needs (see the module docs); what validates round-trips.
            pub fn validate(&self) -> Result<(), MetaError> {
                match self {
                    $( Self::$variant(payload) => <$ty as Payload<{ $port }>>::check(payload), )*
                }
            }

            /// The JSON payload.
            pub fn to_json(&self) -> Value {
                match self {
                    $( Self::$variant(payload) => wire::to_value(payload), )*
                }
            }

            /// Reads the JSON payload of a port.
            pub fn from_json(port: u8, value: Value) -> Result<Self, MetaError> {
                match port {
                    $( $port => <$ty as Payload<{ $port }>>::read(value).map(Self::$variant), )*
                    _ => Err(MetaError::UnknownPort { port }),
                }
            }

            /// The message written once, for however many peers get it: its port and bytes.
            pub fn encoded(&self) -> Encoded {
                Encoded { port: self.port(), bytes: self.encode() }
            }

            /// The payload bytes: compact JSON.
            pub fn encode(&self) -> Vec<u8> {
                match self {
                    $( Self::$variant(payload) => wire::write(payload), )*
                }
            }

            /// Reads a payload received on `port`: size check, then JSON, then shape.
            pub fn decode(port: u8, bytes: &[u8]) -> Result<Self, MetaError> {
                Self::from_json(port, wire::parse(bytes)?)
            }
        }

        $( meta_table!(@from $name $variant $ty); )*
    };
}

meta_table! {
    /// Any server → client meta payload, tagged by its port.
    #[derive(Clone, Debug, PartialEq)]
    pub enum MetaMessage {
        /// Port 0: the merged client config, a JSON object.
        (CONFIG_DATA, Config, Value),
        /// Port 1: the auth form.
        (AUTH_DATA, AuthData, AuthData),
        /// Port 2: the auth verdict.
        (AUTH_RESULT, AuthResult, AuthResult),
        /// Port 3: the map, a JSON object.
        (MAP_DATA, Map, Value),
        /// Port 4: the first frame.
        (FIRST_SHOT_DATA, FirstShot, FirstShot),
        /// Port 6: a system sound.
        (SOUND_DATA, Sound, Sound),
        /// Port 7: a game message.
        (GAME_INFORM_DATA, GameInform, GameInform),
        /// Port 8: a technical message.
        (TECH_INFORM_DATA, TechInform, TechInform),
        /// Port 11: clear canvases.
        (CLEAR, Clear, Clear),
        /// Port 13: panel entries.
        (PANEL_DATA, Panel, Panel),
        /// Port 14: a statistics update.
        (STAT_DATA, Stat, StatUpdate),
        /// Port 15: a chat message.
        (CHAT_DATA, Chat, ChatMessage),
        /// Port 16: a vote.
        (VOTE_DATA, Vote, Vote),
        /// Port 17: the active key set.
        (KEYSET_DATA, Keyset, Keyset),
        /// Port 18: the room's players in the global top.
        (ACCOLADES_DATA, Accolades, Accolades),
    }
}

meta_table! {
    /// Any client → server meta payload, tagged by its port.
    #[derive(Clone, Debug, PartialEq)]
    pub enum ClientMeta {
        /// Port 1: the filled auth form.
        (AUTH_RESPONSE, AuthResponse, AuthResponse, Control),
        /// Port 6: a chat line or command.
        (CHAT, Chat, ChatText, Chat),
        /// Port 7: a vote answer or list request.
        (VOTE, Vote, VoteAnswer, Vote),
    }
}

// ---- the bare objects: config and map ----

const CONFIG: Part = Part { what: "config data", expected: "a JSON object" };
const MAP: Part = Part { what: "map data", expected: "a JSON object" };

/// `Ok` for a JSON object, else `part`'s shape error.
fn must_be_object(value: &Value, part: Part) -> Result<(), MetaError> {
    if value.is_object() { Ok(()) } else { Err(part.mismatch()) }
}

impl Payload<CONFIG_DATA> for Value {
    fn read(value: Value) -> Result<Self, MetaError> {
        must_be_object(&value, CONFIG).map(|()| value)
    }

    fn check(&self) -> Result<(), MetaError> {
        must_be_object(self, CONFIG)
    }
}

impl Payload<MAP_DATA> for Value {
    fn read(value: Value) -> Result<Self, MetaError> {
        must_be_object(&value, MAP).map(|()| value)
    }

    fn check(&self) -> Result<(), MetaError> {
        must_be_object(self, MAP)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Map, Number, json};

    use super::testing::{both_ways, client_dec, dec, s, shape_err};
    use super::*;

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
            ACCOLADES_DATA,
        ];
        assert_eq!(server, [0, 1, 2, 3, 4, 6, 7, 8, 11, 13, 14, 15, 16, 17, 18]);
        assert_eq!([AUTH_RESPONSE, CHAT, VOTE], [1, 6, 7]);
    }

    /// The host session's allow-list and rate limits come from the client → server table:
    /// every row names its bucket, and no port of the other direction is let in by it.
    #[test]
    fn the_client_table_names_each_port_s_bucket() {
        assert_eq!(ClientMeta::PORTS, [AUTH_RESPONSE, CHAT, VOTE]);
        let rates: Vec<_> = ClientMeta::PORTS.iter().map(|&p| ClientMeta::rate(p)).collect();
        assert_eq!(rates, [Some(MetaRate::Control), Some(MetaRate::Chat), Some(MetaRate::Vote)]);
        for port in (0..=u8::MAX).filter(|p| !ClientMeta::PORTS.contains(p)) {
            assert_eq!(ClientMeta::rate(port), None, "port {port}");
        }
        assert!(MetaMessage::PORTS.iter().all(|&p| MetaMessage::rate(p).is_none()));
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
            (Accolades::default().into(), 18),
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
        for port in [5, 9, 10, 12, 19, 255] {
            assert_eq!(dec(port, "null"), Err(MetaError::UnknownPort { port }));
        }
        for port in [0, 2, 5, 13, 15, 16] {
            assert_eq!(client_dec(port, "\"maps\""), Err(MetaError::UnknownPort { port }));
        }
    }

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
            (".{0,10}", ".{0,8}", any::<u8>(), ".{0,8}").prop_map(|(text, author, team, to)| ChatMessage::Personal {
                text,
                author,
                team,
                to
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
            proptest::collection::btree_map(
                any::<u8>().prop_map(|id| id.to_string()),
                (any::<bool>(), proptest::option::of(1u64..100_000))
                    .prop_map(|(verified, place)| Accolade { verified, place }),
                0..6,
            )
            .prop_map(|m| MetaMessage::Accolades(Accolades(m))),
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
    }
}
