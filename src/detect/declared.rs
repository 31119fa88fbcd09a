//! What a declared file name or MIME type names: the sender's client's claim, read as a format
//! label of the table. A hint for choosing what to do before the content is there (intake's
//! default operation), never a verdict on what the file is.

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
}
