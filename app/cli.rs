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
    /// Snapshot schemas: check a game's declared snapshot keys.
    #[command(subcommand)]
    Schema(SchemaCommand),
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
        Command::Schema(SchemaCommand::Check { files, json }) => crate::schema_cmd::check(&files, json),
    }
}
