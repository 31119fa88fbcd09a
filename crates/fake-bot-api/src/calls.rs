//! The record of API requests, and waiting for the ones a test expects.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::Value;

use crate::server::{FakeTelegram, Shared};

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
    ///
    /// [`Fault::ResponseLost`]: crate::Fault::ResponseLost
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
    /// The thumbnail uploaded with it (`thumbnail`), if any.
    pub thumbnail: Option<Vec<u8>>,
}

impl FakeTelegram {
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
}

impl Shared {
    /// Records a call; returns its index in the call list.
    pub(crate) fn record(
        &self,
        method: &str,
        params: Value,
        upload: Option<Upload>,
        status: StatusCode,
        at: Instant,
    ) -> usize {
        let call = Call { method: method.to_owned(), params, upload, status: status.as_u16(), at };
        let index = {
            let mut state = self.state();
            state.calls.push(Arc::new(call));
            state.calls.len() - 1
        };
        self.calls_seen.send_modify(|n| *n += 1);
        index
    }
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
