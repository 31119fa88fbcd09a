//! The bot's command lists (setMyCommands, getMyCommands, deleteMyCommands), kept per scope and
//! `language_code` as Telegram keeps them: a list set for `ru` is what Russian-speaking users
//! see, the one set without a language is everyone else's.

use serde_json::{Map, Value, json};

use crate::reply::{Reply, ok};
use crate::request::text_of;
use crate::server::{FakeState, FakeTelegram};

/// Which list a call names: its scope's `type` (`default` when none is given) and its
/// `language_code` (empty when none is given).
pub(crate) type CommandsKey = (String, String);

fn key_of(params: &Map<String, Value>) -> CommandsKey {
    let scope = params
        .get("scope")
        .map(|scope| match scope {
            // Form-encoded requests carry the scope as JSON text.
            Value::String(text) => serde_json::from_str::<Value>(text).unwrap_or(Value::Null),
            other => other.clone(),
        })
        .and_then(|scope| scope.get("type").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| "default".to_owned());
    let language = params.get("language_code").map(text_of).unwrap_or_default();
    (scope, language)
}

/// setMyCommands, getMyCommands and deleteMyCommands.
pub(crate) fn commands_method(state: &mut FakeState, method: &str, params: &Map<String, Value>) -> Reply {
    let key = key_of(params);
    match method {
        "setMyCommands" => {
            let commands = match params.get("commands") {
                Some(Value::String(text)) => serde_json::from_str(text).unwrap_or_else(|_| json!([])),
                Some(list) => list.clone(),
                None => json!([]),
            };
            state.commands.insert(key, commands);
            ok(json!(true))
        }
        "deleteMyCommands" => {
            state.commands.remove(&key);
            ok(json!(true))
        }
        _ => ok(state.commands.get(&key).cloned().unwrap_or_else(|| json!([]))),
    }
}

impl FakeTelegram {
    /// The commands the bot set for the default scope and `language_code` (`None`: the list
    /// for users whose language has none of its own), as getMyCommands would answer: an array
    /// of `{"command", "description"}` objects, empty when none were set.
    pub fn commands(&self, language_code: Option<&str>) -> Value {
        let key = ("default".to_owned(), language_code.unwrap_or_default().to_owned());
        self.state().commands.get(&key).cloned().unwrap_or_else(|| json!([]))
    }

    /// Makes `user_id`'s Telegram app report `language_code` (`None`: no language at all) in
    /// the updates built for that user from now on. Users not set report `"en"`.
    pub fn set_user_language(&self, user_id: i64, language_code: Option<&str>) {
        self.state().user_languages.insert(user_id, language_code.map(str::to_owned));
    }
}

impl FakeState {
    /// The `language_code` `user_id`'s updates carry.
    pub(crate) fn language_of(&self, user_id: i64) -> Option<String> {
        self.user_languages.get(&user_id).cloned().unwrap_or_else(|| Some("en".to_owned()))
    }
}
