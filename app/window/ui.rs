//! Menus and the match HUD, drawn with egui; the game keys and the pointer's aim.

use std::path::PathBuf;

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use vimp_host::engine::game::BotSkill;
use vimp_netcode::client::reconnect::Redial;
use vimp_netcode::input::{AIM_PRESSED, Aim, KeyAction};
use vimp_netcode::meta::{ListRequest, TechInform};

use crate::window::graph::Series;
use crate::window::input::{RESERVED, key_from_name, key_name};
use crate::window::settings::{AimScheme, MAPS, map_label};
use crate::window::{ActiveMatch, MatchKind, MatchRequest, Screen, SettingsStore};

/// Adds the menus, the HUD, the game keys and the pointer's aim.
pub(crate) struct UiPlugin;

impl Plugin for UiPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<UiState>()
            .add_systems(Update, (game_keys, pointer_aim).chain().run_if(in_state(Screen::Match)))
            .add_systems(OnExit(Screen::Match), |mut ui: ResMut<UiState>| ui.in_match = InMatch::default())
            .add_systems(
                EguiPrimaryContextPass,
                (menu_ui.run_if(in_state(Screen::Menu)), match_ui.run_if(in_state(Screen::Match))),
            );
    }
}

/// A page of the main menu.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Page {
    #[default]
    Main,
    Host,
    Join,
    Playtest,
    Settings,
}

/// What the menus and the HUD remember between frames.
#[derive(Resource, Debug, Default)]
struct UiState {
    page: Page,
    join_target: String,
    join_password: String,
    join_spectate: bool,
    host_password: String,
    playtest_map: String,
    /// The action waiting for a key press to be rebound.
    rebinding: Option<String>,
    in_match: InMatch,
}

#[derive(Debug, Default)]
struct InMatch {
    chat_open: bool,
    chat_text: String,
    chat_error: Option<String>,
    scoreboard: bool,
    graph: bool,
    paused: bool,
    /// Chat was just opened: give the text field the focus.
    focus_chat: bool,
}

fn menu_ui(
    mut contexts: EguiContexts,
    mut ui_state: ResMut<UiState>,
    mut store: ResMut<SettingsStore>,
    mut request: ResMut<MatchRequest>,
    keys: Res<ButtonInput<KeyCode>>,
    mut exit: MessageWriter<AppExit>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let state = &mut *ui_state;
    if let Some(action) = state.rebinding.clone()
        && let Some(key) = keys.get_just_pressed().find(|k| !RESERVED.contains(k))
        && let Some(name) = key_name(*key)
    {
        if let Some(b) = store.settings.bindings.iter_mut().find(|(a, _)| *a == action) {
            b.1 = name.to_owned();
        }
        state.rebinding = None;
        store.save();
    }
    egui::CentralPanel::default().show(ctx, |ui| {
        ui.vertical_centered(|ui| {
            ui.add_space(40.0);
            ui.label(egui::RichText::new("vimp").size(64.0).strong());
            ui.label("tanks, hosted by one of you");
            ui.add_space(24.0);
            if let Some(e) = &request.error {
                ui.colored_label(egui::Color32::from_rgb(255, 110, 100), e);
                ui.add_space(12.0);
            }
            let wide = |text: &str| egui::Button::new(egui::RichText::new(text).size(22.0)).min_size([260.0, 40.0].into());
            match state.page {
                Page::Main => {
                    if ui.add(wide("Play local (bots)")).clicked() {
                        request.kind = Some(MatchKind::Local {
                            map: PathBuf::from(&store.settings.map),
                            bots: store.settings.bots,
                            skill: store.settings.bot_skill,
                        });
                    }
                    // The match's map and bots, under the button, centred like it.
                    let picked = ui
                        .allocate_ui(egui::vec2(260.0, 0.0), |ui| {
                            egui::Grid::new("play")
                                .num_columns(2)
                                .show(ui, |ui| {
                                    ui.label("map");
                                    let map = map_picker(ui, "main", &mut store.settings.map);
                                    ui.end_row();
                                    ui.label("bot skill");
                                    let skill = skill_picker(ui, "main", &mut store.settings.bot_skill);
                                    ui.end_row();
                                    map || skill
                                })
                                .inner
                        })
                        .inner;
                    if picked {
                        store.save();
                    }
                    ui.add_space(8.0);
                    if ui.add(wide("Host")).clicked() {
                        state.page = Page::Host;
                    }
                    ui.add_space(8.0);
                    if ui.add(wide("Join by code")).clicked() {
                        state.page = Page::Join;
                    }
                    ui.add_space(8.0);
                    if ui.add(wide("Playtest a map file")).clicked() {
                        state.page = Page::Playtest;
                    }
                    ui.add_space(8.0);
                    if ui.add(wide("Settings")).clicked() {
                        state.page = Page::Settings;
                    }
                    ui.add_space(8.0);
                    if ui.add(wide("Quit")).clicked() {
                        exit.write(AppExit::Success);
                    }
                }
                Page::Host => {
                    ui.heading("Host a match");
                    ui.label("Friends join with the lobby code shown once the match starts.");
                    ui.label(reachability(&store.settings.signal_url));
                    egui::Grid::new("host").num_columns(2).show(ui, |ui| {
                        ui.label("map");
                        map_picker(ui, "host", &mut store.settings.map);
                        ui.end_row();
                        ui.label("map file");
                        ui.text_edit_singleline(&mut store.settings.map);
                        ui.end_row();
                        ui.label("bots");
                        ui.add(egui::Slider::new(&mut store.settings.bots, 0..=15));
                        ui.end_row();
                        ui.label("bot skill");
                        skill_picker(ui, "host", &mut store.settings.bot_skill);
                        ui.end_row();
                        ui.label("lobby password");
                        ui.text_edit_singleline(&mut state.host_password);
                        ui.end_row();
                    });
                    if ui.add(wide("Start hosting")).clicked() {
                        store.save();
                        let password = Some(state.host_password.clone()).filter(|p| !p.is_empty());
                        request.kind = Some(MatchKind::Host {
                            map: PathBuf::from(&store.settings.map),
                            bots: store.settings.bots,
                            skill: store.settings.bot_skill,
                            password,
                            code: None,
                            signal: None,
                        });
                    }
                    back(ui, &mut state.page);
                }
                Page::Join => {
                    ui.heading("Join by code");
                    egui::Grid::new("join").num_columns(2).show(ui, |ui| {
                        ui.label("lobby code or room URL");
                        ui.add(egui::TextEdit::singleline(&mut state.join_target).hint_text("K7M-P2Q"));
                        ui.end_row();
                        ui.label("password");
                        ui.text_edit_singleline(&mut state.join_password);
                        ui.end_row();
                        ui.label("");
                        ui.checkbox(&mut state.join_spectate, "watch only (spectate)");
                        ui.end_row();
                    });
                    ui.label(format!("rendezvous: {}", store.settings.signal_url));
                    if ui.add(wide("Join")).clicked() {
                        let password = Some(state.join_password.clone()).filter(|p| !p.is_empty());
                        request.kind =
                            Some(MatchKind::Join {
                            target: state.join_target.trim().to_owned(),
                            password,
                            signal: None,
                            spectate: state.join_spectate,
                            nickname: None,
                            host_timeout_ms: None,
                        });
                    }
                    back(ui, &mut state.page);
                }
                Page::Playtest => {
                    ui.heading("Playtest a map file");
                    ui.label("The map reloads each time you save it; errors show in the match and it goes on on the last good map.");
                    if state.playtest_map.is_empty() {
                        state.playtest_map = store.settings.map.clone();
                    }
                    ui.text_edit_singleline(&mut state.playtest_map);
                    ui.add(egui::Slider::new(&mut store.settings.bots, 0..=15).text("bots"));
                    ui.horizontal(|ui| {
                        ui.label("bot skill");
                        skill_picker(ui, "playtest", &mut store.settings.bot_skill);
                    });
                    ui.label("F4 in the match shows the navigation grid, where a tank fits and each bot's route.");
                    if ui.add(wide("Playtest")).clicked() {
                        store.save();
                        request.kind = Some(MatchKind::Local {
                            map: PathBuf::from(state.playtest_map.trim()),
                            bots: store.settings.bots,
                            skill: store.settings.bot_skill,
                        });
                    }
                    back(ui, &mut state.page);
                }
                Page::Settings => {
                    settings_page(ui, state, &mut store);
                    back(ui, &mut state.page);
                }
            }
        });
    });
    Ok(())
}

/// Who can join a match hosted with the rendezvous `signal`: with the default one this
/// process runs its own signalling server, which only this network can reach.
fn reachability(signal: &str) -> String {
    if signal.trim_end_matches('/') == crate::setup::DEFAULT_SIGNAL {
        "LAN only: friends on this network join through this machine's own signalling server \
         (port 3536). For friends in other homes, set a rendezvous in Settings (`vimp signal` on a \
         public machine, beside a TURN server)."
            .to_owned()
    } else {
        format!("Reachable from other homes through the rendezvous {signal}.")
    }
}

/// A choice of one of the shipped maps ([`MAPS`]); returns whether it changed.
fn map_picker(ui: &mut egui::Ui, id: &str, map: &mut String) -> bool {
    let before = map.clone();
    egui::ComboBox::from_id_salt(("map", id)).selected_text(map_label(map).to_owned()).show_ui(ui, |ui| {
        for (name, file) in MAPS {
            ui.selectable_value(map, file.to_owned(), name);
        }
    });
    *map != before
}

/// A choice of the bots' skill; returns whether it changed.
fn skill_picker(ui: &mut egui::Ui, id: &str, skill: &mut BotSkill) -> bool {
    let before = *skill;
    egui::ComboBox::from_id_salt(("bot skill", id)).selected_text(skill.name()).show_ui(ui, |ui| {
        for level in BotSkill::ALL {
            ui.selectable_value(skill, level, level.name());
        }
    });
    *skill != before
}

fn back(ui: &mut egui::Ui, page: &mut Page) {
    ui.add_space(16.0);
    if ui.button("Back").clicked() {
        *page = Page::Main;
    }
}

fn settings_page(ui: &mut egui::Ui, state: &mut UiState, store: &mut SettingsStore) {
    ui.heading("Settings");
    let mut changed = false;
    let s = &mut store.settings;
    egui::Grid::new("settings").num_columns(2).show(ui, |ui| {
        ui.label("nickname");
        changed |= ui.text_edit_singleline(&mut s.nickname).lost_focus();
        ui.end_row();
        ui.label("rendezvous (signalling server), for hosting and joining");
        changed |= ui.text_edit_singleline(&mut s.signal_url).lost_focus();
        ui.end_row();
        for (label, list) in [("STUN servers", &mut s.stun), ("TURN servers", &mut s.turn)] {
            ui.label(label);
            let mut text = list.join(" ");
            if ui.add(egui::TextEdit::singleline(&mut text).hint_text("space-separated URLs")).changed() {
                *list = text.split_whitespace().map(str::to_owned).collect();
            }
            ui.end_row();
        }
        ui.label("TURN user");
        changed |= ui.text_edit_singleline(&mut s.turn_user).lost_focus();
        ui.end_row();
        ui.label("TURN password");
        changed |= ui.add(egui::TextEdit::singleline(&mut s.turn_pass).password(true)).lost_focus();
        ui.end_row();
    });
    ui.add_space(8.0);
    ui.horizontal(|ui| {
        ui.label("aim the gun with");
        egui::ComboBox::from_id_salt("aim scheme").selected_text(s.aim.label()).show_ui(ui, |ui| {
            for scheme in AimScheme::ALL {
                changed |= ui.selectable_value(&mut s.aim, scheme, scheme.label()).changed();
            }
        });
    });
    ui.add_space(8.0);
    ui.label("keys (click, then press the new key)");
    egui::Grid::new("bindings").num_columns(2).show(ui, |ui| {
        for (action, key) in &s.bindings {
            ui.label(action);
            let text =
                if state.rebinding.as_deref() == Some(action) { "press a key…".to_owned() } else { key.clone() };
            let known = key_from_name(key).is_some();
            let button = egui::Button::new(if known {
                egui::RichText::new(text)
            } else {
                egui::RichText::new(text).color(egui::Color32::RED)
            });
            if ui.add(button).clicked() {
                state.rebinding = Some(action.clone());
            }
            ui.end_row();
        }
    });
    if ui.button("Reset keys").clicked() {
        s.bindings = crate::window::settings::default_bindings();
        changed = true;
    }
    if changed {
        store.save();
    }
    match (&store.path, &store.problem) {
        (_, Some(p)) => {
            ui.colored_label(egui::Color32::from_rgb(255, 110, 100), p);
        }
        (Some(path), None) => {
            ui.weak(format!("saved in {}", path.display()));
        }
        (None, None) => {}
    }
}

/// The game's form: a field per param (a choice box where the param lists its options),
/// each with the host's error under it; returns whether the player sent it, or put it off.
fn game_form(w: &mut egui::Ui, form: &mut crate::window::net::GameForm) -> (bool, bool) {
    let title =
        form.data.texts.as_ref().and_then(|t| t.get("title")).and_then(|t| t.as_str()).unwrap_or("Before you play");
    w.label(egui::RichText::new(title).size(20.0).strong());
    for param in &form.data.params {
        let option = |key: &str| param.options.get(key);
        if option("hidden").and_then(|h| h.as_bool()) == Some(true) {
            continue;
        }
        let label = option("label").and_then(|l| l.as_str()).unwrap_or(&param.name).to_owned();
        let value = form.values.entry(param.name.clone()).or_default();
        w.horizontal(|row| {
            row.label(label);
            match option("options").and_then(|o| o.as_array()) {
                Some(choices) => {
                    egui::ComboBox::from_id_salt(&param.name).selected_text(value.clone()).show_ui(row, |list| {
                        for choice in choices {
                            let v = choice.get("value").unwrap_or(choice);
                            let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                            let shown = choice.get("label").and_then(|l| l.as_str()).unwrap_or(&v).to_owned();
                            list.selectable_value(value, v, shown);
                        }
                    });
                }
                None => {
                    row.text_edit_singleline(value);
                }
            }
        });
        if let Some(error) = form.errors.get(&param.name) {
            w.colored_label(egui::Color32::from_rgb(255, 110, 100), error);
        }
    }
    for (field, error) in form.errors.iter().filter(|(f, _)| !form.data.params.iter().any(|p| &p.name == *f)) {
        w.colored_label(egui::Color32::from_rgb(255, 110, 100), format!("{field}: {error}"));
    }
    let mut out = (false, false);
    w.horizontal(|row| {
        out.0 = row.add_enabled(!form.waiting, egui::Button::new("Play")).clicked();
        out.1 = row.button("Watch for now").clicked();
    });
    out
}

/// Keys to input events while no text field has the keyboard; Tab, F3, F4, Enter and Esc for the window.
fn game_keys(
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    store: Res<SettingsStore>,
    mut ui_state: ResMut<UiState>,
    mut active: ResMut<ActiveMatch>,
    mut contexts: EguiContexts,
    mut overlay: ResMut<crate::tanks::overlay::NavOverlayOn>,
) {
    let m = active.get();
    let ui = &mut ui_state.in_match;
    let egui_busy = contexts.ctx_mut().is_ok_and(|ctx| ctx.wants_keyboard_input());
    if ui.chat_open || ui.paused || egui_busy {
        if !m.held.is_empty() {
            m.release_all();
        }
        return;
    }
    ui.scoreboard = keys.pressed(KeyCode::Tab);
    if keys.just_pressed(KeyCode::F3) {
        ui.graph = !ui.graph;
    }
    if keys.just_pressed(KeyCode::F4) {
        overlay.0 = !overlay.0;
    }
    if keys.just_pressed(KeyCode::Enter) {
        ui.chat_open = true;
        ui.focus_chat = true;
        return;
    }
    if keys.just_pressed(KeyCode::Escape) {
        ui.paused = true;
        return;
    }
    for (action, key) in &store.settings.bindings {
        let Some(code) = key_from_name(key) else { continue };
        if keys.just_pressed(code) {
            m.key(KeyAction::Down, action);
        }
        if keys.just_released(code) {
            m.key(KeyAction::Up, action);
        }
    }
    if mouse.just_pressed(MouseButton::Left) && !contexts.ctx_mut().is_ok_and(|c| c.wants_pointer_input()) {
        m.key(KeyAction::Down, "fire");
    }
}

/// The pointer's aim, in the pointer scheme ([`AimScheme`]): the world point under the
/// mouse, with the left button as its pressed flag, becomes the player's aim (sent at most
/// 30 times a second and only when it changes, [`crate::window::net::MatchState::aim`]).
/// While the chat or the match menu is open, or the pointer is on the HUD or off the window,
/// the last aim stays. In the keys scheme the aim is let go of.
fn pointer_aim(
    mouse: Res<ButtonInput<MouseButton>>,
    store: Res<SettingsStore>,
    ui_state: Res<UiState>,
    mut active: ResMut<ActiveMatch>,
    mut contexts: EguiContexts,
    windows: Query<&Window, With<bevy::window::PrimaryWindow>>,
    camera: Query<(&Camera, &GlobalTransform), With<crate::tanks::draw::MainCamera>>,
) {
    let m = active.get();
    if store.settings.aim == AimScheme::Keys {
        m.aim(None);
        return;
    }
    let ui = &ui_state.in_match;
    if ui.chat_open || ui.paused || contexts.ctx_mut().is_ok_and(|c| c.wants_pointer_input()) {
        return;
    }
    let (Ok(window), Ok((camera, at))) = (windows.single(), camera.single()) else { return };
    let Some(point) = window.cursor_position().and_then(|p| camera.viewport_to_world_2d(at, p).ok()) else {
        return;
    };
    let flags = if mouse.pressed(MouseButton::Left) { AIM_PRESSED } else { 0 };
    // The map's y points down, the window's up.
    m.aim(Aim::new(point.x, -point.y, flags));
}

/// A crosshair where the pointer aims, in the pointer scheme.
fn crosshair(ctx: &egui::Context, scheme: AimScheme) {
    let Some(at) = ctx.input(|i| i.pointer.latest_pos()).filter(|_| scheme == AimScheme::Pointer) else { return };
    if ctx.is_pointer_over_area() {
        return;
    }
    let painter = ctx.layer_painter(egui::LayerId::new(egui::Order::Foreground, egui::Id::new("crosshair")));
    let stroke = egui::Stroke::new(2.0, egui::Color32::from_rgba_unmultiplied(255, 240, 160, 220));
    painter.circle_stroke(at, 9.0, stroke);
    for (from, to) in
        [([-15.0, 0.0], [-5.0, 0.0]), ([5.0, 0.0], [15.0, 0.0]), ([0.0, -15.0], [0.0, -5.0]), ([0.0, 5.0], [0.0, 15.0])]
    {
        painter.line_segment([at + egui::Vec2::from(from), at + egui::Vec2::from(to)], stroke);
    }
}

fn match_ui(
    mut commands: Commands,
    mut contexts: EguiContexts,
    mut ui_state: ResMut<UiState>,
    mut active: ResMut<ActiveMatch>,
    mut next: ResMut<NextState<Screen>>,
    keys: Res<ButtonInput<KeyCode>>,
    store: Res<SettingsStore>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let m = active.get();
    let ui = &mut ui_state.in_match;
    let now = m.now();
    let mut leave = false;
    crosshair(ctx, store.settings.aim);

    // The HUD from the panel; a spectator's says how to play.
    let watching = m.keyset == Some(vimp_netcode::meta::Keyset::Spectator);
    egui::Area::new(egui::Id::new("panel")).anchor(egui::Align2::LEFT_TOP, [12.0, 12.0]).show(ctx, |area| {
        egui::Frame::popup(area.style()).show(area, |area| {
            crate::tanks::hud::panel(area, &m.panel);
            if watching {
                area.weak("watching: ←/→ other players, /play to join");
            }
        });
    });

    // The game's form, before it lets the player play.
    if m.form.is_some() {
        let mut submit = false;
        let mut later = false;
        egui::Window::new("form")
            .title_bar(false)
            .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
            .collapsible(false)
            .resizable(false)
            .show(ctx, |w| {
                if let Some(form) = m.form.as_mut() {
                    (submit, later) = game_form(w, form);
                }
            });
        if submit {
            m.submit_form();
        } else if later {
            m.form = None;
        }
    }

    // The lobby code when hosting, with who is here.
    if let Some((code, url)) = m.node.lobby.clone() {
        egui::Area::new(egui::Id::new("lobby")).anchor(egui::Align2::RIGHT_TOP, [-12.0, 12.0]).show(ctx, |area| {
            egui::Frame::popup(area.style()).show(area, |area| {
                area.label("lobby code");
                area.label(egui::RichText::new(code.grouped()).size(40.0).monospace().strong());
                if area.button("Copy").clicked() {
                    area.ctx().copy_text(code.grouped());
                }
                area.weak(url);
                area.separator();
                for (_, cells) in m.stat.rows.values() {
                    let name = cells.first().map(ToString::to_string).unwrap_or_default();
                    let status = cells.get(1).map(ToString::to_string).unwrap_or_default();
                    area.label(format!("{name} {status}"));
                }
            });
        });
    }

    // Chat: the last lines, and the line being typed.
    egui::Area::new(egui::Id::new("chat")).anchor(egui::Align2::LEFT_BOTTOM, [12.0, -12.0]).show(ctx, |area| {
        area.set_max_width(480.0);
        let recent: Vec<_> =
            m.chat.iter().rev().filter(|l| ui.chat_open || now.saturating_sub(l.at).as_secs() < 12).take(8).collect();
        for line in recent.into_iter().rev() {
            match &line.author {
                Some(author) => {
                    area.horizontal_wrapped(|row| {
                        let who = match &line.to {
                            Some(to) => format!("{author} → {to}:"),
                            None => format!("{author}:"),
                        };
                        row.colored_label(crate::tanks::hud::team_color32(line.team), who);
                        let text = egui::RichText::new(&line.text);
                        row.label(if line.to.is_some() { text.italics() } else { text });
                    });
                }
                None => {
                    area.colored_label(egui::Color32::from_gray(170), &line.text);
                }
            }
        }
        if ui.chat_open {
            let edit =
                area.add(egui::TextEdit::singleline(&mut ui.chat_text).hint_text("say something, or /help (Enter)"));
            if ui.focus_chat {
                edit.request_focus();
                ui.focus_chat = false;
            }
            if let Some(e) = &ui.chat_error {
                area.colored_label(egui::Color32::from_rgb(255, 110, 100), e);
            }
            if keys.just_pressed(KeyCode::Escape) {
                ui.chat_open = false;
                ui.chat_text.clear();
                ui.chat_error = None;
            } else if edit.lost_focus() && keys.just_pressed(KeyCode::Enter) {
                let text = ui.chat_text.trim().to_owned();
                if text.is_empty() {
                    ui.chat_open = false;
                } else {
                    match m.say(&text) {
                        Ok(()) => {
                            ui.chat_text.clear();
                            ui.chat_error = None;
                            ui.chat_open = false;
                        }
                        Err(e) => ui.chat_error = Some(e.to_string()),
                    }
                }
            }
        }
    });

    // The scoreboard while Tab is held.
    if ui.scoreboard {
        egui::Window::new("scoreboard")
            .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
            .collapsible(false)
            .resizable(false)
            .show(ctx, |w| scoreboard(w, m));
    }

    // A vote asked by the host.
    if let Some(vote) = m.vote.clone() {
        let choices = m.vote_choices();
        let mut answer = None;
        let mut dismiss = false;
        egui::Window::new("vote")
            .anchor(egui::Align2::CENTER_TOP, [0.0, 60.0])
            .collapsible(false)
            .resizable(false)
            .show(ctx, |w| {
                w.label(egui::RichText::new(crate::tanks::hud::vote_title(&vote)).size(18.0));
                w.horizontal(|row| {
                    for choice in &choices {
                        let text = choice.as_str().map(str::to_owned).unwrap_or_else(|| choice.to_string());
                        if row.button(text).clicked() {
                            answer = Some(choice.clone());
                        }
                    }
                    if row.button("dismiss").clicked() {
                        dismiss = true;
                    }
                });
            });
        if let Some(a) = answer {
            m.answer_vote(a);
        } else if dismiss {
            m.vote = None;
        }
    }

    // The engine's `@changeHost` vote: between the players, the host does not see it.
    let vote = m.client().host_vote().cloned();
    if let Some(vote) = vote {
        let mut answer = None;
        egui::Window::new("@changeHost")
            .title_bar(false)
            .anchor(egui::Align2::CENTER_TOP, [0.0, 160.0])
            .collapsible(false)
            .resizable(false)
            .show(ctx, |w| {
                w.label(egui::RichText::new("Change the host?").size(18.0));
                w.label(format!(
                    "{} of {} say yes, {} no — {} s left",
                    vote.yes,
                    vote.electorate,
                    vote.no,
                    vote.remaining.as_secs()
                ));
                if vote.passed {
                    w.label("passed: the match moves to the next host");
                } else if vote.answer.is_none() {
                    w.horizontal(|row| {
                        if row.button("yes").clicked() {
                            answer = Some(true);
                        }
                        if row.button("no").clicked() {
                            answer = Some(false);
                        }
                    });
                } else {
                    w.label(if vote.answer == Some(true) { "you said yes" } else { "you said no" });
                }
            });
        if let Some(yes) = answer {
            m.answer_change_host(yes);
        }
    }

    // A game message banner.
    if let Some((inform, _)) = &m.banner {
        egui::Area::new(egui::Id::new("banner")).anchor(egui::Align2::CENTER_TOP, [0.0, 120.0]).show(ctx, |area| {
            area.label(
                egui::RichText::new(crate::tanks::hud::inform_text(inform))
                    .size(36.0)
                    .strong()
                    .color(egui::Color32::from_rgb(255, 220, 120)),
            );
        });
    }

    // A host change: a short banner, the match goes on.
    if let Some((text, at)) = &m.host_banner
        && now.saturating_sub(*at).as_secs_f32() < 3.0
    {
        egui::Area::new(egui::Id::new("host changed")).anchor(egui::Align2::CENTER_TOP, [0.0, 70.0]).show(
            ctx,
            |area| {
                area.label(egui::RichText::new(text).size(22.0).color(egui::Color32::from_rgb(140, 200, 255)));
            },
        );
    }

    // A saved map that has errors.
    if let Some(errors) = &m.map_error {
        egui::Window::new("the map has errors")
            .anchor(egui::Align2::CENTER_BOTTOM, [0.0, -40.0])
            .collapsible(false)
            .show(ctx, |w| {
                w.colored_label(egui::Color32::from_rgb(255, 130, 110), "the match goes on on the last good map");
                egui::ScrollArea::vertical().max_height(200.0).show(w, |w| {
                    w.monospace(errors);
                });
            });
    } else if let Some((warnings, at)) = &m.map_warnings
        && now.saturating_sub(*at).as_secs() < 12
    {
        egui::Window::new("the map has warnings")
            .anchor(egui::Align2::CENTER_BOTTOM, [0.0, -40.0])
            .collapsible(false)
            .show(ctx, |w| {
                w.colored_label(
                    egui::Color32::from_rgb(240, 215, 60),
                    "it plays, but a tank cannot do everything here",
                );
                egui::ScrollArea::vertical().max_height(160.0).show(w, |w| {
                    w.monospace(warnings);
                });
            });
    } else if let Some((note, at)) = &m.note
        && now.saturating_sub(*at).as_secs() < 3
    {
        egui::Area::new(egui::Id::new("note")).anchor(egui::Align2::CENTER_BOTTOM, [0.0, -40.0]).show(ctx, |area| {
            area.label(egui::RichText::new(note).size(18.0).color(egui::Color32::LIGHT_GREEN));
        });
    }

    // The net graph.
    if ui.graph {
        egui::Window::new("net").anchor(egui::Align2::RIGHT_BOTTOM, [-12.0, -12.0]).resizable(false).show(ctx, |w| {
            for series in Series::ALL {
                plot(w, &m.graph.points(series), series.label(), m.graph.current(series));
            }
            w.label(format!("corrections {}  divergences {}", m.graph.total_corrections, m.graph.total_divergences));
            let stats = m.client().stats().clone();
            // Delta frames: what of the host's byte budget they use, and the rows it holds back.
            let budget = m.client().config().and_then(|c| c["engine"]["snapshotBudget"].as_f64()).filter(|b| *b > 0.0);
            if let (true, Some(budget)) = (stats.delta_frames > 0, budget) {
                let in_use = m.graph.current(Series::BudgetInUse).unwrap_or(0.0);
                let carried = m.client().rows_carried();
                w.label(format!("budget in use {in_use:.1} of {:.1} KB/s, {carried} rows carried", budget / 1000.0));
            }
            w.label(format!("host epoch {}  host changes {}", stats.host_epoch, stats.migrations));
            if m.meta_refused > 0 {
                w.colored_label(egui::Color32::RED, format!("{} meta messages did not read", m.meta_refused));
            }
            // How the link to the host goes; nothing for a host in this process.
            if let Some(path) = m.host_path() {
                let rtt = m.client().rtt_ms().map_or_else(String::new, |ms| format!(", round trip {ms:.0} ms"));
                w.label(format!("link to the host: {}{rtt}", path.as_str()));
            }
            // Hosting: how each friend's link goes, and what its frames make of their budget.
            for link in m.node.links() {
                let path = link.path.map_or("?", vimp_netcode::transport::LinkPath::as_str);
                let rtt = link.rtt_ms.map_or_else(String::new, |ms| format!(", round trip {ms:.0} ms"));
                w.label(format!("link to {}: {path}{rtt}", link.nickname));
                if let Some(b) = link.budget {
                    w.label(format!(
                        "  budget in use {:.1} of {:.1} KB/s, {} rows waiting",
                        b.in_use / 1000.0,
                        f64::from(b.per_second) / 1000.0,
                        b.waiting
                    ));
                }
            }
            let (checkpoints, mismatches, errors) = m.node.figures();
            let role = match (m.node.is_hosting(), m.node.is_shadowing()) {
                (true, _) => "hosting",
                (false, true) => "shadowing",
                (false, false) => "not a successor",
            };
            w.label(format!("node: {role}  checkpoints {checkpoints}  mismatches {mismatches}  errors {errors}"));
            // A game whose rows do not fit its schema sends no frame: say so, never skip it silently.
            let pack_errors = m.node.pack_errors();
            if pack_errors > 0 {
                let text = format!("{pack_errors} frames could not be packed (the log says why)");
                w.label(egui::RichText::new(text).color(egui::Color32::LIGHT_RED));
            }
        });
    }

    // The black screen, or the end of the session. A drop is dialed back first: the match
    // stays on screen, frozen, under "reconnecting…"; after every attempt failed, the
    // can't-connect screen, with a retry by hand.
    let failed = m.joining.as_ref().and_then(|j| j.failure.as_ref());
    let redial = m.client().redial();
    if let Some(Redial::Waiting { attempt, .. } | Redial::Dialing { attempt, .. }) = redial {
        egui::Area::new(egui::Id::new("reconnecting")).anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0]).show(ctx, |a| {
            egui::Frame::NONE.fill(egui::Color32::from_black_alpha(170)).inner_margin(16.0).show(a, |a| {
                let of = vimp_netcode::client::reconnect::RECONNECT_DELAYS.len();
                a.label(egui::RichText::new("reconnecting…").size(28.0).color(egui::Color32::WHITE));
                a.label(egui::RichText::new(format!("attempt {attempt} of {of}")).color(egui::Color32::LIGHT_GRAY));
            });
        });
    }
    let gave_up = matches!(redial, Some(Redial::GaveUp { .. }));
    let blackout = match (&m.tech, m.client().closed()) {
        _ if gave_up => Some(format!(
            "can't connect: the link to the match dropped and {} attempts to reconnect failed",
            vimp_netcode::client::reconnect::RECONNECT_DELAYS.len()
        )),
        _ if redial.is_some() => None,
        (_, Some((code, reason))) => Some(format!("disconnected: {reason} ({code})")),
        _ if m.client().welcome().is_none() && failed.is_some() => {
            failed.map(|f| format!("could not join: {}", f.reason))
        }
        (Some(TechInform::Show { code, params }), None) => Some(crate::tanks::hud::tech_text(*code, params.as_deref())),
        _ if m.client().welcome().is_none() => {
            Some(if now.as_secs() < 1 { String::new() } else { "connecting…".to_owned() })
        }
        _ => None,
    };
    if let Some(text) = blackout {
        egui::CentralPanel::default().frame(egui::Frame::NONE.fill(egui::Color32::from_black_alpha(235))).show(
            ctx,
            |p| {
                p.vertical_centered(|p| {
                    p.add_space(p.available_height() / 2.0 - 40.0);
                    p.label(egui::RichText::new(text).size(28.0).color(egui::Color32::WHITE));
                    if gave_up && p.button("Try again").clicked() {
                        m.node.retry();
                    }
                    if (m.client().closed().is_some() || failed.is_some() || gave_up)
                        && p.button("Back to the menu").clicked()
                    {
                        leave = true;
                    }
                });
            },
        );
    }

    // Esc: the match menu.
    if ui.paused {
        egui::Window::new("match")
            .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
            .collapsible(false)
            .resizable(false)
            .show(ctx, |w| {
                w.label(&m.title);
                if w.button("Resume").clicked() || keys.just_pressed(KeyCode::Escape) {
                    ui.paused = false;
                }
                if w.button("Change team").clicked() {
                    m.request_vote(ListRequest::Teams);
                    ui.paused = false;
                }
                if w.button("Vote for a map").clicked() {
                    m.request_vote(ListRequest::Maps);
                    ui.paused = false;
                }
                // Only players the host lists as successors vote: not spectators, not
                // the hosting player.
                if w.add_enabled(m.client().may_call_change_host(), egui::Button::new("Vote to change the host"))
                    .clicked()
                {
                    m.call_change_host();
                    ui.paused = false;
                }
                if w.button("Leave the match").clicked() {
                    leave = true;
                }
            });
    }

    if leave {
        m.leave();
        commands.remove_resource::<ActiveMatch>();
        next.set(Screen::Menu);
    }
    Ok(())
}

fn scoreboard(ui: &mut egui::Ui, m: &crate::window::net::MatchState) {
    let me = m.player_id();
    let mut rows: Vec<(u32, &Vec<vimp_netcode::meta::StatValue>)> =
        m.stat.rows.iter().filter(|((table, _), _)| *table == 0).map(|((_, id), (_, cells))| (*id, cells)).collect();
    let score = |cells: &Vec<vimp_netcode::meta::StatValue>| {
        cells.get(2).map(ToString::to_string).and_then(|s| s.parse::<i64>().ok()).unwrap_or(0)
    };
    rows.sort_by_key(|(id, cells)| (std::cmp::Reverse(score(cells)), *id));
    egui::Grid::new("scores").striped(true).min_col_width(70.0).show(ui, |g| {
        for head in vimp_netcode::meta::PLAYER_COLUMNS {
            g.strong(head);
        }
        g.end_row();
        for (id, cells) in rows {
            for (i, cell) in cells.iter().enumerate().take(5) {
                let text = if i == 4 { format!("{cell} ms") } else { cell.to_string() };
                if Some(id) == me {
                    g.label(egui::RichText::new(text).strong().color(egui::Color32::from_rgb(255, 230, 140)));
                } else {
                    g.label(text);
                }
            }
            g.end_row();
        }
    });
}

/// A small line plot of `points` (seconds ago, value).
fn plot(ui: &mut egui::Ui, points: &[(f64, f64)], label: &str, current: Option<f64>) {
    let (rect, _) = ui.allocate_exact_size(egui::vec2(260.0, 36.0), egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 2.0, egui::Color32::from_black_alpha(120));
    let span = crate::window::graph::HISTORY.as_secs_f64();
    let max = points.iter().map(|p| p.1).fold(1e-9, f64::max) * 1.1;
    let line: Vec<egui::Pos2> = points
        .iter()
        .map(|(ago, v)| {
            let x = rect.right() - (*ago / span) as f32 * rect.width();
            let y = rect.bottom() - (*v / max) as f32 * rect.height();
            egui::pos2(x, y)
        })
        .collect();
    if line.len() > 1 {
        painter.add(egui::Shape::line(line, egui::Stroke::new(1.5, egui::Color32::from_rgb(120, 220, 160))));
    }
    let text = match current {
        Some(v) => format!("{label}: {v:.1} (max {:.1})", max / 1.1),
        None => format!("{label}: -"),
    };
    painter.text(
        rect.left_top() + egui::vec2(4.0, 2.0),
        egui::Align2::LEFT_TOP,
        text,
        egui::FontId::proportional(12.0),
        egui::Color32::WHITE,
    );
}
