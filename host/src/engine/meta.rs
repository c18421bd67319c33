//! What the sim tells people, as opposed to what it draws: the outbox of meta messages.
//!
//! The game pushes netcode's typed messages ([`MetaMessage`]: game informs, sounds, chat
//! lines, …) here, and each one's port follows from its type; the session layer takes them
//! each tick, checks them (`MetaMessage::validate`) and sends them on the reliable channel.
//! The sim never reads them back, so they are not part of a dump.

use bevy::prelude::*;
pub use vimp_netcode::meta::MetaMessage;

use crate::engine::players::PlayerId;

/// One meta message on its way: to everyone (`to: None`) or to one player.
#[derive(Clone, Debug, PartialEq)]
pub struct Outgoing {
    /// The receiver, or everyone.
    pub to: Option<PlayerId>,
    /// The message; its port is [`MetaMessage::port`].
    pub message: MetaMessage,
}

/// Messages produced this tick and not yet taken by the session layer.
#[derive(Resource, Debug, Default)]
pub struct MetaOutbox(pub Vec<Outgoing>);

impl MetaOutbox {
    /// Queues a message to everyone.
    pub fn broadcast(&mut self, message: impl Into<MetaMessage>) {
        self.0.push(Outgoing { to: None, message: message.into() });
    }

    /// Queues a message to one player only (a game's personal chat line, vote or inform);
    /// nobody else gets it, and it is not kept in the recent chat.
    pub fn send_to(&mut self, player: PlayerId, message: impl Into<MetaMessage>) {
        self.0.push(Outgoing { to: Some(player), message: message.into() });
    }
}
