//! Group chats and the per-chat queue: which messages in a group are docket's (`[access]
//! groups`), and how many files one chat may have waiting (`[limits] per_chat_queued`).
//!
//! A message docket ignores leaves no trace but its registered update id, so each test sends a
//! message docket does answer after the ones it must ignore: updates are recorded in order, so
//! once that answer is queued, the earlier updates were handled too.

use std::time::Duration;

use docket::config::{Config, GroupMode};
use docket::domain::{ChatRef, MessageKind, Ticket};
use docket::store::{JobFilter, MessageFilter, UpdateOutcome};
use fake_bot_api::FloodLimits;
use serde_json::{Value, json};

use crate::per_backend;
use crate::support::calls::{text_of, to_chat};
use crate::support::{Backend, DEADLINE, TestApp, fixture};

per_backend!(
    one_chat_may_queue_only_so_many_files,
    in_a_group_docket_takes_documents_addressed_to_it,
    in_a_group_commands_for_other_bots_are_ignored,
    groups_all_takes_every_document,
    groups_off_ignores_groups_entirely,
);

/// A supergroup, as Telegram numbers them.
const GROUP: i64 = -1_001_234_567;
/// A member of it.
const MEMBER: i64 = 77;

/// No pacing in the way: these tests are about what is answered, not how fast.
fn unpaced(c: &mut Config) {
    c.outbox.private_interval = Duration::ZERO;
    c.outbox.group_per_minute = 6000;
    c.outbox.global_per_second = 1000;
}

fn unpaced_fake(app: &TestApp) {
    app.fake.set_flood_limits(FloodLimits {
        private_interval: Duration::ZERO,
        group_per_minute: 100_000,
        global_per_second: 100_000,
        answer_429: true,
    });
}

/// docket with `mode` for groups, the fake's bot named `username`, running.
async fn group_app(backend: Backend, mode: Option<GroupMode>, username: &str) -> TestApp {
    let mut app = TestApp::create(backend, |c| {
        unpaced(c);
        if let Some(mode) = mode {
            c.access.groups = mode;
        }
    })
    .await;
    unpaced_fake(&app);
    // getMe is asked once, at start.
    app.fake.set_bot_username(username);
    app.start().await;
    app
}

/// A document named `name` sent to the group by a member, with `caption` and replying to
/// `reply_to` when given.
fn group_document(app: &TestApp, name: &str, caption: Option<&str>, reply_to: Option<Value>) -> Value {
    let file = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let mut update = app.fake.document_update(GROUP, MEMBER, &file, Some(name), Some("application/pdf"));
    if let Some(caption) = caption {
        update["message"]["caption"] = json!(caption);
    }
    if let Some(reply_to) = reply_to {
        update["message"]["reply_to_message"] = reply_to;
    }
    update
}

fn group_text(app: &TestApp, text: &str) -> Value {
    app.fake.text_update(GROUP, MEMBER, text)
}

/// The names of the chat's jobs, oldest first.
async fn job_names(app: &TestApp, chat: i64) -> Vec<String> {
    let jobs = app
        .store
        .jobs(&JobFilter { chat: Some(ChatRef(chat)), limit: 1000, ..JobFilter::default() })
        .await
        .expect("list");
    jobs.into_iter().rev().map(|j| j.submission.declared_name.unwrap_or_default()).collect()
}

/// The bodies of the messages queued for `chat`, oldest first.
async fn queued_bodies(app: &TestApp, chat: i64) -> Vec<String> {
    let messages = app.store.messages(&MessageFilter::chat(ChatRef(chat))).await.expect("read");
    messages.into_iter().map(|m| m.body).collect()
}

/// The answers (to commands, hints, refusals) queued for `chat`: no ticket replies, progress or
/// results, which running jobs add at their own pace.
async fn answers(app: &TestApp, chat: i64) -> Vec<String> {
    let messages = app.store.messages(&MessageFilter::chat(ChatRef(chat))).await.expect("read");
    messages.into_iter().filter(|m| m.kind == MessageKind::Reply).map(|m| m.body).collect()
}

async fn assert_ignored(app: &TestApp, update_ids: &[i64]) {
    for &id in update_ids {
        let outcome = app
            .store
            .update_outcome(docket::domain::BotId(app.fake.bot_id()), docket::domain::UpdateId(id))
            .await
            .expect("read");
        assert_eq!(outcome.map(|(o, _)| o), Some(UpdateOutcome::Recorded), "update {id} was not handled");
    }
}

async fn one_chat_may_queue_only_so_many_files(backend: Backend) {
    // No download ever starts (no disk has this much free space): every job waits in `accepted`.
    let mut app = TestApp::create(backend, |c| {
        unpaced(c);
        c.storage.min_free = u64::MAX;
    })
    .await;
    unpaced_fake(&app);
    app.start().await;
    let (busy, other) = (1000, 1001);
    for n in 1..=51 {
        app.send_document(busy, fixture("pdf/text-1page.pdf"), &format!("part-{n}.pdf"), "application/pdf");
    }
    let refusal = app
        .fake
        .wait_for_call("sendMessage", |c| to_chat(busy)(c) && text_of(c).starts_with("part-51.pdf"), DEADLINE)
        .await;
    assert_eq!(
        text_of(&refusal),
        "part-51.pdf was not queued: 50 of your files are already waiting in the queue, as many as this bot \
         takes from one chat. Please send it again when some of them are done."
    );
    let names = job_names(&app, busy).await;
    assert_eq!(names.len(), 50, "{names:?}");
    assert!(!names.contains(&"part-51.pdf".to_owned()), "the 51st file got a job");
    assert!(app.store.job(Ticket(51)).await.expect("read").is_none());

    // Another chat is not held back by the first one's queue.
    app.send_document(other, fixture("pdf/text-1page.pdf"), "mine.pdf", "application/pdf");
    let reply = app.fake.wait_for_call("sendMessage", to_chat(other), DEADLINE).await;
    assert!(text_of(&reply).starts_with("Got mine.pdf ("), "{}", text_of(&reply));
    assert_eq!(job_names(&app, other).await, ["mine.pdf"]);
    assert!(app.fake.calls_to("getFile").is_empty(), "downloads were held back");
}

async fn in_a_group_docket_takes_documents_addressed_to_it(backend: Backend) {
    // The bot's name as getMe spells it; people write it in any case.
    let app = group_app(backend, None, "Docket_Test_Bot").await;
    let plain = app.fake.push_update(group_document(&app, "plain.pdf", None, None));
    app.fake.push_update(group_document(&app, "mentioned.pdf", Some("@docket_test_bot optimize"), None));
    app.fake.wait_for_call("sendMessage", |c| to_chat(GROUP)(c) && text_of(c).starts_with("Got "), DEADLINE).await;

    let bot_message = app.fake.last_bot_message(GROUP).expect("the bot answered in the group");
    let mut someone_else = bot_message.clone();
    someone_else["from"] = json!({"id": 88, "is_bot": false, "first_name": "Bea"});
    let lookalike =
        app.fake.push_update(group_document(&app, "lookalike.pdf", Some("@docket_test_bot_fan look"), None));
    let other_reply = app.fake.push_update(group_document(&app, "other-reply.pdf", None, Some(someone_else)));
    app.fake.push_update(group_document(&app, "reply.pdf", None, Some(bot_message)));
    app.fake.push_update(group_text(&app, "/jobs"));
    app.fake
        .wait_for_call("sendMessage", |c| to_chat(GROUP)(c) && text_of(c).starts_with("Your latest"), DEADLINE)
        .await;

    assert_eq!(job_names(&app, GROUP).await, ["mentioned.pdf", "reply.pdf"]);
    assert_ignored(&app, &[plain, lookalike, other_reply]).await;
    let answers = answers(&app, GROUP).await;
    assert_eq!(answers.len(), 1, "only /jobs is answered: {answers:#?}");
}

async fn in_a_group_commands_for_other_bots_are_ignored(backend: Backend) {
    let app = group_app(backend, None, "docket_test_bot").await;
    let ignored = [
        app.fake.push_update(group_text(&app, "/status@OtherBot 1")),
        app.fake.push_update(group_text(&app, "/help@other_bot")),
        app.fake.push_update(group_text(&app, "/status@docket_test_bot_fan 1")),
    ];
    app.fake.push_update(group_text(&app, "/status@DOCKET_TEST_BOT 1"));
    app.fake.push_update(group_text(&app, "/status 1"));
    let replies = app.fake.wait_for_calls("sendMessage", to_chat(GROUP), 2, DEADLINE).await;
    assert_eq!(replies.iter().map(text_of).collect::<Vec<_>>(), ["No such ticket: #1.", "No such ticket: #1."]);
    assert_eq!(queued_bodies(&app, GROUP).await.len(), 2, "commands for other bots must not be answered");
    assert_ignored(&app, &ignored).await;
}

async fn groups_all_takes_every_document(backend: Backend) {
    let app = group_app(backend, Some(GroupMode::All), "docket_test_bot").await;
    let mut plain = group_document(&app, "plain.pdf", None, None);
    // A basic group, not a supergroup: the same rules.
    plain["message"]["chat"]["type"] = json!("group");
    app.fake.push_update(plain);
    let ignored = app.fake.push_update(group_text(&app, "/status@OtherBot 1"));
    app.fake.push_update(group_document(&app, "captioned.pdf", Some("optimize"), None));
    let replies = app
        .fake
        .wait_for_calls("sendMessage", |c| to_chat(GROUP)(c) && text_of(c).starts_with("Got "), 2, DEADLINE)
        .await;
    assert!(text_of(&replies[0]).starts_with("Got plain.pdf ("), "{}", text_of(&replies[0]));
    assert_eq!(job_names(&app, GROUP).await, ["plain.pdf", "captioned.pdf"]);
    assert!(answers(&app, GROUP).await.is_empty(), "{:#?}", answers(&app, GROUP).await);
    assert_ignored(&app, &[ignored]).await;
}

async fn groups_off_ignores_groups_entirely(backend: Backend) {
    let app = group_app(backend, Some(GroupMode::Off), "docket_test_bot").await;
    let ignored = [
        app.fake.push_update(group_document(&app, "mentioned.pdf", Some("@docket_test_bot"), None)),
        app.fake.push_update(group_text(&app, "/help@docket_test_bot")),
        app.fake.push_update(group_text(&app, "/status 1")),
    ];
    // Private chats work as ever.
    app.send_document(500, fixture("pdf/text-1page.pdf"), "private.pdf", "application/pdf");
    app.fake.wait_for_call("sendMessage", to_chat(500), DEADLINE).await;
    assert_eq!(job_names(&app, 500).await, ["private.pdf"]);
    assert!(job_names(&app, GROUP).await.is_empty());
    assert!(queued_bodies(&app, GROUP).await.is_empty(), "{:#?}", queued_bodies(&app, GROUP).await);
    assert_ignored(&app, &ignored).await;
}
