//! `shrink` and `topdf` through the real binary and its contained child, as an admin runs them
//! with `docket process FILE --op NAME -o OUT`.

use std::path::Path;

use lopdf::{Dictionary, Document, Object, Stream, dictionary};

use crate::support::child::{self, stderr};
use crate::support::{ghostscript, input_and_output, render_with_ghostscript};

/// A one-page PDF of 288 × 360 points that draws a 1200 × 1500 pixel JPEG (300 dpi) over the
/// page, with a line of text.
fn scan_pdf(path: &Path) {
    let (w, h) = (1200u16, 1500u16);
    let pixels: Vec<u8> = (0..u32::from(h))
        .flat_map(|y| (0..u32::from(w)).flat_map(move |x| [(x / 5) as u8, (y / 6) as u8, ((x + y) / 11) as u8]))
        .collect();
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 95).encode(&pixels, w, h, jpeg_encoder::ColorType::Rgb).expect("encode");
    let image = Stream::new(
        dictionary! {
            "Type" => "XObject", "Subtype" => "Image", "Width" => i64::from(w), "Height" => i64::from(h),
            "ColorSpace" => "DeviceRGB", "BitsPerComponent" => 8, "Filter" => "DCTDecode",
        },
        jpeg,
    )
    .with_compression(false);
    image_page_pdf(path, image, true);
}

/// A one-page PDF of 288 × 360 points that draws `image` over the page, with a line of text when
/// `with_text`.
fn image_page_pdf(path: &Path, image: Stream, with_text: bool) {
    let mut doc = Document::with_version("1.7");
    let pages_id = doc.new_object_id();
    let image = doc.add_object(image);
    let mut resources = dictionary! { "XObject" => dictionary! { "Im0" => image } };
    let mut content = b"q 288 0 0 360 0 0 cm /Im0 Do Q".to_vec();
    if with_text {
        let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
        resources.set("Font", dictionary! { "F1" => font });
        content.extend_from_slice(b" BT /F1 12 Tf 20 20 Td (A scanned page) Tj ET");
    }
    let contents = doc.add_object(Stream::new(Dictionary::new(), content));
    let page = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => contents,
        "MediaBox" => vec![0.into(), 0.into(), 288.into(), 360.into()],
        "Resources" => resources,
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    doc.save(path).expect("save");
}

/// The first image of `document`.
fn first_image(document: &Document) -> &Stream {
    document
        .objects
        .values()
        .filter_map(|o| o.as_stream().ok())
        .find(|s| s.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Image".as_slice()))
        .expect("an image")
}

/// `docket process INPUT --op OP -o OUTPUT`, which must succeed (its stderr says why not).
fn process_succeeds(input: &Path, op: &str, output: &Path) {
    let out = child::process(input, Some(op), output, None);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn process_shrinks_a_scan_through_the_contained_child() {
    let (_dir, input, output) = input_and_output("scan.pdf", "small.pdf");
    scan_pdf(&input);
    process_succeeds(&input, "shrink", &output);

    let before = Document::load(&input).expect("input");
    let after = Document::load(&output).expect("the output is a PDF");
    assert_eq!(after.get_pages().len(), 1);
    assert_eq!(after.extract_text(&[1]).expect("text"), before.extract_text(&[1]).expect("text"));
    assert!(std::fs::metadata(&output).expect("out").len() < std::fs::metadata(&input).expect("in").len());
    let image = first_image(&after);
    assert_eq!(image.dict.get(b"Width").and_then(Object::as_i64).expect("width"), 600, "150 dpi");
    assert_eq!(image.dict.get(b"Filter").and_then(Object::as_name).expect("filter"), b"DCTDecode");
}

#[test]
fn process_turns_a_jpeg_into_a_pdf_holding_its_bytes() {
    let (_dir, input, output) = input_and_output("photo.jpg", "photo.pdf");
    let pixels: Vec<u8> = (0..64u32 * 48).map(|i| (i % 251) as u8).collect();
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 80).encode(&pixels, 64, 48, jpeg_encoder::ColorType::Luma).expect("encode");
    std::fs::write(&input, &jpeg).expect("write");
    process_succeeds(&input, "topdf", &output);
    let doc = Document::load(&output).expect("the output is a PDF");
    assert_eq!(doc.get_pages().len(), 1);
    assert!(doc.objects.values().filter_map(|o| o.as_stream().ok()).any(|s| s.content == jpeg));
}

/// The width, height and raster of a binary PBM (`P4`, comments allowed in the header): rows of
/// packed bits, a set bit black.
fn pbm_raster(pbm: &[u8]) -> (usize, usize, &[u8]) {
    let mut at = 0;
    let mut fields = Vec::new();
    while fields.len() < 3 {
        while pbm[at].is_ascii_whitespace() {
            at += 1;
        }
        if pbm[at] == b'#' {
            while pbm[at] != b'\n' {
                at += 1;
            }
            continue;
        }
        let start = at;
        while !pbm[at].is_ascii_whitespace() {
            at += 1;
        }
        fields.push(std::str::from_utf8(&pbm[start..at]).expect("an ASCII header").to_owned());
    }
    assert_eq!(fields[0], "P4", "a binary PBM");
    let number = |f: &str| f.parse::<usize>().expect("a number");
    (number(&fields[1]), number(&fields[2]), &pbm[at + 1..])
}

/// A bilevel page as a fax holds it: a set bit is black, rows start on a byte.
fn fax_page(width: usize, height: usize) -> Vec<u8> {
    let row_bytes = width.div_ceil(8);
    let mut bits = vec![0u8; row_bytes * height];
    for y in 0..height {
        for x in 0..width {
            let frame = x < 4 || y < 4 || x + 4 >= width || y + 4 >= height;
            let text = (y / 7) % 3 == 1 && (x / 6) % 5 != 0 && (x + y / 3) % 11 != 0 && x > 30 && x + 30 < width;
            if frame || text {
                bits[y * row_bytes + x / 8] |= 0x80 >> (x % 8);
            }
        }
    }
    bits
}

/// A Group 4 TIFF from a fax machine becomes a PDF that Ghostscript, an independent reader,
/// renders to the fax's own pixels.
#[test]
fn process_turns_a_fax_tiff_into_a_pdf_that_renders_its_pixels() {
    let (width, height) = (400usize, 300usize);
    let bits = fax_page(width, height);
    let row_bytes = width.div_ceil(8);
    let mut encoder = fax::encoder::Encoder::new(fax::VecWriter::new());
    for row in bits.chunks(row_bytes) {
        let pels =
            (0..width).map(|x| if row[x / 8] & (0x80 >> (x % 8)) != 0 { fax::Color::Black } else { fax::Color::White });
        encoder.encode_line(pels, width as u16).expect("encodes");
    }
    let g4 = encoder.finish().expect("finishes").finish();
    let (dir, input, output) = input_and_output("fax.tiff", "fax.pdf");
    std::fs::write(&input, fax::tiff::wrap(&g4, width as u32, height as u32)).expect("write");
    process_succeeds(&input, "topdf", &output);

    let rendered = dir.path().join("fax.pbm");
    render_with_ghostscript("pbmraw", 200, &output, &rendered);
    let pbm = std::fs::read(&rendered).expect("the rendering");
    let (w, h, raster) = pbm_raster(&pbm);
    assert!(w.abs_diff(width) <= 1 && h.abs_diff(height) <= 1, "rendered at {w}×{h}");
    let rendered_row = w.div_ceil(8);
    let pixel = |data: &[u8], row: usize, x: usize, y: usize| data[y * row + x / 8] & (0x80 >> (x % 8)) != 0;
    let (mut differ, mut black) = (0usize, 0usize);
    for y in 0..height.min(h) {
        for x in 0..width.min(w) {
            let original = pixel(&bits, row_bytes, x, y);
            black += usize::from(original);
            differ += usize::from(original != pixel(raster, rendered_row, x, y));
        }
    }
    assert!(black > width * height / 10, "the fax has black to compare");
    assert!(differ * 100 < width * height, "{differ} of {} pixels differ", width * height);
}

/// A one-page PDF of 288 × 360 points that draws a 1200 × 1500 pixel CMYK image (300 dpi,
/// Flate) over the page: cyan, magenta, yellow and black in four bands across smooth ramps.
fn cmyk_scan_pdf(path: &Path) {
    let (w, h) = (1200u32, 1500u32);
    let pixels: Vec<u8> = (0..h)
        .flat_map(|y| {
            (0..w).flat_map(move |x| {
                let band = (y * 4 / h) as usize;
                let mut cmyk = [(x / 12) as u8, (x / 24) as u8, (y / 20) as u8, 0];
                cmyk[band] = cmyk[band].saturating_add(140);
                cmyk
            })
        })
        .collect();
    let mut image = Stream::new(
        dictionary! {
            "Type" => "XObject", "Subtype" => "Image", "Width" => i64::from(w), "Height" => i64::from(h),
            "ColorSpace" => "DeviceCMYK", "BitsPerComponent" => 8,
        },
        pixels,
    );
    image.compress().expect("deflate");
    image_page_pdf(path, image, false);
}

/// The RGB pixels of the one page of `pdf` at 36 dpi, as Ghostscript or Poppler renders it.
fn rendered_rgb(pdf: &Path, reader: &str) -> Vec<u8> {
    let dir = pdf.parent().expect("folder");
    let stem = format!("{}-{reader}", pdf.file_stem().and_then(|s| s.to_str()).expect("stem"));
    let (command, ppm) = match reader {
        "gs" => {
            let ppm = dir.join(format!("{stem}.ppm"));
            (ghostscript("ppmraw", 36, pdf, &ppm), ppm)
        }
        _ => {
            let mut pdftoppm = std::process::Command::new("pdftoppm");
            pdftoppm.args(["-r", "36", "-singlefile"]).arg(pdf).arg(dir.join(&stem));
            (pdftoppm, dir.join(format!("{stem}.ppm")))
        }
    };
    let mut command = command;
    let out = command.output().unwrap_or_else(|e| panic!("{reader} runs (installed by .ci/run): {e}"));
    assert!(out.status.success(), "{reader}: {}", String::from_utf8_lossy(&out.stderr));
    let ppm = std::fs::read(&ppm).expect("the rendering");
    // P6, width, height, maxval, then the samples after one whitespace byte.
    let mut fields = 0;
    let mut at = 0;
    while fields < 4 {
        while ppm[at].is_ascii_whitespace() {
            at += 1;
        }
        while !ppm[at].is_ascii_whitespace() {
            at += 1;
        }
        fields += 1;
    }
    ppm[at + 1..].to_vec()
}

/// A CMYK scan shrinks to a CMYK JPEG that two independent readers render in the original's
/// colours (an inverted or channel-swapped JPEG would differ by a hundred levels or more).
#[test]
fn process_shrinks_a_cmyk_scan_to_an_image_readers_show_in_its_colours() {
    let (_dir, input, output) = input_and_output("cmyk.pdf", "cmyk-shrink.pdf");
    cmyk_scan_pdf(&input);
    process_succeeds(&input, "shrink", &output);
    let after = Document::load(&output).expect("the output is a PDF");
    let image = first_image(&after);
    assert_eq!(image.dict.get(b"Filter").and_then(Object::as_name).expect("filter"), b"DCTDecode");
    assert_eq!(image.dict.get(b"Width").and_then(Object::as_i64).expect("width"), 600, "150 dpi");

    for reader in ["gs", "pdftoppm"] {
        let (before, after) = (rendered_rgb(&input, reader), rendered_rgb(&output, reader));
        assert_eq!(before.len(), after.len(), "{reader}: same page size");
        let error: u64 = before.iter().zip(&after).map(|(a, b)| u64::from(a.abs_diff(*b))).sum();
        let mean = error as f64 / before.len() as f64;
        assert!(mean < 6.0, "{reader}: mean difference {mean:.1} levels");
    }
}

/// An iPhone's HEIC photo (`fixtures/images/marker-64x48.heic`) becomes a PDF page through
/// libheif's heif-convert, run inside the contained child.
#[test]
fn process_turns_a_heic_photo_into_a_pdf() {
    let (_dir, input, output) = input_and_output("IMG_0001.HEIC", "IMG_0001.pdf");
    std::fs::write(&input, crate::support::fixture("images/marker-64x48.heic")).expect("write");
    process_succeeds(&input, "topdf", &output);
    let doc = Document::load(&output).expect("the output is a PDF");
    assert_eq!(doc.get_pages().len(), 1);
    assert_eq!(first_image(&doc).dict.get(b"Width").and_then(Object::as_i64).expect("width"), 64);
}

/// On a machine without heif-convert a HEIC photo fails as the operation's, not as a damaged
/// file.
#[test]
fn process_without_heif_convert_says_topdf_could_not_process_it() {
    let (_dir, input, output) = input_and_output("IMG_0001.HEIC", "IMG_0001.pdf");
    std::fs::write(&input, crate::support::fixture("images/marker-64x48.heic")).expect("write");
    let empty = tempfile::tempdir().expect("tempdir");
    let out = child::command()
        .args(["process", input.to_str().expect("utf8"), "--op", "topdf", "-o", output.to_str().expect("utf8")])
        .env("PATH", empty.path())
        .output()
        .expect("the docket binary runs");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("topdf could not process"), "{}", stderr(&out));
}
