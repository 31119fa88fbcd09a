//! Writes a PDF file from numbered objects in the layout qpdf writes: streams (and objects of a
//! generation other than 0) at byte offsets, every other object packed into deflated object
//! streams, and a cross-reference stream in the narrowest widths, deflated; encrypted when
//! asked.
//!
//! Two things lopdf's writer does not do. It writes an encrypted document one object at a time
//! (`Document::encrypt` drops the key before the writer could encrypt an object stream), which
//! makes an encrypted file bigger than qpdf's (1.015 × on owner-password-only files). And it
//! writes only a [`Document`] of its own, into which `split` and `pages` would have to copy
//! every object a part needs. Here an object can be written straight from the document it
//! belongs to, its references renumbered as they are written ([`Item::renumbered`]).
//!
//! ISO 32000-1, 7.5.7 and 7.6.1: an object stream is encrypted as a stream, with its own object
//! number, and the objects inside it are not encrypted again; streams, objects of a generation
//! other than 0 and the encryption dictionary stay outside. The cross-reference stream is never
//! encrypted.
//!
//! Owns only the file layout; it knows nothing about what the operations did to the objects.
//! `optimize`, `split`, `pages`, `rotate` and `decrypt` write every file they make through it
//! (`topdf` still saves with lopdf).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

use lopdf::{Dictionary, Document, EncryptionState, Object, ObjectId, Stream, Writer, encryption};

use super::PdfError;
use super::optimize::{deflate_at, deflate_best};

/// One object of the file.
pub(crate) struct Item<'a> {
    /// Its number in the file.
    pub(crate) id: ObjectId,
    pub(crate) object: Cow<'a, Object>,
    /// Whether its references are those of the document it comes from, renumbered as it is
    /// written, rather than the file's own.
    pub(crate) renumbered: bool,
}

/// How the file is laid out.
pub(crate) struct Layout<'a> {
    /// The PDF version; 1.5 at least, which object streams need.
    pub(crate) version: &'a str,
    pub(crate) objects_per_stream: usize,
    /// libdeflate's level for the object streams.
    pub(crate) level: i32,
    /// Encrypt the file with this; its `/ID` must be the one the state was made with, since older
    /// handlers derive the key from it.
    pub(crate) encryption: Option<&'a EncryptionState>,
}

/// A source reference's number in the file; `None` writes `null` in its place.
pub(crate) type Renumber<'r> = &'r (dyn Fn(ObjectId) -> Option<ObjectId> + Sync);

/// The file made of `items`, laid out as `layout` says. `trailer` holds the file's own
/// references (`/Root`, `/Info`) and its `/ID`; the writer adds the rest.
///
/// # Errors
///
/// [`PdfError::Unreadable`] if an object cannot be encrypted or the file would have more objects
/// than PDF can number.
pub(crate) fn write_pdf(
    layout: &Layout<'_>,
    items: Vec<Item<'_>>,
    mut trailer: Dictionary,
    renumber: Renumber<'_>,
) -> Result<Vec<u8>, PdfError> {
    let mut numbers = FreeNumbers { last: items.iter().map(|item| item.id.0).max().unwrap_or(0) };
    let (packed, mut direct): (Vec<Item<'_>>, Vec<Item<'_>>) = items.into_iter().partition(packable);

    // Object number → where it is: a byte offset, or a container and an index in it.
    let mut entries: BTreeMap<u32, Entry> = BTreeMap::new();
    let mut written_by_us = pack_object_streams(layout, &packed, renumber, &mut numbers, &mut entries)?;
    if let Some(state) = layout.encryption {
        for item in &mut direct {
            encryption::encrypt_object(state, item.id, item.object.to_mut()).map_err(encrypting)?;
        }
        let encrypt_dict = state.encode().map_err(|error| PdfError::unreadable(format!("encrypting: {error}")))?;
        let encrypt_id = (numbers.next()?, 0);
        trailer.set("Encrypt", Object::Reference(encrypt_id));
        written_by_us.push((encrypt_id, Object::Dictionary(encrypt_dict)));
    }
    let xref_id = numbers.next()?;

    // Room for the streams' data up front: for a scan that is nearly all of the file, and
    // growing into it would copy it again and again.
    let stream_bytes: usize =
        direct.iter().filter_map(|item| item.object.as_stream().ok()).map(|s| s.content.len()).sum();
    let packed_bytes: usize =
        written_by_us.iter().filter_map(|(_, object)| object.as_stream().ok()).map(|s| s.content.len()).sum();
    let mut out = Vec::with_capacity(stream_bytes + packed_bytes + 64 * direct.len() + 4096);
    writeln!(out, "%PDF-{}", layout.version.max("1.5"))?;
    out.extend_from_slice(b"%\xe2\xe3\xcf\xd3\n");
    for item in &direct {
        entries.insert(item.id.0, Entry::At { offset: out.len() as u64, generation: item.id.1 });
        write_indirect(&mut out, item.id, &item.object, item.renumbered.then_some(renumber))?;
    }
    for (id, object) in &written_by_us {
        entries.insert(id.0, Entry::At { offset: out.len() as u64, generation: id.1 });
        write_indirect(&mut out, *id, object, None)?;
    }

    let xref_at = out.len() as u64;
    entries.insert(xref_id, Entry::At { offset: xref_at, generation: 0 });
    let xref = xref_stream(layout, trailer, &entries, xref_id);
    write_indirect(&mut out, (xref_id, 0), &xref, None)?;
    write!(out, "startxref\n{xref_at}\n%%EOF\n")?;
    Ok(out)
}

/// An object that could not be encrypted again, as the refusal says it.
fn encrypting(error: lopdf::encryption::DecryptionError) -> PdfError {
    PdfError::unreadable(format!("encrypting the result again: {error}"))
}

/// The object numbers a written file adds (object streams, the encryption dictionary, the
/// cross-reference stream): each one past the highest in use.
struct FreeNumbers {
    /// The highest number given so far.
    last: u32,
}

impl FreeNumbers {
    /// The next free number.
    ///
    /// # Errors
    ///
    /// [`PdfError::Unreadable`] past the last number PDF can write.
    fn next(&mut self) -> Result<u32, PdfError> {
        self.last = self.last.checked_add(1).ok_or_else(|| PdfError::unreadable("too many objects to number"))?;
        Ok(self.last)
    }
}

/// `packed` in object streams of at most `layout.objects_per_stream` objects, deflated and (with
/// `layout.encryption`) encrypted, numbered from `numbers`; each member's place is recorded in
/// `entries`.
fn pack_object_streams(
    layout: &Layout<'_>,
    packed: &[Item<'_>],
    renumber: Renumber<'_>,
    numbers: &mut FreeNumbers,
    entries: &mut BTreeMap<u32, Entry>,
) -> Result<Vec<(ObjectId, Object)>, PdfError> {
    let mut containers: Vec<(ObjectId, Object)> = Vec::new();
    for members in packed.chunks(layout.objects_per_stream.clamp(1, usize::from(u16::MAX))) {
        let container = numbers.next()?;
        let mut offsets = String::new();
        let mut body = Vec::new();
        for (index, item) in members.iter().enumerate() {
            let _ = write!(offsets, "{} {} ", item.id.0, body.len());
            write_object(&mut body, &item.object, item.renumbered.then_some(renumber))?;
            body.push(b'\n');
            entries.insert(item.id.0, Entry::Packed { container, index: u32::try_from(index).unwrap_or(u32::MAX) });
        }
        let mut content = offsets.into_bytes();
        let first = content.len();
        content.extend_from_slice(&body);
        let mut dict = Dictionary::new();
        dict.set("Type", "ObjStm");
        dict.set("N", i64::try_from(members.len()).unwrap_or(i64::MAX));
        dict.set("First", i64::try_from(first).unwrap_or(i64::MAX));
        dict.set("Filter", "FlateDecode");
        let mut stream = Object::Stream(Stream::new(dict, deflate_at(layout.level, &content)));
        if let Some(state) = layout.encryption {
            encryption::encrypt_object(state, (container, 0), &mut stream).map_err(encrypting)?;
        }
        containers.push(((container, 0), stream));
    }
    Ok(containers)
}

/// The cross-reference stream at number `xref_id`, which ends the file: a row per object number
/// up to it, from `entries`, under `trailer` stripped of what an earlier file's cross-reference
/// said about itself.
fn xref_stream(layout: &Layout<'_>, mut trailer: Dictionary, entries: &BTreeMap<u32, Entry>, xref_id: u32) -> Object {
    let rows: Vec<[u64; 3]> = (0..=xref_id)
        .map(|number| match entries.get(&number) {
            Some(Entry::At { offset, generation }) => [1, *offset, u64::from(*generation)],
            Some(Entry::Packed { container, index }) => [2, u64::from(*container), u64::from(*index)],
            None if number == 0 => [0, 0, 65535],
            None => [0, 0, 0],
        })
        .collect();
    let xref = encode_xref_rows(&rows);
    for key in [&b"Prev"[..], b"XRefStm", b"Type", b"Size", b"W", b"Index", b"Filter", b"DecodeParms", b"Length"] {
        trailer.remove(key);
    }
    if layout.encryption.is_none() {
        trailer.remove(b"Encrypt");
    }
    trailer.set("Type", "XRef");
    trailer.set("Size", i64::from(xref_id) + 1);
    let widths = xref.widths.iter().map(|&width| Object::Integer(width as i64)).collect::<Vec<_>>();
    trailer.set("W", widths);
    if let Some(columns) = xref.predictor_columns {
        trailer.set("Filter", "FlateDecode");
        trailer.set("DecodeParms", lopdf::dictionary! { "Columns" => columns as i64, "Predictor" => 12 });
    }
    Object::Stream(Stream::new(trailer, xref.data))
}

/// `document` as a file: every object that may be packed in object streams of at most
/// `objects_per_stream` objects, deflated at `level`, encrypted with `encryption` when given (the
/// document as loaded, decrypted). The document's trailer (`/Root`, `/Info`, `/ID`) is kept.
///
/// # Errors
///
/// As [`write_pdf`].
pub(crate) fn save(
    document: &Document,
    encryption: Option<&EncryptionState>,
    objects_per_stream: usize,
    level: i32,
) -> Result<Vec<u8>, PdfError> {
    let items = document
        .objects
        .iter()
        .map(|(&id, object)| Item { id, object: Cow::Borrowed(object), renumbered: false })
        .collect();
    let layout = Layout { version: &document.version, objects_per_stream, level, encryption };
    write_pdf(&layout, items, document.trailer.clone(), &Some)
}

/// Whether an object goes into an object stream: not a stream, generation 0, and not a
/// cross-reference or object stream's dictionary (lopdf's rules; the encryption dictionary is
/// the writer's own and never among the items).
fn packable(item: &Item<'_>) -> bool {
    match item.object.as_ref() {
        Object::Stream(_) => false,
        Object::Dictionary(dict) if matches!(dict.get_type(), Ok(b"XRef" | b"ObjStm")) => false,
        _ => item.id.1 == 0,
    }
}

/// Cross-reference rows smaller than this are not deflated (see [`encode_xref_rows`]).
const SMALLEST_XREF_WORTH_DEFLATING: usize = 1024;

/// A cross-reference stream's data, as qpdf writes it: on a file of 60,000 objects, lopdf's
/// 7 bytes an entry (414 KB) become 13 KB.
struct XrefData {
    /// Bytes of each field: the narrowest that hold every row's value.
    widths: [usize; 3],
    /// The rows, deflated after the PNG "Up" predictor when that is smaller, as they are
    /// otherwise.
    data: Vec<u8>,
    /// The predictor's `/Columns` when the data is deflated.
    predictor_columns: Option<usize>,
}

/// Encodes a cross-reference stream's rows (type, then the two fields the type gives meaning).
fn encode_xref_rows(rows: &[[u64; 3]]) -> XrefData {
    let mut widths = [0usize; 3];
    for (i, width) in widths.iter_mut().enumerate() {
        let largest = rows.iter().map(|r| r[i]).max().unwrap_or(0);
        *width = (((64 - largest.leading_zeros()) as usize).div_ceil(8)).max(1);
    }
    let columns: usize = widths.iter().sum();
    let mut plain = Vec::with_capacity(rows.len() * columns);
    let mut predicted = Vec::with_capacity(rows.len() * (columns + 1));
    let mut previous = vec![0u8; columns];
    let mut current = Vec::with_capacity(columns);
    for fields in rows {
        current.clear();
        for (value, &width) in fields.iter().zip(&widths) {
            current.extend_from_slice(&value.to_be_bytes()[8 - width..]);
        }
        plain.extend_from_slice(&current);
        predicted.push(2);
        predicted.extend(current.iter().zip(&previous).map(|(now, before)| now.wrapping_sub(*before)));
        std::mem::swap(&mut previous, &mut current);
    }
    // The filter and predictor cost about 60 bytes of dictionary: a small table gains a few
    // bytes at most, and a deflate costs more than its data (libdeflate clears a 192 KiB hash
    // table for every call), which a `split` into a thousand parts pays a thousand times.
    if plain.len() < SMALLEST_XREF_WORTH_DEFLATING {
        return XrefData { widths, data: plain, predictor_columns: None };
    }
    let compressed = deflate_best(&predicted);
    if compressed.len() + 60 < plain.len() {
        XrefData { widths, data: compressed, predictor_columns: Some(columns) }
    } else {
        XrefData { widths, data: plain, predictor_columns: None }
    }
}

/// Where an object is in the file.
enum Entry {
    At { offset: u64, generation: u16 },
    Packed { container: u32, index: u32 },
}

fn write_indirect(
    out: &mut Vec<u8>,
    id: ObjectId,
    object: &Object,
    renumber: Option<Renumber<'_>>,
) -> std::io::Result<()> {
    write!(out, "{} {} obj\n{}", id.0, id.1, if Writer::need_separator(object) { " " } else { "" })?;
    write_object(out, object, renumber)?;
    write!(out, "{}\nendobj\n", if Writer::need_end_separator(object) { " " } else { "" })
}

/// Writes `object` as lopdf's [`Writer::write_object`] does, byte for byte, except that with
/// `renumber` every reference is looked up in it (`null` where it has none), and a stream's
/// `/Length` is the number of bytes it holds, whatever its dictionary says (an indirect length
/// would refer to an object the file may not have).
fn write_object(out: &mut Vec<u8>, object: &Object, renumber: Option<Renumber<'_>>) -> std::io::Result<()> {
    match object {
        Object::Array(items) => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 && Writer::need_separator(item) {
                    out.push(b' ');
                }
                write_object(out, item, renumber)?;
            }
            out.push(b']');
        }
        Object::Dictionary(dict) => write_dictionary(out, dict, None, renumber)?,
        Object::Stream(stream) => {
            write_dictionary(out, &stream.dict, Some(stream.content.len()), renumber)?;
            out.extend_from_slice(b"stream\n");
            out.extend_from_slice(&stream.content);
            out.extend_from_slice(b"\nendstream");
        }
        Object::Reference(id) => match renumber.map_or(Some(*id), |renumber| renumber(*id)) {
            Some((number, generation)) => write!(out, "{number} {generation} R")?,
            None => out.extend_from_slice(b"null"),
        },
        // As lopdf writes it, without its `String` for every number: a whole number gets a point
        // (`0.0`, not `0`, which would read back as an integer).
        Object::Real(value) if value.is_finite() => {
            let start = out.len();
            write!(out, "{value}")?;
            if !out[start..].contains(&b'.') {
                out.extend_from_slice(b".0");
            }
        }
        leaf => Writer::write_object(out, leaf)?,
    }
    Ok(())
}

/// A dictionary; with `stream_length`, a stream's, whose `/Length` is that.
fn write_dictionary(
    out: &mut Vec<u8>,
    dict: &Dictionary,
    stream_length: Option<usize>,
    renumber: Option<Renumber<'_>>,
) -> std::io::Result<()> {
    let length = stream_length.map(|length| Object::Integer(i64::try_from(length).unwrap_or(i64::MAX)));
    out.extend_from_slice(b"<<");
    for (key, value) in dict {
        let value = match &length {
            Some(length) if key == b"Length" => length,
            _ => value,
        };
        write_name(out, key);
        if Writer::need_separator(value) {
            out.push(b' ');
        }
        write_object(out, value, renumber)?;
    }
    if let Some(length) = &length
        && !dict.has(b"Length")
    {
        write_name(out, b"Length");
        out.push(b' ');
        write_object(out, length, None)?;
    }
    out.extend_from_slice(b">>");
    Ok(())
}

/// A name as lopdf writes it: white space, delimiters, `#` and bytes outside `!`…`~` as `#xx`.
fn write_name(out: &mut Vec<u8>, name: &[u8]) {
    out.push(b'/');
    for &byte in name {
        if b" \t\n\r\x0C()<>[]{}/%#".contains(&byte) || !(33..=126).contains(&byte) {
            let _ = write!(out, "#{byte:02X}");
        } else {
            out.push(byte);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use lopdf::{EncryptionVersion, Permissions, SaveOptions, dictionary};

    use super::*;

    fn fixture(relative: &str) -> Document {
        Document::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(relative)).unwrap()
    }

    /// `document` saved as `optimize` saved encrypted documents before: lopdf's own writer.
    fn saved_by_lopdf(mut document: Document, state: &EncryptionState) -> Vec<u8> {
        document.encrypt(state).unwrap();
        let mut saved = Vec::new();
        document
            .save_with_options(&mut saved, SaveOptions { use_xref_streams: true, ..SaveOptions::default() })
            .unwrap();
        saved
    }

    fn page_texts(document: &Document) -> Vec<Vec<u8>> {
        document.get_pages().values().map(|&page| document.get_page_content(page)).collect()
    }

    /// Saves `document` both ways and checks what a reader gets from ours.
    fn check_round_trip(mut document: Document, state: &EncryptionState) {
        document.encryption_state = None;
        let expected = page_texts(&document);
        let ours = save(&document, Some(state), 100, 9).unwrap();
        let theirs = saved_by_lopdf(document, state);

        let reloaded = Document::load_mem(&ours).unwrap();
        let reloaded_state = reloaded.encryption_state.as_ref().expect("the output must still be encrypted");
        assert_eq!(reloaded_state.permissions(), state.permissions());
        assert_eq!(reloaded_state.revision(), state.revision());
        assert_eq!(page_texts(&reloaded), expected);
        assert!(ours.windows(7).any(|w| w == b"/ObjStm"), "no object stream written");
        assert!(ours.len() < theirs.len(), "{} >= {} (lopdf's)", ours.len(), theirs.len());
    }

    #[test]
    fn an_aes256_owner_password_pdf_is_written_with_encrypted_object_streams() {
        let document = fixture("pdf/aes256-ownerpw-only.pdf");
        let state = document.encryption_state.clone().unwrap();
        check_round_trip(document, &state);
    }

    #[test]
    fn an_rc4_owner_password_pdf_is_written_with_encrypted_object_streams() {
        let mut document = fixture("pdf/text-20pages.pdf");
        if !document.trailer.has(b"ID") {
            let id = Object::String(b"0123456789abcdef".to_vec(), lopdf::StringFormat::Hexadecimal);
            document.trailer.set("ID", vec![id.clone(), id]);
        }
        let permissions = Permissions::PRINTABLE;
        let version =
            EncryptionVersion::V1 { document: &document, owner_password: "owner", user_password: "", permissions };
        let state = EncryptionState::try_from(version).unwrap();
        check_round_trip(document, &state);
    }

    #[test]
    fn objects_are_written_as_lopdf_writes_them() {
        let mut odd = Dictionary::new();
        odd.set(b"We ird/#(".to_vec(), Object::Real(2.0));
        odd.set("Str", Object::String(b"a) (b\\c\r(".to_vec(), lopdf::StringFormat::Literal));
        odd.set("Hex", Object::String(vec![0, 255], lopdf::StringFormat::Hexadecimal));
        odd.set("Array", vec![Object::Null, Object::Boolean(true), Object::Name(b"N".to_vec()), (3, 1).into()]);
        let mut objects: Vec<Object> = vec![Object::Dictionary(odd), Object::Real(-0.125), Object::Integer(-7)];
        for name in ["pdf/text-20pages.pdf", "pdf/scan-2pages.pdf", "pdf/aes256-ownerpw-only.pdf"] {
            let mut document = fixture(name);
            write_lengths(&mut document);
            objects.extend(document.objects.into_values());
        }
        for object in &objects {
            let mut ours = Vec::new();
            write_object(&mut ours, object, None).unwrap();
            let mut theirs = Vec::new();
            Writer::write_object(&mut theirs, object).unwrap();
            assert_eq!(String::from_utf8_lossy(&ours), String::from_utf8_lossy(&theirs));
        }
    }

    /// Sets each stream's `/Length` to its content's, which lopdf writes as it finds it.
    fn write_lengths(document: &mut Document) {
        for object in document.objects.values_mut() {
            if let Object::Stream(stream) = object {
                stream.dict.set("Length", i64::try_from(stream.content.len()).unwrap());
            }
        }
    }

    #[test]
    fn renumbered_references_are_looked_up_and_unknown_ones_are_null() {
        let object =
            Object::Array(vec![(5, 0).into(), (6, 0).into(), Object::Dictionary(dictionary! { "P" => (5, 0) })]);
        let mut out = Vec::new();
        write_object(&mut out, &object, Some(&|id: ObjectId| (id.0 == 5).then_some((2, 0)))).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "[2 0 R null<</P 2 0 R>>]");
    }

    #[test]
    fn a_streams_length_is_the_bytes_it_holds() {
        let mut indirect = Stream::new(dictionary! { "Filter" => "FlateDecode" }, b"abc".to_vec());
        indirect.dict.set("Length", (9, 0));
        let mut out = Vec::new();
        write_object(&mut out, &Object::Stream(indirect), None).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "<</Filter/FlateDecode/Length 3>>stream\nabc\nendstream");
        let mut none = Stream::new(Dictionary::new(), b"ab".to_vec());
        none.dict.remove(b"Length");
        let mut out = Vec::new();
        write_object(&mut out, &Object::Stream(none), None).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "<</Length 2>>stream\nab\nendstream");
    }

    #[test]
    fn a_written_file_reads_back_with_its_objects_packed_and_its_streams_direct() {
        let document = fixture("pdf/text-20pages.pdf");
        let items: Vec<Item<'_>> = document
            .objects
            .iter()
            .map(|(&id, object)| Item { id, object: Cow::Borrowed(object), renumbered: true })
            .collect();
        let layout = Layout { version: "1.4", objects_per_stream: 7, level: 6, encryption: None };
        let bytes = write_pdf(&layout, items, document.trailer.clone(), &Some).unwrap();
        assert!(bytes.starts_with(b"%PDF-1.5\n"));
        let reloaded = Document::load_mem(&bytes).unwrap();
        assert_eq!(page_texts(&reloaded), page_texts(&document));
        let streams = |d: &Document| d.objects.values().filter(|o| o.as_stream().is_ok()).count();
        let containers = reloaded.objects.values().filter(|o| o.type_name().ok() == Some(b"ObjStm")).count();
        let dictionaries = document.objects.len() - streams(&document);
        assert_eq!(containers, dictionaries.div_ceil(7), "{dictionaries} objects in streams of 7");
    }

    #[test]
    fn a_large_cross_reference_stream_is_narrow_and_deflated_and_reads() {
        let mut document = Document::with_version("1.7");
        let pages = document.new_object_id();
        let mut kids = Vec::new();
        for n in 0..3000 {
            let content = document.add_object(Stream::new(Dictionary::new(), format!("BT ({n}) Tj ET").into_bytes()));
            kids.push(Object::Reference(document.add_object(dictionary! {
                "Type" => "Page", "Parent" => pages, "Contents" => content,
                "MediaBox" => vec![0.into(), 0.into(), 10.into(), 10.into()],
            })));
        }
        document
            .objects
            .insert(pages, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => 3000 }));
        let catalog = document.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages });
        document.trailer.set("Root", catalog);
        let saved = save(&document, None, 200, 9).unwrap();
        let xref_at = saved.windows(9).rposition(|w| w == b"startxref").unwrap();
        let xref =
            String::from_utf8_lossy(&saved[saved[..xref_at].windows(7).rposition(|w| w == b" 0 obj\n").unwrap()..]);
        assert!(xref.contains("/Type/XRef") && xref.contains("/Predictor 12"), "{xref}");
        assert!(xref.contains("/W[1 3 1]") || xref.contains("/W[1 3 2]"), "{xref}");
        let length: usize = xref
            .split("/Length ")
            .nth(1)
            .unwrap()
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap();
        // lopdf writes 7 bytes an entry, and narrow rows take 6 here before they are deflated.
        assert!(length < 6001 * 4, "{length} bytes for 6,001 entries");
        let reloaded = Document::load_mem(&saved).unwrap();
        assert_eq!(reloaded.get_pages().len(), 3000);
        let last = reloaded.get_pages()[&3000];
        assert_eq!(reloaded.get_page_content(last), b"BT (2999) Tj ET\n");
    }
}
