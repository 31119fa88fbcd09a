//! The change feed: on PostgreSQL a row that becomes claimable reaches a listener at once
//! (LISTEN/NOTIFY), claims and lease renewals stay quiet, and a listener whose connection dies
//! says so and listens again. SQLite, one process, has no feed.

use std::time::Duration;

use super::{CHAT, LEASE, T0, at, claim, claim_message, enqueue, insert, message, new_job};
use crate::domain::{JobEvent, JobState, MessageKind};
use crate::store::{AttemptRule, Change, ChangeFeed, Pool, Release, Stage, Store};

conformance!(committed_changes_reach_the_feed);

/// How long a change may take to arrive before the test fails.
const ARRIVAL: Duration = Duration::from_secs(20);

async fn next(feed: &mut ChangeFeed) -> Change {
    tokio::time::timeout(ARRIVAL, feed.next()).await.expect("a change arrives").expect("the feed works")
}

async fn committed_changes_reach_the_feed(store: Store) {
    let Some(mut feed) = store.changes().await.unwrap() else {
        assert!(matches!(store.pool, Pool::Sqlite(_)), "only SQLite has no feed");
        return;
    };
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    assert_eq!(next(&mut feed).await, Change::Jobs, "a new job");

    // A claim and a renewal leave nothing to claim, so they notify nobody: the next change is
    // the message queued after them.
    let (_, lease) = claim(&store, Stage::Download, "d", T0).await;
    assert!(store.renew_job_lease(ticket, &lease, at(1).plus(LEASE), at(1)).await.unwrap());
    assert!(enqueue(&store, &message("m1", CHAT, MessageKind::Reply, Some(ticket)), at(2)).await);
    assert_eq!(next(&mut feed).await, Change::Outbox, "a queued message, and nothing for the claim or renewal");

    // Nor does claiming the message; the job given back to wait is claimable again.
    claim_message(&store, "s", at(3)).await;
    let retry = Release {
        from: JobState::Accepted,
        event: JobEvent::RetryLater,
        not_before: at(4),
        detail: None,
        attempts: AttemptRule::Spent,
    };
    assert!(store.release_job(ticket, &lease, &retry, at(4)).await.unwrap());
    assert_eq!(next(&mut feed).await, Change::Jobs, "a released job, and nothing for the message claim");

    // The listener's connection dies: the feed says changes may have been missed, then listens
    // on a new connection.
    let Pool::Postgres(pool) = &store.pool else { unreachable!("only PostgreSQL has a feed") };
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(killed, [true], "one listening connection");
    assert_eq!(next(&mut feed).await, Change::Missed);
    let reconnected = async {
        loop {
            // Until the new connection listens, a change may be missed: keep queueing new jobs.
            insert(&store, &new_job(CHAT, 100 + next_n()), at(3)).await;
            if tokio::time::timeout(Duration::from_millis(500), feed.next()).await.is_ok() {
                return;
            }
        }
    };
    tokio::time::timeout(ARRIVAL, reconnected).await.expect("the feed listens again");
}

/// A fresh job number per call, for the jobs queued while the feed reconnects.
fn next_n() -> i64 {
    use std::sync::atomic::{AtomicI64, Ordering};
    static N: AtomicI64 = AtomicI64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}
