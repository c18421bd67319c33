//! Chat on the host: lines to everyone, personal lines (`/w name text`), the engine's chat commands and its system lines.
//!
//! A line a player sends (port 6) is plain text, said to everyone, or a `/command`:
//!
//! | command | what it does |
//! |---------|--------------|
//! | `/w name text` (`/whisper`, `/msg`) | a personal line: only `name` and the author get it |
//! | `/spectate` | the player stops playing and watches (`KEYSET 0`) |
//! | `/play` | a spectator plays (`KEYSET 1`), after the game's form if it has one |
//! | `/help` | the commands, as a system line to the sender |
//!
//! Names are matched without regard to case (the roster keeps them unique that way); a
//! name with spaces is written as shown (`/w ann (2) hi`) or in double quotes. Every
//! error is a system line of the engine's group `c` ([`EngineLine`]) to the sender only:
//! no player of that name, an unknown command, a command written wrong. Lines to everyone
//! are kept in the recent chat (checkpoints, a resumed player's history); personal lines
//! and answers to commands are not, so nobody else ever gets them. Every line, command or
//! not, comes through the session's chat bucket.

use vimp_netcode::frame::{Channel, op};
use vimp_netcode::meta::{ChatMessage, ClientMeta, Encoded, EngineLine, MetaError, MetaMessage};
use vimp_netcode::session::same_nickname;
use vimp_netcode::transport::PeerKey;

use super::ServerCore;
use crate::engine::players::{Participants, PlayerId};

/// The engine's commands as `/help` lists them: each one's name and arguments.
pub(super) const COMMANDS: [&str; 4] = ["w name text", "spectate", "play", "help"];

/// The params of a line that has none.
pub(super) const NO_PARAMS: [&str; 0] = [];

/// A chat command the engine knows, with what follows its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Command<'a> {
    /// `/w`, `/whisper`, `/msg`: a personal line.
    Whisper(&'a str),
    /// `/spectate`.
    Spectate,
    /// `/play`.
    Play,
    /// `/help`.
    Help,
    /// Any other name.
    Unknown(&'a str),
}

impl<'a> Command<'a> {
    /// Reads a command line (the text after the `/`): its name, without regard to case, and
    /// its arguments.
    fn parse(line: &'a str) -> Command<'a> {
        let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let args = args.trim_start();
        match name.to_lowercase().as_str() {
            "w" | "whisper" | "msg" => Command::Whisper(args),
            "spectate" => Command::Spectate,
            "play" => Command::Play,
            "help" => Command::Help,
            _ => Command::Unknown(name),
        }
    }
}

/// Splits `/w`'s arguments into the receiver's name as written and the text: a name in
/// double quotes; else the longest of `names` the arguments start with, case aside, followed
/// by a space; else the first word.
fn split_receiver<'a>(args: &'a str, names: &[&str]) -> (&'a str, &'a str) {
    if let Some(quoted) = args.strip_prefix('"')
        && let Some((name, text)) = quoted.split_once('"')
    {
        return (name.trim(), text.trim());
    }
    let known = names
        .iter()
        .filter_map(|name| {
            let end = args.char_indices().nth(name.chars().count()).map_or(args.len(), |(i, _)| i);
            let (head, rest) = args.split_at(end);
            (same_nickname(head, name) && rest.starts_with(char::is_whitespace)).then_some((head, rest))
        })
        .max_by_key(|(head, _)| head.len());
    let (name, text) = known.unwrap_or_else(|| args.split_once(char::is_whitespace).unwrap_or((args, "")));
    (name, text.trim())
}

impl ServerCore {
    /// A chat line from `peer`: said to everyone, or a command. An empty, overlong or
    /// control-character line is dropped; bytes that are not a chat line close the peer.
    pub(super) fn on_chat(&mut self, peer: PeerKey, payload: &[u8]) {
        let Some(player) = self.roster.player_of(peer) else { return };
        let text = match ClientMeta::decode(op::client::CHAT, payload) {
            Ok(ClientMeta::Chat(text)) => text,
            Err(MetaError::EmptyChat | MetaError::ChatTooLong { .. } | MetaError::ChatControl { .. }) => return,
            _ => {
                self.protocol_error(peer);
                return;
            }
        };
        match text.command() {
            Some(line) => self.run_command(peer, player, Command::parse(line)),
            None => {
                let (author, team) = self.author(player);
                self.broadcast_chat(ChatMessage::User { text: text.into_string(), author, team });
            }
        }
    }

    fn run_command(&mut self, peer: PeerKey, player: PlayerId, command: Command<'_>) {
        match command {
            Command::Whisper(args) => self.whisper(peer, player, args),
            Command::Spectate => self.watch(player),
            Command::Play => self.play(peer, player),
            Command::Help => self.reply(peer, EngineLine::Commands, COMMANDS),
            Command::Unknown(name) => self.reply(peer, EngineLine::UnknownCommand, [name]),
        }
    }

    /// `/w name text`: the line goes to the connected player of that name and back to its
    /// author, and to nobody else.
    fn whisper(&mut self, peer: PeerKey, player: PlayerId, args: &str) {
        let names: Vec<&str> = self.roster.seats().filter(|s| s.peer.is_some()).map(|s| s.nickname.as_str()).collect();
        let (name, text) = split_receiver(args, &names);
        if name.is_empty() || text.is_empty() {
            return self.reply(peer, EngineLine::Usage, [COMMANDS[0]]);
        }
        let receiver = self
            .roster
            .seats()
            .find(|s| s.peer.is_some() && same_nickname(&s.nickname, name))
            .map(|s| (s.player, s.peer));
        let Some((to_player, Some(to_peer))) = receiver else {
            return self.reply(peer, EngineLine::NoSuchPlayer, [name]);
        };
        if to_player == player {
            return self.reply(peer, EngineLine::ToYourself, NO_PARAMS);
        }
        let (author, team) = self.author(player);
        let to = self.roster.seat(to_player).map(|s| s.nickname.clone()).unwrap_or_default();
        let line = MetaMessage::from(ChatMessage::Personal { text: text.to_owned(), author, team, to }).encoded();
        for target in [to_peer, peer] {
            self.send_to(target, &line);
        }
    }

    /// A player's shown name (its seat's nickname) and team (0 while it watches).
    fn author(&self, player: PlayerId) -> (String, u8) {
        let team = self.host.world().resource::<Participants>().0.get(&player).map_or(0, |p| p.team);
        (self.roster.seat(player).map(|s| s.nickname.clone()).unwrap_or_default(), team)
    }

    /// An engine system line to `peer` only (an answer to its command).
    pub(super) fn reply<S: Into<String>>(
        &mut self,
        peer: PeerKey,
        line: EngineLine,
        params: impl IntoIterator<Item = S>,
    ) {
        self.send_to(peer, &MetaMessage::from(line.line(params)).encoded());
    }

    /// An engine system line to everyone.
    pub(super) fn announce<S: Into<String>>(&mut self, line: EngineLine, params: impl IntoIterator<Item = S>) {
        self.broadcast_chat(line.line(params));
    }

    /// A chat line to everyone, kept in the recent chat.
    pub(super) fn broadcast_chat(&mut self, message: ChatMessage) {
        let line = MetaMessage::from(message).encoded();
        self.chat_line(&line.bytes);
        self.send_all(&line);
    }

    /// A meta message to one peer on the reliable channel, if its session is active.
    pub(super) fn send_to(&mut self, peer: PeerKey, message: &Encoded) {
        if let Some(session) = self.peers.get_mut(&peer).filter(|s| s.is_active()) {
            session.send(Channel::Reliable, message.port, &message.bytes);
        }
    }

    /// A meta message to every peer whose session is active.
    pub(super) fn send_all(&mut self, message: &Encoded) {
        for session in self.peers.values_mut().filter(|s| s.is_active()) {
            session.send(Channel::Reliable, message.port, &message.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_read_by_name_without_regard_to_case() {
        assert_eq!(Command::parse("w bob hi there"), Command::Whisper("bob hi there"));
        assert_eq!(Command::parse("MSG  bob hi"), Command::Whisper("bob hi"));
        assert_eq!(Command::parse("whisper"), Command::Whisper(""));
        assert_eq!(Command::parse("Spectate"), Command::Spectate);
        assert_eq!(Command::parse("play now"), Command::Play);
        assert_eq!(Command::parse("help"), Command::Help);
        assert_eq!(Command::parse("kick bob"), Command::Unknown("kick"));
        assert_eq!(Command::parse("@changeHost"), Command::Unknown("@changeHost"));
    }

    #[test]
    fn the_receiver_is_a_known_name_a_quoted_one_or_the_first_word() {
        let names = ["ann", "ann (2)", "Bob", "Zoë K"];
        assert_eq!(split_receiver("bob see you", &names), ("bob", "see you"));
        assert_eq!(split_receiver("ann (2) hi", &names), ("ann (2)", "hi"), "the longest known name");
        assert_eq!(split_receiver("ann hi", &names), ("ann", "hi"));
        assert_eq!(split_receiver("ZOË k  gg ", &names), ("ZOË k", "gg"), "case aside, any script");
        assert_eq!(split_receiver("\"cy d\" yo", &names), ("cy d", "yo"), "quoted");
        assert_eq!(split_receiver("carl yo", &names), ("carl", "yo"), "unknown: the first word");
        assert_eq!(split_receiver("bob", &names), ("bob", ""), "no text");
        assert_eq!(split_receiver("bobby hi", &names), ("bobby", "hi"), "a name is whole, not a prefix");
        assert_eq!(split_receiver("", &names), ("", ""));
    }

    proptest::proptest! {
        /// Whatever a player writes after `/w`, in any script, the split never panics and
        /// gives back pieces of what was written.
        #[test]
        fn any_arguments_split_without_panicking(args in "\\PC{0,24}", name in "\\PC{1,6}") {
            let names = [name.as_str(), "ann", "ÄÖ ü"];
            let (who, text) = split_receiver(&args, &names);
            proptest::prop_assert!(args.contains(who) && args.contains(text), "{args:?} → {who:?}, {text:?}");
            let _ = Command::parse(&args);
        }
    }
}
