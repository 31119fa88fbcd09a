//! The SQL both backends share, written once.
//!
//! sqlx binds `$N` placeholders by number on SQLite as on PostgreSQL, so every statement here
//! runs unchanged on both. [`define_backend!`] stamps the statements out for one database type;
//! the backend modules add what differs (connecting, migrations, and the claim statements,
//! which lock differently).

use crate::domain::{FileOwner, Ticket};

use super::{StoreResult, lease};

/// The columns of a `jobs` row the janitor judges files by.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct FileOwnerRow {
    id: i64,
    status: String,
    lease_owner: Option<String>,
    lease_token: i64,
    lease_until: Option<i64>,
    local_path: Option<String>,
    result_path: Option<String>,
}

impl FileOwnerRow {
    pub(crate) fn into_owner(self) -> StoreResult<FileOwner> {
        Ok(FileOwner {
            ticket: Ticket(self.id),
            state: self.status.parse()?,
            lease: lease(self.lease_owner, self.lease_token, self.lease_until),
            local_path: self.local_path,
            result_path: self.result_path,
        })
    }
}

/// Generates the shared statements as methods of a backend store (`$store`, holding `pool`) and
/// as functions over a connection in module `$conn_mod`, for the database type `$db`.
macro_rules! define_backend {
    ($store:ident, $db:ty, $conn_mod:ident, $claims:expr) => {
        impl $store {
            /// See [`crate::store::Store::begin`].
            pub async fn begin(&self) -> $crate::store::StoreResult<$crate::store::Tx> {
                use $crate::store::QueryContext;
                Ok($crate::store::Tx { tx: self.begin_write().await.context("starting a transaction")?.into() })
            }

            /// See [`crate::store::Store::ready_results`].
            pub async fn ready_results(&self, expired_at: Option<$crate::domain::Timestamp>) -> $crate::store::StoreResult<Vec<$crate::domain::Job>> {
                use $crate::store::QueryContext;
                // Two statements, so the due case is a range of the partial index `jobs_expiry`.
                let sql = if expired_at.is_some() {
                    "SELECT * FROM jobs WHERE status = 'ready' AND result_expires_at <= $1 ORDER BY result_expires_at, id"
                } else {
                    "SELECT * FROM jobs WHERE status = 'ready' AND $1 IS NULL ORDER BY result_expires_at, id"
                };
                sqlx::query_as::<_, $crate::store::jobs::JobRow>(sql)
                .bind(expired_at.map($crate::domain::Timestamp::as_millis))
                .fetch_all(&self.pool).await.context("listing results")?
                .into_iter().map($crate::store::jobs::JobRow::into_job).collect()
            }

            /// See [`crate::store::Store::expire_job`].
            pub async fn expire_job(&self, ticket: $crate::domain::Ticket, at: $crate::domain::Timestamp, notice: Option<&$crate::domain::NewMessage>, now: $crate::domain::Timestamp) -> $crate::store::StoreResult<bool> {
                use $crate::store::QueryContext;
                let mut tx = self.begin_write().await.context("starting a transaction")?;
                let done = sqlx::query(
                    "UPDATE jobs SET status = 'expired', result_path = NULL, result_file_id = NULL,
                        result_expires_at = CASE WHEN result_expires_at > $2 THEN $2 ELSE result_expires_at END,
                        updated_at = $3
                     WHERE id = $1 AND status = 'ready'",
                )
                .bind(ticket.0).bind(at.as_millis()).bind(now.as_millis())
                .execute(&mut *tx).await.context("expiring a result")?;
                if done.rows_affected() != 1 {
                    return Ok(false);
                }
                if let Some(notice) = notice {
                    $crate::store::outbox::enqueue(&mut $crate::store::Conn::from(&mut *tx), notice, now).await?;
                }
                tx.commit().await.context("committing an expiry")?;
                Ok(true)
            }

            /// See [`crate::store::Store::expire_due`].
            pub async fn expire_due(&self, now: $crate::domain::Timestamp) -> $crate::store::StoreResult<Vec<$crate::domain::Ticket>> {
                use $crate::store::QueryContext;
                let ids: Vec<i64> = sqlx::query_scalar(
                    "UPDATE jobs SET status = 'expired', result_path = NULL, result_file_id = NULL, updated_at = $1
                     WHERE status = 'ready' AND result_expires_at <= $1
                     RETURNING id",
                )
                .bind(now.as_millis())
                .fetch_all(&self.pool).await.context("expiring results")?;
                Ok(ids.into_iter().map($crate::domain::Ticket).collect())
            }

            /// See [`crate::store::Store::file_owners`].
            pub async fn file_owners(&self) -> $crate::store::StoreResult<Vec<$crate::domain::FileOwner>> {
                use $crate::store::QueryContext;
                sqlx::query_as::<_, $crate::store::backend::FileOwnerRow>(
                    "SELECT id, status, lease_owner, lease_token, lease_until, local_path, result_path
                     FROM jobs WHERE status IN ('accepted', 'fetched', 'processing', 'ready')",
                )
                .fetch_all(&self.pool).await.context("listing jobs that may own files")?
                .into_iter().map($crate::store::backend::FileOwnerRow::into_owner).collect()
            }

            /// See [`crate::store::Store::prune`].
            pub async fn prune(&self, before: $crate::domain::Timestamp, prune_jobs: bool, dry_run: bool) -> $crate::store::StoreResult<$crate::store::Pruned> {
                use $crate::store::QueryContext;
                const UPDATES: &str = "FROM updates WHERE received_at < $1";
                const MESSAGES: &str = "FROM outbox WHERE status IN ('sent', 'dead', 'failed') AND updated_at < $1";
                const JOB_MESSAGES: &str = "FROM outbox WHERE job_id IN (SELECT id FROM jobs WHERE status IN ('failed', 'expired') AND updated_at < $1)";
                const JOBS: &str = "FROM jobs WHERE status IN ('failed', 'expired') AND updated_at < $1";
                let mut tx = self.begin_write().await.context("starting a transaction")?;
                let mut counts = [0u64; 3];
                let targets: &[(usize, &str)] = if prune_jobs {
                    &[(0, UPDATES), (1, MESSAGES), (1, JOB_MESSAGES), (2, JOBS)]
                } else {
                    &[(0, UPDATES), (1, MESSAGES)]
                };
                for (slot, from) in targets {
                    let n = if dry_run {
                        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) {from}")))
                            .bind(before.as_millis()).fetch_one(&mut *tx).await.context("counting old rows")?;
                        u64::try_from(n).unwrap_or(0)
                    } else {
                        sqlx::query(sqlx::AssertSqlSafe(format!("DELETE {from}")))
                            .bind(before.as_millis()).execute(&mut *tx).await.context("pruning old rows")?.rows_affected()
                    };
                    counts[*slot] += n;
                }
                if !dry_run {
                    // Pacing rows long past are no longer needed (not counted: one row per chat).
                    sqlx::query("DELETE FROM chat_pacing WHERE not_before < $1")
                        .bind(before.as_millis()).execute(&mut *tx).await.context("pruning old pacing")?;
                }
                tx.commit().await.context("committing the pruning")?;
                Ok($crate::store::Pruned { updates: counts[0], messages: counts[1], jobs: counts[2] })
            }

            /// See [`crate::store::Store::close`].
            pub async fn close(&self) {
                self.pool.close().await;
            }
        }
    };
}

pub(crate) use define_backend;
