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

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use lopdf::Object;

use super::{PdfError, Produced, work};
use crate::texts;

mod cff;
mod cmap;
mod font;
mod layout;
mod page;
mod standard_fonts;

use page::{Fonts, page_text};

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
pub(crate) fn page_texts(document: &lopdf::Document, max_inflate: usize) -> Result<Vec<String>, PdfError> {
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

fn number(object: &Object) -> Option<f64> {
    object.as_float().ok().map(f64::from)
}

#[cfg(test)]
pub(crate) mod tests;
