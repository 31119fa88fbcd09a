//! Storage: one [`Store`] in front of SQLite and PostgreSQL, with the same promises on both.
//!
//! The backend follows from the scheme of `[storage] database_url`. Each statement is written
//! once, as a `const` beside the one function that runs it, in the module of its table
//! (`updates`, `jobs`, `outbox`, `chats`, `modes`, `pacing`, `languages`, `nodes`, `migrations`;
//! `retention` for what the janitor reads and removes, `people` for people's and admins'
//! requests), which also holds its parameter types and the [`Store`] and [`Tx`] methods over
//! its functions. sqlx binds `$N` placeholders by number on SQLite as on PostgreSQL, so a
//! statement runs on either through the `Conn` methods of `args.rs` (`c.execute(SQL,
//! &[ticket.into(), now.into()])`), the one place that tells the backends apart for it. What
//! really differs stays in `sqlite.rs` and `postgres.rs`: opening, migrations, how a write
//! transaction starts, and the claim statements (PostgreSQL locks the claimed row with
//! `FOR UPDATE SKIP LOCKED` and serialises message claims with an advisory lock; SQLite relies
//! on its single writer). This
//! file holds the [`Store`] and [`Tx`] types, the switch between backends, and the transactions
//! that span tables (but for a request of `people` or `retention`, which stays there).
//!
//! Every state change is a conditional `UPDATE … WHERE id = $1 AND status = <expected> [AND
//! lease_token = <held>]`; zero rows changed means someone else moved the row first, which
//! callers treat as "not mine any more", never as an error.
//!
//! sqlx types stop here: callers see domain types such as [`Job`](crate::domain::Job) and
//! [`OutboxMessage`].

mod args;
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
pub use jobs::{AttemptRule, ClaimLimits, Completion, JobFilter, Release, Stage};
pub use nodes::Heartbeat;
pub use outbox::MessageFilter;
pub use retention::{History, Pruned};
pub use run_lock::RunLock;
pub use updates::UpdateOutcome;

#[doc(hidden)]
pub mod statements;

use crate::domain::{
    ChatRef, JobEvent, JobState, Lease, MessageId, NewMessage, NodeName, OutboxMessage, OutboxState, Ticket, Timestamp,
    Transition,
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
                return Err(StoreError::NotBuilt { backend: "PostgreSQL", feature: "postgres" });
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
                return Err(StoreError::NotBuilt { backend: "PostgreSQL", feature: "postgres" });
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
/// runs on (through its methods in `args.rs`).
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
