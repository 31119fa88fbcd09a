//! Reading updates: extracts the facts intake needs from a teloxide `Update`, and nothing more.
//!
//! Everything in an update is untrusted. A missing field, an absurd size or a name with any
//! characters becomes a well-defined value here. An update teloxide's types could not read is
//! read again from its raw JSON (`telegram/reread.rs`); only one without a chat to answer becomes
//! [`Incoming::Malformed`], so it is recorded and never blocks the offset.

use teloxide::types::{CallbackQuery, MediaKind, Message, MessageKind, Update, UpdateKind};

use super::commands::{mentions, parse_addressed_command};
use crate::domain::incoming::{
    Address, ButtonPress, ChatKind, DocumentFacts, Incoming, LanguageCode, Origin, UnusableKind,
};
use crate::domain::{ChatRef, MessageId, UserId};

/// The update a webhook request carries: its id, and what it means (see [`read_update`]).
/// `None` when the body is not an update at all (not JSON, no `update_id`).
pub fn read_update_body(body: &[u8]) -> Option<(crate::domain::UpdateId, Incoming)> {
    read_update(&serde_json::from_slice(body).ok()?)
}

/// One update as the Bot API sent it: its id, and what it means. The raw JSON is the record:
/// teloxide's types read it first, and when they could not (an update of a kind they do not
/// know, or a message they could read only as an empty one because a field did not fit) it is
/// read again from the JSON (`telegram/reread.rs`). `None` without an `update_id`.
pub fn read_update(raw: &serde_json::Value) -> Option<(crate::domain::UpdateId, Incoming)> {
    let id = raw.get("update_id")?.as_i64()?;
    // From text, as teloxide reads it: its update visitor wants borrowed keys.
    let typed = serde_json::from_str::<Update>(&raw.to_string()).ok().filter(|update| !lost_content(update));
    let incoming = match typed {
        Some(update) => classify_safely(&update),
        None => std::panic::catch_unwind(|| super::reread::reread(raw))
            .unwrap_or_else(|_| Incoming::Malformed("reading the update panicked".to_owned())),
    };
    Some((crate::domain::UpdateId(id), incoming))
}

/// Whether teloxide's reading of an update lost what it holds: an update kind it does not know,
/// or a message it could read only as an empty one (one field of the content did not fit its
/// types, so the whole content was dropped).
fn lost_content(update: &Update) -> bool {
    match &update.kind {
        UpdateKind::Error(_) => true,
        // A replied message counts too: a reply may ask for an operation on the file it holds.
        UpdateKind::Message(msg) | UpdateKind::EditedMessage(msg) => {
            matches!(msg.kind, MessageKind::Empty {})
                || msg.reply_to_message().is_some_and(|replied| matches!(replied.kind, MessageKind::Empty {}))
        }
        _ => false,
    }
}

/// [`classify`], with a panic in it (a bug, a hostile update) turned into
/// [`Incoming::Malformed`]: one update must never stop the poller.
pub fn classify_safely(update: &Update) -> Incoming {
    std::panic::catch_unwind(|| classify(update))
        .unwrap_or_else(|_| Incoming::Malformed("reading the update panicked".to_owned()))
}

/// What `update` means to docket.
pub fn classify(update: &Update) -> Incoming {
    match &update.kind {
        UpdateKind::Message(msg) => classify_message(msg),
        UpdateKind::EditedMessage(msg) => classify_edited(msg),
        UpdateKind::CallbackQuery(query) => classify_button(query),
        UpdateKind::Error(raw) => super::reread::reread(raw),
        _ => Incoming::Unusable(None, UnusableKind::OtherUpdate),
    }
}

/// An edited message matters only when it now holds a document: a replaced file is a new
/// submission, and the same file again is answered as a known one. Edited texts and captions
/// are not answered again.
pub(super) fn classify_edited(msg: &Message) -> Incoming {
    match classify_message(msg) {
        // The message itself holds the file: an edited reply that names an operation is an
        // edited text.
        document @ Incoming::Document(..) if msg.document().is_some() || msg.photo().is_some() => document,
        _ => Incoming::Ignored,
    }
}

/// A press on one of docket's inline buttons. One without data or without the message it sits
/// under (too old for Telegram to say) needs no answer beyond the query's own.
fn classify_button(query: &CallbackQuery) -> Incoming {
    let (Some(data), Some(message)) = (&query.data, &query.message) else { return Incoming::Ignored };
    let chat = message.chat();
    let origin = Origin {
        chat: ChatRef(chat.id.0),
        chat_kind: if chat.is_private() { ChatKind::Private } else { ChatKind::Group },
        user: Some(UserId(i64::try_from(query.from.id.0).unwrap_or(i64::MAX))),
        message_id: MessageId(i64::from(message.id().0)),
        language: query.from.language_code.as_deref().and_then(LanguageCode::parse),
    };
    Incoming::Button(origin, ButtonPress { query_id: query.id.0.clone(), data: data.clone() })
}

pub(super) fn classify_message(msg: &Message) -> Incoming {
    let origin = Origin {
        chat: ChatRef(msg.chat.id.0),
        chat_kind: if msg.chat.is_private() { ChatKind::Private } else { ChatKind::Group },
        user: msg.from.as_ref().map(|u| UserId(i64::try_from(u.id.0).unwrap_or(i64::MAX))),
        message_id: MessageId(i64::from(msg.id.0)),
        language: msg.from.as_ref().and_then(|u| u.language_code.as_deref()).and_then(LanguageCode::parse),
    };
    if let Some(mut facts) = file_facts(msg, msg.caption(), language_code(msg)) {
        facts.media_group_id = msg.media_group_id().map(|group| without_nul(&group.0));
        let names = mentions(msg.caption().unwrap_or_default()).into_iter().map(str::to_owned).collect();
        return Incoming::Document(origin, facts, Address { names, replies_to: replied_sender(msg) });
    }
    if let Some((command, bot)) = msg.text().and_then(parse_addressed_command) {
        let names = bot.map(str::to_owned).into_iter().collect();
        return Incoming::Command(origin, command, Address { names, replies_to: replied_sender(msg) });
    }
    // A text that replies to a file and names an operation asks for it on that file, as if the
    // file had been sent with the text as its caption (`decrypt PASSWORD` after "protected by a
    // password"). The reply is the message that carries the words, and so the one a password
    // makes docket delete.
    if let Some(text) = msg.text().filter(|text| names_an_operation(text))
        && let Some(replied) = msg.reply_to_message().filter(|_| !replies_only_to_its_topic(msg))
        && let Some(facts) = file_facts(replied, Some(text), language_code(msg))
    {
        let names = mentions(text).into_iter().map(str::to_owned).collect();
        return Incoming::Document(origin, facts, Address { names, replies_to: replied_sender(msg) });
    }
    // Service messages (members joining, pins…) need no answer.
    let Some(kind) = unusable_content(msg) else { return Incoming::Ignored };
    // In groups, only answer what is addressed to the bot: a plain chat message is not.
    if !msg.chat.is_private() {
        return Incoming::Ignored;
    }
    Incoming::Unusable(Some(origin), kind)
}

/// The file `msg` carries (a document, or a photo as the JPEG of its largest size, as if it had
/// been sent as a file), with `caption` as the words that came with it; `None` without one. Its
/// album is the caller's to add: a reply that names an operation asks for that one file.
fn file_facts(msg: &Message, caption: Option<&str>, language_code: Option<String>) -> Option<DocumentFacts> {
    if let Some(doc) = msg.document() {
        // teloxide reports a missing file_size as u32::MAX: that means "unknown", not 4 GB.
        let size = (doc.file.size != u32::MAX).then_some(u64::from(doc.file.size));
        return Some(DocumentFacts {
            file_id: doc.file.id.0.clone(),
            file_unique_id: doc.file.unique_id.0.clone(),
            // A name is shown and given to a result, never used as a path; cleaned once here
            // (no NUL, which PostgreSQL's text cannot hold, no controls, no direction marks).
            name: doc.file_name.as_deref().map(crate::domain::names::cleaned).filter(|n| !n.is_empty()),
            mime: doc.mime_type.as_ref().map(ToString::to_string),
            size,
            caption: caption.map(without_nul),
            language_code,
            media_group_id: None,
        });
    }
    let largest = msg.photo()?.iter().max_by_key(|p| u64::from(p.width) * u64::from(p.height))?;
    let size = (largest.file.size != u32::MAX).then_some(u64::from(largest.file.size));
    Some(DocumentFacts {
        file_id: largest.file.id.0.clone(),
        file_unique_id: largest.file.unique_id.0.clone(),
        name: Some("photo.jpg".to_owned()),
        mime: Some("image/jpeg".to_owned()),
        size,
        caption: caption.map(without_nul),
        language_code,
        media_group_id: None,
    })
}

/// Whether `text`'s first word that is not an @mention is an operation's name (`decrypt`,
/// `/split`…): only then is a reply to a file a request, and "thanks" stays a chat message.
fn names_an_operation(text: &str) -> bool {
    text.split_whitespace().find(|word| !word.starts_with('@')).is_some_and(crate::domain::Operation::is_name)
}

/// What a person sent that docket cannot work on; `None` for a service message.
fn unusable_content(msg: &Message) -> Option<UnusableKind> {
    let kind = match &msg.kind {
        MessageKind::Common(common) => match &common.media_kind {
            MediaKind::Text(_) => UnusableKind::Text,
            MediaKind::Sticker(_) => UnusableKind::Sticker,
            MediaKind::Voice(_) => UnusableKind::Voice,
            MediaKind::Audio(_) => UnusableKind::Audio,
            MediaKind::Video(_) | MediaKind::VideoNote(_) | MediaKind::Animation(_) => UnusableKind::Video,
            MediaKind::Location(_) | MediaKind::Venue(_) => UnusableKind::Location,
            MediaKind::Contact(_) => UnusableKind::Contact,
            MediaKind::Migration(_) => return None,
            _ => UnusableKind::OtherMessage,
        },
        MessageKind::Dice(_) | MessageKind::Giveaway(_) | MessageKind::WebAppData(_) => UnusableKind::OtherMessage,
        _ => return None,
    };
    Some(kind)
}

/// `text` without NUL characters, which PostgreSQL's text columns cannot hold.
fn without_nul(text: &str) -> String {
    text.replace('\0', "")
}

/// The sender's Telegram `language_code`, when Telegram gave one.
fn language_code(msg: &Message) -> Option<String> {
    msg.from.as_ref().and_then(|u| u.language_code.clone()).filter(|code| !code.is_empty())
}

/// The sender of the message `msg` replies to. In a forum topic every message without an
/// explicit reply carries the topic's first message as its `reply_to_message`: that is not a
/// reply to its author.
fn replied_sender(msg: &Message) -> Option<UserId> {
    let replied = msg.reply_to_message().filter(|_| !replies_only_to_its_topic(msg))?;
    replied.from.as_ref().map(|u| UserId(i64::try_from(u.id.0).unwrap_or(i64::MAX)))
}

/// Whether `msg`'s `reply_to_message` is only its forum topic's first message, which every
/// message in a topic carries without being a reply to it.
fn replies_only_to_its_topic(msg: &Message) -> bool {
    msg.is_topic_message
        && msg.thread_id.zip(msg.reply_to_message()).is_some_and(|(thread, replied)| thread.0 == replied.id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::incoming::Command;

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

    /// A message of Ann's that carries a document, as a reply's `reply_to_message`.
    fn earlier_document(mime: &str) -> serde_json::Value {
        serde_json::json!({
            "message_id": 5, "date": 1_700_000_000,
            "chat": {"id": 42, "type": "private", "first_name": "Ann"},
            "from": {"id": 42, "is_bot": false, "first_name": "Ann"},
            "document": {"file_id": "F", "file_unique_id": "U", "file_name": "locked.pdf", "mime_type": mime}
        })
    }

    #[test]
    fn a_reply_naming_an_operation_asks_for_it_on_the_replied_file() {
        for mime in ["application/pdf", ""] {
            let raw =
                message(serde_json::json!({"text": "decrypt hunter2", "reply_to_message": earlier_document(mime)}));
            let (_, c) = read_update(&raw).expect("an update");
            let Incoming::Document(origin, facts, _) = c else { panic!("not a document with mime {mime:?}: {c:?}") };
            assert_eq!((facts.file_id.as_str(), facts.file_unique_id.as_str()), ("F", "U"));
            assert_eq!(facts.name.as_deref(), Some("locked.pdf"));
            assert_eq!(facts.caption.as_deref(), Some("decrypt hunter2"));
            assert_eq!(origin.message_id, MessageId(7), "the reply carries the words, and is what a password deletes");
        }
    }

    #[test]
    fn a_reply_to_a_photo_asks_for_it_on_the_largest_size() {
        let photo = serde_json::json!({
            "message_id": 5, "date": 1_700_000_000, "chat": {"id": 42, "type": "private", "first_name": "Ann"},
            "photo": [{"file_id": "s", "file_unique_id": "us", "width": 90, "height": 60},
                      {"file_id": "l", "file_unique_id": "ul", "width": 1280, "height": 960}]
        });
        let u = update(message(serde_json::json!({"text": "/topdf", "reply_to_message": photo})));
        let Incoming::Document(_, facts, _) = classify(&u) else { panic!("not a document") };
        assert_eq!((facts.file_id.as_str(), facts.caption.as_deref()), ("l", Some("/topdf")));
    }

    #[test]
    fn a_reply_that_names_no_operation_stays_a_chat_message() {
        let u = update(message(
            serde_json::json!({"text": "thanks!", "reply_to_message": earlier_document("application/pdf")}),
        ));
        assert!(matches!(classify(&u), Incoming::Unusable(Some(_), UnusableKind::Text)));
        // An edited reply is an edited text, not a new request.
        let mut raw =
            message(serde_json::json!({"text": "decrypt x", "reply_to_message": earlier_document("application/pdf")}));
        raw["edited_message"] = raw["message"].take();
        raw.as_object_mut().expect("object").remove("message");
        assert_eq!(classify(&update(raw)), Incoming::Ignored);
    }

    #[test]
    fn documents_keep_declared_facts() {
        let u = update(message(serde_json::json!({"document": {
            "file_id": "F", "file_unique_id": "U", "file_name": "report.pdf", "mime_type": "application/pdf", "file_size": 12_300_000
        }})));
        let c = classify(&u);
        let Incoming::Document(origin, facts, address) = c else { panic!("not a document: {c:?}") };
        assert_eq!(origin.chat_kind, ChatKind::Private);
        assert_eq!(address, Address::default());
        assert_eq!(origin.chat, ChatRef(42));
        assert_eq!(origin.message_id, MessageId(7));
        assert_eq!(facts.size, Some(12_300_000));
        assert_eq!(facts.name.as_deref(), Some("report.pdf"));
        assert_eq!(facts.mime.as_deref(), Some("application/pdf"));
    }

    #[test]
    fn a_document_without_size_name_or_mime_is_still_a_document() {
        let u = update(message(serde_json::json!({"document": {"file_id": "F", "file_unique_id": "U"}})));
        let Incoming::Document(_, facts, _) = classify(&u) else { panic!("not a document") };
        assert_eq!(facts.size, None, "a missing size is unknown, not u32::MAX");
        assert_eq!(facts.name, None);
        assert_eq!(facts.mime, None);
    }

    #[test]
    fn names_and_captions_are_kept_as_data_without_nul() {
        let u = update(message(serde_json::json!({"caption": "shrink\u{0} now", "document": {
            "file_id": "F", "file_unique_id": "U", "file_name": "a\u{0}b\u{202e}.pdf"
        }})));
        let Incoming::Document(_, facts, _) = classify(&u) else { panic!("not a document") };
        assert_eq!(facts.name.as_deref(), Some("ab.pdf"));
        assert_eq!(facts.caption.as_deref(), Some("shrink now"));
        let u = update(message(
            serde_json::json!({"document": {"file_id": "F", "file_unique_id": "U", "file_name": "\u{0}"}}),
        ));
        let Incoming::Document(_, facts, _) = classify(&u) else { panic!("not a document") };
        assert_eq!(facts.name, None, "nothing left is no name");
    }

    fn group_message(extra: serde_json::Value) -> serde_json::Value {
        let mut u = message(extra);
        u["message"]["chat"] = serde_json::json!({"id": -1001, "type": "supergroup", "title": "G"});
        u
    }

    #[test]
    fn group_documents_carry_caption_mentions_and_the_replied_sender() {
        let doc = serde_json::json!({"file_id": "F", "file_unique_id": "U"});
        let u = update(group_message(serde_json::json!({"document": doc, "caption": "to @ThisBot and @Other"})));
        let Incoming::Document(origin, _, address) = classify(&u) else { panic!("not a document") };
        assert_eq!(origin.chat_kind, ChatKind::Group);
        assert_eq!(address.names, ["ThisBot", "Other"]);
        assert_eq!(address.replies_to, None);

        let bot_message = serde_json::json!({
            "message_id": 3, "date": 1_700_000_000,
            "chat": {"id": -1001, "type": "supergroup", "title": "G"},
            "from": {"id": 555, "is_bot": true, "first_name": "docket", "username": "ThisBot"},
            "text": "Got a.pdf"
        });
        let u = update(group_message(serde_json::json!({"document": doc, "reply_to_message": bot_message})));
        let Incoming::Document(_, _, address) = classify(&u) else { panic!("not a document") };
        assert_eq!(address.replies_to, Some(UserId(555)));

        // In a forum topic, the topic's first message is no reply to its author.
        let u = update(group_message(serde_json::json!({
            "document": doc, "reply_to_message": bot_message, "is_topic_message": true, "message_thread_id": 3
        })));
        let Incoming::Document(_, _, address) = classify(&u) else { panic!("not a document") };
        assert_eq!(address.replies_to, None);
    }

    #[test]
    fn group_commands_carry_the_bot_they_name() {
        let u = update(group_message(serde_json::json!({"text": "/status@OtherBot 12"})));
        let Incoming::Command(origin, command, address) = classify(&u) else { panic!("not a command") };
        assert_eq!(origin.chat_kind, ChatKind::Group);
        assert_eq!(command, Command::Status(Some(crate::domain::Ticket(12))));
        assert_eq!(address.names, ["OtherBot"]);
        let u = update(group_message(serde_json::json!({"text": "hello all"})));
        assert_eq!(classify(&u), Incoming::Ignored);
    }

    #[test]
    fn plain_text_in_a_private_chat_gets_a_hint() {
        let u = update(message(serde_json::json!({"text": "hi"})));
        assert!(matches!(classify(&u), Incoming::Unusable(Some(_), UnusableKind::Text)));
    }

    #[test]
    fn an_unparsable_message_is_malformed_not_a_crash() {
        let u = update(serde_json::json!({"update_id": 5, "message": {"chat": "nonsense"}}));
        assert!(matches!(classify(&u), Incoming::Malformed(_)));
    }

    #[test]
    fn the_reason_an_update_is_malformed_never_holds_what_it_says() {
        let value = serde_json::json!({"update_id": 5, "message": {"chat": "nonsense", "text": "decrypt hunter2"}});
        let u = Update { id: teloxide::types::UpdateId(5), kind: UpdateKind::Error(value) };
        let Incoming::Malformed(reason) = classify(&u) else { panic!("not malformed") };
        assert!(!reason.contains("hunter2") && !reason.contains("nonsense"), "{reason}");
    }
}

/// Generated input: nothing in an update, however odd, makes the parser panic.
#[cfg(test)]
mod properties {
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use teloxide::types::{Update, UpdateId, UpdateKind};

    use super::*;
    use crate::telegram::commands::strategies::tricky_text;

    /// A JSON value of any shape, a few levels deep.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            tricky_text(40).prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(tricky_text(8), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A value where a message field is expected: usually well-typed, sometimes anything.
    fn field(good: impl Strategy<Value = Value> + 'static) -> impl Strategy<Value = Option<Value>> {
        prop_oneof![2 => Just(None), 6 => good.prop_map(Some), 1 => any_json().prop_map(Some)]
    }

    fn chat() -> impl Strategy<Value = Value> {
        let kind = prop_oneof![
            Just(json!("private")),
            Just(json!("group")),
            Just(json!("supergroup")),
            Just(json!("channel")),
            tricky_text(10).prop_map(Value::String),
        ];
        (any::<i64>(), kind, tricky_text(30)).prop_map(
            |(id, kind, title)| json!({"id": id, "type": kind, "title": title, "first_name": title, "username": title}),
        )
    }

    fn user() -> impl Strategy<Value = Value> {
        (any::<u64>(), any::<bool>(), tricky_text(30))
            .prop_map(|(id, is_bot, name)| json!({"id": id, "is_bot": is_bot, "first_name": name, "username": name}))
    }

    fn document() -> impl Strategy<Value = Value> {
        (tricky_text(20), tricky_text(20), field(tricky_text(300).prop_map(Value::String)), any::<i64>()).prop_map(
            |(id, unique, name, size)| {
                let mut d = json!({"file_id": id, "file_unique_id": unique, "file_size": size});
                if let Some(name) = name {
                    d["file_name"] = name;
                }
                d
            },
        )
    }

    fn entities() -> impl Strategy<Value = Value> {
        let entity = (any::<i64>(), any::<i64>(), prop_oneof![Just("mention"), Just("bot_command"), Just("bold")])
            .prop_map(|(offset, length, kind)| json!({"type": kind, "offset": offset, "length": length}));
        proptest::collection::vec(entity, 0..4).prop_map(Value::Array)
    }

    /// A message object: each field present or not, well-typed or not.
    fn message(depth: u32) -> BoxedStrategy<Value> {
        let reply = if depth == 0 { Just(None).boxed() } else { field(message(depth - 1)).boxed() };
        (
            field(any::<i32>().prop_map(Value::from)),
            field(any::<u32>().prop_map(Value::from)),
            field(chat()),
            field(user()),
            field(tricky_text(400).prop_map(Value::String)),
            field(tricky_text(400).prop_map(Value::String)),
            field(document()),
            field(entities()),
            reply,
        )
            .prop_map(|(id, date, chat, from, text, caption, document, entities, reply)| {
                let mut m = serde_json::Map::new();
                for (key, value) in [
                    ("message_id", id),
                    ("date", date),
                    ("chat", chat),
                    ("from", from),
                    ("text", text),
                    ("caption", caption),
                    ("document", document),
                    ("entities", entities.clone()),
                    ("caption_entities", entities),
                    ("reply_to_message", reply),
                ] {
                    if let Some(value) = value {
                        m.insert(key.to_owned(), value);
                    }
                }
                Value::Object(m)
            })
            .boxed()
    }

    /// An update-shaped value: a known or unknown kind holding a message-ish or any value.
    fn update_json() -> impl Strategy<Value = Value> {
        let kind = prop_oneof![
            4 => Just("message".to_owned()),
            1 => Just("edited_message".to_owned()),
            1 => Just("channel_post".to_owned()),
            1 => Just("poll".to_owned()),
            1 => tricky_text(12),
        ];
        let body = prop_oneof![4 => message(2), 1 => any_json()];
        (any::<u32>(), kind, body).prop_map(|(id, kind, body)| {
            let mut u = serde_json::Map::new();
            u.insert("update_id".to_owned(), json!(id));
            u.insert(kind, body);
            Value::Object(u)
        })
    }

    /// Parses as teloxide's getUpdates does: an update it cannot read becomes
    /// `UpdateKind::Error` holding the whole update as sent.
    fn parse_like_teloxide(value: &Value) -> Option<Update> {
        let mut update: Update = serde_json::from_str(&value.to_string()).ok()?;
        if let UpdateKind::Error(dest) = &mut update.kind {
            *dest = value.clone();
        }
        Some(update)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn classify_never_panics_on_update_shaped_json(value in update_json()) {
            if let Some(update) = parse_like_teloxide(&value) {
                let _ = classify(&update);
            }
        }

        #[test]
        fn classify_never_panics_on_updates_teloxide_cannot_parse(id in any::<u32>(), value in any_json()) {
            let update = Update { id: UpdateId(id), kind: UpdateKind::Error(value.clone()) };
            if let Incoming::Malformed(reason) = classify(&update) {
                // It describes the update's shape: nothing of what it holds.
                prop_assert!(reason.len() <= 100, "{} bytes", reason.len());
            }
        }

        #[test]
        fn a_cut_anywhere_in_multibyte_text_is_safe(pad in 0usize..300, wide in tricky_text(200)) {
            let text = format!("{}{wide}", "a".repeat(pad));
            let update = Update { id: UpdateId(1), kind: UpdateKind::Error(json!({"message": {"text": text}})) };
            let _ = classify(&update);
        }

    }
}
