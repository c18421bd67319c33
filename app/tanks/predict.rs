//! The tanks' prediction as the window drives it: the host's own tank code
//! ([`vimp_host::tanks::predict::Predictor`]) behind the window's [`LocalPrediction`].

use std::collections::BTreeMap;

use vimp_host::PlayerId;
use vimp_host::engine::map::MapConfig;
use vimp_host::tanks::predict::{LocalShot, Predictor, PredictorConfig, suppress_own_events};
use vimp_host::tanks::rows::key;
use vimp_host::tanks::tank::Weapon;
use vimp_netcode::divergence::DivergenceRecord;
use vimp_netcode::input::{Aim, KeyAction};
use vimp_netcode::interp::Sample;
use vimp_netcode::snapshot::Frame;

use crate::window::predict::{Correction, LocalPrediction};

/// The predictor of the tank of `player` ([`crate::window::predict::MakePrediction`]).
pub fn make(config: &serde_json::Value, map: &MapConfig, player: PlayerId) -> Option<Box<dyn LocalPrediction>> {
    let predictor = Predictor::new(config, map, player, PredictorConfig::default()).ok()?;
    Some(Box::new(TankPrediction(predictor)))
}

struct TankPrediction(Predictor);

impl LocalPrediction for TankPrediction {
    fn on_frame(&mut self, frame: &mut Frame) -> Option<Correction> {
        let p = &mut self.0;
        let obstacles = p.obstacles_from(frame);
        p.set_obstacles(&obstacles);
        let correction = p.on_frame(frame).map(|c| Correction { distance: c.distance, snapped: c.snapped });
        // The local shots are drawn at once: the host's copies go.
        suppress_own_events(frame, p.player());
        correction
    }

    fn dt(&self) -> f32 {
        self.0.dt()
    }

    fn step(&mut self) {
        self.0.step();
    }

    fn render_state(&self) -> Option<[f32; 8]> {
        self.0.render_motion().map(|m| m.to_state())
    }

    fn render_level(&self) -> Option<(u8, f32)> {
        let p = &self.0;
        let level = p.level().state;
        (p.map().levels().is_layered() && p.render_motion().is_some()).then_some((level.level, level.z))
    }

    fn take_tracers(&mut self) -> Vec<([f32; 2], [f32; 2])> {
        let shots = self.0.take_shots();
        shots
            .into_iter()
            .filter_map(|s| if let LocalShot::Tracer { start, end, .. } = s { Some((start, end)) } else { None })
            .collect()
    }

    fn take_divergence(&mut self) -> Vec<DivergenceRecord> {
        self.0.take_divergence()
    }

    fn key(&mut self, seq: u32, action: KeyAction, name: &str) {
        // A key the tank does not know changes nothing in the prediction.
        let _ = self.0.key(seq, action, name);
    }

    fn aim(&mut self, seq: u32, aim: Option<Aim>) {
        self.0.aim(seq, aim);
    }

    fn seen(&mut self, sample: &Sample) {
        let tanks = sample.hot.get(&key::TANKS);
        self.0.set_seen(tanks.into_iter().flat_map(|rows| rows.iter().map(|(id, row)| (*id, row))));
    }

    fn panel(&mut self, panel: &BTreeMap<String, String>) {
        let ammo = |k: &str| panel.get(k).and_then(|v| v.parse().ok()).unwrap_or(0);
        let weapon = if panel.get("wa").is_some_and(|w| w == "w2") { Weapon::Bomb } else { Weapon::Gun };
        self.0.sync_weapons(weapon, [ammo("w1"), ammo("w2")]);
    }
}
