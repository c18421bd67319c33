//! The simulation's seeded random number generator: SplitMix64, serialisable and bit-exact everywhere.
//!
//! Everything random in the simulation (spawn points, spread, bot decisions, loot)
//! draws from a [`SplitMix64`] owned by the host and stored in every checkpoint, so a
//! successor restored from a dump draws the very same numbers. Its whole state is one
//! `u64` ([`SplitMix64::state`]); there is no hidden buffering, so `state` before a
//! draw fully determines that draw.
//!
//! The algorithm is Steele, Lea and Flood's SplitMix64 exactly as in the reference C
//! (`splitmix64.c` by Sebastiano Vigna): add the golden gamma `0x9E3779B97F4A7C15`,
//! then mix. It implements [`rand_core::RngCore`] (0.9) for code that wants the `rand`
//! ecosystem, plus a few float/int helpers defined here bit-exactly so that no
//! behaviour depends on another crate's version:
//!
//! | helper                  | draws   | definition                                             |
//! |-------------------------|---------|--------------------------------------------------------|
//! | [`next_u64`]            | 1 `u64` | the reference output                                   |
//! | [`next_u32`]            | 1 `u64` | its high 32 bits                                       |
//! | [`SplitMix64::next_f32`]| 1 `u64` | top 24 bits × 2⁻²⁴, in `[0, 1)`                        |
//! | [`SplitMix64::below`]   | ≥ 1     | Lemire's unbiased multiply-shift on `next_u32`         |
//! | [`SplitMix64::chance`]  | 1 `u64` | `next_f32() < p`                                       |
//! | [`fill_bytes`]          | ⌈n/8⌉   | each `next_u64`, little-endian, last one truncated     |
//!
//! No helper uses transcendental functions, so results do not depend on the platform's
//! libm.
//!
//! [`next_u64`]: rand_core::RngCore::next_u64
//! [`next_u32`]: rand_core::RngCore::next_u32
//! [`fill_bytes`]: rand_core::RngCore::fill_bytes

use rand_core::{RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// The golden-ratio increment of SplitMix64.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// A SplitMix64 generator: 64 bits of state, period 2⁶⁴, passes BigCrush.
///
/// Not cryptographic: do not derive session tokens or lobby codes from it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed` (every `u64`, including 0, is a good seed).
    pub const fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The whole internal state; [`SplitMix64::from_state`] resumes from it.
    pub const fn state(&self) -> u64 {
        self.state
    }

    /// Resumes a generator whose [`SplitMix64::state`] was `state`.
    ///
    /// Same as [`SplitMix64::new`]: SplitMix64's seed *is* its state.
    pub const fn from_state(state: u64) -> Self {
        Self { state }
    }

    /// The next output of the reference algorithm (also [`RngCore::next_u64`]).
    pub const fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A float uniformly spread over `[0, 1)` in steps of 2⁻²⁴: the top 24 bits of one
    /// `next_u64`, so every value is exactly representable and 1.0 is never returned.
    pub fn next_f32(&mut self) -> f32 {
        const SCALE: f32 = 1.0 / (1u32 << 24) as f32;
        (self.next() >> 40) as f32 * SCALE
    }

    /// A float in `[lo, hi)` from one [`SplitMix64::next_f32`]: `lo + (hi - lo) * u`.
    ///
    /// Rounding could land that product on `hi` itself; it is then pulled down to the
    /// largest `f32` below `hi`, so the result is always `< hi`. If `hi <= lo` (or either
    /// is NaN) returns `lo`, still consuming one draw so the sequence does not shift.
    pub fn range_f32(&mut self, lo: f32, hi: f32) -> f32 {
        let u = self.next_f32();
        if hi.partial_cmp(&lo) != Some(core::cmp::Ordering::Greater) {
            return lo;
        }
        let x = lo + (hi - lo) * u;
        if x < hi { x } else { hi.next_down() }
    }

    /// A uniformly distributed integer in `[0, n)`, without modulo bias.
    ///
    /// Lemire's method ("Fast random integer generation in an interval", 2019) on
    /// [`RngCore::next_u32`]: usually one draw, occasionally more (rejections happen
    /// with probability below `n / 2³²`). `below(0)` returns 0 without drawing.
    pub fn below(&mut self, n: u32) -> u32 {
        if n == 0 {
            return 0;
        }
        let mut m = u64::from(self.next_u32()) * u64::from(n);
        if (m as u32) < n {
            // 2³² mod n: the number of low products that would bias the result.
            let threshold = n.wrapping_neg() % n;
            while (m as u32) < threshold {
                m = u64::from(self.next_u32()) * u64::from(n);
            }
        }
        (m >> 32) as u32
    }

    /// `true` with probability `p` (clamped: `p <= 0` never, `p >= 1` always).
    ///
    /// Always consumes exactly one draw, whatever `p` is, so branches that roll with
    /// different odds stay in step.
    pub fn chance(&mut self, p: f32) -> bool {
        self.next_f32() < p
    }
}

impl RngCore for SplitMix64 {
    fn next_u32(&mut self) -> u32 {
        (self.next() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.next()
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        let mut chunks = dst.chunks_exact_mut(8);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.next().to_le_bytes());
        }
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            let bytes = self.next().to_le_bytes();
            tail.copy_from_slice(&bytes[..tail.len()]);
        }
    }
}

impl SeedableRng for SplitMix64 {
    /// The state, little-endian.
    type Seed = [u8; 8];

    fn from_seed(seed: Self::Seed) -> Self {
        Self::new(u64::from_le_bytes(seed))
    }

    /// Same as [`SplitMix64::new`] (the default would scramble the seed with PCG first).
    fn seed_from_u64(state: u64) -> Self {
        Self::new(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Golden outputs of the reference algorithm. Seed 0 from the brief; seed 1234567
    // computed with an independent Python transcription of splitmix64.c (its first
    // output, 6457827717110365317, is also the value quoted for this seed in the
    // literature).
    const SEED_0: [u64; 5] = [
        0xE220_A839_7B1D_CDAF,
        0x6E78_9E6A_A1B9_65F4,
        0x06C4_5D18_8009_454F,
        0xF88B_B8A8_724C_81EC,
        0x1B39_896A_51A8_749B,
    ];
    const SEED_1234567: [u64; 5] = [
        0x599E_D017_FB08_FC85,
        0x2C73_F084_5854_0FA5,
        0x883E_BCE5_A3F2_7C77,
        0x3FBE_F740_E917_7B3F,
        0xE3B8_3467_08CB_5ECD,
    ];

    #[test]
    fn matches_the_reference_outputs() {
        let mut r = SplitMix64::new(0);
        assert_eq!(SEED_0.map(|_| r.next_u64()), SEED_0);
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(SEED_1234567.map(|_| r.next_u64()), SEED_1234567);
        assert_eq!(SEED_1234567[0], 6_457_827_717_110_365_317);
    }

    #[test]
    fn next_u32_is_the_high_half() {
        let mut r = SplitMix64::new(0);
        assert_eq!([r.next_u32(), r.next_u32(), r.next_u32()], [0xE220_A839, 0x6E78_9E6A, 0x06C4_5D18]);
    }

    #[test]
    fn fill_bytes_is_little_endian_u64_chunks() {
        let mut r = SplitMix64::new(0);
        let mut buf = [0u8; 11];
        r.fill_bytes(&mut buf);
        assert_eq!(buf, [0xAF, 0xCD, 0x1D, 0x7B, 0x39, 0xA8, 0x20, 0xE2, 0xF4, 0x65, 0xB9]);
        assert_eq!(r.next_u64(), SEED_0[2], "the partial tail consumed exactly one u64");
    }

    #[test]
    fn state_round_trips() {
        let mut a = SplitMix64::new(99);
        a.next_u64();
        let mut b = SplitMix64::from_state(a.state());
        assert_eq!(a, b);
        assert_eq!(a.next_u64(), b.next_u64());
        assert_eq!(SplitMix64::seed_from_u64(1_234_567).next_u64(), SEED_1234567[0]);
        assert_eq!(SplitMix64::from_seed(1_234_567u64.to_le_bytes()).next_u64(), SEED_1234567[0]);
    }

    #[test]
    fn serde_keeps_the_state() {
        let mut a = SplitMix64::new(5);
        a.next_u64();
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, format!("{{\"state\":{}}}", 5u64.wrapping_add(GAMMA)));
        let b: SplitMix64 = serde_json::from_str(&json).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn next_f32_uses_the_top_24_bits() {
        let mut r = SplitMix64::new(0);
        // 0xE220A8 / 2^24, 0x6E789E / 2^24, 0x06C45D / 2^24.
        assert_eq!(r.next_f32(), 14_819_496.0 / 16_777_216.0);
        assert_eq!(r.next_f32(), 7_239_838.0 / 16_777_216.0);
        assert_eq!(r.next_f32(), 443_485.0 / 16_777_216.0);
        let mut r = SplitMix64::new(1);
        for _ in 0..10_000 {
            let x = r.next_f32();
            assert!((0.0..1.0).contains(&x), "{x}");
        }
    }

    #[test]
    fn range_f32_stays_in_range() {
        let mut r = SplitMix64::new(0);
        // 0.88331079… of the way from -10 to 10.
        let x = r.range_f32(-10.0, 10.0);
        assert!((x - 7.666_216).abs() < 1e-5, "{x}");
        for _ in 0..10_000 {
            let x = r.range_f32(1.0, 1.000_001);
            assert!((1.0..1.000_001).contains(&x), "{x}");
        }
        let before = r.state();
        assert_eq!(r.range_f32(3.0, 3.0), 3.0);
        assert_eq!(r.range_f32(3.0, f32::NAN), 3.0);
        assert_eq!(r.state(), before.wrapping_add(GAMMA).wrapping_add(GAMMA), "degenerate ranges still draw once");
    }

    #[test]
    fn below_matches_lemire_by_hand() {
        // Expected values from the Python transcription of Lemire's method over the
        // high halves listed above.
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!([0; 8].map(|_| r.below(10)), [3, 1, 5, 2, 8, 4, 5, 2]);
        let mut r = SplitMix64::new(0);
        assert_eq!([0; 8].map(|_| r.below(6)), [5, 2, 0, 5, 0, 1, 1, 4]);
    }

    #[test]
    fn below_edges() {
        let mut r = SplitMix64::new(3);
        let before = r.state();
        assert_eq!(r.below(0), 0);
        assert_eq!(r.state(), before, "below(0) does not draw");
        for _ in 0..1_000 {
            assert_eq!(r.below(1), 0);
            assert!(r.below(u32::MAX) < u32::MAX);
        }
    }

    #[test]
    fn below_is_roughly_uniform() {
        let mut r = SplitMix64::new(7);
        let mut counts = [0u32; 6];
        for _ in 0..60_000 {
            counts[r.below(6) as usize] += 1;
        }
        // Expected 10,000 each; 5 sigma is about ±456.
        assert!(counts.iter().all(|&c| (9_500..10_500).contains(&c)), "{counts:?}");
    }

    #[test]
    fn chance_edges_and_rate() {
        let mut r = SplitMix64::new(11);
        let before = r.state();
        assert!(!r.chance(0.0));
        assert!(r.chance(1.0));
        assert!(!r.chance(-3.0));
        assert!(r.chance(7.0));
        assert_eq!(r.state(), before.wrapping_add(GAMMA.wrapping_mul(4)), "one draw each");
        let hits = (0..100_000).filter(|_| r.chance(0.25)).count();
        // Expected 25,000; 5 sigma is about ±685.
        assert!((24_300..25_700).contains(&hits), "{hits}");
    }
}
