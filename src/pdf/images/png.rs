//! A PNG, decoded and deflated losslessly, its `eXIf` orientation applied by the page.

use std::io::Cursor;

use image::metadata::Orientation;

use super::{Page, PdfError, Raster, check_size, raster_page};

/// The PNG as a page, at its `pHYs` resolution when it states one. `with_exif`: whether its
/// `eXIf` chunk's orientation counts (not for a PNG libheif wrote, whose pixels are turned
/// already).
pub(super) fn page(bytes: &[u8], max_inflate: usize, with_exif: bool) -> Result<Page, PdfError> {
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
    let orientation = info
        .exif_metadata
        .as_deref()
        .filter(|_| with_exif)
        .and_then(Orientation::from_exif_chunk)
        .unwrap_or(Orientation::NoTransforms);
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
    let raster = Raster { width, height, bits, space, colours, alpha, samples: buffer, dpi, decode: None };
    Ok(raster_page(raster, orientation))
}
