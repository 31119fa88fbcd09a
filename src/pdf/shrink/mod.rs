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
//!
//! # Where each step lives
//!
//! This file drives the run: it measures every image, plans each one, and rewrites the planned
//! ones in parallel. The steps, one file each:
//!
//! | file | step |
//! |---|---|
//! | `drawn.rs` | how large each image is drawn: the walk through pages and forms (the resolution rules above) |
//! | `plan.rs` | whether and how an image is re-encoded: the size it gets, how it is read, its colour space (what is read, what is left as it is) |
//! | `rewrite.rs` | one image rewritten as its plan says, only when smaller: as a JPEG (grey when its colour is grey) or as Group 4; a panicking codec leaves it as it is |
//! | `decode.rs` | an image's pixels, from JPEG, JPEG 2000 or the samples lopdf decodes |
//! | `encode.rs` | the pixels resized and written as a JPEG, and read back where a decoder may misread it |
//!
//! `tests.rs` shrinks whole documents, and its PDF and image builders serve the other tests.

use std::collections::HashMap;

use lopdf::Document;
use rayon::prelude::*;

use self::drawn::drawn_sizes;
pub use self::fit::{FIT_STEPS, shrink_to};
use self::plan::plan;
use self::rewrite::guarded_shrink_image;
use super::{OptimizeReport, PdfError, Settings};

mod decode;
mod drawn;
mod encode;
mod fit;
mod plan;
mod rewrite;
#[cfg(test)]
pub(crate) mod tests;

/// An image is downsampled only when its resolution is at least this many times the target.
pub const WORTH_IT: f64 = 1.1;

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
    super::rewrite::rewrite_file(input, output, settings.max_inflate, "shrank", move |document| {
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
