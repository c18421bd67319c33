//! The rendezvous's store and identity routes, on SQLite files, on a real PostgreSQL (the
//! ignored tests: `.ci/run` starts one and names it in `VIMP_TEST_POSTGRES`), and over HTTP
//! through a real `SignalServer` on loopback.

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use vimp_netcode::identity::{Identity, Purpose, TokenError, TokenKeys, unix_now};
use vimp_netcode::rounds::{RoundPlayer, RoundReport, RoundResults};
use vimp_netcode::signal::{SignalConfig, SignalServer, http_request};
use vimp_ranks::service::{ChallengeAnswer, MAX_BODY, Ranks, RanksConfig, TokenAnswer};
use vimp_ranks::store::{Backend, Registration, Store};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// A SQLite file of its own for each test.
fn sqlite_path(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("vimp-ranks-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir.join("rendezvous.db").display().to_string()
}

/// A database of its own on the PostgreSQL `VIMP_TEST_POSTGRES` names (`postgres://…/postgres`).
async fn postgres_db(name: &str) -> String {
    let base = std::env::var("VIMP_TEST_POSTGRES")
        .expect("VIMP_TEST_POSTGRES names the PostgreSQL to test against (scripts/postgres.sh starts one)");
    sqlx::any::install_default_drivers();
    let admin = sqlx::AnyPool::connect(&base).await.expect("the test PostgreSQL answers");
    let db = format!("vimp_{name}_{}", std::process::id());
    let _ = sqlx::query(sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {db}"))).execute(&admin).await;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {db}"))).execute(&admin).await.unwrap();
    admin.close().await;
    let (root, _) = base.rsplit_once('/').expect("a URL with a database");
    format!("{root}/{db}")
}

/// What every store must do, whatever its database.
async fn registrations_hold(db: &str, backend: Backend) {
    let store = Store::open(db).await.unwrap();
    assert_eq!(store.backend(), backend);
    let (alice, bob) = (Identity::from_seed([1; 32]).public_key(), Identity::from_seed([2; 32]).public_key());
    assert_eq!(store.register(&alice, "Alice", 10).await.unwrap(), Registration::Registered);
    // The same again changes nothing; another case of the name is the same name.
    assert_eq!(store.register(&alice, "alice", 11).await.unwrap(), Registration::Registered);
    assert_eq!(store.register(&bob, "ALICE", 12).await.unwrap(), Registration::Taken);
    assert_eq!(store.register(&alice, "Alicia", 13).await.unwrap(), Registration::HasAnother("Alice".into()));
    assert_eq!(store.register(&bob, "Bob", 14).await.unwrap(), Registration::Registered);
    // A name that looks like one registered is that name: Cyrillic а, full-width letters.
    let mallory = Identity::from_seed([3; 32]).public_key();
    for alike in ["\u{430}lice", "\u{ff21}lice", "B0B"] {
        assert_eq!(store.register(&mallory, alike, 15).await.unwrap(), Registration::Taken, "{alike:?}");
    }
    assert_eq!(store.nickname_of(&alice).await.unwrap().as_deref(), Some("Alice"));
    assert_eq!(store.identities().await.unwrap(), 2);
    let key = store.signing_identity(20).await.unwrap().public_key();
    store.close().await;

    // Opened again (the migrations already applied): the same names and the same signing key.
    let store = Store::open(db).await.unwrap();
    assert_eq!(store.nickname_of(&bob).await.unwrap().as_deref(), Some("Bob"));
    assert_eq!(store.signing_identity(30).await.unwrap().public_key(), key);
    store.close().await;
}

/// Many registrations of one name at once: exactly one wins.
async fn one_name_one_winner(db: &str) {
    let store = Store::open(db).await.unwrap();
    let tries = (0..24u8).map(|i| {
        let store = store.clone();
        tokio::spawn(async move {
            let key = Identity::from_seed([100 + i; 32]).public_key();
            let name = if i % 2 == 0 { "Racer" } else { "rAcEr" };
            store.register(&key, name, u64::from(i)).await.unwrap()
        })
    });
    let mut won = 0;
    for t in tries {
        won += usize::from(t.await.unwrap() == Registration::Registered);
    }
    assert_eq!(won, 1);
    store.close().await;
}

/// A round of `players` (teams 1 and 2 alternately, team 1 winning) with an unverified player.
fn round(id: &str, players: &[&Identity]) -> RoundResults {
    let mut list: Vec<RoundPlayer> = players
        .iter()
        .enumerate()
        .map(|(i, p)| RoundPlayer {
            key: Some(p.public_key().to_string()),
            team: 1 + (i % 2) as u8,
            score: 10 - i as i64,
        })
        .collect();
    list.push(RoundPlayer { key: None, team: 2, score: 1 });
    RoundResults { id: id.into(), room: "K7MP2Q".into(), winner: 1, players: list }
}

/// What every store must do with rounds: a strict majority records, a lone liar does not, a
/// report sent again counts once, ratings move once per recorded round.
async fn rounds_hold(db: &str) {
    let store = Store::open(db).await.unwrap();
    let players: Vec<Identity> = (0..3).map(|i| Identity::from_seed([40 + i; 32])).collect();
    for (i, p) in players.iter().enumerate() {
        store.register(&p.public_key(), &format!("p{i}"), 1).await.unwrap();
    }
    let refs: Vec<&Identity> = players.iter().collect();
    let honest = round("m1-r1", &refs);
    // The host (player 0) lies: it says team 2 won.
    let lie = RoundResults { winner: 2, ..honest.clone() };
    let first = store.report(&RoundReport::sign(lie, &players[0]), 10).await.unwrap();
    assert_eq!((first.signed, first.needed, first.recorded), (1, 2, false));
    let second = store.report(&RoundReport::sign(honest.clone(), &players[1]), 11).await.unwrap();
    assert_eq!((second.signed, second.recorded), (1, false), "one honest copy is no majority");
    let again = store.report(&RoundReport::sign(honest.clone(), &players[1]), 12).await.unwrap();
    assert_eq!((again.kept, again.signed, again.recorded), (false, 1, false), "sent again, counted once");
    let third = store.report(&RoundReport::sign(honest.clone(), &players[2]), 13).await.unwrap();
    assert_eq!((third.signed, third.recorded, third.newly), (2, true, true));
    // The liar's copy, sent again after: the round stays as the majority had it.
    let late = store.report(&RoundReport::sign(RoundResults { winner: 2, ..honest.clone() }, &players[0]), 14).await;
    assert!(!late.unwrap().recorded);
    assert_eq!(store.rounds().await.unwrap(), (1, 3));
    let top = store.top(10, 0).await.unwrap();
    assert_eq!(top.len(), 3);
    // Team 1 (players 0 and 2) won: above player 1, each with one round.
    assert_eq!(top[2].nickname, "p1", "{top:?}");
    assert!(top.iter().all(|s| s.rounds == 1), "{top:?}");
    let standing = store.standing(&players[1].public_key().to_string()).await.unwrap().unwrap();
    assert_eq!(standing.place, 3);
    store.close().await;
}

/// What every store must do with homes: identities one host made and had join from its own
/// address count as one home, and a round is recorded only when its signers are a majority of
/// its homes too.
async fn homes_hold(db: &str) {
    let store = Store::open(db).await.unwrap();
    let people: Vec<Identity> = (0..5).map(|i| Identity::from_seed([120 + i; 32])).collect();
    // The host and two identities of its own, at one address; two friends, each at home.
    let addresses = ["198.51.100.1", "198.51.100.1", "198.51.100.1", "203.0.113.2", "203.0.113.3"];
    for (i, (p, address)) in people.iter().zip(addresses).enumerate() {
        store.register(&p.public_key(), &format!("h{i}"), 1).await.unwrap();
        store.note_token(&p.public_key(), "K7MP2Q", address, 2).await.unwrap();
    }
    let honest = round("m5-r1", &people.iter().collect::<Vec<_>>());
    let lie = RoundResults { winner: 2, ..honest.clone() };
    let mut last = None;
    for p in &people[..3] {
        last = Some(store.report(&RoundReport::sign(lie.clone(), p), 10).await.unwrap());
    }
    let last = last.unwrap();
    assert_eq!((last.signed, last.needed, last.homes, last.recorded), (3, 3, Some((1, 3)), false), "one home of three");
    for p in &people[3..] {
        assert!(!store.report(&RoundReport::sign(honest.clone(), p), 11).await.unwrap().recorded);
    }
    assert_eq!(store.rounds().await.unwrap().0, 0, "neither copy holds both majorities");

    // Friends who share a home: recorded once a player from another home signs too.
    let three: Vec<&Identity> = vec![&people[0], &people[1], &people[3]];
    let results = round("m5-r2", &three);
    let first = store.report(&RoundReport::sign(results.clone(), three[0]), 20).await.unwrap();
    let second = store.report(&RoundReport::sign(results.clone(), three[1]), 21).await.unwrap();
    assert_eq!((first.homes, second.signed, second.homes, second.recorded), (None, 2, Some((1, 2)), false));
    let third = store.report(&RoundReport::sign(results, three[2]), 22).await.unwrap();
    assert_eq!((third.homes, third.recorded, third.newly), (Some((2, 2)), true, true));
    store.close().await;
}

#[test]
fn sqlite_counts_a_host_s_own_identities_as_one_home() {
    runtime().block_on(homes_hold(&sqlite_path("homes")));
}

#[test]
#[ignore = "needs a PostgreSQL: VIMP_TEST_POSTGRES=postgres://… (scripts/postgres.sh)"]
fn postgres_counts_a_host_s_own_identities_as_one_home() {
    runtime().block_on(async { homes_hold(&postgres_db("homes").await).await });
}

#[test]
fn sqlite_records_a_round_its_majority_signed_and_rates_it_once() {
    runtime().block_on(rounds_hold(&sqlite_path("rounds")));
}

#[test]
#[ignore = "needs a PostgreSQL: VIMP_TEST_POSTGRES=postgres://… (scripts/postgres.sh)"]
fn postgres_records_a_round_its_majority_signed_and_rates_it_once() {
    runtime().block_on(async {
        rounds_hold(&postgres_db("rounds").await).await;
        // Reports of one round at once, from every player: recorded once, rated once.
        let store = Store::open(&postgres_db("rounds_race").await).await.unwrap();
        let players: Vec<Identity> = (0..9).map(|i| Identity::from_seed([60 + i; 32])).collect();
        for (i, p) in players.iter().enumerate() {
            store.register(&p.public_key(), &format!("r{i}"), 1).await.unwrap();
        }
        let results = round("m2-r1", &players.iter().collect::<Vec<_>>());
        let sends = players.iter().map(|p| {
            let (store, report) = (store.clone(), RoundReport::sign(results.clone(), p));
            tokio::spawn(async move { store.report(&report, 20).await.unwrap() })
        });
        let mut newly = 0;
        for s in sends {
            newly += usize::from(s.await.unwrap().newly);
        }
        assert_eq!(newly, 1);
        assert_eq!(store.rounds().await.unwrap(), (1, 9));
        assert!(store.top(20, 0).await.unwrap().iter().all(|s| s.rounds == 1));
        store.close().await;
    });
}

#[test]
fn sqlite_keeps_one_name_per_key_and_one_key_per_name() {
    let db = sqlite_path("registrations");
    runtime().block_on(registrations_hold(&db, Backend::Sqlite));
    // It holds the rendezvous's signing key: its owner's alone.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        for file in [db.clone(), format!("{db}-wal")] {
            let mode = std::fs::metadata(&file).map(|m| m.permissions().mode() & 0o777);
            assert!(matches!(mode, Ok(0o600) | Err(_)), "{file}: {mode:?}");
        }
        assert_eq!(std::fs::metadata(&db).unwrap().permissions().mode() & 0o777, 0o600);
    }
    runtime().block_on(one_name_one_winner(&sqlite_path("race")));
}

/// Names registered under the old keys (lower case alone) are keyed again once, by look: of two
/// that now look alike the first registered keeps the key, the second its name, and no third
/// like them gets in.
#[test]
fn names_registered_before_the_look_alike_rules_are_keyed_again_once() {
    use sqlx::Row as _;
    let db = sqlite_path("rekey");
    let (mary, rnary, third) = [7u8, 8, 9].map(|seed| Identity::from_seed([seed; 32]).public_key()).into();
    runtime().block_on(async {
        let store = Store::open(&db).await.unwrap();
        store.close().await;
        // As an older store left it: lower-cased keys, and no note of the rules.
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&format!("sqlite://{db}")).await.unwrap();
        for (key, name, at) in [(&mary, "Mary", 1i64), (&rnary, "rnary", 2)] {
            sqlx::query(
                "INSERT INTO identities (public_key, nickname, nickname_key, registered_at) VALUES ($1, $2, $3, $4)",
            )
            .bind(key.to_string())
            .bind(name)
            .bind(name.to_lowercase())
            .bind(at)
            .execute(&pool)
            .await
            .unwrap();
        }
        sqlx::query("DELETE FROM store_meta").execute(&pool).await.unwrap();
        pool.close().await;

        let store = Store::open(&db).await.unwrap();
        assert_eq!(store.nickname_of(&mary).await.unwrap().as_deref(), Some("Mary"));
        assert_eq!(store.nickname_of(&rnary).await.unwrap().as_deref(), Some("rnary"), "kept its name");
        assert_eq!(store.register(&third, "MARY", 3).await.unwrap(), Registration::Taken);
        assert_eq!(store.register(&third, "rnary", 3).await.unwrap(), Registration::Taken);
        assert_eq!(store.register(&rnary, "rnary", 4).await.unwrap(), Registration::Registered, "still its own");
        store.close().await;
        let pool = sqlx::AnyPool::connect(&format!("sqlite://{db}")).await.unwrap();
        let keys: Vec<String> = sqlx::query("SELECT nickname_key FROM identities ORDER BY registered_at")
            .fetch_all(&pool)
            .await
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        assert_eq!(keys[0], "rnary", "the first registered holds the key");
        assert!(keys[1].starts_with("rnary\u{1f}"), "{keys:?}");
        pool.close().await;
    });
}

/// A database found open to other users (a copy, a file made by hand) is its owner's alone
/// once opened, its journal too.
#[cfg(unix)]
#[test]
fn sqlite_files_found_open_to_others_are_tightened() {
    use std::os::unix::fs::PermissionsExt as _;
    let db = sqlite_path("found-open");
    runtime().block_on(async {
        let store = Store::open(&db).await.unwrap();
        store.close().await;
    });
    let open = std::fs::Permissions::from_mode(0o644);
    std::fs::set_permissions(&db, open.clone()).unwrap();
    std::fs::write(format!("{db}-wal"), b"").unwrap();
    std::fs::set_permissions(format!("{db}-wal"), open).unwrap();
    runtime().block_on(async {
        let store = Store::open(&db).await.unwrap();
        store.close().await;
    });
    for file in [db.clone(), format!("{db}-wal")] {
        let mode = std::fs::metadata(&file).map(|m| m.permissions().mode() & 0o777);
        assert!(matches!(mode, Ok(0o600) | Err(_)), "{file}: {mode:?}");
    }
    assert_eq!(std::fs::metadata(&db).unwrap().permissions().mode() & 0o777, 0o600);
    // Named by URL alike.
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o640)).unwrap();
    runtime().block_on(async {
        let store = Store::open(&format!("sqlite://{db}")).await.unwrap();
        store.close().await;
    });
    assert_eq!(std::fs::metadata(&db).unwrap().permissions().mode() & 0o777, 0o600);
}

#[test]
#[ignore = "needs a PostgreSQL: VIMP_TEST_POSTGRES=postgres://… (scripts/postgres.sh)"]
fn postgres_keeps_one_name_per_key_and_one_key_per_name() {
    runtime().block_on(async {
        let db = postgres_db("registrations").await;
        registrations_hold(&db, Backend::Postgres).await;
        one_name_one_winner(&postgres_db("race").await).await;
    });
}

#[test]
fn a_database_url_it_does_not_speak_is_refused_by_name() {
    let err = runtime().block_on(Store::open("mysql://localhost/x")).unwrap_err().to_string();
    assert!(err.contains("mysql://localhost/x") && err.contains("not a database"), "{err}");
}

/// A rendezvous with identity routes on loopback, over a SQLite file.
struct Rendezvous {
    server: SignalServer,
    ranks: Arc<Ranks>,
    _runtime: tokio::runtime::Runtime,
}

fn rendezvous(name: &str, config: RanksConfig) -> Rendezvous {
    rendezvous_behind(name, config, Vec::new())
}

/// A rendezvous that takes the requests of `proxies` as their `X-Forwarded-For` says.
fn rendezvous_behind(name: &str, config: RanksConfig, proxies: Vec<std::net::IpAddr>) -> Rendezvous {
    let runtime = runtime();
    let ranks = runtime.block_on(async {
        let store = Store::open(&sqlite_path(name)).await.unwrap();
        Ranks::new(store, config).await.unwrap()
    });
    let config =
        SignalConfig { bind: "127.0.0.1:0".parse().unwrap(), trusted_proxies: proxies, ..SignalConfig::default() };
    let server = SignalServer::start_with(config, ranks.router()).unwrap();
    Rendezvous { server, ranks, _runtime: runtime }
}

impl Rendezvous {
    fn call(&self, method: &str, path: &str, body: Option<&str>) -> (u16, serde_json::Value) {
        let (status, text) = http_request(&self.server.url(), method, path, body, Duration::from_secs(10)).unwrap();
        (status, serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text)))
    }

    fn challenge(&self) -> String {
        let (status, body) = self.call("POST", "/identity/challenge", None);
        assert_eq!(status, 200, "{body}");
        serde_json::from_value::<ChallengeAnswer>(body).unwrap().challenge
    }

    fn register(&self, who: &Identity, nickname: &str) -> (u16, serde_json::Value) {
        let challenge = self.challenge();
        let body = serde_json::json!({
            "publicKey": who.public_key(), "nickname": nickname, "challenge": challenge,
            "signature": who.prove(&challenge, Purpose::Register { nickname }),
        });
        self.call("POST", "/identity/register", Some(&body.to_string()))
    }

    fn token(&self, who: &Identity, room: &str) -> (u16, serde_json::Value) {
        let challenge = self.challenge();
        let body = serde_json::json!({
            "publicKey": who.public_key(), "room": room, "challenge": challenge,
            "signature": who.prove(&challenge, Purpose::Token { room }),
        });
        self.call("POST", "/identity/token", Some(&body.to_string()))
    }
}

#[test]
fn a_player_registers_a_name_and_gets_tokens_a_host_checks() {
    let rv = rendezvous("http", RanksConfig::default());
    let (alice, mallory) = (Identity::from_seed([7; 32]), Identity::from_seed([8; 32]));
    let (status, body) = rv.register(&alice, "Alice");
    assert_eq!((status, body["nickname"].as_str()), (201, Some("Alice")), "{body}");
    // The name, whatever its case, is hers.
    let (status, body) = rv.register(&mallory, "aLiCe");
    assert_eq!(status, 409, "{body}");
    assert!(body["error"].as_str().unwrap().contains("taken"), "{body}");
    // No name, no token.
    let (status, body) = rv.token(&mallory, "K7MP2Q");
    assert_eq!(status, 404, "{body}");
    assert!(body["error"].as_str().unwrap().contains("register"), "{body}");

    let (status, body) = rv.token(&alice, "k7mp2q");
    assert_eq!(status, 200, "{body}");
    let answer: TokenAnswer = serde_json::from_value(body).unwrap();
    assert_eq!(answer.nickname, "Alice");
    // A host checks it against the keys the rendezvous publishes.
    let (status, keys) = rv.call("GET", "/identity/keys", None);
    assert_eq!(status, 200);
    let keys: TokenKeys = serde_json::from_value(keys).unwrap();
    let claims = keys.check(&answer.token, "K7MP2Q", unix_now()).unwrap();
    assert_eq!((claims.nick.as_str(), claims.sub), ("Alice", alice.public_key().to_string()));
    assert_eq!(keys.check(&answer.token, "OTHER2", unix_now()), Err(TokenError::WrongRoom));
    let (status, jwks) = rv.call("GET", "/.well-known/jwks.json", None);
    assert_eq!(
        (status, jwks["keys"][0]["crv"].as_str(), jwks["keys"][0]["alg"].as_str()),
        (200, Some("Ed25519"), Some("EdDSA"))
    );
    assert_eq!(rv.ranks.token_keys(), keys);
    let (status, who) = rv.call("GET", &format!("/identity/{}", alice.public_key()), None);
    assert_eq!((status, who["nickname"].as_str()), (200, Some("Alice")));
}

#[test]
fn a_player_s_client_registers_its_name_on_first_use_and_refreshes_its_token() {
    use vimp_netcode::identity::{TokenEvent, TokenSource, fetch_token_keys, obtain_token};
    let rv = rendezvous("client", RanksConfig::default());
    let url = rv.server.url();
    let (ann, eve) = (Identity::from_seed([21; 32]), Identity::from_seed([22; 32]));
    // First use: no name yet, so it registers the one it plays under.
    let token = obtain_token(&url, "K7MP2Q", &ann, "Ann").unwrap();
    let keys = fetch_token_keys(&url).unwrap();
    assert_eq!(keys.check(&token.token, "K7MP2Q", unix_now()).unwrap().nick, "Ann");
    // Another name asked later is not taken: the key keeps the one it registered.
    assert_eq!(obtain_token(&url, "K7MP2Q", &ann, "Annie").unwrap().nickname, "Ann");
    // Someone else asking for her name plays unverified, and is told why.
    let why = obtain_token(&url, "K7MP2Q", &eve, "ANN").unwrap_err();
    assert!(why.contains("taken"), "{why}");

    // The source hands over a token without the caller waiting for it.
    let mut source = TokenSource::start(&url, "K7MP2Q", ann.clone(), "Ann");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let got = loop {
        if let Some(event) = source.poll() {
            break event;
        }
        assert!(std::time::Instant::now() < deadline, "no token came");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(matches!(&got, TokenEvent::Token(t) if t.nickname == "Ann"), "{got:?}");
    let mut eves = TokenSource::start(&url, "K7MP2Q", eve, "ann");
    let got = loop {
        if let Some(event) = eves.poll() {
            break event;
        }
        assert!(std::time::Instant::now() < deadline, "no answer came");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(matches!(&got, TokenEvent::Unverified(why) if why.contains("taken")), "{got:?}");
    // No rendezvous with identities: unverified, and why.
    let plain =
        SignalServer::start(SignalConfig { bind: "127.0.0.1:0".parse().unwrap(), ..SignalConfig::default() }).unwrap();
    let why = obtain_token(&plain.url(), "K7MP2Q", &ann, "Ann").unwrap_err();
    assert!(why.contains("serves no identities"), "{why}");
    assert!(fetch_token_keys(&plain.url()).is_err());
}

#[test]
fn rounds_reported_over_http_make_the_top() {
    let rv = rendezvous("top", RanksConfig { requests_per_second: 1e6, ..RanksConfig::default() });
    let players: Vec<Identity> = (0..3).map(|i| Identity::from_seed([80 + i; 32])).collect();
    for (i, p) in players.iter().enumerate() {
        assert_eq!(rv.register(p, &format!("Top{i}")).0, 201);
    }
    let results = round("m9-r1", &players.iter().collect::<Vec<_>>());
    let send = |report: &RoundReport| rv.call("POST", "/rounds", Some(&serde_json::to_string(report).unwrap()));
    // Players who never joined the room (no token for it): a host may not list them.
    assert_eq!(rv.token(&players[0], "K7MP2Q").0, 200);
    assert_eq!(rv.token(&players[2], "H7MP3R").0, 200);
    let (status, body) = send(&RoundReport::sign(results.clone(), &players[0]));
    let why = body["error"].as_str().unwrap_or_default();
    assert_eq!(status, 403, "{body}");
    assert!(
        why.contains("no token for room K7MP2Q")
            && why.contains(&players[1].public_key().to_string())
            && why.contains(&players[2].public_key().to_string())
            && !why.contains(&players[0].public_key().to_string()),
        "{why}"
    );
    for p in &players {
        assert_eq!(rv.token(p, "K7MP2Q").0, 200);
    }
    let (status, body) = send(&RoundReport::sign(results.clone(), &players[0]));
    assert_eq!((status, body["recorded"].as_bool(), body["needed"].as_u64()), (200, Some(false), Some(2)), "{body}");
    // A stranger's copy, and a copy altered after signing: refused with why.
    let stranger = Identity::from_seed([99; 32]);
    assert_eq!(rv.register(&stranger, "Stranger").0, 201);
    let (status, body) = send(&RoundReport::sign(results.clone(), &stranger));
    assert_eq!(status, 403, "{body}");
    let mut altered = RoundReport::sign(results.clone(), &players[1]);
    altered.results.players[0].score = 1000;
    assert_eq!(send(&altered).0, 401);
    let (status, body) = send(&RoundReport::sign(results.clone(), &players[1]));
    assert_eq!((status, body["recorded"].as_bool()), (200, Some(true)), "{body}");

    let (status, top) = rv.call("GET", "/top?limit=2", None);
    assert_eq!(status, 200, "{top}");
    let listed = top["players"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!((listed[0]["place"].as_u64(), listed[1]["place"].as_u64()), (Some(1), Some(2)));
    let keys: Vec<String> = players.iter().map(|p| p.public_key().to_string()).collect();
    let (status, places) = rv.call("GET", &format!("/top/places?keys={},{}", keys[1], stranger.public_key()), None);
    assert_eq!(status, 200, "{places}");
    let places = places["players"].as_array().unwrap();
    assert_eq!(places.len(), 1, "the stranger played no recorded round: {places:?}");
    assert_eq!((places[0]["nickname"].as_str(), places[0]["place"].as_u64()), (Some("Top1"), Some(3)));
    assert_eq!(rv.call("GET", "/top?limit=x", None).0, 400);
}

#[test]
fn proofs_that_do_not_hold_are_refused_with_their_reason() {
    let rv = rendezvous("proofs", RanksConfig::default());
    let (alice, mallory) = (Identity::from_seed([9; 32]), Identity::from_seed([10; 32]));
    let challenge = rv.challenge();
    let ask = |key: &Identity, challenge: &str, signature: String| {
        let body = serde_json::json!({
            "publicKey": key.public_key(), "nickname": "Alice", "challenge": challenge, "signature": signature,
        });
        rv.call("POST", "/identity/register", Some(&body.to_string()))
    };
    // Mallory signs for Alice's key.
    let for_alice = Purpose::Register { nickname: "Alice" };
    let (status, body) = ask(&alice, &challenge, mallory.prove(&challenge, for_alice));
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("does not prove"), "{body}");
    // A challenge of her own making.
    let forged = format!("{}.abcdef.{}", unix_now() + 60, mallory.sign("vimp-challenge-v1:", "x"));
    let (status, body) = ask(&mallory, &forged, mallory.prove(&forged, for_alice));
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("not a challenge"), "{body}");
    // A bad nickname.
    let challenge = rv.challenge();
    let body = serde_json::json!({
        "publicKey": alice.public_key(), "nickname": "@host", "challenge": challenge,
        "signature": alice.prove(&challenge, Purpose::Register { nickname: "@host" }),
    });
    let (status, body) = rv.call("POST", "/identity/register", Some(&body.to_string()));
    assert_eq!(status, 400, "{body}");
    // A room that is no lobby code.
    rv.register(&alice, "Alice");
    let (status, body) = rv.token(&alice, "not a room!");
    assert_eq!(status, 400, "{body}");
}

/// A proof is for what it was made for, once: replayed, or taken to another room or name, it
/// is refused (an on-path reader of one request gets nothing it can use).
#[test]
fn a_proof_is_good_once_and_for_its_own_purpose() {
    let rv = rendezvous("purpose", RanksConfig::default());
    let (alice, bob) = (Identity::from_seed([12; 32]), Identity::from_seed([13; 32]));
    assert_eq!(rv.register(&alice, "Alice").0, 201);
    let post = |path: &str, body: serde_json::Value| rv.call("POST", path, Some(&body.to_string()));
    // A token for K7MP2Q, asked once: the same challenge and proof again are refused.
    let challenge = rv.challenge();
    let proof = alice.prove(&challenge, Purpose::Token { room: "K7MP2Q" });
    let ask = serde_json::json!({
        "publicKey": alice.public_key(), "room": "K7MP2Q", "challenge": challenge, "signature": proof,
    });
    let (status, body) = post("/identity/token", ask.clone());
    assert_eq!(status, 200, "{body}");
    let (status, body) = post("/identity/token", ask);
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("used already"), "{body}");
    // A fresh proof for one room, taken to another: refused, and the challenge is not spent.
    let challenge = rv.challenge();
    let proof = alice.prove(&challenge, Purpose::Token { room: "K7MP2Q" });
    let elsewhere = serde_json::json!({
        "publicKey": alice.public_key(), "room": "ABCDEF", "challenge": challenge, "signature": proof,
    });
    let (status, body) = post("/identity/token", elsewhere);
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("for what it asks"), "{body}");
    let right = serde_json::json!({
        "publicKey": alice.public_key(), "room": "K7MP2Q", "challenge": challenge, "signature": proof,
    });
    assert_eq!(post("/identity/token", right).0, 200, "the challenge was still good for its own room");
    // A proof made to register one name does not register another.
    let challenge = rv.challenge();
    let proof = bob.prove(&challenge, Purpose::Register { nickname: "Bob" });
    let other = serde_json::json!({
        "publicKey": bob.public_key(), "nickname": "Bobby", "challenge": challenge, "signature": proof,
    });
    let (status, body) = post("/identity/register", other);
    assert_eq!(status, 401, "{body}");
    // Nor is a token proof one to register with.
    let challenge = rv.challenge();
    let proof = bob.prove(&challenge, Purpose::Token { room: "K7MP2Q" });
    let crossed = serde_json::json!({
        "publicKey": bob.public_key(), "nickname": "K7MP2Q", "challenge": challenge, "signature": proof,
    });
    assert_eq!(post("/identity/register", crossed).0, 401);
}

#[test]
fn an_address_that_asks_too_often_is_slowed_and_a_large_body_refused() {
    let rv = rendezvous("limits", RanksConfig { requests_per_second: 5.0, ..RanksConfig::default() });
    // Bursts of twice the rate pass; then 429s until the bucket refills.
    let statuses: Vec<u16> = (0..30).map(|_| rv.call("GET", "/identity/keys", None).0).collect();
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(statuses.iter().take(5).all(|s| *s == 200), "{statuses:?}");

    let rv = rendezvous("body", RanksConfig::default());
    let huge = format!("{{\"publicKey\": \"{}\"}}", "A".repeat(MAX_BODY * 2));
    let (status, _) = rv.call("POST", "/identity/register", Some(&huge));
    assert_eq!(status, 413);
}

/// `GET path` with an `X-Forwarded-For` header, as a balancer sends it; the status.
fn get_forwarded(rv: &Rendezvous, path: &str, forwarded: &str) -> u16 {
    use std::io::{Read as _, Write as _};
    let url = rv.server.url();
    let addr = url.trim_start_matches("ws://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nX-Forwarded-For: {forwarded}\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0)
}

/// Behind a balancer it trusts, the rendezvous holds each player's address to its rate (and
/// counts homes by it), not the balancer's; a header from anyone else changes nothing.
#[test]
fn behind_a_trusted_balancer_each_forwarded_address_has_its_own_rate() {
    let config = RanksConfig { requests_per_second: 5.0, ..RanksConfig::default() };
    let rv = rendezvous_behind("proxied", config.clone(), vec!["127.0.0.1".parse().unwrap()]);
    // Thirty players, one request each: none slowed.
    let each: Vec<u16> = (0..30).map(|i| get_forwarded(&rv, "/identity/keys", &format!("10.0.{i}.1"))).collect();
    assert!(each.iter().all(|s| *s == 200), "{each:?}");
    // One player thirty times (the client wrote an address of its own first: the balancer's
    // last one counts).
    let one: Vec<u16> =
        (0..30).map(|i| get_forwarded(&rv, "/identity/keys", &format!("10.9.{i}.9, 10.1.1.1"))).collect();
    assert!(one.contains(&429), "{one:?}");
    // Not behind a balancer it trusts: the header is anyone's to write, and is not read.
    let rv = rendezvous("unproxied", config);
    let spoofed: Vec<u16> = (0..30).map(|i| get_forwarded(&rv, "/identity/keys", &format!("10.0.{i}.1"))).collect();
    assert!(spoofed.contains(&429), "{spoofed:?}");
}

#[test]
fn an_expired_challenge_is_refused() {
    let rv = rendezvous("expired", RanksConfig::default());
    let alice = Identity::from_seed([11; 32]);
    // A challenge handed out a while ago, checked now.
    let old = rv.ranks.challenge(unix_now() - 3600);
    let body = serde_json::json!({
        "publicKey": alice.public_key(), "nickname": "Alice", "challenge": old.challenge,
        "signature": alice.prove(&old.challenge, Purpose::Register { nickname: "Alice" }),
    });
    let (status, body) = rv.call("POST", "/identity/register", Some(&body.to_string()));
    assert_eq!(status, 401, "{body}");
    assert!(body["error"].as_str().unwrap().contains("expired"), "{body}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn garbage_to_every_route_is_a_4xx(
        route in 0usize..9,
        body in prop::collection::vec(any::<u8>(), 0..300),
        json in any::<bool>(),
    ) {
        use std::sync::OnceLock;
        static RV: OnceLock<Rendezvous> = OnceLock::new();
        let rv = RV.get_or_init(|| rendezvous("garbage", RanksConfig { requests_per_second: 1e6, ..RanksConfig::default() }));
        let text = String::from_utf8_lossy(&body).into_owned();
        let text = if json { serde_json::json!({ "publicKey": text, "nickname": text, "challenge": text, "signature": text, "room": text }).to_string() } else { text };
        let (method, path) = [
            ("POST", "/identity/register".to_owned()),
            ("POST", "/identity/token".to_owned()),
            ("POST", "/identity/challenge".to_owned()),
            ("GET", "/identity/keys".to_owned()),
            ("GET", format!("/identity/{}", text.chars().filter(char::is_ascii_alphanumeric).take(60).collect::<String>())),
            ("POST", "/identity/keys".to_owned()),
            ("POST", "/rounds".to_owned()),
            ("GET", format!("/top?limit={}", text.chars().filter(char::is_ascii_alphanumeric).take(10).collect::<String>())),
            ("GET", format!("/top/places?keys={}", text.chars().filter(char::is_ascii_alphanumeric).take(60).collect::<String>())),
        ][route].clone();
        let (status, _) = rv.call(method, &path, Some(&text));
        let fine = matches!((route, status), (2 | 3 | 7 | 8, 200));
        prop_assert!(fine || (400..500).contains(&status), "{method} {path}: {status}");
    }
}
