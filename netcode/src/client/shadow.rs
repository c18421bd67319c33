//! What a successor's shadow of its host is fed from: the checkpoints put back together from
//! their parts, the log batches, and when the stream last came.

use std::collections::VecDeque;
use std::time::Duration;

use crate::migration::{CheckpointAssembler, MIN_REQUEST_INTERVAL, MigrationError, MigrationPayload};

/// How many migration payloads [`ClientCore::take_migration`](super::ClientCore::take_migration)
/// keeps for a caller that does not take them.
pub const MAX_QUEUED_MIGRATION: usize = 1024;

/// How recent a shadow's stream must be for a client its list does not name to take its turn
/// after the successors listed: longer than the host's longest timeout and a retransmission
/// of a log batch on a lossy line; far shorter than a stream stopped for good.
pub(super) const STREAM_FRESH: Duration = Duration::from_secs(2);

/// The stream a successor's process feeds its shadow of the host followed from (a whole
/// checkpoint, then log batches, and the host's handoff), queued for it, and what the client
/// knows of that shadow: whether it has one, and whether the host still streams to it.
#[derive(Debug, Default)]
pub(super) struct Shadow {
    /// The checkpoint parts from the host followed, put back together.
    checkpoints: CheckpointAssembler,
    /// Whether a whole checkpoint came from the host followed: this client (its node) keeps a
    /// shadow of it.
    pub(super) shadowed: bool,
    /// When the shadow's stream (a checkpoint or a log batch) last came: a shadow the host
    /// stopped streaming to (this client left its first successors) falls behind the match.
    streamed_at: Option<Duration>,
    /// The payloads not taken yet, oldest first (at most [`MAX_QUEUED_MIGRATION`]).
    queued: VecDeque<MigrationPayload>,
    /// When this client last asked for a checkpoint.
    requested: Option<Duration>,
}

impl Shadow {
    /// A checkpoint part from the host at `now`: the whole checkpoint once its last part came
    /// (the client keeps a shadow from then on).
    pub(super) fn checkpoint_part(
        &mut self,
        part: &[u8],
        now: Duration,
    ) -> Result<Option<MigrationPayload>, MigrationError> {
        let Some(bytes) = self.checkpoints.push(part)? else { return Ok(None) };
        self.shadowed = true;
        self.streamed_at = Some(now);
        Ok(Some(MigrationPayload::Checkpoint(bytes)))
    }

    /// A log batch from the host at `now`.
    pub(super) fn log(&mut self, batch: &[u8], now: Duration) -> MigrationPayload {
        self.streamed_at = Some(now);
        MigrationPayload::Log(batch.to_vec())
    }

    /// Whether this client keeps a shadow that the host still streamed to within
    /// [`STREAM_FRESH`] of `now`: one it stopped streaming to is behind the match.
    pub(super) fn fresh(&self, now: Duration) -> bool {
        self.shadowed && self.streamed_at.is_some_and(|t| now.saturating_sub(t) <= STREAM_FRESH)
    }

    /// A new host to follow: the old one's checkpoint parts, and the shadow they made, are of
    /// no use to it.
    pub(super) fn forget(&mut self) {
        self.checkpoints = CheckpointAssembler::new();
        self.shadowed = false;
        self.streamed_at = None;
    }

    /// Queues a payload for the caller; returns whether the oldest was dropped to make room.
    pub(super) fn queue(&mut self, payload: MigrationPayload) -> bool {
        let dropped = self.queued.len() == MAX_QUEUED_MIGRATION;
        if dropped {
            self.queued.pop_front();
        }
        self.queued.push_back(payload);
        dropped
    }

    /// The payloads queued, oldest first, taken.
    pub(super) fn take(&mut self) -> Vec<MigrationPayload> {
        self.queued.drain(..).collect()
    }

    /// Whether a checkpoint may be asked for at `now`: at most once per
    /// [`MIN_REQUEST_INTERVAL`].
    pub(super) fn may_request(&self, now: Duration) -> bool {
        self.requested.is_none_or(|at| now >= at + MIN_REQUEST_INTERVAL)
    }

    /// A checkpoint was asked for at `now`.
    pub(super) fn requested(&mut self, now: Duration) {
        self.requested = Some(now);
    }

    /// A new session (dialing the match again): the next request goes at once.
    pub(super) fn new_session(&mut self) {
        self.requested = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::migration::checkpoint_parts;

    #[test]
    fn a_whole_checkpoint_makes_a_shadow_fresh_while_the_stream_comes() {
        let ms = Duration::from_millis;
        let mut shadow = Shadow::default();
        let parts = checkpoint_parts(1, &[7; 100_000]).expect("parts");
        assert!(parts.len() > 1, "a checkpoint of several parts");
        for part in &parts[..parts.len() - 1] {
            assert_eq!(shadow.checkpoint_part(part, ms(0)).expect("a part"), None, "not whole yet");
        }
        assert!(!shadow.shadowed && !shadow.fresh(ms(0)));
        let whole = shadow.checkpoint_part(&parts[parts.len() - 1], ms(10)).expect("the last part");
        assert_eq!(whole, Some(MigrationPayload::Checkpoint(vec![7; 100_000])));
        assert!(shadow.shadowed);
        assert!(shadow.fresh(ms(10) + STREAM_FRESH) && !shadow.fresh(ms(11) + STREAM_FRESH));
        assert_eq!(shadow.log(b"batch", ms(3000)), MigrationPayload::Log(b"batch".to_vec()));
        assert!(shadow.fresh(ms(3000) + STREAM_FRESH), "a log batch keeps it fresh");
        shadow.forget();
        assert!(!shadow.shadowed && !shadow.fresh(ms(3000)), "a new host: no shadow of it");
        assert!(shadow.checkpoint_part(b"junk", ms(0)).is_err());
        let mut streamed_only = Shadow::default();
        streamed_only.log(b"batch", ms(0));
        assert!(!streamed_only.fresh(ms(0)), "a log without its checkpoint makes no shadow");
    }

    #[test]
    fn the_payloads_queue_up_to_the_limit_and_go_oldest_first() {
        let mut shadow = Shadow::default();
        for n in 0..MAX_QUEUED_MIGRATION {
            assert!(!shadow.queue(MigrationPayload::Log(n.to_be_bytes().to_vec())));
        }
        assert!(shadow.queue(MigrationPayload::Handoff(vec![1])), "the oldest gave way");
        let taken = shadow.take();
        assert_eq!(taken.len(), MAX_QUEUED_MIGRATION);
        assert_eq!(taken[0], MigrationPayload::Log(1usize.to_be_bytes().to_vec()));
        assert_eq!(taken.last(), Some(&MigrationPayload::Handoff(vec![1])));
        assert!(shadow.take().is_empty());
    }

    #[test]
    fn a_checkpoint_is_asked_for_at_most_once_an_interval() {
        let mut shadow = Shadow::default();
        assert!(shadow.may_request(Duration::ZERO));
        shadow.requested(Duration::from_secs(1));
        assert!(!shadow.may_request(Duration::from_secs(1) + MIN_REQUEST_INTERVAL - Duration::from_millis(1)));
        assert!(shadow.may_request(Duration::from_secs(1) + MIN_REQUEST_INTERVAL));
        shadow.new_session();
        assert!(shadow.may_request(Duration::from_secs(1)), "a new session asks at once");
    }
}
