//! `text`: the text of every page, in UTF-8, pages separated by a form feed.
//!
//! lopdf's own `extract_text` joins the strings a page shows without looking at where they
//! are, so on files whose words are placed one by one (Ghostscript's, Distiller's) it loses
//! the spaces between words. This interprets the content stream itself: the text state
//! (`Tf`, `Tc`, `Tw`, `Tz`, `TL`, `Ts`), text positioning (`Td`, `TD`, `Tm`, `T*`), the showing
//! operators (`Tj`, `TJ` with its offsets, `'`, `"`), the transformation matrix (`cm`, `q`,
//! `Q`) and Form XObjects (`Do`, at most [`MAX_FORM_DEPTH`] deep). Each glyph advances by its
//! font's width (`/Widths` with `/FirstChar` and `/MissingWidth`, a Type0 font's `/W` and `/DW`,
//! the built-in widths of a standard font such as Times or Helvetica named without them
//! (`standard_fonts`), half an em when nothing gives one), so where each string starts and
//! ends on the page is known. Characters come from lopdf's font encodings: `/ToUnicode` CMaps, the standard
//! encodings, `/Differences` by glyph name, on top of the built-in encoding of an embedded
//! Type 1 or CFF (`cff`) program; the glyphs of one string are parted by spaces when the
//! character spacing alone is wider than [`SPACE_EM`] of an em.
//!
//! The strings of a page are then put in reading order (`layout`), as pdftotext orders them:
//! strings on one baseline (super- and subscripts included) form a line, sorted along it, with
//! a space where a gap is wider than [`SPACE_EM`] of an em; a line parts where a gap is much
//! wider than a word gap (columns, table cells); closely stacked parts of lines form blocks;
//! and the blocks are sorted by T. M. Breuel's two rules (above and overlapping comes first;
//! left comes first unless a block between them says otherwise). So a table drawn row by row
//! reads column by column, and two columns drawn line by line read one after the other.
//! Diagonal text keeps the order it is shown in.
//!
//! Bounds: every stream is decoded with the caller's `max_inflate`; a page runs at most
//! [`MAX_OPERATIONS_PER_PAGE`] operators (Form XObjects included, so a form drawn a million
//! times over stops there); a page with more than [`MAX_LAID_OUT_RUNS`] strings (strings that
//! continue each other count as one) is written in content order, each string on a new line
//! when its baseline is elsewhere and after a space when it starts that far from where the
//! last ended; the whole text stops at [`MAX_TEXT_BYTES`], with a line saying so.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::rc::Rc;

use lopdf::content::Operation;
use lopdf::{Dictionary, Document, Object, ObjectId};

use super::{PdfError, Produced, content, work};
use crate::texts;

mod cff;
mod cmap;
mod font;
mod layout;
mod standard_fonts;

use font::Font;
use layout::{ContentOrder, Run};

/// Where the text stops: 100 MiB of UTF-8, far more than any real document's text (the whole
/// of a 2000-page book is a few MB), so only a hostile file reaches it.
pub const MAX_TEXT_BYTES: usize = 100 * 1024 * 1024;

/// How deep Form XObjects may draw other Form XObjects.
pub const MAX_FORM_DEPTH: usize = 12;

/// Operators interpreted on one page, Form XObjects included; the rest of the page is skipped.
pub const MAX_OPERATIONS_PER_PAGE: usize = 10_000_000;

/// Strings one page may hold for laying out (after joining those that continue each other,
/// so mostly words); past it the page's text is written in content order, as it is shown.
pub const MAX_LAID_OUT_RUNS: usize = 500_000;

/// A gap between two strings wider than this fraction of the font size is a space: pdftotext's
/// own threshold (`minWordBreakSpace`), which Distiller's tight word gaps (0.10 to 0.12 em in
/// TeX's metrics) need.
pub const SPACE_EM: f64 = 0.1;

/// `text`: the text of `input` into `output`. `pages` in the result is the document's page
/// count.
///
/// # Errors
///
/// Those of loading (see [`super::optimize()`]); [`PdfError::InflatesTooMuch`] when a content
/// stream, a form or a CMap inflates past `max_inflate`; [`PdfError::Io`] when writing fails.
pub fn text(input: &Path, output: &Path, max_inflate: usize, lang: texts::Lang) -> Result<Produced, PdfError> {
    let (input, output) = (input.to_path_buf(), output.to_path_buf());
    work::on_work_thread(move || {
        let (document, page_ids) = work::load_pages(&input, max_inflate)?;
        let mut sink = BufWriter::with_capacity(1 << 20, File::create(&output)?);
        let mut fonts = Fonts::default();
        let mut written = 0;
        for (index, page_id) in page_ids.iter().enumerate() {
            if index > 0 {
                sink.write_all(b"\x0c")?;
                written += 1;
            }
            let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
            let page = match page_text(&document, *page_id, max_inflate, &mut fonts)? {
                Some(text) => text,
                None => texts::page_without_text(lang, number) + "\n",
            };
            if written + page.len() > MAX_TEXT_BYTES {
                sink.write_all(texts::text_cut_short(lang, number, MAX_TEXT_BYTES as u64).as_bytes())?;
                sink.write_all(b"\n")?;
                break;
            }
            sink.write_all(page.as_bytes())?;
            written += page.len();
        }
        sink.flush()?;
        let file = sink.into_inner().map_err(|error| error.into_error())?;
        let output_bytes = file.metadata()?.len();
        Ok(Produced { output_bytes, pages: Some(page_ids.len() as u32) })
    })
}

/// Each page's text, a page without text as its [`texts::page_without_text`] line. Unguarded:
/// for tests.
#[cfg(test)]
pub(crate) fn page_texts(document: &Document, max_inflate: usize) -> Result<Vec<String>, PdfError> {
    let mut fonts = Fonts::default();
    let mut pages = Vec::new();
    for (index, page_id) in work::page_ids(document)?.into_iter().enumerate() {
        let number = u32::try_from(index + 1).unwrap_or(u32::MAX);
        pages.push(
            page_text(document, page_id, max_inflate, &mut fonts)?
                .unwrap_or_else(|| texts::page_without_text(texts::Lang::ENGLISH, number) + "\n"),
        );
    }
    Ok(pages)
}

/// The text of one page, ending with a newline; `None` when it shows no text at all.
fn page_text<'a>(
    document: &'a Document,
    page_id: ObjectId,
    max_inflate: usize,
    fonts: &mut Fonts<'a>,
) -> Result<Option<String>, PdfError> {
    let content = content::page(document, page_id, max_inflate)?;
    let resources = work::inherited(document, page_id, b"Resources").and_then(|r| r.as_dict().ok());
    let mut page =
        Page { document, max_inflate, fonts, text: String::new(), runs: Vec::new(), content: None, operations: 0 };
    let mut state = State::default();
    page.run(&content, resources, &mut state, 0)?;
    let text = match page.content {
        Some(content) => content.out,
        None => layout::page_text(&page.runs, &page.text),
    };
    let text = text.trim_end();
    if text.trim().is_empty() {
        return Ok(None);
    }
    let mut text = text.to_owned();
    text.push('\n');
    Ok(Some(text))
}

/// An affine matrix `[a b c d e f]` as PDF writes it (row vectors: `p' = p × M`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Matrix([f64; 6]);

impl Matrix {
    const IDENTITY: Self = Self([1.0, 0.0, 0.0, 1.0, 0.0, 0.0]);

    fn translation(x: f64, y: f64) -> Self {
        Self([1.0, 0.0, 0.0, 1.0, x, y])
    }

    /// `self × other`: first `self`, then `other`.
    fn then(self, other: Self) -> Self {
        let [a, b, c, d, e, f] = self.0;
        let [a2, b2, c2, d2, e2, f2] = other.0;
        Self([
            a * a2 + b * c2,
            a * b2 + b * d2,
            c * a2 + d * c2,
            c * b2 + d * d2,
            e * a2 + f * c2 + e2,
            e * b2 + f * d2 + f2,
        ])
    }

    fn from_operands(operands: &[Object]) -> Option<Self> {
        let numbers: Vec<f64> = operands.iter().filter_map(number).collect();
        let numbers: [f64; 6] = numbers.try_into().ok()?;
        numbers.iter().all(|n| n.is_finite()).then_some(Self(numbers))
    }
}

fn number(object: &Object) -> Option<f64> {
    object.as_float().ok().map(f64::from)
}

/// The graphics and text state that `q` saves and `Q` restores.
#[derive(Clone)]
struct State<'a> {
    ctm: Matrix,
    font: Option<Rc<Font<'a>>>,
    size: f64,
    char_spacing: f64,
    word_spacing: f64,
    horizontal_scale: f64,
    leading: f64,
    /// `Ts`: how far above the baseline glyphs are shown.
    rise: f64,
}

impl Default for State<'_> {
    fn default() -> Self {
        Self {
            ctm: Matrix::IDENTITY,
            font: None,
            size: 1.0,
            char_spacing: 0.0,
            word_spacing: 0.0,
            horizontal_scale: 1.0,
            leading: 0.0,
            rise: 0.0,
        }
    }
}

/// Fonts already read, by object: most pages share them.
#[derive(Default)]
struct Fonts<'a> {
    by_id: HashMap<ObjectId, Rc<Font<'a>>>,
}

/// One page being read.
struct Page<'a, 'f> {
    document: &'a Document,
    max_inflate: usize,
    fonts: &'f mut Fonts<'a>,
    /// The characters of `runs`, one after another.
    text: String,
    /// The strings shown so far, for laying out.
    runs: Vec<Run>,
    /// The page's text in content order, once it has more than [`MAX_LAID_OUT_RUNS`] runs.
    content: Option<ContentOrder>,
    operations: usize,
}

/// The text matrix and the text line matrix, inside `BT` … `ET`.
struct TextObject {
    matrix: Matrix,
    line: Matrix,
}

impl<'a> Page<'a, '_> {
    fn run(
        &mut self,
        content: &[u8],
        resources: Option<&'a Dictionary>,
        state: &mut State<'a>,
        depth: usize,
    ) -> Result<(), PdfError> {
        let mut saved: Vec<State<'a>> = Vec::new();
        let mut text = TextObject { matrix: Matrix::IDENTITY, line: Matrix::IDENTITY };
        for operation in content::operations(content) {
            self.operations += 1;
            let text_bytes = self.text.len() + self.content.as_ref().map_or(0, |c| c.out.len());
            if self.operations > MAX_OPERATIONS_PER_PAGE || text_bytes > MAX_TEXT_BYTES {
                break;
            }
            self.operation(&operation, resources, state, &mut saved, &mut text, depth)?;
        }
        Ok(())
    }

    fn operation(
        &mut self,
        operation: &Operation,
        resources: Option<&'a Dictionary>,
        state: &mut State<'a>,
        saved: &mut Vec<State<'a>>,
        text: &mut TextObject,
        depth: usize,
    ) -> Result<(), PdfError> {
        let operands = operation.operands.as_slice();
        let first = operands.first().and_then(number);
        match operation.operator.as_str() {
            // A stream that only saves would grow the stack without end.
            "q" if saved.len() < 1024 => saved.push(state.clone()),
            "Q" => {
                if let Some(previous) = saved.pop() {
                    *state = previous;
                }
            }
            "cm" => {
                if let Some(matrix) = Matrix::from_operands(operands) {
                    state.ctm = matrix.then(state.ctm);
                }
            }
            "BT" => *text = TextObject { matrix: Matrix::IDENTITY, line: Matrix::IDENTITY },
            "Tf" => {
                if let (Some(Object::Name(name)), Some(size)) = (operands.first(), operands.get(1).and_then(number)) {
                    state.font = self.font(resources, name)?;
                    state.size = size;
                }
            }
            "Tc" => state.char_spacing = first.unwrap_or(0.0),
            "Tw" => state.word_spacing = first.unwrap_or(0.0),
            "Tz" => state.horizontal_scale = first.unwrap_or(100.0) / 100.0,
            "TL" => state.leading = first.unwrap_or(0.0),
            "Ts" => state.rise = first.unwrap_or(0.0),
            "Td" | "TD" => {
                if let (Some(x), Some(y)) = (first, operands.get(1).and_then(number)) {
                    if operation.operator == "TD" {
                        state.leading = -y;
                    }
                    text.line = Matrix::translation(x, y).then(text.line);
                    text.matrix = text.line;
                }
            }
            "Tm" => {
                if let Some(matrix) = Matrix::from_operands(operands) {
                    text.line = matrix;
                    text.matrix = matrix;
                }
            }
            "T*" => next_line(state, text),
            "Tj" => {
                if let Some(Object::String(bytes, _)) = operands.first() {
                    self.show(bytes, state, text);
                }
            }
            "'" => {
                next_line(state, text);
                if let Some(Object::String(bytes, _)) = operands.first() {
                    self.show(bytes, state, text);
                }
            }
            "\"" => {
                if let [word, char, Object::String(bytes, _)] = operands {
                    state.word_spacing = number(word).unwrap_or(0.0);
                    state.char_spacing = number(char).unwrap_or(0.0);
                    next_line(state, text);
                    self.show(bytes, state, text);
                }
            }
            "TJ" => {
                if let Some(Object::Array(items)) = operands.first() {
                    for item in items {
                        match item {
                            Object::String(bytes, _) => self.show(bytes, state, text),
                            other => {
                                if let Some(offset) = number(other) {
                                    let advance = -offset / 1000.0 * state.size * state.horizontal_scale;
                                    text.matrix = Matrix::translation(advance, 0.0).then(text.matrix);
                                }
                            }
                        }
                    }
                }
            }
            "Do" => {
                if let Some(Object::Name(name)) = operands.first() {
                    self.form(resources, name, state, depth)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn font(&mut self, resources: Option<&'a Dictionary>, name: &[u8]) -> Result<Option<Rc<Font<'a>>>, PdfError> {
        let document = self.document;
        let Some(object) = resources
            .and_then(|r| r.get(b"Font").ok())
            .and_then(|fonts| document.dereference(fonts).ok())
            .and_then(|(_, fonts)| fonts.as_dict().ok())
            .and_then(|fonts| fonts.get(name).ok())
        else {
            return Ok(None);
        };
        let id = object.as_reference().ok();
        if let Some(font) = id.and_then(|id| self.fonts.by_id.get(&id)) {
            return Ok(Some(Rc::clone(font)));
        }
        let Some(dict) = document.dereference(object).ok().and_then(|(_, font)| font.as_dict().ok()) else {
            return Ok(None);
        };
        let font = Rc::new(Font::load(document, dict, self.max_inflate)?);
        if let Some(id) = id {
            self.fonts.by_id.insert(id, Rc::clone(&font));
        }
        Ok(Some(font))
    }

    fn form(
        &mut self,
        resources: Option<&'a Dictionary>,
        name: &[u8],
        state: &State<'a>,
        depth: usize,
    ) -> Result<(), PdfError> {
        if depth >= MAX_FORM_DEPTH {
            return Ok(());
        }
        let document = self.document;
        let Some(stream) = resources
            .and_then(|r| r.get(b"XObject").ok())
            .and_then(|x| document.dereference(x).ok())
            .and_then(|(_, x)| x.as_dict().ok())
            .and_then(|x| x.get(name).ok())
            .and_then(|x| document.dereference(x).ok())
            .and_then(|(_, x)| x.as_stream().ok())
        else {
            return Ok(());
        };
        if stream.dict.get(b"Subtype").and_then(Object::as_name).ok() != Some(b"Form".as_slice()) {
            return Ok(());
        }
        // An unfiltered form is taken as it is, whatever its size.
        let content = if stream.dict.has(b"Filter") {
            let Some(content) = content::form(stream, self.max_inflate)? else { return Ok(()) };
            content
        } else {
            stream.content.clone()
        };
        let own = stream
            .dict
            .get(b"Resources")
            .ok()
            .and_then(|r| document.dereference(r).ok())
            .and_then(|(_, r)| r.as_dict().ok());
        let mut inner = state.clone();
        if let Some(matrix) =
            stream.dict.get(b"Matrix").ok().and_then(|m| m.as_array().ok()).and_then(|m| Matrix::from_operands(m))
        {
            inner.ctm = matrix.then(state.ctm);
        }
        self.run(&content, own.or(resources), &mut inner, depth + 1)
    }

    /// Shows the string `bytes`: appends its characters as a run, where it starts and ends,
    /// and moves the text matrix past it.
    fn show(&mut self, bytes: &[u8], state: &State<'a>, text: &mut TextObject) {
        let Some(font) = state.font.clone() else { return };
        let raised = |matrix: Matrix| Matrix::translation(0.0, state.rise).then(matrix).then(state.ctm);
        let [a, b, c, d, x, y] = raised(text.matrix).0;
        let along_length = a.hypot(b);
        let direction = if along_length > 0.0 { (a / along_length, b / along_length) } else { (1.0, 0.0) };
        let size = (state.size * c.hypot(d)).abs().max(f64::MIN_POSITIVE);
        let text_start = self.text.len();
        // Character spacing wider than a space (Distiller's letter-spaced running heads) parts
        // each glyph from the next, as pdftotext parts them.
        if state.char_spacing * state.horizontal_scale * along_length > SPACE_EM * size {
            let step = if font.two_byte { 2 } else { 1 };
            for glyph in bytes.chunks(step) {
                if self.text.len() > text_start && !self.text.ends_with(' ') {
                    self.text.push(' ');
                }
                font.decode(glyph, &mut self.text);
            }
        } else {
            font.decode(bytes, &mut self.text);
        }
        let (mut advance, mut last_spacing) = (0.0, 0.0);
        for (code, is_space) in font.codes(bytes) {
            let width = font.width(code) * font.scale * state.size;
            last_spacing =
                (state.char_spacing + if is_space { state.word_spacing } else { 0.0 }) * state.horizontal_scale;
            advance += width * state.horizontal_scale + last_spacing;
        }
        if !advance.is_finite() {
            (advance, last_spacing) = (0.0, 0.0);
        }
        // The run ends at its last glyph's edge, before the spacing that follows it (as
        // pdftotext measures gaps): a letter-spaced heading pulls each glyph back by its
        // spacing with TJ offsets, and the gap a reader sees is what is left between glyphs.
        let end = raised(Matrix::translation(advance - last_spacing, 0.0).then(text.matrix));
        text.matrix = Matrix::translation(advance, 0.0).then(text.matrix);
        self.add_run(Run {
            start: (x, y),
            end: (end.0[4], end.0[5]),
            direction,
            size,
            text: text_start..self.text.len(),
        });
    }

    /// Keeps `run` (its characters end `self.text`) for laying out, joined to the last one when
    /// it continues it; past [`MAX_LAID_OUT_RUNS`], writes it in content order instead.
    fn add_run(&mut self, run: Run) {
        if let Some(last) = self.runs.last_mut()
            && last.is_continued_by(&run)
        {
            last.continue_with(&run);
            return;
        }
        if self.content.is_none() && self.runs.len() >= MAX_LAID_OUT_RUNS {
            let mut content = ContentOrder::default();
            for earlier in self.runs.drain(..) {
                content.push(&earlier, &self.text[earlier.text.clone()]);
            }
            self.content = Some(content);
        }
        match &mut self.content {
            Some(content) => {
                content.push(&run, &self.text[run.text.clone()]);
                self.text.clear();
            }
            None => self.runs.push(run),
        }
    }
}

fn next_line(state: &State<'_>, text: &mut TextObject) {
    text.line = Matrix::translation(0.0, -state.leading).then(text.line);
    text.matrix = text.line;
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pdf::DEFAULT_MAX_INFLATE_BYTES;
    use lopdf::{Stream, dictionary};

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
}
