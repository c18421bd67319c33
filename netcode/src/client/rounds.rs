//! A verified player's part in the global top: the scoreboard it saw, and the round ends its
//! host told it of, checked against that scoreboard, for its process to sign and report.

use std::collections::VecDeque;

use crate::meta::{StatUpdate, StatView};
use crate::rounds::{RoundError, RoundOver, RoundResults};

/// The most round ends kept untaken (a process that never takes them keeps the newest).
const MAX_ROUNDS_KEPT: usize = 8;

/// What a client keeps to check its host's round ends ([`ClientCore::take_round`](super::ClientCore::take_round)).
#[derive(Debug, Default)]
pub(super) struct Rounds {
    /// The player's identity key, once its process said it plays verified: a round end is
    /// checked only then.
    key: Option<String>,
    /// The stat table as the player's scoreboard shows it.
    scoreboard: StatView,
    /// Round ends heard and checked, oldest first: the results to sign, or why not.
    heard: VecDeque<Result<RoundResults, RoundError>>,
}

impl Rounds {
    pub(super) fn set_key(&mut self, key: Option<String>) {
        self.key = key;
    }

    /// A stat update from the host, as the scoreboard applies it.
    pub(super) fn stat(&mut self, update: &StatUpdate) {
        self.scoreboard.apply(update);
    }

    /// A round's end from the host (`ROUND_RESULTS`), for the player in row `me`: checked,
    /// kept to be taken. Ignored when the player plays unverified (it reports nothing).
    pub(super) fn heard(&mut self, payload: &[u8], me: Option<u32>) {
        let Some(key) = &self.key else { return };
        let checked = RoundOver::decode(payload).and_then(|over| {
            let me = me.ok_or_else(|| RoundError::Disagrees("this client has no seat".into()))?;
            over.agrees(me, key, &self.scoreboard)?;
            Ok(over.results)
        });
        if self.heard.len() == MAX_ROUNDS_KEPT {
            self.heard.pop_front();
        }
        self.heard.push_back(checked);
    }

    pub(super) fn take(&mut self) -> Option<Result<RoundResults, RoundError>> {
        self.heard.pop_front()
    }
}
