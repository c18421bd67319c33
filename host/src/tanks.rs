//! The reference game: tanks. It plugs into the engine's system sets and hooks.
//!
//! - [`config`]: the `game` half of the init config (models, weapons, keys, rounds, migration);
//! - [`movement`]: how a tank drives — the one rule host and predictor share;
//! - [`level`]: tanks on layered maps — ramps, falls and their damage, for host and predictor alike;
//! - [`tank`]: tanks as entities (join, teams, spawn, damage, death, respawn);
//! - [`weapons`]: tracers, bombs, blasts;
//! - [`rounds`]: round timer, victory, game over;
//! - [`bots`]: bots that route, hunt, fight, take cover and keep out of blasts;
//! - [`figures`]: figures of a match of bots (stalls, first contact), read from outside;
//! - [`predict`]: the client's predictor of its own tank, and shot prediction;
//! - [`rows`]: the snapshot schema and rows;
//! - [`lagcomp`]: where a hit is decided: the hulls as the shooter saw them;
//! - [`duel`]: a strafing duel over a conditioned link, the figure of lag compensation;
//! - `save`: the game's part of dumps and map loads.

pub mod bots;
pub mod config;
pub mod duel;
pub mod figures;
pub mod lagcomp;
pub mod level;
pub mod movement;
pub mod predict;
pub mod rounds;
pub mod rows;
mod save;
pub mod tank;
pub mod weapons;

use bevy::prelude::*;

use crate::engine::config::InitConfig;
use crate::engine::game::{Game, MatchFigures};
use crate::engine::game::{GameInit, GameMigration};
use crate::engine::players::{MaxRewind, PlayerKeys, round_ended};
use crate::engine::sim::{EngineSettings, HostSystems, HostTick};
use crate::engine::snapshot::{RowsSystems, snapshot_tick};
use config::TanksConfig;

/// The system sound (SOUND, port 6) of a round's start: a file of the window's `assets/sounds/`.
pub const SOUND_ROUND_START: &str = "roundStart";
/// The system sound of a tank destroyed.
pub const SOUND_FRAG: &str = "frag";

/// The game's rules, from the init config's `game` half.
#[derive(Resource, Clone, Debug, Default)]
pub struct TanksRules(pub TanksConfig);

/// The tanks game as the engine runs it: [`init_config_with_bots`], [`TanksPlugin`],
/// [`client_config`], [`map_warnings`] and [`figures::BotFigures`].
pub const GAME: Game = Game {
    name: "tanks",
    init_config: init_config_with_bots,
    build: add_tanks,
    client_config,
    map_warnings,
    figures: bot_figures,
};

fn add_tanks(app: &mut App) {
    app.add_plugins(TanksPlugin);
}

fn bot_figures() -> Box<dyn MatchFigures> {
    Box::new(figures::BotFigures::default())
}

/// The tanks game. Add it after [`HostPlugin`](crate::engine::schedule::HostPlugin).
#[derive(Default)]
pub struct TanksPlugin;

impl TanksConfig {
    /// Reads the `game` half of an init config (`null` gives the defaults).
    pub fn from_value(game: &serde_json::Value) -> Result<TanksConfig, serde_json::Error> {
        if game.is_null() { Ok(TanksConfig::default()) } else { serde_json::from_value(game.clone()) }
    }
}

/// An init config for a tanks match: the tanks schema, the default rules, `seed`.
pub fn init_config(seed: u64) -> InitConfig {
    let mut config = InitConfig::default();
    config.engine.snapshot = serde_json::from_str(rows::SCHEMA_JSON).expect("the tanks schema is valid JSON");
    config.engine.seed = Some(seed);
    config.game = serde_json::to_value(TanksConfig::default()).expect("the default rules serialise");
    config
}

/// An init config like [`init_config`] whose bots (those that join) play at `skill`.
pub fn init_config_with_bots(seed: u64, skill: bots::BotSkill) -> InitConfig {
    let mut config = init_config(seed);
    config.game["bots"] = serde_json::to_value(config::BotRules { skill }).expect("the bot rules serialise");
    config
}

/// What `vimp map check` warns about for the tanks game: respawn points from which a tank of
/// the default model cannot reach the other team, and crates wedged across a corridor
/// ([`crate::engine::nav::check`]). The map must be valid.
pub fn map_warnings(
    map: &crate::engine::map::MapConfig,
) -> Result<Vec<crate::engine::nav::check::MapWarning>, crate::engine::map::MapError> {
    let scale = crate::engine::config::EngineConfig::default().map_scale;
    let mut world = rapier2d::prelude::PhysicsWorld::default();
    let built = crate::engine::map::GameMap::create(map, scale, &mut world)?;
    Ok(crate::engine::nav::check::map_warnings(&built, &world, TanksConfig::default().models.tank.width))
}

/// What clients get on `CONFIG_DATA`: the engine's client half (time step in MILLISECONDS,
/// the map scale, the snapshot schema, interpolation, the delta frames' byte budget) and the
/// game's (keys, models, weapons).
/// The predictor ([`predict::Predictor`]) is built from it and the map.
pub fn client_config(config: &InitConfig) -> serde_json::Value {
    let rules = TanksConfig::from_value(&config.game).unwrap_or_default();
    serde_json::json!({
        "engine": {
            "timeStepMs": config.engine.time_step * 1000.0,
            "mapScale": config.engine.map_scale,
            "mapFallTime": config.engine.map_fall_time,
            "snapshot": config.engine.snapshot,
            "interpolation": vimp_netcode::interp::InterpolationConfig::default(),
            // Each client's delta frames' byte budget, per second (the net graph shows it).
            "snapshotBudget": crate::engine::snapshot::SnapshotBudget::from_game(&config.game).0,
        },
        "game": {
            "playerKeys": rules.player_keys,
            "models": rules.models,
            "weapons": rules.weapons,
            "seed": config.engine.seed,
        }
    })
}

impl Plugin for TanksPlugin {
    fn build(&self, app: &mut App) {
        let game = app.world_mut().resource_mut::<GameInit>().0.take().unwrap_or_default();
        let rules = TanksConfig::from_value(&game).unwrap_or_else(|e| {
            tracing::error!("the game config does not parse ({e}); playing with the default rules");
            TanksConfig::default()
        });
        let layout = rows::Rows::of_or_builtin(&app.world().resource::<EngineSettings>().schema);
        app.insert_resource(PlayerKeys(rules.player_keys.clone()))
            .insert_resource(layout)
            .insert_resource(GameMigration { mid_round: rules.migration.mid_round })
            .insert_resource(MaxRewind(std::time::Duration::from_millis(u64::from(rules.max_rewind_ms))))
            .init_resource::<lagcomp::HullHistory>()
            .insert_resource(TanksRules(rules))
            .insert_resource(save::hooks())
            .init_resource::<rounds::Round>()
            .init_resource::<bots::RecentBlasts>()
            .init_resource::<weapons::NextShotId>();
        app.add_systems(
            HostTick,
            (
                rounds::run_rounds,
                tank::join_and_leave,
                tank::respawn_dead,
                bots::age_blasts,
                bots::index_tanks,
                bots::drive_bots,
                tank::drive_tanks,
                weapons::fire_weapons,
            )
                .chain()
                .in_set(HostSystems::Game),
        )
        .add_systems(
            HostTick,
            (
                tank::step_tank_levels,
                weapons::step_bomb_levels,
                weapons::burst_bombs,
                lagcomp::record_hulls,
                // On the ticks that show them, and on a round's end, which reports them.
                rows::publish_scores.run_if(snapshot_tick.or_else(round_ended)),
            )
                .chain()
                .in_set(HostSystems::Contacts),
        )
        .add_systems(
            HostTick,
            (rows::build_rows, rows::publish_panels).in_set(HostSystems::Snapshot).in_set(RowsSystems),
        );
    }
}
