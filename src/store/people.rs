//! What people and admins ask of the store beyond a document's own life: cancelling and
//! retrying one job, forgetting a person, invites, and the figures of `/stats`.
//!
//! The statements touch `jobs`, `outbox`, `invited_users`, `dead_chats` and `flood_waits`; they
//! live together because each serves one of those requests, not one table.

use std::time::Duration;

use super::{Conn, QueryContext, Store, StoreResult, Tx, outbox};
use crate::domain::{
    BotStats as Stats, ChatRef, Job, JobEvent, JobState, NewMessage, Ticket, Timestamp, Transition, UserId,
};

/// Sends a failed job back to the queue, due now, with its attempts and its last run forgotten:
/// $1 ticket, $2 now, $3 the state it takes and $4 the state it must be in (of
/// `Transition::of(Failed, Retried)`).
pub const RETRY_JOB: &str = "UPDATE jobs SET status = $3, attempts = 0, source_losses = 0, error = NULL,
        error_detail = NULL, local_path = NULL, node = NULL, lease_owner = NULL, lease_until = NULL, not_before = $2,
        updated_at = $2
    WHERE id = $1 AND status = $4";

/// The jobs that ended (`failed`, `expired`) at or after $1, oldest change first: what their
/// files' reaper looks at. A range of the partial index `jobs_ended`, so its cost follows the
/// jobs that ended lately, not the table.
pub const ENDED_SINCE: &str =
    "SELECT id FROM jobs WHERE status IN ('failed', 'expired') AND updated_at >= $1 ORDER BY updated_at, id";

/// Forgets a person's jobs: $1 user, $2 now, $3 the reason an unfinished one reads. Names, MIME
/// types and Telegram's result file id go; a `ready` job becomes `expired` now, an unfinished one
/// `failed`, both without files (the reaper deletes them). It moves every row of the person at
/// once, so it names its states as literals; a unit test in `statements` checks them against the
/// state machine.
pub const FORGET_JOBS: &str = "UPDATE jobs SET declared_name = NULL, declared_mime = NULL, result_file_id = NULL,
        local_path = NULL, result_path = NULL, lease_owner = NULL, lease_until = NULL, secret = NULL,
        error = CASE WHEN status IN ('accepted', 'fetched', 'processing') THEN $3 ELSE error END,
        result_expires_at = CASE WHEN status = 'ready' THEN $2 ELSE result_expires_at END,
        status = CASE WHEN status = 'ready' THEN 'expired'
                      WHEN status IN ('accepted', 'fetched', 'processing') THEN 'failed' ELSE status END,
        updated_at = $2
    WHERE user_id = $1";

/// Empties the texts of a person's jobs' messages (they name the files) and drops those not sent
/// yet: $1 user, $2 now. A row being sent right now is left to its sender.
pub const FORGET_MESSAGES: &str = "UPDATE outbox SET body = '', button_label = NULL, button_data = NULL,
        error = CASE WHEN status IN ('pending', 'unknown') THEN 'forgotten at the person''s request' ELSE error END,
        status = CASE WHEN status IN ('pending', 'unknown') THEN 'failed' ELSE status END,
        updated_at = $2
    WHERE job_id IN (SELECT id FROM jobs WHERE user_id = $1) AND status <> 'sending'";

/// The download queue's head at $1 now, in claim order: `accepted` jobs not under a live lease,
/// at most $2. A ticket still gathering files (an album's, an open `/merge`'s) is not in line
/// yet: its status message is its question or its count, which a place in line must not
/// overwrite.
pub const QUEUE_HEAD: &str =
    "SELECT * FROM jobs WHERE status = 'accepted' AND (lease_until IS NULL OR lease_until <= $1)
        AND gathering IS NULL
    ORDER BY not_before, id LIMIT $2";

/// Lets a person in by invite: $1 user, $2 now. Someone invited before stays as they were.
pub const INVITE_USER: &str =
    "INSERT INTO invited_users (user_id, invited_at) VALUES ($1, $2) ON CONFLICT (user_id) DO NOTHING";

/// Whether $1 user was let in by invite (a count, 0 or 1).
pub const IS_INVITED: &str = "SELECT COUNT(*) FROM invited_users WHERE user_id = $1";

/// Jobs per state.
pub const JOBS_BY_STATE: &str = "SELECT status, COUNT(*) FROM jobs GROUP BY status";

/// When the job waiting longest for its download became due (NULL: none waits).
pub const OLDEST_WAITING: &str = "SELECT MIN(not_before) FROM jobs WHERE status = 'accepted'";

/// The bytes of the files in flight at $1 now: sources of `fetched` and `processing` jobs, and
/// the declared sizes of leased downloads.
pub const BYTES_IN_FLIGHT: &str = "SELECT CAST(COALESCE(SUM(COALESCE(real_size, declared_size, 0)), 0) AS BIGINT)
    FROM jobs WHERE status IN ('fetched', 'processing') OR (status = 'accepted' AND lease_until > $1)";

/// The lease owners (`<host>:<pid>:<worker>`) holding a job or a message at $1 now.
pub const LIVE_OWNERS: &str = "SELECT lease_owner FROM jobs WHERE lease_owner IS NOT NULL AND lease_until > $1
    UNION SELECT lease_owner FROM outbox WHERE lease_owner IS NOT NULL AND lease_until > $1";

/// How many chats refused the bot for good.
pub const DEAD_CHATS: &str = "SELECT COUNT(*) FROM dead_chats";

/// Records a 429 Telegram answered with: $1 now, $2 chat, $3 its wait in ms; $4 rows older than
/// this are removed by [`PRUNE_FLOOD_WAITS`] in the same call.
pub const RECORD_FLOOD_WAIT: &str = "INSERT INTO flood_waits (at, chat_id, retry_after_ms) VALUES ($1, $2, $3)";

/// Removes 429 records older than $1.
pub const PRUNE_FLOOD_WAITS: &str = "DELETE FROM flood_waits WHERE at < $1";

/// How many 429s came at or after $1.
pub const FLOOD_WAITS_SINCE: &str = "SELECT COUNT(*) FROM flood_waits WHERE at >= $1";

/// Runs [`RETRY_JOB`]; `false` when the job is not in `step.from`.
pub(super) async fn retry_job(c: &mut Conn<'_>, ticket: Ticket, step: Transition, now: Timestamp) -> StoreResult<bool> {
    let moved = c
        .execute(RETRY_JOB, &[ticket.0.into(), now.into(), step.to.as_str().into(), step.from.as_str().into()])
        .await
        .context("sending a failed job back to the queue")?;
    Ok(moved == 1)
}

/// Runs [`ENDED_SINCE`].
pub(super) async fn ended_since(c: &mut Conn<'_>, since: Timestamp) -> StoreResult<Vec<Ticket>> {
    let ids: Vec<i64> = c.scalars(ENDED_SINCE, &[since.into()]).await.context("listing the jobs that ended lately")?;
    Ok(ids.into_iter().map(Ticket).collect())
}

/// Runs [`FORGET_MESSAGES`] then [`FORGET_JOBS`]; returns how many jobs were forgotten.
pub(super) async fn forget_person(c: &mut Conn<'_>, user: i64, reason: &str, now: Timestamp) -> StoreResult<u64> {
    c.execute(FORGET_MESSAGES, &[user.into(), now.into()]).await.map(drop).context("forgetting a person's messages")?;
    c.execute(FORGET_JOBS, &[user.into(), now.into(), reason.into()]).await.context("forgetting a person's jobs")
}

/// Runs [`QUEUE_HEAD`].
pub(super) async fn queue_head(c: &mut Conn<'_>, now: Timestamp, limit: i64) -> StoreResult<Vec<crate::domain::Job>> {
    c.fetch_all::<super::jobs::JobRow>(QUEUE_HEAD, &[now.into(), limit.into()])
        .await
        .context("reading the head of the download queue")?
        .into_iter()
        .map(super::jobs::JobRow::into_job)
        .collect()
}

/// Runs [`INVITE_USER`].
pub(super) async fn invite(c: &mut Conn<'_>, user: i64, now: Timestamp) -> StoreResult<()> {
    c.execute(INVITE_USER, &[user.into(), now.into()]).await.map(drop).context("recording an invited person")
}

/// Runs [`IS_INVITED`].
pub(super) async fn is_invited(c: &mut Conn<'_>, user: i64) -> StoreResult<bool> {
    let n: i64 = c.scalar(IS_INVITED, &[user.into()]).await.context("looking up an invited person")?;
    Ok(n > 0)
}

/// Runs [`RECORD_FLOOD_WAIT`] and [`PRUNE_FLOOD_WAITS`] (keeping a day).
pub(super) async fn record_flood_wait(c: &mut Conn<'_>, chat: i64, wait_ms: i64, now: Timestamp) -> StoreResult<()> {
    c.execute(RECORD_FLOOD_WAIT, &[now.into(), chat.into(), wait_ms.into()])
        .await
        .map(drop)
        .context("recording a 429")?;
    let day_ago = now.minus(std::time::Duration::from_secs(24 * 3600));
    c.execute(PRUNE_FLOOD_WAITS, &[day_ago.into()]).await.map(drop).context("pruning old 429 records")
}

/// Runs the statements of [`Stats`].
pub(super) async fn stats(c: &mut Conn<'_>, now: Timestamp) -> StoreResult<Stats> {
    let by_state: Vec<(String, i64)> = c.fetch_all(JOBS_BY_STATE, &[]).await.context("counting jobs by state")?;
    let mut jobs = Vec::new();
    for state in JobState::ALL {
        if let Some((_, n)) = by_state.iter().find(|(s, _)| s == state.as_str()) {
            jobs.push((state, *n));
        }
    }
    let oldest: Option<i64> = c.scalar(OLDEST_WAITING, &[]).await.context("finding the oldest waiting job")?;
    let bytes_in_flight: i64 =
        c.scalar(BYTES_IN_FLIGHT, &[now.into()]).await.context("adding up the bytes in flight")?;
    let dead_chats: i64 = c.scalar(DEAD_CHATS, &[]).await.context("counting dead chats")?;
    let hour_ago = now.minus(std::time::Duration::from_secs(3600));
    let flood_waits_last_hour: i64 =
        c.scalar(FLOOD_WAITS_SINCE, &[hour_ago.into()]).await.context("counting recent 429s")?;
    let owners: Vec<String> = c.scalars(LIVE_OWNERS, &[now.into()]).await.context("listing the lease owners")?;
    let mut hosts: Vec<String> =
        owners.iter().map(|o| o.splitn(3, ':').take(2).collect::<Vec<_>>().join(":")).collect();
    hosts.sort();
    hosts.dedup();
    Ok(Stats {
        jobs,
        oldest_waiting: oldest.map(Timestamp::from_millis),
        bytes_in_flight: u64::try_from(bytes_in_flight).unwrap_or(0),
        dead_chats,
        flood_waits_last_hour,
        hosts,
    })
}

impl Store {
    /// Sends a failed job back to `accepted` (`docket retry N`) and queues `notice`, atomically.
    /// `false` when the job is not `failed`.
    pub async fn retry_job(&self, ticket: Ticket, notice: &NewMessage, now: Timestamp) -> StoreResult<bool> {
        let step = Transition::of(JobState::Failed, JobEvent::Retried)?;
        let mut tx = self.begin().await?;
        if !retry_job(&mut tx.conn(), ticket, step, now).await? {
            return Ok(false);
        }
        outbox::enqueue(&mut tx.conn(), notice, now).await?;
        tx.commit_as("committing a retry").await?;
        Ok(true)
    }

    /// The jobs that ended (`failed` or `expired`) at or after `since`, whose files may still be
    /// on disk.
    pub async fn ended_since(&self, since: Timestamp) -> StoreResult<Vec<Ticket>> {
        ended_since(&mut self.acquire().await?.conn(), since).await
    }

    /// The first `limit` jobs waiting for their download at `now`, in the order claims take them.
    pub async fn queue_head(&self, now: Timestamp, limit: i64) -> StoreResult<Vec<Job>> {
        queue_head(&mut self.acquire().await?.conn(), now, limit).await
    }

    /// Records a 429 Telegram answered a call to `chat` with (for `/stats`).
    pub async fn record_flood_wait(&self, chat: ChatRef, wait: Duration, now: Timestamp) -> StoreResult<()> {
        let wait_ms = i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
        record_flood_wait(&mut self.acquire().await?.conn(), chat.0, wait_ms, now).await
    }

    /// The figures of `/stats` at `now`.
    pub async fn stats(&self, now: Timestamp) -> StoreResult<crate::domain::BotStats> {
        stats(&mut self.acquire().await?.conn(), now).await
    }
}

impl Tx {
    /// Forgets everything of `user`'s jobs (names, results, sources; their messages' texts): a
    /// `ready` job becomes `expired`, an unfinished one `failed` with `reason`. Returns how many
    /// jobs were forgotten. Their files are the reaper's to delete once this commits.
    pub async fn forget_person(&mut self, user: UserId, reason: &str, now: Timestamp) -> StoreResult<u64> {
        // The statement applies these moves to every job of the person at once.
        crate::domain::job::next(JobState::Ready, JobEvent::Expired)?;
        for from in [JobState::Accepted, JobState::Fetched, JobState::Processing] {
            crate::domain::job::next(from, JobEvent::Cancelled)?;
        }
        forget_person(&mut self.conn(), user.0, reason, now).await
    }

    /// Lets `user` in (an invite token was valid).
    pub async fn invite(&mut self, user: UserId, now: Timestamp) -> StoreResult<()> {
        invite(&mut self.conn(), user.0, now).await
    }

    /// Whether `user` was let in by an invite.
    pub async fn is_invited(&mut self, user: UserId) -> StoreResult<bool> {
        is_invited(&mut self.conn(), user.0).await
    }

    /// The figures of `/stats` at `now`, inside the transaction.
    pub async fn stats(&mut self, now: Timestamp) -> StoreResult<crate::domain::BotStats> {
        stats(&mut self.conn(), now).await
    }
}
