//! Pacing: a paused chat (or the whole bot) waits while others flow, and the global send slots
//! are spaced for every sender together.

use std::time::Duration;

use super::{CHAT, LEASE, OTHER_CHAT, T0, at, claim_message, enqueue, message};
use crate::domain::MessageId;
use crate::domain::{MessageKind, Paced, Timestamp};
use crate::store::Store;

conformance!(paced_chats_wait_and_others_flow, send_slots_are_spaced_for_every_sender);

async fn paced_chats_wait_and_others_flow(store: Store) {
    assert_eq!(store.next_message_due().await.unwrap(), None, "nothing pending");
    assert!(enqueue(&store, &message("a1", CHAT, MessageKind::Reply, None), T0).await);
    assert!(enqueue(&store, &message("a2", CHAT, MessageKind::Reply, None), T0).await);
    assert!(enqueue(&store, &message("b1", OTHER_CHAT, MessageKind::Reply, None), T0).await);
    assert_eq!(store.next_message_due().await.unwrap(), Some(Timestamp::from_millis(0)));

    // CHAT is paused (a 429 for it): OTHER_CHAT still flows.
    store.pace_chat(CHAT, at(3_000), "429").await.unwrap();
    store.pace_chat(CHAT, at(1_000), "rate limit").await.unwrap(); // an earlier pace never shortens it
    assert_eq!(store.pacing(T0).await.unwrap(), [(Paced::Chat(CHAT), at(3_000), "429".to_owned())]);
    let (b, bl) = claim_message(&store, "s", T0).await;
    assert_eq!(b.chat, OTHER_CHAT);
    assert!(store.claim_message("s", at(2_999), LEASE).await.unwrap().is_none());
    assert!(store.mark_message_sent(&b, &bl, MessageId(1), None, at(1)).await.unwrap());
    assert_eq!(store.next_message_due().await.unwrap(), Some(at(3_000)), "a2 waits behind a1");
    let (a, _) = claim_message(&store, "s", at(3_000)).await;
    assert_eq!(a.idempotency_key.as_str(), "a1");

    // The bot as a whole paused: nobody is served, and the due time says so.
    assert!(enqueue(&store, &message("b2", OTHER_CHAT, MessageKind::Reply, None), at(4)).await);
    store.pause_whole_bot(at(9_000), "429 for the bot").await.unwrap();
    assert!(store.claim_message("s", at(8_999), LEASE).await.unwrap().is_none());
    assert_eq!(store.next_message_due().await.unwrap(), Some(at(9_000)));
    let (b2, _) = claim_message(&store, "s", at(9_000)).await;
    assert_eq!(b2.idempotency_key.as_str(), "b2");
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
