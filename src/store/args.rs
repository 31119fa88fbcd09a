//! A statement's arguments, bound the same way on either backend, and the [`Conn`] methods that
//! run a statement with them.
//!
//! A table module writes `c.execute(SQL, &[ticket.into(), now.into()])` instead of a chain of
//! `bind` calls inside `dispatch!`: the list is built once, encoded for whichever backend the
//! connection speaks, and the statement runs there. Only three kinds of value reach a column
//! (integers, text and flags, each possibly NULL), so that is all an [`Arg`] can be.

/// Runs one expression on whichever backend a [`Conn`] is connected to, with `$c` bound to that
/// backend's own connection (`&mut SqliteConnection` or `&mut PgConnection`) and `$db` naming
/// its sqlx type, written like a closure: `dispatch!(conn, |c, Db| …)`. The expression must have
/// the same type in each arm.
macro_rules! dispatch {
    ($conn:expr, |$c:ident, $db:ident| $body:expr) => {
        match $conn {
            $crate::store::Conn::Sqlite(conn) => {
                type $db = sqlx::Sqlite;
                let $c = &mut **conn;
                $body
            }
            #[cfg(feature = "postgres")]
            $crate::store::Conn::Postgres(conn) => {
                type $db = sqlx::Postgres;
                let $c = &mut **conn;
                $body
            }
        }
    };
}

use std::borrow::Cow;

use sqlx::error::BoxDynError;
use sqlx::{Arguments as _, Database};

use super::Conn;
use crate::domain::Timestamp;

/// One argument of a statement.
#[derive(Debug, Clone)]
pub(super) enum Arg<'a> {
    /// An integer (an id, a count, a time in milliseconds) or NULL.
    Int(Option<i64>),
    /// A text or NULL: borrowed, or made for the statement (a list joined into one column).
    Text(Option<Cow<'a, str>>),
    /// A flag (a PostgreSQL `BOOLEAN`, a SQLite integer 0 or 1).
    Flag(bool),
}

impl From<i64> for Arg<'_> {
    fn from(value: i64) -> Self {
        Self::Int(Some(value))
    }
}

impl From<Option<i64>> for Arg<'_> {
    fn from(value: Option<i64>) -> Self {
        Self::Int(value)
    }
}

impl From<i32> for Arg<'_> {
    fn from(value: i32) -> Self {
        Self::Int(Some(i64::from(value)))
    }
}

impl From<Timestamp> for Arg<'_> {
    /// A time is kept as milliseconds since the Unix epoch.
    fn from(value: Timestamp) -> Self {
        Self::Int(Some(value.as_millis()))
    }
}

impl From<Option<Timestamp>> for Arg<'_> {
    fn from(value: Option<Timestamp>) -> Self {
        Self::Int(value.map(Timestamp::as_millis))
    }
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(value: &'a str) -> Self {
        Self::Text(Some(Cow::Borrowed(value)))
    }
}

impl<'a> From<Option<&'a str>> for Arg<'a> {
    fn from(value: Option<&'a str>) -> Self {
        Self::Text(value.map(Cow::Borrowed))
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(value: &'a String) -> Self {
        Self::Text(Some(Cow::Borrowed(value)))
    }
}

impl From<String> for Arg<'_> {
    fn from(value: String) -> Self {
        Self::Text(Some(Cow::Owned(value)))
    }
}

impl From<Option<String>> for Arg<'_> {
    fn from(value: Option<String>) -> Self {
        Self::Text(value.map(Cow::Owned))
    }
}

impl<'a> From<&'a Option<String>> for Arg<'a> {
    fn from(value: &'a Option<String>) -> Self {
        Self::Text(value.as_deref().map(Cow::Borrowed))
    }
}

impl From<bool> for Arg<'_> {
    fn from(value: bool) -> Self {
        Self::Flag(value)
    }
}

/// A backend that can encode a list of [`Arg`]s.
trait Encodes: Database {
    /// `args` encoded for this backend.
    fn encoded(args: &[Arg<'_>]) -> Result<Self::Arguments, sqlx::Error>;
}

/// The one [`Encodes`] body, for each backend's own types (a bound over every lifetime, as a
/// generic body would need, is more than the compiler proves inside an async function).
macro_rules! encodes {
    ($db:ty) => {
        impl Encodes for $db {
            fn encoded(args: &[Arg<'_>]) -> Result<Self::Arguments, sqlx::Error> {
                let mut encoded = Self::Arguments::default();
                for arg in args {
                    let added: Result<(), BoxDynError> = match arg {
                        Arg::Int(value) => encoded.add(*value),
                        Arg::Text(value) => encoded.add(value.as_deref()),
                        Arg::Flag(value) => encoded.add(*value),
                    };
                    added.map_err(sqlx::Error::Encode)?;
                }
                Ok(encoded)
            }
        }
    };
}

encodes!(sqlx::Sqlite);
#[cfg(feature = "postgres")]
encodes!(sqlx::Postgres);

/// What a row type must be to be read from either backend.
#[cfg(feature = "postgres")]
pub(super) trait FromAnyRow:
    for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow> + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin
{
}

#[cfg(feature = "postgres")]
impl<T> FromAnyRow for T where
    T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
        + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
        + Send
        + Unpin
{
}

/// What a row type must be to be read from either backend.
#[cfg(not(feature = "postgres"))]
pub(super) trait FromAnyRow: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow> + Send + Unpin {}

#[cfg(not(feature = "postgres"))]
impl<T> FromAnyRow for T where T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow> + Send + Unpin {}

impl Conn<'_> {
    /// Runs `sql` with `args`; the number of rows it changed.
    pub(super) async fn execute(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<u64, sqlx::Error> {
        dispatch!(self, |c, Db| sqlx::query_with(sql, Db::encoded(args)?)
            .execute(c)
            .await
            .map(|done| done.rows_affected()))
    }

    /// Runs `sql`, a `SELECT status, COUNT(*) … GROUP BY status`, and gives every one of `states`
    /// its count (zero for a state no row is in), in the order of `states`.
    pub(super) async fn count_by_state<S: Copy>(
        &mut self,
        sql: &'static str,
        states: impl IntoIterator<Item = S>,
        name: fn(S) -> &'static str,
    ) -> Result<Vec<(S, u64)>, sqlx::Error> {
        let rows: Vec<(String, i64)> = self.fetch_all(sql, &[]).await?;
        Ok(states
            .into_iter()
            .map(|state| {
                let n = rows.iter().find(|(s, _)| s == name(state)).map_or(0, |(_, n)| *n);
                (state, u64::try_from(n).unwrap_or(0))
            })
            .collect())
    }

    /// Runs `sql` with `args`; every row it returns.
    pub(super) async fn fetch_all<R: FromAnyRow>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Vec<R>, sqlx::Error> {
        dispatch!(self, |c, Db| sqlx::query_as_with::<Db, R, _>(sql, Db::encoded(args)?).fetch_all(c).await)
    }

    /// Runs `sql` with `args`; its first row, if any.
    pub(super) async fn fetch_optional<R: FromAnyRow>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, sqlx::Error> {
        dispatch!(self, |c, Db| sqlx::query_as_with::<Db, R, _>(sql, Db::encoded(args)?).fetch_optional(c).await)
    }

    /// Runs `sql` with `args`; its one row (an error when it returns none).
    pub(super) async fn fetch_one<R: FromAnyRow>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<R, sqlx::Error> {
        dispatch!(self, |c, Db| sqlx::query_as_with::<Db, R, _>(sql, Db::encoded(args)?).fetch_one(c).await)
    }
}

impl Conn<'_> {
    /// Runs `sql`, which selects one column, with `args`; its one value.
    pub(super) async fn scalar<T>(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<T, sqlx::Error>
    where
        (T,): FromAnyRow,
    {
        self.fetch_one::<(T,)>(sql, args).await.map(|(value,)| value)
    }

    /// Runs `sql`, which selects one column, with `args`; its first value, if any.
    pub(super) async fn scalar_optional<T>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Option<T>, sqlx::Error>
    where
        (T,): FromAnyRow,
    {
        self.fetch_optional::<(T,)>(sql, args).await.map(|row| row.map(|(value,)| value))
    }

    /// Runs `sql`, which selects one column, with `args`; every value.
    pub(super) async fn scalars<T>(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<Vec<T>, sqlx::Error>
    where
        (T,): FromAnyRow,
    {
        self.fetch_all::<(T,)>(sql, args).await.map(|rows| rows.into_iter().map(|(value,)| value).collect())
    }
}
