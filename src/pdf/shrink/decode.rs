//! An image's pixels, 8 bits per component: a JPEG decoded with zune-jpeg (unless it would
//! misread it), a JPEG 2000 one with hayro-jpeg2000, or the samples lopdf decodes, unpacked from
//! any depth and looked up in a palette.

use lopdf::Stream;

use super::plan::{Plan, Source};
use crate::pdf::PdfError;

/// The image's pixels, 8 bits per component, `plan.components` per pixel; `None` when it
/// cannot be read as planned.
pub(super) fn decode(stream: &Stream, plan: &Plan, max_inflate: usize) -> Result<Option<Vec<u8>>, PdfError> {
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
    if crate::pdf::images::jpeg_markers(data).has_a_scan_per_component() {
        return None;
    }
    decode_jpeg_as(data, plan.width, plan.height, plan.components)
}

/// A JPEG of `width` × `height` pixels of `components` (1, 3 or 4) components, decoded; `None`
/// when it is not one.
pub(super) fn decode_jpeg_as(data: &[u8], width: u32, height: u32, components: usize) -> Option<Vec<u8>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use lopdf::Object;

    use super::super::encode::encode_with;
    use crate::pdf::shrink::tests::picture;

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
        assert!(crate::pdf::images::jpeg_markers(&per_component).has_a_scan_per_component());
        assert!(!crate::pdf::images::jpeg_markers(&interleaved).has_a_scan_per_component());
        assert!(decode_jpeg(&per_component, &plan).is_none(), "left as it is");
        assert!(decode_jpeg(&interleaved, &plan).is_some());
        // A grey JPEG has one scan either way.
        let grey = Plan { components: 1, ..plan };
        let grey_jpeg = encode_with(&picture(96, 64, 1), &grey, 75, true).unwrap();
        assert!(!crate::pdf::images::jpeg_markers(&grey_jpeg).has_a_scan_per_component());
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
