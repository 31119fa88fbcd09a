//! The outbox sender: delivers every queued message to Telegram, in order per chat, within
//! Telegram's limits.
//!
//! Rows are claimed under a lease (so two senders never take the same row), and the outcome is
//! written back conditionally on that lease. Limits are kept *before* each call:
//!
//! - **per chat**: after every call to a chat, the chat is paced (`chat_pacing`, in the
//!   database, so every sender and every restart sees it) for `[outbox] private_interval`, or
//!   60 s / `group_per_minute` for groups. The pace is written before the row leaves `sending`,
//!   and a chat's next row is claimable only once its earlier row left `sending`, so no two
//!   calls to one chat come closer than that;
//! - **globally**: every call first reserves a send slot in the database (`reserve_send_slot`:
//!   1 s / `global_per_second` after the last slot reserved by any sender of any docket on the
//!   database) and waits for it, so all instances together keep `global_per_second`, without
//!   bursts. If the database cannot be reached for that, this process's own limiter
//!   (`governor`) spaces its calls instead.
//!
//! What each Bot API answer means:
//!
//! | answer | row becomes |
//! |---|---|
//! | ok | `sent`, with Telegram's message id (and a document's file_id, stored on the job) |
//! | 429 `retry_after` | `pending`; its chat is paused for exactly that long (stored). When two chats are paused by 429s at once, the bot as a whole is limited: every chat waits ([`Paced::WholeBot`]) |
//! | 400 `migrate_to_chat_id` | the chat's open messages and jobs move to the supergroup; sent again there |
//! | 5xx, no connection (refused, DNS, connect timeout), 401 (the poller stops the bot) | `pending` with exponential backoff; after `max_attempts` `failed`, and admins get one alert per hour |
//! | outcome lost (a timeout once the request may have gone out, connection cut, sender died mid-call) | `unknown`, then the kind's rule: replies and notices are sent again (a duplicate is harmless, a loss is not); a result is sent again unless a newer delivery of it went out; one still to be sent again after `max_attempts` is `failed`, with the admins' alert |
//! | 403 blocked / deactivated / kicked, 400 chat not found | `dead`, with every other queued message of the chat: one call, no more |
//! | a stored file_id refused | the result is uploaded from disk instead, and the new file_id stored |
//! | any other refusal | `failed`, with the reason |
//!
//! A sender holds its row only while it can renew its lease: when a renewal finds the lease
//! taken, or the database refuses renewals until the lease runs out, the call is dropped (the
//! request abandoned) and nothing is written for it; the row is then another sender's, or its
//! lapsed lease makes it `unknown` and the kind's rule applies.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, error, info, info_span, warn};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use crate::domain::retry::backoff_jittered;
use crate::domain::{
    AfterUnknown, ChatRef, Clock, JobState, Lease, MessageKind, OutboxState, Paced, SharedClock, Timestamp,
};
use crate::domain::{IdempotencyKey, NewMessage, OutboxMessage};
use crate::runtime::{self, Drain, Shutdown, Worker, WorkerId};
use crate::store::{MessageFilter, Store, StoreResult};
use crate::telegram::client::Sent;
use crate::telegram::{DocumentSource, TelegramClient, TelegramError};
use crate::texts;

mod upload;

/// Telegram's limits as the senders keep them, and how hard they try.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SendLimits {
    /// Concurrent senders (one message in flight each).
    pub senders: usize,
    /// Messages per second to everyone together (every process on the database).
    pub global_per_second: u32,
    /// Least time between two messages to one private chat.
    pub private_interval: Duration,
    /// Messages per minute to one group, spread evenly.
    pub group_per_minute: u32,
    /// Attempts of one message before it is `failed` and admins are alerted.
    pub max_attempts: u32,
}

impl SendLimits {
    /// The least time between two messages to `chat`: Telegram's group chats have negative ids.
    pub fn interval(&self, chat: i64) -> Duration {
        if chat < 0 { Duration::from_secs(60) / self.group_per_minute.max(1) } else { self.private_interval }
    }
}

/// The sender's settings.
#[derive(Debug, Clone)]
pub struct OutboxSettings {
    /// `[outbox]`: senders, limits, attempts.
    pub limits: SendLimits,
    /// How long a claim holds a row without renewal.
    pub lease: Duration,
    /// Who hears about messages that could not be delivered.
    pub admins: Vec<i64>,
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
    pub settings: crate::runtime::Live<OutboxSettings>,
    /// Woken when a message is queued.
    pub wake: Arc<Notify>,
    /// The global rate limit (shared through the database; this process's own limiter when the
    /// database cannot be reached).
    pub global: Arc<GlobalLimit>,
}

/// The global rate limit: `per_second` calls a second, evenly spaced (a burst of one, so no
/// one-second window ever holds more than `per_second` + 1).
#[derive(Debug)]
pub struct GlobalLimit {
    /// Between two send slots: 1 s / `per_second`, rounded up to the millisecond (the store's
    /// resolution), so rounding never makes the rate higher than configured.
    spacing: Duration,
    /// This process alone, for when the database cannot reserve a slot.
    fallback: DefaultDirectRateLimiter,
}

impl GlobalLimit {
    /// A limit of `per_second` calls a second.
    pub fn new(per_second: u32) -> Self {
        let per_second = std::num::NonZeroU32::new(per_second).unwrap_or(std::num::NonZeroU32::MIN);
        Self {
            spacing: Duration::from_millis(1000_u64.div_ceil(u64::from(per_second.get()))),
            fallback: RateLimiter::direct(Quota::per_second(per_second).allow_burst(std::num::NonZeroU32::MIN)),
        }
    }

    /// Waits for this call's slot: reserved in the store, shared by every docket on the
    /// database; spaced by this process alone if the store cannot be reached.
    pub async fn until_ready(&self, store: &Store, clock: &dyn Clock) {
        let now = clock.now();
        match store.reserve_send_slot(now, self.spacing).await {
            Ok(slot) => {
                let wait = u64::try_from(slot.as_millis() - now.as_millis()).unwrap_or(0);
                if wait > 0 {
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
            }
            Err(e) => {
                warn!(error = %e, "cannot reserve a send slot; spacing this process's calls alone");
                self.fallback.until_ready().await;
            }
        }
    }
}

/// Runs the senders. After `stop` they deliver what is due and then end; `abort` ends them at
/// once (a send in progress is dropped and its row resumed after its lease lapses).
pub async fn run(deps: OutboxDeps, shutdown: Shutdown) {
    let senders = deps.settings.get().limits.senders.max(1);
    let worker = Sender { deps, next_lapse_check: Arc::new(std::sync::Mutex::new(tokio::time::Instant::now())) };
    runtime::run_pool(worker, senders, Drain::WhenIdleAfterStop, shutdown).await;
}

/// The outbox's rules for one sender, run by [`runtime::run_pool`].
#[derive(Debug, Clone)]
struct Sender {
    deps: OutboxDeps,
    /// When some sender next looks for rows a dead sender left in `sending`.
    next_lapse_check: Arc<std::sync::Mutex<tokio::time::Instant>>,
}

impl Sender {
    /// Whether it is time to look for lapsed rows (and if so, the next look is scheduled).
    fn lapse_check_due(&self) -> bool {
        let mut next = self.next_lapse_check.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = tokio::time::Instant::now();
        if now < *next {
            return false;
        }
        *next = now + (self.deps.settings.get().lease / 4).max(Duration::from_millis(250));
        true
    }
}

impl Worker for Sender {
    type Item = OutboxMessage;
    type Error = crate::store::StoreError;

    fn role(&self) -> &'static str {
        "sender"
    }

    fn wakeup(&self) -> Arc<Notify> {
        Arc::clone(&self.deps.wake)
    }

    async fn claim(&self, worker: &WorkerId) -> Result<Option<OutboxMessage>, Self::Error> {
        if self.lapse_check_due() {
            resolve_lapsed(&self.deps).await;
        }
        let deps = &self.deps;
        deps.store.claim_message(worker.as_str(), deps.clock.now(), deps.settings.get().lease).await
    }

    fn span(&self, worker: &WorkerId, message: &OutboxMessage) -> tracing::Span {
        send_span(message, Some(worker))
    }

    async fn work(&self, _worker: &WorkerId, message: OutboxMessage, _abort: &CancellationToken) {
        self.deps.global.until_ready(&self.deps.store, self.deps.clock.as_ref()).await;
        deliver(&self.deps, message).await;
    }

    async fn idle_wait(&self) -> Duration {
        until_next_due(&self.deps).await
    }
}

/// The span a message's send (or the rule for its lost outcome) runs in.
fn send_span(message: &OutboxMessage, worker: Option<&WorkerId>) -> tracing::Span {
    info_span!(
        "send",
        message.id = %message.id,
        ticket = message.job.map(tracing::field::display),
        kind = message.kind.as_str(),
        worker = worker.map(|w| w.as_str()),
    )
}

/// How long an idle sender sleeps: until the next paced or delayed message is due, at most
/// `idle_poll` (a new message wakes it anyway).
async fn until_next_due(deps: &OutboxDeps) -> Duration {
    let idle = deps.settings.get().idle_poll;
    match deps.store.next_message_due().await {
        Ok(Some(due)) => {
            let ms = u64::try_from(due.as_millis() - deps.clock.now().as_millis()).unwrap_or(0);
            Duration::from_millis(ms).clamp(Duration::from_millis(2), idle)
        }
        Ok(None) => idle,
        Err(e) => {
            warn!(error = %e, "cannot tell when the next message is due");
            idle
        }
    }
}

/// Rows left in `sending` by a sender that died mid-call: their outcome is unknown.
async fn resolve_lapsed(deps: &OutboxDeps) {
    let lapsed = match deps.store.lapse_messages(deps.clock.now()).await {
        Ok(lapsed) => lapsed,
        Err(e) => {
            warn!(error = %e, "cannot look for interrupted sends");
            return;
        }
    };
    for message in lapsed {
        let span = send_span(&message, None);
        let why = "the sender stopped while sending (its lease lapsed)";
        if let Err(e) = apply_unknown_rule(deps, &message, why).instrument(span).await {
            warn!(error = %e, "cannot apply the rule for an unknown outcome; the row stays unknown");
        }
    }
}

async fn deliver(deps: &OutboxDeps, message: OutboxMessage) {
    let Some(lease) = message.lease.clone() else { return };
    let Some(result) = call_under_lease(deps, &message, &lease).await else { return };
    let now = deps.clock.now();
    // Whatever the answer, a call went to this chat: pace it before the row leaves `sending`,
    // so the chat's next message (claimable only after that) keeps the interval.
    let interval = deps.settings.get().limits.interval(message.chat.0);
    if !interval.is_zero()
        && let Err(e) = deps.store.pace_chat(message.chat, now.plus(interval), "rate limit").await
    {
        warn!(error = %e, "cannot record the chat's pace; sending on");
    }
    // Every Bot API answer to a send, by what it was (the rows' fates are counted below).
    metrics::counter!("docket_sends_total", "outcome" => outcome_label(&result)).increment(1);
    let written = record_answer(deps, &message, &lease, result, now).await;
    match written {
        Ok(true) => {}
        Ok(false) => warn!("the message's lease was lost before its outcome was written"),
        Err(e) => error!(error = %e, "cannot record a message's outcome; it will be retried when its lease lapses"),
    }
}

/// Makes `message`'s call to the Bot API while keeping its lease; `None` when the lease could not
/// be kept, and the call was dropped.
async fn call_under_lease(
    deps: &OutboxDeps,
    message: &OutboxMessage,
    lease: &Lease,
) -> Option<Result<Sent, TelegramError>> {
    let call = async {
        match message.kind {
            MessageKind::Result => send_result(deps, message).await,
            MessageKind::TicketReply | MessageKind::Reply | MessageKind::Failure => {
                deps.telegram
                    .send_text(message.chat, &message.body, message.reply_to_message_id, &message.buttons)
                    .await
            }
            MessageKind::Progress => edit_status(deps, message).await,
        }
    };
    // A call can outlast the lease (an upload; teloxide alone waits 10 s after any 5xx before
    // it reports it): renew it meanwhile, so no other sender takes the row as abandoned. A call
    // whose lease cannot be kept is dropped, not continued beside another sender's.
    tokio::select! {
        res = call => Some(res),
        // A send is not fenced once it left: two senders would deliver it twice.
        lost = runtime::keep_lease(
            deps.settings.get().lease,
            Arc::clone(&deps.clock),
            lease.until,
            runtime::WhenUnreachable::Stop,
            |until, now| deps.store.renew_message_lease(message.id, lease, until, now),
        ) => {
            warn!(reason = ?lost, "abandoned the call: the send lease could not be kept; nothing is written for it");
            None
        }
    }
}

/// What the Bot API's answer to a send was, as `docket_sends_total` labels it.
fn outcome_label(result: &Result<Sent, TelegramError>) -> &'static str {
    match result {
        Ok(_) => "delivered",
        Err(TelegramError::RetryAfter(_)) => "flood_wait",
        Err(TelegramError::Migrated(_)) => "migrated",
        Err(TelegramError::ChatGone(_)) => "chat_gone",
        Err(TelegramError::Lost(_)) => "unknown",
        Err(_) => "error",
    }
}

/// Writes what the Bot API's answer `result` means for `message`, under `lease`: sent, retried
/// (after a 429, a migration or a transient failure), dead, unknown, or failed. `false`: the
/// lease was lost before the outcome could be written.
///
/// One arm per answer, kept in one match so that it reads beside ARCHITECTURE's table "What each
/// Bot API answer does", row for row.
async fn record_answer(
    deps: &OutboxDeps,
    message: &OutboxMessage,
    lease: &Lease,
    result: Result<Sent, TelegramError>,
    now: Timestamp,
) -> StoreResult<bool> {
    let attempts = u32::try_from(message.attempts).unwrap_or(u32::MAX);
    match result {
        Ok(sent) => {
            let ok = deps.store.mark_message_sent(message, lease, sent.message_id, sent.file_id.as_deref(), now).await;
            if matches!(ok, Ok(true)) {
                info!(telegram.message_id = %sent.message_id, "delivered");
                metrics::counter!("docket_messages_sent_total", "kind" => message.kind.as_str()).increment(1);
            }
            ok
        }
        Err(TelegramError::RetryAfter(wait)) => {
            let until = now.plus(wait);
            let why = format!("{FLOOD_WAIT}: retry after {} s", wait.as_secs());
            warn!(wait_ms = wait.as_millis() as u64, "flood control; this chat waits exactly as told");
            metrics::counter!("docket_messages_flood_waits_total").increment(1);
            if let Err(e) = deps.store.record_flood_wait(message.chat, wait, now).await {
                warn!(error = %e, "could not record the 429 for /stats");
            }
            match pause_for_429(deps, message.chat, until, &why).await {
                Ok(()) => deps.store.retry_message(message.id, lease, until, &why, now).await,
                Err(e) => Err(e),
            }
        }
        Err(TelegramError::Migrated(to)) => {
            info!(to, "the group became a supergroup; moving its messages and jobs");
            match deps.store.migrate_chat(message.chat, ChatRef(to), now).await {
                Ok(_) => deps.store.retry_message(message.id, lease, now, "moved to the supergroup", now).await,
                Err(e) => Err(e),
            }
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
            deps.store.close_message(message.id, lease, OutboxState::Dead, &why, now).await
        }
        Err(TelegramError::Lost(why)) => after_unknown(deps, message, lease, &why).await,
        // A refused token stops the bot (the poller reports it): keep the message for later.
        Err(e @ (TelegramError::Transient(_) | TelegramError::Unauthorized))
            if attempts < deps.settings.get().limits.max_attempts =>
        {
            let wait = backoff_jittered(attempts, deps.settings.get().retry_base, Duration::from_secs(300));
            warn!(error = %e, retry_in_ms = wait.as_millis() as u64, "sending failed; will retry");
            deps.store.retry_message(message.id, lease, now.plus(wait), &e.to_string(), now).await
        }
        Err(e) => {
            error!(error = %e, "giving up on a message");
            metrics::counter!("docket_messages_failed_total", "kind" => message.kind.as_str()).increment(1);
            let closed = deps.store.close_message(message.id, lease, OutboxState::Failed, &e.to_string(), now).await;
            // A status edit that cannot be made (the person deleted the message) is no incident.
            if matches!(closed, Ok(true)) && message.kind != MessageKind::Progress {
                alert_admins(deps, message, &e.to_string(), now).await;
            }
            closed
        }
    }
}

/// Pauses `chat` until `until` for a 429. When another chat is paused by a 429 at the same
/// time, the limit is the bot's, not the chat's: everyone waits ([`Paced::WholeBot`]).
async fn pause_for_429(deps: &OutboxDeps, chat: ChatRef, until: Timestamp, why: &str) -> StoreResult<()> {
    deps.store.pace_chat(chat, until, why).await?;
    let now = deps.clock.now();
    let others = deps.store.pacing(now).await?;
    let another_chat = |paced: &Paced| matches!(paced, Paced::Chat(other) if *other != chat);
    if others.iter().any(|(paced, _, reason)| another_chat(paced) && reason.starts_with(FLOOD_WAIT)) {
        warn!("429s for several chats at once: the bot as a whole is limited; every chat waits");
        deps.store.pause_whole_bot(until, &format!("{why} (the bot as a whole)")).await?;
    }
    Ok(())
}

/// How a pause for a 429 begins its reason in `chat_pacing`: [`pause_for_429`] tells such pauses
/// from ordinary pacing by it.
const FLOOD_WAIT: &str = "429";

/// Tells the admins that a message could not be delivered: one alert per admin per hour
/// (the idempotency key holds the hour), so a failing Telegram never floods them.
async fn alert_admins(deps: &OutboxDeps, failed: &OutboxMessage, why: &str, now: Timestamp) {
    if failed.idempotency_key.is_alert() || deps.settings.get().admins.is_empty() {
        return;
    }
    let hour = now.as_millis() / 3_600_000;
    let result: StoreResult<()> = async {
        let mut tx = deps.store.begin().await?;
        for admin in &deps.settings.get().admins {
            let lang = tx.chat_lang(ChatRef(*admin)).await?;
            let body = texts::delivery_alert(lang, failed.id, failed.chat, failed.job, why);
            let alert = NewMessage {
                idempotency_key: IdempotencyKey::undelivered_alert(ChatRef(*admin), hour),
                job: None,
                chat: ChatRef(*admin),
                kind: MessageKind::Reply,
                body,
                reply_to_message_id: None,
                buttons: Vec::new(),
                part: None,
            };
            tx.enqueue(&alert, now).await?;
        }
        tx.commit().await
    }
    .await;
    match result {
        Ok(()) => deps.wake.notify_waiters(),
        Err(e) => warn!(error = %e, "cannot queue the admins' alert"),
    }
}

/// Records a lost outcome as `unknown`, then applies the kind's rule.
async fn after_unknown(deps: &OutboxDeps, message: &OutboxMessage, lease: &Lease, why: &str) -> StoreResult<bool> {
    let now = deps.clock.now();
    if !deps.store.close_message(message.id, lease, OutboxState::Unknown, why, now).await? {
        return Ok(false);
    }
    apply_unknown_rule(deps, message, why).await
}

/// What happens to an `unknown` row: the kind's rule ([`MessageKind::after_unknown`]).
async fn apply_unknown_rule(deps: &OutboxDeps, message: &OutboxMessage, why: &str) -> StoreResult<bool> {
    let now = deps.clock.now();
    metrics::counter!("docket_messages_unknown_total", "kind" => message.kind.as_str()).increment(1);
    let attempts = u32::try_from(message.attempts).unwrap_or(u32::MAX);
    let send_again = match message.kind.after_unknown() {
        AfterUnknown::Drop => {
            info!(reason = %why, "outcome unknown; the edit is dropped (the job's next state re-arms it)");
            return Ok(true);
        }
        AfterUnknown::SendAgain => true,
        AfterUnknown::SendAgainUnlessSuperseded => {
            // A later delivery of the same job's result (a /get, the same file again), or of the
            // same part of it, already carries the document: repeating this one would only
            // duplicate it.
            let later = deps.store.messages(&MessageFilter { chat: Some(message.chat), job: message.job }).await?;
            !later.iter().any(|m| {
                m.id > message.id
                    && m.kind == MessageKind::Result
                    && m.part == message.part
                    && m.state == OutboxState::Sent
            })
        }
    };
    if !send_again {
        info!(reason = %why, "outcome unknown; a newer delivery superseded it, not sending again");
        return Ok(true);
    }
    if attempts >= deps.settings.get().limits.max_attempts {
        // Like any other undeliverable message: failed, and the admins hear of it.
        let reason = format!("outcome unknown after {attempts} attempts ({why})");
        error!(reason = %why, attempts, "outcome unknown and out of attempts; giving up on the message");
        metrics::counter!("docket_messages_failed_total", "kind" => message.kind.as_str()).increment(1);
        let failed = deps.store.fail_unknown(message.id, &reason, now).await?;
        if failed {
            alert_admins(deps, message, &reason, now).await;
        }
        return Ok(failed);
    }
    let wait = backoff_jittered(attempts, deps.settings.get().retry_base, Duration::from_secs(300));
    let note = format!("outcome unknown ({why}); sent again, a duplicate is possible");
    warn!(reason = %why, retry_in_ms = wait.as_millis() as u64, "outcome unknown; sending again");
    deps.store.requeue_unknown(message.id, now.plus(wait), &note, now).await
}

/// Edits the job's status message (its ticket reply) to the row's text.
async fn edit_status(deps: &OutboxDeps, message: &OutboxMessage) -> Result<Sent, TelegramError> {
    let ticket = message.job.ok_or_else(|| TelegramError::Permanent("a progress edit without a job".into()))?;
    let target = deps.store.status_message(ticket).await.map_err(|e| TelegramError::Transient(e.to_string()))?;
    // The ticket reply goes first (a chat's messages keep their order), so a missing one was
    // never delivered (dead chat, lost outcome): there is nothing to edit.
    let target =
        target.ok_or_else(|| TelegramError::Permanent("the job's status message was never delivered".into()))?;
    deps.telegram.edit_text(message.chat, target, &message.body, &message.buttons).await
}

/// Sends a result document: by its stored Telegram file_id when there is one (no upload), else
/// streamed from disk. A refused file_id is forgotten and the upload done at once.
async fn send_result(deps: &OutboxDeps, message: &OutboxMessage) -> Result<Sent, TelegramError> {
    let ticket = message.job.ok_or_else(|| TelegramError::Permanent("a result message without a job".into()))?;
    let job = deps.store.job(ticket).await.map_err(|e| TelegramError::Transient(e.to_string()))?;
    let Some(job) = job.filter(|j| j.state == JobState::Ready) else {
        return Err(TelegramError::Permanent("the result is no longer kept".into()));
    };
    let Some(result) = &job.result else {
        return Err(TelegramError::Permanent("no result recorded".into()));
    };
    if message.part.is_none()
        && let Some(file_id) = &result.telegram_file_id
    {
        let by_id = DocumentSource::FileId(file_id.clone());
        match deps.telegram.send_document(message.chat, &by_id, &message.body, message.reply_to_message_id).await {
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
    let (upload, size) = upload::result_upload(result, &job.submission, message.part).await?;
    if size > deps.settings.get().upload_limit {
        return Err(TelegramError::Permanent(format!("result of {size} bytes is over the upload limit")));
    }
    // The person sees "sending a file…" while the bytes go out (Telegram shows it for ~5 s),
    // once the upload takes longer than a moment.
    let action = async {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if let Err(e) = deps.telegram.send_upload_action(message.chat).await {
                warn!(error = %e, "sendChatAction failed; uploading anyway");
            }
            tokio::time::sleep(Duration::from_secs(3)).await;
        }
    };
    let limit = upload_timeout(size);
    let send = async {
        let sent = deps.telegram.send_document(message.chat, &upload, &message.body, message.reply_to_message_id).await;
        // A part's file_id is not the result's: the job keeps none, so `/get` uploads each part again.
        sent.map(|sent| if message.part.is_some() { Sent { file_id: None, ..sent } } else { sent })
    };
    tokio::select! {
        res = send => res,
        () = action => unreachable!("the chat action loop never ends"),
        // The bytes may have arrived although the answer did not: the outcome is unknown.
        () = tokio::time::sleep(limit) => Err(TelegramError::Lost(format!("the upload took longer than {} s", limit.as_secs()))),
    }
}

/// The longest an upload of `bytes` may take: a minute, plus the time at 256 KiB/s (a slow
/// but working link). A stalled connection is given up on instead of holding the chat forever.
fn upload_timeout(bytes: u64) -> Duration {
    Duration::from_secs(60) + Duration::from_secs(bytes / (256 * 1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_upload_gets_time_for_its_size() {
        assert_eq!(upload_timeout(0), Duration::from_secs(60));
        assert_eq!(upload_timeout(50_000_000), Duration::from_secs(60 + 190));
        assert_eq!(upload_timeout(2_000_000_000), Duration::from_secs(60 + 7_629));
    }
}
