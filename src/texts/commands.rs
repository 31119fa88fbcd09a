//! The answers to commands: `/start`, `/help` and an invite, `/status`, `/get`, `/jobs`,
//! `/cancel`, `/privacy`, `/forget`, `/mode` and `/lang`, and the command list registered with
//! `setMyCommands`. The catalog's sections from "/status, /get, /jobs, /cancel" to "The command
//! list", and "The language itself".

use super::catalog::{Lang, n, plain, render, s};
use super::values::{display_name, duration, run_label, size, state_words};
use crate::domain::{Job, JobState, SourcePart, Ticket};

/// How the language calls itself ("English", "Русский"), for its `/lang` button.
pub fn language_name(lang: Lang) -> String {
    plain(lang, "language-name")
}

/// The `/lang` question, above one button per language.
pub fn lang_question(lang: Lang) -> String {
    plain(lang, "lang-question")
}

/// The answer once `lang` was chosen, in it.
pub fn lang_chosen(lang: Lang) -> String {
    plain(lang, "lang-chosen")
}

/// The commands registered with `setMyCommands`, in the order Telegram lists them.
pub const COMMANDS: [&str; 11] =
    ["start", "help", "status", "get", "jobs", "merge", "done", "cancel", "privacy", "forget", "lang"];

/// The command list Telegram shows in `lang`: each of [`COMMANDS`] with its description.
pub fn command_list(lang: Lang) -> Vec<(&'static str, String)> {
    COMMANDS.iter().map(|name| (*name, plain(lang, &format!("command-{name}")))).collect()
}

/// The `/status N` answer for the chat that owns the ticket.
pub fn status(lang: Lang, job: &Job, parts: &[SourcePart]) -> String {
    let ticket = || s("ticket", run_label(job));
    let name = if parts.is_empty() { display_name(lang, job.name()) } else { several_files(lang, parts) };
    let mut lines =
        vec![render(lang, "status-title", &[ticket(), s("name", name), s("state", state_words(lang, job.state))])];
    let declared = job
        .submission
        .declared_size
        .map(|b| size(lang, u64::try_from(b).unwrap_or(0)))
        .unwrap_or_else(|| plain(lang, "size-unknown-short"));
    lines.push(render(lang, "status-size", &[s("size", declared)]));
    if !parts.is_empty() {
        lines.push(plain(lang, "status-files"));
        lines.extend((1..).zip(parts).map(|(number, part)| {
            let declared = part.declared_size.and_then(|b| u64::try_from(b).ok());
            let shown = declared.map_or_else(|| plain(lang, "size-unknown-short"), |b| size(lang, b));
            render(
                lang,
                "status-file",
                &[n("number", number), s("name", display_name(lang, part.name())), s("size", shown)],
            )
        }));
    }
    if let Some(result) = &job.result {
        lines.push(render(lang, "status-result", &[s("size", size(lang, u64::try_from(result.size).unwrap_or(0)))]));
    }
    lines.push(render(lang, "status-received", &[s("at", job.created_at.datetime_utc())]));
    lines.push(render(lang, "status-changed", &[s("at", job.updated_at.datetime_utc())]));
    let kept_until = job.result.as_ref().map(|r| r.expires_at.date_utc());
    match (job.state, kept_until) {
        (JobState::Ready, Some(date)) => lines.push(render(lang, "status-available", &[s("date", date)])),
        (JobState::Expired, Some(date)) => lines.push(render(lang, "status-expired", &[s("date", date)])),
        (JobState::Failed, _) => {
            if let Some(e) = &job.error {
                lines.push(render(lang, "status-reason", &[s("reason", e.as_str())]));
            }
        }
        _ => {}
    }
    lines.join("\n")
}

/// The `/status` answer for a ticket that does not exist *or belongs to another chat*: the two
/// must read the same, so tickets cannot be probed.
pub fn no_such_ticket(lang: Lang, ticket: Ticket) -> String {
    render(lang, "no-such-ticket", &[s("ticket", ticket.to_string())])
}

/// `/status` or `/get` without a usable number.
pub fn status_usage(lang: Lang) -> String {
    plain(lang, "status-usage")
}

/// The `/jobs` answer: the chat's latest tickets.
pub fn jobs(lang: Lang, jobs: &[(Job, Vec<SourcePart>)]) -> String {
    if jobs.is_empty() {
        return plain(lang, "jobs-none");
    }
    let mut lines = vec![plain(lang, "jobs-title")];
    lines.extend(jobs.iter().map(|(j, parts)| {
        let name = if parts.is_empty() { display_name(lang, j.name()) } else { several_files(lang, parts) };
        render(lang, "jobs-line", &[s("ticket", run_label(j)), s("name", name), s("state", state_words(lang, j.state))])
    }));
    lines.join("\n")
}

/// A ticket of several files, named by them: how many, and the first two.
fn several_files(lang: Lang, parts: &[SourcePart]) -> String {
    let mut names: Vec<String> = parts.iter().take(2).map(|part| display_name(lang, part.name())).collect();
    if parts.len() > 2 {
        names.push("…".to_owned());
    }
    render(lang, "several-files", &[n("count", parts.len() as u64), s("names", names.join(", "))])
}

/// The answer to `/cancel N` (or `docket cancel N`) that stopped the job.
pub fn cancelled(lang: Lang, job: &Job) -> String {
    render(lang, "cancelled", &[s("ticket", run_label(job)), s("name", display_name(lang, job.name()))])
}

/// The answer to `/cancel N` for a job that has ended already.
pub fn cannot_cancel(lang: Lang, ticket: Ticket, state: JobState) -> String {
    render(lang, "cannot-cancel", &[s("ticket", ticket.to_string()), s("state", state_words(lang, state))])
}

/// `/cancel` without a usable number.
pub fn cancel_usage(lang: Lang) -> String {
    plain(lang, "cancel-usage")
}

/// What `/privacy` says: what is kept, where, and for how long.
pub fn privacy(lang: Lang, facts: &HelpFacts) -> String {
    render(lang, "privacy", &[s("ttl", duration(lang, facts.result_ttl))])
}

/// The question `/forget` asks, above its confirmation button.
pub fn forget_question(lang: Lang) -> String {
    plain(lang, "forget-question")
}

/// The label of `/forget`'s confirmation button.
pub fn forget_button(lang: Lang) -> String {
    plain(lang, "forget-button")
}

/// The answer once `/forget` was confirmed.
pub fn forgotten(lang: Lang, jobs: u64) -> String {
    render(lang, "forgotten", &[n("jobs", jobs)])
}

/// What an unfinished job that was forgotten reads as its reason (`/status` shows it).
pub fn forgotten_reason(lang: Lang) -> String {
    plain(lang, "forgotten-reason")
}

/// The answer to a valid invite (`/start <token>`).
pub fn invited(lang: Lang, facts: &HelpFacts) -> String {
    render(lang, "invited", &[s("help", help(lang, facts))])
}

/// What `/start` and `/help` say.
pub struct HelpFacts {
    /// Largest accepted file.
    pub download_limit: u64,
    /// Largest result the bot can send.
    pub upload_limit: u64,
    /// How long results are kept.
    pub result_ttl: std::time::Duration,
}

/// `/start`.
pub fn start(lang: Lang, facts: &HelpFacts) -> String {
    render(lang, "start", &[s("help", help(lang, facts))])
}

/// `/help`.
pub fn help(lang: Lang, facts: &HelpFacts) -> String {
    render(
        lang,
        "help",
        &[
            s("download", size(lang, facts.download_limit)),
            s("upload", size(lang, facts.upload_limit)),
            s("ttl", duration(lang, facts.result_ttl)),
            s("operations", operation_lines(lang)),
        ],
    )
}

/// Each operation with its one-line description, in the order help lists them.
pub fn operation_lines(lang: Lang) -> String {
    crate::domain::Operation::NAMES
        .iter()
        .map(|name| plain(lang, &format!("operation-{name}")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `/mode` without a word: the chat's default, and the choices.
pub fn mode_now(lang: Lang, current: &crate::domain::Operation, own: bool) -> String {
    let id = if own { "mode-now-own" } else { "mode-now-default" };
    render(lang, id, &[s("operation", current.to_string()), s("modes", crate::domain::Operation::MODES.join(", "))])
}

/// `/mode NAME` done.
pub fn mode_set(lang: Lang, operation: &crate::domain::Operation) -> String {
    render(lang, "mode-set", &[s("operation", operation.to_string())])
}

/// `/mode WORD` with a word that is no default operation.
pub fn mode_unknown(lang: Lang, word: &str) -> String {
    render(
        lang,
        "mode-unknown",
        &[s("word", display_name(lang, word)), s("modes", crate::domain::Operation::MODES.join(", "))],
    )
}

/// `/status N` of a ticket with several runs: each run's status, the first one first.
/// `parts`: the ticket's files, for a ticket of several.
pub fn ticket_status(lang: Lang, runs: &[Job], parts: &[SourcePart]) -> String {
    runs.iter().map(|run| status(lang, run, parts)).collect::<Vec<_>>().join("\n\n")
}

/// `/cancel N` of a ticket with several runs: each run that was cancelled.
pub fn runs_cancelled(lang: Lang, runs: &[Job]) -> String {
    runs.iter().map(|run| cancelled(lang, run)).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use crate::texts::tests::{E, ru};

    #[test]
    fn multi_line_messages_keep_their_blank_lines() {
        let facts =
            HelpFacts { download_limit: 20_000_000, upload_limit: 50_000_000, result_ttl: Duration::from_secs(86_400) };
        let shown = help(E, &facts);
        assert!(shown.starts_with("How it works:\n• Send a PDF as a file (up to 20.0 MB)."), "{shown}");
        assert!(shown.contains("again.\n\nWhat to do is"), "{shown}");
        assert!(shown.contains("same file.\n\nCommands:\n/status 4812 — where a ticket is\n"), "{shown}");
        assert!(start(E, &facts).contains("when it is done.\n\nHow it works:"));
        assert!(shown.ends_with("/help — this text"), "{shown}");
        let russian = help(ru(), &facts);
        assert!(russian.contains("(до 20,0 МБ)") && russian.contains("хранятся 1 день;"), "{russian}");
    }
}
