//! The ticket reply and the status message it becomes: the first answer to a document (with
//! what will be done to it, and the reminder to delete a password), each step of its job as the
//! status message is edited, a further run's reply, and the answers to a file the chat sent
//! before. The catalog's section "The ticket reply and the status message it becomes", and the
//! first answers of "Answers to a document".

use std::time::Duration;

use super::catalog::{Lang, n, plain, render, s};
use super::values::{display_name, duration, known_size, run_label, size, state_words};
use crate::domain::{Job, JobState, Operation, SourcePart, Ticket, Timestamp};

/// The queue is counted up to this many jobs ahead; beyond it the ticket reply says "more than".
pub const QUEUE_COUNT_CAP: u64 = 1000;

/// The first words of a job's status message: what arrived, and its ticket.
fn ticket_line(lang: Lang, name: &str, declared_size: Option<u64>, ticket: &dyn std::fmt::Display) -> String {
    render(
        lang,
        "ticket-line",
        &[
            s("name", display_name(lang, name)),
            s("size", known_size(lang, declared_size)),
            s("ticket", ticket.to_string()),
        ],
    )
}

/// The immediate answer to a new document, with how many jobs are ahead of it (counted up to
/// [`QUEUE_COUNT_CAP`]). It becomes the job's status message, which [`progress`] edits as the
/// job moves.
pub fn ticket_reply(lang: Lang, name: &str, declared_size: Option<u64>, ticket: Ticket, ahead: u64) -> String {
    queued(lang, ticket_line(lang, name, declared_size, &ticket), ahead)
}

/// The answer to an album, rewritten with each part until it goes out: its files so far by
/// name, their total size and its ticket, queued with `ahead` jobs before it, and that they
/// become one PDF.
pub fn album_reply(lang: Lang, parts: &[SourcePart], ticket: Ticket, ahead: u64) -> String {
    format!("{}\n{}", album_queued(lang, parts, ticket, ahead), plain(lang, "album-becomes"))
}

/// The first line of a several-file ticket's reply: its files, its ticket, its place in line.
fn album_queued(lang: Lang, parts: &[SourcePart], ticket: Ticket, ahead: u64) -> String {
    let names: Vec<String> = parts.iter().map(|part| display_name(lang, part.name())).collect();
    let total = parts.iter().map(|part| part.declared_size.and_then(|s| u64::try_from(s).ok())).sum();
    let line = render(
        lang,
        "album-line",
        &[
            n("count", parts.len() as u64),
            s("names", names.join(", ")),
            s("size", known_size(lang, total)),
            s("ticket", ticket.to_string()),
        ],
    );
    queued(lang, line, ahead)
}

/// The ticket reply of an album of documents sent without a `merge` caption: its files, its
/// ticket, and the question, merge them or take each on its own, which buttons under it answer;
/// unanswered for `wait`, they are merged.
pub fn album_question(lang: Lang, parts: &[SourcePart], ticket: Ticket, ahead: u64, wait: Duration) -> String {
    let question = render(lang, "album-question", &[s("wait", duration(lang, wait))]);
    format!("{}\n{question}", album_queued(lang, parts, ticket, ahead))
}

/// The label of the button that merges an album's files into one PDF.
pub fn album_merge_button(lang: Lang) -> String {
    plain(lang, "album-merge-button")
}

/// The label of the button that takes an album's files each on its own.
pub fn album_each_button(lang: Lang) -> String {
    plain(lang, "album-each-button")
}

/// The answer to `/merge`: the ticket that takes the files, and its limits.
pub fn merge_opened(lang: Lang, ticket: Ticket, files: u64, bytes: u64) -> String {
    render(lang, "merge-opened", &[s("ticket", ticket.to_string()), n("files", files), s("size", size(lang, bytes))])
}

/// The answer to `/merge` while the chat's merge `ticket` is open with `count` files.
pub fn merge_still_open(lang: Lang, ticket: Ticket, count: usize) -> String {
    render(lang, "merge-still-open", &[s("ticket", ticket.to_string()), n("count", count as u64)])
}

/// The answer to a file added to the open merge `ticket`, which now has `count`.
pub fn merge_file_added(lang: Lang, name: &str, ticket: Ticket, count: usize) -> String {
    let args = [s("name", display_name(lang, name)), s("ticket", ticket.to_string()), n("count", count as u64)];
    render(lang, "merge-file-added", &args)
}

/// The answer to a file the open merge `ticket` cannot take: it has `files`, the most.
pub fn merge_full(lang: Lang, name: &str, ticket: Ticket, files: u64) -> String {
    let args = [s("name", display_name(lang, name)), s("ticket", ticket.to_string()), n("files", files)];
    render(lang, "merge-full", &args)
}

/// The answer to a file that would take the open merge `ticket` to `total`, over `limit`.
pub fn merge_too_big(lang: Lang, name: &str, ticket: Ticket, total: u64, limit: u64) -> String {
    let args = [
        s("name", display_name(lang, name)),
        s("ticket", ticket.to_string()),
        s("size", size(lang, total)),
        s("limit", size(lang, limit)),
    ];
    render(lang, "merge-too-big", &args)
}

/// The label of the button that finishes a merge, as `/done` does.
pub fn merge_done_button(lang: Lang) -> String {
    plain(lang, "merge-done-button")
}

/// The answer to `/done` (or the button) with no merge open.
pub fn merge_none_open(lang: Lang) -> String {
    plain(lang, "merge-none-open")
}

/// The answer to `/done` for the open merge `ticket` that has no file: closed.
pub fn merge_empty(lang: Lang, ticket: Ticket) -> String {
    render(lang, "merge-empty", &[s("ticket", ticket.to_string())])
}

/// The answer to `/cancel` alone while the merge `ticket` is open: dropped.
pub fn merge_dropped(lang: Lang, ticket: Ticket) -> String {
    render(lang, "merge-dropped", &[s("ticket", ticket.to_string())])
}

/// The answer to one file sent with the caption `merge`: it needs several.
pub fn merge_needs_several(lang: Lang) -> String {
    plain(lang, "merge-needs-several")
}

/// `line` (what arrived, and its ticket), queued with `ahead` jobs before it.
fn queued(lang: Lang, line: String, ahead: u64) -> String {
    if ahead > QUEUE_COUNT_CAP {
        return render(lang, "ticket-reply-crowded", &[s("line", line), n("cap", QUEUE_COUNT_CAP)]);
    }
    render(lang, "ticket-reply", &[s("line", line), n("ahead", ahead)])
}

/// Where a job is, for its status message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Waiting for its download: `position` in line (1: next).
    Queued {
        /// Place in the download queue.
        position: u64,
    },
    /// Bytes received so far, of the size Telegram announced when it did; for a ticket of
    /// several files, of them all, with the file being downloaded.
    Downloading {
        /// Received.
        done: u64,
        /// Announced.
        total: Option<u64>,
        /// The file being downloaded and how many the ticket has, for a ticket of several.
        part: Option<(u32, u32)>,
    },
    /// Downloaded and checked; no processing slot free yet.
    WaitingToProcess,
    /// The operation runs.
    Processing,
    /// An attempt failed for a passing reason; another follows.
    WaitingToRetry,
    /// The result went out (as a document below the status message).
    Ready {
        /// Kept until.
        until: Timestamp,
    },
    /// The person (or an admin) cancelled the job.
    Cancelled,
    /// The person took an album's files each on its own: these are their tickets.
    TakenApart {
        /// The files' own tickets, in album order.
        tickets: Vec<Ticket>,
    },
    /// The job ended without a result.
    Failed {
        /// Why, as [`failure_reason`](crate::texts::failure_reason) words it (in the chat's language).
        reason: String,
    },
}

/// A job's status message: the ticket line, then where the job is now.
pub fn progress(lang: Lang, job: &Job, step: &Progress) -> String {
    let declared = job.submission.declared_size.and_then(|s| u64::try_from(s).ok());
    // A ticket of several files is named for them all, not for its first.
    let name =
        if job.submission.operation == Operation::Merge { plain(lang, "your-files") } else { job.name().to_owned() };
    let header = ticket_line(lang, &name, declared, &run_label(job));
    let line = match step {
        Progress::Queued { position } => render(lang, "progress-queued", &[n("position", *position)]),
        Progress::Downloading { done, total, part: Some((number, count)) } => {
            let mut args = vec![n("number", u64::from(*number)), n("count", u64::from(*count))];
            match total.filter(|total| *total > 0) {
                _ if *done == 0 => render(lang, "progress-downloading-file-started", &args),
                Some(total) => {
                    args.extend([
                        n("percent", done.saturating_mul(100) / total),
                        s("done", size(lang, *done)),
                        s("total", size(lang, total)),
                    ]);
                    render(lang, "progress-downloading-file", &args)
                }
                None => {
                    args.push(s("done", size(lang, *done)));
                    render(lang, "progress-downloading-file-unknown-total", &args)
                }
            }
        }
        Progress::Downloading { done: 0, .. } => plain(lang, "progress-downloading-started"),
        Progress::Downloading { done, total: Some(total), .. } if *total > 0 => render(
            lang,
            "progress-downloading",
            &[
                n("percent", done.saturating_mul(100) / total),
                s("done", size(lang, *done)),
                s("total", size(lang, *total)),
            ],
        ),
        Progress::Downloading { done, .. } => {
            render(lang, "progress-downloading-unknown-total", &[s("done", size(lang, *done))])
        }
        Progress::WaitingToProcess => plain(lang, "progress-waiting-to-process"),
        Progress::Processing => plain(lang, "progress-processing"),
        Progress::WaitingToRetry => plain(lang, "progress-waiting-to-retry"),
        Progress::Ready { until } => render(lang, "progress-ready", &[s("until", until.date_utc())]),
        Progress::Cancelled => plain(lang, "progress-cancelled"),
        Progress::TakenApart { tickets } => {
            let tickets: Vec<String> = tickets.iter().map(ToString::to_string).collect();
            render(lang, "progress-taken-apart", &[s("tickets", tickets.join(", "))])
        }
        Progress::Failed { reason } => render(lang, "progress-failed", &[s("reason", reason.as_str())]),
    };
    render(lang, "status-message", &[s("header", header), s("line", line)])
}

/// The answer to a file this chat already sent, while its job is still running (or failed and
/// is being tried again).
pub fn already_ticket(lang: Lang, name: &str, ticket: Ticket, state: JobState) -> String {
    render(
        lang,
        "already-ticket",
        &[s("name", display_name(lang, name)), s("ticket", ticket.to_string()), s("state", state_words(lang, state))],
    )
}

/// The answer to a file whose result expired: it is processed again under the same ticket.
pub fn processing_again_after_expiry(lang: Lang, ticket: Ticket, expired_at: Timestamp) -> String {
    render(lang, "expired-processing-again", &[s("ticket", ticket.to_string()), s("date", expired_at.date_utc())])
}

/// The answer to a file whose earlier attempt failed: it is tried again under the same ticket.
pub fn trying_again_after_failure(lang: Lang, name: &str, ticket: Ticket) -> String {
    render(lang, "failed-trying-again", &[s("name", display_name(lang, name)), s("ticket", ticket.to_string())])
}

/// Added to the ticket reply of `decrypt PASSWORD`.
pub fn delete_the_password(lang: Lang, private: bool) -> String {
    // In a private chat the bot may delete the person's message; in a group only as an admin.
    plain(lang, if private { "password-message-deleted" } else { "delete-the-password" })
}

/// Added to the ticket reply when the operation is not the plain optimize: what will be done.
pub fn will_run(lang: Lang, operation: &crate::domain::Operation) -> String {
    render(lang, "will-run", &[s("operation", operation.to_string())])
}

/// The status message of a further run of a ticket: "#4812 shrink: queued."
pub fn run_reply(lang: Lang, ticket: Ticket, operation: &crate::domain::Operation, ahead: u64) -> String {
    let args = [s("ticket", ticket.to_string()), s("operation", operation.to_string())];
    if ahead > QUEUE_COUNT_CAP {
        let mut args = args.to_vec();
        args.push(n("cap", QUEUE_COUNT_CAP));
        return render(lang, "run-reply-many", &args);
    }
    let mut args = args.to_vec();
    args.push(n("ahead", ahead));
    render(lang, "run-reply", &args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::texts::tests::{E, job};

    #[test]
    fn the_ticket_reply_has_name_size_and_ticket() {
        assert_eq!(
            ticket_reply(E, "report.pdf", Some(12_300_000), Ticket(4812), 0),
            "Got report.pdf (12.3 MB) — ticket #4812, queued."
        );
        assert_eq!(
            ticket_reply(E, "", None, Ticket(1), 1),
            "Got your file (size unknown) — ticket #1, queued, 1 job ahead of it."
        );
        assert_eq!(
            ticket_reply(E, "a.pdf", None, Ticket(9), 7),
            "Got a.pdf (size unknown) — ticket #9, queued, 7 jobs ahead of it."
        );
        assert_eq!(
            ticket_reply(E, "a.pdf", None, Ticket(9), QUEUE_COUNT_CAP + 1),
            "Got a.pdf (size unknown) — ticket #9, queued, more than 1000 jobs ahead of it."
        );
    }
    #[test]
    fn the_status_message_shows_where_the_job_is() {
        let job = job(4812, "contract.pdf", Some(182_000_000));
        let line = |step: Progress| progress(E, &job, &step).lines().nth(1).unwrap_or_default().to_owned();
        assert!(progress(E, &job, &Progress::Processing).starts_with("Got contract.pdf (182.0 MB) — ticket #4812.\n"));
        assert_eq!(line(Progress::Downloading { done: 0, total: Some(182_000_000), part: None }), "Downloading…");
        assert_eq!(
            line(Progress::Downloading { done: 81_900_000, total: Some(182_000_000), part: None }),
            "Downloading: 45% (81.9 MB of 182.0 MB)."
        );
        assert_eq!(
            line(Progress::Downloading { done: 5_000_000, total: None, part: None }),
            "Downloading: 5.0 MB so far."
        );
        assert_eq!(line(Progress::WaitingToProcess), "Downloaded; waiting for a free processing slot.");
        let until = Timestamp::from_millis(1_796_601_600_000);
        assert_eq!(
            line(Progress::Ready { until }),
            format!("Ready: the result is below, kept until {}.", until.date_utc())
        );
        assert_eq!(line(Progress::Failed { reason: "x is damaged".into() }), "Failed: x is damaged.");
    }

    #[test]
    fn a_ticket_of_several_files_counts_them_while_downloading() {
        let mut job = job(7, "cover.pdf", Some(3_000_000));
        job.submission.operation = Operation::Merge;
        let line = |step: Progress| progress(E, &job, &step).lines().nth(1).unwrap_or_default().to_owned();
        assert!(progress(E, &job, &Progress::Processing).starts_with("Got your files (3.0 MB) — ticket #7.\n"));
        let at = |done, total, number| Progress::Downloading { done, total, part: Some((number, 3)) };
        assert_eq!(line(at(0, Some(3_000_000), 1)), "Downloading file 1 of 3…");
        assert_eq!(line(at(1_500_000, Some(3_000_000), 2)), "Downloading file 2 of 3: 50% of all (1.5 MB of 3.0 MB).");
        assert_eq!(line(at(2_000_000, None, 3)), "Downloading file 3 of 3: 2.0 MB so far.");
        assert_eq!(
            line(Progress::TakenApart { tickets: vec![Ticket(8), Ticket(9)] }),
            "Each file is a ticket of its own now: #8, #9."
        );
    }

    #[test]
    fn an_album_of_documents_is_asked_what_to_do() {
        let part = |name: &str, size| SourcePart {
            position: 1,
            message_id: crate::domain::MessageId(1),
            file_id: String::new(),
            file_unique_id: String::new(),
            declared_name: Some(name.to_owned()),
            declared_mime: None,
            declared_size: Some(size),
        };
        let parts = [part("a.pdf", 1_000_000), part("b.pdf", 2_000_000)];
        assert_eq!(
            album_question(E, &parts, Ticket(3), 0, Duration::from_secs(3600)),
            "Got 2 files (a.pdf, b.pdf; 3.0 MB in all) — ticket #3, queued.\n\
             Merge them into one PDF, in this order, or take each on its own? Unanswered for 1h, they are merged."
        );
    }
}
