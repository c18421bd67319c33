//! What the engine asks of a game, and what it offers one: the game's manual.
//!
//! A game is one [`Game`] value, which the app's commands, the window and a successor take
//! instead of naming a game (the app picks the one it plays in one place, `app/lib.rs`). It
//! says how to make a match's init config, plugs the game's systems into a host (it is the
//! [`Plugin`] a [`Host`](crate::Host) is built with), derives what clients get on
//! `CONFIG_DATA`, checks a map for the game's needs, and gathers the figures `vimp sim`
//! prints ([`MatchFigures`]).
//!
//! What the game's plugin does when it builds:
//!
//! - takes the `game` half of the init config from [`GameInit`] (once);
//! - inserts its [`GameHooks`]: its part of state dumps and checkpoints, of map loads and of
//!   the debug dump;
//! - may replace [`GameMigration`] with its own reading of `migration.midRound` (whether a
//!   successor continues the round or restarts it);
//! - adds its systems to the tick's stages ([`HostSystems`] in the [`HostTick`] schedule):
//!   it reads each player's keys and aim ([`PlayerKeys`], [`Participants`], [`TickEvents`]),
//!   moves bodies in the rapier world ([`Physics`]), and fills its snapshot rows
//!   ([`SnapshotRows`], in [`RowsSystems`]) for the schema its init config declares
//!   (`engine.snapshot`), tagging events with [`encode_tag`];
//! - may insert an [`AuthForm`]: a form a player fills in before playing, checked on the host;
//! - pushes its own meta (informs, panels, sounds) through the
//!   [`MetaOutbox`](crate::engine::meta::MetaOutbox).
//!
//! Bots are the engine's (a player joins as one with `HostCommand::Join { bot: true }`), and so
//! is their level, [`BotSkill`]: what a level means is the game's.
//!
//! `host/tests/host/second_game.rs` is a second game that uses this module alone.

use std::fmt;
use std::str::FromStr;

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

pub use crate::engine::auth::AuthForm;
pub use crate::engine::config::InitConfig;
use crate::engine::map::{MapConfig, MapError};
use crate::engine::nav::check::MapWarning;
pub use crate::engine::physics::Physics;
pub use crate::engine::players::{Participants, PlayerId, PlayerKeys, TickEvents};
pub use crate::engine::sim::{HostSystems, HostTick};
pub use crate::engine::snapshot::{RowsSystems, SnapshotRows};
pub use crate::engine::tags::encode_tag;

/// How good a match's bots are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BotSkill {
    /// Slow to react, wide of the mark, short-sighted.
    Easy,
    /// The default.
    #[default]
    Normal,
    /// Quick, accurate, far-sighted.
    Hard,
}

impl BotSkill {
    /// Every level, from the easiest.
    pub const ALL: [BotSkill; 3] = [BotSkill::Easy, BotSkill::Normal, BotSkill::Hard];

    /// Its name in configs and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            BotSkill::Easy => "easy",
            BotSkill::Normal => "normal",
            BotSkill::Hard => "hard",
        }
    }
}

impl fmt::Display for BotSkill {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BotSkill {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BotSkill::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| format!("unknown bot skill {s:?}: expected easy, normal or hard"))
    }
}

/// What `vimp sim` reports of a match of bots beyond the engine's own figures: fed the host's
/// world after every tick, it only reads it.
pub trait MatchFigures {
    /// Reads the world after a tick.
    fn observe(&mut self, world: &mut World);

    /// The figures, as fields of `vimp sim --json`, after `seconds` of match.
    fn report(&self, world: &mut World, seconds: f64) -> serde_json::Map<String, serde_json::Value>;

    /// The figures of [`Self::report`] for people, a line each.
    fn lines(&self, report: &serde_json::Map<String, serde_json::Value>) -> Vec<String>;
}

/// A game (see the module docs). Its fields are plain functions, so a description is a
/// constant the app can copy anywhere.
#[derive(Clone, Copy)]
pub struct Game {
    /// The game's name, for people.
    pub name: &'static str,
    /// The init config of a match with `seed` whose bots (those that join) play at the skill.
    pub init_config: fn(seed: u64, bots: BotSkill) -> InitConfig,
    /// Adds the game to a host's app, after [`HostPlugin`](crate::HostPlugin).
    pub build: fn(&mut App),
    /// What clients get on `CONFIG_DATA` for a match of `config`.
    pub client_config: fn(config: &InitConfig) -> serde_json::Value,
    /// What `vimp map check` and a map reload warn about for this game (the map must be valid).
    pub map_warnings: fn(map: &MapConfig) -> Result<Vec<MapWarning>, MapError>,
    /// A fresh gatherer of `vimp sim`'s figures.
    pub figures: fn() -> Box<dyn MatchFigures>,
}

impl Game {
    /// The init config of a match with `seed` and bots at the default skill.
    pub fn init(&self, seed: u64) -> InitConfig {
        (self.init_config)(seed, BotSkill::default())
    }
}

impl fmt::Debug for Game {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Game").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Plugin for Game {
    fn build(&self, app: &mut App) {
        (self.build)(app);
    }
}

/// The game's part in dumps and map loads: plain functions over the ECS world.
#[derive(Resource, Clone, Copy)]
pub struct GameHooks {
    /// Writes every game component and resource the sim depends on.
    pub save: fn(&mut World) -> Result<Vec<u8>, String>,
    /// Replaces the game's state with a saved one (in a host whose engine state is already restored).
    pub load: fn(&mut World, &[u8]) -> Result<(), String>,
    /// Called after every map load; an error leaves the world with no map.
    pub on_map_loaded: fn(&mut World) -> Result<(), String>,
    /// The game's part of [`crate::engine::debug::debug_json`].
    pub debug: fn(&mut World) -> serde_json::Value,
}

impl Default for GameHooks {
    fn default() -> Self {
        GameHooks {
            save: |_| Ok(Vec::new()),
            load: |_, _| Ok(()),
            on_map_loaded: |_| Ok(()),
            debug: |_| serde_json::Value::Null,
        }
    }
}

/// The game half of the init config, until the game takes it (once, when its plugin builds).
#[derive(Resource, Debug, Default)]
pub struct GameInit(pub Option<serde_json::Value>);

/// The game's say on host migration: `migration` in the init config's `game` half (spec 002's
/// `gameConfig.migration`). [`HostPlugin`](crate::engine::schedule::HostPlugin) reads it; a
/// game plugin may replace it with its own reading (and its own defaults).
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GameMigration {
    /// `midRound`: whether a successor continues the round from the host's checkpoint, from
    /// the very tick its shadow has (on). Off, the state dump does not carry the round over:
    /// [`Server::from_shadow`](crate::engine::server::Server::from_shadow) reloads the current
    /// map and the round starts again (the game's map hook respawns everyone), keeping the
    /// participants, their tokens, teams and scores. Without the key the engine reads it off
    /// (spec 002: without the flag the dump is not used); a game plugin may set its own default.
    pub mid_round: bool,
}

impl GameMigration {
    /// Reads `migration.midRound` from the `game` half of an init config (absent: off).
    pub fn from_game(game: &serde_json::Value) -> GameMigration {
        GameMigration { mid_round: game["migration"]["midRound"].as_bool().unwrap_or(false) }
    }
}
