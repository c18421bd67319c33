//! The vimp desktop app and its command line.
//!
//! `vimp` is one binary: the window (menus, rendering, prediction) and the
//! headless modes for tests, benchmarks and home servers. This library holds what
//! the binary runs, so that tests can call it too.
//!
//! - [`cli`]: the command-line contract, every subcommand and its flags (`docs/cli.md` at
//!   length), and what each runs;
//! - [`sim_cmd`], [`net_cmd`] (`vimp host`, `vimp join`), [`signal_cmd`], [`map_cmd`],
//!   [`schema_cmd`]: the headless subcommands;
//! - [`home_room`]: the default setup's room: a host that serves its rendezvous, opens its
//!   router's ports and tells the invite, and players that follow the room to a new host;
//! - [`logs`]: the version and commit, the log file and the crash report;
//! - [`shipped`]: the maps, sprites and sounds inside the binary, and the player's own maps;
//! - [`setup`]: what the window and the headless commands share (the default rendezvous, the
//!   ICE flags, a new match, why a join did not get in);
//! - [`window`]: the window (menus, HUD, net graph, settings, the node thread);
//! - [`tanks`]: the game's side of the window (drawing, HUD words, prediction, the
//!   navigation overlay).

pub mod cli;
pub mod home_room;
pub mod logs;
pub mod map_cmd;
pub mod net_cmd;
pub mod ranks_bench;
pub mod schema_cmd;
pub mod setup;
pub mod shipped;
pub mod signal_bench;
pub mod signal_cmd;
pub mod sim_cmd;
pub mod tanks;
pub mod window;

/// The game this app plays: the one place that picks it. Everything else takes a
/// [`Game`](vimp_host::engine::game::Game) description.
pub const GAME: vimp_host::engine::game::Game = vimp_host::tanks::GAME;

/// What the window draws and says of [`GAME`].
pub const WINDOW: window::game::WindowGame = tanks::WINDOW;

/// How the window predicts the player's own actor in [`GAME`].
pub const PREDICTION: window::predict::MakePrediction = tanks::predict::make;
