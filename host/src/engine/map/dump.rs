//! The binary (bincode) serde forms of `MapConfig` and `GameMap`: bit-exact numbers, game JSON as flat tokens.
//!
//! [`MapConfig`]'s file form holds opaque [`Value`]s: bincode (our dump codec) cannot
//! read those back (it has no `deserialize_any`), and printing floats to text and
//! parsing them again is only best-effort exact in serde_json. Its binary form is
//! therefore [`ConfigDump`]: plain fields (f32s travel as their bits) and each `game`
//! value as a flat list of [`Token`]s — no recursion on the way in, a depth limit on the
//! way out. A `GameMap` dumps as its config, its scale and its body handles
//! ([`GameMapDump`]); everything else is derived again on the way back.

use indexmap::IndexMap;
use rapier2d::prelude::RigidBodyHandle;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::config::{DynamicObjectConfig, MapConfig};

/// Deepest nesting of a `game` value a dump may hold (serde_json's own parse limit).
const MAX_DEPTH: usize = 128;

/// Everything a `GameMap` needs to come back: its config, its scale and its body handles.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct GameMapDump {
    pub(super) config: MapConfig,
    pub(super) scale: f32,
    pub(super) static_bodies: Vec<RigidBodyHandle>,
    pub(super) dynamic_bodies: Vec<RigidBodyHandle>,
}

/// [`MapConfig`] with `game` values as tokens (the layered fields are never set on a valid map).
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ConfigDump {
    name: String,
    set_id: String,
    tile_size: f32,
    map: Vec<Vec<u16>>,
    physics_static: Vec<u16>,
    physics_dynamic: Vec<DynamicDump>,
    respawns: IndexMap<String, Vec<Vec<f32>>>,
    layers: IndexMap<String, Vec<u16>>,
    volumes: IndexMap<String, f32>,
    game: Option<Vec<Token>>,
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

impl ConfigDump {
    pub(super) fn of(cfg: &MapConfig) -> ConfigDump {
        ConfigDump {
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
            game: cfg.game.as_ref().map(tokens_of),
        }
    }

    /// The config back; an error names what does not decode.
    pub(super) fn into_config(self) -> Result<MapConfig, String> {
        let mut physics_dynamic = Vec::with_capacity(self.physics_dynamic.len());
        for (i, o) in self.physics_dynamic.into_iter().enumerate() {
            let game =
                o.game.map(|t| value_of(&t)).transpose().map_err(|e| format!("physicsDynamic[{i}].game: {e}"))?;
            let (x, y, width, height, angle) = (o.x, o.y, o.width, o.height, o.angle);
            physics_dynamic.push(DynamicObjectConfig { x, y, width, height, angle, game, level: None });
        }
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
            game: self.game.map(|t| value_of(&t)).transpose().map_err(|e| format!("game: {e}"))?,
            levels: None,
            ramps: None,
            level_height: None,
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
