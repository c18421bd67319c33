//! End-to-end tests of the `vimp` package: the real binary, as a user runs it.

mod cli;
mod docs;
mod lab;
mod local;
mod takeover;
mod webrtc;

use std::path::PathBuf;
use std::process::{Command, Output};

/// The `vimp` binary, keeping what it stores (a rendezvous's database) in a folder of this
/// test process's, not in the user's data folder.
pub(crate) fn vimp_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_vimp"));
    command.env("VIMP_DATA_DIR", data_dir());
    command
}

/// This test process's data folder: new to it (a process id comes back, and a folder an
/// earlier run left would hand this one its names and rounds), and made after the folders of
/// runs more than a day old are swept away.
fn data_dir() -> &'static std::path::Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let temp = std::env::temp_dir();
        let stale = |entry: &std::fs::DirEntry| {
            entry.file_name().to_string_lossy().starts_with("vimp-e2e-data-")
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|at| at.elapsed().is_ok_and(|age| age > std::time::Duration::from_secs(24 * 3600)))
        };
        for entry in std::fs::read_dir(&temp).into_iter().flatten().flatten().filter(stale) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        temp.join(format!("vimp-e2e-data-{}-{}", std::process::id(), since.as_nanos()))
    })
}

/// Runs `vimp` with `args` to completion.
pub(crate) fn vimp(args: &[&str]) -> Output {
    vimp_command().args(args).output().expect("the vimp binary runs")
}

/// Runs the named test of this binary again through `wrapper`, a command that ends by
/// executing the one it is given (the test binary and its arguments), with `env` set; asserts
/// that the test ran there and passed, and prints what it printed.
pub(crate) fn rerun_through(mut wrapper: Command, test: &str, env: &str, place: &str) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = wrapper
        .arg(exe)
        .args(["--exact", test, "--include-ignored", "--nocapture", "--test-threads", "1"])
        .env(env, "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run the test inside {place}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the test inside {place} failed:\n{text}");
    assert!(text.contains("1 passed"), "the test did run inside {place}:\n{text}");
    println!("{text}");
}

/// A path in the repository.
pub(crate) fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}
