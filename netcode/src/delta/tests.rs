use proptest::prelude::*;

use super::*;
use crate::schema::{BlockKind, FieldSchema, Interp};
use crate::snapshot::{pack, unpack};

/// Keys like a game's: a hot indexed8 with quantised position and angle, a hot indexed32 of
/// integers, an event list16, and hot slots with an optional tail.
fn schema() -> SnapshotSchema {
    let f = FieldSchema::new;
    SnapshotSchema::new([
        (
            "m".to_owned(),
            BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
                .field(f("x", FieldType::F32).interp(Interp::Lerp).quant(Quant::PerUnit(20)))
                .field(f("angle", FieldType::F32).interp(Interp::LerpAngle).quant(Quant::AngleBits(12)))
                .field(f("load", FieldType::F32))
                .field(f("team", FieldType::U8)),
        ),
        (
            "s".to_owned(),
            BlockSchema::new(2, BlockKind::Indexed32, BlockClass::Hot)
                .field(f("hp", FieldType::U16))
                .field(f("owner", FieldType::U32)),
        ),
        ("e".to_owned(), BlockSchema::new(3, BlockKind::List16, BlockClass::Event).field(f("r", FieldType::F32))),
        (
            "c".to_owned(),
            BlockSchema::new(4, BlockKind::IndexedNoNull8, BlockClass::Hot)
                .field(f("x", FieldType::F32).quant(Quant::PerUnit(20)))
                .field(f("vx", FieldType::F32).quant(Quant::PerUnit(10)))
                .optional_from(1),
        ),
    ])
    .expect("valid test schema")
}

/// A schema of one delta-coded key (id 1, `indexed8`) whose rows are one `x` of 20 steps a unit.
pub(super) fn one_x_schema() -> SnapshotSchema {
    SnapshotSchema::new([(
        "m".to_owned(),
        BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
            .field(FieldSchema::new("x", FieldType::F32).quant(Quant::PerUnit(20))),
    )])
    .unwrap()
}

fn unit(x: f32, angle: f32, team: u8) -> Row {
    vec![FieldValue::F32(x), FieldValue::F32(angle), FieldValue::F32(0.25), FieldValue::U8(team)]
}

fn frame(seq: u32, blocks: Vec<(u8, Block)>) -> Frame {
    Frame { seq, server_time_ms: f64::from(seq) * 33.3, player: None, blocks, streamed_out: Vec::new() }
}

fn encoded(target: &Frame, baseline: Option<&Frame>) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&schema(), target, baseline, &mut out).expect("encode");
    out
}

/// The rows of every key, null rows left out: what a receiver's world holds.
fn live(frame: &Frame) -> Vec<(u8, Vec<(Option<u32>, Row)>)> {
    frame
        .blocks
        .iter()
        .map(|(k, b)| (*k, b.entries().filter_map(|(id, r)| Some((id, r?.clone()))).collect::<Vec<_>>()))
        .filter(|(_, rows)| !rows.is_empty())
        .collect()
}

#[test]
fn a_keyframe_carries_the_world_and_a_quiet_frame_almost_nothing() {
    let s = schema();
    let f1 =
        frame(1, vec![(1, Block::Indexed8(vec![(3, Some(unit(100.02, 1.0, 1))), (9, Some(unit(-50.0, -3.0, 2)))]))]);
    let w1 = world(&s, None, &f1);
    let key = encoded(&w1, None);
    assert_eq!(baseline_of(&key), Ok(0));
    assert_eq!(decode(&s, &key, |_| None), Ok(w1.clone()));
    // Quantised as the schema says: x in twentieths, angle in 4096ths of a turn.
    let Some(Block::Indexed8(rows)) = w1.block(1) else { panic!("the units") };
    assert_eq!(rows[0].1.as_ref().unwrap()[0], FieldValue::F32(100.0));
    let FieldValue::F32(a) = rows[0].1.as_ref().unwrap()[1] else { panic!() };
    assert!((a - 1.0).abs() < std::f32::consts::TAU / 4096.0 && a != 1.0);

    // The same world again: a header and nothing else.
    let f2 = frame(2, f1.blocks.clone());
    let w2 = world(&s, Some(&w1), &f2);
    let quiet = encoded(&w2, Some(&w1));
    assert_eq!(quiet.len(), DELTA_HEADER_LEN);
    assert_eq!(baseline_of(&quiet), Ok(1));
    assert_eq!(decode(&s, &quiet, |seq| (seq == 1).then_some(&w1)), Ok(w2.clone()));

    // One unit moves a little: its entry is a few bytes, far below format 5's frame.
    let f3 =
        frame(3, vec![(1, Block::Indexed8(vec![(3, Some(unit(101.0, 1.0, 1))), (9, Some(unit(-50.0, -3.0, 2)))]))]);
    assert_eq!(live(&world(&s, Some(&w2), &f3)).len(), 1);
    let w3 = world(&s, Some(&w2), &f3);
    let moved = encoded(&w3, Some(&w2));
    assert!(moved.len() <= DELTA_HEADER_LEN + 5, "{} bytes", moved.len());
    let mut v5 = Vec::new();
    pack(&s, &f3, &mut v5).unwrap();
    assert!(
        moved.len() - DELTA_HEADER_LEN < (v5.len() - crate::snapshot::HEADER_LEN) / 4,
        "{} vs {}",
        moved.len(),
        v5.len()
    );
    assert_eq!(decode(&s, &moved, |seq| (seq == 2).then_some(&w2)), Ok(w3));
}

#[test]
fn removals_reach_a_receiver_whatever_baseline_it_holds() {
    let s = schema();
    let both =
        |seq, x| frame(seq, vec![(1, Block::Indexed8(vec![(3, Some(unit(x, 0.0, 1))), (9, Some(unit(5.0, 0.0, 2)))]))]);
    let w1 = world(&s, None, &both(1, 1.0));
    // Frame 2 removes unit 9 (its one null row); frame 3 no longer names it.
    let f2 = frame(2, vec![(1, Block::Indexed8(vec![(3, Some(unit(2.0, 0.0, 1))), (9, None)]))]);
    let w2 = world(&s, Some(&w1), &f2);
    let f3 = frame(3, vec![(1, Block::Indexed8(vec![(3, Some(unit(3.0, 0.0, 1)))]))]);
    let w3 = world(&s, Some(&w2), &f3);
    assert_eq!(live(&w3), vec![(1, vec![(Some(3), unit(3.0, 0.0, 1))])]);
    // A receiver that lost frame 2 and holds frame 1 still learns that 9 is gone.
    let late = decode(&s, &encoded(&w3, Some(&w1)), |seq| (seq == 1).then_some(&w1)).unwrap();
    assert_eq!(live(&late), live(&w3));
    assert_eq!(late.block(1).unwrap().entries().find(|(id, _)| *id == Some(9)), Some((Some(9), None)));
}

#[test]
fn non_delta_keys_travel_as_format_5_writes_them() {
    let s = schema();
    let f1 = frame(1, vec![(3, Block::List16(vec![vec![FieldValue::F32(1.234)], vec![FieldValue::F32(-7.0)]]))]);
    let w1 = world(&s, None, &f1);
    let bytes = encoded(&w1, None);
    // The host packs rows rounded to hundredths, as the world has them.
    let mut v5 = Vec::new();
    pack(&s, &w1, &mut v5).unwrap();
    assert_eq!(bytes[DELTA_HEADER_LEN..], v5[crate::snapshot::HEADER_LEN..], "the same block bytes");
    let back = decode(&s, &bytes, |_| None).unwrap();
    assert_eq!(back.blocks, unpack(&s, &v5).unwrap().blocks);
}

#[test]
fn changes_list_what_differs_and_what_its_entry_costs() {
    let s = schema();
    let f1 = frame(1, vec![(1, Block::Indexed8(vec![(3, Some(unit(1.0, 0.0, 1))), (9, Some(unit(5.0, 0.0, 1)))]))]);
    let w1 = world(&s, None, &f1);
    let f2 = frame(
        2,
        vec![(
            1,
            Block::Indexed8(vec![
                (3, Some(unit(2.0, 0.0, 1))),
                (9, Some(unit(5.0, 0.0, 1))),
                (12, Some(unit(0.0, 0.0, 2))),
            ]),
        )],
    );
    let w2 = world(&s, Some(&w1), &f2);
    let mut worlds = Worlds::new(4);
    let n1 = Held::all(worlds.push(&s, &f1).unwrap());
    worlds.push(&s, &f2).unwrap();
    let mut c = Vec::new();
    worlds.changes(Some(&n1), |_| true, &mut c, &mut Vec::new());
    assert_eq!(c.iter().map(|c| (c.id, c.row, c.held)).collect::<Vec<_>>(), vec![(3, 0, true), (12, 2, false)]);
    assert_eq!(c[0].magnitude, 20, "x moved one unit: 20 steps of 1/20");
    // Each change's bytes are its entry's, less the one-byte head: the frame tells.
    for (i, change) in c.iter().enumerate() {
        let only = |key: u8, id: u32, _: usize| {
            if key == change.key && id == change.id { Pick::Update } else { Pick::Hold }
        };
        let mut out = Vec::new();
        worlds.encode(&s, &w2, Some(&n1), only, &mut out, &mut Held::default()).unwrap();
        assert_eq!(out.len(), DELTA_HEADER_LEN + 1 + 1 + 1 + change.bytes, "change {i}: key, count, head, entry");
    }
    let mut all = Vec::new();
    worlds.changes(None, |_| true, &mut all, &mut Vec::new());
    assert_eq!(all.len(), 3, "against nothing every row is new");
    worlds.changes(None, |row| row != 1, &mut all, &mut Vec::new());
    assert_eq!(all.len(), 2, "only the rows let through");
}

#[test]
fn a_change_says_how_far_its_place_drifted_from_what_the_receiver_holds_and_for_how_long() {
    let f = FieldSchema::new;
    let tank = BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
        .field(f("x", FieldType::F32).quant(Quant::PerUnit(20)).rate("vx"))
        .field(f("y", FieldType::F32).quant(Quant::PerUnit(20)).rate("vy"))
        .field(f("vx", FieldType::F32).quant(Quant::PerUnit(10)))
        .field(f("vy", FieldType::F32).quant(Quant::PerUnit(10)));
    let s = SnapshotSchema::new([("m".to_owned(), tank)]).unwrap();
    // 30 units a second along x, then turning up.
    let at = |seq: u32, x: f32, y: f32, vx: f32, vy: f32| {
        let row = [x, y, vx, vy].map(FieldValue::F32).to_vec();
        frame(seq, vec![(1, Block::Indexed8(vec![(4, Some(row))]))])
    };
    let mut worlds = Worlds::new(3);
    let held = Held::all(worlds.push(&s, &at(1, 0.0, 0.0, 30.0, 0.0)).unwrap());
    worlds.push(&s, &at(2, 1.0, 0.0, 30.0, 0.0)).unwrap();
    worlds.push(&s, &at(3, 2.0, 0.5, 20.0, 20.0)).unwrap();
    let mut c = Vec::new();
    worlds.changes(Some(&held), |_| true, &mut c, &mut Vec::new());
    let drift = c[0].drift.expect("a placed row held");
    assert_eq!((drift.off, drift.rate), ([2.0, 0.5], [30.0, 0.0]), "against frame 1's place and rate");
    assert!((c[0].held_for - 0.0666).abs() < 1e-3, "held two frames: {}", c[0].held_for);
    assert!((drift.after(c[0].held_for) - 0.5).abs() < 1e-3, "carried 2 units on, it is off by the turn");
    worlds.changes(None, |_| true, &mut c, &mut Vec::new());
    assert_eq!((c[0].held, c[0].drift, c[0].held_for), (false, None, 0.0), "a row not held");
    // Frame 1 ages out of the worlds kept: the receiver's value is gone with it.
    worlds.push(&s, &at(4, 3.0, 1.0, 20.0, 20.0)).unwrap();
    worlds.push(&s, &at(5, 4.0, 1.5, 20.0, 20.0)).unwrap();
    worlds.changes(Some(&held), |_| true, &mut c, &mut Vec::new());
    assert_eq!((c[0].magnitude, c[0].drift), (u64::MAX, None), "goes whole");
    assert_eq!(c[0].held_for, (RECKON_MS / 1000.0) as f32);
}

#[test]
fn a_value_that_came_back_is_no_change_and_listed_as_an_update_brings_the_receiver_up_to_date() {
    let s = one_x_schema();
    let at = |seq: u32, x: f32| frame(seq, vec![(1, Block::Indexed8(vec![(4, Some(vec![FieldValue::F32(x)]))]))]);
    let mut worlds = Worlds::new(4);
    let held = Held::all(worlds.push(&s, &at(1, 1.0)).unwrap());
    worlds.push(&s, &at(2, 2.0)).unwrap();
    // Back to what the receiver holds, in a newer version.
    let now = worlds.push(&s, &at(3, 1.0)).unwrap();
    let version = Held::all(now).version(0);
    assert_ne!(held.version(0), version, "a new version of the same numbers");
    let (mut changes, mut same) = (Vec::new(), Vec::new());
    worlds.changes(Some(&held), |_| true, &mut changes, &mut same);
    assert_eq!((changes.len(), same.len()), (1, 0), "an older version held: a change until its entry is worked out");
    let target = world(&s, None, &at(3, 1.0));
    let (mut bytes, mut into) = (Vec::new(), Held::default());
    worlds.encode_picked(&s, &target, Some(&held), &[(0, Pick::Update)], &mut bytes, &mut into).unwrap();
    assert_eq!((bytes.len(), into.version(0)), (DELTA_HEADER_LEN, version), "nothing written, held up to date");
    // Worked out, the entry is nothing: the next receiver holding that version has no change.
    worlds.changes(Some(&held), |_| true, &mut changes, &mut same);
    assert_eq!((changes.len(), same.as_slice()), (0, &[0][..]), "no change to weigh; the row is the same");
    // Not listed, it is held as it was.
    worlds.encode_picked(&s, &target, Some(&held), &[], &mut Vec::new(), &mut into).unwrap();
    assert_eq!(into.version(0), held.version(0));
}

#[test]
fn a_key_of_more_than_127_entries_counts_them_in_a_longer_varint() {
    let s = schema();
    let rows = (0..300u32).map(|i| (i * 3, Some(vec![FieldValue::U16(i as u16), FieldValue::U32(i)]))).collect();
    let w = world(&s, None, &frame(1, vec![(2, Block::Indexed32(rows))]));
    let bytes = encoded(&w, None);
    assert_eq!(&bytes[DELTA_HEADER_LEN..DELTA_HEADER_LEN + 3], &[2, 0xac, 0x02], "key 2, 300 entries");
    assert_eq!(decode(&s, &bytes, |_| None), Ok(w));
}

#[test]
fn a_baseline_not_held_and_malformed_entries_are_errors() {
    let s = schema();
    let f1 = frame(1, vec![(1, Block::Indexed8(vec![(3, Some(unit(1.0, 0.0, 1)))]))]);
    let w1 = world(&s, None, &f1);
    let f2 = frame(2, vec![(1, Block::Indexed8(vec![(3, Some(unit(2.0, 0.0, 1)))]))]);
    let bytes = encoded(&world(&s, Some(&w1), &f2), Some(&w1));
    assert_eq!(decode(&s, &bytes, |_| None), Err(DecodeError::MissingBaseline { seq: 1 }));
    let header = bytes[..DELTA_HEADER_LEN].to_vec();
    let with = |body: &[u8]| [header.clone(), body.to_vec()].concat();
    let held = |seq: u32| (seq == 1).then_some(&w1);
    for (body, why) in [
        (&[1u8, 1, (5 << 2) | 2, 1, 2][..], "a change to a row the baseline lacks"),
        (&[1, 1, (3 << 2) | 2, 0][..], "a bitmap naming no field"),
        (&[1, 1, (3 << 2) | 2, 0x10, 2][..], "a bitmap past the row"),
        (&[1, 1, (5 << 2) | 3][..], "a stream-out of a row the baseline lacks"),
        (&[1, 1, (3 << 2) | 1, 2, 2, 2, 0x80, 0x02][..], "a u8 of 256"),
        (&[4, 1, (3 << 2)][..], "a removal in a key without null rows"),
        (&[1, 1, 0x81, 0x08][..], "an id past 255 (entry 256 << 2 | 1)"),
        (&[1, 0x80, 0x02][..], "more entries (256) than an indexed8 holds"),
        (&[1, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f][..], "an overlong varint"),
        (&[1, 3, (3 << 2) | 2][..], "a truncated entry"),
        (&[9][..], "an unknown key"),
    ] {
        assert!(decode(&s, &with(body), held).is_err(), "{why}");
    }
    let mut v5 = bytes.clone();
    v5[0] = 5;
    assert_eq!(decode(&s, &v5, held), Err(DecodeError::Version { found: 5 }));
}

#[test]
fn rows_that_do_not_fit_the_schema_are_refused_and_nothing_is_written() {
    let s = schema();
    let mut out = vec![7u8];
    let wrong_type = frame(1, vec![(1, Block::Indexed8(vec![(3, Some(vec![FieldValue::U8(1); 4]))]))]);
    assert!(matches!(encode(&s, &wrong_type, None, &mut out), Err(PackError::FieldType { .. })));
    let short = frame(1, vec![(1, Block::Indexed8(vec![(3, Some(vec![FieldValue::F32(1.0)]))]))]);
    assert!(matches!(encode(&s, &short, None, &mut out), Err(PackError::RowWidth { .. })));
    let unknown = frame(1, vec![(9, Block::List16(vec![]))]);
    assert_eq!(encode(&s, &unknown, None, &mut out), Err(PackError::UnknownKey(9)));
    let kind = frame(1, vec![(1, Block::Indexed32(vec![]))]);
    assert!(matches!(encode(&s, &kind, None, &mut out), Err(PackError::KindMismatch { .. })));
    let event = frame(1, vec![(3, Block::List16(vec![vec![FieldValue::U8(1)]]))]);
    assert!(matches!(encode(&s, &event, None, &mut out), Err(PackError::FieldType { .. })));
    assert_eq!(out, [7], "nothing written");
    // A world's numbers, worked out once, encode as `encode` does.
    let w = world(&s, None, &frame(1, vec![(1, Block::Indexed8(vec![(3, Some(unit(1.0, 2.0, 1)))]))]));
    let (mut worlds, mut once) = (Worlds::new(1), Vec::new());
    worlds.push(&s, &w).unwrap();
    worlds.encode(&s, &w, None, |_, _, _| Pick::Update, &mut once, &mut Held::default()).unwrap();
    assert_eq!(once, encoded(&w, None));
}

fn row_strategy() -> impl Strategy<Value = Row> {
    (-5000.0f32..5000.0, -10.0f32..10.0, 0.0f32..1.0, 0u8..4)
        .prop_map(|(x, a, l, t)| vec![FieldValue::F32(x), FieldValue::F32(a), FieldValue::F32(l), FieldValue::U8(t)])
}

/// A frame of random rows of keys 1, 2, 4 (with nulls) and events, ids from small ranges so
/// that frames share entities.
fn frame_strategy() -> impl Strategy<Value = Vec<(u8, Block)>> {
    (
        prop::collection::vec((0u8..12, prop::option::weighted(0.85, row_strategy())), 0..10),
        prop::collection::vec((0u32..6, prop::option::of((any::<u16>(), any::<u32>()))), 0..5),
        prop::collection::vec((0u8..5, -900.0f32..900.0, prop::option::of(-3.0f32..3.0)), 0..6),
        prop::collection::vec(-100.0f32..100.0, 0..3),
    )
        .prop_map(|(units, stats, slots, events)| {
            let mut blocks = vec![
                (1, Block::Indexed8(units)),
                (
                    2,
                    Block::Indexed32(
                        stats
                            .into_iter()
                            .map(|(id, r)| (id, r.map(|(hp, o)| vec![FieldValue::U16(hp), FieldValue::U32(o)])))
                            .collect(),
                    ),
                ),
                (
                    4,
                    Block::IndexedNoNull8(
                        slots
                            .into_iter()
                            .map(|(id, x, vx)| {
                                let mut row = vec![FieldValue::F32(x)];
                                row.extend(vx.map(FieldValue::F32));
                                (id, row)
                            })
                            .collect(),
                    ),
                ),
                (3, Block::List16(events.into_iter().map(|r| vec![FieldValue::F32(r)]).collect())),
            ];
            blocks.retain(|(_, b)| !b.is_empty());
            blocks
        })
}

proptest! {
    #[test]
    fn a_receiver_holds_what_its_view_lets_through_whatever_it_acknowledged(
        first in frame_strategy(),
        frames in prop::collection::vec(frame_strategy(), 1..8),
        picks in prop::collection::vec(0u8..4, 1..40),
        acks in prop::collection::vec(any::<prop::sample::Index>(), 8),
        keep in 1usize..5,
    ) {
        let s = schema();
        let mut frames = frames;
        frames.insert(0, first);
        // The host keeps `keep` worlds; the receiver acknowledges any frame it decoded (or
        // none), as loss and reordering would have it; the host writes against that one. A
        // pick of 3 writes a row again as an earlier frame had it.
        let (mut host, mut shadow) = (Worlds::new(keep), Worlds::new(64));
        let mut sent: Vec<(Held, Frame)> = Vec::new();
        let mut last_world: Option<Frame> = None;
        // Per frame: each row's version, and the world.
        let mut history: Vec<(BTreeMap<(u8, u32), Version>, Frame)> = Vec::new();
        for (k, blocks) in frames.into_iter().enumerate() {
            let f = frame(k as u32 + 1, blocks);
            let target = world(&s, last_world.as_ref(), &f);
            host.push(&s, &f).expect("push");
            let mut all = Vec::new();
            host.changes(None, |_| true, &mut all, &mut Vec::new());
            history.push((all.iter().map(|c| ((c.key, c.id), c.version)).collect(), target.clone()));
            let base = acks[k].index(sent.len() + 1).checked_sub(1).map(|i| &sent[i]);
            let earlier = k.saturating_sub(1 + k % 2);
            let pick = |key: u8, id: u32, _: usize| match picks[(key as usize * 31 + id as usize * 7 + k) % picks.len()] {
                0 => Pick::Update,
                1 => Pick::Hold,
                2 => Pick::Out,
                _ => history[earlier].0.get(&(key, id)).map_or(Pick::Update, |&v| Pick::Resend(v)),
            };
            let (mut bytes, mut now) = (Vec::new(), Held::default());
            host.encode(&s, &target, base.map(|(h, _)| h), pick, &mut bytes, &mut now).expect("encode");
            let was_frame = base.map(|(_, f)| f);
            let back = decode(&s, &bytes, |seq| was_frame.filter(|b| b.seq == seq)).expect("decode");
            // The same worlds kept for longer (the same versions), to read what the host's
            // versions stand for.
            shadow.push(&s, &f).expect("push");
            let believed = shadow.held_world(&s, &now).expect("every version the receiver holds is a row's");
            let mut rows = live(&back);
            rows.retain(|(key, _)| s.by_id(*key).is_some_and(|(_, bs)| is_delta_coded(bs)));
            prop_assert_eq!(live(&believed), rows, "the receiver holds what the host thinks");
            for key in s.keys().filter(|(_, bs)| is_delta_coded(bs)).map(|(_, bs)| bs.id) {
                let was: BTreeMap<u32, &Row> = live_rows(was_frame.and_then(|b| b.block(key)));
                let world_rows = live_rows(target.block(key));
                let then_rows = live_rows(history[earlier].1.block(key));
                let got = live_rows(back.block(key));
                for (&id, row) in &world_rows {
                    match pick(key, id, 0) {
                        Pick::Update => prop_assert_eq!(got.get(&id), Some(row), "an update is the world's row"),
                        Pick::Hold => prop_assert_eq!(got.get(&id), was.get(&id), "a held row is what it had"),
                        Pick::Out => prop_assert!(!got.contains_key(&id), "a row out of view is held"),
                        // As it was then while that world is kept, else as it is.
                        Pick::Resend(_) if k - earlier < keep => {
                            prop_assert_eq!(got.get(&id), then_rows.get(&id), "a row written again is as it was")
                        }
                        // (It may be kept all the same: the row had it for longer.)
                        Pick::Resend(_) => prop_assert!(got.get(&id) == then_rows.get(&id) || got.get(&id) == Some(row)),
                    }
                }
                prop_assert!(got.keys().all(|id| world_rows.contains_key(id)), "a row the world lacks is held");
                for &(k2, id) in back.streamed_out.iter().filter(|(k2, _)| *k2 == key) {
                    prop_assert_eq!(k2, key);
                    prop_assert!(was.contains_key(&id), "only a row held streams out");
                    prop_assert!(pick(key, id, 0) == Pick::Out || !world_rows.contains_key(&id));
                }
            }
            sent.push((now, back));
            last_world = Some(target);
        }
    }

    #[test]
    fn listing_only_the_changes_writes_what_asking_every_row_does(
        first in frame_strategy(),
        frames in prop::collection::vec(frame_strategy(), 1..8),
        picks in prop::collection::vec(0u8..4, 1..40),
        acks in prop::collection::vec(any::<prop::sample::Index>(), 8),
    ) {
        let s = schema();
        let mut frames = frames;
        frames.insert(0, first);
        // Two hosts of the same frames: one asks what becomes of every row, the other lists
        // only the rows out of view, those it chose something for, and the rows that differ
        // from what the receiver holds ([`Worlds::changes`]), as a host under a budget does.
        let (mut asking, mut listing) = (Worlds::new(4), Worlds::new(4));
        let mut sent: Vec<Held> = Vec::new();
        let mut last_world: Option<Frame> = None;
        for (k, blocks) in frames.into_iter().enumerate() {
            let f = frame(k as u32 + 1, blocks);
            let target = world(&s, last_world.as_ref(), &f);
            asking.push(&s, &f).expect("push");
            listing.push(&s, &f).expect("push");
            let base = acks[k].index(sent.len() + 1).checked_sub(1).map(|i| &sent[i]);
            let pick = |row: usize| match picks[(row * 7 + k) % picks.len()] {
                0 | 3 => Pick::Update,
                1 => Pick::Hold,
                _ => Pick::Out,
            };
            let (mut changes, mut same) = (Vec::new(), Vec::new());
            listing.changes(base, |row| pick(row) != Pick::Out, &mut changes, &mut same);
            let differ: std::collections::BTreeSet<usize> = changes.iter().map(|c| c.row).chain(same.iter().copied()).collect();
            let rows = listing.latest().map_or(0, |w| w.rows());
            let listed: Vec<(usize, Pick)> = (0..rows)
                .map(|r| (r, pick(r)))
                .filter(|&(r, p)| p == Pick::Out || (p == Pick::Update && differ.contains(&r)))
                .collect();
            let (mut want, mut want_held) = (Vec::new(), Held::default());
            asking.encode(&s, &target, base, |_, _, r| pick(r), &mut want, &mut want_held).expect("encode");
            let (mut got, mut got_held) = (Vec::new(), Held::default());
            listing.encode_picked(&s, &target, base, &listed, &mut got, &mut got_held).expect("encode");
            prop_assert_eq!(&got, &want, "the same frame");
            prop_assert_eq!(&got_held, &want_held, "the receiver holds the same");
            sent.push(want_held);
            last_world = Some(target);
        }
    }

    #[test]
    fn any_baseline_decodes_to_the_world(first in frame_strategy(), frames in prop::collection::vec(frame_strategy(), 1..6), pick in any::<prop::sample::Index>()) {
        let s = schema();
        // The host's worlds, frame by frame.
        let mut worlds = vec![world(&s, None, &frame(1, first))];
        for (k, blocks) in frames.into_iter().enumerate() {
            let next = world(&s, worlds.last(), &frame(k as u32 + 2, blocks));
            worlds.push(next);
        }
        let target = worlds.last().unwrap();
        // A receiver holding any earlier world (or none) gets the newest one's rows.
        let held = &worlds[pick.index(worlds.len())];
        for baseline in [None, Some(held)] {
            let bytes = encoded(target, baseline);
            let back = decode(&s, &bytes, |seq| baseline.filter(|b| b.seq == seq)).expect("decode");
            prop_assert_eq!(live(&back), live(target));
            prop_assert_eq!(back.seq, target.seq);
            // A null row only ever names what the baseline had and the target has not.
            for (key, block) in &back.blocks {
                for (id, row) in block.entries() {
                    if row.is_none() {
                        let had = baseline.and_then(|b| b.block(*key)).is_some_and(|b| b.entries().any(|(i, r)| i == id && r.is_some()));
                        prop_assert!(had);
                    }
                }
            }
            // Quantising twice changes nothing: the decoded world re-encodes to itself.
            prop_assert_eq!(encoded(&back, baseline).len(), bytes.len());
        }
    }

    #[test]
    fn quantised_values_stay_within_half_a_step(v in -8000.0f32..8000.0, n in 1u32..=100, bits in 4u8..=16) {
        let q = value(Quant::PerUnit(n), steps(Quant::PerUnit(n), v));
        prop_assert!((q - v).abs() <= 0.5 / n as f32 + v.abs() * 1e-6);
        prop_assert_eq!(value(Quant::PerUnit(n), steps(Quant::PerUnit(n), q)), q);
        let a = value(Quant::AngleBits(bits), steps(Quant::AngleBits(bits), v));
        prop_assert!((-std::f32::consts::PI..std::f32::consts::PI).contains(&a));
        let off = crate::divergence::wrap_angle(a - v).abs();
        prop_assert!(off <= std::f32::consts::PI / (1u32 << bits) as f32 + 1e-3, "{} → {}", v, a);
    }

    #[test]
    fn garbage_never_panics(body in prop::collection::vec(any::<u8>(), 0..200), seq in 0u32..3) {
        let s = schema();
        let w1 = world(&s, None, &frame(1, vec![(1, Block::Indexed8(vec![(3, Some(unit(1.0, 0.5, 1)))])), (2, Block::Indexed32(vec![(1, Some(vec![FieldValue::U16(9), FieldValue::U32(9)]))]))]));
        let mut bytes = vec![DELTA_FORMAT_VERSION];
        bytes.extend_from_slice(&2u32.to_be_bytes());
        bytes.extend_from_slice(&seq.to_be_bytes());
        bytes.extend_from_slice(&0.0f64.to_be_bytes());
        bytes.push(0);
        bytes.extend_from_slice(&body);
        let _ = decode(&s, &bytes, |q| (q == 1).then_some(&w1));
        let _ = decode(&s, &body, |_| Some(&w1));
        let _ = baseline_of(&body);
    }

    #[test]
    fn a_cut_frame_never_panics_and_a_cut_header_is_an_error(first in frame_strategy(), second in frame_strategy()) {
        let s = schema();
        let w1 = world(&s, None, &frame(1, first));
        let w2 = world(&s, Some(&w1), &frame(2, second));
        let bytes = encoded(&w2, Some(&w1));
        for cut in 0..bytes.len() {
            let back = decode(&s, &bytes[..cut], |_| Some(&w1));
            prop_assert!(cut >= DELTA_HEADER_LEN || back.is_err());
        }
    }
}

#[test]
fn a_world_whose_rows_do_not_fit_leaves_the_worlds_as_they_were() {
    let s = schema();
    let units = |seq: u32, rows: Vec<(u8, Option<Row>)>| frame(seq, vec![(1, Block::Indexed8(rows))]);
    let first = units(1, vec![(3, Some(unit(1.0, 0.5, 1)))]);
    let mut worlds = Worlds::new(4);
    worlds.push(&s, &first).expect("push");
    let (mut held, mut keyframe) = (Held::default(), Vec::new());
    worlds.encode(&s, &first, None, |_, _, _| Pick::Update, &mut keyframe, &mut held).expect("encode");

    // A row of the wrong type after a good one; a short row that a later one of the same id
    // replaces (checked all the same, as the format 5 packer would).
    let late = units(2, vec![(3, Some(unit(2.0, 0.5, 1))), (5, Some(vec![FieldValue::U8(1); 4]))]);
    assert!(matches!(worlds.push(&s, &late), Err(PackError::FieldType { row: 1, .. })));
    let replaced = units(2, vec![(3, Some(vec![FieldValue::F32(1.0)])), (3, Some(unit(2.0, 0.5, 1)))]);
    assert!(matches!(worlds.push(&s, &replaced), Err(PackError::RowWidth { row: 0, .. })));
    assert_eq!(worlds.latest().map(Steps::seq), Some(1), "the newest world is still the first");

    // And the next frame goes on from the first as if the refused ones never came.
    let next = units(2, vec![(3, Some(unit(2.0, 0.5, 1))), (5, Some(unit(-4.0, 0.0, 2)))]);
    worlds.push(&s, &next).expect("push");
    let mut bytes = Vec::new();
    worlds.encode(&s, &next, Some(&held), |_, _, _| Pick::Update, &mut bytes, &mut Held::default()).expect("encode");
    let base = decode(&s, &keyframe, |_| None).expect("the keyframe decodes");
    let got = decode(&s, &bytes, |seq| (seq == 1).then_some(&base)).expect("the delta decodes");
    assert_eq!(live(&got), live(&world(&s, None, &next)));
}

#[test]
fn worlds_follow_the_schema_they_are_given() {
    let coarse = one_x_schema();
    let fine = SnapshotSchema::new([(
        "m".to_owned(),
        BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
            .field(FieldSchema::new("x", FieldType::F32).quant(Quant::PerUnit(100))),
    )])
    .unwrap();
    // A schema's stamp is its own and its clones'; it takes no part in equality.
    assert_eq!(coarse.clone().stamp(), coarse.stamp());
    assert_ne!(one_x_schema().stamp(), coarse.stamp());
    assert_eq!(one_x_schema(), coarse);

    let at = |seq: u32| frame(seq, vec![(1, Block::Indexed8(vec![(7, Some(vec![FieldValue::F32(0.123)]))]))]);
    let mut worlds = Worlds::new(4);
    for (seq, s, want) in [(1, &coarse, 0.1), (2, &fine, 0.12), (3, &coarse, 0.1)] {
        let bs = s.by_id(1).expect("key 1").1;
        let x = worlds.push(s, &at(seq)).expect("push").f32_at(bs, 0, 0);
        assert_eq!(x, Some(want), "frame {seq}: 0.123 on its schema's steps");
    }
}
