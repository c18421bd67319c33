//! The tanks' words on the HUD: what the panel keys, game codes and votes mean.

use bevy_egui::egui;
use std::collections::BTreeMap;
use vimp_netcode::meta::{GameInform, Vote};

/// A team's colour.
pub fn team_rgb(team: u8) -> [f32; 3] {
    match team {
        1 => [0.93, 0.36, 0.30],
        2 => [0.30, 0.58, 0.98],
        _ => [0.75, 0.75, 0.75],
    }
}

/// A team's colour for egui.
pub fn team_color32(team: u8) -> egui::Color32 {
    let [r, g, b] = team_rgb(team);
    egui::Color32::from_rgb((r * 255.0) as u8, (g * 255.0) as u8, (b * 255.0) as u8)
}

/// The panel: round time `t`, health `h`, ammo `w1`/`w2` and the active weapon `wa`; while the
/// player's tank is destroyed, `r`, the seconds until it is back.
pub fn panel(ui: &mut egui::Ui, panel: &BTreeMap<String, String>) {
    let get = |k: &str| panel.get(k).map(String::as_str);
    if let Some(t) = get("t").and_then(|t| t.parse::<u32>().ok()) {
        ui.label(
            egui::RichText::new(format!("{}:{:02}", t / 60, t % 60))
                .size(28.0)
                .monospace()
                .strong()
                .color(egui::Color32::WHITE),
        );
    }
    if let Some(back_in) = get("r").and_then(|r| r.parse::<u32>().ok()) {
        // Destroyed: when it is back, big, instead of a health of 0.
        let text = match back_in {
            0 => "destroyed: back at the next round".to_owned(),
            s => format!("destroyed: back in {s} s"),
        };
        ui.label(egui::RichText::new(text).size(22.0).strong().color(egui::Color32::from_rgb(255, 140, 120)));
    } else if let Some(h) = get("h").and_then(|h| h.parse::<f32>().ok()) {
        let frac = (h / 100.0).clamp(0.0, 1.0);
        let color = if frac > 0.5 {
            egui::Color32::from_rgb(90, 190, 90)
        } else if frac > 0.25 {
            egui::Color32::from_rgb(220, 180, 50)
        } else {
            egui::Color32::from_rgb(220, 70, 60)
        };
        // The number beside the bar, white on the panel's dark ground: light text on a light
        // bar was hard to read.
        ui.horizontal(|row| {
            row.add(egui::ProgressBar::new(frac).desired_width(160.0).desired_height(14.0).fill(color));
            row.label(egui::RichText::new(format!("{h:.0}")).size(18.0).strong().color(egui::Color32::WHITE));
            row.label(egui::RichText::new("health").size(14.0).color(egui::Color32::from_gray(210)));
        });
    }
    let active = get("wa").unwrap_or("w1");
    ui.horizontal(|row| {
        for (key, name) in [("w1", "gun"), ("w2", "bombs")] {
            let Some(ammo) = get(key) else { continue };
            let text = egui::RichText::new(format!("{name} {ammo}")).size(16.0);
            let text = if key == active {
                text.strong().color(egui::Color32::from_rgb(255, 220, 120))
            } else {
                text.color(egui::Color32::from_gray(200))
            };
            row.label(text);
        }
    });
}

/// A game message (GAME_INFORM) as text.
pub fn inform_text(inform: &GameInform) -> String {
    let p = |i: usize| {
        inform.params.as_ref().and_then(|p| p.get(i)).map(|v| v.as_str().map(str::to_owned).unwrap_or(v.to_string()))
    };
    let team = |t: Option<String>| match t.as_deref() {
        Some("1") => "Red".to_owned(),
        Some("2") => "Blue".to_owned(),
        Some(other) => format!("Team {other}"),
        None => "A team".to_owned(),
    };
    match inform.code {
        GameInform::TEAM_VICTORY => format!("{} wins the round", team(p(0))),
        GameInform::ROUND_START => format!("Round {}", p(0).unwrap_or_default()),
        GameInform::GAME_OVER => format!("Game over: {} wins the match", team(p(0))),
        GameInform::FRAG => "a tank was destroyed".to_owned(),
        code => format!("game message {code}"),
    }
}

/// The black screen's text (TECH_INFORM).
pub fn tech_text(code: u8, params: Option<&[serde_json::Value]>) -> String {
    let p = |i: usize| params.and_then(|p| p.get(i)).map(|v| v.as_str().map(str::to_owned).unwrap_or(v.to_string()));
    match code {
        0 => "the server is full".to_owned(),
        1 => "loading…".to_owned(),
        2 => format!("kicked: {} ({})", p(1).unwrap_or_default(), p(0).unwrap_or_default()),
        c => format!("technical message {c}"),
    }
}

/// A vote's title.
pub fn vote_title(vote: &Vote) -> String {
    let p = |i: usize| vote.params.as_ref().and_then(|p| p.get(i)).cloned().unwrap_or_default();
    match vote.name.as_str() {
        "teams" => "Pick a team".to_owned(),
        "maps" => "Vote for a map".to_owned(),
        "mapChange" => format!("Change the map to {}?", p(0)),
        name => name.to_owned(),
    }
}
