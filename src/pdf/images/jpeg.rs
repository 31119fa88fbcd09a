//! A JPEG, embedded byte for byte (`DCTDecode`), its EXIF orientation applied by the page.

use image::metadata::Orientation;
use lopdf::Stream;

use super::{Page, PdfError, image_dict};

/// The JPEG as a page: its size and components are read from its header, nothing is
/// re-encoded. A four-component JPEG with an Adobe marker (as Photoshop writes them, inverted)
/// gets `/Decode [1 0 1 0 1 0 1 0]`, as readers expect. Its EXIF orientation (APP1), read by
/// zune-jpeg and the image crate, turns the page rather than the pixels.
pub(super) fn page(bytes: &[u8]) -> Result<Page, PdfError> {
    use zune_jpeg::zune_core::bytestream::ZCursor;
    let mut decoder = zune_jpeg::JpegDecoder::new(ZCursor::new(bytes));
    decoder.decode_headers().map_err(|e| PdfError::unreadable(format!("reading the JPEG: {e}")))?;
    let info = decoder.info().ok_or_else(|| PdfError::unreadable("the JPEG has no frame header"))?;
    let components = decoder.input_colorspace().map(|c| c.num_components()).unwrap_or(0);
    let colour_space = match components {
        1 => "DeviceGray",
        3 => "DeviceRGB",
        4 => "DeviceCMYK",
        n => return Err(PdfError::unreadable(format!("a JPEG of {n} components"))),
    };
    let orientation =
        decoder.exif().and_then(|exif| Orientation::from_exif_chunk(exif)).unwrap_or(Orientation::NoTransforms);
    let (width, height) = (u32::from(info.width), u32::from(info.height));
    let mut dict = image_dict(width, height, colour_space, 8);
    dict.set("Filter", "DCTDecode");
    let markers = markers(bytes);
    if components == 4 && markers.adobe {
        dict.set("Decode", vec![1.into(), 0.into(), 1.into(), 0.into(), 1.into(), 0.into(), 1.into(), 0.into()]);
    }
    let image = Stream::new(dict, bytes.to_vec()).with_compression(false);
    Ok(Page { image, smask: None, dpi: markers.dpi, width, height, orientation })
}

#[derive(Default)]
pub(in crate::pdf) struct JpegMarkers {
    adobe: bool,
    dpi: Option<(f64, f64)>,
    /// The components of a sequential (baseline or extended, Huffman-coded) frame; `None` for
    /// any other frame.
    sequential_components: Option<u8>,
    /// The components the first scan holds.
    first_scan_components: Option<u8>,
}

impl JpegMarkers {
    /// Whether it is a sequential JPEG of several components whose first scan holds fewer than
    /// all of them (one scan per component): valid, but zune-jpeg 0.5 decodes such files wrong
    /// without an error.
    pub(in crate::pdf) fn has_a_scan_per_component(&self) -> bool {
        matches!((self.sequential_components, self.first_scan_components), (Some(all), Some(scan)) if all > 1 && scan < all)
    }
}

/// The JFIF density, whether there is an Adobe marker, and the frame's and first scan's
/// components, from the segments up to the first scan.
pub(in crate::pdf) fn markers(bytes: &[u8]) -> JpegMarkers {
    let mut found = JpegMarkers::default();
    let mut at = 2;
    while at + 4 <= bytes.len() && bytes[at] == 0xFF {
        let marker = bytes[at + 1];
        if marker == 0xD9 {
            break;
        }
        let length = usize::from(u16::from_be_bytes([bytes[at + 2], bytes[at + 3]]));
        let segment = bytes.get(at + 4..at + 2 + length).unwrap_or_default();
        match marker {
            0xE0 if segment.starts_with(b"JFIF\0") && segment.len() >= 12 => {
                let x = f64::from(u16::from_be_bytes([segment[8], segment[9]]));
                let y = f64::from(u16::from_be_bytes([segment[10], segment[11]]));
                found.dpi = match segment[7] {
                    1 => Some((x, y)),
                    2 => Some((x * 2.54, y * 2.54)),
                    _ => None,
                };
            }
            0xEE if segment.starts_with(b"Adobe") => found.adobe = true,
            // SOF0, SOF1: the component count is the frame header's sixth byte.
            0xC0 | 0xC1 => found.sequential_components = segment.get(5).copied(),
            0xDA => {
                found.first_scan_components = segment.first().copied();
                break;
            }
            _ => {}
        }
        at += 2 + length.max(2);
    }
    found
}
