//! `vimp ranks-bench`: a load on a rendezvous's identities and top, measured from outside. It
//! starts `vimp signal` on a database (`--db`: a SQLite file, or a PostgreSQL URL) as a process
//! of its own, or loads the one at `--url`; registers `--identities` players (a challenge and a
//! signed registration each) and has each take a token for the room they play in (a round
//! lists only players who did), then plays `--rooms` rooms at once, each of `--players` of them
//! for `--rounds` rounds, every player sending its signed copy of each round's results. It
//! prints registrations, tokens and reports a second, the latency of each, and how many rounds
//! were recorded.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use vimp_netcode::identity::{Challenge, Identity, obtain_token};
use vimp_netcode::rounds::{RoundPlayer, RoundReport, RoundResults};
use vimp_netcode::signal::http_request;

use crate::signal_bench::Server;

/// The lobby code every room's rounds name (rounds are told apart by their ids).
const ROOM: &str = "K7MP2Q";

/// What `vimp ranks-bench` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct RanksBenchArgs {
    /// The database of the `vimp signal` it starts: a SQLite file (made anew: an existing one is
    /// refused) or `postgres://…` (an empty database).
    #[arg(long, value_name = "PATH|URL", conflicts_with = "url", required_unless_present = "url")]
    pub db: Option<String>,
    /// Load the rendezvous at this URL (`ws://HOST:PORT`) instead of starting one.
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Players to register.
    #[arg(long, default_value_t = 10_000)]
    pub identities: usize,
    /// Rooms playing at once.
    #[arg(long, default_value_t = 500)]
    pub rooms: usize,
    /// Players in a room (two teams).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(2..=64))]
    pub players: u8,
    /// Rounds each room plays.
    #[arg(long, default_value_t = 4)]
    pub rounds: usize,
    /// Requests in flight at once (each on a connection of its own).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub concurrency: u32,
    /// Print the figures as one line of JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `jobs` jobs on `concurrency` threads, each job's latency in ms into the result (an
/// error stops the run).
fn run_jobs(
    jobs: usize,
    concurrency: u32,
    job: impl Fn(usize) -> anyhow::Result<()> + Sync,
    what: &str,
) -> anyhow::Result<Vec<f64>> {
    let next = AtomicUsize::new(0);
    let latencies = Mutex::new(Vec::with_capacity(jobs));
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let started = Instant::now();
    let mut said = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..concurrency {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= jobs || failure.lock().is_ok_and(|f| f.is_some()) {
                        break;
                    }
                    let t = Instant::now();
                    match job(i) {
                        Ok(()) => latencies.lock().expect("lock").push(t.elapsed().as_secs_f64() * 1000.0),
                        Err(e) => {
                            *failure.lock().expect("lock") = Some(e);
                            break;
                        }
                    }
                }
            });
        }
        while next.load(Ordering::Relaxed) < jobs && failure.lock().is_ok_and(|f| f.is_none()) {
            std::thread::sleep(Duration::from_millis(100));
            if said.elapsed() >= Duration::from_secs(2) {
                eprintln!(
                    "  {what}: {} of {jobs} ({:.0} s)",
                    next.load(Ordering::Relaxed).min(jobs),
                    started.elapsed().as_secs_f64()
                );
                said = Instant::now();
            }
        }
    });
    if let Some(e) = failure.into_inner().expect("lock") {
        return Err(e);
    }
    Ok(latencies.into_inner().expect("lock"))
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted.get(((sorted.len().saturating_sub(1)) as f64 * q).round() as usize).copied().unwrap_or(0.0)
}

/// Runs the load and prints its figures.
pub fn run(args: &RanksBenchArgs) -> anyhow::Result<i32> {
    if let Some(db) = args.db.as_deref().filter(|d| !d.contains("://") && std::path::Path::new(d).exists()) {
        bail!("{db} exists: the load starts from an empty database (remove it, or name another)");
    }
    if args.identities < usize::from(args.players) {
        bail!("--identities must be at least --players ({})", args.players);
    }
    let server = match &args.db {
        Some(db) => Some(Server::start(&["--db", db])?),
        None => None,
    };
    let url = server.as_ref().map_or_else(|| args.url.clone().unwrap_or_default(), |s| s.url.clone());
    let timeout = Duration::from_secs(30);
    let call = |method: &str, path: &str, body: Option<String>| -> anyhow::Result<(u16, String)> {
        http_request(&url, method, path, body.as_deref(), timeout).with_context(|| format!("{method} {path}"))
    };
    eprintln!(
        "ranks-bench: {} identities, {} rooms of {} for {} rounds, at {url}",
        args.identities, args.rooms, args.players, args.rounds
    );
    let identities: Vec<Identity> = (0..args.identities)
        .map(|i| {
            let mut seed = [0u8; 32];
            seed[..8].copy_from_slice(&(i as u64).to_le_bytes());
            seed[8..16].copy_from_slice(b"ranksben");
            Identity::from_seed(seed)
        })
        .collect();
    let cpu_s = |s: &Server| s.cpu_s().unwrap_or(0.0);
    let cpu0 = server.as_ref().map_or(0.0, cpu_s);
    let started = Instant::now();
    let mut registration = run_jobs(
        identities.len(),
        args.concurrency,
        |i| {
            let (status, text) = call("POST", "/identity/challenge", None)?;
            anyhow::ensure!(status == 200, "a challenge: HTTP {status} {text}");
            let challenge: Challenge = serde_json::from_str(&text)?;
            let p = &identities[i];
            let nickname = format!("b{i}");
            let purpose = vimp_netcode::identity::Purpose::Register { nickname: &nickname };
            let body = serde_json::json!({
                "publicKey": p.public_key(), "nickname": nickname, "challenge": challenge.challenge,
                "signature": p.prove(&challenge.challenge, purpose),
            });
            let (status, text) = call("POST", "/identity/register", Some(body.to_string()))?;
            anyhow::ensure!(status == 201 || status == 409, "a registration: HTTP {status} {text}");
            Ok(())
        },
        "registered",
    )?;
    let registration_s = started.elapsed().as_secs_f64();

    // Every player joins its room: a token for it (a round lists only players who took one),
    // as a player's client asks (a challenge and a token).
    let started = Instant::now();
    let mut tokens = run_jobs(
        identities.len(),
        args.concurrency,
        |i| {
            obtain_token(&url, ROOM, &identities[i], &format!("b{i}"))
                .map_err(|why| anyhow::anyhow!("a token: {why}"))?;
            Ok(())
        },
        "joined",
    )?;
    let tokens_s = started.elapsed().as_secs_f64();

    // Every room's rounds, each player's report of each; rooms interleaved, as rooms that play
    // at once end their rounds at about the same time.
    let run_id = format!("{:x}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis());
    let players = usize::from(args.players);
    let reports: Vec<(usize, usize, usize)> = (0..args.rounds)
        .flat_map(|round| (0..args.rooms).flat_map(move |room| (0..players).map(move |p| (room, round, p))))
        .collect();
    let recorded = AtomicUsize::new(0);
    let cpu1 = server.as_ref().map_or(0.0, cpu_s);
    let started = Instant::now();
    let mut reporting = run_jobs(
        reports.len(),
        args.concurrency,
        |i| {
            let (room, round, p) = reports[i];
            let members: Vec<&Identity> =
                (0..players).map(|k| &identities[(room * players + k) % identities.len()]).collect();
            let results = RoundResults {
                id: format!("{run_id}-{room}-{round}"),
                room: ROOM.into(),
                winner: 1 + (round % 2) as u8,
                players: members
                    .iter()
                    .enumerate()
                    .map(|(k, m)| RoundPlayer {
                        key: Some(m.public_key().to_string()),
                        team: 1 + (k % 2) as u8,
                        score: ((room + k + round) % 7) as i64,
                    })
                    .collect(),
            };
            let report = RoundReport::sign(results, members[p]);
            let (status, text) = call("POST", "/rounds", Some(serde_json::to_string(&report)?))?;
            anyhow::ensure!(status == 200, "a report: HTTP {status} {text}");
            if text.contains("\"recordedNow\":true") {
                recorded.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        },
        "reported",
    )?;
    let reporting_s = started.elapsed().as_secs_f64();
    let cpu2 = server.as_ref().map_or(0.0, cpu_s);
    registration.sort_by(f64::total_cmp);
    tokens.sort_by(f64::total_cmp);
    reporting.sort_by(f64::total_cmp);
    let figures = serde_json::json!({
        "database": args.db.as_deref().map(|d| if d.starts_with("postgres") { "postgresql" } else { "sqlite" }),
        "identities": args.identities,
        "rooms": args.rooms,
        "players_per_room": players,
        "rounds_per_room": args.rounds,
        "concurrency": args.concurrency,
        "registrations_per_s": identities.len() as f64 / registration_s,
        "registration_ms_p50": percentile(&registration, 0.5),
        "registration_ms_p99": percentile(&registration, 0.99),
        "tokens_per_s": identities.len() as f64 / tokens_s,
        "token_ms_p99": percentile(&tokens, 0.99),
        "reports": reports.len(),
        "reports_per_s": reports.len() as f64 / reporting_s,
        "report_ms_p50": percentile(&reporting, 0.5),
        "report_ms_p99": percentile(&reporting, 0.99),
        "report_ms_max": reporting.last().copied().unwrap_or(0.0),
        "rounds_recorded": recorded.load(Ordering::Relaxed),
        "server_cpu_s_registering": server.as_ref().map(|_| cpu1 - cpu0),
        "server_cpu_s_reporting": server.as_ref().map(|_| cpu2 - cpu1),
    });
    if args.json {
        println!("{figures}");
    } else {
        println!(
            "{} identities registered in {registration_s:.1} s: {:.0} a second, p50 {:.1} ms, p99 {:.1} ms (a challenge and a registration each)",
            args.identities,
            figures["registrations_per_s"].as_f64().unwrap_or(0.0),
            figures["registration_ms_p50"].as_f64().unwrap_or(0.0),
            figures["registration_ms_p99"].as_f64().unwrap_or(0.0),
        );
        println!(
            "{} tokens for the room in {tokens_s:.1} s: {:.0} a second, p99 {:.1} ms (a challenge and a token each)",
            args.identities,
            figures["tokens_per_s"].as_f64().unwrap_or(0.0),
            figures["token_ms_p99"].as_f64().unwrap_or(0.0),
        );
        println!(
            "{} round reports from {} rooms at once in {reporting_s:.1} s: {:.0} a second, p50 {:.1} ms, p99 {:.1} ms; {} rounds recorded",
            reports.len(),
            args.rooms,
            figures["reports_per_s"].as_f64().unwrap_or(0.0),
            figures["report_ms_p50"].as_f64().unwrap_or(0.0),
            figures["report_ms_p99"].as_f64().unwrap_or(0.0),
            figures["rounds_recorded"],
        );
        if server.is_some() {
            println!("the server's CPU: {:.1} s registering, {:.1} s taking reports", cpu1 - cpu0, cpu2 - cpu1);
        }
    }
    Ok(0)
}
