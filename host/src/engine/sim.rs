//! What every part of the sim shares: the tick schedule's label and stages, the tick
//! number, the fixed clock, the match's random numbers, the engine settings and the game's
//! init config. Apart from the [`Host`](crate::engine::schedule::Host) driver, so that the
//! modules the driver runs (state, snapshot, debug, the game) need not import it.

use bevy::ecs::schedule::ScheduleLabel;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use vimp_netcode::schema::SnapshotSchema;

use crate::engine::config::EngineConfig;
use crate::engine::rng::SplitMix64;

/// The schedule of one fixed step.
#[derive(ScheduleLabel, Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostTick;

/// The chained stages of a tick, in order. All run in [`HostTick`].
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HostSystems {
    /// Engine: applies queued [`HostCommand`](crate::engine::players::HostCommand)s, turns key states into this step's bits and
    /// moves the navigation's soft obstacles to their bodies' poses.
    Inputs,
    /// Game: its rules (spawns, movement, weapons, bots, rounds) before physics.
    Game,
    /// Engine: one rapier step.
    Physics,
    /// Game: reacts to the contact pairs of the step ([`Physics::contacts`](crate::engine::physics::Physics::contacts)).
    Contacts,
    /// Engine: removes the bodies queued for removal during the tick.
    Deletions,
    /// Game, on snapshot ticks only: fills [`SnapshotRows`](crate::engine::snapshot::SnapshotRows) from the ECS.
    Snapshot,
    /// Engine, on snapshot ticks only: builds the map block and packs one frame per receiver.
    Send,
}

/// Number of the tick being run (1 for the first); 0 before any.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Tick(pub u32);

/// The fixed step and the real time not yet stepped.
#[derive(Resource, Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FixedClock {
    /// Seconds per tick.
    pub step: f64,
    /// Seconds of real time received and not yet stepped.
    pub accumulator: f64,
}

/// The match's random numbers: every random choice of the sim goes through this.
#[derive(Resource, Clone, Debug, PartialEq, Deref, DerefMut)]
pub struct SimRng(pub SplitMix64);

/// The validated engine config and snapshot schema.
#[derive(Resource, Clone, Debug)]
pub struct EngineSettings {
    /// The engine half of the init config.
    pub config: EngineConfig,
    /// The game's snapshot schema.
    pub schema: SnapshotSchema,
}

impl EngineSettings {
    /// Seconds per tick.
    pub fn dt(&self) -> f32 {
        self.config.time_step
    }

    /// Snapshot frames per second: one every `networkSendRate` ticks.
    pub fn frames_per_second(&self) -> f64 {
        1.0 / (f64::from(self.dt()) * f64::from(self.config.network_send_rate.max(1)))
    }
}

/// The init config the match was made with, whole: what a checkpoint carries so that a
/// successor builds its host alike ([`Host::init_config`](crate::Host::init_config)).
#[derive(Resource, Clone, Debug)]
pub struct MatchInit(pub crate::engine::config::InitConfig);
