//! The whole-document rewrite that `optimize` is and `shrink` builds on: the PDF loaded,
//! transformed, its streams optimized ([`optimize`](mod@super::optimize)), pruned, renumbered
//! and saved; the result loaded back to check it; the original kept when the result is not
//! smaller.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::Instant;

use lopdf::{Document, Object};

use super::optimize::{BEST_LEVEL, compress_streams, merge_identical_streams};
use super::work::{OBJECTS_PER_STREAM, count_pages, load, on_work_thread, panic_message, write_file};
use super::{PdfError, file_writer};
use crate::detect;

/// What [`optimize()`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptimizeReport {
    /// Number of pages in the document (the same in input and output).
    pub pages: u32,
    /// Size of the input file.
    pub input_bytes: u64,
    /// Size of the file written to `output`. Equal to `input_bytes` exactly when optimizing did
    /// not make the file smaller and the input was copied unchanged instead.
    pub output_bytes: u64,
}

impl OptimizeReport {
    /// Whether `output` is an unchanged copy of the input, because optimizing would not have
    /// made it smaller.
    pub fn kept_original(&self) -> bool {
        self.output_bytes == self.input_bytes
    }

    /// Bytes saved; zero when the original was kept.
    pub fn saved_bytes(&self) -> u64 {
        self.input_bytes.saturating_sub(self.output_bytes)
    }
}

/// Optimizes the PDF at `input` and writes the result to `output`.
///
/// Loads `input` (repairing a damaged cross-reference table if it can), compresses the streams
/// that have no filter, prunes objects nothing refers to, renumbers the rest, and saves with
/// object streams and a cross-reference stream. The result is then loaded again and must have
/// the same page count. If the result is not smaller than the input, or fails that check, the
/// input is copied to `output` unchanged instead, so people never get a bigger file back; the
/// report then has `output_bytes == input_bytes`.
///
/// `output` is created or truncated and written, not synced: the parent of a contained run
/// syncs every result ([`crate::operations::run_contained`]); the caller owns temp naming and
/// the rename into place. On error `output` may be left partially
/// written, and the caller removes it. Synchronous and CPU-heavy: run it in a child process
/// ([`crate::operations`]).
/// See [the `pdf` module docs](super) for what this protects against and what it leaves to the caller.
///
/// # Errors
///
/// - [`PdfError::NotPdf`] if the content is not a PDF by [`detect::detect_bytes`];
/// - [`PdfError::Encrypted`] if it needs a password;
/// - [`PdfError::Unreadable`] if lopdf cannot make sense of it, or panics;
/// - [`PdfError::InflatesTooMuch`] if a stream that loading decodes inflates past `max_inflate`;
/// - [`PdfError::NoPages`] if its page tree is empty;
/// - [`PdfError::Io`] if reading `input` or writing `output` fails, or the work thread cannot
///   be started.
#[tracing::instrument(name = "pdf_optimize", skip_all)]
pub fn optimize(input: &Path, output: &Path, max_inflate: usize) -> Result<OptimizeReport, PdfError> {
    rewrite_file(input, output, max_inflate, "optimized", |_document| Ok(()))
}

/// Loads the PDF at `input`, applies `transform` to it, optimizes it and writes it to
/// `output`, as [`optimize()`] documents, on a thread of its own with a large stack and every
/// panic caught; `done` names what was done, for the log.
pub(super) fn rewrite_file(
    input: &Path,
    output: &Path,
    max_inflate: usize,
    done: &'static str,
    transform: impl FnOnce(&mut Document) -> Result<(), PdfError> + Send + 'static,
) -> Result<OptimizeReport, PdfError> {
    let started = Instant::now();
    let (input, output) = (input.to_path_buf(), output.to_path_buf());
    let report = on_work_thread(move || rewrite_on_this_thread(&input, &output, max_inflate, transform))?;
    tracing::debug!(
        pages = report.pages,
        input_bytes = report.input_bytes,
        output_bytes = report.output_bytes,
        kept_original = report.kept_original(),
        elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "{done} a PDF of {} pages: {} -> {} bytes",
        report.pages,
        report.input_bytes,
        report.output_bytes,
    );
    Ok(report)
}

fn rewrite_on_this_thread(
    input: &Path,
    output: &Path,
    max_inflate: usize,
    transform: impl FnOnce(&mut Document) -> Result<(), PdfError>,
) -> Result<OptimizeReport, PdfError> {
    let bytes = std::fs::read(input)?;
    let input_bytes = bytes.len() as u64;
    let found = detect::detect_bytes(&bytes);
    if !found.is_pdf() {
        return Err(PdfError::NotPdf { found });
    }

    let (pages, rewritten) = catch_unwind(AssertUnwindSafe(|| rewrite(&bytes, max_inflate, transform)))
        .map_err(|payload| PdfError::unreadable(panic_message(payload.as_ref())))??;

    // Checked in memory, and only then written: one write of whichever is kept.
    let keep_original = if rewritten.len() as u64 >= input_bytes {
        true
    } else {
        match catch_unwind(AssertUnwindSafe(|| count_pages(&load(&rewritten, max_inflate)?))) {
            Ok(Ok(reloaded)) if reloaded == pages => false,
            outcome => {
                let detail = match outcome {
                    Ok(Ok(reloaded)) => format!("it has {reloaded} pages instead of {pages}"),
                    Ok(Err(error)) => error.to_string(),
                    Err(payload) => panic_message(payload.as_ref()),
                };
                tracing::warn!(
                    pages,
                    detail = %detail,
                    "the rewritten PDF did not load back as it should; keeping the original: {detail}"
                );
                true
            }
        }
    };
    let kept = if keep_original { bytes } else { rewritten };
    write_file(output, &kept)?;
    Ok(OptimizeReport { pages, input_bytes, output_bytes: kept.len() as u64 })
}

/// Loads the PDF in `bytes`, transforms and optimizes it; its page count and the new file.
fn rewrite(
    bytes: &[u8],
    max_inflate: usize,
    transform: impl FnOnce(&mut Document) -> Result<(), PdfError>,
) -> Result<(u32, Vec<u8>), PdfError> {
    let mut document = load(bytes, max_inflate)?;
    let pages = count_pages(&document)?;

    // Taken before anything changes, to encrypt the result the way the input was.
    let encryption = document.encryption_state.take();
    transform(&mut document)?;
    write_lengths_directly(&mut document);
    compress_streams(&mut document, max_inflate)?;
    document.prune_objects();
    merge_identical_streams(&mut document);
    document.prune_objects();
    document.renumber_objects();
    // In memory: the result is smaller than the input, which is in memory already.
    let saved = file_writer::save(&document, encryption.as_ref(), OBJECTS_PER_STREAM, BEST_LEVEL)?;
    Ok((pages, saved))
}

/// Sets every stream's `/Length` to the number of bytes it holds.
///
/// The writer writes a stream's length from its content whatever the dictionary says; set here,
/// the old length objects (indirect `/Length`s) are referred to no more and pruned.
fn write_lengths_directly(document: &mut Document) {
    for object in document.objects.values_mut() {
        if let Object::Stream(stream) = object {
            let length = i64::try_from(stream.content.len()).unwrap_or(i64::MAX);
            stream.dict.set("Length", length);
        }
    }
}
