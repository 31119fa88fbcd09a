//! Configuration: a TOML file (optional) plus environment, validated into typed settings.
//!
//! Each section of the file is one struct, in a module of its own ([`telegram`], [`storage`],
//! [`limits`], [`workers`], [`retention`], [`access`], [`budget`], [`metrics`], [`outbox`],
//! [`processing`], [`log`]):
//! the struct's fields are the section's keys, each with its bounds beside it, its default is a
//! named constant there, and serde reads and writes it, sizes and durations in their human
//! forms ("20 MiB", "30s"). That struct is the one place a key is defined: reading the file,
//! printing the effective configuration (`docket check-config`, [`Config::to_toml`]) and the test
//! that holds `config/docket.toml` to the defaults all follow from it.
//!
//! Reading collects *all* problems before failing; each names the key, the value found and what
//! was expected. Unknown keys are errors too, because a typo in a limit silently falling back to
//! a default is worse than a refusal to start. `docket check-config` and `docket run` share this
//! code path.
//!
//! Secrets never come from the file: the bot token is read by [`crate::telegram::token`], and a
//! database password in `[storage] database_url` is never printed.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::{Table, Value};

pub mod access;
pub mod budget;
pub mod limits;
pub mod log;
pub mod metrics;
pub mod node;
pub mod outbox;
pub mod processing;
mod read;
pub mod retention;
mod services;
pub mod storage;
pub mod telegram;
mod value;
pub mod webhook;
pub mod workers;

pub use access::{Access, GroupMode};
pub use budget::BudgetConfig;
pub use limits::Limits;
pub use log::{LogConfig, LogFormat};
pub use metrics::MetricsConfig;
pub use node::NodeConfig;
pub use outbox::OutboxConfig;
pub use processing::{ExternalToolConfig, ProcessingConfig};
pub use retention::Retention;
pub use storage::StorageConfig;
pub use telegram::{TelegramConfig, UpdateMode};
pub use webhook::WebhookConfig;
pub use workers::Workers;

/// The bot token lives in the Telegram adapter; re-exported for callers that knew it here.
pub use crate::store::DatabaseUrl;
pub use crate::telegram::token::{BotToken, TOKEN_ENV};

/// The environment variable naming the config file when `--config` is not given.
pub const CONFIG_ENV: &str = "DOCKET_CONFIG";
/// The environment variable that overrides `[telegram] api_url`.
pub const API_URL_ENV: &str = "TELOXIDE_API_URL";

/// Seconds in a minute, an hour, a day and a year: the units of duration bounds.
const MINUTE: u64 = 60;
const HOUR: u64 = 3600;
const DAY: u64 = 86_400;
const YEAR: u64 = 365 * DAY;

/// Validated settings: the file's sections. Built by [`Config::from_toml_str`] /
/// [`Config::load`]; [`Config::default`] is what an empty file gives.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `[telegram]`
    pub telegram: TelegramConfig,
    /// `[storage]`
    pub storage: StorageConfig,
    /// `[limits]`
    pub limits: Limits,
    /// `[workers]`
    pub workers: Workers,
    /// `[retention]`
    pub retention: Retention,
    /// `[access]`
    pub access: Access,
    /// `[budget]`
    pub budget: BudgetConfig,
    /// `[metrics]`
    pub metrics: MetricsConfig,
    /// `[outbox]`
    pub outbox: OutboxConfig,
    /// `[processing]`
    pub processing: ProcessingConfig,
    /// `[log]`
    pub log: LogConfig,
    /// `[webhook]`
    pub webhook: WebhookConfig,
    /// `[node]`
    pub node: NodeConfig,
}

/// One thing wrong with the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The key, as `[section] key` or `$ENV_VAR`.
    pub key: String,
    /// What was found, as written.
    pub found: String,
    /// What is expected instead.
    pub expected: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = {}: expected {}", self.key, self.found, self.expected)
    }
}

/// Why the configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML.
    #[error("config file {path} is not valid TOML: {message}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message with line and column.
        message: String,
    },
    /// One or more keys have bad values.
    #[error("invalid configuration{}:\n{}", origin(.path), list(.problems))]
    Invalid {
        /// The file, when there was one.
        path: Option<PathBuf>,
        /// Every problem found.
        problems: Vec<Problem>,
    },
}

fn origin(path: &Option<PathBuf>) -> String {
    path.as_ref().map(|p| format!(" in {}", p.display())).unwrap_or_default()
}

fn list(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n")
}

impl Config {
    /// Loads from `path` (or `$DOCKET_CONFIG`, or built-in defaults when neither is given) and
    /// applies `TELOXIDE_API_URL`.
    pub fn load(path: Option<&Path>) -> Result<Self, ConfigError> {
        let env_path = std::env::var_os(CONFIG_ENV).map(PathBuf::from);
        let path = path.map(Path::to_path_buf).or(env_path);
        let api_url_env = std::env::var(API_URL_ENV).ok().filter(|s| !s.trim().is_empty());
        match path {
            None => Self::from_toml_str("", None, api_url_env.as_deref()),
            Some(path) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|source| ConfigError::Read { path: path.clone(), source })?;
                Self::from_toml_str(&text, Some(&path), api_url_env.as_deref())
            }
        }
    }

    /// Parses and validates TOML text. `api_url_override` is the value of `TELOXIDE_API_URL`.
    pub fn from_toml_str(text: &str, path: Option<&Path>, api_url_override: Option<&str>) -> Result<Self, ConfigError> {
        let table: Table = text.parse().map_err(|e: toml::de::Error| ConfigError::Syntax {
            path: path.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("(text)")),
            message: e.to_string(),
        })?;
        let mut problems = Vec::new();
        let mut config: Self = read::read(table, &mut problems);
        if let Some(s) = api_url_override {
            match value::http_url_from(s) {
                Ok(url) => config.telegram.api_url = url,
                Err(expected) => problems.push(Problem {
                    key: format!("${API_URL_ENV}"),
                    found: read::quote(s),
                    expected: expected.to_owned(),
                }),
            }
        }
        config.telegram.check(&mut problems);
        config.processing.check(&mut problems);
        if config.telegram.mode == UpdateMode::Webhook {
            config.webhook.check_for_webhook_mode(&mut problems);
        }
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid { path: path.map(Path::to_path_buf), problems })
        }
    }

    /// The download limit of the current mode.
    pub fn download_limit(&self) -> u64 {
        self.limits.download(self.telegram.local_api)
    }

    /// The upload limit of the current mode.
    pub fn upload_limit(&self) -> u64 {
        self.limits.upload(self.telegram.local_api)
    }

    /// Every section and its keys, in the order of [`Config`]'s fields and of each section's.
    pub fn keys() -> [(&'static str, &'static [&'static str]); 13] {
        use read::keys_of;
        [
            ("telegram", keys_of::<TelegramConfig>()),
            ("storage", keys_of::<StorageConfig>()),
            ("limits", keys_of::<Limits>()),
            ("workers", keys_of::<Workers>()),
            ("retention", keys_of::<Retention>()),
            ("access", keys_of::<Access>()),
            ("budget", keys_of::<BudgetConfig>()),
            ("metrics", keys_of::<MetricsConfig>()),
            ("outbox", keys_of::<OutboxConfig>()),
            ("processing", keys_of::<ProcessingConfig>()),
            ("log", keys_of::<LogConfig>()),
            ("webhook", keys_of::<WebhookConfig>()),
            ("node", keys_of::<NodeConfig>()),
        ]
    }

    /// The configuration as TOML, every section and every key in the order of [`Config::keys`]:
    /// read back, it gives the same settings. An optional key that is not set is written as a
    /// comment, `# key = (not set)`, so that no key is missing. Passwords in
    /// `[storage] database_url` are written as `***` (so those do not read back).
    pub fn to_toml(&self) -> String {
        let table = Table::try_from(self)
            .expect("every value is written as a string, a bool, a bounded number or a list of ids, all valid TOML");
        let mut out = String::new();
        for (section, keys) in Self::keys() {
            let values = table.get(section).and_then(Value::as_table);
            out.push_str(&format!("[{section}]\n"));
            for key in keys {
                match values.and_then(|t| t.get(*key)) {
                    Some(value) => out.push_str(&format!("{key} = {value}\n")),
                    None => out.push_str(&format!("# {key} = (not set)\n")),
                }
            }
            out.push('\n');
        }
        out.truncate(out.trim_end().len() + 1);
        out
    }
}

#[cfg(test)]
mod tests;
