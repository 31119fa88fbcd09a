//! A TIFF, every frame a page: decoded and deflated losslessly, a bilevel frame as CCITT
//! Group 4, each frame's `Orientation` tag applied by its page.

use std::io::{Cursor, Read, Seek};

use image::metadata::Orientation;
use lopdf::Stream;

use super::{Page, PdfError, Raster, check_size, flate_image, image_dict, raster_page};

/// Every frame of the TIFF, a page each.
pub(super) fn pages(bytes: &[u8], max_inflate: usize) -> Result<Vec<Page>, PdfError> {
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
            pages.push(bilevel_page(&mut decoder, width, height, max_inflate)?);
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
        let dpi = dpi(&mut decoder);
        let orientation = orientation(&mut decoder);
        let samples = match decoder.read_image().map_err(unreadable)? {
            DecodingResult::U8(samples) => samples,
            DecodingResult::U16(samples) => samples.iter().flat_map(|s| s.to_be_bytes()).collect(),
            _ => return Err(PdfError::unreadable("a TIFF frame of an unusual sample type")),
        };
        // A WhiteIsZero frame comes inverted to BlackIsZero already, as DeviceGray reads it.
        let raster = Raster { width, height, bits, space, colours, alpha, samples, dpi, decode: None };
        pages.push(raster_page(raster, orientation));
        if !decoder.more_images() {
            break;
        }
        decoder.next_image().map_err(unreadable)?;
    }
    Ok(pages)
}

/// A bilevel TIFF frame (a fax, a black-and-white scan) as a CCITT Group 4 image: lossless, and
/// as small as the fax's own Group 4 data, whatever compression the TIFF used.
fn bilevel_page<R: Read + Seek>(
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
    let dpi = dpi(decoder);
    let orientation = orientation(decoder);
    let DecodingResult::U8(packed) =
        decoder.read_image().map_err(|e| PdfError::unreadable(format!("reading the TIFF: {e}")))?
    else {
        return Err(PdfError::unreadable("a bilevel TIFF frame of an unusual sample type"));
    };
    let mut dict = image_dict(width, height, "DeviceGray", 1);
    // The decoder gives every frame as BlackIsZero (it inverts WhiteIsZero, a fax's usual): a
    // 0 bit is black, as in a 1-bit DeviceGray image.
    let image = match crate::pdf::ccitt::encode_g4(&packed, width, height, false) {
        Some(g4) => {
            dict.set("Filter", "CCITTFaxDecode");
            dict.set("DecodeParms", crate::pdf::ccitt::g4_parameters(width, height));
            Stream::new(dict, g4).with_compression(false)
        }
        // Wider than Group 4 can say: the bits as they are, deflated.
        None => flate_image(dict, &packed),
    };
    Ok(Page { image, smask: None, dpi, width, height, orientation })
}

fn dpi<R: Read + Seek>(decoder: &mut tiff::decoder::Decoder<R>) -> Option<(f64, f64)> {
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

/// The frame's `Orientation` tag (274, the one EXIF uses); none, or one out of range, is as
/// stored.
fn orientation<R: Read + Seek>(decoder: &mut tiff::decoder::Decoder<R>) -> Orientation {
    decoder
        .get_tag_u32(tiff::tags::Tag::Orientation)
        .ok()
        .and_then(|value| u8::try_from(value).ok())
        .and_then(Orientation::from_exif)
        .unwrap_or(Orientation::NoTransforms)
}
