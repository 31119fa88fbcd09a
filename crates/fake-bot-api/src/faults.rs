//! Scripted answers: [`Fault`]s for the next calls of a method (optionally to one chat),
//! consumed in order; chats that blocked the bot; and [`Hold`]s, answers held until the test
//! lets them go.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use serde_json::json;
use tokio::sync::watch;

use crate::reply::{Reply, ReplyBody, bad_request, error, then_break};
use crate::server::{FakeTelegram, Shared};

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

/// The faults part of the fake's state.
#[derive(Default)]
pub(crate) struct FaultScript {
    /// Faults still to come, oldest first.
    scripted: Vec<ScriptedFault>,
    /// Chats whose sends and edits answer 403, with the description.
    pub(crate) blocked: HashMap<i64, String>,
}

struct ScriptedFault {
    /// Lowercased method name.
    method: String,
    chat_id: Option<i64>,
    fault: Fault,
}

impl FakeTelegram {
    /// Queues `fault` for the next call of `method` (any case), whatever its chat. Faults of one
    /// method are consumed in the order they were queued.
    pub fn fail_next(&self, method: &str, fault: Fault) {
        self.state().faults.scripted.push(ScriptedFault { method: method.to_ascii_lowercase(), chat_id: None, fault });
    }

    /// Queues `fault` for the next call of `method` whose `chat_id` is `chat_id`.
    pub fn fail_next_for_chat(&self, method: &str, chat_id: i64, fault: Fault) {
        self.state().faults.scripted.push(ScriptedFault {
            method: method.to_ascii_lowercase(),
            chat_id: Some(chat_id),
            fault,
        });
    }

    /// From now on every send*/edit* call to `chat_id` answers 403 with `description` (e.g.
    /// "Forbidden: bot was blocked by the user") and is not performed. Scripted [`Fault`]s for
    /// such a call still come first.
    pub fn block_chat(&self, chat_id: i64, description: &str) {
        self.state().faults.blocked.insert(chat_id, description.to_owned());
    }

    /// Undoes [`block_chat`](Self::block_chat).
    pub fn unblock_chat(&self, chat_id: i64) {
        self.state().faults.blocked.remove(&chat_id);
    }

    /// Holds the answer to the next call of `method` to `chat_id`: the call is performed and
    /// recorded at once, and answered only after [`Hold::release`]. The returned handle tells
    /// when the call arrived and whether the client gave up on it (closed the connection) first.
    pub fn hold_next_for_chat(&self, method: &str, chat_id: i64) -> Hold {
        let hold = Hold { phase: Arc::new(watch::Sender::new(HoldPhase::Waiting)) };
        self.fail_next_for_chat(method, chat_id, Fault::Hold(hold.clone()));
        hold
    }

    /// Like [`hold_next_for_chat`](Self::hold_next_for_chat), for the next call of `method`
    /// whatever its chat (setWebhook, getMe…).
    pub fn hold_next(&self, method: &str) -> Hold {
        let hold = Hold { phase: Arc::new(watch::Sender::new(HoldPhase::Waiting)) };
        self.fail_next(method, Fault::Hold(hold.clone()));
        hold
    }
}

impl Shared {
    /// The first scripted fault for this call, taken off the script.
    pub(crate) fn take_fault(&self, method: &str, chat_id: Option<i64>) -> Option<Fault> {
        let mut state = self.state();
        let lower = method.to_ascii_lowercase();
        let scripted = &mut state.faults.scripted;
        let index = scripted.iter().position(|f| f.method == lower && (f.chat_id.is_none() || f.chat_id == chat_id))?;
        Some(scripted.remove(index).fault)
    }
}

/// The answer a fault gives instead of performing the call.
pub(crate) fn fault_reply(fault: Fault) -> Reply {
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
pub(crate) fn lost_response(reply: &Reply) -> Response {
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
// Held answers

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
    pub(crate) async fn hold_answer(&self) {
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
