//! Intake: turns one Telegram update into durable facts, in ONE transaction.
//!
//! For each update it registers (bot, update_id) — a repeat changes nothing — and then records a
//! job in state `accepted` and queues the ticket reply, or queues the answer to a command, a
//! repeated file or a refusal. A document's caption chooses the operation (its first word, the
//! bot's own @mentions left out); without one, the chat's `/mode` or the bot's default, and an
//! image becomes a PDF. A caption it cannot read is answered with help, and records no job. The
//! same document with another operation (its caption, or a button under a ready run's status
//! message) is a further run of the same ticket; the same operation again is the run asked
//! before (its kept result, or where it is). Registration, job and reply commit together, so a crash can
//! neither lose the reply nor make a job without one; the poll offset moves in the same
//! transaction. No download, no disk, no heavy work happens here.

pub mod polling;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{debug, info, warn};

pub use crate::domain::incoming::{
    Address, ChatKind, Command, DocumentFacts, GroupMode, Incoming, Origin, UnusableKind,
};
use crate::domain::{
    BotId, ChatRef, IdempotencyKey, JobState, MessageKind, Operation, SharedClock, Ticket, Timestamp, UpdateId,
};
use crate::domain::{Button, FailureReason, Job, NewMessage, Password, Submission};
use crate::sealing::SealingKey;
use crate::store::{Store, StoreResult, Tx, UpdateOutcome};
use crate::texts::{self, Lang};

/// What intake did with an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The update was registered before; nothing changed.
    Repeat,
    /// A new job and its ticket reply.
    Submission(Ticket),
    /// The file was known: same ticket, answered accordingly.
    KnownFile(Ticket),
    /// The caption named no operation, or gave it wrong arguments: answered with help, no job.
    RefusedCaption,
    /// The file was over the download limit: refused, no job.
    RefusedTooBig,
    /// The chat already had `[limits] per_chat_queued` jobs waiting: refused, no job.
    RefusedQueueFull,
    /// The sender may not use the bot.
    RefusedAccess,
    /// A command or a hint was answered.
    Answered,
    /// A press on one of docket's buttons was handled; the callback query `query_id` is to be
    /// answered (answerCallbackQuery) once this commits.
    Pressed {
        /// The callback query's id.
        query_id: String,
    },
    /// Nothing to do.
    Ignored,
    /// Kept as rejected, with the reason.
    Rejected,
}

/// Who may use the bot, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccessRules {
    /// Telegram user ids allowed; empty means everyone.
    pub allowed_users: Vec<i64>,
    /// Admins: always allowed.
    pub admins: Vec<i64>,
    /// Which messages docket takes in group chats.
    pub groups: GroupMode,
}

impl AccessRules {
    /// Whether `user_id` may use the bot.
    pub fn allows(&self, user_id: i64) -> bool {
        self.allowed_users.is_empty() || self.allowed_users.contains(&user_id) || self.admins.contains(&user_id)
    }
}

/// The invite tokens of `[access] invite_tokens_env`. Secret: never shown in `Debug`, compared
/// in constant time.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct InviteTokens(Vec<String>);

impl InviteTokens {
    /// The tokens of `value` (the environment variable's), separated by commas or whitespace.
    pub fn parse(value: &str) -> Self {
        Self(
            value.split(|c: char| c == ',' || c.is_whitespace()).filter(|t| !t.is_empty()).map(str::to_owned).collect(),
        )
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none (invites are off).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `candidate` is one of the tokens. Every token is compared, each in constant time,
    /// so the answer's timing tells nothing about how close a guess was.
    pub fn accepts(&self, candidate: &str) -> bool {
        use subtle::ConstantTimeEq as _;
        self.0
            .iter()
            .fold(subtle::Choice::from(0), |found, token| found | token.as_bytes().ct_eq(candidate.as_bytes()))
            .into()
    }
}

impl std::fmt::Debug for InviteTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InviteTokens({} tokens)", self.0.len())
    }
}

/// Intake's settings: the slice of the configuration it needs.
#[derive(Debug, Clone)]
pub struct IntakeSettings {
    /// Whose updates these are (the key of the update registry); also the bot's user id, which
    /// replies to its messages name.
    pub bot_id: BotId,
    /// The bot's username from getMe (`None` when getMe did not answer at start: then, in
    /// groups, only commands without a bot name and replies to the bot reach it).
    pub bot_username: Option<String>,
    /// Who may use the bot.
    pub access: AccessRules,
    /// Largest file the bot can download in the current mode.
    pub download_limit: u64,
    /// Largest file the bot can upload in the current mode.
    pub upload_limit: u64,
    /// How long results are kept.
    pub result_ttl: Duration,
    /// The largest file this host's byte budget can ever hold (with its intermediate output).
    pub largest_source: u64,
    /// `[budget] multiplier`: bytes a host reserves per byte of source, to judge another live
    /// host's budget (a file too big for this host may fit another's).
    pub budget_multiplier: f64,
    /// `[node] dead_after`: a host silent for longer is not counted on.
    pub dead_after: Duration,
    /// How many of one chat's jobs may wait in `accepted` (not downloading yet).
    pub per_chat_queued: u64,
    /// `[budget] bytes`, for `/stats`.
    pub budget_bytes: u64,
    /// Tokens that let a person in with `/start <token>`.
    pub invites: InviteTokens,
    /// What a document without a caption gets in a chat that chose nothing with `/mode`
    /// (`[processing] default_operation`).
    pub default_operation: Operation,
    /// Seals a decrypt's password before the job is written.
    pub sealing: SealingKey,
}

/// The intake service. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Intake {
    store: Store,
    clock: SharedClock,
    settings: crate::runtime::Live<IntakeSettings>,
    /// Woken when a job becomes claimable by the download pool.
    jobs_waiting: Arc<Notify>,
    /// Woken when a message is queued.
    messages_waiting: Arc<Notify>,
    /// Woken when jobs were ended from outside the pipeline (cancelled, forgotten), so their
    /// files are deleted and their byte reservations given back.
    jobs_ended: Arc<Notify>,
}

impl Intake {
    /// A service writing to `store`, waking the pools through the given notifiers.
    pub fn new(
        store: Store,
        clock: SharedClock,
        settings: IntakeSettings,
        jobs_waiting: Arc<Notify>,
        messages_waiting: Arc<Notify>,
        jobs_ended: Arc<Notify>,
    ) -> Self {
        Self { store, clock, settings: crate::runtime::Live::new(settings), jobs_waiting, messages_waiting, jobs_ended }
    }

    /// The settings it reads, for a reload to replace.
    pub fn settings(&self) -> crate::runtime::Live<IntakeSettings> {
        self.settings.clone()
    }

    /// Records update `update_id` and what it means, atomically; moves the poll offset past it.
    /// A group message that is not docket's (`[access] groups`) is recorded as ignored.
    pub async fn record(&self, update_id: UpdateId, incoming: Incoming) -> StoreResult<Recorded> {
        let incoming = self.screen(incoming);
        let unusable = unusable_kind(&incoming);
        let now = self.clock.now();
        let mut tx = self.store.begin().await?;
        let (outcome, reason) = match &incoming {
            Incoming::Malformed(reason) => (UpdateOutcome::Rejected, Some(reason.as_str())),
            _ => (UpdateOutcome::Recorded, None),
        };
        let bot_id = self.settings.get().bot_id;
        if !tx.register_update(bot_id, update_id, outcome, reason, now).await? {
            tx.advance_offset(bot_id, update_id.next_offset(), now).await?;
            tx.commit().await?;
            debug!(update.id = %update_id, "update was registered before; dropped");
            return Ok(Recorded::Repeat);
        }
        if let Some(origin) = incoming_origin(&incoming) {
            // A person who blocked the bot and writes again can be answered again.
            if tx.revive_chat(origin.chat).await? {
                info!(update.id = %update_id, "a dead chat wrote again; sending to it again");
            }
        }
        if let Some(origin) = incoming_origin(&incoming)
            && let Some(code) = origin.language
        {
            // A chat is written to in its writers' language until `/lang` chooses one; every
            // answer below is rendered in it.
            tx.note_language(origin.chat, code.as_str(), now).await?;
        }
        let lang = match incoming_origin(&incoming) {
            Some(origin) => chat_lang(&mut tx, origin.chat).await?,
            None => Lang::ENGLISH,
        };
        let allowed = match incoming_origin(&incoming) {
            Some(origin) => self.may_use(&mut tx, origin).await?,
            None => true,
        };
        let mut ended_jobs = false;
        let recorded = match incoming {
            Incoming::Malformed(_) => Recorded::Rejected,
            Incoming::Ignored => Recorded::Ignored,
            Incoming::Unusable(Some(origin), kind) => {
                self.reply(&mut tx, update_id, origin, texts::cannot_use(lang, kind)).await?;
                Recorded::Answered
            }
            Incoming::Unusable(None, _) => Recorded::Ignored,
            // What concerns a person's own data stays theirs to ask about, allowed or not.
            Incoming::Command(origin, Command::Privacy, _) => {
                self.reply(&mut tx, update_id, origin, texts::privacy(lang, &self.help_facts())).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Forget, _) => {
                self.ask_to_forget(&mut tx, update_id, origin).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Lang, _) => {
                self.ask_language(&mut tx, update_id, origin).await?;
                Recorded::Answered
            }
            Incoming::Button(origin, press) if press.data.starts_with(LANG_PREFIX) => {
                self.choose_language(&mut tx, update_id, origin, &press.data).await?;
                Recorded::Pressed { query_id: press.query_id }
            }
            Incoming::Button(origin, press) => {
                ended_jobs = self.pressed(&mut tx, update_id, origin, &press.data, allowed).await?;
                Recorded::Pressed { query_id: press.query_id }
            }
            Incoming::Command(origin, Command::Start(Some(token)), _)
                if !allowed && origin.user.is_some() && self.settings.get().invites.accepts(&token) =>
            {
                if let Some(user) = origin.user {
                    tx.invite(user, now).await?;
                    info!(update.id = %update_id, user.id = user.0, "let a person in with an invite token");
                }
                self.reply(&mut tx, update_id, origin, texts::invited(lang, &self.help_facts())).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, ..) | Incoming::Document(origin, ..) if !allowed => {
                self.reply(&mut tx, update_id, origin, texts::not_allowed(lang, origin.user.map(|u| u.0))).await?;
                Recorded::RefusedAccess
            }
            Incoming::Command(origin, Command::Get(Some(ticket)), _) => {
                self.redeliver(&mut tx, update_id, origin, ticket).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Cancel(Some(ticket)), _) => {
                ended_jobs = self.cancel(&mut tx, update_id, origin, ticket).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Mode(None), _) => {
                let text = self.mode(&mut tx, origin.chat, None).await?;
                let buttons = Operation::MODES
                    .iter()
                    .map(|name| Button { label: (*name).to_owned(), data: format!("{MODE_PREFIX}{name}") })
                    .collect();
                let message = NewMessage {
                    idempotency_key: IdempotencyKey::reply_to(update_id),
                    job: None,
                    chat: origin.chat,
                    kind: MessageKind::Reply,
                    body: text,
                    reply_to_message_id: Some(origin.message_id),
                    buttons,
                };
                tx.enqueue(&message, now).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Stats, _) => {
                let text = if self.is_admin(origin) {
                    texts::stats(lang, &tx.stats(now).await?, self.settings.get().budget_bytes, now)
                } else {
                    texts::admins_only(lang)
                };
                self.reply(&mut tx, update_id, origin, text).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, command, _) => {
                let text = self.answer(&mut tx, origin.chat, command).await?;
                self.reply(&mut tx, update_id, origin, text).await?;
                Recorded::Answered
            }
            Incoming::Document(origin, facts, _) => self.document(&mut tx, update_id, origin, facts).await?,
        };
        tx.advance_offset(bot_id, update_id.next_offset(), now).await?;
        tx.commit().await?;
        if let Some(kind) = unusable {
            // The kind only: what the update held may be anything a person wrote.
            metrics::counter!("docket_updates_unusable_total", "kind" => kind).increment(1);
            match kind {
                "malformed" => {
                    warn!(update.id = %update_id, kind, "an update docket cannot read; recorded as rejected")
                }
                _ => info!(update.id = %update_id, kind, "an update docket cannot use; recorded"),
            }
        }
        if matches!(recorded, Recorded::Submission(_) | Recorded::KnownFile(_) | Recorded::Pressed { .. }) {
            self.jobs_waiting.notify_waiters();
        }
        if !matches!(recorded, Recorded::Ignored | Recorded::Rejected) {
            self.messages_waiting.notify_waiters();
        }
        if ended_jobs {
            self.jobs_ended.notify_waiters();
        }
        Ok(recorded)
    }

    /// `incoming`, or [`Incoming::Ignored`] when it is a group message that is not docket's.
    fn screen(&self, incoming: Incoming) -> Incoming {
        let settings = self.settings.get();
        let me = Me { id: settings.bot_id, username: settings.bot_username.as_deref() };
        let mode = settings.access.groups;
        let for_us = match &incoming {
            Incoming::Document(origin, _, address) => takes(mode, me, origin, Sort::Document, address),
            Incoming::Command(origin, _, address) => takes(mode, me, origin, Sort::Command, address),
            Incoming::Unusable(Some(origin), _) => takes(mode, me, origin, Sort::Other, &Address::default()),
            // A button sits under one of docket's own messages.
            Incoming::Button(..) => true,
            Incoming::Unusable(None, _) | Incoming::Ignored | Incoming::Malformed(_) => true,
        };
        if !for_us {
            debug!(chat.id = incoming_chat(&incoming), "a group message not addressed to docket; ignored");
            return Incoming::Ignored;
        }
        incoming
    }

    /// Whether `origin`'s sender may use the bot: by `[access]`, or let in by an invite.
    async fn may_use(&self, tx: &mut Tx, origin: Origin) -> StoreResult<bool> {
        let Some(user) = origin.user else { return Ok(false) };
        if self.settings.get().access.allows(user.0) {
            return Ok(true);
        }
        tx.is_invited(user).await
    }

    fn is_admin(&self, origin: Origin) -> bool {
        origin.user.is_some_and(|u| self.settings.get().access.admins.contains(&u.0))
    }

    fn help_facts(&self) -> texts::HelpFacts {
        texts::HelpFacts {
            download_limit: self.settings.get().download_limit,
            upload_limit: self.settings.get().upload_limit,
            result_ttl: self.settings.get().result_ttl,
        }
    }

    /// `/cancel N`: ends every run of the chat's ticket `ticket` that is not ready, and says so.
    /// Another chat's ticket reads like a missing one (an admin may cancel any). Returns whether
    /// a run was ended.
    async fn cancel(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin, ticket: Ticket) -> StoreResult<bool> {
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
    async fn ask_to_forget(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin) -> StoreResult<()> {
        let lang = chat_lang(tx, origin.chat).await?;
        let Some(user) = origin.user else { return Ok(()) };
        let message = NewMessage {
            idempotency_key: IdempotencyKey::reply_to(update_id),
            job: None,
            chat: origin.chat,
            kind: MessageKind::Reply,
            body: texts::forget_question(lang),
            reply_to_message_id: Some(origin.message_id),
            buttons: vec![Button { label: texts::forget_button(lang), data: format!("{FORGET_PREFIX}{}", user.0) }],
        };
        tx.enqueue(&message, self.clock.now()).await?;
        Ok(())
    }

    /// A press on one of docket's buttons other than `/lang`'s: `/forget`'s confirmation, which
    /// only the person who asked can press. Returns whether jobs were ended.
    async fn pressed(
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

    async fn document(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        facts: DocumentFacts,
    ) -> StoreResult<Recorded> {
        let now = self.clock.now();
        let lang = chat_lang(tx, origin.chat).await?;
        let name = facts.name.clone().unwrap_or_default();
        if let Some(size) = facts.size.filter(|s| *s > self.settings.get().download_limit) {
            let text = texts::too_big_to_accept(lang, &name, size, self.settings.get().download_limit);
            self.reply(tx, update_id, origin, text).await?;
            info!(
                update.id = %update_id,
                size_bytes = size,
                limit_bytes = self.settings.get().download_limit,
                "refused a file over the download limit"
            );
            return Ok(Recorded::RefusedTooBig);
        }
        if let Some(size) = facts.size.filter(|s| *s > self.settings.get().largest_source) {
            let largest = self.largest_source_anywhere(tx, now).await?;
            if size > largest {
                let text = texts::too_big_for_budget(lang, &name, size, largest);
                self.reply(tx, update_id, origin, text).await?;
                info!(update.id = %update_id, size_bytes = size, "refused a file bigger than the byte budget of every live host");
                return Ok(Recorded::RefusedTooBig);
            }
        }
        let (operation, explicit) = match self.operation_of(tx, origin.chat, &facts).await? {
            Ok(chosen) => chosen,
            Err(problem) => {
                self.reply(tx, update_id, origin, texts::caption_not_understood(lang, &problem)).await?;
                info!(update.id = %update_id, "a caption named no operation; answered with help, no job");
                return Ok(Recorded::RefusedCaption);
            }
        };
        let asks_with_password = matches!(&operation, Operation::Decrypt { password } if !password.is_empty());
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
            if self.queue_is_full(tx, update_id, origin, &name).await? {
                return Ok(Recorded::RefusedQueueFull);
            }
            let ticket = tx.insert_job(&new_job, now).await?;
            let ahead = tx.jobs_ahead(ticket, texts::QUEUE_COUNT_CAP).await?;
            let mut text = texts::ticket_reply(lang, &name, facts.size, ticket, ahead);
            if new_job.operation != Operation::Optimize {
                text = format!("{text}\n{}", texts::will_run(lang, &new_job.operation));
            }
            if asks_with_password {
                text = format!("{text}\n{}", texts::delete_the_password(lang, origin.chat_kind == ChatKind::Private));
            }
            self.queue(tx, IdempotencyKey::ticket_reply(ticket), Some(ticket), origin, MessageKind::TicketReply, text)
                .await?;
            info!(ticket = %ticket, update.id = %update_id, declared_size_bytes = facts.size, "accepted a document");
            metrics::counter!("docket_jobs_accepted_total").increment(1);
            return Ok(Recorded::Submission(ticket));
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

    /// A press on a ticket's operation button (`run:<ticket>:<operation>`): that run of the
    /// document, started once however often the button is pressed.
    async fn run_pressed(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin, data: &str) -> StoreResult<()> {
        let lang = chat_lang(tx, origin.chat).await?;
        let parsed = data
            .split_once(':')
            .and_then(|(ticket, name)| Some((ticket.parse().ok().map(Ticket)?, Operation::mode(name)?)));
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
    async fn ask_again(
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
    async fn start_run(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        first: &Job,
        again: Submission,
    ) -> StoreResult<Recorded> {
        let name = again.declared_name.clone().unwrap_or_default();
        if self.queue_is_full(tx, update_id, origin, &name).await? {
            return Ok(Recorded::RefusedQueueFull);
        }
        let asks_with_password = matches!(&again.operation, Operation::Decrypt { password } if !password.is_empty());
        let run = Submission { run_of: Some(first.ticket), ..again };
        let ticket = tx.insert_job(&run, self.clock.now()).await?;
        let ahead = tx.jobs_ahead(ticket, texts::QUEUE_COUNT_CAP).await?;
        let lang = chat_lang(tx, origin.chat).await?;
        let mut text = texts::run_reply(lang, first.ticket, &run.operation, ahead);
        if asks_with_password {
            text = format!("{text}\n{}", texts::delete_the_password(lang, origin.chat_kind == ChatKind::Private));
        }
        self.queue(tx, IdempotencyKey::ticket_reply(ticket), Some(ticket), origin, MessageKind::TicketReply, text)
            .await?;
        info!(ticket = %first.ticket, run = %ticket, operation = run.operation.name(), update.id = %update_id, "started a further run of a document");
        metrics::counter!("docket_jobs_accepted_total").increment(1);
        Ok(Recorded::Submission(ticket))
    }

    /// The operation a document asks for: its caption's first word (the bot's own @mentions left
    /// out) with its arguments; without one, an image or an office document becomes a PDF, and anything else gets the
    /// chat's `/mode` or the bot's default; with whether the caption named it. `Err`: what is
    /// wrong with the caption.
    async fn operation_of(
        &self,
        tx: &mut Tx,
        chat: ChatRef,
        facts: &DocumentFacts,
    ) -> StoreResult<Result<(Operation, bool), String>> {
        let settings = self.settings.get();
        let lang = chat_lang(tx, chat).await?;
        let me = Me { id: settings.bot_id, username: settings.bot_username.as_deref() };
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
        if declares_what_topdf_takes(facts) {
            return Ok(Ok((Operation::ToPdf, false)));
        }
        Ok(Ok((tx.chat_mode(chat).await?.unwrap_or_else(|| settings.default_operation.clone()), false)))
    }

    /// The largest file a host alive at `now` can hold: this one's largest, or more where
    /// another live host's byte budget is larger (several hosts on one database).
    async fn largest_source_anywhere(&self, tx: &mut Tx, now: Timestamp) -> StoreResult<u64> {
        let settings = self.settings.get();
        let largest_budget = tx.largest_live_bytes_budget(now.minus(settings.dead_after)).await?.unwrap_or(0);
        let elsewhere = crate::pipeline::budget::largest_source_of(largest_budget, settings.budget_multiplier);
        Ok(settings.largest_source.max(elsewhere))
    }

    /// `/mode`: the chat's default operation; `/mode NAME` sets it.
    async fn mode(&self, tx: &mut Tx, chat: ChatRef, word: Option<String>) -> StoreResult<String> {
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

    /// Whether `origin`'s chat already has `[limits] per_chat_queued` jobs waiting; if so, the
    /// refusal is queued. Counted in intake's transaction, so the cap holds however fast files
    /// arrive.
    async fn queue_is_full(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin, name: &str) -> StoreResult<bool> {
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

    /// `/get N`: the kept result again (by its Telegram file_id when known: one read, one
    /// message), or the ticket's status when there is no result to send.
    async fn redeliver(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin, ticket: Ticket) -> StoreResult<()> {
        let lang = chat_lang(tx, origin.chat).await?;
        let runs: Vec<Job> = tx.runs(ticket).await?.into_iter().filter(|r| r.submission.chat == origin.chat).collect();
        if runs.is_empty() {
            return self.reply(tx, update_id, origin, texts::no_such_ticket(lang, ticket)).await;
        }
        let ready: Vec<&Job> = runs.iter().filter(|r| r.state == JobState::Ready).collect();
        if ready.is_empty() {
            return self.reply(tx, update_id, origin, texts::ticket_status(lang, &runs)).await;
        }
        for run in ready {
            self.send_kept_result(tx, update_id, origin, run).await?;
        }
        Ok(())
    }

    /// Queues `job`'s kept result again, in answer to `update_id`: the sender sends it by its
    /// Telegram file_id when known (no upload), else from disk.
    async fn send_kept_result(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin, job: &Job) -> StoreResult<()> {
        let lang = chat_lang(tx, origin.chat).await?;
        let caption = texts::ready_caption(lang, job);
        // One per run and update: `/get` of a ticket sends each of its kept results.
        let key = IdempotencyKey::result(job.ticket, update_id);
        self.queue(tx, key, Some(job.ticket), origin, MessageKind::Result, caption).await
    }

    async fn answer(&self, tx: &mut Tx, chat: ChatRef, command: Command) -> StoreResult<String> {
        let lang = chat_lang(tx, chat).await?;
        let facts = self.help_facts();
        Ok(match command {
            Command::Start(_) => texts::start(lang, &facts),
            Command::Help => texts::help(lang, &facts),
            Command::Status(None) | Command::Get(_) => texts::status_usage(lang),
            Command::Cancel(_) => texts::cancel_usage(lang),
            Command::Privacy => texts::privacy(lang, &facts),
            // Handled before they get here.
            Command::Forget | Command::Stats | Command::Lang => texts::help(lang, &facts),
            Command::Status(Some(ticket)) => {
                // Another chat's ticket reads exactly like a missing one.
                let runs: Vec<Job> = tx.runs(ticket).await?.into_iter().filter(|r| r.submission.chat == chat).collect();
                if runs.is_empty() { texts::no_such_ticket(lang, ticket) } else { texts::ticket_status(lang, &runs) }
            }
            Command::Jobs => texts::jobs(lang, &tx.chat_jobs(chat, 10).await?),
            Command::Mode(word) => self.mode(tx, chat, word).await?,
        })
    }

    async fn reply(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin, text: String) -> StoreResult<()> {
        self.queue(tx, IdempotencyKey::reply_to(update_id), None, origin, MessageKind::Reply, text).await
    }

    async fn queue(
        &self,
        tx: &mut Tx,
        key: IdempotencyKey,
        job: Option<Ticket>,
        origin: Origin,
        kind: MessageKind,
        body: String,
    ) -> StoreResult<()> {
        let message = NewMessage {
            idempotency_key: key,
            job,
            chat: origin.chat,
            kind,
            body,
            reply_to_message_id: Some(origin.message_id),
            buttons: Vec::new(),
        };
        tx.enqueue(&message, self.clock.now()).await?;
        Ok(())
    }
}

impl Intake {
    /// `/lang`: the question, with one button per catalog language, each labelled in its own
    /// language.
    async fn ask_language(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin) -> StoreResult<()> {
        let lang = chat_lang(tx, origin.chat).await?;
        let buttons = Lang::all()
            .map(|choice| Button {
                label: texts::language_name(choice),
                data: format!("{LANG_PREFIX}{}", choice.code()),
            })
            .collect();
        let message = NewMessage {
            idempotency_key: IdempotencyKey::reply_to(update_id),
            job: None,
            chat: origin.chat,
            kind: MessageKind::Reply,
            body: texts::lang_question(lang),
            reply_to_message_id: Some(origin.message_id),
            buttons,
        };
        tx.enqueue(&message, self.clock.now()).await?;
        Ok(())
    }

    /// A press on one of `/lang`'s buttons: the chat's language from now on, whoever pressed it
    /// (in a group, the last chooser decides), answered in that language.
    async fn choose_language(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin, data: &str) -> StoreResult<()> {
        let chosen = Lang::from_code(data.strip_prefix(LANG_PREFIX).unwrap_or_default());
        tx.choose_language(origin.chat, &chosen.code(), self.clock.now()).await?;
        info!(update.id = %update_id, language = %chosen.code(), "a chat chose its language");
        self.reply(tx, update_id, origin, texts::lang_chosen(chosen)).await
    }
}

/// The callback data of `/lang`'s buttons: this, then the language's code.
const LANG_PREFIX: &str = "lang:";

/// The language `chat` is written to in, as the store keeps it (English when it knows none).
async fn chat_lang(tx: &mut Tx, chat: ChatRef) -> StoreResult<Lang> {
    Ok(Lang::from_stored(tx.chat_language(chat).await?.as_deref()))
}

/// The callback data of `/forget`'s confirmation button: this, then the asker's user id.
const FORGET_PREFIX: &str = "forget:";

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
    };
    tx.enqueue(&edit, now).await?;
    metrics::counter!("docket_jobs_cancelled_total").increment(1);
    Ok(true)
}

/// Whether two operations are the same run of a document: the same name and arguments (a
/// decrypt's password aside: a ticket has one decrypt run).
fn same_operation(a: &Operation, b: &Operation) -> bool {
    a.name() == b.name() && a.arguments() == b.arguments()
}

/// The words of `caption` that choose the operation: all of them but the mentions of the bot
/// itself (`@docket_bot shrink` in a group is `shrink`).
fn operation_words(caption: &str, me: Me<'_>) -> String {
    caption
        .split_whitespace()
        .filter(|word| {
            let Some(name) = word.strip_prefix('@') else { return true };
            let name = name.trim_end_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
            !me.is_named(&[name.to_owned()])
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether the declared name or MIME type says the file is one `topdf` takes (a picture or an
/// office document). A hint: processing goes by the content (see `pipeline::process`).
fn declares_what_topdf_takes(facts: &DocumentFacts) -> bool {
    crate::detect::declared_label(facts.name.as_deref(), facts.mime.as_deref())
        .is_some_and(|label| Operation::ToPdf.accepts().contains(&label))
}

/// The bot itself, as messages may name it.
#[derive(Debug, Clone, Copy)]
struct Me<'a> {
    /// Its own id.
    id: BotId,
    /// Its username, when getMe told it.
    username: Option<&'a str>,
}

impl Me<'_> {
    /// Whether one of `names` is this bot's username (usernames are ASCII; any case).
    fn is_named(&self, names: &[String]) -> bool {
        self.username.is_some_and(|me| names.iter().any(|n| n.eq_ignore_ascii_case(me)))
    }
}

/// What a message carries, as far as the group rules care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sort {
    Document,
    Command,
    /// Anything else (answered with a hint in private chats only).
    Other,
}

/// Whether docket handles a message of `sort` from `origin`, addressed as `address`. In a
/// private chat: always. In a group: never with `off`; a command when it names no bot or this
/// one; a document with `all` always, with `addressed` when its caption mentions this bot or it
/// replies to one of the bot's messages; anything else never.
fn takes(mode: GroupMode, me: Me<'_>, origin: &Origin, sort: Sort, address: &Address) -> bool {
    if origin.chat_kind == ChatKind::Private {
        return true;
    }
    match (mode, sort) {
        (GroupMode::Off, _) | (_, Sort::Other) => false,
        (_, Sort::Command) => address.names.is_empty() || me.is_named(&address.names),
        (GroupMode::All, Sort::Document) => true,
        (GroupMode::Addressed, Sort::Document) => {
            me.is_named(&address.names) || address.replies_to == Some(me.id.as_user())
        }
    }
}

fn incoming_origin(incoming: &Incoming) -> Option<Origin> {
    match incoming {
        Incoming::Document(o, ..) | Incoming::Command(o, ..) | Incoming::Button(o, _) => Some(*o),
        Incoming::Unusable(o, _) => *o,
        Incoming::Ignored | Incoming::Malformed(_) => None,
    }
}

fn incoming_chat(incoming: &Incoming) -> Option<i64> {
    incoming_origin(incoming).map(|o| o.chat.0)
}

/// The `kind` label an update is counted and logged under when docket cannot use it.
fn unusable_kind(incoming: &Incoming) -> Option<&'static str> {
    match incoming {
        Incoming::Unusable(_, kind) => Some(kind.as_str()),
        Incoming::Malformed(_) => Some("malformed"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{MessageId, UserId};

    const BOT: BotId = BotId(555);

    fn origin(chat_kind: ChatKind) -> Origin {
        let chat = if chat_kind == ChatKind::Private { ChatRef(7) } else { ChatRef(-1007) };
        Origin { chat, chat_kind, user: Some(UserId(7)), message_id: MessageId(1), language: None }
    }

    fn named(names: &[&str]) -> Address {
        Address { names: names.iter().map(|n| (*n).to_owned()).collect(), replies_to: None }
    }

    fn replying_to(user: i64) -> Address {
        Address { names: Vec::new(), replies_to: Some(UserId(user)) }
    }

    const ME: Me<'static> = Me { id: BOT, username: Some("Docket_Bot") };

    #[test]
    fn private_chats_take_everything() {
        for mode in [GroupMode::Addressed, GroupMode::All, GroupMode::Off] {
            for sort in [Sort::Document, Sort::Command, Sort::Other] {
                assert!(takes(mode, ME, &origin(ChatKind::Private), sort, &named(&["other_bot"])), "{mode:?} {sort:?}");
                assert!(takes(mode, ME, &origin(ChatKind::Private), sort, &Address::default()), "{mode:?} {sort:?}");
            }
        }
    }

    #[test]
    fn group_commands_are_taken_unless_they_name_another_bot() {
        let group = origin(ChatKind::Group);
        for mode in [GroupMode::Addressed, GroupMode::All] {
            assert!(takes(mode, ME, &group, Sort::Command, &Address::default()), "no bot name");
            assert!(takes(mode, ME, &group, Sort::Command, &named(&["docket_bot"])), "any case");
            assert!(takes(mode, ME, &group, Sort::Command, &named(&["DOCKET_BOT"])), "any case");
            assert!(!takes(mode, ME, &group, Sort::Command, &named(&["OtherBot"])));
            assert!(!takes(mode, ME, &group, Sort::Command, &named(&["docket_bot2"])));
        }
        assert!(!takes(GroupMode::Off, ME, &group, Sort::Command, &Address::default()));
        assert!(!takes(GroupMode::Off, ME, &group, Sort::Command, &named(&["docket_bot"])));
    }

    #[test]
    fn group_documents_need_a_mention_or_a_reply_unless_all() {
        let group = origin(ChatKind::Group);
        let addressed = GroupMode::Addressed;
        assert!(!takes(addressed, ME, &group, Sort::Document, &Address::default()));
        assert!(takes(addressed, ME, &group, Sort::Document, &named(&["someone", "docket_BOT"])));
        assert!(!takes(addressed, ME, &group, Sort::Document, &named(&["someone", "docket_bot_fan"])));
        assert!(takes(addressed, ME, &group, Sort::Document, &replying_to(BOT.0)));
        assert!(!takes(addressed, ME, &group, Sort::Document, &replying_to(8)));
        assert!(takes(GroupMode::All, ME, &group, Sort::Document, &Address::default()));
        assert!(!takes(GroupMode::Off, ME, &group, Sort::Document, &named(&["docket_bot"])));
        assert!(!takes(GroupMode::Off, ME, &group, Sort::Document, &replying_to(BOT.0)));
    }

    #[test]
    fn without_a_known_username_only_replies_and_unnamed_commands_reach_the_bot() {
        let group = origin(ChatKind::Group);
        let anonymous = Me { id: BOT, username: None };
        assert!(takes(GroupMode::Addressed, anonymous, &group, Sort::Command, &Address::default()));
        assert!(!takes(GroupMode::Addressed, anonymous, &group, Sort::Command, &named(&["docket_bot"])));
        assert!(!takes(GroupMode::Addressed, anonymous, &group, Sort::Document, &named(&["docket_bot"])));
        assert!(takes(GroupMode::Addressed, anonymous, &group, Sort::Document, &replying_to(BOT.0)));
    }

    #[test]
    fn the_bots_own_mentions_are_not_operation_words() {
        assert_eq!(operation_words("@Docket_Bot shrink", ME), "shrink");
        assert_eq!(operation_words("rotate 90 @docket_bot, 2", ME), "rotate 90 2");
        assert_eq!(operation_words("@someone shrink", ME), "@someone shrink");
        assert_eq!(operation_words("  ", ME), "");
    }

    #[test]
    fn other_messages_in_groups_are_never_answered() {
        for mode in [GroupMode::Addressed, GroupMode::All, GroupMode::Off] {
            assert!(!takes(mode, ME, &origin(ChatKind::Group), Sort::Other, &named(&["docket_bot"])));
        }
    }
}
