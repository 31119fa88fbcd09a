//! Reading a request's parameters the way the Bot API does: query string, JSON, urlencoded or
//! multipart bodies, with the file parts of a multipart upload kept apart.

use std::collections::HashSet;

use axum::extract::{FromRequest, Multipart, Request};
use axum::http::header::CONTENT_TYPE;
use bytes::Bytes;
use serde_json::{Map, Value, json};

/// Form and multipart fields that stay strings in [`Call::params`] even when they look like
/// numbers or JSON (a message text of "42" is text, not a number).
///
/// [`Call::params`]: crate::Call::params
const STRING_FIELDS: &[&str] =
    &["text", "caption", "document", "file_id", "title", "description", "quote", "url", "parse_mode"];

/// A file part of a multipart request.
pub(crate) struct FilePart {
    pub(crate) name: String,
    pub(crate) file_name: Option<String>,
    pub(crate) content_type: Option<String>,
    pub(crate) bytes: Bytes,
}

/// Reads query, JSON, urlencoded or multipart parameters, and the multipart file parts.
pub(crate) async fn parse_request(request: Request) -> Result<(Map<String, Value>, Vec<FilePart>), String> {
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

/// The uploaded file of a sendDocument request's `field` (`document`, `thumbnail`): the part the
/// field attaches (`attach://<name>`), or a file part named as the field. Taken out of `parts`.
pub(crate) fn attached_part(params: &Map<String, Value>, parts: &mut Vec<FilePart>, field: &str) -> Option<FilePart> {
    let wanted = match params.get(field).and_then(Value::as_str) {
        Some(value) => value.strip_prefix("attach://")?.to_owned(),
        None => field.to_owned(),
    };
    let at = parts.iter().position(|p| p.name == wanted)?;
    Some(parts.remove(at))
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
pub(crate) fn lenient_i64(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A text parameter; a number (from a JSON client) is taken as its decimal text.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The `reply_markup` parameter if it is an inline keyboard: the only kind a Message echoes.
pub(crate) fn inline_markup(params: &Map<String, Value>) -> Option<Value> {
    let markup = match params.get("reply_markup")? {
        Value::String(s) => serde_json::from_str(s).ok()?,
        other => other.clone(),
    };
    markup.get("inline_keyboard").is_some().then_some(markup)
}
