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
pub use outbox::MessageFilter;
pub use retention::{History, Pruned};
pub use run_lock::RunLock;
pub use updates::UpdateOutcome;

#[doc(hidden)]
pub mod statements;

use std::time::Duration;

use crate::domain::{
    ChatRef, Job, JobEvent, JobState, Lease, MessageId, NewMessage, NodeName, OutboxMessage, OutboxState, Submission,
    Ticket, Timestamp, Transition,
};

/// The lease held on a row, from its `lease_owner`, `lease_token` and `lease_until` columns;
/// `None` when the row is not leased.
fn lease(owner: Option<String>, token: i64, until: Option<i64>) -> Option<Lease> {
    Some(Lease { owner: owner?, token, until: Timestamp::from_millis(until?) })
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

/// The pipeline stages that claim jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Claims `accepted` jobs.
    Download,
    /// Claims `fetched` jobs (and `processing` ones whose lease lapsed).
    Process,
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
        match store.check_migrations(url).await {
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

    /// Closes the pool.
    pub async fn close(&self) {
        match &self.pool {
            Pool::Sqlite(pool) => pool.close().await,
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => pool.close().await,
        }
    }
}

impl Store {
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

    /// Forgets the stored file_id of a result Telegram refused to resend.
    pub async fn forget_result_file_id(&self, ticket: Ticket, now: Timestamp) -> StoreResult<()> {
        jobs::forget_result_file_id(&mut self.acquire().await?.conn(), ticket, now).await
    }
}

impl Tx {
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
