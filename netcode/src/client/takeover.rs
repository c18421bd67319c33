//! How a client that lost its host takes its part in a takeover: it notices the silence,
//! tells the room, waits its turn in the succession list, asks the room before it claims
//! (the rule is [`host_check`](super::host_check)), follows a claimer or the host its own
//! process now runs, and answers a fellow's check (see the migration docs' [Before a
//! claim](crate::migration#before-a-claim-asking-the-room)).

use super::*;

/// How long a successor's check of the room and its claim take, on a link whose round trip
/// to the host was `rtt_ms`: a check round ([`CHECK_TIME`]), or a round trip between two
/// peers for the answers and half of one for the claim, as far as the host's link tells.
fn claim_way(rtt_ms: Option<f64>) -> Duration {
    let rtt = rtt_ms.filter(|r| r.is_finite() && *r > 0.0).unwrap_or(0.0).min(5_000.0);
    CHECK_TIME.max(Duration::from_secs_f64(rtt * 1.5 / 1000.0))
}

/// The host is lost and nobody has been followed since.
#[derive(Debug)]
pub(super) struct Lost {
    pub(super) at: Duration,
    /// The silence allowed when the host was lost: each successor's turn to claim lasts this,
    /// and `way` more.
    pub(super) turn: Duration,
    /// How long a successor's check of the room and its claim take to reach this client
    /// ([`claim_way`]): a successor ahead that claims at the end of its turn is heard before
    /// the next one's turn begins.
    pub(super) way: Duration,
    pub(super) host: Option<PeerKey>,
    pub(super) successors: Vec<PeerKey>,
    pub(super) handoff_to: Option<PeerKey>,
    /// The silent host's session, kept: if the host speaks again before anyone takes
    /// over, it was only a stall and the client carries on with it.
    pub(super) stalled: Option<Box<ClientSession>>,
    /// The fellow peers linked when the host was lost (neither it nor this client): whom a
    /// successor asks before it claims.
    pub(super) room: Vec<PeerKey>,
    /// This successor's check of the room, once its turn came.
    pub(super) check: Option<host_check::Check>,
    /// Whether this successor may claim: it was handed the match, or the room agreed.
    pub(super) cleared: bool,
    /// What the claim rests on, once cleared by the room.
    pub(super) evidence: Evidence,
    /// Counted lost again after dialing the room anew and finding nobody hosting: the
    /// successors' keys are the old mesh's, so each waits its place in the whole list.
    pub(super) orphan: bool,
    /// Answers to this client's warning that came before its turn, with when: those of the
    /// last round's time count in its first round.
    pub(super) early: Vec<(PeerKey, HostSeen, Duration)>,
}

impl Lost {
    /// The host `host` lost at `at`; its turn and room are filled in by the client that
    /// counts it lost.
    pub(super) fn new(
        at: Duration,
        host: Option<PeerKey>,
        successors: Vec<PeerKey>,
        way: Duration,
        handoff_to: Option<PeerKey>,
        stalled: Option<Box<ClientSession>>,
    ) -> Lost {
        Lost {
            at,
            turn: Duration::ZERO,
            way,
            host,
            successors,
            handoff_to,
            stalled,
            room: Vec::new(),
            check: None,
            cleared: false,
            evidence: Evidence::default(),
            orphan: false,
            early: Vec::new(),
        }
    }

    /// `peer`'s answer at `now`: counted in this successor's check, or, before its turn (an
    /// answer to its warning), kept for its first round.
    fn take_answer(&mut self, peer: PeerKey, seen: HostSeen, now: Duration) {
        match self.check.as_mut() {
            Some(check) => {
                check.answer(peer, seen);
            }
            None => {
                self.early.retain(|(p, ..)| *p != peer);
                self.early.push((peer, seen, now));
            }
        }
    }
}

/// The turn of each successor before it, for a successor that found nobody hosting after
/// dialing the room again (see [Finding nobody hosting](crate::client#a-successor-that-finds-nobody-hosting)):
/// enough for an earlier one to claim and answer this one's hello.
pub const ORPHAN_TURN: Duration = Duration::from_secs(3);

impl ClientCore {
    /// Whether it is this client's turn to take the match over and the room agreed: the host
    /// is lost, this client is in the succession list, every successor still linked ahead of
    /// it had its turn to claim (the host timeout it had when the host was lost, and the time
    /// a check of the room and a claim take to come, [`claim_way`]), and, asked,
    /// the room did not hear the host either (see [Before a
    /// claim](crate::migration#before-a-claim-asking-the-room)). A handed-off successor goes
    /// at once. Whoever can (it keeps a shadow) promotes it and calls
    /// [`ClientCore::follow_own_host`].
    pub fn takeover_due(&self) -> bool {
        self.my_turn() && self.following.lost.as_ref().is_some_and(|l| l.cleared)
    }

    /// Whether the host is lost and this successor's turn has come (see [`Self::takeover_due`]).
    pub(super) fn my_turn(&self) -> bool {
        self.following.my_turn(self.me, &self.peers, self.now)
    }

    /// A successor whose turn has come asks the room, and counts its answers, until it may
    /// claim (see [Before a claim](crate::migration#before-a-claim-asking-the-room)).
    pub(super) fn check_the_room(&mut self, now: Duration) {
        if !self.my_turn() {
            return;
        }
        let (me, epoch) = (self.me, self.following.epoch());
        let Some(lost) = self.following.lost.as_mut().filter(|l| !l.cleared) else { return };
        if lost.handoff_to.is_some() && lost.handoff_to == me {
            lost.cleared = true;
            lost.evidence = Evidence::HANDED;
            return;
        }
        let round = lost.turn.max(CHECK_TIME);
        let alive_within = (lost.turn / 2).max(ALIVE_WITHIN);
        let witnessed = self.settings.witness;
        let published = self.following.succession.as_ref().and_then(|s| s.voters.as_ref());
        if lost.check.is_none() {
            let voters = lost.room.iter().copied().filter(|p| published.is_none_or(|v| v.contains(p))).collect();
            // The lost host's own process served the rendezvous the witness asks.
            let served = lost.host.is_some_and(|h| self.room.as_ref().is_some_and(|(by, i)| *by == h && i.served));
            let mut check = host_check::Check::new(epoch, lost.room.clone(), alive_within, witnessed)
                .with_voters(voters)
                .served_by_host(served);
            // What the rendezvous said of this host while it was going quiet: a question asked
            // since the host was last heard.
            if let Some((host, word, _)) = self
                .early_witness
                .take()
                .filter(|(host, _, at)| Some(*host) == lost.host && *at >= self.link.host_heard_at)
            {
                tracing::debug!(target: TAKEOVER_LOG, "{:.3} s: the rendezvous, asked ahead: {word:?} of {host}", now.as_secs_f64());
                check.witness(word);
            }
            // The room's answers to this client's warning, if they are fresh, count now.
            let fresh = now.saturating_sub(round);
            for (peer, seen, _) in lost.early.drain(..).filter(|(.., at)| *at >= fresh) {
                check.answer(peer, seen);
            }
            lost.check = Some(check);
        }
        let Some(check) = lost.check.as_mut() else { return };
        match check.step(now, round) {
            host_check::Step::Claim(evidence) => {
                tracing::debug!(target: TAKEOVER_LOG, "{:.3} s: the room agrees: {}", now.as_secs_f64(), evidence.said());
                lost.cleared = true;
                lost.evidence = evidence;
            }
            host_check::Step::Wait => {}
            step @ (host_check::Step::Ask | host_check::Step::AskAgain) => {
                // Alone with the host, a round asks only the rendezvous.
                self.stats.host_checks += u32::from(!check.room().is_empty());
                self.stats.takeovers_held += u32::from(step == host_check::Step::AskAgain);
                tracing::debug!(
                    target: TAKEOVER_LOG,
                    "{:.3} s: asking the room {:?} about the host ({step:?})",
                    now.as_secs_f64(),
                    check.room(),
                );
                let (epoch, room) = (check.epoch(), check.room().to_vec());
                self.ask_room(epoch, &room);
            }
        }
    }

    /// `HOST_CHECK` about the host of `epoch` to the peers of `room` still linked.
    pub(super) fn ask_room(&mut self, epoch: u32, room: &[PeerKey]) {
        // A successor that keeps no shadow cannot take over: it gives its turn up.
        let ask = HostCheck { epoch, passes: !self.shadow.shadowed }.encode();
        let mut bytes = Vec::new();
        frame::encode(op::HOST_CHECK, &ask, &mut bytes);
        // On the unreliable channel only: a round that hears nothing asks again, and a lost
        // reliable copy would hold up, until its retransmission (500 ms and more on a mesh link
        // with no round trip measured), whatever follows it on that link's reliable channel:
        // the claim, the hello to the new host and its welcome.
        for peer in room.iter().filter(|p| self.peers.contains(p)) {
            self.stats.bytes_out += bytes.len() as u64;
            self.outbox.push_back((*peer, Channel::Unreliable, bytes.clone()));
        }
    }

    /// A client that just lost its host and whose turn has not come asks the room all the
    /// same (answers are not counted before its turn): a fellow silent for half its own
    /// timeout counts the host lost then, and the successor first in line takes its turn
    /// without waiting out its own timeout (see `on_host_check`).
    pub(super) fn warn_the_room(&mut self, now: Duration) {
        if self.my_turn() {
            return;
        }
        let Some(lost) = self.following.lost.as_ref().filter(|l| l.handoff_to.is_none()) else { return };
        let room = lost.room.clone();
        tracing::debug!(target: TAKEOVER_LOG, "{:.3} s: telling the room {room:?} the host is lost", now.as_secs_f64());
        self.ask_room(self.following.epoch(), &room);
    }

    /// A fellow peer asks whether this client still hears its host (`HOST_CHECK`): answered
    /// when this client was welcomed and said it answers checks ([`Hello::checks`]), at most
    /// once per [`MIN_CHECK_INTERVAL`](crate::migration::MIN_CHECK_INTERVAL) to each asker; `false` when refused.
    ///
    /// Any peer of the mesh may ask, not only a successor of this client's list: the lists
    /// travel on lossy lines, and the newest may not have reached this client when its host
    /// went silent. The answer says only what this client hears, and the asker weighs it
    /// (see [Before a claim](crate::migration#before-a-claim-asking-the-room)).
    pub(super) fn on_host_check(&mut self, peer: PeerKey, payload: &[u8], now: Duration) -> bool {
        let Ok(check) = HostCheck::decode(payload) else { return false };
        let answered = self.answer_check(peer, check, now);
        self.count_fellow_lost(peer, check, now);
        answered
    }

    /// A fellow's check of the host followed says it lost that host (a peer asks only once it
    /// counts its host lost), as its answer to this client's own check would: while this
    /// client counts the host lost too, the check counts as that answer, in this client's
    /// round or, before its turn, among the answers to its warning; a voter's only (see
    /// [`Succession::voters`]), and not a successor's that may claim itself. A successor whose ask or whose fellow's answer was lost on the
    /// line need not wait a round to ask again.
    fn count_fellow_lost(&mut self, peer: PeerKey, check: HostCheck, now: Duration) {
        // Only a voter's: a peer that says it answers no check is a silent member, whatever
        // else it sends.
        let voter = self.following.is_voter(peer);
        if check.epoch != self.following.epoch() || self.link.welcome.is_none() || !voter {
            return;
        }
        let Some(lost) = self.following.lost.as_mut().filter(|l| l.host != Some(peer)) else { return };
        // Not a successor's that may claim itself: its check may be its own turn's (the two
        // went by different lists), and taking it for an answer would have both claim at once
        // rather than one hearing the other's claim first.
        if lost.successors.contains(&peer) && !check.passes {
            return;
        }
        lost.take_answer(peer, HostSeen { asked: check.epoch, following: check.epoch, silence_ms: u32::MAX }, now);
    }

    /// Answers a fellow's check (see [`Self::on_host_check`]); `false` when refused.
    fn answer_check(&mut self, peer: PeerKey, check: HostCheck, now: Duration) -> bool {
        if check.passes && check.epoch == self.following.epoch() && self.link.welcome.is_some() {
            self.note_pass(peer, now);
        }
        let joining = self.link.welcome.is_none() && self.closed.is_none() && !self.link.candidates.is_empty();
        if !self.link.hello.checks || (self.link.welcome.is_none() && !joining) {
            return false;
        }
        if !self.following.answer_due(peer, now) {
            return true;
        }
        let ms = |d: Duration| d.as_millis().min(u128::from(u32::MAX)) as u32;
        let seen = if joining {
            // Still joining: no host answered the hello yet, which a live host does a round
            // trip after the link; the silence counts from the newest link.
            HostSeen {
                asked: check.epoch,
                following: 0,
                silence_ms: ms(now.saturating_sub(self.link.last_candidate_at)),
            }
        } else {
            // A host this client counts lost (its link dropped, or it was silent past this
            // client's own timeout) is reported as never heard.
            let silence = match self.following.lost {
                Some(_) => u32::MAX,
                None => ms(now.saturating_sub(self.link.host_heard_at)),
            };
            HostSeen { asked: check.epoch, following: self.following.epoch(), silence_ms: silence }
        };
        // The asker lost the host; silent past half its own timeout, this client has lost it
        // too and takes its turn now rather than at the end of its own timeout.
        let corroborated =
            self.link.silence.corroborated_after(self.settings.min_host_timeout, self.settings.host_timeout);
        if check.epoch == self.following.epoch()
            && self.following.lost.is_none()
            && self.link.host.as_ref().is_some_and(|(_, s)| s.is_active())
            && now.saturating_sub(self.link.host_heard_at) >= corroborated
        {
            tracing::debug!(target: TAKEOVER_LOG, "{:.3} s: {peer} lost the host too", now.as_secs_f64());
            self.on_host_silent(now);
        }
        let mut bytes = Vec::new();
        frame::encode(op::HOST_SEEN, &seen.encode(), &mut bytes);
        self.stats.bytes_out += bytes.len() as u64;
        self.stats.host_checks_answered += 1;
        // Unreliably, as the question came (see `ask_room`).
        self.outbox.push_back((peer, Channel::Unreliable, bytes));
        true
    }

    /// `peer`, a successor of the host followed, keeps no shadow of it and passes its turn
    /// (its own `HOST_CHECK` said so): it is left out of the order of the successors, now and
    /// when this client counts the host lost later.
    fn note_pass(&mut self, peer: PeerKey, now: Duration) {
        if self.following.note_pass(peer) {
            tracing::debug!(target: TAKEOVER_LOG, "{:.3} s: {peer} keeps no shadow and passes its turn", now.as_secs_f64());
        }
    }

    /// A fellow peer's answer to this successor's `HOST_CHECK`; `false` when it does not
    /// decode. An answer nobody asked for (a check over, another epoch) is dropped.
    pub(super) fn on_host_seen(&mut self, peer: PeerKey, payload: &[u8]) -> bool {
        let Ok(seen) = HostSeen::decode(payload) else { return false };
        tracing::debug!(
            target: TAKEOVER_LOG,
            "{:.3} s: {peer} last heard the host {} ms ago",
            self.now.as_secs_f64(),
            seen.silence_ms
        );
        let now = self.now;
        if let Some(lost) = self.following.lost.as_mut() {
            lost.take_answer(peer, seen, now);
        }
        true
    }

    /// This process takes the match over: the client follows the new host its own process
    /// runs, which it reaches under its own mesh key (its driver routes what goes there to
    /// that host, and back). It says hello there with its token and sends its recent inputs
    /// again. Gives what the new host needs of the mesh; `None` (and nothing changes) before a
    /// welcome.
    pub fn follow_own_host(&mut self) -> Option<Handover> {
        let token = self.link.welcome.as_ref()?.token;
        let epoch = self.following.epoch();
        let me = self.me;
        let (lost_at, successors, predecessor, evidence) = match self.following.lost.take() {
            Some(l) => (l.at, l.successors, l.host, l.evidence),
            None => (
                self.now,
                self.following.succession.as_ref().map(|s| s.peers.clone()).unwrap_or_default(),
                self.link.host.as_ref().map(|(p, _)| *p),
                Evidence::default(),
            ),
        };
        let rank = successors.iter().position(|p| Some(*p) == me).unwrap_or(usize::from(u8::MAX)).min(255) as u8;
        let last_time_ms = self.snapshots.last_time_ms();
        // Every linked peer gets the new host's claim, the old host too: one that handed off
        // lives on and joins the new host as a client, and one that only went silent (a
        // stall, a sleeping laptop) hears, when it wakes, that the match has moved on, and
        // steps down instead of hosting beside the new host.
        let peers = std::mem::take(&mut self.peers).into_iter().collect();
        let now = self.now;
        let hellos = self.following.take_hellos_ahead(now);
        self.link.resume_with(token);
        self.link.host = None;
        self.link.candidates.clear();
        self.link.searching = true;
        self.shadow.forget();
        // The process's own host reckons a rival itself, and steps down (`step_down`).
        self.following.follow_unclaimed(epoch + 1, rank);
        self.following.start_resume(lost_at, last_time_ms, self.link.host_heard_at);
        self.following.resume_tick = None;
        Some(Handover { peers, epoch, rank, successors, predecessor, evidence, hellos })
    }

    /// This process's host lost to a better claim — `winner`'s, `claim` (the server's
    /// `superseded()`) — and was stopped: the client, which followed it
    /// ([`Self::follow_own_host`]), goes back to the mesh peers linked, `peers` (the server's),
    /// says hello to the winner with its token and sends again the inputs the winner has not
    /// applied. Before a welcome only the peers change.
    pub fn step_down(&mut self, peers: impl IntoIterator<Item = PeerKey>, winner: PeerKey, claim: Claim) {
        self.rejoin_mesh(peers);
        // Where this process's own host said the room was is no more: the winner says where.
        self.room.take_if(|(from, _)| *from != winner);
        let Some(token) = self.link.welcome.as_ref().map(|w| w.token) else { return };
        let now = self.now;
        self.following.lost = None;
        self.begin_resume(now);
        self.link.resume_with(token);
        self.following.follow_claimer(winner, claim.epoch, claim.rank, now);
        self.link.silence.reset();
        self.link.host = Some((winner, self.link.hello(now)));
    }

    /// This process's host handed the match off to `to` (the server's `handed_off()`: a
    /// graceful quit, or the `@changeHost` vote) and was stopped: the client goes back to the
    /// mesh peers linked, `peers` (as for [`Self::step_down`]), and, the host lost, waits for
    /// `to`'s claim like every other client (the successor greets this process too).
    pub fn follow_handoff(&mut self, peers: impl IntoIterator<Item = PeerKey>, to: PeerKey) {
        self.rejoin_mesh(peers);
        self.room.take_if(|(from, _)| *from != to);
        let now = self.now;
        let old = self.link.host.take().map(|(p, _)| p);
        match self.following.lost.as_mut() {
            Some(lost) => {
                lost.handoff_to = Some(to);
                lost.stalled = None;
                if !lost.successors.contains(&to) {
                    lost.successors.insert(0, to);
                }
            }
            None if self.link.welcome.is_some() => {
                let mut successors = self.following.succession.as_ref().map(|s| s.peers.clone()).unwrap_or_default();
                if !successors.contains(&to) {
                    successors.insert(0, to);
                }
                self.stats.host_lost_at = Some(now);
                self.begin_resume(now);
                let mut lost = Lost::new(now, old, successors, CHECK_TIME, Some(to), None);
                (lost.turn, lost.room) = (self.host_timeout(), self.room_without(old));
                self.link.silence.reset();
                self.following.lost = Some(lost);
            }
            None => {}
        }
    }

    /// Back among the mesh peers linked, `peers` (this process's own key left out), after
    /// following this process's own host.
    pub(super) fn rejoin_mesh(&mut self, peers: impl IntoIterator<Item = PeerKey>) {
        let own = self.me;
        self.peers = peers.into_iter().filter(|p| Some(*p) != own).collect();
        self.link.candidates.clear();
        self.link.searching = false;
        self.shadow.forget();
        self.votes.close();
        self.stats.step_downs += 1;
    }

    /// A host change starts now, unless one is under way already (its first snapshot not in).
    pub(super) fn begin_resume(&mut self, now: Duration) {
        self.following.begin_resume(now, self.snapshots.last_time_ms(), self.link.host_heard_at);
    }

    /// The host is gone: with a succession list, wait for a successor (see the module docs);
    /// without one, the client is closed.
    pub(super) fn on_host_lost(&mut self, now: Duration, handoff_to: Option<PeerKey>, why: &str) {
        let way = claim_way(self.rtt_ms());
        let host = self.link.host.take().map(|(p, _)| p);
        let successors = self.successors_at_loss();
        if successors.is_empty() || self.link.welcome.is_none() {
            self.closed.get_or_insert((crate::session::close::HEARTBEAT, why.to_owned()));
            return;
        }
        self.count_host_lost(now, Lost::new(now, host, successors, way, handoff_to, None), why);
    }

    /// The succession list to go by once the host is lost (see
    /// [`Following::successors_at_loss`](super::following::Following::successors_at_loss)):
    /// this client comes after the successors listed if it keeps a shadow the host still
    /// streamed to within [`STREAM_FRESH`](super::shadow::STREAM_FRESH).
    pub(super) fn successors_at_loss(&self) -> Vec<PeerKey> {
        self.following.successors_at_loss(self.me, &self.peers, self.shadow.fresh(self.now))
    }

    /// The fellow peers linked now, but for `host` and this client: whom a successor asks.
    pub(super) fn room_without(&self, host: Option<PeerKey>) -> Vec<PeerKey> {
        self.peers.iter().copied().filter(|p| Some(*p) != host && Some(*p) != self.me).collect()
    }

    /// The lost host to ask the rendezvous about, while this successor's check of the room
    /// waits for its word (see [`ClientConfig::witness`]): its driver asks the room list
    /// (`GET /rooms/CODE`, [`RoomInfo::holds`](crate::signal::RoomInfo::holds)) and tells
    /// [`Self::witness`] what it said. `None` when nothing is to be asked.
    ///
    /// A host whose own process serves the rendezvous (its invite says so) is asked about
    /// already once it has been silent for half of [`Self::host_timeout`]: its rendezvous can
    /// say nothing until it has been silent a few round trips too, and that wait then runs
    /// beside the rest of the host's timeout rather than after it. The answer is kept for the
    /// check should the host be counted lost.
    pub fn witness_wanted(&self) -> Option<PeerKey> {
        if self.settings.witness
            && self.following.lost.is_none()
            && let Some((host, _)) = self.link.host.as_ref()
            && self.room.as_ref().is_some_and(|(by, invite)| by == host && invite.served)
            && self.now.saturating_sub(self.link.host_heard_at) >= self.host_timeout() / 2
        {
            return Some(*host);
        }
        let lost = self.following.lost.as_ref().filter(|l| !l.cleared)?;
        lost.check.as_ref().filter(|c| c.wants_witness())?;
        lost.host
    }

    /// What the rendezvous said of `host` (the peer [`Self::witness_wanted`] named): the
    /// check of the room takes it into account from its next step. An answer about another
    /// host, or once nothing waits for it, is dropped.
    pub fn witness(&mut self, host: PeerKey, witness: Witness) {
        // Asked ahead, while the host was only quiet: kept for the check.
        if self.following.lost.is_none() {
            if self.link.host.as_ref().is_some_and(|(h, _)| *h == host) {
                self.early_witness = Some((host, witness, self.now));
                self.stats.witness_answers += 1;
            }
            return;
        }
        let Some(lost) = self.following.lost.as_mut().filter(|l| !l.cleared && l.host == Some(host)) else { return };
        if let Some(check) = lost.check.as_mut() {
            check.witness(witness);
            self.stats.witness_answers += 1;
        } else {
            self.early_witness = Some((host, witness, self.now));
        }
    }

    /// Nothing from the host for [`Self::host_timeout`]: lost as far as taking
    /// over goes, but its session is kept. If it speaks again before a successor claims
    /// the match, the client carries on with it; if nobody claims and it stays silent,
    /// the client gives up after [`ClientConfig::give_up`] (with no successor listed too).
    pub(super) fn on_host_silent(&mut self, now: Duration) {
        let Some((peer, session)) = self.link.host.take() else { return };
        let way = claim_way(session.rtt_ms());
        if self.link.welcome.is_none() {
            self.closed.get_or_insert((crate::session::close::HEARTBEAT, "no frame from the host in time".into()));
            return;
        }
        let successors = self.successors_at_loss();
        let lost = Lost::new(now, Some(peer), successors, way, None, Some(Box::new(session)));
        self.count_host_lost(now, lost, "silent");
    }

    /// The host followed is lost as of `now` (`lost`, its turn and room still to fill in):
    /// the resume is timed from here, the silence watch starts afresh for whoever comes next,
    /// the room hears of it, and a claimer heard before is dialed.
    fn count_host_lost(&mut self, now: Duration, mut lost: Lost, why: &str) {
        self.notice_loss(now);
        lost.turn = self.host_timeout();
        lost.room = self.room_without(lost.host);
        tracing::debug!(
            target: TAKEOVER_LOG,
            "{:.3} s: the host is lost ({why}: {} ms heard nothing, {} ms allowed); successors {:?}, this client {:?}",
            now.as_secs_f64(),
            now.saturating_sub(self.link.host_heard_at).as_millis(),
            lost.turn.as_millis(),
            lost.successors,
            self.me,
        );
        self.link.silence.reset();
        self.following.lost = Some(lost);
        self.warn_the_room(now);
        self.dial_unlisted_claimer(now);
        self.hello_ahead(now);
    }

    /// Says hello, with its token and both ways, to the successor whose turn comes first when
    /// that is a fellow, or to every fellow when no list came (a player that had just joined):
    /// should it take the match over, its new host answers at once and the welcome comes right
    /// behind the claim, instead of a round trip after it (see
    /// [Hellos said ahead](crate::migration#hellos-said-ahead)). Each session is a candidate's,
    /// said again until answered; a claim ends them.
    fn hello_ahead(&mut self, now: Duration) {
        let Some(token) = self.link.welcome.as_ref().map(|w| w.token) else { return };
        let Some(lost) = self.following.lost.as_ref() else { return };
        if self.link.host.is_some() || self.closed.is_some() {
            return;
        }
        let to: Vec<PeerKey> = match lost.successors.first() {
            Some(first) => vec![*first],
            None => lost.room.clone(),
        };
        let host = lost.host;
        self.link.resume_with(token);
        for peer in to {
            if Some(peer) == self.me
                || Some(peer) == host
                || !self.peers.contains(&peer)
                || self.link.candidates.contains_key(&peer)
            {
                continue;
            }
            self.link.dial(peer, now);
            self.stats.hellos_ahead += 1;
        }
    }

    /// The loss of the host followed is counted at `now`, and the resume is timed from here.
    fn notice_loss(&mut self, now: Duration) {
        self.stats.host_lost_at = Some(now);
        let last_time_ms = self.snapshots.last_time_ms();
        self.following.start_resume(now, last_time_ms, self.link.host_heard_at);
    }

    /// A peer claims the match: follow it if it beats the host followed and is a known successor.
    pub(super) fn on_claim(&mut self, peer: PeerKey, claim: Claim, now: Duration) {
        if self.following.heard_before(peer, claim) {
            // The other copy of a claim already heard (it comes on both channels).
            return;
        }
        if self.link.host.as_ref().is_some_and(|(h, _)| *h == peer) && claim.epoch == self.following.epoch() {
            // Its welcome came ahead of its claim (a hello said ahead): followed already.
            self.following.follow_claimer(peer, claim.epoch, claim.rank, now);
            return;
        }
        let listed = self.following.listed(peer);
        let Some(token) = self.link.welcome.as_ref().map(|w| w.token) else { return };
        // A claim of a newer epoch that does not hold the room over a host this client still
        // hears: the host keeps the match (see [Claims a live host
        // refuses](crate::migration#claims-a-live-host-refuses)). A rival of the host followed,
        // at its own epoch, is judged by rank: the host steps down to a better one itself.
        let over_a_live_host = self.following.lost.is_none()
            && self.link.host.is_some()
            && claim.epoch > self.following.epoch()
            && !claim.evidence.holds_the_room();
        // Or a rival of the host followed, at its epoch and rank, whose key goes first (see
        // `CLAIM` in the migration docs).
        let better = self.following.beaten_by(peer, claim, now);
        tracing::debug!(
            target: TAKEOVER_LOG,
            "{:.3} s: {peer} claims epoch {} (rank {}, {}): better {better}, listed {listed}, over a live host {over_a_live_host}",
            now.as_secs_f64(),
            claim.epoch,
            claim.rank,
            claim.evidence.said(),
        );
        if !better || self.closed.is_some() || over_a_live_host {
            self.stats.claims_refused += 1;
            return;
        }
        if !listed {
            self.stats.claims_refused += 1;
            // A peer of the mesh that the list this client has does not name: the newest list
            // may not have reached it. Once its host is lost (now, or when it notices), it
            // says hello to the claimer (see `dial_unlisted_claimer`).
            self.following.unlisted_claimer = Some(peer);
            self.dial_unlisted_claimer(now);
            return;
        }
        if self.following.lost.take().is_none() {
            // Taken over before this client noticed the loss: the loss is noticed now.
            self.notice_loss(now);
        }
        self.link.resume_with(token);
        self.following.resume_tick = Some(claim.tick);
        self.following.follow_claimer(peer, claim.epoch, claim.rank, now);
        self.shadow.forget();
        // A hello said ahead to the claimer is answered on its session; else one is said now.
        let ahead = self.link.candidates.remove(&peer);
        self.link.candidates.clear();
        self.link.searching = false;
        self.link.silence.reset();
        // The claim may have come unreliably ahead of a reliable copy held up on a lossy link;
        // the hello goes both ways for the same reason.
        let session = ahead.unwrap_or_else(|| self.link.hello_both_ways(now));
        self.link.host = Some((peer, session));
    }

    /// A client that lost its host and heard a claim from a peer its list does not name says
    /// hello there with its token, as it would to every peer after dialing the room again,
    /// and follows the claimer only if that one hosts the match and welcomes it: the list
    /// naming the claimer may have been lost with the host's line.
    pub(super) fn dial_unlisted_claimer(&mut self, now: Duration) {
        let Some(token) = self.link.welcome.as_ref().map(|w| w.token) else { return };
        if self.following.lost.is_none() || self.link.host.is_some() || self.closed.is_some() {
            return;
        }
        let Some(peer) = self.following.unlisted_claimer.take() else { return };
        if self.link.candidates.contains_key(&peer) {
            // Said ahead already (no list had reached this client).
            self.stats.claims_dialed += 1;
            return;
        }
        if !self.peers.contains(&peer) {
            return;
        }
        self.link.resume_with(token);
        // Both ways, as to a listed claimer (see `on_claim`).
        self.link.dial(peer, now);
        self.stats.claims_dialed += 1;
    }
}
