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
//!
//! This file holds the transaction itself ([`Intake::record`]) and what every answer shares.
//! Which updates are docket's is `addressing.rs`; who may use it, `access.rs`; a document and
//! its runs, `documents.rs`; the parts of an album, one ticket, `albums.rs`; the files of a
//! `/merge`, `merges.rs`; commands and button presses, `commands.rs`.

mod access;
mod addressing;
mod albums;
mod commands;
mod documents;
mod merges;
pub mod polling;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{debug, info, warn};

pub use crate::domain::incoming::{Command, Incoming, Origin};
use crate::domain::{BotId, ChatRef, IdempotencyKey, MessageKind, Operation, SharedClock, Ticket, Timestamp, UpdateId};
use crate::domain::{Button, NewMessage};
use crate::sealing::SealingKey;
use crate::store::{Store, StoreResult, Tx, UpdateOutcome};
use crate::texts::{self, Lang};

pub use access::{AccessRules, InviteTokens};
use addressing::{incoming_origin, unusable_kind};
use commands::LANG_PREFIX;
pub use commands::cancel_job;

/// What intake did with an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The update was registered before; nothing changed.
    Repeat,
    /// A new job and its ticket reply.
    Submission(Ticket),
    /// One more file of a ticket still taking them (an album's, or an open `/merge`'s).
    AddedFile(Ticket),
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
    /// `[limits] album_quiet_window`: an album's ticket takes parts until none came for this long.
    pub album_quiet_window: Duration,
    /// `[limits] merge_files`: the most files one `/merge` takes.
    pub merge_files: u64,
    /// `[limits] merge_bytes`: the most bytes one `/merge` takes.
    pub merge_bytes: u64,
    /// `[limits] merge_idle`: an open `/merge` with no file for this long is merged as it is.
    pub merge_idle: Duration,
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
        let (lang, allowed) = self.note_the_chat(&mut tx, update_id, &incoming, now).await?;
        let (recorded, ended_jobs) = self.respond(&mut tx, update_id, incoming, lang, allowed, now).await?;
        tx.advance_offset(bot_id, update_id.next_offset(), now).await?;
        tx.commit().await?;
        self.after_commit(update_id, unusable, &recorded, ended_jobs);
        Ok(recorded)
    }

    /// What every update from a chat tells of it: a dead chat that writes again is revived, and
    /// its writer's language noted. The language the chat is answered in, and whether its sender
    /// may use the bot (an update from no chat: English, allowed).
    async fn note_the_chat(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        incoming: &Incoming,
        now: Timestamp,
    ) -> StoreResult<(Lang, bool)> {
        let Some(origin) = incoming_origin(incoming) else { return Ok((Lang::ENGLISH, true)) };
        // A person who blocked the bot and writes again can be answered again.
        if tx.revive_chat(origin.chat).await? {
            info!(update.id = %update_id, "a dead chat wrote again; sending to it again");
        }
        if let Some(code) = origin.language {
            // A chat is written to in its writers' language until `/lang` chooses one; every
            // answer is rendered in it.
            tx.note_language(origin.chat, code.as_str(), now).await?;
        }
        Ok((chat_lang(tx, origin.chat).await?, self.may_use(tx, origin).await?))
    }

    /// Answers `incoming` inside `tx`: what was recorded, and whether it ended jobs.
    ///
    /// One match, kept whole because the order of its arms is the access rule: what concerns a
    /// person's own data (privacy, forget, language) and a press are answered allowed or not, an
    /// invite lets a person in, and only then is everything else refused to who may not use the
    /// bot.
    async fn respond(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        incoming: Incoming,
        lang: Lang,
        allowed: bool,
        now: Timestamp,
    ) -> StoreResult<(Recorded, bool)> {
        let mut ended_jobs = false;
        let recorded = match incoming {
            Incoming::Malformed(_) => Recorded::Rejected,
            Incoming::Ignored => Recorded::Ignored,
            Incoming::Unusable(Some(origin), kind) => {
                self.reply(tx, update_id, origin, texts::cannot_use(lang, kind)).await?;
                Recorded::Answered
            }
            Incoming::Unusable(None, _) => Recorded::Ignored,
            // What concerns a person's own data stays theirs to ask about, allowed or not.
            Incoming::Command(origin, Command::Privacy, _) => {
                self.reply(tx, update_id, origin, texts::privacy(lang, &self.help_facts())).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Forget, _) => {
                self.ask_to_forget(tx, update_id, origin).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Lang, _) => {
                self.ask_language(tx, update_id, origin).await?;
                Recorded::Answered
            }
            Incoming::Button(origin, press) if press.data.starts_with(LANG_PREFIX) => {
                self.choose_language(tx, update_id, origin, &press.data).await?;
                Recorded::Pressed { query_id: press.query_id }
            }
            Incoming::Button(origin, press) => {
                ended_jobs = self.pressed(tx, update_id, origin, &press.data, allowed).await?;
                Recorded::Pressed { query_id: press.query_id }
            }
            Incoming::Command(origin, Command::Start(Some(token)), _)
                if !allowed && origin.user.is_some() && self.settings.get().invites.accepts(&token) =>
            {
                if let Some(user) = origin.user {
                    tx.invite(user, now).await?;
                    info!(update.id = %update_id, user.id = user.0, "let a person in with an invite token");
                }
                self.reply(tx, update_id, origin, texts::invited(lang, &self.help_facts())).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, ..) | Incoming::Document(origin, ..) if !allowed => {
                self.reply(tx, update_id, origin, texts::not_allowed(lang, origin.user.map(|u| u.0))).await?;
                Recorded::RefusedAccess
            }
            Incoming::Command(origin, Command::Get(Some(ticket)), _) => {
                self.redeliver(tx, update_id, origin, ticket).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Cancel(Some(ticket)), _) => {
                ended_jobs = self.cancel(tx, update_id, origin, ticket).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Cancel(None), _) => {
                ended_jobs = self.drop_merge(tx, update_id, origin).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Merge, _) => self.open_merge(tx, update_id, origin).await?,
            Incoming::Command(origin, Command::Done, _) => {
                let recorded;
                (recorded, ended_jobs) = self.finish_merge(tx, update_id, origin).await?;
                recorded
            }
            Incoming::Command(origin, Command::Mode(None), _) => {
                self.ask_mode(tx, update_id, origin).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Stats, _) => {
                let text = if self.is_admin(origin) {
                    texts::stats(lang, &tx.stats(now).await?, self.settings.get().budget_bytes, now)
                } else {
                    texts::admins_only(lang)
                };
                self.reply(tx, update_id, origin, text).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, command, _) => {
                let text = self.answer(tx, origin.chat, command).await?;
                self.reply(tx, update_id, origin, text).await?;
                Recorded::Answered
            }
            Incoming::Document(origin, facts, _) => self.document(tx, update_id, origin, facts).await?,
        };
        Ok((recorded, ended_jobs))
    }

    /// Once the update's transaction committed: an unusable update is counted and logged by its
    /// kind, and whoever waits for what it queued is woken.
    fn after_commit(&self, update_id: UpdateId, unusable: Option<&'static str>, recorded: &Recorded, ended_jobs: bool) {
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
        if matches!(
            recorded,
            Recorded::Submission(_) | Recorded::AddedFile(_) | Recorded::KnownFile(_) | Recorded::Pressed { .. }
        ) {
            self.jobs_waiting.notify_waiters();
        }
        if !matches!(recorded, Recorded::Ignored | Recorded::Rejected) {
            self.messages_waiting.notify_waiters();
        }
        if ended_jobs {
            self.jobs_ended.notify_waiters();
        }
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

    async fn reply(&self, tx: &mut Tx, update_id: UpdateId, origin: Origin, text: String) -> StoreResult<()> {
        self.reply_with_buttons(tx, update_id, origin, text, Vec::new()).await
    }

    /// Queues `body` in answer to `update_id`, with `buttons` under it (a question's choices).
    async fn reply_with_buttons(
        &self,
        tx: &mut Tx,
        update_id: UpdateId,
        origin: Origin,
        body: String,
        buttons: Vec<Button>,
    ) -> StoreResult<()> {
        let message = NewMessage {
            idempotency_key: IdempotencyKey::reply_to(update_id),
            job: None,
            chat: origin.chat,
            kind: MessageKind::Reply,
            body,
            reply_to_message_id: Some(origin.message_id),
            buttons,
            part: None,
        };
        tx.enqueue(&message, self.clock.now()).await?;
        Ok(())
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
            part: None,
        };
        tx.enqueue(&message, self.clock.now()).await?;
        Ok(())
    }
}

/// The language `chat` is written to in, as the store keeps it (English when it knows none).
async fn chat_lang(tx: &mut Tx, chat: ChatRef) -> StoreResult<Lang> {
    tx.chat_lang(chat).await
}
