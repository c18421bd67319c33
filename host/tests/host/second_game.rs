//! A second, tiny game — pucks pushed by one key — proves the engine needs nothing of tanks:
//! its own schema, its own rows, its own dump hooks, through the engine's game seam
//! (`vimp_host::engine::game`) alone.

use bevy::prelude::*;
use rapier2d::prelude::*;
use serde::{Deserialize, Serialize};
use vimp_host::engine::game::{
    GameHooks, HostSystems, HostTick, InitConfig, Participants, Physics, PlayerId, PlayerKeys, RowsSystems,
    SnapshotRows, TickEvents, encode_tag,
};
use vimp_netcode::input::KeyTable;
use vimp_netcode::snapshot::{Block, FieldValue};

#[derive(Component, Clone, Serialize, Deserialize)]
pub(crate) struct Puck {
    pub(crate) player: PlayerId,
    pub(crate) body: RigidBodyHandle,
    pub(crate) pushes: u32,
}

pub(crate) struct PucksPlugin;

pub(crate) fn config() -> InitConfig {
    let mut c = InitConfig::default();
    c.engine.snapshot = serde_json::from_str(
        r#"{ "keys": {
            "p": { "id": 1, "kind": "indexed8", "class": "hot", "fields": [
                { "name": "x", "ty": "f32", "interp": "lerp" }, { "name": "y", "ty": "f32", "interp": "lerp" },
                { "name": "pushes", "ty": "u32" } ] },
            "c1": { "id": 2, "kind": "indexedNoNull8", "class": "hot", "fields": [
                { "name": "x", "ty": "f32" }, { "name": "y", "ty": "f32" }, { "name": "angle", "ty": "f32" } ] } } }"#,
    )
    .expect("schema");
    c.engine.seed = Some(3);
    c
}

impl Plugin for PucksPlugin {
    fn build(&self, app: &mut App) {
        let keys = KeyTable::from_json(r#"{ "push": { "bit": 0, "type": 0 } }"#).expect("keys");
        app.insert_resource(PlayerKeys(keys)).insert_resource(GameHooks {
            save: |w| {
                let mut p: Vec<Puck> = w.query::<&Puck>().iter(w).cloned().collect();
                p.sort_by_key(|p| p.player);
                serde_json::to_vec(&p).map_err(|e| e.to_string())
            },
            load: |w, bytes| {
                for p in serde_json::from_slice::<Vec<Puck>>(bytes).map_err(|e| e.to_string())? {
                    w.spawn(p);
                }
                Ok(())
            },
            ..GameHooks::default()
        });
        app.add_systems(HostTick, (spawn, push).chain().in_set(HostSystems::Game))
            .add_systems(HostTick, rows.in_set(HostSystems::Snapshot).in_set(RowsSystems));
    }
}

fn spawn(mut commands: Commands, events: Res<TickEvents>, mut physics: ResMut<Physics>) {
    for player in &events.joined {
        let body = RigidBodyBuilder::dynamic()
            .translation(Vector::new(100.0 + 40.0 * player.0 as f32, 100.0))
            .user_data(encode_tag(2, player.0 as u64));
        let (body, _) = physics.insert(body, ColliderBuilder::ball(10.0));
        commands.spawn(Puck { player: *player, body, pushes: 0 });
    }
}

fn push(participants: Res<Participants>, mut physics: ResMut<Physics>, mut pucks: Query<&mut Puck>) {
    let mut list: Vec<Mut<Puck>> = pucks.iter_mut().collect();
    list.sort_by_key(|p| p.player);
    for mut puck in list {
        if participants.0.get(&puck.player).is_some_and(|p| p.bits.is_held(0)) {
            puck.pushes += 1;
            if let Some(b) = physics.world_mut().bodies.get_mut(puck.body) {
                b.apply_impulse(Vector::new(50.0, 10.0), true);
            }
        }
    }
}

fn rows(physics: Res<Physics>, pucks: Query<&Puck>, mut rows: ResMut<SnapshotRows>) {
    let mut list: Vec<&Puck> = pucks.iter().collect();
    list.sort_by_key(|p| p.player);
    let block = list
        .into_iter()
        .map(|p| {
            let t = physics.world().bodies[p.body].translation();
            (p.player.0, Some(vec![FieldValue::F32(t.x), FieldValue::F32(t.y), FieldValue::U32(p.pushes)]))
        })
        .collect();
    rows.blocks.push((1, Block::Indexed8(block)));
}
