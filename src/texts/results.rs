//! What a finished job says: the caption of a delivered result, a result removed early, and a
//! failure with its reason in words (with what to send instead when the format was wrong, and
//! what a detected format is called). The catalog's sections "Results and failures" and "What a
//! file is", and the wrong-format and hint messages of "Operations".

use super::catalog::{Lang, n, plain, render, s};
use super::values::{display_name, memory_size, minutes, run_label, size};
use crate::domain::{FailureReason, Job, Timestamp};

/// The caption of a delivered result.
pub fn ready_caption(lang: Lang, job: &Job) -> String {
    let before = job
        .source
        .as_ref()
        .map(|s| s.size)
        .or(job.submission.declared_size)
        .map(|b| size(lang, u64::try_from(b).unwrap_or(0)));
    let after = job.result.as_ref().map(|r| size(lang, u64::try_from(r.size).unwrap_or(0))).unwrap_or_default();
    let until = job.result.as_ref().map(|r| r.expires_at.date_utc()).unwrap_or_default();
    let mut args = vec![
        s("ticket", run_label(job)),
        s("name", display_name(lang, job.name())),
        s("after", after),
        s("until", until),
    ];
    match before {
        Some(before) => {
            args.push(s("before", before));
            render(lang, "ready-caption", &args)
        }
        None => render(lang, "ready-caption-no-source", &args),
    }
}

/// The label of the button that shrinks a result to fit in `limit` bytes.
pub fn shrink_to_fit(lang: Lang, limit: u64) -> String {
    render(lang, "button-shrink-to-fit", &[s("limit", size(lang, limit))])
}

/// The label of the button that splits a result into parts under `limit` bytes.
pub fn split_under(lang: Lang, limit: u64) -> String {
    render(lang, "button-split-under", &[s("limit", size(lang, limit))])
}

/// The caption of one part of a result sent in parts: its place, then the result's caption.
pub fn result_part_caption(lang: Lang, part: u32, parts: u32, caption: &str) -> String {
    render(lang, "result-part", &[n("part", u64::from(part)), n("parts", u64::from(parts)), s("caption", caption)])
}

/// The notice that a result was removed before its promised date to make room.
pub fn expired_early(lang: Lang, job: &Job, at: Timestamp) -> String {
    render(
        lang,
        "expired-early",
        &[s("ticket", run_label(job)), s("name", display_name(lang, job.name())), s("date", at.date_utc())],
    )
}

/// The notice of a failed job.
pub fn failed_notice(lang: Lang, ticket: impl std::fmt::Display, reason_text: &str) -> String {
    render(lang, "failed-notice", &[s("ticket", ticket.to_string()), s("reason", reason_text)])
}

/// Why a job failed, as a clause naming the file: "report.pdf is not a PDF (…)".
///
/// One arm per reason, kept in one match: the compiler checks that every reason has its words.
pub fn failure_reason(lang: Lang, name: &str, reason: &FailureReason) -> String {
    let name = s("name", display_name(lang, name));
    let size = |name: &'static str, bytes: u64| s(name, size(lang, bytes));
    let memory = |bytes: u64| s("limit", memory_size(lang, bytes));
    match reason {
        FailureReason::NotAPdf { found } => render(lang, "failure-not-a-pdf", &[name, s("found", found.as_str())]),
        FailureReason::TooBig { size: bytes, limit } => {
            render(lang, "failure-too-big", &[name, size("size", *bytes), size("limit", *limit)])
        }
        FailureReason::SizeMismatch { declared, real } => {
            render(lang, "failure-size-mismatch", &[name, size("real", *real), size("declared", *declared)])
        }
        FailureReason::Encrypted => render(lang, "failure-encrypted", &[name]),
        FailureReason::Unreadable => render(lang, "failure-unreadable", &[name]),
        FailureReason::NoPages => render(lang, "failure-no-pages", &[name]),
        FailureReason::ResultTooBig { size: bytes, limit, operation } => render(
            lang,
            "failure-result-too-big",
            &[name, size("size", *bytes), size("limit", *limit), s("hint", result_too_big_hint(lang, operation))],
        ),
        FailureReason::ResultGrewTooBig { limit, operation } => render(
            lang,
            "failure-result-grew-too-big",
            &[name, size("limit", *limit), s("hint", result_too_big_hint(lang, operation))],
        ),
        FailureReason::WroteTooMuch { limit } => render(lang, "failure-wrote-too-much", &[name, size("limit", *limit)]),
        FailureReason::WrongFormat { operation, accepts, found, found_label } if accepts == &["pdf"] => render(
            lang,
            "failure-wrong-format-pdf",
            &[
                name,
                s("found", format_name(lang, found_label, found)),
                s("why", pdf_only(lang, operation, found_label)),
            ],
        ),
        FailureReason::WrongFormat { operation, accepts, found, found_label } => {
            let accepts: Vec<&str> = accepts.iter().map(String::as_str).collect();
            let why = wrong_format(lang, operation, &accepts, &format_name(lang, found_label, found), found_label);
            render(lang, "failure-not-processed", &[name, s("why", why)])
        }
        FailureReason::NotSetUp { operation } if operation == "ocr" => {
            render(lang, "failure-not-processed", &[name, s("why", ocr_not_set_up(lang))])
        }
        FailureReason::NotSetUp { operation } => {
            render(lang, "failure-not-set-up", &[name, s("operation", operation.as_str())])
        }
        FailureReason::FileUnavailable => render(lang, "failure-file-unavailable", &[name]),
        FailureReason::GaveUp { attempts } => {
            render(lang, "failure-gave-up", &[name, n("attempts", u64::from(*attempts))])
        }
        FailureReason::SourceKeptVanishing { times } => {
            render(lang, "failure-source-kept-vanishing", &[name, n("times", u64::from(*times))])
        }
        FailureReason::NeedsTooMuchMemory { limit } => {
            render(lang, "failure-needs-too-much-memory", &[name, memory(*limit)])
        }
        FailureReason::TookTooLong { limit } => {
            render(lang, "failure-took-too-long", &[name, s("limit", minutes(lang, *limit))])
        }
        FailureReason::InflatesTooMuch { limit } => render(lang, "failure-inflates-too-much", &[name, memory(*limit)]),
        FailureReason::Crashed => render(lang, "failure-crashed", &[name]),
        FailureReason::ToolFailed { tool } => render(lang, "failure-tool-failed", &[name, s("tool", tool.as_str())]),
        FailureReason::Cancelled => render(lang, "failure-cancelled", &[name]),
        FailureReason::NoSuchPage { page, pages } => {
            render(lang, "failure-no-such-page", &[name, n("page", u64::from(*page)), n("pages", u64::from(*pages))])
        }
        FailureReason::WrongPassword => render(lang, "failure-wrong-password", &[name]),
        FailureReason::CannotShrinkTo { target, smallest } => {
            render(lang, "failure-cannot-shrink-to", &[name, size("target", *target), size("smallest", *smallest)])
        }
        FailureReason::PageTooBigForParts { page, size: bytes, target } => render(
            lang,
            "failure-page-too-big-for-parts",
            &[name, n("page", u64::from(*page)), size("size", *bytes), size("target", *target)],
        ),
        FailureReason::OfficeUnavailable => render(lang, "failure-office-unavailable", &[name]),
        FailureReason::NothingToMerge => plain(lang, "failure-nothing-to-merge"),
        FailureReason::TakenApart => plain(lang, "failure-taken-apart"),
        FailureReason::InPart { number, count, name: part_name, reason } => render(
            lang,
            "failure-in-part",
            &[
                n("number", u64::from(*number)),
                n("count", u64::from(*count)),
                s("reason", failure_reason(lang, part_name, reason)),
            ],
        ),
    }
}

/// Why an operation refuses a file of another format, and what to send instead: "split takes a
/// PDF; this is a PNG image: send it with the caption topdf, or without a caption".
pub fn wrong_format(lang: Lang, operation: &str, accepts: &[&str], found: &str, found_label: &str) -> String {
    let takes = match accepts {
        ["pdf"] => plain(lang, "takes-a-pdf"),
        labels if labels == crate::domain::Operation::ToPdf.accepts() => plain(lang, "takes-what-topdf-takes"),
        labels => labels.join(", "),
    };
    let id = if crate::domain::Operation::ToPdf.accepts().contains(&found_label) {
        "wrong-format-send-topdf"
    } else if found_label == "pdf" {
        "wrong-format-send-caption"
    } else {
        "wrong-format"
    };
    render(lang, id, &[s("operation", operation), s("takes", takes), s("found", found)])
}

/// What a file is, for people, from its detected format: its `label` (`png`, `zip`, `unknown`)
/// and the detection table's English `description` ("a PNG image"). Each language says it its
/// own way (English uses the description; Russian names the format by its label).
pub fn format_name(lang: Lang, label: &str, description: &str) -> String {
    render(
        lang,
        "format",
        &[s("label", label.to_owned()), s("upper", label.to_uppercase()), s("description", description.to_owned())],
    )
}

/// The note when the declared name or MIME type disagrees with the content: "sent as report.pdf,
/// but it is a ZIP archive".
pub fn declared_but_is(lang: Lang, declared: &str, found: &str) -> String {
    render(lang, "declared-but-is", &[s("declared", display_name(lang, declared)), s("found", found)])
}

/// The hint after a result over the upload limit, by operation.
pub fn result_too_big_hint(lang: Lang, operation: &str) -> String {
    match operation {
        "optimize" | "decrypt" | "rotate" | "topdf" | "ocr" => plain(lang, "hint-shrink-or-split"),
        "shrink" | "pages" => plain(lang, "hint-split"),
        "split" => plain(lang, "hint-smaller-parts"),
        _ => String::new(),
    }
}

/// A run of OCR on a bot where no OCR program is configured.
pub fn ocr_not_set_up(lang: Lang) -> String {
    plain(lang, "ocr-not-set-up")
}

/// After "X is not a PDF (…)": that the operation takes only PDFs, and what to send instead.
pub fn pdf_only(lang: Lang, operation: &str, found_label: &str) -> String {
    let id = if crate::domain::Operation::ToPdf.accepts().contains(&found_label) {
        "pdf-only-send-topdf"
    } else {
        "pdf-only"
    };
    render(lang, id, &[s("operation", operation)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Ticket;
    use crate::texts::tests::E;

    #[test]
    fn a_lying_name_gets_a_clear_reason() {
        let r = failure_reason(E, "report.pdf", &FailureReason::NotAPdf { found: "a PNG image".into() });
        assert_eq!(
            failed_notice(E, Ticket(4812), &r),
            "#4812 failed: report.pdf is not a PDF (the content looks like a PNG image)."
        );
    }
}
