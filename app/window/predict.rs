//! What the window runs of a game's prediction of the player's own actor.
//!
//! The window knows no game: it steps a [`LocalPrediction`] at the game's fixed step, hands
//! it every frame from the host, every key the player presses and every aim of the
//! pointer, and draws the state it renders. The game (`app/tanks/predict.rs` for tanks) builds one from the host's config
//! and map for the welcomed player ([`MakePrediction`]), running the host's own sim code.

use std::collections::BTreeMap;

use vimp_host::PlayerId;
use vimp_host::engine::map::MapConfig;
use vimp_netcode::divergence::DivergenceRecord;
use vimp_netcode::input::{Aim, KeyAction};
use vimp_netcode::interp::Sample;
use vimp_netcode::snapshot::Frame;

/// A reconciliation: how far the host's state moved the predicted actor, and whether it
/// jumped there (a respawn) instead of easing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Correction {
    /// World units between the prediction and the host's state.
    pub distance: f32,
    /// The actor jumped.
    pub snapped: bool,
}

/// A game's prediction of the player's own actor, as the window drives it.
pub trait LocalPrediction: Send + Sync {
    /// A frame from the host, before it is interpolated: the prediction reconciles with the
    /// player's block and may take out of the frame what it shows itself (the player's own
    /// shots, drawn at once).
    fn on_frame(&mut self, frame: &mut Frame) -> Option<Correction>;
    /// The fixed step, s.
    fn dt(&self) -> f32;
    /// One fixed step.
    fn step(&mut self);
    /// The actor's state as drawn (`x, y, angle, …`, the snapshot's 8 floats), once there is one.
    fn render_state(&self) -> Option<[f32; 8]>;
    /// The level the actor stands on and its height above it, world units, as predicted (on
    /// a layered map; `None` when the game has no levels or no actor yet: the window reads
    /// them from the actor's row).
    fn render_level(&self) -> Option<(u8, f32)> {
        None
    }
    /// Tracers the player fired since the last call, `(from, to)`.
    fn take_tracers(&mut self) -> Vec<([f32; 2], [f32; 2])>;
    /// Divergences found since the last call (the prediction against the host's state).
    fn take_divergence(&mut self) -> Vec<DivergenceRecord>;
    /// The player pressed or released a key, sent with input seq `seq`.
    fn key(&mut self, seq: u32, action: KeyAction, name: &str);
    /// The player's pointer aimed at a world point, or let go of the aim (`None`), sent with
    /// input seq `seq` (the spec's `apply_aim`). A game with no use for the pointer ignores it.
    fn aim(&mut self, seq: u32, aim: Option<Aim>) {
        let _ = (seq, aim);
    }
    /// The world as the player sees it drawn now (the interpolation's sample at its render
    /// time): what the player's shots aim at, which the host judges them by (lag
    /// compensation). A game with nothing to aim at ignores it.
    fn seen(&mut self, sample: &Sample) {
        let _ = sample;
    }
    /// The player's panel as the host last sent it (what the game's prediction reads of it,
    /// a weapon and its ammo say).
    fn panel(&mut self, panel: &BTreeMap<String, String>);
}

/// Builds a game's prediction from the host's config and map for `player`; `None` when it
/// cannot (a config it does not read).
pub type MakePrediction =
    fn(config: &serde_json::Value, map: &MapConfig, player: PlayerId) -> Option<Box<dyn LocalPrediction>>;
