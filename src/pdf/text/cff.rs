//! The built-in encoding of a CFF font program (`/FontFile3` of `/Subtype /Type1C`): the glyph
//! name each single-byte code shows, read from the program's Top DICT, charset and encoding.
//!
//! Distiller and Ghostscript embed TeX's fonts this way and name no `/Encoding` in the PDF, so
//! the program's own encoding is the only one that says code 12 is `fi` and code 123 `endash`.
//! Only what that needs is read; every offset is checked against the program's length, and a
//! program that does not parse gives no encoding rather than an error.

use std::ops::Range;

use super::font::GlyphName;

/// The `(code, glyph name)` pairs of the program's custom encoding; `None` when it uses the
/// standard or expert encoding, is CID-keyed, or does not parse.
pub(super) fn builtin_encoding(program: &[u8]) -> Option<Vec<GlyphName>> {
    let header_size = usize::from(*program.get(2)?);
    let (_names, after_names) = index(program, header_size)?;
    let (top_dicts, after_top) = index(program, after_names)?;
    let (strings, _) = index(program, after_top)?;
    let top = dict_entries(program.get(top_dicts.first()?.clone())?);
    let operand = |operator: u16| top.iter().find(|(op, _)| *op == operator).and_then(|(_, operands)| operands.last());
    // A CID-keyed program (`ROS`) maps codes through a CMap, not an encoding.
    if operand(ROS).is_some() {
        return None;
    }
    let encoding_offset = operand(ENCODING).copied().unwrap_or(0);
    if encoding_offset <= 1 {
        return None;
    }
    let charstrings = usize::try_from(*operand(CHARSTRINGS)?).ok()?;
    let (glyphs, _) = index(program, charstrings)?;
    let charset = charset(program, operand(CHARSET).copied().unwrap_or(0), glyphs.len())?;
    let name = |sid: u16| -> Option<Vec<u8>> {
        match STANDARD_STRINGS.get(usize::from(sid)) {
            Some(name) => Some(name.as_bytes().to_vec()),
            None => program.get(strings.get(usize::from(sid) - STANDARD_STRINGS.len())?.clone()).map(<[u8]>::to_vec),
        }
    };
    let mut pairs = Vec::new();
    for (code, sid) in encoding(program, usize::try_from(encoding_offset).ok()?, &charset)? {
        if let Some(name) = name(sid).filter(|name| name.as_slice() != b".notdef") {
            pairs.push((code, name));
        }
    }
    Some(pairs)
}

const CHARSET: u16 = 15;
const ENCODING: u16 = 16;
const CHARSTRINGS: u16 = 17;
const ROS: u16 = 1230;

/// The byte ranges of the items of the INDEX at `at`, and where the INDEX ends.
fn index(bytes: &[u8], at: usize) -> Option<(Vec<Range<usize>>, usize)> {
    let count = usize::from(u16_at(bytes, at)?);
    if count == 0 {
        return Some((Vec::new(), at + 2));
    }
    let offset_size = usize::from(*bytes.get(at + 2)?);
    if !(1..=4).contains(&offset_size) {
        return None;
    }
    let offsets = at + 3;
    // Offsets count from 1, from the byte before the data.
    let data = offsets + (count + 1) * offset_size - 1;
    let offset = |i: usize| -> Option<usize> {
        let start = offsets + i * offset_size;
        Some(bytes.get(start..start + offset_size)?.iter().fold(0, |value, &b| (value << 8) | usize::from(b)))
    };
    let mut items = Vec::with_capacity(count);
    let mut previous = offset(0)?;
    for i in 1..=count {
        let next = offset(i)?;
        if next < previous || data + next > bytes.len() {
            return None;
        }
        items.push(data + previous..data + next);
        previous = next;
    }
    Some((items, data + previous))
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]))
}

/// A DICT's `(operator, operands)` entries; two-byte operators `12 x` as `1200 + x`, real
/// operands as 0 (none of those read here is real).
fn dict_entries(data: &[u8]) -> Vec<(u16, Vec<i64>)> {
    let mut entries = Vec::new();
    let mut operands = Vec::new();
    let mut at = 0;
    while let Some(&b0) = data.get(at) {
        at += 1;
        let byte = |i: usize| data.get(at + i).copied().map_or(0, i64::from);
        match b0 {
            12 => {
                entries.push((1200 + byte(0) as u16, std::mem::take(&mut operands)));
                at += 1;
            }
            0..=21 => entries.push((u16::from(b0), std::mem::take(&mut operands))),
            28 => {
                operands.push(i64::from(i16::from_be_bytes([byte(0) as u8, byte(1) as u8])));
                at += 2;
            }
            29 => {
                operands.push(i64::from(i32::from_be_bytes([
                    byte(0) as u8,
                    byte(1) as u8,
                    byte(2) as u8,
                    byte(3) as u8,
                ])));
                at += 4;
            }
            30 => {
                // Nibbles up to and including one of 0xf.
                while let Some(&b) = data.get(at) {
                    at += 1;
                    if b & 0x0f == 0x0f || b >> 4 == 0x0f {
                        break;
                    }
                }
                operands.push(0);
            }
            32..=246 => operands.push(i64::from(b0) - 139),
            247..=250 => {
                operands.push((i64::from(b0) - 247) * 256 + byte(0) + 108);
                at += 1;
            }
            251..=254 => {
                operands.push(-(i64::from(b0) - 251) * 256 - byte(0) - 108);
                at += 1;
            }
            _ => {}
        }
    }
    entries
}

/// The string id of each glyph, by glyph index (glyph 0 is `.notdef`).
fn charset(program: &[u8], offset: i64, glyphs: usize) -> Option<Vec<u16>> {
    let mut sids = vec![0u16];
    match offset {
        // ISOAdobe: glyph i is string i.
        0 => sids.extend((1..glyphs.min(229)).map(|gid| gid as u16)),
        // The expert charsets name glyphs no text font's encoding uses.
        1 | 2 => return None,
        _ => {
            let mut at = usize::try_from(offset).ok()?;
            let format = *program.get(at)?;
            at += 1;
            while sids.len() < glyphs {
                match format {
                    0 => {
                        sids.push(u16_at(program, at)?);
                        at += 2;
                    }
                    1 | 2 => {
                        let first = u16_at(program, at)?;
                        let left =
                            if format == 1 { u16::from(*program.get(at + 2)?) } else { u16_at(program, at + 2)? };
                        at += if format == 1 { 3 } else { 4 };
                        sids.extend((0..=left).map(|k| first.saturating_add(k)).take(glyphs - sids.len()));
                    }
                    _ => return None,
                }
            }
        }
    }
    Some(sids)
}

/// The `(code, string id)` pairs of the custom encoding at `at`, supplements included.
fn encoding(program: &[u8], mut at: usize, charset: &[u16]) -> Option<Vec<(u8, u16)>> {
    let format = *program.get(at)?;
    at += 1;
    let sid = |gid: usize| charset.get(gid).copied();
    let mut pairs = Vec::new();
    match format & 0x7f {
        0 => {
            let count = usize::from(*program.get(at)?);
            let codes = program.get(at + 1..at + 1 + count)?;
            pairs.extend(codes.iter().enumerate().filter_map(|(i, &code)| Some((code, sid(i + 1)?))));
            at += 1 + count;
        }
        1 => {
            let ranges = usize::from(*program.get(at)?);
            let mut gid = 1;
            for range in program.get(at + 1..at + 1 + 2 * ranges)?.chunks(2) {
                for code in range[0]..=range[0].saturating_add(range[1]) {
                    if let Some(sid) = sid(gid) {
                        pairs.push((code, sid));
                    }
                    gid += 1;
                }
            }
            at += 1 + 2 * ranges;
        }
        _ => return None,
    }
    if format & 0x80 != 0 {
        let count = usize::from(*program.get(at)?);
        for supplement in program.get(at + 1..at + 1 + 3 * count)?.chunks(3) {
            pairs.push((supplement[0], u16::from_be_bytes([supplement[1], supplement[2]])));
        }
    }
    Some(pairs)
}

/// The names of string ids 0 to 390, which a CFF program does not store (CFF spec, appendix A).
#[rustfmt::skip]
const STANDARD_STRINGS: [&str; 391] = [
    ".notdef", "space", "exclam", "quotedbl", "numbersign", "dollar", "percent", "ampersand", "quoteright",
    "parenleft", "parenright", "asterisk", "plus", "comma", "hyphen", "period", "slash", "zero", "one", "two",
    "three", "four", "five", "six", "seven", "eight", "nine", "colon", "semicolon", "less", "equal", "greater",
    "question", "at", "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R", "S",
    "T", "U", "V", "W", "X", "Y", "Z", "bracketleft", "backslash", "bracketright", "asciicircum", "underscore",
    "quoteleft", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t",
    "u", "v", "w", "x", "y", "z", "braceleft", "bar", "braceright", "asciitilde", "exclamdown", "cent", "sterling",
    "fraction", "yen", "florin", "section", "currency", "quotesingle", "quotedblleft", "guillemotleft",
    "guilsinglleft", "guilsinglright", "fi", "fl", "endash", "dagger", "daggerdbl", "periodcentered", "paragraph",
    "bullet", "quotesinglbase", "quotedblbase", "quotedblright", "guillemotright", "ellipsis", "perthousand",
    "questiondown", "grave", "acute", "circumflex", "tilde", "macron", "breve", "dotaccent", "dieresis", "ring",
    "cedilla", "hungarumlaut", "ogonek", "caron", "emdash", "AE", "ordfeminine", "Lslash", "Oslash", "OE",
    "ordmasculine", "ae", "dotlessi", "lslash", "oslash", "oe", "germandbls", "onesuperior", "logicalnot", "mu",
    "trademark", "Eth", "onehalf", "plusminus", "Thorn", "onequarter", "divide", "brokenbar", "degree", "thorn",
    "threequarters", "twosuperior", "registered", "minus", "eth", "multiply", "threesuperior", "copyright", "Aacute",
    "Acircumflex", "Adieresis", "Agrave", "Aring", "Atilde", "Ccedilla", "Eacute", "Ecircumflex", "Edieresis",
    "Egrave", "Iacute", "Icircumflex", "Idieresis", "Igrave", "Ntilde", "Oacute", "Ocircumflex", "Odieresis",
    "Ograve", "Otilde", "Scaron", "Uacute", "Ucircumflex", "Udieresis", "Ugrave", "Yacute", "Ydieresis", "Zcaron",
    "aacute", "acircumflex", "adieresis", "agrave", "aring", "atilde", "ccedilla", "eacute", "ecircumflex",
    "edieresis", "egrave", "iacute", "icircumflex", "idieresis", "igrave", "ntilde", "oacute", "ocircumflex",
    "odieresis", "ograve", "otilde", "scaron", "uacute", "ucircumflex", "udieresis", "ugrave", "yacute", "ydieresis",
    "zcaron", "exclamsmall", "Hungarumlautsmall", "dollaroldstyle", "dollarsuperior", "ampersandsmall", "Acutesmall",
    "parenleftsuperior", "parenrightsuperior", "twodotenleader", "onedotenleader", "zerooldstyle", "oneoldstyle",
    "twooldstyle", "threeoldstyle", "fouroldstyle", "fiveoldstyle", "sixoldstyle", "sevenoldstyle", "eightoldstyle",
    "nineoldstyle", "commasuperior", "threequartersemdash", "periodsuperior", "questionsmall", "asuperior",
    "bsuperior", "centsuperior", "dsuperior", "esuperior", "isuperior", "lsuperior", "msuperior", "nsuperior",
    "osuperior", "rsuperior", "ssuperior", "tsuperior", "ff", "ffi", "ffl", "parenleftinferior",
    "parenrightinferior", "Circumflexsmall", "hyphensuperior", "Gravesmall", "Asmall", "Bsmall", "Csmall", "Dsmall",
    "Esmall", "Fsmall", "Gsmall", "Hsmall", "Ismall", "Jsmall", "Ksmall", "Lsmall", "Msmall", "Nsmall", "Osmall",
    "Psmall", "Qsmall", "Rsmall", "Ssmall", "Tsmall", "Usmall", "Vsmall", "Wsmall", "Xsmall", "Ysmall", "Zsmall",
    "colonmonetary", "onefitted", "rupiah", "Tildesmall", "exclamdownsmall", "centoldstyle", "Lslashsmall",
    "Scaronsmall", "Zcaronsmall", "Dieresissmall", "Brevesmall", "Caronsmall", "Dotaccentsmall", "Macronsmall",
    "figuredash", "hypheninferior", "Ogoneksmall", "Ringsmall", "Cedillasmall", "questiondownsmall", "oneeighth",
    "threeeighths", "fiveeighths", "seveneighths", "onethird", "twothirds", "zerosuperior", "foursuperior",
    "fivesuperior", "sixsuperior", "sevensuperior", "eightsuperior", "ninesuperior", "zeroinferior", "oneinferior",
    "twoinferior", "threeinferior", "fourinferior", "fiveinferior", "sixinferior", "seveninferior", "eightinferior",
    "nineinferior", "centinferior", "dollarinferior", "periodinferior", "commainferior", "Agravesmall",
    "Aacutesmall", "Acircumflexsmall", "Atildesmall", "Adieresissmall", "Aringsmall", "AEsmall", "Ccedillasmall",
    "Egravesmall", "Eacutesmall", "Ecircumflexsmall", "Edieresissmall", "Igravesmall", "Iacutesmall",
    "Icircumflexsmall", "Idieresissmall", "Ethsmall", "Ntildesmall", "Ogravesmall", "Oacutesmall",
    "Ocircumflexsmall", "Otildesmall", "Odieresissmall", "OEsmall", "Oslashsmall", "Ugravesmall", "Uacutesmall",
    "Ucircumflexsmall", "Udieresissmall", "Yacutesmall", "Thornsmall", "Ydieresissmall", "001.000", "001.001",
    "001.002", "001.003", "Black", "Bold", "Book", "Light", "Medium", "Regular", "Roman", "Semibold",
];

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A CFF program of three glyphs, `.notdef`, `fi` (a standard string) and `Gamma` (a string
    /// of its own), whose encoding shows `fi` at code 12 and `Gamma` at code 0, as TeX's CMR10
    /// does.
    pub(crate) fn program() -> Vec<u8> {
        fn index(items: &[&[u8]]) -> Vec<u8> {
            let mut out = (items.len() as u16).to_be_bytes().to_vec();
            if items.is_empty() {
                return out;
            }
            out.push(1);
            let mut offset = 1u8;
            out.push(offset);
            for item in items {
                offset += item.len() as u8;
                out.push(offset);
            }
            for item in items {
                out.extend_from_slice(item);
            }
            out
        }
        let header = [1u8, 0, 4, 1];
        let names = index(&[b"F".as_slice()]);
        let strings = index(&[b"Gamma".as_slice()]);
        let global_subroutines = index(&[]);
        // charset format 0: glyph 1 is string 109 (`fi`), glyph 2 string 391 (the first own).
        let charset = [0u8, 0, 109, 0x01, 0x87];
        // encoding format 0, two codes: glyph 1 at 12, glyph 2 at 0.
        let encoding = [0u8, 2, 12, 0];
        let charstrings = index(&[&[14u8][..], &[14], &[14]]);
        // The Top DICT holds three offsets, each as a five-byte integer and its operator.
        let top_dict_length = 3 * 6;
        let top_index_length = 2 + 1 + 2 + top_dict_length;
        let charset_at = header.len() + names.len() + top_index_length + strings.len() + global_subroutines.len();
        let encoding_at = charset_at + charset.len();
        let charstrings_at = encoding_at + encoding.len();
        let mut top = Vec::new();
        for (offset, operator) in [(charset_at, CHARSET), (encoding_at, ENCODING), (charstrings_at, CHARSTRINGS)] {
            top.push(29);
            top.extend((offset as i32).to_be_bytes());
            top.push(operator as u8);
        }
        let mut program = header.to_vec();
        for part in [names, index(&[top.as_slice()]), strings, global_subroutines] {
            program.extend(part);
        }
        assert_eq!(program.len(), charset_at);
        for part in [&charset[..], &encoding[..], &charstrings[..]] {
            program.extend_from_slice(part);
        }
        program
    }

    #[test]
    fn a_custom_encoding_names_standard_and_own_strings() {
        assert_eq!(builtin_encoding(&program()), Some(vec![(12, b"fi".to_vec()), (0, b"Gamma".to_vec())]));
    }

    #[test]
    fn the_standard_encoding_is_no_builtin_one() {
        let mut program = program();
        // The Encoding operand, set to 0: the standard encoding.
        let at = program.iter().position(|&b| b == ENCODING as u8).unwrap() - 4;
        program[at..at + 4].copy_from_slice(&0i32.to_be_bytes());
        assert_eq!(builtin_encoding(&program), None);
    }

    #[test]
    fn a_truncated_program_gives_no_encoding() {
        let program = program();
        for length in 0..program.len() - 3 {
            assert_eq!(builtin_encoding(&program[..length]), None, "{length} bytes");
        }
    }
}
