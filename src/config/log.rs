//! `[log]`: what docket writes to stderr (the journal under systemd), and in what form.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::value;

/// `format` when not set.
pub const DEFAULT_FORMAT: LogFormat = LogFormat::Text;
/// `level` when not set: docket's own lines from `info` up, its libraries' from `warn`.
pub const DEFAULT_LEVEL: &str = "info,sqlx=warn,reqwest=warn,hyper=warn";

/// `[log]`: the form and the filter of the log. `RUST_LOG` overrides `level` and
/// `DOCKET_LOG_FORMAT` overrides `format` when set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogConfig {
    /// `format`: `"text"` (one line per event) or `"json"` (one JSON object per line).
    #[serde(deserialize_with = "read_format")]
    pub format: LogFormat,
    /// `level`: a filter in `RUST_LOG`'s syntax (`"info"`, `"debug,sqlx=warn"`); reloadable.
    #[serde(deserialize_with = "read_level")]
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self { format: DEFAULT_FORMAT, level: DEFAULT_LEVEL.to_owned() }
    }
}

/// How each log event is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (fields, span fields included, as keys).
    Json,
}

impl LogFormat {
    /// As written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Json => "json",
        }
    }

    /// Reads `"text"` or `"json"` (any case).
    pub fn parse(written: &str) -> Option<Self> {
        [Self::Text, Self::Json].into_iter().find(|f| f.as_str().eq_ignore_ascii_case(written.trim()))
    }
}

impl Serialize for LogFormat {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

fn read_format<'de, D: Deserializer<'de>>(d: D) -> Result<LogFormat, D::Error> {
    LogFormat::parse(&value::string(d)?).ok_or_else(|| D::Error::custom("\"text\" or \"json\""))
}

fn read_level<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let written = value::string(d)?;
    match tracing_subscriber::EnvFilter::builder().parse(&written) {
        Ok(_) => Ok(written),
        Err(_) => Err(D::Error::custom("a log filter such as \"info\" or \"debug,sqlx=warn\"")),
    }
}
