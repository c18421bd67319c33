//! The command line a user types: help, sim, map and schema checks, the signalling server.

use std::path::PathBuf;

use crate::{repo, vimp};

#[test]
fn help_lists_the_subcommands() {
    let out = vimp(&["--help"]);
    assert!(out.status.success(), "vimp --help exits 0");
    let text = String::from_utf8_lossy(&out.stdout);
    for sub in ["sim", "signal", "map", "schema"] {
        assert!(text.contains(sub), "help lists `{sub}`:\n{text}");
    }
}

/// Flags that mean nothing where they are given are refused before anything starts: a window
/// host has no `--seconds` or `--json`, nor a window join any of the headless player's, a
/// headless one no screenshot; a round of no length.
#[test]
fn flags_that_do_not_apply_are_refused_with_why() {
    for (args, why) in [
        (&["host", "--seconds", "5"][..], "--seconds and --json are for --headless"),
        (&["host", "--json"][..], "--seconds and --json are for --headless"),
        (&["host", "--headless", "--frames", "3"][..], "need the window"),
        (&["host", "--headless", "--round-seconds", "0"][..], "not a round's length"),
        (&["join", "k7mp2q", "--seconds", "5"][..], "--headless"),
        (&["join", "k7mp2q", "--say", "hi", "--json"][..], "--headless"),
        (&["join", "k7mp2q", "--headless", "--screenshot", "x.png"][..], "need the window"),
    ] {
        let out = vimp(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(why), "vimp {args:?}: {err}");
    }
    // No display to open a window on: said, not a panic.
    let out = crate::vimp_command()
        .args(["play"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("WAYLAND_SOCKET")
        .output()
        .expect("vimp runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no display") && !err.contains("panicked"), "{err}");
}

#[test]
fn schema_check_accepts_the_tanks_schema() {
    let file = repo("host/src/tanks/snapshot.json");
    let out = vimp(&["schema", "check", "--json", file.to_str().expect("utf-8 path")]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let keys: Vec<&str> =
        report[0]["keys"].as_array().expect("keys").iter().filter_map(|k| k["key"].as_str()).collect();
    assert_eq!(keys, ["m1", "w1", "w2", "w2e", "c1", "c2"]);
    // c1: u8 index + tail flag + 3 f32 + z (f32) + level (u8) = 19 bytes at rest, + 3 f32 = 31
    // with the velocity tail.
    let c1 = &report[0]["keys"][4];
    assert_eq!((c1["rowBytes"].as_u64(), c1["rowBytesWithTail"].as_u64()), (Some(19), Some(31)));
}

#[test]
fn schema_check_names_the_broken_key_and_exits_non_zero() {
    let dir = std::env::temp_dir().join(format!("vimp-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{ "keys": { "m1": { "id": 1, "kind": "indexed8", "class": "hot",
            "fields": [ { "name": "team", "ty": "u8", "interp": "lerp" } ] } } }"#,
    )
    .expect("write");
    let out = vimp(&["schema", "check", bad.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.json") && err.contains("`m1`") && err.contains("`team`"), "stderr: {err}");
    std::fs::remove_dir_all(&dir).ok();
}

fn sim(args: &[&str]) -> serde_json::Value {
    let map = repo("maps/test-small.json");
    let mut all = vec!["sim", "--map", map.to_str().expect("utf-8 path"), "--json"];
    all.extend_from_slice(args);
    let out = vimp(&all);
    assert!(out.status.success(), "vimp sim {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON figures")
}

#[test]
fn sim_same_seed_same_hash_other_seed_other_hash() {
    let a = sim(&["--bots", "4", "--seconds", "4", "--seed", "1"]);
    let b = sim(&["--bots", "4", "--seconds", "4", "--seed", "1"]);
    let c = sim(&["--bots", "4", "--seconds", "4", "--seed", "2"]);
    assert_eq!(a["ticks"], 480);
    for key in ["tick_us_p50", "tick_us_p99", "snapshot_v5_bytes_per_client_per_s", "frags", "state_hash"] {
        assert!(!a[key].is_null(), "{key} is reported");
    }
    let v5 = a["snapshot_v5_bytes_per_client_per_s"].as_f64().expect("v5 bytes");
    let v6 = a["snapshot_v6_bytes_per_client_per_s"].as_f64().expect("v6 bytes");
    assert!(v5 > 0.0 && v6 > 0.0 && v6 < v5, "v5 {v5} B/s, v6 {v6} B/s");
    assert_eq!(a["snapshot_v6_bytes_per_client_per_s"], b["snapshot_v6_bytes_per_client_per_s"], "deterministic");
    assert_eq!(a["snapshot_pack_errors"], 0, "every frame packed");
    assert_eq!(a["state_hash"], b["state_hash"]);
    assert_ne!(a["state_hash"], c["state_hash"]);
}

#[test]
fn sim_check_dump_at_passes_on_a_deterministic_match() {
    let report = sim(&["--bots", "4", "--seconds", "3", "--seed", "9", "--check-dump-at", "150"]);
    assert_eq!(report["dump_check"]["at"], 150);
    assert!(report["dump_check"]["first_diverging_tick"].is_null(), "{report}");
}

#[test]
fn map_check_accepts_the_shipped_maps_and_names_the_field_at_fault() {
    let maps: Vec<PathBuf> = ["maps/default.json", "maps/test-small.json", "maps/rooms.json", "maps/bridge.json"]
        .iter()
        .map(|m| repo(m))
        .collect();
    let args: Vec<&str> =
        ["map", "check"].into_iter().chain(maps.iter().map(|m| m.to_str().expect("utf-8 path"))).collect();
    let out = vimp(&args);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"), "the shipped maps have no warnings");

    let dir = std::env::temp_dir().join(format!("vimp-map-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.json");
    let mut map: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&maps[1]).expect("read")).expect("json");
    map["tileSize"] = serde_json::json!(-4);
    std::fs::write(&bad, map.to_string()).expect("write");
    let out = vimp(&["map", "check", bad.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.json") && err.contains("tileSize"), "stderr: {err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The binary copied out of the checkout, run where there is no `maps/` and no `assets/`, with
/// an empty home: the shipped maps come from the binary itself.
#[test]
fn the_binary_runs_outside_the_checkout() {
    let dir = std::env::temp_dir().join(format!("vimp-elsewhere-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home")).expect("temp dir");
    let exe = dir.join("vimp");
    std::fs::copy(env!("CARGO_BIN_EXE_vimp"), &exe).expect("the binary copies");
    let run = |args: &[&str]| {
        std::process::Command::new(&exe)
            .args(args)
            .current_dir(&dir)
            .env_clear()
            .env("HOME", dir.join("home"))
            .output()
            .expect("the copied binary runs")
    };
    let out = run(&["sim", "--bots", "2", "--seconds", "2", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the sim's report");
    assert!(report["ticks"].as_u64().is_some_and(|t| t > 200), "{report}");
    for map in ["maps/default.json", "bridge", "rooms.json"] {
        let out = run(&["map", "check", map]);
        assert!(out.status.success(), "{map}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains(": ok"), "{map}");
    }
    let out = run(&["map", "check", "maps/nowhere.json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("the shipped maps:") && err.contains("default.json"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `--version` names the commit; a headless command keeps a log file in the data folder's `logs`,
/// which its first run makes quietly.
#[test]
fn the_version_names_its_commit_and_a_log_file_is_kept() {
    let out = vimp(&["--version"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && said.starts_with("vimp ") && said.contains("(commit "), "{said}");
    let data = std::env::temp_dir().join(format!("vimp-logs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let out = crate::vimp_command()
        .env("VIMP_DATA_DIR", &data)
        .args(["sim", "--bots", "2", "--seconds", "1", "--log-level", "debug"])
        .output()
        .expect("vimp runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // The first run makes the folder without a word about it.
    assert!(!err.contains("log directory") && !err.contains("no log file"), "{err}");
    let logs: Vec<std::path::PathBuf> = std::fs::read_dir(data.join("logs"))
        .expect("a logs folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let text = std::fs::read_to_string(&logs[0]).expect("the log");
    assert!(text.contains("started: sim"), "{text}");
    let out = vimp(&["sim", "--log-level", "loud"]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not a log level"));
    std::fs::remove_dir_all(&data).ok();
}

/// A map the format allows but the game refuses (teams named "red" and "blue", or one team):
/// `vimp map check` fails it as the game would, and `vimp play` on it exits non-zero with the
/// reason, before any window.
#[test]
fn map_check_and_play_refuse_what_the_game_refuses() {
    let dir = std::env::temp_dir().join(format!("vimp-map-game-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut map: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo("maps/test-small.json")).expect("read")).expect("json");
    let respawns = map["respawns"].clone();
    map["respawns"] = serde_json::json!({ "red": respawns["1"], "blue": respawns["2"] });
    let colours = dir.join("colours.json");
    std::fs::write(&colours, map.to_string()).expect("write");
    map["respawns"] = serde_json::json!({ "1": respawns["1"] });
    let one_team = dir.join("one-team.json");
    std::fs::write(&one_team, map.to_string()).expect("write");
    for bad in [&colours, &one_team] {
        let path = bad.to_str().expect("utf-8 path");
        let out = vimp(&["map", "check", path]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{path}: {err}");
        assert!(
            err.contains(path) && err.contains("the game refuses the map") && err.contains("respawns for team"),
            "{err}"
        );
        // No match can start on it: said, and a failing exit, with no window opened.
        let out = vimp(&["play", "--map", path]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{path}: {err}");
        assert!(err.contains("the game refuses the map"), "{err}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The layered rules' table of cases (the same the host's unit tests run): `vimp map check`
/// passes each rule's valid map and names every problem of its invalid one, file first.
#[test]
fn map_check_runs_the_layered_rules_table() {
    let dir = std::env::temp_dir().join(format!("vimp-map-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cases = vimp_host::engine::map::rule_cases();
    assert!(cases.len() >= 15, "a case per rule");
    for (n, case) in cases.iter().enumerate() {
        let (valid, invalid) = (dir.join(format!("valid-{n}.json")), dir.join(format!("invalid-{n}.json")));
        std::fs::write(&valid, &case.valid).expect("write");
        std::fs::write(&invalid, &case.invalid).expect("write");
        let out = vimp(&["map", "check", valid.to_str().expect("utf-8 path")]);
        assert!(out.status.success(), "{}: {}", case.rule, String::from_utf8_lossy(&out.stderr));
        let path = invalid.to_str().expect("utf-8 path");
        let out = vimp(&["map", "check", path]);
        assert_eq!(out.status.code(), Some(1), "{}", case.rule);
        let expected: Vec<String> = case.errors.iter().map(|e| format!("{path}:{e}")).collect();
        let err = String::from_utf8_lossy(&out.stderr);
        let got: Vec<&str> = err.lines().filter(|l| l.starts_with(path)).collect();
        assert_eq!(got, expected, "{}", case.rule);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn map_check_warns_of_places_a_tank_cannot_reach_and_keeps_exit_code_0() {
    let dir = std::env::temp_dir().join(format!("vimp-map-warn-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("walled.json");
    // Column 8 walls the map in two; its only gap (row 10) holds a crate; team 2's second
    // point is boxed in on its own.
    let rows = [
        "################",
        "#.......#.o.####",
        "#...o...#...#..#",
        "#.1.....#...#2.#",
        "#.......#...####",
        "#.......#......#",
        "#.......#......#",
        "#.......#......#",
        "#.1.....#....2.#",
        "#.......#......#",
        "#...............",
        "################",
    ];
    let grid: Vec<Vec<u8>> = rows.iter().map(|r| r.chars().map(|c| u8::from(c == '#')).collect()).collect();
    let mut grid = grid;
    grid[10][15] = 1;
    let map = serde_json::json!({
        "name": "walled", "tileSize": 32, "map": grid, "physicsStatic": [1],
        "physicsDynamic": [ { "x": 258, "y": 322, "width": 28, "height": 28 }, { "x": 354, "y": 34, "width": 28, "height": 28 } ],
        "respawns": { "1": [[80, 112, 0], [80, 272, 0]], "2": [[432, 272, 180], [432, 112, 180]] }
    });
    std::fs::write(&path, map.to_string()).expect("write");
    let out = vimp(&["map", "check", path.to_str().expect("utf-8 path")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "warnings are not errors: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "stderr: {err}");
    assert!(
        lines[0].ends_with(
            "walled.json:respawns.2[1]: warning: a body 30 units wide cannot reach any respawn point of another team from here"
        ),
        "{err}"
    );
    assert!(lines[1].contains("walled.json:physicsDynamic[0]: warning: blocks a corridor"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("ok — \"walled\""));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn signal_prints_its_address_and_serves_the_ice_list() {
    use std::io::{Read, Write};
    use std::time::Duration;

    // The TURN secret comes from a file (the first line), never the command line.
    let dir = std::env::temp_dir().join(format!("vimp-turn-secret-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    let secret = dir.join("turn.secret");
    std::fs::write(&secret, "north-wind\n").expect("write the secret");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let flags = [
        "--stun-bind",
        "127.0.0.1:0",
        "--stun",
        "stun:stun.example.net:3478",
        "--turn",
        "turn:turn.example.net:3478",
        "--turn-secret-file",
    ]
    .map(std::ffi::OsStr::new);
    let flags: Vec<&std::ffi::OsStr> = flags.into_iter().chain([secret.as_os_str()]).collect();
    let (mut child, url, rx) = signal_child(&flags);
    let addr = url.trim_start_matches("ws://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(s, "GET /ice HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("write");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    // Its STUN address, printed once its responder is up (read before the process ends).
    let stun = rx.recv_timeout(Duration::from_secs(30)).expect("the STUN address is printed");
    // A member of a room asks with the key its socket joined by.
    let key = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    let (mut member, _) = tungstenite::connect(format!("{url}/K7MP2Q?key={key}")).expect("into the room");
    let _ = member.read().expect("its id");
    let ice = vimp_netcode::signal::fetch_ice_in(&url, "K7MP2Q", key, Duration::from_secs(10)).expect("the ICE list");
    child.kill().ok();
    child.wait().ok();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("stun:stun.example.net:3478"), "{answer}");
    // Its own STUN responder comes first, at the host this request named.
    let port = stun.rsplit(':').next().expect("UDP ADDR");
    assert!(answer.contains(&format!("stun:x:{port}")), "{answer}");
    // A stranger gets no TURN credential; the member gets one, once, minted for it in its room
    // (its password is checked against the scheme in the signalling server's own tests).
    assert!(!answer.contains("turn.example.net"), "{answer}");
    let turn: Vec<_> = ice.ice_servers.iter().filter(|s| s.urls == ["turn:turn.example.net:3478"]).collect();
    assert_eq!(turn.len(), 1, "{ice:?}");
    let user = turn[0].username.as_deref().expect("a user name");
    let (expiry, whose) = user.split_once(':').expect("EXPIRY:ROOM-PEER");
    assert!(expiry.parse::<u64>().is_ok() && whose.starts_with("K7MP2Q-"), "{user}");
    assert!(turn[0].credential.as_deref().is_some_and(|p| p.len() == 28), "{ice:?}");
}

/// `vimp signal` on a free loopback port with `args` after `signal --bind 127.0.0.1:0`: the
/// process, its `ws://` URL, and the lines it prints after the first, as they come (every line is
/// read until it ends: a closed pipe would kill it at its next print).
fn signal_child(args: &[&std::ffi::OsStr]) -> (std::process::Child, String, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, BufReader};
    let mut child = crate::vimp_command()
        .args(["signal", "--bind", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("vimp signal starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("the address is printed");
    let url = format!("ws://{}", line.split_whitespace().nth(4).expect("listening on ADDR"));
    (child, url, rx)
}

/// `vimp signal` keeps its identities in the database `--db` names, made on first start,
/// and serves the keys hosts check tokens against; a database it does not speak stops it
/// with the reason.
#[test]
fn signal_serves_identities_from_its_database() {
    use std::time::Duration;

    let dir = std::env::temp_dir().join(format!("vimp-e2e-signal-db-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = dir.join("rendezvous.db");
    let start = || {
        let flags = ["--no-stun", "--issuer", "rdv.test", "--db"].map(std::ffi::OsStr::new);
        let (child, url, rx) = signal_child(&[&flags[..], &[db.as_os_str()]].concat());
        let identities = rx.recv_timeout(Duration::from_secs(30)).expect("the identities line");
        (child, url, identities)
    };
    let (mut child, url, identities) = start();
    assert!(
        identities.starts_with("identities: 0 registered in") && identities.contains("rendezvous.db"),
        "{identities}"
    );
    let keys = |url: &str| {
        let (status, body) =
            vimp_netcode::signal::http_request(url, "GET", "/identity/keys", None, Duration::from_secs(10))
                .expect("GET");
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<serde_json::Value>(&body).expect("JSON")
    };
    let first = keys(&url);
    assert_eq!((first["issuer"].as_str(), first["jwks"]["keys"][0]["alg"].as_str()), (Some("rdv.test"), Some("EdDSA")));
    child.kill().ok();
    child.wait().ok();
    // Started again on the same file: the same signing key.
    let (mut child, url, _) = start();
    assert_eq!(keys(&url), first);
    child.kill().ok();
    child.wait().ok();

    let out = crate::vimp(&["signal", "--bind", "127.0.0.1:0", "--no-stun", "--db", "mysql://db.example/x"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("mysql://db.example/x") && err.contains("not a database"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `vimp signal` killed (SIGKILL) in a burst of round reports loses none it acknowledged, and
/// started again on the same file, the same reports sent again count once: every round is
/// recorded once and every player rated once per round.
#[test]
fn round_reports_acknowledged_before_a_sigkill_are_all_there_and_none_counts_twice() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;
    use vimp_netcode::identity::{Identity, obtain_token};
    use vimp_netcode::rounds::{RoundPlayer, RoundReport, RoundResults};
    use vimp_netcode::signal::http_request;

    let dir = std::env::temp_dir().join(format!("vimp-e2e-sigkill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = dir.join("rendezvous.db");
    let start = || {
        let flags = ["--no-stun", "--requests-per-second", "1000000", "--db"].map(std::ffi::OsStr::new);
        let (child, url, _lines) = signal_child(&[&flags[..], &[db.as_os_str()]].concat());
        (child, url)
    };
    let call = |url: &str, method: &str, path: &str, body: Option<String>| {
        http_request(url, method, path, body.as_deref(), Duration::from_secs(20)).expect("the rendezvous answers")
    };
    let (mut child, url) = start();
    let players: Vec<Identity> = (0..12u8).map(|i| Identity::from_seed([i + 1; 32])).collect();
    // Each registers its name and joins the room: a round lists only players who took a token
    // for it.
    for (i, p) in players.iter().enumerate() {
        obtain_token(&url, "K7MP2Q", p, &format!("k{i}")).expect("a name and a token");
    }
    // 40 rounds of three players each, every one of them reporting: 120 reports.
    let reports: Vec<RoundReport> = (0..40usize)
        .flat_map(|r| {
            let three: Vec<&Identity> = (0..3).map(|k| &players[(r + 4 * k) % players.len()]).collect();
            let results = RoundResults {
                id: format!("burst-{r}"),
                room: "K7MP2Q".into(),
                winner: 1,
                players: three
                    .iter()
                    .enumerate()
                    .map(|(k, p)| RoundPlayer {
                        key: Some(p.public_key().to_string()),
                        team: 1 + k as u8 % 2,
                        score: 5,
                    })
                    .collect(),
            };
            three.into_iter().map(move |p| RoundReport::sign(results.clone(), p)).collect::<Vec<_>>()
        })
        .collect();
    let reports = Arc::new(reports);
    let acknowledged = Arc::new(Mutex::new(Vec::new()));
    let next = Arc::new(AtomicUsize::new(0));
    let senders: Vec<_> = (0..4)
        .map(|_| {
            let (reports, acknowledged, next, url) = (reports.clone(), acknowledged.clone(), next.clone(), url.clone());
            std::thread::spawn(move || {
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(report) = reports.get(i) else { break };
                    let body = serde_json::to_string(report).expect("a report");
                    match http_request(&url, "POST", "/rounds", Some(&body), Duration::from_secs(20)) {
                        Ok((200, _)) => acknowledged.lock().expect("lock").push(i),
                        // The process is gone: what was not acknowledged may be lost.
                        _ => break,
                    }
                }
            })
        })
        .collect();
    // Killed mid-burst, once a good part was acknowledged.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while acknowledged.lock().expect("lock").len() < 40 {
        assert!(std::time::Instant::now() < deadline, "the burst did not get going");
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().expect("SIGKILL");
    child.wait().ok();
    for s in senders {
        s.join().expect("a sender");
    }
    let before_kill = acknowledged.lock().expect("lock").clone();
    println!("{} of {} reports acknowledged before the kill", before_kill.len(), reports.len());
    assert!(before_kill.len() < reports.len(), "the kill came mid-burst");

    // Started again on the same file; every report sent again.
    let (mut child, url) = start();
    for report in reports.iter() {
        let (status, text) = call(&url, "POST", "/rounds", Some(serde_json::to_string(report).expect("a report")));
        assert_eq!(status, 200, "{text}");
    }
    child.kill().ok();
    child.wait().ok();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let store = vimp_ranks::store::Store::open(&db.display().to_string()).await.expect("the database opens");
        for &i in &before_kill {
            let r = &reports[i];
            assert!(store.has_report(&r.results.id, &r.public_key).await.unwrap(), "acknowledged report {i} is there");
        }
        assert_eq!(store.rounds().await.unwrap(), (40, 120), "every round recorded once, every report kept once");
        for p in &players {
            let played = reports.iter().filter(|r| r.public_key == p.public_key().to_string()).count() as u64;
            let standing = store.standing(&p.public_key().to_string()).await.unwrap().expect("rated");
            assert_eq!(standing.rounds, played, "rated once per round");
        }
        store.close().await;
    });
    let _ = std::fs::remove_dir_all(&dir);
}

/// Beside a TURN server on this machine, `vimp signal` leaves the TURN server's port to it
/// (whichever starts first) and hands that server out for STUN; a STUN port another program
/// holds stops it at once with the reason and the flags to use.
#[test]
fn signal_leaves_a_local_turn_server_its_port_and_stops_when_the_stun_port_is_taken() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::Stdio;
    use std::time::Duration;

    // A port nobody holds: take one and let it go. Nothing binds it in between here.
    let port = std::net::UdpSocket::bind("127.0.0.1:0").expect("a port").local_addr().expect("addr").port();
    let stun_bind = format!("127.0.0.1:{port}");
    let turn = format!("turn:127.0.0.1:{port}");
    let mut child = crate::vimp_command()
        .args(["signal", "--bind", "127.0.0.1:0", "--stun-bind", &stun_bind, "--turn", &turn])
        .env("VIMP_TURN_SECRET", "s")
        .stdout(Stdio::piped())
        .spawn()
        .expect("vimp signal starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    while !lines.iter().any(|l: &String| l.contains("not answering")) {
        lines.push(rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("{lines:?}")));
    }
    // The TURN server's port is free for it: this server did not bind it.
    let coturn = std::net::UdpSocket::bind(&stun_bind);
    let addr = lines[0].split_whitespace().nth(4).expect("listening on ADDR").to_owned();
    let mut s = std::net::TcpStream::connect(&addr).expect("connect");
    write!(s, "GET /ice HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("write");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    child.kill().ok();
    child.wait().ok();
    assert!(coturn.is_ok(), "the STUN responder left UDP {port} free: {lines:?}");
    assert!(answer.contains(&format!("stun:127.0.0.1:{port}")), "the TURN server is handed out for STUN: {answer}");
    assert!(!lines.iter().any(|l| l.contains("answering binding requests")), "{lines:?}");

    // Now the port is held (by the stand-in for coturn): a responder asked to bind it stops.
    let out = crate::vimp_command()
        .args(["signal", "--bind", "127.0.0.1:0", "--stun-bind", &stun_bind])
        .output()
        .expect("vimp runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it does not run half configured: {err}");
    assert!(err.contains(&stun_bind) && err.contains("--no-stun") && err.contains("--stun-bind"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).is_empty(), "it never said it listens");
    drop(coturn);
}

#[test]
fn signal_refuses_a_turn_secret_on_the_command_line_or_beside_a_static_password() {
    let turn = ["signal", "--bind", "127.0.0.1:0", "--no-stun", "--no-db", "--turn", "turn:t.example.net:3478"];
    // On the command line, any user of the machine reads it: refused, saying where it goes.
    let out = crate::vimp_command().args(turn).args(["--turn-secret", "s"]).output().expect("vimp runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("--turn-secret-file") && err.contains("VIMP_TURN_SECRET"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).is_empty(), "it never said it listens");
    // A secret beside a static password: which is meant is unclear.
    let out = crate::vimp_command()
        .args(turn)
        .args(["--turn-pass", "p"])
        .env("VIMP_TURN_SECRET", "s")
        .output()
        .expect("vimp runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--turn-pass"), "{err}");
    // A secret file that is not there.
    let out = crate::vimp_command()
        .args(turn)
        .args(["--turn-secret-file", "/nonexistent/turn.secret"])
        .output()
        .expect("vimp runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("/nonexistent/turn.secret"), "{err}");
}

/// `vimp signal-bench` starts its own rendezvous, fills its rooms and relays their signals:
/// a short run gives every room and a relay time.
#[test]
fn signal_bench_fills_its_rooms_through_a_rendezvous_of_its_own() {
    let out = vimp(&["signal-bench", "--rooms", "20", "--spread-ms", "100", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "vimp signal-bench failed: {err}");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().expect("a line of figures");
    let figures: serde_json::Value = serde_json::from_str(line).expect("JSON figures");
    assert_eq!((figures["rooms"].as_u64(), figures["peers"].as_u64()), (Some(20), Some(40)), "{figures}");
    assert_eq!(figures["rooms_closed"], 0, "{figures}");
    assert!(figures["relay_p50_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{figures}");
    assert!(figures["server_cpu_s"].as_f64().is_some(), "{figures}");
}
