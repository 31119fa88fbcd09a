//! Jobs: the ticket that names them, their states, and the one function that says which state
//! may follow which.
//!
//! Storage applies a transition only with `UPDATE … WHERE id = ? AND status = <expected>`; this
//! module decides what `<expected>` and the new state are, so an illegal move is rejected before
//! any SQL runs.

use std::fmt;
use std::str::FromStr;

/// A job's public number, shown to people as `#4812`. It is the job's primary key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ticket(pub i64);

impl fmt::Display for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

impl FromStr for Ticket {
    type Err = std::num::ParseIntError;

    /// Accepts `4812` and `#4812`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.trim().trim_start_matches('#').parse().map(Ticket)
    }
}

/// A name read from storage or input that matches no known variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown name {0:?}")]
pub struct UnknownName(pub String);

/// Where a job is in its life.
///
/// ```text
/// accepted ──download──▶ fetched ──claim──▶ processing ──▶ ready ──ttl──▶ expired
///    ▲  │                  │                   │                             │
///    │  └───────┬──────────┴─────────┬─────────┘                             │
///    │          ▼ (permanent error)  ▼                                       │
///    │        failed                 (source lost: back to accepted)         │
///    └────────────────── same file sent again ───────────────────────────────┘
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Recorded by intake; waiting for (or in) download.
    Accepted,
    /// The source is on disk with a verified size and sha256.
    Fetched,
    /// A processing worker holds the job.
    Processing,
    /// The result is on disk until `result_expires_at`.
    Ready,
    /// Ended without a result; `error` says why in words a person can act on.
    Failed,
    /// The result was kept for its promised time and then deleted.
    Expired,
}

impl JobState {
    /// Every state, in life order.
    pub const ALL: [JobState; 6] =
        [Self::Accepted, Self::Fetched, Self::Processing, Self::Ready, Self::Failed, Self::Expired];

    /// The stable name stored in the database.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Fetched => "fetched",
            Self::Processing => "processing",
            Self::Ready => "ready",
            Self::Failed => "failed",
            Self::Expired => "expired",
        }
    }

    /// Whether the job will not move again on its own.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Ready | Self::Failed | Self::Expired)
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JobState {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|state| state.as_str() == s).ok_or_else(|| UnknownName(s.to_owned()))
    }
}

/// Something that happens to a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobEvent {
    /// The download finished and was verified.
    Fetched,
    /// A processing worker claimed the job (also a resume after a lapsed lease).
    ProcessingStarted,
    /// The holder gives the job back to be tried again later (a transient failure, a shutdown).
    /// A download stays `accepted`; processing goes back to `fetched`, the source still valid.
    RetryLater,
    /// The recorded source is missing or damaged: download again.
    SourceLost,
    /// The result is on disk and committed.
    Completed,
    /// A permanent failure.
    Failed,
    /// Retention ran out.
    Expired,
    /// The same file arrived again after the job ended without a result to give.
    Resubmitted,
    /// The person (or an admin) cancelled the job before it was ready. Its holder, if any,
    /// loses its lease with this move and stops.
    Cancelled,
    /// An admin sent a failed job back to the queue (`docket retry N`).
    Retried,
    /// The host that holds the job's files died (or was drained): its download, and a result it
    /// never delivered, are gone with it. The job is downloaded again, by any host.
    HostLost,
}

/// A move the state machine does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a job in state {from} cannot take event {event:?}")]
pub struct TransitionError {
    /// The state the job was in.
    pub from: JobState,
    /// The event that was refused.
    pub event: JobEvent,
}

/// The state that follows `from` on `event`, or an error when the move is illegal.
pub fn next(from: JobState, event: JobEvent) -> Result<JobState, TransitionError> {
    use JobEvent as E;
    use JobState as S;
    let to = match (from, event) {
        (S::Accepted, E::Fetched) => S::Fetched,
        (S::Fetched | S::Processing, E::ProcessingStarted) => S::Processing,
        (S::Accepted, E::RetryLater) => S::Accepted,
        (S::Processing, E::RetryLater) => S::Fetched,
        (S::Fetched | S::Processing, E::SourceLost) => S::Accepted,
        (S::Processing, E::Completed) => S::Ready,
        (S::Accepted | S::Fetched | S::Processing, E::Failed) => S::Failed,
        (S::Ready, E::Expired) => S::Expired,
        (S::Expired | S::Failed, E::Resubmitted) => S::Accepted,
        (S::Accepted | S::Fetched | S::Processing, E::Cancelled) => S::Failed,
        (S::Failed, E::Retried) => S::Accepted,
        (S::Fetched | S::Processing | S::Ready, E::HostLost) => S::Accepted,
        _ => return Err(TransitionError { from, event }),
    };
    Ok(to)
}

/// A legal move of one job: the state its row must be in, and the state it takes. Storage binds
/// both into its conditional `UPDATE`, so the SQL can only make the moves [`next`] allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    /// The state the job must be in.
    pub from: JobState,
    /// The state it takes.
    pub to: JobState,
}

impl Transition {
    /// The move `event` makes from `from`, or an error when the state machine forbids it.
    pub fn of(from: JobState, event: JobEvent) -> Result<Self, TransitionError> {
        Ok(Self { from, to: next(from, event)? })
    }
}

/// Why a job failed, in terms a person can act on. `telegram::texts` turns it into words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureReason {
    /// The content is not what the operation needs; `found` describes it ("a PNG image").
    NotAPdf {
        /// What the content looks like, for people.
        found: String,
    },
    /// The real file is larger than the download limit.
    TooBig {
        /// Bytes seen (at least).
        size: u64,
        /// The limit in force.
        limit: u64,
    },
    /// Telegram said one size and delivered another.
    SizeMismatch {
        /// The size Telegram declared.
        declared: u64,
        /// The bytes actually received.
        real: u64,
    },
    /// The PDF needs a password.
    Encrypted,
    /// The PDF's structure cannot be read.
    Unreadable,
    /// The PDF has no pages.
    NoPages,
    /// The result is larger than the bot may upload.
    ResultTooBig {
        /// Size of the result.
        size: u64,
        /// The upload limit in force.
        limit: u64,
        /// The operation that made it (the hint depends on it).
        operation: String,
    },
    /// The result grew past the upload limit while it was being written, and its run was
    /// stopped there.
    ResultGrewTooBig {
        /// The upload limit in force.
        limit: u64,
        /// The operation that made it (the hint depends on it).
        operation: String,
    },
    /// The run wrote more to disk than one run may (`[processing] disk_limit`), and was stopped.
    WroteTooMuch {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The operation does not take the file's format.
    WrongFormat {
        /// The operation's name.
        operation: String,
        /// The formats it takes (detection labels).
        accepts: Vec<String>,
        /// What the content is, for people ("a PNG image").
        found: String,
        /// Its detection label (`png`).
        found_label: String,
    },
    /// The operation needs a program this bot has not configured (OCR without
    /// `[processing.external.ocr]`).
    NotSetUp {
        /// The operation's name.
        operation: String,
    },
    /// Telegram no longer has the file (wrong or expired file_id, or refused as too big).
    FileUnavailable,
    /// Transient failures kept happening.
    GaveUp {
        /// Attempts made.
        attempts: u32,
    },
    /// The downloaded source kept going missing or changing on this machine's disk before it
    /// could be processed.
    SourceKeptVanishing {
        /// How often it was lost.
        times: u32,
    },
    /// Processing needs more memory than one run may have (its memory limit, or the whole
    /// memory budget).
    NeedsTooMuchMemory {
        /// The limit it reached, in bytes.
        limit: u64,
    },
    /// Processing did not finish within the time limit.
    TookTooLong {
        /// The limit.
        limit: std::time::Duration,
    },
    /// A compressed stream inflates past the limit (a decompression bomb, or just too big).
    InflatesTooMuch {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The operation's process crashed on this file.
    Crashed,
    /// An external tool could not process the file.
    ToolFailed {
        /// The operation's name.
        tool: String,
    },
    /// The person cancelled it (`/cancel N`), or an admin did (`docket cancel N`).
    Cancelled,
    /// A page list names a page the document does not have.
    NoSuchPage {
        /// The first missing page listed.
        page: u32,
        /// The pages the document has.
        pages: u32,
    },
    /// `decrypt` was given a password that does not open the document.
    WrongPassword,
    /// `shrink` to a size: even its smallest settings give more.
    CannotShrinkTo {
        /// The target, in bytes.
        target: u64,
        /// The smallest result it made, in bytes.
        smallest: u64,
    },
    /// `split` by size: one page alone is over the size every part must fit in.
    PageTooBigForParts {
        /// The page, from 1.
        page: u32,
        /// Its size alone, in bytes.
        size: u64,
        /// The part size, in bytes.
        target: u64,
    },
    /// `topdf` of an office document, on a host without LibreOffice.
    OfficeUnavailable,
    /// A `/merge` nobody finished got no file before its idle time ran out.
    NothingToMerge,
    /// The person asked for an album's files each on its own: each became a ticket of its own,
    /// and the album's ended without a result.
    TakenApart,
    /// One file of a ticket of several (an album) failed for `reason`: the whole ticket fails,
    /// naming it, and nothing half-made is sent.
    InPart {
        /// Its place in the album, from 1.
        number: u32,
        /// How many files the album has.
        count: u32,
        /// Its declared name.
        name: String,
        /// Why it failed.
        reason: Box<FailureReason>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_happy_path_is_legal() {
        let mut s = JobState::Accepted;
        for e in [JobEvent::Fetched, JobEvent::ProcessingStarted, JobEvent::Completed, JobEvent::Expired] {
            s = next(s, e).expect("happy path");
        }
        assert_eq!(s, JobState::Expired);
    }

    #[test]
    fn terminal_states_do_not_move_on_their_own() {
        for from in [JobState::Ready, JobState::Failed, JobState::Expired] {
            for e in [JobEvent::Fetched, JobEvent::ProcessingStarted, JobEvent::Completed, JobEvent::Failed] {
                assert!(next(from, e).is_err(), "{from} must refuse {e:?}");
            }
        }
    }

    #[test]
    fn a_download_cannot_skip_to_ready() {
        assert_eq!(
            next(JobState::Accepted, JobEvent::Completed),
            Err(TransitionError { from: JobState::Accepted, event: JobEvent::Completed })
        );
        assert!(next(JobState::Fetched, JobEvent::Completed).is_err());
    }

    #[test]
    fn lost_sources_and_resubmissions_go_back_to_accepted() {
        assert_eq!(next(JobState::Fetched, JobEvent::SourceLost), Ok(JobState::Accepted));
        assert_eq!(next(JobState::Processing, JobEvent::SourceLost), Ok(JobState::Accepted));
        assert_eq!(next(JobState::Expired, JobEvent::Resubmitted), Ok(JobState::Accepted));
        assert!(next(JobState::Ready, JobEvent::Resubmitted).is_err());
    }

    #[test]
    fn retrying_keeps_a_download_accepted_and_returns_processing_to_fetched() {
        assert_eq!(next(JobState::Accepted, JobEvent::RetryLater), Ok(JobState::Accepted));
        assert_eq!(next(JobState::Processing, JobEvent::RetryLater), Ok(JobState::Fetched));
        assert!(next(JobState::Ready, JobEvent::RetryLater).is_err());
    }

    #[test]
    fn only_unfinished_jobs_can_be_cancelled_and_only_failed_ones_retried() {
        for from in [JobState::Accepted, JobState::Fetched, JobState::Processing] {
            assert_eq!(next(from, JobEvent::Cancelled), Ok(JobState::Failed), "{from}");
            assert!(next(from, JobEvent::Retried).is_err(), "{from}");
        }
        for from in [JobState::Ready, JobState::Failed, JobState::Expired] {
            assert!(next(from, JobEvent::Cancelled).is_err(), "{from}");
        }
        assert_eq!(next(JobState::Failed, JobEvent::Retried), Ok(JobState::Accepted));
        assert!(next(JobState::Expired, JobEvent::Retried).is_err());
        assert!(next(JobState::Ready, JobEvent::Retried).is_err());
    }

    #[test]
    fn a_lost_host_sends_its_jobs_back_to_be_downloaded_but_never_an_ended_one() {
        for from in [JobState::Fetched, JobState::Processing, JobState::Ready] {
            assert_eq!(next(from, JobEvent::HostLost), Ok(JobState::Accepted), "{from}");
        }
        for from in [JobState::Accepted, JobState::Failed, JobState::Expired] {
            assert!(next(from, JobEvent::HostLost).is_err(), "{from}");
        }
    }

    #[test]
    fn states_round_trip_through_their_names() {
        for s in JobState::ALL {
            assert_eq!(s.as_str().parse::<JobState>(), Ok(s));
        }
        assert!("done".parse::<JobState>().is_err());
    }

    #[test]
    fn tickets_parse_with_or_without_hash() {
        assert_eq!("#4812".parse::<Ticket>(), Ok(Ticket(4812)));
        assert_eq!(" 7 ".parse::<Ticket>(), Ok(Ticket(7)));
        assert!("abc".parse::<Ticket>().is_err());
        assert_eq!(Ticket(4812).to_string(), "#4812");
    }
}
