//! The watch on this host's data folder: its free space against `[storage] min_free`, checked
//! every few seconds by the janitor's loop. Below it no download starts and a run that would
//! write past it stops (the pipeline's rule, `pipeline/claim.rs` and `process.rs`); a write that
//! hits a full disk anyway gives its attempt back (`StageError::io`). What this adds is that
//! people who can free space hear of it, once per episode: one warning in the log when free
//! space falls below the line and one line when it is back, and one message to each admin per
//! episode, not one per job that waits. `/healthz` and the `docket_data_free_bytes` and
//! `docket_data_folder_low` gauges read the same line at each request (`app/health.rs`).

use std::sync::Mutex;

use tracing::{info, warn};

use super::JanitorDeps;
use crate::domain::{ChatRef, IdempotencyKey, MessageKind, NewMessage, Timestamp};
use crate::store::StoreResult;
use crate::texts;

/// Whether the data folder is below `[storage] min_free`, and since when.
#[derive(Debug, Default)]
pub struct DiskWatch {
    low_since: Mutex<Option<Timestamp>>,
}

/// What one look at the free space found, against the look before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Free space fell below the line at this time: a new episode.
    BecameLow(Timestamp),
    /// Still below it, since then.
    StillLow(Timestamp),
    /// Back above it after an episode that began then.
    Recovered(Timestamp),
    /// Above it, as before.
    Fine,
}

impl DiskWatch {
    /// Notes `free` bytes at `now` against `min_free`.
    pub fn observe(&self, free: u64, min_free: u64, now: Timestamp) -> Change {
        let mut since = self.low_since.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match (*since, free < min_free) {
            (None, true) => {
                *since = Some(now);
                Change::BecameLow(now)
            }
            (Some(began), true) => Change::StillLow(began),
            (Some(began), false) => {
                *since = None;
                Change::Recovered(began)
            }
            (None, false) => Change::Fine,
        }
    }
}

/// Looks at the data folder's free space once: at an episode's start and end the log line, and
/// at its start the admins' message.
pub(super) async fn watch(deps: &JanitorDeps) {
    let Ok(free) = fs4::available_space(deps.spool.root()) else { return };
    let min_free = deps.settings.get().min_free;
    let now = deps.clock.now();
    match deps.disk.observe(free, min_free, now) {
        Change::BecameLow(since) => {
            warn!(
                free_bytes = free,
                min_free_bytes = min_free,
                "free space on the data folder is below [storage] min_free: no download starts until \
                 space is freed; jobs wait, they do not fail"
            );
            if let Err(e) = tell_admins(deps, free, min_free, since).await {
                warn!(error = %e, "cannot queue the admins' message that the data folder is low");
            }
        }
        Change::Recovered(since) => {
            info!(
                free_bytes = free,
                low_for_s = since.until(now).as_secs(),
                "free space on the data folder is back above [storage] min_free; downloads go on"
            );
        }
        Change::StillLow(_) | Change::Fine => {}
    }
}

/// One message to each admin for the episode that began at `since` (its key holds the episode,
/// so a restart's new episode is a new message, and a repeat of this one is none).
async fn tell_admins(deps: &JanitorDeps, free: u64, min_free: u64, since: Timestamp) -> StoreResult<()> {
    let admins = deps.settings.get().admins.clone();
    if admins.is_empty() {
        return Ok(());
    }
    let now = deps.clock.now();
    let mut tx = deps.store.begin().await?;
    for admin in admins {
        let chat = ChatRef(admin);
        let lang = tx.chat_lang(chat).await?;
        let alert = NewMessage {
            idempotency_key: IdempotencyKey::data_folder_low_alert(chat, &deps.node, since),
            job: None,
            chat,
            kind: MessageKind::Reply,
            body: texts::data_folder_low_alert(lang, &deps.node, free, min_free),
            reply_to_message_id: None,
            buttons: Vec::new(),
            part: None,
        };
        tx.enqueue(&alert, now).await?;
    }
    tx.commit().await?;
    deps.outbox.notify_waiters();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_episode_begins_once_and_ends_once() {
        let watch = DiskWatch::default();
        let at = Timestamp::from_millis;
        assert_eq!(watch.observe(100, 50, at(1)), Change::Fine);
        assert_eq!(watch.observe(10, 50, at(2)), Change::BecameLow(at(2)));
        assert_eq!(watch.observe(5, 50, at(3)), Change::StillLow(at(2)), "one episode, however long");
        assert_eq!(watch.observe(60, 50, at(4)), Change::Recovered(at(2)));
        assert_eq!(watch.observe(60, 50, at(5)), Change::Fine);
        assert_eq!(watch.observe(1, 50, at(6)), Change::BecameLow(at(6)), "a new episode after recovery");
    }
}
