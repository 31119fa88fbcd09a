//! Whether and how one image is re-encoded: the size that brings it to the target resolution,
//! how its data is read (JPEG, JPEG 2000, samples lopdf decodes, bilevel), and the colour space
//! its JPEG gets. `None` leaves an image as it is, for every case the module docs list.

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

use super::WORTH_IT;
use super::drawn::Drawn;
use crate::pdf::{PdfError, Settings};

/// How one image is to be read and rewritten.
#[derive(Debug)]
pub(super) struct Plan {
    /// The image's width in pixels.
    pub(super) width: u32,
    /// The image's height in pixels.
    pub(super) height: u32,
    /// The width it is written at.
    pub(super) target_width: u32,
    /// The height it is written at.
    pub(super) target_height: u32,
    /// How its data is read.
    pub(super) source: Source,
    /// The colour space of the JPEG: the image's own, or an indexed image's base.
    pub(super) colour_space: Object,
    /// Components of the JPEG: 1, 3 or 4 (CMYK).
    pub(super) components: usize,
}

/// How an image's data is read.
#[derive(Debug)]
pub(super) enum Source {
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
///
/// One sequence of checks, kept whole: each early `None` is a reason an image is left alone, in the
/// order its dictionary is read, and the plan that survives them all is built at the end.
pub(super) fn plan(
    document: &Document,
    id: ObjectId,
    drawn: Drawn,
    settings: &Settings,
) -> Result<Option<Plan>, PdfError> {
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
