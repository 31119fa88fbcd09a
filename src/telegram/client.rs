//! Outbound Bot API calls: teloxide for the methods and types, our own reqwest clients for the
//! timeouts, and our own streaming for file downloads.
//!
//! Every teloxide error is turned into a [`TelegramError`] (`errors.rs`) that says what the
//! caller should do (wait, retry, give up, stop writing to the chat, stop the bot).

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, TryStreamExt};
use teloxide::Bot;
use teloxide::payloads::{
    EditMessageTextSetters, SendDocumentSetters, SendMessageSetters, SetMyCommandsSetters, SetWebhookSetters,
};
use teloxide::prelude::Requester;
use teloxide::requests::JsonRequest;
use teloxide::types::{
    AllowedUpdate, BotCommand, CallbackQueryId, ChatAction, ChatId, FileId, InlineKeyboardButton, InlineKeyboardMarkup,
    InputFile, MessageId as TelegramMessageId, ReplyParameters,
};
use url::Url;

use crate::domain::Button;
use crate::domain::incoming::Incoming;
use crate::domain::{BotId, ChatRef, MessageId, UpdateId};
use crate::telegram::BotToken;
pub use crate::telegram::errors::TelegramError;
use crate::telegram::errors::{api_origin, describe_reqwest};

/// The updates docket asks Telegram for: messages, edited messages (a document replaced in a
/// sent message is a new submission) and presses on its buttons.
const TAKEN_UPDATES: [AllowedUpdate; 3] =
    [AllowedUpdate::Message, AllowedUpdate::EditedMessage, AllowedUpdate::CallbackQuery];

/// getUpdates, answered as raw JSON: each update is read from what Telegram sent
/// (`updates::read_update`), not only from what teloxide's types could read of it.
#[derive(serde::Serialize)]
struct RawGetUpdates {
    offset: i32,
    timeout: u32,
    allowed_updates: [AllowedUpdate; 3],
}

impl teloxide::requests::Payload for RawGetUpdates {
    type Output = Vec<serde_json::Value>;
    const NAME: &'static str = "getUpdates";

    fn timeout_hint(&self) -> Option<Duration> {
        Some(Duration::from_secs(u64::from(self.timeout)))
    }
}

/// A file as getFile describes it. The path is short-lived and, with the download URL built
/// from it, a secret: it is never stored or logged.
pub struct RemoteFile {
    path: String,
    /// Size Telegram reports, when it does.
    pub size: Option<u64>,
}

impl std::fmt::Debug for RemoteFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteFile").field("path", &"(hidden)").field("size", &self.size).finish()
    }
}

/// A stream of file bytes.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes, TelegramError>> + Send>>;

/// A message Telegram accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// Its message id in the chat.
    pub message_id: MessageId,
    /// For documents: the file_id to send it again without uploading.
    pub file_id: Option<String>,
}

/// Where a document to send comes from.
#[derive(Debug, Clone)]
pub enum DocumentSource {
    /// Already on Telegram's servers.
    FileId(String),
    /// Upload from disk (streamed), under this file name.
    Path {
        /// The local file.
        path: PathBuf,
        /// The name the person sees.
        file_name: String,
        /// A JPEG of at most 320 × 320 pixels and 200 kB that Telegram shows as the document's
        /// thumbnail (its preview), uploaded with it.
        thumbnail: Option<PathBuf>,
    },
    /// Upload `length` bytes of a file from `offset` (a part lying in a stored ZIP), streamed.
    Slice {
        /// The local file.
        path: PathBuf,
        /// Where the bytes start.
        offset: u64,
        /// How many.
        length: u64,
        /// The name the person sees.
        file_name: String,
    },
}

/// How to reach the Bot API.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// The Bot API base URL.
    pub api_url: Url,
    /// A self-hosted server started with `--local`: getFile returns absolute paths.
    pub local_api: bool,
    /// How long a getUpdates long poll waits.
    pub poll_timeout: Duration,
    /// How long a regular call (send, edit, getMe, getUpdates) may wait for its answer beyond
    /// `poll_timeout`; after that a send counts as lost (its outcome is unknown).
    pub answer_timeout: Duration,
    /// A file server in front of a local Bot API server's disk (`<url><absolute path>`).
    pub local_files_url: Option<Url>,
}

/// The Bot API, as docket uses it. Cheap to clone.
#[derive(Clone)]
pub struct TelegramClient {
    /// Regular calls (send, edit, getMe, getUpdates).
    bot: Bot,
    /// getFile: a local server answers only after fetching the whole file itself.
    slow_bot: Bot,
    /// Downloads, streamed.
    http: reqwest::Client,
    token: BotToken,
    settings: ClientSettings,
}

impl std::fmt::Debug for TelegramClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramClient")
            .field("token", &self.token)
            .field("local_api", &self.settings.local_api)
            .finish()
    }
}

fn http_client(read_idle: Duration) -> reqwest::Client {
    // No total timeout: uploads and downloads of large files take as long as they take. A
    // connection that goes silent for `read_idle` is dead, though.
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .read_timeout(read_idle)
        .tcp_keepalive(Duration::from_secs(30))
        .build()
        .expect("the TLS backend is compiled in, so building a client cannot fail")
}

impl TelegramClient {
    /// Builds the clients. Nothing is sent yet.
    pub fn new(token: BotToken, settings: ClientSettings) -> Self {
        let regular = http_client(settings.poll_timeout + settings.answer_timeout);
        let slow = http_client(Duration::from_secs(30 * 60));
        let bot = Bot::with_client(token.expose(), regular).set_api_url(settings.api_url.clone());
        let slow_bot = Bot::with_client(token.expose(), slow).set_api_url(settings.api_url.clone());
        Self { bot, slow_bot, http: http_client(Duration::from_secs(120)), token, settings }
    }

    /// The teloxide bot for regular calls.
    pub fn bot(&self) -> &Bot {
        &self.bot
    }

    /// The numeric bot id (from the token).
    pub fn bot_id(&self) -> BotId {
        self.token.bot_id()
    }

    /// The long-poll timeout.
    pub fn poll_timeout(&self) -> Duration {
        self.settings.poll_timeout
    }

    /// Checks the token with getMe and returns the bot's username.
    pub async fn get_me(&self) -> Result<String, TelegramError> {
        match self.bot.get_me().await.map_err(TelegramError::from_request) {
            Ok(me) => Ok(me.user.username.clone().unwrap_or_default()),
            Err(e) => Err(self.told_apart(e).await),
        }
    }

    /// teloxide reads a 401 Unauthorized and a 404 Not Found as the same `InvalidToken`; for
    /// an `Unauthorized`, asks getMe once more over plain HTTP to see which status it was. The
    /// request's URL holds the token: it is never logged or put in an error.
    async fn told_apart(&self, e: TelegramError) -> TelegramError {
        if e != TelegramError::Unauthorized {
            return e;
        }
        // Built as teloxide builds it: the base URL's path, then `bot<token>/getMe`.
        let mut url = self.settings.api_url.clone();
        match url.path_segments_mut() {
            Ok(mut segments) => {
                segments.push(&format!("bot{}", self.token.expose())).push("getMe");
            }
            Err(()) => return e,
        }
        match self.http.get(url).timeout(self.settings.answer_timeout).send().await {
            Ok(answer) if answer.status() == reqwest::StatusCode::NOT_FOUND => {
                TelegramError::NotFound(api_origin(&self.settings.api_url))
            }
            _ => e,
        }
    }

    /// setMyCommands: the command list Telegram's apps offer, each command with its description,
    /// for users whose app is in `language_code` (`None`: everyone whose language has no list of
    /// its own).
    pub async fn set_commands(
        &self,
        commands: &[(&str, String)],
        language_code: Option<&str>,
    ) -> Result<(), TelegramError> {
        let commands: Vec<BotCommand> =
            commands.iter().map(|(name, description)| BotCommand::new(*name, description.clone())).collect();
        let mut req = self.bot.set_my_commands(commands);
        if let Some(code) = language_code {
            req = req.language_code(code);
        }
        req.await.map_err(TelegramError::from_request)?;
        Ok(())
    }

    /// The next updates from `offset` on (getUpdates, long-polling up to the poll timeout), each
    /// with its id and what it means to docket. Telegram drops the updates before `offset`.
    pub async fn get_updates(&self, offset: i64) -> Result<Vec<(UpdateId, Incoming)>, TelegramError> {
        let payload = RawGetUpdates {
            offset: i32::try_from(offset).unwrap_or(i32::MAX),
            timeout: u32::try_from(self.settings.poll_timeout.as_secs()).unwrap_or(30),
            allowed_updates: TAKEN_UPDATES,
        };
        let updates = match JsonRequest::new(self.bot.clone(), payload).await.map_err(TelegramError::from_request) {
            Ok(updates) => updates,
            Err(e) => return Err(self.told_apart(e).await),
        };
        // Telegram gives every update an id; one without cannot be registered or confirmed.
        Ok(updates.iter().filter_map(super::updates::read_update).collect())
    }

    /// The webhook Telegram delivers this bot's updates to, if one is set (getWebhookInfo).
    /// While one is set, getUpdates is refused.
    pub async fn webhook(&self) -> Result<Option<Url>, TelegramError> {
        let info = self.bot.get_webhook_info().await.map_err(TelegramError::from_request)?;
        Ok(info.url)
    }

    /// Sets the webhook (setWebhook): Telegram posts every update to `url` with `secret` in the
    /// `X-Telegram-Bot-Api-Secret-Token` header, over at most `max_connections` connections.
    /// The same kinds of update as getUpdates asks for.
    pub async fn set_webhook(&self, url: &Url, secret: &str, max_connections: u32) -> Result<(), TelegramError> {
        self.bot
            .set_webhook(url.clone())
            .secret_token(secret)
            .max_connections(u8::try_from(max_connections).unwrap_or(100))
            .allowed_updates(TAKEN_UPDATES)
            .await
            .map_err(TelegramError::from_request)?;
        Ok(())
    }

    /// Removes the webhook (deleteWebhook), so getUpdates works. The updates waiting for the
    /// webhook are kept: polling receives them.
    pub async fn delete_webhook(&self) -> Result<(), TelegramError> {
        self.bot.delete_webhook().await.map_err(TelegramError::from_request)?;
        Ok(())
    }

    /// getFile, right before a download.
    pub async fn get_file(&self, file_id: &str) -> Result<RemoteFile, TelegramError> {
        let file = self.slow_bot.get_file(FileId(file_id.to_owned())).await.map_err(TelegramError::from_request)?;
        // teloxide reports a missing size as u32::MAX.
        let size = (file.meta.size != u32::MAX).then_some(u64::from(file.meta.size));
        Ok(RemoteFile { path: file.path, size })
    }

    /// The path to read directly when the file lives on this machine's disk: a local Bot API
    /// server (`--local`) answered with an absolute path and no file server fronts it.
    pub fn local_source(&self, file: &RemoteFile) -> Option<PathBuf> {
        let path = Path::new(&file.path);
        (self.settings.local_api && path.is_absolute() && self.settings.local_files_url.is_none())
            .then(|| path.to_path_buf())
    }

    /// Opens the bytes of a file described by getFile: over HTTP from the Bot API, or from the
    /// local server's disk when it runs with `--local` and answered with an absolute path.
    pub async fn open_file(&self, file: &RemoteFile) -> Result<ByteStream, TelegramError> {
        let absolute = self.settings.local_api && Path::new(&file.path).is_absolute();
        if let (true, Some(base)) = (absolute, &self.settings.local_files_url) {
            let mut url = base.clone();
            let prefix = url.path().trim_end_matches('/').to_owned();
            url.set_path(&format!("{prefix}{}", file.path));
            return self.stream_http(url).await;
        }
        if absolute {
            let f = tokio::fs::File::open(&file.path).await.map_err(|e| {
                TelegramError::Transient(format!("cannot open the local Bot API server's copy: {}", e.kind()))
            })?;
            let stream = tokio_util::io::ReaderStream::with_capacity(f, 1024 * 1024).map_err(|e| {
                TelegramError::Transient(format!("reading the local Bot API server's copy: {}", e.kind()))
            });
            return Ok(Box::pin(stream));
        }
        let mut url = self.settings.api_url.clone();
        // Join without percent-encoding the slashes of the path (teloxide's download_file does).
        let base = url.path().trim_end_matches('/').to_owned();
        url.set_path(&format!("{base}/file/bot{}/{}", self.token.expose(), file.path.trim_start_matches('/')));
        self.stream_http(url).await
    }

    /// GETs `url` and streams its body. The URL may hold the token: errors never include it.
    async fn stream_http(&self, url: Url) -> Result<ByteStream, TelegramError> {
        let response = self.http.get(url).send().await.map_err(|e| TelegramError::from_reqwest(&e.without_url()))?;
        let status = response.status();
        if status.as_u16() == 429 {
            return Err(TelegramError::RetryAfter(Duration::from_secs(5)));
        }
        if status.is_server_error() {
            return Err(TelegramError::Transient(format!("download answered HTTP {}", status.as_u16())));
        }
        if !status.is_success() {
            // An expired or unknown link: a fresh getFile on the next attempt fixes it.
            return Err(TelegramError::Transient(format!("download refused with HTTP {}", status.as_u16())));
        }
        let stream = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|e| TelegramError::Transient(describe_reqwest(&e.without_url()))));
        Ok(Box::pin(stream))
    }

    /// sendMessage as plain text, replying to `reply_to` when given, with `buttons` under it (one
    /// per row).
    pub async fn send_text(
        &self,
        chat: ChatRef,
        text: &str,
        reply_to: Option<MessageId>,
        buttons: &[Button],
    ) -> Result<Sent, TelegramError> {
        let mut req = self.bot.send_message(ChatId(chat.0), text);
        if let Some(id) = reply_to.and_then(|id| i32::try_from(id.0).ok()) {
            req = req.reply_parameters(ReplyParameters::new(TelegramMessageId(id)).allow_sending_without_reply());
        }
        if !buttons.is_empty() {
            req = req.reply_markup(keyboard(buttons));
        }
        let msg = req.await.map_err(TelegramError::from_request)?;
        Ok(Sent { message_id: MessageId(i64::from(msg.id.0)), file_id: None })
    }

    /// editMessageText: a status message shows its job's new state. "Message is not modified"
    /// (the text is already there) counts as done.
    /// With `buttons`, they are under the edited message (an edit without them removes any).
    pub async fn edit_text(
        &self,
        chat: ChatRef,
        message_id: MessageId,
        text: &str,
        buttons: &[Button],
    ) -> Result<Sent, TelegramError> {
        let id = i32::try_from(message_id.0)
            .map_err(|_| TelegramError::Permanent(format!("message id {message_id} is out of range")))?;
        let mut req = self.bot.edit_message_text(ChatId(chat.0), TelegramMessageId(id), text);
        if !buttons.is_empty() {
            req = req.reply_markup(keyboard(buttons));
        }
        match req.await.map_err(TelegramError::from_request) {
            Ok(_) | Err(TelegramError::NotModified) => Ok(Sent { message_id, file_id: None }),
            Err(e) => Err(e),
        }
    }

    /// answerCallbackQuery: the person's app stops showing the button as busy. Best effort: an
    /// unanswered press only spins for a while.
    pub async fn answer_button(&self, query_id: &str) -> Result<(), TelegramError> {
        self.bot
            .answer_callback_query(CallbackQueryId(query_id.to_owned()))
            .await
            .map_err(TelegramError::from_request)?;
        Ok(())
    }

    /// deleteMessage: removes `message` from `chat`. A bot may delete what people sent it in a
    /// private chat within 48 hours, and in a group only as an admin with that right.
    pub async fn delete_message(&self, chat: ChatRef, message: MessageId) -> Result<(), TelegramError> {
        let id = TelegramMessageId(i32::try_from(message.0).unwrap_or(i32::MAX));
        self.bot.delete_message(ChatId(chat.0), id).await.map_err(TelegramError::from_request)?;
        Ok(())
    }

    /// sendChatAction "upload_document": the person sees "sending a file…" while a result
    /// uploads. Telegram shows it for about 5 s, so the caller repeats it.
    pub async fn send_upload_action(&self, chat: ChatRef) -> Result<(), TelegramError> {
        self.bot
            .send_chat_action(ChatId(chat.0), ChatAction::UploadDocument)
            .await
            .map_err(TelegramError::from_request)?;
        Ok(())
    }

    /// sendDocument with a caption; an upload streams the file from disk.
    pub async fn send_document(
        &self,
        chat: ChatRef,
        source: &DocumentSource,
        caption: &str,
        reply_to: Option<MessageId>,
    ) -> Result<Sent, TelegramError> {
        let input = match source {
            DocumentSource::FileId(id) => InputFile::file_id(FileId(id.clone())),
            DocumentSource::Path { path, file_name, .. } => InputFile::file(path.clone()).file_name(file_name.clone()),
            DocumentSource::Slice { path, offset, length, file_name } => {
                use tokio::io::{AsyncReadExt, AsyncSeekExt};
                let mut file = tokio::fs::File::open(path)
                    .await
                    .map_err(|e| TelegramError::Transient(format!("opening the result: {e}")))?;
                file.seek(std::io::SeekFrom::Start(*offset))
                    .await
                    .map_err(|e| TelegramError::Transient(format!("reading the result: {e}")))?;
                InputFile::read(file.take(*length)).file_name(file_name.clone())
            }
        };
        let bot = if matches!(source, DocumentSource::FileId(_)) { &self.bot } else { &self.slow_bot };
        let mut req = bot.send_document(ChatId(chat.0), input).caption(caption);
        if let DocumentSource::Path { thumbnail: Some(thumbnail), .. } = source {
            req = req.thumbnail(InputFile::file(thumbnail.clone()).file_name("preview.jpg"));
        }
        if let Some(id) = reply_to.and_then(|id| i32::try_from(id.0).ok()) {
            req = req.reply_parameters(ReplyParameters::new(TelegramMessageId(id)).allow_sending_without_reply());
        }
        let msg = req.await.map_err(TelegramError::from_request)?;
        let file_id = msg.document().map(|d| d.file.id.0.clone());
        Ok(Sent { message_id: MessageId(i64::from(msg.id.0)), file_id })
    }
}

/// An inline keyboard of `buttons`, one per row.
fn keyboard(buttons: &[Button]) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new(buttons.iter().map(|b| [InlineKeyboardButton::callback(b.label.clone(), b.data.clone())]))
}
