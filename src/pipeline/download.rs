//! The download stage: getFile right before streaming, the body to a `.part` file while hashing,
//! size checks, fsync, rename. The `.part` file removes itself if the attempt ends early.

use std::io;

use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::{PipelineDeps, StageError};
use crate::domain::FailureReason;
use crate::spool::Spool;
use crate::store::Job;
use crate::telegram::TelegramError;

/// A verified source on disk.
#[derive(Debug)]
pub struct Fetched {
    /// Where it is.
    pub path: String,
    /// Bytes received.
    pub size: u64,
    /// Hex sha256 of those bytes.
    pub sha256: String,
}

/// Downloads the job's file and verifies it.
pub async fn fetch(deps: &PipelineDeps, job: &Job) -> Result<Fetched, StageError> {
    // The file must fit the mode's download limit and, with its intermediate output, the budget.
    let limit = deps.settings.download_limit.min(deps.budget.largest_source());
    // An attempt that died (a crash, a lost lease) may have left a .part or an unrecorded source.
    match deps.spool.remove_downloads_of(job.ticket) {
        Ok(0) => {}
        Ok(n) => tracing::info!(files = n, "removed files of an earlier, unfinished attempt"),
        Err(e) => return Err(disk_error("cleaning up an earlier attempt", &e)),
    }
    let declared = job.declared_size.and_then(|s| u64::try_from(s).ok());
    if let Some(size) = declared.filter(|s| *s > limit) {
        return Err(StageError::fail(FailureReason::TooBig { size, limit }, "declared size over the download limit"));
    }
    // A fresh getFile for every attempt: links expire, and are never stored.
    let remote =
        deps.telegram.get_file(&job.file_id).await.map_err(|e| get_file_error(e, declared.unwrap_or(0), limit))?;
    if let Some(size) = remote.size.filter(|s| *s > limit) {
        return Err(StageError::fail(FailureReason::TooBig { size, limit }, "getFile size over the download limit"));
    }
    let mut body = deps.telegram.open_file(&remote).await.map_err(transfer_error)?;

    let part = tempfile::Builder::new()
        .prefix(&Spool::download_prefix(job.ticket))
        .suffix(".part")
        .tempfile_in(deps.spool.downloads())
        .map_err(|e| disk_error("creating the .part file", &e))?;
    let (std_file, part_path) = part.into_parts();
    let mut file = tokio::fs::File::from_std(std_file);
    let mut hasher = Sha256::new();
    let mut total: u64 = 0;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(transfer_error)?;
        total += chunk.len() as u64;
        if total > limit {
            // Stop reading at once: a lying size must not fill the disk.
            return Err(StageError::fail(FailureReason::TooBig { size: total, limit }, "download passed the limit"));
        }
        hasher.update(&chunk);
        file.write_all(&chunk).await.map_err(|e| disk_error("writing the download", &e))?;
    }
    file.flush().await.map_err(|e| disk_error("flushing the download", &e))?;
    file.sync_all().await.map_err(|e| disk_error("syncing the download", &e))?;
    drop(file);

    for (what, expected) in [("declared", declared), ("getFile", remote.size)] {
        if let Some(expected) = expected.filter(|e| *e != total) {
            return Err(StageError::fail(
                FailureReason::SizeMismatch { declared: expected, real: total },
                format!("{what} size {expected} but received {total} bytes"),
            ));
        }
    }
    let source = deps.spool.source_path_for(&part_path);
    part_path.persist(&source).map_err(|e| disk_error("renaming the download", &e.error))?;
    Ok(Fetched { path: source.to_string_lossy().into_owned(), size: total, sha256: hex::encode(hasher.finalize()) })
}

fn get_file_error(e: TelegramError, declared: u64, limit: u64) -> StageError {
    match e {
        TelegramError::RetryAfter(d) => StageError::Retry { after: Some(d), detail: "getFile: flood control".into() },
        TelegramError::Permanent(text) if text.contains("file is too big") => {
            StageError::fail(FailureReason::TooBig { size: declared.max(limit + 1), limit }, format!("getFile: {text}"))
        }
        TelegramError::Permanent(text) | TelegramError::ChatGone(text) => {
            StageError::fail(FailureReason::FileUnavailable, format!("getFile: {text}"))
        }
        other => StageError::retry(format!("getFile: {other}")),
    }
}

fn transfer_error(e: TelegramError) -> StageError {
    match e {
        TelegramError::RetryAfter(d) => StageError::Retry { after: Some(d), detail: "download: flood control".into() },
        other => StageError::retry(format!("download: {other}")),
    }
}

fn disk_error(what: &str, e: &io::Error) -> StageError {
    // A full disk is transient: the janitor frees space, and the job must wait, not fail.
    StageError::retry(format!("{what}: {e}"))
}
