//! What a result message uploads: the whole stored result from its path, with its preview as
//! the thumbnail when it has one, or one part of a result sent in parts from where its bytes lie
//! in the stored ZIP, each under the name the person sees.

use std::path::PathBuf;

use crate::domain::{ResultFile, Submission};
use crate::spool::{part_file_name, preview_path_for, result_file_name_for};
use crate::telegram::{DocumentSource, TelegramError};

/// The upload for `result`, made for `submission` (or for its part `part`, from 1), and its size
/// in bytes.
///
/// # Errors
///
/// `Permanent` when no result file is recorded or the result has no such part; `Transient` when
/// its parts cannot be read (the file may be back once the disk is).
pub async fn result_upload(
    result: &ResultFile,
    submission: &Submission,
    part: Option<u32>,
) -> Result<(DocumentSource, u64), TelegramError> {
    let path: PathBuf =
        result.path.clone().ok_or_else(|| TelegramError::Permanent("no result file recorded".into()))?.into();
    let declared = submission.declared_name.as_deref();
    let Some(part) = part else {
        let file_name = result_file_name_for(declared, &submission.operation);
        let preview = preview_path_for(&path);
        // A preview that is not there (previews were off, or it could not be drawn) is no reason
        // to hold the result back.
        let thumbnail = tokio::fs::try_exists(&preview).await.unwrap_or(false).then_some(preview);
        let upload = DocumentSource::Path { path, file_name, thumbnail };
        return Ok((upload, u64::try_from(result.size).unwrap_or(0)));
    };
    let parts = crate::pdf::parts::parts_of(path.clone())
        .await
        .map_err(|e| TelegramError::Transient(format!("reading the parts: {e}")))?;
    let index = usize::try_from(part).unwrap_or(usize::MAX).wrapping_sub(1);
    let Some(found) = parts.get(index) else {
        return Err(TelegramError::Permanent(format!("the result has no part {part}")));
    };
    let upload = DocumentSource::Slice {
        path,
        offset: found.offset,
        length: found.size,
        file_name: part_file_name(declared, &found.name),
    };
    Ok((upload, found.size))
}
