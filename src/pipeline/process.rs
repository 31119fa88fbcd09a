//! The processing stage: verify the source, detect what it really is, run the operation in a
//! child process under the run's limits (after reserving its memory), check the result against
//! the upload limit, move it into `results/`.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{PipelineDeps, StageError};
use crate::detect::{self, DetectedFormat};
use crate::domain::{FailureReason, Job};
use crate::operations::{self, DEFAULT_LANG, Failure, Outcome, Report, Request, Work};
use crate::spool::Spool;

/// A result on disk, ready to be committed.
#[derive(Debug)]
pub struct Output {
    /// Where it is (under `results/`).
    pub path: String,
    /// Its size.
    pub size: u64,
    /// The detected format of the source.
    pub format: String,
}

/// Runs the job's operation on its verified source.
pub async fn produce(deps: &PipelineDeps, job: &Job) -> Result<Output, StageError> {
    let Some(expected) = job.source.clone() else {
        return Err(StageError::SourceLost { detail: "no source recorded".into() });
    };
    let Some(source) = expected.path.as_deref().map(PathBuf::from) else {
        return Err(StageError::SourceLost { detail: "no source recorded".into() });
    };
    // Size and sha256 in full, every time: downloads are not synced (see `download`), so after a
    // power cut this is where bytes the disk never got are found, and fetched again.
    let src = source.clone();
    tokio::task::spawn_blocking(move || verify_source(&src, expected.size, &expected.sha256))
        .await
        .map_err(|e| StageError::retry(format!("verifying the source panicked: {e}")))??;

    let src = source.clone();
    let format = tokio::task::spawn_blocking(move || detect::detect_path(&src))
        .await
        .map_err(|e| StageError::retry(format!("detection panicked: {e}")))?
        .map_err(|e| StageError::SourceLost { detail: format!("reading the source: {e}") })?;
    if format != DetectedFormat::Pdf {
        return Err(StageError::fail(
            FailureReason::NotAPdf { found: format.describe() },
            format!("declared {:?}, content is {}", job.submission.declared_mime, format.label()),
        ));
    }

    // Output of an attempt that died is invalid: remove what earlier attempts left (and only
    // that: a stalled former holder must not touch what a later one wrote).
    let token = job.lease.as_ref().map_or(0, |l| l.token);
    deps.spool
        .remove_earlier_output(job.ticket, token)
        .map_err(|e| StageError::retry(format!("cleaning up earlier attempts: {e}")))?;
    // Intermediate output lives in work/<ticket>/ and vanishes if this attempt ends early.
    let work_dir =
        deps.spool.work_dir(job.ticket).map_err(|e| StageError::retry(format!("creating the work folder: {e}")))?;
    let work_file = tempfile::Builder::new()
        .prefix(&format!("{}optimize-", Spool::attempt_prefix(token)))
        .suffix(".pdf")
        .tempfile_in(&work_dir)
        .map_err(|e| StageError::retry(format!("creating the output file: {e}")))?
        .into_temp_path();
    let output_bytes =
        run_contained(deps, Work::Builtin(job.submission.operation.clone()), &source, &work_file).await?;

    let limit = deps.settings.get().upload_limit;
    if output_bytes > limit {
        return Err(StageError::fail(
            FailureReason::ResultTooBig { size: output_bytes, limit },
            format!("result of {} bytes over the upload limit", output_bytes),
        ));
    }
    let result_dir =
        deps.spool.result_dir(job.ticket).map_err(|e| StageError::retry(format!("creating the result folder: {e}")))?;
    let result = result_dir.join(format!("{}{:016x}.pdf", Spool::attempt_prefix(token), rand::random::<u64>()));
    work_file.persist(&result).map_err(|e| StageError::retry(format!("moving the result: {}", e.error)))?;
    // The file's bytes are synced (`pdf.rs`); its name in `results/<ticket>/`, and that folder's
    // in `results/`, must survive a power cut too, since `ready` deletes the source.
    for dir in [result_dir.as_path(), result_dir.parent().unwrap_or(&result_dir)] {
        std::fs::File::open(dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| StageError::retry(format!("syncing the result folder: {e}")))?;
    }
    Ok(Output { path: result.to_string_lossy().into_owned(), size: output_bytes, format: format.label().to_owned() })
}

/// The source must be on disk with the recorded size and sha256; otherwise it is lost, and the
/// job goes back to be downloaded again.
fn verify_source(path: &Path, size: i64, sha256: &str) -> Result<(), StageError> {
    let lost = |detail: String| StageError::SourceLost { detail };
    let mut file = std::fs::File::open(path).map_err(|e| lost(format!("source missing: {e}")))?;
    let len = file.metadata().map_err(|e| lost(format!("source unreadable: {e}")))?.len();
    if i64::try_from(len).ok() != Some(size) {
        return Err(lost(format!("source has {len} bytes, {size} recorded")));
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1024 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(|e| lost(format!("source unreadable: {e}")))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    if hex::encode(hasher.finalize()) != sha256 {
        return Err(lost("source does not match its recorded sha256".into()));
    }
    Ok(())
}

/// Runs `work` on `input` into `output` in a child process, once its memory is reserved;
/// returns the result's size. Dropping the future (a lost lease, shutdown) kills the child and
/// gives the memory back.
async fn run_contained(deps: &PipelineDeps, work: Work, input: &Path, output: &Path) -> Result<u64, StageError> {
    let settings = deps.settings.get();
    let limits = work.limits(settings.limits);
    let input_bytes = std::fs::metadata(input).map(|m| m.len()).unwrap_or(0);
    let need = limits.reservation(&work, input_bytes);
    let _memory = deps.memory.reserve(need).await.map_err(|never| {
        StageError::fail(FailureReason::NeedsTooMuchMemory { limit: never.capacity }, never.to_string())
    })?;
    let request = Request {
        work: work.clone(),
        input: input.to_path_buf(),
        output: output.to_path_buf(),
        lang: DEFAULT_LANG.to_owned(),
        limits,
        shrink: settings.shrink,
    };
    let outcome = operations::run_contained(&settings.program, &request)
        .await
        .map_err(|e| StageError::retry(format!("starting the operation's process: {e}")))?;
    match outcome {
        Outcome::Reported(Report::Done { output_bytes, peak_rss_bytes, .. }) => {
            tracing::debug!(
                operation = work.name(),
                input_bytes,
                reserved_bytes = need,
                peak_rss_bytes,
                "the operation's process finished"
            );
            Ok(output_bytes)
        }
        Outcome::Reported(Report::Failed { failure, detail }) => Err(failure_error(&work, failure, detail)),
        Outcome::OutOfMemory { limit } => Err(StageError::fail(
            FailureReason::NeedsTooMuchMemory { limit },
            format!("the {} process reached its memory limit of {limit} bytes", work.name()),
        )),
        Outcome::TimedOut { limit } => Err(StageError::fail(
            FailureReason::TookTooLong { limit },
            format!("the {} process was killed after {}", work.name(), humantime::format_duration(limit)),
        )),
        Outcome::KilledFromOutside { detail } => Err(StageError::retry(detail)),
        Outcome::Crashed { detail } => Err(StageError::fail(FailureReason::Crashed, detail)),
    }
}

fn failure_error(work: &Work, failure: Failure, detail: String) -> StageError {
    let reason = match failure {
        Failure::Encrypted => FailureReason::Encrypted,
        Failure::NoPages => FailureReason::NoPages,
        Failure::Unreadable => FailureReason::Unreadable,
        Failure::InflatesTooMuch { limit } => FailureReason::InflatesTooMuch { limit },
        Failure::ToolFailed => FailureReason::ToolFailed { tool: work.name().to_owned() },
        // Not the document's fault: worth another attempt.
        Failure::Io | Failure::LimitsRefused => return StageError::retry(detail),
    };
    StageError::fail(reason, detail)
}
