//! vimp's wire formats and protocol logic: plain Rust, no Bevy, no sockets, no clock.
//!
//! Everything that crosses the wire between a vimp host and its clients is defined
//! here, as plain types that take bytes (and, where time matters, `now`) and return
//! bytes, events and values. The host (`vimp-host`) and the desktop client (`vimp`)
//! own the clocks.
//!
//! Three cargo features, on by default, add the parts that own sockets and threads:
//! `webrtc` ([`transport::webrtc`], over matchbox), `signal-server`
//! ([`signal::SignalServer`] on tokio and axum, and [`stun`]) and `portmap` ([`portmap`]: the
//! home router's port mappings); `webrtc` or `signal-server` brings the blocking HTTP asks of
//! a signalling server ([`signal::fetch_ice`], [`signal::fetch_room`], over TLS for a `wss://`
//! one). Without them (`--no-default-features`) the crate opens no socket and depends on none
//! of matchbox, tokio or axum.
//!
//! ```text
//!            host (vimp-host)                                client (vimp)
//!  ECS rows ──► snapshot::pack ──► [frame bytes] ──► snapshot::unpack ──► interp::Interpolator
//!    ▲            (schema-driven, v5)                       │  player block     │ others, 100 ms back
//!    │                                                      ▼                   ▼
//!  KeyState ◄── input::decode_inputs ◄── [input bytes] ◄── KeyState ──► predictor ──► divergence
//! ```
//!
//! - [`schema`]: the declarative snapshot schema (keys, kinds, fields, roles) and its validation.
//! - [`snapshot`]: the binary frame v5, byte-exact to the spec, and [`round2`].
//! - [`delta`]: the delta frame v6: each frame against one the receiver acknowledged, rows
//!   unchanged since skipped, changed fields as small differences in quantisation steps.
//! - [`interp`]: the interpolation buffer (render time = server time − 100 ms).
//! - [`input`]: key events (`seq:action:name` and a compact binary form), pointer aims in
//!   the same seq space, the key table and [`KeyState`], the one rule both host and
//!   predictor use.
//! - [`divergence`]: the prediction divergence detector.
//! - [`migration`]: host migration on the wire: the succession list and its ranking rule,
//!   checkpoint parts, what a client hands its shadow.
//! - [`frame`]: opcodes, the two channels, the `[opcode][payload]` envelope and chunking.
//! - [`bytes`]: the one bounds-checked big-endian reader for untrusted payloads, and its writes.
//! - [`session`]: host and client sessions, sans-IO: handshake, heartbeat, rate limits, close
//!   codes.
//! - [`client`]: a client on the network: finds the host among its peers, keeps the session,
//!   decodes snapshots, follows a new host.
//! - [`meta`]: typed forms of the meta payloads (auth, informs, panel, stat, chat, vote,
//!   keyset…) and their exact bytes.
//! - [`transport`]: what sessions run over (peers, two channels, messages), the in-memory
//!   transport, and with `webrtc` the WebRTC one.
//! - [`link`]: the in-memory link with a seeded conditioner, for tests on fake time.
//! - [`lobby`]: lobby codes and join targets.
//! - [`signal`]: the signalling server's protocol, and with `signal-server` the server.
//! - [`stun`] (with `signal-server`): a STUN binding responder.
//! - [`portmap`] (with `portmap`): opens the host's ports on its home router (UPnP-IGD, PCP,
//!   NAT-PMP), renews them and closes them again.
//!
//! A round trip:
//!
//! ```
//! use vimp_netcode::prelude::*;
//!
//! let schema = SnapshotSchema::from_json(r#"{ "keys": {
//!     "m1": { "id": 1, "kind": "indexed8", "class": "hot", "fields": [
//!         { "name": "x", "ty": "f32", "interp": "lerp" }, { "name": "team", "ty": "u8" } ] } } }"#)?;
//! let frame = Frame {
//!     seq: 1,
//!     server_time_ms: 33.0,
//!     player: None,
//!     blocks: vec![(1, Block::Indexed8(vec![(4, Some(vec![FieldValue::F32(1.5), FieldValue::U8(2)]))]))],
//!     streamed_out: Vec::new(),
//! };
//! let mut bytes = Vec::new();
//! pack(&schema, &frame, &mut bytes)?;
//! assert_eq!(unpack(&schema, &bytes)?, frame);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod bytes;
pub mod client;
pub mod delta;
pub mod divergence;
pub mod frame;
pub mod identity;
pub mod input;
pub mod interp;
pub mod link;
pub mod lobby;
pub mod meta;
pub mod migration;
#[cfg(feature = "portmap")]
pub mod portmap;
pub mod rounds;
pub mod schema;
pub mod session;
pub mod signal;
pub mod snapshot;
#[cfg(feature = "signal-server")]
pub mod stun;
pub mod transport;

pub use divergence::{DivergenceConfig, DivergenceDetector, DivergenceRecord, wrap_angle};
pub use input::{
    Aim, AimEvent, InputError, InputEvent, KeyAction, KeyBits, KeyKind, KeySpec, KeyState, KeyTable, WireInput,
};
pub use interp::{InterpolationConfig, Interpolator, Sample};
pub use schema::{
    BlockClass, BlockKind, BlockSchema, FieldSchema, FieldType, Interp, Role, SNAPSHOT_FORMAT_VERSION, SchemaError,
    SnapshotSchema,
};
pub use snapshot::{
    Block, DecodeError, FieldValue, Frame, PLAYER_STATE_LEN, PackError, PlayerBlock, Row, pack, pack_body, pack_header,
    round2, unpack,
};

/// The types most users of the crate need.
pub mod prelude {
    pub use crate::{
        Block, BlockClass, BlockKind, BlockSchema, DecodeError, FieldSchema, FieldType, FieldValue, Frame, InputEvent,
        Interp, InterpolationConfig, Interpolator, KeyState, KeyTable, PLAYER_STATE_LEN, PackError, PlayerBlock, Row,
        SnapshotSchema, pack, round2, unpack,
    };
}
