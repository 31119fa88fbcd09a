//! Bot-wide roles: on PostgreSQL one holder at a time, and the role passes on when the holder's
//! session ends (dropped, or its connection killed); on SQLite, the one process holds them all.

use std::time::Duration;

use super::BOT;
use crate::store::{Pool, Role, Store};

conformance!(
    a_role_has_one_holder_and_passes_on_when_its_session_ends,
    the_janitor_role_is_its_own_and_its_holder_checks_it
);

/// How long a released role may take to be free again before the test fails.
const HANDOVER: Duration = Duration::from_secs(20);

async fn a_role_has_one_holder_and_passes_on_when_its_session_ends(store: Store) {
    let first = store.try_take_role(Role::Poller, BOT).await.unwrap().expect("a free role is taken");
    let second = store.try_take_role(Role::Poller, BOT).await.unwrap();
    let Pool::Postgres(pool) = &store.pool else {
        assert!(second.is_some(), "SQLite serves one process, which holds every role");
        return;
    };
    assert!(second.is_none(), "a held role is refused to anyone else");
    let another_bot = store.try_take_role(Role::Poller, crate::domain::BotId(BOT.0 + 1)).await.unwrap();
    assert!(another_bot.is_some(), "one role per bot");

    // Dropped: free again (the server notices the closed session).
    drop(first);
    let mut holder = take_within(&store, HANDOVER).await;

    // The holder's connection is killed: the holder finds out, and another takes the role.
    let killed = end_sessions_holding(pool, 7246101).await;
    assert_eq!(killed.len(), 2, "the two held roles' sessions (two bots): {killed:?}");
    tokio::time::timeout(HANDOVER, holder.lost()).await.expect("the holder learns it lost the role");
    take_within(&store, HANDOVER).await;
}

async fn the_janitor_role_is_its_own_and_its_holder_checks_it(store: Store) {
    let _poller = store.try_take_role(Role::Poller, BOT).await.unwrap().expect("the poller role");
    let mut janitor = store.try_take_role(Role::Janitor, BOT).await.unwrap().expect("another role is free");
    assert!(janitor.is_held().await);
    let Pool::Postgres(pool) = &store.pool else {
        return;
    };
    assert!(store.try_take_role(Role::Janitor, BOT).await.unwrap().is_none(), "one janitor at a time");
    let killed = end_sessions_holding(pool, 7246102).await;
    assert_eq!(killed, [true], "the janitor's session alone");
    let asking = async {
        while janitor.is_held().await {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(HANDOVER, asking).await.expect("the holder learns it lost the role");
    let retake = async {
        loop {
            if let Some(role) = store.try_take_role(Role::Janitor, BOT).await.unwrap() {
                return role;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(HANDOVER, retake).await.expect("another process takes the janitor role");
}

/// Ends the database sessions (of this test's database) that hold an advisory lock of `class`,
/// as a cut connection would; whether each one ended.
async fn end_sessions_holding(pool: &sqlx::PgPool, class: i64) -> Vec<bool> {
    sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND classid::bigint = $1
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
    .bind(class)
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Takes the poller role, asking again until `deadline` (a released lock is freed by the server
/// when it sees the session end).
async fn take_within(store: &Store, deadline: Duration) -> crate::store::RoleLock {
    let asking = async {
        loop {
            if let Some(role) = store.try_take_role(Role::Poller, BOT).await.unwrap() {
                return role;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(deadline, asking).await.expect("the role becomes free")
}
