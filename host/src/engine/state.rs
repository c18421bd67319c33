//! Mid-round state dumps: the whole match as bytes, and back into a fresh host.
//!
//! A dump is everything a successor needs to continue the match bit-identically:
//! the tick and the fixed-step accumulator, the rng, the rapier world (rapier skips
//! its pipeline on purpose: it holds only scratch buffers), the map with its state
//! bytes, the participants with their key states, the event rows not yet sent, the
//! frame seq, and the game's own state through its [`GameHooks`]. A field missing
//! here is a silent reset at every migration; the dump/restore tests catch it.
//!
//! The bytes go through [`crate::engine::container`] (versioned header, checksum, size
//! limit), as kind [`ContainerKind::CHECKPOINT`], version [`STATE_VERSION`].

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

use crate::engine::container::{self, ContainerError, ContainerKind};
use crate::engine::game::GameHooks;
use crate::engine::map::state::MapState;
use crate::engine::physics::Physics;
use crate::engine::players::Participants;
use crate::engine::rng::SplitMix64;
use crate::engine::sim::{FixedClock, SimRng, Tick};
use crate::engine::snapshot::{EventRows, FrameSeq};

/// Format version of the state dump; bump it with any change to what is serialised.
pub const STATE_VERSION: u16 = 3;

/// Why a dump could not be made or restored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// The container or its payload is bad.
    #[error("state dump: {0}")]
    Dump(#[from] ContainerError),
    /// The game's hook failed.
    #[error("state dump, game part: {0}")]
    Game(String),
}

#[derive(Serialize)]
struct EngineStateRef<'a> {
    tick: Tick,
    clock: FixedClock,
    rng: &'a SplitMix64,
    physics: &'a Physics,
    map: &'a MapState,
    participants: &'a Participants,
    events: &'a EventRows,
    frame_seq: FrameSeq,
    game: Vec<u8>,
}

#[derive(Deserialize)]
struct EngineState {
    tick: Tick,
    clock: FixedClock,
    rng: SplitMix64,
    physics: Physics,
    map: MapState,
    participants: Participants,
    events: EventRows,
    frame_seq: FrameSeq,
    game: Vec<u8>,
}

/// The whole match as bytes. Call between ticks.
pub fn serialize_state(world: &mut World) -> Result<Vec<u8>, StateError> {
    let clock = *world.resource::<FixedClock>();
    encode_state(world, clock)
}

/// The dump with `clock` in place of the world's own.
fn encode_state(world: &mut World, clock: FixedClock) -> Result<Vec<u8>, StateError> {
    let save = world.resource::<GameHooks>().save;
    let game = save(world).map_err(StateError::Game)?;
    let state = EngineStateRef {
        tick: *world.resource::<Tick>(),
        clock,
        rng: &world.resource::<SimRng>().0,
        physics: world.resource::<Physics>(),
        map: world.resource::<MapState>(),
        participants: world.resource::<Participants>(),
        events: world.resource::<EventRows>(),
        frame_seq: *world.resource::<FrameSeq>(),
        game,
    };
    Ok(container::encode(ContainerKind::CHECKPOINT, STATE_VERSION, &state)?)
}

/// Replaces the match in `world` (a host built with the same config and game) with a dump's.
///
/// Nothing is changed when the bytes do not decode.
pub fn deserialize_state(world: &mut World, bytes: &[u8]) -> Result<(), StateError> {
    let state: EngineState = container::decode(ContainerKind::CHECKPOINT, STATE_VERSION, bytes)?;
    world.insert_resource(state.tick);
    world.insert_resource(state.clock);
    world.insert_resource(SimRng(state.rng));
    world.insert_resource(state.physics);
    world.insert_resource(state.map);
    world.insert_resource(state.participants);
    world.insert_resource(state.events);
    world.insert_resource(state.frame_seq);
    // Derived from the map and the bodies, never dumped.
    crate::engine::nav::rebuild(world);
    let load = world.resource::<GameHooks>().load;
    load(world, &state.game).map_err(StateError::Game)
}

/// FNV-1a 64 of the dump bytes: equal hashes, equal matches.
pub fn state_hash(world: &mut World) -> Result<u64, StateError> {
    Ok(container::fnv1a64(&serialize_state(world)?))
}

/// FNV-1a 64 of the dump with the real-time accumulator zeroed: the hash of the simulation
/// alone, equal on two hosts that ran the same ticks from the same state however their
/// drivers paced them (the accumulator only says when the next tick is due; it never
/// reaches the sim). Host migration compares these.
pub fn sim_hash(world: &mut World) -> Result<u64, StateError> {
    let clock = FixedClock { accumulator: 0.0, ..*world.resource::<FixedClock>() };
    Ok(container::fnv1a64(&encode_state(world, clock)?))
}
