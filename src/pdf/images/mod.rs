//! `topdf`: a picture as a PDF, one page per image, in every form people send one: JPEG, PNG,
//! TIFF (every page), WebP, GIF (its first frame), and HEIF/HEIC (iPhone photos) or AVIF. The
//! format is the content's ([`crate::detect`]), whatever the file's name says. One file per
//! format:
//!
//! - `jpeg.rs`: embedded byte for byte (`DCTDecode`), nothing re-encoded.
//! - `png.rs`, `tiff.rs` (a page per frame), `webp.rs` and `gif.rs`: decoded and their samples
//!   deflated losslessly (Flate, 8 or 16 bits per component as in the file); an alpha channel
//!   becomes the image's `/SMask`. A bilevel TIFF frame (a fax, a black-and-white scan) becomes
//!   a CCITT Group 4 image instead, as small as a fax's own data.
//! - [`heif`](mod@heif): decoded by libheif's `heif-convert` (Debian package
//!   `libheif-examples`), then read as a lossless PNG.
//!
//! **Upright.** A phone photo taken sideways says so in its EXIF orientation (a JPEG's APP1, a
//! PNG's `eXIf`, a WebP's `EXIF`, a TIFF's `Orientation` tag; HEIF's own `irot`/`imir`, which
//! libheif applies). The page takes the shape the picture is seen in and its content stream's
//! `cm` matrix turns or mirrors the image onto it (`orientation.rs`), all eight orientations,
//! so the JPEG's bytes stay untouched and no pixel is moved.
//!
//! **Page size.** Each page is the image at its own resolution: the one its file states (JFIF
//! density, PNG `pHYs`, TIFF `XResolution`/`YResolution`); without one, 72 dpi, except that an
//! image larger than an A4 page at 72 dpi is fitted to A4's long side (11.69 in), so a photo
//! from a phone does not become a poster.
//!
//! **Bounded.** Decoding is bounded before anything is allocated: an image whose samples would
//! take more than `max_inflate` bytes fails with [`PdfError::InflatesTooMuch`]. A picture that
//! cannot be decoded fails with [`PdfError::Unreadable`] and the decoder's reason.

mod gif;
pub mod heif;
mod jpeg;
mod orientation;
mod png;
mod tiff;
mod webp;

use std::path::Path;

use image::metadata::Orientation;
use lopdf::{Dictionary, Document, Object, Stream, dictionary};

pub(super) use jpeg::markers as jpeg_markers;

use super::{OptimizeReport, PdfError, Settings};

/// Resolution assumed for an image that states none.
pub const DEFAULT_DPI: f64 = 72.0;

/// A4's long side, in inches: an image without a resolution is never drawn larger than that.
const A4_LONG_SIDE_INCHES: f64 = 11.69;

/// Writes the image at `input` as a PDF at `output`.
///
/// # Errors
///
/// - [`PdfError::Unreadable`] if it is not a picture `topdf` reads, or it cannot be decoded;
/// - [`PdfError::InflatesTooMuch`] if its pixels would take more than `max_inflate` bytes;
/// - [`PdfError::ToolMissing`] if it is a HEIF or AVIF image and `heif-convert` is not
///   installed;
/// - [`PdfError::Io`] if reading or writing fails.
#[tracing::instrument(name = "pdf_topdf", skip_all)]
pub fn to_pdf(input: &Path, output: &Path, settings: &Settings) -> Result<OptimizeReport, PdfError> {
    let (input, output, max_inflate) = (input.to_path_buf(), output.to_path_buf(), settings.max_inflate);
    super::work::on_work_thread(move || {
        let bytes = std::fs::read(&input)?;
        let (mut document, count) = document_of(&input, &bytes, max_inflate)?;
        let mut file = std::io::BufWriter::new(std::fs::File::create(&output)?);
        document.save_to(&mut file).map_err(|e| PdfError::unreadable(format!("saving: {e}")))?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        let output_bytes = file.metadata()?.len();
        Ok(OptimizeReport { pages: count, input_bytes: bytes.len() as u64, output_bytes })
    })
}

/// The formats [`document_of`] reads, by their [`crate::detect`] labels.
pub(super) const PICTURE_LABELS: [&str; 7] = ["jpeg", "png", "tiff", "webp", "gif", "heif", "avif"];

/// The picture at `input`, whose content is `bytes`, as the document `topdf` writes (a page
/// per image), and its page count. `merge` appends the same pages.
///
/// # Errors
///
/// Those of [`to_pdf`] but [`PdfError::Io`], and [`PdfError::NoPages`] for a picture without
/// a frame.
pub(super) fn document_of(input: &Path, bytes: &[u8], max_inflate: usize) -> Result<(Document, u32), PdfError> {
    let pages = pages_of(input, bytes, max_inflate)?;
    let count = u32::try_from(pages.len()).map_err(|_| PdfError::unreadable("too many frames"))?;
    if count == 0 {
        return Err(PdfError::NoPages);
    }
    Ok((assemble(pages), count))
}

/// One page's image, ready to embed.
struct Page {
    image: Stream,
    smask: Option<Stream>,
    /// Pixels per inch across and down, as stored.
    dpi: Option<(f64, f64)>,
    /// The image as stored.
    width: u32,
    height: u32,
    /// How the stored image is to be seen.
    orientation: Orientation,
}

/// The pages of the picture at `input`, whose content is `bytes`.
fn pages_of(input: &Path, bytes: &[u8], max_inflate: usize) -> Result<Vec<Page>, PdfError> {
    let found = crate::detect::detect_bytes(bytes);
    match found.label() {
        "jpeg" => Ok(vec![jpeg::page(bytes)?]),
        "png" => Ok(vec![png::page(bytes, max_inflate, true)?]),
        "tiff" => tiff::pages(bytes, max_inflate),
        "webp" => Ok(vec![webp::page(bytes, max_inflate)?]),
        "gif" => Ok(vec![gif::page(bytes, max_inflate)?]),
        "heif" | "avif" => heif::pages(input, bytes, max_inflate),
        _ => Err(PdfError::unreadable(format!("{} is not an image topdf reads", found.describe()))),
    }
}

fn assemble(pages: Vec<Page>) -> Document {
    let mut document = Document::with_version("1.7");
    let pages_id = document.new_object_id();
    let mut kids = Vec::new();
    for page in pages {
        let (width_pt, height_pt) = orientation::page_size(page.orientation, page_size(&page));
        let [a, b, c, d, e, f] = orientation::matrix(page.orientation, width_pt, height_pt);
        let mut image = page.image;
        if let Some(smask) = page.smask {
            let smask_id = document.add_object(smask);
            image.dict.set("SMask", smask_id);
        }
        let image_id = document.add_object(image);
        let content = format!("q {a:.4} {b:.4} {c:.4} {d:.4} {e:.4} {f:.4} cm /Im0 Do Q");
        let content_id = document.add_object(Stream::new(Dictionary::new(), content.into_bytes()));
        let page_id = document.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "MediaBox" => vec![0.into(), 0.into(), Object::Real(width_pt as f32), Object::Real(height_pt as f32)],
            "Resources" => dictionary! { "XObject" => dictionary! { "Im0" => image_id } },
            "Contents" => content_id,
        });
        kids.push(Object::Reference(page_id));
    }
    let count = kids.len() as i64;
    document
        .objects
        .insert(pages_id, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }));
    let catalog_id = document.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    document.trailer.set("Root", catalog_id);
    document
}

/// The stored image's size in points, as the module docs say.
fn page_size(page: &Page) -> (f64, f64) {
    let (width, height) = (f64::from(page.width), f64::from(page.height));
    let (dpi_x, dpi_y) = match page.dpi {
        Some((x, y)) if x >= 1.0 && y >= 1.0 => (x, y),
        _ => {
            let dpi = DEFAULT_DPI.max(width.max(height) / A4_LONG_SIDE_INCHES);
            (dpi, dpi)
        }
    };
    // PDF viewers handle pages up to 200 inches (14 400 points) on a side.
    let (w, h) = (width * 72.0 / dpi_x, height * 72.0 / dpi_y);
    let fit = (14_400.0 / w.max(h)).min(1.0);
    ((w * fit).max(1.0), (h * fit).max(1.0))
}

fn image_dict(width: u32, height: u32, colour_space: &str, bits: u8) -> Dictionary {
    dictionary! {
        "Type" => "XObject",
        "Subtype" => "Image",
        "Width" => i64::from(width),
        "Height" => i64::from(height),
        "ColorSpace" => colour_space,
        "BitsPerComponent" => i64::from(bits),
    }
}

/// Samples deflated as an image stream.
fn flate_image(mut dict: Dictionary, samples: &[u8]) -> Stream {
    dict.set("Filter", "FlateDecode");
    Stream::new(dict, super::optimize::deflate_best(samples)).with_compression(false)
}

fn check_size(width: u32, height: u32, bytes_per_pixel: usize, max_inflate: usize) -> Result<(), PdfError> {
    let bytes = u64::from(width) * u64::from(height) * bytes_per_pixel as u64;
    if bytes > max_inflate as u64 {
        return Err(PdfError::InflatesTooMuch { limit: max_inflate });
    }
    Ok(())
}

// ---- Decoded samples --------------------------------------------------------------------

struct Raster {
    width: u32,
    height: u32,
    /// 8 or 16 (big-endian samples).
    bits: u8,
    space: &'static str,
    colours: usize,
    /// Whether each pixel ends with an alpha sample.
    alpha: bool,
    samples: Vec<u8>,
    dpi: Option<(f64, f64)>,
    decode: Option<Vec<Object>>,
}

/// Decoded samples as a page, seen as `orientation` says.
fn raster_page(raster: Raster, orientation: Orientation) -> Page {
    let Raster { width, height, bits, space, colours, alpha, samples, dpi, decode } = raster;
    let sample_bytes = usize::from(bits / 8);
    let mut dict = image_dict(width, height, space, bits);
    if let Some(decode) = decode {
        dict.set("Decode", decode);
    }
    if !alpha {
        return Page { image: flate_image(dict, &samples), smask: None, dpi, width, height, orientation };
    }
    let pixel = (colours + 1) * sample_bytes;
    let colour_bytes = colours * sample_bytes;
    let mut colour = Vec::with_capacity(samples.len() / (colours + 1) * colours);
    let mut mask = Vec::with_capacity(samples.len() / (colours + 1));
    for chunk in samples.chunks_exact(pixel) {
        colour.extend_from_slice(&chunk[..colour_bytes]);
        mask.extend_from_slice(&chunk[colour_bytes..]);
    }
    drop(samples);
    // An alpha channel that is opaque everywhere needs no mask.
    let opaque = mask.iter().all(|&a| a == 0xFF);
    let smask = (!opaque).then(|| flate_image(image_dict(width, height, "DeviceGray", bits), &mask));
    Page { image: flate_image(dict, &colour), smask, dpi, width, height, orientation }
}

#[cfg(test)]
mod tests;
