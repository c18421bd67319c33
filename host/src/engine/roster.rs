//! Who holds which slot: admission, nicknames, session tokens, resume and takeover.
//!
//! Every accepted peer gets a slot (a [`PlayerId`]) and a random 128-bit
//! [`SessionToken`], the only way back into that slot. When a peer's connection
//! drops, its slot waits [`Roster::resume_window`] (5 minutes) for a hello carrying
//! the token, which gets the slot back with its team and score. A second connection
//! with the token of a slot that is still connected takes the slot over; the first is
//! closed with 4409.
//!
//! The roster keeps no token and no password, only their [`Verifier`]s: keyed hashes
//! (BLAKE3, keyed by a random salt of the match's) that check what a hello presents and give
//! nothing away. The roster travels in checkpoints to the successors, who must resume
//! everyone after a takeover; a successor that reads its checkpoint learns no token, so it can
//! take nobody's slot.
//!
//! Each slot also remembers the peer that held it last (the rendezvous's id for that peer,
//! the same on every member). A hello without a token from that peer, while the slot waits,
//! takes the slot back with a fresh token: the transport vouches for the peer, and such a
//! hello is that player's, not a newcomer's. It is what a new host hears after a takeover from
//! a player whose join hello was still on its way to it when the old host welcomed that
//! player, or whose welcome was lost with the old host: before, that player was seated a
//! second time, under a new name, and lost its slot and score.
//!
//! A slot is **verified** when its player showed a token of the rendezvous
//! ([`vimp_netcode::identity`]) that the host checked against the rendezvous's keys
//! ([`Roster::set_identities`]): it then plays under the token's nickname, and no other slot may
//! hold that name (an unverified one that held it is renamed, [`Roster::verify`]). An
//! unverified slot plays under the name it asked for, made unique among the room's. The keys
//! travel in checkpoints (never a token), so a successor checks tokens as the first host did.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use vimp_netcode::identity::{TokenError, TokenKeys};
use vimp_netcode::session::{Hello, SessionToken, clean_nickname, close, same_nickname, unique_nickname};
use vimp_netcode::transport::PeerKey;

use crate::engine::players::PlayerId;

/// Draws a fresh random session token from the operating system.
pub fn fresh_token() -> SessionToken {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No OS randomness: fall back to the clock and the address of a stack value, mixed.
        let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos()
            ^ (&bytes as *const _ as usize as u128);
        let mut rng = crate::engine::rng::SplitMix64::new(seed as u64 ^ (seed >> 64) as u64);
        bytes[..8].copy_from_slice(&rng.next().to_le_bytes());
        bytes[8..].copy_from_slice(&rng.next().to_le_bytes());
    }
    SessionToken(bytes)
}

/// A keyed hash of a secret (a session token, the lobby password): what the roster keeps to
/// check one presented.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verifier([u8; 32]);

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Verifier({:02x}{:02x}{:02x}{:02x}…)", self.0[0], self.0[1], self.0[2], self.0[3])
    }
}

impl Verifier {
    /// The verifier of `secret` (of kind `what`) under `salt`.
    fn of(salt: &[u8; 32], what: &str, secret: &[u8]) -> Verifier {
        let mut hasher = blake3::Hasher::new_keyed(salt);
        hasher.update(what.as_bytes());
        hasher.update(&[0]);
        hasher.update(secret);
        Verifier(*hasher.finalize().as_bytes())
    }
}

/// One slot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Seat {
    /// The slot.
    pub player: PlayerId,
    /// What checks the token that takes it back.
    pub token: Verifier,
    /// The shown name (trimmed, unique).
    pub nickname: String,
    /// The peer holding it now, if connected.
    #[serde(skip)]
    pub peer: Option<PeerKey>,
    /// When its peer left (for the resume window), if it did.
    #[serde(skip)]
    pub left_at: Option<Duration>,
    /// The peer that held it last, kept when it leaves and carried in checkpoints: a hello
    /// from it without the token takes the slot back while the slot waits.
    pub last_peer: Option<PeerKey>,
    /// The key (its text) of the identity a checked token proved; `None`: unverified.
    pub verified: Option<String>,
}

/// What checks players' tokens: the rendezvous's keys, and the room (lobby code) a token must
/// be for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Identities {
    /// The rendezvous's issuer name and keys (`GET /identity/keys`).
    pub keys: TokenKeys,
    /// The lobby code: a token's audience.
    pub room: String,
}

/// What a checked token did ([`Roster::verify`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verified {
    /// The slot's name now: the token's.
    pub nickname: String,
    /// The name it had before.
    pub was: String,
    /// An unverified slot that held the name, renamed: its id, old and new names.
    pub renamed: Option<(PlayerId, String, String)>,
}

/// Why a token did not verify its slot.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The host checks no tokens: it knows no rendezvous's keys (a LAN match).
    #[error("this host checks no tokens (its match has no rendezvous with identities)")]
    NoKeys,
    /// The token does not hold.
    #[error("{0}")]
    Token(#[from] TokenError),
    /// Another slot of the room is verified as the same identity.
    #[error("this identity plays in the room already")]
    InUse,
    /// The slot is not there.
    #[error("no such slot")]
    NoSeat,
}

/// A random salt for a roster's verifiers, from the operating system.
pub fn fresh_salt() -> [u8; 32] {
    let mut salt = [0u8; 32];
    for chunk in salt.chunks_mut(16) {
        chunk.copy_from_slice(&fresh_token().0);
    }
    salt
}

/// The answer to an admitted hello.
#[derive(Clone, Debug, PartialEq)]
pub struct Admission {
    /// The slot.
    pub player: PlayerId,
    /// The name given.
    pub nickname: String,
    /// The slot's token.
    pub token: SessionToken,
    /// Whether the slot was taken back with a token.
    pub resumed: bool,
    /// The peer that held the slot until now and must be closed with 4409.
    pub replaced: Option<PeerKey>,
}

/// The slots of a match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Roster {
    seats: BTreeMap<PlayerId, Seat>,
    /// Most slots at once.
    pub max_players: usize,
    /// How long a dropped slot waits for its token.
    pub resume_window: Duration,
    /// The key of the verifiers (random, the match's own; not secret).
    salt: [u8; 32],
    /// What checks the lobby password, if the lobby has one.
    password: Option<Verifier>,
    /// Slots the host keeps for itself (bots), never given to peers.
    pub reserved: Vec<PlayerId>,
    /// What checks players' tokens ([`Identities`], as JSON), if the match has a rendezvous
    /// with identities.
    identities: Option<String>,
}

impl Roster {
    /// An empty roster, its verifiers keyed by `salt` (draw it at random: [`fresh_salt`]).
    pub fn new(max_players: usize, password: Option<&str>, salt: [u8; 32]) -> Self {
        Roster {
            seats: BTreeMap::new(),
            max_players,
            resume_window: Duration::from_secs(300),
            password: password.map(|p| Verifier::of(&salt, "password", p.as_bytes())),
            salt,
            reserved: Vec::new(),
            identities: None,
        }
    }

    /// Checks players' tokens with `identities` from now on (`None`: no tokens are checked).
    pub fn set_identities(&mut self, identities: Option<&Identities>) {
        self.identities = identities.and_then(|i| serde_json::to_string(i).ok());
    }

    /// Whether players' tokens are checked ([`Roster::set_identities`]).
    pub fn checks_tokens(&self) -> bool {
        self.identities.is_some()
    }

    /// What checks players' tokens, if anything does.
    pub fn identities(&self) -> Option<Identities> {
        self.identities.as_deref().and_then(|text| serde_json::from_str(text).ok())
    }

    /// Checks `token` for `player`'s slot at `now` (seconds since the Unix epoch): when it holds, the slot is verified as the token's
    /// identity and takes its nickname, and an unverified slot that held that name (whatever
    /// its case) is renamed. A slot verified already takes a newer token of the same identity
    /// (a refresh).
    pub fn verify(&mut self, player: PlayerId, token: &str, now: u64) -> Result<Verified, VerifyError> {
        let identities = self.identities().ok_or(VerifyError::NoKeys)?;
        let claims = identities.keys.check(token, &identities.room, now)?;
        let nickname = clean_nickname(&claims.nick).ok_or(TokenError::Malformed)?;
        if self.seats.values().any(|s| s.player != player && s.verified.as_deref() == Some(claims.sub.as_str())) {
            return Err(VerifyError::InUse);
        }
        let was = self.seats.get(&player).ok_or(VerifyError::NoSeat)?.nickname.clone();
        // The name is the identity's: whoever else holds it, unverified, takes another.
        let holder = self
            .seats
            .values()
            .find(|s| s.player != player && same_nickname(&s.nickname, &nickname))
            .map(|s| (s.player, s.nickname.clone()));
        let mut renamed = None;
        if let Some((other, old)) = holder {
            let taken =
                |n: &str| same_nickname(n, &nickname) || self.seats.values().any(|s| same_nickname(&s.nickname, n));
            let new = unique_nickname(&old, taken);
            if let Some(seat) = self.seats.get_mut(&other) {
                seat.nickname.clone_from(&new);
            }
            renamed = Some((other, old, new));
        }
        let seat = self.seats.get_mut(&player).ok_or(VerifyError::NoSeat)?;
        seat.nickname.clone_from(&nickname);
        seat.verified = Some(claims.sub);
        Ok(Verified { nickname, was, renamed })
    }

    fn verify_token(&self, token: SessionToken) -> Verifier {
        Verifier::of(&self.salt, "token", &token.0)
    }

    /// The slots, by player id.
    pub fn seats(&self) -> impl Iterator<Item = &Seat> {
        self.seats.values()
    }

    /// The slot a peer holds.
    pub fn player_of(&self, peer: PeerKey) -> Option<PlayerId> {
        self.seats.values().find(|s| s.peer == Some(peer)).map(|s| s.player)
    }

    /// One slot.
    pub fn seat(&self, player: PlayerId) -> Option<&Seat> {
        self.seats.get(&player)
    }

    /// Decides on a hello from `peer` at `now`; `fresh_token` draws a new random token.
    /// An error is the close code to reject with.
    pub fn admit(
        &mut self,
        peer: PeerKey,
        hello: &Hello,
        now: Duration,
        fresh_token: impl FnOnce() -> SessionToken,
    ) -> Result<Admission, u16> {
        if let Some(password) = self.password {
            let given = hello.password.as_deref().map(|p| Verifier::of(&self.salt, "password", p.as_bytes()));
            if given != Some(password) {
                return Err(close::BAD_PASSWORD);
            }
        }
        let Some(wanted) = clean_nickname(&hello.nickname) else { return Err(close::PROTOCOL) };
        self.expire(now);
        if let Some(token) = hello.resume_token
            && let verifier = self.verify_token(token)
            && let Some(seat) = self.seats.values_mut().find(|s| s.token == verifier)
        {
            let replaced = seat.peer.replace(peer).filter(|old| *old != peer);
            seat.left_at = None;
            seat.last_peer = Some(peer);
            return Ok(Admission {
                player: seat.player,
                nickname: seat.nickname.clone(),
                token,
                resumed: true,
                replaced,
            });
        }
        if let Some(player) =
            self.seats.values().find(|s| s.peer.is_none() && s.last_peer == Some(peer)).map(|s| s.player)
        {
            let token = fresh_token();
            let verifier = self.verify_token(token);
            let seat = self.seats.get_mut(&player).expect("the slot just found");
            seat.token = verifier;
            seat.peer = Some(peer);
            seat.left_at = None;
            return Ok(Admission { player, nickname: seat.nickname.clone(), token, resumed: true, replaced: None });
        }
        if self.seats.len() + self.reserved.len() >= self.max_players {
            return Err(close::SERVER_FULL);
        }
        let Some(player) =
            (0..=u8::MAX).map(PlayerId).find(|id| !self.seats.contains_key(id) && !self.reserved.contains(id))
        else {
            return Err(close::SERVER_FULL);
        };
        let nickname = unique_nickname(&wanted, |n| self.seats.values().any(|s| same_nickname(&s.nickname, n)));
        let token = fresh_token();
        let verifier = self.verify_token(token);
        let seat = Seat {
            player,
            token: verifier,
            nickname: nickname.clone(),
            peer: Some(peer),
            left_at: None,
            last_peer: Some(peer),
            verified: None,
        };
        self.seats.insert(player, seat);
        Ok(Admission { player, nickname, token, resumed: false, replaced: None })
    }

    /// `peer` left for good: its slot is freed (its token is worthless from now on). Returns
    /// the slot it held.
    pub fn leave(&mut self, peer: PeerKey) -> Option<Seat> {
        let player = self.player_of(peer)?;
        self.seats.remove(&player)
    }

    /// `peer` is gone: its slot starts waiting for a resume. Returns the slot.
    pub fn disconnected(&mut self, peer: PeerKey, now: Duration) -> Option<PlayerId> {
        let seat = self.seats.values_mut().find(|s| s.peer == Some(peer))?;
        seat.peer = None;
        seat.left_at = Some(now);
        Some(seat.player)
    }

    /// Forgets every connection (a roster restored by a successor has none): each slot waits
    /// for its token, its resume window running from `now` (or never expiring, with `None`).
    pub fn detach_all(&mut self, now: Option<Duration>) {
        for seat in self.seats.values_mut() {
            seat.peer = None;
            seat.left_at = now;
        }
    }

    /// Frees the slots whose resume window has passed; returns them.
    pub fn expire(&mut self, now: Duration) -> Vec<PlayerId> {
        let window = self.resume_window;
        let gone: Vec<PlayerId> = self
            .seats
            .values()
            .filter(|s| s.left_at.is_some_and(|at| now.saturating_sub(at) >= window))
            .map(|s| s.player)
            .collect();
        for p in &gone {
            self.seats.remove(p);
        }
        gone
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn hello(name: &str, token: Option<SessionToken>) -> Hello {
        Hello { resume_token: token, ..Hello::new(name, "t") }
    }

    const T0: Duration = Duration::ZERO;

    #[test]
    fn admits_with_unique_names_and_tokens_and_fills_up() {
        let mut r = Roster::new(2, None, [3; 32]);
        let a = r.admit(PeerKey(1), &hello(" ann ", None), T0, || SessionToken([1; 16])).expect("ann");
        assert_eq!((a.player, a.nickname.as_str(), a.resumed), (PlayerId(0), "ann", false));
        let b = r.admit(PeerKey(2), &hello("ANN", None), T0, || SessionToken([2; 16])).expect("second ann");
        assert_eq!((b.player, b.nickname.as_str()), (PlayerId(1), "ANN (2)"), "names differ in more than case");
        assert_eq!(r.admit(PeerKey(3), &hello("cy", None), T0, || SessionToken([3; 16])), Err(close::SERVER_FULL));
        assert_eq!(r.admit(PeerKey(3), &hello("  ", None), T0, || SessionToken([3; 16])), Err(close::PROTOCOL));
    }

    #[test]
    fn a_checked_token_gives_its_name_and_an_unverified_holder_of_it_is_renamed() {
        use vimp_netcode::identity::{Identity, TokenSigner};
        let rendezvous = TokenSigner::new("rdv", &Identity::from_seed([1; 32]));
        let keys = TokenKeys { issuer: "rdv".into(), jwks: rendezvous.jwks() };
        let mut r = Roster::new(8, None, [3; 32]);
        let squatter = r.admit(PeerKey(1), &hello("alice", None), T0, || SessionToken([1; 16])).unwrap();
        let real = r.admit(PeerKey(2), &hello("al", None), T0, || SessionToken([2; 16])).unwrap();
        let alice = Identity::from_seed([2; 32]).public_key();
        const NOW: u64 = 1_800_000_000;
        let token = |room: &str| rendezvous.issue(&alice, "Alice", room, NOW, 60);
        // No keys: nothing is checked.
        assert_eq!(r.verify(real.player, &token("K7MP2Q"), NOW), Err(VerifyError::NoKeys));
        r.set_identities(Some(&Identities { keys, room: "K7MP2Q".into() }));
        assert_eq!(r.verify(real.player, &token("OTHER2"), NOW), Err(VerifyError::Token(TokenError::WrongRoom)));
        assert_eq!(r.verify(real.player, "garbage", NOW), Err(VerifyError::Token(TokenError::Malformed)));
        let verified = r.verify(real.player, &token("K7MP2Q"), NOW).unwrap();
        assert_eq!(
            verified,
            Verified {
                nickname: "Alice".into(),
                was: "al".into(),
                renamed: Some((squatter.player, "alice".into(), "alice (2)".into()))
            }
        );
        assert_eq!(r.seat(real.player).unwrap().verified, Some(alice.to_string()));
        assert_eq!(r.seat(squatter.player).unwrap().verified, None);
        // A newcomer asking for the name gets another; the same identity cannot sit twice.
        let late = r.admit(PeerKey(3), &hello("ALICE", None), T0, || SessionToken([3; 16])).unwrap();
        assert_eq!(late.nickname, "ALICE (3)", "alice (2) is the renamed one's");
        assert_eq!(r.verify(late.player, &token("K7MP2Q"), NOW), Err(VerifyError::InUse));
        // A refreshed token of the same identity is taken.
        assert!(r.verify(real.player, &token("K7MP2Q"), NOW).is_ok());
        // The keys travel in checkpoints (bincode), never a token.
        let written = bincode::serde::encode_to_vec(&r, bincode::config::standard()).unwrap();
        let (back, _): (Roster, usize) =
            bincode::serde::decode_from_slice(&written, bincode::config::standard()).unwrap();
        assert_eq!(back.identities(), r.identities());
        assert_eq!(back.seat(real.player).unwrap().verified, Some(alice.to_string()));
    }

    #[test]
    fn a_password_is_checked() {
        let mut r = Roster::new(4, Some("sesame"), [3; 32]);
        assert_eq!(r.admit(PeerKey(1), &hello("a", None), T0, || SessionToken([1; 16])), Err(close::BAD_PASSWORD));
        let mut h = hello("a", None);
        h.password = Some("sesame".into());
        assert!(r.admit(PeerKey(1), &h, T0, || SessionToken([1; 16])).is_ok());
    }

    #[test]
    fn resume_within_the_window_takeover_and_expiry() {
        let mut r = Roster::new(4, None, [3; 32]);
        let token = SessionToken([9; 16]);
        let a = r.admit(PeerKey(1), &hello("ann", None), T0, || token).expect("ann");
        // A second connection with the token while the first is alive takes the slot over.
        let b = r.admit(PeerKey(2), &hello("x", Some(token)), T0, || SessionToken([0; 16])).expect("takeover");
        assert_eq!((b.player, b.resumed, b.replaced, b.nickname.as_str()), (a.player, true, Some(PeerKey(1)), "ann"));
        assert_eq!(r.player_of(PeerKey(2)), Some(a.player));
        // It drops; within 5 minutes the token brings it back.
        assert_eq!(r.disconnected(PeerKey(2), Duration::from_secs(10)), Some(a.player));
        let c = r.admit(PeerKey(3), &hello("ann", Some(token)), Duration::from_secs(300), || SessionToken([0; 16]));
        assert_eq!(c.map(|c| (c.player, c.resumed, c.replaced)), Ok((a.player, true, None)));
        // Dropped again and past the window, the slot is freed and the token is worthless.
        r.disconnected(PeerKey(3), Duration::from_secs(400));
        assert_eq!(r.expire(Duration::from_secs(699)), []);
        assert_eq!(r.expire(Duration::from_secs(700)), [a.player]);
        let d = r.admit(PeerKey(4), &hello("ann", Some(token)), Duration::from_secs(701), || SessionToken([5; 16]));
        assert_eq!(d.map(|d| (d.resumed, d.token)), Ok((false, SessionToken([5; 16]))));
    }

    #[test]
    fn a_hello_without_the_token_from_the_peer_that_held_a_waiting_slot_takes_it_back_with_a_new_token() {
        let mut r = Roster::new(4, None, [3; 32]);
        let ann = r.admit(PeerKey(1), &hello("ann", None), T0, || SessionToken([1; 16])).expect("ann");
        r.admit(PeerKey(2), &hello("bob", None), T0, || SessionToken([2; 16])).expect("bob");
        // The successor's roster, from a checkpoint: every slot waits.
        let written = bincode::serde::encode_to_vec(&r, bincode::config::standard()).expect("a roster encodes");
        let (mut back, _): (Roster, usize) =
            bincode::serde::decode_from_slice(&written, bincode::config::standard()).expect("decodes");
        back.detach_all(Some(T0));
        // Ann's join hello, still on its way to the new host when the old one welcomed her.
        let t1 = Duration::from_secs(1);
        let again = back.admit(PeerKey(1), &hello("ann", None), t1, || SessionToken([7; 16])).expect("ann back");
        assert_eq!(
            (again.player, again.resumed, again.nickname.as_str(), again.token, again.replaced),
            (ann.player, true, "ann", SessionToken([7; 16]), None),
            "her slot, not a second one"
        );
        // The new token is the slot's now, the old one no longer takes it.
        back.disconnected(PeerKey(1), t1);
        let old = back.admit(PeerKey(8), &hello("ann", Some(SessionToken([1; 16]))), t1, || SessionToken([8; 16]));
        assert_eq!(old.map(|a| (a.player, a.resumed)), Ok((PlayerId(2), false)), "the old token is a newcomer's");
        let new = back.admit(PeerKey(9), &hello("ann", Some(SessionToken([7; 16]))), t1, || SessionToken([9; 16]));
        assert_eq!(new.map(|a| (a.player, a.resumed)), Ok((ann.player, true)));
        // Another peer's hello without a token is a newcomer's, whatever slots wait.
        let cy = back.admit(PeerKey(3), &hello("bob", None), t1, || SessionToken([3; 16])).expect("cy");
        assert_eq!((cy.player, cy.resumed, cy.nickname.as_str()), (PlayerId(3), false, "bob (2)"));
    }

    #[test]
    fn the_roster_keeps_verifiers_that_give_no_token_or_password_away() {
        let (ann, bob) = (SessionToken([0xa1; 16]), SessionToken([0xb0; 16]));
        let mut r = Roster::new(4, Some("sesame"), [7; 32]);
        let with = |name: &str, token| Hello { password: Some("sesame".into()), ..hello(name, token) };
        r.admit(PeerKey(1), &with("ann", None), T0, || ann).expect("ann");
        r.admit(PeerKey(2), &with("bob", None), T0, || bob).expect("bob");
        // What a successor reads in a checkpoint: no token, no password, in any form.
        let written = bincode::serde::encode_to_vec(&r, bincode::config::standard()).expect("a roster encodes");
        let (ann_hex, bob_hex) = (ann.to_string(), bob.to_string());
        for secret in [&ann.0[..], &bob.0[..], ann_hex.as_bytes(), bob_hex.as_bytes(), b"sesame"] {
            assert!(!written.windows(secret.len()).any(|w| w == secret), "{secret:?} is in the roster's bytes");
        }
        // Restored (the successor's roster), it still takes each token back into its own slot,
        // and no other.
        let (mut back, _): (Roster, usize) =
            bincode::serde::decode_from_slice(&written, bincode::config::standard()).expect("decodes");
        back.detach_all(Some(T0));
        let a = back.admit(PeerKey(5), &with("x", Some(ann)), T0, || SessionToken([0; 16])).expect("ann back");
        assert_eq!((a.player, a.resumed, a.token, a.nickname.as_str()), (PlayerId(0), true, ann, "ann"));
        let guess = back.admit(PeerKey(6), &with("eve", Some(SessionToken([0xb1; 16]))), T0, || SessionToken([1; 16]));
        assert_eq!(guess.map(|g| (g.player, g.resumed)), Ok((PlayerId(2), false)), "a wrong token is a newcomer");
        assert_eq!(
            back.admit(PeerKey(7), &hello("mal", Some(bob)), T0, || SessionToken([2; 16])),
            Err(close::BAD_PASSWORD)
        );
        // The same token under another match's salt is another verifier.
        assert_ne!(Verifier::of(&[7; 32], "token", &ann.0), Verifier::of(&[8; 32], "token", &ann.0));
    }
}
