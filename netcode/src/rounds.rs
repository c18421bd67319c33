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
use crate::meta::StatView;

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

impl RoundPlayer {
    /// The order of a round's players in its canonical form: by key, unverified ones last by
    /// team and best score first.
    fn canonical_order(a: &RoundPlayer, b: &RoundPlayer) -> std::cmp::Ordering {
        (a.key.is_none(), &a.key, a.team, -a.score).cmp(&(b.key.is_none(), &b.key, b.team, -b.score))
    }
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
    /// What the host says of a round disagrees with what this player saw (said what).
    #[error("the host's results disagree with this player's scoreboard: {0}")]
    Disagrees(String),
}

impl RoundResults {
    /// The results in canonical form: players ordered (by key, unverified ones after by team
    /// and score), as every copy must be to sign the same bytes.
    pub fn canonical(mut self) -> RoundResults {
        self.players.sort_by(RoundPlayer::canonical_order);
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

/// The longest [`RoundOver`] read (64 players' keys and rows fit in a tenth of it).
pub const MAX_ROUND_OVER_LEN: usize = 16 * 1024;

/// A round's end as the host tells its clients ([`ROUND_RESULTS`](crate::frame::op::ROUND_RESULTS)):
/// the results it reports to the rendezvous, and the stat table row (the player id) of each of
/// their players, in the results' order. Every verified player checks them against its own
/// scoreboard ([`RoundOver::agrees`]) before it signs them: what it signs is what it saw.
///
/// `{"results":{"id":…,"room":…,"winner":1,"players":[{"key":…,"team":1,"score":3},…]},"rows":[2,0,…]}`
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundOver {
    /// The results, in canonical order.
    pub results: RoundResults,
    /// `rows[i]` is the stat row of `results.players[i]`.
    pub rows: Vec<u32>,
}

impl RoundOver {
    /// `results` put in canonical order, with each player's row (`rows[i]` is the row of
    /// `players[i]` as given).
    pub fn new(results: RoundResults, rows: Vec<u32>) -> RoundOver {
        let mut both: Vec<(RoundPlayer, u32)> = results.players.into_iter().zip(rows).collect();
        both.sort_by(|(a, _), (b, _)| RoundPlayer::canonical_order(a, b));
        let (players, rows) = both.into_iter().unzip();
        RoundOver { results: RoundResults { players, ..results }, rows }
    }

    /// The compact JSON sent.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a round's end always serialises")
    }

    /// Reads what a host sent: its size, its shape, the results' rules, a row for each player
    /// and each row once, the players in canonical order.
    pub fn decode(bytes: &[u8]) -> Result<RoundOver, RoundError> {
        let bad = |why: &str| RoundError::Invalid(why.to_owned());
        if bytes.len() > MAX_ROUND_OVER_LEN {
            return Err(bad("a round's end longer than 16 KiB"));
        }
        let over: RoundOver = serde_json::from_slice(bytes).map_err(|e| RoundError::Invalid(e.to_string()))?;
        over.results.check()?;
        if over.rows.len() != over.results.players.len() {
            return Err(bad("a round's end names a row for each player"));
        }
        let mut rows = over.rows.clone();
        rows.sort_unstable();
        if rows.windows(2).any(|w| w[0] == w[1]) {
            return Err(bad("a row is named twice"));
        }
        if over.results.clone().canonical() != over.results {
            return Err(bad("the players are not in canonical order"));
        }
        Ok(over)
    }

    /// Whether the host's results agree with what the player in row `me`, whose key is `key`,
    /// saw: it is listed under its key, and every player listed is on its scoreboard in the
    /// same team (the row's tbody) with the same score. The winner is the host's word, as in
    /// the game's own message.
    pub fn agrees(&self, me: u32, key: &str, scoreboard: &StatView) -> Result<(), RoundError> {
        let differ = |why: String| Err(RoundError::Disagrees(why));
        let mine = self.rows.iter().position(|r| *r == me);
        if mine.and_then(|i| self.results.players[i].key.as_deref()) != Some(key) {
            return differ("this player is not listed under its key".into());
        }
        for (player, row) in self.results.players.iter().zip(&self.rows) {
            let Some((tbody, cells)) = scoreboard.rows.get(&(0, *row)) else {
                return differ(format!("row {row} is not on the scoreboard"));
            };
            let score = cells.get(PLAYER_SCORE).map(ToString::to_string);
            if score.as_deref() != Some(player.score.to_string().as_str()) {
                return differ(format!("row {row} scored {}, not {}", score.unwrap_or_default(), player.score));
            }
            if *tbody != player.team {
                return differ(format!("row {row} plays in team {tbody}, not {}", player.team));
            }
        }
        Ok(())
    }
}

/// The score's column in the stat table's player rows ([`PLAYER_COLUMNS`](crate::meta::PLAYER_COLUMNS)).
const PLAYER_SCORE: usize = 2;

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

    /// A scoreboard with `(row, team, score)` rows, as a client applies it.
    fn scoreboard(rows: &[(u32, u8, i64)]) -> StatView {
        use crate::meta::{PlayerStat, StatTable};
        let mut table = StatTable::new();
        for (row, team, score) in rows {
            let stat =
                PlayerStat { name: format!("p{row}"), status: String::new(), score: *score, deaths: 0, latency_ms: 9 };
            table.set_row(0, *row, *team, stat.cells());
        }
        let mut view = StatView::default();
        view.apply(&table.delta().unwrap());
        view
    }

    #[test]
    fn a_round_end_reads_back_and_agrees_only_with_what_its_player_saw() {
        let (a, b) = (Identity::from_seed([1; 32]), Identity::from_seed([2; 32]));
        let (ka, kb) = (a.public_key().to_string(), b.public_key().to_string());
        let player = |key: Option<&str>, team, score| RoundPlayer { key: key.map(str::to_owned), team, score };
        let results = RoundResults {
            id: "K7MP2Q-00ff-t9000".into(),
            room: "K7MP2Q".into(),
            winner: 2,
            players: vec![player(None, 1, 0), player(Some(&ka), 1, 2), player(Some(&kb), 2, 5)],
        };
        let over = RoundOver::new(results.clone(), vec![0, 3, 4]);
        // Canonical order, each row still beside its player.
        assert_eq!(over.results, results.clone().canonical());
        for (p, row) in over.results.players.iter().zip(&over.rows) {
            let expected = match p.key.as_deref() {
                Some(k) if k == ka => 3,
                Some(_) => 4,
                None => 0,
            };
            assert_eq!(*row, expected);
        }
        assert_eq!(RoundOver::decode(&over.encode()), Ok(over.clone()));

        let seen = scoreboard(&[(0, 1, 0), (3, 1, 2), (4, 2, 5), (7, 0, 1)]);
        assert_eq!(over.agrees(3, &ka, &seen), Ok(()));
        assert_eq!(over.agrees(4, &kb, &seen), Ok(()));
        // Listed under another's key, or not at all.
        assert!(matches!(over.agrees(3, &kb, &seen), Err(RoundError::Disagrees(_))));
        assert!(matches!(over.agrees(7, &ka, &seen), Err(RoundError::Disagrees(_))));
        // Another score, another team, a player the scoreboard does not have.
        for lie in [
            scoreboard(&[(0, 1, 0), (3, 1, 2), (4, 2, 4)]),
            scoreboard(&[(0, 1, 0), (3, 2, 2), (4, 2, 5)]),
            scoreboard(&[(3, 1, 2), (4, 2, 5)]),
        ] {
            assert!(matches!(over.agrees(3, &ka, &lie), Err(RoundError::Disagrees(_))), "{lie:?}");
        }

        // What a host may not send: rows that do not match the players, a row twice, players
        // out of order.
        let mut short = over.clone();
        short.rows.pop();
        let mut twice = over.clone();
        twice.rows[1] = twice.rows[0];
        let mut shuffled = over.clone();
        shuffled.results.players.swap(0, 2);
        for bad in [short, twice, shuffled] {
            assert!(matches!(RoundOver::decode(&bad.encode()), Err(RoundError::Invalid(_))), "{bad:?}");
        }
        let long = vec![b' '; MAX_ROUND_OVER_LEN + 1];
        assert!(RoundOver::decode(&long).is_err());
    }

    proptest! {
        #[test]
        fn garbage_reports_are_refused_never_a_panic(text in ".{0,400}") {
            if let Ok(report) = serde_json::from_str::<RoundReport>(&text) {
                let _ = report.check();
            }
            let _ = serde_json::from_str::<RoundResults>(&text).map(|r| r.check());
            if let Ok(over) = RoundOver::decode(text.as_bytes()) {
                let _ = over.agrees(0, "k", &StatView::default());
            }
        }

        #[test]
        fn a_round_end_round_trips(scores in proptest::collection::vec((0u8..3, -50i64..50, proptest::bool::ANY), 1..20)) {
            let players = scores
                .iter()
                .enumerate()
                .map(|(i, (team, score, verified))| RoundPlayer {
                    key: verified.then(|| Identity::from_seed([i as u8 + 1; 32]).public_key().to_string()),
                    team: *team,
                    score: *score,
                })
                .collect();
            let results = RoundResults { id: "K7MP2Q-1-t5".into(), room: "K7MP2Q".into(), winner: 1, players };
            let over = RoundOver::new(results, (0..scores.len() as u32).rev().collect());
            prop_assert_eq!(RoundOver::decode(&over.encode()), Ok(over));
        }
    }
}
