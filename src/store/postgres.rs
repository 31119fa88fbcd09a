//! PostgreSQL backend, for several docket processes sharing one database.
//!
//! Claims lock the chosen row with `FOR UPDATE SKIP LOCKED`, so concurrent workers on different
//! machines pass over each other's rows instead of queueing behind them.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::backend::{ClaimSql, claim_statements, define_backend};
use super::{Conn, QueryContext, StoreError, StoreResult, Transaction};
use crate::domain::{OutboxMessage, Timestamp};

/// A PostgreSQL database.
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pub(super) pool: PgPool,
}

/// docket's PostgreSQL migrations, built in.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The claim statements as PostgreSQL runs them.
pub const CLAIMS: ClaimSql = claim_statements!(" FOR UPDATE SKIP LOCKED");

/// Serialises message claims until the end of the transaction: a chat may have one message in
/// flight, and two concurrent claims could otherwise both see the chat idle.
pub const LOCK_MESSAGE_CLAIMS: &str = "SELECT pg_advisory_xact_lock(7246001)";

define_backend!(PostgresStore, sqlx::Postgres, conn, CLAIMS);

/// Claims the next deliverable message (see [`Store::claim_message`](super::Store::claim_message))
/// in a transaction that first takes [`LOCK_MESSAGE_CLAIMS`].
pub(super) async fn claim_message(
    pool: &PgPool,
    owner: &str,
    now: Timestamp,
    lease_len: Duration,
) -> StoreResult<Option<OutboxMessage>> {
    let mut tx = pool.begin().await.context("starting a transaction")?;
    sqlx::query(LOCK_MESSAGE_CLAIMS).execute(&mut *tx).await.context("serialising message claims")?;
    let claimed = super::outbox::claim_message(&mut Conn::Postgres(&mut tx), owner, now, lease_len).await?;
    tx.commit().await.context("committing a message claim")?;
    Ok(claimed)
}

impl PostgresStore {
    /// Connects to `url`.
    pub async fn open(url: &str) -> StoreResult<Self> {
        let redacted = super::DatabaseUrl::Postgres(url.to_owned()).redacted();
        let options =
            PgConnectOptions::from_str(url).map_err(|source| StoreError::Open { url: redacted.clone(), source })?;
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(|source| StoreError::Open { url: redacted, source })?;
        Ok(Self { pool })
    }

    /// Connects to `url` only if the database exists; creates nothing.
    pub async fn open_existing(url: &str) -> StoreResult<Self> {
        match Self::open(url).await {
            // 3D000 invalid_catalog_name: the database does not exist.
            Err(StoreError::Open { url, source: sqlx::Error::Database(db) })
                if db.code().as_deref() == Some("3D000") =>
            {
                Err(StoreError::Missing { url })
            }
            other => other,
        }
    }

    /// Applies `migrations/postgres`.
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
        let present: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
            .fetch_one(&self.pool)
            .await
            .context("looking for docket's schema")?;
        if !present {
            return Ok(None);
        }
        let versions = sqlx::query_scalar("SELECT version FROM _sqlx_migrations WHERE success ORDER BY version")
            .fetch_all(&self.pool)
            .await
            .context("reading the applied migrations")?;
        Ok(Some(versions))
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        self.pool.begin().await
    }
}

impl From<sqlx::Transaction<'static, sqlx::Postgres>> for Transaction {
    fn from(tx: sqlx::Transaction<'static, sqlx::Postgres>) -> Self {
        Self::Postgres(tx)
    }
}

impl<'c> From<&'c mut sqlx::PgConnection> for Conn<'c> {
    fn from(c: &'c mut sqlx::PgConnection) -> Self {
        Self::Postgres(c)
    }
}
