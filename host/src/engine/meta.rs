//! What the sim tells people, as opposed to what it draws: the outbox of meta messages.
//!
//! The game pushes messages for the spec's JSON ports (game informs, sounds, …)
//! here; the session layer takes them each tick and sends them on the reliable
//! channel. The sim never reads them back, so they are not part of a dump.

use bevy::prelude::*;

use crate::engine::players::PlayerId;

/// The meta ports (opcodes), from the spec's port table: the wire crate's one list.
pub use vimp_netcode::frame::op as port;

/// One meta message: to everyone (`to: None`) or to one player.
#[derive(Clone, Debug, PartialEq)]
pub struct MetaMessage {
    /// The receiver, or everyone.
    pub to: Option<PlayerId>,
    /// The port (see [`port`]).
    pub port: u8,
    /// The JSON payload.
    pub payload: serde_json::Value,
}

/// Messages produced this tick and not yet taken by the session layer.
#[derive(Resource, Debug, Default)]
pub struct MetaOutbox(pub Vec<MetaMessage>);

impl MetaOutbox {
    /// Queues a message to everyone.
    pub fn broadcast(&mut self, port: u8, payload: serde_json::Value) {
        self.0.push(MetaMessage { to: None, port, payload });
    }

    /// Queues a message to one player only (a game's personal chat line, vote or inform);
    /// nobody else gets it, and it is not kept in the recent chat.
    pub fn send_to(&mut self, player: PlayerId, port: u8, payload: serde_json::Value) {
        self.0.push(MetaMessage { to: Some(player), port, payload });
    }

    /// Queues a chat line (`CHAT_DATA`) to one player only: a system line of the game's own
    /// group, or a personal line.
    pub fn chat_to(&mut self, player: PlayerId, line: &vimp_netcode::meta::ChatMessage) {
        self.send_to(player, port::CHAT_DATA, line.to_json());
    }
}
