//! A fake Telegram Bot API server for end-to-end tests.
//!
//! [`FakeTelegram::start`] binds an axum router on `127.0.0.1:0` and serves it from a spawned
//! tokio task until the last clone of the handle is dropped. Point a real teloxide client at it
//! with `Bot::new(TEST_TOKEN).set_api_url(fake.api_url())`; downloads go to
//! `{api_url}file/bot{token}/{file_path}` exactly as on `api.telegram.org`.
//!
//! What it fakes, with the real API's envelopes (`{"ok":true,"result":…}` or
//! `{"ok":false,"error_code":…,"description":…,"parameters":…}`) and status codes:
//! - routes `/bot{token}/{method}` (GET or POST; JSON, urlencoded or multipart bodies; method
//!   names matched case-insensitively because teloxide sends `SendMessage`) and
//!   `GET /file/bot{token}/{*path}`; a wrong token answers 401, an unknown method 404;
//! - `getMe`, `getUpdates` (a queue confirmed by `offset`, long polling with `timeout`),
//!   `getFile` (a fresh, expiring `file_path` per call, a download size limit), file downloads,
//!   `sendMessage`, `editMessageText`, `sendDocument` (upload or file_id), `sendChatAction`,
//!   `getWebhookInfo`, `deleteWebhook`, `setMyCommands`, `getMyCommands`, `deleteMyCommands`,
//!   `close` and `logOut`;
//! - scripted failures: [`Fault`]s per method (optionally per chat), consumed in order,
//!   [`DownloadFault`]s for the next N downloads, and blocked chats;
//! - who may poll: `setWebhook`/`deleteWebhook`/`getWebhookInfo` keep a webhook, and getUpdates
//!   answers 409 while one is set; a long poll overtaken by a newer getUpdates answers 409
//!   "terminated by other getUpdates request"; [`FakeTelegram::revoke_token`] makes every call
//!   answer 401, as after a /revoke in BotFather; [`Fault::Hold`] holds an answer until the test
//!   lets it go and tells whether the client gave up on it first.
//!
//! Every API request is recorded as a [`Call`] (canonical method name, parameters as JSON,
//! uploaded file, answered status). Tests never sleep: they wait for what they expect with
//! [`FakeTelegram::wait_for_call`], which wakes on every recorded call and panics with a
//! listing of all calls when its deadline passes. File downloads are not API calls: they are
//! counted by [`FakeTelegram::downloads`] and listed, with the file each asked for, by
//! [`FakeTelegram::download_log`].
//!
//! ```ignore
//! let fake = FakeTelegram::start().await;
//! let file = fake.add_file(pdf_bytes);
//! fake.push_update(fake.document_update(42, 42, &file, Some("in.pdf"), Some("application/pdf")));
//! fake.fail_next("sendMessage", Fault::RetryAfter(1));
//! // … run the bot against fake.api_url() …
//! let reply = fake.wait_for_call("sendMessage", |c| c.status == 200, Duration::from_secs(5)).await;
//! ```
//!
//! Not faked: delivering updates to a webhook, inline keyboards beyond echoing `reply_markup`,
//! entity parsing for `parse_mode`, and `allowed_updates` filtering.

#![allow(dead_code, reason = "shared test support: not every test uses every helper")]

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, FromRequest, Multipart, Path, Request, State as AxumState};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use futures_util::{StreamExt as _, stream};
use serde_json::{Map, Value, json};
use tokio::sync::{oneshot, watch};
use url::Url;

/// The bot token the fake accepts; any other token gets 401 Unauthorized.
pub const TEST_TOKEN: &str = "123456:TEST-docket-fake-token";

/// Default for [`FakeTelegram::set_bot_username`].
pub const DEFAULT_BOT_USERNAME: &str = "docket_test_bot";
/// Default for [`FakeTelegram::set_download_limit`]: the Bot API's 20 MiB getFile limit.
const DEFAULT_DOWNLOAD_LIMIT: u64 = 20 * 1024 * 1024;
/// Default for [`FakeTelegram::set_link_ttl`]: Telegram keeps a `file_path` valid for 1 hour.
const DEFAULT_LINK_TTL: Duration = Duration::from_secs(3600);
/// The Bot API's upload limit for bots; larger uploads get 413.
const UPLOAD_LIMIT: usize = 50 * 1024 * 1024;
/// Telegram's limits on message text and captions, in characters.
const MAX_TEXT_CHARS: usize = 4096;
const MAX_CAPTION_CHARS: usize = 1024;

/// Canonical (lowerCamelCase) names of the methods the fake serves.
const METHODS: &[&str] = &[
    "getMe",
    "getUpdates",
    "getFile",
    "sendMessage",
    "editMessageText",
    "sendDocument",
    "sendChatAction",
    "getWebhookInfo",
    "setWebhook",
    "deleteWebhook",
    "setMyCommands",
    "getMyCommands",
    "deleteMyCommands",
    "close",
    "logOut",
];

/// Form and multipart fields that stay strings in [`Call::params`] even when they look like
/// numbers or JSON (a message text of "42" is text, not a number).
const STRING_FIELDS: &[&str] =
    &["text", "caption", "document", "file_id", "title", "description", "quote", "url", "parse_mode"];

/// A handle on a running fake Bot API server. Clones share the server and its state. When the
/// last clone is dropped the server stops accepting connections, closes idle ones and answers
/// long polls in flight with `[]`.
#[derive(Clone)]
pub struct FakeTelegram {
    inner: Arc<Inner>,
}

/// A file the fake knows, as returned by [`FakeTelegram::add_file`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRef {
    /// The id to put in updates and pass to getFile or sendDocument.
    pub file_id: String,
    /// The stable unique id Telegram would report for the same content.
    pub file_unique_id: String,
    /// The real size of the stored bytes.
    pub size: u64,
}

/// One recorded API request (the token is not part of it, so listings never show it).
///
/// A call is recorded once the fake has decided its answer, before sending it; getUpdates is
/// recorded after applying its `offset` but before its long poll waits, so tests see offset
/// confirmations at once.
#[derive(Clone, Debug)]
pub struct Call {
    /// Canonical lowerCamelCase method name ("getUpdates", "sendMessage", …); for an unknown
    /// method, the name as the client sent it.
    pub method: String,
    /// The request's parameters as a JSON object: JSON bodies as sent; query, form and multipart
    /// text fields with numbers, booleans and JSON objects parsed (except text-like fields such
    /// as `text` and `caption`, which stay strings).
    pub params: Value,
    /// The uploaded file of a sendDocument request, if it carried one (recorded even when the
    /// call failed).
    pub upload: Option<Upload>,
    /// The HTTP status the fake answered (or, for [`Fault::ResponseLost`], started to answer).
    /// A getUpdates long poll overtaken by a newer one is recorded with 200 and changed to 409
    /// when it answers.
    pub status: u16,
    /// When the request arrived.
    pub at: Instant,
}

/// A file part uploaded with sendDocument.
#[derive(Clone, Debug)]
pub struct Upload {
    /// The part's file name, if the client sent one.
    pub file_name: Option<String>,
    /// The uploaded bytes.
    pub bytes: Vec<u8>,
}

/// A scripted failure for the next API call of one method; see [`FakeTelegram::fail_next`].
#[derive(Clone, Debug)]
pub enum Fault {
    /// 429 "Too Many Requests: retry after N" with `parameters.retry_after = N` (seconds).
    RetryAfter(u32),
    /// 403 with this description, e.g. "Forbidden: bot was blocked by the user".
    Forbidden(String),
    /// 400 with this description, e.g. "Bad Request: chat not found".
    BadRequest(String),
    /// This 5xx status with a JSON error body. teloxide sleeps 10 s after any 5xx.
    ServerError(u16),
    /// This 5xx status with an nginx-style HTML body, as from a failing proxy.
    HtmlServerError(u16),
    /// 400 "group chat was upgraded to a supergroup chat" with `parameters.migrate_to_chat_id`.
    MigrateTo(i64),
    /// The call is performed and recorded (status 200), but the connection is cut while the
    /// answer is being sent, so the client sees a network error.
    ResponseLost,
    /// Wait this long, then answer normally.
    Delay(Duration),
    /// The call is performed and recorded (status 200) at once, but its answer is held until
    /// [`Hold::release`]; see [`FakeTelegram::hold_next_for_chat`].
    Hold(Hold),
}

/// One file download request, as recorded by the fake; see [`FakeTelegram::download_log`].
#[derive(Clone, Debug)]
pub struct Download {
    /// The file the requested `file_path` was minted for, if the path was known and unexpired.
    pub file_id: Option<String>,
    /// When the request arrived (comparable with [`Call::at`]).
    pub at: Instant,
    /// The HTTP status the fake answered.
    pub status: u16,
}

/// A scripted failure for file downloads; see [`FakeTelegram::fail_downloads`].
#[derive(Clone, Debug)]
pub enum DownloadFault {
    /// Announce the full Content-Length but cut the connection after this many bytes.
    CutAfter(u64),
    /// Send the body at about this many bytes per second.
    Throttle {
        /// Throughput cap; 0 is treated as 1.
        bytes_per_sec: u64,
    },
    /// Serve these bytes (with a matching Content-Length) instead of the file, so the download
    /// disagrees with the `file_size` getFile promised.
    ServeBytes(Vec<u8>),
}

struct Inner {
    shared: Arc<Shared>,
    addr: SocketAddr,
    /// Dropping it starts axum's graceful shutdown: no new connections, idle keep-alive
    /// connections closed, requests in flight finished.
    _stop_serving: oneshot::Sender<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Long polls in flight answer `[]` at once instead of holding their connection open.
        self.shared.state().stopped = true;
        self.shared.updates_seen.send_modify(|n| *n += 1);
    }
}

/// State shared between the handle and the server task.
struct Shared {
    token: String,
    bot_id: i64,
    /// The bot's username in getMe and in the bot's messages; see [`FakeTelegram::set_bot_username`].
    /// Behind its own lock: it is read while `state` is held.
    bot_username: Mutex<String>,
    state: Mutex<FakeState>,
    /// Bumped on every recorded call; `wait_for_call` watches it.
    calls_seen: watch::Sender<u64>,
    /// Bumped on every pushed update; long polls watch it.
    updates_seen: watch::Sender<u64>,
}

struct FakeState {
    updates: VecDeque<Value>,
    next_update_id: i64,
    files: HashMap<String, StoredFile>,
    next_file: u64,
    links: HashMap<String, Link>,
    next_link: u64,
    download_limit: u64,
    link_ttl: Duration,
    /// `--local` mode: getFile writes the file under this folder and answers its absolute path.
    local_dir: Option<std::path::PathBuf>,
    chats: HashMap<i64, ChatLog>,
    faults: Vec<ScriptedFault>,
    download_faults: Vec<ScriptedDownloadFault>,
    blocked: HashMap<i64, String>,
    calls: Vec<Arc<Call>>,
    downloads: usize,
    download_log: Vec<Download>,
    commands: Value,
    /// Set when the last handle is dropped.
    stopped: bool,
    /// Telegram's flood limits, as this fake enforces them.
    flood: FloodLimits,
    /// Arrival times of the calls that count against the limits, per chat.
    sends: Vec<(Instant, i64)>,
    /// Every broken limit, described.
    violations: Vec<String>,
    /// Webhook, long polls in flight, revoked token.
    polling: PollingState,
}

/// Telegram's flood limits (<https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this>):
/// about one message a second to a private chat, 20 a minute to a group, about 30 a second in
/// all. Sends and edits count. A call that breaks one is answered 429 (when `answer_429`) and
/// recorded in [`FakeTelegram::violations`] either way.
#[derive(Clone, Debug)]
pub struct FloodLimits {
    /// Least gap between two calls to one private chat.
    pub private_interval: Duration,
    /// Calls to one group within any 60 s.
    pub group_per_minute: usize,
    /// Calls in all within any 1 s.
    pub global_per_second: usize,
    /// Answer a violating call with 429 `retry_after` (as Telegram does) instead of performing it.
    pub answer_429: bool,
}

impl Default for FloodLimits {
    fn default() -> Self {
        Self { private_interval: Duration::from_secs(1), group_per_minute: 20, global_per_second: 30, answer_429: true }
    }
}

struct StoredFile {
    bytes: Bytes,
    unique_id: String,
    name: Option<String>,
    mime: Option<String>,
}

struct Link {
    file_id: String,
    expires_at: Instant,
}

#[derive(Default)]
struct ChatLog {
    last_message_id: i64,
    messages: HashMap<i64, StoredMessage>,
}

struct StoredMessage {
    json: Value,
    from_bot: bool,
}

struct ScriptedFault {
    method: String,
    chat_id: Option<i64>,
    fault: Fault,
}

struct ScriptedDownloadFault {
    file_id: Option<String>,
    fault: DownloadFault,
    remaining: Option<usize>,
}

/// A file part of a multipart request.
struct FilePart {
    name: String,
    file_name: Option<String>,
    content_type: Option<String>,
    bytes: Bytes,
}

/// A decided answer: status and body.
struct Reply {
    status: StatusCode,
    body: ReplyBody,
}

enum ReplyBody {
    Json(Value),
    Html(String),
}

impl FakeTelegram {
    /// Binds `127.0.0.1:0` and starts serving in a spawned task of the current runtime.
    ///
    /// Panics if the port cannot be bound (a broken test environment).
    pub async fn start() -> Self {
        let bot_id = TEST_TOKEN
            .split_once(':')
            .and_then(|(id, _)| id.parse().ok())
            .expect("TEST_TOKEN starts with a numeric bot id");
        let shared = Arc::new(Shared {
            token: TEST_TOKEN.to_owned(),
            bot_id,
            bot_username: Mutex::new(DEFAULT_BOT_USERNAME.to_owned()),
            state: Mutex::new(FakeState {
                updates: VecDeque::new(),
                next_update_id: 1,
                files: HashMap::new(),
                next_file: 1,
                links: HashMap::new(),
                next_link: 1,
                download_limit: DEFAULT_DOWNLOAD_LIMIT,
                link_ttl: DEFAULT_LINK_TTL,
                local_dir: None,
                chats: HashMap::new(),
                faults: Vec::new(),
                download_faults: Vec::new(),
                blocked: HashMap::new(),
                calls: Vec::new(),
                downloads: 0,
                download_log: Vec::new(),
                commands: json!([]),
                stopped: false,
                flood: FloodLimits::default(),
                sends: Vec::new(),
                violations: Vec::new(),
                polling: PollingState::default(),
            }),
            calls_seen: watch::Sender::new(0),
            updates_seen: watch::Sender::new(0),
        });
        let router = Router::new()
            .route("/file/{bot_token}/{*path}", get(download))
            .route("/{bot_token}/{method}", get(api).post(api))
            .fallback(|| async { not_found().into_response() })
            .layer(DefaultBodyLimit::disable())
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind the fake Telegram server on 127.0.0.1:0");
        let addr = listener.local_addr().expect("a bound listener has a local address");
        let (stop_serving, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            // Serving ends when the handle is dropped (the sender closes) or on an accept error
            // on the loopback listener, which a test notices through failing requests.
            let _ = axum::serve(listener, router)
                .with_graceful_shutdown(async move {
                    let _ = stopped.await;
                })
                .await;
        });
        Self { inner: Arc::new(Inner { shared, addr, _stop_serving: stop_serving }) }
    }

    /// Replaces the flood limits the fake enforces.
    pub fn set_flood_limits(&self, limits: FloodLimits) {
        self.state().flood = limits;
    }

    /// Every flood limit the bot broke so far, described (empty when it kept them all).
    pub fn violations(&self) -> Vec<String> {
        self.state().violations.clone()
    }

    /// The API base URL, `http://127.0.0.1:PORT/`, for `Bot::set_api_url`.
    pub fn api_url(&self) -> Url {
        Url::parse(&format!("http://{}/", self.inner.addr)).expect("a socket address makes a valid URL")
    }

    /// The token the fake accepts ([`TEST_TOKEN`]).
    pub fn token(&self) -> &str {
        &self.inner.shared.token
    }

    /// The bot's user id, the numeric prefix of the token (123456).
    pub fn bot_id(&self) -> i64 {
        self.inner.shared.bot_id
    }

    /// Stores `bytes` as a new file that getFile, downloads and sendDocument accept.
    pub fn add_file(&self, bytes: Vec<u8>) -> FileRef {
        let mut state = self.state();
        state.store_file(Bytes::from(bytes), None, None)
    }

    /// Sets the largest file getFile will serve (default 20 MiB); larger files answer
    /// 400 "Bad Request: file is too big".
    pub fn set_download_limit(&self, bytes: u64) {
        self.state().download_limit = bytes;
    }

    /// Sets how long a `file_path` minted by later getFile calls stays downloadable (default
    /// 1 hour). `Duration::ZERO` mints paths that are already expired.
    pub fn set_link_ttl(&self, ttl: Duration) {
        self.state().link_ttl = ttl;
    }

    /// Behaves like a Bot API server started with `--local`: getFile copies the file to
    /// `<dir>/<token>/documents/file_<n>` and answers that ABSOLUTE path, which is not served
    /// over HTTP (the bot must read it from disk).
    pub fn set_local_mode(&self, dir: &std::path::Path) {
        self.state().local_dir = Some(dir.to_path_buf());
    }

    /// Expires every `file_path` minted so far; downloading them answers 404.
    pub fn expire_file_links(&self) {
        let now = Instant::now();
        for link in self.state().links.values_mut() {
            link.expires_at = now;
        }
    }

    /// Queues an update for getUpdates and wakes long polls. Sets `update_id` to the next id in
    /// sequence unless the update has one (later ids then continue after it); returns the id.
    /// A contained `message` is remembered so replies to it can quote it.
    pub fn push_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut state = self.state();
            let id = match update.get("update_id").and_then(Value::as_i64) {
                Some(id) => id,
                None => {
                    let id = state.next_update_id;
                    if let Some(object) = update.as_object_mut() {
                        object.insert("update_id".to_owned(), json!(id));
                    }
                    id
                }
            };
            state.next_update_id = state.next_update_id.max(id + 1);
            if let Some(message) = update.get("message") {
                state.remember_incoming(message);
            }
            state.updates.push_back(update);
            id
        };
        self.inner.shared.updates_seen.send_modify(|n| *n += 1);
        id
    }

    /// A full Update (without `update_id`) in which `user_id` sends `file` as a document to
    /// `chat_id`, declaring the file's real size. A given `name` is also remembered for the
    /// file, so getFile paths get its extension.
    pub fn document_update(
        &self,
        chat_id: i64,
        user_id: i64,
        file: &FileRef,
        name: Option<&str>,
        mime: Option<&str>,
    ) -> Value {
        self.document_update_with_size(chat_id, user_id, file, name, mime, Some(file.size))
    }

    /// Like [`document_update`](Self::document_update), but the document declares
    /// `declared_size` as its `file_size` (`None` leaves the field out), as Telegram may.
    pub fn document_update_with_size(
        &self,
        chat_id: i64,
        user_id: i64,
        file: &FileRef,
        name: Option<&str>,
        mime: Option<&str>,
        declared_size: Option<u64>,
    ) -> Value {
        let mut state = self.state();
        if let Some(stored) = state.files.get_mut(&file.file_id) {
            if name.is_some() {
                stored.name = name.map(ToOwned::to_owned);
            }
            if mime.is_some() {
                stored.mime = mime.map(ToOwned::to_owned);
            }
        }
        let mut document = Map::new();
        document.insert("file_id".to_owned(), json!(file.file_id));
        document.insert("file_unique_id".to_owned(), json!(file.file_unique_id));
        if let Some(name) = name {
            document.insert("file_name".to_owned(), json!(name));
        }
        if let Some(mime) = mime {
            document.insert("mime_type".to_owned(), json!(mime));
        }
        if let Some(size) = declared_size {
            document.insert("file_size".to_owned(), json!(size));
        }
        let message_id = state.next_message_id(chat_id);
        json!({
            "message": {
                "message_id": message_id,
                "date": unix_now(),
                "chat": chat_json(chat_id),
                "from": user_json(user_id),
                "document": document,
            }
        })
    }

    /// A full Update (without `update_id`) in which `user_id` writes `text` to `chat_id`. A
    /// leading `/command` gets a `bot_command` entity, as Telegram adds.
    pub fn text_update(&self, chat_id: i64, user_id: i64, text: &str) -> Value {
        let message_id = self.state().next_message_id(chat_id);
        let mut message = json!({
            "message_id": message_id,
            "date": unix_now(),
            "chat": chat_json(chat_id),
            "from": user_json(user_id),
            "text": text,
        });
        if text.starts_with('/') {
            let command = text.split_whitespace().next().unwrap_or(text);
            message["entities"] = json!([{
                "type": "bot_command",
                "offset": 0,
                "length": command.encode_utf16().count(),
            }]);
        }
        json!({ "message": message })
    }

    /// Queues `fault` for the next call of `method` (any case), whatever its chat. Faults of one
    /// method are consumed in the order they were queued.
    pub fn fail_next(&self, method: &str, fault: Fault) {
        self.state().faults.push(ScriptedFault { method: method.to_ascii_lowercase(), chat_id: None, fault });
    }

    /// Queues `fault` for the next call of `method` whose `chat_id` is `chat_id`.
    pub fn fail_next_for_chat(&self, method: &str, chat_id: i64, fault: Fault) {
        self.state().faults.push(ScriptedFault { method: method.to_ascii_lowercase(), chat_id: Some(chat_id), fault });
    }

    /// Applies `fault` to the next `times` downloads of any file (`None`: to all of them).
    /// Faults set for a specific file with [`fail_downloads_for`](Self::fail_downloads_for) win.
    pub fn fail_downloads(&self, fault: DownloadFault, times: Option<usize>) {
        self.state().download_faults.push(ScriptedDownloadFault { file_id: None, fault, remaining: times });
    }

    /// Applies `fault` to the next `times` downloads of the file `file_id` (`None`: to all).
    pub fn fail_downloads_for(&self, file_id: &str, fault: DownloadFault, times: Option<usize>) {
        self.state().download_faults.push(ScriptedDownloadFault {
            file_id: Some(file_id.to_owned()),
            fault,
            remaining: times,
        });
    }

    /// From now on every send*/edit* call to `chat_id` answers 403 with `description` (e.g.
    /// "Forbidden: bot was blocked by the user") and is not performed. Scripted [`Fault`]s for
    /// such a call still come first.
    pub fn block_chat(&self, chat_id: i64, description: &str) {
        self.state().blocked.insert(chat_id, description.to_owned());
    }

    /// Undoes [`block_chat`](Self::block_chat).
    pub fn unblock_chat(&self, chat_id: i64) {
        self.state().blocked.remove(&chat_id);
    }

    /// Every recorded call, oldest first.
    pub fn calls(&self) -> Vec<Call> {
        self.state().calls.iter().map(|call| Call::clone(call)).collect()
    }

    /// The recorded calls of `method` (any case), oldest first.
    pub fn calls_to(&self, method: &str) -> Vec<Call> {
        self.state()
            .calls
            .iter()
            .filter(|call| call.method.eq_ignore_ascii_case(method))
            .map(|call| Call::clone(call))
            .collect()
    }

    /// The first recorded call of `method` matching `pred`, waiting for it until `timeout`.
    ///
    /// Panics on timeout with a listing of all recorded calls.
    pub async fn wait_for_call(&self, method: &str, pred: impl Fn(&Call) -> bool, timeout: Duration) -> Call {
        let mut calls = self.wait_for_calls(method, pred, 1, timeout).await;
        calls.remove(0)
    }

    /// The first `count` recorded calls of `method` matching `pred`, waiting for them until
    /// `timeout`.
    ///
    /// Panics on timeout with a listing of all recorded calls.
    pub async fn wait_for_calls(
        &self,
        method: &str,
        pred: impl Fn(&Call) -> bool,
        count: usize,
        timeout: Duration,
    ) -> Vec<Call> {
        let deadline = tokio::time::Instant::now() + timeout;
        // Subscribe before looking, so a call recorded in between still wakes us.
        let mut seen = self.inner.shared.calls_seen.subscribe();
        loop {
            // Snapshot the Arcs, then run `pred` outside the lock.
            let calls: Vec<Arc<Call>> = self.state().calls.clone();
            let matching: Vec<Call> = calls
                .iter()
                .filter(|call| call.method.eq_ignore_ascii_case(method) && pred(call))
                .take(count)
                .map(|call| Call::clone(call))
                .collect();
            if matching.len() >= count {
                return matching;
            }
            if tokio::time::timeout_at(deadline, seen.changed()).await.is_err() {
                panic!(
                    "fake Telegram: wanted {count} matching {method} call(s) within {timeout:?}, found {}; \
                     recorded calls:\n{}",
                    matching.len(),
                    describe_calls(&calls)
                );
            }
        }
    }

    /// How many queued updates no getUpdates `offset` has confirmed yet.
    pub fn pending_updates(&self) -> usize {
        self.state().updates.len()
    }

    /// How many file download requests the fake has answered, whatever the status.
    pub fn downloads(&self) -> usize {
        self.state().downloads
    }

    /// Every file download request so far, oldest first, with the file it asked for.
    pub fn download_log(&self) -> Vec<Download> {
        self.state().download_log.clone()
    }

    /// The current JSON of message `message_id` in `chat_id` (sent by the bot or pushed in an
    /// update), reflecting edits.
    pub fn message(&self, chat_id: i64, message_id: i64) -> Option<Value> {
        self.state().chats.get(&chat_id)?.messages.get(&message_id).map(|m| m.json.clone())
    }

    fn state(&self) -> MutexGuard<'_, FakeState> {
        self.inner.shared.state()
    }
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, FakeState> {
        // A panicking test must not turn every later assertion into a PoisonError.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records a call; returns its index in the call list.
    fn record(&self, method: &str, params: Value, upload: Option<Upload>, status: StatusCode, at: Instant) -> usize {
        let call = Call { method: method.to_owned(), params, upload, status: status.as_u16(), at };
        let index = {
            let mut state = self.state();
            state.calls.push(Arc::new(call));
            state.calls.len() - 1
        };
        self.calls_seen.send_modify(|n| *n += 1);
        index
    }

    fn take_fault(&self, method: &str, chat_id: Option<i64>) -> Option<Fault> {
        let mut state = self.state();
        let lower = method.to_ascii_lowercase();
        let index =
            state.faults.iter().position(|f| f.method == lower && (f.chat_id.is_none() || f.chat_id == chat_id))?;
        Some(state.faults.remove(index).fault)
    }

    fn bot_json(&self) -> Value {
        let username = self.bot_username.lock().unwrap_or_else(PoisonError::into_inner).clone();
        json!({
            "id": self.bot_id,
            "is_bot": true,
            "first_name": "docket test",
            "username": username,
        })
    }
}

impl FakeState {
    fn store_file(&mut self, bytes: Bytes, name: Option<String>, mime: Option<String>) -> FileRef {
        let n = self.next_file;
        self.next_file += 1;
        let file_id = format!("BQACAgIAAxkBAAIfake{n:06}");
        let file_unique_id = format!("AgADfake{n:06}");
        let size = bytes.len() as u64;
        self.files.insert(file_id.clone(), StoredFile { bytes, unique_id: file_unique_id.clone(), name, mime });
        FileRef { file_id, file_unique_id, size }
    }

    fn next_message_id(&mut self, chat_id: i64) -> i64 {
        let chat = self.chats.entry(chat_id).or_default();
        chat.last_message_id += 1;
        chat.last_message_id
    }

    fn remember_incoming(&mut self, message: &Value) {
        let (Some(chat_id), Some(message_id)) =
            (message.pointer("/chat/id").and_then(Value::as_i64), message.get("message_id").and_then(Value::as_i64))
        else {
            return;
        };
        let chat = self.chats.entry(chat_id).or_default();
        chat.last_message_id = chat.last_message_id.max(message_id);
        chat.messages.insert(message_id, StoredMessage { json: message.clone(), from_bot: false });
    }

    /// The message a send call replies to, for its `reply_to_message` field.
    fn replied_message(&self, chat_id: i64, params: &Map<String, Value>) -> Option<Value> {
        let reply_to = params
            .get("reply_parameters")
            .and_then(|p| p.get("message_id"))
            .or_else(|| params.get("reply_to_message_id"))
            .and_then(lenient_i64)?;
        let mut quoted = self.chats.get(&chat_id)?.messages.get(&reply_to)?.json.clone();
        // Telegram nests replies only one level deep.
        if let Some(object) = quoted.as_object_mut() {
            object.remove("reply_to_message");
        }
        Some(quoted)
    }

    fn store_sent(&mut self, chat_id: i64, message: &Value) {
        if let Some(message_id) = message.get("message_id").and_then(Value::as_i64) {
            let chat = self.chats.entry(chat_id).or_default();
            chat.messages.insert(message_id, StoredMessage { json: message.clone(), from_bot: true });
        }
    }

    fn take_download_fault(&mut self, file_id: &str) -> Option<DownloadFault> {
        let index = self
            .download_faults
            .iter()
            .position(|f| f.file_id.as_deref() == Some(file_id))
            .or_else(|| self.download_faults.iter().position(|f| f.file_id.is_none()))?;
        let scripted = &mut self.download_faults[index];
        let fault = scripted.fault.clone();
        if let Some(remaining) = &mut scripted.remaining {
            *remaining = remaining.saturating_sub(1);
            if *remaining == 0 {
                self.download_faults.remove(index);
            }
        }
        Some(fault)
    }
}

// ---------------------------------------------------------------------------------------------
// The bot's identity, and messages that answer it (group chats)

impl FakeTelegram {
    /// Sets the username getMe answers and the bot's messages carry (default
    /// [`DEFAULT_BOT_USERNAME`]). Set it before the bot starts: it asks getMe once.
    pub fn set_bot_username(&self, username: &str) {
        *self.inner.shared.bot_username.lock().unwrap_or_else(PoisonError::into_inner) = username.to_owned();
    }

    /// The newest message the bot sent to `chat_id`, as stored (with edits), if any.
    pub fn last_bot_message(&self, chat_id: i64) -> Option<Value> {
        let state = self.state();
        let chat = state.chats.get(&chat_id)?;
        chat.messages.iter().filter(|(_, m)| m.from_bot).max_by_key(|(id, _)| **id).map(|(_, m)| m.json.clone())
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP handlers

async fn api(
    AxumState(shared): AxumState<Arc<Shared>>,
    Path((bot_token, method_sent)): Path<(String, String)>,
    request: Request,
) -> Response {
    let at = Instant::now();
    let parsed = parse_request(request).await;
    let canonical = METHODS.iter().find(|m| m.eq_ignore_ascii_case(&method_sent)).copied();
    let method = canonical.unwrap_or(&method_sent);

    let (params, parts) = match parsed {
        Ok(parsed) => parsed,
        Err(description) => {
            // Authorization still comes first, as on the real server.
            let reply = if shared.accepts_token(&bot_token) {
                error(StatusCode::BAD_REQUEST, &format!("Bad Request: {description}"), None)
            } else {
                unauthorized()
            };
            shared.record(method, json!({}), None, reply.status, at);
            return reply.into_response();
        }
    };
    let upload_part = if canonical == Some("sendDocument") { document_part(&params, parts) } else { None };
    let upload = upload_part.as_ref().map(|p| Upload { file_name: p.file_name.clone(), bytes: p.bytes.to_vec() });
    let params_json = Value::Object(params.clone());

    if !shared.accepts_token(&bot_token) {
        let reply = unauthorized();
        shared.record(method, params_json, upload, reply.status, at);
        return reply.into_response();
    }
    let Some(method) = canonical else {
        let reply = not_found();
        shared.record(method, params_json, upload, reply.status, at);
        return reply.into_response();
    };

    let chat_id = params.get("chat_id").and_then(lenient_i64);
    let mut lost = false;
    let mut held = None;
    match shared.take_fault(method, chat_id) {
        None => {}
        Some(Fault::Delay(delay)) => tokio::time::sleep(delay).await,
        Some(Fault::ResponseLost) => lost = true,
        Some(Fault::Hold(hold)) => held = Some(hold),
        Some(fault) => {
            let reply = fault_reply(fault);
            shared.record(method, params_json, upload, reply.status, at);
            return reply.into_response();
        }
    }

    if let Some(chat_id) = chat_id.filter(|_| counts_against_limits(method))
        && let Some(retry_after) = shared.state().check_flood(chat_id, at)
    {
        let reply = error(
            StatusCode::TOO_MANY_REQUESTS,
            &format!("Too Many Requests: retry after {retry_after}"),
            Some(json!({ "retry_after": retry_after })),
        );
        shared.record(method, params_json, upload, reply.status, at);
        return reply.into_response();
    }

    let reply = if method == "getUpdates" {
        get_updates(&shared, &params, at).await
    } else {
        let reply = perform(&shared, method, &params, upload_part);
        shared.record(method, params_json, upload, reply.status, at);
        reply
    };
    if let Some(hold) = held {
        hold.hold_answer().await;
    }
    if lost { lost_response(&reply) } else { reply.into_response() }
}

/// Whether a method counts against the flood limits: messages and edits, not chat actions.
fn counts_against_limits(method: &str) -> bool {
    (method.starts_with("send") && method != "sendChatAction") || method.starts_with("edit")
}

impl FakeState {
    /// Records a counted call to `chat_id` arriving at `at`; a broken limit is recorded as a
    /// violation and, with `answer_429`, returns the `retry_after` to answer with.
    fn check_flood(&mut self, chat_id: i64, at: Instant) -> Option<u64> {
        let limits = self.flood.clone();
        let window = |secs: u64| at.checked_sub(Duration::from_secs(secs));
        let within = |sends: &[(Instant, i64)], since: Option<Instant>, chat: Option<i64>| {
            sends.iter().filter(|(t, c)| since.is_none_or(|s| *t > s) && chat.is_none_or(|x| x == *c)).count()
        };
        let mut broken = Vec::new();
        if chat_id > 0 {
            if let Some((last, _)) = self.sends.iter().rev().find(|(_, c)| *c == chat_id)
                && at.duration_since(*last) < limits.private_interval
            {
                broken.push(format!(
                    "private chat {chat_id}: two calls {} ms apart",
                    at.duration_since(*last).as_millis()
                ));
            }
        } else if within(&self.sends, window(60), Some(chat_id)) >= limits.group_per_minute {
            broken.push(format!("group {chat_id}: more than {} calls within a minute", limits.group_per_minute));
        }
        if within(&self.sends, window(1), None) >= limits.global_per_second {
            broken.push(format!("more than {} calls within a second", limits.global_per_second));
        }
        self.sends.push((at, chat_id));
        if broken.is_empty() {
            return None;
        }
        self.violations.extend(broken);
        limits.answer_429.then_some(1)
    }
}

/// Performs a (non-getUpdates) method and decides its answer.
fn perform(shared: &Shared, method: &str, params: &Map<String, Value>, upload: Option<FilePart>) -> Reply {
    let mut state = shared.state();
    let chat_id = params.get("chat_id").and_then(lenient_i64);
    if (method.starts_with("send") || method.starts_with("edit"))
        && let Some(description) = chat_id.and_then(|id| state.blocked.get(&id))
    {
        return error(StatusCode::FORBIDDEN, description, None);
    }
    match method {
        "getMe" => {
            let mut me = shared.bot_json();
            me["can_join_groups"] = json!(true);
            me["can_read_all_group_messages"] = json!(false);
            me["supports_inline_queries"] = json!(false);
            // teloxide 0.17's `Me` requires these two newer fields.
            me["can_connect_to_business"] = json!(false);
            me["has_main_web_app"] = json!(false);
            ok(me)
        }
        "getFile" => {
            let Some(file_id) = params.get("file_id").and_then(Value::as_str) else {
                return bad_request("Bad Request: file_id not specified");
            };
            let Some(file) = state.files.get(file_id) else {
                return bad_request("Bad Request: invalid file_id");
            };
            let size = file.bytes.len() as u64;
            if size > state.download_limit {
                return bad_request("Bad Request: file is too big");
            }
            let unique_id = file.unique_id.clone();
            let extension = file.name.as_deref().and_then(extension_of).unwrap_or_else(|| "bin".to_owned());
            let n = state.next_link;
            state.next_link += 1;
            let path = format!("documents/file_{n}.{extension}");
            if let Some(dir) = state.local_dir.clone() {
                let local = dir.join(TEST_TOKEN).join(&path);
                let written = std::fs::create_dir_all(local.parent().unwrap_or(&dir))
                    .and_then(|()| std::fs::write(&local, &state.files[file_id].bytes));
                if written.is_err() {
                    return bad_request("Bad Request: the local server could not store the file");
                }
                let local = local.to_string_lossy().into_owned();
                return ok(
                    json!({ "file_id": file_id, "file_unique_id": unique_id, "file_size": size, "file_path": local }),
                );
            }
            let expires_at = Instant::now() + state.link_ttl;
            state.links.insert(path.clone(), Link { file_id: file_id.to_owned(), expires_at });
            ok(json!({ "file_id": file_id, "file_unique_id": unique_id, "file_size": size, "file_path": path }))
        }
        "sendMessage" => {
            let Some(chat_id) = chat_id else { return missing_chat(params) };
            let text = params.get("text").map(text_of).unwrap_or_default();
            if text.is_empty() {
                return bad_request("Bad Request: message text is empty");
            }
            if text.chars().count() > MAX_TEXT_CHARS {
                return bad_request("Bad Request: message is too long");
            }
            let mut message = new_bot_message(shared, &mut state, chat_id, params);
            message["text"] = json!(text);
            state.store_sent(chat_id, &message);
            ok(message)
        }
        "editMessageText" => edit_message_text(&mut state, chat_id, params),
        "sendDocument" => send_document(shared, &mut state, chat_id, params, upload),
        "getWebhookInfo" | "setWebhook" | "deleteWebhook" => webhook_method(&mut state, method, params),
        "setMyCommands" => {
            state.commands = params.get("commands").cloned().unwrap_or_else(|| json!([]));
            ok(json!(true))
        }
        "getMyCommands" => ok(state.commands.clone()),
        "deleteMyCommands" => {
            state.commands = json!([]);
            ok(json!(true))
        }
        // sendChatAction, close, logOut.
        _ => ok(json!(true)),
    }
}

fn edit_message_text(state: &mut FakeState, chat_id: Option<i64>, params: &Map<String, Value>) -> Reply {
    let message_id = params.get("message_id").and_then(lenient_i64);
    let text = params.get("text").map(text_of).unwrap_or_default();
    if text.is_empty() {
        return bad_request("Bad Request: message text is empty");
    }
    if text.chars().count() > MAX_TEXT_CHARS {
        return bad_request("Bad Request: MESSAGE_TOO_LONG");
    }
    let stored = chat_id
        .zip(message_id)
        .and_then(|(chat_id, message_id)| state.chats.get_mut(&chat_id)?.messages.get_mut(&message_id));
    let Some(stored) = stored else {
        return bad_request("Bad Request: message to edit not found");
    };
    if !stored.from_bot {
        return bad_request("Bad Request: message can't be edited");
    }
    let markup = inline_markup(params);
    if stored.json.get("text").and_then(Value::as_str) == Some(text.as_str())
        && stored.json.get("reply_markup") == markup.as_ref()
    {
        return bad_request(
            "Bad Request: message is not modified: specified new message content and reply markup are exactly \
             the same as a current content and reply markup of the message",
        );
    }
    let message = &mut stored.json;
    message["text"] = json!(text);
    message["edit_date"] = json!(unix_now());
    if let Some(object) = message.as_object_mut() {
        object.remove("entities");
        match markup {
            Some(markup) => object.insert("reply_markup".to_owned(), markup),
            None => object.remove("reply_markup"),
        };
    }
    ok(message.clone())
}

fn send_document(
    shared: &Shared,
    state: &mut FakeState,
    chat_id: Option<i64>,
    params: &Map<String, Value>,
    upload: Option<FilePart>,
) -> Reply {
    let Some(chat_id) = chat_id else { return missing_chat(params) };
    let caption = params.get("caption").map(text_of);
    if caption.as_ref().is_some_and(|c| c.chars().count() > MAX_CAPTION_CHARS) {
        return bad_request("Bad Request: message caption is too long");
    }
    let file_id = match upload {
        Some(part) => {
            if part.bytes.is_empty() {
                return bad_request("Bad Request: file must be non-empty");
            }
            if part.bytes.len() > UPLOAD_LIMIT {
                return error(StatusCode::PAYLOAD_TOO_LARGE, "Request Entity Too Large", None);
            }
            let mime = part
                .content_type
                .filter(|m| m != "application/octet-stream")
                .or_else(|| part.file_name.as_deref().and_then(mime_for_name).map(ToOwned::to_owned));
            state.store_file(part.bytes, part.file_name, mime).file_id
        }
        None => match params.get("document").and_then(Value::as_str) {
            Some(id) if state.files.contains_key(id) => id.to_owned(),
            Some(_) => return bad_request("Bad Request: wrong file identifier/HTTP URL specified"),
            None => return bad_request("Bad Request: there is no document in the request"),
        },
    };
    let file = &state.files[&file_id];
    let mut document = json!({
        "file_id": file_id,
        "file_unique_id": file.unique_id,
        "file_size": file.bytes.len(),
    });
    if let Some(name) = &file.name {
        document["file_name"] = json!(name);
    }
    document["mime_type"] = json!(file.mime.as_deref().unwrap_or("application/octet-stream"));
    let mut message = new_bot_message(shared, state, chat_id, params);
    message["document"] = document;
    if let Some(caption) = caption.filter(|c| !c.is_empty()) {
        message["caption"] = json!(caption);
    }
    state.store_sent(chat_id, &message);
    ok(message)
}

/// The common part of a message the bot sends: id, date, chat, sender, reply and markup.
fn new_bot_message(shared: &Shared, state: &mut FakeState, chat_id: i64, params: &Map<String, Value>) -> Value {
    let message_id = state.next_message_id(chat_id);
    let mut message = json!({
        "message_id": message_id,
        "date": unix_now(),
        "chat": chat_json(chat_id),
        "from": shared.bot_json(),
    });
    if let Some(replied) = state.replied_message(chat_id, params) {
        message["reply_to_message"] = replied;
    }
    if let Some(markup) = inline_markup(params) {
        message["reply_markup"] = markup;
    }
    message
}

async fn get_updates(shared: &Shared, params: &Map<String, Value>, at: Instant) -> Reply {
    let offset = params.get("offset").and_then(lenient_i64);
    let limit = params.get("limit").and_then(lenient_i64).unwrap_or(100).clamp(1, 100);
    let limit = usize::try_from(limit).unwrap_or(100);
    let timeout = params.get("timeout").and_then(lenient_i64).unwrap_or(0).max(0);
    let timeout = Duration::from_secs(u64::try_from(timeout).unwrap_or(0));

    if let Some(reply) = webhook_conflict(shared) {
        shared.record("getUpdates", Value::Object(params.clone()), None, reply.status, at);
        return reply;
    }
    // This poll overtakes any still waiting: they answer 409 (woken like by a pushed update).
    let generation = shared.overtake_polls();
    // Subscribe before looking at the queue, so an update pushed in between still wakes us.
    let mut pushed = shared.updates_seen.subscribe();
    let index = {
        let mut state = shared.state();
        match offset {
            // A negative offset keeps only the last |offset| updates.
            Some(offset) if offset < 0 => {
                let keep = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
                while state.updates.len() > keep {
                    state.updates.pop_front();
                }
            }
            // Confirming an offset forgets every update before it.
            Some(offset) => state.updates.retain(|u| update_id(u) >= offset),
            None => {}
        }
        let batch = take_batch(&state.updates, offset, limit);
        let stopped = state.stopped;
        drop(state);
        // Recorded before the long poll so tests see the offset confirmation at once.
        let index = shared.record("getUpdates", Value::Object(params.clone()), None, StatusCode::OK, at);
        if !batch.is_empty() || stopped {
            return ok(Value::Array(batch));
        }
        index
    };
    if timeout.is_zero() {
        return ok(json!([]));
    }
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if tokio::time::timeout_at(deadline, pushed.changed()).await.is_err() {
            return ok(json!([]));
        }
        let state = shared.state();
        if state.polling.poll_generation != generation {
            drop(state);
            return shared.terminated_poll(index);
        }
        let batch = take_batch(&state.updates, offset, limit);
        if !batch.is_empty() || state.stopped {
            return ok(Value::Array(batch));
        }
    }
}

fn take_batch(updates: &VecDeque<Value>, offset: Option<i64>, limit: usize) -> Vec<Value> {
    let floor = offset.filter(|o| *o >= 0).unwrap_or(i64::MIN);
    updates.iter().filter(|u| update_id(u) >= floor).take(limit).cloned().collect()
}

fn update_id(update: &Value) -> i64 {
    update.get("update_id").and_then(Value::as_i64).unwrap_or(i64::MIN)
}

async fn download(
    AxumState(shared): AxumState<Arc<Shared>>,
    Path((bot_token, path)): Path<(String, String)>,
) -> Response {
    let at = Instant::now();
    let (bytes, fault) = {
        let mut state = shared.state();
        state.downloads += 1;
        if bot_token.strip_prefix("bot") != Some(shared.token.as_str()) || state.polling.token_revoked {
            state.download_log.push(Download { file_id: None, at, status: StatusCode::UNAUTHORIZED.as_u16() });
            return unauthorized().into_response();
        }
        let file_id =
            state.links.get(&path).filter(|link| Instant::now() < link.expires_at).map(|link| link.file_id.clone());
        let bytes = file_id.as_ref().and_then(|id| state.files.get(id)).map(|f| f.bytes.clone());
        let (Some(file_id), Some(bytes)) = (file_id, bytes) else {
            state.download_log.push(Download { file_id: None, at, status: StatusCode::NOT_FOUND.as_u16() });
            return not_found().into_response();
        };
        state.download_log.push(Download { file_id: Some(file_id.clone()), at, status: StatusCode::OK.as_u16() });
        let fault = state.take_download_fault(&file_id);
        (bytes, fault)
    };
    let full_length = bytes.len();
    let body = match fault {
        None => Body::from(bytes),
        Some(DownloadFault::ServeBytes(other)) => {
            return file_response(other.len(), Body::from(other));
        }
        Some(DownloadFault::CutAfter(n)) => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            if n >= full_length {
                Body::from(bytes)
            } else {
                Body::from_stream(then_break(bytes.slice(..n), "fake Telegram: download cut"))
            }
        }
        Some(DownloadFault::Throttle { bytes_per_sec }) => Body::from_stream(throttled(bytes, bytes_per_sec.max(1))),
    };
    file_response(full_length, body)
}

/// Streams `bytes` in tenth-of-a-second chunks paced to `bytes_per_sec`.
fn throttled(bytes: Bytes, bytes_per_sec: u64) -> impl futures_util::Stream<Item = io::Result<Bytes>> + Send {
    let chunk = usize::try_from(bytes_per_sec / 10).unwrap_or(usize::MAX).max(1);
    let start = tokio::time::Instant::now();
    stream::unfold((bytes, 0usize), move |(bytes, sent)| async move {
        if sent >= bytes.len() {
            return None;
        }
        let due = start + Duration::from_secs_f64(sent as f64 / bytes_per_sec as f64);
        tokio::time::sleep_until(due).await;
        let end = (sent + chunk).min(bytes.len());
        let piece = bytes.slice(sent..end);
        Some((Ok(piece), (bytes, end)))
    })
}

/// A body that sends `prefix` and then fails, which makes hyper drop the connection short of
/// the announced Content-Length.
fn then_break(prefix: Bytes, reason: &'static str) -> impl futures_util::Stream<Item = io::Result<Bytes>> + Send {
    let prefix = stream::once(async move { Ok(prefix) });
    let failure = stream::once(async move {
        // Hyper flushes what it has buffered when the body is not ready; without this pause it
        // could see the error first and drop the headers and the prefix with it.
        tokio::task::yield_now().await;
        Err(io::Error::new(io::ErrorKind::ConnectionReset, reason))
    });
    prefix.chain(failure)
}

fn file_response(content_length: usize, body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(content_length));
    response
}

// ---------------------------------------------------------------------------------------------
// Requests

/// Reads query, JSON, urlencoded or multipart parameters, and the multipart file parts.
async fn parse_request(request: Request) -> Result<(Map<String, Value>, Vec<FilePart>), String> {
    let mut params = Map::new();
    if let Some(query) = request.uri().query() {
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            let value = coerce(&key, &value);
            params.insert(key.into_owned(), value);
        }
    }
    let content_type =
        request.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_ascii_lowercase();
    if content_type.starts_with("multipart/form-data") {
        let parts = read_multipart(request, &mut params).await?;
        return Ok((params, parts));
    }
    let body = axum::body::to_bytes(request.into_body(), usize::MAX).await.map_err(|e| e.to_string())?;
    if body.is_empty() {
        return Ok((params, Vec::new()));
    }
    if content_type.starts_with("application/x-www-form-urlencoded") {
        for (key, value) in url::form_urlencoded::parse(&body) {
            let value = coerce(&key, &value);
            params.insert(key.into_owned(), value);
        }
    } else {
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(object)) => params.extend(object),
            Ok(_) => return Err("parameters must be a JSON object".to_owned()),
            Err(e) => return Err(format!("can't parse JSON: {e}")),
        }
    }
    Ok((params, Vec::new()))
}

async fn read_multipart(request: Request, params: &mut Map<String, Value>) -> Result<Vec<FilePart>, String> {
    let mut multipart = Multipart::from_request(request, &()).await.map_err(|e| e.body_text())?;
    let mut raw = Vec::new();
    while let Some(field) = multipart.next_field().await.map_err(|e| e.body_text())? {
        let name = field.name().unwrap_or_default().to_owned();
        let file_name = field.file_name().map(ToOwned::to_owned);
        let content_type = field.content_type().map(ToOwned::to_owned);
        let bytes = field.bytes().await.map_err(|e| e.body_text())?;
        raw.push(FilePart { name, file_name, content_type, bytes });
    }
    // A part is a file if it has a file name or another field points at it with attach://.
    let attached: HashSet<String> = raw
        .iter()
        .filter(|p| p.file_name.is_none())
        .filter_map(|p| std::str::from_utf8(&p.bytes).ok()?.strip_prefix("attach://").map(ToOwned::to_owned))
        .collect();
    let mut files = Vec::new();
    for part in raw {
        if part.file_name.is_some() || attached.contains(&part.name) {
            files.push(part);
        } else {
            let text = String::from_utf8_lossy(&part.bytes);
            let value = coerce(&part.name, &text);
            params.insert(part.name, value);
        }
    }
    Ok(files)
}

/// The uploaded file a sendDocument request carries: the part `document` attaches, or a file
/// part named `document`.
fn document_part(params: &Map<String, Value>, parts: Vec<FilePart>) -> Option<FilePart> {
    let wanted = match params.get("document").and_then(Value::as_str) {
        Some(value) => value.strip_prefix("attach://")?.to_owned(),
        None => "document".to_owned(),
    };
    parts.into_iter().find(|p| p.name == wanted)
}

/// A form value as JSON: numbers, booleans and JSON objects parsed, text-like fields kept.
fn coerce(key: &str, value: &str) -> Value {
    if STRING_FIELDS.contains(&key) {
        return json!(value);
    }
    if let Ok(n) = value.parse::<i64>() {
        return json!(n);
    }
    match value {
        "true" => return json!(true),
        "false" => return json!(false),
        _ => {}
    }
    if (value.starts_with('{') || value.starts_with('['))
        && let Ok(parsed) = serde_json::from_str(value)
    {
        return parsed;
    }
    json!(value)
}

/// An integer parameter given as a JSON number or a numeric string.
fn lenient_i64(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A text parameter; a number (from a JSON client) is taken as its decimal text.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `reply_markup` parameter if it is an inline keyboard: the only kind a Message echoes.
fn inline_markup(params: &Map<String, Value>) -> Option<Value> {
    let markup = match params.get("reply_markup")? {
        Value::String(s) => serde_json::from_str(s).ok()?,
        other => other.clone(),
    };
    markup.get("inline_keyboard").is_some().then_some(markup)
}

fn extension_of(name: &str) -> Option<String> {
    let (_, extension) = name.rsplit_once('.')?;
    let extension: String =
        extension.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect();
    (!extension.is_empty()).then_some(extension)
}

fn mime_for_name(name: &str) -> Option<&'static str> {
    Some(match extension_of(name)?.as_str() {
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "zip" => "application/zip",
        "json" => "application/json",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        _ => return None,
    })
}

// ---------------------------------------------------------------------------------------------
// Answers

impl Reply {
    fn envelope(&self) -> (&'static str, Vec<u8>) {
        match &self.body {
            ReplyBody::Json(value) => ("application/json", value.to_string().into_bytes()),
            ReplyBody::Html(html) => ("text/html", html.clone().into_bytes()),
        }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let (content_type, body) = self.envelope();
        let mut response = Response::new(Body::from(body));
        *response.status_mut() = self.status;
        response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        response
    }
}

fn ok(result: Value) -> Reply {
    Reply { status: StatusCode::OK, body: ReplyBody::Json(json!({ "ok": true, "result": result })) }
}

fn error(status: StatusCode, description: &str, parameters: Option<Value>) -> Reply {
    let mut body = json!({ "ok": false, "error_code": status.as_u16(), "description": description });
    if let Some(parameters) = parameters {
        body["parameters"] = parameters;
    }
    Reply { status, body: ReplyBody::Json(body) }
}

fn bad_request(description: &str) -> Reply {
    error(StatusCode::BAD_REQUEST, description, None)
}

/// The answer to a send without a usable numeric `chat_id`.
fn missing_chat(params: &Map<String, Value>) -> Reply {
    if params.contains_key("chat_id") {
        bad_request("Bad Request: chat not found")
    } else {
        bad_request("Bad Request: chat_id is empty")
    }
}

fn unauthorized() -> Reply {
    error(StatusCode::UNAUTHORIZED, "Unauthorized", None)
}

fn not_found() -> Reply {
    error(StatusCode::NOT_FOUND, "Not Found", None)
}

fn fault_reply(fault: Fault) -> Reply {
    match fault {
        Fault::RetryAfter(secs) => error(
            StatusCode::TOO_MANY_REQUESTS,
            &format!("Too Many Requests: retry after {secs}"),
            Some(json!({ "retry_after": secs })),
        ),
        Fault::Forbidden(description) => error(StatusCode::FORBIDDEN, &description, None),
        Fault::BadRequest(description) => bad_request(&description),
        Fault::ServerError(status) => {
            let status = server_status(status);
            error(status, status.canonical_reason().unwrap_or("Internal Server Error"), None)
        }
        Fault::HtmlServerError(status) => {
            let status = server_status(status);
            let line = format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or("Server Error"));
            let html = format!(
                "<html>\r\n<head><title>{line}</title></head>\r\n<body>\r\n<center><h1>{line}</h1></center>\r\n\
                 <hr><center>nginx/1.18.0</center>\r\n</body>\r\n</html>\r\n"
            );
            Reply { status, body: ReplyBody::Html(html) }
        }
        Fault::MigrateTo(new_chat_id) => error(
            StatusCode::BAD_REQUEST,
            "Bad Request: group chat was upgraded to a supergroup chat",
            Some(json!({ "migrate_to_chat_id": new_chat_id })),
        ),
        Fault::ResponseLost | Fault::Delay(_) | Fault::Hold(_) => unreachable!("handled before answering"),
    }
}

fn server_status(status: u16) -> StatusCode {
    StatusCode::from_u16(status).ok().filter(StatusCode::is_server_error).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// Headers promising the whole answer, then half of it and a broken connection.
fn lost_response(reply: &Reply) -> Response {
    let (content_type, body) = reply.envelope();
    let full_length = body.len();
    let half = Bytes::from(body).slice(..full_length / 2);
    let mut response = Response::new(Body::from_stream(then_break(half, "fake Telegram: response lost")));
    *response.status_mut() = reply.status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(full_length));
    response
}

// ---------------------------------------------------------------------------------------------
// JSON shapes

fn chat_json(chat_id: i64) -> Value {
    if chat_id > 0 {
        json!({ "id": chat_id, "type": "private", "first_name": "Test", "last_name": "User", "username": format!("user{chat_id}") })
    } else {
        json!({ "id": chat_id, "type": "supergroup", "title": "docket test group" })
    }
}

fn user_json(user_id: i64) -> Value {
    json!({
        "id": user_id,
        "is_bot": false,
        "first_name": "Test",
        "last_name": "User",
        "username": format!("user{user_id}"),
        "language_code": "en",
    })
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

fn describe_calls(calls: &[Arc<Call>]) -> String {
    if calls.is_empty() {
        return "  (none)".to_owned();
    }
    let mut listing = String::new();
    for (i, call) in calls.iter().enumerate() {
        let mut params = call.params.to_string();
        if params.len() > 300 {
            let cut = (0..=300).rev().find(|&i| params.is_char_boundary(i)).unwrap_or(0);
            params.truncate(cut);
            params.push('…');
        }
        let upload = match &call.upload {
            Some(upload) => format!(" upload={:?} ({} bytes)", upload.file_name, upload.bytes.len()),
            None => String::new(),
        };
        let _ = writeln!(listing, "  {:>3}. {} -> {} {params}{upload}", i + 1, call.method, call.status);
    }
    listing
}

// ---------------------------------------------------------------------------------------------
// Who may poll (webhook, competing long polls, a revoked token) and held answers

/// What decides whether getUpdates may answer, and whether the token is still good.
#[derive(Default)]
struct PollingState {
    /// The URL set with setWebhook; while set, getUpdates answers 409.
    webhook: Option<String>,
    /// Bumped by every getUpdates that gets past the webhook check; a long poll that sees it
    /// change was overtaken by a newer one and answers 409.
    poll_generation: u64,
    /// Set by [`FakeTelegram::revoke_token`]: every API call and download answers 401.
    token_revoked: bool,
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

    /// Revokes the token, as BotFather's /revoke does: from now on every API call and every
    /// download answers 401 Unauthorized.
    pub fn revoke_token(&self) {
        self.state().polling.token_revoked = true;
    }

    /// Holds the answer to the next call of `method` to `chat_id`: the call is performed and
    /// recorded at once, and answered only after [`Hold::release`]. The returned handle tells
    /// when the call arrived and whether the client gave up on it (closed the connection) first.
    pub fn hold_next_for_chat(&self, method: &str, chat_id: i64) -> Hold {
        let hold = Hold { phase: Arc::new(watch::Sender::new(HoldPhase::Waiting)) };
        self.fail_next_for_chat(method, chat_id, Fault::Hold(hold.clone()));
        hold
    }
}

impl Shared {
    /// Whether an API path's `bot{token}` segment carries the token the fake accepts (and it was
    /// not revoked).
    fn accepts_token(&self, bot_token: &str) -> bool {
        bot_token.strip_prefix("bot") == Some(self.token.as_str()) && !self.state().polling.token_revoked
    }

    /// Marks a new getUpdates as the only one allowed to wait, waking those it overtakes.
    /// Returns its generation.
    fn overtake_polls(&self) -> u64 {
        let generation = {
            let mut state = self.state();
            state.polling.poll_generation += 1;
            state.polling.poll_generation
        };
        self.updates_seen.send_modify(|n| *n += 1);
        generation
    }

    /// The answer of an overtaken long poll; its recorded call (at `index`) gets status 409.
    fn terminated_poll(&self, index: usize) -> Reply {
        let reply = error(StatusCode::CONFLICT, OTHER_POLL_CONFLICT, None);
        {
            let mut state = self.state();
            if let Some(call) = state.calls.get_mut(index) {
                let mut answered = Call::clone(call);
                answered.status = reply.status.as_u16();
                *call = Arc::new(answered);
            }
        }
        self.calls_seen.send_modify(|n| *n += 1);
        reply
    }
}

/// getUpdates' answer while a webhook is set.
fn webhook_conflict(shared: &Shared) -> Option<Reply> {
    shared.state().polling.webhook.is_some().then(|| error(StatusCode::CONFLICT, WEBHOOK_CONFLICT, None))
}

/// getWebhookInfo, setWebhook and deleteWebhook.
fn webhook_method(state: &mut FakeState, method: &str, params: &Map<String, Value>) -> Reply {
    match method {
        "getWebhookInfo" => ok(json!({
            "url": state.polling.webhook.clone().unwrap_or_default(),
            "has_custom_certificate": false,
            "pending_update_count": state.updates.len(),
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
            state.polling.webhook = Some(url);
            ok(json!(true))
        }
        _ => {
            state.polling.webhook = None;
            if params.get("drop_pending_updates").and_then(Value::as_bool) == Some(true) {
                state.updates.clear();
            }
            ok(json!(true))
        }
    }
}

/// Where a held answer is; see [`FakeTelegram::hold_next_for_chat`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldPhase {
    /// The call has not arrived yet.
    Waiting,
    /// The call was performed; its answer waits for [`Hold::release`].
    Held,
    /// Released: the answer went out (or will, as soon as the call arrives).
    Released,
    /// The client closed the connection while the answer was held: it gave up on the call.
    Abandoned,
}

/// A handle on one held answer. Clones share it.
#[derive(Clone, Debug)]
pub struct Hold {
    phase: Arc<watch::Sender<HoldPhase>>,
}

impl Hold {
    /// Lets the answer go (at once if the call is already held, else as soon as it arrives).
    pub fn release(&self) {
        self.phase.send_if_modified(|phase| match phase {
            HoldPhase::Waiting | HoldPhase::Held => {
                *phase = HoldPhase::Released;
                true
            }
            HoldPhase::Released | HoldPhase::Abandoned => false,
        });
    }

    /// The phase now.
    pub fn phase(&self) -> HoldPhase {
        *self.phase.borrow()
    }

    /// Waits until the call has arrived and is held (or went further); panics after `timeout`.
    pub async fn arrived(&self, timeout: Duration) {
        self.wait_until(|p| p != HoldPhase::Waiting, "the held call to arrive", timeout).await;
    }

    /// Waits until the client gave up on the held call; panics after `timeout` or if the answer
    /// was released first.
    pub async fn abandoned(&self, timeout: Duration) {
        self.wait_until(|p| matches!(p, HoldPhase::Abandoned | HoldPhase::Released), "the client to give up", timeout)
            .await;
        assert_eq!(self.phase(), HoldPhase::Abandoned, "the held answer was released before the client gave up");
    }

    async fn wait_until(&self, pred: impl Fn(HoldPhase) -> bool, what: &str, timeout: Duration) {
        let mut phase = self.phase.subscribe();
        if tokio::time::timeout(timeout, phase.wait_for(|p| pred(*p))).await.is_err() {
            panic!("fake Telegram: waited {timeout:?} for {what}; the held call is {:?}", self.phase());
        }
    }

    /// Inside the handler: holds the answer until released; if the handler is dropped first
    /// (hyper drops it when the client closes the connection), the hold is `Abandoned`.
    async fn hold_answer(&self) {
        struct GiveUp<'a>(&'a watch::Sender<HoldPhase>);
        impl Drop for GiveUp<'_> {
            fn drop(&mut self) {
                self.0.send_if_modified(|phase| {
                    let held = *phase == HoldPhase::Held;
                    if held {
                        *phase = HoldPhase::Abandoned;
                    }
                    held
                });
            }
        }
        self.phase.send_if_modified(|phase| {
            let waiting = *phase == HoldPhase::Waiting;
            if waiting {
                *phase = HoldPhase::Held;
            }
            waiting
        });
        let _give_up = GiveUp(&self.phase);
        let mut phase = self.phase.subscribe();
        let _ = phase.wait_for(|p| *p == HoldPhase::Released).await;
    }
}
