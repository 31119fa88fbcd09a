//! Files and downloads: the files the fake stores (added by a test or uploaded by the bot),
//! getFile and the expiring `file_path` links it mints (or, in `--local` mode, absolute paths on
//! disk), the download route `/file/bot{token}/{*path}`, and scripted download faults.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Path, State as AxumState};
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::stream;
use serde_json::{Map, Value, json};

use crate::TEST_TOKEN;
use crate::reply::{Reply, bad_request, not_found, ok, then_break, unauthorized};
use crate::server::{FakeTelegram, Shared};

/// Default for [`FakeTelegram::set_download_limit`]: the Bot API's 20 MiB getFile limit.
const DEFAULT_DOWNLOAD_LIMIT: u64 = 20 * 1024 * 1024;
/// Default for [`FakeTelegram::set_link_ttl`]: Telegram keeps a `file_path` valid for 1 hour.
const DEFAULT_LINK_TTL: Duration = Duration::from_secs(3600);

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

/// One file download request, as recorded by the fake; see [`FakeTelegram::download_log`].
#[derive(Clone, Debug)]
pub struct Download {
    /// The file the requested `file_path` was minted for, if the path was known and unexpired.
    pub file_id: Option<String>,
    /// When the request arrived (comparable with [`Call::at`](crate::Call::at)).
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

/// The files part of the fake's state.
pub(crate) struct FileStore {
    /// Every file by file_id.
    pub(crate) stored: HashMap<String, StoredFile>,
    next_file: u64,
    /// `file_path`s minted by getFile.
    links: HashMap<String, Link>,
    next_link: u64,
    download_limit: u64,
    link_ttl: Duration,
    /// `--local` mode: getFile writes the file under this folder and answers its absolute path.
    local_dir: Option<PathBuf>,
    faults: Vec<ScriptedDownloadFault>,
    /// Download requests answered, whatever the status.
    downloads: usize,
    log: Vec<Download>,
}

impl Default for FileStore {
    fn default() -> Self {
        Self {
            stored: HashMap::new(),
            next_file: 1,
            links: HashMap::new(),
            next_link: 1,
            download_limit: DEFAULT_DOWNLOAD_LIMIT,
            link_ttl: DEFAULT_LINK_TTL,
            local_dir: None,
            faults: Vec::new(),
            downloads: 0,
            log: Vec::new(),
        }
    }
}

pub(crate) struct StoredFile {
    pub(crate) bytes: Bytes,
    pub(crate) unique_id: String,
    pub(crate) name: Option<String>,
    pub(crate) mime: Option<String>,
}

struct Link {
    file_id: String,
    expires_at: Instant,
}

struct ScriptedDownloadFault {
    file_id: Option<String>,
    fault: DownloadFault,
    remaining: Option<usize>,
}

impl FakeTelegram {
    /// Stores `bytes` as a new file that getFile, downloads and sendDocument accept.
    pub fn add_file(&self, bytes: Vec<u8>) -> FileRef {
        let mut state = self.state();
        state.files.store(Bytes::from(bytes), None, None)
    }

    /// Sets the largest file getFile will serve (default 20 MiB); larger files answer
    /// 400 "Bad Request: file is too big".
    pub fn set_download_limit(&self, bytes: u64) {
        self.state().files.download_limit = bytes;
    }

    /// Sets how long a `file_path` minted by later getFile calls stays downloadable (default
    /// 1 hour). `Duration::ZERO` mints paths that are already expired.
    pub fn set_link_ttl(&self, ttl: Duration) {
        self.state().files.link_ttl = ttl;
    }

    /// Behaves like a Bot API server started with `--local`: getFile copies the file to
    /// `<dir>/<token>/documents/file_<n>` and answers that ABSOLUTE path, which is not served
    /// over HTTP (the bot must read it from disk).
    pub fn set_local_mode(&self, dir: &std::path::Path) {
        self.state().files.local_dir = Some(dir.to_path_buf());
    }

    /// Expires every `file_path` minted so far; downloading them answers 404.
    pub fn expire_file_links(&self) {
        let now = Instant::now();
        for link in self.state().files.links.values_mut() {
            link.expires_at = now;
        }
    }

    /// Applies `fault` to the next `times` downloads of any file (`None`: to all of them).
    /// Faults set for a specific file with [`fail_downloads_for`](Self::fail_downloads_for) win.
    pub fn fail_downloads(&self, fault: DownloadFault, times: Option<usize>) {
        self.state().files.faults.push(ScriptedDownloadFault { file_id: None, fault, remaining: times });
    }

    /// Applies `fault` to the next `times` downloads of the file `file_id` (`None`: to all).
    pub fn fail_downloads_for(&self, file_id: &str, fault: DownloadFault, times: Option<usize>) {
        self.state().files.faults.push(ScriptedDownloadFault {
            file_id: Some(file_id.to_owned()),
            fault,
            remaining: times,
        });
    }

    /// How many file download requests the fake has answered, whatever the status.
    pub fn downloads(&self) -> usize {
        self.state().files.downloads
    }

    /// Every file download request so far, oldest first, with the file it asked for.
    pub fn download_log(&self) -> Vec<Download> {
        self.state().files.log.clone()
    }
}

impl FileStore {
    /// Stores a new file and names it.
    pub(crate) fn store(&mut self, bytes: Bytes, name: Option<String>, mime: Option<String>) -> FileRef {
        let n = self.next_file;
        self.next_file += 1;
        let file_id = format!("BQACAgIAAxkBAAIfake{n:06}");
        let file_unique_id = format!("AgADfake{n:06}");
        let size = bytes.len() as u64;
        self.stored.insert(file_id.clone(), StoredFile { bytes, unique_id: file_unique_id.clone(), name, mime });
        FileRef { file_id, file_unique_id, size }
    }

    fn take_download_fault(&mut self, file_id: &str) -> Option<DownloadFault> {
        let index = self
            .faults
            .iter()
            .position(|f| f.file_id.as_deref() == Some(file_id))
            .or_else(|| self.faults.iter().position(|f| f.file_id.is_none()))?;
        let scripted = &mut self.faults[index];
        let fault = scripted.fault.clone();
        if let Some(remaining) = &mut scripted.remaining {
            *remaining = remaining.saturating_sub(1);
            if *remaining == 0 {
                self.faults.remove(index);
            }
        }
        Some(fault)
    }
}

/// getFile: a fresh `file_path` for the file (or, in `--local` mode, its absolute path).
pub(crate) fn get_file(state: &mut crate::server::FakeState, params: &Map<String, Value>) -> Reply {
    let files = &mut state.files;
    let Some(file_id) = params.get("file_id").and_then(Value::as_str) else {
        return bad_request("Bad Request: file_id not specified");
    };
    let Some(file) = files.stored.get(file_id) else {
        return bad_request("Bad Request: invalid file_id");
    };
    let size = file.bytes.len() as u64;
    if size > files.download_limit {
        return bad_request("Bad Request: file is too big");
    }
    let unique_id = file.unique_id.clone();
    let extension = file.name.as_deref().and_then(extension_of).unwrap_or_else(|| "bin".to_owned());
    let n = files.next_link;
    files.next_link += 1;
    let path = format!("documents/file_{n}.{extension}");
    if let Some(dir) = files.local_dir.clone() {
        let local = dir.join(TEST_TOKEN).join(&path);
        let written = std::fs::create_dir_all(local.parent().unwrap_or(&dir))
            .and_then(|()| std::fs::write(&local, &files.stored[file_id].bytes));
        if written.is_err() {
            return bad_request("Bad Request: the local server could not store the file");
        }
        let local = local.to_string_lossy().into_owned();
        return ok(json!({ "file_id": file_id, "file_unique_id": unique_id, "file_size": size, "file_path": local }));
    }
    let expires_at = Instant::now() + files.link_ttl;
    files.links.insert(path.clone(), Link { file_id: file_id.to_owned(), expires_at });
    ok(json!({ "file_id": file_id, "file_unique_id": unique_id, "file_size": size, "file_path": path }))
}

/// `GET /file/bot{token}/{*path}`: a download of a minted `file_path`.
pub(crate) async fn download(
    AxumState(shared): AxumState<Arc<Shared>>,
    Path((bot_token, path)): Path<(String, String)>,
) -> Response {
    let at = Instant::now();
    let (bytes, fault) = {
        let mut state = shared.state();
        // The token check inline: `Shared::accepts_token` would take the lock again.
        let refused = bot_token.strip_prefix("bot") != Some(shared.token.as_str()) || state.polling.token_revoked;
        let files = &mut state.files;
        files.downloads += 1;
        if refused {
            files.log.push(Download { file_id: None, at, status: StatusCode::UNAUTHORIZED.as_u16() });
            return unauthorized().into_response();
        }
        let file_id =
            files.links.get(&path).filter(|link| Instant::now() < link.expires_at).map(|link| link.file_id.clone());
        let bytes = file_id.as_ref().and_then(|id| files.stored.get(id)).map(|f| f.bytes.clone());
        let (Some(file_id), Some(bytes)) = (file_id, bytes) else {
            files.log.push(Download { file_id: None, at, status: StatusCode::NOT_FOUND.as_u16() });
            return not_found().into_response();
        };
        files.log.push(Download { file_id: Some(file_id.clone()), at, status: StatusCode::OK.as_u16() });
        let fault = files.take_download_fault(&file_id);
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

fn file_response(content_length: usize, body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(content_length));
    response
}

/// A file name's extension, lowercased and cut to ASCII letters and digits.
fn extension_of(name: &str) -> Option<String> {
    let (_, extension) = name.rsplit_once('.')?;
    let extension: String =
        extension.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect();
    (!extension.is_empty()).then_some(extension)
}

/// The MIME type Telegram would guess from an uploaded file's name.
pub(crate) fn mime_for_name(name: &str) -> Option<&'static str> {
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
