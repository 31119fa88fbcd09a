//! A WebP image, decoded (lossy ones too) and deflated losslessly, its EXIF orientation
//! applied by the page.

use std::io::Cursor;

use image::ImageDecoder;
use image::metadata::Orientation;

use super::{Page, PdfError, Raster, check_size, raster_page};

/// The WebP image (an animation's first frame) as a page.
pub(super) fn page(bytes: &[u8], max_inflate: usize) -> Result<Page, PdfError> {
    let unreadable = |e: image::ImageError| PdfError::unreadable(format!("reading the WebP image: {e}"));
    let mut decoder = image::codecs::webp::WebPDecoder::new(Cursor::new(bytes)).map_err(unreadable)?;
    let (width, height) = decoder.dimensions();
    let colour = decoder.color_type();
    check_size(width, height, usize::from(colour.bytes_per_pixel()), max_inflate)?;
    // An EXIF chunk that cannot be read leaves the picture as it is stored.
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
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
    let raster = Raster { width, height, bits: 8, space, colours, alpha, samples, dpi: None, decode: None };
    Ok(raster_page(raster, orientation))
}
