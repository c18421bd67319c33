//! Packing and unpacking a v5 frame of a busy tanks match: 16 tanks, 40 crates, 10 bombs, 4 tracers.
//!
//! `cargo bench -p vimp-netcode --bench snapshot` prints criterion's timings and, at
//! the end, one summary line: ns per pack, ns per unpack and the frame's bytes.

use std::hint::black_box;

use criterion::Criterion;
use vimp_netcode::prelude::*;

/// The tanks game's schema as the spec's example declares it.
const SCHEMA: &str = r#"{ "keys": {
  "m1": { "id": 1, "kind": "indexed8", "class": "hot", "fields": [
    { "name": "x", "ty": "f32", "interp": "lerp" }, { "name": "y", "ty": "f32", "interp": "lerp" },
    { "name": "angle", "ty": "f32", "interp": "lerpAngle" }, { "name": "gunRotation", "ty": "f32", "interp": "lerpAngle" },
    { "name": "vx", "ty": "f32" }, { "name": "vy", "ty": "f32" }, { "name": "engineLoad", "ty": "f32" },
    { "name": "condition", "ty": "u8" }, { "name": "size", "ty": "u8" }, { "name": "teamId", "ty": "u8" },
    { "name": "angvel", "ty": "f32" } ] },
  "w1": { "id": 2, "kind": "list16", "class": "event", "fields": [
    { "name": "startX", "ty": "f32" }, { "name": "startY", "ty": "f32" }, { "name": "endX", "ty": "f32" },
    { "name": "endY", "ty": "f32" }, { "name": "bodyX", "ty": "f32" }, { "name": "bodyY", "ty": "f32" },
    { "name": "wasHit", "ty": "u8" }, { "name": "shooterId", "ty": "u8" } ] },
  "w2": { "id": 3, "kind": "indexed32", "class": "event", "fields": [
    { "name": "x", "ty": "f32" }, { "name": "y", "ty": "f32" },
    { "name": "angle", "ty": "f32" }, { "name": "size", "ty": "f32" },
    { "name": "time", "ty": "f32" }, { "name": "ownerId", "ty": "u8" } ] },
  "w2e": { "id": 4, "kind": "list16", "class": "event", "fields": [
    { "name": "x", "ty": "f32" }, { "name": "y", "ty": "f32" }, { "name": "radius", "ty": "f32" } ] },
  "c1": { "id": 5, "kind": "indexedNoNull8", "class": "hot", "optionalFrom": 3, "fields": [
    { "name": "x", "ty": "f32", "interp": "lerp" }, { "name": "y", "ty": "f32", "interp": "lerp" },
    { "name": "angle", "ty": "f32", "interp": "lerpAngle" }, { "name": "vx", "ty": "f32" },
    { "name": "vy", "ty": "f32" }, { "name": "angvel", "ty": "f32" } ] } } }"#;

fn f(v: f32) -> FieldValue {
    FieldValue::F32(round2(v))
}

fn busy_frame() -> Frame {
    let tanks = (0..16u8)
        .map(|i| {
            let k = i as f32;
            let row = vec![
                f(100.0 + k * 37.3),
                f(220.0 - k * 11.9),
                f(k * 0.37),
                f(-k * 0.21),
                f(k * 3.1),
                f(-k * 1.7),
                f(0.5),
                FieldValue::U8(100 - i),
                FieldValue::U8(1),
                FieldValue::U8(i % 2),
                f(0.05 * k),
            ];
            (i, Some(row))
        })
        .collect();
    // 40 crates, a quarter of them moving (with the velocity tail).
    let crates = (0..40u8)
        .map(|i| {
            let k = i as f32;
            let moving = i % 4 == 0;
            let v = if moving { 12.5 } else { 0.0 };
            (i, vec![f(k * 24.0), f(300.0 + k), f(k * 0.1), f(v), f(-v), f(v * 0.01)])
        })
        .collect();
    let bombs = (0..10u32)
        .map(|i| {
            let k = i as f32;
            (1000 + i, Some(vec![f(50.0 + k), f(60.0 - k), f(k), f(4.0), f(0.75), FieldValue::U8(i as u8)]))
        })
        .collect();
    let tracers = (0..4u8)
        .map(|i| {
            let k = i as f32;
            vec![
                f(k),
                f(k + 1.0),
                f(k + 300.0),
                f(k + 200.0),
                f(k + 10.0),
                f(k + 11.0),
                FieldValue::U8(1),
                FieldValue::U8(i),
            ]
        })
        .collect();
    Frame {
        seq: 1234,
        server_time_ms: 41_133.333,
        player: Some(PlayerBlock { last_input_seq: 77, state: [1.0; PLAYER_STATE_LEN], centering: false }),
        blocks: vec![
            (1, Block::Indexed8(tanks)),
            (2, Block::List16(tracers)),
            (3, Block::Indexed32(bombs)),
            (4, Block::List16(vec![vec![f(10.0), f(20.0), f(64.0)]])),
            (5, Block::IndexedNoNull8(crates)),
        ],
        streamed_out: Vec::new(),
    }
}

fn main() {
    let schema = SnapshotSchema::from_json(SCHEMA).expect("the bench schema is valid");
    let frame = busy_frame();
    let mut bytes = Vec::new();
    pack(&schema, &frame, &mut bytes).expect("the bench frame packs");

    let mut c = Criterion::default().configure_from_args();
    let mut group = c.benchmark_group("snapshot_v5");
    let mut out = Vec::with_capacity(bytes.len());
    group.bench_function("pack", |b| {
        b.iter(|| {
            out.clear();
            pack(&schema, black_box(&frame), &mut out).expect("pack");
            black_box(out.len())
        })
    });
    group.bench_function("unpack", |b| b.iter(|| unpack(&schema, black_box(&bytes)).expect("unpack")));
    group.finish();
    c.final_summary();

    // One line of figures, timed here over many iterations (criterion's estimates are above).
    let per = |f: &mut dyn FnMut()| {
        let n = 20_000u32;
        let t = std::time::Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed().as_nanos() as f64 / n as f64
    };
    let pack_ns = per(&mut || {
        out.clear();
        pack(&schema, black_box(&frame), &mut out).expect("pack");
    });
    let unpack_ns = per(&mut || {
        black_box(unpack(&schema, black_box(&bytes)).expect("unpack"));
    });
    println!(
        "snapshot_v5 16 tanks + 40 crates + 10 bombs + 4 tracers: pack {pack_ns:.0} ns, unpack {unpack_ns:.0} ns, frame {} bytes",
        bytes.len()
    );
}
