//! The reference game's side of the window: how tanks are drawn, what their HUD says, the
//! designers' navigation overlay, and the tank's prediction as the window drives it.

pub mod draw;
pub mod hud;
pub mod overlay;
pub mod predict;

/// The tanks game's side of the window.
pub const WINDOW: crate::window::game::WindowGame = crate::window::game::WindowGame {
    plugins: |app| {
        app.add_plugins(draw::DrawPlugin).add_plugins(overlay::NavOverlayPlugin);
    },
    panel: hud::panel,
    team_color: hud::team_color32,
    inform_text: hud::inform_text,
    tech_text: hud::tech_text,
    vote_title: hud::vote_title,
    capture_view: overlay::capture_view,
};
