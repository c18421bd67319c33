//! Host migration, the engine half: the log of what the sim applied, checkpoints and the shadow.
//!
//! The sim is deterministic, so a successor does not need the host's state ten times a
//! second: it needs a [`Checkpoint`] now and then and the [`LogBatch`]es of everything
//! applied since, which its [`Shadow`] replays tick by tick, checking the host's state hash
//! every 30 ticks.
//!
//! ```text
//!  host                                               successor
//!  Host::step ─► LogRecorder ─► LogBatch ─INPUT_LOG─► Shadow::apply ─► step, compare hash
//!  Host::serialize_state + MetaState ─► Checkpoint ─CHECKPOINT─► Shadow::from_checkpoint / offer
//! ```
//!
//! - [`log`]: [`LogEvent`], [`LogEntry`], [`LogBatch`] (the `INPUT_LOG` payload);
//! - [`checkpoint`]: [`Checkpoint`] and [`MetaState`] (the `CHECKPOINT` payload, LZ4);
//! - [`shadow`]: [`Shadow`] and [`Divergence`].
//!
//! What goes to whom and when (the succession list, streaming to the first successors)
//! is the [`Server`](crate::engine::server::Server)'s, configured by [`MigrationConfig`].

pub mod checkpoint;
pub mod log;
pub mod shadow;

use std::time::Duration;

pub use checkpoint::{Checkpoint, MetaState, VoteState};
pub use log::{LogBatch, LogEntry, LogEvent};
pub use shadow::{Divergence, Shadow};
use vimp_netcode::transport::PeerKey;

use crate::engine::container::ContainerError;
use crate::engine::schedule::HostError;
use crate::engine::state::StateError;

/// Why a migration payload could not be made, read or applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MigrationError {
    /// The dump container or its payload is bad.
    #[error("migration payload: {0}")]
    Dump(#[from] ContainerError),
    /// The LZ4 block is bad.
    #[error("checkpoint compression: {0}")]
    Compression(String),
    /// A checkpoint larger than the limit.
    #[error("checkpoint of {len} bytes exceeds the {max}-byte limit")]
    TooLarge {
        /// Its (declared) size.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The state dump could not be made or restored.
    #[error(transparent)]
    State(#[from] StateError),
    /// The shadow's host could not be made.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A checkpoint's init config does not read as one.
    #[error("checkpoint init config: {0}")]
    Config(String),
    /// The shadow's match panicked on what the host sent (a crafted or corrupt state that
    /// passed its checksums): the shadow is broken, and waits for a checkpoint to start over.
    #[error("the shadow's match panicked: {0}")]
    Panicked(String),
    /// Log entries are missing between the shadow and a batch.
    #[error("log gap: expected entry {expected}, got {got}")]
    Gap {
        /// The seq the shadow needed.
        expected: u64,
        /// The seq it got.
        got: u64,
    },
    /// A payload from another host's epoch.
    #[error("epoch {got}, following epoch {expected}")]
    Epoch {
        /// The shadow's epoch.
        expected: u32,
        /// The payload's.
        got: u32,
    },
    /// A logged step did not land on its tick.
    #[error("logged tick {expected}, the shadow is at {got}")]
    Tick {
        /// The logged tick.
        expected: u32,
        /// The shadow's tick after stepping.
        got: u32,
    },
}

/// How the [`Server`](crate::engine::server::Server) streams to its successors.
#[derive(Clone, Debug, PartialEq)]
pub struct MigrationConfig {
    /// Whether to log, rank successors and stream to them at all.
    pub enabled: bool,
    /// How many of the first successors get checkpoints and the log (2).
    pub successors: usize,
    /// Longest time between two checkpoints to a successor (30 s); there is one at every
    /// change of what only a checkpoint carries besides (a join, a leave, a spectator's
    /// choice, a vote), and whenever a successor's shadow asks. The log keeps a shadow in
    /// step between them (its hashes checked): a checkpoint is a burst on the reliable
    /// channel, which shares its link's congestion window with the snapshots.
    pub checkpoint_interval: Duration,
    /// How long a stream outlives its peer's place among the first successors while the
    /// peer stays connected (2 s).
    pub stream_grace: Duration,
    /// Shortest time between two log batches (25 ms; zero sends every update that stepped).
    pub log_interval: Duration,
    /// Ticks between two state hashes in the log (30).
    pub hash_interval: u32,
    /// Recent chat lines a checkpoint carries (32).
    pub recent_chat: usize,
    /// Peers that live in the host's own process (its local player): never successors.
    pub local_peers: Vec<PeerKey>,
}

impl Default for MigrationConfig {
    fn default() -> Self {
        MigrationConfig {
            enabled: true,
            successors: 2,
            checkpoint_interval: Duration::from_secs(30),
            stream_grace: Duration::from_secs(2),
            log_interval: Duration::from_millis(25),
            hash_interval: log::DEFAULT_HASH_INTERVAL,
            recent_chat: 32,
            local_peers: Vec::new(),
        }
    }
}
