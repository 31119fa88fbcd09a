//! An album's source: the folder of its files, verified together against what the download
//! recorded, each file's format checked against what `merge` takes, and a failure of the run's
//! child given the name of the file it names.

use std::path::{Path, PathBuf};

use super::process::{hash_file, lost};
use super::{Detail, PipelineDeps, StageError};
use crate::detect::{self, DetectedFormat};
use crate::domain::{FailureReason, Job, Operation, SourcePart};

/// The files of an album's source folder (`1`, `2`, … in album order), checked together against
/// the total size and the digest of digests the download recorded
/// ([`album_digest`](super::download::album_digest)).
fn verify_album_folder(folder: &Path, size: i64, sha256: &str) -> Result<Vec<PathBuf>, StageError> {
    let files = crate::spool::album_files(folder);
    let mut digests = Vec::with_capacity(files.len());
    let mut total: u64 = 0;
    for path in &files {
        let (len, digest) = hash_file(path)?;
        total += len;
        digests.push(digest);
    }
    if i64::try_from(total).ok() != Some(size) {
        return Err(lost(format!("the album's files have {total} bytes, {size} recorded")));
    }
    if super::download::album_digest(&digests) != sha256 {
        return Err(lost("the album's files do not match their recorded sha256".into()));
    }
    Ok(files)
}

/// An album's source folder, verified ([`verify_album_folder`]), with each file's format
/// checked against what `merge` takes; the first file's format, and the album's files as
/// Telegram described them.
pub(super) async fn verified_album(
    deps: &PipelineDeps,
    job: &Job,
) -> Result<(PathBuf, DetectedFormat, Vec<SourcePart>), StageError> {
    let Some(expected) = job.source.clone() else {
        return Err(StageError::SourceLost { detail: "no source recorded".into() });
    };
    let Some(folder) = expected.path.as_deref().map(PathBuf::from) else {
        return Err(StageError::SourceLost { detail: "no source recorded".into() });
    };
    let parts = deps
        .store
        .source_parts(job.ticket_number())
        .await
        .map_err(|e| StageError::store("reading the album's files", e))?;
    let dir = folder.clone();
    let formats = tokio::task::spawn_blocking(move || {
        let files = verify_album_folder(&dir, expected.size, &expected.sha256)?;
        files
            .iter()
            .map(|file| {
                detect::detect_path(file)
                    .map_err(|e| StageError::SourceLost { detail: Detail::caused_by("reading an album's file", e) })
            })
            .collect::<Result<Vec<_>, _>>()
    })
    .await
    .map_err(|e| StageError::retry(format!("verifying the album panicked: {e}")))??;
    if formats.len() != parts.len() {
        return Err(lost(format!("the album has {} files on disk, {} recorded", formats.len(), parts.len())));
    }
    let count = u32::try_from(parts.len()).unwrap_or(u32::MAX);
    let accepts = Operation::Merge.accepts();
    for ((number, part), format) in (1..).zip(&parts).zip(&formats) {
        if !accepts.contains(&format.label()) {
            let reason = FailureReason::WrongFormat {
                operation: Operation::Merge.name().to_owned(),
                accepts: accepts.iter().map(|a| (*a).to_owned()).collect(),
                found: format.describe(),
                found_label: format.label().to_owned(),
            };
            return Err(StageError::fail(
                FailureReason::InPart { number, count, name: part.name().to_owned(), reason: Box::new(reason) },
                format!("album file {number} is {}", format.label()),
            ));
        }
    }
    let first = formats.into_iter().next().ok_or_else(|| lost("an album with no files".to_owned()))?;
    Ok((folder, first, parts))
}

/// `error`, with the album's file it names (the child knows its place only) given its name and
/// the album's size from `parts`.
pub(super) fn named_part(error: StageError, parts: &[SourcePart]) -> StageError {
    match error {
        StageError::Fail { reason: FailureReason::InPart { number, reason, .. }, detail } => {
            let name = parts.get(number as usize - 1).map(|part| part.name().to_owned()).unwrap_or_default();
            let count = u32::try_from(parts.len()).unwrap_or(u32::MAX);
            StageError::Fail { reason: FailureReason::InPart { number, count, name, reason }, detail }
        }
        other => other,
    }
}
