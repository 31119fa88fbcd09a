//! How a page's content is read: its content streams inflated within the run's `max_inflate`
//! and joined ([`page`]), a Form XObject's content inflated likewise ([`form`]), then decoded
//! into operations ([`operations`], [`all_operations`]) or scanned for the names it uses
//! ([`names_used`]). `text`, `shrink` (how large each image is drawn) and `split` (which
//! resources a page uses) read content here and nowhere else.
//!
//! Content that inflates past `max_inflate` is [`PdfError::InflatesTooMuch`]; what to do with
//! content that is broken some other way is each reader's choice, made where it calls.

use std::collections::HashSet;

use lopdf::content::{Content, Operation};
use lopdf::{Document, ObjectId, Stream};

use super::PdfError;

/// The content of the page `page_id`: its content streams inflated and joined, within
/// `max_inflate` for them all (a stream whose filters fail is taken as it is, within the same
/// cap).
///
/// # Errors
///
/// [`PdfError::InflatesTooMuch`] past `max_inflate`; [`PdfError::Unreadable`] when lopdf
/// cannot read it for another reason.
pub(super) fn page(document: &Document, page_id: ObjectId, max_inflate: usize) -> Result<Vec<u8>, PdfError> {
    document.get_page_content_with_limit(page_id, max_inflate).map_err(inflate_error)
}

/// The content of the Form XObject `form`, inflated within `max_inflate` (an unfiltered form's
/// content is held to it too); `None` when its filters fail.
///
/// # Errors
///
/// [`PdfError::InflatesTooMuch`] past `max_inflate`.
pub(super) fn form(form: &Stream, max_inflate: usize) -> Result<Option<Vec<u8>>, PdfError> {
    match form.decompressed_content_with_limit(max_inflate) {
        Ok(content) => Ok(Some(content)),
        Err(error @ lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { .. })) => {
            Err(inflate_error(error))
        }
        Err(_) => Ok(None),
    }
}

fn inflate_error(error: lopdf::Error) -> PdfError {
    match error {
        lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit }) => {
            PdfError::InflatesTooMuch { limit }
        }
        other => PdfError::unreadable(format!("reading page content: {other}")),
    }
}

/// The operations of `content`, decoded one at a time, up to where it breaks: a content
/// stream broken halfway still gives what comes before the break.
pub(super) fn operations(content: &[u8]) -> impl Iterator<Item = Operation> + '_ {
    Content::decode_iter(content).map_while(Result::ok)
}

/// Every operation of `content`, or none when it breaks anywhere.
pub(super) fn all_operations(content: &[u8]) -> Vec<Operation> {
    Content::decode(content).map(|c| c.operations).unwrap_or_default()
}

/// The names a content stream selects fonts (`Tf`) and draws XObjects (`Do`) with; `None` when
/// it cannot be read to the end (an unterminated string or inline image).
///
/// A scan of the bytes rather than a parse of every operator into objects (lopdf's
/// `Content::decode`, most of `split`'s time on text-heavy pages): only names and the
/// operators after them matter here. Strings, comments and inline image data are skipped, so
/// a name inside them is not taken for one in use.
pub(super) fn names_used(content: &[u8]) -> Option<HashSet<Vec<u8>>> {
    let mut used = HashSet::new();
    // The last name among the operands since the last operator.
    let mut operand_name: Option<Vec<u8>> = None;
    let mut at = 0;
    while let Some(&byte) = content.get(at) {
        match byte {
            b'%' => {
                while content.get(at).is_some_and(|b| !matches!(b, b'\r' | b'\n')) {
                    at += 1;
                }
            }
            b'(' => at = after_literal_string(content, at)?,
            b'<' if content.get(at + 1) == Some(&b'<') => at += 2,
            b'<' => at += content[at..].iter().position(|b| *b == b'>')? + 1,
            b'/' => {
                let end = token_end(content, at + 1);
                operand_name = Some(decode_name(&content[at + 1..end]));
                at = end;
            }
            _ if is_delimiter(byte) || is_white(byte) => at += 1,
            _ => {
                let end = token_end(content, at);
                let token = &content[at..end];
                at = end;
                if !token.first().is_some_and(|b| b.is_ascii_alphabetic() || matches!(b, b'\'' | b'"')) {
                    continue; // a number: an operand
                }
                match token {
                    b"Tf" | b"Do" => used.extend(operand_name.take()),
                    b"ID" => at = after_inline_image(content, at)?,
                    _ => {}
                }
                operand_name = None;
            }
        }
    }
    Some(used)
}

fn is_white(byte: u8) -> bool {
    matches!(byte, b'\0' | b'\t' | b'\n' | b'\x0C' | b'\r' | b' ')
}

fn is_delimiter(byte: u8) -> bool {
    matches!(byte, b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%')
}

/// Where the token (a name's text, a number, an operator) starting at `at` ends.
fn token_end(content: &[u8], at: usize) -> usize {
    at + content[at..].iter().position(|b| is_white(*b) || is_delimiter(*b)).unwrap_or(content.len() - at)
}

/// A name's bytes with its `#xx` escapes decoded, as lopdf stores resource names.
fn decode_name(raw: &[u8]) -> Vec<u8> {
    let mut name = Vec::with_capacity(raw.len());
    let mut at = 0;
    while let Some(&byte) = raw.get(at) {
        let hex = raw
            .get(at + 1..at + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (byte, hex) {
            (b'#', Some(value)) => {
                name.push(value);
                at += 3;
            }
            _ => {
                name.push(byte);
                at += 1;
            }
        }
    }
    name
}

/// Just past the literal string opening at `at` (balanced parentheses, backslash escapes).
fn after_literal_string(content: &[u8], at: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = at;
    loop {
        match *content.get(i)? {
            b'\\' => i += 1,
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// Just past an inline image's data, which starts after `ID` and one white-space byte and ends
/// with white space, `EI` and white space or the end (ISO 32000-1, 8.9.7).
fn after_inline_image(content: &[u8], at: usize) -> Option<usize> {
    let data = at + 1;
    (data..content.len().saturating_sub(2)).find_map(|i| {
        let ends = is_white(content[i])
            && &content[i + 1..i + 3] == b"EI"
            && content.get(i + 3).is_none_or(|b| is_white(*b) || is_delimiter(*b));
        ends.then_some(i + 3)
    })
}

#[cfg(test)]
mod tests {
    use lopdf::Object;

    use super::*;

    fn names(content: &[u8]) -> Vec<String> {
        let mut names: Vec<String> =
            names_used(content).unwrap().into_iter().map(|n| String::from_utf8(n).unwrap()).collect();
        names.sort();
        names
    }

    #[test]
    fn the_names_of_tf_and_do_are_used_and_no_others() {
        let content = b"q 1 0 0 1 0 0 cm /Im1 Do Q BT /F1 12 Tf (Hi) Tj /F2 9.5 Tf ET /GS0 gs /P0 scn /Fm2 Do";
        assert_eq!(names(content), ["F1", "F2", "Fm2", "Im1"]);
    }

    #[test]
    fn names_inside_strings_comments_and_inline_images_are_not_used() {
        let content = b"BT (a \\) /F9 1 Tf \\( (nested) ) Tj <2F46382031205466> Tj ET % /F7 1 Tf\n\
            BI /W 4 /H 1 /CS /G /BPC 8 ID \x00/F6 1 Tf\xFF EI /F1 1 Tf << /MCID 0 >> BDC EMC [(x) 5 (y)] TJ";
        assert_eq!(names(content), ["F1"]);
    }

    #[test]
    fn escaped_names_are_decoded_as_resource_names_are() {
        assert_eq!(names(b"/F#231 12 Tf /Im#20A Do"), ["F#1", "Im A"]);
    }

    #[test]
    fn an_unterminated_string_or_inline_image_gives_no_answer() {
        assert!(names_used(b"BT (unterminated /F1 1 Tf").is_none());
        assert!(names_used(b"BI /W 1 /H 1 ID \x00\x01 /F1 1 Tf").is_none());
    }

    #[test]
    fn the_fixtures_use_what_lopdf_finds_they_use() {
        for name in ["text-1page.pdf", "text-20pages.pdf", "scan-2pages.pdf"] {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pdf").join(name);
            let document = Document::load(&path).unwrap();
            for page in document.page_iter() {
                let content = document.get_page_content(page);
                let mut parsed = HashSet::new();
                for operation in lopdf::content::Content::decode(&content).unwrap().operations {
                    if let ("Tf" | "Do", Some(Object::Name(name))) =
                        (operation.operator.as_str(), operation.operands.first())
                    {
                        parsed.insert(name.clone());
                    }
                }
                assert!(!parsed.is_empty(), "{name}: the fixture names something");
                assert_eq!(names_used(&content).unwrap(), parsed, "{name}");
            }
        }
    }
}
