//! A client dialing the match again after a drop: whether it is, and what a successor that
//! gave up on its host keeps through its redials (see [Finding nobody
//! hosting](crate::client#a-successor-that-finds-nobody-hosting)).

use crate::transport::PeerKey;

/// What a successor knew of the host it gave up on (see [Finding nobody
/// hosting](crate::client#a-successor-that-finds-nobody-hosting)).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Orphaned {
    /// The host it gave up on.
    pub(super) host: Option<PeerKey>,
    /// That host's successors, in the order of their turns, under their old mesh keys.
    pub(super) successors: Vec<PeerKey>,
    /// This client's key in that mesh.
    pub(super) me: PeerKey,
}

/// What carries on from one session to the next while a client dials the match again
/// ([`ClientCore::reconnect`](super::ClientCore::reconnect)), until a host welcomes it.
#[derive(Debug, Default)]
pub(super) struct Redialing {
    /// Dialing again after a drop, until a welcome.
    under_way: bool,
    /// What this successor knew of a host it gave up on, while it dials the room again.
    orphaned: Option<Orphaned>,
}

impl Redialing {
    /// Whether the client is dialing again and no host welcomed it yet.
    pub(super) fn under_way(&self) -> bool {
        self.under_way
    }

    /// The client dials again.
    pub(super) fn start(&mut self) {
        self.under_way = true;
    }

    /// A host welcomed the client: someone hosts the match, and nothing is left to take over.
    /// Returns whether that ended a redial.
    pub(super) fn welcomed(&mut self) -> bool {
        self.orphaned = None;
        std::mem::take(&mut self.under_way)
    }

    /// The client gave up on its lost `host`, whose list was `successors`: if it is one of
    /// them (as `me`), it keeps what it knew, to take the match over should dialing the room
    /// again find nobody hosting it.
    pub(super) fn gave_up(&mut self, host: Option<PeerKey>, successors: &[PeerKey], me: Option<PeerKey>) {
        if let Some(me) = me.filter(|me| successors.contains(me)) {
            self.orphaned = Some(Orphaned { host, successors: successors.to_vec(), me });
        }
    }

    /// The host given up on and its successors, this client under its key `me` of the new
    /// mesh (the others keep the old keys: after a redial nobody else's is linked); `None`
    /// when this client gave up on no host as a successor.
    pub(super) fn orphan(&self, me: PeerKey) -> Option<(Option<PeerKey>, Vec<PeerKey>)> {
        let orphaned = self.orphaned.as_ref()?;
        let successors = orphaned.successors.iter().map(|p| if *p == orphaned.me { me } else { *p }).collect();
        Some((orphaned.host, successors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redial_is_under_way_until_a_welcome_ends_it_once() {
        let mut redialing = Redialing::default();
        assert!(!redialing.under_way());
        assert!(!redialing.welcomed(), "a first welcome ends no redial");
        redialing.start();
        redialing.start();
        assert!(redialing.under_way(), "a second attempt is the same redial");
        assert!(redialing.welcomed());
        assert!(!redialing.under_way());
        assert!(!redialing.welcomed(), "counted once");
    }

    #[test]
    fn a_successor_that_gave_up_keeps_its_place_across_a_redial_under_its_new_key() {
        let (host, list) = (Some(PeerKey(1)), [PeerKey(2), PeerKey(9), PeerKey(3)]);
        let mut redialing = Redialing::default();
        redialing.gave_up(host, &list, Some(PeerKey(4)));
        assert_eq!(redialing.orphan(PeerKey(42)), None, "not a successor: nothing to take over");
        redialing.gave_up(host, &list, None);
        assert_eq!(redialing.orphan(PeerKey(42)), None, "no key, no place");
        redialing.gave_up(host, &list, Some(PeerKey(9)));
        redialing.start();
        let expected = Some((host, vec![PeerKey(2), PeerKey(42), PeerKey(3)]));
        assert_eq!(redialing.orphan(PeerKey(42)), expected, "its place, under the new mesh's key");
        assert_eq!(redialing.orphan(PeerKey(43)).map(|(_, s)| s[1]), Some(PeerKey(43)), "each redial's own key");
        assert!(redialing.welcomed());
        assert_eq!(redialing.orphan(PeerKey(42)), None, "someone hosts: nothing left to take over");
    }
}
