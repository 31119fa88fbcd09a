//! HEIF (HEIC, as iPhones take photos) and AVIF, decoded by libheif: Debian bookworm's libheif
//! (1.15) is older than the bindings that are kept up (libheif-rs needs 1.17), so docket runs
//! libheif's own converter, `heif-convert` (Debian package `libheif-examples`), as a step of
//! the run, and reads the lossless PNG it writes like any other PNG.
//!
//! - **Bounded before decoding.** The file's largest image size (its `ispe` properties, which
//!   HEIF requires of every image) is checked against `max_inflate` before libheif decodes a
//!   byte, and the PNG it writes is read under the same limit. The converter runs inside the
//!   run's contained child, so it inherits the child's limits (address space, CPU time, file
//!   size) and dies with the child's process group.
//! - **Turned as it is seen.** libheif applies the image's own rotation and mirroring (`irot`,
//!   `imir`, where HEIF keeps what EXIF's orientation says), so the PNG's pixels are upright.
//! - **Every picture.** A file of several top-level images (a burst) becomes a page each, in
//!   the file's order.
//! - **Fails with a reason.** A file libheif cannot decode is [`PdfError::Unreadable`], with its
//!   message; a machine without `heif-convert` fails with [`PdfError::ToolMissing`], naming the
//!   package to install.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Page, PdfError, check_size};

/// The program that decodes HEIF and AVIF.
pub const HEIF_CONVERT: &str = "heif-convert";

/// The Debian package that has it.
pub const HEIF_PACKAGE: &str = "libheif-examples";

/// The bytes per pixel checked against `max_inflate`: 8-bit RGBA, the most libheif writes a
/// photo's pixels as (a deeper one is held to the limit again when its PNG is read).
const DECODED_BYTES_PER_PIXEL: usize = 4;

/// How much of the converter's message a failure keeps.
const MESSAGE_BYTES: usize = 500;

/// Every top-level image of the HEIF or AVIF file at `input` (whose content is `bytes`), a page
/// each.
pub(super) fn pages(input: &Path, bytes: &[u8], max_inflate: usize) -> Result<Vec<Page>, PdfError> {
    let (width, height) = largest_extent(bytes)
        .ok_or_else(|| PdfError::unreadable("the HEIF file states no image size (no ispe property)"))?;
    check_size(width, height, DECODED_BYTES_PER_PIXEL, max_inflate)?;
    // In the run's scratch folder (the child's TMPDIR), counted against its disk limit.
    let dir = tempfile::Builder::new().prefix("docket-heif").tempdir()?;
    let written = dir.path().join("page.png");
    let run = Command::new(HEIF_CONVERT)
        .arg("--quiet")
        .arg("--")
        .arg(input)
        .arg(&written)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output();
    let run = match run {
        Ok(run) => run,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(PdfError::ToolMissing { program: HEIF_CONVERT, package: HEIF_PACKAGE });
        }
        Err(e) => return Err(PdfError::Io(e)),
    };
    if !run.status.success() {
        let message = String::from_utf8_lossy(&run.stderr);
        let message: String = message.trim().chars().take(MESSAGE_BYTES).collect();
        return Err(PdfError::unreadable(format!("{HEIF_CONVERT} could not decode it ({}): {message}", run.status)));
    }
    let files = written_pages(&written);
    if files.is_empty() {
        return Err(PdfError::unreadable(format!("{HEIF_CONVERT} wrote no image")));
    }
    files.iter().map(|file| super::png::page(&std::fs::read(file)?, max_inflate, false)).collect()
}

/// What `heif-convert` wrote for `asked` (`page.png`): that file for one image, or `page-1.png`,
/// `page-2.png`, … for several.
fn written_pages(asked: &Path) -> Vec<PathBuf> {
    if asked.exists() {
        return vec![asked.to_path_buf()];
    }
    (1..).map(|n| asked.with_file_name(format!("page-{n}.png"))).take_while(|path| path.exists()).collect()
}

/// The largest width × height any image of the file states: the `ispe` properties in its
/// `meta` box's item properties (`meta` → `iprp` → `ipco`), as ISO/IEC 23008-12 lays them out.
/// `None` when there is none.
pub(super) fn largest_extent(bytes: &[u8]) -> Option<(u32, u32)> {
    // `meta` is a full box: four bytes of version and flags before its children.
    let meta = child(bytes, b"meta")?.get(4..)?;
    let ipco = child(child(meta, b"iprp")?, b"ipco")?;
    boxes(ipco)
        .filter(|(kind, _)| kind == b"ispe")
        .filter_map(|(_, body)| {
            // Version and flags, then the width and height, big-endian.
            let width = u32::from_be_bytes(body.get(4..8)?.try_into().ok()?);
            let height = u32::from_be_bytes(body.get(8..12)?.try_into().ok()?);
            Some((width, height))
        })
        .max_by_key(|&(width, height)| u64::from(width) * u64::from(height))
}

/// The body of the first box of `kind` among those `data` holds.
fn child<'a>(data: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
    boxes(data).find(|(found, _)| found == kind).map(|(_, body)| body)
}

/// The boxes one after another in `data`, as (type, body); the walk ends at the first box
/// whose size does not fit.
fn boxes(data: &[u8]) -> impl Iterator<Item = ([u8; 4], &[u8])> {
    let mut rest = data;
    std::iter::from_fn(move || {
        let size = u64::from(u32::from_be_bytes(rest.get(0..4)?.try_into().ok()?));
        let kind: [u8; 4] = rest.get(4..8)?.try_into().ok()?;
        let (header, size) = match size {
            // To the end of what holds it.
            0 => (8, rest.len() as u64),
            // A 64-bit size follows the type.
            1 => (16, u64::from_be_bytes(rest.get(8..16)?.try_into().ok()?)),
            size => (8, size),
        };
        let size = usize::try_from(size).ok().filter(|&size| size >= header && size <= rest.len())?;
        let body = &rest[header..size];
        rest = &rest[size..];
        Some((kind, body))
    })
}
