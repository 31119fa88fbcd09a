//! Why storage fails: [`StoreError`], with the database's own error kept as its source in an
//! opaque [`DatabaseError`], so no sqlx type leaves the store.

use std::borrow::Cow;
use std::fmt;

use crate::domain::job::UnknownName;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Connecting or creating the database failed.
    #[error("cannot open the database {url}: {source}")]
    Open {
        /// The database URL, password redacted.
        url: String,
        /// The cause.
        #[source]
        source: DatabaseError,
    },
    /// Creating the folder of a SQLite file failed.
    #[error("cannot create the database folder {path}: {source}")]
    Folder {
        /// The folder.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Another `docket run` holds the database (SQLite is one process: see
    /// [`RunLock`](super::RunLock)).
    #[error(
        "another docket is running on the database {url} ({holder}); stop it first, or give this one its own \
         [storage] database_url (the lock is {path})"
    )]
    InUse {
        /// The database URL.
        url: String,
        /// Who holds the lock, as the holder wrote it.
        holder: String,
        /// The lock file.
        path: String,
    },
    /// The lock file of [`RunLock`](super::RunLock) cannot be opened or written.
    #[error("cannot lock the database with {path}: {source}")]
    Lock {
        /// The lock file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Applying migrations failed.
    #[error("cannot migrate the database: {0}")]
    Migrate(#[source] DatabaseError),
    /// [`Store::open_existing`](super::Store::open_existing): there is no database at the URL.
    #[error("no database at {url} (has docket run here?)")]
    Missing {
        /// The database URL, password redacted.
        url: String,
    },
    /// [`Store::open_existing`](super::Store::open_existing): the database exists but docket never
    /// created its tables there.
    #[error("the database at {url} has no docket schema (has docket run here?)")]
    NotDocket {
        /// The database URL, password redacted.
        url: String,
    },
    /// [`Store::open_existing`](super::Store::open_existing): the schema is older than this
    /// docket's.
    #[error("the database at {url} lacks {missing} of this docket's {known} migrations; run `docket migrate` first")]
    Outdated {
        /// The database URL, password redacted.
        url: String,
        /// Migrations this docket has that the database has not applied.
        missing: usize,
        /// Migrations this docket has.
        known: usize,
    },
    /// A query failed.
    #[error("database query failed while {action}: {source}")]
    Query {
        /// What the store was doing.
        action: &'static str,
        /// The cause.
        #[source]
        source: DatabaseError,
    },
    /// A row holds a value the code does not know.
    #[error("database row is inconsistent: {0}")]
    Corrupt(String),
    /// The database URL names a backend this build was compiled without.
    #[error("this build has no {backend} support (build it with the feature `{feature}`)")]
    NotBuilt {
        /// The backend the URL names.
        backend: &'static str,
        /// The cargo feature that brings it.
        feature: &'static str,
    },
    /// A caller asked for something the store never does (a bug in docket, not in the data).
    #[error("the store was asked to {0}, which it never does")]
    Misuse(&'static str),
    /// The caller asked for a transition the state machine forbids.
    #[error(transparent)]
    Transition(#[from] crate::domain::TransitionError),
}

impl StoreError {
    /// Whether the failure is about the database being unavailable, busy or short of something
    /// (worth waiting for), as opposed to a statement that will fail the same way again. This is
    /// the one rule every caller follows: intake then leaves the update unconfirmed (polling polls
    /// it again, webhook mode answers 503), and the pipeline gives the attempt back.
    ///
    /// Transient: the connection or the pool failing, no answer in time, and what the database
    /// answers when it cannot do the work now rather than never: busy or locked, out of disk or
    /// memory, read-only (a replica after a failover, a read-only file), too many connections,
    /// shutting down or starting up, a serialization failure or deadlock, a lock or statement
    /// timeout. The codes are listed in `store/error.rs`, and in OPERATING.md.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Query { source, .. } | Self::Open { source, .. } => source.is_transient(),
            _ => false,
        }
    }
}

impl From<UnknownName> for StoreError {
    fn from(e: UnknownName) -> Self {
        Self::Corrupt(e.to_string())
    }
}

/// Shorthand for storage results.
pub type StoreResult<T> = Result<T, StoreError>;

/// The database's (or its driver's) own error, kept as the source of a [`StoreError`]. It shows
/// the driver's message and leads on to the driver's own source, without exposing the driver.
pub struct DatabaseError(Cause);

/// What a [`DatabaseError`] holds.
enum Cause {
    /// A statement, a connection or the pool failed.
    Sqlx(sqlx::Error),
    /// Applying migrations failed.
    Migrate(sqlx::migrate::MigrateError),
    /// The database did not answer within this long (a cut connection that the kernel has not
    /// noticed yet answers nothing at all).
    TimedOut(std::time::Duration),
}

/// SQLite's primary result codes that say the database cannot do the work *now*: `SQLITE_BUSY`
/// (5) and `SQLITE_LOCKED` (6), another connection holds the lock; `SQLITE_NOMEM` (7);
/// `SQLITE_READONLY` (8), the file or its folder cannot be written (permissions, a read-only
/// mount); `SQLITE_IOERR` (10), the disk failed a read or write; `SQLITE_FULL` (13), the disk
/// is full; `SQLITE_CANTOPEN` (14); `SQLITE_PROTOCOL` (15), a WAL locking race. Each with all its
/// extended codes (the low byte is the primary code).
const SQLITE_TRANSIENT: [i32; 8] = [5, 6, 7, 8, 10, 13, 14, 15];

/// PostgreSQL's SQLSTATE classes and codes that say the same: class 08 (connection exception),
/// 25006 (`read_only_sql_transaction`: a standby, or a primary demoted by a failover), 25P03
/// (`idle_in_transaction_session_timeout`), class 40 (serialization failure, deadlock), class 53
/// (insufficient resources: `disk_full` 53100, `out_of_memory` 53200, `too_many_connections`
/// 53300), 55P03 (`lock_not_available`: `lock_timeout`), 57014 (`query_canceled`:
/// `statement_timeout`), class 57P (`admin_shutdown`, `crash_shutdown`, `cannot_connect_now`,
/// `idle_session_timeout`), 58000 and 58030 (`system_error`, `io_error`). A code is matched by
/// its prefix.
const POSTGRES_TRANSIENT: [&str; 10] = ["08", "25006", "25P03", "40", "53", "55P03", "57014", "57P", "58000", "58030"];

impl DatabaseError {
    /// Wraps a failure of a statement, a connection or the pool.
    pub(super) fn from_sqlx(e: sqlx::Error) -> Self {
        Self(Cause::Sqlx(e))
    }

    /// Wraps a failure to migrate.
    pub(super) fn from_migrate(e: sqlx::migrate::MigrateError) -> Self {
        Self(Cause::Migrate(e))
    }

    /// No answer from the database within `waited`.
    #[cfg_attr(not(feature = "postgres"), expect(dead_code, reason = "only PostgreSQL's role checks wait"))]
    pub(super) fn timed_out(waited: std::time::Duration) -> Self {
        Self(Cause::TimedOut(waited))
    }

    /// The code the database answered with (SQLSTATE on PostgreSQL, the extended result code
    /// on SQLite), if it answered.
    pub(super) fn code(&self) -> Option<Cow<'_, str>> {
        match &self.0 {
            Cause::Sqlx(sqlx::Error::Database(db)) => db.code(),
            _ => None,
        }
    }

    /// Whether the database (or the way to it) cannot do the work now but may later: the rule
    /// behind [`StoreError::is_transient`], by the codes of [`SQLITE_TRANSIENT`] and
    /// [`POSTGRES_TRANSIENT`], or a connection, pool or time-out failure.
    pub(super) fn is_transient(&self) -> bool {
        let e = match &self.0 {
            Cause::Sqlx(e) => e,
            Cause::Migrate(_) => return false,
            Cause::TimedOut(_) => return true,
        };
        match e {
            sqlx::Error::Database(db) => {
                let Some(code) = db.code() else { return false };
                if db.try_downcast_ref::<sqlx::sqlite::SqliteError>().is_some() {
                    return code.parse::<i32>().is_ok_and(|c| SQLITE_TRANSIENT.contains(&(c & 0xff)));
                }
                POSTGRES_TRANSIENT.iter().any(|prefix| code.starts_with(prefix))
            }
            sqlx::Error::Io(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed => true,
            _ => false,
        }
    }
}

impl fmt::Display for DatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Cause::Sqlx(e) => e.fmt(f),
            Cause::Migrate(e) => e.fmt(f),
            Cause::TimedOut(waited) => write!(f, "no answer within {} s", waited.as_secs_f32()),
        }
    }
}

impl fmt::Debug for DatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Cause::Sqlx(e) => e.fmt(f),
            Cause::Migrate(e) => e.fmt(f),
            Cause::TimedOut(waited) => f.debug_tuple("TimedOut").field(waited).finish(),
        }
    }
}

impl std::error::Error for DatabaseError {
    // The driver's error is shown as this one; what caused it comes next.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            Cause::Sqlx(e) => e.source(),
            Cause::Migrate(e) => e.source(),
            Cause::TimedOut(_) => None,
        }
    }
}

/// Adds "while …" context to sqlx errors.
pub(super) trait QueryContext<T> {
    fn context(self, action: &'static str) -> StoreResult<T>;
}

impl<T> QueryContext<T> for Result<T, sqlx::Error> {
    fn context(self, action: &'static str) -> StoreResult<T> {
        self.map_err(|source| StoreError::Query { action, source: DatabaseError::from_sqlx(source) })
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    fn query_error(source: sqlx::Error) -> StoreError {
        Err::<(), _>(source).context("reading a job").expect_err("an error")
    }

    /// Wrapping the driver's error changes neither the message nor the chain of causes.
    #[test]
    fn a_database_error_reads_as_the_drivers() {
        let io = || std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset by peer");
        let driver = sqlx::Error::Io(io());
        let e = query_error(sqlx::Error::Io(io()));
        assert_eq!(e.to_string(), format!("database query failed while reading a job: {driver}"));
        let source = e.source().expect("the database error");
        assert_eq!(source.to_string(), driver.to_string());
        assert_eq!(format!("{source:?}"), format!("{driver:?}"));
        assert_eq!(source.source().map(ToString::to_string), Some(io().to_string()));
        assert!(e.is_transient(), "a lost connection is worth waiting for");
        assert!(!query_error(sqlx::Error::RowNotFound).is_transient());
    }
}
