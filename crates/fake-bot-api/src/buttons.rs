//! Inline buttons: a person pressing one (a `callback_query` update, as Telegram sends it, with
//! the message the button sits under) and the bot answering the press (answerCallbackQuery,
//! refused for an id Telegram never sent, as Telegram does).

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::reply::{Reply, bad_request, ok};
use crate::request::text_of;
use crate::server::{FakeState, FakeTelegram};
use crate::updates::user_json;

/// The callback queries sent in updates, and those the bot answered.
#[derive(Default)]
pub(crate) struct Presses {
    sent: HashSet<String>,
    answered: HashSet<String>,
    next: u64,
}

/// Telegram's answer to answerCallbackQuery with an id it does not know (or knows no more).
const QUERY_INVALID: &str = "Bad Request: query is too old and response timeout expired or query ID is invalid";

impl FakeTelegram {
    /// `user_id` presses the first inline button of the bot's message `message_id` in
    /// `chat_id`: queues the callback_query update Telegram would send, carrying the message and
    /// the button's callback_data. Returns the callback query's id; `None` when there is no
    /// such message or it has no inline button.
    pub fn press_button(&self, chat_id: i64, user_id: i64, message_id: i64) -> Option<String> {
        let message = self.message(chat_id, message_id)?;
        let data = message.pointer("/reply_markup/inline_keyboard/0/0/callback_data")?.as_str()?.to_owned();
        Some(self.press(chat_id, user_id, message, data))
    }

    /// Like [`press_button`](Self::press_button), for the inline button of message `message_id`
    /// whose text is `label` (in any row). `None` when the message has no such button.
    pub fn press_button_labelled(&self, chat_id: i64, user_id: i64, message_id: i64, label: &str) -> Option<String> {
        let message = self.message(chat_id, message_id)?;
        let data =
            button_labels_and_data(&message).into_iter().find(|(text, _)| text == label).map(|(_, data)| data)?;
        Some(self.press(chat_id, user_id, message, data))
    }

    /// The texts of the inline buttons under message `message_id`, row by row.
    pub fn button_labels(&self, chat_id: i64, message_id: i64) -> Vec<String> {
        self.message(chat_id, message_id)
            .map(|m| button_labels_and_data(&m).into_iter().map(|(label, _)| label).collect())
            .unwrap_or_default()
    }

    /// Queues the callback_query of `user_id` pressing the button with `data` under `message`.
    fn press(&self, chat_id: i64, user_id: i64, message: Value, data: String) -> String {
        let (id, language) = {
            let mut state = self.state();
            state.presses.next += 1;
            let id = format!("cbq-{}", state.presses.next);
            state.presses.sent.insert(id.clone());
            (id, state.language_of(user_id))
        };
        self.push_update(json!({
            "callback_query": {
                "id": id,
                "from": user_json(user_id, language.as_deref()),
                "message": message,
                "chat_instance": format!("instance-{chat_id}"),
                "data": data,
            }
        }));
        id
    }

    /// Whether the bot answered the callback query `id`.
    pub fn press_answered(&self, id: &str) -> bool {
        self.state().presses.answered.contains(id)
    }
}

/// Each inline button of `message` as (text, callback_data), row by row.
fn button_labels_and_data(message: &Value) -> Vec<(String, String)> {
    let rows = message.pointer("/reply_markup/inline_keyboard").and_then(Value::as_array).cloned().unwrap_or_default();
    rows.iter()
        .filter_map(Value::as_array)
        .flatten()
        .filter_map(|b| Some((b.get("text")?.as_str()?.to_owned(), b.get("callback_data")?.as_str()?.to_owned())))
        .collect()
}

/// answerCallbackQuery.
pub(crate) fn answer_callback_query(state: &mut FakeState, params: &Map<String, Value>) -> Reply {
    let id = params.get("callback_query_id").map(text_of).unwrap_or_default();
    if !state.presses.sent.contains(&id) {
        return bad_request(QUERY_INVALID);
    }
    state.presses.answered.insert(id);
    ok(json!(true))
}
