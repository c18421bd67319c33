//! The player's settings: nickname, key bindings, how the gun aims, the window and sound, and
//! (advanced) the signalling server and ICE servers.
//!
//! Saved as JSON in the platform's config directory (`$XDG_CONFIG_HOME/vimp/settings.json`
//! or `~/.config/vimp/settings.json` on Linux, `~/Library/Application Support/vimp/` on
//! macOS, `%APPDATA%\vimp\` on Windows; `VIMP_CONFIG_DIR` overrides it). A file that
//! does not parse is kept aside as `settings.json.bad` and the defaults are used, so
//! nothing the player wrote is lost.

use std::path::{Path, PathBuf};

use bevy::prelude::*;
use serde::{Deserialize, Serialize};

use vimp_host::engine::game::BotSkill;

use crate::setup::DEFAULT_SIGNAL;

/// The environment variable that overrides the config directory.
pub const CONFIG_DIR_ENV: &str = "VIMP_CONFIG_DIR";

/// What the player chose, saved between runs.
#[derive(Resource, Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Settings {
    /// The nickname sent in the hello.
    pub nickname: String,
    /// The signalling server for lobby codes.
    pub signal_url: String,
    /// STUN server URLs (none by default: no third party is contacted unless named).
    pub stun: Vec<String>,
    /// TURN server URLs.
    pub turn: Vec<String>,
    /// The TURN user name.
    pub turn_user: String,
    /// The TURN password.
    pub turn_pass: String,
    /// Action name → key name (see [`crate::window::input::key_from_name`]).
    pub bindings: Vec<(String, String)>,
    /// Bots in a local match.
    pub bots: u8,
    /// How good the bots of a local or hosted match are.
    pub bot_skill: BotSkill,
    /// The map of a local match or a hosted one.
    pub map: String,
    /// How the player aims the gun: with the mouse pointer (the default) or with the gun keys only.
    pub aim: AimScheme,
    /// The window fills the screen (borderless) instead of being a window.
    pub fullscreen: bool,
    /// The window's size when not full screen, in logical pixels.
    pub window_size: [u32; 2],
    /// Frames wait for the screen's refresh (no tearing; a frame rate at most the screen's).
    pub vsync: bool,
    /// How large the menus and the HUD are drawn (1 = as designed).
    pub ui_scale: f32,
    /// The sounds' loudness, 0 to 1 (with the `audio` feature).
    pub volume: f32,
}

/// The window sizes the settings page offers.
pub const WINDOW_SIZES: [[u32; 2]; 5] = [[1280, 720], [1600, 900], [1920, 1080], [2560, 1440], [1024, 768]];

/// The UI scales the settings page offers.
pub const UI_SCALES: [f32; 5] = [0.75, 1.0, 1.25, 1.5, 2.0];

/// How the player aims the gun (`"aim"` in the settings file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AimScheme {
    /// `"pointer"`: the gun turns toward the mouse pointer, at the gun's turn rate; a gun key
    /// held turns it the keys' way until it is let go.
    #[default]
    Pointer,
    /// `"keys"`: the gun turns with the gun keys only; the pointer aims nothing.
    Keys,
}

impl AimScheme {
    /// Both schemes, in the order the settings page shows them.
    pub const ALL: [AimScheme; 2] = [AimScheme::Pointer, AimScheme::Keys];

    /// What the settings page calls it.
    pub fn label(self) -> &'static str {
        match self {
            AimScheme::Pointer => "mouse pointer (gun keys still turn it while held)",
            AimScheme::Keys => "gun keys only",
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            nickname: "player".into(),
            signal_url: DEFAULT_SIGNAL.into(),
            stun: Vec::new(),
            turn: Vec::new(),
            turn_user: String::new(),
            turn_pass: String::new(),
            bindings: default_bindings(),
            bots: 7,
            bot_skill: BotSkill::default(),
            map: "maps/default.json".into(),
            aim: AimScheme::default(),
            fullscreen: false,
            window_size: [1280, 720],
            vsync: true,
            ui_scale: 1.0,
            volume: 0.8,
        }
    }
}

/// The default key bindings of the game's actions.
pub fn default_bindings() -> Vec<(String, String)> {
    [
        ("forward", "KeyW"),
        ("back", "KeyS"),
        ("left", "KeyA"),
        ("right", "KeyD"),
        ("gunLeft", "KeyQ"),
        ("gunRight", "KeyE"),
        ("fire", "Space"),
        ("nextWeapon", "KeyR"),
        ("nextPlayer", "ArrowRight"),
        ("prevPlayer", "ArrowLeft"),
    ]
    .into_iter()
    .map(|(a, k)| (a.to_owned(), k.to_owned()))
    .collect()
}

impl Settings {
    /// The ICE servers these settings name.
    pub fn ice(&self) -> crate::setup::IceArgs {
        crate::setup::IceArgs {
            stun: self.stun.clone(),
            turn: self.turn.clone(),
            turn_user: (!self.turn_user.is_empty()).then(|| self.turn_user.clone()),
            turn_pass: (!self.turn_pass.is_empty()).then(|| self.turn_pass.clone()),
        }
    }

    /// The UI scale, kept to what egui draws well.
    pub fn ui_scale(&self) -> f32 {
        if self.ui_scale.is_finite() { self.ui_scale.clamp(0.5, 3.0) } else { 1.0 }
    }

    /// The volume, kept to 0..=1.
    pub fn volume(&self) -> f32 {
        if self.volume.is_finite() { self.volume.clamp(0.0, 1.0) } else { 0.8 }
    }

    /// The key bound to `action`, if any.
    pub fn binding(&self, action: &str) -> Option<&str> {
        self.bindings.iter().find(|(a, _)| a == action).map(|(_, k)| k.as_str())
    }

    /// Reads the settings at `path`: the defaults when there is no file; when the file
    /// does not parse, the defaults plus the reason (the file is left as it is).
    pub fn load_from(path: &Path) -> (Settings, Option<String>) {
        match std::fs::read_to_string(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (Settings::default(), None),
            Err(e) => (Settings::default(), Some(format!("{}: {e}", path.display()))),
            Ok(text) => match serde_json::from_str::<Settings>(&text) {
                Ok(mut s) => {
                    // Actions added since the file was written get their default key.
                    for (action, key) in default_bindings() {
                        if s.binding(&action).is_none() {
                            s.bindings.push((action, key));
                        }
                    }
                    (s, None)
                }
                Err(e) => {
                    let kept = bad_copy_path(path);
                    let _ = std::fs::copy(path, &kept);
                    (
                        Settings::default(),
                        Some(format!("{}: {e} (a copy is kept as {})", path.display(), kept.display())),
                    )
                }
            },
        }
    }

    /// Writes the settings to `path` (through a temporary file, so a crash never leaves half a file).
    pub fn save_to(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, path)
    }
}

/// Where the settings live (see the module docs); `None` when no home is known.
pub fn settings_path() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let dir = if let Some(d) = env(CONFIG_DIR_ENV) {
        d
    } else if cfg!(target_os = "windows") {
        env("APPDATA")?.join("vimp")
    } else if cfg!(target_os = "macos") {
        env("HOME")?.join("Library/Application Support/vimp")
    } else {
        env("XDG_CONFIG_HOME").or_else(|| env("HOME").map(|h| h.join(".config")))?.join("vimp")
    };
    Some(dir.join("settings.json"))
}

/// The maps the menus offer for a local or hosted match, by name: the shipped ones (`maps/`).
pub const MAPS: [(&str, &str); 3] =
    [("Arena", "maps/default.json"), ("Rooms", "maps/rooms.json"), ("Overpass", "maps/bridge.json")];

/// What the menus call a map file: its name when it is one of [`MAPS`], else the file itself.
pub fn map_label(file: &str) -> &str {
    let file = file.trim();
    MAPS.iter().find(|(_, f)| *f == file).map_or(file, |(name, _)| name)
}

/// The maps the menus offer: the shipped ones by name ([`MAPS`]), then the player's own, the
/// `.json` files of the maps folder in the data folder (`crate::shipped::user_maps_dir`), by
/// file name.
pub fn offered_maps() -> Vec<(String, String)> {
    let shipped = MAPS.iter().map(|(name, file)| ((*name).to_owned(), (*file).to_owned()));
    let own = crate::shipped::user_maps().into_iter().map(|path| {
        let name = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        (format!("{name} (yours)"), path.display().to_string())
    });
    shipped.chain(own).collect()
}

/// Where a file that did not parse is kept.
pub fn bad_copy_path(path: &Path) -> PathBuf {
    path.with_extension("json.bad")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("vimp-settings-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("settings.json")
    }

    #[test]
    fn settings_survive_a_save_and_a_load() {
        let path = scratch("roundtrip");
        let mut s =
            Settings { nickname: "Ann".into(), stun: vec!["stun:example.net:3478".into()], ..Settings::default() };
        s.bindings[0].1 = "ArrowUp".into();
        s.save_to(&path).unwrap();
        assert_eq!(Settings::load_from(&path), (s, None));
    }

    #[test]
    fn a_missing_file_gives_the_defaults_and_a_broken_one_says_why() {
        let path = scratch("broken");
        assert_eq!(Settings::load_from(&path), (Settings::default(), None));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "{\"nickname\": 5}").unwrap();
        let (s, err) = Settings::load_from(&path);
        assert_eq!(s, Settings::default());
        let err = err.expect("a reason");
        assert!(err.contains("settings.json") && err.contains("nickname") || err.contains("invalid type"), "{err}");
        assert_eq!(std::fs::read_to_string(bad_copy_path(&path)).unwrap(), "{\"nickname\": 5}", "a copy is kept");
    }

    #[test]
    fn old_files_get_new_actions_bound() {
        let path = scratch("old");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, r#"{"nickname": "Bo", "bindings": [["fire", "KeyF"]]}"#).unwrap();
        let (s, err) = Settings::load_from(&path);
        assert_eq!(err, None);
        assert_eq!(s.nickname, "Bo");
        assert_eq!(s.binding("fire"), Some("KeyF"));
        assert_eq!(s.binding("forward"), Some("KeyW"));
        assert_eq!(s.aim, AimScheme::Pointer, "a file from before aiming aims with the pointer");
    }

    #[test]
    fn the_menus_offer_the_shipped_maps_by_their_names_overpass_among_them() {
        assert_eq!(map_label("maps/bridge.json"), "Overpass");
        assert_eq!(map_label(&Settings::default().map), "Arena");
        assert_eq!(map_label(" my/own.json "), "my/own.json", "a file of the player's own is shown as it is");
        for (name, file) in MAPS {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
            let map = vimp_host::engine::map::MapConfig::from_json(file, &text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(map.name, name, "the menu calls {file} by its own name");
        }
        let overpass = MAPS.iter().find(|(name, _)| *name == "Overpass").expect("the layered map is offered").1;
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(overpass)).unwrap();
        let map = vimp_host::engine::map::MapConfig::from_json(overpass, &text).unwrap();
        assert!(vimp_host::engine::map::MapLevels::new(&map, 1.0).is_layered());
    }

    #[test]
    fn the_aim_scheme_is_saved_by_name() {
        let path = scratch("aim");
        let s = Settings { aim: AimScheme::Keys, ..Settings::default() };
        s.save_to(&path).unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains(r#""aim": "keys""#));
        assert_eq!(Settings::load_from(&path), (s, None));
    }
}
