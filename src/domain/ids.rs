//! The numbers Telegram and the outbox give things, each its own type so that a message id can
//! never be bound where a chat or an update id belongs.
//!
//! The inner integer is public: these are names for numbers other systems chose, with nothing to
//! keep invariant, and storage and the Bot API adapter need the number itself.

use std::fmt;

/// A Telegram chat id (a person's private chat, a group, a supergroup or a channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChatRef(pub i64);

/// A Telegram user id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UserId(pub i64);

/// A Telegram bot's id: its own user id, and the key of its update registry and offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BotId(pub i64);

impl BotId {
    /// The bot as a user, as it appears in the messages it sent (a reply's sender).
    pub const fn as_user(self) -> UserId {
        UserId(self.0)
    }
}

/// The id of an update, increasing per bot; getUpdates confirms everything below an offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UpdateId(pub i64);

impl UpdateId {
    /// The offset that confirms this update and every one before it.
    pub const fn next_offset(self) -> i64 {
        self.0 + 1
    }
}

/// The id of a message within its chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MessageId(pub i64);

/// The id of an outbox row; also the order in which a chat's messages are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OutboxId(pub i64);

macro_rules! display_number {
    ($($name:ident),*) => {$(
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }
    )*};
}

display_number!(ChatRef, UserId, BotId, UpdateId, MessageId, OutboxId);
