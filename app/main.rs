//! The `vimp` binary: parses the command line and runs the chosen mode.

use clap::Parser;

fn main() -> anyhow::Result<()> {
    let cli = vimp::cli::Cli::parse();
    std::process::exit(vimp::cli::run(cli)?)
}
