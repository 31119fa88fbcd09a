//! `shrink` on whole documents, and the builders of PDFs and images its tests (and those of
//! `pdf::images`) share.

use std::path::PathBuf;

use lopdf::{Dictionary, Object, Stream, dictionary};

use super::decode::decode_jpeg_as;
use super::drawn::{XObject, page_resources, xobjects};
use super::*;
use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;

/// A smooth but not flat picture (gradients and waves), `components` per pixel: JPEG
/// compresses it as it does a photo, neither to nothing nor not at all.
pub(crate) fn picture(width: u32, height: u32, components: usize) -> Vec<u8> {
    let mut pixels = Vec::with_capacity(width as usize * height as usize * components);
    for y in 0..height {
        for x in 0..width {
            for c in 0..components {
                let wave = ((f64::from(x) / 7.0 + c as f64).sin() * (f64::from(y) / 11.0).cos() * 60.0) as i32;
                let value = (x * 255 / width) as i32 / 2 + (y * 255 / height) as i32 / 3 + wave + 40;
                pixels.push(value.clamp(0, 255) as u8);
            }
        }
    }
    pixels
}

pub(crate) fn jpeg(pixels: &[u8], width: u32, height: u32, components: usize) -> Vec<u8> {
    let colour = if components == 1 { jpeg_encoder::ColorType::Luma } else { jpeg_encoder::ColorType::Rgb };
    let mut out = Vec::new();
    jpeg_encoder::Encoder::new(&mut out, 92).encode(pixels, width as u16, height as u16, colour).unwrap();
    out
}

/// A one-page PDF of `page` points whose content draws `image` over the page, with a line
/// of text above it.
pub(crate) fn page_with_image(image: Stream, page: (f64, f64)) -> Document {
    let mut document = Document::with_version("1.7");
    let pages_id = document.new_object_id();
    let font = document.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
    });
    let image_id = document.add_object(image);
    let content =
        format!("q {} 0 0 {} 0 0 cm /Im0 Do Q BT /F1 12 Tf 20 20 Td (Scanned page one) Tj ET", page.0, page.1);
    let content_id = document.add_object(Stream::new(Dictionary::new(), content.into_bytes()));
    let page_id = document.add_object(dictionary! {
        "Type" => "Page",
        "Parent" => pages_id,
        "MediaBox" => vec![0.into(), 0.into(), Object::Real(page.0 as f32), Object::Real(page.1 as f32)],
        "Resources" => dictionary! {
            "XObject" => dictionary! { "Im0" => image_id },
            "Font" => dictionary! { "F1" => font },
        },
        "Contents" => content_id,
    });
    document.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page_id.into()], "Count" => 1 }),
    );
    let catalog = document.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    document.trailer.set("Root", catalog);
    document
}

pub(crate) fn image_stream(width: u32, height: u32, space: &str, bits: i64, filter: &str, data: Vec<u8>) -> Stream {
    let dict = dictionary! {
        "Type" => "XObject", "Subtype" => "Image", "Width" => i64::from(width), "Height" => i64::from(height),
        "ColorSpace" => space, "BitsPerComponent" => bits, "Filter" => filter,
    };
    Stream::new(dict, data).with_compression(false)
}

pub(super) fn deflated(data: &[u8]) -> Vec<u8> {
    crate::pdf::optimize::deflate_best(data)
}

struct Shrunk {
    _dir: tempfile::TempDir,
    input: PathBuf,
    output: PathBuf,
    result: Result<OptimizeReport, PdfError>,
}

fn shrink_document(mut document: Document, max_inflate: usize) -> Shrunk {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pdf");
    let output = dir.path().join("out.pdf");
    document.save(&input).unwrap();
    let settings = Settings::with_max_inflate(max_inflate);
    let result = shrink(&input, &output, &settings);
    Shrunk { _dir: dir, input, output, result }
}

/// The images of the first page of the PDF at `path`: their dictionaries and data.
fn images_of(path: &std::path::Path) -> Vec<Stream> {
    let document = Document::load(path).unwrap();
    let page = document.page_iter().next().unwrap();
    let resources = page_resources(&document, page);
    xobjects(&document, &resources)
        .values()
        .filter(|(_, kind)| *kind == XObject::Image)
        .map(|(id, _)| document.get_object(*id).unwrap().as_stream().unwrap().clone())
        .collect()
}

fn int(stream: &Stream, key: &[u8]) -> i64 {
    stream.dict.get(key).unwrap().as_i64().unwrap()
}

fn text_of(path: &std::path::Path) -> String {
    let document = Document::load(path).unwrap();
    document.extract_text(&[1]).unwrap()
}

/// 1200 × 1500 pixels drawn over 288 × 360 points: 300 dpi.
const SCAN: (u32, u32) = (1200, 1500);
const SCAN_PAGE: (f64, f64) = (288.0, 360.0);

/// The image of the scan page drawing `image` after `shrink`, which must have rewritten it as
/// a JPEG of 600 × 750 pixels (150 dpi).
fn shrunk_scan_to_150_dpi_jpeg(image: Stream) -> Stream {
    let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
    let report = shrunk.result.unwrap();
    assert!(!report.kept_original(), "{report:?}");
    let mut images = images_of(&shrunk.output);
    assert_eq!(images.len(), 1);
    assert_eq!((int(&images[0], b"Width"), int(&images[0], b"Height")), (600, 750));
    assert_eq!(images[0].dict.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
    images.remove(0)
}

#[test]
fn a_300_dpi_jpeg_becomes_a_150_dpi_jpeg_and_the_text_stays() {
    let (w, h) = SCAN;
    let image = image_stream(w, h, "DeviceRGB", 8, "DCTDecode", jpeg(&picture(w, h, 3), w, h, 3));
    let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
    let report = shrunk.result.unwrap();
    assert!(!report.kept_original(), "{report:?}");
    assert_eq!(report.pages, 1);
    let images = images_of(&shrunk.output);
    assert_eq!(images.len(), 1);
    assert_eq!((int(&images[0], b"Width"), int(&images[0], b"Height")), (600, 750));
    assert_eq!(images[0].dict.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
    assert_eq!(text_of(&shrunk.output), text_of(&shrunk.input));
}

#[test]
fn an_rgb_scan_of_grey_pixels_becomes_a_grey_jpeg_and_one_with_a_colour_mark_stays_rgb() {
    let (w, h) = SCAN;
    let grey: Vec<u8> = picture(w, h, 1).iter().flat_map(|&v| [v, v.saturating_add(1), v]).collect();
    let image = image_stream(w, h, "DeviceRGB", 8, "DCTDecode", jpeg(&grey, w, h, 3));
    let shrunk = shrunk_scan_to_150_dpi_jpeg(image);
    assert_eq!(shrunk.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceGray");
    assert_eq!(decode_jpeg_as(&shrunk.content, 600, 750, 1).map(|p| p.len()), Some(600 * 750));

    let mut marked = grey;
    for y in 100..140 {
        let row = y * w as usize * 3;
        for x in 100..140 {
            marked[row + x * 3..row + x * 3 + 3].copy_from_slice(&[200, 30, 30]);
        }
    }
    let image = image_stream(w, h, "DeviceRGB", 8, "DCTDecode", jpeg(&marked, w, h, 3));
    let shrunk = shrunk_scan_to_150_dpi_jpeg(image);
    assert_eq!(shrunk.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceRGB");
}

#[test]
fn a_300_dpi_flate_image_with_a_predictor_becomes_a_150_dpi_jpeg() {
    let (w, h) = SCAN;
    let pixels = picture(w, h, 1);
    // PNG predictor 15, every row "Sub"-filtered.
    let mut predicted = Vec::new();
    for row in pixels.chunks(w as usize) {
        predicted.push(1);
        predicted.push(row[0]);
        predicted.extend(row.windows(2).map(|p| p[1].wrapping_sub(p[0])));
    }
    let mut image = image_stream(w, h, "DeviceGray", 8, "FlateDecode", deflated(&predicted));
    image.dict.set("DecodeParms", dictionary! { "Predictor" => 15, "Columns" => i64::from(w), "Colors" => 1 });
    let images = [shrunk_scan_to_150_dpi_jpeg(image)];
    assert!(!images[0].dict.has(b"DecodeParms"));
    assert_eq!(images[0].dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceGray");
    // The JPEG decodes to the new size, in gray.
    assert!(decode_jpeg_as(&images[0].content, 600, 750, 1).is_some());
}

#[test]
fn a_300_dpi_cmyk_flate_image_becomes_a_150_dpi_cmyk_jpeg_without_an_adobe_marker() {
    let (w, h) = SCAN;
    let pixels = picture(w, h, 4);
    let image = image_stream(w, h, "DeviceCMYK", 8, "FlateDecode", deflated(&pixels));
    let images = [shrunk_scan_to_150_dpi_jpeg(image)];
    assert_eq!(images[0].dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceCMYK");
    assert!(!images[0].dict.has(b"Decode"));
    // No Adobe marker: readers differ on whether it means inverted CMYK; without it, every
    // reader takes the samples as they are.
    assert!(!images[0].content.windows(5).any(|w| w == b"Adobe"));
    // Its colours are checked where independent readers render it: tests/it/operations_lossy.rs.
}

#[test]
fn an_indexed_image_becomes_a_jpeg_in_its_base_colour_space() {
    let (w, h) = SCAN;
    let indices: Vec<u8> = picture(w, h, 1).iter().map(|v| v / 16).collect();
    let palette: Vec<u8> = (0..16u8).flat_map(|i| [i * 16, 255 - i * 16, i * 8]).collect();
    let mut image = image_stream(w, h, "DeviceRGB", 8, "FlateDecode", deflated(&indices));
    image.dict.set(
        "ColorSpace",
        vec![
            "Indexed".into(),
            "DeviceRGB".into(),
            15.into(),
            Object::String(palette, lopdf::StringFormat::Hexadecimal),
        ],
    );
    let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
    shrunk.result.unwrap();
    let images = images_of(&shrunk.output);
    // Either shrunk into an RGB JPEG, or (not smaller) kept as the indexed original.
    match images[0].dict.get(b"Filter").unwrap().as_name().unwrap() {
        b"DCTDecode" => {
            assert_eq!(images[0].dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceRGB");
            assert_eq!(int(&images[0], b"Width"), 600);
        }
        _ => assert_eq!(int(&images[0], b"Width"), i64::from(w)),
    }
}

#[test]
fn a_300_dpi_jpeg_2000_becomes_a_150_dpi_jpeg() {
    // fixtures/images/photo-600x400.jp2: RGB, no /ColorSpace in the PDF (the codestream's).
    let jp2 = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/images/photo-600x400.jp2")).unwrap();
    let mut image = image_stream(600, 400, "DeviceRGB", 8, "JPXDecode", jp2.clone());
    image.dict.remove(b"ColorSpace");
    image.dict.remove(b"BitsPerComponent");
    let shrunk = shrink_document(page_with_image(image, (144.0, 96.0)), DEFAULT_MAX_INFLATE_BYTES);
    shrunk.result.unwrap();
    let images = images_of(&shrunk.output);
    let image = &images[0];
    assert_eq!(image.dict.get(b"Filter").unwrap().as_name().unwrap(), b"DCTDecode");
    assert_eq!((int(image, b"Width"), int(image, b"Height")), (300, 200));
    assert_eq!(image.dict.get(b"ColorSpace").unwrap().as_name().unwrap(), b"DeviceRGB");
    assert!(image.content.len() < jp2.len(), "{} bytes, the JPEG 2000 {}", image.content.len(), jp2.len());
    // The picture is still the picture: its last pixel keeps its colour, roughly.
    let decoded = decode_jpeg_as(&image.content, 300, 200, 3).unwrap();
    let original = jpx_pixels(&jp2);
    let (small, big) = (&decoded[(199 * 300 + 299) * 3..][..3], &original[(399 * 600 + 599) * 3..][..3]);
    assert!(small.iter().zip(big).all(|(a, b)| a.abs_diff(*b) < 24), "{small:?} vs {big:?}");
}

pub(super) fn jpx_pixels(jp2: &[u8]) -> Vec<u8> {
    hayro_jpeg2000::Image::new(jp2, &hayro_jpeg2000::DecodeSettings::default()).unwrap().decode().unwrap()
}

#[test]
fn a_jpeg_2000_with_an_alpha_channel_or_a_cmyk_space_stays_as_it_is() {
    let jp2 = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/images/photo-600x400.jp2")).unwrap();
    let mut image = image_stream(600, 400, "DeviceCMYK", 8, "JPXDecode", jp2.clone());
    image.dict.set("SMaskInData", 1);
    let shrunk = shrink_document(page_with_image(image, (144.0, 96.0)), DEFAULT_MAX_INFLATE_BYTES);
    shrunk.result.unwrap();
    assert_eq!(images_of(&shrunk.output)[0].content, jp2);
}

#[test]
fn an_image_at_the_target_already_is_left_as_it_is() {
    // 600 pixels over 288 points: 150 dpi.
    let (w, h) = (600, 750);
    let data = jpeg(&picture(w, h, 3), w, h, 3);
    let image = image_stream(w, h, "DeviceRGB", 8, "DCTDecode", data.clone());
    let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
    shrunk.result.unwrap();
    let images = images_of(&shrunk.output);
    assert_eq!(images[0].content, data, "the JPEG's bytes are the original's");
    assert_eq!(int(&images[0], b"Width"), 600);
}

/// A bilevel "page of text" (`DeviceGray` bits: 0 is black): rows of glyph-sized blobs of
/// varying widths, placed by a fixed pseudo-random sequence, as a scan of print looks.
fn bilevel_text_page(width: u32, height: u32) -> Vec<u8> {
    let row_bytes = (width as usize).div_ceil(8);
    let mut bits = vec![0xFFu8; row_bytes * height as usize];
    let mut seed = 12_345u32;
    let mut next = || {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        (seed >> 16) as usize
    };
    for line in (40..height as usize - 60).step_by(50) {
        let mut x = 60;
        while x + 40 < width as usize - 60 {
            // A glyph: a solid blob whose edges wander a pixel at a time, row by row.
            let (glyph, tall) = (8 + next() % 18, 20 + next() % 12);
            let (mut left, mut right) = (x, x + glyph);
            for y in line + (32 - tall)..line + 32 {
                left = (left + next() % 3).saturating_sub(1).clamp(x, x + glyph / 2);
                right = (right + next() % 3).saturating_sub(1).clamp(x + glyph / 2 + 1, x + glyph);
                for gx in left..right {
                    bits[y * row_bytes + gx / 8] &= !(0x80 >> (gx % 8));
                }
            }
            x += glyph + 4 + if next() % 6 == 0 { 20 } else { 0 };
        }
    }
    bits
}

#[test]
fn a_bilevel_scan_becomes_group_4_at_its_own_resolution() {
    let (w, h) = (1700, 2200);
    let bits = bilevel_text_page(w, h);
    let flate = deflated(&bits);
    let image = image_stream(w, h, "DeviceGray", 1, "FlateDecode", flate.clone());
    let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
    shrunk.result.unwrap();
    let images = images_of(&shrunk.output);
    let image = &images[0];
    assert_eq!(image.dict.get(b"Filter").unwrap().as_name().unwrap(), b"CCITTFaxDecode");
    assert_eq!((int(image, b"Width"), int(image, b"Height")), (i64::from(w), i64::from(h)));
    assert_eq!(int(image, b"BitsPerComponent"), 1);
    let parameters = image.dict.get(b"DecodeParms").unwrap().as_dict().unwrap();
    assert_eq!(parameters.get(b"K").unwrap().as_i64().unwrap(), -1);
    assert_eq!(parameters.get(b"Columns").unwrap().as_i64().unwrap(), i64::from(w));
    assert!(image.content.len() < flate.len(), "G4 {} bytes, Flate {}", image.content.len(), flate.len());
    // The same pixels: black where the original had a 0 bit.
    let decoded = crate::pdf::ccitt::tests::as_gray(&image.content, w, h);
    assert!(decoded == bits, "the decoded pixels differ from the original's");
}

#[test]
fn a_bilevel_image_group_4_would_not_make_smaller_stays_as_it_is() {
    // Vertical stripes deflate to almost nothing: Group 4 would not be smaller.
    let (w, h) = (2400, 3000);
    let row_bytes = (w as usize).div_ceil(8);
    let stripes: Vec<u8> =
        (0..row_bytes * h as usize).map(|i| if (i / row_bytes) % 40 < 3 { 0x00 } else { 0xF7 }).collect();
    let image = image_stream(w, h, "DeviceGray", 1, "FlateDecode", deflated(&stripes));
    let shrunk = shrink_document(page_with_image(image, SCAN_PAGE), DEFAULT_MAX_INFLATE_BYTES);
    shrunk.result.unwrap();
    let images = images_of(&shrunk.output);
    assert_eq!(images[0].dict.get(b"Filter").unwrap().as_name().unwrap(), b"FlateDecode");
    assert_eq!(int(&images[0], b"BitsPerComponent"), 1);
}

#[test]
fn an_image_with_a_soft_mask_keeps_a_correct_one() {
    let (w, h) = SCAN;
    let mask = image_stream(w, h, "DeviceGray", 8, "FlateDecode", deflated(&picture(w, h, 1)));
    let mut document = Document::with_version("1.7");
    let mask_id = document.add_object(mask);
    let mut image = image_stream(w, h, "DeviceRGB", 8, "DCTDecode", jpeg(&picture(w, h, 3), w, h, 3));
    image.dict.set("SMask", mask_id);
    let mut page = page_with_image(image, SCAN_PAGE);
    // Move the mask into the page's document under a fresh id.
    let moved = page.add_object(document.objects.remove(&mask_id).unwrap());
    for object in page.objects.values_mut() {
        if let Ok(stream) = object.as_stream_mut()
            && stream.dict.has(b"SMask")
        {
            stream.dict.set("SMask", moved);
        }
    }
    let shrunk = shrink_document(page, DEFAULT_MAX_INFLATE_BYTES);
    shrunk.result.unwrap();
    let images = images_of(&shrunk.output);
    let reloaded = Document::load(&shrunk.output).unwrap();
    let smask = images[0].dict.get(b"SMask").unwrap().as_reference().unwrap();
    let smask = reloaded.get_object(smask).unwrap().as_stream().unwrap();
    assert_eq!(smask.dict.get(b"Subtype").unwrap().as_name().unwrap(), b"Image");
    assert_eq!(int(smask, b"Width"), i64::from(w), "the soft mask keeps its own size");
    assert_eq!(int(&images[0], b"Width"), 600);
}

#[test]
fn a_text_pdf_never_gets_bigger() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pdf/text-20pages.pdf");
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.pdf");
    let report = shrink(&fixture, &output, &Settings::with_max_inflate(DEFAULT_MAX_INFLATE_BYTES)).unwrap();
    assert!(report.output_bytes <= report.input_bytes, "{report:?}");
    assert_eq!(report.pages, 20);
}

#[test]
fn an_image_that_inflates_past_the_cap_fails_the_run() {
    // Declares 100 × 100 pixels but inflates to 8 MiB: refused while decoding.
    let bomb = deflated(&vec![0x80; 8 << 20]);
    let image = image_stream(100, 100, "DeviceGray", 8, "FlateDecode", bomb);
    let shrunk = shrink_document(page_with_image(image, (10.0, 10.0)), 4 << 20);
    assert!(
        matches!(shrunk.result, Err(PdfError::InflatesTooMuch { limit }) if limit == 4 << 20),
        "{:?}",
        shrunk.result
    );
    // Declares pixels that would take more than the cap: refused before decoding.
    let image = image_stream(4000, 4000, "DeviceRGB", 8, "FlateDecode", deflated(&[0; 1000]));
    let shrunk = shrink_document(page_with_image(image, (10.0, 10.0)), 4 << 20);
    assert!(matches!(shrunk.result, Err(PdfError::InflatesTooMuch { .. })), "{:?}", shrunk.result);
}
