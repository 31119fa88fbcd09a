//! What each method (but getUpdates) does: the bot's identity, the messages of every chat
//! (sent, edited, quoted in replies), documents, and the bot's commands.

use std::collections::HashMap;
use std::sync::PoisonError;

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::files::{get_file, mime_for_name};
use crate::reply::{Reply, bad_request, error, missing_chat, ok};
use crate::request::{FilePart, inline_markup, lenient_i64, text_of};
use crate::server::{FakeState, FakeTelegram, Shared};
use crate::updates::{chat_json, unix_now};
use crate::webhook::webhook_method;

/// Canonical (lowerCamelCase) names of the methods the fake serves.
pub(crate) const METHODS: &[&str] = &[
    "getMe",
    "getUpdates",
    "getFile",
    "sendMessage",
    "editMessageText",
    "sendDocument",
    "sendChatAction",
    "getWebhookInfo",
    "setWebhook",
    "deleteWebhook",
    "setMyCommands",
    "getMyCommands",
    "answerCallbackQuery",
    "deleteMessage",
    "deleteMyCommands",
    "close",
    "logOut",
];

/// The Bot API's upload limit for bots; larger uploads get 413.
const UPLOAD_LIMIT: usize = 50 * 1024 * 1024;
/// Telegram's limits on message text and captions, in characters.
const MAX_TEXT_CHARS: usize = 4096;
const MAX_CAPTION_CHARS: usize = 1024;

/// The messages of one chat, and the last message id used in it.
#[derive(Default)]
pub(crate) struct ChatLog {
    last_message_id: i64,
    messages: HashMap<i64, StoredMessage>,
}

struct StoredMessage {
    json: Value,
    from_bot: bool,
}

// ---------------------------------------------------------------------------------------------
// The bot's identity, and messages that answer it (group chats)

impl FakeTelegram {
    /// Sets the username getMe answers and the bot's messages carry (default
    /// [`DEFAULT_BOT_USERNAME`]). Set it before the bot starts: it asks getMe once.
    ///
    /// [`DEFAULT_BOT_USERNAME`]: crate::DEFAULT_BOT_USERNAME
    pub fn set_bot_username(&self, username: &str) {
        *self.inner.shared.bot_username.lock().unwrap_or_else(PoisonError::into_inner) = username.to_owned();
    }

    /// The newest message the bot sent to `chat_id`, as stored (with edits), if any.
    pub fn last_bot_message(&self, chat_id: i64) -> Option<Value> {
        let state = self.state();
        let chat = state.chats.get(&chat_id)?;
        chat.messages.iter().filter(|(_, m)| m.from_bot).max_by_key(|(id, _)| **id).map(|(_, m)| m.json.clone())
    }

    /// The current JSON of message `message_id` in `chat_id` (sent by the bot or pushed in an
    /// update), reflecting edits.
    pub fn message(&self, chat_id: i64, message_id: i64) -> Option<Value> {
        self.state().chats.get(&chat_id)?.messages.get(&message_id).map(|m| m.json.clone())
    }
}

impl Shared {
    /// The bot as a User object.
    pub(crate) fn bot_json(&self) -> Value {
        let username = self.bot_username.lock().unwrap_or_else(PoisonError::into_inner).clone();
        json!({
            "id": self.bot_id,
            "is_bot": true,
            "first_name": "docket test",
            "username": username,
        })
    }
}

impl FakeState {
    /// The next message id in `chat_id`.
    pub(crate) fn next_message_id(&mut self, chat_id: i64) -> i64 {
        let chat = self.chats.entry(chat_id).or_default();
        chat.last_message_id += 1;
        chat.last_message_id
    }

    /// Remembers a message pushed in an update, so replies to it can quote it.
    pub(crate) fn remember_incoming(&mut self, message: &Value) {
        let (Some(chat_id), Some(message_id)) =
            (message.pointer("/chat/id").and_then(Value::as_i64), message.get("message_id").and_then(Value::as_i64))
        else {
            return;
        };
        let chat = self.chats.entry(chat_id).or_default();
        chat.last_message_id = chat.last_message_id.max(message_id);
        chat.messages.insert(message_id, StoredMessage { json: message.clone(), from_bot: false });
    }

    /// The message a send call replies to, for its `reply_to_message` field.
    fn replied_message(&self, chat_id: i64, params: &Map<String, Value>) -> Option<Value> {
        let reply_to = params
            .get("reply_parameters")
            .and_then(|p| p.get("message_id"))
            .or_else(|| params.get("reply_to_message_id"))
            .and_then(lenient_i64)?;
        let mut quoted = self.chats.get(&chat_id)?.messages.get(&reply_to)?.json.clone();
        // Telegram nests replies only one level deep.
        if let Some(object) = quoted.as_object_mut() {
            object.remove("reply_to_message");
        }
        Some(quoted)
    }

    fn store_sent(&mut self, chat_id: i64, message: &Value) {
        if let Some(message_id) = message.get("message_id").and_then(Value::as_i64) {
            let chat = self.chats.entry(chat_id).or_default();
            chat.messages.insert(message_id, StoredMessage { json: message.clone(), from_bot: true });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Methods

/// Performs a (non-getUpdates) method and decides its answer.
pub(crate) fn perform(shared: &Shared, method: &str, params: &Map<String, Value>, upload: Option<FilePart>) -> Reply {
    let mut state = shared.state();
    let chat_id = params.get("chat_id").and_then(lenient_i64);
    if (method.starts_with("send") || method.starts_with("edit"))
        && let Some(description) = chat_id.and_then(|id| state.faults.blocked.get(&id))
    {
        return error(StatusCode::FORBIDDEN, description, None);
    }
    match method {
        "getMe" => {
            let mut me = shared.bot_json();
            me["can_join_groups"] = json!(true);
            me["can_read_all_group_messages"] = json!(false);
            me["supports_inline_queries"] = json!(false);
            // teloxide 0.17's `Me` requires these two newer fields.
            me["can_connect_to_business"] = json!(false);
            me["has_main_web_app"] = json!(false);
            ok(me)
        }
        "getFile" => get_file(&mut state, params),
        "sendMessage" => {
            let Some(chat_id) = chat_id else { return missing_chat(params) };
            let text = params.get("text").map(text_of).unwrap_or_default();
            if text.is_empty() {
                return bad_request("Bad Request: message text is empty");
            }
            if text.chars().count() > MAX_TEXT_CHARS {
                return bad_request("Bad Request: message is too long");
            }
            let mut message = new_bot_message(shared, &mut state, chat_id, params);
            message["text"] = json!(text);
            state.store_sent(chat_id, &message);
            ok(message)
        }
        "editMessageText" => edit_message_text(&mut state, chat_id, params),
        "sendDocument" => send_document(shared, &mut state, chat_id, params, upload),
        "getWebhookInfo" | "setWebhook" | "deleteWebhook" => webhook_method(&mut state, method, params),
        "setMyCommands" | "getMyCommands" | "deleteMyCommands" => {
            crate::commands::commands_method(&mut state, method, params)
        }
        "answerCallbackQuery" => crate::buttons::answer_callback_query(&mut state, params),
        "deleteMessage" => {
            let message_id = params.get("message_id").and_then(lenient_i64);
            let removed = chat_id
                .zip(message_id)
                .and_then(|(chat, id)| state.chats.get_mut(&chat)?.messages.remove(&id))
                .is_some();
            if removed { ok(json!(true)) } else { bad_request("Bad Request: message to delete not found") }
        }
        // sendChatAction, close, logOut.
        _ => ok(json!(true)),
    }
}

fn edit_message_text(state: &mut FakeState, chat_id: Option<i64>, params: &Map<String, Value>) -> Reply {
    let message_id = params.get("message_id").and_then(lenient_i64);
    let text = params.get("text").map(text_of).unwrap_or_default();
    if text.is_empty() {
        return bad_request("Bad Request: message text is empty");
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        return bad_request("Bad Request: MESSAGE_TOO_LONG");
    }
    let stored = chat_id
        .zip(message_id)
        .and_then(|(chat_id, message_id)| state.chats.get_mut(&chat_id)?.messages.get_mut(&message_id));
    let Some(stored) = stored else {
        return bad_request("Bad Request: message to edit not found");
    };
    if !stored.from_bot {
        return bad_request("Bad Request: message can't be edited");
    }
    let markup = inline_markup(params);
    if stored.json.get("text").and_then(Value::as_str) == Some(text.as_str())
        && stored.json.get("reply_markup") == markup.as_ref()
    {
        return bad_request(
            "Bad Request: message is not modified: specified new message content and reply markup are exactly \
             the same as a current content and reply markup of the message",
        );
    }
    let message = &mut stored.json;
    message["text"] = json!(text);
    message["edit_date"] = json!(unix_now());
    if let Some(object) = message.as_object_mut() {
        object.remove("entities");
        match markup {
            Some(markup) => object.insert("reply_markup".to_owned(), markup),
            None => object.remove("reply_markup"),
        };
    }
    ok(message.clone())
}

fn send_document(
    shared: &Shared,
    state: &mut FakeState,
    chat_id: Option<i64>,
    params: &Map<String, Value>,
    upload: Option<FilePart>,
) -> Reply {
    let Some(chat_id) = chat_id else { return missing_chat(params) };
    let caption = params.get("caption").map(text_of);
    if caption.as_ref().is_some_and(|c| c.chars().count() > MAX_CAPTION_CHARS) {
        return bad_request("Bad Request: message caption is too long");
    }
    let file_id = match upload {
        Some(part) => {
            if part.bytes.is_empty() {
                return bad_request("Bad Request: file must be non-empty");
            }
            if part.bytes.len() > UPLOAD_LIMIT {
                return error(StatusCode::PAYLOAD_TOO_LARGE, "Request Entity Too Large", None);
            }
            let mime = part
                .content_type
                .filter(|m| m != "application/octet-stream")
                .or_else(|| part.file_name.as_deref().and_then(mime_for_name).map(ToOwned::to_owned));
            state.files.store(part.bytes, part.file_name, mime).file_id
        }
        None => match params.get("document").and_then(Value::as_str) {
            Some(id) if state.files.stored.contains_key(id) => id.to_owned(),
            Some(_) => return bad_request("Bad Request: wrong file identifier/HTTP URL specified"),
            None => return bad_request("Bad Request: there is no document in the request"),
        },
    };
    let file = &state.files.stored[&file_id];
    let mut document = json!({
        "file_id": file_id,
        "file_unique_id": file.unique_id,
        "file_size": file.bytes.len(),
    });
    if let Some(name) = &file.name {
        document["file_name"] = json!(name);
    }
    document["mime_type"] = json!(file.mime.as_deref().unwrap_or("application/octet-stream"));
    let mut message = new_bot_message(shared, state, chat_id, params);
    message["document"] = document;
    if let Some(caption) = caption.filter(|c| !c.is_empty()) {
        message["caption"] = json!(caption);
    }
    state.store_sent(chat_id, &message);
    ok(message)
}

/// The common part of a message the bot sends: id, date, chat, sender, reply and markup.
fn new_bot_message(shared: &Shared, state: &mut FakeState, chat_id: i64, params: &Map<String, Value>) -> Value {
    let message_id = state.next_message_id(chat_id);
    let mut message = json!({
        "message_id": message_id,
        "date": unix_now(),
        "chat": chat_json(chat_id),
        "from": shared.bot_json(),
    });
    if let Some(replied) = state.replied_message(chat_id, params) {
        message["reply_to_message"] = replied;
    }
    if let Some(markup) = inline_markup(params) {
        message["reply_markup"] = markup;
    }
    message
}
