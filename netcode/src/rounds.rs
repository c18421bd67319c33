//! A round's results as the global top takes them, and the signed copies that players send
//! the rendezvous.
//!
//! At a round's end the host and every verified player send the rendezvous their own copy of
//! the results ([`RoundReport`]), signed with their identity's key. The rendezvous records the
//! round only when a strict majority of the verified players in it (the host's player among
//! them) signed the same results: a host that lies to the rendezvous alone changes nothing.
//! What is signed is [`RoundResults::signed_text`], the results' canonical JSON, so that every
//! copy of the same results signs the same bytes.

use serde::{Deserialize, Serialize};

use crate::identity::{Identity, IdentityError, PublicKey, verify_signed};

/// What a report's signature signs: this, then the results' canonical JSON.
pub const ROUND_CONTEXT: &str = "vimp-round-v1:";

/// The most players a round lists.
pub const MAX_ROUND_PLAYERS: usize = 64;

/// One player's part in a round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoundPlayer {
    /// Its identity's key ([`PublicKey`]'s text); `None` for an unverified player, whose part
    /// counts for nobody's rating but its team's.
    pub key: Option<String>,
    /// Its team (0: none, each player for itself).
    pub team: u8,
    /// Its score in the round.
    pub score: i64,
}

/// A round's results: which room, which round, who played in which team and how they did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoundResults {
    /// The round's id, the same for every copy: the match's id and the round's number.
    pub id: String,
    /// The room (lobby code).
    pub room: String,
    /// The team that won (0: a draw, or no teams).
    pub winner: u8,
    /// The players, by key (unverified ones last).
    pub players: Vec<RoundPlayer>,
}

/// Why results or a report do not hold.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RoundError {
    /// The results break a rule (said which).
    #[error("the round's results do not hold: {0}")]
    Invalid(String),
    /// The reporter is not a verified player of the round.
    #[error("the reporter is not a verified player of this round")]
    NotAPlayer,
    /// The signature does not verify.
    #[error("the report's signature does not verify")]
    BadSignature,
}

impl RoundResults {
    /// The results in canonical form: players ordered (by key, unverified ones after by team
    /// and score), as every copy must be to sign the same bytes.
    pub fn canonical(mut self) -> RoundResults {
        self.players.sort_by(|a, b| {
            (a.key.is_none(), &a.key, a.team, -a.score).cmp(&(b.key.is_none(), &b.key, b.team, -b.score))
        });
        self
    }

    /// What a report signs (after [`ROUND_CONTEXT`]): the canonical results' JSON.
    pub fn signed_text(&self) -> String {
        serde_json::to_string(&self.clone().canonical()).expect("results always serialise")
    }

    /// Checks the rules: an id and room of sensible length, 1 to [`MAX_ROUND_PLAYERS`]
    /// players, each key a public key and listed once.
    pub fn check(&self) -> Result<(), RoundError> {
        let bad = |why: &str| Err(RoundError::Invalid(why.to_owned()));
        if self.id.is_empty() || self.id.len() > 128 || self.id.chars().any(char::is_control) {
            return bad("its id must be 1 to 128 printable characters");
        }
        if self.room.is_empty() || self.room.len() > 16 {
            return bad("its room must be a lobby code");
        }
        if self.players.is_empty() || self.players.len() > MAX_ROUND_PLAYERS {
            return bad("a round has 1 to 64 players");
        }
        let mut keys: Vec<&str> = self.players.iter().filter_map(|p| p.key.as_deref()).collect();
        for key in &keys {
            if key.parse::<PublicKey>().is_err() {
                return bad("a player's key is not a public key");
            }
        }
        keys.sort_unstable();
        if keys.windows(2).any(|w| w[0] == w[1]) {
            return bad("a player is listed twice");
        }
        Ok(())
    }

    /// The keys of its verified players.
    pub fn verified(&self) -> impl Iterator<Item = &str> {
        self.players.iter().filter_map(|p| p.key.as_deref())
    }
}

/// One player's signed copy of a round's results (`POST /rounds`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoundReport {
    /// The results as this player saw them.
    pub results: RoundResults,
    /// Its key: one of the results' verified players.
    pub public_key: String,
    /// Its signature of [`RoundResults::signed_text`] ([`Identity::sign`] in [`ROUND_CONTEXT`]).
    pub signature: String,
}

impl RoundReport {
    /// `identity`'s signed copy of `results`.
    pub fn sign(results: RoundResults, identity: &Identity) -> RoundReport {
        let results = results.canonical();
        let signature = identity.sign(ROUND_CONTEXT, &results.signed_text());
        RoundReport { results, public_key: identity.public_key().to_string(), signature }
    }

    /// Checks the results' rules, that the reporter is one of their verified players, and
    /// its signature.
    pub fn check(&self) -> Result<(), RoundError> {
        self.results.check()?;
        if !self.results.verified().any(|k| k == self.public_key) {
            return Err(RoundError::NotAPlayer);
        }
        let key: PublicKey = self.public_key.parse().map_err(|_: IdentityError| RoundError::NotAPlayer)?;
        verify_signed(&key, ROUND_CONTEXT, &self.results.signed_text(), &self.signature)
            .map_err(|_| RoundError::BadSignature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn results(keys: &[&Identity]) -> RoundResults {
        let mut players: Vec<RoundPlayer> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| RoundPlayer {
                key: Some(k.public_key().to_string()),
                team: 1 + (i % 2) as u8,
                score: i as i64,
            })
            .collect();
        players.push(RoundPlayer { key: None, team: 1, score: 3 });
        RoundResults { id: "K7MP2Q-1-r1".into(), room: "K7MP2Q".into(), winner: 1, players }
    }

    #[test]
    fn a_report_holds_for_its_reporter_and_results_only() {
        let (a, b, c) = (Identity::from_seed([1; 32]), Identity::from_seed([2; 32]), Identity::from_seed([3; 32]));
        let round = results(&[&a, &b]);
        let report = RoundReport::sign(round.clone(), &a);
        assert_eq!(report.check(), Ok(()));
        // The same results listed in another order sign the same bytes.
        let mut shuffled = round.clone();
        shuffled.players.reverse();
        assert_eq!(shuffled.signed_text(), round.signed_text());
        // Altered after signing.
        let mut lied = report.clone();
        lied.results.players[0].score += 10;
        assert_eq!(lied.check(), Err(RoundError::BadSignature));
        // Someone not in the round.
        assert_eq!(RoundReport::sign(round.clone(), &c).check(), Err(RoundError::NotAPlayer));
        // Another's signature under its key.
        let forged = RoundReport { public_key: b.public_key().to_string(), ..report };
        assert_eq!(forged.check(), Err(RoundError::BadSignature));
        let mut twice = round;
        twice.players.push(twice.players[0].clone());
        assert!(matches!(twice.check(), Err(RoundError::Invalid(_))));
    }

    proptest! {
        #[test]
        fn garbage_reports_are_refused_never_a_panic(text in ".{0,400}") {
            if let Ok(report) = serde_json::from_str::<RoundReport>(&text) {
                let _ = report.check();
            }
            let _ = serde_json::from_str::<RoundResults>(&text).map(|r| r.check());
        }
    }
}
