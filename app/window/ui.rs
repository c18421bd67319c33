//! Menus and the match HUD, drawn with egui; the game keys and the pointer's aim.

use std::path::PathBuf;

use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};
use vimp_host::engine::game::BotSkill;
use vimp_netcode::input::{AIM_PRESSED, Aim, KeyAction};

use crate::window::input::{RESERVED, action_words, key_from_name, key_label, key_name};
use crate::window::settings::{AimScheme, map_label};
use crate::window::{ActiveMatch, MatchKind, MatchRequest, Screen, SettingsStore};

mod in_match;

use in_match::match_ui;

/// Adds the menus, the HUD, the game keys and the pointer's aim.
pub(crate) struct UiPlugin;

impl Plugin for UiPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<UiState>()
            .init_resource::<super::pad::PadHeld>()
            .add_systems(Update, (game_keys, super::pad::pad_keys, pointer_aim).chain().run_if(in_state(Screen::Match)))
            .add_systems(OnExit(Screen::Match), |mut ui: ResMut<UiState>| ui.in_match = InMatch::default())
            .configure_sets(EguiPrimaryContextPass, super::WorldText.before(match_ui))
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
    Top,
}

/// The "Top players" page's list, fetched from the rendezvous on a thread of its own.
#[derive(Debug, Default)]
struct TopList {
    /// A `Mutex` only to be `Sync`, as a resource's fields must.
    pending: Option<std::sync::Mutex<std::sync::mpsc::Receiver<Result<Vec<vimp_netcode::identity::TopEntry>, String>>>>,
    shown: Option<Result<Vec<vimp_netcode::identity::TopEntry>, String>>,
    from: String,
}

impl TopList {
    /// How many players the page lists.
    const SHOWN: u32 = 15;

    /// Asks the rendezvous at `signal` for the top again.
    fn fetch(&mut self, signal: &str) {
        let (tx, rx) = std::sync::mpsc::channel();
        let from = signal.trim_end_matches('/').to_owned();
        let asked = from.clone();
        let spawned = std::thread::Builder::new().name("vimp-top".into()).spawn(move || {
            let _ = tx.send(vimp_netcode::identity::fetch_top(&asked, Self::SHOWN));
        });
        self.pending = spawned.is_ok().then(|| std::sync::Mutex::new(rx));
        self.shown = None;
        self.from = from;
    }

    /// Takes the answer when it came.
    fn poll(&mut self) {
        if let Some(got) = self.pending.as_ref().and_then(|rx| rx.lock().ok()?.try_recv().ok()) {
            self.shown = Some(got);
            self.pending = None;
        }
    }
}

/// What the menus and the HUD remember between frames.
#[derive(Resource, Debug, Default)]
pub(super) struct UiState {
    page: Page,
    join_target: String,
    join_password: String,
    join_spectate: bool,
    host_password: String,
    playtest_map: String,
    /// The action waiting for a key press to be rebound.
    rebinding: Option<String>,
    pub(super) in_match: InMatch,
    top: TopList,
    /// The first-run question for a nickname: the name being typed, and whether it was
    /// answered or put off in this run.
    name_draft: String,
    name_asked: bool,
}

#[derive(Debug, Default)]
pub(super) struct InMatch {
    pub(super) chat_open: bool,
    chat_text: String,
    chat_error: Option<String>,
    pub(super) scoreboard: bool,
    graph: bool,
    /// The match menu (Esc) is open.
    pub(super) paused: bool,
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
    ask_name(ctx, state, &mut store);
    egui::CentralPanel::default().show(&mut screen(ctx), |ui| {
        ui.vertical_centered(|ui| {
            ui.add_space(40.0);
            ui.label(egui::RichText::new("vimp").size(64.0).strong());
            ui.label("tanks, hosted by one of you");
            ui.add_space(24.0);
            if let Some(e) = &request.error {
                ui.colored_label(egui::Color32::from_rgb(255, 110, 100), e);
                ui.add_space(12.0);
            }
            match state.page {
                Page::Main => main_page(ui, state, &mut store, &mut request, &mut exit),
                Page::Host => host_page(ui, state, &mut store, &mut request),
                Page::Join => join_page(ui, state, &store, &mut request),
                Page::Playtest => playtest_page(ui, state, &mut store, &mut request),
                Page::Settings => {
                    // Taller than a small window: it scrolls, and Back stays in sight under it.
                    let height = (ui.available_height() - 60.0).max(120.0);
                    // A column of its own, in the middle: labels and what they set read as pairs.
                    egui::ScrollArea::vertical().max_height(height).show(ui, |ui| {
                        ui.vertical_centered(|ui| {
                            let width = ui.available_width().min(640.0);
                            let column = egui::Layout::top_down(egui::Align::Min);
                            ui.allocate_ui_with_layout(egui::vec2(width, 0.0), column, |ui| {
                                ui.set_width(width);
                                settings_page(ui, state, &mut store)
                            });
                        });
                    });
                    back(ui, &mut state.page);
                }
                Page::Top => {
                    top_page(ui, &mut state.top, &store.settings.signal_url);
                    back(ui, &mut state.page);
                }
            }
        });
    });
    Ok(())
}

/// The whole window as one egui `Ui` on the background layer, for the panels drawn over it
/// (egui shows a panel inside a `Ui`).
fn screen(ctx: &egui::Context) -> egui::Ui {
    let builder = egui::UiBuilder::new().layer_id(egui::LayerId::background()).max_rect(ctx.viewport_rect());
    egui::Ui::new(ctx.clone(), "screen".into(), builder)
}

/// A menu's big button.
fn wide(text: &str) -> egui::Button<'_> {
    egui::Button::new(egui::RichText::new(text).size(22.0)).min_size([260.0, 40.0].into())
}

/// The main menu: play at once (with the map and bot skill under the button), or a page.
/// The nickname everyone starts with, until the player picks one.
const FIRST_NICKNAME: &str = "player";

/// On the first run (the nickname still the one everyone starts with), asks the player what
/// friends should call it: saved at once; "Later" asks again the next run.
fn ask_name(ctx: &egui::Context, state: &mut UiState, store: &mut SettingsStore) {
    if state.name_asked || store.settings.nickname != FIRST_NICKNAME {
        return;
    }
    // Modal: the menu behind it takes no clicks until it is answered.
    egui::Modal::new(egui::Id::new("ask name")).show(ctx, |w| {
        w.set_max_width(360.0);
        w.heading("Your nickname");
        w.label("What should friends call you? It shows over your tank and in the chat.");
        let edit = w.add(egui::TextEdit::singleline(&mut state.name_draft).hint_text("a nickname").char_limit(24));
        // Typed into at once, and Enter saves (the field gives the keyboard up on Enter: it is
        // not asked back that frame).
        let entered = w.input(|i| i.key_pressed(egui::Key::Enter));
        if !entered && !edit.has_focus() && !w.ctx().memory(|m| m.focused().is_some()) {
            edit.request_focus();
        }
        let typed = state.name_draft.trim().to_owned();
        w.horizontal(|row| {
            let play = row.add_enabled(!typed.is_empty(), egui::Button::new("Save"));
            if (play.clicked() || entered) && !typed.is_empty() {
                store.settings.nickname = typed.clone();
                store.save();
                state.name_asked = true;
            }
            if row.button("Later").clicked() {
                state.name_asked = true;
            }
        });
    });
}

fn main_page(
    ui: &mut egui::Ui,
    state: &mut UiState,
    store: &mut SettingsStore,
    request: &mut MatchRequest,
    exit: &mut MessageWriter<AppExit>,
) {
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
    let pages = [
        ("Host", Page::Host),
        ("Join by code", Page::Join),
        ("Playtest a map file", Page::Playtest),
        ("Top players", Page::Top),
        ("Settings", Page::Settings),
    ];
    for (label, page) in pages {
        ui.add_space(8.0);
        if ui.add(wide(label)).clicked() {
            state.page = page;
            if page == Page::Top {
                state.top.fetch(&store.settings.signal_url);
            }
        }
    }
    ui.add_space(8.0);
    if ui.add(wide("Quit")).clicked() {
        exit.write(AppExit::Success);
    }
}

/// Host a match: map, bots, password.
fn host_page(ui: &mut egui::Ui, state: &mut UiState, store: &mut SettingsStore, request: &mut MatchRequest) {
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
            extras: Default::default(),
        });
    }
    back(ui, &mut state.page);
}

/// Join by code or room URL.
fn join_page(ui: &mut egui::Ui, state: &mut UiState, store: &SettingsStore, request: &mut MatchRequest) {
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
        request.kind = Some(MatchKind::Join {
            target: state.join_target.trim().to_owned(),
            password,
            signal: None,
            spectate: state.join_spectate,
            nickname: None,
            host_timeout_ms: None,
            extras: Default::default(),
        });
    }
    back(ui, &mut state.page);
}

/// Playtest a map file: it reloads on every save.
fn playtest_page(ui: &mut egui::Ui, state: &mut UiState, store: &mut SettingsStore, request: &mut MatchRequest) {
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

/// A choice of one of the maps the menus offer (the shipped ones and the player's own,
/// [`offered_maps`](crate::window::settings::offered_maps)); returns whether it changed.
fn map_picker(ui: &mut egui::Ui, id: &str, map: &mut String) -> bool {
    let before = map.clone();
    egui::ComboBox::from_id_salt(("map", id)).selected_text(map_label(map).to_owned()).show_ui(ui, |ui| {
        for (name, file) in crate::window::settings::offered_maps() {
            ui.selectable_value(map, file, name);
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

/// The global top the rendezvous keeps: the best players by skill, with their recorded rounds.
fn top_page(ui: &mut egui::Ui, top: &mut TopList, signal: &str) {
    top.poll();
    ui.heading("Top players");
    ui.label(format!("kept by the rendezvous at {}", top.from));
    ui.weak("verified players (\u{2714} on the scoreboard), by skill: their rating less three uncertainties");
    ui.add_space(8.0);
    match &top.shown {
        None => {
            ui.label("asking the rendezvous…");
            ui.ctx().request_repaint_after(std::time::Duration::from_millis(100));
        }
        Some(Err(why)) => {
            ui.colored_label(egui::Color32::from_rgb(255, 110, 100), why);
        }
        Some(Ok(players)) if players.is_empty() => {
            ui.label("no recorded rounds yet: verified players' rounds make the top");
        }
        Some(Ok(players)) => {
            // Centred as the main menu's grid is: in a box of its own width.
            ui.allocate_ui(egui::vec2(360.0, 0.0), |ui| {
                egui::Grid::new("top").striped(true).min_col_width(80.0).show(ui, |g| {
                    for head in ["place", "player", "skill", "rounds"] {
                        g.strong(head);
                    }
                    g.end_row();
                    for p in players {
                        g.label(format!("#{}", p.place));
                        g.label(&p.nickname);
                        g.label(format!("{:.1}", p.skill));
                        g.label(p.rounds.to_string());
                        g.end_row();
                    }
                });
            });
        }
    }
    ui.add_space(8.0);
    if ui.button("Refresh").clicked() {
        top.fetch(signal);
    }
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
        ui.label("aim the gun with");
        egui::ComboBox::from_id_salt("aim scheme").selected_text(s.aim.label()).show_ui(ui, |ui| {
            for scheme in AimScheme::ALL {
                changed |= ui.selectable_value(&mut s.aim, scheme, scheme.label()).changed();
            }
        });
        ui.end_row();
    });
    ui.add_space(8.0);
    ui.label(egui::RichText::new("Screen and sound").strong());
    egui::Grid::new("display").num_columns(2).show(ui, |ui| {
        ui.label("display");
        changed |= ui.checkbox(&mut s.fullscreen, "full screen").changed();
        ui.end_row();
        ui.label("window size");
        let size = |[w, h]: [u32; 2]| format!("{w} × {h}");
        egui::ComboBox::from_id_salt("window size").selected_text(size(s.window_size)).show_ui(ui, |ui| {
            for choice in crate::window::settings::WINDOW_SIZES {
                changed |= ui.selectable_value(&mut s.window_size, choice, size(choice)).changed();
            }
        });
        ui.end_row();
        ui.label("");
        changed |= ui.checkbox(&mut s.vsync, "vsync (no tearing)").changed();
        ui.end_row();
        ui.label("menus and HUD size");
        let scale = |f: f32| format!("{:.0} %", f * 100.0);
        egui::ComboBox::from_id_salt("ui scale").selected_text(scale(s.ui_scale())).show_ui(ui, |ui| {
            for choice in crate::window::settings::UI_SCALES {
                changed |= ui.selectable_value(&mut s.ui_scale, choice, scale(choice)).changed();
            }
        });
        ui.end_row();
        ui.label("volume");
        changed |= ui.add(egui::Slider::new(&mut s.volume, 0.0..=1.0).show_value(false)).drag_stopped();
        ui.end_row();
    });
    ui.add_space(8.0);
    ui.label(egui::RichText::new("Keys").strong());
    ui.weak("click a key, then press the new one");
    egui::Grid::new("bindings").num_columns(2).show(ui, |ui| {
        for (action, key) in &s.bindings {
            ui.label(action_words(action));
            let text =
                if state.rebinding.as_deref() == Some(action) { "press a key…".to_owned() } else { key_label(key) };
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
    ui.add_space(4.0);
    ui.label(egui::RichText::new("Gamepad").strong());
    egui::Grid::new("pad").num_columns(2).show(ui, |ui| {
        for (part, does) in crate::window::pad::PAD_BINDINGS {
            ui.label(*part);
            ui.label(*does);
            ui.end_row();
        }
    });
    ui.add_space(8.0);
    egui::CollapsingHeader::new("Advanced: the network").show(ui, |ui| {
        egui::Grid::new("network").num_columns(2).show(ui, |ui| {
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
    });
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

/// Keys to input events while no text field has the keyboard; Tab, F3, F4 and Enter for the
/// window (Esc is the match menu's, [`in_match::match_ui`]).
fn game_keys(
    keys: Res<ButtonInput<KeyCode>>,
    mouse: Res<ButtonInput<MouseButton>>,
    store: Res<SettingsStore>,
    mut ui_state: ResMut<UiState>,
    mut active: ResMut<ActiveMatch>,
    mut contexts: EguiContexts,
    mut overlay: ResMut<crate::window::game::NavOverlayOn>,
) {
    let m = active.get();
    let ui = &mut ui_state.in_match;
    let egui_busy = contexts.ctx_mut().is_ok_and(|ctx| ctx.egui_wants_keyboard_input());
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
    for (action, key) in &store.settings.bindings {
        let Some(code) = key_from_name(key) else { continue };
        if keys.just_pressed(code) {
            m.key(KeyAction::Down, action);
        }
        if keys.just_released(code) {
            m.key(KeyAction::Up, action);
        }
    }
    if mouse.just_pressed(MouseButton::Left) && !contexts.ctx_mut().is_ok_and(|c| c.egui_wants_pointer_input()) {
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
    camera: Query<(&Camera, &GlobalTransform), With<crate::window::game::MainCamera>>,
) {
    let m = active.get();
    if store.settings.aim == AimScheme::Keys {
        m.aim(None);
        return;
    }
    let ui = &ui_state.in_match;
    if ui.chat_open || ui.paused || contexts.ctx_mut().is_ok_and(|c| c.egui_wants_pointer_input()) {
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
    if ctx.is_pointer_over_egui() {
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
