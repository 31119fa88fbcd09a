//! The migrations keep old jobs working: a database that ran docket before tickets of several
//! files (migration 0017, which rebuilds SQLite's `jobs` and `outbox`) keeps its jobs, their
//! messages and its ticket counter through it, on each backend: the cases open the database as an
//! older docket did, with only the migrations before 0017, and then as this one does.

use std::borrow::Cow;

use sqlx::migrate::Migrator;

use super::{CHAT, T0, at, insert, new_job, open_unmigrated};
use crate::domain::{JobState, MessageKind, Operation, OutboxState, Ticket};
use crate::store::{DatabaseUrl, MessageFilter, Pool, Store};

conformance_unmigrated!(jobs_from_before_tickets_of_several_files_survive_its_migration);

/// The first migration of tickets of several files (`job_sources`, and SQLite's table rebuild).
const SOURCES_MIGRATION: i64 = 17;

/// Applies the backend's migrations older than `version`, as an older docket did: the same
/// migrations (so the full run later accepts their checksums), with the migrator's own settings.
async fn migrate_before(store: &Store, version: i64) {
    let older = |all: &Migrator| Migrator {
        migrations: Cow::Owned(all.iter().filter(|m| m.version < version).cloned().collect()),
        ignore_missing: all.ignore_missing,
        locking: all.locking,
        no_tx: all.no_tx,
        table_name: all.table_name.clone(),
        create_schemas: all.create_schemas.clone(),
    };
    match &store.pool {
        Pool::Sqlite(pool) => older(&crate::store::sqlite::MIGRATOR).run(pool).await,
        #[cfg(feature = "postgres")]
        Pool::Postgres(pool) => older(&crate::store::postgres::MIGRATOR).run(pool).await,
    }
    .expect("the older migrations apply");
}

/// Runs `sql` in a write transaction of its own, committed.
async fn execute(store: &Store, sql: &'static str) {
    let mut tx = store.begin().await.unwrap();
    tx.conn().execute(sql, &[]).await.unwrap_or_else(|e| panic!("{e}: {sql}"));
    tx.commit().await.unwrap();
}

/// The rows in `job_sources`, or the error of reading a table that is not there.
async fn source_rows(store: &Store) -> Result<i64, sqlx::Error> {
    let mut tx = store.begin().await.unwrap();
    tx.conn().scalar("SELECT COUNT(*) FROM job_sources", &[]).await
}

/// A ready job with its result (ticket 1), one still waiting for its download (ticket 2), both
/// in the shape of the schema before 0017. (Chat as [`CHAT`], times from [`T0`] on.)
const OLD_JOBS: &str = "INSERT INTO jobs (update_id, chat_id, user_id, message_id, file_id, file_unique_id,
        declared_name, declared_mime, declared_size, operation, status, real_size, sha256, detected_format,
        attempts, result_path, result_size, result_expires_at, created_at, updated_at)
    VALUES
        (1001, -1001234567890, 4242, 501, 'file-1', 'uniq-1', 'old.pdf', 'application/pdf', 2048, 'optimize',
         'ready', 2048, 'ab12', 'pdf-1.7', 1, '/spool/results/1/old.pdf', 777, 1800086400000,
         1800000000000, 1800000000000),
        (1002, -1001234567890, 4242, 502, 'file-2', 'uniq-2', 'waiting.pdf', 'application/pdf', 4096, 'text',
         'accepted', NULL, NULL, NULL, 0, NULL, NULL, NULL, 1800000000001, 1800000000001),
        (1003, -1001234567890, 4242, 503, 'file-3', 'uniq-3', 'gone.pdf', 'application/pdf', 1024, 'optimize',
         'failed', NULL, NULL, NULL, 1, NULL, NULL, NULL, 1800000000002, 1800000000002)";

/// Ticket 1's result message, not yet sent.
const OLD_MESSAGE: &str = "INSERT INTO outbox (idempotency_key, job_id, chat_id, kind, priority, body,
        reply_to_message_id, status, created_at, updated_at)
    VALUES ('job:1:u1001:result', 1, -1001234567890, 'result', 1, 'the old result', 501, 'pending',
        1800000000000, 1800000000000)";

async fn jobs_from_before_tickets_of_several_files_survive_its_migration(url: DatabaseUrl) {
    let old = open_unmigrated(&url).await;
    migrate_before(&old, SOURCES_MIGRATION).await;
    assert!(source_rows(&old).await.is_err(), "before 0017 there is no job_sources");
    execute(&old, OLD_JOBS).await;
    execute(&old, OLD_MESSAGE).await;
    // Ticket 3 was the last number given; gone now, it must never be given again.
    execute(&old, "DELETE FROM jobs WHERE id = 3").await;
    // The older docket stops before this one migrates. (A SQLite connection that outlives a
    // rebuild of `jobs` under it re-prepares `SELECT *` with more columns than sqlx described,
    // and sqlx-sqlite panics reading the row.)
    old.close().await;

    let store = Store::open(&url).await.expect("the remaining migrations apply over old rows");

    let ready = store.job(Ticket(1)).await.unwrap().expect("the ready job is still there");
    assert_eq!((ready.ticket, ready.state), (Ticket(1), JobState::Ready));
    assert_eq!(ready.submission.operation, Operation::Optimize);
    assert_eq!(ready.submission.declared_name.as_deref(), Some("old.pdf"));
    let result = ready.result.as_ref().expect("the ready job keeps its result");
    assert_eq!(
        (result.path.as_deref(), result.size, result.expires_at),
        (Some("/spool/results/1/old.pdf"), 777, at(86_400_000))
    );
    let waiting = store.job(Ticket(2)).await.unwrap().expect("the accepted job is still there");
    assert_eq!((waiting.ticket, waiting.state), (Ticket(2), JobState::Accepted));
    assert_eq!(waiting.submission.operation, Operation::Text);
    assert_eq!(waiting.result, None);
    assert_eq!(waiting.created_at, at(1));
    assert!(store.job(Ticket(3)).await.unwrap().is_none());

    let messages = store.messages(&MessageFilter::job(Ticket(1))).await.unwrap();
    assert_eq!(messages.len(), 1, "{messages:#?}");
    assert_eq!((messages[0].kind, messages[0].state), (MessageKind::Result, OutboxState::Pending));
    assert_eq!((messages[0].chat, messages[0].body.as_str()), (CHAT, "the old result"));

    // The counter went on from the last number given, not from the highest left: SQLite's table
    // rebuild carried its AUTOINCREMENT counter over.
    let next = insert(&store, &new_job(CHAT, 9), T0).await;
    assert_eq!(next, Ticket(4), "a new ticket's number follows every one given before");
    assert_eq!(source_rows(&store).await.expect("job_sources exists"), 0);
    store.close().await;
}
