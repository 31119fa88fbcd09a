//! Storage: one [`Store`] in front of SQLite and PostgreSQL, with the same promises on both.
//!
//! The backend follows from the scheme of `[storage] database_url`. Each statement is written
//! once, as a `const` beside the one function that runs it, in the module of its table
//! (`updates`, `jobs`, `outbox`, `chats`, `modes`, `pacing`, `migrations`; `retention` for what the
//! janitor reads and removes). sqlx binds `$N` placeholders by number on SQLite as on
//! PostgreSQL, so one small macro, `dispatch!`, runs the same expression on either. What really
//! differs stays in `sqlite.rs` and `postgres.rs`: opening, migrations, how a write transaction
//! starts, and the claim statements (PostgreSQL locks the claimed row with `FOR UPDATE SKIP
//! LOCKED` and serialises message claims with an advisory lock; SQLite relies on its single
//! writer). This file holds the API: [`Store`] and [`Tx`] run those functions, and compose the
//! transactions that span tables.
//!
//! Every state change is a conditional `UPDATE … WHERE id = $1 AND status = <expected> [AND
//! lease_token = <held>]`; zero rows changed means someone else moved the row first, which
//! callers treat as "not mine any more", never as an error.
//!
//! sqlx types stop here: callers see domain types such as [`Job`] and [`OutboxMessage`].

/// Runs one expression on whichever backend a [`Conn`] is connected to, with `$c` bound to that
/// backend's own connection (`&mut SqliteConnection` or `&mut PgConnection`): written like a
/// closure, `dispatch!(conn, |c| sqlx::query(SQL).bind(x).execute(c).await)`. sqlx binds `$N`
/// placeholders by number on both backends, so one statement serves both; the expression must
/// have the same type in each arm (map a query result to what the caller needs inside it).
macro_rules! dispatch {
    ($conn:expr, |$c:ident| $body:expr) => {
        match $conn {
            $crate::store::Conn::Sqlite(conn) => {
                let $c = &mut **conn;
                $body
            }
            #[cfg(feature = "postgres")]
            $crate::store::Conn::Postgres(conn) => {
                let $c = &mut **conn;
                $body
            }
        }
    };
}

mod chats;
mod cluster;
#[cfg(test)]
mod conformance;
mod database_url;
mod error;
mod jobs;
mod languages;
mod migrations;
mod modes;
mod nodes;
mod outbox;
mod pacing;
mod people;
#[cfg(feature = "postgres")]
mod postgres;
mod retention;
mod run_lock;
mod sqlite;
mod updates;

pub use cluster::{Change, ChangeFeed, Role, RoleLock};
pub use database_url::DatabaseUrl;
use error::QueryContext;
pub use error::{DatabaseError, StoreError, StoreResult};
pub use nodes::Heartbeat;
pub use run_lock::RunLock;

#[doc(hidden)]
pub mod statements;

use std::time::Duration;

use crate::domain::{
    BotId, ChatRef, FileOwner, Job, JobEvent, JobState, Lease, MessageId, NewMessage, Node, NodeBeat, NodeName,
    OutboxId, OutboxMessage, OutboxState, Paced, Submission, Ticket, Timestamp, Transition, UpdateId, UserId,
};

/// The lease held on a row, from its `lease_owner`, `lease_token` and `lease_until` columns;
/// `None` when the row is not leased.
fn lease(owner: Option<String>, token: i64, until: Option<i64>) -> Option<Lease> {
    Some(Lease { owner: owner?, token, until: Timestamp::from_millis(until?) })
}

/// What became of an update Telegram delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Handled: a job, a reply, or deliberately nothing.
    Recorded,
    /// Could not be handled (malformed or a bug); kept with its reason.
    Rejected,
}

impl UpdateOutcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Recorded => "recorded",
            Self::Rejected => "rejected",
        }
    }
}

/// The pipeline stages that claim jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Claims `accepted` jobs.
    Download,
    /// Claims `fetched` jobs (and `processing` ones whose lease lapsed).
    Process,
}

/// What [`Store::census`] counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Census {
    /// Every job state with its number of jobs, in life order.
    pub jobs: Vec<(JobState, u64)>,
    /// When the oldest job still waiting for its download was taken in.
    pub oldest_waiting: Option<Timestamp>,
    /// Every outbox state with its number of rows.
    pub messages: Vec<(OutboxState, u64)>,
    /// Chats that refused the bot for good.
    pub dead_chats: u64,
}

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

/// Which `accepted` jobs a download claim may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimLimits {
    /// The size assumed for a job whose size Telegram did not declare.
    pub unknown_size: i64,
    /// The largest (declared or assumed) size that fits the byte budget now.
    pub max_size: i64,
    /// How many jobs of one chat may be in flight (leased downloads, fetched, processing).
    pub per_chat: i64,
}

impl ClaimLimits {
    /// No limits.
    pub const NONE: Self = Self { unknown_size: 0, max_size: i64::MAX, per_chat: i64::MAX };
}

/// How a holder gives a job back without finishing it.
#[derive(Debug, Clone)]
pub struct Release {
    /// The state the job must be in now.
    pub from: JobState,
    /// What happened; decides the next state.
    pub event: JobEvent,
    /// Not claimable before this.
    pub not_before: Timestamp,
    /// Detail for admins (the error that caused it).
    pub detail: Option<String>,
    /// What the release does to the attempt counter.
    pub attempts: AttemptRule,
}

/// What a release does to the job's attempt counter (a claim counts one attempt in advance).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptRule {
    /// The attempt failed through the job's own fault (or a passing error): it counts.
    Spent,
    /// Not the job's fault (a graceful release at shutdown, a flood wait): the claim's attempt
    /// is given back.
    Refunded,
    /// A new stage begins (the source was lost): the counter starts again.
    Restarted,
}

impl AttemptRule {
    /// The code the release statement binds.
    pub(crate) const fn code(self) -> i32 {
        match self {
            Self::Spent => 0,
            Self::Refunded => 1,
            Self::Restarted => 2,
        }
    }
}

/// The facts recorded when a job turns `ready`.
#[derive(Debug, Clone)]
pub struct Completion {
    /// Result file.
    pub result_path: String,
    /// Result size.
    pub result_size: i64,
    /// Detected source format.
    pub detected_format: String,
    /// When the result is deleted.
    pub expires_at: Timestamp,
}

/// Which jobs to list.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// Only this chat.
    pub chat: Option<ChatRef>,
    /// Only this state.
    pub state: Option<JobState>,
    /// Only jobs last changed at or after this moment.
    pub since: Option<Timestamp>,
    /// At most this many, newest first.
    pub limit: i64,
}

/// Which outgoing messages to list: those of a chat, of a job, of both, or every one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageFilter {
    /// Only this chat's.
    pub chat: Option<ChatRef>,
    /// Only this job's.
    pub job: Option<Ticket>,
}

impl MessageFilter {
    /// Every message.
    pub const ALL: Self = Self { chat: None, job: None };

    /// The messages to `chat`.
    pub const fn chat(chat: ChatRef) -> Self {
        Self { chat: Some(chat), job: None }
    }

    /// The messages about `job`.
    pub const fn job(job: Ticket) -> Self {
        Self { chat: None, job: Some(job) }
    }
}

/// The storage handle, on SQLite or PostgreSQL. Cheap to clone (a pool inside).
///
/// A handle may speak for one host ([`Store::for_node`]): `docket run` uses such a handle, so
/// the downloads it keeps are recorded as that host's, and it claims only work whose files are
/// on that host (or on none). A handle for no host (the admin commands) claims anything.
#[derive(Clone, Debug)]
pub struct Store {
    pool: Pool,
    node: Option<NodeName>,
}

/// The connection pool of a [`Store`], on its backend.
#[derive(Clone, Debug)]
enum Pool {
    /// SQLite in WAL mode.
    Sqlite(sqlx::SqlitePool),
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
}

impl Store {
    /// Opens the database named by `url` (creating a SQLite file and its folder when missing)
    /// and applies pending migrations.
    pub async fn open(url: &DatabaseUrl) -> StoreResult<Self> {
        let pool = match url {
            DatabaseUrl::Sqlite(path) => Pool::Sqlite(sqlite::open(path).await?),
            #[cfg(feature = "postgres")]
            DatabaseUrl::Postgres(url) => Pool::Postgres(postgres::open(url).await?),
            #[cfg(not(feature = "postgres"))]
            DatabaseUrl::Postgres(_) => {
                return Err(StoreError::Corrupt("this build has no PostgreSQL support (feature `postgres`)".into()));
            }
        };
        let store = Self { pool, node: None };
        store.migrate().await?;
        Ok(store)
    }

    /// Opens the database named by `url` only if it exists and holds docket's schema with every
    /// migration of this docket applied. It creates nothing (no file, no folder) and migrates
    /// nothing: for the admin commands, where a wrong path must not become an empty database.
    ///
    /// Errors: [`StoreError::Missing`] when there is no database at `url`,
    /// [`StoreError::NotDocket`] when it has no docket schema, [`StoreError::Outdated`] when it
    /// needs `docket migrate`, and [`StoreError::Open`] when it cannot be reached.
    pub async fn open_existing(url: &DatabaseUrl) -> StoreResult<Self> {
        let pool = match url {
            DatabaseUrl::Sqlite(path) => Pool::Sqlite(sqlite::open_existing(path).await?),
            #[cfg(feature = "postgres")]
            DatabaseUrl::Postgres(url) => Pool::Postgres(postgres::open_existing(url).await?),
            #[cfg(not(feature = "postgres"))]
            DatabaseUrl::Postgres(_) => {
                return Err(StoreError::Corrupt("this build has no PostgreSQL support (feature `postgres`)".into()));
            }
        };
        let store = Self { pool, node: None };
        let checked = match store.applied_migrations().await {
            Err(e) => Err(e),
            Ok(None) => Err(StoreError::NotDocket { url: url.redacted() }),
            Ok(Some(applied)) => {
                let known = store.known_migrations();
                let missing = known.iter().filter(|v| !applied.contains(v)).count();
                if missing == 0 {
                    Ok(())
                } else {
                    Err(StoreError::Outdated { url: url.redacted(), missing, known: known.len() })
                }
            }
        };
        match checked {
            Ok(()) => Ok(store),
            Err(e) => {
                store.close().await;
                Err(e)
            }
        }
    }

    /// A connection from the pool, for statements outside a transaction.
    async fn acquire(&self) -> StoreResult<Pooled> {
        match &self.pool {
            Pool::Sqlite(pool) => pool.acquire().await.map(Pooled::Sqlite),
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => pool.acquire().await.map(Pooled::Postgres),
        }
        .context("acquiring a connection")
    }

    /// Applies pending migrations of the backend.
    pub async fn migrate(&self) -> StoreResult<()> {
        match &self.pool {
            Pool::Sqlite(pool) => sqlite::MIGRATOR.run(pool).await,
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => postgres::MIGRATOR.run(pool).await,
        }
        .map_err(|e| StoreError::Migrate(DatabaseError::from_migrate(e)))
    }

    /// The migrations applied to the database; `None` without a migrations table (docket never
    /// ran on it).
    async fn applied_migrations(&self) -> StoreResult<Option<Vec<i64>>> {
        let present = match &self.pool {
            Pool::Sqlite(pool) => sqlite::has_migrations_table(pool).await?,
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => postgres::has_migrations_table(pool).await?,
        };
        if !present {
            return Ok(None);
        }
        migrations::applied(&mut self.acquire().await?.conn()).await.map(Some)
    }

    /// The versions of the migrations of this build.
    fn known_migrations(&self) -> Vec<i64> {
        let migrator = match &self.pool {
            Pool::Sqlite(_) => &sqlite::MIGRATOR,
            #[cfg(feature = "postgres")]
            Pool::Postgres(_) => &postgres::MIGRATOR,
        };
        migrator.iter().map(|m| m.version).collect()
    }

    /// Starts a write transaction.
    pub async fn begin(&self) -> StoreResult<Tx> {
        let tx = match &self.pool {
            Pool::Sqlite(pool) => sqlite::begin(pool).await.map(Transaction::Sqlite),
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => postgres::begin(pool).await.map(Transaction::Postgres),
        }
        .context("starting a transaction")?;
        Ok(Tx { tx })
    }

    /// This handle, speaking for the host `node`: what it downloads is recorded as that host's,
    /// and its claims of processing and of result uploads take only that host's jobs.
    #[must_use]
    pub fn for_node(&self, node: NodeName) -> Self {
        Self { pool: self.pool.clone(), node: Some(node) }
    }

    /// The host this handle speaks for, if any.
    pub fn node(&self) -> Option<&NodeName> {
        self.node.as_ref()
    }

    /// The getUpdates offset to continue from, if any was stored.
    pub async fn poll_offset(&self, bot_id: BotId) -> StoreResult<Option<i64>> {
        updates::poll_offset(&mut self.acquire().await?.conn(), bot_id).await
    }

    /// Whether an update was registered, and how.
    pub async fn update_outcome(
        &self,
        bot_id: BotId,
        update_id: UpdateId,
    ) -> StoreResult<Option<(UpdateOutcome, Option<String>)>> {
        updates::update_outcome(&mut self.acquire().await?.conn(), bot_id, update_id).await
    }

    /// What the database holds right now, for the metrics: jobs by state, when the oldest waiting
    /// job came in, outbox rows by state, dead chats. Read from the database, so it is right
    /// after a restart and counts every host's work.
    pub async fn census(&self) -> StoreResult<Census> {
        let mut conn = self.acquire().await?;
        let mut c = conn.conn();
        Ok(Census {
            jobs: jobs::jobs_by_state(&mut c).await?,
            oldest_waiting: jobs::oldest_waiting_job(&mut c).await?,
            messages: outbox::messages_by_state(&mut c).await?,
            dead_chats: chats::dead_chats(&mut c).await?,
        })
    }

    /// One job by ticket.
    pub async fn job(&self, ticket: Ticket) -> StoreResult<Option<Job>> {
        jobs::job(&mut self.acquire().await?.conn(), ticket).await
    }

    /// Every run of `ticket` (the ticket's first run first); empty when there is no such ticket.
    pub async fn runs(&self, ticket: Ticket) -> StoreResult<Vec<Job>> {
        jobs::runs(&mut self.acquire().await?.conn(), ticket).await
    }

    /// Jobs matching `filter`, newest first.
    pub async fn jobs(&self, filter: &JobFilter) -> StoreResult<Vec<Job>> {
        jobs::jobs(&mut self.acquire().await?.conn(), filter.chat, filter.state, filter.since, filter.limit).await
    }

    /// Claims the next job of `stage` for `owner` with a lease of `lease_len`, counting an attempt.
    /// Processing takes only jobs whose source is on this handle's host (or on no host known).
    pub async fn claim_job(
        &self,
        stage: Stage,
        owner: &str,
        now: Timestamp,
        lease_len: Duration,
    ) -> StoreResult<Option<Job>> {
        let node = self.node.as_ref();
        jobs::claim_job(&mut self.acquire().await?.conn(), stage, owner, node, now, lease_len, &ClaimLimits::NONE).await
    }

    /// Claims the oldest `accepted` job that fits `limits` (byte budget, per-chat bound).
    pub async fn claim_download(
        &self,
        owner: &str,
        now: Timestamp,
        lease_len: Duration,
        limits: &ClaimLimits,
    ) -> StoreResult<Option<Job>> {
        let node = self.node.as_ref();
        jobs::claim_job(&mut self.acquire().await?.conn(), Stage::Download, owner, node, now, lease_len, limits).await
    }

    /// Every `ready` job (each keeps a result on disk), oldest expiry first.
    pub async fn kept_results(&self) -> StoreResult<Vec<Job>> {
        retention::kept_results(&mut self.acquire().await?.conn()).await
    }

    /// The `ready` jobs whose result expired at `at`, oldest expiry first.
    pub async fn results_due(&self, at: Timestamp) -> StoreResult<Vec<Job>> {
        retention::results_due(&mut self.acquire().await?.conn(), at).await
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
        if !retention::expire_job(&mut tx.conn(), ticket, step, at, now).await? {
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
        retention::expire_due(&mut self.acquire().await?.conn(), now).await
    }

    /// Every job that may own files on disk (`accepted` … `ready`), with only what the janitor
    /// judges files by.
    pub async fn file_owners(&self) -> StoreResult<Vec<FileOwner>> {
        retention::file_owners(&mut self.acquire().await?.conn()).await
    }

    /// Queues one message in its own transaction (for messages not tied to a state change,
    /// such as progress edits).
    pub async fn enqueue(&self, message: &NewMessage, now: Timestamp) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let queued = tx.enqueue(message, now).await?;
        tx.commit().await?;
        Ok(queued)
    }

    /// The Telegram message id of job `ticket`'s status message (its latest delivered ticket
    /// reply), which progress edits change.
    pub async fn status_message(&self, ticket: Ticket) -> StoreResult<Option<MessageId>> {
        outbox::status_message(&mut self.acquire().await?.conn(), ticket).await
    }

    /// No call to `chat` before `not_before`; an existing later pause is kept. Shared by every
    /// sender and kept across restarts.
    pub async fn pace_chat(&self, chat: ChatRef, not_before: Timestamp, reason: &str) -> StoreResult<()> {
        pacing::pace(&mut self.acquire().await?.conn(), Paced::Chat(chat), not_before, reason).await
    }

    /// No call to any chat before `not_before` (the bot as a whole is limited); an existing later
    /// pause is kept.
    pub async fn pause_whole_bot(&self, not_before: Timestamp, reason: &str) -> StoreResult<()> {
        pacing::pace(&mut self.acquire().await?.conn(), Paced::WholeBot, not_before, reason).await
    }

    /// Reserves the next moment a call to Telegram may be made under the global rate limit, for
    /// every docket on this database together: `spacing` after the last slot reserved, or `now`
    /// if that is later. The caller waits until the returned moment, then calls. Kept as
    /// [`Paced::SendSlots`].
    pub async fn reserve_send_slot(&self, now: Timestamp, spacing: Duration) -> StoreResult<Timestamp> {
        pacing::reserve_send_slot(&mut self.acquire().await?.conn(), now, spacing).await
    }

    /// What is paced or paused beyond `now`, with until when and why: chats, the bot as a whole,
    /// and the send slots while the last reserved one is ahead of `now`.
    pub async fn pacing(&self, now: Timestamp) -> StoreResult<Vec<(Paced, Timestamp, String)>> {
        pacing::pacing(&mut self.acquire().await?.conn(), now).await
    }

    /// The earliest time a `pending` message may become claimable, counting its own
    /// `not_before` and its chat's and the bot's pacing; `None` with nothing pending.
    pub async fn next_message_due(&self) -> StoreResult<Option<Timestamp>> {
        outbox::next_message_due(&mut self.acquire().await?.conn()).await
    }

    /// `sending` rows whose lease lapsed (their sender died mid-call) become `unknown`; they are
    /// returned so the sender can apply each kind's rule.
    pub async fn lapse_messages(&self, now: Timestamp) -> StoreResult<Vec<OutboxMessage>> {
        outbox::lapse_messages(&mut self.acquire().await?.conn(), now).await
    }

    /// A group became a supergroup: its open messages (reply links dropped), its jobs and its
    /// language move to the new chat id. Returns how many messages moved.
    pub async fn migrate_chat(&self, from: ChatRef, to: ChatRef, now: Timestamp) -> StoreResult<u64> {
        let mut tx = self.begin().await?;
        // Replies cannot point at messages of the old chat any more.
        let moved = outbox::move_chat_messages(&mut tx.conn(), from, to, now).await?;
        // Later notices of the chat's jobs follow it.
        jobs::move_chat_jobs(&mut tx.conn(), from, to, now).await?;
        // So does the language it chose.
        languages::move_chat(&mut tx.conn(), from, to).await?;
        tx.commit_as("committing a chat migration").await?;
        Ok(moved)
    }

    /// Deletes the rows of `history`: registered updates, delivered/dead/failed messages and,
    /// when asked, ended jobs with their messages, all older than its bound.
    pub async fn prune(&self, history: &History) -> StoreResult<Pruned> {
        let mut tx = self.begin().await?;
        let pruned = retention::prune(&mut tx.conn(), history, false).await?;
        tx.commit_as("committing the pruning").await?;
        Ok(pruned)
    }

    /// How many rows [`prune`](Self::prune) would delete, deleting nothing.
    pub async fn count_prunable(&self, history: &History) -> StoreResult<Pruned> {
        retention::prune(&mut self.acquire().await?.conn(), history, true).await
    }

    /// The job a download claim would take next if nothing limited it (head of the queue).
    pub async fn next_waiting_download(&self, now: Timestamp) -> StoreResult<Option<Job>> {
        jobs::next_waiting_download(&mut self.acquire().await?.conn(), now).await
    }

    /// The jobs that may hold files of this machine, and so a place in its byte budget: every
    /// `fetched` or `processing` job of this handle's host (or of no host known), and the `accepted` ones under a live lease whose owner
    /// starts with `owner_prefix` (this process's downloads).
    pub async fn jobs_holding_files(&self, owner_prefix: &str, now: Timestamp) -> StoreResult<Vec<Ticket>> {
        jobs::jobs_holding_files(&mut self.acquire().await?.conn(), owner_prefix, self.node.as_ref(), now).await
    }

    /// Extends a held lease. `false`: the lease was lost (someone else holds the job now).
    pub async fn renew_job_lease(
        &self,
        ticket: Ticket,
        lease: &Lease,
        until: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        jobs::renew_lease(&mut self.acquire().await?.conn(), ticket, lease, until, now).await
    }

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
        jobs::switch_operation(&mut self.acquire().await?.conn(), ticket, lease, operation, now).await
    }

    /// The chat's own default operation (`/mode`), if it set one.
    pub async fn chat_mode(&self, chat: ChatRef) -> StoreResult<Option<crate::domain::Operation>> {
        modes::chat_mode(&mut self.acquire().await?.conn(), chat).await
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
        let source = jobs::Fetched { path, size, sha256, node: self.node.as_ref() };
        jobs::mark_fetched(&mut self.acquire().await?.conn(), ticket, step, lease, &source, now).await
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
        jobs::release_job(&mut self.acquire().await?.conn(), ticket, lease, release, step, now).await
    }

    /// Fails a job (as the lease holder when `lease` is given) and queues the notices (the
    /// failure notice, the status message's last edit), atomically.
    #[expect(clippy::too_many_arguments, reason = "each argument is a distinct fact of the failure")]
    pub async fn fail_job(
        &self,
        ticket: Ticket,
        from: JobState,
        lease: Option<&Lease>,
        reason: &str,
        detail: &str,
        notices: &[NewMessage],
        now: Timestamp,
    ) -> StoreResult<bool> {
        let step = Transition::of(from, JobEvent::Failed)?;
        let mut tx = self.begin().await?;
        if !jobs::fail_job(&mut tx.conn(), ticket, step, lease, reason, detail, now).await? {
            return Ok(false);
        }
        for notice in notices {
            outbox::enqueue(&mut tx.conn(), notice, now).await?;
        }
        tx.commit_as("committing a failure").await?;
        Ok(true)
    }

    /// `processing` → `ready` with the result, and queues its delivery (and the status
    /// message's last edit), atomically.
    pub async fn complete_job(
        &self,
        ticket: Ticket,
        lease: &Lease,
        done: &Completion,
        deliveries: &[NewMessage],
        now: Timestamp,
    ) -> StoreResult<bool> {
        let step = Transition::of(JobState::Processing, JobEvent::Completed)?;
        let mut tx = self.begin().await?;
        if !jobs::complete_job(&mut tx.conn(), ticket, step, lease, done, now).await? {
            return Ok(false);
        }
        for delivery in deliveries {
            outbox::enqueue(&mut tx.conn(), delivery, now).await?;
        }
        tx.commit_as("committing a completion").await?;
        Ok(true)
    }

    /// Claims the next deliverable outgoing message: the oldest open one of its chat, by priority.
    /// A result waits while its job is being produced (again), and goes from disk only by the
    /// host that holds it; one with a stored Telegram file_id goes from any host.
    pub async fn claim_message(
        &self,
        owner: &str,
        now: Timestamp,
        lease_len: Duration,
    ) -> StoreResult<Option<OutboxMessage>> {
        match &self.pool {
            // SQLite's single writer serialises the claims already.
            Pool::Sqlite(_) => {
                outbox::claim_message(&mut self.acquire().await?.conn(), owner, self.node.as_ref(), now, lease_len)
                    .await
            }
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => postgres::claim_message(pool, owner, self.node.as_ref(), now, lease_len).await,
        }
    }

    /// Records a delivery (and, for a result, the document's file_id on the job).
    pub async fn mark_message_sent(
        &self,
        message: &OutboxMessage,
        lease: &Lease,
        telegram_message_id: MessageId,
        telegram_file_id: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let sent =
            outbox::mark_sent(&mut tx.conn(), message, lease, telegram_message_id, telegram_file_id, now).await?;
        if let (true, Some(ticket), Some(file_id)) = (sent, message.job, telegram_file_id) {
            jobs::record_result_file_id(&mut tx.conn(), ticket, file_id, now).await?;
        }
        tx.commit_as("committing a delivery").await?;
        Ok(sent)
    }

    /// Extends a sender's lease on a message (long uploads). `false`: the lease was lost.
    pub async fn renew_message_lease(
        &self,
        id: OutboxId,
        lease: &Lease,
        until: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        outbox::renew_lease(&mut self.acquire().await?.conn(), id, lease, until, now).await
    }

    /// Puts a message back to `pending`, not before `not_before`.
    pub async fn retry_message(
        &self,
        id: OutboxId,
        lease: &Lease,
        not_before: Timestamp,
        error: &str,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let mut c = self.acquire().await?;
        outbox::set_message_state(&mut c.conn(), id, lease, OutboxState::Pending, Some(not_before), error, now).await
    }

    /// Ends a message in `state` (`dead`, `failed` or `unknown`) with the error.
    pub async fn close_message(
        &self,
        id: OutboxId,
        lease: &Lease,
        state: OutboxState,
        error: &str,
        now: Timestamp,
    ) -> StoreResult<bool> {
        outbox::set_message_state(&mut self.acquire().await?.conn(), id, lease, state, None, error, now).await
    }

    /// Records that `chat` refused the bot for good and ends its queued messages as `dead`, in one
    /// transaction; messages queued for it later are stored `dead` without a call, until a new
    /// message from the chat revives it. Returns how many queued messages were ended.
    pub async fn mark_chat_dead(&self, chat: ChatRef, reason: &str, now: Timestamp) -> StoreResult<u64> {
        let mut tx = self.begin().await?;
        chats::mark_dead(&mut tx.conn(), chat, reason, now).await?;
        let closed = outbox::close_dead_chat_messages(&mut tx.conn(), chat, reason, now).await?;
        tx.commit_as("committing a dead chat").await?;
        Ok(closed)
    }

    /// Sends an `unknown` message again: back to `pending`, with `note` saying why.
    pub async fn requeue_unknown(
        &self,
        id: OutboxId,
        not_before: Timestamp,
        note: &str,
        now: Timestamp,
    ) -> StoreResult<bool> {
        outbox::requeue_unknown(&mut self.acquire().await?.conn(), id, not_before, note, now).await
    }

    /// Gives up on an `unknown` message that has no attempts left: `failed`, with `error`.
    /// `false` when the row is not `unknown` (any more).
    pub async fn fail_unknown(&self, id: OutboxId, error: &str, now: Timestamp) -> StoreResult<bool> {
        outbox::fail_unknown(&mut self.acquire().await?.conn(), id, error, now).await
    }

    /// The messages `filter` selects, oldest first (status pages, tests).
    pub async fn messages(&self, filter: &MessageFilter) -> StoreResult<Vec<OutboxMessage>> {
        outbox::messages(&mut self.acquire().await?.conn(), filter).await
    }

    /// Forgets the stored file_id of a result Telegram refused to resend.
    pub async fn forget_result_file_id(&self, ticket: Ticket, now: Timestamp) -> StoreResult<()> {
        jobs::forget_result_file_id(&mut self.acquire().await?.conn(), ticket, now).await
    }

    /// Sends a failed job back to `accepted` (`docket retry N`) and queues `notice`, atomically.
    /// `false` when the job is not `failed`.
    pub async fn retry_job(&self, ticket: Ticket, notice: &NewMessage, now: Timestamp) -> StoreResult<bool> {
        let step = Transition::of(JobState::Failed, JobEvent::Retried)?;
        let mut tx = self.begin().await?;
        if !people::retry_job(&mut tx.conn(), ticket, step, now).await? {
            return Ok(false);
        }
        outbox::enqueue(&mut tx.conn(), notice, now).await?;
        tx.commit_as("committing a retry").await?;
        Ok(true)
    }

    /// The jobs that ended (`failed` or `expired`) at or after `since`, whose files may still be
    /// on disk.
    pub async fn ended_since(&self, since: Timestamp) -> StoreResult<Vec<Ticket>> {
        people::ended_since(&mut self.acquire().await?.conn(), since).await
    }

    /// The first `limit` jobs waiting for their download at `now`, in the order claims take them.
    pub async fn queue_head(&self, now: Timestamp, limit: i64) -> StoreResult<Vec<Job>> {
        people::queue_head(&mut self.acquire().await?.conn(), now, limit).await
    }

    /// Records a 429 Telegram answered a call to `chat` with (for `/stats`).
    pub async fn record_flood_wait(&self, chat: ChatRef, wait: Duration, now: Timestamp) -> StoreResult<()> {
        let wait_ms = i64::try_from(wait.as_millis()).unwrap_or(i64::MAX);
        people::record_flood_wait(&mut self.acquire().await?.conn(), chat.0, wait_ms, now).await
    }

    /// The language code `chat` is written to in (see [`Tx::note_language`]); `None` when
    /// nothing is known of the chat.
    pub async fn chat_language(&self, chat: ChatRef) -> StoreResult<Option<String>> {
        languages::of_chat(&mut self.acquire().await?.conn(), chat).await
    }

    /// The figures of `/stats` at `now`.
    pub async fn stats(&self, now: Timestamp) -> StoreResult<crate::domain::BotStats> {
        people::stats(&mut self.acquire().await?.conn(), now).await
    }

    /// Registers this process as the node `beat.name`, or takes that node's row back after a
    /// restart. `Ok(Some(node))` when another process holds the name and still beats (its
    /// heartbeat is newer than `dead_after`): two live processes must not share a name.
    pub async fn register_node(
        &self,
        beat: &NodeBeat,
        dead_after: Duration,
        now: Timestamp,
    ) -> StoreResult<Option<Node>> {
        nodes::register(&mut self.acquire().await?.conn(), beat, dead_after, now).await
    }

    /// Records this node's heartbeat, and says whether a drain was asked for.
    pub async fn node_heartbeat(&self, beat: &NodeBeat, now: Timestamp) -> StoreResult<Heartbeat> {
        nodes::heartbeat(&mut self.acquire().await?.conn(), beat, now).await
    }

    /// Asks the running node `name` to drain (stop claiming, finish or release its work, hand
    /// its roles over, stop) at its next heartbeat; `false` when no running node has that name,
    /// or it was asked already.
    pub async fn request_drain(&self, name: &NodeName, now: Timestamp) -> StoreResult<bool> {
        nodes::request_drain(&mut self.acquire().await?.conn(), name, now).await
    }

    /// Records a clean stop of the node `name` run by `process`.
    pub async fn stop_node(&self, name: &NodeName, process: &str, now: Timestamp) -> StoreResult<()> {
        nodes::stop(&mut self.acquire().await?.conn(), name, process, now).await
    }

    /// Hands the jobs of every lost node back to the queue: a node whose heartbeat is older than
    /// `dead_after`, or that was drained and stopped, other than this handle's. Its downloads,
    /// and the results it never delivered (those without a Telegram file_id), were on its disk:
    /// those jobs go back to `accepted`, to be downloaded again by file_id by any host. Returns,
    /// per node, the jobs handed back.
    pub async fn hand_back_lost_nodes(
        &self,
        dead_after: Duration,
        now: Timestamp,
    ) -> StoreResult<Vec<(NodeName, Vec<Ticket>)>> {
        let lost = nodes::lost(&mut self.acquire().await?.conn(), self.node.as_ref(), now.minus(dead_after)).await?;
        let mut handed = Vec::new();
        for node in lost {
            let detail = format!("its host {node} was lost; downloaded again");
            let mut tx = self.begin().await?;
            let mut tickets = Vec::new();
            for from in [JobState::Fetched, JobState::Processing, JobState::Ready] {
                let step = Transition::of(from, JobEvent::HostLost)?;
                tickets.extend(nodes::hand_back(&mut tx.conn(), &node, step, &detail, now).await?);
            }
            tx.commit_as("committing a lost node's hand-back").await?;
            handed.push((node, tickets));
        }
        Ok(handed)
    }

    /// Every node that ever ran on this database, by name.
    pub async fn nodes(&self) -> StoreResult<Vec<Node>> {
        nodes::all(&mut self.acquire().await?.conn()).await
    }

    /// Closes the pool.
    pub async fn close(&self) {
        match &self.pool {
            Pool::Sqlite(pool) => pool.close().await,
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => pool.close().await,
        }
    }
}

/// A write transaction on either backend. Dropped without [`Tx::commit`], it rolls back.
pub struct Tx {
    tx: Transaction,
}

/// The transaction of a [`Tx`], on its backend.
enum Transaction {
    /// SQLite.
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
}

impl Tx {
    /// The transaction's connection, for a statement.
    fn conn(&mut self) -> Conn<'_> {
        match &mut self.tx {
            Transaction::Sqlite(t) => Conn::Sqlite(t),
            #[cfg(feature = "postgres")]
            Transaction::Postgres(t) => Conn::Postgres(t),
        }
    }

    /// Registers an update once. `false`: it was registered before (a repeat).
    pub async fn register_update(
        &mut self,
        bot_id: BotId,
        update_id: UpdateId,
        outcome: UpdateOutcome,
        reason: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<bool> {
        updates::register_update(&mut self.conn(), bot_id, update_id, outcome, reason, now).await
    }

    /// Forgets that `chat` was dead (it wrote to the bot again). `true` when it was.
    pub async fn revive_chat(&mut self, chat: ChatRef) -> StoreResult<bool> {
        chats::revive(&mut self.conn(), chat).await
    }

    /// Moves the stored poll offset forward to `next_offset` (never back).
    pub async fn advance_offset(&mut self, bot_id: BotId, next_offset: i64, now: Timestamp) -> StoreResult<()> {
        updates::advance_offset(&mut self.conn(), bot_id, next_offset, now).await
    }

    /// The chat's job for a file, by the unique key.
    pub async fn job_by_file(&mut self, chat: ChatRef, file_unique_id: &str) -> StoreResult<Option<Job>> {
        jobs::job_by_file(&mut self.conn(), chat, file_unique_id).await
    }

    /// Every run of `ticket` (the ticket's first run first); empty when there is no such ticket.
    pub async fn runs(&mut self, ticket: Ticket) -> StoreResult<Vec<Job>> {
        jobs::runs(&mut self.conn(), ticket).await
    }

    /// One job by ticket, inside the transaction.
    pub async fn job(&mut self, ticket: Ticket) -> StoreResult<Option<Job>> {
        jobs::job(&mut self.conn(), ticket).await
    }

    /// How many unfinished jobs came before `ticket` (its place in the queue), counted up to
    /// `cap` + 1 at most, so the cost stays bounded however long the queue is.
    pub async fn jobs_ahead(&mut self, ticket: Ticket, cap: u64) -> StoreResult<u64> {
        let cap = i64::try_from(cap).unwrap_or(i64::MAX - 1);
        Ok(u64::try_from(jobs::jobs_ahead(&mut self.conn(), ticket, cap).await?).unwrap_or(0))
    }

    /// The chat's latest jobs, newest first.
    pub async fn chat_jobs(&mut self, chat: ChatRef, limit: i64) -> StoreResult<Vec<Job>> {
        jobs::jobs(&mut self.conn(), Some(chat), None, None, limit).await
    }

    /// How many of `chat`'s jobs wait in `accepted` without a live download lease at `now`
    /// (queued, not downloading), counted up to `cap` at most.
    pub async fn waiting_in_chat(&mut self, chat: ChatRef, now: Timestamp, cap: u64) -> StoreResult<u64> {
        let cap = i64::try_from(cap).unwrap_or(i64::MAX);
        Ok(u64::try_from(jobs::waiting_in_chat(&mut self.conn(), chat, now, cap).await?).unwrap_or(0))
    }

    /// Inserts a new `accepted` job and returns its ticket.
    pub async fn insert_job(&mut self, job: &Submission, now: Timestamp) -> StoreResult<Ticket> {
        jobs::insert_job(&mut self.conn(), job, now).await
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
        jobs::resubmit_job(&mut self.conn(), ticket, step, job, now).await
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
        jobs::fail_job(&mut self.conn(), ticket, step, None, reason, detail, now).await
    }

    /// Forgets everything of `user`'s jobs (names, results, sources; their messages' texts): a
    /// `ready` job becomes `expired`, an unfinished one `failed` with `reason`. Returns how many
    /// jobs were forgotten. Their files are the reaper's to delete once this commits.
    pub async fn forget_person(&mut self, user: UserId, reason: &str, now: Timestamp) -> StoreResult<u64> {
        // The statement applies these moves to every job of the person at once.
        crate::domain::job::next(JobState::Ready, JobEvent::Expired)?;
        for from in [JobState::Accepted, JobState::Fetched, JobState::Processing] {
            crate::domain::job::next(from, JobEvent::Cancelled)?;
        }
        people::forget_person(&mut self.conn(), user.0, reason, now).await
    }

    /// The chat's own default operation (`/mode`), if it set one.
    pub async fn chat_mode(&mut self, chat: ChatRef) -> StoreResult<Option<crate::domain::Operation>> {
        modes::chat_mode(&mut self.conn(), chat).await
    }

    /// Sets the chat's default operation (one without arguments).
    pub async fn set_chat_mode(
        &mut self,
        chat: ChatRef,
        operation: &crate::domain::Operation,
        now: Timestamp,
    ) -> StoreResult<()> {
        modes::set_chat_mode(&mut self.conn(), chat, operation, now).await
    }

    /// Lets `user` in (an invite token was valid).
    pub async fn invite(&mut self, user: UserId, now: Timestamp) -> StoreResult<()> {
        people::invite(&mut self.conn(), user.0, now).await
    }

    /// Whether `user` was let in by an invite.
    pub async fn is_invited(&mut self, user: UserId) -> StoreResult<bool> {
        people::is_invited(&mut self.conn(), user.0).await
    }

    /// Records that someone whose Telegram app reports language `code` wrote in `chat`: the
    /// chat's language becomes `code`, unless the chat chose one with `/lang`.
    pub async fn note_language(&mut self, chat: ChatRef, code: &str, now: Timestamp) -> StoreResult<()> {
        languages::note(&mut self.conn(), chat, code, now).await
    }

    /// Keeps `code` as `chat`'s language (a `/lang` choice) until the next choice; what writers'
    /// apps report no longer changes it.
    pub async fn choose_language(&mut self, chat: ChatRef, code: &str, now: Timestamp) -> StoreResult<()> {
        languages::choose(&mut self.conn(), chat, code, now).await
    }

    /// The language code `chat` is written to in, inside the transaction; `None` when nothing
    /// is known of the chat.
    pub async fn chat_language(&mut self, chat: ChatRef) -> StoreResult<Option<String>> {
        languages::of_chat(&mut self.conn(), chat).await
    }

    /// The figures of `/stats` at `now`, inside the transaction.
    pub async fn stats(&mut self, now: Timestamp) -> StoreResult<crate::domain::BotStats> {
        people::stats(&mut self.conn(), now).await
    }

    /// Queues a message; `false` when its idempotency key was queued before.
    pub async fn enqueue(&mut self, message: &NewMessage, now: Timestamp) -> StoreResult<bool> {
        outbox::enqueue(&mut self.conn(), message, now).await
    }

    /// Commits.
    pub async fn commit(self) -> StoreResult<()> {
        self.commit_as("committing").await
    }

    /// Commits, naming what is committed in the error.
    async fn commit_as(self, action: &'static str) -> StoreResult<()> {
        match self.tx {
            Transaction::Sqlite(tx) => tx.commit().await,
            #[cfg(feature = "postgres")]
            Transaction::Postgres(tx) => tx.commit().await,
        }
        .context(action)
    }
}

/// One connection of either backend, from the pool or inside a transaction: what every statement
/// runs on (through [`dispatch!`]).
enum Conn<'c> {
    /// SQLite.
    Sqlite(&'c mut sqlx::SqliteConnection),
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres(&'c mut sqlx::PgConnection),
}

impl Conn<'_> {
    /// The claim statements of the connection's backend.
    fn claims(&self) -> &'static statements::ClaimSql {
        match self {
            Self::Sqlite(_) => &sqlite::CLAIMS,
            #[cfg(feature = "postgres")]
            Self::Postgres(_) => &postgres::CLAIMS,
        }
    }
}

/// A connection taken from a [`Store`]'s pool for statements outside a transaction; it goes back
/// to the pool when dropped.
enum Pooled {
    /// SQLite.
    Sqlite(sqlx::pool::PoolConnection<sqlx::Sqlite>),
    /// PostgreSQL.
    #[cfg(feature = "postgres")]
    Postgres(sqlx::pool::PoolConnection<sqlx::Postgres>),
}

impl Pooled {
    /// The connection, for a statement.
    fn conn(&mut self) -> Conn<'_> {
        match self {
            Self::Sqlite(c) => Conn::Sqlite(c),
            #[cfg(feature = "postgres")]
            Self::Postgres(c) => Conn::Postgres(c),
        }
    }
}
