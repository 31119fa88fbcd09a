//! What a stage reports when it did not finish its work, by what the pipeline does about it, with
//! what happened for admins and the error that caused it.

use std::error::Error;
use std::fmt;
use std::time::Duration;

use crate::domain::FailureReason;

/// What a stage reports when it did not finish its work.
#[derive(Debug)]
pub enum StageError {
    /// Worth another attempt later (network, 5xx, a cut download): the attempt counts, and the
    /// job backs off.
    Retry {
        /// What happened, for admins.
        detail: Detail,
    },
    /// This host or the database cannot do the work now (the data folder's disk is full, the
    /// database is away, full or read-only): not the document's doing, so the attempt is given
    /// back, and the job waits longer than after a [`Retry`](Self::Retry).
    Unavailable {
        /// What happened, for admins.
        detail: Detail,
    },
    /// Telegram's flood control (429): wait exactly `after`. Not the job's fault, so the attempt
    /// is given back.
    FloodWait {
        /// Telegram's `retry_after`.
        after: Duration,
        /// What happened, for admins.
        detail: Detail,
    },
    /// Will fail the same way again: end the job and tell the person why.
    Fail {
        /// The reason, in terms the person can act on.
        reason: FailureReason,
        /// What happened, for admins.
        detail: Detail,
    },
    /// The recorded source is missing or damaged: download it again.
    SourceLost {
        /// What was wrong.
        detail: Detail,
    },
}

impl StageError {
    /// A transient failure with backoff.
    pub fn retry(detail: impl Into<Detail>) -> Self {
        Self::Retry { detail: detail.into() }
    }

    /// A permanent failure.
    pub fn fail(reason: FailureReason, detail: impl Into<Detail>) -> Self {
        Self::Fail { reason, detail: detail.into() }
    }

    /// A file operation that failed while `what`: [`Unavailable`](Self::Unavailable) when the
    /// disk is full (or the quota used up), a [`Retry`](Self::Retry) otherwise. A full disk is
    /// not the document's doing: the janitor frees space, and the job waits without spending
    /// attempts.
    pub fn io(what: &str, e: std::io::Error) -> Self {
        let kind = e.kind();
        let detail = Detail::caused_by(what, e);
        match kind {
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
                // Counted where it is found: free space may look fine at the next look (the
                // partial file is gone by then), and this is how an admin sees it happened.
                metrics::counter!("docket_disk_full_errors_total").increment(1);
                Self::Unavailable { detail }
            }
            _ => Self::Retry { detail },
        }
    }

    /// A store call that failed while `what`: [`Unavailable`](Self::Unavailable) when the
    /// database cannot do it now ([`StoreError::is_transient`](crate::store::StoreError::is_transient)),
    /// a [`Retry`](Self::Retry) otherwise.
    pub fn store(what: &str, e: crate::store::StoreError) -> Self {
        let transient = e.is_transient();
        let detail = Detail::caused_by(what, e);
        if transient { Self::Unavailable { detail } } else { Self::Retry { detail } }
    }
}

impl StageError {
    /// What happened, for admins.
    pub fn detail(&self) -> &Detail {
        match self {
            Self::Retry { detail }
            | Self::Unavailable { detail }
            | Self::FloodWait { detail, .. }
            | Self::Fail { detail, .. }
            | Self::SourceLost { detail } => detail,
        }
    }
}

impl fmt::Display for StageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.detail())
    }
}

/// The stage's error reads as its detail; the source is the detail's cause, so a report of the
/// chain does not repeat the text.
impl Error for StageError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.detail().source()
    }
}

/// What happened, for admins: the text they read (stored with the job, logged) and, where an
/// error caused it, that error, kept as the [`source`](Error::source) of the stage's error.
pub struct Detail(Box<DetailParts>);

/// A [`Detail`]'s parts, behind one pointer so a stage's error stays small.
struct DetailParts {
    text: String,
    cause: Option<Box<dyn Error + Send + Sync>>,
}

impl Detail {
    /// `what` was being done when `cause` happened: reads "`what`: `cause`".
    pub fn caused_by(what: &str, cause: impl Error + Send + Sync + 'static) -> Self {
        Self(Box::new(DetailParts { text: format!("{what}: {cause}"), cause: Some(Box::new(cause)) }))
    }

    /// The text admins read.
    pub fn as_str(&self) -> &str {
        &self.0.text
    }
}

impl std::ops::Deref for Detail {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0.text
    }
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.text)
    }
}

impl fmt::Debug for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0.text, f)
    }
}

impl Error for Detail {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.cause.as_deref().map(|cause| cause as &(dyn Error + 'static))
    }
}

impl From<String> for Detail {
    fn from(text: String) -> Self {
        Self(Box::new(DetailParts { text, cause: None }))
    }
}

impl From<&str> for Detail {
    fn from(text: &str) -> Self {
        Self(Box::new(DetailParts { text: text.to_owned(), cause: None }))
    }
}

impl From<Detail> for String {
    fn from(detail: Detail) -> Self {
        detail.0.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stage_error_reads_as_its_detail_and_keeps_the_error_behind_it() {
        let full = StageError::io("writing the download", std::io::Error::from(std::io::ErrorKind::StorageFull));
        assert!(matches!(full, StageError::Unavailable { .. }), "{full:?}");
        assert!(full.to_string().starts_with("writing the download: "), "{full}");
        let cause = full.source().and_then(|e| e.downcast_ref::<std::io::Error>()).expect("the io error");
        assert_eq!(cause.kind(), std::io::ErrorKind::StorageFull);
        let plain = StageError::retry("5xx");
        assert_eq!((plain.to_string().as_str(), plain.source().is_none()), ("5xx", true));
    }
}
