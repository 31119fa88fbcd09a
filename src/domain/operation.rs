//! Operations: what a person asks docket to do with a document, and the words they ask with.
//!
//! A caption's first word names the operation and the rest are its arguments (`rotate 180 2,4`,
//! `pages 2-10`, `ocr rus+eng`, `decrypt PASSWORD`, `shrink 10MB`, `split 45MB`). [`Operation::parse`] reads that; the same
//! words, without a password, are what storage keeps ([`Operation::name`] and
//! [`Operation::arguments`]) and what `docket process --op NAME ARGS` takes.
//!
//! A decrypt's password is a [`Password`]: never shown by `Debug` or `Display`, never part of
//! [`Operation::arguments`]. Whoever stores a run keeps it apart from the arguments, and only
//! until the run ends.

use std::fmt;
use std::num::NonZeroU32;

use super::size_target::{SizeProblem, SizeTarget};

/// What is done to a document.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Lossless: recompress streams, drop unused and duplicate objects, never bigger.
    Optimize,
    /// Lossy: downsample and re-encode images above the configured resolution, then optimize;
    /// with a target, step resolution and quality down until the result fits in it.
    Shrink {
        /// The size the result must fit in; `None`: the configured settings, whatever comes out.
        target: Option<SizeTarget>,
    },
    /// Each page, or each listed range, as its own PDF, together in a ZIP.
    Split {
        /// The ranges, each one output; `None`: every page on its own.
        ranges: Option<PageRanges>,
    },
    /// Consecutive pages in parts each at most `under`, together in a ZIP whose entries are sent
    /// one by one, each as its own document.
    SplitBySize {
        /// The size every part must fit in.
        under: SizeTarget,
    },
    /// The listed pages, in the listed order, as one PDF.
    Pages {
        /// Which pages.
        ranges: PageRanges,
    },
    /// The text of every page as UTF-8, pages separated by a form feed.
    Text,
    /// A message describing the document, not a file.
    Info,
    /// Turn all pages, or the listed ones, clockwise.
    Rotate {
        /// By how much.
        angle: Angle,
        /// Which pages; `None`: all.
        pages: Option<PageRanges>,
    },
    /// Open a PDF with its user password and save it without encryption.
    Decrypt {
        /// The password the person gave.
        password: Password,
    },
    /// Add a text layer by optical character recognition (an external program).
    Ocr {
        /// Tesseract languages (`rus+eng`); `None`: the person's language.
        languages: Option<Languages>,
    },
    /// A picture (JPEG, PNG, TIFF, WebP, GIF, HEIF/HEIC, AVIF) as a one-page-per-image PDF, or an
    /// office document (Word, Excel, PowerPoint, OpenDocument, RTF) converted by LibreOffice.
    ToPdf,
    /// The files of a ticket of several (an album: pictures, PDFs or both) as one PDF, in their
    /// order: a PDF's pages as they are, a picture as a page made the way `topdf` makes it.
    Merge,
}

/// What an operation gives back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Output {
    /// A PDF file.
    Pdf,
    /// A ZIP of PDFs, sent as one file.
    Zip,
    /// A ZIP of PDFs kept as one file, each entry sent as its own document.
    Parts,
    /// A UTF-8 text file.
    Text,
    /// A message, not a file (the child writes the message's facts to its output file).
    Message,
}

impl Output {
    /// The file name extension of a result, without the dot.
    pub const fn extension(self) -> &'static str {
        match self {
            Self::Pdf => "pdf",
            Self::Zip | Self::Parts => "zip",
            Self::Text | Self::Message => "txt",
        }
    }
}

impl Operation {
    /// Every operation's name, in the order help lists them.
    pub const NAMES: [&'static str; 11] =
        ["optimize", "shrink", "split", "pages", "text", "info", "rotate", "decrypt", "ocr", "topdf", "merge"];

    /// Whether `word` names an operation, as a caption may write it (any case, a leading `/`).
    pub fn is_name(word: &str) -> bool {
        Self::NAMES.contains(&spelled(word).as_str())
    }

    /// The stable name stored in the database and accepted in captions and on the command line.
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Optimize => "optimize",
            Self::Shrink { .. } => "shrink",
            Self::Split { .. } | Self::SplitBySize { .. } => "split",
            Self::Pages { .. } => "pages",
            Self::Text => "text",
            Self::Info => "info",
            Self::Rotate { .. } => "rotate",
            Self::Decrypt { .. } => "decrypt",
            Self::Ocr { .. } => "ocr",
            Self::ToPdf => "topdf",
            Self::Merge => "merge",
        }
    }

    /// The arguments in their canonical written form, without any password: `180 2,4` for
    /// `rotate 180 2,4`, `""` when there are none. [`Operation::parse`] of the name and these
    /// gives the operation back (for a decrypt, with an empty password).
    pub fn arguments(&self) -> String {
        match self {
            Self::Optimize
            | Self::Shrink { target: None }
            | Self::Text
            | Self::Info
            | Self::ToPdf
            | Self::Merge
            | Self::Decrypt { .. } => String::new(),
            Self::Shrink { target: Some(target) } => target.to_string(),
            Self::SplitBySize { under } => under.to_string(),
            Self::Split { ranges } => ranges.as_ref().map(ToString::to_string).unwrap_or_default(),
            Self::Pages { ranges } => ranges.to_string(),
            Self::Rotate { angle, pages: None } => angle.to_string(),
            Self::Rotate { angle, pages: Some(pages) } => format!("{angle} {pages}"),
            Self::Ocr { languages } => languages.as_ref().map(ToString::to_string).unwrap_or_default(),
        }
    }

    /// What the operation gives back.
    pub const fn output(&self) -> Output {
        match self {
            Self::Split { .. } => Output::Zip,
            Self::SplitBySize { .. } => Output::Parts,
            Self::Text => Output::Text,
            Self::Info => Output::Message,
            _ => Output::Pdf,
        }
    }

    /// The formats it takes, as detected (labels of the detection table: `pdf`, `jpeg`, …).
    pub const fn accepts(&self) -> &'static [&'static str] {
        match self {
            Self::ToPdf => &[
                "jpeg", "png", "tiff", "webp", "gif", "heif", "avif", "doc", "docx", "odt", "rtf", "xls", "xlsx",
                "ods", "ppt", "pptx", "odp",
            ],
            Self::Merge => &["pdf", "jpeg", "png", "tiff", "webp", "gif", "heif", "avif"],
            _ => &["pdf"],
        }
    }

    /// Reads an operation from words: a caption, or a name and arguments from storage or the
    /// command line. The name is case-insensitive; a leading `/` is allowed (`/split`).
    pub fn parse(words: &str) -> Result<Self, ParseError> {
        let mut words = words.split_whitespace();
        let Some(first) = words.next() else { return Err(ParseError::Empty) };
        let name = spelled(first);
        let rest: Vec<&str> = words.collect();
        let no_arguments = |operation: Operation| {
            if rest.is_empty() {
                Ok(operation)
            } else {
                Err(ParseError::Arguments { operation: operation.name(), problem: ArgumentProblem::Unexpected })
            }
        };
        let bad = |operation: &'static str, problem: ArgumentProblem| ParseError::Arguments { operation, problem };
        match name.as_str() {
            "optimize" => no_arguments(Self::Optimize),
            "shrink" => match rest.as_slice() {
                [] => Ok(Self::Shrink { target: None }),
                size => Ok(Self::Shrink { target: Some(size_argument("shrink", size)?) }),
            },
            "text" => no_arguments(Self::Text),
            "info" => no_arguments(Self::Info),
            "topdf" => no_arguments(Self::ToPdf),
            "merge" => no_arguments(Self::Merge),
            "split" => match rest.as_slice() {
                [] => Ok(Self::Split { ranges: None }),
                [first, ..]
                    if SizeTarget::looks_like_one(first)
                        || rest.get(1).is_some_and(|unit| SizeTarget::is_unit(unit)) =>
                {
                    Ok(Self::SplitBySize { under: size_argument("split", &rest)? })
                }
                [ranges] => Ok(Self::Split { ranges: Some(ranges.parse().map_err(|p| bad("split", p))?) }),
                _ => Err(bad("split", ArgumentProblem::Unexpected)),
            },
            "pages" => match rest.as_slice() {
                [] => Err(bad("pages", ArgumentProblem::Missing)),
                [ranges] => Ok(Self::Pages { ranges: ranges.parse().map_err(|p| bad("pages", p))? }),
                _ => Err(bad("pages", ArgumentProblem::Unexpected)),
            },
            "rotate" => {
                let (angle, pages) = match rest.as_slice() {
                    [] => return Err(bad("rotate", ArgumentProblem::Missing)),
                    [angle] => (angle, None),
                    [angle, pages] => (angle, Some(pages.parse().map_err(|p| bad("rotate", p))?)),
                    _ => return Err(bad("rotate", ArgumentProblem::Unexpected)),
                };
                Ok(Self::Rotate { angle: angle.parse().map_err(|p| bad("rotate", p))?, pages })
            }
            "decrypt" => match rest.as_slice() {
                // Stored runs keep the password apart; parsing their arguments gives an empty one.
                [] => Ok(Self::Decrypt { password: Password::new(String::new()) }),
                // A password may contain spaces: everything after the name, as written.
                _ => Ok(Self::Decrypt { password: Password::new(rest.join(" ")) }),
            },
            "ocr" => match rest.as_slice() {
                [] => Ok(Self::Ocr { languages: None }),
                [languages] => Ok(Self::Ocr { languages: Some(languages.parse().map_err(|p| bad("ocr", p))?) }),
                _ => Err(bad("ocr", ArgumentProblem::Unexpected)),
            },
            _ => Err(ParseError::Unknown(first.chars().take(32).collect())),
        }
    }

    /// [`Operation::parse`] of a stored name and its stored arguments.
    pub fn from_stored(name: &str, arguments: &str) -> Result<Self, ParseError> {
        if name.split_whitespace().count() != 1 {
            return Err(ParseError::Unknown(name.chars().take(32).collect()));
        }
        Self::parse(&format!("{name} {arguments}"))
    }
}

/// What a chat or the bot may run by default, on a document sent without a caption.
impl Operation {
    /// The operations that need no arguments and take any PDF: the choices of `/mode` and of
    /// `[processing] default_operation`, in the order `/mode` lists them.
    pub const MODES: [&'static str; 6] = ["optimize", "shrink", "split", "text", "info", "ocr"];

    /// The default operation named `name`, if it is one of [`Operation::MODES`].
    pub fn mode(name: &str) -> Option<Self> {
        let name = spelled(name.trim());
        if !Self::MODES.contains(&name.as_str()) {
            return None;
        }
        Self::parse(&name).ok()
    }
}

/// A size target written as one word or two (`10MB`, `10 MB`), for `operation`'s error.
fn size_argument(operation: &'static str, words: &[&str]) -> Result<SizeTarget, ParseError> {
    SizeTarget::parse_words(words).map_err(|problem| ParseError::Arguments {
        operation,
        problem: match problem {
            SizeProblem::Unreadable => ArgumentProblem::Size,
            SizeProblem::TooSmall => ArgumentProblem::SizeTooSmall,
        },
    })
}

/// An operation's name as `word` writes it: case-insensitive, a leading `/` allowed (`/Split`).
fn spelled(word: &str) -> String {
    word.trim_start_matches('/').to_lowercase()
}

/// `Debug` never shows a password.
impl fmt::Debug for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Operation({self})")
    }
}

/// The name and arguments as a person writes them, without any password: `rotate 180 2,4`.
impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let arguments = self.arguments();
        if arguments.is_empty() { f.write_str(self.name()) } else { write!(f, "{} {arguments}", self.name()) }
    }
}

/// Why words are not an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Nothing was written.
    #[error("no operation named")]
    Empty,
    /// The first word names no operation (shortened to 32 characters).
    #[error("{0:?} is not an operation")]
    Unknown(String),
    /// The operation is known; its arguments are not right.
    #[error("{operation}: {problem}")]
    Arguments {
        /// Its name.
        operation: &'static str,
        /// What is wrong.
        problem: ArgumentProblem,
    },
}

/// What is wrong with an operation's arguments.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArgumentProblem {
    /// It needs arguments and got none.
    #[error("arguments missing")]
    Missing,
    /// More arguments than it takes.
    #[error("too many arguments")]
    Unexpected,
    /// Not page numbers and ranges like `1-3,7,10-`.
    #[error("not a page list like 1-3,7,10-")]
    Pages,
    /// A page number of 0, or a range that runs backwards.
    #[error("pages count from 1, and a range goes up")]
    PageOrder,
    /// Not 90, 180 or 270 (or -90).
    #[error("the angle is 90, 180 or 270")]
    Angle,
    /// Not Tesseract language codes like `rus+eng`.
    #[error("not languages like rus+eng")]
    Languages,
    /// Not a size like `10MB`.
    #[error("not a size like 10MB")]
    Size,
    /// A size under [`SizeTarget::MIN`].
    #[error("a size is at least 10kB")]
    SizeTooSmall,
}

/// Page numbers and ranges, in the order written: `1-3,7,10-` (`10-`: from 10 to the end).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PageRanges(Vec<PageRange>);

/// One page, or pages `first` to `last` (the last page when `last` is `None`). From 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageRange {
    /// The first page.
    pub first: NonZeroU32,
    /// The last page, included; `None`: to the end of the document.
    pub last: Option<NonZeroU32>,
}

/// The most ranges one list may hold: a caption is short, and a list is checked against a
/// document of unknown size only when it runs.
pub const MAX_RANGES: usize = 1000;

impl PageRanges {
    /// The ranges, in the order written.
    pub fn ranges(&self) -> &[PageRange] {
        &self.0
    }

    /// The pages of a document of `page_count` pages, range by range, each range's pages in
    /// order; `Err(page)` names the first listed page the document does not have.
    pub fn resolve(&self, page_count: u32) -> Result<Vec<Vec<u32>>, u32> {
        self.0
            .iter()
            .map(|range| {
                let first = range.first.get();
                let last = range.last.map_or(page_count, NonZeroU32::get);
                if first > page_count {
                    return Err(first);
                }
                if last > page_count {
                    return Err(last);
                }
                Ok((first..=last).collect())
            })
            .collect()
    }
}

impl std::str::FromStr for PageRanges {
    type Err = ArgumentProblem;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let number = |s: &str| -> Result<NonZeroU32, ArgumentProblem> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ArgumentProblem::Pages);
            }
            let n: u32 = s.parse().map_err(|_| ArgumentProblem::Pages)?;
            NonZeroU32::new(n).ok_or(ArgumentProblem::PageOrder)
        };
        let mut ranges = Vec::new();
        for part in s.split(',') {
            let range = match part.split_once('-') {
                None => PageRange { first: number(part)?, last: Some(number(part)?) },
                Some((first, "")) => PageRange { first: number(first)?, last: None },
                Some((first, last)) => {
                    let (first, last) = (number(first)?, number(last)?);
                    if last < first {
                        return Err(ArgumentProblem::PageOrder);
                    }
                    PageRange { first, last: Some(last) }
                }
            };
            ranges.push(range);
            if ranges.len() > MAX_RANGES {
                return Err(ArgumentProblem::Pages);
            }
        }
        Ok(Self(ranges))
    }
}

impl fmt::Display for PageRanges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, range) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match range.last {
                Some(last) if last == range.first => write!(f, "{}", range.first)?,
                Some(last) => write!(f, "{}-{last}", range.first)?,
                None => write!(f, "{}-", range.first)?,
            }
        }
        Ok(())
    }
}

/// A clockwise turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Angle {
    /// A quarter turn clockwise.
    Quarter,
    /// Upside down.
    Half,
    /// A quarter turn anticlockwise.
    ThreeQuarters,
}

impl Angle {
    /// In degrees, clockwise: 90, 180 or 270 (what a PDF's `/Rotate` adds).
    pub const fn degrees(self) -> u32 {
        match self {
            Self::Quarter => 90,
            Self::Half => 180,
            Self::ThreeQuarters => 270,
        }
    }
}

impl std::str::FromStr for Angle {
    type Err = ArgumentProblem;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim_end_matches('°') {
            "90" | "-270" => Ok(Self::Quarter),
            "180" | "-180" => Ok(Self::Half),
            "270" | "-90" => Ok(Self::ThreeQuarters),
            _ => Err(ArgumentProblem::Angle),
        }
    }
}

impl fmt::Display for Angle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.degrees())
    }
}

/// Tesseract language codes joined by `+` (`rus+eng`): lowercase letters, digits and `_` only,
/// so they can be handed to a program as one argument without any quoting question.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Languages(String);

impl Languages {
    /// As Tesseract takes them: `rus+eng`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for Languages {
    type Err = ArgumentProblem;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.to_lowercase();
        let code_ok = |code: &str| {
            (3..=16).contains(&code.len())
                && code.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        let codes: Vec<&str> = s.split('+').collect();
        if codes.len() > 8 || !codes.iter().all(|c| code_ok(c)) {
            return Err(ArgumentProblem::Languages);
        }
        Ok(Self(s))
    }
}

impl fmt::Display for Languages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A password a person gave. `Debug` and `Display` show `[password]`; only
/// [`Password::expose`] gives it, for the one call that opens the document.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Password(String);

impl Password {
    /// Wraps a password.
    pub fn new(password: String) -> Self {
        Self(password)
    }

    /// The password itself. Never log or store what this returns outside the run's own row.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether it is empty (a stored decrypt whose password was erased, or none was given).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[password]")
    }
}

impl fmt::Display for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[password]")
    }
}

#[cfg(test)]
mod tests;
