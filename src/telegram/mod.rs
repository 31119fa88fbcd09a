//! The Telegram adapter: Bot API calls and update parsing. teloxide types stop here; the rest of
//! docket sees the domain's facts ([`crate::domain::incoming`]) and [`TelegramError`].
//! It must not import the services (intake, pipeline, outbox) or the wiring.

pub mod client;
pub mod commands;
mod errors;
mod reread;
pub mod token;
pub mod updates;

pub use client::{DocumentSource, TelegramClient, TelegramError};
pub use token::BotToken;
