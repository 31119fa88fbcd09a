//! A job's moves through its life: taken in, resubmitted, fetched, released, switched,
//! failed, completed, and what its delivery records.

use super::{Completion, Release, secret_of};
use crate::domain::{
    ChatRef, JobEvent, JobState, Lease, NodeName, Operation, Submission, Ticket, Timestamp, Transition,
};
use crate::store::{Conn, QueryContext, Store, StoreResult, Tx};

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

/// Runs [`INSERT_JOB`].
async fn insert_job(c: &mut Conn<'_>, job: &Submission, now: Timestamp) -> StoreResult<Ticket> {
    let id: i64 = c
        .scalar(
            INSERT_JOB,
            &[
                job.update_id.0.into(),
                job.chat.0.into(),
                job.user_id.map(|u| u.0).into(),
                job.message_id.0.into(),
                (&job.file_id).into(),
                (&job.file_unique_id).into(),
                (&job.declared_name).into(),
                (&job.declared_mime).into(),
                job.declared_size.into(),
                job.operation.name().into(),
                now.into(),
                job.operation.arguments().into(),
                secret_of(&job.operation).into(),
                job.language_code.as_deref().into(),
                job.run_of.map(|t| t.0).into(),
                i64::from(job.chosen_by_default).into(),
            ],
        )
        .await
        .context("inserting a job")?;
    Ok(Ticket(id))
}

/// Starts an ended job again, due now, forgetting everything of its last run: $1 ticket, $2 the
/// state it must be in, $3 update, $4 message, $5 file_id, $6 declared name, $7 declared MIME
/// type, $8 declared size, $9 now, $10 the state it takes (`accepted`), $11 operation, $12 its
/// arguments, $13 its secret (NULL: none), $14 the sender's language code, $15 whether no caption
/// chose the operation.
pub const RESUBMIT_JOB: &str = "UPDATE jobs SET status = $10, update_id = $3, message_id = $4, file_id = $5, declared_name = $6,
        declared_mime = $7, declared_size = $8, operation = $11, arguments = $12, secret = $13, language_code = $14,
        chosen_by_default = $15, local_path = NULL, real_size = NULL, sha256 = NULL,
        detected_format = NULL, lease_owner = NULL, lease_until = NULL, attempts = 0, not_before = $9,
        source_losses = 0, error = NULL, error_detail = NULL, result_path = NULL, result_size = NULL, result_parts = NULL, result_file_id = NULL,
        result_expires_at = NULL, node = NULL, updated_at = $9
    WHERE id = $1 AND status = $2";

/// Runs [`RESUBMIT_JOB`]; `false` when the job was not in `step.from` any more.
async fn resubmit_job(
    c: &mut Conn<'_>,
    ticket: Ticket,
    step: Transition,
    job: &Submission,
    now: Timestamp,
) -> StoreResult<bool> {
    let resubmitted = c
        .execute(
            RESUBMIT_JOB,
            &[
                ticket.0.into(),
                step.from.as_str().into(),
                job.update_id.0.into(),
                job.message_id.0.into(),
                (&job.file_id).into(),
                (&job.declared_name).into(),
                (&job.declared_mime).into(),
                job.declared_size.into(),
                now.into(),
                step.to.as_str().into(),
                job.operation.name().into(),
                job.operation.arguments().into(),
                secret_of(&job.operation).into(),
                job.language_code.as_deref().into(),
                i64::from(job.chosen_by_default).into(),
            ],
        )
        .await
        .context("resubmitting a job")?;
    Ok(resubmitted == 1)
}

/// Fails a job, forgetting its source and its secret, and ending its gathering (a cancelled
/// `/merge` is not the chat's open one any more): $1 ticket, $2 the state it must be in, $3 the lease token
/// it must hold (NULL: any, leased or not), $4 reason, $5 detail, $6 now, $7 the state it takes
/// (`failed`).
pub const FAIL_JOB: &str =
    "UPDATE jobs SET status = $7, error = $4, error_detail = $5, local_path = NULL, secret = NULL,
        lease_owner = NULL, lease_until = NULL, updated_at = $6, gathering = NULL
    WHERE id = $1 AND status = $2 AND ($3 IS NULL OR (lease_token = $3 AND lease_owner IS NOT NULL))";

/// Runs [`FAIL_JOB`]; `false` when the job was not in `step.from`, or not under `lease`, any more.
pub(in crate::store) async fn fail_job(
    c: &mut Conn<'_>,
    ticket: Ticket,
    step: Transition,
    lease: Option<&Lease>,
    reason: &str,
    detail: &str,
    now: Timestamp,
) -> StoreResult<bool> {
    let failed = c
        .execute(
            FAIL_JOB,
            &[
                ticket.0.into(),
                step.from.as_str().into(),
                lease.map(|l| l.token).into(),
                reason.into(),
                detail.into(),
                now.into(),
                step.to.as_str().into(),
            ],
        )
        .await
        .context("failing a job")?;
    Ok(failed == 1)
}

/// `processing` → `ready` with the result, as the lease holder, forgetting the secret: $1 ticket, $2 lease token, $3
/// result path, $4 result size, $5 detected format, $6 when the result expires, $7 now, $8 the
/// state it must be in, $9 the state it takes, $10 its parts (NULL: one file).
pub const COMPLETE_JOB: &str = "UPDATE jobs SET status = $9, result_path = $3, result_size = $4, result_parts = $10, detected_format = $5,
        result_expires_at = $6, local_path = NULL, secret = NULL, lease_owner = NULL, lease_until = NULL, updated_at = $7
    WHERE id = $1 AND status = $8 AND lease_token = $2 AND lease_owner IS NOT NULL";

/// Runs [`COMPLETE_JOB`]; `false` when the lease was lost.
pub(in crate::store) async fn complete_job(
    c: &mut Conn<'_>,
    ticket: Ticket,
    step: Transition,
    lease: &Lease,
    done: &Completion,
    now: Timestamp,
) -> StoreResult<bool> {
    let completed = c
        .execute(
            COMPLETE_JOB,
            &[
                ticket.0.into(),
                lease.token.into(),
                (&done.result_path).into(),
                done.result_size.into(),
                (&done.detected_format).into(),
                done.expires_at.into(),
                now.into(),
                step.from.as_str().into(),
                step.to.as_str().into(),
                done.parts.map(i64::from).into(),
            ],
        )
        .await
        .context("completing a job")?;
    Ok(completed == 1)
}

/// Switches a run whose operation no caption chose to $3 operation with $4 arguments, as the
/// lease holder, while `processing`: $1 ticket, $2 lease token, $5 now. Not when the ticket has a
/// run of that operation already (`jobs_run` keeps one per ticket and operation).
pub const SWITCH_OPERATION: &str = "UPDATE jobs SET operation = $3, arguments = $4, chosen_by_default = 0, updated_at = $5
    WHERE id = $1 AND status = 'processing' AND lease_token = $2 AND lease_owner IS NOT NULL AND chosen_by_default = 1
      AND NOT EXISTS (SELECT 1 FROM jobs other WHERE COALESCE(other.ticket_id, other.id) = COALESCE(jobs.ticket_id, jobs.id)
                        AND other.operation = $3 AND other.arguments = $4)";

/// Runs [`SWITCH_OPERATION`]; `false` when the lease was lost, the run's operation was chosen on
/// purpose, or the ticket has a run of `operation` already.
async fn switch_operation(
    c: &mut Conn<'_>,
    ticket: Ticket,
    lease: &Lease,
    operation: &Operation,
    now: Timestamp,
) -> StoreResult<bool> {
    let switched = c
        .execute(
            SWITCH_OPERATION,
            &[ticket.0.into(), lease.token.into(), operation.name().into(), operation.arguments().into(), now.into()],
        )
        .await
        .context("switching a run's operation")?;
    Ok(switched == 1)
}

/// `accepted` → `fetched` with the verified source, as the lease holder, due now with its attempts
/// starting again: $1 ticket, $2 lease token, $3 path, $4 size, $5 sha256, $6 now, $7 the state
/// it must be in, $8 the state it takes, $9 the node whose data folder holds the source.
pub const MARK_FETCHED: &str =
    "UPDATE jobs SET status = $8, local_path = $3, real_size = $4, sha256 = $5, attempts = 0, node = $9,
        not_before = $6, lease_owner = NULL, lease_until = NULL, error_detail = NULL, updated_at = $6
    WHERE id = $1 AND status = $7 AND lease_token = $2 AND lease_owner IS NOT NULL";

/// Runs [`MARK_FETCHED`]; `false` when the lease was lost.
async fn mark_fetched(
    c: &mut Conn<'_>,
    ticket: Ticket,
    step: Transition,
    lease: &Lease,
    source: &Fetched<'_>,
    now: Timestamp,
) -> StoreResult<bool> {
    let fetched = c
        .execute(
            MARK_FETCHED,
            &[
                ticket.0.into(),
                lease.token.into(),
                source.path.into(),
                source.size.into(),
                source.sha256.into(),
                now.into(),
                step.from.as_str().into(),
                step.to.as_str().into(),
                source.node.map(NodeName::as_str).into(),
            ],
        )
        .await
        .context("marking a job fetched")?;
    Ok(fetched == 1)
}

/// A verified download, as [`MARK_FETCHED`] records it.
struct Fetched<'a> {
    /// Where it is.
    path: &'a str,
    /// Its size.
    size: i64,
    /// Its SHA-256, in hex.
    sha256: &'a str,
    /// The host whose data folder holds it.
    node: Option<&'a NodeName>,
}

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

/// Runs [`RELEASE_JOB`], making the move `step`; `false` when the lease was lost.
async fn release_job(
    c: &mut Conn<'_>,
    ticket: Ticket,
    lease: &Lease,
    r: &Release,
    step: Transition,
    now: Timestamp,
) -> StoreResult<bool> {
    let clear_source = step.to == JobState::Accepted;
    let released = c
        .execute(
            RELEASE_JOB,
            &[
                ticket.0.into(),
                step.from.as_str().into(),
                lease.token.into(),
                step.to.as_str().into(),
                r.not_before.into(),
                r.detail.as_deref().into(),
                r.attempts.code().into(),
                clear_source.into(),
                now.into(),
                (r.event == JobEvent::SourceLost).into(),
            ],
        )
        .await
        .context("releasing a job")?;
    Ok(released == 1)
}

/// Stores the file id of a delivered result, for re-delivery without upload: $1 job, $2 file id,
/// $3 now. Only while the result is `ready`.
pub const RECORD_RESULT_FILE_ID: &str =
    "UPDATE jobs SET result_file_id = $2, updated_at = $3 WHERE id = $1 AND status = 'ready'";

/// Runs [`RECORD_RESULT_FILE_ID`].
pub(in crate::store) async fn record_result_file_id(
    c: &mut Conn<'_>,
    ticket: Ticket,
    file_id: &str,
    now: Timestamp,
) -> StoreResult<()> {
    c.execute(RECORD_RESULT_FILE_ID, &[ticket.0.into(), file_id.into(), now.into()])
        .await
        .map(drop)
        .context("storing a result's file_id")
}

/// Forgets the file id of a result Telegram refused to resend: $1 job, $2 now.
pub const FORGET_RESULT_FILE_ID: &str = "UPDATE jobs SET result_file_id = NULL, updated_at = $2 WHERE id = $1";

/// Runs [`FORGET_RESULT_FILE_ID`].
async fn forget_result_file_id(c: &mut Conn<'_>, ticket: Ticket, now: Timestamp) -> StoreResult<()> {
    c.execute(FORGET_RESULT_FILE_ID, &[ticket.0.into(), now.into()]).await.map(drop).context("forgetting a file_id")
}

/// Moves a chat's jobs to its new id: $1 old chat, $2 new chat, $3 now. A file the new chat sent
/// already keeps its old row, since a chat has one job per file.
pub const MOVE_CHAT_JOBS: &str = "UPDATE jobs SET chat_id = $2, updated_at = $3
    WHERE chat_id = $1
      AND NOT EXISTS (SELECT 1 FROM jobs n WHERE n.chat_id = $2 AND n.file_unique_id = jobs.file_unique_id)";

/// Runs [`MOVE_CHAT_JOBS`].
pub(in crate::store) async fn move_chat_jobs(
    c: &mut Conn<'_>,
    from: ChatRef,
    to: ChatRef,
    now: Timestamp,
) -> StoreResult<()> {
    c.execute(MOVE_CHAT_JOBS, &[from.0.into(), to.0.into(), now.into()]).await.map(drop).context("moving a chat's jobs")
}

impl Store {
    /// Switches a `processing` run whose operation no caption chose to `operation` (one without a
    /// secret), as the lease holder. `false`: the lease was lost, the operation was chosen on
    /// purpose, or the ticket has a run of `operation` already.
    pub async fn switch_operation(
        &self,
        ticket: Ticket,
        lease: &Lease,
        operation: &crate::domain::Operation,
        now: Timestamp,
    ) -> StoreResult<bool> {
        switch_operation(&mut self.acquire().await?.conn(), ticket, lease, operation, now).await
    }

    /// `accepted` → `fetched` with the verified source, as the lease holder.
    pub async fn mark_fetched(
        &self,
        ticket: Ticket,
        lease: &Lease,
        path: &str,
        size: i64,
        sha256: &str,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let step = Transition::of(JobState::Accepted, JobEvent::Fetched)?;
        let source = Fetched { path, size, sha256, node: self.node.as_ref() };
        mark_fetched(&mut self.acquire().await?.conn(), ticket, step, lease, &source, now).await
    }

    /// Gives a job back to be tried again later, as the lease holder.
    pub async fn release_job(
        &self,
        ticket: Ticket,
        lease: &Lease,
        release: &Release,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let step = Transition::of(release.from, release.event)?;
        release_job(&mut self.acquire().await?.conn(), ticket, lease, release, step, now).await
    }

    /// Forgets the stored file_id of a result Telegram refused to resend.
    pub async fn forget_result_file_id(&self, ticket: Ticket, now: Timestamp) -> StoreResult<()> {
        forget_result_file_id(&mut self.acquire().await?.conn(), ticket, now).await
    }
}

impl Tx {
    /// Inserts a new `accepted` job and returns its ticket.
    pub async fn insert_job(&mut self, job: &Submission, now: Timestamp) -> StoreResult<Ticket> {
        insert_job(&mut self.conn(), job, now).await
    }

    /// Starts an ended job again (`expired`/`failed` → `accepted`) with the new update's file_id.
    pub async fn resubmit_job(
        &mut self,
        ticket: Ticket,
        from: JobState,
        job: &Submission,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let step = Transition::of(from, JobEvent::Resubmitted)?;
        resubmit_job(&mut self.conn(), ticket, step, job, now).await
    }

    /// Cancels an unfinished job in state `from`, whoever holds it: it becomes `failed` with
    /// `reason`, its lease ends (its holder's next renewal fails, and the holder stops) and its
    /// source is forgotten. `false` when the job was not in `from` any more.
    pub async fn cancel_job(
        &mut self,
        ticket: Ticket,
        from: JobState,
        reason: &str,
        detail: &str,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let step = Transition::of(from, JobEvent::Cancelled)?;
        fail_job(&mut self.conn(), ticket, step, None, reason, detail, now).await
    }
}
