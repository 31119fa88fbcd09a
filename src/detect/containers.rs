//! Containers whose kind lies in their entries, which `infer` reports by the container alone: a
//! ZIP that is an OpenDocument, EPUB or Office Open XML file, an OLE file that is a Word, Excel or
//! PowerPoint 97-2003 one.

use super::DetectedFormat;
use super::kinds::{Kind, kind_by_infer_extension, kind_by_mime};

/// Office documents that infer reports as a plain ZIP: OpenDocument files other than text,
/// spreadsheets and presentations, which name their type in a leading `mimetype` entry, and
/// Office Open XML files whose first entry is not `[Content_Types].xml`.
pub(super) fn refine_zip(head: &[u8]) -> Option<DetectedFormat> {
    const LOCAL_HEADER: &[u8] = b"PK\x03\x04";
    let u16_at = |at: usize| head.get(at..at + 2).map(|bytes| usize::from(u16::from_le_bytes([bytes[0], bytes[1]])));
    let name_at = |at: usize| -> Option<&[u8]> {
        let name_len = u16_at(at + 26)?;
        head.get(at + 30..at + 30 + name_len)
    };
    // OpenDocument and EPUB store a `mimetype` entry first and uncompressed.
    if name_at(0) == Some(b"mimetype".as_slice()) {
        let data_at = 30 + u16_at(26)? + u16_at(28)?;
        let stored_len = u16_at(18)?.min(100);
        let mime = head.get(data_at..data_at + stored_len)?;
        return by_mimetype_entry(&String::from_utf8_lossy(mime));
    }
    // Entry sizes may only follow the data (a data descriptor), so rather than walk from header
    // to header, look at every local header signature in the window.
    let names: Vec<&[u8]> = head
        .windows(LOCAL_HEADER.len())
        .enumerate()
        .filter(|(_, window)| *window == LOCAL_HEADER)
        .filter_map(|(at, _)| name_at(at))
        .collect();
    let has_folder = |folder: &[u8]| names.iter().any(|name| name.starts_with(folder));
    let office = if has_folder(b"word/") {
        "docx"
    } else if has_folder(b"xl/") {
        "xlsx"
    } else if has_folder(b"ppt/") {
        "pptx"
    } else {
        return None;
    };
    kind_by_infer_extension(office).map(DetectedFormat::from_kind)
}

/// A ZIP-based document (OpenDocument, EPUB) by the MIME type in its `mimetype` entry;
/// OpenDocument templates count as their documents.
fn by_mimetype_entry(mime: &str) -> Option<DetectedFormat> {
    let base = mime.strip_suffix("-template").unwrap_or(mime);
    if let Some(kind) = kind_by_mime(base) {
        Some(DetectedFormat::from_kind(kind))
    } else if base.starts_with("application/vnd.oasis.opendocument.") {
        Some(DetectedFormat::Other { mime: base.to_owned(), description: "an OpenDocument file".to_owned() })
    } else {
        None
    }
}

/// Word, Excel or PowerPoint 97-2003 files that infer reports as a generic OLE compound file,
/// by the stream names in a directory sector that lies within the window.
pub(super) fn refine_ole(head: &[u8]) -> Option<&'static Kind> {
    let has_name = |name: &str| {
        let utf16: Vec<u8> = name.encode_utf16().flat_map(u16::to_le_bytes).collect();
        head.windows(utf16.len()).any(|window| window == utf16)
    };
    let extension = if has_name("WordDocument") {
        "doc"
    } else if has_name("Workbook") || has_name("Book\0") {
        "xls"
    } else if has_name("PowerPoint Document") {
        "ppt"
    } else {
        return None;
    };
    kind_by_infer_extension(extension)
}

#[cfg(test)]
mod tests {
    use crate::detect::detect_bytes;
    use crate::detect::tests::{label_and_description, other};

    /// A ZIP local file header for `name` with `data` stored uncompressed.
    fn zip_entry(name: &str, data: &[u8]) -> Vec<u8> {
        let mut entry = b"PK\x03\x04\x14\x00\x00\x00\x00\x00\x00\x00\x00\x00".to_vec();
        entry.extend_from_slice(&[0; 4]); // crc-32
        let size = u32::try_from(data.len()).unwrap().to_le_bytes();
        entry.extend_from_slice(&size);
        entry.extend_from_slice(&size);
        entry.extend_from_slice(&u16::try_from(name.len()).unwrap().to_le_bytes());
        entry.extend_from_slice(&[0, 0]); // extra field length
        entry.extend_from_slice(name.as_bytes());
        entry.extend_from_slice(data);
        entry
    }

    #[test]
    fn office_zips_are_told_apart() {
        let mut drawing = zip_entry("mimetype", b"application/vnd.oasis.opendocument.graphics");
        drawing.extend(zip_entry("content.xml", b"<x/>"));
        assert_eq!(label_and_description(&detect_bytes(&drawing)), other("odg", "an OpenDocument drawing"));

        let template = zip_entry("mimetype", b"application/vnd.oasis.opendocument.chart-template");
        assert_eq!(detect_bytes(&template).label(), "odc");

        let mut docx = zip_entry("_rels/.rels", b"<Relationships/>");
        docx[6] = 0x08; // sizes in a data descriptor, as Word writes them
        docx.extend(zip_entry("word/document.xml", b"<w:document/>"));
        assert_eq!(label_and_description(&detect_bytes(&docx)), other("docx", "a Word document"));

        let mut plain = zip_entry("readme.txt", b"hello");
        plain.extend(zip_entry("inside.pdf", b"%PDF-1.7"));
        assert_eq!(detect_bytes(&plain).label(), "zip");
    }

    #[test]
    fn ole_files_are_told_apart_by_stream_names() {
        let ole = |stream: &str| {
            let mut head = vec![0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];
            head.resize(1024, 0);
            head.extend(stream.encode_utf16().flat_map(u16::to_le_bytes));
            head.resize(2048, 0);
            detect_bytes(&head)
        };
        assert_eq!(label_and_description(&ole("WordDocument")), other("doc", "a Word 97-2003 document"));
        assert_eq!(ole("Workbook").label(), "xls");
        assert_eq!(ole("PowerPoint Document").label(), "ppt");
        assert_eq!(ole("Something Else").label(), "ole");
    }
}
