//! The binary (bincode) serde forms of `MapConfig` and `GameMap`: bit-exact numbers, game JSON as flat tokens.
//!
//! [`MapConfig`]'s file form holds opaque [`Value`]s: bincode (the container's codec) cannot
//! read those back (it has no `deserialize_any`), and printing floats to text and
//! parsing them again is only best-effort exact in serde_json. Its binary form is
//! therefore [`ConfigBinary`]: plain fields (f32s travel as their bits) and each `game`
//! value as a flat list of [`Token`]s — no recursion on the way in, a depth limit on the
//! way out. A `GameMap` dumps as its config, its scale and its body handles
//! ([`GameMapBinary`]); everything else is derived again on the way back.
//!
//! A layered map's own fields (levels, ramps, `levelHeight`, the boxes' levels) travel
//! behind the map's `game` value, announced by the byte that says whether `game` is there
//! ([`GameTail`]): bit 0 `game` follows, bit 1 the layered fields follow. A flat map writes
//! 0 or 1 there, byte for byte what `Option`'s tag is, so its dump is the one it always was.

use indexmap::IndexMap;
use rapier2d::prelude::RigidBodyHandle;
use serde::de::{self, SeqAccess, Visitor};
use serde::ser::SerializeTuple;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Number, Value};

use super::config::{DynamicObjectConfig, LevelConfig, MapConfig, RampConfig, RampDir};

/// Deepest nesting of a `game` value a dump may hold (serde_json's own parse limit).
const MAX_DEPTH: usize = 128;

/// Everything a `GameMap` needs to come back: its config, its scale and its body handles.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct GameMapBinary {
    pub(super) config: MapConfig,
    pub(super) scale: f32,
    pub(super) static_bodies: Vec<RigidBodyHandle>,
    pub(super) dynamic_bodies: Vec<RigidBodyHandle>,
}

/// [`MapConfig`] with `game` values as tokens (the layered fields are never set on a valid map).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ConfigBinary {
    name: String,
    set_id: String,
    tile_size: f32,
    map: Vec<Vec<u16>>,
    physics_static: Vec<u16>,
    physics_dynamic: Vec<DynamicDump>,
    respawns: IndexMap<String, Vec<Vec<f32>>>,
    layers: IndexMap<String, Vec<u16>>,
    volumes: IndexMap<String, f32>,
    game: GameTail,
}

/// The map's `game` value and, for a layered map, its layered fields (see the module docs).
#[derive(Debug, Default)]
pub(super) struct GameTail {
    game: Option<Vec<Token>>,
    layered: Option<LayeredDump>,
}

/// A layered map's own fields.
#[derive(Debug, Serialize, Deserialize)]
struct LayeredDump {
    levels: Vec<(String, LevelDump)>,
    /// `(tile, dir, from, to)`, `dir` 0 to 3 for north, south, west, east.
    ramps: Vec<(u16, u8, u8, u8)>,
    level_height: Option<f32>,
    /// Each box's `level`, by index.
    object_levels: Vec<Option<u8>>,
}

#[derive(Debug, Serialize, Deserialize)]
struct LevelDump {
    map: Vec<Vec<u16>>,
    floor: Vec<u16>,
    walls: Vec<u16>,
    layers: IndexMap<String, Vec<u16>>,
    volumes: IndexMap<String, f32>,
}

const DIRS: [RampDir; 4] = [RampDir::North, RampDir::South, RampDir::West, RampDir::East];

impl Serialize for GameTail {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let tag = u8::from(self.game.is_some()) | u8::from(self.layered.is_some()) << 1;
        let mut t = serializer.serialize_tuple(3)?;
        t.serialize_element(&tag)?;
        if let Some(game) = &self.game {
            t.serialize_element(game)?;
        }
        if let Some(layered) = &self.layered {
            t.serialize_element(layered)?;
        }
        t.end()
    }
}

impl<'de> Deserialize<'de> for GameTail {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TailVisitor;
        impl<'de> Visitor<'de> for TailVisitor {
            type Value = GameTail;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map's game value and layered fields")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<GameTail, A::Error> {
                let tag: u8 = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
                if tag > 3 {
                    return Err(de::Error::custom(format!("a map's game tag is 0 to 3, got {tag}")));
                }
                let game = if tag & 1 != 0 {
                    Some(seq.next_element()?.ok_or_else(|| de::Error::invalid_length(1, &self))?)
                } else {
                    None
                };
                let layered = if tag & 2 != 0 {
                    Some(seq.next_element()?.ok_or_else(|| de::Error::invalid_length(2, &self))?)
                } else {
                    None
                };
                Ok(GameTail { game, layered })
            }
        }
        deserializer.deserialize_tuple(3, TailVisitor)
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct DynamicDump {
    x: f32,
    y: f32,
    width: f32,
    height: f32,
    angle: f32,
    game: Option<Vec<Token>>,
}

/// One step of a JSON value written depth-first: containers give their length and are
/// followed by their items (an object's items are `Str` key, value, key, value…).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
enum Token {
    Null,
    Bool(bool),
    U64(u64),
    I64(i64),
    F64(f64),
    Str(String),
    Array(u64),
    Object(u64),
}

impl ConfigBinary {
    pub(super) fn of(cfg: &MapConfig) -> ConfigBinary {
        ConfigBinary {
            name: cfg.name.clone(),
            set_id: cfg.set_id.clone(),
            tile_size: cfg.tile_size,
            map: cfg.map.clone(),
            physics_static: cfg.physics_static.clone(),
            physics_dynamic: cfg
                .physics_dynamic
                .iter()
                .map(|o| DynamicDump {
                    x: o.x,
                    y: o.y,
                    width: o.width,
                    height: o.height,
                    angle: o.angle,
                    game: o.game.as_ref().map(tokens_of),
                })
                .collect(),
            respawns: cfg.respawns.clone(),
            layers: cfg.layers.clone(),
            volumes: cfg.volumes.clone(),
            game: GameTail { game: cfg.game.as_ref().map(tokens_of), layered: LayeredDump::of(cfg) },
        }
    }

    /// The config back; an error names what does not decode.
    pub(super) fn into_config(self) -> Result<MapConfig, String> {
        let mut physics_dynamic = Vec::with_capacity(self.physics_dynamic.len());
        let layered = self.game.layered;
        let object_levels = layered.as_ref().map(|l| l.object_levels.as_slice()).unwrap_or_default();
        for (i, o) in self.physics_dynamic.into_iter().enumerate() {
            let game =
                o.game.map(|t| value_of(&t)).transpose().map_err(|e| format!("physicsDynamic[{i}].game: {e}"))?;
            let (x, y, width, height, angle) = (o.x, o.y, o.width, o.height, o.angle);
            let level = object_levels.get(i).copied().flatten();
            physics_dynamic.push(DynamicObjectConfig { x, y, width, height, angle, game, level });
        }
        let (levels, ramps, level_height) = match layered {
            Some(l) => {
                let mut ramps = Vec::with_capacity(l.ramps.len());
                for (i, (tile, dir, from, to)) in l.ramps.into_iter().enumerate() {
                    let dir =
                        *DIRS.get(usize::from(dir)).ok_or_else(|| format!("ramps[{i}].dir: {dir} is not 0 to 3"))?;
                    ramps.push(RampConfig { tile, dir, from, to });
                }
                let levels = l
                    .levels
                    .into_iter()
                    .map(|(name, d)| {
                        let level = LevelConfig {
                            map: d.map,
                            floor: d.floor,
                            walls: d.walls,
                            layers: d.layers,
                            volumes: d.volumes,
                        };
                        (name, level)
                    })
                    .collect();
                (levels, ramps, l.level_height)
            }
            None => (IndexMap::new(), Vec::new(), None),
        };
        Ok(MapConfig {
            name: self.name,
            set_id: self.set_id,
            tile_size: self.tile_size,
            map: self.map,
            physics_static: self.physics_static,
            physics_dynamic,
            respawns: self.respawns,
            layers: self.layers,
            volumes: self.volumes,
            game: self.game.game.map(|t| value_of(&t)).transpose().map_err(|e| format!("game: {e}"))?,
            levels,
            ramps,
            level_height,
        })
    }
}

impl LayeredDump {
    /// The layered fields of `cfg`; `None` for a map that has none of them (a flat map).
    fn of(cfg: &MapConfig) -> Option<LayeredDump> {
        let object_levels: Vec<Option<u8>> = cfg.physics_dynamic.iter().map(|o| o.level).collect();
        let flat = !cfg.is_layered() && cfg.level_height.is_none() && object_levels.iter().all(Option::is_none);
        if flat {
            return None;
        }
        let dir = |d: RampDir| DIRS.iter().position(|&x| x == d).unwrap_or_default() as u8;
        Some(LayeredDump {
            levels: cfg
                .levels
                .iter()
                .map(|(name, l)| {
                    let dump = LevelDump {
                        map: l.map.clone(),
                        floor: l.floor.clone(),
                        walls: l.walls.clone(),
                        layers: l.layers.clone(),
                        volumes: l.volumes.clone(),
                    };
                    (name.clone(), dump)
                })
                .collect(),
            ramps: cfg.ramps.iter().map(|r| (r.tile, dir(r.dir), r.from, r.to)).collect(),
            level_height: cfg.level_height,
            object_levels,
        })
    }
}

fn tokens_of(value: &Value) -> Vec<Token> {
    let mut out = Vec::new();
    push_tokens(value, &mut out);
    out
}

fn push_tokens(value: &Value, out: &mut Vec<Token>) {
    match value {
        Value::Null => out.push(Token::Null),
        Value::Bool(b) => out.push(Token::Bool(*b)),
        Value::Number(n) => out.push(match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Token::U64(u),
            (None, Some(i), _) => Token::I64(i),
            (None, None, Some(f)) => Token::F64(f),
            (None, None, None) => Token::Null,
        }),
        Value::String(s) => out.push(Token::Str(s.clone())),
        Value::Array(items) => {
            out.push(Token::Array(items.len() as u64));
            for item in items {
                push_tokens(item, out);
            }
        }
        Value::Object(map) => {
            out.push(Token::Object(map.len() as u64));
            for (key, item) in map {
                out.push(Token::Str(key.clone()));
                push_tokens(item, out);
            }
        }
    }
}

/// Rebuilds a value from its tokens; rejects truncated or trailing tokens, non-finite
/// floats and nesting deeper than [`MAX_DEPTH`].
fn value_of(tokens: &[Token]) -> Result<Value, String> {
    let mut at = 0;
    let value = read_value(tokens, &mut at, 0)?;
    if at != tokens.len() {
        return Err(format!("{} tokens after the value", tokens.len() - at));
    }
    Ok(value)
}

fn read_value(tokens: &[Token], at: &mut usize, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("nested deeper than {MAX_DEPTH}"));
    }
    let token = tokens.get(*at).ok_or("the value ends early")?;
    *at += 1;
    Ok(match token {
        Token::Null => Value::Null,
        Token::Bool(b) => Value::Bool(*b),
        Token::U64(u) => Value::from(*u),
        Token::I64(i) => Value::from(*i),
        Token::F64(f) => Value::Number(Number::from_f64(*f).ok_or("a number is not finite")?),
        Token::Str(s) => Value::String(s.clone()),
        Token::Array(len) => {
            let mut items = Vec::new();
            for _ in 0..*len {
                items.push(read_value(tokens, at, depth + 1)?);
            }
            Value::Array(items)
        }
        Token::Object(len) => {
            let mut map = Map::new();
            for _ in 0..*len {
                let Some(Token::Str(key)) = tokens.get(*at) else {
                    return Err("an object key is missing".into());
                };
                *at += 1;
                map.insert(key.clone(), read_value(tokens, at, depth + 1)?);
            }
            Value::Object(map)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_round_trip_through_tokens_exactly() {
        let v = json!({ "z": 1, "a": [true, null, -3, 0.1, 1e-300, 18446744073709551615u64, "s"], "m": { "k": {} } });
        let tokens = tokens_of(&v);
        assert_eq!(value_of(&tokens).unwrap(), v);
        let back = value_of(&tokens).unwrap();
        assert_eq!(back.as_object().unwrap().keys().collect::<Vec<_>>(), ["z", "a", "m"], "key order is kept");
        assert_eq!(back["a"][3].as_f64().unwrap().to_bits(), 0.1f64.to_bits());
    }

    #[test]
    fn tokens_are_laid_out_depth_first() {
        let tokens = tokens_of(&json!({ "a": [1, -2], "b": 0.5 }));
        assert_eq!(
            tokens,
            vec![
                Token::Object(2),
                Token::Str("a".into()),
                Token::Array(2),
                Token::U64(1),
                Token::I64(-2),
                Token::Str("b".into()),
                Token::F64(0.5),
            ]
        );
    }

    #[test]
    fn bad_token_lists_are_errors_not_panics() {
        assert_eq!(value_of(&[]), Err("the value ends early".into()));
        assert_eq!(value_of(&[Token::Array(3), Token::Null]), Err("the value ends early".into()));
        assert_eq!(value_of(&[Token::Null, Token::Null]), Err("1 tokens after the value".into()));
        assert_eq!(value_of(&[Token::Object(1), Token::Null, Token::Null]), Err("an object key is missing".into()));
        assert_eq!(value_of(&[Token::F64(f64::NAN)]), Err("a number is not finite".into()));
        assert_eq!(value_of(&[Token::Array(u64::MAX)]), Err("the value ends early".into()));
        let deep = vec![Token::Array(1); MAX_DEPTH + 2];
        assert_eq!(value_of(&deep), Err(format!("nested deeper than {MAX_DEPTH}")));
    }
}
