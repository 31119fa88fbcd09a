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

use std::path::Path;

use crate::detect::DetectedFormat;
use crate::domain::Operation;

mod ccitt;
mod content;
pub mod decrypt;
mod file_writer;
pub mod images;
pub mod info;
pub mod merge;
pub mod optimize;
pub mod parts;
mod rewrite;
pub mod rotate;
pub mod shrink;
pub mod split;
pub mod split_by_size;
pub mod text;
mod work;

pub use rewrite::{OptimizeReport, optimize};
pub use work::WORK_STACK_BYTES;

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
        Operation::Shrink { target: None } => shrink::shrink(input, output, settings).map(Produced::from),
        Operation::Shrink { target: Some(target) } => {
            shrink::shrink_to(input, output, settings, *target).map(Produced::from)
        }
        Operation::SplitBySize { under } => split_by_size::split_by_size(input, output, *under, max_inflate),
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

/// Largest size, in bytes, that any one object stream or cross-reference stream may decode to
/// while a PDF is loaded, unless the caller says otherwise (`[processing] max_inflate`). Real
/// files stay far below it (an object stream holds about a hundred small objects; a
/// cross-reference stream for a million objects is about 7 MB).
pub const DEFAULT_MAX_INFLATE_BYTES: usize = 256 * 1024 * 1024;

/// Why [`optimize()`] failed. Every variant except [`PdfError::Io`] and
/// [`PdfError::ToolMissing`] (the machine's) is a property of the input and will not change on
/// retry.
#[derive(Debug, thiserror::Error)]
pub enum PdfError {
    /// The PDF is encrypted with a user password, which we do not have, or with a security
    /// handler lopdf does not support.
    #[error("the PDF is encrypted and cannot be opened without a password")]
    Encrypted,
    /// The content is not a PDF by [`detect::detect_bytes`](crate::detect::detect_bytes), whatever its name says.
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
    /// `shrink` to a size: even the smallest settings give more than the target.
    #[error("the smallest shrink is {smallest} bytes, over the target of {target}")]
    CannotShrinkTo {
        /// The target, in bytes.
        target: u64,
        /// The smallest result the settings gave, in bytes.
        smallest: u64,
    },
    /// `split` by size: one page alone is over the size every part must fit in.
    #[error("page {page} alone is {size} bytes, over the part size of {target}")]
    PageTooBigForParts {
        /// The page, from 1.
        page: u32,
        /// Its size as a part of its own, in bytes.
        size: u64,
        /// The part size, in bytes.
        target: u64,
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

#[cfg(test)]
mod tests;
