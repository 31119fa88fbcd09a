//! `topdf`: an image (JPEG, PNG, TIFF, WebP) as a PDF, one page per image.
//!
//! - A JPEG is embedded byte for byte (`DCTDecode`): its size and components are read from its
//!   header, nothing is re-encoded. A four-component JPEG with an Adobe marker (as Photoshop
//!   writes them, inverted) gets `/Decode [1 0 1 0 1 0 1 0]`, as readers expect.
//! - PNG, TIFF (every frame of a multi-page TIFF, one page each) and WebP are decoded and their
//!   samples deflated losslessly (Flate, 8 or 16 bits per component as in the file); an alpha
//!   channel becomes the image's `/SMask`. A bilevel TIFF frame (a fax, a black-and-white
//!   scan) becomes a CCITT Group 4 image instead, as small as a fax's own data.
//!
//! Each page is the image at its own resolution: the one its file states (JFIF density, PNG
//! `pHYs`, TIFF `XResolution`/`YResolution`); without one, 72 dpi, except that an image larger
//! than an A4 page at 72 dpi is fitted to A4's long side (11.69 in), so a photo from a phone
//! does not become a poster.
//!
//! Decoding is bounded before anything is allocated: an image whose samples would take more
//! than `max_inflate` bytes fails with [`PdfError::InflatesTooMuch`].

use std::io::Cursor;
use std::path::Path;

use lopdf::{Dictionary, Document, Object, Stream, dictionary};

use super::{OptimizeReport, PdfError, Settings};

/// Resolution assumed for an image that states none.
pub const DEFAULT_DPI: f64 = 72.0;

/// A4's long side, in inches: an image without a resolution is never drawn larger than that.
const A4_LONG_SIDE_INCHES: f64 = 11.69;

/// Writes the image at `input` as a PDF at `output`.
///
/// # Errors
///
/// - [`PdfError::Unreadable`] if it is not a JPEG, PNG, TIFF or WebP docket can read;
/// - [`PdfError::InflatesTooMuch`] if its pixels would take more than `max_inflate` bytes;
/// - [`PdfError::Io`] if reading or writing fails.
#[tracing::instrument(name = "pdf_topdf", skip_all)]
pub fn to_pdf(input: &Path, output: &Path, settings: &Settings) -> Result<OptimizeReport, PdfError> {
    let (input, output, max_inflate) = (input.to_path_buf(), output.to_path_buf(), settings.max_inflate);
    super::on_work_thread(move || {
        let bytes = std::fs::read(&input)?;
        let pages = pages_of(&bytes, max_inflate)?;
        let count = u32::try_from(pages.len()).map_err(|_| PdfError::unreadable("too many frames"))?;
        if count == 0 {
            return Err(PdfError::NoPages);
        }
        let mut document = assemble(pages);
        let mut file = std::io::BufWriter::new(std::fs::File::create(&output)?);
        document.save_to(&mut file).map_err(|e| PdfError::unreadable(format!("saving: {e}")))?;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        let output_bytes = file.metadata()?.len();
        Ok(OptimizeReport { pages: count, input_bytes: bytes.len() as u64, output_bytes })
    })
}

/// One page's image, ready to embed.
struct Page {
    image: Stream,
    smask: Option<Stream>,
    /// Pixels per inch across and down.
    dpi: Option<(f64, f64)>,
    width: u32,
    height: u32,
}

fn pages_of(bytes: &[u8], max_inflate: usize) -> Result<Vec<Page>, PdfError> {
    let found = crate::detect::detect_bytes(bytes);
    match found.label() {
        "jpeg" => Ok(vec![jpeg_page(bytes)?]),
        "png" => Ok(vec![png_page(bytes, max_inflate)?]),
        "tiff" => tiff_pages(bytes, max_inflate),
        "webp" => Ok(vec![webp_page(bytes, max_inflate)?]),
        _ => Err(PdfError::unreadable(format!("{} is not an image topdf reads", found.describe()))),
    }
}

fn assemble(pages: Vec<Page>) -> Document {
    let mut document = Document::with_version("1.7");
    let pages_id = document.new_object_id();
    let mut kids = Vec::new();
    for page in pages {
        let (width_pt, height_pt) = page_size(&page);
        let mut image = page.image;
        if let Some(smask) = page.smask {
            let smask_id = document.add_object(smask);
            image.dict.set("SMask", smask_id);
        }
        let image_id = document.add_object(image);
        let content = format!("q {width_pt:.4} 0 0 {height_pt:.4} 0 0 cm /Im0 Do Q");
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

/// The page's size in points, as the module docs say.
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

// ---- JPEG -------------------------------------------------------------------------------

fn jpeg_page(bytes: &[u8]) -> Result<Page, PdfError> {
    use zune_jpeg::zune_core::bytestream::ZCursor;
    let mut decoder = zune_jpeg::JpegDecoder::new(ZCursor::new(bytes));
    decoder.decode_headers().map_err(|e| PdfError::unreadable(format!("reading the JPEG: {e}")))?;
    let info = decoder.info().ok_or_else(|| PdfError::unreadable("the JPEG has no frame header"))?;
    let components = decoder.input_colorspace().map(|c| c.num_components()).unwrap_or(0);
    let colour_space = match components {
        1 => "DeviceGray",
        3 => "DeviceRGB",
        4 => "DeviceCMYK",
        n => return Err(PdfError::unreadable(format!("a JPEG of {n} components"))),
    };
    let (width, height) = (u32::from(info.width), u32::from(info.height));
    let mut dict = image_dict(width, height, colour_space, 8);
    dict.set("Filter", "DCTDecode");
    let markers = jpeg_markers(bytes);
    if components == 4 && markers.adobe {
        dict.set("Decode", vec![1.into(), 0.into(), 1.into(), 0.into(), 1.into(), 0.into(), 1.into(), 0.into()]);
    }
    let image = Stream::new(dict, bytes.to_vec()).with_compression(false);
    Ok(Page { image, smask: None, dpi: markers.dpi, width, height })
}

#[derive(Default)]
pub(super) struct JpegMarkers {
    adobe: bool,
    dpi: Option<(f64, f64)>,
    /// The components of a sequential (baseline or extended, Huffman-coded) frame; `None` for
    /// any other frame.
    sequential_components: Option<u8>,
    /// The components the first scan holds.
    first_scan_components: Option<u8>,
}

impl JpegMarkers {
    /// Whether it is a sequential JPEG of several components whose first scan holds fewer than
    /// all of them (one scan per component): valid, but zune-jpeg 0.5 decodes such files wrong
    /// without an error.
    pub(super) fn has_a_scan_per_component(&self) -> bool {
        matches!((self.sequential_components, self.first_scan_components), (Some(all), Some(scan)) if all > 1 && scan < all)
    }
}

/// The JFIF density, whether there is an Adobe marker, and the frame's and first scan's
/// components, from the segments up to the first scan.
pub(super) fn jpeg_markers(bytes: &[u8]) -> JpegMarkers {
    let mut found = JpegMarkers::default();
    let mut at = 2;
    while at + 4 <= bytes.len() && bytes[at] == 0xFF {
        let marker = bytes[at + 1];
        if marker == 0xD9 {
            break;
        }
        let length = usize::from(u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]));
        let segment = bytes.get(at + 4..at + 2 + length).unwrap_or_default();
        match marker {
            0xE0 if segment.starts_with(b"JFIF\0") && segment.len() >= 12 => {
                let x = f64::from(u16::from_be_bytes([segment[8], segment[9]]));
                let y = f64::from(u16::from_be_bytes([segment[10], segment[11]]));
                found.dpi = match segment[7] {
                    1 => Some((x, y)),
                    2 => Some((x * 2.54, y * 2.54)),
                    _ => None,
                };
            }
            0xEE if segment.starts_with(b"Adobe") => found.adobe = true,
            // SOF0, SOF1: the component count is the frame header's sixth byte.
            0xC0 | 0xC1 => found.sequential_components = segment.get(5).copied(),
            0xDA => {
                found.first_scan_components = segment.first().copied();
                break;
            }
            _ => {}
        }
        at += 2 + length.max(2);
    }
    found
}

// ---- PNG --------------------------------------------------------------------------------

fn png_page(bytes: &[u8], max_inflate: usize) -> Result<Page, PdfError> {
    use png::{BitDepth, ColorType, Transformations, Unit};
    let unreadable = |e: png::DecodingError| PdfError::unreadable(format!("reading the PNG: {e}"));
    let mut decoder = png::Decoder::new_with_limits(Cursor::new(bytes), png::Limits { bytes: max_inflate });
    decoder.set_transformations(Transformations::EXPAND);
    let mut reader = decoder.read_info().map_err(|e| match e {
        png::DecodingError::LimitsExceeded => PdfError::InflatesTooMuch { limit: max_inflate },
        other => unreadable(other),
    })?;
    let info = reader.info();
    let (width, height) = (info.width, info.height);
    let dpi = info.pixel_dims.and_then(|d| match d.unit {
        Unit::Meter => Some((f64::from(d.xppu) * 0.0254, f64::from(d.yppu) * 0.0254)),
        Unit::Unspecified => None,
    });
    let (colour, depth) = reader.output_color_type();
    let bytes_per_sample = if depth == BitDepth::Sixteen { 2 } else { 1 };
    check_size(width, height, colour.samples() * bytes_per_sample, max_inflate)?;
    let size = reader.output_buffer_size().ok_or(PdfError::InflatesTooMuch { limit: max_inflate })?;
    let mut buffer = vec![0; size];
    let frame = reader.next_frame(&mut buffer).map_err(unreadable)?;
    buffer.truncate(frame.buffer_size());
    let bits = if depth == BitDepth::Sixteen { 16 } else { 8 };
    let (space, colours, alpha) = match colour {
        ColorType::Grayscale => ("DeviceGray", 1, false),
        ColorType::GrayscaleAlpha => ("DeviceGray", 1, true),
        ColorType::Rgb => ("DeviceRGB", 3, false),
        ColorType::Rgba => ("DeviceRGB", 3, true),
        ColorType::Indexed => return Err(PdfError::unreadable("a PNG palette that did not expand")),
    };
    Ok(raster_page(Raster { width, height, bits, space, colours, alpha, samples: buffer, dpi, decode: None }))
}

// ---- WebP -------------------------------------------------------------------------------

fn webp_page(bytes: &[u8], max_inflate: usize) -> Result<Page, PdfError> {
    use image::ImageDecoder;
    let unreadable = |e: image::ImageError| PdfError::unreadable(format!("reading the WebP image: {e}"));
    let decoder = image::codecs::webp::WebPDecoder::new(Cursor::new(bytes)).map_err(unreadable)?;
    let (width, height) = decoder.dimensions();
    let colour = decoder.color_type();
    check_size(width, height, usize::from(colour.bytes_per_pixel()), max_inflate)?;
    let total = usize::try_from(decoder.total_bytes()).map_err(|_| PdfError::InflatesTooMuch { limit: max_inflate })?;
    let mut samples = vec![0; total];
    decoder.read_image(&mut samples).map_err(unreadable)?;
    let (space, colours, alpha) = match colour {
        image::ColorType::L8 => ("DeviceGray", 1, false),
        image::ColorType::La8 => ("DeviceGray", 1, true),
        image::ColorType::Rgb8 => ("DeviceRGB", 3, false),
        image::ColorType::Rgba8 => ("DeviceRGB", 3, true),
        other => return Err(PdfError::unreadable(format!("a WebP image of {other:?}"))),
    };
    Ok(raster_page(Raster { width, height, bits: 8, space, colours, alpha, samples, dpi: None, decode: None }))
}

// ---- TIFF -------------------------------------------------------------------------------

fn tiff_pages(bytes: &[u8], max_inflate: usize) -> Result<Vec<Page>, PdfError> {
    use tiff::ColorType;
    use tiff::decoder::{Decoder, DecodingResult, Limits};
    let unreadable = |e: tiff::TiffError| match e {
        tiff::TiffError::LimitsExceeded => PdfError::InflatesTooMuch { limit: max_inflate },
        other => PdfError::unreadable(format!("reading the TIFF: {other}")),
    };
    let mut limits = Limits::default();
    limits.decoding_buffer_size = max_inflate;
    limits.intermediate_buffer_size = max_inflate;
    let mut decoder = Decoder::new(Cursor::new(bytes)).map_err(unreadable)?.with_limits(limits);
    let mut pages = Vec::new();
    loop {
        let (width, height) = decoder.dimensions().map_err(unreadable)?;
        let colour = decoder.colortype().map_err(unreadable)?;
        if colour == ColorType::Gray(1) {
            pages.push(bilevel_tiff_page(&mut decoder, width, height, max_inflate)?);
            if !decoder.more_images() {
                break;
            }
            decoder.next_image().map_err(unreadable)?;
            continue;
        }
        let (space, colours, alpha, bits) = match colour {
            ColorType::Gray(bits @ (8 | 16)) => ("DeviceGray", 1, false, bits),
            ColorType::GrayA(bits @ (8 | 16)) => ("DeviceGray", 1, true, bits),
            ColorType::RGB(bits @ (8 | 16)) => ("DeviceRGB", 3, false, bits),
            ColorType::RGBA(bits @ (8 | 16)) => ("DeviceRGB", 3, true, bits),
            ColorType::CMYK(8) => ("DeviceCMYK", 4, false, 8),
            other => return Err(PdfError::unreadable(format!("a TIFF frame of {other:?}"))),
        };
        let samples_per_pixel = colours + usize::from(alpha);
        check_size(width, height, samples_per_pixel * usize::from(bits / 8), max_inflate)?;
        let dpi = tiff_dpi(&mut decoder);
        let samples = match decoder.read_image().map_err(unreadable)? {
            DecodingResult::U8(samples) => samples,
            DecodingResult::U16(samples) => samples.iter().flat_map(|s| s.to_be_bytes()).collect(),
            _ => return Err(PdfError::unreadable("a TIFF frame of an unusual sample type")),
        };
        // A WhiteIsZero frame comes inverted to BlackIsZero already, as DeviceGray reads it.
        pages.push(raster_page(Raster { width, height, bits, space, colours, alpha, samples, dpi, decode: None }));
        if !decoder.more_images() {
            break;
        }
        decoder.next_image().map_err(unreadable)?;
    }
    Ok(pages)
}

/// A bilevel TIFF frame (a fax, a black-and-white scan) as a CCITT Group 4 image: lossless, and
/// as small as the fax's own Group 4 data, whatever compression the TIFF used.
fn bilevel_tiff_page<R: std::io::Read + std::io::Seek>(
    decoder: &mut tiff::decoder::Decoder<R>,
    width: u32,
    height: u32,
    max_inflate: usize,
) -> Result<Page, PdfError> {
    use tiff::decoder::DecodingResult;
    let packed_bytes = u64::from(width).div_ceil(8) * u64::from(height);
    if packed_bytes > max_inflate as u64 {
        return Err(PdfError::InflatesTooMuch { limit: max_inflate });
    }
    let dpi = tiff_dpi(decoder);
    let DecodingResult::U8(packed) =
        decoder.read_image().map_err(|e| PdfError::unreadable(format!("reading the TIFF: {e}")))?
    else {
        return Err(PdfError::unreadable("a bilevel TIFF frame of an unusual sample type"));
    };
    let mut dict = image_dict(width, height, "DeviceGray", 1);
    // The decoder gives every frame as BlackIsZero (it inverts WhiteIsZero, a fax's usual): a
    // 0 bit is black, as in a 1-bit DeviceGray image.
    let image = match super::ccitt::encode_g4(&packed, width, height, false) {
        Some(g4) => {
            dict.set("Filter", "CCITTFaxDecode");
            dict.set("DecodeParms", super::ccitt::g4_parameters(width, height));
            Stream::new(dict, g4).with_compression(false)
        }
        // Wider than Group 4 can say: the bits as they are, deflated.
        None => flate_image(dict, &packed),
    };
    Ok(Page { image, smask: None, dpi, width, height })
}

fn tiff_dpi<R: std::io::Read + std::io::Seek>(decoder: &mut tiff::decoder::Decoder<R>) -> Option<(f64, f64)> {
    use tiff::decoder::ifd::Value;
    use tiff::tags::Tag;
    let rational = |value: Option<Value>| match value? {
        Value::Rational(n, d) if d > 0 => Some(f64::from(n) / f64::from(d)),
        _ => None,
    };
    let x = rational(decoder.find_tag(Tag::XResolution).ok()?)?;
    let y = rational(decoder.find_tag(Tag::YResolution).ok()?)?;
    match decoder.get_tag_u32(Tag::ResolutionUnit).unwrap_or(2) {
        2 => Some((x, y)),
        3 => Some((x * 2.54, y * 2.54)),
        _ => None,
    }
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

fn raster_page(raster: Raster) -> Page {
    let Raster { width, height, bits, space, colours, alpha, samples, dpi, decode } = raster;
    let sample_bytes = usize::from(bits / 8);
    let mut dict = image_dict(width, height, space, bits);
    if let Some(decode) = decode {
        dict.set("Decode", decode);
    }
    if !alpha {
        return Page { image: flate_image(dict, &samples), smask: None, dpi, width, height };
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
    Page { image: flate_image(dict, &colour), smask, dpi, width, height }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use crate::pdf::shrink::tests::{jpeg, picture};

    fn convert(bytes: &[u8], max_inflate: usize) -> (tempfile::TempDir, Result<OptimizeReport, PdfError>, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        let output = dir.path().join("out.pdf");
        std::fs::write(&input, bytes).unwrap();
        let result = to_pdf(&input, &output, &Settings::with_max_inflate(max_inflate));
        (dir, result, output)
    }

    use std::path::PathBuf;

    fn first_image(document: &Document, page: u32) -> &Stream {
        let page = document.get_pages()[&page];
        let (_, ids) = document.get_page_resources(page).unwrap();
        let resources = match ids.first() {
            Some(id) => document.get_dictionary(*id).unwrap(),
            None => document.get_dictionary(page).unwrap().get(b"Resources").unwrap().as_dict().unwrap(),
        };
        let id = resources.get(b"XObject").unwrap().as_dict().unwrap().get(b"Im0").unwrap().as_reference().unwrap();
        document.get_object(id).unwrap().as_stream().unwrap()
    }

    #[test]
    fn a_jpeg_is_embedded_byte_for_byte() {
        let bytes = jpeg(&picture(320, 200, 3), 320, 200, 3);
        let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
        assert_eq!(result.unwrap().pages, 1);
        let document = Document::load(&output).unwrap();
        let image = first_image(&document, 1);
        assert_eq!(image.content, bytes);
        assert_eq!(image.dict.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
        assert_eq!(image.dict.get(b"Width").unwrap().as_i64().unwrap(), 320);
        assert_eq!(image.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceRGB");
        // No resolution stated: 72 dpi, one point per pixel.
        let page = document.get_dictionary(document.get_pages()[&1]).unwrap();
        let media_box = page.get(b"MediaBox").unwrap().as_array().unwrap();
        assert_eq!(media_box[2].as_float().unwrap(), 320.0);
    }

    fn png(width: u32, height: u32, colour: png::ColorType, data: &[u8], ppm: Option<u32>) -> Vec<u8> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(colour);
        encoder.set_depth(png::BitDepth::Eight);
        if let Some(ppm) = ppm {
            encoder.set_pixel_dims(Some(png::PixelDimensions { xppu: ppm, yppu: ppm, unit: png::Unit::Meter }));
        }
        let mut writer = encoder.write_header().unwrap();
        writer.write_image_data(data).unwrap();
        writer.finish().unwrap();
        out
    }

    #[test]
    fn a_png_with_alpha_gets_a_soft_mask_and_its_resolution() {
        let (w, h) = (64, 48);
        let rgba: Vec<u8> = picture(w, h, 4);
        // 300 dpi = 11811 pixels per metre.
        let bytes = png(w, h, png::ColorType::Rgba, &rgba, Some(11_811));
        let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
        result.unwrap();
        let document = Document::load(&output).unwrap();
        let image = first_image(&document, 1);
        let smask = image.dict.get(b"SMask").unwrap().as_reference().unwrap();
        let smask = document.get_object(smask).unwrap().as_stream().unwrap();
        assert_eq!(smask.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceGray");
        let alpha: Vec<u8> = rgba.chunks(4).map(|p| p[3]).collect();
        assert_eq!(smask.decompressed_content().unwrap(), alpha);
        let colour: Vec<u8> = rgba.chunks(4).flat_map(|p| p[..3].to_vec()).collect();
        assert_eq!(image.decompressed_content().unwrap(), colour, "lossless");
        let page = document.get_dictionary(document.get_pages()[&1]).unwrap();
        let width_pt = page.get(b"MediaBox").unwrap().as_array().unwrap()[2].as_float().unwrap();
        assert!((width_pt - 64.0 * 72.0 / 300.0).abs() < 0.1, "{width_pt}");
    }

    #[test]
    fn an_opaque_png_gets_no_mask() {
        let bytes = png(8, 8, png::ColorType::Rgb, &picture(8, 8, 3), None);
        let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
        result.unwrap();
        let document = Document::load(&output).unwrap();
        assert!(!first_image(&document, 1).dict.has(b"SMask"));
    }

    #[test]
    fn a_multi_page_tiff_gives_a_page_per_frame() {
        use tiff::encoder::{TiffEncoder, colortype};
        let mut bytes = Vec::new();
        {
            let mut encoder = TiffEncoder::new(Cursor::new(&mut bytes)).unwrap();
            for frame in 0..3u32 {
                let (w, h) = (40 + frame * 10, 30);
                encoder.write_image::<colortype::RGB8>(w, h, &picture(w, h, 3)).unwrap();
            }
        }
        let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
        assert_eq!(result.unwrap().pages, 3);
        let document = Document::load(&output).unwrap();
        assert_eq!(document.get_pages().len(), 3);
        assert_eq!(first_image(&document, 3).dict.get(b"Width").unwrap().as_i64().unwrap(), 60);
        assert_eq!(first_image(&document, 3).decompressed_content().unwrap(), picture(60, 30, 3));
    }

    #[test]
    fn a_bilevel_tiff_becomes_a_group_4_image_of_the_same_pixels() {
        let (w, h) = (203u32, 97u32);
        // A fax: Group 4 data in a TIFF, WhiteIsZero (a set bit is black), 200 dpi.
        let packed = crate::pdf::ccitt::tests::scan(w, h);
        let look: Vec<u8> = packed.iter().map(|b| !b).collect();
        let g4 = crate::pdf::ccitt::encode_g4(&packed, w, h, true).unwrap();
        let bytes = fax::tiff::wrap(&g4, w, h);
        let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
        assert_eq!(result.unwrap().pages, 1);
        let document = Document::load(&output).unwrap();
        let image = first_image(&document, 1);
        assert_eq!(image.dict.get(b"Filter").unwrap().as_name().unwrap(), b"CCITTFaxDecode");
        assert_eq!(image.dict.get(b"BitsPerComponent").unwrap().as_i64().unwrap(), 1);
        // Decoded as a reader does (black is 0 in DeviceGray): the fax's black pixels.
        assert!(crate::pdf::ccitt::tests::as_gray(&image.content, w, h) == look, "the pixels changed");
        // At the TIFF's 200 dpi: 203 px is 73.08 pt.
        let page = document.get_pages()[&1];
        let media = document.get_dictionary(page).unwrap().get(b"MediaBox").unwrap().as_array().unwrap();
        assert!((media[2].as_float().unwrap() - 73.08).abs() < 0.01, "{media:?}");
    }

    #[test]
    fn a_white_is_zero_gray_tiff_keeps_its_look() {
        use tiff::encoder::{TiffEncoder, colortype};
        let (w, h) = (40u32, 30u32);
        let look = picture(w, h, 1);
        let stored: Vec<u8> = look.iter().map(|v| 255 - v).collect();
        let mut bytes = Vec::new();
        TiffEncoder::new(Cursor::new(&mut bytes)).unwrap().write_image::<colortype::Gray8>(w, h, &stored).unwrap();
        // PhotometricInterpretation (262, SHORT, 1 value) from BlackIsZero (1) to WhiteIsZero (0).
        let entry = [0x06, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00];
        let at = bytes.windows(entry.len()).position(|w| w == entry).expect("the photometric tag");
        bytes[at + 8] = 0;
        let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
        result.unwrap();
        let document = Document::load(&output).unwrap();
        let image = first_image(&document, 1);
        assert!(!image.dict.has(b"Decode"));
        assert_eq!(image.decompressed_content().unwrap(), look, "white stays white");
    }

    #[test]
    fn an_image_larger_than_the_cap_is_refused_before_decoding() {
        let bytes = png(2000, 2000, png::ColorType::Rgb, &vec![0; 2000 * 2000 * 3], None);
        let (_dir, result, _) = convert(&bytes, 1 << 20);
        assert!(matches!(result, Err(PdfError::InflatesTooMuch { limit }) if limit == 1 << 20), "{result:?}");
    }

    #[test]
    fn a_big_photo_without_a_resolution_fits_a4() {
        let page = Page {
            image: Stream::new(Dictionary::new(), Vec::new()),
            smask: None,
            dpi: None,
            width: 4000,
            height: 3000,
        };
        let (w, h) = page_size(&page);
        assert!((w - 11.69 * 72.0).abs() < 0.5 && h < w, "{w} × {h}");
    }

    #[test]
    fn something_else_is_unreadable() {
        let (_dir, result, _) = convert(b"%PDF-1.7 not an image", DEFAULT_MAX_INFLATE_BYTES);
        assert!(matches!(result, Err(PdfError::Unreadable { .. })), "{result:?}");
    }
}
