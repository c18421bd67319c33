//! Finding the host and dialing again: a candidate's frames while the hello waits for an
//! answer, a join whose hello nobody answered, and dialing the match again after a drop.

use std::time::Duration;

use super::ClientCore;
use super::takeover::{Lost, ORPHAN_TURN};
use crate::frame::{self, Channel, op};
use crate::migration::CHECK_TIME;
use crate::transport::PeerKey;

/// A join whose hello no peer answered this long after the newest one linked gives up with
/// 4408 (see [`ClientCore::reconnect`]): the host answers in a round trip, and the hello is
/// said again every [`HELLO_REPEAT`](crate::session::HELLO_REPEAT).
pub const UNANSWERED_HELLO: Duration = Duration::from_secs(5);

impl ClientCore {
    /// A frame from a peer this client says hello to, none having answered yet: its session's,
    /// but for a fellow's check of the room, which a joiner answers too (see `on_host_check`),
    /// the answers to this client's own check and the peer's own hello (a successor it said
    /// hello to ahead of a claim), and a `CLAIM`, which says that peer hosts now: the hello
    /// goes there again at once, both ways, rather than at its next repeat, and the claim is
    /// heard as from any peer.
    pub(super) fn on_candidate_frame(&mut self, peer: PeerKey, channel: Channel, bytes: &[u8], now: Duration) {
        let opcode = frame::parse(bytes).ok().map(|f| f.opcode);
        match opcode {
            // A fellow's hello (said ahead to this client, a successor, while this client said
            // its own ahead there: their lists differ) is kept as from any fellow.
            Some(op::HOST_CHECK | op::HOST_SEEN | op::HELLO) => self.on_peer_frame(peer, channel, bytes, now),
            Some(op::CLAIM) => {
                if let Some(session) = self.link.candidates.get_mut(&peer) {
                    // Both ways, as to any claimer (see `on_claim`).
                    session.hello_again(now);
                    session.hello_unreliably();
                }
                self.on_peer_frame(peer, channel, bytes, now);
            }
            _ => {
                if let Some(session) = self.link.candidates.get_mut(&peer) {
                    session.handle_message(now, channel, bytes);
                }
            }
        }
    }

    /// Dials the match again after a drop (see [`reconnect`](super::reconnect)): a client that was welcomed and
    /// whose session ended ([`Self::closed`]) forgets its links and its host and says hello,
    /// with the session token of its slot, to every peer its driver's new transport reports;
    /// the host that answers gives the slot back (its team, score and tank). The inputs the
    /// host has not applied go again, and the first frame is a keyframe. The welcome, the
    /// chat and the figures carry on. Before a welcome it starts the join over (a join whose
    /// link to the host came up broken: the host saw no hello, 4408). Returns whether it
    /// dials (not while a welcomed session is up).
    pub fn reconnect(&mut self, now: Duration) -> bool {
        self.now = self.now.max(now);
        if !self.may_reconnect() {
            return false;
        }
        if let Some(token) = self.link.welcome.as_ref().map(|w| w.token) {
            self.link.resume_with(token);
        }
        self.closed = None;
        self.link.host = None;
        self.link.candidates.clear();
        self.peers.clear();
        self.following.redial();
        self.snapshots.new_session();
        self.link.links_reported = None;
        self.shadow.new_session();
        self.votes.clear();
        self.link.silence.reset();
        self.link.searching = true;
        self.redialing.start();
        self.stats.reconnect_attempts += 1;
        true
    }

    /// Whether [`Self::reconnect`] would dial: not while a welcomed session is up.
    pub fn may_reconnect(&self) -> bool {
        self.link.welcome.is_none() || self.closed.is_some()
    }

    /// Whether the client is dialing again after a drop and no host welcomed it yet.
    pub fn reconnecting(&self) -> bool {
        self.redialing.under_way()
    }

    /// A join (or a way back after a drop) whose hello nobody answered for
    /// [`UNANSWERED_HELLO`] since the newest peer linked is closed with 4408, like one the host
    /// closed for want of a hello: a link that came up broken one way (its data reaching one
    /// side only) is the likely cause, and a fresh transport the cure (its driver dials again,
    /// see [`Self::reconnect`]).
    pub(super) fn give_up_unanswered(&mut self, now: Duration) {
        let joining = self.link.welcome.is_none() || self.redialing.under_way();
        if joining
            && self.closed.is_none()
            && self.following.lost.is_none()
            && self.link.waiting_since().is_some_and(|at| now.saturating_sub(at) >= UNANSWERED_HELLO)
        {
            if self.redialing.under_way() && self.orphan_lost(now) {
                return;
            }
            self.link.candidates.clear();
            let reason = format!("no host answered the hello in {} s", UNANSWERED_HELLO.as_secs());
            self.closed = Some((crate::session::close::HEARTBEAT, reason));
        }
    }

    /// A successor that dialed the room again and whose hello nobody answered: nobody took
    /// the match over. With a rendezvous to ask, it counts its old host lost again on the new
    /// links (see [Finding nobody hosting](super#a-successor-that-finds-nobody-hosting)); its
    /// hello goes on being said. Returns whether it did.
    fn orphan_lost(&mut self, now: Duration) -> bool {
        let (Some(me), true) = (self.me, self.settings.witness) else { return false };
        let Some((host, successors)) = self.redialing.orphan(me) else { return false };
        let mut lost = Lost::new(now, host, successors, CHECK_TIME, None, None);
        (lost.turn, lost.room, lost.orphan) = (ORPHAN_TURN, self.room_without(host), true);
        self.following.lost = Some(lost);
        true
    }
}
