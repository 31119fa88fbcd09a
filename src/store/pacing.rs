//! The `chat_pacing` table: until when a chat (or, as [`WHOLE_BOT`](super::WHOLE_BOT), the bot
//! as a whole) must not be called, and, as [`SEND_SLOTS`], the last reserved slot of the global
//! rate limit. Shared by every docket on the database and kept across restarts.

use std::time::Duration;

use super::{Conn, QueryContext, SEND_SLOTS, StoreResult};
use crate::domain::Timestamp;

/// Pauses a chat: $1 chat, $2 not before, $3 reason. An existing later pause is kept.
pub const PACE_CHAT: &str = "INSERT INTO chat_pacing (chat_id, not_before, reason) VALUES ($1, $2, $3)
    ON CONFLICT (chat_id) DO UPDATE SET not_before = excluded.not_before, reason = excluded.reason
    WHERE chat_pacing.not_before < excluded.not_before";

/// Reserves the next send slot and returns it: $1 [`SEND_SLOTS`], $2 now, $3 the spacing in ms,
/// $4 the row's reason, $5 the horizon (now + 1 minute). The slot is `spacing` after the last one,
/// or now if that is later, or now again if the last one lies beyond the horizon.
pub const RESERVE_SEND_SLOT: &str = "INSERT INTO chat_pacing (chat_id, not_before, reason) VALUES ($1, $2, $4)
    ON CONFLICT (chat_id) DO UPDATE
       SET not_before = CASE WHEN chat_pacing.not_before + $3 > $2 AND chat_pacing.not_before <= $5
                             THEN chat_pacing.not_before + $3 ELSE $2 END
    RETURNING not_before";

/// The pacing rows still ahead of $1 now, by chat.
pub const PACING: &str = "SELECT chat_id, not_before, reason FROM chat_pacing WHERE not_before > $1 ORDER BY chat_id";

/// Runs [`PACE_CHAT`].
pub(super) async fn pace_chat(c: &mut Conn<'_>, chat: i64, not_before: Timestamp, reason: &str) -> StoreResult<()> {
    dispatch!(c, |c| sqlx::query(PACE_CHAT)
        .bind(chat)
        .bind(not_before.as_millis())
        .bind(reason)
        .execute(c)
        .await
        .map(drop))
    .context("pacing a chat")
}

/// Runs [`RESERVE_SEND_SLOT`] for calls `spacing` apart.
pub(super) async fn reserve_send_slot(c: &mut Conn<'_>, now: Timestamp, spacing: Duration) -> StoreResult<Timestamp> {
    let spacing = i64::try_from(spacing.as_millis()).unwrap_or(i64::MAX);
    // A last slot further ahead than any queue of senders could reserve means the clock went back
    // (an NTP step): the slots start again from now, instead of every call waiting out the step.
    let horizon = now.as_millis().saturating_add(60_000);
    let slot: i64 = dispatch!(c, |c| sqlx::query_scalar(RESERVE_SEND_SLOT)
        .bind(SEND_SLOTS)
        .bind(now.as_millis())
        .bind(spacing)
        .bind("the last reserved send slot (global rate limit)")
        .bind(horizon)
        .fetch_one(c)
        .await)
    .context("reserving a send slot")?;
    Ok(Timestamp::from_millis(slot))
}

/// Runs [`PACING`]: each chat ([`WHOLE_BOT`](super::WHOLE_BOT) for the bot) with until when and
/// why.
pub(super) async fn pacing(c: &mut Conn<'_>, now: Timestamp) -> StoreResult<Vec<(i64, Timestamp, String)>> {
    let rows: Vec<(i64, i64, String)> =
        dispatch!(c, |c| sqlx::query_as(PACING).bind(now.as_millis()).fetch_all(c).await)
            .context("reading chat pacing")?;
    Ok(rows.into_iter().map(|(chat, until, reason)| (chat, Timestamp::from_millis(until), reason)).collect())
}
