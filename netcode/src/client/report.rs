//! What a client tells its driver: the changes it went through ([`ClientChange`], polled
//! with [`ClientCore::poll_event`]) and its counters ([`ClientStats`]).

use super::*;

/// What changed for a client, for its app to say or show ([`ClientCore::poll_event`]); its
/// `Display` is the line a headless client prints.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientChange {
    /// The host welcomed this client into slot `player_id` as `nickname`.
    Welcomed {
        /// The slot.
        player_id: u8,
        /// The name the host gave it.
        nickname: String,
    },
    /// The mesh links open now number `peers`.
    Linked {
        /// Peers linked.
        peers: usize,
    },
    /// The host went silent, its link dropped or it handed off, at `at`.
    HostLost {
        /// When, on the client's clock.
        at: Duration,
    },
    /// A host is followed again at `at`: the old one spoke again, or a new one claimed.
    HostFound {
        /// When, on the client's clock.
        at: Duration,
    },
    /// A new host took the match over, at `epoch`.
    HostChanged {
        /// Its epoch.
        epoch: u32,
    },
}

impl std::fmt::Display for ClientChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientChange::Welcomed { player_id, nickname } => write!(f, "joined as player {player_id} ({nickname})"),
            ClientChange::Linked { peers } => write!(f, "linked to {peers} peer(s)"),
            ClientChange::HostLost { at } => write!(f, "lost the host at {:.3} s", at.as_secs_f64()),
            ClientChange::HostFound { at } => write!(f, "following a host again at {:.3} s", at.as_secs_f64()),
            ClientChange::HostChanged { epoch } => write!(f, "the host changed (epoch {epoch})"),
        }
    }
}

/// How many [`ClientChange`]s [`ClientCore::poll_event`] keeps for a caller that does not take them.
pub const MAX_QUEUED_CHANGES: usize = 64;

/// What [`ClientCore::poll_event`] last reported: changes are found by comparing with it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Reported {
    welcomed: bool,
    linked: usize,
    lost: bool,
    migrations: u32,
}

/// Figures of a client's life.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientStats {
    /// When the welcome arrived.
    pub welcomed_at: Option<Duration>,
    /// When the first snapshot arrived.
    pub first_snapshot_at: Option<Duration>,
    /// Snapshot frames decoded.
    pub snapshots: u64,
    /// Match configs received (`CONFIG_DATA`).
    pub configs: u32,
    /// Frames that did not decode.
    pub bad_snapshots: u64,
    /// Of the frames decoded, the delta frames (format 6).
    pub delta_frames: u64,
    /// Their bytes: what the host's byte budget for this client let through.
    pub delta_bytes: u64,
    /// Of those, the keyframes (written against no baseline).
    pub keyframes: u64,
    /// Delta frames written against a baseline this client no longer (or never) held: skipped,
    /// the next frame against a baseline it acknowledged fills the gap.
    pub missing_baselines: u64,
    /// Bytes received.
    pub bytes_in: u64,
    /// Bytes sent.
    pub bytes_out: u64,
    /// Migration frames received (succession lists, checkpoint parts, log batches, handoffs).
    pub migration_frames: u64,
    /// Migration frames that did not decode (counted and ignored: the sender is the host).
    pub bad_migration_frames: u64,
    /// Migration payloads dropped because the caller did not take them in time.
    pub migration_dropped: u64,
    /// Host changes this client went through (counted at the new host's first snapshot).
    pub migrations: u32,
    /// The epoch of the host followed.
    pub host_epoch: u32,
    /// When the host was last lost.
    pub host_lost_at: Option<Duration>,
    /// The last host change's resume time: host loss noticed → first snapshot from the new host.
    pub resume: Option<Duration>,
    /// The last host change as the player saw it: the lost host last heard → first snapshot
    /// from the new host (the silence before the loss was noticed, plus [`Self::resume`]).
    pub freeze: Option<Duration>,
    /// The last host change's rewind, ms of match time lost: the newest match time this client
    /// saw from the old host (its last snapshot's) minus the time of the tick the new host
    /// continues from (its `CLAIM`'s; without a claim — the successor's own player, a
    /// claimant that stepped down — its welcome's), at the host config's `engine.timeStepMs`
    /// per tick; 0 when nothing was lost.
    pub rewind_ms: Option<f64>,
    /// Claims refused: stale (an epoch not above the one known), lower-ranked, or from a peer
    /// outside the succession list.
    pub claims_refused: u64,
    /// Claimers the list did not name to whom this client, its host lost, said hello (the
    /// list it had may have been stale).
    pub claims_dialed: u64,
    /// Hellos said ahead to the first successor once the host was lost, before its claim
    /// (see [Hellos said ahead](crate::migration#hellos-said-ahead)).
    pub hellos_ahead: u64,
    /// Times the host went silent past the timeout and then spoke again before anyone took over.
    pub stalls_survived: u64,
    /// Times this client's process stopped hosting and the client went back onto the mesh
    /// ([`ClientCore::step_down`], [`ClientCore::follow_handoff`]).
    pub step_downs: u32,
    /// `@changeHost` votes this client called or took part in.
    pub host_votes: u32,
    /// Of those, the ones that passed (this client asked the host to step down).
    pub host_votes_passed: u32,
    /// `HOST_VOTE` and `HOST_BALLOT` frames refused: they did not decode or came out of
    /// place (another vote open, another epoch, a forged caller, a sender outside the
    /// electorate, or this client outside it: spectators and the host's own player).
    pub votes_refused: u64,
    /// Frames from a mesh peer that is not the host (nor a candidate still answering the
    /// hello) other than those a fellow client may send (`CLAIM`, the `@changeHost` vote, the
    /// check of the room before a claim and its answers, when they decode):
    /// a fellow client's `HANDOFF`, checkpoint, log, succession list or snapshot is refused.
    pub peer_frames_refused: u64,
    /// Rounds of `HOST_CHECK` this client sent the room before claiming (see [Before a
    /// claim](crate::migration#before-a-claim-asking-the-room)).
    pub host_checks: u32,
    /// Of those, the rounds that ended with no claim: the host played on for most of the
    /// room, or nobody answered. A successor that was only cut off (or stalled) holds here
    /// instead of taking the match over from a live host.
    pub takeovers_held: u32,
    /// `HOST_CHECK`s this client answered.
    pub host_checks_answered: u64,
    /// Answers of the rendezvous about a lost host that a check of the room took
    /// ([`ClientCore::witness`]).
    pub witness_answers: u32,
    /// Times this client dialed the match again after a drop ([`ClientCore::reconnect`]).
    pub reconnect_attempts: u32,
    /// Of those, the ones the host welcomed.
    pub reconnects: u32,
}

impl ClientCore {
    /// Queues what changed since the last turn ([`ClientChange`]).
    pub(super) fn note_changes(&mut self) {
        let mut changes = Vec::new();
        if !self.reported.welcomed
            && let Some(w) = &self.link.welcome
        {
            self.reported.welcomed = true;
            changes.push(ClientChange::Welcomed { player_id: w.player_id, nickname: w.nickname.clone() });
        }
        if self.peers.len() != self.reported.linked {
            self.reported.linked = self.peers.len();
            changes.push(ClientChange::Linked { peers: self.peers.len() });
        }
        if self.following.lost.is_some() != self.reported.lost {
            self.reported.lost = self.following.lost.is_some();
            let at = self.now;
            changes.push(if self.reported.lost {
                ClientChange::HostLost { at }
            } else {
                ClientChange::HostFound { at }
            });
        }
        if self.stats.migrations > self.reported.migrations {
            self.reported.migrations = self.stats.migrations;
            changes.push(ClientChange::HostChanged { epoch: self.stats.host_epoch });
        }
        for change in changes {
            if self.changes.len() == MAX_QUEUED_CHANGES {
                self.changes.pop_front();
            }
            self.changes.push_back(change);
        }
    }

    /// The next change since the last call, oldest first (at most [`MAX_QUEUED_CHANGES`] are
    /// kept): a welcome, the mesh links, the host lost and found, a new host.
    pub fn poll_event(&mut self) -> Option<ClientChange> {
        self.changes.pop_front()
    }
}
