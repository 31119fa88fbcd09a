//! The SQL both backends share, written once.
//!
//! sqlx binds `$N` placeholders by number on SQLite as on PostgreSQL, so every statement here
//! runs unchanged on both. [`define_backend!`] stamps the statements out for one database type;
//! the backend modules add what differs (connecting, migrations, and the claim statements,
//! which lock differently).

use crate::domain::{ChatRef, FileOwner, Job, Operation, Ticket, Timestamp};

use super::{StoreResult, lease};

/// A `jobs` row as the databases return it.
#[derive(Debug, sqlx::FromRow)]
pub(crate) struct JobRow {
    id: i64,
    update_id: i64,
    chat_id: i64,
    user_id: Option<i64>,
    message_id: i64,
    file_id: String,
    file_unique_id: String,
    declared_name: Option<String>,
    declared_mime: Option<String>,
    declared_size: Option<i64>,
    operation: String,
    status: String,
    local_path: Option<String>,
    real_size: Option<i64>,
    sha256: Option<String>,
    detected_format: Option<String>,
    lease_owner: Option<String>,
    lease_token: i64,
    lease_until: Option<i64>,
    attempts: i64,
    not_before: i64,
    source_losses: i64,
    error: Option<String>,
    error_detail: Option<String>,
    result_path: Option<String>,
    result_size: Option<i64>,
    result_file_id: Option<String>,
    result_expires_at: Option<i64>,
    created_at: i64,
    updated_at: i64,
}

impl JobRow {
    pub(crate) fn into_job(self) -> StoreResult<Job> {
        Ok(Job {
            ticket: Ticket(self.id),
            update_id: self.update_id,
            chat: ChatRef(self.chat_id),
            user_id: self.user_id,
            message_id: self.message_id,
            file_id: self.file_id,
            file_unique_id: self.file_unique_id,
            declared_name: self.declared_name,
            declared_mime: self.declared_mime,
            declared_size: self.declared_size,
            operation: self.operation.parse::<Operation>()?,
            state: self.status.parse()?,
            local_path: self.local_path,
            real_size: self.real_size,
            sha256: self.sha256,
            detected_format: self.detected_format,
            lease: lease(self.lease_owner, self.lease_token, self.lease_until),
            attempts: self.attempts,
            not_before: Timestamp::from_millis(self.not_before),
            source_losses: self.source_losses,
            error: self.error,
            error_detail: self.error_detail,
            result_path: self.result_path,
            result_size: self.result_size,
            result_file_id: self.result_file_id,
            result_expires_at: self.result_expires_at.map(Timestamp::from_millis),
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        })
    }
}

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

/// The claim statements, which differ per backend in how they lock. Public (in
/// [`crate::store::statements`]) so that the benchmarks EXPLAIN and time the statements the store
/// really runs.
#[derive(Debug)]
pub struct ClaimSql {
    /// Claims an `accepted` job: $1 owner, $2 lease until, $3 now, $4 the size assumed for a
    /// job without a declared size, $5 the largest size that fits the byte budget, $6 how many
    /// jobs of one chat may be in flight.
    pub download: &'static str,
    /// Claims a `processing` job whose lease lapsed (resumed first: it already holds a source on
    /// disk and a place in the budget): same binds.
    pub process_lapsed: &'static str,
    /// Claims a `fetched` job: same binds. Separate from `process_lapsed` so each is one index
    /// range in order, not an OR of two ranges plus a sort.
    pub process_fetched: &'static str,
    /// Claims the next deliverable outbox row: `pending`, due, the first open row of its chat,
    /// and neither its chat nor the bot as a whole (chat 0) paced or paused. Same first binds.
    /// A lapsed `sending` row is not claimed here: its outcome is unknown, and
    /// [`crate::store::Store::lapse_messages`] hands it to the kind's rule first.
    pub message: &'static str,
}

/// The claim statements of both backends; `$lock` is what locks the chosen row in the subquery
/// (`" FOR UPDATE SKIP LOCKED"` on PostgreSQL, nothing on SQLite, whose single writer already
/// serialises the claim). The per-chat order check of the message claim reads other rows of the
/// chat; the status re-check in its outer UPDATE keeps a row from being taken after it left
/// `pending`. The download claim's per-chat count repeats the predicate of the partial index
/// `jobs_held` word for word (`o.lease_owner IS NOT NULL OR …`), which is what lets both
/// databases use it; the term changes nothing, because every write that clears `lease_owner`
/// clears `lease_until` too.
macro_rules! claim_statements {
    ($lock:literal) => {
        ClaimSql {
            download: concat!("UPDATE jobs SET lease_owner = $1, lease_token = lease_token + 1, lease_until = $2,
                           attempts = attempts + 1, updated_at = $3
                       WHERE id = (SELECT j.id FROM jobs j WHERE j.status = 'accepted' AND j.not_before <= $3
                                     AND (j.lease_until IS NULL OR j.lease_until <= $3)
                                     AND COALESCE(j.declared_size, $4) <= $5
                                     AND (SELECT COUNT(*) FROM jobs o WHERE o.chat_id = j.chat_id AND o.id <> j.id
                                            AND (o.lease_owner IS NOT NULL OR o.status IN ('fetched', 'processing'))
                                            AND ((o.status = 'accepted' AND o.lease_until > $3)
                                                 OR o.status IN ('fetched', 'processing'))) < $6
                                   ORDER BY j.not_before, j.id LIMIT 1", $lock, ")
                       RETURNING *"),
            process_lapsed: concat!("UPDATE jobs SET lease_owner = $1, lease_token = lease_token + 1,
                          lease_until = $2, attempts = attempts + 1, updated_at = $3
                      WHERE id = (SELECT id FROM jobs
                                  WHERE status = 'processing' AND not_before <= $3 AND lease_until <= $3
                                  ORDER BY not_before, id LIMIT 1", $lock, ")
                      RETURNING *"),
            process_fetched: concat!("UPDATE jobs SET status = 'processing', lease_owner = $1, lease_token = lease_token + 1,
                          lease_until = $2, attempts = attempts + 1, updated_at = $3
                      WHERE id = (SELECT id FROM jobs WHERE status = 'fetched' AND not_before <= $3
                                  ORDER BY not_before, id LIMIT 1", $lock, ")
                      RETURNING *"),
            message: concat!("UPDATE outbox SET status = 'sending', lease_owner = $1, lease_token = lease_token + 1,
                          lease_until = $2, attempts = attempts + 1, updated_at = $3
                      WHERE id = (SELECT o.id FROM outbox o
                                  WHERE o.status = 'pending' AND o.not_before <= $3
                                    AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.chat_id = o.chat_id AND e.id <> o.id
                                                    AND e.status IN ('pending', 'sending')
                                                    AND (e.status = 'sending' OR (e.id < o.id AND e.kind <> 'progress')))
                                    AND NOT EXISTS (SELECT 1 FROM chat_pacing p WHERE p.chat_id = o.chat_id
                                                    AND p.not_before > $3)
                                    AND NOT EXISTS (SELECT 1 FROM chat_pacing g WHERE g.chat_id = 0 AND g.not_before > $3)
                                  ORDER BY o.priority, o.id LIMIT 1", $lock, ")
                        AND status = 'pending'
                      RETURNING *"),
        }
    };
}

pub(crate) use claim_statements;

/// Generates the shared statements as methods of a backend store (`$store`, holding `pool`) and
/// as functions over a connection in module `$conn_mod`, for the database type `$db`.
macro_rules! define_backend {
    ($store:ident, $db:ty, $conn_mod:ident, $claims:expr) => {
        /// Statements over one connection, so they can run inside a transaction.
        pub(crate) mod $conn_mod {
            use $crate::domain::{ChatRef, Job, JobState, Lease, NewJob, Ticket, Timestamp};
            use $crate::store::backend::JobRow;
            use $crate::store::{QueryContext, StoreResult};

            type Conn = <$db as sqlx::Database>::Connection;

            pub(crate) async fn job(c: &mut Conn, ticket: Ticket) -> StoreResult<Option<Job>> {
                sqlx::query_as::<_, JobRow>("SELECT * FROM jobs WHERE id = $1")
                    .bind(ticket.0).fetch_optional(&mut *c).await.context("reading a job")?
                    .map(JobRow::into_job).transpose()
            }

            pub(crate) async fn job_by_file(c: &mut Conn, chat: ChatRef, file_unique_id: &str) -> StoreResult<Option<Job>> {
                sqlx::query_as::<_, JobRow>("SELECT * FROM jobs WHERE chat_id = $1 AND file_unique_id = $2")
                    .bind(chat.0).bind(file_unique_id).fetch_optional(&mut *c).await.context("finding a job by file")?
                    .map(JobRow::into_job).transpose()
            }

            pub(crate) async fn jobs(c: &mut Conn, chat: Option<ChatRef>, state: Option<JobState>, limit: i64) -> StoreResult<Vec<Job>> {
                // Two statements: with `($1 IS NULL OR chat_id = $1)` SQLite cannot use `jobs_chat`
                // and scans the table, inside intake's write transaction (/jobs).
                let sql = if chat.is_some() {
                    "SELECT * FROM jobs WHERE chat_id = $1 AND ($2 IS NULL OR status = $2) ORDER BY id DESC LIMIT $3"
                } else {
                    "SELECT * FROM jobs WHERE $1 IS NULL AND ($2 IS NULL OR status = $2) ORDER BY id DESC LIMIT $3"
                };
                sqlx::query_as::<_, JobRow>(sql)
                .bind(chat.map(|c| c.0)).bind(state.map(JobState::as_str)).bind(limit)
                .fetch_all(&mut *c).await.context("listing jobs")?
                .into_iter().map(JobRow::into_job).collect()
            }

            /// Counts at most `cap` + 1: intake runs this inside its write transaction, so its cost
            /// must not grow with the backlog.
            pub(crate) async fn jobs_ahead(c: &mut Conn, ticket: Ticket, cap: i64) -> StoreResult<i64> {
                sqlx::query_scalar(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE status IN ('accepted', 'fetched', 'processing')
                                             AND id < $1 LIMIT $2) AS ahead",
                )
                .bind(ticket.0).bind(cap + 1).fetch_one(&mut *c).await.context("counting the jobs ahead")
            }

            /// Counts at most `cap`: intake runs this inside its write transaction for every new
            /// document, so its cost must not grow with the chat's history.
            pub(crate) async fn waiting_in_chat(c: &mut Conn, chat: ChatRef, now: Timestamp, cap: i64) -> StoreResult<i64> {
                sqlx::query_scalar(
                    "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE chat_id = $1 AND status = 'accepted'
                                             AND (lease_until IS NULL OR lease_until <= $2) LIMIT $3) AS waiting",
                )
                .bind(chat.0).bind(now.as_millis()).bind(cap).fetch_one(&mut *c).await.context("counting the chat's waiting jobs")
            }

            pub(crate) async fn insert_job(c: &mut Conn, job: &NewJob, now: Timestamp) -> StoreResult<Ticket> {
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO jobs (update_id, chat_id, user_id, message_id, file_id, file_unique_id, declared_name,
                                       declared_mime, declared_size, operation, status, not_before, created_at, updated_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'accepted', $11, $11, $11) RETURNING id",
                )
                .bind(job.update_id).bind(job.chat.0).bind(job.user_id).bind(job.message_id).bind(&job.file_id)
                .bind(&job.file_unique_id).bind(&job.declared_name).bind(&job.declared_mime).bind(job.declared_size)
                .bind(job.operation.as_str()).bind(now.as_millis())
                .fetch_one(&mut *c).await.context("inserting a job")?;
                Ok(Ticket(id))
            }

            pub(crate) async fn resubmit_job(c: &mut Conn, ticket: Ticket, from: JobState, job: &NewJob, now: Timestamp) -> StoreResult<bool> {
                let done = sqlx::query(
                    "UPDATE jobs SET status = 'accepted', update_id = $3, message_id = $4, file_id = $5, declared_name = $6,
                        declared_mime = $7, declared_size = $8, local_path = NULL, real_size = NULL, sha256 = NULL,
                        detected_format = NULL, lease_owner = NULL, lease_until = NULL, attempts = 0, not_before = $9,
                        source_losses = 0, error = NULL, error_detail = NULL, result_path = NULL, result_size = NULL, result_file_id = NULL,
                        result_expires_at = NULL, updated_at = $9
                     WHERE id = $1 AND status = $2",
                )
                .bind(ticket.0).bind(from.as_str()).bind(job.update_id).bind(job.message_id).bind(&job.file_id)
                .bind(&job.declared_name).bind(&job.declared_mime).bind(job.declared_size).bind(now.as_millis())
                .execute(&mut *c).await.context("resubmitting a job")?;
                Ok(done.rows_affected() == 1)
            }

            pub(crate) async fn fail_job(c: &mut Conn, ticket: Ticket, from: JobState, lease: Option<&Lease>, reason: &str, detail: &str, now: Timestamp) -> StoreResult<bool> {
                let done = sqlx::query(
                    "UPDATE jobs SET status = 'failed', error = $4, error_detail = $5, local_path = NULL,
                        lease_owner = NULL, lease_until = NULL, updated_at = $6
                     WHERE id = $1 AND status = $2 AND ($3 IS NULL OR (lease_token = $3 AND lease_owner IS NOT NULL))",
                )
                .bind(ticket.0).bind(from.as_str()).bind(lease.map(|l| l.token)).bind(reason).bind(detail).bind(now.as_millis())
                .execute(&mut *c).await.context("failing a job")?;
                Ok(done.rows_affected() == 1)
            }

            pub(crate) async fn complete_job(c: &mut Conn, ticket: Ticket, lease: &Lease, done: &$crate::store::Completion, now: Timestamp) -> StoreResult<bool> {
                let res = sqlx::query(
                    "UPDATE jobs SET status = 'ready', result_path = $3, result_size = $4, detected_format = $5,
                        result_expires_at = $6, local_path = NULL, lease_owner = NULL, lease_until = NULL, updated_at = $7
                     WHERE id = $1 AND status = 'processing' AND lease_token = $2 AND lease_owner IS NOT NULL",
                )
                .bind(ticket.0).bind(lease.token).bind(&done.result_path).bind(done.result_size)
                .bind(&done.detected_format).bind(done.expires_at.as_millis()).bind(now.as_millis())
                .execute(&mut *c).await.context("completing a job")?;
                Ok(res.rows_affected() == 1)
            }

        }

        impl $store {
            /// See [`crate::store::Store::begin`].
            pub async fn begin(&self) -> $crate::store::StoreResult<$crate::store::Tx> {
                use $crate::store::QueryContext;
                Ok($crate::store::Tx { tx: self.begin_write().await.context("starting a transaction")?.into() })
            }

            /// See [`crate::store::Store::job`].
            pub async fn job(&self, ticket: $crate::domain::Ticket) -> $crate::store::StoreResult<Option<$crate::domain::Job>> {
                let mut c = self.conn().await?;
                $conn_mod::job(&mut c, ticket).await
            }

            /// See [`crate::store::Store::jobs`].
            pub async fn jobs(&self, f: &$crate::store::JobFilter) -> $crate::store::StoreResult<Vec<$crate::domain::Job>> {
                let mut c = self.conn().await?;
                $conn_mod::jobs(&mut c, f.chat, f.state, f.limit).await
            }

            /// See [`crate::store::Store::claim_job`].
            pub async fn claim_job(&self, stage: $crate::store::Stage, owner: &str, now: $crate::domain::Timestamp, lease_len: std::time::Duration, limits: &$crate::store::ClaimLimits) -> $crate::store::StoreResult<Option<$crate::domain::Job>> {
                use $crate::store::QueryContext;
                let claims: &$crate::store::backend::ClaimSql = &$claims;
                let statements: &[&str] = match stage {
                    $crate::store::Stage::Download => &[claims.download],
                    $crate::store::Stage::Process => &[claims.process_lapsed, claims.process_fetched],
                };
                for &sql in statements {
                    let claimed = sqlx::query_as::<_, $crate::store::backend::JobRow>(sql)
                        .bind(owner).bind(now.plus(lease_len).as_millis()).bind(now.as_millis())
                        .bind(limits.unknown_size).bind(limits.max_size).bind(limits.per_chat)
                        .fetch_optional(&self.pool).await.context("claiming a job")?;
                    if let Some(row) = claimed {
                        return row.into_job().map(Some);
                    }
                }
                Ok(None)
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
                sqlx::query_as::<_, $crate::store::backend::JobRow>(sql)
                .bind(expired_at.map($crate::domain::Timestamp::as_millis))
                .fetch_all(&self.pool).await.context("listing results")?
                .into_iter().map($crate::store::backend::JobRow::into_job).collect()
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

            /// See [`crate::store::Store::next_waiting_download`].
            pub async fn next_waiting_download(&self, now: $crate::domain::Timestamp) -> $crate::store::StoreResult<Option<$crate::domain::Job>> {
                use $crate::store::QueryContext;
                sqlx::query_as::<_, $crate::store::backend::JobRow>(
                    "SELECT * FROM jobs WHERE status = 'accepted' AND not_before <= $1
                       AND (lease_until IS NULL OR lease_until <= $1)
                     ORDER BY not_before, id LIMIT 1",
                )
                .bind(now.as_millis()).fetch_optional(&self.pool).await.context("finding the next download")?
                .map($crate::store::backend::JobRow::into_job).transpose()
            }

            /// See [`crate::store::Store::jobs_holding_files`].
            pub async fn jobs_holding_files(&self, owner_prefix: &str, now: $crate::domain::Timestamp) -> $crate::store::StoreResult<Vec<$crate::domain::Ticket>> {
                use $crate::store::QueryContext;
                let ids: Vec<i64> = sqlx::query_scalar(
                    "SELECT id FROM jobs WHERE status IN ('fetched', 'processing')
                        OR (status = 'accepted' AND lease_until > $2 AND substr(lease_owner, 1, length($1)) = $1)",
                )
                .bind(owner_prefix).bind(now.as_millis()).fetch_all(&self.pool).await.context("listing the jobs that hold files")?;
                Ok(ids.into_iter().map($crate::domain::Ticket).collect())
            }

            /// See [`crate::store::Store::renew_job_lease`].
            pub async fn renew_job_lease(&self, ticket: $crate::domain::Ticket, lease: &$crate::domain::Lease, until: $crate::domain::Timestamp, now: $crate::domain::Timestamp) -> $crate::store::StoreResult<bool> {
                use $crate::store::QueryContext;
                let done = sqlx::query("UPDATE jobs SET lease_until = $3, updated_at = $4 WHERE id = $1 AND lease_token = $2 AND lease_owner IS NOT NULL")
                    .bind(ticket.0).bind(lease.token).bind(until.as_millis()).bind(now.as_millis())
                    .execute(&self.pool).await.context("renewing a job lease")?;
                Ok(done.rows_affected() == 1)
            }

            /// See [`crate::store::Store::mark_fetched`].
            pub async fn mark_fetched(&self, ticket: $crate::domain::Ticket, lease: &$crate::domain::Lease, path: &str, size: i64, sha256: &str, now: $crate::domain::Timestamp) -> $crate::store::StoreResult<bool> {
                use $crate::store::QueryContext;
                let done = sqlx::query(
                    "UPDATE jobs SET status = 'fetched', local_path = $3, real_size = $4, sha256 = $5, attempts = 0,
                        not_before = $6, lease_owner = NULL, lease_until = NULL, error_detail = NULL, updated_at = $6
                     WHERE id = $1 AND status = 'accepted' AND lease_token = $2 AND lease_owner IS NOT NULL",
                )
                .bind(ticket.0).bind(lease.token).bind(path).bind(size).bind(sha256).bind(now.as_millis())
                .execute(&self.pool).await.context("marking a job fetched")?;
                Ok(done.rows_affected() == 1)
            }

            /// See [`crate::store::Store::release_job`].
            pub async fn release_job(&self, ticket: $crate::domain::Ticket, lease: &$crate::domain::Lease, r: &$crate::store::Release, to: $crate::domain::JobState, now: $crate::domain::Timestamp) -> $crate::store::StoreResult<bool> {
                use $crate::store::QueryContext;
                let clear_source = to == $crate::domain::JobState::Accepted;
                let done = sqlx::query(
                    "UPDATE jobs SET status = $4, not_before = $5, error_detail = COALESCE($6, error_detail),
                        attempts = CASE WHEN $7 = 2 THEN 0 WHEN $7 = 1 AND attempts > 0 THEN attempts - 1 ELSE attempts END,
                        local_path = CASE WHEN $8 THEN NULL ELSE local_path END,
                        source_losses = source_losses + CASE WHEN $10 THEN 1 ELSE 0 END,
                        lease_owner = NULL, lease_until = NULL, updated_at = $9
                     WHERE id = $1 AND status = $2 AND lease_token = $3 AND lease_owner IS NOT NULL",
                )
                .bind(ticket.0).bind(r.from.as_str()).bind(lease.token).bind(to.as_str()).bind(r.not_before.as_millis())
                .bind(r.detail.as_deref()).bind(r.attempts.code()).bind(clear_source).bind(now.as_millis())
                .bind(r.event == $crate::domain::JobEvent::SourceLost)
                .execute(&self.pool).await.context("releasing a job")?;
                Ok(done.rows_affected() == 1)
            }

            /// See [`crate::store::Store::fail_job`].
            #[expect(clippy::too_many_arguments, reason = "mirrors Store::fail_job")]
            pub async fn fail_job(&self, ticket: $crate::domain::Ticket, from: $crate::domain::JobState, lease: Option<&$crate::domain::Lease>, reason: &str, detail: &str, notices: &[$crate::domain::NewMessage], now: $crate::domain::Timestamp) -> $crate::store::StoreResult<bool> {
                use $crate::store::QueryContext;
                let mut tx = self.begin_write().await.context("starting a transaction")?;
                if !$conn_mod::fail_job(&mut tx, ticket, from, lease, reason, detail, now).await? {
                    return Ok(false);
                }
                for notice in notices {
                    $crate::store::outbox::enqueue(&mut $crate::store::Conn::from(&mut *tx), notice, now).await?;
                }
                tx.commit().await.context("committing a failure")?;
                Ok(true)
            }

            /// See [`crate::store::Store::complete_job`].
            pub async fn complete_job(&self, ticket: $crate::domain::Ticket, lease: &$crate::domain::Lease, done: &$crate::store::Completion, deliveries: &[$crate::domain::NewMessage], now: $crate::domain::Timestamp) -> $crate::store::StoreResult<bool> {
                use $crate::store::QueryContext;
                let mut tx = self.begin_write().await.context("starting a transaction")?;
                if !$conn_mod::complete_job(&mut tx, ticket, lease, done, now).await? {
                    return Ok(false);
                }
                for delivery in deliveries {
                    $crate::store::outbox::enqueue(&mut $crate::store::Conn::from(&mut *tx), delivery, now).await?;
                }
                tx.commit().await.context("committing a completion")?;
                Ok(true)
            }

            /// See [`crate::store::Store::forget_result_file_id`].
            pub async fn forget_result_file_id(&self, ticket: $crate::domain::Ticket, now: $crate::domain::Timestamp) -> $crate::store::StoreResult<()> {
                use $crate::store::QueryContext;
                sqlx::query("UPDATE jobs SET result_file_id = NULL, updated_at = $2 WHERE id = $1")
                    .bind(ticket.0).bind(now.as_millis()).execute(&self.pool).await.context("forgetting a file_id")?;
                Ok(())
            }

            /// See [`crate::store::Store::close`].
            pub async fn close(&self) {
                self.pool.close().await;
            }

            async fn conn(&self) -> $crate::store::StoreResult<sqlx::pool::PoolConnection<$db>> {
                use $crate::store::QueryContext;
                self.pool.acquire().await.context("acquiring a connection")
            }
        }
    };
}

pub(crate) use define_backend;

/// Transaction statements dispatched to the backend the transaction belongs to.
pub(crate) mod tx {
    use super::super::{StoreResult, Transaction, Tx};
    use crate::domain::{ChatRef, Job, JobState, NewJob, Ticket, Timestamp};

    macro_rules! on_tx {
        ($tx:ident, $f:ident($($arg:expr),*)) => {
            match &mut $tx.tx {
                Transaction::Sqlite(t) => crate::store::sqlite::conn::$f(t, $($arg),*).await,
                #[cfg(feature = "postgres")]
                Transaction::Postgres(t) => crate::store::postgres::conn::$f(t, $($arg),*).await,
            }
        };
    }

    pub(crate) async fn job_by_file(tx: &mut Tx, chat: ChatRef, file_unique_id: &str) -> StoreResult<Option<Job>> {
        on_tx!(tx, job_by_file(chat, file_unique_id))
    }
    pub(crate) async fn job(tx: &mut Tx, ticket: Ticket) -> StoreResult<Option<Job>> {
        on_tx!(tx, job(ticket))
    }
    pub(crate) async fn chat_jobs(tx: &mut Tx, chat: ChatRef, limit: i64) -> StoreResult<Vec<Job>> {
        on_tx!(tx, jobs(Some(chat), None, limit))
    }
    pub(crate) async fn jobs_ahead(tx: &mut Tx, ticket: Ticket, cap: i64) -> StoreResult<i64> {
        on_tx!(tx, jobs_ahead(ticket, cap))
    }
    pub(crate) async fn waiting_in_chat(tx: &mut Tx, chat: ChatRef, now: Timestamp, cap: i64) -> StoreResult<i64> {
        on_tx!(tx, waiting_in_chat(chat, now, cap))
    }
    pub(crate) async fn insert_job(tx: &mut Tx, job: &NewJob, now: Timestamp) -> StoreResult<Ticket> {
        on_tx!(tx, insert_job(job, now))
    }
    pub(crate) async fn resubmit_job(
        tx: &mut Tx,
        ticket: Ticket,
        from: JobState,
        job: &NewJob,
        now: Timestamp,
    ) -> StoreResult<bool> {
        on_tx!(tx, resubmit_job(ticket, from, job, now))
    }
}
