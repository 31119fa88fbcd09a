//! One image rewritten as its plan says, and only when that makes it smaller: decoded, made
//! grey when every pixel is, resized and written as a JPEG, or a bilevel image written as CCITT
//! Group 4. A codec that panics leaves the image as it is.

use lopdf::{Object, Stream};

use super::decode::decode;
use super::encode::{encode, resize};
use super::plan::{Plan, Source};
use crate::pdf::PdfError;

/// [`shrink_image`], with a panic in a decoder or encoder leaving the image as it is: an image
/// that cannot be read is left untouched, not a reason to fail the whole run. The stream is
/// only changed once its new version is complete, so a panic leaves it whole.
pub(super) fn guarded_shrink_image(
    stream: &mut Stream,
    plan: &Plan,
    quality: u8,
    max_inflate: usize,
) -> Result<bool, PdfError> {
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
    let Some(g4) = crate::pdf::ccitt::encode_g4(&packed, plan.width, plan.height, false) else { return Ok(false) };
    if g4.len() >= stream.content.len() {
        return Ok(false);
    }
    stream.dict.set("Filter", "CCITTFaxDecode");
    stream.dict.set("DecodeParms", crate::pdf::ccitt::g4_parameters(plan.width, plan.height));
    stream.set_content(g4);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use crate::pdf::shrink::tests::{deflated, image_stream};

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
}
