//! The `outbox` table: every message docket sends, queued once per idempotency key and delivered
//! in order within a chat.
//!
//! A sender claims a row (`pending` → `sending`, with a lease) and ends it as the lease holder:
//! `sent`, back to `pending` for a retry, or `dead`/`failed`/`unknown`. A row whose sender died
//! mid-call is not claimed again as it is; it becomes `unknown` first ([`LAPSE_MESSAGES`]).

use std::time::Duration;

use super::args::Arg;
#[cfg(feature = "postgres")]
use super::postgres;
use super::{Conn, Pool, QueryContext, Store, StoreResult, Tx, lease};
use crate::domain::{
    Button, ChatRef, IdempotencyKey, Lease, MessageId, MessageKind, NewMessage, NodeName, OutboxId, OutboxMessage,
    OutboxState, PROGRESS_SETTLE, Ticket, Timestamp,
};

/// Which outgoing messages to list: those of a chat, of a job, of both, or every one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessageFilter {
    /// Only this chat's.
    pub chat: Option<ChatRef>,
    /// Only this job's.
    pub job: Option<Ticket>,
}

impl MessageFilter {
    /// Every message.
    pub const ALL: Self = Self { chat: None, job: None };

    /// The messages to `chat`.
    pub const fn chat(chat: ChatRef) -> Self {
        Self { chat: Some(chat), job: None }
    }

    /// The messages about `job`.
    pub const fn job(job: Ticket) -> Self {
        Self { chat: None, job: Some(job) }
    }
}

/// Queues a message: $1 idempotency key, $2 job, $3 chat, $4 kind, $5 priority, $6 body, $7 the
/// message it answers, $8 now, $9 and $10 the label and data of its inline button (NULL: none),
/// $11 the part of a result it sends (NULL: all of it).
/// A key queued before inserts nothing; a message to a dead chat is stored `dead`.
pub const ENQUEUE: &str =
    "INSERT INTO outbox (idempotency_key, job_id, chat_id, kind, priority, body, reply_to_message_id,
                        status, created_at, updated_at, button_label, button_data, part)
    VALUES ($1, $2, $3, $4, $5, $6, $7,
            CASE WHEN EXISTS (SELECT 1 FROM dead_chats WHERE chat_id = $3) THEN 'dead' ELSE 'pending' END,
            $8, $8, $9, $10, $11)
    ON CONFLICT (idempotency_key) DO NOTHING";

/// Removes a job's delivered or dropped progress row so it can be queued anew: $1 idempotency key,
/// $2 when the reported state happened. A row showing a later state stays.
pub const REARM_PROGRESS: &str = "DELETE FROM outbox WHERE idempotency_key = $1 AND kind = 'progress'
      AND status IN ('sent', 'unknown', 'failed') AND COALESCE(state_at, 0) <= $2";

/// Queues a progress edit, or gives a waiting (or in-flight) one the new text: the binds of
/// [`ENQUEUE`], with $8 when the state happened, $9 when a new row may go out, $10 and $11 the
/// labels and data of its buttons (NULL: none; the ready state offers the other operations). A
/// text that is the same, or a state older than the row's, changes nothing.
pub const UPSERT_PROGRESS: &str =
    "INSERT INTO outbox (idempotency_key, job_id, chat_id, kind, priority, body, reply_to_message_id,
                        status, not_before, created_at, updated_at, state_at, button_label, button_data)
    VALUES ($1, $2, $3, $4, $5, $6, $7,
            CASE WHEN EXISTS (SELECT 1 FROM dead_chats WHERE chat_id = $3) THEN 'dead' ELSE 'pending' END,
            $9, $8, $8, $8, $10, $11)
    ON CONFLICT (idempotency_key) DO UPDATE
      SET body = excluded.body, updated_at = excluded.updated_at, state_at = excluded.state_at,
          button_label = excluded.button_label, button_data = excluded.button_data
    WHERE outbox.kind = 'progress' AND outbox.status IN ('pending', 'sending')
      AND outbox.body <> excluded.body AND COALESCE(outbox.state_at, 0) <= excluded.state_at";

/// Records a delivery, as the lease holder: $1 id, $2 lease token, $3 Telegram's message id,
/// $4 Telegram's file id, $5 now, $6 the body that was sent. A progress row whose text changed
/// while it was being sent goes back to `pending`, to go out again.
pub const MARK_SENT: &str = "UPDATE outbox SET status = CASE WHEN body = $6 THEN 'sent' ELSE 'pending' END,
        telegram_message_id = $3, telegram_file_id = $4, error = NULL,
        lease_owner = NULL, lease_until = NULL, updated_at = $5
    WHERE id = $1 AND status = 'sending' AND lease_token = $2";

/// Messages, oldest first: $1 only this chat, $2 only this job (NULL: any).
pub const MESSAGES: &str =
    "SELECT * FROM outbox WHERE ($1 IS NULL OR chat_id = $1) AND ($2 IS NULL OR job_id = $2) ORDER BY id";

/// Ends a send, as the lease holder: $1 id, $2 lease token, $3 the new state, $4 not before
/// (NULL: unchanged), $5 error, $6 now.
pub const SET_MESSAGE_STATE: &str = "UPDATE outbox SET status = $3, not_before = COALESCE($4, not_before), error = $5,
        lease_owner = NULL, lease_until = NULL, updated_at = $6
    WHERE id = $1 AND status = 'sending' AND lease_token = $2";

/// Extends a sender's lease: $1 id, $2 lease token, $3 until, $4 now.
pub const RENEW_MESSAGE_LEASE: &str =
    "UPDATE outbox SET lease_until = $3, updated_at = $4 WHERE id = $1 AND status = 'sending' AND lease_token = $2";

/// Ends the queued messages of a chat that refused the bot: $1 chat, $2 reason, $3 now.
pub const CLOSE_DEAD_CHAT_MESSAGES: &str =
    "UPDATE outbox SET status = 'dead', error = $2, updated_at = $3 WHERE chat_id = $1 AND status = 'pending'";

/// The Telegram message id of a job's latest delivered ticket reply: $1 job.
pub const STATUS_MESSAGE: &str = "SELECT telegram_message_id FROM outbox
    WHERE job_id = $1 AND kind = 'ticket_reply' AND status = 'sent'
    ORDER BY id DESC LIMIT 1";

/// The earliest time a `pending` message may become claimable: the first open row of each chat,
/// at its own `not_before` or its chat's pacing, whichever is later, and not before the bot's
/// pause ([`WHOLE_BOT`](super::pacing::WHOLE_BOT)). NULL with nothing pending.
pub const NEXT_MESSAGE_DUE: &str = "SELECT CASE WHEN g.not_before > d.first THEN g.not_before ELSE d.first END
    FROM (SELECT MIN(CASE WHEN COALESCE(p.not_before, 0) > o.not_before THEN p.not_before
                          ELSE o.not_before END) AS first
          FROM outbox o LEFT JOIN chat_pacing p ON p.chat_id = o.chat_id
          WHERE o.status = 'pending'
            AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.chat_id = o.chat_id AND e.id <> o.id
                            AND e.status IN ('pending', 'sending')
                            AND (e.status = 'sending' OR (e.id < o.id AND e.kind <> 'progress')))) AS d
    LEFT JOIN chat_pacing g ON g.chat_id = 0";

/// Rewrites a message that is still `pending` and holds it back until later: $1 idempotency
/// key, $2 its new body, $3 not before, $4 now, $5 and $6 its buttons' labels and data. An
/// album's ticket reply waits so, listing its parts as they come, until the album is quiet.
pub const DEFER_PENDING: &str =
    "UPDATE outbox SET body = $2, not_before = $3, updated_at = $4, button_label = $5, button_data = $6
    WHERE idempotency_key = $1 AND status = 'pending'";

/// Turns `sending` rows whose lease lapsed at $1 now into `unknown`, and returns them.
pub const LAPSE_MESSAGES: &str =
    "UPDATE outbox SET status = 'unknown', lease_owner = NULL, lease_until = NULL, updated_at = $1,
        error = 'the sender stopped while sending (its lease lapsed); the outcome is unknown'
    WHERE status = 'sending' AND lease_until <= $1
    RETURNING *";

/// Moves a chat's open messages to its new id, dropping their reply links: $1 old chat, $2 new
/// chat, $3 now.
pub const MOVE_CHAT_MESSAGES: &str = "UPDATE outbox SET chat_id = $2, reply_to_message_id = NULL, updated_at = $3
    WHERE chat_id = $1 AND status IN ('pending', 'sending')";

/// Sends an `unknown` message again: $1 id, $2 not before, $3 note, $4 now.
pub const REQUEUE_UNKNOWN: &str = "UPDATE outbox SET status = 'pending', not_before = $2, error = $3, updated_at = $4
    WHERE id = $1 AND status = 'unknown'";

/// Gives up on an `unknown` message: $1 id, $2 error, $3 now.
pub const FAIL_UNKNOWN: &str =
    "UPDATE outbox SET status = 'failed', error = $2, updated_at = $3 WHERE id = $1 AND status = 'unknown'";

/// An `outbox` row as the databases return it.
#[derive(Debug, sqlx::FromRow)]
struct OutboxRow {
    id: i64,
    idempotency_key: String,
    job_id: Option<i64>,
    chat_id: i64,
    kind: String,
    body: String,
    reply_to_message_id: Option<i64>,
    status: String,
    attempts: i64,
    lease_owner: Option<String>,
    lease_token: i64,
    lease_until: Option<i64>,
    telegram_message_id: Option<i64>,
    error: Option<String>,
    button_label: Option<String>,
    button_data: Option<String>,
    part: Option<i64>,
}

/// The separator of several buttons in `button_label` and `button_data`: a line break, which
/// neither docket's labels nor its callback data ever hold. One button is stored as before.
const BUTTON_SEPARATOR: char = '\n';

/// One column of `buttons` (labels or data), joined; NULL without buttons.
fn buttons_to_column(buttons: &[Button], part: impl Fn(&Button) -> &String) -> Option<String> {
    (!buttons.is_empty()).then(|| buttons.iter().map(|b| part(b).as_str()).collect::<Vec<_>>().join("\n"))
}

/// The buttons the two columns hold, in order.
fn buttons_from_columns(labels: Option<&str>, data: Option<&str>) -> Vec<Button> {
    match (labels, data) {
        (Some(labels), Some(data)) => labels
            .split(BUTTON_SEPARATOR)
            .zip(data.split(BUTTON_SEPARATOR))
            .map(|(label, data)| Button { label: label.to_owned(), data: data.to_owned() })
            .collect(),
        _ => Vec::new(),
    }
}

impl OutboxRow {
    /// The message the row holds; an unknown kind or state is corrupt.
    fn into_message(self) -> StoreResult<OutboxMessage> {
        Ok(OutboxMessage {
            id: OutboxId(self.id),
            idempotency_key: IdempotencyKey::from_stored(self.idempotency_key),
            job: self.job_id.map(Ticket),
            chat: ChatRef(self.chat_id),
            kind: self.kind.parse::<MessageKind>()?,
            body: self.body,
            reply_to_message_id: self.reply_to_message_id.map(MessageId),
            buttons: buttons_from_columns(self.button_label.as_deref(), self.button_data.as_deref()),
            part: self.part.and_then(|part| u32::try_from(part).ok()),
            state: self.status.parse::<OutboxState>()?,
            attempts: self.attempts,
            lease: lease(self.lease_owner, self.lease_token, self.lease_until),
            telegram_message_id: self.telegram_message_id.map(MessageId),
            error: self.error,
        })
    }
}

/// Queues `m` with [`ENQUEUE`], or a progress edit with [`REARM_PROGRESS`] and
/// [`UPSERT_PROGRESS`]; `false` when nothing changed (the key was queued before, or the edit is
/// stale or says nothing new).
pub(super) async fn enqueue(c: &mut Conn<'_>, m: &NewMessage, now: Timestamp) -> StoreResult<bool> {
    if m.kind == MessageKind::Progress {
        return upsert_progress(c, m, now).await;
    }
    let mut args = message_columns(m, now);
    args.extend(button_columns(m));
    args.push(m.part.map(i64::from).into());
    let inserted = c.execute(ENQUEUE, &args).await.context("queueing a message")?;
    Ok(inserted == 1)
}

/// The binds $1 to $8 of [`ENQUEUE`] and [`UPSERT_PROGRESS`]: the message's own columns, with
/// `now` as its creation time.
fn message_columns(m: &NewMessage, now: Timestamp) -> Vec<Arg<'_>> {
    vec![
        m.idempotency_key.as_str().into(),
        m.job.map(|t| t.0).into(),
        m.chat.0.into(),
        m.kind.as_str().into(),
        m.kind.priority().into(),
        (&m.body).into(),
        m.reply_to_message_id.map(|m| m.0).into(),
        now.into(),
    ]
}

/// The buttons' labels and data, the last two binds of [`ENQUEUE`] and [`UPSERT_PROGRESS`].
fn button_columns(m: &NewMessage) -> [Arg<'static>; 2] {
    [buttons_to_column(&m.buttons, |b| &b.label).into(), buttons_to_column(&m.buttons, |b| &b.data).into()]
}

/// A progress edit (`now`: when its state happened) re-arms the job's one progress row: a waiting
/// row takes the new text (coalesced: only the latest state goes out); a delivered or dropped one
/// is replaced by a new row, so it queues behind what its chat has waiting; a row being sent
/// takes the text too, and goes out again once the send ends.
async fn upsert_progress(c: &mut Conn<'_>, m: &NewMessage, now: Timestamp) -> StoreResult<bool> {
    // `now` is when the reported state happened: a report older than what the row shows (or
    // showed) is stale and changes nothing.
    c.execute(REARM_PROGRESS, &[m.idempotency_key.as_str().into(), now.into()])
        .await
        .map(drop)
        .context("re-arming a progress edit")?;
    // A new row waits PROGRESS_SETTLE, so a state that lasts less is replaced before it is shown
    // (a waiting row keeps its time: updates do not postpone it).
    let mut args = message_columns(m, now);
    args.push(now.plus(PROGRESS_SETTLE).into());
    args.extend(button_columns(m));
    let changed = c.execute(UPSERT_PROGRESS, &args).await.context("queueing a progress edit")?;
    Ok(changed == 1)
}

/// Claims the next deliverable message with the claim statement of the connection's backend
/// ([`ClaimSql::message`](super::statements::ClaimSql::message)), for `owner` with a lease of
/// `lease_len`.
pub(super) async fn claim_message(
    c: &mut Conn<'_>,
    owner: &str,
    node: Option<&NodeName>,
    now: Timestamp,
    lease_len: Duration,
) -> StoreResult<Option<OutboxMessage>> {
    let claim = c.claims().message;
    c.fetch_optional::<OutboxRow>(
        claim,
        &[owner.into(), now.plus(lease_len).into(), now.into(), node.map(NodeName::as_str).into()],
    )
    .await
    .context("claiming a message")?
    .map(OutboxRow::into_message)
    .transpose()
}

/// Runs [`MARK_SENT`] for `m` as sent; `false` when the lease was lost.
pub(super) async fn mark_sent(
    c: &mut Conn<'_>,
    m: &OutboxMessage,
    lease: &Lease,
    telegram_message_id: MessageId,
    telegram_file_id: Option<&str>,
    now: Timestamp,
) -> StoreResult<bool> {
    let marked = c
        .execute(
            MARK_SENT,
            &[
                m.id.0.into(),
                lease.token.into(),
                telegram_message_id.0.into(),
                telegram_file_id.into(),
                now.into(),
                (&m.body).into(),
            ],
        )
        .await
        .context("recording a delivery")?;
    Ok(marked == 1)
}

/// How many outbox rows are in each state (states without rows are left out).
pub const MESSAGES_BY_STATE: &str = "SELECT status, COUNT(*) FROM outbox GROUP BY status";

/// Runs [`MESSAGES_BY_STATE`]: every state with its count, zero included.
pub(super) async fn messages_by_state(c: &mut Conn<'_>) -> StoreResult<Vec<(OutboxState, u64)>> {
    c.count_by_state(MESSAGES_BY_STATE, OutboxState::ALL, OutboxState::as_str)
        .await
        .context("counting messages by state")
}

/// Runs [`MESSAGES`].
pub(super) async fn messages(c: &mut Conn<'_>, filter: &MessageFilter) -> StoreResult<Vec<OutboxMessage>> {
    let MessageFilter { chat, job } = *filter;
    c.fetch_all::<OutboxRow>(MESSAGES, &[chat.map(|chat| chat.0).into(), job.map(|t| t.0).into()])
        .await
        .context("listing messages")?
        .into_iter()
        .map(OutboxRow::into_message)
        .collect()
}

/// Runs [`SET_MESSAGE_STATE`]; `false` when the lease was lost.
pub(super) async fn set_message_state(
    c: &mut Conn<'_>,
    id: OutboxId,
    lease: &Lease,
    state: OutboxState,
    not_before: Option<Timestamp>,
    error: &str,
    now: Timestamp,
) -> StoreResult<bool> {
    let set = c
        .execute(
            SET_MESSAGE_STATE,
            &[
                id.0.into(),
                lease.token.into(),
                state.as_str().into(),
                not_before.map(Timestamp::as_millis).into(),
                error.into(),
                now.into(),
            ],
        )
        .await
        .context("updating a message")?;
    Ok(set == 1)
}

/// Runs [`RENEW_MESSAGE_LEASE`]; `false` when the lease was lost.
pub(super) async fn renew_lease(
    c: &mut Conn<'_>,
    id: OutboxId,
    lease: &Lease,
    until: Timestamp,
    now: Timestamp,
) -> StoreResult<bool> {
    let renewed = c
        .execute(RENEW_MESSAGE_LEASE, &[id.0.into(), lease.token.into(), until.into(), now.into()])
        .await
        .context("renewing a message lease")?;
    Ok(renewed == 1)
}

/// Runs [`CLOSE_DEAD_CHAT_MESSAGES`]; returns how many messages it ended.
pub(super) async fn close_dead_chat_messages(
    c: &mut Conn<'_>,
    chat: ChatRef,
    reason: &str,
    now: Timestamp,
) -> StoreResult<u64> {
    c.execute(CLOSE_DEAD_CHAT_MESSAGES, &[chat.0.into(), reason.into(), now.into()])
        .await
        .context("closing a dead chat's messages")
}

/// Runs [`STATUS_MESSAGE`]; `None` before the ticket reply was delivered.
pub(super) async fn status_message(c: &mut Conn<'_>, ticket: Ticket) -> StoreResult<Option<MessageId>> {
    let id: Option<Option<i64>> =
        c.scalar_optional(STATUS_MESSAGE, &[ticket.0.into()]).await.context("finding a job's status message")?;
    Ok(id.flatten().map(MessageId))
}

/// Runs [`NEXT_MESSAGE_DUE`].
pub(super) async fn next_message_due(c: &mut Conn<'_>) -> StoreResult<Option<Timestamp>> {
    let due: Option<i64> = c.scalar(NEXT_MESSAGE_DUE, &[]).await.context("finding the next due message")?;
    Ok(due.map(Timestamp::from_millis))
}

/// Runs [`LAPSE_MESSAGES`].
pub(super) async fn lapse_messages(c: &mut Conn<'_>, now: Timestamp) -> StoreResult<Vec<OutboxMessage>> {
    c.fetch_all::<OutboxRow>(LAPSE_MESSAGES, &[now.into()])
        .await
        .context("finding lapsed sends")?
        .into_iter()
        .map(OutboxRow::into_message)
        .collect()
}

/// Runs [`MOVE_CHAT_MESSAGES`]; returns how many messages moved.
pub(super) async fn move_chat_messages(
    c: &mut Conn<'_>,
    from: ChatRef,
    to: ChatRef,
    now: Timestamp,
) -> StoreResult<u64> {
    c.execute(MOVE_CHAT_MESSAGES, &[from.0.into(), to.0.into(), now.into()]).await.context("moving a chat's messages")
}

/// Runs [`REQUEUE_UNKNOWN`]; `false` when the message is not `unknown`.
pub(super) async fn requeue_unknown(
    c: &mut Conn<'_>,
    id: OutboxId,
    not_before: Timestamp,
    note: &str,
    now: Timestamp,
) -> StoreResult<bool> {
    let requeued = c
        .execute(REQUEUE_UNKNOWN, &[id.0.into(), not_before.into(), note.into(), now.into()])
        .await
        .context("requeueing a message")?;
    Ok(requeued == 1)
}

/// Runs [`FAIL_UNKNOWN`]; `false` when the message is not `unknown`.
pub(super) async fn fail_unknown(c: &mut Conn<'_>, id: OutboxId, error: &str, now: Timestamp) -> StoreResult<bool> {
    let failed =
        c.execute(FAIL_UNKNOWN, &[id.0.into(), error.into(), now.into()]).await.context("giving up on a message")?;
    Ok(failed == 1)
}

impl Store {
    /// Queues one message in its own transaction (for messages not tied to a state change,
    /// such as progress edits).
    pub async fn enqueue(&self, message: &NewMessage, now: Timestamp) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let queued = tx.enqueue(message, now).await?;
        tx.commit().await?;
        Ok(queued)
    }

    /// The Telegram message id of job `ticket`'s status message (its latest delivered ticket
    /// reply), which progress edits change.
    pub async fn status_message(&self, ticket: Ticket) -> StoreResult<Option<MessageId>> {
        status_message(&mut self.acquire().await?.conn(), ticket).await
    }

    /// The earliest time a `pending` message may become claimable, counting its own
    /// `not_before` and its chat's and the bot's pacing; `None` with nothing pending.
    pub async fn next_message_due(&self) -> StoreResult<Option<Timestamp>> {
        next_message_due(&mut self.acquire().await?.conn()).await
    }

    /// `sending` rows whose lease lapsed (their sender died mid-call) become `unknown`; they are
    /// returned so the sender can apply each kind's rule.
    pub async fn lapse_messages(&self, now: Timestamp) -> StoreResult<Vec<OutboxMessage>> {
        lapse_messages(&mut self.acquire().await?.conn(), now).await
    }

    /// Claims the next deliverable outgoing message: the oldest open one of its chat, by priority.
    /// A result waits while its job is being produced (again), and goes from disk only by the
    /// host that holds it; one with a stored Telegram file_id goes from any host.
    pub async fn claim_message(
        &self,
        owner: &str,
        now: Timestamp,
        lease_len: Duration,
    ) -> StoreResult<Option<OutboxMessage>> {
        match &self.pool {
            // SQLite's single writer serialises the claims already.
            Pool::Sqlite(_) => {
                claim_message(&mut self.acquire().await?.conn(), owner, self.node.as_ref(), now, lease_len).await
            }
            #[cfg(feature = "postgres")]
            Pool::Postgres(pool) => postgres::claim_message(pool, owner, self.node.as_ref(), now, lease_len).await,
        }
    }

    /// Extends a sender's lease on a message (long uploads). `false`: the lease was lost.
    pub async fn renew_message_lease(
        &self,
        id: OutboxId,
        lease: &Lease,
        until: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        renew_lease(&mut self.acquire().await?.conn(), id, lease, until, now).await
    }

    /// Puts a message back to `pending`, not before `not_before`.
    pub async fn retry_message(
        &self,
        id: OutboxId,
        lease: &Lease,
        not_before: Timestamp,
        error: &str,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let mut c = self.acquire().await?;
        set_message_state(&mut c.conn(), id, lease, OutboxState::Pending, Some(not_before), error, now).await
    }

    /// Ends a message in `state` (`dead`, `failed` or `unknown`) with the error.
    pub async fn close_message(
        &self,
        id: OutboxId,
        lease: &Lease,
        state: OutboxState,
        error: &str,
        now: Timestamp,
    ) -> StoreResult<bool> {
        set_message_state(&mut self.acquire().await?.conn(), id, lease, state, None, error, now).await
    }

    /// Sends an `unknown` message again: back to `pending`, with `note` saying why.
    pub async fn requeue_unknown(
        &self,
        id: OutboxId,
        not_before: Timestamp,
        note: &str,
        now: Timestamp,
    ) -> StoreResult<bool> {
        requeue_unknown(&mut self.acquire().await?.conn(), id, not_before, note, now).await
    }

    /// Gives up on an `unknown` message that has no attempts left: `failed`, with `error`.
    /// `false` when the row is not `unknown` (any more).
    pub async fn fail_unknown(&self, id: OutboxId, error: &str, now: Timestamp) -> StoreResult<bool> {
        fail_unknown(&mut self.acquire().await?.conn(), id, error, now).await
    }

    /// The messages `filter` selects, oldest first (status pages, tests).
    pub async fn messages(&self, filter: &MessageFilter) -> StoreResult<Vec<OutboxMessage>> {
        messages(&mut self.acquire().await?.conn(), filter).await
    }
}

impl Tx {
    /// Queues a message; `false` when its idempotency key was queued before.
    pub async fn enqueue(&mut self, message: &NewMessage, now: Timestamp) -> StoreResult<bool> {
        enqueue(&mut self.conn(), message, now).await
    }

    /// Gives the message `key`, while it is still `pending`, the text `body` and the buttons
    /// `buttons`, and holds it back until `not_before`; `false` when it is not pending any more
    /// (it went out).
    pub async fn defer_pending(
        &mut self,
        key: &IdempotencyKey,
        body: &str,
        buttons: &[Button],
        not_before: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let args = [
            key.as_str().into(),
            body.into(),
            not_before.into(),
            now.into(),
            buttons_to_column(buttons, |b| &b.label).into(),
            buttons_to_column(buttons, |b| &b.data).into(),
        ];
        Ok(self.conn().execute(DEFER_PENDING, &args).await.context("holding back a message")? == 1)
    }
}
