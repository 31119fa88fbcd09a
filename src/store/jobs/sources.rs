//! The sources of a ticket of several files (a Telegram album, or the files of a `/merge`): its
//! parts, in order, in `job_sources`, keyed by the ticket's first run; and its gathering, which
//! stays open while files keep coming and is sealed by the download claim that takes the job
//! ([`ClaimSql::download`](crate::store::statements::ClaimSql) sets `gathering` NULL), or for a
//! merge by `/done` ([`SEAL_MERGE`]).
//!
//! The quiet window is the job's own `not_before`: each file moves it to its arrival plus the
//! window, so no claim takes the job before the ticket has been quiet that long, on whichever
//! host, and no timer of one process decides it.

use super::Conn;
use crate::domain::{ChatRef, Job, MessageId, SourcePart, Ticket, Timestamp};
use crate::store::{QueryContext, Store, StoreResult, Tx};

/// A chat's ticket for an album: $1 chat, $2 the album's media_group_id.
pub const JOB_BY_ALBUM: &str = "SELECT * FROM jobs WHERE chat_id = $1 AND media_group_id = $2 AND ticket_id IS NULL";

/// Opens the gathering of a new album's ticket: $1 ticket, $2 media_group_id, $3 the end of
/// its quiet window.
pub const START_ALBUM: &str =
    "UPDATE jobs SET gathering = 'album', media_group_id = $2, not_before = $3 WHERE id = $1 AND status = 'accepted'";

/// Holds a gathering album's ticket until `$2` (the end of its quiet window, or of the wait for
/// an answer to its question), and notes whether it is still to be asked: $1 ticket, $3 1 while
/// no part's caption asked to merge it (the job's `chosen_by_default`: nobody chose yet).
pub const HOLD_ALBUM: &str = "UPDATE jobs SET not_before = $2, chosen_by_default = $3
    WHERE id = $1 AND gathering = 'album' AND status = 'accepted'";

/// The answer "merge" to an album's question: its ticket is due now: $1 ticket, $2 now. Zero
/// rows: it was answered already, or is on its way.
pub const MERGE_ALBUM: &str = "UPDATE jobs SET chosen_by_default = 0, not_before = $2, updated_at = $2
    WHERE id = $1 AND gathering = 'album' AND status = 'accepted' AND chosen_by_default = 1";

/// The answer "each on its own" to an album's question: its ticket stops gathering, to be ended
/// as its files become tickets of their own: $1 ticket, $2 now. Zero rows: it was answered
/// already, or is on its way.
pub const TAKE_APART_ALBUM: &str = "UPDATE jobs SET gathering = NULL, updated_at = $2
    WHERE id = $1 AND gathering = 'album' AND status = 'accepted' AND chosen_by_default = 1";

/// A chat's open `/merge`: $1 chat.
pub const OPEN_MERGE: &str = "SELECT * FROM jobs WHERE chat_id = $1 AND gathering = 'merge'";

/// Opens the gathering of a new `/merge` ticket: $1 ticket, $2 the end of its quiet window.
pub const START_MERGE: &str =
    "UPDATE jobs SET gathering = 'merge', not_before = $2 WHERE id = $1 AND status = 'accepted'";

/// Moves the end of a gathering ticket's quiet window while it still takes files: $1 ticket, $2
/// the new end, $3 now. Zero rows: it was sealed (a download took it, or `/done`).
pub const EXTEND_GATHERING: &str = "UPDATE jobs SET not_before = $2, updated_at = $3
    WHERE id = $1 AND gathering IS NOT NULL AND status = 'accepted'";

/// Seals an open `/merge`, due now: $1 ticket, $2 now.
pub const SEAL_MERGE: &str = "UPDATE jobs SET gathering = NULL, not_before = $2, updated_at = $2
    WHERE id = $1 AND gathering = 'merge' AND status = 'accepted'";

/// Adds a source to ticket $1 after its last one: $2 message, $3 file_id, $4 file_unique_id, $5
/// declared name, $6 declared MIME type, $7 declared size. A file the ticket holds already is
/// not added again. Run after [`EXTEND_GATHERING`] (or a start), whose row lock keeps two
/// parts from taking the same position.
pub const ADD_SOURCE_PART: &str = "INSERT INTO job_sources (job_id, position, message_id, file_id, file_unique_id,
        declared_name, declared_mime, declared_size)
    VALUES ($1, (SELECT COALESCE(MAX(s.position), 0) + 1 FROM job_sources s WHERE s.job_id = $1), $2, $3, $4, $5, $6, $7)
    ON CONFLICT (job_id, file_unique_id) DO NOTHING";

/// Sets ticket $1's declared size to the total its sources declared (a source that declared
/// none counts $2).
pub const TOTAL_DECLARED_SIZE: &str = "UPDATE jobs SET declared_size =
        (SELECT SUM(COALESCE(s.declared_size, $2)) FROM job_sources s WHERE s.job_id = $1)
    WHERE id = $1";

/// Ticket $1's sources, in album order: Telegram's message order, then arrival.
pub const SOURCE_PARTS: &str = "SELECT position, message_id, file_id, file_unique_id, declared_name, declared_mime,
        declared_size
    FROM job_sources WHERE job_id = $1 ORDER BY message_id, position";

/// A `job_sources` row as the databases return it.
#[derive(Debug, sqlx::FromRow)]
struct SourcePartRow {
    position: i64,
    message_id: i64,
    file_id: String,
    file_unique_id: String,
    declared_name: Option<String>,
    declared_mime: Option<String>,
    declared_size: Option<i64>,
}

impl From<SourcePartRow> for SourcePart {
    fn from(row: SourcePartRow) -> Self {
        Self {
            position: u32::try_from(row.position).unwrap_or(u32::MAX),
            message_id: MessageId(row.message_id),
            file_id: row.file_id,
            file_unique_id: row.file_unique_id,
            declared_name: row.declared_name,
            declared_mime: row.declared_mime,
            declared_size: row.declared_size,
        }
    }
}

async fn source_parts(c: &mut Conn<'_>, ticket: Ticket) -> StoreResult<Vec<SourcePart>> {
    let rows: Vec<SourcePartRow> =
        c.fetch_all(SOURCE_PARTS, &[ticket.0.into()]).await.context("reading a ticket's sources")?;
    Ok(rows.into_iter().map(SourcePart::from).collect())
}

impl Store {
    /// The sources of `ticket` (a ticket's number: its first run), in album order; empty for a
    /// ticket of one file.
    pub async fn source_parts(&self, ticket: Ticket) -> StoreResult<Vec<SourcePart>> {
        source_parts(&mut self.acquire().await?.conn(), ticket).await
    }
}

impl Tx {
    /// The chat's ticket for the album `media_group_id`, if it has one.
    pub async fn job_by_album(&mut self, chat: ChatRef, media_group_id: &str) -> StoreResult<Option<Job>> {
        let args = [chat.0.into(), media_group_id.into()];
        Ok(self.conn().jobs(JOB_BY_ALBUM, &args, "finding an album's ticket").await?.pop())
    }

    /// Opens the gathering of `ticket`, a new album's, until `quiet_until`.
    pub async fn start_album(
        &mut self,
        ticket: Ticket,
        media_group_id: &str,
        quiet_until: Timestamp,
    ) -> StoreResult<()> {
        let args = [ticket.0.into(), media_group_id.into(), quiet_until.into()];
        self.conn().execute(START_ALBUM, &args).await.context("opening an album")?;
        Ok(())
    }

    /// Keeps `ticket` (an album's, or a `/merge`'s) taking files until `quiet_until`; `false`
    /// when it was sealed already.
    pub async fn extend_gathering(
        &mut self,
        ticket: Ticket,
        quiet_until: Timestamp,
        now: Timestamp,
    ) -> StoreResult<bool> {
        let args = [ticket.0.into(), quiet_until.into(), now.into()];
        Ok(self.conn().execute(EXTEND_GATHERING, &args).await.context("extending a gathering")? == 1)
    }

    /// Holds the gathering album `ticket` until `due`; `still_to_ask`: no part's caption asked
    /// to merge it so far.
    pub async fn hold_album(&mut self, ticket: Ticket, due: Timestamp, still_to_ask: bool) -> StoreResult<()> {
        let args = [ticket.0.into(), due.into(), i64::from(still_to_ask).into()];
        self.conn().execute(HOLD_ALBUM, &args).await.context("holding an album")?;
        Ok(())
    }

    /// Answers the album `ticket`'s question with "merge": due now; `false` when it was
    /// answered already or is on its way.
    pub async fn merge_album(&mut self, ticket: Ticket, now: Timestamp) -> StoreResult<bool> {
        let merged =
            self.conn().execute(MERGE_ALBUM, &[ticket.0.into(), now.into()]).await.context("merging an album")?;
        Ok(merged == 1)
    }

    /// Answers the album `ticket`'s question with "each on its own": it takes no more parts, and
    /// is the caller's to end; `false` when it was answered already or is on its way.
    pub async fn take_apart_album(&mut self, ticket: Ticket, now: Timestamp) -> StoreResult<bool> {
        let args = [ticket.0.into(), now.into()];
        Ok(self.conn().execute(TAKE_APART_ALBUM, &args).await.context("taking an album apart")? == 1)
    }

    /// The chat's open `/merge`, if it has one.
    pub async fn open_merge(&mut self, chat: ChatRef) -> StoreResult<Option<Job>> {
        Ok(self.conn().jobs(OPEN_MERGE, &[chat.0.into()], "finding a chat's open merge").await?.pop())
    }

    /// Opens the gathering of `ticket`, a new `/merge`'s, until `quiet_until`.
    pub async fn start_merge(&mut self, ticket: Ticket, quiet_until: Timestamp) -> StoreResult<()> {
        self.conn().execute(START_MERGE, &[ticket.0.into(), quiet_until.into()]).await.context("opening a merge")?;
        Ok(())
    }

    /// Seals the open `/merge` `ticket`, due now; `false` when it was not open any more.
    pub async fn seal_merge(&mut self, ticket: Ticket, now: Timestamp) -> StoreResult<bool> {
        let sealed =
            self.conn().execute(SEAL_MERGE, &[ticket.0.into(), now.into()]).await.context("sealing a merge")?;
        Ok(sealed == 1)
    }

    /// Adds `part` after `ticket`'s last source, and sets the ticket's declared size to their
    /// total (`unknown_size` for a part that declared none); `false` when the ticket holds that
    /// file already.
    pub async fn add_source_part(&mut self, ticket: Ticket, part: &SourcePart, unknown_size: i64) -> StoreResult<bool> {
        let args = [
            ticket.0.into(),
            part.message_id.0.into(),
            (&part.file_id).into(),
            (&part.file_unique_id).into(),
            (&part.declared_name).into(),
            (&part.declared_mime).into(),
            part.declared_size.into(),
        ];
        let added = self.conn().execute(ADD_SOURCE_PART, &args).await.context("adding a source")? == 1;
        let args = [ticket.0.into(), unknown_size.into()];
        self.conn().execute(TOTAL_DECLARED_SIZE, &args).await.context("adding up a ticket's sizes")?;
        Ok(added)
    }

    /// The sources of `ticket`, in album order, inside the transaction.
    pub async fn source_parts(&mut self, ticket: Ticket) -> StoreResult<Vec<SourcePart>> {
        source_parts(&mut self.conn(), ticket).await
    }
}
