//! A document, or a run of one asked for again: the checks before a job (download limit, byte
//! budgets, the chat's queue), the operation its caption or the chat chooses, and the job with its
//! ticket reply, or the answer for a file docket already has.

use tracing::{debug, info};

use super::addressing::{Me, operation_words};
use super::{Intake, Recorded, chat_lang};
use crate::domain::incoming::{ChatKind, DocumentFacts, Origin};
use crate::domain::{
    ChatRef, IdempotencyKey, Job, JobState, MessageKind, Operation, Password, Submission, Ticket, Timestamp, UpdateId,
    default_operation,
};
use crate::sealing::SealingKey;
use crate::store::{StoreResult, Tx};
use crate::texts::{self, Lang};

impl Intake {
    /// A document sent: refused for its size or its caption, a new ticket, or the answer for one
    /// the chat has (a further run of it, or a run asked again).
    pub(super) async fn document(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        facts: DocumentFacts,
    ) -> StoreResult<Recorded> {
        let lang = chat_lang(tx, origin.chat).await?;
        if let Some(merge) = tx.open_merge(origin.chat).await?
            && let Some(recorded) = self.merge_file(tx, update_id, origin, &facts, &merge, lang).await?
        {
            return Ok(recorded);
        }
        if let Some(album) = facts.media_group_id.as_deref()
            && let Some(recorded) = self.album_part(tx, update_id, origin, &facts, album, lang).await?
        {
            return Ok(recorded);
        }
        self.one_document(tx, update_id, origin, facts).await
    }

    /// A document on its own (not part of an open merge's or an album's ticket): refused for its
    /// size or its caption, a new ticket, or the answer for one the chat has.
    pub(super) async fn one_document(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        facts: DocumentFacts,
    ) -> StoreResult<Recorded> {
        let now = self.clock.now();
        let lang = chat_lang(tx, origin.chat).await?;
        if let Some(refused) = self.refuse_if_too_big(tx, update_id, origin, &facts, lang, now).await? {
            return Ok(refused);
        }
        let (operation, explicit) = match self.operation_of(tx, origin.chat, &facts).await? {
            Ok((Operation::Merge, _)) => {
                self.reply(tx, update_id, origin, texts::merge_needs_several(lang)).await?;
                info!(update.id = %update_id, "one file asked to be merged; answered with how, no job");
                return Ok(Recorded::RefusedCaption);
            }
            Ok(chosen) => chosen,
            Err(problem) => {
                self.reply(tx, update_id, origin, texts::caption_not_understood(lang, &problem)).await?;
                info!(update.id = %update_id, "a caption named no operation; answered with help, no job");
                return Ok(Recorded::RefusedCaption);
            }
        };
        let new_job = Submission {
            update_id,
            chat: origin.chat,
            user_id: origin.user,
            message_id: origin.message_id,
            file_id: facts.file_id,
            file_unique_id: facts.file_unique_id,
            declared_name: facts.name,
            declared_mime: facts.mime,
            declared_size: facts.size.map(|s| i64::try_from(s).unwrap_or(i64::MAX)),
            operation,
            chosen_by_default: !explicit,
            language_code: facts.language_code,
            run_of: None,
        };
        let Some(job) = tx.job_by_file(origin.chat, &new_job.file_unique_id).await? else {
            return self.accept(tx, update_id, origin, &new_job, lang).await;
        };
        // A caption that names an operation asks for that run of the ticket (a new one, or the
        // one asked before); a file sent again without one asks for its first run again.
        let run = if explicit {
            let runs = tx.runs(job.ticket).await?;
            match runs.into_iter().find(|run| same_operation(&run.submission.operation, &new_job.operation)) {
                Some(run) => run,
                None => return self.start_run(tx, update_id, origin, &job, new_job).await,
            }
        } else {
            job
        };
        let new_job = Submission {
            operation: if explicit { new_job.operation } else { run.submission.operation.clone() },
            chosen_by_default: !explicit && run.submission.chosen_by_default,
            run_of: run.submission.run_of,
            ..new_job
        };
        self.ask_again(tx, update_id, origin, &run, &new_job).await
    }

    /// Refuses a document that declares more than the download limit, or more than the byte
    /// budget of every live host, with an answer that says so; `None`: its size is no reason
    /// to refuse it.
    async fn refuse_if_too_big(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        facts: &DocumentFacts,
        lang: Lang,
        now: Timestamp,
    ) -> StoreResult<Option<Recorded>> {
        let name = facts.name.as_deref().unwrap_or_default();
        let declared_size = facts.size;
        let download_limit = self.settings.get().download_limit;
        if let Some(size) = declared_size.filter(|s| *s > download_limit) {
            let text = texts::too_big_to_accept(lang, name, size, download_limit);
            self.reply(tx, update_id, origin, text).await?;
            info!(
                update.id = %update_id,
                size_bytes = size,
                limit_bytes = download_limit,
                "refused a file over the download limit"
            );
            return Ok(Some(Recorded::RefusedTooBig));
        }
        if let Some(size) = declared_size.filter(|s| *s > self.settings.get().largest_source) {
            let largest = self.largest_source_anywhere(tx, now).await?;
            if size > largest {
                let text = texts::too_big_for_budget(lang, name, size, largest);
                self.reply(tx, update_id, origin, text).await?;
                info!(update.id = %update_id, size_bytes = size, "refused a file bigger than the byte budget of every live host");
                return Ok(Some(Recorded::RefusedTooBig));
            }
        }
        Ok(None)
    }

    /// A document the chat has no ticket for: a new ticket (unless the chat's queue is full),
    /// answered with its number, the jobs ahead, the operation it will get and, for a password
    /// in the caption, a request to delete that message.
    async fn accept(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        new_job: &Submission,
        lang: Lang,
    ) -> StoreResult<Recorded> {
        let name = new_job.declared_name.as_deref().unwrap_or_default();
        let size = new_job.declared_size.and_then(|s| u64::try_from(s).ok());
        let reply = |ticket, ahead| {
            let text = texts::ticket_reply(lang, name, size, ticket, ahead);
            match &new_job.operation {
                Operation::Optimize => text,
                operation => format!("{text}\n{}", texts::will_run(lang, operation)),
            }
        };
        let Some(ticket) = self.open_run(tx, update_id, origin, new_job, lang, reply).await? else {
            return Ok(Recorded::RefusedQueueFull);
        };
        info!(ticket = %ticket, update.id = %update_id, declared_size_bytes = size, "accepted a document");
        Ok(Recorded::Submission(ticket))
    }

    /// Inserts `run` as a new job, unless the chat's queue is full (the chat is told so:
    /// `None`), and queues its ticket reply: `reply`'s text for the new ticket and the jobs ahead
    /// of it, with the request to delete the message when its caption held a password.
    pub(super) async fn open_run(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        run: &Submission,
        lang: Lang,
        reply: impl FnOnce(Ticket, u64) -> String,
    ) -> StoreResult<Option<Ticket>> {
        let name = run.declared_name.as_deref().unwrap_or_default();
        if self.queue_is_full(tx, update_id, origin, name).await? {
            return Ok(None);
        }
        let ticket = tx.insert_job(run, self.clock.now()).await?;
        let ahead = tx.jobs_ahead(ticket, texts::QUEUE_COUNT_CAP).await?;
        let mut text = reply(ticket, ahead);
        if matches!(&run.operation, Operation::Decrypt { password } if !password.is_empty()) {
            text = format!("{text}\n{}", texts::delete_the_password(lang, origin.chat_kind == ChatKind::Private));
        }
        self.queue(tx, IdempotencyKey::ticket_reply(ticket), Some(ticket), origin, MessageKind::TicketReply, text)
            .await?;
        metrics::counter!("docket_jobs_accepted_total").increment(1);
        Ok(Some(ticket))
    }

    /// A press on a ticket's operation button (`run:<ticket>:<operation>`): that run of the
    /// document, started once however often the button is pressed.
    pub(super) async fn run_pressed(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        data: &str,
    ) -> StoreResult<()> {
        let lang = chat_lang(tx, origin.chat).await?;
        let parsed = data
            .split_once(':')
            .and_then(|(ticket, words)| Some((ticket.parse().ok().map(Ticket)?, pressed_operation(words)?)));
        let Some((ticket, operation)) = parsed else {
            debug!(update.id = %update_id, "an operation button docket does not know; ignored");
            return Ok(());
        };
        let runs = tx.runs(ticket).await?;
        let Some(first) = runs
            .first()
            .filter(|first| first.ticket == ticket && !first.is_further_run() && first.submission.chat == origin.chat)
        else {
            self.reply(tx, update_id, origin, texts::no_such_ticket(lang, ticket)).await?;
            return Ok(());
        };
        let again = Submission {
            update_id,
            user_id: origin.user.or(first.submission.user_id),
            message_id: origin.message_id,
            operation,
            chosen_by_default: false,
            run_of: Some(first.ticket),
            ..first.submission.clone()
        };
        match runs.iter().find(|run| same_operation(&run.submission.operation, &again.operation)) {
            Some(run) => {
                let again = Submission { run_of: run.submission.run_of, ..again };
                self.ask_again(tx, update_id, origin, run, &again).await?;
            }
            None => {
                self.start_run(tx, update_id, origin, first, again).await?;
            }
        }
        Ok(())
    }

    /// A run asked for again (the same file and operation, or its button): its kept result, a
    /// new attempt when it ended without one, or where it is.
    pub(super) async fn ask_again(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        run: &Job,
        again: &Submission,
    ) -> StoreResult<Recorded> {
        let lang = chat_lang(tx, origin.chat).await?;
        let now = self.clock.now();
        let name = again.declared_name.clone().unwrap_or_default();
        let ticket = run.ticket;
        let shown = run.ticket_number();
        match run.state {
            JobState::Ready => {
                // The result is kept (past its date it stays until the janitor's next pass, and
                // it is still there to send).
                self.send_kept_result(tx, update_id, origin, run).await?;
            }
            JobState::Expired | JobState::Failed => {
                // Starting it again queues it like a new file.
                if self.queue_is_full(tx, update_id, origin, &name).await? {
                    return Ok(Recorded::RefusedQueueFull);
                }
                let text = if run.state == JobState::Failed {
                    texts::trying_again_after_failure(lang, &name, shown)
                } else {
                    texts::processing_again_after_expiry(lang, shown, run.result.as_ref().map_or(now, |r| r.expires_at))
                };
                tx.resubmit_job(ticket, run.state, again, now).await?;
                self.queue(
                    tx,
                    IdempotencyKey::reply_to(update_id),
                    Some(ticket),
                    origin,
                    MessageKind::TicketReply,
                    text,
                )
                .await?;
            }
            JobState::Accepted | JobState::Fetched | JobState::Processing => {
                let text = texts::already_ticket(lang, &name, shown, run.state);
                self.queue(tx, IdempotencyKey::reply_to(update_id), Some(ticket), origin, MessageKind::Reply, text)
                    .await?;
            }
        }
        info!(ticket = %shown, run = %ticket, update.id = %update_id, "a run was asked for again");
        Ok(Recorded::KnownFile(ticket))
    }

    /// A further run of `first`'s ticket: `again`'s operation, on the same document, downloaded
    /// again by its file_id (the first run's source is deleted once that run ends). Its own
    /// ticket reply becomes its status message.
    pub(super) async fn start_run(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        first: &Job,
        again: Submission,
    ) -> StoreResult<Recorded> {
        let run = Submission { run_of: Some(first.ticket), ..again };
        let lang = chat_lang(tx, origin.chat).await?;
        let reply = |_, ahead| texts::run_reply(lang, first.ticket, &run.operation, ahead);
        let Some(ticket) = self.open_run(tx, update_id, origin, &run, lang, reply).await? else {
            return Ok(Recorded::RefusedQueueFull);
        };
        info!(ticket = %first.ticket, run = %ticket, operation = run.operation.name(), update.id = %update_id, "started a further run of a document");
        Ok(Recorded::Submission(ticket))
    }

    /// The operation a document asks for: its caption's first word (the bot's own @mentions left
    /// out) with its arguments; without one, an image or an office document becomes a PDF, and anything else gets the
    /// chat's `/mode` or the bot's default; with whether the caption named it. `Err`: what is
    /// wrong with the caption.
    pub(super) async fn operation_of(
        &self,
        tx: &mut Tx,
        chat: ChatRef,
        facts: &DocumentFacts,
    ) -> StoreResult<Result<(Operation, bool), String>> {
        let settings = self.settings.get();
        let lang = chat_lang(tx, chat).await?;
        let me = Me::of(&settings);
        let words = operation_words(facts.caption.as_deref().unwrap_or_default(), me);
        if !words.is_empty() {
            return Ok(match Operation::parse(&words) {
                // Stored runs parse to an empty password; a caption must give one.
                Ok(Operation::Decrypt { password }) if password.is_empty() => Err(texts::caption_problem(
                    lang,
                    &crate::domain::operation::ParseError::Arguments {
                        operation: "decrypt",
                        problem: crate::domain::operation::ArgumentProblem::Missing,
                    },
                )),
                // A password is sealed before it is written anywhere (see `crate::sealing`).
                Ok(Operation::Decrypt { password }) => {
                    let binding = SealingKey::binding(chat, &facts.file_unique_id);
                    let sealed = Password::new(settings.sealing.seal(password.expose(), &binding));
                    Ok((Operation::Decrypt { password: sealed }, true))
                }
                parsed => parsed.map(|operation| (operation, true)).map_err(|e| texts::caption_problem(lang, &e)),
            });
        }
        let declared = crate::detect::declared_label(facts.name.as_deref(), facts.mime.as_deref());
        let operation = default_operation(declared, tx.chat_mode(chat), &settings.default_operation).await?;
        Ok(Ok((operation, false)))
    }

    /// The largest file a host alive at `now` can hold: this one's largest, or more where
    /// another live host's byte budget is larger (several hosts on one database).
    pub(super) async fn largest_source_anywhere(&self, tx: &mut Tx, now: Timestamp) -> StoreResult<u64> {
        let settings = self.settings.get();
        let largest_budget = tx.largest_live_bytes_budget(now.minus(settings.dead_after)).await?;
        Ok(crate::pipeline::budget::largest_source_anywhere(
            settings.largest_source,
            largest_budget,
            settings.budget_multiplier,
        ))
    }

    /// Whether `origin`'s chat already has `[limits] per_chat_queued` jobs waiting; if so, the
    /// refusal is queued. Counted in intake's transaction, so the cap holds however fast files
    /// arrive.
    pub(super) async fn queue_is_full(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        name: &str,
    ) -> StoreResult<bool> {
        let lang = chat_lang(tx, origin.chat).await?;
        let cap = self.settings.get().per_chat_queued;
        let waiting = tx.waiting_in_chat(origin.chat, self.clock.now(), cap).await?;
        if waiting < cap {
            return Ok(false);
        }
        self.reply(tx, update_id, origin, texts::queue_full(lang, name, waiting)).await?;
        info!(update.id = %update_id, waiting, limit = cap, "refused a file: the chat's queue is full");
        Ok(true)
    }
}

/// The operation a button's data names: one of the modes (`split`), or a run to fit a size
/// (`shrink 50MB`, `split 50MB`, from a result too big). Nothing else: no button carries a
/// password or a page list.
fn pressed_operation(words: &str) -> Option<Operation> {
    Operation::mode(words).or_else(|| {
        Operation::parse(words).ok().filter(|operation| {
            matches!(operation, Operation::Shrink { target: Some(_) } | Operation::SplitBySize { .. })
        })
    })
}

/// Whether two operations are the same run of a document: the same name and arguments (a
/// decrypt's password aside: a ticket has one decrypt run).
fn same_operation(a: &Operation, b: &Operation) -> bool {
    a.name() == b.name() && a.arguments() == b.arguments()
}
