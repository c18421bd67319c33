//! A client's `@changeHost` votes (see [the vote](crate::migration#the-changehost-vote)): the
//! vote open, the votes it called, and the ballots that came ahead of their vote.

use std::collections::BTreeMap;
use std::time::Duration;

use super::host_vote::{Outcome, Tally};
use crate::migration::{HostBallot, HostVote, StepDown};
use crate::transport::PeerKey;

/// How many ballots that came ahead of their `@changeHost` vote a client keeps (one per voter).
pub const MAX_EARLY_BALLOTS: usize = 64;

/// The `@changeHost` votes as one client takes part in them: at most one open, counted by its
/// [`Tally`]. Who may call or take a vote (a welcomed client that follows its host) and the
/// frames are [`ClientCore`](super::ClientCore)'s (`client/change_host.rs`).
#[derive(Debug, Default)]
pub(super) struct Votes {
    /// The vote open, if any.
    open: Option<Tally>,
    /// The votes this client called: each call's id is made from the count.
    called: u32,
    /// Ballots that came before their vote, by voter.
    early: BTreeMap<PeerKey, HostBallot>,
}

impl Votes {
    /// The vote open, if any.
    pub(super) fn open(&self) -> Option<&Tally> {
        self.open.as_ref()
    }

    /// When the open vote's time is up.
    pub(super) fn until(&self) -> Option<Duration> {
        self.open.as_ref().map(Tally::until)
    }

    /// `me` calls a vote against the host of `epoch` among `electorate` at `now`, voting yes:
    /// the vote to send the fellows. `None`, and nothing changes, when `me` may not vote.
    pub(super) fn call(&mut self, me: PeerKey, epoch: u32, electorate: &[PeerKey], now: Duration) -> Option<HostVote> {
        let id = HostVote::id_for(me, self.called.wrapping_add(1));
        let vote = HostVote { epoch, caller: me, id };
        let tally = Tally::new(vote, electorate, now)?;
        self.called = self.called.wrapping_add(1);
        self.open = Some(tally);
        Some(vote)
    }

    /// Opens a fellow's `vote` among `electorate` at `now`, with no vote open: the ballots
    /// that came ahead of it are counted, the others dropped. `false`, and nothing changes,
    /// when its caller may not vote.
    pub(super) fn take(&mut self, vote: HostVote, electorate: &[PeerKey], now: Duration) -> bool {
        let Some(mut tally) = Tally::new(vote, electorate, now) else { return false };
        for (voter, ballot) in std::mem::take(&mut self.early) {
            if ballot.id == vote.id {
                tally.answer(voter, ballot.yes);
            }
        }
        self.open = Some(tally);
        true
    }

    /// `me` answers the open vote (a second answer replaces the first): the ballot to send
    /// the fellows. `None` with no vote open, or when `me` may not vote.
    pub(super) fn answer(&mut self, me: PeerKey, yes: bool) -> Option<HostBallot> {
        let tally = self.open.as_mut()?;
        tally.answer(me, yes).then_some(HostBallot { id: tally.vote.id, yes })
    }

    /// A fellow's ballot: counted in the open vote of its id, or, with no vote open, kept for
    /// its vote (which came the longer way round; at most [`MAX_EARLY_BALLOTS`] voters).
    /// `false` when refused: another vote is open, or the voter may not vote in it.
    pub(super) fn ballot(&mut self, peer: PeerKey, ballot: HostBallot) -> bool {
        match self.open.as_mut() {
            Some(tally) if tally.vote.id == ballot.id => tally.answer(peer, ballot.yes),
            Some(_) => false,
            None => {
                if self.early.len() < MAX_EARLY_BALLOTS || self.early.contains_key(&peer) {
                    self.early.insert(peer, ballot);
                }
                true
            }
        }
    }

    /// Where the open vote stands at `now`, the host followed being of `epoch`: it closes when
    /// it failed, its time is up or the host changed; once passed, the `STEP_DOWN` for the
    /// host until [`Self::step_down_sent`] says it went.
    pub(super) fn settle(&mut self, epoch: u32, now: Duration) -> Option<StepDown> {
        let tally = self.open.as_mut()?;
        if tally.vote.epoch != epoch || tally.expired(now) {
            self.open = None;
            self.early.clear();
            return None;
        }
        match tally.outcome(now) {
            Outcome::Open => None,
            Outcome::Failed => {
                self.open = None;
                None
            }
            Outcome::Passed => (!tally.step_down_sent).then(|| tally.step_down()),
        }
    }

    /// The host was asked to step down for the open vote: it is asked once.
    pub(super) fn step_down_sent(&mut self) {
        if let Some(tally) = self.open.as_mut() {
            tally.step_down_sent = true;
        }
    }

    /// The open vote is over (the host it was about is no longer followed).
    pub(super) fn close(&mut self) {
        self.open = None;
    }

    /// The open vote and the ballots kept for one are over (dialing the match again).
    pub(super) fn clear(&mut self) {
        self.open = None;
        self.early.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migration::HOST_VOTE_TIME;

    fn peers(n: u128) -> Vec<PeerKey> {
        (1..=n).map(PeerKey).collect()
    }

    #[test]
    fn a_call_opens_a_vote_with_the_caller_s_yes_and_each_call_has_its_own_id() {
        let mut votes = Votes::default();
        assert_eq!(votes.call(PeerKey(9), 1, &peers(3), Duration::ZERO), None, "not in the electorate");
        let first = votes.call(PeerKey(1), 1, &peers(3), Duration::ZERO).expect("a voter calls");
        assert_eq!((first.caller, first.epoch), (PeerKey(1), 1));
        assert_eq!(first.id, HostVote::id_for(PeerKey(1), 1), "an outsider's call counted no call");
        let view = votes.open().expect("open").view(Some(PeerKey(1)), Duration::ZERO);
        assert_eq!((view.yes, view.no, view.answer), (1, 0, Some(true)));
        assert_eq!(votes.until(), Some(HOST_VOTE_TIME));
        votes.close();
        let second = votes.call(PeerKey(1), 1, &peers(3), Duration::ZERO).expect("a voter calls");
        assert_ne!(second.id, first.id);
    }

    #[test]
    fn ballots_ahead_of_their_vote_are_kept_and_counted_when_it_comes() {
        let vote = HostVote { epoch: 1, caller: PeerKey(1), id: 5 };
        let mut votes = Votes::default();
        assert!(votes.ballot(PeerKey(2), HostBallot { id: 5, yes: false }));
        assert!(votes.ballot(PeerKey(2), HostBallot { id: 5, yes: true }), "a later ballot replaces it");
        assert!(votes.ballot(PeerKey(3), HostBallot { id: 6, yes: true }), "kept, of another vote");
        for p in 10..10 + MAX_EARLY_BALLOTS as u128 {
            votes.ballot(PeerKey(p), HostBallot { id: 5, yes: false });
        }
        assert!(votes.take(vote, &peers(4), Duration::ZERO));
        let view = votes.open().expect("open").view(None, Duration::ZERO);
        assert_eq!((view.yes, view.no), (2, 0), "the caller and peer 2: the rest were past the limit or elsewhere");
        assert_eq!(votes.settle(1, Duration::ZERO), None, "2 of 4: peer 3's ballot was for another vote");
        assert!(!votes.ballot(PeerKey(3), HostBallot { id: 6, yes: true }), "another vote is open");
        assert!(!votes.ballot(PeerKey(8), HostBallot { id: 5, yes: true }), "outside the electorate");
        assert!(votes.ballot(PeerKey(3), HostBallot { id: 5, yes: false }));
        let mut outsider = Votes::default();
        assert!(!outsider.take(HostVote { epoch: 1, caller: PeerKey(7), id: 5 }, &peers(4), Duration::ZERO));
        assert!(outsider.open().is_none());
    }

    #[test]
    fn a_strict_majority_asks_the_host_to_step_down_once() {
        let mut votes = Votes::default();
        votes.call(PeerKey(1), 1, &peers(4), Duration::ZERO).expect("a voter calls");
        let vote = votes.open().expect("open").vote;
        assert!(votes.ballot(PeerKey(2), HostBallot { id: vote.id, yes: true }));
        assert_eq!(votes.settle(1, Duration::ZERO), None, "2 of 4 is no strict majority");
        assert!(votes.ballot(PeerKey(3), HostBallot { id: vote.id, yes: true }));
        let asked = StepDown { id: vote.id, yes: 3, electorate: 4 };
        assert_eq!(votes.settle(1, Duration::ZERO), Some(asked));
        assert_eq!(votes.settle(1, Duration::ZERO), Some(asked), "asked again until it went");
        votes.step_down_sent();
        assert_eq!(votes.settle(1, Duration::ZERO), None);
        assert!(votes.open().is_some(), "a passed vote stays open until its time is up");
        assert_eq!(votes.answer(PeerKey(4), false), Some(HostBallot { id: vote.id, yes: false }));
        assert_eq!(votes.answer(PeerKey(8), true), None, "outside the electorate");
    }

    #[test]
    fn a_vote_closes_when_it_fails_its_time_is_up_or_the_host_changed() {
        let mut votes = Votes::default();
        let id = votes.call(PeerKey(1), 1, &peers(3), Duration::ZERO).expect("a voter calls").id;
        votes.ballot(PeerKey(2), HostBallot { id, yes: false });
        votes.answer(PeerKey(1), false);
        assert_eq!(votes.settle(1, Duration::ZERO), None);
        assert!(votes.open().is_none(), "two no of three: failed");
        for (epoch, at) in [(2, Duration::ZERO), (1, HOST_VOTE_TIME)] {
            let mut votes = Votes::default();
            votes.call(PeerKey(1), 1, &peers(3), Duration::ZERO).expect("a voter calls");
            assert_eq!(votes.settle(epoch, at), None);
            assert!(votes.open().is_none() && votes.until().is_none(), "epoch {epoch} at {at:?}");
        }
        assert_eq!(votes.answer(PeerKey(1), true), None, "no vote open");
    }
}
