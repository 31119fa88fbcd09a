//! Choosing what to do with a document: the caption's first word picks the operation and its
//! arguments, a caption that names none gets help and no job, `/mode` sets the chat's default,
//! an image without a caption becomes a PDF (by its content, whatever its declared type), `ocr` runs `[processing.external.ocr]` in the
//! person's language, a refusal names the format, and a decrypt's password is erased when its
//! job ends and never reaches the logs.

use docket::config::ExternalToolConfig;
use docket::domain::{ChatRef, JobState, MessageKind, Operation, Ticket};
use docket::store::MessageFilter;
use fake_bot_api::FileRef;

use crate::per_backend;
use crate::support::calls::{says, text_of, to_chat, uploaded_name};
use crate::support::upload;
use crate::support::{Backend, DEADLINE, TestApp, eventually, fixture, sh_ocr};

per_backend!(
    a_caption_picks_the_operation_and_its_arguments,
    a_caption_naming_no_operation_gets_help_and_no_job,
    mode_sets_the_chats_default_and_an_image_becomes_a_pdf,
    a_refusal_names_the_format_and_what_to_send_instead,
    ocr_runs_the_configured_program_in_the_persons_language,
    a_decrypt_password_is_erased_when_the_job_ends_and_never_logged,
    a_decrypt_password_never_reaches_the_database_in_plain_text,
    a_password_given_in_a_reply_to_the_locked_file_opens_it_and_that_reply_is_deleted,
    a_button_starts_a_further_run_with_its_own_result_and_asking_again_returns_it,
    mode_offers_its_choices_as_buttons,
    a_declaration_that_disagrees_with_the_content_is_shown,
    a_further_run_cut_by_a_crash_finishes_after_the_restart,
    cancel_stops_the_unfinished_runs_of_a_ticket,
    a_gif_and_a_heic_photo_sent_as_files_come_back_as_pdfs,
);

async fn a_caption_picks_the_operation_and_its_arguments(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send(500, upload::pdf("pdf/text-1page.pdf", "contract.pdf").caption("Rotate 180 2,4").language("en"));
    let reply = app.fake.wait_for_call("sendMessage", says(500, "ticket #1"), DEADLINE).await;
    assert!(text_of(&reply).contains("It will get: rotate 180 2,4."), "{}", text_of(&reply));
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.submission.operation, Operation::parse("rotate 180 2,4").expect("parses"));

    // A caption that only says optimize is the plain default, and its result keeps the name.
    app.send(501, upload::pdf("pdf/text-1page.pdf", "plain.pdf").caption("optimize").language("en"));
    let sent = app.fake.wait_for_call("sendDocument", to_chat(501), DEADLINE).await;
    assert_eq!(uploaded_name(&sent), Some("plain.pdf"));
}

async fn a_caption_naming_no_operation_gets_help_and_no_job(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send(510, upload::pdf("pdf/text-1page.pdf", "a.pdf").caption("please shrink it").language("en"));
    let help = app.fake.wait_for_call("sendMessage", says(510, "I did not start anything"), DEADLINE).await;
    let help = text_of(&help);
    assert!(help.contains("\"please\" is not an operation"), "{help}");
    assert!(help.contains("shrink — much smaller"), "the operations are listed: {help}");
    app.send(510, upload::pdf("pdf/text-20pages.pdf", "b.pdf").caption("pages").language("en"));
    let missing = app.fake.wait_for_call("sendMessage", says(510, "pages: arguments missing"), DEADLINE).await;
    assert!(text_of(&missing).starts_with("I did not start anything"), "{}", text_of(&missing));
    app.send(510, upload::pdf("pdf/text-20pages.pdf", "c.pdf").caption("decrypt").language("en"));
    app.fake.wait_for_call("sendMessage", says(510, "decrypt: arguments missing"), DEADLINE).await;

    assert!(app.store.job(Ticket(1)).await.expect("read").is_none(), "no job for a caption that was not understood");
    assert!(app.fake.calls_to("getFile").is_empty(), "nothing was downloaded");
}

async fn mode_sets_the_chats_default_and_an_image_becomes_a_pdf(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send_text(520, "/mode");
    let now = app.fake.wait_for_call("sendMessage", says(520, "without a caption get optimize"), DEADLINE).await;
    assert!(text_of(&now).contains("the bot's default"), "{}", text_of(&now));
    app.send_text(520, "/mode pages");
    app.fake.wait_for_call("sendMessage", says(520, "\"pages\" cannot be a default"), DEADLINE).await;
    app.send_text(520, "/mode shrink");
    app.fake.wait_for_call("sendMessage", says(520, "now get shrink"), DEADLINE).await;

    app.send_document(520, fixture("pdf/text-1page.pdf"), "scan.pdf", "application/pdf");
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.submission.operation, Operation::Shrink { target: None }, "the chat's default");
    // Another chat still has the bot's default.
    app.send_document(521, fixture("pdf/text-1page.pdf"), "other.pdf", "application/pdf");
    let other = app.wait_for_job(Ticket(2), |j| j.state == JobState::Ready).await;
    assert_eq!(other.submission.operation, Operation::Optimize);
    // An image sent without a caption becomes a PDF, whatever the chat's default.
    app.send_document(520, fixture("other/red-8x8.png"), "red.png", "image/png");
    let image = app.wait_for_job(Ticket(3), |j| j.state.is_terminal()).await;
    assert_eq!(image.submission.operation, Operation::ToPdf);
}

async fn a_refusal_names_the_format_and_what_to_send_instead(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send(530, upload::pdf("other/red-8x8.png", "pages.pdf").caption("split").language("en"));
    let notice = app.fake.wait_for_call("sendMessage", says(530, "failed"), DEADLINE).await;
    assert_eq!(
        text_of(&notice),
        "#1 failed: pages.pdf is not a PDF (the content looks like a PNG image): split takes a PDF; send the \
         image with the caption topdf to make it one."
    );
    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Failed).await;
    assert!(job.error.as_deref().is_some_and(|e| e.contains("split takes a PDF")), "{:?}", job.error);

    // An image operation refuses a PDF, naming both.
    app.send(531, upload::pdf("pdf/text-1page.pdf", "a.pdf").caption("topdf").language("en"));
    let notice = app.fake.wait_for_call("sendMessage", says(531, "failed"), DEADLINE).await;
    assert_eq!(
        text_of(&notice),
        "#2 failed: a.pdf was not processed: topdf takes a picture (JPEG, PNG, TIFF, WebP, GIF, HEIC, AVIF) or an office document (Word, Excel, PowerPoint, OpenDocument, RTF); this is a PDF document: send it \
         with a caption such as optimize or shrink."
    );
}

/// A stand-in OCR program: copies the input to the output and writes the `{lang}` it was given
/// to `lang_file`, so the test sees which language reached the program.
fn recording_ocr(lang_file: &std::path::Path) -> ExternalToolConfig {
    let script = "cp \"$1\" \"$2\" && printf '%s' \"$3\" > \"$4\"";
    // Where it records the languages it was given.
    let reach = lang_file.parent().map(std::path::Path::to_owned).into_iter().collect();
    sh_ocr(script, &["{lang}".into(), lang_file.display().to_string()], reach)
}

async fn ocr_runs_the_configured_program_in_the_persons_language(backend: Backend) {
    // Without [processing.external.ocr], ocr fails saying so.
    let bare = TestApp::spawn_with(backend, |_| {}).await;
    bare.send(540, upload::pdf("pdf/scan-2pages.pdf", "scan.pdf").caption("ocr").language("en"));
    let notice = bare.fake.wait_for_call("sendMessage", says(540, "failed"), DEADLINE).await;
    assert!(text_of(&notice).contains("OCR is not set up on this bot"), "{}", text_of(&notice));
    drop(bare);

    let dir = tempfile::tempdir().expect("temp dir");
    let lang_file = dir.path().join("lang");
    let tool = recording_ocr(&lang_file);
    let app = with_ocr(backend, tool).await;
    // The person's language when the caption names none: Telegram's `ru` is Tesseract's `rus`.
    app.send(541, upload::pdf("pdf/scan-2pages.pdf", "scan.pdf").caption("ocr").language("ru"));
    let sent = app.fake.wait_for_call("sendDocument", to_chat(541), DEADLINE).await;
    assert_eq!(uploaded_name(&sent), Some("scan-ocr.pdf"));
    assert_eq!(std::fs::read_to_string(&lang_file).expect("the program ran"), "rus");
    // The caption's languages win.
    app.send(542, upload::pdf("pdf/text-1page.pdf", "t.pdf").caption("ocr deu+eng").language("ru"));
    app.fake.wait_for_call("sendDocument", to_chat(542), DEADLINE).await;
    assert_eq!(std::fs::read_to_string(&lang_file).expect("the program ran"), "deu+eng");
}

async fn a_decrypt_password_is_erased_when_the_job_ends_and_never_logged(backend: Backend) {
    const PASSWORD: &str = "Tr0ub4dor-and-3";
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send(
        550,
        upload::pdf("pdf/aes256-userpw.pdf", "locked.pdf").caption(&format!("decrypt {PASSWORD}")).language("en"),
    );
    let reply = app.fake.wait_for_call("sendMessage", says(550, "ticket #1"), DEADLINE).await;
    assert!(text_of(&reply).contains("I delete your message that carries it"), "{}", text_of(&reply));
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    // The run had the password: the person's message that carried it is gone.
    let deleted = app.fake.wait_for_call("deleteMessage", to_chat(550), DEADLINE).await;
    assert_eq!(deleted.status, 200);
    assert_eq!(deleted.params["message_id"].as_i64(), Some(job.submission.message_id.0));
    assert_eq!(job.submission.operation.name(), "decrypt");
    assert!(!format!("{job:?}").contains(PASSWORD), "Debug never shows the password");
    assert_eq!(app.count("SELECT COUNT(*) FROM jobs WHERE secret IS NOT NULL").await, 0, "erased when the job ended");
    assert_eq!(app.count("SELECT COUNT(*) FROM jobs WHERE arguments <> ''").await, 0, "never among the arguments");
    let messages = app.store.messages(&MessageFilter::chat(ChatRef(550))).await.expect("read");
    assert!(messages.iter().all(|m| !m.body.contains(PASSWORD)), "never in the outbox: {messages:#?}");
    assert!(!crate::support::logs::captured().contains(PASSWORD), "never in the logs");
}

/// Every byte the database holds as it is on disk or would go into a backup: the SQLite file
/// with its WAL and shared memory, or a `pg_dump` of the PostgreSQL database.
fn database_bytes(app: &TestApp) -> Vec<u8> {
    match &app.config.storage.database_url {
        docket::store::DatabaseUrl::Sqlite(path) => {
            let mut bytes = Vec::new();
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let file = std::path::PathBuf::from(format!("{}{suffix}", path.display()));
                bytes.extend(std::fs::read(&file).unwrap_or_default());
            }
            assert!(!bytes.is_empty(), "no database file at {}", path.display());
            bytes
        }
        docket::store::DatabaseUrl::Postgres(url) => {
            let dump = std::process::Command::new("pg_dump").arg("--dbname").arg(url).output().expect("pg_dump runs");
            assert!(dump.status.success(), "pg_dump: {}", String::from_utf8_lossy(&dump.stderr));
            dump.stdout
        }
    }
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

async fn a_decrypt_password_never_reaches_the_database_in_plain_text(backend: Backend) {
    const PASSWORD: &str = "Zebra-Quartz-7734";
    let app = TestApp::spawn_with(backend, |_| {}).await;
    // The download waits on getFile: the job is recorded, with its password, and not yet run.
    let held = app.fake.hold_next("getFile");
    app.send(
        551,
        upload::pdf("pdf/aes256-userpw.pdf", "locked.pdf").caption(&format!("decrypt {PASSWORD}")).language("en"),
    );
    held.arrived(DEADLINE).await;
    assert_eq!(app.count("SELECT COUNT(*) FROM jobs WHERE secret IS NOT NULL").await, 1, "kept, sealed");
    assert!(!holds(&database_bytes(&app), PASSWORD), "the password is in the database in plain text");
    held.release();
    app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert!(!holds(&database_bytes(&app), PASSWORD), "the password is in the database in plain text");
}

async fn a_password_given_in_a_reply_to_the_locked_file_opens_it_and_that_reply_is_deleted(backend: Backend) {
    const PASSWORD: &str = "Lantern-Ochre-5521";
    let app = TestApp::spawn_with(backend, |_| {}).await;
    // Forwarded, as such files often are: no MIME type.
    let file = app.fake.add_file(fixture("pdf/aes256-userpw-unique.pdf"));
    let document = app.fake.document_update(552, 552, &file, Some("locked.pdf"), Some(""));
    let document_message = document["message"].clone();
    app.fake.push_update(document);
    let failed = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(failed.state, JobState::Failed);
    app.fake.wait_for_call("sendMessage", says(552, "reply to the file with “decrypt PASSWORD”"), DEADLINE).await;

    // The person answers the file itself with the password.
    let mut reply = app.fake.text_update(552, 552, &format!("decrypt {PASSWORD}"));
    reply["message"]["reply_to_message"] = document_message.clone();
    let reply_id = reply["message"]["message_id"].as_i64().expect("a message id");
    let held = app.fake.hold_next("getFile");
    app.fake.push_update(reply);
    held.arrived(DEADLINE).await;
    assert!(!holds(&database_bytes(&app), PASSWORD), "the password is in the database in plain text");
    held.release();

    let run = app.wait_for_job(Ticket(2), |j| j.state.is_terminal()).await;
    assert_eq!(run.state, JobState::Ready, "{run:?}");
    assert_eq!((run.submission.run_of, run.submission.operation.name()), (Some(Ticket(1)), "decrypt"));
    assert_eq!(run.submission.file_unique_id, file.file_unique_id, "the replied file, downloaded again");
    let deleted = app.fake.wait_for_call("deleteMessage", to_chat(552), DEADLINE).await;
    assert_eq!(deleted.params["message_id"].as_i64(), Some(reply_id), "the reply carried the password, not the file");
    assert_ne!(Some(reply_id), document_message["message_id"].as_i64());
    assert_eq!(app.count("SELECT COUNT(*) FROM jobs WHERE secret IS NOT NULL").await, 0, "erased when the job ended");
    assert!(!holds(&database_bytes(&app), PASSWORD), "the password is in the database in plain text");
    assert!(!crate::support::logs::captured().contains(PASSWORD), "never in the logs");
}

/// docket on `backend` with `tool` as its `[processing.external.ocr]`, running.
async fn with_ocr(backend: Backend, tool: ExternalToolConfig) -> TestApp {
    TestApp::spawn_with(backend, |c| {
        c.processing.external.insert("ocr".into(), tool);
    })
    .await
}

/// Sends a one-page PDF from `chat` as `name` (the app's first job, ticket 1) and waits until it
/// is ready and its status message offers buttons; returns the file, that message's id and the
/// buttons' labels.
async fn ready_with_its_buttons(app: &TestApp, chat: i64, name: &str) -> (FileRef, i64, Vec<String>) {
    let (file, _) = app.first_pdf_ready(chat, name).await;
    let status = status_message_of(app, Ticket(1)).await;
    let labels = eventually(DEADLINE, async || {
        let labels = app.fake.button_labels(chat, status);
        if labels.is_empty() { Err("no buttons yet".to_owned()) } else { Ok(labels) }
    })
    .await;
    (file, status, labels)
}

/// The Telegram message id of run `ticket`'s status message (its ticket reply), once delivered.
async fn status_message_of(app: &TestApp, ticket: Ticket) -> i64 {
    eventually(DEADLINE, async || {
        let messages = app.store.messages(&MessageFilter::job(ticket)).await.expect("read");
        messages
            .iter()
            .find(|m| m.kind == MessageKind::TicketReply)
            .and_then(|m| m.telegram_message_id)
            .map(|id| id.0)
            .ok_or_else(|| format!("no delivered ticket reply for {ticket}: {messages:#?}"))
    })
    .await
}

async fn a_button_starts_a_further_run_with_its_own_result_and_asking_again_returns_it(backend: Backend) {
    let dir = tempfile::tempdir().expect("temp dir");
    let lang_file = dir.path().join("lang");
    let tool = recording_ocr(&lang_file);
    let app = with_ocr(backend, tool).await;
    let (file, status, labels) = ready_with_its_buttons(&app, 560, "doc.pdf").await;
    // The ready status message offers the other operations that take a PDF.
    assert_eq!(labels, ["shrink", "split", "text", "info", "ocr"]);
    let downloads = app.fake.calls_to("getFile").len();

    // A tap starts that run of the same ticket, downloaded again by its file_id.
    let press = app.fake.press_button_labelled(560, 560, status, "ocr").expect("an ocr button");
    let run = app.wait_for_job(Ticket(2), |j| j.state == JobState::Ready).await;
    assert_eq!((run.submission.run_of, run.submission.operation.name()), (Some(Ticket(1)), "ocr"));
    assert_eq!(run.submission.file_unique_id, file.file_unique_id);
    let sent = app.fake.wait_for_call("sendDocument", |c| uploaded_name(c) == Some("doc-ocr.pdf"), DEADLINE).await;
    assert!(
        sent.params["caption"].as_str().unwrap_or_default().starts_with("#1 ocr ready: doc.pdf"),
        "{:?}",
        sent.params
    );
    assert_eq!(app.fake.calls_to("getFile").len(), downloads + 1, "the further run fetched the document again");
    eventually(DEADLINE, async || if app.fake.press_answered(&press) { Ok(()) } else { Err("unanswered".to_owned()) })
        .await;
    let first = app.store.job(Ticket(1)).await.expect("read").expect("the first run");
    assert_eq!((first.state, first.submission.operation), (JobState::Ready, Operation::Optimize), "untouched");

    // The same button again, and the same file with the same caption: the stored result by its
    // file_id, no new run, no new download.
    let delivered =
        app.wait_for_job(Ticket(2), |j| j.result.as_ref().is_some_and(|r| r.telegram_file_id.is_some())).await;
    let file_id = delivered.result.and_then(|r| r.telegram_file_id).expect("file id");
    app.fake.press_button_labelled(560, 560, status, "ocr").expect("an ocr button");
    let mut update = app.fake.document_update(560, 560, &file, Some("doc.pdf"), Some("application/pdf"));
    update["message"]["caption"] = serde_json::json!("ocr");
    app.fake.push_update(update);
    let by_id = app
        .fake
        .wait_for_calls("sendDocument", |c| c.params["document"].as_str() == Some(file_id.as_str()), 2, DEADLINE)
        .await;
    assert!(by_id.iter().all(|c| c.upload.is_none()), "sent again by file_id, not uploaded");
    assert!(app.store.job(Ticket(3)).await.expect("read").is_none(), "no second ocr run");
    assert_eq!(app.fake.calls_to("getFile").len(), downloads + 1, "no new download");

    // /status lists the ticket's runs; /get sends each kept result.
    app.send_text(560, "/status 1");
    let listed = app.fake.wait_for_call("sendMessage", says(560, "#1 ocr — doc.pdf"), DEADLINE).await;
    assert!(text_of(&listed).starts_with("#1 — doc.pdf"), "{}", text_of(&listed));
    let before = app.fake.calls_to("sendDocument").len();
    app.send_text(560, "/get 1");
    app.fake.wait_for_calls("sendDocument", |_| true, before + 2, DEADLINE).await;
}

async fn mode_offers_its_choices_as_buttons(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send_text(570, "/mode");
    let offer = app.fake.wait_for_call("sendMessage", says(570, "without a caption get optimize"), DEADLINE).await;
    let message_id = eventually(DEADLINE, async || {
        let messages = app.store.messages(&MessageFilter::chat(ChatRef(570))).await.expect("read");
        messages.iter().find_map(|m| m.telegram_message_id).map(|id| id.0).ok_or_else(|| "not delivered".to_owned())
    })
    .await;
    assert!(offer.params["reply_markup"].to_string().contains("mode:shrink"), "{:?}", offer.params);
    assert_eq!(app.fake.button_labels(570, message_id), Operation::MODES);
    app.fake.press_button_labelled(570, 570, message_id, "text").expect("a text button");
    app.fake.wait_for_call("sendMessage", says(570, "now get text"), DEADLINE).await;
    app.send_document(570, fixture("pdf/text-1page.pdf"), "t.pdf", "application/pdf");
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.submission.operation, Operation::Text);
}

async fn a_declaration_that_disagrees_with_the_content_is_shown(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    // A PDF sent as an image with a caption: processed as asked, and the result says what it is.
    app.send(
        580,
        upload::document(fixture("pdf/text-1page.pdf"), "scan.png", "image/png").caption("optimize").language("en"),
    );
    let sent = app.fake.wait_for_call("sendDocument", to_chat(580), DEADLINE).await;
    let caption = sent.params["caption"].as_str().unwrap_or_default();
    assert!(caption.ends_with("\n(sent as scan.png, but it is a PDF document.)"), "{caption}");
    assert_eq!(uploaded_name(&sent), Some("scan.pdf"));
    // Without a caption the declared type chose topdf; the content is a PDF, so the run gets
    // what a PDF without a caption gets (the bot's default), and says so.
    app.send_document(581, fixture("pdf/text-20pages.pdf"), "photo.jpg", "image/jpeg");
    let sent = app.fake.wait_for_call("sendDocument", to_chat(581), DEADLINE).await;
    let caption = sent.params["caption"].as_str().unwrap_or_default();
    assert!(caption.ends_with("\n(sent as photo.jpg, but it is a PDF document.)"), "{caption}");
    let job = app.wait_for_job(Ticket(2), |j| j.state.is_terminal()).await;
    assert_eq!((job.state, &job.submission.operation), (JobState::Ready, &Operation::Optimize), "{job:#?}");
    assert!(!job.submission.chosen_by_default, "the run now names what it did");
    // In a chat with its own /mode, that mode.
    app.send_text(582, "/mode text");
    app.fake.wait_for_call("sendMessage", says(582, "now get text"), DEADLINE).await;
    app.send_document(582, fixture("pdf/text-1page.pdf"), "photo.png", "image/png");
    let job = app.wait_for_job(Ticket(3), |j| j.state.is_terminal()).await;
    assert_eq!((job.state, &job.submission.operation), (JobState::Ready, &Operation::Text), "{job:#?}");
    // An image declared as a PDF becomes a PDF, as an image without a caption does.
    app.send_document(583, fixture("other/red-8x8.png"), "report.pdf", "application/pdf");
    let job = app.wait_for_job(Ticket(4), |j| j.state.is_terminal()).await;
    assert_eq!((job.state, &job.submission.operation), (JobState::Ready, &Operation::ToPdf), "{job:#?}");
    // A caption is a choice: a PDF sent as an image with the caption topdf is refused as one.
    app.send(
        584,
        upload::document(fixture("pdf/text-1page.pdf"), "p.jpg", "image/jpeg").caption("topdf").language("en"),
    );
    let notice = app.fake.wait_for_call("sendMessage", says(584, "failed"), DEADLINE).await;
    assert!(
        text_of(&notice).ends_with("topdf takes a picture (JPEG, PNG, TIFF, WebP, GIF, HEIC, AVIF) or an office document (Word, Excel, PowerPoint, OpenDocument, RTF); this is a PDF document: send it with a caption such as optimize or shrink."),
        "{}",
        text_of(&notice)
    );
}

async fn a_further_run_cut_by_a_crash_finishes_after_the_restart(backend: Backend) {
    // An OCR that hangs the first time it runs (the crash cuts it) and works after.
    let dir = tempfile::tempdir().expect("temp dir");
    let ran_once = dir.path().join("ran-once");
    let tool = ExternalToolConfig {
        command: vec![
            "sh".into(),
            "-c".into(),
            "if [ -e \"$3\" ]; then cp \"$1\" \"$2\"; else touch \"$3\"; sleep 60; fi".into(),
            "ocr".into(),
            "{input}".into(),
            "{output}".into(),
            ran_once.display().to_string(),
        ],
        ..recording_ocr(&dir.path().join("lang"))
    };
    let mut app = with_ocr(backend, tool).await;
    let (_, status, _) = ready_with_its_buttons(&app, 590, "crash.pdf").await;
    app.fake.press_button_labelled(590, 590, status, "ocr").expect("an ocr button");
    app.wait_for_job(Ticket(2), |j| j.state == JobState::Processing && j.lease.is_some()).await;
    eventually(DEADLINE, async || if ran_once.exists() { Ok(()) } else { Err("the tool has not started".to_owned()) })
        .await;
    app.kill().await;

    app.start().await;
    let run = app.wait_for_job(Ticket(2), |j| j.state == JobState::Ready).await;
    assert_eq!(run.submission.run_of, Some(Ticket(1)));
    assert!(run.attempts >= 1, "{run:?}");
    let sent = app.fake.wait_for_call("sendDocument", |c| uploaded_name(c) == Some("crash-ocr.pdf"), DEADLINE).await;
    assert!(sent.params["caption"].as_str().unwrap_or_default().starts_with("#1 ocr ready"), "{:?}", sent.params);
    let first = app.store.job(Ticket(1)).await.expect("read").expect("the first run");
    assert_eq!(first.state, JobState::Ready, "the first run was never touched");
}

async fn cancel_stops_the_unfinished_runs_of_a_ticket(backend: Backend) {
    // An OCR that never finishes on its own.
    let tool = ExternalToolConfig {
        command: vec!["sh".into(), "-c".into(), "sleep 60".into()],
        ..recording_ocr(std::path::Path::new("/nonexistent"))
    };
    let app = with_ocr(backend, tool).await;
    let (_, status, _) = ready_with_its_buttons(&app, 600, "long.pdf").await;
    app.fake.press_button_labelled(600, 600, status, "ocr").expect("an ocr button");
    app.wait_for_job(Ticket(2), |j| j.state == JobState::Processing).await;

    app.send_text(600, "/cancel 1");
    let answer = app.fake.wait_for_call("sendMessage", says(600, "cancelled"), DEADLINE).await;
    assert_eq!(text_of(&answer), "#1 ocr cancelled: long.pdf will not be processed, and its files are deleted.");
    app.wait_for_job(Ticket(2), |j| j.state == JobState::Failed && j.lease.is_none()).await;
    let first = app.store.job(Ticket(1)).await.expect("read").expect("the first run");
    assert_eq!(first.state, JobState::Ready, "a ready run keeps its result");
    // Nothing left to cancel: it says where the ticket is.
    app.send_text(600, "/cancel 1");
    app.fake.wait_for_call("sendMessage", says(600, "#1 is ready"), DEADLINE).await;
}

/// A GIF and an iPhone's HEIC photo, sent as files without a caption, each come back as a PDF of
/// one page: the content, not the declared type, made the run topdf.
async fn a_gif_and_a_heic_photo_sent_as_files_come_back_as_pdfs(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let mut gif = Vec::new();
    {
        let frame = image::RgbaImage::from_fn(30, 20, |x, y| image::Rgba([(x * 8) as u8, (y * 12) as u8, 90, 255]));
        let mut encoder = image::codecs::gif::GifEncoder::new(&mut gif);
        encoder.encode_frame(image::Frame::new(frame)).expect("encodes");
    }
    let photos = [
        (590, gif, "anim.gif", "image/gif"),
        (591, fixture("images/marker-64x48.heic"), "IMG_0001.HEIC", "image/heic"),
    ];
    for (ticket, (chat, bytes, name, mime)) in photos.into_iter().enumerate() {
        app.send_document(chat, bytes, name, mime);
        let job = app.wait_for_job(Ticket(ticket as i64 + 1), |j| j.state.is_terminal()).await;
        assert_eq!(job.state, JobState::Ready, "{name}: {:?}", job.error);
        assert_eq!(job.submission.operation, Operation::ToPdf, "{name}");
        let sent =
            app.fake.wait_for_call("sendDocument", |c| c.params["chat_id"].as_i64() == Some(chat), DEADLINE).await;
        let upload = sent.upload.expect("the PDF is uploaded");
        let pdf = lopdf::Document::load_mem(&upload.bytes).expect("a PDF");
        assert_eq!(pdf.get_pages().len(), 1, "{name}");
    }
}
