use proptest::prelude::*;

use super::*;
use crate::schema::{BlockClass, FieldSchema, Interp};

fn f(name: &str, ty: FieldType) -> FieldSchema {
    FieldSchema::new(name, ty)
}

/// A small schema with one key of every kind, ids 1..=4, and an optional tail on key 4.
fn schema() -> SnapshotSchema {
    SnapshotSchema::new([
        (
            "p".to_owned(),
            BlockSchema::new(1, BlockKind::Indexed8, BlockClass::Hot)
                .field(f("x", FieldType::F32).interp(Interp::Lerp))
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
            "d".to_owned(),
            BlockSchema::new(4, BlockKind::IndexedNoNull8, BlockClass::Hot)
                .field(f("x", FieldType::F32))
                .field(f("vx", FieldType::F32))
                .field(f("spin", FieldType::U8))
                .optional_from(1),
        ),
    ])
    .expect("valid test schema")
}

fn frame(blocks: Vec<(u8, Block)>) -> Frame {
    Frame { seq: 7, server_time_ms: 0.5, player: None, blocks, streamed_out: Vec::new() }
}

/// The header of [`frame`] as bytes: version 5, seq 7, time 0.5 ms (f64 0x3FE0…), flags 0.
const HEADER: [u8; 14] = [5, 0, 0, 0, 7, 0x3F, 0xE0, 0, 0, 0, 0, 0, 0, 0];

fn packed(f: &Frame) -> Vec<u8> {
    let mut out = Vec::new();
    pack(&schema(), f, &mut out).expect("pack");
    out
}

fn body(f: &Frame) -> Vec<u8> {
    let bytes = packed(f);
    assert_eq!(bytes[..HEADER_LEN], HEADER, "header bytes");
    bytes[HEADER_LEN..].to_vec()
}

#[test]
fn golden_header_with_player_block() {
    let mut state = [0.0f32; PLAYER_STATE_LEN];
    state[0] = 1.0; // 0x3F800000
    state[7] = -2.0; // 0xC0000000
    let fr = Frame {
        seq: 0x0102_0304,
        server_time_ms: 1000.0, // 0x408F400000000000
        player: Some(PlayerBlock { last_input_seq: 258, state, centering: true }),
        blocks: vec![],
        streamed_out: Vec::new(),
    };
    let mut want = vec![5, 1, 2, 3, 4, 0x40, 0x8F, 0x40, 0, 0, 0, 0, 0, 0b11, 0, 0, 1, 2];
    want.extend_from_slice(&[0x3F, 0x80, 0, 0]);
    want.extend_from_slice(&[0; 4 * 6]);
    want.extend_from_slice(&[0xC0, 0, 0, 0]);
    assert_eq!(packed(&fr), want);
    assert_eq!(want.len(), HEADER_LEN + PLAYER_BLOCK_LEN);
    assert_eq!(unpack(&schema(), &want), Ok(fr));
}

#[test]
fn player_block_is_not_rounded() {
    let mut state = [0.0f32; PLAYER_STATE_LEN];
    state[3] = 1.23456;
    let fr = Frame {
        seq: 1,
        server_time_ms: 8.333,
        player: Some(PlayerBlock { last_input_seq: 9, state, centering: false }),
        blocks: vec![(3, Block::List16(vec![vec![FieldValue::F32(1.23456)]]))],
        streamed_out: Vec::new(),
    };
    let back = unpack(&schema(), &packed(&fr)).expect("unpack");
    assert_eq!(back.player.map(|p| p.state[3]), Some(1.23456));
    assert_eq!(back.block(3), Some(&Block::List16(vec![vec![FieldValue::F32(1.23)]])));
}

#[test]
fn golden_indexed8() {
    // u8 count 2; row id 3 hasData 1 x=1.5 (0x3FC00000) team=2; row id 9 hasData 0 (null).
    let fr =
        frame(vec![(1, Block::Indexed8(vec![(3, Some(vec![FieldValue::F32(1.5), FieldValue::U8(2)])), (9, None)]))]);
    let want = [1, 2, 3, 1, 0x3F, 0xC0, 0, 0, 2, 9, 0];
    assert_eq!(body(&fr), want);
    assert_eq!(unpack(&schema(), &packed(&fr)), Ok(fr));
}

#[test]
fn golden_indexed32() {
    // u16 count 2; row u32 id 0x01000002 hasData 1 hp=0x0102 owner=0xDEADBEEF; row id 5 null.
    let fr = frame(vec![(
        2,
        Block::Indexed32(vec![
            (0x0100_0002, Some(vec![FieldValue::U16(0x0102), FieldValue::U32(0xDEAD_BEEF)])),
            (5, None),
        ]),
    )]);
    let want = [2, 0, 2, 1, 0, 0, 2, 1, 1, 2, 0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 5, 0];
    assert_eq!(body(&fr), want);
    assert_eq!(unpack(&schema(), &packed(&fr)), Ok(fr));
}

#[test]
fn golden_list16() {
    // u16 count 3; fields only: r = 2.0 (0x40000000), -1.0 (0xBF800000), 0.25 (0x3E800000).
    let fr = frame(vec![(
        3,
        Block::List16(vec![vec![FieldValue::F32(2.0)], vec![FieldValue::F32(-1.0)], vec![FieldValue::F32(0.25)]]),
    )]);
    let want = [3, 0, 3, 0x40, 0, 0, 0, 0xBF, 0x80, 0, 0, 0x3E, 0x80, 0, 0];
    assert_eq!(body(&fr), want);
    assert_eq!(unpack(&schema(), &packed(&fr)), Ok(fr));
}

#[test]
fn golden_indexed_no_null8_with_optional_tail() {
    // u8 count 2; slot 0: flag 0, x = 1.0 (the tail is all zero, not written);
    // slot 4: flag 1, x = 2.0, vx = -2.0, spin = 7.
    let resting = vec![FieldValue::F32(1.0), FieldValue::F32(0.0), FieldValue::U8(0)];
    let moving = vec![FieldValue::F32(2.0), FieldValue::F32(-2.0), FieldValue::U8(7)];
    let fr = frame(vec![(4, Block::IndexedNoNull8(vec![(0, resting), (4, moving)]))]);
    let want = [4, 2, 0, 0, 0x3F, 0x80, 0, 0, 4, 1, 0x40, 0, 0, 0, 0xC0, 0, 0, 0, 7];
    assert_eq!(body(&fr), want);
    assert_eq!(unpack(&schema(), &packed(&fr)), Ok(fr), "an absent tail unpacks as zeros");
}

#[test]
fn a_row_may_be_given_without_its_tail() {
    let short = frame(vec![(4, Block::IndexedNoNull8(vec![(1, vec![FieldValue::F32(3.0)])]))]);
    assert_eq!(body(&short), [4, 1, 1, 0, 0x40, 0x40, 0, 0]);
    let back = unpack(&schema(), &packed(&short)).expect("unpack");
    let full = vec![FieldValue::F32(3.0), FieldValue::F32(0.0), FieldValue::U8(0)];
    assert_eq!(back.block(4), Some(&Block::IndexedNoNull8(vec![(1, full)])), "always full width");
}

#[test]
fn empty_blocks_are_not_written() {
    let fr = frame(vec![(3, Block::List16(vec![])), (1, Block::Indexed8(vec![]))]);
    assert_eq!(body(&fr), [] as [u8; 0]);
}

#[test]
fn pack_errors_name_the_key() {
    let s = schema();
    let mut out = vec![0xAA];
    let bad = [
        (frame(vec![(9, Block::List16(vec![]))]), PackError::UnknownKey(9)),
        (
            frame(vec![(3, Block::Indexed8(vec![(1, None)]))]),
            PackError::KindMismatch { key: "e".into(), want: BlockKind::List16, got: BlockKind::Indexed8 },
        ),
        (
            frame(vec![(3, Block::List16(vec![vec![]]))]),
            PackError::RowWidth { key: "e".into(), row: 0, got: 0, want: 1 },
        ),
        (
            frame(vec![(3, Block::List16(vec![vec![FieldValue::U8(1)]]))]),
            PackError::FieldType {
                key: "e".into(),
                row: 0,
                field: "r".into(),
                want: FieldType::F32,
                got: FieldType::U8,
            },
        ),
        (
            frame(vec![(1, Block::Indexed8(vec![(0, None); 256]))]),
            PackError::TooManyRows { key: "p".into(), count: 256, max: 255 },
        ),
        (frame(vec![(3, Block::List16(vec![])), (3, Block::List16(vec![]))]), PackError::DuplicateKey("e".into())),
    ];
    for (fr, want) in bad {
        assert_eq!(pack(&s, &fr, &mut out), Err(want));
        assert_eq!(out, [0xAA], "a failed pack leaves the buffer as it was");
    }
}

#[test]
fn decode_errors() {
    let s = schema();
    let ok = packed(&frame(vec![(1, Block::Indexed8(vec![(3, Some(vec![FieldValue::F32(1.5), FieldValue::U8(2)]))]))]));
    let with = |i: usize, b: u8| {
        let mut v = ok.clone();
        v[i] = b;
        v
    };
    assert_eq!(unpack(&s, &with(0, 4)), Err(DecodeError::Version { found: 4 }));
    assert_eq!(unpack(&s, &with(13, 0b100)), Err(DecodeError::HeaderFlags(0b100)));
    assert_eq!(unpack(&s, &with(13, 0b10)), Err(DecodeError::HeaderFlags(0b10)));
    assert_eq!(unpack(&s, &with(14, 77)), Err(DecodeError::UnknownKey { key: 77, at: 14 }));
    assert_eq!(unpack(&s, &with(17, 2)), Err(DecodeError::HasData { key: 1, value: 2, at: 17 }));
    // A count past the end of the frame.
    assert_eq!(unpack(&s, &with(15, 2)), Err(DecodeError::Truncated { at: ok.len(), what: "row id", need: 1 }));
    // The same key twice.
    let mut twice = ok.clone();
    twice.extend_from_slice(&ok[HEADER_LEN..]);
    assert_eq!(unpack(&s, &twice), Err(DecodeError::DuplicateKey { key: 1, at: ok.len() }));
    // Every truncation is an error, never a panic.
    for cut in (0..HEADER_LEN).chain(HEADER_LEN + 1..ok.len()) {
        assert!(matches!(unpack(&s, &ok[..cut]), Err(DecodeError::Truncated { .. })), "cut at {cut}");
    }
    // The header alone is a frame with nothing in it.
    assert_eq!(unpack(&s, &ok[..HEADER_LEN]).map(|f| f.blocks.len()), Ok(0));
    // A bad tail flag.
    let tail = packed(&frame(vec![(4, Block::IndexedNoNull8(vec![(0, vec![FieldValue::F32(1.0)])]))]));
    let mut bad = tail.clone();
    bad[HEADER_LEN + 3] = 2;
    assert_eq!(unpack(&s, &bad), Err(DecodeError::TailFlag { key: 4, value: 2, at: HEADER_LEN + 3 }));
}

#[test]
fn round2_examples() {
    assert_eq!(round2(1.234), 1.23);
    assert_eq!(round2(1.235_001), 1.24);
    assert_eq!(round2(-0.004), -0.0);
    assert_eq!(round2(-12.345_67), -12.35);
    assert_eq!(round2(100.0), 100.0);
    assert!(round2(f32::NAN).is_nan());
    assert_eq!(round2(f32::INFINITY), f32::INFINITY);
}

fn value_of(ty: FieldType) -> BoxedStrategy<FieldValue> {
    match ty {
        FieldType::F32 => (-1.0e5f32..1.0e5).prop_map(FieldValue::F32).boxed(),
        FieldType::U8 => any::<u8>().prop_map(FieldValue::U8).boxed(),
        FieldType::U16 => any::<u16>().prop_map(FieldValue::U16).boxed(),
        FieldType::U32 => any::<u32>().prop_map(FieldValue::U32).boxed(),
    }
}

fn field_type() -> impl Strategy<Value = FieldType> {
    prop_oneof![Just(FieldType::F32), Just(FieldType::U8), Just(FieldType::U16), Just(FieldType::U32)]
}

fn kind() -> impl Strategy<Value = BlockKind> {
    prop_oneof![
        Just(BlockKind::Indexed8),
        Just(BlockKind::Indexed32),
        Just(BlockKind::List16),
        Just(BlockKind::IndexedNoNull8)
    ]
}

/// A random one-key schema and a block of random rows (some with a zero tail).
fn schema_and_block() -> impl Strategy<Value = (SnapshotSchema, Block)> {
    (kind(), prop::collection::vec(field_type(), 1..6), any::<u8>(), any::<prop::sample::Index>()).prop_flat_map(
        |(kind, types, id, tail)| {
            let optional_from = (types.len() > 1).then(|| 1 + tail.index(types.len() - 1));
            let mut bs = BlockSchema::new(id, kind, BlockClass::Hot);
            for (i, ty) in types.iter().enumerate() {
                bs = bs.field(FieldSchema::new(format!("f{i}"), *ty));
            }
            bs.optional_from = optional_from;
            let schema = SnapshotSchema::new([("k".to_owned(), bs)]).expect("random schema is valid");
            let row = types
                .iter()
                .enumerate()
                .map(|(i, ty)| {
                    let v = value_of(*ty);
                    // Zero the tail now and then so both tail forms are exercised.
                    if optional_from.is_some_and(|f| i >= f) {
                        prop_oneof![v, Just(FieldValue::zero(*ty))].boxed()
                    } else {
                        v
                    }
                })
                .collect::<Vec<_>>();
            let rows = prop::collection::vec((any::<u32>(), any::<bool>(), row), 1..20);
            (Just(schema), rows.prop_map(move |rows| make_block(kind, rows)))
        },
    )
}

fn make_block(kind: BlockKind, rows: Vec<(u32, bool, Row)>) -> Block {
    match kind {
        BlockKind::Indexed8 => {
            Block::Indexed8(rows.into_iter().map(|(id, some, r)| (id as u8, some.then_some(r))).collect())
        }
        BlockKind::Indexed32 => {
            Block::Indexed32(rows.into_iter().map(|(id, some, r)| (id, some.then_some(r))).collect())
        }
        BlockKind::List16 => Block::List16(rows.into_iter().map(|(_, _, r)| r).collect()),
        BlockKind::IndexedNoNull8 => Block::IndexedNoNull8(rows.into_iter().map(|(id, _, r)| (id as u8, r)).collect()),
    }
}

fn rounded(block: &Block) -> Block {
    let r = |row: &Row| -> Row {
        row.iter()
            .map(|v| match v {
                FieldValue::F32(x) => FieldValue::F32(round2(*x)),
                v => *v,
            })
            .collect()
    };
    match block {
        Block::Indexed8(rows) => Block::Indexed8(rows.iter().map(|(i, row)| (*i, row.as_ref().map(r))).collect()),
        Block::Indexed32(rows) => Block::Indexed32(rows.iter().map(|(i, row)| (*i, row.as_ref().map(r))).collect()),
        Block::List16(rows) => Block::List16(rows.iter().map(r).collect()),
        Block::IndexedNoNull8(rows) => Block::IndexedNoNull8(rows.iter().map(|(i, row)| (*i, r(row))).collect()),
    }
}

proptest! {
    #[test]
    fn random_rows_round_trip_after_round2((schema, block) in schema_and_block(), seq: u32, t in 0.0f64..1e9) {
        let id = schema.keys().next().map(|(_, b)| b.id).expect("one key");
        let fr = Frame { seq, server_time_ms: t, player: None, blocks: vec![(id, block.clone())], streamed_out: Vec::new() };
        let mut out = Vec::new();
        pack(&schema, &fr, &mut out).expect("pack");
        let back = unpack(&schema, &out).expect("unpack");
        prop_assert_eq!(back.seq, seq);
        prop_assert_eq!(back.server_time_ms, t);
        prop_assert_eq!(back.block(id), Some(&rounded(&block)));
    }

    #[test]
    fn round2_is_idempotent(v in -1.0e5f32..1.0e5) {
        let once = round2(v);
        prop_assert_eq!(round2(once), once);
        prop_assert!((once - v).abs() <= 0.005 + v.abs() * 1e-6);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = unpack(&schema(), &bytes);
    }

    #[test]
    fn random_blocks_after_a_valid_header_never_panic(key in 1u8..=4, tail in prop::collection::vec(any::<u8>(), 0..256)) {
        let mut bytes = HEADER.to_vec();
        bytes.push(key);
        bytes.extend_from_slice(&tail);
        let _ = unpack(&schema(), &bytes);
    }
}
