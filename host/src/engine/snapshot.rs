//! Snapshot building on the host: the game's rows and events in, one packed v5 frame per receiver out.
//!
//! On every snapshot tick (every `networkSendRate`-th tick, 30 Hz by default):
//!
//! 1. [`clear_rows`] empties [`SnapshotRows`];
//! 2. the game's systems in [`RowsSystems`] fill it from the ECS (hot rows, each
//!    player's [`PlayerBlock`]);
//! 3. [`pack_frames`] adds the event rows the game pushed into [`EventRows`] since
//!    the last frame, builds the map-dynamics block itself, packs the shared body
//!    once and puts each receiver's own header in front of it (format 5, for the players of
//!    [`FrameReceivers`]);
//! 4. for the receivers of [`DeltaViewers`], it pushes the world once into their
//!    [`delta::Worlds`] and writes each one's delta frame (format 6) of what it sees, under its
//!    byte budget, against the newest frame that receiver acknowledged, with the player block of
//!    the player it watches.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use vimp_netcode::delta;
use vimp_netcode::schema::{BlockKind, MapBodyFields, set_all};
use vimp_netcode::snapshot::{Block, FieldValue, Frame, PackError, PlayerBlock, Row, pack_body, pack_header};

use crate::engine::map::state::MapState;
use crate::engine::physics::Physics;
use crate::engine::players::PlayerId;
use crate::engine::sim::{EngineSettings, Tick};
use crate::engine::views::{self, Observer};
pub use crate::engine::views::{DELTA_HISTORY, ON_SCREEN};

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
    /// Where each player sees the match from, for its delta frames' view (a player with
    /// none sees everything).
    pub observers: BTreeMap<PlayerId, Observer>,
    /// The dimension of rows not in dimension 0, by `(key, id)`.
    pub dimensions: BTreeMap<(u8, u32), u32>,
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
    /// One format 5 frame per player of [`FrameReceivers`].
    pub frames: Vec<(PlayerId, Vec<u8>)>,
    /// One delta frame per receiver of [`DeltaViewers`], by its seat.
    pub deltas: Vec<(PlayerId, Vec<u8>)>,
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
    /// Time spent packing format 5 frames, µs (what a host whose clients all take delta frames
    /// does not spend).
    pub pack_us: f64,
}

/// A receiver of delta frames (format 6, [`vimp_netcode::delta`]): what it was sent, what it
/// acknowledged.
#[derive(Clone, Debug)]
pub struct DeltaViewer {
    /// The player whose frame it gets (its own seat, or the player a spectator watches).
    pub watches: PlayerId,
    /// The newest frame it acknowledged that the host still has.
    acked: Option<u32>,
    /// What it holds once it decodes each frame it was sent, by rising seq (the last
    /// [`DELTA_HISTORY`]).
    sent: VecDeque<delta::Held>,
    /// Every frame counts as acknowledged as soon as it is written (a perfect link: the
    /// figures of `vimp sim` and the benches).
    perfect_link: bool,
    /// Its byte budget and what its rows waited for.
    budget: views::Budget,
}

impl DeltaViewer {
    /// A receiver that has nothing yet: its first frame is a keyframe.
    pub fn new(watches: PlayerId) -> Self {
        DeltaViewer {
            watches,
            acked: None,
            sent: VecDeque::new(),
            perfect_link: false,
            budget: views::Budget::default(),
        }
    }

    /// A receiver over a perfect link: every frame is written against the one before.
    pub fn perfect(watches: PlayerId) -> Self {
        DeltaViewer { perfect_link: true, ..DeltaViewer::new(watches) }
    }

    /// The receiver holds frame `seq`: later frames may be written against it. An ack of a
    /// frame it was not sent (or no longer kept), or older than the one it acknowledged,
    /// changes nothing; returns whether it was taken.
    pub fn ack(&mut self, seq: u32) -> bool {
        let known = self.sent.iter().any(|h| h.seq() == seq);
        let newer = self.acked.is_none_or(|a| seq > a);
        if known && newer {
            self.acked = Some(seq);
        }
        known && newer
    }

    /// The newest frame it acknowledged, while the host still has it.
    pub fn acked(&self) -> Option<u32> {
        self.acked
    }

    /// Its byte budget: what is in use, and how many rows wait.
    pub fn budget(&self) -> &views::Budget {
        &self.budget
    }

    /// It was sent a frame, and holds `held` once it decodes it; returns what aged out of
    /// the history, for its buffers to be used again.
    fn sent(&mut self, held: delta::Held) -> Option<delta::Held> {
        let seq = held.seq();
        self.sent.push_back(held);
        let old = (self.sent.len() > DELTA_HISTORY).then(|| self.sent.pop_front()).flatten();
        if self.perfect_link {
            self.acked = Some(seq);
        } else if self.acked.is_some_and(|a| !self.sent.iter().any(|h| h.seq() == a)) {
            self.acked = None;
        }
        old
    }
}

/// What a receiver holds of frame `acked`, of those it was `sent`.
fn held_at(sent: &VecDeque<delta::Held>, acked: Option<u32>) -> Option<&delta::Held> {
    let acked = acked?;
    // Mostly one of the last few.
    sent.iter().rev().find(|h| h.seq() == acked)
}

/// The receivers of delta frames, by their own seat (a spectator's too), and the last worlds
/// their frames were written from. The session layer keeps it in step with the clients that
/// asked for format 6 in their hello and passes their acknowledgements on
/// ([`DeltaViewer::ack`]).
#[derive(Resource, Debug)]
pub struct DeltaViewers {
    /// The receivers.
    pub viewers: BTreeMap<PlayerId, DeltaViewer>,
    /// The worlds of the last frames (one more than a receiver's history, so that a row held
    /// since its oldest frame is still written as a change).
    worlds: delta::Worlds,
    /// Buffers used again from frame to frame.
    scratch: Scratch,
    /// How far each receiver's world is from the host's, when measured
    /// ([`DeltaViewers::measuring`]).
    errors: Option<ViewErrors>,
}

/// How far what each receiver of delta frames shows is from the host's world, frame by frame
/// ([`DeltaViewers::measuring`]): for each row in its view that it holds, the distance between
/// its place as the receiver shows it (as it decodes it, carried forward by its rates as
/// [`delta::Reckoner`] does) and as the host has it now, and how long ago the receiver's value
/// stopped being the host's (0 while it is). A row within [`ON_SCREEN`] of
/// the player the receiver watches counts as on screen, any other as beyond.
#[derive(Clone, Debug, Default)]
pub struct ViewErrors {
    /// What the receivers of delta frames show.
    pub delta: ViewSamples,
    /// What they would show of the format 5 frames of the same match, as those decode
    /// (measured when the host also writes format 5 frames).
    pub full: ViewSamples,
    /// Rows in view the receiver does not hold at all yet (a budget let them wait).
    pub missing: u64,
    /// The last frame (server time, ms) in which each receiver's value of each row was the
    /// host's, by `(receiver, key, id)`.
    fresh_at: BTreeMap<(PlayerId, u8, u32), f64>,
    /// The version of each row each receiver holds and the server time of the frame that first
    /// brought it (from which it carries the row forward, [`delta::Reckoner`]), by
    /// `(receiver, key, id)`.
    shown_since: BTreeMap<(PlayerId, u8, u32), (u32, f64)>,
}

/// The distances and ages [`ViewErrors`] measured of one kind of frame.
#[derive(Clone, Debug, Default)]
pub struct ViewSamples {
    /// Distances, world units, of rows on screen.
    pub on_screen: Vec<f32>,
    /// Distances, world units, of rows beyond.
    pub beyond: Vec<f32>,
    /// Ages, ms, of rows on screen.
    pub age_on_screen_ms: Vec<f32>,
    /// Ages, ms, of rows beyond.
    pub age_beyond_ms: Vec<f32>,
}

impl ViewSamples {
    fn push(&mut self, on_screen: bool, error: f32, age_ms: f32) {
        let (errors, ages) = if on_screen {
            (&mut self.on_screen, &mut self.age_on_screen_ms)
        } else {
            (&mut self.beyond, &mut self.age_beyond_ms)
        };
        errors.push(error);
        ages.push(age_ms);
    }

    /// Its percentiles (`missing`: rows in view not held at all).
    pub fn figures(&self, missing: u64) -> ViewFigures {
        let (mut on, mut beyond) = (self.on_screen.clone(), self.beyond.clone());
        let (mut age_on, mut age_beyond) = (self.age_on_screen_ms.clone(), self.age_beyond_ms.clone());
        ViewFigures {
            error_on_screen_p50: quantile(&mut on, 0.50),
            error_on_screen_p99: quantile(&mut on, 0.99),
            error_on_screen_max: quantile(&mut on, 1.0),
            error_beyond_p50: quantile(&mut beyond, 0.50),
            error_beyond_p99: quantile(&mut beyond, 0.99),
            error_beyond_max: quantile(&mut beyond, 1.0),
            age_on_screen_p50_ms: quantile(&mut age_on, 0.50),
            age_on_screen_p99_ms: quantile(&mut age_on, 0.99),
            age_beyond_p50_ms: quantile(&mut age_beyond, 0.50),
            age_beyond_p99_ms: quantile(&mut age_beyond, 0.99),
            rows_on_screen: on.len(),
            rows_beyond: beyond.len(),
            rows_missing: missing,
        }
    }
}

/// The places of the rows of a frame's delta-coded keys that have one, by `(key, id)`.
type Places = BTreeMap<(u8, u32), (f32, f32)>;

/// The places of `frame`'s rows of delta-coded keys with a place, as its `f32`s are.
fn places(schema: &vimp_netcode::schema::SnapshotSchema, frame: &Frame) -> Places {
    let mut out = Places::new();
    for (key, block) in &frame.blocks {
        let Some((_, bs)) = schema.by_id(*key).filter(|(_, bs)| delta::is_delta_coded(bs)) else { continue };
        let Some((x, y)) = bs.point() else { continue };
        for (id, row) in block.entries() {
            let (Some(id), Some(row)) = (id, row) else { continue };
            if let (Some(FieldValue::F32(x)), Some(FieldValue::F32(y))) = (row.get(x), row.get(y)) {
                out.insert((*key, id), (*x, *y));
            }
        }
    }
    out
}

#[derive(Debug, Default)]
struct Scratch {
    held: Vec<delta::Held>,
    changes: Vec<delta::Change>,
    choices: Vec<views::Choice>,
    picks: Vec<(usize, delta::Pick)>,
    same: Vec<usize>,
}

impl Default for DeltaViewers {
    fn default() -> Self {
        DeltaViewers {
            viewers: BTreeMap::new(),
            worlds: delta::Worlds::new(DELTA_HISTORY + 1),
            scratch: Scratch::default(),
            errors: None,
        }
    }
}

impl DeltaViewers {
    /// Every player of `players` a receiver of its own frames over a perfect link
    /// ([`DeltaViewer::perfect`]): what `vimp sim` and the benches measure.
    pub fn perfect(players: impl IntoIterator<Item = PlayerId>) -> Self {
        let viewers = players.into_iter().map(|p| (p, DeltaViewer::perfect(p))).collect();
        DeltaViewers { viewers, ..DeltaViewers::default() }
    }

    /// These receivers, with how far their worlds are from the host's measured on every frame
    /// ([`ViewErrors`]; for figures: it costs time, kept out of [`DeltaStats`]' timings).
    pub fn measuring(mut self) -> Self {
        self.errors = Some(ViewErrors::default());
        self
    }

    /// What was measured so far, when measuring.
    pub fn view_errors(&self) -> Option<&ViewErrors> {
        self.errors.as_ref()
    }
}

/// The byte budget of each client's delta frames, per second (the game config's
/// `snapshotBudget`, [`DEFAULT_SNAPSHOT_BUDGET`] by default; 0: none). See [`views::Budget`].
#[derive(Resource, Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotBudget(pub u32);

impl SnapshotBudget {
    /// The budget a game config asks for.
    pub fn from_game(game: &serde_json::Value) -> SnapshotBudget {
        let asked = game["snapshotBudget"].as_u64().map(|b| b.min(u64::from(u32::MAX)) as u32);
        SnapshotBudget(asked.unwrap_or(DEFAULT_SNAPSHOT_BUDGET))
    }
}

/// [`SnapshotBudget`] by default, bytes per second per client: what keeps the rows on a
/// client's screen within 2 units of the host's in the reference game's 16-player match
/// (`vimp sim --bots 16`: on-screen p99 0.8 units; at 3,000 B/s, Quake 3's, it was 30). A frame's header and player block alone
/// take 1,600 B/s of it at 30 frames a second.
pub const DEFAULT_SNAPSHOT_BUDGET: u32 = 5_000;

/// Running totals of the delta frames written, for figures.
#[derive(Resource, Clone, Copy, Debug, Default, PartialEq)]
pub struct DeltaStats {
    /// Bytes of all delta frames to all receivers.
    pub bytes: u64,
    /// Delta frames written (one per receiver per snapshot tick).
    pub frames: u64,
    /// Of those, keyframes (no baseline: a new receiver, or one whose acknowledgements
    /// stopped coming for longer than [`DELTA_HISTORY`] frames).
    pub keyframes: u64,
    /// Of `bytes`, what every frame takes whatever rows it carries: headers, player blocks
    /// and events (counted under a budget only).
    pub fixed_bytes: u64,
    /// Snapshot ticks that worked out a world for them.
    pub worlds: u64,
    /// Time spent working out the world once per snapshot tick, µs.
    pub world_us: f64,
    /// Time spent writing every receiver's frame, µs.
    pub encode_us: f64,
    /// Time spent measuring how far the receivers' worlds are from the host's
    /// ([`DeltaViewers::measuring`]), µs: no part of a host's work.
    pub measure_us: f64,
}

/// Run condition: this tick builds a snapshot.
pub fn snapshot_tick(tick: Res<Tick>, settings: Res<EngineSettings>) -> bool {
    tick.0.is_multiple_of(settings.config.network_send_rate)
}

/// Empties [`SnapshotRows`] before the game fills it.
pub(crate) fn clear_rows(mut rows: ResMut<SnapshotRows>) {
    rows.blocks.clear();
    rows.players.clear();
    rows.observers.clear();
    rows.dimensions.clear();
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
    mut viewers: ResMut<DeltaViewers>,
    mut delta_stats: ResMut<DeltaStats>,
    budget: Res<SnapshotBudget>,
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
    let server_time_ms = tick.0 as f64 * settings.dt() as f64 * 1000.0;
    out.seq = seq.0;
    out.frames.clear();
    // Format 5 for the players it goes to; and when nobody takes either format, so that rows
    // that do not fit the schema are found all the same.
    if !receivers.0.is_empty() || viewers.viewers.is_empty() {
        let t = std::time::Instant::now();
        let mut body = Vec::with_capacity(2048);
        if let Err(e) = pack_body(&settings.schema, &blocks, &mut body) {
            // A game bug, and every frame would fail alike: said once, counted always.
            if stats.pack_errors == 0 {
                tracing::error!("no snapshot frame could be packed: {e}");
            }
            stats.pack_errors += 1;
            return;
        }
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
        stats.pack_us += t.elapsed().as_secs_f64() * 1e6;
    }
    out.deltas.clear();
    if viewers.viewers.is_empty() {
        // Nobody holds the world: the next receiver starts from a keyframe of the match as it
        // is then, not from a world that missed the removals meanwhile.
        viewers.worlds.clear();
    } else {
        let frame = Frame { seq: seq.0, server_time_ms, player: None, blocks, streamed_out: Vec::new() };
        let reach = Reach {
            distance: settings.config.streaming_distance,
            max: settings.config.max_streamed_entities,
            per_frame: f64::from(budget.0) / settings.frames_per_second(),
        };
        // What the format 5 frames decode to, beside what the delta frames do, when measured.
        let t = std::time::Instant::now();
        let full = match (&viewers.errors, out.frames.first()) {
            (Some(_), Some((_, bytes))) => vimp_netcode::snapshot::unpack(&settings.schema, bytes).ok(),
            _ => None,
        };
        delta_stats.measure_us += t.elapsed().as_secs_f64() * 1e6;
        let outbox = &mut out.deltas;
        let frames = (&frame, full.as_ref());
        if let Err(e) = write_deltas(&settings.schema, frames, &rows, reach, &mut viewers, outbox, &mut delta_stats) {
            if stats.pack_errors == 0 {
                tracing::error!("no delta frame could be written: {e}");
            }
            stats.pack_errors += 1;
        }
    }
}

/// How far a client sees, how many rows at most, and its bytes a frame (0: no budget).
#[derive(Clone, Copy, Debug)]
struct Reach {
    distance: f32,
    max: u32,
    per_frame: f64,
}

/// Works out the world as of `frame` once, then writes each receiver's delta frame of what
/// it sees ([`crate::engine::views`]) against the newest frame it acknowledged (a keyframe
/// when there is none).
fn write_deltas(
    schema: &vimp_netcode::schema::SnapshotSchema,
    (frame, full): (&Frame, Option<&Frame>),
    rows: &SnapshotRows,
    reach: Reach,
    viewers: &mut DeltaViewers,
    out: &mut Vec<(PlayerId, Vec<u8>)>,
    stats: &mut DeltaStats,
) -> Result<(), PackError> {
    let t = std::time::Instant::now();
    let DeltaViewers { viewers, worlds, scratch, errors } = viewers;
    let world = worlds.push(schema, frame)?;
    let watched = |p: &PlayerId| rows.observers.contains_key(p);
    let grid = viewers
        .values()
        .any(|v| watched(&v.watches))
        .then(|| views::Grid::of(schema, world, &rows.dimensions, reach.distance));
    // The events, as a delta frame carries them (every receiver gets those in its range).
    let events: Vec<(u8, Block)> = frame
        .blocks
        .iter()
        .filter_map(|(key, block)| {
            let (_, bs) = schema.by_id(*key).filter(|(_, bs)| !delta::is_delta_coded(bs))?;
            Some((*key, delta::plain_block(bs, block)))
        })
        .collect();
    let rows_in_world = world.rows();
    stats.world_us += t.elapsed().as_secs_f64() * 1e6;
    stats.worlds += 1;
    let t = std::time::Instant::now();
    // What each watched player sees, worked out once for all who watch it.
    let mut sights: BTreeMap<PlayerId, Sight> = BTreeMap::new();
    for (&seat, viewer) in viewers.iter_mut() {
        let sight = sights.entry(viewer.watches).or_insert_with(|| {
            let observer = rows.observers.get(&viewer.watches);
            let view = observer.zip(grid.as_ref()).map(|(o, g)| g.view(o, reach.distance, reach.max as usize));
            let events = views::events_in_view(schema, &events, observer, reach.distance);
            let events_bytes = events_bytes(schema, &events);
            Sight { observer, view, events, events_bytes }
        });
        let player = rows.players.get(&viewer.watches).copied();
        let target = Frame {
            seq: frame.seq,
            server_time_ms: frame.server_time_ms,
            player,
            blocks: std::mem::take(&mut sight.events),
            streamed_out: Vec::new(),
        };
        // No view (no place, or nothing placed): every row.
        let view = sight.view.as_ref().map_or(&[][..], |v| v.rows());
        let sees = |row: usize| view.get(row).copied().unwrap_or(true);
        let baseline = held_at(&viewer.sent, viewer.acked);
        // What becomes of the rows, by row: those out of view go out; with no budget every one in
        // view goes as it is now, else those that differ from what the receiver holds go as the
        // budget chose, and the others are as it holds them.
        let picks = &mut scratch.picks;
        picks.clear();
        if reach.per_frame <= 0.0 {
            picks.extend((0..rows_in_world).map(|r| (r, if sees(r) { delta::Pick::Update } else { delta::Pick::Out })));
        } else {
            let changes = &mut scratch.changes;
            worlds.changes(baseline, sees, changes, &mut scratch.same);
            let player_bytes = player.map_or(0, |_| vimp_netcode::snapshot::PLAYER_BLOCK_LEN);
            let fixed = delta::DELTA_HEADER_LEN + player_bytes + sight.events_bytes;
            stats.fixed_bytes += fixed as u64;
            let weigh = |c: &delta::Change| {
                let placed = grid.as_ref().and_then(|g| g.place_of(c.row));
                let off = views::shown_off(c);
                match (sight.observer, placed) {
                    (Some(o), Some((x, y))) if o.own != Some((c.key, c.id)) => {
                        Some(views::weight(c.magnitude, off, ((x - o.x).powi(2) + (y - o.y).powi(2)).sqrt()))
                    }
                    (None, Some(_)) => Some(views::weight(c.magnitude, off, 0.0)),
                    _ => None,
                }
            };
            let base_seq = baseline.map_or(0, |b| b.seq());
            let choices = &mut scratch.choices;
            viewer.budget.choose(changes, frame.seq, base_seq, reach.per_frame, fixed, weigh, choices);
            debug_assert!(view.is_empty() || view.len() == rows_in_world, "a view of this world");
            listed_picks((changes, choices), &scratch.same, view, picks);
        }
        let mut bytes = Vec::with_capacity(256);
        let mut held = scratch.held.pop().unwrap_or_default();
        let written = worlds.encode_picked(schema, &target, baseline, picks, &mut bytes, &mut held);
        sight.events = target.blocks;
        written?;
        viewer.budget.spent(bytes.len(), reach.per_frame);
        stats.bytes += bytes.len() as u64;
        stats.frames += 1;
        stats.keyframes += u64::from(baseline.is_none());
        scratch.held.extend(viewer.sent(held));
        out.push((seat, bytes));
    }
    stats.encode_us += t.elapsed().as_secs_f64() * 1e6;
    if let Some(errors) = errors.as_mut() {
        let t = std::time::Instant::now();
        let truth = places(schema, frame);
        let full = full.map(|f| places(schema, f));
        for (&seat, viewer) in viewers.iter() {
            let (Some(sight), Some(held)) = (sights.get(&viewer.watches), viewer.sent.back()) else { continue };
            let Some(observer) = sight.observer else { continue };
            let view = sight.view.as_ref().map_or(&[][..], |v| v.rows());
            errors.measure(schema, worlds, held, (seat, observer), view, (&truth, full.as_ref()), frame.server_time_ms);
        }
        stats.measure_us += t.elapsed().as_secs_f64() * 1e6;
    }
    Ok(())
}

/// What becomes of the rows a receiver's frame lists ([`delta::Worlds::encode_picked`]), by row,
/// into `picks`: the `changes` as the budget chose (a row that waits is as the receiver holds
/// it), the rows in view whose value came back to what it holds (`same`: brought up to date,
/// nothing written), and the rows out of `view` (a flag per row; empty: every row in view).
fn listed_picks(
    (changes, choices): (&[delta::Change], &[views::Choice]),
    same: &[usize],
    view: &[bool],
    picks: &mut Vec<(usize, delta::Pick)>,
) {
    let chosen = |i: usize| match choices[i] {
        views::Choice::Send => Some((changes[i].row, delta::Pick::Update)),
        views::Choice::Resend(version) => Some((changes[i].row, delta::Pick::Resend(version))),
        views::Choice::Wait => None,
    };
    // Both by rising row (the changes are of rows in view): merged.
    let mut at = 0;
    for (r, _) in view.iter().enumerate().filter(|(_, seen)| !**seen) {
        while at < changes.len() && changes[at].row < r {
            picks.extend(chosen(at));
            at += 1;
        }
        picks.push((r, delta::Pick::Out));
    }
    picks.extend((at..changes.len()).filter_map(chosen));
    if !same.is_empty() {
        // Seldom: sorted in.
        picks.extend(same.iter().map(|&r| (r, delta::Pick::Update)));
        picks.sort_unstable_by_key(|(r, _)| *r);
    }
}

/// [`ViewErrors`] summed up: distances in world units, ages in ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ViewFigures {
    /// How far off the rows on screen are: median.
    pub error_on_screen_p50: f32,
    /// 99th percentile.
    pub error_on_screen_p99: f32,
    /// Most.
    pub error_on_screen_max: f32,
    /// How far off the rows beyond are: median.
    pub error_beyond_p50: f32,
    /// 99th percentile.
    pub error_beyond_p99: f32,
    /// Most.
    pub error_beyond_max: f32,
    /// How old the values of the rows on screen are: median.
    pub age_on_screen_p50_ms: f32,
    /// 99th percentile.
    pub age_on_screen_p99_ms: f32,
    /// How old the values of the rows beyond are: median.
    pub age_beyond_p50_ms: f32,
    /// 99th percentile.
    pub age_beyond_p99_ms: f32,
    /// Rows measured on screen (one per row in view per frame per receiver).
    pub rows_on_screen: usize,
    /// Rows measured beyond.
    pub rows_beyond: usize,
    /// Rows in view a receiver did not hold at all yet.
    pub rows_missing: u64,
}

/// The `p`-th quantile (0 to 1) of `values`, sorted in place; 0 for none.
fn quantile(values: &mut [f32], p: f64) -> f32 {
    values.sort_unstable_by(f32::total_cmp);
    let last = values.len().saturating_sub(1);
    values.get((last as f64 * p).round() as usize).copied().unwrap_or(0.0)
}

impl ViewErrors {
    /// The delta frames' percentiles.
    pub fn figures(&self) -> ViewFigures {
        self.delta.figures(self.missing)
    }

    /// The format 5 frames' percentiles (all zero when none were measured).
    pub fn full_figures(&self) -> ViewFigures {
        self.full.figures(0)
    }

    /// One receiver's frame: `held` is what it holds of the newest of `worlds`, `view` the rows
    /// it sees, `observer` where it watches from; `truth` the places of the frame's rows as the
    /// host has them, `full` as the frame's format 5 decodes (when measured).
    #[expect(clippy::too_many_arguments, reason = "one measurement, its inputs spelled out")]
    fn measure(
        &mut self,
        schema: &vimp_netcode::schema::SnapshotSchema,
        worlds: &delta::Worlds,
        held: &delta::Held,
        (seat, observer): (PlayerId, &Observer),
        view: &[bool],
        (truth, full): (&Places, Option<&Places>),
        now_ms: f64,
    ) {
        let Some(world) = worlds.latest() else { return };
        for key in world.keys() {
            let Some((_, bs)) = schema.by_id(key) else { continue };
            if bs.point().is_none() {
                continue;
            }
            for (index, &id) in world.ids(key).iter().enumerate() {
                let Some(row) = world.row(key, index) else { continue };
                if !view.get(row).copied().unwrap_or(true) || observer.own == Some((key, id)) {
                    continue;
                }
                let Some(&(tx, ty)) = truth.get(&(key, id)) else { continue };
                let on_screen = ((tx - observer.x).powi(2) + (ty - observer.y).powi(2)).sqrt() <= ON_SCREEN;
                if let Some(&(x, y)) = full.and_then(|f| f.get(&(key, id))) {
                    self.full.push(on_screen, ((x - tx).powi(2) + (y - ty).powi(2)).sqrt(), 0.0);
                }
                let (Some(version), Some((held_at, rate))) = (held.version(row), worlds.held_place(bs, held, row))
                else {
                    self.missing += 1;
                    continue;
                };
                let since = match self.shown_since.get(&(seat, key, id)) {
                    Some(&(v, since)) if v == version => since,
                    _ => now_ms,
                };
                self.shown_since.insert((seat, key, id), (version, since));
                let carried = ((now_ms - since).clamp(0.0, delta::RECKON_MS) / 1000.0) as f32;
                let drift = delta::Drift { off: [tx - held_at[0], ty - held_at[1]], rate };
                let age = if Some(version) == world.version(row) {
                    self.fresh_at.insert((seat, key, id), now_ms);
                    0.0
                } else {
                    now_ms - self.fresh_at.get(&(seat, key, id)).copied().unwrap_or(now_ms)
                };
                self.delta.push(on_screen, drift.after(carried), age as f32);
            }
        }
    }
}

/// What one watched player sees of a frame: its place, the rows in view, the events in
/// range, and those events' bytes (every frame of a receiver that watches it carries them).
struct Sight<'a> {
    observer: Option<&'a Observer>,
    view: Option<views::View>,
    events: Vec<(u8, Block)>,
    events_bytes: usize,
}

/// The bytes the blocks of keys that are not delta-coded (events) take in a delta frame.
fn events_bytes(schema: &vimp_netcode::schema::SnapshotSchema, blocks: &[(u8, Block)]) -> usize {
    let mut scratch = Vec::new();
    for (key, block) in blocks {
        if let Some((name, bs)) = schema.by_id(*key).filter(|(_, bs)| !delta::is_delta_coded(bs)) {
            let _ = vimp_netcode::snapshot::pack_block(name, bs, block, &mut scratch);
        }
    }
    scratch.len()
}

/// The map's dynamic bodies as the block of the map's set key, when the schema has that key.
///
/// Row: `x, y, angle` (rounded), then `z, level` when the schema declares those roles (the
/// body's height above its level and the level, 0 on flat maps), then the `state` byte when declared, then the velocities
/// `vx, vy, angvel` as far as the row has f32 fields left (the optional tail: the
/// packer leaves it out for a body at rest). A disabled body reports no velocity.
pub fn map_dynamics_block(settings: &EngineSettings, physics: &Physics, map: &MapState) -> Option<(u8, Block)> {
    let game_map = map.map.as_ref()?;
    let set_id = map.set_id(&settings.config);
    let schema = settings.schema.by_name(set_id)?;
    if schema.kind != BlockKind::IndexedNoNull8 {
        return None;
    }
    let fields = MapBodyFields::of(schema);
    let bodies = &physics.world().bodies;
    let mut rows = Vec::with_capacity(game_map.dynamic_count());
    for i in 0..game_map.dynamic_count().min(u8::MAX as usize + 1) {
        let Some(body) = game_map.dynamic_handle(i).and_then(|h| bodies.get(h)) else { continue };
        let p = body.translation();
        let angle = body.rotation().angle();
        let (v, w) = if body.is_enabled() { (body.linvel(), body.angvel()) } else { (Default::default(), 0.0) };
        let velocities = [v.x, v.y, w];
        let level = map.levels.get(i).copied().unwrap_or_default();
        let mut row = schema.zero_row();
        set_all(&mut row, [(fields.x, p.x), (fields.y, p.y), (fields.angle, angle)]);
        if let Some((z, l)) = fields.height {
            set_all(&mut row, [(z, level.z), (l, f32::from(level.level))]);
        }
        if let Some(state) = fields.state {
            state.set(&mut row, f32::from(map.body_state.get(i).copied().unwrap_or_default()));
        }
        set_all(&mut row, fields.velocity.into_iter().zip(velocities).filter_map(|(f, v)| Some((f?, v))));
        rows.push((i as u8, row));
    }
    Some((schema.id, Block::IndexedNoNull8(rows)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_lists_the_changes_as_chosen_the_values_come_back_and_the_rows_out_of_view_by_row() {
        let change = |row: usize| delta::Change {
            key: 1,
            id: row as u32,
            row,
            version: delta::Version(7),
            held: true,
            magnitude: 1,
            drift: None,
            held_for: 0.0,
            bytes: 2,
        };
        let changes = [change(1), change(3), change(5), change(8)];
        let choices =
            [views::Choice::Send, views::Choice::Wait, views::Choice::Resend(delta::Version(6)), views::Choice::Send];
        let view = [true, true, false, true, true, true, false, true, true];
        let mut picks = Vec::new();
        listed_picks((&changes, &choices), &[4], &view, &mut picks);
        use delta::Pick::{Out, Resend, Update};
        let want = [(1, Update), (2, Out), (4, Update), (5, Resend(delta::Version(6))), (6, Out), (8, Update)];
        assert_eq!(picks, want, "a row that waits is not listed");
        picks.clear();
        listed_picks((&changes, &choices), &[], &[], &mut picks);
        assert_eq!(picks.iter().map(|p| p.0).collect::<Vec<_>>(), [1, 5, 8], "no view: every row in it");
    }

    #[test]
    fn a_delta_viewer_takes_only_acks_of_frames_it_was_sent_and_gets_a_keyframe_once_they_age_out() {
        let schema = vimp_netcode::schema::SnapshotSchema::new(std::iter::empty::<(String, _)>()).expect("empty");
        let mut worlds = delta::Worlds::new(2);
        let mut held = |seq: u32| {
            let frame = Frame { seq, server_time_ms: 0.0, player: None, blocks: Vec::new(), streamed_out: Vec::new() };
            delta::Held::all(worlds.push(&schema, &frame).expect("an empty frame"))
        };
        let mut v = DeltaViewer::new(PlayerId(1));
        assert!(!v.ack(1), "nothing sent yet");
        for seq in 1..=3 {
            assert_eq!(v.sent(held(seq)), None);
        }
        assert!(held_at(&v.sent, v.acked).is_none(), "nothing acknowledged: a keyframe");
        assert!(v.ack(2));
        assert!(!v.ack(1), "older than the one acknowledged");
        assert!(!v.ack(9), "never sent");
        assert_eq!(v.acked(), Some(2));
        assert_eq!(held_at(&v.sent, v.acked).map(|h| h.seq()), Some(2));
        let aged: Vec<u32> =
            (4..4 + DELTA_HISTORY as u32).filter_map(|seq| v.sent(held(seq))).map(|h| h.seq()).collect();
        assert_eq!(aged, vec![1, 2, 3], "what ages out comes back, oldest first");
        assert_eq!(v.acked(), None, "frame 2 is no longer kept");
        assert!(held_at(&v.sent, v.acked).is_none());
        let mut p = DeltaViewer::perfect(PlayerId(1));
        p.sent(held(1));
        assert_eq!(p.acked(), Some(1), "a perfect link acknowledges every frame");
    }

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
