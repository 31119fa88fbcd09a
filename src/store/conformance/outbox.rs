//! The outbox: one row per idempotency key, the order within a chat and across chats, coalesced
//! progress edits, chat migrations, and messages whose outcome is unknown.

use std::time::Duration;

use tokio::task::JoinSet;

use super::{
    CHAT, LEASE, OTHER_CHAT, T0, at, claim_message, completion, enqueue, insert, job, message, new_job, processing_job,
};
use crate::domain::MessageId;
use crate::domain::{ChatRef, JobState, MessageKind, NewMessage, OutboxState};
use crate::store::MessageFilter;
use crate::store::Store;

conformance!(
    enqueue_is_idempotent_per_key,
    outbox_keeps_order_per_chat,
    outbox_order_holds_under_concurrency,
    replies_go_before_results_across_chats,
    a_sent_result_keeps_its_file_id,
    a_migrated_chat_takes_its_messages_and_jobs,
    progress_edits_coalesce_and_never_hold_a_chat_back,
    only_an_unknown_message_is_given_up_as_failed,
);

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

    let queued = store.messages(&MessageFilter::job(ticket)).await.unwrap();
    assert_eq!(queued.len(), 1);
    let m = &queued[0];
    assert_eq!((m.idempotency_key.as_str(), m.body.as_str()), ("job:1:ticket", "body of job:1:ticket"));
    assert_eq!(
        (m.kind, m.state, m.attempts, m.lease.as_ref()),
        (MessageKind::TicketReply, OutboxState::Pending, 0, None)
    );
    assert_eq!((m.chat, m.job, m.reply_to_message_id), (CHAT, Some(ticket), Some(MessageId(500))));
    assert_eq!(store.messages(&MessageFilter::chat(CHAT)).await.unwrap().len(), 2);
    assert!(store.messages(&MessageFilter::chat(OTHER_CHAT)).await.unwrap().is_empty());
    assert_eq!(store.messages(&MessageFilter::ALL).await.unwrap().len(), 2);
}

async fn outbox_keeps_order_per_chat(store: Store) {
    let a = ChatRef(1);
    let b = ChatRef(2);
    assert!(enqueue(&store, &message("a1", a, MessageKind::Result, None), T0).await);
    assert!(enqueue(&store, &message("a2", a, MessageKind::Reply, None), T0).await);
    assert!(enqueue(&store, &message("b1", b, MessageKind::Result, None), T0).await);

    // a2 is a reply (priority 0) but waits behind a1 of the same chat; b1 does not wait for a.
    let (a1, a1_lease) = claim_message(&store, "s", T0).await;
    assert_eq!(a1.idempotency_key.as_str(), "a1");
    let (b1, b1_lease) = claim_message(&store, "s", T0).await;
    assert_eq!(b1.idempotency_key.as_str(), "b1");
    assert!(store.claim_message("s", T0, LEASE).await.unwrap().is_none(), "a2 waits while a1 is sending");

    // A retried a1 is pending again and still holds a2 back until it is sent.
    assert!(store.retry_message(a1.id, &a1_lease, at(10_000), "429", at(1)).await.unwrap());
    let retried = &store.messages(&MessageFilter::chat(a)).await.unwrap()[0];
    assert_eq!(
        (retried.state, retried.error.as_deref(), retried.lease.as_ref()),
        (OutboxState::Pending, Some("429"), None)
    );
    assert!(store.claim_message("s", at(1), LEASE).await.unwrap().is_none(), "a1 is not due, a2 waits for it");
    let (again, again_lease) = claim_message(&store, "s", at(10_000)).await;
    assert_eq!((again.id, again.attempts), (a1.id, 2));
    assert!(store.mark_message_sent(&again, &again_lease, MessageId(11), None, at(10_001)).await.unwrap());
    let (a2, _) = claim_message(&store, "s", at(10_002)).await;
    assert_eq!(a2.idempotency_key.as_str(), "a2");

    // A row that ended (here: dead chat) no longer holds later rows back.
    assert!(enqueue(&store, &message("b2", b, MessageKind::Reply, None), at(10_003)).await);
    assert!(store.claim_message("s", at(10_004), LEASE).await.unwrap().is_none(), "b2 waits for b1");
    assert!(store.close_message(b1.id, &b1_lease, OutboxState::Dead, "blocked", at(10_005)).await.unwrap());
    let closed = &store.messages(&MessageFilter::chat(b)).await.unwrap()[0];
    assert_eq!((closed.state, closed.error.as_deref()), (OutboxState::Dead, Some("blocked")));
    let (b2, _) = claim_message(&store, "s", at(10_006)).await;
    assert_eq!(b2.idempotency_key.as_str(), "b2");
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
                for other in store.messages(&MessageFilter::chat(m.chat)).await.unwrap() {
                    let expected = match other.id.cmp(&m.id) {
                        std::cmp::Ordering::Less => OutboxState::Sent,
                        std::cmp::Ordering::Equal => OutboxState::Sending,
                        std::cmp::Ordering::Greater => OutboxState::Pending,
                    };
                    assert_eq!(other.state, expected, "row {} while {} is held", other.id, m.id);
                }
                let lease = m.lease.clone().unwrap();
                assert!(store.mark_message_sent(&m, &lease, MessageId(m.id.0), None, T0).await.unwrap());
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
        assert!(store.mark_message_sent(&m, m.lease.as_ref().unwrap(), MessageId(m.id.0), None, T0).await.unwrap());
        total += 1;
    }
    assert_eq!(total, 20);
    assert!(
        store
            .messages(&MessageFilter::ALL)
            .await
            .unwrap()
            .iter()
            .all(|m| m.state == OutboxState::Sent && m.attempts == 1)
    );
}

async fn replies_go_before_results_across_chats(store: Store) {
    assert!(enqueue(&store, &message("result-1", ChatRef(1), MessageKind::Result, None), T0).await);
    assert!(enqueue(&store, &message("failure-2", ChatRef(2), MessageKind::Failure, None), T0).await);
    assert!(enqueue(&store, &message("reply-3", ChatRef(3), MessageKind::Reply, None), T0).await);
    assert!(enqueue(&store, &message("ticket-4", ChatRef(4), MessageKind::TicketReply, None), T0).await);
    let mut order = Vec::new();
    while let Some(m) = store.claim_message("s", at(1), LEASE).await.unwrap() {
        order.push(m.idempotency_key.to_string());
    }
    assert_eq!(order, ["reply-3", "ticket-4", "result-1", "failure-2"]);
}

async fn a_sent_result_keeps_its_file_id(store: Store) {
    let (ticket, lease) = processing_job(&store, 1, T0).await;
    let delivery = message("job:1:result", CHAT, MessageKind::Result, Some(ticket));
    assert!(store.complete_job(ticket, &lease, &completion(1), std::slice::from_ref(&delivery), at(1)).await.unwrap());
    let (m, mlease) = claim_message(&store, "s", at(2)).await;
    assert_eq!((m.kind, m.job), (MessageKind::Result, Some(ticket)));
    assert!(store.mark_message_sent(&m, &mlease, MessageId(9_001), Some("BQACAgIAAxkBAAI"), at(3)).await.unwrap());
    assert_eq!(job(&store, ticket).await.result.and_then(|r| r.telegram_file_id).as_deref(), Some("BQACAgIAAxkBAAI"));
    let sent = &store.messages(&MessageFilter::job(ticket)).await.unwrap()[0];
    assert_eq!(
        (sent.state, sent.telegram_message_id, sent.lease.as_ref(), sent.error.as_deref()),
        (OutboxState::Sent, Some(MessageId(9_001)), None, None)
    );
    assert!(!store.mark_message_sent(&m, &mlease, MessageId(9_002), Some("other"), at(4)).await.unwrap(), "only once");
    assert_eq!(job(&store, ticket).await.result.and_then(|r| r.telegram_file_id).as_deref(), Some("BQACAgIAAxkBAAI"));

    // A text message about the job leaves the file_id alone; forgetting clears it.
    assert!(enqueue(&store, &message("job:1:status", CHAT, MessageKind::Reply, Some(ticket)), at(5)).await);
    let (text, tlease) = claim_message(&store, "s", at(6)).await;
    assert!(store.mark_message_sent(&text, &tlease, MessageId(9_003), None, at(7)).await.unwrap());
    assert_eq!(job(&store, ticket).await.result.and_then(|r| r.telegram_file_id).as_deref(), Some("BQACAgIAAxkBAAI"));
    store.forget_result_file_id(ticket, at(8)).await.unwrap();
    let forgotten = job(&store, ticket).await;
    assert_eq!(
        (forgotten.result.and_then(|r| r.telegram_file_id), forgotten.updated_at, forgotten.state),
        (None, at(8), JobState::Ready)
    );
}

async fn a_migrated_chat_takes_its_messages_and_jobs(store: Store) {
    const SUPERGROUP: ChatRef = ChatRef(-1_009_999_999_999);
    let ticket = insert(&store, &new_job(CHAT, 1), T0).await;
    assert!(enqueue(&store, &message("t1", CHAT, MessageKind::TicketReply, Some(ticket)), T0).await);
    assert!(enqueue(&store, &message("t2", CHAT, MessageKind::Reply, None), T0).await);
    let (first, lease) = claim_message(&store, "s", T0).await;
    assert_eq!(store.migrate_chat(CHAT, SUPERGROUP, at(1)).await.unwrap(), 2);
    assert!(store.retry_message(first.id, &lease, at(1), "moved", at(1)).await.unwrap());
    let moved = store.messages(&MessageFilter::chat(SUPERGROUP)).await.unwrap();
    assert_eq!(
        moved.iter().map(|m| (m.idempotency_key.as_str(), m.state, m.reply_to_message_id)).collect::<Vec<_>>(),
        [("t1", OutboxState::Pending, None), ("t2", OutboxState::Pending, None)]
    );
    assert!(store.messages(&MessageFilter::chat(CHAT)).await.unwrap().is_empty());
    assert_eq!(job(&store, ticket).await.submission.chat, SUPERGROUP);
    let (again, _) = claim_message(&store, "s", at(2)).await;
    assert_eq!((again.id, again.chat), (first.id, SUPERGROUP));
}

async fn progress_edits_coalesce_and_never_hold_a_chat_back(store: Store) {
    // A ready job: its result can be sent.
    let (ticket, lease) = processing_job(&store, 1, T0).await;
    assert!(store.complete_job(ticket, &lease, &completion(1), &[], T0).await.unwrap());
    let progress = |body: &str| NewMessage {
        body: body.to_owned(),
        reply_to_message_id: None,
        buttons: Vec::new(),
        ..message("job:1:progress", CHAT, MessageKind::Progress, Some(ticket))
    };
    let bodies = |store: Store| async move {
        let all = store.messages(&MessageFilter::chat(CHAT)).await.unwrap();
        all.iter().map(|m| (m.kind, m.state, m.body.clone())).collect::<Vec<_>>()
    };
    assert!(enqueue(&store, &message("job:1:ticket", CHAT, MessageKind::TicketReply, Some(ticket)), T0).await);
    assert!(enqueue(&store, &progress("downloading"), at(1)).await);
    assert!(enqueue(&store, &progress("processing"), at(2)).await, "coalesced into the waiting row");
    assert!(!enqueue(&store, &progress("processing"), at(2)).await, "the same text changes nothing");
    assert!(enqueue(&store, &message("job:1:result", CHAT, MessageKind::Result, Some(ticket)), at(3)).await);
    assert_eq!(store.messages(&MessageFilter::chat(CHAT)).await.unwrap().len(), 3);

    // The ticket reply first; while it is in flight nothing else of the chat is claimable.
    let (reply, reply_lease) = claim_message(&store, "s", at(4)).await;
    assert_eq!(reply.kind, MessageKind::TicketReply);
    assert!(store.claim_message("s", at(4), LEASE).await.unwrap().is_none(), "one call per chat at a time");
    assert_eq!(store.status_message(ticket).await.unwrap(), None, "not delivered yet");
    assert!(store.mark_message_sent(&reply, &reply_lease, MessageId(77), None, at(5)).await.unwrap());
    assert_eq!(store.status_message(ticket).await.unwrap(), Some(MessageId(77)));

    // The result overtakes the older progress edit.
    let (result, result_lease) = claim_message(&store, "s", at(6)).await;
    assert_eq!(result.kind, MessageKind::Result);
    assert!(store.mark_message_sent(&result, &result_lease, MessageId(78), None, at(7)).await.unwrap());

    // A new state arrives while the edit is in flight: it goes out again with the newest text.
    // (A new edit waits PROGRESS_SETTLE first, so a state over in less is never shown.)
    let settled = at(1).plus(crate::domain::PROGRESS_SETTLE);
    assert!(store.claim_message("s", settled.minus(Duration::from_millis(1)), LEASE).await.unwrap().is_none());
    let (edit, edit_lease) = claim_message(&store, "s", settled).await;
    assert_eq!((edit.kind, edit.body.as_str()), (MessageKind::Progress, "processing"));
    assert!(enqueue(&store, &progress("ready"), settled).await);
    assert!(store.mark_message_sent(&edit, &edit_lease, MessageId(77), None, settled).await.unwrap());
    let (again, again_lease) = claim_message(&store, "s", settled).await;
    assert_eq!((again.id, again.body.as_str()), (edit.id, "ready"));
    assert!(store.mark_message_sent(&again, &again_lease, MessageId(77), None, settled).await.unwrap());
    assert!(bodies(store.clone()).await.iter().all(|(_, state, _)| *state == OutboxState::Sent));

    // A report of an older state arriving late (workers race) changes nothing, sent or not.
    assert!(!enqueue(&store, &progress("downloaded"), at(500)).await, "older than the state shown");
    let shown = store.messages(&MessageFilter::chat(CHAT)).await.unwrap();
    let shown = shown.iter().find(|m| m.kind == MessageKind::Progress).map(|m| (m.state, m.body.clone()));
    assert_eq!(shown, Some((OutboxState::Sent, "ready".to_owned())));

    // A delivered edit is re-armed as a new row, behind what the chat has waiting.
    let later = settled.plus(Duration::from_millis(1));
    assert!(enqueue(&store, &message("later", CHAT, MessageKind::Reply, None), later).await);
    assert!(enqueue(&store, &progress("expired"), later).await);
    let rows = store.messages(&MessageFilter::chat(CHAT)).await.unwrap();
    let progress_rows: Vec<_> = rows.iter().filter(|m| m.kind == MessageKind::Progress).collect();
    assert_eq!(progress_rows.len(), 1, "still one row per job");
    assert!(progress_rows[0].id > edit.id && progress_rows[0].state == OutboxState::Pending);
    let later_id = rows.iter().find(|m| m.idempotency_key.as_str() == "later").map(|m| m.id);
    assert!(Some(progress_rows[0].id) > later_id);
}

async fn only_an_unknown_message_is_given_up_as_failed(store: Store) {
    assert!(enqueue(&store, &message("lost", CHAT, MessageKind::Reply, None), T0).await);
    let (m, lease) = claim_message(&store, "s1", T0).await;
    assert!(!store.fail_unknown(m.id, "gave up", T0).await.unwrap(), "a row being sent is not unknown");
    assert!(store.close_message(m.id, &lease, OutboxState::Unknown, "timed out", T0).await.unwrap());
    assert!(store.fail_unknown(m.id, "outcome unknown after 1 attempt", at(1)).await.unwrap());
    let failed = store.messages(&MessageFilter::ALL).await.unwrap().remove(0);
    assert_eq!((failed.state, failed.error.as_deref()), (OutboxState::Failed, Some("outcome unknown after 1 attempt")));
    assert!(!store.fail_unknown(m.id, "again", at(2)).await.unwrap(), "once");
    assert!(!store.requeue_unknown(m.id, at(2), "sent again", at(2)).await.unwrap(), "failed is final");
    assert!(store.claim_message("s2", at(2), LEASE).await.unwrap().is_none());
}
