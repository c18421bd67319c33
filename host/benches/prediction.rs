//! Prediction over a bad link, headless: how often and how far the host corrects the
//! clients' predicted tanks, and how smooth the drawn tanks are.
//!
//! A host `Server` and two `Client`s over in-memory links (50 ms each way, ±10 ms
//! jitter, 2 % loss on the unreliable channel), in simulated time: deterministic and
//! seeded. Bots press keys on both clients for 60 s of game time (a new key every
//! 700 ms, a shot every 300 ms, like the headless `vimp join`), the same schedule on both,
//! so that the two clients differ only in their slot: join order, spawn point, link seed. Each client runs a
//! `Predictor` fed with its own key events and its frames' player blocks, and draws at
//! 60 Hz: its own tank from `render_motion`, the other from an `Interpolator` at
//! serverNow − 100 ms.
//!
//! Run: `cargo bench -p vimp-host --bench prediction`

use std::time::{Duration, Instant};

use vimp_host::engine::map::MapConfig;
use vimp_host::engine::server::{Server, ServerConfig};
use vimp_host::prelude::*;
use vimp_host::tanks::GAME;
use vimp_host::tanks::predict::{Correction, LocalShot, Predictor, PredictorConfig, suppress_own_events};
use vimp_host::tanks::rows::{Rows, TankRow, key};
use vimp_netcode::client::Client;
use vimp_netcode::frame::op;
use vimp_netcode::input::KeyAction;
use vimp_netcode::interp::{InterpolationConfig, Interpolator};
use vimp_netcode::link::LinkConfig;
use vimp_netcode::schema::SnapshotSchema;
use vimp_netcode::session::Hello;
use vimp_netcode::transport::{MemoryTransport, PeerKey};

const MAP: &str = include_str!("../../maps/test-small.json");
const GAME_TIME: Duration = Duration::from_secs(60);
const STEP: f64 = 1.0 / 120.0;
/// A correction moving the present by more than this (world units) counts as visible.
const VISIBLE: f32 = 0.1;
const KEYS: [&str; 7] = ["forward", "left", "forward", "right", "back", "gunLeft", "gunRight"];

/// One player's client, its predictor and what it drew.
struct Driver {
    client: Client<MemoryTransport>,
    /// Phase of its bot's key schedule, ms.
    phase: u64,
    predictor: Option<(Predictor, Duration)>,
    interp: Option<Interpolator>,
    /// Where the host's tank rows keep their fields.
    tank: Option<TankRow>,
    last_frame: u32,
    held: Option<&'static str>,
    corrections: Vec<Correction>,
    reconcile_time: Duration,
    local_shots: u64,
    suppressed: u64,
    /// Drawn positions of its own tank at each 60 Hz frame: smoothed, raw prediction.
    drawn: Vec<Option<([f32; 2], [f32; 2])>>,
    /// Drawn positions of the other player's tank (interpolated).
    others: Vec<Option<[f32; 2]>>,
    /// Frame indices right after a snap or a reset (excluded from the jitter).
    breaks: Vec<usize>,
}

impl Driver {
    fn new(transport: MemoryTransport, name: &str, phase: u64) -> Driver {
        let hello = Hello::new(name, "bench");
        Driver {
            client: Client::new(transport, hello),
            phase,
            predictor: None,
            interp: None,
            tank: None,
            last_frame: 0,
            held: None,
            corrections: Vec::new(),
            reconcile_time: Duration::ZERO,
            local_shots: 0,
            suppressed: 0,
            drawn: Vec::new(),
            others: Vec::new(),
            breaks: Vec::new(),
        }
    }

    /// One millisecond of the client's loop.
    fn update(&mut self, now: Duration, client_config: &serde_json::Value, schema: &SnapshotSchema) {
        self.client.update(now);
        for (port, payload) in self.client.take_meta() {
            if port == op::MAP_DATA && self.predictor.is_none() {
                let text = std::str::from_utf8(&payload).expect("the map is text");
                let map = MapConfig::from_json("map", text).expect("the host's map is valid");
                let player = PlayerId(self.client.welcome().expect("welcomed before the map").player_id);
                let p = Predictor::new(client_config, &map, player, PredictorConfig::default()).expect("predictor");
                self.predictor = Some((p, now));
                self.interp = Some(Interpolator::new(schema.clone(), InterpolationConfig::default()));
                self.tank = Some(Rows::of(schema).expect("the tanks' rows").tanks);
            }
        }
        let (Some((p, since)), Some(interp), Some(tank)) =
            (self.predictor.as_mut(), self.interp.as_mut(), self.tank.as_ref())
        else {
            return;
        };
        let server_now = self.client.server_time_ms(now);
        if let Some(mut frame) = self.client.last_frame().filter(|f| f.seq > self.last_frame).cloned() {
            self.last_frame = frame.seq;
            let started = Instant::now();
            let obstacles = p.obstacles_from(&frame);
            p.set_obstacles(&obstacles);
            let had_tank = p.motion().is_some();
            match p.on_frame(&frame) {
                Some(c) => {
                    if c.snapped {
                        self.breaks.push(self.drawn.len());
                    }
                    self.corrections.push(c);
                }
                None if had_tank && p.motion().is_none() => self.breaks.push(self.drawn.len()),
                None => {}
            }
            self.reconcile_time += started.elapsed();
            self.suppressed += suppress_own_events(&mut frame, p.player()) as u64;
            if let Some(server_now) = server_now {
                interp.push(frame, server_now);
            }
        }
        // The bot: a new key every 700 ms, a shot every 300 ms.
        let t = now.as_millis() as u64 + self.phase;
        let want = KEYS[(t / 700) as usize % KEYS.len()];
        let mut presses = Vec::new();
        if self.held != Some(want) {
            presses.extend(self.held.map(|old| (KeyAction::Up, old)));
            presses.push((KeyAction::Down, want));
            self.held = Some(want);
        }
        if t.is_multiple_of(300) {
            presses.push((KeyAction::Down, "fire"));
        }
        for (action, name) in presses {
            if let Some(seq) = self.client.key(action, name) {
                p.key(seq, action, name).expect("the host's keys");
            }
        }
        // Fixed steps on the client's clock; a 60 Hz frame every second step.
        let due = ((now - *since).as_secs_f64() / STEP) as u32;
        while p.tick() < due {
            p.step();
            self.local_shots += p.take_shots().iter().filter(|s| matches!(s, LocalShot::Tracer { .. })).count() as u64;
            if p.tick() % 2 == 0 {
                let own = p.render_motion().zip(p.motion()).map(|(r, m)| ([r.x, r.y], [m.x, m.y]));
                self.drawn.push(own);
                let other = server_now.and_then(|sn| {
                    let sample = interp.sample(sn);
                    let tanks = sample.hot.get(&key::TANKS)?;
                    let (_, row) = tanks.iter().find(|(id, _)| **id != p.player().0 as u32)?;
                    Some([tank.x.f32(row), tank.y.f32(row)])
                });
                self.others.push(other);
            }
        }
    }
}

/// p50 and p99 of `values` (0 for none).
fn percentiles(mut values: Vec<f32>) -> (f32, f32) {
    if values.is_empty() {
        return (0.0, 0.0);
    }
    values.sort_by(f32::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.99))
}

/// `|Δpos(n) − Δpos(n−1)|` over consecutive drawn frames, skipping gaps and `breaks`.
fn jitter(positions: &[Option<[f32; 2]>], breaks: &[usize]) -> Vec<f32> {
    let mut out = Vec::new();
    for n in 2..positions.len() {
        if breaks.iter().any(|&b| b + 2 >= n && b <= n) {
            continue;
        }
        let (Some(a), Some(b), Some(c)) = (positions[n - 2], positions[n - 1], positions[n]) else { continue };
        let (d1, d2) = ([b[0] - a[0], b[1] - a[1]], [c[0] - b[0], c[1] - b[1]]);
        out.push(libm::hypotf(d2[0] - d1[0], d2[1] - d1[1]));
    }
    out
}

fn main() {
    let init = vimp_host::tanks::init_config(42);
    let client_config = vimp_host::tanks::client_config(&init);
    let schema = SnapshotSchema::from_value(client_config["engine"]["snapshot"].clone()).expect("schema");
    let mut host = Host::new(init, GAME).expect("host");
    host.load_map_json("test-small", MAP).expect("map");
    let mut server_transport = MemoryTransport::new(PeerKey(1000));
    let mut drivers = Vec::new();
    for (i, name) in ["ann", "bob"].into_iter().enumerate() {
        let mut t = MemoryTransport::new(PeerKey(i as u128 + 1));
        let link = LinkConfig::new()
            .latency(Duration::from_millis(50))
            .jitter(Duration::from_millis(10))
            .loss(0.02)
            .seed(1 + i as u64);
        MemoryTransport::connect(&mut t, &mut server_transport, link);
        // The same key schedule for both: what differs between the two clients is their
        // slot alone (join order, spawn point, link seed), and prediction must not depend on it.
        drivers.push(Driver::new(t, name, 0));
    }
    let config = ServerConfig { client_config: client_config.clone(), ..ServerConfig::default() };
    let mut server = Server::new(host, server_transport, config);

    let wall = Instant::now();
    for ms in 1..=GAME_TIME.as_millis() as u64 {
        let now = Duration::from_millis(ms);
        for d in &mut drivers {
            d.update(now, &client_config, &schema);
        }
        server.update(now);
    }
    let wall = wall.elapsed();

    let mut report = Vec::new();
    for d in &drivers {
        let (p, _) = d.predictor.as_ref().expect("the client got the map");
        let corrected: Vec<&Correction> =
            d.corrections.iter().filter(|c| !c.snapped && (c.distance > 0.0 || c.angle != 0.0)).collect();
        let snaps = d.corrections.iter().filter(|c| c.snapped).count();
        // Most corrections move the present by far less than a pixel: these are the ones a
        // player could see before the smoothing hides them.
        let visible = corrected.iter().filter(|c| c.distance > VISIBLE).count();
        let (c50, c99) = percentiles(corrected.iter().map(|c| c.distance).collect());
        let (a50, a99) = percentiles(corrected.iter().map(|c| c.angle.abs()).collect());
        let smoothed: Vec<Option<[f32; 2]>> = d.drawn.iter().map(|o| o.map(|(r, _)| r)).collect();
        let raw: Vec<Option<[f32; 2]>> = d.drawn.iter().map(|o| o.map(|(_, m)| m)).collect();
        let (j50, j99) = percentiles(jitter(&smoothed, &d.breaks));
        let (r50, r99) = percentiles(jitter(&raw, &d.breaks));
        let (o50, o99) = percentiles(jitter(&d.others, &[]));
        let per_block = d.reconcile_time.as_secs_f64() * 1e6 / d.corrections.len().max(1) as f64;
        let name = d.client.welcome().map_or_else(String::new, |w| w.nickname.clone());
        println!("client {name}: {} blocks reconciled, delay estimate {:?} ticks", d.corrections.len(), p.delay());
        println!(
            "  corrections (blocks that moved the present): {} ({} snaps, {visible} by more than {VISIBLE} units); \
             distance p50 {c50:.3} p99 {c99:.3} units; heading p50 {a50:.4} p99 {a99:.4} rad",
            corrected.len(),
            snaps
        );
        println!(
            "  render jitter |Δpos(n) − Δpos(n−1)| at 60 Hz, units/frame: own tank drawn p50 {j50:.3} p99 {j99:.3} \
             (raw prediction p50 {r50:.3} p99 {r99:.3}); other tank interpolated p50 {o50:.3} p99 {o99:.3}"
        );
        println!(
            "  local tracers predicted {}, own authoritative w1 rows suppressed {}; divergence records {}; \
             {per_block:.1} µs per block (obstacles + reconcile)",
            d.local_shots,
            d.suppressed,
            p.divergence().total()
        );
        report.push(serde_json::json!({
            "client": name,
            "blocks": d.corrections.len(),
            "corrections": corrected.len(),
            "snaps": snaps,
            "correctionsOverTenthOfAUnit": visible,
            "correctionDistanceP50": c50,
            "correctionDistanceP99": c99,
            "correctionAngleP50": a50,
            "correctionAngleP99": a99,
            "renderJitterP50": j50,
            "renderJitterP99": j99,
            "rawJitterP50": r50,
            "rawJitterP99": r99,
            "otherJitterP50": o50,
            "otherJitterP99": o99,
            "delayTicks": p.delay(),
            "localTracers": d.local_shots,
            "suppressedRows": d.suppressed,
            "divergences": p.divergence().total(),
            "usPerBlock": per_block,
        }));
    }
    println!(
        "{}",
        serde_json::json!({
            "bench": "prediction",
            "gameSeconds": GAME_TIME.as_secs(),
            "link": { "latencyMs": 50, "jitterMs": 10, "loss": 0.02 },
            "jitter": "p50/p99 of |Δpos(frame n) − Δpos(frame n−1)| of the drawn tank at 60 Hz, world units",
            "wallSeconds": wall.as_secs_f64(),
            "clients": report,
        })
    );
}
