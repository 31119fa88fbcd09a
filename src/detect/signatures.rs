//! What a signature at the start of the file says: `infer`'s verdict mapped into the table (and
//! refined where the same bytes say more), and the few signatures `infer` lacks.

use super::DetectedFormat;
use super::containers::{refine_ole, refine_zip};
use super::kinds::{Kind, kind_by_infer_extension, kind_by_mime};
use super::text::detect_markup;

/// Maps an `infer` verdict into our table; XML is refined into SVG or XHTML by its text.
pub(super) fn from_infer(extension: &str, mime: &str, matcher: infer::MatcherType, head: &[u8]) -> DetectedFormat {
    let refined = match extension {
        "xml" => detect_markup(head),
        "zip" => refine_zip(head),
        "msi" => refine_ole(head).map(DetectedFormat::from_kind),
        _ => None,
    };
    if let Some(refined) = refined {
        return refined;
    }
    match kind_by_infer_extension(extension) {
        Some(kind) => DetectedFormat::from_kind(kind),
        // A format that a newer infer added and this table does not know yet.
        None => DetectedFormat::Other { mime: mime.to_owned(), description: describe_matcher(matcher).to_owned() },
    }
}

/// Signatures at offset 0 that infer 0.19 lacks.
pub(super) fn detect_extra_signature(head: &[u8]) -> Option<&'static Kind> {
    let mime = if head.starts_with(b"070702") || head.starts_with(b"070707") {
        // cpio in the "newc with CRC" and portable ASCII formats; infer knows newc and binary.
        "application/x-cpio"
    } else if head.starts_with(b"ttcf") {
        "font/collection"
    } else if head.starts_with(b".RMF") {
        "application/vnd.rn-realmedia"
    } else if head.get(4..10).is_some_and(|brand| brand.starts_with(b"ftyp3g")) {
        "video/3gpp"
    } else {
        return None;
    };
    kind_by_mime(mime)
}

/// What a format of `infer`'s kind `matcher` is, for one the table does not know yet.
fn describe_matcher(matcher: infer::MatcherType) -> &'static str {
    use infer::MatcherType;
    match matcher {
        MatcherType::App => "a program",
        MatcherType::Archive => "an archive",
        MatcherType::Audio => "an audio file",
        MatcherType::Book => "an e-book",
        MatcherType::Doc => "a document",
        MatcherType::Font => "a font",
        MatcherType::Image => "an image",
        MatcherType::Text => "a text file",
        MatcherType::Video => "a video",
        MatcherType::Custom => "a file of a known kind",
    }
}

#[cfg(test)]
mod tests {
    use crate::detect::detect_bytes;

    #[test]
    fn signatures_infer_lacks_are_recognised() {
        let cases: &[(&[u8], &str)] = &[
            (b"070707000A1B2C", "cpio"),
            (b"070702000A1B2C", "cpio"),
            (b"ttcf\x00\x01\x00\x00", "ttc"),
            (b".RMF\x00\x00\x00\x12", "realmedia"),
            (b"\x00\x00\x00\x18ftyp3gp4\x00\x00", "3gp"),
        ];
        for (bytes, label) in cases {
            assert_eq!(detect_bytes(bytes).label(), *label);
        }
        // An offset-0 signature wins over a PDF header inside the window, as infer's do.
        let mut cpio_of_pdf = b"070707".to_vec();
        cpio_of_pdf.extend_from_slice(b"00000000%PDF-1.7\n");
        assert_eq!(detect_bytes(&cpio_of_pdf).label(), "cpio");
    }
}
