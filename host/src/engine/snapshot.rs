//! Snapshot building on the host: the game's rows and events in, one packed v5 frame per receiver out.
//!
//! On every snapshot tick (every `networkSendRate`-th tick, 30 Hz by default):
//!
//! 1. [`clear_rows`] empties [`SnapshotRows`];
//! 2. the game's systems in [`RowsSystems`] fill it from the ECS (hot rows, each
//!    player's [`PlayerBlock`]);
//! 3. [`pack_frames`] adds the event rows the game pushed into [`EventRows`] since
//!    the last frame, builds the map-dynamics block itself, packs the shared body
//!    once and puts each receiver's own header in front of it.

use std::collections::{BTreeMap, BTreeSet};

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use vimp_netcode::delta;
use vimp_netcode::schema::{BlockKind, FieldType, Role};
use vimp_netcode::snapshot::{Block, FieldValue, Frame, PlayerBlock, Row, pack_body, pack_header, round2};

use crate::engine::mapstate::MapState;
use crate::engine::physics::Physics;
use crate::engine::players::PlayerId;
use crate::engine::sim::{EngineSettings, Tick};

/// The game's row-building systems: add them here (they run on snapshot ticks only).
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RowsSystems;

/// What the game puts in this frame: hot blocks and each player's own state.
#[derive(Resource, Debug, Default)]
pub struct SnapshotRows {
    /// `(key id, block)` of the game's keys.
    pub blocks: Vec<(u8, Block)>,
    /// The player block of each playing participant.
    pub players: BTreeMap<PlayerId, PlayerBlock>,
}

/// Event rows the game pushed since the last frame; sent with the next one, once.
#[derive(Resource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EventRows(pub BTreeMap<u8, Block>);

impl EventRows {
    /// Queues one row of key `key` (of shape `kind`) for the next frame. `id` is ignored by
    /// `list16`; `row: None` (removal) is only meaningful for `indexed8`/`indexed32`.
    pub fn push(&mut self, key: u8, kind: BlockKind, id: u32, row: Option<Row>) {
        self.0.entry(key).or_insert_with(|| Block::empty(kind)).push(id, row);
    }
}

/// The number of frames built so far (the next frame's seq is this + 1).
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameSeq(pub u32);

/// Who gets a frame: the session layer keeps this in step with connected clients.
#[derive(Resource, Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameReceivers(pub BTreeSet<PlayerId>);

/// The frames packed on the last snapshot tick: `(receiver, bytes)`.
#[derive(Resource, Debug, Default, Clone, PartialEq)]
pub struct OutgoingFrames {
    /// The frame's seq.
    pub seq: u32,
    /// One frame per receiver.
    pub frames: Vec<(PlayerId, Vec<u8>)>,
}

/// Running totals of what was packed, for figures.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq)]
pub struct SnapshotStats {
    /// Frames (snapshot ticks) built.
    pub frames: u64,
    /// Bytes of all frames to all receivers.
    pub bytes: u64,
    /// Frames sent, summed over receivers.
    pub receiver_frames: u64,
    /// Bytes of the last shared body.
    pub last_body_bytes: usize,
    /// Frames that failed to pack (a game bug: rows that do not fit the schema).
    pub pack_errors: u64,
}

/// What the same frames would cost as delta frames (format 6, [`vimp_netcode::delta`]), for
/// figures: with this resource present, every snapshot tick also works out its world and
/// encodes each receiver's frame against the previous world (each receiver having
/// acknowledged the frame before, a perfect link), counting bytes and time. Nothing is sent.
#[derive(Resource, Debug, Default)]
pub struct DeltaProbe {
    /// The world as of the last frame, as a receiver holds it, and its numbers.
    world: Option<(Frame, delta::Steps)>,
    /// Bytes of all delta frames to all receivers.
    pub bytes: u64,
    /// Delta frames encoded (one per receiver per snapshot tick).
    pub frames: u64,
    /// Time spent working out the world once per snapshot tick, µs.
    pub world_us: f64,
    /// Time spent encoding every receiver's frame, µs.
    pub encode_us: f64,
}

/// Run condition: this tick builds a snapshot.
pub fn snapshot_tick(tick: Res<Tick>, settings: Res<EngineSettings>) -> bool {
    tick.0.is_multiple_of(settings.config.network_send_rate)
}

/// Empties [`SnapshotRows`] before the game fills it.
pub(crate) fn clear_rows(mut rows: ResMut<SnapshotRows>) {
    rows.blocks.clear();
    rows.players.clear();
}

/// Builds the map-dynamics rows, merges events, packs the body once and a frame per receiver.
pub(crate) fn pack_frames(
    tick: Res<Tick>,
    settings: Res<EngineSettings>,
    physics: Res<Physics>,
    map: Res<MapState>,
    mut rows: ResMut<SnapshotRows>,
    mut events: ResMut<EventRows>,
    mut seq: ResMut<FrameSeq>,
    receivers: Res<FrameReceivers>,
    mut out: ResMut<OutgoingFrames>,
    mut stats: ResMut<SnapshotStats>,
    probe: Option<ResMut<DeltaProbe>>,
) {
    let mut blocks = std::mem::take(&mut rows.blocks);
    for (key, block) in std::mem::take(&mut events.0) {
        match blocks.iter_mut().find(|(k, _)| *k == key) {
            Some((_, existing)) => {
                if let Err(e) = existing.extend(block) {
                    if stats.pack_errors == 0 {
                        tracing::error!("event rows do not fit their block: {e:?}");
                    }
                    stats.pack_errors += 1;
                }
            }
            None => blocks.push((key, block)),
        }
    }
    if let Some(block) = map_dynamics_block(&settings, &physics, &map) {
        blocks.push(block);
    }
    blocks.sort_by_key(|(k, _)| *k);

    seq.0 = seq.0.wrapping_add(1);
    let mut body = Vec::with_capacity(2048);
    if let Err(e) = pack_body(&settings.schema, &blocks, &mut body) {
        // A game bug, and every frame would fail alike: said once, counted always.
        if stats.pack_errors == 0 {
            tracing::error!("no snapshot frame could be packed: {e}");
        }
        stats.pack_errors += 1;
        return;
    }
    let server_time_ms = tick.0 as f64 * settings.dt() as f64 * 1000.0;
    out.seq = seq.0;
    out.frames.clear();
    for &receiver in &receivers.0 {
        let mut frame = Vec::with_capacity(body.len() + 64);
        pack_header(seq.0, server_time_ms, rows.players.get(&receiver), &mut frame);
        frame.extend_from_slice(&body);
        stats.bytes += frame.len() as u64;
        stats.receiver_frames += 1;
        out.frames.push((receiver, frame));
    }
    stats.frames += 1;
    stats.last_body_bytes = body.len();
    if let Some(mut probe) = probe {
        let t = std::time::Instant::now();
        let frame = Frame { seq: seq.0, server_time_ms, player: None, blocks };
        let mut world = delta::world(&settings.schema, probe.world.as_ref().map(|(w, _)| w), &frame);
        let Ok(steps) = delta::Steps::of(&settings.schema, &world) else { return };
        probe.world_us += t.elapsed().as_secs_f64() * 1e6;
        // Each receiver's own frame, as a host would encode it for them.
        let t = std::time::Instant::now();
        let mut bytes = Vec::with_capacity(body.len());
        let baseline = probe.world.as_ref().map(|(_, s)| s);
        let mut sent = (0, 0);
        for receiver in &receivers.0 {
            world.player = rows.players.get(receiver).copied();
            bytes.clear();
            if delta::encode_steps(&settings.schema, &world, &steps, baseline, &mut bytes).is_ok() {
                sent.0 += bytes.len() as u64;
                sent.1 += 1;
            }
        }
        probe.bytes += sent.0;
        probe.frames += sent.1;
        probe.encode_us += t.elapsed().as_secs_f64() * 1e6;
        world.player = None;
        probe.world = Some((world, steps));
    }
}

/// The map's dynamic bodies as the block of the map's set key, when the schema has that key.
///
/// Row: `x, y, angle` (rounded), then `z, level` when the schema declares those roles
/// (0 on flat maps), then the `state` byte when declared, then the velocities
/// `vx, vy, angvel` as far as the row has f32 fields left (the optional tail: the
/// packer leaves it out for a body at rest). A disabled body reports no velocity.
pub fn map_dynamics_block(settings: &EngineSettings, physics: &Physics, map: &MapState) -> Option<(u8, Block)> {
    let game_map = map.map.as_ref()?;
    let set_id = map.set_id(&settings.config);
    let schema = settings.schema.by_name(set_id)?;
    if schema.kind != BlockKind::IndexedNoNull8 {
        return None;
    }
    let bodies = &physics.world().bodies;
    let mut rows = Vec::with_capacity(game_map.dynamic_count());
    for i in 0..game_map.dynamic_count().min(u8::MAX as usize + 1) {
        let Some(body) = game_map.dynamic_handle(i).and_then(|h| bodies.get(h)) else { continue };
        let p = body.translation();
        let angle = body.rotation().angle();
        let (v, w) = if body.is_enabled() { (body.linvel(), body.angvel()) } else { (Default::default(), 0.0) };
        let velocities = [v.x, v.y, w];
        let mut next_velocity = 0;
        let row: Row = schema
            .fields
            .iter()
            .enumerate()
            .map(|(j, f)| {
                let value = match (j, f.role) {
                    (_, Some(Role::State)) => {
                        return FieldValue::U8(map.body_state.get(i).copied().unwrap_or_default());
                    }
                    (_, Some(Role::Z | Role::Level)) => 0.0,
                    (0, _) => p.x,
                    (1, _) => p.y,
                    (2, _) => angle,
                    _ => {
                        let v = velocities.get(next_velocity).copied().unwrap_or_default();
                        next_velocity += 1;
                        v
                    }
                };
                match f.ty {
                    FieldType::F32 => FieldValue::F32(round2(value)),
                    FieldType::U8 => FieldValue::U8(value as u8),
                    FieldType::U16 => FieldValue::U16(value as u16),
                    FieldType::U32 => FieldValue::U32(value as u32),
                }
            })
            .collect();
        rows.push((i as u8, row));
    }
    Some((schema.id, Block::IndexedNoNull8(rows)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_rows_take_the_shape_of_their_kind() {
        let mut ev = EventRows::default();
        ev.push(3, BlockKind::Indexed32, 70_000, None);
        ev.push(3, BlockKind::Indexed32, 5, Some(vec![FieldValue::U8(1)]));
        ev.push(2, BlockKind::List16, 0, Some(vec![FieldValue::F32(1.0)]));
        ev.push(2, BlockKind::List16, 0, None);
        assert_eq!(ev.0[&3], Block::Indexed32(vec![(70_000, None), (5, Some(vec![FieldValue::U8(1)]))]));
        assert_eq!(ev.0[&2], Block::List16(vec![vec![FieldValue::F32(1.0)]]), "a null list row is dropped");
    }
}
