//! Honest answers from and to Telegram: what docket does when the Bot API refuses getUpdates (a
//! webhook is set, another process polls, the token is refused), when an answer does not come
//! in time, and when a sender can no longer keep its claim on a message.

use std::time::Duration;

use docket::app::Options;
use docket::domain::OutboxMessage;
use docket::domain::{ChatRef, JobState, OutboxState, Ticket};
use docket::store::{DatabaseUrl, MessageFilter};
use fake_bot_api::{Call, FakeTelegram, Fault, Hold, TEST_TOKEN};

use crate::per_backend;
use crate::support::calls::to_chat;
use crate::support::child::{self, DocketProcess};
use crate::support::{Backend, DEADLINE, TestApp, eventually, fixture, logs, test_options};

per_backend!(
    a_webhook_set_before_start_is_deleted_and_a_document_goes_through,
    a_send_that_times_out_is_unknown_and_sent_again,
    a_message_still_unknown_after_its_attempts_fails_and_alerts_the_admins,
    a_call_whose_lease_cannot_be_renewed_is_abandoned,
    a_call_whose_lease_was_taken_is_abandoned,
);

/// The one outbox row of `chat`.
async fn only_message(app: &TestApp, chat: i64) -> OutboxMessage {
    let mut messages = app.store.messages(&MessageFilter::chat(ChatRef(chat))).await.expect("store reads");
    assert_eq!(messages.len(), 1, "{messages:#?}");
    messages.remove(0)
}

/// Waits until `repeat`, the held second send of the one message to `chat`, has reached the fake;
/// returns that message's row and the note its error holds then (empty when none).
async fn once_the_repeat_is_held(app: &TestApp, chat: i64, repeat: &Hold) -> (OutboxMessage, String) {
    repeat.arrived(DEADLINE).await;
    let row = only_message(app, chat).await;
    let note = row.error.clone().unwrap_or_default();
    (row, note)
}

/// Waits until the captured logs contain `needle`.
async fn until_logged(needle: &str) {
    eventually(DEADLINE, async || {
        if logs::captured().contains(needle) { Ok(()) } else { Err(format!("never logged: {needle:?}")) }
    })
    .await;
}

// ---------------------------------------------------------------------------------------------
// Webhook at start

async fn a_webhook_set_before_start_is_deleted_and_a_document_goes_through(backend: Backend) {
    let mut app = TestApp::create(backend, |_| {}).await;
    // Deployments often put the token, or another secret, in the webhook's path.
    let webhook = format!("https://hooks.example.org:8443/bot{TEST_TOKEN}/hook-path-5e1f?secret=abc");
    app.fake.set_webhook(&webhook);
    // Sent while the webhook was set: it waits for whoever takes the bot's updates.
    app.send_document(100, fixture("pdf/text-1page.pdf"), "hooked.pdf", "application/pdf");
    app.start().await;

    let deleted = app.fake.wait_for_call("deleteWebhook", |c| c.status == 200, DEADLINE).await;
    assert_ne!(deleted.params["drop_pending_updates"], true, "the waiting updates are kept");
    assert_eq!(app.fake.webhook(), None);
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    app.fake.wait_for_call("sendDocument", |c| to_chat(100)(c) && c.status == 200, DEADLINE).await;

    until_logged("a webhook is set for this bot, which makes getUpdates fail; deleting it").await;
    let logs = logs::captured();
    assert!(logs.contains("webhook=https://hooks.example.org:8443"), "the webhook is named by its origin");
    assert!(!logs.contains("hook-path-5e1f") && !logs.contains("secret=abc"), "the webhook's path was logged");
}

/// A webhook set while docket polls (another deployment of the same bot, say) is deleted too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_set_while_polling_is_deleted_again() {
    let app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    app.fake.wait_for_call("getUpdates", |_| true, DEADLINE).await;
    app.fake.set_webhook("https://hooks.example.org/elsewhere");
    app.fake.wait_for_call("getUpdates", |c| c.status == 409, DEADLINE).await;
    app.fake.wait_for_call("deleteWebhook", |c| c.status == 200, DEADLINE).await;
    app.send_text(101, "/help");
    app.fake.wait_for_call("sendMessage", |c| to_chat(101)(c) && c.status == 200, DEADLINE).await;
}

// ---------------------------------------------------------------------------------------------
// 409: another poller

/// Two pollers with one token: on PostgreSQL docket lets only one of its processes poll (see
/// below), but a docket on another database, or any other program with the token, still can.
/// The in-process test apps on one SQLite database play that second poller (a real second
/// `docket run` on one SQLite file is refused at start).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_poller_is_named_plainly_and_not_fatal() {
    let app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    app.fake.wait_for_call("getUpdates", |_| true, DEADLINE).await;
    // Another docket with the same token: each long poll overtakes the other's.
    let other = app.start_another().await;
    app.fake.wait_for_call("getUpdates", |c| c.status == 409, DEADLINE).await;
    until_logged("another process is polling with the same token (409 Conflict)").await;
    other.stop().await;

    // A warning, not a reason to stop: once alone, docket takes documents as before.
    app.first_pdf_ready(102, "after.pdf").await;
}

/// On PostgreSQL one docket of all those on the database polls; the others stand by, and when
/// the poller dies one of them takes over from the stored offset.
#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_one_docket_polls_and_another_takes_over_when_it_dies() {
    let mut app = TestApp::spawn_with(Backend::Postgres, |_| {}).await;
    app.fake.wait_for_call("getUpdates", |_| true, DEADLINE).await;
    let other = app.start_another().await;
    // Both run; several long polls go by, and none was overtaken by a second poller.
    let before = app.fake.calls_to("getUpdates").len();
    app.fake.wait_for_calls("getUpdates", |_| true, before + 4, DEADLINE).await;
    let conflicts = app.fake.calls_to("getUpdates").into_iter().filter(|c| c.status == 409).count();
    assert_eq!(conflicts, 0, "only one docket may poll at a time");

    // The poller dies (its database session with it): the other takes over and takes documents.
    app.kill().await;
    let after_kill = app.fake.calls_to("getUpdates").len();
    app.fake.wait_for_calls("getUpdates", |_| true, after_kill + 2, DEADLINE).await;
    app.first_pdf_ready(103, "taken-over.pdf").await;
    other.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 401: the token is refused

/// `docket run` as a child process against `fake`, with `token`.
fn docket_run(fake: &FakeTelegram, token: &str) -> DocketProcess {
    let process = docket_process(fake, token);
    process.start();
    process
}

/// `docket run` as a child process against `fake`, with `token`, not started yet.
fn docket_process(fake: &FakeTelegram, token: &str) -> DocketProcess {
    let dir = tempfile::tempdir().expect("temp dir");
    let toml = child::run_config(dir.path(), &format!("sqlite://{}", dir.path().join("docket.db").display()))
        + "[workers]\nlease = \"3s\"\nshutdown_grace = \"5s\"\n";
    DocketProcess::new(dir, &toml, fake).env("TELOXIDE_TOKEN", token)
}

/// Waits for the process to end on its own; panics with its stderr after `timeout`.
async fn exit_status(docket: &DocketProcess, timeout: Duration) -> (std::process::ExitStatus, String) {
    let status = docket.exit_status(timeout).await;
    (status, docket.log_text())
}

const TOKEN_REFUSED: &str = "the Bot API refused the token (401 Unauthorized): check TELOXIDE_TOKEN / revoked?";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docket_run_with_a_wrong_token_exits_naming_the_token() {
    let fake = FakeTelegram::start().await;
    let docket = docket_run(&fake, "123456:WRONG-docket-token");
    let (status, stderr) = exit_status(&docket, DEADLINE).await;
    assert!(!status.success(), "{status}: {stderr}");
    assert!(stderr.contains(TOKEN_REFUSED), "{stderr}");
    assert!(!stderr.contains("WRONG-docket-token"), "the token was printed: {stderr}");
}

/// An `api_url` that is not the root of a Bot API server (a proxy location with a path, say):
/// every call answers 404 Not Found, which is a wrong address, not a refused token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docket_run_against_a_wrong_api_url_exits_naming_the_key() {
    let fake = FakeTelegram::start().await;
    let wrong = fake.api_url().join("not-the-bot-api/").expect("a URL");
    let docket = docket_process(&fake, TEST_TOKEN).env("TELOXIDE_API_URL", wrong.as_str());
    docket.start();
    let (status, stderr) = exit_status(&docket, DEADLINE).await;
    assert!(!status.success(), "{status}: {stderr}");
    assert!(stderr.contains("answered 404 Not Found: check [telegram] api_url"), "{stderr}");
    assert!(!stderr.contains(TOKEN_REFUSED), "a wrong address is no refused token: {stderr}");
    let secret = TEST_TOKEN.split(':').nth(1).expect("token has a secret half");
    assert!(!stderr.contains(secret), "the token was printed: {stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_revoked_while_polling_stops_docket_run() {
    let fake = FakeTelegram::start().await;
    let docket = docket_run(&fake, TEST_TOKEN);
    fake.wait_for_call("getUpdates", |c| c.status == 200, DEADLINE).await;
    fake.revoke_token();
    fake.wait_for_call("getUpdates", |c| c.status == 401, DEADLINE).await;
    let (status, stderr) = exit_status(&docket, DEADLINE).await;
    assert!(!status.success(), "{status}: {stderr}");
    assert!(stderr.contains(&format!("docket: while polling for updates: {TOKEN_REFUSED}")), "{stderr}");
    assert!(stderr.contains("stopped"), "it stopped in order: {stderr}");
    let secret = TEST_TOKEN.split(':').nth(1).expect("token has a secret half");
    assert!(!stderr.contains(secret), "the token was printed: {stderr}");
}

// ---------------------------------------------------------------------------------------------
// Timeouts after sending

async fn a_send_that_times_out_is_unknown_and_sent_again(backend: Backend) {
    let mut app = TestApp::create(backend, |_| {}).await;
    let first = app.fake.hold_next_for_chat("sendMessage", 110);
    let second = app.fake.hold_next_for_chat("sendMessage", 110);
    // Regular calls wait for their answer the long poll (1 s) plus 3 s.
    app.start_with(Options { answer_timeout: Duration::from_secs(3), ..test_options() }).await;
    app.enqueue("slow", 110, "an answer that is slow to come").await;

    // Telegram performed the call, but docket gives up waiting for the answer.
    first.arrived(DEADLINE).await;
    first.abandoned(DEADLINE).await;
    // A reply's rule: sent again. The row tells why while the repeat is on its way.
    let (row, note) = once_the_repeat_is_held(&app, 110, &second).await;
    assert_eq!((row.state, row.attempts), (OutboxState::Sending, 2), "{row:#?}");
    assert!(
        note.starts_with("outcome unknown (timed out waiting for the answer); sent again, a duplicate is possible"),
        "{note}"
    );
    second.release();
    app.wait_until_all_sent(1, DEADLINE).await;
    let calls: Vec<Call> = app.fake.calls_to("sendMessage").into_iter().filter(to_chat(110)).collect();
    assert!(calls.len() >= 2, "{calls:?}");
    assert!(calls.iter().all(|c| c.params["text"] == "an answer that is slow to come"));
}

// ---------------------------------------------------------------------------------------------
// Unknown past its attempts

async fn a_message_still_unknown_after_its_attempts_fails_and_alerts_the_admins(backend: Backend) {
    const ADMIN: i64 = 998;
    let app = TestApp::spawn_with(backend, |c| {
        c.access.admins = vec![ADMIN];
        c.outbox.max_attempts = 2;
    })
    .await;
    app.fake.fail_next_for_chat("sendMessage", 120, Fault::ResponseLost);
    app.fake.fail_next_for_chat("sendMessage", 120, Fault::ResponseLost);
    app.enqueue("lost-twice", 120, "lost twice").await;

    let alert = app.fake.wait_for_call("sendMessage", |c| to_chat(ADMIN)(c) && c.status == 200, DEADLINE).await;
    let text = alert.params["text"].as_str().unwrap_or_default().to_owned();
    assert!(text.starts_with("docket: a message to chat 120 could not be delivered"), "{text}");
    assert!(text.contains("outcome unknown after 2 attempts"), "{text}");
    app.wait_until_messages(ChatRef(120), |m| m.len() == 1 && m[0].state == OutboxState::Failed).await;
    let row = only_message(&app, 120).await;
    assert!(row.error.as_deref().is_some_and(|e| e.starts_with("outcome unknown after 2 attempts (")), "{row:#?}");
    assert_eq!(app.fake.calls().into_iter().filter(to_chat(120)).count(), 2, "no third try");
}

// ---------------------------------------------------------------------------------------------
// A send lease that cannot be kept

/// A connection of the test's own to the docket's database, for what the store does not offer.
enum Sql {
    Sqlite(sqlx::SqliteConnection),
    #[cfg(feature = "postgres-tests")]
    Postgres(sqlx::PgConnection),
}

impl Sql {
    async fn connect(app: &TestApp) -> Self {
        use sqlx::Connection as _;
        match &app.config.storage.database_url {
            DatabaseUrl::Sqlite(path) => Self::Sqlite(
                sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display())).await.expect("connect"),
            ),
            #[cfg(feature = "postgres-tests")]
            DatabaseUrl::Postgres(url) => Self::Postgres(sqlx::PgConnection::connect(url).await.expect("connect")),
            #[cfg(not(feature = "postgres-tests"))]
            DatabaseUrl::Postgres(_) => unreachable!("PostgreSQL tests are not compiled in"),
        }
    }

    async fn execute(&mut self, sql: &str) {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        match self {
            Self::Sqlite(c) => sqlx::query(sql).execute(c).await.map(drop),
            #[cfg(feature = "postgres-tests")]
            Self::Postgres(c) => sqlx::query(sql).execute(c).await.map(drop),
        }
        .expect("the test's statement runs");
    }

    /// Starts a transaction that keeps every writer away from outbox row `id`: the whole
    /// database on SQLite, the row on PostgreSQL.
    #[cfg_attr(not(feature = "postgres-tests"), expect(unused_variables, reason = "SQLite locks it all"))]
    async fn block_writes_to(&mut self, id: i64) {
        match self {
            // SQLite has one writer: holding the write lock keeps everyone away from every row.
            Self::Sqlite(_) => self.execute("BEGIN EXCLUSIVE").await,
            #[cfg(feature = "postgres-tests")]
            Self::Postgres(_) => {
                self.execute("BEGIN").await;
                self.execute(&format!("SELECT id FROM outbox WHERE id = {id} FOR UPDATE")).await;
            }
        }
    }
}

/// The database refuses every renewal of the send lease while Telegram holds the answer: once
/// the lease has run out the call is dropped, and the row is resolved as a lapsed send, not
/// written by the sender that no longer held it.
async fn a_call_whose_lease_cannot_be_renewed_is_abandoned(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let first = app.fake.hold_next_for_chat("sendMessage", 130);
    let second = app.fake.hold_next_for_chat("sendMessage", 130);
    app.enqueue("held", 130, "held while the database is away").await;
    first.arrived(DEADLINE).await;
    let id = only_message(&app, 130).await.id.0;

    let mut sql = Sql::connect(&app).await;
    sql.block_writes_to(id).await;
    // The lease is 3 s: without a renewal the sender must let go of the call.
    first.abandoned(DEADLINE).await;
    sql.execute("ROLLBACK").await;

    // The row's lapsed lease makes it `unknown`, and the reply's rule sends it again.
    let (row, note) = once_the_repeat_is_held(&app, 130, &second).await;
    assert!(
        note.starts_with("outcome unknown (the sender stopped while sending (its lease lapsed))"),
        "resolved as a lapsed send: {row:#?}"
    );
    second.release();
    app.wait_until_all_sent(1, DEADLINE).await;
    until_logged("abandoned the call: the send lease could not be kept").await;
}

/// Another sender took the row while Telegram holds the answer: the call is dropped at the next
/// renewal, and the row stays as the other sender holds it.
async fn a_call_whose_lease_was_taken_is_abandoned(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let first = app.fake.hold_next_for_chat("sendMessage", 131);
    app.enqueue("taken", 131, "taken over mid-call").await;
    first.arrived(DEADLINE).await;
    let before = only_message(&app, 131).await;
    let token = before.lease.as_ref().expect("leased while sending").token;

    let mut sql = Sql::connect(&app).await;
    sql.execute(&format!(
        "UPDATE outbox SET lease_owner = 'test:thief', lease_token = lease_token + 100,
             lease_until = lease_until + 600000 WHERE id = {}",
        before.id
    ))
    .await;
    first.abandoned(DEADLINE).await;
    let after = only_message(&app, 131).await;
    let lease = after.lease.clone().expect("still leased");
    assert_eq!(
        (after.state, lease.owner.as_str(), lease.token),
        (OutboxState::Sending, "test:thief", token + 100),
        "the first sender wrote nothing: {after:#?}"
    );

    // The thief's lease lapses: the message is resolved and sent again.
    sql.execute(&format!("UPDATE outbox SET lease_until = 0 WHERE id = {}", before.id)).await;
    app.wait_until_all_sent(1, DEADLINE).await;
}
