//! The command-line contract: every subcommand, its flags and what it runs.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// vimp: fast 2D physics matches hosted from a player's own machine.
#[derive(Debug, Parser)]
#[command(name = "vimp", version, about, long_about = None)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a headless match of bots as fast as possible and print its figures.
    Sim(crate::sim_cmd::SimArgs),
    /// Host a match: prints the lobby code friends join with (headless for now).
    Host(crate::net_cmd::HostArgs),
    /// Join a match by lobby code or room URL (headless for now: drives bot inputs, prints figures).
    Join(crate::net_cmd::JoinArgs),
    /// Run the signalling server that introduces the peers of a lobby (room = lobby code).
    Signal(crate::signal_cmd::SignalArgs),
    /// Maps: validate map files.
    #[command(subcommand)]
    Map(MapCommand),
    /// Snapshot schemas: check a game's declared snapshot keys.
    #[command(subcommand)]
    Schema(SchemaCommand),
}

/// `vimp map …`
#[derive(Debug, Subcommand)]
pub enum MapCommand {
    /// Validate map files; every problem is printed as `file:field: reason`.
    Check {
        /// Map JSON files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// `vimp schema …`
#[derive(Debug, Subcommand)]
pub enum SchemaCommand {
    /// Validate snapshot schema files (the spec's JSON form) and print each key's wire layout.
    Check {
        /// Schema files: `{ "keys": { … } }` or the bare key map.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the layouts as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    match cli.command {
        Command::Sim(args) => crate::sim_cmd::run(&args),
        Command::Signal(args) => crate::signal_cmd::run(&args),
        Command::Host(args) => crate::net_cmd::host(&args),
        Command::Join(args) => crate::net_cmd::join(&args),
        Command::Map(MapCommand::Check { files }) => crate::map_cmd::check(&files),
        Command::Schema(SchemaCommand::Check { files, json }) => crate::schema_cmd::check(&files, json),
    }
}
