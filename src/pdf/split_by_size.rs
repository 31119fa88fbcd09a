//! `split 45MB`: consecutive pages in parts that each fit in a size, for a result too big to
//! send as one file.
//!
//! A part is as many pages as fit, from where the previous part ended. Its length is found by
//! writing trial parts: starting at the previous part's length (pages of one document tend to
//! be alike), doubling while it fits, then halving the gap between the longest that fit and
//! the shortest that did not. A part is written about 2·log₂(its pages) times, and only the
//! one being tried is in memory besides the document. The parts go into a stored ZIP, named
//! as `split` names them (`page-p001-040.pdf`), and are sent one by one.

use std::path::Path;
use std::sync::mpsc;

use super::split::{extract, part_name, write_zip};
use super::work;
use super::{PdfError, Produced};
use crate::domain::SizeTarget;

/// Parts waiting for the ZIP's writer.
const PARTS_IN_FLIGHT: usize = 2;

/// `split` by size: the pages of `input`, in order, in parts of at most `under` bytes each,
/// in a ZIP at `output`. `pages` in the result is the document's page count.
///
/// # Errors
///
/// Those of loading (see [`super::optimize()`]); [`PdfError::PageTooBigForParts`] for a page
/// that alone is over `under`; [`PdfError::Io`] when writing fails.
pub fn split_by_size(input: &Path, output: &Path, under: SizeTarget, max_inflate: usize) -> Result<Produced, PdfError> {
    let (input, output) = (input.to_path_buf(), output.to_path_buf());
    work::on_work_thread(move || {
        let (mut document, page_ids) = work::load_pages(&input, max_inflate)?;
        let encryption = document.encryption_state.take();
        let shared = work::shared_resources(&document, &page_ids);
        let page_count = u32::try_from(page_ids.len()).unwrap_or(u32::MAX);
        let digits = page_ids.len().to_string().len().max(3);
        let write_part = |pages: &[u32]| -> Result<Vec<u8>, PdfError> {
            extract(&document, &shared, &page_ids, pages, max_inflate).write(encryption.as_ref())
        };
        let (parts_made, parts_to_write) = mpsc::sync_channel::<(String, Vec<u8>)>(PARTS_IN_FLIGHT);
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || write_zip(&output, parts_to_write));
            let made = (|| {
                let mut start = 1;
                let mut length = 1;
                while start <= page_count {
                    let (pages, bytes) = longest_part(start, page_count, length, under, &write_part)?;
                    length = pages.len() as u32;
                    start += length;
                    if parts_made.send((part_name(&pages, digits), bytes)).is_err() {
                        // The writer stopped: its error says why.
                        return Ok(());
                    }
                }
                Ok(())
            })();
            drop(parts_made);
            let written = writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            made.and(written).map(|output_bytes| Produced { output_bytes, pages: Some(page_count) })
        })
    })
}

/// The longest run of pages from `start` (at most to `last`) whose part fits in `under`, and
/// that part's bytes, trying `guess` pages first.
fn longest_part(
    start: u32,
    last: u32,
    guess: u32,
    under: SizeTarget,
    write_part: &impl Fn(&[u32]) -> Result<Vec<u8>, PdfError>,
) -> Result<(Vec<u32>, Vec<u8>), PdfError> {
    let most = last - start + 1;
    let pages = |length: u32| (start..start + length).collect::<Vec<u32>>();
    let try_length = |length: u32| -> Result<Option<Vec<u8>>, PdfError> {
        let bytes = write_part(&pages(length))?;
        Ok((bytes.len() as u64 <= under.get()).then_some(bytes))
    };
    // `fits`: the longest length known to fit, with its bytes; `too_long`: the shortest known
    // not to.
    let mut length = guess.clamp(1, most);
    let mut fits: Option<(u32, Vec<u8>)> = None;
    let mut too_long = most + 1;
    loop {
        match try_length(length)? {
            Some(bytes) => {
                fits = Some((length, bytes));
                if length == most {
                    break;
                }
                length = (length * 2).min(most);
                if length >= too_long {
                    break;
                }
            }
            None => {
                too_long = length;
                break;
            }
        }
    }
    // Halve the gap between what fits and what does not.
    loop {
        let shortest_known = fits.as_ref().map_or(0, |(length, _)| *length);
        if shortest_known + 1 >= too_long {
            break;
        }
        let middle = shortest_known + (too_long - shortest_known) / 2;
        match try_length(middle)? {
            Some(bytes) => fits = Some((middle, bytes)),
            None => too_long = middle,
        }
    }
    match fits {
        Some((length, bytes)) => Ok((pages(length), bytes)),
        None => {
            let size = write_part(&[start])?.len() as u64;
            Err(PdfError::PageTooBigForParts { page: start, size, target: under.get() })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use crate::pdf::split::tests::{fixture, parts};

    #[test]
    fn every_part_fits_and_together_they_hold_every_page_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let input = fixture("text-20pages.pdf");
        let output = dir.path().join("out.zip");
        let whole = std::fs::metadata(&input).unwrap().len();
        let under = SizeTarget::bytes(whole / 3);
        let produced = split_by_size(&input, &output, under, DEFAULT_MAX_INFLATE_BYTES).unwrap();
        assert_eq!(produced.pages, Some(20));
        let parts = parts(&output);
        assert!(parts.len() >= 2, "{} parts of at most {under}", parts.len());
        let mut next_page = 1;
        for (name, bytes) in &parts {
            assert!(bytes.len() as u64 <= under.get(), "{name}: {} bytes", bytes.len());
            let pages = lopdf::Document::load_mem(bytes).unwrap().get_pages().len() as u32;
            let expected = if pages == 1 {
                format!("page-p{next_page:03}.pdf")
            } else {
                format!("page-p{next_page:03}-{:03}.pdf", next_page + pages - 1)
            };
            assert_eq!(name, &expected);
            next_page += pages;
        }
        assert_eq!(next_page, 21, "every page once");
    }

    #[test]
    fn each_part_is_as_long_as_fits() {
        let dir = tempfile::tempdir().unwrap();
        let input = fixture("text-20pages.pdf");
        let output = dir.path().join("out.zip");
        let under = SizeTarget::bytes(std::fs::metadata(&input).unwrap().len() / 3);
        split_by_size(&input, &output, under, DEFAULT_MAX_INFLATE_BYTES).unwrap();
        let parts = parts(&output);
        // A part and the next one's first page together would not have fitted.
        let document = lopdf::Document::load(&input).unwrap();
        let page_ids: Vec<_> = document.get_pages().into_values().collect();
        let shared = work::shared_resources(&document, &page_ids);
        let mut start = 1;
        for (_, bytes) in &parts[..parts.len() - 1] {
            let pages = lopdf::Document::load_mem(bytes).unwrap().get_pages().len() as u32;
            let one_more: Vec<u32> = (start..=start + pages).collect();
            let longer =
                extract(&document, &shared, &page_ids, &one_more, DEFAULT_MAX_INFLATE_BYTES).write(None).unwrap();
            assert!(longer.len() as u64 > under.get(), "pages {start}..={} would have fitted", start + pages);
            start += pages;
        }
    }

    #[test]
    fn a_page_too_big_alone_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.zip");
        let result = split_by_size(&fixture("scan-2pages.pdf"), &output, SizeTarget::MIN, DEFAULT_MAX_INFLATE_BYTES);
        match result {
            Err(PdfError::PageTooBigForParts { page: 1, size, target }) => {
                assert!(size > target, "{size} over {target}");
                assert_eq!(target, SizeTarget::MIN.get());
            }
            other => panic!("{other:?}"),
        }
    }
}
