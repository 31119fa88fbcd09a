//! PostgreSQL backend, for several docket processes sharing one database.
//!
//! Claims lock the chosen row with `FOR UPDATE SKIP LOCKED`, so concurrent workers on different
//! machines pass over each other's rows instead of queueing behind them; message claims also take
//! an advisory lock first ([`LOCK_MESSAGE_CLAIMS`]), because a chat may have one message in flight.
//!
//! Only what differs from SQLite is here: connecting, the migrations, how to tell docket's schema
//! is there, the claim statements and the lock. Every other statement is shared (see the table
//! modules).

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::statements::ClaimSql;
use super::{Change, Conn, DatabaseError, DatabaseUrl, QueryContext, StoreError, StoreResult};
use crate::domain::{NodeName, OutboxMessage, Timestamp};

/// docket's PostgreSQL migrations, built in.
pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

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
                      AND ($7 IS NULL OR node IS NULL OR node = $7)
                    ORDER BY not_before, id LIMIT 1 FOR UPDATE SKIP LOCKED)
        RETURNING *",
    process_fetched: "UPDATE jobs SET status = 'processing', lease_owner = $1, lease_token = lease_token + 1,
            lease_until = $2, attempts = attempts + 1, updated_at = $3
        WHERE id = (SELECT id FROM jobs WHERE status = 'fetched' AND not_before <= $3
                      AND ($7 IS NULL OR node IS NULL OR node = $7)
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
                      AND (o.kind <> 'result' OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = o.job_id
                             AND (j.status IN ('accepted', 'fetched', 'processing')
                                  OR (j.status = 'ready' AND j.result_file_id IS NULL
                                      AND j.node IS NOT NULL AND j.node <> $4))))
                    ORDER BY o.priority, o.id LIMIT 1 FOR UPDATE SKIP LOCKED)
          AND status = 'pending'
        RETURNING *",
};

/// Serialises message claims until the end of the transaction: a chat may have one message in
/// flight, and two concurrent claims could otherwise both see the chat idle.
pub const LOCK_MESSAGE_CLAIMS: &str = "SELECT pg_advisory_xact_lock(7246001)";

/// Whether the database has the table sqlx records migrations in.
pub const MIGRATIONS_TABLE: &str = "SELECT to_regclass('_sqlx_migrations') IS NOT NULL";

/// Connects to `url`.
pub(super) async fn open(url: &str) -> StoreResult<PgPool> {
    let redacted = DatabaseUrl::Postgres(url.to_owned()).redacted();
    let options = PgConnectOptions::from_str(url)
        .map_err(|source| StoreError::Open { url: redacted.clone(), source: DatabaseError::from_sqlx(source) })?;
    PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(options)
        .await
        .map_err(|source| StoreError::Open { url: redacted, source: DatabaseError::from_sqlx(source) })
}

/// Connects to `url` only if the database exists; creates nothing.
pub(super) async fn open_existing(url: &str) -> StoreResult<PgPool> {
    match open(url).await {
        // 3D000 invalid_catalog_name: the database does not exist.
        Err(StoreError::Open { url, source }) if source.code().as_deref() == Some("3D000") => {
            Err(StoreError::Missing { url })
        }
        other => other,
    }
}

/// A bot-wide role held by this process: a session-level advisory lock on a connection of its
/// own, taken out of the pool so nothing else runs on it or recycles it. The server releases the
/// lock when the session ends, so a dead or cut-off holder frees the role by itself.
#[derive(Debug)]
pub(super) struct RoleConnection(sqlx::PgConnection);

/// Takes the advisory lock `(class, object)` if nobody holds it.
pub(super) async fn try_take_role(pool: &PgPool, class: i32, object: i32) -> StoreResult<Option<RoleConnection>> {
    let mut conn = pool.acquire().await.context("connecting for a role")?.detach();
    let taken: bool = sqlx::query_scalar(TRY_TAKE_ROLE)
        .bind(class)
        .bind(object)
        .fetch_one(&mut conn)
        .await
        .context("taking a role")?;
    if taken {
        Ok(Some(RoleConnection(conn)))
    } else {
        use sqlx::Connection as _;
        let _ = conn.close().await;
        Ok(None)
    }
}

impl RoleConnection {
    /// Whether the session (and so the lock) is still there.
    pub(super) async fn still_held(&mut self) -> bool {
        sqlx::query("SELECT 1").execute(&mut self.0).await.is_ok()
    }
}

/// Takes a session-level advisory lock without waiting: $1 class, $2 object.
pub const TRY_TAKE_ROLE: &str = "SELECT pg_try_advisory_lock($1, $2)";

/// The channels of migration 0009's triggers.
const JOBS_CHANNEL: &str = "docket_jobs";
const OUTBOX_CHANNEL: &str = "docket_outbox";

/// A dedicated connection listening on the change channels.
#[derive(Debug)]
pub(super) struct Listener(sqlx::postgres::PgListener);

impl Listener {
    /// Connects (a connection of its own, outside the pool's count) and listens.
    pub(super) async fn connect(pool: &PgPool) -> StoreResult<Self> {
        let mut listener = sqlx::postgres::PgListener::connect_with(pool).await.context("connecting to listen")?;
        listener.listen_all([JOBS_CHANNEL, OUTBOX_CHANNEL]).await.context("listening for changes")?;
        Ok(Self(listener))
    }

    /// The next change. A lost connection is [`Change::Missed`]: notifications sent while it was
    /// down are gone; the next call connects again and listens anew.
    pub(super) async fn next(&mut self) -> StoreResult<Change> {
        let notification = self.0.try_recv().await.context("waiting for changes")?;
        Ok(match notification.as_ref().map(sqlx::postgres::PgNotification::channel) {
            Some(JOBS_CHANNEL) => Change::Jobs,
            Some(OUTBOX_CHANNEL) => Change::Outbox,
            Some(_) | None => Change::Missed,
        })
    }
}

/// Starts a write transaction.
pub(super) async fn begin(pool: &PgPool) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
    pool.begin().await
}

/// Runs [`MIGRATIONS_TABLE`]: whether docket (through sqlx) ever migrated this database.
pub(super) async fn has_migrations_table(pool: &PgPool) -> StoreResult<bool> {
    sqlx::query_scalar(MIGRATIONS_TABLE).fetch_one(pool).await.context("looking for docket's schema")
}

/// Claims the next deliverable message (see [`Store::claim_message`](super::Store::claim_message))
/// in a transaction that first takes [`LOCK_MESSAGE_CLAIMS`].
pub(super) async fn claim_message(
    pool: &PgPool,
    owner: &str,
    node: Option<&NodeName>,
    now: Timestamp,
    lease_len: Duration,
) -> StoreResult<Option<OutboxMessage>> {
    let mut tx = begin(pool).await.context("starting a transaction")?;
    sqlx::query(LOCK_MESSAGE_CLAIMS).execute(&mut *tx).await.context("serialising message claims")?;
    let claimed = super::outbox::claim_message(&mut Conn::Postgres(&mut tx), owner, node, now, lease_len).await?;
    tx.commit().await.context("committing a message claim")?;
    Ok(claimed)
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
