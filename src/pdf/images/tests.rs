//! `topdf`'s tests: every input is made here, by the test.

use std::io::Cursor;

use super::*;
use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
use crate::pdf::shrink::tests::{jpeg, picture};

fn convert(bytes: &[u8], max_inflate: usize) -> (tempfile::TempDir, Result<OptimizeReport, PdfError>, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    let output = dir.path().join("out.pdf");
    std::fs::write(&input, bytes).unwrap();
    let result = to_pdf(&input, &output, &Settings::with_max_inflate(max_inflate));
    (dir, result, output)
}

use std::path::PathBuf;

fn first_image(document: &Document, page: u32) -> &Stream {
    let page = document.get_pages()[&page];
    let (_, ids) = document.get_page_resources(page).unwrap();
    let resources = match ids.first() {
        Some(id) => document.get_dictionary(*id).unwrap(),
        None => document.get_dictionary(page).unwrap().get(b"Resources").unwrap().as_dict().unwrap(),
    };
    let id = resources.get(b"XObject").unwrap().as_dict().unwrap().get(b"Im0").unwrap().as_reference().unwrap();
    document.get_object(id).unwrap().as_stream().unwrap()
}

#[test]
fn a_jpeg_is_embedded_byte_for_byte() {
    let bytes = jpeg(&picture(320, 200, 3), 320, 200, 3);
    let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
    assert_eq!(result.unwrap().pages, 1);
    let document = Document::load(&output).unwrap();
    let image = first_image(&document, 1);
    assert_eq!(image.content, bytes);
    assert_eq!(image.dict.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
    assert_eq!(image.dict.get(b"Width").unwrap().as_i64().unwrap(), 320);
    assert_eq!(image.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceRGB");
    // No resolution stated: 72 dpi, one point per pixel.
    let page = document.get_dictionary(document.get_pages()[&1]).unwrap();
    let media_box = page.get(b"MediaBox").unwrap().as_array().unwrap();
    assert_eq!(media_box[2].as_float().unwrap(), 320.0);
}

fn png(width: u32, height: u32, colour: ::png::ColorType, data: &[u8], ppm: Option<u32>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = ::png::Encoder::new(&mut out, width, height);
    encoder.set_color(colour);
    encoder.set_depth(::png::BitDepth::Eight);
    if let Some(ppm) = ppm {
        encoder.set_pixel_dims(Some(::png::PixelDimensions { xppu: ppm, yppu: ppm, unit: ::png::Unit::Meter }));
    }
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(data).unwrap();
    writer.finish().unwrap();
    out
}

#[test]
fn a_png_with_alpha_gets_a_soft_mask_and_its_resolution() {
    let (w, h) = (64, 48);
    let rgba: Vec<u8> = picture(w, h, 4);
    // 300 dpi = 11811 pixels per metre.
    let bytes = png(w, h, ::png::ColorType::Rgba, &rgba, Some(11_811));
    let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
    result.unwrap();
    let document = Document::load(&output).unwrap();
    let image = first_image(&document, 1);
    let smask = image.dict.get(b"SMask").unwrap().as_reference().unwrap();
    let smask = document.get_object(smask).unwrap().as_stream().unwrap();
    assert_eq!(smask.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceGray");
    let alpha: Vec<u8> = rgba.chunks(4).map(|p| p[3]).collect();
    assert_eq!(smask.decompressed_content().unwrap(), alpha);
    let colour: Vec<u8> = rgba.chunks(4).flat_map(|p| p[..3].to_vec()).collect();
    assert_eq!(image.decompressed_content().unwrap(), colour, "lossless");
    let page = document.get_dictionary(document.get_pages()[&1]).unwrap();
    let width_pt = page.get(b"MediaBox").unwrap().as_array().unwrap()[2].as_float().unwrap();
    assert!((width_pt - 64.0 * 72.0 / 300.0).abs() < 0.1, "{width_pt}");
}

#[test]
fn an_opaque_png_gets_no_mask() {
    let bytes = png(8, 8, ::png::ColorType::Rgb, &picture(8, 8, 3), None);
    let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
    result.unwrap();
    let document = Document::load(&output).unwrap();
    assert!(!first_image(&document, 1).dict.has(b"SMask"));
}

#[test]
fn a_multi_page_tiff_gives_a_page_per_frame() {
    use ::tiff::encoder::{TiffEncoder, colortype};
    let mut bytes = Vec::new();
    {
        let mut encoder = TiffEncoder::new(Cursor::new(&mut bytes)).unwrap();
        for frame in 0..3u32 {
            let (w, h) = (40 + frame * 10, 30);
            encoder.write_image::<colortype::RGB8>(w, h, &picture(w, h, 3)).unwrap();
        }
    }
    let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
    assert_eq!(result.unwrap().pages, 3);
    let document = Document::load(&output).unwrap();
    assert_eq!(document.get_pages().len(), 3);
    assert_eq!(first_image(&document, 3).dict.get(b"Width").unwrap().as_i64().unwrap(), 60);
    assert_eq!(first_image(&document, 3).decompressed_content().unwrap(), picture(60, 30, 3));
}

#[test]
fn a_bilevel_tiff_becomes_a_group_4_image_of_the_same_pixels() {
    let (w, h) = (203u32, 97u32);
    // A fax: Group 4 data in a TIFF, WhiteIsZero (a set bit is black), 200 dpi.
    let packed = crate::pdf::ccitt::tests::scan(w, h);
    let look: Vec<u8> = packed.iter().map(|b| !b).collect();
    let g4 = crate::pdf::ccitt::encode_g4(&packed, w, h, true).unwrap();
    let bytes = fax::tiff::wrap(&g4, w, h);
    let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
    assert_eq!(result.unwrap().pages, 1);
    let document = Document::load(&output).unwrap();
    let image = first_image(&document, 1);
    assert_eq!(image.dict.get(b"Filter").unwrap().as_name().unwrap(), b"CCITTFaxDecode");
    assert_eq!(image.dict.get(b"BitsPerComponent").unwrap().as_i64().unwrap(), 1);
    // Decoded as a reader does (black is 0 in DeviceGray): the fax's black pixels.
    assert!(crate::pdf::ccitt::tests::as_gray(&image.content, w, h) == look, "the pixels changed");
    // At the TIFF's 200 dpi: 203 px is 73.08 pt.
    let page = document.get_pages()[&1];
    let media = document.get_dictionary(page).unwrap().get(b"MediaBox").unwrap().as_array().unwrap();
    assert!((media[2].as_float().unwrap() - 73.08).abs() < 0.01, "{media:?}");
}

#[test]
fn a_white_is_zero_gray_tiff_keeps_its_look() {
    use ::tiff::encoder::{TiffEncoder, colortype};
    let (w, h) = (40u32, 30u32);
    let look = picture(w, h, 1);
    let stored: Vec<u8> = look.iter().map(|v| 255 - v).collect();
    let mut bytes = Vec::new();
    TiffEncoder::new(Cursor::new(&mut bytes)).unwrap().write_image::<colortype::Gray8>(w, h, &stored).unwrap();
    // PhotometricInterpretation (262, SHORT, 1 value) from BlackIsZero (1) to WhiteIsZero (0).
    let entry = [0x06, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00];
    let at = bytes.windows(entry.len()).position(|w| w == entry).expect("the photometric tag");
    bytes[at + 8] = 0;
    let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
    result.unwrap();
    let document = Document::load(&output).unwrap();
    let image = first_image(&document, 1);
    assert!(!image.dict.has(b"Decode"));
    assert_eq!(image.decompressed_content().unwrap(), look, "white stays white");
}

#[test]
fn an_image_larger_than_the_cap_is_refused_before_decoding() {
    let bytes = png(2000, 2000, ::png::ColorType::Rgb, &vec![0; 2000 * 2000 * 3], None);
    let (_dir, result, _) = convert(&bytes, 1 << 20);
    assert!(matches!(result, Err(PdfError::InflatesTooMuch { limit }) if limit == 1 << 20), "{result:?}");
}

#[test]
fn a_big_photo_without_a_resolution_fits_a4() {
    let page = Page {
        image: Stream::new(Dictionary::new(), Vec::new()),
        smask: None,
        dpi: None,
        width: 4000,
        height: 3000,
        orientation: Orientation::NoTransforms,
    };
    let (w, h) = page_size(&page);
    assert!((w - 11.69 * 72.0).abs() < 0.5 && h < w, "{w} × {h}");
}

#[test]
fn something_else_is_unreadable() {
    let (_dir, result, _) = convert(b"%PDF-1.7 not an image", DEFAULT_MAX_INFLATE_BYTES);
    assert!(matches!(result, Err(PdfError::Unreadable { .. })), "{result:?}");
}

// ---- GIF --------------------------------------------------------------------------------

/// A GIF of `frames` (RGBA, each `width` × `height`), as the image crate writes one.
fn gif(width: u32, height: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    {
        let mut encoder = image::codecs::gif::GifEncoder::new(&mut out);
        for rgba in frames {
            let buffer = image::RgbaImage::from_raw(width, height, rgba.clone()).unwrap();
            encoder.encode_frame(image::Frame::new(buffer)).unwrap();
        }
    }
    out
}

/// RGBA in four colours (a GIF's palette holds them exactly), `shift` moving the pattern.
fn four_colours(width: u32, height: u32, shift: u32) -> Vec<u8> {
    let colours = [[200, 30, 30, 255], [30, 200, 30, 255], [30, 30, 200, 255], [240, 240, 240, 255]];
    (0..height).flat_map(|y| (0..width).flat_map(move |x| colours[((x / 5 + y / 3 + shift) % 4) as usize])).collect()
}

#[test]
fn a_gif_becomes_its_first_frame_losslessly() {
    let (w, h) = (40, 30);
    let first = four_colours(w, h, 0);
    let bytes = gif(w, h, &[first.clone(), four_colours(w, h, 1)]);
    let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
    assert_eq!(result.unwrap().pages, 1, "the first frame only");
    let document = Document::load(&output).unwrap();
    let image = first_image(&document, 1);
    assert_eq!(image.dict.get(b"Filter").unwrap().as_name().unwrap(), b"FlateDecode");
    let rgb: Vec<u8> = first.chunks(4).flat_map(|p| p[..3].to_vec()).collect();
    assert_eq!(image.decompressed_content().unwrap(), rgb, "lossless");
    assert!(!image.dict.has(b"SMask"), "opaque");
    let page = document.get_dictionary(document.get_pages()[&1]).unwrap();
    assert_eq!(page.get(b"MediaBox").unwrap().as_array().unwrap()[2].as_float().unwrap(), 40.0, "72 dpi");
}

#[test]
fn a_gif_larger_than_the_cap_is_refused_before_decoding() {
    let bytes = gif(100, 100, &[four_colours(100, 100, 0)]);
    let (_dir, result, _) = convert(&bytes, 100 * 100 * 4 - 1);
    assert!(matches!(result, Err(PdfError::InflatesTooMuch { .. })), "{result:?}");
}

#[test]
fn a_damaged_gif_fails_with_a_reason() {
    let mut bytes = gif(40, 30, &[four_colours(40, 30, 0)]);
    bytes.truncate(20);
    let (_dir, result, _) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
    assert!(
        matches!(&result, Err(PdfError::Unreadable { detail }) if detail.contains("reading the GIF")),
        "{result:?}"
    );
}

// ---- Orientation ------------------------------------------------------------------------

/// An EXIF block (a big-endian TIFF structure) holding only `orientation`.
fn exif(orientation: u16) -> Vec<u8> {
    let mut exif = b"MM\0\x2a\0\0\0\x08".to_vec();
    // One entry: Orientation (0x0112), SHORT, one value; then no next directory.
    exif.extend_from_slice(&[0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1]);
    exif.extend_from_slice(&orientation.to_be_bytes());
    exif.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    exif
}

/// `jpeg` with an APP1 Exif segment saying `orientation`, right after its SOI.
fn with_exif(jpeg: &[u8], orientation: u16) -> Vec<u8> {
    let body = [b"Exif\0\0".as_slice(), &exif(orientation)].concat();
    let length = u16::try_from(body.len() + 2).unwrap();
    [&jpeg[..2], &[0xFF, 0xE1], &length.to_be_bytes(), &body, &jpeg[2..]].concat()
}

/// A picture that shows which way it is turned: white, a red block in its top-left corner and a
/// blue one in the middle of its top edge.
fn marked(width: u32, height: u32) -> image::RgbImage {
    image::RgbImage::from_fn(width, height, |x, y| {
        if x < width / 4 && y < height / 2 {
            image::Rgb([220, 20, 20])
        } else if (width * 3 / 8..width * 5 / 8).contains(&x) && y < height / 4 {
            image::Rgb([20, 20, 220])
        } else {
            image::Rgb([245, 245, 245])
        }
    })
}

/// Red, blue, white or other, for each pixel.
fn classes(image: &image::RgbImage) -> Vec<u8> {
    image
        .pixels()
        .map(|p| match p.0 {
            [r, g, b] if r > 150 && g < 100 && b < 100 => b'r',
            [r, g, b] if b > 150 && r < 100 && g < 100 => b'b',
            [r, g, b] if r > 180 && g > 180 && b > 180 => b'w',
            _ => b'?',
        })
        .collect()
}

/// The PDF's first page as pdftoppm (Poppler, an independent reader) draws it at 72 dpi.
fn render(pdf: &Path) -> image::RgbImage {
    let stem = pdf.with_file_name("render");
    let out = std::process::Command::new("pdftoppm")
        .args(["-r", "72", "-singlefile", "-png"])
        .arg(pdf)
        .arg(&stem)
        .output()
        .expect("pdftoppm runs (poppler-utils, installed by .ci/run)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    image::load_from_memory(&std::fs::read(stem.with_extension("png")).unwrap()).unwrap().to_rgb8()
}

/// Whether the PDF at `pdf` shows `stored` as EXIF `orientation` says it is seen (as the image
/// crate turns it), but for a few pixels at the blocks' edges.
fn assert_seen_as(pdf: &Path, stored: &image::RgbImage, orientation: u8) {
    let mut expected = image::DynamicImage::ImageRgb8(stored.clone());
    expected.apply_orientation(Orientation::from_exif(orientation).unwrap());
    let expected = expected.to_rgb8();
    let seen = render(pdf);
    assert_eq!(seen.dimensions(), expected.dimensions(), "orientation {orientation}: the page's shape");
    let wrong = classes(&seen).iter().zip(classes(&expected)).filter(|(a, b)| **a != *b).count();
    let pixels = (expected.width() * expected.height()) as usize;
    assert!(wrong * 100 < 3 * pixels, "orientation {orientation}: {wrong} of {pixels} pixels differ");
}

#[test]
fn a_sideways_jpeg_turns_its_page_and_keeps_its_bytes() {
    let bytes = with_exif(&jpeg(&picture(320, 200, 3), 320, 200, 3), 6);
    let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
    result.unwrap();
    let document = Document::load(&output).unwrap();
    assert_eq!(first_image(&document, 1).content, bytes, "the DCT bytes untouched");
    let page_id = document.get_pages()[&1];
    let page = document.get_dictionary(page_id).unwrap();
    let media: Vec<f32> =
        page.get(b"MediaBox").unwrap().as_array().unwrap().iter().map(|v| v.as_float().unwrap()).collect();
    assert_eq!(media, [0.0, 0.0, 200.0, 320.0], "upright: as tall as the stored image is wide");
    let content = String::from_utf8(document.get_page_content(page_id)).unwrap();
    assert!(content.contains("0.0000 -320.0000 200.0000 0.0000 0.0000 320.0000 cm"), "{content}");
}

#[test]
fn a_jpeg_is_seen_upright_in_every_orientation() {
    let (w, h) = (64, 32);
    let stored = marked(w, h);
    let plain = jpeg(stored.as_raw(), w, h, 3);
    for orientation in 1..=8u8 {
        let bytes = with_exif(&plain, u16::from(orientation));
        let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
        result.unwrap();
        assert_seen_as(&output, &stored, orientation);
    }
}

#[test]
fn a_png_tiff_and_webp_are_seen_upright() {
    use ::tiff::encoder::{TiffEncoder, colortype};
    let (w, h) = (64, 32);
    let stored = marked(w, h);
    // A PNG with an eXIf chunk saying 8 (turn 90° anticlockwise to view).
    let mut info = ::png::Info::with_size(w, h);
    info.color_type = ::png::ColorType::Rgb;
    info.bit_depth = ::png::BitDepth::Eight;
    info.exif_metadata = Some(exif(8).into());
    let mut png_bytes = Vec::new();
    {
        let mut writer = ::png::Encoder::with_info(&mut png_bytes, info).unwrap().write_header().unwrap();
        writer.write_image_data(stored.as_raw()).unwrap();
    }
    // A TIFF whose Orientation tag says 7 (transverse).
    let mut tiff_bytes = Vec::new();
    {
        let mut encoder = TiffEncoder::new(Cursor::new(&mut tiff_bytes)).unwrap();
        let mut frame = encoder.new_image::<colortype::RGB8>(w, h).unwrap();
        frame.encoder().write_tag(::tiff::tags::Tag::Orientation, 7u16).unwrap();
        frame.write_data(stored.as_raw()).unwrap();
    }
    // A lossless WebP whose EXIF chunk says 3 (upside down).
    let mut webp_bytes = Vec::new();
    {
        use image::ImageEncoder;
        let mut encoder = image::codecs::webp::WebPEncoder::new_lossless(&mut webp_bytes);
        encoder.set_exif_metadata(exif(3)).unwrap();
        encoder.write_image(stored.as_raw(), w, h, image::ExtendedColorType::Rgb8).unwrap();
    }
    for (name, bytes, orientation) in [("PNG", png_bytes, 8), ("TIFF", tiff_bytes, 7), ("WebP", webp_bytes, 3)] {
        let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
        result.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_seen_as(&output, &stored, orientation);
    }
}

// ---- HEIF -------------------------------------------------------------------------------

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/images").join(name)).unwrap()
}

/// `fixtures/images/marker-64x48.*`: white, a red block in the top-left 16 × 12 pixels.
fn assert_the_marker(pdf: &Path) {
    let document = Document::load(pdf).unwrap();
    let image = first_image(&document, 1);
    assert_eq!(image.dict.get(b"Width").unwrap().as_i64().unwrap(), 64);
    assert_eq!(image.dict.get(b"Height").unwrap().as_i64().unwrap(), 48);
    let seen = render(pdf);
    assert_eq!(seen.dimensions(), (64, 48));
    let [r, g, b] = seen.get_pixel(4, 4).0;
    assert!(r > 180 && g < 90 && b < 90, "red at the top left: {r} {g} {b}");
    let [r, g, b] = seen.get_pixel(60, 44).0;
    assert!(r > 200 && g > 200 && b > 200, "white at the bottom right: {r} {g} {b}");
}

/// The marker picture stored as `name`, detected as `label`, becomes one page showing it.
fn assert_converts_to_the_marker_page(name: &str, label: &str) {
    let bytes = fixture(name);
    assert_eq!(crate::detect::detect_bytes(&bytes).label(), label);
    let (_dir, result, output) = convert(&bytes, DEFAULT_MAX_INFLATE_BYTES);
    assert_eq!(result.unwrap().pages, 1);
    assert_the_marker(&output);
}

#[test]
fn a_heic_photo_becomes_a_page_of_its_pixels() {
    assert_converts_to_the_marker_page("marker-64x48.heic", "heif");
}

#[test]
fn an_avif_image_becomes_a_page_of_its_pixels() {
    assert_converts_to_the_marker_page("marker-64x48.avif", "avif");
}

#[test]
fn a_heic_larger_than_the_cap_is_refused_before_decoding() {
    let bytes = fixture("marker-64x48.heic");
    // heif-enc stores the 64 × 48 picture as a grid of one 64 × 64 tile: the tile is the
    // largest image libheif decodes.
    assert_eq!(heif::largest_extent(&bytes), Some((64, 64)));
    let (_dir, result, _) = convert(&bytes, 64 * 64 * 4 - 1);
    assert!(matches!(result, Err(PdfError::InflatesTooMuch { .. })), "{result:?}");
}

#[test]
fn a_damaged_heic_fails_with_a_reason() {
    let bytes = fixture("marker-64x48.heic");
    // The boxes that say what the image is, without its coded data.
    let (_dir, result, _) = convert(&bytes[..bytes.len() - 120], DEFAULT_MAX_INFLATE_BYTES);
    assert!(
        matches!(&result, Err(PdfError::Unreadable { detail }) if detail.contains("heif-convert could not decode it")),
        "{result:?}"
    );
    // Not even those.
    let (_dir, result, _) = convert(&bytes[..40], DEFAULT_MAX_INFLATE_BYTES);
    assert!(matches!(&result, Err(PdfError::Unreadable { .. })), "{result:?}");
}
