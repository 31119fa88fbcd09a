//! Long polling that confirms an update only after it is recorded.
//!
//! teloxide's own polling listener confirms a batch as soon as it arrives and starts from offset
//! 0 after a restart. Here the offset lives in the database and moves in the same transaction
//! that records the update, so a crash between receiving and recording makes Telegram send the
//! update again, and the update registry drops it if it was in fact recorded. An update that
//! cannot be handled — unparsable, or one whose handling keeps failing — is recorded as rejected
//! with its reason, so it never holds the offset back.
//!
//! Telegram's refusals of getUpdates itself are handled as what they mean: a webhook set for the
//! bot (409) is deleted, keeping its waiting updates; another process polling with the same
//! token (409) is said plainly and waited out with a backoff; a refused token (401) ends polling
//! with an error, since nothing but a person can fix it.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, error, info, info_span, warn};
use url::Url;

use super::{Incoming, Intake, Recorded};
use crate::domain::retry::backoff_jittered;
use crate::domain::{BotId, UpdateId};
use crate::runtime::Heartbeat;
use crate::store::Store;
use crate::telegram::{TelegramClient, TelegramError};

/// How often handling one update may fail before it is recorded as rejected.
const MAX_HANDLING_FAILURES: u32 = 5;

/// The polling loop. Cheap to clone: a clone polls into the same intake.
#[derive(Debug, Clone)]
pub struct Poller {
    client: TelegramClient,
    store: Store,
    intake: Intake,
    answered: Arc<Heartbeat>,
}

impl Poller {
    /// What is left to do once an update's transaction committed: a button press is answered, so
    /// the person's app stops showing it as busy. Best effort.
    async fn after_commit(&self, recorded: &Recorded) {
        answer_press(&self.client, recorded).await;
    }

    /// A poller feeding `intake`.
    pub fn new(client: TelegramClient, store: Store, intake: Intake) -> Self {
        Self { client, store, intake, answered: Arc::new(Heartbeat::default()) }
    }

    /// The bot it polls for.
    pub fn bot_id(&self) -> BotId {
        self.client.bot_id()
    }

    /// Beats whenever getUpdates answers (with updates or none), so a health check can tell a
    /// poller that went silent.
    pub fn heartbeat(&self) -> Arc<Heartbeat> {
        Arc::clone(&self.answered)
    }

    /// Polls until `cancel` fires (then `Ok`).
    ///
    /// # Errors
    ///
    /// [`TelegramError::Unauthorized`] when the Bot API refuses the token: polling stops, and
    /// the caller stops the bot. Every other failure is waited out.
    pub async fn run(self, cancel: CancellationToken) -> Result<(), TelegramError> {
        let Some(offset) = self.read_offset(&cancel).await else { return Ok(()) };
        // A webhook makes every getUpdates fail; if getWebhookInfo fails now, the 409 of the
        // first poll leads here again.
        match self.delete_webhook_if_set().await {
            Ok(()) => {}
            Err(TelegramError::Unauthorized) => return Err(TelegramError::Unauthorized),
            Err(e) => warn!(error = %e, "cannot check whether a webhook is set; polling anyway"),
        }
        info!(offset, "polling for updates");
        let mut state = PollState { offset, errors: 0, store_failures: 0, failures_at: None };
        loop {
            let request = self.client.get_updates(state.offset);
            let batch = tokio::select! {
                () = cancel.cancelled() => return Ok(()),
                res = request => res,
            };
            let cancelled = match batch {
                Ok(updates) => {
                    state.errors = 0;
                    self.answered.beat();
                    metrics::counter!("docket_updates_received_total").increment(updates.len() as u64);
                    self.record_batch(updates, &mut state, &cancel).await
                }
                Err(e) => {
                    state.errors += 1;
                    self.wait_out(e, state.errors, &cancel).await?
                }
            };
            if cancelled {
                return Ok(());
            }
        }
    }

    /// The stored offset to poll from (0 the first time), read again every 2 s while the
    /// database cannot answer; `None` when cancelled first.
    async fn read_offset(&self, cancel: &CancellationToken) -> Option<i64> {
        loop {
            match self.store.poll_offset(self.client.bot_id()).await {
                Ok(o) => return Some(o.unwrap_or(0)),
                Err(e) => {
                    error!(error = %e, "cannot read the poll offset; retrying");
                    if sleep_or_cancel(Duration::from_secs(2), cancel).await {
                        return None;
                    }
                }
            }
        }
    }

    /// Waits out getUpdates' `errors`-th failure in a row, `e`, as what it means (a webhook set
    /// meanwhile is deleted); `true` when cancelled meanwhile.
    ///
    /// # Errors
    ///
    /// [`TelegramError::Unauthorized`]: the token was refused.
    async fn wait_out(&self, e: TelegramError, errors: u32, cancel: &CancellationToken) -> Result<bool, TelegramError> {
        let wait = match &e {
            TelegramError::RetryAfter(d) => *d,
            _ => backoff_jittered(errors, Duration::from_millis(500), Duration::from_secs(30)),
        };
        let wait_ms = wait.as_millis() as u64;
        match e {
            TelegramError::Unauthorized => return Err(e),
            // Set while docket runs (by another deployment of the bot, say).
            TelegramError::WebhookActive => match self.delete_webhook_if_set().await {
                Ok(()) => {}
                Err(TelegramError::Unauthorized) => return Err(TelegramError::Unauthorized),
                Err(e) => warn!(error = %e, wait_ms, "a webhook is set and cannot be deleted; retrying"),
            },
            TelegramError::OtherPoller => warn!(
                wait_ms,
                "another process is polling with the same token (409 Conflict): only one may poll at a time; \
                 retrying"
            ),
            // A wrong `[telegram] api_url` (or a proxy in front that lost its way): only a person
            // can fix it, so it is said loudly, and polled again.
            e @ TelegramError::NotFound(_) => error!(error = %e, wait_ms, "getUpdates failed; retrying"),
            e => warn!(error = %e, wait_ms, "getUpdates failed; retrying"),
        }
        Ok(sleep_or_cancel(wait, cancel).await)
    }

    /// Records a batch in order, moving `state`'s offset past each update recorded (or
    /// rejected); at the first that cannot be recorded now, waits and stops, so the next poll
    /// starts from it. `true` when cancelled meanwhile.
    async fn record_batch(
        &self,
        updates: Vec<(UpdateId, Incoming)>,
        state: &mut PollState,
        cancel: &CancellationToken,
    ) -> bool {
        for (update_id, incoming) in updates {
            let span = info_span!("update", update.id = %update_id);
            let handled =
                AssertUnwindSafe(self.intake.record(update_id, incoming).instrument(span)).catch_unwind().await;
            let failure = match handled {
                Ok(Ok(recorded)) => {
                    self.after_commit(&recorded).await;
                    state.recorded(update_id);
                    continue;
                }
                Ok(Err(e)) if e.is_transient() => {
                    // The database is busy, away, full or read-only: never reject an update for
                    // that. It stays unconfirmed (the offset stays before it), and is polled
                    // again after a growing wait.
                    state.store_failures += 1;
                    let wait =
                        backoff_jittered(state.store_failures, Duration::from_millis(200), Duration::from_secs(10));
                    warn!(update.id = %update_id, error = %e, wait_ms = wait.as_millis() as u64, "cannot record an update now; polling it again");
                    return sleep_or_cancel(wait, cancel).await;
                }
                Ok(Err(e)) => e.to_string(),
                Err(_) => "handling the update panicked".to_owned(),
            };
            let count = state.failed(update_id);
            if count >= MAX_HANDLING_FAILURES && self.reject(update_id, count, &failure).await {
                state.recorded(update_id);
                continue;
            }
            if count < MAX_HANDLING_FAILURES {
                warn!(update.id = %update_id, error = %failure, attempt = count, "handling an update failed; it will be polled again");
            }
            // Poll again from this update: Telegram sends it (and the rest) again.
            let wait = backoff_jittered(count, Duration::from_millis(200), Duration::from_secs(10));
            return sleep_or_cancel(wait, cancel).await;
        }
        false
    }

    /// Records an update whose handling failed `count` times (a bug or a poisoned update) as
    /// rejected, so it holds the offset back no longer; `false` when that failed too.
    async fn reject(&self, update_id: UpdateId, count: u32, failure: &str) -> bool {
        let reason = format!("gave up after {count} failures: {failure}");
        error!(update.id = %update_id, error = %failure, "recording update as rejected");
        match self.intake.record(update_id, Incoming::Malformed(reason)).await {
            Ok(_) => true,
            Err(e) => {
                error!(update.id = %update_id, error = %e, "cannot record the rejected update either");
                false
            }
        }
    }

    /// Deletes the bot's webhook if one is set (getWebhookInfo, deleteWebhook), saying so. The
    /// updates waiting for the webhook are kept: the next getUpdates receives them.
    async fn delete_webhook_if_set(&self) -> Result<(), TelegramError> {
        let Some(url) = self.client.webhook().await? else { return Ok(()) };
        // The URL's path and query often hold a secret (the token, a secret path): only the
        // origin is logged.
        warn!(
            webhook = %origin(&url),
            "a webhook is set for this bot, which makes getUpdates fail; deleting it (its waiting updates are kept)"
        );
        self.client.delete_webhook().await?;
        info!("deleted the webhook; polling for updates instead");
        Ok(())
    }
}

/// Where polling stands: the offset to confirm next, and the failures counted so far.
struct PollState {
    /// The next getUpdates' offset: every update before it is recorded.
    offset: i64,
    /// getUpdates' failures in a row.
    errors: u32,
    /// Updates that could not be recorded now, in a row. Counted apart from `errors`: getUpdates
    /// answering says nothing about the database, so the backoff keeps growing for as long as
    /// updates cannot be recorded.
    store_failures: u32,
    /// The update whose handling failed last, and how often in a row.
    failures_at: Option<(UpdateId, u32)>,
}

impl PollState {
    /// `update_id` is recorded (or rejected): the offset moves past it, the failures are forgotten.
    fn recorded(&mut self, update_id: UpdateId) {
        self.offset = update_id.next_offset();
        self.failures_at = None;
        self.store_failures = 0;
    }

    /// Handling `update_id` failed once more: how often in a row now.
    fn failed(&mut self, update_id: UpdateId) -> u32 {
        let count = match self.failures_at {
            Some((id, n)) if id == update_id => n + 1,
            _ => 1,
        };
        self.failures_at = Some((update_id, count));
        count
    }
}

/// A URL's scheme, host and port, without user info, path, query or fragment.
fn origin(url: &Url) -> String {
    let host = url.host_str().unwrap_or("(no host)");
    match url.port() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

/// Sleeps for `d`; `true` when cancelled first.
pub async fn sleep_or_cancel(d: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        () = cancel.cancelled() => true,
        () = tokio::time::sleep(d) => false,
    }
}

/// Answers the callback query of a button press that `recorded` reports (answerCallbackQuery),
/// after its transaction committed. Best effort: an unanswered press only spins for a while in
/// the person's app.
pub async fn answer_press(client: &TelegramClient, recorded: &Recorded) {
    if let Recorded::Pressed { query_id } = recorded
        && let Err(e) = client.answer_button(query_id).await
    {
        warn!(error = %e, "could not answer a button press");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_is_named_by_its_origin_alone() {
        let url = Url::parse("https://user:pw@hooks.example.org:8443/bot123:SECRET/x?secret_token=abc#f")
            .expect("a valid URL");
        assert_eq!(origin(&url), "https://hooks.example.org:8443");
        let url = Url::parse("https://hooks.example.org/123:SECRET").expect("a valid URL");
        assert_eq!(origin(&url), "https://hooks.example.org");
    }
}
