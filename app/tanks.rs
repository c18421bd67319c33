//! The reference game's side of the window: how tanks are drawn, what their HUD says, the
//! designers' navigation overlay, and the tank's prediction as the window drives it.

pub mod draw;
pub mod hud;
pub mod overlay;
pub mod predict;
