//! A successor's check of the room before it claims (see [Before a claim](crate::migration#before-a-claim-asking-the-room)).
//!
//! [`Check`] is the rule alone: who is asked, what an answer counts for, when the successor
//! may claim and when it asks again. [`ClientCore`](super::ClientCore) moves the frames.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::migration::{Evidence, HostSeen};
use crate::transport::PeerKey;

/// What a successor does next about the host it lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// Ask the room (`HOST_CHECK`): a round begins.
    Ask,
    /// A round ended with no claim (the host plays on for most of the room, or nobody
    /// answered): ask again, a new round begins.
    AskAgain,
    /// Wait for answers (the room's, or the rendezvous's).
    Wait,
    /// Claim the match, with this evidence.
    Claim(Evidence),
}

/// What the rendezvous said of the lost host's process (its room list,
/// [`RoomInfo::holds`](crate::signal::RoomInfo::holds)), as the client's driver learnt it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Witness {
    /// The host's socket is gone from the room, or has said nothing for
    /// [`MEMBER_GONE_AFTER`](crate::signal::MEMBER_GONE_AFTER): its process is gone, or cut off.
    Gone,
    /// The host's socket is in the room and speaks: its process is there.
    There,
    /// The rendezvous did not answer (or answers without its members).
    Unreachable,
    /// The rendezvous's machine answered that nothing listens there: no process serves it.
    Refused,
}

/// A claim's evidence: `lost` of the `answered` members said the host is lost, and the
/// claimant is one more of each.
fn evidence(lost: usize, answered: usize) -> Evidence {
    let clamp = |n: usize| n.min(usize::from(u8::MAX)) as u8;
    Evidence { lost: clamp(lost + 1), answered: clamp(answered + 1) }
}

/// One successor's check of the room, over rounds, for the host of one epoch.
#[derive(Clone, Debug)]
pub(super) struct Check {
    epoch: u32,
    /// The fellow peers linked when the host was lost: whom the successor asks.
    room: Vec<PeerKey>,
    /// Those of them the host named as voters (they answer the room's check); any other
    /// that answers counts as one too.
    voters: Vec<PeerKey>,
    /// This round's answers: whether each says the host is alive.
    answers: BTreeMap<PeerKey, bool>,
    /// When this round's time is up, once it began.
    round_end: Option<Duration>,
    /// An answer heard within this long says the host is alive.
    alive_within: Duration,
    /// Whether a rendezvous may be asked ([`ClientConfig::witness`](super::ClientConfig::witness)).
    witnessed: bool,
    /// Whether the rendezvous runs in the lost host's own process (its invite said so,
    /// [`Invite::served`](crate::lobby::Invite::served)): then a rendezvous that refuses or
    /// does not answer went with its host, which is evidence, not silence.
    served: bool,
    /// What the rendezvous said last, since the host was lost.
    witness: Option<Witness>,
    /// Whether a round ended with no answer saying the host plays on: the room is silent
    /// (or says lost), and the rendezvous's word may decide.
    quiet: bool,
}

impl Check {
    /// A check about the host of `epoch`, asking `room`; an answer says the host is alive
    /// when it heard the host within `alive_within`; `witnessed` when a rendezvous may be asked.
    pub(super) fn new(epoch: u32, room: Vec<PeerKey>, alive_within: Duration, witnessed: bool) -> Check {
        let voters = room.clone();
        Check {
            epoch,
            room,
            voters,
            answers: BTreeMap::new(),
            round_end: None,
            alive_within,
            witnessed,
            served: false,
            witness: None,
            quiet: false,
        }
    }

    /// As [`Check::new`], for a host whose own process serves the rendezvous asked: its
    /// refusal, or its silence, says the host is gone as the room list of a rendezvous apart
    /// does when the host's socket left it.
    pub(super) fn served_by_host(mut self, served: bool) -> Check {
        self.served = served;
        self
    }

    /// What the rendezvous's word says of the host: gone, as a rendezvous apart says it when
    /// the host's socket left the room, or as the host's own rendezvous says it by going.
    fn says_gone(&self) -> bool {
        match self.witness {
            Some(Witness::Gone) => true,
            Some(Witness::Refused | Witness::Unreachable) => self.served,
            Some(Witness::There) | None => false,
        }
    }

    /// As [`Check::new`], with only `voters` of the `room` counted until they answer: a
    /// peer the host's last list did not name (one of another make that never answers, or
    /// a newcomer the list has not caught up with) is asked too, and counts once it answers.
    pub(super) fn with_voters(mut self, voters: Vec<PeerKey>) -> Check {
        self.voters = voters.into_iter().filter(|p| self.room.contains(p)).collect();
        self
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
        self.answers.insert(peer, seen.alive_within(self.alive_within));
        true
    }

    /// Whether the rendezvous is worth asking now: one may be, and its word would decide.
    pub(super) fn wants_witness(&self) -> bool {
        self.witnessed && !self.says_gone()
    }

    /// What the rendezvous said.
    pub(super) fn witness(&mut self, witness: Witness) {
        if self.witnessed {
            self.witness = Some(witness);
        }
    }

    /// When this round's time is up.
    pub(super) fn round_end(&self) -> Option<Duration> {
        self.round_end
    }

    /// What to do at `now`, rounds lasting `round`:
    ///
    /// - claim once, with this successor's own view, a strict majority of the room (its
    ///   voters, and whoever else answered) says the host is lost;
    /// - claim once the rendezvous says the host's process is gone and no answer of this
    ///   round says it plays on, when nobody else is in the room or a round ended with no
    ///   answer saying so (a silent room): a room that may still answer is heard first, as
    ///   the rendezvous hears only the host's signalling, which a lossy line stalls. A
    ///   rendezvous that runs in the host's own process says so by refusing the question
    ///   (its machine answers that nothing listens: the process died) or by not answering it
    ///   (the host's whole line went quiet), as a rendezvous apart does by the host's socket
    ///   leaving its room or going silent;
    /// - with nobody else in the room and no rendezvous to ask, claim at once;
    /// - at a round's end, claim when more answers said lost than alive (a majority of those
    ///   who answered);
    /// - otherwise ask, wait, or ask again: while the host plays on for most of the room, and
    ///   while nobody answers and the rendezvous has not said the host is gone (a successor
    ///   whose own links all died, or alone with a host that only hiccuped, would otherwise
    ///   host a match beside the real one).
    pub(super) fn step(&mut self, now: Duration, round: Duration) -> Step {
        let unnamed = self.answers.keys().filter(|p| !self.voters.contains(p)).count();
        let n = self.voters.len() + unnamed;
        let alive = self.answers.values().filter(|a| **a).count();
        let lost = self.answers.len() - alive;
        if n > 0 && (lost + 1) * 2 > n + 1 {
            return Step::Claim(evidence(lost, self.answers.len()));
        }
        let gone = alive == 0 && self.says_gone();
        if gone && (n == 0 || self.quiet) {
            return Step::Claim(evidence(lost, self.answers.len()));
        }
        if n == 0 && !self.witnessed {
            return Step::Claim(evidence(0, 0));
        }
        match self.round_end {
            None => {
                self.round_end = Some(now + round);
                Step::Ask
            }
            Some(end) if now >= end => {
                if lost > alive || gone {
                    return Step::Claim(evidence(lost, self.answers.len()));
                }
                self.quiet = alive == 0;
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

    fn new(epoch: u32, room: Vec<PeerKey>) -> Check {
        Check::new(epoch, room, crate::migration::ALIVE_WITHIN, false)
    }

    fn claims(step: Step) -> bool {
        matches!(step, Step::Claim(_))
    }

    const CLAIM: Step = Step::Claim(Evidence { lost: 0, answered: 0 });

    /// A step with its evidence left out.
    fn s(step: Step) -> Step {
        if claims(step) { CLAIM } else { step }
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
        assert!(claims(new(3, vec![]).step(ms(0), ROUND)));
    }

    #[test]
    fn a_lost_majority_claims_before_the_round_ends() {
        let mut c = new(3, room(3));
        assert_eq!(s(c.step(ms(0), ROUND)), Step::Ask);
        assert!(c.answer(PeerKey(1), lost()));
        assert_eq!(s(c.step(ms(10), ROUND)), Step::Wait, "two of four is no majority");
        assert!(c.answer(PeerKey(2), lost()));
        assert_eq!(s(c.step(ms(20), ROUND)), CLAIM);
        // With two others, the first to say lost makes two of three.
        let mut c = new(3, room(2));
        assert_eq!(s(c.step(ms(0), ROUND)), Step::Ask);
        assert!(c.answer(PeerKey(2), lost()));
        assert_eq!(s(c.step(ms(10), ROUND)), CLAIM);
    }

    #[test]
    fn an_alive_majority_holds_the_claim_and_the_room_is_asked_again() {
        let mut c = new(3, room(3));
        assert_eq!(s(c.step(ms(0), ROUND)), Step::Ask);
        c.answer(PeerKey(1), alive());
        c.answer(PeerKey(2), alive());
        c.answer(PeerKey(3), lost());
        assert_eq!(s(c.step(ms(100), ROUND)), Step::Wait);
        assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain);
        // The next round counts afresh: the host has died since.
        assert_eq!(s(c.step(ms(250), ROUND)), Step::Wait);
        c.answer(PeerKey(1), lost());
        c.answer(PeerKey(2), lost());
        assert_eq!(s(c.step(ms(260), ROUND)), CLAIM);
    }

    #[test]
    fn silence_holds_the_claim_but_more_lost_than_alive_at_the_round_end_claims() {
        let mut c = new(3, room(5));
        c.step(ms(0), ROUND);
        assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain, "nobody answered: this successor may be the one cut off");
        c.answer(PeerKey(4), lost());
        assert_eq!(s(c.step(ms(300), ROUND)), Step::Wait);
        assert_eq!(s(c.step(ms(400), ROUND)), CLAIM, "one said lost, nobody alive: the others are gone too");
    }

    #[test]
    fn alone_with_a_rendezvous_the_successor_claims_only_once_it_says_the_host_is_gone() {
        let mut c = Check::new(3, vec![], crate::migration::ALIVE_WITHIN, true);
        assert!(c.wants_witness());
        assert_eq!(
            s(c.step(ms(0), ROUND)),
            Step::Ask,
            "alone, with a rendezvous to ask: no claim at the first silence"
        );
        c.witness(Witness::Unreachable);
        assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain, "cut off from the rendezvous too: it holds");
        c.witness(Witness::There);
        assert_eq!(s(c.step(ms(400), ROUND)), Step::AskAgain, "the host's process is there: a hiccup");
        assert!(c.wants_witness());
        c.witness(Witness::Gone);
        assert_eq!(c.step(ms(410), ROUND), Step::Claim(Evidence { lost: 1, answered: 1 }));
        assert!(!c.wants_witness(), "nothing more to ask");
    }

    #[test]
    fn a_rendezvous_in_the_host_s_process_that_refuses_or_is_silent_says_the_host_is_gone() {
        for (went, how) in [(Witness::Refused, "its machine says nothing listens"), (Witness::Unreachable, "silent")] {
            // Alone with a host whose process served the room.
            let mut c = Check::new(3, vec![], crate::migration::ALIVE_WITHIN, true).served_by_host(true);
            assert_eq!(s(c.step(ms(0), ROUND)), Step::Ask, "{how}");
            c.witness(Witness::There);
            assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain, "{how}: it answers, the host is there");
            c.witness(went);
            assert_eq!(c.step(ms(210), ROUND), Step::Claim(Evidence { lost: 1, answered: 1 }), "{how}");
            assert!(!c.wants_witness(), "{how}: nothing more to ask");
            // A rendezvous apart that refuses or is silent says nothing of the host.
            let mut c = Check::new(3, vec![], crate::migration::ALIVE_WITHIN, true);
            c.step(ms(0), ROUND);
            c.witness(went);
            assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain, "{how}, a rendezvous apart: it holds");
            assert!(c.wants_witness(), "{how}");
            // And a room that hears the host holds the claim whatever its rendezvous did.
            let mut c = Check::new(3, room(1), crate::migration::ALIVE_WITHIN, true).served_by_host(true);
            c.step(ms(0), ROUND);
            c.witness(went);
            c.answer(PeerKey(1), alive());
            assert_eq!(s(c.step(ms(10), ROUND)), Step::Wait, "{how}");
            assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain, "{how}");
        }
    }

    #[test]
    fn the_rendezvous_decides_a_silent_room_but_not_against_a_peer_that_hears_the_host() {
        // A silent room (a voter whose link to this successor died): the rendezvous decides.
        let mut c = Check::new(3, room(2), crate::migration::ALIVE_WITHIN, true);
        c.step(ms(0), ROUND);
        assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain);
        c.witness(Witness::Gone);
        assert_eq!(c.step(ms(210), ROUND), Step::Claim(Evidence { lost: 1, answered: 1 }));
        // A peer that hears the host holds the claim, whatever the rendezvous says.
        let mut c = Check::new(3, room(2), crate::migration::ALIVE_WITHIN, true);
        c.step(ms(0), ROUND);
        c.answer(PeerKey(1), alive());
        c.witness(Witness::Gone);
        assert_eq!(s(c.step(ms(10), ROUND)), Step::Wait);
        assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain);
        // Next round the room may answer again: it is heard out first.
        assert_eq!(s(c.step(ms(210), ROUND)), Step::Wait);
        // It was silent all round: the rendezvous's word stands.
        assert_eq!(s(c.step(ms(400), ROUND)), CLAIM);
    }

    #[test]
    fn a_room_that_may_still_answer_is_heard_before_the_rendezvous() {
        // The rendezvous says gone before the room's answers could come (its word rests on
        // the host's signalling socket, which a lossy line stalls): no claim yet.
        let mut c = Check::new(3, room(2), crate::migration::ALIVE_WITHIN, true);
        assert_eq!(s(c.step(ms(0), ROUND)), Step::Ask);
        c.witness(Witness::Gone);
        assert_eq!(s(c.step(ms(1), ROUND)), Step::Wait, "the room has not had time to answer");
        // The room hears the host: it played on.
        c.answer(PeerKey(1), alive());
        c.answer(PeerKey(2), alive());
        assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain);
        // Had the room said nothing all round, the rendezvous would decide at its end.
        let mut c = Check::new(3, room(2), crate::migration::ALIVE_WITHIN, true);
        c.step(ms(0), ROUND);
        c.witness(Witness::Gone);
        assert_eq!(s(c.step(ms(199), ROUND)), Step::Wait);
        assert_eq!(c.step(ms(200), ROUND), Step::Claim(Evidence { lost: 1, answered: 1 }));
        // One answer of lost with the rendezvous's gone is no majority of three, but the
        // round's end with nobody saying alive claims.
        let mut c = Check::new(3, room(3), crate::migration::ALIVE_WITHIN, true);
        c.step(ms(0), ROUND);
        c.witness(Witness::Gone);
        c.answer(PeerKey(1), lost());
        assert_eq!(s(c.step(ms(50), ROUND)), Step::Wait);
        assert_eq!(c.step(ms(200), ROUND), Step::Claim(Evidence { lost: 2, answered: 2 }));
    }

    #[test]
    fn an_answer_counts_as_alive_within_the_successor_s_own_measure() {
        let mut c = Check::new(3, room(2), Duration::from_millis(250), false);
        c.step(ms(0), ROUND);
        c.answer(PeerKey(1), HostSeen { asked: 3, following: 3, silence_ms: 180 });
        c.answer(PeerKey(2), HostSeen { asked: 3, following: 3, silence_ms: 180 });
        assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain, "180 ms is a lossy line's gap, not a crash, at 250");
    }

    #[test]
    fn a_peer_the_list_does_not_name_is_asked_and_counts_once_it_answers() {
        // Nobody named: alone by the list, but a newcomer is linked and answers.
        let mut c = Check::new(3, room(1), crate::migration::ALIVE_WITHIN, true).with_voters(vec![]);
        assert_eq!(s(c.step(ms(0), ROUND)), Step::Ask, "it is asked");
        assert!(c.answer(PeerKey(1), lost()));
        assert_eq!(c.step(ms(10), ROUND), Step::Claim(Evidence { lost: 2, answered: 2 }));
        // One that never answers holds nothing: with no rendezvous, alone by the list, at once.
        let mut c = new(3, room(1)).with_voters(vec![]);
        assert!(claims(c.step(ms(0), ROUND)));
        // A named voter that is silent still counts.
        let mut c = new(3, room(2)).with_voters(vec![PeerKey(2)]);
        assert_eq!(s(c.step(ms(0), ROUND)), Step::Ask);
        assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain, "the voter said nothing");
    }

    #[test]
    fn a_tie_at_the_round_end_asks_again() {
        let mut c = new(3, room(4));
        c.step(ms(0), ROUND);
        c.answer(PeerKey(1), alive());
        c.answer(PeerKey(2), lost());
        assert_eq!(s(c.step(ms(100), ROUND)), Step::Wait);
        assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain);
    }

    #[test]
    fn one_liar_can_neither_hold_nor_push_a_claim() {
        // It says lost: the rest, alive, hold the claim.
        let mut c = new(3, room(4));
        c.step(ms(0), ROUND);
        c.answer(PeerKey(1), lost());
        for p in 2..=4 {
            c.answer(PeerKey(p), alive());
        }
        assert_eq!(s(c.step(ms(200), ROUND)), Step::AskAgain);
        // It says alive: the rest, lost, claim.
        let mut c = new(3, room(4));
        c.step(ms(0), ROUND);
        c.answer(PeerKey(1), alive());
        c.answer(PeerKey(2), lost());
        assert_eq!(s(c.step(ms(1), ROUND)), Step::Wait);
        c.answer(PeerKey(3), lost());
        assert_eq!(s(c.step(ms(2), ROUND)), CLAIM);
    }

    #[test]
    fn answers_from_outside_the_room_or_about_another_host_do_not_count() {
        let mut c = new(3, room(3));
        c.step(ms(0), ROUND);
        assert!(!c.answer(PeerKey(9), lost()));
        assert!(!c.answer(PeerKey(1), HostSeen { asked: 2, following: 2, silence_ms: 900 }));
        assert_eq!(s(c.step(ms(10), ROUND)), Step::Wait);
        assert!(
            c.answer(PeerKey(1), HostSeen { asked: 3, following: 4, silence_ms: 0 }),
            "a newer host: this one is gone"
        );
        assert_eq!(s(c.step(ms(20), ROUND)), Step::Wait, "one of three others with this one is no majority");
        assert!(c.answer(PeerKey(2), lost()));
        assert_eq!(s(c.step(ms(30), ROUND)), CLAIM);
    }
}
