//! The one error of the meta payloads, [`MetaError`].

use thiserror::Error;

use super::{MAX_CHAT_LEN, MAX_META_LEN};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::testing::s;

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
}
