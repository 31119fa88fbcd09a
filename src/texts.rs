//! Every sentence a person reads, from one catalog in several languages. Nothing else in docket
//! writes user-visible text, so wording, tone and the facts each message must carry (ticket,
//! name, sizes, dates) live in one place.
//!
//! The sentences are [Fluent](https://projectfluent.org) messages in `locales/<language>/docket.ftl`
//! (`en`, `ru`), embedded in the binary at build time by `fluent-templates`' `static_loader!`.
//! Fluent was chosen because its plural rules are the CLDR ones (Russian has one/few/many:
//! "1 задание", "2 задания", "5 заданий") and a translator edits a plain text file; fluent-templates
//! because it embeds a folder of such files with no code per language, on top of the
//! `fluent-bundle` crate maintained by Project Fluent. The functions below are the catalog's
//! front: each takes the [`Lang`] to write in, formats the facts (names shortened, sizes with the
//! language's units and decimal mark, dates as YYYY-MM-DD, durations in the language's words) and
//! renders one message with them.
//!
//! **Which language.** A chat's language, kept by the store, is the last `/lang` choice made in
//! it; until someone chooses, it is the Telegram `language_code` of whoever last wrote to docket
//! there (in a private chat: the person). Intake renders its answers in it, and the pipeline,
//! the janitor and the outbox render theirs in it when they queue them (the outbox stores text).
//! A code no catalog file matches (`de`), or none at all, means English.
//!
//! **Adding a message**: add `id = text with { $variables }` to `locales/en/docket.ftl` and to
//! every other language's file, and a function here that renders it with [`render`]'s argument
//! list. The unit test `every_message_renders_in_every_language` must call the new function;
//! `every_language_has_every_message` fails while a file lacks the id.
//!
//! **Adding a language**: add one file, `locales/<code>/docket.ftl` (a copy of the English one,
//! translated; `<code>` is what Telegram sends as `language_code`, such as `de` or `pt-BR`), and
//! rebuild (touch this file if cargo does not notice the new folder). The set of languages is
//! the set of folders: `/lang` offers it, `setMyCommands` registers the command list in each, and
//! the tests check each.
//!
//! Names come from users and may contain anything; they are shown as plain text (messages are
//! sent without a parse mode, and the catalog puts no Unicode isolation marks around them),
//! shortened, and never used as paths.
//!
//! It depends on the domain only, so every layer above may use it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use fluent_bundle::FluentValue;
use fluent_templates::{LanguageIdentifier, Loader as _};
use humansize::{DECIMAL, FormatSizeOptions, format_size};
use tracing::warn;

use crate::domain::incoming::UnusableKind;
use crate::domain::{ChatRef, FailureReason, Job, JobState, OutboxId, Ticket, Timestamp};

// Every `locales/<language>/docket.ftl`, parsed into one bundle per language.
fluent_templates::static_loader! {
    static CATALOG = {
        locales: "./locales",
        fallback_language: "en",
        // Messages go out as plain text: Unicode isolation marks around arguments would show up
        // in names and sizes (and change every English sentence byte for byte).
        customise: |bundle| bundle.set_use_isolating(false),
    };
}

/// The catalog's languages: English first (the fallback), then the others by code.
static LANGUAGES: LazyLock<Vec<&'static LanguageIdentifier>> = LazyLock::new(|| {
    let english = CATALOG.fallback();
    let mut all: Vec<&'static LanguageIdentifier> = CATALOG.locales().collect();
    all.sort_by_key(|l| (*l != english, l.to_string()));
    all
});

/// A language of the catalog: one of the `locales/` folders. Unknown codes become English.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Lang(u8);

impl Lang {
    /// English: the catalog's reference and fallback language.
    pub const ENGLISH: Self = Self(0);

    /// Every language of the catalog, English first.
    pub fn all() -> impl Iterator<Item = Self> {
        (0..LANGUAGES.len()).map(|i| Self(u8::try_from(i).unwrap_or(0)))
    }

    /// The catalog language for an IETF language tag as Telegram sends it (`ru`, `ru-RU`,
    /// `en-GB`, `pt-br`): the same tag if the catalog has it, else its language without region
    /// or script, else English.
    pub fn from_code(code: &str) -> Self {
        let Ok(wanted) = code.trim().replace('_', "-").parse::<LanguageIdentifier>() else {
            return Self::ENGLISH;
        };
        let index = LANGUAGES
            .iter()
            .position(|l| **l == wanted)
            .or_else(|| LANGUAGES.iter().position(|l| l.language == wanted.language && l.region.is_none()))
            .or_else(|| LANGUAGES.iter().position(|l| l.language == wanted.language));
        index.and_then(|i| u8::try_from(i).ok()).map_or(Self::ENGLISH, Self)
    }

    /// [`Lang::from_code`] for a code that may be missing: English then.
    pub fn from_stored(code: Option<&str>) -> Self {
        code.map_or(Self::ENGLISH, Self::from_code)
    }

    /// The language's tag, as the catalog folder names it (`en`, `ru`): what the store keeps and
    /// what `setMyCommands` takes as `language_code`.
    pub fn code(self) -> String {
        self.id().to_string()
    }

    fn id(self) -> &'static LanguageIdentifier {
        LANGUAGES.get(usize::from(self.0)).copied().unwrap_or_else(|| CATALOG.fallback())
    }
}

impl Default for Lang {
    fn default() -> Self {
        Self::ENGLISH
    }
}

impl std::fmt::Debug for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lang({})", self.id())
    }
}

/// One argument of a message: its Fluent variable name and value.
pub type Arg<'a> = (&'static str, FluentValue<'a>);

/// Renders message `id` in `lang` with `args`. A message missing from `lang`'s file, or one that
/// needs a variable it was not given, is a bug: unit tests panic on it; in production it is
/// logged and the English message is used (or, failing that too, the id).
pub fn render(lang: Lang, id: &str, args: &[Arg<'_>]) -> String {
    let args: HashMap<Cow<'static, str>, FluentValue<'_>> =
        args.iter().map(|(name, value)| (Cow::Borrowed(*name), value.clone())).collect();
    match CATALOG.lookup_single_language(lang.id(), id, Some(&args)) {
        Ok(text) => text,
        Err(err) => {
            if cfg!(test) {
                panic!("message {id} in {lang:?}: {err}");
            }
            warn!(message.id = id, language = %lang.id(), error = %err, "a catalog message did not render");
            CATALOG.try_lookup_complete(CATALOG.fallback(), id, Some(&args)).unwrap_or_else(|| id.to_owned())
        }
    }
}

/// A message with no arguments.
fn plain(lang: Lang, id: &str) -> String {
    render(lang, id, &[])
}

/// A string argument.
fn s<'a>(name: &'static str, value: impl Into<Cow<'a, str>>) -> Arg<'a> {
    (name, FluentValue::String(value.into()))
}

/// A number argument, for plural forms.
fn n(name: &'static str, value: u64) -> Arg<'static> {
    (name, FluentValue::from(value))
}

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
pub const COMMANDS: [&str; 9] = ["start", "help", "status", "get", "jobs", "cancel", "privacy", "forget", "lang"];

/// The command list Telegram shows in `lang`: each of [`COMMANDS`] with its description.
pub fn command_list(lang: Lang) -> Vec<(&'static str, String)> {
    COMMANDS.iter().map(|name| (*name, plain(lang, &format!("command-{name}")))).collect()
}

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

fn known_size(lang: Lang, bytes: Option<u64>) -> String {
    bytes.map(|b| size(lang, b)).unwrap_or_else(|| plain(lang, "size-unknown"))
}

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
    let line = ticket_line(lang, name, declared_size, &ticket);
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
    /// Bytes received so far, of the size Telegram announced when it did.
    Downloading {
        /// Received.
        done: u64,
        /// Announced.
        total: Option<u64>,
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
    /// The job ended without a result.
    Failed {
        /// Why, as [`failure_reason`] words it (in the chat's language).
        reason: String,
    },
}

/// A job's status message: the ticket line, then where the job is now.
pub fn progress(lang: Lang, job: &Job, step: &Progress) -> String {
    let declared = job.submission.declared_size.and_then(|s| u64::try_from(s).ok());
    let header = ticket_line(lang, job.name(), declared, &run_label(job));
    let line = match step {
        Progress::Queued { position } => render(lang, "progress-queued", &[n("position", *position)]),
        Progress::Downloading { done: 0, .. } => plain(lang, "progress-downloading-started"),
        Progress::Downloading { done, total: Some(total) } if *total > 0 => render(
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

/// The refusal of a file over the download limit; no job is made.
pub fn too_big_to_accept(lang: Lang, name: &str, declared: u64, limit: u64) -> String {
    render(
        lang,
        "too-big-to-accept",
        &[s("name", display_name(lang, name)), s("size", size(lang, declared)), s("limit", size(lang, limit))],
    )
}

/// The refusal of a file bigger than the whole byte budget of this bot; no job is made.
pub fn too_big_for_budget(lang: Lang, name: &str, declared: u64, largest: u64) -> String {
    render(
        lang,
        "too-big-for-budget",
        &[s("name", display_name(lang, name)), s("size", size(lang, declared)), s("largest", size(lang, largest))],
    )
}

/// The refusal of a file when its chat already has `waiting` files in the queue, as many as one
/// chat may (`[limits] per_chat_queued`); no job is made.
pub fn queue_full(lang: Lang, name: &str, waiting: u64) -> String {
    render(lang, "queue-full", &[s("name", display_name(lang, name)), n("waiting", waiting)])
}

/// The refusal of a user who is not on `[access] allowed_users`.
pub fn not_allowed(lang: Lang, user_id: Option<i64>) -> String {
    match user_id {
        Some(id) => render(lang, "not-allowed-with-id", &[s("id", id.to_string())]),
        None => plain(lang, "not-allowed"),
    }
}

/// The hint for a message that carries no document and no known command.
pub fn send_a_document(lang: Lang) -> String {
    plain(lang, "send-a-document")
}

/// The answer to a message docket cannot work on: what it was, then what docket takes. Plain
/// text gets the hint alone.
pub fn cannot_use(lang: Lang, kind: UnusableKind) -> String {
    match kind {
        UnusableKind::Text => send_a_document(lang),
        kind => render(lang, "cannot-use", &[s("kind", kind.as_str())]),
    }
}

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

/// The notice that a result was removed before its promised date to make room.
pub fn expired_early(lang: Lang, job: &Job, at: Timestamp) -> String {
    render(
        lang,
        "expired-early",
        &[s("ticket", run_label(job)), s("name", display_name(lang, job.name())), s("date", at.date_utc())],
    )
}

/// The admins' alert when a message could not be delivered (one per hour at most).
pub fn delivery_alert(lang: Lang, message_id: OutboxId, chat_id: ChatRef, ticket: Option<Ticket>, why: &str) -> String {
    let mut args = vec![s("chat", chat_id.to_string()), s("message", message_id.to_string()), s("why", why)];
    match ticket {
        Some(ticket) => {
            args.push(s("ticket", ticket.to_string()));
            render(lang, "delivery-alert-about-ticket", &args)
        }
        None => render(lang, "delivery-alert", &args),
    }
}

/// The notice of a failed job.
pub fn failed_notice(lang: Lang, ticket: impl std::fmt::Display, reason_text: &str) -> String {
    render(lang, "failed-notice", &[s("ticket", ticket.to_string()), s("reason", reason_text)])
}

/// Why a job failed, as a clause naming the file: "report.pdf is not a PDF (…)".
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
    }
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

/// The `/status N` answer for the chat that owns the ticket.
pub fn status(lang: Lang, job: &Job) -> String {
    let ticket = || s("ticket", run_label(job));
    let mut lines = vec![render(
        lang,
        "status-title",
        &[ticket(), s("name", display_name(lang, job.name())), s("state", state_words(lang, job.state))],
    )];
    let declared = job
        .submission
        .declared_size
        .map(|b| size(lang, u64::try_from(b).unwrap_or(0)))
        .unwrap_or_else(|| plain(lang, "size-unknown-short"));
    lines.push(render(lang, "status-size", &[s("size", declared)]));
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
pub fn jobs(lang: Lang, jobs: &[Job]) -> String {
    if jobs.is_empty() {
        return plain(lang, "jobs-none");
    }
    let mut lines = vec![plain(lang, "jobs-title")];
    lines.extend(jobs.iter().map(|j| {
        render(
            lang,
            "jobs-line",
            &[
                s("ticket", run_label(j)),
                s("name", display_name(lang, j.name())),
                s("state", state_words(lang, j.state)),
            ],
        )
    }));
    lines.join("\n")
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

/// The notice to a person that an admin sent their failed ticket back to the queue.
pub fn retrying_for_admin(lang: Lang, job: &Job) -> String {
    render(lang, "retrying-for-admin", &[s("ticket", run_label(job)), s("name", display_name(lang, job.name()))])
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

/// The answer to `/stats` for someone who is not an admin.
pub fn admins_only(lang: Lang) -> String {
    plain(lang, "admins-only")
}

/// The `/stats` answer for admins.
pub fn stats(lang: Lang, stats: &crate::domain::BotStats, budget: u64, now: Timestamp) -> String {
    let mut lines = vec![plain(lang, "stats-title")];
    let jobs: Vec<String> = stats.jobs.iter().map(|(state, n)| format!("{state} {n}")).collect();
    let jobs = if jobs.is_empty() { plain(lang, "stats-jobs-none") } else { jobs.join(", ") };
    lines.push(render(lang, "stats-jobs", &[s("jobs", jobs)]));
    lines.push(render(
        lang,
        "stats-budget",
        &[s("in-flight", size(lang, stats.bytes_in_flight)), s("budget", size(lang, budget))],
    ));
    lines.push(match stats.oldest_waiting {
        Some(since) => render(lang, "stats-oldest", &[s("for", duration(lang, since.until(now)))]),
        None => plain(lang, "stats-oldest-none"),
    });
    lines.push(render(lang, "stats-dead-chats", &[s("n", stats.dead_chats.to_string())]));
    lines.push(render(lang, "stats-flood-waits", &[s("n", stats.flood_waits_last_hour.to_string())]));
    let hosts = if stats.hosts.is_empty() { plain(lang, "stats-hosts-none") } else { stats.hosts.join(", ") };
    lines.push(render(lang, "stats-hosts", &[s("hosts", hosts)]));
    lines.join("\n")
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

/// How a run is named to people: its ticket (`#4812`) for the run a document arrived with, the
/// ticket and the operation (`#4812 shrink`) for a further one.
pub fn run_label(job: &Job) -> String {
    if job.is_further_run() {
        format!("{} {}", job.ticket_number(), job.submission.operation)
    } else {
        job.ticket.to_string()
    }
}

// ─── Operations: choosing what to do, and what they say ────────────────────────────────────────

/// Each operation with its one-line description, in the order help lists them.
pub fn operation_lines(lang: Lang) -> String {
    crate::domain::Operation::NAMES
        .iter()
        .map(|name| plain(lang, &format!("operation-{name}")))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The answer to a caption that names no operation, or one with wrong arguments: what was wrong,
/// and the operations.
pub fn caption_not_understood(lang: Lang, problem: &str) -> String {
    render(lang, "caption-not-understood", &[s("problem", problem), s("operations", operation_lines(lang))])
}

/// What was wrong with a caption, from the parser's finding.
pub fn caption_problem(lang: Lang, error: &crate::domain::operation::ParseError) -> String {
    use crate::domain::operation::ParseError;
    match error {
        ParseError::Empty => plain(lang, "caption-names-nothing"),
        ParseError::Unknown(word) => render(lang, "caption-unknown-word", &[s("word", display_name(lang, word))]),
        ParseError::Arguments { operation, problem } => {
            render(lang, "caption-bad-arguments", &[s("operation", *operation), s("problem", problem.to_string())])
        }
    }
}

/// Added to the ticket reply of `decrypt PASSWORD`.
pub fn delete_the_password(lang: Lang, private: bool) -> String {
    // In a private chat the bot may delete the person's message; in a group only as an admin.
    plain(lang, if private { "password-message-deleted" } else { "delete-the-password" })
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

/// Why an operation refuses a file of another format, and what to send instead: "split takes a
/// PDF; this is a PNG image: send it with the caption topdf, or without a caption".
pub fn wrong_format(lang: Lang, operation: &str, accepts: &[&str], found: &str, found_label: &str) -> String {
    let takes = match accepts {
        ["pdf"] => plain(lang, "takes-a-pdf"),
        labels => labels.join(", "),
    };
    let id = if crate::domain::Operation::ImageToPdf.accepts().contains(&found_label) {
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

/// The message of an `info` result: the document's name, then its facts, clipped to what one
/// Telegram message holds.
pub fn info_message(lang: Lang, name: &str, facts: &str) -> String {
    clip_message(render(lang, "info-message", &[s("name", display_name(lang, name)), s("facts", facts)]))
}

/// The longest text of one Telegram message, in the UTF-16 code units Telegram counts.
pub const MAX_MESSAGE_UNITS: usize = 4096;

/// The most fonts `info` names; the rest are counted.
const INFO_FONTS_LISTED: usize = 30;

/// The longest metadata value (title, author…) `info` shows, in characters.
const INFO_VALUE_CHARS: usize = 200;

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

/// `value` shortened to [`INFO_VALUE_CHARS`] characters, with "…" when it was longer.
fn clip_value(value: &str) -> String {
    match value.char_indices().nth(INFO_VALUE_CHARS) {
        Some((end, _)) => format!("{}…", &value[..end]),
        None => value.to_owned(),
    }
}

/// A run of OCR on a bot where no OCR program is configured.
pub fn ocr_not_set_up(lang: Lang) -> String {
    plain(lang, "ocr-not-set-up")
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

/// `/status N` of a ticket with several runs: each run's status, the first one first.
pub fn ticket_status(lang: Lang, runs: &[Job]) -> String {
    runs.iter().map(|run| status(lang, run)).collect::<Vec<_>>().join("\n\n")
}

/// `/cancel N` of a ticket with several runs: each run that was cancelled.
pub fn runs_cancelled(lang: Lang, runs: &[Job]) -> String {
    runs.iter().map(|run| cancelled(lang, run)).collect::<Vec<_>>().join("\n")
}

/// After "X is not a PDF (…)": that the operation takes only PDFs, and what to send instead.
pub fn pdf_only(lang: Lang, operation: &str, found_label: &str) -> String {
    let id = if crate::domain::Operation::ImageToPdf.accepts().contains(&found_label) {
        "pdf-only-send-topdf"
    } else {
        "pdf-only"
    };
    render(lang, id, &[s("operation", operation)])
}

/// The line `text` writes for a page that shows no text at all.
pub fn page_without_text(lang: Lang, page: u32) -> String {
    render(lang, "page-without-text", &[n("page", u64::from(page))])
}

/// The line that ends a text cut short at page `page`, over `limit` bytes.
pub fn text_cut_short(lang: Lang, page: u32, limit: u64) -> String {
    render(lang, "text-cut-short", &[n("page", u64::from(page)), s("limit", size(lang, limit))])
}

/// `info`'s message: the facts about a document, one per line.
pub fn document_info(lang: Lang, info: &crate::domain::DocumentInfo) -> String {
    use crate::domain::Encryption;
    let mut lines = Vec::new();
    lines.push(match info.pages {
        Some(pages) => render(lang, "info-pages", &[n("pages", u64::from(pages))]),
        None => plain(lang, "info-pages-unknown"),
    });
    if let Some(page) = &info.page_size {
        let name = page.name().map(|name| {
            if page.is_landscape() {
                render(lang, "info-paper-landscape", &[s("paper", name)])
            } else {
                name.to_owned()
            }
        });
        let args = [
            s("paper", name.map(|n| format!("{n}, ")).unwrap_or_default()),
            s("width_mm", format!("{:.0}", page.width_mm())),
            s("height_mm", format!("{:.0}", page.height_mm())),
            s("width_pt", format!("{:.0}", page.width_pt)),
            s("height_pt", format!("{:.0}", page.height_pt)),
        ];
        lines.push(render(lang, "info-page-size", &args));
    }
    if !info.version.is_empty() {
        lines.push(render(lang, "info-version", &[s("version", info.version.as_str())]));
    }
    for (id, value) in [
        ("info-title", &info.title),
        ("info-author", &info.author),
        ("info-creator", &info.creator),
        ("info-producer", &info.producer),
    ] {
        if let Some(value) = value {
            lines.push(render(lang, id, &[s("value", clip_value(value))]));
        }
    }
    lines.push(plain(
        lang,
        match info.encryption {
            Encryption::None => "info-encryption-none",
            Encryption::OwnerPasswordOnly => "info-encryption-owner",
            Encryption::UserPassword => "info-encryption-user",
        },
    ));
    if let Some(images) = info.images {
        lines.push(render(lang, "info-images", &[n("images", u64::from(images))]));
    }
    if info.fonts.is_empty() {
        lines.push(plain(lang, "info-fonts-none"));
    } else {
        let fonts: Vec<String> = info
            .fonts
            .iter()
            .take(INFO_FONTS_LISTED)
            .map(|f| {
                if f.embedded {
                    f.name.clone()
                } else {
                    render(lang, "info-font-not-embedded", &[s("font", f.name.as_str())])
                }
            })
            .collect();
        let listed = fonts.join(", ");
        let more = info.fonts.len().saturating_sub(INFO_FONTS_LISTED) as u64;
        let fonts =
            if more > 0 { render(lang, "info-fonts-and-more", &[s("fonts", listed), n("more", more)]) } else { listed };
        lines.push(render(lang, "info-fonts", &[s("fonts", fonts)]));
    }
    lines.push(render(lang, "info-size", &[s("size", size(lang, info.file_bytes))]));
    lines.push(render(lang, "info-sha256", &[s("sha256", info.sha256.as_str())]));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::domain::ResultFile;

    const E: Lang = Lang::ENGLISH;

    #[test]
    fn an_info_reply_fits_one_message_however_many_fonts_and_however_long_its_metadata() {
        use crate::domain::{DocumentInfo, Encryption, FontFact};
        let long = Some("Ж".repeat(10_000));
        let info = DocumentInfo {
            pages: Some(3),
            page_size: None,
            version: "1.7".into(),
            producer: long.clone(),
            creator: long.clone(),
            title: long.clone(),
            author: long,
            encryption: Encryption::None,
            images: Some(2),
            fonts: (0..5_000)
                .map(|i| FontFact { name: format!("Font-With-A-Long-Name-{i}"), embedded: i % 2 == 0 })
                .collect(),
            file_bytes: 1_000,
            sha256: "ab".repeat(32),
        };
        for lang in [E, Lang::from_code("ru")] {
            let message = info_message(lang, "report.pdf", &document_info(lang, &info));
            assert!(message.encode_utf16().count() <= MAX_MESSAGE_UNITS, "{}", message.len());
            assert!(message.contains("Font-With-A-Long-Name-29") && !message.contains("Font-With-A-Long-Name-30,"));
            assert!(message.contains("4970"), "the fonts not listed are counted: {message}");
        }
        let emoji = "🙂".repeat(3_000);
        let clipped = clip_message(emoji);
        assert_eq!(clipped.encode_utf16().count(), MAX_MESSAGE_UNITS - 1);
        assert!(clipped.ends_with("🙂…"));
    }

    #[test]
    fn sizes_read_like_telegram_shows_them() {
        assert_eq!(size(E, 12_300_000), "12.3 MB");
        assert_eq!(size(E, 9_100_000), "9.1 MB");
        assert_eq!(size(E, 512), "512 B");
    }

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

    fn job(ticket: i64, name: &str, size: Option<i64>) -> Job {
        Job::accepted_for_tests(ticket, name, size, Timestamp::from_millis(1_796_000_000_000))
    }

    #[test]
    fn the_status_message_shows_where_the_job_is() {
        let job = job(4812, "contract.pdf", Some(182_000_000));
        let line = |step: Progress| progress(E, &job, &step).lines().nth(1).unwrap_or_default().to_owned();
        assert!(progress(E, &job, &Progress::Processing).starts_with("Got contract.pdf (182.0 MB) — ticket #4812.\n"));
        assert_eq!(line(Progress::Downloading { done: 0, total: Some(182_000_000) }), "Downloading…");
        assert_eq!(
            line(Progress::Downloading { done: 81_900_000, total: Some(182_000_000) }),
            "Downloading: 45% (81.9 MB of 182.0 MB)."
        );
        assert_eq!(line(Progress::Downloading { done: 5_000_000, total: None }), "Downloading: 5.0 MB so far.");
        assert_eq!(line(Progress::WaitingToProcess), "Downloaded; waiting for a free processing slot.");
        let until = Timestamp::from_millis(1_796_601_600_000);
        assert_eq!(
            line(Progress::Ready { until }),
            format!("Ready: the result is below, kept until {}.", until.date_utc())
        );
        assert_eq!(line(Progress::Failed { reason: "x is damaged".into() }), "Failed: x is damaged.");
    }

    #[test]
    fn a_lying_name_gets_a_clear_reason() {
        let r = failure_reason(E, "report.pdf", &FailureReason::NotAPdf { found: "a PNG image".into() });
        assert_eq!(
            failed_notice(E, Ticket(4812), &r),
            "#4812 failed: report.pdf is not a PDF (the content looks like a PNG image)."
        );
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

    fn ru() -> Lang {
        Lang::from_code("ru")
    }

    #[test]
    fn language_codes_pick_a_catalog_language_or_english() {
        assert_eq!(Lang::from_code("en"), Lang::ENGLISH);
        assert_eq!(Lang::from_code("en-GB"), Lang::ENGLISH);
        assert_eq!(Lang::from_code("ru").code(), "ru");
        assert_eq!(Lang::from_code("ru-RU"), ru());
        assert_eq!(Lang::from_code("RU"), ru());
        assert_eq!(Lang::from_code("de"), Lang::ENGLISH);
        assert_eq!(Lang::from_code(""), Lang::ENGLISH);
        assert_eq!(Lang::from_code("not a language!"), Lang::ENGLISH);
        assert_eq!(Lang::from_stored(None), Lang::ENGLISH);
        assert_eq!(Lang::ENGLISH.code(), "en");
        assert_eq!(Lang::all().next(), Some(Lang::ENGLISH), "English comes first");
        for lang in Lang::all() {
            assert_eq!(Lang::from_code(&lang.code()), lang, "{lang:?} round-trips through its code");
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

    /// The message ids of one catalog file.
    fn message_ids(path: &std::path::Path) -> std::collections::BTreeSet<String> {
        let text = std::fs::read_to_string(path).unwrap();
        let resource = fluent_syntax::parser::parse(text.as_str())
            .unwrap_or_else(|(_, errors)| panic!("{} does not parse: {errors:?}", path.display()));
        resource
            .body
            .iter()
            .filter_map(|entry| match entry {
                fluent_syntax::ast::Entry::Message(m) => Some(m.id.name.to_owned()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_language_has_every_message() {
        let locales = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("locales");
        let english = message_ids(&locales.join("en/docket.ftl"));
        let mut folders = 0;
        for entry in std::fs::read_dir(&locales).unwrap() {
            let folder = entry.unwrap().path();
            let ids = message_ids(&folder.join("docket.ftl"));
            let missing: Vec<_> = english.difference(&ids).collect();
            let extra: Vec<_> = ids.difference(&english).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "{}: missing {missing:?}, extra {extra:?}",
                folder.display()
            );
            let code = folder.file_name().unwrap().to_string_lossy().into_owned();
            assert_eq!(Lang::from_code(&code).code(), code, "the catalog embeds {code}");
            folders += 1;
        }
        assert_eq!(Lang::all().count(), folders, "every folder is a language, and only those");
        assert!(folders >= 2);
    }

    /// Calls every text function with arguments that reach each of its messages; `render` panics
    /// in tests on an unknown id or a missing variable.
    fn every_text(lang: Lang) -> Vec<String> {
        let facts = HelpFacts {
            download_limit: 20_000_000,
            upload_limit: 50_000_000,
            result_ttl: Duration::from_secs(7 * 86_400),
        };
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
            jobs(lang, std::slice::from_ref(&job)),
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
            FailureReason::NoSuchPage { page: 25, pages: 20 },
            FailureReason::NoSuchPage { page: 3, pages: 1 },
            FailureReason::WrongPassword,
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
        let shrink = Operation::Shrink;
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
            Progress::Downloading { done: 0, total: None },
            Progress::Downloading { done: 5, total: Some(10) },
            Progress::Downloading { done: 5, total: None },
            Progress::WaitingToProcess,
            Progress::Processing,
            Progress::WaitingToRetry,
            Progress::Ready { until },
            Progress::Cancelled,
            Progress::Failed { reason: "x".into() },
        ];
        all.extend(steps.iter().map(|step| progress(lang, &job, step)));
        for state in JobState::ALL {
            job.state = state;
            job.error = Some("x".into());
            job.result = Some(ResultFile { path: None, size: 1, expires_at: until, telegram_file_id: None });
            all.push(status(lang, &job));
        }
        all
    }

    #[test]
    fn every_message_renders_in_every_language() {
        let english = every_text(Lang::ENGLISH);
        for lang in Lang::all() {
            let texts = every_text(lang);
            for text in &texts {
                assert!(!text.trim().is_empty(), "{lang:?}: an empty text");
                assert!(
                    !text.contains('\u{2068}') && !text.contains('\u{2069}'),
                    "{lang:?}: isolation marks in {text:?}"
                );
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
                let _ = status(E, &job);
                let _ = progress(E, &job, &Progress::Downloading { done: n, total: Some(size) });
                job.result = Some(ResultFile { path: None, size: n as i64, expires_at: Timestamp::from_millis(0), telegram_file_id: None });
                let _ = ready_caption(E, &job);
                let _ = jobs(E, &[job]);
            }
        }
    }
}
