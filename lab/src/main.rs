//! `vimp-netcond`: a link conditioner for the home-network lab (`scripts/lab.sh`).
//!
//! Linux here has no netem, so delay, jitter, reordering and loss are made in userspace: the
//! lab routes everything a namespace forwards into a TUN device, and this program reads each
//! IPv4 packet from it, drops it with the profile's probability, holds it for the profile's
//! delay plus a uniform jitter, and writes it back into the TUN device, where the kernel
//! routes it on. Packets are held independently, so jitter reorders them as a real path does.
//!
//! ```text
//! vimp-netcond --tun tun0 --down 10.1.0.0/24 --profile 50:10:1 [--up-profile D:J:L] [--seed N]
//! ```
//!
//! `--down` names the addresses on the far side of the access line (the home): packets to
//! them travel down, all others up. A profile is `DELAY_MS[:JITTER_MS[:LOSS_PERCENT]]`;
//! `--profile` sets both directions, `--up-profile` and `--down-profile` one. Every 5 s, and
//! on SIGTERM or SIGINT, it prints what it forwarded and dropped on stderr.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{Read, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How one direction of the line treats packets.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Profile {
    delay: Duration,
    jitter: Duration,
    /// Probability in [0, 1].
    loss: f64,
}

impl Profile {
    fn parse(text: &str) -> Result<Profile, String> {
        let mut parts = text.split(':');
        let number = |part: Option<&str>, what: &str| -> Result<f64, String> {
            match part {
                None => Ok(0.0),
                Some(p) => p
                    .parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| format!("profile {text:?}: {what} {p:?} is not a number ≥ 0")),
            }
        };
        let delay = number(parts.next(), "delay")?;
        let jitter = number(parts.next(), "jitter")?;
        let loss = number(parts.next(), "loss")?;
        if parts.next().is_some() {
            return Err(format!("profile {text:?}: DELAY_MS[:JITTER_MS[:LOSS_PERCENT]], no more"));
        }
        if loss > 100.0 {
            return Err(format!("profile {text:?}: loss {loss} % is over 100"));
        }
        Ok(Profile {
            delay: Duration::from_secs_f64(delay / 1e3),
            jitter: Duration::from_secs_f64(jitter / 1e3),
            loss: loss / 100.0,
        })
    }
}

/// An IPv4 network, `a.b.c.d/len`.
#[derive(Clone, Copy, Debug)]
struct Net {
    addr: u32,
    mask: u32,
}

impl Net {
    fn parse(text: &str) -> Result<Net, String> {
        let (addr, len) = text.split_once('/').unwrap_or((text, "32"));
        let addr: Ipv4Addr = addr.parse().map_err(|_| format!("--down {text:?}: not an IPv4 network"))?;
        let len: u32 =
            len.parse().ok().filter(|l| *l <= 32).ok_or_else(|| format!("--down {text:?}: prefix length 0–32"))?;
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        Ok(Net { addr: u32::from(addr) & mask, mask })
    }

    fn contains(&self, ip: u32) -> bool {
        ip & self.mask == self.addr
    }
}

/// xorshift64*: enough for loss and jitter, and the same run with the same seed.
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A packet waiting for its time, oldest first among equals.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Held {
    at: Instant,
    seq: u64,
    bytes: Vec<u8>,
}

#[derive(Default)]
struct Counts {
    forwarded: [AtomicU64; 2],
    dropped: [AtomicU64; 2],
}

struct Args {
    tun: String,
    down: Net,
    profiles: [Profile; 2],
    seed: u64,
}

const UP: usize = 0;
const DOWN: usize = 1;

fn parse_args() -> Result<Args, String> {
    let mut tun = None;
    let mut down = None;
    let mut both = None;
    let mut one: [Option<Profile>; 2] = [None, None];
    let mut seed = 1;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--tun" => tun = Some(value()?),
            "--down" => down = Some(Net::parse(&value()?)?),
            "--profile" => both = Some(Profile::parse(&value()?)?),
            "--up-profile" => one[UP] = Some(Profile::parse(&value()?)?),
            "--down-profile" => one[DOWN] = Some(Profile::parse(&value()?)?),
            "--seed" => seed = value()?.parse().map_err(|_| "--seed: a number".to_string())?,
            "-h" | "--help" => {
                println!(
                    "vimp-netcond --tun NAME --down NET/LEN --profile DELAY_MS[:JITTER_MS[:LOSS_PERCENT]] \
                     [--up-profile …] [--down-profile …] [--seed N]\n\n\
                     Holds, reorders and drops the packets routed into a TUN device, then writes them back \
                     (the home-network lab's link conditioner; see scripts/lab.sh)."
                );
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {arg:?} (see --help)")),
        }
    }
    let none = Profile { delay: Duration::ZERO, jitter: Duration::ZERO, loss: 0.0 };
    let base = both.unwrap_or(none);
    Ok(Args {
        tun: tun.ok_or("--tun NAME is needed")?,
        down: down.ok_or("--down NET/LEN is needed")?,
        profiles: [one[UP].unwrap_or(base), one[DOWN].unwrap_or(base)],
        seed: seed.max(1),
    })
}

/// Opens (creating it if need be) the TUN device `name`, without packet information headers.
fn open_tun(name: &str) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new().read(true).write(true).open("/dev/net/tun")?;
    // struct ifreq: the name, then a union whose first member is the flags.
    let mut ifreq = [0u8; 40];
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ {
        return Err(std::io::Error::other(format!("TUN name {name:?}: 1 to 15 bytes")));
    }
    ifreq[..bytes.len()].copy_from_slice(bytes);
    let flags = (libc::IFF_TUN | libc::IFF_NO_PI) as i16;
    ifreq[16..18].copy_from_slice(&flags.to_ne_bytes());
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq`, which `ifreq` is large enough for.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF as _, ifreq.as_mut_ptr()) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file)
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(err) => {
            eprintln!("vimp-netcond: {err}");
            std::process::exit(2);
        }
    };
    let reader = match open_tun(&args.tun) {
        Ok(file) => file,
        Err(err) => {
            eprintln!("vimp-netcond: cannot open TUN device {}: {err}", args.tun);
            std::process::exit(1);
        }
    };
    // SAFETY: `dup` returns a new descriptor of the same open TUN device, owned by `writer`.
    let writer = unsafe {
        let fd = libc::dup(reader.as_raw_fd());
        if fd < 0 {
            eprintln!("vimp-netcond: dup: {}", std::io::Error::last_os_error());
            std::process::exit(1);
        }
        File::from_raw_fd(fd)
    };
    eprintln!("vimp-netcond: {} up {:?}, down {:?}", args.tun, args.profiles[UP], args.profiles[DOWN]);

    let queue = Arc::new((Mutex::new(BinaryHeap::<Reverse<Held>>::new()), Condvar::new()));
    let counts = Arc::new(Counts::default());
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }

    {
        let queue = queue.clone();
        std::thread::spawn(move || release(writer, &queue));
    }
    {
        let counts = counts.clone();
        std::thread::spawn(move || {
            let mut last = 0;
            loop {
                std::thread::sleep(Duration::from_secs(5));
                let seen = total(&counts);
                if seen != last {
                    last = seen;
                    report(&counts);
                }
            }
        });
    }
    {
        let counts = counts.clone();
        std::thread::spawn(move || hold(reader, &args, &queue, &counts));
    }
    while !STOP.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
    }
    report(&counts);
}

/// Reads packets, drops or schedules them.
fn hold(mut tun: File, args: &Args, queue: &(Mutex<BinaryHeap<Reverse<Held>>>, Condvar), counts: &Counts) {
    let mut rng = Rng(args.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut buf = vec![0u8; 65_536];
    let mut seq = 0;
    loop {
        let n = match tun.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => {
                eprintln!("vimp-netcond: read: {err}");
                std::process::exit(1);
            }
        };
        let packet = &buf[..n];
        // IPv4 only (the lab has no IPv6 routes); anything else passes untouched.
        let direction = if n >= 20 && packet[0] >> 4 == 4 {
            let dst = u32::from_be_bytes([packet[16], packet[17], packet[18], packet[19]]);
            if args.down.contains(dst) { DOWN } else { UP }
        } else {
            UP
        };
        let profile = args.profiles[direction];
        if profile.loss > 0.0 && rng.unit() < profile.loss {
            counts.dropped[direction].fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let jitter = profile.jitter.as_secs_f64() * (2.0 * rng.unit() - 1.0);
        let delay = (profile.delay.as_secs_f64() + jitter).max(0.0);
        seq += 1;
        let held = Held { at: Instant::now() + Duration::from_secs_f64(delay), seq, bytes: packet.to_vec() };
        let (lock, ready) = queue;
        lock.lock().expect("the queue lock").push(Reverse(held));
        ready.notify_one();
        counts.forwarded[direction].fetch_add(1, Ordering::Relaxed);
    }
}

/// Writes each held packet back when its time comes.
fn release(mut tun: File, queue: &(Mutex<BinaryHeap<Reverse<Held>>>, Condvar)) {
    let (lock, ready) = queue;
    let mut heap = lock.lock().expect("the queue lock");
    loop {
        let now = Instant::now();
        match heap.peek() {
            Some(Reverse(first)) if first.at <= now => {
                let Reverse(held) = heap.pop().expect("peeked");
                drop(heap);
                if let Err(err) = tun.write_all(&held.bytes) {
                    // A packet the kernel refuses (no route, say) is lost, as on a real line.
                    eprintln!("vimp-netcond: write: {err}");
                }
                heap = lock.lock().expect("the queue lock");
            }
            Some(Reverse(first)) => {
                let wait = first.at - now;
                heap = ready.wait_timeout(heap, wait).expect("the queue lock").0;
            }
            None => heap = ready.wait_timeout(heap, Duration::from_millis(100)).expect("the queue lock").0,
        }
    }
}

/// Every packet seen so far.
fn total(counts: &Counts) -> u64 {
    counts.forwarded.iter().chain(&counts.dropped).map(|a| a.load(Ordering::Relaxed)).sum()
}

/// Prints the counts.
fn report(counts: &Counts) {
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let (fu, fd) = (get(&counts.forwarded[UP]), get(&counts.forwarded[DOWN]));
    let (du, dd) = (get(&counts.dropped[UP]), get(&counts.dropped[DOWN]));
    eprintln!("vimp-netcond: up {fu} forwarded, {du} dropped; down {fd} forwarded, {dd} dropped");
}

/// Set by SIGTERM and SIGINT.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_parse_and_refuse_nonsense() {
        let p = Profile::parse("50:10:2").unwrap();
        assert_eq!(p.delay, Duration::from_millis(50));
        assert_eq!(p.jitter, Duration::from_millis(10));
        assert!((p.loss - 0.02).abs() < 1e-12);
        assert_eq!(Profile::parse("30").unwrap().jitter, Duration::ZERO);
        for bad in ["", "x", "1:2:3:4", "-5", "1:1:101", "nan"] {
            assert!(Profile::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn networks_contain_their_addresses_only() {
        let net = Net::parse("10.1.0.0/24").unwrap();
        assert!(net.contains(u32::from(Ipv4Addr::new(10, 1, 0, 10))));
        assert!(!net.contains(u32::from(Ipv4Addr::new(10, 2, 0, 10))));
        assert!(Net::parse("0.0.0.0/0").unwrap().contains(u32::from(Ipv4Addr::new(8, 8, 8, 8))));
        assert!(Net::parse("10.1.0.0/33").is_err());
        assert!(Net::parse("10.1.0/24").is_err());
    }

    #[test]
    fn loss_draws_are_uniform_enough() {
        let mut rng = Rng(7);
        let n = 100_000;
        let below = (0..n).filter(|_| rng.unit() < 0.02).count();
        // 2 % of 100,000 is 2,000, σ ≈ 44.
        assert!((1_800..2_200).contains(&below), "{below} of {n} below 0.02");
    }
}
