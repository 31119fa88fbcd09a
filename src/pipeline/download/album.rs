//! The download of an album's (or a `/merge`'s) ticket: every file, in order, into one folder
//! that becomes the ticket's source.

use std::fs::File;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::{Fetched, Received, Wanted, fetch_into};
use crate::domain::{FailureReason, Job};
use crate::pipeline::{PipelineDeps, StageError};
use crate::spool::Spool;

/// Downloads every file of an album's ticket, in album order, into one folder: file `n` is the
/// album's `n`-th ([`album_file`](crate::spool::album_file):
/// `downloads/<ticket>-<token>-<random>.part/1`, `…/2`), and the folder is
/// renamed to `.source` once all are in. The ticket's source is that folder: its size the
/// files' total, its sha256 that of their sha256s in order ([`album_digest`]), which is what
/// processing verifies. A file that fails for good fails the ticket, naming it; the byte budget
/// holds the total the album declared, grown by each undeclared file's size once getFile says it.
pub(super) async fn fetch_album(
    deps: &PipelineDeps,
    job: &Job,
    limit: u64,
    token: i64,
    received: &Arc<Received>,
) -> Result<Fetched, StageError> {
    let parts = deps
        .store
        .source_parts(job.ticket_number())
        .await
        .map_err(|e| StageError::store("reading the album's files", e))?;
    if parts.is_empty() {
        return Err(StageError::fail(FailureReason::NothingToMerge, "a ticket of several files with none"));
    }
    let folder = tempfile::Builder::new()
        .prefix(&Spool::download_attempt_prefix(job.ticket, token))
        .suffix(".part")
        .tempdir_in(deps.spool.downloads())
        .map_err(|e| StageError::io("creating the album's .part folder", e))?;
    let count = u32::try_from(parts.len()).unwrap_or(u32::MAX);
    // What the budget holds for the album: the sizes its files declared, and each undeclared
    // one's as getFile tells it.
    let mut expected: u64 = parts.iter().filter_map(|p| p.declared_size).map(|s| u64::try_from(s).unwrap_or(0)).sum();
    let mut digests = Vec::with_capacity(parts.len());
    let mut total = 0;
    for (number, part) in (1..).zip(&parts) {
        let in_part = |error: StageError| match error {
            StageError::Fail { reason, detail } => StageError::Fail {
                reason: FailureReason::InPart { number, count, name: part.name().to_owned(), reason: Box::new(reason) },
                detail,
            },
            other => other,
        };
        received.start_file(number, count);
        let file = File::create_new(crate::spool::album_file(folder.path(), number))
            .map_err(|e| StageError::io("creating an album file's .part", e))?;
        let declared = part.declared_size.and_then(|s| u64::try_from(s).ok());
        let wanted = Wanted { file_id: &part.file_id, declared, limit };
        let sized = |size| {
            if declared.is_none() {
                expected += size;
                deps.budget.resize(job.ticket, expected);
            }
        };
        let (size, sha256) = fetch_into(deps, wanted, file, received, sized).await.map_err(in_part)?;
        total += size;
        digests.push(sha256);
    }
    let folder = folder.keep();
    let source = deps.spool.source_path_for(&folder);
    std::fs::rename(&folder, &source).map_err(|e| StageError::io("renaming the album's download", e))?;
    Ok(Fetched { path: source.to_string_lossy().into_owned(), size: total, sha256: album_digest(&digests) })
}

/// The sha256 an album's source is recorded with: that of its files' hex sha256s, in order, each
/// on a line of its own.
pub fn album_digest(digests: &[String]) -> String {
    let mut hasher = Sha256::new();
    for digest in digests {
        hasher.update(digest.as_bytes());
        hasher.update(b"\n");
    }
    hex::encode(hasher.finalize())
}
