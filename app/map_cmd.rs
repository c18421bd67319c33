//! `vimp map check`: validates map files and prints every problem as `file:field: reason`, and
//! what the game's bodies could not do there as `file:field: warning: reason` (warnings keep the exit code 0).

use std::path::PathBuf;

use vimp_host::engine::game::Game;
use vimp_host::engine::map::MapConfig;

/// Checks every file for `game`; returns 0 when all are valid, 1 otherwise.
pub fn check(files: &[PathBuf], game: &Game) -> anyhow::Result<i32> {
    let mut failed = 0;
    for file in files {
        let label = file.display().to_string();
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{label}: {e}");
                failed += 1;
                continue;
            }
        };
        match MapConfig::from_json(&label, &text) {
            Ok(map) => {
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
