//! CCITT Group 4 (ITU-T T.6), the way black-and-white scans and faxes are stored: for text on
//! paper several times smaller than Flate, lossless, and read by every PDF reader through
//! `/CCITTFaxDecode`. Encoded with the `fax` crate (the pdf-rs project's, which the `tiff`
//! crate decodes Group 4 TIFFs with).

use lopdf::{Dictionary, dictionary};

/// Encodes `height` rows of `width` 1-bit pixels, packed most significant bit first, each row
/// starting on a byte; a set bit is black when `one_is_black`. `None` when the rows are
/// shorter than that, or the image is wider than Group 4 can say (65,535 pixels).
pub(crate) fn encode_g4(packed: &[u8], width: u32, height: u32, one_is_black: bool) -> Option<Vec<u8>> {
    let columns = u16::try_from(width).ok().filter(|w| *w > 0)?;
    let row_bytes = usize::from(columns).div_ceil(8);
    let rows = usize::try_from(height).ok()?;
    if packed.len() < row_bytes.checked_mul(rows)? {
        return None;
    }
    // Scans compress to a few percent of their packed size.
    let mut encoder = fax::encoder::Encoder::new(fax::VecWriter::with_capacity(packed.len()));
    for row in packed.chunks_exact(row_bytes).take(rows) {
        let pels = (0..usize::from(columns)).map(|x| {
            let set = (row[x / 8] >> (7 - x % 8)) & 1 == 1;
            if set == one_is_black { fax::Color::Black } else { fax::Color::White }
        });
        let Ok(()) = encoder.encode_line(pels, columns);
    }
    let Ok(writer) = encoder.finish();
    Some(writer.finish())
}

/// The `/DecodeParms` of a stream [`encode_g4`] wrote: pure two-dimensional coding (`/K -1`),
/// and black decoded as 0, which is black in a 1-bit `DeviceGray` image.
pub(crate) fn g4_parameters(width: u32, height: u32) -> Dictionary {
    dictionary! {
        "K" => -1,
        "Columns" => i64::from(width),
        "Rows" => i64::from(height),
        "BlackIs1" => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A page-like bilevel image: white, with black "lines of text" (runs of dashes) and a
    /// frame, packed with a set bit for black.
    pub(crate) fn scan(width: u32, height: u32) -> Vec<u8> {
        let row_bytes = (width as usize).div_ceil(8);
        let mut packed = vec![0u8; row_bytes * height as usize];
        for y in 0..height as usize {
            for x in 0..width as usize {
                let frame = x < 3 || y < 3 || x + 3 >= width as usize || y + 3 >= height as usize;
                let text = (y / 6) % 3 == 1 && (x / 5) % 7 != 0 && x > 20 && x + 20 < width as usize;
                if frame || text {
                    packed[y * row_bytes + x / 8] |= 0x80 >> (x % 8);
                }
            }
        }
        packed
    }

    /// `data` decoded as a reader decodes a 1-bit `DeviceGray` image: a 0 bit for black (rows
    /// padded with 1 bits).
    pub(crate) fn as_gray(data: &[u8], width: u32, height: u32) -> Vec<u8> {
        decoded(data, width, height).iter().map(|b| !b).collect()
    }

    /// `data` decoded again, with a set bit for black.
    fn decoded(data: &[u8], width: u32, height: u32) -> Vec<u8> {
        let row_bytes = (width as usize).div_ceil(8);
        let mut out = Vec::new();
        fax::decoder::decode_g4(data.iter().copied(), width as u16, Some(height as u16), |transitions| {
            let mut row = vec![0u8; row_bytes];
            for (x, colour) in fax::decoder::pels(transitions, width as u16).enumerate() {
                if colour == fax::Color::Black {
                    row[x / 8] |= 0x80 >> (x % 8);
                }
            }
            out.extend(row);
        })
        .expect("decodes");
        out
    }

    #[test]
    fn a_scan_round_trips_and_is_far_smaller_than_its_pixels() {
        let (width, height) = (203, 97);
        let packed = scan(width, height);
        let g4 = encode_g4(&packed, width, height, true).expect("encodes");
        assert!(g4.len() * 4 < packed.len(), "{} bytes of G4 for {} packed", g4.len(), packed.len());
        assert_eq!(decoded(&g4, width, height), packed);
    }

    #[test]
    fn zero_bits_can_be_the_black_ones() {
        let (width, height) = (64, 16);
        let black_is_one = scan(width, height);
        let black_is_zero: Vec<u8> = black_is_one.iter().map(|b| !b).collect();
        let g4 = encode_g4(&black_is_zero, width, height, false).expect("encodes");
        assert_eq!(decoded(&g4, width, height), black_is_one);
    }

    #[test]
    fn short_or_too_wide_images_are_not_encoded() {
        assert!(encode_g4(&[0; 10], 64, 16, true).is_none());
        assert!(encode_g4(&[0; 16], 70_000, 1, true).is_none());
        assert!(encode_g4(&[], 0, 0, true).is_none());
    }
}
