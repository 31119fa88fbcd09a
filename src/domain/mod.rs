//! The domain: tickets, job states and their legal transitions, leases, outgoing messages, the
//! records of jobs and messages, time.
//!
//! Nothing here does I/O or knows about sqlx, teloxide or lopdf. Every other layer speaks in
//! these types, so the rules of the state machine live in exactly one place.

pub mod default_operation;
pub mod document;
pub mod ids;
pub mod incoming;
pub mod job;
pub mod lease;
pub mod names;
pub mod node;
pub mod operation;
pub mod outbox;
pub mod records;
pub mod retry;
pub mod size_target;
pub mod time;

pub use default_operation::default_operation;
pub use document::{DocumentInfo, Encryption, FontFact, PageSize};
pub use ids::{BotId, ChatRef, MessageId, OutboxId, UpdateId, UserId};
pub use job::{FailureReason, JobEvent, JobState, Ticket, Transition, TransitionError};
pub use lease::Lease;
pub use node::{Node, NodeBeat, NodeName, NodeStatus};
pub use operation::{Angle, Languages, Operation, Output, PageRange, PageRanges, Password};
pub use outbox::{AfterUnknown, IdempotencyKey, MessageKind, OutboxState, PROGRESS_SETTLE, Paced};
pub use records::{
    BotStats, Button, FileOwner, Job, NewMessage, OutboxMessage, ResultFile, SourceFile, SourcePart, Submission,
};
pub use size_target::SizeTarget;
pub use time::{Clock, ManualClock, SharedClock, SystemClock, Timestamp};
