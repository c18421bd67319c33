//! A client's part in a `@changeHost` vote (see [the vote](crate::migration#the-changehost-vote)):
//! calling it, answering it, counting the ballots that come to it, and settling it. The count
//! itself is [`Tally`](super::host_vote::Tally)'s.

use super::*;

impl ClientCore {
    /// Whether this client may call the `@changeHost` vote now: no vote is open, it follows
    /// a host, and that host's newest succession list names it (spectators and the hosting
    /// player never).
    pub fn may_call_change_host(&self) -> bool {
        let me = self.me;
        self.host_vote.is_none()
            && self.lost.is_none()
            && self.welcome.is_some()
            && self.host_peer().is_some()
            && self.electorate().is_some_and(|e| me.is_some_and(|me| e.contains(&me)))
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
        let id = HostVote::id_for(me, self.votes_called.wrapping_add(1));
        let vote = HostVote { epoch: self.following.0, caller: me, id };
        let tally = host_vote::Tally::new(vote, &self.electorate()?, self.now)?;
        self.votes_called = self.votes_called.wrapping_add(1);
        self.stats.host_votes += 1;
        self.host_vote = Some(tally);
        self.send_to_voters(op::HOST_VOTE, &vote.encode(), host);
        self.settle_host_vote(self.now);
        self.flush();
        Some(id)
    }

    /// The `@changeHost` vote open, for a window to show (at the time of the last update).
    pub fn host_vote(&self) -> Option<HostVoteView> {
        self.host_vote.as_ref().map(|t| t.view(self.me, self.now))
    }

    /// Answers the open `@changeHost` vote: `HOST_BALLOT` goes to every mesh peer but the host
    /// (a second answer replaces the first). `false`, and nothing is sent, with no vote open or
    /// when this client may not vote.
    pub fn answer_change_host(&mut self, yes: bool) -> bool {
        let (Some(me), Some(host)) = (self.me, self.host_peer()) else { return false };
        let Some(tally) = self.host_vote.as_mut() else { return false };
        if !tally.answer(me, yes) {
            return false;
        }
        let ballot = HostBallot { id: tally.vote.id, yes }.encode();
        self.send_to_voters(op::HOST_BALLOT, &ballot, host);
        self.settle_host_vote(self.now);
        self.flush();
        true
    }

    /// The electorate of a `@changeHost` vote: the followed host's succession list.
    pub(super) fn electorate(&self) -> Option<Vec<PeerKey>> {
        self.succession.as_ref().filter(|s| s.epoch == self.following.0).map(|s| s.peers.clone())
    }

    /// A `HOST_VOTE` or `HOST_BALLOT` from a fellow client (see the module docs).
    pub(super) fn on_vote_frame(&mut self, peer: PeerKey, opcode: u8, payload: &[u8], now: Duration) {
        let taken = match opcode {
            op::HOST_VOTE => HostVote::decode(payload).is_ok_and(|vote| self.take_host_vote(peer, vote, now)),
            _ => HostBallot::decode(payload).is_ok_and(|ballot| match self.host_vote.as_mut() {
                Some(tally) if tally.vote.id == ballot.id => tally.answer(peer, ballot.yes),
                Some(_) => false,
                None => {
                    // Ahead of its vote (which came the longer way round): kept for it.
                    if self.early_ballots.len() < MAX_EARLY_BALLOTS || self.early_ballots.contains_key(&peer) {
                        self.early_ballots.insert(peer, ballot);
                    }
                    true
                }
            }),
        };
        if !taken {
            self.stats.votes_refused += 1;
        }
    }

    /// Opens `vote`, called by `peer`, if this client takes it (see the module docs).
    pub(super) fn take_host_vote(&mut self, peer: PeerKey, vote: HostVote, now: Duration) -> bool {
        let Some(me) = self.me else { return false };
        if vote.caller != peer || vote.epoch != self.following.0 || self.lost.is_some() || self.welcome.is_none() {
            return false;
        }
        if let Some(open) = &self.host_vote {
            return open.vote == vote;
        }
        let Some(mut tally) =
            self.electorate().filter(|e| e.contains(&me)).and_then(|e| host_vote::Tally::new(vote, &e, now))
        else {
            return false;
        };
        for (voter, ballot) in std::mem::take(&mut self.early_ballots) {
            if ballot.id == vote.id {
                tally.answer(voter, ballot.yes);
            }
        }
        self.stats.host_votes += 1;
        self.host_vote = Some(tally);
        true
    }

    /// Closes the open vote when it failed, its time is up or the host changed; asks the host
    /// to step down (once) when it passed.
    pub(super) fn settle_host_vote(&mut self, now: Duration) {
        let Some(tally) = self.host_vote.as_mut() else { return };
        if tally.vote.epoch != self.following.0 || tally.expired(now) {
            self.host_vote = None;
            self.early_ballots.clear();
            return;
        }
        match tally.outcome(now) {
            host_vote::Outcome::Open => {}
            host_vote::Outcome::Failed => self.host_vote = None,
            host_vote::Outcome::Passed if !tally.step_down_sent => {
                if let Some((_, session)) = self.host.as_mut().filter(|(_, s)| s.is_active()) {
                    session.send_meta(op::STEP_DOWN, &tally.step_down().encode());
                    tally.step_down_sent = true;
                    self.stats.host_votes_passed += 1;
                }
            }
            host_vote::Outcome::Passed => {}
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
