//! Chat languages: a chat follows its writers' Telegram language until `/lang` chooses one, and a
//! choice is kept until the next one, per chat.

use super::{CHAT, OTHER_CHAT, T0, at};
use crate::store::Store;

conformance!(
    a_chat_follows_its_writers_language_until_one_is_chosen,
    a_chosen_language_stays_until_the_next_choice,
    each_chat_has_its_own_language,
    a_migrated_group_keeps_its_language,
);

/// The language code the store keeps for `chat` (what `chat_lang` reads it from).
async fn language(store: &Store, chat: crate::domain::ChatRef) -> Option<String> {
    crate::store::languages::of_chat(&mut store.acquire().await.unwrap().conn(), chat).await.unwrap()
}

async fn a_chat_follows_its_writers_language_until_one_is_chosen(store: Store) {
    assert_eq!(language(&store, CHAT).await, None, "nothing known yet");
    let mut tx = store.begin().await.unwrap();
    tx.note_language(CHAT, "ru", T0).await.unwrap();
    assert_eq!(tx.chat_lang(CHAT).await.unwrap().code(), "ru", "seen inside the transaction");
    tx.commit().await.unwrap();
    assert_eq!(language(&store, CHAT).await.as_deref(), Some("ru"));
    let mut tx = store.begin().await.unwrap();
    tx.note_language(CHAT, "en-GB", at(1)).await.unwrap();
    tx.note_language(CHAT, "en-GB", at(2)).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(language(&store, CHAT).await.as_deref(), Some("en-GB"), "the last writer's");
}

async fn a_chosen_language_stays_until_the_next_choice(store: Store) {
    let mut tx = store.begin().await.unwrap();
    tx.note_language(CHAT, "en", T0).await.unwrap();
    tx.choose_language(CHAT, "ru", at(1)).await.unwrap();
    tx.commit().await.unwrap();
    let mut tx = store.begin().await.unwrap();
    tx.note_language(CHAT, "en", at(2)).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(language(&store, CHAT).await.as_deref(), Some("ru"), "a writer's app does not undo a choice");
    let mut tx = store.begin().await.unwrap();
    tx.choose_language(CHAT, "en", at(3)).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(language(&store, CHAT).await.as_deref(), Some("en"), "a new choice replaces the old one");
    // A choice made before anything was noted counts as well.
    let mut tx = store.begin().await.unwrap();
    tx.choose_language(OTHER_CHAT, "ru", at(4)).await.unwrap();
    tx.note_language(OTHER_CHAT, "en", at(5)).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(language(&store, OTHER_CHAT).await.as_deref(), Some("ru"));
}

async fn each_chat_has_its_own_language(store: Store) {
    let mut tx = store.begin().await.unwrap();
    tx.choose_language(CHAT, "ru", T0).await.unwrap();
    tx.note_language(OTHER_CHAT, "en", T0).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(language(&store, CHAT).await.as_deref(), Some("ru"));
    assert_eq!(language(&store, OTHER_CHAT).await.as_deref(), Some("en"));
    // A rolled-back choice leaves nothing behind.
    let mut tx = store.begin().await.unwrap();
    tx.choose_language(OTHER_CHAT, "ru", at(1)).await.unwrap();
    drop(tx);
    assert_eq!(language(&store, OTHER_CHAT).await.as_deref(), Some("en"));
}

async fn a_migrated_group_keeps_its_language(store: Store) {
    let group = crate::domain::ChatRef(-5);
    let mut tx = store.begin().await.unwrap();
    tx.choose_language(group, "ru", T0).await.unwrap();
    tx.commit().await.unwrap();
    store.migrate_chat(group, CHAT, at(1)).await.unwrap();
    assert_eq!(language(&store, CHAT).await.as_deref(), Some("ru"));
    assert_eq!(language(&store, group).await, None);
}
