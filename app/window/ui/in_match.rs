//! The match's HUD and windows: the panel, the game's form, the lobby, chat, the scoreboard,
//! votes, banners, the net graph, the black screen and the match menu.

use std::time::Duration;

use bevy::prelude::*;
use bevy_egui::{EguiContexts, egui};
use vimp_netcode::client::reconnect::Redial;
use vimp_netcode::meta::{ListRequest, TechInform};

use super::{InMatch, UiState, crosshair, game_form};
use crate::window::graph::Series;
use crate::window::net::MatchState;
use crate::window::{ActiveMatch, Screen, SettingsStore};

/// The match's HUD and windows, one function each; leaving goes back to the menu.
pub(super) fn match_ui(
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
    crosshair(ctx, store.settings.aim);
    panel(ctx, m);
    form(ctx, m);
    lobby(ctx, m);
    // Esc closes the chat while it is open, else opens or closes the match menu: one press
    // does one of them, here alone (the game keys, which run before this pass, leave it).
    let esc = keys.just_pressed(KeyCode::Escape);
    let menu_esc = esc && !ui.chat_open;
    chat(ctx, m, ui, &keys, now);
    // The scoreboard while Tab is held.
    if ui.scoreboard {
        egui::Window::new("scoreboard")
            .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
            .collapsible(false)
            .resizable(false)
            .show(ctx, |w| scoreboard(w, m));
    }

    kill_feed(ctx, m, now);
    vote(ctx, m);
    change_host_vote(ctx, m);
    banners(ctx, m, now);
    if ui.graph {
        net_graph(ctx, m);
    }
    let leave = black_screen(ctx, m, now) | match_menu(ctx, m, ui, menu_esc);
    if leave {
        m.leave();
        commands.remove_resource::<ActiveMatch>();
        next.set(Screen::Menu);
    }
    Ok(())
}

/// The newest tanks destroyed, top centre: `killer ▸ victim` in their teams' colours, the
/// player's own name marked.
fn kill_feed(ctx: &egui::Context, m: &MatchState, now: Duration) {
    let shown: Vec<_> =
        m.kills.iter().filter(|k| now.saturating_sub(k.at) < crate::window::net::KILL_SHOWN).copied().collect();
    if shown.is_empty() {
        return;
    }
    let me = m.player_id();
    let who = |id: u32| {
        let cells = m.stat.rows.get(&(0, id)).map(|(_, cells)| cells);
        let name = cells.and_then(|c| c.first()).map_or_else(|| format!("#{id}"), ToString::to_string);
        let team = m.stat.rows.get(&(0, id)).map_or(0, |(tbody, _)| *tbody);
        let name = if Some(id) == me { format!("{name} (you)") } else { name };
        egui::RichText::new(name).strong().color((crate::WINDOW.team_color)(team))
    };
    egui::Area::new(egui::Id::new("kill feed")).anchor(egui::Align2::CENTER_TOP, [0.0, 12.0]).show(ctx, |area| {
        egui::Frame::popup(area.style()).fill(egui::Color32::from_black_alpha(170)).show(area, |area| {
            for kill in shown.iter().rev() {
                area.horizontal(|row| {
                    if kill.killer == kill.victim {
                        row.label(who(kill.victim));
                        row.label(egui::RichText::new("destroyed their own tank").color(egui::Color32::from_gray(220)));
                    } else {
                        row.label(who(kill.killer));
                        row.label(egui::RichText::new("destroyed").color(egui::Color32::from_gray(220)));
                        row.label(who(kill.victim));
                    }
                });
            }
        });
    });
}

/// The HUD from the panel; a spectator's says how to play.
fn panel(ctx: &egui::Context, m: &MatchState) {
    let watching = m.keyset == Some(vimp_netcode::meta::Keyset::Spectator);
    egui::Area::new(egui::Id::new("panel")).anchor(egui::Align2::LEFT_TOP, [12.0, 12.0]).show(ctx, |area| {
        egui::Frame::popup(area.style()).show(area, |area| {
            (crate::WINDOW.panel)(area, &m.panel);
            if watching {
                area.weak("watching: the arrow keys switch players, /play to join");
            }
        });
    });
}

/// The game's form, before it lets the player play.
fn form(ctx: &egui::Context, m: &mut MatchState) {
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
}

/// The lobby code and the invite (when hosting, or when the host serves the room), with who is
/// here while hosting.
fn lobby(ctx: &egui::Context, m: &MatchState) {
    let view = m.client();
    let invite = view.invite().cloned();
    let note = view.room_note().map(str::to_owned);
    let hosting = m.node.lobby.clone();
    let url = invite.as_ref().and_then(|i| i.public.clone().or_else(|| i.lan.clone()));
    let code = hosting
        .as_ref()
        .map(|(code, _)| *code)
        .or_else(|| url.as_deref().and_then(|u| vimp_netcode::lobby::JoinTarget::parse(u).ok()).map(|t| t.code()));
    let Some(code) = code else { return };
    egui::Area::new(egui::Id::new("lobby")).anchor(egui::Align2::RIGHT_TOP, [-12.0, 12.0]).show(ctx, |area| {
        egui::Frame::popup(area.style()).show(area, |area| {
            area.set_max_width(420.0);
            area.label("lobby code");
            area.label(egui::RichText::new(code.grouped()).size(40.0).monospace().strong());
            if area.button("Copy code").clicked() {
                area.ctx().copy_text(code.grouped());
            }
            let invite_url = url.or_else(|| hosting.as_ref().map(|(_, url)| url.clone()));
            if let Some(url) = invite_url {
                area.label("invite friends with");
                area.label(egui::RichText::new(&url).monospace());
                if area.button("Copy invite").clicked() {
                    area.ctx().copy_text(url.clone());
                }
                if let Some(lan) = invite.as_ref().and_then(|i| i.lan.as_ref()).filter(|lan| **lan != url) {
                    area.weak(format!("on your network: {lan}"));
                }
            }
            if let Some(note) = note {
                area.colored_label(egui::Color32::from_rgb(255, 190, 90), note);
            }
            if hosting.is_some() {
                area.separator();
                for (_, cells) in m.stat.rows.values() {
                    let name = cells.first().map(ToString::to_string).unwrap_or_default();
                    let status = cells.get(1).map(ToString::to_string).unwrap_or_default();
                    area.label(format!("{name} {status}"));
                }
            }
        });
    });
}

/// Chat: the last lines, and the line being typed.
fn chat(ctx: &egui::Context, m: &mut MatchState, ui: &mut InMatch, keys: &ButtonInput<KeyCode>, now: Duration) {
    let recent: Vec<_> = m
        .chat
        .iter()
        .rev()
        .filter(|l| ui.chat_open || now.saturating_sub(l.at).as_secs() < 12)
        .take(8)
        .cloned()
        .collect();
    if recent.is_empty() && !ui.chat_open {
        return;
    }
    egui::Area::new(egui::Id::new("chat")).anchor(egui::Align2::LEFT_BOTTOM, [12.0, -12.0]).show(ctx, |area| {
        // A dark ground under the lines, whatever the map shows behind them.
        egui::Frame::popup(area.style()).fill(egui::Color32::from_black_alpha(165)).show(area, |area| {
            area.set_max_width(480.0);
            for line in recent.into_iter().rev() {
                match &line.author {
                    Some(author) => {
                        // A verified author's name carries a check mark.
                        let verified = m.stat.rows.iter().any(|((table, id), (_, cells))| {
                            *table == 0
                                && cells.first().is_some_and(|c| c.to_string() == *author)
                                && m.accolades.of(*id).is_some_and(|a| a.verified)
                        });
                        let author = if verified { format!("{author} \u{2714}") } else { author.clone() };
                        area.horizontal_wrapped(|row| {
                            let who = match &line.to {
                                Some(to) => format!("{author} to {to}:"),
                                None => format!("{author}:"),
                            };
                            row.label(
                                egui::RichText::new(who)
                                    .size(15.0)
                                    .strong()
                                    .color((crate::WINDOW.team_color)(line.team)),
                            );
                            let text = egui::RichText::new(&line.text).size(15.0).color(egui::Color32::WHITE);
                            row.label(if line.to.is_some() { text.italics() } else { text });
                        });
                    }
                    None => {
                        // The engine's and the game's lines (joins, answers to /help): light, not grey.
                        area.label(
                            egui::RichText::new(&line.text).size(15.0).color(egui::Color32::from_rgb(200, 225, 255)),
                        );
                    }
                }
            }
            if ui.chat_open {
                let edit = area
                    .add(egui::TextEdit::singleline(&mut ui.chat_text).hint_text("say something, or /help (Enter)"));
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
    });
}

/// A vote asked by the host.
fn vote(ctx: &egui::Context, m: &mut MatchState) {
    if let Some(vote) = m.vote.clone() {
        let choices = m.vote_choices();
        let mut answer = None;
        let mut dismiss = false;
        egui::Window::new("vote")
            .anchor(egui::Align2::CENTER_TOP, [0.0, 60.0])
            .collapsible(false)
            .resizable(false)
            .show(ctx, |w| {
                w.label(egui::RichText::new((crate::WINDOW.vote_title)(&vote)).size(18.0));
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
}

/// The engine's `@changeHost` vote: between the players, the host does not see it.
fn change_host_vote(ctx: &egui::Context, m: &mut MatchState) {
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
}

/// The game's message banner, a host change's, and what a saved map's errors, warnings or
/// a note say.
fn banners(ctx: &egui::Context, m: &MatchState, now: Duration) {
    if let Some((inform, _)) = &m.banner {
        egui::Area::new(egui::Id::new("banner")).anchor(egui::Align2::CENTER_TOP, [0.0, 120.0]).show(ctx, |area| {
            // On one line: the area keeps the last banner's width, which a longer one would
            // otherwise wrap in.
            let text = egui::RichText::new((crate::WINDOW.inform_text)(inform))
                .size(36.0)
                .strong()
                .color(egui::Color32::from_rgb(255, 220, 120));
            area.add(egui::Label::new(text).extend());
        });
    }

    // A host change: a short banner, the match goes on.
    if let Some((text, at)) = &m.host_banner
        && now.saturating_sub(*at).as_secs_f32() < 3.0
    {
        egui::Area::new(egui::Id::new("host changed")).anchor(egui::Align2::CENTER_TOP, [0.0, 70.0]).show(
            ctx,
            |area| {
                let text = egui::RichText::new(text).size(22.0).color(egui::Color32::from_rgb(140, 200, 255));
                area.add(egui::Label::new(text).extend());
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
}

/// The net graph.
fn net_graph(ctx: &egui::Context, m: &mut MatchState) {
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

/// The black screen, or the end of the session. A drop is dialed back first: the match
/// stays on screen, frozen, under "reconnecting…"; after every attempt failed, the
/// can't-connect screen, with a retry by hand.
fn black_screen(ctx: &egui::Context, m: &mut MatchState, now: Duration) -> bool {
    let mut leave = false;
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
        (Some(TechInform::Show { code, params }), None) => Some((crate::WINDOW.tech_text)(*code, params.as_deref())),
        _ if m.client().welcome().is_none() => {
            Some(if now.as_secs() < 1 { String::new() } else { "connecting…".to_owned() })
        }
        _ => None,
    };
    if let Some(text) = blackout {
        egui::CentralPanel::default().frame(egui::Frame::NONE.fill(egui::Color32::from_black_alpha(235))).show(
            &mut super::screen(ctx),
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
    leave
}

/// Esc: the match menu, opened or closed by `esc`.
fn match_menu(ctx: &egui::Context, m: &mut MatchState, ui: &mut InMatch, esc: bool) -> bool {
    let mut leave = false;
    if esc {
        ui.paused = !ui.paused;
    }
    if ui.paused {
        egui::Window::new("match")
            .anchor(egui::Align2::CENTER_CENTER, [0.0, 0.0])
            .collapsible(false)
            .resizable(false)
            .show(ctx, |w| {
                w.label(&m.title);
                if w.button("Resume").clicked() {
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
    leave
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
        if !m.accolades.0.is_empty() {
            g.strong("top");
        }
        g.end_row();
        for (id, cells) in rows {
            let accolade = m.accolades.of(id);
            for (i, cell) in cells.iter().enumerate().take(5) {
                let text = match i {
                    // A verified player's name carries a check mark; another's is as it asked.
                    0 if accolade.is_some_and(|a| a.verified) => format!("{cell} \u{2714}"),
                    4 => format!("{cell} ms"),
                    _ => cell.to_string(),
                };
                if Some(id) == me {
                    g.label(egui::RichText::new(text).strong().color(egui::Color32::from_rgb(255, 230, 140)));
                } else {
                    g.label(text);
                }
            }
            if !m.accolades.0.is_empty() {
                match accolade {
                    Some(a) if a.verified => g.label(a.place.map_or_else(|| "-".to_owned(), |p| format!("#{p}"))),
                    Some(_) => g.weak("unverified"),
                    None => g.label(""),
                };
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
