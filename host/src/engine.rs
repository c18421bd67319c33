//! The engine half of the host: nothing here names a game word.
//!
//! - [`schedule`]: [`HostPlugin`](schedule::HostPlugin), the tick pipeline and the [`Host`](schedule::Host) driver;
//! - [`config`]: the init config (`engine` half read, `game` half delivered);
//! - [`players`]: participants, commands in, key bits per step;
//! - [`physics`]: the rapier world, contacts, the deletion queue, queries;
//! - [`map`] (with [`map::state`], a map loaded into the match): the map format, its validation, its bodies;
//! - [`snapshot`] and [`views`]: rows in, a v5 frame per watched player and a delta frame per
//!   receiver out, each client's of what it sees;
//! - [`state`]: mid-round dumps; [`container`]: the versioned, checksummed binary container they and
//!   checkpoints, logs and the game's state go in;
//! - [`roster`] and [`server`]: slots, tokens and resume; the host on the network;
//! - [`auth`]: the form a game may ask for before a player plays, checked on the host;
//! - [`migration`]: the log, checkpoints and the successor's shadow;
//! - [`node`]: one per process — the transport, the player's client and the role (following,
//!   shadowing, hosting), and every change of role: promotion, step-down, handoff;
//! - [`nav`]: navigation (routes, sight, corridors, soft obstacles), rays and the spatial grid;
//! - [`sim`]: what all of them share (the tick, the fixed clock, the match's random numbers,
//!   the engine settings, the tick's stages);
//! - [`game`]: what the engine needs of a game ([`Game`](game::Game)) and the bots' levels;
//! - [`rng`], [`tags`], [`meta`], [`debug`].

pub mod auth;
pub mod config;
pub mod container;
pub mod debug;
pub mod game;
pub mod map;
pub mod meta;
pub mod migration;
pub mod nav;
pub mod node;
pub mod physics;
pub mod players;
pub mod rng;
pub mod roster;
pub mod schedule;
pub mod server;
pub mod sim;
pub mod snapshot;
pub mod state;
pub mod tags;
pub mod views;
