//! Lag compensation's figure: how often a shot aimed at what its shooter sees hits a tank
//! circling at full throttle, with and without compensation, at a 100 ms and a 200 ms round
//! trip (± 10 ms), over in-memory links in simulated time ([`vimp_host::tanks::duel`]).
//!
//! Run: `cargo bench -p vimp-host --bench lagcomp`; a line per round trip:
//! `rtt_ms=100 hit_rate_compensated=… hit_rate_uncompensated=…`.

use std::time::Duration;

use vimp_host::tanks::duel::{self, Duel};

fn main() {
    for rtt_ms in [100, 200] {
        let rtt = Duration::from_millis(rtt_ms);
        let duel = |compensated, budget| {
            duel::run(Duel { firing: Duration::from_secs(60), budget, ..Duel::new(rtt, compensated) })
        };
        let (with, without) = (duel(true, 0), duel(false, 0));
        // The same under the default byte budget: rows it holds back are drawn older than
        // the moment the client says it drew.
        let (with_budget, without_budget) = (duel(true, 3000), duel(false, 3000));
        println!(
            "rtt_ms={rtt_ms} hit_rate_compensated={:.3} hit_rate_uncompensated={:.3} shots={}/{} views={} views_clamped={} \
             budget_3000_hit_rate_compensated={:.3} budget_3000_hit_rate_uncompensated={:.3}",
            with.hit_rate(),
            without.hit_rate(),
            with.shots,
            without.shots,
            with.views.0,
            with.views.1,
            with_budget.hit_rate(),
            without_budget.hit_rate(),
        );
    }
}
