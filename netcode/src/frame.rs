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
    /// A round's end: the results the host reports to the rendezvous and the stat row of each
    /// of their players, for every verified player to check against its scoreboard and sign
    /// (host → client, JSON; see [`RoundOver`](crate::rounds::RoundOver)). Sent only by a host
    /// that checks tokens.
    pub const ROUND_RESULTS: u8 = 54;
    /// Where the room is: the invite friends join by, and whether the rendezvous runs in the
    /// host's own process (host → client, JSON, at the welcome and at each change; see
    /// [`Invite`](crate::lobby::Invite)). A player whose host serves the room moves its
    /// signalling there.
    pub const ROOM: u8 = 55;
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
mod tests;
