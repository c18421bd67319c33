//! The desktop window: main menu, local matches, hosting and joining, the match view.
//!
//! One Bevy `App` with a window draws everything; egui (bevy_egui) draws the menus and
//! the HUD. A match is a [`net::MatchState`] in the [`ActiveMatch`] resource: the
//! window updates it once a frame, turns keys into input events, steps the predictor
//! and draws the interpolated world (the game's drawing, [`game::WindowGame`]). When this
//! process hosts,
//! the host runs on its own thread ([`node`]) and this window is just its first client; in a
//! match it joined, the same thread keeps the shadow that can take the match over.

pub mod game;
pub mod graph;
pub mod input;
pub mod net;
pub mod node;
mod pad;
pub mod predict;
pub mod settings;
pub mod sound;
#[cfg(test)]
mod tests;
pub mod tokens;
mod ui;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Instant;

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy::window::WindowResolution;
use bevy_egui::EguiPlugin;
use vimp_host::engine::game::BotSkill;
use vimp_netcode::lobby::{JoinTarget, LobbyCode};
use vimp_netcode::transport::Transport;
use vimp_netcode::transport::webrtc::WebRtcTransport;

use crate::window::net::Joining;
use crate::window::net::MatchState;
use crate::window::node::{HostConfig, NodeThread, OnlineConfig};
use crate::window::settings::Settings;
use crate::window::tokens::Tokens;

/// How the window runs.
#[derive(Clone, Debug)]
pub struct WindowOptions {
    /// The match to start at once (`None`: the main menu).
    pub start: Option<MatchKind>,
    /// Render this many frames, then exit (with `screenshot`: save the last one first).
    pub frames: Option<u32>,
    /// Where to save a PNG of the last frame.
    pub screenshot: Option<PathBuf>,
    /// Start with the navigation overlay (F4) on.
    pub nav_overlay: bool,
}

impl WindowOptions {
    /// A window that starts `start`, rendering and saving frames as `capture` says.
    pub fn captured(start: Option<MatchKind>, capture: crate::setup::CaptureArgs) -> WindowOptions {
        let frames = capture.frames.or(capture.screenshot.as_ref().map(|_| 240));
        WindowOptions { start, frames, screenshot: capture.screenshot, nav_overlay: false }
    }
}

/// A match to start.
#[derive(Clone, Debug, PartialEq)]
pub enum MatchKind {
    /// Bots and this player on an embedded host; the map file is watched.
    Local {
        /// The map file.
        map: PathBuf,
        /// Bots.
        bots: u8,
        /// How good they are.
        skill: BotSkill,
    },
    /// An embedded host friends join by lobby code.
    Host {
        /// The map file.
        map: PathBuf,
        /// Bots.
        bots: u8,
        /// How good they are.
        skill: BotSkill,
        /// A lobby password.
        password: Option<String>,
        /// The lobby code (a random one by default).
        code: Option<String>,
        /// The signalling server (the settings' one by default).
        signal: Option<String>,
        /// What `vimp host`'s flags say beyond the menu's Host page.
        extras: HostExtras,
    },
    /// A match someone else hosts.
    Join {
        /// The lobby code or room URL.
        target: String,
        /// The lobby password.
        password: Option<String>,
        /// The signalling server (the settings' one by default).
        signal: Option<String>,
        /// Watch instead of play.
        spectate: bool,
        /// The nickname (the settings' one by default).
        nickname: Option<String>,
        /// How long the host may stay silent before the successors take over, ms (500).
        host_timeout_ms: Option<u64>,
        /// What `vimp join`'s flags say beyond the menu's Join page.
        extras: JoinExtras,
    },
}

/// What `vimp join` may ask of the window's join beyond the menu's Join page; the defaults are
/// the menu's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JoinExtras {
    /// The player's identity file (`identity.json` beside the settings by default).
    pub identity: Option<PathBuf>,
    /// Play unverified: ask the rendezvous for no token.
    pub unverified: bool,
    /// ICE servers, before the settings' ones.
    pub ice: crate::setup::IceArgs,
}

/// What `vimp host` may ask of the window's host beyond the menu's Host page; the defaults are
/// the menu's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostExtras {
    /// The match seed (a random one by default).
    pub seed: Option<u64>,
    /// How long a round lasts, seconds (the game's rules by default).
    pub round_seconds: Option<f32>,
    /// Most players, bots included (the engine's default, 16, by default).
    pub max_players: Option<usize>,
    /// Maps players may vote for, besides the one played.
    pub vote_maps: Vec<PathBuf>,
    /// Where an embedded signalling server listens (`0.0.0.0:3536` by default).
    pub bind: Option<std::net::SocketAddr>,
    /// ICE servers, before the settings' ones.
    pub ice: crate::setup::IceArgs,
}

/// The screen shown.
#[derive(States, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Screen {
    /// The main menu.
    #[default]
    Menu,
    /// A match.
    Match,
}

/// The system set in which the match takes in the network each frame; drawing runs after it.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatchUpdate;

/// The egui systems that paint on the world itself (a tank's name): they run before the HUD,
/// on the background layer, so that every panel covers what they paint.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct WorldText;

/// The match being played (behind a mutex only to make the client `Sync`; systems take it exclusively).
#[derive(Resource)]
pub struct ActiveMatch(pub Mutex<MatchState>);

impl ActiveMatch {
    /// The match.
    pub fn get(&mut self) -> &mut MatchState {
        self.0.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Settings and where they live.
#[derive(Resource, Debug)]
pub struct SettingsStore {
    /// The settings in use.
    pub settings: Settings,
    /// Where they are saved (`None`: no config directory known; they are not saved).
    pub path: Option<PathBuf>,
    /// A problem reading or writing them, shown in the settings page.
    pub problem: Option<String>,
}

impl SettingsStore {
    /// Saves the settings, keeping any problem to show.
    pub fn save(&mut self) {
        if let Some(path) = &self.path {
            self.problem = self.settings.save_to(path).err().map(|e| format!("saving {}: {e}", path.display()));
        }
    }
}

/// A match asked for by a menu or the command line, started by [`start_requested`].
#[derive(Resource, Default, Debug)]
pub struct MatchRequest {
    /// The match to start.
    pub kind: Option<MatchKind>,
    /// Why the last one could not start.
    pub error: Option<String>,
}

/// `--frames N --screenshot FILE`.
#[derive(Resource, Debug)]
struct Capture {
    frames_left: Option<u32>,
    path: Option<PathBuf>,
    requested: bool,
    saved: std::sync::Arc<std::sync::atomic::AtomicBool>,
    failed: std::sync::Arc<Mutex<Option<String>>>,
}

/// Opens the window and runs until it closes; returns the process exit code.
pub fn run(options: WindowOptions) -> anyhow::Result<i32> {
    if cfg!(all(unix, not(target_os = "macos")))
        && ["DISPLAY", "WAYLAND_DISPLAY", "WAYLAND_SOCKET"]
            .iter()
            .all(|v| std::env::var_os(v).is_none_or(|v| v.is_empty()))
    {
        anyhow::bail!(
            "no display to open the window on (DISPLAY and WAYLAND_DISPLAY are not set): run it in a desktop \
             session or under xvfb-run, or use a headless command (vimp sim, vimp host --headless, vimp join --headless)"
        );
    }
    let (settings, path, problem) = match settings::settings_path() {
        Some(path) => {
            let (s, problem) = Settings::load_from(&path);
            (s, Some(path), problem)
        }
        None => (Settings::default(), None, Some("no config directory: settings are not saved".into())),
    };
    let request = MatchRequest { kind: options.start.clone(), error: None };
    let failed = std::sync::Arc::new(Mutex::new(None));
    let capture = Capture {
        frames_left: options.frames,
        path: options.screenshot.clone(),
        requested: false,
        saved: Default::default(),
        failed: failed.clone(),
    };

    let mut app = App::new();
    // The sprites and sounds come from the binary, wherever it runs.
    crate::shipped::register_assets(&mut app);
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title: "vimp".into(),
                    resolution: WindowResolution::new(settings.window_size[0], settings.window_size[1]),
                    ..default()
                }),
                ..default()
            })
            // The log file in the data folder, beside Bevy's console output.
            .set(bevy::log::LogPlugin { custom_layer: |_| crate::logs::file_layer(), ..default() }),
    );
    add_window(&mut app, SettingsStore { settings, path, problem }, request, capture, options.nav_overlay);
    let exit = app.run();
    if let Some(e) = failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
        anyhow::bail!(e);
    }
    Ok(match exit {
        AppExit::Success => 0,
        AppExit::Error(code) => code.get() as i32,
    })
}

/// Everything the window adds over what opens it and reads its input (`DefaultPlugins` in
/// [`run`]; a window with no GPU in the tests that drive it): egui, the screens, the menus and
/// the HUD, sounds and the game's drawing.
fn add_window(app: &mut App, store: SettingsStore, request: MatchRequest, capture: Capture, nav_overlay: bool) {
    app.add_plugins(EguiPlugin::default())
        .insert_resource(ClearColor(Color::srgb(0.08, 0.09, 0.1)))
        .insert_resource(store)
        .insert_resource(request)
        .insert_resource(capture)
        .init_state::<Screen>()
        .add_systems(Startup, spawn_camera)
        .add_systems(
            Update,
            (start_requested, update_match.in_set(MatchUpdate).run_if(in_state(Screen::Match)), capture_frames).chain(),
        )
        .add_plugins(ui::UiPlugin)
        .add_plugins(sound::SoundPlugin)
        .add_systems(PostUpdate, apply_settings)
        .insert_resource(game::NavOverlayOn(nav_overlay));
    (crate::WINDOW.plugins)(app);
}

/// Applies the settings a player sees at once: full screen or a window of its size, vsync, the
/// UI's scale (and, with the `audio` feature, the volume), each time they change.
fn apply_settings(
    store: Res<SettingsStore>,
    mut windows: Query<&mut Window, With<bevy::window::PrimaryWindow>>,
    mut egui: Query<&mut bevy_egui::EguiContext>,
    #[cfg(feature = "audio")] mut volume: ResMut<bevy::audio::GlobalVolume>,
    mut seen: Local<Option<settings::Settings>>,
) {
    let s = &store.settings;
    let display =
        |s: &settings::Settings| (s.fullscreen, s.window_size, s.vsync, s.ui_scale().to_bits(), s.volume().to_bits());
    let added = !egui.is_empty() && seen.as_ref().is_none_or(|old| display(old) != display(s));
    if !added {
        return;
    }
    for mut window in &mut windows {
        let mode = if s.fullscreen {
            bevy::window::WindowMode::BorderlessFullscreen(bevy::window::MonitorSelection::Current)
        } else {
            bevy::window::WindowMode::Windowed
        };
        if window.mode != mode {
            window.mode = mode;
        }
        let [w, h] = s.window_size;
        if !s.fullscreen && (window.resolution.width() as u32, window.resolution.height() as u32) != (w, h) {
            window.resolution.set(w as f32, h as f32);
        }
        let present =
            if s.vsync { bevy::window::PresentMode::AutoVsync } else { bevy::window::PresentMode::AutoNoVsync };
        if window.present_mode != present {
            window.present_mode = present;
        }
    }
    for mut context in &mut egui {
        context.get_mut().set_zoom_factor(s.ui_scale());
    }
    #[cfg(feature = "audio")]
    {
        *volume = bevy::audio::GlobalVolume::new(bevy::audio::Volume::Linear(s.volume()));
    }
    *seen = Some(s.clone());
}

fn spawn_camera(mut commands: Commands) {
    commands.spawn((Camera2d, game::MainCamera));
}

/// Starts the match a menu or the command line asked for.
fn start_requested(
    mut commands: Commands,
    mut request: ResMut<MatchRequest>,
    store: Res<SettingsStore>,
    mut next: ResMut<NextState<Screen>>,
) {
    let Some(kind) = request.kind.take() else { return };
    match start_match(&kind, &store.settings) {
        Ok(state) => {
            request.error = None;
            commands.insert_resource(ActiveMatch(Mutex::new(state)));
            next.set(Screen::Match);
        }
        Err(e) => {
            request.error = Some(format!("{e:#}"));
            next.set(Screen::Menu);
        }
    }
}

fn random_seed() -> u64 {
    let mut b = [0u8; 8];
    let _ = getrandom::fill(&mut b);
    u64::from_le_bytes(b) ^ std::time::SystemTime::now().elapsed().map_or(0, |d| d.as_nanos() as u64)
}

/// Builds the match: this process's node hosting it (local or online), or joining it over WebRTC.
pub fn start_match(kind: &MatchKind, settings: &Settings) -> anyhow::Result<MatchState> {
    let clock = Instant::now();
    let nickname = settings.nickname.trim();
    let nickname = if nickname.is_empty() { "player" } else { nickname };
    match kind {
        MatchKind::Local { map, bots, skill } => {
            let config = HostConfig {
                game: crate::GAME,
                map: map.clone(),
                bots: *bots,
                skill: *skill,
                seed: random_seed(),
                round_seconds: None,
                max_players: vimp_host::engine::server::ServerConfig::default().max_players,
                vote_maps: Vec::new(),
                watch: true,
                online: None,
                capture: Some(crate::WINDOW.capture_view),
            };
            let node = NodeThread::host(config, MatchState::hello(nickname, None, false), clock)?;
            Ok(MatchState::new(node, clock, format!("local match on {}", map.display())))
        }
        MatchKind::Host { map, bots, skill, password, code, signal, extras } => {
            // One named on the command line is used as it is; the settings' default means the
            // window embeds its own.
            let embedded_signal =
                signal.is_none() && settings.signal_url.trim_end_matches('/') == crate::setup::DEFAULT_SIGNAL;
            let signal = signal.as_deref().unwrap_or(&settings.signal_url).trim_end_matches('/');
            let code = match code {
                Some(c) => LobbyCode::parse(c)?,
                None => LobbyCode::from_random(random_seed()),
            };
            let online = OnlineConfig {
                signal: (!embedded_signal).then(|| signal.to_owned()),
                bind: extras.bind.unwrap_or_else(|| "0.0.0.0:3536".parse().expect("a valid address")),
                code,
                ice: extras.ice.then(&settings.ice()),
                password: password.clone(),
            };
            let config = HostConfig {
                game: crate::GAME,
                map: map.clone(),
                bots: *bots,
                skill: *skill,
                seed: extras.seed.unwrap_or_else(random_seed),
                round_seconds: extras.round_seconds,
                max_players: extras
                    .max_players
                    .unwrap_or(vimp_host::engine::server::ServerConfig::default().max_players),
                vote_maps: extras.vote_maps.clone(),
                watch: false,
                online: Some(online),
                capture: Some(crate::WINDOW.capture_view),
            };
            let hello = MatchState::hello(nickname, password.clone(), false);
            let node = NodeThread::host(config, hello, clock)?;
            let room = node.lobby.as_ref().map(|(_, url)| url.clone());
            let mut state = MatchState::new(node, clock, format!("hosting on {}", map.display()));
            state.room = room.zip(tokens());
            Ok(state)
        }
        MatchKind::Join { target, password, signal, spectate, nickname: name, host_timeout_ms, extras } => {
            let nickname = name.as_deref().unwrap_or(nickname);
            let parsed = JoinTarget::parse(target)?;
            let url = parsed.room_url(signal.as_deref().unwrap_or(&settings.signal_url));
            let signal = url.rsplit_once('/').map_or(url.as_str(), |(s, _)| s).to_owned();
            let (known, fetch) = extras.ice.then(&settings.ice()).fetching(&signal)?;
            let ice: net::IceSeen = std::sync::Arc::new(std::sync::Mutex::new(known.clone()));
            let place = vimp_netcode::transport::webrtc::RoomPlace::new();
            let seen = ice.clone();
            let connect = move |place: &vimp_netcode::transport::webrtc::RoomPlace, url: &str| {
                let (fetch, seen) = (fetch.clone(), seen.clone());
                WebRtcTransport::connect_fetching_in(place, url, &known, move |keyed: &str| {
                    let list = fetch(keyed);
                    if let Ok(mut seen) = seen.lock() {
                        seen.clone_from(&list);
                    }
                    list
                })
            };
            let transport: Box<dyn Transport> = Box::new(connect(&place, &url)?);
            let mut hello = MatchState::hello(nickname, password.clone(), *spectate);
            // Back to the slot this player had in this room, if that was within 5 minutes.
            let tokens = tokens();
            if !*spectate {
                hello.resume_token = tokens.as_ref().and_then(|t| t.recall(&url, std::time::SystemTime::now()));
            }
            let config = host_timeout_ms.map_or_else(Default::default, crate::setup::client_config);
            // A player can be chosen to take the match over; a spectator never is (the host
            // lists no spectator), but its node is the same.
            // A drop is dialed back: a fresh transport into the room for each attempt.
            let (dial_url, dial_place) = (url.clone(), place.clone());
            let dial: crate::setup::Dial =
                Box::new(move || Ok(Box::new(connect(&dial_place, &dial_url)?) as Box<dyn Transport>));
            let witness = crate::setup::Witnesser::new(&url);
            let ids = (!*spectate).then(|| {
                let identity = extras.identity.as_deref();
                crate::setup::token_source(&signal, &parsed.code(), identity, nickname, extras.unverified)
            });
            let follower = crate::home_room::RoomFollower::new(place, &url);
            let node = NodeThread::join(
                crate::GAME,
                transport,
                hello,
                config,
                Some(dial),
                witness,
                ids.flatten(),
                Some(follower),
                clock,
            )?;
            let mut state = MatchState::new(node, clock, format!("joined {url}"));
            state.room = tokens.map(|t| (url.clone(), t));
            state.joining = Some(Joining::new(signal, url.clone(), ice));
            Ok(state)
        }
    }
}

/// Where session tokens are remembered (beside the settings), when a home is known.
fn tokens() -> Option<Tokens> {
    settings::settings_path().map(|p| Tokens::beside(&p))
}

fn update_match(mut active: ResMut<ActiveMatch>) {
    let m = active.get();
    m.update(m.now());
}

/// Counts frames for `--frames`, asks for the screenshot on the last one, exits when it is saved.
fn capture_frames(mut commands: Commands, mut capture: ResMut<Capture>, mut exit: MessageWriter<AppExit>) {
    let Some(left) = capture.frames_left else { return };
    if left > 0 {
        capture.frames_left = Some(left - 1);
        return;
    }
    let Some(path) = capture.path.clone() else {
        exit.write(AppExit::Success);
        return;
    };
    if !capture.requested {
        capture.requested = true;
        let saved = capture.saved.clone();
        let failed = capture.failed.clone();
        commands.spawn(Screenshot::primary_window()).observe(move |captured: On<ScreenshotCaptured>| {
            let result = captured
                .image
                .clone()
                .try_into_dynamic()
                .map_err(|e| e.to_string())
                .and_then(|img| img.to_rgb8().save(&path).map_err(|e| e.to_string()));
            if let Err(e) = result {
                *failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
                    Some(format!("saving the screenshot to {}: {e}", path.display()));
            }
            saved.store(true, std::sync::atomic::Ordering::SeqCst);
        });
    } else if capture.saved.load(std::sync::atomic::Ordering::SeqCst) {
        let failed = capture.failed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).is_some();
        if let (Some(p), false) = (&capture.path, failed) {
            println!("screenshot saved to {}", p.display());
        }
        exit.write(AppExit::Success);
    }
}
