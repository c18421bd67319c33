//! A pointer aim, and the moment a view names (lag compensation).

use super::*;

/// A pointer aim: a world point and the pointer's flags (see the module docs).
///
/// Two aims are equal when their bits are: the host and the predictor must agree to the
/// bit, and a valid aim holds no NaN.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Aim {
    /// The point's x, world units.
    pub x: f32,
    /// The point's y, world units.
    pub y: f32,
    /// The pointer's flags: [`AIM_PRESSED`], [`AIM_DOUBLE_TAP`]; other bits are carried as they are.
    pub flags: u8,
}

impl Aim {
    /// An aim at `(x, y)`, each coordinate clamped to ±[`MAX_AIM_COORD`]; `None` when either
    /// is NaN (an infinity clamps).
    pub fn new(x: f32, y: f32, flags: u8) -> Option<Aim> {
        if x.is_nan() || y.is_nan() {
            return None;
        }
        let clamp = |v: f32| v.clamp(-MAX_AIM_COORD, MAX_AIM_COORD);
        Some(Aim { x: clamp(x), y: clamp(y), flags })
    }

    /// Whether both coordinates are finite and within ±[`MAX_AIM_COORD`].
    pub fn is_valid(&self) -> bool {
        let ok = |v: f32| v.is_finite() && v.abs() <= MAX_AIM_COORD;
        ok(self.x) && ok(self.y)
    }

    /// Whether the pointer is pressed ([`AIM_PRESSED`]).
    pub fn pressed(&self) -> bool {
        self.flags & AIM_PRESSED != 0
    }

    /// Whether the press is a double tap ([`AIM_DOUBLE_TAP`]).
    pub fn double_tap(&self) -> bool {
        self.flags & AIM_DOUBLE_TAP != 0
    }
}

impl PartialEq for Aim {
    fn eq(&self, other: &Self) -> bool {
        self.x.to_bits() == other.x.to_bits() && self.y.to_bits() == other.y.to_bits() && self.flags == other.flags
    }
}

impl Eq for Aim {}

impl std::hash::Hash for Aim {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.x.to_bits(), self.y.to_bits(), self.flags).hash(state);
    }
}

/// A moment of the host's match as a client drew it: tick `tick` and `frac / 256` of the
/// next (see [Views](self#views-lag-compensation)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
pub struct ViewTime {
    /// The whole tick.
    pub tick: u32,
    /// How far on to the next tick, in 256ths.
    pub frac: u8,
}

impl ViewTime {
    /// The moment `ticks` (a tick count with its fraction), rounded down to a 256th; `None`
    /// for a moment that is not finite, before tick 0 or past `u32::MAX`.
    pub fn from_ticks(ticks: f64) -> Option<ViewTime> {
        if !ticks.is_finite() || ticks < 0.0 || ticks >= f64::from(u32::MAX) {
            return None;
        }
        let whole = ticks.floor();
        let frac = ((ticks - whole) * 256.0).floor().clamp(0.0, 255.0) as u8;
        Some(ViewTime { tick: whole as u32, frac })
    }

    /// The moment in ticks.
    pub fn ticks(self) -> f64 {
        f64::from(self.tick) + f64::from(self.frac) / 256.0
    }

    /// The moment in 256ths of a tick: what the host compares and clamps.
    pub fn in_256ths(self) -> u64 {
        u64::from(self.tick) << 8 | u64::from(self.frac)
    }

    /// The moment `n` 256ths of a tick after tick 0 (`u32::MAX` ticks at most).
    pub fn from_256ths(n: u64) -> ViewTime {
        let n = n.min((u64::from(u32::MAX) << 8) | 0xFF);
        ViewTime { tick: (n >> 8) as u32, frac: (n & 0xFF) as u8 }
    }
}
