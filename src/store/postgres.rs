//! PostgreSQL backend, for several docket processes sharing one database.
//!
//! Claims lock the chosen row with `FOR UPDATE SKIP LOCKED`, so concurrent workers on different
//! machines pass over each other's rows instead of queueing behind them; message claims also take
//! an advisory lock first ([`LOCK_MESSAGE_CLAIMS`]), because a chat may have one message in flight.
//!
//! Only what differs from SQLite is here: connecting, the migrations, how to tell docket's schema
//! is there, the claim statements and the lock. Every other statement is shared (see the table
//! modules).

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::statements::ClaimSql;
use super::{Change, Conn, DatabaseError, DatabaseUrl, QueryContext, StoreError, StoreResult};
use crate::domain::{NodeName, OutboxMessage, Timestamp};

/// docket's PostgreSQL migrations, built in.
pub(super) static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The claim statements as PostgreSQL runs them: the subquery locks the row it chooses with
/// `FOR UPDATE SKIP LOCKED`, so concurrent claims pass over each other's rows. The same as
/// SQLite's otherwise.
pub const CLAIMS: ClaimSql = super::statements::claim_sql!(" FOR UPDATE SKIP LOCKED");

/// Serialises message claims until the end of the transaction: a chat may have one message in
/// flight, and two concurrent claims could otherwise both see the chat idle.
pub const LOCK_MESSAGE_CLAIMS: &str = "SELECT pg_advisory_xact_lock(7246001)";

/// Whether the database has the table sqlx records migrations in.
pub const MIGRATIONS_TABLE: &str = "SELECT to_regclass('_sqlx_migrations') IS NOT NULL";

/// The bounds docket sets on every PostgreSQL session it opens, as startup options (`-c
/// name=value`), so that a host that froze, lost power or was cut off cannot hold anything the
/// others need for longer than these: its sessions end, and with them its locks and roles. A
/// setting that the URL's own `options` parameter names is left to the URL. Constants, not
/// configuration: each bounds something docket itself never does for that long, so no
/// deployment needs another value for docket to work, and the URL can still override one.
pub const SESSION_SETTINGS: [(&str, &str); 7] = [
    // The server probes a connection silent for 10 s, every 5 s, and drops it after 3 probes
    // without an answer: a host that lost power or its network is seen gone in about 25 s
    // instead of the kernel's default of 2 h 11 min. (sqlx sets no keepalive on its own end.)
    ("tcp_keepalives_idle", "10"),
    ("tcp_keepalives_interval", "5"),
    ("tcp_keepalives_count", "3"),
    // Data the server sent that stays unacknowledged for 30 s ends the connection too (Linux
    // servers), where keepalives do not apply because the connection is not idle.
    ("tcp_user_timeout", "30000"),
    // docket never leaves a transaction waiting for itself: one idle for 10 s belongs to a
    // process that froze (SIGSTOP, a VM paused, swap) or was cut off in the middle, and it holds
    // row locks or the message claims' lock that every host waits for.
    ("idle_in_transaction_session_timeout", "10s"),
    // A statement that waits 10 s for a lock gives up with 55P03, which is transient: the
    // caller tries again later instead of queueing behind a holder that may never come back.
    ("lock_timeout", "10s"),
    // The longest statement docket runs (a janitor pass after days of downtime) takes seconds;
    // one that runs for 2 minutes is stuck. Migrations run without it (see `migrate`).
    ("statement_timeout", "2min"),
];

/// How long the session of a role may stay silent before the server ends it
/// (`idle_session_timeout`, set on role sessions only: pooled connections and the change
/// listener may idle for as long as they like). The holder's keeper asks every
/// [`RoleLock::CHECK_EVERY`](super::RoleLock::CHECK_EVERY); a process frozen longer than this
/// loses the role, and another host takes it over.
pub const ROLE_IDLE_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a role's check (`SELECT 1`) or its taking may wait for an answer. A check that does
/// not answer counts as the role lost: the server, which hears nothing from this session either,
/// gives the role away after [`ROLE_IDLE_TIMEOUT`], and the holder must have stopped before.
pub const ROLE_ANSWER_TIMEOUT: Duration = Duration::from_secs(5);

/// The connect options for `url`, with [`SESSION_SETTINGS`] added where the URL's `options`
/// does not set them.
pub(super) fn connect_options(url: &str) -> Result<PgConnectOptions, sqlx::Error> {
    let options = PgConnectOptions::from_str(url)?;
    let own = options.get_options().unwrap_or_default().to_owned();
    let missing: Vec<(&str, &str)> = SESSION_SETTINGS.iter().copied().filter(|(name, _)| !sets(&own, name)).collect();
    Ok(if missing.is_empty() { options } else { options.options(missing) })
}

/// Whether the startup options `options` (`-c name=value …`, `-cname=value` or
/// `--name=value`, as libpq takes them) set `name`.
fn sets(options: &str, name: &str) -> bool {
    options.split_whitespace().filter_map(|token| token.split_once('=')).any(|(key, _)| {
        let key = key.strip_prefix("--").or_else(|| key.strip_prefix("-c")).unwrap_or(key);
        key.replace('-', "_").eq_ignore_ascii_case(name)
    })
}

/// Connects to `url`.
pub(super) async fn open(url: &str) -> StoreResult<PgPool> {
    let redacted = DatabaseUrl::Postgres(url.to_owned()).redacted();
    let options = connect_options(url)
        .map_err(|source| StoreError::Open { url: redacted.clone(), source: DatabaseError::from_sqlx(source) })?;
    PgPoolOptions::new()
        .max_connections(16)
        .acquire_timeout(Duration::from_secs(30))
        .connect_with(options)
        .await
        .map_err(|source| StoreError::Open { url: redacted, source: DatabaseError::from_sqlx(source) })
}

/// Applies the pending migrations on a connection of its own, without the statement and lock
/// bounds of [`SESSION_SETTINGS`]: an index built on a big table may take long, and a host
/// waiting for another's migrations (sqlx serialises them with an advisory lock) must wait.
pub(super) async fn migrate(pool: &PgPool) -> Result<(), sqlx::migrate::MigrateError> {
    use sqlx::Connection as _;
    let mut conn = pool.acquire().await?.detach();
    sqlx::raw_sql("SET statement_timeout = 0; SET lock_timeout = 0").execute(&mut conn).await?;
    let migrated = MIGRATOR.run(&mut conn).await;
    let _ = conn.close().await;
    migrated
}

/// Connects to `url` only if the database exists; creates nothing.
pub(super) async fn open_existing(url: &str) -> StoreResult<PgPool> {
    match open(url).await {
        // 3D000 invalid_catalog_name: the database does not exist.
        Err(StoreError::Open { url, source }) if source.code().as_deref() == Some("3D000") => {
            Err(StoreError::Missing { url })
        }
        other => other,
    }
}

/// A bot-wide role held by this process: a session-level advisory lock on a connection of its
/// own, taken out of the pool so nothing else runs on it or recycles it. The server releases the
/// lock when the session ends, so a dead or cut-off holder frees the role by itself, and a frozen
/// one once its session was silent for [`ROLE_IDLE_TIMEOUT`]. A keeper task owns the connection
/// and asks the server every [`RoleLock::CHECK_EVERY`](super::RoleLock::CHECK_EVERY), however
/// busy the holder is; the role counts as lost from the first check that fails or goes
/// unanswered for [`ROLE_ANSWER_TIMEOUT`]. Dropping the handle ends the keeper and closes the
/// session, which frees the role at once.
#[derive(Debug)]
pub(super) struct RoleConnection {
    /// `true` while the keeper's checks succeed; `false`, or the keeper gone, once one failed.
    held: tokio::sync::watch::Receiver<bool>,
}

/// Takes the advisory lock `(class, object)` if nobody holds it, within
/// [`ROLE_ANSWER_TIMEOUT`] (after the pool's own wait for a connection).
pub(super) async fn try_take_role(pool: &PgPool, class: i32, object: i32) -> StoreResult<Option<RoleConnection>> {
    use sqlx::Connection as _;
    let mut conn = pool.acquire().await.context("connecting for a role")?.detach();
    let asking = async {
        // Before the lock: a session that holds a role must never idle for long unnoticed.
        let bounded =
            sqlx::query(sqlx::AssertSqlSafe(format!("SET idle_session_timeout = {}", ROLE_IDLE_TIMEOUT.as_millis())))
                .execute(&mut conn)
                .await
                .context("bounding a role's session");
        match bounded {
            Ok(_) => {}
            // 42704 undefined_object: a server older than PostgreSQL 14 has no such setting. The
            // role still works, but a frozen holder keeps it until it thaws.
            Err(StoreError::Query { source, .. }) if source.code().as_deref() == Some("42704") => {
                tracing::warn!(
                    "the PostgreSQL server has no idle_session_timeout (14 or newer has): a frozen host keeps its role until it thaws"
                );
            }
            Err(e) => return Err(e),
        }
        sqlx::query_scalar::<_, bool>(TRY_TAKE_ROLE)
            .bind(class)
            .bind(object)
            .fetch_one(&mut conn)
            .await
            .context("taking a role")
    };
    let taken = match tokio::time::timeout(ROLE_ANSWER_TIMEOUT, asking).await {
        Ok(taken) => taken,
        Err(_) => {
            Err(StoreError::Query { action: "taking a role", source: DatabaseError::timed_out(ROLE_ANSWER_TIMEOUT) })
        }
    };
    match taken {
        Ok(true) => {
            let (tell, held) = tokio::sync::watch::channel(true);
            tokio::spawn(keep_role(conn, tell));
            Ok(Some(RoleConnection { held }))
        }
        Ok(false) => {
            let _ = conn.close().await;
            Ok(None)
        }
        // A session that may hold the lock after all (the answer was lost) is dropped, not
        // closed politely: the server frees whatever it held.
        Err(e) => Err(e),
    }
}

/// Checks the role's session every [`RoleLock::CHECK_EVERY`](super::RoleLock::CHECK_EVERY)
/// until a check fails (then says so on `tell`) or the holder drops its handle; the connection
/// goes with this task.
async fn keep_role(mut conn: sqlx::PgConnection, tell: tokio::sync::watch::Sender<bool>) {
    loop {
        tokio::select! {
            () = tell.closed() => return,
            () = tokio::time::sleep(super::RoleLock::CHECK_EVERY) => {}
        }
        let check = tokio::time::timeout(ROLE_ANSWER_TIMEOUT, sqlx::query("SELECT 1").execute(&mut conn)).await;
        if !matches!(check, Ok(Ok(_))) {
            tell.send_replace(false);
            return;
        }
    }
}

impl RoleConnection {
    /// Whether the session (and so the lock) was still there at the last check.
    pub(super) fn still_held(&self) -> bool {
        *self.held.borrow() && self.held.has_changed().is_ok()
    }

    /// Resolves once a check found the session gone (or unanswering).
    pub(super) async fn lost(&mut self) {
        let _ = self.held.wait_for(|held| !held).await;
    }
}

/// Takes a session-level advisory lock without waiting: $1 class, $2 object.
pub const TRY_TAKE_ROLE: &str = "SELECT pg_try_advisory_lock($1, $2)";

/// The channels of migration 0009's triggers.
const JOBS_CHANNEL: &str = "docket_jobs";
const OUTBOX_CHANNEL: &str = "docket_outbox";

/// A dedicated connection listening on the change channels.
#[derive(Debug)]
pub(super) struct Listener(sqlx::postgres::PgListener);

impl Listener {
    /// Connects (a connection of its own, outside the pool's count) and listens.
    pub(super) async fn connect(pool: &PgPool) -> StoreResult<Self> {
        let mut listener = sqlx::postgres::PgListener::connect_with(pool).await.context("connecting to listen")?;
        listener.listen_all([JOBS_CHANNEL, OUTBOX_CHANNEL]).await.context("listening for changes")?;
        Ok(Self(listener))
    }

    /// The next change. A lost connection is [`Change::Missed`]: notifications sent while it was
    /// down are gone; the next call connects again and listens anew.
    pub(super) async fn next(&mut self) -> StoreResult<Change> {
        let notification = self.0.try_recv().await.context("waiting for changes")?;
        Ok(match notification.as_ref().map(sqlx::postgres::PgNotification::channel) {
            Some(JOBS_CHANNEL) => Change::Jobs,
            Some(OUTBOX_CHANNEL) => Change::Outbox,
            Some(_) | None => Change::Missed,
        })
    }
}

/// Starts a write transaction.
pub(super) async fn begin(pool: &PgPool) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
    pool.begin().await
}

/// Runs [`MIGRATIONS_TABLE`]: whether docket (through sqlx) ever migrated this database.
pub(super) async fn has_migrations_table(pool: &PgPool) -> StoreResult<bool> {
    sqlx::query_scalar(MIGRATIONS_TABLE).fetch_one(pool).await.context("looking for docket's schema")
}

/// Claims the next deliverable message (see [`Store::claim_message`](super::Store::claim_message))
/// in a transaction that first takes [`LOCK_MESSAGE_CLAIMS`].
pub(super) async fn claim_message(
    pool: &PgPool,
    owner: &str,
    node: Option<&NodeName>,
    now: Timestamp,
    lease_len: Duration,
) -> StoreResult<Option<OutboxMessage>> {
    let mut tx = begin(pool).await.context("starting a transaction")?;
    sqlx::query(LOCK_MESSAGE_CLAIMS).execute(&mut *tx).await.context("serialising message claims")?;
    let claimed = super::outbox::claim_message(&mut Conn::Postgres(&mut tx), owner, node, now, lease_len).await?;
    tx.commit().await.context("committing a message claim")?;
    Ok(claimed)
}

#[cfg(test)]
mod tests {
    use super::{CLAIMS, SESSION_SETTINGS, connect_options, sets};

    /// docket's session bounds go into every connection's startup options, except those the
    /// URL's own `options` sets: the operator's value wins.
    #[test]
    fn sessions_are_bounded_unless_the_url_says_otherwise() {
        let plain = connect_options("postgres://docket@db.internal/docket").expect("a valid URL");
        let options = plain.get_options().expect("startup options");
        for (name, value) in SESSION_SETTINGS {
            assert!(options.contains(&format!("-c {name}={value}")), "{name} in {options}");
        }
        let url = "postgres://docket@db.internal/docket?options=-c%20statement_timeout%3D10min%20--lock-timeout%3D1s";
        let tuned = connect_options(url).expect("a valid URL");
        let options = tuned.get_options().expect("startup options");
        assert_eq!(options.matches("statement_timeout").count(), 1, "{options}");
        assert!(options.contains("statement_timeout=10min") && !options.contains("lock_timeout"), "{options}");
        assert!(options.contains("-c idle_in_transaction_session_timeout=10s"), "{options}");
        assert!(sets("-clock_timeout=5s", "lock_timeout"));
        assert!(!sets("-c statement_timeout=5s", "lock_timeout"));
    }

    /// The claims are written out once per backend; they must not drift apart.
    #[test]
    fn the_claims_differ_from_sqlite_only_in_their_lock() {
        let sqlite = &crate::store::sqlite::CLAIMS;
        let pairs = [
            (CLAIMS.download, sqlite.download),
            (CLAIMS.process_lapsed, sqlite.process_lapsed),
            (CLAIMS.process_fetched, sqlite.process_fetched),
            (CLAIMS.message, sqlite.message),
        ];
        for (postgres, sqlite) in pairs {
            assert_eq!(postgres.matches(" FOR UPDATE SKIP LOCKED)").count(), 1, "{postgres}");
            assert_eq!(postgres.replace(" FOR UPDATE SKIP LOCKED)", ")"), sqlite);
        }
    }
}
