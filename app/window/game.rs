//! What the window needs of a game: one value, [`WindowGame`], which `app/lib.rs` picks
//! ([`crate::WINDOW`], beside [`crate::GAME`] and [`crate::PREDICTION`]). The rest of the
//! window names no game: it draws the HUD, says the game's messages and plays its sounds
//! through these functions, and adds the game's own drawing as Bevy plugins.

use std::collections::BTreeMap;

use bevy::prelude::*;
use bevy_egui::egui;
use vimp_netcode::meta::{GameInform, Vote};

use crate::window::node::Capture;

/// A game's side of the window.
#[derive(Clone, Copy)]
pub struct WindowGame {
    /// Adds the game's drawing (its world, its overlays) to the window's app.
    pub plugins: fn(&mut App),
    /// Draws the HUD from the panel's keys and values.
    pub panel: fn(&mut egui::Ui, &BTreeMap<String, String>),
    /// A team's colour, for chat lines and the scoreboard.
    pub team_color: fn(u8) -> egui::Color32,
    /// What a game message (an inform) says on the banner.
    pub inform_text: fn(&GameInform) -> String,
    /// What a technical message (`code`, its params) says on the black screen.
    pub tech_text: fn(u8, Option<&[serde_json::Value]>) -> String,
    /// A vote's title.
    pub vote_title: fn(&Vote) -> String,
    /// What the host thread of a match this window hosts publishes for the game's overlays
    /// (the node thread's view).
    pub capture_view: Capture,
}

/// The camera that follows the player: the window spawns it, the game moves it.
#[derive(Component, Debug)]
pub struct MainCamera;

/// Whether the designers' overlay is on: F4 and `--nav-overlay` set it, the game draws it.
#[derive(Resource, Debug, Default)]
pub struct NavOverlayOn(pub bool);
