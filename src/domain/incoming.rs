//! What an update means to docket: the facts the Telegram adapter extracts from it (who, where,
//! which document, which command, addressed to whom), and nothing more. Every field is a claim
//! made by the sender or by Telegram, not a fact docket checked.

use super::{ChatRef, MessageId, Ticket, UserId};

/// A document as Telegram described it. Every field is a claim, not a fact. `Debug` leaves the
/// caption out: it may carry a password (`decrypt PASSWORD`).
#[derive(Clone, PartialEq, Eq)]
pub struct DocumentFacts {
    /// For getFile.
    pub file_id: String,
    /// Stable across chats and bots; part of the unique key.
    pub file_unique_id: String,
    /// The declared file name.
    pub name: Option<String>,
    /// The declared MIME type.
    pub mime: Option<String>,
    /// The declared size; `None` when Telegram did not say.
    pub size: Option<u64>,
    /// The message's caption, as written (its first word may name the operation).
    pub caption: Option<String>,
    /// The sender's Telegram `language_code` (`en`, `ru`), when Telegram gave one.
    pub language_code: Option<String>,
    /// The album (Telegram's `media_group_id`) the message is a part of: the messages of one
    /// album are one ticket.
    pub media_group_id: Option<String>,
}

impl std::fmt::Debug for DocumentFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocumentFacts")
            .field("file_id", &self.file_id)
            .field("file_unique_id", &self.file_unique_id)
            .field("name", &self.name)
            .field("mime", &self.mime)
            .field("size", &self.size)
            .field("caption", &self.caption.as_ref().map(|c| format!("[{} characters]", c.chars().count())))
            .field("language_code", &self.language_code)
            .field("media_group_id", &self.media_group_id)
            .finish()
    }
}

/// The commands people can send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/start`, with the word after it when there is one (an invite token).
    Start(Option<String>),
    /// `/help`
    Help,
    /// `/status N` (`None`: no usable number given).
    Status(Option<Ticket>),
    /// `/jobs`
    Jobs,
    /// `/get N`: send a kept result again (`None`: no usable number given).
    Get(Option<Ticket>),
    /// `/cancel N`: stop a job that is not ready yet (`None`: no usable number given).
    Cancel(Option<Ticket>),
    /// `/privacy`: what is kept, where, and for how long.
    Privacy,
    /// `/forget`: delete everything of the sender's, after a confirmation button.
    Forget,
    /// `/stats`: the bot's state, for admins.
    Stats,
    /// `/mode [NAME]`: show, or set, the chat's default operation for documents without a caption
    /// (the word as written, `None` without one).
    Mode(Option<String>),
    /// `/lang`: choose the language docket writes to the chat in, with one button per language.
    Lang,
    /// `/merge`: the files sent next are one ticket, merged into one PDF at `/done`.
    Merge,
    /// `/done`: merge the files sent since `/merge`.
    Done,
}

/// A press on an inline button (a callback query).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ButtonPress {
    /// The callback query's id, which must be answered.
    pub query_id: String,
    /// The button's data, as docket set it.
    pub data: String,
}

/// Whom a chat is between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatKind {
    /// A person and the bot: everything there is for docket.
    Private,
    /// A group or supergroup (or channel): only what is addressed to docket is
    /// (`[access] groups`).
    Group,
}

/// Whom a message speaks to, as it says itself. Intake compares it with the bot's own name and
/// id to tell, in a group, a message for docket from one for someone else.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Address {
    /// Bot usernames the message names, without the `@`: the one after a command
    /// (`/status@name`), or the `@name` mentions of a document's caption.
    pub names: Vec<String>,
    /// The sender of the message this one replies to.
    pub replies_to: Option<UserId>,
}

/// Who sent a message, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    /// The chat.
    pub chat: ChatRef,
    /// Private or group.
    pub chat_kind: ChatKind,
    /// The sender, when known.
    pub user: Option<UserId>,
    /// The message, for threading replies.
    pub message_id: MessageId,
    /// The sender's language as their Telegram app reports it, when it does.
    pub language: Option<LanguageCode>,
}

/// An IETF language tag as Telegram reports a person's (`language_code`: "ru", "en-GB",
/// "pt-br"): ASCII letters, digits and `-`, at most [`LanguageCode::MAX_LEN`] bytes. Kept inline
/// so that [`Origin`] stays `Copy`. Which catalog language it means is decided above the domain.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LanguageCode {
    bytes: [u8; Self::MAX_LEN],
    len: u8,
}

impl LanguageCode {
    /// The longest code kept; longer ones are not language tags Telegram sends.
    pub const MAX_LEN: usize = 16;

    /// `code` as a language code (`_` read as `-`); `None` when it is empty, too long or holds
    /// anything but ASCII letters, digits and `-`.
    pub fn parse(code: &str) -> Option<Self> {
        let code = code.trim();
        if code.is_empty() || code.len() > Self::MAX_LEN {
            return None;
        }
        let mut bytes = [0; Self::MAX_LEN];
        for (slot, b) in bytes.iter_mut().zip(code.bytes()) {
            *slot = match b {
                b'_' => b'-',
                b if b.is_ascii_alphanumeric() || b == b'-' => b,
                _ => return None,
            };
        }
        Some(Self { bytes, len: u8::try_from(code.len()).ok()? })
    }

    /// The code.
    pub fn as_str(&self) -> &str {
        // Only ASCII bytes are ever stored.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }
}

impl std::fmt::Debug for LanguageCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LanguageCode({})", self.as_str())
    }
}

/// What an update means to docket, extracted by the Telegram adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Incoming {
    /// A message with a document.
    Document(Origin, DocumentFacts, Address),
    /// A known command.
    Command(Origin, Command, Address),
    /// A press on one of docket's inline buttons.
    Button(Origin, ButtonPress),
    /// Something docket cannot work on: from a person (`Some`), answered with what docket takes;
    /// counted and logged by kind either way.
    Unusable(Option<Origin>, UnusableKind),
    /// An update that needs no answer (edited texts, member changes, service messages).
    Ignored,
    /// An update that could not be understood; recorded as rejected with the reason (which
    /// describes its shape, never its content).
    Malformed(String),
}

/// What a message holds that docket cannot work on, or what kind of update it was: the words
/// of the answer, the counter's `kind` label and the log line's. Never anything a person wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnusableKind {
    /// Plain text that is no known command.
    Text,
    /// A sticker.
    Sticker,
    /// A voice note.
    Voice,
    /// Music or another audio file sent as audio.
    Audio,
    /// A video, a round video note or a GIF animation.
    Video,
    /// A location or a venue.
    Location,
    /// A shared contact.
    Contact,
    /// A poll, a dice, a game, a story, a giveaway…: anything else a person can send.
    OtherMessage,
    /// A message whose fields docket could not read (a newer Bot API, a broken client); its
    /// chat was still found, so the person is answered.
    Unreadable,
    /// An update of a kind docket does not take (not a message or a button press), known to
    /// the Bot API or newer than docket.
    OtherUpdate,
}

impl UnusableKind {
    /// The counter label and the catalog selector.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Sticker => "sticker",
            Self::Voice => "voice",
            Self::Audio => "audio",
            Self::Video => "video",
            Self::Location => "location",
            Self::Contact => "contact",
            Self::OtherMessage => "other_message",
            Self::Unreadable => "unreadable",
            Self::OtherUpdate => "other_update",
        }
    }
}

/// `[access] groups`: which messages docket takes in groups and supergroups. Private chats are
/// not affected: there every document and command is docket's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GroupMode {
    /// `"addressed"`: commands without a bot name or naming this bot (`/status@ThisBot 12`), and
    /// documents whose caption mentions the bot (`@ThisBot`) or that reply to one of its
    /// messages. Commands for other bots and everything else are ignored.
    #[default]
    Addressed,
    /// `"all"`: every document; commands as with `Addressed`.
    All,
    /// `"off"`: nothing from groups, not even commands.
    Off,
}

impl GroupMode {
    /// Every mode, in the order the documentation lists them.
    pub const ALL: [Self; 3] = [Self::Addressed, Self::All, Self::Off];

    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Addressed => "addressed",
            Self::All => "all",
            Self::Off => "off",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LanguageCode;

    #[test]
    fn language_codes_are_short_ascii_tags() {
        assert_eq!(LanguageCode::parse("ru").map(|c| c.as_str().to_owned()).as_deref(), Some("ru"));
        assert_eq!(LanguageCode::parse(" pt_br ").map(|c| c.as_str().to_owned()).as_deref(), Some("pt-br"));
        assert_eq!(LanguageCode::parse("en-GB").map(|c| c.as_str().to_owned()).as_deref(), Some("en-GB"));
        assert!(LanguageCode::parse("").is_none());
        assert!(LanguageCode::parse("ру").is_none());
        assert!(LanguageCode::parse("en GB").is_none());
        assert!(LanguageCode::parse(&"a".repeat(17)).is_none());
    }
}
