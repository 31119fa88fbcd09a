//! Updates and the poll offset: intake registers each update once, and the offset only moves
//! forward.

use super::{BOT, T0, at};
use crate::domain::Timestamp;
use crate::domain::{BotId, UpdateId};
use crate::store::{Store, UpdateOutcome};

conformance!(intake_is_idempotent_per_update, the_poll_offset_never_moves_back);

async fn intake_is_idempotent_per_update(store: Store) {
    let mut tx = store.begin().await.unwrap();
    assert!(tx.register_update(BOT, UpdateId(100), UpdateOutcome::Recorded, None, T0).await.unwrap());
    assert!(
        !tx.register_update(BOT, UpdateId(100), UpdateOutcome::Recorded, None, T0).await.unwrap(),
        "same transaction"
    );
    tx.commit().await.unwrap();

    let mut tx = store.begin().await.unwrap();
    assert!(!tx.register_update(BOT, UpdateId(100), UpdateOutcome::Rejected, Some("again"), at(1)).await.unwrap());
    assert!(
        tx.register_update(BotId(BOT.0 + 1), UpdateId(100), UpdateOutcome::Recorded, None, at(1)).await.unwrap(),
        "another bot"
    );
    assert!(tx.register_update(BOT, UpdateId(101), UpdateOutcome::Rejected, Some("malformed"), at(1)).await.unwrap());
    tx.commit().await.unwrap();

    assert_eq!(store.update_outcome(BOT, UpdateId(100)).await.unwrap(), Some((UpdateOutcome::Recorded, None)));
    assert_eq!(
        store.update_outcome(BOT, UpdateId(101)).await.unwrap(),
        Some((UpdateOutcome::Rejected, Some("malformed".to_owned())))
    );
    assert_eq!(store.update_outcome(BOT, UpdateId(102)).await.unwrap(), None);

    // A registration that was rolled back did not happen.
    let mut tx = store.begin().await.unwrap();
    assert!(tx.register_update(BOT, UpdateId(102), UpdateOutcome::Recorded, None, at(2)).await.unwrap());
    drop(tx);
    assert_eq!(store.update_outcome(BOT, UpdateId(102)).await.unwrap(), None);
    let mut tx = store.begin().await.unwrap();
    assert!(tx.register_update(BOT, UpdateId(102), UpdateOutcome::Recorded, None, at(3)).await.unwrap());
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
    assert_eq!(store.poll_offset(BotId(BOT.0 + 1)).await.unwrap(), None, "per bot");
}
