//! vimp's authoritative match: the host simulation as a headless Bevy ECS schedule.
//!
//! The host runs in one player's process on its own thread at a fixed 120 Hz
//! step: inputs → game → physics (rapier2d) → contacts → deletions → snapshot.
//! The engine half (`engine`) never names a game word; the reference game
//! (`tanks`) plugs into its system sets.
