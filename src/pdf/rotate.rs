//! `rotate`: turns all pages, or the listed ones, clockwise by 90, 180 or 270 degrees.
//!
//! A page's `/Rotate` may be its own or inherited from the page tree; the new value is the
//! page's effective one plus the angle, normalised to 0, 90, 180 or 270, written into the page
//! itself (so siblings that inherit the same value are not turned with it). Nothing else
//! changes; the document is saved as `split` saves its parts, re-encrypted when it had an
//! owner password only.

use std::collections::BTreeSet;
use std::path::Path;

use lopdf::{Document, Object, ObjectId};

use super::work;
use super::{PdfError, Produced};
use crate::domain::{Angle, PageRanges};

/// `rotate`: `input` with the pages `pages` lists (all when `None`) turned by `angle`, into
/// `output`.
///
/// # Errors
///
/// Those of loading (see [`super::optimize()`]), [`PdfError::NoSuchPage`], [`PdfError::Io`].
pub fn rotate(
    input: &Path,
    output: &Path,
    angle: Angle,
    pages: Option<&PageRanges>,
    max_inflate: usize,
) -> Result<Produced, PdfError> {
    let (input, output, pages) = (input.to_path_buf(), output.to_path_buf(), pages.cloned());
    work::on_work_thread(move || {
        let (mut document, page_ids) = work::load_pages(&input, max_inflate)?;
        let chosen: BTreeSet<u32> = match &pages {
            Some(ranges) => work::resolve(ranges, page_ids.len())?.into_iter().flatten().collect(),
            None => (1..=page_ids.len() as u32).collect(),
        };
        let targets: Vec<ObjectId> = chosen.iter().map(|&page| page_ids[page as usize - 1]).collect();
        turn(&mut document, &targets, angle);
        let encryption = document.encryption_state.take();
        let output_bytes = work::save(&document, &output, encryption.as_ref())?;
        Ok(Produced { output_bytes, pages: Some(page_ids.len() as u32) })
    })
}

/// Turns each page of `pages` by `angle`, from its effective `/Rotate`.
fn turn(document: &mut Document, pages: &[ObjectId], angle: Angle) {
    let turned: Vec<(ObjectId, i64)> = pages
        .iter()
        .map(|&page| {
            let current = work::inherited(document, page, b"Rotate").and_then(|r| r.as_i64().ok()).unwrap_or(0);
            // Only multiples of 90 are valid; anything else is rounded down to one.
            let current = current.rem_euclid(360) / 90 * 90;
            (page, (current + i64::from(angle.degrees())).rem_euclid(360))
        })
        .collect();
    for (page, rotate) in turned {
        if let Ok(dict) = document.get_dictionary_mut(page) {
            dict.set("Rotate", Object::Integer(rotate));
        }
    }
}

/// Each page's effective `/Rotate`, in page order.
#[cfg(test)]
pub(crate) fn rotations(document: &Document) -> Vec<i64> {
    document
        .page_iter()
        .map(|page| work::inherited(document, page, b"Rotate").and_then(|r| r.as_i64().ok()).unwrap_or(0))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use crate::pdf::split::tests::fixture;
    use crate::pdf::text::tests::document_with_pages;

    #[test]
    fn listed_pages_turn_from_their_inherited_rotate() {
        let mut document = document_with_pages(&["", "", ""]);
        let pages_id = document.catalog().unwrap().get(b"Pages").unwrap().as_reference().unwrap();
        document.get_dictionary_mut(pages_id).unwrap().set("Rotate", 270);
        let ids: Vec<ObjectId> = document.page_iter().collect();
        document.get_dictionary_mut(ids[2]).unwrap().set("Rotate", -90);
        turn(&mut document, &[ids[0], ids[2]], Angle::Half);
        // 270 + 180 = 90; page 2 keeps the inherited 270; -90 is 270, + 180 = 90.
        assert_eq!(rotations(&document), [90, 270, 90]);
    }

    #[test]
    fn rotate_writes_a_pdf_with_the_new_values() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.pdf");
        let ranges: PageRanges = "2-3".parse().unwrap();
        let produced =
            rotate(&fixture("text-20pages.pdf"), &output, Angle::Quarter, Some(&ranges), DEFAULT_MAX_INFLATE_BYTES)
                .unwrap();
        assert_eq!(produced.pages, Some(20));
        let document = Document::load(&output).unwrap();
        let rotations = rotations(&document);
        assert_eq!(&rotations[..4], [0, 90, 90, 0]);
        let all = dir.path().join("all.pdf");
        rotate(&fixture("text-1page.pdf"), &all, Angle::ThreeQuarters, None, DEFAULT_MAX_INFLATE_BYTES).unwrap();
        assert_eq!(super::rotations(&Document::load(&all).unwrap()), [270]);
    }

    #[test]
    fn owner_password_pdf_stays_encrypted() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.pdf");
        rotate(&fixture("aes256-ownerpw-only.pdf"), &output, Angle::Half, None, DEFAULT_MAX_INFLATE_BYTES).unwrap();
        let document = Document::load(&output).unwrap();
        assert!(document.encryption_state.is_some());
        assert_eq!(rotations(&document), [180]);
    }
}
