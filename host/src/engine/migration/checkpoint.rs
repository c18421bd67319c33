//! Checkpoints: the host's state dump plus what the meta layer owns, compressed, for successors.
//!
//! A [`Checkpoint`] is everything a successor needs besides the log to continue the
//! match: the init config the match was made with (so the successor's host is built alike:
//! the same rules, not its own defaults), the host's state dump
//! ([`Host::serialize_state`]), the host's epoch, the tick
//! and the seq of the last [`LogEntry`](super::LogEntry) the state includes, and the
//! [`MetaState`] the world does not hold (the roster with its session tokens, names and
//! seats; spectators and whom they watch; recent chat lines; a vote in progress).
//!
//! # Wire form
//!
//! | offset | size | field    | meaning                                                      |
//! |-------:|-----:|----------|--------------------------------------------------------------|
//! | 0      | 4    | `raw`    | length of the uncompressed dump (`u32`, little-endian)       |
//! | 4      | rest | `block`  | an LZ4 block (`lz4_flex`) of the dump                        |
//!
//! The uncompressed bytes are a [`crate::engine::container`] container of kind
//! [`CHECKPOINT_KIND`], version [`CHECKPOINT_VERSION`]. [`Checkpoint::decode`] checks
//! the declared length against [`MAX_CHECKPOINT_BYTES`] before allocating, and the
//! block must decompress to exactly that length: garbage is an error, never a panic or a
//! huge allocation. On the network the bytes travel as `CHECKPOINT` frames, split into
//! parts by `vimp_netcode::migration`.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::engine::config::InitConfig;
use crate::engine::container::{self, ContainerKind};
use crate::engine::migration::MigrationError;
use crate::engine::players::PlayerId;
use crate::engine::roster::Roster;
use crate::engine::schedule::Host;

/// Magic of a checkpoint's uncompressed bytes (`b"VMPK"`).
pub const CHECKPOINT_KIND: ContainerKind = ContainerKind(*b"VMPK");

/// Format version of [`Checkpoint`]; bump it with any change to its serialised shape.
pub const CHECKPOINT_VERSION: u16 = 3;

/// Largest uncompressed checkpoint [`Checkpoint::decode`] accepts: 16 MiB.
pub const MAX_CHECKPOINT_BYTES: usize = 16 * 1024 * 1024;

/// A vote in progress, as the meta layer keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteState {
    /// The vote's name (what clients answer to).
    pub name: String,
    /// What is voted on (a map's name…).
    pub subject: String,
    /// Time left until it closes.
    pub remaining: Duration,
    /// Who said yes.
    pub yes: Vec<PlayerId>,
    /// Who said no.
    pub no: Vec<PlayerId>,
}

/// What the meta layer owns that the world does not: carried by every checkpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetaState {
    /// The slots: tokens, names, seats (connections are not carried: every slot waits for a resume).
    pub roster: Roster,
    /// Spectators' slots and the player each one watches.
    pub watching: Vec<(PlayerId, Option<PlayerId>)>,
    /// The most recent chat lines (their JSON text), oldest first.
    pub chat: Vec<String>,
    /// The vote in progress, if any.
    pub vote: Option<VoteState>,
}

impl Default for MetaState {
    fn default() -> Self {
        MetaState { roster: Roster::new(0, None, [0; 32]), watching: Vec::new(), chat: Vec::new(), vote: None }
    }
}

/// A host checkpoint (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The epoch of the host that took it.
    pub epoch: u32,
    /// The host's tick when it was taken (between ticks).
    pub tick: u32,
    /// The seq of the last log entry the state includes (0: none).
    pub log_seq: u64,
    /// The host's [`sim_hash`](crate::engine::state::sim_hash) at that point, checked by a
    /// shadow that reaches the same seq.
    pub hash: u64,
    /// The init config the host was made with ([`Host::init_config`]), as JSON.
    pub config: String,
    /// The host's state dump ([`Host::serialize_state`]).
    pub state: Vec<u8>,
    /// The meta layer's part.
    pub meta: MetaState,
}

impl Checkpoint {
    /// Takes a checkpoint of `host` (between ticks) with the meta layer's `meta`.
    pub fn capture(host: &mut Host, epoch: u32, meta: MetaState) -> Result<Checkpoint, MigrationError> {
        let state = host.serialize_state()?;
        let hash = host.sim_hash()?;
        let config = serde_json::to_string(host.init_config()).map_err(|e| MigrationError::Config(e.to_string()))?;
        Ok(Checkpoint { epoch, tick: host.tick(), log_seq: host.log_seq(), hash, config, state, meta })
    }

    /// The init config the host was made with.
    pub fn init_config(&self) -> Result<InitConfig, MigrationError> {
        serde_json::from_str(&self.config).map_err(|e| MigrationError::Config(e.to_string()))
    }

    /// The wire form: the dump container, LZ4-compressed behind its length.
    pub fn encode(&self) -> Result<Vec<u8>, MigrationError> {
        let raw = container::encode(CHECKPOINT_KIND, CHECKPOINT_VERSION, self)?;
        if raw.len() > MAX_CHECKPOINT_BYTES {
            return Err(MigrationError::TooLarge { len: raw.len(), max: MAX_CHECKPOINT_BYTES });
        }
        let block = lz4_flex::block::compress(&raw);
        let mut out = Vec::with_capacity(4 + block.len());
        out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        out.extend_from_slice(&block);
        Ok(out)
    }

    /// Reads the wire form; any malformed input is an error (see the module docs).
    pub fn decode(bytes: &[u8]) -> Result<Checkpoint, MigrationError> {
        let Some((len, block)) = bytes.split_first_chunk::<4>() else {
            return Err(MigrationError::Compression(format!("{} bytes, shorter than the length", bytes.len())));
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len > MAX_CHECKPOINT_BYTES {
            return Err(MigrationError::TooLarge { len, max: MAX_CHECKPOINT_BYTES });
        }
        let mut raw = vec![0; len];
        let got = lz4_flex::block::decompress_into(block, &mut raw)
            .map_err(|e| MigrationError::Compression(e.to_string()))?;
        if got != len {
            return Err(MigrationError::Compression(format!("{got} bytes decompressed, {len} declared")));
        }
        Ok(container::decode(CHECKPOINT_KIND, CHECKPOINT_VERSION, &raw)?)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use vimp_netcode::session::{Hello, SessionToken};
    use vimp_netcode::transport::PeerKey;

    use super::*;

    fn meta() -> MetaState {
        let mut roster = Roster::new(8, Some("pw"), [5; 32]);
        let hello = |name: &str| Hello { password: Some("pw".into()), ..Hello::new(name, "t") };
        roster.admit(PeerKey(1), &hello("ann"), Duration::ZERO, || SessionToken([7; 16])).expect("ann");
        roster.admit(PeerKey(2), &hello("bob"), Duration::ZERO, || SessionToken([9; 16])).expect("bob");
        roster.reserved = vec![PlayerId(0)];
        MetaState {
            roster,
            watching: vec![(PlayerId(2), Some(PlayerId(0)))],
            chat: vec![r#"["hi","ann",1]"#.into(), r#""s:1:bob""#.into()],
            vote: Some(VoteState {
                name: "mapChange".into(),
                subject: "Arena".into(),
                remaining: Duration::from_millis(7500),
                yes: vec![PlayerId(1)],
                no: vec![],
            }),
        }
    }

    fn checkpoint(state: Vec<u8>) -> Checkpoint {
        Checkpoint {
            epoch: 2,
            tick: 1234,
            log_seq: 1300,
            hash: 0x1234_5678_9abc,
            config: "{\"engine\":{}}".into(),
            state,
            meta: meta(),
        }
    }

    /// The roster's connections are not carried; everything else is.
    fn comparable(mut c: Checkpoint) -> Checkpoint {
        c.meta.roster.detach_all(None);
        c
    }

    #[test]
    fn round_trips_with_token_verifiers_names_and_the_vote() {
        let c = checkpoint((0..5000u32).map(|i| (i % 7) as u8).collect());
        let bytes = c.encode().expect("encode");
        assert!(bytes.len() < 2000, "repetitive state compresses: {} bytes", bytes.len());
        let mut back = Checkpoint::decode(&bytes).expect("decode");
        assert_eq!(back, comparable(c));
        // The verifiers take the tokens back into their slots.
        let resume = |token| Hello { resume_token: Some(token), password: Some("pw".into()), ..Hello::new("x", "t") };
        for (token, player) in [(SessionToken([7; 16]), PlayerId(0)), (SessionToken([9; 16]), PlayerId(1))] {
            let a = back.meta.roster.admit(PeerKey(9), &resume(token), Duration::ZERO, || SessionToken([0; 16]));
            assert_eq!(a.map(|a| (a.player, a.resumed)), Ok((player, true)));
        }
    }

    #[test]
    fn a_cut_or_flipped_checkpoint_is_an_error() {
        let bytes = checkpoint(vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10]).encode().expect("encode");
        for cut in 0..bytes.len() {
            assert!(Checkpoint::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            // A flip may survive LZ4 (a literal byte) but never the dump's checksum.
            assert!(Checkpoint::decode(&bad).is_err(), "flip at {i}");
        }
    }

    #[test]
    fn a_huge_declared_length_is_refused_before_allocating() {
        let mut bytes = u32::MAX.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[0x10, 1]);
        assert!(matches!(Checkpoint::decode(&bytes), Err(MigrationError::TooLarge { .. })));
    }

    proptest! {
        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512), len in 0u32..100_000) {
            let _ = Checkpoint::decode(&bytes);
            let mut framed = len.to_le_bytes().to_vec();
            framed.extend_from_slice(&bytes);
            let _ = Checkpoint::decode(&framed);
        }

        #[test]
        fn round_trips(epoch in any::<u32>(), tick in any::<u32>(), seq in any::<u64>(), state in proptest::collection::vec(any::<u8>(), 0..2048), chat in proptest::collection::vec(".{0,20}", 0..4)) {
            let mut c = checkpoint(state);
            c.epoch = epoch;
            c.tick = tick;
            c.log_seq = seq;
            c.meta.chat = chat;
            let back = Checkpoint::decode(&c.encode().expect("encode")).expect("decode");
            prop_assert_eq!(back, comparable(c));
        }
    }
}
