//! The window driven as a player drives it: keys pressed, buttons clicked, frames passing.
//!
//! [`Driver`] builds the window's own app, with every plugin [`super::run`] adds, over a
//! window that no GPU renders and no display shows (Bevy's renderer with no backend, no
//! winit): keys and clicks go in as the messages winit would write, and what egui lays out
//! is found by its words in the accessibility tree egui builds each frame.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bevy::input::ButtonState;
use bevy::input::keyboard::{Key, KeyboardInput};
use bevy::input::mouse::MouseButtonInput;
use bevy::prelude::*;
use bevy::render::RenderPlugin;
use bevy::render::settings::{RenderCreation, WgpuSettings};
use bevy::window::{CursorMoved, ExitCondition, PrimaryWindow, WindowEvent, WindowResolution};
use bevy::winit::WinitPlugin;
use bevy_egui::{EguiContext, EguiFullOutput, EguiPostUpdateSet, PrimaryEguiContext, egui};
use vimp_host::engine::game::BotSkill;

use super::settings::Settings;
use super::ui::UiState;
use super::{Capture, MatchKind, MatchRequest, Screen, SettingsStore, add_window};

/// How long a test waits for what a player would see at once.
const DEADLINE: Duration = Duration::from_secs(30);

/// What egui laid out in the last frame: each widget's words and where it is, in the
/// window's logical pixels.
#[derive(Resource, Default, Debug)]
struct Laid(Vec<(String, egui::Rect)>);

/// The window, driven.
struct Driver {
    app: App,
    window: Entity,
    /// Where the settings live (a folder of this test's own).
    dir: PathBuf,
}

impl Driver {
    /// The window at its main menu, with the settings in a folder of this test's own.
    fn new(name: &str) -> Driver {
        Driver::with_nickname(name, "tester")
    }

    /// As [`Driver::new`], the player's nickname `nickname` (the first run's is `player`).
    fn with_nickname(name: &str, nickname: &str) -> Driver {
        let dir = std::env::temp_dir().join(format!("vimp-window-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a settings folder");
        let path = dir.join("settings.json");
        let settings = Settings { nickname: nickname.into(), ..Settings::default() };
        let store = SettingsStore { settings, path: Some(path), problem: None };
        let capture = Capture {
            frames_left: None,
            path: None,
            requested: false,
            saved: Default::default(),
            failed: Default::default(),
        };
        let mut app = App::new();
        crate::shipped::register_assets(&mut app);
        app.add_plugins(
            DefaultPlugins
                .build()
                .disable::<WinitPlugin>()
                .disable::<bevy::log::LogPlugin>()
                .set(RenderPlugin {
                    render_creation: RenderCreation::Automatic(Box::new(WgpuSettings { backends: None, ..default() })),
                    ..default()
                })
                .set(WindowPlugin {
                    primary_window: Some(Window { resolution: WindowResolution::new(1280, 720), ..default() }),
                    exit_condition: ExitCondition::DontExit,
                    close_when_requested: false,
                    ..default()
                }),
        );
        add_window(&mut app, store, MatchRequest::default(), capture, false);
        app.init_resource::<Laid>().add_systems(
            PostUpdate,
            read_layout.after(EguiPostUpdateSet::EndPass).before(EguiPostUpdateSet::ProcessOutput),
        );
        app.finish();
        app.cleanup();
        let window =
            app.world_mut().query_filtered::<Entity, With<PrimaryWindow>>().single(app.world()).expect("a window");
        let mut driver = Driver { app, window, dir };
        // The camera, and with it egui's context, come in the first frames.
        driver.until("egui lays out the menu", |d| d.find("Play local (bots)").is_some());
        driver
    }

    /// One frame.
    fn frame(&mut self) {
        self.app.update();
    }

    /// Frames until `done`, for at most [`DEADLINE`].
    fn until(&mut self, what: &str, mut done: impl FnMut(&mut Driver) -> bool) {
        let start = Instant::now();
        loop {
            self.frame();
            if done(self) {
                return;
            }
            assert!(start.elapsed() < DEADLINE, "{what}: not within {DEADLINE:?}; on screen: {:?}", self.words());
            // A frame of the real window's rate: the node thread works meanwhile.
            std::thread::sleep(Duration::from_millis(16));
        }
    }

    fn key(&mut self, key: KeyCode, state: ButtonState) {
        let logical_key = match key {
            KeyCode::Escape => Key::Escape,
            KeyCode::Enter => Key::Enter,
            KeyCode::Tab => Key::Tab,
            _ => Key::Unidentified(bevy::input::keyboard::NativeKey::Unidentified),
        };
        let window = self.window;
        self.app.world_mut().write_message(KeyboardInput {
            key_code: key,
            logical_key,
            state,
            text: None,
            repeat: false,
            window,
        });
    }

    /// A key pressed and let go, a frame each.
    fn tap(&mut self, key: KeyCode) {
        self.key(key, ButtonState::Pressed);
        self.frame();
        self.key(key, ButtonState::Released);
        self.frame();
    }

    /// Types `text` into whatever has the keyboard: a key press and release per character.
    fn type_text(&mut self, text: &str) {
        let window = self.window;
        for ch in text.chars() {
            let key_code = match ch {
                'a'..='z' => key_of_letter(ch),
                ' ' => KeyCode::Space,
                _ => KeyCode::Unidentified(bevy::input::keyboard::NativeKeyCode::Unidentified),
            };
            for state in [ButtonState::Pressed, ButtonState::Released] {
                let logical_key = Key::Character(ch.to_string().into());
                self.app.world_mut().write_message(KeyboardInput {
                    key_code,
                    logical_key,
                    state,
                    text: (state == ButtonState::Pressed).then(|| ch.to_string().into()),
                    repeat: false,
                    window,
                });
                self.frame();
            }
        }
    }

    /// Where the widget showing `words` is, if it is on screen.
    fn find(&self, words: &str) -> Option<egui::Rect> {
        self.app.world().resource::<Laid>().0.iter().find(|(w, _)| w == words).map(|(_, r)| *r)
    }

    /// The words on screen.
    fn words(&self) -> Vec<String> {
        self.app.world().resource::<Laid>().0.iter().map(|(w, _)| w.clone()).collect()
    }

    /// Clicks the widget showing `words`: the pointer moves there, the left button goes down,
    /// then up, a frame each.
    fn click(&mut self, words: &str) {
        let rect = self.find(words).unwrap_or_else(|| panic!("no {words:?} on screen: {:?}", self.words()));
        let position = Vec2::new(rect.center().x, rect.center().y);
        let window = self.window;
        // As winit writes them: each message, and the same as a window event (egui reads those).
        let moved = CursorMoved { window, position, delta: None };
        self.app.world_mut().write_message(moved.clone());
        self.app.world_mut().write_message(WindowEvent::CursorMoved(moved));
        self.frame();
        for state in [ButtonState::Pressed, ButtonState::Released] {
            let button = MouseButtonInput { button: MouseButton::Left, state, window };
            self.app.world_mut().write_message(button);
            self.app.world_mut().write_message(WindowEvent::MouseButtonInput(button));
            self.frame();
        }
    }

    fn screen(&self) -> Screen {
        *self.app.world().resource::<State<Screen>>().get()
    }

    fn ui(&self) -> &UiState {
        self.app.world().resource::<UiState>()
    }

    /// The settings as saved in the file.
    fn saved(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.dir.join("settings.json")).expect("the settings were saved");
        serde_json::from_str(&text).expect("settings JSON")
    }

    /// Starts a local match against `bots` bots on the default map, and waits until the
    /// host welcomed this window's player.
    fn local_match(&mut self, bots: u8) {
        let map = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("maps/default.json");
        self.app.world_mut().resource_mut::<MatchRequest>().kind =
            Some(MatchKind::Local { map, bots, skill: BotSkill::Normal });
        self.until("the match starts and the host welcomes the player", |d| {
            d.screen() == Screen::Match
                && d.app
                    .world_mut()
                    .get_resource_mut::<super::ActiveMatch>()
                    .is_some_and(|mut m| m.get().player_id().is_some())
        });
    }

    fn settings_dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The key of a lower-case letter.
fn key_of_letter(ch: char) -> KeyCode {
    let name = format!("Key{}", ch.to_ascii_uppercase());
    crate::window::input::key_from_name(&name)
        .unwrap_or(KeyCode::Unidentified(bevy::input::keyboard::NativeKeyCode::Unidentified))
}

/// Keeps what egui laid out this frame: the words and bounds of every node of its
/// accessibility tree (which the test turns on).
fn read_layout(
    mut laid: ResMut<Laid>,
    mut contexts: Query<(&mut EguiContext, &EguiFullOutput), With<PrimaryEguiContext>>,
) {
    let Ok((mut context, output)) = contexts.single_mut() else { return };
    let ctx = context.get_mut();
    // From the next pass on.
    ctx.enable_accesskit();
    let Some(update) = output.0.as_ref().and_then(|o| o.platform_output.accesskit_update.as_ref()) else {
        return;
    };
    let scale = ctx.pixels_per_point();
    laid.0 = update
        .nodes
        .iter()
        .filter_map(|(_, node)| {
            let words = node.label().or(node.value())?.to_owned();
            let b = node.bounds()?;
            let rect = egui::Rect::from_min_max(
                egui::pos2(b.x0 as f32 / scale, b.y0 as f32 / scale),
                egui::pos2(b.x1 as f32 / scale, b.y1 as f32 / scale),
            );
            Some((words, rect))
        })
        .collect();
}

#[test]
fn esc_opens_the_match_menu_and_closes_it_and_leave_goes_back_to_the_menu() {
    let mut d = Driver::new("esc");
    d.local_match(1);
    assert!(!d.ui().in_match.paused);
    d.tap(KeyCode::Escape);
    assert!(d.ui().in_match.paused, "Esc opens the match menu");
    d.until("the match menu shows", |d| d.find("Leave the match").is_some());
    d.tap(KeyCode::Escape);
    assert!(!d.ui().in_match.paused, "Esc again closes it");
    d.until("the match menu goes", |d| d.find("Leave the match").is_none());
    d.tap(KeyCode::Escape);
    d.until("the match menu shows again", |d| d.find("Leave the match").is_some());
    d.click("Leave the match");
    d.until("leaving goes back to the main menu", |d| d.screen() == Screen::Menu);
    assert!(d.settings_dir().is_dir());
}

#[test]
fn the_first_run_asks_for_a_nickname_and_saves_it() {
    let mut d = Driver::with_nickname("nickname", "player");
    d.until("the question shows", |d| d.find("Your nickname").is_some());
    // The question comes first: the menu behind it takes no clicks.
    d.click("Settings");
    for _ in 0..5 {
        d.frame();
    }
    assert!(d.find("Reset keys").is_none(), "Settings opened behind the question: {:?}", d.words());
    // The field has the keyboard at once.
    d.type_text("zed");
    d.click("Save");
    d.until("the question goes", |d| d.find("Your nickname").is_none());
    assert_eq!(d.saved()["nickname"], "zed", "saved at once");
    assert_eq!(d.app.world().resource::<SettingsStore>().settings.nickname, "zed");
}

/// Each page of the main menu opens from its button, and Back is the way home.
#[test]
fn every_page_of_the_main_menu_opens_and_back_comes_home() {
    let mut d = Driver::new("pages");
    d.until("the main menu shows", |d| d.find("Quit").is_some());
    for (button, page_says) in [
        ("Host", "Host a match"),
        ("Join by code", "lobby code or room URL"),
        ("Playtest a map file", "bot skill"),
        ("Top players", "Top players"),
        ("Settings", "Reset keys"),
    ] {
        d.click(button);
        d.until(&format!("{button} opens its page"), |d| {
            d.find("Back").is_some() && d.find(page_says).is_some() && d.find("Quit").is_none()
        });
        d.click("Back");
        d.until(&format!("Back from {button} comes home"), |d| d.find("Quit").is_some() && d.find("Back").is_none());
    }
}

#[test]
fn the_nickname_is_saved_by_enter_as_well() {
    let mut d = Driver::with_nickname("nickname-enter", "player");
    d.until("the question shows", |d| d.find("Your nickname").is_some());
    d.type_text("ann");
    d.tap(KeyCode::Enter);
    d.until("the question goes", |d| d.find("Your nickname").is_none());
    assert_eq!(d.saved()["nickname"], "ann", "saved at once");
}

#[test]
fn chat_goes_to_the_match_and_tab_shows_the_scoreboard() {
    let mut d = Driver::new("chat");
    d.local_match(1);
    d.tap(KeyCode::Enter);
    d.until("the chat's field opens", |d| d.ui().in_match.chat_open);
    d.frame();
    d.type_text("hi there");
    d.tap(KeyCode::Enter);
    d.until("the line comes back from the host", |d| d.find("tester:").is_some() && d.find("hi there").is_some());
    assert!(!d.ui().in_match.chat_open, "Enter sent it and closed the field");
    // Tab held: the scoreboard, with this player in it; let go, gone.
    d.key(KeyCode::Tab, ButtonState::Pressed);
    d.until("the scoreboard shows", |d| d.find("scoreboard").is_some() && d.find("tester").is_some());
    d.key(KeyCode::Tab, ButtonState::Released);
    d.until("the scoreboard goes", |d| d.find("scoreboard").is_none());
}

#[test]
fn the_match_menu_changes_team_and_the_settings_page_saves_at_once() {
    let mut d = Driver::new("menus");
    d.local_match(1);
    d.tap(KeyCode::Escape);
    d.until("the match menu", |d| d.find("Change team").is_some());
    d.click("Change team");
    d.until("the teams to choose from", |d| {
        d.app.world_mut().get_resource_mut::<super::ActiveMatch>().is_some_and(|mut m| m.get().vote.is_some())
    });
    assert!(!d.ui().in_match.paused, "the menu closed for the vote");
    d.tap(KeyCode::Escape);
    d.until("the match menu", |d| d.find("Leave the match").is_some());
    d.click("Leave the match");
    d.until("the main menu", |d| d.screen() == Screen::Menu && d.find("Settings").is_some());
    // Settings: full screen and the HUD's size, applied and saved at once.
    d.click("Settings");
    d.until("the settings page", |d| d.find("full screen").is_some());
    d.click("full screen");
    d.until("the window fills the screen", |d| {
        let mode =
            d.app.world_mut().query_filtered::<&Window, With<PrimaryWindow>>().single(d.app.world()).map(|w| w.mode);
        matches!(mode, Ok(bevy::window::WindowMode::BorderlessFullscreen(_)))
    });
    assert_eq!(d.saved()["fullscreen"], true);
    // Keys read as on the keyboard, actions in words; the network under "Advanced".
    for words in ["Drive forward", "W", "Turn the gun left", "Q", "Space", "Advanced: the network"] {
        assert!(d.find(words).is_some(), "{words:?} on the page: {:?}", d.words());
    }
    assert!(d.find("STUN servers").is_none(), "the servers are folded away");
    d.click("Back");
    d.until("the main menu", |d| d.find("Play local (bots)").is_some());
}

#[test]
fn a_gamepad_drives_the_tank_and_start_opens_the_match_menu() {
    use bevy::input::gamepad::{
        GamepadAxis, GamepadButton, GamepadConnection, GamepadConnectionEvent, RawGamepadAxisChangedEvent,
        RawGamepadButtonChangedEvent, RawGamepadEvent,
    };
    let mut d = Driver::new("pad");
    d.local_match(1);
    let pad = d.app.world_mut().spawn_empty().id();
    let connected = GamepadConnection::Connected { name: "pad".into(), vendor_id: None, product_id: None };
    d.app.world_mut().write_message(GamepadConnectionEvent::new(pad, connected));
    d.frame();
    let axis = |d: &mut Driver, axis, value| {
        let event = RawGamepadEvent::Axis(RawGamepadAxisChangedEvent::new(pad, axis, value));
        d.app.world_mut().write_message(event);
        d.frame();
    };
    let button = |d: &mut Driver, button, value| {
        let event = RawGamepadEvent::Button(RawGamepadButtonChangedEvent::new(pad, button, value));
        d.app.world_mut().write_message(event);
        d.frame();
    };
    let held = |d: &mut Driver| {
        d.app.world_mut().get_resource_mut::<super::ActiveMatch>().map(|mut m| m.get().held.clone()).unwrap_or_default()
    };
    // The left stick up and to the right: forward and right held; back to the middle, let go.
    axis(&mut d, GamepadAxis::LeftStickY, 0.9);
    axis(&mut d, GamepadAxis::LeftStickX, 0.8);
    assert_eq!(held(&mut d), ["forward", "right"]);
    axis(&mut d, GamepadAxis::LeftStickY, 0.0);
    axis(&mut d, GamepadAxis::LeftStickX, 0.1);
    assert!(held(&mut d).is_empty(), "{:?}", held(&mut d));
    // A fires while held.
    button(&mut d, GamepadButton::South, 1.0);
    assert_eq!(held(&mut d), ["fire"]);
    button(&mut d, GamepadButton::South, 0.0);
    assert!(held(&mut d).is_empty());
    // Start: the match menu, and again to close it.
    button(&mut d, GamepadButton::Start, 1.0);
    assert!(d.ui().in_match.paused, "Start opens the match menu");
    button(&mut d, GamepadButton::Start, 0.0);
    button(&mut d, GamepadButton::Start, 1.0);
    assert!(!d.ui().in_match.paused, "and closes it");
}
