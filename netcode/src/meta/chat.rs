//! Chat: the messages the server sends (port 15), the recent chat a resuming client gets ([`ChatHistory`]) and the lines a client sends (port 6).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::wire::{Part, Payload, Unread, parse, to_value, write};
use super::{CHAT, CHAT_DATA, ENGINE_CHAT_GROUPS, MAX_CHAT_GROUP_LEN, MAX_CHAT_LEN, MetaError};

/// A chat message from the server (port 15).
///
/// * `User`: `["text","author",teamId]`.
/// * `Personal`: `["text","author",teamId,"to"]`, a line one user wrote to another (`/w`):
///   only those two get it. The spec's user line with the receiver's name after it.
/// * `System`: `"group:code"` without params, `"group:code:p1,p2"` with them; the client
///   builds the text from the game's templates (engine groups, [`ENGINE_CHAT_GROUPS`],
///   fall back to English defaults). The group is 1 to [`MAX_CHAT_GROUP_LEN`] ASCII
///   letters, digits or `_`; params hold no `,` (they may hold `:`); `"s:3:"` is one
///   empty param.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(into = "ChatForm")]
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
    /// A line a user wrote to one other user; only the two of them get it.
    Personal {
        /// The line.
        text: String,
        /// The author's nick.
        author: String,
        /// The author's team.
        team: u8,
        /// The receiver's nick.
        to: String,
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

/// `["text","author",teamId]`, `["text","author",teamId,"to"]` or a system message's
/// `"group:code:params"` string, still to be parsed.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum ChatForm {
    User(String, String, u8),
    Personal(String, String, u8, String),
    System(String),
}

impl From<ChatMessage> for ChatForm {
    fn from(message: ChatMessage) -> Self {
        match message {
            ChatMessage::User { text, author, team } => Self::User(text, author, team),
            ChatMessage::Personal { text, author, team, to } => Self::Personal(text, author, team, to),
            ChatMessage::System { group, code, params } => Self::System(system_string(&group, code, &params)),
        }
    }
}

const GROUP_RULE: &str = "the group must be 1 to 16 ASCII letters, digits or '_'";

fn valid_group(group: &str) -> bool {
    (1..=MAX_CHAT_GROUP_LEN).contains(&group.len()) && group.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

// Written by hand: a system message is one string, `group:code:p1,p2`, a shape no serde
// attribute expresses; it is joined here and split in `parse_system`.
fn system_string(group: &str, code: u32, params: &[String]) -> String {
    if params.is_empty() { format!("{group}:{code}") } else { format!("{group}:{code}:{}", params.join(",")) }
}

impl ChatMessage {
    const PART: Part = Part {
        what: "chat message",
        expected: "[text, author, teamId], [text, author, teamId, to] or a \"group:code:params\" string",
    };

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
        to_value(self)
    }

    /// Reads the JSON form.
    pub fn from_json(value: Value) -> Result<Self, MetaError> {
        match Self::PART.read(value)? {
            ChatForm::User(text, author, team) => Ok(Self::User { text, author, team }),
            ChatForm::Personal(text, author, team, to) => Ok(Self::Personal { text, author, team, to }),
            ChatForm::System(text) => Self::parse_system(text),
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

impl Payload<CHAT_DATA> for ChatMessage {
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::from_json(value)
    }

    fn check(&self) -> Result<(), MetaError> {
        self.validate()
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
    const PART: Part = Part { what: "chat history", expected: "an array of at most 256 chat messages" };

    /// The payload.
    pub fn encode(&self) -> Vec<u8> {
        write(&self.0)
    }

    /// Reads a payload; errors, never panics.
    pub fn decode(bytes: &[u8]) -> Result<ChatHistory, MetaError> {
        let lines = Self::PART.read::<Vec<Unread>>(parse(bytes)?)?;
        if lines.len() > MAX_CHAT_HISTORY {
            return Err(Self::PART.mismatch());
        }
        lines.into_iter().map(ChatMessage::from_json).collect::<Result<_, _>>().map(ChatHistory)
    }
}

/// A chat line a client sends (port 6): a JSON string, plain text or a `/command`.
///
/// [`ChatText::parse`] trims it (Unicode white space) and refuses it when it is then
/// empty, longer than [`MAX_CHAT_LEN`] characters, or holds a control character
/// (`char::is_control`: C0, DEL, C1; a newline inside the line too). A `ChatText` always
/// holds the trimmed, checked text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ChatText(String);

impl ChatText {
    const PART: Part = Part { what: "chat text", expected: "a string" };

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
}

impl Payload<CHAT> for ChatText {
    /// Reads the JSON string and checks it as [`ChatText::parse`] does.
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::parse(&Self::PART.read::<String>(value)?)
    }
}

impl fmt::Display for ChatText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::meta::ClientMeta;
    use crate::meta::testing::{both_ways, client_both_ways, client_dec, dec, s, shape_err};

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
    fn chat_user_form() {
        both_ways(ChatMessage::User { text: s("gg wp"), author: s("bob"), team: 2 }, r#"["gg wp","bob",2]"#);
        both_ways(ChatMessage::User { text: s("\"q\"\n"), author: s("ä"), team: 0 }, r#"["\"q\"\n","ä",0]"#);
    }

    #[test]
    fn chat_personal_form() {
        both_ways(
            ChatMessage::Personal { text: s("meet at b"), author: s("ann"), team: 1, to: s("bob (2)") },
            r#"["meet at b","ann",1,"bob (2)"]"#,
        );
        // One element more or less, or a receiver that is not a name, is no chat line.
        for json in [r#"["a","b",1,"c","d"]"#, r#"["a","b",1,2]"#, r#"["a","b",1,null]"#] {
            shape_err(CHAT_DATA, json, "chat message");
        }
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
}
