//! A GIF's first frame (an animation's too), decoded and deflated losslessly.

use std::io::Cursor;

use image::ImageDecoder;
use image::metadata::Orientation;

use super::{Page, PdfError, Raster, check_size, raster_page};

/// The GIF's first frame on its logical screen, as the image crate composes it (RGBA: a
/// transparent colour becomes the page's soft mask), as a page at 72 dpi or fitted to A4.
pub(super) fn page(bytes: &[u8], max_inflate: usize) -> Result<Page, PdfError> {
    let unreadable = |e: image::ImageError| match e {
        image::ImageError::Limits(_) => PdfError::InflatesTooMuch { limit: max_inflate },
        other => PdfError::unreadable(format!("reading the GIF: {other}")),
    };
    let mut decoder = image::codecs::gif::GifDecoder::new(Cursor::new(bytes)).map_err(unreadable)?;
    let (width, height) = decoder.dimensions();
    if decoder.color_type() != image::ColorType::Rgba8 {
        return Err(PdfError::unreadable(format!("a GIF decoded as {:?}", decoder.color_type())));
    }
    check_size(width, height, 4, max_inflate)?;
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(max_inflate as u64);
    decoder.set_limits(limits).map_err(unreadable)?;
    let total = usize::try_from(decoder.total_bytes()).map_err(|_| PdfError::InflatesTooMuch { limit: max_inflate })?;
    let mut samples = vec![0; total];
    decoder.read_image(&mut samples).map_err(unreadable)?;
    let raster = Raster {
        width,
        height,
        bits: 8,
        space: "DeviceRGB",
        colours: 3,
        alpha: true,
        samples,
        dpi: None,
        decode: None,
    };
    Ok(raster_page(raster, Orientation::NoTransforms))
}
