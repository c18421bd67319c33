//! Host migration figures at 16 tanks: checkpoint size and encode/decode time, log bytes per
//! second, the host's migration upload per successor, the shadow's replay cost.
//!
//! A host `Server` on the default map with 14 bots and two `Client`s (the successors, 20 and
//! 40 ms away, 2 % loss on the unreliable channel, linked to each other too) pressing keys, for 60 s of game time in
//! simulated time; each successor feeds a `Shadow` from what it receives and checks every
//! logged hash.
//!
//! Run: `cargo bench -p vimp-host --bench migration`

use std::time::{Duration, Instant};

use vimp_host::engine::migration::{Checkpoint, LogBatch, Shadow};
use vimp_host::engine::server::{Server, ServerConfig};
use vimp_host::prelude::*;
use vimp_host::tanks::GAME;
use vimp_netcode::client::Client;
use vimp_netcode::input::KeyAction;
use vimp_netcode::link::LinkConfig;
use vimp_netcode::migration::MigrationPayload;
use vimp_netcode::session::Hello;
use vimp_netcode::transport::{MemoryTransport, PeerKey};

const MAP: &str = include_str!("../../maps/default.json");
const SEED: u64 = 5;
const GAME_TIME: Duration = Duration::from_secs(60);
const STEP: Duration = Duration::from_millis(5);
const KEYS: [&str; 6] = ["forward", "left", "fire", "right", "back", "gunLeft"];

/// A successor: its client, its shadow and the time spent feeding it.
struct Shadowing {
    client: Client<MemoryTransport>,
    shadow: Option<Shadow>,
    replay: Duration,
    errors: u64,
}

impl Shadowing {
    fn feed(&mut self) {
        let start = Instant::now();
        for payload in self.client.take_migration() {
            let ok = match payload {
                MigrationPayload::Checkpoint(bytes) => match (Checkpoint::decode(&bytes), &mut self.shadow) {
                    (Ok(c), Some(shadow)) => shadow.offer(&c).is_ok(),
                    (Ok(c), None) => {
                        self.shadow = Shadow::from_checkpoint(vimp_host::tanks::init_config(SEED), GAME, &c).ok();
                        self.shadow.is_some()
                    }
                    (Err(_), _) => false,
                },
                MigrationPayload::Log(bytes) => match (LogBatch::decode(&bytes), &mut self.shadow) {
                    (Ok(batch), Some(shadow)) => shadow.apply(&batch).is_ok(),
                    _ => false,
                },
                MigrationPayload::Handoff(_) => true,
            };
            self.errors += u64::from(!ok);
        }
        self.replay += start.elapsed();
    }
}

fn main() {
    let config = vimp_host::tanks::init_config(SEED);
    let mut host = Host::new(config.clone(), GAME).expect("host");
    host.load_map_json("default", MAP).expect("map");
    for i in 0..14 {
        host.push(HostCommand::Join { player: PlayerId(100 + i), name: format!("bot{i}"), team: None, bot: true });
    }
    host.step();
    let server_config =
        ServerConfig { client_config: vimp_host::tanks::client_config(&config), ..ServerConfig::default() };
    let mut server = Server::new(host, MemoryTransport::new(PeerKey(1000)), server_config);
    let mut successors: Vec<Shadowing> = [20, 40]
        .into_iter()
        .enumerate()
        .map(|(i, ms)| {
            let mut t = MemoryTransport::new(PeerKey(i as u128 + 1));
            let link = LinkConfig::new()
                .latency(Duration::from_millis(ms))
                .jitter(Duration::from_millis(3))
                .loss(0.02)
                .seed(i as u64 + 1);
            MemoryTransport::connect(&mut t, server.transport_mut(), link);
            let hello = Hello::new(format!("p{i}"), "bench");
            Shadowing { client: Client::new(t, hello), shadow: None, replay: Duration::ZERO, errors: 0 }
        })
        .collect();
    // A full mesh: a successor must reach every other peer to be listed.
    if let [a, b] = &mut successors[..] {
        MemoryTransport::connect(a.client.transport_mut(), b.client.transport_mut(), LinkConfig::new().seed(9));
    }

    let wall = Instant::now();
    let mut now = Duration::ZERO;
    let mut n = 0u64;
    while now < GAME_TIME {
        now += STEP;
        n += 1;
        if n.is_multiple_of(20) {
            for (i, s) in successors.iter_mut().enumerate() {
                let step = n / 20;
                let key = KEYS[(step as usize / 7 + i) % KEYS.len()];
                match step % 7 {
                    0 => s.client.key(KeyAction::Down, key),
                    5 => s.client.key(KeyAction::Up, key),
                    _ => None,
                };
            }
        }
        for s in &mut successors {
            s.client.update(now);
        }
        server.update(now);
        for s in &mut successors {
            s.feed();
        }
    }
    let wall = wall.elapsed();
    let tanks = server.host().world().resource::<vimp_host::engine::players::Participants>().0.len();

    // Checkpoint encode (capture + LZ4) and decode (decode + restore into a fresh host), best of 20.
    let mut encode = Duration::MAX;
    let mut decode = Duration::MAX;
    let mut sizes = (0, 0);
    for _ in 0..20 {
        let t = Instant::now();
        let checkpoint = server.checkpoint().expect("checkpoint");
        let bytes = checkpoint.encode().expect("encode");
        encode = encode.min(t.elapsed());
        sizes = (bytes.len(), checkpoint.state.len());
        let t = Instant::now();
        let back = Checkpoint::decode(&bytes).expect("decode");
        let _shadow = Shadow::from_checkpoint(config.clone(), GAME, &back).expect("restore");
        decode = decode.min(t.elapsed());
    }

    let stats = server.migration_stats();
    let secs = GAME_TIME.as_secs_f64();
    println!("migration at {tanks} tanks, {} s of game time ({wall:.2?} wall)", GAME_TIME.as_secs());
    println!(
        "  checkpoint: {} B lz4 (state dump {} B), capture+encode {encode:.2?}, decode+restore {decode:.2?}",
        sizes.0, sizes.1
    );
    println!(
        "  checkpoints sent: {} ({} B); log: {} entries, {} batches, {:.0} B/s per successor",
        stats.checkpoints,
        stats.checkpoint_bytes,
        stats.log_entries,
        stats.log_batches,
        stats.log_bytes as f64 / secs / successors.len() as f64
    );
    for (peer, bytes) in &stats.per_successor {
        println!("  host upload to successor {}: {:.0} B/s", peer.0, *bytes as f64 / secs);
    }
    for (i, s) in successors.iter().enumerate() {
        let shadow = s.shadow.as_ref().expect("a shadow");
        println!(
            "  successor {}: shadow at tick {} (host {}), {} hashes checked, {} mismatches, {} errors, replay {:.1} ms per s of game",
            i + 1,
            shadow.tick(),
            server.host().tick(),
            shadow.hashes_checked(),
            shadow.mismatches(),
            s.errors,
            s.replay.as_secs_f64() * 1000.0 / secs
        );
    }
    // The shadow replays continuously; replaying only at takeover instead would add the
    // replay of up to one checkpoint interval of log to the resume time.
    let worst = successors.iter().map(|s| s.replay.as_secs_f64() * 1000.0 / secs).fold(0.0, f64::max);
    let interval = vimp_host::engine::migration::MigrationConfig::default().checkpoint_interval.as_secs_f64();
    println!("  replay at takeover instead: up to {:.1} ms added to resume ({interval} s of log)", worst * interval);
}
