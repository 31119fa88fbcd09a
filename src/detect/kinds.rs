//! The table of every format docket names: what `infer` calls it, the MIME type docket records,
//! the label stored in the database (part of the schema: never renamed) and the words for people.

/// One row of the format table: what `infer` calls it, and what we store and say.
pub(super) struct Kind {
    /// Extensions `infer` reports for this format.
    pub(super) infer_extensions: &'static [&'static str],
    /// The MIME type we record; for a few formats it is more precise than infer's.
    pub(super) mime: &'static str,
    /// The stable database label.
    pub(super) label: &'static str,
    /// For people, with its article.
    pub(super) description: &'static str,
}

/// One row of [`KINDS`].
pub(super) const fn kind(
    infer_extensions: &'static [&'static str],
    mime: &'static str,
    label: &'static str,
    description: &'static str,
) -> Kind {
    Kind { infer_extensions, mime, label, description }
}

/// Every format we name. Each MIME type appears once, so
/// [`DetectedFormat::label`](super::DetectedFormat::label) can be derived from it; formats that `infer` files under one MIME type but we tell apart get their own
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

/// The row of MIME type `mime`.
pub(super) fn kind_by_mime(mime: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|kind| kind.mime == mime)
}

/// The row infer's `extension` names.
pub(super) fn kind_by_infer_extension(extension: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|kind| kind.infer_extensions.contains(&extension))
}

/// The label of a MIME type the table lacks: its subtype, without `x-` or `vnd.`.
pub(super) fn fallback_label(mime: &str) -> &str {
    let subtype = mime.rsplit('/').next().unwrap_or(mime);
    let subtype = subtype.strip_prefix("x-").unwrap_or(subtype);
    subtype.strip_prefix("vnd.").unwrap_or(subtype)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::DetectedFormat;

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
