//! Pixels resized to their plan's size and written as a JPEG: with fitted Huffman tables where
//! decoders read them right (checked by reading the JPEG back), CMYK without an Adobe marker.

use fast_image_resize::images::Image;
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};

use super::decode::decode_jpeg_as;
use super::plan::Plan;

pub(super) fn resize(pixels: Vec<u8>, plan: &Plan) -> Option<Vec<u8>> {
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
pub(super) fn encode(pixels: &[u8], plan: &Plan, quality: u8) -> Option<Vec<u8>> {
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

pub(super) fn encode_with(pixels: &[u8], plan: &Plan, quality: u8, fitted_tables: bool) -> Option<Vec<u8>> {
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
mod tests {
    use super::*;
    use lopdf::Object;

    use super::super::plan::Source;
    use crate::pdf::shrink::tests::{jpx_pixels, picture};

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
        let picture = crate::pdf::shrink::tests::picture(600, 400, 1);
        let written = encode(&picture, &grey, 75).unwrap();
        assert_eq!(written, encode_with(&picture, &grey, 75, true).unwrap(), "fitted tables");
        assert!(reads_back(&written, &picture, &grey));
    }
}
