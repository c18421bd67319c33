//! The command-line contract: every subcommand, its flags and what it runs.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use vimp_host::engine::game::BotSkill;

/// vimp: fast 2D physics matches hosted from a player's own machine.
#[derive(Debug, Parser)]
#[command(name = "vimp", version = crate::logs::VERSION, about, long_about = None)]
pub struct Cli {
    /// What to run (nothing: the window with the main menu).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// How much the log file says (error, warn, info, debug or trace); it is in the data
    /// folder's `logs`, with any crash report.
    #[arg(long, global = true, value_name = "LEVEL", default_value = "info", value_parser = crate::logs::parse_level)]
    pub log_level: tracing::Level,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play a local match against bots at once, in the window (the map reloads on save).
    Play(PlayArgs),
    /// Run a headless match of bots as fast as possible and print its figures.
    Sim(crate::sim_cmd::SimArgs),
    /// Host a match friends join by lobby code (in the window, or `--headless`).
    Host(crate::net_cmd::HostArgs),
    /// Join a match by lobby code or room URL (in the window, or `--headless`: drives bot inputs, prints figures).
    Join(crate::net_cmd::JoinArgs),
    /// Run the signalling server that introduces the peers of a lobby (room = lobby code).
    Signal(crate::signal_cmd::SignalArgs),
    /// Load a rendezvous with rooms of peers over real websockets and print what it spent.
    SignalBench(crate::signal_bench::SignalBenchArgs),
    /// Load a rendezvous's identities and top: register players, report rooms' rounds, print the rates.
    RanksBench(crate::ranks_bench::RanksBenchArgs),
    /// Maps: validate map files (and warn of places a tank cannot reach).
    #[command(subcommand)]
    Map(MapCommand),
    /// Snapshot schemas: check a game's declared snapshot keys.
    #[command(subcommand)]
    Schema(SchemaCommand),
}

/// What `vimp play` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct PlayArgs {
    /// The map file (watched: saving it restarts the round on it).
    #[arg(long, default_value = "maps/default.json")]
    pub map: PathBuf,
    /// Bots in the match.
    #[arg(long, default_value_t = 7)]
    pub bots: u8,
    /// How good the bots are: easy, normal or hard.
    #[arg(long, default_value = "normal", value_parser = crate::setup::bot_skill)]
    pub bot_skill: BotSkill,
    /// Start with the navigation overlay (F4) on: the nav grid, where a tank fits, each bot's route.
    #[arg(long)]
    pub nav_overlay: bool,
    /// Render frames and save a picture.
    #[command(flatten)]
    pub capture: crate::setup::CaptureArgs,
}

/// `vimp map …`
#[derive(Debug, Subcommand)]
pub enum MapCommand {
    /// Validate map files; every problem is printed as `file:field: reason`, and what a tank could
    /// not do there as `file:field: warning: reason` (warnings keep the exit code 0).
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

/// Without a window (whose Bevy log plugin does the same), `RUST_LOG` turns on log lines on
/// stderr, e.g. `RUST_LOG=rtc_ice=debug vimp join … --headless` for how ICE goes.
fn headless_log() {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    // On stderr what RUST_LOG asks for (nothing without it); the log file at `--log-level`.
    let stderr = tracing_subscriber::EnvFilter::try_from_env("RUST_LOG").ok().map(|filter| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .with_timer(tracing_subscriber::fmt::time::uptime())
            .with_filter(filter)
    });
    // The WebRTC stack logs through `log`; its records become tracing events.
    let _ = tracing_log::LogTracer::init();
    let subscriber = tracing_subscriber::registry().with(stderr).with(crate::logs::file_layer());
    let _ = tracing::subscriber::set_global_default(subscriber);
}

/// Runs a parsed command line; returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<i32> {
    use crate::window::{MatchKind, WindowOptions, run as window};
    crate::logs::init(cli.log_level);
    // The subcommand, not its flags: a password or a secret stays out of the log.
    let what = std::env::args().nth(1).unwrap_or_default();
    let Some(command) = cli.command else {
        return window(WindowOptions { start: None, frames: None, screenshot: None, nav_overlay: false });
    };
    let windowed = match &command {
        Command::Play(_) => true,
        Command::Host(args) => !args.headless,
        Command::Join(args) => !args.headless,
        _ => false,
    };
    if !windowed {
        headless_log();
        tracing::info!("vimp {} started: {what}", crate::logs::VERSION);
    }
    match command {
        Command::Play(args) => {
            // No match can start on a map the game refuses: said, and a failing exit, before a
            // window opens on the menu.
            crate::map_cmd::load_checked(&args.map, &crate::GAME)?;
            let start = Some(MatchKind::Local { map: args.map, bots: args.bots, skill: args.bot_skill });
            window(WindowOptions { nav_overlay: args.nav_overlay, ..WindowOptions::captured(start, args.capture) })
        }
        Command::Sim(args) => crate::sim_cmd::run(&args, &crate::GAME),
        Command::Signal(args) => crate::signal_cmd::run(&args),
        Command::SignalBench(args) => crate::signal_bench::run(&args),
        Command::RanksBench(args) => crate::ranks_bench::run(&args),
        Command::Host(args) if args.headless => {
            anyhow::ensure!(!args.capture.is_set(), "--frames and --screenshot need the window: drop --headless");
            crate::net_cmd::host(&args, &crate::GAME)
        }
        Command::Host(args) => {
            anyhow::ensure!(
                args.seconds.is_none() && !args.json,
                "--seconds and --json are for --headless: the window hosts until its player leaves"
            );
            let extras = crate::window::HostExtras {
                seed: args.seed,
                round_seconds: args.round_seconds,
                max_players: Some(args.max_players),
                vote_maps: args.vote_maps,
                bind: Some(args.bind),
                ice: args.ice,
            };
            let start = Some(MatchKind::Host {
                map: args.map,
                bots: args.bots,
                skill: args.bot_skill,
                password: args.password,
                code: args.code,
                signal: args.signal,
                extras,
            });
            window(WindowOptions::captured(start, args.capture))
        }
        Command::Join(args) if args.headless => {
            anyhow::ensure!(!args.capture.is_set(), "--frames and --screenshot need the window: drop --headless");
            crate::net_cmd::join(&args, &crate::GAME)
        }
        Command::Join(args) => {
            let start = Some(MatchKind::Join {
                target: args.target,
                password: args.password,
                signal: Some(args.signal),
                spectate: args.spectate,
                nickname: args.name,
                host_timeout_ms: Some(args.host_timeout),
                extras: crate::window::JoinExtras {
                    identity: args.identity,
                    unverified: args.unverified,
                    ice: args.ice,
                },
            });
            window(WindowOptions::captured(start, args.capture))
        }
        Command::Map(MapCommand::Check { files }) => crate::map_cmd::check(&files, &crate::GAME),
        Command::Schema(SchemaCommand::Check { files, json }) => crate::schema_cmd::check(&files, json),
    }
}
