//! The outbox: dead chats get one call, lost outcomes follow the per-kind rule.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use docket::domain::NewMessage;
use docket::domain::{ChatRef, JobState, MessageKind, OutboxState, Paced, Ticket};
use docket::store::MessageFilter;
use fake_bot_api::{Call, DownloadFault, Fault};

use crate::per_backend;
use crate::support::calls::to_chat;
use crate::support::{Backend, DEADLINE, TestApp, eventually, fixture};

per_backend!(
    a_blocked_chat_gets_one_call_and_its_other_messages_are_dead,
    a_lost_reply_is_unknown_and_then_sent_again,
    a_lost_result_is_sent_again_when_nothing_newer_went_out,
    a_429_pauses_only_its_chat_even_across_a_restart,
    server_errors_twice_then_one_delivery,
    a_migrated_group_is_answered_in_the_supergroup,
    two_senders_on_one_database_send_nothing_twice,
    two_dockets_on_one_database_share_the_global_limit,
);

async fn a_blocked_chat_gets_one_call_and_its_other_messages_are_dead(backend: Backend) {
    let mut app = TestApp::create(backend, |_| {}).await;
    app.fake.block_chat(10, "Forbidden: bot was blocked by the user");
    // Two messages queued for the chat before anything is sent (the person blocked the bot
    // after writing), and one for another chat.
    for (key, chat) in [("a", 10), ("b", 10), ("c", 11)] {
        app.enqueue(key, chat, &format!("message {key}")).await;
    }
    app.start().await;

    app.fake.wait_for_call("sendMessage", to_chat(11), DEADLINE).await;
    let dead = |m: &Vec<docket::domain::OutboxMessage>| m.len() == 2 && m.iter().all(|m| m.state == OutboxState::Dead);
    app.wait_until_messages(ChatRef(10), dead).await;
    let calls: Vec<Call> = app.fake.calls().into_iter().filter(to_chat(10)).collect();
    assert_eq!(calls.len(), 1, "exactly one call to the blocked chat: {calls:?}");
    assert_eq!(calls[0].status, 403);

    // A message queued later (a job's result, say) is stored dead without a call.
    app.enqueue("d", 10, "later").await;
    let three_dead =
        |m: &Vec<docket::domain::OutboxMessage>| m.len() == 3 && m.iter().all(|m| m.state == OutboxState::Dead);
    app.wait_until_messages(ChatRef(10), three_dead).await;

    // The person unblocks the bot and writes again: the chat is answered again.
    app.fake.unblock_chat(10);
    app.send_text(10, "/help");
    let again = app.fake.wait_for_call("sendMessage", |c| to_chat(10)(c) && c.status == 200, DEADLINE).await;
    assert!(again.params["text"].as_str().is_some_and(|t| t.starts_with("How it works")));
    assert_eq!(app.fake.calls().into_iter().filter(to_chat(10)).count(), 2);
}

async fn a_lost_reply_is_unknown_and_then_sent_again(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.fake.fail_next("sendMessage", Fault::ResponseLost);
    app.send_text(20, "/help");
    let calls = app.fake.wait_for_calls("sendMessage", to_chat(20), 2, DEADLINE).await;
    assert_eq!(calls[0].params["text"], calls[1].params["text"], "the same reply, sent again");
    let sent = eventually(DEADLINE, async || {
        let m = app.store.messages(&MessageFilter::chat(ChatRef(20))).await.expect("read");
        m.into_iter().next().filter(|m| m.state == OutboxState::Sent).ok_or_else(|| "never sent".to_owned())
    })
    .await;
    assert!(sent.error.is_none(), "a delivery clears the error");
    assert_eq!(sent.attempts, 2);
    assert!(crate::support::logs::captured().contains("outcome unknown; sending again"));
}

async fn a_lost_result_is_sent_again_when_nothing_newer_went_out(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.fake.fail_next("sendDocument", Fault::ResponseLost);
    app.send_document(30, fixture("pdf/text-1page.pdf"), "lost.pdf", "application/pdf");
    let calls = app.fake.wait_for_calls("sendDocument", to_chat(30), 2, DEADLINE).await;
    assert_eq!(calls[0].params["caption"], calls[1].params["caption"]);
    let job = app.wait_for_job(Ticket(1), |j| j.result.as_ref().is_some_and(|r| r.telegram_file_id.is_some())).await;
    assert_eq!(job.state, JobState::Ready);
}

/// Successful message calls (sendMessage, sendDocument) in the order they arrived.
fn delivered(app: &TestApp) -> Vec<Call> {
    app.fake
        .calls()
        .into_iter()
        .filter(|c| (c.method == "sendMessage" || c.method == "sendDocument") && c.status == 200)
        .collect()
}

async fn a_429_pauses_only_its_chat_even_across_a_restart(backend: Backend) {
    let mut app = TestApp::spawn_with(backend, |_| {}).await;
    app.fake.fail_next_for_chat("sendMessage", 40, Fault::RetryAfter(3));
    app.send_text(40, "/help");
    let limited = app.fake.wait_for_call("sendMessage", |c| to_chat(40)(c) && c.status == 429, DEADLINE).await;

    // Another chat is served while chat 40 waits.
    app.send_text(41, "/help");
    let other = app.fake.wait_for_call("sendMessage", |c| to_chat(41)(c) && c.status == 200, DEADLINE).await;
    assert!(other.at.duration_since(limited.at) < Duration::from_secs(3), "chat 41 waited for chat 40's pause");

    // A crash and a restart in the middle of the pause: it still holds. (The crash comes once
    // docket has stored the pause: the fake records the 429 before docket has read it.)
    wait_until_paused(&app, Paced::Chat(ChatRef(40))).await;
    app.kill().await;
    app.start().await;
    assert!(limited.at.elapsed() < Duration::from_secs(3), "the restart took the whole pause; nothing was shown");
    app.send_text(40, "/help"); // a second message for the paused chat, queued after the restart
    let calls = app.fake.wait_for_calls("sendMessage", |c| to_chat(40)(c) && c.status == 200, 2, DEADLINE).await;
    let first_after = calls[0].at.duration_since(limited.at);
    assert!(first_after >= Duration::from_secs(3), "chat 40 was called {first_after:?} after a 429 of 3 s");
    let to_40: Vec<Call> = app.fake.calls().into_iter().filter(to_chat(40)).collect();
    assert_eq!(to_40.len(), 3, "one 429, then exactly two deliveries: {to_40:?}");
    assert!(app.fake.violations().is_empty(), "{:?}", app.fake.violations());
    app.stop().await;
}

async fn server_errors_twice_then_one_delivery(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.fake.fail_next_for_chat("sendMessage", 50, Fault::ServerError(502));
    app.fake.fail_next_for_chat("sendMessage", 50, Fault::ServerError(503));
    app.enqueue("five-hundreds", 50, "after two server errors").await;
    // teloxide itself waits 10 s after each 5xx before it reports it.
    let sent = app.wait_until_all_sent(1, Duration::from_secs(60)).await;
    assert_eq!(sent[0].attempts, 3);
    let statuses: Vec<u16> = app.fake.calls().into_iter().filter(to_chat(50)).map(|c| c.status).collect();
    assert_eq!(statuses, [502, 503, 200]);
    assert_eq!(delivered(&app).len(), 1);
}

async fn a_migrated_group_is_answered_in_the_supergroup(backend: Backend) {
    let mut app = TestApp::create(backend, |_| {}).await;
    const GROUP: i64 = -4_000_000_001;
    const SUPERGROUP: i64 = -1_004_000_000_001;
    app.fake.fail_next_for_chat("sendMessage", GROUP, Fault::MigrateTo(SUPERGROUP));
    // Both queued before the bot starts: the migration must carry the waiting one along.
    app.enqueue("first", GROUP, "first").await;
    app.enqueue("second", GROUP, "second").await;
    app.start().await;
    let sent = app.wait_until_all_sent(2, DEADLINE).await;
    assert!(sent.iter().all(|m| m.chat == ChatRef(SUPERGROUP)), "{sent:#?}");
    let to_new: Vec<String> = delivered(&app)
        .into_iter()
        .filter(to_chat(SUPERGROUP))
        .map(|c| c.params["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(to_new, ["first", "second"], "in order, in the new chat");
    let to_old: Vec<u16> = app.fake.calls().into_iter().filter(to_chat(GROUP)).map(|c| c.status).collect();
    assert_eq!(to_old, [400], "one refused call to the old id");
}

async fn two_senders_on_one_database_send_nothing_twice(backend: Backend) {
    let mut app = TestApp::create(backend, |_| {}).await;
    for n in 0..40 {
        app.enqueue(&format!("m{n}"), 600 + n % 20, &format!("message {n}")).await;
    }
    app.start().await;
    let other = app.start_another().await;
    app.wait_until_all_sent(40, Duration::from_secs(60)).await;
    let texts: Vec<String> =
        delivered(&app).iter().map(|c| c.params["text"].as_str().unwrap_or_default().to_owned()).collect();
    let distinct: HashSet<&String> = texts.iter().collect();
    assert_eq!((texts.len(), distinct.len()), (40, 40), "each message exactly once: {texts:?}");
    assert!(app.fake.violations().is_empty(), "{:?}", app.fake.violations());
    other.stop().await;
    app.stop().await;
}

/// The global limit holds for every docket on the database together: two instances with
/// `global_per_second = 5` and 30 messages for 30 chats (no per-chat waits) take at least
/// 29 × 200 ms between the first and the last call, not half of that as two separate limiters
/// would. Load can only make it slower, so the bound cannot fail for that reason.
async fn two_dockets_on_one_database_share_the_global_limit(backend: Backend) {
    const MESSAGES: i64 = 30;
    let mut app = TestApp::create(backend, |c| c.outbox.global_per_second = 5).await;
    for n in 0..MESSAGES {
        app.enqueue(&format!("m{n}"), 700 + n, &format!("message {n}")).await;
    }
    app.start().await;
    let other = app.start_another().await;
    app.wait_until_all_sent(MESSAGES as usize, Duration::from_secs(60)).await;
    let calls = delivered(&app);
    assert_eq!(calls.len(), MESSAGES as usize, "each message once: {calls:?}");
    let span = calls[calls.len() - 1].at.duration_since(calls[0].at);
    // 29 gaps of 200 ms, less a margin for the jitter between a slot and the call's arrival.
    assert!(span >= Duration::from_millis(29 * 200 - 300), "30 calls within {span:?}: faster than 5 a second");
    assert!(app.fake.violations().is_empty(), "{:?}", app.fake.violations());
    other.stop().await;
    app.stop().await;
}

/// 100 documents from 20 chats: every ticket reply and result delivered once, per chat in the
/// order queued, and not one of Telegram's limits broken (the fake counts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_jobs_from_twenty_chats_keep_every_limit_and_order() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.workers.per_chat = 5).await;
    let pdf = fixture("pdf/text-1page.pdf");
    for n in 0..100u32 {
        let chat = 700 + i64::from(n % 20);
        // Distinct bytes per document, so each is its own file (and job).
        let mut bytes = pdf.clone();
        bytes.extend_from_slice(format!("\n% copy {n}\n").as_bytes());
        app.send_document(chat, bytes, &format!("doc-{n}.pdf"), "application/pdf");
    }
    // A ticket reply, a result and the status message's progress row for each job.
    let sent = app.wait_until_all_sent(300, Duration::from_secs(120)).await;
    assert!(app.fake.violations().is_empty(), "limits broken: {:?}", app.fake.violations());

    // Per chat, Telegram got exactly the outbox's messages, in the outbox's order.
    let mut queued: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for m in sent.iter().filter(|m| m.kind != MessageKind::Progress) {
        queued.entry(m.chat.0).or_default().push(m.body.clone());
    }
    let mut got: BTreeMap<i64, Vec<String>> = BTreeMap::new();
    for c in delivered(&app) {
        let body = c.params.get("text").or_else(|| c.params.get("caption")).and_then(|v| v.as_str());
        got.entry(c.params["chat_id"].as_i64().unwrap_or_default())
            .or_default()
            .push(body.unwrap_or_default().to_owned());
    }
    assert_eq!(got, queued);
    let results = sent.iter().filter(|m| m.kind == MessageKind::Result).count();
    assert_eq!(results, 100);
    // Every status message ends on its job's final state.
    for reply in sent.iter().filter(|m| m.kind == MessageKind::TicketReply) {
        let shown = app.fake.message(reply.chat.0, reply.telegram_message_id.map_or(0, |m| m.0));
        let text = shown.and_then(|m| m["text"].as_str().map(str::to_owned)).unwrap_or_default();
        assert!(text.contains("\nReady: the result is below, kept until "), "{text}");
    }
}

/// The ticket reply is the job's status message: edited as the job moves (downloading with a
/// percentage, processing, ready), in that order, within the chat's rate limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_message_follows_its_job() {
    let app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    // About 7 s of download, so the running download reports its progress.
    app.fake.fail_downloads(DownloadFault::Throttle { bytes_per_sec: 6_000 }, Some(1));
    app.send_document(80, fixture("pdf/scan-2pages.pdf"), "scan.pdf", "application/pdf");
    app.wait_until_messages(ChatRef(80), |m| {
        m.iter()
            .any(|m| m.kind == MessageKind::Progress && m.state == OutboxState::Sent && m.body.contains("\nReady: "))
    })
    .await;
    let messages = app.store.messages(&MessageFilter::chat(ChatRef(80))).await.expect("read");
    let reply = messages.iter().find(|m| m.kind == MessageKind::TicketReply).expect("a ticket reply");
    let reply_id = reply.telegram_message_id.expect("delivered").0;
    let edits: Vec<Call> =
        app.fake.calls_to("editMessageText").into_iter().filter(|c| to_chat(80)(c) && c.status == 200).collect();
    assert!(
        edits.iter().all(|c| c.params["message_id"].as_i64() == Some(reply_id)),
        "only the status message is edited"
    );
    let texts: Vec<&str> = edits.iter().map(|c| c.params["text"].as_str().unwrap_or_default()).collect();
    assert!(
        texts.iter().any(|t| t.contains("\nDownloading: ") && t.contains("% (")),
        "a percentage was shown: {texts:#?}"
    );
    let rank =
        |t: &str| ["\nDownloading", "\nDownloaded;", "\nProcessing", "\nReady: "].iter().position(|p| t.contains(p));
    let ranks: Vec<Option<usize>> = texts.iter().map(|t| rank(t)).collect();
    assert!(ranks.iter().all(Option::is_some) && ranks.is_sorted(), "states in order: {texts:#?}");
    let shown = app.fake.message(80, reply_id).and_then(|m| m["text"].as_str().map(str::to_owned)).unwrap_or_default();
    assert!(
        shown.starts_with("Got scan.pdf (41.5 kB) — ticket #1.\nReady: the result is below, kept until "),
        "{shown}"
    );
    assert!(app.fake.violations().is_empty(), "{:?}", app.fake.violations());
}

/// "Message is not modified" means the text is already there: the edit counts as delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_changes_nothing_counts_as_delivered() {
    let app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    app.send_document(81, fixture("pdf/text-1page.pdf"), "same.pdf", "application/pdf");
    let is_ready = |m: &docket::domain::OutboxMessage| {
        m.kind == MessageKind::Progress && m.state == OutboxState::Sent && m.body.contains("\nReady: ")
    };
    app.wait_until_messages(ChatRef(81), |m| m.iter().any(is_ready)).await;
    let shown = app.store.messages(&MessageFilter::chat(ChatRef(81))).await.expect("read");
    let shown = shown.into_iter().find(is_ready).expect("the last edit");

    // The same state reported again (a later, identical report): Telegram answers "message is
    // not modified", which must count as delivered, not as a failure.
    let again = NewMessage {
        idempotency_key: shown.idempotency_key.clone(),
        job: shown.job,
        chat: shown.chat,
        kind: MessageKind::Progress,
        body: shown.body.clone(),
        reply_to_message_id: None,
        buttons: shown.buttons.clone(),
        part: None,
    };
    let now = docket::domain::Clock::now(&docket::domain::SystemClock);
    assert!(app.store.enqueue(&again, now).await.expect("enqueue"), "re-armed as a new row");
    let refused = app.fake.wait_for_call("editMessageText", |c| to_chat(81)(c) && c.status == 400, DEADLINE).await;
    assert!(refused.params["text"].as_str().is_some_and(|t| t == shown.body), "the identical text was sent");
    app.wait_until_messages(ChatRef(81), |m| {
        m.iter().any(|m| m.kind == MessageKind::Progress && m.id > shown.id && m.state == OutboxState::Sent)
    })
    .await;
    let messages = app.store.messages(&MessageFilter::chat(ChatRef(81))).await.expect("read");
    assert!(messages.iter().all(|m| m.state == OutboxState::Sent), "{messages:#?}");
}

/// While a result uploads for longer than a moment, the person sees "sending a file…".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_upload_shows_the_upload_action() {
    let app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    app.fake.fail_next_for_chat("sendDocument", 82, Fault::Delay(Duration::from_millis(2_500)));
    app.send_document(82, fixture("pdf/text-1page.pdf"), "slow.pdf", "application/pdf");
    let sent = app.fake.wait_for_call("sendDocument", |c| to_chat(82)(c) && c.status == 200, DEADLINE).await;
    let actions = app.fake.calls_to("sendChatAction");
    let action = actions.iter().find(|c| to_chat(82)(c)).expect("a chat action during the upload");
    assert_eq!(action.params["action"], "upload_document");
    assert!(action.at > sent.at, "sent while the upload was under way (the fake records the document on arrival)");
}

/// A message Telegram refuses for good ends `failed`, and the admins hear of it once an hour,
/// however many fail: one alert, not a flood.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_messages_alert_the_admins_once() {
    const ADMIN: i64 = 999;
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.access.admins = vec![ADMIN]).await;
    for n in 0..3 {
        app.fake.fail_next_for_chat("sendMessage", 90, Fault::BadRequest("Bad Request: PEER_ID_INVALID".into()));
        app.enqueue(&format!("doomed-{n}"), 90, &format!("doomed {n}")).await;
    }
    let alert = app.fake.wait_for_call("sendMessage", |c| to_chat(ADMIN)(c) && c.status == 200, DEADLINE).await;
    let text = alert.params["text"].as_str().unwrap_or_default().to_owned();
    assert!(text.starts_with("docket: a message to chat 90 could not be delivered"), "{text}");
    assert!(text.contains("PEER_ID_INVALID"), "{text}");
    app.wait_until_messages(ChatRef(90), |m| m.len() == 3 && m.iter().all(|m| m.state == OutboxState::Failed)).await;
    // Every failure has been handled (and would have queued its alert) by now: one alert per
    // hour the failures fell in (one, unless the test ran across the turn of an hour).
    let calls_to_90 = app.fake.calls().into_iter().filter(to_chat(90)).collect::<Vec<_>>();
    assert_eq!(calls_to_90.len(), 3);
    let unix_hour = |at: std::time::Instant| {
        let now = std::time::SystemTime::now() - at.elapsed();
        now.duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() / 3600).unwrap_or_default()
    };
    let hours: HashSet<u64> = calls_to_90.iter().map(|c| unix_hour(c.at)).collect();
    let alerts = app.store.messages(&MessageFilter::chat(ChatRef(ADMIN))).await.expect("read");
    assert_eq!(alerts.len(), hours.len(), "one alert for three failures: {alerts:#?}");
    app.wait_until_messages(ChatRef(ADMIN), |m| m.iter().all(|m| m.state == OutboxState::Sent)).await;
    let to_admin = app.fake.calls().into_iter().filter(to_chat(ADMIN)).count();
    assert_eq!(to_admin, hours.len());
}

/// A result over the upload limit of the current mode is never attempted: its run is stopped
/// when the result reaches the limit, the job fails, and the person reads the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_over_the_upload_limit_is_never_sent() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.limits.cloud_upload = 1_000).await;
    app.send_document(91, fixture("pdf/text-20pages.pdf"), "big.pdf", "application/pdf");
    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Failed).await;
    let reason = job.error.unwrap_or_default();
    assert_eq!(
        reason,
        "the result for big.pdf grew past the 1.0 kB this bot can send, so making it was stopped; try shrink for \
         a smaller file, or split it into parts"
    );
    let notice = app
        .fake
        .wait_for_call(
            "sendMessage",
            |c| to_chat(91)(c) && c.params["text"].as_str().is_some_and(|t| t.contains("failed:")),
            DEADLINE,
        )
        .await;
    assert!(notice.params["text"].as_str().unwrap_or_default().contains(&reason));
    assert!(app.fake.calls_to("sendDocument").is_empty(), "no upload was attempted");
}

/// 429s for two chats at the same moment mean the bot as a whole is limited: a third chat waits
/// too, until the pause ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flood_waits_for_two_chats_pause_the_whole_bot() {
    let app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    app.fake.fail_next_for_chat("sendMessage", 60, Fault::RetryAfter(3));
    app.fake.fail_next_for_chat("sendMessage", 61, Fault::RetryAfter(3));
    app.enqueue("a", 60, "to chat 60").await;
    app.enqueue("b", 61, "to chat 61").await;
    let calls = app.fake.wait_for_calls("sendMessage", |c| c.status == 429, 2, DEADLINE).await;
    let second_429 = calls[1].at;
    // The fake records a 429 before docket has read it; the third chat's message is queued only
    // once docket has drawn its conclusion, so the test checks the pause and not a race with it.
    wait_until_paused(&app, Paced::WholeBot).await;
    app.enqueue("c", 62, "to chat 62").await;
    let third = app.fake.wait_for_call("sendMessage", |c| to_chat(62)(c) && c.status == 200, DEADLINE).await;
    let waited = third.at.duration_since(calls[0].at);
    assert!(waited >= Duration::from_secs(3), "chat 62 was called {waited:?} after the first 429");
    assert!(third.at > second_429);
    app.wait_until_all_sent(3, DEADLINE).await;
}

/// Waits until docket has stored a 429 pause for `paced` (a chat, or the bot as a whole).
async fn wait_until_paused(app: &TestApp, paced: Paced) {
    eventually(DEADLINE, async || {
        let pacing = app.store.pacing(docket::domain::Timestamp::from_millis(0)).await.expect("read");
        if pacing.iter().any(|(p, _, reason)| *p == paced && reason.starts_with("429")) {
            Ok(())
        } else {
            Err(format!("{paced:?} was never paused for a 429: {pacing:?}"))
        }
    })
    .await;
}
