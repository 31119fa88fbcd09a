//! Webhook mode: Telegram posts each update to docket's HTTP listener (behind a TLS reverse
//! proxy), and docket answers 200 only once the update is recorded.
//!
//! A request must carry the secret of `[webhook] secret_token_env` in
//! `X-Telegram-Bot-Api-Secret-Token`, compared in constant time; without it the answer is 401
//! and nothing is read. The update goes through the same [`Intake::record`] as in polling mode,
//! and nothing else happens inside the request: 200 after the commit, 5xx when the update
//! cannot be recorded (the database is away), so that Telegram delivers it again. A repeat is
//! recorded once, as in polling. A button press is answered after the response.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use futures_util::FutureExt as _;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument as _, error, info, info_span, warn};

use super::polling::answer_press;
use super::{Incoming, Intake};
use crate::telegram::TelegramClient;

/// The header Telegram sends the secret token in.
pub const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";

/// The webhook's secret token. Never shown in `Debug`, compared in constant time.
#[derive(Clone)]
pub struct WebhookSecret(String);

impl WebhookSecret {
    /// `value`, if Telegram accepts it as a secret token: 1 to 256 characters, each a letter, a
    /// digit, `_` or `-`.
    pub fn new(value: &str) -> Option<Self> {
        let valid = (1..=256).contains(&value.len())
            && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        valid.then(|| Self(value.to_owned()))
    }

    /// The secret, for setWebhook only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether `header` (the request's, if any) is the secret, in time that does not depend on
    /// how much of it matches.
    pub fn matches(&self, header: Option<&[u8]>) -> bool {
        use subtle::ConstantTimeEq as _;
        header.is_some_and(|h| bool::from(h.ct_eq(self.0.as_bytes())))
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(***)")
    }
}

/// What a request handler needs.
#[derive(Clone)]
struct Receiver {
    intake: Intake,
    client: TelegramClient,
    secret: Arc<WebhookSecret>,
}

/// Serves `path` on `listener` until `cancel`: every POST is one update.
pub async fn serve(
    listener: TcpListener,
    path: String,
    intake: Intake,
    client: TelegramClient,
    secret: WebhookSecret,
    cancel: CancellationToken,
) -> std::io::Result<()> {
    let receiver = Receiver { intake, client, secret: Arc::new(secret) };
    let app = Router::new().route(&path, post(receive)).with_state(receiver);
    let addr = listener.local_addr().ok();
    info!(listen = ?addr, "receiving updates by webhook");
    axum::serve(listener, app).with_graceful_shutdown(async move { cancel.cancelled().await }).await
}

/// Binds the webhook's listener (at start, so a taken port stops docket with the reason).
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(addr).await
}

async fn receive(State(receiver): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    if !receiver.secret.matches(headers.get(SECRET_HEADER).map(|v| v.as_bytes())) {
        warn!("refused a webhook request without the right secret token");
        return StatusCode::UNAUTHORIZED;
    }
    let Some((update_id, incoming)) = crate::telegram::updates::read_update_body(&body) else {
        // Without an update id there is nothing to register, and Telegram never sends one.
        warn!("a webhook request that is not an update; refused");
        return StatusCode::BAD_REQUEST;
    };
    metrics::counter!("docket_updates_received_total").increment(1);
    let span = info_span!("update", update.id = %update_id);
    let handled = AssertUnwindSafe(receiver.intake.record(update_id, incoming).instrument(span)).catch_unwind().await;
    let failure = match handled {
        Ok(Ok(recorded)) => {
            // Answered after the response: nothing but intake happens inside the request.
            let client = receiver.client.clone();
            tokio::spawn(async move { answer_press(&client, &recorded).await });
            return StatusCode::OK;
        }
        Ok(Err(e)) if e.is_transient() => {
            warn!(update.id = %update_id, error = %e, "cannot record an update now; Telegram will send it again");
            return StatusCode::SERVICE_UNAVAILABLE;
        }
        Ok(Err(e)) => e.to_string(),
        Err(_) => "handling the update panicked".to_owned(),
    };
    // It fails the same way every time: keep it as rejected, so Telegram stops sending it.
    error!(update.id = %update_id, error = %failure, "recording update as rejected");
    match receiver.intake.record(update_id, Incoming::Malformed(failure)).await {
        Ok(_) => StatusCode::OK,
        Err(e) => {
            error!(update.id = %update_id, error = %e, "cannot record the rejected update either");
            StatusCode::INTERNAL_SERVER_ERROR
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_must_match_exactly_and_is_never_shown() {
        let secret = WebhookSecret::new("s3cret_-X").expect("valid");
        assert!(secret.matches(Some(b"s3cret_-X")));
        assert!(!secret.matches(Some(b"s3cret_-x")));
        assert!(!secret.matches(Some(b"s3cret_-X ")));
        assert!(!secret.matches(Some(b"")));
        assert!(!secret.matches(None));
        assert_eq!(format!("{secret:?}"), "WebhookSecret(***)");
        assert!(WebhookSecret::new("").is_none());
        assert!(WebhookSecret::new("has space").is_none());
        assert!(WebhookSecret::new(&"a".repeat(257)).is_none());
    }
}
