//! A successor's check of the room before it claims (see [Before a claim](crate::migration#before-a-claim-asking-the-room)).
//!
//! [`Check`] is the rule alone: who is asked, what an answer counts for, when the successor
//! may claim and when it asks again. [`ClientCore`](super::ClientCore) moves the frames.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::migration::HostSeen;
use crate::transport::PeerKey;

/// What a successor does next about the host it lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Ask the room (`HOST_CHECK`): a round begins.
    Ask,
    /// A round ended with no claim (the host plays on for most of the room, or nobody
    /// answered): ask again, a new round begins.
    AskAgain,
    /// Wait for answers.
    Wait,
    /// Claim the match.
    Claim,
}

/// One successor's check of the room, over rounds, for the host of one epoch.
#[derive(Clone, Debug)]
pub(super) struct Check {
    epoch: u32,
    /// The fellow peers linked when the host was lost: whom the successor asks.
    room: Vec<PeerKey>,
    /// This round's answers: whether each says the host is alive.
    answers: BTreeMap<PeerKey, bool>,
    /// When this round's time is up, once it began.
    round_end: Option<Duration>,
}

impl Check {
    /// A check about the host of `epoch`, asking `room`.
    pub(super) fn new(epoch: u32, room: Vec<PeerKey>) -> Check {
        Check { epoch, room, answers: BTreeMap::new(), round_end: None }
    }

    /// Whom to ask.
    pub(super) fn room(&self) -> &[PeerKey] {
        &self.room
    }

    /// The epoch asked about.
    pub(super) fn epoch(&self) -> u32 {
        self.epoch
    }

    /// `peer` answered (a later answer in a round replaces an earlier one); `false` when it
    /// was not asked or the answer is about another host.
    pub(super) fn answer(&mut self, peer: PeerKey, seen: HostSeen) -> bool {
        if seen.asked != self.epoch || !self.room.contains(&peer) {
            return false;
        }
        self.answers.insert(peer, seen.alive());
        true
    }

    /// When this round's time is up.
    pub(super) fn round_end(&self) -> Option<Duration> {
        self.round_end
    }

    /// What to do at `now`, rounds lasting `round`: claim once, with this successor's own
    /// view, a strict majority of the room says the host is lost (at once when nobody else is
    /// in the room), or at a round's end when more answers said lost than alive; otherwise
    /// ask, wait, or ask again.
    pub(super) fn step(&mut self, now: Duration, round: Duration) -> Step {
        let n = self.room.len();
        let alive = self.answers.values().filter(|a| **a).count();
        let lost = self.answers.len() - alive;
        if (lost + 1) * 2 > n + 1 {
            return Step::Claim;
        }
        match self.round_end {
            None => {
                self.round_end = Some(now + round);
                Step::Ask
            }
            Some(end) if now >= end => {
                if lost > alive {
                    return Step::Claim;
                }
                self.answers.clear();
                self.round_end = Some(now + round);
                Step::AskAgain
            }
            Some(_) => Step::Wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUND: Duration = Duration::from_millis(200);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn alive() -> HostSeen {
        HostSeen { asked: 3, following: 3, silence_ms: 20 }
    }

    fn lost() -> HostSeen {
        HostSeen { asked: 3, following: 3, silence_ms: 400 }
    }

    fn room(n: u128) -> Vec<PeerKey> {
        (1..=n).map(PeerKey).collect()
    }

    #[test]
    fn nobody_else_in_the_room_means_a_claim_at_once() {
        assert_eq!(Check::new(3, vec![]).step(ms(0), ROUND), Step::Claim);
    }

    #[test]
    fn a_lost_majority_claims_before_the_round_ends() {
        let mut c = Check::new(3, room(3));
        assert_eq!(c.step(ms(0), ROUND), Step::Ask);
        assert!(c.answer(PeerKey(1), lost()));
        assert_eq!(c.step(ms(10), ROUND), Step::Wait, "two of four is no majority");
        assert!(c.answer(PeerKey(2), lost()));
        assert_eq!(c.step(ms(20), ROUND), Step::Claim);
        // With two others, the first to say lost makes two of three.
        let mut c = Check::new(3, room(2));
        assert_eq!(c.step(ms(0), ROUND), Step::Ask);
        assert!(c.answer(PeerKey(2), lost()));
        assert_eq!(c.step(ms(10), ROUND), Step::Claim);
    }

    #[test]
    fn an_alive_majority_holds_the_claim_and_the_room_is_asked_again() {
        let mut c = Check::new(3, room(3));
        assert_eq!(c.step(ms(0), ROUND), Step::Ask);
        c.answer(PeerKey(1), alive());
        c.answer(PeerKey(2), alive());
        c.answer(PeerKey(3), lost());
        assert_eq!(c.step(ms(100), ROUND), Step::Wait);
        assert_eq!(c.step(ms(200), ROUND), Step::AskAgain);
        // The next round counts afresh: the host has died since.
        assert_eq!(c.step(ms(250), ROUND), Step::Wait);
        c.answer(PeerKey(1), lost());
        c.answer(PeerKey(2), lost());
        assert_eq!(c.step(ms(260), ROUND), Step::Claim);
    }

    #[test]
    fn silence_holds_the_claim_but_more_lost_than_alive_at_the_round_end_claims() {
        let mut c = Check::new(3, room(5));
        c.step(ms(0), ROUND);
        assert_eq!(c.step(ms(200), ROUND), Step::AskAgain, "nobody answered: this successor may be the one cut off");
        c.answer(PeerKey(4), lost());
        assert_eq!(c.step(ms(300), ROUND), Step::Wait);
        assert_eq!(c.step(ms(400), ROUND), Step::Claim, "one said lost, nobody alive: the others are gone too");
    }

    #[test]
    fn a_tie_at_the_round_end_asks_again() {
        let mut c = Check::new(3, room(4));
        c.step(ms(0), ROUND);
        c.answer(PeerKey(1), alive());
        c.answer(PeerKey(2), lost());
        assert_eq!(c.step(ms(100), ROUND), Step::Wait);
        assert_eq!(c.step(ms(200), ROUND), Step::AskAgain);
    }

    #[test]
    fn one_liar_can_neither_hold_nor_push_a_claim() {
        // It says lost: the rest, alive, hold the claim.
        let mut c = Check::new(3, room(4));
        c.step(ms(0), ROUND);
        c.answer(PeerKey(1), lost());
        for p in 2..=4 {
            c.answer(PeerKey(p), alive());
        }
        assert_eq!(c.step(ms(200), ROUND), Step::AskAgain);
        // It says alive: the rest, lost, claim.
        let mut c = Check::new(3, room(4));
        c.step(ms(0), ROUND);
        c.answer(PeerKey(1), alive());
        c.answer(PeerKey(2), lost());
        assert_eq!(c.step(ms(1), ROUND), Step::Wait);
        c.answer(PeerKey(3), lost());
        assert_eq!(c.step(ms(2), ROUND), Step::Claim);
    }

    #[test]
    fn answers_from_outside_the_room_or_about_another_host_do_not_count() {
        let mut c = Check::new(3, room(3));
        c.step(ms(0), ROUND);
        assert!(!c.answer(PeerKey(9), lost()));
        assert!(!c.answer(PeerKey(1), HostSeen { asked: 2, following: 2, silence_ms: 900 }));
        assert_eq!(c.step(ms(10), ROUND), Step::Wait);
        assert!(
            c.answer(PeerKey(1), HostSeen { asked: 3, following: 4, silence_ms: 0 }),
            "a newer host: this one is gone"
        );
        assert_eq!(c.step(ms(20), ROUND), Step::Wait, "one of three others with this one is no majority");
        assert!(c.answer(PeerKey(2), lost()));
        assert_eq!(c.step(ms(30), ROUND), Step::Claim);
    }
}
