//! The versioned, checksummed binary container (the only module that names bincode).
//!
//! Everything the host persists or hands to a successor — the match's state dump (the
//! physics world, the game's state), whole checkpoints, log batches — goes through [`encode`] and [`decode`]. bincode 2 is
//! pinned at `=2.0.1` (upstream development has ended; 3.0.0 is a `compile_error!`
//! tombstone), so it lives behind this one module: swapping the codec later touches
//! nothing else.
//!
//! # Layout
//!
//! A container is an 18-byte header followed by the payload. All integers are
//! little-endian.
//!
//! | offset | size | field    | meaning                                                        |
//! |-------:|-----:|----------|----------------------------------------------------------------|
//! | 0      | 4    | magic    | the [`ContainerKind`]: what the payload is (`b"VMPS"`…)              |
//! | 4      | 2    | version  | the payload's format version, chosen by the caller (`u16`)     |
//! | 6      | 4    | length   | payload length in bytes (`u32`, at most [`MAX_CONTAINER_BYTES`])    |
//! | 10     | 8    | checksum | FNV-1a 64 of the payload bytes ([`fnv1a64`])                   |
//! | 18     | n    | payload  | `bincode::serde` with `bincode::config::standard()` (varints)   |
//!
//! # Decoding foreign bytes
//!
//! [`decode`] never panics and never allocates more than [`MAX_CONTAINER_BYTES`] on behalf
//! of the input: the header is checked first (magic, version, declared length against
//! the limit and against the bytes actually present, checksum), then the payload is
//! decoded with bincode's own limit set to the same bound, and it must consume the
//! payload exactly. The checksum catches accidental corruption, not forgery: a container
//! comes from a peer that was already trusted as host.
//!
//! # Versioning
//!
//! The version is the caller's: bump it whenever the serialised shape of the payload
//! type changes (a field added, removed or reordered; a dependency such as rapier
//! upgraded — bincode is not self-describing, so an old container does not decode into a
//! new layout). A mismatch is [`ContainerError::Version`], never a garbled decode.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// Largest payload [`encode`] writes and [`decode`] accepts: 64 MiB.
pub const MAX_CONTAINER_BYTES: usize = 64 * 1024 * 1024;

/// Size of the header that precedes the payload (see the module docs for the table).
pub const HEADER_LEN: usize = 4 + 2 + 4 + 8;

/// What a container holds: its 4-byte magic, the first bytes of the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContainerKind(pub [u8; 4]);

impl ContainerKind {
    /// A `Physics` world on its own (`b"VMPS"`).
    pub const PHYSICS: Self = Self(*b"VMPS");
    /// A full host checkpoint: physics, game state, meta, participants, rng, tick (`b"VMPC"`).
    pub const CHECKPOINT: Self = Self(*b"VMPC");

    /// The magic bytes as written at offset 0.
    pub const fn magic(self) -> [u8; 4] {
        self.0
    }
}

/// Why a container could not be written or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ContainerError {
    /// The input ends before the header or the declared payload does.
    #[error("container truncated: need {need} bytes, have {have}")]
    Truncated {
        /// Bytes needed to go on (header length, or header plus declared payload).
        need: usize,
        /// Bytes present.
        have: usize,
    },
    /// The magic is not the expected kind: these bytes are something else.
    #[error("not a {expected:?} container (magic {found:?})")]
    ForeignBytes {
        /// The magic found at offset 0.
        found: [u8; 4],
        /// The magic of the kind asked for.
        expected: [u8; 4],
    },
    /// The container was written by another format version.
    #[error("container format version {found}, expected {expected}")]
    Version {
        /// The version in the header.
        found: u16,
        /// The version the reader understands.
        expected: u16,
    },
    /// The payload does not match its checksum: corrupted in transit or in storage.
    #[error("container checksum mismatch: header says {stored:#018x}, payload hashes to {computed:#018x}")]
    Checksum {
        /// The checksum in the header.
        stored: u64,
        /// The checksum of the payload actually present.
        computed: u64,
    },
    /// Bytes follow the payload, or the payload decoded without using all of its bytes.
    #[error("{extra} unexpected bytes after the container payload")]
    TrailingBytes {
        /// How many bytes were left over.
        extra: usize,
    },
    /// The payload is (or claims to be) larger than [`MAX_CONTAINER_BYTES`].
    #[error("container payload of {len} bytes exceeds the {max}-byte limit")]
    TooLarge {
        /// The payload length (declared or produced).
        len: usize,
        /// The limit, [`MAX_CONTAINER_BYTES`].
        max: usize,
    },
    /// bincode could not decode the payload into the requested type.
    #[error("container payload does not decode: {0}")]
    Payload(String),
    /// bincode could not encode the value (a `Serialize` impl failed).
    #[error("value does not encode: {0}")]
    Encode(String),
}

/// bincode's configuration for every container: the standard (varint, little-endian) one,
/// with decoding limited to [`MAX_CONTAINER_BYTES`].
fn config() -> bincode::config::Configuration<
    bincode::config::LittleEndian,
    bincode::config::Varint,
    bincode::config::Limit<MAX_CONTAINER_BYTES>,
> {
    bincode::config::standard().with_limit::<MAX_CONTAINER_BYTES>()
}

/// Serialises `value` into a container of the given kind and format version.
///
/// Fails with [`ContainerError::TooLarge`] when the payload exceeds [`MAX_CONTAINER_BYTES`] and
/// with [`ContainerError::Encode`] when a `Serialize` impl fails.
pub fn encode<T: Serialize + ?Sized>(kind: ContainerKind, version: u16, value: &T) -> Result<Vec<u8>, ContainerError> {
    let payload = bincode::serde::encode_to_vec(value, config()).map_err(|e| ContainerError::Encode(e.to_string()))?;
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|_| payload.len() <= MAX_CONTAINER_BYTES)
        .ok_or(ContainerError::TooLarge { len: payload.len(), max: MAX_CONTAINER_BYTES })?;
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&kind.magic());
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&fnv1a64(&payload).to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Reads a container of the given kind and format version back into a `T`.
///
/// Checks, in order: magic ([`ContainerError::ForeignBytes`]), header present
/// ([`ContainerError::Truncated`]), version ([`ContainerError::Version`]), declared length
/// ([`ContainerError::TooLarge`], then [`ContainerError::Truncated`] or
/// [`ContainerError::TrailingBytes`]), checksum ([`ContainerError::Checksum`]), payload
/// ([`ContainerError::Payload`], or [`ContainerError::TrailingBytes`] if `T` did not use all of
/// it). Never panics, whatever `bytes` holds.
pub fn decode<T: DeserializeOwned>(
    kind: ContainerKind,
    expected_version: u16,
    bytes: &[u8],
) -> Result<T, ContainerError> {
    let header = read_header(kind, bytes)?;
    if header.version != expected_version {
        return Err(ContainerError::Version { found: header.version, expected: expected_version });
    }
    let payload = payload_of(&header, bytes)?;
    let (value, used) = bincode::serde::decode_from_slice::<T, _>(payload, config())
        .map_err(|e| ContainerError::Payload(e.to_string()))?;
    if used != payload.len() {
        return Err(ContainerError::TrailingBytes { extra: payload.len() - used });
    }
    Ok(value)
}

/// The format version written in a container's header, for readers that support several.
///
/// Checks the magic and that the header is complete; does not look at the payload.
pub fn peek_version(kind: ContainerKind, bytes: &[u8]) -> Result<u16, ContainerError> {
    read_header(kind, bytes).map(|h| h.version)
}

/// A parsed header.
struct Header {
    version: u16,
    len: usize,
    checksum: u64,
}

/// Parses and checks the magic and completeness of the header.
fn read_header(kind: ContainerKind, bytes: &[u8]) -> Result<Header, ContainerError> {
    let magic = bytes.first_chunk::<4>().ok_or(ContainerError::Truncated { need: HEADER_LEN, have: bytes.len() })?;
    if *magic != kind.magic() {
        return Err(ContainerError::ForeignBytes { found: *magic, expected: kind.magic() });
    }
    let header =
        bytes.first_chunk::<HEADER_LEN>().ok_or(ContainerError::Truncated { need: HEADER_LEN, have: bytes.len() })?;
    let (_, rest) = header.split_at(4);
    let (version, rest) = rest.split_at(2);
    let (len, checksum) = rest.split_at(4);
    // The splits above have fixed sizes, so these conversions cannot fail; defaulting
    // keeps this function free of panicking paths all the same.
    let version = u16::from_le_bytes(version.try_into().unwrap_or_default());
    let len = u32::from_le_bytes(len.try_into().unwrap_or_default());
    let checksum = u64::from_le_bytes(checksum.try_into().unwrap_or_default());
    // u32 always fits in usize on the targets we build for (32 and 64 bits).
    let len = usize::try_from(len).unwrap_or(usize::MAX);
    Ok(Header { version, len, checksum })
}

/// Checks the declared length and the checksum, and returns the payload slice.
fn payload_of<'a>(header: &Header, bytes: &'a [u8]) -> Result<&'a [u8], ContainerError> {
    if header.len > MAX_CONTAINER_BYTES {
        return Err(ContainerError::TooLarge { len: header.len, max: MAX_CONTAINER_BYTES });
    }
    let need = HEADER_LEN + header.len;
    if bytes.len() < need {
        return Err(ContainerError::Truncated { need, have: bytes.len() });
    }
    if bytes.len() > need {
        return Err(ContainerError::TrailingBytes { extra: bytes.len() - need });
    }
    let payload = &bytes[HEADER_LEN..];
    let computed = fnv1a64(payload);
    if computed != header.checksum {
        return Err(ContainerError::Checksum { stored: header.checksum, computed });
    }
    Ok(payload)
}

/// FNV-1a 64-bit, incrementally: a fixed, seedless hash for checksums and state hashes.
///
/// Unlike `std`'s `DefaultHasher` its output is specified (offset basis
/// `0xcbf29ce484222325`, prime `0x100000001b3`) and identical on every machine and
/// every run, so hashes can be compared across processes. Multi-byte values are fed
/// little-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv1a64(u64);

impl Fnv1a64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// A hasher that has seen no bytes.
    pub const fn new() -> Self {
        Self(Self::OFFSET_BASIS)
    }

    /// Feeds bytes.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    /// Feeds one byte.
    pub fn write_u8(&mut self, v: u8) {
        self.write(&[v]);
    }

    /// Feeds a `u32`, little-endian.
    pub fn write_u32(&mut self, v: u32) {
        self.write(&v.to_le_bytes());
    }

    /// Feeds a `u64`, little-endian.
    pub fn write_u64(&mut self, v: u64) {
        self.write(&v.to_le_bytes());
    }

    /// Feeds an `f32`'s bit pattern (so `0.0` and `-0.0`, or two NaNs, hash differently).
    pub fn write_f32(&mut self, v: f32) {
        self.write_u32(v.to_bits());
    }

    /// The hash of everything fed so far.
    pub const fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a64 {
    fn default() -> Self {
        Self::new()
    }
}

/// FNV-1a 64 of `bytes` in one call (see [`Fnv1a64`]).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = Fnv1a64::new();
    h.write(bytes);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::Deserialize;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Sample {
        tick: u32,
        name: String,
        pos: (f32, f32),
        tags: Vec<u16>,
        seed: Option<u64>,
    }

    fn sample() -> Sample {
        Sample { tick: 7, name: "box".to_owned(), pos: (1.5, -2.25), tags: vec![1, 300], seed: Some(42) }
    }

    const V: u16 = 3;

    #[test]
    fn fnv1a64_matches_the_published_vectors() {
        // From the FNV reference test suite (Fowler/Noll/Vo).
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        let mut h = Fnv1a64::new();
        h.write(b"foo");
        h.write(b"bar");
        assert_eq!(h.finish(), 0x8594_4171_f739_67e8, "incremental hashing equals one-shot");
    }

    #[test]
    fn round_trip() {
        let bytes = encode(ContainerKind::PHYSICS, V, &sample()).unwrap();
        assert_eq!(decode::<Sample>(ContainerKind::PHYSICS, V, &bytes), Ok(sample()));
    }

    #[test]
    fn header_layout_is_as_documented() {
        // A u32 of 5 is one varint byte under bincode's standard config.
        let bytes = encode(ContainerKind(*b"TEST"), 0x0102, &5u32).unwrap();
        assert_eq!(
            bytes,
            [
                b'T', b'E', b'S', b'T', // magic
                0x02, 0x01, // version, LE
                1, 0, 0, 0, // payload length, LE
                // FNV-1a 64 of [5]: (basis ^ 5) * prime, LE
                0x60, 0xaf, 0x01, 0x86, 0x4c, 0xb8, 0x63, 0xaf, //
                5,    // payload
            ]
        );
        assert_eq!(peek_version(ContainerKind(*b"TEST"), &bytes), Ok(0x0102));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = encode(ContainerKind::PHYSICS, V, &sample()).unwrap();
        for cut in 0..bytes.len() {
            let err = decode::<Sample>(ContainerKind::PHYSICS, V, &bytes[..cut]).unwrap_err();
            let need = if cut < HEADER_LEN { HEADER_LEN } else { bytes.len() };
            assert_eq!(err, ContainerError::Truncated { need, have: cut }, "cut at {cut}");
        }
    }

    #[test]
    fn a_flipped_payload_byte_fails_the_checksum() {
        let bytes = encode(ContainerKind::PHYSICS, V, &sample()).unwrap();
        for i in HEADER_LEN..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            let err = decode::<Sample>(ContainerKind::PHYSICS, V, &bad).unwrap_err();
            assert!(matches!(err, ContainerError::Checksum { .. }), "byte {i}: {err:?}");
        }
    }

    #[test]
    fn other_magic_is_foreign() {
        let bytes = encode(ContainerKind::CHECKPOINT, V, &sample()).unwrap();
        assert_eq!(
            decode::<Sample>(ContainerKind::PHYSICS, V, &bytes),
            Err(ContainerError::ForeignBytes { found: *b"VMPC", expected: *b"VMPS" })
        );
        assert!(matches!(
            decode::<Sample>(ContainerKind::PHYSICS, V, b"{\"json\": true, \"padding\": 1234567}"),
            Err(ContainerError::ForeignBytes { .. })
        ));
    }

    #[test]
    fn other_version_is_refused() {
        let bytes = encode(ContainerKind::PHYSICS, V + 1, &sample()).unwrap();
        assert_eq!(
            decode::<Sample>(ContainerKind::PHYSICS, V, &bytes),
            Err(ContainerError::Version { found: 4, expected: 3 })
        );
    }

    #[test]
    fn trailing_bytes_are_refused() {
        let mut bytes = encode(ContainerKind::PHYSICS, V, &sample()).unwrap();
        bytes.extend_from_slice(&[0, 0]);
        assert_eq!(
            decode::<Sample>(ContainerKind::PHYSICS, V, &bytes),
            Err(ContainerError::TrailingBytes { extra: 2 })
        );
    }

    #[test]
    fn a_payload_longer_than_its_type_is_trailing_bytes() {
        // A (u32, u32) payload read as a lone u32: checksum fine, one byte left over.
        let bytes = encode(ContainerKind::PHYSICS, V, &(9u32, 9u32)).unwrap();
        assert_eq!(decode::<u32>(ContainerKind::PHYSICS, V, &bytes), Err(ContainerError::TrailingBytes { extra: 1 }));
    }

    #[test]
    fn a_payload_of_the_wrong_type_is_a_payload_error() {
        let bytes = encode(ContainerKind::PHYSICS, V, &2u8).unwrap();
        assert!(matches!(decode::<bool>(ContainerKind::PHYSICS, V, &bytes), Err(ContainerError::Payload(_))));
    }

    #[test]
    fn a_huge_declared_length_is_too_large() {
        let mut bytes = encode(ContainerKind::PHYSICS, V, &sample()).unwrap();
        bytes[6..10].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            decode::<Sample>(ContainerKind::PHYSICS, V, &bytes),
            Err(ContainerError::TooLarge { len: u32::MAX as usize, max: MAX_CONTAINER_BYTES })
        );
    }

    #[test]
    fn a_payload_claiming_a_huge_vector_fails_without_allocating_it() {
        // Valid header and checksum around a varint length of 2^60 elements.
        let payload = [0xFFu8, 0, 0, 0, 0, 0, 0, 0x10];
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"VMPS");
        bytes.extend_from_slice(&V.to_le_bytes());
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&fnv1a64(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
        assert!(matches!(decode::<Vec<u64>>(ContainerKind::PHYSICS, V, &bytes), Err(ContainerError::Payload(_))));
    }

    /// Wraps arbitrary payload bytes in a valid header, so bincode itself sees garbage.
    fn framed(payload: &[u8]) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(b"VMPS");
        bytes.extend_from_slice(&V.to_le_bytes());
        bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&fnv1a64(payload).to_le_bytes());
        bytes.extend_from_slice(payload);
        bytes
    }

    proptest! {
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = decode::<Sample>(ContainerKind::PHYSICS, V, &bytes);
            let _ = decode::<Sample>(ContainerKind::PHYSICS, V, &framed(&bytes));
            let _ = decode::<Vec<String>>(ContainerKind::PHYSICS, V, &framed(&bytes));
        }

        #[test]
        fn round_trips(tick in any::<u32>(), name in ".{0,16}", x in any::<f32>(), tags in proptest::collection::vec(any::<u16>(), 0..8), seed in any::<Option<u64>>()) {
            let value = Sample { tick, name, pos: (x, -x), tags, seed };
            let bytes = encode(ContainerKind::CHECKPOINT, V, &value).unwrap();
            let back: Sample = decode(ContainerKind::CHECKPOINT, V, &bytes).unwrap();
            // Compare bit patterns: NaN != NaN.
            prop_assert_eq!(back.pos.0.to_bits(), value.pos.0.to_bits());
            prop_assert_eq!((back.tick, back.name, back.tags, back.seed), (value.tick, value.name, value.tags, value.seed));
        }
    }
}
