//! PDF work with lopdf: the built-in operations on files in the spool (`optimize` in
//! [`optimize`](mod@optimize), `shrink` in [`shrink`](mod@shrink), `topdf` in [`images`],
//! `split` and `pages` in [`split`](mod@split), `text` in [`text`](mod@text), `info` in
//! [`info`](mod@info), `rotate` in [`rotate`](mod@rotate), `decrypt` in [`decrypt`](mod@decrypt)).
//!
//! This module owns every lopdf call in docket; lopdf types never leave it. Its work is
//! synchronous, CPU-heavy and unbounded in memory, so docket calls it only in the child process
//! of a contained run ([`crate::operations::child`]), never in the service. It must not import the store, Telegram, tokio or the domain's
//! state machines; it only reads one path and writes another, whose names the caller chooses.
//!
//! # Hostile input
//!
//! Every file comes from a stranger, so [`optimize()`] and every other operation here (through
//! one shared guard) assume the worst:
//!
//! - **Panics.** All lopdf work runs under [`std::panic::catch_unwind`]; a panic becomes
//!   [`PdfError::Unreadable`] and the worker lives on. The default panic hook still prints the
//!   panic message to stderr.
//! - **Deep nesting.** A stack overflow aborts the process and cannot be caught, so the work
//!   runs on a dedicated thread with a [`WORK_STACK_BYTES`] stack. lopdf's parser also stops at
//!   100 levels of nested arrays and dictionaries, and its page-tree walk at 256 levels, so the
//!   large stack is a second line of defence for the code that recurses over what was parsed
//!   (saving, pruning). With lopdf's default `rayon` feature, large files are parsed on rayon's
//!   pool, whose threads have the default stack; the parser's nesting cap is what protects them.
//! - **Decompression bombs.** Loading decodes object streams and cross-reference streams, each
//!   capped at the caller's `max_inflate` (`[processing] max_inflate`, by default
//!   [`DEFAULT_MAX_INFLATE_BYTES`]); a larger one fails with [`PdfError::InflatesTooMuch`]. The
//!   same cap bounds every stream the operations decode afterwards: `optimize` inflating a
//!   Flate stream to deflate it again ([`optimize`](mod@optimize)), `shrink` decoding an image
//!   or a page's content ([`shrink`](mod@shrink)), `topdf` decoding an image ([`images`]),
//!   `text` decoding content streams, Form XObjects, CMaps and Type 1 font programs. `split`,
//!   `pages`, `rotate` and `decrypt` decode nothing of the pages.
//! - **Reference loops.** Pruning marks visited objects, dereferencing gives up after a bounded
//!   chain, and the page-tree walk visits at most as many nodes as there are objects, so a loop
//!   ends as an error or a wrong page count, never as a hang. Copying pages copies each object
//!   once, inherited page attributes are looked up at most 256 ancestors up, and `text` follows
//!   Form XObjects at most 12 deep and runs at most ten million operators per page.
//!
//! Not protected against, so the caller must bound them:
//!
//! - **Total memory.** The whole input is read into memory and parsed; parsed objects take
//!   several times the bytes they came from, and the per-stream cap does not bound the sum over
//!   many object streams. The service therefore never calls this in its own process: it runs
//!   in a child process under an address-space limit ([`crate::operations`]).
//! - **Time.** lopdf cannot be interrupted. Work is roughly linear in the input size, but there
//!   is no deadline here: the child process that runs it is killed when its time is up.
//!
//! # Encryption
//!
//! A PDF that needs a user password is refused with [`PdfError::Encrypted`]: we have no password
//! and do not ask for one. A PDF encrypted with an owner password only (an empty user password,
//! used to restrict printing or copying) opens without a password; it is optimized and then
//! encrypted again with the same key, handler and permission flags, so the result opens, and
//! restricts, exactly as the original did. Docket never strips an author's restrictions. Every
//! operation here writes its result with docket's own writer (`file_writer`), which packs an
//! encrypted file's objects into encrypted object streams as it does an unencrypted one's; if
//! `optimize` would not shrink the file, the original is kept as always.

use std::any::Any;
use std::fs::File;
use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::Instant;

use lopdf::{Document, LoadOptions, Object};

use crate::detect::{self, DetectedFormat};
use crate::domain::Operation;

mod ccitt;
pub mod decrypt;
mod file_writer;
pub mod images;
pub mod info;
pub mod optimize;
pub mod rotate;
pub mod shrink;
pub mod split;
pub mod text;
mod work;

/// What a built-in operation produced at its output path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Produced {
    /// The output's size.
    pub output_bytes: u64,
    /// Its pages, when the operation counted them.
    pub pages: Option<u32>,
}

impl From<OptimizeReport> for Produced {
    fn from(report: OptimizeReport) -> Self {
        Self { output_bytes: report.output_bytes, pages: Some(report.pages) }
    }
}

/// What a built-in operation may use beside its input and output: its inflate cap, and the
/// settings of the lossy operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// The largest size any one stream (or decoded image) may inflate to (`[processing]
    /// max_inflate`).
    pub max_inflate: usize,
    /// What `shrink` aims at.
    pub shrink: ShrinkSettings,
    /// The language of the lines an operation writes for people into its result (`text`'s
    /// "page 3 has no text").
    pub lang: crate::texts::Lang,
}

impl Settings {
    /// The defaults, with `max_inflate` as the inflate cap.
    pub fn with_max_inflate(max_inflate: usize) -> Self {
        Self { max_inflate, shrink: ShrinkSettings::default(), lang: crate::texts::Lang::ENGLISH }
    }
}

/// `shrink`'s target: `[processing] shrink_dpi` and `jpeg_quality`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShrinkSettings {
    /// Images whose resolution on the page is above this are downsampled to it.
    pub dpi: u32,
    /// The quality (1–100) of the JPEGs the downsampled images are written as.
    pub jpeg_quality: u8,
}

/// `shrink_dpi` when not set: Ghostscript's `/ebook` resolution.
pub const DEFAULT_SHRINK_DPI: u32 = 150;
/// `jpeg_quality` when not set.
pub const DEFAULT_JPEG_QUALITY: u8 = 75;

impl Default for ShrinkSettings {
    fn default() -> Self {
        Self { dpi: DEFAULT_SHRINK_DPI, jpeg_quality: DEFAULT_JPEG_QUALITY }
    }
}

/// Runs a built-in operation from `input` into `output` with `settings`.
pub fn run(operation: &Operation, input: &Path, output: &Path, settings: &Settings) -> Result<Produced, PdfError> {
    let max_inflate = settings.max_inflate;
    match operation {
        Operation::Optimize => optimize(input, output, max_inflate).map(Produced::from),
        Operation::Shrink => shrink::shrink(input, output, settings).map(Produced::from),
        Operation::ToPdf => images::to_pdf(input, output, settings).map(Produced::from),
        Operation::Split { ranges } => split::split(input, output, ranges.as_ref(), max_inflate),
        Operation::Pages { ranges } => split::pages(input, output, ranges, max_inflate),
        Operation::Text => text::text(input, output, max_inflate, settings.lang),
        Operation::Info => info::info(input, output, max_inflate),
        Operation::Rotate { angle, pages } => rotate::rotate(input, output, *angle, pages.as_ref(), max_inflate),
        Operation::Decrypt { password } => decrypt::decrypt(input, output, password, max_inflate),
        // OCR is an external program (`[processing.external.ocr]`), never a built-in.
        Operation::Ocr { .. } => Err(PdfError::Unreadable { detail: "ocr runs an external program".to_owned() }),
    }
}

/// Stack size of the thread that runs the lopdf work in [`optimize()`].
pub const WORK_STACK_BYTES: usize = 64 * 1024 * 1024;

/// Largest size, in bytes, that any one object stream or cross-reference stream may decode to
/// while a PDF is loaded, unless the caller says otherwise (`[processing] max_inflate`). Real
/// files stay far below it (an object stream holds about a hundred small objects; a
/// cross-reference stream for a million objects is about 7 MB).
pub const DEFAULT_MAX_INFLATE_BYTES: usize = 256 * 1024 * 1024;

/// How many objects go into one object stream when saving; larger groups compress better.
const OBJECTS_PER_STREAM: usize = 200;

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

/// Why [`optimize()`] failed. Every variant except [`PdfError::Io`] and
/// [`PdfError::ToolMissing`] (the machine's) is a property of the input and will not change on
/// retry.
#[derive(Debug, thiserror::Error)]
pub enum PdfError {
    /// The PDF is encrypted with a user password, which we do not have, or with a security
    /// handler lopdf does not support.
    #[error("the PDF is encrypted and cannot be opened without a password")]
    Encrypted,
    /// The content is not a PDF by [`detect::detect_bytes`], whatever its name says.
    #[error("the input is not a PDF but {}", found.describe())]
    NotPdf {
        /// What the content is instead.
        found: DetectedFormat,
    },
    /// The PDF's structure is broken or hostile beyond repair: lopdf could not load or save it,
    /// it has no document catalog or page tree, or lopdf panicked on it.
    #[error("the PDF could not be read: {detail}")]
    Unreadable {
        /// What went wrong, for logs; never shown to users.
        detail: String,
    },
    /// A stream inflates to more than the cap the caller set: a decompression bomb, or a file
    /// this machine is not configured for.
    #[error("a stream inflates to more than {limit} bytes")]
    InflatesTooMuch {
        /// The cap in force, in bytes.
        limit: usize,
    },
    /// The PDF loaded and has a page tree, but the tree holds no pages.
    #[error("the PDF has no pages")]
    NoPages,
    /// A page list names a page the document does not have.
    #[error("the PDF has no page {page}: it has {page_count} pages")]
    NoSuchPage {
        /// The first listed page that is missing.
        page: u32,
        /// The pages the document has.
        page_count: u32,
    },
    /// `decrypt` was given a password that does not open the PDF.
    #[error("the password does not open the PDF")]
    WrongPassword,
    /// A program the operation needs for this input is not installed on this machine
    /// (`heif-convert` for a HEIC photo): its setup is at fault, not the document.
    #[error("{program} is not installed: install the Debian package {package}")]
    ToolMissing {
        /// The program.
        program: &'static str,
        /// The package that has it.
        package: &'static str,
    },
    /// Reading the input or writing the output failed, disk full included. The only variant
    /// worth retrying.
    #[error("reading the input or writing the output failed")]
    Io(#[from] std::io::Error),
}

impl PdfError {
    fn unreadable(detail: impl std::fmt::Display) -> Self {
        Self::Unreadable { detail: detail.to_string() }
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
/// See the module docs for what this protects against and what it leaves to the caller.
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
pub(crate) fn rewrite_file(
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

/// Runs `work` on a thread with a [`WORK_STACK_BYTES`] stack, a panic in it becoming
/// [`PdfError::Unreadable`].
pub(crate) fn on_work_thread<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, PdfError> + Send + 'static,
) -> Result<T, PdfError> {
    let span = tracing::Span::current();
    let worker =
        std::thread::Builder::new().name("docket-pdf".to_owned()).stack_size(WORK_STACK_BYTES).spawn(move || {
            let _entered = span.enter();
            catch_unwind(AssertUnwindSafe(work))
                .map_err(|payload| PdfError::unreadable(panic_message(payload.as_ref())))
        })?;
    // A panic that still escapes (one in the panic handling) lands here.
    worker.join().map_err(|payload| PdfError::unreadable(panic_message(payload.as_ref())))??
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
    optimize::compress_streams(&mut document, max_inflate)?;
    document.prune_objects();
    optimize::merge_identical_streams(&mut document);
    document.prune_objects();
    document.renumber_objects();
    // In memory: the result is smaller than the input, which is in memory already.
    let saved = file_writer::save(&document, encryption.as_ref(), OBJECTS_PER_STREAM, optimize::BEST_LEVEL)?;
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

fn load_options(max_inflate: usize) -> LoadOptions {
    LoadOptions { max_decompressed_size: Some(max_inflate), ..LoadOptions::default() }
}

/// Loads a PDF without a password; lopdf opens one with an empty user password by itself.
pub(crate) fn load(bytes: &[u8], max_inflate: usize) -> Result<Document, PdfError> {
    let document = Document::load_mem_with_options(bytes, load_options(max_inflate)).map_err(|error| match error {
        lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit }) => {
            PdfError::InflatesTooMuch { limit }
        }
        lopdf::Error::InvalidPassword | lopdf::Error::UnsupportedSecurityHandler(_) | lopdf::Error::Decryption(_) => {
            PdfError::Encrypted
        }
        other => PdfError::unreadable(format!("loading: {other}")),
    })?;
    // lopdf removes `/Encrypt` from the trailer once it has decrypted a document; if it is still
    // there, lopdf could not authenticate and loaded nothing.
    if document.trailer.has(b"Encrypt") {
        return Err(PdfError::Encrypted);
    }
    if let Some(recovery) = document.xref_recovery {
        tracing::debug!(?recovery, "repaired the cross-reference data of a damaged PDF");
    }
    Ok(document)
}

/// The number of pages, or why there is no page tree to count.
pub(crate) fn count_pages(document: &Document) -> Result<u32, PdfError> {
    let has_page_tree =
        document.catalog().and_then(|catalog| catalog.get_deref(b"Pages", document)).and_then(Object::as_dict).is_ok();
    if !has_page_tree {
        return Err(PdfError::unreadable("no document catalog or page tree"));
    }
    let pages = document.page_iter().count();
    match u32::try_from(pages) {
        Ok(0) => Err(PdfError::NoPages),
        Ok(pages) => Ok(pages),
        Err(_) => Err(PdfError::unreadable(format!("{pages} pages"))),
    }
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    File::create(path)?.write_all(bytes)
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message");
    format!("lopdf panicked: {message}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::{Dictionary, Stream};
    use std::path::PathBuf;

    const VALID: &[(&str, u32)] = &[
        ("pdf/text-1page.pdf", 1),
        ("pdf/text-20pages.pdf", 20),
        ("pdf/scan-2pages.pdf", 2),
        ("pdf/aes256-ownerpw-only.pdf", 1),
        ("pdf/junk-prefix-512.pdf", 1),
    ];

    fn fixture(relative: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(relative)
    }

    /// [`super::optimize()`] with the default inflate cap.
    fn optimize(input: &Path, output: &Path) -> Result<OptimizeReport, PdfError> {
        super::optimize(input, output, DEFAULT_MAX_INFLATE_BYTES)
    }

    fn optimize_fixture(name: &str) -> (tempfile::TempDir, PathBuf, Result<OptimizeReport, PdfError>) {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.pdf");
        let result = optimize(&fixture(name), &output);
        (dir, output, result)
    }

    fn optimize_bytes(bytes: &[u8]) -> Result<OptimizeReport, PdfError> {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.pdf");
        std::fs::write(&input, bytes).unwrap();
        optimize(&input, &dir.path().join("out.pdf"))
    }

    /// A PDF whose objects 1..=n are `bodies`, with a correct cross-reference table.
    fn assemble(bodies: &[&[u8]]) -> Vec<u8> {
        let mut pdf = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
        let mut offsets = Vec::new();
        for (index, body) in bodies.iter().enumerate() {
            offsets.push(pdf.len());
            pdf.extend_from_slice(format!("{} 0 obj\n", index + 1).as_bytes());
            pdf.extend_from_slice(body);
            pdf.extend_from_slice(b"\nendobj\n");
        }
        let xref = pdf.len();
        pdf.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", bodies.len() + 1).as_bytes());
        for offset in offsets {
            pdf.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
        }
        pdf.extend_from_slice(
            format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", bodies.len() + 1).as_bytes(),
        );
        pdf
    }

    const CATALOG: &[u8] = b"<< /Type /Catalog /Pages 2 0 R >>";
    const PAGES: &[u8] = b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>";
    const PAGE: &[u8] = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] /Contents 4 0 R >>";
    const CONTENT: &[u8] = b"<< /Length 15 >>\nstream\n0 0 m 10 10 l S\nendstream";

    #[test]
    fn valid_fixtures_optimize_to_loadable_pdfs_with_the_same_pages() {
        for &(name, pages) in VALID {
            let (_dir, output, result) = optimize_fixture(name);
            let report = result.unwrap_or_else(|error| panic!("{name}: {error}"));
            let input_bytes = std::fs::metadata(fixture(name)).unwrap().len();
            let written = std::fs::read(&output).unwrap();
            assert_eq!(report.pages, pages, "{name}");
            assert_eq!(report.input_bytes, input_bytes, "{name}");
            assert_eq!(report.output_bytes, written.len() as u64, "{name}");
            assert!(report.output_bytes <= report.input_bytes, "{name}: {report:?}");
            let reloaded = Document::load_mem(&written).unwrap();
            assert_eq!(reloaded.get_pages().len(), pages as usize, "{name}");
            assert!(detect::detect_bytes(&written).is_pdf(), "{name}");
        }
    }

    #[test]
    fn text_pdf_gets_smaller() {
        let (_dir, _output, result) = optimize_fixture("pdf/text-20pages.pdf");
        let report = result.unwrap();
        assert!(!report.kept_original(), "{report:?}");
        assert!(report.saved_bytes() > 0);
    }

    #[test]
    fn kept_original_is_a_byte_copy() {
        // img2pdf writes a minimal PDF around JPEG data that is already compressed, so there is
        // little to gain; whichever way it goes, the output matches the report.
        let (_dir, output, result) = optimize_fixture("pdf/scan-2pages.pdf");
        let report = result.unwrap();
        if report.kept_original() {
            let original = std::fs::read(fixture("pdf/scan-2pages.pdf")).unwrap();
            assert_eq!(std::fs::read(output).unwrap(), original);
        }
    }

    #[test]
    fn a_bigger_result_is_replaced_by_the_original() {
        // Already as small as lopdf can write it: optimizing once more cannot shrink it.
        let (_dir, first, result) = optimize_fixture("pdf/text-20pages.pdf");
        result.unwrap();
        let once = std::fs::read(&first).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("twice.pdf");
        let report = optimize(&first, &output).unwrap();
        assert!(report.kept_original(), "{report:?}");
        assert_eq!(report.output_bytes, once.len() as u64);
        assert_eq!(std::fs::read(&output).unwrap(), once);
    }

    #[test]
    fn user_password_pdf_is_encrypted() {
        let (_dir, _output, result) = optimize_fixture("pdf/aes256-userpw.pdf");
        assert!(matches!(result, Err(PdfError::Encrypted)), "{result:?}");
    }

    #[test]
    fn owner_password_pdf_stays_encrypted_with_its_permissions() {
        let (_dir, output, result) = optimize_fixture("pdf/aes256-ownerpw-only.pdf");
        let report = result.unwrap();
        let written = std::fs::read(&output).unwrap();
        let original = Document::load(fixture("pdf/aes256-ownerpw-only.pdf")).unwrap();
        let reloaded = Document::load_mem(&written).unwrap();
        let original_state = original.encryption_state.as_ref().unwrap();
        let reloaded_state = reloaded.encryption_state.as_ref().expect("the output must still be encrypted");
        assert_eq!(reloaded_state.permissions(), original_state.permissions());
        assert_eq!(reloaded_state.revision(), original_state.revision());
        assert_eq!(reloaded.get_pages().len(), report.pages as usize);
        // The content decrypts to the same text: the page still draws its heading.
        let page = *reloaded.get_pages().get(&1).unwrap();
        let content = reloaded.get_page_content(page);
        let needle = b"docket fixture, page ";
        assert!(content.windows(needle.len()).any(|window| window == needle));
    }

    #[test]
    fn truncated_pdf_is_unreadable() {
        let (_dir, _output, result) = optimize_fixture("pdf/truncated.pdf");
        assert!(matches!(result, Err(PdfError::Unreadable { .. })), "{result:?}");
    }

    #[test]
    fn header_only_pdf_is_unreadable() {
        let result = optimize_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n");
        assert!(matches!(result, Err(PdfError::Unreadable { .. })), "{result:?}");
    }

    #[test]
    fn empty_page_tree_is_no_pages() {
        let result = optimize_bytes(&assemble(&[CATALOG, b"<< /Type /Pages /Kids [] /Count 0 >>"]));
        assert!(matches!(result, Err(PdfError::NoPages)), "{result:?}");
    }

    #[test]
    fn png_is_not_a_pdf() {
        let (_dir, _output, result) = optimize_fixture("other/red-8x8.png");
        match result {
            Err(PdfError::NotPdf { found }) => assert_eq!(found.label(), "png"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn zip_storing_a_pdf_is_not_a_pdf() {
        // lopdf alone would find the stored PDF's header and optimize that.
        let (_dir, _output, result) = optimize_fixture("other/stored-pdf.zip");
        match result {
            Err(PdfError::NotPdf { found }) => assert_eq!(found.label(), "zip"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn header_beyond_the_window_is_not_a_pdf() {
        let mut bytes = vec![b'j'; 2048];
        bytes.extend(std::fs::read(fixture("pdf/text-1page.pdf")).unwrap());
        let result = optimize_bytes(&bytes);
        assert!(matches!(result, Err(PdfError::NotPdf { .. })), "{result:?}");
    }

    #[test]
    fn empty_file_is_not_a_pdf() {
        match optimize_bytes(b"") {
            Err(PdfError::NotPdf { found }) => assert_eq!(found, DetectedFormat::Unknown),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_input_is_io() {
        let dir = tempfile::tempdir().unwrap();
        let result = optimize(&dir.path().join("absent.pdf"), &dir.path().join("out.pdf"));
        assert!(matches!(result, Err(PdfError::Io(_))), "{result:?}");
    }

    #[test]
    fn unwritable_output_is_io() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("no-such-dir").join("out.pdf");
        let result = optimize(&fixture("pdf/text-1page.pdf"), &output);
        assert!(matches!(result, Err(PdfError::Io(_))), "{result:?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn disk_full_is_io() {
        let result = optimize(&fixture("pdf/text-20pages.pdf"), Path::new("/dev/full"));
        match result {
            Err(PdfError::Io(error)) => assert_eq!(error.kind(), std::io::ErrorKind::StorageFull),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn output_is_truncated_first() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.pdf");
        std::fs::write(&output, vec![b'x'; 1 << 20]).unwrap();
        let report = optimize(&fixture("pdf/text-1page.pdf"), &output).unwrap();
        assert_eq!(std::fs::metadata(&output).unwrap().len(), report.output_bytes);
    }

    #[test]
    fn assembled_document_optimizes() {
        let report = optimize_bytes(&assemble(&[CATALOG, PAGES, PAGE, CONTENT])).unwrap();
        assert_eq!(report.pages, 1);
    }

    #[test]
    fn page_tree_loop_does_not_hang() {
        let looped = b"<< /Type /Pages /Kids [3 0 R 2 0 R] /Count 1 >>";
        let result = optimize_bytes(&assemble(&[CATALOG, looped, PAGE, CONTENT]));
        // lopdf may count a page it reaches twice twice; what matters is that it ends.
        assert!(result.is_ok() || matches!(result, Err(PdfError::Unreadable { .. })), "{result:?}");
    }

    #[test]
    fn reference_cycle_between_objects_does_not_hang() {
        let catalog = b"<< /Type /Catalog /Pages 2 0 R /Loop 5 0 R >>";
        let bytes = assemble(&[catalog, PAGES, PAGE, CONTENT, b"[6 0 R]", b"[5 0 R]"]);
        assert_eq!(optimize_bytes(&bytes).unwrap().pages, 1);
    }

    #[test]
    fn dangling_indirect_length_is_written_directly() {
        // Object 4's /Length points at object 5, which does not exist; lopdf recovers the
        // length from `endstream`. The output must not keep the dangling reference.
        let content = b"<< /Length 5 0 R >>\nstream\n0 0 m 10 10 l S\nendstream";
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.pdf");
        let output = dir.path().join("out.pdf");
        std::fs::write(&input, assemble(&[CATALOG, PAGES, PAGE, content])).unwrap();
        optimize(&input, &output).unwrap();
        let reloaded = Document::load(&output).unwrap();
        for object in reloaded.objects.values() {
            if let Ok(stream) = object.as_stream() {
                let length = stream.dict.get(b"Length").unwrap();
                assert!(length.as_i64().is_ok(), "/Length is {length:?}");
            }
        }
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let mut deep = vec![b'['; 500_000];
        deep.extend(std::iter::repeat_n(b']', 500_000));
        let catalog = b"<< /Type /Catalog /Pages 2 0 R /Deep 5 0 R >>";
        let result = optimize_bytes(&assemble(&[catalog, PAGES, PAGE, CONTENT, &deep]));
        assert!(result.is_ok() || matches!(result, Err(PdfError::Unreadable { .. })), "{result:?}");
    }

    #[test]
    fn decompression_bomb_in_an_object_stream_is_refused() {
        const CAP: usize = 4 * 1024 * 1024;
        let mut bomb = Stream::new(Dictionary::new(), vec![b' '; CAP + 1024]);
        bomb.compress().unwrap();
        assert!(bomb.content.len() < 100_000, "the bomb must be small on disk");
        let mut object =
            format!("<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length {} >>\nstream\n", bomb.content.len())
                .into_bytes();
        object.extend_from_slice(&bomb.content);
        object.extend_from_slice(b"\nendstream");
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.pdf");
        std::fs::write(&input, assemble(&[CATALOG, PAGES, PAGE, CONTENT, &object])).unwrap();
        let result = super::optimize(&input, &dir.path().join("out.pdf"), CAP);
        assert!(matches!(result, Err(PdfError::InflatesTooMuch { limit: CAP })), "{result:?}");
    }

    #[test]
    fn panics_become_unreadable() {
        let error = PdfError::unreadable(panic_message(&"boom"));
        assert_eq!(error.to_string(), "the PDF could not be read: lopdf panicked: boom");
        let caught = catch_unwind(|| panic!("inner {}", 1)).unwrap_err();
        assert_eq!(panic_message(caught.as_ref()), "lopdf panicked: inner 1");
    }

    #[test]
    fn errors_read_well() {
        let found = detect::detect_bytes(&std::fs::read(fixture("other/red-8x8.png")).unwrap());
        assert_eq!(PdfError::NotPdf { found }.to_string(), "the input is not a PDF but a PNG image");
    }
}
