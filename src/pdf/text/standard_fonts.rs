//! Widths of the standard fonts a PDF may name without embedding them or giving their widths
//! (FOP's Times-Roman and Helvetica, `/Arial` and `/TimesNewRoman` from Windows drivers), so
//! that where their strings end is known, as pdftotext knows it from its built-in metrics.
//!
//! The tables, in `standard_font_widths.txt` (data, read at compile time), are the advance widths
//! (in 1/1000 em) of the URW base 35 fonts' AFM files, which match Adobe's Core 14 metrics glyph
//! for glyph: Nimbus Roman for Times, Nimbus Sans for Helvetica (whose oblique faces have the
//! upright widths); every Courier glyph is 600.

/// The widths of a standard font.
pub(super) enum StandardFont {
    /// Every glyph as wide (Courier).
    Monospaced(f64),
    /// By character, in the order of the table of characters; 0 where the font has no such
    /// glyph.
    Proportional(&'static [u16]),
}

impl StandardFont {
    /// The standard font `base_font` (its subset prefix and `,Bold`-style suffixes allowed)
    /// is, or stands in for.
    pub(super) fn named(base_font: &[u8]) -> Option<Self> {
        let name = String::from_utf8_lossy(base_font);
        let name = name.split_once('+').map_or(&*name, |(_, rest)| rest);
        let bold = name.contains("Bold") || name.contains("Black") || name.contains("Heavy");
        let italic = name.contains("Italic") || name.contains("Oblique");
        if name.starts_with("Courier") {
            return Some(Self::Monospaced(600.0));
        }
        let table: &'static [u16] = if name.starts_with("Times") {
            match (bold, italic) {
                (false, false) => &TIMES_ROMAN,
                (true, false) => &TIMES_BOLD,
                (false, true) => &TIMES_ITALIC,
                (true, true) => &TIMES_BOLD_ITALIC,
            }
        } else if name.starts_with("Helvetica") || name.starts_with("Arial") {
            if bold { &HELVETICA_BOLD } else { &HELVETICA }
        } else {
            return None;
        };
        Some(Self::Proportional(table))
    }

    /// The width of the glyph that shows `text` (a code's characters); `None` when the font
    /// has no such glyph.
    pub(super) fn width(&self, text: &str) -> Option<f64> {
        match self {
            Self::Monospaced(width) => Some(*width),
            Self::Proportional(table) => {
                let mut chars = text.chars();
                let (Some(c), None) = (chars.next(), chars.next()) else { return None };
                let index = CHARS.binary_search(&c).ok()?;
                table.get(index).copied().filter(|w| *w > 0).map(f64::from)
            }
        }
    }
}

const CHARS: [char; 230] = [
    ' ', '!', '"', '#', '$', '%', '&', '\'', '(', ')', '*', '+', ',', '-', '.', '/', '0', '1', '2', '3', '4', '5', '6',
    '7', '8', '9', ':', ';', '<', '=', '>', '?', '@', 'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J', 'K', 'L', 'M',
    'N', 'O', 'P', 'Q', 'R', 'S', 'T', 'U', 'V', 'W', 'X', 'Y', 'Z', '[', '\\', ']', '^', '_', '`', 'a', 'b', 'c', 'd',
    'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', '{',
    '|', '}', '~', '\u{00a0}', '\u{00a1}', '\u{00a2}', '\u{00a3}', '\u{00a4}', '\u{00a5}', '\u{00a6}', '\u{00a7}',
    '\u{00a8}', '\u{00a9}', '\u{00aa}', '\u{00ab}', '\u{00ac}', '\u{00ad}', '\u{00ae}', '\u{00af}', '\u{00b0}',
    '\u{00b1}', '\u{00b2}', '\u{00b3}', '\u{00b4}', '\u{00b5}', '\u{00b6}', '\u{00b7}', '\u{00b8}', '\u{00b9}',
    '\u{00ba}', '\u{00bb}', '\u{00bc}', '\u{00bd}', '\u{00be}', '\u{00bf}', '\u{00c0}', '\u{00c1}', '\u{00c2}',
    '\u{00c3}', '\u{00c4}', '\u{00c5}', '\u{00c6}', '\u{00c7}', '\u{00c8}', '\u{00c9}', '\u{00ca}', '\u{00cb}',
    '\u{00cc}', '\u{00cd}', '\u{00ce}', '\u{00cf}', '\u{00d0}', '\u{00d1}', '\u{00d2}', '\u{00d3}', '\u{00d4}',
    '\u{00d5}', '\u{00d6}', '\u{00d7}', '\u{00d8}', '\u{00d9}', '\u{00da}', '\u{00db}', '\u{00dc}', '\u{00dd}',
    '\u{00de}', '\u{00df}', '\u{00e0}', '\u{00e1}', '\u{00e2}', '\u{00e3}', '\u{00e4}', '\u{00e5}', '\u{00e6}',
    '\u{00e7}', '\u{00e8}', '\u{00e9}', '\u{00ea}', '\u{00eb}', '\u{00ec}', '\u{00ed}', '\u{00ee}', '\u{00ef}',
    '\u{00f0}', '\u{00f1}', '\u{00f2}', '\u{00f3}', '\u{00f4}', '\u{00f5}', '\u{00f6}', '\u{00f7}', '\u{00f8}',
    '\u{00f9}', '\u{00fa}', '\u{00fb}', '\u{00fc}', '\u{00fd}', '\u{00fe}', '\u{00ff}', '\u{0131}', '\u{0141}',
    '\u{0142}', '\u{0152}', '\u{0153}', '\u{0160}', '\u{0161}', '\u{0178}', '\u{017d}', '\u{017e}', '\u{0192}',
    '\u{02c6}', '\u{02c7}', '\u{02d8}', '\u{02d9}', '\u{02da}', '\u{02db}', '\u{02dc}', '\u{02dd}', '\u{2013}',
    '\u{2014}', '\u{2018}', '\u{2019}', '\u{201a}', '\u{201c}', '\u{201d}', '\u{201e}', '\u{2020}', '\u{2021}',
    '\u{2022}', '\u{2026}', '\u{2030}', '\u{2039}', '\u{203a}', '\u{2044}', '\u{20ac}', '\u{2122}', '\u{fb01}',
    '\u{fb02}',
];

const TIMES_ROMAN: [u16; 230] = widths_of(b"Times-Roman");

const TIMES_BOLD: [u16; 230] = widths_of(b"Times-Bold");

const TIMES_ITALIC: [u16; 230] = widths_of(b"Times-Italic");

const TIMES_BOLD_ITALIC: [u16; 230] = widths_of(b"Times-BoldItalic");

const HELVETICA: [u16; 230] = widths_of(b"Helvetica");

const HELVETICA_BOLD: [u16; 230] = widths_of(b"Helvetica-Bold");

/// The widths file: see its head.
const WIDTHS: &[u8] = include_bytes!("standard_font_widths.txt");

/// The line of `font` in [`WIDTHS`], a width for each of [`CHARS`]. Evaluated at compile time:
/// a font missing from the file, or a line with too few or too many widths, fails the build.
const fn widths_of(font: &[u8]) -> [u16; 230] {
    let bytes = WIDTHS;
    // The line that starts `<font>:`.
    let mut i = 0;
    loop {
        assert!(i + font.len() < bytes.len(), "a standard font is missing from standard_font_widths.txt");
        if (i == 0 || bytes[i - 1] == b'\n') && names_at(bytes, i, font) && bytes[i + font.len()] == b':' {
            i += font.len() + 1;
            break;
        }
        i += 1;
    }
    let mut widths = [0u16; 230];
    let mut n = 0;
    while n < widths.len() {
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        let start = i;
        let mut width: u16 = 0;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            width = width * 10 + (bytes[i] - b'0') as u16;
            i += 1;
        }
        assert!(i > start, "a line of standard_font_widths.txt has fewer widths than CHARS has characters");
        widths[n] = width;
        n += 1;
    }
    assert!(
        i == bytes.len() || bytes[i] == b'\n',
        "a line of standard_font_widths.txt has more widths than characters"
    );
    widths
}

/// Whether `bytes` holds `name` at `at`.
const fn names_at(bytes: &[u8], at: usize, name: &[u8]) -> bool {
    let mut k = 0;
    while k < name.len() {
        if bytes[at + k] != name[k] {
            return false;
        }
        k += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chars_are_sorted_for_the_search() {
        assert!(CHARS.windows(2).all(|pair| pair[0] < pair[1]));
    }

    #[test]
    fn times_and_helvetica_have_adobe_s_widths() {
        let times = StandardFont::named(b"Times-Roman").unwrap();
        assert_eq!((times.width(" "), times.width("a"), times.width("T")), (Some(250.0), Some(444.0), Some(611.0)));
        let arial_bold = StandardFont::named(b"ABCDEF+Arial,Bold").unwrap();
        assert_eq!(arial_bold.width("a"), Some(556.0));
        assert_eq!(StandardFont::named(b"Courier-Oblique").unwrap().width("W"), Some(600.0));
        assert!(StandardFont::named(b"CMR10").is_none());
    }

    #[test]
    fn each_font_reads_its_own_line_of_the_widths_file_to_its_end() {
        // "Times-Bold" is a prefix of "Times-BoldItalic", "Helvetica" of "Helvetica-Bold".
        assert_eq!((TIMES_BOLD[55], TIMES_BOLD_ITALIC[55]), (1000, 889), "W");
        assert_eq!((HELVETICA[55], HELVETICA_BOLD[55]), (944, 944), "W");
        let last =
            [TIMES_ROMAN, TIMES_BOLD, TIMES_ITALIC, TIMES_BOLD_ITALIC, HELVETICA, HELVETICA_BOLD].map(|t| t[229]);
        assert_eq!(last, [556, 556, 500, 556, 500, 611], "ﬂ");
    }
}
