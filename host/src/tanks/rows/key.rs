//! The key ids of the tanks game's snapshot schema (`snapshot.json`).

/// `m1`: tanks (indexed8, hot).
pub const TANKS: u8 = 1;
/// `w1`: tracers (list16, event).
pub const TRACERS: u8 = 2;
/// `w2`: bombs in flight (indexed32, hot, delta-coded; null on removal).
pub const BOMBS: u8 = 3;
/// `w2e`: blasts (list16, event).
pub const BLASTS: u8 = 4;
