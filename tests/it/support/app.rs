//! [`TestApp`]: docket in the test's own process, on a fresh database and data folder, against
//! a fake Bot API, with every loop running; stopped in order (and checked) or killed as a crash
//! would.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use docket::app::{Options, Running, SENDERS_AFTER_WORKERS};
use docket::config::{BotToken, Config, DatabaseUrl};
use docket::domain::{Job, OutboxMessage};
use docket::domain::{OutboxState, SharedClock, SystemClock, Ticket};
use docket::runtime::WorkerId;
use docket::store::{JobFilter, MessageFilter, Store};
use fake_bot_api::{FakeTelegram, FileRef, TEST_TOKEN};
use tempfile::TempDir;
use tokio::runtime::{Handle, RuntimeFlavor};

#[cfg(feature = "postgres-tests")]
use super::postgres;
use super::upload::{self, Upload};
use super::{Backend, DEADLINE, eventually, logs};

/// A running docket and everything around it.
///
/// Every orderly stop — [`stop`](Self::stop), or dropping the app while docket runs — checks
/// that docket left nothing half done (see [`stop`](Self::stop)).
pub struct TestApp {
    pub fake: FakeTelegram,
    pub config: Config,
    /// A store handle of the test's own, for assertions.
    pub store: Store,
    running: Option<Running>,
    /// The clock of the docket started last: leases are in its time.
    clock: SharedClock,
    /// Claims the last [`kill`](Self::kill) left behind, as they were right after it.
    crashed: Leftovers,
    _dir: TempDir,
    #[cfg(feature = "postgres-tests")]
    _pg: Option<postgres::TestDatabase>,
}

impl TestApp {
    /// docket on `backend`, with `tune` applied to the configuration, running.
    pub async fn spawn_with(backend: Backend, tune: impl FnOnce(&mut Config)) -> Self {
        let mut app = Self::create(backend, tune).await;
        app.start().await;
        app
    }

    /// Everything prepared (fake, folders, database) but docket not started yet.
    pub async fn create(backend: Backend, tune: impl FnOnce(&mut Config)) -> Self {
        logs::capture();
        let fake = FakeTelegram::start().await;
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = Config::from_toml_str(
            r#"
            [telegram]
            poll_timeout = "1s"
            [workers]
            download = 2
            process = 2
            lease = "3s"
            shutdown_grace = "5s"
            "#,
            None,
            Some(fake.api_url().as_str()),
        )
        .expect("test config is valid");
        config.storage.data_dir = dir.path().join("data");
        #[cfg(feature = "postgres-tests")]
        let mut pg = None;
        config.storage.database_url = match backend {
            Backend::Sqlite => DatabaseUrl::Sqlite(dir.path().join("db").join("docket.db")),
            #[cfg(feature = "postgres-tests")]
            Backend::Postgres => {
                let db = postgres::TestDatabase::create().await;
                let url = db.url.clone();
                pg = Some(db);
                DatabaseUrl::Postgres(url)
            }
        };
        tune(&mut config);
        let store = Store::open(&config.storage.database_url).await.expect("test store opens");
        Self {
            fake,
            config,
            store,
            running: None,
            clock: Arc::new(SystemClock),
            crashed: Leftovers::default(),
            _dir: dir,
            #[cfg(feature = "postgres-tests")]
            _pg: pg,
        }
    }

    /// What `/healthz` would report as wrong right now (nothing: ready).
    pub async fn health_problems(&self) -> Vec<String> {
        let running = self.running.as_ref().expect("docket is running");
        running.probe(std::time::Duration::from_secs(2)).problems().await
    }

    /// Starts docket (again) on the same database and data folder.
    pub async fn start(&mut self) {
        self.start_with(test_options()).await;
    }

    /// Starts docket (again) with these options instead of [`test_options`].
    pub async fn start_with(&mut self, options: Options) {
        assert!(self.running.is_none(), "already running");
        self.clock = Arc::clone(&options.clock);
        let running =
            docket::app::start(&self.config, BotToken::new(TEST_TOKEN), options).await.expect("docket starts");
        self.running = Some(running);
    }

    /// A second docket on the same database, data folder and fake (another machine, say).
    pub async fn start_another(&self) -> Running {
        docket::app::start(&self.config, BotToken::new(TEST_TOKEN), test_options())
            .await
            .expect("a second docket starts")
    }

    /// Another docket on the same database and fake, as the node `node` (another machine).
    #[cfg(feature = "postgres-tests")]
    pub async fn start_another_as(&self, node: &str) -> Running {
        let mut config = self.config.clone();
        config.node.name = Some(docket::domain::NodeName::new(node).expect("a node name"));
        docket::app::start(&config, BotToken::new(TEST_TOKEN), test_options()).await.expect("another docket starts")
    }

    /// Queues `body` for `chat` straight into the outbox, as any stage would.
    pub async fn enqueue(&self, key: &str, chat: i64, body: &str) {
        let m = docket::domain::NewMessage {
            idempotency_key: docket::domain::IdempotencyKey::from_stored(key.to_owned()),
            job: None,
            chat: docket::domain::ChatRef(chat),
            kind: docket::domain::MessageKind::Reply,
            body: body.to_owned(),
            reply_to_message_id: None,
            buttons: Vec::new(),
            part: None,
        };
        self.store.enqueue(&m, docket::domain::Clock::now(&SystemClock)).await.expect("enqueue");
    }

    /// Waits until every message in the outbox is `sent`, with `expected` rows in all.
    pub async fn wait_until_all_sent(&self, expected: usize, deadline: Duration) -> Vec<docket::domain::OutboxMessage> {
        eventually(deadline, async || {
            let m = self.store.messages(&MessageFilter::ALL).await.expect("store reads");
            if m.len() == expected && m.iter().all(|m| m.state == docket::domain::OutboxState::Sent) {
                return Ok(m);
            }
            let open: Vec<_> = m.iter().filter(|m| m.state != docket::domain::OutboxState::Sent).collect();
            Err(format!("{} of {expected} messages, not all sent: {open:#?}", m.len()))
        })
        .await
    }

    /// Stops docket in order, as SIGTERM would, then checks that it left nothing half done: no
    /// job under a live lease of a docket worker (the workers release what they hold, even what
    /// the grace period cut short) and, when the stop ended before the senders could have been
    /// aborted ([`SENDERS_AFTER_WORKERS`]), no message left `sending`. Claims a [`kill`] left and
    /// nobody has touched since, and leases a test took itself (another owner), are not docket's
    /// to release.
    ///
    /// [`kill`]: Self::kill
    pub async fn stop(&mut self) {
        if let Some(r) = self.running.take() {
            let started = Instant::now();
            r.stop().await;
            self.assert_nothing_half_done(started.elapsed()).await;
        }
    }

    /// Drops every loop at once, as a crash would. What it leaves claimed is remembered, so a
    /// later [`stop`](Self::stop) does not count it against the docket started after.
    pub async fn kill(&mut self) {
        if let Some(r) = self.running.take() {
            r.kill().await;
            self.crashed = self.claims().await;
        }
    }

    /// The jobs under a live lease of a docket worker, and the messages in `sending`.
    async fn claims(&self) -> Leftovers {
        let now = self.clock.now();
        let workers = WorkerId::process_prefix();
        let all = JobFilter { limit: i64::MAX, ..JobFilter::default() };
        let jobs = self.store.jobs(&all).await.expect("store reads");
        let messages = self.store.messages(&MessageFilter::ALL).await.expect("store reads");
        Leftovers {
            jobs: jobs
                .into_iter()
                .filter(|j| j.lease.as_ref().is_some_and(|l| l.owner.starts_with(&workers) && !l.is_expired(now)))
                .collect(),
            sending: messages.into_iter().filter(|m| m.state == OutboxState::Sending).collect(),
        }
    }

    async fn assert_nothing_half_done(&self, stop_took: Duration) {
        let claims = self.claims().await;
        let same_claim = |a: &Option<docket::domain::Lease>, b: &Option<docket::domain::Lease>| {
            a.as_ref().map(|l| (&l.owner, l.token)) == b.as_ref().map(|l| (&l.owner, l.token))
        };
        let leased: Vec<&Job> = not_left_by_the_kill(&claims.jobs, &self.crashed.jobs, |c, j| {
            c.ticket == j.ticket && same_claim(&c.lease, &j.lease)
        });
        assert!(leased.is_empty(), "docket stopped in order but left jobs under its lease: {leased:#?}");
        if stop_took < SENDERS_AFTER_WORKERS {
            let sending: Vec<&OutboxMessage> = not_left_by_the_kill(&claims.sending, &self.crashed.sending, |c, m| {
                c.id == m.id && same_claim(&c.lease, &m.lease)
            });
            assert!(sending.is_empty(), "docket stopped in order but left messages half sent: {sending:#?}");
        }
    }

    /// Bytes the running docket holds in its byte budget.
    pub fn reserved_bytes(&self) -> u64 {
        self.running.as_ref().expect("docket is running").reserved_bytes()
    }

    /// Records a job straight into the store, as an earlier intake (under other settings) would
    /// have; returns its ticket.
    pub async fn insert_job(&self, chat: i64, file: &FileRef, name: &str, declared_size: Option<u64>) -> Ticket {
        let job = docket::domain::Submission {
            update_id: docket::domain::UpdateId(chat),
            chat: docket::domain::ChatRef(chat),
            user_id: Some(docket::domain::UserId(chat)),
            message_id: docket::domain::MessageId(1),
            file_id: file.file_id.clone(),
            file_unique_id: file.file_unique_id.clone(),
            declared_name: Some(name.to_owned()),
            declared_mime: Some("application/pdf".to_owned()),
            declared_size: declared_size.map(|s| s as i64),
            operation: docket::domain::Operation::Optimize,
            chosen_by_default: false,
            language_code: None,
            run_of: None,
        };
        let mut tx = self.store.begin().await.expect("tx");
        let ticket = tx.insert_job(&job, docket::domain::Clock::now(&SystemClock)).await.expect("insert");
        tx.commit().await.expect("commit");
        ticket
    }

    /// Runs one SQL statement on the test's database (to set up a state no API reaches).
    pub async fn execute(&self, sql: &str) {
        let statement = sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()));
        let ran = match self.connect().await {
            TestConnection::Sqlite(mut conn) => statement.execute(&mut conn).await.map(drop),
            #[cfg(feature = "postgres-tests")]
            TestConnection::Postgres(mut conn) => statement.execute(&mut conn).await.map(drop),
        };
        ran.expect("run the statement");
    }

    /// The number one SQL query answers (`SELECT COUNT(*) …`) on the test's database.
    pub async fn count(&self, sql: &str) -> i64 {
        let sql = || sqlx::AssertSqlSafe(sql.to_owned());
        let answer = match self.connect().await {
            TestConnection::Sqlite(mut conn) => sqlx::query_scalar(sql()).fetch_one(&mut conn).await,
            #[cfg(feature = "postgres-tests")]
            TestConnection::Postgres(mut conn) => sqlx::query_scalar(sql()).fetch_one(&mut conn).await,
        };
        answer.expect("run the query")
    }

    /// A connection of the test's own to its database, outside docket's pool.
    async fn connect(&self) -> TestConnection {
        use sqlx::Connection as _;
        match &self.config.storage.database_url {
            DatabaseUrl::Sqlite(path) => TestConnection::Sqlite(
                sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display()))
                    .await
                    .expect("connect to the test database"),
            ),
            #[cfg(feature = "postgres-tests")]
            DatabaseUrl::Postgres(url) => {
                TestConnection::Postgres(sqlx::PgConnection::connect(url).await.expect("connect to the test database"))
            }
            #[allow(unreachable_patterns)]
            other => panic!("no test connection for {other:?}"),
        }
    }

    /// Puts `upload`'s bytes on the fake as a file and sends it as a document from `chat`
    /// (user = chat), with its caption and the sender's language when it has them.
    pub fn send(&self, chat: i64, upload: Upload) -> (i64, FileRef) {
        upload.send_to(&self.fake, chat)
    }

    /// The data folder.
    pub fn data_dir(&self) -> PathBuf {
        self.config.storage.data_dir.clone()
    }

    /// Puts `bytes` on the fake as a file and sends it as a document from `chat` (user = chat).
    pub fn send_document(&self, chat: i64, bytes: Vec<u8>, name: &str, mime: &str) -> (i64, FileRef) {
        self.send(chat, upload::document(bytes, name, mime))
    }

    /// Sends the one-page text PDF from `chat` as `name`, the app's first document, and waits
    /// until its job (ticket 1) is ready; returns the file on the fake and that job.
    pub async fn first_pdf_ready(&self, chat: i64, name: &str) -> (FileRef, Job) {
        let (_, file) = self.send_document(chat, super::fixture("pdf/text-1page.pdf"), name, "application/pdf");
        let job = self.wait_for_job(Ticket(1), |j| j.state == docket::domain::JobState::Ready).await;
        (file, job)
    }

    /// Sends `text` from `chat` (user = chat).
    pub fn send_text(&self, chat: i64, text: &str) -> i64 {
        let update = self.fake.text_update(chat, chat, text);
        self.fake.push_update(update)
    }

    /// Waits until job `ticket` satisfies `pred`; panics with the job's last state otherwise.
    pub async fn wait_for_job(&self, ticket: Ticket, pred: impl Fn(&Job) -> bool) -> Job {
        eventually(DEADLINE, async || match self.store.job(ticket).await.expect("store reads") {
            Some(job) if pred(&job) => Ok(job),
            job => Err(format!("job {ticket} never reached the expected condition; last seen: {job:#?}")),
        })
        .await
    }
}

impl TestApp {
    /// Waits until the messages of `chat` satisfy `pred`.
    pub async fn wait_until_messages(
        &self,
        chat: docket::domain::ChatRef,
        pred: impl Fn(&Vec<docket::domain::OutboxMessage>) -> bool,
    ) {
        eventually(DEADLINE, async || {
            let m = self.store.messages(&MessageFilter::chat(chat)).await.expect("store reads");
            if pred(&m) { Ok(()) } else { Err(format!("messages of chat {} never matched: {m:#?}", chat.0)) }
        })
        .await;
    }
}

/// A connection to the test's database, of the kind its backend takes.
enum TestConnection {
    Sqlite(sqlx::SqliteConnection),
    #[cfg(feature = "postgres-tests")]
    Postgres(sqlx::PgConnection),
}

/// What docket holds claimed: see [`TestApp::stop`].
#[derive(Default)]
struct Leftovers {
    jobs: Vec<Job>,
    sending: Vec<OutboxMessage>,
}

/// The claims among `now` that are not one the last kill left (`crashed`); `same(left, claim)`
/// says whether two are the same claim.
fn not_left_by_the_kill<'a, T>(now: &'a [T], crashed: &[T], same: impl Fn(&T, &T) -> bool) -> Vec<&'a T> {
    now.iter().filter(|claim| !crashed.iter().any(|left| same(left, claim))).collect()
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // The loops die with the runtime; a second panic would hide the first.
            return;
        }
        // A docket still running is stopped in order, and checked, as `stop` does. That takes
        // a multi-threaded runtime (the loops run on its workers while this thread blocks).
        let multi_thread = Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
        if self.running.is_some() && multi_thread {
            let handle = Handle::current();
            tokio::task::block_in_place(|| handle.block_on(self.stop()));
        }
        // Whatever the test did, the token must never have reached the logs.
        logs::assert_no_secrets();
    }
}

/// The options every test docket runs with: the real clock, quick idle polls and retries, and
/// docket's binary as the child of processing runs (this test binary is not docket).
pub fn test_options() -> Options {
    Options {
        program: PathBuf::from(env!("CARGO_BIN_EXE_docket")),
        clock: Arc::new(SystemClock),
        idle_poll: Duration::from_millis(100),
        retry_base: Duration::from_millis(100),
        ..Options::default()
    }
}
