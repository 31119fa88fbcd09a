//! Storage promises, written once and run against every backend.
//!
//! Each promise is an `async fn case(store: Store)` in the file of its topic. `conformance!` stamps
//! every case out as one `#[tokio::test]` per backend, next to the case: `<topic>::sqlite::<case>`
//! on a fresh WAL file in a temp folder, and, with `--features postgres-tests`,
//! `<topic>::postgres::<case>` on a fresh database created on the server named by `DATABASE_URL`
//! and dropped afterwards. Time is fixed [`Timestamp`]s, never the wall clock. This file holds the
//! fixtures and the harness the topics share.

use std::future::Future;
use std::time::Duration;

use super::{Completion, Conn, DatabaseUrl, Stage, Store};
use crate::domain::{
    BotId, ChatRef, IdempotencyKey, Job, JobState, Lease, MessageId, MessageKind, NewMessage, Operation, OutboxMessage,
    Submission, Ticket, Timestamp, UpdateId, UserId,
};

/// Stamps each case of a topic out once per backend, as `sqlite::<case>` and `postgres::<case>`.
macro_rules! conformance {
    ($($case:ident),+ $(,)?) => {
        /// The cases on SQLite: a fresh file per test, WAL mode as in production.
        mod sqlite {
            cases!($crate::store::conformance::on_sqlite: $($case),+);
        }
        /// The cases on PostgreSQL: a fresh database per test on the server of `DATABASE_URL`.
        #[cfg(feature = "postgres-tests")]
        mod postgres {
            cases!($crate::store::conformance::pg::on_postgres: $($case),+);
        }
    };
}

/// Like [`conformance!`], for cases about the migrations themselves: each case gets the address of
/// a fresh, empty database of its backend ([`DatabaseUrl`]), to open as an older docket would
/// ([`open_unmigrated`]) and again as this one does.
macro_rules! conformance_unmigrated {
    ($($case:ident),+ $(,)?) => {
        /// The cases on an empty SQLite file.
        mod sqlite {
            cases!($crate::store::conformance::on_empty_sqlite: $($case),+);
        }
        /// The cases on an empty PostgreSQL database.
        #[cfg(feature = "postgres-tests")]
        mod postgres {
            cases!($crate::store::conformance::pg::on_empty_postgres: $($case),+);
        }
    };
}

/// One test per case, each running it on a fresh store of one backend through `runner`.
macro_rules! cases {
    ($runner:path: $($case:ident),+) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
        async fn $case() {
            $runner(super::$case).await;
        }
    )+};
}

mod changes;
mod faults;
mod hosts;
mod jobs;
mod languages;
mod leases;
mod migration;
mod nodes;
mod outbox;
mod pacing;
mod people;
mod queue;
mod retention;
mod roles;
mod schema;
mod updates;

// ---------------------------------------------------------------------------------------------
// Fixtures

const BOT: BotId = BotId(7);
/// A supergroup id: below `i32::MIN`, as Telegram's are.
const CHAT: ChatRef = ChatRef(-1_001_234_567_890);
const OTHER_CHAT: ChatRef = ChatRef(42);
const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const LEASE: Duration = Duration::from_secs(60);

/// `ms` milliseconds after [`T0`].
fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(T0.as_millis() + ms)
}

fn new_job(chat: ChatRef, n: i64) -> Submission {
    Submission {
        update_id: UpdateId(1_000 + n),
        chat,
        user_id: Some(UserId(4_242)),
        message_id: MessageId(500 + n),
        file_id: format!("file-{n}"),
        file_unique_id: format!("uniq-{n}"),
        declared_name: Some(format!("doc-{n}.pdf")),
        declared_mime: Some("application/pdf".into()),
        declared_size: Some(1_024 * (n + 1)),
        operation: Operation::Optimize,
        chosen_by_default: false,
        language_code: None,
        run_of: None,
    }
}

fn message(key: &str, chat: ChatRef, kind: MessageKind, job: Option<Ticket>) -> NewMessage {
    NewMessage {
        idempotency_key: IdempotencyKey::from_stored(key.to_owned()),
        job,
        chat,
        kind,
        body: format!("body of {key}"),
        reply_to_message_id: Some(MessageId(500)),
        buttons: Vec::new(),
        part: None,
    }
}

async fn insert(store: &Store, job: &Submission, now: Timestamp) -> Ticket {
    let mut tx = store.begin().await.unwrap();
    let ticket = tx.insert_job(job, now).await.unwrap();
    tx.commit().await.unwrap();
    ticket
}

async fn enqueue(store: &Store, m: &NewMessage, now: Timestamp) -> bool {
    let mut tx = store.begin().await.unwrap();
    let queued = tx.enqueue(m, now).await.unwrap();
    tx.commit().await.unwrap();
    queued
}

async fn job(store: &Store, ticket: Ticket) -> Job {
    store.job(ticket).await.unwrap().expect("the job exists")
}

async fn claim(store: &Store, stage: Stage, owner: &str, now: Timestamp) -> (Job, Lease) {
    let job = store.claim_job(stage, owner, now, LEASE).await.unwrap().expect("a job is claimable");
    let lease = job.lease.clone().expect("a claimed job has a lease");
    (job, lease)
}

async fn claim_message(store: &Store, owner: &str, now: Timestamp) -> (OutboxMessage, Lease) {
    let m = store.claim_message(owner, now, LEASE).await.unwrap().expect("a message is claimable");
    let lease = m.lease.clone().expect("a claimed message has a lease");
    (m, lease)
}

/// Records job `n` and takes it to `processing`, as the pipeline would.
async fn processing_job(store: &Store, n: i64, now: Timestamp) -> (Ticket, Lease) {
    let ticket = insert(store, &new_job(CHAT, n), now).await;
    let (claimed, lease) = claim(store, Stage::Download, "downloader", now).await;
    assert_eq!(claimed.ticket, ticket);
    assert!(store.mark_fetched(ticket, &lease, &format!("/spool/{n}.pdf"), 2_048, "ab12", now).await.unwrap());
    let (claimed, lease) = claim(store, Stage::Process, "processor", now).await;
    assert_eq!(claimed.ticket, ticket);
    assert_eq!(claimed.state, JobState::Processing);
    (ticket, lease)
}

fn completion(n: i64) -> Completion {
    Completion {
        result_path: format!("/spool/results/{n}.pdf"),
        result_size: 777,
        detected_format: "pdf-1.7".into(),
        expires_at: at(86_400_000),
        parts: None,
    }
}

/// Runs one raw statement in a write transaction, committed when it succeeds. For setting up
/// states no store method reaches (`expired`) and for probing the schema.
async fn raw(store: &Store, sql: &'static str, id: i64) -> Result<u64, sqlx::Error> {
    let mut tx = store.begin().await.unwrap();
    let done = tx.conn().execute(sql, &[id.into()]).await;
    if done.is_ok() {
        tx.commit().await.unwrap();
    }
    done
}

fn tickets(jobs: &[Job]) -> Vec<Ticket> {
    jobs.iter().map(|j| j.ticket).collect()
}

// ---------------------------------------------------------------------------------------------
// Harness

/// Runs `case` on a fresh SQLite file in WAL mode.
async fn on_sqlite<F, Fut>(case: F)
where
    F: FnOnce(Store) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::TempDir::new().expect("a temp folder");
    let store = Store::open(&DatabaseUrl::Sqlite(dir.path().join("docket.db"))).await.expect("opening SQLite");
    let mut tx = store.begin().await.unwrap();
    let mode: String = match tx.conn() {
        Conn::Sqlite(c) => sqlx::query_scalar("PRAGMA journal_mode").fetch_one(c).await.unwrap(),
        #[cfg(feature = "postgres")]
        Conn::Postgres(_) => unreachable!("a SQLite store gives SQLite transactions"),
    };
    assert_eq!(mode, "wal", "tests run SQLite in WAL mode, as production does");
    drop(tx);
    case(store.clone()).await;
    store.close().await;
}

/// Runs `case` on the address of a fresh SQLite file no migration touched (the file is created
/// when a store first opens it).
async fn on_empty_sqlite<F, Fut>(case: F)
where
    F: FnOnce(DatabaseUrl) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::TempDir::new().expect("a temp folder");
    case(DatabaseUrl::Sqlite(dir.path().join("docket.db"))).await;
}

/// A store on the database at `url` with no migration applied, as [`Store::open`] opens it
/// but for the migrations.
async fn open_unmigrated(url: &DatabaseUrl) -> Store {
    let pool = match url {
        DatabaseUrl::Sqlite(path) => super::Pool::Sqlite(super::sqlite::open(path).await.expect("opening SQLite")),
        #[cfg(feature = "postgres")]
        DatabaseUrl::Postgres(url) => {
            super::Pool::Postgres(super::postgres::open(url).await.expect("opening PostgreSQL"))
        }
        #[cfg(not(feature = "postgres"))]
        DatabaseUrl::Postgres(_) => unreachable!("PostgreSQL cases run only with the postgres feature"),
    };
    Store { pool, node: None }
}

#[cfg(feature = "postgres-tests")]
mod pg {
    use std::future::Future;
    use std::panic::AssertUnwindSafe;

    use futures_util::FutureExt;
    use sqlx::{AssertSqlSafe, Connection, Executor, PgConnection};

    use crate::store::DatabaseUrl;
    use crate::store::Store;

    fn server_url() -> String {
        std::env::var("DATABASE_URL").unwrap_or_else(|_| {
            panic!(
                "DATABASE_URL is not set: the postgres-tests feature runs the storage conformance suite \
                 against PostgreSQL and needs a server where it may create databases, e.g. \
                 DATABASE_URL=postgres://postgres@127.0.0.1:5432/test"
            )
        })
    }

    async fn admin(url: &str) -> PgConnection {
        PgConnection::connect(url).await.unwrap_or_else(|e| panic!("cannot connect to DATABASE_URL: {e}"))
    }

    /// Runs `case` on a fresh database, migrated, dropped afterwards even when the case panics.
    pub(super) async fn on_postgres<F, Fut>(case: F)
    where
        F: FnOnce(Store) -> Fut,
        Fut: Future<Output = ()>,
    {
        on_empty_postgres(move |url: DatabaseUrl| async move {
            let store = Store::open(&url).await.expect("opening PostgreSQL");
            case(store.clone()).await;
            store.close().await;
        })
        .await;
    }

    /// Runs `case` on the address of a fresh database no migration touched, dropped afterwards
    /// even when the case panics.
    pub(super) async fn on_empty_postgres<F, Fut>(case: F)
    where
        F: FnOnce(DatabaseUrl) -> Fut,
        Fut: Future<Output = ()>,
    {
        let server = server_url();
        let name = format!("docket_t_{:016x}", rand::random::<u64>());
        let mut conn = admin(&server).await;
        conn.execute(AssertSqlSafe(format!("CREATE DATABASE {name}"))).await.expect("creating a test database");
        let _ = conn.close().await;

        let mut url = url::Url::parse(&server).expect("DATABASE_URL is a URL");
        url.set_path(&name);
        let outcome = AssertUnwindSafe(case(DatabaseUrl::Postgres(url.to_string()))).catch_unwind().await;

        // Best effort: a leftover database is untidy, not a failed test.
        let mut conn = admin(&server).await;
        if let Err(e) = conn.execute(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))).await {
            eprintln!("could not drop the test database {name}: {e}");
        }
        let _ = conn.close().await;
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }
}
