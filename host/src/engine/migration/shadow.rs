//! The successor's shadow: a host restored from a checkpoint and kept up to date by the log.
//!
//! A [`Shadow`] is made from a [`Checkpoint`] and then [applies](Shadow::apply) the
//! host's [`LogBatch`]es tick by tick: it pushes the logged commands, steps, loads the
//! logged maps, and at every logged hash compares its own
//! [`sim_hash`](crate::engine::state::sim_hash) with the host's. A mismatch is counted and
//! recorded ([`Divergence`]) and the shadow [wants a checkpoint](Shadow::wants_checkpoint):
//! the next one [offered](Shadow::offer) replaces its state. Entries it already holds are
//! skipped; a gap in the seqs is an error (and also wants a checkpoint). A successor does not
//! wait for the host's periodic checkpoint: while the shadow wants one it asks for it
//! (`CHECKPOINT_REQUEST`), and the host answers within a round trip.
//!
//! Logged chat lines join the meta part's recent chat (at most [`MAX_RECENT_CHAT`] are
//! kept), so a takeover after a crash has the chat said since the last checkpoint too.
//!
//! At takeover the shadow's host is the match ([`Shadow::into_parts`]): the state as of
//! the last log entry received.

use bevy::prelude::Plugin;

use crate::engine::config::InitConfig;
use crate::engine::migration::{Checkpoint, LogBatch, LogEntry, LogEvent, MetaState, MigrationError};
use crate::engine::schedule::Host;

/// Most divergences a shadow keeps the details of (the count goes on).
pub const MAX_DIVERGENCES: usize = 64;

/// Most recent chat lines a shadow keeps (the server that takes over keeps its own
/// [`MigrationConfig::recent_chat`](crate::engine::migration::MigrationConfig::recent_chat) of them).
pub const MAX_RECENT_CHAT: usize = 256;

/// A logged hash the shadow did not match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The log entry that carried the hash.
    pub seq: u64,
    /// The tick after which it was taken.
    pub tick: u32,
    /// The host's hash.
    pub expected: u64,
    /// The shadow's.
    pub got: u64,
}

/// A successor's copy of the match (see the module docs).
pub struct Shadow {
    host: Host,
    epoch: u32,
    seq: u64,
    meta: MetaState,
    rebases: u64,
    hashes_checked: u64,
    mismatches: u64,
    divergences: Vec<Divergence>,
    wants_checkpoint: bool,
    /// The chat lines applied from the log since the newest checkpoint, with their seqs: a
    /// checkpoint's meta part that does not replace the state keeps those past its seq.
    logged_chat: Vec<(u64, String)>,
    /// Its match panicked ([`Shadow::is_broken`]).
    broken: bool,
}

/// What a caught panic said.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

impl Shadow {
    /// A shadow continuing `checkpoint` in a fresh host built from `config` and `game`
    /// (the same as the host's).
    ///
    /// A state that panics the match on restore (it passed its checksums, but no honest host
    /// wrote it) is an error, not a panic.
    pub fn from_checkpoint(
        config: InitConfig,
        game: impl Plugin,
        checkpoint: &Checkpoint,
    ) -> Result<Shadow, MigrationError> {
        let restored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut shadow = Shadow::restore(config, game, checkpoint)?;
            shadow.check_checkpoint_hash(checkpoint)?;
            Ok(shadow)
        }));
        restored.unwrap_or_else(|panic| Err(MigrationError::Panicked(panic_message(&*panic))))
    }

    fn restore(config: InitConfig, game: impl Plugin, checkpoint: &Checkpoint) -> Result<Shadow, MigrationError> {
        let host = Host::restore(config, game, &checkpoint.state)?;
        let shadow = Shadow {
            host,
            epoch: checkpoint.epoch,
            seq: checkpoint.log_seq,
            meta: checkpoint.meta.clone(),
            rebases: 0,
            hashes_checked: 0,
            mismatches: 0,
            divergences: Vec::new(),
            wants_checkpoint: false,
            logged_chat: Vec::new(),
            broken: false,
        };
        Ok(shadow)
    }

    /// Runs `f` on the shadow, whose match may panic on a state no honest host wrote: the
    /// panic is caught, and the shadow is broken from then on (every call an error; its node
    /// drops it and starts over from the next checkpoint).
    fn guarded<T>(&mut self, f: impl FnOnce(&mut Shadow) -> Result<T, MigrationError>) -> Result<T, MigrationError> {
        if self.broken {
            return Err(MigrationError::Panicked("an earlier state panicked the shadow".into()));
        }
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self))) {
            Ok(result) => result,
            Err(panic) => {
                self.broken = true;
                self.wants_checkpoint = true;
                Err(MigrationError::Panicked(panic_message(&*panic)))
            }
        }
    }

    /// Whether the shadow's match panicked ([`MigrationError::Panicked`]): it cannot go on.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Replaces the shadow's state with `checkpoint`'s.
    pub fn rebase(&mut self, checkpoint: &Checkpoint) -> Result<(), MigrationError> {
        self.guarded(|shadow| shadow.rebase_unguarded(checkpoint))
    }

    fn rebase_unguarded(&mut self, checkpoint: &Checkpoint) -> Result<(), MigrationError> {
        self.host.load_state(&checkpoint.state)?;
        self.epoch = checkpoint.epoch;
        self.seq = checkpoint.log_seq;
        self.meta = checkpoint.meta.clone();
        self.logged_chat.clear();
        self.wants_checkpoint = false;
        self.rebases += 1;
        self.check_checkpoint_hash(checkpoint)
    }

    /// Offers a checkpoint that arrived: it replaces the state when the shadow wants one, is
    /// behind it or it comes from a newer epoch. Otherwise only its meta part is taken (the
    /// newest there is), and when the shadow is exactly at the checkpoint its hash is checked
    /// against the checkpoint's. Returns whether the state was replaced.
    pub fn offer(&mut self, checkpoint: &Checkpoint) -> Result<bool, MigrationError> {
        self.guarded(|shadow| shadow.offer_unguarded(checkpoint))
    }

    fn offer_unguarded(&mut self, checkpoint: &Checkpoint) -> Result<bool, MigrationError> {
        if checkpoint.epoch < self.epoch {
            return Err(MigrationError::Epoch { expected: self.epoch, got: checkpoint.epoch });
        }
        if self.wants_checkpoint || checkpoint.epoch > self.epoch || checkpoint.log_seq > self.seq {
            self.rebase_unguarded(checkpoint)?;
            return Ok(true);
        }
        self.meta = checkpoint.meta.clone();
        // Lines the shadow applied past the checkpoint stay (the checkpoint does not hold them).
        self.logged_chat.retain(|(seq, _)| *seq > checkpoint.log_seq);
        let later: Vec<String> = self.logged_chat.iter().map(|(_, line)| line.clone()).collect();
        self.push_chat(later);
        if checkpoint.log_seq == self.seq {
            self.check_checkpoint_hash(checkpoint)?;
        }
        Ok(false)
    }

    /// Applies a batch of the log (see the module docs); returns how many entries were new.
    pub fn apply(&mut self, batch: &LogBatch) -> Result<usize, MigrationError> {
        if batch.epoch != self.epoch {
            return Err(MigrationError::Epoch { expected: self.epoch, got: batch.epoch });
        }
        self.apply_entries(batch.entries())
    }

    /// Applies log entries in order; returns how many were new.
    pub fn apply_entries(&mut self, entries: impl IntoIterator<Item = LogEntry>) -> Result<usize, MigrationError> {
        self.guarded(|shadow| shadow.apply_unguarded(entries))
    }

    fn apply_unguarded(&mut self, entries: impl IntoIterator<Item = LogEntry>) -> Result<usize, MigrationError> {
        let mut applied = 0;
        for entry in entries {
            if entry.seq <= self.seq {
                continue;
            }
            if entry.seq != self.seq + 1 {
                self.wants_checkpoint = true;
                return Err(MigrationError::Gap { expected: self.seq + 1, got: entry.seq });
            }
            match entry.event {
                LogEvent::Step { tick, commands, hash } => {
                    for command in commands {
                        self.host.push(command);
                    }
                    self.host.step();
                    // What the sim says was said by the host it shadows: nothing to keep.
                    self.host.take_meta();
                    self.host.take_round_ends();
                    if self.host.tick() != tick {
                        self.wants_checkpoint = true;
                        return Err(MigrationError::Tick { expected: tick, got: self.host.tick() });
                    }
                    self.seq = entry.seq;
                    if let Some(expected) = hash {
                        let got = self.host.sim_hash()?;
                        self.check(Divergence { seq: entry.seq, tick, expected, got });
                    }
                }
                LogEvent::Load(map) => {
                    // A refused map is refused here too, leaving the same state.
                    let _ = self.host.load_map(*map);
                    self.seq = entry.seq;
                }
                LogEvent::Chat(line) => {
                    self.push_chat([line.clone()]);
                    self.logged_chat.push((entry.seq, line));
                    let keep = self.logged_chat.len().saturating_sub(MAX_RECENT_CHAT);
                    self.logged_chat.drain(..keep);
                    self.seq = entry.seq;
                }
            }
            applied += 1;
        }
        Ok(applied)
    }

    /// Appends chat lines to the meta part's recent chat, keeping the last [`MAX_RECENT_CHAT`].
    fn push_chat(&mut self, lines: impl IntoIterator<Item = String>) {
        let chat = &mut self.meta.chat;
        chat.extend(lines);
        let keep = chat.len().saturating_sub(MAX_RECENT_CHAT);
        chat.drain(..keep);
    }

    fn check_checkpoint_hash(&mut self, checkpoint: &Checkpoint) -> Result<(), MigrationError> {
        let got = self.host.sim_hash()?;
        self.check(Divergence { seq: checkpoint.log_seq, tick: checkpoint.tick, expected: checkpoint.hash, got });
        Ok(())
    }

    fn check(&mut self, d: Divergence) {
        self.hashes_checked += 1;
        if d.expected != d.got {
            self.mismatches += 1;
            self.wants_checkpoint = true;
            if self.divergences.len() < MAX_DIVERGENCES {
                self.divergences.push(d);
            }
        }
    }

    /// The seq of the last log entry applied (or the checkpoint's).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The shadow's tick.
    pub fn tick(&self) -> u32 {
        self.host.tick()
    }

    /// The epoch of the host it follows.
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// The meta part of the newest checkpoint taken, with the chat lines logged since.
    pub fn meta(&self) -> &MetaState {
        &self.meta
    }

    /// Whether the shadow diverged (a hash or a tick did not match) or missed log entries
    /// since its last checkpoint, and needs a fresh one: a successor asks the host for it
    /// (`vimp_netcode::client::Client::request_checkpoint`) while this holds.
    pub fn wants_checkpoint(&self) -> bool {
        self.wants_checkpoint
    }

    /// Hashes compared (logged ones and checkpoints').
    pub fn hashes_checked(&self) -> u64 {
        self.hashes_checked
    }

    /// Hashes that did not match.
    pub fn mismatches(&self) -> u64 {
        self.mismatches
    }

    /// The first [`MAX_DIVERGENCES`] mismatches.
    pub fn divergences(&self) -> &[Divergence] {
        &self.divergences
    }

    /// Times the state was replaced by a checkpoint after the first.
    pub fn rebases(&self) -> u64 {
        self.rebases
    }

    /// The shadow's host.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The shadow's host, mutably (to hash or dump it).
    pub fn host_mut(&mut self) -> &mut Host {
        &mut self.host
    }

    /// The match and its meta part, for a takeover.
    pub fn into_parts(self) -> (Host, MetaState) {
        (self.host, self.meta)
    }
}
