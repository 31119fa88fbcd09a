//! `/merge`: the files a chat sends between `/merge` and `/done` are one ticket, whose files
//! become one PDF in the order they came (`merge`), like an album's.
//!
//! `/merge` opens the ticket at once (its reply is the ticket reply), gathering until `/done`
//! or the Done button under each "added" answer seals it; `/cancel` alone drops it. Each file
//! sent meanwhile, whatever its caption, is added and answered with how many there are, up to
//! `[limits] merge_files` and `merge_bytes`; a file over either is refused and the merge stays
//! open. A chat has one open merge at a time (the store's `jobs_merging` index). Its quiet
//! window is `[limits] merge_idle`: a merge nobody finished is merged as it is once no file came
//! for that long, by the download claim that takes it, as an album is.

use tracing::info;

use super::commands::cancel_job;
use super::{Intake, Recorded, chat_lang};
use crate::domain::incoming::{DocumentFacts, Origin};
use crate::domain::{
    Button, IdempotencyKey, Job, MessageKind, NewMessage, Operation, SourcePart, Submission, UpdateId,
};
use crate::store::{StoreResult, Tx};
use crate::texts::{self, Lang};

/// The callback data of the button that finishes the chat's merge, as `/done` does.
pub(super) const MERGE_DONE: &str = "merge:done";

impl Intake {
    /// `/merge`: opens the chat's merge, or says which one is open.
    pub(super) async fn open_merge(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin) -> StoreResult<Recorded> {
        let lang = chat_lang(tx, origin.chat).await?;
        let settings = self.settings.get();
        if let Some(open) = tx.open_merge(origin.chat).await? {
            let count = tx.source_parts(open.ticket).await?.len();
            let text = texts::merge_still_open(lang, open.ticket, count);
            self.reply_with_buttons(tx, update_id, origin, text, vec![done_button(lang)]).await?;
            return Ok(Recorded::Answered);
        }
        let submission = Submission {
            update_id,
            chat: origin.chat,
            user_id: origin.user,
            message_id: origin.message_id,
            file_id: String::new(),
            // Never a file's own: Telegram's ids have no colon.
            file_unique_id: format!("merge:{}", update_id.0),
            declared_name: None,
            declared_mime: None,
            declared_size: Some(0),
            operation: Operation::Merge,
            chosen_by_default: false,
            language_code: None,
            run_of: None,
        };
        let reply = |ticket, _| texts::merge_opened(lang, ticket, settings.merge_files, settings.merge_bytes);
        let Some(ticket) = self.open_run(tx, update_id, origin, &submission, lang, reply).await? else {
            return Ok(Recorded::RefusedQueueFull);
        };
        tx.start_merge(ticket, self.clock.now().plus(settings.merge_idle)).await?;
        info!(ticket = %ticket, update.id = %update_id, "opened a merge");
        Ok(Recorded::Answered)
    }

    /// A file sent while the chat's merge `merge` is open: added and counted, or refused for the
    /// merge's limits; `None` when the merge was sealed meanwhile, so the file is one of its own.
    pub(super) async fn merge_file(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        facts: &DocumentFacts,
        merge: &Job,
        lang: Lang,
    ) -> StoreResult<Option<Recorded>> {
        let settings = self.settings.get();
        let now = self.clock.now();
        let name = facts.name.as_deref().unwrap_or_default();
        let parts = tx.source_parts(merge.ticket).await?;
        if parts.len() as u64 >= settings.merge_files {
            let text = texts::merge_full(lang, name, merge.ticket, settings.merge_files);
            self.reply_with_buttons(tx, update_id, origin, text, vec![done_button(lang)]).await?;
            return Ok(Some(Recorded::RefusedTooBig));
        }
        let held: u64 = parts.iter().filter_map(|part| part.declared_size).map(|s| u64::try_from(s).unwrap_or(0)).sum();
        let total = held + facts.size.unwrap_or(0);
        let limit = settings.merge_bytes.min(self.largest_source_anywhere(tx, now).await?);
        if total > limit || facts.size.is_some_and(|size| size > settings.download_limit) {
            let text = texts::merge_too_big(lang, name, merge.ticket, total, limit);
            self.reply_with_buttons(tx, update_id, origin, text, vec![done_button(lang)]).await?;
            return Ok(Some(Recorded::RefusedTooBig));
        }
        if !tx.extend_gathering(merge.ticket, now.plus(settings.merge_idle), now).await? {
            return Ok(None);
        }
        let part = SourcePart::of(facts, origin.message_id);
        let added = tx.add_source_part(merge.ticket, &part, 0).await?;
        let count = parts.len() + usize::from(added);
        let text = texts::merge_file_added(lang, name, merge.ticket, count);
        self.reply_with_buttons(tx, update_id, origin, text, vec![done_button(lang)]).await?;
        info!(ticket = %merge.ticket, update.id = %update_id, files = count, "added a file to a merge");
        Ok(Some(Recorded::AddedFile(merge.ticket)))
    }

    /// `/done`, or the Done button: seals the chat's merge, answered like an album (its files,
    /// its ticket, its place in the queue); a merge with no file is closed instead. Returns what
    /// was recorded and whether a job ended.
    pub(super) async fn finish_merge(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
    ) -> StoreResult<(Recorded, bool)> {
        let lang = chat_lang(tx, origin.chat).await?;
        let now = self.clock.now();
        let Some(open) = tx.open_merge(origin.chat).await? else {
            self.reply(tx, update_id, origin, texts::merge_none_open(lang)).await?;
            return Ok((Recorded::Answered, false));
        };
        let parts = tx.source_parts(open.ticket).await?;
        if parts.is_empty() {
            let ended = cancel_job(tx, &open, "a merge was finished with no file", now).await?;
            self.reply(tx, update_id, origin, texts::merge_empty(lang, open.ticket)).await?;
            return Ok((Recorded::Answered, ended));
        }
        if !tx.seal_merge(open.ticket, now).await? {
            // Sealed meanwhile (its idle time ran out): it is on its way already.
            self.reply(tx, update_id, origin, texts::merge_none_open(lang)).await?;
            return Ok((Recorded::Answered, false));
        }
        let ahead = tx.jobs_ahead(open.ticket, texts::QUEUE_COUNT_CAP).await?;
        let message = NewMessage {
            idempotency_key: IdempotencyKey::reply_to(update_id),
            job: Some(open.ticket),
            chat: origin.chat,
            kind: MessageKind::TicketReply,
            body: texts::album_reply(lang, &parts, open.ticket, ahead),
            reply_to_message_id: Some(origin.message_id),
            buttons: Vec::new(),
            part: None,
        };
        tx.enqueue(&message, now).await?;
        info!(ticket = %open.ticket, update.id = %update_id, files = parts.len(), "sealed a merge");
        Ok((Recorded::Submission(open.ticket), false))
    }

    /// `/cancel` alone: drops the chat's open merge, or shows how `/cancel` is used. Returns
    /// whether a job ended.
    pub(super) async fn drop_merge(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin) -> StoreResult<bool> {
        let lang = chat_lang(tx, origin.chat).await?;
        let Some(open) = tx.open_merge(origin.chat).await? else {
            self.reply(tx, update_id, origin, texts::cancel_usage(lang)).await?;
            return Ok(false);
        };
        let ended = cancel_job(tx, &open, "cancelled by the person (/cancel)", self.clock.now()).await?;
        self.reply(tx, update_id, origin, texts::merge_dropped(lang, open.ticket)).await?;
        info!(ticket = %open.ticket, update.id = %update_id, "dropped a merge");
        Ok(ended)
    }
}

/// The button under a merge's answers that finishes it.
fn done_button(lang: Lang) -> Button {
    Button { label: texts::merge_done_button(lang), data: MERGE_DONE.to_owned() }
}
