//! A size a result must fit in, as a person writes it: `shrink 10MB`, `split 45MB`.
//!
//! Units are decimal (`kB`, `MB`, `GB`: 1000s), as Telegram states its limits ("50 MB"), with
//! the binary ones (`KiB`, `MiB`, `GiB`) for whoever writes them; any case, a fraction allowed
//! (`1.5MB`), the unit joined to the number or apart (`10 MB`). A target is at least
//! [`SizeTarget::MIN`]: below that no PDF page fits, and a typo (`10B`) is better refused than
//! run.

use std::fmt;

/// A byte count a result must not exceed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SizeTarget(u64);

/// What is wrong with a written size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeProblem {
    /// Not a number and a unit like `10MB`.
    Unreadable,
    /// Under [`SizeTarget::MIN`].
    TooSmall,
}

const UNITS: [(&str, u64); 7] = [
    ("b", 1),
    ("kb", 1_000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
];

impl SizeTarget {
    /// The smallest target taken: 10 kB.
    pub const MIN: SizeTarget = SizeTarget(10_000);

    /// A target of `bytes`, at least [`SizeTarget::MIN`] (a smaller count is raised to it).
    pub const fn bytes(bytes: u64) -> Self {
        if bytes < Self::MIN.0 { Self::MIN } else { Self(bytes) }
    }

    /// The byte count.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Whether `word` is written as a size (digits then a unit, `10MB`), as opposed to a page
    /// list (`1-3,7`): what tells `split 45MB` from `split 2-5`.
    pub fn looks_like_one(word: &str) -> bool {
        let unit = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        unit.len() < word.len() && Self::is_unit(unit)
    }

    /// Whether `word` is a unit of size (`MB`, `kib`), as `10 MB` writes it apart.
    pub fn is_unit(word: &str) -> bool {
        let unit = word.to_ascii_lowercase();
        UNITS.iter().any(|(name, _)| *name == unit)
    }

    /// Reads a size from one word (`10MB`) or two (`10`, `MB`).
    pub fn parse_words(words: &[&str]) -> Result<Self, SizeProblem> {
        match words {
            [one] => one.parse(),
            [number, unit] if Self::is_unit(unit) => format!("{number}{unit}").parse(),
            _ => Err(SizeProblem::Unreadable),
        }
    }
}

impl std::str::FromStr for SizeTarget {
    type Err = SizeProblem;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or(SizeProblem::Unreadable)?;
        let (number, unit) = s.split_at(split);
        let unit = unit.to_ascii_lowercase();
        let multiplier =
            UNITS.iter().find(|(name, _)| *name == unit).map(|(_, m)| *m).ok_or(SizeProblem::Unreadable)?;
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() || fraction.contains('.') || fraction.len() > 6 {
            return Err(SizeProblem::Unreadable);
        }
        let whole: u64 = whole.parse().map_err(|_| SizeProblem::Unreadable)?;
        let fraction_value: u64 =
            if fraction.is_empty() { 0 } else { fraction.parse().map_err(|_| SizeProblem::Unreadable)? };
        let scale = 10u64.pow(u32::try_from(fraction.len()).unwrap_or(0));
        let bytes = whole
            .checked_mul(multiplier)
            .and_then(|b| b.checked_add(fraction_value.checked_mul(multiplier)? / scale))
            .ok_or(SizeProblem::Unreadable)?;
        if bytes < Self::MIN.0 {
            return Err(SizeProblem::TooSmall);
        }
        Ok(Self(bytes))
    }
}

/// The shortest decimal form that reads back to the same count: `50MB`, `1500kB`, `10001B`.
impl fmt::Display for SizeTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit, size) in [("GB", 1_000_000_000), ("MB", 1_000_000), ("kB", 1_000)] {
            if self.0.is_multiple_of(size) {
                return write!(f, "{}{unit}", self.0 / size);
            }
        }
        write!(f, "{}B", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(s: &str) -> u64 {
        s.parse::<SizeTarget>().unwrap_or_else(|e| panic!("{s}: {e:?}")).get()
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size("10MB"), 10_000_000);
        assert_eq!(size("10mb"), 10_000_000);
        assert_eq!(size("1.5MB"), 1_500_000);
        assert_eq!(size("500kB"), 500_000);
        assert_eq!(size("2MiB"), 2 << 20);
        assert_eq!(size("1GB"), 1_000_000_000);
        assert_eq!(SizeTarget::parse_words(&["10", "MB"]), Ok(SizeTarget(10_000_000)));
    }

    #[test]
    fn wrong_sizes_say_why() {
        for wrong in ["MB", "10", "10 MB", "ten MB", "1.2.3MB", "10XB", "", "-5MB", "99999999999999GB"] {
            assert_eq!(wrong.parse::<SizeTarget>(), Err(SizeProblem::Unreadable), "{wrong}");
        }
        assert_eq!("10B".parse::<SizeTarget>(), Err(SizeProblem::TooSmall));
        assert_eq!("9kB".parse::<SizeTarget>(), Err(SizeProblem::TooSmall));
        assert_eq!(SizeTarget::parse_words(&["10", "pages"]), Err(SizeProblem::Unreadable));
    }

    #[test]
    fn the_written_form_reads_back() {
        for written in ["50MB", "1500kB", "10001B", "2GB"] {
            assert_eq!(written.parse::<SizeTarget>().map(|t| t.to_string()), Ok(written.to_owned()));
        }
        assert_eq!(SizeTarget::bytes(2 << 20).to_string().parse::<SizeTarget>(), Ok(SizeTarget(2 << 20)));
        assert_eq!(SizeTarget::bytes(5), SizeTarget::MIN);
    }

    #[test]
    fn a_size_is_told_from_a_page_list() {
        for size in ["45MB", "1.5mb", "500kB", "2MiB"] {
            assert!(SizeTarget::looks_like_one(size), "{size}");
        }
        for not_size in ["1-3,7", "10-", "5", "MB", "b"] {
            assert!(!SizeTarget::looks_like_one(not_size), "{not_size}");
        }
    }
}
