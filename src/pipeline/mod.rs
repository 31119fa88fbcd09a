//! The pipeline: pools of workers that claim jobs, hold them under a renewed lease, run a stage,
//! and turn the stage's outcome into a state change and, where a person must hear about it, an
//! outbox row — in one transaction.
//!
//! Stages ([`download`], [`process`]) only do their work and report an outcome; this module
//! alone decides retries, failures and cleanup. Files are deleted only *after* the state that
//! stops pointing at them is committed, so a crash leaves at worst an orphan file, never a row
//! that points at nothing.

mod attempt;
pub mod budget;
pub mod download;
pub mod memory;
pub mod outcome;
pub mod process;
pub mod reap;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, info_span, warn};

use crate::domain::{FailureReason, JobEvent, JobState, Lease, SharedClock, Timestamp};
use crate::domain::{Job, Operation, Ticket};
use crate::runtime::{self, Drain, Shutdown, Wakeups, Worker, WorkerId};
use crate::spool::Spool;
use crate::store::{AttemptRule, Completion, Release, Stage, Store, StoreResult};
use crate::telegram::TelegramClient;
use crate::texts::{Lang, Progress};
use outcome::{AfterError, Recorded};

/// What a stage reports when it did not finish its work.
#[derive(Debug)]
pub enum StageError {
    /// Worth another attempt later (network, 5xx, a cut download): the attempt counts, and the
    /// job backs off.
    Retry {
        /// What happened, for admins.
        detail: String,
    },
    /// This host or the database cannot do the work now (the data folder's disk is full, the
    /// database is away, full or read-only): not the document's doing, so the attempt is given
    /// back, and the job waits longer than after a [`Retry`](Self::Retry).
    Unavailable {
        /// What happened, for admins.
        detail: String,
    },
    /// Telegram's flood control (429): wait exactly `after`. Not the job's fault, so the attempt
    /// is given back.
    FloodWait {
        /// Telegram's `retry_after`.
        after: Duration,
        /// What happened, for admins.
        detail: String,
    },
    /// Will fail the same way again: end the job and tell the person why.
    Fail {
        /// The reason, in terms the person can act on.
        reason: FailureReason,
        /// What happened, for admins.
        detail: String,
    },
    /// The recorded source is missing or damaged: download it again.
    SourceLost {
        /// What was wrong.
        detail: String,
    },
}

impl StageError {
    /// A transient failure with backoff.
    pub fn retry(detail: impl Into<String>) -> Self {
        Self::Retry { detail: detail.into() }
    }

    /// A permanent failure.
    pub fn fail(reason: FailureReason, detail: impl Into<String>) -> Self {
        Self::Fail { reason, detail: detail.into() }
    }

    /// A file operation that failed while `what`: [`Unavailable`](Self::Unavailable) when the
    /// disk is full (or the quota used up), a [`Retry`](Self::Retry) otherwise.
    pub fn io(what: &str, e: &std::io::Error) -> Self {
        let detail = format!("{what}: {e}");
        match e.kind() {
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => Self::Unavailable { detail },
            _ => Self::Retry { detail },
        }
    }

    /// A store call that failed while `what`: [`Unavailable`](Self::Unavailable) when the
    /// database cannot do it now ([`StoreError::is_transient`](crate::store::StoreError::is_transient)),
    /// a [`Retry`](Self::Retry) otherwise.
    pub fn store(what: &str, e: &crate::store::StoreError) -> Self {
        let detail = format!("{what}: {e}");
        if e.is_transient() { Self::Unavailable { detail } } else { Self::Retry { detail } }
    }
}

/// The pipeline's settings.
#[derive(Debug, Clone)]
pub struct PipelineSettings {
    /// How long a claim holds a job without renewal.
    pub lease: Duration,
    /// Attempts at one stage before the job fails for good.
    pub max_attempts: u32,
    /// Largest file to download.
    pub download_limit: u64,
    /// Largest result to send.
    pub upload_limit: u64,
    /// How long results are kept.
    pub result_ttl: Duration,
    /// How often an idle worker looks for work without being woken (retries that came due).
    pub idle_poll: Duration,
    /// First retry delay; doubles per attempt.
    pub retry_base: Duration,
    /// How many of one chat's jobs may be in flight at once.
    pub per_chat: usize,
    /// Below this much free space on the data folder, no download starts.
    pub min_free: u64,
    /// How often a job's source may be lost (missing or changed before processing) before the
    /// job fails instead of being downloaded again.
    pub max_source_losses: u32,
    /// The limits of one processing run (`[processing]`).
    pub limits: crate::operations::Limits,
    /// What `shrink` aims at (`[processing] shrink_dpi`, `jpeg_quality`).
    pub shrink: crate::operations::ShrinkSettings,
    /// The program every processing run re-executes as its child: docket's own binary.
    pub program: std::path::PathBuf,
    /// The operations backed by external programs (`[processing.external.<name>]`): `ocr` runs
    /// the one named `ocr`.
    pub tools: Vec<crate::operations::ExternalTool>,
    /// How long a host may be silent before it counts as dead (`[node] dead_after`): a download
    /// too big for this host is left to a live one whose budget holds it.
    pub dead_after: Duration,
    /// LibreOffice, when `[processing] soffice` found it: what `topdf` converts office
    /// documents with.
    pub office: Option<crate::operations::Office>,
    /// What a document sent without a caption gets in a chat without a `/mode`
    /// (`[processing] default_operation`): a run whose declared type lied switches to it when
    /// its content is a PDF.
    pub default_operation: Operation,
}

/// How often a job's source may be lost before the job fails: a disk that keeps losing or
/// corrupting files must end in a reason, not in downloads without end.
pub const MAX_SOURCE_LOSSES: u32 = 3;

/// What the workers share. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PipelineDeps {
    /// The job store.
    pub store: Store,
    /// Time.
    pub clock: SharedClock,
    /// The Bot API.
    pub telegram: TelegramClient,
    /// The data folder.
    pub spool: Spool,
    /// Settings.
    pub settings: crate::runtime::Live<PipelineSettings>,
    /// Wake-ups.
    pub wake: Wakeups,
    /// The byte budget of this machine.
    pub budget: Arc<budget::Budget>,
    /// The memory budget of this machine's processing runs.
    pub memory: Arc<memory::MemoryBudget>,
    /// Opens a decrypt's password right before its run.
    pub sealing: crate::sealing::SealingKey,
}

/// What a finished stage produced.
#[derive(Debug)]
enum Produced {
    Fetched(download::Fetched),
    Result(process::Output),
}

/// Runs `size` workers of `stage` until told to stop; each finishes (or releases) its job.
pub async fn run_pool(stage: Stage, size: usize, deps: PipelineDeps, shutdown: Shutdown) {
    runtime::run_pool(StageWorker { stage, deps }, size, Drain::AtStop, shutdown).await;
}

/// The pipeline's rules for one stage, run by [`runtime::run_pool`].
#[derive(Debug, Clone)]
struct StageWorker {
    stage: Stage,
    deps: PipelineDeps,
}

impl Worker for StageWorker {
    type Item = Job;
    type Error = crate::store::StoreError;

    fn role(&self) -> &'static str {
        stage_name(self.stage)
    }

    fn wakeup(&self) -> Arc<Notify> {
        match self.stage {
            Stage::Download => Arc::clone(&self.deps.wake.downloads),
            Stage::Process => Arc::clone(&self.deps.wake.processing),
        }
    }

    async fn claim(&self, worker: &WorkerId) -> Result<Option<Job>, Self::Error> {
        let deps = &self.deps;
        match self.stage {
            Stage::Download => claim_download(deps, worker.as_str()).await,
            Stage::Process => {
                deps.store.claim_job(self.stage, worker.as_str(), deps.clock.now(), deps.settings.get().lease).await
            }
        }
    }

    fn span(&self, worker: &WorkerId, job: &Job) -> tracing::Span {
        info_span!("job", ticket = %job.ticket, stage = self.role(), attempt = job.attempts, worker = %worker)
    }

    async fn work(&self, _worker: &WorkerId, job: Job, abort: &CancellationToken) {
        run_claimed(self.stage, job, &self.deps, abort).await;
    }

    async fn idle_wait(&self) -> Duration {
        self.deps.settings.get().idle_poll
    }
}

fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Download => "download",
        Stage::Process => "process",
    }
}

/// Claims the next download that fits the byte budget and the per-chat bound, and reserves its
/// bytes, under one lock so two workers cannot both take the last room.
async fn claim_download(deps: &PipelineDeps, owner: &str) -> crate::store::StoreResult<Option<Job>> {
    let _claiming = deps.budget.claim_lock.lock().await;
    let now = deps.clock.now();
    let limit = deps.settings.get().download_limit;
    // Whether the head of the queue is this host's to wait for: one too big for this host's
    // budget that another live host's holds is left to that host.
    let (head, ours) = loop {
        let Some(head) = deps.store.next_waiting_download(now).await? else { return Ok(None) };
        if !deps.budget.can_never_fit(&head) {
            break (head, true);
        }
        let size = deps.budget.assumed_size(&head, limit);
        let anywhere = largest_source_anywhere(deps, now).await?;
        if size <= anywhere {
            break (head, false);
        }
        // The budgets were lowered after the job was accepted: it would hold every other
        // download back (through `max_wait`) forever.
        let reason = FailureReason::TooBig { size, limit: anywhere };
        let detail = format!("needs {} bytes, more than the whole budget of every live host", deps.budget.need(size));
        if !fail(deps, &head, None, reason, detail).await {
            // Someone else moved it; do not spin on it.
            return Ok(None);
        }
    };
    if let Ok(free) = fs4::available_space(deps.spool.downloads())
        && free < deps.settings.get().min_free
    {
        // A full disk is not the job's fault: it waits in `accepted` until space returns. (The
        // janitor warns once per pass; this path runs on every idle poll.)
        tracing::debug!(
            free_bytes = free,
            min_free_bytes = deps.settings.get().min_free,
            "too little free space; not starting downloads"
        );
        return Ok(None);
    }
    if ours && deps.budget.lacks_room_for(&head, limit) {
        // Before anyone waits for room, make sure the room is really taken: drop reservations
        // whose jobs hold no files any more, whatever path forgot them.
        reconcile_budget(deps, now).await?;
    }
    if ours && deps.budget.must_wait_for(&head, now, limit) {
        // The head of the queue waited long enough: let the room it needs free up.
        tracing::debug!(ticket = %head.ticket, "holding new downloads back for a job waiting for room");
        return Ok(None);
    }
    let limits = deps.budget.limits(limit, deps.settings.get().per_chat);
    let job = deps.store.claim_download(owner, now, deps.settings.get().lease, &limits).await?;
    if let Some(job) = &job
        && let Some(lease) = &job.lease
    {
        deps.budget.hold(job.ticket, lease.token, deps.budget.assumed_size(job, limit));
        // Everyone behind it moved up one place.
        tokio::spawn(report_queue(deps.clone(), now));
    }
    Ok(job)
}

/// The largest source a host alive at `now` can hold: this host's largest, or more where another
/// live host's byte budget is larger (by the heartbeats in the `nodes` table).
async fn largest_source_anywhere(deps: &PipelineDeps, now: Timestamp) -> crate::store::StoreResult<u64> {
    let largest = deps.store.largest_live_bytes_budget(now.minus(deps.settings.get().dead_after)).await?;
    Ok(deps.budget.largest_source().max(deps.budget.largest_source_in(largest.unwrap_or(0))))
}

/// Drops the reservations of jobs that, by the store, hold no files of this machine. The caller
/// holds the budget's claim lock.
async fn reconcile_budget(deps: &PipelineDeps, now: Timestamp) -> crate::store::StoreResult<()> {
    let holding: std::collections::HashSet<_> =
        deps.store.jobs_holding_files(&WorkerId::process_prefix(), now).await?.into_iter().collect();
    let released = deps.budget.reconcile(&holding);
    if !released.is_empty() {
        warn!(
            tickets = ?released.iter().map(|t| t.0).collect::<Vec<_>>(),
            "released byte-budget reservations of jobs that hold no files any more"
        );
    }
    Ok(())
}

/// Why a stage did not report an outcome.
enum Interrupted {
    LeaseLost,
    Shutdown,
}

async fn run_claimed(stage: Stage, job: Job, deps: &PipelineDeps, abort: &CancellationToken) {
    let Some(lease) = job.lease.clone() else {
        error!(ticket = %job.ticket, "claimed a job without a lease; skipping");
        return;
    };
    {
        if job.attempts > i64::from(deps.settings.get().max_attempts) {
            // Earlier attempts died without reporting (a crash, an OOM kill): stop the loop.
            let attempts = u32::try_from(job.attempts - 1).unwrap_or(u32::MAX);
            let detail = format!("{attempts} attempts ended without an outcome");
            fail(deps, &job, Some(&lease), FailureReason::GaveUp { attempts }, detail).await;
            return;
        }
        info!(declared_size_bytes = job.submission.declared_size, "working on job");
        let declared = job.submission.declared_size.and_then(|s| u64::try_from(s).ok());
        let step = match stage {
            Stage::Download => Progress::Downloading { done: 0, total: declared },
            Stage::Process => Progress::Processing,
        };
        report(deps, &job, &step, job.updated_at).await;
        let received = Arc::new(AtomicU64::new(0));
        let reporter = (stage == Stage::Download)
            .then(|| tokio::spawn(report_download(deps.clone(), job.clone(), Arc::clone(&received))));
        let heartbeat =
            // Every write of a stage is fenced by its lease token: through an outage longer than
            // the lease, the stage works on, and stops only if another worker took the job.
            runtime::keep_lease(
                deps.settings.get().lease,
                Arc::clone(&deps.clock),
                lease.until,
                runtime::WhenUnreachable::WorkOn,
                |until, now| deps.store.renew_job_lease(job.ticket, &lease, until, now),
            );
        let started = std::time::Instant::now();
        let outcome = tokio::select! {
            res = run_stage(stage, deps, &job, &received) => Ok(res),
            _ = heartbeat => Err(Interrupted::LeaseLost),
            () = abort.cancelled() => Err(Interrupted::Shutdown),
        };
        if let Some(reporter) = reporter {
            // Stopped for good before the outcome is recorded, so no stale percentage can
            // overwrite the state that follows.
            reporter.abort();
            let _ = reporter.await;
        }
        if let Ok(done) = &outcome {
            let name = match stage {
                Stage::Download => "docket_download_seconds",
                Stage::Process => "docket_processing_seconds",
            };
            let result = if done.is_ok() { "done" } else { "error" };
            metrics::histogram!(name, "operation" => job.submission.operation.name(), "result" => result)
                .record(started.elapsed().as_secs_f64());
        }
        match outcome {
            Ok(Ok(produced)) => advance(deps, &job, &lease, produced).await,
            Ok(Err(e)) => handle_error(deps, &job, &lease, e).await,
            Err(Interrupted::LeaseLost) => {
                match deps.store.job(job.ticket).await {
                    Ok(Some(now)) if matches!(now.state, JobState::Failed | JobState::Expired) => {
                        // Ended while this worker held it (cancelled, forgotten): nobody will use
                        // its files again.
                        info!(state = %now.state, "the job was ended while it ran; stopped, and deleting its files");
                        reap::reap(deps, job.ticket);
                    }
                    _ => {
                        warn!("lost the lease; another worker owns the job now, dropping this attempt");
                        if stage == Stage::Download {
                            deps.budget.release_claim(job.ticket, lease.token);
                        }
                    }
                }
            }
            Err(Interrupted::Shutdown) => {
                // Give the job back now instead of letting the lease run out. It keeps its place
                // in the queue (when it became due) and the attempt is not its fault.
                let release = Release {
                    from: job.state,
                    event: JobEvent::RetryLater,
                    not_before: job.not_before,
                    detail: Some("released at shutdown".into()),
                    attempts: AttemptRule::Refunded,
                };
                match deps.store.release_job(job.ticket, &lease, &release, deps.clock.now()).await {
                    Ok(_) => info!("released the job at shutdown"),
                    Err(e) => warn!(error = %e, "could not release the job at shutdown; its lease will lapse"),
                }
                if stage == Stage::Download {
                    deps.budget.release_claim(job.ticket, lease.token);
                }
            }
        }
    }
}

/// Runs the stage's work; a download counts the bytes it has written in `received`.
async fn run_stage(
    stage: Stage,
    deps: &PipelineDeps,
    job: &Job,
    received: &Arc<AtomicU64>,
) -> Result<Produced, StageError> {
    match stage {
        Stage::Download => download::fetch(deps, job, received).await.map(Produced::Fetched),
        Stage::Process => process::produce(deps, job).await.map(Produced::Result),
    }
}

async fn advance(deps: &PipelineDeps, job: &Job, lease: &Lease, produced: Produced) {
    let now = deps.clock.now();
    match produced {
        Produced::Fetched(f) => {
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
        Produced::Result(out) => {
            // The run may have switched to the operation that fits the content.
            let mut job = job.clone();
            job.submission.operation = out.operation.clone();
            let job = &job;
            let done = Completion {
                result_path: out.path.clone(),
                result_size: out.size as i64,
                detected_format: out.format.clone(),
                expires_at: now.plus(deps.settings.get().result_ttl),
            };
            let mut messages = outcome::completion_messages(
                chat_lang(deps, job).await,
                job,
                &done,
                out.note.as_deref(),
                out.message.as_deref(),
            );
            messages[1].buttons = outcome::other_operations(job, &out.format, &deps.settings.get().tools);
            let answer = deps.store.complete_job(job.ticket, lease, &done, &messages, now).await;
            match recorded(deps, job.ticket, answer, JobState::Ready, &out.path, Job::result_path).await {
                Recorded::Yes => {
                    info!(size_bytes = out.size, source_size_bytes = job.source.as_ref().map(|s| s.size), "ready");
                    metrics::counter!("docket_jobs_ready_total").increment(1);
                    deps.wake.outbox.notify_waiters();
                    // Committed: the source and intermediates are no longer anyone's.
                    if let Some(source) = job.source_path() {
                        remove_quietly(deps, source);
                    }
                    if let Err(e) = deps.spool.remove_work(job.ticket) {
                        warn!(error = %e, "could not remove intermediate files; the janitor will");
                    }
                    deps.budget.release(job.ticket);
                }
                Recorded::No => {
                    warn!("the result was not recorded (the lease was lost); discarding it");
                    remove_quietly(deps, &out.path);
                }
                Recorded::Unknown => {}
            }
        }
    }
}

async fn handle_error(deps: &PipelineDeps, job: &Job, lease: &Lease, err: StageError) {
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
async fn fail(deps: &PipelineDeps, job: &Job, lease: Option<&Lease>, reason: FailureReason, detail: String) -> bool {
    let now = deps.clock.now();
    let (reason_text, messages) = outcome::failure_messages(chat_lang(deps, job).await, job, &reason);
    match deps.store.fail_job(job.ticket, job.state, lease, &reason_text, &detail, &messages, now).await {
        Ok(true) => {
            warn!(ticket = %job.ticket, reason = ?reason, error = %detail, "job failed");
            metrics::counter!("docket_jobs_failed_total").increment(1);
            deps.wake.outbox.notify_waiters();
            if let Some(source) = job.source_path() {
                remove_quietly(deps, source);
            }
            if let Err(e) = deps.spool.remove_work(job.ticket) {
                warn!(error = %e, "could not remove intermediate files; the janitor will");
            }
            // Its files are gone: so is its place in the budget.
            deps.budget.release(job.ticket);
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

/// How often a running download updates its status message. Telegram allows about one message
/// a second per chat, and every other job of the chat shares that.
const PROGRESS_EVERY: Duration = Duration::from_secs(3);

/// Queues a progress edit for a state reached at `at`. Best effort: the next state supersedes a
/// lost one, and a report that arrives after a newer state's (workers race) is dropped.
async fn report(deps: &PipelineDeps, job: &Job, step: &Progress, at: Timestamp) {
    match deps.store.enqueue(&outcome::progress_edit(chat_lang(deps, job).await, job, step), at).await {
        Ok(true) => deps.wake.outbox.notify_waiters(),
        Ok(false) => {}
        Err(e) => warn!(error = %e, "could not queue a progress edit"),
    }
}

/// Shows the waiting jobs at [`outcome::REPORTED_POSITIONS`] their new place in line (as of
/// `at`, when the queue moved). An edit whose text the status message shows already is not
/// queued again. Best effort, like every progress edit.
async fn report_queue(deps: PipelineDeps, at: Timestamp) {
    let deepest = outcome::REPORTED_POSITIONS.last().copied().unwrap_or(0);
    let head = match deps.store.queue_head(at, i64::try_from(deepest).unwrap_or(i64::MAX)).await {
        Ok(head) => head,
        Err(e) => {
            warn!(error = %e, "could not read the queue to show positions");
            return;
        }
    };
    for (index, job) in head.iter().enumerate() {
        let position = index as u64 + 1;
        if !outcome::reports_position(position) {
            continue;
        }
        let edit = outcome::progress_edit(chat_lang(&deps, job).await, job, &Progress::Queued { position });
        let shown = match deps.store.messages(&crate::store::MessageFilter::job(job.ticket)).await {
            Ok(messages) => messages.iter().any(|m| m.idempotency_key == edit.idempotency_key && m.body == edit.body),
            Err(_) => false,
        };
        if !shown {
            report(&deps, job, &Progress::Queued { position }, at).await;
        }
    }
}

/// Reports a running download's bytes (`received`, kept by the download stage) every
/// [`PROGRESS_EVERY`].
async fn report_download(deps: PipelineDeps, job: Job, received: Arc<AtomicU64>) {
    let total = job.submission.declared_size.and_then(|s| u64::try_from(s).ok());
    let mut last = 0;
    loop {
        tokio::time::sleep(PROGRESS_EVERY).await;
        let done = received.load(Ordering::Relaxed);
        if done != last {
            last = done;
            report(&deps, &job, &Progress::Downloading { done, total }, deps.clock.now()).await;
        }
    }
}

/// The language `job`'s chat is written to in, read when a message is queued (the outbox keeps
/// text). A store that cannot say gets English: the message matters more than its language.
async fn chat_lang(deps: &PipelineDeps, job: &Job) -> Lang {
    match deps.store.chat_language(job.submission.chat).await {
        Ok(code) => Lang::from_stored(code.as_deref()),
        Err(e) => {
            warn!(error = %e, "could not read the chat's language; writing in English");
            Lang::ENGLISH
        }
    }
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
