//! `[telegram]`: where the Bot API is and how to talk to it.

use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use url::Url;

use super::Problem;
use super::value::{self, Between};

/// `mode` when not set.
pub const DEFAULT_MODE: UpdateMode = UpdateMode::Polling;
/// `api_url` when not set (and `TELOXIDE_API_URL` is not either).
pub const DEFAULT_API_URL: &str = "https://api.telegram.org/";
/// `local_api` when not set.
pub const DEFAULT_LOCAL_API: bool = false;
/// `poll_timeout` when not set.
pub const DEFAULT_POLL_TIMEOUT: Duration = Duration::from_secs(30);

/// `[telegram]`: where the Bot API is and how to talk to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TelegramConfig {
    /// `mode`: how updates arrive.
    #[serde(deserialize_with = "read_mode")]
    pub mode: UpdateMode,
    /// `api_url`: the Bot API base URL (a self-hosted server when `local_api`); always ends with
    /// a slash. `TELOXIDE_API_URL` wins over it.
    #[serde(deserialize_with = "value::http_url", serialize_with = "value::write_display")]
    pub api_url: Url,
    /// `local_api`: the server runs with `--local` (bigger limits, absolute file paths).
    #[serde(deserialize_with = "value::boolean")]
    pub local_api: bool,
    /// `poll_timeout`: how long one getUpdates long poll waits; 1 s to 50 s.
    #[serde(deserialize_with = "Between::<1, 50>::duration", serialize_with = "value::write_duration")]
    pub poll_timeout: Duration,
    /// `local_files_url`: with `local_api`, a plain file server in front of the local Bot API
    /// server's disk; absolute getFile paths are fetched as `<local_files_url><file_path>`.
    #[serde(
        deserialize_with = "value::optional_http_url",
        serialize_with = "value::write_optional_display",
        skip_serializing_if = "Option::is_none"
    )]
    pub local_files_url: Option<Url>,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        Self {
            mode: DEFAULT_MODE,
            api_url: Url::parse(DEFAULT_API_URL).expect("the default API URL is a valid URL"),
            local_api: DEFAULT_LOCAL_API,
            poll_timeout: DEFAULT_POLL_TIMEOUT,
            local_files_url: None,
        }
    }
}

impl TelegramConfig {
    /// What only the keys together can tell: `local_files_url` needs `local_api`.
    pub(super) fn check(&self, problems: &mut Vec<Problem>) {
        if self.local_files_url.is_some() && !self.local_api {
            problems.push(Problem {
                key: "[telegram] local_files_url".to_owned(),
                found: "(set)".to_owned(),
                expected: "local_api = true as well: only a local Bot API server answers getFile with a path to serve"
                    .to_owned(),
            });
        }
    }
}

/// How updates reach the bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateMode {
    /// Long polling with getUpdates (any webhook is removed at start).
    Polling,
    /// Telegram posts each update to `[webhook] public_url`, which reaches docket's listener.
    Webhook,
}

fn read_mode<'de, D: Deserializer<'de>>(d: D) -> Result<UpdateMode, D::Error> {
    match value::string(d)?.as_str() {
        "polling" => Ok(UpdateMode::Polling),
        "webhook" => Ok(UpdateMode::Webhook),
        _ => Err(D::Error::custom("\"polling\" or \"webhook\"")),
    }
}
