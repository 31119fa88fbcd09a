//! The `jobs` table: one row per *run* (one operation asked of one chat's document), from intake
//! to its result's expiry.
//!
//! A ticket is one chat's one document; its runs are rows of this table. The ticket's first run
//! is the row whose id is the ticket number (`ticket_id` NULL); every further run (another
//! operation, asked by a button or a caption) names that row in `ticket_id`. `jobs_file` keeps one
//! ticket per chat and document (over first runs), `jobs_run` one run per ticket, operation and
//! arguments. This shape was chosen because it disturbs least: a run has the whole state
//! machine a job had (leases, attempts, the byte budget, outbox keys, retention, the janitor), so
//! every statement about jobs holds per run unchanged, and every job that existed before
//! migration 0011 is a ticket with one run that keeps its number. A separate `tickets` table would
//! have renumbered what people see, or made every job statement join it.
//!
//! Every state change is a conditional `UPDATE … WHERE id = $1 AND status = <expected>
//! [AND lease_token = <held>]`; zero rows changed means someone else moved the row first, which
//! the functions here report as `false`, never as an error. The claim statements, which lock
//! differently per backend, are the backends' own (`CLAIMS` in `sqlite.rs` and `postgres.rs`);
//! the statements that expire results are in `retention.rs`.
//!
//! This file holds the parameter types and the row; the statements, with the functions that run
//! them and the [`Store`](super::Store) and [`Tx`](super::Tx) methods over those, are in
//! `queries.rs` (reads), `claims.rs` (leases), `lifecycle.rs` (state moves) and `sources.rs`
//! (the several sources of an album's ticket, and its gathering).

mod claims;
mod lifecycle;
mod queries;
mod sources;

pub use claims::*;
pub use lifecycle::*;
pub use queries::*;
pub use sources::*;

use super::args::Arg;
use super::{Conn, QueryContext, StoreError, StoreResult, lease};
use crate::domain::{
    ChatRef, Job, JobEvent, JobState, MessageId, NodeName, Operation, Password, ResultFile, SourceFile, Submission,
    Ticket, Timestamp, UpdateId, UserId,
};

/// The pipeline stages that claim jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Claims `accepted` jobs.
    Download,
    /// Claims `fetched` jobs (and `processing` ones whose lease lapsed).
    Process,
}

/// Which `accepted` jobs a download claim may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClaimLimits {
    /// The size assumed for a job whose size Telegram did not declare.
    pub unknown_size: i64,
    /// The largest (declared or assumed) size that fits the byte budget now.
    pub max_size: i64,
    /// How many jobs of one chat may be in flight (leased downloads, fetched, processing).
    pub per_chat: i64,
}

impl ClaimLimits {
    /// No limits.
    pub const NONE: Self = Self { unknown_size: 0, max_size: i64::MAX, per_chat: i64::MAX };
}

/// How a holder gives a job back without finishing it.
#[derive(Debug, Clone)]
pub struct Release {
    /// The state the job must be in now.
    pub from: JobState,
    /// What happened; decides the next state.
    pub event: JobEvent,
    /// Not claimable before this.
    pub not_before: Timestamp,
    /// Detail for admins (the error that caused it).
    pub detail: Option<String>,
    /// What the release does to the attempt counter.
    pub attempts: AttemptRule,
}

/// What a release does to the job's attempt counter (a claim counts one attempt in advance).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptRule {
    /// The attempt failed through the job's own fault (or a passing error): it counts.
    Spent,
    /// Not the job's fault (a graceful release at shutdown, a flood wait): the claim's attempt
    /// is given back.
    Refunded,
    /// A new stage begins (the source was lost): the counter starts again.
    Restarted,
}

impl AttemptRule {
    /// The code the release statement binds.
    pub(crate) const fn code(self) -> i32 {
        match self {
            Self::Spent => 0,
            Self::Refunded => 1,
            Self::Restarted => 2,
        }
    }
}

/// The facts recorded when a job turns `ready`.
#[derive(Debug, Clone)]
pub struct Completion {
    /// Result file.
    pub result_path: String,
    /// Result size.
    pub result_size: i64,
    /// For a result sent in parts, how many there are; `None`: one file.
    pub parts: Option<u32>,
    /// Detected source format.
    pub detected_format: String,
    /// When the result is deleted.
    pub expires_at: Timestamp,
}

/// Which jobs to list.
#[derive(Debug, Clone, Default)]
pub struct JobFilter {
    /// Only this chat.
    pub chat: Option<ChatRef>,
    /// Only this state.
    pub state: Option<JobState>,
    /// Only jobs last changed at or after this moment.
    pub since: Option<Timestamp>,
    /// At most this many, newest first.
    pub limit: i64,
}

/// A `jobs` row as the databases return it.
#[derive(Debug, sqlx::FromRow)]
pub(super) struct JobRow {
    id: i64,
    update_id: i64,
    chat_id: i64,
    user_id: Option<i64>,
    message_id: i64,
    file_id: String,
    file_unique_id: String,
    declared_name: Option<String>,
    declared_mime: Option<String>,
    declared_size: Option<i64>,
    operation: String,
    arguments: String,
    secret: Option<String>,
    language_code: Option<String>,
    chosen_by_default: i64,
    ticket_id: Option<i64>,
    status: String,
    local_path: Option<String>,
    real_size: Option<i64>,
    sha256: Option<String>,
    detected_format: Option<String>,
    lease_owner: Option<String>,
    lease_token: i64,
    lease_until: Option<i64>,
    attempts: i64,
    not_before: i64,
    source_losses: i64,
    error: Option<String>,
    error_detail: Option<String>,
    result_path: Option<String>,
    result_size: Option<i64>,
    result_parts: Option<i64>,
    result_file_id: Option<String>,
    result_expires_at: Option<i64>,
    node: Option<String>,
    created_at: i64,
    updated_at: i64,
}

impl Conn<'_> {
    /// Runs `sql`, which selects whole `jobs` rows, with `args`: the jobs it lists (`action` says
    /// what failed in an error). A statement that selects one job at the most (by a unique key,
    /// or with `LIMIT 1`) takes its job with `pop`.
    pub(super) async fn jobs(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        action: &'static str,
    ) -> StoreResult<Vec<Job>> {
        self.fetch_all::<JobRow>(sql, args).await.context(action)?.into_iter().map(JobRow::into_job).collect()
    }
}

impl JobRow {
    /// The job the row holds; an unknown operation or state is corrupt.
    pub(super) fn into_job(self) -> StoreResult<Job> {
        // A source is recorded whole by `MARK_FETCHED` and a result by `COMPLETE_JOB`; a part of
        // one without the rest is a row no statement writes.
        let source = match (self.real_size, self.sha256) {
            (Some(size), Some(sha256)) => {
                Some(SourceFile { size, sha256, path: self.local_path, format: self.detected_format })
            }
            (None, None) if self.local_path.is_none() && self.detected_format.is_none() => None,
            _ => return Err(StoreError::Corrupt(format!("job {} has part of a source recorded", self.id))),
        };
        let result = match (self.result_size, self.result_expires_at) {
            (Some(size), Some(expires_at)) => Some(ResultFile {
                path: self.result_path,
                size,
                expires_at: Timestamp::from_millis(expires_at),
                telegram_file_id: self.result_file_id,
                parts: self.result_parts.and_then(|parts| u32::try_from(parts).ok()),
            }),
            (None, None) if self.result_path.is_none() && self.result_file_id.is_none() => None,
            _ => return Err(StoreError::Corrupt(format!("job {} has part of a result recorded", self.id))),
        };
        Ok(Job {
            ticket: Ticket(self.id),
            submission: Submission {
                update_id: UpdateId(self.update_id),
                chat: ChatRef(self.chat_id),
                user_id: self.user_id.map(UserId),
                message_id: MessageId(self.message_id),
                file_id: self.file_id,
                file_unique_id: self.file_unique_id,
                declared_name: self.declared_name,
                declared_mime: self.declared_mime,
                declared_size: self.declared_size,
                operation: stored_operation(&self.operation, &self.arguments, self.secret)?,
                chosen_by_default: self.chosen_by_default != 0,
                language_code: self.language_code,
                run_of: self.ticket_id.map(Ticket),
            },
            state: self.status.parse()?,
            lease: lease(self.lease_owner, self.lease_token, self.lease_until),
            attempts: self.attempts,
            not_before: Timestamp::from_millis(self.not_before),
            source_losses: self.source_losses,
            source,
            result,
            error: self.error,
            error_detail: self.error_detail,
            node: stored_node(self.node)?,
            created_at: Timestamp::from_millis(self.created_at),
            updated_at: Timestamp::from_millis(self.updated_at),
        })
    }
}

/// The operation a row names, with its arguments and, for a decrypt, its password.
fn stored_operation(name: &str, arguments: &str, secret: Option<String>) -> StoreResult<Operation> {
    let operation = Operation::from_stored(name, arguments)
        .map_err(|e| StoreError::Corrupt(format!("a job's operation {name:?} {arguments:?}: {e}")))?;
    Ok(match (operation, secret) {
        (Operation::Decrypt { .. }, Some(secret)) => Operation::Decrypt { password: Password::new(secret) },
        (operation, _) => operation,
    })
}

/// The node a row names; a name no node could have is corrupt.
pub(super) fn stored_node(name: Option<String>) -> StoreResult<Option<NodeName>> {
    name.map(|name| NodeName::new(&name).ok_or_else(|| StoreError::Corrupt(format!("node name {name:?} in a job"))))
        .transpose()
}

/// The secret a job keeps apart from its arguments: a decrypt's password (`None`: none).
fn secret_of(operation: &Operation) -> Option<&str> {
    match operation {
        Operation::Decrypt { password } if !password.is_empty() => Some(password.expose()),
        _ => None,
    }
}
