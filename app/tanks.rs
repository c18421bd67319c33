//! The reference game's side of the window: how tanks are drawn and what their HUD says.

pub mod draw;
pub mod hud;
