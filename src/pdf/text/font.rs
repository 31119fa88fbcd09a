//! Fonts as text extraction needs them: the characters each code stands for (`/ToUnicode`
//! maps, `/Encoding` and `/Differences`, an embedded program's built-in encoding) and the
//! width each glyph advances by.

use std::collections::HashMap;

use lopdf::{Dictionary, Document, Encoding, Object};

use super::{cff, cmap, number, standard_fonts};
use crate::pdf::PdfError;

/// What extracting text needs of a font.
pub(super) struct Font<'a> {
    /// A simple font's characters, code by code.
    table: Option<Vec<String>>,
    /// A Type0 font's map from codes to characters, lopdf's…
    encoding: Option<Encoding<'a>>,
    /// …or, for the two-byte Identity encodings, its own reading of the `/ToUnicode` map.
    unicode: Option<cmap::ToUnicode>,
    /// A Type0 font: two bytes per character code.
    pub(super) two_byte: bool,
    widths: Widths,
    /// Glyph space to text space: 1/1000, or a Type3 font's `/FontMatrix`.
    pub(super) scale: f64,
}

enum Widths {
    Simple { first: i64, widths: Vec<f64>, missing: f64 },
    Cid { default: f64, widths: HashMap<u32, f64> },
}

/// Most character codes one `/W` range may give a width to (two-byte codes end at 65 535).
const MAX_CID_WIDTHS: usize = 65_536;

/// Half an em: the width of a glyph whose font says nothing about it.
const DEFAULT_WIDTH: f64 = 500.0;

impl<'a> Font<'a> {
    /// The font `dict` describes in `document`: how its codes split, the characters and the
    /// width of each (streams inflated up to `max_inflate` bytes).
    ///
    /// Kept whole: the font's facts (its kind, encoding, widths, maps) are read from one
    /// dictionary in the order each depends on the last.
    pub(super) fn load(document: &'a Document, dict: &'a Dictionary, max_inflate: usize) -> Result<Self, PdfError> {
        let subtype = dict.get(b"Subtype").and_then(Object::as_name).unwrap_or(b"");
        let two_byte = subtype == b"Type0";
        let identity = matches!(dict.get(b"Encoding").and_then(Object::as_name), Ok(b"Identity-H" | b"Identity-V"));
        let unicode = if two_byte && identity { to_unicode(document, dict, max_inflate)? } else { None };
        let (table, encoding) = if two_byte {
            (None, if unicode.is_some() { None } else { font_encoding(document, dict, max_inflate)? })
        } else {
            (Some(simple_table(document, dict, max_inflate)?), None)
        };
        let deref = |object: &'a Object| document.dereference(object).ok().map(|(_, object)| object);
        let widths = if two_byte {
            let descendant = dict
                .get(b"DescendantFonts")
                .ok()
                .and_then(deref)
                .and_then(|d| d.as_array().ok())
                .and_then(|fonts| fonts.first())
                .and_then(deref)
                .and_then(|font| font.as_dict().ok());
            let default = descendant.and_then(|d| d.get(b"DW").ok()).and_then(number).unwrap_or(1000.0);
            let array = descendant.and_then(|d| d.get(b"W").ok()).and_then(deref).and_then(|w| w.as_array().ok());
            Widths::Cid { default, widths: array.map(|w| cid_widths(document, w)).unwrap_or_default() }
        } else {
            let mut first = dict.get(b"FirstChar").ok().and_then(|f| f.as_i64().ok()).unwrap_or(0);
            let mut widths: Vec<f64> = dict
                .get(b"Widths")
                .ok()
                .and_then(deref)
                .and_then(|w| w.as_array().ok())
                .map(|w| w.iter().map(|w| deref(w).and_then(number).unwrap_or(0.0)).collect())
                .unwrap_or_default();
            let missing = dict
                .get(b"FontDescriptor")
                .ok()
                .and_then(deref)
                .and_then(|d| d.as_dict().ok())
                .and_then(|d| d.get(b"MissingWidth").ok())
                .and_then(number)
                .filter(|w| *w > 0.0)
                .unwrap_or(DEFAULT_WIDTH);
            // A standard font may come without widths: its own are known.
            let base_font = dict.get(b"BaseFont").and_then(Object::as_name).unwrap_or(b"");
            if widths.is_empty()
                && let (Some(standard), Some(table)) = (standard_fonts::StandardFont::named(base_font), &table)
            {
                widths = table.iter().map(|text| standard.width(text).unwrap_or(0.0)).collect();
                first = 0;
            }
            Widths::Simple { first, widths, missing }
        };
        let scale = if subtype == b"Type3" {
            dict.get(b"FontMatrix")
                .ok()
                .and_then(deref)
                .and_then(|m| m.as_array().ok())
                .and_then(|m| m.first())
                .and_then(number)
                .filter(|s| s.is_finite() && *s != 0.0)
                .unwrap_or(0.001)
        } else {
            0.001
        };
        Ok(Self { table, encoding, unicode, two_byte, widths, scale })
    }

    pub(super) fn width(&self, code: u32) -> f64 {
        match &self.widths {
            Widths::Simple { first, widths, missing } => {
                let index = i64::from(code) - first;
                usize::try_from(index)
                    .ok()
                    .and_then(|i| widths.get(i))
                    .copied()
                    .filter(|w| *w > 0.0)
                    .unwrap_or(if widths.is_empty() { DEFAULT_WIDTH } else { *missing })
            }
            Widths::Cid { default, widths } => widths.get(&code).copied().unwrap_or(*default),
        }
    }

    /// The characters `bytes` stand for, appended to `out`.
    pub(super) fn decode(&self, bytes: &[u8], out: &mut String) {
        let mut decoded = String::new();
        if let Some(table) = &self.table {
            for &byte in bytes {
                decoded.push_str(&table[usize::from(byte)]);
            }
        } else if let Some(unicode) = &self.unicode {
            for (code, _) in self.codes(bytes) {
                decoded.extend(unicode.get(code));
            }
        } else if self.encoding.as_ref().is_none_or(|e| e.write_to_string(bytes, &mut decoded).is_err()) {
            // Without a map from codes to characters, two-byte codes mean nothing.
            return;
        }
        for c in decoded.chars() {
            match c {
                '\u{FB00}' => out.push_str("ff"),
                '\u{FB01}' => out.push_str("fi"),
                '\u{FB02}' => out.push_str("fl"),
                '\u{FB03}' => out.push_str("ffi"),
                '\u{FB04}' => out.push_str("ffl"),
                '\u{FB06}' => out.push_str("st"),
                c if c.is_whitespace() => out.push(' '),
                c if c.is_control() || c == '\u{FFFD}' => {}
                c => out.push(c),
            }
        }
    }

    /// The codes in `bytes`, with whether each is the single-byte code 32 (which word spacing
    /// widens).
    pub(super) fn codes<'b>(&self, bytes: &'b [u8]) -> impl Iterator<Item = (u32, bool)> + 'b {
        let step = if self.two_byte { 2 } else { 1 };
        let two_byte = self.two_byte;
        bytes.chunks(step).map(move |chunk| {
            let code = chunk.iter().fold(0u32, |code, &b| (code << 8) | u32::from(b));
            (code, !two_byte && code == 32)
        })
    }
}

/// lopdf's encoding of the font `dict`; `None` when it has none it can read.
fn font_encoding<'a>(
    document: &'a Document,
    dict: &'a Dictionary,
    max_inflate: usize,
) -> Result<Option<Encoding<'a>>, PdfError> {
    match dict.get_font_encoding_with_limit(document, max_inflate) {
        Ok(encoding) => Ok(Some(encoding)),
        Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit })) => {
            Err(PdfError::InflatesTooMuch { limit })
        }
        Err(_) => Ok(None),
    }
}

/// The characters of a simple font's 256 codes: its `/ToUnicode` map where it has one (lopdf
/// prefers `/Encoding`, which is wrong for fonts that have both), else its encoding, on top of
/// the built-in encoding of an embedded Type 1 program when the PDF names no base encoding
/// (TeX's math and symbol fonts: without it their periods read as colons).
///
/// Kept whole: the layers apply in order of precedence, each over the one before, and read best in
/// that order.
fn simple_table(document: &Document, dict: &Dictionary, max_inflate: usize) -> Result<Vec<String>, PdfError> {
    let decode_all = |encoding: &Encoding<'_>| -> Vec<Option<String>> {
        (0..=255u8)
            .map(|byte| {
                let mut text = String::new();
                let ok = encoding.write_to_string(&[byte], &mut text).is_ok();
                (ok && !text.is_empty() && !text.contains('\u{FFFD}')).then_some(text)
            })
            .collect()
    };
    let mut base = dict.clone();
    base.remove(b"ToUnicode");
    let own = dict.get(b"Encoding").ok().and_then(|e| document.dereference(e).ok()).map(|(_, e)| e);
    let own_base = match own {
        Some(Object::Name(name)) => Some(name.clone()),
        Some(Object::Dictionary(e)) => e.get(b"BaseEncoding").and_then(Object::as_name).ok().map(<[u8]>::to_vec),
        _ => None,
    };
    // Code → glyph name: the program's built-in encoding when no base encoding is named, then
    // the PDF's own `/Differences`.
    let mut names: Vec<(u8, Vec<u8>)> = Vec::new();
    if own_base.is_none()
        && let Some(builtin) = builtin_encoding(document, dict, max_inflate)?
    {
        names.extend(builtin);
    }
    if let Some(Object::Dictionary(own)) = own
        && let Ok(Object::Array(differences)) = own.get(b"Differences")
    {
        let mut code: i64 = 0;
        for item in differences {
            match item {
                Object::Integer(n) => code = *n,
                Object::Name(name) => {
                    if let Ok(byte) = u8::try_from(code) {
                        names.push((byte, name.clone()));
                    }
                    code += 1;
                }
                _ => {}
            }
        }
    }
    // lopdf gives up on a whole font for one glyph name it does not know: hand it only those
    // it knows, and read `uniXXXX` names here.
    let mut by_name: Vec<(u8, String)> = Vec::new();
    let mut differences = Vec::new();
    for (code, name) in names {
        if let Some(text) = unicode_name(&name) {
            by_name.push((code, text));
        } else if known_glyph(&name) {
            differences.push(Object::Integer(i64::from(code)));
            differences.push(Object::Name(name));
        }
    }
    let mut encoding = lopdf::Dictionary::new();
    if let Some(own_base) = own_base {
        encoding.set("BaseEncoding", Object::Name(own_base));
    }
    encoding.set("Differences", differences);
    base.set("Encoding", encoding);
    let mut table: Vec<Option<String>> = match font_encoding(document, &base, max_inflate)? {
        Some(encoding) => decode_all(&encoding),
        None => vec![None; 256],
    };
    for (code, text) in by_name {
        table[usize::from(code)] = Some(text);
    }
    if let Some(unicode) = to_unicode(document, dict, max_inflate)? {
        for (code, slot) in table.iter_mut().enumerate() {
            if let Some(mapped) = unicode.get(code as u32) {
                *slot = Some(mapped);
            }
        }
    }
    Ok(table
        .into_iter()
        .enumerate()
        .map(|(code, text)| text.unwrap_or_else(|| char::from(code as u8).to_string()))
        .collect())
}

/// The font's `/ToUnicode` map, when it has one that maps anything.
fn to_unicode(document: &Document, dict: &Dictionary, max_inflate: usize) -> Result<Option<cmap::ToUnicode>, PdfError> {
    let Some(stream) =
        dict.get(b"ToUnicode").ok().and_then(|t| document.dereference(t).ok()).and_then(|(_, t)| t.as_stream().ok())
    else {
        return Ok(None);
    };
    Ok(font_program(stream, max_inflate)?.and_then(|program| cmap::ToUnicode::parse(&program)))
}

/// The character a glyph name like `uni2013` or `u1F600` stands for.
fn unicode_name(name: &[u8]) -> Option<String> {
    let name = std::str::from_utf8(name).ok()?;
    let hex = name
        .strip_prefix("uni")
        .filter(|h| h.len() == 4)
        .or_else(|| name.strip_prefix('u').filter(|h| (4..=6).contains(&h.len())))?;
    char::from_u32(u32::from_str_radix(hex, 16).ok()?).map(String::from)
}

/// Whether lopdf's glyph list has `name`.
fn known_glyph(name: &[u8]) -> bool {
    thread_local! {
        static KNOWN: std::cell::RefCell<HashMap<Vec<u8>, bool>> = std::cell::RefCell::new(HashMap::new());
    }
    KNOWN.with(|known| {
        *known.borrow_mut().entry(name.to_vec()).or_insert_with(|| {
            let mut encoding = Dictionary::new();
            encoding.set("Differences", vec![Object::Integer(0), Object::Name(name.to_vec())]);
            let mut probe = Dictionary::new();
            probe.set("Type", Object::Name(b"Font".to_vec()));
            probe.set("Encoding", encoding);
            let document = Document::new();
            matches!(probe.get_font_encoding(&document), Ok(Encoding::Differences(_)))
        })
    })
}

/// A character code and the glyph name it shows.
pub(super) type GlyphName = (u8, Vec<u8>);

/// The built-in encoding of the font's embedded program, as a `/Differences` array: for a
/// Type 1 program (`/FontFile`) the `dup 58 /period put` entries of its clear-text part, for a
/// CFF one (`/FontFile3` of `/Subtype /Type1C`) the encoding [`cff::builtin_encoding`] reads.
fn builtin_encoding(
    document: &Document,
    dict: &Dictionary,
    max_inflate: usize,
) -> Result<Option<Vec<GlyphName>>, PdfError> {
    let descriptor =
        dict.get(b"FontDescriptor").ok().and_then(|d| document.dereference(d).ok()).and_then(|(_, d)| d.as_dict().ok());
    let program = |key: &[u8]| {
        descriptor
            .and_then(|d| d.get(key).ok())
            .and_then(|f| document.dereference(f).ok())
            .and_then(|(_, f)| f.as_stream().ok())
    };
    if let Some(compact) = program(b"FontFile3")
        && compact.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Type1C".as_slice())
    {
        return Ok(font_program(compact, max_inflate)?.and_then(|bytes| cff::builtin_encoding(&bytes)));
    }
    let Some(bytes) = program(b"FontFile").map(|program| font_program(program, max_inflate)).transpose()?.flatten()
    else {
        return Ok(None);
    };
    let clear = bytes.windows(5).position(|w| w == b"eexec").map_or(&bytes[..], |end| &bytes[..end]);
    let clear = String::from_utf8_lossy(clear);
    if clear.contains("/Encoding StandardEncoding") {
        return Ok(None);
    }
    let mut differences = Vec::new();
    let words: Vec<&str> = clear.split_ascii_whitespace().collect();
    for window in words.windows(4) {
        if let ["dup", code, name, "put"] = window
            && let (Ok(code), Some(name)) = (code.parse::<u8>(), name.strip_prefix('/'))
        {
            differences.push((code, name.as_bytes().to_vec()));
        }
    }
    Ok((!differences.is_empty()).then_some(differences))
}

/// The decoded bytes of a font program; `None` when its filters fail.
fn font_program(program: &lopdf::Stream, max_inflate: usize) -> Result<Option<Vec<u8>>, PdfError> {
    match program.decompressed_content_with_limit(max_inflate) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit })) => {
            Err(PdfError::InflatesTooMuch { limit })
        }
        Err(_) if !program.dict.has(b"Filter") => Ok(Some(program.content.clone())),
        Err(_) => Ok(None),
    }
}

/// A Type0 font's `/W` array: `c [w1 w2 …]` and `cfirst clast w` entries.
fn cid_widths(document: &Document, array: &[Object]) -> HashMap<u32, f64> {
    let mut widths = HashMap::new();
    let deref = |object: &Object| document.dereference(object).ok().map(|(_, o)| o.clone());
    let mut items = array.iter().filter_map(deref).peekable();
    while let Some(first) = items.next() {
        let Some(first) = number(&first).map(|f| f as u32) else { break };
        match items.next() {
            Some(Object::Array(list)) => {
                for (offset, width) in list.iter().take(MAX_CID_WIDTHS).enumerate() {
                    if let Some(width) = number(width) {
                        widths.insert(first.saturating_add(offset as u32), width);
                    }
                }
            }
            Some(last) => {
                let (Some(last), Some(width)) = (number(&last), items.next().as_ref().and_then(number)) else { break };
                let last = (last as u32).min(first.saturating_add(MAX_CID_WIDTHS as u32));
                for code in first..=last {
                    widths.insert(code, width);
                }
            }
            None => break,
        }
        if widths.len() > MAX_CID_WIDTHS {
            break;
        }
    }
    widths
}

#[cfg(test)]
mod tests {
    use lopdf::{Document, Object, Stream, dictionary};

    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use crate::pdf::text::page_texts;
    use crate::pdf::text::tests::document_with_pages;

    /// The id of the one font of [`document_with_pages`].
    fn font_id(document: &Document) -> lopdf::ObjectId {
        let font = document.objects.iter().find(|(_, o)| o.type_name().ok() == Some(b"Font".as_slice()));
        *font.unwrap().0
    }

    fn to_unicode(document: &mut Document, program: &str) -> Object {
        Object::Reference(document.add_object(Stream::new(dictionary! {}, program.as_bytes().to_vec())))
    }

    #[test]
    fn a_to_unicode_range_of_mathematical_letters_counts_up() {
        // As pdfTeX maps TeX's calligraphic capitals: a range starting at U+1D49C, a surrogate
        // pair, with B (U+212C) on its own.
        let mut document = document_with_pages(&["BT /F1 10 Tf 72 700 Td (ABC) Tj ET"]);
        let map =
            to_unicode(&mut document, "beginbfrange <41> <5A> <D835DC9C> endbfrange beginbfchar <42> <212C> endbfchar");
        document.get_dictionary_mut(font_id(&document)).unwrap().set("ToUnicode", map);
        assert_eq!(page_texts(&document, DEFAULT_MAX_INFLATE_BYTES).unwrap(), ["𝒜ℬ𝒞\n"]);
    }

    #[test]
    fn a_two_byte_code_the_to_unicode_map_leaves_out_takes_no_other_glyph_with_it() {
        let mut document = document_with_pages(&["BT /F1 10 Tf 72 700 Td <0001000300020004> Tj ET"]);
        let map = to_unicode(
            &mut document,
            "1 begincodespacerange <0000> <FFFF> endcodespacerange \
             beginbfchar <0001> <0048> <0002> <0069> <0004> <FB01> endbfchar",
        );
        let descendant = document.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "CIDFontType0", "BaseFont" => "Test", "DW" => 500,
            "CIDSystemInfo" => dictionary! { "Registry" => Object::string_literal("Adobe"),
                "Ordering" => Object::string_literal("Identity"), "Supplement" => 0 },
        });
        let font = document.get_dictionary_mut(font_id(&document)).unwrap();
        font.set("Subtype", "Type0");
        font.set("Encoding", "Identity-H");
        font.set("DescendantFonts", vec![Object::Reference(descendant)]);
        font.set("ToUnicode", map);
        assert_eq!(page_texts(&document, DEFAULT_MAX_INFLATE_BYTES).unwrap(), ["Hifi\n"]);
    }
}
