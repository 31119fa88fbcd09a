//! What several dockets on one PostgreSQL database share besides the rows: a feed of the changes
//! any of them commits (LISTEN/NOTIFY), and bot-wide roles that one process holds at a time
//! (advisory locks). On SQLite, one process serves the database: there is no feed, and that
//! process holds every role.

use std::time::Duration;

#[cfg(feature = "postgres")]
use super::postgres;
use super::{Pool, Store, StoreResult};
use crate::domain::BotId;

/// What a [`ChangeFeed`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A job may have become claimable (inserted, moved, released).
    Jobs,
    /// A message may have become claimable (queued, sent back to `pending`).
    Outbox,
    /// The feed lost its connection: changes may have been missed meanwhile.
    Missed,
}

/// Changes made by any process on a PostgreSQL database, as they commit (LISTEN/NOTIFY), so
/// workers on every host wake at once instead of at their next poll. From [`Store::changes`].
#[derive(Debug)]
pub struct ChangeFeed {
    #[cfg(feature = "postgres")]
    listener: postgres::Listener,
}

impl ChangeFeed {
    /// Waits for the next change. After [`Change::Missed`] the next call reconnects; an error is
    /// the reconnection failing (the caller waits and calls again).
    pub async fn next(&mut self) -> StoreResult<Change> {
        #[cfg(feature = "postgres")]
        return self.listener.next().await;
        #[cfg(not(feature = "postgres"))]
        std::future::pending().await
    }
}

/// A job that exactly one process of all those on the database may do at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Calling getUpdates: Telegram serves one caller per bot and answers others with 409.
    Poller,
    /// The janitor's bot-wide parts (expiry, the results cap, pruning history) and handing back
    /// lost hosts' jobs: one process does them, so two never race over the same rows.
    Janitor,
}

impl Role {
    /// The role's name, as `docket nodes` shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Poller => "poller",
            Self::Janitor => "janitor",
        }
    }

    /// The advisory lock class of the role (the object is the bot's id), apart from the message
    /// claims' lock.
    #[cfg(feature = "postgres")]
    const fn lock_class(self) -> i32 {
        match self {
            Self::Poller => 7_246_101,
            Self::Janitor => 7_246_102,
        }
    }
}

/// A [`Role`] this process holds until the lock is dropped or [`lost`](Self::lost).
#[derive(Debug)]
pub struct RoleLock {
    #[cfg(feature = "postgres")]
    connection: Option<postgres::RoleConnection>,
}

impl RoleLock {
    /// How often a held role checks that its database session is still there. On PostgreSQL a
    /// task of its own checks, whatever the holder is busy with, so the session never idles long
    /// enough for the server to end it (15 s of silence) while the holder lives.
    pub const CHECK_EVERY: Duration = Duration::from_secs(1);

    /// Whether the role is still held: its database session was there at the last check. Always,
    /// on SQLite.
    pub async fn is_held(&mut self) -> bool {
        #[cfg(feature = "postgres")]
        if let Some(connection) = &self.connection {
            return connection.still_held();
        }
        true
    }

    /// Resolves when the role is no longer held: its database session ended (the connection was
    /// cut, the server restarted, the session was silent too long) or a check went unanswered,
    /// so another process may hold it now. Never, on SQLite, where the one `docket run` holds
    /// every role.
    pub async fn lost(&mut self) {
        #[cfg(feature = "postgres")]
        if let Some(connection) = &mut self.connection {
            return connection.lost().await;
        }
        std::future::pending::<()>().await;
    }
}

impl Store {
    /// The feed of changes other processes commit, on PostgreSQL; `None` on SQLite, where one
    /// process wakes its own workers.
    pub async fn changes(&self) -> StoreResult<Option<ChangeFeed>> {
        match &self.pool {
            Pool::Sqlite(_) => Ok(None),
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => Ok(Some(ChangeFeed { listener: postgres::Listener::connect(pool).await? })),
        }
    }

    /// Takes `role` for `bot` if no process on the database holds it (PostgreSQL: an advisory
    /// lock held on a connection of its own). On SQLite, one process serves the database (see
    /// [`RunLock`](super::RunLock)), and it always gets the role.
    pub async fn try_take_role(&self, role: Role, bot: BotId) -> StoreResult<Option<RoleLock>> {
        #[cfg(not(feature = "postgres"))]
        let _ = (role, bot);
        match &self.pool {
            Pool::Sqlite(_) => Ok(Some(RoleLock {
                // One process: every role is its own (the fields exist for PostgreSQL).
                #[cfg(feature = "postgres")]
                connection: None,
            })),
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => {
                // Bot ids fit 32 bits today; the fold keeps the lock per bot if they grow.
                let object = (bot.0 ^ (bot.0 >> 32)) as i32;
                let taken = postgres::try_take_role(pool, role.lock_class(), object).await?;
                Ok(taken.map(|connection| RoleLock { connection: Some(connection) }))
            }
        }
    }
}
