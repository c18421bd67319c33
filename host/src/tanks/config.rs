//! The tanks game's config: the `game` half of the init config, with every default.

use serde::{Deserialize, Serialize};
use vimp_netcode::input::{KeyKind, KeySpec, KeyTable};

use crate::engine::game::BotSkill;

/// Key bits of the tanks game.
pub mod keys {
    /// Throttle forward (held).
    pub const FORWARD: u8 = 0;
    /// Throttle back (held).
    pub const BACK: u8 = 1;
    /// Turn the hull left (held).
    pub const LEFT: u8 = 2;
    /// Turn the hull right (held).
    pub const RIGHT: u8 = 3;
    /// Turn the gun left (held).
    pub const GUN_LEFT: u8 = 4;
    /// Turn the gun right (held).
    pub const GUN_RIGHT: u8 = 5;
    /// Fire the active weapon (one-shot).
    pub const FIRE: u8 = 6;
    /// Switch to the next weapon (one-shot).
    pub const NEXT_WEAPON: u8 = 7;
}

/// The default `playerKeys` table.
pub fn default_keys() -> KeyTable {
    let held = |bit| KeySpec { bit, kind: KeyKind::Held };
    let once = |bit| KeySpec { bit, kind: KeyKind::OneShot };
    let table = [
        ("forward", held(keys::FORWARD)),
        ("back", held(keys::BACK)),
        ("left", held(keys::LEFT)),
        ("right", held(keys::RIGHT)),
        ("gunLeft", held(keys::GUN_LEFT)),
        ("gunRight", held(keys::GUN_RIGHT)),
        ("fire", once(keys::FIRE)),
        ("nextWeapon", once(keys::NEXT_WEAPON)),
    ];
    KeyTable::new(table.into_iter().map(|(n, s)| (n.to_owned(), s)).collect()).expect("the built-in key table is valid")
}

/// A tank model: hull size and how it drives.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TankModel {
    /// Hull length along its heading, world units.
    pub length: f32,
    /// Hull width, world units.
    pub width: f32,
    /// Top speed forward, units/s.
    pub max_speed: f32,
    /// Top speed in reverse, units/s.
    pub reverse_speed: f32,
    /// Acceleration along the heading, units/s².
    pub acceleration: f32,
    /// How fast sideways sliding dies out (1/s): tracks grip.
    pub grip: f32,
    /// Top turn rate, rad/s.
    pub turn_rate: f32,
    /// Turn acceleration, rad/s².
    pub turn_acceleration: f32,
    /// How fast the throttle follows the keys (1/s).
    pub throttle_rate: f32,
    /// Gun turn rate relative to the hull, rad/s.
    pub gun_rate: f32,
    /// Hit points.
    pub health: f32,
    /// Hull density (mass per area).
    pub density: f32,
    /// How much a ramp's slope takes off the top speed (layered maps): driving along a
    /// heading that climbs `grade` per unit driven, the top speed is
    /// `1 − climbDrag · grade` times its own (coming down, more), within 0.25 and 1.5.
    pub climb_drag: f32,
}

impl Default for TankModel {
    fn default() -> Self {
        TankModel {
            length: 40.0,
            width: 30.0,
            max_speed: 170.0,
            reverse_speed: 100.0,
            acceleration: 420.0,
            grip: 14.0,
            turn_rate: 2.8,
            turn_acceleration: 18.0,
            throttle_rate: 4.0,
            gun_rate: 2.6,
            health: 100.0,
            density: 1.0,
            climb_drag: 1.2,
        }
    }
}

/// The hitscan gun (`w1`, tracers).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TracerWeapon {
    /// Damage per hit.
    pub damage: f32,
    /// Seconds between shots.
    pub reload: f32,
    /// Rounds at spawn.
    pub ammo: u32,
    /// Reach, world units.
    pub range: f32,
    /// Half-angle of the random spread, rad.
    pub spread: f32,
    /// Impulse given to a crate it hits.
    pub push: f32,
}

impl Default for TracerWeapon {
    fn default() -> Self {
        TracerWeapon { damage: 9.0, reload: 0.15, ammo: 150, range: 700.0, spread: 0.025, push: 900.0 }
    }
}

/// The bomb launcher (`w2`, projectiles with a blast).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BombWeapon {
    /// Damage at the centre of the blast, falling linearly to 0 at its edge.
    pub damage: f32,
    /// Seconds between shots.
    pub reload: f32,
    /// Bombs at spawn.
    pub ammo: u32,
    /// Launch speed, units/s.
    pub speed: f32,
    /// Seconds from launch to blast (a bomb also bursts on hitting a tank).
    pub fuse: f32,
    /// Blast radius, world units.
    pub radius: f32,
    /// Impulse at the centre of the blast.
    pub push: f32,
    /// Bomb radius, world units.
    pub size: f32,
}

impl Default for BombWeapon {
    fn default() -> Self {
        BombWeapon {
            damage: 70.0,
            reload: 0.9,
            ammo: 10,
            speed: 420.0,
            fuse: 1.1,
            radius: 90.0,
            push: 60_000.0,
            size: 5.0,
        }
    }
}

/// Both weapons.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Weapons {
    /// The hitscan gun.
    pub w1: TracerWeapon,
    /// The bomb launcher.
    pub w2: BombWeapon,
}

/// Round rules.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RoundRules {
    /// Length of a round, s.
    pub round_seconds: f32,
    /// Frags that end a round early (0: only the timer ends it).
    pub frag_limit: u32,
    /// Rounds in a game.
    pub rounds_per_game: u32,
    /// Pause between rounds, s.
    pub intermission_seconds: f32,
    /// Seconds from death to respawn.
    pub respawn_seconds: f32,
}

impl Default for RoundRules {
    fn default() -> Self {
        RoundRules {
            round_seconds: 180.0,
            frag_limit: 30,
            rounds_per_game: 3,
            intermission_seconds: 3.0,
            respawn_seconds: 2.0,
        }
    }
}

/// The game half of the init config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TanksConfig {
    /// Whether shots hurt teammates.
    pub friendly_fire: bool,
    /// Damage a tank takes per level it falls (layered maps: driving off a slab's open edge).
    pub fall_damage: f32,
    /// The tank model.
    pub models: Models,
    /// The weapons.
    pub weapons: Weapons,
    /// The key table.
    pub player_keys: KeyTable,
    /// Round rules.
    pub rounds: RoundRules,
    /// Host migration.
    pub migration: MigrationRules,
    /// Bots.
    pub bots: BotRules,
    /// How far back, at most, a shot of the hitscan gun is judged against the hulls as its
    /// shooter saw them (lag compensation), ms; 0 judges every shot against the present.
    /// The host also keeps a view within what the shooter's link explains
    /// ([`MaxRewind`](crate::engine::players::MaxRewind)).
    pub max_rewind_ms: u32,
}

/// Bots (`bots`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BotRules {
    /// `skill` (default `"normal"`): how good the match's bots are — `"easy"`, `"normal"` or `"hard"`.
    pub skill: BotSkill,
}

/// How the match survives a host change (`migration`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MigrationRules {
    /// `midRound` (default `true`): a successor continues the round from the host's checkpoint,
    /// from the tick its shadow has; `false` reloads the map and restarts the round (everyone
    /// respawns, the round timer and team frags start again), keeping players, teams and scores.
    pub mid_round: bool,
}

impl Default for MigrationRules {
    fn default() -> Self {
        MigrationRules { mid_round: true }
    }
}

/// Tank models by name (one today).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Models {
    /// The tank.
    pub tank: TankModel,
}

impl Default for TanksConfig {
    fn default() -> Self {
        TanksConfig {
            friendly_fire: false,
            fall_damage: 10.0,
            models: Models::default(),
            weapons: Weapons::default(),
            player_keys: default_keys(),
            rounds: RoundRules::default(),
            migration: MigrationRules::default(),
            bots: BotRules::default(),
            max_rewind_ms: crate::engine::players::DEFAULT_MAX_REWIND_MS,
        }
    }
}
