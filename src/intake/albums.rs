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
//! An album with a picture in it becomes one PDF. An album of documents only (PDFs, as a rule)
//! becomes one if a part's caption says `merge` (Telegram puts an album's caption on its first
//! message); without one, its reply asks, with two buttons: "merge" makes the ticket due at
//! once, "each on its own" ends it and makes each file a ticket of its own, as if sent alone.
//! While it waits for the answer, the ticket's `not_before` is `[limits] merge_idle` ahead, so
//! an album nobody answered is merged as it is, as an unfinished `/merge` is. The job's
//! `chosen_by_default` says it is still to be asked (nobody chose).
//!
//! No part's size is checked here: the download stage checks each, and fails the whole ticket
//! naming the part that does not fit, so nothing half-made is sent.

use tracing::{debug, info};

use super::addressing::{Me, operation_words};
use super::{Intake, Recorded, chat_lang};
use crate::domain::incoming::{DocumentFacts, Origin};
use crate::domain::{
    Button, FailureReason, IdempotencyKey, JobState, MessageKind, NewMessage, Operation, SourcePart, Submission,
    Ticket, Timestamp, UpdateId,
};
use crate::store::{StoreResult, Tx};
use crate::texts::{self, Lang, Progress};

/// The callback data of the button that merges an album's files: this, then its ticket's number.
pub(super) const ALBUM_MERGE_PREFIX: &str = "album:merge:";

/// The callback data of the button that takes an album's files each on its own: this, then its
/// ticket's number.
pub(super) const ALBUM_EACH_PREFIX: &str = "album:each:";

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
        let asks_merge = self.caption_asks_merge(facts);
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
                let Some(ticket) =
                    self.open_album(tx, update_id, origin, facts, (album, &part), asks_merge, lang).await?
                else {
                    return Ok(Some(Recorded::RefusedQueueFull));
                };
                ticket
            }
        };
        self.hold_album(tx, ticket, lang, asks_merge, quiet_until, now).await?;
        info!(ticket = %ticket, update.id = %update_id, "took a part of an album");
        Ok(Some(Recorded::AddedFile(ticket)))
    }

    /// Whether the caption of `facts`'s message asks for `merge`.
    fn caption_asks_merge(&self, facts: &DocumentFacts) -> bool {
        let settings = self.settings.get();
        let words = operation_words(facts.caption.as_deref().unwrap_or_default(), Me::of(&settings));
        matches!(Operation::parse(&words), Ok(Operation::Merge))
    }

    /// The ticket of the new album `album`, with `part` its first file; `None` when the chat's
    /// queue is full (the chat is told so).
    #[allow(clippy::too_many_arguments)]
    async fn open_album(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        facts: &DocumentFacts,
        (album, part): (&str, &SourcePart),
        asks_merge: bool,
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
            chosen_by_default: !asks_merge,
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

    /// Holds `ticket` back until the album is quiet, or, while it is still to be asked (only
    /// documents, and no caption said `merge`), until the wait for the answer ends; and rewrites
    /// its reply, held back as long, to list every part so far (with the question, when asked).
    async fn hold_album(
        &self,
        tx: &mut Tx,
        ticket: Ticket,
        lang: Lang,
        asks_merge: bool,
        quiet_until: Timestamp,
        now: Timestamp,
    ) -> StoreResult<()> {
        let parts = tx.source_parts(ticket).await?;
        // Read after this part's update locked the row, so no other part's caption is missed.
        let nobody_chose = tx.job(ticket).await?.is_some_and(|job| job.submission.chosen_by_default);
        let still_to_ask = nobody_chose && !asks_merge;
        let ask = still_to_ask && !parts.iter().any(declares_a_picture);
        let wait = self.settings.get().merge_idle;
        tx.hold_album(ticket, if ask { now.plus(wait) } else { quiet_until }, still_to_ask).await?;
        let ahead = tx.jobs_ahead(ticket, texts::QUEUE_COUNT_CAP).await?;
        let (text, buttons) = if ask {
            (texts::album_question(lang, &parts, ticket, ahead, wait), question_buttons(lang, ticket))
        } else {
            (texts::album_reply(lang, &parts, ticket, ahead), Vec::new())
        };
        tx.defer_pending(&IdempotencyKey::ticket_reply(ticket), &text, &buttons, quiet_until, now).await?;
        Ok(())
    }

    /// A press on one of an album's question's buttons (`data` as [`ALBUM_MERGE_PREFIX`] or
    /// [`ALBUM_EACH_PREFIX`] make it): its ticket merged, or taken apart into a ticket per file.
    /// A question answered before, or another chat's ticket, changes nothing. Returns whether a
    /// job ended.
    pub(super) async fn album_answered(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        data: &str,
    ) -> StoreResult<bool> {
        let (merge, number) = match (data.strip_prefix(ALBUM_MERGE_PREFIX), data.strip_prefix(ALBUM_EACH_PREFIX)) {
            (Some(number), _) => (true, number),
            (_, Some(number)) => (false, number),
            _ => return Ok(false),
        };
        let job = match number.parse().map(Ticket) {
            Ok(ticket) => tx.job(ticket).await?.filter(|job| job.submission.chat == origin.chat),
            Err(_) => None,
        };
        let Some(job) = job else {
            debug!(update.id = %update_id, "an album button for no ticket of this chat; ignored");
            return Ok(false);
        };
        let lang = chat_lang(tx, origin.chat).await?;
        let now = self.clock.now();
        let ticket = job.ticket;
        if merge {
            if tx.merge_album(ticket, now).await? {
                let parts = tx.source_parts(ticket).await?;
                let ahead = tx.jobs_ahead(ticket, texts::QUEUE_COUNT_CAP).await?;
                self.edit_status(tx, origin, ticket, texts::album_reply(lang, &parts, ticket, ahead)).await?;
                info!(ticket = %ticket, update.id = %update_id, "an album is to be merged, as asked");
            }
            return Ok(false);
        }
        if !tx.take_apart_album(ticket, now).await? {
            return Ok(false);
        }
        let reason = texts::failure_reason(lang, job.name(), &FailureReason::TakenApart);
        let detail = "the person took the album's files each on its own";
        let ended = tx.cancel_job(ticket, JobState::Accepted, &reason, detail, now).await?;
        let mut tickets = Vec::new();
        for part in tx.source_parts(ticket).await? {
            let facts = DocumentFacts {
                file_id: part.file_id,
                file_unique_id: part.file_unique_id,
                name: part.declared_name,
                mime: part.declared_mime,
                size: part.declared_size.and_then(|size| u64::try_from(size).ok()),
                caption: None,
                language_code: job.submission.language_code.clone(),
                media_group_id: None,
            };
            // Each file's own answer replies to its own message.
            let at_the_file = Origin { message_id: part.message_id, ..origin };
            if let Recorded::Submission(own) | Recorded::KnownFile(own) =
                self.one_document(tx, update_id, at_the_file, facts).await?
            {
                tickets.push(own);
            }
        }
        let text = texts::progress(lang, &job, &Progress::TakenApart { tickets: tickets.clone() });
        self.edit_status(tx, origin, ticket, text).await?;
        info!(ticket = %ticket, update.id = %update_id, files = tickets.len(), "an album's files were taken each on its own, as asked");
        Ok(ended)
    }

    /// Edits `ticket`'s status message to `body` (which takes its buttons away).
    async fn edit_status(&self, tx: &mut Tx, origin: Origin, ticket: Ticket, body: String) -> StoreResult<()> {
        let edit = NewMessage {
            idempotency_key: IdempotencyKey::progress(ticket),
            job: Some(ticket),
            chat: origin.chat,
            kind: MessageKind::Progress,
            body,
            reply_to_message_id: None,
            buttons: Vec::new(),
            part: None,
        };
        tx.enqueue(&edit, self.clock.now()).await?;
        Ok(())
    }
}

/// Whether `part` says it is a picture (its declared name or MIME type): an album with one is
/// merged without asking.
fn declares_a_picture(part: &SourcePart) -> bool {
    crate::detect::declared_label(part.declared_name.as_deref(), part.declared_mime.as_deref())
        .is_some_and(|label| label != "pdf" && Operation::Merge.accepts().contains(&label))
}

/// The two answers to an album's question, for its ticket `ticket`.
fn question_buttons(lang: Lang, ticket: Ticket) -> Vec<Button> {
    vec![
        Button { label: texts::album_merge_button(lang), data: format!("{ALBUM_MERGE_PREFIX}{}", ticket.0) },
        Button { label: texts::album_each_button(lang), data: format!("{ALBUM_EACH_PREFIX}{}", ticket.0) },
    ]
}
