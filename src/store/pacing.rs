//! The `chat_pacing` table: until when a chat, or the bot as a whole, must not be called, and the
//! last reserved slot of the global rate limit ([`Paced`]). Shared by every docket on the
//! database and kept across restarts.
//!
//! The bot-wide pause and the send slots are rows under ids no Telegram chat has
//! ([`WHOLE_BOT`], [`SEND_SLOTS`]), so a message claim checks its chat's pause and the bot's in
//! one table; only this module knows those ids.

use std::time::Duration;

use super::{Conn, QueryContext, Store, StoreError, StoreResult};
use crate::domain::{ChatRef, Paced, Timestamp};

/// The row of [`Paced::WholeBot`]. The claim statements name it as the literal `0`.
pub const WHOLE_BOT: i64 = 0;

/// The row of [`Paced::SendSlots`].
pub const SEND_SLOTS: i64 = i64::MIN;

/// The `chat_id` that stores `paced`.
const fn key(paced: Paced) -> i64 {
    match paced {
        Paced::Chat(chat) => chat.0,
        Paced::WholeBot => WHOLE_BOT,
        Paced::SendSlots => SEND_SLOTS,
    }
}

/// What a stored `chat_id` paces.
const fn paced(key: i64) -> Paced {
    match key {
        WHOLE_BOT => Paced::WholeBot,
        SEND_SLOTS => Paced::SendSlots,
        chat => Paced::Chat(ChatRef(chat)),
    }
}

/// Pauses a chat (or the bot): $1 chat ([`WHOLE_BOT`] for the bot), $2 not before, $3 reason. An existing later pause is kept.
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

/// Runs [`PACE_CHAT`] for `what`.
pub(super) async fn pace(c: &mut Conn<'_>, what: Paced, not_before: Timestamp, reason: &str) -> StoreResult<()> {
    if what == Paced::SendSlots {
        return Err(StoreError::Misuse("pace the send slots (they are reserved, not paced)"));
    }
    c.execute(PACE_CHAT, &[key(what).into(), not_before.into(), reason.into()]).await.map(drop).context("pacing a chat")
}

/// Runs [`RESERVE_SEND_SLOT`] for calls `spacing` apart.
pub(super) async fn reserve_send_slot(c: &mut Conn<'_>, now: Timestamp, spacing: Duration) -> StoreResult<Timestamp> {
    let spacing = i64::try_from(spacing.as_millis()).unwrap_or(i64::MAX);
    // A last slot further ahead than any queue of senders could reserve means the clock went back
    // (an NTP step): the slots start again from now, instead of every call waiting out the step.
    let horizon = now.as_millis().saturating_add(60_000);
    let slot: i64 = c
        .scalar(
            RESERVE_SEND_SLOT,
            &[
                key(Paced::SendSlots).into(),
                now.into(),
                spacing.into(),
                ("the last reserved send slot (global rate limit)").into(),
                horizon.into(),
            ],
        )
        .await
        .context("reserving a send slot")?;
    Ok(Timestamp::from_millis(slot))
}

/// Runs [`PACING`]: what is paced, until when and why.
pub(super) async fn pacing(c: &mut Conn<'_>, now: Timestamp) -> StoreResult<Vec<(Paced, Timestamp, String)>> {
    let rows: Vec<(i64, i64, String)> = c.fetch_all(PACING, &[now.into()]).await.context("reading chat pacing")?;
    Ok(rows.into_iter().map(|(chat, until, reason)| (paced(chat), Timestamp::from_millis(until), reason)).collect())
}

impl Store {
    /// No call to `chat` before `not_before`; an existing later pause is kept. Shared by every
    /// sender and kept across restarts.
    pub async fn pace_chat(&self, chat: ChatRef, not_before: Timestamp, reason: &str) -> StoreResult<()> {
        pace(&mut self.acquire().await?.conn(), Paced::Chat(chat), not_before, reason).await
    }

    /// No call to any chat before `not_before` (the bot as a whole is limited); an existing later
    /// pause is kept.
    pub async fn pause_whole_bot(&self, not_before: Timestamp, reason: &str) -> StoreResult<()> {
        pace(&mut self.acquire().await?.conn(), Paced::WholeBot, not_before, reason).await
    }

    /// Reserves the next moment a call to Telegram may be made under the global rate limit, for
    /// every docket on this database together: `spacing` after the last slot reserved, or `now`
    /// if that is later. The caller waits until the returned moment, then calls. Kept as
    /// [`Paced::SendSlots`].
    pub async fn reserve_send_slot(&self, now: Timestamp, spacing: Duration) -> StoreResult<Timestamp> {
        reserve_send_slot(&mut self.acquire().await?.conn(), now, spacing).await
    }

    /// What is paced or paused beyond `now`, with until when and why: chats, the bot as a whole,
    /// and the send slots while the last reserved one is ahead of `now`.
    pub async fn pacing(&self, now: Timestamp) -> StoreResult<Vec<(Paced, Timestamp, String)>> {
        pacing(&mut self.acquire().await?.conn(), now).await
    }
}
