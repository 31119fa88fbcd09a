//! The `dead_chats` table: chats that refused the bot for good (blocked it, or removed it from the
//! group). Messages queued for them are stored `dead` without a call, until the chat writes again.

use super::{Conn, QueryContext, StoreResult, Tx};
use crate::domain::{ChatRef, Timestamp};

/// Records that a chat refused the bot: $1 chat, $2 reason, $3 now. A known one takes the new
/// reason.
pub const MARK_CHAT_DEAD: &str = "INSERT INTO dead_chats (chat_id, reason, since) VALUES ($1, $2, $3)
    ON CONFLICT (chat_id) DO UPDATE SET reason = excluded.reason";

/// Forgets that a chat refused the bot: $1 chat.
pub const REVIVE_CHAT: &str = "DELETE FROM dead_chats WHERE chat_id = $1";

/// Runs [`MARK_CHAT_DEAD`].
pub(super) async fn mark_dead(c: &mut Conn<'_>, chat: ChatRef, reason: &str, now: Timestamp) -> StoreResult<()> {
    c.execute(MARK_CHAT_DEAD, &[chat.0.into(), reason.into(), now.into()])
        .await
        .map(drop)
        .context("marking a chat dead")
}

/// Runs [`REVIVE_CHAT`]; `true` when the chat was dead.
pub(super) async fn revive(c: &mut Conn<'_>, chat: ChatRef) -> StoreResult<bool> {
    let revived = c.execute(REVIVE_CHAT, &[chat.0.into()]).await.context("reviving a chat")?;
    Ok(revived == 1)
}

/// How many chats refused the bot for good.
pub const DEAD_CHATS: &str = "SELECT COUNT(*) FROM dead_chats";

/// Runs [`DEAD_CHATS`].
pub(super) async fn dead_chats(c: &mut Conn<'_>) -> StoreResult<u64> {
    let n: i64 = c.scalar(DEAD_CHATS, &[]).await.context("counting dead chats")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

impl Tx {
    /// Forgets that `chat` was dead (it wrote to the bot again). `true` when it was.
    pub async fn revive_chat(&mut self, chat: ChatRef) -> StoreResult<bool> {
        revive(&mut self.conn(), chat).await
    }
}
