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

/// How much of the WAL [`grow_wal`] writes under one hold of the write lock.
const WAL_STEP: u64 = 8 * 1024 * 1024;

/// Grows the WAL file of the database behind `pool` towards `bytes` by one step of zeros past
/// its end, flushed, and says how large it is now. SQLite never shrinks the WAL while a
/// connection is open (docket sets no `journal_size_limit`): it starts over at the top once a
/// checkpoint has copied every frame, and writes over what is there. Only a read transaction held
/// open (a backup, a `sqlite3` shell) keeps it from starting over; then every commit appends, and
/// the flush of an append also commits the file's new blocks and size, which slowed intake by an
/// eighth in the benchmark. Over blocks the file already has, a commit flushes its data only.
///
/// Safe because of where and when it writes: only past the end of the file, while holding the
/// write lock (`BEGIN IMMEDIATE`), the only way any connection, in any process, writes frames.
/// The lock is held until the step is on disk, even when the caller drops the future. SQLite reads frames from the top and stops at the first whose salt and
/// checksum do not match the header's, as zeros never do: recovery and readers ignore the
/// reserve, like the stale frames a start-over leaves.
pub(super) async fn grow_wal(pool: &SqlitePool, bytes: u64) -> StoreResult<WalSize> {
    let file = sqlite_file(pool).await?;
    let wal = std::path::PathBuf::from(format!("{file}-wal"));
    let tx = begin(pool).await.context("taking the write lock to grow the WAL")?;
    // Written on this thread, within one poll (a step is a few tens of milliseconds): on a
    // blocking thread, a caller dropping this future would let the lock go with the write still
    // running.
    let grown = grow_by_a_step(&wal, bytes);
    tx.rollback().await.context("letting the write lock go after growing the WAL")?;
    grown.map_err(|source| StoreError::Reserve { path: wal.display().to_string(), source })
}

/// The path of the main database file behind `pool`.
async fn sqlite_file(pool: &SqlitePool) -> StoreResult<String> {
    sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
        .fetch_one(pool)
        .await
        .context("finding the database file")
}

/// A WAL file's size after a step of [`grow_wal`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalSize {
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether it holds what was asked (or is left for SQLite to start, having no header yet).
    pub reached: bool,
}

/// Appends up to [`WAL_STEP`] zeros to `wal` towards `bytes`, flushed; a step that cannot be
/// written whole is taken back, so a full disk leaves the file as it was.
fn grow_by_a_step(wal: &Path, bytes: u64) -> std::io::Result<WalSize> {
    use std::os::unix::fs::FileExt as _;
    let file = std::fs::OpenOptions::new().write(true).open(wal)?;
    let size = file.metadata()?.len();
    // 32 bytes: the WAL header, which SQLite writes with the first frame.
    if size >= bytes || size < 32 {
        return Ok(WalSize { bytes: size, reached: true });
    }
    let step = (bytes - size).min(WAL_STEP);
    let zeros = vec![0; usize::try_from(step).unwrap_or(usize::MAX)];
    if let Err(e) = file.write_all_at(&zeros, size).and_then(|()| file.sync_data()) {
        let _ = file.set_len(size);
        return Err(e);
    }
    Ok(WalSize { bytes: size + step, reached: size + step >= bytes })
}
