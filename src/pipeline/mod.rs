//! The pipeline: pools of workers that claim jobs, hold them under a renewed lease, run a stage,
//! and turn the stage's outcome into a state change and, where a person must hear about it, an
//! outbox row — in one transaction.
//!
//! Stages ([`download`], [`process`]) only do their work and report an outcome; the pipeline
//! alone decides retries, failures and cleanup: which download starts next in `claim.rs`, what
//! an outcome means in [`outcome`] and how it is recorded in `record.rs`, the status message's
//! edits in `progress.rs`, and this file runs a claimed job under its lease. Files are deleted only *after* the state that
//! stops pointing at them is committed, so a crash leaves at worst an orphan file, never a row
//! that points at nothing.

mod album_source;
mod attempt;
pub mod budget;
mod claim;
pub mod download;
mod error;
pub mod memory;
pub mod outcome;
mod preview;
pub mod process;
mod progress;
pub mod reap;
mod record;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, info_span, warn};

use crate::domain::{FailureReason, JobEvent, JobState, SharedClock};
use crate::domain::{Job, Lease, Operation};
use crate::runtime::{self, Drain, Shutdown, Wakeups, Worker, WorkerId};
use crate::spool::Spool;
use crate::store::{AttemptRule, Release, Stage, Store};
use crate::telegram::TelegramClient;
use crate::texts::Progress;

pub use error::{Detail, StageError};

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
    /// MuPDF, when `[processing] preview` is on and `renderer` found it: what draws a PDF
    /// result's first page as its thumbnail.
    pub preview: Option<crate::operations::Renderer>,
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
            Stage::Download => claim::claim_download(deps, worker.as_str()).await,
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
    if job.attempts > i64::from(deps.settings.get().max_attempts) {
        // Earlier attempts died without reporting (a crash, an OOM kill): stop the loop.
        let attempts = u32::try_from(job.attempts - 1).unwrap_or(u32::MAX);
        let detail = format!("{attempts} attempts ended without an outcome");
        record::fail(deps, &job, Some(&lease), FailureReason::GaveUp { attempts }, detail).await;
        return;
    }
    info!(declared_size_bytes = job.submission.declared_size, "working on job");
    let declared = job.submission.declared_size.and_then(|s| u64::try_from(s).ok());
    let step = match stage {
        Stage::Download => Progress::Downloading { done: 0, total: declared, part: None },
        Stage::Process => Progress::Processing,
    };
    progress::report(deps, &job, &step, job.updated_at).await;
    let received = Arc::new(download::Received::default());
    let reporter = (stage == Stage::Download)
        .then(|| tokio::spawn(progress::report_download(deps.clone(), job.clone(), Arc::clone(&received))));
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
        record_duration(stage, &job, started, done.is_ok());
    }
    match outcome {
        Ok(Ok(produced)) => record::advance(deps, &job, &lease, produced).await,
        Ok(Err(e)) => record::handle_error(deps, &job, &lease, e).await,
        Err(Interrupted::LeaseLost) => after_lease_lost(stage, deps, &job, &lease).await,
        Err(Interrupted::Shutdown) => release_at_shutdown(stage, deps, &job, &lease).await,
    }
}

/// How long a stage that reported an outcome took, by stage, operation and result.
fn record_duration(stage: Stage, job: &Job, started: std::time::Instant, done: bool) {
    let name = match stage {
        Stage::Download => "docket_download_seconds",
        Stage::Process => "docket_processing_seconds",
    };
    let result = if done { "done" } else { "error" };
    metrics::histogram!(name, "operation" => job.submission.operation.name(), "result" => result)
        .record(started.elapsed().as_secs_f64());
}

/// The lease on `job` could not be kept: a job ended meanwhile (cancelled, forgotten) has its
/// files deleted, since nobody will use them again; otherwise another worker owns the job now,
/// and this attempt is dropped.
async fn after_lease_lost(stage: Stage, deps: &PipelineDeps, job: &Job, lease: &Lease) {
    match deps.store.job(job.ticket).await {
        Ok(Some(now)) if matches!(now.state, JobState::Failed | JobState::Expired) => {
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

/// Gives `job` back at shutdown instead of letting the lease run out. It keeps its place in the
/// queue (when it became due) and the attempt is not its fault.
async fn release_at_shutdown(stage: Stage, deps: &PipelineDeps, job: &Job, lease: &Lease) {
    let release = Release {
        from: job.state,
        event: JobEvent::RetryLater,
        not_before: job.not_before,
        detail: Some("released at shutdown".into()),
        attempts: AttemptRule::Refunded,
    };
    match deps.store.release_job(job.ticket, lease, &release, deps.clock.now()).await {
        Ok(_) => info!("released the job at shutdown"),
        Err(e) => warn!(error = %e, "could not release the job at shutdown; its lease will lapse"),
    }
    if stage == Stage::Download {
        deps.budget.release_claim(job.ticket, lease.token);
    }
}

/// Runs the stage's work; a download counts the bytes it has written in `received`.
async fn run_stage(
    stage: Stage,
    deps: &PipelineDeps,
    job: &Job,
    received: &Arc<download::Received>,
) -> Result<Produced, StageError> {
    match stage {
        Stage::Download => download::fetch(deps, job, received).await.map(Produced::Fetched),
        Stage::Process => process::produce(deps, job).await.map(Produced::Result),
    }
}
