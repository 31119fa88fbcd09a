//! Incoming updates: builders for the updates a test sends (documents, texts), the queue that
//! getUpdates serves and `offset` confirms, and long polling.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::files::FileRef;
use crate::reply::{Reply, ok};
use crate::request::lenient_i64;
use crate::server::{FakeTelegram, Shared};
use crate::webhook::webhook_conflict;

/// The updates part of the fake's state: pushed, not yet confirmed by an `offset`.
pub(crate) struct UpdateQueue {
    queue: VecDeque<Value>,
    /// The `update_id` the next pushed update without one gets.
    next_id: i64,
    /// The kinds of update the bot last asked for (`allowed_updates`); `None` or empty: every
    /// kind but the three Telegram leaves out by default.
    allowed: Option<Vec<String>>,
}

/// The kinds Telegram sends only to a bot that asks for them by name.
const ONLY_WHEN_ASKED: [&str; 3] = ["chat_member", "message_reaction", "message_reaction_count"];

impl Default for UpdateQueue {
    fn default() -> Self {
        Self { queue: VecDeque::new(), next_id: 1, allowed: None }
    }
}

impl UpdateQueue {
    /// Updates waiting.
    pub(crate) fn len(&self) -> usize {
        self.queue.len()
    }

    /// Forgets every waiting update.
    pub(crate) fn clear(&mut self) {
        self.queue.clear();
    }

    /// Remembers `allowed_updates` when a request gives it (a JSON array, or one as text in a
    /// form), as Telegram keeps it until the next request that does.
    fn remember_allowed(&mut self, params: &Map<String, Value>) {
        let list = match params.get("allowed_updates") {
            Some(Value::Array(list)) => list.clone(),
            Some(Value::String(text)) => serde_json::from_str(text).unwrap_or_default(),
            _ => return,
        };
        self.allowed = Some(list.iter().filter_map(Value::as_str).map(str::to_owned).collect());
    }

    /// Drops the updates of kinds the bot did not ask for: Telegram never delivers them.
    fn drop_undelivered(&mut self) {
        let queue = std::mem::take(&mut self.queue);
        self.queue = queue.into_iter().filter(|u| self.delivers(u)).collect();
    }

    /// Whether Telegram would deliver `update` to this bot.
    fn delivers(&self, update: &Value) -> bool {
        let Some(kind) = update.as_object().and_then(|u| u.keys().find(|k| k.as_str() != "update_id")) else {
            return true;
        };
        match &self.allowed {
            Some(allowed) if !allowed.is_empty() => allowed.iter().any(|a| a == kind),
            _ => !ONLY_WHEN_ASKED.contains(&kind.as_str()),
        }
    }
}

impl FakeTelegram {
    /// Queues an update for getUpdates and wakes long polls. Sets `update_id` to the next id in
    /// sequence unless the update has one (later ids then continue after it); returns the id.
    /// A contained `message` is remembered so replies to it can quote it.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut state = self.state();
            let id = match update.get("update_id").and_then(Value::as_i64) {
                Some(id) => id,
                None => {
                    let id = state.updates.next_id;
                    if let Some(object) = update.as_object_mut() {
                        object.insert("update_id".to_owned(), json!(id));
                    }
                    id
                }
            };
            state.updates.next_id = state.updates.next_id.max(id + 1);
            if let Some(message) = update.get("message") {
                state.remember_incoming(message);
            }
            state.updates.queue.push_back(update);
            id
        };
        self.inner.shared.updates_seen.send_modify(|n| *n += 1);
        id
    }

    /// A full Update (without `update_id`) in which `user_id` sends `file` as a document to
    /// `chat_id`, declaring the file's real size. A given `name` is also remembered for the
    /// file, so getFile paths get its extension.
    pub fn document_update(
        &self,
        chat_id: i64,
        user_id: i64,
        file: &FileRef,
        name: Option<&str>,
        mime: Option<&str>,
    ) -> Value {
        self.document_update_with_size(chat_id, user_id, file, name, mime, Some(file.size))
    }

    /// Like [`document_update`](Self::document_update), but the document declares
    /// `declared_size` as its `file_size` (`None` leaves the field out), as Telegram may.
    pub fn document_update_with_size(
        &self,
        chat_id: i64,
        user_id: i64,
        file: &FileRef,
        name: Option<&str>,
        mime: Option<&str>,
        declared_size: Option<u64>,
    ) -> Value {
        let mut state = self.state();
        if let Some(stored) = state.files.stored.get_mut(&file.file_id) {
            if name.is_some() {
                stored.name = name.map(ToOwned::to_owned);
            }
            if mime.is_some() {
                stored.mime = mime.map(ToOwned::to_owned);
            }
        }
        let mut document = Map::new();
        document.insert("file_id".to_owned(), json!(file.file_id));
        document.insert("file_unique_id".to_owned(), json!(file.file_unique_id));
        if let Some(name) = name {
            document.insert("file_name".to_owned(), json!(name));
        }
        if let Some(mime) = mime {
            document.insert("mime_type".to_owned(), json!(mime));
        }
        if let Some(size) = declared_size {
            document.insert("file_size".to_owned(), json!(size));
        }
        let message_id = state.next_message_id(chat_id);
        json!({
            "message": {
                "message_id": message_id,
                "date": unix_now(),
                "chat": chat_json(chat_id),
                "from": user_json(user_id, state.language_of(user_id).as_deref()),
                "document": document,
            }
        })
    }

    /// A full Update (without `update_id`) in which `user_id` sends `file` as a photo of
    /// `width` × `height` to `chat_id`: Telegram's `photo` array, here of that one size.
    pub fn photo_update(&self, chat_id: i64, user_id: i64, file: &FileRef, width: u32, height: u32) -> Value {
        let mut state = self.state();
        let message_id = state.next_message_id(chat_id);
        json!({
            "message": {
                "message_id": message_id,
                "date": unix_now(),
                "chat": chat_json(chat_id),
                "from": user_json(user_id, state.language_of(user_id).as_deref()),
                "photo": [{
                    "file_id": file.file_id,
                    "file_unique_id": file.file_unique_id,
                    "width": width,
                    "height": height,
                    "file_size": file.size,
                }],
            }
        })
    }

    /// A full Update (without `update_id`) in which `user_id` writes `text` to `chat_id`. A
    /// leading `/command` gets a `bot_command` entity, as Telegram adds.
    pub fn text_update(&self, chat_id: i64, user_id: i64, text: &str) -> Value {
        let (message_id, language) = {
            let mut state = self.state();
            (state.next_message_id(chat_id), state.language_of(user_id))
        };
        let mut message = json!({
            "message_id": message_id,
            "date": unix_now(),
            "chat": chat_json(chat_id),
            "from": user_json(user_id, language.as_deref()),
            "text": text,
        });
        if text.starts_with('/') {
            let command = text.split_whitespace().next().unwrap_or(text);
            message["entities"] = json!([{
                "type": "bot_command",
                "offset": 0,
                "length": command.encode_utf16().count(),
            }]);
        }
        json!({ "message": message })
    }

    /// How many queued updates no getUpdates `offset` has confirmed yet.
    pub fn pending_updates(&self) -> usize {
        self.state().updates.len()
    }
}

/// getUpdates: confirms `offset`, answers what is queued, or long-polls up to `timeout`.
pub(crate) async fn get_updates(shared: &Shared, params: &Map<String, Value>, at: Instant) -> Reply {
    let offset = params.get("offset").and_then(lenient_i64);
    let limit = params.get("limit").and_then(lenient_i64).unwrap_or(100).clamp(1, 100);
    let limit = usize::try_from(limit).unwrap_or(100);
    let timeout = params.get("timeout").and_then(lenient_i64).unwrap_or(0).max(0);
    let timeout = Duration::from_secs(u64::try_from(timeout).unwrap_or(0));

    if let Some(reply) = webhook_conflict(shared) {
        shared.record("getUpdates", Value::Object(params.clone()), None, reply.status, at);
        return reply;
    }
    // This poll overtakes any still waiting: they answer 409 (woken like by a pushed update).
    let generation = shared.overtake_polls();
    // Subscribe before looking at the queue, so an update pushed in between still wakes us.
    let mut pushed = shared.updates_seen.subscribe();
    let index = {
        let mut state = shared.state();
        state.updates.remember_allowed(params);
        state.updates.drop_undelivered();
        let updates = &mut state.updates.queue;
        match offset {
            // A negative offset keeps only the last |offset| updates.
            Some(offset) if offset < 0 => {
                let keep = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
                while updates.len() > keep {
                    updates.pop_front();
                }
            }
            // Confirming an offset forgets every update before it.
            Some(offset) => updates.retain(|u| update_id(u) >= offset),
            None => {}
        }
        let batch = take_batch(updates, offset, limit);
        let stopped = state.stopped;
        drop(state);
        // Recorded before the long poll so tests see the offset confirmation at once.
        let index = shared.record("getUpdates", Value::Object(params.clone()), None, StatusCode::OK, at);
        if !batch.is_empty() || stopped {
            return ok(Value::Array(batch));
        }
        index
    };
    if timeout.is_zero() {
        return ok(json!([]));
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if tokio::time::timeout_at(deadline, pushed.changed()).await.is_err() {
            return ok(json!([]));
        }
        let mut state = shared.state();
        if state.polling.poll_generation != generation {
            drop(state);
            return shared.terminated_poll(index);
        }
        state.updates.drop_undelivered();
        let batch = take_batch(&state.updates.queue, offset, limit);
        if !batch.is_empty() || state.stopped {
            return ok(Value::Array(batch));
        }
    }
}

fn take_batch(updates: &VecDeque<Value>, offset: Option<i64>, limit: usize) -> Vec<Value> {
    let floor = offset.filter(|o| *o >= 0).unwrap_or(i64::MIN);
    updates.iter().filter(|u| update_id(u) >= floor).take(limit).cloned().collect()
}

fn update_id(update: &Value) -> i64 {
    update.get("update_id").and_then(Value::as_i64).unwrap_or(i64::MIN)
}

// ---------------------------------------------------------------------------------------------
// JSON shapes

/// A Chat object: private for positive ids, a supergroup for negative ones.
pub(crate) fn chat_json(chat_id: i64) -> Value {
    if chat_id > 0 {
        json!({ "id": chat_id, "type": "private", "first_name": "Test", "last_name": "User", "username": format!("user{chat_id}") })
    } else {
        json!({ "id": chat_id, "type": "supergroup", "title": "docket test group" })
    }
}

/// A User object whose app reports `language_code` (left out when `None`).
pub(crate) fn user_json(user_id: i64, language_code: Option<&str>) -> Value {
    let mut user = json!({
        "id": user_id,
        "is_bot": false,
        "first_name": "Test",
        "last_name": "User",
        "username": format!("user{user_id}"),
    });
    if let Some(code) = language_code {
        user["language_code"] = json!(code);
    }
    user
}

/// Seconds since the Unix epoch, for `date` fields.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}
