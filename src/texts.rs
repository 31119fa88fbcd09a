//! Every sentence a person reads. Nothing else in docket writes user-visible text, so wording,
//! tone and the facts each message must carry (ticket, name, sizes, dates) live in one place.
//!
//! Names come from users and may contain anything; they are shown as plain text (messages are
//! sent without a parse mode), shortened, and never used as paths.
//!
//! It depends on the domain only, so every layer above may use it.

use humansize::{DECIMAL, FormatSizeOptions, format_size};

use crate::domain::{ChatRef, FailureReason, Job, JobState, OutboxId, Ticket, Timestamp};

/// A byte count for people: decimal units with one decimal, as Telegram's apps show sizes.
pub fn size(bytes: u64) -> String {
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    format_size(bytes, FormatSizeOptions::from(DECIMAL).decimal_places(1).decimal_zeroes(1))
}

/// A user-supplied file name, shortened for display.
pub fn display_name(name: &str) -> String {
    let clean: String = name.chars().filter(|c| !c.is_control()).collect();
    let clean = clean.trim();
    if clean.is_empty() {
        return "your file".to_owned();
    }
    if clean.chars().count() > 80 {
        format!("{}…", clean.chars().take(79).collect::<String>())
    } else {
        clean.to_owned()
    }
}

fn known_size(bytes: Option<u64>) -> String {
    bytes.map(size).unwrap_or_else(|| "size unknown".to_owned())
}

/// The queue is counted up to this many jobs ahead; beyond it the ticket reply says "more than".
pub const QUEUE_COUNT_CAP: u64 = 1000;

/// The first words of a job's status message: what arrived, and its ticket.
fn ticket_line(name: &str, declared_size: Option<u64>, ticket: &dyn std::fmt::Display) -> String {
    format!("Got {} ({}) — ticket {ticket}", display_name(name), known_size(declared_size))
}

/// The immediate answer to a new document, with how many jobs are ahead of it (counted up to
/// [`QUEUE_COUNT_CAP`]). It becomes the job's status message, which [`progress`] edits as the
/// job moves.
pub fn ticket_reply(name: &str, declared_size: Option<u64>, ticket: Ticket, ahead: u64) -> String {
    let queued = match ahead {
        0 => "queued.".to_owned(),
        1 => "queued, 1 job ahead of it.".to_owned(),
        n if n > QUEUE_COUNT_CAP => format!("queued, more than {QUEUE_COUNT_CAP} jobs ahead of it."),
        n => format!("queued, {n} jobs ahead of it."),
    };
    format!("{}, {queued}", ticket_line(name, declared_size, &ticket))
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
        /// Why, as [`failure_reason`] words it.
        reason: String,
    },
}

/// A job's status message: the ticket line, then where the job is now.
pub fn progress(job: &Job, step: &Progress) -> String {
    let declared = job.submission.declared_size.and_then(|s| u64::try_from(s).ok());
    let header = format!("{}.", ticket_line(job.name(), declared, &run_label(job)));
    let line = match step {
        Progress::Queued { position: 1 } => "Queued: next in line.".to_owned(),
        Progress::Queued { position } => format!("Queued: number {position} in line."),
        Progress::Downloading { done: 0, .. } => "Downloading…".to_owned(),
        Progress::Downloading { done, total: Some(total) } if *total > 0 => {
            format!("Downloading: {}% ({} of {}).", done.saturating_mul(100) / total, size(*done), size(*total))
        }
        Progress::Downloading { done, .. } => format!("Downloading: {} so far.", size(*done)),
        Progress::WaitingToProcess => "Downloaded; waiting for a free processing slot.".to_owned(),
        Progress::Processing => "Processing…".to_owned(),
        Progress::WaitingToRetry => "Interrupted; trying again shortly.".to_owned(),
        Progress::Ready { until } => format!("Ready: the result is below, kept until {}.", until.date_utc()),
        Progress::Cancelled => "Cancelled; its files are deleted.".to_owned(),
        Progress::Failed { reason } => format!("Failed: {reason}."),
    };
    format!("{header}\n{line}")
}

/// The answer to a file this chat already sent, while its job is still running (or failed and
/// is being tried again).
pub fn already_ticket(name: &str, ticket: Ticket, state: JobState) -> String {
    format!("{} is already ticket {ticket} ({}).", display_name(name), state_words(state))
}

/// The answer to a file whose result expired: it is processed again under the same ticket.
pub fn processing_again_after_expiry(ticket: Ticket, expired_at: Timestamp) -> String {
    format!("{ticket} expired on {}; processing it again.", expired_at.date_utc())
}

/// The answer to a file whose earlier attempt failed: it is tried again under the same ticket.
pub fn trying_again_after_failure(name: &str, ticket: Ticket) -> String {
    format!("{} is ticket {ticket}, which failed before; trying again.", display_name(name))
}

/// The refusal of a file over the download limit; no job is made.
pub fn too_big_to_accept(name: &str, declared: u64, limit: u64) -> String {
    format!(
        "{} is {}, but this bot can only take files up to {}. Nothing was queued.",
        display_name(name),
        size(declared),
        size(limit)
    )
}

/// The refusal of a file bigger than the whole byte budget of this bot; no job is made.
pub fn too_big_for_budget(name: &str, declared: u64, largest: u64) -> String {
    format!(
        "{} is {}, more than this bot can work on at once (up to {}). Nothing was queued.",
        display_name(name),
        size(declared),
        size(largest)
    )
}

/// The refusal of a file when its chat already has `waiting` files in the queue, as many as one
/// chat may (`[limits] per_chat_queued`); no job is made.
pub fn queue_full(name: &str, waiting: u64) -> String {
    let waiting = match waiting {
        1 => "1 of your files is".to_owned(),
        n => format!("{n} of your files are"),
    };
    format!(
        "{} was not queued: {waiting} already waiting in the queue, as many as this bot takes from one chat. \
         Please send it again when some of them are done.",
        display_name(name)
    )
}

/// The refusal of a user who is not on `[access] allowed_users`.
pub fn not_allowed(user_id: Option<i64>) -> String {
    match user_id {
        Some(id) => format!("Sorry, this bot is private. Ask its admin to add your user id ({id})."),
        None => "Sorry, this bot is private.".to_owned(),
    }
}

/// The hint for a message that carries no document and no known command.
pub fn send_a_document() -> String {
    "Send me a PDF as a file (or an image, which becomes a PDF), with what to do as its caption: \
     optimize, shrink, split, text… /help tells more."
        .to_owned()
}

/// The caption of a delivered result.
pub fn ready_caption(job: &Job) -> String {
    let before = job.source.as_ref().map(|s| s.size).or(job.submission.declared_size).map(|s| size(s.max(0) as u64));
    let after = job.result.as_ref().map(|r| size(r.size.max(0) as u64)).unwrap_or_default();
    let until = job.result.as_ref().map(|r| r.expires_at.date_utc()).unwrap_or_default();
    match before {
        Some(before) => {
            format!(
                "{} ready: {}, {before} → {after}. Available until {until}.",
                run_label(job),
                display_name(job.name())
            )
        }
        None => format!("{} ready: {}, {after}. Available until {until}.", run_label(job), display_name(job.name())),
    }
}

/// The notice that a result was removed before its promised date to make room.
pub fn expired_early(job: &Job, at: Timestamp) -> String {
    format!(
        "{}: the result for {} had to be removed early, on {}, to make room. Send the file again to process it again.",
        run_label(job),
        display_name(job.name()),
        at.date_utc()
    )
}

/// The admins' alert when a message could not be delivered (one per hour at most).
pub fn delivery_alert(message_id: OutboxId, chat_id: ChatRef, ticket: Option<Ticket>, why: &str) -> String {
    let about = ticket.map(|t| format!(" about ticket #{}", t.0)).unwrap_or_default();
    format!(
        "docket: a message to chat {chat_id}{about} could not be delivered (outbox #{message_id}): {why}. \
         Further failures this hour are not announced; `docket status` and the \
         docket_messages_failed_total metric count them."
    )
}

/// The notice of a failed job.
pub fn failed_notice(ticket: impl std::fmt::Display, reason_text: &str) -> String {
    format!("{ticket} failed: {reason_text}.")
}

/// Why a job failed, as a clause naming the file: "report.pdf is not a PDF (…)".
pub fn failure_reason(name: &str, reason: &FailureReason) -> String {
    let name = display_name(name);
    match reason {
        FailureReason::NotAPdf { found } => format!("{name} is not a PDF (the content looks like {found})"),
        FailureReason::TooBig { size: s, limit } => {
            format!("{name} is {}, over the {} this bot can download", size(*s), size(*limit))
        }
        FailureReason::SizeMismatch { declared, real } => format!(
            "{name} arrived as {} instead of the {} Telegram announced; please send it again",
            size(*real),
            size(*declared)
        ),
        FailureReason::Encrypted => format!("{name} is protected by a password; please send a copy without one"),
        FailureReason::Unreadable => format!("{name} is damaged and cannot be read as a PDF"),
        FailureReason::NoPages => format!("{name} has no pages"),
        FailureReason::ResultTooBig { size: s, limit, operation } => format!(
            "the result for {name} is {}, over the {} this bot can send{}",
            size(*s),
            size(*limit),
            result_too_big_hint(operation)
        ),
        FailureReason::WrongFormat { operation, accepts, found, found_label } if accepts == &["pdf"] => {
            format!("{name} is not a PDF (the content looks like {found}): {}", pdf_only(operation, found_label))
        }
        FailureReason::WrongFormat { operation, accepts, found, found_label } => {
            let accepts: Vec<&str> = accepts.iter().map(String::as_str).collect();
            format!("{name} was not processed: {}", wrong_format(operation, &accepts, found, found_label))
        }
        FailureReason::NotSetUp { operation } if operation == "ocr" => {
            format!("{name} was not processed: {}", ocr_not_set_up())
        }
        FailureReason::NotSetUp { operation } => {
            format!("{name} was not processed: {operation} is not set up on this bot")
        }
        FailureReason::FileUnavailable => format!("Telegram no longer has {name}; please send it again"),
        FailureReason::GaveUp { attempts } => {
            format!("{name} could not be processed after {attempts} attempts; please try again later")
        }
        FailureReason::SourceKeptVanishing { times } => format!(
            "the downloaded copy of {name} was lost or damaged on this server {times} times; please try again later"
        ),
        FailureReason::NeedsTooMuchMemory { limit } => {
            format!("{name} needs more than {} of memory to process", memory_size(*limit))
        }
        FailureReason::TookTooLong { limit } => format!("processing {name} took longer than {}", minutes(*limit)),
        FailureReason::InflatesTooMuch { limit } => format!(
            "{name} holds compressed data that unpacks to more than {}, more than this bot processes",
            memory_size(*limit)
        ),
        FailureReason::Crashed => format!("{name} made the processing crash, so it cannot be processed"),
        FailureReason::ToolFailed { tool } => format!("{tool} could not process {name}"),
        FailureReason::Cancelled => format!("{name} was cancelled"),
    }
}

/// A memory size in binary units, as limits are set: "2 GiB", "256 MiB".
pub fn memory_size(bytes: u64) -> String {
    humansize::format_size(bytes, humansize::FormatSizeOptions::from(humansize::BINARY).space_after_value(true))
}

/// A time limit in words: "10 min", "90 s", "2 h".
pub fn minutes(limit: std::time::Duration) -> String {
    let secs = limit.as_secs();
    match secs {
        s if s >= 3600 && s % 3600 == 0 => format!("{} h", s / 3600),
        s if s >= 60 && s % 60 == 0 => format!("{} min", s / 60),
        s => format!("{s} s"),
    }
}

/// A state in words.
pub fn state_words(state: JobState) -> &'static str {
    match state {
        JobState::Accepted => "queued",
        JobState::Fetched => "downloaded, waiting to be processed",
        JobState::Processing => "processing",
        JobState::Ready => "ready",
        JobState::Failed => "failed",
        JobState::Expired => "expired",
    }
}

/// The `/status N` answer for the chat that owns the ticket.
pub fn status(job: &Job) -> String {
    let mut lines = vec![format!("{} — {}: {}", run_label(job), display_name(job.name()), state_words(job.state))];
    let declared = job.submission.declared_size.map(|s| size(s.max(0) as u64)).unwrap_or_else(|| "unknown".to_owned());
    lines.push(format!("Size: {declared}"));
    if let Some(result) = &job.result {
        lines.push(format!("Result: {}", size(result.size.max(0) as u64)));
    }
    lines.push(format!("Received: {}", job.created_at.datetime_utc()));
    lines.push(format!("Last change: {}", job.updated_at.datetime_utc()));
    match job.state {
        JobState::Ready => {
            if let Some(t) = job.result.as_ref().map(|r| r.expires_at) {
                lines.push(format!("Available until {}. Send the same file again to get it again.", t.date_utc()));
            }
        }
        JobState::Expired => {
            if let Some(t) = job.result.as_ref().map(|r| r.expires_at) {
                lines.push(format!("Expired on {}. Send the file again to process it again.", t.date_utc()));
            }
        }
        JobState::Failed => {
            if let Some(e) = &job.error {
                lines.push(format!("Reason: {e}."));
            }
        }
        _ => {}
    }
    lines.join("\n")
}

/// The `/status` answer for a ticket that does not exist *or belongs to another chat*: the two
/// must read the same, so tickets cannot be probed.
pub fn no_such_ticket(ticket: Ticket) -> String {
    format!("No such ticket: {ticket}.")
}

/// `/status` or `/get` without a usable number.
pub fn status_usage() -> String {
    "Usage: /status 4812 or /get 4812 (the ticket number from my reply).".to_owned()
}

/// The `/jobs` answer: the chat's latest tickets.
pub fn jobs(jobs: &[Job]) -> String {
    if jobs.is_empty() {
        return "No tickets yet. Send me a PDF as a file to start.".to_owned();
    }
    let mut lines = vec!["Your latest tickets:".to_owned()];
    lines
        .extend(jobs.iter().map(|j| format!("{} {} — {}", run_label(j), display_name(j.name()), state_words(j.state))));
    lines.join("\n")
}

/// The answer to `/cancel N` (or `docket cancel N`) that stopped the job.
pub fn cancelled(job: &Job) -> String {
    format!(
        "{} cancelled: {} will not be processed, and its files are deleted.",
        run_label(job),
        display_name(job.name())
    )
}

/// The answer to `/cancel N` for a job that has ended already.
pub fn cannot_cancel(ticket: Ticket, state: JobState) -> String {
    format!("{ticket} is {} already; only a ticket that is not ready yet can be cancelled.", state_words(state))
}

/// `/cancel` without a usable number.
pub fn cancel_usage() -> String {
    "Usage: /cancel 4812 (the ticket number from my reply).".to_owned()
}

/// The notice to a person that an admin sent their failed ticket back to the queue.
pub fn retrying_for_admin(job: &Job) -> String {
    format!("{}: {} is being tried again.", run_label(job), display_name(job.name()))
}

/// What `/privacy` says: what is kept, where, and for how long.
pub fn privacy(facts: &HelpFacts) -> String {
    format!(
        "What I keep about you:\n\
         • For each file you send: its name, size and type as Telegram gives them, your user and chat id, \
         and the message ids, in this bot's database.\n\
         • The file itself, on this bot's server, only while it is being processed.\n\
         • The result, on this bot's server, for {} after it is ready; then it is deleted.\n\
         • The texts I sent you, until they have been delivered and some time after.\n\
         Nothing is shared with anyone. /forget deletes your files, results and their names now.",
        humantime::format_duration(facts.result_ttl)
    )
}

/// The question `/forget` asks, above its confirmation button.
pub fn forget_question() -> String {
    "This deletes all your results and files and the names of everything you sent, now. \
     Tickets in progress are cancelled. It cannot be undone."
        .to_owned()
}

/// The label of `/forget`'s confirmation button.
pub fn forget_button() -> String {
    "Yes, delete everything".to_owned()
}

/// The answer once `/forget` was confirmed.
pub fn forgotten(jobs: u64) -> String {
    match jobs {
        0 => "Done: there was nothing of yours to delete.".to_owned(),
        1 => "Done: 1 ticket is forgotten, with its files.".to_owned(),
        n => format!("Done: {n} tickets are forgotten, with their files."),
    }
}

/// The answer to a valid invite (`/start <token>`).
pub fn invited(facts: &HelpFacts) -> String {
    format!("Welcome! You can use this bot now.\n\n{}", help(facts))
}

/// The answer to `/stats` for someone who is not an admin.
pub fn admins_only() -> String {
    "Only this bot's admins can use /stats.".to_owned()
}

/// The `/stats` answer for admins.
pub fn stats(stats: &crate::domain::BotStats, budget: u64, now: Timestamp) -> String {
    let mut lines = vec!["docket now:".to_owned()];
    let jobs: Vec<String> = stats.jobs.iter().map(|(state, n)| format!("{state} {n}")).collect();
    lines.push(format!("Jobs: {}", if jobs.is_empty() { "none".to_owned() } else { jobs.join(", ") }));
    lines.push(format!("Budget: {} in flight, of {} per process", size(stats.bytes_in_flight), size(budget)));
    lines.push(match stats.oldest_waiting {
        Some(since) => format!("Oldest waiting job: due for {}", humantime::format_duration(rounded(since.until(now)))),
        None => "Oldest waiting job: none waiting".to_owned(),
    });
    lines.push(format!("Dead chats: {}", stats.dead_chats));
    lines.push(format!("429s in the last hour: {}", stats.flood_waits_last_hour));
    lines.push(format!(
        "Hosts: {}",
        if stats.hosts.is_empty() { "none holding work now".to_owned() } else { stats.hosts.join(", ") }
    ));
    lines.join("\n")
}

/// A duration to the whole second, for people.
fn rounded(d: std::time::Duration) -> std::time::Duration {
    std::time::Duration::from_secs(d.as_secs())
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
pub fn start(facts: &HelpFacts) -> String {
    format!(
        "Hello! Send me a PDF as a file and I will optimize it (recompress and drop unused parts). \
         You get a ticket number at once and the result when it is done.\n\n{}",
        help(facts)
    )
}

/// `/help`.
pub fn help(facts: &HelpFacts) -> String {
    format!(
        "How it works:\n\
         • Send a PDF as a file (up to {}). I answer with a ticket number right away.\n\
         • When it is done you get the result (results up to {} can be sent).\n\
         • Results are kept for {}; sending the same file again gets it again.\n\n\
         What to do is the file's caption (without one: optimize, or what /mode chose):\n\
         {}\n\
         When a result is ready, its buttons ask for more from the same file.\n\n\
         Commands:\n\
         /status 4812 — where a ticket is\n\
         /get 4812 — the result again, while it is kept\n\
         /jobs — your latest tickets\n\
         /cancel 4812 — stop a ticket that is not ready yet\n\
         /mode — what a file without a caption gets in this chat\n\
         /privacy — what I keep, and for how long\n\
         /forget — delete everything of yours now\n\
         /help — this text",
        size(facts.download_limit),
        size(facts.upload_limit),
        humantime::format_duration(facts.result_ttl),
        operation_lines()
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

// ─── Operations: choosing what to do (new sentences of helper "runs"; English) ─────────────────
// Every sentence below is new with the operations; the catalog takes them over at merge.

/// Each operation with its one-line description, in the order help lists them.
pub fn operation_lines() -> String {
    [
        "optimize — smaller without any loss (the default)",
        "shrink — much smaller: images downsampled and recompressed (for scans and photos)",
        "split — each page as its own PDF, in a ZIP; split 1-3,7 — those ranges",
        "pages 2-10 — only those pages, as one PDF",
        "text — the text of every page, as a .txt file",
        "info — pages, size, version, fonts and images, as a message",
        "rotate 90 — turn every page; rotate 180 2,4 — only pages 2 and 4",
        "decrypt PASSWORD — open a password-protected PDF and save it without the password",
        "ocr — add a searchable text layer to a scan; ocr rus+eng — in those languages",
        "topdf — an image (JPEG, PNG, TIFF, WebP) as a PDF",
    ]
    .join("\n")
}

/// The answer to a caption that names no operation, or one with wrong arguments: what was wrong,
/// and the operations.
pub fn caption_not_understood(problem: &str) -> String {
    format!(
        "I did not start anything: {problem}. Send the file again with one of these as its caption \
         (or without a caption for your default, see /mode):\n{}",
        operation_lines()
    )
}

/// What was wrong with a caption, from the parser's finding.
pub fn caption_problem(error: &crate::domain::operation::ParseError) -> String {
    use crate::domain::operation::ParseError;
    match error {
        ParseError::Empty => "the caption names no operation".to_owned(),
        ParseError::Unknown(word) => format!("\"{}\" is not an operation", display_name(word)),
        ParseError::Arguments { operation, problem } => format!("{operation}: {problem}"),
    }
}

/// Added to the ticket reply of `decrypt PASSWORD`.
pub fn delete_the_password() -> String {
    "Your password is kept only until this job ends. Please delete the message that carries it.".to_owned()
}

/// `/mode` without a word: the chat's default, and the choices.
pub fn mode_now(current: &crate::domain::Operation, own: bool) -> String {
    let whose = if own { "this chat's choice" } else { "the bot's default" };
    format!(
        "Documents sent without a caption get {current} ({whose}). To change it: /mode followed by one of {}.",
        crate::domain::Operation::MODES.join(", ")
    )
}

/// `/mode NAME` done.
pub fn mode_set(operation: &crate::domain::Operation) -> String {
    format!("Done: documents sent here without a caption now get {operation}.")
}

/// `/mode WORD` with a word that is no default operation.
pub fn mode_unknown(word: &str) -> String {
    format!(
        "\"{}\" cannot be a default. Choose one of {}.",
        display_name(word),
        crate::domain::Operation::MODES.join(", ")
    )
}

/// Why an operation refuses a file of another format, and what to send instead: "split takes a
/// PDF; this is a PNG image: send it with the caption topdf, or without a caption".
pub fn wrong_format(operation: &str, accepts: &[&str], found: &str, found_label: &str) -> String {
    let takes = match accepts {
        ["pdf"] => "a PDF".to_owned(),
        labels => labels.join(", "),
    };
    let instead = if crate::domain::Operation::ImageToPdf.accepts().contains(&found_label) {
        ": send it with the caption topdf, or without a caption"
    } else if found_label == "pdf" {
        ": send it with a caption such as optimize or shrink"
    } else {
        ""
    };
    format!("{operation} takes {takes}; this is {found}{instead}")
}

/// The note when the declared name or MIME type disagrees with the content: "sent as report.pdf,
/// but it is a ZIP archive".
pub fn declared_but_is(declared: &str, found: &str) -> String {
    format!("sent as {}, but it is {found}", display_name(declared))
}

/// The hint after a result over the upload limit, by operation.
pub fn result_too_big_hint(operation: &str) -> &'static str {
    match operation {
        "optimize" | "decrypt" | "rotate" | "topdf" | "ocr" => {
            "; try shrink for a smaller file, or split it into parts"
        }
        "shrink" | "pages" => "; try split to send it in parts",
        "split" => "; try split with fewer pages per part, such as split 1-20,21-40",
        _ => "",
    }
}

/// The message of an `info` result: the child's output (until the document facts land, its text).
pub fn info_message(name: &str, output: &str) -> String {
    format!("{}:\n{output}", display_name(name))
}

/// A run of OCR on a bot where no OCR program is configured.
pub fn ocr_not_set_up() -> String {
    "OCR is not set up on this bot".to_owned()
}

/// Added to the ticket reply when the operation is not the plain optimize: what will be done.
pub fn will_run(operation: &crate::domain::Operation) -> String {
    format!("It will get: {operation}.")
}

/// The status message of a further run of a ticket: "#4812 shrink: queued."
pub fn run_reply(ticket: Ticket, operation: &crate::domain::Operation, ahead: u64) -> String {
    let queued = match ahead {
        0 => "queued.".to_owned(),
        1 => "queued, 1 job ahead of it.".to_owned(),
        n if n > QUEUE_COUNT_CAP => format!("queued, more than {QUEUE_COUNT_CAP} jobs ahead of it."),
        n => format!("queued, {n} jobs ahead of it."),
    };
    format!("{ticket} {operation}: {queued}")
}

/// `/status N` of a ticket with several runs: each run's status, the first one first.
pub fn ticket_status(runs: &[Job]) -> String {
    runs.iter().map(status).collect::<Vec<_>>().join("\n\n")
}

/// `/cancel N` of a ticket with several runs: each run that was cancelled.
pub fn runs_cancelled(runs: &[Job]) -> String {
    runs.iter().map(cancelled).collect::<Vec<_>>().join("\n")
}

/// After "X is not a PDF (…)": that the operation takes only PDFs, and what to send instead.
pub fn pdf_only(operation: &str, found_label: &str) -> String {
    if crate::domain::Operation::ImageToPdf.accepts().contains(&found_label) {
        format!("{operation} takes a PDF; send the image with the caption topdf to make it one")
    } else {
        format!("{operation} takes a PDF")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ResultFile;

    #[test]
    fn sizes_read_like_telegram_shows_them() {
        assert_eq!(size(12_300_000), "12.3 MB");
        assert_eq!(size(9_100_000), "9.1 MB");
        assert_eq!(size(512), "512 B");
    }

    #[test]
    fn the_ticket_reply_has_name_size_and_ticket() {
        assert_eq!(
            ticket_reply("report.pdf", Some(12_300_000), Ticket(4812), 0),
            "Got report.pdf (12.3 MB) — ticket #4812, queued."
        );
        assert_eq!(
            ticket_reply("", None, Ticket(1), 1),
            "Got your file (size unknown) — ticket #1, queued, 1 job ahead of it."
        );
        assert_eq!(
            ticket_reply("a.pdf", None, Ticket(9), 7),
            "Got a.pdf (size unknown) — ticket #9, queued, 7 jobs ahead of it."
        );
        assert_eq!(
            ticket_reply("a.pdf", None, Ticket(9), QUEUE_COUNT_CAP + 1),
            "Got a.pdf (size unknown) — ticket #9, queued, more than 1000 jobs ahead of it."
        );
    }

    fn job(ticket: i64, name: &str, size: Option<i64>) -> Job {
        Job::accepted_for_tests(ticket, name, size, Timestamp::from_millis(1_796_000_000_000))
    }

    #[test]
    fn the_status_message_shows_where_the_job_is() {
        let job = job(4812, "contract.pdf", Some(182_000_000));
        let line = |step: Progress| progress(&job, &step).lines().nth(1).unwrap_or_default().to_owned();
        assert!(progress(&job, &Progress::Processing).starts_with("Got contract.pdf (182.0 MB) — ticket #4812.\n"));
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
        let r = failure_reason("report.pdf", &FailureReason::NotAPdf { found: "a PNG image".into() });
        assert_eq!(
            failed_notice(Ticket(4812), &r),
            "#4812 failed: report.pdf is not a PDF (the content looks like a PNG image)."
        );
    }

    #[test]
    fn hostile_names_are_tamed() {
        assert_eq!(display_name("a\u{0}b\nc.pdf"), "abc.pdf");
        assert_eq!(display_name(&"x".repeat(500)).chars().count(), 80);
        assert_eq!(display_name("  "), "your file");
    }

    #[test]
    fn long_multibyte_names_are_shortened_by_characters() {
        for wide in ["é", "中", "🦀", "e\u{301}"] {
            for pad in 0..4 {
                let name = format!("{}{}", "a".repeat(pad), wide.repeat(100));
                let shown = display_name(&name);
                assert_eq!(shown.chars().count(), 80, "{shown}");
                assert!(shown.ends_with('…'), "{shown}");
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
                let shown = display_name(&raw);
                prop_assert!(shown.chars().count() <= 80);
                prop_assert!(!shown.chars().any(char::is_control));
                let clean: String = raw.chars().filter(|c| !c.is_control()).collect();
                let kept = shown.strip_suffix('…').unwrap_or(&shown);
                prop_assert!(shown == "your file" || clean.trim().starts_with(kept), "{shown:?} from {raw:?}");
            }

            #[test]
            fn every_text_with_a_user_name_is_built_safely(raw in name(), size in any::<u64>(), n in any::<u64>()) {
                let _ = ticket_reply(&raw, Some(size), Ticket(1), n);
                let _ = already_ticket(&raw, Ticket(1), JobState::Processing);
                let _ = trying_again_after_failure(&raw, Ticket(1));
                let _ = too_big_to_accept(&raw, size, n);
                let _ = too_big_for_budget(&raw, size, n);
                let _ = failure_reason(&raw, &FailureReason::NotAPdf { found: raw.clone() });
                let mut job = job(1, &raw, Some(size as i64));
                let _ = status(&job);
                let _ = progress(&job, &Progress::Downloading { done: n, total: Some(size) });
                job.result = Some(ResultFile { path: None, size: n as i64, expires_at: Timestamp::from_millis(0), telegram_file_id: None });
                let _ = ready_caption(&job);
                let _ = jobs(&[job]);
            }
        }
    }
}
