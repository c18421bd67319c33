//! End-to-end tests of the `vimp` package: the real binary, as a user runs it.

mod cli;
mod lab;
mod local;
mod takeover;
mod webrtc;

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `vimp` with `args` to completion.
pub(crate) fn vimp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vimp")).args(args).output().expect("the vimp binary runs")
}

/// A path in the repository.
pub(crate) fn repo(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
}
