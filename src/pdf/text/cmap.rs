//! `/ToUnicode` CMaps: from character codes to the characters they stand for.
//!
//! lopdf's own reading keeps a `bfrange` whose target is more than one UTF-16 unit as that one
//! target for every code of the range, so a range of mathematical letters (`<41> <5A>
//! <D835DC9C>`, U+1D49C onwards, as pdfTeX writes for TeX's math fonts) reads as one letter
//! repeated; and a map it cannot read is lost as a whole. This reads `bfchar` and `bfrange`
//! (a start target, whose last character counts up along the range, or an array of targets)
//! as poppler does, skipping what it does not understand.

use std::collections::HashMap;

/// Codes one `bfrange` may map: two-byte codes end at 65 535.
const MAX_RANGE: u32 = 65_535;

/// A parsed `/ToUnicode` map.
#[derive(Debug, Default)]
pub(super) struct ToUnicode {
    singles: HashMap<u32, String>,
    /// `(first, last, characters of first)`: the last character counts up along the range.
    ranges: Vec<(u32, u32, Vec<char>)>,
}

impl ToUnicode {
    /// Reads a CMap program; `None` when it maps no code at all.
    pub(super) fn parse(program: &[u8]) -> Option<Self> {
        let tokens = tokens(program);
        let mut map = Self::default();
        let mut at = 0;
        while at < tokens.len() {
            match &tokens[at] {
                Token::Word(word) if word == b"beginbfchar" => {
                    at += 1;
                    while let (Some(Token::Hex(code)), Some(target)) = (tokens.get(at), tokens.get(at + 1)) {
                        if let Token::Hex(target) = target {
                            map.singles.insert(code_of(code), utf16(target).into_iter().collect());
                        }
                        at += 2;
                    }
                }
                Token::Word(word) if word == b"beginbfrange" => {
                    at += 1;
                    while let (Some(Token::Hex(first)), Some(Token::Hex(last)), Some(target)) =
                        (tokens.get(at), tokens.get(at + 1), tokens.get(at + 2))
                    {
                        let (first, last) = (code_of(first), code_of(last));
                        let last = last.min(first.saturating_add(MAX_RANGE));
                        match target {
                            Token::Hex(target) => {
                                if first <= last {
                                    map.ranges.push((first, last, utf16(target)));
                                }
                                at += 3;
                            }
                            Token::ArrayStart => {
                                at += 3;
                                let mut code = first;
                                while let Some(Token::Hex(target)) = tokens.get(at) {
                                    if code <= last {
                                        map.singles.insert(code, utf16(target).into_iter().collect());
                                    }
                                    code = code.saturating_add(1);
                                    at += 1;
                                }
                            }
                            _ => at += 3,
                        }
                    }
                }
                _ => at += 1,
            }
        }
        (!map.singles.is_empty() || !map.ranges.is_empty()).then_some(map)
    }

    /// The characters `code` stands for; `None` when the map does not say (or says U+FFFD).
    pub(super) fn get(&self, code: u32) -> Option<String> {
        if let Some(text) = self.singles.get(&code) {
            return (!text.is_empty() && !text.contains('\u{FFFD}')).then(|| text.clone());
        }
        // A later range overrides an earlier one.
        let (first, _, start) = self.ranges.iter().rev().find(|(first, last, _)| (*first..=*last).contains(&code))?;
        let (last, head) = start.split_last()?;
        let last = char::from_u32(u32::from(*last).checked_add(code - first)?)?;
        let mut text: String = head.iter().collect();
        text.push(last);
        (!text.contains('\u{FFFD}')).then_some(text)
    }
}

#[derive(Debug, PartialEq)]
enum Token {
    Hex(Vec<u8>),
    ArrayStart,
    Word(Vec<u8>),
    Other,
}

/// A big-endian code.
fn code_of(bytes: &[u8]) -> u32 {
    bytes.iter().take(4).fold(0u32, |code, &b| (code << 8) | u32::from(b))
}

/// The characters of a UTF-16BE target; a single byte is the character of that code.
fn utf16(bytes: &[u8]) -> Vec<char> {
    if bytes.len() == 1 {
        return vec![char::from(bytes[0])];
    }
    let units = bytes.chunks(2).map(|pair| (u16::from(pair[0]) << 8) | u16::from(*pair.get(1).unwrap_or(&0)));
    char::decode_utf16(units).map(|c| c.unwrap_or('\u{FFFD}')).collect()
}

/// The tokens of a CMap program that matter here: hex strings, array starts and bare words;
/// the rest (names, numbers, literal strings, dictionaries, array ends) as `Other`.
///
/// One pass of a lexer, one arm per kind of token: kept whole.
fn tokens(program: &[u8]) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut at = 0;
    let delimiter = |b: u8| b.is_ascii_whitespace() || b"<>[]{}()/%".contains(&b);
    while at < program.len() {
        let byte = program[at];
        match byte {
            b if b.is_ascii_whitespace() => at += 1,
            b'%' => {
                while at < program.len() && !matches!(program[at], b'\r' | b'\n') {
                    at += 1;
                }
            }
            b'<' if program.get(at + 1) == Some(&b'<') => {
                tokens.push(Token::Other);
                at += 2;
            }
            b'<' => {
                let end = program[at..].iter().position(|&b| b == b'>').map_or(program.len(), |p| at + p);
                let digits: Vec<u8> = program[at + 1..end].iter().copied().filter(u8::is_ascii_hexdigit).collect();
                let value = |d: u8| char::from(d).to_digit(16).unwrap_or(0) as u8;
                let hex =
                    digits.chunks(2).map(|pair| value(pair[0]) << 4 | pair.get(1).map_or(0, |&d| value(d))).collect();
                tokens.push(Token::Hex(hex));
                at = end + 1;
            }
            b'[' => {
                tokens.push(Token::ArrayStart);
                at += 1;
            }
            b'(' => {
                // A literal string: skipped, with its nesting and escapes.
                let (mut depth, mut escaped) = (0usize, false);
                while at < program.len() {
                    match program[at] {
                        _ if escaped => escaped = false,
                        b'\\' => escaped = true,
                        b'(' => depth += 1,
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    at += 1;
                }
                tokens.push(Token::Other);
                at += 1;
            }
            b']' | b'>' | b'{' | b'}' | b')' => {
                tokens.push(Token::Other);
                at += 1;
            }
            b'/' => {
                at += 1;
                while at < program.len() && !delimiter(program[at]) {
                    at += 1;
                }
                tokens.push(Token::Other);
            }
            _ => {
                let start = at;
                while at < program.len() && !delimiter(program[at]) {
                    at += 1;
                }
                tokens.push(Token::Word(program[start..at].to_vec()));
            }
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: &[u8] = b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n\
        /CMapName /Test def 1 begincodespacerange <00> <FF> endcodespacerange\n\
        2 beginbfrange\n<41> <5A> <D835DC9C>\n<61> <63> [<0066006C> <2013> <FFFD>]\nendbfrange\n\
        2 beginbfchar\n<42> <212C>\n<30> <0030>\nendbfchar\nendcmap CMapName currentdict /CMap defineresource pop end end";

    #[test]
    fn a_range_beyond_the_basic_plane_counts_up_its_last_character() {
        let map = ToUnicode::parse(PROGRAM).unwrap();
        assert_eq!(map.get(0x41).as_deref(), Some("𝒜"));
        assert_eq!(map.get(0x43).as_deref(), Some("𝒞"));
        assert_eq!(map.get(0x5A).as_deref(), Some("𝒵"));
    }

    #[test]
    fn single_codes_override_ranges_and_arrays_give_each_code_its_own() {
        let map = ToUnicode::parse(PROGRAM).unwrap();
        assert_eq!(map.get(0x42).as_deref(), Some("ℬ"));
        assert_eq!(map.get(0x30).as_deref(), Some("0"));
        assert_eq!(map.get(0x61).as_deref(), Some("fl"));
        assert_eq!(map.get(0x62).as_deref(), Some("–"));
        assert_eq!(map.get(0x63), None, "U+FFFD says nothing");
        assert_eq!(map.get(0x7A), None);
    }

    #[test]
    fn two_byte_codes_and_garbage_around_them() {
        let map = ToUnicode::parse(b"(a \\) b) beginbfchar <0003> <0020> <01 0A> <00660066> endbfchar").unwrap();
        assert_eq!(map.get(3).as_deref(), Some(" "));
        assert_eq!(map.get(0x010A).as_deref(), Some("ff"));
        assert!(ToUnicode::parse(b"begincmap endcmap").is_none());
    }
}
