//! A PDF's first page as a JPEG: the preview a result is sent with, as its thumbnail.
//!
//! MuPDF's `mutool draw` (Debian's `mupdf-tools`) renders the page, scaled to fit a square of
//! [`Renderer::max_side`] pixels, as a PNM file in the run's scratch folder (the child's
//! `TMPDIR`); the child then encodes that as a baseline JPEG ([`jpeg_of`]), at a quality that
//! keeps it within [`Renderer::max_bytes`]. Debian's `mutool` writes no JPEG itself. Both steps
//! run inside the contained child, under the run's limits and confinement like every external
//! program: a hostile PDF that makes MuPDF spin, or allocate without end, is stopped there.
//!
//! Whether `mutool` is installed is found once at start ([`Renderer::find`], `[processing]
//! renderer`); without it, results are sent without a preview.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::external::locate;
use super::{Availability, Failure, Report};

/// The program `[processing] renderer` names by default (looked up in `PATH`).
pub const DEFAULT_PROGRAM: &str = "mutool";

/// The Debian package that brings it, for messages to admins.
pub const PACKAGE: &str = "mupdf-tools";

/// The longest side of a thumbnail: Telegram shows a document's thumbnail only when it is a
/// JPEG of at most 320 × 320 pixels.
pub const THUMBNAIL_SIDE: u32 = 320;

/// The most bytes a thumbnail may have: Telegram's limit is 200 kB.
pub const THUMBNAIL_BYTES: u64 = 200 * 1000;

/// Peak resident memory of a render per byte of input, at worst. MuPDF reads the file's cross
/// reference table and the first page's objects, not the whole file, and the page is drawn at
/// at most 320 pixels a side; the tool's base address space is what it mostly needs.
pub const RENDER_MEMORY_FACTOR: f64 = 1.0;

/// The longest a preview's drawing may take, however long `[processing] timeout` lets a run
/// take: the result waits for its preview.
pub const MAX_DRAWING_TIME: std::time::Duration = std::time::Duration::from_secs(30);

/// The JPEG qualities tried, best first, until the picture is within its byte limit.
const QUALITIES: &[u8] = &[80, 65, 50, 35, 20];

/// MuPDF's renderer, found on this machine, and the picture it makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renderer {
    /// Its `mutool` program.
    pub program: PathBuf,
    /// The longest side of the picture, in pixels.
    pub max_side: u32,
    /// The most bytes the JPEG may have.
    pub max_bytes: u64,
}

impl Renderer {
    /// Whether `program` (`[processing] renderer`: a path, or a name looked up in `PATH`) is
    /// there to run.
    pub fn find(program: &str) -> Availability {
        locate(program, |missing| {
            format!(
                "results are sent without a preview: MuPDF's {missing}; install {PACKAGE}, or set \
                 [processing] renderer"
            )
        })
    }

    /// [`Renderer::find`] as the thumbnail renderer, when it is there.
    pub fn thumbnails(program: &str) -> Option<Self> {
        match Self::find(program) {
            Availability::Available(program) => {
                Some(Self { program, max_side: THUMBNAIL_SIDE, max_bytes: THUMBNAIL_BYTES })
            }
            Availability::Unavailable(_) => None,
        }
    }

    /// The arguments that draw `input`'s first page into the PNM file `pnm` (after the program).
    fn arguments(&self, input: &Path, pnm: &Path) -> Vec<OsString> {
        let side = self.max_side.to_string();
        vec![
            "draw".into(),
            "-q".into(),
            // 72 dpi at most: a page is drawn no larger than its size in points, then fitted in
            // the square.
            "-r".into(),
            "72".into(),
            "-w".into(),
            side.clone().into(),
            "-h".into(),
            side.into(),
            "-F".into(),
            "pnm".into(),
            "-o".into(),
            pnm.into(),
            input.into(),
            "1".into(),
        ]
    }
}

/// Renders `input`'s first page into the JPEG at `output`, with `mutool` run by `run_program`
/// (the child's way of running a program to its end: its status, or why it could not). Runs in
/// the contained child, after its limits and confinement.
pub(super) fn render(
    renderer: &Renderer,
    input: &Path,
    output: &Path,
    run_program: impl FnOnce(&[OsString]) -> Result<std::process::ExitStatus, Report>,
) -> Report {
    let io_failure =
        |what: &str, e: &dyn std::fmt::Display| Report::Failed { failure: Failure::Io, detail: format!("{what}: {e}") };
    // In the run's scratch folder (the child's TMPDIR), counted against its disk limit.
    let folder = match tempfile::Builder::new().prefix("docket-render").tempdir() {
        Ok(folder) => folder,
        Err(e) => return io_failure("creating the render's folder", &e),
    };
    let pnm = folder.path().join("page.pnm");
    let mut args = vec![renderer.program.clone().into_os_string()];
    args.extend(renderer.arguments(input, &pnm));
    let status = match run_program(&args) {
        Ok(status) => status,
        Err(report) => return report,
    };
    let picture = match std::fs::read(&pnm) {
        Ok(bytes) => bytes,
        Err(e) => {
            return Report::Failed {
                failure: Failure::ToolFailed,
                detail: format!("mutool drew no page (it ended with {status}): {e}"),
            };
        }
    };
    let jpeg = match jpeg_of(&picture, renderer.max_bytes) {
        Ok(jpeg) => jpeg,
        Err(e) => return Report::Failed { failure: Failure::ToolFailed, detail: e },
    };
    if let Err(e) = std::fs::write(output, &jpeg) {
        return io_failure("writing the preview", &e);
    }
    Report::Done { output_bytes: jpeg.len() as u64, pages: Some(1), peak_rss_bytes: super::child::peak_rss() }
}

/// The PNM picture `pnm` as a JPEG of at most `max_bytes`, at the best quality of
/// [`QUALITIES`] that keeps within it.
///
/// # Errors
///
/// When the picture does not decode, or no quality gets it within `max_bytes`.
pub fn jpeg_of(pnm: &[u8], max_bytes: u64) -> Result<Vec<u8>, String> {
    let picture = image::load_from_memory_with_format(pnm, image::ImageFormat::Pnm)
        .map_err(|e| format!("the drawn page does not decode: {e}"))?;
    let (width, height) = (picture.width(), picture.height());
    let (Ok(w), Ok(h)) = (u16::try_from(width), u16::try_from(height)) else {
        return Err(format!("the drawn page is {width} × {height} pixels, too large for a JPEG"));
    };
    let (pixels, colour) = match picture {
        image::DynamicImage::ImageLuma8(grey) => (grey.into_raw(), jpeg_encoder::ColorType::Luma),
        other => (other.into_rgb8().into_raw(), jpeg_encoder::ColorType::Rgb),
    };
    let mut smallest = u64::MAX;
    for &quality in QUALITIES {
        let mut jpeg = Vec::new();
        jpeg_encoder::Encoder::new(&mut jpeg, quality)
            .encode(&pixels, w, h, colour)
            .map_err(|e| format!("encoding the preview: {e}"))?;
        if jpeg.len() as u64 <= max_bytes {
            return Ok(jpeg);
        }
        smallest = smallest.min(jpeg.len() as u64);
    }
    Err(format!("the preview is {smallest} bytes at the lowest quality, over {max_bytes}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `width` × `height` PNM (P6, colour) of noise, which JPEG compresses worst.
    fn noisy_pnm(width: u32, height: u32) -> Vec<u8> {
        let mut pnm = format!("P6\n{width} {height}\n255\n").into_bytes();
        let mut seed = 0x2545_f491_u32;
        for _ in 0..width * height * 3 {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            pnm.push(seed as u8);
        }
        pnm
    }

    #[test]
    fn a_drawn_page_becomes_a_jpeg_of_its_size_within_the_byte_limit() {
        let jpeg = jpeg_of(&noisy_pnm(226, 320), THUMBNAIL_BYTES).expect("a thumbnail");
        assert!(jpeg.len() as u64 <= THUMBNAIL_BYTES);
        let decoded = image::load_from_memory_with_format(&jpeg, image::ImageFormat::Jpeg).expect("a JPEG");
        assert_eq!((decoded.width(), decoded.height()), (226, 320));

        let first_try = jpeg_of(&noisy_pnm(226, 320), u64::MAX).unwrap();
        let squeezed = jpeg_of(&noisy_pnm(226, 320), first_try.len() as u64 - 1).expect("a lower quality fits");
        assert!(squeezed.len() < first_try.len());

        let error = jpeg_of(&noisy_pnm(226, 320), 500).expect_err("no quality gets noise into 500 bytes");
        assert!(error.contains("over 500"), "{error}");
        assert!(jpeg_of(b"P6\n2 2\n255\n", THUMBNAIL_BYTES).is_err(), "a cut picture is refused");
    }

    #[test]
    fn the_page_is_drawn_first_fitted_in_the_square_and_a_missing_program_names_the_package() {
        let renderer = Renderer { program: PathBuf::from("/usr/bin/mutool"), max_side: 320, max_bytes: 1 };
        let args: Vec<String> = renderer
            .arguments(Path::new("/w/in.pdf"), Path::new("/w/s/page.pnm"))
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args.join(" "), "draw -q -r 72 -w 320 -h 320 -F pnm -o /w/s/page.pnm /w/in.pdf 1");
        match Renderer::find("docket-no-such-mutool-5f2a") {
            Availability::Unavailable(why) => assert_eq!(
                why,
                "results are sent without a preview: MuPDF's \"docket-no-such-mutool-5f2a\" is not installed on this \
                 machine (not an executable file in PATH); install mupdf-tools, or set [processing] renderer"
            ),
            other => panic!("{other:?}"),
        }
        assert!(Renderer::thumbnails("/no/such/mutool").is_none());
    }
}
