//! What a file really is, judged from its first bytes.
//!
//! The name and MIME type that Telegram reports for a document are whatever the sender's client
//! made up, so they are hints at best. This module owns the verdict: it looks at the first
//! [`SNIFF_LEN`] bytes of the content and nothing else. It knows the signatures that `infer`
//! knows plus a few that `infer` lacks, and it decides the one question that matters to the
//! pipeline, "is this a PDF?", by the rules below.
//!
//! 1. An empty file is [`DetectedFormat::Unknown`].
//! 2. `%PDF-` at offset 0 is a PDF.
//! 3. Any format `infer` recognises (ZIP, gzip, PNG, JPEG, OLE, docx, ...) is that format, even
//!    when `%PDF-` appears further on: a ZIP that stores a PDF is a ZIP, a tar of a PDF is a tar.
//!    The same holds for the few signatures this module adds (ASCII cpio, font collections,
//!    RealMedia, 3GP). This includes infer's weak two-byte signatures (MP3 frames, DER, COFF),
//!    so a junk prefix that happens to start with one of them hides a PDF behind it.
//! 4. Otherwise `%PDF-` lying wholly within the first [`PDF_HEADER_WINDOW`] bytes is a PDF with
//!    a junk prefix, which PDF readers accept; further in, it is not a PDF.
//! 5. Otherwise HTML, SVG and plain text (UTF-8, or UTF-16/32 behind a byte-order mark) are
//!    recognised by looking at the text itself, and anything else is
//!    [`DetectedFormat::Unknown`].
//!
//! Some of infer's verdicts are refined from the same bytes: a ZIP becomes an OpenDocument or
//! Office Open XML file when its entries say so, a generic OLE file becomes a Word, Excel or
//! PowerPoint 97-2003 file when its directory lies within the window, and XML becomes SVG or
//! XHTML.
//!
//! Pure and synchronous apart from [`detect_path`], which reads at most [`SNIFF_LEN`] bytes. It
//! must not import lopdf, the store, Telegram or async code.
//!
//! This file holds the rules above and the verdict's type. The rest, one file each:
//! `kinds.rs`, the table of every format docket names (MIME type, stored label, words for
//! people); `signatures.rs`, infer's verdict mapped into that table and the signatures infer
//! lacks; `containers.rs`, ZIP and OLE files told apart by their entries (OpenDocument, Office);
//! `text.rs`, HTML, SVG and plain text recognised by their text; `declared.rs`, the format a
//! declared name or MIME type claims, a hint for choosing before the content is there.

use std::fs::File;
use std::io::Read;
use std::path::Path;

pub use self::declared::{declared_disagrees, declared_label};
use self::kinds::{Kind, fallback_label, kind_by_mime};
use self::signatures::{detect_extra_signature, from_infer};
use self::text::detect_text;

mod containers;
mod declared;
mod kinds;
mod signatures;
mod text;

/// How many leading bytes detection looks at; [`detect_path`] reads no more than this.
pub const SNIFF_LEN: usize = 8192;

/// A PDF header is honoured only if it lies wholly within this many leading bytes, the window in
/// which PDF readers (Acrobat, pdf.js, poppler) look for it.
pub const PDF_HEADER_WINDOW: usize = 1024;

/// The PDF header marker, followed in real files by a version such as `1.7`.
const PDF_MAGIC: &[u8] = b"%PDF-";

/// The format of a file's content, judged from its first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetectedFormat {
    /// A PDF: `%PDF-` at the start, or within [`PDF_HEADER_WINDOW`] bytes after a junk prefix
    /// that no other signature claims.
    Pdf,
    /// A recognised format that is not a PDF.
    ///
    /// `mime` is the format's MIME type and `description` a short phrase for people ("a PNG
    /// image"). Both come from this module's own table, so they are stable across `infer`
    /// versions; [`DetectedFormat::label`] is derived from `mime`.
    Other {
        /// The MIME type, e.g. `image/png`.
        mime: String,
        /// What it is, for people, with its article: "a ZIP archive".
        description: String,
    },
    /// Nothing recognisable, including an empty file.
    Unknown,
}

impl DetectedFormat {
    /// A short, stable, lowercase name for storing in the database: `"pdf"`, `"png"`, `"jpeg"`,
    /// `"zip"`, `"docx"`, `"gzip"`, `"html"`, `"text"`, `"unknown"`, ...
    ///
    /// Labels are part of the schema: once stored they are never renamed. A MIME type missing
    /// from this module's table (which cannot come out of [`detect_bytes`]) gets its subtype,
    /// without any `x-` or `vnd.` prefix.
    pub fn label(&self) -> &str {
        match self {
            Self::Pdf => "pdf",
            Self::Unknown => "unknown",
            Self::Other { mime, .. } => match kind_by_mime(mime) {
                Some(kind) => kind.label,
                None => fallback_label(mime),
            },
        }
    }

    /// What the file is, for people, with its article: "a PDF document", "a PNG image",
    /// "a Word document", "data of an unknown kind".
    pub fn describe(&self) -> String {
        match self {
            Self::Pdf => "a PDF document".to_owned(),
            Self::Unknown => "data of an unknown kind".to_owned(),
            Self::Other { description, .. } => description.clone(),
        }
    }

    /// Whether this is a PDF.
    pub fn is_pdf(&self) -> bool {
        matches!(self, Self::Pdf)
    }

    fn from_kind(kind: &Kind) -> Self {
        Self::Other { mime: kind.mime.to_owned(), description: kind.description.to_owned() }
    }
}

/// Judges `head`, the first bytes of a file, by the rules in the module docs.
///
/// Pass the first [`SNIFF_LEN`] bytes, or the whole file if it is shorter; bytes past
/// [`SNIFF_LEN`] are ignored so the verdict never depends on how much a caller happened to read.
pub fn detect_bytes(head: &[u8]) -> DetectedFormat {
    let head = &head[..head.len().min(SNIFF_LEN)];
    if head.is_empty() {
        return DetectedFormat::Unknown;
    }
    if head.starts_with(PDF_MAGIC) {
        return DetectedFormat::Pdf;
    }
    if let Some(found) = infer::get(head) {
        // infer's own PDF matcher accepts `%PDF` without the dash, which no PDF reader does;
        // rules 2 and 4 decide PDFs, so its verdict on those is ignored.
        if found.mime_type() != "application/pdf" {
            return from_infer(found.extension(), found.mime_type(), found.matcher_type(), head);
        }
    }
    if let Some(kind) = detect_extra_signature(head) {
        return DetectedFormat::from_kind(kind);
    }
    if has_pdf_header_in_window(head) {
        return DetectedFormat::Pdf;
    }
    detect_text(head).unwrap_or(DetectedFormat::Unknown)
}

/// Reads at most [`SNIFF_LEN`] bytes from the start of `path` and judges them with
/// [`detect_bytes`].
///
/// # Errors
///
/// Any error opening or reading the file.
pub fn detect_path(path: &Path) -> std::io::Result<DetectedFormat> {
    let mut head = Vec::with_capacity(SNIFF_LEN);
    File::open(path)?.take(SNIFF_LEN as u64).read_to_end(&mut head)?;
    Ok(detect_bytes(&head))
}

/// Whether `%PDF-` lies wholly within the first [`PDF_HEADER_WINDOW`] bytes.
fn has_pdf_header_in_window(head: &[u8]) -> bool {
    head[..head.len().min(PDF_HEADER_WINDOW)].windows(PDF_MAGIC.len()).any(|window| window == PDF_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(relative: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(relative)
    }

    fn read_fixture(relative: &str) -> Vec<u8> {
        std::fs::read(fixture(relative)).unwrap()
    }

    pub(super) fn other(label: &str, description: &str) -> (String, String) {
        (label.to_owned(), description.to_owned())
    }

    pub(super) fn label_and_description(format: &DetectedFormat) -> (String, String) {
        (format.label().to_owned(), format.describe())
    }
    #[test]
    fn pdf_fixtures_are_pdfs() {
        for name in ["pdf/text-1page.pdf", "pdf/text-20pages.pdf", "pdf/scan-2pages.pdf"] {
            let found = detect_path(&fixture(name)).unwrap();
            assert_eq!(found, DetectedFormat::Pdf, "{name}");
            assert_eq!(found.label(), "pdf");
            assert_eq!(found.describe(), "a PDF document");
        }
    }

    #[test]
    fn encrypted_and_truncated_pdfs_are_still_pdfs() {
        // Detection only looks at the signature; whether lopdf can read it is pdf.rs's concern.
        for name in ["pdf/aes256-userpw.pdf", "pdf/aes256-ownerpw-only.pdf", "pdf/truncated.pdf"] {
            assert_eq!(detect_path(&fixture(name)).unwrap(), DetectedFormat::Pdf, "{name}");
        }
    }

    #[test]
    fn png_fixture_is_a_png_image() {
        let found = detect_path(&fixture("other/red-8x8.png")).unwrap();
        assert_eq!(found.label(), "png");
        assert_eq!(found.describe(), "a PNG image");
        assert_eq!(
            found,
            DetectedFormat::Other { mime: "image/png".to_owned(), description: "a PNG image".to_owned() }
        );
    }

    #[test]
    fn zip_storing_a_pdf_is_a_zip() {
        let bytes = read_fixture("other/stored-pdf.zip");
        let at = bytes.windows(5).position(|w| w == b"%PDF-").unwrap();
        assert!(at < PDF_HEADER_WINDOW, "fixture must hold %PDF- in the window, at {at}");
        let found = detect_bytes(&bytes);
        assert_eq!(label_and_description(&found), other("zip", "a ZIP archive"));
    }

    #[test]
    fn gzip_of_a_pdf_is_gzip() {
        // A gzip header with a file name field that spells out a PDF header.
        let mut bytes = vec![0x1f, 0x8b, 0x08, 0x08, 0, 0, 0, 0, 0, 0x03];
        bytes.extend_from_slice(b"%PDF-1.7.pdf\0");
        assert_eq!(label_and_description(&detect_bytes(&bytes)), other("gzip", "a gzip archive"));
    }

    #[test]
    fn junk_prefix_within_window_is_pdf() {
        let pdf = read_fixture("pdf/text-1page.pdf");
        for junk_len in [1, 3, 512, PDF_HEADER_WINDOW - PDF_MAGIC.len()] {
            let mut bytes = vec![b'j'; junk_len];
            bytes.extend_from_slice(&pdf);
            assert_eq!(detect_bytes(&bytes), DetectedFormat::Pdf, "junk of {junk_len} bytes");
        }
        assert_eq!(detect_path(&fixture("pdf/junk-prefix-512.pdf")).unwrap(), DetectedFormat::Pdf);
    }

    #[test]
    fn pdf_header_beyond_window_is_not_pdf() {
        let pdf = read_fixture("pdf/text-1page.pdf");
        for junk_len in [PDF_HEADER_WINDOW - PDF_MAGIC.len() + 1, 2048] {
            let mut bytes = vec![0x00; junk_len];
            bytes.extend_from_slice(&pdf);
            assert_eq!(detect_bytes(&bytes), DetectedFormat::Unknown, "junk of {junk_len} bytes");
        }
        let mut text_junk = b"X-Junk: ".to_vec();
        text_junk.resize(2048, b'j');
        text_junk.push(b'\n');
        text_junk.extend_from_slice(&pdf);
        assert_ne!(detect_bytes(&text_junk), DetectedFormat::Pdf);
    }

    #[test]
    fn empty_is_unknown() {
        let found = detect_bytes(b"");
        assert_eq!(found, DetectedFormat::Unknown);
        assert_eq!(found.label(), "unknown");
        assert_eq!(found.describe(), "data of an unknown kind");

        let file = tempfile::NamedTempFile::new().unwrap();
        assert_eq!(detect_path(file.path()).unwrap(), DetectedFormat::Unknown);
    }

    #[test]
    fn binary_noise_is_unknown() {
        let noise: Vec<u8> = (0u32..4096).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        assert_eq!(detect_bytes(&noise), DetectedFormat::Unknown);
    }

    #[test]
    fn bare_pdf_without_dash_is_not_a_pdf() {
        assert_ne!(detect_bytes(b"%PDF1.4 not really"), DetectedFormat::Pdf);
    }

    #[test]
    fn postscript_fixture_is_postscript() {
        let found = detect_path(&fixture("other/pages.ps")).unwrap();
        assert_eq!(label_and_description(&found), other("ps", "a PostScript file"));
    }
    #[test]
    fn only_the_sniff_window_counts() {
        let mut bytes = vec![b'a'; SNIFF_LEN];
        bytes.extend_from_slice(&[0, 1, 2, 3]);
        assert_eq!(detect_bytes(&bytes).label(), "text");
    }

    #[test]
    fn detect_path_reports_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = detect_path(&dir.path().join("absent")).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }
}
