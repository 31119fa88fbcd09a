//! What a declared file name or MIME type names: the sender's client's claim, read as a format
//! label of the table. A hint for choosing what to do before the content is there (intake's
//! default operation), never a verdict on what the file is; once the content is detected, whether
//! the claim named another format (processing tells the person so).

use super::DetectedFormat;
use super::kinds::{kind_by_infer_extension, kind_by_mime};

/// Extensions people write for a format, other than the one the table knows it by.
const EXTENSION_SPELLINGS: &[(&str, &str)] = &[("jpeg", "jpg"), ("jpe", "jpg"), ("tiff", "tif"), ("heic", "heif")];

/// MIME types clients send for a format, other than the one the table records.
const MIME_SPELLINGS: &[(&str, &str)] =
    &[("image/jpg", "image/jpeg"), ("image/heic", "image/heif"), ("image/heic-sequence", "image/heif")];

/// The label of the format `name`'s extension or `mime` names (`photo.JPG` → `jpeg`,
/// `application/msword` → `doc`), the MIME type first; `None` when neither names one the table
/// has.
pub fn declared_label(name: Option<&str>, mime: Option<&str>) -> Option<&'static str> {
    let by_mime = mime.map(str::to_ascii_lowercase).and_then(|mime| {
        let mime = MIME_SPELLINGS.iter().find(|(spelt, _)| *spelt == mime).map_or(mime.as_str(), |(_, m)| m);
        kind_by_mime(mime)
    });
    let by_name = || {
        let (_, extension) = name?.rsplit_once('.')?;
        let extension = extension.to_ascii_lowercase();
        let extension =
            EXTENSION_SPELLINGS.iter().find(|(spelt, _)| *spelt == extension).map_or(extension.as_str(), |(_, e)| e);
        kind_by_infer_extension(extension)
    };
    by_mime.or_else(by_name).map(|kind| kind.label)
}

/// Whether the declared name's extension or the declared MIME type names another format than the
/// content's. Only what is declared is compared: no name and no MIME type disagree with nothing.
pub fn declared_disagrees(name: Option<&str>, mime: Option<&str>, format: &DetectedFormat) -> bool {
    let label = format.label();
    // The spellings one format goes by.
    let same = |word: &str| {
        let word = word.to_ascii_lowercase();
        word == label
            || matches!(
                (word.as_str(), label),
                ("jpg" | "jpe", "jpeg") | ("tif", "tiff") | ("htm", "html") | ("txt", "text")
            )
    };
    let by_name =
        name.and_then(|n| n.rsplit_once('.')).map(|(_, ext)| ext).filter(|ext| !ext.is_empty() && ext.len() <= 5);
    let by_mime = mime.filter(|m| *m != "application/octet-stream").map(|m| {
        let subtype = m.rsplit('/').next().unwrap_or(m);
        subtype.trim_start_matches("x-").to_owned()
    });
    if matches!(format, DetectedFormat::Unknown) {
        return false;
    }
    by_name.is_some_and(|ext| !same(ext))
        || by_mime.is_some_and(|subtype| !same(&subtype) && !mime_matches(mime, format))
}

/// Whether the declared MIME type is the detected one exactly.
fn mime_matches(mime: Option<&str>, format: &DetectedFormat) -> bool {
    match (mime, format) {
        (Some(m), DetectedFormat::Pdf) => m.eq_ignore_ascii_case("application/pdf"),
        (Some(m), DetectedFormat::Other { mime, .. }) => m.eq_ignore_ascii_case(mime),
        _ => false,
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
}
