//! Every sentence a person reads, from one catalog in several languages. Nothing else in docket
//! writes user-visible text, so wording, tone and the facts each message must carry (ticket,
//! name, sizes, dates) live in one place.
//!
//! The sentences are [Fluent](https://projectfluent.org) messages in `locales/<language>/docket.ftl`
//! (`en`, `ru`), embedded in the binary at build time by `fluent-templates`' `static_loader!`.
//! Fluent was chosen because its plural rules are the CLDR ones (Russian has one/few/many:
//! "1 задание", "2 задания", "5 заданий") and a translator edits a plain text file; fluent-templates
//! because it embeds a folder of such files with no code per language, on top of the
//! `fluent-bundle` crate maintained by Project Fluent. The functions of this module are the
//! catalog's front: each takes the [`Lang`] to write in, formats the facts (names shortened, sizes
//! with the language's units and decimal mark, dates as YYYY-MM-DD, durations in the language's
//! words) and renders one message with them. They are all reached as `crate::texts::…`; the files
//! below hold them by who reads them, each beside the catalog sections it renders:
//!
//! | file | what it writes | catalog sections (`## …` in `docket.ftl`) |
//! |---|---|---|
//! | `catalog.rs` | nothing itself: the embedded catalog, [`Lang`], and [`render`], which every other file calls | — |
//! | `values.rs` | the pieces sentences are built from: sizes, durations, time limits, file names, states, run labels, the clip to one Telegram message | sizes, durations, a job's states |
//! | `ticket.rs` | the ticket reply and the status message it becomes, and the answers to a file sent again | the ticket reply and the status message; answers to a document (the same file again) |
//! | `refusals.rs` | answers that queue nothing: too big, queue full, not allowed, not a document, a caption not understood | answers to a document; operations (caption-…) |
//! | `results.rs` | a delivered result's caption, and why a job failed | results and failures; operations (wrong format, hints); what a file is |
//! | `commands.rs` | the answers to commands: /start, /help, /status, /jobs, /cancel, /privacy, /forget, /mode, /lang, and the command list | /status…/cancel, /privacy and /forget, /start and /help, the command list, the language itself |
//! | `admin.rs` | what admins read: /stats, delivery alerts, a ticket retried for them | for admins |
//! | `outputs.rs` | the words inside a result: `info`'s facts, `text`'s page markers | info, text |
//!
//! `tests.rs` holds what crosses them: every message rendered in every language, plural forms,
//! and the property tests on hostile names.
//!
//! **Which language.** A chat's language, kept by the store, is the last `/lang` choice made in
//! it; until someone chooses, it is the Telegram `language_code` of whoever last wrote to docket
//! there (in a private chat: the person). Intake renders its answers in it, and the pipeline,
//! the janitor and the outbox render theirs in it when they queue them (the outbox stores text).
//! A code no catalog file matches (`de`), or none at all, means English.
//!
//! **Adding a message**: add `id = text with { $variables }` to `locales/en/docket.ftl` and to
//! every other language's file, and a function in the file of its audience (the table above) that
//! renders it with [`render`]'s argument list. The unit test `every_message_renders_in_every_language`
//! (`tests.rs`) must call the new function;
//! `every_language_has_every_message` fails while a file lacks the id.
//!
//! **Adding a language**: add one file, `locales/<code>/docket.ftl` (a copy of the English one,
//! translated; `<code>` is what Telegram sends as `language_code`, such as `de` or `pt-BR`), and
//! rebuild (touch `catalog.rs` if cargo does not notice the new folder). The set of languages is
//! the set of folders: `/lang` offers it, `setMyCommands` registers the command list in each, and
//! the tests check each.
//!
//! Names come from users and may contain anything; they are shown as plain text (messages are
//! sent without a parse mode, and the catalog puts no Unicode isolation marks around them),
//! shortened, and never used as paths.
//!
//! It depends on the domain only, so every layer above may use it.

mod admin;
mod catalog;
mod commands;
mod outputs;
mod refusals;
mod results;
#[cfg(test)]
mod tests;
mod ticket;
mod values;

pub use admin::*;
pub use catalog::{Arg, Lang, render};
pub use commands::*;
pub use outputs::*;
pub use refusals::*;
pub use results::*;
pub use ticket::*;
pub use values::*;
