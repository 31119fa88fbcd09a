//! `split` (each page, or each listed range, as its own PDF, all in a ZIP) and `pages` (the
//! listed pages, in the listed order, as one PDF).
//!
//! Each result holds only the objects its pages reach: the pages with their inherited
//! attributes, the fonts and XObjects their content names, and what those refer to; a
//! reference to a page left out becomes `null`. So a one-page part of a large document is
//! about as big as that page, never the whole document with pages deleted. Parts are made on
//! every core, a batch of them at a time, and the ZIP is written entry by entry to its file
//! while the next batch is made: only two batches of parts and the archive's directory (a few
//! dozen bytes per entry) are in memory besides the document.
//!
//! A document encrypted with an owner password only gives parts encrypted the same way, as
//! [`super::optimize()`] does; the streams are copied as they are, never decoded.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc;

use lopdf::{Document, ObjectId};
use rayon::prelude::*;
use zip::ZipWriter;
use zip::write::SimpleFileOptions;

use super::work::{self, Extract};
use super::{PdfError, Produced};
use crate::domain::PageRanges;

/// Parts made at once, on rayon's threads, before they are written to the ZIP.
const PARTS_PER_BATCH: usize = 32;

/// How parts are named in the ZIP: `page-p001.pdf`, `page-p003-007.pdf`. The child does not
/// know the person's file name; the pipeline may put it in place of `page`.
pub const PART_PREFIX: &str = "page";

/// `split`: every page of `input` (or every range of `ranges`) as its own PDF in a ZIP at
/// `output`. `pages` in the result is the document's page count.
///
/// # Errors
///
/// Those of loading (see [`super::optimize()`]), [`PdfError::NoSuchPage`] for a listed page the
/// document lacks, [`PdfError::Io`] when writing fails.
pub fn split(
    input: &Path,
    output: &Path,
    ranges: Option<&PageRanges>,
    max_inflate: usize,
) -> Result<Produced, PdfError> {
    let (input, output, ranges) = (input.to_path_buf(), output.to_path_buf(), ranges.cloned());
    work::on_work_thread(move || {
        let (mut document, page_ids) = work::load_pages(&input, max_inflate)?;
        let parts: Vec<Vec<u32>> = match &ranges {
            Some(ranges) => work::resolve(ranges, page_ids.len())?,
            None => (1..=page_ids.len() as u32).map(|page| vec![page]).collect(),
        };
        let encryption = document.encryption_state.take();
        let digits = page_ids.len().to_string().len().max(3);
        let shared = work::shared_resources(&document, &page_ids);
        // Parts are made on every core, a batch at a time, and written in order by a thread of
        // their own while the next batch is made: two batches of parts are all that is held in
        // memory besides the document.
        let (parts_made, parts_to_write) = mpsc::sync_channel::<(String, Vec<u8>)>(PARTS_PER_BATCH);
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || write_zip(&output, parts_to_write));
            let made = (|| {
                let mut names = HashSet::new();
                for batch in parts.chunks(PARTS_PER_BATCH) {
                    let made: Vec<Vec<u8>> = batch
                        .par_iter()
                        .map(|part| {
                            extract(&document, &shared, &page_ids, part, max_inflate).write(encryption.as_ref())
                        })
                        .collect::<Result<_, PdfError>>()?;
                    for (part, bytes) in batch.iter().zip(made) {
                        if parts_made.send((unique(&mut names, part_name(part, digits)), bytes)).is_err() {
                            // The writer stopped: its error says why.
                            return Ok(());
                        }
                    }
                }
                Ok(())
            })();
            drop(parts_made);
            let page_count = page_ids.len() as u32;
            drop(document);
            let written = writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            made.and(written).map(|output_bytes| Produced { output_bytes, pages: Some(page_count) })
        })
    })
}

/// Writes the parts that come from `parts` into a ZIP at `output`, until the sender is done;
/// the ZIP's size.
pub(super) fn write_zip(output: &Path, parts: mpsc::Receiver<(String, Vec<u8>)>) -> Result<u64, PdfError> {
    // Parts pass the buffer by: only the entries' headers are small enough to gather.
    let mut zip = ZipWriter::new(BufWriter::with_capacity(64 << 10, File::create(output)?));
    // The parts are PDFs with compressed object streams: deflating them again gains little
    // and costs most of the time.
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in parts {
        zip.start_file(name, options).map_err(zip_error)?;
        zip.write_all(&bytes)?;
    }
    let mut writer = zip.finish().map_err(zip_error)?;
    writer.flush()?;
    let file = writer.into_inner().map_err(|error| error.into_error())?;
    Ok(file.metadata()?.len())
}

/// `pages`: the pages `ranges` lists, in that order (a page listed twice appears twice), as one
/// PDF at `output`. `pages` in the result is its page count.
///
/// # Errors
///
/// As [`split`].
pub fn pages(input: &Path, output: &Path, ranges: &PageRanges, max_inflate: usize) -> Result<Produced, PdfError> {
    let (input, output, ranges) = (input.to_path_buf(), output.to_path_buf(), ranges.clone());
    work::on_work_thread(move || {
        let (mut document, page_ids) = work::load_pages(&input, max_inflate)?;
        let listed: Vec<u32> = work::resolve(&ranges, page_ids.len())?.into_iter().flatten().collect();
        let encryption = document.encryption_state.take();
        let shared = work::shared_resources(&document, &page_ids);
        let bytes = extract(&document, &shared, &page_ids, &listed, max_inflate).write(encryption.as_ref())?;
        drop(document);
        work::write_file(&output, &bytes)?;
        Ok(Produced { output_bytes: bytes.len() as u64, pages: Some(listed.len() as u32) })
    })
}

/// The pages `listed` (numbers from 1 into `page_ids`) of `document`, to be written as a file.
pub(super) fn extract<'a>(
    document: &'a Document,
    shared_resources: &'a HashSet<ObjectId>,
    page_ids: &[ObjectId],
    listed: &[u32],
    max_inflate: usize,
) -> Extract<'a> {
    let mut extract = Extract::new(document, shared_resources, max_inflate);
    for &page in listed {
        extract.add_page(page_ids[page as usize - 1]);
    }
    extract
}

/// `page-p003.pdf` for one page, `page-p003-007.pdf` for a run of pages, page numbers padded to
/// `digits`.
pub(super) fn part_name(pages: &[u32], digits: usize) -> String {
    match (pages.first(), pages.last()) {
        (Some(first), Some(last)) if first != last => {
            format!("{PART_PREFIX}-p{first:0digits$}-{last:0digits$}.pdf")
        }
        (Some(first), _) => format!("{PART_PREFIX}-p{first:0digits$}.pdf"),
        _ => format!("{PART_PREFIX}.pdf"),
    }
}

/// `name`, or `name` with `-2`, `-3`… before `.pdf` when a range was listed twice.
fn unique(names: &mut HashSet<String>, name: String) -> String {
    if names.insert(name.clone()) {
        return name;
    }
    let stem = name.trim_end_matches(".pdf");
    let mut n = 2;
    loop {
        let candidate = format!("{stem}-{n}.pdf");
        if names.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}

fn zip_error(error: zip::result::ZipError) -> PdfError {
    match error {
        zip::result::ZipError::Io(io) => PdfError::Io(io),
        other => PdfError::unreadable(format!("writing the ZIP: {other}")),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use crate::pdf::text::page_texts;
    use std::io::Read;

    pub(crate) fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pdf").join(name)
    }

    fn ranges(text: &str) -> PageRanges {
        text.parse().unwrap()
    }

    /// The parts in the ZIP at `path`: name and bytes, in order.
    pub(crate) fn parts(path: &Path) -> Vec<(String, Vec<u8>)> {
        let mut archive = zip::ZipArchive::new(File::open(path).unwrap()).unwrap();
        (0..archive.len())
            .map(|i| {
                let mut entry = archive.by_index(i).unwrap();
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).unwrap();
                (entry.name().unwrap().to_string(), bytes)
            })
            .collect()
    }

    fn texts_of(bytes: &[u8]) -> Vec<String> {
        let document = Document::load_mem(bytes).unwrap();
        page_texts(&document, DEFAULT_MAX_INFLATE_BYTES).unwrap()
    }

    #[test]
    fn split_gives_one_valid_pdf_per_page_with_that_pages_text() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.zip");
        let produced = split(&fixture("text-20pages.pdf"), &output, None, DEFAULT_MAX_INFLATE_BYTES).unwrap();
        assert_eq!(produced.pages, Some(20));
        assert_eq!(produced.output_bytes, std::fs::metadata(&output).unwrap().len());
        let parts = parts(&output);
        assert_eq!(parts.len(), 20);
        for (k, (name, bytes)) in parts.iter().enumerate() {
            assert_eq!(name, &format!("page-p{:03}.pdf", k + 1));
            let texts = texts_of(bytes);
            assert_eq!(texts.len(), 1, "{name}");
            assert!(texts[0].contains(&format!("page {}", k + 1)), "{name}: {}", texts[0]);
        }
    }

    #[test]
    fn split_by_ranges_gives_their_page_counts() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.zip");
        split(&fixture("text-20pages.pdf"), &output, Some(&ranges("3-7,1,18-")), DEFAULT_MAX_INFLATE_BYTES).unwrap();
        let parts = parts(&output);
        let summary: Vec<(&str, usize)> = parts
            .iter()
            .map(|(name, bytes)| (name.as_str(), Document::load_mem(bytes).unwrap().get_pages().len()))
            .collect();
        assert_eq!(summary, [("page-p003-007.pdf", 5), ("page-p001.pdf", 1), ("page-p018-020.pdf", 3)]);
    }

    #[test]
    fn a_part_is_about_as_big_as_its_page_not_the_document() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.zip");
        split(&fixture("text-20pages.pdf"), &output, None, DEFAULT_MAX_INFLATE_BYTES).unwrap();
        let whole = std::fs::metadata(fixture("text-20pages.pdf")).unwrap().len() as usize;
        let total: usize = parts(&output).iter().map(|(_, bytes)| bytes.len()).sum();
        // Each part repeats the fonts, so the sum is larger than the document, but not 20 times.
        assert!(total < whole * 5, "{total} bytes of parts from {whole}");
    }

    #[test]
    fn pages_keeps_the_listed_order_and_repeats() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.pdf");
        let produced =
            pages(&fixture("text-20pages.pdf"), &output, &ranges("3,1,3"), DEFAULT_MAX_INFLATE_BYTES).unwrap();
        assert_eq!(produced.pages, Some(3));
        let texts = texts_of(&std::fs::read(&output).unwrap());
        assert_eq!(texts.len(), 3);
        for (text, page) in texts.iter().zip([3, 1, 3]) {
            assert!(text.contains(&format!("page {page}")), "{text}");
        }
    }

    #[test]
    fn a_missing_page_names_itself_and_the_page_count() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.pdf");
        let result = pages(&fixture("text-20pages.pdf"), &output, &ranges("2,25"), DEFAULT_MAX_INFLATE_BYTES);
        assert!(matches!(result, Err(PdfError::NoSuchPage { page: 25, page_count: 20 })), "{result:?}");
        let result = split(&fixture("text-1page.pdf"), &output, Some(&ranges("1-3")), DEFAULT_MAX_INFLATE_BYTES);
        assert!(matches!(result, Err(PdfError::NoSuchPage { page: 3, page_count: 1 })), "{result:?}");
    }

    #[test]
    fn owner_password_parts_stay_encrypted() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.pdf");
        pages(&fixture("aes256-ownerpw-only.pdf"), &output, &ranges("1,1"), DEFAULT_MAX_INFLATE_BYTES).unwrap();
        let document = Document::load(&output).unwrap();
        assert!(document.encryption_state.is_some());
        assert_eq!(document.get_pages().len(), 2);
    }

    #[test]
    fn reference_loops_and_links_to_other_pages_end() {
        let mut document = crate::pdf::text::tests::document_with_pages(&["", ""]);
        let ids: Vec<ObjectId> = document.page_iter().collect();
        // An object that refers to itself, and an annotation whose /P is the other page.
        let looped = document.new_object_id();
        document.objects.insert(looped, lopdf::Object::Array(vec![lopdf::Object::Reference(looped)]));
        let annotation = document.add_object(lopdf::dictionary! { "Type" => "Annot", "P" => ids[1], "Loop" => looped });
        document.get_dictionary_mut(ids[0]).unwrap().set("Annots", vec![annotation.into()]);
        let shared = work::shared_resources(&document, &ids);
        let mut extract = Extract::new(&document, &shared, DEFAULT_MAX_INFLATE_BYTES);
        extract.add_page(ids[0]);
        let result = Document::load_mem(&extract.write(None).unwrap()).unwrap();
        assert_eq!(result.get_pages().len(), 1);
        // Page, its content, annotation, the loop, page tree, catalog; not the font, which the
        // (empty) content never names in the resources both pages share. The file's object and
        // cross-reference streams aside.
        let objects: Vec<_> = result
            .objects
            .iter()
            .filter(|(_, object)| !matches!(object.type_name(), Ok(b"ObjStm" | b"XRef")))
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(objects.len(), 6, "{objects:?}");
        // The annotation's page is not in the part.
        let annotation = result.objects.values().find(|o| o.type_name().ok() == Some(b"Annot")).unwrap();
        assert_eq!(annotation.as_dict().unwrap().get(b"P").unwrap(), &lopdf::Object::Null);
    }

    /// The objects of a one-page part of `document`'s first page that are fonts.
    fn fonts_in_part(document: &Document) -> usize {
        let ids: Vec<ObjectId> = document.page_iter().collect();
        let shared = work::shared_resources(document, &ids);
        let mut extract = Extract::new(document, &shared, DEFAULT_MAX_INFLATE_BYTES);
        extract.add_page(ids[0]);
        let result = Document::load_mem(&extract.write(None).unwrap()).unwrap();
        result.objects.values().filter(|o| o.type_name().ok() == Some(b"Font")).count()
    }

    #[test]
    fn shared_or_inherited_resources_are_pruned_to_what_the_page_names_and_its_own_are_kept() {
        // Both pages name one resource dictionary: pruned to what the (empty) content uses.
        assert_eq!(fonts_in_part(&crate::pdf::text::tests::document_with_pages(&["", ""])), 0);
        assert_eq!(fonts_in_part(&crate::pdf::text::tests::document_with_pages(&["BT /F1 9 Tf ET", ""])), 1);
        // Inherited from the page tree: pruned too.
        let mut inherited = crate::pdf::text::tests::document_with_pages(&["", ""]);
        let ids: Vec<ObjectId> = inherited.page_iter().collect();
        let resources = inherited.get_dictionary(ids[0]).unwrap().get(b"Resources").unwrap().clone();
        for id in &ids {
            inherited.get_dictionary_mut(*id).unwrap().remove(b"Resources");
        }
        let tree = inherited.get_dictionary(ids[0]).unwrap().get(b"Parent").unwrap().as_reference().unwrap();
        inherited.get_dictionary_mut(tree).unwrap().set("Resources", resources);
        assert_eq!(fonts_in_part(&inherited), 0);
        // The only page's own resources are taken as they are.
        assert_eq!(fonts_in_part(&crate::pdf::text::tests::document_with_pages(&[""])), 1);
    }

    #[test]
    fn a_part_page_hangs_from_its_own_page_tree_and_carries_no_catalog() {
        // Ghostscript numbers the catalog 1 0 obj: a part's page tree gets the same number in
        // the part, and a part must not confuse the two (the catalog drags in the outline and
        // every named destination).
        let mut document = crate::pdf::text::tests::document_with_pages(&["", ""]);
        let catalog_id = document.trailer.get(b"Root").unwrap().as_reference().unwrap();
        let catalog = document.objects.remove(&catalog_id).unwrap();
        let displaced = document.objects.insert((1, 0), catalog).unwrap();
        let moved = document.add_object(displaced);
        for object in document.objects.values_mut() {
            if let Ok(dict) = object.as_dict_mut() {
                for (_, value) in dict.iter_mut() {
                    if value.as_reference().ok() == Some((1, 0)) {
                        *value = lopdf::Object::Reference(moved);
                    }
                }
            }
        }
        document.get_dictionary_mut((1, 0)).unwrap().set("Pages", moved);
        document.get_dictionary_mut((1, 0)).unwrap().set("Outlines", lopdf::dictionary! { "Count" => 0 });
        document.trailer.set("Root", (1, 0));
        let ids: Vec<ObjectId> = document.page_iter().collect();
        assert_eq!(ids.len(), 2);
        let shared = HashSet::new();
        let mut extract = Extract::new(&document, &shared, DEFAULT_MAX_INFLATE_BYTES);
        extract.add_page(ids[0]);
        let result = Document::load_mem(&extract.write(None).unwrap()).unwrap();
        let page = result.get_dictionary(result.page_iter().next().unwrap()).unwrap();
        let parent = result.get_dictionary(page.get(b"Parent").unwrap().as_reference().unwrap()).unwrap();
        assert_eq!(parent.get_type().unwrap(), b"Pages");
        let catalogs = result.objects.values().filter(|o| o.as_dict().is_ok_and(|d| d.has(b"Outlines"))).count();
        assert_eq!(catalogs, 0, "{:?}", result.objects);
    }

    #[test]
    fn part_names_pad_to_the_page_count() {
        assert_eq!(part_name(&[3], 3), "page-p003.pdf");
        assert_eq!(part_name(&[3, 4, 5, 6, 7], 3), "page-p003-007.pdf");
        assert_eq!(part_name(&[12], 4), "page-p0012.pdf");
        let mut names = HashSet::new();
        assert_eq!(unique(&mut names, "a.pdf".into()), "a.pdf");
        assert_eq!(unique(&mut names, "a.pdf".into()), "a-2.pdf");
    }
}
