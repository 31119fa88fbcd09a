//! The `chat_modes` table: a chat's own default operation, set with `/mode`, for documents sent
//! without a caption.

use super::{Conn, QueryContext, Store, StoreError, StoreResult, Tx};
use crate::domain::{ChatRef, Operation, Timestamp};

/// A chat's default operation: $1 chat.
pub const CHAT_MODE: &str = "SELECT operation FROM chat_modes WHERE chat_id = $1";

/// Sets a chat's default operation: $1 chat, $2 operation, $3 now.
pub const SET_CHAT_MODE: &str = "INSERT INTO chat_modes (chat_id, operation, updated_at) VALUES ($1, $2, $3)
    ON CONFLICT (chat_id) DO UPDATE SET operation = excluded.operation, updated_at = excluded.updated_at";

/// Runs [`CHAT_MODE`].
pub(super) async fn chat_mode(c: &mut Conn<'_>, chat: ChatRef) -> StoreResult<Option<Operation>> {
    let name: Option<String> = c.scalar_optional(CHAT_MODE, &[chat.0.into()]).await.context("reading a chat's mode")?;
    name.map(|name| {
        Operation::from_stored(&name, "").map_err(|e| StoreError::Corrupt(format!("chat mode {name:?}: {e}")))
    })
    .transpose()
}

/// Runs [`SET_CHAT_MODE`]. The schema takes only operations without arguments.
pub(super) async fn set_chat_mode(
    c: &mut Conn<'_>,
    chat: ChatRef,
    operation: &Operation,
    now: Timestamp,
) -> StoreResult<()> {
    c.execute(SET_CHAT_MODE, &[chat.0.into(), operation.name().into(), now.into()])
        .await
        .map(drop)
        .context("setting a chat's mode")
}

impl Store {
    /// The chat's own default operation (`/mode`), if it set one.
    pub async fn chat_mode(&self, chat: ChatRef) -> StoreResult<Option<crate::domain::Operation>> {
        chat_mode(&mut self.acquire().await?.conn(), chat).await
    }
}

impl Tx {
    /// The chat's own default operation (`/mode`), if it set one.
    pub async fn chat_mode(&mut self, chat: ChatRef) -> StoreResult<Option<crate::domain::Operation>> {
        chat_mode(&mut self.conn(), chat).await
    }

    /// Sets the chat's default operation (one without arguments).
    pub async fn set_chat_mode(
        &mut self,
        chat: ChatRef,
        operation: &crate::domain::Operation,
        now: Timestamp,
    ) -> StoreResult<()> {
        set_chat_mode(&mut self.conn(), chat, operation, now).await
    }
}
