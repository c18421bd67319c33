//! Rounds: the timer, team frags, victory, intermission, game over, and the map reload between rounds.
//!
//! Game codes (GAME_INFORM, `[code, params?]`): 0 — a team won the round
//! (`[0, [team]]`, team 0 for a draw), 1 — a round starts (`[1, [round]]`),
//! 2 — game over (`[2, [team]]`, the team with more round wins).

use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::engine::map;
use crate::engine::meta::MetaOutbox;
use crate::engine::players::{RoundEnd, RoundEnds};
use crate::engine::sim::EngineSettings;
use crate::tanks::TanksRules;
use vimp_netcode::meta::{GameInform, Sound};

/// Game code: a team won the round.
pub const CODE_VICTORY: u8 = 0;
/// Game code: a round starts.
pub const CODE_ROUND_START: u8 = 1;
/// Game code: the game is over.
pub const CODE_GAME_OVER: u8 = 2;

/// Where the round is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Phase {
    /// No map yet.
    #[default]
    Waiting,
    /// Playing; seconds left.
    Playing(f32),
    /// Between rounds; seconds left.
    Intermission(f32),
}

/// The round state.
#[derive(Resource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Round number in the current game (1 for the first).
    pub number: u32,
    /// Where the round is.
    pub phase: Phase,
    /// Frags per team this round (teams 1 and 2).
    pub team_frags: [u32; 2],
    /// Rounds won per team this game.
    pub wins: [u32; 2],
    /// Games finished.
    pub games: u32,
}

impl Round {
    /// Whether tanks may move and shoot.
    pub fn is_playing(&self) -> bool {
        matches!(self.phase, Phase::Playing(_))
    }

    /// Counts a frag for `team`.
    pub fn add_frag(&mut self, team: u8) {
        if let Some(f) = self.team_frags.get_mut(team.wrapping_sub(1) as usize) {
            *f += 1;
        }
    }

    /// Seconds left in the round (0 outside play).
    pub fn time_left(&self) -> f32 {
        match self.phase {
            Phase::Playing(t) => t,
            _ => 0.0,
        }
    }

    /// The round's winner: 1, 2, or 0 for a draw.
    pub fn leader(&self) -> u8 {
        match self.team_frags[0].cmp(&self.team_frags[1]) {
            std::cmp::Ordering::Greater => 1,
            std::cmp::Ordering::Less => 2,
            std::cmp::Ordering::Equal => 0,
        }
    }

    /// Starts round `number + 1` (called by the map hook once the map is built).
    pub fn start_next(&mut self, rules: &TanksRules, outbox: &mut MetaOutbox) {
        self.number += 1;
        self.team_frags = [0; 2];
        self.phase = Phase::Playing(rules.0.rounds.round_seconds);
        outbox.broadcast(inform(CODE_ROUND_START, json!(self.number)));
        outbox.broadcast(Sound(super::SOUND_ROUND_START.into()));
    }
}

/// A game inform of `code` with one parameter.
fn inform(code: u8, param: serde_json::Value) -> GameInform {
    GameInform { code, params: Some(vec![param]) }
}

/// Runs the round clock; ends rounds and games; reloads the map for the next round.
pub(crate) fn run_rounds(world: &mut World) {
    let dt = world.resource::<EngineSettings>().dt();
    let rules = world.resource::<TanksRules>().0.rounds.clone();
    let mut round = world.resource::<Round>().clone();
    let mut reload = false;
    let mut ended = None;
    {
        let mut outbox = world.resource_mut::<MetaOutbox>();
        match round.phase {
            Phase::Waiting => {}
            Phase::Playing(t) => {
                let t = t - dt;
                let limit = rules.frag_limit > 0 && round.team_frags.iter().any(|&f| f >= rules.frag_limit);
                if t <= 0.0 || limit {
                    let winner = round.leader();
                    if let Some(w) = round.wins.get_mut(winner.wrapping_sub(1) as usize) {
                        *w += 1;
                    }
                    outbox.broadcast(inform(CODE_VICTORY, json!(winner)));
                    outbox.broadcast(Sound("victory".into()));
                    round.phase = Phase::Intermission(rules.intermission_seconds);
                    ended = Some(RoundEnd { winner });
                } else {
                    round.phase = Phase::Playing(t);
                }
            }
            Phase::Intermission(t) => {
                let t = t - dt;
                if t > 0.0 {
                    round.phase = Phase::Intermission(t);
                } else {
                    if round.number >= rules.rounds_per_game {
                        let champion = match round.wins[0].cmp(&round.wins[1]) {
                            std::cmp::Ordering::Greater => 1,
                            std::cmp::Ordering::Less => 2,
                            std::cmp::Ordering::Equal => 0,
                        };
                        outbox.broadcast(inform(CODE_GAME_OVER, json!(champion)));
                        round.number = 0;
                        round.wins = [0; 2];
                        round.games += 1;
                    }
                    reload = true;
                }
            }
        }
    }
    world.insert_resource(round);
    if let Some(end) = ended {
        // For the global top: the scores the round ended with are the scoreboard's now.
        world.resource_mut::<RoundEnds>().0.push(end);
    }
    if reload {
        // The same map again: crates back in place; the map hook respawns everyone and starts the round.
        let map = world.resource::<map::state::MapState>().config.clone();
        if let Some(map) = map
            && let Err(e) = map::load::load_map(world, map)
        {
            tracing::error!("reloading the map for the next round failed: {e}");
            world.resource_mut::<Round>().phase = Phase::Waiting;
        }
    }
}
