//! Configuration: a TOML file (optional) plus environment, validated into typed settings.
//!
//! Reading happens in two steps. The file is parsed into a TOML table, then every known key is
//! read and checked here, collecting *all* problems before failing; each problem names the key,
//! the value found and what was expected. Unknown keys are errors too, because a typo in a limit
//! silently falling back to a default is worse than a refusal to start. `docket check-config`
//! and `docket run` share this code path, and a unit test validates `config/docket.toml`.
//!
//! Secrets never come from the file: the bot token is read from `TELOXIDE_TOKEN` only.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::{Table, Value};
use url::Url;

use crate::store::DatabaseUrl;

/// The environment variable naming the config file when `--config` is not given.
pub const CONFIG_ENV: &str = "DOCKET_CONFIG";
/// The environment variable holding the bot token.
pub const TOKEN_ENV: &str = "TELOXIDE_TOKEN";
/// The environment variable that overrides `[telegram] api_url`.
pub const API_URL_ENV: &str = "TELOXIDE_API_URL";

/// Validated settings. Built only by [`Config::from_toml_str`] / [`Config::load`].
#[derive(Debug, Clone)]
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
}

/// `[outbox]`: how messages to people go out, within Telegram's limits.
#[derive(Debug, Clone, Copy)]
pub struct OutboxConfig {
    /// `senders`: concurrent senders (one message in flight each).
    pub senders: usize,
    /// `global_per_second`: messages per second to everyone together (every process on the
    /// database: the send slots are reserved there).
    pub global_per_second: u32,
    /// `private_interval`: least time between two messages to one private chat.
    pub private_interval: Duration,
    /// `group_per_minute`: messages per minute to one group, spread evenly.
    pub group_per_minute: u32,
    /// `max_attempts`: attempts of one message before it is `failed` and admins are alerted.
    pub max_attempts: u32,
}

impl OutboxConfig {
    /// The least time between two messages to `chat`: Telegram's group chats have negative ids.
    pub fn interval(&self, chat: i64) -> Duration {
        if chat < 0 { Duration::from_secs(60) / self.group_per_minute.max(1) } else { self.private_interval }
    }
}

/// `[metrics]`: the Prometheus endpoint.
#[derive(Debug, Clone, Copy, Default)]
pub struct MetricsConfig {
    /// `listen`: address of the `/metrics` HTTP endpoint; `None` = no endpoint.
    pub listen: Option<std::net::SocketAddr>,
}

/// `[budget]`: bytes of in-flight files (downloads, sources, intermediate output) allowed on
/// this machine. Results kept for retention are not counted.
#[derive(Debug, Clone, Copy)]
pub struct BudgetConfig {
    /// `bytes`: the budget.
    pub bytes: u64,
    /// `multiplier`: bytes reserved per byte of source (source + intermediate output).
    pub multiplier: f64,
    /// `max_wait`: after waiting this long for room, a job stops smaller ones from passing it.
    pub max_wait: Duration,
}

/// How updates reach the bot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateMode {
    /// Long polling with getUpdates.
    Polling,
}

/// `[telegram]`: where the Bot API is and how to talk to it.
#[derive(Debug, Clone)]
pub struct TelegramConfig {
    /// `mode`: how updates arrive.
    pub mode: UpdateMode,
    /// `api_url`: the Bot API base URL (a self-hosted server when `local_api`).
    pub api_url: Url,
    /// `local_api`: the server runs with `--local` (bigger limits, absolute file paths).
    pub local_api: bool,
    /// `poll_timeout`: how long one getUpdates long poll waits.
    pub poll_timeout: Duration,
    /// `local_files_url`: with `local_api`, a plain file server in front of the local Bot API
    /// server's disk; absolute getFile paths are fetched as `<local_files_url><file_path>`.
    pub local_files_url: Option<Url>,
}

/// `[storage]`: the database and the data folder.
#[derive(Debug, Clone)]
pub struct StorageConfig {
    /// `database_url`
    pub database_url: DatabaseUrl,
    /// `data_dir`: holds `downloads/`, `work/` and `results/`.
    pub data_dir: PathBuf,
    /// `min_free`: below this much free space on `data_dir`, no download starts.
    pub min_free: u64,
}

/// `[limits]`: byte limits of the two Bot API modes, and how much one chat may queue.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `cloud_download`
    pub cloud_download: u64,
    /// `local_download`
    pub local_download: u64,
    /// `cloud_upload`
    pub cloud_upload: u64,
    /// `local_upload`
    pub local_upload: u64,
    /// `per_chat_queued`: how many of one chat's jobs may wait in `accepted` (not downloading
    /// yet); a document beyond it is refused, with no job.
    pub per_chat_queued: u64,
}

impl Limits {
    /// The largest file the bot can fetch in the current mode.
    pub fn download(&self, local_api: bool) -> u64 {
        if local_api { self.local_download } else { self.cloud_download }
    }

    /// The largest file the bot can send in the current mode.
    pub fn upload(&self, local_api: bool) -> u64 {
        if local_api { self.local_upload } else { self.cloud_upload }
    }
}

/// `[workers]`: pool sizes and lease behaviour.
#[derive(Debug, Clone, Copy)]
pub struct Workers {
    /// `download`: concurrent downloads.
    pub download: usize,
    /// `process`: concurrent processing jobs (default: CPU cores).
    pub process: usize,
    /// `lease`: how long a claim holds a job without renewal.
    pub lease: Duration,
    /// `max_attempts`: attempts before a job fails for good.
    pub max_attempts: u32,
    /// `shutdown_grace`: how long running work may finish after SIGTERM before it is released.
    pub shutdown_grace: Duration,
    /// `per_chat`: how many of one chat's jobs may be in flight at once.
    pub per_chat: usize,
}

/// `[retention]`: how long results are kept.
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// `result_ttl`
    pub result_ttl: Duration,
    /// `janitor_interval`: how often the janitor runs inside `docket run`.
    pub janitor_interval: Duration,
    /// `part_max_age`: unowned `.part` files older than this are deleted.
    pub part_max_age: Duration,
    /// `history`: registered updates, delivered messages (and, with `prune_jobs`, ended jobs)
    /// older than this are deleted.
    pub history: Duration,
    /// `prune_jobs`: whether `failed` and `expired` job rows older than `history` are deleted.
    pub prune_jobs: bool,
    /// `results_bytes`: when results exceed this, the oldest expire early.
    pub results_bytes: Option<u64>,
}

/// `[access]`: who may use the bot, and where.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// `allowed_users`: empty means everyone.
    pub allowed_users: Vec<i64>,
    /// `admins`: receive operational alerts.
    pub admins: Vec<i64>,
    /// `groups`: which messages docket takes in group chats.
    pub groups: GroupMode,
}

/// `[access] groups`: which messages docket takes in groups and supergroups. Private chats are
/// not affected: there every document and command is docket's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GroupMode {
    /// `"addressed"`: commands without a bot name or naming this bot (`/status@ThisBot 12`), and
    /// documents whose caption mentions the bot (`@ThisBot`) or that reply to one of its
    /// messages. Commands for other bots and everything else are ignored.
    #[default]
    Addressed,
    /// `"all"`: every document; commands as with `Addressed`.
    All,
    /// `"off"`: nothing from groups, not even commands.
    Off,
}

impl GroupMode {
    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Addressed => "addressed",
            Self::All => "all",
            Self::Off => "off",
        }
    }
}

impl Access {
    /// Whether `user_id` may use the bot.
    pub fn allows(&self, user_id: i64) -> bool {
        self.allowed_users.is_empty() || self.allowed_users.contains(&user_id) || self.admins.contains(&user_id)
    }
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

/// The bot token. Debug and Display never show it.
#[derive(Clone)]
pub struct BotToken(String);

impl BotToken {
    /// Wraps a token.
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// Reads `TELOXIDE_TOKEN`.
    pub fn from_env() -> Result<Self, ConfigError> {
        match std::env::var(TOKEN_ENV) {
            Ok(t) if looks_like_token(t.trim()) => Ok(Self(t.trim().to_owned())),
            Ok(t) => Err(invalid_env(
                TOKEN_ENV,
                if t.trim().is_empty() { "(empty)" } else { "(hidden)" },
                "a bot token like 123456:ABC-DEF… from @BotFather",
            )),
            Err(_) => Err(invalid_env(TOKEN_ENV, "(not set)", "a bot token like 123456:ABC-DEF… from @BotFather")),
        }
    }

    /// The secret itself; only for building the Bot API client.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The numeric bot id, the part before the colon.
    pub fn bot_id(&self) -> i64 {
        self.0.split(':').next().and_then(|id| id.parse().ok()).unwrap_or(0)
    }
}

impl fmt::Debug for BotToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BotToken({}:***)", self.bot_id())
    }
}

fn looks_like_token(t: &str) -> bool {
    matches!(t.split_once(':'), Some((id, secret)) if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && !secret.is_empty())
}

fn invalid_env(var: &str, found: &str, expected: &str) -> ConfigError {
    ConfigError::Invalid {
        path: None,
        problems: vec![Problem { key: format!("${var}"), found: found.to_owned(), expected: expected.to_owned() }],
    }
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
        let mut r = Reader::default();
        r.only_sections(
            &table,
            &["telegram", "storage", "limits", "workers", "retention", "access", "budget", "metrics", "outbox"],
        );

        let t = r.section(&table, "telegram", &["mode", "api_url", "local_api", "poll_timeout", "local_files_url"]);
        let mode = match r.string(&t, "telegram", "mode").as_deref() {
            None | Some("polling") => UpdateMode::Polling,
            Some(other) => {
                r.problem("[telegram] mode", &quote(other), "\"polling\" (webhook mode is not available yet)");
                UpdateMode::Polling
            }
        };
        let default_api = Url::parse("https://api.telegram.org/").expect("constant URL is valid");
        let api_url = match api_url_override {
            Some(s) => r.url(&format!("${API_URL_ENV}"), s).unwrap_or(default_api),
            None => match r.string(&t, "telegram", "api_url") {
                Some(s) => r.url("[telegram] api_url", &s).unwrap_or(default_api),
                None => default_api,
            },
        };
        let telegram = TelegramConfig {
            mode,
            api_url,
            local_api: r.boolean(&t, "telegram", "local_api").unwrap_or(false),
            poll_timeout: r
                .duration(&t, "telegram", "poll_timeout", Duration::from_secs(1), Duration::from_secs(50))
                .unwrap_or(Duration::from_secs(30)),
            local_files_url: r
                .string(&t, "telegram", "local_files_url")
                .and_then(|s| r.url("[telegram] local_files_url", &s)),
        };
        if telegram.local_files_url.is_some() && !telegram.local_api {
            r.problem(
                "[telegram] local_files_url",
                "(set)",
                "local_api = true as well: only a local Bot API server answers getFile with a path to serve",
            );
        }

        let s = r.section(&table, "storage", &["database_url", "data_dir", "min_free"]);
        let database_url = match r.string(&s, "storage", "database_url") {
            None => DatabaseUrl::Sqlite(PathBuf::from("data/docket.db")),
            Some(url) => DatabaseUrl::parse(&url).unwrap_or_else(|expected| {
                r.problem("[storage] database_url", &quote(&url), &expected);
                DatabaseUrl::Sqlite(PathBuf::from("data/docket.db"))
            }),
        };
        let data_dir = match r.string(&s, "storage", "data_dir") {
            Some(d) if d.trim().is_empty() => {
                r.problem("[storage] data_dir", "\"\"", "a folder path");
                PathBuf::from("data")
            }
            Some(d) => PathBuf::from(d),
            None => PathBuf::from("data"),
        };
        let min_free = r.size(&s, "storage", "min_free").unwrap_or(1024 * 1024 * 1024);
        let storage = StorageConfig { database_url, data_dir, min_free };

        let l = r.section(
            &table,
            "limits",
            &["cloud_download", "local_download", "cloud_upload", "local_upload", "per_chat_queued"],
        );
        let limits = Limits {
            cloud_download: r.size(&l, "limits", "cloud_download").unwrap_or(20 * 1024 * 1024),
            local_download: r.size(&l, "limits", "local_download").unwrap_or(2_000_000_000),
            cloud_upload: r.size(&l, "limits", "cloud_upload").unwrap_or(50_000_000),
            local_upload: r.size(&l, "limits", "local_upload").unwrap_or(2_000_000_000),
            per_chat_queued: r.count(&l, "limits", "per_chat_queued", 1, 100_000).map_or(50, |n| n as u64),
        };

        let w = r.section(
            &table,
            "workers",
            &["download", "process", "lease", "max_attempts", "shutdown_grace", "per_chat"],
        );
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        let workers = Workers {
            download: r.count(&w, "workers", "download", 1, 256).unwrap_or(4),
            process: r.count(&w, "workers", "process", 1, 256).unwrap_or(cores),
            lease: r
                .duration(&w, "workers", "lease", Duration::from_secs(2), Duration::from_secs(3600))
                .unwrap_or(Duration::from_secs(30)),
            max_attempts: r.count(&w, "workers", "max_attempts", 1, 1000).map(|n| n as u32).unwrap_or(5),
            shutdown_grace: r
                .duration(&w, "workers", "shutdown_grace", Duration::ZERO, Duration::from_secs(3600))
                .unwrap_or(Duration::from_secs(20)),
            per_chat: r.count(&w, "workers", "per_chat", 1, 1000).unwrap_or(2),
        };

        let b = r.section(&table, "budget", &["bytes", "multiplier", "max_wait"]);
        let budget = BudgetConfig {
            bytes: r.size(&b, "budget", "bytes").unwrap_or(16 * 1024 * 1024 * 1024),
            multiplier: r.ratio(&b, "budget", "multiplier", 1.0, 10.0).unwrap_or(2.0),
            max_wait: r
                .duration(&b, "budget", "max_wait", Duration::ZERO, Duration::from_secs(86_400))
                .unwrap_or(Duration::from_secs(60)),
        };

        let re = r.section(
            &table,
            "retention",
            &["result_ttl", "janitor_interval", "part_max_age", "history", "prune_jobs", "results_bytes"],
        );
        let year = Duration::from_secs(365 * 86_400);
        let retention = Retention {
            result_ttl: r
                .duration(&re, "retention", "result_ttl", Duration::from_secs(1), Duration::from_secs(3650 * 86_400))
                .unwrap_or(Duration::from_secs(7 * 86_400)),
            janitor_interval: r
                .duration(&re, "retention", "janitor_interval", Duration::from_secs(1), Duration::from_secs(86_400))
                .unwrap_or(Duration::from_secs(600)),
            part_max_age: r
                .duration(&re, "retention", "part_max_age", Duration::from_secs(1), year)
                .unwrap_or(Duration::from_secs(6 * 3600)),
            // Telegram redelivers an unconfirmed update for up to 24 hours: the registry must
            // remember well beyond that.
            history: r
                .duration(
                    &re,
                    "retention",
                    "history",
                    Duration::from_secs(2 * 86_400),
                    Duration::from_secs(10 * 365 * 86_400),
                )
                .unwrap_or(Duration::from_secs(30 * 86_400)),
            prune_jobs: r.boolean(&re, "retention", "prune_jobs").unwrap_or(false),
            results_bytes: r.size(&re, "retention", "results_bytes"),
        };

        let a = r.section(&table, "access", &["allowed_users", "admins", "groups"]);
        let groups = match r.string(&a, "access", "groups").as_deref() {
            None | Some("addressed") => GroupMode::Addressed,
            Some("all") => GroupMode::All,
            Some("off") => GroupMode::Off,
            Some(other) => {
                r.problem("[access] groups", &quote(other), "one of \"addressed\", \"all\" or \"off\"");
                GroupMode::Addressed
            }
        };
        let access = Access {
            allowed_users: r.id_list(&a, "access", "allowed_users"),
            admins: r.id_list(&a, "access", "admins"),
            groups,
        };

        let m = r.section(&table, "metrics", &["listen"]);
        let metrics = MetricsConfig {
            listen: r.string(&m, "metrics", "listen").and_then(|s| match s.parse() {
                Ok(addr) => Some(addr),
                Err(_) => {
                    r.problem("[metrics] listen", &quote(&s), "an address and port such as \"127.0.0.1:9464\"");
                    None
                }
            }),
        };

        let o = r.section(
            &table,
            "outbox",
            &["senders", "global_per_second", "private_interval", "group_per_minute", "max_attempts"],
        );
        let outbox = OutboxConfig {
            senders: r.count(&o, "outbox", "senders", 1, 64).unwrap_or(4),
            global_per_second: r.count(&o, "outbox", "global_per_second", 1, 1000).map_or(25, |n| n as u32),
            private_interval: r
                .duration(&o, "outbox", "private_interval", Duration::ZERO, Duration::from_secs(60))
                .unwrap_or(Duration::from_secs(1)),
            group_per_minute: r.count(&o, "outbox", "group_per_minute", 1, 6000).map_or(20, |n| n as u32),
            max_attempts: r.count(&o, "outbox", "max_attempts", 1, 100).map_or(8, |n| n as u32),
        };

        if r.problems.is_empty() {
            Ok(Self { telegram, storage, limits, workers, retention, access, budget, metrics, outbox })
        } else {
            Err(ConfigError::Invalid { path: path.map(Path::to_path_buf), problems: r.problems })
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
}

fn quote(s: &str) -> String {
    format!("{s:?}")
}

/// Reads keys out of the TOML table, recording every problem with the key's full name.
#[derive(Default)]
struct Reader {
    problems: Vec<Problem>,
}

impl Reader {
    fn problem(&mut self, key: &str, found: &str, expected: &str) {
        self.problems.push(Problem { key: key.to_owned(), found: found.to_owned(), expected: expected.to_owned() });
    }

    fn only_sections(&mut self, root: &Table, known: &[&str]) {
        for (name, value) in root {
            if !known.contains(&name.as_str()) {
                self.problem(name, &short(value), &format!("one of the sections [{}]", known.join("], [")));
            } else if !value.is_table() {
                self.problem(name, &short(value), &format!("a [{name}] section"));
            }
        }
    }

    fn section(&mut self, root: &Table, name: &str, keys: &[&str]) -> Table {
        let Some(Value::Table(t)) = root.get(name) else { return Table::new() };
        for (key, value) in t {
            if !keys.contains(&key.as_str()) {
                self.problem(
                    &format!("[{name}] {key}"),
                    &short(value),
                    &format!("one of the keys {}", keys.join(", ")),
                );
            }
        }
        t.clone()
    }

    fn string(&mut self, t: &Table, section: &str, key: &str) -> Option<String> {
        match t.get(key)? {
            Value::String(s) => Some(s.clone()),
            other => {
                self.problem(&format!("[{section}] {key}"), &short(other), "a string in quotes");
                None
            }
        }
    }

    fn boolean(&mut self, t: &Table, section: &str, key: &str) -> Option<bool> {
        match t.get(key)? {
            Value::Boolean(b) => Some(*b),
            other => {
                self.problem(&format!("[{section}] {key}"), &short(other), "true or false");
                None
            }
        }
    }

    fn url(&mut self, key: &str, s: &str) -> Option<Url> {
        match Url::parse(s) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
                // teloxide joins method paths onto the base; a missing trailing slash would drop
                // the last path segment of a self-hosted server's URL.
                if u.path().ends_with('/') { Some(u) } else { Url::parse(&format!("{u}/")).ok() }
            }
            _ => {
                self.problem(key, &quote(s), "an http:// or https:// URL such as https://api.telegram.org");
                None
            }
        }
    }

    fn size(&mut self, t: &Table, section: &str, key: &str) -> Option<u64> {
        let key_name = format!("[{section}] {key}");
        let expected = "a size such as \"20 MiB\" or \"2 GB\", greater than zero";
        match t.get(key)? {
            Value::String(s) => match s.trim().parse::<bytesize::ByteSize>() {
                Ok(b) if b.as_u64() > 0 => Some(b.as_u64()),
                _ => {
                    self.problem(&key_name, &quote(s), expected);
                    None
                }
            },
            Value::Integer(n) if *n > 0 => Some(*n as u64),
            other => {
                self.problem(&key_name, &short(other), expected);
                None
            }
        }
    }

    fn duration(&mut self, t: &Table, section: &str, key: &str, min: Duration, max: Duration) -> Option<Duration> {
        let key_name = format!("[{section}] {key}");
        let expected = format!(
            "a duration such as \"30s\", \"30m\" or \"7d\", from {} to {}",
            humantime::format_duration(min),
            humantime::format_duration(max)
        );
        match t.get(key)? {
            Value::String(s) => match humantime::parse_duration(s.trim()) {
                Ok(d) if d >= min && d <= max => Some(d),
                _ => {
                    self.problem(&key_name, &quote(s), &expected);
                    None
                }
            },
            other => {
                self.problem(&key_name, &short(other), &expected);
                None
            }
        }
    }

    fn count(&mut self, t: &Table, section: &str, key: &str, min: i64, max: i64) -> Option<usize> {
        match t.get(key)? {
            Value::Integer(n) if (min..=max).contains(n) => usize::try_from(*n).ok(),
            other => {
                self.problem(
                    &format!("[{section}] {key}"),
                    &short(other),
                    &format!("a whole number from {min} to {max}"),
                );
                None
            }
        }
    }

    fn ratio(&mut self, t: &Table, section: &str, key: &str, min: f64, max: f64) -> Option<f64> {
        let v = t.get(key)?;
        let n = match v {
            Value::Float(f) => Some(*f),
            Value::Integer(i) => Some(*i as f64),
            _ => None,
        };
        match n {
            Some(n) if (min..=max).contains(&n) => Some(n),
            _ => {
                self.problem(
                    &format!("[{section}] {key}"),
                    &short(v),
                    &format!("a number from {min} to {max}, such as 2.0"),
                );
                None
            }
        }
    }

    fn id_list(&mut self, t: &Table, section: &str, key: &str) -> Vec<i64> {
        let Some(value) = t.get(key) else { return Vec::new() };
        let ids: Option<Vec<i64>> = value.as_array().and_then(|a| a.iter().map(Value::as_integer).collect());
        ids.unwrap_or_else(|| {
            self.problem(
                &format!("[{section}] {key}"),
                &short(value),
                "a list of numeric Telegram user ids, such as [12345, 67890]",
            );
            Vec::new()
        })
    }
}

/// A value as written in TOML, shortened for messages.
fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 { format!("{}…", s.chars().take(60).collect::<String>()) } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<Problem> {
        match Config::from_toml_str(text, None, None) {
            Err(ConfigError::Invalid { problems, .. }) => problems,
            other => panic!("expected invalid config, got {other:?}"),
        }
    }

    #[test]
    fn no_file_at_all_gives_working_defaults() {
        let c = Config::from_toml_str("", None, None).expect("defaults are valid");
        assert_eq!(c.storage.database_url, DatabaseUrl::Sqlite(PathBuf::from("data/docket.db")));
        assert_eq!(c.storage.data_dir, PathBuf::from("data"));
        assert_eq!(c.limits.cloud_download, 20 * 1024 * 1024);
        assert_eq!(c.limits.cloud_upload, 50_000_000);
        assert_eq!(c.download_limit(), 20 * 1024 * 1024);
        assert_eq!(c.retention.result_ttl, Duration::from_secs(7 * 86_400));
        assert_eq!(c.telegram.api_url.as_str(), "https://api.telegram.org/");
        assert!(c.access.allows(42));
    }

    #[test]
    fn the_documented_example_is_valid() {
        let text = include_str!("../config/docket.toml");
        let c = Config::from_toml_str(text, Some(Path::new("config/docket.toml")), None)
            .expect("config/docket.toml must validate");
        assert_eq!(c.telegram.mode, UpdateMode::Polling);
    }

    #[test]
    fn every_problem_names_its_key_value_and_expectation() {
        let p = problems(
            r#"
            [workers]
            download = 0
            [limits]
            cloud_download = "twenty megs"
            [retention]
            result_ttl = "forever"
            [storage]
            database_url = "mysql://x"
            "#,
        );
        let text: Vec<String> = p.iter().map(ToString::to_string).collect();
        assert_eq!(p.len(), 4, "{text:#?}");
        assert!(text.iter().any(|t| t.starts_with("[workers] download = 0: expected a whole number from 1")));
        assert!(text.iter().any(|t| t.starts_with("[limits] cloud_download = \"twenty megs\": expected a size")));
        assert!(text.iter().any(|t| t.starts_with("[retention] result_ttl = \"forever\": expected a duration")));
        assert!(text.iter().any(|t| t.starts_with("[storage] database_url = \"mysql://x\"")));
    }

    #[test]
    fn unknown_keys_and_sections_are_refused() {
        let p = problems("[workers]\ndownlaod = 3\n[telegarm]\nmode = \"polling\"\n");
        assert!(p.iter().any(|p| p.key == "[workers] downlaod"), "{p:?}");
        assert!(p.iter().any(|p| p.key == "telegarm"), "{p:?}");
    }

    #[test]
    fn sizes_and_durations_take_human_units() {
        let c = Config::from_toml_str(
            "[limits]\ncloud_download = \"2 GB\"\nlocal_upload = \"1.5 GiB\"\n[retention]\nresult_ttl = \"30m\"\n",
            None,
            None,
        )
        .expect("valid");
        assert_eq!(c.limits.cloud_download, 2_000_000_000);
        assert_eq!(c.limits.local_upload, 1_610_612_736);
        assert_eq!(c.retention.result_ttl, Duration::from_secs(1800));
    }

    #[test]
    fn the_group_mode_defaults_to_addressed_and_is_checked() {
        assert_eq!(Config::from_toml_str("", None, None).expect("valid").access.groups, GroupMode::Addressed);
        for (written, mode) in [("addressed", GroupMode::Addressed), ("all", GroupMode::All), ("off", GroupMode::Off)] {
            let c = Config::from_toml_str(&format!("[access]\ngroups = {written:?}\n"), None, None).expect("valid");
            assert_eq!(c.access.groups, mode);
            assert_eq!(mode.as_str(), written);
        }
        for bad in ["\"Addressed\"", "\"none\"", "true", "1"] {
            let p = problems(&format!("[access]\ngroups = {bad}\n"));
            assert_eq!(p.len(), 1, "{p:?}");
            assert_eq!(p[0].key, "[access] groups");
        }
    }

    #[test]
    fn the_per_chat_queue_cap_defaults_to_50_and_is_checked() {
        assert_eq!(Config::from_toml_str("", None, None).expect("valid").limits.per_chat_queued, 50);
        let c = Config::from_toml_str("[limits]\nper_chat_queued = 3\n", None, None).expect("valid");
        assert_eq!(c.limits.per_chat_queued, 3);
        for bad in ["0", "-1", "100001", "\"many\"", "2.5"] {
            let p = problems(&format!("[limits]\nper_chat_queued = {bad}\n"));
            assert_eq!(p.len(), 1, "{p:?}");
            assert_eq!(p[0].key, "[limits] per_chat_queued");
            assert_eq!(p[0].expected, "a whole number from 1 to 100000");
        }
    }

    #[test]
    fn local_api_switches_limits() {
        let c = Config::from_toml_str("[telegram]\nlocal_api = true\n", None, None).expect("valid");
        assert_eq!(c.download_limit(), 2_000_000_000);
        assert_eq!(c.upload_limit(), 2_000_000_000);
    }

    #[test]
    fn api_url_env_wins_and_gets_a_trailing_slash() {
        let c = Config::from_toml_str(
            "[telegram]\napi_url = \"https://example.invalid/\"\n",
            None,
            Some("http://127.0.0.1:8081/custom"),
        )
        .expect("valid");
        assert_eq!(c.telegram.api_url.as_str(), "http://127.0.0.1:8081/custom/");
        let p = problems("[telegram]\napi_url = \"ftp://x\"\n");
        assert_eq!(p[0].key, "[telegram] api_url");
    }

    #[test]
    fn token_debug_hides_the_secret() {
        let t = BotToken::new("123456:SECRET-PART");
        assert_eq!(t.bot_id(), 123456);
        assert!(!format!("{t:?}").contains("SECRET"));
        assert!(looks_like_token("1:a"));
        assert!(!looks_like_token("nonsense"));
    }
}
