//! `info`: facts about a PDF, written as a JSON [`DocumentInfo`] to the output path; the caller
//! formats them for people (`texts::document_info`).
//!
//! A PDF that needs a password still gets its facts, as far as they can be read without it:
//! its version, size, checksum and encryption always; its page count, page size and fonts when
//! the objects that hold them are not themselves encrypted (they are not when they sit outside
//! object streams); its title and author never (encrypted strings).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use lopdf::{Dictionary, Document, Object};
use sha2::{Digest, Sha256};

use super::work;
use super::{PdfError, Produced};
use crate::domain::{DocumentInfo, Encryption, FontFact, PageSize};

/// The most fonts listed: a file can declare thousands, and a message is short.
pub const MAX_FONTS: usize = 100;

/// Longest text kept of a title, author, producer or creator, in characters.
const MAX_FIELD_CHARS: usize = 300;

/// `info`: the facts about `input`, as JSON, into `output`.
///
/// # Errors
///
/// [`PdfError::NotPdf`]; [`PdfError::Unreadable`] when lopdf cannot load it even as an
/// encrypted file; [`PdfError::InflatesTooMuch`]; [`PdfError::Io`].
pub fn info(input: &Path, output: &Path, max_inflate: usize) -> Result<Produced, PdfError> {
    let (input, output) = (input.to_path_buf(), output.to_path_buf());
    work::on_work_thread(move || {
        let bytes = work::read_pdf(&input)?;
        let facts = document_info(&bytes, max_inflate)?;
        let json = serde_json::to_vec_pretty(&facts).map_err(|error| PdfError::unreadable(error.to_string()))?;
        let mut file = std::fs::File::create(&output)?;
        file.write_all(&json)?;
        Ok(Produced { output_bytes: json.len() as u64, pages: facts.pages })
    })
}

/// The facts about the PDF in `bytes`.
pub(crate) fn document_info(bytes: &[u8], max_inflate: usize) -> Result<DocumentInfo, PdfError> {
    let sha256 = hex::encode(Sha256::digest(bytes));
    let file_bytes = bytes.len() as u64;
    let document = match Document::load_mem_with_options(bytes, work::load_options(max_inflate)) {
        Ok(document) => document,
        Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit })) => {
            return Err(PdfError::InflatesTooMuch { limit });
        }
        // lopdf refuses some encrypted files outright: say what the header and the trailer
        // can still tell.
        Err(error @ (lopdf::Error::InvalidPassword | lopdf::Error::Decryption(_))) => {
            tracing::debug!(%error, "an encrypted PDF that lopdf does not load without its password");
            return Ok(DocumentInfo {
                pages: None,
                page_size: None,
                version: header_version(bytes).unwrap_or_default(),
                producer: None,
                creator: None,
                title: None,
                author: None,
                encryption: Encryption::UserPassword,
                images: None,
                fonts: Vec::new(),
                file_bytes,
                sha256,
            });
        }
        Err(other) => return Err(PdfError::unreadable(format!("loading: {other}"))),
    };
    let encryption = if document.trailer.has(b"Encrypt") {
        Encryption::UserPassword
    } else if document.encryption_state.is_some() {
        Encryption::OwnerPasswordOnly
    } else {
        Encryption::None
    };
    let locked = encryption == Encryption::UserPassword;
    let page_ids: Vec<_> = document.page_iter().collect();
    let pages = (!page_ids.is_empty()).then(|| u32::try_from(page_ids.len()).unwrap_or(u32::MAX));
    let page_size = page_ids.first().and_then(|&page| page_size(&document, page));
    let field = |key: &[u8]| if locked { None } else { info_field(&document, key) };
    let (images, fonts) = resources(&document);
    Ok(DocumentInfo {
        pages,
        page_size,
        version: document.version.clone(),
        producer: field(b"Producer"),
        creator: field(b"Creator"),
        title: field(b"Title"),
        author: field(b"Author"),
        encryption,
        images: (!locked || images > 0).then_some(images),
        fonts,
        file_bytes,
        sha256,
    })
}

/// `1.7` from `%PDF-1.7` in the first KiB.
fn header_version(bytes: &[u8]) -> Option<String> {
    let window = &bytes[..bytes.len().min(1024)];
    let start = window.windows(5).position(|w| w == b"%PDF-")? + 5;
    let version: String =
        window[start..].iter().take_while(|b| b.is_ascii_digit() || **b == b'.').map(|&b| char::from(b)).collect();
    (!version.is_empty()).then_some(version)
}

/// The visible size of the page: its crop box (or media box), turned by its `/Rotate`.
fn page_size(document: &Document, page: lopdf::ObjectId) -> Option<PageSize> {
    let rectangle = work::inherited(document, page, b"CropBox")
        .or_else(|| work::inherited(document, page, b"MediaBox"))
        .and_then(|b| b.as_array().ok())?;
    let numbers: Vec<f64> = rectangle
        .iter()
        .filter_map(|n| document.dereference(n).ok().and_then(|(_, n)| n.as_float().ok()))
        .map(f64::from)
        .collect();
    let [x1, y1, x2, y2] = numbers.try_into().ok()?;
    let (width, height) = ((x2 - x1).abs(), (y2 - y1).abs());
    let rotate = work::inherited(document, page, b"Rotate").and_then(|r| r.as_i64().ok()).unwrap_or(0);
    let turned = rotate.rem_euclid(180) == 90;
    let (width_pt, height_pt) = if turned { (height, width) } else { (width, height) };
    (width_pt.is_finite() && height_pt.is_finite()).then_some(PageSize { width_pt, height_pt })
}

/// A text field of the document information dictionary.
fn info_field(document: &Document, key: &[u8]) -> Option<String> {
    let info = document.trailer.get(b"Info").ok().and_then(|i| document.dereference(i).ok())?.1.as_dict().ok()?;
    let value = document.dereference(info.get(key).ok()?).ok()?.1;
    let text = lopdf::decode_text_string(value).ok()?;
    let text: String = text.trim().chars().filter(|c| !c.is_control()).take(MAX_FIELD_CHARS).collect();
    (!text.is_empty()).then_some(text)
}

/// The image objects in the file, and its fonts (each name once, at most [`MAX_FONTS`]).
fn resources(document: &Document) -> (u32, Vec<FontFact>) {
    let mut images = 0u32;
    let mut fonts = BTreeSet::new();
    for object in document.objects.values() {
        match object {
            Object::Stream(stream) if stream.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Image") => {
                images = images.saturating_add(1);
            }
            Object::Dictionary(dict) if dict.has_type(b"Font") && fonts.len() < MAX_FONTS => {
                if let Some(font) = font_fact(document, dict) {
                    fonts.insert((font.name.clone(), font.embedded));
                }
            }
            _ => {}
        }
    }
    let fonts = fonts.into_iter().map(|(name, embedded)| FontFact { name, embedded }).collect();
    (images, fonts)
}

fn font_fact(document: &Document, font: &Dictionary) -> Option<FontFact> {
    let subtype = font.get(b"Subtype").and_then(Object::as_name).unwrap_or(b"");
    // A CID font is described by the Type0 font that uses it.
    if subtype == b"CIDFontType0" || subtype == b"CIDFontType2" {
        return None;
    }
    let name =
        font.get(b"BaseFont").and_then(Object::as_name).ok().or(font.get(b"Name").and_then(Object::as_name).ok());
    let name = String::from_utf8_lossy(name.unwrap_or(b"(unnamed)"));
    let name = match name.split_once('+') {
        Some((prefix, rest)) if prefix.len() == 6 && prefix.bytes().all(|b| b.is_ascii_uppercase()) => rest.to_owned(),
        _ => name.into_owned(),
    };
    let deref = |object: &Object| document.dereference(object).ok().map(|(_, o)| o.clone());
    let described = if subtype == b"Type0" {
        font.get(b"DescendantFonts")
            .ok()
            .and_then(deref)
            .and_then(|d| d.as_array().ok().and_then(|a| a.first().cloned()))
            .and_then(|d| deref(&d))
            .and_then(|d| d.as_dict().ok().cloned())
    } else {
        Some(font.clone())
    };
    let embedded = subtype == b"Type3"
        || described
            .and_then(|d| d.get(b"FontDescriptor").ok().and_then(deref))
            .and_then(|d| d.as_dict().ok().cloned())
            .is_some_and(|d| d.has(b"FontFile") || d.has(b"FontFile2") || d.has(b"FontFile3"));
    Some(FontFact { name: name.chars().take(MAX_FIELD_CHARS).collect(), embedded })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use crate::pdf::split::tests::fixture;

    fn facts(name: &str) -> DocumentInfo {
        document_info(&std::fs::read(fixture(name)).unwrap(), DEFAULT_MAX_INFLATE_BYTES).unwrap()
    }

    #[test]
    fn facts_of_a_ghostscript_text_pdf() {
        let facts = facts("text-20pages.pdf");
        assert_eq!(facts.pages, Some(20));
        assert_eq!(facts.encryption, Encryption::None);
        assert!(facts.producer.as_deref().is_some_and(|p| p.contains("Ghostscript")), "{facts:?}");
        assert_eq!(facts.images, Some(0));
        let names: Vec<&str> = facts.fonts.iter().map(|f| f.name.as_str()).collect();
        assert!(names.iter().any(|n| n.contains("Helvetica")), "{names:?}");
        let bytes = std::fs::read(fixture("text-20pages.pdf")).unwrap();
        assert_eq!(facts.file_bytes, bytes.len() as u64);
        assert_eq!(facts.sha256, hex::encode(Sha256::digest(&bytes)));
        assert_eq!(facts.version, header_version(&bytes).unwrap());
        assert!(facts.page_size.is_some(), "{facts:?}");
    }

    #[test]
    fn a_scan_has_its_images_counted() {
        let facts = facts("scan-2pages.pdf");
        assert_eq!((facts.pages, facts.images), (Some(2), Some(2)), "{facts:?}");
        assert!(facts.fonts.is_empty());
    }

    #[test]
    fn encryption_is_told_apart() {
        assert_eq!(facts("aes256-ownerpw-only.pdf").encryption, Encryption::OwnerPasswordOnly);
        let locked = facts("aes256-userpw.pdf");
        assert_eq!(locked.encryption, Encryption::UserPassword, "{locked:?}");
        assert_eq!(locked.title, None);
    }

    #[test]
    fn the_first_pages_size_is_turned_by_its_inherited_rotate() {
        let mut document = crate::pdf::text::tests::document_with_pages(&["", ""]);
        let pages_id = document.catalog().unwrap().get(b"Pages").unwrap().as_reference().unwrap();
        document.get_dictionary_mut(pages_id).unwrap().set("Rotate", 90);
        let page = document.page_iter().next().unwrap();
        let size = page_size(&document, page).unwrap();
        assert_eq!((size.width_pt, size.height_pt), (842.0, 595.0));
        assert_eq!(size.name(), Some("A4"));
    }
}
