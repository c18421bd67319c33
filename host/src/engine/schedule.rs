//! The host's fixed-step schedule: [`HostPlugin`], which builds the [`HostTick`] pipeline, and
//! the [`Host`] driver (the shared types are in [`sim`](crate::engine::sim)).
//!
//! One tick is one run of the [`HostTick`] schedule, a chained pipeline:
//!
//! ```text
//! Inputs → Game → Physics → Contacts → Deletions → Snapshot → Send
//! ```
//!
//! The schedule is run by the [`Host`] driver, never by Bevy's frame loop: the
//! embedded host steps it from real time through its own accumulator ([`FixedClock`],
//! part of every dump), and the headless runner steps it as fast as it can.

use std::time::Duration;

use bevy::app::PluginsState;
use bevy::ecs::schedule::SingleThreadedExecutor;
use bevy::prelude::*;
use vimp_netcode::schema::SnapshotSchema;

use crate::engine::config::{ConfigError, InitConfig};
use crate::engine::game::{GameHooks, GameInit, GameMigration};
use crate::engine::map::load::MapLoadError;
use crate::engine::map::state::MapState;
use crate::engine::map::{self, MapConfig, MapError};
use crate::engine::meta::{MetaOutbox, Outgoing};
use crate::engine::migration::log::{LogEntry, LogEvent, LogRecorder};
use crate::engine::physics::Physics;
use crate::engine::players::{self, HostCommand, HostCommands, Participants, PlayerKeys, TickEvents};
use crate::engine::rng::SplitMix64;
use crate::engine::sim::{EngineSettings, FixedClock, HostSystems, HostTick, MatchInit, SimRng, Tick};
use crate::engine::snapshot::{
    self, DeltaStats, DeltaViewers, EventRows, FrameReceivers, FrameSeq, OutgoingFrames, SnapshotRows, SnapshotStats,
};
use crate::engine::state::{self, StateError};

/// The engine: resources, the [`HostTick`] schedule and its sets. A game plugin is added after it.
pub struct HostPlugin {
    config: InitConfig,
    schema: SnapshotSchema,
}

impl HostPlugin {
    /// Validates `config` into a plugin.
    pub fn new(config: InitConfig) -> Result<Self, ConfigError> {
        let schema = config.validate()?;
        Ok(HostPlugin { config, schema })
    }
}

impl Plugin for HostPlugin {
    fn build(&self, app: &mut App) {
        let engine = self.config.engine.clone();
        app.insert_resource(Tick(0))
            .insert_resource(FixedClock { step: engine.time_step as f64, accumulator: 0.0 })
            .insert_resource(SimRng(SplitMix64::new(self.config.seed())))
            .insert_resource(Physics::new(engine.time_step))
            .insert_resource(EngineSettings { config: engine, schema: self.schema.clone() })
            .insert_resource(GameInit(Some(self.config.game.clone())))
            .insert_resource(MatchInit(self.config.clone()))
            .insert_resource(GameMigration::from_game(&self.config.game))
            .insert_resource(snapshot::SnapshotBudget::from_game(&self.config.game))
            .init_resource::<MapState>()
            .init_resource::<crate::engine::nav::Nav>()
            .init_resource::<crate::engine::nav::Spatial>()
            .init_resource::<Participants>()
            .init_resource::<HostCommands>()
            .init_resource::<TickEvents>()
            .init_resource::<PlayerKeys>()
            .init_resource::<SnapshotRows>()
            .init_resource::<EventRows>()
            .init_resource::<FrameSeq>()
            .init_resource::<FrameReceivers>()
            .init_resource::<OutgoingFrames>()
            .init_resource::<SnapshotStats>()
            .init_resource::<DeltaViewers>()
            .init_resource::<DeltaStats>()
            .init_resource::<GameHooks>()
            .init_resource::<MetaOutbox>()
            .init_resource::<players::Scores>()
            .init_resource::<players::RoundEnds>()
            .init_resource::<players::Panels>();

        let mut schedule = Schedule::new(HostTick);
        schedule.set_executor(SingleThreadedExecutor::new());
        app.add_schedule(schedule);
        app.configure_sets(
            HostTick,
            (
                HostSystems::Inputs,
                HostSystems::Game,
                HostSystems::Physics,
                HostSystems::Contacts,
                HostSystems::Deletions,
                HostSystems::Snapshot.run_if(snapshot::snapshot_tick),
                HostSystems::Send.run_if(snapshot::snapshot_tick),
            )
                .chain(),
        );
        app.add_systems(
            HostTick,
            (advance_tick, players::apply_commands, crate::engine::nav::refresh_obstacles)
                .chain()
                .in_set(HostSystems::Inputs),
        )
        .add_systems(HostTick, (map::state::step_map_levels, step_physics).chain().in_set(HostSystems::Physics))
        .add_systems(HostTick, apply_removals.in_set(HostSystems::Deletions))
        .add_systems(HostTick, snapshot::clear_rows.in_set(HostSystems::Snapshot).before(snapshot::RowsSystems))
        .add_systems(HostTick, snapshot::pack_frames.in_set(HostSystems::Send));
    }
}

fn advance_tick(mut tick: ResMut<Tick>, mut frames: ResMut<OutgoingFrames>) {
    tick.0 += 1;
    // Frames not taken after the tick that packed them are dropped, as a socket would.
    *frames = OutgoingFrames::default();
}

fn step_physics(mut physics: ResMut<Physics>) {
    physics.step();
}

fn apply_removals(mut physics: ResMut<Physics>) {
    physics.apply_removals();
}

/// At most this many ticks are run by one [`Host::advance`] call; the rest of the time is dropped.
pub const MAX_STEPS_PER_ADVANCE: u32 = 12;

/// Why a host could not be made or restored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The init config is not valid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The state dump could not be restored.
    #[error(transparent)]
    State(#[from] StateError),
}

/// A host: the Bevy `App` running the match, driven one tick at a time.
///
/// Once [`Host::start_log`] is called, the driver records the migration log: every tick
/// with the commands it applied (and a state hash every few ticks), every map load, and the
/// chat lines the server hands it ([`Host::log_chat`]) ([`crate::engine::migration::log`]).
pub struct Host {
    app: App,
    log: Option<LogRecorder>,
}

impl Host {
    /// A host running `config` with `game` plugged in (headless, `MinimalPlugins`).
    pub fn new(config: InitConfig, game: impl Plugin) -> Result<Host, HostError> {
        let mut app = App::new();
        app.add_plugins(MinimalPlugins).add_plugins(HostPlugin::new(config)?).add_plugins(game);
        while app.plugins_state() == PluginsState::Adding {
            bevy::tasks::tick_global_task_pools_on_main_thread();
        }
        app.finish();
        app.cleanup();
        Ok(Host { app, log: None })
    }

    /// A host continuing the match of a state dump: built like [`Host::new`], then restored.
    pub fn restore(config: InitConfig, game: impl Plugin, dump: &[u8]) -> Result<Host, HostError> {
        let mut host = Host::new(config, game)?;
        host.load_state(dump)?;
        Ok(host)
    }

    /// Runs one tick (and logs it, when logging).
    pub fn step(&mut self) {
        let Some(log) = &self.log else {
            self.app.world_mut().run_schedule(HostTick);
            return;
        };
        let commands = self.app.world().resource::<HostCommands>().0.clone();
        let hash_due = log.hash_due(self.tick().wrapping_add(1));
        self.app.world_mut().run_schedule(HostTick);
        let tick = self.tick();
        // A hash that cannot be made (the game's save hook failed) is logged as none.
        let hash = if hash_due { self.sim_hash().ok() } else { None };
        if let Some(log) = &mut self.log {
            log.record(LogEvent::Step { tick, commands, hash });
        }
    }

    /// Starts recording the migration log, with a state hash every `hash_interval` ticks.
    /// Entries are numbered on from the last one recorded, if any.
    pub fn start_log(&mut self, hash_interval: u32) {
        let seq = self.log_seq();
        let mut log = LogRecorder::new(hash_interval);
        log.seq = seq;
        self.log = Some(log);
    }

    /// Stops recording the log (entries not taken are dropped).
    pub fn stop_log(&mut self) {
        self.log = None;
    }

    /// The log entries recorded since the last call, oldest first.
    pub fn take_log(&mut self) -> Vec<LogEntry> {
        self.log.as_mut().map(|l| std::mem::take(&mut l.entries)).unwrap_or_default()
    }

    /// The seq of the last log entry recorded (0 before any, or when not logging).
    pub fn log_seq(&self) -> u64 {
        self.log.as_ref().map_or(0, |l| l.seq)
    }

    /// The hash of the simulation state, the pacing accumulator left out (see [`state::sim_hash`]).
    pub fn sim_hash(&mut self) -> Result<u64, StateError> {
        state::sim_hash(self.app.world_mut())
    }

    /// Adds `elapsed` real time to the accumulator and returns how many ticks are now due
    /// (at most [`MAX_STEPS_PER_ADVANCE`]; past that the time is dropped). The caller runs
    /// them with [`Host::step`], taking each tick's frames in between.
    pub fn due_steps(&mut self, elapsed: Duration) -> u32 {
        let mut clock = *self.app.world().resource::<FixedClock>();
        clock.accumulator += elapsed.as_secs_f64();
        let due = (clock.accumulator / clock.step).floor().max(0.0);
        let steps = due.min(MAX_STEPS_PER_ADVANCE as f64) as u32;
        clock.accumulator -= steps as f64 * clock.step;
        if due > MAX_STEPS_PER_ADVANCE as f64 {
            clock.accumulator = clock.accumulator.min(clock.step);
        }
        self.app.world_mut().insert_resource(clock);
        steps
    }

    /// Adds `elapsed` real time and runs the ticks it covers (at most [`MAX_STEPS_PER_ADVANCE`]).
    pub fn advance(&mut self, elapsed: Duration) -> u32 {
        let steps = self.due_steps(elapsed);
        for _ in 0..steps {
            self.step();
        }
        steps
    }

    /// The init config this host was made with.
    pub fn init_config(&self) -> &InitConfig {
        &self.app.world().resource::<MatchInit>().0
    }

    /// The current tick.
    pub fn tick(&self) -> u32 {
        self.app.world().resource::<Tick>().0
    }

    /// Queues a command for the next tick.
    pub fn push(&mut self, command: HostCommand) {
        self.app.world_mut().resource_mut::<HostCommands>().push(command);
    }

    /// Loads a map (already validated by [`MapConfig::from_json`]); see [`map::load::load_map`].
    /// When logging, the load is logged whatever its outcome (a replay fails the same way).
    pub fn load_map(&mut self, map: MapConfig) -> Result<(), MapLoadError> {
        if let Some(log) = &mut self.log {
            log.record(LogEvent::Load(Box::new(map.clone())));
        }
        map::load::load_map(self.app.world_mut(), map)
    }

    /// Records a chat line the server broadcast (its JSON text) in the log, between ticks, when
    /// logging: the sim never sees it, a successor's shadow keeps it as recent chat.
    pub fn log_chat(&mut self, line: &str) {
        if let Some(log) = &mut self.log {
            log.record(LogEvent::Chat(line.to_owned()));
        }
    }

    /// Parses, validates and loads a map file's text; `label` names the file in errors.
    pub fn load_map_json(&mut self, label: &str, text: &str) -> Result<(), MapLoadError> {
        let map = MapConfig::from_json(label, text).map_err(|e: MapError| MapLoadError::Invalid(Box::new(e)))?;
        self.load_map(map)
    }

    /// The frames the last tick packed (none on ticks without a snapshot), taken.
    pub fn take_frames(&mut self) -> OutgoingFrames {
        std::mem::take(&mut *self.app.world_mut().resource_mut::<OutgoingFrames>())
    }

    /// The meta messages produced since the last call, taken.
    pub fn take_meta(&mut self) -> Vec<Outgoing> {
        std::mem::take(&mut self.app.world_mut().resource_mut::<MetaOutbox>().0)
    }

    /// The rounds the game ended since the last call, taken.
    pub fn take_round_ends(&mut self) -> Vec<players::RoundEnd> {
        std::mem::take(&mut self.app.world_mut().resource_mut::<players::RoundEnds>().0)
    }

    /// The whole match state as bytes (see [`state::serialize_state`]).
    pub fn serialize_state(&mut self) -> Result<Vec<u8>, StateError> {
        state::serialize_state(self.app.world_mut())
    }

    /// Replaces this host's match with a dump's (a host built with the same config and game).
    pub fn load_state(&mut self, dump: &[u8]) -> Result<(), StateError> {
        state::deserialize_state(self.app.world_mut(), dump)
    }

    /// A hash of the whole match state (the dump's bytes).
    pub fn state_hash(&mut self) -> Result<u64, StateError> {
        state::state_hash(self.app.world_mut())
    }

    /// A curated, deterministic JSON view of the match for debugging (see [`crate::engine::debug`]).
    pub fn debug_json(&mut self) -> serde_json::Value {
        crate::engine::debug::debug_json(self.app.world_mut())
    }

    /// The ECS world.
    pub fn world(&self) -> &World {
        self.app.world()
    }

    /// The ECS world, mutably.
    pub fn world_mut(&mut self) -> &mut World {
        self.app.world_mut()
    }

    /// The app (to add systems in tests and tools).
    pub fn app_mut(&mut self) -> &mut App {
        &mut self.app
    }
}
