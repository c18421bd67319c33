//! A game as the engine runs it: the one description the app's commands, the window and the
//! successor take instead of naming a game.
//!
//! A [`Game`] says how to make a match's init config, plugs the game's systems into a host
//! (it is the [`Plugin`] a [`Host`](crate::Host) is built with), derives what clients get on
//! `CONFIG_DATA`, checks a map for the game's needs, and gathers the figures `vimp sim`
//! prints. The app picks the one it plays in one place.
//!
//! Bots are the engine's (a player joins as one with `HostCommand::Join { bot: true }`), and so
//! is their level, [`BotSkill`]: what a level means is the game's.

use std::fmt;
use std::str::FromStr;

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

use crate::engine::config::InitConfig;
use crate::engine::map::{MapConfig, MapError};
use crate::engine::nav::check::MapWarning;

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
