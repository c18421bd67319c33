//! A client's chat: the lines its hosts sent, and the lines said while no host was followed.

use std::collections::VecDeque;

/// Chat lines a client keeps while it follows no host (see [`ClientCore::say`](super::ClientCore::say)).
pub const MAX_UNSENT_CHAT: usize = 16;

/// The chat as a client holds it: the lines heard, and the lines said that wait for a host
/// to be followed (before the welcome, the host silent or lost, a host change under way).
/// [`ClientCore`](super::ClientCore) sends them once one is.
#[derive(Debug, Default)]
pub(super) struct Chat {
    /// Lines received (`[text, author, teamId]`), oldest first.
    lines: Vec<serde_json::Value>,
    /// Lines said while no host was followed, oldest first (at most [`MAX_UNSENT_CHAT`]).
    unsent: VecDeque<String>,
}

impl Chat {
    /// The lines received, oldest first.
    pub(super) fn lines(&self) -> &[serde_json::Value] {
        &self.lines
    }

    /// A line from the host (`CHAT_DATA`).
    pub(super) fn heard(&mut self, line: serde_json::Value) {
        self.lines.push(line);
    }

    /// A line said: it waits to be sent, the oldest dropped past [`MAX_UNSENT_CHAT`].
    pub(super) fn say(&mut self, text: &str) {
        if self.unsent.len() == MAX_UNSENT_CHAT {
            self.unsent.pop_front();
        }
        self.unsent.push_back(text.to_owned());
    }

    /// The lines waiting, oldest first, taken to be sent to the host now followed.
    pub(super) fn take_unsent(&mut self) -> std::collections::vec_deque::Drain<'_, String> {
        self.unsent.drain(..)
    }

    /// The host's recent chat after a resumed welcome: the lines after the newest one this
    /// client already has (all of them when it has none of them) join its chat.
    pub(super) fn merge(&mut self, history: Vec<serde_json::Value>) {
        let seen = self.lines.last().and_then(|last| history.iter().rposition(|line| line == last));
        let new = seen.map_or(0, |i| i + 1);
        self.lines.extend(history.into_iter().skip(new));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> serde_json::Value {
        serde_json::json!([text, "ann", 1])
    }

    #[test]
    fn lines_said_with_no_host_are_kept_up_to_the_limit_and_go_in_order() {
        let mut chat = Chat::default();
        for n in 0..MAX_UNSENT_CHAT + 3 {
            chat.say(&format!("line {n}"));
        }
        let sent: Vec<String> = chat.take_unsent().collect();
        let expected: Vec<String> = (3..MAX_UNSENT_CHAT + 3).map(|n| format!("line {n}")).collect();
        assert_eq!(sent, expected, "the three oldest dropped, the rest in the order said");
        assert_eq!(chat.take_unsent().count(), 0, "sent once");
        chat.say("again");
        assert_eq!(chat.take_unsent().collect::<Vec<_>>(), ["again"]);
        assert!(chat.lines().is_empty(), "what is said is not what is heard");
    }

    #[test]
    fn a_resumed_host_s_history_adds_only_the_lines_after_the_newest_one_held() {
        let mut chat = Chat::default();
        chat.merge(vec![line("a"), line("b")]);
        assert_eq!(chat.lines(), [line("a"), line("b")], "none held: all of them");
        chat.heard(line("c"));
        chat.merge(vec![line("b"), line("c"), line("d"), line("e")]);
        assert_eq!(chat.lines(), [line("a"), line("b"), line("c"), line("d"), line("e")]);
        chat.merge(vec![line("x")]);
        assert_eq!(chat.lines().last(), Some(&line("x")), "a history without the newest held: all of it");
        assert_eq!(chat.lines().len(), 6);
    }
}
