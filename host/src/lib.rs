//! vimp's authoritative match: the host simulation as a headless Bevy ECS schedule.
//!
//! The host runs in one player's process, on its own thread, at a fixed 120 Hz
//! step. One tick is one run of the [`HostTick`](engine::sim::HostTick) schedule:
//!
//! ```text
//! HostCommands ─► Inputs ─► Game ─► Physics ─► Contacts ─► Deletions ─► Snapshot ─► Send ─► frames
//!  (joins,          (key       (game    (rapier    (game      (removal     (game rows,  (v6 or v5,
//!   inputs)          bits)      rules)   step)      reacts)    queue)       30 Hz)       per receiver)
//! ```
//!
//! The engine half ([`engine`]) never names a game word; the reference game
//! ([`tanks`]) plugs into its system sets, registers its snapshot schema and its
//! dump hooks. A match can be dumped between any two ticks and restored into a
//! fresh host that continues it bit-identically.
//!
//! ```no_run
//! use vimp_host::prelude::*;
//!
//! use vimp_host::tanks::GAME;
//!
//! let mut host = Host::new(GAME.init(7), GAME)?;
//! host.load_map_json("maps/test-small.json", &std::fs::read_to_string("maps/test-small.json")?)?;
//! host.push(HostCommand::Join { player: PlayerId(0), name: "bot".into(), team: None, bot: true });
//! for _ in 0..120 {
//!     host.step();
//! }
//! let dump = host.serialize_state()?;
//! let mut twin = Host::restore(GAME.init(7), GAME, &dump)?;
//! host.step();
//! twin.step();
//! assert_eq!(host.state_hash()?, twin.state_hash()?);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod engine;
pub mod tanks;

pub use engine::config::{EngineConfig, InitConfig};
pub use engine::players::{HostCommand, PlayerId};
pub use engine::schedule::{Host, HostError, HostPlugin};
pub use engine::sim::{HostSystems, HostTick, Tick};

/// The types most users of the crate need.
pub mod prelude {
    pub use crate::engine::game::{BotSkill, Game};
    pub use crate::engine::map::MapConfig;
    pub use crate::{EngineConfig, Host, HostCommand, HostPlugin, HostSystems, InitConfig, PlayerId, Tick};
}
