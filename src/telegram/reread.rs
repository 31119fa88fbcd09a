//! A second reading of an update that teloxide's types could not read.
//!
//! teloxide reads a message whole or not at all: one field it does not expect (an empty
//! `mime_type`, which forwarded files and some clients send; a value a newer Bot API added)
//! leaves only the raw JSON. The raw JSON is the record, so it is read again here, in two
//! steps. First the message is cut down to the fields docket reads, with empty or ill-typed
//! optional values taken as absent, and read by teloxide's types like any other message. When
//! even that fails, only the chat, the sender and the kind of content are read by hand, so the
//! person still gets an answer. Only an update without a chat to answer is malformed, and its
//! reason describes its shape, never what anyone wrote in it.

use serde_json::{Map, Value};
use teloxide::types::{Message, MessageKind};

use super::updates::{classify_edited, classify_message};
use crate::domain::incoming::{ChatKind, Incoming, LanguageCode, Origin, UnusableKind};
use crate::domain::{ChatRef, MessageId, UserId};

/// How deep `reply_to_message` is followed (docket reads the replied message's sender and file).
const REPLY_DEPTH: u32 = 1;

/// What `raw`, a whole update teloxide could not read, means to docket.
pub(super) fn reread(raw: &Value) -> Incoming {
    let Some(update) = raw.as_object() else {
        return Incoming::Malformed("cannot read the update: it is not a JSON object".to_owned());
    };
    // The kinds docket takes first: a field a newer Bot API adds beside them changes nothing.
    if let Some(body) = update.get("message") {
        return reread_message(body, false);
    }
    if let Some(body) = update.get("edited_message") {
        return reread_message(body, true);
    }
    if update.contains_key("callback_query") {
        return Incoming::Malformed("cannot read the update: a button press without its fields".to_owned());
    }
    if update.keys().all(|key| key == "update_id") {
        return Incoming::Malformed("cannot read the update: it holds nothing".to_owned());
    }
    Incoming::Unusable(None, UnusableKind::OtherUpdate)
}

fn reread_message(body: &Value, edited: bool) -> Incoming {
    let Some(fields) = body.as_object() else {
        return Incoming::Malformed("cannot read the update: its message is not a JSON object".to_owned());
    };
    let readable = ["document", "photo", "text"].iter().any(|key| fields.contains_key(*key));
    let parsed = readable
        .then(|| serde_json::from_value::<Message>(Value::Object(pruned_message(fields, REPLY_DEPTH))).ok())
        .flatten()
        // teloxide reads a message whose content does not fit as an empty one: not read.
        .filter(|msg| !matches!(msg.kind, MessageKind::Empty {}));
    if let Some(msg) = parsed {
        return if edited { classify_edited(&msg) } else { classify_message(&msg) };
    }
    let Some(origin) = origin(fields) else {
        return Incoming::Malformed("cannot read the update: its message has no readable chat".to_owned());
    };
    if edited {
        return Incoming::Ignored;
    }
    if origin.chat_kind == ChatKind::Group {
        // As with a readable message: in a group only what is addressed to docket is answered,
        // and an unreadable message cannot say it is.
        return Incoming::Ignored;
    }
    Incoming::Unusable(Some(origin), content_kind(fields))
}

/// The message with only the fields docket reads, each cut down the same way.
fn pruned_message(fields: &Map<String, Value>, depth: u32) -> Map<String, Value> {
    let mut kept = Map::new();
    for key in ["message_id", "date", "message_thread_id"] {
        copy_integer(fields, &mut kept, key);
    }
    if let Some(Value::Bool(b)) = fields.get("is_topic_message") {
        kept.insert("is_topic_message".to_owned(), Value::Bool(*b));
    }
    for key in ["text", "caption"] {
        copy_string(fields, &mut kept, key, true);
    }
    // An album's part keeps its album, or it would become a ticket of its own.
    copy_string(fields, &mut kept, "media_group_id", false);
    if let Some(chat) = fields.get("chat").and_then(Value::as_object) {
        let mut c = Map::new();
        copy_integer(chat, &mut c, "id");
        for key in ["type", "title", "first_name", "last_name", "username"] {
            copy_string(chat, &mut c, key, false);
        }
        kept.insert("chat".to_owned(), Value::Object(c));
    }
    if let Some(from) = fields.get("from").and_then(Value::as_object) {
        kept.insert("from".to_owned(), Value::Object(pruned_user(from)));
    }
    if let Some(document) = fields.get("document").and_then(Value::as_object) {
        let mut d = pruned_file(document);
        copy_string(document, &mut d, "file_name", false);
        if let Some(mime) = document.get("mime_type").and_then(Value::as_str)
            && mime.parse::<mime::Mime>().is_ok()
        {
            d.insert("mime_type".to_owned(), Value::from(mime));
        }
        kept.insert("document".to_owned(), Value::Object(d));
    }
    if let Some(photo) = fields.get("photo").and_then(Value::as_array) {
        let sizes = photo
            .iter()
            .filter_map(Value::as_object)
            .map(|size| {
                let mut p = pruned_file(size);
                copy_integer(size, &mut p, "width");
                copy_integer(size, &mut p, "height");
                Value::Object(p)
            })
            .collect();
        kept.insert("photo".to_owned(), Value::Array(sizes));
    }
    if depth > 0
        && let Some(replied) = fields.get("reply_to_message").and_then(Value::as_object)
    {
        let mut replied = pruned_message(replied, depth - 1);
        // teloxide wants some content to name the replied message's kind; its text is not read.
        if !replied.contains_key("document") && !replied.contains_key("photo") {
            replied.entry("text").or_insert_with(|| Value::from(""));
        }
        kept.insert("reply_to_message".to_owned(), Value::Object(replied));
    }
    kept
}

fn pruned_user(from: &Map<String, Value>) -> Map<String, Value> {
    let mut u = Map::new();
    copy_integer(from, &mut u, "id");
    if let Some(Value::Bool(b)) = from.get("is_bot") {
        u.insert("is_bot".to_owned(), Value::Bool(*b));
    }
    copy_string(from, &mut u, "first_name", true);
    for key in ["last_name", "username", "language_code"] {
        copy_string(from, &mut u, key, false);
    }
    u
}

/// The fields of a file docket reads: its ids and, when it is a number getFile can mean, its size.
fn pruned_file(file: &Map<String, Value>) -> Map<String, Value> {
    let mut f = Map::new();
    copy_string(file, &mut f, "file_id", true);
    copy_string(file, &mut f, "file_unique_id", true);
    if let Some(size) = file.get("file_size").and_then(Value::as_u64).filter(|s| u32::try_from(*s).is_ok()) {
        f.insert("file_size".to_owned(), Value::from(size));
    }
    f
}

/// Copies `key` when it is a string; an empty one only when `keep_empty` (a required field).
fn copy_string(from: &Map<String, Value>, to: &mut Map<String, Value>, key: &str, keep_empty: bool) {
    if let Some(text) = from.get(key).and_then(Value::as_str)
        && (keep_empty || !text.is_empty())
    {
        to.insert(key.to_owned(), Value::from(text));
    }
}

fn copy_integer(from: &Map<String, Value>, to: &mut Map<String, Value>, key: &str) {
    if let Some(n) = from.get(key).filter(|v| v.is_i64() || v.is_u64()) {
        to.insert(key.to_owned(), n.clone());
    }
}

/// The chat and sender of a message read by hand: enough to answer it.
fn origin(fields: &Map<String, Value>) -> Option<Origin> {
    let chat = fields.get("chat")?.as_object()?;
    let chat_id = chat.get("id")?.as_i64()?;
    let from = fields.get("from").and_then(Value::as_object);
    Some(Origin {
        chat: ChatRef(chat_id),
        chat_kind: if chat.get("type").and_then(Value::as_str) == Some("private") {
            ChatKind::Private
        } else {
            ChatKind::Group
        },
        user: from.and_then(|f| f.get("id")?.as_i64()).map(UserId),
        message_id: MessageId(fields.get("message_id").and_then(Value::as_i64).unwrap_or_default()),
        language: from.and_then(|f| f.get("language_code")?.as_str()).and_then(LanguageCode::parse),
    })
}

/// The kind of content a message holds, named by its fields.
fn content_kind(fields: &Map<String, Value>) -> UnusableKind {
    const KINDS: [(&str, UnusableKind); 9] = [
        ("sticker", UnusableKind::Sticker),
        ("voice", UnusableKind::Voice),
        ("audio", UnusableKind::Audio),
        ("animation", UnusableKind::Video),
        ("video", UnusableKind::Video),
        ("video_note", UnusableKind::Video),
        ("venue", UnusableKind::Location),
        ("location", UnusableKind::Location),
        ("contact", UnusableKind::Contact),
    ];
    KINDS.iter().find(|(key, _)| fields.contains_key(*key)).map_or(UnusableKind::Unreadable, |(_, kind)| *kind)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::telegram::updates::read_update_body;

    /// What docket makes of `update` as Telegram would send it (getUpdates and the webhook read
    /// alike).
    fn read(update: Value) -> Incoming {
        let (_, incoming) = read_update_body(update.to_string().as_bytes()).expect("an update");
        incoming
    }

    fn message(extra: Value) -> Value {
        let mut m = json!({
            "message_id": 7, "date": 1_700_000_000,
            "chat": {"id": 42, "type": "private", "first_name": "Ann"},
            "from": {"id": 42, "is_bot": false, "first_name": "Ann", "language_code": "ru"}
        });
        m.as_object_mut().expect("object").extend(extra.as_object().expect("object").clone());
        json!({"update_id": 1, "message": m})
    }

    fn document(doc: Value) -> Value {
        message(json!({ "document": doc, "caption": "shrink" }))
    }

    #[test]
    fn an_empty_mime_type_is_no_mime_type() {
        let incoming = read(document(json!({
            "file_id": "F", "file_unique_id": "U", "file_name": "scan.pdf", "mime_type": "", "file_size": 1234
        })));
        let Incoming::Document(origin, facts, _) = incoming else { panic!("not a document: {incoming:?}") };
        assert_eq!((facts.file_id.as_str(), facts.file_unique_id.as_str()), ("F", "U"));
        assert_eq!(facts.name.as_deref(), Some("scan.pdf"));
        assert_eq!(facts.mime, None);
        assert_eq!(facts.size, Some(1234));
        assert_eq!(facts.caption.as_deref(), Some("shrink"));
        assert_eq!(origin.chat, ChatRef(42));
        assert_eq!(origin.language.map(|l| l.as_str().to_owned()).as_deref(), Some("ru"));
    }

    #[test]
    fn empty_or_ill_typed_optional_fields_are_absent() {
        let incoming = read(document(json!({
            "file_id": "F", "file_unique_id": "U", "file_name": "", "mime_type": "not a mime", "file_size": "12"
        })));
        let Incoming::Document(_, facts, _) = incoming else { panic!("not a document: {incoming:?}") };
        assert_eq!((facts.name, facts.mime, facts.size), (None, None, None));
    }

    #[test]
    fn an_unknown_field_in_every_object_changes_nothing() {
        let extra = json!({"field_of_bot_api_99": {"nested": [1, 2]}});
        let mut update = message(json!({
            "document": {"file_id": "F", "file_unique_id": "U", "file_name": "a.pdf", "mime_type": "application/pdf"},
            "reply_to_message": {"message_id": 3, "date": 1, "chat": {"id": 42, "type": "private"}, "text": "x",
                "from": {"id": 9, "is_bot": true, "first_name": "docket"}},
        }));
        for pointer in
            ["", "/message", "/message/chat", "/message/from", "/message/document", "/message/reply_to_message"]
        {
            let object = update.pointer_mut(pointer).and_then(Value::as_object_mut).expect("an object");
            object.extend(extra.as_object().expect("object").clone());
        }
        let incoming = read(update);
        let Incoming::Document(_, facts, address) = incoming else { panic!("not a document: {incoming:?}") };
        assert_eq!(facts.mime.as_deref(), Some("application/pdf"));
        assert_eq!(address.replies_to, Some(UserId(9)));
    }

    #[test]
    fn a_message_with_a_new_kind_of_entity_still_reads() {
        let incoming = read(message(json!({
            "text": "/status 12", "entities": [{"type": "bot_command_v9", "offset": 0, "length": 7}]
        })));
        assert!(matches!(incoming, Incoming::Command(..)), "{incoming:?}");
    }

    #[test]
    fn stickers_voice_notes_and_locations_are_answered_by_kind() {
        let sticker = json!({"sticker": {"file_id": "S", "file_unique_id": "SU", "type": "regular",
            "width": 512, "height": 512, "is_animated": false, "is_video": false}});
        let voice = json!({"voice": {"file_id": "V", "file_unique_id": "VU", "duration": 3}});
        let location = json!({"location": {"latitude": 55.75, "longitude": 37.62}});
        for (content, kind) in
            [(sticker, UnusableKind::Sticker), (voice, UnusableKind::Voice), (location, UnusableKind::Location)]
        {
            let incoming = read(message(content));
            let Incoming::Unusable(Some(origin), found) = incoming else { panic!("not answered: {incoming:?}") };
            assert_eq!((origin.chat, found), (ChatRef(42), kind));
        }
    }

    #[test]
    fn a_broken_sticker_is_still_answered_as_a_sticker() {
        let incoming = read(message(json!({"sticker": {"file_id": 5}})));
        assert_eq!(
            incoming,
            Incoming::Unusable(
                Some(Origin {
                    chat: ChatRef(42),
                    chat_kind: ChatKind::Private,
                    user: Some(UserId(42)),
                    message_id: MessageId(7),
                    language: LanguageCode::parse("ru"),
                }),
                UnusableKind::Sticker
            )
        );
    }

    #[test]
    fn a_message_nothing_can_be_read_from_but_its_chat_is_answered() {
        let incoming = read(message(json!({"text": 42, "new_content_of_2030": {}})));
        assert!(matches!(incoming, Incoming::Unusable(Some(_), UnusableKind::Unreadable)), "{incoming:?}");
    }

    #[test]
    fn an_unreadable_group_message_is_not_answered() {
        let mut update = message(json!({"sticker": {"file_id": 5}}));
        update["message"]["chat"] = json!({"id": -100, "type": "supergroup", "title": "G"});
        assert_eq!(read(update), Incoming::Ignored);
    }

    #[test]
    fn unknown_update_kinds_are_counted_not_rejected() {
        assert_eq!(
            read(json!({"update_id": 3, "reaction_of_2030": {"x": 1}})),
            Incoming::Unusable(None, UnusableKind::OtherUpdate)
        );
        assert_eq!(
            read(json!({"update_id": 3, "poll": {"id": "1", "question": "?", "options": []}})),
            Incoming::Unusable(None, UnusableKind::OtherUpdate)
        );
    }

    #[test]
    fn an_edited_message_counts_only_when_it_holds_a_document() {
        let mut edited = document(json!({"file_id": "F2", "file_unique_id": "U2", "mime_type": ""}));
        let body = edited["message"].take();
        let edited = json!({"update_id": 2, "edited_message": body});
        let incoming = read(edited);
        let Incoming::Document(_, facts, _) = incoming else { panic!("not a document: {incoming:?}") };
        assert_eq!(facts.file_unique_id, "U2");

        let mut text = message(json!({"text": "hello, edited", "edit_date": 1_700_000_100}));
        let body = text["message"].take();
        assert_eq!(read(json!({"update_id": 3, "edited_message": body})), Incoming::Ignored);
    }

    #[test]
    fn a_body_that_is_no_update_is_refused() {
        assert!(read_update_body(b"not json").is_none());
        assert!(read_update_body(br#"{"message": {}}"#).is_none());
    }
}
