//! A client's part in a `@changeHost` vote (see [the vote](crate::migration#the-changehost-vote)):
//! calling it, answering it, counting the ballots that come to it, and settling it. The votes
//! are [`Votes`](super::votes::Votes)'s, each one's count [`Tally`](super::host_vote::Tally)'s;
//! here are who may vote and the frames.

use super::*;

impl ClientCore {
    /// Whether this client may call the `@changeHost` vote now: no vote is open, it follows
    /// a host, and that host's newest succession list names it (spectators and the hosting
    /// player never).
    pub fn may_call_change_host(&self) -> bool {
        let me = self.me;
        self.votes.open().is_none()
            && self.following.lost.is_none()
            && self.link.welcome.is_some()
            && self.host_peer().is_some()
            && self.following.electorate().is_some_and(|e| me.is_some_and(|me| e.contains(&me)))
    }

    /// Calls the `@changeHost` vote (see the module docs): `HOST_VOTE` goes to every mesh peer
    /// but the host, and this client votes yes. Returns the vote's id; `None`, and nothing is
    /// sent, without a host to vote away, when this client is not in the host's succession
    /// list (spectators, the host's own player) or while a vote is open.
    pub fn call_change_host(&mut self) -> Option<u32> {
        if !self.may_call_change_host() {
            return None;
        }
        let (me, host) = (self.me?, self.host_peer()?);
        let vote = self.votes.call(me, self.following.epoch(), &self.following.electorate()?, self.now)?;
        self.stats.host_votes += 1;
        self.send_to_voters(op::HOST_VOTE, &vote.encode(), host);
        self.settle_host_vote(self.now);
        self.flush();
        Some(vote.id)
    }

    /// The `@changeHost` vote open, for a window to show (at the time of the last update).
    pub fn host_vote(&self) -> Option<HostVoteView> {
        self.votes.open().map(|t| t.view(self.me, self.now))
    }

    /// Answers the open `@changeHost` vote: `HOST_BALLOT` goes to every mesh peer but the host
    /// (a second answer replaces the first). `false`, and nothing is sent, with no vote open or
    /// when this client may not vote.
    pub fn answer_change_host(&mut self, yes: bool) -> bool {
        let (Some(me), Some(host)) = (self.me, self.host_peer()) else { return false };
        let Some(ballot) = self.votes.answer(me, yes) else { return false };
        self.send_to_voters(op::HOST_BALLOT, &ballot.encode(), host);
        self.settle_host_vote(self.now);
        self.flush();
        true
    }

    /// A `HOST_VOTE` or `HOST_BALLOT` from a fellow client (see the module docs).
    pub(super) fn on_vote_frame(&mut self, peer: PeerKey, opcode: u8, payload: &[u8], now: Duration) {
        let taken = match opcode {
            op::HOST_VOTE => HostVote::decode(payload).is_ok_and(|vote| self.take_host_vote(peer, vote, now)),
            _ => HostBallot::decode(payload).is_ok_and(|ballot| self.votes.ballot(peer, ballot)),
        };
        if !taken {
            self.stats.votes_refused += 1;
        }
    }

    /// Opens `vote`, called by `peer`, if this client takes it (see the module docs).
    pub(super) fn take_host_vote(&mut self, peer: PeerKey, vote: HostVote, now: Duration) -> bool {
        let Some(me) = self.me else { return false };
        if vote.caller != peer
            || vote.epoch != self.following.epoch()
            || self.following.lost.is_some()
            || self.link.welcome.is_none()
        {
            return false;
        }
        if let Some(open) = self.votes.open() {
            return open.vote == vote;
        }
        let Some(electorate) = self.following.electorate().filter(|e| e.contains(&me)) else { return false };
        if !self.votes.take(vote, &electorate, now) {
            return false;
        }
        self.stats.host_votes += 1;
        true
    }

    /// Closes the open vote when it failed, its time is up or the host changed; asks the host
    /// to step down (once) when it passed.
    pub(super) fn settle_host_vote(&mut self, now: Duration) {
        let Some(step_down) = self.votes.settle(self.following.epoch(), now) else { return };
        if let Some(session) = self.link.active() {
            session.send_meta(op::STEP_DOWN, &step_down.encode());
            self.votes.step_down_sent();
            self.stats.host_votes_passed += 1;
        }
    }

    /// Sends a frame to every mesh peer but `host`, on the reliable channel.
    pub(super) fn send_to_voters(&mut self, opcode: u8, payload: &[u8], host: PeerKey) {
        let mut bytes = Vec::new();
        frame::encode(opcode, payload, &mut bytes);
        for peer in self.peers.iter().copied().filter(|p| *p != host).collect::<Vec<_>>() {
            self.stats.bytes_out += bytes.len() as u64;
            self.outbox.push_back((peer, Channel::Reliable, bytes.clone()));
        }
    }
}
