//! Documents made in the test: valid PDFs of a chosen size, for tests that need real work or
//! real bytes on disk.

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};

/// A valid PDF of `pages` pages, each with about `bytes_per_page` bytes of uncompressed text
/// (pseudo-random words from `seed`), so optimizing it takes real work and really shrinks it.
pub fn generated_pdf(pages: usize, bytes_per_page: usize, seed: u64) -> Vec<u8> {
    use lopdf::{Document, Object, Stream, dictionary};

    let words: Vec<&str> = "contract party shall notice term payment clause agreement herein liability schedule \
                            annex warranty delivery invoice section the of and to"
        .split_whitespace()
        .collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font_id = doc.add_object(dictionary! {
        "Type" => "Font",
        "Subtype" => "Type1",
        "BaseFont" => "Helvetica",
    });
    let resources_id = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font_id } });
    let mut kids = Vec::with_capacity(pages);
    for page in 0..pages {
        let mut content = format!("BT /F1 9 Tf 40 800 Td 11 TL (page {page}) Tj\n").into_bytes();
        while content.len() < bytes_per_page {
            let mut line = String::from("T* (");
            for _ in 0..12 {
                line.push_str(words[rng.random_range(0..words.len())]);
                line.push(' ');
            }
            line.push_str(&rng.random_range(0..1_000_000u32).to_string());
            line.push_str(") Tj\n");
            content.extend_from_slice(line.as_bytes());
        }
        content.extend_from_slice(b"ET\n");
        let content_id = doc.add_object(Stream::new(dictionary! {}, content));
        let page_id = doc.add_object(dictionary! {
            "Type" => "Page",
            "Parent" => pages_id,
            "Contents" => content_id,
        });
        kids.push(Object::from(page_id));
    }
    let count = i64::try_from(kids.len()).expect("page count fits");
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages",
            "Kids" => kids,
            "Count" => count,
            "Resources" => resources_id,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog_id = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog_id);
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("a generated PDF saves");
    out
}
