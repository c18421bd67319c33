//! An in-memory link between two peers with a seeded link conditioner, for deterministic tests on fake time.
//!
//! [`link_pair`] returns the two ends of one link. Each end [`send`](LinkEnd::send)s
//! messages on a [`Channel`] and [`poll_recv`](LinkEnd::poll_recv)s the messages the
//! other end sent, once their delivery time has come. Nothing here reads the clock:
//! every call that needs time takes `now`, the time since an arbitrary epoch shared by
//! both ends, and [`next_delivery`](LinkEnd::next_delivery) tells a test driver how far to
//! advance it. The same [`LinkConfig`] (seed included) and the same calls give the same
//! delivery schedule, byte for byte.
//!
//! The ends share their state behind an `Arc<Mutex<…>>`, so an end can move to another
//! thread: a test can run each peer of an in-memory mesh on a thread of its own.
//!
//! # The conditioner
//!
//! Each direction draws from its own SplitMix64 stream, both derived from
//! [`LinkConfig::seed`], so a direction's schedule depends only on the calls made on the
//! end that sends on it, never on how they interleave with the other end's calls.
//!
//! * [`Channel::Unreliable`]: each message is lost with probability [`loss`](LinkConfig::loss);
//!   a message that is not lost is duplicated with probability [`duplicate`](LinkConfig::duplicate).
//!   Each copy is delayed by [`latency`](LinkConfig::latency) plus a uniform offset in
//!   `−jitter..=+jitter` (the delay never goes below zero), and with probability
//!   [`reorder`](LinkConfig::reorder) by an extra `latency + 2 × jitter + `[`REORDER_GAP`], so that
//!   it arrives after every message (either channel) sent less than `latency + REORDER_GAP`
//!   after it, unless that message is held back too.
//! * [`Channel::Reliable`]: latency and jitter only. It never loses, duplicates or reorders:
//!   a delivery time earlier than the previous reliable message's is raised to it.
//! * Like the WebRTC layer, a message above [`MAX_MESSAGE`] bytes is silently dropped, on
//!   either channel, and counted in [`LinkStats::oversized`]: big frames must go through a
//!   [`Chunker`](crate::frame::Chunker).
//!
//! Messages are received in delivery-time order, ties in the order they were sent (both
//! channels together). Probabilities outside `0..=1` act as clamped (NaN as `0`);
//! [`LinkConfig::validate`] reports them.
//!
//! ```
//! # use std::time::Duration;
//! # use vimp_netcode::{frame::Channel, link::{LinkConfig, link_pair}};
//! let config = LinkConfig::new().latency(Duration::from_millis(40)).jitter(Duration::from_millis(5)).seed(42);
//! let (mut host, mut client) = link_pair(config);
//! host.send(Duration::ZERO, Channel::Reliable, b"hello".to_vec());
//!
//! // A test driver jumps straight to the next delivery instead of sleeping.
//! let at = client.next_delivery().expect("one message in flight");
//! assert!(at >= Duration::from_millis(35) && at <= Duration::from_millis(45));
//! assert_eq!(client.poll_recv(at - Duration::from_nanos(1)), None);
//! assert_eq!(client.poll_recv(at), Some((Channel::Reliable, b"hello".to_vec())));
//! assert_eq!(host.stats().delivered, 1);
//! ```

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::frame::{Channel, MAX_MESSAGE};

/// Margin of a reordered message's extra delay beyond `latency + 2 × jitter`.
pub const REORDER_GAP: Duration = Duration::from_millis(1);

/// The conditions of a link, the same in both directions. `Default` is a perfect link:
/// no latency, no jitter, no loss, no duplication, no reordering.
///
/// Build it like str0m's `NetemConfig`:
/// `LinkConfig::new().latency(Duration::from_millis(50)).loss(0.1).seed(42)`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LinkConfig {
    /// One-way delay of every message, both channels.
    pub latency: Duration,
    /// Each message's delay is `latency` plus a uniform offset in `−jitter..=+jitter`, never below zero; both channels.
    pub jitter: Duration,
    /// Probability that an unreliable message is lost, `0..=1`.
    pub loss: f64,
    /// Probability that an unreliable message that is not lost arrives twice, `0..=1`.
    pub duplicate: f64,
    /// Probability that an unreliable message (each copy) is held back to arrive after later ones, `0..=1`.
    pub reorder: f64,
    /// Seed of the conditioner's random streams.
    pub seed: u64,
}

impl LinkConfig {
    /// A perfect link, the same as `Default`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`latency`](Self::latency).
    pub fn latency(mut self, latency: Duration) -> Self {
        self.latency = latency;
        self
    }

    /// Sets [`jitter`](Self::jitter).
    pub fn jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// Sets [`loss`](Self::loss).
    pub fn loss(mut self, loss: f64) -> Self {
        self.loss = loss;
        self
    }

    /// Sets [`duplicate`](Self::duplicate).
    pub fn duplicate(mut self, duplicate: f64) -> Self {
        self.duplicate = duplicate;
        self
    }

    /// Sets [`reorder`](Self::reorder).
    pub fn reorder(mut self, reorder: f64) -> Self {
        self.reorder = reorder;
        self
    }

    /// Sets [`seed`](Self::seed).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Checks that every probability is within `0..=1` (a config read from a file or a
    /// command line). A link built from an invalid config still works: it clamps them.
    pub fn validate(&self) -> Result<(), LinkError> {
        for (name, value) in [("loss", self.loss), ("duplicate", self.duplicate), ("reorder", self.reorder)] {
            if !(0.0..=1.0).contains(&value) {
                return Err(LinkError::InvalidProbability { name, value });
            }
        }
        Ok(())
    }
}

/// Why a [`LinkConfig`] is invalid.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum LinkError {
    /// A probability outside `0..=1`, or NaN.
    #[error("{name} probability {value} is not within 0..=1")]
    InvalidProbability {
        /// The field: `loss`, `duplicate` or `reorder`.
        name: &'static str,
        /// Its value.
        value: f64,
    },
}

/// Counters of one direction of a link, see [`LinkEnd::stats`].
///
/// Once nothing is in flight, `delivered + lost + oversized == sent + duplicated`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkStats {
    /// Messages sent (before the link closed), oversized ones included.
    pub sent: u64,
    /// Bytes of the messages counted in `sent`.
    pub bytes_sent: u64,
    /// Messages (copies) the other end has received.
    pub delivered: u64,
    /// Unreliable messages lost.
    pub lost: u64,
    /// Unreliable messages that got a second copy.
    pub duplicated: u64,
    /// Unreliable copies held back to arrive after later messages.
    pub reordered: u64,
    /// Messages dropped for being above [`MAX_MESSAGE`] bytes.
    pub oversized: u64,
}

/// The seeded generator of the conditioner: SplitMix64 (Steele, Lea and Flood; Vigna's constants).
#[derive(Debug, Clone)]
struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`, 53 bits.
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// `true` with probability `p` (`p ≤ 0` or NaN: never; `p ≥ 1`: always). Always draws once.
    fn chance(&mut self, p: f64) -> bool {
        self.next_f64() < p
    }

    /// Uniform in `0..n` (`0` when `n` is `0`), by multiply-shift. Always draws once.
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// A message on its way.
#[derive(Debug, Clone)]
struct InFlight {
    channel: Channel,
    bytes: Vec<u8>,
}

/// One direction of the link: the sending end's generator, the messages in flight and the counters.
#[derive(Debug, Clone)]
struct Direction {
    rng: SplitMix64,
    /// Messages in flight by (delivery time, send order).
    queue: BTreeMap<(Duration, u64), InFlight>,
    next_seq: u64,
    /// Delivery time of the last reliable message, to keep the reliable channel ordered.
    last_reliable: Duration,
    stats: LinkStats,
}

impl Direction {
    fn new(seed: u64) -> Self {
        Self {
            rng: SplitMix64::new(seed),
            queue: BTreeMap::new(),
            next_seq: 0,
            last_reliable: Duration::ZERO,
            stats: LinkStats::default(),
        }
    }

    /// `latency` plus a uniform offset in `−jitter..=+jitter`, not below zero.
    fn delay(&mut self, config: &LinkConfig) -> Duration {
        let jitter = u64::try_from(config.jitter.as_nanos()).unwrap_or(u64::MAX).min(u64::MAX / 2 - 1);
        let offset = self.rng.below(2 * jitter + 1);
        config.latency.saturating_add(Duration::from_nanos(offset)).saturating_sub(Duration::from_nanos(jitter))
    }

    fn schedule(&mut self, at: Duration, channel: Channel, bytes: Vec<u8>) {
        self.queue.insert((at, self.next_seq), InFlight { channel, bytes });
        self.next_seq += 1;
    }

    fn send(&mut self, config: &LinkConfig, now: Duration, channel: Channel, bytes: Vec<u8>) {
        self.stats.sent += 1;
        self.stats.bytes_sent += bytes.len() as u64;
        if bytes.len() > MAX_MESSAGE {
            self.stats.oversized += 1;
            return;
        }
        match channel {
            Channel::Reliable => {
                let at = now.saturating_add(self.delay(config)).max(self.last_reliable);
                self.last_reliable = at;
                self.schedule(at, channel, bytes);
            }
            Channel::Unreliable => {
                let lost = self.rng.chance(config.loss);
                let duplicated = self.rng.chance(config.duplicate);
                if lost {
                    self.stats.lost += 1;
                    return;
                }
                let copies = if duplicated {
                    self.stats.duplicated += 1;
                    vec![bytes.clone(), bytes]
                } else {
                    vec![bytes]
                };
                for copy in copies {
                    let mut at = now.saturating_add(self.delay(config));
                    if self.rng.chance(config.reorder) {
                        self.stats.reordered += 1;
                        let extra =
                            config.latency.saturating_add(config.jitter.saturating_mul(2)).saturating_add(REORDER_GAP);
                        at = at.saturating_add(extra);
                    }
                    self.schedule(at, channel, copy);
                }
            }
        }
    }
}

/// The state both ends share.
#[derive(Debug)]
struct Shared {
    config: LinkConfig,
    /// `directions[0]` carries what the first end sends, `directions[1]` what the second end sends.
    directions: [Direction; 2],
    closed: bool,
}

/// One end of an in-memory link, see the [module docs](self).
///
/// Dropping an end closes the link, as [`close`](Self::close) does.
#[derive(Debug)]
pub struct LinkEnd {
    shared: Arc<Mutex<Shared>>,
    /// 0 for the first end of the pair, 1 for the second: the index of the direction it sends on.
    side: usize,
}

/// A link between two in-memory peers with the conditions of `config`: `(first, second)`.
///
/// The first end sends on the stream seeded by the first value drawn from
/// `SplitMix64(config.seed)`, the second end on the second value.
pub fn link_pair(config: LinkConfig) -> (LinkEnd, LinkEnd) {
    let mut root = SplitMix64::new(config.seed);
    let directions = [Direction::new(root.next_u64()), Direction::new(root.next_u64())];
    let shared = Arc::new(Mutex::new(Shared { config, directions, closed: false }));
    (LinkEnd { shared: Arc::clone(&shared), side: 0 }, LinkEnd { shared, side: 1 })
}

impl LinkEnd {
    /// The shared state; a poisoned lock (a panic on another thread mid-call) is still usable.
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `bytes` to the other end on `channel` at time `now`, through the conditioner.
    ///
    /// Ignored once the link is closed. A message above [`MAX_MESSAGE`] bytes is dropped
    /// (and counted), as the WebRTC layer does.
    pub fn send(&mut self, now: Duration, channel: Channel, bytes: Vec<u8>) {
        let shared = &mut *self.lock();
        if shared.closed {
            return;
        }
        let config = shared.config;
        shared.directions[self.side].send(&config, now, channel, bytes);
    }

    /// The next message from the other end whose delivery time is at most `now`, if any.
    ///
    /// Messages come in delivery-time order, ties in send order. Call it until it returns
    /// `None`. Messages already in flight when the link closed are still delivered.
    pub fn poll_recv(&mut self, now: Duration) -> Option<(Channel, Vec<u8>)> {
        let mut shared = self.lock();
        let incoming = &mut shared.directions[1 - self.side];
        let entry = incoming.queue.first_entry()?;
        if entry.key().0 > now {
            return None;
        }
        let InFlight { channel, bytes } = entry.remove();
        incoming.stats.delivered += 1;
        Some((channel, bytes))
    }

    /// When the earliest message in flight towards this end is due, if any: the time a
    /// test driver advances to before calling [`poll_recv`](Self::poll_recv) again.
    pub fn next_delivery(&self) -> Option<Duration> {
        self.lock().directions[1 - self.side].queue.first_key_value().map(|(&(at, _), _)| at)
    }

    /// Messages (copies) this end has sent that the other end has not received yet.
    pub fn in_flight(&self) -> usize {
        self.lock().directions[self.side].queue.len()
    }

    /// Closes the link: both ends see [`is_closed`](Self::is_closed) and further sends
    /// are ignored. Messages already in flight can still be received.
    pub fn close(&mut self) {
        self.lock().closed = true;
    }

    /// Whether either end has closed the link (or been dropped).
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The counters of the direction this end sends on: what it sent, and what became of it.
    pub fn stats(&self) -> LinkStats {
        self.lock().directions[self.side].stats
    }

    /// The link's conditions.
    pub fn config(&self) -> LinkConfig {
        self.lock().config
    }

    /// Changes the link's conditions, both ways, for what is sent from now on (what is in
    /// flight keeps its delivery time; the random streams go on). A latency of hours makes a
    /// link that stalls without closing, as a WebRTC association can.
    pub fn set_config(&mut self, config: LinkConfig) {
        self.lock().config = config;
    }
}

impl Drop for LinkEnd {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A numbered message, to track order and duplicates.
    fn numbered(i: u32) -> Vec<u8> {
        i.to_be_bytes().to_vec()
    }

    fn number(bytes: &[u8]) -> u32 {
        u32::from_be_bytes(bytes.try_into().expect("a numbered message is 4 bytes"))
    }

    /// Everything due at `now`.
    fn drain(end: &mut LinkEnd, now: Duration) -> Vec<(Channel, Vec<u8>)> {
        std::iter::from_fn(|| end.poll_recv(now)).collect()
    }

    /// Receives everything in flight towards `end`, jumping from delivery to delivery:
    /// `(delivery time, channel, bytes)`.
    fn receive_all(end: &mut LinkEnd) -> Vec<(Duration, Channel, Vec<u8>)> {
        let mut received = Vec::new();
        while let Some(at) = end.next_delivery() {
            for (channel, bytes) in drain(end, at) {
                received.push((at, channel, bytes));
            }
        }
        received
    }

    // ---- the generator ----

    #[test]
    fn a_link_whose_latency_turns_to_hours_stalls_what_is_sent_after() {
        let ms = Duration::from_millis;
        let (mut a, mut b) = link_pair(LinkConfig::new().latency(ms(10)));
        a.send(ms(0), Channel::Reliable, b"before".to_vec());
        a.set_config(LinkConfig::new().latency(Duration::from_secs(3600)));
        assert_eq!(b.config().latency, Duration::from_secs(3600), "both ends see the change");
        a.send(ms(1), Channel::Reliable, b"after".to_vec());
        b.send(ms(1), Channel::Unreliable, b"back".to_vec());
        assert_eq!(b.poll_recv(ms(1000)), Some((Channel::Reliable, b"before".to_vec())), "in flight keeps its time");
        assert_eq!(b.poll_recv(ms(1000)), None);
        assert_eq!(a.poll_recv(ms(1000)), None);
        assert!(!a.is_closed() && !b.is_closed(), "stalled, not closed");
    }

    #[test]
    fn splitmix64_reference_values() {
        // Reference outputs of Vigna's splitmix64.c for seed 1234567.
        let mut rng = SplitMix64::new(1_234_567);
        let values: Vec<u64> = (0..5).map(|_| rng.next_u64()).collect();
        assert_eq!(
            values,
            [
                6_457_827_717_110_365_317,
                3_203_168_211_198_807_973,
                9_817_491_932_198_370_423,
                4_593_380_528_125_082_431,
                16_408_922_859_458_223_821,
            ]
        );
    }

    #[test]
    fn splitmix64_helpers_stay_in_range() {
        let mut rng = SplitMix64::new(9);
        for _ in 0..1000 {
            let x = rng.next_f64();
            assert!((0.0..1.0).contains(&x), "{x}");
            assert!(rng.below(7) < 7);
        }
        assert_eq!(rng.below(0), 0);
        assert_eq!(rng.below(1), 0);
        assert!(!rng.chance(0.0) && !rng.chance(-1.0) && !rng.chance(f64::NAN));
        assert!(rng.chance(1.0) && rng.chance(2.0));
    }

    // ---- config ----

    #[test]
    fn config_builder_and_default() {
        let config = LinkConfig::new().latency(ms(50)).jitter(ms(5)).loss(0.1).duplicate(0.2).reorder(0.3).seed(42);
        assert_eq!(
            config,
            LinkConfig { latency: ms(50), jitter: ms(5), loss: 0.1, duplicate: 0.2, reorder: 0.3, seed: 42 }
        );
        assert_eq!(
            LinkConfig::default(),
            LinkConfig {
                latency: Duration::ZERO,
                jitter: Duration::ZERO,
                loss: 0.0,
                duplicate: 0.0,
                reorder: 0.0,
                seed: 0
            }
        );
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(
            LinkConfig::new().duplicate(1.5).validate(),
            Err(LinkError::InvalidProbability { name: "duplicate", value: 1.5 })
        );
        assert!(LinkConfig::new().loss(f64::NAN).validate().is_err());
        assert_eq!(
            LinkError::InvalidProbability { name: "loss", value: -0.5 }.to_string(),
            "loss probability -0.5 is not within 0..=1"
        );
    }

    // ---- delivery ----

    #[test]
    fn perfect_link_delivers_in_order_at_now() {
        let (mut a, mut b) = link_pair(LinkConfig::default());
        let now = ms(7);
        a.send(now, Channel::Unreliable, vec![1]);
        a.send(now, Channel::Reliable, vec![2]);
        a.send(now, Channel::Unreliable, vec![3]);
        b.send(now, Channel::Reliable, vec![9]);
        assert_eq!(b.next_delivery(), Some(now));
        assert_eq!(
            drain(&mut b, now),
            [(Channel::Unreliable, vec![1]), (Channel::Reliable, vec![2]), (Channel::Unreliable, vec![3])]
        );
        assert_eq!(b.next_delivery(), None);
        assert_eq!(drain(&mut a, now), [(Channel::Reliable, vec![9])]);
        assert_eq!(
            a.stats(),
            LinkStats { sent: 3, bytes_sent: 3, delivered: 3, lost: 0, duplicated: 0, reordered: 0, oversized: 0 }
        );
        assert_eq!(b.stats().delivered, 1);
    }

    #[test]
    fn latency_delays_exactly() {
        let (mut a, mut b) = link_pair(LinkConfig::new().latency(ms(50)));
        a.send(ms(10), Channel::Unreliable, vec![1]);
        a.send(ms(11), Channel::Reliable, vec![2]);
        assert_eq!(b.next_delivery(), Some(ms(60)));
        assert_eq!(b.poll_recv(ms(60) - Duration::from_nanos(1)), None, "not a nanosecond early");
        assert_eq!(b.poll_recv(ms(60)), Some((Channel::Unreliable, vec![1])));
        assert_eq!(b.poll_recv(ms(60)), None);
        assert_eq!(b.next_delivery(), Some(ms(61)));
        assert_eq!(a.in_flight(), 1);
        assert_eq!(b.poll_recv(ms(1000)), Some((Channel::Reliable, vec![2])), "late polls get it too");
        assert_eq!(a.in_flight(), 0);
    }

    #[test]
    fn jitter_stays_within_bounds_and_never_goes_below_zero() {
        let (mut a, mut b) = link_pair(LinkConfig::new().latency(ms(50)).jitter(ms(10)).seed(3));
        for i in 0..1000 {
            a.send(Duration::ZERO, Channel::Unreliable, numbered(i));
        }
        let times: Vec<Duration> = receive_all(&mut b).into_iter().map(|(at, _, _)| at).collect();
        assert_eq!(times.len(), 1000);
        assert!(times.iter().all(|&t| (ms(40)..=ms(60)).contains(&t)), "delays within 50 ± 10 ms");
        assert!(times[0] < ms(42) && times[999] > ms(58), "the whole range is used: {times:?}");

        let (mut a, mut b) = link_pair(LinkConfig::new().latency(ms(5)).jitter(ms(10)).seed(3));
        for i in 0..1000 {
            a.send(ms(100), Channel::Unreliable, numbered(i));
        }
        let times: Vec<Duration> = receive_all(&mut b).into_iter().map(|(at, _, _)| at).collect();
        assert!(times.iter().all(|&t| (ms(100)..=ms(115)).contains(&t)));
        let at_send = times.iter().filter(|&&t| t == ms(100)).count();
        assert!((150..=350).contains(&at_send), "about a quarter of the delays clamp to zero: {at_send}");
    }

    /// Both ends send a mix of channels for 300 ms; returns what each end receives, with times.
    fn scenario(config: LinkConfig, interleaved: bool) -> [Vec<(Duration, Channel, Vec<u8>)>; 2] {
        let (mut a, mut b) = link_pair(config);
        let send = |end: &mut LinkEnd, i: u32| {
            let channel = if i.is_multiple_of(10) { Channel::Reliable } else { Channel::Unreliable };
            end.send(ms(u64::from(i)), channel, numbered(i));
        };
        if interleaved {
            for i in 0..300 {
                send(&mut a, i);
                send(&mut b, 1000 + i);
                // Receiving in between draws nothing from the streams.
                let _ = b.next_delivery();
            }
        } else {
            for i in 0..300 {
                send(&mut b, 1000 + i);
            }
            for i in 0..300 {
                send(&mut a, i);
            }
        }
        [receive_all(&mut a), receive_all(&mut b)]
    }

    #[test]
    fn same_seed_same_schedule_whatever_the_interleaving() {
        let config = LinkConfig::new().latency(ms(30)).jitter(ms(8)).loss(0.1).duplicate(0.05).reorder(0.05).seed(42);
        let first = scenario(config, true);
        assert!(first[0].len() > 200 && first[1].len() > 200);
        assert_eq!(scenario(config, true), first, "same seed, same schedule");
        assert_eq!(scenario(config, false), first, "the two ends' calls may interleave in any way");
        let other = scenario(config.seed(43), true);
        assert_ne!(other, first, "another seed, another schedule");
        let b_to_a_renumbered: Vec<_> = first[0].iter().map(|(t, c, b)| (*t, *c, numbered(number(b) - 1000))).collect();
        assert_ne!(first[1], b_to_a_renumbered, "each direction has its own stream");
    }

    #[test]
    fn loss_rate_is_close_to_the_configured_probability() {
        const RATE: f64 = 0.1;
        const COUNT: u32 = 10_000;
        let (mut a, mut b) = link_pair(LinkConfig::new().loss(RATE).seed(7));
        for i in 0..COUNT {
            a.send(Duration::ZERO, Channel::Unreliable, numbered(i));
        }
        let lost = a.stats().lost;
        // ± 2 points is about 6.7 standard deviations at this rate and count.
        let (low, high) = ((RATE - 0.02) * f64::from(COUNT), (RATE + 0.02) * f64::from(COUNT));
        assert!((low..=high).contains(&(lost as f64)), "{RATE} ± 0.02 of {COUNT} lost, got {lost}");
        let received = drain(&mut b, Duration::ZERO);
        assert_eq!(received.len() as u64, u64::from(COUNT) - lost);
        assert_eq!(a.stats().delivered, u64::from(COUNT) - lost);
        // Survivors keep their order on a link without jitter or reordering.
        let numbers: Vec<u32> = received.iter().map(|(_, bytes)| number(bytes)).collect();
        assert!(numbers.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn reliable_channel_never_loses_duplicates_or_reorders() {
        let config = LinkConfig::new().latency(ms(30)).jitter(ms(20)).loss(0.5).duplicate(0.5).reorder(0.5).seed(11);
        let (mut a, mut b) = link_pair(config);
        for i in 0..1000 {
            a.send(ms(u64::from(i)), Channel::Reliable, numbered(i));
            a.send(ms(u64::from(i)), Channel::Unreliable, numbered(i));
        }
        let received = receive_all(&mut b);
        let reliable: Vec<(Duration, u32)> = received
            .iter()
            .filter(|(_, channel, _)| *channel == Channel::Reliable)
            .map(|(at, _, bytes)| (*at, number(bytes)))
            .collect();
        let numbers: Vec<u32> = reliable.iter().map(|&(_, n)| n).collect();
        assert_eq!(numbers, (0..1000).collect::<Vec<_>>(), "every reliable message once, in order");
        for &(at, n) in &reliable {
            let delay = at - ms(u64::from(n));
            assert!((ms(10)..=ms(50)).contains(&delay), "message {n}: delay {delay:?} outside 30 ± 20 ms");
        }
        assert!(reliable.windows(2).all(|w| w[0].0 <= w[1].0), "monotonic delivery times");
        let stats = a.stats();
        assert!(stats.lost > 0 && stats.duplicated > 0 && stats.reordered > 0, "the unreliable channel was impaired");
    }

    #[test]
    fn duplication_is_observed() {
        let (mut a, mut b) = link_pair(LinkConfig::new().duplicate(0.25).seed(5));
        for i in 0..4000 {
            a.send(Duration::ZERO, Channel::Unreliable, numbered(i));
        }
        let duplicated = a.stats().duplicated;
        assert!((800..=1200).contains(&duplicated), "25% ± 5% of 4,000 duplicated, got {duplicated}");
        let mut copies = vec![0u32; 4000];
        for (_, bytes) in drain(&mut b, Duration::ZERO) {
            copies[number(&bytes) as usize] += 1;
        }
        assert!(copies.iter().all(|&c| c == 1 || c == 2));
        assert_eq!(copies.iter().filter(|&&c| c == 2).count() as u64, duplicated);
        assert_eq!(a.stats().delivered, 4000 + duplicated);
    }

    /// Numbers of the messages that arrive after a higher-numbered one.
    fn overtaken(received: &[(Duration, Channel, Vec<u8>)]) -> Vec<u32> {
        let mut highest = None;
        let mut late = Vec::new();
        for (_, _, bytes) in received {
            let n = number(bytes);
            match highest {
                Some(h) if n < h => late.push(n),
                _ => highest = Some(n),
            }
        }
        late
    }

    #[test]
    fn reordering_is_observed() {
        let send_1000 = |config: LinkConfig| {
            let (mut a, mut b) = link_pair(config);
            for i in 0..1000 {
                a.send(ms(u64::from(i)), Channel::Unreliable, numbered(i));
            }
            (a.stats(), receive_all(&mut b))
        };
        let (stats, received) = send_1000(LinkConfig::new().latency(ms(10)));
        assert_eq!(received.len(), 1000);
        assert_eq!(overtaken(&received), [0u32; 0], "no reordering without jitter or reorder");

        let (stats_reordered, received) = send_1000(LinkConfig::new().latency(ms(10)).reorder(0.1).seed(8));
        assert_eq!(stats.reordered, 0);
        assert_eq!(received.len(), 1000, "reordering loses nothing");
        let late = overtaken(&received);
        assert!((60..=140).contains(&late.len()), "10% ± 4% of 1,000 reordered, got {}", late.len());
        assert_eq!(late.len() as u64, stats_reordered.reordered, "every held-back message arrives late");
        // A held-back message arrives 10 + 0 + 1 ms later than it would have.
        for (at, _, bytes) in &received {
            let n = number(bytes);
            let delay = *at - ms(u64::from(n));
            let expected = if late.contains(&n) { ms(21) } else { ms(10) };
            assert_eq!(delay, expected, "message {n}");
        }
    }

    #[test]
    fn oversized_messages_are_dropped_like_webrtc_does() {
        let (mut a, mut b) = link_pair(LinkConfig::default());
        a.send(MS, Channel::Reliable, vec![0; MAX_MESSAGE + 1]);
        a.send(MS, Channel::Unreliable, vec![0; MAX_MESSAGE + 1]);
        a.send(MS, Channel::Reliable, vec![1; MAX_MESSAGE]);
        let received = drain(&mut b, MS);
        assert_eq!(received, [(Channel::Reliable, vec![1; MAX_MESSAGE])]);
        let stats = a.stats();
        assert_eq!((stats.sent, stats.oversized, stats.delivered), (3, 2, 1));
        assert_eq!(stats.bytes_sent, 3 * MAX_MESSAGE as u64 + 2);
    }

    // ---- closing ----

    #[test]
    fn close_is_seen_by_the_peer() {
        let (mut a, mut b) = link_pair(LinkConfig::new().latency(ms(20)));
        a.send(Duration::ZERO, Channel::Reliable, vec![op_close()]);
        assert!(!a.is_closed() && !b.is_closed());
        a.close();
        assert!(b.is_closed(), "the peer sees the close");
        assert!(a.is_closed());
        b.send(MS, Channel::Reliable, vec![1]);
        a.send(MS, Channel::Reliable, vec![2]);
        assert_eq!(b.stats().sent, 0, "sends after close are ignored");
        assert_eq!(a.stats().sent, 1);
        assert_eq!(a.next_delivery(), None);
        assert_eq!(drain(&mut b, ms(20)), [(Channel::Reliable, vec![op_close()])], "in-flight messages still arrive");
    }

    fn op_close() -> u8 {
        crate::frame::op::CLOSE
    }

    #[test]
    fn dropping_an_end_closes_the_link() {
        let (a, b) = link_pair(LinkConfig::default());
        drop(b);
        assert!(a.is_closed());
    }

    #[test]
    fn an_end_can_move_to_another_thread() {
        let (mut host, mut client) = link_pair(LinkConfig::new().latency(ms(5)).seed(1));
        let host_thread = std::thread::spawn(move || {
            for i in 0..10 {
                host.send(ms(i), Channel::Unreliable, numbered(i as u32));
            }
            host
        });
        let host = host_thread.join().expect("the host thread does not panic");
        let numbers: Vec<u32> = receive_all(&mut client).iter().map(|(_, _, bytes)| number(bytes)).collect();
        assert_eq!(numbers, (0..10).collect::<Vec<_>>());
        assert_eq!(host.stats().delivered, 10);
    }

    // ---- properties ----

    #[derive(Debug, Clone)]
    enum Op {
        Send { end: usize, advance_us: u64, reliable: bool, len: usize },
        Recv { end: usize, advance_us: u64 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0usize..2, 0u64..5_000, any::<bool>(), 0usize..16).prop_map(|(end, advance_us, reliable, len)| Op::Send {
                end,
                advance_us,
                reliable,
                len
            }),
            (0usize..2, 0u64..20_000).prop_map(|(end, advance_us)| Op::Recv { end, advance_us }),
        ]
    }

    fn probability() -> impl Strategy<Value = f64> {
        prop_oneof![4 => 0.0..=1.0, 1 => Just(-0.5), 1 => Just(1.5), 1 => Just(f64::NAN)]
    }

    fn config() -> impl Strategy<Value = LinkConfig> {
        (0u64..50, 0u64..50, probability(), probability(), probability(), any::<u64>()).prop_map(
            |(latency, jitter, loss, duplicate, reorder, seed)| LinkConfig {
                latency: ms(latency),
                jitter: ms(jitter),
                loss,
                duplicate,
                reorder,
                seed,
            },
        )
    }

    proptest! {
        #[test]
        fn random_calls_never_panic_and_account_for_every_message(config in config(),
                                                                  ops in proptest::collection::vec(op(), 0..200)) {
            let (a, b) = link_pair(config);
            let mut ends = [a, b];
            let mut now = Duration::ZERO;
            let mut next_number = [0u32; 2];
            let mut reliable_seen: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
            let receive = |end: usize, at: Duration, ends: &mut [LinkEnd; 2], seen: &mut [Vec<u32>; 2]| {
                while let Some((channel, bytes)) = ends[end].poll_recv(at) {
                    if channel == Channel::Reliable {
                        seen[end].push(number(&bytes[..4]));
                    }
                }
            };
            for op in ops {
                match op {
                    Op::Send { end, advance_us, reliable, len } => {
                        now += Duration::from_micros(advance_us);
                        let channel = if reliable { Channel::Reliable } else { Channel::Unreliable };
                        let mut bytes = numbered(next_number[end]);
                        bytes.resize(4 + len, 0xAB);
                        if reliable {
                            next_number[end] += 1;
                        }
                        ends[end].send(now, channel, bytes);
                    }
                    Op::Recv { end, advance_us } => {
                        now += Duration::from_micros(advance_us);
                        receive(end, now, &mut ends, &mut reliable_seen);
                    }
                }
            }
            for end in 0..2 {
                while let Some(at) = ends[end].next_delivery() {
                    prop_assert!(at >= Duration::ZERO);
                    receive(end, at, &mut ends, &mut reliable_seen);
                }
            }
            for end in 0..2 {
                let stats = ends[end].stats();
                prop_assert_eq!(ends[end].in_flight(), 0);
                prop_assert_eq!(stats.delivered + stats.lost + stats.oversized, stats.sent + stats.duplicated);
                // What end `end` sent reliably, the other end received once each, in order.
                let expected: Vec<u32> = (0..next_number[end]).collect();
                prop_assert_eq!(&reliable_seen[1 - end], &expected);
            }
        }
    }
}
