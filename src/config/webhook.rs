//! `[webhook]`: where Telegram delivers updates in webhook mode (`[telegram] mode = "webhook"`).

use std::net::SocketAddr;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use url::Url;

use super::Problem;
use super::value::{self, Between};

/// `max_connections` when not set (Telegram's own default).
pub const DEFAULT_MAX_CONNECTIONS: u32 = 40;

/// `[webhook]`: where Telegram delivers updates in webhook mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebhookConfig {
    /// `listen`: the address docket's HTTP listener binds (behind a TLS reverse proxy).
    #[serde(with = "value::optional_listen", skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
    /// `public_url`: the `https://` URL Telegram posts to (the proxy's), given to setWebhook;
    /// docket answers on its path.
    #[serde(
        deserialize_with = "read_public_url",
        serialize_with = "value::write_optional_display",
        skip_serializing_if = "Option::is_none"
    )]
    pub public_url: Option<Url>,
    /// `secret_token_env`: the environment variable holding the secret Telegram sends in
    /// `X-Telegram-Bot-Api-Secret-Token`.
    #[serde(deserialize_with = "value::env_name", skip_serializing_if = "Option::is_none")]
    pub secret_token_env: Option<String>,
    /// `max_connections`: how many connections Telegram may open at once; 1 to 100.
    #[serde(deserialize_with = "Between::<1, 100>::count")]
    pub max_connections: u32,
    /// `delete_on_stop`: whether a clean stop deletes the webhook (deleteWebhook, keeping the
    /// updates that wait), so Telegram stops posting to a listener that is gone. Off by default:
    /// with several hosts behind one `public_url`, the others still take updates.
    pub delete_on_stop: bool,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            listen: None,
            public_url: None,
            secret_token_env: None,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            delete_on_stop: false,
        }
    }
}

impl WebhookConfig {
    /// What webhook mode needs: every key but `max_connections`.
    pub(super) fn check_for_webhook_mode(&self, problems: &mut Vec<Problem>) {
        let missing = [
            ("listen", self.listen.is_none(), "an address such as \"127.0.0.1:8443\""),
            ("public_url", self.public_url.is_none(), "the https:// URL Telegram posts to"),
            ("secret_token_env", self.secret_token_env.is_none(), "the name of the variable holding the secret"),
        ];
        for (key, absent, expected) in missing {
            if absent {
                problems.push(Problem {
                    key: format!("[webhook] {key}"),
                    found: "(not set)".to_owned(),
                    expected: format!("{expected}: [telegram] mode = \"webhook\" needs it"),
                });
            }
        }
    }
}

fn read_public_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Url>, D::Error> {
    let written = value::string(d)?;
    match Url::parse(&written) {
        Ok(url) if url.scheme() == "https" && url.host().is_some() => Ok(Some(url)),
        _ => Err(D::Error::custom("an https:// URL with a host (Telegram posts only to HTTPS)")),
    }
}
