//! Honest answers from and to Telegram: what docket does when an answer does not come in time,
//! or not in any of a message's attempts.

use std::time::Duration;

use docket::app::Options;
use docket::domain::{ChatRef, OutboxState};
use docket::store::OutboxMessage;

use crate::per_backend;
use crate::support::fake_telegram::{Call, Fault};
use crate::support::{Backend, DEADLINE, TestApp, test_options};

per_backend!(
    a_send_that_times_out_is_unknown_and_sent_again,
    a_message_still_unknown_after_its_attempts_fails_and_alerts_the_admins,
);

fn to_chat(chat: i64) -> impl Fn(&Call) -> bool {
    move |c: &Call| c.params["chat_id"].as_i64() == Some(chat)
}

/// The one outbox row of `chat`.
async fn only_message(app: &TestApp, chat: i64) -> OutboxMessage {
    let mut messages = app.store.messages(Some(ChatRef(chat)), None).await.expect("store reads");
    assert_eq!(messages.len(), 1, "{messages:#?}");
    messages.remove(0)
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
    second.arrived(DEADLINE).await;
    let row = only_message(&app, 110).await;
    assert_eq!((row.state, row.attempts), (OutboxState::Sending, 2), "{row:#?}");
    let note = row.error.clone().unwrap_or_default();
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
