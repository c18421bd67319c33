//! `vimp sim`: a headless match of bots run as fast as the machine goes, with figures.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use serde_json::json;
use vimp_host::engine::game::{BotSkill, Game};
use vimp_host::engine::snapshot::{
    DeltaStats, DeltaViewers, FrameReceivers, SnapshotBudget, SnapshotStats, ViewErrors, ViewFigures,
};
use vimp_host::{Host, HostCommand, PlayerId};

/// What `vimp sim` was asked to do.
#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// The map file.
    #[arg(long, default_value = "maps/default.json")]
    pub map: PathBuf,
    /// Bots in the match (split between the two teams).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(0..=255))]
    pub bots: u16,
    /// How good the bots are: easy, normal or hard.
    #[arg(long, default_value = "normal", value_parser = crate::setup::bot_skill)]
    pub bot_skill: BotSkill,
    /// Seconds of match time to simulate.
    #[arg(long, default_value_t = 60.0)]
    pub seconds: f64,
    /// The match seed: same map, seed and bots → same match, byte for byte.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print the figures as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The byte budget of each client's delta frames, per second (0: none); the game
    /// config's `snapshotBudget` (5,000) when not given.
    #[arg(long, value_name = "BYTES")]
    pub snapshot_budget: Option<u32>,
    /// Dump the match after this tick, restore it into a fresh host, run both to the end and
    /// fail naming the first tick whose state differs.
    #[arg(long, value_name = "TICK")]
    pub check_dump_at: Option<u32>,
}

fn config(args: &SimArgs, game: &Game) -> vimp_host::InitConfig {
    (game.init_config)(args.seed, args.bot_skill)
}

/// A match of `args.bots` bots on the map.
fn new_host(args: &SimArgs, game: &Game, map_label: &str, map_text: &str) -> anyhow::Result<Host> {
    let mut host = Host::new(config(args, game), *game)?;
    host.load_map_json(map_label, map_text)?;
    for i in 0..args.bots {
        host.push(HostCommand::Join { player: PlayerId(i as u8), name: format!("bot{i}"), team: None, bot: true });
    }
    Ok(host)
}

/// The view figures of [`ViewErrors`] (see `vimp sim --help`), named as in the JSON report:
/// [`ViewFigures`]' fields with `view_` before them.
fn view_figures(errors: Option<&ViewErrors>, of: fn(&ViewErrors) -> ViewFigures) -> serde_json::Value {
    let figures = errors.map(of).unwrap_or_default();
    let fields = match serde_json::to_value(figures) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => serde_json::Map::new(),
    };
    fields.into_iter().map(|(k, v)| (format!("view_{k}"), v)).collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

/// What a run of the match's ticks measured.
struct Played {
    /// Each tick's time without the delta frames and without measuring them, µs.
    tick_us: Vec<f64>,
    /// Every tick's whole time, µs (less the measuring).
    elapsed_us: f64,
    /// The first tick whose state differs in the match restored from a dump.
    diverged: Option<u32>,
    /// Wall-clock seconds.
    wall: f64,
}

/// Runs `ticks` ticks of `host`, timing each, then as many of the same match with no budget
/// (when there is one); with `--check-dump-at`, restores a dump into a twin and compares every
/// tick.
fn play(
    args: &SimArgs,
    game: &Game,
    (host, mut unbudgeted): (&mut Host, Option<&mut Host>),
    receivers: &FrameReceivers,
    figures: &mut dyn vimp_host::engine::game::MatchFigures,
    ticks: u32,
) -> anyhow::Result<Played> {
    let mut tick_us = Vec::with_capacity(ticks as usize);
    // Every tick's whole time, µs.
    let mut elapsed_us = 0.0;
    let mut twin: Option<Host> = None;
    let mut diverged: Option<u32> = None;
    let started = Instant::now();
    let mut last_progress = Instant::now();
    for _ in 0..ticks {
        let t0 = Instant::now();
        let delta_time = |host: &Host| {
            let p = host.world().resource::<DeltaStats>();
            (p.world_us + p.encode_us, p.measure_us)
        };
        let before = delta_time(host);
        host.step();
        // The tick without the delta frames, which a host writes only for clients that
        // asked for them (instead of format 5), and without measuring what they cost the eye.
        let after = delta_time(host);
        let (delta_us, measure_us) = (after.0 - before.0, after.1 - before.1);
        let elapsed = t0.elapsed().as_secs_f64() * 1e6 - measure_us;
        elapsed_us += elapsed;
        tick_us.push(elapsed - delta_us);
        host.take_frames();
        host.take_meta();
        figures.observe(host.world_mut());
        let tick = host.tick();
        if let Some(twin) = twin.as_mut() {
            twin.step();
            twin.take_frames();
            twin.take_meta();
            if diverged.is_none() && host.state_hash()? != twin.state_hash()? {
                diverged = Some(tick);
            }
        }
        if args.check_dump_at == Some(tick) {
            let dump = host.serialize_state()?;
            let mut restored = Host::restore(config(args, game), *game, &dump)?;
            restored.world_mut().insert_resource(receivers.clone());
            anyhow::ensure!(restored.serialize_state()? == dump, "the restored state re-serialises differently");
            twin = Some(restored);
        }
        if !args.json && last_progress.elapsed().as_secs_f64() >= 2.0 {
            eprintln!("  tick {tick}/{ticks}");
            last_progress = Instant::now();
        }
    }
    // The match with no budget after it, not beside it: its ticks would take the caches from
    // under the timed ones.
    if let Some(twin) = unbudgeted.as_mut() {
        for _ in 0..ticks {
            twin.step();
            twin.take_frames();
            twin.take_meta();
            if !args.json && last_progress.elapsed().as_secs_f64() >= 2.0 {
                eprintln!("  with no budget: tick {}/{ticks}", twin.tick());
                last_progress = Instant::now();
            }
        }
    }
    let wall = started.elapsed().as_secs_f64();
    Ok(Played { tick_us, elapsed_us, diverged, wall })
}

/// The figures of `report` for people, a line each; `game_lines` are the game's own.
fn print_figures(report: &serde_json::Value, game_lines: &[String], check_dump_at: Option<u32>, diverged: Option<u32>) {
    let f = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let n = |k: &str| report[k].as_u64().unwrap_or(0);
    let (ticks, budget) = (n("ticks"), n("snapshot_v6_budget_bytes_per_s"));
    println!(
        "{ticks} ticks ({:.1} s of match) in {:.2} s: tick p50 {:.1} µs, p99 {:.1} µs",
        f(report, "match_seconds"),
        f(report, "wall_seconds"),
        f(report, "tick_us_p50"),
        f(report, "tick_us_p99")
    );
    println!(
        "snapshot v5: {:.0} B/s per client; as v6 delta frames {:.0} B/s (budget {budget} B/s; {:.1} µs a frame for \
         the world, {:.1} µs a client's frame, {:.0} % of the tick, {:.0} % for the clients' frames alone); state hash {}",
        f(report, "snapshot_v5_bytes_per_client_per_s"),
        f(report, "snapshot_v6_bytes_per_client_per_s"),
        f(report, "snapshot_v6_world_us_per_frame"),
        f(report, "snapshot_v6_encode_us_per_client_frame"),
        f(report, "snapshot_v6_work_share_of_tick") * 100.0,
        f(report, "snapshot_v6_client_work_share_of_tick") * 100.0,
        report["state_hash"].as_str().unwrap_or("?"),
    );
    let under = format!("under the budget of {budget} B/s");
    let mut runs = if budget == 0 {
        vec![("with no budget", report)]
    } else {
        vec![(under.as_str(), report), ("with no budget", &report["view_unbudgeted"])]
    };
    runs.push(("as format 5 frames", &report["view_v5"]));
    for (what, v) in runs {
        println!(
            "the receivers' worlds {what}: on screen (within {} units) off by p50 {:.2} p99 {:.2} units, \
             age p99 {:.0} ms; beyond off by p99 {:.2} units, age p99 {:.0} ms",
            vimp_host::engine::snapshot::ON_SCREEN,
            f(v, "view_error_on_screen_p50"),
            f(v, "view_error_on_screen_p99"),
            f(v, "view_age_on_screen_p99_ms"),
            f(v, "view_error_beyond_p99"),
            f(v, "view_age_beyond_p99_ms"),
        );
    }
    for line in game_lines {
        println!("{line}");
    }
    println!(
        "state dump: {} bytes, encoded in {:.0} µs, decoded in {:.0} µs",
        n("dump_bytes"),
        f(report, "dump_encode_us"),
        f(report, "dump_decode_us")
    );
    if let Some(at) = check_dump_at {
        match diverged {
            None => println!("dump at tick {at}: the restored match stayed identical to the end"),
            Some(t) => println!("dump at tick {at}: the restored match diverged at tick {t}"),
        }
    }
}

/// Runs a match of `game`; returns the exit code (1 when a dump check found a divergence).
pub fn run(args: &SimArgs, game: &Game) -> anyhow::Result<i32> {
    let label = args.map.display().to_string();
    let text = crate::shipped::read_map(&args.map).with_context(|| format!("reading {label}"))?;
    let mut host = new_host(args, game, &label, &text)?;
    let receivers: FrameReceivers = FrameReceivers((0..args.bots).map(|i| PlayerId(i as u8)).collect());
    host.world_mut().insert_resource(receivers.clone());
    host.world_mut().insert_resource(DeltaViewers::perfect(receivers.0.iter().copied()).measuring());
    if let Some(budget) = args.snapshot_budget {
        host.world_mut().insert_resource(SnapshotBudget(budget));
    }
    let budget = host.world().resource::<SnapshotBudget>().0;
    // The same match with no byte budget, run after it: what the budget costs the eye.
    let mut unbudgeted = match budget {
        0 => None,
        _ => {
            let mut twin = new_host(args, game, &label, &text)?;
            twin.world_mut().insert_resource(DeltaViewers::perfect(receivers.0.iter().copied()).measuring());
            twin.world_mut().insert_resource(SnapshotBudget(0));
            Some(twin)
        }
    };

    let dt = host.world().resource::<vimp_host::engine::sim::FixedClock>().step;
    let ticks = (args.seconds / dt).round().max(0.0) as u32;
    let mut figures = (game.figures)();
    let Played { mut tick_us, elapsed_us, diverged, wall } =
        play(args, game, (&mut host, unbudgeted.as_mut()), &receivers, figures.as_mut(), ticks)?;

    tick_us.sort_by(f64::total_cmp);
    let stats = *host.world().resource::<SnapshotStats>();
    let receiver_count = receivers.0.len().max(1) as f64;
    let match_seconds = ticks as f64 * dt;
    let per_client_per_s =
        |bytes: u64| if match_seconds > 0.0 { bytes as f64 / receiver_count / match_seconds } else { 0.0 };
    let bytes_per_client_per_s = per_client_per_s(stats.bytes);
    let v6 = *host.world().resource::<DeltaStats>();
    let v6_bytes_per_client_per_s = per_client_per_s(v6.bytes);
    let v6_world_us_per_frame = v6.world_us / v6.worlds.max(1) as f64;
    let v6_encode_us_per_client_frame = v6.encode_us / v6.frames.max(1) as f64;
    // The delta frames' share of the host's time when every client takes them: of its ticks,
    // which write them and pack no format 5 frame. The per-client part alone besides.
    let all_v6_us = (elapsed_us - stats.pack_us).max(1e-9);
    let v6_share_of_tick = (v6.world_us + v6.encode_us) / all_v6_us;
    let v6_client_share_of_tick = v6.encode_us / all_v6_us;
    let game_figures = figures.report(host.world_mut(), ticks as f64 * dt);
    let t0 = Instant::now();
    let dump = host.serialize_state()?;
    let dump_encode_us = t0.elapsed().as_secs_f64() * 1e6;
    let mut fresh = Host::new(config(args, game), *game)?;
    let t0 = Instant::now();
    fresh.load_state(&dump)?;
    let dump_decode_us = t0.elapsed().as_secs_f64() * 1e6;
    let state_hash = format!("{:016x}", vimp_host::engine::container::fnv1a64(&dump));
    let mut report = json!({
        "map": label,
        "bots": args.bots,
        "bot_skill": args.bot_skill.name(),
        "seed": args.seed,
        "ticks": ticks,
        "match_seconds": match_seconds,
        "wall_seconds": wall,
        "tick_us_p50": percentile(&tick_us, 0.50),
        "tick_us_p99": percentile(&tick_us, 0.99),
        "tick_us_max": tick_us.last().copied().unwrap_or(0.0),
        "snapshot_v5_bytes_per_client_per_s": bytes_per_client_per_s,
        "snapshot_v6_budget_bytes_per_s": budget,
        "snapshot_v6_bytes_per_client_per_s": v6_bytes_per_client_per_s,
        "snapshot_v6_fixed_bytes_per_client_per_s": per_client_per_s(v6.fixed_bytes),
        "snapshot_v6_share_of_v5": if bytes_per_client_per_s > 0.0 { v6_bytes_per_client_per_s / bytes_per_client_per_s } else { 0.0 },
        "snapshot_v6_world_us_per_frame": v6_world_us_per_frame,
        "snapshot_v6_encode_us_per_client_frame": v6_encode_us_per_client_frame,
        "snapshot_v6_work_share_of_tick": v6_share_of_tick,
        "snapshot_v6_client_work_share_of_tick": v6_client_share_of_tick,
        "snapshot_body_bytes_last": stats.last_body_bytes,
        "snapshot_pack_errors": stats.pack_errors,
        "dump_bytes": dump.len(),
        "dump_encode_us": dump_encode_us,
        "dump_decode_us": dump_decode_us,
        "state_hash": state_hash,
        "dump_check": args.check_dump_at.map(|t| json!({ "at": t, "first_diverging_tick": diverged })),
    });
    // What the budget costs the eye: the receivers' worlds against the host's, under the
    // budget and (the same match beside it) with none.
    let errors = host.world().resource::<DeltaViewers>().view_errors();
    let view = view_figures(errors, ViewErrors::figures);
    let view_unbudgeted = match &unbudgeted {
        Some(twin) => view_figures(twin.world().resource::<DeltaViewers>().view_errors(), ViewErrors::figures),
        None => view.clone(),
    };
    let view_v5 = view_figures(errors, ViewErrors::full_figures);
    if let (Some(fields), Some(view)) = (report.as_object_mut(), view.as_object()) {
        fields.extend(view.clone());
        fields.insert("view_unbudgeted".into(), view_unbudgeted.clone());
        fields.insert("view_v5".into(), view_v5.clone());
    }
    if let Some(fields) = report.as_object_mut() {
        fields.extend(game_figures.clone());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_figures(&report, &figures.lines(&game_figures), args.check_dump_at, diverged);
    }
    if let Some(t) = diverged {
        eprintln!("vimp sim: the match restored from the dump at tick {:?} diverged at tick {t}", args.check_dump_at);
        return Ok(1);
    }
    if args.check_dump_at.is_some_and(|t| t > ticks) {
        eprintln!("vimp sim: --check-dump-at {:?} is past the last tick ({ticks})", args.check_dump_at);
        return Ok(2);
    }
    Ok(0)
}
