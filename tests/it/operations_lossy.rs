//! `shrink` and `topdf` through the real binary and its contained child, as an admin runs them
//! with `docket process FILE --op NAME -o OUT`.

use std::path::Path;

use lopdf::{Dictionary, Document, Object, Stream, dictionary};

use crate::support::child::{self, stderr};

/// A one-page PDF of 288 × 360 points that draws a 1200 × 1500 pixel JPEG (300 dpi) over the
/// page, with a line of text.
fn scan_pdf(path: &Path) {
    let (w, h) = (1200u16, 1500u16);
    let pixels: Vec<u8> = (0..u32::from(h))
        .flat_map(|y| (0..u32::from(w)).flat_map(move |x| [(x / 5) as u8, (y / 6) as u8, ((x + y) / 11) as u8]))
        .collect();
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 95).encode(&pixels, w, h, jpeg_encoder::ColorType::Rgb).expect("encode");
    let mut doc = Document::with_version("1.7");
    let pages_id = doc.new_object_id();
    let image = doc.add_object(
        Stream::new(
            dictionary! {
                "Type" => "XObject", "Subtype" => "Image", "Width" => i64::from(w), "Height" => i64::from(h),
                "ColorSpace" => "DeviceRGB", "BitsPerComponent" => 8, "Filter" => "DCTDecode",
            },
            jpeg,
        )
        .with_compression(false),
    );
    let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
    let content = b"q 288 0 0 360 0 0 cm /Im0 Do Q BT /F1 12 Tf 20 20 Td (A scanned page) Tj ET".to_vec();
    let contents = doc.add_object(Stream::new(Dictionary::new(), content));
    let page = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => contents,
        "MediaBox" => vec![0.into(), 0.into(), 288.into(), 360.into()],
        "Resources" => dictionary! { "XObject" => dictionary! { "Im0" => image }, "Font" => dictionary! { "F1" => font } },
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    doc.save(path).expect("save");
}

fn process(input: &Path, op: &str, output: &Path) -> std::process::Output {
    child::output(&["process", input.to_str().expect("utf8"), "--op", op, "-o", output.to_str().expect("utf8")], None)
}

#[test]
fn process_shrinks_a_scan_through_the_contained_child() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (input, output) = (dir.path().join("scan.pdf"), dir.path().join("small.pdf"));
    scan_pdf(&input);
    let out = process(&input, "shrink", &output);
    assert!(out.status.success(), "{}", stderr(&out));

    let before = Document::load(&input).expect("input");
    let after = Document::load(&output).expect("the output is a PDF");
    assert_eq!(after.get_pages().len(), 1);
    assert_eq!(after.extract_text(&[1]).expect("text"), before.extract_text(&[1]).expect("text"));
    assert!(std::fs::metadata(&output).expect("out").len() < std::fs::metadata(&input).expect("in").len());
    let image = after
        .objects
        .values()
        .filter_map(|o| o.as_stream().ok())
        .find(|s| s.dict.get(b"Subtype").and_then(Object::as_name).ok() == Some(b"Image".as_slice()))
        .expect("an image");
    assert_eq!(image.dict.get(b"Width").and_then(Object::as_i64).expect("width"), 600, "150 dpi");
    assert_eq!(image.dict.get(b"Filter").and_then(Object::as_name).expect("filter"), b"DCTDecode");
}

#[test]
fn process_turns_a_jpeg_into_a_pdf_holding_its_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (input, output) = (dir.path().join("photo.jpg"), dir.path().join("photo.pdf"));
    let pixels: Vec<u8> = (0..64u32 * 48).map(|i| (i % 251) as u8).collect();
    let mut jpeg = Vec::new();
    jpeg_encoder::Encoder::new(&mut jpeg, 80).encode(&pixels, 64, 48, jpeg_encoder::ColorType::Luma).expect("encode");
    std::fs::write(&input, &jpeg).expect("write");
    let out = process(&input, "topdf", &output);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc = Document::load(&output).expect("the output is a PDF");
    assert_eq!(doc.get_pages().len(), 1);
    assert!(doc.objects.values().filter_map(|o| o.as_stream().ok()).any(|s| s.content == jpeg));
}
