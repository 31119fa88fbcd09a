//! The records docket keeps: jobs and outgoing messages as stored, and what callers hand the
//! store to create them.
//!
//! Plain data: the store reads and writes them, the services act on them. Like the rest of the
//! domain, nothing here does I/O or knows how the rows are stored.

use super::{
    ChatRef, IdempotencyKey, JobState, Lease, MessageId, MessageKind, NodeName, Operation, OutboxId, OutboxState,
    Ticket, Timestamp, UpdateId, UserId,
};

/// What the janitor needs to know of a job that may own files: which files are its own and
/// whether a worker holds it right now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOwner {
    /// The job.
    pub ticket: Ticket,
    /// Its state.
    pub state: JobState,
    /// The lease, if any (possibly lapsed).
    pub lease: Option<Lease>,
    /// The downloaded source, once `fetched`.
    pub local_path: Option<String>,
    /// The result, once `ready`.
    pub result_path: Option<String>,
}

/// A job as stored: one *run*, one operation asked of one chat's one document, from intake to its
/// result's expiry. A document (a ticket) has one run per operation and arguments asked of it:
/// its first run's id is the ticket's number ([`Job::ticket_number`]); each further run has its
/// own id, and names the ticket in [`Submission::run_of`].
///
/// What exists only at some stages is grouped: `source` once the document was downloaded,
/// `result` once it was processed. A resubmission clears both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The ticket (primary key).
    pub ticket: Ticket,
    /// The document as Telegram described it when it was last sent, and what was asked of it.
    pub submission: Submission,
    /// Where the job is.
    pub state: JobState,
    /// The current or last claim.
    pub lease: Option<Lease>,
    /// Attempts at the current stage.
    pub attempts: i64,
    /// When the job became due at its stage (its arrival, resubmission, download, or the end of
    /// a delay): claims take the earliest first, and it is not claimed before then.
    pub not_before: Timestamp,
    /// How often its verified source went missing or changed before processing.
    pub source_losses: i64,
    /// The downloaded document, from `fetched` on.
    pub source: Option<SourceFile>,
    /// The processed document, from `ready` on (kept as a record once expired).
    pub result: Option<ResultFile>,
    /// The host whose data folder holds the job's files (its download, then its result), from
    /// `fetched` on; `None` before, and after the job went back to be downloaded again.
    pub node: Option<NodeName>,
    /// The reason a person reads, when failed.
    pub error: Option<String>,
    /// Detail for admins: why it failed, or why the last attempt did not succeed.
    pub error_detail: Option<String>,
    /// When intake recorded the job.
    pub created_at: Timestamp,
    /// Last change.
    pub updated_at: Timestamp,
}

impl Job {
    /// The declared name, empty when there is none (see [`Submission::name`]).
    pub fn name(&self) -> &str {
        self.submission.name()
    }

    /// The number of the ticket (the document) this run belongs to, as people see it.
    pub fn ticket_number(&self) -> Ticket {
        self.submission.run_of.unwrap_or(self.ticket)
    }

    /// Whether this is a further run of its ticket (not the one the document arrived with).
    pub fn is_further_run(&self) -> bool {
        self.submission.run_of.is_some()
    }

    /// The verified source on disk, while there is one (`fetched` and `processing`).
    pub fn source_path(&self) -> Option<&str> {
        self.source.as_ref().and_then(|s| s.path.as_deref())
    }

    /// The result on disk, while it is kept (`ready`).
    pub fn result_path(&self) -> Option<&str> {
        self.result.as_ref().and_then(|r| r.path.as_deref())
    }
}

/// A document as Telegram described it, and what was asked of it: what intake records for a new
/// job, and what a job keeps of its latest submission. Every field is a claim, not a fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submission {
    /// The update that carried it.
    pub update_id: UpdateId,
    /// The chat that owns the ticket.
    pub chat: ChatRef,
    /// The sender, when Telegram named one.
    pub user_id: Option<UserId>,
    /// The message that carried the document (replies thread to it).
    pub message_id: MessageId,
    /// Telegram's file_id, valid for this bot; passed to getFile.
    pub file_id: String,
    /// Telegram's stable id of the file content, part of the unique key.
    pub file_unique_id: String,
    /// File name as sent; a hint only, never used as a path.
    pub declared_name: Option<String>,
    /// MIME type as sent; a hint only.
    pub declared_mime: Option<String>,
    /// Size as sent; `None` when Telegram did not say.
    pub declared_size: Option<i64>,
    /// What to do with the document (a decrypt's password included, while the job is
    /// unfinished; `Debug` never shows it).
    pub operation: Operation,
    /// Whether no caption named the operation (it is the chat's `/mode`, the bot's default, or
    /// `topdf` for a file declared as an image): a choice made on the declared name and MIME
    /// type, which processing may change to the operation that fits the real format.
    pub chosen_by_default: bool,
    /// The sender's Telegram `language_code` (`en`, `ru`), when Telegram gave one: OCR's language
    /// when the operation names none.
    pub language_code: Option<String>,
    /// The ticket this run belongs to, when it is a further run of a document (another
    /// operation asked of it); `None`: this run is the ticket's first, and its id is the ticket.
    pub run_of: Option<Ticket>,
}

impl Submission {
    /// The declared name, empty when there is none: people read it through
    /// `texts::display_name`, which words the stand-in ("your file") in their language.
    pub fn name(&self) -> &str {
        self.declared_name.as_deref().unwrap_or_default()
    }
}

/// The downloaded document: what was verified of it, and where it is while it is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Bytes actually downloaded.
    pub size: i64,
    /// Hex sha256 of the bytes.
    pub sha256: String,
    /// Where it is on disk: only while `fetched` or `processing` (deleted once the result is
    /// ready or the job failed).
    pub path: Option<String>,
    /// The format detected from the content, once processing looked.
    pub format: Option<String>,
}

/// One file of a ticket of several (an album), as Telegram described it: its place in the
/// ticket and what getFile needs. A ticket of one file has none; its one source is its
/// [`Submission`]'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourcePart {
    /// Its place among the ticket's files, from 1: the order they become pages in.
    pub position: u32,
    /// The message that carried it.
    pub message_id: MessageId,
    /// Telegram's file_id, for getFile.
    pub file_id: String,
    /// Telegram's stable id of the file content: a ticket holds a file once.
    pub file_unique_id: String,
    /// File name as sent; a hint only, never used as a path.
    pub declared_name: Option<String>,
    /// MIME type as sent; a hint only.
    pub declared_mime: Option<String>,
    /// Size as sent; `None` when Telegram did not say.
    pub declared_size: Option<i64>,
}

impl SourcePart {
    /// The file `facts` describes, carried by `message_id`, as a source of a ticket of several
    /// (its position is the store's to give).
    pub fn of(facts: &super::incoming::DocumentFacts, message_id: MessageId) -> Self {
        Self {
            position: 0,
            message_id,
            file_id: facts.file_id.clone(),
            file_unique_id: facts.file_unique_id.clone(),
            declared_name: facts.name.clone(),
            declared_mime: facts.mime.clone(),
            declared_size: facts.size.map(|s| i64::try_from(s).unwrap_or(i64::MAX)),
        }
    }

    /// The declared name, empty when there is none: people read it through
    /// `texts::display_name`, which words the stand-in ("your file") in their language.
    pub fn name(&self) -> &str {
        self.declared_name.as_deref().unwrap_or_default()
    }
}

/// The processed document: its size, how long it is kept, and how to send it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultFile {
    /// Where it is on disk: only while `ready`.
    pub path: Option<String>,
    /// Its size in bytes.
    pub size: i64,
    /// It is kept until then (or, once expired, was kept until then).
    pub expires_at: Timestamp,
    /// Telegram's file_id of the delivered document, for sending it again without an upload
    /// (never for a result sent in parts: each part is uploaded every time).
    pub telegram_file_id: Option<String>,
    /// For a result sent in parts (a ZIP of them), how many there are; `None`: one file.
    pub parts: Option<u32>,
}

/// A message to queue in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewMessage {
    /// Unique per purpose, e.g. `job:12:result`; queueing the same key twice is a no-op.
    pub idempotency_key: IdempotencyKey,
    /// The job it is about, if any.
    pub job: Option<Ticket>,
    /// Where it goes.
    pub chat: ChatRef,
    /// What it is for.
    pub kind: MessageKind,
    /// Text, or the caption of a document.
    pub body: String,
    /// The message it answers.
    pub reply_to_message_id: Option<MessageId>,
    /// The inline buttons under the message, one per row (none: no keyboard).
    pub buttons: Vec<Button>,
    /// For a result sent in parts, the part this message sends, from 1; `None`: all of it.
    pub part: Option<u32>,
}

impl NewMessage {
    /// A message about `job` to its chat, in answer to the message that sent its document,
    /// without buttons.
    pub fn about_job(job: &super::Job, idempotency_key: IdempotencyKey, kind: MessageKind, body: String) -> Self {
        Self {
            idempotency_key,
            job: Some(job.ticket),
            chat: job.submission.chat,
            kind,
            body,
            reply_to_message_id: Some(job.submission.message_id),
            buttons: Vec::new(),
            part: None,
        }
    }
}

/// One inline button under a message: what it says, and the callback data Telegram sends back
/// when it is pressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    /// What the button says.
    pub label: String,
    /// What a press sends back (at most 64 bytes, Telegram's limit).
    pub data: String,
}

impl Button {
    /// What the callback data of a ticket's operation buttons starts with; then
    /// `<ticket>:<operation>`.
    pub const RUN_PREFIX: &'static str = "run:";

    /// The button that asks for `operation` (one without arguments) on `ticket`, labelled with
    /// its name.
    pub fn run(ticket: Ticket, operation: &str) -> Self {
        Self::run_with(ticket, operation, operation.to_owned())
    }

    /// The button that asks for `operation` with its arguments (`shrink 50MB`) on `ticket`,
    /// labelled `label`.
    pub fn run_with(ticket: Ticket, operation: &str, label: String) -> Self {
        Self { label, data: format!("{}{}:{operation}", Self::RUN_PREFIX, ticket.0) }
    }
}

/// A queued outgoing message as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxMessage {
    /// Row id; also the sending order within a chat.
    pub id: OutboxId,
    /// The idempotency key.
    pub idempotency_key: IdempotencyKey,
    /// The job it is about.
    pub job: Option<Ticket>,
    /// Destination chat.
    pub chat: ChatRef,
    /// Purpose.
    pub kind: MessageKind,
    /// Text or caption.
    pub body: String,
    /// The message it answers.
    pub reply_to_message_id: Option<MessageId>,
    /// The inline buttons under the message, one per row (none: no keyboard).
    pub buttons: Vec<Button>,
    /// For a result sent in parts, the part this message sends, from 1; `None`: all of it.
    pub part: Option<u32>,
    /// Delivery state.
    pub state: OutboxState,
    /// Send attempts so far.
    pub attempts: i64,
    /// The claim, while sending.
    pub lease: Option<Lease>,
    /// Telegram's id of the delivered message.
    pub telegram_message_id: Option<MessageId>,
    /// Last error, for admins.
    pub error: Option<String>,
}

/// The figures of `/stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BotStats {
    /// Jobs per state, in life order, with states that have none left out.
    pub jobs: Vec<(super::JobState, i64)>,
    /// When the job waiting longest for its download became due.
    pub oldest_waiting: Option<super::Timestamp>,
    /// Bytes of the files in flight (every host).
    pub bytes_in_flight: u64,
    /// Chats that refused the bot for good.
    pub dead_chats: i64,
    /// 429s in the last hour.
    pub flood_waits_last_hour: i64,
    /// The processes (`<host>:<pid>`) holding a lease now.
    pub hosts: Vec<String>,
}

#[cfg(test)]
impl Job {
    /// A freshly accepted job for unit tests: ticket `ticket`, `name`, declared `size`, chat and
    /// user 7, every time `at`; tests change the fields they are about with struct update syntax.
    pub(crate) fn accepted_for_tests(ticket: i64, name: &str, size: Option<i64>, at: super::Timestamp) -> Self {
        Self {
            ticket: super::Ticket(ticket),
            submission: Submission {
                update_id: super::UpdateId(1),
                chat: super::ChatRef(7),
                user_id: Some(super::UserId(7)),
                message_id: super::MessageId(3),
                file_id: "f".into(),
                file_unique_id: "u".into(),
                declared_name: Some(name.into()),
                declared_mime: Some("application/pdf".into()),
                declared_size: size,
                operation: super::Operation::Optimize,
                chosen_by_default: false,
                language_code: None,
                run_of: None,
            },
            state: super::JobState::Accepted,
            lease: None,
            attempts: 0,
            not_before: at,
            source_losses: 0,
            source: None,
            result: None,
            node: None,
            error: None,
            error_detail: None,
            created_at: at,
            updated_at: at,
        }
    }
}
