//! Who takes part in the match and what they pressed: commands in, key bits per step out.
//!
//! Everything that reaches the sim from outside arrives as a [`HostCommand`] in
//! the [`HostCommands`] queue (joins, leaves, team changes, key events, aims, views) and is
//! applied, in queue order, at the start of the next tick. That ordered list is
//! the whole input of the simulation: replaying it against a dump reproduces the
//! match (host migration's log is exactly this).

use std::collections::BTreeMap;

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use vimp_netcode::input::{Aim, InputEvent, KeyBits, KeyState, KeyTable, ViewTime};

/// A player slot in the match: the id every block row and event names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PlayerId(pub u8);

/// Something from outside the sim, applied at the start of the next tick.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum HostCommand {
    /// A player takes a slot. `team: None` lets the game choose.
    Join {
        /// The slot.
        player: PlayerId,
        /// The shown name.
        name: String,
        /// A team asked for.
        team: Option<u8>,
        /// Driven by the game's bots instead of input events.
        bot: bool,
    },
    /// A player leaves its slot.
    Leave {
        /// The slot.
        player: PlayerId,
    },
    /// A player asks to change team (the game decides).
    SetTeam {
        /// The slot.
        player: PlayerId,
        /// The team asked for.
        team: u8,
    },
    /// A player's connection dropped: let go of its keys (its slot stays, for a resume).
    Release {
        /// The slot.
        player: PlayerId,
    },
    /// A key event of a player.
    Input {
        /// The slot.
        player: PlayerId,
        /// The event.
        event: InputEvent,
    },
    /// A player's pointer aims at a world point, or lets go of the aim (`None`): the
    /// spec's `apply_aim`, in the key events' seq space ([`KeyState::apply_aim`]).
    Aim {
        /// The slot.
        player: PlayerId,
        /// The event's seq.
        seq: u32,
        /// The point and the pointer's flags.
        aim: Option<Aim>,
    },
    /// The world a player saw when it pressed the one-shots that follow
    /// ([`KeyState::apply_view`]), already bounded by what its link explains and by
    /// [`MaxRewind`] (the server does that as it takes the event, so that a replay of the
    /// log decides every shot as the host did).
    View {
        /// The slot.
        player: PlayerId,
        /// The event's seq.
        seq: u32,
        /// The moment seen, in the host's ticks.
        view: ViewTime,
    },
    /// A player is called by another name (its token gave it the name it registered, or a
    /// verified player took its name).
    Rename {
        /// The slot.
        player: PlayerId,
        /// The shown name.
        name: String,
    },
}

/// [`MaxRewind`] by default, ms: the game config's `maxRewindMs`.
pub const DEFAULT_MAX_REWIND_MS: u32 = 300;

/// How far back a player's view may take a shot: the game config's `maxRewindMs` (300 ms by
/// default), which the game puts here. Whatever a client says it saw, its shots are judged
/// against a world at most this old, and no older than its link explains (its round trip,
/// the interpolation delay and a frame).
#[derive(Resource, Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxRewind(pub std::time::Duration);

impl Default for MaxRewind {
    fn default() -> Self {
        MaxRewind(std::time::Duration::from_millis(u64::from(DEFAULT_MAX_REWIND_MS)))
    }
}

/// The queue of commands for the next tick.
#[derive(Resource, Debug, Default)]
pub struct HostCommands(pub Vec<HostCommand>);

impl HostCommands {
    /// Queues one command.
    pub fn push(&mut self, command: HostCommand) {
        self.0.push(command);
    }
}

/// One participant of the match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Participant {
    /// The shown name.
    pub name: String,
    /// The team the game put the player in (0 until the game decides).
    pub team: u8,
    /// A team the player asked for and the game has not answered yet.
    pub requested_team: Option<u8>,
    /// Driven by bots.
    pub bot: bool,
    /// The input state built from the player's key events and aims.
    pub keys: KeyState,
    /// The input of the current step: key bits and aim (for bots: what the bot decided).
    pub bits: KeyBits,
}

/// Everyone in the match, by slot.
#[derive(Resource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Participants(pub BTreeMap<PlayerId, Participant>);

impl Participants {
    /// The lowest free slot, if any.
    pub fn free_slot(&self) -> Option<PlayerId> {
        (0..=u8::MAX).map(PlayerId).find(|id| !self.0.contains_key(id))
    }
}

/// One player's line on the scoreboard, as the game keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Score {
    /// The score.
    pub score: i64,
    /// Deaths.
    pub deaths: u32,
    /// The game's status text (may be empty).
    pub status: String,
}

/// The scoreboard the game keeps up to date (the stat table's score, deaths and status columns).
#[derive(Resource, Clone, Debug, Default, PartialEq, Eq)]
pub struct Scores(pub BTreeMap<PlayerId, Score>);

/// A round the game ended ([`RoundEnds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoundEnd {
    /// The team that won (0: a draw, or no teams).
    pub winner: u8,
}

/// The rounds the game ended since the session layer last looked: the game pushes one when
/// it decides a round (the scoreboard, [`Scores`], then holds the round's scores). A host
/// whose players' tokens are checked sends every client the round's results to sign for the
/// global top ([`ROUND_RESULTS`](vimp_netcode::frame::op::ROUND_RESULTS)). Like the meta
/// outbox, not part of a dump.
#[derive(Resource, Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundEnds(pub Vec<RoundEnd>);

/// Run condition: the game ended a round this tick (a game that keeps [`Scores`] only on
/// snapshot ticks keeps them on this one too).
pub fn round_ended(ends: Res<RoundEnds>) -> bool {
    !ends.0.is_empty()
}

/// Each player's HUD panel as the game keeps it: `key → value` (`t` — round time in seconds —
/// is the one key the engine names; the rest are the game's).
#[derive(Resource, Clone, Debug, Default, PartialEq, Eq)]
pub struct Panels(pub BTreeMap<PlayerId, Vec<(String, String)>>);

/// The game's key table (`playerKeys`); the engine applies events through it without reading it.
#[derive(Resource, Clone, Debug, Default)]
pub struct PlayerKeys(pub KeyTable);

/// What happened to the participant list this tick, for the game's systems. Cleared every tick.
#[derive(Resource, Debug, Default)]
pub struct TickEvents {
    /// Slots taken this tick.
    pub joined: Vec<PlayerId>,
    /// Slots left this tick (already gone from [`Participants`]).
    pub left: Vec<PlayerId>,
    /// Team change requests this tick.
    pub team_requests: Vec<PlayerId>,
    /// Input events refused this tick (unknown key names), for the session layer to count.
    pub refused_inputs: Vec<(PlayerId, String)>,
}

/// Applies the queued commands in order, then turns key states into this step's bits.
pub(crate) fn apply_commands(
    mut commands: ResMut<HostCommands>,
    mut participants: ResMut<Participants>,
    mut events: ResMut<TickEvents>,
    keys: Res<PlayerKeys>,
) {
    *events = TickEvents::default();
    for command in commands.0.drain(..) {
        match command {
            HostCommand::Join { player, name, team, bot } => {
                let p = Participant {
                    name,
                    team: 0,
                    requested_team: team,
                    bot,
                    keys: KeyState::default(),
                    bits: KeyBits::default(),
                };
                if participants.0.insert(player, p).is_some() {
                    // A slot taken again replaces its holder: the game sees a leave and a join.
                    events.left.push(player);
                }
                events.joined.push(player);
            }
            HostCommand::Leave { player } => {
                if participants.0.remove(&player).is_some() {
                    events.left.push(player);
                    events.joined.retain(|p| *p != player);
                }
            }
            HostCommand::SetTeam { player, team } => {
                if let Some(p) = participants.0.get_mut(&player) {
                    p.requested_team = Some(team);
                    events.team_requests.push(player);
                }
            }
            HostCommand::Rename { player, name } => {
                if let Some(p) = participants.0.get_mut(&player) {
                    p.name = name;
                }
            }
            HostCommand::Release { player } => {
                if let Some(p) = participants.0.get_mut(&player) {
                    p.keys.release_all();
                }
            }
            HostCommand::Input { player, event } => {
                let Some(p) = participants.0.get_mut(&player) else { continue };
                if p.bot {
                    continue;
                }
                if let Err(e) = p.keys.apply(&keys.0, &event) {
                    events.refused_inputs.push((player, e.to_string()));
                }
            }
            HostCommand::Aim { player, seq, aim } => {
                let Some(p) = participants.0.get_mut(&player) else { continue };
                if !p.bot {
                    p.keys.apply_aim(seq, aim);
                }
            }
            HostCommand::View { player, seq, view } => {
                let Some(p) = participants.0.get_mut(&player) else { continue };
                if !p.bot {
                    p.keys.apply_view(seq, view);
                }
            }
        }
    }
    for p in participants.0.values_mut() {
        p.bits = p.keys.step();
    }
}
