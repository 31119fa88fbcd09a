//! The pieces sentences are built from, written the way each language reads them: byte and
//! memory sizes, durations and time limits, user file names as shown, a job's state in words, the
//! name of a run, and the clip that keeps a text within one Telegram message. They are the
//! catalog's sections "Sizes", "Durations" and "A job's states".

use humansize::{DECIMAL, FormatSizeOptions, format_size};

use super::catalog::{Lang, n, plain, render, s};
use crate::domain::{Job, JobState};

/// A byte count for people: decimal units with one decimal, as Telegram's apps show sizes, with
/// the language's decimal mark and unit names ("182.3 MB", "182,3 МБ").
pub fn size(lang: Lang, bytes: u64) -> String {
    if bytes < 1000 {
        return render(lang, "size-b", &[s("number", bytes.to_string())]);
    }
    scaled(lang, &format_size(bytes, FormatSizeOptions::from(DECIMAL).decimal_places(1).decimal_zeroes(1)))
}

/// A memory size in binary units, as limits are set: "2 GiB", "256 MiB" ("2 ГиБ").
pub fn memory_size(lang: Lang, bytes: u64) -> String {
    scaled(lang, &format_size(bytes, FormatSizeOptions::from(humansize::BINARY).space_after_value(true)))
}

/// `shown` ("12.3 MB", as humansize writes it) in `lang`: its number with the language's decimal
/// mark, its unit by the catalog. humansize does not localise, so only its unit is mapped.
fn scaled(lang: Lang, shown: &str) -> String {
    let (number, unit) = shown.split_once(' ').unwrap_or((shown, "B"));
    let id = match unit {
        "kB" => "size-kb",
        "MB" => "size-mb",
        "GB" => "size-gb",
        "TB" => "size-tb",
        "PB" => "size-pb",
        "EB" => "size-eb",
        "KiB" => "size-kib",
        "MiB" => "size-mib",
        "GiB" => "size-gib",
        "TiB" => "size-tib",
        "PiB" => "size-pib",
        "EiB" => "size-eib",
        _ => "size-b",
    };
    let number = number.replace('.', &plain(lang, "decimal-separator"));
    render(lang, id, &[s("number", number)])
}

/// A duration in whole days, hours, minutes and seconds, in the language: "7days", "1h 30m"
/// ("7 дней", "1 ч 30 мин"). English keeps humantime's compact form, which docket showed before.
pub fn duration(lang: Lang, d: std::time::Duration) -> String {
    let secs = d.as_secs();
    let parts = [
        ("duration-days", secs / 86_400),
        ("duration-hours", secs / 3_600 % 24),
        ("duration-minutes", secs / 60 % 60),
        ("duration-seconds", secs % 60),
    ];
    let shown: Vec<String> =
        parts.iter().filter(|(_, v)| *v > 0).map(|(id, v)| render(lang, id, &[n("n", *v)])).collect();
    if shown.is_empty() { render(lang, "duration-seconds", &[n("n", 0)]) } else { shown.join(" ") }
}

/// A user-supplied file name, shortened for display ("your file" in `lang` when nothing is left).
pub fn display_name(lang: Lang, name: &str) -> String {
    let clean = crate::domain::names::cleaned(name);
    if clean.is_empty() {
        return plain(lang, "your-file");
    }
    if clean.chars().count() > 80 { format!("{}…", clean.chars().take(79).collect::<String>()) } else { clean }
}

/// A byte count, or "size unknown" in `lang`.
pub(super) fn known_size(lang: Lang, bytes: Option<u64>) -> String {
    bytes.map(|b| size(lang, b)).unwrap_or_else(|| plain(lang, "size-unknown"))
}

/// A time limit in words, in one unit: "10 min", "90 s", "2 h".
pub fn minutes(lang: Lang, limit: std::time::Duration) -> String {
    let secs = limit.as_secs();
    match secs {
        s if s >= 3600 && s % 3600 == 0 => render(lang, "limit-hours", &[n("n", s / 3600)]),
        s if s >= 60 && s % 60 == 0 => render(lang, "limit-minutes", &[n("n", s / 60)]),
        s => render(lang, "limit-seconds", &[n("n", s)]),
    }
}

/// A state in words.
pub fn state_words(lang: Lang, state: JobState) -> String {
    plain(
        lang,
        match state {
            JobState::Accepted => "state-accepted",
            JobState::Fetched => "state-fetched",
            JobState::Processing => "state-processing",
            JobState::Ready => "state-ready",
            JobState::Failed => "state-failed",
            JobState::Expired => "state-expired",
        },
    )
}

/// How a run is named to people: its ticket (`#4812`) for the run a document arrived with, the
/// ticket and the operation (`#4812 shrink`) for a further one.
pub fn run_label(job: &Job) -> String {
    if job.is_further_run() {
        format!("{} {}", job.ticket_number(), job.submission.operation)
    } else {
        job.ticket.to_string()
    }
}

/// The longest text of one Telegram message, in the UTF-16 code units Telegram counts.
pub const MAX_MESSAGE_UNITS: usize = 4096;

/// `text`, cut at a character boundary with "…" when it is longer than one message may be.
pub fn clip_message(text: String) -> String {
    if text.encode_utf16().count() <= MAX_MESSAGE_UNITS {
        return text;
    }
    let mut units = 0;
    let mut clipped = String::new();
    for c in text.chars() {
        units += c.len_utf16();
        // Room for the "…" (one unit).
        if units > MAX_MESSAGE_UNITS - 1 {
            break;
        }
        clipped.push(c);
    }
    clipped.push('…');
    clipped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::texts::tests::{E, ru};

    #[test]
    fn sizes_read_like_telegram_shows_them() {
        assert_eq!(size(E, 12_300_000), "12.3 MB");
        assert_eq!(size(E, 9_100_000), "9.1 MB");
        assert_eq!(size(E, 512), "512 B");
    }
    #[test]
    fn hostile_names_are_tamed() {
        assert_eq!(display_name(E, "a\u{0}b\nc.pdf"), "abc.pdf");
        assert_eq!(display_name(E, &"x".repeat(500)).chars().count(), 80);
        assert_eq!(display_name(E, "  "), "your file");
    }

    #[test]
    fn long_multibyte_names_are_shortened_by_characters() {
        for wide in ["é", "中", "🦀", "e\u{301}"] {
            for pad in 0..4 {
                let name = format!("{}{}", "a".repeat(pad), wide.repeat(100));
                let shown = display_name(E, &name);
                assert_eq!(shown.chars().count(), 80, "{shown}");
                assert!(shown.ends_with('…'), "{shown}");
            }
        }
    }
    #[test]
    fn sizes_have_the_languages_units_and_decimal_mark() {
        assert_eq!(size(E, 182_300_000), "182.3 MB");
        assert_eq!(size(ru(), 182_300_000), "182,3 МБ");
        assert_eq!(size(ru(), 512), "512 Б");
        assert_eq!(size(ru(), 1_500), "1,5 КБ");
        assert_eq!(size(E, 1_500), "1.5 kB");
        assert_eq!(size(ru(), 2_000_000_000), "2,0 ГБ");
        assert_eq!(memory_size(E, 2 << 30), "2 GiB");
        assert_eq!(memory_size(ru(), 256 << 20), "256 МиБ");
        assert_eq!(memory_size(ru(), 3 << 29), "1,50 ГиБ");
    }

    #[test]
    fn durations_are_in_the_language() {
        let day = std::time::Duration::from_secs(86_400);
        assert_eq!(duration(E, 7 * day), "7days");
        assert_eq!(duration(E, day), "1day");
        assert_eq!(duration(E, std::time::Duration::from_secs(5_400)), "1h 30m");
        assert_eq!(duration(ru(), 7 * day), "7 дней");
        assert_eq!(duration(ru(), 2 * day), "2 дня");
        assert_eq!(duration(ru(), 21 * day), "21 день");
        assert_eq!(duration(ru(), std::time::Duration::from_secs(5_400)), "1 ч 30 мин");
        assert_eq!(duration(ru(), std::time::Duration::ZERO), "0 с");
        assert_eq!(minutes(ru(), std::time::Duration::from_secs(600)), "10 мин");
        assert_eq!(minutes(E, std::time::Duration::from_secs(7_200)), "2 h");
    }
}
