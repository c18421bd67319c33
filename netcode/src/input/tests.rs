use super::*;
use proptest::prelude::*;

const KEYS_JSON: &str = r#"{ "forward": { "bit": 0, "type": 0 }, "fire": { "bit": 6, "type": 1 } }"#;

fn table() -> KeyTable {
    KeyTable::from_json(KEYS_JSON).expect("the test table is valid")
}

fn ev(seq: u32, action: KeyAction, name: &str) -> InputEvent {
    InputEvent { seq, action, name: name.to_owned() }
}

fn spec(bit: u8, kind: KeyKind) -> KeySpec {
    KeySpec { bit, kind }
}

// ---- text form ----

#[test]
fn parses_examples() {
    assert_eq!(InputEvent::parse("12:down:forward"), Ok(ev(12, KeyAction::Down, "forward")));
    assert_eq!("0:up:nextPlayer".parse::<InputEvent>(), Ok(ev(0, KeyAction::Up, "nextPlayer")));
    assert_eq!(InputEvent::parse("4294967295:down:fire_2"), Ok(ev(u32::MAX, KeyAction::Down, "fire_2")));
    assert_eq!(InputEvent::parse("0000000007:up:a"), Ok(ev(7, KeyAction::Up, "a")));
    let name32 = "abcdefghijklmnopqrstuvwxyz012345";
    assert_eq!(InputEvent::parse(&format!("1:up:{name32}")), Ok(ev(1, KeyAction::Up, name32)));
}

#[test]
fn formats_examples() {
    assert_eq!(ev(12, KeyAction::Down, "forward").to_string(), "12:down:forward");
    assert_eq!(ev(0, KeyAction::Up, "fire").to_string(), "0:up:fire");
    assert_eq!(KeyAction::Down.to_string(), "down");
    assert_eq!(KeyAction::Up.to_string(), "up");
}

#[test]
fn rejects_junk_strings() {
    let s = |t: &str| t.to_owned();
    let cases: Vec<(&str, InputError)> = vec![
        ("", InputError::WrongPartCount { input: s(""), found: 1 }),
        ("1:down", InputError::WrongPartCount { input: s("1:down"), found: 2 }),
        ("1:down:a:b", InputError::WrongPartCount { input: s("1:down:a:b"), found: 4 }),
        ("x:down:fire", InputError::InvalidSeq { text: s("x") }),
        ("-1:up:fire", InputError::InvalidSeq { text: s("-1") }),
        ("+1:up:fire", InputError::InvalidSeq { text: s("+1") }),
        (" 1:up:fire", InputError::InvalidSeq { text: s(" 1") }),
        (":up:fire", InputError::InvalidSeq { text: s("") }),
        ("4294967296:up:fire", InputError::SeqOutOfRange { text: s("4294967296") }),
        ("00000000001:up:fire", InputError::SeqOutOfRange { text: s("00000000001") }),
        ("1:press:fire", InputError::UnknownAction { text: s("press") }),
        ("1:Down:fire", InputError::UnknownAction { text: s("Down") }),
        ("1: down:fire", InputError::UnknownAction { text: s(" down") }),
        ("1:down:", InputError::EmptyName),
        ("1:down:fi re", InputError::InvalidNameChar { name: s("fi re"), ch: ' ' }),
        ("1:down:fire\n", InputError::InvalidNameChar { name: s("fire\n"), ch: '\n' }),
        ("1:down:fé", InputError::InvalidNameChar { name: s("fé"), ch: 'é' }),
        (
            "1:down:abcdefghijklmnopqrstuvwxyz0123456",
            InputError::NameTooLong { name: s("abcdefghijklmnopqrstuvwxyz0123456"), len: 33 },
        ),
    ];
    for (text, expected) in cases {
        assert_eq!(InputEvent::parse(text), Err(expected), "input {text:?}");
    }
}

#[test]
fn new_validates_name() {
    assert_eq!(InputEvent::new(3, KeyAction::Up, "fire"), Ok(ev(3, KeyAction::Up, "fire")));
    assert_eq!(InputEvent::new(3, KeyAction::Up, ""), Err(InputError::EmptyName));
}

// ---- key table ----

#[test]
fn key_table_reads_and_looks_up() {
    let t = table();
    assert_eq!(t.len(), 2);
    assert_eq!(t.lookup("forward"), Some(spec(0, KeyKind::Held)));
    assert_eq!(t.lookup("fire"), Some(spec(6, KeyKind::OneShot)));
    assert_eq!(t.lookup("jump"), None);
    assert_eq!(t.name_of(0), Some("forward"));
    assert_eq!(t.name_of(6), Some("fire"));
    assert_eq!(t.name_of(1), None);
    assert_eq!(t.name_of(200), None);
    let order: Vec<&str> = t.iter().map(|(n, _)| n).collect();
    assert_eq!(order, ["forward", "fire"]);
}

#[test]
fn key_table_keeps_declaration_order() {
    let t = KeyTable::from_json(r#"{"zeta":{"bit":3,"type":0},"alpha":{"bit":1,"type":1},"mid":{"bit":2,"type":0}}"#)
        .expect("valid table");
    let order: Vec<&str> = t.iter().map(|(n, _)| n).collect();
    assert_eq!(order, ["zeta", "alpha", "mid"]);
}

#[test]
fn key_table_serializes_to_the_same_json() {
    let json = serde_json::to_string(&table()).expect("a table serializes");
    assert_eq!(json, r#"{"forward":{"bit":0,"type":0},"fire":{"bit":6,"type":1}}"#);
    let back: KeyTable = serde_json::from_str(&json).expect("and reads back");
    assert_eq!(back, table());
}

#[test]
fn key_table_validation_errors() {
    assert_eq!(
        KeyTable::from_json(r#"{"forward":{"bit":64,"type":0}}"#),
        Err(InputError::KeyBitOutOfRange { name: "forward".into(), bit: 64 })
    );
    assert_eq!(
        KeyTable::from_json(r#"{"forward":{"bit":3,"type":0},"fire":{"bit":3,"type":1}}"#),
        Err(InputError::DuplicateKeyBit { bit: 3, first: "forward".into(), second: "fire".into() })
    );
    assert_eq!(
        KeyTable::from_json(r#"{"fire":{"bit":1,"type":1},"fire":{"bit":2,"type":1}}"#),
        Err(InputError::DuplicateKeyName { name: "fire".into() })
    );
    assert_eq!(
        KeyTable::from_json(r#"{"fi re":{"bit":1,"type":1}}"#),
        Err(InputError::InvalidNameChar { name: "fi re".into(), ch: ' ' })
    );
    assert_eq!(KeyTable::from_json(r#"{"":{"bit":1,"type":1}}"#), Err(InputError::EmptyName));
    for bad in [
        r#"{"fire":{"bit":1,"type":2}}"#,
        r#"{"fire":{"bit":1}}"#,
        r#"{"fire":{"bit":1,"type":0,"extra":1}}"#,
        r#"{"fire":{"bit":300,"type":0}}"#,
        r#"{"fire":{"bit":-1,"type":0}}"#,
        r#"[]"#,
        r#"{"fire":"#,
    ] {
        assert!(matches!(KeyTable::from_json(bad), Err(InputError::Json { .. })), "{bad}");
    }
    // Through serde the same validation applies.
    assert!(serde_json::from_str::<KeyTable>(r#"{"a":{"bit":64,"type":0}}"#).is_err());
    // A table built from a map is validated too.
    let mut map = IndexMap::new();
    map.insert("a".to_owned(), spec(63, KeyKind::Held));
    map.insert("b".to_owned(), spec(63, KeyKind::OneShot));
    assert_eq!(
        KeyTable::try_from(map),
        Err(InputError::DuplicateKeyBit { bit: 63, first: "a".into(), second: "b".into() })
    );
    assert_eq!(KeyKind::try_from(7), Err(InputError::UnknownKeyKind { value: 7 }));
}

#[test]
fn key_table_resolves_and_names_events() {
    let t = table();
    assert_eq!(
        t.resolve(&ev(9, KeyAction::Down, "fire")),
        Ok(BinaryKeyEvent { seq: 9, action: KeyAction::Down, bit: 6 })
    );
    assert_eq!(t.resolve(&ev(9, KeyAction::Down, "jump")), Err(InputError::UnknownKey { name: "jump".into() }));
    assert_eq!(
        t.to_event(&BinaryKeyEvent { seq: 4, action: KeyAction::Up, bit: 0 }),
        Ok(ev(4, KeyAction::Up, "forward"))
    );
    assert_eq!(
        t.to_event(&BinaryKeyEvent { seq: 4, action: KeyAction::Up, bit: 5 }),
        Err(InputError::UnboundBit { bit: 5 })
    );
}

// ---- key state ----

#[test]
fn one_shot_down_and_up_before_a_step_fires_once() {
    let t = table();
    let mut s = KeyState::new();
    assert_eq!(s.apply(&t, &ev(1, KeyAction::Down, "fire")), Ok(true));
    assert_eq!(s.apply(&t, &ev(2, KeyAction::Up, "fire")), Ok(true));
    assert_eq!(s.pending(), 1 << 6);
    assert_eq!(s.held(), 0);
    let first = s.step();
    assert_eq!(first, KeyBits { held: 0, fired: 1 << 6, aim: None, view: None });
    assert!(first.fired(6));
    assert!(!first.is_held(6));
    assert_eq!(s.step(), KeyBits { held: 0, fired: 0, aim: None, view: None });
    assert_eq!(s.pending(), 0);
}

#[test]
fn held_key_stays_down_until_up() {
    let t = table();
    let mut s = KeyState::new();
    assert_eq!(s.apply(&t, &ev(5, KeyAction::Down, "forward")), Ok(true));
    assert_eq!(s.step(), KeyBits { held: 1, fired: 0, aim: None, view: None });
    assert_eq!(s.step(), KeyBits { held: 1, fired: 0, aim: None, view: None });
    assert!(KeyBits { held: 1, fired: 0, aim: None, view: None }.is_held(0));
    assert_eq!(s.apply(&t, &ev(6, KeyAction::Up, "forward")), Ok(true));
    assert_eq!(s.held(), 0);
    assert_eq!(s.step(), KeyBits { held: 0, fired: 0, aim: None, view: None });
}

#[test]
fn held_key_is_untouched_by_one_shots() {
    let t = table();
    let mut s = KeyState::new();
    assert_eq!(s.apply(&t, &ev(1, KeyAction::Down, "forward")), Ok(true));
    assert_eq!(s.apply(&t, &ev(2, KeyAction::Down, "fire")), Ok(true));
    assert_eq!(s.step(), KeyBits { held: 1, fired: 0x40, aim: None, view: None });
    assert_eq!(s.step(), KeyBits { held: 1, fired: 0, aim: None, view: None });
}

#[test]
fn duplicate_and_old_seqs_are_ignored() {
    let t = table();
    let mut s = KeyState::new();
    assert_eq!(s.last_input_seq(), 0);
    assert_eq!(s.last_input_seq_opt(), None);
    // The very first event may carry seq 0.
    assert_eq!(s.apply(&t, &ev(0, KeyAction::Down, "forward")), Ok(true));
    assert_eq!(s.last_input_seq_opt(), Some(0));
    assert_eq!(s.apply(&t, &ev(0, KeyAction::Up, "forward")), Ok(false));
    assert_eq!(s.held(), 1);
    assert_eq!(s.apply(&t, &ev(10, KeyAction::Down, "fire")), Ok(true));
    s.step();
    // A repeat of seq 10 does not fire again, nor does an older one.
    assert_eq!(s.apply(&t, &ev(10, KeyAction::Down, "fire")), Ok(false));
    assert_eq!(s.apply(&t, &ev(7, KeyAction::Down, "fire")), Ok(false));
    assert_eq!(s.apply(&t, &ev(9, KeyAction::Up, "forward")), Ok(false));
    assert_eq!(s.step(), KeyBits { held: 1, fired: 0, aim: None, view: None });
    assert_eq!(s.last_input_seq(), 10);
}

#[test]
fn unknown_name_errors_and_keeps_the_seq() {
    let t = table();
    let mut s = KeyState::new();
    assert_eq!(s.apply(&t, &ev(3, KeyAction::Down, "forward")), Ok(true));
    assert_eq!(s.apply(&t, &ev(4, KeyAction::Down, "jump")), Err(InputError::UnknownKey { name: "jump".into() }));
    assert_eq!(s.last_input_seq(), 3);
    // Seq 4 is still free.
    assert_eq!(s.apply(&t, &ev(4, KeyAction::Up, "forward")), Ok(true));
    assert_eq!(s.held(), 0);
    assert_eq!(s.last_input_seq(), 4);
}

#[test]
fn apply_binary_and_apply_bit() {
    let t = table();
    let mut s = KeyState::new();
    let b = |seq, action, bit| BinaryKeyEvent { seq, action, bit };
    assert_eq!(s.apply_binary(&t, &b(1, KeyAction::Down, 6)), Ok(true));
    assert_eq!(s.apply_binary(&t, &b(2, KeyAction::Down, 5)), Err(InputError::UnboundBit { bit: 5 }));
    assert_eq!(s.last_input_seq(), 1);
    // A bit no table can hold is ignored and leaves the seq free.
    assert!(!s.apply_bit(2, KeyAction::Down, spec(64, KeyKind::Held)));
    assert!(s.apply_bit(2, KeyAction::Down, spec(63, KeyKind::Held)));
    assert_eq!(s.step(), KeyBits { held: 1 << 63, fired: 1 << 6, aim: None, view: None });
    assert!(!KeyBits { held: u64::MAX, fired: u64::MAX, aim: None, view: None }.is_held(64));
}

#[test]
fn key_state_serde_round_trip() {
    let t = table();
    let mut s = KeyState::new();
    assert_eq!(s.apply(&t, &ev(8, KeyAction::Down, "forward")), Ok(true));
    assert_eq!(s.apply(&t, &ev(9, KeyAction::Down, "fire")), Ok(true));
    assert!(s.apply_aim(10, Aim::new(1.5, -2.0, 1)));
    assert!(s.apply_view(11, ViewTime { tick: 7, frac: 2 }));
    let json = serde_json::to_string(&s).expect("a state serializes");
    assert_eq!(
        json,
        r#"{"held":1,"pending":64,"last_input_seq":11,"aim":{"x":1.5,"y":-2.0,"flags":1},"view":{"tick":7,"frac":2}}"#
    );
    let back: KeyState = serde_json::from_str(&json).expect("and reads back");
    assert_eq!(back, s);
    let fresh: KeyState = serde_json::from_str(r#"{"held":0,"pending":0,"last_input_seq":null,"aim":null}"#)
        .expect("an empty state reads");
    assert_eq!(fresh, KeyState::default());
}

// ---- binary form ----

#[test]
fn encodes_golden_batch() {
    let mut out = vec![0xAA];
    let events = [(7, KeyAction::Down, 0), (8, KeyAction::Down, 6), (10, KeyAction::Up, 0)];
    assert_eq!(encode_events(&events, &mut out), Ok(()));
    assert_eq!(out, [0xAA, 0x03, 0, 0, 0, 7, 0x80, 0x01, 0x86, 0x02, 0x00]);
    let decoded = decode_inputs(&out[1..]).expect("the golden batch decodes");
    assert_eq!(
        decoded,
        [
            WireInput::Key(BinaryKeyEvent { seq: 7, action: KeyAction::Down, bit: 0 }),
            WireInput::Key(BinaryKeyEvent { seq: 8, action: KeyAction::Down, bit: 6 }),
            WireInput::Key(BinaryKeyEvent { seq: 10, action: KeyAction::Up, bit: 0 }),
        ]
    );
}

#[test]
fn encodes_edge_batches() {
    let mut out = Vec::new();
    assert_eq!(encode_events(&[], &mut out), Ok(()));
    assert_eq!(out, [0x00]);
    assert_eq!(decode_inputs(&[0x00]), Ok(vec![]));

    let mut out = Vec::new();
    let events = [(0x0102_0304, KeyAction::Up, 63), (0x0102_0403, KeyAction::Down, 1)];
    assert_eq!(encode_events(&events, &mut out), Ok(()));
    assert_eq!(out, [0x02, 0x01, 0x02, 0x03, 0x04, 0x3F, 0xFF, 0x81]);
}

#[test]
fn encode_rejects_bad_batches_and_leaves_output() {
    let mut out = vec![9];
    assert_eq!(
        encode_events(&[(1, KeyAction::Down, 64)], &mut out),
        Err(InputError::InvalidEventBit { index: 0, bit: 64 })
    );
    assert_eq!(
        encode_events(&[(1, KeyAction::Down, 0), (1, KeyAction::Up, 0)], &mut out),
        Err(InputError::SeqNotIncreasing { index: 1, previous: 1, seq: 1 })
    );
    assert_eq!(
        encode_events(&[(5, KeyAction::Down, 0), (4, KeyAction::Up, 0)], &mut out),
        Err(InputError::SeqNotIncreasing { index: 1, previous: 5, seq: 4 })
    );
    assert_eq!(
        encode_events(&[(5, KeyAction::Down, 0), (261, KeyAction::Up, 0)], &mut out),
        Err(InputError::SeqGapTooLarge { index: 1, previous: 5, seq: 261 })
    );
    let many: Vec<(u32, KeyAction, u8)> = (0..256).map(|s| (s, KeyAction::Down, 0)).collect();
    assert_eq!(encode_events(&many, &mut out), Err(InputError::TooManyEvents { count: 256 }));
    assert_eq!(out, [9]);
    // A gap of exactly 255 is fine.
    assert_eq!(encode_events(&[(5, KeyAction::Down, 0), (260, KeyAction::Up, 0)], &mut out), Ok(()));
    assert_eq!(out, [9, 0x02, 0, 0, 0, 5, 0x80, 0xFF, 0x00]);
}

#[test]
fn decode_rejects_bad_bytes() {
    let golden = [0x03, 0, 0, 0, 7, 0x80, 0x01, 0x86, 0x02, 0x00];
    assert_eq!(decode_inputs(&[]), Err(InputError::Truncated { expected: 1, found: 0 }));
    assert_eq!(decode_inputs(&golden[..9]), Err(InputError::Truncated { expected: 10, found: 9 }));
    assert_eq!(decode_inputs(&[0x01, 0, 0]), Err(InputError::Truncated { expected: 6, found: 3 }));
    let mut trailing = golden.to_vec();
    trailing.extend_from_slice(&[0, 0]);
    assert_eq!(decode_inputs(&trailing), Err(InputError::TrailingBytes { extra: 2 }));
    assert_eq!(decode_inputs(&[0x00, 0x00]), Err(InputError::TrailingBytes { extra: 1 }));
    // Code 0xC0: down, bit 64.
    assert_eq!(decode_inputs(&[0x01, 0, 0, 0, 1, 0xC0]), Err(InputError::InvalidEventBit { index: 0, bit: 64 }));
    assert_eq!(
        decode_inputs(&[0x02, 0, 0, 0, 1, 0x00, 0x01, 0x7F]),
        Err(InputError::InvalidEventBit { index: 1, bit: 127 })
    );
    assert_eq!(decode_inputs(&[0x02, 0, 0, 0, 1, 0x00, 0x00, 0x01]), Err(InputError::ZeroSeqDelta { index: 1 }));
    assert_eq!(
        decode_inputs(&[0x02, 0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x01, 0x01]),
        Err(InputError::BatchSeqOverflow { index: 1 })
    );
}

// ---- aims ----

fn aim_at(seq: u32, x: f32, y: f32, flags: u8) -> WireInput {
    WireInput::Aim(AimEvent { seq, aim: Some(Aim { x, y, flags }) })
}

#[test]
fn encodes_golden_batch_with_aims() {
    let mut out = Vec::new();
    let events = [
        WireInput::from((7, KeyAction::Down, 4)),
        aim_at(8, 1.5, -2.0, AIM_PRESSED),
        WireInput::Aim(AimEvent { seq: 10, aim: None }),
    ];
    assert_eq!(encode_inputs(&events, &mut out), Ok(()));
    #[rustfmt::skip]
        let golden = [
            0x03, 0, 0, 0, 7, 0x84,
            0x01, 0x40, 0x3F, 0xC0, 0x00, 0x00, 0xC0, 0x00, 0x00, 0x00, 0x01,
            0x02, 0x41,
        ];
    assert_eq!(out, golden);
    assert_eq!(decode_inputs(&golden).as_deref(), Ok(&events[..]));
    // A lone aim first in the batch.
    let mut out = Vec::new();
    assert_eq!(encode_inputs(&[aim_at(1, 0.0, 0.0, 0)], &mut out), Ok(()));
    assert_eq!(out, [0x01, 0, 0, 0, 1, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn encodes_golden_batch_with_a_view_before_a_press() {
    let events = [
        WireInput::View(ViewEvent { seq: 300, view: ViewTime { tick: 0x0102_0304, frac: 0x80 } }),
        WireInput::from((301, KeyAction::Down, 6)),
    ];
    let mut out = Vec::new();
    assert_eq!(encode_inputs(&events, &mut out), Ok(()));
    assert_eq!(out, [0x02, 0, 0, 0x01, 0x2C, 0x42, 0x01, 0x02, 0x03, 0x04, 0x80, 0x01, 0x86]);
    assert_eq!(decode_inputs(&out).as_deref(), Ok(&events[..]));
    // Cut anywhere inside the view: truncated, never a panic.
    for cut in 6..11 {
        assert!(matches!(decode_inputs(&out[..cut]), Err(InputError::Truncated { .. })), "cut at {cut}");
    }
    // The codes after the view's are refused.
    for code in [0x43u8, 0x7F] {
        let bad = [0x01, 0, 0, 0, 1, code];
        assert!(decode_inputs(&bad).is_err(), "code {code:#x}");
    }
}

#[test]
fn a_view_goes_with_the_next_step_only_and_by_the_seq_rule() {
    let table = table();
    let mut state = KeyState::new();
    let view = ViewTime { tick: 40, frac: 3 };
    assert!(state.apply_view(5, view));
    assert!(!state.apply_view(5, ViewTime { tick: 1, frac: 0 }), "a repeat is ignored");
    assert_eq!(state.apply(&table, &ev(6, KeyAction::Down, "fire")), Ok(true));
    let bits = state.step();
    assert_eq!((bits.view, bits.fired(6)), (Some(view), true));
    assert_eq!(state.step().view, None, "a view is for the step after it only");
    assert!(!state.apply_view(4, view), "an old seq");
    assert_eq!(state.step().view, None);
    // A later view before the step replaces an earlier one.
    assert!(state.apply_view(7, ViewTime { tick: 41, frac: 0 }));
    assert!(state.apply_view(8, ViewTime { tick: 42, frac: 0 }));
    assert_eq!(state.step().view, Some(ViewTime { tick: 42, frac: 0 }));
    assert!(state.apply_view(9, view));
    state.release_all();
    assert_eq!(state.step().view, None, "let go with the keys");
}

#[test]
fn view_times_convert_from_ticks_and_in_256ths() {
    assert_eq!(ViewTime::from_ticks(12.5), Some(ViewTime { tick: 12, frac: 128 }));
    assert_eq!(ViewTime::from_ticks(0.0), Some(ViewTime { tick: 0, frac: 0 }));
    for bad in [-0.5, f64::NAN, f64::INFINITY, f64::from(u32::MAX)] {
        assert_eq!(ViewTime::from_ticks(bad), None, "{bad}");
    }
    let v = ViewTime { tick: 7, frac: 9 };
    assert_eq!(v.in_256ths(), 7 * 256 + 9);
    assert_eq!(ViewTime::from_256ths(v.in_256ths()), v);
    assert_eq!(ViewTime::from_256ths(u64::MAX), ViewTime { tick: u32::MAX, frac: 255 });
    assert!(ViewTime { tick: 7, frac: 10 } > v && (v.ticks() - 7.035_156_25).abs() < 1e-12);
}

#[test]
fn hostile_aims_are_refused() {
    let batch = |x: f32, y: f32| {
        let mut b = vec![0x01, 0, 0, 0, 1, 0x40];
        b.extend_from_slice(&x.to_be_bytes());
        b.extend_from_slice(&y.to_be_bytes());
        b.push(0);
        b
    };
    for (x, y) in [
        (f32::NAN, 0.0),
        (0.0, f32::NAN),
        (f32::INFINITY, 0.0),
        (0.0, f32::NEG_INFINITY),
        (MAX_AIM_COORD * 2.0, 0.0),
        (0.0, -f32::MAX),
    ] {
        assert_eq!(decode_inputs(&batch(x, y)), Err(InputError::InvalidAim { index: 0 }), "({x}, {y})");
        let mut out = vec![9];
        assert_eq!(encode_inputs(&[aim_at(1, x, y, 0)], &mut out), Err(InputError::InvalidAim { index: 0 }));
        assert_eq!(out, [9], "nothing written");
        assert!(!KeyState::new().apply_aim(1, Some(Aim { x, y, flags: 0 })), "({x}, {y}) is not applied");
    }
    assert!(decode_inputs(&batch(MAX_AIM_COORD, -MAX_AIM_COORD)).is_ok(), "the bound itself is fine");
    // Cut inside the point, codes beside the aim's, an aim cut short before a later event.
    let whole = batch(1.0, 2.0);
    assert_eq!(decode_inputs(&whole[..10]), Err(InputError::Truncated { expected: 15, found: 10 }));
    assert_eq!(decode_inputs(&[0x01, 0, 0, 0, 1, 0x43]), Err(InputError::InvalidEventBit { index: 0, bit: 0x43 }));
    assert_eq!(decode_inputs(&[0x01, 0, 0, 0, 1, 0xC1]), Err(InputError::InvalidEventBit { index: 0, bit: 0x41 }));
    let mut two = whole.clone();
    two[0] = 2;
    assert_eq!(decode_inputs(&two), Err(InputError::Truncated { expected: 17, found: 15 }));
    two.extend_from_slice(&[1, 0x41, 0]);
    assert_eq!(decode_inputs(&two), Err(InputError::TrailingBytes { extra: 1 }));
}

#[test]
fn aim_new_clamps_and_refuses_nan() {
    assert_eq!(Aim::new(f32::NAN, 1.0, 0), None);
    assert_eq!(Aim::new(1.0, f32::NAN, 0), None);
    let far = Aim::new(f32::INFINITY, -1e30, AIM_PRESSED | AIM_DOUBLE_TAP).expect("clamped");
    assert_eq!((far.x, far.y), (MAX_AIM_COORD, -MAX_AIM_COORD));
    assert!(far.is_valid() && far.pressed() && far.double_tap());
    assert!(!Aim::new(1.0, 2.0, 0).expect("an aim").pressed());
    // Equality is bitwise: the two zeros differ.
    assert_ne!(Aim::new(0.0, 0.0, 0), Aim::new(-0.0, 0.0, 0));
}

#[test]
fn aims_share_the_seq_and_the_latest_wins_until_let_go() {
    let t = table();
    let mut s = KeyState::new();
    let a = Aim::new(10.0, 20.0, 0).expect("an aim");
    let b = Aim::new(-5.0, 3.0, AIM_PRESSED).expect("an aim");
    assert!(s.apply_aim(3, Some(a)));
    assert_eq!(s.apply(&t, &ev(4, KeyAction::Down, "fire")), Ok(true));
    assert_eq!(s.step(), KeyBits { held: 0, fired: 1 << 6, aim: Some(a), view: None });
    assert_eq!(s.step(), KeyBits { held: 0, fired: 0, aim: Some(a), view: None }, "the aim stays");
    assert!(!s.apply_aim(4, Some(b)), "a seq a key used");
    assert!(!s.apply_aim(2, None), "an old seq");
    assert_eq!(s.apply_input(&t, &aim_at(5, -5.0, 3.0, AIM_PRESSED)), Ok(true));
    assert_eq!(s.aim(), Some(b));
    assert_eq!(s.apply(&t, &ev(5, KeyAction::Down, "forward")), Ok(false), "a seq the aim used");
    assert_eq!(s.last_input_seq(), 5);
    assert_eq!(s.apply_input(&t, &WireInput::Aim(AimEvent { seq: 6, aim: None })), Ok(true));
    assert_eq!(s.step().aim, None);
    assert!(s.apply_aim(7, Some(a)));
    s.release_all();
    assert_eq!(s.aim(), None, "a dropped player lets go of the aim too");
    assert_eq!(s.last_input_seq(), 7);
}

// ---- properties ----

fn action() -> impl Strategy<Value = KeyAction> {
    prop_oneof![Just(KeyAction::Down), Just(KeyAction::Up)]
}

fn event() -> impl Strategy<Value = InputEvent> {
    (any::<u32>(), action(), "[A-Za-z0-9_]{1,32}").prop_map(|(seq, action, name)| InputEvent { seq, action, name })
}

/// A valid aim: finite coordinates within the bound, any flags.
fn aim() -> impl Strategy<Value = Aim> {
    let coord = prop_oneof![-MAX_AIM_COORD..=MAX_AIM_COORD, Just(MAX_AIM_COORD), Just(-0.0f32)];
    (coord.clone(), coord, any::<u8>()).prop_map(|(x, y, flags)| Aim { x, y, flags })
}

/// A valid batch of key events and aims.
fn mixed_batch() -> impl Strategy<Value = Vec<WireInput>> {
    let kind = prop_oneof![
        (action(), 0u8..64).prop_map(|(action, bit)| (Some((action, bit)), None, None)),
        proptest::option::of(aim()).prop_map(|aim| (None, aim, None)),
        (any::<u32>(), any::<u8>()).prop_map(|(tick, frac)| (None, None, Some(ViewTime { tick, frac }))),
    ];
    (any::<u32>(), proptest::collection::vec((1u8..=255, kind), 0..=255)).prop_map(|(first, steps)| {
        let mut seq = Some(first);
        let mut out = Vec::new();
        for (delta, kind) in steps {
            let Some(current) = seq else { break };
            out.push(match kind {
                (Some((action, bit)), ..) => WireInput::Key(BinaryKeyEvent { seq: current, action, bit }),
                (None, _, Some(view)) => WireInput::View(ViewEvent { seq: current, view }),
                (None, aim, None) => WireInput::Aim(AimEvent { seq: current, aim }),
            });
            seq = current.checked_add(u32::from(delta));
        }
        out
    })
}

/// A valid batch: strictly increasing seqs with gaps of 1..=255, bits below 64.
fn batch() -> impl Strategy<Value = Vec<(u32, KeyAction, u8)>> {
    (any::<u32>(), proptest::collection::vec((1u8..=255, action(), 0u8..64), 0..=255)).prop_map(|(first, steps)| {
        let mut seq = Some(first);
        let mut out = Vec::new();
        for (delta, action, bit) in steps {
            let Some(current) = seq else { break };
            out.push((current, action, bit));
            seq = current.checked_add(u32::from(delta));
        }
        out
    })
}

proptest! {
    #[test]
    fn text_round_trip(e in event()) {
        prop_assert_eq!(InputEvent::parse(&e.to_string()), Ok(e.clone()));
    }

    #[test]
    fn binary_round_trip(events in batch()) {
        let mut bytes = Vec::new();
        prop_assert_eq!(encode_events(&events, &mut bytes), Ok(()));
        let expected_len = if events.is_empty() { 1 } else { 4 + 2 * events.len() };
        prop_assert_eq!(bytes.len(), expected_len);
        let expected: Vec<WireInput> = events.iter().copied().map(Into::into).collect();
        prop_assert_eq!(decode_inputs(&bytes), Ok(expected));
    }

    #[test]
    fn mixed_batches_round_trip(events in mixed_batch()) {
        let mut bytes = Vec::new();
        prop_assert_eq!(encode_inputs(&events, &mut bytes), Ok(()));
        let aims = events.iter().filter(|e| matches!(e, WireInput::Aim(AimEvent { aim: Some(_), .. }))).count();
        let views = events.iter().filter(|e| matches!(e, WireInput::View(_))).count();
        let expected_len = if events.is_empty() { 1 } else { 4 + 2 * events.len() + 9 * aims + 5 * views };
        prop_assert_eq!(bytes.len(), expected_len);
        prop_assert_eq!(decode_inputs(&bytes), Ok(events));
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        // Whatever decodes re-encodes to the same bytes.
        if let Ok(events) = decode_inputs(&bytes) {
            let mut again = Vec::new();
            prop_assert_eq!(encode_inputs(&events, &mut again), Ok(()));
            prop_assert_eq!(again, bytes);
        }
    }

    #[test]
    fn batches_with_garbage_aims_never_panic(
        first in any::<u32>(),
        events in proptest::collection::vec((1u8..=255, prop_oneof![Just(0x40u8), Just(0x41), Just(0x42), any::<u8>()], any::<[u8; 9]>()), 1..40),
    ) {
        // Aim codes followed by arbitrary bit patterns (NaN, infinities, huge values), and
        // view codes followed by any tick (the first 5 of the 9 bytes).
        let mut bytes = vec![u8::try_from(events.len()).expect("below 40")];
        bytes.extend_from_slice(&first.to_be_bytes());
        for (i, (delta, code, point)) in events.iter().enumerate() {
            if i > 0 {
                bytes.push(*delta);
            }
            bytes.push(*code);
            match *code {
                0x40 => bytes.extend_from_slice(point),
                0x42 => bytes.extend_from_slice(&point[..5]),
                _ => {}
            }
        }
        if let Ok(decoded) = decode_inputs(&bytes) {
            for e in &decoded {
                if let WireInput::Aim(AimEvent { aim: Some(aim), .. }) = e {
                    prop_assert!(aim.is_valid(), "{:?}", aim);
                }
            }
            let mut again = Vec::new();
            prop_assert_eq!(encode_inputs(&decoded, &mut again), Ok(()));
            prop_assert_eq!(again, bytes);
        }
    }

    #[test]
    fn any_aim_is_clamped_or_refused_and_never_panics_the_state(
        x in any::<f32>(), y in any::<f32>(), flags in any::<u8>(), seq in any::<u32>(),
    ) {
        let mut s = KeyState::new();
        match Aim::new(x, y, flags) {
            None => prop_assert!(x.is_nan() || y.is_nan()),
            Some(aim) => {
                prop_assert!(aim.is_valid());
                prop_assert!(s.apply_aim(seq, Some(aim)));
                prop_assert_eq!(s.step().aim, Some(aim));
            }
        }
        // An aim built by hand, whatever it holds, never panics and never gets in unless valid.
        let raw = Aim { x, y, flags };
        let mut t = KeyState::new();
        prop_assert_eq!(t.apply_aim(seq, Some(raw)), raw.is_valid());
    }

    #[test]
    fn near_valid_bytes_never_panic(
        count in any::<u8>(),
        body in proptest::collection::vec(any::<u8>(), 0..520),
    ) {
        let mut bytes = vec![count];
        bytes.extend_from_slice(&body);
        let _ = decode_inputs(&bytes);
    }

    #[test]
    fn random_strings_never_panic(text in any::<String>()) {
        let _ = InputEvent::parse(&text);
        let _ = KeyTable::from_json(&text);
    }

    #[test]
    fn near_valid_strings_never_panic(text in "[0-9a-z:_ +-]{0,48}") {
        // Whatever parses formats back to an equivalent event.
        if let Ok(e) = InputEvent::parse(&text) {
            prop_assert_eq!(InputEvent::parse(&e.to_string()), Ok(e));
        }
    }

    #[test]
    fn retransmitted_events_change_nothing(
        events in proptest::collection::vec(
            (0u32..40, action(), prop_oneof![Just("forward"), Just("fire"), Just("jump")]),
            0..40,
        ),
    ) {
        let t = table();
        let mut once = KeyState::new();
        let mut twice = KeyState::new();
        for (seq, action, name) in &events {
            let e = ev(*seq, *action, name);
            let _ = once.apply(&t, &e);
            let _ = twice.apply(&t, &e);
        }
        for (seq, action, name) in &events {
            let e = ev(*seq, *action, name);
            prop_assert!(!matches!(twice.apply(&t, &e), Ok(true)));
        }
        prop_assert_eq!(once, twice);
    }
}
