//! The Telegram adapter: Bot API calls, the polling intake loop, update parsing, and every
//! user-visible text. teloxide types stop here; the rest of docket sees intake facts and
//! [`client::TelegramError`].

pub mod client;
pub mod polling;
pub mod texts;
pub mod token;
pub mod updates;

pub use client::{DocumentSource, TelegramClient, TelegramError};
pub use token::BotToken;
