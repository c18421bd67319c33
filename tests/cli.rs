//! End-to-end tests of the `vimp` binary: the command line a user types.

use std::path::PathBuf;
use std::process::{Command, Output};

fn vimp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vimp")).args(args).output().expect("the vimp binary runs")
}

fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}

#[test]
fn help_lists_the_subcommands() {
    let out = vimp(&["--help"]);
    assert!(out.status.success(), "vimp --help exits 0");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("schema"), "help lists `schema`:\n{text}");
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
    // c1: u8 index + tail flag + 3 f32 = 14 bytes at rest, + 3 f32 = 26 with the velocity tail.
    let c1 = &report[0]["keys"][4];
    assert_eq!((c1["rowBytes"].as_u64(), c1["rowBytesWithTail"].as_u64()), (Some(14), Some(26)));
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
