//! Outgoing messages: what kinds there are, the states of a delivery, and their priorities.
//!
//! Every message to a person is a row in the outbox first. The row is written in the same
//! transaction as the fact it reports, so a crash can neither lose a reply nor send one for
//! something that was never recorded.

use std::fmt;
use std::str::FromStr;

use super::ids::{ChatRef, UpdateId};
use super::job::{Ticket, UnknownName};

/// What makes a queued message unique: queueing a message whose key is already in the outbox is a
/// no-op, so every writer that may run twice (a redelivered update, a resumed job, a janitor pass
/// repeated after a crash) names its message by what it reports, never by when it ran.
///
/// Keys are built only by the constructors below, so one fact always gets one key, whoever
/// queues it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// The ticket reply to the document that created `ticket` (its status message).
    pub fn ticket_reply(ticket: Ticket) -> Self {
        Self(format!("job:{}:ticket", ticket.0))
    }

    /// The edit of `ticket`'s status message: one row per job, re-armed in place.
    pub fn progress(ticket: Ticket) -> Self {
        Self(format!("job:{}:progress", ticket.0))
    }

    /// The result of `ticket`'s run started by `update` (a resubmission starts a new run).
    pub fn result(ticket: Ticket, update: UpdateId) -> Self {
        Self(format!("job:{}:u{}:result", ticket.0, update.0))
    }

    /// Part `part` (from 1) of the result of `ticket`'s run started by `update`, for a result
    /// sent in parts.
    pub fn result_part(ticket: Ticket, update: UpdateId, part: u32) -> Self {
        Self(format!("job:{}:u{}:result:part:{part}", ticket.0, update.0))
    }

    /// The failure notice of `ticket`'s run started by `update`.
    pub fn failure(ticket: Ticket, update: UpdateId) -> Self {
        Self(format!("job:{}:u{}:failure", ticket.0, update.0))
    }

    /// The notice that `ticket`'s result (of the run started by `update`) was deleted before its
    /// promised time.
    pub fn early_expiry(ticket: Ticket, update: UpdateId) -> Self {
        Self(format!("job:{}:u{}:early-expiry", ticket.0, update.0))
    }

    /// The text answer to `update` (a command, a repeated file, a refusal).
    pub fn reply_to(update: UpdateId) -> Self {
        Self(format!("update:{}:reply", update.0))
    }

    /// A kept result sent again in answer to `update`.
    pub fn result_for(update: UpdateId) -> Self {
        Self(format!("update:{}:result", update.0))
    }

    /// Part `part` (from 1) of a kept result sent in parts, sent again in answer to `update`.
    pub fn result_part_for(update: UpdateId, part: u32) -> Self {
        Self(format!("update:{}:result:part:{part}", update.0))
    }

    /// The alert to `admin` that messages went undelivered, at most one per `hour` (hours since
    /// the epoch).
    pub fn undelivered_alert(admin: ChatRef, hour: i64) -> Self {
        Self(format!("alert:{}:undelivered:{hour}", admin.0))
    }

    /// The message to `admin` that host `node`'s data folder ran low on space, one per episode
    /// (the episode began at `since`).
    pub fn data_folder_low_alert(admin: ChatRef, node: &str, since: super::Timestamp) -> Self {
        Self(format!("alert:{}:data-folder-low:{node}:{}", admin.0, since.as_millis()))
    }

    /// Whether this is an admins' alert (which never raises another alert).
    pub fn is_alert(&self) -> bool {
        self.0.starts_with("alert:")
    }

    /// The notice that an admin sent `ticket`, failed at `failed_at`, back to the queue: one
    /// per failure retried.
    pub fn retried(ticket: Ticket, failed_at: super::Timestamp) -> Self {
        Self(format!("job:{}:retry:{}", ticket.0, failed_at.as_millis()))
    }

    /// The notice that an admin cancelled `ticket` in the state it reached at `changed_at`.
    pub fn cancelled_by_admin(ticket: Ticket, changed_at: super::Timestamp) -> Self {
        Self(format!("job:{}:cancel:{}", ticket.0, changed_at.as_millis()))
    }

    /// A key as storage returns it.
    pub fn from_stored(key: String) -> Self {
        Self(key)
    }

    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a pacing entry holds back: calls to one chat, every call (the bot as a whole, after 429s
/// for several chats at once), or the global rate limit's reserved send slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Paced {
    /// One chat: its own interval, or a 429 for it.
    Chat(ChatRef),
    /// Every chat waits.
    WholeBot,
    /// The last reserved slot of the global rate limit, shared by every sender.
    SendSlots,
}

/// What an outgoing message is for. Decides its priority and what a lost outcome means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// The ticket reply to a new document.
    TicketReply,
    /// A reply to a command or to a repeated file, or a refusal.
    Reply,
    /// The result document of a `ready` job.
    Result,
    /// The notice that a job failed, with its reason.
    Failure,
    /// An edit of the job's status message (its ticket reply) to the job's current state. One
    /// row per job, re-armed and coalesced in place: only the latest state is ever sent.
    Progress,
}

impl MessageKind {
    /// Every kind.
    pub const ALL: [MessageKind; 5] = [Self::TicketReply, Self::Reply, Self::Result, Self::Failure, Self::Progress];

    /// The stable name stored in the database.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::TicketReply => "ticket_reply",
            Self::Reply => "reply",
            Self::Result => "result",
            Self::Failure => "failure",
            Self::Progress => "progress",
        }
    }

    /// Lower goes first. Replies and results before anything slower; progress edits last (a
    /// later state supersedes them anyway).
    pub const fn priority(self) -> i32 {
        match self {
            Self::TicketReply | Self::Reply => 0,
            Self::Result | Self::Failure => 1,
            Self::Progress => 2,
        }
    }
}

impl FromStr for MessageKind {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownName(s.to_owned()))
    }
}

/// How long a new progress edit waits before it may go out. A state that lasts less (a small
/// file downloads and is processed in well under a second) is replaced before it is shown, so
/// a quick job costs its chat one edit, not four, and the result is never held back behind an
/// edit of a state that is already over.
pub const PROGRESS_SETTLE: std::time::Duration = std::time::Duration::from_secs(1);

/// What to do with a message whose send went out but whose outcome was lost (a timeout after
/// the request was sent, a cut connection). The Bot API has no idempotency key, so this is the
/// one place that decides between a possible duplicate and a possible loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterUnknown {
    /// Send again: a duplicate is harmless, a loss is not.
    SendAgain,
    /// Send again only if no newer delivery of the same result went out since; record the repeat.
    SendAgainUnlessSuperseded,
    /// Drop it: the job's next state re-arms the row with newer text anyway.
    Drop,
}

impl MessageKind {
    /// The rule for a lost outcome, per kind (docs/ARCHITECTURE.md, "The outbox").
    pub const fn after_unknown(self) -> AfterUnknown {
        match self {
            Self::TicketReply | Self::Reply | Self::Failure => AfterUnknown::SendAgain,
            Self::Result => AfterUnknown::SendAgainUnlessSuperseded,
            Self::Progress => AfterUnknown::Drop,
        }
    }
}

/// Where a delivery is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OutboxState {
    /// Waiting to be sent (possibly not before some time).
    Pending,
    /// A sender holds the row and may be calling Telegram right now.
    Sending,
    /// Telegram accepted it; its message id is recorded.
    Sent,
    /// The call went out but its outcome was lost.
    Unknown,
    /// The chat blocked the bot or no longer exists; nothing more is sent to it.
    Dead,
    /// Gave up after repeated errors.
    Failed,
}

impl OutboxState {
    /// Every state.
    pub const ALL: [OutboxState; 6] =
        [Self::Pending, Self::Sending, Self::Sent, Self::Unknown, Self::Dead, Self::Failed];

    /// The stable name stored in the database.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Sending => "sending",
            Self::Sent => "sent",
            Self::Unknown => "unknown",
            Self::Dead => "dead",
            Self::Failed => "failed",
        }
    }
}

impl fmt::Display for OutboxState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OutboxState {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownName(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in MessageKind::ALL {
            assert_eq!(k.as_str().parse::<MessageKind>(), Ok(k));
        }
        for s in OutboxState::ALL {
            assert_eq!(s.as_str().parse::<OutboxState>(), Ok(s));
        }
    }

    #[test]
    fn replies_go_before_results_and_results_before_progress_edits() {
        assert!(MessageKind::TicketReply.priority() < MessageKind::Result.priority());
        assert!(MessageKind::Result.priority() < MessageKind::Progress.priority());
        assert!(MessageKind::Failure.priority() < MessageKind::Progress.priority());
    }

    #[test]
    fn only_lost_progress_edits_are_dropped() {
        for kind in MessageKind::ALL {
            assert_eq!(kind.after_unknown() == AfterUnknown::Drop, kind == MessageKind::Progress, "{kind:?}");
        }
    }
}
