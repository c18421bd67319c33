//! Who is in which room, each member's outbox, and when its socket was last heard: the one
//! registry of the signalling server. A join, a leave and a signal each touch one room; the
//! registry is never copied.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use axum::extract::ws::Message;
use matchbox_protocol::{JsonPeerEvent, PeerId};
use tokio::sync::mpsc;

use crate::signal::{RoomInfo, RoomMember};

/// Where the server puts what goes out on a member's websocket (its writer sends them in order).
pub(super) type Outbox = mpsc::Sender<Message>;

/// A member of a room.
#[derive(Debug)]
struct Member {
    outbox: Outbox,
    /// When its socket last said anything.
    heard: Instant,
}

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
}

fn text(event: &JsonPeerEvent) -> Message {
    Message::Text(event.to_string().into())
}

impl Rooms {
    /// `peer` joins `room`: the room's members are told (`NewPeer`), then it is one of them.
    pub(super) fn join(&mut self, peer: PeerId, room: &str, outbox: Outbox, now: Instant) {
        let members = self.rooms.entry(room.to_owned()).or_default();
        let news = text(&JsonPeerEvent::NewPeer(peer));
        for member in members.values() {
            // A member whose outbox is full misses the news, as it would a signal.
            let _ = member.outbox.try_send(news.clone());
        }
        members.insert(peer, Member { outbox, heard: now });
        self.room_of.insert(peer, room.to_owned());
    }

    /// `peer`'s socket said something.
    pub(super) fn heard(&mut self, peer: PeerId, now: Instant) {
        let Some(room) = self.room_of.get(&peer) else { return };
        if let Some(member) = self.rooms.get_mut(room).and_then(|m| m.get_mut(&peer)) {
            member.heard = now;
        }
    }

    /// `peer` leaves: the rest of its room is told (`PeerLeft`); an empty room is forgotten.
    pub(super) fn leave(&mut self, peer: PeerId) {
        let Some(room) = self.room_of.remove(&peer) else { return };
        let Some(members) = self.rooms.get_mut(&room) else { return };
        if members.remove(&peer).is_none() {
            return;
        }
        if members.is_empty() {
            self.rooms.remove(&room);
            return;
        }
        let news = text(&JsonPeerEvent::PeerLeft(peer));
        for member in members.values() {
            let _ = member.outbox.try_send(news.clone());
        }
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
    pub(super) fn peers(&self) -> usize {
        self.room_of.len()
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
        rooms.join(peer(1), "AAAA", a, now);
        rooms.join(peer(2), "BBBB", b, now);
        rooms.join(peer(3), "AAAA", c, now);
        assert_eq!(drain(&mut ra), [JsonPeerEvent::NewPeer(peer(3))]);
        assert_eq!(drain(&mut rb), []);
        assert_eq!(drain(&mut rc), [], "a newcomer hears of no one: the others call it");
        rooms.leave(peer(3));
        assert_eq!(drain(&mut ra), [JsonPeerEvent::PeerLeft(peer(3))]);
        assert_eq!(drain(&mut rb), []);
        rooms.leave(peer(1));
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
}
