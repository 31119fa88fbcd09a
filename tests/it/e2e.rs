//! The common path, end to end: a document goes from an update to a result, and the bot answers
//! repeats, lies, strangers and oversized files the way people expect.

use docket::domain::{JobState, Ticket};
use docket::store::UpdateOutcome;
use fake_bot_api::Call;

use crate::per_backend;
use crate::support::calls::{caption_of, text_of, to_chat};
use crate::support::{Backend, DEADLINE, TestApp, files_under, fixture};

per_backend!(
    a_pdf_travels_from_update_to_result,
    the_same_update_twice_gives_one_job_and_one_reply,
    the_same_file_twice_gets_the_same_ticket,
    a_ready_file_sent_again_is_redelivered_by_file_id,
    a_zip_named_pdf_fails_with_the_reason,
    status_from_another_chat_says_no_such_ticket,
    an_oversized_declared_file_is_refused_without_get_file,
    a_malformed_update_is_rejected_and_does_not_block_the_next,
    jobs_lists_the_chats_tickets,
    strangers_are_refused_politely,
);

async fn a_pdf_travels_from_update_to_result(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let pdf = fixture("pdf/text-20pages.pdf");
    let (_, _) = app.send_document(100, pdf.clone(), "report.pdf", "application/pdf");

    let reply = app.fake.wait_for_call("sendMessage", to_chat(100), DEADLINE).await;
    let text = text_of(&reply);
    assert!(text.starts_with("Got report.pdf (") && text.ends_with(" — ticket #1, queued."), "{text}");

    let sent = app.fake.wait_for_call("sendDocument", to_chat(100), DEADLINE).await;
    let job = app
        .wait_for_job(Ticket(1), |j| {
            j.state == JobState::Ready && j.result.as_ref().is_some_and(|r| r.telegram_file_id.is_some())
        })
        .await;
    let until = job.result.as_ref().expect("ready jobs have an expiry").expires_at.date_utc();
    let caption = caption_of(&sent);
    assert!(caption.starts_with("#1 ready: report.pdf, "), "{caption}");
    assert!(caption.ends_with(&format!("Available until {until}.")), "{caption}");

    let upload = sent.upload.expect("the first delivery uploads the file");
    let doc = lopdf::Document::load_mem(&upload.bytes).expect("the result is a valid PDF");
    let original = lopdf::Document::load_mem(&pdf).expect("fixture is valid");
    assert_eq!(doc.get_pages().len(), original.get_pages().len());
    assert_eq!(job.source.as_ref().map(|s| s.size), Some(pdf.len() as i64));
    assert_eq!(job.source.as_ref().map(|s| s.sha256.as_str()).map(str::len), Some(64));
    assert_eq!(job.source.as_ref().and_then(|s| s.format.as_deref()), Some("pdf"));

    // The logs were captured (so the harness's no-secrets check has something to read).
    assert!(crate::support::logs::captured().contains("accepted a document"));

    // The source and intermediates are gone; only the result and its preview stay.
    let mut files = files_under(&app.data_dir());
    files.sort();
    let result = std::path::PathBuf::from(job.result_path().expect("a result"));
    assert_eq!(files, [result.clone(), docket::spool::preview_path_for(&result)], "only the result should remain");
    assert!(result.starts_with(app.data_dir().join("results").join("1")));
}

async fn the_same_update_twice_gives_one_job_and_one_reply(backend: Backend) {
    // Telegram delivers the same update twice (its confirmation was lost): both copies are in
    // the first batch the bot receives.
    let mut app = TestApp::create(backend, |_| {}).await;
    let file = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let mut update = app.fake.document_update(200, 200, &file, Some("a.pdf"), Some("application/pdf"));
    update["update_id"] = serde_json::json!(41);
    app.fake.push_update(update.clone());
    app.fake.push_update(update);
    app.start().await;

    app.fake.wait_for_call("getUpdates", |c| c.params["offset"].as_i64() == Some(42), DEADLINE).await;
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    app.fake.wait_for_call("sendDocument", to_chat(200), DEADLINE).await;
    let jobs = app.store.jobs(&docket::store::JobFilter { limit: 10, ..Default::default() }).await.expect("list");
    assert_eq!(jobs.len(), 1);
    let replies: Vec<Call> = app.fake.calls_to("sendMessage").into_iter().filter(to_chat(200)).collect();
    assert_eq!(replies.len(), 1, "one ticket reply: {replies:?}");
    assert_eq!(app.fake.calls_to("getFile").len(), 1);
}

async fn the_same_file_twice_gets_the_same_ticket(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let bytes = fixture("pdf/text-1page.pdf");
    let file = app.fake.add_file(bytes);
    // Slow the download so the job is still running when the file comes again.
    app.fake.fail_downloads(fake_bot_api::DownloadFault::Throttle { bytes_per_sec: 1_000 }, Some(1));
    app.fake.push_update(app.fake.document_update(300, 300, &file, Some("same.pdf"), Some("application/pdf")));
    app.fake.wait_for_call("sendMessage", to_chat(300), DEADLINE).await;
    app.fake.push_update(app.fake.document_update(300, 300, &file, Some("same-renamed.pdf"), Some("application/pdf")));
    let calls = app.fake.wait_for_calls("sendMessage", to_chat(300), 2, DEADLINE).await;
    let second = text_of(&calls[1]);
    assert!(second.starts_with("same-renamed.pdf is already ticket #1 ("), "{second}");
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    app.fake.wait_for_call("sendDocument", to_chat(300), DEADLINE).await;
    assert_eq!(app.fake.calls_to("getFile").len(), 1, "one download for one file");
    assert!(app.store.job(Ticket(2)).await.expect("read").is_none(), "no second job");
}

async fn a_ready_file_sent_again_is_redelivered_by_file_id(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let (_, file) = app.send_document(310, fixture("pdf/text-1page.pdf"), "again.pdf", "application/pdf");
    let first = app.fake.wait_for_call("sendDocument", to_chat(310), DEADLINE).await;
    let job = app.wait_for_job(Ticket(1), |j| j.result.as_ref().is_some_and(|r| r.telegram_file_id.is_some())).await;
    let downloads = app.fake.downloads();

    app.fake.push_update(app.fake.document_update(310, 310, &file, Some("again.pdf"), Some("application/pdf")));
    let calls = app.fake.wait_for_calls("sendDocument", to_chat(310), 2, DEADLINE).await;
    let second = &calls[1];
    assert!(second.upload.is_none(), "a redelivery must not upload again");
    assert_eq!(second.params["document"].as_str(), job.result.as_ref().and_then(|r| r.telegram_file_id.as_deref()));
    assert_eq!(caption_of(second), caption_of(&first));
    assert_eq!(app.fake.downloads(), downloads, "no new download");
    assert_eq!(app.fake.calls_to("getFile").len(), 1);
}

async fn a_zip_named_pdf_fails_with_the_reason(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    // A ZIP archive (holding a PDF) sent as a PDF: no operation takes it.
    app.send_document(400, fixture("other/stored-pdf.zip"), "report.pdf", "application/pdf");
    let notice =
        app.fake.wait_for_call("sendMessage", |c| to_chat(400)(c) && text_of(c).contains("failed"), DEADLINE).await;
    assert_eq!(
        text_of(&notice),
        "#1 failed: report.pdf is not a PDF (the content looks like a ZIP archive): optimize takes a PDF."
    );
    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Failed).await;
    assert_eq!(job.source.as_ref().and_then(|s| s.format.as_deref()), None);
    assert!(job.error.as_deref().is_some_and(|e| e.contains("not a PDF")));
    assert!(files_under(&app.data_dir()).is_empty(), "a failed job leaves no files");
    assert!(app.fake.calls_to("sendDocument").is_empty());
}

async fn status_from_another_chat_says_no_such_ticket(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.first_pdf_ready(500, "mine.pdf").await;

    app.send_text(501, "/status 1");
    let stranger = app.fake.wait_for_call("sendMessage", to_chat(501), DEADLINE).await;
    app.send_text(501, "/status 999");
    let missing = app.fake.wait_for_calls("sendMessage", to_chat(501), 2, DEADLINE).await;
    assert_eq!(text_of(&stranger), "No such ticket: #1.");
    assert_eq!(text_of(&missing[1]), "No such ticket: #999.");

    app.send_text(500, "/status 1");
    let own =
        app.fake.wait_for_call("sendMessage", |c| to_chat(500)(c) && text_of(c).starts_with("#1 — "), DEADLINE).await;
    let own = text_of(&own);
    assert!(own.contains("mine.pdf: ready") && own.contains("Available until"), "{own}");
}

async fn an_oversized_declared_file_is_refused_without_get_file(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let file = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let update = app.fake.document_update_with_size(
        600,
        600,
        &file,
        Some("huge.pdf"),
        Some("application/pdf"),
        Some(25 * 1024 * 1024),
    );
    app.fake.push_update(update);
    let reply = app.fake.wait_for_call("sendMessage", to_chat(600), DEADLINE).await;
    assert_eq!(
        text_of(&reply),
        "huge.pdf is 26.2 MB, but this bot can only take files up to 21.0 MB. Nothing was queued."
    );
    assert!(app.store.job(Ticket(1)).await.expect("read").is_none(), "no job for a refused file");
    assert!(app.fake.calls_to("getFile").is_empty());
}

async fn a_malformed_update_is_rejected_and_does_not_block_the_next(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let bad = app.fake.push_update(serde_json::json!({"message": {"message_id": "x", "chat": "nonsense"}}));
    app.send_text(700, "/help");
    let help = app.fake.wait_for_call("sendMessage", to_chat(700), DEADLINE).await;
    assert!(text_of(&help).contains("/status 4812"));
    let outcome = app
        .store
        .update_outcome(docket::domain::BotId(app.fake.bot_id()), docket::domain::UpdateId(bad))
        .await
        .expect("read");
    let (outcome, reason) = outcome.expect("the malformed update is registered");
    assert_eq!(outcome, UpdateOutcome::Rejected);
    assert!(reason.is_some_and(|r| r.contains("cannot read the update")));
}

async fn jobs_lists_the_chats_tickets(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send_document(800, fixture("pdf/text-1page.pdf"), "one.pdf", "application/pdf");
    app.send_document(800, fixture("other/stored-pdf.zip"), "two.pdf", "application/pdf");
    app.wait_for_job(Ticket(2), |j| j.state == JobState::Failed).await;
    app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    app.send_text(800, "/jobs");
    let list = app
        .fake
        .wait_for_call("sendMessage", |c| to_chat(800)(c) && text_of(c).starts_with("Your latest"), DEADLINE)
        .await;
    let text = text_of(&list);
    assert!(text.contains("#2 two.pdf — failed") && text.contains("#1 one.pdf — "), "{text}");
    assert!(text.find("#2").expect("#2 listed") < text.find("#1").expect("#1 listed"), "newest first: {text}");
}

async fn strangers_are_refused_politely(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.access.allowed_users = vec![1]).await;
    app.send_document(900, fixture("pdf/text-1page.pdf"), "x.pdf", "application/pdf");
    let reply = app.fake.wait_for_call("sendMessage", to_chat(900), DEADLINE).await;
    assert_eq!(text_of(&reply), "Sorry, this bot is private. Ask its admin to add your user id (900).");
    assert!(app.store.job(Ticket(1)).await.expect("read").is_none());
}
