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
    /// The caller asked for a transition the state machine forbids.
    #[error(transparent)]
    Transition(#[from] crate::domain::TransitionError),
}

impl StoreError {
    /// Whether the failure is about the database being unavailable or busy (worth waiting for),
    /// as opposed to a statement that will fail the same way again.
    pub fn is_transient(&self) -> bool {
        let source = match self {
            Self::Query { source, .. } | Self::Open { source, .. } => source,
            _ => return false,
        };
        if let Some(code) = source.code() {
            // SQLite: BUSY (5), LOCKED (6) and their extended codes; PostgreSQL: connection
            // errors (08…), serialization failures and deadlocks (40…), shutdown (57P…).
            return code == "5"
                || code == "6"
                || code == "517"
                || code == "261"
                || code.starts_with("08")
                || code.starts_with("40")
                || code.starts_with("57P");
        }
        matches!(
            source.0,
            Cause::Sqlx(
                sqlx::Error::Io(_)
                    | sqlx::Error::PoolTimedOut
                    | sqlx::Error::PoolClosed
                    | sqlx::Error::Tls(_)
                    | sqlx::Error::WorkerCrashed
            )
        )
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
}

impl DatabaseError {
    /// Wraps a failure of a statement, a connection or the pool.
    pub(super) fn from_sqlx(e: sqlx::Error) -> Self {
        Self(Cause::Sqlx(e))
    }

    /// Wraps a failure to migrate.
    pub(super) fn from_migrate(e: sqlx::migrate::MigrateError) -> Self {
        Self(Cause::Migrate(e))
    }

    /// The code the database answered with (SQLSTATE on PostgreSQL, the result code on SQLite),
    /// if it answered.
    pub(super) fn code(&self) -> Option<Cow<'_, str>> {
        match &self.0 {
            Cause::Sqlx(sqlx::Error::Database(db)) => db.code(),
            _ => None,
        }
    }
}

impl fmt::Display for DatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Cause::Sqlx(e) => e.fmt(f),
            Cause::Migrate(e) => e.fmt(f),
        }
    }
}

impl fmt::Debug for DatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Cause::Sqlx(e) => e.fmt(f),
            Cause::Migrate(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DatabaseError {
    // The driver's error is shown as this one; what caused it comes next.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            Cause::Sqlx(e) => e.source(),
            Cause::Migrate(e) => e.source(),
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
