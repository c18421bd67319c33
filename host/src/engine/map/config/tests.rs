//! Tests of the map's JSON form: parsing and every validation rule.

use super::*;

/// A valid 6×5 map, tile 10: walls (tile 1) all round, one box, two teams.
const GOOD: &str = r#"{
        "name": "good",
        "tileSize": 10,
        "map": [
            [1, 1, 1, 1, 1, 1],
            [1, 0, 0, 0, 0, 1],
            [1, 0, 0, 0, 0, 1],
            [1, 0, 0, 0, 0, 1],
            [1, 1, 1, 1, 1, 1]
        ],
        "physicsStatic": [1],
        "physicsDynamic": [{ "x": 20, "y": 20, "width": 8, "height": 8, "game": { "hp": 3 } }],
        "respawns": { "1": [[15, 35, 0]], "2": [[45, 35, 180]] },
        "layers": { "floor": [0], "walls": [1] }
    }"#;

fn good() -> Value {
    serde_json::from_str(GOOD).unwrap()
}

/// Validates `good()` after `edit` and returns the (field, rule) pairs.
fn issues_after(edit: impl FnOnce(&mut Value)) -> Vec<(String, MapRule)> {
    let mut v = good();
    edit(&mut v);
    match MapConfig::from_json("t.json", &v.to_string()) {
        Ok(_) => Vec::new(),
        Err(MapError::Invalid { issues, .. }) => issues.into_iter().map(|i| (i.field, i.rule)).collect(),
        Err(other) => panic!("expected rule issues, got {other}"),
    }
}

fn one(field: &str, rule: MapRule) -> Vec<(String, MapRule)> {
    vec![(field.to_owned(), rule)]
}

#[test]
fn the_good_map_parses_with_defaults() {
    let cfg = MapConfig::from_json("t.json", GOOD).unwrap();
    assert_eq!(cfg.name, "good");
    assert_eq!(cfg.set_id, "c1", "setId defaults to c1");
    assert_eq!(cfg.tile_size, 10.0);
    assert_eq!(cfg.map.len(), 5);
    assert_eq!(cfg.physics_dynamic[0].angle, 0.0, "angle defaults to 0");
    assert_eq!(cfg.physics_dynamic[0].game, Some(serde_json::json!({ "hp": 3 })));
    assert_eq!(cfg.respawns.keys().collect::<Vec<_>>(), ["1", "2"]);
    assert_eq!(cfg.respawns["2"], vec![vec![45.0, 35.0, 180.0]]);
    assert_eq!(cfg.game, None);
}

#[test]
fn to_json_reads_back_equal() {
    let cfg = MapConfig::from_json("t.json", GOOD).unwrap();
    assert_eq!(MapConfig::from_json("again", &cfg.to_json_pretty()).unwrap(), cfg);
}

#[test]
fn bincode_gets_an_exact_binary_form() {
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Holder {
        config: Option<MapConfig>,
        after: u32,
    }
    let mut cfg = MapConfig::from_json("t.json", GOOD).unwrap();
    cfg.game = Some(serde_json::json!({ "ratio": 0.1, "list": [1, -2, "x", null] }));
    cfg.volumes.insert("walls".into(), 0.6);
    cfg.physics_dynamic[0].x = 20.000_002;
    let holder = Holder { config: Some(cfg), after: 7 };
    let standard = bincode::config::standard();
    let bytes = bincode::serde::encode_to_vec(&holder, standard).unwrap();
    let (back, used): (Holder, usize) = bincode::serde::decode_from_slice(&bytes, standard).unwrap();
    assert_eq!((back, used), (holder, bytes.len()));
    // The JSON form is the file format, not the dump form.
    let text = serde_json::to_string(&MapConfig::from_json("t.json", GOOD).unwrap()).unwrap();
    assert!(text.starts_with(r#"{"name":"good","setId":"c1","tileSize":10.0,"map":[[1,1,1,1,1,1],"#), "{text}");
}

#[test]
fn syntax_errors_give_line_and_column() {
    let err = MapConfig::from_json("bad.json", "{\n  \"name\": \"x\",\n  \"tileSize\": 10 10\n}").unwrap_err();
    match &err {
        MapError::Json { file, line, column, message } => {
            assert_eq!((file.as_str(), *line, *column), ("bad.json", 3, 18));
            assert_eq!(message, "expected `,` or `}`");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(err.to_string(), "bad.json:3:18: expected `,` or `}`");
}

#[test]
fn wrong_types_and_unknown_fields_are_json_errors() {
    let err = MapConfig::from_json("t", r#"{ "name": "x", "tileSize": "big" }"#).unwrap_err();
    assert!(matches!(&err, MapError::Json { line: 1, .. }), "{err:?}");
    let mut v = good();
    v["colour"] = Value::from(3);
    let err = MapConfig::from_json("t", &v.to_string()).unwrap_err();
    assert!(err.to_string().contains("unknown field `colour`"), "{err}");
    let mut v = good();
    v["physicsDynamic"][0]["mass"] = Value::from(3);
    let err = MapConfig::from_json("t", &v.to_string()).unwrap_err();
    assert!(err.to_string().contains("unknown field `mass`"), "{err}");
    let err = MapConfig::from_json("t", r#"{ "name": "x", "tileSize": 1, "map": [[70000]] }"#).unwrap_err();
    assert!(err.to_string().contains("70000"), "tile ids are u16: {err}");
}

#[test]
fn name_and_set_id() {
    assert_eq!(issues_after(|v| v["name"] = " ".into()), one("name", MapRule::Empty));
    assert_eq!(issues_after(|v| v["setId"] = "c 1".into()), one("setId", MapRule::BadSetId));
    assert_eq!(issues_after(|v| v["setId"] = "".into()), one("setId", MapRule::BadSetId));
    assert_eq!(issues_after(|v| v["setId"] = "x".repeat(33).into()), one("setId", MapRule::BadSetId));
    assert_eq!(issues_after(|v| v["setId"] = "crates_2".into()), vec![]);
}

#[test]
fn tile_size_must_be_finite_and_positive() {
    assert_eq!(issues_after(|v| v["tileSize"] = 0.into()), one("tileSize", MapRule::NotPositive(0.0)));
    assert_eq!(issues_after(|v| v["tileSize"] = (-3).into()), one("tileSize", MapRule::NotPositive(-3.0)));
    // 1e39 is a valid JSON number but overflows an f32.
    assert_eq!(issues_after(|v| v["tileSize"] = 1e39.into()), one("tileSize", MapRule::NotFinite(f32::INFINITY)));
}

#[test]
fn grid_must_be_a_non_empty_rectangle() {
    assert_eq!(issues_after(|v| v["map"] = serde_json::json!([])), one("map", MapRule::EmptyGrid));
    assert_eq!(
        issues_after(|v| v["map"][2] = serde_json::json!([1, 0, 0, 1])),
        one("map[2]", MapRule::RaggedRow { len: 4, expected: 6 })
    );
    assert_eq!(issues_after(|v| v["map"][3] = serde_json::json!([])), one("map[3]", MapRule::EmptyRow));
    let wide = serde_json::json!([vec![0; MAX_GRID_SIDE + 1]]);
    assert_eq!(
        issues_after(|v| {
            v["map"] = wide;
            v["respawns"] = serde_json::json!({ "1": [[1, 1, 0]] });
            v["physicsDynamic"] = serde_json::json!([]);
        }),
        one("map", MapRule::GridTooLarge { cols: MAX_GRID_SIDE + 1, rows: 1 })
    );
}

#[test]
fn dynamic_numbers_must_be_finite_and_sizes_positive() {
    assert_eq!(
        issues_after(|v| v["physicsDynamic"][0]["width"] = 0.into()),
        one("physicsDynamic[0].width", MapRule::NotPositive(0.0))
    );
    assert_eq!(
        issues_after(|v| v["physicsDynamic"][0]["height"] = (-8).into()),
        one("physicsDynamic[0].height", MapRule::NotPositive(-8.0))
    );
    assert_eq!(
        issues_after(|v| v["physicsDynamic"][0]["x"] = 1e40.into()),
        one("physicsDynamic[0].x", MapRule::NotFinite(f32::INFINITY))
    );
    assert_eq!(
        issues_after(|v| v["physicsDynamic"][0]["angle"] = (-1e40).into()),
        one("physicsDynamic[0].angle", MapRule::NotFinite(f32::NEG_INFINITY))
    );
}

#[test]
fn dynamic_objects_stay_inside_the_map() {
    // The map is 60×50; a box at x 55 with width 8 reaches x 63.
    assert_eq!(
        issues_after(|v| {
            v["map"] = serde_json::json!(vec![vec![0; 6]; 5]);
            v["physicsDynamic"][0]["x"] = 55.into();
        }),
        one(
            "physicsDynamic[0]",
            MapRule::ObjectOutsideMap { min_x: 55.0, min_y: 20.0, max_x: 63.0, max_y: 28.0, width: 60.0, height: 50.0 }
        )
    );
    // Turned 180° about its corner at (20, 20), the 8×8 box covers [12, 20]², still inside.
    assert_eq!(issues_after(|v| v["physicsDynamic"][0]["angle"] = 180.into()), vec![]);
}

#[test]
fn dynamic_objects_must_not_overlap_walls() {
    // At x 5 the box spans x 5..13 and overlaps the wall tile (0, 2).
    assert_eq!(
        issues_after(|v| v["physicsDynamic"][0]["x"] = 5.into()),
        one("physicsDynamic[0]", MapRule::ObjectInWall { col: 0, row: 2 })
    );
    // Touching a wall is fine: x 10..18 against the wall ending at x 10.
    assert_eq!(issues_after(|v| v["physicsDynamic"][0]["x"] = 10.into()), vec![]);
    // Turned 45° about (12, 12): the corners are (12,12), (17.66,17.66), (12,23.31), (6.34,17.66):
    // the left corner enters wall column 0 at row 1.
    assert_eq!(
        issues_after(|v| {
            v["physicsDynamic"][0]["x"] = 12.into();
            v["physicsDynamic"][0]["y"] = 12.into();
            v["physicsDynamic"][0]["angle"] = 45.into();
        }),
        one("physicsDynamic[0]", MapRule::ObjectInWall { col: 0, row: 1 })
    );
    // At (16, 12) its left corner is at x 10.34: clear of the wall column.
    assert_eq!(
        issues_after(|v| {
            v["physicsDynamic"][0]["x"] = 16.into();
            v["physicsDynamic"][0]["y"] = 12.into();
            v["physicsDynamic"][0]["angle"] = 45.into();
        }),
        vec![]
    );
}

#[test]
fn a_turned_crate_near_a_wall_corner_is_judged_by_its_shape_not_its_box() {
    // Wall tile (1, 1) on an open 4×4 grid of tile 10 covers [10, 20]². A 10×10 box turned
    // 45° about its corner (24, 19) has the vertices (24, 19), (31.07, 26.07), (24, 33.14) and
    // (16.93, 26.07): its bounding box overlaps the tile (x 16.93..20, y 19..20) but the box
    // does not (its upper-left edge crosses y = 20 at x = 23).
    let map = serde_json::json!([[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]);
    let edit = |v: &mut Value, y: i32| {
        v["map"] = map.clone();
        v["respawns"] = serde_json::json!({ "1": [[5, 5, 0]] });
        v["layers"] = serde_json::json!({});
        v["physicsDynamic"] = serde_json::json!([{ "x": 24, "y": y, "width": 10, "height": 10, "angle": 45 }]);
    };
    assert_eq!(issues_after(|v| edit(v, 19)), vec![]);
    // At (18, 15) the top vertex sits inside the tile.
    assert_eq!(
        issues_after(|v| {
            edit(v, 15);
            v["physicsDynamic"][0]["x"] = 18.into();
        }),
        one("physicsDynamic[0]", MapRule::ObjectInWall { col: 1, row: 1 })
    );
}

#[test]
fn dynamic_objects_must_not_overlap_each_other() {
    assert_eq!(
        issues_after(|v| {
            v["physicsDynamic"] = serde_json::json!([
                { "x": 12, "y": 12, "width": 8, "height": 8 },
                { "x": 20, "y": 12, "width": 8, "height": 8 },
                { "x": 30, "y": 12, "width": 8, "height": 8 },
                { "x": 27, "y": 19, "width": 8, "height": 8 }
            ]);
        }),
        one("physicsDynamic[3]", MapRule::ObjectsOverlap(1)),
        "0 and 1 touch, 2 is clear, 3 overlaps 1 (and 2)"
    );
}

#[test]
fn too_many_objects() {
    let many: Vec<Value> =
        (0..=MAX_DYNAMIC_OBJECTS).map(|_| serde_json::json!({ "x": 1e40, "y": 0, "width": 1, "height": 1 })).collect();
    let got = issues_after(|v| v["physicsDynamic"] = many.into());
    assert_eq!(got[0], ("physicsDynamic".to_owned(), MapRule::TooManyObjects(MAX_DYNAMIC_OBJECTS + 1)));
}

#[test]
fn game_data_must_be_an_object() {
    assert_eq!(issues_after(|v| v["game"] = serde_json::json!([1, 2])), one("game", MapRule::NotAnObject));
    assert_eq!(
        issues_after(|v| v["physicsDynamic"][0]["game"] = 5.into()),
        one("physicsDynamic[0].game", MapRule::NotAnObject)
    );
    assert_eq!(issues_after(|v| v["game"] = serde_json::json!({ "mode": "ctf" })), vec![]);
    assert_eq!(issues_after(|v| v["game"] = Value::Null), vec![], "null is the same as absent");
}

#[test]
fn respawns_need_a_team_and_points() {
    assert_eq!(issues_after(|v| v["respawns"] = serde_json::json!({})), one("respawns", MapRule::NoTeams));
    assert_eq!(
        issues_after(|v| {
            v.as_object_mut().unwrap().remove("respawns");
        }),
        one("respawns", MapRule::NoTeams)
    );
    assert_eq!(issues_after(|v| v["respawns"]["2"] = serde_json::json!([])), one("respawns.2", MapRule::NoPoints));
    assert_eq!(
        issues_after(|v| v["respawns"][""] = serde_json::json!([[15, 15, 0]])),
        one(r#"respawns[""]"#, MapRule::Empty)
    );
}

#[test]
fn respawn_points_are_three_finite_numbers() {
    assert_eq!(
        issues_after(|v| v["respawns"]["2"][0] = serde_json::json!([45, 35])),
        one("respawns.2[0]", MapRule::BadPoint(2))
    );
    assert_eq!(
        issues_after(|v| v["respawns"]["2"][0] = serde_json::json!([45, 35, 0, 1, 2])),
        one("respawns.2[0]", MapRule::BadPoint(5))
    );
    assert_eq!(
        issues_after(|v| v["respawns"]["2"][0][2] = 1e39.into()),
        one("respawns.2[0][2]", MapRule::NotFinite(f32::INFINITY))
    );
}

#[test]
fn respawn_points_stand_inside_the_map_on_free_ground() {
    assert_eq!(
        issues_after(|v| v["respawns"]["team one"] = serde_json::json!([[60, 10, 0]])),
        one(r#"respawns["team one"][0]"#, MapRule::PointOutsideMap { x: 60.0, y: 10.0, width: 60.0, height: 50.0 }),
        "x = width is outside: tiles are half-open"
    );
    assert_eq!(
        issues_after(|v| v["respawns"]["1"][0] = serde_json::json!([-0.5, 10, 0])),
        one("respawns.1[0]", MapRule::PointOutsideMap { x: -0.5, y: 10.0, width: 60.0, height: 50.0 })
    );
    assert_eq!(
        issues_after(|v| v["respawns"]["2"] = serde_json::json!([[45, 35, 0], [5, 25, 0]])),
        one("respawns.2[1]", MapRule::PointInWall { col: 0, row: 2 })
    );
    assert_eq!(
        issues_after(|v| v["respawns"]["2"][0] = serde_json::json!([24, 24, 0])),
        one("respawns.2[0]", MapRule::PointInObject(0))
    );
}

#[test]
fn layers_must_draw_every_used_tile_and_volumes_name_layers() {
    assert_eq!(
        issues_after(|v| v["layers"] = serde_json::json!({ "walls": [1] })),
        one("map[1][1]", MapRule::UndrawnTile(0)),
        "reported once, at the first use"
    );
    // Ids a layer draws that the map never uses are harmless (a shared tile set).
    assert_eq!(issues_after(|v| v["layers"]["decals"] = serde_json::json!([7, 8])), vec![]);
    // No layers at all: nothing is checked (a headless test map).
    assert_eq!(issues_after(|v| v["layers"] = serde_json::json!({})), vec![]);
    assert_eq!(issues_after(|v| v["layers"][" "] = serde_json::json!([])), one(r#"layers[" "]"#, MapRule::Empty));
    assert_eq!(issues_after(|v| v["volumes"] = serde_json::json!({ "walls": 0.6 })), vec![]);
    assert_eq!(
        issues_after(|v| v["volumes"] = serde_json::json!({ "wals": 0.6, "walls": -1 })),
        vec![("volumes.wals".to_owned(), MapRule::UnknownLayer), ("volumes.walls".to_owned(), MapRule::Negative(-1.0)),]
    );
}

#[test]
fn every_problem_is_reported_not_just_the_first() {
    let got = issues_after(|v| {
        v["name"] = "".into();
        v["physicsDynamic"][0]["width"] = (-1).into();
        v["respawns"]["1"][0] = serde_json::json!([5, 5, 0]);
        v["respawns"]["2"][0][0] = 99.into();
    });
    assert_eq!(
        got,
        vec![
            ("name".to_owned(), MapRule::Empty),
            ("physicsDynamic[0].width".to_owned(), MapRule::NotPositive(-1.0)),
            ("respawns.1[0]".to_owned(), MapRule::PointInWall { col: 0, row: 0 }),
            ("respawns.2[0]".to_owned(), MapRule::PointOutsideMap { x: 99.0, y: 35.0, width: 60.0, height: 50.0 }),
        ]
    );
}

#[test]
fn a_broken_grid_skips_the_geometric_rules_instead_of_cascading() {
    let got = issues_after(|v| {
        v["tileSize"] = 0.into();
        v["respawns"]["1"][0] = serde_json::json!([5, 5, 0]);
    });
    assert_eq!(got, one("tileSize", MapRule::NotPositive(0.0)));
}

#[test]
fn error_display_names_file_field_and_reason() {
    let mut v = good();
    v["physicsDynamic"][0]["width"] = (-4).into();
    let err = MapConfig::from_json("maps/x.json", &v.to_string()).unwrap_err();
    assert_eq!(err.to_string(), "maps/x.json:physicsDynamic[0].width: must be greater than 0, got -4");
}
