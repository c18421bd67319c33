//! Round ends for the global top: the results a host that checks tokens sends every client,
//! for its verified players to check against their scoreboards, sign and report to the
//! rendezvous.

use vimp_netcode::frame::{Channel, op};
use vimp_netcode::rounds::{RoundOver, RoundPlayer, RoundResults};

use super::ServerCore;
use crate::engine::players::{Participants, RoundEnd, Scores};

impl ServerCore {
    /// Tells every client of each round the game ended (`ROUND_RESULTS`), after the scoreboard
    /// as of that moment (`STAT_DATA`), so that what each client checks the results against
    /// is what they say. Nothing when players' tokens are not checked, or when no verified
    /// player took part (nobody would sign).
    pub(super) fn report_round_ends(&mut self) {
        let ends = self.host.take_round_ends();
        // Every tick comes here: the keys are read only on a round's end.
        if ends.is_empty() {
            return;
        }
        let Some(room) = self.roster.identities().map(|i| i.room) else { return };
        for end in ends {
            let over = self.round_over(end, &room);
            if over.results.verified().next().is_none() {
                continue;
            }
            self.broadcast_stat();
            let bytes = over.encode();
            for session in self.peers.values_mut().filter(|s| s.is_active()) {
                session.send(Channel::Reliable, op::ROUND_RESULTS, &bytes);
            }
            self.rounds_ended += 1;
        }
    }

    /// The results of the round that just ended: every participant that plays (not one that
    /// watches) with its team, its score and, when verified, its identity's key. The round's
    /// id is the room's, the match's seed's and the tick's: the same on every copy, and never
    /// another round's (a successor that took the match over goes on counting the same ticks).
    fn round_over(&self, end: RoundEnd, room: &str) -> RoundOver {
        let world = self.host.world();
        let scores = world.resource::<Scores>();
        let (mut players, mut rows) = (Vec::new(), Vec::new());
        for (id, p) in &world.resource::<Participants>().0 {
            if self.watching.contains_key(id) {
                continue;
            }
            let key = self.roster.seat(*id).and_then(|s| s.verified.clone());
            let score = scores.0.get(id).map_or(0, |s| s.score);
            players.push(RoundPlayer { key, team: p.team, score });
            rows.push(u32::from(id.0));
        }
        let id = format!("{room}-{:016x}-t{}", self.host.init_config().engine.seed.unwrap_or(0), self.host.tick());
        RoundOver::new(RoundResults { id, room: room.to_owned(), winner: end.winner, players }, rows)
    }

    /// How many round ends this server told its clients of.
    pub fn rounds_ended(&self) -> u64 {
        self.rounds_ended
    }
}
