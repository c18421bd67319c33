//! When a dropped client dials again: at once, then 2, 10 and 30 s after each failed
//! attempt, and after four failures it stops and says it cannot connect (a player may try
//! again by hand, [`Reconnect::retry`]).
//!
//! A drop is the session ending by a code that says the link, not a rule, ended it
//! ([`is_drop`]): the host's silence, missed pings, a latency beyond the limit, a failed
//! host. A refusal (a wrong password, a full lobby, another version, a flood, a slot taken
//! by a newer connection) is final, and so is a normal close. [`Reconnect`] is only the
//! timing; the driver builds a fresh transport for each attempt and hands it to
//! [`ClientCore::reconnect`](super::ClientCore::reconnect), which says hello again with the
//! session token of the slot it had.

use std::time::Duration;

use crate::session::close;

/// The waits before each attempt: the first at once, each next one after the last failed.
pub const RECONNECT_DELAYS: [Duration; 4] =
    [Duration::ZERO, Duration::from_secs(2), Duration::from_secs(10), Duration::from_secs(30)];

/// How long an attempt may take to be welcomed before it counts as failed.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// Whether a session that ended with `code` ended by a drop, which a client dials back from.
pub fn is_drop(code: u16) -> bool {
    matches!(code, close::HEARTBEAT | close::MISSED_PINGS | close::LATENCY | close::INTERNAL)
}

/// Where a reconnection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redial {
    /// Attempt `attempt` (1-based) is due at `at`.
    Waiting {
        /// Which attempt.
        attempt: u8,
        /// When it is due.
        at: Duration,
    },
    /// Attempt `attempt` is under way since `since`.
    Dialing {
        /// Which attempt.
        attempt: u8,
        /// When it started.
        since: Duration,
    },
    /// Every attempt failed; the last at `at`.
    GaveUp {
        /// When the last attempt failed.
        at: Duration,
    },
}

/// The timing of one reconnection (see the module docs).
#[derive(Clone, Debug)]
pub struct Reconnect {
    dropped_at: Duration,
    state: Redial,
    attempts: u32,
}

impl Reconnect {
    /// A client dropped at `dropped_at`: the first attempt is due at once.
    pub fn new(dropped_at: Duration) -> Self {
        Reconnect {
            dropped_at,
            state: Redial::Waiting { attempt: 1, at: dropped_at + RECONNECT_DELAYS[0] },
            attempts: 0,
        }
    }

    /// When the client dropped.
    pub fn dropped_at(&self) -> Duration {
        self.dropped_at
    }

    /// Where it stands.
    pub fn state(&self) -> Redial {
        self.state
    }

    /// How many attempts started, the manual ones too.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Whether an attempt is due at `now`: if so it starts (the caller dials), and its number is returned.
    pub fn poll(&mut self, now: Duration) -> Option<u8> {
        match self.state {
            Redial::Waiting { attempt, at } if now >= at => {
                self.state = Redial::Dialing { attempt, since: now };
                self.attempts += 1;
                Some(attempt)
            }
            _ => None,
        }
    }

    /// Whether the attempt under way has had [`ATTEMPT_TIMEOUT`] by `now`.
    pub fn timed_out(&self, now: Duration) -> bool {
        matches!(self.state, Redial::Dialing { since, .. } if now.saturating_sub(since) >= ATTEMPT_TIMEOUT)
    }

    /// The attempt under way failed at `now`: the next one waits its delay, or, after the
    /// last, the reconnection gives up.
    pub fn failed(&mut self, now: Duration) {
        if let Redial::Dialing { attempt, .. } = self.state {
            self.state = match RECONNECT_DELAYS.get(attempt as usize) {
                Some(delay) => Redial::Waiting { attempt: attempt + 1, at: now + *delay },
                None => Redial::GaveUp { at: now },
            };
        }
    }

    /// Stops at `now`: what ended the attempt is final (a refusal).
    pub fn give_up(&mut self, now: Duration) {
        self.state = Redial::GaveUp { at: now };
    }

    /// The player asks to try again after it gave up: one more round of attempts, from now.
    pub fn retry(&mut self, now: Duration) {
        if let Redial::GaveUp { .. } = self.state {
            self.state = Redial::Waiting { attempt: 1, at: now };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: fn(u64) -> Duration = Duration::from_secs;

    /// Fails every attempt as soon as it starts; returns when each started.
    fn starts(r: &mut Reconnect, until: Duration) -> Vec<Duration> {
        let mut out = Vec::new();
        let mut now = r.dropped_at();
        while now <= until {
            if r.poll(now).is_some() {
                out.push(now);
                r.failed(now);
            }
            now += Duration::from_millis(250);
        }
        out
    }

    #[test]
    fn attempts_go_at_once_then_after_2_10_and_30_s_and_then_it_gives_up() {
        let mut r = Reconnect::new(S(5));
        assert_eq!(starts(&mut r, S(200)), [S(5), S(7), S(17), S(47)]);
        assert_eq!(r.state(), Redial::GaveUp { at: S(47) });
        assert_eq!(r.attempts(), 4);
        r.retry(S(300));
        assert_eq!(r.poll(S(300)), Some(1), "a retry by hand starts a new round at once");
    }

    #[test]
    fn an_attempt_times_out_and_a_refusal_ends_it() {
        let mut r = Reconnect::new(S(0));
        assert_eq!(r.poll(S(0)), Some(1));
        assert!(!r.timed_out(S(9)));
        assert!(r.timed_out(ATTEMPT_TIMEOUT));
        r.failed(ATTEMPT_TIMEOUT);
        assert_eq!(r.poll(ATTEMPT_TIMEOUT + S(1)), None, "the second waits 2 s");
        assert_eq!(r.poll(ATTEMPT_TIMEOUT + S(2)), Some(2));
        r.give_up(S(13));
        assert_eq!(r.poll(S(100)), None);
        assert!(matches!(r.state(), Redial::GaveUp { .. }));
    }

    #[test]
    fn only_a_drop_is_dialed_back() {
        for code in [close::HEARTBEAT, close::MISSED_PINGS, close::LATENCY, close::INTERNAL] {
            assert!(is_drop(code), "{code}");
        }
        for code in [
            close::NORMAL,
            close::PROTOCOL,
            close::BAD_PASSWORD,
            close::REPLACED,
            close::VERSION,
            close::RATE,
            close::SERVER_FULL,
        ] {
            assert!(!is_drop(code), "{code}");
        }
    }
}
