//! Webhook mode around the listener: bound at start (a taken port stops docket with the reason),
//! setWebhook tried until Telegram takes it while the process stays up and `/healthz` says
//! not ready, and, when `[webhook] delete_on_stop` says so, deleteWebhook at a clean stop.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};
use url::Url;

use super::Environment;
use crate::config::Config;
use crate::domain::retry::backoff_jittered;
use crate::intake::polling::sleep_or_cancel;
use crate::intake::webhook::WebhookSecret;
use crate::telegram::{TelegramClient, TelegramError};

/// How long a clean stop waits for deleteWebhook.
const DELETE_TIMEOUT: Duration = Duration::from_secs(5);

/// What webhook mode opens at start.
pub(super) struct WebhookStart {
    pub(super) listener: tokio::net::TcpListener,
    pub(super) url: Url,
    pub(super) secret: WebhookSecret,
}

/// Binds `[webhook] listen` and reads the secret from the environment variable
/// `[webhook] secret_token_env` names.
pub(super) async fn webhook_start(config: &Config, env: &Environment) -> anyhow::Result<WebhookStart> {
    let hook = &config.webhook;
    let (Some(listen), Some(url), Some(name)) = (hook.listen, hook.public_url.clone(), &hook.secret_token_env) else {
        anyhow::bail!("[telegram] mode = \"webhook\" needs [webhook] listen, public_url and secret_token_env");
    };
    let value = env.var(name).unwrap_or_default();
    let Some(secret) = WebhookSecret::new(&value) else {
        anyhow::bail!(
            "[webhook] secret_token_env names {name}, which is not set or not a valid secret token \
             (1 to 256 letters, digits, _ and -)"
        );
    };
    let listener = crate::intake::webhook::bind(listen)
        .await
        .with_context(|| format!("while binding [webhook] listen = {listen}"))?;
    Ok(WebhookStart { listener, url, secret })
}

/// Whether Telegram has taken the webhook: `/healthz` reports not ready until it has, with the
/// last reason setWebhook failed.
#[derive(Debug)]
pub struct WebhookStatus(Mutex<Result<(), String>>);

impl Default for WebhookStatus {
    fn default() -> Self {
        Self(Mutex::new(Err("setWebhook has not been called yet".to_owned())))
    }
}

impl WebhookStatus {
    /// `Err` with why the webhook is not set yet.
    pub fn get(&self) -> Result<(), String> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set(&self, now: Result<(), String>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }
}

/// Calls setWebhook until Telegram takes it or `cancel` fires, waiting longer after each
/// failure (up to a minute). The listener serves meanwhile: Telegram posts nothing before.
pub(super) async fn keep_setting(
    telegram: TelegramClient,
    url: Url,
    secret: WebhookSecret,
    max_connections: u32,
    status: Arc<WebhookStatus>,
    cancel: CancellationToken,
) {
    let host = url.host_str().unwrap_or_default().to_owned();
    for attempt in 1u32.. {
        let answer = tokio::select! {
            () = cancel.cancelled() => return,
            answer = telegram.set_webhook(&url, secret.expose(), max_connections) => answer,
        };
        let e = match answer {
            Ok(()) => {
                status.set(Ok(()));
                // The host only: a URL's path may hold a secret of its own.
                info!(host, "the webhook is set");
                return;
            }
            Err(e) => e,
        };
        let wait = match &e {
            TelegramError::RetryAfter(d) => *d,
            _ => backoff_jittered(attempt, Duration::from_secs(1), Duration::from_secs(60)),
        };
        let wait_ms = wait.as_millis() as u64;
        match &e {
            // Only a person can fix these; they are said loudly, and tried again all the same.
            TelegramError::Unauthorized | TelegramError::NotFound(_) | TelegramError::Permanent(_) => {
                error!(error = %e, attempt, wait_ms, "Telegram refused setWebhook; trying again")
            }
            _ => warn!(error = %e, attempt, wait_ms, "setWebhook failed; trying again"),
        }
        status.set(Err(format!("the webhook is not set: {e}")));
        if sleep_or_cancel(wait, &cancel).await {
            return;
        }
    }
}

/// What a clean stop does with the webhook.
#[derive(Debug)]
pub(super) struct WebhookStop {
    pub(super) telegram: TelegramClient,
    /// `[webhook] delete_on_stop`.
    pub(super) delete: bool,
}

impl WebhookStop {
    /// deleteWebhook, when configured: the updates waiting at Telegram are kept for whoever takes
    /// the bot's updates next. A failure is logged; the stop goes on.
    pub(super) async fn run(&self) {
        if !self.delete {
            return;
        }
        match tokio::time::timeout(DELETE_TIMEOUT, self.telegram.delete_webhook()).await {
            Ok(Ok(())) => info!("deleted the webhook ([webhook] delete_on_stop)"),
            Ok(Err(e)) => warn!(error = %e, "could not delete the webhook at stop"),
            Err(_) => warn!(timeout_s = DELETE_TIMEOUT.as_secs(), "deleteWebhook did not answer in time at stop"),
        }
    }
}
