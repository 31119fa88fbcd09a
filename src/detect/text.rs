//! Formats recognised by their text, which `infer` leaves out or cannot tell apart: HTML (also
//! behind a byte-order mark or a comment), SVG, XHTML, and plain text in UTF-8, or UTF-16/32 behind
//! a byte-order mark.

use super::DetectedFormat;
use super::kinds::{Kind, kind, kind_by_mime};

/// Text formats `infer` leaves out: HTML that starts with a byte-order mark or a comment, SVG,
/// and plain text in UTF-8 or UTF-16 with a byte-order mark.
pub(super) fn detect_text(head: &[u8]) -> Option<DetectedFormat> {
    let text = decode_text(head)?;
    detect_markup(text.as_bytes()).or_else(|| Some(DetectedFormat::from_kind(plain_text())))
}

/// SVG or HTML by the tags near the start; `None` if neither.
pub(super) fn detect_markup(head: &[u8]) -> Option<DetectedFormat> {
    let lower = head.to_ascii_lowercase();
    let contains = |needle: &[u8]| lower.windows(needle.len()).any(|window| window == needle);
    let table_kind = |mime| kind_by_mime(mime).map(DetectedFormat::from_kind);
    if contains(b"<svg") {
        table_kind("image/svg+xml")
    } else if contains(b"<!doctype html") || contains(b"<html") {
        table_kind("text/html")
    } else {
        None
    }
}

/// The table's plain text row.
fn plain_text() -> &'static Kind {
    const PLAIN: Kind = kind(&[], "text/plain", "text", "a plain text file");
    kind_by_mime("text/plain").unwrap_or(&PLAIN)
}

/// The text in `head` if it reads as text: UTF-8 (a character cut off by the end of the sniffed
/// window is fine), or UTF-16 behind its byte-order mark, with no control characters other than
/// tab, line feed, form feed, carriage return and escape.
fn decode_text(head: &[u8]) -> Option<String> {
    let text = if let Some(rest) = head.strip_prefix(&[0x00, 0x00, 0xFE, 0xFF]) {
        decode_utf32(rest, u32::from_be_bytes)?
    } else if let Some(rest) = head.strip_prefix(&[0xFF, 0xFE, 0x00, 0x00]) {
        decode_utf32(rest, u32::from_le_bytes)?
    } else if let Some(rest) = head.strip_prefix(&[0xFE, 0xFF]) {
        decode_utf16(rest, u16::from_be_bytes)?
    } else if let Some(rest) = head.strip_prefix(&[0xFF, 0xFE]) {
        decode_utf16(rest, u16::from_le_bytes)?
    } else {
        let rest = head.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(head);
        match std::str::from_utf8(rest) {
            Ok(text) => text.to_owned(),
            // `error_len() == None`: the input ends inside a character, as a window cut from a
            // longer file may.
            Err(error) if error.error_len().is_none() => {
                String::from_utf8_lossy(&rest[..error.valid_up_to()]).into_owned()
            }
            Err(_) => return None,
        }
    };
    let is_text_char = |c: char| !c.is_control() || matches!(c, '\t' | '\n' | '\x0c' | '\r' | '\x1b');
    (!text.is_empty() && text.chars().all(is_text_char)).then_some(text)
}

/// UTF-32 in `unit`'s byte order, as text; `None` if a unit is no character.
fn decode_utf32(bytes: &[u8], unit: fn([u8; 4]) -> u32) -> Option<String> {
    bytes.chunks_exact(4).map(|quad| char::from_u32(unit([quad[0], quad[1], quad[2], quad[3]]))).collect()
}

/// UTF-16 in `unit`'s byte order, as text; `None` for an unpaired surrogate inside.
fn decode_utf16(bytes: &[u8], unit: fn([u8; 2]) -> u16) -> Option<String> {
    let mut units: Vec<u16> = bytes.chunks_exact(2).map(|pair| unit([pair[0], pair[1]])).collect();
    // A surrogate pair cut in half by the end of the window is fine; an unpaired one inside
    // is not text.
    if units.last().is_some_and(|last| (0xD800..0xDC00).contains(last)) {
        units.pop();
    }
    char::decode_utf16(units).collect::<Result<String, _>>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::tests::{label_and_description, other};
    use crate::detect::{SNIFF_LEN, detect_bytes};

    #[test]
    fn html_and_text_are_recognised() {
        let cases: &[(&[u8], &str, &str)] = &[
            (b"<!DOCTYPE html><html><body>hi</body></html>", "html", "an HTML page"),
            (b"\xEF\xBB\xBF<!doctype html>\n<html>", "html", "an HTML page"),
            (b"<!-- generated -->\n<html lang=en>", "html", "an HTML page"),
            (b"<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>", "svg", "an SVG image"),
            (b"<?xml version=\"1.0\"?>\n<note/>", "xml", "an XML document"),
            (b"Dear bot,\nplease shrink this.\n", "text", "a plain text file"),
            ("Grüße aus Köln\n".as_bytes(), "text", "a plain text file"),
            (b"\xFF\xFEh\0i\0\n\0", "text", "a plain text file"),
            (b"%!PS-Adobe-3.0\n%PDF-1.4 in a comment\n", "ps", "a PostScript file"),
        ];
        for (bytes, label, description) in cases {
            let found = detect_bytes(bytes);
            assert_eq!(
                label_and_description(&found),
                other(label, description),
                "{:?}",
                String::from_utf8_lossy(bytes)
            );
        }
    }
    #[test]
    fn utf32_with_bom_is_text() {
        let le: Vec<u8> =
            [0xFF, 0xFE, 0, 0].into_iter().chain("hi\n".chars().flat_map(|c| u32::from(c).to_le_bytes())).collect();
        let be: Vec<u8> =
            [0, 0, 0xFE, 0xFF].into_iter().chain("hi\n".chars().flat_map(|c| u32::from(c).to_be_bytes())).collect();
        assert_eq!(detect_bytes(&le).label(), "text");
        assert_eq!(detect_bytes(&be).label(), "text");
    }

    #[test]
    fn utf8_cut_at_window_end_is_still_text() {
        let mut bytes = "ü".repeat(SNIFF_LEN).into_bytes();
        bytes.truncate(SNIFF_LEN - 1);
        assert_eq!(detect_bytes(&bytes).label(), "text");
    }

    #[test]
    fn control_characters_are_not_text() {
        assert_eq!(detect_bytes(b"abc\x01\x02def"), DetectedFormat::Unknown);
    }
}
