//! What a stage's outcome means for its job, decided without I/O: retry (and when, and whether
//! the attempt counts), download again, or fail (and with which reason); and which messages a
//! completion or a failure queues. [`super`] carries the decision out against the store, the
//! spool and the budget.

use std::time::Duration;

use super::StageError;
use crate::domain::retry::backoff;
use crate::domain::{FailureReason, JobEvent, MessageKind, Timestamp};
use crate::domain::{IdempotencyKey, Job, NewMessage, ResultFile};
use crate::store::{AttemptRule, Completion, Release};
use crate::texts::{self, Lang, Progress};

/// The longest a failing job backs off between attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(600);

/// How many doublings longer than after a failed attempt a job waits when this host or the
/// database could not do its work ([`StageError::Unavailable`]): 8 × `retry_base` (16 s by
/// default) at least.
const UNAVAILABLE_STEPS: u32 = 3;

/// The limits the decisions follow.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// Attempts at one stage before a job that keeps failing gives up.
    pub max_attempts: u32,
    /// Lost sources before a job fails instead of being downloaded again.
    pub max_source_losses: u32,
    /// First retry delay; doubles per attempt.
    pub retry_base: Duration,
}

/// Whether a file a stage made is recorded on its job, once the write that records it has
/// answered (`mark_fetched`, `complete_job`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The job points at the file: it is the job's now.
    Yes,
    /// The job does not point at it (the lease was lost first): nobody's, to be deleted.
    No,
    /// The write failed and the job could not be read again: the file stays, and the janitor,
    /// which judges files against the jobs, decides once the store answers.
    Unknown,
}

impl Recorded {
    /// What a failed write means for the file at `path`. An error does not say the write was
    /// lost: the commit may have gone through with only its answer lost. So the job, read again
    /// after the error (`reread`: its state and the path it holds for the stage; `None` when it
    /// could not be read, `Some(None)` when there is no such job), decides: deleting a file the
    /// job points at would leave a `ready` job with no result.
    pub fn after_error(
        reread: Option<Option<(crate::domain::JobState, Option<&str>)>>,
        state: crate::domain::JobState,
        path: &str,
    ) -> Self {
        match reread {
            None => Self::Unknown,
            Some(Some((found, recorded))) if found == state && recorded == Some(path) => Self::Yes,
            Some(_) => Self::No,
        }
    }
}

/// What to do with a job whose stage did not finish.
#[derive(Debug, Clone)]
pub enum AfterError {
    /// Give the job back to its stage, due again at `release.not_before`.
    Retry {
        /// The release to write.
        release: Release,
        /// How long until it is due.
        wait: Duration,
    },
    /// The source is gone or changed: back to download.
    Redownload {
        /// The release to write.
        release: Release,
        /// How often the source has now been lost.
        losses: u32,
    },
    /// End the job.
    Fail {
        /// What the person is told.
        reason: FailureReason,
        /// What admins read.
        detail: String,
    },
}

/// Decides what follows `err` for `job` at `now`; `jitter` ∈ [0, 1] spreads retries that would
/// otherwise come back together.
pub fn after_error(job: &Job, err: StageError, rules: &Rules, now: Timestamp, jitter: f64) -> AfterError {
    let release = |event, wait: Duration, detail: &str, attempts| Release {
        from: job.state,
        event,
        not_before: now.plus(wait),
        detail: Some(detail.to_owned()),
        attempts,
    };
    match err {
        StageError::Fail { reason, detail } => AfterError::Fail { reason, detail: detail.into() },
        StageError::FloodWait { after, detail } => AfterError::Retry {
            // Telegram's wait, exactly; not the job's fault, so not an attempt.
            release: release(JobEvent::RetryLater, after, &detail, AttemptRule::Refunded),
            wait: after,
        },
        StageError::Retry { detail } => {
            let attempts = u32::try_from(job.attempts).unwrap_or(u32::MAX);
            if attempts >= rules.max_attempts {
                return AfterError::Fail { reason: FailureReason::GaveUp { attempts }, detail: detail.into() };
            }
            let wait = backoff(attempts, rules.retry_base, MAX_BACKOFF, jitter);
            AfterError::Retry { release: release(JobEvent::RetryLater, wait, &detail, AttemptRule::Spent), wait }
        }
        StageError::Unavailable { detail } => {
            // Not the document's doing: the attempt is given back, so a long outage (a full
            // disk, a database failing over) cannot use up the job's attempts. The wait is that
            // of a few failures more than the job has had, since a retry soon would find the
            // same.
            let attempts = u32::try_from(job.attempts).unwrap_or(u32::MAX);
            let wait = backoff(attempts.saturating_add(UNAVAILABLE_STEPS), rules.retry_base, MAX_BACKOFF, jitter);
            AfterError::Retry { release: release(JobEvent::RetryLater, wait, &detail, AttemptRule::Refunded), wait }
        }
        StageError::SourceLost { detail } => {
            let losses = u32::try_from(job.source_losses).unwrap_or(u32::MAX).saturating_add(1);
            if losses >= rules.max_source_losses {
                return AfterError::Fail {
                    reason: FailureReason::SourceKeptVanishing { times: losses },
                    detail: format!("{detail} (the source was lost {losses} times)"),
                };
            }
            // A new download is a new stage: its attempts start afresh.
            AfterError::Redownload {
                release: release(JobEvent::SourceLost, Duration::ZERO, &detail, AttemptRule::Restarted),
                losses,
            }
        }
    }
}

/// The places in the download queue at which a waiting job's status message shows its
/// position: 1, 2, 3, 5, 8, 13, … (each the sum of the two before), so a long queue costs each
/// chat a few edits, more often as its turn nears. The last entry bounds how far back the
/// queue is read.
pub const REPORTED_POSITIONS: [u64; 10] = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89];

/// Whether a job `position`th in line has its position shown.
pub fn reports_position(position: u64) -> bool {
    REPORTED_POSITIONS.contains(&position)
}

/// The messages a completion queues with its commit: the result document (for an operation whose
/// result is a message, `message`, as a message), with `note` when the declared name or type
/// disagreed with the content, and the status message's last edit (ready, kept until…).
pub fn completion_messages(
    lang: Lang,
    job: &Job,
    done: &Completion,
    note: Option<&str>,
    message: Option<&str>,
) -> Vec<NewMessage> {
    let mut finished = job.clone();
    finished.result = Some(ResultFile {
        path: Some(done.result_path.clone()),
        size: done.result_size,
        expires_at: done.expires_at,
        telegram_file_id: None,
        parts: done.parts,
    });
    let mut body = match message {
        Some(message) => message.to_owned(),
        None => texts::ready_caption(lang, &finished),
    };
    if let Some(note) = note {
        body = format!("{body}\n({note}.)");
    }
    let mut messages = match done.parts {
        None => vec![NewMessage::about_job(
            job,
            IdempotencyKey::result(job.ticket, job.submission.update_id),
            if message.is_some() { MessageKind::Reply } else { MessageKind::Result },
            body,
        )],
        Some(count) => result_parts(lang, job, job.submission.update_id, count, &body, IdempotencyKey::result_part),
    };
    messages.push(progress_edit(lang, &finished, &Progress::Ready { until: done.expires_at }));
    messages
}

/// One result message per part of a result sent in parts, each captioned with its place
/// ("part 2 of 3") and `caption`, keyed by `key` of the update that asked and the part.
pub fn result_parts(
    lang: Lang,
    job: &Job,
    update: crate::domain::UpdateId,
    count: u32,
    caption: &str,
    key: impl Fn(crate::domain::Ticket, crate::domain::UpdateId, u32) -> IdempotencyKey,
) -> Vec<NewMessage> {
    (1..=count)
        .map(|part| NewMessage {
            part: Some(part),
            ..NewMessage::about_job(
                job,
                key(job.ticket, update, part),
                MessageKind::Result,
                texts::result_part_caption(lang, part, count, caption),
            )
        })
        .collect()
}

/// The buttons under a ready run's status message: the other operations without arguments that
/// take the document's detected `format`, each starting that run of the ticket with a tap (`ocr`
/// only where it is configured).
pub fn other_operations(
    job: &Job,
    format: &str,
    tools: &[crate::operations::ExternalTool],
) -> Vec<crate::domain::Button> {
    crate::domain::Operation::MODES
        .iter()
        .filter(|name| **name != job.submission.operation.name())
        .filter_map(|name| crate::domain::Operation::mode(name))
        .filter(|operation| match operation {
            crate::domain::Operation::Ocr { .. } => {
                tools.iter().any(|t| t.name == "ocr" && t.accepts.iter().any(|a| a == format))
            }
            other => other.accepts().contains(&format),
        })
        .map(|operation| crate::domain::Button::run(job.ticket_number(), operation.name()))
        .collect()
}

/// The reason a person reads for `reason`, and the messages a failure queues with its commit:
/// the failure notice and the status message's last edit.
pub fn failure_messages(lang: Lang, job: &Job, reason: &FailureReason) -> (String, [NewMessage; 2]) {
    let reason_text = texts::failure_reason(lang, job.name(), reason);
    let notice = NewMessage {
        buttons: ways_to_fit(lang, job, reason),
        ..NewMessage::about_job(
            job,
            IdempotencyKey::failure(job.ticket, job.submission.update_id),
            MessageKind::Failure,
            texts::failed_notice(lang, texts::run_label(job), &reason_text),
        )
    };
    let status = progress_edit(lang, job, &Progress::Failed { reason: reason_text.clone() });
    (reason_text, [notice, status])
}

/// For a result over the upload limit, made from a PDF: the buttons that run the ticket again so
/// that it fits (`shrink` to the limit, `split` into parts under it). None for other failures:
/// the source of an operation that takes other formats may not be a PDF, which both need.
fn ways_to_fit(lang: Lang, job: &Job, reason: &FailureReason) -> Vec<crate::domain::Button> {
    let (FailureReason::ResultTooBig { limit, .. } | FailureReason::ResultGrewTooBig { limit, .. }) = reason else {
        return Vec::new();
    };
    if job.submission.operation.accepts() != ["pdf"] {
        return Vec::new();
    }
    let target = crate::domain::SizeTarget::bytes(*limit);
    let ticket = job.ticket_number();
    vec![
        crate::domain::Button::run_with(ticket, &format!("shrink {target}"), texts::shrink_to_fit(lang, *limit)),
        crate::domain::Button::run_with(ticket, &format!("split {target}"), texts::split_under(lang, *limit)),
    ]
}

/// The edit of `job`'s status message to `step`: one outbox row per job, coalesced.
pub fn progress_edit(lang: Lang, job: &Job, step: &Progress) -> NewMessage {
    NewMessage {
        idempotency_key: IdempotencyKey::progress(job.ticket),
        job: Some(job.ticket),
        chat: job.submission.chat,
        kind: MessageKind::Progress,
        body: texts::progress(lang, job, step),
        reply_to_message_id: None,
        buttons: Vec::new(),
        part: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{ChatRef, JobState, MessageId, SourceFile, Submission, Ticket, UpdateId};

    #[test]
    fn a_file_is_deleted_only_when_the_job_surely_does_not_point_at_it() {
        let path = "/data/results/12/5-ab.pdf";
        let after = |reread| Recorded::after_error(reread, JobState::Ready, path);
        // The commit went through, its answer was lost: the file is the job's.
        assert_eq!(after(Some(Some((JobState::Ready, Some(path))))), Recorded::Yes);
        // It did not: the job is still processing, another result is recorded, or no such job.
        assert_eq!(after(Some(Some((JobState::Processing, None)))), Recorded::No);
        assert_eq!(after(Some(Some((JobState::Ready, Some("/data/results/12/7-cd.pdf"))))), Recorded::No);
        assert_eq!(after(Some(None)), Recorded::No);
        // Nobody can tell yet: keep it.
        assert_eq!(after(None), Recorded::Unknown);
    }

    #[test]
    fn queue_positions_are_shown_on_a_geometric_schedule() {
        let shown: Vec<u64> = (1..=100).filter(|p| reports_position(*p)).collect();
        assert_eq!(shown, REPORTED_POSITIONS);
        for w in REPORTED_POSITIONS.windows(3) {
            assert_eq!(w[2], w[0] + w[1], "{w:?}");
        }
        assert!(!reports_position(4) && !reports_position(0) && !reports_position(90));
    }

    const NOW: Timestamp = Timestamp::from_millis(1_800_000_000_000);
    const RULES: Rules = Rules { max_attempts: 3, max_source_losses: 3, retry_base: Duration::from_secs(2) };

    fn job(state: JobState, attempts: i64, source_losses: i64) -> Job {
        Job {
            ticket: Ticket(12),
            submission: Submission {
                update_id: UpdateId(5),
                chat: ChatRef(42),
                message_id: MessageId(7),
                declared_mime: None,
                declared_size: Some(1_000),
                ..Job::accepted_for_tests(12, "report.pdf", Some(1_000), NOW).submission
            },
            state,
            source: Some(SourceFile {
                size: 1_000,
                sha256: "ab".repeat(32),
                path: Some("/data/downloads/12-1-x.source".into()),
                format: None,
            }),
            attempts,
            source_losses,
            ..Job::accepted_for_tests(12, "report.pdf", Some(1_000), NOW)
        }
    }

    #[test]
    fn a_passing_error_retries_with_backoff_and_counts_the_attempt() {
        let AfterError::Retry { release, wait } =
            after_error(&job(JobState::Accepted, 2, 0), StageError::retry("5xx"), &RULES, NOW, 1.0)
        else {
            panic!("not a retry")
        };
        assert_eq!(wait, Duration::from_secs(4), "base · 2^(attempt-1)");
        assert_eq!(
            (release.from, release.event, release.attempts),
            (JobState::Accepted, JobEvent::RetryLater, AttemptRule::Spent)
        );
        assert_eq!((release.not_before, release.detail.as_deref()), (NOW.plus(wait), Some("5xx")));
    }

    #[test]
    fn the_last_attempt_gives_up_with_the_count() {
        match after_error(&job(JobState::Processing, 3, 0), StageError::retry("disk"), &RULES, NOW, 0.5) {
            AfterError::Fail { reason: FailureReason::GaveUp { attempts: 3 }, detail } => assert_eq!(detail, "disk"),
            other => panic!("{other:?}"),
        }
    }

    /// Issue 29, point 7: a full disk or a database away is not the document's doing.
    #[test]
    fn a_host_or_database_that_cannot_work_now_spends_no_attempt_even_on_the_last_one() {
        let full = StageError::io("writing the download", std::io::Error::from(std::io::ErrorKind::StorageFull));
        let away = StageError::Unavailable { detail: "completing a job: connection refused".into() };
        for err in [full, away] {
            let AfterError::Retry { release, wait } =
                after_error(&job(JobState::Processing, 3, 0), err, &RULES, NOW, 1.0)
            else {
                panic!("not a retry")
            };
            assert_eq!((release.event, release.attempts), (JobEvent::RetryLater, AttemptRule::Refunded));
            assert_eq!(wait, Duration::from_secs(2 * 32), "longer than after a failed attempt (base · 2^(3+3-1))");
        }
        // Any other file error still counts.
        let other = StageError::io("reading", std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert!(matches!(other, StageError::Retry { .. }), "{other:?}");
    }

    #[test]
    fn a_flood_wait_waits_exactly_and_spends_no_attempt_even_on_the_last_one() {
        let err = StageError::FloodWait { after: Duration::from_secs(7), detail: "429".into() };
        let AfterError::Retry { release, wait } = after_error(&job(JobState::Accepted, 3, 0), err, &RULES, NOW, 0.0)
        else {
            panic!("not a retry")
        };
        assert_eq!((wait, release.attempts), (Duration::from_secs(7), AttemptRule::Refunded));
        assert_eq!(release.not_before, NOW.plus(Duration::from_secs(7)));
    }

    #[test]
    fn a_permanent_error_fails_with_its_reason() {
        let err = StageError::fail(FailureReason::Encrypted, "needs a password");
        match after_error(&job(JobState::Processing, 1, 0), err, &RULES, NOW, 0.0) {
            AfterError::Fail { reason: FailureReason::Encrypted, detail } => assert_eq!(detail, "needs a password"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_lost_source_downloads_again_until_it_was_lost_too_often() {
        let lost = || StageError::SourceLost { detail: "sha256 differs".into() };
        let AfterError::Redownload { release, losses } =
            after_error(&job(JobState::Processing, 2, 1), lost(), &RULES, NOW, 0.0)
        else {
            panic!("not a redownload")
        };
        assert_eq!(losses, 2);
        assert_eq!(
            (release.event, release.attempts, release.not_before),
            (JobEvent::SourceLost, AttemptRule::Restarted, NOW)
        );
        match after_error(&job(JobState::Processing, 2, 2), lost(), &RULES, NOW, 0.0) {
            AfterError::Fail { reason: FailureReason::SourceKeptVanishing { times: 3 }, detail } => {
                assert_eq!(detail, "sha256 differs (the source was lost 3 times)");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_completion_queues_the_result_and_the_last_status_edit() {
        let done = Completion {
            result_path: "/data/results/12/3-x.pdf".into(),
            result_size: 600,
            detected_format: "pdf".into(),
            expires_at: NOW.plus(Duration::from_secs(86_400)),
            parts: None,
        };
        let messages = completion_messages(Lang::ENGLISH, &job(JobState::Processing, 1, 0), &done, None, None);
        let [result, status] = messages.as_slice() else { panic!("{messages:?}") };
        assert_eq!((result.idempotency_key.as_str(), result.kind), ("job:12:u5:result", MessageKind::Result));
        assert_eq!((result.chat, result.reply_to_message_id), (ChatRef(42), Some(MessageId(7))));
        assert!(result.body.starts_with("#12 ready: report.pdf, 1.0 kB → 600 B."), "{}", result.body);
        assert_eq!((status.idempotency_key.as_str(), status.kind), ("job:12:progress", MessageKind::Progress));
        assert!(status.body.contains("Ready"), "{}", status.body);
    }

    #[test]
    fn a_result_in_parts_queues_one_message_per_part_then_the_status_edit() {
        let done = Completion {
            result_path: "/data/results/12/3-x.zip".into(),
            result_size: 600,
            detected_format: "pdf".into(),
            expires_at: NOW.plus(Duration::from_secs(86_400)),
            parts: Some(3),
        };
        let messages = completion_messages(Lang::ENGLISH, &job(JobState::Processing, 1, 0), &done, None, None);
        let shown: Vec<(&str, MessageKind, Option<u32>)> =
            messages.iter().map(|m| (m.idempotency_key.as_str(), m.kind, m.part)).collect();
        assert_eq!(
            shown,
            [
                ("job:12:u5:result:part:1", MessageKind::Result, Some(1)),
                ("job:12:u5:result:part:2", MessageKind::Result, Some(2)),
                ("job:12:u5:result:part:3", MessageKind::Result, Some(3)),
                ("job:12:progress", MessageKind::Progress, None),
            ]
        );
        assert!(messages[1].body.starts_with("Part 2 of 3. #12 ready"), "{}", messages[1].body);
    }

    #[test]
    fn a_result_too_big_offers_to_shrink_it_to_fit_or_split_it_under_the_limit() {
        let too_big = FailureReason::ResultTooBig { size: 60_000_000, limit: 50_000_000, operation: "optimize".into() };
        let (_, [notice, status]) = failure_messages(Lang::ENGLISH, &job(JobState::Processing, 1, 0), &too_big);
        let buttons: Vec<(&str, &str)> = notice.buttons.iter().map(|b| (b.label.as_str(), b.data.as_str())).collect();
        assert_eq!(
            buttons,
            [("Shrink to fit 50.0 MB", "run:12:shrink 50MB"), ("Split into parts under 50.0 MB", "run:12:split 50MB")]
        );
        assert!(status.buttons.is_empty());
        let (_, [notice, _]) =
            failure_messages(Lang::ENGLISH, &job(JobState::Processing, 1, 0), &FailureReason::Unreadable);
        assert!(notice.buttons.is_empty(), "only a result too big can be made to fit");
    }

    #[test]
    fn a_failure_tells_the_reason_in_the_notice_and_the_status() {
        let (reason, [notice, status]) =
            failure_messages(Lang::ENGLISH, &job(JobState::Accepted, 1, 0), &FailureReason::Unreadable);
        assert_eq!(reason, "report.pdf is damaged and cannot be read as a PDF");
        assert_eq!((notice.idempotency_key.as_str(), notice.kind), ("job:12:u5:failure", MessageKind::Failure));
        assert!(notice.body.contains(&reason) && status.body.contains(&reason));
    }
}
