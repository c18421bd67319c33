//! The migration log: every input the sim applied, tick by tick, with a periodic state hash.
//!
//! The [`Host`](crate::engine::schedule::Host) driver records it once
//! [`Host::start_log`](crate::engine::schedule::Host::start_log) is called: one
//! [`LogEvent::Step`] per tick (the tick, the [`HostCommand`]s it applied in queue
//! order and, every `hash_interval` ticks, [`sim_hash`](crate::engine::state::sim_hash)
//! after the tick), one [`LogEvent::Load`] per map load between ticks and one
//! [`LogEvent::Chat`] per chat line the server broadcast
//! ([`Host::log_chat`](crate::engine::schedule::Host::log_chat)), in the order they
//! happened. Entries are numbered from 1 by a sequence number ([`LogEntry::seq`])
//! that a [`Checkpoint`](super::Checkpoint) names as the last entry its state includes,
//! so a checkpoint taken at any moment between two ticks lines up with the log.
//!
//! A [`LogBatch`] (consecutive entries, the first one's seq and the host's epoch) is the
//! payload of an `INPUT_LOG` frame: bincode through [`crate::engine::container`] (kind
//! [`LOG_KIND`], version [`LOG_VERSION`]), so garbage decodes to an error, never a panic.

use serde::{Deserialize, Serialize};

use crate::engine::container::{self, ContainerError, ContainerKind};
use crate::engine::map::MapConfig;
use crate::engine::players::HostCommand;

/// Magic of a log batch (`b"VMPL"`).
pub const LOG_KIND: ContainerKind = ContainerKind(*b"VMPL");

/// Format version of [`LogBatch`]; bump it with any change to its serialised shape.
pub const LOG_VERSION: u16 = 5;

/// Ticks between two state hashes in the log, by default.
pub const DEFAULT_HASH_INTERVAL: u32 = 30;

/// One thing the sim applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum LogEvent {
    /// A tick ran.
    Step {
        /// The tick's number (the host's tick after it).
        tick: u32,
        /// The commands applied at its start, in queue order.
        commands: Vec<HostCommand>,
        /// The host's [`sim_hash`](crate::engine::state::sim_hash) after the tick, on hash ticks.
        hash: Option<u64>,
    },
    /// A map was loaded between two ticks (whatever the outcome: a failed load is replayed
    /// to the same failure).
    Load(Box<MapConfig>),
    /// A chat line the server broadcast between two ticks (its `CHAT_DATA` JSON text): the
    /// sim ignores it, a shadow adds it to its recent chat.
    Chat(String),
}

/// One numbered log entry.
#[derive(Clone, Debug, PartialEq)]
pub struct LogEntry {
    /// Its sequence number, from 1, one more than the previous entry's.
    pub seq: u64,
    /// What happened.
    pub event: LogEvent,
}

/// Consecutive log entries, as sent in one `INPUT_LOG` frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogBatch {
    /// The epoch of the host that recorded them.
    pub epoch: u32,
    /// The seq of the first event (the others follow by one).
    pub first_seq: u64,
    /// The events, in order.
    pub events: Vec<LogEvent>,
}

impl LogBatch {
    /// A batch of consecutive `entries` (empty when there are none; entries out of sequence
    /// after the first are cut off, so a batch always holds a run).
    pub fn new(epoch: u32, entries: &[LogEntry]) -> LogBatch {
        let first_seq = entries.first().map_or(0, |e| e.seq);
        let events = entries
            .iter()
            .enumerate()
            .take_while(|(i, e)| e.seq == first_seq + *i as u64)
            .map(|(_, e)| e.event.clone())
            .collect();
        LogBatch { epoch, first_seq, events }
    }

    /// The numbered entries.
    pub fn entries(&self) -> impl Iterator<Item = LogEntry> + '_ {
        self.events
            .iter()
            .enumerate()
            .map(|(i, event)| LogEntry { seq: self.first_seq + i as u64, event: event.clone() })
    }

    /// The seq of the last event (`first_seq - 1` for an empty batch).
    pub fn last_seq(&self) -> u64 {
        (self.first_seq + self.events.len() as u64).saturating_sub(1)
    }

    /// The wire form.
    pub fn encode(&self) -> Result<Vec<u8>, ContainerError> {
        container::encode(LOG_KIND, LOG_VERSION, self)
    }

    /// Reads the wire form; any malformed input is an error.
    pub fn decode(bytes: &[u8]) -> Result<LogBatch, ContainerError> {
        let batch: LogBatch = container::decode(LOG_KIND, LOG_VERSION, bytes)?;
        if batch.first_seq == 0 && !batch.events.is_empty() {
            return Err(ContainerError::Payload("a log batch starts at seq 0".into()));
        }
        if batch.first_seq.checked_add(batch.events.len() as u64).is_none() {
            return Err(ContainerError::Payload("a log batch's seqs overflow".into()));
        }
        Ok(batch)
    }
}

/// The recorder the [`Host`](crate::engine::schedule::Host) driver keeps while logging (not part of any dump).
#[derive(Clone, Debug)]
pub(crate) struct LogRecorder {
    /// Ticks between hashes.
    pub(crate) hash_interval: u32,
    /// The seq of the last entry recorded.
    pub(crate) seq: u64,
    /// Entries not taken yet.
    pub(crate) entries: Vec<LogEntry>,
}

impl LogRecorder {
    pub(crate) fn new(hash_interval: u32) -> Self {
        LogRecorder { hash_interval: hash_interval.max(1), seq: 0, entries: Vec::new() }
    }

    pub(crate) fn record(&mut self, event: LogEvent) {
        self.seq += 1;
        self.entries.push(LogEntry { seq: self.seq, event });
    }

    pub(crate) fn hash_due(&self, tick: u32) -> bool {
        tick.is_multiple_of(self.hash_interval)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use vimp_netcode::input::{Aim, InputEvent, KeyAction, ViewTime};

    use super::*;
    use crate::engine::players::PlayerId;

    const MAP: &str = include_str!("../../../../maps/test-small.json");

    fn command() -> impl Strategy<Value = HostCommand> {
        let player = any::<u8>().prop_map(PlayerId);
        prop_oneof![
            (player.clone(), ".{0,12}", any::<Option<u8>>(), any::<bool>())
                .prop_map(|(player, name, team, bot)| HostCommand::Join { player, name, team, bot }),
            player.clone().prop_map(|player| HostCommand::Leave { player }),
            (player.clone(), any::<u8>()).prop_map(|(player, team)| HostCommand::SetTeam { player, team }),
            player.clone().prop_map(|player| HostCommand::Release { player }),
            (player.clone(), "[a-z]{0,16}").prop_map(|(player, name)| HostCommand::Rename { player, name }),
            (player.clone(), any::<u32>(), any::<bool>(), "[a-zA-Z]{0,10}").prop_map(|(player, seq, down, name)| {
                let action = if down { KeyAction::Down } else { KeyAction::Up };
                HostCommand::Input { player, event: InputEvent { seq, action, name } }
            }),
            (player.clone(), any::<u32>(), any::<u32>(), any::<u8>()).prop_map(|(player, seq, tick, frac)| {
                HostCommand::View { player, seq, view: ViewTime { tick, frac } }
            }),
            (player, any::<u32>(), proptest::option::of((-1e6f32..1e6, -1e6f32..1e6, any::<u8>()))).prop_map(
                |(player, seq, aim)| HostCommand::Aim {
                    player,
                    seq,
                    aim: aim.and_then(|(x, y, flags)| Aim::new(x, y, flags)),
                }
            ),
        ]
    }

    fn event() -> impl Strategy<Value = LogEvent> {
        prop_oneof![
            8 => (any::<u32>(), proptest::collection::vec(command(), 0..6), any::<Option<u64>>())
                .prop_map(|(tick, commands, hash)| LogEvent::Step { tick, commands, hash }),
            1 => Just(LogEvent::Load(Box::new(MapConfig::from_json("small", MAP).expect("map")))),
            2 => ".{0,40}".prop_map(LogEvent::Chat),
        ]
    }

    proptest! {
        #[test]
        fn batches_round_trip(epoch in any::<u32>(), first in 1..u64::MAX / 2, events in proptest::collection::vec(event(), 0..20)) {
            let batch = LogBatch { epoch, first_seq: first, events };
            let bytes = batch.encode().expect("encode");
            prop_assert_eq!(LogBatch::decode(&bytes).expect("decode"), batch);
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = LogBatch::decode(&bytes);
            // The same garbage behind a valid header and checksum reaches bincode itself.
            let framed = container::encode(LOG_KIND, LOG_VERSION, &serde_bytes_shim(&bytes)).expect("frame");
            let _ = LogBatch::decode(&framed);
        }
    }

    /// Raw bytes as a payload: a tuple of bytes serialises without a length prefix.
    fn serde_bytes_shim(bytes: &[u8]) -> impl Serialize + '_ {
        struct Raw<'a>(&'a [u8]);
        impl Serialize for Raw<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeTuple;
                let mut t = s.serialize_tuple(self.0.len())?;
                for b in self.0 {
                    t.serialize_element(b)?;
                }
                t.end()
            }
        }
        Raw(bytes)
    }

    #[test]
    fn a_batch_cut_or_flipped_is_an_error() {
        let batch = LogBatch {
            epoch: 3,
            first_seq: 10,
            events: vec![
                LogEvent::Step { tick: 5, commands: vec![HostCommand::Leave { player: PlayerId(2) }], hash: Some(7) },
                LogEvent::Load(Box::new(MapConfig::from_json("small", MAP).expect("map"))),
                LogEvent::Chat(r#"["hi","ann",1]"#.into()),
            ],
        };
        let bytes = batch.encode().expect("encode");
        for cut in 0..bytes.len() {
            assert!(LogBatch::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = bytes.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(LogBatch::decode(&bad).is_err());
        assert!(LogBatch::decode(b"").is_err());
    }

    #[test]
    fn a_batch_holds_a_run_of_entries() {
        let step = |tick| LogEvent::Step { tick, commands: vec![], hash: None };
        let entries = [
            LogEntry { seq: 4, event: step(1) },
            LogEntry { seq: 5, event: step(2) },
            LogEntry { seq: 7, event: step(3) },
        ];
        let batch = LogBatch::new(1, &entries);
        assert_eq!((batch.first_seq, batch.events.len(), batch.last_seq()), (4, 2, 5));
        assert_eq!(batch.entries().collect::<Vec<_>>(), entries[..2]);
        assert_eq!(LogBatch::new(1, &[]).events, []);
    }
}
