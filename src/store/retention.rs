//! What the janitor reads and removes: results past their expiry, the jobs that may own files on
//! disk, and rows old enough to forget (across `updates`, `outbox`, `jobs` and `chat_pacing`).
//!
//! Files are the caller's: these statements only forget them, and the janitor deletes a file
//! after the change that forgot it committed (a crash in between leaves an orphan the next pass
//! removes).

use super::{Conn, QueryContext, Store, StoreResult, lease, outbox};
use crate::domain::{FileOwner, Job, JobEvent, JobState, NewMessage, Ticket, Timestamp, Transition};

/// The history [`Store::prune`] forgets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct History {
    /// Rows last changed before this are old enough.
    pub older_than: Timestamp,
    /// Whether ended jobs (failed, expired) go too, with their messages; otherwise jobs are kept
    /// for good.
    pub ended_jobs: bool,
}

/// Rows removed (or, in a dry run, that would be removed) by [`Store::prune`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Registered update ids.
    pub updates: u64,
    /// Outbox rows.
    pub messages: u64,
    /// Job rows.
    pub jobs: u64,
}

/// Every `ready` job, oldest expiry first.
pub const KEPT_RESULTS: &str = "SELECT * FROM jobs WHERE status = 'ready' ORDER BY result_expires_at, id";

/// The `ready` jobs expired at $1, oldest expiry first: a range of the partial index
/// `jobs_expiry`.
pub const DUE_RESULTS: &str =
    "SELECT * FROM jobs WHERE status = 'ready' AND result_expires_at <= $1 ORDER BY result_expires_at, id";

/// `ready` → `expired`, forgetting the result file: $1 ticket, $2 the expiry, kept when it is
/// earlier, $3 now, $4 the state it must be in, $5 the state it takes.
pub const EXPIRE_JOB: &str = "UPDATE jobs SET status = $5, result_path = NULL, result_file_id = NULL, secret = NULL,
        result_expires_at = CASE WHEN result_expires_at > $2 THEN $2 ELSE result_expires_at END,
        updated_at = $3
    WHERE id = $1 AND status = $4";

/// Every `ready` job expired at $1 now becomes `expired`, forgetting its result file; returns
/// their ids.
pub const EXPIRE_DUE: &str =
    "UPDATE jobs SET status = 'expired', result_path = NULL, result_file_id = NULL, secret = NULL, updated_at = $1
    WHERE status = 'ready' AND result_expires_at <= $1
    RETURNING id";

/// The jobs that may own files on disk (`accepted` … `ready`), with what the janitor judges their
/// files by.
pub const FILE_OWNERS: &str = "SELECT id, status, lease_owner, lease_token, lease_until, local_path, result_path
    FROM jobs WHERE status IN ('accepted', 'fetched', 'processing', 'ready')";

/// How many updates were registered before $1.
pub const COUNT_OLD_UPDATES: &str = "SELECT COUNT(*) FROM updates WHERE received_at < $1";
/// Forgets the updates registered before $1.
pub const DELETE_OLD_UPDATES: &str = "DELETE FROM updates WHERE received_at < $1";

/// How many messages ended (`sent`, `dead`, `failed`) before $1.
pub const COUNT_OLD_MESSAGES: &str =
    "SELECT COUNT(*) FROM outbox WHERE status IN ('sent', 'dead', 'failed') AND updated_at < $1";
/// Forgets the messages that ended before $1.
pub const DELETE_OLD_MESSAGES: &str =
    "DELETE FROM outbox WHERE status IN ('sent', 'dead', 'failed') AND updated_at < $1";

/// How many messages belong to jobs that ended (`failed`, `expired`) before $1.
pub const COUNT_OLD_JOB_MESSAGES: &str = "SELECT COUNT(*) FROM outbox
    WHERE job_id IN (SELECT id FROM jobs WHERE status IN ('failed', 'expired') AND updated_at < $1
      AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.ticket_id = jobs.id
                      AND NOT (r.status IN ('failed', 'expired') AND r.updated_at < $1)))";
/// Forgets the messages of jobs that ended before $1 (first: the messages point at the jobs).
pub const DELETE_OLD_JOB_MESSAGES: &str = "DELETE FROM outbox
    WHERE job_id IN (SELECT id FROM jobs WHERE status IN ('failed', 'expired') AND updated_at < $1
      AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.ticket_id = jobs.id
                      AND NOT (r.status IN ('failed', 'expired') AND r.updated_at < $1)))";

/// How many jobs ended (`failed`, `expired`) before $1.
pub const COUNT_OLD_JOBS: &str = "SELECT COUNT(*) FROM jobs WHERE status IN ('failed', 'expired') AND updated_at < $1
      AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.ticket_id = jobs.id
                      AND NOT (r.status IN ('failed', 'expired') AND r.updated_at < $1))";
/// Forgets the jobs that ended before $1. A ticket's first run goes only with its further runs
/// (they name it): while one of them is kept, so is it.
pub const DELETE_OLD_JOBS: &str = "DELETE FROM jobs WHERE status IN ('failed', 'expired') AND updated_at < $1
      AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.ticket_id = jobs.id
                      AND NOT (r.status IN ('failed', 'expired') AND r.updated_at < $1))";

/// Forgets the pacing rows that ran out before $1 (one row per chat, so not counted).
pub const DELETE_OLD_PACING: &str = "DELETE FROM chat_pacing WHERE not_before < $1";

/// The columns of a `jobs` row the janitor judges files by.
#[derive(Debug, sqlx::FromRow)]
struct FileOwnerRow {
    id: i64,
    status: String,
    lease_owner: Option<String>,
    lease_token: i64,
    lease_until: Option<i64>,
    local_path: Option<String>,
    result_path: Option<String>,
}

impl FileOwnerRow {
    /// What the row says about the job's files; an unknown state is corrupt.
    fn into_owner(self) -> StoreResult<FileOwner> {
        Ok(FileOwner {
            ticket: Ticket(self.id),
            state: self.status.parse()?,
            lease: lease(self.lease_owner, self.lease_token, self.lease_until),
            local_path: self.local_path,
            result_path: self.result_path,
        })
    }
}

/// Runs [`KEPT_RESULTS`].
pub(super) async fn kept_results(c: &mut Conn<'_>) -> StoreResult<Vec<Job>> {
    c.jobs(KEPT_RESULTS, &[], "listing results").await
}

/// Runs [`DUE_RESULTS`].
pub(super) async fn results_due(c: &mut Conn<'_>, at: Timestamp) -> StoreResult<Vec<Job>> {
    c.jobs(DUE_RESULTS, &[at.into()], "listing due results").await
}

/// Runs [`EXPIRE_JOB`]; `false` when the job was not in `step.from` any more.
pub(super) async fn expire_job(
    c: &mut Conn<'_>,
    ticket: Ticket,
    step: Transition,
    at: Timestamp,
    now: Timestamp,
) -> StoreResult<bool> {
    let expired = c
        .execute(
            EXPIRE_JOB,
            &[ticket.0.into(), at.into(), now.into(), step.from.as_str().into(), step.to.as_str().into()],
        )
        .await
        .context("expiring a result")?;
    Ok(expired == 1)
}

/// Runs [`EXPIRE_DUE`].
pub(super) async fn expire_due(c: &mut Conn<'_>, now: Timestamp) -> StoreResult<Vec<Ticket>> {
    let ids: Vec<i64> = c.scalars(EXPIRE_DUE, &[now.into()]).await.context("expiring results")?;
    Ok(ids.into_iter().map(Ticket).collect())
}

/// Runs [`FILE_OWNERS`].
pub(super) async fn file_owners(c: &mut Conn<'_>) -> StoreResult<Vec<FileOwner>> {
    c.fetch_all::<FileOwnerRow>(FILE_OWNERS, &[])
        .await
        .context("listing jobs that may own files")?
        .into_iter()
        .map(FileOwnerRow::into_owner)
        .collect()
}

/// Deletes (or, with `dry_run`, counts) the rows older than `before`: registered updates and
/// ended messages, and with `prune_jobs` ended jobs with their messages; a real run forgets old
/// pacing rows too. Run it in one transaction, so the counts hold together.
pub(super) async fn prune(c: &mut Conn<'_>, history: &History, dry_run: bool) -> StoreResult<Pruned> {
    let before = history.older_than;
    // Which count of `Pruned` each pair (dry run, real run) adds to.
    const UPDATES: usize = 0;
    const MESSAGES: usize = 1;
    const JOBS: usize = 2;
    let mut counts = [0u64; 3];
    let targets: &[(usize, &str, &str)] = if history.ended_jobs {
        &[
            (UPDATES, COUNT_OLD_UPDATES, DELETE_OLD_UPDATES),
            (MESSAGES, COUNT_OLD_MESSAGES, DELETE_OLD_MESSAGES),
            (MESSAGES, COUNT_OLD_JOB_MESSAGES, DELETE_OLD_JOB_MESSAGES),
            (JOBS, COUNT_OLD_JOBS, DELETE_OLD_JOBS),
        ]
    } else {
        &[(UPDATES, COUNT_OLD_UPDATES, DELETE_OLD_UPDATES), (MESSAGES, COUNT_OLD_MESSAGES, DELETE_OLD_MESSAGES)]
    };
    for &(slot, count, delete) in targets {
        let n = if dry_run {
            let n: i64 = c.scalar(count, &[before.into()]).await.context("counting old rows")?;
            u64::try_from(n).unwrap_or(0)
        } else {
            c.execute(delete, &[before.into()]).await.context("pruning old rows")?
        };
        counts[slot] += n;
    }
    if !dry_run {
        c.execute(DELETE_OLD_PACING, &[before.into()]).await.map(drop).context("pruning old pacing")?;
    }
    Ok(Pruned { updates: counts[UPDATES], messages: counts[MESSAGES], jobs: counts[JOBS] })
}

impl Store {
    /// Every `ready` job (each keeps a result on disk), oldest expiry first.
    pub async fn kept_results(&self) -> StoreResult<Vec<Job>> {
        kept_results(&mut self.acquire().await?.conn()).await
    }

    /// The `ready` jobs whose result expired at `at`, oldest expiry first.
    pub async fn results_due(&self, at: Timestamp) -> StoreResult<Vec<Job>> {
        results_due(&mut self.acquire().await?.conn(), at).await
    }

    /// `ready` → `expired` (expiry moved back to `at` if that is earlier), forgetting the result
    /// file, and queues `notice` in the same transaction. The caller deletes the file after this
    /// commits. `false`: the job was not `ready` any more.
    pub async fn expire_job(
        &self,
        ticket: Ticket,
        at: Timestamp,
        notice: Option<&NewMessage>,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let step = Transition::of(JobState::Ready, JobEvent::Expired)?;
        let mut tx = self.begin().await?;
        if !expire_job(&mut tx.conn(), ticket, step, at, now).await? {
            return Ok(false);
        }
        if let Some(notice) = notice {
            outbox::enqueue(&mut tx.conn(), notice, now).await?;
        }
        tx.commit_as("committing an expiry").await?;
        Ok(true)
    }

    /// Every `ready` job past its `result_expires_at` becomes `expired`, forgetting its result
    /// file, in one statement; returns their tickets. The caller deletes the files after this
    /// returns (a crash in between leaves orphans the next pass removes).
    pub async fn expire_due(&self, now: Timestamp) -> StoreResult<Vec<Ticket>> {
        // One statement for every due job: its states are literals, so it is a range of the
        // partial index `jobs_expiry` (a test checks they are the move `next` allows).
        expire_due(&mut self.acquire().await?.conn(), now).await
    }

    /// Every job that may own files on disk (`accepted` … `ready`), with only what the janitor
    /// judges files by.
    pub async fn file_owners(&self) -> StoreResult<Vec<FileOwner>> {
        file_owners(&mut self.acquire().await?.conn()).await
    }

    /// Deletes the rows of `history`: registered updates, delivered/dead/failed messages and,
    /// when asked, ended jobs with their messages, all older than its bound.
    pub async fn prune(&self, history: &History) -> StoreResult<Pruned> {
        let mut tx = self.begin().await?;
        let pruned = prune(&mut tx.conn(), history, false).await?;
        tx.commit_as("committing the pruning").await?;
        Ok(pruned)
    }

    /// How many rows [`prune`](Self::prune) would delete, deleting nothing.
    pub async fn count_prunable(&self, history: &History) -> StoreResult<Pruned> {
        prune(&mut self.acquire().await?.conn(), history, true).await
    }
}
