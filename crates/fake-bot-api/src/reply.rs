//! The Bot API's answers: `{"ok":true,"result":…}` or `{"ok":false,"error_code":…,
//! "description":…,"parameters":…}` with the matching HTTP status, and bodies that break off.

use std::io;

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::{StreamExt as _, stream};
use serde_json::{Map, Value, json};

/// A decided answer: status and body.
pub(crate) struct Reply {
    pub(crate) status: StatusCode,
    pub(crate) body: ReplyBody,
}

pub(crate) enum ReplyBody {
    Json(Value),
    Html(String),
}

impl Reply {
    /// The content type and the bytes of the body.
    pub(crate) fn envelope(&self) -> (&'static str, Vec<u8>) {
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

pub(crate) fn ok(result: Value) -> Reply {
    Reply { status: StatusCode::OK, body: ReplyBody::Json(json!({ "ok": true, "result": result })) }
}

pub(crate) fn error(status: StatusCode, description: &str, parameters: Option<Value>) -> Reply {
    let mut body = json!({ "ok": false, "error_code": status.as_u16(), "description": description });
    if let Some(parameters) = parameters {
        body["parameters"] = parameters;
    }
    Reply { status, body: ReplyBody::Json(body) }
}

pub(crate) fn bad_request(description: &str) -> Reply {
    error(StatusCode::BAD_REQUEST, description, None)
}

/// The answer to a send without a usable numeric `chat_id`.
pub(crate) fn missing_chat(params: &Map<String, Value>) -> Reply {
    if params.contains_key("chat_id") {
        bad_request("Bad Request: chat not found")
    } else {
        bad_request("Bad Request: chat_id is empty")
    }
}

pub(crate) fn unauthorized() -> Reply {
    error(StatusCode::UNAUTHORIZED, "Unauthorized", None)
}

pub(crate) fn not_found() -> Reply {
    error(StatusCode::NOT_FOUND, "Not Found", None)
}

/// A body that sends `prefix` and then fails, which makes hyper drop the connection short of
/// the announced Content-Length.
pub(crate) fn then_break(
    prefix: Bytes,
    reason: &'static str,
) -> impl futures_util::Stream<Item = io::Result<Bytes>> + Send {
    let prefix = stream::once(async move { Ok(prefix) });
    let failure = stream::once(async move {
        // Hyper flushes what it has buffered when the body is not ready; without this pause it
        // could see the error first and drop the headers and the prefix with it.
        tokio::task::yield_now().await;
        Err(io::Error::new(io::ErrorKind::ConnectionReset, reason))
    });
    prefix.chain(failure)
}
