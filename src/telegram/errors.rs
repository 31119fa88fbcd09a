//! What went wrong with a Bot API call ([`TelegramError`]), sorted by what the caller should do,
//! with descriptions that never contain the token or a file URL: reqwest errors are stripped of
//! their URL before they are described.

use std::time::Duration;

use teloxide::{ApiError, RequestError};
use url::Url;

/// What went wrong with a Bot API call, sorted by what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TelegramError {
    /// Flood control: wait exactly this long before calling again.
    #[error("Telegram asked to wait {0:?}")]
    RetryAfter(Duration),
    /// A passing failure (no connection could be made, 5xx): try again later.
    #[error("transient Telegram error: {0}")]
    Transient(String),
    /// The request may have reached Telegram but the answer was lost (a timeout after the
    /// request went out, a connection cut mid-answer).
    #[error("outcome unknown: {0}")]
    Lost(String),
    /// The Bot API refused the token itself (401 Unauthorized): nothing works until a person
    /// fixes it.
    #[error("the Bot API refused the token (401 Unauthorized): check TELOXIDE_TOKEN / revoked?")]
    Unauthorized,
    /// The Bot API answered 404 Not Found: the server at `[telegram] api_url` (its origin
    /// given) is not a Bot API, or does not know the method. A configuration error, not a
    /// revoked token.
    #[error(
        "the Bot API at {0} answered 404 Not Found: check [telegram] api_url (it must be the server's root, such \
         as https://api.telegram.org)"
    )]
    NotFound(String),
    /// getUpdates while a webhook is set (409 Conflict): the webhook must be deleted first.
    #[error("a webhook is set, so getUpdates is refused (409 Conflict)")]
    WebhookActive,
    /// getUpdates was overtaken by another getUpdates with the same token (409 Conflict):
    /// another process is polling for this bot.
    #[error("another process is polling with the same token (409 Conflict)")]
    OtherPoller,
    /// The chat blocked the bot, was deleted or kicked it out: stop writing to it.
    #[error("chat unavailable: {0}")]
    ChatGone(String),
    /// The group became a supergroup with this id.
    #[error("chat migrated to {0}")]
    Migrated(i64),
    /// The message to edit has the same content already (counts as success).
    #[error("message is not modified")]
    NotModified,
    /// Telegram refused the request for good (bad file id, file too big, bad request).
    #[error("refused by Telegram: {0}")]
    Permanent(String),
}

impl TelegramError {
    /// Classifies a teloxide error.
    pub fn from_request(err: RequestError) -> Self {
        match err {
            RequestError::RetryAfter(s) => Self::RetryAfter(s.duration()),
            RequestError::MigrateToChatId(id) => Self::Migrated(id.0),
            RequestError::Api(api) => Self::from_api(api),
            RequestError::Network(e) => Self::from_reqwest(&e),
            // teloxide turns a non-JSON answer (an HTML 502 page of a proxy) into a parse error.
            RequestError::InvalidJson { .. } => {
                Self::Transient("the Bot API answered with something that is not JSON (a proxy error page?)".into())
            }
            RequestError::Io(e) => Self::Transient(format!("local I/O error while sending: {}", e.kind())),
        }
    }

    fn from_api(api: ApiError) -> Self {
        match api {
            ApiError::MessageNotModified => Self::NotModified,
            ApiError::InvalidToken => Self::Unauthorized,
            ApiError::CantGetUpdates => Self::WebhookActive,
            ApiError::TerminatedByOtherGetUpdates => Self::OtherPoller,
            // teloxide knows the webhook conflict only without the "Conflict: " and the advice
            // Telegram sends with it.
            ApiError::Unknown(text)
                if text.starts_with("Conflict: can't use getUpdates method while webhook is active") =>
            {
                Self::WebhookActive
            }
            ApiError::Unknown(text) if text.starts_with("Conflict: terminated by other getUpdates request") => {
                Self::OtherPoller
            }
            ApiError::BotBlocked
            | ApiError::UserDeactivated
            | ApiError::ChatNotFound
            | ApiError::BotKicked
            | ApiError::BotKickedFromSupergroup
            | ApiError::BotKickedFromChannel
            | ApiError::CantInitiateConversation
            | ApiError::CantTalkWithBots => Self::ChatGone(api.to_string()),
            ApiError::Unknown(text) => {
                if text.starts_with("Bad Request") || text.starts_with("Forbidden") || text.starts_with("Unauthorized")
                {
                    if text.starts_with("Forbidden") { Self::ChatGone(text) } else { Self::Permanent(text) }
                } else {
                    // teloxide hides the HTTP status; a JSON 5xx ("Internal Server Error",
                    // "Bad Gateway") arrives here as an unknown error.
                    Self::Transient(text)
                }
            }
            other => Self::Permanent(other.to_string()),
        }
    }

    /// Classifies a reqwest error without ever printing its URL.
    ///
    /// Only an error before anything was sent is [`Transient`](Self::Transient): no connection
    /// could be made (refused, DNS, the connect timeout; reqwest marks all of these
    /// `is_connect()`), or the request could not even be built. Anything later — a timeout
    /// waiting for the answer (reqwest's read timeout starts with the request, so it cannot
    /// tell a request still being written from one Telegram is working on), a cut connection, an
    /// answer that cannot be read — may come after Telegram acted on the request: its outcome
    /// is unknown ([`Lost`](Self::Lost)).
    pub fn from_reqwest(e: &reqwest::Error) -> Self {
        let what = describe_reqwest(e);
        if e.is_connect() || e.is_builder() { Self::Transient(what) } else { Self::Lost(what) }
    }

    /// Whether trying again later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::RetryAfter(_) | Self::Transient(_) | Self::Lost(_) | Self::OtherPoller)
    }
}

/// A URL's scheme, host and port: what may be said of the Bot API's address (a path may hold a
/// secret).
pub(super) fn api_origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// A description of a reqwest error, without the URL (which holds the token).
pub fn describe_reqwest(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() && e.is_connect() {
        "timed out connecting"
    } else if e.is_timeout() && e.is_body() {
        "timed out while transferring the body"
    } else if e.is_timeout() {
        "timed out waiting for the answer"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_body() {
        "the connection broke while transferring the body"
    } else if e.is_decode() {
        "could not decode the answer"
    } else if e.is_request() {
        "the request failed"
    } else {
        "HTTP error"
    };
    match e.status() {
        Some(s) => format!("{kind} (HTTP {})", s.as_u16()),
        None => kind.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request to `addr` with a short read timeout, as the regular client makes them.
    async fn request(addr: std::net::SocketAddr) -> reqwest::Error {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .read_timeout(Duration::from_millis(300))
            .build()
            .expect("a client");
        client.post(format!("http://{addr}/bot1:x/SendMessage")).body("{}").send().await.expect_err("no answer")
    }

    #[tokio::test]
    async fn a_refused_connection_is_transient() {
        // Bound, then closed: nothing listens on the port any more.
        let addr = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind").local_addr().expect("addr");
        let e = request(addr).await;
        assert!(matches!(TelegramError::from_reqwest(&e), TelegramError::Transient(_)), "{e:?}");
    }

    /// A [`request`] to a loopback server that accepts the connection, then hands it to `then`.
    async fn request_accepted_by<F>(then: impl FnOnce(tokio::net::TcpStream) -> F + Send + 'static) -> reqwest::Error
    where
        F: std::future::Future<Output = ()> + Send,
    {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move {
            let (socket, _) = listener.accept().await.expect("accept");
            then(socket).await;
        });
        let e = request(addr).await;
        server.abort();
        e
    }

    #[tokio::test]
    async fn no_answer_after_sending_is_an_unknown_outcome() {
        // Accepts and reads, never answers: the request went out.
        let e = request_accepted_by(|socket| async move {
            std::future::pending::<()>().await;
            drop(socket);
        })
        .await;
        assert_eq!(TelegramError::from_reqwest(&e), TelegramError::Lost("timed out waiting for the answer".into()));
    }

    #[tokio::test]
    async fn a_connection_cut_before_the_answer_is_an_unknown_outcome() {
        let e = request_accepted_by(|socket| async move { drop(socket) }).await;
        assert!(matches!(TelegramError::from_reqwest(&e), TelegramError::Lost(_)), "{e:?}");
    }
}
