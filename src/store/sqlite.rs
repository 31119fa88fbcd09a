//! SQLite backend: one file in WAL mode, created with its folder when missing.
//!
//! SQLite has one writer at a time, so a claim is a single `UPDATE … WHERE id = (SELECT …)
//! RETURNING *`: the subquery and the update run under the same write lock, and two workers can
//! never take the same row. Write transactions start with `BEGIN IMMEDIATE` so they queue for the
//! lock up front (waiting up to the busy timeout) instead of failing when a reader upgrades.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

use super::backend::define_backend;
use super::statements::ClaimSql;
use super::{Conn, StoreError, StoreResult, Transaction};

/// A SQLite database.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pub(super) pool: SqlitePool,
}

/// docket's SQLite migrations, built in.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The claim statements as SQLite runs them: the chosen row is not locked, because SQLite's single
/// writer already serialises the claim (the subquery and the update run under one write lock).
/// The same as PostgreSQL's but for `FOR UPDATE SKIP LOCKED`.
pub const CLAIMS: ClaimSql = ClaimSql {
    download: "UPDATE jobs SET lease_owner = $1, lease_token = lease_token + 1, lease_until = $2,
            attempts = attempts + 1, updated_at = $3
        WHERE id = (SELECT j.id FROM jobs j WHERE j.status = 'accepted' AND j.not_before <= $3
                      AND (j.lease_until IS NULL OR j.lease_until <= $3)
                      AND COALESCE(j.declared_size, $4) <= $5
                      AND (SELECT COUNT(*) FROM jobs o WHERE o.chat_id = j.chat_id AND o.id <> j.id
                             AND (o.lease_owner IS NOT NULL OR o.status IN ('fetched', 'processing'))
                             AND ((o.status = 'accepted' AND o.lease_until > $3)
                                  OR o.status IN ('fetched', 'processing'))) < $6
                    ORDER BY j.not_before, j.id LIMIT 1)
        RETURNING *",
    process_lapsed: "UPDATE jobs SET lease_owner = $1, lease_token = lease_token + 1,
            lease_until = $2, attempts = attempts + 1, updated_at = $3
        WHERE id = (SELECT id FROM jobs
                    WHERE status = 'processing' AND not_before <= $3 AND lease_until <= $3
                    ORDER BY not_before, id LIMIT 1)
        RETURNING *",
    process_fetched: "UPDATE jobs SET status = 'processing', lease_owner = $1, lease_token = lease_token + 1,
            lease_until = $2, attempts = attempts + 1, updated_at = $3
        WHERE id = (SELECT id FROM jobs WHERE status = 'fetched' AND not_before <= $3
                    ORDER BY not_before, id LIMIT 1)
        RETURNING *",
    message: "UPDATE outbox SET status = 'sending', lease_owner = $1, lease_token = lease_token + 1,
            lease_until = $2, attempts = attempts + 1, updated_at = $3
        WHERE id = (SELECT o.id FROM outbox o
                    WHERE o.status = 'pending' AND o.not_before <= $3
                      AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.chat_id = o.chat_id AND e.id <> o.id
                                      AND e.status IN ('pending', 'sending')
                                      AND (e.status = 'sending' OR (e.id < o.id AND e.kind <> 'progress')))
                      AND NOT EXISTS (SELECT 1 FROM chat_pacing p WHERE p.chat_id = o.chat_id
                                      AND p.not_before > $3)
                      AND NOT EXISTS (SELECT 1 FROM chat_pacing g WHERE g.chat_id = 0 AND g.not_before > $3)
                    ORDER BY o.priority, o.id LIMIT 1)
          AND status = 'pending'
        RETURNING *",
};

define_backend!(SqliteStore, sqlx::Sqlite, conn, CLAIMS);

impl SqliteStore {
    /// Opens (creating when missing) the database file at `path`.
    pub async fn open(path: &Path) -> StoreResult<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|source| StoreError::Folder { path: dir.display().to_string(), source })?;
        }
        let url = format!("sqlite://{}", path.display());
        let options = SqliteConnectOptions::from_str("sqlite://")
            .map_err(|source| StoreError::Open { url: url.clone(), source })?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: a commit the bot acted on (a ticket it announced) survives power loss too.
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .map_err(|source| StoreError::Open { url, source })?;
        Ok(Self { pool })
    }

    /// Opens the database file at `path` only if it exists; creates nothing, and leaves the
    /// file's journal mode as it is (docket's own files are in WAL mode already).
    pub async fn open_existing(path: &Path) -> StoreResult<Self> {
        let url = format!("sqlite://{}", path.display());
        // Checked first for a clear answer; `create_if_missing(false)` keeps a race from
        // creating the file anyway.
        if !path.try_exists().unwrap_or(true) {
            return Err(StoreError::Missing { url });
        }
        let options = SqliteConnectOptions::from_str("sqlite://")
            .map_err(|source| StoreError::Open { url: url.clone(), source })?
            .filename(path)
            .create_if_missing(false)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new().max_connections(8).connect_with(options).await.map_err(|source| {
            // SQLITE_CANTOPEN: the file went away since the check.
            let cannot_open = matches!(&source, sqlx::Error::Database(db) if db.code().as_deref() == Some("14"));
            if cannot_open {
                StoreError::Missing { url: url.clone() }
            } else {
                StoreError::Open { url: url.clone(), source }
            }
        })?;
        Ok(Self { pool })
    }

    /// Applies `migrations/sqlite`.
    pub async fn migrate(&self) -> StoreResult<()> {
        MIGRATOR.run(&self.pool).await.map_err(StoreError::Migrate)
    }

    /// The versions of docket's migrations this build knows.
    pub fn known_migrations(&self) -> Vec<i64> {
        MIGRATOR.iter().map(|m| m.version).collect()
    }

    /// The versions of the migrations applied to the database; `None` when it has no
    /// migrations table (docket never ran on it).
    pub async fn applied_migrations(&self) -> StoreResult<Option<Vec<i64>>> {
        use super::QueryContext;
        let tables: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'")
                .fetch_one(&self.pool)
                .await
                .context("looking for docket's schema")?;
        if tables == 0 {
            return Ok(None);
        }
        let versions = sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(&self.pool)
            .await
            .context("reading the applied migrations")?;
        Ok(Some(versions))
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.pool.begin_with("BEGIN IMMEDIATE").await
    }
}

impl From<sqlx::Transaction<'static, sqlx::Sqlite>> for Transaction {
    fn from(tx: sqlx::Transaction<'static, sqlx::Sqlite>) -> Self {
        Self::Sqlite(tx)
    }
}

impl<'c> From<&'c mut sqlx::SqliteConnection> for Conn<'c> {
    fn from(c: &'c mut sqlx::SqliteConnection) -> Self {
        Self::Sqlite(c)
    }
}
