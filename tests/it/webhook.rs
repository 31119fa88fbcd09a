//! Webhook mode: the test posts updates to docket's listener as Telegram would. The right
//! secret gets 200 only after the update is recorded; a wrong or missing one gets 401 and
//! changes nothing; a database that cannot take the update gets 5xx, so Telegram sends it again.

use std::net::SocketAddr;

use docket::app::{Environment, Options};
use docket::config::UpdateMode;
use docket::domain::{BotId, JobState, Ticket, UpdateId};
use docket::store::UpdateOutcome;

use crate::per_backend;
use crate::support::calls::to_chat;
use crate::support::{Backend, DEADLINE, TestApp, fixture, test_options};

per_backend!(
    an_update_with_the_secret_is_recorded_before_the_200,
    a_wrong_or_missing_secret_gets_401_and_records_nothing,
    updates_teloxide_cannot_read_are_recorded_and_answered,
    a_refused_set_webhook_is_tried_again_while_docket_stays_up_and_not_ready,
    a_clean_stop_deletes_the_webhook_only_when_configured,
);

const SECRET: &str = "w3bhook-Secret_0123456789";
const SECRET_ENV: &str = "DOCKET_TEST_WEBHOOK_SECRET";
const PUBLIC_URL: &str = "https://bot.example.test/docket/hook";

/// docket in webhook mode on a free loopback port; returns it and its listener's address.
async fn webhook_app(backend: Backend) -> (TestApp, SocketAddr) {
    webhook_app_with(backend, |_| {}, |_| {}).await
}

/// Like [`webhook_app`], with `tune` applied to the configuration and `before` to the fake before
/// docket starts.
async fn webhook_app_with(
    backend: Backend,
    tune: impl FnOnce(&mut docket::config::Config),
    before: impl FnOnce(&fake_bot_api::FakeTelegram),
) -> (TestApp, SocketAddr) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
    let listen: SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let mut app = TestApp::create(backend, |c| {
        c.telegram.mode = UpdateMode::Webhook;
        c.webhook.listen = Some(listen);
        c.webhook.public_url = Some(PUBLIC_URL.parse().expect("url"));
        c.webhook.secret_token_env = Some(SECRET_ENV.to_owned());
        tune(c);
    })
    .await;
    before(&app.fake);
    app.start_with(Options { environment: Environment::fixed(&[(SECRET_ENV, SECRET)]), ..test_options() }).await;
    (app, listen)
}

async fn post(listen: SocketAddr, secret: Option<&str>, update: &serde_json::Value) -> u16 {
    let mut request = reqwest::Client::new().post(format!("http://{listen}/docket/hook")).json(update);
    if let Some(secret) = secret {
        request = request.header("X-Telegram-Bot-Api-Secret-Token", secret);
    }
    request.send().await.expect("docket's listener answers").status().as_u16()
}

async fn an_update_with_the_secret_is_recorded_before_the_200(backend: Backend) {
    let (app, listen) = webhook_app(backend).await;
    // Set once docket runs, and tried again until Telegram takes it.
    app.fake.wait_for_call("setWebhook", |c| c.status == 200, DEADLINE).await;
    assert_eq!(app.fake.webhook().as_deref(), Some(PUBLIC_URL));
    assert_eq!(app.fake.webhook_secret().as_deref(), Some(SECRET));
    assert_eq!(app.fake.webhook_max_connections(), Some(40));

    let file = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let mut update = app.fake.document_update(500, 500, &file, Some("hooked.pdf"), Some("application/pdf"));
    update["update_id"] = serde_json::json!(9_001);
    assert_eq!(post(listen, Some(SECRET), &update).await, 200);
    // The 200 came after the commit: the job and the registered update are there already.
    let job = app.store.job(Ticket(1)).await.expect("read").expect("the job exists when the 200 arrives");
    assert_eq!(job.submission.declared_name.as_deref(), Some("hooked.pdf"));
    let outcome = app.store.update_outcome(BotId(app.fake.bot_id()), UpdateId(9_001)).await.expect("read");
    assert_eq!(outcome.map(|(o, _)| o), Some(UpdateOutcome::Recorded));

    // Telegram delivering it again changes nothing.
    assert_eq!(post(listen, Some(SECRET), &update).await, 200);
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    app.fake.wait_for_call("sendDocument", to_chat(500), DEADLINE).await;
    assert!(app.store.job(Ticket(2)).await.expect("read").is_none());
    let replies = app.fake.calls_to("sendMessage");
    assert_eq!(replies.len(), 1, "one ticket reply: {replies:?}");
    assert!(app.fake.calls_to("getUpdates").is_empty(), "webhook mode never polls");
    assert!(!crate::support::logs::captured().contains(SECRET), "the secret never reaches the logs");
}

async fn a_wrong_or_missing_secret_gets_401_and_records_nothing(backend: Backend) {
    let (app, listen) = webhook_app(backend).await;
    let update = serde_json::json!({ "update_id": 77, "message": app.fake.text_update(510, 510, "/help")["message"] });
    assert_eq!(post(listen, Some("w3bhook-Secret_012345678"), &update).await, 401);
    assert_eq!(post(listen, Some(&format!("{SECRET}x")), &update).await, 401);
    assert_eq!(post(listen, None, &update).await, 401);
    assert_eq!(app.store.update_outcome(BotId(app.fake.bot_id()), UpdateId(77)).await.expect("read"), None);
    assert!(app.store.messages(&docket::store::MessageFilter::ALL).await.expect("read").is_empty());
    // The same update with the secret is taken: nothing of the refused ones was in the way.
    assert_eq!(post(listen, Some(SECRET), &update).await, 200);
    app.fake.wait_for_call("sendMessage", to_chat(510), DEADLINE).await;
}

/// SQLite with another connection holding the write lock: docket cannot record the update and
/// answers 503; once the lock is gone, Telegram's next delivery is recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_that_cannot_be_recorded_gets_5xx() {
    use sqlx::Connection as _;
    let (app, listen) = webhook_app(Backend::Sqlite).await;
    let docket::store::DatabaseUrl::Sqlite(db) = &app.config.storage.database_url else { unreachable!() };
    let mut blocker =
        sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.expect("connect to the test db");
    sqlx::raw_sql("BEGIN EXCLUSIVE").execute(&mut blocker).await.expect("take the write lock");

    let file = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let mut update = app.fake.document_update(520, 520, &file, Some("later.pdf"), Some("application/pdf"));
    update["update_id"] = serde_json::json!(4_242);
    let status = post(listen, Some(SECRET), &update).await;
    assert!((500..600).contains(&status), "expected a 5xx, got {status}");

    sqlx::raw_sql("ROLLBACK").execute(&mut blocker).await.expect("release the lock");
    drop(blocker);
    assert!(app.store.job(Ticket(1)).await.expect("read").is_none(), "nothing was recorded");
    assert_eq!(post(listen, Some(SECRET), &update).await, 200);
    assert!(app.store.job(Ticket(1)).await.expect("read").is_some());
}

/// Issue 29, point 7: a database that cannot take an update for a while — read-only after a
/// failover (25006), out of connections (53300), its disk full (53100), each for the job's row
/// while the rest of it works — gets 503 every time, never the 200 that would make Telegram drop
/// it; Telegram's next delivery after the fault cleared is recorded, once.
#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_cannot_take_an_update_now_gets_503_until_it_can() {
    use crate::support::postgres::{CLEAR_FAULT, FAULT_HITS, refuse_jobs};
    let (app, listen) = webhook_app(Backend::Postgres).await;
    let bot = BotId(app.fake.bot_id());
    let file = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let mut update = app.fake.document_update(530, 530, &file, Some("failover.pdf"), Some("application/pdf"));
    update["update_id"] = serde_json::json!(4_343);
    for code in ["25006", "53300", "53100"] {
        app.execute(&refuse_jobs(code)).await;
        assert_eq!(post(listen, Some(SECRET), &update).await, 503, "SQLSTATE {code}");
        assert_eq!(app.store.update_outcome(bot, UpdateId(4_343)).await.expect("read"), None, "{code}");
        app.execute(CLEAR_FAULT).await;
    }
    assert_eq!(app.count(FAULT_HITS).await, 3);
    assert_eq!(post(listen, Some(SECRET), &update).await, 200);
    assert_eq!(post(listen, Some(SECRET), &update).await, 200, "a repeat");
    let outcome = app.store.update_outcome(bot, UpdateId(4_343)).await.expect("read");
    assert_eq!(outcome.map(|(o, _)| o), Some(UpdateOutcome::Recorded));
    // One ticket. (Its number is not 1: each refused insert took a number from the sequence.)
    let jobs = app.store.jobs(&docket::store::JobFilter { limit: 10, ..Default::default() }).await.expect("read");
    assert_eq!(jobs.len(), 1, "one ticket: {jobs:?}");
    app.wait_for_job(jobs[0].ticket, |j| j.state == JobState::Ready).await;
}

async fn updates_teloxide_cannot_read_are_recorded_and_answered(backend: Backend) {
    let (app, listen) = webhook_app(backend).await;
    let bot = BotId(app.fake.bot_id());
    // A kind of update newer than docket: recorded, confirmed, nobody to answer.
    let unknown = serde_json::json!({"update_id": 9_100, "reaction_of_2030": {"chat": {"id": 520}, "emoji": "+"}});
    assert_eq!(post(listen, Some(SECRET), &unknown).await, 200);
    let outcome = app.store.update_outcome(bot, UpdateId(9_100)).await.expect("read");
    assert_eq!(outcome.map(|(o, _)| o), Some(UpdateOutcome::Recorded), "recorded, not rejected");

    // A forwarded file with an empty MIME type: a ticket and a result like any other.
    let file = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let mut update = app.fake.document_update(521, 521, &file, Some("fwd.pdf"), Some(""));
    update["update_id"] = serde_json::json!(9_101);
    assert_eq!(post(listen, Some(SECRET), &update).await, 200);
    let job = app.store.job(Ticket(1)).await.expect("read").expect("a job for the forwarded file");
    assert_eq!(job.submission.declared_mime, None);
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;

    // A message whose content cannot be read, in a private chat: answered.
    let mut broken = app.fake.text_update(522, 522, "x");
    broken["message"]["text"] = serde_json::json!({"not": "text"});
    broken["update_id"] = serde_json::json!(9_102);
    assert_eq!(post(listen, Some(SECRET), &broken).await, 200);
    let answer = app.fake.wait_for_call("sendMessage", to_chat(522), DEADLINE).await;
    assert!(answer.params["text"].as_str().is_some_and(|t| t.contains("could not read that message")), "{answer:?}");
}

async fn a_refused_set_webhook_is_tried_again_while_docket_stays_up_and_not_ready(backend: Backend) {
    let held = std::sync::OnceLock::new();
    let (app, listen) = webhook_app_with(
        backend,
        |_| {},
        |fake| {
            fake.fail_next("setWebhook", fake_bot_api::Fault::ServerError(502));
            held.set(fake.hold_next("setWebhook")).expect("set once");
        },
    )
    .await;
    let held = held.get().expect("a held setWebhook");
    // docket started although Telegram refused the webhook, and tries again.
    app.fake.wait_for_call("setWebhook", |c| c.status == 502, DEADLINE).await;
    held.arrived(DEADLINE).await;
    let problems = app.health_problems().await;
    assert!(problems.iter().any(|p| p.starts_with("the webhook is not set")), "{problems:?}");

    held.release();
    crate::support::eventually(DEADLINE, async || {
        let problems = app.health_problems().await;
        if problems.is_empty() { Ok(()) } else { Err(format!("still not ready: {problems:?}")) }
    })
    .await;
    let update =
        serde_json::json!({ "update_id": 9_200, "message": app.fake.text_update(530, 530, "/help")["message"] });
    assert_eq!(post(listen, Some(SECRET), &update).await, 200);
    app.fake.wait_for_call("sendMessage", to_chat(530), DEADLINE).await;
}

async fn a_clean_stop_deletes_the_webhook_only_when_configured(backend: Backend) {
    let (mut app, _) = webhook_app(backend).await;
    app.fake.wait_for_call("setWebhook", |c| c.status == 200, DEADLINE).await;
    app.stop().await;
    assert_eq!(app.fake.webhook().as_deref(), Some(PUBLIC_URL), "kept by default");
    assert!(app.fake.calls_to("deleteWebhook").is_empty());

    let (mut app, _) = webhook_app_with(backend, |c| c.webhook.delete_on_stop = true, |_| {}).await;
    app.fake.wait_for_call("setWebhook", |c| c.status == 200, DEADLINE).await;
    app.stop().await;
    let deleted = app.fake.wait_for_call("deleteWebhook", |c| c.status == 200, DEADLINE).await;
    assert_ne!(deleted.params["drop_pending_updates"], true, "the waiting updates are kept");
    assert_eq!(app.fake.webhook(), None);
}
