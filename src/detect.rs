//! What a file really is, judged from its first bytes.
//!
//! The name and MIME type that Telegram reports for a document are whatever the sender's client
//! made up, so they are hints at best. This module owns the verdict: it looks at the first
//! [`SNIFF_LEN`] bytes of the content and nothing else. It knows the signatures that `infer`
//! knows plus a few that `infer` lacks, and it decides the one question that matters to the
//! pipeline, "is this a PDF?", by the rules below.
//!
//! 1. An empty file is [`DetectedFormat::Unknown`].
//! 2. `%PDF-` at offset 0 is a PDF.
//! 3. Any format `infer` recognises (ZIP, gzip, PNG, JPEG, OLE, docx, ...) is that format, even
//!    when `%PDF-` appears further on: a ZIP that stores a PDF is a ZIP, a tar of a PDF is a tar.
//!    The same holds for the few signatures this module adds (ASCII cpio, font collections,
//!    RealMedia, 3GP). This includes infer's weak two-byte signatures (MP3 frames, DER, COFF),
//!    so a junk prefix that happens to start with one of them hides a PDF behind it.
//! 4. Otherwise `%PDF-` lying wholly within the first [`PDF_HEADER_WINDOW`] bytes is a PDF with
//!    a junk prefix, which PDF readers accept; further in, it is not a PDF.
//! 5. Otherwise HTML, SVG and plain text (UTF-8, or UTF-16/32 behind a byte-order mark) are
//!    recognised by looking at the text itself, and anything else is
//!    [`DetectedFormat::Unknown`].
//!
//! Some of infer's verdicts are refined from the same bytes: a ZIP becomes an OpenDocument or
//! Office Open XML file when its entries say so, a generic OLE file becomes a Word, Excel or
//! PowerPoint 97-2003 file when its directory lies within the window, and XML becomes SVG or
//! XHTML.
//!
//! Pure and synchronous apart from [`detect_path`], which reads at most [`SNIFF_LEN`] bytes. It
//! must not import lopdf, the store, Telegram or async code.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// How many leading bytes detection looks at; [`detect_path`] reads no more than this.
pub const SNIFF_LEN: usize = 8192;

/// A PDF header is honoured only if it lies wholly within this many leading bytes, the window in
/// which PDF readers (Acrobat, pdf.js, poppler) look for it.
pub const PDF_HEADER_WINDOW: usize = 1024;

/// The PDF header marker, followed in real files by a version such as `1.7`.
const PDF_MAGIC: &[u8] = b"%PDF-";

/// The format of a file's content, judged from its first bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DetectedFormat {
    /// A PDF: `%PDF-` at the start, or within [`PDF_HEADER_WINDOW`] bytes after a junk prefix
    /// that no other signature claims.
    Pdf,
    /// A recognised format that is not a PDF.
    ///
    /// `mime` is the format's MIME type and `description` a short phrase for people ("a PNG
    /// image"). Both come from this module's own table, so they are stable across `infer`
    /// versions; [`DetectedFormat::label`] is derived from `mime`.
    Other {
        /// The MIME type, e.g. `image/png`.
        mime: String,
        /// What it is, for people, with its article: "a ZIP archive".
        description: String,
    },
    /// Nothing recognisable, including an empty file.
    Unknown,
}

impl DetectedFormat {
    /// A short, stable, lowercase name for storing in the database: `"pdf"`, `"png"`, `"jpeg"`,
    /// `"zip"`, `"docx"`, `"gzip"`, `"html"`, `"text"`, `"unknown"`, ...
    ///
    /// Labels are part of the schema: once stored they are never renamed. A MIME type missing
    /// from this module's table (which cannot come out of [`detect_bytes`]) gets its subtype,
    /// without any `x-` or `vnd.` prefix.
    pub fn label(&self) -> &str {
        match self {
            Self::Pdf => "pdf",
            Self::Unknown => "unknown",
            Self::Other { mime, .. } => match kind_by_mime(mime) {
                Some(kind) => kind.label,
                None => fallback_label(mime),
            },
        }
    }

    /// What the file is, for people, with its article: "a PDF document", "a PNG image",
    /// "a Word document", "data of an unknown kind".
    pub fn describe(&self) -> String {
        match self {
            Self::Pdf => "a PDF document".to_owned(),
            Self::Unknown => "data of an unknown kind".to_owned(),
            Self::Other { description, .. } => description.clone(),
        }
    }

    /// Whether this is a PDF.
    pub fn is_pdf(&self) -> bool {
        matches!(self, Self::Pdf)
    }

    fn from_kind(kind: &Kind) -> Self {
        Self::Other { mime: kind.mime.to_owned(), description: kind.description.to_owned() }
    }
}

/// Judges `head`, the first bytes of a file, by the rules in the module docs.
///
/// Pass the first [`SNIFF_LEN`] bytes, or the whole file if it is shorter; bytes past
/// [`SNIFF_LEN`] are ignored so the verdict never depends on how much a caller happened to read.
pub fn detect_bytes(head: &[u8]) -> DetectedFormat {
    let head = &head[..head.len().min(SNIFF_LEN)];
    if head.is_empty() {
        return DetectedFormat::Unknown;
    }
    if head.starts_with(PDF_MAGIC) {
        return DetectedFormat::Pdf;
    }
    if let Some(found) = infer::get(head) {
        // infer's own PDF matcher accepts `%PDF` without the dash, which no PDF reader does;
        // rules 2 and 4 decide PDFs, so its verdict on those is ignored.
        if found.mime_type() != "application/pdf" {
            return from_infer(found.extension(), found.mime_type(), found.matcher_type(), head);
        }
    }
    if let Some(kind) = detect_extra_signature(head) {
        return DetectedFormat::from_kind(kind);
    }
    if has_pdf_header_in_window(head) {
        return DetectedFormat::Pdf;
    }
    detect_text(head).unwrap_or(DetectedFormat::Unknown)
}

/// Reads at most [`SNIFF_LEN`] bytes from the start of `path` and judges them with
/// [`detect_bytes`].
///
/// # Errors
///
/// Any error opening or reading the file.
pub fn detect_path(path: &Path) -> std::io::Result<DetectedFormat> {
    let mut head = Vec::with_capacity(SNIFF_LEN);
    File::open(path)?.take(SNIFF_LEN as u64).read_to_end(&mut head)?;
    Ok(detect_bytes(&head))
}

/// Whether `%PDF-` lies wholly within the first [`PDF_HEADER_WINDOW`] bytes.
fn has_pdf_header_in_window(head: &[u8]) -> bool {
    head[..head.len().min(PDF_HEADER_WINDOW)].windows(PDF_MAGIC.len()).any(|window| window == PDF_MAGIC)
}

/// One row of the format table: what `infer` calls it, and what we store and say.
struct Kind {
    /// Extensions `infer` reports for this format.
    infer_extensions: &'static [&'static str],
    /// The MIME type we record; for a few formats it is more precise than infer's.
    mime: &'static str,
    /// The stable database label.
    label: &'static str,
    /// For people, with its article.
    description: &'static str,
}

const fn kind(
    infer_extensions: &'static [&'static str],
    mime: &'static str,
    label: &'static str,
    description: &'static str,
) -> Kind {
    Kind { infer_extensions, mime, label, description }
}

/// Every format we name. Each MIME type appears once, so [`DetectedFormat::label`] can be derived
/// from it; formats that `infer` files under one MIME type but we tell apart get their own
/// registered type (`font/woff2`, `font/otf`, `application/vnd.ms-fontobject`, ...).
// One row per line reads better as a table than rustfmt's one argument per line.
#[rustfmt::skip]
const KINDS: &[Kind] = &[
    // Documents, the ones people most often send by mistake.
    kind(&["docx"], "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx", "a Word document"),
    kind(&["doc"], "application/msword", "doc", "a Word 97-2003 document"),
    kind(&["xlsx"], "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx", "an Excel spreadsheet"),
    kind(&["xls"], "application/vnd.ms-excel", "xls", "an Excel 97-2003 spreadsheet"),
    kind(&["pptx"], "application/vnd.openxmlformats-officedocument.presentationml.presentation", "pptx", "a PowerPoint presentation"),
    kind(&["ppt"], "application/vnd.ms-powerpoint", "ppt", "a PowerPoint 97-2003 presentation"),
    kind(&["odt"], "application/vnd.oasis.opendocument.text", "odt", "an OpenDocument text document"),
    kind(&["ods"], "application/vnd.oasis.opendocument.spreadsheet", "ods", "an OpenDocument spreadsheet"),
    kind(&["odp"], "application/vnd.oasis.opendocument.presentation", "odp", "an OpenDocument presentation"),
    kind(&[], "application/vnd.oasis.opendocument.graphics", "odg", "an OpenDocument drawing"),
    kind(&[], "application/vnd.oasis.opendocument.chart", "odc", "an OpenDocument chart"),
    kind(&[], "application/vnd.oasis.opendocument.formula", "odf", "an OpenDocument formula"),
    kind(&[], "application/vnd.oasis.opendocument.base", "odb", "an OpenDocument database"),
    kind(&["rtf"], "application/rtf", "rtf", "an RTF document"),
    kind(&["epub"], "application/epub+zip", "epub", "an EPUB e-book"),
    kind(&["mobi"], "application/x-mobipocket-ebook", "mobi", "a Mobipocket e-book"),
    kind(&["djvu"], "image/vnd.djvu", "djvu", "a DjVu document"),
    kind(&["ps"], "application/postscript", "ps", "a PostScript file"),
    // Images.
    kind(&["png"], "image/png", "png", "a PNG image"),
    kind(&["jpg"], "image/jpeg", "jpeg", "a JPEG image"),
    kind(&["jp2"], "image/jp2", "jp2", "a JPEG 2000 image"),
    kind(&["jxl"], "image/jxl", "jxl", "a JPEG XL image"),
    kind(&["jxr"], "image/vnd.ms-photo", "jxr", "a JPEG XR image"),
    kind(&["gif"], "image/gif", "gif", "a GIF image"),
    kind(&["webp"], "image/webp", "webp", "a WebP image"),
    kind(&["heif"], "image/heif", "heif", "a HEIF image"),
    kind(&["avif"], "image/avif", "avif", "an AVIF image"),
    kind(&["tif"], "image/tiff", "tiff", "a TIFF image"),
    kind(&["bmp"], "image/bmp", "bmp", "a BMP image"),
    kind(&["cr2"], "image/x-canon-cr2", "cr2", "a Canon raw photo"),
    kind(&["psd"], "image/vnd.adobe.photoshop", "psd", "a Photoshop image"),
    kind(&["ico"], "image/vnd.microsoft.icon", "ico", "an icon image"),
    kind(&["ora"], "image/openraster", "ora", "an OpenRaster image"),
    kind(&[], "image/svg+xml", "svg", "an SVG image"),
    kind(&["dcm"], "application/dicom", "dicom", "a DICOM medical image"),
    // Archives and packages.
    kind(&["zip"], "application/zip", "zip", "a ZIP archive"),
    kind(&["gz"], "application/gzip", "gzip", "a gzip archive"),
    kind(&["bz2"], "application/x-bzip2", "bzip2", "a bzip2 archive"),
    kind(&["bz3"], "application/vnd.bzip3", "bzip3", "a bzip3 archive"),
    kind(&["xz"], "application/x-xz", "xz", "an xz archive"),
    kind(&["zst"], "application/zstd", "zstd", "a Zstandard archive"),
    kind(&["lz4"], "application/x-lz4", "lz4", "an LZ4 archive"),
    kind(&["lz"], "application/x-lzip", "lzip", "an lzip archive"),
    kind(&["Z"], "application/x-compress", "compress", "a compress (.Z) archive"),
    kind(&["7z"], "application/x-7z-compressed", "7z", "a 7-Zip archive"),
    kind(&["rar"], "application/vnd.rar", "rar", "a RAR archive"),
    kind(&["tar"], "application/x-tar", "tar", "a tar archive"),
    kind(&["cpio"], "application/x-cpio", "cpio", "a cpio archive"),
    kind(&["ar"], "application/x-unix-archive", "ar", "an ar archive"),
    kind(&["cab"], "application/vnd.ms-cab-compressed", "cab", "a CAB archive"),
    kind(&["par2"], "application/x-par2", "par2", "a PAR2 recovery file"),
    kind(&["deb"], "application/vnd.debian.binary-package", "deb", "a Debian package"),
    kind(&["rpm"], "application/x-rpm", "rpm", "an RPM package"),
    kind(&["crx"], "application/x-google-chrome-extension", "crx", "a Chrome extension"),
    kind(&["msi"], "application/x-ole-storage", "ole", "a Microsoft OLE compound file"),
    kind(&["sqlite"], "application/vnd.sqlite3", "sqlite", "an SQLite database"),
    // Audio and video.
    kind(&["mp4"], "video/mp4", "mp4", "an MP4 video"),
    kind(&["m4v"], "video/x-m4v", "m4v", "an M4V video"),
    kind(&["mkv"], "video/x-matroska", "mkv", "a Matroska video"),
    kind(&["webm"], "video/webm", "webm", "a WebM video"),
    kind(&["mov"], "video/quicktime", "mov", "a QuickTime video"),
    kind(&["avi"], "video/x-msvideo", "avi", "an AVI video"),
    kind(&["wmv"], "video/x-ms-wmv", "wmv", "a Windows Media file"),
    kind(&[], "video/3gpp", "3gp", "a 3GP video"),
    kind(&[], "application/vnd.rn-realmedia", "realmedia", "a RealMedia file"),
    kind(&["mpg"], "video/mpeg", "mpeg", "an MPEG video"),
    kind(&["flv"], "video/x-flv", "flv", "a Flash video"),
    kind(&["swf"], "application/x-shockwave-flash", "swf", "a Flash animation"),
    kind(&["mp3"], "audio/mpeg", "mp3", "an MP3 audio file"),
    kind(&["m4a"], "audio/m4a", "m4a", "an M4A audio file"),
    kind(&["aac"], "audio/aac", "aac", "an AAC audio file"),
    kind(&["opus"], "audio/opus", "opus", "an Opus audio file"),
    kind(&["ogg"], "audio/ogg", "ogg", "an Ogg media file"),
    kind(&["flac"], "audio/x-flac", "flac", "a FLAC audio file"),
    kind(&["wav"], "audio/x-wav", "wav", "a WAV audio file"),
    kind(&["aiff"], "audio/x-aiff", "aiff", "an AIFF audio file"),
    kind(&["amr"], "audio/amr", "amr", "an AMR audio file"),
    kind(&["ape"], "audio/x-ape", "ape", "an APE audio file"),
    kind(&["dsf"], "audio/x-dsf", "dsf", "a DSF audio file"),
    kind(&["midi"], "audio/midi", "midi", "a MIDI file"),
    // Fonts.
    kind(&["ttf"], "font/ttf", "ttf", "a TrueType font"),
    kind(&["otf"], "font/otf", "otf", "an OpenType font"),
    kind(&[], "font/collection", "ttc", "a font collection"),
    kind(&["woff"], "font/woff", "woff", "a web font"),
    kind(&["woff2"], "font/woff2", "woff2", "a web font"),
    kind(&["eot"], "application/vnd.ms-fontobject", "eot", "an embedded OpenType font"),
    // Programs and keys.
    kind(&["exe", "dll"], "application/vnd.microsoft.portable-executable", "exe", "a Windows program"),
    kind(&["elf"], "application/x-executable", "elf", "a Linux or Unix program"),
    kind(&["obj"], "application/x-coff", "coff", "an object file"),
    kind(&["mach"], "application/x-mach-binary", "mach", "a macOS program"),
    kind(&["class"], "application/java", "class", "a Java class file"),
    kind(&["dex", "dey"], "application/vnd.android.dex", "dex", "an Android program"),
    kind(&["wasm"], "application/wasm", "wasm", "a WebAssembly module"),
    kind(&["bc"], "application/x-llvm", "llvm", "an LLVM bitcode file"),
    kind(&["nes"], "application/x-nintendo-nes-rom", "nes", "a NES game ROM"),
    kind(&["der", "pem"], "application/x-x509-ca-cert", "certificate", "a certificate or key"),
    // Text.
    kind(&["html"], "text/html", "html", "an HTML page"),
    kind(&["xml"], "text/xml", "xml", "an XML document"),
    kind(&["sh"], "text/x-shellscript", "script", "a script"),
    kind(&[], "text/plain", "text", "a plain text file"),
];

fn kind_by_mime(mime: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|kind| kind.mime == mime)
}

fn kind_by_infer_extension(extension: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|kind| kind.infer_extensions.contains(&extension))
}

fn fallback_label(mime: &str) -> &str {
    let subtype = mime.rsplit('/').next().unwrap_or(mime);
    let subtype = subtype.strip_prefix("x-").unwrap_or(subtype);
    subtype.strip_prefix("vnd.").unwrap_or(subtype)
}

/// Maps an `infer` verdict into our table; XML is refined into SVG or XHTML by its text.
fn from_infer(extension: &str, mime: &str, matcher: infer::MatcherType, head: &[u8]) -> DetectedFormat {
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

/// Office documents that infer reports as a plain ZIP: OpenDocument files other than text,
/// spreadsheets and presentations, which name their type in a leading `mimetype` entry, and
/// Office Open XML files whose first entry is not `[Content_Types].xml`.
fn refine_zip(head: &[u8]) -> Option<DetectedFormat> {
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
fn refine_ole(head: &[u8]) -> Option<&'static Kind> {
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

/// Signatures at offset 0 that infer 0.19 lacks.
fn detect_extra_signature(head: &[u8]) -> Option<&'static Kind> {
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

/// Text formats `infer` leaves out: HTML that starts with a byte-order mark or a comment, SVG,
/// and plain text in UTF-8 or UTF-16 with a byte-order mark.
fn detect_text(head: &[u8]) -> Option<DetectedFormat> {
    let text = decode_text(head)?;
    detect_markup(text.as_bytes()).or_else(|| Some(DetectedFormat::from_kind(plain_text())))
}

/// SVG or HTML by the tags near the start; `None` if neither.
fn detect_markup(head: &[u8]) -> Option<DetectedFormat> {
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

fn decode_utf32(bytes: &[u8], unit: fn([u8; 4]) -> u32) -> Option<String> {
    bytes.chunks_exact(4).map(|quad| char::from_u32(unit([quad[0], quad[1], quad[2], quad[3]]))).collect()
}

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
    use std::path::PathBuf;

    fn fixture(relative: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(relative)
    }

    fn read_fixture(relative: &str) -> Vec<u8> {
        std::fs::read(fixture(relative)).unwrap()
    }

    fn other(label: &str, description: &str) -> (String, String) {
        (label.to_owned(), description.to_owned())
    }

    fn label_and_description(format: &DetectedFormat) -> (String, String) {
        (format.label().to_owned(), format.describe())
    }

    #[test]
    fn pdf_fixtures_are_pdfs() {
        for name in ["pdf/text-1page.pdf", "pdf/text-20pages.pdf", "pdf/scan-2pages.pdf"] {
            let found = detect_path(&fixture(name)).unwrap();
            assert_eq!(found, DetectedFormat::Pdf, "{name}");
            assert_eq!(found.label(), "pdf");
            assert_eq!(found.describe(), "a PDF document");
        }
    }

    #[test]
    fn encrypted_and_truncated_pdfs_are_still_pdfs() {
        // Detection only looks at the signature; whether lopdf can read it is pdf.rs's concern.
        for name in ["pdf/aes256-userpw.pdf", "pdf/aes256-ownerpw-only.pdf", "pdf/truncated.pdf"] {
            assert_eq!(detect_path(&fixture(name)).unwrap(), DetectedFormat::Pdf, "{name}");
        }
    }

    #[test]
    fn png_fixture_is_a_png_image() {
        let found = detect_path(&fixture("other/red-8x8.png")).unwrap();
        assert_eq!(found.label(), "png");
        assert_eq!(found.describe(), "a PNG image");
        assert_eq!(
            found,
            DetectedFormat::Other { mime: "image/png".to_owned(), description: "a PNG image".to_owned() }
        );
    }

    #[test]
    fn zip_storing_a_pdf_is_a_zip() {
        let bytes = read_fixture("other/stored-pdf.zip");
        let at = bytes.windows(5).position(|w| w == b"%PDF-").unwrap();
        assert!(at < PDF_HEADER_WINDOW, "fixture must hold %PDF- in the window, at {at}");
        let found = detect_bytes(&bytes);
        assert_eq!(label_and_description(&found), other("zip", "a ZIP archive"));
    }

    #[test]
    fn gzip_of_a_pdf_is_gzip() {
        // A gzip header with a file name field that spells out a PDF header.
        let mut bytes = vec![0x1f, 0x8b, 0x08, 0x08, 0, 0, 0, 0, 0, 0x03];
        bytes.extend_from_slice(b"%PDF-1.7.pdf\0");
        assert_eq!(label_and_description(&detect_bytes(&bytes)), other("gzip", "a gzip archive"));
    }

    #[test]
    fn junk_prefix_within_window_is_pdf() {
        let pdf = read_fixture("pdf/text-1page.pdf");
        for junk_len in [1, 3, 512, PDF_HEADER_WINDOW - PDF_MAGIC.len()] {
            let mut bytes = vec![b'j'; junk_len];
            bytes.extend_from_slice(&pdf);
            assert_eq!(detect_bytes(&bytes), DetectedFormat::Pdf, "junk of {junk_len} bytes");
        }
        assert_eq!(detect_path(&fixture("pdf/junk-prefix-512.pdf")).unwrap(), DetectedFormat::Pdf);
    }

    #[test]
    fn pdf_header_beyond_window_is_not_pdf() {
        let pdf = read_fixture("pdf/text-1page.pdf");
        for junk_len in [PDF_HEADER_WINDOW - PDF_MAGIC.len() + 1, 2048] {
            let mut bytes = vec![0x00; junk_len];
            bytes.extend_from_slice(&pdf);
            assert_eq!(detect_bytes(&bytes), DetectedFormat::Unknown, "junk of {junk_len} bytes");
        }
        let mut text_junk = b"X-Junk: ".to_vec();
        text_junk.resize(2048, b'j');
        text_junk.push(b'\n');
        text_junk.extend_from_slice(&pdf);
        assert_ne!(detect_bytes(&text_junk), DetectedFormat::Pdf);
    }

    #[test]
    fn empty_is_unknown() {
        let found = detect_bytes(b"");
        assert_eq!(found, DetectedFormat::Unknown);
        assert_eq!(found.label(), "unknown");
        assert_eq!(found.describe(), "data of an unknown kind");

        let file = tempfile::NamedTempFile::new().unwrap();
        assert_eq!(detect_path(file.path()).unwrap(), DetectedFormat::Unknown);
    }

    #[test]
    fn binary_noise_is_unknown() {
        let noise: Vec<u8> = (0u32..4096).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        assert_eq!(detect_bytes(&noise), DetectedFormat::Unknown);
    }

    #[test]
    fn bare_pdf_without_dash_is_not_a_pdf() {
        assert_ne!(detect_bytes(b"%PDF1.4 not really"), DetectedFormat::Pdf);
    }

    #[test]
    fn postscript_fixture_is_postscript() {
        let found = detect_path(&fixture("other/pages.ps")).unwrap();
        assert_eq!(label_and_description(&found), other("ps", "a PostScript file"));
    }

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

    #[test]
    fn only_the_sniff_window_counts() {
        let mut bytes = vec![b'a'; SNIFF_LEN];
        bytes.extend_from_slice(&[0, 1, 2, 3]);
        assert_eq!(detect_bytes(&bytes).label(), "text");
    }

    #[test]
    fn detect_path_reports_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = detect_path(&dir.path().join("absent")).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn table_is_consistent() {
        for (i, kind) in KINDS.iter().enumerate() {
            for later in &KINDS[i + 1..] {
                assert_ne!(kind.mime, later.mime, "MIME types must be unique");
                assert_ne!(kind.label, later.label, "labels must be unique");
            }
            assert!(kind.label != "pdf" && kind.label != "unknown");
            assert!(kind.description.starts_with("a ") || kind.description.starts_with("an "));
            for extension in kind.infer_extensions {
                assert!(infer::is_supported(extension), "infer knows no {extension}");
            }
            let format = DetectedFormat::from_kind(kind);
            assert_eq!(format.label(), kind.label);
        }
    }

    #[test]
    fn unknown_mime_gets_its_subtype_as_label() {
        let format = DetectedFormat::Other {
            mime: "application/x-frobnicate".to_owned(),
            description: "a frobnicated file".to_owned(),
        };
        assert_eq!(format.label(), "frobnicate");
    }
}
