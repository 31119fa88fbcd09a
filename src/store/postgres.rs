//! PostgreSQL backend, for several docket processes sharing one database.
//!
//! Claims lock the chosen row with `FOR UPDATE SKIP LOCKED`, so concurrent workers on different
//! machines pass over each other's rows instead of queueing behind them.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::backend::{ClaimSql, claim_statements, define_backend};
use super::{StoreError, StoreResult, Tx};

/// A PostgreSQL database.
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pool: PgPool,
}

/// The claim statements as PostgreSQL runs them.
pub const CLAIMS: ClaimSql = claim_statements!(" FOR UPDATE SKIP LOCKED", "SELECT pg_advisory_xact_lock(7246001)");

define_backend!(PostgresStore, sqlx::Postgres, conn, CLAIMS);

impl PostgresStore {
    /// Connects to `url`.
    pub async fn open(url: &str) -> StoreResult<Self> {
        let redacted = crate::config::DatabaseUrl::Postgres(url.to_owned()).redacted();
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

    /// Wraps an existing pool (tests that create a database per test).
    pub fn from_pool(pool: PgPool) -> Self {
        Self { pool }
    }

    /// Applies `migrations/postgres`.
    pub async fn migrate(&self) -> StoreResult<()> {
        sqlx::migrate!("./migrations/postgres").run(&self.pool).await.map_err(StoreError::Migrate)
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        self.pool.begin().await
    }
}

impl From<sqlx::Transaction<'static, sqlx::Postgres>> for Tx {
    fn from(tx: sqlx::Transaction<'static, sqlx::Postgres>) -> Self {
        Self::Postgres(tx)
    }
}
