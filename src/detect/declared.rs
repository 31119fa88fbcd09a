//! What a declared file name or MIME type names: the sender's client's claim, read as a format
//! label of the table. A hint for choosing what to do before the content is there (intake's
//! default operation), never a verdict on what the file is; once the content is detected, whether
//! the claim named another format (processing tells the person so).

use super::DetectedFormat;
use super::kinds::{fallback_label, kind_by_infer_extension, kind_by_mime};

/// Extensions people write for a format that infer's names for it (the table's) leave out, and
/// the label of that format.
const EXTENSION_SPELLINGS: &[(&str, &str)] =
    &[("jpeg", "jpeg"), ("jpe", "jpeg"), ("tiff", "tiff"), ("heic", "heif"), ("htm", "html"), ("txt", "text")];

/// MIME types clients send for a format, other than the one the table records.
const MIME_SPELLINGS: &[(&str, &str)] =
    &[("image/jpg", "image/jpeg"), ("image/heic", "image/heif"), ("image/heic-sequence", "image/heif")];

/// The label of the format a file name's `extension` names (`JPG` → `jpeg`, `htm` → `html`).
fn label_of_extension(extension: &str) -> Option<&'static str> {
    let extension = extension.to_ascii_lowercase();
    EXTENSION_SPELLINGS
        .iter()
        .find(|(spelt, _)| *spelt == extension)
        .map(|(_, label)| *label)
        .or_else(|| kind_by_infer_extension(&extension).map(|kind| kind.label))
}

/// The label of the format the table records for `mime` (`image/jpg` → `jpeg`).
fn label_of_mime(mime: &str) -> Option<&'static str> {
    let mime = mime.to_ascii_lowercase();
    let mime = MIME_SPELLINGS.iter().find(|(spelt, _)| *spelt == mime).map_or(mime.as_str(), |(_, m)| m);
    kind_by_mime(mime).map(|kind| kind.label)
}

/// The label of the format `name`'s extension or `mime` names (`photo.JPG` → `jpeg`,
/// `application/msword` → `doc`), the MIME type first; `None` when neither names one the table
/// has.
pub fn declared_label(name: Option<&str>, mime: Option<&str>) -> Option<&'static str> {
    mime.and_then(label_of_mime).or_else(|| label_of_extension(name?.rsplit_once('.')?.1))
}

/// Whether the declared name's extension or the declared MIME type names another format than the
/// content's. Only what is declared is compared: no name and no MIME type disagree with nothing,
/// and neither does anything with content no format was found for. An extension the table does
/// not know disagrees when it looks like one (at most 5 characters); a MIME type, unless its
/// subtype is the content's label.
pub fn declared_disagrees(name: Option<&str>, mime: Option<&str>, format: &DetectedFormat) -> bool {
    if matches!(format, DetectedFormat::Unknown) {
        return false;
    }
    let label = format.label();
    let by_name =
        name.and_then(|n| n.rsplit_once('.')).map(|(_, ext)| ext).filter(|ext| !ext.is_empty() && ext.len() <= 5);
    let by_mime = mime.filter(|m| !m.is_empty() && *m != "application/octet-stream");
    let name_agrees = |ext: &str| ext.eq_ignore_ascii_case(label) || label_of_extension(ext) == Some(label);
    let mime_agrees = |mime: &str| {
        label_of_mime(mime) == Some(label)
            || fallback_label(&mime.to_ascii_lowercase()) == label
            || mime_matches(mime, format)
    };
    by_name.is_some_and(|ext| !name_agrees(ext)) || by_mime.is_some_and(|mime| !mime_agrees(mime))
}

/// Whether the declared MIME type is the detected one exactly.
fn mime_matches(declared: &str, format: &DetectedFormat) -> bool {
    match format {
        DetectedFormat::Pdf => declared.eq_ignore_ascii_case("application/pdf"),
        DetectedFormat::Other { mime, .. } => declared.eq_ignore_ascii_case(mime),
        DetectedFormat::Unknown => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_name_or_mime_type_names_a_label() {
        assert_eq!(declared_label(Some("IMG_0042.HEIC"), None), Some("heif"));
        assert_eq!(declared_label(Some("scan.jpeg"), Some("")), Some("jpeg"));
        assert_eq!(declared_label(Some("a.b.tiff"), None), Some("tiff"));
        assert_eq!(declared_label(None, Some("image/heic")), Some("heif"));
        assert_eq!(declared_label(None, Some("application/msword")), Some("doc"));
        assert_eq!(declared_label(Some("report.docx"), Some("application/octet-stream")), Some("docx"));
        assert_eq!(declared_label(Some("Report.ODT"), None), Some("odt"));
        assert_eq!(declared_label(Some("animation.gif"), None), Some("gif"));
        // The MIME type first: the client that chose it read the file.
        assert_eq!(declared_label(Some("x.pdf"), Some("image/png")), Some("png"));
        assert_eq!(declared_label(Some("notes"), None), None);
        assert_eq!(declared_label(Some("archive.unknownext"), Some("application/octet-stream")), None);
        assert_eq!(declared_label(None, None), None);
    }

    #[test]
    fn a_declaration_disagrees_only_with_another_format() {
        let zip = DetectedFormat::Other { mime: "application/zip".into(), description: "a ZIP archive".into() };
        let jpeg = DetectedFormat::Other { mime: "image/jpeg".into(), description: "a JPEG image".into() };
        assert!(declared_disagrees(Some("report.pdf"), Some("application/pdf"), &zip));
        assert!(declared_disagrees(None, Some("application/pdf"), &zip));
        assert!(!declared_disagrees(Some("report.pdf"), Some("application/pdf"), &DetectedFormat::Pdf));
        assert!(!declared_disagrees(Some("photo.JPG"), Some("image/jpeg"), &jpeg));
        assert!(!declared_disagrees(Some("README"), Some("application/octet-stream"), &DetectedFormat::Pdf));
        assert!(!declared_disagrees(None, None, &zip));
        assert!(declared_disagrees(Some("scan.png"), None, &DetectedFormat::Pdf));
    }

    #[test]
    fn every_spelling_of_a_format_agrees_with_it_and_an_unknown_short_extension_does_not() {
        let other = |mime: &str| DetectedFormat::Other { mime: mime.into(), description: String::new() };
        let (jpeg, tiff, html, text) =
            (other("image/jpeg"), other("image/tiff"), other("text/html"), other("text/plain"));
        for (name, format) in
            [("a.jpe", &jpeg), ("a.JPEG", &jpeg), ("a.tif", &tiff), ("a.htm", &html), ("notes.TXT", &text)]
        {
            assert!(!declared_disagrees(Some(name), None, format), "{name}");
        }
        assert!(!declared_disagrees(None, Some("image/jpg"), &jpeg));
        assert!(!declared_disagrees(None, Some("application/x-pdf"), &DetectedFormat::Pdf), "its subtype is pdf");
        // An extension of at most 5 characters the table does not know still disagrees; a longer
        // one is not taken for an extension at all.
        assert!(declared_disagrees(Some("report.abcde"), None, &DetectedFormat::Pdf));
        assert!(!declared_disagrees(Some("report.2024-final"), None, &DetectedFormat::Pdf));
        assert!(!declared_disagrees(Some("x.pdf"), Some("image/png"), &DetectedFormat::Unknown));
        assert!(!declared_disagrees(Some("x.pdf"), Some(""), &DetectedFormat::Pdf), "an empty type declares nothing");
    }
}
