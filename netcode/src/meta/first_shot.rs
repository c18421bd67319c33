//! The one-off first frame (port 4), which skips the interpolation buffer.
//!
//! A vimp host never sends it: a client's first snapshot frame (format 5, or a delta
//! keyframe) is the whole world, and the interpolation buffer shows it at once. The port
//! stays reserved, and this codec reads it from a host that does.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::wire::{Part, Payload};
use super::{FIRST_SHOT_DATA, MetaError};

/// The one-off first frame (port 4): `[gameSnapshot, 0, serverTime, 0]`; it skips the interpolation buffer.
///
/// The two zeros are written as `0` and read as any number equal to zero. A time with no
/// fractional part (up to 2^53) is written as an integer (`1234`, as JavaScript does),
/// others as a float; it must be finite. `serde_json` parses floats best-effort, so a
/// time round-trips exactly when its shortest decimal form has at most 15 significant
/// digits (milliseconds with microsecond precision do).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "FirstShotForm", into = "FirstShotForm")]
pub struct FirstShot {
    /// The game's snapshot object.
    pub snapshot: Value,
    /// Server time, in milliseconds.
    pub server_time_ms: f64,
}

impl FirstShot {
    const PART: Part =
        Part { what: "first shot", expected: "[gameSnapshot, 0, serverTime, 0] with a number serverTime" };

    /// Checks that the time is finite.
    pub fn validate(&self) -> Result<(), MetaError> {
        if self.server_time_ms.is_finite() { Ok(()) } else { Err(MetaError::NonFinite { what: "first shot time" }) }
    }
}

/// `[gameSnapshot, 0, serverTime, 0]`. A non-finite time is written `null`, which does not decode.
#[derive(Serialize, Deserialize)]
struct FirstShotForm(Value, Zero, #[serde(serialize_with = "time")] f64, Zero);

/// A `0` on the wire: written `0`, read as any number equal to zero.
#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "u8")]
struct Zero;

impl TryFrom<f64> for Zero {
    type Error = &'static str;

    fn try_from(n: f64) -> Result<Self, Self::Error> {
        if n == 0.0 { Ok(Self) } else { Err("not zero") }
    }
}

impl From<Zero> for u8 {
    fn from(_: Zero) -> Self {
        0
    }
}

/// Written by hand: the time is a JSON integer when it has no fractional part (as
/// JavaScript writes it), which no serde attribute expresses.
fn time<S: Serializer>(t: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    // Integral and within ±2^53: the cast is exact.
    if t.fract() == 0.0 && t.abs() <= EXACT {
        serializer.serialize_i64(*t as i64)
    } else {
        serializer.serialize_f64(*t)
    }
}

impl From<FirstShotForm> for FirstShot {
    fn from(FirstShotForm(snapshot, _, server_time_ms, _): FirstShotForm) -> Self {
        Self { snapshot, server_time_ms }
    }
}

impl From<FirstShot> for FirstShotForm {
    fn from(shot: FirstShot) -> Self {
        Self(shot.snapshot, Zero, shot.server_time_ms, Zero)
    }
}

impl Payload<FIRST_SHOT_DATA> for FirstShot {
    fn read(value: Value) -> Result<Self, MetaError> {
        Self::PART.read(value)
    }

    fn check(&self) -> Result<(), MetaError> {
        self.validate()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::meta::MetaMessage;
    use crate::meta::testing::{both_ways, dec, enc, shape_err};

    #[test]
    fn first_shot_forms() {
        let shot = |t| FirstShot { snapshot: json!({"m1": {"3": [1.5, 2]}}), server_time_ms: t };
        both_ways(shot(1234.0), r#"[{"m1":{"3":[1.5,2]}},0,1234,0]"#);
        both_ways(shot(1234.5), r#"[{"m1":{"3":[1.5,2]}},0,1234.5,0]"#);
        both_ways(shot(-0.25), r#"[{"m1":{"3":[1.5,2]}},0,-0.25,0]"#);
        assert_eq!(
            dec(FIRST_SHOT_DATA, "[null,0.0,7,-0.0]"),
            Ok(MetaMessage::FirstShot(FirstShot { snapshot: Value::Null, server_time_ms: 7.0 }))
        );
        for json in ["[{},1,0,0]", "[{},0,\"7\",0]", "[{},0,7]", "[{},0,7,0,0]", "[{},0,7,null]", "{}"] {
            shape_err(FIRST_SHOT_DATA, json, "first shot");
        }
        let nan = MetaMessage::FirstShot(shot(f64::NAN));
        assert_eq!(nan.validate(), Err(MetaError::NonFinite { what: "first shot time" }));
        assert_eq!(enc(nan), r#"[{"m1":{"3":[1.5,2]}},0,null,0]"#);
    }
}
