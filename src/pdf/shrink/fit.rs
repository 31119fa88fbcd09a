//! `shrink 10MB`: shrinking until the result fits in a size.
//!
//! The configured resolution and quality are tried first, then each of [`FIT_STEPS`] that is
//! lower than them, in order, until the output fits. Each try rewrites the whole document
//! from the input; the last one that did not fit is left behind only as the size it reached.

use std::path::Path;

use super::super::{OptimizeReport, PdfError, Settings, ShrinkSettings};
use super::shrink;
use crate::domain::SizeTarget;

/// The settings tried after the configured ones, each smaller than the one before: Ghostscript's
/// `/ebook` resolution down to a screen's.
pub const FIT_STEPS: [ShrinkSettings; 5] = [
    ShrinkSettings { dpi: 150, jpeg_quality: 60 },
    ShrinkSettings { dpi: 120, jpeg_quality: 50 },
    ShrinkSettings { dpi: 100, jpeg_quality: 40 },
    ShrinkSettings { dpi: 72, jpeg_quality: 35 },
    ShrinkSettings { dpi: 50, jpeg_quality: 30 },
];

/// Shrinks `input` into `output` with the first settings whose result fits in `target`.
///
/// # Errors
///
/// As [`shrink`]; [`PdfError::CannotShrinkTo`] when even the last step's result is over
/// `target` (then `output` is removed).
pub fn shrink_to(
    input: &Path,
    output: &Path,
    settings: &Settings,
    target: SizeTarget,
) -> Result<OptimizeReport, PdfError> {
    let configured = settings.shrink;
    let lower = |step: &ShrinkSettings| {
        step.dpi <= configured.dpi && step.jpeg_quality <= configured.jpeg_quality && *step != configured
    };
    let mut smallest = u64::MAX;
    for step in std::iter::once(configured).chain(FIT_STEPS.into_iter().filter(lower)) {
        let report = shrink(input, output, &Settings { shrink: step, ..*settings })?;
        tracing::debug!(dpi = step.dpi, quality = step.jpeg_quality, bytes = report.output_bytes, "shrink step");
        if report.output_bytes <= target.get() {
            return Ok(report);
        }
        smallest = smallest.min(report.output_bytes);
    }
    match std::fs::remove_file(output) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error.into()),
        _ => {}
    }
    Err(PdfError::CannotShrinkTo { target: target.get(), smallest })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::shrink::tests::{image_stream, jpeg, page_with_image, picture};

    #[test]
    fn steps_go_down_in_both_resolution_and_quality() {
        for pair in FIT_STEPS.windows(2) {
            assert!(pair[1].dpi < pair[0].dpi && pair[1].jpeg_quality < pair[0].jpeg_quality, "{pair:?}");
        }
    }

    #[test]
    fn a_reachable_target_is_met_and_an_unreachable_one_says_how_close_it_came() {
        let dir = tempfile::tempdir().unwrap();
        // A 300 dpi colour scan: every step below the configured 150 dpi makes it smaller.
        let input = dir.path().join("scan.pdf");
        let (width, height) = (2400, 3000);
        let pixels = picture(width, height, 3);
        let image = image_stream(width, height, "DeviceRGB", 8, "DCTDecode", jpeg(&pixels, width, height, 3));
        page_with_image(image, (576.0, 720.0)).save(&input).unwrap();
        let output = dir.path().join("out.pdf");
        let settings = Settings::with_max_inflate(crate::pdf::DEFAULT_MAX_INFLATE_BYTES);
        let configured = shrink(&input, &output, &settings).unwrap().output_bytes;
        // What the last step gives, which is under what the configured settings give: a target
        // of exactly that needs a lower step, and one surely meets it.
        let lowest = Settings { shrink: FIT_STEPS[FIT_STEPS.len() - 1], ..settings };
        let reachable = shrink(&input, &output, &lowest).unwrap().output_bytes;
        assert!(reachable < configured && reachable > SizeTarget::MIN.get(), "{reachable} vs {configured}");
        let target = SizeTarget::bytes(reachable);
        let report = shrink_to(&input, &output, &settings, target).unwrap();
        assert!(report.output_bytes <= target.get(), "{} over {target}", report.output_bytes);
        assert_eq!(std::fs::metadata(&output).unwrap().len(), report.output_bytes);
        match shrink_to(&input, &output, &settings, SizeTarget::MIN) {
            Err(PdfError::CannotShrinkTo { target, smallest }) => {
                assert_eq!(target, SizeTarget::MIN.get());
                assert!(smallest > target && smallest <= configured, "{smallest}");
                assert!(!output.exists(), "nothing half-made is left");
            }
            other => panic!("{other:?}"),
        }
    }
}
