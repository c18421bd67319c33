//! The frame layer: opcodes, channels, the `[opcode][payload]` envelope and chunking of big frames.
//!
//! # Frames
//!
//! Every message between two peers is one frame: an opcode byte followed by the payload.
//! The opcodes are the spec's *ports* ([`op`] for server → client and engine-internal
//! frames, [`op::client`] for client → server); the payload's format belongs to the opcode.
//!
//! | offset | size          | field     | meaning                                  |
//! |--------|---------------|-----------|------------------------------------------|
//! | 0      | 1             | `opcode`  | what the payload is, see [`op`]          |
//! | 1      | `len − 1`     | `payload` | opcode-specific bytes, possibly empty    |
//!
//! [`parse`] splits a frame into a [`Frame`] (borrowing the payload) and [`encode`] writes
//! one. A frame is never empty, and never larger than [`MAX_FRAME`] (256 KiB) bytes.
//!
//! # Channels
//!
//! Every link carries two data channels, added in the same order by every peer
//! ([`Channel`]): `0` reliable and ordered (handshake, meta JSON, map, checkpoints,
//! migration control, chunks) and `1` unreliable and unordered (snapshots, inputs, pings).
//!
//! # Chunking
//!
//! The WebRTC layer silently drops a transport message over [`MAX_MESSAGE`] (65,536)
//! bytes, so a frame above that size is sent as several CHUNK frames ([`op::CHUNK`]) on the
//! reliable channel. Multi-byte integers are big-endian:
//!
//! | offset | size | field   | meaning                                                        |
//! |--------|------|---------|----------------------------------------------------------------|
//! | 0      | 1    | opcode  | [`op::CHUNK`] (`255`)                                          |
//! | 1      | 4    | `id`    | message id (`u32`), the same in every chunk of one frame       |
//! | 5      | 2    | `index` | this chunk's position (`u16`), `0..count`                      |
//! | 7      | 2    | `count` | number of chunks of the frame (`u16`), `≥ 1`                   |
//! | 9      | rest | `data`  | the next slice of the original frame bytes, never empty        |
//!
//! The original frame — opcode included — is the concatenation of the chunks' data in
//! index order. [`Chunker`] (one per sending peer) splits: chunk frames are at most
//! [`MAX_MESSAGE`] bytes ([`MAX_CHUNK_DATA`] bytes of data each) and ids increase by one per
//! chunked frame, wrapping at `u32::MAX`. [`Reassembler`] (one per remote peer) puts them
//! back together; chunks of different ids may interleave and indexes may arrive in any
//! order, but at most [`MAX_PARTIALS`] frames may be in progress at once.
//!
//! A frame never carries the CHUNK opcode itself: [`Chunker::split`] refuses one, and a
//! reassembled frame that starts with it is an error, so the output of a [`Reassembler`]
//! is always a whole, non-chunk frame.
//!
//! # Errors
//!
//! Wire input never panics: anything malformed is a [`FrameError`]. The caller counts it
//! and closes that peer with [`CLOSE_PROTOCOL_ERROR`] (4400); nothing else is lost. The
//! [`Reassembler`] itself stays usable after an error.
//!
//! ```
//! # use vimp_netcode::frame::{self, Chunker, Reassembler, op};
//! let mut frame = Vec::new();
//! frame::encode(op::MAP_DATA, &vec![7; 100_000], &mut frame);
//!
//! let mut chunker = Chunker::new();
//! let messages = chunker.split(&frame)?;
//! assert_eq!(messages.len(), 2);
//!
//! let mut reassembler = Reassembler::new();
//! assert_eq!(reassembler.push(&messages[0])?, None);
//! let whole = reassembler.push(&messages[1])?.expect("the last chunk completes the frame");
//! let parsed = frame::parse(&whole)?;
//! assert_eq!((parsed.opcode, parsed.payload.len()), (op::MAP_DATA, 100_000));
//! # Ok::<(), frame::FrameError>(())
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::bytes::Reader;

/// Largest transport message, in bytes: the WebRTC layer silently drops anything bigger.
pub const MAX_MESSAGE: usize = 65_536;

/// Largest frame, in bytes, before chunking and after reassembly; anything bigger is refused.
pub const MAX_FRAME: usize = 256 * 1024;

/// Size of a chunk frame's header: opcode, `u32` id, `u16` index, `u16` count.
pub const CHUNK_HEADER_LEN: usize = 1 + 4 + 2 + 2;

/// Largest data slice in one chunk frame, so that the chunk frame is at most [`MAX_MESSAGE`] bytes.
pub const MAX_CHUNK_DATA: usize = MAX_MESSAGE - CHUNK_HEADER_LEN;

/// Most chunked frames a [`Reassembler`] keeps in progress at once.
pub const MAX_PARTIALS: usize = 4;

/// Close code for a protocol violation (a frame that does not decode, a bad chunk, an oversized frame).
pub const CLOSE_PROTOCOL_ERROR: u16 = 4400;

/// Opcodes (the spec's ports).
///
/// The constants directly in this module are server → client ports and engine-internal
/// opcodes; client → server ports live in [`op::client`], since their numbers overlap with
/// server → client ones. Engine-internal opcodes are never sent or handled by the game
/// plugin and their numbers are reserved: they are never reused for anything else.
pub mod op {
    // ---- server → client (spec ports) ----

    /// Client config (engine defaults merged with the game's client config and prediction settings), JSON.
    pub const CONFIG_DATA: u8 = 0;
    /// The authorization form (`{ elems, params, texts }`), JSON.
    pub const AUTH_DATA: u8 = 1;
    /// Authorization errors, or `null` when accepted, JSON.
    pub const AUTH_RESULT: u8 = 2;
    /// The map, JSON.
    pub const MAP_DATA: u8 = 3;
    /// The spec's first game frame, once, bypassing the interpolation buffer:
    /// `[gameSnapshot, 0, serverTime, 0]`, JSON. Reserved: a vimp host never sends it, since a
    /// client's first snapshot (a format 5 frame, or a delta keyframe) is the whole world and
    /// the interpolation buffer shows it at once; the codec still reads it.
    pub const FIRST_SHOT_DATA: u8 = 4;
    /// A binary snapshot frame (v5), every snapshot tick.
    pub const SHOT_DATA: u8 = 5;
    /// The name of a system sound (`roundStart`, `victory`, `frag`, …), JSON.
    pub const SOUND_DATA: u8 = 6;
    /// An on-screen game message `[code, params?]`, JSON.
    pub const GAME_INFORM_DATA: u8 = 7;
    /// A "black screen" technical message `[code, params?]` (server full, loading, kicked); none hides it, JSON.
    pub const TECH_INFORM_DATA: u8 = 8;
    /// Clear all canvases, or those of one `setId`, JSON.
    pub const CLEAR: u8 = 11;
    /// The HUD panel: changed `key:value` strings, per user, JSON.
    pub const PANEL_DATA: u8 = 13;
    /// Statistics table delta, broadcast on change, JSON.
    pub const STAT_DATA: u8 = 14;
    /// A chat message, public or personal, JSON.
    pub const CHAT_DATA: u8 = 15;
    /// A vote (name, params, values), public or personal, JSON.
    pub const VOTE_DATA: u8 = 16;
    /// The active key set: `0` spectator, `1` player, JSON.
    pub const KEYSET_DATA: u8 = 17;
    /// Room participants' places in the global leaderboard, JSON.
    pub const ACCOLADES_DATA: u8 = 18;

    // ---- engine-internal (reserved, never reused) ----

    /// Connection handshake, first frame from a joining peer: protocol version, identity, session token.
    pub const HELLO: u8 = 32;
    /// Handshake accepted: the joining peer's slot, session token and the host's epoch.
    pub const WELCOME: u8 = 33;
    /// Handshake refused, with the reason; the peer is closed afterwards.
    pub const REJECT: u8 = 34;
    /// RTT probe (unreliable channel), answered by [`PONG`]: 16 bytes, a u32 nonce, the host's
    /// match time in ms (f64) and the smoothed RTT in ms (f32), big-endian.
    pub const PING: u8 = 35;
    /// Answer to a [`PING`]: its u32 nonce alone, 4 bytes (any other length is a protocol
    /// error, close 4400).
    pub const PONG: u8 = 36;
    /// Graceful close with a code and a short ASCII reason, the last frame on a link.
    pub const CLOSE: u8 = 37;
    /// Host migration: a full checkpoint (the dump) streamed to the successors.
    pub const CHECKPOINT: u8 = 40;
    /// Host migration: the per-tick log of what the sim applied, with a periodic state hash.
    pub const INPUT_LOG: u8 = 41;
    /// Host migration: the succession list the host publishes to everyone.
    pub const SUCCESSION: u8 = 42;
    /// Host migration: graceful handoff to the successor after a final checkpoint.
    pub const HANDOFF: u8 = 43;
    /// Host migration: a successor that took the match over announces itself (epoch, rank, tick).
    pub const CLAIM: u8 = 44;
    /// Host migration: a client's open mesh links (client → host), for the succession rule.
    pub const LINKS: u8 = 45;
    /// Host migration: a successor whose shadow diverged asks for a checkpoint (client → host, empty).
    pub const CHECKPOINT_REQUEST: u8 = 46;
    /// The `@changeHost` vote: a client calls it (client → clients, never to the host).
    pub const HOST_VOTE: u8 = 47;
    /// The `@changeHost` vote: a client's answer (client → clients, never to the host).
    pub const HOST_BALLOT: u8 = 48;
    /// The `@changeHost` vote passed: the host is asked to hand the match off (client → host).
    pub const STEP_DOWN: u8 = 49;
    /// The host's recent chat, after a welcome that resumed a slot (host → client, JSON; see
    /// [`ChatHistory`](crate::meta::ChatHistory)).
    pub const CHAT_HISTORY: u8 = 50;
    /// The newest snapshot frame a client decoded and keeps as a baseline (client → host,
    /// unreliable, a u32 seq, 4 bytes; any other length is a protocol error, close 4400). Sent
    /// with the client's input packets, at most once per frame; the host writes the client's
    /// format 6 frames against it ([`crate::delta`]).
    pub const FRAME_ACK: u8 = 51;
    /// Before a claim: a successor asks a fellow client whether the host it lost plays on
    /// (client → clients, never to the host; see [`crate::migration`]).
    pub const HOST_CHECK: u8 = 52;
    /// The answer to a [`HOST_CHECK`]: the epoch of the host the answerer follows and how long
    /// ago it last heard it (client → client).
    pub const HOST_SEEN: u8 = 53;
    /// One chunk of a frame above [`MAX_MESSAGE`](super::MAX_MESSAGE) bytes, see the [module docs](super).
    pub const CHUNK: u8 = 255;

    /// Client → server opcodes (the spec's client ports).
    pub mod client {
        /// Authorization form data plus the lobby identity token, JSON.
        pub const AUTH_RESPONSE: u8 = 1;
        /// Key input: a binary batch of events (what vimp clients send), or one event in the
        /// spec's text form `"seq:action:name"`; a host takes both ([`crate::input`]).
        pub const KEYS_DATA: u8 = 5;
        /// A chat message or chat command, JSON.
        pub const CHAT: u8 = 6;
        /// A vote answer `[voteName, value]` or a list request (`"maps"`, `"teams"`), JSON.
        pub const VOTE: u8 = 7;
    }
}

/// One of the two data channels of every link, in the order every peer adds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum Channel {
    /// Channel `0`: reliable and ordered — handshake, meta JSON, map, checkpoints, migration control, chunks.
    Reliable = 0,
    /// Channel `1`: unreliable and unordered — snapshots, inputs, pings.
    Unreliable = 1,
}

impl Channel {
    /// Both channels, by id.
    pub const ALL: [Channel; 2] = [Channel::Reliable, Channel::Unreliable];

    /// The channel's id (`0` reliable, `1` unreliable), its index among the link's data channels.
    pub const fn id(self) -> u8 {
        self as u8
    }

    /// The channel with that id, if any.
    pub const fn from_id(id: u8) -> Option<Self> {
        match id {
            0 => Some(Channel::Reliable),
            1 => Some(Channel::Unreliable),
            _ => None,
        }
    }

    /// Whether messages on this channel are delivered, once and in order.
    pub const fn is_reliable(self) -> bool {
        matches!(self, Channel::Reliable)
    }
}

/// Why a frame or a chunk was refused. The caller closes the peer with [`CLOSE_PROTOCOL_ERROR`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum FrameError {
    /// A frame with no byte at all: not even an opcode.
    #[error("empty frame: no opcode")]
    Empty,
    /// A frame (or a reassembled one, counted as its chunks arrive) above [`MAX_FRAME`] bytes.
    #[error("frame of {len} bytes or more exceeds the {MAX_FRAME}-byte limit")]
    TooLarge {
        /// The frame's size, or for a chunked frame the size reached when it went over.
        len: usize,
    },
    /// A frame carrying the CHUNK opcode where a whole frame was expected: given to
    /// [`Chunker::split`], or the result of a reassembly.
    #[error("a whole frame cannot start with the CHUNK opcode (255)")]
    NestedChunk,
    /// A message read as a chunk that does not carry the CHUNK opcode.
    #[error("opcode {opcode} is not CHUNK (255)")]
    NotAChunk {
        /// The message's opcode.
        opcode: u8,
    },
    /// A CHUNK message shorter than its header.
    #[error("chunk of {len} bytes is shorter than its {CHUNK_HEADER_LEN}-byte header")]
    TruncatedChunk {
        /// The message's size.
        len: usize,
    },
    /// A chunk whose count is zero.
    #[error("chunk {index} of message {id} has a count of 0")]
    ZeroCount {
        /// The message id.
        id: u32,
        /// The chunk's index.
        index: u16,
    },
    /// A chunk whose index is not below its count.
    #[error("chunk {index} of message {id} is out of range: count is {count}")]
    IndexOutOfRange {
        /// The message id.
        id: u32,
        /// The chunk's index.
        index: u16,
        /// The chunk's count.
        count: u16,
    },
    /// A chunk with no data.
    #[error("chunk {index} of message {id} carries no data")]
    EmptyChunk {
        /// The message id.
        id: u32,
        /// The chunk's index.
        index: u16,
    },
    /// A chunk whose count differs from the first chunk of the same message.
    #[error("chunk {index} of message {id} says count {got}, earlier chunks said {expected}")]
    CountMismatch {
        /// The message id.
        id: u32,
        /// The chunk's index.
        index: u16,
        /// The count of the chunks already received.
        expected: u16,
        /// The count of this chunk.
        got: u16,
    },
    /// A chunk received twice.
    #[error("chunk {index} of message {id} received twice")]
    DuplicateChunk {
        /// The message id.
        id: u32,
        /// The chunk's index.
        index: u16,
    },
    /// A chunk that would start one more message in progress than [`MAX_PARTIALS`].
    #[error("message {id} would be chunked message {} in progress, at most {MAX_PARTIALS} are", MAX_PARTIALS + 1)]
    TooManyPartials {
        /// The message id of the refused chunk.
        id: u32,
    },
}

/// A parsed frame: its opcode and a borrowed payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame<'a> {
    /// What the payload is, see [`op`].
    pub opcode: u8,
    /// The opcode-specific bytes, possibly empty.
    pub payload: &'a [u8],
}

impl Frame<'_> {
    /// The frame's encoded size: one opcode byte plus the payload.
    pub const fn len(&self) -> usize {
        1 + self.payload.len()
    }

    /// Always `false`: a frame has at least its opcode byte. Here for symmetry with [`len`](Self::len).
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Appends the frame's bytes to `out`, as [`encode`] does.
    pub fn encode(&self, out: &mut Vec<u8>) {
        encode(self.opcode, self.payload, out);
    }
}

/// Splits a frame into its opcode and payload.
///
/// Fails on an empty frame ([`FrameError::Empty`]) and on one above [`MAX_FRAME`] bytes
/// ([`FrameError::TooLarge`]). Any opcode is accepted: what an unknown opcode means is the
/// caller's decision.
pub fn parse(bytes: &[u8]) -> Result<Frame<'_>, FrameError> {
    if bytes.len() > MAX_FRAME {
        return Err(FrameError::TooLarge { len: bytes.len() });
    }
    match bytes.split_first() {
        Some((&opcode, payload)) => Ok(Frame { opcode, payload }),
        None => Err(FrameError::Empty),
    }
}

/// Appends the frame `[opcode][payload]` to `out`.
///
/// Sizes are not checked here: [`Chunker::split`] refuses a frame above [`MAX_FRAME`] bytes.
pub fn encode(opcode: u8, payload: &[u8], out: &mut Vec<u8>) {
    out.reserve(1 + payload.len());
    out.push(opcode);
    out.extend_from_slice(payload);
}

/// One parsed chunk frame, see the [module docs](self#chunking).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chunk<'a> {
    /// The chunked frame's message id.
    pub id: u32,
    /// This chunk's position, `0..count`.
    pub index: u16,
    /// Number of chunks of the frame.
    pub count: u16,
    /// This chunk's slice of the original frame.
    pub data: &'a [u8],
}

impl<'a> Chunk<'a> {
    /// Reads a chunk frame (opcode [`op::CHUNK`] included) and checks it on its own:
    ///
    /// * empty: [`FrameError::Empty`]; another opcode: [`FrameError::NotAChunk`];
    /// * shorter than [`CHUNK_HEADER_LEN`]: [`FrameError::TruncatedChunk`];
    /// * count `0`: [`FrameError::ZeroCount`];
    /// * index `≥ count`: [`FrameError::IndexOutOfRange`];
    /// * no data: [`FrameError::EmptyChunk`].
    ///
    /// Checks that need the other chunks of the frame are the [`Reassembler`]'s.
    pub fn parse(message: &'a [u8]) -> Result<Self, FrameError> {
        match message.first() {
            None => return Err(FrameError::Empty),
            Some(&op::CHUNK) => {}
            Some(&opcode) => return Err(FrameError::NotAChunk { opcode }),
        }
        let mut r = Reader::new(&message[1..]);
        let (Ok(id), Ok(index), Ok(count)) = (r.u32("chunk id"), r.u16("chunk index"), r.u16("chunk count")) else {
            return Err(FrameError::TruncatedChunk { len: message.len() });
        };
        let data = r.rest();
        if count == 0 {
            return Err(FrameError::ZeroCount { id, index });
        }
        if index >= count {
            return Err(FrameError::IndexOutOfRange { id, index, count });
        }
        if data.is_empty() {
            return Err(FrameError::EmptyChunk { id, index });
        }
        Ok(Chunk { id, index, count, data })
    }

    /// Appends the chunk frame (header then data) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(CHUNK_HEADER_LEN + self.data.len());
        out.push(op::CHUNK);
        out.extend_from_slice(&self.id.to_be_bytes());
        out.extend_from_slice(&self.index.to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        out.extend_from_slice(self.data);
    }
}

/// The sending side of chunking: turns a frame into the transport messages that carry it.
///
/// One per sending peer (ids only need to be unique per link, but one counter for all
/// links is fine too). Messages from [`split`](Self::split) go on [`Channel::Reliable`], in order.
#[derive(Debug, Clone, Default)]
pub struct Chunker {
    next_id: u32,
}

impl Chunker {
    /// A chunker whose first chunked frame gets id `0`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A chunker whose first chunked frame gets id `id` (tests, or resuming a counter).
    pub fn with_first_id(id: u32) -> Self {
        Self { next_id: id }
    }

    /// The id the next chunked frame will get.
    pub fn next_id(&self) -> u32 {
        self.next_id
    }

    /// The transport messages for `frame`: the frame itself when it is at most
    /// [`MAX_MESSAGE`] bytes, otherwise its chunk frames in index order, each at most
    /// [`MAX_MESSAGE`] bytes. Only a chunked frame uses up an id.
    ///
    /// Fails on an empty frame, one above [`MAX_FRAME`] bytes, or one whose opcode is
    /// [`op::CHUNK`] (which the receiver would mistake for a chunk).
    pub fn split(&mut self, frame: &[u8]) -> Result<Vec<Vec<u8>>, FrameError> {
        match frame.first() {
            None => return Err(FrameError::Empty),
            Some(&op::CHUNK) => return Err(FrameError::NestedChunk),
            Some(_) => {}
        }
        if frame.len() > MAX_FRAME {
            return Err(FrameError::TooLarge { len: frame.len() });
        }
        if frame.len() <= MAX_MESSAGE {
            return Ok(vec![frame.to_vec()]);
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let count = frame.len().div_ceil(MAX_CHUNK_DATA);
        // MAX_FRAME / MAX_CHUNK_DATA is about 4, far below u16::MAX.
        let count_u16 = u16::try_from(count).map_err(|_| FrameError::TooLarge { len: frame.len() })?;
        let messages = frame
            .chunks(MAX_CHUNK_DATA)
            .zip(0..count_u16)
            .map(|(data, index)| {
                let mut message = Vec::with_capacity(CHUNK_HEADER_LEN + data.len());
                Chunk { id, index, count: count_u16, data }.encode(&mut message);
                message
            })
            .collect();
        Ok(messages)
    }
}

/// A chunked frame in progress.
#[derive(Debug, Clone)]
struct Partial {
    count: u16,
    /// Data bytes received so far.
    len: usize,
    /// Received chunks' data by index.
    parts: BTreeMap<u16, Vec<u8>>,
}

/// The receiving side of chunking: turns transport messages back into whole frames.
///
/// One per remote peer, fed every message of that peer's reliable channel in order (and
/// the unreliable channel's messages too, if convenient: a non-CHUNK message just passes
/// through). Memory is bounded: at most [`MAX_PARTIALS`] frames in progress, each at most
/// [`MAX_FRAME`] bytes.
///
/// After an error the caller closes the peer with [`CLOSE_PROTOCOL_ERROR`]. The
/// reassembler stays usable: an error discards the frame in progress that the bad chunk
/// names (if any) and leaves every other one untouched.
#[derive(Debug, Clone, Default)]
pub struct Reassembler {
    partials: BTreeMap<u32, Partial>,
}

impl Reassembler {
    /// An empty reassembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of chunked frames in progress.
    pub fn partials(&self) -> usize {
        self.partials.len()
    }

    /// Data bytes held for frames in progress.
    pub fn buffered_bytes(&self) -> usize {
        self.partials.values().map(|p| p.len).sum()
    }

    /// Forgets every frame in progress.
    pub fn clear(&mut self) {
        self.partials.clear();
    }

    /// Takes one transport message.
    ///
    /// A non-CHUNK message is a whole frame and is returned at once (empty:
    /// [`FrameError::Empty`]; above [`MAX_FRAME`] bytes: [`FrameError::TooLarge`]). A CHUNK
    /// message is checked ([`Chunk::parse`]) and stored; `Ok(None)` until the last missing
    /// chunk of its frame arrives, which returns the whole frame. A chunk is refused when
    /// its count differs from its frame's earlier chunks, when it is a duplicate, when it
    /// would take its frame above [`MAX_FRAME`] bytes (checked before buffering it), when it
    /// would start a frame beyond [`MAX_PARTIALS`] in progress, or when a complete frame
    /// would start with the CHUNK opcode.
    pub fn push(&mut self, message: &[u8]) -> Result<Option<Vec<u8>>, FrameError> {
        match message.first() {
            None => return Err(FrameError::Empty),
            Some(&op::CHUNK) => {}
            Some(_) if message.len() > MAX_FRAME => return Err(FrameError::TooLarge { len: message.len() }),
            Some(_) => return Ok(Some(message.to_vec())),
        }
        let chunk = match Chunk::parse(message) {
            Ok(chunk) => chunk,
            Err(error) => {
                if let Some(id) = chunk_id(message) {
                    self.partials.remove(&id);
                }
                return Err(error);
            }
        };
        let result = self.push_chunk(chunk);
        if result.is_err() {
            self.partials.remove(&chunk.id);
        }
        result
    }

    /// Stores a chunk already checked on its own.
    fn push_chunk(&mut self, chunk: Chunk<'_>) -> Result<Option<Vec<u8>>, FrameError> {
        let Chunk { id, index, count, data } = chunk;
        if index == 0 && data.first() == Some(&op::CHUNK) {
            return Err(FrameError::NestedChunk);
        }
        let partial = match self.partials.get_mut(&id) {
            Some(partial) => {
                if partial.count != count {
                    return Err(FrameError::CountMismatch { id, index, expected: partial.count, got: count });
                }
                if partial.parts.contains_key(&index) {
                    return Err(FrameError::DuplicateChunk { id, index });
                }
                partial
            }
            None => {
                if count == 1 {
                    // Complete at once: never in progress.
                    return if data.len() > MAX_FRAME {
                        Err(FrameError::TooLarge { len: data.len() })
                    } else {
                        Ok(Some(data.to_vec()))
                    };
                }
                if self.partials.len() >= MAX_PARTIALS {
                    return Err(FrameError::TooManyPartials { id });
                }
                self.partials.entry(id).or_insert(Partial { count, len: 0, parts: BTreeMap::new() })
            }
        };
        let len = partial.len + data.len();
        if len > MAX_FRAME {
            return Err(FrameError::TooLarge { len });
        }
        partial.len = len;
        partial.parts.insert(index, data.to_vec());
        if partial.parts.len() < usize::from(count) {
            return Ok(None);
        }
        let Some(partial) = self.partials.remove(&id) else {
            return Ok(None);
        };
        let mut frame = Vec::with_capacity(partial.len);
        for part in partial.parts.into_values() {
            frame.extend_from_slice(&part);
        }
        Ok(Some(frame))
    }
}

/// The message id of a CHUNK message whose header is complete enough to hold one.
fn chunk_id(message: &[u8]) -> Option<u32> {
    match message.get(..5)? {
        &[op::CHUNK, a, b, c, d] => Some(u32::from_be_bytes([a, b, c, d])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A deterministic byte pattern of `len` bytes (no rng needed for content).
    fn pattern(len: usize, salt: u64) -> Vec<u8> {
        let mut state = salt.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[0]
            })
            .collect()
    }

    /// A frame of `len` bytes with opcode `opcode`.
    fn frame_of(opcode: u8, len: usize) -> Vec<u8> {
        let mut frame = Vec::new();
        encode(opcode, &pattern(len.saturating_sub(1), len as u64), &mut frame);
        frame
    }

    fn chunk(id: u32, index: u16, count: u16, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        Chunk { id, index, count, data }.encode(&mut out);
        out
    }

    /// Pushes every message, expecting `None` for all but the last, which completes.
    fn reassemble(reassembler: &mut Reassembler, messages: &[Vec<u8>]) -> Vec<u8> {
        let (last, rest) = messages.split_last().expect("at least one message");
        for (i, message) in rest.iter().enumerate() {
            assert_eq!(reassembler.push(message), Ok(None), "message {i} must not complete the frame");
        }
        reassembler.push(last).expect("the last message is valid").expect("the last message completes the frame")
    }

    // ---- opcodes and channels ----

    #[test]
    fn opcodes_match_the_spec_ports() {
        let server = [
            op::CONFIG_DATA,
            op::AUTH_DATA,
            op::AUTH_RESULT,
            op::MAP_DATA,
            op::FIRST_SHOT_DATA,
            op::SHOT_DATA,
            op::SOUND_DATA,
            op::GAME_INFORM_DATA,
            op::TECH_INFORM_DATA,
            op::CLEAR,
            op::PANEL_DATA,
            op::STAT_DATA,
            op::CHAT_DATA,
            op::VOTE_DATA,
            op::KEYSET_DATA,
            op::ACCOLADES_DATA,
        ];
        assert_eq!(server, [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 13, 14, 15, 16, 17, 18]);
        let client = [op::client::AUTH_RESPONSE, op::client::KEYS_DATA, op::client::CHAT, op::client::VOTE];
        assert_eq!(client, [1, 5, 6, 7]);
        let engine = [
            op::HELLO,
            op::WELCOME,
            op::REJECT,
            op::PING,
            op::PONG,
            op::CLOSE,
            op::CHECKPOINT,
            op::INPUT_LOG,
            op::SUCCESSION,
            op::HANDOFF,
            op::CLAIM,
            op::CHUNK,
        ];
        assert_eq!(engine, [32, 33, 34, 35, 36, 37, 40, 41, 42, 43, 44, 255]);
        for code in engine {
            assert!(!server.contains(&code) && !client.contains(&code), "engine opcode {code} collides with a port");
        }
        // Host migration's data plane, client → host.
        let data_plane = [op::LINKS, op::CHECKPOINT_REQUEST];
        assert_eq!(data_plane, [45, 46]);
        for code in data_plane {
            assert!(!server.contains(&code) && !client.contains(&code) && !engine.contains(&code), "{code} collides");
        }
        // The `@changeHost` vote.
        let vote = [op::HOST_VOTE, op::HOST_BALLOT, op::STEP_DOWN];
        assert_eq!(vote, [47, 48, 49]);
        for code in vote.into_iter().chain([op::CHAT_HISTORY]) {
            let taken = server.contains(&code) || client.contains(&code) || engine.contains(&code);
            assert!(!taken && !data_plane.contains(&code), "{code} collides");
        }
        assert_eq!(op::CHAT_HISTORY, 50);
        // Before a claim, between clients.
        let check = [op::FRAME_ACK, op::HOST_CHECK, op::HOST_SEEN];
        assert_eq!(check, [51, 52, 53]);
        for code in check {
            let taken = server.contains(&code) || client.contains(&code) || engine.contains(&code);
            assert!(!taken && !data_plane.contains(&code) && !vote.contains(&code), "{code} collides");
        }
    }

    #[test]
    fn channel_ids() {
        assert_eq!(Channel::Reliable.id(), 0);
        assert_eq!(Channel::Unreliable.id(), 1);
        assert_eq!(Channel::from_id(0), Some(Channel::Reliable));
        assert_eq!(Channel::from_id(1), Some(Channel::Unreliable));
        assert_eq!(Channel::from_id(2), None);
        assert!(Channel::Reliable.is_reliable());
        assert!(!Channel::Unreliable.is_reliable());
        assert_eq!(Channel::ALL.map(Channel::id), [0, 1]);
    }

    // ---- frames ----

    #[test]
    fn encode_golden_bytes() {
        let mut out = vec![0xAA];
        encode(op::CHAT_DATA, b"hi", &mut out);
        assert_eq!(out, [0xAA, 15, b'h', b'i'], "encode appends");
        let mut empty_payload = Vec::new();
        Frame { opcode: op::PING, payload: &[] }.encode(&mut empty_payload);
        assert_eq!(empty_payload, [35]);
    }

    #[test]
    fn parse_splits_opcode_and_payload() {
        assert_eq!(parse(&[5, 1, 2, 3]), Ok(Frame { opcode: 5, payload: &[1, 2, 3] }));
        assert_eq!(parse(&[36]), Ok(Frame { opcode: 36, payload: &[] }));
        assert_eq!(parse(&[36]).map(|f| f.len()), Ok(1));
        assert_eq!(parse(&[]), Err(FrameError::Empty));
        assert_eq!(parse(&vec![3; MAX_FRAME]).map(|f| f.payload.len()), Ok(MAX_FRAME - 1));
        assert_eq!(parse(&vec![3; MAX_FRAME + 1]), Err(FrameError::TooLarge { len: MAX_FRAME + 1 }));
    }

    // ---- chunk frames ----

    #[test]
    fn chunk_header_golden_bytes() {
        assert_eq!(CHUNK_HEADER_LEN, 9);
        assert_eq!(MAX_CHUNK_DATA, 65_527);
        assert_eq!(chunk(0x0102_0304, 2, 5, &[0xEE, 0xFF]), [255, 1, 2, 3, 4, 0, 2, 0, 5, 0xEE, 0xFF]);
        assert_eq!(chunk(0xFFFF_FFFE, 0x1234, 0xABCD, &[9]), [255, 0xFF, 0xFF, 0xFF, 0xFE, 0x12, 0x34, 0xAB, 0xCD, 9]);
        let bytes = [255, 0, 0, 0, 7, 0, 1, 0, 3, 42, 43];
        assert_eq!(Chunk::parse(&bytes), Ok(Chunk { id: 7, index: 1, count: 3, data: &[42, 43] }));
        assert_eq!(Chunk::parse(&[5, 0, 0, 0, 7, 0, 1, 0, 3, 42]), Err(FrameError::NotAChunk { opcode: 5 }));
        assert_eq!(Chunk::parse(&[]), Err(FrameError::Empty));
    }

    #[test]
    fn split_golden_first_chunk() {
        let frame = frame_of(op::MAP_DATA, MAX_MESSAGE + 1);
        let messages = Chunker::with_first_id(0xDEAD_BEEF).split(&frame).expect("a valid frame");
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0][..CHUNK_HEADER_LEN], [255, 0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 2]);
        assert_eq!(messages[1][..CHUNK_HEADER_LEN], [255, 0xDE, 0xAD, 0xBE, 0xEF, 0, 1, 0, 2]);
        assert_eq!(messages[0].len(), MAX_MESSAGE);
        assert_eq!(messages[1].len(), CHUNK_HEADER_LEN + (MAX_MESSAGE + 1 - MAX_CHUNK_DATA));
        assert_eq!(messages[0][CHUNK_HEADER_LEN], op::MAP_DATA, "the first chunk's data starts with the opcode");
    }

    #[test]
    fn small_frames_pass_through_whole() {
        let mut chunker = Chunker::new();
        for len in [1, 2, 1000, MAX_MESSAGE] {
            let frame = frame_of(op::SHOT_DATA, len);
            assert_eq!(chunker.split(&frame), Ok(vec![frame.clone()]), "a {len}-byte frame is sent whole");
            assert_eq!(Reassembler::new().push(&frame), Ok(Some(frame)));
        }
        assert_eq!(chunker.next_id(), 0, "whole frames use no id");
    }

    #[test]
    fn frame_of_200_000_bytes_in_4_chunks_any_order() {
        let frame = frame_of(op::CHECKPOINT, 200_000);
        let messages = Chunker::new().split(&frame).expect("a valid frame");
        assert_eq!(messages.len(), 4);
        for (i, message) in messages.iter().enumerate() {
            assert!(message.len() <= MAX_MESSAGE, "chunk {i} is {} bytes", message.len());
            assert_eq!(message[0], op::CHUNK);
        }
        let lens: Vec<usize> = messages.iter().map(Vec::len).collect();
        assert_eq!(lens, [65_536, 65_536, 65_536, 200_000 - 3 * MAX_CHUNK_DATA + CHUNK_HEADER_LEN]);
        // Every permutation of the four chunks.
        let mut orders = Vec::new();
        permutations(&mut vec![0, 1, 2, 3], 0, &mut orders);
        assert_eq!(orders.len(), 24);
        let mut reassembler = Reassembler::new();
        for order in orders {
            let shuffled: Vec<Vec<u8>> = order.iter().map(|&i| messages[i].clone()).collect();
            assert!(reassemble(&mut reassembler, &shuffled) == frame, "order {order:?} reassembles byte-exact");
            assert_eq!(reassembler.partials(), 0);
            assert_eq!(reassembler.buffered_bytes(), 0);
        }
    }

    fn permutations(items: &mut Vec<usize>, k: usize, out: &mut Vec<Vec<usize>>) {
        if k == items.len() {
            out.push(items.clone());
            return;
        }
        for i in k..items.len() {
            items.swap(k, i);
            permutations(items, k + 1, out);
            items.swap(k, i);
        }
    }

    #[test]
    fn largest_frame_is_accepted_one_more_byte_refused_by_both_sides() {
        let mut chunker = Chunker::new();
        let frame = frame_of(op::CHECKPOINT, MAX_FRAME);
        let messages = chunker.split(&frame).expect("exactly MAX_FRAME is allowed");
        assert_eq!(messages.len(), 5);
        assert!(messages.iter().all(|m| m.len() <= MAX_MESSAGE));
        assert!(reassemble(&mut Reassembler::new(), &messages) == frame);

        let too_big = frame_of(op::CHECKPOINT, MAX_FRAME + 1);
        assert_eq!(chunker.split(&too_big), Err(FrameError::TooLarge { len: MAX_FRAME + 1 }));
        assert_eq!(chunker.next_id(), 1, "a refused frame uses no id");

        // A whole message above the limit.
        let mut reassembler = Reassembler::new();
        assert_eq!(reassembler.push(&too_big), Err(FrameError::TooLarge { len: MAX_FRAME + 1 }));
        // The same bytes chunked by a peer that does not check: refused at the chunk that
        // goes over, before it is buffered.
        let forged: Vec<Vec<u8>> =
            too_big.chunks(MAX_CHUNK_DATA).enumerate().map(|(i, data)| chunk(9, i as u16, 5, data)).collect();
        assert_eq!(forged.len(), 5);
        for message in &forged[..4] {
            assert_eq!(reassembler.push(message), Ok(None));
        }
        assert_eq!(reassembler.push(&forged[4]), Err(FrameError::TooLarge { len: MAX_FRAME + 1 }));
        assert_eq!(reassembler.partials(), 0, "the refused frame is discarded");
    }

    #[test]
    fn chunk_ids_increase_and_wrap() {
        let frame = frame_of(op::MAP_DATA, MAX_MESSAGE + 1);
        let mut chunker = Chunker::with_first_id(u32::MAX);
        let ids: Vec<[u8; 4]> = (0..3)
            .map(|_| {
                let messages = chunker.split(&frame).expect("valid");
                messages[0][1..5].try_into().expect("4 bytes")
            })
            .collect();
        assert_eq!(ids, [[0xFF; 4], [0, 0, 0, 0], [0, 0, 0, 1]]);
        assert_eq!(chunker.next_id(), 2);
    }

    #[test]
    fn interleaved_messages_reassemble() {
        let a = frame_of(op::MAP_DATA, 150_000);
        let b = frame_of(op::CHECKPOINT, 70_000);
        let mut chunker = Chunker::new();
        let ma = chunker.split(&a).expect("valid");
        let mb = chunker.split(&b).expect("valid");
        assert_eq!((ma.len(), mb.len()), (3, 2));
        let mut reassembler = Reassembler::new();
        assert_eq!(reassembler.push(&ma[2]), Ok(None));
        assert_eq!(reassembler.push(&mb[1]), Ok(None));
        assert_eq!(reassembler.push(&ma[0]), Ok(None));
        assert_eq!(reassembler.partials(), 2);
        assert_eq!(reassembler.push(&[op::PING, 1]), Ok(Some(vec![op::PING, 1])), "whole frames pass in between");
        assert!(reassembler.push(&mb[0]) == Ok(Some(b.clone())));
        assert!(reassembler.push(&ma[1]) == Ok(Some(a.clone())));
        assert_eq!(reassembler.partials(), 0);
    }

    #[test]
    fn single_chunk_message_completes_at_once() {
        let mut reassembler = Reassembler::new();
        assert_eq!(reassembler.push(&chunk(3, 0, 1, &[op::SHOT_DATA, 1, 2])), Ok(Some(vec![5, 1, 2])));
        assert_eq!(reassembler.partials(), 0);
    }

    // ---- errors ----

    #[test]
    fn split_refuses_empty_and_chunk_opcode_frames() {
        let mut chunker = Chunker::new();
        assert_eq!(chunker.split(&[]), Err(FrameError::Empty));
        assert_eq!(chunker.split(&[255, 1, 2]), Err(FrameError::NestedChunk));
        assert_eq!(chunker.split(&frame_of(op::CHUNK, 100_000)), Err(FrameError::NestedChunk));
    }

    #[test]
    fn empty_message_is_an_error() {
        assert_eq!(Reassembler::new().push(&[]), Err(FrameError::Empty));
    }

    #[test]
    fn truncated_chunk_header() {
        let mut reassembler = Reassembler::new();
        for len in 1..CHUNK_HEADER_LEN {
            let bytes = &[255, 0, 0, 0, 1, 0, 0, 0][..len];
            assert_eq!(reassembler.push(bytes), Err(FrameError::TruncatedChunk { len }));
        }
    }

    #[test]
    fn zero_count() {
        assert_eq!(Reassembler::new().push(&chunk(1, 0, 0, &[1])), Err(FrameError::ZeroCount { id: 1, index: 0 }));
    }

    #[test]
    fn index_out_of_range() {
        assert_eq!(
            Reassembler::new().push(&chunk(1, 3, 3, &[1])),
            Err(FrameError::IndexOutOfRange { id: 1, index: 3, count: 3 })
        );
        assert_eq!(
            Reassembler::new().push(&chunk(1, u16::MAX, 2, &[1])),
            Err(FrameError::IndexOutOfRange { id: 1, index: u16::MAX, count: 2 })
        );
    }

    #[test]
    fn empty_chunk_data() {
        assert_eq!(Reassembler::new().push(&chunk(4, 1, 2, &[])), Err(FrameError::EmptyChunk { id: 4, index: 1 }));
    }

    #[test]
    fn count_mismatch() {
        let mut reassembler = Reassembler::new();
        assert_eq!(reassembler.push(&chunk(1, 0, 3, &[7])), Ok(None));
        assert_eq!(
            reassembler.push(&chunk(1, 1, 4, &[8])),
            Err(FrameError::CountMismatch { id: 1, index: 1, expected: 3, got: 4 })
        );
        assert_eq!(reassembler.partials(), 0, "the frame in progress is discarded");
    }

    #[test]
    fn duplicate_chunk() {
        let mut reassembler = Reassembler::new();
        assert_eq!(reassembler.push(&chunk(1, 1, 3, &[7])), Ok(None));
        assert_eq!(reassembler.push(&chunk(1, 1, 3, &[7])), Err(FrameError::DuplicateChunk { id: 1, index: 1 }));
    }

    #[test]
    fn too_many_partials() {
        let mut reassembler = Reassembler::new();
        for id in 0..MAX_PARTIALS as u32 {
            assert_eq!(reassembler.push(&chunk(id, 0, 2, &[1])), Ok(None));
        }
        assert_eq!(reassembler.push(&chunk(99, 0, 2, &[1])), Err(FrameError::TooManyPartials { id: 99 }));
        assert_eq!(reassembler.partials(), MAX_PARTIALS, "frames in progress are kept");
        // Chunks of frames already in progress and single-chunk frames still pass.
        assert_eq!(reassembler.push(&chunk(0, 1, 2, &[2])), Ok(Some(vec![1, 2])));
        assert_eq!(reassembler.push(&chunk(98, 0, 1, &[3])), Ok(Some(vec![3])));
        assert_eq!(reassembler.push(&chunk(99, 0, 2, &[1])), Ok(None), "room again once one completes");
    }

    #[test]
    fn reassembled_frame_must_not_be_a_chunk() {
        let mut reassembler = Reassembler::new();
        assert_eq!(reassembler.push(&chunk(1, 0, 1, &[255, 0])), Err(FrameError::NestedChunk));
        assert_eq!(reassembler.push(&chunk(2, 0, 2, &[255, 0])), Err(FrameError::NestedChunk));
        assert_eq!(reassembler.partials(), 0);
    }

    #[test]
    fn reassembler_stays_usable_after_errors() {
        let frame = frame_of(op::MAP_DATA, 100_000);
        let messages = Chunker::with_first_id(5).split(&frame).expect("valid");
        let mut reassembler = Reassembler::new();
        assert_eq!(reassembler.push(&messages[0]), Ok(None));
        // Errors on other ids leave frame 5 alone.
        assert!(reassembler.push(&chunk(6, 0, 0, &[1])).is_err());
        assert!(reassembler.push(&[255, 0]).is_err());
        assert!(reassembler.push(&[]).is_err());
        assert!(reassembler.push(&messages[1]) == Ok(Some(frame.clone())));
        // An error on id 5 drops it; the id can then start over.
        assert_eq!(reassembler.push(&messages[0]), Ok(None));
        assert!(reassembler.push(&chunk(5, 9, 2, &[1])).is_err());
        assert_eq!(reassembler.partials(), 0);
        assert_eq!(reassembler.push(&messages[1]), Ok(None));
        assert!(reassembler.push(&messages[0]) == Ok(Some(frame)));
    }

    #[test]
    fn error_messages_read_well() {
        assert_eq!(FrameError::Empty.to_string(), "empty frame: no opcode");
        assert_eq!(
            FrameError::TooLarge { len: 262_145 }.to_string(),
            "frame of 262145 bytes or more exceeds the 262144-byte limit"
        );
        assert_eq!(
            FrameError::TooManyPartials { id: 9 }.to_string(),
            "message 9 would be chunked message 5 in progress, at most 4 are"
        );
    }

    // ---- properties ----

    /// A message that looks like a chunk often enough to reach every check.
    fn message() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..32),
            (0u32..6, 0u16..5, 0u16..5, proptest::collection::vec(any::<u8>(), 0..8))
                .prop_map(|(id, index, count, data)| chunk(id, index, count, &data)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        #[test]
        fn split_then_reassemble_round_trip(len in 0..=MAX_FRAME, opcode in 0u8..255, salt in any::<u64>()) {
            let frame = if len == 0 { Vec::new() } else {
                let mut frame = Vec::with_capacity(len);
                encode(opcode, &pattern(len - 1, salt), &mut frame);
                frame
            };
            let mut chunker = Chunker::new();
            let messages = match chunker.split(&frame) {
                Ok(messages) => messages,
                Err(error) => {
                    prop_assert_eq!(len, 0);
                    prop_assert_eq!(error, FrameError::Empty);
                    return Ok(());
                }
            };
            prop_assert_eq!(messages.len(), if len <= MAX_MESSAGE { 1 } else { len.div_ceil(MAX_CHUNK_DATA) });
            prop_assert!(messages.iter().all(|m| m.len() <= MAX_MESSAGE));
            // Reverse order on odd salts, to cover out-of-order arrival.
            let mut messages = messages;
            if salt % 2 == 1 {
                messages.reverse();
            }
            let mut reassembler = Reassembler::new();
            let whole = reassemble(&mut reassembler, &messages);
            prop_assert!(whole == frame);
            prop_assert_eq!(parse(&whole).map(|f| f.opcode), Ok(opcode));
        }
    }

    proptest! {
        #[test]
        fn random_messages_never_panic_the_reassembler(messages in proptest::collection::vec(message(), 0..64)) {
            let mut reassembler = Reassembler::new();
            for message in &messages {
                if let Ok(Some(frame)) = reassembler.push(message) {
                    prop_assert!(!frame.is_empty() && frame.len() <= MAX_FRAME);
                    prop_assert_ne!(frame[0], op::CHUNK);
                }
                prop_assert!(reassembler.partials() <= MAX_PARTIALS);
                prop_assert!(reassembler.buffered_bytes() <= MAX_PARTIALS * MAX_FRAME);
            }
        }

        #[test]
        fn random_bytes_never_panic_parse(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            match parse(&bytes) {
                Ok(frame) => {
                    let mut again = Vec::new();
                    frame.encode(&mut again);
                    prop_assert_eq!(&again, &bytes);
                }
                Err(error) => prop_assert_eq!(error, FrameError::Empty),
            }
            if let Ok(chunk) = Chunk::parse(&bytes) {
                let mut again = Vec::new();
                chunk.encode(&mut again);
                prop_assert_eq!(&again, &bytes);
            }
        }

        #[test]
        fn chunk_round_trip(id in any::<u32>(), count in 1u16.., index_seed in any::<u16>(),
                            data in proptest::collection::vec(any::<u8>(), 1..64)) {
            let index = index_seed % count;
            let bytes = chunk(id, index, count, &data);
            prop_assert_eq!(Chunk::parse(&bytes), Ok(Chunk { id, index, count, data: &data }));
        }
    }
}
