//! File names people send are data, never paths: docket names its files by ticket, and a
//! declared name is only shown in messages and given to a result. What may appear there is
//! decided here, once.

/// Whether `c` may appear in a name docket shows or gives a result: no control character (NUL,
/// newlines, escapes) and no invisible character that changes how the rest reads, such as the
/// bidirectional overrides (a U+202E before `fdp.exe` shows `report` + `exe.pdf`).
pub fn shows(c: char) -> bool {
    !c.is_control()
        && !matches!(
            c,
            '\u{061C}' | '\u{200B}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}'
        )
}

/// `name` with every character [`shows`] refuses taken out, and the spaces around it trimmed.
pub fn cleaned(name: &str) -> String {
    name.chars().filter(|c| shows(*c)).collect::<String>().trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_direction_overrides_are_taken_out() {
        assert_eq!(cleaned("report\u{202E}fdp.exe"), "reportfdp.exe");
        assert_eq!(cleaned("a\u{0}b\nc\u{1b}[31m.pdf"), "abc[31m.pdf");
        assert_eq!(cleaned("\u{2067}x\u{2069}\u{200F}.pdf "), "x.pdf");
        assert_eq!(cleaned("\u{feff}Отчёт 🦀.pdf"), "Отчёт 🦀.pdf");
        // Joiners inside emoji stay: they are part of what is shown.
        assert_eq!(cleaned("👩\u{200D}💻.pdf"), "👩\u{200D}💻.pdf");
    }
}
