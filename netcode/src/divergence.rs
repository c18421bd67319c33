//! Prediction divergence detector: records where the client's prediction disagreed with the server.
//!
//! Just before an authoritative server state overwrites the client's predicted
//! player state, the client hands both blocks to
//! [`DivergenceDetector::check`]. The two slices are compared component by
//! component (for a tank's player block of 8 `f32`: x, y, angle, vx, vy,
//! angvel, gunRotation, engineThrottle — but any length works, and only the
//! common prefix of the two slices is compared). A component *diverges* when
//!
//! * both values are finite and `|authoritative − predicted|` is strictly
//!   greater than that component's threshold, or
//! * exactly one of the two values is non-finite (NaN or ±∞), or
//! * both are non-finite and their bit patterns differ (`+∞` vs `−∞`, or two
//!   NaNs with different payloads).
//!
//! If at least one component diverges, a [`DivergenceRecord`] holding only
//! the offending components is pushed into a bounded ring buffer; when the
//! buffer is full the oldest record is dropped and counted. The caller drains
//! the buffer with [`DivergenceDetector::take`] (the client's
//! `take_divergence()`).
//!
//! Thresholds come from [`DivergenceConfig`], the optional `divergence`
//! object of the client engine config: `thresholds` is positional (index `i`
//! applies to component `i`), and components past its end use
//! `defaultThreshold`. Components listed in `angles` are angles: their delta
//! is wrapped into (−π, π] by [`wrap_angle`], so a prediction of 3.1 rad
//! against an authoritative −3.1 rad is a small positive error of about
//! 0.083 rad, not −6.2 rad.
//!
//! Records are keyed by the frame time the caller passes in (the module never
//! reads a clock), not by input sequence number: reconciliation replays the
//! input history from the moment of the authoritative state, so the frame
//! time is what lines a record up with the rest of the client's timeline.
//! The last acknowledged input seq and the replayed input range are stored
//! alongside as context.

use core::f32::consts::PI;
use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// A full turn in `f32`; exactly `2 * PI`, so subtracting it is exact near ±π.
const TAU: f32 = 2.0 * PI;

/// Maps an angle in radians into (−π, π].
///
/// Exactly π stays π and −π becomes π. Values already in the range are
/// returned unchanged; others are reduced with exact floating-point remainder
/// arithmetic (no loop), so huge values cost the same as small ones, although
/// far from zero the input's own rounding dominates the result. NaN and ±∞
/// give NaN.
#[must_use]
pub fn wrap_angle(a: f32) -> f32 {
    if a > -PI && a <= PI {
        return a;
    }
    // `r` is in [0, TAU] (`rem_euclid` may round a tiny negative remainder up
    // to TAU, which then maps to 0). For `r` in (PI, TAU] the subtraction is
    // exact (Sterbenz lemma), so the result is strictly greater than −PI.
    let r = a.rem_euclid(TAU);
    if r > PI { r - TAU } else { r }
}

/// Configuration of the divergence detector: the optional `divergence`
/// object of the client engine config.
///
/// Deserialized from camelCase JSON; every field may be omitted and falls
/// back to [`DivergenceConfig::default`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DivergenceConfig {
    /// Positional thresholds: entry `i` applies to component `i`.
    /// Components past the end use [`default_threshold`](Self::default_threshold).
    pub thresholds: Vec<f32>,
    /// Threshold for components without a positional entry.
    pub default_threshold: f32,
    /// Maximum number of records kept; the oldest is dropped beyond it.
    pub capacity: usize,
    /// Indices of components that are angles in radians, whose delta is
    /// wrapped into (−π, π]. Indices past the compared length are ignored.
    pub angles: Vec<usize>,
}

impl DivergenceConfig {
    /// Default for [`default_threshold`](Self::default_threshold).
    pub const DEFAULT_THRESHOLD: f32 = 0.01;
    /// Default for [`capacity`](Self::capacity).
    pub const DEFAULT_CAPACITY: usize = 256;

    /// Threshold for component `index`: its positional entry, else the default.
    #[must_use]
    pub fn threshold(&self, index: usize) -> f32 {
        self.thresholds.get(index).copied().unwrap_or(self.default_threshold)
    }

    /// Whether component `index` is an angle.
    #[must_use]
    pub fn is_angle(&self, index: usize) -> bool {
        self.angles.contains(&index)
    }

    /// Checks that every threshold is a non-negative number (+∞ is allowed
    /// and never flags a finite difference) and that the capacity is not zero.
    ///
    /// # Errors
    ///
    /// The first problem found: the default threshold, then the positional
    /// thresholds in order, then the capacity.
    pub fn validate(&self) -> Result<(), DivergenceConfigError> {
        if !is_valid_threshold(self.default_threshold) {
            return Err(DivergenceConfigError::InvalidDefaultThreshold { value: self.default_threshold });
        }
        if let Some((index, &value)) = self.thresholds.iter().enumerate().find(|&(_, &t)| !is_valid_threshold(t)) {
            return Err(DivergenceConfigError::InvalidThreshold { index, value });
        }
        if self.capacity == 0 {
            return Err(DivergenceConfigError::ZeroCapacity);
        }
        Ok(())
    }
}

impl Default for DivergenceConfig {
    fn default() -> Self {
        Self {
            thresholds: Vec::new(),
            default_threshold: Self::DEFAULT_THRESHOLD,
            capacity: Self::DEFAULT_CAPACITY,
            angles: Vec::new(),
        }
    }
}

/// A threshold is usable when it is not NaN and not negative (`-0.0` is fine).
fn is_valid_threshold(t: f32) -> bool {
    t >= 0.0
}

/// Why a [`DivergenceConfig`] was rejected by [`DivergenceConfig::validate`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DivergenceConfigError {
    /// `defaultThreshold` is negative or NaN.
    #[error("divergence defaultThreshold must be a non-negative number, got {value}")]
    InvalidDefaultThreshold {
        /// The offending value.
        value: f32,
    },
    /// An entry of `thresholds` is negative or NaN.
    #[error("divergence thresholds[{index}] must be a non-negative number, got {value}")]
    InvalidThreshold {
        /// Position of the entry in `thresholds`.
        index: usize,
        /// The offending value.
        value: f32,
    },
    /// `capacity` is zero, so no record could ever be kept.
    #[error("divergence capacity must be at least 1")]
    ZeroCapacity,
}

/// One component of the player block that diverged past its threshold.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ComponentDivergence {
    /// Position of the component in the player block.
    pub index: usize,
    /// The client's predicted value, as passed in.
    pub predicted: f32,
    /// The server's authoritative value, as passed in.
    pub authoritative: f32,
    /// `authoritative − predicted`; wrapped into (−π, π] for angle
    /// components. When either value is non-finite it is the raw difference
    /// (NaN or ±∞), never wrapped. NaN and ±∞ serialize to JSON as `null`.
    pub delta: f32,
}

/// One reconciliation at which the prediction diverged from the server.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DivergenceRecord {
    /// Frame time (milliseconds, caller's clock) of the check.
    pub frame_time_ms: f64,
    /// The last input seq the authoritative state acknowledges.
    pub last_input_seq: u32,
    /// The components past their threshold, in index order; never empty.
    pub components: Vec<ComponentDivergence>,
    /// The `(first, last)` input seqs replayed on top of the authoritative
    /// state, if the caller supplied them. Serialized as a two-element array.
    pub replayed_inputs: Option<(u32, u32)>,
}

impl DivergenceRecord {
    /// The diverging component with this index, if it is in the record.
    #[must_use]
    pub fn component(&self, index: usize) -> Option<&ComponentDivergence> {
        self.components.iter().find(|c| c.index == index)
    }

    /// Largest `|delta|` among the recorded components; 0 when there are
    /// none. A NaN delta counts as +∞ so a broken component is never hidden.
    #[must_use]
    pub fn max_abs_delta(&self) -> f32 {
        self.components.iter().map(|c| if c.delta.is_nan() { f32::INFINITY } else { c.delta.abs() }).fold(0.0, f32::max)
    }

    /// Euclidean size of the deltas of components 0 and 1 (x and y in the
    /// player block); a component absent from the record counts as 0.
    #[must_use]
    pub fn position_error(&self) -> f32 {
        let delta = |i| self.component(i).map_or(0.0, |c| c.delta);
        delta(0).hypot(delta(1))
    }
}

/// Compares predicted and authoritative player blocks and keeps a bounded
/// history of the divergences; see the [module docs](self).
#[derive(Debug, Clone)]
pub struct DivergenceDetector {
    config: DivergenceConfig,
    records: VecDeque<DivergenceRecord>,
    total: u64,
    dropped: u64,
}

impl DivergenceDetector {
    /// A detector with an empty buffer.
    ///
    /// The config is not validated here (see [`DivergenceConfig::validate`]):
    /// a NaN threshold never flags a finite difference, and with capacity 0
    /// every record is dropped as soon as it is pushed.
    #[must_use]
    pub fn new(config: DivergenceConfig) -> Self {
        Self { config, records: VecDeque::new(), total: 0, dropped: 0 }
    }

    /// The configuration in use.
    #[must_use]
    pub fn config(&self) -> &DivergenceConfig {
        &self.config
    }

    /// Compares `predicted` with `authoritative` over their common length
    /// and pushes a record if at least one component diverges (see the
    /// [module docs](self) for the rule). Returns whether a record was
    /// pushed; with a full buffer the oldest record is dropped to make room.
    pub fn check(
        &mut self,
        frame_time_ms: f64,
        last_input_seq: u32,
        predicted: &[f32],
        authoritative: &[f32],
        replayed_inputs: Option<(u32, u32)>,
    ) -> bool {
        let components: Vec<ComponentDivergence> = predicted
            .iter()
            .zip(authoritative)
            .enumerate()
            .filter_map(|(index, (&p, &a))| self.compare(index, p, a))
            .collect();
        if components.is_empty() {
            return false;
        }
        self.push(DivergenceRecord { frame_time_ms, last_input_seq, components, replayed_inputs });
        true
    }

    /// The divergence of one component, if it diverges.
    fn compare(&self, index: usize, predicted: f32, authoritative: f32) -> Option<ComponentDivergence> {
        let raw = authoritative - predicted;
        let (delta, diverges) = match (predicted.is_finite(), authoritative.is_finite()) {
            (true, true) => {
                let delta = if self.config.is_angle(index) { angle_delta(predicted, authoritative, raw) } else { raw };
                (delta, delta.abs() > self.config.threshold(index))
            }
            (false, false) => (raw, predicted.to_bits() != authoritative.to_bits()),
            _ => (raw, true),
        };
        diverges.then_some(ComponentDivergence { index, predicted, authoritative, delta })
    }

    fn push(&mut self, record: DivergenceRecord) {
        self.total += 1;
        if self.config.capacity == 0 {
            self.dropped += 1;
            return;
        }
        while self.records.len() >= self.config.capacity {
            self.records.pop_front();
            self.dropped += 1;
        }
        self.records.push_back(record);
    }

    /// Removes and returns the buffered records, oldest first. The
    /// [`total`](Self::total) and [`dropped`](Self::dropped) counters are
    /// kept.
    pub fn take(&mut self) -> Vec<DivergenceRecord> {
        self.records.drain(..).collect()
    }

    /// The buffered records, oldest first, without removing them.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &DivergenceRecord> + ExactSizeIterator {
        self.records.iter()
    }

    /// Number of buffered records.
    #[must_use]
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the buffer holds no record.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Records ever pushed, including those since dropped or taken.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Records dropped from the front of a full buffer before being taken.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// Wrapped difference of two finite angles, given their raw difference.
fn angle_delta(predicted: f32, authoritative: f32, raw: f32) -> f32 {
    if raw.is_finite() {
        wrap_angle(raw)
    } else {
        // The raw difference overflowed: wrap each side first so the
        // subtraction stays finite.
        wrap_angle(wrap_angle(authoritative) - wrap_angle(predicted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn approx(actual: f32, expected: f32, tol: f32) -> bool {
        (actual - expected).abs() <= tol
    }

    fn config(thresholds: &[f32], default_threshold: f32, capacity: usize, angles: &[usize]) -> DivergenceConfig {
        DivergenceConfig { thresholds: thresholds.to_vec(), default_threshold, capacity, angles: angles.to_vec() }
    }

    #[test]
    fn wrap_angle_table() {
        // (input, expected, tolerance)
        let cases: [(f32, f32, f32); 9] = [
            (0.0, 0.0, 0.0),
            (PI, PI, 0.0),
            (-PI, PI, 0.0),
            (3.0 * PI, PI, 1e-5),
            (-1.5 * PI, 0.5 * PI, 1e-5),
            (2.0 * PI + 0.1, 0.1, 1e-5),
            (7.0, 0.716_814_7, 1e-5),
            (-7.0, -0.716_814_7, 1e-5),
            (4.0, -2.283_185_3, 1e-5),
        ];
        for (input, expected, tol) in cases {
            let got = wrap_angle(input);
            assert!(approx(got, expected, tol), "wrap_angle({input}) = {got}, expected {expected}");
            assert!(got > -PI && got <= PI, "wrap_angle({input}) = {got} out of range");
        }
    }

    #[test]
    fn wrap_angle_keeps_in_range_values_exactly() {
        for a in [0.5_f32, -3.0, 3.1, -1e-10, 1e-30, -PI + 1e-6] {
            assert_eq!(wrap_angle(a).to_bits(), a.to_bits(), "{a}");
        }
    }

    #[test]
    fn wrap_angle_edges() {
        assert!(wrap_angle(f32::NAN).is_nan());
        assert!(wrap_angle(f32::INFINITY).is_nan());
        assert!(wrap_angle(f32::NEG_INFINITY).is_nan());
        // Just below −π wraps to just below π, not past it.
        let below = f32::from_bits((-PI).to_bits() + 1);
        assert!(below < -PI);
        let w = wrap_angle(below);
        assert!(w <= PI && approx(w, PI, 1e-6), "{w}");
        // Whole turns land on 0.
        assert_eq!(wrap_angle(TAU), 0.0);
        assert_eq!(wrap_angle(-TAU), 0.0);
        // 3·TAU rounds in f32, so it is only nearly a whole number of turns.
        assert!(approx(wrap_angle(-3.0 * TAU), 0.0, 1e-6));
        // Huge values terminate and land in range.
        for a in [f32::MAX, -f32::MAX, 1e30, -1e30, 16_777_217.0] {
            let w = wrap_angle(a);
            assert!(w > -PI && w <= PI, "wrap_angle({a}) = {w}");
        }
    }

    #[test]
    fn angle_component_wraps_across_pi() {
        // Component 2 is the angle; 3.1 → −3.1 is +0.0832 rad (2π − 6.2).
        let expected_delta = 0.083_185_3;

        let mut loose = DivergenceDetector::new(config(&[], 0.1, 8, &[2]));
        assert!(!loose.check(10.0, 1, &[0.0, 0.0, 3.1], &[0.0, 0.0, -3.1], None));
        assert!(loose.is_empty());
        assert_eq!(loose.total(), 0);

        let mut tight = DivergenceDetector::new(config(&[], 0.05, 8, &[2]));
        assert!(tight.check(10.0, 1, &[0.0, 0.0, 3.1], &[0.0, 0.0, -3.1], None));
        let records = tight.take();
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].components.len(), 1);
        let c = records[0].components[0];
        assert_eq!(c.index, 2);
        assert_eq!(c.predicted, 3.1);
        assert_eq!(c.authoritative, -3.1);
        assert!(approx(c.delta, expected_delta, 1e-4), "delta {}", c.delta);

        // The same values on a non-angle component are a raw −6.2.
        let mut plain = DivergenceDetector::new(config(&[], 0.1, 8, &[]));
        assert!(plain.check(10.0, 1, &[0.0, 0.0, 3.1], &[0.0, 0.0, -3.1], None));
        let c = plain.take()[0].components[0];
        assert!(approx(c.delta, -6.2, 1e-5), "delta {}", c.delta);
    }

    #[test]
    fn positional_thresholds_then_default() {
        let cfg = config(&[1.0, 0.5], 0.01, 8, &[]);
        assert_eq!(cfg.threshold(0), 1.0);
        assert_eq!(cfg.threshold(1), 0.5);
        assert_eq!(cfg.threshold(2), 0.01);
        assert_eq!(cfg.threshold(100), 0.01);

        let mut det = DivergenceDetector::new(cfg);
        // 0: 0.9 ≤ 1.0; 1: 0.6 > 0.5; 2: 0.02 > 0.01; 3: 0.005 ≤ 0.01.
        assert!(det.check(500.0, 42, &[0.0, 0.0, 0.0, 0.0], &[0.9, -0.6, 0.02, 0.005], Some((43, 47))));
        let records = det.take();
        assert_eq!(
            records,
            vec![DivergenceRecord {
                frame_time_ms: 500.0,
                last_input_seq: 42,
                components: vec![
                    ComponentDivergence { index: 1, predicted: 0.0, authoritative: -0.6, delta: -0.6 },
                    ComponentDivergence { index: 2, predicted: 0.0, authoritative: 0.02, delta: 0.02 },
                ],
                replayed_inputs: Some((43, 47)),
            }]
        );
    }

    #[test]
    fn threshold_is_strict() {
        let mut det = DivergenceDetector::new(config(&[0.5], 0.25, 8, &[]));
        assert!(!det.check(0.0, 0, &[1.0, 1.0], &[1.5, 0.75], None));
        assert!(det.check(0.0, 0, &[1.0, 1.0], &[1.5, 0.5], None));
        let r = det.take();
        assert_eq!(r[0].components.len(), 1);
        assert_eq!(r[0].components[0].index, 1);
        assert_eq!(r[0].components[0].delta, -0.5);
    }

    #[test]
    fn only_common_prefix_is_compared() {
        let mut det = DivergenceDetector::new(DivergenceConfig::default());
        let predicted = [1.0, 2.0, 3.0];
        let authoritative = [1.0, 2.0, 3.0, 0.0, 0.0, 99.0, 0.0, 0.0];
        assert!(!det.check(0.0, 0, &predicted, &authoritative, None));
        assert!(!det.check(0.0, 0, &authoritative, &predicted, None));
        assert!(!det.check(0.0, 0, &[], &authoritative, None));
        assert_eq!(det.total(), 0);
    }

    #[test]
    fn non_finite_rules() {
        let nan_a = f32::from_bits(0x7fc0_0000);
        let nan_b = f32::from_bits(0x7fc0_0001);
        let inf = f32::INFINITY;
        // Infinite thresholds: only the non-finite rules can flag anything.
        let mut det = DivergenceDetector::new(config(&[], inf, 16, &[0]));
        let cases: [(f32, f32, bool); 9] = [
            (nan_a, 1.0, true),
            (1.0, nan_a, true),
            (inf, 1.0, true),
            (1.0, -inf, true),
            (nan_a, nan_a, false),
            (nan_a, nan_b, true),
            (inf, inf, false),
            (-inf, -inf, false),
            (inf, -inf, true),
        ];
        for (p, a, expected) in cases {
            // Component 0 is an angle, component 1 is not: same rule for both.
            assert_eq!(det.check(0.0, 0, &[p, p], &[a, a], None), expected, "{p} vs {a}");
            if expected {
                let r = det.take().pop().unwrap();
                assert_eq!(r.components.len(), 2);
                for c in &r.components {
                    assert_eq!(c.predicted.to_bits(), p.to_bits());
                    assert_eq!(c.authoritative.to_bits(), a.to_bits());
                }
            }
        }
        // ±∞ deltas stay raw, not wrapped to NaN, on the angle component.
        det.check(0.0, 0, &[1.0], &[inf], None);
        assert_eq!(det.take()[0].components[0].delta, inf);
        det.check(0.0, 0, &[inf], &[-inf], None);
        assert_eq!(det.take()[0].components[0].delta, -inf);
    }

    #[test]
    fn angle_delta_survives_overflowing_difference() {
        // f32::MAX − (−f32::MAX) overflows; both sides are wrapped first.
        let mut det = DivergenceDetector::new(config(&[], 0.0, 4, &[0]));
        det.check(0.0, 0, &[-f32::MAX], &[f32::MAX], None);
        let d = det.take()[0].components[0].delta;
        assert!(d.is_finite() && d > -PI && d <= PI, "{d}");
    }

    #[test]
    fn ring_drops_oldest_and_counts() {
        let mut det = DivergenceDetector::new(config(&[], 0.01, 3, &[]));
        for i in 1..=5_u32 {
            assert!(det.check(f64::from(i) * 16.0, i, &[0.0], &[1.0], None));
        }
        assert_eq!(det.len(), 3);
        assert_eq!(det.total(), 5);
        assert_eq!(det.dropped(), 2);
        let seqs: Vec<u32> = det.iter().map(|r| r.last_input_seq).collect();
        assert_eq!(seqs, [3, 4, 5]);
        assert_eq!(det.iter().len(), 3);
        assert_eq!(det.iter().next_back().unwrap().frame_time_ms, 80.0);

        let taken = det.take();
        let times: Vec<f64> = taken.iter().map(|r| r.frame_time_ms).collect();
        assert_eq!(times, [48.0, 64.0, 80.0]);
        assert!(det.is_empty());
        assert_eq!(det.len(), 0);
        assert!(det.take().is_empty());
        // Counters survive a take.
        assert_eq!(det.total(), 5);
        assert_eq!(det.dropped(), 2);

        // A check without divergence changes nothing.
        assert!(!det.check(96.0, 6, &[0.0], &[0.0], None));
        assert_eq!(det.total(), 5);
        assert!(det.check(112.0, 7, &[0.0], &[1.0], None));
        assert_eq!(det.len(), 1);
        assert_eq!(det.total(), 6);
        assert_eq!(det.dropped(), 2);
    }

    #[test]
    fn zero_capacity_keeps_nothing() {
        let mut det = DivergenceDetector::new(config(&[], 0.01, 0, &[]));
        assert!(det.check(0.0, 0, &[0.0], &[1.0], None));
        assert!(det.is_empty());
        assert_eq!(det.total(), 1);
        assert_eq!(det.dropped(), 1);
    }

    #[test]
    fn config_json_camel_case_and_defaults() {
        let full: DivergenceConfig = serde_json::from_value(json!({
            "thresholds": [0.5, 0.25],
            "defaultThreshold": 0.125,
            "capacity": 64,
            "angles": [2, 6],
        }))
        .unwrap();
        assert_eq!(full, config(&[0.5, 0.25], 0.125, 64, &[2, 6]));
        assert!(full.is_angle(6));
        assert!(!full.is_angle(0));

        let empty: DivergenceConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(empty, config(&[], 0.01, 256, &[]));
        assert_eq!(empty, DivergenceConfig::default());

        let partial: DivergenceConfig = serde_json::from_str(r#"{"capacity": 8, "angles": [2]}"#).unwrap();
        assert_eq!(partial, config(&[], 0.01, 8, &[2]));

        assert_eq!(
            serde_json::to_value(config(&[0.5], 0.25, 4, &[2])).unwrap(),
            json!({"thresholds": [0.5], "defaultThreshold": 0.25, "capacity": 4, "angles": [2]})
        );
    }

    #[test]
    fn validate_errors() {
        assert_eq!(DivergenceConfig::default().validate(), Ok(()));
        assert_eq!(config(&[0.0, f32::INFINITY, -0.0], 0.0, 1, &[]).validate(), Ok(()));

        assert_eq!(
            config(&[], -0.5, 8, &[]).validate(),
            Err(DivergenceConfigError::InvalidDefaultThreshold { value: -0.5 })
        );
        assert!(matches!(
            config(&[], f32::NAN, 8, &[]).validate(),
            Err(DivergenceConfigError::InvalidDefaultThreshold { value }) if value.is_nan()
        ));
        assert!(matches!(
            config(&[0.5, f32::NAN, -1.0], 0.01, 8, &[]).validate(),
            Err(DivergenceConfigError::InvalidThreshold { index: 1, value }) if value.is_nan()
        ));
        assert_eq!(
            config(&[0.5, 0.5, -1.0], 0.01, 8, &[]).validate(),
            Err(DivergenceConfigError::InvalidThreshold { index: 2, value: -1.0 })
        );
        assert_eq!(config(&[], 0.01, 0, &[]).validate(), Err(DivergenceConfigError::ZeroCapacity));
        assert_eq!(
            DivergenceConfigError::InvalidThreshold { index: 2, value: -1.0 }.to_string(),
            "divergence thresholds[2] must be a non-negative number, got -1"
        );
    }

    #[test]
    fn record_helpers() {
        let comp = |index, delta| ComponentDivergence { index, predicted: 0.0, authoritative: delta, delta };
        let record =
            |components| DivergenceRecord { frame_time_ms: 0.0, last_input_seq: 0, components, replayed_inputs: None };

        let r = record(vec![comp(0, 3.0), comp(1, -4.0), comp(2, 0.5)]);
        assert_eq!(r.position_error(), 5.0);
        assert_eq!(r.max_abs_delta(), 4.0);
        assert_eq!(r.component(2).unwrap().delta, 0.5);
        assert!(r.component(3).is_none());

        let r = record(vec![comp(1, -2.0), comp(5, -7.5)]);
        assert_eq!(r.position_error(), 2.0);
        assert_eq!(r.max_abs_delta(), 7.5);

        let r = record(vec![comp(3, 1.0)]);
        assert_eq!(r.position_error(), 0.0);

        let r = record(vec![]);
        assert_eq!(r.position_error(), 0.0);
        assert_eq!(r.max_abs_delta(), 0.0);

        let r = record(vec![comp(0, 1.0), comp(4, f32::NAN)]);
        assert_eq!(r.max_abs_delta(), f32::INFINITY);
    }

    #[test]
    fn record_serializes_camel_case() {
        let r = DivergenceRecord {
            frame_time_ms: 1234.5,
            last_input_seq: 9,
            components: vec![ComponentDivergence { index: 1, predicted: 0.25, authoritative: 1.5, delta: 1.25 }],
            replayed_inputs: Some((10, 12)),
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({
                "frameTimeMs": 1234.5,
                "lastInputSeq": 9,
                "components": [
                    {"index": 1, "predicted": 0.25, "authoritative": 1.5, "delta": 1.25}
                ],
                "replayedInputs": [10, 12],
            })
        );
        let none = DivergenceRecord { replayed_inputs: None, components: vec![], ..r };
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            r#"{"frameTimeMs":1234.5,"lastInputSeq":9,"components":[],"replayedInputs":null}"#
        );
    }

    proptest! {
        #[test]
        fn wrap_angle_in_range_and_congruent(a in -1e6_f32..=1e6_f32) {
            let w = wrap_angle(a);
            prop_assert!(w > -PI && w <= PI, "wrap_angle({}) = {}", a, w);
            let diff = f64::from(a) - f64::from(w);
            let turns = (diff / core::f64::consts::TAU).round();
            let off = (diff - turns * core::f64::consts::TAU).abs();
            // f32's 2π is off by ~1.7e-7 per turn; allow for that plus rounding.
            let tol = 1e-6 + f64::from(a.abs()) * 1e-7;
            prop_assert!(off <= tol, "wrap_angle({}) = {}: {} off a multiple of 2π", a, w, off);
        }

        #[test]
        fn angle_deltas_are_wrapped(p in -100.0_f32..100.0, a in -100.0_f32..100.0) {
            let mut det = DivergenceDetector::new(config(&[], 0.0, 1, &[0]));
            if det.check(0.0, 0, &[p], &[a], None) {
                let d = det.take()[0].components[0].delta;
                prop_assert!(d > -PI && d <= PI, "{} -> {}: {}", p, a, d);
            } else {
                prop_assert_eq!(wrap_angle(a - p), 0.0);
            }
        }
    }
}
