//! `vimp map check`: validates map files and prints every problem as `file:field: reason`, and
//! what the game's bodies could not do there as `file:field: warning: reason` (warnings keep the exit code 0).
//! A map that reads is then loaded into the game itself, as a match would load it: what the game
//! refuses (its teams' respawns, say) fails the check the same way.

use std::path::PathBuf;

use vimp_host::engine::game::Game;
use vimp_host::engine::map::MapConfig;

/// Checks every file for `game`; returns 0 when all are valid, 1 otherwise.
pub fn check(files: &[PathBuf], game: &Game) -> anyhow::Result<i32> {
    let mut failed = 0;
    for file in files {
        let label = file.display().to_string();
        let text = match crate::shipped::read_map(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{label}: {e}");
                failed += 1;
                continue;
            }
        };
        match MapConfig::from_json(&label, &text) {
            Ok(map) => {
                // What a match does with it: the game loads it, or refuses it.
                if let Err(why) = game_accepts(game, &map) {
                    failed += 1;
                    eprintln!("{label}: the game refuses the map: {why}");
                    continue;
                }
                let (w, h) = (map.map.first().map_or(0, |r| r.len()), map.map.len());
                let warnings = match (game.map_warnings)(&map) {
                    Ok(w) => w,
                    Err(e) => {
                        failed += 1;
                        eprintln!("{e}");
                        continue;
                    }
                };
                for warning in &warnings {
                    eprintln!("{label}:{warning}");
                }
                let noted = match warnings.len() {
                    0 => String::new(),
                    1 => ", 1 warning".to_owned(),
                    n => format!(", {n} warnings"),
                };
                let layered = if map.is_layered() {
                    let levels = map.levels.len() + 1;
                    format!(", {levels} levels and {} ramps", map.ramps.len())
                } else {
                    String::new()
                };
                println!(
                    "{label}: ok — \"{}\", {w}×{h} tiles{layered}, {} crates, respawns for {} teams{noted}",
                    map.name,
                    map.physics_dynamic.len(),
                    map.respawns.len()
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!("{e}");
            }
        }
    }
    Ok(i32::from(failed > 0))
}

/// Loads `map` into a match of `game` as a host loads it: `Err` with the game's reason when it
/// refuses the map.
pub fn game_accepts(game: &Game, map: &MapConfig) -> Result<(), String> {
    let config = (game.init_config)(0, vimp_host::engine::game::BotSkill::Normal);
    let mut host = vimp_host::Host::new(config, *game).map_err(|e| e.to_string())?;
    host.load_map(map.clone()).map_err(|e| e.to_string())
}

/// Reads the map at `path` as a match would: parsed, checked against the format's rules and
/// loaded by `game`; every problem in the error, one per line.
pub fn load_checked(path: &std::path::Path, game: &Game) -> anyhow::Result<MapConfig> {
    let label = path.display().to_string();
    let text = crate::shipped::read_map(path).map_err(|e| anyhow::anyhow!("reading the map {label}: {e}"))?;
    let map = MapConfig::from_json(&label, &text).map_err(|e| anyhow::anyhow!("{e}"))?;
    game_accepts(game, &map).map_err(|why| anyhow::anyhow!("{label}: the game refuses the map: {why}"))?;
    Ok(map)
}
