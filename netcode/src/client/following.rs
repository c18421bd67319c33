//! Whom a client follows and who comes after: the followed host's epoch and rank, its
//! succession list, the claims heard, the host lost and the host change under way, and what
//! fellows said of their turns and hellos (see [Losing the host](crate::client#losing-the-host)).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::takeover::Lost;
use crate::frame::Channel;
use crate::migration::{Claim, MIN_CHECK_INTERVAL, RIVAL_WINDOW, Succession};
use crate::session::Hello;
use crate::transport::PeerKey;

/// A hello said ahead to a successor is answered by its new host if it came within this
/// before the takeover (it is said again every [`HELLO_REPEAT`](crate::session::HELLO_REPEAT)
/// while unanswered).
pub const HELLO_AHEAD_FRESH: Duration = Duration::from_secs(3);

/// The largest hello kept to be answered at a takeover, bytes (one is a few hundred).
pub const MAX_HELLO_AHEAD: usize = 4096;

/// A host change in progress, until the new host's first snapshot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Resuming {
    /// When the host was counted lost.
    pub(super) lost_at: Duration,
    /// When the lost host was last heard.
    pub(super) heard_at: Duration,
    /// The newest match time the lost host showed, ms.
    pub(super) last_time_ms: Option<f64>,
}

/// The host followed as a place in the succession (its epoch and rank) and what comes after
/// it: the list of its successors, the claims heard and how they rank against it, the host
/// once lost (whose turn it is to take over), the host change under way until the new host's
/// first snapshot. The session with the host is [`HostLink`](super::host_link::HostLink)'s;
/// the takeover's steps, which need both, are [`ClientCore`](super::ClientCore)'s
/// (`client/takeover.rs`).
#[derive(Debug, Default)]
pub(super) struct Following {
    /// The followed host's (epoch, rank): its claim's, or (welcome epoch, 0) for the first host.
    pub(super) host: (u32, u8),
    /// The host's newest succession list, once published.
    pub(super) succession: Option<Succession>,
    /// A followed host that claimed the match, its key, and until when a rival of the same
    /// epoch and rank with a lower key goes before it ([`Claim::precedes`], within
    /// [`RIVAL_WINDOW`] of the claim, as the hosts reckon it).
    rival_until: Option<(PeerKey, Duration)>,
    /// The last claim heard, and from whom: a new host sends its claim on both channels, and
    /// the second copy is not a second claim.
    claim_heard: Option<(PeerKey, Claim)>,
    /// The host lost, while nobody has been followed since.
    pub(super) lost: Option<Lost>,
    /// The host change under way, until the new host's first snapshot.
    pub(super) resuming: Option<Resuming>,
    /// The tick the host change in progress continues from (its claim's, else its welcome's).
    pub(super) resume_tick: Option<u32>,
    /// Successors of the host followed that said they keep no shadow of it (their
    /// `HOST_CHECK`s passed), by the epoch they said it of: they give their turns up.
    passed: BTreeMap<PeerKey, u32>,
    /// The peer whose claim this client refused because its list did not name it: said hello
    /// to once the host is lost (see `dial_unlisted_claimer`).
    pub(super) unlisted_claimer: Option<PeerKey>,
    /// When this client last answered each peer's `HOST_CHECK`.
    checks_answered: BTreeMap<PeerKey, Duration>,
    /// The newest hello with a token each fellow said to this client, and when (see
    /// [`Handover::hellos`](super::Handover::hellos)).
    hellos_ahead: BTreeMap<PeerKey, (Duration, Channel, Vec<u8>)>,
}

impl Following {
    /// The followed host's epoch.
    pub(super) fn epoch(&self) -> u32 {
        self.host.0
    }

    /// The followed host's rank in the list it succeeded by (0 for the first host).
    pub(super) fn rank(&self) -> u8 {
        self.host.1
    }

    /// A host's succession list: kept if it is of the host followed or a later one.
    pub(super) fn take_succession(&mut self, list: Succession) {
        if list.epoch >= self.epoch() {
            self.succession = Some(list);
        }
    }

    /// The electorate of a `@changeHost` vote: the followed host's succession list.
    pub(super) fn electorate(&self) -> Option<Vec<PeerKey>> {
        self.succession.as_ref().filter(|s| s.epoch == self.epoch()).map(|s| s.peers.clone())
    }

    /// Whether `peer` answers the room's check ([`Succession::voters`]): every peer when the
    /// list names no voters.
    pub(super) fn is_voter(&self, peer: PeerKey) -> bool {
        self.succession.as_ref().and_then(|s| s.voters.as_ref()).is_none_or(|v| v.contains(&peer))
    }

    /// Whether `peer` may take the match over: a successor of the lost host's list, or, with
    /// no host lost, of the host's newest.
    pub(super) fn listed(&self, peer: PeerKey) -> bool {
        match &self.lost {
            Some(l) => l.successors.contains(&peer),
            None => self.succession.as_ref().is_some_and(|s| s.peers.contains(&peer)),
        }
    }

    /// `peer`'s `claim`, heard: `true` when it is the other copy of the claim heard last (it
    /// comes on both channels).
    pub(super) fn heard_before(&mut self, peer: PeerKey, claim: Claim) -> bool {
        self.claim_heard.replace((peer, claim)) == Some((peer, claim))
    }

    /// Whether `peer`'s `claim` at `now` goes before the host followed: a later epoch, or the
    /// same epoch and a better rank ([`Claim::beats`]); or a rival of a claimer followed, at
    /// its epoch and rank, that holds the room and whose key goes first within
    /// [`RIVAL_WINDOW`] of the claim followed ([`Claim::precedes`]): the two went by
    /// different lists, and the followed host steps down to it.
    pub(super) fn beaten_by(&self, peer: PeerKey, claim: Claim, now: Duration) -> bool {
        let rival_first = claim.epoch == self.epoch()
            && claim.evidence.holds_the_room()
            && self.rival_until.is_some_and(|(host, until)| now < until && claim.precedes(peer, self.rank(), host));
        claim.beats(self.epoch(), self.rank()) || rival_first
    }

    /// `peer`, which claimed the match at `now` at `epoch` and `rank`, is followed: a rival
    /// of the same epoch and rank goes before it only within [`RIVAL_WINDOW`].
    pub(super) fn follow_claimer(&mut self, peer: PeerKey, epoch: u32, rank: u8, now: Duration) {
        self.host = (epoch, rank);
        self.rival_until = Some((peer, now + RIVAL_WINDOW));
    }

    /// A host that claimed no match is followed at `epoch` and `rank`, no rival heeded: this
    /// process's own (which reckons rivals itself), or a host that kept the match against a
    /// claim and took a new epoch.
    pub(super) fn follow_unclaimed(&mut self, epoch: u32, rank: u8) {
        self.host = (epoch, rank);
        self.rival_until = None;
    }

    /// A host of `epoch` welcomed this client at `tick`: someone hosts the match, so nothing
    /// is left to take over nor any claimer to wait for, and a host change under way goes on
    /// from that tick unless a claim said which. Returns whether that host is of a later epoch
    /// than the one followed (a hello said ahead, or to a claimer the list did not name).
    pub(super) fn welcomed(&mut self, epoch: u32, tick: u32) -> bool {
        self.lost = None;
        self.unlisted_claimer = None;
        if self.resuming.is_some() {
            self.resume_tick.get_or_insert(tick);
        }
        let later = epoch > self.epoch();
        self.host.0 = epoch;
        later
    }

    /// A host change starts at `lost_at`, whatever was under way: the lost host was last
    /// heard at `heard_at`, its newest match time `last_time_ms`.
    pub(super) fn start_resume(&mut self, lost_at: Duration, last_time_ms: Option<f64>, heard_at: Duration) {
        self.resuming = Some(Resuming { lost_at, last_time_ms, heard_at });
    }

    /// A host change starts, as [`Self::start_resume`] says, unless one is under way already
    /// (its first snapshot not in).
    pub(super) fn begin_resume(&mut self, lost_at: Duration, last_time_ms: Option<f64>, heard_at: Duration) {
        if self.resuming.is_none() {
            self.start_resume(lost_at, last_time_ms, heard_at);
        }
    }

    /// The new host's first snapshot: the host change that ends, and the tick it went on
    /// from, if a claim or a welcome said.
    pub(super) fn resumed(&mut self) -> Option<(Resuming, Option<u32>)> {
        let resuming = self.resuming.take()?;
        Some((resuming, self.resume_tick.take()))
    }

    /// `peer`, a successor of the host followed, keeps no shadow of it and passes its turn
    /// (its own `HOST_CHECK` said so): it is left out of the order of the successors, now and
    /// when this client counts the host lost later. Returns whether it is news.
    pub(super) fn note_pass(&mut self, peer: PeerKey) -> bool {
        let epoch = self.epoch();
        self.passed.retain(|_, e| *e == epoch);
        let news = self.passed.insert(peer, epoch).is_none();
        if let Some(lost) = self.lost.as_mut().filter(|l| l.handoff_to.is_none()) {
            lost.successors.retain(|p| *p != peer);
        }
        news
    }

    /// The succession list to go by once the host is lost: the host's newest, less those that
    /// passed their turn. A client, `me`, that keeps a shadow the host still streamed to
    /// (`fresh_shadow`) but that list does not name, and that is linked (`peers`) to every
    /// successor it names, comes after them: the host streamed to it as a successor, and the
    /// list that named it may have been lost with the host's line. If those ahead of it cannot
    /// take over (one without a shadow yet), the match is not left without a host. Linked to
    /// them all, it hears their claims, so none claims apart.
    pub(super) fn successors_at_loss(
        &self,
        me: Option<PeerKey>,
        peers: &BTreeSet<PeerKey>,
        fresh_shadow: bool,
    ) -> Vec<PeerKey> {
        let mut successors = self.succession.as_ref().map(|s| s.peers.clone()).unwrap_or_default();
        // Those that said they keep no shadow of this host give their turns up.
        successors.retain(|p| self.passed.get(p) != Some(&self.epoch()));
        // Only a shadow still streamed: one the host stopped streaming to is behind the match,
        // and taking over from it would set everyone back to where it stopped.
        if let Some(me) = me
            && fresh_shadow
            && !successors.contains(&me)
            && successors.iter().all(|p| peers.contains(p))
        {
            successors.push(me);
        }
        successors
    }

    /// Whether the host is lost and the turn of `me` to take over has come at `now`: the
    /// handed-off successor goes first, then the list's order among the successors linked
    /// (`peers`; after a redial nobody else's old key is linked, and the whole list's order
    /// holds), each waiting the turn and the claim's way of those before it.
    pub(super) fn my_turn(&self, me: Option<PeerKey>, peers: &BTreeSet<PeerKey>, now: Duration) -> bool {
        let (Some(lost), Some(me)) = (&self.lost, me) else { return false };
        let mut order: Vec<PeerKey> = lost.handoff_to.into_iter().collect();
        order.extend(lost.successors.iter().copied().filter(|p| Some(*p) != lost.handoff_to));
        let alive: Vec<PeerKey> = order.into_iter().filter(|p| *p == me || lost.orphan || peers.contains(p)).collect();
        let Some(k) = alive.iter().position(|p| *p == me) else { return false };
        now >= lost.at + (lost.turn + lost.way) * k as u32
    }

    /// Whether `peer`'s `HOST_CHECK` at `now` gets an answer: at most one per
    /// [`MIN_CHECK_INTERVAL`] to each asker. When it does, it counts as answered now.
    pub(super) fn answer_due(&mut self, peer: PeerKey, now: Duration) -> bool {
        if self.checks_answered.get(&peer).is_some_and(|at| now.saturating_sub(*at) < MIN_CHECK_INTERVAL) {
            return false;
        }
        self.checks_answered.insert(peer, now);
        true
    }

    /// `peer`'s link dropped: a new link's check is answered at once.
    pub(super) fn unlinked(&mut self, peer: PeerKey) {
        self.checks_answered.remove(&peer);
    }

    /// A fellow's hello as it came at `now` (`bytes`, its frame; `payload`, the hello), kept
    /// if it carries a token and is no larger than [`MAX_HELLO_AHEAD`]: the fellow lost the
    /// host and says hello ahead to this client, a successor, whose new host answers it at
    /// once should it take the match over. A join's hello, said to every peer met, has none.
    pub(super) fn keep_hello_ahead(
        &mut self,
        peer: PeerKey,
        channel: Channel,
        bytes: &[u8],
        payload: &[u8],
        now: Duration,
    ) {
        if bytes.len() > MAX_HELLO_AHEAD {
            return;
        }
        if serde_json::from_slice::<Hello>(payload).is_ok_and(|h| h.resume_token.is_some()) {
            self.hellos_ahead.insert(peer, (now, channel, bytes.to_vec()));
        }
    }

    /// The hellos said ahead that came within [`HELLO_AHEAD_FRESH`] of `now`, by fellow, taken
    /// (all of them go).
    pub(super) fn take_hellos_ahead(&mut self, now: Duration) -> Vec<(PeerKey, Channel, Vec<u8>)> {
        std::mem::take(&mut self.hellos_ahead)
            .into_iter()
            .filter(|(_, (at, ..))| now.saturating_sub(*at) <= HELLO_AHEAD_FRESH)
            .map(|(peer, (_, channel, bytes))| (peer, channel, bytes))
            .collect()
    }

    /// Dialing the match again: no host lost nor claimer waited for, no host change under
    /// way, and the list is the next host's to send.
    pub(super) fn redial(&mut self) {
        self.lost = None;
        self.unlisted_claimer = None;
        self.resuming = None;
        self.resume_tick = None;
        self.succession = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migration::Evidence;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn claim(epoch: u32, rank: u8, evidence: Evidence) -> Claim {
        Claim { epoch, rank, tick: 100, evidence }
    }

    const ROOM: Evidence = Evidence { lost: 2, answered: 3 };
    const NOBODY: Evidence = Evidence { lost: 1, answered: 3 };

    fn list(epoch: u32, peers: &[u128]) -> Succession {
        Succession { epoch, peers: peers.iter().copied().map(PeerKey).collect(), voters: None }
    }

    fn linked(peers: &[u128]) -> BTreeSet<PeerKey> {
        peers.iter().copied().map(PeerKey).collect()
    }

    #[test]
    fn a_claim_goes_before_the_host_followed_by_epoch_then_rank() {
        let mut f = Following::default();
        f.follow_unclaimed(2, 1);
        assert!(f.beaten_by(PeerKey(9), claim(3, 5, NOBODY), ms(0)), "a later epoch, whatever its rank");
        assert!(f.beaten_by(PeerKey(9), claim(2, 0, NOBODY), ms(0)), "the same epoch, a better rank");
        assert!(!f.beaten_by(PeerKey(1), claim(2, 1, ROOM), ms(0)), "the same place, no claimer followed");
        assert!(!f.beaten_by(PeerKey(1), claim(2, 2, ROOM), ms(0)), "a worse rank");
        assert!(!f.beaten_by(PeerKey(1), claim(1, 0, ROOM), ms(0)), "an older epoch");
    }

    #[test]
    fn a_rival_at_the_claimer_s_place_goes_first_by_key_while_its_window_lasts() {
        let mut f = Following::default();
        f.follow_claimer(PeerKey(5), 2, 1, ms(1000));
        assert_eq!((f.epoch(), f.rank()), (2, 1));
        assert!(f.beaten_by(PeerKey(3), claim(2, 1, ROOM), ms(1000)), "a lower key that holds the room");
        assert!(!f.beaten_by(PeerKey(7), claim(2, 1, ROOM), ms(1000)), "a higher key");
        assert!(!f.beaten_by(PeerKey(3), claim(2, 1, NOBODY), ms(1000)), "a rival that does not hold the room");
        assert!(!f.beaten_by(PeerKey(3), claim(2, 1, ROOM), ms(1000) + RIVAL_WINDOW), "too late for a rival");
        f.follow_unclaimed(3, 0);
        assert!(!f.beaten_by(PeerKey(1), claim(3, 0, ROOM), ms(1000)), "a host that claimed nothing has no rival");
    }

    #[test]
    fn a_claim_heard_again_is_its_other_copy() {
        let mut f = Following::default();
        assert!(!f.heard_before(PeerKey(2), claim(2, 0, ROOM)));
        assert!(f.heard_before(PeerKey(2), claim(2, 0, ROOM)), "the other channel's copy");
        assert!(!f.heard_before(PeerKey(3), claim(2, 0, ROOM)), "the same claim from another peer");
        assert!(!f.heard_before(PeerKey(3), claim(2, 1, ROOM)), "another claim from the same peer");
    }

    #[test]
    fn a_list_is_kept_for_the_host_followed_or_a_later_one_and_votes_on_its_own_epoch() {
        let mut f = Following::default();
        assert!(f.welcomed(3, 0) && !f.welcomed(3, 0), "a later epoch once");
        f.take_succession(list(2, &[1]));
        assert_eq!(f.succession, None, "an older host's list");
        f.take_succession(list(3, &[4, 5]));
        assert_eq!(f.electorate(), Some(vec![PeerKey(4), PeerKey(5)]));
        assert!(f.listed(PeerKey(5)) && !f.listed(PeerKey(6)));
        f.take_succession(list(4, &[5]));
        assert_eq!(f.electorate(), None, "a later host's list is no vote against this one");
        assert!(f.is_voter(PeerKey(9)), "a list without voters: everyone answers");
        f.take_succession(Succession { voters: Some(vec![PeerKey(5)]), ..list(4, &[5]) });
        assert!(f.is_voter(PeerKey(5)) && !f.is_voter(PeerKey(9)));
    }

    #[test]
    fn the_turns_go_by_the_list_among_the_successors_linked_and_a_pass_gives_one_up() {
        let mut f = Following::default();
        f.follow_unclaimed(1, 0);
        f.take_succession(list(1, &[2, 3, 9]));
        let peers = linked(&[1, 2, 3]);
        let me = Some(PeerKey(9));
        assert_eq!(f.successors_at_loss(me, &peers, false), [PeerKey(2), PeerKey(3), PeerKey(9)]);
        let mut lost = Lost::new(ms(0), Some(PeerKey(1)), f.successors_at_loss(me, &peers, false), ms(50), None, None);
        lost.turn = ms(200);
        f.lost = Some(lost);
        assert!(!f.my_turn(me, &peers, ms(499)), "two turns of 250 ms before it");
        assert!(f.my_turn(me, &peers, ms(500)));
        assert!(f.my_turn(me, &linked(&[1, 3]), ms(250)), "peer 2 is gone: one turn before it");
        assert!(f.note_pass(PeerKey(3)) && !f.note_pass(PeerKey(3)), "news once");
        assert!(f.my_turn(me, &peers, ms(250)), "peer 3 passed: its turn is given up");
        assert!(!f.my_turn(Some(PeerKey(7)), &peers, ms(10_000)), "not a successor");
        f.lost = None;
        assert_eq!(f.successors_at_loss(me, &peers, false), [PeerKey(2), PeerKey(9)], "a pass holds for later");
        f.follow_unclaimed(2, 0);
        f.take_succession(list(2, &[2, 3]));
        assert_eq!(f.successors_at_loss(me, &peers, false), [PeerKey(2), PeerKey(3)], "a pass is of its epoch");
        assert_eq!(f.successors_at_loss(me, &peers, true), [PeerKey(2), PeerKey(3), PeerKey(9)], "a fresh shadow");
        assert_eq!(f.successors_at_loss(me, &linked(&[1, 2]), true), [PeerKey(2), PeerKey(3)], "not linked to all");
    }

    #[test]
    fn a_host_change_is_timed_from_its_start_to_the_new_host_s_first_snapshot() {
        let mut f = Following::default();
        assert_eq!(f.resumed(), None);
        f.begin_resume(ms(100), Some(5000.0), ms(40));
        f.begin_resume(ms(300), None, ms(200));
        let started = Resuming { lost_at: ms(100), heard_at: ms(40), last_time_ms: Some(5000.0) };
        assert!(!f.welcomed(0, 640), "the first host's epoch");
        assert_eq!(f.resumed(), Some((started, Some(640))), "the first change under way, from the welcome's tick");
        assert_eq!(f.resumed(), None, "ended once");
        f.welcomed(0, 700);
        assert_eq!(f.resume_tick, None, "no change under way: no tick kept");
    }

    #[test]
    fn checks_are_answered_once_an_interval_and_hellos_ahead_kept_with_a_token_while_fresh() {
        let mut f = Following::default();
        assert!(f.answer_due(PeerKey(2), ms(0)));
        assert!(!f.answer_due(PeerKey(2), MIN_CHECK_INTERVAL - ms(1)));
        assert!(f.answer_due(PeerKey(3), ms(1)), "each asker apart");
        assert!(f.answer_due(PeerKey(2), MIN_CHECK_INTERVAL));
        f.unlinked(PeerKey(3));
        assert!(f.answer_due(PeerKey(3), ms(2)), "a new link is answered at once");
        let mut hello = Hello::new("bob", "test");
        let join = serde_json::to_vec(&hello).expect("a hello");
        hello.resume_token = Some(crate::session::test_support::welcome().token);
        let ahead = serde_json::to_vec(&hello).expect("a hello");
        f.keep_hello_ahead(PeerKey(2), Channel::Reliable, &join, &join, ms(0));
        f.keep_hello_ahead(PeerKey(3), Channel::Reliable, &ahead, &ahead, ms(0));
        f.keep_hello_ahead(PeerKey(4), Channel::Unreliable, &ahead, &ahead, ms(2000));
        f.keep_hello_ahead(PeerKey(5), Channel::Reliable, &vec![b' '; MAX_HELLO_AHEAD + 1], &ahead, ms(2000));
        let taken = f.take_hellos_ahead(ms(0) + HELLO_AHEAD_FRESH + ms(1));
        assert_eq!(taken, [(PeerKey(4), Channel::Unreliable, ahead)], "with a token, small, and fresh");
        assert!(f.take_hellos_ahead(ms(0)).is_empty(), "taken, the stale ones too");
    }
}
