//! Who a player is beyond one match.
//!
//! - **A key pair of its own** ([`Identity`]): Ed25519, made on the player's first start and
//!   kept beside its settings, readable by its owner only ([`Identity::load_or_create`]).
//! - **A nickname registered for that key** by a rendezvous (`vimp signal --db`): first come,
//!   first served, unique whatever the case ([`nickname_key`]). The player proves it holds the
//!   key by signing a challenge the rendezvous handed out ([`Identity::prove`],
//!   [`verify_proof`]).
//! - **A short-lived token** ([`Claims`]): a JWT the rendezvous signs with its own Ed25519
//!   key (EdDSA), naming the key and the nickname, bound to one room by its audience. A host
//!   checks it against the key the rendezvous publishes (a JWKS, [`TokenKeys`]) and takes the
//!   player's nickname from it, not from what the player typed.
//!
//! Tokens are made and read by the `jsonwebtoken` crate, not by hand.

use std::path::Path;

use base64::Engine as _;
use ed25519_dalek::Signer as _;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use serde::{Deserialize, Serialize};

/// What a player signs to prove its key: this, then the challenge.
pub const PROOF_CONTEXT: &str = "vimp-identity-v2:";

/// What a proof of a key is for ([`Identity::prove`]): the rendezvous takes it for that alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose<'a> {
    /// Registering this nickname for the key.
    Register {
        /// The nickname asked for.
        nickname: &'a str,
    },
    /// A token for this room (its lobby code, as the player asks for it).
    Token {
        /// The room.
        room: &'a str,
    },
}

impl Purpose<'_> {
    /// What is signed with the challenge: the purpose's name and its object, each on a line of
    /// its own (neither holds a line break: a nickname holds no control character, a room is a
    /// lobby code), so that no purpose reads as another.
    fn message(&self, challenge: &str) -> String {
        match self {
            Purpose::Register { nickname } => format!("{challenge}\nregister\n{nickname}"),
            Purpose::Token { room } => format!("{challenge}\ntoken\n{room}"),
        }
    }
}

/// How far apart the clocks of a rendezvous and a host may be: a token this long past its
/// expiry still holds.
pub const TOKEN_LEEWAY_SECS: u64 = 5;

/// How long a token lasts by default: a player's client asks for a new one before then.
pub const TOKEN_LIFETIME_SECS: u64 = 15 * 60;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(text.trim()).ok()
}

/// What went wrong with a key, a proof or the identity file.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// Not a public key (32 bytes, unpadded URL-safe base64).
    #[error("not a public key: {0:?}")]
    BadKey(String),
    /// The signature is not 64 bytes of unpadded URL-safe base64, or does not verify.
    #[error("the signature does not prove the key")]
    BadProof,
    /// The identity file could not be read or written.
    #[error("{path}: {reason}")]
    File {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// A player's public key: its name in the rendezvous's store and in tokens (`sub`), written
/// as unpadded URL-safe base64 (43 characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PublicKey(pub [u8; 32]);

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&b64(&self.0))
    }
}

impl std::str::FromStr for PublicKey {
    type Err = IdentityError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bytes = unb64(text).and_then(|b| <[u8; 32]>::try_from(b).ok());
        let key = bytes.ok_or_else(|| IdentityError::BadKey(text.chars().take(64).collect()))?;
        // A point off the curve is no key at all.
        ed25519_dalek::VerifyingKey::from_bytes(&key)
            .map_err(|_| IdentityError::BadKey(text.chars().take(64).collect()))?;
        Ok(PublicKey(key))
    }
}

impl Serialize for PublicKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PublicKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A player's key pair (see the module docs).
#[derive(Clone)]
pub struct Identity {
    key: ed25519_dalek::SigningKey,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret half stays out of logs.
        f.debug_struct("Identity").field("public_key", &self.public_key().to_string()).finish()
    }
}

/// The identity file: the key pair's secret seed, and its public key for people to read.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IdentityFile {
    version: u32,
    public_key: PublicKey,
    secret_seed: String,
}

impl Identity {
    /// A new key pair from the system's random source.
    pub fn generate() -> Identity {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("the system's random source");
        Identity::from_seed(seed)
    }

    /// The key pair of a 32-byte secret seed.
    pub fn from_seed(seed: [u8; 32]) -> Identity {
        Identity { key: ed25519_dalek::SigningKey::from_bytes(&seed) }
    }

    /// The secret seed as text (unpadded URL-safe base64): what a rendezvous keeps of its own
    /// signing key.
    pub fn secret_seed_text(&self) -> String {
        b64(self.key.as_bytes())
    }

    /// The key pair of a seed written by [`Identity::secret_seed_text`].
    pub fn from_secret_seed_text(text: &str) -> Option<Identity> {
        unb64(text).and_then(|s| <[u8; 32]>::try_from(s).ok()).map(Identity::from_seed)
    }

    /// The public half.
    pub fn public_key(&self) -> PublicKey {
        PublicKey(self.key.verifying_key().to_bytes())
    }

    /// The signature, unpadded URL-safe base64, that proves this key to whoever handed out
    /// `challenge`, for `purpose` alone ([`verify_proof`]).
    pub fn prove(&self, challenge: &str, purpose: Purpose<'_>) -> String {
        self.sign(PROOF_CONTEXT, &purpose.message(challenge))
    }

    /// Its signature of `message` in `context` (one context per use, so that a signature made
    /// for one can never pass for another), unpadded URL-safe base64 ([`verify_signed`]).
    pub fn sign(&self, context: &str, message: &str) -> String {
        b64(&self.key.sign(format!("{context}{message}").as_bytes()).to_bytes())
    }

    /// The key pair kept at `path`, made and written there (readable by its owner only) when
    /// there is none; and whether it was made now. A file that is there but does not parse is
    /// an error, never replaced: it is the player's name.
    pub fn load_or_create(path: &Path) -> Result<(Identity, bool), IdentityError> {
        let err = |reason: String| IdentityError::File { path: path.display().to_string(), reason };
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let file: IdentityFile =
                    serde_json::from_str(&text).map_err(|e| err(format!("not an identity: {e}")))?;
                let identity = Identity::from_secret_seed_text(&file.secret_seed)
                    .ok_or_else(|| err("its secret seed is not 32 bytes".into()))?;
                if identity.public_key() != file.public_key {
                    return Err(err("its public key is not that of its secret seed".into()));
                }
                restrict(path).map_err(|e| err(e.to_string()))?;
                Ok((identity, false))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let identity = Identity::generate();
                identity.save(path).map_err(|e| err(e.to_string()))?;
                Ok((identity, true))
            }
            Err(e) => Err(err(e.to_string())),
        }
    }

    /// Writes the key pair to `path` through a temporary file, readable by its owner only.
    fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = IdentityFile { version: 1, public_key: self.public_key(), secret_seed: self.secret_seed_text() };
        let text = serde_json::to_string_pretty(&file).map_err(std::io::Error::other)?;
        // A file of this process's own: two processes making their first key at once do not
        // write into one file (the last rename wins; the other goes on with its own key).
        let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        std::io::Write::write_all(&mut options.open(&tmp)?, text.as_bytes())?;
        std::fs::rename(&tmp, path)
    }
}

/// Makes `path` readable by its owner only (a copy made with wider rights is narrowed).
fn restrict(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path)?.permissions().mode();
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Whether `signature` ([`Identity::prove`]) proves `key` for `challenge` and `purpose`.
pub fn verify_proof(
    key: &PublicKey,
    challenge: &str,
    purpose: Purpose<'_>,
    signature: &str,
) -> Result<(), IdentityError> {
    verify_signed(key, PROOF_CONTEXT, &purpose.message(challenge), signature)
}

/// Whether `signature` is `key`'s of `message` in `context` ([`Identity::sign`]).
pub fn verify_signed(key: &PublicKey, context: &str, message: &str, signature: &str) -> Result<(), IdentityError> {
    let bytes = unb64(signature).and_then(|b| <[u8; 64]>::try_from(b).ok()).ok_or(IdentityError::BadProof)?;
    let verifying = ed25519_dalek::VerifyingKey::from_bytes(&key.0).map_err(|_| IdentityError::BadProof)?;
    let signature = ed25519_dalek::Signature::from_bytes(&bytes);
    verifying.verify_strict(format!("{context}{message}").as_bytes(), &signature).map_err(|_| IdentityError::BadProof)
}

/// What makes two nicknames one name, as people read them and as a room and the rendezvous
/// tell them apart ([`crate::session::same_nickname`]): the same but for case (Unicode lower
/// case), and the same when they look alike. Unicode's skeleton of the lower-cased name (UTS
/// #39's confusables: Cyrillic `а` is Latin `a`, `0` is `o`, `rn` is `m`, full-width letters
/// are the letters), lower-cased again.
pub fn nickname_key(nickname: &str) -> String {
    let lower: String = nickname.chars().flat_map(char::to_lowercase).collect();
    unicode_security::confusable_detection::skeleton(&lower).flat_map(char::to_lowercase).collect()
}

/// Why a nickname cannot be registered; `None` when it can: what a room would take as it is
/// ([`crate::session::clean_nickname`]), written in one script (Japanese may mix its own),
/// of letters, digits and marks that Unicode allows in identifiers (UTS #39), spaces and
/// ASCII punctuation: nothing invisible (zero-width joiners, fillers), no bidi controls, no
/// full-width look-alikes, no emoji.
pub fn nickname_problem(nickname: &str) -> Option<String> {
    use crate::session::{MAX_NICKNAME, clean_nickname};
    use unicode_security::{GeneralSecurityProfile as _, MixedScript as _};
    let chars = nickname.trim().chars().count();
    let disallowed = nickname.chars().find(|&c| !(c == ' ' || c.is_ascii_graphic() || c.identifier_allowed()));
    if chars == 0 {
        Some("a nickname cannot be empty".into())
    } else if chars > MAX_NICKNAME {
        Some(format!("a nickname has at most {MAX_NICKNAME} characters"))
    } else if nickname.chars().any(char::is_control) {
        Some("a nickname cannot hold control characters".into())
    } else if clean_nickname(nickname).as_deref() != Some(nickname) {
        Some("a nickname cannot begin or end with spaces, nor begin with @".into())
    } else if let Some(c) = disallowed {
        Some(format!(
            "a nickname cannot hold U+{:04X}: it is letters and digits, spaces and ASCII punctuation (nothing \
             invisible, no direction marks, look-alikes or emoji)",
            u32::from(c)
        ))
    } else if !nickname.is_single_script() {
        Some("a nickname is written in one script: it cannot mix, say, Latin and Cyrillic letters".into())
    } else {
        None
    }
}

/// What a rendezvous's token says (registered JWT claims, and the nickname).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Who issued it: the rendezvous's URL.
    pub iss: String,
    /// The player's public key ([`PublicKey`]'s text).
    pub sub: String,
    /// The room (lobby code) it admits the player to.
    pub aud: String,
    /// The nickname registered for the key.
    pub nick: String,
    /// Issued at, seconds since the Unix epoch.
    pub iat: u64,
    /// Good until, seconds since the Unix epoch.
    pub exp: u64,
}

/// Why a token was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a JWT, or its claims are not a rendezvous's.
    #[error("the token is malformed")]
    Malformed,
    /// Signed with a key the rendezvous does not publish (or not EdDSA).
    #[error("the token was signed by a key the rendezvous does not publish")]
    UnknownKey,
    /// The signature does not verify: forged or altered.
    #[error("the token's signature does not verify (forged or altered)")]
    Forged,
    /// Past its expiry.
    #[error("the token has expired")]
    Expired,
    /// Issued by another rendezvous.
    #[error("the token was issued by another rendezvous")]
    WrongIssuer,
    /// For another room.
    #[error("the token is for another room")]
    WrongRoom,
}

/// Signs tokens: a rendezvous's Ed25519 key.
#[derive(Clone)]
pub struct TokenSigner {
    issuer: String,
    kid: String,
    key: jsonwebtoken::EncodingKey,
    jwk: Jwk,
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSigner").field("issuer", &self.issuer).field("kid", &self.kid).finish()
    }
}

/// The PKCS #8 v1 wrapping of an Ed25519 secret seed (RFC 8410): what `jsonwebtoken` takes.
fn ed25519_pkcs8(seed: &[u8; 32]) -> Vec<u8> {
    const PREFIX: [u8; 16] =
        [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
    let mut der = PREFIX.to_vec();
    der.extend_from_slice(seed);
    der
}

impl TokenSigner {
    /// The signer of `issuer` (the rendezvous's URL) with the key pair `identity`.
    pub fn new(issuer: &str, identity: &Identity) -> TokenSigner {
        let key = jsonwebtoken::EncodingKey::from_ed_der(&ed25519_pkcs8(identity.key.as_bytes()));
        let public = identity.public_key();
        // The key's id: the first bytes of its public key, which is what a verifier looks up.
        let kid = b64(&public.0[..12]);
        let jwk = Jwk {
            common: jsonwebtoken::jwk::CommonParameters {
                public_key_use: Some(jsonwebtoken::jwk::PublicKeyUse::Signature),
                key_algorithm: Some(jsonwebtoken::jwk::KeyAlgorithm::EdDSA),
                key_id: Some(kid.clone()),
                ..Default::default()
            },
            algorithm: jsonwebtoken::jwk::AlgorithmParameters::OctetKeyPair(
                jsonwebtoken::jwk::OctetKeyPairParameters {
                    key_type: jsonwebtoken::jwk::OctetKeyPairType::OctetKeyPair,
                    curve: jsonwebtoken::jwk::EllipticCurve::Ed25519,
                    x: b64(&public.0),
                },
            ),
        };
        TokenSigner { issuer: issuer.to_owned(), kid, key, jwk }
    }

    /// Who it says issued its tokens.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// A token for `key` under `nick` in `room`, issued at `now` (seconds since the Unix
    /// epoch), good for `lifetime` seconds.
    pub fn issue(&self, key: &PublicKey, nick: &str, room: &str, now: u64, lifetime: u64) -> String {
        let claims = Claims {
            iss: self.issuer.clone(),
            sub: key.to_string(),
            aud: room.to_owned(),
            nick: nick.to_owned(),
            iat: now,
            exp: now.saturating_add(lifetime),
        };
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, &claims, &self.key).expect("an Ed25519 key signs whatever it is given")
    }

    /// The public key set a verifier fetches (`GET /.well-known/jwks.json`).
    pub fn jwks(&self) -> JwkSet {
        JwkSet { keys: vec![self.jwk.clone()] }
    }
}

/// What a host checks tokens against: a rendezvous's issuer name and the keys it publishes.
/// Checkpoints carry it to successors (never a token), so a host that took over checks as
/// the first one did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenKeys {
    /// The rendezvous's URL, as its tokens' `iss` names it.
    pub issuer: String,
    /// Its published keys.
    pub jwks: JwkSet,
}

impl TokenKeys {
    /// Checks `token` for `room` at `now` (seconds since the Unix epoch): its signature by one
    /// of the keys, its expiry (with [`TOKEN_LEEWAY_SECS`] for clocks that differ), issuer and
    /// audience; its claims when all hold.
    pub fn check(&self, token: &str, room: &str, now: u64) -> Result<Claims, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if header.alg != jsonwebtoken::Algorithm::EdDSA {
            return Err(TokenError::UnknownKey);
        }
        let jwk = match &header.kid {
            Some(kid) => self.jwks.find(kid),
            None => self.jwks.keys.first(),
        };
        let key = jwk.and_then(|k| jsonwebtoken::DecodingKey::from_jwk(k).ok()).ok_or(TokenError::UnknownKey)?;
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::EdDSA);
        // The expiry is checked against the `now` given, not the library's clock.
        validation.validate_exp = false;
        validation.set_audience(&[room]);
        validation.set_issuer(&[&self.issuer]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        use jsonwebtoken::errors::ErrorKind;
        match jsonwebtoken::decode::<Claims>(token, &key, &validation) {
            Ok(data) if data.claims.exp.saturating_add(TOKEN_LEEWAY_SECS) < now => Err(TokenError::Expired),
            Ok(data) => Ok(data.claims),
            Err(e) => Err(match e.kind() {
                ErrorKind::InvalidSignature => TokenError::Forged,
                ErrorKind::ExpiredSignature => TokenError::Expired,
                ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
                ErrorKind::InvalidAudience => TokenError::WrongRoom,
                ErrorKind::InvalidAlgorithm | ErrorKind::InvalidEddsaKey | ErrorKind::InvalidKeyFormat => {
                    TokenError::UnknownKey
                }
                _ => TokenError::Malformed,
            }),
        }
    }
}

/// A token as the rendezvous hands it out (`POST /identity/token`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IssuedToken {
    /// The JWT.
    pub token: String,
    /// The nickname it names.
    pub nickname: String,
    /// When it expires, seconds since the Unix epoch.
    pub expires_at: u64,
}

/// A challenge as the rendezvous hands it out (`POST /identity/challenge`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Challenge {
    /// What to sign ([`Identity::prove`]).
    pub challenge: String,
    /// When it stops being good, seconds since the Unix epoch.
    pub expires_at: u64,
}

#[cfg(any(feature = "webrtc", feature = "signal-server"))]
pub use fetch::{
    ReportAnswer, TokenEvent, TokenSource, TopEntry, fetch_places, fetch_token_keys, fetch_top, obtain_token,
    send_report,
};

/// A player's side of the rendezvous's identity routes, over plain HTTP.
#[cfg(any(feature = "webrtc", feature = "signal-server"))]
mod fetch {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::{Challenge, Identity, IssuedToken, Purpose, TokenKeys, unix_now};
    use crate::rounds::{RoundReport, RoundResults};
    use crate::signal::http_request;

    /// How long each request to the rendezvous may take.
    const TIMEOUT: Duration = Duration::from_secs(5);

    /// How long before its expiry a token is asked for again.
    const REFRESH_BEFORE_SECS: u64 = 60;

    /// How long after a failed refresh another is tried.
    const RETRY_SECS: u64 = 30;

    /// `(status, body)` of a request, the body's `error` when it has one.
    fn call(signal: &str, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String), String> {
        http_request(signal, method, path, body, TIMEOUT).map_err(|e| format!("the rendezvous at {signal}: {e}"))
    }

    fn error_of(status: u16, body: &str) -> String {
        let said = serde_json::from_str::<serde_json::Value>(body).ok();
        let why = said.as_ref().and_then(|v| v["error"].as_str()).map(str::to_owned);
        why.unwrap_or_else(|| format!("HTTP {status}"))
    }

    /// The keys the rendezvous at `signal` (`ws://HOST:PORT`) signs tokens with: what a host
    /// checks its players' tokens against. An error when it serves no identities.
    pub fn fetch_token_keys(signal: &str) -> Result<TokenKeys, String> {
        let (status, body) = call(signal, "GET", "/identity/keys", None)?;
        if status != 200 {
            return Err(format!("the rendezvous at {signal} serves no identities ({})", error_of(status, &body)));
        }
        serde_json::from_str(&body).map_err(|e| format!("the rendezvous's keys do not read: {e}"))
    }

    /// The places in the global top of the players with `keys` (those that have one), from
    /// the rendezvous at `signal` (`GET /top/places`).
    pub fn fetch_places(signal: &str, keys: &[String]) -> Result<std::collections::BTreeMap<String, u64>, String> {
        let path = format!("/top/places?keys={}", keys.join(","));
        let (status, body) = call(signal, "GET", &path, None)?;
        if status != 200 {
            return Err(format!("the rendezvous's top: {}", error_of(status, &body)));
        }
        let said: serde_json::Value = serde_json::from_str(&body).map_err(|e| format!("the top does not read: {e}"))?;
        let players = said["players"].as_array().cloned().unwrap_or_default();
        Ok(players.iter().filter_map(|p| Some((p["publicKey"].as_str()?.to_owned(), p["place"].as_u64()?))).collect())
    }

    /// A player's place in the global top, as `GET /top` lists it.
    #[derive(Clone, Debug, PartialEq, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct TopEntry {
        /// 1 for the best.
        pub place: u64,
        /// Its registered nickname.
        pub nickname: String,
        /// Its key.
        pub public_key: String,
        /// Its rating less three times its uncertainty: what the top is ordered by.
        pub skill: f64,
        /// Recorded rounds it played.
        pub rounds: u64,
    }

    /// The best `limit` players of the global top kept by the rendezvous at `signal`.
    pub fn fetch_top(signal: &str, limit: u32) -> Result<Vec<TopEntry>, String> {
        let (status, body) = call(signal, "GET", &format!("/top?limit={limit}"), None)?;
        if status != 200 {
            return Err(format!("the rendezvous at {signal} keeps no top ({})", error_of(status, &body)));
        }
        #[derive(serde::Deserialize)]
        struct Top {
            players: Vec<TopEntry>,
        }
        serde_json::from_str::<Top>(&body).map(|t| t.players).map_err(|e| format!("the top does not read: {e}"))
    }

    /// Asks for a challenge and sends `body(challenge, proof)` to `path`, the proof made for
    /// `purpose`.
    fn proven(
        signal: &str,
        identity: &Identity,
        path: &str,
        purpose: Purpose<'_>,
        body: impl Fn(&str, &str) -> serde_json::Value,
    ) -> Result<(u16, String), String> {
        let (status, text) = call(signal, "POST", "/identity/challenge", None)?;
        if status != 200 {
            return Err(format!("the rendezvous at {signal} serves no identities ({})", error_of(status, &text)));
        }
        let challenge: Challenge =
            serde_json::from_str(&text).map_err(|e| format!("a challenge that does not read: {e}"))?;
        let proof = identity.prove(&challenge.challenge, purpose);
        call(signal, "POST", path, Some(&body(&challenge.challenge, &proof).to_string()))
    }

    /// A token for `room` from the rendezvous at `signal`, for `identity`, registering
    /// `nickname` for it first when it has no name there. The error says why the player
    /// plays unverified (the name is another's, no rendezvous, …).
    pub fn obtain_token(signal: &str, room: &str, identity: &Identity, nickname: &str) -> Result<IssuedToken, String> {
        let key = identity.public_key().to_string();
        let token = || {
            proven(
                signal,
                identity,
                "/identity/token",
                Purpose::Token { room },
                |challenge, signature| serde_json::json!({ "publicKey": key, "room": room, "challenge": challenge, "signature": signature }),
            )
        };
        let (mut status, mut body) = token()?;
        if status == 404 {
            let (registered, said) = proven(
                signal,
                identity,
                "/identity/register",
                Purpose::Register { nickname },
                |challenge, signature| serde_json::json!({ "publicKey": key, "nickname": nickname, "challenge": challenge, "signature": signature }),
            )?;
            if registered != 201 {
                return Err(error_of(registered, &said));
            }
            (status, body) = token()?;
        }
        if status != 200 {
            return Err(error_of(status, &body));
        }
        serde_json::from_str(&body).map_err(|e| format!("a token that does not read: {e}"))
    }

    /// What the rendezvous said of a round report (`POST /rounds`).
    #[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ReportAnswer {
        /// The report was new (one sent again is kept once).
        pub kept: bool,
        /// How many verified players signed the same results so far.
        pub signed: u64,
        /// How many must: a strict majority of the round's verified players.
        pub needed: u64,
        /// How many addresses (homes) the players who signed took their tokens from, once
        /// they are enough players.
        #[serde(default)]
        pub homes_signed: Option<u64>,
        /// How many the round's verified players did: a strict majority must sign too.
        #[serde(default)]
        pub homes: Option<u64>,
        /// The round is recorded with these results.
        pub recorded: bool,
        /// This report recorded it.
        pub recorded_now: bool,
    }

    /// Sends `report` to the rendezvous at `signal` (`POST /rounds`).
    pub fn send_report(signal: &str, report: &RoundReport) -> Result<ReportAnswer, (u16, String)> {
        let body = serde_json::to_string(report).map_err(|e| (0, e.to_string()))?;
        let (status, text) = call(signal, "POST", "/rounds", Some(&body)).map_err(|e| (0, e))?;
        if status != 200 {
            return Err((status, error_of(status, &text)));
        }
        serde_json::from_str(&text).map_err(|e| (status, format!("an answer that does not read: {e}")))
    }

    /// How many times a round report is sent before it is given up (when the rendezvous
    /// cannot be reached, is busy or fails), and the wait before each try again.
    const REPORT_RETRIES: [Duration; 3] = [Duration::from_secs(1), Duration::from_secs(4), Duration::from_secs(15)];

    /// What a [`TokenSource`] has for its player.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum TokenEvent {
        /// A token to send the host (`AUTH_RESPONSE {"token": …}`): the first, or a refresh.
        Token(IssuedToken),
        /// No token: the player plays unverified, for this reason.
        Unverified(String),
        /// The player's signed copy of a round's results went to the rendezvous
        /// ([`TokenSource::report`]): what it said, or why it could not be sent.
        Reported {
            /// The round's id.
            round: String,
            /// The rendezvous's answer.
            answer: Result<ReportAnswer, String>,
        },
    }

    /// A player's tokens for one room, fetched on a thread of their own so that a join never
    /// waits for them, and fetched again a minute before each expires.
    #[derive(Debug)]
    pub struct TokenSource {
        signal: String,
        room: String,
        identity: Identity,
        nickname: String,
        pending: Option<mpsc::Receiver<Result<IssuedToken, String>>>,
        /// When to ask again (seconds since the Unix epoch); `None` after the player was
        /// told it plays unverified.
        next_at: Option<u64>,
        /// Whether a token came once: a failed refresh is tried again, quietly.
        had_one: bool,
        /// Where the round reports' threads send the rendezvous's answers, and where they are
        /// taken.
        answers: (mpsc::Sender<TokenEvent>, mpsc::Receiver<TokenEvent>),
        /// Round reports on their way (their answers not taken yet).
        reporting: usize,
    }

    impl TokenSource {
        /// Starts fetching a token for `room` from the rendezvous at `signal`.
        pub fn start(signal: &str, room: &str, identity: Identity, nickname: &str) -> TokenSource {
            let mut source = TokenSource {
                signal: signal.to_owned(),
                room: room.to_owned(),
                identity,
                nickname: nickname.to_owned(),
                pending: None,
                next_at: Some(0),
                had_one: false,
                answers: mpsc::channel(),
                reporting: 0,
            };
            source.fetch();
            source
        }

        fn fetch(&mut self) {
            let (tx, rx) = mpsc::channel();
            let (signal, room, identity, nickname) =
                (self.signal.clone(), self.room.clone(), self.identity.clone(), self.nickname.clone());
            let spawned = std::thread::Builder::new().name("vimp-token".into()).spawn(move || {
                let _ = tx.send(obtain_token(&signal, &room, &identity, &nickname));
            });
            self.pending = spawned.is_ok().then_some(rx);
            self.next_at = None;
        }

        /// The rendezvous it asks (`ws://HOST:PORT`).
        pub fn signal(&self) -> &str {
            &self.signal
        }

        /// The player's identity key.
        pub fn public_key(&self) -> super::PublicKey {
            self.identity.public_key()
        }

        /// Signs `results` (a round this player played, as its scoreboard showed it) and
        /// sends them to the rendezvous, on a thread of its own, trying again a few times
        /// when it cannot be reached or is busy; [`Self::poll`] tells what it said.
        pub fn report(&mut self, results: RoundResults) {
            let tx = self.answers.0.clone();
            let signal = self.signal.clone();
            let report = RoundReport::sign(results, &self.identity);
            let spawned = std::thread::Builder::new().name("vimp-report".into()).spawn(move || {
                let mut retries = REPORT_RETRIES.iter();
                let answer = loop {
                    match send_report(&signal, &report) {
                        Ok(answer) => break Ok(answer),
                        // Not reached, too many requests, or the rendezvous failed: again, later.
                        Err((status, why)) if status == 0 || status == 429 || status >= 500 => match retries.next() {
                            Some(wait) => std::thread::sleep(*wait),
                            None => break Err(why),
                        },
                        Err((_, why)) => break Err(why),
                    }
                };
                let _ = tx.send(TokenEvent::Reported { round: report.results.id.clone(), answer });
            });
            if spawned.is_ok() {
                self.reporting += 1;
            }
        }

        /// The answer to a round report on its way, waiting at most `timeout` for one; `None`
        /// when none is on its way or none came in time.
        pub fn wait_report(&mut self, timeout: Duration) -> Option<TokenEvent> {
            if self.reporting == 0 {
                return None;
            }
            let event = self.answers.1.recv_timeout(timeout).ok()?;
            self.reporting -= 1;
            Some(event)
        }

        /// What came since the last call, if anything; asks again when a token is due.
        pub fn poll(&mut self) -> Option<TokenEvent> {
            if let Ok(event) = self.answers.1.try_recv() {
                self.reporting = self.reporting.saturating_sub(1);
                return Some(event);
            }
            let now = unix_now();
            if self.pending.is_none() && self.next_at.is_some_and(|at| now >= at) {
                self.fetch();
            }
            let got = match self.pending.as_ref()?.try_recv() {
                Ok(got) => got,
                Err(mpsc::TryRecvError::Empty) => return None,
                Err(mpsc::TryRecvError::Disconnected) => Err("the token's fetch stopped".to_owned()),
            };
            self.pending = None;
            match got {
                Ok(token) => {
                    self.had_one = true;
                    self.next_at = Some(token.expires_at.saturating_sub(REFRESH_BEFORE_SECS).max(now + 1));
                    Some(TokenEvent::Token(token))
                }
                Err(_) if self.had_one => {
                    self.next_at = Some(now + RETRY_SECS);
                    None
                }
                Err(why) => Some(TokenEvent::Unverified(why)),
            }
        }
    }
}

/// Seconds since the Unix epoch now.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn signer() -> TokenSigner {
        TokenSigner::new("http://rendezvous.test:3536", &Identity::from_seed([9; 32]))
    }

    fn keys(signer: &TokenSigner) -> TokenKeys {
        // As a host gets them: the published set, through its JSON.
        let text = serde_json::to_string(&signer.jwks()).unwrap();
        TokenKeys { issuer: signer.issuer().to_owned(), jwks: serde_json::from_str(&text).unwrap() }
    }

    #[test]
    fn a_proof_verifies_for_its_key_challenge_and_purpose_only() {
        let (alice, bob) = (Identity::from_seed([1; 32]), Identity::from_seed([2; 32]));
        let room = Purpose::Token { room: "K7MP2Q" };
        let proof = alice.prove("c-123", room);
        assert!(verify_proof(&alice.public_key(), "c-123", room, &proof).is_ok());
        assert!(verify_proof(&alice.public_key(), "c-124", room, &proof).is_err());
        assert!(verify_proof(&bob.public_key(), "c-123", room, &proof).is_err());
        assert!(verify_proof(&alice.public_key(), "c-123", room, "not base64!").is_err());
        // For another room, or for a name: not this proof.
        assert!(verify_proof(&alice.public_key(), "c-123", Purpose::Token { room: "ABCDEF" }, &proof).is_err());
        assert!(verify_proof(&alice.public_key(), "c-123", Purpose::Register { nickname: "K7MP2Q" }, &proof).is_err());
        let name = alice.prove("c-123", Purpose::Register { nickname: "alice" });
        assert!(verify_proof(&alice.public_key(), "c-123", Purpose::Register { nickname: "alice" }, &name).is_ok());
        assert!(verify_proof(&alice.public_key(), "c-123", Purpose::Register { nickname: "Alice" }, &name).is_err());
        // A signature of the bare challenge (the old proofs) proves nothing.
        let bare = alice.sign("vimp-identity-v1:", "c-123");
        assert!(verify_proof(&alice.public_key(), "c-123", room, &bare).is_err());
    }

    #[test]
    fn a_public_key_reads_back_from_its_text_and_garbage_is_refused() {
        let key = Identity::from_seed([3; 32]).public_key();
        assert_eq!(key.to_string().len(), 43);
        assert_eq!(key.to_string().parse::<PublicKey>().unwrap(), key);
        for bad in ["", "abc", &"A".repeat(44), "!!!!"] {
            assert!(bad.parse::<PublicKey>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_token_is_checked_for_its_signature_expiry_issuer_and_room() {
        let signer = signer();
        let keys = keys(&signer);
        let player = Identity::from_seed([4; 32]).public_key();
        let now = unix_now();
        let token = signer.issue(&player, "Mallory", "K7MP2Q", now, 60);
        let claims = keys.check(&token, "K7MP2Q", now).unwrap();
        assert_eq!((claims.nick.as_str(), claims.sub.parse::<PublicKey>().unwrap()), ("Mallory", player));

        assert_eq!(keys.check(&token, "OTHER1", now), Err(TokenError::WrongRoom));
        // Past its expiry, beyond the leeway only.
        assert_eq!(keys.check(&token, "K7MP2Q", now + 60 + TOKEN_LEEWAY_SECS).map(|c| c.nick), Ok("Mallory".into()));
        assert_eq!(keys.check(&token, "K7MP2Q", now + 61 + TOKEN_LEEWAY_SECS), Err(TokenError::Expired));
        let elsewhere = TokenSigner::new("http://other.test", &Identity::from_seed([9; 32]));
        let foreign = elsewhere.issue(&player, "Mallory", "K7MP2Q", now, 60);
        assert_eq!(keys.check(&foreign, "K7MP2Q", now), Err(TokenError::WrongIssuer));
        // Another key under the same key id: the signature does not verify.
        let forger =
            TokenSigner { kid: signer.kid.clone(), ..TokenSigner::new(signer.issuer(), &Identity::from_seed([5; 32])) };
        let forged = forger.issue(&player, "Mallory", "K7MP2Q", now, 60);
        assert_eq!(keys.check(&forged, "K7MP2Q", now), Err(TokenError::Forged));
        // The claims altered after signing (another nickname).
        let mut parts: Vec<String> = token.split('.').map(str::to_owned).collect();
        let mut claims: serde_json::Value = serde_json::from_slice(&unb64(&parts[1]).unwrap()).unwrap();
        claims["nick"] = "Alice".into();
        parts[1] = b64(claims.to_string().as_bytes());
        assert_eq!(keys.check(&parts.join("."), "K7MP2Q", now), Err(TokenError::Forged));
        // A key the set does not have.
        let stranger = TokenSigner::new(signer.issuer(), &Identity::from_seed([6; 32]));
        let unknown = stranger.issue(&player, "Mallory", "K7MP2Q", now, 60);
        assert_eq!(keys.check(&unknown, "K7MP2Q", now), Err(TokenError::UnknownKey));
        // An unsigned token ("alg": "none").
        let none = format!("{}.{}.", b64(br#"{"alg":"none","typ":"JWT"}"#), parts[1]);
        assert!(keys.check(&none, "K7MP2Q", now).is_err());
    }

    #[test]
    fn the_identity_file_is_made_once_kept_private_and_never_replaced() {
        let dir = std::env::temp_dir().join(format!("vimp-identity-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("identity.json");
        let (first, made) = Identity::load_or_create(&path).unwrap();
        assert!(made);
        let (again, made) = Identity::load_or_create(&path).unwrap();
        assert!(!made);
        assert_eq!(first.public_key(), again.public_key());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        std::fs::write(&path, "{ broken").unwrap();
        let err = Identity::load_or_create(&path).unwrap_err().to_string();
        assert!(err.contains("identity.json") && err.contains("not an identity"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{ broken", "a broken file is kept as it is");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn nicknames_are_the_same_whatever_the_case_and_checked() {
        assert_eq!(nickname_key("MaLLory"), nickname_key("mallory"));
        assert_ne!(nickname_key("mallory"), nickname_key("mallory2"));
        assert!(nickname_problem("Mallory").is_none());
        for bad in ["", " x", "x ", "@x", "a\u{7}b", "abcdefghijklmnopq"] {
            assert!(nickname_problem(bad).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn names_that_look_alike_are_one_name_and_hidden_characters_are_refused() {
        // One key for what people read as one name.
        for (a, b) in [
            ("alice", "\u{430}lice"),
            ("alice", "\u{ff41}\u{ff4c}\u{ff49}\u{ff43}\u{ff45}"),
            ("bob", "B0B"),
            ("mary", "rnary"),
        ] {
            assert_eq!(nickname_key(a), nickname_key(b), "{a:?} and {b:?}");
        }
        assert_ne!(nickname_key("alice"), nickname_key("alicia"));
        // Each refused with what it holds.
        let refused = [
            ("\u{430}lice", "one script"),                          // Cyrillic а among Latin letters
            ("\u{ff41}\u{ff4c}\u{ff49}\u{ff43}\u{ff45}", "U+FF41"), // full-width
            ("a\u{200d}lice", "U+200D"),                            // a zero-width joiner
            ("al\u{200b}ice", "U+200B"),                            // a zero-width space
            ("\u{202e}ecila", "U+202E"),                            // right-to-left override
            ("x\u{2066}y", "U+2066"),                               // a bidi isolate
            ("\u{3164}", "U+3164"),                                 // a Hangul filler
            ("tank\u{1f600}", "U+1F600"),                           // an emoji
        ];
        for (name, why) in refused {
            let problem = nickname_problem(name).unwrap_or_else(|| panic!("{name:?} was taken"));
            assert!(problem.contains(why), "{name:?}: {problem}");
        }
        // Names in one script, accents, and a script that mixes its own, are taken.
        for good in [
            "Zo\u{eb}",
            "\u{418}\u{432}\u{430}\u{43d}",
            "\u{65e5}\u{672c}\u{8a9e}\u{30c6}\u{30b9}\u{30c8}",
            "tank_1-2",
            "Ann Lee",
        ] {
            assert_eq!(nickname_problem(good), None, "{good:?}");
        }
    }

    proptest! {
        #[test]
        fn garbage_tokens_are_refused_never_a_panic(text in ".{0,300}", dots in 0usize..4) {
            let keys = keys(&signer());
            let token = format!("{text}{}", ".".repeat(dots));
            prop_assert!(keys.check(&token, "K7MP2Q", 1_000).is_err());
            let _ = token.parse::<PublicKey>();
            let _ = verify_proof(&Identity::from_seed([1; 32]).public_key(), "c", Purpose::Token { room: "K7MP2Q" }, &token);
        }
    }
}
