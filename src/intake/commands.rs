//! Answers to commands and to presses on docket's buttons: `/cancel`, `/forget`, `/lang`, `/mode`,
//! `/get`, `/status`, `/jobs` and the rest, each queued in intake's transaction.

use tracing::{debug, info};

use super::{Intake, chat_lang};
use crate::domain::incoming::{Command, Origin};
use crate::domain::{
    Button, ChatRef, FailureReason, IdempotencyKey, Job, JobState, MessageKind, NewMessage, Operation, Ticket, UpdateId,
};
use crate::store::{StoreResult, Tx};
use crate::texts::{self, Lang};

impl Intake {
    /// `/cancel N`: ends every run of the chat's ticket `ticket` that is not ready, and says so.
    /// Another chat's ticket reads like a missing one (an admin may cancel any). Returns whether
    /// a run was ended.
    pub(super) async fn cancel(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        ticket: Ticket,
    ) -> StoreResult<bool> {
        let lang = chat_lang(tx, origin.chat).await?;
        let runs: Vec<Job> = tx
            .runs(ticket)
            .await?
            .into_iter()
            .filter(|run| run.submission.chat == origin.chat || self.is_admin(origin))
            .collect();
        let Some(first) = runs.first() else {
            self.reply(tx, update_id, origin, texts::no_such_ticket(lang, ticket)).await?;
            return Ok(false);
        };
        let by = if first.submission.chat == origin.chat {
            "cancelled by the person (/cancel)"
        } else {
            "cancelled by an admin (/cancel)"
        };
        let mut ended = Vec::new();
        for run in runs.iter().filter(|run| !run.state.is_terminal()) {
            if cancel_job(tx, run, by, self.clock.now()).await? {
                info!(ticket = ticket.0, run = run.ticket.0, update.id = %update_id, from = %run.state, "cancelled a run");
                ended.push(run.clone());
            }
        }
        match ended.as_slice() {
            [] => {
                // Nothing unfinished, or it moved on between the read and the update (the same
                // transaction, so only on a backend that lets another writer in): say where it is.
                let state = tx.job(ticket).await?.map_or(first.state, |j| j.state);
                self.reply(tx, update_id, origin, texts::cannot_cancel(lang, ticket, state)).await?;
            }
            [one] => self.reply(tx, update_id, origin, texts::cancelled(lang, one)).await?,
            several => self.reply(tx, update_id, origin, texts::runs_cancelled(lang, several)).await?,
        }
        Ok(!ended.is_empty())
    }

    /// `/forget`: asks first, with a button that only the sender can confirm.
    pub(super) async fn ask_to_forget(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin) -> StoreResult<()> {
        let lang = chat_lang(tx, origin.chat).await?;
        let Some(user) = origin.user else { return Ok(()) };
        let confirm = Button { label: texts::forget_button(lang), data: format!("{FORGET_PREFIX}{}", user.0) };
        self.reply_with_buttons(tx, update_id, origin, texts::forget_question(lang), vec![confirm]).await
    }

    /// A press on one of docket's buttons other than `/lang`'s: a further run's, an album
    /// question's answer, a merge's Done, a mode, or `/forget`'s confirmation, which only the
    /// person who asked can press. Returns whether jobs were ended.
    pub(super) async fn pressed(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        data: &str,
        allowed: bool,
    ) -> StoreResult<bool> {
        let lang = chat_lang(tx, origin.chat).await?;
        if let Some(run) = data.strip_prefix(Button::RUN_PREFIX) {
            if allowed {
                self.run_pressed(tx, update_id, origin, run).await?;
            }
            return Ok(false);
        }
        if data.starts_with(super::albums::ALBUM_MERGE_PREFIX) || data.starts_with(super::albums::ALBUM_EACH_PREFIX) {
            if allowed {
                return self.album_answered(tx, update_id, origin, data).await;
            }
            return Ok(false);
        }
        if data == super::merges::MERGE_DONE {
            if allowed {
                return Ok(self.finish_merge(tx, update_id, origin).await?.1);
            }
            return Ok(false);
        }
        if let Some(name) = data.strip_prefix(MODE_PREFIX) {
            if allowed {
                let text = self.mode(tx, origin.chat, Some(name.to_owned())).await?;
                self.reply(tx, update_id, origin, text).await?;
            }
            return Ok(false);
        }
        let asker = data.strip_prefix(FORGET_PREFIX).and_then(|id| id.parse::<i64>().ok());
        let Some(user) = origin.user.filter(|u| Some(u.0) == asker) else {
            debug!(update.id = %update_id, "a button press that is not the asker's, or unknown; ignored");
            return Ok(false);
        };
        let forgotten = tx.forget_person(user, &texts::forgotten_reason(lang), self.clock.now()).await?;
        info!(update.id = %update_id, jobs = forgotten, "forgot a person's jobs at their request");
        self.reply(tx, update_id, origin, texts::forgotten(lang, forgotten)).await?;
        Ok(forgotten > 0)
    }

    /// `/mode` alone: the chat's default operation, with a button for each choice.
    pub(super) async fn ask_mode(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin) -> StoreResult<()> {
        let text = self.mode(tx, origin.chat, None).await?;
        let buttons = Operation::MODES
            .iter()
            .map(|name| Button { label: (*name).to_owned(), data: format!("{MODE_PREFIX}{name}") })
            .collect();
        self.reply_with_buttons(tx, update_id, origin, text, buttons).await
    }

    /// `/mode`: the chat's default operation; `/mode NAME` sets it.
    pub(super) async fn mode(&self, tx: &mut Tx, chat: ChatRef, word: Option<String>) -> StoreResult<String> {
        let lang = chat_lang(tx, chat).await?;
        let Some(word) = word else {
            return Ok(match tx.chat_mode(chat).await? {
                Some(own) => texts::mode_now(lang, &own, true),
                None => texts::mode_now(lang, &self.settings.get().default_operation, false),
            });
        };
        let Some(operation) = Operation::mode(&word) else { return Ok(texts::mode_unknown(lang, &word)) };
        tx.set_chat_mode(chat, &operation, self.clock.now()).await?;
        info!(chat.id = chat.0, operation = operation.name(), "a chat chose its default operation");
        Ok(texts::mode_set(lang, &operation))
    }

    /// `/get N`: the kept result again (by its Telegram file_id when known: one read, one
    /// message), or the ticket's status when there is no result to send.
    pub(super) async fn redeliver(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        ticket: Ticket,
    ) -> StoreResult<()> {
        let lang = chat_lang(tx, origin.chat).await?;
        let runs: Vec<Job> = tx.runs(ticket).await?.into_iter().filter(|r| r.submission.chat == origin.chat).collect();
        if runs.is_empty() {
            return self.reply(tx, update_id, origin, texts::no_such_ticket(lang, ticket)).await;
        }
        let ready: Vec<&Job> = runs.iter().filter(|r| r.state == JobState::Ready).collect();
        if ready.is_empty() {
            let parts = tx.source_parts(ticket).await?;
            return self.reply(tx, update_id, origin, texts::ticket_status(lang, &runs, &parts)).await;
        }
        for run in ready {
            self.send_kept_result(tx, update_id, origin, run).await?;
        }
        Ok(())
    }

    /// Queues `job`'s kept result again, in answer to `update_id`: the sender sends it by its
    /// Telegram file_id when known (no upload), else from disk.
    pub(super) async fn send_kept_result(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        job: &Job,
    ) -> StoreResult<()> {
        let lang = chat_lang(tx, origin.chat).await?;
        let caption = texts::ready_caption(lang, job);
        // One per run and update: `/get` of a ticket sends each of its kept results, and each
        // part of one sent in parts.
        if let Some(count) = job.result.as_ref().and_then(|result| result.parts) {
            let parts =
                crate::pipeline::outcome::result_parts(lang, job, update_id, count, &caption, |_, update, part| {
                    IdempotencyKey::result_part_for(update, part)
                });
            for part in parts {
                let part = NewMessage { reply_to_message_id: Some(origin.message_id), ..part };
                tx.enqueue(&part, self.clock.now()).await?;
            }
            return Ok(());
        }
        let key = IdempotencyKey::result(job.ticket, update_id);
        self.queue(tx, key, Some(job.ticket), origin, MessageKind::Result, caption).await
    }

    pub(super) async fn answer(&self, tx: &mut Tx, chat: ChatRef, command: Command) -> StoreResult<String> {
        let lang = chat_lang(tx, chat).await?;
        let facts = self.help_facts();
        Ok(match command {
            Command::Start(_) => texts::start(lang, &facts),
            Command::Help => texts::help(lang, &facts),
            Command::Status(None) | Command::Get(_) => texts::status_usage(lang),
            Command::Cancel(_) => texts::cancel_usage(lang),
            Command::Privacy => texts::privacy(lang, &facts),
            // Handled before they get here.
            Command::Forget | Command::Stats | Command::Lang | Command::Merge | Command::Done => {
                texts::help(lang, &facts)
            }
            Command::Status(Some(ticket)) => {
                // Another chat's ticket reads exactly like a missing one.
                let runs: Vec<Job> = tx.runs(ticket).await?.into_iter().filter(|r| r.submission.chat == chat).collect();
                match runs.first() {
                    None => texts::no_such_ticket(lang, ticket),
                    Some(first) => texts::ticket_status(lang, &runs, &tx.source_parts(first.ticket_number()).await?),
                }
            }
            Command::Jobs => {
                let mut lines = Vec::new();
                for job in tx.chat_jobs(chat, 10).await? {
                    // Only a ticket of several files has sources to name.
                    let parts = match job.submission.operation {
                        Operation::Merge => tx.source_parts(job.ticket_number()).await?,
                        _ => Vec::new(),
                    };
                    lines.push((job, parts));
                }
                texts::jobs(lang, &lines)
            }
            Command::Mode(word) => self.mode(tx, chat, word).await?,
        })
    }

    /// `/lang`: the question, with one button per catalog language, each labelled in its own
    /// language.
    pub(super) async fn ask_language(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin) -> StoreResult<()> {
        let lang = chat_lang(tx, origin.chat).await?;
        let buttons = Lang::all()
            .map(|choice| Button {
                label: texts::language_name(choice),
                data: format!("{LANG_PREFIX}{}", choice.code()),
            })
            .collect();
        self.reply_with_buttons(tx, update_id, origin, texts::lang_question(lang), buttons).await
    }

    /// A press on one of `/lang`'s buttons: the chat's language from now on, whoever pressed it
    /// (in a group, the last chooser decides), answered in that language.
    pub(super) async fn choose_language(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        data: &str,
    ) -> StoreResult<()> {
        let chosen = Lang::from_code(data.strip_prefix(LANG_PREFIX).unwrap_or_default());
        tx.choose_language(origin.chat, &chosen.code(), self.clock.now()).await?;
        info!(update.id = %update_id, language = %chosen.code(), "a chat chose its language");
        self.reply(tx, update_id, origin, texts::lang_chosen(chosen)).await
    }
}

/// The callback data of `/lang`'s buttons: this, then the language's code.
pub(super) const LANG_PREFIX: &str = "lang:";

/// The callback data of `/forget`'s confirmation button: this, then the asker's user id.
pub(super) const FORGET_PREFIX: &str = "forget:";

/// The callback data of `/mode`'s buttons: this, then the operation.
const MODE_PREFIX: &str = "mode:";

/// Cancels `job` (not ready yet) in `tx`, with `detail` for admins, and queues the last edit of
/// its status message. The person's answer is the caller's. `false` when the job moved first.
pub async fn cancel_job(tx: &mut Tx, job: &Job, detail: &str, now: crate::domain::Timestamp) -> StoreResult<bool> {
    let lang = chat_lang(tx, job.submission.chat).await?;
    let reason = texts::failure_reason(lang, job.name(), &FailureReason::Cancelled);
    if !tx.cancel_job(job.ticket, job.state, &reason, detail, now).await? {
        return Ok(false);
    }
    let edit = NewMessage {
        idempotency_key: IdempotencyKey::progress(job.ticket),
        job: Some(job.ticket),
        chat: job.submission.chat,
        kind: MessageKind::Progress,
        body: texts::progress(lang, job, &texts::Progress::Cancelled),
        reply_to_message_id: None,
        buttons: Vec::new(),
        part: None,
    };
    tx.enqueue(&edit, now).await?;
    metrics::counter!("docket_jobs_cancelled_total").increment(1);
    Ok(true)
}
