//! What is read of the `jobs` table: one job, a ticket's runs, listings and counts.

use super::JobFilter;
use crate::domain::{ChatRef, Job, JobState, NodeName, Ticket, Timestamp};
use crate::store::{Conn, QueryContext, Store, StoreResult, Tx};

/// One job: $1 ticket.
pub const JOB: &str = "SELECT * FROM jobs WHERE id = $1";

/// Runs [`JOB`].
async fn job(c: &mut Conn<'_>, ticket: Ticket) -> StoreResult<Option<Job>> {
    Ok(c.jobs(JOB, &[ticket.0.into()], "reading a job").await?.pop())
}

/// A chat's ticket for a file (its first run), by the unique key: $1 chat, $2 Telegram's
/// file_unique_id.
pub const JOB_BY_FILE: &str = "SELECT * FROM jobs WHERE chat_id = $1 AND file_unique_id = $2 AND ticket_id IS NULL";

/// Runs [`JOB_BY_FILE`].
async fn job_by_file(c: &mut Conn<'_>, chat: ChatRef, file_unique_id: &str) -> StoreResult<Option<Job>> {
    Ok(c.jobs(JOB_BY_FILE, &[chat.0.into(), file_unique_id.into()], "finding a job by file").await?.pop())
}

/// Every run of ticket $1, the first one first.
pub const RUNS: &str = "SELECT * FROM jobs WHERE id = $1 OR ticket_id = $1 ORDER BY id";

/// Runs [`RUNS`].
async fn runs(c: &mut Conn<'_>, ticket: Ticket) -> StoreResult<Vec<Job>> {
    c.jobs(RUNS, &[ticket.0.into()], "reading a ticket's runs").await
}

/// A chat's jobs, newest first: $1 chat, $2 only this state (NULL: any), $3 at most, $4 only
/// those last changed at or after this (NULL: any).
pub const CHAT_JOBS: &str = "SELECT * FROM jobs WHERE chat_id = $1 AND ($2 IS NULL OR status = $2)
      AND ($4 IS NULL OR updated_at >= $4) ORDER BY id DESC LIMIT $3";

/// Every chat's jobs, newest first: $1 NULL (the chat of [`CHAT_JOBS`], so the binds match), $2
/// only this state (NULL: any), $3 at most, $4 only those last changed at or after this (NULL:
/// any).
pub const ALL_JOBS: &str = "SELECT * FROM jobs WHERE $1 IS NULL AND ($2 IS NULL OR status = $2)
      AND ($4 IS NULL OR updated_at >= $4) ORDER BY id DESC LIMIT $3";

/// Runs [`CHAT_JOBS`] for a chat, [`ALL_JOBS`] without one.
async fn jobs(
    c: &mut Conn<'_>,
    chat: Option<ChatRef>,
    state: Option<JobState>,
    since: Option<Timestamp>,
    limit: i64,
) -> StoreResult<Vec<Job>> {
    // Two statements: with `($1 IS NULL OR chat_id = $1)` SQLite cannot use `jobs_chat` and scans
    // the table, inside intake's write transaction (/jobs).
    let sql = if chat.is_some() { CHAT_JOBS } else { ALL_JOBS };
    c.jobs(
        sql,
        &[
            chat.map(|chat| chat.0).into(),
            state.map(JobState::as_str).into(),
            limit.into(),
            since.map(Timestamp::as_millis).into(),
        ],
        "listing jobs",
    )
    .await
}

/// How many jobs are in each state (states without jobs are left out).
pub const JOBS_BY_STATE: &str = "SELECT status, COUNT(*) FROM jobs GROUP BY status";

/// Runs [`JOBS_BY_STATE`]: every state with its count, zero included, in life order.
pub(in crate::store) async fn jobs_by_state(c: &mut Conn<'_>) -> StoreResult<Vec<(JobState, u64)>> {
    c.count_by_state(JOBS_BY_STATE, JobState::ALL, JobState::as_str).await.context("counting jobs by state")
}

/// When the oldest job still waiting for its download (`accepted`) was taken in; NULL when none
/// waits.
pub const OLDEST_WAITING_JOB: &str = "SELECT MIN(created_at) FROM jobs WHERE status = 'accepted'";

/// Runs [`OLDEST_WAITING_JOB`].
pub(in crate::store) async fn oldest_waiting_job(c: &mut Conn<'_>) -> StoreResult<Option<Timestamp>> {
    let since: Option<i64> = c.scalar(OLDEST_WAITING_JOB, &[]).await.context("finding the oldest waiting job")?;
    Ok(since.map(Timestamp::from_millis))
}

/// How many unfinished jobs came before $1 ticket, counted up to $2.
pub const JOBS_AHEAD: &str =
    "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE status IN ('accepted', 'fetched', 'processing')
                         AND id < $1 LIMIT $2) AS ahead";

/// Runs [`JOBS_AHEAD`], counting at most `cap` + 1: intake runs this inside its write
/// transaction, so its cost must not grow with the backlog.
async fn jobs_ahead(c: &mut Conn<'_>, ticket: Ticket, cap: i64) -> StoreResult<i64> {
    c.scalar(JOBS_AHEAD, &[ticket.0.into(), (cap + 1).into()]).await.context("counting the jobs ahead")
}

/// How many of $1 chat's jobs wait in `accepted` without a live lease at $2 now, counted up to $3.
pub const WAITING_IN_CHAT: &str = "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE chat_id = $1 AND status = 'accepted'
                         AND (lease_until IS NULL OR lease_until <= $2) LIMIT $3) AS waiting";

/// Runs [`WAITING_IN_CHAT`], counting at most `cap`: intake runs this inside its write
/// transaction for every new document, so its cost must not grow with the chat's history.
async fn waiting_in_chat(c: &mut Conn<'_>, chat: ChatRef, now: Timestamp, cap: i64) -> StoreResult<i64> {
    c.scalar(WAITING_IN_CHAT, &[chat.0.into(), now.into(), cap.into()])
        .await
        .context("counting the chat's waiting jobs")
}

/// The head of the download queue, limits aside: the `accepted` job due first at $1 now and not
/// under a live lease.
pub const NEXT_WAITING_DOWNLOAD: &str = "SELECT * FROM jobs WHERE status = 'accepted' AND not_before <= $1
      AND (lease_until IS NULL OR lease_until <= $1)
    ORDER BY not_before, id LIMIT 1";

/// Runs [`NEXT_WAITING_DOWNLOAD`].
async fn next_waiting_download(c: &mut Conn<'_>, now: Timestamp) -> StoreResult<Option<Job>> {
    Ok(c.jobs(NEXT_WAITING_DOWNLOAD, &[now.into()], "finding the next download").await?.pop())
}

/// The jobs that may hold files of this machine: every `fetched` or `processing` job of node $3
/// (NULL: of any node) or of none, and the `accepted` ones under a live lease (at $2 now) whose
/// owner starts with $1.
pub const JOBS_HOLDING_FILES: &str = "SELECT id FROM jobs
    WHERE (status IN ('fetched', 'processing') AND ($3 IS NULL OR node IS NULL OR node = $3))
        OR (status = 'accepted' AND lease_until > $2 AND substr(lease_owner, 1, length($1)) = $1)";

/// Runs [`JOBS_HOLDING_FILES`].
async fn jobs_holding_files(
    c: &mut Conn<'_>,
    owner_prefix: &str,
    node: Option<&NodeName>,
    now: Timestamp,
) -> StoreResult<Vec<Ticket>> {
    let ids: Vec<i64> = c
        .scalars(JOBS_HOLDING_FILES, &[owner_prefix.into(), now.into(), node.map(NodeName::as_str).into()])
        .await
        .context("listing the jobs that hold files")?;
    Ok(ids.into_iter().map(Ticket).collect())
}

impl Store {
    /// One job by ticket.
    pub async fn job(&self, ticket: Ticket) -> StoreResult<Option<Job>> {
        job(&mut self.acquire().await?.conn(), ticket).await
    }

    /// Every run of `ticket` (the ticket's first run first); empty when there is no such ticket.
    pub async fn runs(&self, ticket: Ticket) -> StoreResult<Vec<Job>> {
        runs(&mut self.acquire().await?.conn(), ticket).await
    }

    /// Jobs matching `filter`, newest first.
    pub async fn jobs(&self, filter: &JobFilter) -> StoreResult<Vec<Job>> {
        jobs(&mut self.acquire().await?.conn(), filter.chat, filter.state, filter.since, filter.limit).await
    }

    /// The job a download claim would take next if nothing limited it (head of the queue).
    pub async fn next_waiting_download(&self, now: Timestamp) -> StoreResult<Option<Job>> {
        next_waiting_download(&mut self.acquire().await?.conn(), now).await
    }

    /// The jobs that may hold files of this machine, and so a place in its byte budget: every
    /// `fetched` or `processing` job of this handle's host (or of no host known), and the `accepted` ones under a live lease whose owner
    /// starts with `owner_prefix` (this process's downloads).
    pub async fn jobs_holding_files(&self, owner_prefix: &str, now: Timestamp) -> StoreResult<Vec<Ticket>> {
        jobs_holding_files(&mut self.acquire().await?.conn(), owner_prefix, self.node.as_ref(), now).await
    }
}

impl Tx {
    /// The chat's job for a file, by the unique key.
    pub async fn job_by_file(&mut self, chat: ChatRef, file_unique_id: &str) -> StoreResult<Option<Job>> {
        job_by_file(&mut self.conn(), chat, file_unique_id).await
    }

    /// Every run of `ticket` (the ticket's first run first); empty when there is no such ticket.
    pub async fn runs(&mut self, ticket: Ticket) -> StoreResult<Vec<Job>> {
        runs(&mut self.conn(), ticket).await
    }

    /// One job by ticket, inside the transaction.
    pub async fn job(&mut self, ticket: Ticket) -> StoreResult<Option<Job>> {
        job(&mut self.conn(), ticket).await
    }

    /// How many unfinished jobs came before `ticket` (its place in the queue), counted up to
    /// `cap` + 1 at most, so the cost stays bounded however long the queue is.
    pub async fn jobs_ahead(&mut self, ticket: Ticket, cap: u64) -> StoreResult<u64> {
        let cap = i64::try_from(cap).unwrap_or(i64::MAX - 1);
        Ok(u64::try_from(jobs_ahead(&mut self.conn(), ticket, cap).await?).unwrap_or(0))
    }

    /// The chat's latest jobs, newest first.
    pub async fn chat_jobs(&mut self, chat: ChatRef, limit: i64) -> StoreResult<Vec<Job>> {
        jobs(&mut self.conn(), Some(chat), None, None, limit).await
    }

    /// How many of `chat`'s jobs wait in `accepted` without a live download lease at `now`
    /// (queued, not downloading), counted up to `cap` at most.
    pub async fn waiting_in_chat(&mut self, chat: ChatRef, now: Timestamp, cap: u64) -> StoreResult<u64> {
        let cap = i64::try_from(cap).unwrap_or(i64::MAX);
        Ok(u64::try_from(waiting_in_chat(&mut self.conn(), chat, now, cap).await?).unwrap_or(0))
    }
}
