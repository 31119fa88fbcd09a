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

use super::backend::{ClaimSql, claim_statements, define_backend};
use super::{StoreError, StoreResult, Tx};

/// A SQLite database.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    pool: SqlitePool,
}

/// The claim statements as SQLite runs them.
pub const CLAIMS: ClaimSql = claim_statements!("", "");

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

    /// Applies `migrations/sqlite`.
    pub async fn migrate(&self) -> StoreResult<()> {
        sqlx::migrate!("./migrations/sqlite").run(&self.pool).await.map_err(StoreError::Migrate)
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.pool.begin_with("BEGIN IMMEDIATE").await
    }
}

impl From<sqlx::Transaction<'static, sqlx::Sqlite>> for Tx {
    fn from(tx: sqlx::Transaction<'static, sqlx::Sqlite>) -> Self {
        Self::Sqlite(tx)
    }
}
