//! SQLite backend: one file in WAL mode, created with its folder when missing.
//!
//! SQLite has one writer at a time, so a claim is a single `UPDATE … WHERE id = (SELECT …)
//! RETURNING *`: the subquery and the update run under the same write lock, and two workers can
//! never take the same row. Write transactions start with `BEGIN IMMEDIATE` so they queue for the
//! lock up front (waiting up to the busy timeout) instead of failing when a reader upgrades.
//!
//! Only what differs from PostgreSQL is here: opening, the migrations, how a write transaction
//! starts, how to tell docket's schema is there, and the claim statements. Every other statement
//! is shared (see the table modules).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};

use super::statements::ClaimSql;
use super::{DatabaseError, QueryContext, StoreError, StoreResult};

/// docket's SQLite migrations, built in.
pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

/// The claim statements as SQLite runs them: the chosen row is not locked, because SQLite's single
/// writer already serialises the claim (the subquery and the update run under one write lock).
/// The same as PostgreSQL's but for `FOR UPDATE SKIP LOCKED`.
pub const CLAIMS: ClaimSql = super::statements::claim_sql!("");

/// Whether the database has the table sqlx records migrations in (1) or not (0).
pub const MIGRATIONS_TABLE: &str =
    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'";

/// Opens (creating when missing) the database file at `path`, and its folder.
pub(super) async fn open(path: &Path) -> StoreResult<SqlitePool> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|source| StoreError::Folder { path: dir.display().to_string(), source })?;
    }
    let url = format!("sqlite://{}", path.display());
    let options = SqliteConnectOptions::from_str("sqlite://")
        .map_err(|source| StoreError::Open { url: url.clone(), source: DatabaseError::from_sqlx(source) })?
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // FULL: a commit the bot acted on (a ticket it announced) survives power loss too.
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(10));
    SqlitePoolOptions::new()
        .max_connections(8)
        .connect_with(options)
        .await
        .map_err(|source| StoreError::Open { url, source: DatabaseError::from_sqlx(source) })
}

/// Opens the database file at `path` only if it exists; creates nothing, and leaves the file's
/// journal mode as it is (docket's own files are in WAL mode already).
pub(super) async fn open_existing(path: &Path) -> StoreResult<SqlitePool> {
    let url = format!("sqlite://{}", path.display());
    // Checked first for a clear answer; `create_if_missing(false)` keeps a race from creating the
    // file anyway.
    if !path.try_exists().unwrap_or(true) {
        return Err(StoreError::Missing { url });
    }
    let options = SqliteConnectOptions::from_str("sqlite://")
        .map_err(|source| StoreError::Open { url: url.clone(), source: DatabaseError::from_sqlx(source) })?
        .filename(path)
        .create_if_missing(false)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(Duration::from_secs(10));
    SqlitePoolOptions::new().max_connections(8).connect_with(options).await.map_err(|source| {
        // SQLITE_CANTOPEN: the file went away since the check.
        let cannot_open = matches!(&source, sqlx::Error::Database(db) if db.code().as_deref() == Some("14"));
        if cannot_open {
            StoreError::Missing { url: url.clone() }
        } else {
            StoreError::Open { url: url.clone(), source: DatabaseError::from_sqlx(source) }
        }
    })
}

/// Starts a write transaction with `BEGIN IMMEDIATE`, which takes the write lock up front.
pub(super) async fn begin(pool: &SqlitePool) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
    pool.begin_with("BEGIN IMMEDIATE").await
}

/// Runs [`MIGRATIONS_TABLE`]: whether docket (through sqlx) ever migrated this database.
pub(super) async fn has_migrations_table(pool: &SqlitePool) -> StoreResult<bool> {
    let tables: i64 =
        sqlx::query_scalar(MIGRATIONS_TABLE).fetch_one(pool).await.context("looking for docket's schema")?;
    Ok(tables > 0)
}
