//! The reference game's side of the window: how tanks are drawn, what their HUD says, and the designers' navigation overlay.

pub mod draw;
pub mod hud;
pub mod overlay;
