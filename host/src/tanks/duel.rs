//! A duel over a conditioned link, in simulated time: how often a shot aimed at what its
//! shooter sees hits (the figure of lag compensation, [`crate::tanks::lagcomp`]).
//!
//! A host [`Server`] and two [`Client`]s over in-memory links with the seeded conditioner
//! (half the round trip and half its jitter each way), on an open arena. The target holds `forward` and `left` from its welcome
//! on: it circles at full throttle, a hull's length and more away from where it was 150 ms
//! before. The shooter stands still on the other side and does what a player does: it draws
//! the target from its [`Interpolator`] (100 ms in the past), aims the pointer at the
//! centre of the hull it draws, and presses `fire` with that aim, every
//! [`Duel::fire_every`] once the target is at speed. Its hello offers views or not
//! ([`Duel::compensated`]): the same duel with and without lag compensation.
//!
//! A hit is the host's verdict: the damage the target took. The target's health and the
//! gun's ammo are made large enough that nothing dies and nothing runs out. The byte budget
//! is [`Duel::budget`] (none by default: a row the budget holds back is drawn older than the
//! moment the client says it drew, which is the budget's cost, not the compensation's).

use std::time::Duration;

use vimp_netcode::client::Client;
use vimp_netcode::input::{Aim, KeyAction};
use vimp_netcode::interp::{InterpolationConfig, Interpolator};
use vimp_netcode::link::LinkConfig;
use vimp_netcode::schema::SnapshotSchema;
use vimp_netcode::session::Hello;
use vimp_netcode::transport::{MemoryTransport, PeerKey};

use crate::engine::schedule::Host;
use crate::engine::server::{Server, ServerConfig};
use crate::tanks::GAME;
use crate::tanks::rows::key;
use crate::tanks::tank::Tank;

/// One duel's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Duel {
    /// The round trip between each client and the host.
    pub rtt: Duration,
    /// How much the round trip varies, either way.
    pub jitter: Duration,
    /// Whether the shooter's hello offers views (it is compensated).
    pub compensated: bool,
    /// How long the shooter fires, once the target is at speed.
    pub firing: Duration,
    /// A press of `fire` this often.
    pub fire_every: Duration,
    /// The links' seed.
    pub seed: u64,
    /// The snapshot byte budget per client, B/s (the game config's `snapshotBudget`; 0 for none).
    pub budget: u32,
}

impl Duel {
    /// A duel at `rtt` ± 10 ms, compensated or not, with 20 s of fire, a shot every 300 ms.
    pub fn new(rtt: Duration, compensated: bool) -> Duel {
        Duel {
            rtt,
            jitter: Duration::from_millis(10),
            compensated,
            firing: Duration::from_secs(20),
            fire_every: Duration::from_millis(300),
            seed: 7,
            budget: 0,
        }
    }

    /// One way of a link: half the round trip, half the jitter.
    fn link(&self, seed: u64) -> LinkConfig {
        LinkConfig::new().latency(self.rtt / 2).jitter(self.jitter / 2).seed(self.seed.wrapping_add(seed))
    }
}

/// What a duel gave.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DuelFigures {
    /// Presses of `fire` the host turned into shots.
    pub shots: u32,
    /// Of those, shots that hit the target (by the host's damage).
    pub hits: u32,
    /// Views the host took from the shooter, and how many it clamped.
    pub views: (u64, u64),
}

impl DuelFigures {
    /// Hits per shot (0 with no shot).
    pub fn hit_rate(&self) -> f64 {
        if self.shots == 0 { 0.0 } else { f64::from(self.hits) / f64::from(self.shots) }
    }
}

/// The arena: 24 × 16 tiles of 32, walls around, a respawn per team facing each other
/// 440 units apart (the shooter's team faces east, the target's south).
fn arena() -> String {
    let (w, h) = (24, 16);
    let rows: Vec<Vec<u8>> =
        (0..h).map(|y| (0..w).map(|x| u8::from(x == 0 || y == 0 || x == w - 1 || y == h - 1)).collect()).collect();
    serde_json::json!({
        "name": "Duel",
        "setId": "c1",
        "tileSize": 32,
        "map": rows,
        "physicsStatic": [1],
        "physicsDynamic": [],
        "respawns": { "1": [[120, 256, 0]], "2": [[560, 200, 90]] },
        "layers": { "floor": [0], "walls": [1] },
    })
    .to_string()
}

/// The time the target gets to reach its speed before the shooter fires.
const AT_SPEED: Duration = Duration::from_secs(2);

/// Runs one duel.
pub fn run(duel: Duel) -> DuelFigures {
    let mut init = crate::tanks::init_config(42);
    init.game["models"]["tank"]["health"] = serde_json::json!(1.0e6);
    init.game["weapons"]["w1"]["ammo"] = serde_json::json!(1_000_000);
    init.game["rounds"]["roundSeconds"] = serde_json::json!(3600);
    init.game["snapshotBudget"] = serde_json::json!(duel.budget);
    let client_config = crate::tanks::client_config(&init);
    let schema = SnapshotSchema::from_value(client_config["engine"]["snapshot"].clone()).expect("the tanks schema");
    let tank = crate::tanks::rows::Rows::of(&schema).expect("the tanks schema carries the tanks' rows").tanks;
    let damage = crate::tanks::config::TracerWeapon::default().damage;
    let mut host = Host::new(init, GAME).expect("host");
    host.load_map_json("duel", &arena()).expect("the arena is a valid map");
    let mut server_transport = MemoryTransport::new(PeerKey(1000));
    let mut shooter_t = MemoryTransport::new(PeerKey(1));
    let mut target_t = MemoryTransport::new(PeerKey(2));
    MemoryTransport::connect(&mut shooter_t, &mut server_transport, duel.link(1));
    MemoryTransport::connect(&mut target_t, &mut server_transport, duel.link(2));
    let config = ServerConfig { client_config, ..ServerConfig::default() };
    let mut server = Server::new(host, server_transport, config);
    let mut shooter = Client::new(shooter_t, Hello { view: duel.compensated, ..Hello::new("shooter", "duel") });
    let mut target = Client::new(target_t, Hello::new("target", "duel"));
    let mut interp = Interpolator::new(schema, InterpolationConfig::default());
    let (mut last_frame, mut driving) = (0, false);
    let mut started: Option<Duration> = None;
    let mut next_shot = Duration::ZERO;
    let mut figures = DuelFigures::default();
    let mut before: Option<(f32, u32)> = None;
    let end = AT_SPEED + duel.firing + Duration::from_secs(3);
    let mut now = Duration::ZERO;
    while now < end {
        now += Duration::from_millis(1);
        server.update(now);
        shooter.update(now);
        target.update(now);
        shooter.take_meta();
        target.take_meta();
        if !driving && target.welcome().is_some() {
            driving = target.key(KeyAction::Down, "forward").is_some() && target.key(KeyAction::Down, "left").is_some();
        }
        let (Some(me), Some(them)) = (shooter.welcome().map(|w| w.player_id), target.welcome().map(|w| w.player_id))
        else {
            continue;
        };
        let start = *started.get_or_insert(now);
        let Some(server_now) = shooter.server_time_ms(now) else { continue };
        if let Some(frame) = shooter.last_frame().filter(|f| f.seq > last_frame).cloned() {
            last_frame = frame.seq;
            interp.push(frame, server_now);
        }
        // What the shooter draws, 60 times a second, and its shots.
        if !now.as_millis().is_multiple_of(16) {
            continue;
        }
        let sample = interp.sample(server_now);
        let seen = sample.hot.get(&key::TANKS).and_then(|rows| rows.get(&u32::from(them)));
        let Some(point) = seen.and_then(|row| Aim::new(tank.x.f32(row), tank.y.f32(row), 0)) else {
            continue;
        };
        let firing = now >= start + AT_SPEED && now < start + AT_SPEED + duel.firing;
        // An aim goes when the pointer moved and the last one is 33 ms old; a shot goes with
        // a fresh aim, so that the gun points where the player sees the target.
        let sent = shooter.aim(now, Some(point));
        if sent.is_some() && firing && now >= next_shot {
            next_shot = now + duel.fire_every;
            shooter.key_seen(KeyAction::Down, "fire", Some(sample.drawn_time_ms));
            if before.is_none() {
                before = Some(tank_state(&mut server, them, me));
            }
        }
    }
    // Let the last shots land, then read the host's verdict.
    let id = |c: &Client<MemoryTransport>| c.welcome().map_or(0, |w| w.player_id);
    let (health, ammo) = tank_state(&mut server, id(&target), id(&shooter));
    if let Some((health_0, ammo_0)) = before {
        figures.shots = ammo_0.saturating_sub(ammo);
        figures.hits = ((health_0 - health) / damage).round() as u32;
    }
    let stats = server.stats();
    figures.views = (stats.views, stats.views_clamped);
    figures
}

/// The target's health and the shooter's gun ammo, as the host has them.
fn tank_state(server: &mut Server<MemoryTransport>, target: u8, shooter: u8) -> (f32, u32) {
    let world = server.host_mut().world_mut();
    let tanks: Vec<Tank> = world.query::<&Tank>().iter(world).cloned().collect();
    let health = tanks.iter().find(|t| t.player.0 == target).map_or(0.0, |t| t.health);
    let ammo = tanks.iter().find(|t| t.player.0 == shooter).map_or(0, |t| t.ammo[0]);
    (health, ammo)
}
