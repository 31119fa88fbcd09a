//! Intake: turns one Telegram update into durable facts, in ONE transaction.
//!
//! For each update it registers (bot, update_id) — a repeat changes nothing — and then records a
//! job in state `accepted` and queues the ticket reply, or queues the answer to a command, a
//! repeated file or a refusal. Registration, job and reply commit together, so a crash can
//! neither lose the reply nor make a job without one; the poll offset moves in the same
//! transaction. No download, no disk, no heavy work happens here.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{debug, info};

use crate::config::Access;
use crate::domain::{ChatRef, JobState, MessageKind, Operation, SharedClock, Ticket, UserId};
use crate::store::{NewJob, NewMessage, Store, StoreResult, Tx, UpdateOutcome};
use crate::telegram::texts;

/// A document as Telegram described it. Every field is a claim, not a fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentFacts {
    /// For getFile.
    pub file_id: String,
    /// Stable across chats and bots; part of the unique key.
    pub file_unique_id: String,
    /// The declared file name.
    pub name: Option<String>,
    /// The declared MIME type.
    pub mime: Option<String>,
    /// The declared size; `None` when Telegram did not say.
    pub size: Option<u64>,
}

/// The commands people can send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/start`
    Start,
    /// `/help`
    Help,
    /// `/status N` (`None`: no usable number given).
    Status(Option<Ticket>),
    /// `/jobs`
    Jobs,
    /// `/get N`: send a kept result again (`None`: no usable number given).
    Get(Option<Ticket>),
}

/// Who sent a message, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    /// The chat.
    pub chat: ChatRef,
    /// The sender, when known.
    pub user: Option<UserId>,
    /// The message, for threading replies.
    pub message_id: i64,
}

/// What an update means to docket, extracted by the Telegram adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// A message with a document.
    Document(Origin, DocumentFacts),
    /// A known command.
    Command(Origin, Command),
    /// A message docket has nothing to do with (text, photo, sticker…): answered with a hint.
    Other(Origin),
    /// An update that needs no answer (edits, member changes, service messages).
    Ignored,
    /// An update that could not be understood; recorded as rejected with the reason.
    Malformed(String),
}

/// What intake did with an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    /// The update was registered before; nothing changed.
    Repeat,
    /// A new job and its ticket reply.
    NewJob(Ticket),
    /// The file was known: same ticket, answered accordingly.
    KnownFile(Ticket),
    /// The file was over the download limit: refused, no job.
    RefusedTooBig,
    /// The sender may not use the bot.
    RefusedAccess,
    /// A command or a hint was answered.
    Answered,
    /// Nothing to do.
    Ignored,
    /// Kept as rejected, with the reason.
    Rejected,
}

/// Intake's settings: the slice of the configuration it needs.
#[derive(Debug, Clone)]
pub struct IntakeSettings {
    /// Whose updates these are (the key of the update registry).
    pub bot_id: i64,
    /// Who may use the bot.
    pub access: Access,
    /// Largest file the bot can download in the current mode.
    pub download_limit: u64,
    /// Largest file the bot can upload in the current mode.
    pub upload_limit: u64,
    /// How long results are kept.
    pub result_ttl: Duration,
    /// The largest file the byte budget can ever hold (with its intermediate output).
    pub largest_source: u64,
}

/// The intake service. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Intake {
    store: Store,
    clock: SharedClock,
    settings: Arc<IntakeSettings>,
    /// Woken when a job becomes claimable by the download pool.
    jobs_waiting: Arc<Notify>,
    /// Woken when a message is queued.
    messages_waiting: Arc<Notify>,
}

impl Intake {
    /// A service writing to `store`, waking the pools through the given notifiers.
    pub fn new(
        store: Store,
        clock: SharedClock,
        settings: IntakeSettings,
        jobs_waiting: Arc<Notify>,
        messages_waiting: Arc<Notify>,
    ) -> Self {
        Self { store, clock, settings: Arc::new(settings), jobs_waiting, messages_waiting }
    }

    /// Records update `update_id` and what it means, atomically; moves the poll offset past it.
    pub async fn record(&self, update_id: i64, incoming: Incoming) -> StoreResult<Recorded> {
        let now = self.clock.now();
        let mut tx = self.store.begin().await?;
        let (outcome, reason) = match &incoming {
            Incoming::Malformed(reason) => (UpdateOutcome::Rejected, Some(reason.as_str())),
            _ => (UpdateOutcome::Recorded, None),
        };
        let bot_id = self.settings.bot_id;
        if !tx.register_update(bot_id, update_id, outcome, reason, now).await? {
            tx.advance_offset(bot_id, update_id + 1, now).await?;
            tx.commit().await?;
            debug!(update.id = update_id, "update was registered before; dropped");
            return Ok(Recorded::Repeat);
        }
        if let Incoming::Document(origin, _) | Incoming::Command(origin, _) | Incoming::Other(origin) = &incoming {
            // A person who blocked the bot and writes again can be answered again.
            if tx.revive_chat(origin.chat).await? {
                info!(update.id = update_id, "a dead chat wrote again; sending to it again");
            }
        }
        let recorded = match incoming {
            Incoming::Malformed(_) => Recorded::Rejected,
            Incoming::Ignored => Recorded::Ignored,
            Incoming::Other(origin) => {
                self.reply(&mut tx, update_id, origin, texts::send_a_document()).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, Command::Get(Some(ticket))) if self.may_use(origin) => {
                self.redeliver(&mut tx, update_id, origin, ticket).await?;
                Recorded::Answered
            }
            Incoming::Command(origin, command) if self.may_use(origin) => {
                let text = self.answer(&mut tx, origin.chat, command).await?;
                self.reply(&mut tx, update_id, origin, text).await?;
                Recorded::Answered
            }
            Incoming::Document(origin, facts) if self.may_use(origin) => {
                self.document(&mut tx, update_id, origin, facts).await?
            }
            Incoming::Command(origin, _) | Incoming::Document(origin, _) => {
                self.reply(&mut tx, update_id, origin, texts::not_allowed(origin.user.map(|u| u.0))).await?;
                Recorded::RefusedAccess
            }
        };
        tx.advance_offset(bot_id, update_id + 1, now).await?;
        tx.commit().await?;
        if matches!(recorded, Recorded::NewJob(_) | Recorded::KnownFile(_)) {
            self.jobs_waiting.notify_waiters();
        }
        if !matches!(recorded, Recorded::Ignored | Recorded::Rejected) {
            self.messages_waiting.notify_waiters();
        }
        Ok(recorded)
    }

    fn may_use(&self, origin: Origin) -> bool {
        origin.user.is_some_and(|u| self.settings.access.allows(u.0))
    }

    async fn document(
        &self,
        tx: &mut Tx,
        update_id: i64,
        origin: Origin,
        facts: DocumentFacts,
    ) -> StoreResult<Recorded> {
        let now = self.clock.now();
        let name = facts.name.clone().unwrap_or_default();
        if let Some(size) = facts.size.filter(|s| *s > self.settings.download_limit) {
            let text = texts::too_big_to_accept(&name, size, self.settings.download_limit);
            self.reply(tx, update_id, origin, text).await?;
            info!(
                update.id = update_id,
                size_bytes = size,
                limit_bytes = self.settings.download_limit,
                "refused a file over the download limit"
            );
            return Ok(Recorded::RefusedTooBig);
        }
        if let Some(size) = facts.size.filter(|s| *s > self.settings.largest_source) {
            let text = texts::too_big_for_budget(&name, size, self.settings.largest_source);
            self.reply(tx, update_id, origin, text).await?;
            info!(update.id = update_id, size_bytes = size, "refused a file bigger than the whole byte budget");
            return Ok(Recorded::RefusedTooBig);
        }
        let new_job = NewJob {
            update_id,
            chat: origin.chat,
            user_id: origin.user.map(|u| u.0),
            message_id: origin.message_id,
            file_id: facts.file_id,
            file_unique_id: facts.file_unique_id,
            declared_name: facts.name,
            declared_mime: facts.mime,
            declared_size: facts.size.map(|s| i64::try_from(s).unwrap_or(i64::MAX)),
            operation: Operation::Optimize,
        };
        let Some(job) = tx.job_by_file(origin.chat, &new_job.file_unique_id).await? else {
            let ticket = tx.insert_job(&new_job, now).await?;
            let ahead = tx.jobs_ahead(ticket, texts::QUEUE_COUNT_CAP).await?;
            let text = texts::ticket_reply(&name, facts.size, ticket, ahead);
            self.queue(tx, format!("job:{}:ticket", ticket.0), Some(ticket), origin, MessageKind::TicketReply, text)
                .await?;
            info!(ticket = ticket.0, update.id = update_id, declared_size_bytes = facts.size, "accepted a document");
            metrics::counter!("docket_jobs_accepted_total").increment(1);
            return Ok(Recorded::NewJob(ticket));
        };
        let ticket = job.ticket;
        match job.state {
            JobState::Ready => {
                // The result is kept (past its date it stays until the janitor's next pass, and
                // it is still there to send): send it again, by its Telegram file_id when known.
                let caption = texts::ready_caption(&job);
                self.queue(
                    tx,
                    format!("update:{update_id}:result"),
                    Some(ticket),
                    origin,
                    MessageKind::Result,
                    caption,
                )
                .await?;
            }
            JobState::Expired | JobState::Failed => {
                let text = if job.state == JobState::Failed {
                    texts::trying_again_after_failure(&name, ticket)
                } else {
                    texts::processing_again_after_expiry(ticket, job.result_expires_at.unwrap_or(now))
                };
                tx.resubmit_job(ticket, job.state, &new_job, now).await?;
                self.queue(
                    tx,
                    format!("update:{update_id}:reply"),
                    Some(ticket),
                    origin,
                    MessageKind::TicketReply,
                    text,
                )
                .await?;
            }
            JobState::Accepted | JobState::Fetched | JobState::Processing => {
                let text = texts::already_ticket(&name, ticket, job.state);
                self.queue(tx, format!("update:{update_id}:reply"), Some(ticket), origin, MessageKind::Reply, text)
                    .await?;
            }
        }
        info!(ticket = ticket.0, update.id = update_id, "the same file arrived again");
        Ok(Recorded::KnownFile(ticket))
    }

    /// `/get N`: the kept result again (by its Telegram file_id when known: one read, one
    /// message), or the ticket's status when there is no result to send.
    async fn redeliver(&self, tx: &mut Tx, update_id: i64, origin: Origin, ticket: Ticket) -> StoreResult<()> {
        match tx.job(ticket).await? {
            Some(job) if job.chat == origin.chat && job.state == JobState::Ready => {
                let caption = texts::ready_caption(&job);
                self.queue(tx, format!("update:{update_id}:result"), Some(ticket), origin, MessageKind::Result, caption)
                    .await
            }
            Some(job) if job.chat == origin.chat => self.reply(tx, update_id, origin, texts::status(&job)).await,
            _ => self.reply(tx, update_id, origin, texts::no_such_ticket(ticket)).await,
        }
    }

    async fn answer(&self, tx: &mut Tx, chat: ChatRef, command: Command) -> StoreResult<String> {
        let facts = texts::HelpFacts {
            download_limit: self.settings.download_limit,
            upload_limit: self.settings.upload_limit,
            result_ttl: self.settings.result_ttl,
        };
        Ok(match command {
            Command::Start => texts::start(&facts),
            Command::Help => texts::help(&facts),
            Command::Status(None) | Command::Get(_) => texts::status_usage(),
            Command::Status(Some(ticket)) => match tx.job(ticket).await? {
                // Another chat's ticket reads exactly like a missing one.
                Some(job) if job.chat == chat => texts::status(&job),
                _ => texts::no_such_ticket(ticket),
            },
            Command::Jobs => texts::jobs(&tx.chat_jobs(chat, 10).await?),
        })
    }

    async fn reply(&self, tx: &mut Tx, update_id: i64, origin: Origin, text: String) -> StoreResult<()> {
        self.queue(tx, format!("update:{update_id}:reply"), None, origin, MessageKind::Reply, text).await
    }

    async fn queue(
        &self,
        tx: &mut Tx,
        key: String,
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
        };
        tx.enqueue(&message, self.clock.now()).await?;
        Ok(())
    }
}
