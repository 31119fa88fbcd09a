//! Faults of the database itself: what it answers when it cannot do the work now (a full disk, a
//! read-only file or server, too many connections, a shutdown, a lock or statement timeout) is
//! transient, and what will fail the same way again is not; and, on PostgreSQL, a session that
//! went silent in the middle of a transaction holds the others up only briefly.

#[cfg(feature = "postgres")]
use std::time::{Duration, Instant};

#[cfg(feature = "postgres")]
use super::{CHAT, T0, enqueue, message};
#[cfg(feature = "postgres")]
use crate::domain::MessageKind;
use crate::store::{Pool, QueryContext, Store, StoreError};

conformance!(
    what_the_database_cannot_do_now_is_transient,
    a_transaction_gone_silent_holds_message_claims_up_only_briefly
);

/// Runs `sql` on a connection of its own and returns its error as the store would report it.
#[cfg(feature = "postgres")]
async fn pg_error(pool: &sqlx::PgPool, setup: &str, sql: String) -> StoreError {
    use sqlx::Connection as _;
    let mut conn = pool.acquire().await.unwrap().detach();
    if !setup.is_empty() {
        sqlx::raw_sql(sqlx::AssertSqlSafe(setup.to_owned())).execute(&mut conn).await.unwrap();
    }
    let e = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut conn)
        .await
        .context("probing")
        .expect_err("the statement fails");
    let _ = conn.close().await;
    e
}

/// Runs `sql`, a write that must fail, on `conn`: its error as the store would report it.
async fn sqlite_error(conn: &mut sqlx::SqliteConnection, sql: &'static str) -> StoreError {
    sqlx::query(sql).execute(conn).await.context("writing").expect_err(sql)
}

/// A block that fails with the condition `code` (a PostgreSQL condition name).
#[cfg(feature = "postgres")]
fn raise(code: &str) -> String {
    format!("DO $$ BEGIN RAISE EXCEPTION 'simulated' USING ERRCODE = '{code}'; END $$")
}

/// The code the database answered `e` with.
#[cfg(feature = "postgres")]
fn code_of(e: &StoreError) -> Option<String> {
    match e {
        StoreError::Query { source, .. } => source.code().map(std::borrow::Cow::into_owned),
        _ => None,
    }
}

async fn what_the_database_cannot_do_now_is_transient(store: Store) {
    match &store.pool {
        Pool::Sqlite(pool) => {
            use sqlx::Connection as _;
            let mut conn = pool.acquire().await.unwrap().detach();
            sqlx::raw_sql("CREATE TABLE ballast (b BLOB)").execute(&mut conn).await.unwrap();
            // A full disk, for real: this connection may not grow the file any more.
            let pages: i64 = sqlx::query_scalar("PRAGMA page_count").fetch_one(&mut conn).await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("PRAGMA max_page_count = {pages}")))
                .execute(&mut conn)
                .await
                .unwrap();
            let full = sqlite_error(&mut conn, "INSERT INTO ballast VALUES (zeroblob(1000000))").await;
            assert!(full.to_string().contains("full"), "{full}");
            assert!(full.is_transient(), "SQLITE_FULL: {full:?}");
            // Read-only, for real.
            sqlx::raw_sql("PRAGMA query_only = 1").execute(&mut conn).await.unwrap();
            let read_only = sqlite_error(&mut conn, "INSERT INTO ballast VALUES (1)").await;
            assert!(read_only.to_string().contains("readonly"), "{read_only}");
            assert!(read_only.is_transient(), "SQLITE_READONLY: {read_only:?}");
            sqlx::raw_sql("PRAGMA query_only = 0").execute(&mut conn).await.unwrap();
            let broken = sqlite_error(&mut conn, "INSERT INTO no_such_table VALUES (1)").await;
            assert!(!broken.is_transient(), "a statement that cannot work: {broken:?}");
            let _ = conn.close().await;
        }
        #[cfg(feature = "postgres")]
        Pool::Postgres(pool) => {
            // What the server answers, code for code, as it would answer them itself.
            for code in [
                "disk_full",
                "out_of_memory",
                "too_many_connections",
                "read_only_sql_transaction",
                "admin_shutdown",
                "crash_shutdown",
                "cannot_connect_now",
                "serialization_failure",
                "deadlock_detected",
                "lock_not_available",
                "query_canceled",
                "io_error",
            ] {
                let e = pg_error(pool, "", raise(code)).await;
                assert!(e.is_transient(), "{code}: {e:?}");
            }
            for code in ["unique_violation", "syntax_error", "undefined_table", "invalid_text_representation"] {
                assert!(!pg_error(pool, "", raise(code)).await.is_transient(), "{code} fails the same way again");
            }
            // And for real: a read-only session (a standby, a demoted primary), and docket's own
            // statement and lock bounds.
            let read_only =
                pg_error(pool, "SET default_transaction_read_only = on", "CREATE TABLE ballast (b int)".into()).await;
            assert_eq!(code_of(&read_only).as_deref(), Some("25006"), "{read_only:?}");
            assert!(read_only.is_transient());
            let slow = pg_error(pool, "SET statement_timeout = '50ms'", "SELECT pg_sleep(5)".into()).await;
            assert_eq!(code_of(&slow).as_deref(), Some("57014"), "{slow:?}");
            assert!(slow.is_transient());
        }
    }
}

/// How long a silent transaction may hold the message claims up, with margin for a busy machine.
#[cfg(feature = "postgres")]
const SILENT_BOUND: Duration = Duration::from_secs(30);

async fn a_transaction_gone_silent_holds_message_claims_up_only_briefly(store: Store) {
    #[cfg(feature = "postgres")]
    if let Pool::Postgres(pool) = &store.pool {
        assert!(enqueue(&store, &message("m1", CHAT, MessageKind::Reply, None), T0).await);
        // A host froze (or was cut off) in the middle of a message claim: it holds the claims'
        // lock, and its kernel keeps the connection open.
        let mut frozen = pool.begin().await.unwrap();
        sqlx::query(crate::store::postgres::LOCK_MESSAGE_CLAIMS).execute(&mut *frozen).await.unwrap();
        let started = Instant::now();
        let mut waits = Vec::new();
        let claimed = loop {
            assert!(started.elapsed() < SILENT_BOUND, "the claims are still held up: {waits:?}");
            let claiming = tokio::time::timeout(SILENT_BOUND, store.claim_message("sender", T0, super::LEASE));
            match claiming.await.expect("a claim waits for the silent transaction's lock without end") {
                Ok(claimed) => break claimed,
                Err(e) => {
                    assert!(e.is_transient(), "waiting for a lock is worth trying again: {e:?}");
                    waits.push(e.to_string());
                }
            }
        };
        assert_eq!(claimed.map(|m| m.idempotency_key.as_str().to_owned()).as_deref(), Some("m1"));
        // The server ended the silent session: its transaction is gone.
        assert!(frozen.commit().await.is_err(), "the silent transaction was ended by the server");
        return;
    }
    let _ = store;
}
