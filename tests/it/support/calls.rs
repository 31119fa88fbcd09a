//! Reading what the fake Bot API received: the text or caption of a call, which chat it went
//! to, and the name of a document it uploaded. One copy here, so that every test reads a call the
//! same way (an absent field reads as empty, never as a panic: the assertion then says what came).

use fake_bot_api::Call;

/// The `text` of a call (a sendMessage or editMessageText), empty when it has none.
pub fn text_of(call: &Call) -> String {
    call.params["text"].as_str().unwrap_or_default().to_owned()
}

/// The `caption` of a call (a sendDocument), empty when it has none.
pub fn caption_of(call: &Call) -> String {
    call.params["caption"].as_str().unwrap_or_default().to_owned()
}

/// Matches the calls addressed to `chat`.
pub fn to_chat(chat: i64) -> impl Fn(&Call) -> bool {
    move |c: &Call| c.params["chat_id"].as_i64() == Some(chat)
}

/// Matches the calls to `chat` whose text contains `words`.
pub fn says(chat: i64, words: &'static str) -> impl Fn(&Call) -> bool {
    move |c: &Call| to_chat(chat)(c) && text_of(c).contains(words)
}

/// The file name of the document a call uploaded, if it uploaded one that had a name.
pub fn uploaded_name(call: &Call) -> Option<&str> {
    call.upload.as_ref().and_then(|u| u.file_name.as_deref())
}
