//! The net graph (F3): RTT, snapshot rate, bytes in and out, the host's byte budget in use
//! and the rows carried forward while it holds them back, prediction corrections, as plots
//! over the last seconds.
//!
//! [`NetGraph`] gathers per-frame counters into one bucket per [`BUCKET`] and keeps
//! [`HISTORY`] of them; the overlay draws each series as a line plot with its current
//! value. Divergence records of the predictor are counted into the bucket they came in.

use std::collections::VecDeque;
use std::time::Duration;

/// The width of one plotted point.
pub const BUCKET: Duration = Duration::from_millis(250);
/// How much history is kept.
pub const HISTORY: Duration = Duration::from_secs(10);

/// One bucket of counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bucket {
    /// Start of the bucket.
    pub start: Duration,
    /// The newest RTT seen, ms.
    pub rtt_ms: Option<f64>,
    /// Snapshot frames decoded.
    pub snapshots: u32,
    /// Bytes received.
    pub bytes_in: u64,
    /// Bytes sent.
    pub bytes_out: u64,
    /// Prediction corrections.
    pub corrections: u32,
    /// The largest correction, world units.
    pub max_correction: f32,
    /// Divergence records of the predictor.
    pub divergences: u32,
    /// The most rows a frame showed carried forward (held back by the host's byte budget).
    pub rows_carried: u32,
    /// Bytes of delta frames received: the host's byte budget in use.
    pub delta_bytes: u64,
}

/// A series the overlay can plot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Series {
    /// Round-trip time, ms.
    Rtt,
    /// Snapshots per second.
    SnapshotRate,
    /// Kilobytes per second received.
    KbIn,
    /// Kilobytes per second sent.
    KbOut,
    /// Corrections per second.
    Corrections,
    /// Largest correction, world units.
    CorrectionSize,
    /// Rows shown carried forward, the most in a frame.
    RowsCarried,
    /// Kilobytes per second of delta frames: the byte budget in use.
    BudgetInUse,
}

impl Series {
    /// Every series, in drawing order.
    pub const ALL: [Series; 8] = [
        Series::Rtt,
        Series::SnapshotRate,
        Series::KbIn,
        Series::KbOut,
        Series::BudgetInUse,
        Series::RowsCarried,
        Series::Corrections,
        Series::CorrectionSize,
    ];

    /// The label and unit.
    pub fn label(self) -> &'static str {
        match self {
            Series::Rtt => "rtt ms",
            Series::SnapshotRate => "snapshots/s",
            Series::KbIn => "KB/s in",
            Series::KbOut => "KB/s out",
            Series::Corrections => "corrections/s",
            Series::CorrectionSize => "max correction",
            Series::RowsCarried => "rows carried",
            Series::BudgetInUse => "budget KB/s",
        }
    }

    fn value(self, b: &Bucket) -> f64 {
        let per_s = 1.0 / BUCKET.as_secs_f64();
        match self {
            Series::Rtt => b.rtt_ms.unwrap_or(0.0),
            Series::SnapshotRate => b.snapshots as f64 * per_s,
            Series::KbIn => b.bytes_in as f64 * per_s / 1000.0,
            Series::KbOut => b.bytes_out as f64 * per_s / 1000.0,
            Series::Corrections => b.corrections as f64 * per_s,
            Series::CorrectionSize => b.max_correction as f64,
            Series::RowsCarried => f64::from(b.rows_carried),
            Series::BudgetInUse => b.delta_bytes as f64 * per_s / 1000.0,
        }
    }
}

/// The history behind the overlay.
#[derive(Clone, Debug, Default)]
pub struct NetGraph {
    buckets: VecDeque<Bucket>,
    /// Corrections since the match began.
    pub total_corrections: u64,
    /// Divergence records since the match began.
    pub total_divergences: u64,
}

impl NetGraph {
    fn bucket(&mut self, now: Duration) -> &mut Bucket {
        let start = Duration::from_nanos((now.as_nanos() / BUCKET.as_nanos() * BUCKET.as_nanos()) as u64);
        if self.buckets.back().is_none_or(|b| b.start != start) {
            self.buckets.push_back(Bucket { start, ..Bucket::default() });
            while self.buckets.front().is_some_and(|b| start.saturating_sub(b.start) > HISTORY) {
                self.buckets.pop_front();
            }
        }
        self.buckets.back_mut().expect("just pushed")
    }

    /// Counts one frame's network figures.
    pub fn record(&mut self, now: Duration, rtt_ms: Option<f64>, snapshots: u32, bytes_in: u64, bytes_out: u64) {
        let b = self.bucket(now);
        if rtt_ms.is_some() {
            b.rtt_ms = rtt_ms;
        }
        b.snapshots += snapshots;
        b.bytes_in += bytes_in;
        b.bytes_out += bytes_out;
    }

    /// Notes how many rows the newest frame showed carried forward, and counts bytes of delta
    /// frames received.
    pub fn delta(&mut self, now: Duration, rows_carried: u32, bytes: u64) {
        let b = self.bucket(now);
        b.rows_carried = b.rows_carried.max(rows_carried);
        b.delta_bytes += bytes;
    }

    /// Counts a prediction correction of `distance` world units.
    pub fn correction(&mut self, now: Duration, distance: f32) {
        self.total_corrections += 1;
        let b = self.bucket(now);
        b.corrections += 1;
        b.max_correction = b.max_correction.max(distance);
    }

    /// Counts divergence records of the predictor.
    pub fn divergences(&mut self, now: Duration, n: u32) {
        if n > 0 {
            self.total_divergences += n as u64;
            self.bucket(now).divergences += n;
        }
    }

    /// The points of a series, oldest first: (seconds before the newest bucket, value).
    /// The newest bucket is still filling, so it is left out.
    pub fn points(&self, series: Series) -> Vec<(f64, f64)> {
        let Some(newest) = self.buckets.back() else { return Vec::new() };
        self.buckets
            .iter()
            .filter(|b| b.start < newest.start)
            .map(|b| ((newest.start - b.start).as_secs_f64(), series.value(b)))
            .collect()
    }

    /// The last complete bucket's value of a series.
    pub fn current(&self, series: Series) -> Option<f64> {
        self.points(series).last().map(|p| p.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_sum_per_quarter_second_and_history_is_bounded() {
        let mut g = NetGraph::default();
        for ms in (0..20_000).step_by(16) {
            g.record(Duration::from_millis(ms), Some(40.0), (ms % 33 < 16) as u32, 100, 10);
        }
        let rate = g.points(Series::KbIn);
        assert!(rate.len() as u32 <= (HISTORY.as_millis() / BUCKET.as_millis()) as u32 + 1, "{}", rate.len());
        // 100 bytes per 16 ms frame = 6,250 B/s.
        for (_, v) in &rate {
            assert!((*v - 6.25).abs() < 0.5, "{v}");
        }
        assert_eq!(g.current(Series::Rtt), Some(40.0));
        g.correction(Duration::from_millis(20_001), 3.5);
        g.correction(Duration::from_millis(20_002), 1.0);
        g.record(Duration::from_millis(20_300), None, 0, 0, 0);
        assert_eq!(g.current(Series::CorrectionSize), Some(3.5));
        assert_eq!(g.current(Series::Corrections), Some(8.0));
        assert_eq!(g.total_corrections, 2);
    }
}
