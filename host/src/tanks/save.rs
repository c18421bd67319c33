//! The tanks game's hooks into the engine: its part of state dumps, of `debug_json`, and map loads.

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::engine::container::{self, ContainerKind};
use crate::engine::game::GameHooks;
use crate::engine::map::LevelState;
use crate::engine::map::state::MapState;
use crate::engine::meta::MetaOutbox;
use crate::engine::nav::Nav;
use crate::engine::physics::Physics;
use crate::engine::sim::SimRng;
use crate::tanks::TanksRules;
use crate::tanks::bots::{Bot, RecentBlasts};
use crate::tanks::config::BotRules;
use crate::tanks::lagcomp::HullHistory;
use crate::tanks::level::TankLevel;
use crate::tanks::rounds::Round;
use crate::tanks::tank::{Spawn, TEAMS, Tank, free_respawn_point, layered, respawn};
use crate::tanks::weapons::{Bomb, NextShotId};

/// Magic of the tanks game's part of a dump.
const KIND: ContainerKind = ContainerKind(*b"VMPT");
/// Its format version on a flat map before lag compensation: [`TanksDump`] (still read).
const VERSION_2: u16 = 2;
/// Its format version on a layered map before lag compensation: [`TanksDump`], then
/// [`LevelsDump`] (still read).
const LAYERED_VERSION_3: u16 = 3;
/// Its format version on a flat map: [`TanksDump`], then [`HullHistory`].
const VERSION: u16 = 4;
/// Its format version on a layered map: [`TanksDump`], [`LevelsDump`], then [`HullHistory`].
const LAYERED_VERSION: u16 = 5;

#[derive(Serialize, Deserialize)]
struct TanksDump {
    tanks: Vec<(Tank, Option<Bot>)>,
    bombs: Vec<Bomb>,
    round: Round,
    next_shot_id: NextShotId,
    blasts: RecentBlasts,
    /// The bot rules (the skill of bots that join), so that a successor's new bots are the host's.
    bot_rules: BotRules,
}

/// On a layered map, where each tank and bomb is in height, in the order of [`TanksDump`]'s lists.
#[derive(Serialize, Deserialize)]
struct LevelsDump {
    tanks: Vec<TankLevel>,
    bombs: Vec<LevelState>,
}

/// The hooks the tanks plugin registers.
pub(crate) fn hooks() -> GameHooks {
    GameHooks { save, load, on_map_loaded, debug }
}

fn collect(world: &mut World) -> TanksDump {
    let mut tanks: Vec<(Tank, Option<Bot>)> =
        world.query::<(&Tank, Option<&Bot>)>().iter(world).map(|(t, b)| (t.clone(), b.cloned())).collect();
    tanks.sort_by_key(|(t, _)| t.player);
    let mut bombs: Vec<Bomb> = world.query::<&Bomb>().iter(world).cloned().collect();
    bombs.sort_by_key(|b| b.id);
    TanksDump {
        tanks,
        bombs,
        round: world.resource::<Round>().clone(),
        next_shot_id: *world.resource::<NextShotId>(),
        blasts: world.resource::<RecentBlasts>().clone(),
        bot_rules: world.resource::<TanksRules>().0.bots.clone(),
    }
}

fn save(world: &mut World) -> Result<Vec<u8>, String> {
    let state = collect(world);
    let history = world.resource::<HullHistory>();
    let encoded = if world.resource::<MapState>().is_layered() {
        let levels = LevelsDump {
            tanks: state.tanks.iter().map(|(t, _)| t.level).collect(),
            bombs: state.bombs.iter().map(|b| b.level).collect(),
        };
        container::encode(KIND, LAYERED_VERSION, &(&state, &levels, history))
    } else {
        container::encode(KIND, VERSION, &(&state, history))
    };
    encoded.map_err(|e| e.to_string())
}

/// Puts each tank's and bomb's level of `levels` on them.
fn put_levels(state: &mut TanksDump, levels: LevelsDump) -> Result<(), String> {
    if levels.tanks.len() != state.tanks.len() || levels.bombs.len() != state.bombs.len() {
        return Err("the levels of the tanks and bombs do not match them".into());
    }
    for ((tank, _), level) in state.tanks.iter_mut().zip(levels.tanks) {
        tank.level = level;
    }
    for (bomb, level) in state.bombs.iter_mut().zip(levels.bombs) {
        bomb.level = level;
    }
    Ok(())
}

fn load(world: &mut World, bytes: &[u8]) -> Result<(), String> {
    let version = container::peek_version(KIND, bytes).map_err(|e| e.to_string())?;
    let err = |e: container::ContainerError| e.to_string();
    // A dump from before lag compensation has no hulls to look back on: shots judge the
    // present until the history fills again.
    let (mut state, history): (TanksDump, HullHistory) = match version {
        LAYERED_VERSION => {
            let (mut state, levels, history): (TanksDump, LevelsDump, HullHistory) =
                container::decode(KIND, LAYERED_VERSION, bytes).map_err(err)?;
            put_levels(&mut state, levels)?;
            (state, history)
        }
        LAYERED_VERSION_3 => {
            let (mut state, levels): (TanksDump, LevelsDump) =
                container::decode(KIND, LAYERED_VERSION_3, bytes).map_err(err)?;
            put_levels(&mut state, levels)?;
            (state, HullHistory::default())
        }
        VERSION_2 => (container::decode(KIND, VERSION_2, bytes).map_err(err)?, HullHistory::default()),
        _ => container::decode(KIND, VERSION, bytes).map_err(err)?,
    };
    if !world.resource::<MapState>().is_layered() {
        for (tank, _) in &mut state.tanks {
            tank.level = TankLevel::default();
        }
    }
    let old: Vec<Entity> = world.query_filtered::<Entity, Or<(With<Tank>, With<Bomb>)>>().iter(world).collect();
    for e in old {
        world.despawn(e);
    }
    for (tank, bot) in state.tanks {
        let mut e = world.spawn(tank);
        if let Some(bot) = bot {
            e.insert(bot);
        }
    }
    for bomb in state.bombs {
        world.spawn(bomb);
    }
    world.insert_resource(state.round);
    world.insert_resource(state.next_shot_id);
    world.insert_resource(state.blasts);
    world.insert_resource(history);
    world.resource_mut::<TanksRules>().0.bots = state.bot_rules;
    prepare_routes(world);
    Ok(())
}

/// Gets the navigation ready for the bots' routes ([`crate::tanks::bots::brain::prepare`]).
fn prepare_routes(world: &World) {
    if let Some(nav) = world.get_resource::<Nav>().and_then(|n| n.0.as_ref()) {
        crate::tanks::bots::brain::prepare(&world.resource::<TanksRules>().0.models.tank, nav);
    }
}

/// A new map (or the same map again for a new round): every team needs respawns; every
/// bomb and remembered blast is gone; every tank goes back to a respawn point and every bot
/// forgets its plans; a round starts.
fn on_map_loaded(world: &mut World) -> Result<(), String> {
    {
        let map = world.resource::<MapState>();
        let respawns = map.map.as_ref().map(|m| m.respawns()).ok_or("no map")?;
        for team in TEAMS {
            if respawns.get(&team.to_string()).is_none_or(|p| p.is_empty()) {
                return Err(format!("the map has no respawns for team \"{team}\""));
            }
        }
    }
    let bombs: Vec<(Entity, Bomb)> =
        world.query::<(Entity, &Bomb)>().iter(world).map(|(e, b)| (e, b.clone())).collect();
    for (entity, bomb) in bombs {
        world.resource_mut::<Physics>().queue_removal(bomb.body);
        world.despawn(entity);
    }
    world.resource_mut::<Physics>().apply_removals();
    world.resource_mut::<RecentBlasts>().0.clear();
    // The hulls of the map before are nowhere on this one.
    world.resource_mut::<HullHistory>().0.clear();
    prepare_routes(world);
    for (tank, mut bot) in world.query::<(&Tank, &mut Bot)>().iter_mut(world) {
        bot.reset(tank.player);
    }
    world.resource_scope(|world, mut physics: Mut<Physics>| {
        world.resource_scope(|world, mut rng: Mut<SimRng>| {
            let rules = world.resource::<TanksRules>().clone();
            let mut tanks: Vec<(Entity, Tank)> =
                world.query::<(Entity, &Tank)>().iter(world).map(|(e, t)| (e, t.clone())).collect();
            tanks.sort_by_key(|(_, t)| t.player);
            let map = world.resource::<MapState>();
            let mut points = Vec::new();
            for (_, t) in &tanks {
                let taken: Vec<[f32; 2]> = points.iter().map(|p: &Spawn| [p.at[0], p.at[1]]).collect();
                points.push(free_respawn_point(map, t.team, &taken, &mut rng));
            }
            let levels = layered(map).cloned();
            for ((entity, mut tank), spawn) in tanks.into_iter().zip(points) {
                respawn(&mut tank, &mut physics, spawn, &rules, levels.as_ref());
                world.entity_mut(entity).insert(tank);
            }
        });
    });
    world.resource_scope(|world, mut round: Mut<Round>| {
        let rules = world.resource::<TanksRules>().clone();
        let mut outbox = world.resource_mut::<MetaOutbox>();
        round.start_next(&rules, &mut outbox);
    });
    Ok(())
}

fn debug(world: &mut World) -> serde_json::Value {
    let state = collect(world);
    json!({
        "round": state.round,
        "nextShotId": state.next_shot_id.0,
        "tanks": state.tanks.iter().map(|(t, b)| json!({ "tank": t, "bot": b })).collect::<Vec<_>>(),
        "bombs": state.bombs,
        "recentBlasts": state.blasts.0,
        "hullTicks": world.resource::<HullHistory>().0.iter().map(|(tick, _)| *tick).collect::<Vec<_>>(),
    })
}
