//! Host migration on the wire: the succession list, its ranking rule, checkpoint parts.
//!
//! The host publishes a [`Succession`] to every peer (`SUCCESSION` frames, on every
//! change) and streams to the first ones checkpoints (`CHECKPOINT`, in parts) and the log
//! (`INPUT_LOG`). What checkpoints and logs hold is the host crate's business; here they
//! are bytes.
//!
//! # Ranking
//!
//! [`rank`] orders the candidates: peers that are connected, past their handshake, play
//! (no spectators) and do not live in the host's own process. They are sorted by
//!
//! 1. their smoothed RTT to the host, in [`RTT_BUCKET_MS`] buckets (so that jitter does
//!    not reorder the list); peers without a sample yet come after those with one;
//! 2. then join order (who joined first ranks first);
//! 3. then peer key, so the order is total.
//!
//! # `SUCCESSION` payload (big-endian)
//!
//! | offset | size   | field   | meaning                                  |
//! |-------:|-------:|---------|------------------------------------------|
//! | 0      | 4      | `epoch` | the host's epoch (`u32`)                 |
//! | 4      | 1      | `n`     | number of successors (≤ [`MAX_SUCCESSORS`]) |
//! | 5      | 16 × n | `peers` | successors' peer keys (`u128`), best first |
//!
//! # `CHECKPOINT` payload (big-endian)
//!
//! A checkpoint of any size up to [`MAX_CHECKPOINT`] is split into parts of at most
//! [`MAX_PART_DATA`] bytes, one frame each (which the reliable channel chunks further):
//!
//! | offset | size | field   | meaning                                          |
//! |-------:|-----:|---------|--------------------------------------------------|
//! | 0      | 4    | `id`    | checkpoint id (`u32`), the same in all its parts |
//! | 4      | 2    | `index` | this part's position (`u16`), `0..count`         |
//! | 6      | 2    | `count` | number of parts (`u16`), `≥ 1`                   |
//! | 8      | rest | `data`  | the next slice of the checkpoint's bytes          |
//!
//! # `CLAIM` payload (big-endian)
//!
//! A successor that took the match over sends it to every peer before anything else:
//!
//! | offset | size | field   | meaning                                                 |
//! |-------:|-----:|---------|---------------------------------------------------------|
//! | 0      | 4    | `epoch` | the new host's epoch (`u32`): the old one plus one      |
//! | 4      | 1    | `rank`  | the claimant's place in the old succession list (`u8`)  |
//!
//! A client takes a claim only when it beats the host it follows by `(epoch, −rank)`:
//! a stale claim (an epoch not above the one known) or a lower-ranked one at the same
//! epoch is refused, so two claimants resolve to one, the best ranked.
//!
//! # `HANDOFF` payload (big-endian)
//!
//! A host that leaves gracefully sends, after a final log batch and checkpoint to its
//! successors, to every peer:
//!
//! | offset | size | field   | meaning                                  |
//! |-------:|-----:|---------|------------------------------------------|
//! | 0      | 4    | `epoch` | the leaving host's epoch (`u32`)          |
//! | 4      | 16   | `to`    | the successor's peer key (`u128`)         |
//!
//! # Checkpoint parts
//!
//! Parts come in order on the reliable channel: [`CheckpointAssembler`] takes index 0 as
//! the start of a new checkpoint (dropping one left incomplete) and every later part must
//! follow its predecessor. Decoders return errors, never panic.

use thiserror::Error;

use crate::transport::PeerKey;

/// Most successors a [`Succession`] lists.
pub const MAX_SUCCESSORS: usize = 32;

/// Width of the RTT buckets of the ranking rule, ms.
pub const RTT_BUCKET_MS: f64 = 20.0;

/// Largest checkpoint [`CheckpointAssembler`] puts together: 16 MiB.
pub const MAX_CHECKPOINT: usize = 16 * 1024 * 1024;

/// Size of a checkpoint part's header.
pub const PART_HEADER_LEN: usize = 4 + 2 + 2;

/// Most checkpoint bytes in one part (the frame stays well under the 256 KiB frame limit).
pub const MAX_PART_DATA: usize = 192 * 1024;

/// Why a migration frame was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum MigrationError {
    /// A `SUCCESSION` payload of the wrong length.
    #[error("succession list of {len} bytes does not match its count")]
    BadSuccession {
        /// The payload's size.
        len: usize,
    },
    /// More successors than [`MAX_SUCCESSORS`].
    #[error("{n} successors, at most {MAX_SUCCESSORS}")]
    TooManySuccessors {
        /// The count.
        n: usize,
    },
    /// A part shorter than its header, with no data, a zero count or an index past it.
    #[error("malformed checkpoint part")]
    BadPart,
    /// A part that does not follow the previous one.
    #[error("checkpoint part {index} of {id} out of order")]
    OutOfOrder {
        /// The checkpoint id.
        id: u32,
        /// The part's index.
        index: u16,
    },
    /// A `CLAIM` or `HANDOFF` payload of the wrong length.
    #[error("migration control payload of {len} bytes")]
    BadControl {
        /// The payload's size.
        len: usize,
    },
    /// A checkpoint above [`MAX_CHECKPOINT`] bytes.
    #[error("checkpoint of {len} bytes or more exceeds {MAX_CHECKPOINT}")]
    TooLarge {
        /// The size reached.
        len: usize,
    },
}

/// The host's succession list: who takes over, in order, if it goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Succession {
    /// The host's epoch.
    pub epoch: u32,
    /// The successors, best first.
    pub peers: Vec<PeerKey>,
}

impl Succession {
    /// The `SUCCESSION` payload (at most [`MAX_SUCCESSORS`] peers are written).
    pub fn encode(&self) -> Vec<u8> {
        let peers = &self.peers[..self.peers.len().min(MAX_SUCCESSORS)];
        let mut out = Vec::with_capacity(5 + 16 * peers.len());
        out.extend_from_slice(&self.epoch.to_be_bytes());
        out.push(peers.len() as u8);
        for p in peers {
            out.extend_from_slice(&p.0.to_be_bytes());
        }
        out
    }

    /// Reads a `SUCCESSION` payload.
    pub fn decode(bytes: &[u8]) -> Result<Succession, MigrationError> {
        let bad = MigrationError::BadSuccession { len: bytes.len() };
        let Some((&[e0, e1, e2, e3, n], rest)) = bytes.split_first_chunk::<5>() else { return Err(bad) };
        let n = n as usize;
        if n > MAX_SUCCESSORS {
            return Err(MigrationError::TooManySuccessors { n });
        }
        if rest.len() != 16 * n {
            return Err(bad);
        }
        let peers =
            rest.chunks_exact(16).map(|c| PeerKey(u128::from_be_bytes(c.try_into().unwrap_or_default()))).collect();
        Ok(Succession { epoch: u32::from_be_bytes([e0, e1, e2, e3]), peers })
    }
}

/// A successor's announcement that it took the match over (`CLAIM`, see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The new host's epoch.
    pub epoch: u32,
    /// Its place in the succession list it succeeded by (0 is the first successor).
    pub rank: u8,
}

impl Claim {
    /// The `CLAIM` payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.epoch.to_be_bytes().to_vec();
        out.push(self.rank);
        out
    }

    /// Reads a `CLAIM` payload.
    pub fn decode(bytes: &[u8]) -> Result<Claim, MigrationError> {
        match bytes {
            &[e0, e1, e2, e3, rank] => Ok(Claim { epoch: u32::from_be_bytes([e0, e1, e2, e3]), rank }),
            _ => Err(MigrationError::BadControl { len: bytes.len() }),
        }
    }

    /// Whether this claim beats a host at `epoch` with `rank`: a newer epoch, or the same
    /// epoch and a better (lower) rank.
    pub fn beats(&self, epoch: u32, rank: u8) -> bool {
        (self.epoch, std::cmp::Reverse(self.rank)) > (epoch, std::cmp::Reverse(rank))
    }
}

/// A leaving host's last word (`HANDOFF`, see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handoff {
    /// The leaving host's epoch.
    pub epoch: u32,
    /// The successor that takes over.
    pub to: PeerKey,
}

impl Handoff {
    /// The `HANDOFF` payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = self.epoch.to_be_bytes().to_vec();
        out.extend_from_slice(&self.to.0.to_be_bytes());
        out
    }

    /// Reads a `HANDOFF` payload.
    pub fn decode(bytes: &[u8]) -> Result<Handoff, MigrationError> {
        let bad = MigrationError::BadControl { len: bytes.len() };
        let Some((epoch, to)) = bytes.split_first_chunk::<4>() else { return Err(bad) };
        let to: [u8; 16] = to.try_into().map_err(|_| bad)?;
        Ok(Handoff { epoch: u32::from_be_bytes(*epoch), to: PeerKey(u128::from_be_bytes(to)) })
    }
}

/// A peer the host may rank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    /// The peer.
    pub peer: PeerKey,
    /// Its smoothed RTT to the host, ms, once measured.
    pub rtt_ms: Option<f64>,
    /// Its place in join order (lower joined earlier).
    pub joined: u64,
    /// Whether it may succeed at all (connected, a player, not in the host's process).
    pub eligible: bool,
}

/// The eligible candidates in succession order (see the module docs for the rule).
pub fn rank(candidates: &[Candidate]) -> Vec<PeerKey> {
    let bucket = |c: &Candidate| match c.rtt_ms {
        Some(ms) if ms.is_finite() => (ms.max(0.0) / RTT_BUCKET_MS).floor() as u64,
        _ => u64::MAX,
    };
    let mut eligible: Vec<&Candidate> = candidates.iter().filter(|c| c.eligible).collect();
    eligible.sort_by_key(|c| (bucket(c), c.joined, c.peer));
    eligible.into_iter().map(|c| c.peer).collect()
}

/// Splits checkpoint bytes into `CHECKPOINT` payloads (see the module docs).
pub fn checkpoint_parts(id: u32, bytes: &[u8]) -> Result<Vec<Vec<u8>>, MigrationError> {
    if bytes.len() > MAX_CHECKPOINT {
        return Err(MigrationError::TooLarge { len: bytes.len() });
    }
    let slices: Vec<&[u8]> = if bytes.is_empty() { vec![&[][..]] } else { bytes.chunks(MAX_PART_DATA).collect() };
    let count = slices.len() as u16;
    Ok(slices
        .into_iter()
        .enumerate()
        .map(|(i, data)| {
            let mut part = Vec::with_capacity(PART_HEADER_LEN + data.len());
            part.extend_from_slice(&id.to_be_bytes());
            part.extend_from_slice(&(i as u16).to_be_bytes());
            part.extend_from_slice(&count.to_be_bytes());
            part.extend_from_slice(data);
            part
        })
        .collect())
}

/// Puts checkpoint parts back together (one receiver per host).
#[derive(Debug, Default)]
pub struct CheckpointAssembler {
    current: Option<(u32, u16, u16, Vec<u8>)>,
}

impl CheckpointAssembler {
    /// A receiver with nothing in progress.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one `CHECKPOINT` payload; returns the checkpoint's bytes when it completes one.
    /// After an error nothing is in progress and the next index 0 starts afresh.
    pub fn push(&mut self, payload: &[u8]) -> Result<Option<Vec<u8>>, MigrationError> {
        let Some((&[i0, i1, i2, i3, x0, x1, c0, c1], data)) = payload.split_first_chunk::<PART_HEADER_LEN>() else {
            self.current = None;
            return Err(MigrationError::BadPart);
        };
        let (id, index, count) =
            (u32::from_be_bytes([i0, i1, i2, i3]), u16::from_be_bytes([x0, x1]), u16::from_be_bytes([c0, c1]));
        if count == 0 || index >= count || (data.is_empty() && count > 1) {
            self.current = None;
            return Err(MigrationError::BadPart);
        }
        if index == 0 {
            self.current = Some((id, 0, count, Vec::new()));
        }
        let Some((cur_id, next, cur_count, buf)) = self.current.as_mut() else {
            return Err(MigrationError::OutOfOrder { id, index });
        };
        if *cur_id != id || *next != index || *cur_count != count {
            self.current = None;
            return Err(MigrationError::OutOfOrder { id, index });
        }
        if buf.len() + data.len() > MAX_CHECKPOINT {
            let len = buf.len() + data.len();
            self.current = None;
            return Err(MigrationError::TooLarge { len });
        }
        buf.extend_from_slice(data);
        *next += 1;
        if *next < count {
            return Ok(None);
        }
        Ok(self.current.take().map(|(_, _, _, bytes)| bytes))
    }
}

/// A migration frame a client received, for the app to feed its shadow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MigrationPayload {
    /// A whole checkpoint (its parts put together).
    Checkpoint(Vec<u8>),
    /// A log batch (`INPUT_LOG`).
    Log(Vec<u8>),
    /// A handoff message (`HANDOFF`).
    Handoff(Vec<u8>),
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_rule_is_rtt_bucket_then_join_order_and_skips_the_ineligible() {
        let c = |peer, rtt_ms, joined, eligible| Candidate { peer: PeerKey(peer), rtt_ms, joined, eligible };
        let ranked = rank(&[
            c(1, Some(55.0), 0, true),
            c(2, Some(12.0), 3, true),
            c(3, Some(19.9), 1, true),
            c(4, None, 2, true),
            c(5, Some(1.0), 4, false),
            c(6, Some(41.0), 5, true),
        ]);
        // 3 and 2 share the 0–20 ms bucket: 3 joined first; 1 and 6 share 40–60 ms: 1 joined
        // first; 4 has no sample yet; 5 may not succeed.
        assert_eq!(ranked, [PeerKey(3), PeerKey(2), PeerKey(1), PeerKey(6), PeerKey(4)]);
    }

    #[test]
    fn a_claim_beats_an_older_epoch_or_a_worse_rank_only() {
        let c = Claim { epoch: 2, rank: 1 };
        assert!(c.beats(1, 0), "a newer epoch beats any rank");
        assert!(c.beats(2, 3), "the same epoch and a better rank");
        assert!(!c.beats(2, 1) && !c.beats(2, 0), "an equal or better host stays");
        assert!(!c.beats(3, 9), "a stale epoch never beats");
        assert_eq!(c.encode(), [0, 0, 0, 2, 1]);
        assert_eq!(Claim::decode(&[0, 0, 2]), Err(MigrationError::BadControl { len: 3 }));
        assert_eq!(Handoff::decode(&[0; 19]), Err(MigrationError::BadControl { len: 19 }));
        assert_eq!(Handoff { epoch: 7, to: PeerKey(9) }.encode().len(), 20);
    }

    #[test]
    fn succession_layout_is_as_documented() {
        let s = Succession { epoch: 0x0102_0304, peers: vec![PeerKey(5)] };
        let bytes = s.encode();
        assert_eq!(&bytes[..5], [1, 2, 3, 4, 1]);
        assert_eq!(bytes.len(), 21);
        assert_eq!(bytes[20], 5);
        assert_eq!(Succession::decode(&bytes), Ok(s));
        assert_eq!(Succession::decode(&bytes[..20]), Err(MigrationError::BadSuccession { len: 20 }));
        assert_eq!(Succession::decode(&[0, 0, 0, 0, 200]), Err(MigrationError::TooManySuccessors { n: 200 }));
    }

    #[test]
    fn a_big_checkpoint_goes_in_parts_and_comes_back() {
        let bytes: Vec<u8> = (0..(2 * MAX_PART_DATA + 10)).map(|i| (i % 251) as u8).collect();
        let parts = checkpoint_parts(9, &bytes).expect("parts");
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.len() <= PART_HEADER_LEN + MAX_PART_DATA));
        let mut a = CheckpointAssembler::new();
        assert_eq!(a.push(&parts[0]), Ok(None));
        assert_eq!(a.push(&parts[1]), Ok(None));
        assert_eq!(a.push(&parts[2]), Ok(Some(bytes.clone())));
        // Out of order: refused, and the next index 0 starts afresh.
        assert_eq!(a.push(&parts[1]), Err(MigrationError::OutOfOrder { id: 9, index: 1 }));
        assert_eq!(a.push(&parts[0]), Ok(None));
        assert_eq!(a.push(&parts[2]), Err(MigrationError::OutOfOrder { id: 9, index: 2 }));
        // A checkpoint left incomplete is dropped by the next one.
        let small = checkpoint_parts(10, b"tiny").expect("parts");
        assert_eq!(a.push(&parts[0]), Ok(None));
        assert_eq!(a.push(&small[0]), Ok(Some(b"tiny".to_vec())));
        assert_eq!(checkpoint_parts(1, b"").map(|p| p.len()), Ok(1));
        assert_eq!(CheckpointAssembler::new().push(&checkpoint_parts(1, b"").expect("parts")[0]), Ok(Some(vec![])));
    }

    proptest! {
        #[test]
        fn successions_round_trip(epoch in any::<u32>(), peers in proptest::collection::vec(any::<u128>(), 0..MAX_SUCCESSORS)) {
            let s = Succession { epoch, peers: peers.into_iter().map(PeerKey).collect() };
            prop_assert_eq!(Succession::decode(&s.encode()), Ok(s));
        }

        #[test]
        fn parts_round_trip(id in any::<u32>(), bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            let mut a = CheckpointAssembler::new();
            let mut out = None;
            for part in checkpoint_parts(id, &bytes).expect("parts") {
                out = a.push(&part).expect("in order");
            }
            prop_assert_eq!(out, Some(bytes));
        }

        #[test]
        fn claims_and_handoffs_round_trip(epoch in any::<u32>(), rank in any::<u8>(), to in any::<u128>()) {
            let c = Claim { epoch, rank };
            prop_assert_eq!(Claim::decode(&c.encode()), Ok(c));
            let h = Handoff { epoch, to: PeerKey(to) };
            prop_assert_eq!(Handoff::decode(&h.encode()), Ok(h));
        }

        #[test]
        fn garbage_never_panics(frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..8)) {
            let mut a = CheckpointAssembler::new();
            for f in &frames {
                let _ = Succession::decode(f);
                let _ = Claim::decode(f);
                let _ = Handoff::decode(f);
                let _ = a.push(f);
            }
        }
    }
}
