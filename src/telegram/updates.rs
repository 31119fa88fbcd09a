//! Reading updates: extracts the facts intake needs from a teloxide `Update`, and nothing more.
//!
//! Everything in an update is untrusted. A missing field, an absurd size or a name with any
//! characters becomes a well-defined value here; an update teloxide could not parse becomes
//! [`Incoming::Malformed`] with the reason, so it is recorded and never blocks the offset.

use teloxide::types::{Message, Update, UpdateKind};

use crate::domain::{ChatRef, Ticket, UserId};
use crate::intake::{Command, DocumentFacts, Incoming, Origin};

/// What `update` means to docket.
pub fn classify(update: &Update) -> Incoming {
    match &update.kind {
        UpdateKind::Message(msg) => classify_message(msg),
        UpdateKind::Error(value) => {
            let mut raw = value.to_string();
            raw.truncate(200);
            Incoming::Malformed(format!("the Bot API sent an update docket cannot parse: {raw}"))
        }
        _ => Incoming::Ignored,
    }
}

fn classify_message(msg: &Message) -> Incoming {
    let origin = Origin {
        chat: ChatRef(msg.chat.id.0),
        user: msg.from.as_ref().map(|u| UserId(i64::try_from(u.id.0).unwrap_or(i64::MAX))),
        message_id: i64::from(msg.id.0),
    };
    if let Some(doc) = msg.document() {
        // teloxide reports a missing file_size as u32::MAX: that means "unknown", not 4 GB.
        let size = (doc.file.size != u32::MAX).then_some(u64::from(doc.file.size));
        return Incoming::Document(
            origin,
            DocumentFacts {
                file_id: doc.file.id.0.clone(),
                file_unique_id: doc.file.unique_id.0.clone(),
                name: doc.file_name.clone(),
                mime: doc.mime_type.as_ref().map(ToString::to_string),
                size,
            },
        );
    }
    if let Some(command) = msg.text().and_then(parse_command) {
        return Incoming::Command(origin, command);
    }
    // Service messages (members joining, pins…) in groups need no answer.
    if msg.text().is_none() && msg.caption().is_none() && !has_media(msg) {
        return Incoming::Ignored;
    }
    // In groups, only answer what is addressed to the bot: a plain chat message is not.
    if !msg.chat.is_private() {
        return Incoming::Ignored;
    }
    Incoming::Other(origin)
}

fn has_media(msg: &Message) -> bool {
    msg.photo().is_some()
        || msg.video().is_some()
        || msg.audio().is_some()
        || msg.voice().is_some()
        || msg.sticker().is_some()
        || msg.animation().is_some()
}

/// Parses `/status 12`, `/status@docket_bot #12`, `/jobs`… Unknown commands are `None`.
pub fn parse_command(text: &str) -> Option<Command> {
    let mut words = text.split_whitespace();
    let head = words.next()?.strip_prefix('/')?;
    let name = head.split('@').next().unwrap_or_default().to_ascii_lowercase();
    match name.as_str() {
        "start" => Some(Command::Start),
        "help" => Some(Command::Help),
        "jobs" => Some(Command::Jobs),
        "status" => Some(Command::Status(ticket_arg(words.next()))),
        "get" => Some(Command::Get(ticket_arg(words.next()))),
        _ => None,
    }
}

fn ticket_arg(word: Option<&str>) -> Option<Ticket> {
    word.and_then(|w| w.parse::<Ticket>().ok()).filter(|t| t.0 > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(json: serde_json::Value) -> Update {
        // Parse from text as teloxide does: its UpdateKind visitor wants borrowed keys.
        serde_json::from_str(&json.to_string()).expect("test update parses")
    }

    fn message(extra: serde_json::Value) -> serde_json::Value {
        let mut m = serde_json::json!({
            "message_id": 7, "date": 1_700_000_000,
            "chat": {"id": 42, "type": "private", "first_name": "Ann"},
            "from": {"id": 42, "is_bot": false, "first_name": "Ann"}
        });
        m.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        serde_json::json!({"update_id": 1, "message": m})
    }

    #[test]
    fn documents_keep_declared_facts() {
        let u = update(message(serde_json::json!({"document": {
            "file_id": "F", "file_unique_id": "U", "file_name": "report.pdf", "mime_type": "application/pdf", "file_size": 12_300_000
        }})));
        let c = classify(&u);
        let Incoming::Document(origin, facts) = c else { panic!("not a document: {c:?}") };
        assert_eq!(origin.chat, ChatRef(42));
        assert_eq!(origin.message_id, 7);
        assert_eq!(facts.size, Some(12_300_000));
        assert_eq!(facts.name.as_deref(), Some("report.pdf"));
        assert_eq!(facts.mime.as_deref(), Some("application/pdf"));
    }

    #[test]
    fn a_document_without_size_name_or_mime_is_still_a_document() {
        let u = update(message(serde_json::json!({"document": {"file_id": "F", "file_unique_id": "U"}})));
        let Incoming::Document(_, facts) = classify(&u) else { panic!("not a document") };
        assert_eq!(facts.size, None, "a missing size is unknown, not u32::MAX");
        assert_eq!(facts.name, None);
        assert_eq!(facts.mime, None);
    }

    #[test]
    fn commands_parse_with_bot_names_and_hashes() {
        assert_eq!(parse_command("/status 4812"), Some(Command::Status(Some(Ticket(4812)))));
        assert_eq!(parse_command("/status@docket_bot #4812"), Some(Command::Status(Some(Ticket(4812)))));
        assert_eq!(parse_command("/status"), Some(Command::Status(None)));
        assert_eq!(parse_command("/status -3"), Some(Command::Status(None)));
        assert_eq!(parse_command("/JOBS"), Some(Command::Jobs));
        assert_eq!(parse_command("/get #12"), Some(Command::Get(Some(Ticket(12)))));
        assert_eq!(parse_command("/frobnicate"), None);
        assert_eq!(parse_command("hello"), None);
    }

    #[test]
    fn plain_text_in_a_private_chat_gets_a_hint() {
        let u = update(message(serde_json::json!({"text": "hi"})));
        assert!(matches!(classify(&u), Incoming::Other(_)));
    }

    #[test]
    fn an_unparsable_message_is_malformed_not_a_crash() {
        let u = update(serde_json::json!({"update_id": 5, "message": {"chat": "nonsense"}}));
        assert!(matches!(classify(&u), Incoming::Malformed(_)));
    }
}
