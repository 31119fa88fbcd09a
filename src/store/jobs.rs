//! The `jobs` table: one row per *run* (one operation asked of one chat's document), from intake
//! to its result's expiry.
//!
//! A ticket is one chat's one document; its runs are rows of this table. The ticket's first run
//! is the row whose id is the ticket number (`ticket_id` NULL); every further run (another
//! operation, asked by a button or a caption) names that row in `ticket_id`. `jobs_file` keeps one
//! ticket per chat and document (over first runs), `jobs_run` one run per ticket, operation and
//! arguments. This shape was chosen because it disturbs least: a run has the whole state
//! machine a job had (leases, attempts, the byte budget, outbox keys, retention, the janitor), so
//! every statement about jobs holds per run unchanged, and every job that existed before
//! migration 0011 is a ticket with one run that keeps its number. A separate `tickets` table would
//! have renumbered what people see, or made every job statement join it.
//!
//! Every state change is a conditional `UPDATE … WHERE id = $1 AND status = <expected>
//! [AND lease_token = <held>]`; zero rows changed means someone else moved the row first, which
//! the functions here report as `false`, never as an error. The claim statements, which lock
//! differently per backend, are the backends' own (`CLAIMS` in `sqlite.rs` and `postgres.rs`);
//! the statements that expire results are in `retention.rs`.

use std::time::Duration;

use super::{ClaimLimits, Completion, Conn, QueryContext, Release, Stage, StoreError, StoreResult, lease};
use crate::domain::{
    ChatRef, Job, JobEvent, JobState, Lease, MessageId, NodeName, Operation, Password, ResultFile, SourceFile,
    Submission, Ticket, Timestamp, Transition, UpdateId, UserId,
};

/// One job: $1 ticket.
pub const JOB: &str = "SELECT * FROM jobs WHERE id = $1";

/// A chat's ticket for a file (its first run), by the unique key: $1 chat, $2 Telegram's
/// file_unique_id.
pub const JOB_BY_FILE: &str = "SELECT * FROM jobs WHERE chat_id = $1 AND file_unique_id = $2 AND ticket_id IS NULL";

/// Every run of ticket $1, the first one first.
pub const RUNS: &str = "SELECT * FROM jobs WHERE id = $1 OR ticket_id = $1 ORDER BY id";

/// A chat's jobs, newest first: $1 chat, $2 only this state (NULL: any), $3 at most, $4 only
/// those last changed at or after this (NULL: any).
pub const CHAT_JOBS: &str = "SELECT * FROM jobs WHERE chat_id = $1 AND ($2 IS NULL OR status = $2)
      AND ($4 IS NULL OR updated_at >= $4) ORDER BY id DESC LIMIT $3";

/// Every chat's jobs, newest first: $1 NULL (the chat of [`CHAT_JOBS`], so the binds match), $2
/// only this state (NULL: any), $3 at most, $4 only those last changed at or after this (NULL:
/// any).
pub const ALL_JOBS: &str = "SELECT * FROM jobs WHERE $1 IS NULL AND ($2 IS NULL OR status = $2)
      AND ($4 IS NULL OR updated_at >= $4) ORDER BY id DESC LIMIT $3";

/// How many jobs are in each state (states without jobs are left out).
pub const JOBS_BY_STATE: &str = "SELECT status, COUNT(*) FROM jobs GROUP BY status";

/// When the oldest job still waiting for its download (`accepted`) was taken in; NULL when none
/// waits.
pub const OLDEST_WAITING_JOB: &str = "SELECT MIN(created_at) FROM jobs WHERE status = 'accepted'";

/// How many unfinished jobs came before $1 ticket, counted up to $2.
pub const JOBS_AHEAD: &str =
    "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE status IN ('accepted', 'fetched', 'processing')
                         AND id < $1 LIMIT $2) AS ahead";

/// How many of $1 chat's jobs wait in `accepted` without a live lease at $2 now, counted up to $3.
pub const WAITING_IN_CHAT: &str = "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE chat_id = $1 AND status = 'accepted'
                         AND (lease_until IS NULL OR lease_until <= $2) LIMIT $3) AS waiting";

/// Records a new `accepted` job, due now, and returns its ticket: $1 update, $2 chat, $3 user,
/// $4 message, $5 file_id, $6 file_unique_id, $7 declared name, $8 declared MIME type, $9
/// declared size, $10 operation, $11 now, $12 the operation's arguments, $13 its secret (a
/// decrypt's password; NULL: none), $14 the sender's language code, $15 the ticket of a further
/// run (NULL: this is the ticket's first run), $16 whether no caption chose the operation.
pub const INSERT_JOB: &str =
    "INSERT INTO jobs (update_id, chat_id, user_id, message_id, file_id, file_unique_id, declared_name,
                   declared_mime, declared_size, operation, status, not_before, created_at, updated_at,
                   arguments, secret, language_code, ticket_id, chosen_by_default)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'accepted', $11, $11, $11, $12, $13, $14, $15, $16) RETURNING id";

/// Starts an ended job again, due now, forgetting everything of its last run: $1 ticket, $2 the
/// state it must be in, $3 update, $4 message, $5 file_id, $6 declared name, $7 declared MIME
/// type, $8 declared size, $9 now, $10 the state it takes (`accepted`), $11 operation, $12 its
/// arguments, $13 its secret (NULL: none), $14 the sender's language code, $15 whether no caption
/// chose the operation.
pub const RESUBMIT_JOB: &str = "UPDATE jobs SET status = $10, update_id = $3, message_id = $4, file_id = $5, declared_name = $6,
        declared_mime = $7, declared_size = $8, operation = $11, arguments = $12, secret = $13, language_code = $14,
        chosen_by_default = $15, local_path = NULL, real_size = NULL, sha256 = NULL,
        detected_format = NULL, lease_owner = NULL, lease_until = NULL, attempts = 0, not_before = $9,
        source_losses = 0, error = NULL, error_detail = NULL, result_path = NULL, result_size = NULL, result_file_id = NULL,
        result_expires_at = NULL, node = NULL, updated_at = $9
    WHERE id = $1 AND status = $2";

/// Fails a job, forgetting its source and its secret: $1 ticket, $2 the state it must be in, $3 the lease token
/// it must hold (NULL: any, leased or not), $4 reason, $5 detail, $6 now, $7 the state it takes
/// (`failed`).
pub const FAIL_JOB: &str =
    "UPDATE jobs SET status = $7, error = $4, error_detail = $5, local_path = NULL, secret = NULL,
        lease_owner = NULL, lease_until = NULL, updated_at = $6
    WHERE id = $1 AND status = $2 AND ($3 IS NULL OR (lease_token = $3 AND lease_owner IS NOT NULL))";

/// `processing` → `ready` with the result, as the lease holder, forgetting the secret: $1 ticket, $2 lease token, $3
/// result path, $4 result size, $5 detected format, $6 when the result expires, $7 now, $8 the
/// state it must be in, $9 the state it takes.
pub const COMPLETE_JOB: &str = "UPDATE jobs SET status = $9, result_path = $3, result_size = $4, detected_format = $5,
        result_expires_at = $6, local_path = NULL, secret = NULL, lease_owner = NULL, lease_until = NULL, updated_at = $7
    WHERE id = $1 AND status = $8 AND lease_token = $2 AND lease_owner IS NOT NULL";

/// The head of the download queue, limits aside: the `accepted` job due first at $1 now and not
/// under a live lease.
pub const NEXT_WAITING_DOWNLOAD: &str = "SELECT * FROM jobs WHERE status = 'accepted' AND not_before <= $1
      AND (lease_until IS NULL OR lease_until <= $1)
    ORDER BY not_before, id LIMIT 1";

/// The jobs that may hold files of this machine: every `fetched` or `processing` job of node $3
/// (NULL: of any node) or of none, and the `accepted` ones under a live lease (at $2 now) whose
/// owner starts with $1.
pub const JOBS_HOLDING_FILES: &str = "SELECT id FROM jobs
    WHERE (status IN ('fetched', 'processing') AND ($3 IS NULL OR node IS NULL OR node = $3))
        OR (status = 'accepted' AND lease_until > $2 AND substr(lease_owner, 1, length($1)) = $1)";

/// Switches a run whose operation no caption chose to $3 operation with $4 arguments, as the
/// lease holder, while `processing`: $1 ticket, $2 lease token, $5 now. Not when the ticket has a
/// run of that operation already (`jobs_run` keeps one per ticket and operation).
pub const SWITCH_OPERATION: &str = "UPDATE jobs SET operation = $3, arguments = $4, chosen_by_default = 0, updated_at = $5
    WHERE id = $1 AND status = 'processing' AND lease_token = $2 AND lease_owner IS NOT NULL AND chosen_by_default = 1
      AND NOT EXISTS (SELECT 1 FROM jobs other WHERE COALESCE(other.ticket_id, other.id) = COALESCE(jobs.ticket_id, jobs.id)
                        AND other.operation = $3 AND other.arguments = $4)";

/// Extends a held lease: $1 ticket, $2 lease token, $3 until, $4 now.
pub const RENEW_JOB_LEASE: &str = "UPDATE jobs SET lease_until = $3, updated_at = $4
    WHERE id = $1 AND lease_token = $2 AND lease_owner IS NOT NULL";

/// `accepted` → `fetched` with the verified source, as the lease holder, due now with its attempts
/// starting again: $1 ticket, $2 lease token, $3 path, $4 size, $5 sha256, $6 now, $7 the state
/// it must be in, $8 the state it takes, $9 the node whose data folder holds the source.
pub const MARK_FETCHED: &str =
    "UPDATE jobs SET status = $8, local_path = $3, real_size = $4, sha256 = $5, attempts = 0, node = $9,
        not_before = $6, lease_owner = NULL, lease_until = NULL, error_detail = NULL, updated_at = $6
    WHERE id = $1 AND status = $7 AND lease_token = $2 AND lease_owner IS NOT NULL";

/// Gives a job back, as the lease holder: $1 ticket, $2 the state it must be in, $3 lease token,
/// $4 the next state, $5 not before, $6 detail (NULL: unchanged), $7 the attempt rule's code
/// (0 spent, 1 refunded, 2 restarted), $8 whether the source is forgotten (and with it the node
/// that held it), $9 now, $10 whether the source was lost (counted).
pub const RELEASE_JOB: &str = "UPDATE jobs SET status = $4, not_before = $5, error_detail = COALESCE($6, error_detail),
        attempts = CASE WHEN $7 = 2 THEN 0 WHEN $7 = 1 AND attempts > 0 THEN attempts - 1 ELSE attempts END,
        local_path = CASE WHEN $8 THEN NULL ELSE local_path END,
        node = CASE WHEN $8 THEN NULL ELSE node END,
        source_losses = source_losses + CASE WHEN $10 THEN 1 ELSE 0 END,
        lease_owner = NULL, lease_until = NULL, updated_at = $9
    WHERE id = $1 AND status = $2 AND lease_token = $3 AND lease_owner IS NOT NULL";

/// Stores the file id of a delivered result, for re-delivery without upload: $1 job, $2 file id,
/// $3 now. Only while the result is `ready`.
pub const RECORD_RESULT_FILE_ID: &str =
    "UPDATE jobs SET result_file_id = $2, updated_at = $3 WHERE id = $1 AND status = 'ready'";

/// Forgets the file id of a result Telegram refused to resend: $1 job, $2 now.
pub const FORGET_RESULT_FILE_ID: &str = "UPDATE jobs SET result_file_id = NULL, updated_at = $2 WHERE id = $1";

/// Moves a chat's jobs to its new id: $1 old chat, $2 new chat, $3 now. A file the new chat sent
/// already keeps its old row, since a chat has one job per file.
pub const MOVE_CHAT_JOBS: &str = "UPDATE jobs SET chat_id = $2, updated_at = $3
    WHERE chat_id = $1
      AND NOT EXISTS (SELECT 1 FROM jobs n WHERE n.chat_id = $2 AND n.file_unique_id = jobs.file_unique_id)";

/// A `jobs` row as the databases return it.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct JobRow {
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
    arguments: String,
    secret: Option<String>,
    language_code: Option<String>,
    chosen_by_default: i64,
    ticket_id: Option<i64>,
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
    node: Option<String>,
    created_at: i64,
    updated_at: i64,
}

impl JobRow {
    /// The job the row holds; an unknown operation or state is corrupt.
    pub(super) fn into_job(self) -> StoreResult<Job> {
        // A source is recorded whole by `MARK_FETCHED` and a result by `COMPLETE_JOB`; a part of
        // one without the rest is a row no statement writes.
        let source = match (self.real_size, self.sha256) {
            (Some(size), Some(sha256)) => {
                Some(SourceFile { size, sha256, path: self.local_path, format: self.detected_format })
            }
            (None, None) if self.local_path.is_none() && self.detected_format.is_none() => None,
            _ => return Err(StoreError::Corrupt(format!("job {} has part of a source recorded", self.id))),
        };
        let result = match (self.result_size, self.result_expires_at) {
            (Some(size), Some(expires_at)) => Some(ResultFile {
                path: self.result_path,
                size,
                expires_at: Timestamp::from_millis(expires_at),
                telegram_file_id: self.result_file_id,
            }),
            (None, None) if self.result_path.is_none() && self.result_file_id.is_none() => None,
            _ => return Err(StoreError::Corrupt(format!("job {} has part of a result recorded", self.id))),
        };
        Ok(Job {
            ticket: Ticket(self.id),
            submission: Submission {
                update_id: UpdateId(self.update_id),
                chat: ChatRef(self.chat_id),
                user_id: self.user_id.map(UserId),
                message_id: MessageId(self.message_id),
                file_id: self.file_id,
                file_unique_id: self.file_unique_id,
                declared_name: self.declared_name,
                declared_mime: self.declared_mime,
                declared_size: self.declared_size,
                operation: stored_operation(&self.operation, &self.arguments, self.secret)?,
                chosen_by_default: self.chosen_by_default != 0,
                language_code: self.language_code,
                run_of: self.ticket_id.map(Ticket),
            },
            state: self.status.parse()?,
            lease: lease(self.lease_owner, self.lease_token, self.lease_until),
            attempts: self.attempts,
            not_before: Timestamp::from_millis(self.not_before),
            source_losses: self.source_losses,
            source,
            result,
            error: self.error,
            error_detail: self.error_detail,
            node: stored_node(self.node)?,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        })
    }
}

/// The operation a row names, with its arguments and, for a decrypt, its password.
fn stored_operation(name: &str, arguments: &str, secret: Option<String>) -> StoreResult<Operation> {
    let operation = Operation::from_stored(name, arguments)
        .map_err(|e| StoreError::Corrupt(format!("a job's operation {name:?} {arguments:?}: {e}")))?;
    Ok(match (operation, secret) {
        (Operation::Decrypt { .. }, Some(secret)) => Operation::Decrypt { password: Password::new(secret) },
        (operation, _) => operation,
    })
}

/// The node a row names; a name no node could have is corrupt.
pub(super) fn stored_node(name: Option<String>) -> StoreResult<Option<NodeName>> {
    name.map(|name| NodeName::new(&name).ok_or_else(|| StoreError::Corrupt(format!("node name {name:?} in a job"))))
        .transpose()
}

/// The secret a job keeps apart from its arguments: a decrypt's password (`None`: none).
fn secret_of(operation: &Operation) -> Option<&str> {
    match operation {
        Operation::Decrypt { password } if !password.is_empty() => Some(password.expose()),
        _ => None,
    }
}

/// Runs [`JOB`].
pub(super) async fn job(c: &mut Conn<'_>, ticket: Ticket) -> StoreResult<Option<Job>> {
    dispatch!(c, |c| sqlx::query_as::<_, JobRow>(JOB).bind(ticket.0).fetch_optional(c).await)
        .context("reading a job")?
        .map(JobRow::into_job)
        .transpose()
}

/// Runs [`JOB_BY_FILE`].
pub(super) async fn job_by_file(c: &mut Conn<'_>, chat: ChatRef, file_unique_id: &str) -> StoreResult<Option<Job>> {
    dispatch!(c, |c| sqlx::query_as::<_, JobRow>(JOB_BY_FILE).bind(chat.0).bind(file_unique_id).fetch_optional(c).await)
        .context("finding a job by file")?
        .map(JobRow::into_job)
        .transpose()
}

/// Runs [`RUNS`].
pub(super) async fn runs(c: &mut Conn<'_>, ticket: Ticket) -> StoreResult<Vec<Job>> {
    dispatch!(c, |c| sqlx::query_as::<_, JobRow>(RUNS).bind(ticket.0).fetch_all(c).await)
        .context("reading a ticket's runs")?
        .into_iter()
        .map(JobRow::into_job)
        .collect()
}

/// Runs [`CHAT_JOBS`] for a chat, [`ALL_JOBS`] without one.
pub(super) async fn jobs(
    c: &mut Conn<'_>,
    chat: Option<ChatRef>,
    state: Option<JobState>,
    since: Option<Timestamp>,
    limit: i64,
) -> StoreResult<Vec<Job>> {
    // Two statements: with `($1 IS NULL OR chat_id = $1)` SQLite cannot use `jobs_chat` and scans
    // the table, inside intake's write transaction (/jobs).
    let sql = if chat.is_some() { CHAT_JOBS } else { ALL_JOBS };
    dispatch!(c, |c| sqlx::query_as::<_, JobRow>(sql)
        .bind(chat.map(|chat| chat.0))
        .bind(state.map(JobState::as_str))
        .bind(limit)
        .bind(since.map(Timestamp::as_millis))
        .fetch_all(c)
        .await)
    .context("listing jobs")?
    .into_iter()
    .map(JobRow::into_job)
    .collect()
}

/// Runs [`JOBS_BY_STATE`]: every state with its count, zero included, in life order.
pub(super) async fn jobs_by_state(c: &mut Conn<'_>) -> StoreResult<Vec<(JobState, u64)>> {
    let rows: Vec<(String, i64)> =
        dispatch!(c, |c| sqlx::query_as(JOBS_BY_STATE).fetch_all(c).await).context("counting jobs by state")?;
    Ok(JobState::ALL
        .into_iter()
        .map(|state| {
            let n = rows.iter().find(|(s, _)| s == state.as_str()).map_or(0, |(_, n)| *n);
            (state, u64::try_from(n).unwrap_or(0))
        })
        .collect())
}

/// Runs [`OLDEST_WAITING_JOB`].
pub(super) async fn oldest_waiting_job(c: &mut Conn<'_>) -> StoreResult<Option<Timestamp>> {
    let since: Option<i64> = dispatch!(c, |c| sqlx::query_scalar(OLDEST_WAITING_JOB).fetch_one(c).await)
        .context("finding the oldest waiting job")?;
    Ok(since.map(Timestamp::from_millis))
}

/// Runs [`JOBS_AHEAD`], counting at most `cap` + 1: intake runs this inside its write
/// transaction, so its cost must not grow with the backlog.
pub(super) async fn jobs_ahead(c: &mut Conn<'_>, ticket: Ticket, cap: i64) -> StoreResult<i64> {
    dispatch!(c, |c| sqlx::query_scalar(JOBS_AHEAD).bind(ticket.0).bind(cap + 1).fetch_one(c).await)
        .context("counting the jobs ahead")
}

/// Runs [`WAITING_IN_CHAT`], counting at most `cap`: intake runs this inside its write
/// transaction for every new document, so its cost must not grow with the chat's history.
pub(super) async fn waiting_in_chat(c: &mut Conn<'_>, chat: ChatRef, now: Timestamp, cap: i64) -> StoreResult<i64> {
    dispatch!(c, |c| sqlx::query_scalar(WAITING_IN_CHAT)
        .bind(chat.0)
        .bind(now.as_millis())
        .bind(cap)
        .fetch_one(c)
        .await)
    .context("counting the chat's waiting jobs")
}

/// Runs [`INSERT_JOB`].
pub(super) async fn insert_job(c: &mut Conn<'_>, job: &Submission, now: Timestamp) -> StoreResult<Ticket> {
    let id: i64 = dispatch!(c, |c| sqlx::query_scalar(INSERT_JOB)
        .bind(job.update_id.0)
        .bind(job.chat.0)
        .bind(job.user_id.map(|u| u.0))
        .bind(job.message_id.0)
        .bind(&job.file_id)
        .bind(&job.file_unique_id)
        .bind(&job.declared_name)
        .bind(&job.declared_mime)
        .bind(job.declared_size)
        .bind(job.operation.name())
        .bind(now.as_millis())
        .bind(job.operation.arguments())
        .bind(secret_of(&job.operation))
        .bind(job.language_code.as_deref())
        .bind(job.run_of.map(|t| t.0))
        .bind(i64::from(job.chosen_by_default))
        .fetch_one(c)
        .await)
    .context("inserting a job")?;
    Ok(Ticket(id))
}

/// Runs [`RESUBMIT_JOB`]; `false` when the job was not in `step.from` any more.
pub(super) async fn resubmit_job(
    c: &mut Conn<'_>,
    ticket: Ticket,
    step: Transition,
    job: &Submission,
    now: Timestamp,
) -> StoreResult<bool> {
    let resubmitted = dispatch!(c, |c| sqlx::query(RESUBMIT_JOB)
        .bind(ticket.0)
        .bind(step.from.as_str())
        .bind(job.update_id.0)
        .bind(job.message_id.0)
        .bind(&job.file_id)
        .bind(&job.declared_name)
        .bind(&job.declared_mime)
        .bind(job.declared_size)
        .bind(now.as_millis())
        .bind(step.to.as_str())
        .bind(job.operation.name())
        .bind(job.operation.arguments())
        .bind(secret_of(&job.operation))
        .bind(job.language_code.as_deref())
        .bind(i64::from(job.chosen_by_default))
        .execute(c)
        .await
        .map(|done| done.rows_affected()))
    .context("resubmitting a job")?;
    Ok(resubmitted == 1)
}

/// Runs [`FAIL_JOB`]; `false` when the job was not in `step.from`, or not under `lease`, any more.
pub(super) async fn fail_job(
    c: &mut Conn<'_>,
    ticket: Ticket,
    step: Transition,
    lease: Option<&Lease>,
    reason: &str,
    detail: &str,
    now: Timestamp,
) -> StoreResult<bool> {
    let failed = dispatch!(c, |c| sqlx::query(FAIL_JOB)
        .bind(ticket.0)
        .bind(step.from.as_str())
        .bind(lease.map(|l| l.token))
        .bind(reason)
        .bind(detail)
        .bind(now.as_millis())
        .bind(step.to.as_str())
        .execute(c)
        .await
        .map(|done| done.rows_affected()))
    .context("failing a job")?;
    Ok(failed == 1)
}

/// Runs [`COMPLETE_JOB`]; `false` when the lease was lost.
pub(super) async fn complete_job(
    c: &mut Conn<'_>,
    ticket: Ticket,
    step: Transition,
    lease: &Lease,
    done: &Completion,
    now: Timestamp,
) -> StoreResult<bool> {
    let completed = dispatch!(c, |c| sqlx::query(COMPLETE_JOB)
        .bind(ticket.0)
        .bind(lease.token)
        .bind(&done.result_path)
        .bind(done.result_size)
        .bind(&done.detected_format)
        .bind(done.expires_at.as_millis())
        .bind(now.as_millis())
        .bind(step.from.as_str())
        .bind(step.to.as_str())
        .execute(c)
        .await
        .map(|done| done.rows_affected()))
    .context("completing a job")?;
    Ok(completed == 1)
}

/// Claims the next job of `stage` with the claim statements of the connection's backend
/// ([`ClaimSql`](super::statements::ClaimSql)), for `owner` with a lease of `lease_len`: the
/// process stage tries a lapsed `processing` job first, then a `fetched` one, of `node` only
/// (`None`: of any node).
pub(super) async fn claim_job(
    c: &mut Conn<'_>,
    stage: Stage,
    owner: &str,
    node: Option<&NodeName>,
    now: Timestamp,
    lease_len: Duration,
    limits: &ClaimLimits,
) -> StoreResult<Option<Job>> {
    let claims = c.claims();
    let statements: &[&str] = match stage {
        Stage::Download => &[claims.download],
        Stage::Process => &[claims.process_lapsed, claims.process_fetched],
    };
    for &sql in statements {
        let claimed = dispatch!(c, |c| sqlx::query_as::<_, JobRow>(sql)
            .bind(owner)
            .bind(now.plus(lease_len).as_millis())
            .bind(now.as_millis())
            .bind(limits.unknown_size)
            .bind(limits.max_size)
            .bind(limits.per_chat)
            .bind(node.map(NodeName::as_str))
            .fetch_optional(c)
            .await)
        .context("claiming a job")?;
        if let Some(row) = claimed {
            return row.into_job().map(Some);
        }
    }
    Ok(None)
}

/// Runs [`NEXT_WAITING_DOWNLOAD`].
pub(super) async fn next_waiting_download(c: &mut Conn<'_>, now: Timestamp) -> StoreResult<Option<Job>> {
    dispatch!(c, |c| sqlx::query_as::<_, JobRow>(NEXT_WAITING_DOWNLOAD).bind(now.as_millis()).fetch_optional(c).await)
        .context("finding the next download")?
        .map(JobRow::into_job)
        .transpose()
}

/// Runs [`JOBS_HOLDING_FILES`].
pub(super) async fn jobs_holding_files(
    c: &mut Conn<'_>,
    owner_prefix: &str,
    node: Option<&NodeName>,
    now: Timestamp,
) -> StoreResult<Vec<Ticket>> {
    let ids: Vec<i64> = dispatch!(c, |c| sqlx::query_scalar(JOBS_HOLDING_FILES)
        .bind(owner_prefix)
        .bind(now.as_millis())
        .bind(node.map(NodeName::as_str))
        .fetch_all(c)
        .await)
    .context("listing the jobs that hold files")?;
    Ok(ids.into_iter().map(Ticket).collect())
}

/// Runs [`SWITCH_OPERATION`]; `false` when the lease was lost, the run's operation was chosen on
/// purpose, or the ticket has a run of `operation` already.
pub(super) async fn switch_operation(
    c: &mut Conn<'_>,
    ticket: Ticket,
    lease: &Lease,
    operation: &Operation,
    now: Timestamp,
) -> StoreResult<bool> {
    let switched = dispatch!(c, |c| sqlx::query(SWITCH_OPERATION)
        .bind(ticket.0)
        .bind(lease.token)
        .bind(operation.name())
        .bind(operation.arguments())
        .bind(now.as_millis())
        .execute(c)
        .await
        .map(|done| done.rows_affected()))
    .context("switching a run's operation")?;
    Ok(switched == 1)
}

/// Runs [`RENEW_JOB_LEASE`]; `false` when the lease was lost.
pub(super) async fn renew_lease(
    c: &mut Conn<'_>,
    ticket: Ticket,
    lease: &Lease,
    until: Timestamp,
    now: Timestamp,
) -> StoreResult<bool> {
    let renewed = dispatch!(c, |c| sqlx::query(RENEW_JOB_LEASE)
        .bind(ticket.0)
        .bind(lease.token)
        .bind(until.as_millis())
        .bind(now.as_millis())
        .execute(c)
        .await
        .map(|done| done.rows_affected()))
    .context("renewing a job lease")?;
    Ok(renewed == 1)
}

/// Runs [`MARK_FETCHED`]; `false` when the lease was lost.
pub(super) async fn mark_fetched(
    c: &mut Conn<'_>,
    ticket: Ticket,
    step: Transition,
    lease: &Lease,
    source: &Fetched<'_>,
    now: Timestamp,
) -> StoreResult<bool> {
    let fetched = dispatch!(c, |c| sqlx::query(MARK_FETCHED)
        .bind(ticket.0)
        .bind(lease.token)
        .bind(source.path)
        .bind(source.size)
        .bind(source.sha256)
        .bind(now.as_millis())
        .bind(step.from.as_str())
        .bind(step.to.as_str())
        .bind(source.node.map(NodeName::as_str))
        .execute(c)
        .await
        .map(|done| done.rows_affected()))
    .context("marking a job fetched")?;
    Ok(fetched == 1)
}

/// A verified download, as [`MARK_FETCHED`] records it.
pub(super) struct Fetched<'a> {
    /// Where it is.
    pub(super) path: &'a str,
    /// Its size.
    pub(super) size: i64,
    /// Its SHA-256, in hex.
    pub(super) sha256: &'a str,
    /// The host whose data folder holds it.
    pub(super) node: Option<&'a NodeName>,
}

/// Runs [`RELEASE_JOB`], making the move `step`; `false` when the lease was lost.
pub(super) async fn release_job(
    c: &mut Conn<'_>,
    ticket: Ticket,
    lease: &Lease,
    r: &Release,
    step: Transition,
    now: Timestamp,
) -> StoreResult<bool> {
    let clear_source = step.to == JobState::Accepted;
    let released = dispatch!(c, |c| sqlx::query(RELEASE_JOB)
        .bind(ticket.0)
        .bind(step.from.as_str())
        .bind(lease.token)
        .bind(step.to.as_str())
        .bind(r.not_before.as_millis())
        .bind(r.detail.as_deref())
        .bind(r.attempts.code())
        .bind(clear_source)
        .bind(now.as_millis())
        .bind(r.event == JobEvent::SourceLost)
        .execute(c)
        .await
        .map(|done| done.rows_affected()))
    .context("releasing a job")?;
    Ok(released == 1)
}

/// Runs [`RECORD_RESULT_FILE_ID`].
pub(super) async fn record_result_file_id(
    c: &mut Conn<'_>,
    ticket: Ticket,
    file_id: &str,
    now: Timestamp,
) -> StoreResult<()> {
    dispatch!(c, |c| sqlx::query(RECORD_RESULT_FILE_ID)
        .bind(ticket.0)
        .bind(file_id)
        .bind(now.as_millis())
        .execute(c)
        .await
        .map(drop))
    .context("storing a result's file_id")
}

/// Runs [`FORGET_RESULT_FILE_ID`].
pub(super) async fn forget_result_file_id(c: &mut Conn<'_>, ticket: Ticket, now: Timestamp) -> StoreResult<()> {
    dispatch!(c, |c| sqlx::query(FORGET_RESULT_FILE_ID).bind(ticket.0).bind(now.as_millis()).execute(c).await.map(drop))
        .context("forgetting a file_id")
}

/// Runs [`MOVE_CHAT_JOBS`].
pub(super) async fn move_chat_jobs(c: &mut Conn<'_>, from: ChatRef, to: ChatRef, now: Timestamp) -> StoreResult<()> {
    dispatch!(c, |c| sqlx::query(MOVE_CHAT_JOBS)
        .bind(from.0)
        .bind(to.0)
        .bind(now.as_millis())
        .execute(c)
        .await
        .map(drop))
    .context("moving a chat's jobs")
}
