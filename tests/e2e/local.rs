//! The window's match logic without a window: a local match on an embedded host thread,
//! played through the in-memory link, with the map file hot-reloaded.

use std::path::Path;
use std::time::{Duration, Instant};

use vimp::window::net::MatchState;
use vimp::window::settings::Settings;
use vimp::window::{MatchKind, start_match};
use vimp_host::tanks::movement::Motion;
use vimp_netcode::input::KeyAction;

use crate::repo;

/// Updates the match every 2 ms until `done` holds, or panics with `what` after `limit`.
fn until(m: &mut MatchState, limit: Duration, what: &str, mut done: impl FnMut(&MatchState) -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        m.update(m.now());
        if done(m) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn scratch_map(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vimp-local-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("map.json");
    std::fs::copy(repo("maps/test-small.json"), &path).unwrap();
    path
}

/// Rewrites the map file so that its modification time surely changes.
fn rewrite(path: &Path, text: &str) {
    let before = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    loop {
        std::fs::write(path, text).unwrap();
        if std::fs::metadata(path).and_then(|m| m.modified()).ok() != before {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_local_match_plays_on_the_embedded_host_and_its_map_reloads_on_save() {
    let path = scratch_map("reload");
    let settings = Settings { nickname: "Designer".into(), ..Settings::default() };
    let mut m = start_match(&MatchKind::Local { map: path.clone(), bots: 2, skill: Default::default() }, &settings)
        .expect("the match starts");
    let limit = Duration::from_secs(20);

    until(&mut m, limit, "welcome, map, panel and frames", |m| {
        m.client().welcome().is_some() && m.map.is_some() && m.panel.contains_key("h") && !m.sample.hot.is_empty()
    });
    assert_eq!(m.map.as_ref().unwrap().name, "Test small");
    until(&mut m, limit, "the stat table with the player and 2 bots", |m| m.stat.rows.len() == 3);
    let me = m.player_id().unwrap();
    let name_of = |m: &MatchState| m.stat.rows.get(&(0, me)).and_then(|(_, c)| c.first()).map(ToString::to_string);
    assert_eq!(name_of(&m).as_deref(), Some("Designer"));

    // Driving moves the tank on the host (the player block comes back changed).
    let start = Motion::from_state(m.client().last_frame().and_then(|f| f.player).expect("a player block").state);
    m.key(KeyAction::Down, "forward");
    until(&mut m, limit, "the tank to move", |m| {
        m.client().last_frame().and_then(|f| f.player).is_some_and(|p| {
            let now = Motion::from_state(p.state);
            let (dx, dy) = (now.x - start.x, now.y - start.y);
            (dx * dx + dy * dy).sqrt() > 20.0
        })
    });
    m.key(KeyAction::Up, "forward");
    // The window's own prediction drove the same tank, and it follows the host's.
    until(&mut m, limit, "the predicted tank beside the host's", |m| {
        let host = m.client().last_frame().and_then(|f| f.player).map(|p| Motion::from_state(p.state));
        match (m.local_tank().map(Motion::from_state), host) {
            (Some(p), Some(h)) => (p.x - start.x).hypot(p.y - start.y) > 20.0 && (p.x - h.x).hypot(p.y - h.y) < 40.0,
            _ => false,
        }
    });

    // A chat line comes back from the host.
    m.say("hello from the designer").unwrap();
    until(&mut m, limit, "the chat line", |m| m.chat.iter().any(|l| l.text == "hello from the designer"));

    // A broken map is reported and the match goes on on the old one.
    let good = std::fs::read_to_string(&path).unwrap();
    let version = m.map_version;
    rewrite(&path, &good.replace("\"tileSize\": 32", "\"tileSize\": -1"));
    until(&mut m, limit, "the map errors", |m| m.map_error.is_some());
    let errors = m.map_error.clone().unwrap();
    assert!(errors.contains("tileSize"), "the error names the field: {errors}");
    assert_eq!(m.map_version, version, "the old map stays");
    let seq = m.client().last_frame().map(|f| f.seq).unwrap();
    until(&mut m, limit, "frames on the old map", |m| m.client().last_frame().is_some_and(|f| f.seq > seq + 10));

    // Fixed and renamed: it loads, the round restarts on it, and the errors go away.
    rewrite(&path, &good.replace("\"Test small\"", "\"Test small v2\""));
    until(&mut m, limit, "the new map", |m| m.map.as_ref().is_some_and(|map| map.name == "Test small v2"));
    assert!(m.map_version > version);
    assert_eq!(m.map_error, None);
    assert!(m.note.as_ref().is_some_and(|(n, _)| n.contains("reloaded")), "{:?}", m.note);
    until(&mut m, limit, "frames on the new map", |m| !m.sample.hot.is_empty());
    assert_eq!(m.map_warnings, None, "the small map has no warnings");

    // Walls boxing in one of team 2's respawn points: it loads and plays, with a warning.
    let mut boxed: serde_json::Value = serde_json::from_str(&good).unwrap();
    for (row, col) in [(2, 12), (2, 13), (2, 14), (3, 12), (3, 14), (4, 12), (4, 13), (4, 14)] {
        boxed["map"][row][col] = serde_json::json!(2);
    }
    boxed["name"] = serde_json::json!("Test small boxed");
    rewrite(&path, &boxed.to_string());
    until(&mut m, limit, "the boxed map's warnings", |m| m.map_warnings.is_some());
    let (warnings, _) = m.map_warnings.clone().unwrap();
    assert!(warnings.starts_with("respawns.2[1]: warning: "), "{warnings}");
    assert_eq!(m.map_error, None, "a warning is not an error");
    until(&mut m, limit, "the boxed map", |m| m.map.as_ref().is_some_and(|map| map.name == "Test small boxed"));
    m.leave();
}

#[test]
fn the_pointer_s_aim_turns_the_gun_on_the_embedded_host_and_in_the_prediction() {
    use vimp_netcode::input::Aim;
    let path = scratch_map("aim");
    let mut m = start_match(&MatchKind::Local { map: path, bots: 0, skill: Default::default() }, &Settings::default())
        .expect("the match starts");
    let limit = Duration::from_secs(20);
    let block = |m: &MatchState| m.client().last_frame().and_then(|f| f.player).map(|p| p.state);
    until(&mut m, limit, "a player block and the prediction", |m| block(m).is_some() && m.local_tank().is_some());
    assert!(m.client().welcome().is_some_and(|w| w.aim), "the embedded host takes aims");
    let start = block(&m).expect("a player block");
    let (x, y) = (start[0] - 120.0, start[1] + 90.0);
    // The direction of the point from a tank state, against its gun's heading.
    let off = |s: [f32; 8]| vimp_netcode::wrap_angle(s[2] + s[6] - (y - s[1]).atan2(x - s[0])).abs();
    let deadline = Instant::now() + limit;
    let mut sent = 0;
    loop {
        m.update(m.now());
        sent += usize::from(m.aim(Aim::new(x, y, 0)).is_some());
        let (host, local) = (block(&m).expect("a player block"), m.local_tank().expect("the prediction"));
        if off(host) < 1e-4 && off(local) < 1e-3 {
            break;
        }
        assert!(Instant::now() < deadline, "the gun turns to the pointer: host {host:?}, predicted {local:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(sent, 1, "the pointer rests: one aim");
    assert_eq!(m.aiming(), Aim::new(x, y, 0));
    // Let go of the aim and turn the gun with its key: the keys have the gun again.
    assert!(m.aim(None).is_some());
    m.key(KeyAction::Down, "gunLeft");
    until(&mut m, limit, "the gun key to turn the gun off the point", |m| block(m).is_some_and(|s| off(s) > 0.5));
    m.key(KeyAction::Up, "gunLeft");
    m.leave();
}

#[test]
fn a_local_player_watches_with_spectate_plays_again_with_play_and_whispers_nobody() {
    use vimp_netcode::meta::Keyset;
    let path = scratch_map("spectate");
    let settings = Settings { nickname: "Watcher".into(), ..Settings::default() };
    let mut m = start_match(&MatchKind::Local { map: path, bots: 1, skill: Default::default() }, &settings)
        .expect("the match starts");
    let limit = Duration::from_secs(20);
    until(&mut m, limit, "the player's panel and prediction", |m| {
        m.keyset == Some(Keyset::Player) && m.panel.contains_key("h") && m.predictor.is_some()
    });

    m.say("/spectate").unwrap();
    until(&mut m, limit, "watching, with the empty panel and no prediction", |m| {
        m.keyset == Some(Keyset::Spectator) && m.panel.contains_key("t") && !m.panel.contains_key("h")
    });
    until(&mut m, limit, "the prediction dropped", |m| m.predictor.is_none());
    until(&mut m, limit, "the line to everyone", |m| m.chat.iter().any(|l| l.text == "Watcher is watching"));
    assert!(m.key(KeyAction::Down, "nextPlayer").is_some(), "a spectator's key");

    m.say("/w nobody hi").unwrap();
    until(&mut m, limit, "the error line", |m| m.chat.iter().any(|l| l.text == "no player named nobody"));

    m.say("/play").unwrap();
    until(&mut m, limit, "playing again, with a whole panel and a prediction", |m| {
        m.keyset == Some(Keyset::Player) && m.panel.contains_key("h") && m.predictor.is_some()
    });
    m.leave();
}
