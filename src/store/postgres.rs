//! PostgreSQL backend, for several docket processes sharing one database.
//!
//! Claims lock the chosen row with `FOR UPDATE SKIP LOCKED`, so concurrent workers on different
//! machines pass over each other's rows instead of queueing behind them.

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::backend::define_backend;
use super::statements::ClaimSql;
use super::{Conn, QueryContext, StoreError, StoreResult, Transaction};
use crate::domain::{OutboxMessage, Timestamp};

/// A PostgreSQL database.
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pub(super) pool: PgPool,
}

/// docket's PostgreSQL migrations, built in.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The claim statements as PostgreSQL runs them: the subquery locks the row it chooses with
/// `FOR UPDATE SKIP LOCKED`, so concurrent claims pass over each other's rows. The same as
/// SQLite's otherwise.
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
                    ORDER BY j.not_before, j.id LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING *",
    process_lapsed: "UPDATE jobs SET lease_owner = $1, lease_token = lease_token + 1,
            lease_until = $2, attempts = attempts + 1, updated_at = $3
        WHERE id = (SELECT id FROM jobs
                    WHERE status = 'processing' AND not_before <= $3 AND lease_until <= $3
                    ORDER BY not_before, id LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING *",
    process_fetched: "UPDATE jobs SET status = 'processing', lease_owner = $1, lease_token = lease_token + 1,
            lease_until = $2, attempts = attempts + 1, updated_at = $3
        WHERE id = (SELECT id FROM jobs WHERE status = 'fetched' AND not_before <= $3
                    ORDER BY not_before, id LIMIT 1 FOR UPDATE SKIP LOCKED)
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
                    ORDER BY o.priority, o.id LIMIT 1 FOR UPDATE SKIP LOCKED)
          AND status = 'pending'
        RETURNING *",
};

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

#[cfg(test)]
mod tests {
    use super::CLAIMS;

    /// The claims are written out once per backend; they must not drift apart.
    #[test]
    fn the_claims_differ_from_sqlite_only_in_their_lock() {
        let sqlite = &crate::store::sqlite::CLAIMS;
        let pairs = [
            (CLAIMS.download, sqlite.download),
            (CLAIMS.process_lapsed, sqlite.process_lapsed),
            (CLAIMS.process_fetched, sqlite.process_fetched),
            (CLAIMS.message, sqlite.message),
        ];
        for (postgres, sqlite) in pairs {
            assert_eq!(postgres.matches(" FOR UPDATE SKIP LOCKED)").count(), 1, "{postgres}");
            assert_eq!(postgres.replace(" FOR UPDATE SKIP LOCKED)", ")"), sqlite);
        }
    }
}
