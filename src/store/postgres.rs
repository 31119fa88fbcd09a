//! PostgreSQL backend, for several docket processes sharing one database.
//!
//! Claims lock the chosen row with `FOR UPDATE SKIP LOCKED`, so concurrent workers on different
//! machines pass over each other's rows instead of queueing behind them.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::backend::{ClaimSql, define_backend};
use super::{StoreError, StoreResult, Tx};

/// A PostgreSQL database.
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pool: PgPool,
}

const CLAIMS: ClaimSql = ClaimSql {
    download: "UPDATE jobs SET lease_owner = $1, lease_token = lease_token + 1, lease_until = $2,
                   attempts = attempts + 1, updated_at = $3
               WHERE id = (SELECT j.id FROM jobs j WHERE j.status = 'accepted' AND j.not_before <= $3
                             AND (j.lease_until IS NULL OR j.lease_until <= $3)
                             AND COALESCE(j.declared_size, $4) <= $5
                             AND (SELECT COUNT(*) FROM jobs o WHERE o.chat_id = j.chat_id AND o.id <> j.id
                                    AND ((o.status = 'accepted' AND o.lease_until > $3)
                                         OR o.status IN ('fetched', 'processing'))) < $6
                           ORDER BY j.not_before, j.id LIMIT 1 FOR UPDATE SKIP LOCKED)
               RETURNING *",
    process: "UPDATE jobs SET status = 'processing', lease_owner = $1, lease_token = lease_token + 1,
                  lease_until = $2, attempts = attempts + 1, updated_at = $3
              WHERE id = (SELECT id FROM jobs
                          WHERE (status = 'fetched' OR (status = 'processing' AND lease_until <= $3))
                            AND not_before <= $3
                          ORDER BY not_before, id LIMIT 1 FOR UPDATE SKIP LOCKED)
              RETURNING *",
    // The per-chat order check reads other rows of the chat; locking the candidate with SKIP
    // LOCKED keeps two senders from taking the same row, and the status re-check in the outer
    // UPDATE (under the row lock) keeps a row from being taken after it left `pending`.
    message: "UPDATE outbox SET status = 'sending', lease_owner = $1, lease_token = lease_token + 1,
                  lease_until = $2, attempts = attempts + 1, updated_at = $3
              WHERE id = (SELECT o.id FROM outbox o
                          WHERE (o.status = 'pending' OR (o.status = 'sending' AND o.lease_until <= $3))
                            AND o.not_before <= $3
                            AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.chat_id = o.chat_id AND e.id < o.id
                                            AND e.status IN ('pending', 'sending'))
                          ORDER BY o.priority, o.id LIMIT 1 FOR UPDATE SKIP LOCKED)
                AND (status = 'pending' OR (status = 'sending' AND lease_until <= $3))
              RETURNING *",
};

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
