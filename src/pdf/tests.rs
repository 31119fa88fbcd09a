//! The guarantees of the `pdf` module docs, checked through `optimize`: what is not a PDF,
//! what is encrypted, broken or hostile, and what cannot be read or written.

use std::panic::catch_unwind;
use std::path::{Path, PathBuf};

use lopdf::{Dictionary, Document, Stream};

use super::work::panic_message;
use super::*;
use crate::detect;

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

/// Optimizing the fixture `name` is refused as not a PDF, naming `label` as what it is.
fn assert_refused_as_not_pdf(name: &str, label: &str) {
    let (_dir, _output, result) = optimize_fixture(name);
    match result {
        Err(PdfError::NotPdf { found }) => assert_eq!(found.label(), label),
        other => panic!("{other:?}"),
    }
}

#[test]
fn png_is_not_a_pdf() {
    assert_refused_as_not_pdf("other/red-8x8.png", "png");
}

#[test]
fn zip_storing_a_pdf_is_not_a_pdf() {
    // lopdf alone would find the stored PDF's header and optimize that.
    assert_refused_as_not_pdf("other/stored-pdf.zip", "zip");
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
