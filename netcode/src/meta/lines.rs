//! The engine's system chat lines: their groups and codes, and the English text a client shows when the game has none.
//!
//! The spec gives the engine four chat groups (`s`, `v`, `m`, `c`) whose lines a client
//! may word from the game's templates and otherwise words in English itself. These are
//! the ones the engine sends:
//!
//! | line | group:code | params | English |
//! |------|-----------|--------|---------|
//! | [`EngineLine::Joined`]          | `s:1` | name | `ann joined` |
//! | [`EngineLine::Left`]            | `s:2` | name | `ann left` |
//! | [`EngineLine::Back`]            | `s:3` | name | `ann is back` |
//! | [`EngineLine::Watching`]        | `s:4` | name | `ann is watching` |
//! | [`EngineLine::Playing`]         | `s:5` | name | `ann is playing` |
//! | [`EngineLine::Verified`]        | `s:6` | name, earlier name | `Ann is verified` (`Ann (was ann2) is verified`) |
//! | [`EngineLine::Renamed`]         | `s:7` | name, new name | `ann is now ann (2): the name is a verified player's` |
//! | [`EngineLine::VotePassed`]      | `v:1` | map  | `the vote passed: map Arena` |
//! | [`EngineLine::VoteFailed`]      | `v:2` | map  | `the vote failed: map Arena` |
//! | [`EngineLine::NoSuchPlayer`]    | `c:1` | name | `no player named bob` |
//! | [`EngineLine::UnknownCommand`]  | `c:2` | command | `unknown command /kick (try /help)` |
//! | [`EngineLine::Usage`]           | `c:3` | usage | `usage: /w name text` |
//! | [`EngineLine::Commands`]        | `c:4` | command, … | `commands: /w name text, /help` |
//! | [`EngineLine::AlreadyWatching`] | `c:5` | — | `you are watching already` |
//! | [`EngineLine::AlreadyPlaying`]  | `c:6` | — | `you are playing already` |
//! | [`EngineLine::ToYourself`]      | `c:7` | — | `that is you` |
//! | [`EngineLine::TokenRefused`]    | `c:8` | why | `your token was refused (the token has expired): you play unverified` |
//!
//! Lines of group `c` answer a chat command and go to its sender only.

use super::ChatMessage;

/// A system chat line of the engine (see the module docs for each one's group, code, params and text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EngineLine {
    /// `s:1:name`: a player took a new slot.
    Joined,
    /// `s:2:name`: a player left (its slot may wait for it).
    Left,
    /// `s:3:name`: a player came back to its slot with its token.
    Back,
    /// `s:4:name`: a player now watches the match.
    Watching,
    /// `s:5:name`: a player now plays.
    Playing,
    /// `v:1:map`: the map vote passed.
    VotePassed,
    /// `v:2:map`: the map vote failed.
    VoteFailed,
    /// `c:1:name`: no player has that name.
    NoSuchPlayer,
    /// `c:2:command`: the engine knows no such command.
    UnknownCommand,
    /// `c:3:usage`: the command was written wrong; how to write it.
    Usage,
    /// `c:4:command,…`: the commands the engine knows, each with its arguments.
    Commands,
    /// `c:5`: `/spectate` from a spectator.
    AlreadyWatching,
    /// `c:6`: `/play` from a player.
    AlreadyPlaying,
    /// `c:7`: a personal line to its own author.
    ToYourself,
    /// `s:6:name,was`: a player's token checked out: it plays under its registered name.
    Verified,
    /// `s:7:name,new`: an unverified player's name is a verified player's: it plays as `new`.
    Renamed,
    /// `c:8:why`: the player's token was refused; it plays unverified.
    TokenRefused,
}

impl EngineLine {
    /// Every engine line.
    pub const ALL: [EngineLine; 17] = [
        EngineLine::Joined,
        EngineLine::Left,
        EngineLine::Back,
        EngineLine::Watching,
        EngineLine::Playing,
        EngineLine::VotePassed,
        EngineLine::VoteFailed,
        EngineLine::NoSuchPlayer,
        EngineLine::UnknownCommand,
        EngineLine::Usage,
        EngineLine::Commands,
        EngineLine::AlreadyWatching,
        EngineLine::AlreadyPlaying,
        EngineLine::ToYourself,
        EngineLine::Verified,
        EngineLine::Renamed,
        EngineLine::TokenRefused,
    ];

    /// Its group and code.
    pub const fn id(self) -> (&'static str, u32) {
        match self {
            EngineLine::Joined => ("s", 1),
            EngineLine::Left => ("s", 2),
            EngineLine::Back => ("s", 3),
            EngineLine::Watching => ("s", 4),
            EngineLine::Playing => ("s", 5),
            EngineLine::VotePassed => ("v", 1),
            EngineLine::VoteFailed => ("v", 2),
            EngineLine::NoSuchPlayer => ("c", 1),
            EngineLine::UnknownCommand => ("c", 2),
            EngineLine::Usage => ("c", 3),
            EngineLine::Commands => ("c", 4),
            EngineLine::AlreadyWatching => ("c", 5),
            EngineLine::AlreadyPlaying => ("c", 6),
            EngineLine::ToYourself => ("c", 7),
            EngineLine::Verified => ("s", 6),
            EngineLine::Renamed => ("s", 7),
            EngineLine::TokenRefused => ("c", 8),
        }
    }

    /// The engine line of a group and code, if there is one.
    pub fn of(group: &str, code: u32) -> Option<EngineLine> {
        EngineLine::ALL.into_iter().find(|line| line.id() == (group, code))
    }

    /// The line with its params. A `,` separates params on the wire, so one inside a param
    /// (a nickname may hold one) is written as `‚` (U+201A, which looks like it).
    pub fn line<S: Into<String>>(self, params: impl IntoIterator<Item = S>) -> ChatMessage {
        let (group, code) = self.id();
        let params = params.into_iter().map(|p| p.into().replace(',', "\u{201A}")).collect();
        ChatMessage::System { group: group.to_owned(), code, params }
    }

    /// Its English text with `params` filled in (`?` for a missing one).
    pub fn english(self, params: &[String]) -> String {
        let p = |i: usize| params.get(i).map_or("?", String::as_str);
        match self {
            EngineLine::Joined => format!("{} joined", p(0)),
            EngineLine::Left => format!("{} left", p(0)),
            EngineLine::Back => format!("{} is back", p(0)),
            EngineLine::Watching => format!("{} is watching", p(0)),
            EngineLine::Playing => format!("{} is playing", p(0)),
            EngineLine::VotePassed => format!("the vote passed: map {}", p(0)),
            EngineLine::VoteFailed => format!("the vote failed: map {}", p(0)),
            EngineLine::NoSuchPlayer => format!("no player named {}", p(0)),
            EngineLine::UnknownCommand => format!("unknown command /{} (try /help)", p(0)),
            EngineLine::Usage => format!("usage: /{}", p(0)),
            EngineLine::Commands => {
                let commands: Vec<String> = params.iter().map(|c| format!("/{c}")).collect();
                format!("commands: {}", commands.join(", "))
            }
            EngineLine::AlreadyWatching => "you are watching already".to_owned(),
            EngineLine::AlreadyPlaying => "you are playing already".to_owned(),
            EngineLine::ToYourself => "that is you".to_owned(),
            EngineLine::Verified if params.get(1).is_some_and(|was| was != p(0) && !was.is_empty()) => {
                format!("{} (was {}) is verified", p(0), p(1))
            }
            EngineLine::Verified => format!("{} is verified", p(0)),
            EngineLine::Renamed => format!("{} is now {}: the name is a verified player's", p(0), p(1)),
            EngineLine::TokenRefused => format!("your token was refused ({}): you play unverified", p(0)),
        }
    }
}

impl ChatMessage {
    /// The English text of an engine system line (see [`EngineLine`]); `None` for user
    /// lines, a game's groups, and codes the engine does not send.
    pub fn engine_text(&self) -> Option<String> {
        let ChatMessage::System { group, code, params } = self else { return None };
        EngineLine::of(group, *code).map(|line| line.english(params))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::ENGINE_CHAT_GROUPS;
    use crate::meta::testing::{both_ways, s};

    #[test]
    fn every_engine_line_is_one_of_a_kind_in_an_engine_group() {
        for line in EngineLine::ALL {
            let (group, code) = line.id();
            assert!(ENGINE_CHAT_GROUPS.contains(&group), "{line:?}");
            assert_eq!(EngineLine::of(group, code), Some(line));
            assert!(line.line(["x"]).is_engine());
        }
        assert_eq!(EngineLine::of("s", 99), None);
        assert_eq!(EngineLine::of("b", 1), None, "a game's group is not the engine's");
    }

    #[test]
    fn engine_lines_on_the_wire_and_in_english() {
        both_ways(EngineLine::NoSuchPlayer.line(["bob"]), r#""c:1:bob""#);
        both_ways(EngineLine::AlreadyPlaying.line(Vec::<String>::new()), r#""c:6""#);
        both_ways(EngineLine::Commands.line(["w name text", "help"]), r#""c:4:w name text,help""#);
        let english = |json: &str| {
            let msg = ChatMessage::from_json(serde_json::from_str(json).expect("json")).expect("a chat line");
            msg.engine_text()
        };
        assert_eq!(english(r#""s:1:ann""#).as_deref(), Some("ann joined"));
        assert_eq!(english(r#""s:4:ann""#).as_deref(), Some("ann is watching"));
        assert_eq!(english(r#""c:1:bob""#).as_deref(), Some("no player named bob"));
        assert_eq!(english(r#""c:2:kick""#).as_deref(), Some("unknown command /kick (try /help)"));
        assert_eq!(english(r#""c:4:w name text,help""#).as_deref(), Some("commands: /w name text, /help"));
        assert_eq!(english(r#""c:1""#).as_deref(), Some("no player named ?"), "a missing param");
        assert_eq!(english(r#""b:1:ann""#), None, "a game's group has no English default");
        assert_eq!(english(r#"["hi","ann",1]"#), None);
    }

    #[test]
    fn a_comma_in_a_param_cannot_split_it() {
        let line = EngineLine::NoSuchPlayer.line(["a,b"]);
        assert_eq!(line.validate(), Ok(()));
        assert_eq!(line.engine_text(), Some(s("no player named a\u{201A}b")));
    }
}
