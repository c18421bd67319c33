//! The active key set (port 17): whether a user's keys are a player's or a spectator's.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::wire::{Part, Payload};
use super::{KEYSET_DATA, MetaError};

/// The active key set (port 17): `0` spectator, `1` player.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub enum Keyset {
    /// `0`: the spectator's keys.
    Spectator,
    /// `1`: the player's keys.
    Player,
}

impl Keyset {
    const PART: Part = Part { what: "keyset", expected: "0 or 1" };
}

impl TryFrom<u8> for Keyset {
    type Error = MetaError;

    fn try_from(n: u8) -> Result<Self, MetaError> {
        match n {
            0 => Ok(Self::Spectator),
            1 => Ok(Self::Player),
            _ => Err(Self::PART.mismatch()),
        }
    }
}

impl From<Keyset> for u8 {
    fn from(keyset: Keyset) -> Self {
        match keyset {
            Keyset::Spectator => 0,
            Keyset::Player => 1,
        }
    }
}

impl Payload<KEYSET_DATA> for Keyset {
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::PART.read(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::testing::{both_ways, shape_err};

    #[test]
    fn keyset_forms() {
        both_ways(Keyset::Spectator, "0");
        both_ways(Keyset::Player, "1");
        for json in ["2", "-1", "1.0", "\"1\"", "true", "null"] {
            shape_err(KEYSET_DATA, json, "keyset");
        }
    }
}
