//! `shrink`: the lossy operation for scans and photos.
//!
//! Every image drawn on a page at more than `[processing] shrink_dpi` is downsampled to it and
//! written as a JPEG at `[processing] jpeg_quality`; then the document is optimized as
//! [`super::optimize()`] does, and, as there, the original is returned when the result is not
//! smaller. An image's new version replaces it only when it is smaller than the original one.
//!
//! # Resolution
//!
//! An image's resolution on the page is its pixel size over the size it is drawn at: the
//! length of the current transformation matrix's axes where a page's content (or a form it
//! draws) paints it with `Do`. An image drawn several times keeps the resolution its largest
//! drawing needs. When the content cannot be parsed, or the image is named in a page's
//! resources but not drawn in its content, it is taken to fill the page's MediaBox: a
//! smaller drawing would only mean a higher resolution, so this never shrinks an image below
//! the target. Images are never upsampled, and one less than [`WORTH_IT`] above the target is
//! left as it is: re-encoding it would cost quality and gain little.
//!
//! # What is read
//!
//! - JPEG (`DCTDecode`) with one or three components, decoded with `zune-jpeg`;
//! - JPEG 2000 (`JPXDecode`) in gray or RGB without an alpha channel, decoded with the pure-Rust
//!   `hayro-jpeg2000` (its `/ColorSpace`, or else the codestream's own);
//! - any stream lopdf decodes (Flate, LZW, RunLength, ASCII85/Hex, with PNG and TIFF
//!   predictors), at 1, 2, 4, 8 or 16 bits per component, in DeviceGray, DeviceRGB,
//!   DeviceCMYK, CalGray, CalRGB, ICCBased with one, three or four components, and Indexed over
//!   one of those. CMYK images are written as four-component JPEGs without an Adobe marker, so
//!   no reader takes their samples for inverted ones.
//!
//! A `DeviceRGB` image whose every pixel is grey (a black-and-white page scanned in colour) is
//! written as a `DeviceGray` JPEG: the same picture without chroma.
//!
//! Bilevel images (1-bit gray, not already CCITT or JBIG2) keep their resolution, since fewer
//! pixels would break their strokes, and are written as CCITT Group 4 (`pdf::ccitt`) when
//! that is smaller.
//!
//! Left as they are: CMYK JPEGs (Adobe's inverted samples and those of other writers cannot be
//! told apart without the `/Decode` a PDF may lack), colour JPEGs coded one scan per component
//! (sequential, non-interleaved: zune-jpeg 0.5 decodes them wrong), other colour spaces (Separation, DeviceN,
//! Lab), JBIG2 (bilevel,
//! so it would keep its resolution, and no coding of bilevel images is smaller), image masks, images with
//! a `/Decode` array, a colour-key `/Mask`, or an `/SMask` with `/Matte` (which must keep the
//! image's size). An image with an `/SMask` keeps it unchanged: a soft mask may have a size of
//! its own. Decoding is bounded: an image whose pixels would take more than `max_inflate` bytes
//! fails the run with [`PdfError::InflatesTooMuch`], as a stream that inflates past it does.

use std::collections::HashMap;

use fast_image_resize::images::Image;
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use lopdf::content::Content;
use lopdf::{Dictionary, Document, Object, ObjectId, Stream};
use rayon::prelude::*;

use super::{OptimizeReport, PdfError, Settings};

/// An image is downsampled only when its resolution is at least this many times the target.
pub const WORTH_IT: f64 = 1.1;

/// How deep forms drawn inside forms are followed.
const MAX_FORM_DEPTH: usize = 8;

/// Shrinks the PDF at `input` into `output`, as the module docs say; the report is
/// [`super::optimize()`]'s.
///
/// # Errors
///
/// As [`super::optimize()`]; [`PdfError::InflatesTooMuch`] also for an image whose pixels would
/// take more than `max_inflate` bytes.
#[tracing::instrument(name = "pdf_shrink", skip_all)]
pub fn shrink(
    input: &std::path::Path,
    output: &std::path::Path,
    settings: &Settings,
) -> Result<OptimizeReport, PdfError> {
    let settings = *settings;
    super::rewrite_file(input, output, settings.max_inflate, "shrank", move |document| {
        shrink_images(document, &settings)
    })
}

/// Replaces every image of `document` drawn above the target resolution by a smaller JPEG.
pub(crate) fn shrink_images(document: &mut Document, settings: &Settings) -> Result<(), PdfError> {
    let drawn = drawn_sizes(document, settings.max_inflate)?;
    let mut plans = HashMap::new();
    for (&id, &size) in &drawn {
        if let Some(plan) = plan(document, id, size, settings)? {
            plans.insert(id, plan);
        }
    }
    let quality = settings.shrink.jpeg_quality.clamp(1, 100);
    let max_inflate = settings.max_inflate;
    let replaced: usize = document
        .objects
        .par_iter_mut()
        .filter_map(|(id, object)| Some((plans.get(id)?, object.as_stream_mut().ok()?)))
        .map(|(plan, stream)| guarded_shrink_image(stream, plan, quality, max_inflate).map(usize::from))
        .try_reduce(|| 0, |a, b| Ok(a + b))?;
    tracing::debug!(images = drawn.len(), planned = plans.len(), replaced, "shrank the images of a PDF");
    Ok(())
}

/// The size an image is drawn at, in points: (width, height).
type Drawn = (f64, f64);

/// The largest size each image XObject is drawn at, over all pages.
fn drawn_sizes(document: &Document, max_inflate: usize) -> Result<HashMap<ObjectId, Drawn>, PdfError> {
    let mut drawn: HashMap<ObjectId, Drawn> = HashMap::new();
    for page in document.page_iter() {
        let page_size = media_box(document, page);
        let resources = page_resources(document, page);
        let content = match document.get_page_content_with_limit(page, max_inflate) {
            Ok(content) => content,
            Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit })) => {
                return Err(PdfError::InflatesTooMuch { limit });
            }
            Err(_) => Vec::new(),
        };
        let mut walk = Walk { document, max_inflate, drawn: &mut drawn, page_size };
        walk.content(&content, &resources, IDENTITY, 0)?;
    }
    Ok(drawn)
}

type Matrix = [f64; 6];
const IDENTITY: Matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0];

/// `m` then `n`: the matrix of `cm n` applied under a current matrix `m` is `n × m`.
fn multiply(n: Matrix, m: Matrix) -> Matrix {
    [
        n[0] * m[0] + n[1] * m[2],
        n[0] * m[1] + n[1] * m[3],
        n[2] * m[0] + n[3] * m[2],
        n[2] * m[1] + n[3] * m[3],
        n[4] * m[0] + n[5] * m[2] + m[4],
        n[4] * m[1] + n[5] * m[3] + m[5],
    ]
}

struct Walk<'a, 'd> {
    document: &'d Document,
    max_inflate: usize,
    drawn: &'a mut HashMap<ObjectId, Drawn>,
    page_size: Drawn,
}

impl Walk<'_, '_> {
    fn record(&mut self, id: ObjectId, size: Drawn) {
        let entry = self.drawn.entry(id).or_insert((0.0, 0.0));
        *entry = (entry.0.max(size.0), entry.1.max(size.1));
    }

    /// Follows one content stream under `resources` with `ctm` as its starting matrix.
    fn content(
        &mut self,
        content: &[u8],
        resources: &[&Dictionary],
        ctm: Matrix,
        depth: usize,
    ) -> Result<(), PdfError> {
        let xobjects = xobjects(self.document, resources);
        let mut drawn_here = std::collections::HashSet::new();
        let operations = Content::decode(content).map(|c| c.operations).unwrap_or_default();
        let mut stack = Vec::new();
        let mut current = ctm;
        for operation in &operations {
            match operation.operator.as_str() {
                "q" => stack.push(current),
                "Q" => current = stack.pop().unwrap_or(ctm),
                "cm" => {
                    let numbers: Vec<f64> = operation.operands.iter().filter_map(number).collect();
                    if let Ok(n) = <[f64; 6]>::try_from(numbers) {
                        current = multiply(n, current);
                    }
                }
                "Do" => {
                    let Some(Ok(name)) = operation.operands.first().map(Object::as_name) else { continue };
                    let Some(&(id, kind)) = xobjects.get(name) else { continue };
                    match kind {
                        XObject::Image => {
                            let size = (current[0].hypot(current[1]), current[2].hypot(current[3]));
                            // A drawing smaller than a point is a trick, not a picture: it says
                            // nothing about the resolution the image needs.
                            if size.0 >= 1.0 && size.1 >= 1.0 {
                                self.record(id, size);
                                drawn_here.insert(id);
                            }
                        }
                        XObject::Form if depth < MAX_FORM_DEPTH => self.form(id, current, resources, depth)?,
                        XObject::Form => {}
                    }
                }
                _ => {}
            }
        }
        // Named but not seen drawn (unparsable content, or a trick): as if it filled the page.
        for &(id, kind) in xobjects.values() {
            if kind == XObject::Image && !drawn_here.contains(&id) && !self.drawn.contains_key(&id) {
                self.record(id, self.page_size);
            }
        }
        Ok(())
    }

    fn form(&mut self, id: ObjectId, ctm: Matrix, outer: &[&Dictionary], depth: usize) -> Result<(), PdfError> {
        let Ok(form) = self.document.get_object(id).and_then(Object::as_stream) else { return Ok(()) };
        let matrix = form
            .dict
            .get(b"Matrix")
            .and_then(Object::as_array)
            .ok()
            .and_then(|m| <[f64; 6]>::try_from(m.iter().filter_map(number).collect::<Vec<_>>()).ok())
            .unwrap_or(IDENTITY);
        let content = match form.decompressed_content_with_limit(self.max_inflate) {
            Ok(content) => content,
            Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit })) => {
                return Err(PdfError::InflatesTooMuch { limit });
            }
            Err(_) if form.filters().is_err() => form.content.clone(),
            Err(_) => return Ok(()),
        };
        // A form without resources of its own uses its page's (an old, still common habit).
        let resources = match dictionary(self.document, form.dict.get(b"Resources").ok()) {
            Some(own) => vec![own],
            None => outer.to_vec(),
        };
        self.content(&content, &resources, multiply(matrix, ctm), depth + 1)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum XObject {
    Image,
    Form,
}

fn number(object: &Object) -> Option<f64> {
    match object {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)),
        _ => None,
    }
}

fn dictionary<'d>(document: &'d Document, object: Option<&'d Object>) -> Option<&'d Dictionary> {
    match object? {
        Object::Dictionary(dict) => Some(dict),
        Object::Reference(id) => document.get_dictionary(*id).ok(),
        _ => None,
    }
}

/// The page's resource dictionaries, nearest first.
fn page_resources(document: &Document, page: ObjectId) -> Vec<&Dictionary> {
    let Ok((direct, ids)) = document.get_page_resources(page) else { return Vec::new() };
    direct.into_iter().chain(ids.into_iter().filter_map(|id| document.get_dictionary(id).ok())).collect()
}

/// The image and form XObjects `resources` name, each by its first name.
fn xobjects<'d>(document: &'d Document, resources: &[&'d Dictionary]) -> HashMap<&'d [u8], (ObjectId, XObject)> {
    let mut found = HashMap::new();
    for resources in resources {
        let Some(xobjects) = dictionary(document, resources.get(b"XObject").ok()) else { continue };
        for (name, value) in xobjects.iter() {
            let Ok(id) = value.as_reference() else { continue };
            let Ok(stream) = document.get_object(id).and_then(Object::as_stream) else { continue };
            let kind = match stream.dict.get(b"Subtype").and_then(Object::as_name) {
                Ok(b"Image") => XObject::Image,
                Ok(b"Form") => XObject::Form,
                _ => continue,
            };
            found.entry(name.as_slice()).or_insert((id, kind));
        }
    }
    found
}

/// The page's MediaBox size in points (inherited from the page tree), or US Letter.
fn media_box(document: &Document, page: ObjectId) -> Drawn {
    let mut node = document.get_dictionary(page).ok();
    for _ in 0..32 {
        let Some(dict) = node else { break };
        if let Ok(Object::Array(corners)) = dict.get(b"MediaBox").and_then(|b| document.dereference(b)).map(|(_, b)| b)
        {
            let n: Vec<f64> = corners.iter().filter_map(number).collect();
            if let [x0, y0, x1, y1] = n[..] {
                return ((x1 - x0).abs().max(1.0), (y1 - y0).abs().max(1.0));
            }
        }
        node = dict.get(b"Parent").and_then(Object::as_reference).and_then(|id| document.get_dictionary(id)).ok();
    }
    (612.0, 792.0)
}

/// How one image is to be read and rewritten.
#[derive(Debug)]
struct Plan {
    width: u32,
    height: u32,
    target_width: u32,
    target_height: u32,
    source: Source,
    /// The colour space of the JPEG: the image's own, or an indexed image's base.
    colour_space: Object,
    /// Components of the JPEG: 1, 3 or 4 (CMYK).
    components: usize,
}

#[derive(Debug)]
enum Source {
    /// The stream is a JPEG of `components` components.
    Jpeg,
    /// lopdf decodes the stream to samples of `bits` bits, `components` per pixel, or to
    /// indices into `palette` (entries of `components` bytes).
    Samples { bits: u8, palette: Option<Vec<u8>> },
    /// 1-bit gray samples lopdf decodes, rewritten at the same size as CCITT Group 4.
    Bilevel,
    /// The stream is JPEG 2000 (`JPXDecode`), decoded with `hayro-jpeg2000`.
    Jpx,
}

/// How to shrink image `id`, drawn at `drawn` points at most; `None` to leave it alone.
fn plan(document: &Document, id: ObjectId, drawn: Drawn, settings: &Settings) -> Result<Option<Plan>, PdfError> {
    let Ok(stream) = document.get_object(id).and_then(Object::as_stream) else { return Ok(None) };
    let dict = &stream.dict;
    let int = |key: &[u8]| dict.get(key).and_then(Object::as_i64).ok();
    let (Some(width), Some(height)) = (int(b"Width"), int(b"Height")) else { return Ok(None) };
    let (Ok(width), Ok(height)) = (u32::try_from(width), u32::try_from(height)) else { return Ok(None) };
    if width == 0 || height == 0 {
        return Ok(None);
    }
    let flag = |key: &[u8]| dict.get(key).and_then(Object::as_bool).unwrap_or(false);
    if flag(b"ImageMask") || dict.has(b"Decode") || matches!(dict.get(b"Mask"), Ok(Object::Array(_))) {
        return Ok(None);
    }
    if let Some(smask) = dict.get(b"SMask").ok().and_then(|s| document.dereference(s).ok()).map(|(_, s)| s)
        && smask.as_stream().is_ok_and(|s| s.dict.has(b"Matte"))
    {
        return Ok(None);
    }

    let filters = stream.filters().unwrap_or_default();
    let encoded = |names: &[&[u8]]| filters.iter().any(|f| names.contains(f));
    if int(b"BitsPerComponent") == Some(1) && !encoded(&[b"DCTDecode", b"JPXDecode", b"JBIG2Decode", b"CCITTFaxDecode"])
    {
        // A bilevel scan keeps its resolution (fewer pixels would break its strokes), and is
        // written as Group 4 instead, when its colour space is a plain gray.
        let gray = colour_space(document, dict, settings.max_inflate)?
            .is_some_and(|(_, components, palette)| components == 1 && palette.is_none());
        if gray {
            let (target_width, target_height) = (width, height);
            let (source, colour_space) = (Source::Bilevel, Object::Null);
            return Ok(Some(Plan { width, height, target_width, target_height, source, colour_space, components: 1 }));
        }
    }

    // Resolution on the page, and the size that brings it to the target.
    let target = f64::from(settings.shrink.dpi.max(1));
    let dpi = (f64::from(width) * 72.0 / drawn.0, f64::from(height) * 72.0 / drawn.1);
    let scale = (target / dpi.0).max(target / dpi.1);
    if scale * WORTH_IT > 1.0 {
        return Ok(None);
    }
    let target_width = ((f64::from(width) * scale).round() as u32).max(1);
    let target_height = ((f64::from(height) * scale).round() as u32).max(1);
    if target_width > u32::from(u16::MAX) || target_height > u32::from(u16::MAX) {
        return Ok(None);
    }

    if filters == [b"JPXDecode".as_slice()] {
        let Some(plan) = jpx_plan(stream, dict, (width, height, target_width, target_height)) else { return Ok(None) };
        return within_bounds(plan, settings.max_inflate).map(Some);
    }
    let Some((colour_space, components, palette)) = colour_space(document, dict, settings.max_inflate)? else {
        return Ok(None);
    };
    let bits = int(b"BitsPerComponent").unwrap_or(8);
    let source = if filters == [b"DCTDecode".as_slice()] {
        if palette.is_some() || components == 4 {
            return Ok(None);
        }
        Source::Jpeg
    } else if encoded(&[b"DCTDecode", b"JPXDecode", b"JBIG2Decode", b"CCITTFaxDecode"]) {
        return Ok(None);
    } else {
        let Ok(bits @ (1 | 2 | 4 | 8 | 16)) = u8::try_from(bits) else { return Ok(None) };
        // Bilevel colour (1 bit per component): JPEG would blur it and make it bigger.
        if bits == 1 && palette.is_none() {
            return Ok(None);
        }
        if palette.is_some() && bits == 16 {
            return Ok(None);
        }
        Source::Samples { bits, palette }
    };
    let plan = Plan { width, height, target_width, target_height, source, colour_space, components };
    within_bounds(plan, settings.max_inflate).map(Some)
}

/// `plan`, when its pixels (8 bits each) fit `max_inflate`: bounded before anything is decoded.
fn within_bounds(plan: Plan, max_inflate: usize) -> Result<Plan, PdfError> {
    let pixels = u64::from(plan.width) * u64::from(plan.height) * plan.components as u64;
    if pixels > max_inflate as u64 {
        return Err(PdfError::InflatesTooMuch { limit: max_inflate });
    }
    Ok(plan)
}

/// How to shrink a JPEG 2000 image of `(width, height)` to `(target_width, target_height)`:
/// gray or RGB, by the image's `/ColorSpace` or else the codestream's own, without an alpha
/// channel (`/SMaskInData`); `None` to leave it alone.
fn jpx_plan(stream: &Stream, dict: &Dictionary, sizes: (u32, u32, u32, u32)) -> Option<Plan> {
    let (width, height, target_width, target_height) = sizes;
    if dict.get(b"SMaskInData").and_then(Object::as_i64).unwrap_or(0) != 0 {
        return None;
    }
    let image = hayro_jpeg2000::Image::new(&stream.content, &hayro_jpeg2000::DecodeSettings::default()).ok()?;
    if image.has_alpha() || (image.width(), image.height()) != (width, height) {
        return None;
    }
    let components = usize::from(image.color_space().num_channels());
    let own = match (image.color_space(), components) {
        (hayro_jpeg2000::ColorSpace::Gray, _) | (hayro_jpeg2000::ColorSpace::Icc { .. }, 1) => "DeviceGray",
        (hayro_jpeg2000::ColorSpace::RGB, _) | (hayro_jpeg2000::ColorSpace::Icc { .. }, 3) => "DeviceRGB",
        _ => return None,
    };
    let colour_space = match dict.get(b"ColorSpace") {
        // A colour space the image names must be a plain gray or RGB one of as many components.
        Ok(named @ Object::Name(name)) => {
            let fits = matches!((name.as_slice(), components), (b"DeviceGray", 1) | (b"DeviceRGB", 3));
            if !fits {
                return None;
            }
            named.clone()
        }
        Ok(_) => return None,
        Err(_) => Object::Name(own.as_bytes().to_vec()),
    };
    let source = Source::Jpx;
    Some(Plan { width, height, target_width, target_height, source, colour_space, components })
}

/// A colour space `shrink` writes JPEGs in: the space, its components (1, 3 or 4), and an
/// indexed image's palette (entries of that many bytes).
type Colours = (Object, usize, Option<Vec<u8>>);

/// The colour space the JPEG gets, its components (1, 3 or 4), and an indexed image's palette
/// (expanded to that many bytes per entry); `None` for one `shrink` leaves alone.
fn colour_space(document: &Document, dict: &Dictionary, max_inflate: usize) -> Result<Option<Colours>, PdfError> {
    let Ok(original) = dict.get(b"ColorSpace") else { return Ok(None) };
    let Ok((_, resolved)) = document.dereference(original) else { return Ok(None) };
    if let Some(components) = direct_components(document, resolved) {
        return Ok(Some((original.clone(), components, None)));
    }
    let Ok(array) = resolved.as_array() else { return Ok(None) };
    if array.first().and_then(|n| n.as_name().ok()) != Some(b"Indexed".as_slice()) || array.len() != 4 {
        return Ok(None);
    }
    let base = &array[1];
    let Some(Ok((_, base_resolved))) = Some(document.dereference(base)) else { return Ok(None) };
    let Some(components) = direct_components(document, base_resolved) else { return Ok(None) };
    let lookup = match document.dereference(&array[3]) {
        Ok((_, Object::String(bytes, _))) => bytes.clone(),
        Ok((_, Object::Stream(stream))) => match stream.decompressed_content_with_limit(max_inflate) {
            Ok(bytes) => bytes,
            Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit })) => {
                return Err(PdfError::InflatesTooMuch { limit });
            }
            Err(_) => return Ok(None),
        },
        _ => return Ok(None),
    };
    let mut palette = lookup;
    // Every index a sample can hold has an entry: past the table's end, black.
    palette.resize(256 * components, 0);
    Ok(Some((base.clone(), components, Some(palette))))
}

/// Components of a gray, RGB or CMYK colour space; `None` for any other.
fn direct_components(document: &Document, space: &Object) -> Option<usize> {
    match space {
        Object::Name(name) => match name.as_slice() {
            b"DeviceGray" | b"G" | b"CalGray" => Some(1),
            b"DeviceRGB" | b"RGB" | b"CalRGB" => Some(3),
            b"DeviceCMYK" | b"CMYK" => Some(4),
            _ => None,
        },
        Object::Array(items) => match items.first()?.as_name().ok()? {
            b"CalGray" => Some(1),
            b"CalRGB" => Some(3),
            b"ICCBased" => {
                let (_, profile) = document.dereference(items.get(1)?).ok()?;
                match profile.as_stream().ok()?.dict.get(b"N").and_then(Object::as_i64).ok()? {
                    n @ (1 | 3 | 4) => usize::try_from(n).ok(),
                    _ => None,
                }
            }
            _ => None,
        },
        _ => None,
    }
}

/// [`shrink_image`], with a panic in a decoder or encoder leaving the image as it is: an image
/// that cannot be read is left untouched, not a reason to fail the whole run. The stream is
/// only changed once its new version is complete, so a panic leaves it whole.
fn guarded_shrink_image(stream: &mut Stream, plan: &Plan, quality: u8, max_inflate: usize) -> Result<bool, PdfError> {
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| shrink_image(stream, plan, quality, max_inflate)));
    outcome.unwrap_or_else(|_| {
        tracing::debug!(width = plan.width, height = plan.height, "an image's codec panicked; image left as it is");
        Ok(false)
    })
}

/// Rewrites one image as its plan says, when that makes it smaller; whether it did.
fn shrink_image(stream: &mut Stream, plan: &Plan, quality: u8, max_inflate: usize) -> Result<bool, PdfError> {
    if let Source::Bilevel = plan.source {
        return bilevel_to_g4(stream, plan, max_inflate);
    }
    let Some(pixels) = decode(stream, plan, max_inflate)? else { return Ok(false) };
    let grey = as_grey(&pixels, plan);
    let (pixels, plan) = match grey {
        Some((pixels, ref grey_plan)) => (pixels, grey_plan),
        None => (pixels, plan),
    };
    let Some(resized) = resize(pixels, plan) else { return Ok(false) };

    let Some(jpeg) = encode(&resized, plan, quality) else { return Ok(false) };
    if jpeg.len() >= stream.content.len() {
        return Ok(false);
    }
    let dict = &mut stream.dict;
    dict.set("Width", i64::from(plan.target_width));
    dict.set("Height", i64::from(plan.target_height));
    dict.set("BitsPerComponent", 8);
    dict.set("ColorSpace", plan.colour_space.clone());
    dict.set("Filter", "DCTDecode");
    dict.remove(b"DecodeParms");
    stream.set_content(jpeg);
    Ok(true)
}

/// How far apart an RGB pixel's samples may be for it to count as grey: below what a reader
/// tells apart, above the rounding of a colour JPEG that holds a grey picture.
const GREY_TOLERANCE: u8 = 4;

/// A `DeviceRGB` image whose every pixel is grey (its samples within [`GREY_TOLERANCE`]) as
/// one-component pixels, with the plan to write them as a `DeviceGray` JPEG; `None` for any
/// other image. Scanners and phones often store black-and-white pages in colour, and a grey
/// JPEG carries no chroma and gets Huffman tables fitted to it (see [`encode`]). Calibrated and
/// ICC spaces keep their colours: their grey need not be `DeviceGray`'s.
fn as_grey(pixels: &[u8], plan: &Plan) -> Option<(Vec<u8>, Plan)> {
    let device_rgb = matches!(&plan.colour_space, Object::Name(name) if name == b"DeviceRGB" || name == b"RGB");
    if plan.components != 3 || !device_rgb {
        return None;
    }
    let is_grey = |p: &[u8]| {
        let (low, high) = (p[0].min(p[1]).min(p[2]), p[0].max(p[1]).max(p[2]));
        high - low <= GREY_TOLERANCE
    };
    if !pixels.chunks_exact(3).all(is_grey) {
        return None;
    }
    let grey =
        pixels.chunks_exact(3).map(|p| ((u16::from(p[0]) + u16::from(p[1]) + u16::from(p[2]) + 1) / 3) as u8).collect();
    let plan = Plan {
        source: Source::Samples { bits: 8, palette: None },
        colour_space: Object::Name(b"DeviceGray".to_vec()),
        components: 1,
        ..*plan
    };
    Some((grey, plan))
}

/// Rewrites a bilevel image as CCITT Group 4, when that is smaller; whether it did.
fn bilevel_to_g4(stream: &mut Stream, plan: &Plan, max_inflate: usize) -> Result<bool, PdfError> {
    let packed = match stream.decompressed_content_with_limit(max_inflate) {
        Ok(packed) => packed,
        Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit })) => {
            return Err(PdfError::InflatesTooMuch { limit });
        }
        Err(_) => return Ok(false),
    };
    // In a 1-bit gray image, 0 is black.
    let Some(g4) = super::ccitt::encode_g4(&packed, plan.width, plan.height, false) else { return Ok(false) };
    if g4.len() >= stream.content.len() {
        return Ok(false);
    }
    stream.dict.set("Filter", "CCITTFaxDecode");
    stream.dict.set("DecodeParms", super::ccitt::g4_parameters(plan.width, plan.height));
    stream.set_content(g4);
    Ok(true)
}

/// The image's pixels, 8 bits per component, `plan.components` per pixel; `None` when it
/// cannot be read as planned.
fn decode(stream: &Stream, plan: &Plan, max_inflate: usize) -> Result<Option<Vec<u8>>, PdfError> {
    let (width, height) = (plan.width as usize, plan.height as usize);
    match &plan.source {
        Source::Jpeg => Ok(decode_jpeg(&stream.content, plan)),
        Source::Jpx => Ok(decode_jpx(&stream.content, plan)),
        Source::Bilevel => Ok(None),
        Source::Samples { bits, palette } => {
            let samples = match stream.decompressed_content_with_limit(max_inflate) {
                Ok(samples) => samples,
                Err(lopdf::Error::Decompress(lopdf::DecompressError::MemoryLimitExceeded { limit })) => {
                    return Err(PdfError::InflatesTooMuch { limit });
                }
                Err(_) => return Ok(None),
            };
            let per_pixel = if palette.is_some() { 1 } else { plan.components };
            let row_bytes = (width * per_pixel * usize::from(*bits)).div_ceil(8);
            if samples.len() < row_bytes * height {
                return Ok(None);
            }
            let mut pixels = Vec::with_capacity(width * height * plan.components);
            for row in samples.chunks_exact(row_bytes).take(height) {
                let values = (0..width * per_pixel).map(|i| sample(row, i, *bits));
                match palette {
                    Some(palette) => {
                        for index in values {
                            let at = usize::from(index) * plan.components;
                            pixels.extend_from_slice(&palette[at..at + plan.components]);
                        }
                    }
                    None => pixels.extend(values.map(|v| scale_to_byte(v, *bits))),
                }
            }
            Ok(Some(pixels))
        }
    }
}

/// The `index`th sample of `row`, of `bits` bits (16-bit samples: their high byte).
fn sample(row: &[u8], index: usize, bits: u8) -> u8 {
    match bits {
        8 => row[index],
        16 => row[index * 2],
        _ => {
            let bit = index * usize::from(bits);
            let byte = row[bit / 8];
            let shift = 8 - usize::from(bits) - bit % 8;
            (byte >> shift) & ((1u8 << bits) - 1)
        }
    }
}

fn scale_to_byte(value: u8, bits: u8) -> u8 {
    match bits {
        8 | 16 => value,
        _ => {
            let max = (1u16 << bits) - 1;
            u8::try_from(u16::from(value) * 255 / max).unwrap_or(u8::MAX)
        }
    }
}

/// A source JPEG's pixels; `None` (the image stays as it is) when zune-jpeg would misread it
/// (see `encode`), since a shrink would then re-encode garbage.
fn decode_jpeg(data: &[u8], plan: &Plan) -> Option<Vec<u8>> {
    if super::images::jpeg_markers(data).has_a_scan_per_component() {
        return None;
    }
    decode_jpeg_as(data, plan.width, plan.height, plan.components)
}

/// A JPEG of `width` × `height` pixels of `components` (1, 3 or 4) components, decoded; `None`
/// when it is not one.
fn decode_jpeg_as(data: &[u8], width: u32, height: u32, components: usize) -> Option<Vec<u8>> {
    use zune_jpeg::zune_core::bytestream::ZCursor;
    use zune_jpeg::zune_core::colorspace::ColorSpace;
    use zune_jpeg::zune_core::options::DecoderOptions;
    let out = match components {
        1 => ColorSpace::Luma,
        3 => ColorSpace::RGB,
        _ => ColorSpace::CMYK,
    };
    let options = DecoderOptions::default()
        .jpeg_set_out_colorspace(out)
        .set_max_width(width as usize)
        .set_max_height(height as usize);
    let mut decoder = zune_jpeg::JpegDecoder::new_with_options(ZCursor::new(data), options);
    decoder.decode_headers().ok()?;
    let info = decoder.info()?;
    let found = decoder.input_colorspace()?.num_components();
    if u32::from(info.width) != width || u32::from(info.height) != height || found != components {
        return None;
    }
    let pixels = decoder.decode().ok()?;
    (pixels.len() == width as usize * height as usize * components).then_some(pixels)
}

fn decode_jpx(data: &[u8], plan: &Plan) -> Option<Vec<u8>> {
    let image = hayro_jpeg2000::Image::new(data, &hayro_jpeg2000::DecodeSettings::default()).ok()?;
    if (image.width(), image.height()) != (plan.width, plan.height) || image.has_alpha() {
        return None;
    }
    let pixels = image.decode().ok()?;
    (pixels.len() == plan.width as usize * plan.height as usize * plan.components).then_some(pixels)
}

fn resize(pixels: Vec<u8>, plan: &Plan) -> Option<Vec<u8>> {
    let pixel_type = match plan.components {
        1 => PixelType::U8,
        3 => PixelType::U8x3,
        _ => PixelType::U8x4,
    };
    let source = Image::from_vec_u8(plan.width, plan.height, pixels, pixel_type).ok()?;
    let mut target = Image::new(plan.target_width, plan.target_height, pixel_type);
    // The fourth channel is black (CMYK), not alpha: no channel is weighted by it.
    let options = ResizeOptions::new().resize_alg(ResizeAlg::Convolution(FilterType::Bilinear)).use_alpha(false);
    Resizer::new().resize(&source, &mut target, &options).ok()?;
    Some(target.into_vec())
}

/// The resized `pixels` as a JPEG at `quality`: with Huffman tables fitted to the image (5–12 %
/// smaller on the corpus's scans, for one more pass over it) where decoders read them.
///
/// With fitted tables jpeg-encoder writes one scan per component (a non-interleaved baseline
/// JPEG: valid, and libjpeg reads it right), and zune-jpeg 0.5 (the decoder `shrink` itself
/// reads JPEGs with, and others built on it) misreads every such file of three components (all
/// 70 pages of the corpus's colour scans). So a colour image is written with the standard
/// tables (one interleaved scan) at once; a grey one, whose single scan is the same either way,
/// with fitted tables, read back, and written again with the standard ones should a decoder
/// still misread it.
fn encode(pixels: &[u8], plan: &Plan, quality: u8) -> Option<Vec<u8>> {
    match plan.components {
        3 => encode_with(pixels, plan, quality, false),
        // zune-jpeg 0.5 cannot read four-component JPEGs at all (it panics in its IDCT), so CMYK
        // is not read back; Ghostscript and Poppler read these (tests/it/operations_lossy.rs).
        4 => encode_with(pixels, plan, quality, true),
        _ => {
            let fitted = encode_with(pixels, plan, quality, true)?;
            if reads_back(&fitted, pixels, plan) {
                return Some(fitted);
            }
            tracing::debug!(
                width = plan.target_width,
                height = plan.target_height,
                "fitted Huffman tables misread; standard ones"
            );
            encode_with(pixels, plan, quality, false)
        }
    }
}

fn encode_with(pixels: &[u8], plan: &Plan, quality: u8, fitted_tables: bool) -> Option<Vec<u8>> {
    let mut jpeg = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut jpeg, quality);
    encoder.set_optimized_huffman_tables(fitted_tables);
    encoder.set_chroma_subsampling_method(jpeg_encoder::ChromaSubsamplingMethod::Average);
    let (width, height) = (u16::try_from(plan.target_width).ok()?, u16::try_from(plan.target_height).ok()?);
    match plan.components {
        1 => encoder.encode(pixels, width, height, jpeg_encoder::ColorType::Luma).ok()?,
        3 => encoder.encode(pixels, width, height, jpeg_encoder::ColorType::Rgb).ok()?,
        _ => {
            // jpeg-encoder writes CMYK the Adobe way: samples inverted, and an Adobe marker
            // saying so. Inverted twice, the samples are stored as they are; the marker goes.
            let inverted: Vec<u8> = pixels.iter().map(|v| 255 - v).collect();
            encoder.encode(&inverted, width, height, jpeg_encoder::ColorType::Cmyk).ok()?;
            return without_adobe_marker(&jpeg);
        }
    }
    Some(jpeg)
}

/// `jpeg` without its Adobe (APP14) segment; `None` when its segments before the frame cannot
/// be walked.
fn without_adobe_marker(jpeg: &[u8]) -> Option<Vec<u8>> {
    const APP14: u8 = 0xEE;
    let mut out = Vec::with_capacity(jpeg.len());
    out.extend_from_slice(jpeg.get(..2).filter(|soi| *soi == [0xFF, 0xD8])?);
    let mut at = 2;
    // Marker segments up to the first frame or table one: each is FF, a marker, a 2-byte length.
    while let [0xFF, marker, high, low, ..] = *jpeg.get(at..)? {
        if !(0xE0..=0xEF).contains(&marker) {
            break;
        }
        let end = at + 2 + usize::from(u16::from_be_bytes([high, low]));
        let segment = jpeg.get(at..end)?;
        if marker != APP14 || !segment.get(4..).is_some_and(|data| data.starts_with(b"Adobe")) {
            out.extend_from_slice(segment);
        }
        at = end;
    }
    out.extend_from_slice(&jpeg[at..]);
    Some(out)
}

/// Whether `jpeg` decodes to about `pixels` (a mean error of at most [`READ_BACK_ERROR`] per
/// sample: JPEG at any usable quality stays far below it, a misread table far above).
fn reads_back(jpeg: &[u8], pixels: &[u8], plan: &Plan) -> bool {
    let Some(decoded) = decode_jpeg_as(jpeg, plan.target_width, plan.target_height, plan.components) else {
        return false;
    };
    let error: u64 = decoded.iter().zip(pixels).map(|(a, b)| u64::from(a.abs_diff(*b))).sum();
    decoded.len() == pixels.len() && error <= READ_BACK_ERROR * pixels.len() as u64
}

/// The mean error per sample above which a JPEG counts as misread.
const READ_BACK_ERROR: u64 = 12;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use lopdf::dictionary;
    use std::path::PathBuf;

    /// A smooth but not flat picture (gradients and waves), `components` per pixel: JPEG
    /// compresses it as it does a photo, neither to nothing nor not at all.
    pub(crate) fn picture(width: u32, height: u32, components: usize) -> Vec<u8> {
        let mut pixels = Vec::with_capacity(width as usize * height as usize * components);
        for y in 0..height {
            for x in 0..width {
                for c in 0..components {
                    let wave = ((f64::from(x) / 7.0 + c as f64).sin() * (f64::from(y) / 11.0).cos() * 60.0) as i32;
                    let value = (x * 255 / width) as i32 / 2 + (y * 255 / height) as i32 / 3 + wave + 40;
                    pixels.push(value.clamp(0, 255) as u8);
                }
            }
        }
        pixels
    }

    pub(crate) fn jpeg(pixels: &[u8], width: u32, height: u32, components: usize) -> Vec<u8> {
        let colour = if components == 1 { jpeg_encoder::ColorType::Luma } else { jpeg_encoder::ColorType::Rgb };
        let mut out = Vec::new();
        jpeg_encoder::Encoder::new(&mut out, 92).encode(pixels, width as u16, height as u16, colour).unwrap();
        out
    }

    /// A one-page PDF of `page` points whose content draws `image` over the page, with a line
    /// of text above it.
    pub(crate) fn page_with_image(image: Stream, page: (f64, f64)) -> Document {
        let mut document = Document::with_version("1.7");
        let pages_id = document.new_object_id();
        let font = document.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        });
        let image_id = document.add_object(image);
        let content =
            format!("q {} 0 0 {} 0 0 cm /Im0 Do Q BT /F1 12 Tf 20 20 Td (Scanned page one) Tj ET", page.0, page.1);
        let content_id = document.add_object(Stream::new(Dictionary::new(), content.into_bytes()));
        let page_id = document.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "MediaBox" => vec![0.into(), 0.into(), Object::Real(page.0 as f32), Object::Real(page.1 as f32)],
            "Resources" => dictionary! {
                "XObject" => dictionary! { "Im0" => image_id },
                "Font" => dictionary! { "F1" => font },
            },
            "Contents" => content_id,
        });
        document.objects.insert(
            pages_id,
            Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1 }),
        );
        let catalog = document.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        document.trailer.set("Root", catalog);
        document
    }

    pub(crate) fn image_stream(width: u32, height: u32, space: &str, bits: i64, filter: &str, data: Vec<u8>) -> Stream {
        let dict = dictionary! {
            "Type" => "XObject", "Subtype" => "Image", "Width" => i64::from(width), "Height" => i64::from(height),
            "ColorSpace" => space, "BitsPerComponent" => bits, "Filter" => filter,
        };
        Stream::new(dict, data).with_compression(false)
    }

    fn deflated(data: &[u8]) -> Vec<u8> {
        crate::pdf::optimize::deflate_best(data)
    }

    struct Shrunk {
        _dir: tempfile::TempDir,
        input: PathBuf,
        output: PathBuf,
        result: Result<OptimizeReport, PdfError>,
    }

    fn shrink_document(mut document: Document, max_inflate: usize) -> Shrunk {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.pdf");
        let output = dir.path().join("out.pdf");
        document.save(&input).unwrap();
        let settings = Settings::with_max_inflate(max_inflate);
        let result = shrink(&input, &output, &settings);
        Shrunk { _dir: dir, input, output, result }
    }

    /// The images of the first page of the PDF at `path`: their dictionaries and data.
    fn images_of(path: &std::path::Path) -> Vec<Stream> {
        let document = Document::load(path).unwrap();
        let page = document.page_iter().next().unwrap();
        let resources = page_resources(&document, page);
        xobjects(&document, &resources)
            .values()
            .filter(|(_, kind)| *kind == XObject::Image)
            .map(|(id, _)| document.get_object(*id).unwrap().as_stream().unwrap().clone())
            .collect()
    }

    fn int(stream: &Stream, key: &[u8]) -> i64 {
        stream.dict.get(key).unwrap().as_i64().unwrap()
    }

    fn text_of(path: &std::path::Path) -> String {
        let document = Document::load(path).unwrap();
        document.extract_text(&[1]).unwrap()
    }

    /// 1200 × 1500 pixels drawn over 288 × 360 points: 300 dpi.
    const SCAN: (u32, u32) = (1200, 1500);
    const SCAN_PAGE: (f64, f64) = (288.0, 360.0);

    /// The image of the scan page drawing `image` after `shrink`, which must have rewritten it as
    /// a JPEG of 600 × 750 pixels (150 dpi).
    fn shrunk_scan_to_150_dpi_jpeg(image: Stream) -> Stream {
        let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
        let report = shrunk.result.unwrap();
        assert!(!report.kept_original(), "{report:?}");
        let mut images = images_of(&shrunk.output);
        assert_eq!(images.len(), 1);
        assert_eq!((int(&images[0], b"Width"), int(&images[0], b"Height")), (600, 750));
        assert_eq!(images[0].dict.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
        images.remove(0)
    }

    #[test]
    fn a_300_dpi_jpeg_becomes_a_150_dpi_jpeg_and_the_text_stays() {
        let (w, h) = SCAN;
        let image = image_stream(w, h, "DeviceRGB", 8, "DCTDecode", jpeg(&picture(w, h, 3), w, h, 3));
        let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
        let report = shrunk.result.unwrap();
        assert!(!report.kept_original(), "{report:?}");
        assert_eq!(report.pages, 1);
        let images = images_of(&shrunk.output);
        assert_eq!(images.len(), 1);
        assert_eq!((int(&images[0], b"Width"), int(&images[0], b"Height")), (600, 750));
        assert_eq!(images[0].dict.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
        assert_eq!(text_of(&shrunk.output), text_of(&shrunk.input));
    }

    #[test]
    fn an_rgb_scan_of_grey_pixels_becomes_a_grey_jpeg_and_one_with_a_colour_mark_stays_rgb() {
        let (w, h) = SCAN;
        let grey: Vec<u8> = picture(w, h, 1).iter().flat_map(|&v| [v, v.saturating_add(1), v]).collect();
        let image = image_stream(w, h, "DeviceRGB", 8, "DCTDecode", jpeg(&grey, w, h, 3));
        let shrunk = shrunk_scan_to_150_dpi_jpeg(image);
        assert_eq!(shrunk.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceGray");
        assert_eq!(decode_jpeg_as(&shrunk.content, 600, 750, 1).map(|p| p.len()), Some(600 * 750));

        let mut marked = grey;
        for y in 100..140 {
            let row = y * w as usize * 3;
            for x in 100..140 {
                marked[row + x * 3..row + x * 3 + 3].copy_from_slice(&[200, 30, 30]);
            }
        }
        let image = image_stream(w, h, "DeviceRGB", 8, "DCTDecode", jpeg(&marked, w, h, 3));
        let shrunk = shrunk_scan_to_150_dpi_jpeg(image);
        assert_eq!(shrunk.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceRGB");
    }

    #[test]
    fn a_300_dpi_flate_image_with_a_predictor_becomes_a_150_dpi_jpeg() {
        let (w, h) = SCAN;
        let pixels = picture(w, h, 1);
        // PNG predictor 15, every row "Sub"-filtered.
        let mut predicted = Vec::new();
        for row in pixels.chunks(w as usize) {
            predicted.push(1);
            predicted.push(row[0]);
            predicted.extend(row.windows(2).map(|p| p[1].wrapping_sub(p[0])));
        }
        let mut image = image_stream(w, h, "DeviceGray", 8, "FlateDecode", deflated(&predicted));
        image.dict.set("DecodeParms", dictionary! { "Predictor" => 15, "Columns" => i64::from(w), "Colors" => 1 });
        let images = [shrunk_scan_to_150_dpi_jpeg(image)];
        assert!(!images[0].dict.has(b"DecodeParms"));
        assert_eq!(images[0].dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceGray");
        // The JPEG decodes to the new size, in gray.
        assert!(decode_jpeg_as(&images[0].content, 600, 750, 1).is_some());
    }

    #[test]
    fn a_300_dpi_cmyk_flate_image_becomes_a_150_dpi_cmyk_jpeg_without_an_adobe_marker() {
        let (w, h) = SCAN;
        let pixels = picture(w, h, 4);
        let image = image_stream(w, h, "DeviceCMYK", 8, "FlateDecode", deflated(&pixels));
        let images = [shrunk_scan_to_150_dpi_jpeg(image)];
        assert_eq!(images[0].dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceCMYK");
        assert!(!images[0].dict.has(b"Decode"));
        // No Adobe marker: readers differ on whether it means inverted CMYK; without it, every
        // reader takes the samples as they are.
        assert!(!images[0].content.windows(5).any(|w| w == b"Adobe"));
        // Its colours are checked where independent readers render it: tests/it/operations_lossy.rs.
    }

    #[test]
    fn an_image_whose_decoding_panics_is_left_as_it_is() {
        let indices = vec![200u8; 64 * 64];
        let mut stream = image_stream(64, 64, "DeviceRGB", 8, "FlateDecode", deflated(&indices));
        let before = stream.content.clone();
        // A palette too short for the indices: decoding indexes past its end.
        let palette = Some(vec![0u8; 3]);
        let plan = Plan {
            width: 64,
            height: 64,
            target_width: 32,
            target_height: 32,
            source: Source::Samples { bits: 8, palette },
            colour_space: "DeviceRGB".into(),
            components: 3,
        };
        assert!(!guarded_shrink_image(&mut stream, &plan, 75, DEFAULT_MAX_INFLATE_BYTES).unwrap());
        assert_eq!(stream.content, before);
    }

    #[test]
    fn an_indexed_image_becomes_a_jpeg_in_its_base_colour_space() {
        let (w, h) = SCAN;
        let indices: Vec<u8> = picture(w, h, 1).iter().map(|v| v / 16).collect();
        let palette: Vec<u8> = (0..16u8).flat_map(|i| [i * 16, 255 - i * 16, i * 8]).collect();
        let mut image = image_stream(w, h, "DeviceRGB", 8, "FlateDecode", deflated(&indices));
        image.dict.set(
            "ColorSpace",
            vec![
                "Indexed".into(),
                "DeviceRGB".into(),
                15.into(),
                Object::String(palette, lopdf::StringFormat::Hexadecimal),
            ],
        );
        let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
        shrunk.result.unwrap();
        let images = images_of(&shrunk.output);
        // Either shrunk into an RGB JPEG, or (not smaller) kept as the indexed original.
        match images[0].dict.get(b"Filter").unwrap().as_name().unwrap() {
            b"DCTDecode" => {
                assert_eq!(images[0].dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceRGB");
                assert_eq!(int(&images[0], b"Width"), 600);
            }
            _ => assert_eq!(int(&images[0], b"Width"), i64::from(w)),
        }
    }

    #[test]
    fn a_300_dpi_jpeg_2000_becomes_a_150_dpi_jpeg() {
        // fixtures/images/photo-600x400.jp2: RGB, no /ColorSpace in the PDF (the codestream's).
        let jp2 = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/images/photo-600x400.jp2")).unwrap();
        let mut image = image_stream(600, 400, "DeviceRGB", 8, "JPXDecode", jp2.clone());
        image.dict.remove(b"ColorSpace");
        image.dict.remove(b"BitsPerComponent");
        let shrunk = shrink_document(page_with_image(image, (144.0, 96.0)), DEFAULT_MAX_INFLATE_BYTES);
        shrunk.result.unwrap();
        let images = images_of(&shrunk.output);
        let image = &images[0];
        assert_eq!(image.dict.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
        assert_eq!((int(image, b"Width"), int(image, b"Height")), (300, 200));
        assert_eq!(image.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceRGB");
        assert!(image.content.len() < jp2.len(), "{} bytes, the JPEG 2000 {}", image.content.len(), jp2.len());
        // The picture is still the picture: its last pixel keeps its colour, roughly.
        let decoded = decode_jpeg_as(&image.content, 300, 200, 3).unwrap();
        let original = jpx_pixels(&jp2);
        let (small, big) = (&decoded[(199 * 300 + 299) * 3..][..3], &original[(399 * 600 + 599) * 3..][..3]);
        assert!(small.iter().zip(big).all(|(a, b)| a.abs_diff(*b) < 24), "{small:?} vs {big:?}");
    }

    fn jpx_pixels(jp2: &[u8]) -> Vec<u8> {
        hayro_jpeg2000::Image::new(jp2, &hayro_jpeg2000::DecodeSettings::default()).unwrap().decode().unwrap()
    }

    #[test]
    fn a_source_jpeg_with_a_scan_per_colour_component_is_left_as_it_is() {
        let pixels = picture(96, 64, 3);
        let plan = Plan {
            width: 96,
            height: 64,
            target_width: 96,
            target_height: 64,
            source: Source::Jpeg,
            colour_space: Object::Null,
            components: 3,
        };
        // jpeg-encoder writes fitted tables one scan per component; zune-jpeg misreads those.
        let per_component = encode_with(&pixels, &plan, 75, true).unwrap();
        let interleaved = encode_with(&pixels, &plan, 75, false).unwrap();
        assert!(super::super::images::jpeg_markers(&per_component).has_a_scan_per_component());
        assert!(!super::super::images::jpeg_markers(&interleaved).has_a_scan_per_component());
        assert!(decode_jpeg(&per_component, &plan).is_none(), "left as it is");
        assert!(decode_jpeg(&interleaved, &plan).is_some());
        // A grey JPEG has one scan either way.
        let grey = Plan { components: 1, ..plan };
        let grey_jpeg = encode_with(&picture(96, 64, 1), &grey, 75, true).unwrap();
        assert!(!super::super::images::jpeg_markers(&grey_jpeg).has_a_scan_per_component());
    }

    #[test]
    fn every_jpeg_shrink_writes_reads_back_as_its_pixels() {
        // The JPEG 2000 fixture's pixels: jpeg-encoder's fitted tables for them are among those
        // zune-jpeg 0.5 misreads.
        let jp2 = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/images/photo-600x400.jp2")).unwrap();
        let pixels = jpx_pixels(&jp2);
        let plan = Plan {
            width: 600,
            height: 400,
            target_width: 600,
            target_height: 400,
            source: Source::Jpx,
            colour_space: Object::Null,
            components: 3,
        };
        // When this fails, zune-jpeg reads fitted colour tables: `encode` may use them again.
        let fitted = encode_with(&pixels, &plan, 75, true).unwrap();
        assert!(!reads_back(&fitted, &pixels, &plan), "the case this guards against no longer happens");
        let written = encode(&pixels, &plan, 75).unwrap();
        assert!(reads_back(&written, &pixels, &plan));
        let picture = picture(600, 400, 3);
        let written = encode(&picture, &plan, 75).unwrap();
        assert!(reads_back(&written, &picture, &plan));
        // A grey image's single scan is read right with fitted tables, and they are kept.
        let grey = Plan { components: 1, ..plan };
        let picture = super::tests::picture(600, 400, 1);
        let written = encode(&picture, &grey, 75).unwrap();
        assert_eq!(written, encode_with(&picture, &grey, 75, true).unwrap(), "fitted tables");
        assert!(reads_back(&written, &picture, &grey));
    }

    #[test]
    fn a_jpeg_2000_with_an_alpha_channel_or_a_cmyk_space_stays_as_it_is() {
        let jp2 = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/images/photo-600x400.jp2")).unwrap();
        let mut image = image_stream(600, 400, "DeviceCMYK", 8, "JPXDecode", jp2.clone());
        image.dict.set("SMaskInData", 1);
        let shrunk = shrink_document(page_with_image(image, (144.0, 96.0)), DEFAULT_MAX_INFLATE_BYTES);
        shrunk.result.unwrap();
        assert_eq!(images_of(&shrunk.output)[0].content, jp2);
    }

    #[test]
    fn an_image_at_the_target_already_is_left_as_it_is() {
        // 600 pixels over 288 points: 150 dpi.
        let (w, h) = (600, 750);
        let data = jpeg(&picture(w, h, 3), w, h, 3);
        let image = image_stream(w, h, "DeviceRGB", 8, "DCTDecode", data.clone());
        let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
        shrunk.result.unwrap();
        let images = images_of(&shrunk.output);
        assert_eq!(images[0].content, data, "the JPEG's bytes are the original's");
        assert_eq!(int(&images[0], b"Width"), 600);
    }

    /// A bilevel "page of text" (`DeviceGray` bits: 0 is black): rows of glyph-sized blobs of
    /// varying widths, placed by a fixed pseudo-random sequence, as a scan of print looks.
    fn bilevel_text_page(width: u32, height: u32) -> Vec<u8> {
        let row_bytes = (width as usize).div_ceil(8);
        let mut bits = vec![0xFFu8; row_bytes * height as usize];
        let mut seed = 12_345u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (seed >> 16) as usize
        };
        for line in (40..height as usize - 60).step_by(50) {
            let mut x = 60;
            while x + 40 < width as usize - 60 {
                // A glyph: a solid blob whose edges wander a pixel at a time, row by row.
                let (glyph, tall) = (8 + next() % 18, 20 + next() % 12);
                let (mut left, mut right) = (x, x + glyph);
                for y in line + (32 - tall)..line + 32 {
                    left = (left + next() % 3).saturating_sub(1).clamp(x, x + glyph / 2);
                    right = (right + next() % 3).saturating_sub(1).clamp(x + glyph / 2 + 1, x + glyph);
                    for gx in left..right {
                        bits[y * row_bytes + gx / 8] &= !(0x80 >> (gx % 8));
                    }
                }
                x += glyph + 4 + if next() % 6 == 0 { 20 } else { 0 };
            }
        }
        bits
    }

    #[test]
    fn a_bilevel_scan_becomes_group_4_at_its_own_resolution() {
        let (w, h) = (1700, 2200);
        let bits = bilevel_text_page(w, h);
        let flate = deflated(&bits);
        let image = image_stream(w, h, "DeviceGray", 1, "FlateDecode", flate.clone());
        let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
        shrunk.result.unwrap();
        let images = images_of(&shrunk.output);
        let image = &images[0];
        assert_eq!(image.dict.get(b"Filter").unwrap().as_name().unwrap(), b"CCITTFaxDecode");
        assert_eq!((int(image, b"Width"), int(image, b"Height")), (i64::from(w), i64::from(h)));
        assert_eq!(int(image, b"BitsPerComponent"), 1);
        let parameters = image.dict.get(b"DecodeParms").unwrap().as_dict().unwrap();
        assert_eq!(parameters.get(b"K").unwrap().as_i64().unwrap(), -1);
        assert_eq!(parameters.get(b"Columns").unwrap().as_i64().unwrap(), i64::from(w));
        assert!(image.content.len() < flate.len(), "G4 {} bytes, Flate {}", image.content.len(), flate.len());
        // The same pixels: black where the original had a 0 bit.
        let decoded = crate::pdf::ccitt::tests::as_gray(&image.content, w, h);
        assert!(decoded == bits, "the decoded pixels differ from the original's");
    }

    #[test]
    fn a_bilevel_image_group_4_would_not_make_smaller_stays_as_it_is() {
        // Vertical stripes deflate to almost nothing: Group 4 would not be smaller.
        let (w, h) = (2400, 3000);
        let row_bytes = (w as usize).div_ceil(8);
        let stripes: Vec<u8> =
            (0..row_bytes * h as usize).map(|i| if (i / row_bytes) % 40 < 3 { 0x00 } else { 0xF7 }).collect();
        let image = image_stream(w, h, "DeviceGray", 1, "FlateDecode", deflated(&stripes));
        let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
        shrunk.result.unwrap();
        let images = images_of(&shrunk.output);
        assert_eq!(images[0].dict.get(b"Filter").unwrap().as_name().unwrap(), b"FlateDecode");
        assert_eq!(int(&images[0], b"BitsPerComponent"), 1);
    }

    #[test]
    fn an_image_with_a_soft_mask_keeps_a_correct_one() {
        let (w, h) = SCAN;
        let mask = image_stream(w, h, "DeviceGray", 8, "FlateDecode", deflated(&picture(w, h, 1)));
        let mut document = Document::with_version("1.7");
        let mask_id = document.add_object(mask);
        let mut image = image_stream(w, h, "DeviceRGB", 8, "DCTDecode", jpeg(&picture(w, h, 3), w, h, 3));
        image.dict.set("SMask", mask_id);
        let mut page = page_with_image(image, SCAN_PAGE);
        // Move the mask into the page's document under a fresh id.
        let moved = page.add_object(document.objects.remove(&mask_id).unwrap());
        for object in page.objects.values_mut() {
            if let Ok(stream) = object.as_stream_mut()
                && stream.dict.has(b"SMask")
            {
                stream.dict.set("SMask", moved);
            }
        }
        let shrunk = shrink_document(page, DEFAULT_MAX_INFLATE_BYTES);
        shrunk.result.unwrap();
        let images = images_of(&shrunk.output);
        let reloaded = Document::load(&shrunk.output).unwrap();
        let smask = images[0].dict.get(b"SMask").unwrap().as_reference().unwrap();
        let smask = reloaded.get_object(smask).unwrap().as_stream().unwrap();
        assert_eq!(smask.dict.get(b"Subtype").unwrap().as_name().unwrap(), b"Image");
        assert_eq!(int(smask, b"Width"), i64::from(w), "the soft mask keeps its own size");
        assert_eq!(int(&images[0], b"Width"), 600);
    }

    #[test]
    fn a_text_pdf_never_gets_bigger() {
        let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pdf/text-20pages.pdf");
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("out.pdf");
        let report = shrink(&fixture, &output, &Settings::with_max_inflate(DEFAULT_MAX_INFLATE_BYTES)).unwrap();
        assert!(report.output_bytes <= report.input_bytes, "{report:?}");
        assert_eq!(report.pages, 20);
    }

    #[test]
    fn an_image_that_inflates_past_the_cap_fails_the_run() {
        // Declares 100 × 100 pixels but inflates to 8 MiB: refused while decoding.
        let bomb = deflated(&vec![0x80; 8 << 20]);
        let image = image_stream(100, 100, "DeviceGray", 8, "FlateDecode", bomb);
        let shrunk = shrink_document(page_with_image(image, (10.0, 10.0)), 4 << 20);
        assert!(
            matches!(shrunk.result, Err(PdfError::InflatesTooMuch { limit }) if limit == 4 << 20),
            "{:?}",
            shrunk.result
        );
        // Declares pixels that would take more than the cap: refused before decoding.
        let image = image_stream(4000, 4000, "DeviceRGB", 8, "FlateDecode", deflated(&[0; 1000]));
        let shrunk = shrink_document(page_with_image(image, (10.0, 10.0)), 4 << 20);
        assert!(matches!(shrunk.result, Err(PdfError::InflatesTooMuch { .. })), "{:?}", shrunk.result);
    }

    #[test]
    fn the_drawn_size_follows_the_matrices() {
        // Drawn at half the page inside a form scaled by 2: the full page after all.
        let m = multiply([2.0, 0.0, 0.0, 2.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.5, 10.0, 10.0]);
        assert_eq!(m, [1.0, 0.0, 0.0, 1.0, 10.0, 10.0]);
        // A rotated drawing keeps its axes' lengths.
        let rotated: Matrix = [0.0, 300.0, -200.0, 0.0, 0.0, 0.0];
        assert_eq!((rotated[0_usize].hypot(rotated[1]), rotated[2_usize].hypot(rotated[3])), (300.0, 200.0));
    }

    #[test]
    fn samples_of_every_depth_read_as_bytes() {
        assert_eq!(sample(&[0b1011_0000], 0, 1), 1);
        assert_eq!(sample(&[0b1011_0000], 1, 1), 0);
        assert_eq!(sample(&[0b1011_0000], 0, 2), 2);
        assert_eq!(sample(&[0b1011_0110], 1, 4), 6);
        assert_eq!(sample(&[0x12, 0x34, 0x56, 0x78], 1, 16), 0x56);
        assert_eq!(scale_to_byte(1, 1), 255);
        assert_eq!(scale_to_byte(3, 2), 255);
        assert_eq!(scale_to_byte(8, 4), 136);
    }
}
