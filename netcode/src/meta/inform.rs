//! What the screen is told: game and tech informs (ports 7 and 8), sounds (port 6) and clears (port 11).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::wire::{Part, Payload, present};
use super::{CLEAR, GAME_INFORM_DATA, MetaError, SOUND_DATA, TECH_INFORM_DATA};

const INFORM: &str = "[code] or [code, [params…]] with an integer code in 0..=255";

/// `[code]` or `[code, [params…]]`: an inform on the wire.
#[derive(Serialize, Deserialize)]
struct InformForm(
    u8,
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")] Option<Vec<Value>>,
);

/// An on-screen game message (port 7): `[code]` or `[code, [params…]]`.
///
/// The codes are the engine's `gameCodes`, shared by host and client; see the consts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "InformForm", into = "InformForm")]
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
    /// A player destroyed another (or itself): params `[killer, victim]`, their player ids (the
    /// stat table's row ids). Shown in a kill feed, not as a banner.
    pub const FRAG: u8 = 3;

    const PART: Part = Part { what: "game inform", expected: INFORM };
}

impl From<InformForm> for GameInform {
    fn from(InformForm(code, params): InformForm) -> Self {
        Self { code, params }
    }
}

impl From<GameInform> for InformForm {
    fn from(inform: GameInform) -> Self {
        Self(inform.code, inform.params)
    }
}

impl Payload<GAME_INFORM_DATA> for GameInform {
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::PART.read(value)
    }
}

/// A "black screen" technical message (port 8): shown with `[code]` / `[code, [params…]]`, hidden with `null`.
///
/// The spec names the messages (server full, loading, kicks) but not their numbers;
/// the numbers in the consts are ours.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "Option<InformForm>", into = "Option<InformForm>")]
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

    const PART: Part = Part { what: "tech inform", expected: INFORM };

    /// The kick message: `[2, [closeCode, reason]]`.
    pub fn kicked(close_code: u16, reason: impl Into<String>) -> Self {
        Self::Show { code: Self::KICKED, params: Some(vec![Value::from(close_code), Value::String(reason.into())]) }
    }
}

impl From<Option<InformForm>> for TechInform {
    fn from(form: Option<InformForm>) -> Self {
        match form {
            None => Self::Hide,
            Some(InformForm(code, params)) => Self::Show { code, params },
        }
    }
}

impl From<TechInform> for Option<InformForm> {
    fn from(inform: TechInform) -> Self {
        match inform {
            TechInform::Hide => None,
            TechInform::Show { code, params } => Some(InformForm(code, params)),
        }
    }
}

impl Payload<TECH_INFORM_DATA> for TechInform {
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::PART.read(value)
    }
}

/// A system sound to play (port 6): its name as a JSON string, e.g. `"roundStart"`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sound(pub String);

impl Sound {
    const PART: Part = Part { what: "sound", expected: "a string" };
}

impl Payload<SOUND_DATA> for Sound {
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::PART.read(value)
    }
}

/// Clear the canvases (port 11): all of them (`null`) or one set (`"setId"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Option<String>", into = "Option<String>")]
pub enum Clear {
    /// `null`: clear everything.
    All,
    /// `"setId"`: clear one set.
    Set(String),
}

impl Clear {
    const PART: Part = Part { what: "clear", expected: "null or a set id string" };
}

impl From<Option<String>> for Clear {
    fn from(id: Option<String>) -> Self {
        id.map_or(Self::All, Self::Set)
    }
}

impl From<Clear> for Option<String> {
    fn from(clear: Clear) -> Self {
        match clear {
            Clear::All => None,
            Clear::Set(id) => Some(id),
        }
    }
}

impl Payload<CLEAR> for Clear {
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::PART.read(value)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::meta::testing::{both_ways, s, shape_err};

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
}
