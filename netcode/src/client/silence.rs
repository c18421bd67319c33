//! How long the host may be silent before a client counts it as lost, learnt from the link.
//!
//! A fixed timeout is wrong both ways: long enough for a lossy, jittery home link it makes a
//! crash on a good link wait, short enough for a good link it takes a lossy one's hiccup for a
//! crash. [`SilenceWatch`] keeps the gaps between the host's frames over the last
//! [`WINDOW`] (snapshots come 30 times a second, so there are hundreds) and allows
//! [`GAP_FACTOR`] times the longest of them: a steady link's longest gap is a frame or two, a
//! lossy one's shows its bursts. The result is kept between a floor (the client's
//! `min_host_timeout`) and a ceiling (its `host_timeout`); until [`MIN_GAPS`] gaps were seen,
//! the ceiling.

use std::collections::VecDeque;
use std::time::Duration;

/// How far back the gaps count.
pub const WINDOW: Duration = Duration::from_secs(10);

/// The longest recent gap times this is the silence allowed.
pub const GAP_FACTOR: u32 = 3;

/// Gaps needed before the link is judged at all: a third of a second of snapshots. A link
/// judged on so few may be judged short of its bursts; a client that counts its host lost too
/// soon only asks the room or the rendezvous, whose word decides (see
/// [Before a claim](crate::migration#before-a-claim-asking-the-room)), and the longest gap
/// seen grows the allowance as the bursts come. A host's line cut in the first seconds after
/// a join is noticed in a third of the ceiling.
pub const MIN_GAPS: usize = 10;

/// The gaps between the host's frames over the last [`WINDOW`], kept for their maximum.
#[derive(Clone, Debug, Default)]
pub struct SilenceWatch {
    /// When the host was last heard.
    last: Option<Duration>,
    /// `(when, gap)` with falling gaps: the front is the longest gap in the window (a gap
    /// followed by a longer one can never be the longest again, and is dropped).
    longest: VecDeque<(Duration, Duration)>,
    /// Gaps seen since the last reset (up to [`MIN_GAPS`]).
    seen: usize,
}

impl SilenceWatch {
    /// A frame from the host arrived at `now`.
    pub fn heard(&mut self, now: Duration) {
        if let Some(last) = self.last.replace(now) {
            let gap = now.saturating_sub(last);
            while self.longest.back().is_some_and(|&(_, g)| g <= gap) {
                self.longest.pop_back();
            }
            self.longest.push_back((now, gap));
            self.seen = (self.seen + 1).min(MIN_GAPS);
        }
        while self.longest.front().is_some_and(|&(at, _)| now.saturating_sub(at) > WINDOW) {
            self.longest.pop_front();
        }
    }

    /// A new host, or a new link: what was learnt is of another path.
    pub fn reset(&mut self) {
        *self = SilenceWatch::default();
    }

    /// The silence after which a fellow peer's check of the room (it lost the host too)
    /// makes this client count the host lost at once: half what [`Self::timeout`] would
    /// allow, judged from the gaps seen so far even before [`MIN_GAPS`] (a link too new to be
    /// judged on its own), at least `floor` and at most half the `ceiling`.
    pub fn corroborated_after(&self, floor: Duration, ceiling: Duration) -> Duration {
        let half = ceiling / 2;
        let judged = match self.longest.front() {
            Some(&(_, gap)) => (gap * GAP_FACTOR / 2).min(half),
            None => half,
        };
        judged.max(floor.min(ceiling))
    }

    /// The silence allowed: [`GAP_FACTOR`] times the longest gap of the last [`WINDOW`], at
    /// least `floor`, at most `ceiling` (the ceiling until the link was judged).
    pub fn timeout(&self, floor: Duration, ceiling: Duration) -> Duration {
        let floor = floor.min(ceiling);
        match self.longest.front() {
            Some(&(_, gap)) if self.seen >= MIN_GAPS => (gap * GAP_FACTOR).clamp(floor, ceiling),
            _ => ceiling,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLOOR: Duration = Duration::from_millis(150);
    const CEILING: Duration = Duration::from_millis(500);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_steady_link_gets_the_floor_a_lossy_one_more_and_an_unjudged_one_the_ceiling() {
        let mut w = SilenceWatch::default();
        assert_eq!(w.timeout(FLOOR, CEILING), CEILING, "nothing heard yet");
        let mut t = ms(0);
        for _ in 0..5 {
            t += ms(33);
            w.heard(t);
        }
        assert_eq!(w.timeout(FLOOR, CEILING), CEILING, "too few gaps to judge");
        assert_eq!(w.corroborated_after(FLOOR, CEILING), FLOOR, "but enough to judge a fellow's word by");
        for _ in 0..100 {
            t += ms(33);
            w.heard(t);
        }
        assert_eq!(w.timeout(FLOOR, CEILING), FLOOR, "3 × 33 ms is under the floor");
        // Two frames lost in a row: a 100 ms gap, and the silence allowed grows to 300 ms.
        t += ms(100);
        w.heard(t);
        assert_eq!(w.timeout(FLOOR, CEILING), ms(300));
        assert_eq!(w.corroborated_after(FLOOR, CEILING), FLOOR, "half of 300 ms, the floor");
        // A burst past what the ceiling allows: the ceiling.
        t += ms(400);
        w.heard(t);
        assert_eq!(w.timeout(FLOOR, CEILING), CEILING);
        assert_eq!(w.corroborated_after(FLOOR, CEILING), CEILING / 2);
        // Ten seconds of steady frames later, the bursts have aged out.
        for _ in 0..310 {
            t += ms(33);
            w.heard(t);
        }
        assert_eq!(w.timeout(FLOOR, CEILING), FLOOR);
        w.reset();
        assert_eq!(w.timeout(FLOOR, CEILING), CEILING, "a new host is judged afresh");
        assert_eq!(w.corroborated_after(FLOOR, CEILING), CEILING / 2);
    }

    proptest::proptest! {
        #[test]
        fn the_longest_gap_kept_is_the_longest_of_the_window(gaps in proptest::collection::vec(1u64..400, 1..600)) {
            let mut w = SilenceWatch::default();
            let mut t = ms(0);
            let mut all = Vec::new();
            w.heard(t);
            for g in gaps {
                t += ms(g);
                w.heard(t);
                all.push((t, ms(g)));
                let longest = all.iter().filter(|(at, _)| t.saturating_sub(*at) <= WINDOW).map(|(_, g)| *g).max();
                proptest::prop_assert_eq!(w.longest.front().map(|&(_, g)| g), longest);
            }
        }
    }
}
