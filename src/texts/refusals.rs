//! Answers that queue nothing: a file over the download limit or the byte budget, a chat whose
//! queue is full, a person the bot is not open to, a message that is no document, and a caption
//! that names no operation. The catalog's section "Answers to a document", and the caption
//! messages of "Operations".

use super::catalog::{Lang, n, plain, render, s};
use super::commands::operation_lines;
use super::values::{display_name, size};
use crate::domain::incoming::UnusableKind;

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
