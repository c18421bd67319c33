//! The rendezvous's identity routes, served beside its signalling (`vimp signal --db`).
//!
//! | route | body | answer |
//! |-------|------|--------|
//! | `POST /identity/challenge` | none | `{"challenge", "expiresAt"}`: a challenge to sign, good for a minute |
//! | `POST /identity/register` | `{"publicKey", "nickname", "challenge", "signature"}` | `{"nickname"}`; 409 when the name is taken |
//! | `POST /identity/token` | `{"publicKey", "room", "challenge", "signature"}` | `{"token", "nickname", "expiresAt"}`; 404 when the key has no name |
//! | `GET /identity/keys` | | `{"issuer", "jwks"}`: what a host checks tokens against |
//! | `GET /.well-known/jwks.json` | | the signing keys alone, as a JWKS |
//! | `GET /identity/{publicKey}` | | `{"publicKey", "nickname"}`; 404 |
//! | `POST /rounds` | a [`RoundReport`] | `{"kept", "signed", "needed", "homesSigned", "homes", "recorded", "recordedNow"}`: the round is recorded once a strict majority of its verified players, from a strict majority of their addresses (the homes, counted once the players are enough, else `null`), signed the same results; 403 when it lists a player who took no token for its room in the last day ([`ROOM_TOKEN_SECS`]) |
//! | `GET /top?limit=N&offset=M` | | `{"players": [Standing…]}`, best first (at most 100) |
//! | `GET /top/places?keys=K1,K2,…` | | `{"players": [Standing…]}`: the places of the given players that have any |
//!
//! A challenge is its expiry and a random nonce, signed with the rendezvous's own key, so that
//! any process sharing the database's key checks it. `signature` is the player's
//! [`Identity::prove`] of the challenge for what it asks: this nickname, or a token for this
//! room ([`Purpose`]); a proof taken for one is refused for any other. Each challenge is good
//! once: its nonce is spent in the database when a proof of it is taken (replayed, it is
//! refused), and forgotten once it has expired. Every refusal is a 4xx with `{"error":
//! "why"}`; every body is capped at [`MAX_BODY`] bytes and every address held to
//! [`RanksConfig::requests_per_second`].

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use vimp_netcode::identity::{
    Identity, PublicKey, Purpose, TOKEN_LIFETIME_SECS, TokenKeys, TokenSigner, nickname_problem, unix_now,
    verify_proof, verify_signed,
};
use vimp_netcode::lobby::LobbyCode;
use vimp_netcode::signal::PeerAddr;

use crate::store::{Registration, Standing, Store, StoreError};
use vimp_netcode::rounds::{MAX_ROUND_PLAYERS, RoundError, RoundReport};

/// The largest round report, bytes: 64 players' keys and scores, with room to spare.
pub const MAX_REPORT_BODY: usize = 32 * 1024;

/// The largest request body a route takes, bytes.
pub const MAX_BODY: usize = 4096;

/// How long a challenge is good for, seconds.
pub const CHALLENGE_SECS: u64 = 60;

/// How long after its last token for a room a player may be listed in that room's rounds,
/// seconds (a day: reports sent late, after a restart, still count).
pub const ROOM_TOKEN_SECS: u64 = 24 * 60 * 60;

/// What the rendezvous signs its challenges in (apart from anything a player signs).
const CHALLENGE_CONTEXT: &str = "vimp-challenge-v1:";

/// How the identity routes run.
#[derive(Clone, Debug, PartialEq)]
pub struct RanksConfig {
    /// Who its tokens say issued them (`iss`): the rendezvous's public URL, or a name.
    pub issuer: String,
    /// How long a token lasts, seconds.
    pub token_lifetime: u64,
    /// Requests one address may make a second, on average (bursts of twice that).
    pub requests_per_second: f64,
}

impl Default for RanksConfig {
    fn default() -> Self {
        RanksConfig { issuer: "vimp-signal".into(), token_lifetime: TOKEN_LIFETIME_SECS, requests_per_second: 20.0 }
    }
}

/// The value of `name` in `uri`'s query (`name=value`), as it is written.
fn query_value(uri: &axum::http::Uri, name: &str) -> Option<String> {
    uri.query()?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == name).then(|| v.to_owned())
    })
}

/// Where a request came from, as the signalling server puts it in the request's extensions.
type Peer = Option<axum::Extension<PeerAddr>>;

/// One address's allowance.
#[derive(Clone, Copy, Debug)]
struct Allowance {
    tokens: f64,
    at: Instant,
}

/// Requests per address: a token bucket each, forgotten once full again.
#[derive(Debug, Default)]
struct Limiter {
    by_address: HashMap<IpAddr, Allowance>,
    swept_at: Option<Instant>,
}

impl Limiter {
    fn allow(&mut self, ip: IpAddr, per_second: f64, now: Instant) -> bool {
        let capacity = 2.0 * per_second;
        if self.swept_at.is_none_or(|t| now.duration_since(t).as_secs_f64() * per_second >= capacity) {
            // Those that have filled up again are as good as new: forgotten.
            self.by_address.retain(|_, a| a.tokens + now.duration_since(a.at).as_secs_f64() * per_second < capacity);
            self.swept_at = Some(now);
        }
        let a = self.by_address.entry(ip).or_insert(Allowance { tokens: capacity, at: now });
        a.tokens = (a.tokens + now.duration_since(a.at).as_secs_f64() * per_second).min(capacity);
        a.at = now;
        if a.tokens >= 1.0 {
            a.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The identity service: the store, the rendezvous's key, and the limits.
#[derive(Debug)]
pub struct Ranks {
    store: Store,
    own: Identity,
    signer: TokenSigner,
    config: RanksConfig,
    limiter: Mutex<Limiter>,
}

/// A refusal: its status and why.
#[derive(Debug)]
pub struct Refusal(StatusCode, String);

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        (self.0, Json(serde_json::json!({ "error": self.1 }))).into_response()
    }
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        tracing::warn!("identity store: {e}");
        Refusal(StatusCode::SERVICE_UNAVAILABLE, "the rendezvous's store is unavailable".into())
    }
}

fn refuse(status: StatusCode, why: impl Into<String>) -> Refusal {
    Refusal(status, why.into())
}

/// `POST /identity/register`'s body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterRequest {
    /// The player's key.
    pub public_key: String,
    /// The name it asks for.
    pub nickname: String,
    /// A challenge from `POST /identity/challenge`.
    pub challenge: String,
    /// The key's proof of it ([`Identity::prove`]).
    pub signature: String,
}

/// `POST /identity/token`'s body.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenRequest {
    /// The player's key.
    pub public_key: String,
    /// The room (lobby code) the token admits it to.
    pub room: String,
    /// A challenge from `POST /identity/challenge`.
    pub challenge: String,
    /// The key's proof of it ([`Identity::prove`]).
    pub signature: String,
}

/// `POST /identity/token`'s answer.
pub use vimp_netcode::identity::IssuedToken as TokenAnswer;

/// `POST /identity/challenge`'s answer.
pub use vimp_netcode::identity::Challenge as ChallengeAnswer;

impl Ranks {
    /// The service over `store`, with the signing key the store keeps.
    pub async fn new(store: Store, config: RanksConfig) -> Result<Arc<Ranks>, StoreError> {
        let own = store.signing_identity(unix_now()).await?;
        let signer = TokenSigner::new(&config.issuer, &own);
        Ok(Arc::new(Ranks { store, own, signer, config, limiter: Mutex::default() }))
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// What hosts check its tokens against.
    pub fn token_keys(&self) -> TokenKeys {
        TokenKeys { issuer: self.signer.issuer().to_owned(), jwks: self.signer.jwks() }
    }

    /// A challenge good until `now + CHALLENGE_SECS`.
    pub fn challenge(&self, now: u64) -> ChallengeAnswer {
        let mut nonce = [0u8; 12];
        getrandom::fill(&mut nonce).expect("the system's random source");
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let expires_at = now + CHALLENGE_SECS;
        let payload = format!("{expires_at}.{nonce}");
        let signature = self.own.sign(CHALLENGE_CONTEXT, &payload);
        ChallengeAnswer { challenge: format!("{payload}.{signature}"), expires_at }
    }

    /// Checks that `challenge` is one of ours, still good at `now` and not spent, and that
    /// `signature` proves `key` for it and `purpose`; then spends it.
    async fn check_proof(
        &self,
        key: &str,
        challenge: &str,
        purpose: Purpose<'_>,
        signature: &str,
        now: u64,
    ) -> Result<PublicKey, Refusal> {
        let key: PublicKey = key.parse().map_err(|e| refuse(StatusCode::BAD_REQUEST, format!("{e}")))?;
        let bad = || refuse(StatusCode::UNAUTHORIZED, "not a challenge this rendezvous handed out");
        let (payload, ours) = challenge.rsplit_once('.').ok_or_else(bad)?;
        verify_signed(&self.own.public_key(), CHALLENGE_CONTEXT, payload, ours).map_err(|_| bad())?;
        let (expires_at, nonce) = payload.split_once('.').ok_or_else(bad)?;
        let expires_at: u64 = expires_at.parse().map_err(|_| bad())?;
        if now > expires_at {
            return Err(refuse(StatusCode::UNAUTHORIZED, "the challenge has expired: ask for another"));
        }
        verify_proof(&key, challenge, purpose, signature)
            .map_err(|_| refuse(StatusCode::UNAUTHORIZED, "the signature does not prove the key for what it asks"))?;
        if !self.store.spend_challenge(nonce, expires_at, now).await? {
            return Err(refuse(StatusCode::UNAUTHORIZED, "the challenge was used already: ask for another"));
        }
        Ok(key)
    }

    /// Registers a nickname for a key that proved itself.
    pub async fn register(&self, request: &RegisterRequest, now: u64) -> Result<String, Refusal> {
        if let Some(problem) = nickname_problem(&request.nickname) {
            return Err(refuse(StatusCode::BAD_REQUEST, problem));
        }
        let purpose = Purpose::Register { nickname: &request.nickname };
        let key = self.check_proof(&request.public_key, &request.challenge, purpose, &request.signature, now).await?;
        match self.store.register(&key, &request.nickname, now).await? {
            Registration::Registered => Ok(request.nickname.clone()),
            Registration::Taken => Err(refuse(
                StatusCode::CONFLICT,
                format!("the nickname {:?} is taken (names are the same whatever their case)", request.nickname),
            )),
            Registration::HasAnother(held) => {
                Err(refuse(StatusCode::CONFLICT, format!("this key is registered as {held:?} already")))
            }
        }
    }

    /// A token for a key that proved itself, for a room, asked from `address` (what the
    /// signalling server saw; `None` when it saw none).
    pub async fn token(
        &self,
        request: &TokenRequest,
        address: Option<IpAddr>,
        now: u64,
    ) -> Result<TokenAnswer, Refusal> {
        let purpose = Purpose::Token { room: &request.room };
        let key = self.check_proof(&request.public_key, &request.challenge, purpose, &request.signature, now).await?;
        let room = LobbyCode::parse(&request.room)
            .map_err(|e| refuse(StatusCode::BAD_REQUEST, format!("not a lobby code: {e}")))?;
        let nickname = self
            .store
            .nickname_of(&key)
            .await?
            .ok_or_else(|| refuse(StatusCode::NOT_FOUND, "this key has no nickname: register one first"))?;
        let token = self.signer.issue(&key, &nickname, room.as_str(), now, self.config.token_lifetime);
        let address = address.map_or_else(|| "unknown".to_owned(), |a| a.to_string());
        self.store.note_token(&key, room.as_str(), &address, now).await?;
        Ok(TokenAnswer { token, nickname, expires_at: now + self.config.token_lifetime })
    }

    /// Takes a player's signed copy of a round's results.
    pub async fn report(&self, report: &RoundReport, now: u64) -> Result<serde_json::Value, Refusal> {
        report.check().map_err(|e| match e {
            RoundError::Invalid(_) | RoundError::Disagrees(_) => refuse(StatusCode::BAD_REQUEST, e.to_string()),
            RoundError::NotAPlayer => refuse(StatusCode::FORBIDDEN, e.to_string()),
            RoundError::BadSignature => refuse(StatusCode::UNAUTHORIZED, e.to_string()),
        })?;
        LobbyCode::parse(&report.results.room)
            .map_err(|e| refuse(StatusCode::BAD_REQUEST, format!("not a lobby code: {e}")))?;
        let key: PublicKey = report.public_key.parse().map_err(|e| refuse(StatusCode::BAD_REQUEST, format!("{e}")))?;
        if self.store.nickname_of(&key).await?.is_none() {
            return Err(refuse(StatusCode::FORBIDDEN, "the reporter has no registered nickname"));
        }
        // A host may list only players who joined its room: each took a token for it here.
        let since = now.saturating_sub(ROOM_TOKEN_SECS);
        let strangers = self.store.strangers(&report.results, since).await?;
        if !strangers.is_empty() {
            let room = &report.results.room;
            return Err(refuse(
                StatusCode::FORBIDDEN,
                format!("the round lists players who took no token for room {room}: {}", strangers.join(", ")),
            ));
        }
        let outcome = self.store.report(report, now).await?;
        Ok(serde_json::json!({
            "kept": outcome.kept, "signed": outcome.signed, "needed": outcome.needed,
            "homesSigned": outcome.homes.map(|h| h.0), "homes": outcome.homes.map(|h| h.1),
            "recorded": outcome.recorded,
            "recordedNow": outcome.newly,
        }))
    }

    /// Whether one more request from `peer` (the address the signalling server saw) is within
    /// its rate.
    fn admit(&self, peer: &Peer) -> Result<(), Refusal> {
        let ip = peer.as_ref().map_or(IpAddr::from([0, 0, 0, 0]), |p| p.0.0.ip());
        let mut limiter = self.limiter.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if limiter.allow(ip, self.config.requests_per_second, Instant::now()) {
            Ok(())
        } else {
            Err(refuse(StatusCode::TOO_MANY_REQUESTS, "too many requests from this address: slow down"))
        }
    }

    /// The routes (see the module docs).
    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .route(
                "/identity/challenge",
                post(move |State(r): State<Arc<Ranks>>, p: Peer| async move {
                    r.admit(&p)?;
                    Ok::<_, Refusal>(Json(r.challenge(unix_now())))
                }),
            )
            .route(
                "/identity/register",
                post(move |State(r): State<Arc<Ranks>>, p: Peer, Json(body): Json<RegisterRequest>| async move {
                    r.admit(&p)?;
                    let nickname = r.register(&body, unix_now()).await?;
                    Ok::<_, Refusal>((StatusCode::CREATED, Json(serde_json::json!({ "nickname": nickname }))))
                }),
            )
            .route(
                "/identity/token",
                post(move |State(r): State<Arc<Ranks>>, p: Peer, Json(body): Json<TokenRequest>| async move {
                    r.admit(&p)?;
                    let address = p.as_ref().map(|p| p.0.0.ip());
                    Ok::<_, Refusal>(Json(r.token(&body, address, unix_now()).await?))
                }),
            )
            .route(
                "/identity/keys",
                get(move |State(r): State<Arc<Ranks>>, p: Peer| async move {
                    r.admit(&p)?;
                    Ok::<_, Refusal>(Json(r.token_keys()))
                }),
            )
            .route(
                "/.well-known/jwks.json",
                get(move |State(r): State<Arc<Ranks>>, p: Peer| async move {
                    r.admit(&p)?;
                    Ok::<_, Refusal>(Json(r.signer.jwks()))
                }),
            )
            .route(
                "/identity/{key}",
                get(move |State(r): State<Arc<Ranks>>, p: Peer, Path(key): Path<String>| async move {
                    r.admit(&p)?;
                    let parsed: PublicKey = key.parse().map_err(|e| refuse(StatusCode::BAD_REQUEST, format!("{e}")))?;
                    let nickname = r
                        .store
                        .nickname_of(&parsed)
                        .await?
                        .ok_or_else(|| refuse(StatusCode::NOT_FOUND, "no nickname is registered for this key"))?;
                    Ok::<_, Refusal>(Json(serde_json::json!({ "publicKey": key, "nickname": nickname })))
                }),
            )
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .merge(self.round_routes())
            .with_state(self.clone())
    }

    /// `POST /rounds` (its own body cap), `GET /top`, `GET /top/places`.
    fn round_routes(self: &Arc<Self>) -> Router<Arc<Ranks>> {
        Router::new()
            .route(
                "/rounds",
                post(move |State(r): State<Arc<Ranks>>, p: Peer, Json(body): Json<RoundReport>| async move {
                    r.admit(&p)?;
                    Ok::<_, Refusal>(Json(r.report(&body, unix_now()).await?))
                }),
            )
            .layer(DefaultBodyLimit::max(MAX_REPORT_BODY))
            .route(
                "/top",
                get(move |State(r): State<Arc<Ranks>>, p: Peer, uri: axum::http::Uri| async move {
                    r.admit(&p)?;
                    let number = |name: &str, default: u32| -> Result<u32, Refusal> {
                        match query_value(&uri, name) {
                            None => Ok(default),
                            Some(v) => {
                                v.parse().map_err(|_| refuse(StatusCode::BAD_REQUEST, format!("{name} is a number")))
                            }
                        }
                    };
                    let (limit, offset) = (number("limit", 20)?.min(100), number("offset", 0)?);
                    let players = r.store.top(limit, offset).await?;
                    Ok::<_, Refusal>(Json(serde_json::json!({ "players": players })))
                }),
            )
            .route(
                "/top/places",
                get(move |State(r): State<Arc<Ranks>>, p: Peer, uri: axum::http::Uri| async move {
                    r.admit(&p)?;
                    let keys = query_value(&uri, "keys").unwrap_or_default();
                    let keys: Vec<&str> = keys.split(',').filter(|k| !k.is_empty()).collect();
                    if keys.len() > MAX_ROUND_PLAYERS {
                        return Err(refuse(StatusCode::BAD_REQUEST, "at most 64 keys"));
                    }
                    let mut players: Vec<Standing> = Vec::new();
                    for key in keys {
                        let key: PublicKey =
                            key.parse().map_err(|e| refuse(StatusCode::BAD_REQUEST, format!("{e}")))?;
                        players.extend(r.store.standing(&key.to_string()).await?);
                    }
                    Ok::<_, Refusal>(Json(serde_json::json!({ "players": players })))
                }),
            )
    }
}
