//! The rendezvous's database: SQLite embedded (a file), or PostgreSQL for a rendezvous that
//! outgrows one process. The same queries go to both through sqlx's `Any` driver, and the
//! schema is kept by versioned migrations (`ranks/migrations/`), run at open.

use std::borrow::Cow;
use std::path::Path;

use sqlx::Row as _;
use sqlx::SqlSafeStr as _;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use vimp_netcode::identity::{Identity, PublicKey, nickname_key};

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
const MIGRATIONS: [(i64, &str, &str); 1] = [(1, "identities", include_str!("../migrations/0001_identities.sql"))];

fn migrator() -> Migrator {
    let migrations = MIGRATIONS
        .iter()
        .map(|&(version, description, sql)| {
            Migration::new(version, Cow::Borrowed(description), MigrationType::Simple, sql.into_sql_str(), false)
        })
        .collect();
    Migrator::with_migrations(migrations)
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
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

/// The rendezvous's database (see the module docs). Cheap to clone: a pool.
#[derive(Clone, Debug)]
pub struct Store {
    pool: sqlx::AnyPool,
    backend: Backend,
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
        Ok(Store { pool, backend })
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

    /// Closes the pool, waiting for what is under way.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}
