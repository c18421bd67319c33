//! Who may connect: a cap on each address's open connections and on its websocket upgrades a
//! second, and one on all connections together (what the open-files limit allows), so that
//! one address cannot hold every socket and lock the players of every lobby out.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many connections each address and the server may hold, and how fast an address may
/// open websockets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// Open connections from one address (HTTP requests under way and websockets): a home's
    /// players share its address, so this is well above a lobby's size.
    pub per_address: usize,
    /// Websocket upgrades a second from one address, on average (bursts of as many again).
    pub upgrades_per_second: f64,
    /// Open connections in all: past it, new ones are refused at once.
    pub total: usize,
    /// How long a connection has to complete its HTTP request (a websocket's upgrade
    /// included) before it is closed.
    pub request_deadline: Duration,
}

/// [`Limits::per_address`] by default.
pub const DEFAULT_PER_ADDRESS: usize = 64;

/// [`Limits::upgrades_per_second`] by default.
pub const DEFAULT_UPGRADES_PER_SECOND: f64 = 20.0;

/// [`Limits::request_deadline`] by default.
pub const DEFAULT_REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// Open files kept for the server's own use (its listener, logs, the runtime) when
/// [`Limits::total`] follows the open-files limit.
pub const RESERVED_FILES: u64 = 64;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_address: DEFAULT_PER_ADDRESS,
            upgrades_per_second: DEFAULT_UPGRADES_PER_SECOND,
            total: connections_allowed(open_files_limit()),
            request_deadline: DEFAULT_REQUEST_DEADLINE,
        }
    }
}

/// The connections a server may hold under an open-files limit of `files`.
pub fn connections_allowed(files: u64) -> usize {
    usize::try_from(files.saturating_sub(RESERVED_FILES)).unwrap_or(usize::MAX).max(1)
}

/// This process's open-files limit (its soft limit); 1,024 where it cannot be read.
pub fn open_files_limit() -> u64 {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: `getrlimit` writes the limit into the struct it is given.
        if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            return limit.rlim_cur;
        }
    }
    1024
}

/// Raises this process's soft open-files limit to its hard limit; the limit now.
pub fn raise_open_files_limit() -> u64 {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: as above; `setrlimit` reads the struct it is given.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur < limit.rlim_max {
                let raised = libc::rlimit { rlim_cur: limit.rlim_max, rlim_max: limit.rlim_max };
                let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &raised);
            }
        }
    }
    open_files_limit()
}

/// Why a connection was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// Its address holds [`Limits::per_address`] connections already.
    Address,
    /// The server holds [`Limits::total`].
    Full,
}

/// How often an address that is refused is logged.
const WARN_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct Address {
    open: usize,
    /// Upgrades it may still make now, and when that was worked out.
    tokens: f64,
    at: Instant,
    /// When it was last logged as refused.
    warned: Option<Instant>,
}

#[derive(Debug, Default)]
struct Counts {
    by_address: HashMap<IpAddr, Address>,
    open: usize,
}

/// The counts of open connections and upgrades, by address.
#[derive(Debug)]
pub(super) struct Gate {
    limits: Limits,
    counts: Mutex<Counts>,
}

/// An open connection, counted until dropped (a websocket holds it for as long as it is open).
#[derive(Debug)]
pub(super) struct Ticket {
    gate: Arc<Gate>,
    ip: IpAddr,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let Ok(mut counts) = self.gate.counts.lock() else { return };
        counts.open = counts.open.saturating_sub(1);
        if let Some(a) = counts.by_address.get_mut(&self.ip) {
            a.open = a.open.saturating_sub(1);
            // Forgotten when it holds nothing and its upgrades are back to a full burst (else
            // closing its sockets would give it a new burst).
            let rate = self.gate.limits.upgrades_per_second;
            let refilled = a.tokens + Instant::now().saturating_duration_since(a.at).as_secs_f64() * rate;
            if a.open == 0 && refilled >= rate * 2.0 {
                counts.by_address.remove(&self.ip);
            }
        }
    }
}

impl Gate {
    pub(super) fn new(limits: Limits) -> Arc<Gate> {
        Arc::new(Gate { limits, counts: Mutex::new(Counts::default()) })
    }

    /// A new connection from `ip`: its ticket, or why it is refused (logged once a minute per
    /// address).
    pub(super) fn admit(self: &Arc<Gate>, ip: IpAddr, now: Instant) -> Result<Ticket, Refusal> {
        let mut counts = self.counts.lock().map_err(|_| Refusal::Full)?;
        let burst = self.limits.upgrades_per_second * 2.0;
        let total_full = counts.open >= self.limits.total;
        let a = counts.by_address.entry(ip).or_insert(Address { open: 0, tokens: burst, at: now, warned: None });
        let refusal = if total_full {
            Some(Refusal::Full)
        } else if a.open >= self.limits.per_address {
            Some(Refusal::Address)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            if a.warned.is_none_or(|at| now.saturating_duration_since(at) >= WARN_EVERY) {
                a.warned = Some(now);
                match refusal {
                    Refusal::Address => tracing::warn!(
                        "{ip} holds {} connections, the most one address may: its new ones are refused \
                         (said once a minute)",
                        a.open
                    ),
                    Refusal::Full => tracing::warn!(
                        "the server holds {} connections, the most it may: new ones are refused (said once a \
                         minute per address; {ip} among them)",
                        self.limits.total
                    ),
                }
            }
            return Err(refusal);
        }
        a.open += 1;
        counts.open += 1;
        Ok(Ticket { gate: self.clone(), ip })
    }

    /// Whether `ip` may open a websocket now ([`Limits::upgrades_per_second`]).
    pub(super) fn upgrade(&self, ip: IpAddr, now: Instant) -> bool {
        let Ok(mut counts) = self.counts.lock() else { return false };
        let (rate, burst) = (self.limits.upgrades_per_second, self.limits.upgrades_per_second * 2.0);
        let Some(a) = counts.by_address.get_mut(&ip) else { return false };
        a.tokens = (a.tokens + now.saturating_duration_since(a.at).as_secs_f64() * rate).min(burst);
        a.at = now;
        if a.tokens >= 1.0 {
            a.tokens -= 1.0;
            return true;
        }
        if a.warned.is_none_or(|at| now.saturating_duration_since(at) >= WARN_EVERY) {
            a.warned = Some(now);
            tracing::warn!("{ip} opens websockets faster than {rate} a second: refused (said once a minute)");
        }
        false
    }

    /// Open connections now.
    #[cfg(test)]
    fn open(&self) -> usize {
        self.counts.lock().map_or(0, |c| c.open)
    }
}

impl Ticket {
    pub(super) fn ip(&self) -> IpAddr {
        self.ip
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_address: usize, total: usize) -> Limits {
        Limits { per_address, upgrades_per_second: 2.0, total, request_deadline: DEFAULT_REQUEST_DEADLINE }
    }

    #[test]
    fn an_address_at_its_cap_is_refused_and_others_are_not() {
        let gate = Gate::new(limits(2, 100));
        let (a, b): (IpAddr, IpAddr) = ([10, 0, 0, 1].into(), [10, 0, 0, 2].into());
        let now = Instant::now();
        let held = [gate.admit(a, now).expect("first"), gate.admit(a, now).expect("second")];
        assert_eq!(gate.admit(a, now).err(), Some(Refusal::Address));
        assert!(gate.admit(b, now).is_ok(), "another address gets in");
        drop(held);
        assert!(gate.admit(a, now).is_ok(), "a closed connection frees its place");
        assert_eq!(gate.open(), 0, "every ticket dropped");
    }

    #[test]
    fn the_server_at_its_total_refuses_everyone() {
        let gate = Gate::new(limits(10, 2));
        let now = Instant::now();
        let _held = [gate.admit([10, 0, 0, 1].into(), now).unwrap(), gate.admit([10, 0, 0, 2].into(), now).unwrap()];
        assert_eq!(gate.admit([10, 0, 0, 3].into(), now).err(), Some(Refusal::Full));
    }

    #[test]
    fn upgrades_come_at_the_rate_with_a_burst() {
        let gate = Gate::new(limits(10, 10));
        let ip: IpAddr = [10, 0, 0, 1].into();
        let t0 = Instant::now();
        let _held = gate.admit(ip, t0).unwrap();
        let burst = (0..10).filter(|_| gate.upgrade(ip, t0)).count();
        assert_eq!(burst, 4, "two a second, a burst of two seconds' worth");
        assert!(gate.upgrade(ip, t0 + Duration::from_millis(500)), "one more half a second on");
        assert!(!gate.upgrade(ip, t0 + Duration::from_millis(500)));
    }

    #[test]
    fn the_total_follows_the_open_files_limit() {
        assert_eq!(connections_allowed(1024), 960);
        assert_eq!(connections_allowed(10), 1);
        let before = open_files_limit();
        assert!(raise_open_files_limit() >= before);
    }
}
