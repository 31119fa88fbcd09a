//! The outbox sender: delivers every queued message to Telegram, in order per chat.
//!
//! Rows are claimed under a lease (so two senders never take the same row), and the outcome is
//! written back conditionally on that lease. What each Bot API answer means:
//!
//! | answer | row becomes |
//! |---|---|
//! | ok | `sent`, with Telegram's message id (and a document's file_id, stored on the job) |
//! | 429 `retry_after` | `pending`, not before exactly that long |
//! | 5xx, network error before sending | `pending` with exponential backoff; `failed` after `max_attempts` |
//! | outcome lost (timeout after sending, connection cut) | `unknown`, then the kind's rule: replies and notices are sent again (a duplicate is harmless, a loss is not); a result is sent again unless a newer delivery of it went out |
//! | 403 blocked / deactivated / kicked, 400 chat not found | `dead`, with every other queued message of the chat: one call, no more |
//! | a stored file_id refused | the result is uploaded from disk instead, and the new file_id stored |
//! | any other refusal | `failed`, with the reason |

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinSet;
use tracing::{Instrument, error, info, info_span, warn};

use crate::domain::retry::backoff_jittered;
use crate::domain::{AfterUnknown, JobState, Lease, MessageKind, OutboxState, SharedClock};
use crate::pipeline::Shutdown;
use crate::spool::result_file_name;
use crate::store::{OutboxMessage, Store, StoreResult};
use crate::telegram::client::Sent;
use crate::telegram::{DocumentSource, TelegramClient, TelegramError};

/// The sender's settings.
#[derive(Debug, Clone)]
pub struct OutboxSettings {
    /// Concurrent senders.
    pub senders: usize,
    /// How long a claim holds a row without renewal.
    pub lease: Duration,
    /// Attempts before a message is `failed`.
    pub max_attempts: u32,
    /// How often an idle sender looks for due retries without being woken.
    pub idle_poll: Duration,
    /// First retry delay.
    pub retry_base: Duration,
    /// Largest document the bot may upload.
    pub upload_limit: u64,
}

/// What the senders share. Cheap to clone.
#[derive(Debug, Clone)]
pub struct OutboxDeps {
    /// The store.
    pub store: Store,
    /// Time.
    pub clock: SharedClock,
    /// The Bot API.
    pub telegram: TelegramClient,
    /// Settings.
    pub settings: Arc<OutboxSettings>,
    /// Woken when a message is queued.
    pub wake: Arc<Notify>,
}

/// Runs the senders. After `stop` they deliver what is due and then end; `abort` ends them at
/// once (a send in progress is dropped and its row resumed after its lease lapses).
pub async fn run(deps: OutboxDeps, cancel: Shutdown) {
    let mut senders = JoinSet::new();
    for n in 0..deps.settings.senders.max(1) {
        let owner = format!("{}:sender-{n}", std::process::id());
        senders.spawn(sender(owner, deps.clone(), cancel.clone()));
    }
    while let Some(res) = senders.join_next().await {
        if let Err(e) = res {
            error!(error = %e, "an outbox sender stopped unexpectedly");
        }
    }
}

async fn sender(owner: String, deps: OutboxDeps, cancel: Shutdown) {
    let mut errors = 0u32;
    while !cancel.abort.is_cancelled() {
        let notified = deps.wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        match deps.store.claim_message(&owner, deps.clock.now(), deps.settings.lease).await {
            Ok(Some(message)) => {
                errors = 0;
                let span = info_span!(
                    "send",
                    message.id = message.id,
                    ticket = message.job.map(|t| t.0),
                    kind = message.kind.as_str()
                );
                tokio::select! {
                    () = deliver(&deps, message).instrument(span) => {}
                    () = cancel.abort.cancelled() => break,
                }
                continue;
            }
            Ok(None) if cancel.stop.is_cancelled() => break,
            Ok(None) => errors = 0,
            Err(e) => {
                errors += 1;
                error!(error = %e, "cannot claim a message");
            }
        }
        let wait = if errors > 0 {
            backoff_jittered(errors, Duration::from_millis(200), Duration::from_secs(10))
        } else {
            deps.settings.idle_poll
        };
        tokio::select! {
            () = cancel.abort.cancelled() => break,
            () = cancel.stop.cancelled() => {}
            () = &mut notified => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

async fn deliver(deps: &OutboxDeps, message: OutboxMessage) {
    let Some(lease) = message.lease.clone() else { return };
    let result = match message.kind {
        MessageKind::Result => send_result(deps, &message, &lease).await,
        MessageKind::TicketReply | MessageKind::Reply | MessageKind::Failure => {
            deps.telegram.send_text(message.chat.0, &message.body, message.reply_to_message_id).await
        }
    };
    let now = deps.clock.now();
    let attempts = u32::try_from(message.attempts).unwrap_or(u32::MAX);
    let written = match result {
        Ok(sent) => {
            let ok =
                deps.store.mark_message_sent(&message, &lease, sent.message_id, sent.file_id.as_deref(), now).await;
            if matches!(ok, Ok(true)) {
                info!(telegram.message_id = sent.message_id, "delivered");
                metrics::counter!("docket_messages_sent_total", "kind" => message.kind.as_str()).increment(1);
            }
            ok
        }
        Err(TelegramError::RetryAfter(wait)) => {
            warn!(wait_ms = wait.as_millis() as u64, "flood control; waiting exactly as told");
            deps.store.retry_message(message.id, &lease, now.plus(wait), "429: flood control", now).await
        }
        Err(TelegramError::ChatGone(why)) => {
            warn!(reason = %why, "the chat is gone; not sending to it");
            // One refused call is enough: the chat's other queued messages, and those queued
            // later, are dead without a call until the person writes again. (Marked before this
            // row leaves `sending`, which keeps the chat's later rows from being claimed.)
            match deps.store.mark_chat_dead(message.chat, &why, now).await {
                Ok(n) => info!(messages = n, "marked the chat dead with its queued messages"),
                Err(e) => warn!(error = %e, "could not mark the chat dead"),
            }
            deps.store.close_message(message.id, &lease, OutboxState::Dead, &why, now).await
        }
        Err(TelegramError::Lost(why)) => after_unknown(deps, &message, &lease, &why).await,
        Err(e @ TelegramError::Transient(_)) if attempts < deps.settings.max_attempts => {
            let wait = backoff_jittered(attempts, deps.settings.retry_base, Duration::from_secs(300));
            warn!(error = %e, retry_in_ms = wait.as_millis() as u64, "sending failed; will retry");
            deps.store.retry_message(message.id, &lease, now.plus(wait), &e.to_string(), now).await
        }
        Err(e) => {
            error!(error = %e, "giving up on a message");
            metrics::counter!("docket_messages_failed_total", "kind" => message.kind.as_str()).increment(1);
            deps.store.close_message(message.id, &lease, OutboxState::Failed, &e.to_string(), now).await
        }
    };
    match written {
        Ok(true) => {}
        Ok(false) => warn!("the message's lease was lost before its outcome was written"),
        Err(e) => error!(error = %e, "cannot record a message's outcome; it will be retried when its lease lapses"),
    }
}

/// Records a lost outcome as `unknown`, then applies the kind's rule
/// ([`MessageKind::after_unknown`]).
async fn after_unknown(deps: &OutboxDeps, message: &OutboxMessage, lease: &Lease, why: &str) -> StoreResult<bool> {
    let now = deps.clock.now();
    if !deps.store.close_message(message.id, lease, OutboxState::Unknown, why, now).await? {
        return Ok(false);
    }
    let attempts = u32::try_from(message.attempts).unwrap_or(u32::MAX);
    if attempts >= deps.settings.max_attempts {
        warn!(reason = %why, "outcome unknown and out of attempts; leaving the message unknown");
        return Ok(true);
    }
    let send_again = match message.kind.after_unknown() {
        AfterUnknown::SendAgain => true,
        AfterUnknown::SendAgainUnlessSuperseded => {
            // A later delivery of the same job's result (a /get, the same file again) already
            // carries the document: repeating this one would only duplicate it.
            let later = deps.store.messages(Some(message.chat), message.job).await?;
            !later.iter().any(|m| m.id > message.id && m.kind == MessageKind::Result && m.state == OutboxState::Sent)
        }
    };
    if !send_again {
        info!(reason = %why, "outcome unknown; a newer delivery superseded it, not sending again");
        return Ok(true);
    }
    let wait = backoff_jittered(attempts, deps.settings.retry_base, Duration::from_secs(300));
    let note = format!("outcome unknown ({why}); sent again, a duplicate is possible");
    warn!(reason = %why, retry_in_ms = wait.as_millis() as u64, "outcome unknown; sending again");
    deps.store.requeue_unknown(message.id, now.plus(wait), &note, now).await
}

/// Sends a result document: by its stored Telegram file_id when there is one (no upload), else
/// streamed from disk. A refused file_id is forgotten and the upload done at once.
async fn send_result(deps: &OutboxDeps, message: &OutboxMessage, lease: &Lease) -> Result<Sent, TelegramError> {
    let ticket = message.job.ok_or_else(|| TelegramError::Permanent("a result message without a job".into()))?;
    let job = deps.store.job(ticket).await.map_err(|e| TelegramError::Transient(e.to_string()))?;
    let Some(job) = job.filter(|j| j.state == JobState::Ready) else {
        return Err(TelegramError::Permanent("the result is no longer kept".into()));
    };
    if let Some(file_id) = &job.result_file_id {
        let by_id = DocumentSource::FileId(file_id.clone());
        match deps.telegram.send_document(message.chat.0, &by_id, &message.body, message.reply_to_message_id).await {
            Err(TelegramError::Permanent(why)) => {
                warn!(reason = %why, "Telegram refused the stored file_id; uploading from disk");
                deps.store
                    .forget_result_file_id(ticket, deps.clock.now())
                    .await
                    .map_err(|e| TelegramError::Transient(e.to_string()))?;
            }
            other => return other,
        }
    }
    let path = job.result_path.clone().ok_or_else(|| TelegramError::Permanent("no result file recorded".into()))?;
    let size = job.result_size.unwrap_or(0);
    if u64::try_from(size).unwrap_or(0) > deps.settings.upload_limit {
        return Err(TelegramError::Permanent(format!("result of {size} bytes is over the upload limit")));
    }
    let upload = DocumentSource::Path { path: path.into(), file_name: result_file_name(job.declared_name.as_deref()) };
    // An upload can outlast the lease: renew it while the bytes go out.
    let renew = async {
        loop {
            tokio::time::sleep(deps.settings.lease / 3).await;
            let now = deps.clock.now();
            match deps.store.renew_message_lease(message.id, lease, now.plus(deps.settings.lease), now).await {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => warn!(error = %e, "could not renew the send lease"),
            }
        }
    };
    tokio::select! {
        res = deps.telegram.send_document(message.chat.0, &upload, &message.body, message.reply_to_message_id) => res,
        () = renew => Err(TelegramError::Lost("lost the lease on the message during the upload".into())),
    }
}
