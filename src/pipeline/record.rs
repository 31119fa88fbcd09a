//! A stage's outcome made a state: what a finished stage produced is recorded, what an error
//! means ([`outcome::after_error`]) is carried out, and only after the commit are the files it
//! frees deleted and its budget given back.

use tracing::{info, warn};

use super::download::Fetched;
use super::outcome::{self, AfterError, Recorded};
use super::process::Output;
use super::progress::{chat_lang, report};
use super::{PipelineDeps, Produced, StageError};
use crate::domain::{FailureReason, Job, JobState, Lease, Ticket, Timestamp};
use crate::store::{Completion, StoreResult};
use crate::texts::Progress;

/// Records what a stage produced: a verified download (`fetched`) or a result (`ready`).
pub(super) async fn advance(deps: &PipelineDeps, job: &Job, lease: &Lease, produced: Produced) {
    let now = deps.clock.now();
    match produced {
        Produced::Fetched(f) => fetched(deps, job, lease, f, now).await,
        Produced::Result(out) => ready(deps, job, lease, out, now).await,
    }
}

/// `fetched`: the download's size and hash recorded, its budget place resized to the real size
/// and processing woken; a download that could not be recorded is discarded.
async fn fetched(deps: &PipelineDeps, job: &Job, lease: &Lease, f: Fetched, now: Timestamp) {
    let answer = deps.store.mark_fetched(job.ticket, lease, &f.path, f.size as i64, &f.sha256, now).await;
    match recorded(deps, job.ticket, answer, JobState::Fetched, &f.path, Job::source_path).await {
        Recorded::Yes => {
            info!(size_bytes = f.size, "downloaded and verified");
            // The real size is known now: a file Telegram did not size gives back the
            // room it was assumed to need.
            deps.budget.resize(job.ticket, f.size);
            metrics::counter!("docket_downloads_total").increment(1);
            metrics::counter!("docket_download_bytes_total").increment(f.size);
            deps.wake.processing.notify_waiters();
            report(deps, job, &Progress::WaitingToProcess, now).await;
        }
        Recorded::No => {
            warn!("the download was not recorded (the lease was lost); discarding it");
            remove_quietly(deps, &f.path);
            deps.budget.release_claim(job.ticket, lease.token);
        }
        Recorded::Unknown => deps.budget.release_claim(job.ticket, lease.token),
    }
}

/// `ready`: the result recorded with its messages (the ready caption, the buttons for other
/// operations) in one transaction, and the source and intermediates freed; a result that could
/// not be recorded is discarded.
async fn ready(deps: &PipelineDeps, job: &Job, lease: &Lease, out: Output, now: Timestamp) {
    // The run may have switched to the operation that fits the content.
    let mut job = job.clone();
    job.submission.operation = out.operation.clone();
    let job = &job;
    let done = Completion {
        result_path: out.path.clone(),
        result_size: out.size as i64,
        detected_format: out.format.clone(),
        expires_at: now.plus(deps.settings.get().result_ttl),
        parts: out.parts,
    };
    let mut messages = outcome::completion_messages(
        chat_lang(deps, job).await,
        job,
        &done,
        out.note.as_deref(),
        out.message.as_deref(),
    );
    if let Some(status) = messages.last_mut() {
        status.buttons = outcome::other_operations(job, &out.format, &deps.settings.get().tools);
    }
    let answer = deps.store.complete_job(job.ticket, lease, &done, &messages, now).await;
    match recorded(deps, job.ticket, answer, JobState::Ready, &out.path, Job::result_path).await {
        Recorded::Yes => {
            info!(size_bytes = out.size, source_size_bytes = job.source.as_ref().map(|s| s.size), "ready");
            metrics::counter!("docket_jobs_ready_total").increment(1);
            deps.wake.outbox.notify_waiters();
            // Committed: the source and intermediates are no longer anyone's.
            release_files(deps, job);
        }
        Recorded::No => {
            warn!("the result was not recorded (the lease was lost); discarding it");
            remove_quietly(deps, &out.path);
        }
        Recorded::Unknown => {}
    }
}

pub(super) async fn handle_error(deps: &PipelineDeps, job: &Job, lease: &Lease, err: StageError) {
    let now = deps.clock.now();
    let rules = outcome::Rules {
        max_attempts: deps.settings.get().max_attempts,
        max_source_losses: deps.settings.get().max_source_losses,
        retry_base: deps.settings.get().retry_base,
    };
    match outcome::after_error(job, err, &rules, now, rand::random::<f64>()) {
        AfterError::Fail { reason, detail } => {
            fail(deps, job, Some(lease), reason, detail).await;
        }
        AfterError::Retry { release, wait } => {
            let detail = release.detail.clone().unwrap_or_default();
            match deps.store.release_job(job.ticket, lease, &release, now).await {
                Ok(true) => {
                    warn!(error = %detail, retry_in_ms = wait.as_millis() as u64, "attempt failed; will retry");
                    metrics::counter!("docket_job_retries_total").increment(1);
                    report(deps, job, &Progress::WaitingToRetry, now).await;
                }
                outcome => {
                    warn!(outcome = ?outcome.map_err(|e| e.to_string()), error = %detail, "attempt failed and the job could not be released")
                }
            }
            if job.state == crate::domain::JobState::Accepted {
                // A download that will be tried again has no files until then.
                deps.budget.release_claim(job.ticket, lease.token);
            }
        }
        AfterError::Redownload { release, losses } => {
            let detail = release.detail.clone().unwrap_or_default();
            match deps.store.release_job(job.ticket, lease, &release, now).await {
                Ok(true) => {
                    warn!(error = %detail, losses, "the source is gone; downloading it again");
                    if let Some(source) = job.source_path() {
                        remove_quietly(deps, source);
                    }
                    deps.budget.release(job.ticket);
                    deps.wake.downloads.notify_waiters();
                }
                outcome => {
                    warn!(outcome = ?outcome.map_err(|e| e.to_string()), "could not send the job back to download")
                }
            }
        }
    }
}

/// Ends `job` as failed with `reason`, told to its chat, and removes its files; `lease` is the
/// holder's (none for a job no worker holds). Returns whether the failure was recorded.
pub(super) async fn fail(
    deps: &PipelineDeps,
    job: &Job,
    lease: Option<&Lease>,
    reason: FailureReason,
    detail: String,
) -> bool {
    let now = deps.clock.now();
    let (reason_text, messages) = outcome::failure_messages(chat_lang(deps, job).await, job, &reason);
    match deps.store.fail_job(job.ticket, job.state, lease, &reason_text, &detail, &messages, now).await {
        Ok(true) => {
            warn!(ticket = %job.ticket, reason = ?reason, error = %detail, "job failed");
            metrics::counter!("docket_jobs_failed_total").increment(1);
            deps.wake.outbox.notify_waiters();
            release_files(deps, job);
            true
        }
        outcome => {
            warn!(outcome = ?outcome.map_err(|e| e.to_string()), "could not record the failure (someone else moved the job?)");
            if let Some(lease) = lease
                && job.state == crate::domain::JobState::Accepted
            {
                deps.budget.release_claim(job.ticket, lease.token);
            }
            false
        }
    }
}

/// Removes the source and intermediates of a job that has ended (its end committed), and with
/// them its place in the byte budget.
fn release_files(deps: &PipelineDeps, job: &Job) {
    if let Some(source) = job.source_path() {
        remove_quietly(deps, source);
    }
    if let Err(e) = deps.spool.remove_work(job.ticket) {
        warn!(error = %e, "could not remove intermediate files; the janitor will");
    }
    deps.budget.release(job.ticket);
}

/// Whether a write that records the file at `path` on job `ticket` (in `state`, where
/// `recorded_path` reads it back) did: its answer, or, when it errored, the job read again
/// ([`Recorded::after_error`]).
async fn recorded(
    deps: &PipelineDeps,
    ticket: Ticket,
    answer: StoreResult<bool>,
    state: JobState,
    path: &str,
    recorded_path: fn(&Job) -> Option<&str>,
) -> Recorded {
    match answer {
        Ok(true) => Recorded::Yes,
        Ok(false) => Recorded::No,
        Err(error) => {
            let reread = deps.store.job(ticket).await;
            let seen = reread.as_ref().ok().map(|job| job.as_ref().map(|job| (job.state, recorded_path(job))));
            let found = Recorded::after_error(seen, state, path);
            warn!(%error, ?found, "recording the stage's file failed; what the job holds decides whether it stays");
            found
        }
    }
}

fn remove_quietly(deps: &PipelineDeps, path: &str) {
    if let Err(e) = deps.spool.remove_file(path) {
        warn!(error = %e, "could not remove a file; the janitor will");
    }
}
