//! Snapshot bytes at 8, 16, 32 and 64 tanks: format 5 against delta frames (format 6) in the
//! same match, under the game's byte budget and without one, and the host's time for the
//! delta frames.
//!
//! For each count a headless match of bots (8 and 16 on the default map, 32 and 64 on
//! `bench-64`) runs 20 s of game time with every player a receiver of v5 frames and also a
//! [`DeltaViewers`] receiver of its own view over a perfect link (each delta frame written
//! against the frame before), twice: under the game's budget and without one. One line per
//! run: v5 and v6 bytes per client per second, their ratio, host upload for all clients,
//! the µs per client frame and per frame's world, and that work as a share of the host's tick
//! when every client takes delta frames (its ticks' time, less the format 5 packing the bench
//! also does), and the clients' frames alone; then what the budget costs the eye
//! ([`DeltaViewers::measuring`]: for the rows in each receiver's view, how far the place it
//! shows — as it decodes it, carried forward by its rates — is from the host's, world units,
//! and how old its value is, ms; on screen — within 640 units of its tank — and beyond), and
//! the same for the format 5 frames of the match as they decode.
//!
//! Run: `cargo bench -p vimp-host --bench snapshots`

use std::time::Instant;

use vimp_host::engine::snapshot::{DeltaStats, DeltaViewers, FrameReceivers, SnapshotBudget, SnapshotStats};
use vimp_host::prelude::*;
use vimp_host::tanks::GAME;

const SECONDS: f64 = 20.0;

fn main() {
    let maps =
        [("default", include_str!("../../maps/default.json")), ("bench-64", include_str!("../../maps/bench-64.json"))];
    let mut lines = Vec::new();
    for (tanks, (map, text)) in [(8usize, maps[0]), (16, maps[0]), (32, maps[1]), (64, maps[1])] {
        // The same match twice (it is deterministic): under the game's budget, and without one.
        for budget in [None, Some(0)] {
            let mut host = Host::new((GAME.init_config)(1, Default::default()), GAME).expect("the host starts");
            host.load_map_json(map, text).expect("the map loads");
            for i in 0..tanks {
                let name = format!("bot{i}");
                host.push(HostCommand::Join { player: PlayerId(i as u8), name, team: None, bot: true });
            }
            host.world_mut().insert_resource(FrameReceivers((0..tanks).map(|i| PlayerId(i as u8)).collect()));
            host.world_mut().insert_resource(DeltaViewers::perfect((0..tanks).map(|i| PlayerId(i as u8))).measuring());
            if let Some(b) = budget {
                host.world_mut().insert_resource(SnapshotBudget(b));
            }
            let budget = host.world().resource::<SnapshotBudget>().0;
            let dt = host.world().resource::<vimp_host::engine::sim::FixedClock>().step;
            let ticks = (SECONDS / dt).round() as u32;
            let mut tick_s = 0.0;
            for _ in 0..ticks {
                let t = Instant::now();
                host.step();
                tick_s += t.elapsed().as_secs_f64();
                host.take_frames();
                host.take_meta();
            }
            let stats = *host.world().resource::<SnapshotStats>();
            let delta = host.world().resource::<DeltaStats>();
            // Measuring is no part of a host's work.
            let tick_s = tick_s - delta.measure_us / 1e6;
            let errors = host.world().resource::<DeltaViewers>().view_errors();
            let view = errors.map(|e| e.figures()).unwrap_or_default();
            let view_v5 = errors.map(|e| e.full_figures()).unwrap_or_default();
            let delta_s = (delta.world_us + delta.encode_us) / 1e6;
            // The ticks of a host whose clients all take delta frames: no format 5 frame packed.
            let all_v6_s = (tick_s - stats.pack_us / 1e6).max(1e-9);
            let per_client = |bytes: u64| bytes as f64 / tanks as f64 / (f64::from(ticks) * dt);
            let (v5, v6) = (per_client(stats.bytes), per_client(delta.bytes));
            let budget = if budget == 0 { "no budget".to_owned() } else { format!("budget {budget} B/s") };
            lines.push(format!(
                "{tanks:2} tanks ({map}), {budget:>15}: v5 {v5:7.0} B/s per client, v6 {v6:6.0} B/s ({:4.1} % of \
                 v5); host upload v5 {:5.2} Mbit/s, v6 {:5.2} Mbit/s; v6 {:4.1} µs per client frame, {:4.1} µs a \
                 frame's world, {:4.1} % of the tick ({:4.1} % for the clients' frames alone); view error on \
                 screen p50 {:.2} p99 {:.2}, beyond p99 {:.2} units; age on screen p99 {:.0}, beyond p99 {:.0} ms; \
                 as v5 frames on screen p99 {:.2}, beyond p99 {:.2} units",
                v6 / v5 * 100.0,
                v5 * tanks as f64 * 8.0 / 1e6,
                v6 * tanks as f64 * 8.0 / 1e6,
                delta.encode_us / delta.frames.max(1) as f64,
                delta.world_us / delta.worlds.max(1) as f64,
                delta_s / all_v6_s * 100.0,
                delta.encode_us / 1e6 / all_v6_s * 100.0,
                view.error_on_screen_p50,
                view.error_on_screen_p99,
                view.error_beyond_p99,
                view.age_on_screen_p99_ms,
                view.age_beyond_p99_ms,
                view_v5.error_on_screen_p99,
                view_v5.error_beyond_p99,
            ));
        }
    }
    for line in lines {
        println!("{line}");
    }
}
