//! Votes: the vote the server shows (port 16) and the answer or list request a client sends (port 7).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::wire::{Part, Payload, present};
use super::{MetaError, VOTE, VOTE_DATA};

/// A dynamic list a vote's values come from; the client asks the server for it (port 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vote {
    /// The vote's name (the client picks its template by it).
    pub name: String,
    /// Strings for the title's `{0}`, `{1}`… placeholders.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    pub params: Option<Vec<String>>,
    /// The choices.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
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

    const PART: Part = Part {
        what: "vote",
        expected: "{\"name\": string, \"params\"?: [strings], \"values\"?: [values] or \"maps\" or \"teams\"}",
    };
}

impl Payload<VOTE_DATA> for Vote {
    fn read(value: Value) -> Result<Self, MetaError> {
        let vote: Self = Self::PART.read_object(value)?;
        vote.validate()?;
        Ok(vote)
    }

    fn check(&self) -> Result<(), MetaError> {
        self.validate()
    }
}

/// A client's vote message (port 7): an answer `["voteName",selectedValue]` or a list request `"maps"` / `"teams"`.
///
/// Answers to engine votes (`@…`) are refused: they do not go through this port.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(into = "AnswerForm")]
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

    const PART: Part = Part { what: "vote answer", expected: "[voteName, value], \"maps\" or \"teams\"" };
}

/// `["voteName", value]` or `"maps"` / `"teams"`.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum AnswerForm {
    Pick(String, Value),
    Request(ListRequest),
}

impl From<VoteAnswer> for AnswerForm {
    fn from(answer: VoteAnswer) -> Self {
        match answer {
            VoteAnswer::Pick { name, value } => Self::Pick(name, value),
            VoteAnswer::Request(request) => Self::Request(request),
        }
    }
}

impl From<AnswerForm> for VoteAnswer {
    fn from(form: AnswerForm) -> Self {
        match form {
            AnswerForm::Pick(name, value) => Self::Pick { name, value },
            AnswerForm::Request(request) => Self::Request(request),
        }
    }
}

impl Payload<VOTE> for VoteAnswer {
    fn read(value: Value) -> Result<Self, MetaError> {
        let answer = Self::from(Self::PART.read::<AnswerForm>(value)?);
        answer.validate()?;
        Ok(answer)
    }

    fn check(&self) -> Result<(), MetaError> {
        self.validate()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::meta::testing::{both_ways, client_both_ways, client_dec, dec, s, shape_err};
    use crate::meta::{ClientMeta, MetaMessage};

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
}
