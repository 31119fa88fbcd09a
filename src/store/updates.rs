//! The `updates` and `poll_offsets` tables: which updates docket has handled (so a redelivered
//! one changes nothing), and the getUpdates offset polling continues from.

use super::{Conn, QueryContext, Store, StoreResult, Tx};
use crate::domain::{BotId, Timestamp, UpdateId};

/// What became of an update Telegram delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Handled: a job, a reply, or deliberately nothing.
    Recorded,
    /// Could not be handled (malformed or a bug); kept with its reason.
    Rejected,
}

impl UpdateOutcome {
    fn as_str(self) -> &'static str {
        match self {
            Self::Recorded => "recorded",
            Self::Rejected => "rejected",
        }
    }
}

/// Registers an update, once per bot and update id: $1 bot, $2 update id, $3 outcome, $4 reason,
/// $5 now. A repeat inserts nothing.
pub const REGISTER_UPDATE: &str = "INSERT INTO updates (bot_id, update_id, outcome, reason, received_at)
    VALUES ($1, $2, $3, $4, $5)
    ON CONFLICT (bot_id, update_id) DO NOTHING";

/// How an update was handled: $1 bot, $2 update id.
pub const UPDATE_OUTCOME: &str = "SELECT outcome, reason FROM updates WHERE bot_id = $1 AND update_id = $2";

/// Stores the poll offset, moving it only forward: $1 bot, $2 next offset, $3 now.
pub const ADVANCE_OFFSET: &str = "INSERT INTO poll_offsets (bot_id, next_offset, updated_at) VALUES ($1, $2, $3)
    ON CONFLICT (bot_id) DO UPDATE SET next_offset = excluded.next_offset, updated_at = excluded.updated_at
    WHERE poll_offsets.next_offset < excluded.next_offset";

/// The stored poll offset: $1 bot.
pub const POLL_OFFSET: &str = "SELECT next_offset FROM poll_offsets WHERE bot_id = $1";

/// Runs [`UPDATE_OUTCOME`]; `None` when the update was never registered.
pub(super) async fn update_outcome(
    c: &mut Conn<'_>,
    bot_id: BotId,
    update_id: UpdateId,
) -> StoreResult<Option<(UpdateOutcome, Option<String>)>> {
    let row: Option<(String, Option<String>)> =
        c.fetch_optional(UPDATE_OUTCOME, &[bot_id.0.into(), update_id.0.into()]).await.context("reading an update")?;
    Ok(row.map(|(outcome, reason)| {
        let outcome = if outcome == "recorded" { UpdateOutcome::Recorded } else { UpdateOutcome::Rejected };
        (outcome, reason)
    }))
}

/// Runs [`ADVANCE_OFFSET`].
pub(super) async fn advance_offset(
    c: &mut Conn<'_>,
    bot_id: BotId,
    next_offset: i64,
    now: Timestamp,
) -> StoreResult<()> {
    c.execute(ADVANCE_OFFSET, &[bot_id.0.into(), next_offset.into(), now.into()])
        .await
        .map(drop)
        .context("storing the poll offset")?;
    Ok(())
}

/// Runs [`POLL_OFFSET`]; `None` before the first offset was stored.
pub(super) async fn poll_offset(c: &mut Conn<'_>, bot_id: BotId) -> StoreResult<Option<i64>> {
    c.scalar_optional(POLL_OFFSET, &[bot_id.0.into()]).await.context("reading the poll offset")
}

impl Store {
    /// The getUpdates offset to continue from, if any was stored.
    pub async fn poll_offset(&self, bot_id: BotId) -> StoreResult<Option<i64>> {
        poll_offset(&mut self.acquire().await?.conn(), bot_id).await
    }

    /// Whether an update was registered, and how.
    pub async fn update_outcome(
        &self,
        bot_id: BotId,
        update_id: UpdateId,
    ) -> StoreResult<Option<(UpdateOutcome, Option<String>)>> {
        update_outcome(&mut self.acquire().await?.conn(), bot_id, update_id).await
    }
}

impl Tx {
    /// Registers an update once, with [`REGISTER_UPDATE`]. `false`: it was registered before (a
    /// repeat). Only in a transaction: the update's id commits with what it led to.
    pub async fn register_update(
        &mut self,
        bot_id: BotId,
        update_id: UpdateId,
        outcome: UpdateOutcome,
        reason: Option<&str>,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let inserted = self
            .conn()
            .execute(
                REGISTER_UPDATE,
                &[bot_id.0.into(), update_id.0.into(), outcome.as_str().into(), reason.into(), now.into()],
            )
            .await
            .context("registering an update")?;
        Ok(inserted == 1)
    }

    /// Moves the stored poll offset forward to `next_offset` (never back).
    pub async fn advance_offset(&mut self, bot_id: BotId, next_offset: i64, now: Timestamp) -> StoreResult<()> {
        advance_offset(&mut self.conn(), bot_id, next_offset, now).await
    }
}
