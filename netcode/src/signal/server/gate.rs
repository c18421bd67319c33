//! Who may connect, and how fast they may speak: a cap on each address's open connections, on
//! its websocket upgrades, lookups (`GET /ice`, `GET /rooms`) and websocket messages a second,
//! and one on all connections together (what the open-files limit allows), so that one address
//! cannot hold every socket, or flood the relay, and lock the players of every lobby out.

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
    /// Lookups (`GET /ice`, `GET /rooms`, `GET /rooms/CODE`) a second from one address, on
    /// average (bursts of as many again); past it, HTTP 429.
    pub lookups_per_second: f64,
    /// Messages a second one peer's websocket may send (signals and keep-alives), on average
    /// (bursts of twice that); past it, its socket is closed (code 1008, with the reason).
    pub messages_per_second: f64,
    /// Messages a second all of one address's websockets may send together, on average
    /// (bursts of twice that): many sockets from one address flood no faster than this.
    pub messages_per_address: f64,
    /// How long a websocket may say nothing (a live peer's keep-alive comes every
    /// [`crate::signal::KEEP_ALIVE`]) before it is closed.
    pub idle: Duration,
}

/// [`Limits::per_address`] by default.
pub const DEFAULT_PER_ADDRESS: usize = 64;

/// [`Limits::upgrades_per_second`] by default.
pub const DEFAULT_UPGRADES_PER_SECOND: f64 = 20.0;

/// [`Limits::request_deadline`] by default.
pub const DEFAULT_REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// [`Limits::lookups_per_second`] by default: a player looks up a few times a join, and a
/// successor a few times a takeover.
pub const DEFAULT_LOOKUPS_PER_SECOND: f64 = 20.0;

/// [`Limits::messages_per_second`] by default: four keep-alives a second, and a handshake's
/// offer or answer with its candidates (a dozen messages) for each peer a join links to.
pub const DEFAULT_MESSAGES_PER_SECOND: f64 = 50.0;

/// [`Limits::messages_per_address`] by default: a home of several players, all joining at once.
pub const DEFAULT_MESSAGES_PER_ADDRESS: f64 = 400.0;

/// [`Limits::idle`] by default: more than a hundred keep-alives missed.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30);

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
            lookups_per_second: DEFAULT_LOOKUPS_PER_SECOND,
            messages_per_second: DEFAULT_MESSAGES_PER_SECOND,
            messages_per_address: DEFAULT_MESSAGES_PER_ADDRESS,
            idle: DEFAULT_IDLE,
        }
    }
}

/// A token bucket: what may still be done now, refilled at a rate up to a burst.
#[derive(Clone, Copy, Debug)]
pub(super) struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// A full bucket of `burst`.
    pub(super) fn full(burst: f64, now: Instant) -> Bucket {
        Bucket { tokens: burst, at: now }
    }

    /// Takes one if there is one at `now`, refilling at `rate` a second up to `burst`.
    pub(super) fn take(&mut self, rate: f64, burst: f64, now: Instant) -> bool {
        self.tokens = (self.tokens + now.saturating_duration_since(self.at).as_secs_f64() * rate).min(burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return true;
        }
        false
    }

    /// Whether it would be full at `now`.
    fn refilled(&self, rate: f64, burst: f64, now: Instant) -> bool {
        self.tokens + now.saturating_duration_since(self.at).as_secs_f64() * rate >= burst
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

/// How many addresses beyond the connections' own are counted before those that spent nothing
/// are forgotten.
const FORGET_PAST: usize = 4096;

/// How often an address that is refused is logged.
const WARN_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug)]
struct Address {
    open: usize,
    /// The upgrades, lookups and websocket messages it may still make.
    upgrades: Bucket,
    lookups: Bucket,
    messages: Bucket,
    /// When it was last logged as refused.
    warned: Option<Instant>,
}

/// What an address may do, and when it was last refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Act {
    /// Open a websocket.
    Upgrade,
    /// Ask a lookup route.
    Lookup,
    /// Send a message on one of its websockets.
    Message,
}

impl Limits {
    /// An act's rate a second and burst, for one address.
    fn rate(&self, act: Act) -> (f64, f64) {
        match act {
            Act::Upgrade => (self.upgrades_per_second, self.upgrades_per_second * 2.0),
            Act::Lookup => (self.lookups_per_second, self.lookups_per_second * 2.0),
            Act::Message => (self.messages_per_address, self.messages_per_address * 2.0),
        }
    }
}

impl Address {
    fn new(limits: &Limits, now: Instant) -> Address {
        let full = |act| Bucket::full(limits.rate(act).1, now);
        Address {
            open: 0,
            upgrades: full(Act::Upgrade),
            lookups: full(Act::Lookup),
            messages: full(Act::Message),
            warned: None,
        }
    }

    fn bucket(&mut self, act: Act) -> &mut Bucket {
        match act {
            Act::Upgrade => &mut self.upgrades,
            Act::Lookup => &mut self.lookups,
            Act::Message => &mut self.messages,
        }
    }

    /// Whether forgetting it now would give it nothing: it holds no connection and each of its
    /// buckets is full again (else closing its sockets would give it a new burst).
    fn spent_nothing(&self, limits: &Limits, now: Instant) -> bool {
        self.open == 0
            && [(Act::Upgrade, &self.upgrades), (Act::Lookup, &self.lookups), (Act::Message, &self.messages)]
                .iter()
                .all(|(act, bucket)| {
                    let (rate, burst) = limits.rate(*act);
                    bucket.refilled(rate, burst, now)
                })
    }
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
            if a.spent_nothing(&self.gate.limits, Instant::now()) {
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
        let total_full = counts.open >= self.limits.total;
        let a = counts.by_address.entry(ip).or_insert_with(|| Address::new(&self.limits, now));
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

    /// Whether `ip` may `act` now: within its rate (refusals logged once a minute). `ip` is the
    /// address a request came from, or the one a trusted balancer forwarded it for.
    pub(super) fn allows(&self, ip: IpAddr, act: Act, now: Instant) -> bool {
        let Ok(mut counts) = self.counts.lock() else { return false };
        let (rate, burst) = self.limits.rate(act);
        let counts = &mut *counts;
        if !counts.by_address.contains_key(&ip) {
            // An address a balancer forwarded for holds no connection of its own here: it is
            // counted all the same, and forgotten with the others that spent nothing.
            if counts.by_address.len() >= FORGET_PAST + self.limits.total {
                counts.by_address.retain(|_, a| !a.spent_nothing(&self.limits, now));
            }
            counts.by_address.insert(ip, Address::new(&self.limits, now));
        }
        let Some(a) = counts.by_address.get_mut(&ip) else { return false };
        if a.bucket(act).take(rate, burst, now) {
            return true;
        }
        if a.warned.is_none_or(|at| now.saturating_duration_since(at) >= WARN_EVERY) {
            a.warned = Some(now);
            let what = match act {
                Act::Upgrade => "opens websockets",
                Act::Lookup => "looks rooms and ICE servers up",
                Act::Message => "sends websocket messages",
            };
            tracing::warn!("{ip} {what} faster than {rate} a second: refused (said once a minute)");
        }
        false
    }

    /// What it holds connections and addresses to.
    pub(super) fn limits(&self) -> &Limits {
        &self.limits
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
        Limits { per_address, upgrades_per_second: 2.0, total, lookups_per_second: 3.0, ..Limits::default() }
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
        let burst = (0..10).filter(|_| gate.allows(ip, Act::Upgrade, t0)).count();
        assert_eq!(burst, 4, "two a second, a burst of two seconds' worth");
        assert!(gate.allows(ip, Act::Upgrade, t0 + Duration::from_millis(500)), "one more half a second on");
        assert!(!gate.allows(ip, Act::Upgrade, t0 + Duration::from_millis(500)));
        // Lookups have a bucket of their own: the upgrades spent none of it.
        let lookups = (0..10).filter(|_| gate.allows(ip, Act::Lookup, t0 + Duration::from_millis(500))).count();
        assert_eq!(lookups, 6, "three a second, a burst of two seconds' worth");
        let forwarded: IpAddr = [10, 0, 0, 9].into();
        assert_eq!((0..10).filter(|_| gate.allows(forwarded, Act::Lookup, t0)).count(), 6, "a forwarded one alike");
    }

    #[test]
    fn an_address_that_spent_its_burst_keeps_it_spent_across_its_connections() {
        let gate = Gate::new(limits(10, 10));
        let ip: IpAddr = [10, 0, 0, 1].into();
        let t0 = Instant::now();
        let first = gate.admit(ip, t0).unwrap();
        while gate.allows(ip, Act::Lookup, t0) {}
        drop(first);
        let _second = gate.admit(ip, t0).unwrap();
        assert!(!gate.allows(ip, Act::Lookup, t0), "a new connection is no new burst");
    }

    #[test]
    fn the_total_follows_the_open_files_limit() {
        assert_eq!(connections_allowed(1024), 960);
        assert_eq!(connections_allowed(10), 1);
        let before = open_files_limit();
        assert!(raise_open_files_limit() >= before);
    }
}
