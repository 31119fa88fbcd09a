//! Albums: the messages of one Telegram `media_group_id` are one ticket, whose files become one
//! PDF in album order (`merge`).
//!
//! Telegram sends an album as one update per message, which may come in different getUpdates
//! batches or webhook calls, and to different hosts. The first part opens the ticket; each part
//! adds its file and moves the ticket's `not_before` to its own arrival plus `[limits]
//! album_quiet_window`, so no download takes the ticket until the album has been quiet that long
//! (the store's rule, the same on every host). The download claim that takes it seals it, and
//! a part that comes after that is a file of its own. The ticket reply waits as long, and is
//! rewritten with each part, so it lists every file once it goes out, in reply to the first.
//!
//! An album's caption (Telegram puts it on its first message) does not change what it becomes:
//! an album is one PDF. No part's size is checked here: the download stage checks each, and
//! fails the whole ticket naming the part that does not fit, so nothing half-made is sent.

use tracing::info;

use super::{Intake, Recorded};
use crate::domain::incoming::{DocumentFacts, Origin};
use crate::domain::{IdempotencyKey, Operation, SourcePart, Submission, Ticket, Timestamp, UpdateId};
use crate::store::{StoreResult, Tx};
use crate::texts::{self, Lang};

impl Intake {
    /// A part of the album `album`: added to the album's ticket, or the first of a new one;
    /// `None` when the album's ticket was sealed already, so the part is a file of its own.
    pub(super) async fn album_part(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        facts: &DocumentFacts,
        album: &str,
        lang: Lang,
    ) -> StoreResult<Option<Recorded>> {
        let now = self.clock.now();
        let quiet_until = now.plus(self.settings.get().album_quiet_window);
        let part = SourcePart::of(facts, origin.message_id);
        let ticket = match tx.job_by_album(origin.chat, album).await? {
            Some(job) => {
                if !tx.extend_gathering(job.ticket, quiet_until, now).await? {
                    info!(ticket = %job.ticket, update.id = %update_id, "an album's part came after its ticket was sealed; a file of its own");
                    return Ok(None);
                }
                tx.add_source_part(job.ticket, &part, 0).await?;
                job.ticket
            }
            None => {
                let Some(ticket) = self.open_album(tx, update_id, origin, facts, album, &part, lang).await? else {
                    return Ok(Some(Recorded::RefusedQueueFull));
                };
                ticket
            }
        };
        self.hold_album_reply(tx, ticket, lang, quiet_until, now).await?;
        info!(ticket = %ticket, update.id = %update_id, "took a part of an album");
        Ok(Some(Recorded::AddedFile(ticket)))
    }

    /// The ticket of a new album, with `part` its first file; `None` when the chat's queue is
    /// full (the chat is told so).
    #[allow(clippy::too_many_arguments)]
    async fn open_album(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        facts: &DocumentFacts,
        album: &str,
        part: &SourcePart,
        lang: Lang,
    ) -> StoreResult<Option<Ticket>> {
        let submission = Submission {
            update_id,
            chat: origin.chat,
            user_id: origin.user,
            message_id: origin.message_id,
            file_id: part.file_id.clone(),
            // Never a file's own: Telegram's ids have no colon.
            file_unique_id: format!("album:{album}"),
            declared_name: part.declared_name.clone(),
            declared_mime: None,
            declared_size: part.declared_size,
            operation: Operation::Merge,
            chosen_by_default: false,
            language_code: facts.language_code.clone(),
            run_of: None,
        };
        let reply = |ticket, ahead| texts::album_reply(lang, std::slice::from_ref(part), ticket, ahead);
        let Some(ticket) = self.open_run(tx, update_id, origin, &submission, lang, reply).await? else {
            return Ok(None);
        };
        let quiet_until = self.clock.now().plus(self.settings.get().album_quiet_window);
        tx.start_album(ticket, album, quiet_until).await?;
        tx.add_source_part(ticket, part, 0).await?;
        Ok(Some(ticket))
    }

    /// Rewrites `ticket`'s reply to list every part so far, and holds it back until the album is
    /// quiet.
    async fn hold_album_reply(
        &self,
        tx: &mut Tx,
        ticket: Ticket,
        lang: Lang,
        quiet_until: Timestamp,
        now: Timestamp,
    ) -> StoreResult<()> {
        let parts = tx.source_parts(ticket).await?;
        let ahead = tx.jobs_ahead(ticket, texts::QUEUE_COUNT_CAP).await?;
        let text = texts::album_reply(lang, &parts, ticket, ahead);
        tx.defer_pending(&IdempotencyKey::ticket_reply(ticket), &text, quiet_until, now).await?;
        Ok(())
    }
}
