//! The outbox: dead chats get one call, lost outcomes follow the per-kind rule.

use docket::domain::{ChatRef, JobState, MessageKind, OutboxState, Ticket};
use docket::store::NewMessage;

use crate::per_backend;
use crate::support::fake_telegram::{Call, Fault};
use crate::support::{Backend, DEADLINE, TestApp, fixture};

per_backend!(
    a_blocked_chat_gets_one_call_and_its_other_messages_are_dead,
    a_lost_reply_is_unknown_and_then_sent_again,
    a_lost_result_is_sent_again_when_nothing_newer_went_out,
);

fn to_chat(chat: i64) -> impl Fn(&Call) -> bool {
    move |c: &Call| c.params["chat_id"].as_i64() == Some(chat)
}

async fn a_blocked_chat_gets_one_call_and_its_other_messages_are_dead(backend: Backend) {
    let mut app = TestApp::create(backend, |_| {}).await;
    app.fake.block_chat(10, "Forbidden: bot was blocked by the user");
    // Two messages queued for the chat before anything is sent (the person blocked the bot
    // after writing), and one for another chat.
    let now = docket::domain::Clock::now(&docket::domain::SystemClock);
    let mut tx = app.store.begin().await.expect("tx");
    for (key, chat) in [("a", 10), ("b", 10), ("c", 11)] {
        let m = NewMessage {
            idempotency_key: key.into(),
            job: None,
            chat: ChatRef(chat),
            kind: MessageKind::Reply,
            body: format!("message {key}"),
            reply_to_message_id: None,
        };
        tx.enqueue(&m, now).await.expect("enqueue");
    }
    tx.commit().await.expect("commit");
    app.start().await;

    app.fake.wait_for_call("sendMessage", to_chat(11), DEADLINE).await;
    let dead = |m: &Vec<docket::store::OutboxMessage>| m.len() == 2 && m.iter().all(|m| m.state == OutboxState::Dead);
    app.wait_until_messages(ChatRef(10), dead).await;
    let calls: Vec<Call> = app.fake.calls().into_iter().filter(to_chat(10)).collect();
    assert_eq!(calls.len(), 1, "exactly one call to the blocked chat: {calls:?}");
    assert_eq!(calls[0].status, 403);

    // A message queued later (a job's result, say) is stored dead without a call.
    let mut tx = app.store.begin().await.expect("tx");
    let later = NewMessage {
        idempotency_key: "d".into(),
        job: None,
        chat: ChatRef(10),
        kind: MessageKind::Reply,
        body: "later".into(),
        reply_to_message_id: None,
    };
    tx.enqueue(&later, now).await.expect("enqueue");
    tx.commit().await.expect("commit");
    let three_dead =
        |m: &Vec<docket::store::OutboxMessage>| m.len() == 3 && m.iter().all(|m| m.state == OutboxState::Dead);
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
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        let m = app.store.messages(Some(docket::domain::ChatRef(20)), None).await.expect("read");
        if m.first().is_some_and(|m| m.state == OutboxState::Sent) {
            assert!(m[0].error.is_none(), "a delivery clears the error");
            assert_eq!(m[0].attempts, 2);
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never sent: {m:#?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(crate::support::logs::captured().contains("outcome unknown; sending again"));
}

async fn a_lost_result_is_sent_again_when_nothing_newer_went_out(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.fake.fail_next("sendDocument", Fault::ResponseLost);
    app.send_document(30, fixture("pdf/text-1page.pdf"), "lost.pdf", "application/pdf");
    let calls = app.fake.wait_for_calls("sendDocument", to_chat(30), 2, DEADLINE).await;
    assert_eq!(calls[0].params["caption"], calls[1].params["caption"]);
    let job = app.wait_for_job(Ticket(1), |j| j.result_file_id.is_some()).await;
    assert_eq!(job.state, JobState::Ready);
}
