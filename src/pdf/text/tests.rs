//! `text` on pages made here, and the one-font document builder other operations' tests share.

use lopdf::{Document, Object, Stream, dictionary};

use super::*;
use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;

/// A one-font PDF (Helvetica, WinAnsi, every glyph 500 units wide) whose pages draw
/// `contents`.
pub(crate) fn document_with_pages(contents: &[&str]) -> Document {
    let mut document = Document::with_version("1.7");
    let pages_id = document.new_object_id();
    let widths: Vec<Object> = (0..224).map(|_| Object::Integer(500)).collect();
    let font = document.add_object(dictionary! {
        "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica",
        "Encoding" => "WinAnsiEncoding", "FirstChar" => 32, "LastChar" => 255, "Widths" => widths,
    });
    let resources = document.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids = Vec::new();
    for content in contents {
        let content = document.add_object(Stream::new(dictionary! {}, content.as_bytes().to_vec()));
        let page = document.add_object(dictionary! {
            "Type" => "Page", "Parent" => pages_id, "Contents" => content,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()], "Resources" => resources,
        });
        kids.push(Object::Reference(page));
    }
    let count = kids.len() as i64;
    document
        .objects
        .insert(pages_id, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }));
    let catalog = document.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    document.trailer.set("Root", catalog);
    document
}

fn texts(contents: &[&str]) -> Vec<String> {
    page_texts(&document_with_pages(contents), DEFAULT_MAX_INFLATE_BYTES).unwrap()
}

#[test]
fn tj_offsets_wide_enough_are_spaces_and_kerning_is_not() {
    let page = "BT /F1 10 Tf 72 700 Td [(Hello)-300(world)-40(ly)] TJ ET";
    assert_eq!(texts(&[page]), ["Hello worldly\n"]);
}

#[test]
fn words_placed_one_by_one_are_separated() {
    // As Ghostscript writes them: each word at its own position on the same baseline.
    let page = "BT /F1 10 Tf 1 0 0 1 72 700 Tm (One)Tj 1 0 0 1 93 700 Tm (two)Tj 20 0 Td (three)Tj ET";
    assert_eq!(texts(&[page]), ["One two three\n"]);
}

#[test]
fn a_gap_of_a_ninth_of_an_em_is_a_space() {
    // "ab" ends at 10 points: "cd" starts 1.1 points, 0.11 em, after it.
    let page = "BT /F1 10 Tf 72 700 Td (ab)Tj 11.1 0 Td (cd)Tj ET";
    assert_eq!(texts(&[page]), ["ab cd\n"]);
}

#[test]
fn character_spacing_wider_than_a_space_parts_the_glyphs() {
    // 3 points of character spacing at 10 points is 0.3 em; 0.5 points is kerning.
    let page = "BT /F1 10 Tf 72 700 Td 3 Tc (VERSION)Tj 0.5 Tc 0 -20 Td (tight)Tj ET";
    assert_eq!(texts(&[page]), ["V E R S I O N\ntight\n"]);
}

#[test]
fn a_letter_spaced_heading_pulled_back_by_offsets_reads_as_words() {
    // 4.5 points of character spacing, taken back glyph by glyph with TJ offsets of 0.45 em
    // (Distiller's running heads): the glyphs touch, except for the 0.465 em before "2".
    let page = "BT /F1 10 Tf 72 700 Td 4.5 Tc [(V)450(E)450(R)-15(2)450(.)450(2)]TJ ET";
    assert_eq!(texts(&[page]), ["VER 2.2\n"]);
}

#[test]
fn adjacent_strings_join_without_a_space() {
    // "Hel" is 3 glyphs of 5 points: "lo" starts exactly where it ends.
    let page = "BT /F1 10 Tf 72 700 Td (Hel)Tj 15 0 Td (lo)Tj ET";
    assert_eq!(texts(&[page]), ["Hello\n"]);
}

#[test]
fn strings_shown_apart_are_words_at_a_smaller_gap() {
    // As LilyPond places a lyric's hyphens after its syllables: "tum" and the hyphen come
    // 0.05 em after what they follow on the line, but were not shown right after it, so
    // (as pdftotext sees it) they are words of their own; at 0.02 em they touch.
    let page = "BT /F1 10 Tf 1 0 0 1 92.5 700 Tm (tum)Tj 1 0 0 1 72 700 Tm (fruc)Tj \
                1 0 0 1 87.2 680 Tm (lo)Tj 1 0 0 1 72 680 Tm (Hel)Tj ET";
    assert_eq!(texts(&[page]), ["fruc tum\nHello\n"]);
}

#[test]
fn a_new_baseline_is_a_new_line() {
    let page = "BT /F1 10 Tf 12 TL 72 700 Td (first line)Tj T* (second)Tj (line)' ET";
    assert_eq!(texts(&[page]), ["first line\nsecond\nline\n"]);
}

#[test]
fn the_transformation_matrix_scales_the_gaps() {
    // Scaled by 2 in cm: a 3-point gap in text space is 6 points on the page, still 0.3 em.
    let page = "q 2 0 0 2 0 0 cm BT /F1 10 Tf 10 300 Td (ab)Tj 13 0 Td (cd)Tj ET Q";
    assert_eq!(texts(&[page]), ["ab cd\n"]);
}

#[test]
fn a_table_drawn_row_by_row_reads_column_by_column() {
    // Issue 9: pdftotext reads each column of a table as a block.
    let page = "BT /F1 10 Tf 1 0 0 1 72 700 Tm (Name)Tj 1 0 0 1 200 700 Tm (Value)Tj \
                1 0 0 1 72 688 Tm (alpha)Tj 1 0 0 1 200 688 Tm (one)Tj \
                1 0 0 1 72 676 Tm (beta)Tj 1 0 0 1 200 676 Tm (two)Tj ET";
    assert_eq!(texts(&[page]), ["Name\nalpha\nbeta\nValue\none\ntwo\n"]);
}

#[test]
fn two_columns_drawn_line_by_line_read_one_after_the_other() {
    // Parallel texts (eledpar) draw the left and the right column's lines in turn.
    let page = "BT /F1 10 Tf 12 TL 1 0 0 1 72 700 Tm (left one)Tj 1 0 0 1 320 700 Tm (right one)Tj \
                1 0 0 1 72 688 Tm (left two)Tj 1 0 0 1 320 688 Tm (right two)Tj \
                1 0 0 1 72 676 Tm (left three)Tj 1 0 0 1 320 676 Tm (right three)Tj ET";
    assert_eq!(texts(&[page]), ["left one\nleft two\nleft three\nright one\nright two\nright three\n"]);
}

#[test]
fn a_superscript_drawn_after_its_line_stays_on_it_in_place() {
    // The footnote mark after "Hello" is drawn last, 4 points up, at 7 points.
    let page = "BT /F1 10 Tf 1 0 0 1 72 700 Tm (Hello)Tj 1 0 0 1 103 700 Tm (world)Tj \
                /F1 7 Tf 1 0 0 1 97 704 Tm (1)Tj ET";
    assert_eq!(texts(&[page]), ["Hello1 world\n"]);
}

#[test]
fn a_text_rise_raises_the_glyphs() {
    // Drawn again at the line's start, raised by 12 points: a line of its own, above.
    let page = "BT /F1 10 Tf 72 700 Td (low)Tj 12 Ts 0 0 Td (high)Tj ET";
    assert_eq!(texts(&[page]), ["high\nlow\n"]);
}

#[test]
fn a_justified_line_with_a_wide_gap_stays_one_line() {
    // The middle line's gap is 2 ems, wider than parts columns, but within the paragraph.
    let page = "BT /F1 10 Tf 12 TL 72 700 Td (aaaa bbbb cccc dddd)Tj T* (eeee)Tj 40 0 Td (ffff gggg)Tj \
                -40 -12 Td (hhhh iiii jjjj kkkk)Tj ET";
    assert_eq!(texts(&[page]), ["aaaa bbbb cccc dddd\neeee ffff gggg\nhhhh iiii jjjj kkkk\n"]);
}

#[test]
fn numbers_and_titles_standing_apart_read_row_by_row_when_a_title_spans_both() {
    // A table of contents: the numbers and the titles are columns of their own until the
    // last line's title starts under the numbers and reaches under the titles.
    let page = "BT /F1 10 Tf 1 0 0 1 90 700 Tm (1.1)Tj 1 0 0 1 130 700 Tm (Scope)Tj \
                1 0 0 1 90 688 Tm (1.2)Tj 1 0 0 1 130 688 Tm (Terms)Tj \
                1 0 0 1 90 676 Tm (Summary of all)Tj ET";
    assert_eq!(texts(&[page]), ["1.1 Scope\n1.2 Terms\nSummary of all\n"]);
}

#[test]
fn strings_drawn_right_to_left_read_left_to_right() {
    let page = "BT /F1 10 Tf 1 0 0 1 100 700 Tm (world)Tj 1 0 0 1 72 700 Tm (Hello)Tj ET";
    assert_eq!(texts(&[page]), ["Hello world\n"]);
}

#[test]
fn a_page_without_text_names_itself() {
    let texts = texts(&["BT /F1 10 Tf 72 700 Td (one)Tj ET", "0 0 m 100 100 l S"]);
    assert_eq!(texts[1], format!("{}\n", crate::texts::page_without_text(crate::texts::Lang::ENGLISH, 2)));
    assert!(texts[1].contains("page 2"), "{}", texts[1]);
}

#[test]
fn form_xobjects_are_read_and_a_form_drawing_itself_ends() {
    let mut document = document_with_pages(&["q /X1 Do Q"]);
    let page_id = document.page_iter().next().unwrap();
    let resources_id = document.get_dictionary(page_id).unwrap().get(b"Resources").unwrap().as_reference().unwrap();
    let form = document.new_object_id();
    let content = b"BT /F1 10 Tf 72 700 Td (inside)Tj ET /X1 Do /X1 Do".to_vec();
    let stream = Stream::new(dictionary! { "Type" => "XObject", "Subtype" => "Form" }, content);
    document.objects.insert(form, Object::Stream(stream));
    document.get_dictionary_mut(resources_id).unwrap().set("XObject", dictionary! { "X1" => form });
    let texts = page_texts(&document, DEFAULT_MAX_INFLATE_BYTES).unwrap();
    // The form draws itself twice at every level: 2^12 copies, each on the same spot.
    assert!(texts[0].starts_with("inside"), "{}", &texts[0][..40]);
}

#[test]
fn a_content_stream_bomb_is_refused() {
    let mut document = document_with_pages(&[""]);
    let page_id = document.page_iter().next().unwrap();
    let mut content = Stream::new(dictionary! {}, b"q Q ".repeat(100_000));
    content.compress().unwrap();
    let content = document.add_object(content);
    document.get_dictionary_mut(page_id).unwrap().set("Contents", content);
    let result = page_texts(&document, 10_000);
    assert!(matches!(result, Err(PdfError::InflatesTooMuch { limit: 10_000 })), "{result:?}");
}

#[test]
fn a_cff_program_s_own_encoding_gives_its_ligatures() {
    // As Distiller embeds TeX's CMR10: no `/Encoding`, the program says code 12 is `fi`.
    let mut document = document_with_pages(&["BT /F1 10 Tf 72 700 Td (\\014les) Tj ET"]);
    let program = document.add_object(Stream::new(dictionary! { "Subtype" => "Type1C" }, cff::tests::program()));
    let descriptor = document.add_object(dictionary! { "Type" => "FontDescriptor", "FontFile3" => program });
    let font_id =
        document.objects.iter().find(|(_, o)| o.type_name().ok() == Some(b"Font".as_slice())).map(|(id, _)| *id);
    let font = document.get_dictionary_mut(font_id.unwrap()).unwrap();
    font.remove(b"Encoding");
    font.set("FontDescriptor", descriptor);
    let texts = page_texts(&document, DEFAULT_MAX_INFLATE_BYTES).unwrap();
    assert_eq!(texts, ["files\n"]);
}

#[test]
fn ghostscript_fixture_reads_with_spaces() {
    let document = Document::load(crate::pdf::split::tests::fixture("text-1page.pdf")).unwrap();
    let texts = page_texts(&document, DEFAULT_MAX_INFLATE_BYTES).unwrap();
    assert!(texts[0].contains("docket fixture, page 1"), "{}", texts[0]);
}
