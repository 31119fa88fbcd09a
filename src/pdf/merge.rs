//! `merge`: several sources, each a PDF or a picture, as one PDF, in the order given (the
//! multi-file jobs: a Telegram album, `/merge`).
//!
//! A PDF gives all its pages, in order; a picture gives the pages `topdf` makes of it
//! ([`super::images`]: a page per image, a JPEG embedded byte for byte). Each part is loaded
//! within the inflate cap, its object numbers shifted past those of the parts before it, and the
//! pages of all parts are then copied into one file as `pages` copies them
//! ([`super::work::Extract`]): one flat page tree, each page carrying what it inherited from
//! its own tree (`/Resources`, `/MediaBox`, `/CropBox`, `/Rotate`), and only the objects the
//! pages reach. Streams are copied as they are, never inflated or deflated again; the file is
//! written by docket's writer, with object streams and a cross-reference stream.
//!
//! **Kept** is everything a page reaches: its content, resources, annotations (a link to a
//! page of the same part points to that page in the result) and what they refer to. **Dropped**
//! is whatever hangs only from a part's catalog or trailer: its outline (bookmarks), named
//! destinations and other `/Names` trees, its interactive form (`/AcroForm`: the fields' widgets
//! stay on their pages, drawn by their appearance streams, but are no longer fields), optional
//! content's catalog entry, its structure tree, metadata and document information, article
//! threads (a page's `/B`). A link by name to a named destination leads nowhere.
//!
//! **A source given twice** (the same file, or another file of the same bytes) is loaded once,
//! and its pages appear again in their places sharing its objects, as qpdf shares them: an
//! album that holds one document twice does not carry its fonts and images twice.
//!
//! **Encrypted parts fail**, even those that open without a password (an owner password
//! only): the merged file is not encrypted, and docket never drops an author's restrictions.
//!
//! **A failure names its part** ([`MergeError::part`], from 1): a part that is encrypted,
//! cannot be read, has no pages, inflates beyond the cap, or is neither a PDF nor a picture
//! fails the whole merge. Parts are loaded two at a time (rayon, one per core); all of them are
//! held in memory until the file is written.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use lopdf::{Document, Object, ObjectId};
use rayon::prelude::*;

use super::work::{self, Extract};
use super::{PdfError, Produced, Settings, images};
use crate::detect;

/// One source of a merge: its file and the format [`crate::detect`] found in it (`"pdf"`,
/// `"jpeg"`, `"png"`, `"tiff"`, `"webp"`, `"gif"`, `"heif"`, `"avif"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeInput {
    /// The source's file.
    pub path: PathBuf,
    /// Its detected format's label ([`crate::detect`]'s `DetectedFormat::label`).
    pub label: String,
}

/// Why a merge failed, and which part failed it.
#[derive(Debug, thiserror::Error)]
#[error("{}: {error}", Culprit(*part))]
pub struct MergeError {
    /// The part at fault, from 1 in the order given; `None` when no part is (writing the
    /// result failed, or there were no parts).
    pub part: Option<usize>,
    /// What went wrong with it.
    pub error: PdfError,
}

/// How a [`MergeError`] names where it happened.
struct Culprit(Option<usize>);

impl std::fmt::Display for Culprit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(part) => write!(f, "part {part}"),
            None => f.write_str("the merged PDF"),
        }
    }
}

/// Merges `inputs`, in order, into one PDF at `output`; `pages` in the result is its page
/// count. The work runs on the guarded work thread (see [`super`]).
///
/// # Errors
///
/// A [`MergeError`] naming the first part, in order, that failed: [`PdfError::Encrypted`] for
/// an encrypted PDF (whatever its passwords), [`PdfError::NotPdf`] for a part that is neither
/// a PDF nor a picture `topdf` reads, and whatever loading a PDF or reading a picture gives
/// ([`super::optimize()`], [`super::images::to_pdf`]). Without a part: [`PdfError::NoPages`],
/// and [`PdfError::Io`] when the result cannot be written, both with no part named.
#[tracing::instrument(name = "pdf_merge", skip_all, fields(parts = inputs.len()))]
pub fn merge(inputs: &[MergeInput], output: &Path, settings: &Settings) -> Result<Produced, MergeError> {
    let (inputs, output, max_inflate) = (inputs.to_vec(), output.to_path_buf(), settings.max_inflate);
    let merged = work::on_work_thread(move || Ok(merge_parts(&inputs, &output, max_inflate)));
    merged.map_err(MergeError::of_result)?
}

/// [`merge`]'s work, on the work thread.
fn merge_parts(inputs: &[MergeInput], output: &Path, max_inflate: usize) -> Result<Produced, MergeError> {
    if inputs.is_empty() {
        return Err(MergeError::of_result(PdfError::NoPages));
    }
    // A source given again is loaded once and its objects are shared, as qpdf shares them.
    let first = first_alike(inputs);
    let distinct: Vec<usize> = (0..inputs.len()).filter(|&index| first[index] == index).collect();
    let loaded: Vec<Result<Part, MergeError>> =
        distinct.par_iter().map(|&index| load_part(index + 1, &inputs[index], max_inflate)).collect();
    let mut parts = Vec::with_capacity(loaded.len());
    for part in loaded {
        parts.push(part?);
    }
    let (document, part_pages) = combine(parts)?;
    let mut extract = Extract::keeping_resources(&document);
    let mut page_count: usize = 0;
    for index in first {
        let Ok(loaded) = distinct.binary_search(&index) else { continue };
        for &page in &part_pages[loaded] {
            extract.add_page(page);
        }
        page_count += part_pages[loaded].len();
    }
    let bytes = extract.write(None).map_err(MergeError::of_result)?;
    drop(document);
    work::write_file(output, &bytes).map_err(|error| MergeError::of_result(error.into()))?;
    let pages = u32::try_from(page_count).unwrap_or(u32::MAX);
    Ok(Produced { output_bytes: bytes.len() as u64, pages: Some(pages) })
}

/// For each input, the index of the first input with the same label and the same content: the
/// same file, or a file of the same size and bytes. Inputs that cannot be read are their own.
fn first_alike(inputs: &[MergeInput]) -> Vec<usize> {
    use std::os::unix::fs::MetadataExt as _;
    let files: Vec<Option<(u64, u64, u64)>> =
        inputs.iter().map(|input| std::fs::metadata(&input.path).ok().map(|m| (m.len(), m.dev(), m.ino()))).collect();
    let mut first = Vec::with_capacity(inputs.len());
    for (index, (input, file)) in inputs.iter().zip(&files).enumerate() {
        let alike = file.and_then(|(len, dev, ino)| {
            (0..index).filter(|&earlier| first[earlier] == earlier).find(|&earlier| {
                let Some((earlier_len, earlier_dev, earlier_ino)) = files[earlier] else { return false };
                inputs[earlier].label == input.label
                    && earlier_len == len
                    && ((earlier_dev, earlier_ino) == (dev, ino) || same_bytes(&inputs[earlier].path, &input.path))
            })
        });
        first.push(alike.unwrap_or(index));
    }
    first
}

/// Whether the files at `a` and `b` hold the same bytes; `false` when either cannot be read.
fn same_bytes(a: &Path, b: &Path) -> bool {
    use std::io::Read as _;
    let (Ok(a), Ok(b)) = (std::fs::File::open(a), std::fs::File::open(b)) else { return false };
    let (mut a, mut b) = (std::io::BufReader::with_capacity(1 << 16, a), std::io::BufReader::with_capacity(1 << 16, b));
    let (mut chunk_a, mut chunk_b) = (vec![0; 1 << 16], vec![0; 1 << 16]);
    loop {
        let Ok(read) = a.read(&mut chunk_a) else { return false };
        if read == 0 {
            return b.read(&mut chunk_b[..1]).is_ok_and(|n| n == 0);
        }
        if b.read_exact(&mut chunk_b[..read]).is_err() || chunk_a[..read] != chunk_b[..read] {
            return false;
        }
    }
}

/// One loaded part: its number from 1, its document, and its pages in order.
struct Part {
    number: usize,
    document: Document,
    pages: Vec<ObjectId>,
}

/// The part `input`, number `part` from 1, loaded; a panic in lopdf or a decoder is this
/// part's [`PdfError::Unreadable`].
fn load_part(part: usize, input: &MergeInput, max_inflate: usize) -> Result<Part, MergeError> {
    let loaded = catch_unwind(AssertUnwindSafe(|| read_part(input, max_inflate)))
        .unwrap_or_else(|payload| Err(PdfError::unreadable(work::panic_message(payload.as_ref()))));
    let (document, pages) = loaded.map_err(|error| MergeError { part: Some(part), error })?;
    Ok(Part { number: part, document, pages })
}

fn read_part(input: &MergeInput, max_inflate: usize) -> Result<(Document, Vec<ObjectId>), PdfError> {
    let label = input.label.as_str();
    let document = if label == "pdf" {
        let bytes = work::read_pdf(&input.path)?;
        let document = work::load(&bytes, max_inflate)?;
        if document.encryption_state.is_some() {
            return Err(PdfError::Encrypted);
        }
        document
    } else if images::PICTURE_LABELS.contains(&label) {
        let bytes = std::fs::read(&input.path)?;
        images::document_of(&input.path, &bytes, max_inflate)?.0
    } else {
        let bytes = std::fs::read(&input.path)?;
        return Err(PdfError::NotPdf { found: detect::detect_bytes(&bytes) });
    };
    let pages = work::page_ids(&document)?;
    Ok((document, pages))
}

/// The parts' objects in one document, each part's numbers shifted past the numbers of the parts
/// before it, and each part's pages in order.
fn combine(parts: Vec<Part>) -> Result<(Document, Vec<Vec<ObjectId>>), MergeError> {
    let mut shifts = Vec::with_capacity(parts.len());
    let mut next: u32 = 0;
    for part in &parts {
        shifts.push(next);
        let last = part.document.objects.keys().next_back().map_or(0, |id| id.0);
        // The writer's numbers must stay below its page tree's placeholder (u32::MAX).
        next = next.checked_add(last).filter(|&n| n < u32::MAX / 2).ok_or_else(|| MergeError {
            part: Some(part.number),
            error: PdfError::unreadable("too many objects in the parts together"),
        })?;
    }
    let version = parts.iter().map(|part| part.document.version.clone()).max().unwrap_or_default();
    let shifted: Vec<Shifted> = parts
        .into_par_iter()
        .zip(shifts)
        .map(|(part, shift)| {
            let objects = part
                .document
                .objects
                .into_iter()
                .map(|((number, generation), mut object)| {
                    shift_references(&mut object, shift);
                    ((number + shift, generation), object)
                })
                .collect();
            let pages = part.pages.into_iter().map(|(number, generation)| (number + shift, generation)).collect();
            (objects, pages)
        })
        .collect();
    let mut pages = Vec::with_capacity(shifted.len());
    let mut objects = Vec::with_capacity(shifted.iter().map(|(objects, _)| objects.len()).sum());
    for (part_objects, part_pages) in shifted {
        objects.extend(part_objects);
        pages.push(part_pages);
    }
    let mut document = Document::with_version(version);
    // In ascending order already: the map is built from them in one pass.
    document.objects = objects.into_iter().collect::<BTreeMap<_, _>>();
    Ok((document, pages))
}

/// One part's objects under their shifted numbers, and its pages' shifted ids.
type Shifted = (Vec<(ObjectId, Object)>, Vec<ObjectId>);

/// Adds `shift` to the number of every reference in `object`.
fn shift_references(object: &mut Object, shift: u32) {
    match object {
        Object::Reference((number, _)) => *number += shift,
        Object::Array(items) => items.iter_mut().for_each(|item| shift_references(item, shift)),
        Object::Dictionary(dict) => dict.iter_mut().for_each(|(_, value)| shift_references(value, shift)),
        Object::Stream(stream) => stream.dict.iter_mut().for_each(|(_, value)| shift_references(value, shift)),
        _ => {}
    }
}

impl MergeError {
    /// `error` of the result as a whole, no part at fault.
    fn of_result(error: PdfError) -> Self {
        Self { part: None, error }
    }
}

#[cfg(test)]
mod tests {
    use lopdf::{Document, Object};

    use super::*;
    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use crate::pdf::shrink::tests::{jpeg, picture};
    use crate::pdf::split::tests::fixture;
    use crate::pdf::text::page_texts;

    fn pdf(name: &str) -> MergeInput {
        MergeInput { path: fixture(name), label: "pdf".to_owned() }
    }

    fn run(inputs: &[MergeInput]) -> (tempfile::TempDir, Result<Produced, MergeError>, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("merged.pdf");
        let result = merge(inputs, &output, &Settings::with_max_inflate(DEFAULT_MAX_INFLATE_BYTES));
        (dir, result, output)
    }

    #[test]
    fn two_pdfs_give_all_their_pages_in_order() {
        let (_dir, result, output) = run(&[pdf("text-20pages.pdf"), pdf("text-1page.pdf")]);
        let produced = result.unwrap();
        assert_eq!(produced.pages, Some(21));
        assert_eq!(produced.output_bytes, std::fs::metadata(&output).unwrap().len());
        let document = Document::load(&output).unwrap();
        let texts = page_texts(&document, DEFAULT_MAX_INFLATE_BYTES).unwrap();
        assert_eq!(texts.len(), 21);
        for (k, text) in texts[..20].iter().enumerate() {
            assert!(text.contains(&format!("page {}", k + 1)), "page {}: {text}", k + 1);
        }
        assert!(texts[20].contains("page 1"), "{}", texts[20]);
    }

    #[test]
    fn the_result_loads_again_with_one_page_tree_and_no_other_catalog_entries() {
        let (_dir, result, output) = run(&[pdf("text-1page.pdf"), pdf("scan-2pages.pdf"), pdf("text-1page.pdf")]);
        result.unwrap();
        let document = Document::load(&output).unwrap();
        assert_eq!(document.get_pages().len(), 4);
        let catalog = document.catalog().unwrap();
        let keys: Vec<&[u8]> = catalog.iter().map(|(key, _)| key.as_slice()).collect();
        assert_eq!(keys, [b"Type".as_slice(), b"Pages"]);
        let catalogs = document
            .objects
            .values()
            .filter(|object| object.as_dict().is_ok_and(|d| d.get_type().ok() == Some(b"Catalog".as_slice())))
            .count();
        assert_eq!(catalogs, 1, "only the result's own catalog");
        // Every page has what it inherited, and hangs from the one page tree.
        let root = catalog.get(b"Pages").unwrap().as_reference().unwrap();
        for page in document.page_iter() {
            let page = document.get_dictionary(page).unwrap();
            assert_eq!(page.get(b"Parent").unwrap().as_reference().unwrap(), root);
            assert!(page.has(b"MediaBox") && page.has(b"Resources"));
        }
        // Written compact: object streams and a cross-reference stream.
        let bytes = std::fs::read(&output).unwrap();
        assert!(bytes.windows(4).any(|w| w == b"XRef"));
        assert!(bytes.windows(6).any(|w| w == b"ObjStm"));
    }

    #[test]
    fn a_jpeg_and_a_pdf_merge_in_order_the_jpeg_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let photo = dir.path().join("photo");
        let bytes = jpeg(&picture(320, 200, 3), 320, 200, 3);
        std::fs::write(&photo, &bytes).unwrap();
        let inputs = [MergeInput { path: photo, label: "jpeg".to_owned() }, pdf("text-1page.pdf")];
        let (_dir, result, output) = run(&inputs);
        assert_eq!(result.unwrap().pages, Some(2));
        let document = Document::load(&output).unwrap();
        let pages = document.get_pages();
        let first = document.get_dictionary(pages[&1]).unwrap();
        let resources = first.get(b"Resources").unwrap().as_dict().unwrap();
        let image = resources.get(b"XObject").unwrap().as_dict().unwrap().get(b"Im0").unwrap();
        let image = document.get_object(image.as_reference().unwrap()).unwrap().as_stream().unwrap();
        assert_eq!(image.dict.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
        assert_eq!(image.content, bytes, "the JPEG's bytes as they were");
        let media_box = first.get(b"MediaBox").unwrap().as_array().unwrap();
        assert_eq!(media_box[2].as_float().unwrap(), 320.0, "the page topdf makes");
        let texts = page_texts(&document, DEFAULT_MAX_INFLATE_BYTES).unwrap();
        assert!(texts[1].contains("page 1"), "{}", texts[1]);
    }

    #[test]
    fn an_encrypted_part_fails_the_merge_naming_it() {
        let (_dir, result, output) = run(&[pdf("text-1page.pdf"), pdf("aes256-userpw.pdf")]);
        let error = result.unwrap_err();
        assert_eq!(error.part, Some(2));
        assert!(matches!(error.error, PdfError::Encrypted), "{error:?}");
        assert!(error.to_string().starts_with("part 2: the PDF is encrypted"), "{error}");
        assert!(!output.exists());
    }

    #[test]
    fn an_owner_password_part_fails_too_so_no_restriction_is_dropped() {
        let (_dir, result, _output) = run(&[pdf("aes256-ownerpw-only.pdf"), pdf("text-1page.pdf")]);
        let error = result.unwrap_err();
        assert_eq!(error.part, Some(1));
        assert!(matches!(error.error, PdfError::Encrypted), "{error:?}");
    }

    #[test]
    fn a_broken_part_names_itself() {
        let inputs = [pdf("text-1page.pdf"), pdf("text-1page.pdf"), pdf("truncated.pdf")];
        let (_dir, result, _output) = run(&inputs);
        let error = result.unwrap_err();
        assert_eq!(error.part, Some(3));
        assert!(matches!(error.error, PdfError::Unreadable { .. }), "{error:?}");
        assert!(error.to_string().starts_with("part 3: "), "{error}");
    }

    #[test]
    fn a_part_that_is_neither_pdf_nor_picture_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        let zip = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/other/stored-pdf.zip");
        let inputs = [pdf("text-1page.pdf"), MergeInput { path: zip.clone(), label: "zip".to_owned() }];
        let (_dir, result, _output) = run(&inputs);
        let error = result.unwrap_err();
        assert_eq!(error.part, Some(2));
        assert!(matches!(error.error, PdfError::NotPdf { .. }), "{error:?}");
        // A label that says PDF does not make one.
        let (_dir, result, _output) = run(&[MergeInput { path: zip, label: "pdf".to_owned() }]);
        assert!(matches!(result.unwrap_err(), MergeError { part: Some(1), error: PdfError::NotPdf { .. } }));
        drop(dir);
    }

    /// `name` written again with its objects in object streams, into `dir`.
    fn with_object_streams(dir: &Path, name: &str) -> MergeInput {
        let document = Document::load(fixture(name)).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, crate::pdf::file_writer::save(&document, None, 200, 6).unwrap()).unwrap();
        MergeInput { path, label: "pdf".to_owned() }
    }

    #[test]
    fn a_part_that_inflates_too_much_names_itself() {
        let dir = tempfile::tempdir().unwrap();
        let packed = with_object_streams(dir.path(), "text-20pages.pdf");
        let output = dir.path().join("merged.pdf");
        // Below what the object streams inflate to; text-1page has none.
        let settings = Settings::with_max_inflate(256);
        let error = merge(&[pdf("text-1page.pdf"), packed], &output, &settings).unwrap_err();
        assert_eq!(error.part, Some(2), "{error}");
        assert!(matches!(error.error, PdfError::InflatesTooMuch { limit: 256 }), "{error:?}");
    }

    #[test]
    fn a_source_given_again_is_shared_not_copied() {
        let dir = tempfile::tempdir().unwrap();
        let copy = dir.path().join("copy.pdf");
        std::fs::copy(fixture("text-20pages.pdf"), &copy).unwrap();
        let (_once, once, _) = run(&[pdf("text-20pages.pdf")]);
        let again =
            [pdf("text-20pages.pdf"), pdf("text-1page.pdf"), MergeInput { path: copy, label: "pdf".to_owned() }];
        let (_twice, twice, output) = run(&again);
        let (once, twice) = (once.unwrap(), twice.unwrap());
        assert_eq!(twice.pages, Some(41));
        // The second copy adds its page dictionaries, not its fonts and contents again.
        assert!(
            twice.output_bytes < once.output_bytes * 3 / 2,
            "{} bytes, once {}",
            twice.output_bytes,
            once.output_bytes
        );
        let texts = page_texts(&Document::load(&output).unwrap(), DEFAULT_MAX_INFLATE_BYTES).unwrap();
        assert!(texts[20].contains("page 1") && texts[21].contains("page 1") && texts[40].contains("page 20"));
    }

    #[test]
    fn no_parts_is_no_pages() {
        let (_dir, result, _output) = run(&[]);
        assert!(matches!(result.unwrap_err(), MergeError { part: None, error: PdfError::NoPages }));
    }

    #[test]
    fn a_link_to_a_page_of_its_part_points_to_that_page_in_the_result() {
        let dir = tempfile::tempdir().unwrap();
        let mut document = crate::pdf::text::tests::document_with_pages(&["", ""]);
        let ids: Vec<_> = document.page_iter().collect();
        let dest = vec![Object::Reference(ids[1]), Object::Name(b"Fit".to_vec())];
        let link = document.add_object(lopdf::dictionary! { "Type" => "Annot", "Subtype" => "Link", "Dest" => dest });
        document.get_dictionary_mut(ids[0]).unwrap().set("Annots", vec![link.into()]);
        let linked = dir.path().join("linked.pdf");
        document.save(&linked).unwrap();
        let inputs = [pdf("text-1page.pdf"), MergeInput { path: linked, label: "pdf".to_owned() }];
        let (_out, result, output) = run(&inputs);
        assert_eq!(result.unwrap().pages, Some(3));
        let merged = Document::load(&output).unwrap();
        let pages = merged.get_pages();
        let annots = merged.get_dictionary(pages[&2]).unwrap().get(b"Annots").unwrap().as_array().unwrap();
        let link = merged.get_dictionary(annots[0].as_reference().unwrap()).unwrap();
        let dest = link.get(b"Dest").unwrap().as_array().unwrap();
        assert_eq!(dest[0].as_reference().unwrap(), pages[&3]);
    }
}
