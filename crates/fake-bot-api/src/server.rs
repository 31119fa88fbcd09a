//! The handle, the state behind it, the router, and the pipeline every API request goes through:
//! parse, check the token, apply a scripted fault, check the flood limits, perform the method,
//! record the call, answer.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, Request, State as AxumState};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tokio::sync::{oneshot, watch};
use url::Url;

use crate::calls::{Call, Upload};
use crate::commands::CommandsKey;
use crate::faults::{Fault, FaultScript, fault_reply, lost_response};
use crate::files::{FileStore, download};
use crate::flood::{Flood, counts_against_limits};
use crate::methods::{ChatLog, METHODS, perform};
use crate::reply::{error, not_found, unauthorized};
use crate::request::{attached_part, lenient_i64, parse_request};
use crate::updates::{UpdateQueue, get_updates};
use crate::webhook::PollingState;
use crate::{DEFAULT_BOT_USERNAME, TEST_TOKEN};

/// A handle on a running fake Bot API server. Clones share the server and its state. When the
/// last clone is dropped the server stops accepting connections, closes idle ones and answers
/// long polls in flight with `[]`.
#[derive(Clone)]
pub struct FakeTelegram {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) shared: Arc<Shared>,
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
pub(crate) struct Shared {
    pub(crate) token: String,
    pub(crate) bot_id: i64,
    /// The bot's username in getMe and in the bot's messages; see [`FakeTelegram::set_bot_username`].
    /// Behind its own lock: it is read while `state` is held.
    pub(crate) bot_username: Mutex<String>,
    state: Mutex<FakeState>,
    /// Bumped on every recorded call; `wait_for_call` watches it.
    pub(crate) calls_seen: watch::Sender<u64>,
    /// Bumped on every pushed update; long polls watch it.
    pub(crate) updates_seen: watch::Sender<u64>,
}

/// Everything the fake remembers, one part per concern; behind [`Shared`]'s mutex.
pub(crate) struct FakeState {
    /// Updates not yet confirmed by an `offset` (`updates`).
    pub(crate) updates: UpdateQueue,
    /// Messages per chat, pushed in updates or sent by the bot (`methods`).
    pub(crate) chats: HashMap<i64, ChatLog>,
    /// The bot's commands per scope and language (`methods`), as setMyCommands left them.
    pub(crate) commands: HashMap<CommandsKey, Value>,
    /// The `language_code` each test user's app reports (`updates`); unset: `"en"`.
    pub(crate) user_languages: HashMap<i64, Option<String>>,
    /// Stored files, getFile links and downloads (`files`).
    pub(crate) files: FileStore,
    /// Scripted answers and blocked chats (`faults`).
    pub(crate) faults: FaultScript,
    /// Telegram's flood limits, as this fake enforces them (`flood`).
    pub(crate) flood: Flood,
    /// Webhook, long polls in flight, revoked token (`webhook`).
    pub(crate) polling: PollingState,
    /// Button presses sent and answered (`buttons`).
    pub(crate) presses: crate::buttons::Presses,
    /// Every recorded API call (`calls`).
    pub(crate) calls: Vec<Arc<Call>>,
    /// Set when the last handle is dropped.
    pub(crate) stopped: bool,
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
                updates: UpdateQueue::default(),
                chats: HashMap::new(),
                commands: HashMap::new(),
                user_languages: HashMap::new(),
                presses: crate::buttons::Presses::default(),
                files: FileStore::default(),
                faults: FaultScript::default(),
                flood: Flood::default(),
                polling: PollingState::default(),
                calls: Vec::new(),
                stopped: false,
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

    pub(crate) fn state(&self) -> MutexGuard<'_, FakeState> {
        self.inner.shared.state()
    }
}

impl Shared {
    pub(crate) fn state(&self) -> MutexGuard<'_, FakeState> {
        // A panicking test must not turn every later assertion into a PoisonError.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `/bot{token}/{method}`: every API request.
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
    let (upload_part, thumbnail) = if canonical == Some("sendDocument") {
        let mut parts = parts;
        (attached_part(&params, &mut parts, "document"), attached_part(&params, &mut parts, "thumbnail"))
    } else {
        (None, None)
    };
    let upload = upload_part.as_ref().map(|p| Upload {
        file_name: p.file_name.clone(),
        bytes: p.bytes.to_vec(),
        thumbnail: thumbnail.as_ref().map(|t| t.bytes.to_vec()),
    });
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
        && let Some(retry_after) = shared.state().flood.check(chat_id, at)
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
