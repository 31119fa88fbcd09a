//! A fake Telegram Bot API server for docket's end-to-end tests and benchmarks.
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
//!   `getWebhookInfo`, `deleteWebhook`, `setMyCommands`, `getMyCommands`, `deleteMyCommands`
//!   (a list per scope and `language_code`, read back with [`FakeTelegram::commands`]),
//!   `close` and `logOut`;
//! - test users whose apps report a `language_code` ([`FakeTelegram::set_user_language`];
//!   `"en"` unless set);
//! - scripted failures: [`Fault`]s per method (optionally per chat), consumed in order,
//!   [`DownloadFault`]s for the next N downloads, and blocked chats;
//! - Telegram's flood limits ([`FloodLimits`]), answered with 429 and listed as violations;
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
//! Not faked: delivering updates to a webhook, inline keyboards beyond echoing `reply_markup`
//! and pressing a message's first button ([`FakeTelegram::press_button`]), and entity parsing for `parse_mode`. `allowed_updates` of getUpdates is honoured: an update of
//! a kind the bot did not ask for is dropped, as Telegram never delivers it.
//!
//! # Modules
//!
//! One module per concern, each adding its own `impl FakeTelegram` block and owning its slice
//! of the shared state:
//! - `server`: the handle, the shared state, the router and the pipeline every API request
//!   goes through (token, scripted fault, flood limits, the method, the answer);
//! - `request` and `reply`: reading parameters (query, JSON, form, multipart) and writing the
//!   Bot API's envelopes;
//! - `calls`: the record of API requests and waiting for them;
//! - `methods`: what each method does to the chats (messages, edits, documents, commands);
//! - `updates`: the getUpdates queue, long polling, and builders of incoming updates;
//! - `files`: stored files, getFile links, downloads and their faults;
//! - `faults`: scripted answers per method and chat, blocked chats, held answers;
//! - `flood`: Telegram's flood limits;
//! - `buttons`: a person pressing an inline button, and the bot answering the press;
//! - `webhook`: who may poll (a webhook, a competing long poll, a revoked token).

mod buttons;
mod calls;
mod commands;
mod faults;
mod files;
mod flood;
mod methods;
mod reply;
mod request;
mod server;
mod updates;
mod webhook;

pub use calls::{Call, Upload};
pub use faults::{Fault, Hold, HoldPhase};
pub use files::{Download, DownloadFault, FileRef};
pub use flood::FloodLimits;
pub use server::FakeTelegram;

/// The bot token the fake accepts; any other token gets 401 Unauthorized.
pub const TEST_TOKEN: &str = "123456:TEST-docket-fake-token";

/// Default for [`FakeTelegram::set_bot_username`].
pub const DEFAULT_BOT_USERNAME: &str = "docket_test_bot";
