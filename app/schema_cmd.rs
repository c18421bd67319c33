//! `vimp schema check`: validates snapshot schema files and shows the wire cost of each key.

use std::path::PathBuf;

use serde_json::json;
use vimp_netcode::schema::{BlockKind, BlockSchema, SnapshotSchema};

/// Bytes one row of `block` takes on the wire: `(without optional tail, with it)`.
pub fn row_bytes(block: &BlockSchema) -> (usize, usize) {
    let head = match block.kind {
        BlockKind::Indexed8 => 2,
        BlockKind::Indexed32 => 5,
        BlockKind::List16 => 0,
        BlockKind::IndexedNoNull8 => 1,
    };
    let flag = usize::from(block.optional_from.is_some());
    let size = |fields: &[vimp_netcode::schema::FieldSchema]| fields.iter().map(|f| f.ty.size()).sum::<usize>();
    (head + flag + size(&block.fields[..block.required_width()]), head + flag + size(&block.fields))
}

/// Checks every file; prints a report per file; returns 0 when all are valid, 1 otherwise.
pub fn check(files: &[PathBuf], as_json: bool) -> anyhow::Result<i32> {
    let mut failed = 0;
    let mut reports = Vec::new();
    for file in files {
        let label = file.display().to_string();
        let result = std::fs::read_to_string(file)
            .map_err(|e| format!("{label}: {e}"))
            .and_then(|text| SnapshotSchema::from_json(&text).map_err(|e| format!("{label}: {e}")));
        match result {
            Err(e) => {
                failed += 1;
                if as_json {
                    reports.push(json!({ "file": label, "ok": false, "error": e }));
                } else {
                    eprintln!("{e}");
                }
            }
            Ok(schema) => {
                let keys: Vec<_> = schema
                    .keys()
                    .map(|(name, b)| {
                        let (min, max) = row_bytes(b);
                        json!({ "key": name, "id": b.id, "kind": b.kind, "class": b.class,
                                "fields": b.fields.len(), "rowBytes": min, "rowBytesWithTail": max })
                    })
                    .collect();
                if as_json {
                    reports.push(json!({ "file": label, "ok": true, "keys": keys }));
                } else {
                    println!("{label}: ok, {} keys", schema.keys().len());
                    for (name, b) in schema.keys() {
                        let (min, max) = row_bytes(b);
                        let tail = if min == max { String::new() } else { format!(" ({max} with tail)") };
                        println!(
                            "  {name:<8} id {:>3}  {:<14} {:<5} {:>2} fields  {min} bytes/row{tail}",
                            b.id,
                            format!("{:?}", b.kind),
                            format!("{:?}", b.class).to_lowercase(),
                            b.fields.len()
                        );
                    }
                }
            }
        }
    }
    if as_json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(i32::from(failed > 0))
}
