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
        self.press_button_at(chat_id, user_id, message_id, 0)
    }

    /// Like [`press_button`](Self::press_button), for the `index`th button (from 0) of the
    /// keyboard's first row.
    pub fn press_button_at(&self, chat_id: i64, user_id: i64, message_id: i64, index: usize) -> Option<String> {
        let message = self.message(chat_id, message_id)?;
        let pointer = format!("/reply_markup/inline_keyboard/0/{index}/callback_data");
        let data = message.pointer(&pointer)?.as_str()?.to_owned();
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
        Some(id)
    }

    /// Whether the bot answered the callback query `id`.
    pub fn press_answered(&self, id: &str) -> bool {
        self.state().presses.answered.contains(id)
    }
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
