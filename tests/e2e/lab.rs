//! Real matches across the home-network lab (`scripts/lab.sh`): players in homes behind NAT
//! routers with a home firewall, the rendezvous (`vimp signal` beside coturn) on a public
//! segment, access lines through the TUN link conditioner, all in a private namespace tree.
//!
//! The lab needs root, iptables and coturn, so these tests are ignored by a plain
//! `cargo test`; `.ci/run` installs what they need and runs them:
//! `cargo build -p vimp-lab && cargo test --test e2e lab:: -- --ignored --test-threads 1`.
//! Each test re-runs itself inside a lab of its own and starts its processes with
//! `ip netns exec HOME`.

use std::process::Command;
use std::time::Duration;

use crate::webrtc::{ErrLog, Proc, host_report, report};
use crate::{repo, rerun_through};

/// Runs the named test of this binary again inside a lab built with `lab` (`scripts/lab.sh`
/// options); true when this call is already inside (then the caller runs the test's body).
fn in_lab(test: &str, lab: &[&str]) -> bool {
    if std::env::var_os(IN_LAB).is_some() {
        return true;
    }
    let mut script = Command::new(repo("scripts/lab.sh"));
    script.arg("--vimp").arg(env!("CARGO_BIN_EXE_vimp")).args(lab).arg("--");
    rerun_through(script, test, IN_LAB, "its lab");
    false
}

/// Set for the test binary run inside a lab.
const IN_LAB: &str = "VIMP_IN_LAB";

/// The lab's rendezvous.
fn signal() -> String {
    std::env::var("LAB_SIGNAL").expect("inside the lab")
}

/// A headless host with 2 bots on the small map in `home`, lobby `K7M-P2Q`, once it is in.
fn host_in(home: &str, extra: &[&str]) -> Proc {
    let signal = signal();
    let mut args = vec!["host", "--headless", "--signal", &signal, "--code", "K7M-P2Q", "--bots", "2"];
    args.extend(["--map", "maps/test-small.json"]);
    args.extend(extra);
    let host = Proc::spawn_in(home, &args);
    host.line_with("lobby code", Duration::from_secs(30));
    host
}

/// A headless client in `home` joining `K7M-P2Q` for `seconds`, printing its JSON report.
fn join_from(home: &str, name: &str, seconds: &str, extra: &[&str]) -> Proc {
    let signal = signal();
    let mut args = vec!["join", "k7mp2q", "--signal", &signal, "--headless", "--name", name, "--seconds", seconds];
    args.push("--json");
    args.extend(extra);
    Proc::spawn_in(home, &args)
}

/// One friend joins the host, both at home behind a NAT, and plays; their link goes `path`,
/// by both their accounts. Returns the friend's report.
fn a_friend_plays(host_home: &str, friend_home: &str, path: &str) -> serde_json::Value {
    let host = host_in(host_home, &["--seconds", "16", "--json"]);
    let (out, status) = join_from(friend_home, "ann", "10", &[]).finish(Duration::from_secs(60));
    let r = report(&out);
    println!("ann: {r}");
    assert!(status.success(), "{r}");
    assert_eq!(r["joined"], true, "{r}");
    let per_s = r["snapshots_per_s"].as_f64().expect("snapshots_per_s");
    assert!(per_s >= 25.0, "{per_s} snapshots a second: {r}");
    assert_eq!(r["host_path"], path, "{r}");
    let (out, _) = host.finish(Duration::from_secs(60));
    let (h, _) = host_report(&out);
    println!("host: {h}");
    let links = h["links"].as_array().expect("the host's links");
    assert!(links.iter().any(|l| l["nickname"] == "ann" && l["path"] == path), "{h}");
    r
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, coturn): .ci/run runs it"]
fn a_friend_joins_through_two_home_nats() {
    if !in_lab("lab::a_friend_joins_through_two_home_nats", &["--home", "a:cone", "--home", "b:cone"]) {
        return;
    }
    // A hole punched through both NATs, to the host router's public address.
    a_friend_plays("a", "b", "reflexive");
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, coturn): .ci/run runs it"]
fn a_friend_joins_through_two_symmetric_nats_by_turn() {
    if !in_lab(
        "lab::a_friend_joins_through_two_symmetric_nats_by_turn",
        &["--home", "a:symmetric", "--home", "b:symmetric"],
    ) {
        return;
    }
    // A new port for every destination on both sides: only the relay gets through.
    a_friend_plays("a", "b", "relayed");
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, coturn): .ci/run runs it"]
fn a_join_with_no_path_to_the_host_says_a_relay_is_needed() {
    if !in_lab(
        "lab::a_join_with_no_path_to_the_host_says_a_relay_is_needed",
        &["--home", "a:symmetric", "--home", "b:symmetric", "--no-turn"],
    ) {
        return;
    }
    let _host = host_in("a", &["--seconds", "90"]);
    let (out, status) = join_from("b", "ann", "60", &["--join-timeout", "5"]).finish(Duration::from_secs(40));
    let r = report(&out);
    println!("ann: {r}");
    assert_eq!((r["joined"].clone(), status.code()), (serde_json::json!(false), Some(5)), "{r}");
    let reason = r["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("room K7M-P2Q has a host") && reason.contains("TURN relay is needed"), "{r}");
}

/// A TURN relay from `home` with `user`/`pass` towards `peer`: coturn's own test client
/// (`turnutils_uclient`) allocates a relay and binds a channel to the peer; its output.
fn relay_to(home: &str, user: &str, pass: &str, peer: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", home, "timeout", "20", "turnutils_uclient", "-u", user, "-w", pass])
        .args(["-e", peer, "-r", "3480", "-n", "1", "-m", "1", "-c", "45.0.113.10"])
        .output()
        .expect("turnutils_uclient runs");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, coturn): .ci/run runs it"]
fn the_relay_is_a_room_member_s_and_reaches_no_private_or_metadata_address() {
    if !in_lab("lab::the_relay_is_a_room_member_s_and_reaches_no_private_or_metadata_address", &["--home", "a:cone"]) {
        return;
    }
    let server = signal();
    let turn = |ice: &vimp_netcode::signal::IceConfig| ice.ice_servers.iter().find(|s| s.username.is_some()).cloned();
    // A stranger in no room gets no TURN credential.
    let stranger = vimp_netcode::signal::fetch_ice(&server, Duration::from_secs(10)).expect("the ICE list");
    assert_eq!(turn(&stranger), None, "{stranger:?}");
    // A member of a room does: its socket in the room under its key, it asks with that key.
    let key = "5e1f0c9a8b7d42e8a6c1f0b9d2e4a7c3";
    let (mut socket, _) = tungstenite::connect(format!("{server}/RELAY1?key={key}")).expect("into the room");
    let assigned = socket.read().expect("its id");
    assert!(assigned.to_string().contains("IdAssigned"), "{assigned}");
    let ice = vimp_netcode::signal::fetch_ice_in(&server, "RELAY1", key, Duration::from_secs(10)).expect("the list");
    let minted = turn(&ice).unwrap_or_else(|| panic!("no credential for a member: {ice:?}"));
    let (user, pass) = (minted.username.expect("a user"), minted.credential.expect("a password"));
    assert!(user.contains(":RELAY1-"), "bound to its room: {user}");
    // With it, a relay reaches a public address (home a's router)...
    let public = relay_to("a", &user, &pass, "45.0.113.21");
    assert!(!public.contains("403"), "{public}");
    assert!(public.contains("tot_send_msgs=1"), "{public}");
    // ...and none of the cloud's metadata service, the server's own networks or loopback.
    for peer in ["169.254.169.254", "10.0.0.5", "192.168.1.1", "100.64.0.7", "127.0.0.1"] {
        let refused = relay_to("a", &user, &pass, peer);
        assert!(refused.contains("403 (Forbidden IP)"), "{peer}: {refused}");
    }
    // A credential of someone's making (the secret unknown) allocates nothing.
    let forged = relay_to("a", &user, "bm90IHRoZSBwYXNzd29yZA==", "45.0.113.21");
    assert!(!forged.contains("tot_send_msgs=1"), "{forged}");
    let _ = socket.close(None);
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, coturn): .ci/run runs it"]
fn a_join_over_a_slow_lossy_line_plays() {
    // Each line holds a packet 25 ± 5 ms and loses 1 % each way: between the homes that is a
    // round trip of about 100 ± 20 ms, and 2 % of the packets lost in each direction.
    if !in_lab(
        "lab::a_join_over_a_slow_lossy_line_plays",
        &["--home", "a:cone", "--home", "b:cone", "--line", "a:25:5:1", "--line", "b:25:5:1"],
    ) {
        return;
    }
    let host = host_in("a", &["--seconds", "90"]);
    // 20 s: a lost handshake packet costs a DTLS or SCTP retransmission (1 s, then doubling),
    // and the host measures the round trip with a ping every 3 s after the welcome.
    let (out, status, errs) = join_from("b", "ann", "20", &[]).finish_with_errs(Duration::from_secs(60));
    let r = report(&out);
    println!("ann: {r}");
    if r["joined"] != true {
        println!("ann's stderr:\n{}\nthe host's stderr:\n{}", errs.join("\n"), host.err_lines().join("\n"));
    }
    assert!(status.success(), "{r}");
    assert_eq!(r["joined"], true, "{r}");
    let per_s = r["snapshots_per_s"].as_f64().expect("snapshots_per_s");
    // Snapshots are unreliable: some are lost on the way, the rest keep coming.
    assert!(per_s >= 20.0, "{per_s} snapshots a second: {r}");
    let rtt = r["rtt_ms_p50"].as_f64().expect("an RTT was measured");
    assert!((70.0..300.0).contains(&rtt), "the line's round trip shows: {rtt} ms: {r}");
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, coturn): .ci/run runs it"]
fn a_host_on_an_8_mbit_uplink_feeds_four_friends() {
    if !in_lab(
        "lab::a_host_on_an_8_mbit_uplink_feeds_four_friends",
        &[
            "--home", "a:cone", "--home", "b:cone", "--home", "c:cone", "--home", "d:cone", "--home", "e:cone",
            "--uplink", "a:8mbit",
        ],
    ) {
        return;
    }
    let host = host_in("a", &["--seconds", "40", "--json"]);
    let friends: Vec<Proc> = ["b", "c", "d", "e"].iter().map(|home| join_from(home, home, "16", &[])).collect();
    for (home, friend) in ["b", "c", "d", "e"].iter().zip(friends) {
        let (out, status) = friend.finish(Duration::from_secs(90));
        let r = report(&out);
        println!("{home}: {r}");
        assert!(status.success(), "{r}");
        assert_eq!(r["joined"], true, "{r}");
        let per_s = r["snapshots_per_s"].as_f64().expect("snapshots_per_s");
        assert!(per_s >= 28.0, "{home}: {per_s} snapshots a second through the capped uplink: {r}");
    }
    let (out, _) = host.finish(Duration::from_secs(60));
    let (r, _) = host_report(&out);
    println!("host: {r}");
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, coturn): .ci/run runs it"]
fn the_match_goes_on_in_another_home_when_its_host_is_killed() {
    if !in_lab(
        "lab::the_match_goes_on_in_another_home_when_its_host_is_killed",
        &["--home", "a:cone", "--home", "b:cone", "--home", "c:symmetric"],
    ) {
        return;
    }
    let mut host = host_in("a", &["--seconds", "120"]);
    // Bob is behind a symmetric NAT: his links to the host and to Ann go through the relay.
    let (ann, bob) = (join_from("b", "ann", "40", &[]), join_from("c", "bob", "48", &[]));
    let mut log = ErrLog::default();
    log.wait_each(&[&ann, &bob], "linked to 2 peer(s)", Duration::from_secs(40));
    log.wait_each(&[&ann, &bob], "shadowing the host", Duration::from_secs(20));
    host.child.kill().expect("SIGKILL the host");
    let _ = host.child.wait();
    log.wait(&[&ann, &bob], "took the match over", Duration::from_secs(10));
    log.wait_each(&[&ann, &bob], "the host changed", Duration::from_secs(10));
    assert_eq!(log.count("took the match over"), 1, "one successor took over:\n{}", log.text());
    let (out_a, status_a) = ann.finish(Duration::from_secs(60));
    let (out_b, status_b) = bob.finish(Duration::from_secs(60));
    let (ra, rb) = (report(&out_a), report(&out_b));
    println!("ann: {ra}\nbob: {rb}\nstderr:\n{}", log.text());
    assert!(status_a.success() && status_b.success(), "both leave cleanly");
    for r in [&ra, &rb] {
        assert!(r["migrations"].as_u64().is_some_and(|n| n >= 1), "the host changed: {r}");
        assert!(r["snapshots_after_host_change"].as_u64().is_some_and(|n| n > 100), "the match goes on: {r}");
    }
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, coturn): .ci/run runs it"]
fn at_the_average_profile_a_join_plays_and_the_match_survives_its_host_s_line_cut() {
    // The average profile of scripts/lab-profiles.sh on every home: about 100 ms between
    // homes, ~2 % lost each way.
    if !in_lab(
        "lab::at_the_average_profile_a_join_plays_and_the_match_survives_its_host_s_line_cut",
        &[
            "--home", "a:cone", "--home", "b:cone", "--home", "c:cone", "--line", "a:25:8:1", "--line", "b:25:8:1",
            "--line", "c:25:8:1",
        ],
    ) {
        return;
    }
    let host = host_in("a", &["--seconds", "120"]);
    let (ann, bob) = (join_from("b", "ann", "30", &[]), join_from("c", "bob", "30", &[]));
    let mut log = ErrLog::default();
    log.wait_each(&[&ann, &bob], "linked to 2 peer(s)", Duration::from_secs(40));
    log.wait_each(&[&ann, &bob], "shadowing the host", Duration::from_secs(20));
    // The host's home line goes dead: its router drops everything, its process lives on.
    let cut = |op: &str| {
        for chain in ["FORWARD", "INPUT"] {
            let mut rule = vec!["netns", "exec", "a-router", "iptables", op, chain];
            rule.extend(if op == "-I" { &["1", "-j", "DROP"][..] } else { &["1"][..] });
            let status = Command::new("ip").args(&rule).status().expect("ip runs");
            assert!(status.success(), "iptables {op} {chain}");
        }
    };
    cut("-I");
    log.wait(&[&ann, &bob], "took the match over", Duration::from_secs(10));
    log.wait_each(&[&ann, &bob], "the host changed", Duration::from_secs(10));
    let (out_a, status_a) = ann.finish(Duration::from_secs(60));
    let (out_b, status_b) = bob.finish(Duration::from_secs(60));
    cut("-D");
    let (out_h, _) = host.finish(Duration::from_secs(120));
    let (ra, rb) = (report(&out_a), report(&out_b));
    println!("ann: {ra}\nbob: {rb}\nstderr:\n{}\nhost:\n{out_h}", log.text());
    assert!(status_a.success() && status_b.success(), "both leave cleanly");
    assert_eq!(log.count("took the match over"), 1, "one successor took over:\n{}", log.text());
    for r in [&ra, &rb] {
        assert!(r["join_ms"].as_f64().is_some(), "{r}");
        assert!(r["snapshots_after_host_change"].as_u64().is_some_and(|n| n > 100), "the match goes on: {r}");
        assert!(r["freeze_ms"].as_f64().is_some(), "{r}");
    }
}

/// A headless host in `home` that serves its room itself, as a player who presses Host gets it
/// (no `--signal`: its rendezvous in its own process, its ports opened on its home router), with
/// 2 bots on the small map, lobby `K7M-P2Q`, once it prints the invite for other homes: the
/// room's URL at its router's public address.
fn default_host_in(home: &str, extra: &[&str]) -> (Proc, String) {
    let mut args = vec!["host", "--headless", "--code", "K7M-P2Q", "--bots", "2", "--map", "maps/test-small.json"];
    args.extend(extra);
    let host = Proc::spawn_in(home, &args);
    let invite = invite_at(&host, home);
    (host, invite)
}

/// The invite `proc` prints for the room it serves in `home`: the room's URL at the home
/// router's public address (`LAB_PUBLIC_home`).
fn invite_at(proc: &Proc, home: &str) -> String {
    let public = std::env::var(format!("LAB_PUBLIC_{home}")).expect("inside the lab");
    let line = proc.line_with(&format!("friends join with: vimp join ws://{public}:"), Duration::from_secs(30));
    let invite = line.rsplit_once("vimp join ").map(|(_, url)| url.trim().to_owned()).expect("an invite");
    assert!(invite.ends_with("/K7MP2Q"), "{invite}");
    invite
}

/// A headless player in `home` joining by `invite` alone for `seconds`, printing its JSON report.
fn join_invite_from(home: &str, invite: &str, name: &str, seconds: &str) -> Proc {
    Proc::spawn_in(home, &["join", invite, "--headless", "--name", name, "--seconds", seconds, "--json"])
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, miniupnpd): .ci/run runs it"]
fn friends_behind_cone_and_strict_nats_join_a_default_host_by_its_invite() {
    if !in_lab(
        "lab::friends_behind_cone_and_strict_nats_join_a_default_host_by_its_invite",
        &["--no-signal", "--home", "a:upnp", "--home", "b:cone", "--home", "c:symmetric"],
    ) {
        return;
    }
    // No rendezvous on the internet, no TURN: the host's router forwards its ports, and friends
    // have nothing but the invite.
    let (host, invite) = default_host_in("a", &["--seconds", "60"]);
    let (ann, bob) = (join_invite_from("b", &invite, "ann", "10"), join_invite_from("c", &invite, "bob", "10"));
    for (name, friend) in [("ann (cone NAT)", ann), ("bob (symmetric NAT)", bob)] {
        let (out, status, errs) = friend.finish_with_errs(Duration::from_secs(90));
        let r = report(&out);
        println!("{name}: {r}");
        if r["joined"] != true {
            println!("{name}'s stderr:\n{}\nthe host's:\n{}", errs.join("\n"), host.err_lines().join("\n"));
        }
        assert!(status.success(), "{r}");
        assert_eq!(r["joined"], true, "{name} joins by the invite: {r}");
        assert!(r["snapshots_per_s"].as_f64().is_some_and(|s| s >= 25.0), "{r}");
        assert_ne!(r["host_path"], "relayed", "no relay in the default setup: {r}");
    }
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, miniupnpd): .ci/run runs it"]
fn a_default_match_of_two_outlives_its_host_and_friends_join_the_successor() {
    if !in_lab(
        "lab::a_default_match_of_two_outlives_its_host_and_friends_join_the_successor",
        &["--no-signal", "--home", "a:upnp", "--home", "b:upnp", "--home", "c:cone"],
    ) {
        return;
    }
    let (mut host, invite) = default_host_in("a", &["--seconds", "120"]);
    let ann = join_invite_from("b", &invite, "ann", "40");
    let mut log = ErrLog::default();
    log.wait(&[&ann], "shadowing the host", Duration::from_secs(40));
    // The host dies, and the room's rendezvous with it. Ann, alone with it, asks the room's
    // rendezvous: the host's router forwards the question to a machine where nothing listens.
    host.child.kill().expect("SIGKILL the host");
    let _ = host.child.wait();
    log.wait(&[&ann], "took the match over", Duration::from_secs(10));
    // Ann's process serves the room now, opened on her own router: Carol joins her by the new
    // invite (on stderr: her stdout is the report).
    let public = std::env::var("LAB_PUBLIC_b").expect("inside the lab");
    let (_, line) =
        log.wait_line(&[&ann], &format!("friends join with: vimp join ws://{public}:"), Duration::from_secs(30));
    let new_invite = line.rsplit_once("vimp join ").map(|(_, url)| url.trim().to_owned()).expect("an invite");
    let (out, status, errs) =
        join_invite_from("c", &new_invite, "carol", "8").finish_with_errs(Duration::from_secs(90));
    let rc = report(&out);
    println!("carol: {rc}\n{}", errs.join("\n"));
    assert!(status.success() && rc["joined"] == true, "a friend joins the successor by its invite: {rc}");
    let (out, status, rest) = ann.finish_with_errs(Duration::from_secs(90));
    let ra = report(&out);
    println!("ann: {ra}\n{}\n{}", log.text(), rest.join("\n"));
    assert!(status.success(), "{ra}");
    assert_eq!(ra["migrations"], 1, "{ra}");
    assert!(ra["snapshots_after_host_change"].as_u64().is_some_and(|n| n > 100), "the match goes on: {ra}");
}

#[test]
#[ignore = "needs the home-network lab (root, iptables, miniupnpd): .ci/run runs it"]
fn at_the_average_profile_a_default_match_of_two_survives_its_host_s_line_cut() {
    if !in_lab(
        "lab::at_the_average_profile_a_default_match_of_two_survives_its_host_s_line_cut",
        &["--no-signal", "--home", "a:upnp", "--home", "b:upnp", "--line", "a:25:8:1", "--line", "b:25:8:1"],
    ) {
        return;
    }
    let (host, invite) = default_host_in("a", &["--seconds", "120"]);
    let ann = join_invite_from("b", &invite, "ann", "30");
    let mut log = ErrLog::default();
    log.wait(&[&ann], "shadowing the host", Duration::from_secs(40));
    // The host's home line goes dead (its router drops everything; a upnp router's rules are
    // iptables-legacy's): nothing answers for it, not even its rendezvous.
    let cut = |op: &str| {
        for chain in ["FORWARD", "INPUT"] {
            let mut rule = vec!["netns", "exec", "a-router", "iptables-legacy", op, chain];
            rule.extend(if op == "-I" { &["1", "-j", "DROP"][..] } else { &["1"][..] });
            let status = Command::new("ip").args(&rule).status().expect("ip runs");
            assert!(status.success(), "iptables-legacy {op} {chain}");
        }
    };
    cut("-I");
    log.wait(&[&ann], "took the match over", Duration::from_secs(15));
    let (out, status, rest) = ann.finish_with_errs(Duration::from_secs(90));
    cut("-D");
    drop(host);
    let ra = report(&out);
    println!("ann: {ra}\n{}\n{}", log.text(), rest.join("\n"));
    assert!(status.success(), "{ra}");
    assert!(ra["snapshots_after_host_change"].as_u64().is_some_and(|n| n > 100), "the match goes on: {ra}");
    assert!(ra["freeze_ms"].as_f64().is_some(), "{ra}");
}
