//! The tests that cross the files of `texts`: every message rendered in every language, the
//! plural forms, and the property tests on hostile names. The helpers here serve the unit tests
//! of every file.

use std::time::Duration;

use super::*;
use crate::domain::incoming::UnusableKind;
use crate::domain::{ChatRef, FailureReason, Job, JobState, OutboxId, ResultFile, Ticket, Timestamp};

/// English, the language most tests read.
pub(super) const E: Lang = Lang::ENGLISH;

/// A job just accepted, as the status tests show it.
pub(super) fn job(ticket: i64, name: &str, size: Option<i64>) -> Job {
    Job::accepted_for_tests(ticket, name, size, Timestamp::from_millis(1_796_000_000_000))
}

/// Russian, the language with the most plural forms.
pub(super) fn ru() -> Lang {
    Lang::from_code("ru")
}

#[test]
fn a_file_without_a_name_is_called_so_in_the_chats_language() {
    let nameless = job(3, "", None);
    let russian = status(ru(), &nameless, &[]);
    assert!(russian.contains("ваш файл") && !russian.contains("your file"), "{russian}");
}

#[test]
fn russian_counts_take_their_plural_forms() {
    let ahead = |n| ticket_reply(ru(), "a.pdf", Some(1_000_000), Ticket(9), n);
    assert_eq!(ahead(0), "Получен a.pdf (1,0 МБ) — заявка #9, в очереди.");
    assert_eq!(ahead(1), "Получен a.pdf (1,0 МБ) — заявка #9, в очереди, перед ней 1 задание.");
    assert_eq!(ahead(2), "Получен a.pdf (1,0 МБ) — заявка #9, в очереди, перед ней 2 задания.");
    assert_eq!(ahead(5), "Получен a.pdf (1,0 МБ) — заявка #9, в очереди, перед ней 5 заданий.");
    assert_eq!(ahead(21), "Получен a.pdf (1,0 МБ) — заявка #9, в очереди, перед ней 21 задание.");
    assert_eq!(ahead(12), "Получен a.pdf (1,0 МБ) — заявка #9, в очереди, перед ней 12 заданий.");
    assert_eq!(forgotten(ru(), 3), "Готово: 3 заявки забыты вместе с файлами.");
    assert_eq!(forgotten(ru(), 11), "Готово: 11 заявок забыто вместе с файлами.");
    assert_eq!(forgotten(E, 1), "Done: 1 ticket is forgotten, with its files.");
    assert_eq!(forgotten(E, 0), "Done: there was nothing of yours to delete.");
    assert!(queue_full(ru(), "a.pdf", 4).contains("4 ваших файла уже ждут"));
    assert!(queue_full(E, "a.pdf", 1).contains("1 of your files is already"));
}

/// Calls every text function with arguments that reach each of its messages; `render` panics
/// in tests on an unknown id or a missing variable.
fn every_text(lang: Lang) -> Vec<String> {
    let facts =
        HelpFacts { download_limit: 20_000_000, upload_limit: 50_000_000, result_ttl: Duration::from_secs(7 * 86_400) };
    let mut job = job(4812, "contract.pdf", Some(182_000_000));
    let now = Timestamp::from_millis(1_796_601_600_000);
    let mut all = vec![
        language_name(lang),
        lang_question(lang),
        lang_chosen(lang),
        size(lang, 0),
        size(lang, u64::MAX),
        memory_size(lang, u64::MAX),
        duration(lang, Duration::from_secs(90_061)),
        display_name(lang, ""),
        ticket_reply(lang, "a.pdf", None, Ticket(1), 0),
        ticket_reply(lang, "a.pdf", Some(1), Ticket(1), 3),
        ticket_reply(lang, "a.pdf", Some(1), Ticket(1), QUEUE_COUNT_CAP + 1),
        already_ticket(lang, "a.pdf", Ticket(1), JobState::Processing),
        processing_again_after_expiry(lang, Ticket(1), now),
        trying_again_after_failure(lang, "a.pdf", Ticket(1)),
        too_big_to_accept(lang, "a.pdf", 30_000_000, 20_000_000),
        too_big_for_budget(lang, "a.pdf", 30_000_000, 20_000_000),
        queue_full(lang, "a.pdf", 50),
        not_allowed(lang, Some(42)),
        not_allowed(lang, None),
        send_a_document(lang),
        cannot_use(lang, UnusableKind::Sticker),
        cannot_use(lang, UnusableKind::Unreadable),
        cannot_use(lang, UnusableKind::OtherMessage),
        ready_caption(lang, &job),
        expired_early(lang, &job, now),
        delivery_alert(lang, OutboxId(5), ChatRef(7), Some(Ticket(1)), "blocked"),
        delivery_alert(lang, OutboxId(5), ChatRef(7), None, "blocked"),
        failed_notice(lang, Ticket(1), "x"),
        no_such_ticket(lang, Ticket(1)),
        status_usage(lang),
        jobs(lang, &[]),
        jobs(lang, &[(job.clone(), Vec::new())]),
        jobs(lang, &[(job.clone(), parts(1)), (job.clone(), parts(2)), (job.clone(), parts(5))]),
        album_reply(lang, &parts(3), Ticket(1), 0),
        album_question(lang, &parts(3), Ticket(1), 2, Duration::from_secs(3600)),
        album_merge_button(lang),
        album_each_button(lang),
        cancelled(lang, &job),
        cannot_cancel(lang, Ticket(1), JobState::Ready),
        cancel_usage(lang),
        retrying_for_admin(lang, &job),
        privacy(lang, &facts),
        forget_question(lang),
        forget_button(lang),
        forgotten(lang, 0),
        forgotten(lang, 1),
        forgotten(lang, 7),
        forgotten_reason(lang),
        invited(lang, &facts),
        admins_only(lang),
        start(lang, &facts),
        help(lang, &facts),
        minutes(lang, Duration::from_secs(3_600)),
        minutes(lang, Duration::from_secs(600)),
        minutes(lang, Duration::from_secs(90)),
    ];
    let stats_now = crate::domain::BotStats {
        jobs: vec![(JobState::Accepted, 3)],
        oldest_waiting: Some(Timestamp::from_millis(now.as_millis() - 90_000)),
        bytes_in_flight: 1_000_000,
        dead_chats: 1,
        flood_waits_last_hour: 2,
        hosts: vec!["a:1".into()],
    };
    all.push(stats(lang, &stats_now, 2_000_000_000, now));
    all.push(stats(lang, &crate::domain::BotStats::default(), 2_000_000_000, now));
    all.extend(command_list(lang).into_iter().map(|(_, description)| description));
    for state in JobState::ALL {
        all.push(state_words(lang, state));
    }
    let reasons = [
        FailureReason::NotAPdf { found: "a PNG image".into() },
        FailureReason::TooBig { size: 2, limit: 1 },
        FailureReason::SizeMismatch { declared: 2, real: 1 },
        FailureReason::Encrypted,
        FailureReason::Unreadable,
        FailureReason::NoPages,
        FailureReason::ResultTooBig { size: 2, limit: 1, operation: "shrink".into() },
        FailureReason::ResultGrewTooBig { limit: 1, operation: "split".into() },
        FailureReason::WroteTooMuch { limit: 1 << 30 },
        FailureReason::FileUnavailable,
        FailureReason::GaveUp { attempts: 5 },
        FailureReason::SourceKeptVanishing { times: 3 },
        FailureReason::NeedsTooMuchMemory { limit: 1 << 30 },
        FailureReason::TookTooLong { limit: Duration::from_secs(600) },
        FailureReason::InflatesTooMuch { limit: 1 << 30 },
        FailureReason::Crashed,
        FailureReason::ToolFailed { tool: "ocrmypdf".into() },
        FailureReason::Cancelled,
        FailureReason::TakenApart,
        FailureReason::NoSuchPage { page: 25, pages: 20 },
        FailureReason::NoSuchPage { page: 3, pages: 1 },
        FailureReason::WrongPassword,
        FailureReason::OfficeUnavailable,
        FailureReason::CannotShrinkTo { target: 10_000_000, smallest: 14_000_000 },
        FailureReason::PageTooBigForParts { page: 7, size: 60_000_000, target: 50_000_000 },
        FailureReason::WrongFormat {
            operation: "split".into(),
            accepts: vec!["pdf".into()],
            found: "a PNG image".into(),
            found_label: "png".into(),
        },
        FailureReason::WrongFormat {
            operation: "topdf".into(),
            accepts: vec!["jpeg".into(), "png".into()],
            found: "a PDF document".into(),
            found_label: "pdf".into(),
        },
        FailureReason::NotSetUp { operation: "ocr".into() },
        FailureReason::NotSetUp { operation: "translate".into() },
    ];
    all.extend(reasons.iter().map(|r| failure_reason(lang, "a.pdf", r)));
    // The operations: choosing what to do, and what they write for people.
    use crate::domain::operation::{ArgumentProblem, ParseError};
    use crate::domain::{DocumentInfo, Operation};
    let shrink = Operation::Shrink { target: None };
    all.extend([
        operation_lines(lang),
        caption_not_understood(lang, "\"please\" is not an operation"),
        caption_problem(lang, &ParseError::Empty),
        caption_problem(lang, &ParseError::Unknown("please".into())),
        caption_problem(lang, &ParseError::Arguments { operation: "pages", problem: ArgumentProblem::Missing }),
        delete_the_password(lang, true),
        delete_the_password(lang, false),
        mode_now(lang, &shrink, true),
        mode_now(lang, &shrink, false),
        mode_set(lang, &shrink),
        mode_unknown(lang, "pages"),
        wrong_format(lang, "split", &["pdf"], "a PNG image", "png"),
        declared_but_is(lang, "report.pdf", &format_name(lang, "zip", "a ZIP archive")),
        format_name(lang, "png", "a PNG image"),
        format_name(lang, "unknown", "something unrecognised"),
        format_name(lang, "text", "plain text"),
        result_too_big_hint(lang, "optimize"),
        result_too_big_hint(lang, "shrink"),
        result_too_big_hint(lang, "split"),
        ocr_not_set_up(lang),
        will_run(lang, &shrink),
        run_reply(lang, Ticket(4812), &shrink, 0),
        run_reply(lang, Ticket(4812), &shrink, 1),
        run_reply(lang, Ticket(4812), &shrink, 3),
        run_reply(lang, Ticket(4812), &shrink, 5_000),
        pdf_only(lang, "split", "png"),
        pdf_only(lang, "split", "zip"),
        page_without_text(lang, 3),
        text_cut_short(lang, 900, 100 << 20),
    ]);
    let info: DocumentInfo = serde_json::from_value(serde_json::json!({
        "pages": 12, "page_size": {"width_pt": 595.0, "height_pt": 842.0}, "version": "1.7",
        "producer": "pdfTeX", "creator": null, "title": "T", "author": null,
        "encryption": "none", "images": 3, "fonts": [{"name": "CMR10", "embedded": false}],
        "file_bytes": 182000, "sha256": "ab"
    }))
    .expect("a DocumentInfo");
    let facts = document_info(lang, &info);
    all.push(info_message(lang, "contract.pdf", &facts));
    all.push(facts);
    let until = Timestamp::from_millis(1_796_601_600_000);
    let steps = [
        Progress::Queued { position: 1 },
        Progress::Queued { position: 5 },
        Progress::Downloading { done: 0, total: None, part: None },
        Progress::Downloading { done: 5, total: Some(10), part: None },
        Progress::Downloading { done: 5, total: None, part: None },
        Progress::Downloading { done: 0, total: Some(10), part: Some((1, 3)) },
        Progress::Downloading { done: 5, total: Some(10), part: Some((2, 3)) },
        Progress::Downloading { done: 5, total: None, part: Some((3, 3)) },
        Progress::WaitingToProcess,
        Progress::Processing,
        Progress::WaitingToRetry,
        Progress::Ready { until },
        Progress::Cancelled,
        Progress::TakenApart { tickets: vec![Ticket(5), Ticket(6)] },
        Progress::Failed { reason: "x".into() },
    ];
    all.extend(steps.iter().map(|step| progress(lang, &job, step)));
    for state in JobState::ALL {
        job.state = state;
        job.error = Some("x".into());
        job.result = Some(ResultFile { path: None, size: 1, expires_at: until, telegram_file_id: None, parts: None });
        all.push(status(lang, &job, &[]));
        all.push(status(lang, &job, &parts(3)));
    }
    all
}

/// `count` sources of a ticket of several files, the last of unknown size.
fn parts(count: u32) -> Vec<crate::domain::SourcePart> {
    (1..=count)
        .map(|position| crate::domain::SourcePart {
            position,
            message_id: crate::domain::MessageId(i64::from(position)),
            file_id: format!("f{position}"),
            file_unique_id: format!("u{position}"),
            declared_name: Some(format!("part-{position}.pdf")),
            declared_mime: Some("application/pdf".into()),
            declared_size: (position < count).then_some(1_000_000),
        })
        .collect()
}

#[test]
fn every_message_renders_in_every_language() {
    let english = every_text(Lang::ENGLISH);
    for lang in Lang::all() {
        let texts = every_text(lang);
        for text in &texts {
            assert!(!text.trim().is_empty(), "{lang:?}: an empty text");
            assert!(!text.contains('\u{2068}') && !text.contains('\u{2069}'), "{lang:?}: isolation marks in {text:?}");
        }
        if lang != Lang::ENGLISH {
            let same: Vec<_> =
                texts.iter().zip(&english).filter(|(a, b)| a == b && a.chars().any(char::is_alphabetic)).collect();
            assert!(same.len() < english.len() / 4, "{lang:?} reads like English: {same:?}");
        }
    }
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn name() -> impl Strategy<Value = String> {
        let c = prop_oneof![
            3 => proptest::char::range('a', 'z'),
            1 => Just(' '),
            1 => Just('\n'),
            1 => Just('\u{0}'),
            2 => Just('é'),
            2 => Just('中'),
            2 => Just('🦀'),
            1 => Just('\u{301}'),
            1 => Just('\u{200d}'),
            2 => any::<char>(),
        ];
        prop_oneof![
            3 => proptest::collection::vec(c, 0..300).prop_map(String::from_iter),
            1 => any::<String>(),
        ]
    }

    proptest! {
        #[test]
        fn display_names_are_short_clean_prefixes(raw in name()) {
            let shown = display_name(E, &raw);
            prop_assert!(shown.chars().count() <= 80);
            prop_assert!(shown.chars().all(crate::domain::names::shows));
            let clean = crate::domain::names::cleaned(&raw);
            let kept = shown.strip_suffix('…').unwrap_or(&shown);
            prop_assert!(shown == "your file" || clean.starts_with(kept), "{shown:?} from {raw:?}");
        }

        #[test]
        fn every_text_with_a_user_name_is_built_safely(raw in name(), size in any::<u64>(), n in any::<u64>()) {
            for lang in Lang::all() {
                let _ = ticket_reply(lang, &raw, Some(size), Ticket(1), n);
                let _ = queue_full(lang, &raw, n);
                let _ = forgotten(lang, n);
            }
            let _ = ticket_reply(E, &raw, Some(size), Ticket(1), n);
            let _ = already_ticket(E, &raw, Ticket(1), JobState::Processing);
            let _ = trying_again_after_failure(E, &raw, Ticket(1));
            let _ = too_big_to_accept(E, &raw, size, n);
            let _ = too_big_for_budget(E, &raw, size, n);
            let _ = failure_reason(E, &raw, &FailureReason::NotAPdf { found: raw.clone() });
            let mut job = job(1, &raw, Some(size as i64));
            let _ = status(E, &job, &[]);
            let _ = progress(E, &job, &Progress::Downloading { done: n, total: Some(size), part: None });
            job.result = Some(ResultFile { path: None, size: n as i64, expires_at: Timestamp::from_millis(0), telegram_file_id: None, parts: None });
            let _ = ready_caption(E, &job);
            let _ = jobs(E, &[(job, Vec::new())]);
        }
    }
}
