//! One page's text: its content (and the Form XObjects it draws, at most [`MAX_FORM_DEPTH`]
//! deep) run operator by operator through the text state and the transformation matrix, each
//! string shown kept as a run with its characters and where it starts and ends, then laid out
//! in reading order (`layout`), or, past [`MAX_LAID_OUT_RUNS`] runs, written in content order.

use std::collections::HashMap;
use std::rc::Rc;

use lopdf::content::Operation;
use lopdf::{Dictionary, Document, Object, ObjectId};

use super::font::Font;
use super::layout::{self, ContentOrder, Run};
use super::{MAX_FORM_DEPTH, MAX_LAID_OUT_RUNS, MAX_OPERATIONS_PER_PAGE, MAX_TEXT_BYTES, SPACE_EM, number};
use crate::pdf::{PdfError, content, work};

/// The text of one page, ending with a newline; `None` when it shows no text at all.
pub(super) fn page_text<'a>(
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
pub(super) struct Fonts<'a> {
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

    /// Follows one content-stream operator: the graphics and text state it changes, the text
    /// it shows, the form it draws.
    ///
    /// One match, one arm per operator as the PDF reference lists them: a dispatch table reads
    /// best whole, and every operator not named changes nothing text extraction sees.
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
                    self.show_array(items, state, text);
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

    /// `TJ`'s array: its strings shown, its numbers moving the text position back (in
    /// thousandths of the font size) between them.
    fn show_array(&mut self, items: &[Object], state: &State<'a>, text: &mut TextObject) {
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

    fn font(&mut self, resources: Option<&'a Dictionary>, name: &[u8]) -> Result<Option<Rc<Font<'a>>>, PdfError> {
        let document = self.document;
        let Some(object) = named_resource(document, resources, b"Font", name) else {
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
        let Some(stream) = named_resource(document, resources, b"XObject", name)
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

/// The resource `name` of `category` (`Font`, `XObject`) in a page's or form's `resources`, as
/// written there (often a reference); `None` when any step of the way is missing or malformed.
fn named_resource<'a>(
    document: &'a Document,
    resources: Option<&'a Dictionary>,
    category: &[u8],
    name: &[u8],
) -> Option<&'a Object> {
    resources
        .and_then(|r| r.get(category).ok())
        .and_then(|found| document.dereference(found).ok())
        .and_then(|(_, found)| found.as_dict().ok())
        .and_then(|found| found.get(name).ok())
}
