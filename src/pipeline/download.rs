//! The download stage: getFile right before streaming, the body to a `.part` file while hashing,
//! size checks, fsync, rename. The `.part` file removes itself if the attempt ends early.

use std::io::{self, Read, Write};
use std::path::Path;

use futures_util::StreamExt;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt as _;

use super::{PipelineDeps, StageError};
use crate::domain::FailureReason;
use crate::spool::Spool;
use crate::store::Job;
use crate::telegram::TelegramError;
use crate::telegram::client::ByteStream;

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
    let part = tempfile::Builder::new()
        .prefix(&Spool::download_prefix(job.ticket))
        .suffix(".part")
        .tempfile_in(deps.spool.downloads())
        .map_err(|e| disk_error("creating the .part file", &e))?;
    let (std_file, part_path) = part.into_parts();
    let (total, sha256) = match deps.telegram.local_source(&remote) {
        // A local Bot API server's own disk: one blocking copy loop, no async hops per chunk.
        Some(source) => tokio::task::spawn_blocking(move || copy_local(&source, std_file, limit))
            .await
            .map_err(|e| StageError::retry(format!("the local copy panicked: {e}")))??,
        None => {
            let body = deps.telegram.open_file(&remote).await.map_err(transfer_error)?;
            stream_to_file(body, std_file, limit).await?
        }
    };

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
    Ok(Fetched { path: source.to_string_lossy().into_owned(), size: total, sha256 })
}

/// Streams `body` into `file` (the `.part`), hashing on a separate thread, stopping as soon as
/// more than `limit` bytes arrive; syncs the file. Returns the size and the hex sha256.
async fn stream_to_file(mut body: ByteStream, file: std::fs::File, limit: u64) -> Result<(u64, String), StageError> {
    let mut file = tokio::fs::File::from_std(file);
    // SHA-256 runs on its own thread, fed chunk by chunk, so hashing overlaps the transfer and
    // the write instead of adding to them.
    let (to_hasher, mut chunks) = tokio::sync::mpsc::channel::<bytes::Bytes>(16);
    let hashing = tokio::task::spawn_blocking(move || {
        let mut hasher = Sha256::new();
        while let Some(chunk) = chunks.blocking_recv() {
            hasher.update(&chunk);
        }
        hex::encode(hasher.finalize())
    });
    let mut total: u64 = 0;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(transfer_error)?;
        total += chunk.len() as u64;
        if total > limit {
            // Stop reading at once: a lying size must not fill the disk.
            return Err(StageError::fail(FailureReason::TooBig { size: total, limit }, "download passed the limit"));
        }
        // Cheap: `Bytes` clones share the buffer. A closed channel means the hasher died, which
        // the join below reports.
        let _ = to_hasher.send(chunk.clone()).await;
        file.write_all(&chunk).await.map_err(|e| disk_error("writing the download", &e))?;
    }
    drop(to_hasher);
    let sha256 = hashing.await.map_err(|e| StageError::retry(format!("hashing the download failed: {e}")))?;
    file.flush().await.map_err(|e| disk_error("flushing the download", &e))?;
    file.sync_all().await.map_err(|e| disk_error("syncing the download", &e))?;
    Ok((total, sha256))
}

/// Copies a local Bot API server's file into `file` (the `.part`) with plain blocking I/O, the
/// hashing on a second thread (buffers go there after being written and come back for reuse),
/// stopping as soon as more than `limit` bytes are read; syncs the file.
fn copy_local(source: &Path, mut file: std::fs::File, limit: u64) -> Result<(u64, String), StageError> {
    const CHUNK: usize = 1024 * 1024;
    let mut src = std::fs::File::open(source)
        .map_err(|e| StageError::retry(format!("cannot open the local Bot API server's copy: {}", e.kind())))?;
    let (to_hasher, written) = std::sync::mpsc::sync_channel::<Vec<u8>>(4);
    let (give_back, recycled) = std::sync::mpsc::channel::<Vec<u8>>();
    let hasher = std::thread::spawn(move || {
        let mut hasher = Sha256::new();
        for buf in written {
            hasher.update(&buf);
            let _ = give_back.send(buf);
        }
        hex::encode(hasher.finalize())
    });
    let mut total: u64 = 0;
    let copied = (|| {
        loop {
            let mut buf = recycled.try_recv().unwrap_or_default();
            buf.resize(CHUNK, 0);
            let n = read_full(&mut src, &mut buf)
                .map_err(|e| StageError::retry(format!("reading the local Bot API server's copy: {}", e.kind())))?;
            if n == 0 {
                return Ok(());
            }
            buf.truncate(n);
            total += n as u64;
            if total > limit {
                return Err(StageError::fail(
                    FailureReason::TooBig { size: total, limit },
                    "the local file passed the limit",
                ));
            }
            file.write_all(&buf).map_err(|e| disk_error("writing the download", &e))?;
            if to_hasher.send(buf).is_err() {
                return Err(StageError::retry("the hashing thread stopped"));
            }
        }
    })();
    drop(to_hasher);
    let sha256 = hasher.join().map_err(|_| StageError::retry("the hashing thread panicked"))?;
    copied?;
    file.sync_all().map_err(|e| disk_error("syncing the download", &e))?;
    Ok((total, sha256))
}

/// Reads until `buf` is full or the file ends; returns the bytes read.
fn read_full(src: &mut std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match src.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
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
