//! The client's predictor of its own tank: the host's movement rule run ahead of the host, reconciled with its player blocks.
//!
//! A client sees its own tank the way it will be once the host has applied the keys
//! pressed just now, not a round trip late. [`Predictor`] holds a small rapier world of
//! its own, built by the host's own code: the same [`Physics::new`] step and
//! integration parameters, the map's walls built by the same [`GameMap::create`], the
//! tank's body by the same [`spawn_body`]. Each fixed step it turns its key state into
//! bits with the same [`KeyState`] rule, drives the body with the same [`drive_body`]
//! and steps the world: with nothing else near, the prediction is bit for bit what the
//! host computes (the `prediction_parity` tests check it after every tick). The pointer's
//! aims go the same way as the keys ([`Predictor::aim`], the spec's `apply_aim`): into
//! the same key state, so every step's bits carry the aim in force, and the replay turns
//! the gun toward it again from the replayed positions.
//!
//! ```text
//!  key(seq, action, name) ─┐
//!  aim(seq, point) ────────┴► KeyState ─► step(): bits ─► drive_body ─► Physics::step ─► history[tick]
//!                                                                                          │
//!  frame with a player block ─► on_player_block(serverTime, lastInputSeq, state) ─────────┘
//!        rewind to `state` at the client tick it stands for, replay the newer ticks' bits
//!        ─► Correction { distance, angle } ─► visual offset that decays ─► render_motion()
//! ```
//!
//! # Which ticks are replayed
//!
//! Inputs are events, sent only when a key changes, so a player block's `lastInputSeq`
//! cannot say which *ticks* the host has already simulated. The predictor works by time
//! instead. It counts its own steps (client ticks) and keeps an estimate `d` of
//! *(host tick at which an input is applied) − (client tick at which it was first
//! applied locally)*:
//!
//! - each input event remembers the client tick `c` whose step first uses it;
//! - the first player block (host tick `H`, from `serverTime = H · dt · 1000`) whose
//!   `lastInputSeq` covers the event proves the host applied it at a tick `≤ H`, so
//!   `H − c` is an upper bound of that event's delay (the block before did not cover it);
//! - jitter and lost packets only ever add delay, so `d` is the minimum of these bounds
//!   over the last [`PredictorConfig::delay_window`] events.
//!
//! A block at host tick `H` then stands for the client tick `c* = H − d`: the
//! predictor puts its tank at the block's state as the state after step `c*` and
//! replays every recorded step `c > c*` (`c + d > H`: inputs the host had not applied
//! yet) up to now, with the bits recorded for it. Before any input is acknowledged
//! there is no `d`, and a block counts as the current tick (nothing to replay). A block
//! whose state equals the prediction for `c*` bit for bit changes nothing.
//!
//! # What the player sees
//!
//! A reconciliation that moves the present by a little is not shown as a snap: the
//! difference goes into a visual offset that decays exponentially
//! ([`PredictorConfig::smoothing`], ~100 ms); [`Predictor::render_motion`] is the
//! prediction plus that offset. A jump farther than
//! [`PredictorConfig::snap_distance`] (a respawn, a team change) snaps at once.
//!
//! # Other bodies
//!
//! The prediction world holds the map's walls, the tank and what is near it, from the
//! latest snapshot ([`Predictor::set_obstacles`], [`Predictor::obstacles_from`]); far ones
//! are left out. Other tanks are kinematic bodies where the snapshot shows them: their
//! players' keys are not known here, but the tank bumps into them instead of driving
//! through. The map's movable boxes are dynamic bodies built by the host's own rule
//! ([`dynamic_box`]), so the tank pushes a box as it does on the host instead of stopping
//! against an immovable one: a rewind puts each near box where the reconciled frame shows
//! it (position, angle, and the velocities its row carries while it moves) and the replay
//! steps them with the tank. A box is as exact as the snapshot's quantized row, so pushing
//! one costs small corrections, not a rubber band.
//!
//! # Shots
//!
//! The predictor pulls the trigger with the host's own rule ([`trigger`]: reload timers,
//! ammo, weapon switch) at the same point of its step, so a local `fire` gives a
//! [`LocalShot`] ([`Predictor::take_shots`]) exactly when the host will shoot, along the
//! path of the host's own [`trace`] (without the host's random spread). The app draws it
//! at once with a local id and drops the authoritative copy of its own shots from the
//! frames ([`suppress_own_events`]).

use std::collections::{BTreeMap, VecDeque};

use rapier2d::prelude::{
    ColliderBuilder, InteractionGroups, Pose, RigidBodyBuilder, RigidBodyHandle, Rotation, Vector,
};
use vimp_netcode::divergence::{DivergenceConfig, DivergenceDetector, DivergenceRecord};
use vimp_netcode::input::{Aim, InputError, InputEvent, KeyAction, KeyBits, KeyState};
use vimp_netcode::schema::MapBodyFields;
use vimp_netcode::snapshot::{Block, FieldValue, Frame, Row};

use crate::engine::config::EngineConfig;
use crate::engine::map::bodies::set_body_groups;
use crate::engine::map::{
    DEFAULT_FRICTION, DEFAULT_RESTITUTION, FallModel, GameMap, LevelState, MapConfig, MapError, MapLevels, dynamic_box,
};
use crate::engine::physics::Physics;
use crate::engine::players::PlayerId;
use crate::engine::tags::encode_tag;
use crate::tanks::config::TanksConfig;
use crate::tanks::lagcomp::SeenHull;
use crate::tanks::level::{Footing, TankLevel, fall_levels, footing, state_from_row, step_tank_level};
use crate::tanks::movement::{Motion, wrap};
use crate::tanks::rows::{Rows, RowsError, key};
use crate::tanks::tank::{TANK_FRICTION, TANK_KIND, TANK_RESTITUTION, Weapon, body_motion, drive_body, spawn_body};
use crate::tanks::weapons::{bomb_launch, cool_down, trace, trigger};

/// How the predictor reconciles and smooths.
#[derive(Clone, Debug, PartialEq)]
pub struct PredictorConfig {
    /// Time constant of the visual offset's exponential decay, seconds.
    pub smoothing: f32,
    /// A correction moving the tank farther than this (world units) snaps, unsmoothed.
    pub snap_distance: f32,
    /// Steps of input history kept for replays.
    pub history: usize,
    /// Acknowledged inputs the delay estimate is the minimum over.
    pub delay_window: usize,
    /// Obstacles farther than this from the tank (world units, centre to centre, minus
    /// the obstacle's size) are left out of the prediction world.
    pub obstacle_radius: f32,
    /// Thresholds of the divergence records.
    pub divergence: DivergenceConfig,
}

impl Default for PredictorConfig {
    fn default() -> Self {
        PredictorConfig {
            smoothing: 0.1,
            snap_distance: 100.0,
            history: 360,
            delay_window: 32,
            obstacle_radius: 160.0,
            divergence: DivergenceConfig { angles: vec![2, 6], ..DivergenceConfig::default() },
        }
    }
}

/// Why a predictor could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PredictError {
    /// The game half of the client config does not parse.
    #[error("client config: game: {0}")]
    Config(#[from] serde_json::Error),
    /// `engine.timeStepMs` is missing or not a usable step.
    #[error("client config: engine.timeStepMs {0:?} is not a step in (0, 100] ms")]
    TimeStep(Option<f64>),
    /// `engine.mapScale` is not a positive number.
    #[error("client config: engine.mapScale {0} must be finite and > 0")]
    MapScale(f64),
    /// `engine.mapFallTime` is not a positive number.
    #[error("client config: engine.mapFallTime {0} must be finite and > 0")]
    FallTime(f64),
    /// The map does not build.
    #[error(transparent)]
    Map(#[from] Box<MapError>),
    /// The snapshot schema cannot carry the game's rows.
    #[error("client config: engine.snapshot: {0}")]
    Rows(#[from] RowsError),
}

/// What one reconciliation changed in the present.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Correction {
    /// The host tick of the block.
    pub host_tick: u32,
    /// The client tick the block stood for (`host_tick − delay`).
    pub client_tick: u32,
    /// How far the predicted position at the current tick moved, world units.
    pub distance: f32,
    /// How far the predicted hull heading at the current tick turned, rad, in (−π, π].
    pub angle: f32,
    /// Steps replayed on top of the block's state.
    pub replayed: u32,
    /// The correction was shown at once (first state, or a jump past the snap distance).
    pub snapped: bool,
}

/// A shot the local player's `fire` makes now, to draw before the host's copy comes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LocalShot {
    /// A tracer (`w1`) from `start` to `end`.
    Tracer {
        /// The local id (drawn as `L<id>`).
        id: u32,
        /// The muzzle.
        start: [f32; 2],
        /// Where it stops.
        end: [f32; 2],
        /// Whether it hit something.
        hit: bool,
    },
    /// A bomb (`w2`) launched from `at` with `velocity`.
    Bomb {
        /// The local id (drawn as `L<id>`).
        id: u32,
        /// Where it appears.
        at: [f32; 2],
        /// Its launch velocity.
        velocity: [f32; 2],
    },
}

/// One recorded step: the input it used (key bits and the aim in force) and the motion
/// after it, and the near boxes' states after it (`[x, y, angle, vx, vy, angvel]`).
#[derive(Clone, Debug)]
struct Record {
    tick: u32,
    bits: KeyBits,
    motion: Motion,
    level: TankLevel,
    boxes: Vec<(RigidBodyHandle, BoxState)>,
}

/// A box's state as a snapshot row carries it: `[x, y, angle, vx, vy, angvel]`.
type BoxState = [f32; 6];

/// The client's predictor of its own tank (see the module docs).
#[derive(Debug)]
pub struct Predictor {
    config: PredictorConfig,
    player: PlayerId,
    rules: TanksConfig,
    crate_key: Option<u8>,
    map: GameMap,
    physics: Physics,
    body: Option<RigidBodyHandle>,
    gun: f32,
    throttle: f32,
    keys: KeyState,
    tick: u32,
    history: VecDeque<Record>,
    sent: VecDeque<(u32, u32)>,
    delays: VecDeque<i64>,
    last_host_tick: Option<u32>,
    offset: [f32; 3],
    weapon: Weapon,
    ammo: [u32; 2],
    reload: [f32; 2],
    shots: Vec<LocalShot>,
    /// The other tanks' hulls as the player sees them drawn ([`Predictor::set_seen`]): what a
    /// shot is traced against, as the host judges it (lag compensation); `None` until set.
    seen: Option<Vec<SeenHull>>,
    next_shot: u32,
    obstacles: BTreeMap<ObstacleId, RigidBodyHandle>,
    /// How far a box row read from a frame may be from the host's state, per field (one step
    /// of its quantization): a row this close to the predicted box says nothing new.
    box_tolerance: BoxState,
    /// The sizes of the map's movable boxes (world units, by index): the prediction world is
    /// built without them (they come from the snapshots), but their rows need their sizes.
    boxes: Vec<(f32, f32)>,
    /// The near boxes as the last [`Predictor::set_obstacles`] showed them: where the next
    /// rewind puts them.
    box_states: Vec<(RigidBodyHandle, Obstacle)>,
    /// Where a box row keeps its fields (none when the schema has no key for the map's set).
    box_fields: Option<MapBodyFields>,
    /// Where the game's rows keep theirs.
    rows: Rows,
    divergence: DivergenceDetector,
    /// The tank's level (layered maps).
    level: TankLevel,
    /// How bodies fall on this map (its level height, the engine's `mapFallTime`).
    fall: FallModel,
}

impl Predictor {
    /// A predictor for `player` from what the client received: the `CONFIG_DATA` JSON
    /// ([`client_config`](crate::tanks::client_config)) and the map of `MAP_DATA`.
    ///
    /// The world holds the map's walls only; the map's movable boxes are obstacles
    /// ([`Predictor::set_obstacles`]). There is no tank until the first player block.
    pub fn new(
        client_config: &serde_json::Value,
        map: &MapConfig,
        player: PlayerId,
        config: PredictorConfig,
    ) -> Result<Predictor, PredictError> {
        let engine = &client_config["engine"];
        let step_ms = engine["timeStepMs"].as_f64();
        let dt = match step_ms {
            Some(ms) if ms > 0.0 && ms <= 100.0 => (ms / 1000.0) as f32,
            _ => return Err(PredictError::TimeStep(step_ms)),
        };
        let scale = engine["mapScale"].as_f64().unwrap_or(1.0);
        if !(scale.is_finite() && scale > 0.0) {
            return Err(PredictError::MapScale(scale));
        }
        let scale = scale as f32;
        let rules = TanksConfig::from_value(&client_config["game"])?;
        let schema = vimp_netcode::schema::SnapshotSchema::from_value(engine["snapshot"].clone()).ok();
        let rows = match &schema {
            Some(schema) => Rows::of(schema)?,
            None => Rows::builtin(),
        };
        let crate_block =
            schema.as_ref().and_then(|s| s.by_name(if map.set_id.is_empty() { "c1" } else { &map.set_id }));
        let crate_key = crate_block.map(|b| b.id);
        let box_fields = crate_block.map(MapBodyFields::of);
        let mut box_tolerance = [vimp_netcode::schema::Quant::DEFAULT.step(); 6];
        if let Some((block, f)) = crate_block.zip(box_fields) {
            let [vx, vy, angvel] = f.velocity;
            for (t, field) in box_tolerance.iter_mut().zip([Some(f.x), Some(f.y), Some(f.angle), vx, vy, angvel]) {
                if let Some(field) = field {
                    *t = block.step_of(field);
                }
            }
        }
        let fall_time = engine["mapFallTime"].as_f64().unwrap_or(f64::from(EngineConfig::default().map_fall_time));
        if !(fall_time.is_finite() && fall_time > 0.0) {
            return Err(PredictError::FallTime(fall_time));
        }
        let walls = MapConfig { physics_dynamic: Vec::new(), ..map.clone() };
        let mut physics = Physics::new(dt);
        let built = GameMap::create(&walls, scale, physics.world_mut()).map_err(Box::new)?;
        let fall = FallModel::new(built.levels().level_height(), fall_time as f32);
        let ammo = [rules.weapons.w1.ammo, rules.weapons.w2.ammo];
        Ok(Predictor {
            divergence: DivergenceDetector::new(config.divergence.clone()),
            config,
            player,
            rules,
            crate_key,
            map: built,
            physics,
            body: None,
            gun: 0.0,
            throttle: 0.0,
            keys: KeyState::new(),
            tick: 0,
            history: VecDeque::new(),
            sent: VecDeque::new(),
            delays: VecDeque::new(),
            last_host_tick: None,
            offset: [0.0; 3],
            weapon: Weapon::Gun,
            ammo,
            reload: [0.0; 2],
            shots: Vec::new(),
            seen: None,
            next_shot: 1,
            obstacles: BTreeMap::new(),
            box_tolerance,
            boxes: map.physics_dynamic.iter().map(|o| (o.width * scale, o.height * scale)).collect(),
            box_states: Vec::new(),
            box_fields,
            rows,
            level: TankLevel::default(),
            fall,
        })
    }

    /// The player whose tank this predicts.
    pub fn player(&self) -> PlayerId {
        self.player
    }

    /// The fixed step, seconds.
    pub fn dt(&self) -> f32 {
        self.physics.dt()
    }

    /// Steps taken so far (the current client tick).
    pub fn tick(&self) -> u32 {
        self.tick
    }

    /// The game rules the predictor runs (models, weapons, keys).
    pub fn rules(&self) -> &TanksConfig {
        &self.rules
    }

    /// The map's walls, as built into the prediction world.
    pub fn map(&self) -> &GameMap {
        &self.map
    }

    /// The prediction world (walls, the tank, nearby obstacles).
    pub fn physics(&self) -> &Physics {
        &self.physics
    }

    /// Applies a key event the client sent, by the host's rule (held and one-shot bits);
    /// `Ok(false)` for a seq already applied.
    pub fn key(&mut self, seq: u32, action: KeyAction, name: &str) -> Result<bool, InputError> {
        let event = InputEvent { seq, action, name: name.to_owned() };
        let accepted = self.keys.apply(&self.rules.player_keys, &event)?;
        if accepted {
            self.sent.push_back((seq, self.tick + 1));
        }
        Ok(accepted)
    }

    /// Applies an aim the client sent (`None` lets go of it), by the host's rule (the latest
    /// aim wins, in the keys' seq space); `false` for a seq already applied.
    pub fn aim(&mut self, seq: u32, aim: Option<Aim>) -> bool {
        let accepted = self.keys.apply_aim(seq, aim);
        if accepted {
            self.sent.push_back((seq, self.tick + 1));
        }
        accepted
    }

    /// Runs one fixed step: this step's key bits, the movement rule, the trigger, the
    /// physics step; records the step for replays and lets the visual offset decay.
    pub fn step(&mut self) {
        let bits = self.keys.step();
        let dt = self.dt();
        self.tick += 1;
        cool_down(&mut self.reload, dt);
        if let Some(body) = self.body {
            let footing = self.footing(body);
            (self.gun, self.throttle) = drive_body(
                &mut self.physics,
                body,
                self.gun,
                self.throttle,
                bits,
                &self.rules.models.tank,
                dt,
                footing,
            );
            if let Some(weapon) = trigger(&mut self.weapon, &mut self.ammo, &mut self.reload, bits, &self.rules.weapons)
            {
                self.shoot(body, weapon);
            }
        }
        self.physics.step();
        self.step_level();
        let decay = libm::expf(-dt / self.config.smoothing.max(1e-6));
        for o in &mut self.offset {
            *o *= decay;
        }
        let motion = self.motion().unwrap_or_default();
        let boxes = self.box_states_now();
        self.history.push_back(Record { tick: self.tick, bits, motion, level: self.level, boxes });
        while self.history.len() > self.config.history.max(1) {
            self.history.pop_front();
        }
        let oldest = self.history.front().map_or(self.tick, |r| r.tick);
        // Inputs older than the whole history can no longer be lined up with a step.
        while self.sent.front().is_some_and(|&(_, c)| c + (self.config.history as u32) < oldest) {
            self.sent.pop_front();
        }
    }

    /// Reconciles with a frame's player block: the host's state after the tick of
    /// `server_time_ms` (see the module docs). Returns what it changed in the present, or
    /// `None` for a block not newer than the last one (or with non-finite numbers).
    pub fn on_player_block(&mut self, server_time_ms: f64, last_input_seq: u32, state: [f32; 8]) -> Option<Correction> {
        self.reconcile(server_time_ms, last_input_seq, state, None)
    }

    /// [`Self::on_player_block`] with the tank's own row's `(level, z)` from the same frame
    /// (layered maps): the level the block's state stands on ([`state_from_row`]). Without
    /// it the prediction's own level for that tick stands.
    pub fn reconcile(
        &mut self,
        server_time_ms: f64,
        last_input_seq: u32,
        state: [f32; 8],
        row_level: Option<(u8, f32)>,
    ) -> Option<Correction> {
        let tick = server_time_ms / (self.dt() as f64 * 1000.0);
        if !tick.is_finite() || tick < 0.0 || state.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let host_tick = tick.round() as u32;
        if self.last_host_tick.is_some_and(|t| host_tick <= t) {
            return None;
        }
        self.last_host_tick = Some(host_tick);
        while let Some(&(seq, first_step)) = self.sent.front() {
            if seq > last_input_seq {
                break;
            }
            self.sent.pop_front();
            self.delays.push_back(host_tick as i64 - first_step as i64);
            while self.delays.len() > self.config.delay_window.max(1) {
                self.delays.pop_front();
            }
        }
        let authoritative = Motion::from_state(state);
        let oldest = self.history.front().map_or(self.tick, |r| r.tick.saturating_sub(1));
        let at = match self.delay() {
            Some(d) => (host_tick as i64 - d).clamp(oldest as i64, self.tick as i64) as u32,
            None => self.tick,
        };
        let predicted_level = if at == self.tick {
            Some(self.level)
        } else {
            self.history.iter().find(|r| r.tick == at).map(|r| r.level)
        };
        let level = self.level_from_row(row_level, [state[0], state[1]], predicted_level.unwrap_or(self.level));
        let Some(body) = self.body else {
            let body =
                spawn_body(&mut self.physics, &self.rules.models.tank, self.player, [state[0], state[1], state[2]]);
            self.body = Some(body);
            return Some(self.rewind_and_replay(host_tick, at, authoritative, level, None));
        };
        let before = body_motion(&self.physics, body, self.gun, self.throttle);
        let predicted =
            if at == self.tick { Some(before) } else { self.history.iter().find(|r| r.tick == at).map(|r| r.motion) };
        if let Some(p) = predicted {
            let replayed = match (self.sent.front(), self.sent.back()) {
                (Some(first), Some(last)) => Some((first.0, last.0)),
                _ => None,
            };
            self.divergence.check(server_time_ms, last_input_seq, &p.to_state(), &state, replayed);
            if bits_equal(&p, &authoritative) && predicted_level.is_none_or(|l| l.state == level.state) {
                return Some(Correction { host_tick, client_tick: at, ..Correction::default() });
            }
        }
        Some(self.rewind_and_replay(host_tick, at, authoritative, level, Some(before)))
    }

    /// The tank's level for a block's state at `p`: read back from its row when the frame
    /// carried one (layered maps), else `predicted` (the prediction's own for that tick).
    fn level_from_row(&self, row: Option<(u8, f32)>, p: [f32; 2], predicted: TankLevel) -> TankLevel {
        let levels = self.map.levels();
        match row {
            Some((level, z)) if levels.is_layered() => {
                let state = state_from_row(levels, &self.fall, self.dt(), level, z, p, predicted.state);
                let falling = if state == predicted.state { predicted.falling } else { fall_levels(levels, state) };
                TankLevel { state, falling }
            }
            _ => predicted,
        }
    }

    /// What the ground lets the tank's drive do now (layered maps; free on a flat one).
    fn footing(&self, body: RigidBodyHandle) -> Footing {
        let levels = self.map.levels();
        if !levels.is_layered() {
            return Footing::default();
        }
        let p = body_motion(&self.physics, body, self.gun, self.throttle);
        footing(&self.level, levels, [p.x, p.y])
    }

    /// The tank's level after a physics step (layered maps), by the host's own rule.
    fn step_level(&mut self) {
        let (Some(body), true) = (self.body, self.map.levels().is_layered()) else { return };
        step_tank_level(&mut self.physics, body, &mut self.level, self.map.levels(), &self.fall);
    }

    /// Puts the tank at `state` on `level` as the state after step `at` and replays the later steps.
    fn rewind_and_replay(
        &mut self,
        host_tick: u32,
        at: u32,
        state: Motion,
        level: TankLevel,
        before: Option<Motion>,
    ) -> Correction {
        let Some(body) = self.body else { return Correction::default() };
        if let Some(b) = self.physics.world_mut().bodies.get_mut(body) {
            b.set_translation(Vector::new(state.x, state.y), true);
            b.set_rotation(Rotation::from_angle(state.angle), true);
            b.set_linvel(Vector::new(state.vx, state.vy), true);
            b.set_angvel(state.angvel, true);
        }
        (self.gun, self.throttle) = (state.gun, state.throttle);
        self.level = level;
        if self.map.levels().is_layered() {
            let groups = level.state.groups(self.map.levels(), [state.x, state.y], true);
            set_body_groups(self.physics.world_mut(), body, groups);
        }
        // The near boxes as they were after step `at`: as predicted, unless the same frame
        // shows one farther off than its row's quantization; they replay with the tank.
        let predicted: Vec<(RigidBodyHandle, BoxState)> = match self.history.iter().find(|r| r.tick == at) {
            Some(r) => r.boxes.clone(),
            None => self.box_states_now(),
        };
        for (handle, o) in &self.box_states {
            let shown = [o.x, o.y, o.angle, o.velocity[0], o.velocity[1], o.velocity[2]];
            let kept = predicted.iter().find(|(h, _)| h == handle).map(|(_, p)| *p);
            let close = |p: &BoxState| {
                p.iter().zip(&shown).zip(&self.box_tolerance).enumerate().all(|(i, ((a, b), t))| {
                    let d = if i == 2 { wrap(a - b) } else { a - b };
                    d.abs() <= *t
                })
            };
            let state = kept.filter(close).unwrap_or(shown);
            if let Some(b) = self.physics.world_mut().bodies.get_mut(*handle) {
                b.set_translation(Vector::new(state[0], state[1]), true);
                b.set_rotation(Rotation::from_angle(state[2]), true);
                b.set_linvel(Vector::new(state[3], state[4]), true);
                b.set_angvel(state[5], true);
            }
        }
        let mut replayed = 0;
        let model = self.rules.models.tank.clone();
        let dt = self.dt();
        for i in 0..self.history.len() {
            let (tick, bits) = (self.history[i].tick, self.history[i].bits);
            if tick <= at {
                continue;
            }
            let footing = self.footing(body);
            (self.gun, self.throttle) =
                drive_body(&mut self.physics, body, self.gun, self.throttle, bits, &model, dt, footing);
            self.physics.step();
            self.step_level();
            self.history[i].motion = body_motion(&self.physics, body, self.gun, self.throttle);
            self.history[i].level = self.level;
            self.history[i].boxes = self.box_states_now();
            replayed += 1;
        }
        if at == self.tick
            && let Some(r) = self.history.back_mut()
            && r.tick == at
        {
            r.motion = state;
            r.level = level;
        }
        let after = body_motion(&self.physics, body, self.gun, self.throttle);
        let (dx, dy, da) = match before {
            Some(b) => (b.x - after.x, b.y - after.y, wrap(b.angle - after.angle)),
            None => (0.0, 0.0, 0.0),
        };
        let distance = libm::hypotf(dx, dy);
        let snapped = before.is_none() || distance > self.config.snap_distance;
        if snapped {
            self.offset = [0.0; 3];
            if before.is_some() {
                // A jump this far is a respawn: the host gave the tank a fresh loadout.
                self.weapon = Weapon::Gun;
                self.ammo = [self.rules.weapons.w1.ammo, self.rules.weapons.w2.ammo];
                self.reload = [0.0; 2];
            }
        } else {
            self.offset[0] += dx;
            self.offset[1] += dy;
            self.offset[2] = wrap(self.offset[2] + da);
        }
        Correction { host_tick, client_tick: at, distance, angle: -da, replayed, snapped }
    }

    /// The current delay estimate, ticks (see the module docs); `None` before any input
    /// was acknowledged.
    pub fn delay(&self) -> Option<i64> {
        self.delays.iter().copied().min()
    }

    /// The predicted motion now; `None` before the first player block (or after [`reset`](Self::reset)).
    pub fn motion(&self) -> Option<Motion> {
        self.body.map(|b| body_motion(&self.physics, b, self.gun, self.throttle))
    }

    /// What to draw: the predicted motion plus the decaying visual offset of past corrections.
    pub fn render_motion(&self) -> Option<Motion> {
        let m = self.motion()?;
        Some(Motion { x: m.x + self.offset[0], y: m.y + self.offset[1], angle: wrap(m.angle + self.offset[2]), ..m })
    }

    /// The visual offset now: `[dx, dy, dangle]`.
    pub fn offset(&self) -> [f32; 3] {
        self.offset
    }

    /// Forgets the tank (it died, or the map changed): no motion until the next player
    /// block, which then snaps. Keys and history are kept.
    pub fn reset(&mut self) {
        if let Some(body) = self.body.take() {
            self.physics.queue_removal(body);
            self.physics.apply_removals();
        }
        self.offset = [0.0; 3];
    }

    /// Takes the shots local `fire`s made since the last call, in order.
    pub fn take_shots(&mut self) -> Vec<LocalShot> {
        std::mem::take(&mut self.shots)
    }

    /// Sets the loadout the host reports (the panel's active weapon and ammo).
    pub fn sync_weapons(&mut self, weapon: Weapon, ammo: [u32; 2]) {
        self.weapon = weapon;
        self.ammo = ammo;
    }

    /// The tracer a `fire` would draw now (without the host's random spread), or `None`
    /// when the gun is not the active weapon, is reloading or empty, or there is no tank.
    pub fn tracer_now(&self) -> Option<LocalShot> {
        let body = self.body?;
        let w = Weapon::Gun.index();
        if self.weapon != Weapon::Gun || self.reload[w] > 0.0 || self.ammo[w] == 0 {
            return None;
        }
        let motion = body_motion(&self.physics, body, self.gun, self.throttle);
        let on = self.ray_level(&motion);
        let path = trace(
            &self.physics,
            &motion,
            body,
            &self.rules.models.tank,
            &self.rules.weapons.w1,
            0.0,
            on,
            self.seen.as_deref(),
        );
        Some(LocalShot::Tracer {
            id: self.next_shot,
            start: [path.start.x, path.start.y],
            end: [path.end.x, path.end.y],
            hit: path.hit.is_some(),
        })
    }

    /// The map's levels and the one the tank's shots start on (layered maps).
    fn ray_level(&self, motion: &Motion) -> Option<(&MapLevels, u8)> {
        let levels = Some(self.map.levels()).filter(|l| l.is_layered())?;
        Some((levels, self.level.state.effective_level(levels, [motion.x, motion.y], true)))
    }

    /// The tank's level now (the ground on a flat map).
    pub fn level(&self) -> TankLevel {
        self.level
    }

    fn shoot(&mut self, body: RigidBodyHandle, weapon: Weapon) {
        let motion = body_motion(&self.physics, body, self.gun, self.throttle);
        let id = self.next_shot;
        self.next_shot = self.next_shot.wrapping_add(1);
        let on = self.ray_level(&motion);
        let (model, weapons) = (&self.rules.models.tank, &self.rules.weapons);
        let shot = match weapon {
            Weapon::Gun => {
                let path = trace(&self.physics, &motion, body, model, &weapons.w1, 0.0, on, self.seen.as_deref());
                LocalShot::Tracer {
                    id,
                    start: [path.start.x, path.start.y],
                    end: [path.end.x, path.end.y],
                    hit: path.hit.is_some(),
                }
            }
            Weapon::Bomb => {
                let (at, velocity) = bomb_launch(&motion, model, &weapons.w2);
                LocalShot::Bomb { id, at: [at.x, at.y], velocity: [velocity.x, velocity.y] }
            }
        };
        self.shots.push(shot);
    }

    /// Feeds a decoded frame: reconciles with its player block, or, when a frame newer
    /// than the last block has none (the tank is dead), forgets the tank.
    pub fn on_frame(&mut self, frame: &Frame) -> Option<Correction> {
        match &frame.player {
            Some(p) => {
                let own = frame
                    .block(key::TANKS)
                    .into_iter()
                    .flat_map(|b| b.entries())
                    .find_map(|(i, row)| (i == Some(u32::from(self.player.0))).then_some(row).flatten());
                self.reconcile(
                    frame.server_time_ms,
                    p.last_input_seq,
                    p.state,
                    own.map(|row| self.rows.tanks.level(row)),
                )
            }
            None => {
                let tick = (frame.server_time_ms / (self.dt() as f64 * 1000.0)).round();
                if self.last_host_tick.is_none_or(|t| tick > t as f64) {
                    self.reset();
                }
                None
            }
        }
    }

    /// The near boxes' states now.
    fn box_states_now(&self) -> Vec<(RigidBodyHandle, BoxState)> {
        let world = self.physics.world();
        self.obstacles
            .iter()
            .filter(|(id, _)| Some(id.key) == self.crate_key)
            .filter_map(|(_, h)| {
                let b = world.bodies.get(*h)?;
                let (p, v) = (b.translation(), b.linvel());
                Some((*h, [p.x, p.y, b.rotation().angle(), v.x, v.y, b.angvel()]))
            })
            .collect()
    }

    /// The divergence records: where the prediction for a block's tick differed from the block.
    pub fn divergence(&self) -> &DivergenceDetector {
        &self.divergence
    }

    /// Takes the divergence records, oldest first.
    pub fn take_divergence(&mut self) -> Vec<DivergenceRecord> {
        self.divergence.take()
    }
}

fn bits_equal(a: &Motion, b: &Motion) -> bool {
    a.to_state().iter().zip(b.to_state()).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// The last field of a weapon event row: the game id of the player who fired.
pub fn event_author(row: &Row) -> Option<u8> {
    match row.last()? {
        FieldValue::U8(id) => Some(*id),
        _ => None,
    }
}

/// Drops from `frame` the tracer rows (`w1`) whose author is `local`: the local player's
/// tracers were drawn from prediction when fired. Returns how many rows were dropped.
///
/// Bomb rows (`w2`) are not events: a bomb is a hot row that lives on after its launch,
/// drawn from the host's rows alone.
pub fn suppress_own_events(frame: &mut Frame, local: PlayerId) -> usize {
    let own = |row: &Row| event_author(row) == Some(local.0);
    let mut dropped = 0;
    for (id, block) in &mut frame.blocks {
        if let (key::TRACERS, Block::List16(rows)) = (*id, &mut *block) {
            let before = rows.len();
            rows.retain(|r| !own(r));
            dropped += before - rows.len();
        }
    }
    dropped
}

mod obstacles;

pub use obstacles::{Obstacle, ObstacleId};

#[cfg(test)]
mod tests;
