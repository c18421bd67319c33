//! The rendezvous's database: SQLite embedded (a file), or PostgreSQL for a rendezvous that
//! outgrows one process. The same queries go to both through sqlx's `Any` driver, and the
//! schema is kept by versioned migrations (`ranks/migrations/`), run at open.

use std::borrow::Cow;
use std::path::Path;

use sqlx::Row as _;
use sqlx::SqlSafeStr as _;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use vimp_netcode::identity::{Identity, PublicKey, nickname_key};
use vimp_netcode::rounds::{RoundReport, RoundResults};

/// What went wrong with the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `--db` names no database this build speaks.
    #[error("{0}: not a database this rendezvous speaks (a file path, sqlite://PATH or postgres://…)")]
    Url(String),
    /// The database refused or failed.
    #[error("the database: {0}")]
    Database(#[from] sqlx::Error),
    /// The schema could not be brought up to date.
    #[error("migrating the database: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// What the database holds does not read back.
    #[error("the database holds {0}")]
    Corrupt(String),
}

/// The migrations, in order: what each version of the schema adds.
const MIGRATIONS: [(i64, &str, &str); 5] = [
    (1, "identities", include_str!("../migrations/0001_identities.sql")),
    (2, "rounds", include_str!("../migrations/0002_rounds.sql")),
    (3, "room tokens", include_str!("../migrations/0003_room_tokens.sql")),
    (4, "store meta", include_str!("../migrations/0004_store_meta.sql")),
    (5, "spent challenges", include_str!("../migrations/0005_spent_challenges.sql")),
];

/// The rules [`nickname_key`] keys names by, as `store_meta` notes them: names registered
/// under other rules are keyed again when a store opens ([`Store::rekey_nicknames`]).
/// `uts39-1`: lower case, then Unicode's confusables skeleton (before it: lower case alone).
pub const NICKNAME_KEYS: &str = "uts39-1";

fn migrator() -> Migrator {
    let migrations = MIGRATIONS
        .iter()
        .map(|&(version, description, sql)| {
            Migration::new(version, Cow::Borrowed(description), MigrationType::Simple, sql.into_sql_str(), false)
        })
        .collect();
    Migrator::with_migrations(migrations)
}

/// `n` bind marks from `$first` on, for a query's `IN (…)`: `$3, $4, $5`.
fn marks(first: usize, n: usize) -> String {
    (first..first + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
}

/// Which database a store is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A file, one process.
    Sqlite,
    /// A server, shared by every process of a rendezvous.
    Postgres,
}

/// The URL sqlx connects to for `db` (a path, `sqlite:…` or `postgres://…`), and its backend.
pub fn connect_url(db: &str) -> Result<(String, Backend), StoreError> {
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        Ok((db.to_owned(), Backend::Postgres))
    } else if db.starts_with("sqlite:") {
        Ok((db.to_owned(), Backend::Sqlite))
    } else if db.contains("://") || db.trim().is_empty() {
        Err(StoreError::Url(db.to_owned()))
    } else {
        // A path: the file is made when it is not there.
        Ok((format!("sqlite://{db}?mode=rwc"), Backend::Sqlite))
    }
}

/// Brings a database up to date: its journal (SQLite) and its schema.
async fn set_up(pool: &sqlx::AnyPool, backend: Backend) -> Result<(), StoreError> {
    if backend == Backend::Sqlite {
        // Writers do not block readers, and a write is on disk before it is acknowledged.
        sqlx::query("PRAGMA journal_mode = WAL").execute(pool).await?;
    }
    migrator().run(pool).await?;
    Ok(())
}

/// Makes the SQLite file at `path` (and its folder) when it is not there, readable by its
/// owner only: it holds the rendezvous's signing key. SQLite gives its journal the same rights.
/// A file found open to others has their rights taken away ([`tighten`]).
fn create_private(path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => tighten(path),
        Err(e) => Err(e),
    }
}

/// Takes the group's and others' rights away from the SQLite file at `path` and its journal,
/// saying so in the log: a file found open to them (copied in, or made by hand) holds the
/// signing key all the same.
fn tighten(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let journal = |suffix: &str| {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            std::path::PathBuf::from(name)
        };
        for file in [path.to_owned(), journal("-wal"), journal("-shm")] {
            let mode = match std::fs::metadata(&file) {
                Ok(meta) => meta.permissions().mode() & 0o777,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if mode & 0o077 != 0 {
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode & 0o700))?;
                tracing::warn!(
                    "{} could be read by other users (mode {mode:o}): now by its owner alone ({:o})",
                    file.display(),
                    mode & 0o700
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// The file a SQLite URL (`sqlite://PATH?…`, `sqlite:PATH`) names; `None` for one in memory.
fn sqlite_file(url: &str) -> Option<&Path> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or_default();
    (!path.is_empty() && path != ":memory:").then(|| Path::new(path))
}

/// The rendezvous's database (see the module docs). Cheap to clone: a pool.
#[derive(Clone, Debug)]
pub struct Store {
    pool: sqlx::AnyPool,
    backend: Backend,
}

/// What a round report came to ([`Store::report`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReportOutcome {
    /// Whether it was new (a report sent again is kept once).
    pub kept: bool,
    /// How many verified players signed the same results, this one included.
    pub signed: usize,
    /// How many must: a strict majority of the results' verified players.
    pub needed: usize,
    /// How many addresses (homes) the players who signed the same results took their tokens
    /// from, and how many the round's verified players did: a strict majority of those must
    /// sign too. Counted only when enough players signed (`signed >= needed`) of a round not
    /// recorded yet.
    pub homes: Option<(usize, usize)>,
    /// Whether the round is recorded with these results.
    pub recorded: bool,
    /// Whether this report recorded it.
    pub newly: bool,
}

/// A player's place in the top.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Standing {
    /// 1 for the best.
    pub place: u64,
    /// Its key.
    pub public_key: String,
    /// Its nickname.
    pub nickname: String,
    /// Its skill: the rating less three times its uncertainty, what the top is ordered by.
    pub skill: f64,
    /// Recorded rounds it played.
    pub rounds: u64,
}

/// What registering a nickname came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Registration {
    /// The key now has the nickname (or had it already: asking again changes nothing).
    Registered,
    /// Another key holds the nickname (or one that differs from it only by case).
    Taken,
    /// The key already holds another nickname.
    HasAnother(String),
}

impl Store {
    /// Opens the database at `db` (see [`connect_url`]), making a SQLite file and its folder
    /// when they are not there, and brings its schema up to date.
    pub async fn open(db: &str) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let (url, backend) = connect_url(db)?;
        if backend == Backend::Sqlite && !db.starts_with("sqlite:") {
            create_private(Path::new(db)).map_err(|e| StoreError::Database(sqlx::Error::Io(e)))?;
        } else if let Some(path) = sqlite_file(db) {
            tighten(path).map_err(|e| StoreError::Database(sqlx::Error::Io(e)))?;
        }
        let connections = match backend {
            // One writer at a time whatever the pool; readers beside it under WAL.
            Backend::Sqlite => 4,
            Backend::Postgres => 16,
        };
        let pool = sqlx::any::AnyPoolOptions::new().max_connections(connections).connect(&url).await?;
        // Processes that open a new SQLite file at once race to set it up (its journal mode,
        // the schema): one that loses finds it done when it tries again.
        let mut attempt = 0;
        while let Err(e) = set_up(&pool, backend).await {
            attempt += 1;
            if attempt == 8 {
                return Err(e);
            }
            tokio::time::sleep(std::time::Duration::from_millis(25 << attempt.min(4))).await;
        }
        let store = Store { pool, backend };
        store.rekey_nicknames().await?;
        Ok(store)
    }

    /// Keys every registered name by today's rules ([`NICKNAME_KEYS`]) when the store's were
    /// others: the first registered of names that now look alike keeps the key, each later one
    /// keeps its name under a key of its own (its key and public key), and no new name like
    /// them can be registered. Done once per change of the rules.
    async fn rekey_nicknames(&self) -> Result<(), StoreError> {
        let done = sqlx::query("SELECT value FROM store_meta WHERE name = $1")
            .bind("nickname_keys")
            .fetch_optional(&self.pool)
            .await?
            .map(|row| row.try_get::<String, _>(0))
            .transpose()?;
        if done.as_deref() == Some(NICKNAME_KEYS) {
            return Ok(());
        }
        let rows =
            sqlx::query("SELECT public_key, nickname, nickname_key FROM identities ORDER BY registered_at, public_key")
                .fetch_all(&self.pool)
                .await?;
        let mut keyed = std::collections::HashSet::new();
        let mut changes = Vec::new();
        for row in &rows {
            let (key, nickname, old): (String, String, String) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            let mut new = nickname_key(&nickname);
            if !keyed.insert(new.clone()) {
                new = format!("{new}\u{1f}{key}");
            }
            if new != old {
                changes.push((key, old, new));
            }
        }
        if !changes.is_empty() {
            let mut tx = self.pool.begin().await?;
            // Out of the way first (a row's new key may be another's old one), then in place.
            for (key, old, _) in &changes {
                sqlx::query("UPDATE identities SET nickname_key = $1 WHERE public_key = $2")
                    .bind(format!("\u{1e}{old}\u{1f}{key}"))
                    .bind(key)
                    .execute(&mut *tx)
                    .await?;
            }
            for (key, _, new) in &changes {
                sqlx::query("UPDATE identities SET nickname_key = $1 WHERE public_key = $2")
                    .bind(new)
                    .bind(key)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            tracing::info!("{} of {} registered names keyed again by {NICKNAME_KEYS}", changes.len(), rows.len());
        }
        sqlx::query("INSERT INTO store_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = $2")
            .bind("nickname_keys")
            .bind(NICKNAME_KEYS)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Which database it is on.
    pub fn backend_name(&self) -> &'static str {
        match self.backend {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }

    /// Which database it is on.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The rendezvous's signing key pair, made on the first open (every process on one
    /// database gets the same one).
    pub async fn signing_identity(&self, now: u64) -> Result<Identity, StoreError> {
        let fresh = Identity::generate();
        let seed = fresh.secret_seed_text();
        sqlx::query(
            "INSERT INTO signing_keys (name, secret_seed, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind("tokens")
        .bind(seed)
        .bind(now as i64)
        .execute(&self.pool)
        .await?;
        let row = sqlx::query("SELECT secret_seed FROM signing_keys WHERE name = $1")
            .bind("tokens")
            .fetch_one(&self.pool)
            .await?;
        let text: String = row.try_get(0)?;
        Identity::from_secret_seed_text(&text)
            .ok_or_else(|| StoreError::Corrupt("a signing key that does not read".into()))
    }

    /// Registers `nickname` for `key` at `now` (seconds since the Unix epoch).
    pub async fn register(&self, key: &PublicKey, nickname: &str, now: u64) -> Result<Registration, StoreError> {
        let folded = nickname_key(nickname);
        let inserted = sqlx::query(
            "INSERT INTO identities (public_key, nickname, nickname_key, registered_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT DO NOTHING",
        )
        .bind(key.to_string())
        .bind(nickname)
        .bind(&folded)
        .bind(now as i64)
        .execute(&self.pool)
        .await?;
        if inserted.rows_affected() == 1 {
            return Ok(Registration::Registered);
        }
        // Not inserted: the key has a name, or the name has a key.
        match self.nickname_of(key).await? {
            Some(held) if nickname_key(&held) == folded => Ok(Registration::Registered),
            Some(held) => Ok(Registration::HasAnother(held)),
            None => Ok(Registration::Taken),
        }
    }

    /// Spends the challenge whose nonce is `nonce`, good until `expires_at`: `true` the first
    /// time, `false` when it was spent already (every process on one database agrees).
    /// Challenges expired by `now` are forgotten now and then.
    pub async fn spend_challenge(&self, nonce: &str, expires_at: u64, now: u64) -> Result<bool, StoreError> {
        static SPENT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        if SPENT.fetch_add(1, std::sync::atomic::Ordering::Relaxed).is_multiple_of(256) {
            sqlx::query("DELETE FROM spent_challenges WHERE expires_at < $1")
                .bind(now as i64)
                .execute(&self.pool)
                .await?;
        }
        let spent =
            sqlx::query("INSERT INTO spent_challenges (nonce, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                .bind(nonce)
                .bind(expires_at as i64)
                .execute(&self.pool)
                .await?;
        Ok(spent.rows_affected() == 1)
    }

    /// The nickname registered for `key`.
    pub async fn nickname_of(&self, key: &PublicKey) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT nickname FROM identities WHERE public_key = $1")
            .bind(key.to_string())
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get::<String, _>(0)).transpose()?)
    }

    /// How many identities are registered.
    pub async fn identities(&self) -> Result<u64, StoreError> {
        let row = sqlx::query("SELECT COUNT(*) FROM identities").fetch_one(&self.pool).await?;
        Ok(row.try_get::<i64, _>(0)?.max(0) as u64)
    }

    /// Takes `report` (checked already: [`RoundReport::check`]) at `now`: kept once per
    /// reporter and round (a report sent again changes nothing), and the round recorded, with
    /// the ratings it makes, as soon as a strict majority of its verified players signed the
    /// same results. All in one transaction: a report acknowledged is on disk, and a round is
    /// recorded once.
    pub async fn report(&self, report: &RoundReport, now: u64) -> Result<ReportOutcome, StoreError> {
        let results = &report.results;
        let text = results.signed_text();
        let digest = blake3::hash(text.as_bytes()).to_hex().to_string();
        let mut tx = self.pool.begin().await?;
        // The round's row first: concurrent reports of one round wait for each other here, so
        // that each counts the ones before it.
        sqlx::query(
            "INSERT INTO round_tallies (round_id, reports) VALUES ($1, 1) \
             ON CONFLICT (round_id) DO UPDATE SET reports = round_tallies.reports + 1",
        )
        .bind(&results.id)
        .execute(&mut *tx)
        .await?;
        let kept = sqlx::query(
            "INSERT INTO round_reports (round_id, reporter, digest, results, received_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT DO NOTHING",
        )
        .bind(&results.id)
        .bind(&report.public_key)
        .bind(&digest)
        .bind(&text)
        .bind(now as i64)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        let recorded = sqlx::query("SELECT digest FROM rounds WHERE round_id = $1")
            .bind(&results.id)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| r.try_get::<String, _>(0))
            .transpose()?;
        let signed = sqlx::query("SELECT COUNT(*) FROM round_reports WHERE round_id = $1 AND digest = $2")
            .bind(&results.id)
            .bind(&digest)
            .fetch_one(&mut *tx)
            .await?
            .try_get::<i64, _>(0)?
            .max(0) as usize;
        let needed = results.verified().count() / 2 + 1;
        // The homes only when the players' majority is there: most reports are not the one.
        let homes = match recorded {
            None if signed >= needed => Some(Self::homes(&mut tx, results, &digest).await?),
            _ => None,
        };
        let outcome = match recorded {
            Some(d) => ReportOutcome { kept, signed, needed, homes, recorded: d == digest, newly: false },
            None if homes.is_some_and(|(signed, all)| all == 0 || signed * 2 > all) => {
                sqlx::query("INSERT INTO rounds (round_id, digest, results, recorded_at) VALUES ($1, $2, $3, $4)")
                    .bind(&results.id)
                    .bind(&digest)
                    .bind(&text)
                    .bind(now as i64)
                    .execute(&mut *tx)
                    .await?;
                self.rate(&mut tx, results, now).await?;
                ReportOutcome { kept, signed, needed, homes, recorded: true, newly: true }
            }
            None => ReportOutcome { kept, signed, needed, homes, recorded: false, newly: false },
        };
        tx.commit().await?;
        Ok(outcome)
    }

    /// How many addresses (homes) the players who signed `digest` of the round took their
    /// tokens for its room from, and how many the round's verified players did: a round is
    /// recorded only when its signers are a strict majority of both its players and its homes,
    /// so that identities one host made and had join from its own address count as one.
    /// Players whose tokens are not noted (a store used without the routes) are left out.
    async fn homes(
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        results: &RoundResults,
        digest: &str,
    ) -> Result<(usize, usize), StoreError> {
        let keys: Vec<&str> = results.verified().collect();
        if keys.is_empty() {
            return Ok((0, 0));
        }
        let sql = format!(
            "SELECT COUNT(DISTINCT address) FROM room_tokens WHERE room = $1 AND public_key IN ({})",
            marks(2, keys.len())
        );
        let query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(&results.room);
        let query = keys.iter().fold(query, |q, key| q.bind(*key));
        let homes = query.fetch_one(&mut **tx).await?.try_get::<i64, _>(0)?.max(0) as usize;
        if homes == 0 {
            return Ok((0, 0));
        }
        let signed = sqlx::query(
            "SELECT COUNT(DISTINCT t.address) FROM round_reports r \
             JOIN room_tokens t ON t.public_key = r.reporter AND t.room = $1 \
             WHERE r.round_id = $2 AND r.digest = $3",
        )
        .bind(&results.room)
        .bind(&results.id)
        .bind(digest)
        .fetch_one(&mut **tx)
        .await?
        .try_get::<i64, _>(0)?
        .max(0) as usize;
        Ok((signed, homes))
    }

    /// The ratings of a recorded round's verified players after it (Weng-Lin, teams by the
    /// winner: it first, the others second; no winner, a draw).
    async fn rate(
        &self,
        tx: &mut sqlx::Transaction<'_, sqlx::Any>,
        results: &RoundResults,
        now: u64,
    ) -> Result<(), StoreError> {
        use skillratings::MultiTeamOutcome;
        use skillratings::weng_lin::{WengLinConfig, WengLinRating, weng_lin_multi_team};
        let mut teams: Vec<(u8, Vec<(String, WengLinRating)>)> = Vec::new();
        for (i, player) in results.players.iter().enumerate() {
            let Some(key) = &player.key else { continue };
            let row = sqlx::query("SELECT rating, uncertainty FROM ratings WHERE public_key = $1")
                .bind(key)
                .fetch_optional(&mut **tx)
                .await?;
            let rating = match row {
                Some(r) => WengLinRating { rating: r.try_get(0)?, uncertainty: r.try_get(1)? },
                None => WengLinRating::new(),
            };
            // Team 0 is each player for itself: a team of its own.
            let team = if player.team == 0 { 200u8.wrapping_add(i as u8) } else { player.team };
            match teams.iter_mut().find(|(t, _)| *t == team) {
                Some((_, members)) => members.push((key.clone(), rating)),
                None => teams.push((team, vec![(key.clone(), rating)])),
            }
        }
        if teams.len() < 2 {
            // Nobody to have won against: no rating moves.
            return Ok(());
        }
        let ratings: Vec<Vec<WengLinRating>> = teams.iter().map(|(_, m)| m.iter().map(|(_, r)| *r).collect()).collect();
        let ranked: Vec<(&[WengLinRating], MultiTeamOutcome)> = teams
            .iter()
            .zip(&ratings)
            .map(|((team, _), r)| {
                let rank = if results.winner == 0 || *team == results.winner { 1 } else { 2 };
                (r.as_slice(), MultiTeamOutcome::new(rank))
            })
            .collect();
        let after = weng_lin_multi_team(&ranked, &WengLinConfig::new());
        for ((_, members), new) in teams.iter().zip(after) {
            for ((key, _), rating) in members.iter().zip(new) {
                let skill = rating.rating - 3.0 * rating.uncertainty;
                sqlx::query(
                    "INSERT INTO ratings (public_key, rating, uncertainty, skill, rounds, updated_at) \
                     VALUES ($1, $2, $3, $4, 1, $5) ON CONFLICT (public_key) DO UPDATE SET rating = $2, \
                     uncertainty = $3, skill = $4, rounds = ratings.rounds + 1, updated_at = $5",
                )
                .bind(key)
                .bind(rating.rating)
                .bind(rating.uncertainty)
                .bind(skill)
                .bind(now as i64)
                .execute(&mut **tx)
                .await?;
            }
        }
        Ok(())
    }

    /// The top: `limit` players from place `offset + 1` on, best first.
    pub async fn top(&self, limit: u32, offset: u32) -> Result<Vec<Standing>, StoreError> {
        let rows = sqlx::query(
            "SELECT r.public_key, i.nickname, r.skill, r.rounds FROM ratings r \
             JOIN identities i ON i.public_key = r.public_key \
             ORDER BY r.skill DESC, r.public_key LIMIT $1 OFFSET $2",
        )
        .bind(i64::from(limit))
        .bind(i64::from(offset))
        .fetch_all(&self.pool)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter().enumerate() {
            out.push(Standing {
                place: u64::from(offset) + i as u64 + 1,
                public_key: row.try_get(0)?,
                nickname: row.try_get(1)?,
                skill: row.try_get(2)?,
                rounds: row.try_get::<i64, _>(3)?.max(0) as u64,
            });
        }
        Ok(out)
    }

    /// The standing of `key` in the top, if it has played a recorded round.
    pub async fn standing(&self, key: &str) -> Result<Option<Standing>, StoreError> {
        let row = sqlx::query(
            "SELECT r.public_key, i.nickname, r.skill, r.rounds FROM ratings r \
             JOIN identities i ON i.public_key = r.public_key WHERE r.public_key = $1",
        )
        .bind(key)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let skill: f64 = row.try_get(2)?;
        let above = sqlx::query("SELECT COUNT(*) FROM ratings WHERE skill > $1")
            .bind(skill)
            .fetch_one(&self.pool)
            .await?
            .try_get::<i64, _>(0)?
            .max(0) as u64;
        Ok(Some(Standing {
            place: above + 1,
            public_key: row.try_get(0)?,
            nickname: row.try_get(1)?,
            skill,
            rounds: row.try_get::<i64, _>(3)?.max(0) as u64,
        }))
    }

    /// Notes that `key` took a token for `room` from `address` at `now`.
    pub async fn note_token(&self, key: &PublicKey, room: &str, address: &str, now: u64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO room_tokens (public_key, room, address, issued_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (public_key, room) DO UPDATE SET address = $3, issued_at = $4",
        )
        .bind(key.to_string())
        .bind(room)
        .bind(address)
        .bind(now as i64)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The verified players of `results` that took no token for its room at `since` or later:
    /// players who did not join that room through this rendezvous.
    pub async fn strangers(&self, results: &RoundResults, since: u64) -> Result<Vec<String>, StoreError> {
        let keys: Vec<&str> = results.verified().collect();
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT public_key FROM room_tokens WHERE room = $1 AND issued_at >= $2 AND public_key IN ({})",
            marks(3, keys.len())
        );
        let query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(&results.room).bind(since as i64);
        let query = keys.iter().fold(query, |q, key| q.bind(*key));
        let joined: Vec<String> =
            query.fetch_all(&self.pool).await?.iter().map(|r| r.try_get::<String, _>(0)).collect::<Result<_, _>>()?;
        Ok(keys.into_iter().filter(|k| !joined.iter().any(|j| j == k)).map(str::to_owned).collect())
    }

    /// Whether `reporter`'s report of round `round_id` is kept.
    pub async fn has_report(&self, round_id: &str, reporter: &str) -> Result<bool, StoreError> {
        let row = sqlx::query("SELECT COUNT(*) FROM round_reports WHERE round_id = $1 AND reporter = $2")
            .bind(round_id)
            .bind(reporter)
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get::<i64, _>(0)? > 0)
    }

    /// How many rounds are recorded, and how many reports are kept.
    pub async fn rounds(&self) -> Result<(u64, u64), StoreError> {
        let count = |sql: &'static str| async move {
            let row = sqlx::query(sql).fetch_one(&self.pool).await?;
            Ok::<u64, StoreError>(row.try_get::<i64, _>(0)?.max(0) as u64)
        };
        Ok((count("SELECT COUNT(*) FROM rounds").await?, count("SELECT COUNT(*) FROM round_reports").await?))
    }

    /// Closes the pool, waiting for what is under way.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}
