//! Storage promises, written once and run against every backend.
//!
//! Each promise is an `async fn case(store: Store)`. `conformance!` stamps every case out as one
//! `#[tokio::test]` per backend: `sqlite::<case>` on a fresh WAL file in a temp folder, and, with
//! `--features postgres-tests`, `postgres::<case>` on a fresh database created on the server named
//! by `DATABASE_URL` and dropped afterwards. Time is fixed [`Timestamp`]s, never the wall clock.

use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;

use tokio::task::JoinSet;

use super::{AttemptRule, ClaimLimits, Completion, JobFilter, Release, Stage, Store, StoreError, Tx, UpdateOutcome};
use crate::domain::{
    ChatRef, Job, JobEvent, JobState, Lease, MessageKind, NewJob, NewMessage, Operation, OutboxMessage, OutboxState,
    Ticket, Timestamp, TransitionError,
};
use crate::store::DatabaseUrl;

/// Stamps each case out once per backend.
macro_rules! conformance {
    ($($case:ident),+ $(,)?) => {
        /// The cases on SQLite: a fresh file per test, WAL mode as in production.
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    super::on_sqlite(super::$case).await;
                }
            )+
        }

        /// The cases on PostgreSQL: a fresh database per test on the server of `DATABASE_URL`.
        #[cfg(feature = "postgres-tests")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $case() {
                    super::pg::on_postgres(super::$case).await;
                }
            )+
        }
    };
}

conformance!(
    exclusive_claims_under_concurrency,
    expired_leases_are_reclaimable_and_bump_the_token,
    a_renewed_lease_is_not_reclaimable,
    stale_owners_cannot_write,
    intake_is_idempotent_per_update,
    the_poll_offset_never_moves_back,
    one_job_per_chat_and_file,
    enqueue_is_idempotent_per_key,
    outbox_keeps_order_per_chat,
    outbox_order_holds_under_concurrency,
    replies_go_before_results_across_chats,
    fail_job_writes_failure_and_notice_atomically,
    complete_job_records_the_result_and_queues_delivery,
    a_sent_result_keeps_its_file_id,
    illegal_transitions_are_rejected_before_sql,
    resubmitting_an_ended_job_keeps_the_ticket,
    job_listing_filters_newest_first,
    claims_respect_not_before,
    large_telegram_ids_round_trip,
    the_schema_rejects_unknown_names,
    the_schema_has_the_expected_indexes,
    due_results_expire_in_one_statement,
    file_owners_are_the_live_jobs,
    a_lapsed_processing_job_is_resumed_before_fetched_ones,
    downloads_respect_size_and_per_chat_limits,
    paced_chats_wait_and_others_flow,
    send_slots_are_spaced_for_every_sender,
    a_migrated_chat_takes_its_messages_and_jobs,
    progress_edits_coalesce_and_never_hold_a_chat_back,
    the_queue_is_ordered_by_when_jobs_became_due,
    releases_refund_or_count_attempts_and_count_lost_sources,
    a_failed_job_points_at_no_source,
    the_jobs_holding_files_are_in_flight_or_leased_by_this_process,
    only_an_unknown_message_is_given_up_as_failed,
    waiting_jobs_per_chat_leave_out_downloads,
);

// ---------------------------------------------------------------------------------------------
// Fixtures

const BOT: i64 = 7;
/// A supergroup id: below `i32::MIN`, as Telegram's are.
const CHAT: ChatRef = ChatRef(-1_001_234_567_890);
const OTHER_CHAT: ChatRef = ChatRef(42);
const T0: Timestamp = Timestamp::from_millis(1_800_000_000_000);
const LEASE: Duration = Duration::from_secs(60);

/// `ms` milliseconds after [`T0`].
fn at(ms: i64) -> Timestamp {
    Timestamp::from_millis(T0.as_millis() + ms)
}

fn new_job(chat: ChatRef, n: i64) -> NewJob {
    NewJob {
        update_id: 1_000 + n,
        chat,
        user_id: Some(4_242),
        message_id: 500 + n,
        file_id: format!("file-{n}"),
        file_unique_id: format!("uniq-{n}"),
        declared_name: Some(format!("doc-{n}.pdf")),
        declared_mime: Some("application/pdf".into()),
        declared_size: Some(1_024 * (n + 1)),
        operation: Operation::Optimize,
    }
}

fn message(key: &str, chat: ChatRef, kind: MessageKind, job: Option<Ticket>) -> NewMessage {
    NewMessage {
        idempotency_key: key.to_owned(),
        job,
        chat,
        kind,
        body: format!("body of {key}"),
        reply_to_message_id: Some(500),
    }
}

async fn insert(store: &Store, job: &NewJob, now: Timestamp) -> Ticket {
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
    }
}

/// Runs one raw statement in a write transaction, committed when it succeeds. For setting up
/// states no store method reaches (`expired`) and for probing the schema.
async fn raw(store: &Store, sql: &'static str, id: i64) -> Result<u64, sqlx::Error> {
    let mut tx = store.begin().await.unwrap();
    let done = match &mut tx {
        Tx::Sqlite(t) => sqlx::query(sql).bind(id).execute(&mut **t).await.map(|d| d.rows_affected()),
        #[cfg(feature = "postgres")]
        Tx::Postgres(t) => sqlx::query(sql).bind(id).execute(&mut **t).await.map(|d| d.rows_affected()),
    };
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
    let mode: String = match &mut tx {
        Tx::Sqlite(t) => sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&mut **t).await.unwrap(),
        #[cfg(feature = "postgres")]
        Tx::Postgres(_) => unreachable!("a SQLite store gives SQLite transactions"),
    };
    assert_eq!(mode, "wal", "tests run SQLite in WAL mode, as production does");
    drop(tx);
    case(store.clone()).await;
    store.close().await;
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

    /// Runs `case` on a fresh database, dropped afterwards even when the case panics.
    pub(super) async fn on_postgres<F, Fut>(case: F)
    where
        F: FnOnce(Store) -> Fut,
        Fut: Future<Output = ()>,
    {
        let server = server_url();
        let name = format!("docket_t_{:016x}", rand::random::<u64>());
        let mut conn = admin(&server).await;
        conn.execute(AssertSqlSafe(format!("CREATE DATABASE {name}"))).await.expect("creating a test database");
        let _ = conn.close().await;

        let mut url = url::Url::parse(&server).expect("DATABASE_URL is a URL");
        url.set_path(&name);
        let outcome = AssertUnwindSafe(async {
            let store = Store::open(&DatabaseUrl::Postgres(url.to_string())).await.expect("opening PostgreSQL");
            case(store.clone()).await;
            store.close().await;
        })
        .catch_unwind()
        .await;

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

// ---------------------------------------------------------------------------------------------
// Cases

/// Claims all jobs of `stage` with `workers` concurrent claimers, each until nothing is left.
async fn claim_concurrently(store: &Store, stage: Stage, workers: usize, now: Timestamp) -> Vec<Job> {
    let mut set = JoinSet::new();
    for w in 0..workers {
        let store = store.clone();
        set.spawn(async move {
            let owner = format!("worker-{w}");
            let mut got = Vec::new();
            while let Some(job) = store.claim_job(stage, &owner, now, LEASE).await.unwrap() {
                assert_eq!(job.lease.as_ref().map(|l| l.owner.as_str()), Some(owner.as_str()));
                got.push(job);
            }
            got
        });
    }
    let mut all = Vec::new();
    while let Some(got) = set.join_next().await {
        all.extend(got.unwrap());
    }
    all
}

async fn exclusive_claims_under_concurrency(store: Store) {
    let mut inserted = BTreeSet::new();
    for n in 0..20 {
        inserted.insert(insert(&store, &new_job(CHAT, n), T0).await);
    }

    let downloads = claim_concurrently(&store, Stage::Download, 8, T0).await;
    assert_eq!(downloads.len(), 20, "each job is claimed exactly once");
    assert_eq!(tickets(&downloads).into_iter().collect::<BTreeSet<_>>(), inserted);
    for j in &downloads {
        assert_eq!((j.state, j.attempts), (JobState::Accepted, 1));
        assert_eq!(j.lease.as_ref().map(|l| (l.token, l.until)), Some((1, T0.plus(LEASE))));
    }
    assert!(store.claim_job(Stage::Download, "late", T0, LEASE).await.unwrap().is_none());

    for j in &downloads {
        let lease = j.lease.as_ref().unwrap();
        assert!(store.mark_fetched(j.ticket, lease, "/spool/x", 1, "00", T0).await.unwrap());
    }
    let processing = claim_concurrently(&store, Stage::Process, 8, T0).await;
    assert_eq!(processing.len(), 20, "each fetched job is claimed exactly once");
    assert_eq!(tickets(&processing).into_iter().collect::<BTreeSet<_>>(), inserted);
    assert!(processing.iter().all(|j| j.state == JobState::Processing && j.lease.as_ref().unwrap().token == 2));

    // Outgoing messages: one per chat, so none waits for another.
    for n in 0..20 {
        assert!(enqueue(&store, &message(&format!("m{n}"), ChatRef(n), MessageKind::Reply, None), T0).await);
    }
    let mut set = JoinSet::new();
    for w in 0..8 {
        let store = store.clone();
        set.spawn(async move {
            let mut got = Vec::new();
            while let Some(m) = store.claim_message(&format!("sender-{w}"), T0, LEASE).await.unwrap() {
                got.push(m.id);
            }
            got
        });
    }
    let mut ids = Vec::new();
    while let Some(got) = set.join_next().await {
        ids.extend(got.unwrap());
    }
    assert_eq!(ids.len(), 20, "each message is claimed exactly once");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 20);
}

async fn expired_leases_are_reclaimable_and_bump_the_token(store: Store) {
    // Download stage.
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (first, lease_a) = claim(&store, Stage::Download, "a", T0).await;
    assert_eq!(first.ticket, ticket);
    assert_eq!((lease_a.owner.as_str(), lease_a.token, lease_a.until), ("a", 1, T0.plus(LEASE)));
    assert_eq!(first.attempts, 1);
    let just_before = T0.plus(LEASE).minus(Duration::from_millis(1));
    assert!(store.claim_job(Stage::Download, "b", just_before, LEASE).await.unwrap().is_none());
    let (second, lease_b) = claim(&store, Stage::Download, "b", T0.plus(LEASE)).await;
    assert_eq!(second.ticket, ticket);
    assert_eq!((lease_b.owner.as_str(), lease_b.token), ("b", 2));
    assert_eq!(lease_b.until, T0.plus(LEASE).plus(LEASE));
    assert_eq!(second.attempts, 2);

    // Process stage: a lapsed `processing` job is claimed again.
    let now = at(1_000_000);
    assert!(store.mark_fetched(ticket, &lease_b, "/spool/1.pdf", 10, "ff", now).await.unwrap());
    let (p1, lease_c) = claim(&store, Stage::Process, "c", now).await;
    assert_eq!((p1.state, lease_c.token, p1.attempts), (JobState::Processing, 3, 1));
    assert!(store.claim_job(Stage::Process, "d", now, LEASE).await.unwrap().is_none());
    let (p2, lease_d) = claim(&store, Stage::Process, "d", now.plus(LEASE)).await;
    assert_eq!((p2.ticket, p2.state, lease_d.token, p2.attempts), (ticket, JobState::Processing, 4, 2));
    assert_eq!(p2.local_path.as_deref(), Some("/spool/1.pdf"));

    // Outbox: a lapsed `sending` row is not simply claimed again: its outcome is unknown, so it
    // becomes `unknown` first and the sender applies the kind's rule.
    assert!(enqueue(&store, &message("reply", CHAT, MessageKind::Reply, Some(ticket)), T0).await);
    let (m1, ml1) = claim_message(&store, "s1", T0).await;
    assert_eq!((m1.state, m1.attempts, ml1.token), (OutboxState::Sending, 1, 1));
    assert!(store.claim_message("s2", just_before, LEASE).await.unwrap().is_none());
    assert!(store.lapse_messages(just_before).await.unwrap().is_empty(), "the lease still holds");
    assert!(store.claim_message("s2", T0.plus(LEASE), LEASE).await.unwrap().is_none());
    let lapsed = store.lapse_messages(T0.plus(LEASE)).await.unwrap();
    assert_eq!(
        lapsed.iter().map(|m| (m.id, m.state, m.lease.is_none())).collect::<Vec<_>>(),
        [(m1.id, OutboxState::Unknown, true)]
    );
    assert!(store.lapse_messages(T0.plus(LEASE)).await.unwrap().is_empty(), "once");
    assert!(store.requeue_unknown(m1.id, T0.plus(LEASE), "sent again", T0.plus(LEASE)).await.unwrap());
    let (m2, ml2) = claim_message(&store, "s2", T0.plus(LEASE)).await;
    assert_eq!((m2.id, m2.attempts, ml2.token, ml2.owner.as_str()), (m1.id, 2, 2, "s2"));
    // The stale sender's late outcome changes nothing.
    assert!(!store.mark_message_sent(&m1, &ml1, 1, None, T0.plus(LEASE)).await.unwrap());
}

async fn a_renewed_lease_is_not_reclaimable(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, lease) = claim(&store, Stage::Download, "a", T0).await;
    let later = T0.plus(LEASE).plus(LEASE);
    assert!(store.renew_job_lease(ticket, &lease, later, at(30_000)).await.unwrap());
    let renewed = job(&store, ticket).await;
    assert_eq!(renewed.lease.as_ref().map(|l| (l.token, l.until)), Some((1, later)));
    assert_eq!(renewed.updated_at, at(30_000));
    assert!(store.claim_job(Stage::Download, "b", T0.plus(LEASE), LEASE).await.unwrap().is_none());
    let (again, lease_b) = claim(&store, Stage::Download, "b", later).await;
    assert_eq!((again.ticket, lease_b.token), (ticket, 2));
    // A released job holds no lease any more, so nothing renews it.
    assert!(store.mark_fetched(ticket, &lease_b, "/p", 1, "00", later).await.unwrap());
    assert!(!store.renew_job_lease(ticket, &lease_b, later.plus(LEASE), later).await.unwrap());

    // The same for a sender's lease on a message (long uploads).
    assert!(enqueue(&store, &message("m", CHAT, MessageKind::Result, Some(ticket)), T0).await);
    let (m, mlease) = claim_message(&store, "s1", T0).await;
    assert!(store.renew_message_lease(m.id, &mlease, later, at(30_000)).await.unwrap());
    assert_eq!(store.messages(None, None).await.unwrap()[0].lease.as_ref().map(|l| l.until), Some(later));
    assert!(store.claim_message("s2", T0.plus(LEASE), LEASE).await.unwrap().is_none());
    assert!(store.lapse_messages(T0.plus(LEASE)).await.unwrap().is_empty(), "renewed, so not lapsed");
    assert_eq!(store.lapse_messages(later).await.unwrap().len(), 1);
    assert!(store.requeue_unknown(m.id, later, "sent again", later).await.unwrap());
    let (again, mlease_b) = claim_message(&store, "s2", later).await;
    assert_eq!((again.id, mlease_b.token), (m.id, 2));
    assert!(!store.renew_message_lease(m.id, &mlease, later.plus(LEASE), later).await.unwrap(), "stale");
    assert!(store.retry_message(m.id, &mlease_b, later, "later", later).await.unwrap());
    assert!(!store.renew_message_lease(m.id, &mlease_b, later.plus(LEASE), later).await.unwrap(), "given back");
}

async fn stale_owners_cannot_write(store: Store) {
    // Download: a's lease lapses, b re-claims; a can no longer move the job.
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, stale) = claim(&store, Stage::Download, "a", T0).await;
    let (_, fresh) = claim(&store, Stage::Download, "b", T0.plus(LEASE)).await;
    let now = at(100_000);
    assert!(!store.mark_fetched(ticket, &stale, "/spool/a", 1, "aa", now).await.unwrap());
    assert!(!store.renew_job_lease(ticket, &stale, now.plus(LEASE), now).await.unwrap());
    let notice = message("job:1:failure", CHAT, MessageKind::Failure, Some(ticket));
    assert!(
        !store
            .fail_job(ticket, JobState::Accepted, Some(&stale), "no", "stale", std::slice::from_ref(&notice), now)
            .await
            .unwrap()
    );
    assert!(store.messages(None, Some(ticket)).await.unwrap().is_empty(), "a refused failure queues no notice");
    let held = job(&store, ticket).await;
    assert_eq!((held.state, held.lease.as_ref()), (JobState::Accepted, Some(&fresh)));
    assert!(store.renew_job_lease(ticket, &fresh, now.plus(LEASE), now).await.unwrap());
    assert!(store.mark_fetched(ticket, &fresh, "/spool/b", 2, "bb", now).await.unwrap());
    assert_eq!(job(&store, ticket).await.local_path.as_deref(), Some("/spool/b"));

    // Process: c's lease lapses, d re-claims; c can neither release, complete, fail nor renew.
    let (_, stale) = claim(&store, Stage::Process, "c", now).await;
    let later = now.plus(LEASE);
    let (_, fresh) = claim(&store, Stage::Process, "d", later).await;
    let retry = Release {
        from: JobState::Processing,
        event: JobEvent::RetryLater,
        not_before: later,
        detail: Some("stale".into()),
        attempts: AttemptRule::Spent,
    };
    assert!(!store.release_job(ticket, &stale, &retry, later).await.unwrap());
    let delivery = message("job:1:result", CHAT, MessageKind::Result, Some(ticket));
    assert!(!store.complete_job(ticket, &stale, &completion(1), std::slice::from_ref(&delivery), later).await.unwrap());
    assert!(
        !store
            .fail_job(ticket, JobState::Processing, Some(&stale), "no", "stale", std::slice::from_ref(&notice), later)
            .await
            .unwrap()
    );
    assert!(!store.renew_job_lease(ticket, &stale, later.plus(LEASE), later).await.unwrap());
    assert!(store.messages(None, Some(ticket)).await.unwrap().is_empty(), "nothing was queued by the stale owner");
    let held = job(&store, ticket).await;
    assert_eq!((held.state, held.lease.as_ref(), held.error_detail), (JobState::Processing, Some(&fresh), None));
    assert!(store.complete_job(ticket, &fresh, &completion(1), std::slice::from_ref(&delivery), later).await.unwrap());

    // Outbox: s1's lease lapses (the row goes through `unknown` and is sent again), s2
    // re-claims; s1 can neither mark sent, retry nor close.
    let (m, stale) = claim_message(&store, "s1", later).await;
    let now = later.plus(LEASE);
    assert_eq!(store.lapse_messages(now).await.unwrap().len(), 1);
    assert!(store.requeue_unknown(m.id, now, "sent again", now).await.unwrap());
    let (_, fresh) = claim_message(&store, "s2", now).await;
    assert!(!store.mark_message_sent(&m, &stale, 1, Some("stale-file"), now).await.unwrap());
    assert!(!store.retry_message(m.id, &stale, now, "stale", now).await.unwrap());
    assert!(!store.close_message(m.id, &stale, OutboxState::Failed, "stale", now).await.unwrap());
    assert!(!store.renew_message_lease(m.id, &stale, now.plus(LEASE), now).await.unwrap());
    assert_eq!(job(&store, ticket).await.result_file_id, None);
    assert!(store.mark_message_sent(&m, &fresh, 2, Some("fresh-file"), now).await.unwrap());
    let sent = store.messages(None, Some(ticket)).await.unwrap();
    assert_eq!((sent[0].state, sent[0].telegram_message_id), (OutboxState::Sent, Some(2)));
    assert_eq!(job(&store, ticket).await.result_file_id.as_deref(), Some("fresh-file"));
}

async fn intake_is_idempotent_per_update(store: Store) {
    let mut tx = store.begin().await.unwrap();
    assert!(tx.register_update(BOT, 100, UpdateOutcome::Recorded, None, T0).await.unwrap());
    assert!(!tx.register_update(BOT, 100, UpdateOutcome::Recorded, None, T0).await.unwrap(), "same transaction");
    tx.commit().await.unwrap();

    let mut tx = store.begin().await.unwrap();
    assert!(!tx.register_update(BOT, 100, UpdateOutcome::Rejected, Some("again"), at(1)).await.unwrap());
    assert!(tx.register_update(BOT + 1, 100, UpdateOutcome::Recorded, None, at(1)).await.unwrap(), "another bot");
    assert!(tx.register_update(BOT, 101, UpdateOutcome::Rejected, Some("malformed"), at(1)).await.unwrap());
    tx.commit().await.unwrap();

    assert_eq!(store.update_outcome(BOT, 100).await.unwrap(), Some((UpdateOutcome::Recorded, None)));
    assert_eq!(
        store.update_outcome(BOT, 101).await.unwrap(),
        Some((UpdateOutcome::Rejected, Some("malformed".to_owned())))
    );
    assert_eq!(store.update_outcome(BOT, 102).await.unwrap(), None);

    // A registration that was rolled back did not happen.
    let mut tx = store.begin().await.unwrap();
    assert!(tx.register_update(BOT, 102, UpdateOutcome::Recorded, None, at(2)).await.unwrap());
    drop(tx);
    assert_eq!(store.update_outcome(BOT, 102).await.unwrap(), None);
    let mut tx = store.begin().await.unwrap();
    assert!(tx.register_update(BOT, 102, UpdateOutcome::Recorded, None, at(3)).await.unwrap());
    tx.commit().await.unwrap();
}

async fn the_poll_offset_never_moves_back(store: Store) {
    assert_eq!(store.poll_offset(BOT).await.unwrap(), None);
    let advance = |offset: i64, now: Timestamp| {
        let store = store.clone();
        async move {
            let mut tx = store.begin().await.unwrap();
            tx.advance_offset(BOT, offset, now).await.unwrap();
            tx.commit().await.unwrap();
        }
    };
    advance(10, T0).await;
    assert_eq!(store.poll_offset(BOT).await.unwrap(), Some(10));
    advance(5, at(1)).await;
    assert_eq!(store.poll_offset(BOT).await.unwrap(), Some(10), "never back");
    advance(10, at(2)).await;
    assert_eq!(store.poll_offset(BOT).await.unwrap(), Some(10));
    advance(3_000_000_000, at(3)).await;
    assert_eq!(store.poll_offset(BOT).await.unwrap(), Some(3_000_000_000), "forward, past i32");
    assert_eq!(store.poll_offset(BOT + 1).await.unwrap(), None, "per bot");
}

async fn one_job_per_chat_and_file(store: Store) {
    let first = insert(&store, &new_job(CHAT, 1), T0).await;

    let mut tx = store.begin().await.unwrap();
    let again = NewJob { update_id: 2_000, message_id: 2_001, file_id: "file-again".into(), ..new_job(CHAT, 1) };
    let err = tx.insert_job(&again, at(1)).await.expect_err("UNIQUE(chat_id, file_unique_id) refuses a second row");
    assert!(matches!(err, StoreError::Query { .. }), "{err:?}");
    assert!(!err.is_transient(), "a constraint violation fails the same way again: {err:?}");
    drop(tx);

    let mut tx = store.begin().await.unwrap();
    let found = tx.job_by_file(CHAT, "uniq-1").await.unwrap().expect("the first job");
    assert_eq!((found.ticket, found.update_id, found.file_id.as_str()), (first, 1_001, "file-1"));
    assert_eq!(tx.job(first).await.unwrap(), Some(found));
    assert_eq!(tx.job_by_file(OTHER_CHAT, "uniq-1").await.unwrap(), None);
    assert_eq!(tx.job_by_file(CHAT, "uniq-2").await.unwrap(), None);
    // The same file in another chat is another job.
    let other = tx.insert_job(&new_job(OTHER_CHAT, 1), at(2)).await.unwrap();
    assert_ne!(other, first);
    tx.commit().await.unwrap();
    assert_eq!(store.jobs(&JobFilter { limit: 10, ..JobFilter::default() }).await.unwrap().len(), 2);
}

async fn enqueue_is_idempotent_per_key(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let first = message("job:1:ticket", CHAT, MessageKind::TicketReply, Some(ticket));
    assert!(enqueue(&store, &first, T0).await);
    let second = NewMessage { body: "another body".into(), kind: MessageKind::Reply, ..first.clone() };
    assert!(!enqueue(&store, &second, at(1)).await, "the same key twice is a no-op");

    let mut tx = store.begin().await.unwrap();
    assert!(!tx.enqueue(&first, at(2)).await.unwrap());
    assert!(tx.enqueue(&message("job:1:other", CHAT, MessageKind::Reply, None), at(2)).await.unwrap());
    tx.commit().await.unwrap();

    let queued = store.messages(None, Some(ticket)).await.unwrap();
    assert_eq!(queued.len(), 1);
    let m = &queued[0];
    assert_eq!((m.idempotency_key.as_str(), m.body.as_str()), ("job:1:ticket", "body of job:1:ticket"));
    assert_eq!(
        (m.kind, m.state, m.attempts, m.lease.as_ref()),
        (MessageKind::TicketReply, OutboxState::Pending, 0, None)
    );
    assert_eq!((m.chat, m.job, m.reply_to_message_id), (CHAT, Some(ticket), Some(500)));
    assert_eq!(store.messages(Some(CHAT), None).await.unwrap().len(), 2);
    assert!(store.messages(Some(OTHER_CHAT), None).await.unwrap().is_empty());
    assert_eq!(store.messages(None, None).await.unwrap().len(), 2);
}

async fn outbox_keeps_order_per_chat(store: Store) {
    let a = ChatRef(1);
    let b = ChatRef(2);
    assert!(enqueue(&store, &message("a1", a, MessageKind::Result, None), T0).await);
    assert!(enqueue(&store, &message("a2", a, MessageKind::Reply, None), T0).await);
    assert!(enqueue(&store, &message("b1", b, MessageKind::Result, None), T0).await);

    // a2 is a reply (priority 0) but waits behind a1 of the same chat; b1 does not wait for a.
    let (a1, a1_lease) = claim_message(&store, "s", T0).await;
    assert_eq!(a1.idempotency_key, "a1");
    let (b1, b1_lease) = claim_message(&store, "s", T0).await;
    assert_eq!(b1.idempotency_key, "b1");
    assert!(store.claim_message("s", T0, LEASE).await.unwrap().is_none(), "a2 waits while a1 is sending");

    // A retried a1 is pending again and still holds a2 back until it is sent.
    assert!(store.retry_message(a1.id, &a1_lease, at(10_000), "429", at(1)).await.unwrap());
    let retried = &store.messages(Some(a), None).await.unwrap()[0];
    assert_eq!(
        (retried.state, retried.error.as_deref(), retried.lease.as_ref()),
        (OutboxState::Pending, Some("429"), None)
    );
    assert!(store.claim_message("s", at(1), LEASE).await.unwrap().is_none(), "a1 is not due, a2 waits for it");
    let (again, again_lease) = claim_message(&store, "s", at(10_000)).await;
    assert_eq!((again.id, again.attempts), (a1.id, 2));
    assert!(store.mark_message_sent(&again, &again_lease, 11, None, at(10_001)).await.unwrap());
    let (a2, _) = claim_message(&store, "s", at(10_002)).await;
    assert_eq!(a2.idempotency_key, "a2");

    // A row that ended (here: dead chat) no longer holds later rows back.
    assert!(enqueue(&store, &message("b2", b, MessageKind::Reply, None), at(10_003)).await);
    assert!(store.claim_message("s", at(10_004), LEASE).await.unwrap().is_none(), "b2 waits for b1");
    assert!(store.close_message(b1.id, &b1_lease, OutboxState::Dead, "blocked", at(10_005)).await.unwrap());
    let closed = &store.messages(Some(b), None).await.unwrap()[0];
    assert_eq!((closed.state, closed.error.as_deref()), (OutboxState::Dead, Some("blocked")));
    let (b2, _) = claim_message(&store, "s", at(10_006)).await;
    assert_eq!(b2.idempotency_key, "b2");
    assert!(store.claim_message("s", at(10_007), LEASE).await.unwrap().is_none());
}

async fn outbox_order_holds_under_concurrency(store: Store) {
    // 5 chats with 4 messages each, interleaved; 8 senders claim and deliver concurrently.
    for n in 0..20 {
        let kind = if n % 3 == 0 { MessageKind::Reply } else { MessageKind::Result };
        assert!(enqueue(&store, &message(&format!("m{n}"), ChatRef(n % 5), kind, None), T0).await);
    }
    let mut set = JoinSet::new();
    for w in 0..8 {
        let store = store.clone();
        set.spawn(async move {
            let mut sent = 0;
            while let Some(m) = store.claim_message(&format!("sender-{w}"), T0, LEASE).await.unwrap() {
                // While a sender holds a row, the earlier rows of its chat are delivered and the
                // later ones still wait.
                for other in store.messages(Some(m.chat), None).await.unwrap() {
                    let expected = match other.id.cmp(&m.id) {
                        std::cmp::Ordering::Less => OutboxState::Sent,
                        std::cmp::Ordering::Equal => OutboxState::Sending,
                        std::cmp::Ordering::Greater => OutboxState::Pending,
                    };
                    assert_eq!(other.state, expected, "row {} while {} is held", other.id, m.id);
                }
                let lease = m.lease.clone().unwrap();
                assert!(store.mark_message_sent(&m, &lease, m.id, None, T0).await.unwrap());
                sent += 1;
            }
            sent
        });
    }
    let mut total = 0;
    while let Some(sent) = set.join_next().await {
        total += sent.unwrap();
    }
    // A sender may stop early when every claimable row is held by others; finish the rest.
    while let Some(m) = store.claim_message("last", T0, LEASE).await.unwrap() {
        assert!(store.mark_message_sent(&m, m.lease.as_ref().unwrap(), m.id, None, T0).await.unwrap());
        total += 1;
    }
    assert_eq!(total, 20);
    assert!(store.messages(None, None).await.unwrap().iter().all(|m| m.state == OutboxState::Sent && m.attempts == 1));
}

async fn replies_go_before_results_across_chats(store: Store) {
    assert!(enqueue(&store, &message("result-1", ChatRef(1), MessageKind::Result, None), T0).await);
    assert!(enqueue(&store, &message("failure-2", ChatRef(2), MessageKind::Failure, None), T0).await);
    assert!(enqueue(&store, &message("reply-3", ChatRef(3), MessageKind::Reply, None), T0).await);
    assert!(enqueue(&store, &message("ticket-4", ChatRef(4), MessageKind::TicketReply, None), T0).await);
    let mut order = Vec::new();
    while let Some(m) = store.claim_message("s", at(1), LEASE).await.unwrap() {
        order.push(m.idempotency_key);
    }
    assert_eq!(order, ["reply-3", "ticket-4", "result-1", "failure-2"]);
}

async fn fail_job_writes_failure_and_notice_atomically(store: Store) {
    // The holder fails a job: state, reason and notice together.
    let t1 = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, lease) = claim(&store, Stage::Download, "d", T0).await;
    let notice = message("job:1:failure", CHAT, MessageKind::Failure, Some(t1));
    assert!(
        store
            .fail_job(t1, JobState::Accepted, Some(&lease), "not a PDF", "png", std::slice::from_ref(&notice), at(1))
            .await
            .unwrap()
    );
    let failed = job(&store, t1).await;
    assert_eq!(
        (failed.state, failed.error.as_deref(), failed.error_detail.as_deref()),
        (JobState::Failed, Some("not a PDF"), Some("png"))
    );
    assert_eq!((failed.lease, failed.updated_at), (None, at(1)));
    let queued = store.messages(None, Some(t1)).await.unwrap();
    assert_eq!(queued.len(), 1);
    assert_eq!((queued[0].kind, queued[0].body.as_str()), (MessageKind::Failure, "body of job:1:failure"));

    // The conditional update matches nothing: no notice.
    let other = message("job:1:failure-again", CHAT, MessageKind::Failure, Some(t1));
    assert!(
        !store
            .fail_job(t1, JobState::Accepted, None, "again", "again", std::slice::from_ref(&other), at(2))
            .await
            .unwrap()
    );
    let t2 = insert(&store, &new_job(CHAT, 2), T0).await;
    let notice2 = message("job:2:failure", CHAT, MessageKind::Failure, Some(t2));
    assert!(
        !store
            .fail_job(t2, JobState::Fetched, None, "wrong state", "", std::slice::from_ref(&notice2), at(2))
            .await
            .unwrap()
    );
    assert_eq!(store.messages(Some(CHAT), None).await.unwrap().len(), 1, "no notice for failures that did not happen");
    assert_eq!(job(&store, t2).await.state, JobState::Accepted);

    // Without a lease (intake, admin), an unclaimed job fails too.
    assert!(
        store
            .fail_job(t2, JobState::Accepted, None, "too big", "", std::slice::from_ref(&notice2), at(3))
            .await
            .unwrap()
    );
    assert_eq!(job(&store, t2).await.state, JobState::Failed);
    assert_eq!(store.messages(None, Some(t2)).await.unwrap().len(), 1);

    // The notice cannot be queued (it names a job that does not exist): the failure is undone.
    let t3 = insert(&store, &new_job(CHAT, 3), T0).await;
    let broken = message("job:3:failure", CHAT, MessageKind::Failure, Some(Ticket(i64::MAX)));
    store
        .fail_job(t3, JobState::Accepted, None, "x", "y", std::slice::from_ref(&broken), at(4))
        .await
        .expect_err("the notice violates a foreign key");
    let kept = job(&store, t3).await;
    assert_eq!((kept.state, kept.error), (JobState::Accepted, None));
    assert_eq!(store.messages(Some(CHAT), None).await.unwrap().len(), 2);
}

async fn complete_job_records_the_result_and_queues_delivery(store: Store) {
    let (ticket, lease) = processing_job(&store, 1, T0).await;
    let delivery = message("job:1:result", CHAT, MessageKind::Result, Some(ticket));
    assert!(store.complete_job(ticket, &lease, &completion(1), std::slice::from_ref(&delivery), at(5)).await.unwrap());
    let ready = job(&store, ticket).await;
    assert_eq!(ready.state, JobState::Ready);
    assert_eq!((ready.result_path.as_deref(), ready.result_size), (Some("/spool/results/1.pdf"), Some(777)));
    assert_eq!((ready.detected_format.as_deref(), ready.result_expires_at), (Some("pdf-1.7"), Some(at(86_400_000))));
    assert_eq!((ready.local_path, ready.lease, ready.updated_at), (None, None, at(5)));
    assert_eq!((ready.real_size, ready.sha256.as_deref()), (Some(2_048), Some("ab12")));
    let queued = store.messages(None, Some(ticket)).await.unwrap();
    assert_eq!(queued.len(), 1);
    assert_eq!((queued[0].kind, queued[0].state, queued[0].chat), (MessageKind::Result, OutboxState::Pending, CHAT));

    // Completing twice does nothing the second time.
    assert!(!store.complete_job(ticket, &lease, &completion(1), std::slice::from_ref(&delivery), at(6)).await.unwrap());
    assert_eq!(store.messages(None, Some(ticket)).await.unwrap().len(), 1);

    // The delivery cannot be queued: the job stays in processing with its lease.
    let (t2, lease2) = processing_job(&store, 2, at(10)).await;
    let broken = message("job:2:result", CHAT, MessageKind::Result, Some(Ticket(i64::MAX)));
    store
        .complete_job(t2, &lease2, &completion(2), std::slice::from_ref(&broken), at(11))
        .await
        .expect_err("the delivery violates a foreign key");
    let kept = job(&store, t2).await;
    assert_eq!((kept.state, kept.result_path, kept.lease), (JobState::Processing, None, Some(lease2)));
}

async fn a_sent_result_keeps_its_file_id(store: Store) {
    let (ticket, lease) = processing_job(&store, 1, T0).await;
    let delivery = message("job:1:result", CHAT, MessageKind::Result, Some(ticket));
    assert!(store.complete_job(ticket, &lease, &completion(1), std::slice::from_ref(&delivery), at(1)).await.unwrap());
    let (m, mlease) = claim_message(&store, "s", at(2)).await;
    assert_eq!((m.kind, m.job), (MessageKind::Result, Some(ticket)));
    assert!(store.mark_message_sent(&m, &mlease, 9_001, Some("BQACAgIAAxkBAAI"), at(3)).await.unwrap());
    assert_eq!(job(&store, ticket).await.result_file_id.as_deref(), Some("BQACAgIAAxkBAAI"));
    let sent = &store.messages(None, Some(ticket)).await.unwrap()[0];
    assert_eq!(
        (sent.state, sent.telegram_message_id, sent.lease.as_ref(), sent.error.as_deref()),
        (OutboxState::Sent, Some(9_001), None, None)
    );
    assert!(!store.mark_message_sent(&m, &mlease, 9_002, Some("other"), at(4)).await.unwrap(), "only once");
    assert_eq!(job(&store, ticket).await.result_file_id.as_deref(), Some("BQACAgIAAxkBAAI"));

    // A text message about the job leaves the file_id alone; forgetting clears it.
    assert!(enqueue(&store, &message("job:1:status", CHAT, MessageKind::Reply, Some(ticket)), at(5)).await);
    let (text, tlease) = claim_message(&store, "s", at(6)).await;
    assert!(store.mark_message_sent(&text, &tlease, 9_003, None, at(7)).await.unwrap());
    assert_eq!(job(&store, ticket).await.result_file_id.as_deref(), Some("BQACAgIAAxkBAAI"));
    store.forget_result_file_id(ticket, at(8)).await.unwrap();
    let forgotten = job(&store, ticket).await;
    assert_eq!((forgotten.result_file_id, forgotten.updated_at, forgotten.state), (None, at(8), JobState::Ready));
}

async fn illegal_transitions_are_rejected_before_sql(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, lease) = claim(&store, Stage::Download, "d", T0).await;
    let before = job(&store, ticket).await;
    let skip = Release {
        from: JobState::Accepted,
        event: JobEvent::Completed,
        not_before: at(1),
        detail: Some("skip".into()),
        attempts: AttemptRule::Restarted,
    };
    let notice = message("job:1:failure", CHAT, MessageKind::Failure, Some(ticket));
    let is_refused = |r: Result<bool, StoreError>, from: JobState, event: JobEvent| match r {
        Err(StoreError::Transition(e)) => assert_eq!(e, TransitionError { from, event }),
        other => panic!("{from} + {event:?} must be refused, got {other:?}"),
    };

    is_refused(store.release_job(ticket, &lease, &skip, at(1)).await, JobState::Accepted, JobEvent::Completed);
    is_refused(
        store.fail_job(ticket, JobState::Ready, Some(&lease), "x", "y", std::slice::from_ref(&notice), at(1)).await,
        JobState::Ready,
        JobEvent::Failed,
    );
    let mut tx = store.begin().await.unwrap();
    is_refused(
        tx.resubmit_job(ticket, JobState::Accepted, &new_job(CHAT, 1), at(1)).await,
        JobState::Accepted,
        JobEvent::Resubmitted,
    );
    is_refused(
        tx.resubmit_job(ticket, JobState::Ready, &new_job(CHAT, 1), at(1)).await,
        JobState::Ready,
        JobEvent::Resubmitted,
    );
    tx.commit().await.unwrap();
    assert_eq!(job(&store, ticket).await, before, "nothing changed");
    assert!(store.messages(None, None).await.unwrap().is_empty());

    // With the pool closed, any SQL would fail with a query error: the refusal comes first.
    store.close().await;
    is_refused(store.release_job(ticket, &lease, &skip, at(2)).await, JobState::Accepted, JobEvent::Completed);
    is_refused(
        store.fail_job(ticket, JobState::Expired, None, "x", "y", std::slice::from_ref(&notice), at(2)).await,
        JobState::Expired,
        JobEvent::Failed,
    );
    assert!(matches!(store.job(ticket).await, Err(StoreError::Query { .. })), "the pool is closed");
}

async fn resubmitting_an_ended_job_keeps_the_ticket(store: Store) {
    // A job that went all the way and whose result expired.
    let (ticket, lease) = processing_job(&store, 1, T0).await;
    let delivery = message("job:1:result", CHAT, MessageKind::Result, Some(ticket));
    assert!(store.complete_job(ticket, &lease, &completion(1), std::slice::from_ref(&delivery), at(1)).await.unwrap());
    let (m, mlease) = claim_message(&store, "s", at(2)).await;
    assert!(store.mark_message_sent(&m, &mlease, 1, Some("result-file"), at(3)).await.unwrap());
    let done = job(&store, ticket).await;
    let old_token = lease.token;
    // No store method expires jobs yet (retention is not written), so set the state directly.
    assert_eq!(
        raw(&store, "UPDATE jobs SET status = 'expired', result_path = NULL WHERE id = $1", ticket.0).await.unwrap(),
        1
    );

    let again = NewJob {
        update_id: 5_000,
        message_id: 6_000,
        file_id: "file-new".into(),
        declared_name: Some("renamed.pdf".into()),
        ..new_job(CHAT, 1)
    };
    let mut tx = store.begin().await.unwrap();
    assert!(!tx.resubmit_job(ticket, JobState::Failed, &again, at(10)).await.unwrap(), "it is expired, not failed");
    assert!(tx.resubmit_job(ticket, JobState::Expired, &again, at(10)).await.unwrap());
    tx.commit().await.unwrap();

    let fresh = job(&store, ticket).await;
    assert_eq!((fresh.ticket, fresh.state, fresh.chat), (ticket, JobState::Accepted, CHAT));
    assert_eq!((fresh.update_id, fresh.message_id, fresh.file_id.as_str()), (5_000, 6_000, "file-new"));
    assert_eq!((fresh.file_unique_id.as_str(), fresh.declared_name.as_deref()), ("uniq-1", Some("renamed.pdf")));
    assert_eq!((fresh.local_path, fresh.real_size, fresh.sha256, fresh.detected_format), (None, None, None, None));
    assert_eq!(
        (fresh.result_path, fresh.result_size, fresh.result_file_id, fresh.result_expires_at),
        (None, None, None, None)
    );
    assert_eq!((fresh.error, fresh.error_detail, fresh.lease), (None, None, None));
    // Due from its resubmission: it queues behind what arrived before it.
    assert_eq!((fresh.attempts, fresh.not_before, fresh.source_losses), (0, at(10), 0));
    assert_eq!((fresh.created_at, fresh.updated_at), (done.created_at, at(10)));

    // Claimable again, with a token above every earlier one.
    let (claimed, new_lease) = claim(&store, Stage::Download, "d", at(11)).await;
    assert_eq!((claimed.ticket, claimed.attempts), (ticket, 1));
    assert!(new_lease.token > old_token);

    // A failed job comes back the same way.
    let t2 = insert(&store, &new_job(CHAT, 2), at(20)).await;
    let notice = message("job:2:failure", CHAT, MessageKind::Failure, Some(t2));
    assert!(
        store
            .fail_job(t2, JobState::Accepted, None, "gone", "404", std::slice::from_ref(&notice), at(21))
            .await
            .unwrap()
    );
    let mut tx = store.begin().await.unwrap();
    assert!(tx.resubmit_job(t2, JobState::Failed, &new_job(CHAT, 2), at(22)).await.unwrap());
    tx.commit().await.unwrap();
    let back = job(&store, t2).await;
    assert_eq!((back.state, back.error, back.error_detail), (JobState::Accepted, None, None));
}

async fn job_listing_filters_newest_first(store: Store) {
    let a1 = insert(&store, &new_job(CHAT, 1), T0).await;
    let a2 = insert(&store, &new_job(CHAT, 2), at(1)).await;
    let a3 = insert(&store, &new_job(CHAT, 3), at(2)).await;
    let b1 = insert(&store, &new_job(OTHER_CHAT, 4), at(3)).await;
    let b2 = insert(&store, &new_job(OTHER_CHAT, 5), at(4)).await;
    let notice = message("job:2:failure", CHAT, MessageKind::Failure, Some(a2));
    assert!(
        store.fail_job(a2, JobState::Accepted, None, "no", "", std::slice::from_ref(&notice), at(5)).await.unwrap()
    );

    let list = |chat: Option<ChatRef>, state: Option<JobState>, limit: i64| {
        let store = store.clone();
        async move { tickets(&store.jobs(&JobFilter { chat, state, limit }).await.unwrap()) }
    };
    assert_eq!(list(Some(CHAT), None, 10).await, [a3, a2, a1]);
    assert_eq!(list(Some(CHAT), None, 2).await, [a3, a2]);
    assert_eq!(list(Some(CHAT), Some(JobState::Failed), 10).await, [a2]);
    assert_eq!(list(Some(CHAT), Some(JobState::Accepted), 10).await, [a3, a1]);
    assert_eq!(list(None, Some(JobState::Accepted), 10).await, [b2, b1, a3, a1]);
    assert_eq!(list(None, None, 100).await, [b2, b1, a3, a2, a1]);
    assert_eq!(list(None, None, 1).await, [b2]);
    assert_eq!(list(Some(OTHER_CHAT), Some(JobState::Failed), 10).await, []);
    assert_eq!(list(Some(ChatRef(999)), None, 10).await, []);

    let mut tx = store.begin().await.unwrap();
    assert_eq!(tickets(&tx.chat_jobs(OTHER_CHAT, 1).await.unwrap()), [b2]);
    assert_eq!(tickets(&tx.chat_jobs(CHAT, 10).await.unwrap()), [a3, a2, a1]);
    // The queue ahead of a ticket: unfinished jobs before it (a2 failed), counted to cap + 1.
    assert_eq!(tx.jobs_ahead(a3, 10).await.unwrap(), 1);
    assert_eq!(tx.jobs_ahead(b2, 10).await.unwrap(), 3);
    assert_eq!(tx.jobs_ahead(b2, 1).await.unwrap(), 2, "stops counting past the cap");
    tx.commit().await.unwrap();
}

async fn claims_respect_not_before(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, lease) = claim(&store, Stage::Download, "d", T0).await;
    assert!(store.mark_fetched(ticket, &lease, "/spool/1.pdf", 10, "ff", T0).await.unwrap());
    let (_, lease) = claim(&store, Stage::Process, "p", T0).await;

    // A retry keeps the source and waits until not_before.
    let retry = Release {
        from: JobState::Processing,
        event: JobEvent::RetryLater,
        not_before: at(30_000),
        detail: Some("timeout".into()),
        attempts: AttemptRule::Spent,
    };
    assert!(store.release_job(ticket, &lease, &retry, at(1)).await.unwrap());
    let waiting = job(&store, ticket).await;
    assert_eq!((waiting.state, waiting.not_before, waiting.attempts), (JobState::Fetched, at(30_000), 1));
    assert_eq!(
        (waiting.local_path.as_deref(), waiting.error_detail.as_deref(), waiting.lease),
        (Some("/spool/1.pdf"), Some("timeout"), None)
    );
    assert!(store.claim_job(Stage::Process, "p", at(29_999), LEASE).await.unwrap().is_none());
    let (again, lease) = claim(&store, Stage::Process, "p", at(30_000)).await;
    assert_eq!((again.ticket, again.attempts), (ticket, 2));

    // A lost source goes back to download: path dropped, attempts restarted, detail kept.
    let lost = Release {
        from: JobState::Processing,
        event: JobEvent::SourceLost,
        not_before: at(60_000),
        detail: None,
        attempts: AttemptRule::Restarted,
    };
    assert!(store.release_job(ticket, &lease, &lost, at(30_001)).await.unwrap());
    let back = job(&store, ticket).await;
    assert_eq!((back.state, back.local_path, back.attempts), (JobState::Accepted, None, 0));
    assert_eq!(back.error_detail.as_deref(), Some("timeout"), "no new detail keeps the old one");
    assert!(store.claim_job(Stage::Download, "d", at(59_999), LEASE).await.unwrap().is_none());
    assert!(store.claim_job(Stage::Process, "p", at(60_000), LEASE).await.unwrap().is_none(), "not a process job");
    let (claimed, _) = claim(&store, Stage::Download, "d", at(60_000)).await;
    assert_eq!((claimed.ticket, claimed.attempts), (ticket, 1));

    // A job not yet due is passed over for a later one that is; a retried message waits too.
    let late = insert(&store, &new_job(CHAT, 2), at(60_001)).await;
    let early = insert(&store, &new_job(CHAT, 3), at(60_002)).await;
    assert!(raw(&store, "UPDATE jobs SET not_before = 1900000000000 WHERE id = $1", late.0).await.is_ok());
    let (first, _) = claim(&store, Stage::Download, "d", at(60_003)).await;
    assert_eq!(first.ticket, early);
    assert!(store.claim_job(Stage::Download, "d", at(60_003), LEASE).await.unwrap().is_none());
    assert!(enqueue(&store, &message("m", CHAT, MessageKind::Reply, None), T0).await);
    let (m, mlease) = claim_message(&store, "s", T0).await;
    assert!(store.retry_message(m.id, &mlease, at(5_000), "flood", T0).await.unwrap());
    assert!(store.claim_message("s", at(4_999), LEASE).await.unwrap().is_none());
    assert_eq!(claim_message(&store, "s", at(5_000)).await.0.id, m.id);
}

async fn large_telegram_ids_round_trip(store: Store) {
    let big = NewJob {
        update_id: 9_000_000_000,
        chat: ChatRef(-1_009_876_543_210),
        user_id: Some(7_000_000_000),
        message_id: 3_000_000_000,
        declared_size: Some(5 * 1024 * 1024 * 1024),
        ..new_job(CHAT, 1)
    };
    let ticket = insert(&store, &big, T0).await;
    let stored = job(&store, ticket).await;
    assert_eq!((stored.update_id, stored.chat, stored.user_id), (big.update_id, big.chat, big.user_id));
    assert_eq!((stored.message_id, stored.declared_size), (big.message_id, big.declared_size));
    assert_eq!((stored.created_at, stored.not_before), (T0, T0), "due from its arrival");
    let mut tx = store.begin().await.unwrap();
    assert!(tx.register_update(-9_000_000_000, 9_000_000_000, UpdateOutcome::Recorded, None, T0).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(
        store.update_outcome(-9_000_000_000, 9_000_000_000).await.unwrap(),
        Some((UpdateOutcome::Recorded, None))
    );
    let m = NewMessage {
        reply_to_message_id: Some(3_000_000_000),
        ..message("k", big.chat, MessageKind::Reply, Some(ticket))
    };
    assert!(enqueue(&store, &m, T0).await);
    let (claimed, lease) = claim_message(&store, "s", T0).await;
    assert_eq!((claimed.chat, claimed.reply_to_message_id), (big.chat, Some(3_000_000_000)));
    assert!(store.mark_message_sent(&claimed, &lease, 4_000_000_000, None, T0).await.unwrap());
    assert_eq!(store.messages(Some(big.chat), None).await.unwrap()[0].telegram_message_id, Some(4_000_000_000));
}

async fn the_schema_rejects_unknown_names(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    assert!(enqueue(&store, &message("k", CHAT, MessageKind::Reply, Some(ticket)), T0).await);
    let mut tx = store.begin().await.unwrap();
    assert!(tx.register_update(BOT, 1, UpdateOutcome::Recorded, None, T0).await.unwrap());
    tx.commit().await.unwrap();
    let id = store.messages(None, None).await.unwrap()[0].id;

    for (sql, row) in [
        ("UPDATE jobs SET status = 'done' WHERE id = $1", ticket.0),
        ("UPDATE jobs SET operation = 'shrink' WHERE id = $1", ticket.0),
        ("UPDATE outbox SET status = 'lost' WHERE id = $1", id),
        ("UPDATE outbox SET kind = 'photo' WHERE id = $1", id),
        ("UPDATE updates SET outcome = 'maybe' WHERE update_id = $1", 1),
        ("UPDATE outbox SET job_id = 999999 WHERE id = $1", id),
    ] {
        assert!(raw(&store, sql, row).await.is_err(), "the schema must refuse: {sql}");
    }
    // The same statements with known names pass, so the refusals above were the constraints.
    for (sql, row) in [
        ("UPDATE jobs SET status = 'expired' WHERE id = $1", ticket.0),
        ("UPDATE outbox SET status = 'unknown', kind = 'failure' WHERE id = $1", id),
        ("UPDATE updates SET outcome = 'rejected' WHERE update_id = $1", 1),
    ] {
        assert_eq!(raw(&store, sql, row).await.unwrap(), 1, "{sql}");
    }
}

/// The named indexes of the schema, with the predicate of partial ones (normalised).
async fn indexes(store: &Store) -> BTreeSet<(String, Option<String>)> {
    let mut tx = store.begin().await.unwrap();
    let rows: Vec<(String, Option<String>)> = match &mut tx {
        Tx::Sqlite(t) => {
            let rows: Vec<(String, String)> = sqlx::query_as(
                "SELECT name, sql FROM sqlite_master
                 WHERE type = 'index' AND sql IS NOT NULL AND tbl_name <> '_sqlx_migrations'",
            )
            .fetch_all(&mut **t)
            .await
            .unwrap();
            rows.into_iter().map(|(name, sql)| (name, sql.split_once(" WHERE ").map(|(_, p)| p.to_owned()))).collect()
        }
        #[cfg(feature = "postgres")]
        Tx::Postgres(t) => sqlx::query_as(
            "SELECT c.relname::TEXT, pg_get_expr(i.indpred, i.indrelid)
             FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class r ON r.oid = i.indrelid
             JOIN pg_namespace n ON n.oid = r.relnamespace
             WHERE n.nspname = current_schema() AND r.relname <> '_sqlx_migrations'
               AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)",
        )
        .fetch_all(&mut **t)
        .await
        .unwrap(),
    };
    drop(tx);
    // PostgreSQL prints `x IN ('a', 'b')` back as `x = ANY (ARRAY['a'::text, 'b'::text])`.
    let normalise = |p: String| {
        p.replace("::text", "").replace(" = ANY (ARRAY[", " IN (").replace(['(', ')', ']'], "").trim().to_owned()
    };
    rows.into_iter().map(|(name, pred)| (name, pred.map(normalise))).collect()
}

async fn the_schema_has_the_expected_indexes(store: Store) {
    let expected: BTreeSet<(String, Option<String>)> = [
        ("jobs_chat", None),
        ("jobs_claim", None),
        ("jobs_expiry", Some("status = 'ready'")),
        ("jobs_held", Some("lease_owner IS NOT NULL OR status IN 'fetched', 'processing'")),
        ("outbox_chat", None),
        ("outbox_job", None),
        ("outbox_open", None),
        ("outbox_open_chat", Some("status IN 'pending', 'sending'")),
        ("updates_received_at", None),
    ]
    .into_iter()
    .map(|(n, p)| (n.to_owned(), p.map(str::to_owned)))
    .collect();
    assert_eq!(indexes(&store).await, expected);
    store.migrate().await.expect("migrating again is a no-op");
    assert_eq!(indexes(&store).await, expected);
}

/// The PostgreSQL schema against the SQLite one, column by column and index by index.
#[cfg(feature = "postgres-tests")]
mod schema {
    use std::collections::BTreeMap;

    use super::{Store, Tx};

    /// (table, column) → (integer or text, NOT NULL, default).
    type Columns = BTreeMap<(String, String), (String, bool, Option<String>)>;
    /// (table, ordered columns, unique, predicate present).
    type Indexes = Vec<(String, String, bool, bool)>;

    const TABLES: [&str; 4] = ["updates", "poll_offsets", "jobs", "outbox"];

    fn kind(declared: &str) -> String {
        match declared {
            // SQLite's INTEGER holds 64 bits; of PostgreSQL's types only BIGINT matches it.
            "INTEGER" | "bigint" => "int64".into(),
            "TEXT" | "text" => "text".into(),
            other => format!("unexpected type {other}"),
        }
    }

    async fn describe(store: &Store) -> (Columns, Indexes) {
        let mut columns = Columns::new();
        let mut indexes = Indexes::new();
        let mut tx = store.begin().await.unwrap();
        for table in TABLES {
            match &mut tx {
                Tx::Sqlite(t) => {
                    let rows: Vec<(String, String, i64, Option<String>, i64)> =
                        sqlx::query_as("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info($1)")
                            .bind(table)
                            .fetch_all(&mut **t)
                            .await
                            .unwrap();
                    for (name, ty, notnull, default, pk) in rows {
                        columns.insert((table.into(), name), (kind(&ty), notnull == 1 || pk > 0, default));
                    }
                    let list: Vec<(String, i64, String, i64)> =
                        sqlx::query_as("SELECT name, \"unique\", origin, partial FROM pragma_index_list($1)")
                            .bind(table)
                            .fetch_all(&mut **t)
                            .await
                            .unwrap();
                    for (name, unique, _, partial) in list {
                        let cols: Vec<String> =
                            sqlx::query_scalar("SELECT name FROM pragma_index_info($1) ORDER BY seqno")
                                .bind(&name)
                                .fetch_all(&mut **t)
                                .await
                                .unwrap();
                        indexes.push((table.into(), cols.join(","), unique == 1, partial == 1));
                    }
                    // INTEGER PRIMARY KEY is the rowid and has no index row; PostgreSQL's has one.
                    let rowid_pk: Option<String> = sqlx::query_scalar(
                        "SELECT name FROM pragma_table_info($1) WHERE pk = 1 AND type = 'INTEGER'
                           AND (SELECT COUNT(*) FROM pragma_table_info($1) WHERE pk > 0) = 1",
                    )
                    .bind(table)
                    .fetch_optional(&mut **t)
                    .await
                    .unwrap();
                    if let Some(pk) = rowid_pk {
                        indexes.push((table.into(), pk, true, false));
                    }
                }
                Tx::Postgres(t) => {
                    let rows: Vec<(String, String, bool, Option<String>, bool)> = sqlx::query_as(
                        "SELECT column_name::TEXT, data_type::TEXT, is_nullable = 'NO', column_default::TEXT,
                                is_identity = 'YES'
                         FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1",
                    )
                    .bind(table)
                    .fetch_all(&mut **t)
                    .await
                    .unwrap();
                    for (name, ty, notnull, default, _identity) in rows {
                        columns.insert((table.into(), name), (kind(&ty), notnull, default));
                    }
                    let list: Vec<(Vec<String>, bool, bool)> = sqlx::query_as(
                        "SELECT ARRAY(SELECT a.attname::TEXT FROM unnest(i.indkey) WITH ORDINALITY AS k(num, ord)
                                      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.num
                                      ORDER BY k.ord),
                                i.indisunique, i.indpred IS NOT NULL
                         FROM pg_index i JOIN pg_class r ON r.oid = i.indrelid
                         JOIN pg_namespace n ON n.oid = r.relnamespace
                         WHERE n.nspname = current_schema() AND r.relname = $1",
                    )
                    .bind(table)
                    .fetch_all(&mut **t)
                    .await
                    .unwrap();
                    for (cols, unique, partial) in list {
                        indexes.push((table.into(), cols.join(","), unique, partial));
                    }
                }
            }
        }
        drop(tx);
        indexes.sort();
        (columns, indexes)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_matches_sqlite() {
        super::on_sqlite(|sqlite| async move {
            super::pg::on_postgres(|postgres| async move {
                let (sqlite_columns, sqlite_indexes) = describe(&sqlite).await;
                let (pg_columns, pg_indexes) = describe(&postgres).await;
                assert!(!sqlite_columns.is_empty() && !sqlite_indexes.is_empty());
                let bad_types: Vec<_> = sqlite_columns
                    .iter()
                    .chain(&pg_columns)
                    .filter(|(_, c)| c.0.starts_with("unexpected"))
                    .map(|((table, column), c)| format!("{table}.{column}: {}", c.0))
                    .collect();
                assert!(bad_types.is_empty(), "{bad_types:?}");
                assert_eq!(pg_columns, sqlite_columns, "columns: type, NOT NULL and default");
                assert_eq!(pg_indexes, sqlite_indexes, "indexes: columns, uniqueness, partial");
            })
            .await;
        })
        .await;
    }
}

async fn due_results_expire_in_one_statement(store: Store) {
    let mut due = Vec::new();
    for n in 1..=3 {
        let (ticket, lease) = processing_job(&store, n, T0).await;
        let delivery = message(&format!("job:{n}:result"), CHAT, MessageKind::Result, Some(ticket));
        let done = Completion { expires_at: at(1_000 * n), ..completion(n) };
        assert!(store.complete_job(ticket, &lease, &done, std::slice::from_ref(&delivery), at(1)).await.unwrap());
        due.push(ticket);
    }
    let all = tickets(&store.ready_results(None).await.unwrap());
    assert_eq!(all, due, "all results, oldest expiry first");
    assert_eq!(tickets(&store.ready_results(Some(at(2_000))).await.unwrap()), &due[..2]);

    assert_eq!(store.expire_due(at(1_999)).await.unwrap(), &due[..1]);
    assert_eq!(store.expire_due(at(2_000)).await.unwrap(), &due[1..2], "only what is due and still ready");
    assert_eq!(store.expire_due(at(2_000)).await.unwrap(), []);
    let gone = job(&store, due[0]).await;
    assert_eq!(
        (gone.state, gone.result_path, gone.result_file_id, gone.result_expires_at, gone.updated_at),
        (JobState::Expired, None, None, Some(at(1_000)), at(1_999))
    );
    let kept = job(&store, due[2]).await;
    assert_eq!((kept.state, kept.result_path.as_deref()), (JobState::Ready, Some("/spool/results/3.pdf")));
    assert_eq!(tickets(&store.ready_results(None).await.unwrap()), &due[2..]);
}

async fn file_owners_are_the_live_jobs(store: Store) {
    let (processing, lease) = processing_job(&store, 2, T0).await;
    let (ready, ready_lease) = processing_job(&store, 3, T0).await;
    let queued = insert(&store, &new_job(CHAT, 1), T0).await;
    let delivery = message("job:3:result", CHAT, MessageKind::Result, Some(ready));
    assert!(
        store.complete_job(ready, &ready_lease, &completion(3), std::slice::from_ref(&delivery), at(1)).await.unwrap()
    );
    let failed = insert(&store, &new_job(CHAT, 4), T0).await;
    let notice = message("job:4:failure", CHAT, MessageKind::Failure, Some(failed));
    assert!(
        store.fail_job(failed, JobState::Accepted, None, "no", "", std::slice::from_ref(&notice), at(1)).await.unwrap()
    );

    let mut owners = store.file_owners().await.unwrap();
    owners.sort_by_key(|o| o.ticket);
    let seen: Vec<_> = owners
        .iter()
        .map(|o| {
            (o.ticket, o.state, o.lease.as_ref().map(|l| l.token), o.local_path.as_deref(), o.result_path.as_deref())
        })
        .collect();
    assert_eq!(
        seen,
        [
            (processing, JobState::Processing, Some(lease.token), Some("/spool/2.pdf"), None),
            (ready, JobState::Ready, None, None, Some("/spool/results/3.pdf")),
            (queued, JobState::Accepted, None, None, None),
        ]
    );
}

async fn a_lapsed_processing_job_is_resumed_before_fetched_ones(store: Store) {
    let (stuck, lease) = processing_job(&store, 1, T0).await;
    // A newer job waits in `fetched`, and is due earlier than the stuck one's lease ends.
    let waiting = insert(&store, &new_job(CHAT, 2), at(1)).await;
    let (_, dl) = claim(&store, Stage::Download, "downloader", at(1)).await;
    assert!(store.mark_fetched(waiting, &dl, "/spool/2.pdf", 10, "ff", at(1)).await.unwrap());

    let lapsed = T0.plus(LEASE);
    let (first, resumed) = claim(&store, Stage::Process, "p2", lapsed).await;
    assert_eq!((first.ticket, first.state, first.attempts), (stuck, JobState::Processing, 2));
    assert_eq!(resumed.token, lease.token + 1);
    let (second, _) = claim(&store, Stage::Process, "p3", lapsed).await;
    assert_eq!((second.ticket, second.state), (waiting, JobState::Processing));
    assert!(store.claim_job(Stage::Process, "p4", lapsed, LEASE).await.unwrap().is_none());
}

async fn downloads_respect_size_and_per_chat_limits(store: Store) {
    let limits = ClaimLimits { unknown_size: 5_000, max_size: 4_096, per_chat: 2 };
    let claim_dl = |owner: &'static str, now: Timestamp| {
        let store = store.clone();
        async move { store.claim_download(owner, now, LEASE, &limits).await.unwrap().map(|j| j.ticket) }
    };
    // CHAT: a job too big for the budget right now, then three that fit; OTHER_CHAT: one.
    let big = insert(&store, &new_job(CHAT, 9), T0).await; // 10 KiB declared
    let a1 = insert(&store, &new_job(CHAT, 1), at(1)).await;
    let a2 = insert(&store, &new_job(CHAT, 2), at(2)).await;
    let a3 = insert(&store, &new_job(CHAT, 3), at(3)).await;
    let unknown = NewJob { declared_size: None, ..new_job(OTHER_CHAT, 4) };
    let unsized_job = insert(&store, &unknown, at(4)).await;
    let b1 = insert(&store, &new_job(OTHER_CHAT, 0), at(5)).await;

    assert_eq!(claim_dl("w1", at(10)).await, Some(a1), "the big one waits, without an attempt");
    assert_eq!(claim_dl("w2", at(10)).await, Some(a2));
    assert_eq!(claim_dl("w3", at(10)).await, Some(b1), "CHAT is at its bound; a job without a size is assumed too big");
    assert_eq!(claim_dl("w4", at(10)).await, None);
    assert_eq!(job(&store, big).await.attempts, 0);

    // One of CHAT's jobs moves on to `fetched`: it still holds its source, so the bound holds.
    let lease = job(&store, a1).await.lease.unwrap();
    assert!(store.mark_fetched(a1, &lease, "/spool/1.pdf", 10, "ff", at(11)).await.unwrap());
    assert_eq!(claim_dl("w5", at(12)).await, None);
    // Its processing ends: CHAT has room again.
    let (_, plase) = claim(&store, Stage::Process, "p", at(13)).await;
    let delivery = message("job:1:result", CHAT, MessageKind::Result, Some(a1));
    assert!(store.complete_job(a1, &plase, &completion(1), std::slice::from_ref(&delivery), at(14)).await.unwrap());
    assert_eq!(claim_dl("w6", at(15)).await, Some(a3));
    // A lapsed lease no longer counts against the chat.
    let wide = ClaimLimits { max_size: i64::MAX, ..limits };
    let after = at(15).plus(LEASE);
    let got = store.claim_download("w7", after, LEASE, &wide).await.unwrap().map(|j| j.ticket);
    assert_eq!(got, Some(big), "the oldest, now that it fits and CHAT's leases lapsed");
    assert_ne!(unsized_job, big);
}

async fn paced_chats_wait_and_others_flow(store: Store) {
    assert_eq!(store.next_message_due().await.unwrap(), None, "nothing pending");
    assert!(enqueue(&store, &message("a1", CHAT, MessageKind::Reply, None), T0).await);
    assert!(enqueue(&store, &message("a2", CHAT, MessageKind::Reply, None), T0).await);
    assert!(enqueue(&store, &message("b1", OTHER_CHAT, MessageKind::Reply, None), T0).await);
    assert_eq!(store.next_message_due().await.unwrap(), Some(Timestamp::from_millis(0)));

    // CHAT is paused (a 429 for it): OTHER_CHAT still flows.
    store.pace_chat(CHAT.0, at(3_000), "429").await.unwrap();
    store.pace_chat(CHAT.0, at(1_000), "rate limit").await.unwrap(); // an earlier pace never shortens it
    assert_eq!(store.pacing(T0).await.unwrap(), [(CHAT.0, at(3_000), "429".to_owned())]);
    let (b, bl) = claim_message(&store, "s", T0).await;
    assert_eq!(b.chat, OTHER_CHAT);
    assert!(store.claim_message("s", at(2_999), LEASE).await.unwrap().is_none());
    assert!(store.mark_message_sent(&b, &bl, 1, None, at(1)).await.unwrap());
    assert_eq!(store.next_message_due().await.unwrap(), Some(at(3_000)), "a2 waits behind a1");
    let (a, _) = claim_message(&store, "s", at(3_000)).await;
    assert_eq!(a.idempotency_key, "a1");

    // The bot as a whole paused: nobody is served, and the due time says so.
    assert!(enqueue(&store, &message("b2", OTHER_CHAT, MessageKind::Reply, None), at(4)).await);
    store.pace_chat(0, at(9_000), "429 for the bot").await.unwrap();
    assert!(store.claim_message("s", at(8_999), LEASE).await.unwrap().is_none());
    assert_eq!(store.next_message_due().await.unwrap(), Some(at(9_000)));
    let (b2, _) = claim_message(&store, "s", at(9_000)).await;
    assert_eq!(b2.idempotency_key, "b2");
    assert!(store.pacing(at(9_000)).await.unwrap().is_empty());
}

async fn send_slots_are_spaced_for_every_sender(store: Store) {
    let spacing = Duration::from_millis(40);
    // The first slot is now; the next ones queue up behind it, 40 ms apart, whoever asks.
    assert_eq!(store.reserve_send_slot(T0, spacing).await.unwrap(), T0);
    assert_eq!(store.reserve_send_slot(T0, spacing).await.unwrap(), at(40));
    assert_eq!(store.reserve_send_slot(at(10), spacing).await.unwrap(), at(80));
    // After a quiet spell the next slot is now again: no credit for the idle time (no burst).
    assert_eq!(store.reserve_send_slot(at(5_000), spacing).await.unwrap(), at(5_000));
    assert_eq!(store.reserve_send_slot(at(5_000), spacing).await.unwrap(), at(5_040));
    // A clock stepped back by an hour does not make every call wait out the hour.
    assert_eq!(
        store.reserve_send_slot(at(5_000).minus(Duration::from_secs(3_600)), spacing).await.unwrap(),
        at(5_000).minus(Duration::from_secs(3_600))
    );

    // Concurrent reservations never get the same slot.
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..20 {
        let store = store.clone();
        tasks.spawn(async move { store.reserve_send_slot(at(100_000), spacing).await.unwrap() });
    }
    let mut slots: Vec<i64> = tasks.join_all().await.into_iter().map(|t| t.as_millis()).collect();
    slots.sort_unstable();
    let expected: Vec<i64> = (0..20).map(|n| at(100_000).as_millis() + 40 * n).collect();
    assert_eq!(slots, expected);
    // The slot row is no chat: it holds nobody's messages back.
    assert!(enqueue(&store, &message("m", CHAT, MessageKind::Reply, None), T0).await);
    assert!(store.claim_message("s", at(100_000), LEASE).await.unwrap().is_some());
}

async fn a_migrated_chat_takes_its_messages_and_jobs(store: Store) {
    const SUPERGROUP: ChatRef = ChatRef(-1_009_999_999_999);
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    assert!(enqueue(&store, &message("t1", CHAT, MessageKind::TicketReply, Some(ticket)), T0).await);
    assert!(enqueue(&store, &message("t2", CHAT, MessageKind::Reply, None), T0).await);
    let (first, lease) = claim_message(&store, "s", T0).await;
    assert_eq!(store.migrate_chat(CHAT, SUPERGROUP, at(1)).await.unwrap(), 2);
    assert!(store.retry_message(first.id, &lease, at(1), "moved", at(1)).await.unwrap());
    let moved = store.messages(Some(SUPERGROUP), None).await.unwrap();
    assert_eq!(
        moved.iter().map(|m| (m.idempotency_key.as_str(), m.state, m.reply_to_message_id)).collect::<Vec<_>>(),
        [("t1", OutboxState::Pending, None), ("t2", OutboxState::Pending, None)]
    );
    assert!(store.messages(Some(CHAT), None).await.unwrap().is_empty());
    assert_eq!(job(&store, ticket).await.chat, SUPERGROUP);
    let (again, _) = claim_message(&store, "s", at(2)).await;
    assert_eq!((again.id, again.chat), (first.id, SUPERGROUP));
}

async fn progress_edits_coalesce_and_never_hold_a_chat_back(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let progress = |body: &str| NewMessage {
        body: body.to_owned(),
        reply_to_message_id: None,
        ..message("job:1:progress", CHAT, MessageKind::Progress, Some(ticket))
    };
    let bodies = |store: Store| async move {
        let all = store.messages(Some(CHAT), None).await.unwrap();
        all.iter().map(|m| (m.kind, m.state, m.body.clone())).collect::<Vec<_>>()
    };
    assert!(enqueue(&store, &message("job:1:ticket", CHAT, MessageKind::TicketReply, Some(ticket)), T0).await);
    assert!(enqueue(&store, &progress("downloading"), at(1)).await);
    assert!(enqueue(&store, &progress("processing"), at(2)).await, "coalesced into the waiting row");
    assert!(!enqueue(&store, &progress("processing"), at(2)).await, "the same text changes nothing");
    assert!(enqueue(&store, &message("job:1:result", CHAT, MessageKind::Result, Some(ticket)), at(3)).await);
    assert_eq!(store.messages(Some(CHAT), None).await.unwrap().len(), 3);

    // The ticket reply first; while it is in flight nothing else of the chat is claimable.
    let (reply, reply_lease) = claim_message(&store, "s", at(4)).await;
    assert_eq!(reply.kind, MessageKind::TicketReply);
    assert!(store.claim_message("s", at(4), LEASE).await.unwrap().is_none(), "one call per chat at a time");
    assert_eq!(store.status_message(ticket).await.unwrap(), None, "not delivered yet");
    assert!(store.mark_message_sent(&reply, &reply_lease, 77, None, at(5)).await.unwrap());
    assert_eq!(store.status_message(ticket).await.unwrap(), Some(77));

    // The result overtakes the older progress edit.
    let (result, result_lease) = claim_message(&store, "s", at(6)).await;
    assert_eq!(result.kind, MessageKind::Result);
    assert!(store.mark_message_sent(&result, &result_lease, 78, None, at(7)).await.unwrap());

    // A new state arrives while the edit is in flight: it goes out again with the newest text.
    // (A new edit waits PROGRESS_SETTLE first, so a state over in less is never shown.)
    let settled = at(1).plus(crate::domain::PROGRESS_SETTLE);
    assert!(store.claim_message("s", settled.minus(Duration::from_millis(1)), LEASE).await.unwrap().is_none());
    let (edit, edit_lease) = claim_message(&store, "s", settled).await;
    assert_eq!((edit.kind, edit.body.as_str()), (MessageKind::Progress, "processing"));
    assert!(enqueue(&store, &progress("ready"), settled).await);
    assert!(store.mark_message_sent(&edit, &edit_lease, 77, None, settled).await.unwrap());
    let (again, again_lease) = claim_message(&store, "s", settled).await;
    assert_eq!((again.id, again.body.as_str()), (edit.id, "ready"));
    assert!(store.mark_message_sent(&again, &again_lease, 77, None, settled).await.unwrap());
    assert!(bodies(store.clone()).await.iter().all(|(_, state, _)| *state == OutboxState::Sent));

    // A report of an older state arriving late (workers race) changes nothing, sent or not.
    assert!(!enqueue(&store, &progress("downloaded"), at(500)).await, "older than the state shown");
    let shown = store.messages(Some(CHAT), None).await.unwrap();
    let shown = shown.iter().find(|m| m.kind == MessageKind::Progress).map(|m| (m.state, m.body.clone()));
    assert_eq!(shown, Some((OutboxState::Sent, "ready".to_owned())));

    // A delivered edit is re-armed as a new row, behind what the chat has waiting.
    let later = settled.plus(Duration::from_millis(1));
    assert!(enqueue(&store, &message("later", CHAT, MessageKind::Reply, None), later).await);
    assert!(enqueue(&store, &progress("expired"), later).await);
    let rows = store.messages(Some(CHAT), None).await.unwrap();
    let progress_rows: Vec<_> = rows.iter().filter(|m| m.kind == MessageKind::Progress).collect();
    assert_eq!(progress_rows.len(), 1, "still one row per job");
    assert!(progress_rows[0].id > edit.id && progress_rows[0].state == OutboxState::Pending);
    let later_id = rows.iter().find(|m| m.idempotency_key == "later").map(|m| m.id);
    assert!(Some(progress_rows[0].id) > later_id);
}

async fn the_queue_is_ordered_by_when_jobs_became_due(store: Store) {
    // Job 1 arrives first, fails a getFile and waits 10 s; jobs 2 and 3 arrive meanwhile, job 4
    // after its delay ended. Due order: 2, 3 (arrived before job 1 became due again), 1, 4.
    let first = insert(&store, &new_job(CHAT, 1), at(0)).await;
    let (_, lease) = claim(&store, Stage::Download, "d", at(1)).await;
    let retry = Release {
        from: JobState::Accepted,
        event: JobEvent::RetryLater,
        not_before: at(10_000),
        detail: None,
        attempts: AttemptRule::Spent,
    };
    assert!(store.release_job(first, &lease, &retry, at(2)).await.unwrap());
    let second = insert(&store, &new_job(OTHER_CHAT, 2), at(3)).await;
    let third = insert(&store, &new_job(OTHER_CHAT, 3), at(9_000)).await;
    let fourth = insert(&store, &new_job(ChatRef(77), 4), at(10_001)).await;
    let mut order = Vec::new();
    for n in 0..4 {
        let (job, lease) = claim(&store, Stage::Download, "d", at(20_000 + n)).await;
        order.push(job.ticket);
        let detail = "done";
        assert!(
            store.fail_job(job.ticket, JobState::Accepted, Some(&lease), "x", detail, &[], at(20_000)).await.unwrap()
        );
    }
    assert_eq!(order, [second, third, first, fourth]);

    // A resubmitted job counts from its resubmission, not from its first arrival.
    let fifth = insert(&store, &new_job(ChatRef(78), 5), at(30_000)).await;
    let mut tx = store.begin().await.unwrap();
    assert!(tx.resubmit_job(first, JobState::Failed, &new_job(CHAT, 1), at(30_001)).await.unwrap());
    tx.commit().await.unwrap();
    let (next, _) = claim(&store, Stage::Download, "d", at(30_002)).await;
    assert_eq!(next.ticket, fifth, "the resubmitted job does not jump the queue");
    assert_eq!(job(&store, first).await.not_before, at(30_001));
}

async fn releases_refund_or_count_attempts_and_count_lost_sources(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let release = |attempts, event, from| Release { from, event, not_before: at(5), detail: None, attempts };
    let (claimed, lease) = claim(&store, Stage::Download, "d", at(1)).await;
    assert_eq!(claimed.attempts, 1);
    // A shutdown or a flood wait is not the job's fault: the claim's attempt is given back.
    let refund = release(AttemptRule::Refunded, JobEvent::RetryLater, JobState::Accepted);
    assert!(store.release_job(ticket, &lease, &refund, at(2)).await.unwrap());
    assert_eq!(job(&store, ticket).await.attempts, 0);
    let (_, lease) = claim(&store, Stage::Download, "d", at(5)).await;
    let spent = release(AttemptRule::Spent, JobEvent::RetryLater, JobState::Accepted);
    assert!(store.release_job(ticket, &lease, &spent, at(6)).await.unwrap());
    assert_eq!(job(&store, ticket).await.attempts, 1, "a failure of its own counts");

    // Each lost source is counted, across the restarted download attempts, until resubmission.
    for losses in 1..=2 {
        let (_, lease) = claim(&store, Stage::Download, "d", at(10 * losses)).await;
        assert!(store.mark_fetched(ticket, &lease, "/spool/1.source", 10, "ff", at(10 * losses)).await.unwrap());
        let (_, lease) = claim(&store, Stage::Process, "p", at(10 * losses + 1)).await;
        let lost = release(AttemptRule::Restarted, JobEvent::SourceLost, JobState::Processing);
        let lost = Release { not_before: at(10 * losses + 2), ..lost };
        assert!(store.release_job(ticket, &lease, &lost, at(10 * losses + 2)).await.unwrap());
        let back = job(&store, ticket).await;
        assert_eq!((back.state, back.attempts, back.source_losses), (JobState::Accepted, 0, losses));
    }
    let (_, lease) = claim(&store, Stage::Download, "d", at(100)).await;
    assert!(store.fail_job(ticket, JobState::Accepted, Some(&lease), "x", "y", &[], at(101)).await.unwrap());
    let mut tx = store.begin().await.unwrap();
    assert!(tx.resubmit_job(ticket, JobState::Failed, &new_job(CHAT, 1), at(102)).await.unwrap());
    tx.commit().await.unwrap();
    assert_eq!(job(&store, ticket).await.source_losses, 0, "a resubmission starts afresh");
}

async fn a_failed_job_points_at_no_source(store: Store) {
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    let (_, lease) = claim(&store, Stage::Download, "d", at(1)).await;
    assert!(store.mark_fetched(ticket, &lease, "/spool/1.source", 10, "ff", at(2)).await.unwrap());
    let (_, lease) = claim(&store, Stage::Process, "p", at(3)).await;
    assert!(store.fail_job(ticket, JobState::Processing, Some(&lease), "x", "y", &[], at(4)).await.unwrap());
    let failed = job(&store, ticket).await;
    assert_eq!((failed.state, failed.local_path), (JobState::Failed, None), "the source is deleted with the failure");
}

async fn the_jobs_holding_files_are_in_flight_or_leased_by_this_process(store: Store) {
    // Claimed in ticket order: this process's live download, another process's, a download that
    // became `fetched`, one whose lease lapsed, one that failed; the last never claimed.
    let claims = [("h:1:download-0", LEASE), ("h:2:download-0", LEASE), ("h:1:download-1", LEASE)];
    let claims = claims.into_iter().chain([("h:1:download-0", Duration::from_millis(1)), ("h:1:download-1", LEASE)]);
    let mut tickets = Vec::new();
    for (n, (owner, lease_len)) in claims.enumerate() {
        let ticket = insert(&store, &new_job(CHAT, n as i64), T0).await;
        let job = store.claim_download(owner, T0, lease_len, &ClaimLimits::NONE).await.unwrap().expect("claimable");
        assert_eq!(job.ticket, ticket);
        let lease = job.lease.expect("leased");
        if n == 2 {
            assert!(store.mark_fetched(ticket, &lease, "/spool/3.source", 10, "ff", at(1)).await.unwrap());
        }
        if n == 4 {
            assert!(store.fail_job(ticket, JobState::Accepted, Some(&lease), "x", "y", &[], at(1)).await.unwrap());
        }
        tickets.push(ticket);
    }
    let _waiting = insert(&store, &new_job(CHAT, 9), T0).await;
    let mut holding = store.jobs_holding_files("h:1:", at(10)).await.unwrap();
    holding.sort();
    assert_eq!(holding, [tickets[0], tickets[2]], "this process's live downloads and every job with a source");
}

async fn only_an_unknown_message_is_given_up_as_failed(store: Store) {
    assert!(enqueue(&store, &message("lost", CHAT, MessageKind::Reply, None), T0).await);
    let (m, lease) = claim_message(&store, "s1", T0).await;
    assert!(!store.fail_unknown(m.id, "gave up", T0).await.unwrap(), "a row being sent is not unknown");
    assert!(store.close_message(m.id, &lease, OutboxState::Unknown, "timed out", T0).await.unwrap());
    assert!(store.fail_unknown(m.id, "outcome unknown after 1 attempt", at(1)).await.unwrap());
    let failed = store.messages(None, None).await.unwrap().remove(0);
    assert_eq!((failed.state, failed.error.as_deref()), (OutboxState::Failed, Some("outcome unknown after 1 attempt")));
    assert!(!store.fail_unknown(m.id, "again", at(2)).await.unwrap(), "once");
    assert!(!store.requeue_unknown(m.id, at(2), "sent again", at(2)).await.unwrap(), "failed is final");
    assert!(store.claim_message("s2", at(2), LEASE).await.unwrap().is_none());
}

async fn waiting_in_chat(store: &Store, now: Timestamp, cap: u64) -> u64 {
    let mut tx = store.begin().await.unwrap();
    let n = tx.waiting_in_chat(CHAT, now, cap).await.unwrap();
    tx.commit().await.unwrap();
    n
}

async fn waiting_jobs_per_chat_leave_out_downloads(store: Store) {
    for n in 1..=3 {
        insert(&store, &new_job(CHAT, n), at(n)).await;
    }
    insert(&store, &new_job(OTHER_CHAT, 9), at(4)).await;
    assert_eq!(waiting_in_chat(&store, at(10), 100).await, 3, "another chat's job is not counted");
    assert_eq!(waiting_in_chat(&store, at(10), 2).await, 2, "counted up to the cap");

    // Downloading is no longer waiting; a download whose lease lapsed waits again.
    let (downloading, lease) = claim(&store, Stage::Download, "w", at(10)).await;
    assert_eq!(downloading.chat, CHAT);
    assert_eq!(waiting_in_chat(&store, at(11), 100).await, 2);
    assert_eq!(waiting_in_chat(&store, at(10).plus(LEASE), 100).await, 3);
    // Downloaded: it has left the queue.
    assert!(store.mark_fetched(downloading.ticket, &lease, "/spool/1.pdf", 10, "ff", at(12)).await.unwrap());
    assert_eq!(waiting_in_chat(&store, at(10).plus(LEASE), 100).await, 2);
}
