//! Long polling that confirms an update only after it is recorded.
//!
//! teloxide's own polling listener confirms a batch as soon as it arrives and starts from offset
//! 0 after a restart. Here the offset lives in the database and moves in the same transaction
//! that records the update, so a crash between receiving and recording makes Telegram send the
//! update again, and the update registry drops it if it was in fact recorded. An update that
//! cannot be handled — unparsable, or one whose handling keeps failing — is recorded as rejected
//! with its reason, so it never holds the offset back.
//!
//! A refused token (401) ends polling with an error, since nothing but a person can fix it.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures_util::FutureExt;
use teloxide::payloads::GetUpdatesSetters;
use teloxide::prelude::Requester;
use teloxide::types::AllowedUpdate;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, error, info, info_span, warn};

use crate::domain::retry::backoff_jittered;
use crate::intake::{Incoming, Intake};
use crate::store::Store;
use crate::telegram::{TelegramClient, TelegramError, updates};

/// How often handling one update may fail before it is recorded as rejected.
const MAX_HANDLING_FAILURES: u32 = 5;

/// The polling loop.
#[derive(Debug)]
pub struct Poller {
    client: TelegramClient,
    store: Store,
    intake: Intake,
}

impl Poller {
    /// A poller feeding `intake`.
    pub fn new(client: TelegramClient, store: Store, intake: Intake) -> Self {
        Self { client, store, intake }
    }

    /// Polls until `cancel` fires (then `Ok`).
    ///
    /// # Errors
    ///
    /// [`TelegramError::Unauthorized`] when the Bot API refuses the token: polling stops, and
    /// the caller stops the bot. Every other failure is waited out.
    pub async fn run(self, cancel: CancellationToken) -> Result<(), TelegramError> {
        let bot_id = self.client.bot_id();
        let mut offset = loop {
            match self.store.poll_offset(bot_id).await {
                Ok(o) => break o.unwrap_or(0),
                Err(e) => {
                    error!(error = %e, "cannot read the poll offset; retrying");
                    if sleep_or_cancel(Duration::from_secs(2), &cancel).await {
                        return Ok(());
                    }
                }
            }
        };
        info!(offset, "polling for updates");
        let mut errors = 0u32;
        let mut failures_at: Option<(i64, u32)> = None;
        loop {
            let timeout = u32::try_from(self.client.poll_timeout().as_secs()).unwrap_or(30);
            let request = self
                .client
                .bot()
                .get_updates()
                .offset(i32::try_from(offset).unwrap_or(i32::MAX))
                .timeout(timeout)
                .allowed_updates([AllowedUpdate::Message]);
            let batch = tokio::select! {
                () = cancel.cancelled() => return Ok(()),
                res = request => res,
            };
            let updates = match batch {
                Ok(u) => {
                    errors = 0;
                    u
                }
                Err(e) => {
                    let e = TelegramError::from_request(e);
                    errors += 1;
                    let wait = match &e {
                        TelegramError::RetryAfter(d) => *d,
                        _ => backoff_jittered(errors, Duration::from_millis(500), Duration::from_secs(30)),
                    };
                    let wait_ms = wait.as_millis() as u64;
                    match e {
                        TelegramError::Unauthorized => return Err(e),
                        e => warn!(error = %e, wait_ms, "getUpdates failed; retrying"),
                    }
                    if sleep_or_cancel(wait, &cancel).await {
                        return Ok(());
                    }
                    continue;
                }
            };
            for update in updates {
                let update_id = i64::from(update.id.0);
                let span = info_span!("update", update.id = update_id);
                let handled = AssertUnwindSafe(
                    async {
                        let incoming = updates::classify(&update);
                        self.intake.record(update_id, incoming).await
                    }
                    .instrument(span),
                )
                .catch_unwind()
                .await;
                let failure = match handled {
                    Ok(Ok(_)) => None,
                    Ok(Err(e)) if e.is_transient() => {
                        // The database is busy or away: never reject an update for that; wait.
                        errors += 1;
                        let wait = backoff_jittered(errors, Duration::from_millis(200), Duration::from_secs(10));
                        warn!(update.id = update_id, error = %e, wait_ms = wait.as_millis() as u64, "cannot record an update now; polling it again");
                        if sleep_or_cancel(wait, &cancel).await {
                            return Ok(());
                        }
                        break;
                    }
                    Ok(Err(e)) => Some(e.to_string()),
                    Err(_) => Some("handling the update panicked".to_owned()),
                };
                let Some(failure) = failure else {
                    offset = update_id + 1;
                    failures_at = None;
                    continue;
                };
                let count = match failures_at {
                    Some((id, n)) if id == update_id => n + 1,
                    _ => 1,
                };
                failures_at = Some((update_id, count));
                if count >= MAX_HANDLING_FAILURES {
                    // A bug or a poisoned update: keep it as rejected and move on.
                    let reason = format!("gave up after {count} failures: {failure}");
                    error!(update.id = update_id, error = %failure, "recording update as rejected");
                    match self.intake.record(update_id, Incoming::Malformed(reason)).await {
                        Ok(_) => {
                            offset = update_id + 1;
                            failures_at = None;
                            continue;
                        }
                        Err(e) => error!(update.id = update_id, error = %e, "cannot record the rejected update either"),
                    }
                } else {
                    warn!(update.id = update_id, error = %failure, attempt = count, "handling an update failed; it will be polled again");
                }
                // Poll again from this update: Telegram sends it (and the rest) again.
                let wait = backoff_jittered(count, Duration::from_millis(200), Duration::from_secs(10));
                if sleep_or_cancel(wait, &cancel).await {
                    return Ok(());
                }
                break;
            }
        }
    }
}

/// Sleeps for `d`; `true` when cancelled first.
pub async fn sleep_or_cancel(d: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        () = cancel.cancelled() => true,
        () = tokio::time::sleep(d) => false,
    }
}
