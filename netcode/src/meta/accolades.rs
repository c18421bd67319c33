//! The room's players in the global top (port 18): who is verified, and each verified player's
//! place.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::wire::{Part, Payload};
use super::{ACCOLADES_DATA, MetaError};

/// One player's accolades.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accolade {
    /// Its token checked out: it plays under its registered name.
    pub verified: bool,
    /// Its place in the global top (1 the best), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<u64>,
}

/// The room's players' accolades (port 18), by player id (the stat table's row ids, as
/// strings): `{"3":{"verified":true,"place":12},"4":{"verified":false}}`. Each message is the
/// whole room: a player not listed has none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Accolades(pub BTreeMap<String, Accolade>);

impl Accolades {
    const PART: Part = Part { what: "accolades", expected: "an object of player ids to {verified, place?}" };

    /// The accolades of player `id`.
    pub fn of(&self, id: u32) -> Option<Accolade> {
        self.0.get(&id.to_string()).copied()
    }
}

impl Payload<ACCOLADES_DATA> for Accolades {
    fn read(value: Value) -> Result<Self, MetaError> {
        let accolades: Accolades = Self::PART.read(value)?;
        if accolades.0.keys().any(|id| id.parse::<u32>().is_err()) {
            return Err(Self::PART.mismatch());
        }
        Ok(accolades)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::testing::{both_ways, shape_err};

    #[test]
    fn accolades_forms() {
        let mut room = BTreeMap::new();
        room.insert("3".to_owned(), Accolade { verified: true, place: Some(12) });
        room.insert("4".to_owned(), Accolade { verified: false, place: None });
        both_ways(Accolades(room.clone()), r#"{"3":{"verified":true,"place":12},"4":{"verified":false}}"#);
        assert_eq!(Accolades(room).of(3), Some(Accolade { verified: true, place: Some(12) }));
        both_ways(Accolades::default(), "{}");
        for json in ["[]", "null", r#"{"x":{"verified":true}}"#, r#"{"3":{"verified":1}}"#, r#"{"3":{"place":2}}"#] {
            shape_err(ACCOLADES_DATA, json, "accolades");
        }
    }
}
