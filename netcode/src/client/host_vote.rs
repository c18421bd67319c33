//! The client's count of a `@changeHost` vote (see [the vote](crate::migration#the-changehost-vote)).
//!
//! [`Tally`] is the rule alone: who may vote, what a ballot changes, when the vote has
//! passed or failed. [`Client`](super::Client) moves the frames in and out.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::migration::{HOST_VOTE_TIME, HostVote, StepDown};
use crate::transport::PeerKey;

/// A `@changeHost` vote as a client sees it, for the window that shows the
/// [`CHANGE_HOST_VOTE`](crate::migration::CHANGE_HOST_VOTE) dialog.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostVoteView {
    /// The vote's id.
    pub id: u32,
    /// Who called it.
    pub caller: PeerKey,
    /// Yes votes counted (the caller's included).
    pub yes: usize,
    /// No votes counted.
    pub no: usize,
    /// How many may vote.
    pub electorate: usize,
    /// Time left to answer.
    pub remaining: Duration,
    /// This client's own answer, once given (the caller's is yes).
    pub answer: Option<bool>,
    /// Whether the yes votes are a majority already (the host is being asked to step down).
    pub passed: bool,
}

/// Where a vote stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Still open.
    Open,
    /// A strict majority said yes.
    Passed,
    /// A strict yes majority cannot come any more, or the time is up.
    Failed,
}

/// One vote's count (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct Tally {
    pub(super) vote: HostVote,
    until: Duration,
    electorate: Vec<PeerKey>,
    answers: BTreeMap<PeerKey, bool>,
    /// Whether this client asked the host to step down already.
    pub(super) step_down_sent: bool,
}

impl Tally {
    /// A vote arriving (or called) at `now` among `electorate`: `None` when the caller may
    /// not call it (it is not in the electorate). The caller votes yes.
    pub(super) fn new(vote: HostVote, electorate: &[PeerKey], now: Duration) -> Option<Tally> {
        if !electorate.contains(&vote.caller) {
            return None;
        }
        let answers = BTreeMap::from([(vote.caller, true)]);
        Some(Tally {
            vote,
            until: now + HOST_VOTE_TIME,
            electorate: electorate.to_vec(),
            answers,
            step_down_sent: false,
        })
    }

    /// Whether `peer` may vote.
    pub(super) fn may_vote(&self, peer: PeerKey) -> bool {
        self.electorate.contains(&peer)
    }

    /// `voter` answers (a later answer replaces an earlier one); `false` when it may not vote.
    pub(super) fn answer(&mut self, voter: PeerKey, yes: bool) -> bool {
        if !self.may_vote(voter) {
            return false;
        }
        self.answers.insert(voter, yes);
        true
    }

    fn counts(&self) -> (usize, usize) {
        let yes = self.answers.values().filter(|y| **y).count();
        (yes, self.answers.len() - yes)
    }

    /// Where the vote stands at `now`.
    pub(super) fn outcome(&self, now: Duration) -> Outcome {
        let (yes, no) = self.counts();
        let n = self.electorate.len();
        if yes * 2 > n {
            Outcome::Passed
        } else if no * 2 >= n || now >= self.until {
            Outcome::Failed
        } else {
            Outcome::Open
        }
    }

    /// When its time is up.
    pub(super) fn until(&self) -> Duration {
        self.until
    }

    /// Whether the vote is over at `now` (its time is up).
    pub(super) fn expired(&self, now: Duration) -> bool {
        now >= self.until
    }

    /// The `STEP_DOWN` payload for the host.
    pub(super) fn step_down(&self) -> StepDown {
        let clamp = |n: usize| n.min(u16::MAX as usize) as u16;
        let (yes, _) = self.counts();
        StepDown { id: self.vote.id, yes: clamp(yes), electorate: clamp(self.electorate.len()) }
    }

    /// The vote for a window, as `me` sees it at `now`.
    pub(super) fn view(&self, me: Option<PeerKey>, now: Duration) -> HostVoteView {
        let (yes, no) = self.counts();
        HostVoteView {
            id: self.vote.id,
            caller: self.vote.caller,
            yes,
            no,
            electorate: self.electorate.len(),
            remaining: self.until.saturating_sub(now),
            answer: me.and_then(|me| self.answers.get(&me).copied()),
            passed: self.outcome(now) == Outcome::Passed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(caller: u128) -> HostVote {
        HostVote { epoch: 1, caller: PeerKey(caller), id: 9 }
    }

    #[test]
    fn a_strict_majority_of_the_electorate_passes_it() {
        let electorate = [PeerKey(1), PeerKey(2), PeerKey(3)];
        let mut t = Tally::new(vote(2), &electorate, Duration::ZERO).expect("a voter calls");
        assert_eq!(t.outcome(Duration::ZERO), Outcome::Open, "1 of 3");
        assert!(!t.answer(PeerKey(7), true), "not in the electorate");
        assert!(t.answer(PeerKey(3), true));
        assert_eq!(t.outcome(Duration::ZERO), Outcome::Passed, "2 of 3");
        assert_eq!(t.step_down(), StepDown { id: 9, yes: 2, electorate: 3 });
        let v = t.view(Some(PeerKey(1)), Duration::from_secs(5));
        assert_eq!((v.yes, v.no, v.electorate, v.answer, v.passed), (2, 0, 3, None, true));
        assert_eq!(v.remaining, Duration::from_secs(10));
        // A changed answer replaces the first one.
        assert!(t.answer(PeerKey(3), false));
        assert_eq!(t.outcome(Duration::ZERO), Outcome::Open);
    }

    #[test]
    fn it_fails_once_no_strict_majority_can_come_or_its_time_is_up() {
        let electorate = [PeerKey(1), PeerKey(2), PeerKey(3), PeerKey(4)];
        assert!(Tally::new(vote(5), &electorate, Duration::ZERO).is_none(), "an outsider may not call it");
        let mut t = Tally::new(vote(1), &electorate, Duration::ZERO).expect("a voter calls");
        t.answer(PeerKey(2), true);
        assert_eq!(t.outcome(Duration::ZERO), Outcome::Open, "2 of 4 is no strict majority");
        t.answer(PeerKey(3), false);
        t.answer(PeerKey(4), false);
        assert_eq!(t.outcome(Duration::ZERO), Outcome::Failed, "2 no of 4: 3 yes cannot come");
        let t = Tally::new(vote(1), &electorate, Duration::ZERO).expect("a voter calls");
        assert_eq!(t.outcome(HOST_VOTE_TIME - Duration::from_millis(1)), Outcome::Open);
        assert_eq!(t.outcome(HOST_VOTE_TIME), Outcome::Failed);
        assert!(t.expired(HOST_VOTE_TIME));
        let alone = Tally::new(vote(1), &[PeerKey(1)], Duration::ZERO).expect("a voter calls");
        assert_eq!(alone.outcome(Duration::ZERO), Outcome::Passed, "the only voter calls it and it passes");
    }
}
