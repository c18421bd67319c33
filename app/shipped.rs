//! What ships inside the binary: the maps of `maps/` and the sprites and sounds of `assets/`
//! (rust-embed, in every build), so that `vimp` runs from anywhere, a checkout or not; and the
//! player's own maps, in the data folder beside them.
//!
//! A map is named by a path. A file there is read (a designer's map, watched for saves); a
//! path that names no file but whose file name is a shipped map's (`maps/default.json`, the
//! default, or `default.json`) is the shipped map. The menus offer the shipped maps by name and
//! the `.json` files of the player's maps folder ([`user_maps_dir`]).

use std::path::{Path, PathBuf};

use bevy::asset::io::memory::{Dir, MemoryAssetReader};
use bevy::asset::io::{AssetSourceBuilder, AssetSourceId};
use bevy::prelude::*;

/// The shipped maps (`maps/*.json`).
#[derive(rust_embed::RustEmbed)]
#[folder = "maps/"]
#[include = "*.json"]
struct Maps;

/// The window's sprites and sounds (`assets/`).
#[derive(rust_embed::RustEmbed)]
#[folder = "assets/"]
#[include = "sprites/*"]
#[include = "sounds/*"]
struct Assets;

/// The environment variable that overrides the data folder.
pub const DATA_DIR_ENV: &str = "VIMP_DATA_DIR";

/// The platform's data folder for vimp: `$VIMP_DATA_DIR`, else `~/.local/share/vimp` on Linux
/// (`$XDG_DATA_HOME/vimp`), `~/Library/Application Support/vimp` on macOS,
/// `%LOCALAPPDATA%\vimp` on Windows.
pub fn data_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = env(DATA_DIR_ENV) {
        return Some(dir);
    }
    let dir = if cfg!(target_os = "windows") {
        env("LOCALAPPDATA")?.join("vimp")
    } else if cfg!(target_os = "macos") {
        env("HOME")?.join("Library/Application Support/vimp")
    } else {
        env("XDG_DATA_HOME").or_else(|| env("HOME").map(|h| h.join(".local/share")))?.join("vimp")
    };
    Some(dir)
}

/// The player's own maps: `maps` in the data folder.
pub fn user_maps_dir() -> Option<PathBuf> {
    data_dir().map(|d| d.join("maps"))
}

/// The shipped map whose file name `path` ends with, if any.
fn shipped_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let name = if name.ends_with(".json") { name.to_owned() } else { format!("{name}.json") };
    Maps::get(&name).is_some().then_some(name)
}

/// Whether `path` names a map file on disk (one a designer saves, to be watched).
pub fn is_file(path: &Path) -> bool {
    path.is_file()
}

/// The text of the map `path` names: the file there, else the shipped map of that file name.
/// The error says what was looked for, and which maps ship.
pub fn read_map(path: &Path) -> std::io::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let embedded = shipped_name(path).and_then(|name| Maps::get(&name));
            match embedded {
                Some(file) => String::from_utf8(file.data.into_owned()).map_err(std::io::Error::other),
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!(
                        "no map file {}, and no shipped map of that name (the shipped maps: {})",
                        path.display(),
                        shipped_maps().join(", ")
                    ),
                )),
            }
        }
        Err(e) => Err(e),
    }
}

/// The shipped maps' file names (`default.json`, …).
pub fn shipped_maps() -> Vec<String> {
    let mut names: Vec<String> = Maps::iter().map(|n| n.into_owned()).collect();
    names.sort();
    names
}

/// The `.json` files in the player's maps folder, sorted by name (none when it has none).
pub fn user_maps() -> Vec<PathBuf> {
    let Some(dir) = user_maps_dir() else { return Vec::new() };
    let mut maps: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect();
    maps.sort();
    maps
}

/// Whether the binary ships the asset at `path` (`sounds/shot.wav`), the window's asset root.
pub fn has_asset(path: &str) -> bool {
    Assets::get(path).is_some()
}

/// Makes the shipped sprites and sounds the window's default asset source: `assets.load(
/// "sprites/tank_hull.png")` reads them from the binary. Call before `AssetPlugin` (before
/// `DefaultPlugins`).
pub fn register_assets(app: &mut App) {
    let root = Dir::new(PathBuf::new());
    for name in Assets::iter() {
        if let Some(file) = Assets::get(&name) {
            root.insert_asset(Path::new(name.as_ref()), file.data.into_owned());
        }
    }
    app.register_asset_source(
        AssetSourceId::Default,
        AssetSourceBuilder::new(move || Box::new(MemoryAssetReader { root: root.clone() })),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shipped_map_reads_by_its_name_where_no_file_is() {
        let nowhere = std::env::temp_dir().join(format!("vimp-no-checkout-{}", std::process::id()));
        let default = read_map(&nowhere.join("maps/default.json")).expect("the shipped default map");
        assert!(default.contains("\"name\""), "{default:.80}");
        assert_eq!(read_map(Path::new("rooms")).ok(), read_map(&nowhere.join("rooms.json")).ok());
        let err = read_map(&nowhere.join("maps/nowhere.json")).expect_err("no such map");
        assert!(err.to_string().contains("bridge.json") && err.to_string().contains("default.json"), "{err}");
        assert!(shipped_maps().contains(&"test-small.json".to_owned()));
    }

    /// Every sound the tanks game names, the host's system sounds and the window's own, ships.
    #[test]
    fn every_sound_the_game_names_ships() {
        use vimp_host::tanks::{SOUND_FRAG, SOUND_ROUND_START};
        for name in [SOUND_ROUND_START, SOUND_FRAG, "shot", "blast"] {
            assert!(has_asset(&format!("sounds/{name}.wav")), "no assets/sounds/{name}.wav");
        }
        assert!(!has_asset("sounds/nothing.wav"));
    }
}
