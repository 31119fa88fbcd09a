//! Who may poll: a webhook (getUpdates answers 409 while one is set), competing long polls (the
//! newer overtakes the older, which answers 409), and a revoked token (every call answers 401).

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::reply::{Reply, bad_request, error, ok};
use crate::request::text_of;
use crate::server::{FakeState, FakeTelegram, Shared};

/// What decides whether getUpdates may answer, and whether the token is still good.
#[derive(Default)]
pub(crate) struct PollingState {
    /// The URL set with setWebhook; while set, getUpdates answers 409.
    webhook: Option<String>,
    /// The secret token and connection limit given with it.
    webhook_secret: Option<String>,
    webhook_max_connections: Option<i64>,
    /// Bumped by every getUpdates that gets past the webhook check; a long poll that sees it
    /// change was overtaken by a newer one and answers 409.
    pub(crate) poll_generation: u64,
    /// Set by [`FakeTelegram::revoke_token`]: every API call and download answers 401.
    pub(crate) token_revoked: bool,
}

/// Telegram's answer to getUpdates while a webhook is set.
const WEBHOOK_CONFLICT: &str =
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first";

/// Telegram's answer to a long poll that a newer getUpdates with the same token overtook.
const OTHER_POLL_CONFLICT: &str =
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running";

impl FakeTelegram {
    /// Sets a webhook, as `setWebhook` would: from now on getUpdates answers 409 until
    /// `deleteWebhook` (the updates queued meanwhile are kept, unless it drops them).
    pub fn set_webhook(&self, url: &str) {
        self.state().polling.webhook = Some(url.to_owned());
    }

    /// The webhook URL currently set, if any.
    pub fn webhook(&self) -> Option<String> {
        self.state().polling.webhook.clone()
    }

    /// The secret token the webhook was set with, if any.
    pub fn webhook_secret(&self) -> Option<String> {
        self.state().polling.webhook_secret.clone()
    }

    /// The `max_connections` the webhook was set with, if given.
    pub fn webhook_max_connections(&self) -> Option<i64> {
        self.state().polling.webhook_max_connections
    }

    /// Revokes the token, as BotFather's /revoke does: from now on every API call and every
    /// download answers 401 Unauthorized.
    pub fn revoke_token(&self) {
        self.state().polling.token_revoked = true;
    }
}

impl Shared {
    /// Whether an API path's `bot{token}` segment carries the token the fake accepts (and it was
    /// not revoked).
    pub(crate) fn accepts_token(&self, bot_token: &str) -> bool {
        bot_token.strip_prefix("bot") == Some(self.token.as_str()) && !self.state().polling.token_revoked
    }

    /// Marks a new getUpdates as the only one allowed to wait, waking those it overtakes.
    /// Returns its generation.
    pub(crate) fn overtake_polls(&self) -> u64 {
        let generation = {
            let mut state = self.state();
            state.polling.poll_generation += 1;
            state.polling.poll_generation
        };
        self.updates_seen.send_modify(|n| *n += 1);
        generation
    }

    /// The answer of an overtaken long poll; its recorded call (at `index`) gets status 409.
    pub(crate) fn terminated_poll(&self, index: usize) -> Reply {
        let reply = error(StatusCode::CONFLICT, OTHER_POLL_CONFLICT, None);
        {
            let mut state = self.state();
            if let Some(call) = state.calls.get_mut(index) {
                let mut answered = crate::Call::clone(call);
                answered.status = reply.status.as_u16();
                *call = std::sync::Arc::new(answered);
            }
        }
        self.calls_seen.send_modify(|n| *n += 1);
        reply
    }
}

/// getUpdates' answer while a webhook is set.
pub(crate) fn webhook_conflict(shared: &Shared) -> Option<Reply> {
    shared.state().polling.webhook.is_some().then(|| error(StatusCode::CONFLICT, WEBHOOK_CONFLICT, None))
}

/// getWebhookInfo, setWebhook and deleteWebhook.
pub(crate) fn webhook_method(state: &mut FakeState, method: &str, params: &Map<String, Value>) -> Reply {
    match method {
        "getWebhookInfo" => ok(json!({
            "url": state.polling.webhook.clone().unwrap_or_default(),
            "has_custom_certificate": false,
            "pending_update_count": state.updates.len(),
            "max_connections": state.polling.webhook_max_connections.unwrap_or(40),
        })),
        "setWebhook" => {
            let url = params.get("url").map(text_of).unwrap_or_default();
            if url.is_empty() {
                state.polling.webhook = None;
                return ok(json!(true));
            }
            if !url.starts_with("https://") {
                return bad_request("Bad Request: bad webhook: HTTPS url must be provided for webhook");
            }
            let secret = params.get("secret_token").map(text_of);
            if let Some(secret) = &secret
                && (secret.is_empty()
                    || secret.len() > 256
                    || !secret.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'))
            {
                return bad_request("Bad Request: secret token contains unallowed characters");
            }
            let max_connections = params.get("max_connections").and_then(crate::request::lenient_i64);
            if max_connections.is_some_and(|n| !(1..=100).contains(&n)) {
                return bad_request("Bad Request: bad webhook: max_connections must be between 1 and 100");
            }
            state.polling.webhook = Some(url);
            state.polling.webhook_secret = secret;
            state.polling.webhook_max_connections = max_connections;
            ok(json!(true))
        }
        _ => {
            state.polling.webhook = None;
            state.polling.webhook_secret = None;
            if params.get("drop_pending_updates").and_then(Value::as_bool) == Some(true) {
                state.updates.clear();
            }
            ok(json!(true))
        }
    }
}
