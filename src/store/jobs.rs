//! The `jobs` table: one row per chat and file, from intake to its result's expiry.

use super::{Conn, QueryContext, StoreResult};
use crate::domain::{ChatRef, Ticket, Timestamp};

/// Stores the file id of a delivered result, for re-delivery without upload: $1 job, $2 file id,
/// $3 now. Only while the result is `ready`.
pub const RECORD_RESULT_FILE_ID: &str =
    "UPDATE jobs SET result_file_id = $2, updated_at = $3 WHERE id = $1 AND status = 'ready'";

/// Moves a chat's jobs to its new id: $1 old chat, $2 new chat, $3 now. A file the new chat sent
/// already keeps its old row, since a chat has one job per file.
pub const MOVE_CHAT_JOBS: &str = "UPDATE jobs SET chat_id = $2, updated_at = $3
    WHERE chat_id = $1
      AND NOT EXISTS (SELECT 1 FROM jobs n WHERE n.chat_id = $2 AND n.file_unique_id = jobs.file_unique_id)";

/// Runs [`RECORD_RESULT_FILE_ID`].
pub(super) async fn record_result_file_id(
    c: &mut Conn<'_>,
    ticket: Ticket,
    file_id: &str,
    now: Timestamp,
) -> StoreResult<()> {
    dispatch!(c, |c| sqlx::query(RECORD_RESULT_FILE_ID)
        .bind(ticket.0)
        .bind(file_id)
        .bind(now.as_millis())
        .execute(c)
        .await
        .map(drop))
    .context("storing a result's file_id")
}

/// Runs [`MOVE_CHAT_JOBS`].
pub(super) async fn move_chat_jobs(c: &mut Conn<'_>, from: ChatRef, to: ChatRef, now: Timestamp) -> StoreResult<()> {
    dispatch!(c, |c| sqlx::query(MOVE_CHAT_JOBS)
        .bind(from.0)
        .bind(to.0)
        .bind(now.as_millis())
        .execute(c)
        .await
        .map(drop))
    .context("moving a chat's jobs")
}
