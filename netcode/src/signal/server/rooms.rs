//! Who is in which room, each member's outbox, and when its socket was last heard: the one
//! registry of the signalling server. A join, a leave and a signal each touch one room; the
//! registry is never copied.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use axum::extract::ws::{CloseFrame, Message};
use matchbox_protocol::{JsonPeerEvent, PeerId};
use tokio::sync::mpsc;

use crate::signal::{RendezvousLoad, RoomInfo, RoomMember};

/// Where the server puts what goes out on a member's websocket (its writer sends them in order).
pub(super) type Outbox = mpsc::Sender<Message>;

/// A member of a room.
#[derive(Debug)]
struct Member {
    outbox: Outbox,
    /// When its socket last said anything.
    heard: Instant,
    /// Which of its sockets it is ([`Rooms::join`]).
    seat: Seat,
}

/// One socket's membership: a peer that joins again on another socket gets a new one, and the
/// old socket's leave no longer counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Seat(u64);

/// What could not be delivered ([`Rooms::relay`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Undelivered {
    /// No such peer in the sender's room (it left, or is in another room).
    NoPeer,
    /// Its outbox is full: it reads slower than it is written to.
    Full,
}

/// The rooms and their members.
#[derive(Debug, Default)]
pub(super) struct Rooms {
    /// Members by room, by peer id (ordered, so that a room lists the same way each time).
    rooms: HashMap<String, BTreeMap<PeerId, Member>>,
    /// Each member's room.
    room_of: HashMap<PeerId, String>,
    /// The last seat given.
    seats: u64,
}

fn text(event: &JsonPeerEvent) -> Message {
    Message::Text(event.to_string().into())
}

/// Closes the socket of `outbox`: its peer joined again on another one.
fn replaced(outbox: &Outbox) {
    let close = CloseFrame { code: 1000, reason: "this peer joined again on another socket".into() };
    let _ = outbox.try_send(Message::Close(Some(close)));
}

impl Rooms {
    /// `peer` joins `room` on the socket of `outbox`: the room's members are told (`NewPeer`),
    /// then it is one of them. A peer already in the room (one that joins again under its key
    /// after its socket was lost) takes its place on the new socket without the room hearing it
    /// leave: its links to the members stand, and a member that holds none calls it. Its old
    /// socket is closed. Already in another room, it leaves that one first.
    pub(super) fn join(&mut self, peer: PeerId, room: &str, outbox: Outbox, now: Instant) -> Seat {
        let elsewhere = self.room_of.get(&peer).filter(|r| r.as_str() != room);
        if let Some(member) = elsewhere.and_then(|old| self.rooms.get(old)).and_then(|m| m.get(&peer)) {
            let (seat, outbox) = (member.seat, member.outbox.clone());
            self.leave(peer, seat);
            replaced(&outbox);
        }
        self.seats += 1;
        let seat = Seat(self.seats);
        let members = self.rooms.entry(room.to_owned()).or_default();
        let news = text(&JsonPeerEvent::NewPeer(peer));
        for (_, member) in members.iter().filter(|(p, _)| **p != peer) {
            // A member whose outbox is full misses the news, as it would a signal.
            let _ = member.outbox.try_send(news.clone());
        }
        if let Some(old) = members.insert(peer, Member { outbox, heard: now, seat }) {
            replaced(&old.outbox);
        }
        self.room_of.insert(peer, room.to_owned());
        seat
    }

    /// `peer`'s socket said something.
    pub(super) fn heard(&mut self, peer: PeerId, now: Instant) {
        let Some(room) = self.room_of.get(&peer) else { return };
        if let Some(member) = self.rooms.get_mut(room).and_then(|m| m.get_mut(&peer)) {
            member.heard = now;
        }
    }

    /// `peer`'s socket of `seat` leaves: the rest of its room is told (`PeerLeft`); an empty room
    /// is forgotten. Nothing happens when the peer is on another socket now.
    pub(super) fn leave(&mut self, peer: PeerId, seat: Seat) {
        let Some(members) = self.remove(peer, seat) else { return };
        let news = text(&JsonPeerEvent::PeerLeft(peer));
        for member in members.values() {
            let _ = member.outbox.try_send(news.clone());
        }
    }

    /// As [`leave`](Self::leave), but the room is not told: the server is stopping, not the
    /// peer leaving (its links stand, and it joins the room again on the server that comes back).
    pub(super) fn forget(&mut self, peer: PeerId, seat: Seat) {
        self.remove(peer, seat);
    }

    /// Takes `peer`'s socket of `seat` out of its room: the members left, if any.
    fn remove(&mut self, peer: PeerId, seat: Seat) -> Option<&BTreeMap<PeerId, Member>> {
        let room = self.room_of.get(&peer)?;
        let members = self.rooms.get_mut(room)?;
        if members.get(&peer)?.seat != seat {
            return None;
        }
        members.remove(&peer);
        let room = self.room_of.remove(&peer)?;
        if self.rooms.get(&room).is_some_and(BTreeMap::is_empty) {
            self.rooms.remove(&room);
            return None;
        }
        self.rooms.get(&room)
    }

    /// `sender`'s signal to `receiver`, delivered only within `sender`'s room.
    pub(super) fn relay(&self, sender: PeerId, receiver: PeerId, data: serde_json::Value) -> Result<(), Undelivered> {
        let room = self.room_of.get(&sender).ok_or(Undelivered::NoPeer)?;
        let member = self.rooms.get(room).and_then(|m| m.get(&receiver)).ok_or(Undelivered::NoPeer)?;
        member.outbox.try_send(text(&JsonPeerEvent::Signal { sender, data })).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => Undelivered::Full,
            mpsc::error::TrySendError::Closed(_) => Undelivered::NoPeer,
        })
    }

    /// Who is in `room` now, and how long each socket has been silent.
    pub(super) fn info(&self, room: &str, now: Instant) -> RoomInfo {
        let members: Vec<RoomMember> = self
            .rooms
            .get(room)
            .into_iter()
            .flatten()
            .map(|(peer, m)| {
                let idle_ms = now.saturating_duration_since(m.heard).as_millis().min(u128::from(u64::MAX)) as u64;
                RoomMember { id: peer.0.to_string(), idle_ms }
            })
            .collect();
        RoomInfo { peers: members.len(), members }
    }

    /// How many peers are in rooms.
    /// Whether `peer`'s socket is in `room` now.
    pub(super) fn holds(&self, room: &str, peer: PeerId) -> bool {
        self.room_of.get(&peer).is_some_and(|r| r == room)
    }

    pub(super) fn peers(&self) -> usize {
        self.room_of.len()
    }

    /// How many rooms and peers there are.
    pub(super) fn load(&self) -> RendezvousLoad {
        RendezvousLoad { rooms: self.rooms.len(), peers: self.peers() }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn peer(n: u128) -> PeerId {
        PeerId(uuid::Uuid::from_u128(n))
    }

    fn outbox(capacity: usize) -> (Outbox, mpsc::Receiver<Message>) {
        mpsc::channel(capacity)
    }

    fn drain(rx: &mut mpsc::Receiver<Message>) -> Vec<JsonPeerEvent> {
        let mut events = Vec::new();
        while let Ok(Message::Text(t)) = rx.try_recv() {
            events.push(t.as_str().parse().expect("an event"));
        }
        events
    }

    #[test]
    fn news_of_a_join_and_a_leave_goes_to_the_room_alone() {
        let mut rooms = Rooms::default();
        let now = Instant::now();
        let ((a, mut ra), (b, mut rb), (c, mut rc)) = ((outbox(8)), (outbox(8)), (outbox(8)));
        let first = rooms.join(peer(1), "AAAA", a, now);
        rooms.join(peer(2), "BBBB", b, now);
        let third = rooms.join(peer(3), "AAAA", c, now);
        assert_eq!(drain(&mut ra), [JsonPeerEvent::NewPeer(peer(3))]);
        assert_eq!(drain(&mut rb), []);
        assert_eq!(drain(&mut rc), [], "a newcomer hears of no one: the others call it");
        rooms.leave(peer(3), third);
        assert_eq!(drain(&mut ra), [JsonPeerEvent::PeerLeft(peer(3))]);
        assert_eq!(drain(&mut rb), []);
        rooms.leave(peer(1), first);
        assert_eq!(rooms.info("AAAA", now).peers, 0);
        assert!(!rooms.rooms.contains_key("AAAA"), "an empty room is forgotten");
        assert_eq!(rooms.peers(), 1);
    }

    #[test]
    fn a_signal_reaches_its_receiver_in_the_senders_room_only() {
        let mut rooms = Rooms::default();
        let now = Instant::now();
        let ((a, _ra), (b, mut rb), (c, mut rc)) = (outbox(8), outbox(8), outbox(8));
        rooms.join(peer(1), "AAAA", a, now);
        rooms.join(peer(2), "AAAA", b, now);
        rooms.join(peer(3), "BBBB", c, now);
        drain(&mut rb);
        let data = serde_json::json!({"IceCandidate": "x"});
        assert_eq!(rooms.relay(peer(1), peer(2), data.clone()), Ok(()));
        assert_eq!(drain(&mut rb), [JsonPeerEvent::Signal { sender: peer(1), data: data.clone() }]);
        assert_eq!(rooms.relay(peer(1), peer(3), data.clone()), Err(Undelivered::NoPeer), "another room's peer");
        assert_eq!(drain(&mut rc), []);
        assert_eq!(rooms.relay(peer(9), peer(2), data), Err(Undelivered::NoPeer), "a sender in no room");
    }

    #[test]
    fn a_member_that_reads_no_more_misses_what_overflows_its_outbox() {
        let mut rooms = Rooms::default();
        let now = Instant::now();
        let ((a, _ra), (b, mut rb)) = (outbox(8), outbox(2));
        rooms.join(peer(1), "AAAA", a, now);
        rooms.join(peer(2), "AAAA", b, now);
        let data = serde_json::json!(1);
        assert_eq!(rooms.relay(peer(1), peer(2), data.clone()), Ok(()));
        assert_eq!(rooms.relay(peer(1), peer(2), data.clone()), Ok(()));
        assert_eq!(rooms.relay(peer(1), peer(2), data), Err(Undelivered::Full));
        assert_eq!(drain(&mut rb).len(), 2);
    }

    #[test]
    fn the_room_list_says_how_long_each_member_was_silent() {
        let mut rooms = Rooms::default();
        let t0 = Instant::now();
        let ((a, _ra), (b, _rb)) = (outbox(8), outbox(8));
        rooms.join(peer(1), "AAAA", a, t0);
        rooms.join(peer(2), "AAAA", b, t0);
        rooms.heard(peer(2), t0 + Duration::from_millis(700));
        let info = rooms.info("AAAA", t0 + Duration::from_millis(1000));
        let idle: Vec<u64> = info.members.iter().map(|m| m.idle_ms).collect();
        assert_eq!((info.peers, idle), (2, vec![1000, 300]));
    }

    fn closed(rx: &mut mpsc::Receiver<Message>) -> bool {
        matches!(rx.try_recv(), Ok(Message::Close(Some(_))))
    }

    #[test]
    fn a_peer_that_joins_again_takes_its_place_without_the_room_hearing_it_leave() {
        let mut rooms = Rooms::default();
        let now = Instant::now();
        let ((a, mut ra), (b, mut rb), (b2, mut rb2)) = (outbox(8), outbox(8), outbox(8));
        rooms.join(peer(1), "AAAA", a, now);
        let lost = rooms.join(peer(2), "AAAA", b, now);
        drain(&mut ra);
        let again = rooms.join(peer(2), "AAAA", b2, now);
        assert_eq!(drain(&mut ra), [JsonPeerEvent::NewPeer(peer(2))], "no PeerLeft: its links stand");
        assert!(closed(&mut rb), "its old socket is closed");
        assert_eq!(drain(&mut rb2), []);
        rooms.leave(peer(2), lost);
        assert_eq!(drain(&mut ra), [], "the old socket's end is no leave");
        assert_eq!(rooms.info("AAAA", now).peers, 2);
        let data = serde_json::json!(1);
        assert_eq!(rooms.relay(peer(1), peer(2), data.clone()), Ok(()));
        assert_eq!(drain(&mut rb2), [JsonPeerEvent::Signal { sender: peer(1), data }], "signals reach the new socket");
        rooms.leave(peer(2), again);
        assert_eq!(drain(&mut ra), [JsonPeerEvent::PeerLeft(peer(2))]);
        assert_eq!(rooms.peers(), 1);
    }

    #[test]
    fn a_peer_that_joins_another_room_leaves_its_first() {
        let mut rooms = Rooms::default();
        let now = Instant::now();
        let ((a, mut ra), (b, mut rb), (b2, _rb2), (c, mut rc)) = (outbox(8), outbox(8), outbox(8), outbox(8));
        rooms.join(peer(1), "AAAA", a, now);
        rooms.join(peer(2), "AAAA", b, now);
        rooms.join(peer(3), "BBBB", c, now);
        drain(&mut ra);
        rooms.join(peer(2), "BBBB", b2, now);
        assert_eq!(drain(&mut ra), [JsonPeerEvent::PeerLeft(peer(2))]);
        assert_eq!(drain(&mut rc), [JsonPeerEvent::NewPeer(peer(2))]);
        assert!(closed(&mut rb), "its old socket is closed");
        assert_eq!((rooms.info("AAAA", now).peers, rooms.info("BBBB", now).peers), (1, 2));
    }
}
