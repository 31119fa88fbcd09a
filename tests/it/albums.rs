//! Albums: the messages of one `media_group_id` are one ticket, answered once in reply to the
//! first, whose files become one PDF in album order; a part that fails fails the whole ticket,
//! naming it; a part that comes after the ticket was sealed is a file of its own.

use std::path::Path;

use docket::domain::{JobState, Operation, Ticket};
use docket::store::JobFilter;
use fake_bot_api::FakeTelegram;

use crate::per_backend;
use crate::support::calls::{caption_of, says, text_of, to_chat};
use crate::support::upload::{self, Upload};
use crate::support::{Backend, DEADLINE, TestApp, eventually, fixture};

per_backend!(
    an_album_of_photos_is_one_ticket_and_one_pdf_a_page_per_photo_in_order,
    an_album_whose_parts_come_in_separate_polls_is_still_one_ticket,
    a_mixed_album_of_pdfs_and_photos_merges_in_album_order,
    an_album_with_a_part_that_is_neither_picture_nor_pdf_fails_naming_it,
    an_album_with_a_part_over_the_download_limit_fails_naming_it,
    an_album_with_a_part_telegram_no_longer_has_fails_naming_it,
    a_part_that_comes_after_the_album_was_sealed_is_a_file_of_its_own,
    an_album_of_pdfs_without_a_caption_asks_and_merge_makes_one_pdf,
    an_album_of_pdfs_taken_each_on_its_own_gives_a_ticket_and_a_result_per_file,
    an_album_of_pdfs_captioned_merge_is_merged_without_asking,
    status_and_jobs_show_an_albums_files_and_its_download_counts_them,
);

/// A JPEG photo of `width` × `height`, a gradient (so each is told apart by its size).
pub(crate) fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let picture = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x * 255 / width) as u8, (y * 255 / height) as u8, 128])
    });
    let mut bytes = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 85).encode_image(&picture).expect("encodes a JPEG");
    bytes
}

/// Sends `parts` from `chat` as the album `album`, one update each, in order.
fn send_album(fake: &FakeTelegram, chat: i64, album: &str, parts: Vec<Upload>) {
    for part in parts {
        part.in_album(album).send_to(fake, chat);
    }
}

/// Every ticket docket holds (first runs and further ones).
async fn all_jobs(app: &TestApp) -> Vec<docket::domain::Job> {
    app.store.jobs(&JobFilter { limit: 100, ..JobFilter::default() }).await.expect("store reads")
}

/// What each page of the PDF at `path` is, in order: `Some(width)` for a page that draws one
/// image (a photo's page: the image's width in pixels), `None` for any other page.
pub(crate) fn pages_of(path: &Path) -> Vec<Option<i64>> {
    let document = lopdf::Document::load(path).expect("the result is a PDF lopdf loads");
    document
        .get_pages()
        .values()
        .map(|page| {
            let resources = document.get_page_resources(*page).ok()?;
            let dict = match resources {
                (Some(dict), _) => dict.clone(),
                (None, ids) => document.get_dictionary(*ids.first()?).ok()?.clone(),
            };
            let xobjects = dict.get_deref(b"XObject", &document).ok()?.as_dict().ok()?;
            let image = xobjects.get_deref(b"Im0", &document).ok()?.as_stream().ok()?;
            image.dict.get(b"Width").ok()?.as_i64().ok()
        })
        .collect()
}

async fn an_album_of_photos_is_one_ticket_and_one_pdf_a_page_per_photo_in_order(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 900;
    let sizes = [(300, 200), (200, 300), (400, 100)];
    let parts = sizes.iter().map(|(w, h)| upload::photo(jpeg(*w, *h), *w, *h)).collect();
    send_album(&app.fake, chat, "album-1", parts);

    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert_eq!(job.submission.operation, Operation::Merge);
    assert_eq!(all_jobs(&app).await.len(), 1, "three photos of one album are one ticket");
    let widths: Vec<Option<i64>> = sizes.iter().map(|(w, _)| Some(i64::from(*w))).collect();
    assert_eq!(pages_of(Path::new(job.result_path().expect("a result"))), widths, "a page per photo, in album order");

    let results = app.fake.wait_for_calls("sendDocument", to_chat(chat), 1, DEADLINE).await;
    assert_eq!(results.len(), 1, "one result");
    let replies: Vec<_> = app
        .fake
        .calls_to("sendMessage")
        .into_iter()
        .filter(|c| to_chat(chat)(c) && text_of(c).contains("#1"))
        .collect();
    assert_eq!(replies.len(), 1, "one ticket reply: {replies:#?}");
    let reply = text_of(&replies[0]);
    assert!(reply.contains("Got 3 files"), "{reply}");
    assert!(reply.contains("one PDF"), "{reply}");
    let first_message = job.submission.message_id.0;
    assert_eq!(replies[0].params["reply_parameters"]["message_id"].as_i64(), Some(first_message), "{replies:#?}");
    assert!(caption_of(&results[0]).contains("#1"), "{results:#?}");
}

async fn an_album_whose_parts_come_in_separate_polls_is_still_one_ticket(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.limits.album_quiet_window = std::time::Duration::from_secs(3)).await;
    let chat = 901;
    upload::photo(jpeg(120, 80), 120, 80).in_album("album-2").send_to(&app.fake, chat);
    // The first part is taken before the others are sent: they come in later polls.
    app.wait_for_job(Ticket(1), |_| true).await;
    eventually(DEADLINE, async || {
        if app.fake.pending_updates() == 0 { Ok(()) } else { Err("the first part was never polled".to_owned()) }
    })
    .await;
    send_album(
        &app.fake,
        chat,
        "album-2",
        vec![upload::photo(jpeg(80, 120), 80, 120), upload::photo(jpeg(90, 90), 90, 90)],
    );

    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert_eq!(all_jobs(&app).await.len(), 1, "one ticket for the album");
    assert_eq!(pages_of(Path::new(job.result_path().expect("a result"))), vec![Some(120), Some(80), Some(90)]);
}

async fn a_mixed_album_of_pdfs_and_photos_merges_in_album_order(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 902;
    send_album(
        &app.fake,
        chat,
        "album-3",
        vec![
            upload::pdf("pdf/text-1page.pdf", "cover.pdf").caption("merge"),
            upload::photo(jpeg(160, 90), 160, 90),
            upload::pdf("pdf/text-20pages.pdf", "body.pdf"),
        ],
    );
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    let pages = pages_of(Path::new(job.result_path().expect("a result")));
    assert_eq!(pages.len(), 22, "1 + 1 + 20 pages");
    assert_eq!(pages[1], Some(160), "the photo is the second page: {pages:?}");
    assert!(pages[0].is_none() && pages[2..].iter().all(Option::is_none), "{pages:?}");
}

async fn an_album_with_a_part_that_is_neither_picture_nor_pdf_fails_naming_it(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 903;
    send_album(
        &app.fake,
        chat,
        "album-4",
        vec![
            upload::photo(jpeg(100, 100), 100, 100),
            upload::document(fixture("other/stored-pdf.zip"), "notes.pdf", "application/pdf"),
            upload::photo(jpeg(100, 50), 100, 50),
        ],
    );
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Failed, "{job:#?}");
    let reason = job.error.clone().unwrap_or_default();
    assert!(reason.contains("file 2 of the 3") && reason.contains("notes.pdf"), "{reason}");
    let notice = app
        .fake
        .wait_for_call("sendMessage", |c| to_chat(chat)(c) && text_of(c).contains("file 2 of the 3"), DEADLINE)
        .await;
    assert!(text_of(&notice).contains("notes.pdf"), "{notice:#?}");
    assert!(app.fake.calls_to("sendDocument").iter().all(|c| !to_chat(chat)(c)), "nothing half-made is sent");
}

async fn an_album_with_a_part_over_the_download_limit_fails_naming_it(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.limits.cloud_download = 100_000).await;
    let chat = 904;
    let big = vec![b'x'; 150_000];
    send_album(
        &app.fake,
        chat,
        "album-5",
        vec![upload::photo(jpeg(64, 64), 64, 64), upload::document(big, "huge.pdf", "application/pdf")],
    );
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Failed, "{job:#?}");
    let reason = job.error.clone().unwrap_or_default();
    assert!(reason.contains("file 2 of the 2") && reason.contains("huge.pdf"), "{reason}");
    assert!(app.fake.calls_to("sendDocument").iter().all(|c| !to_chat(chat)(c)), "nothing half-made is sent");
}

async fn an_album_with_a_part_telegram_no_longer_has_fails_naming_it(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 910;
    upload::photo(jpeg(64, 64), 64, 64).in_album("album-11").send_to(&app.fake, chat);
    let mut gone = app.fake.text_update(chat, chat, "x");
    let message = gone["message"].as_object_mut().expect("message");
    message.remove("text");
    message.insert("media_group_id".into(), serde_json::json!("album-11"));
    message.insert(
        "document".into(),
        serde_json::json!({"file_id": "no-such-file", "file_unique_id": "u-gone", "file_name": "gone.pdf"}),
    );
    app.fake.push_update(gone);
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Failed, "{job:#?}");
    let reason = job.error.clone().unwrap_or_default();
    assert!(reason.contains("file 2 of the 2") && reason.contains("gone.pdf"), "{reason}");
    assert_eq!(all_jobs(&app).await.len(), 1, "one ticket, failed whole");
    app.fake.wait_for_call("sendMessage", says(chat, "no longer has gone.pdf"), DEADLINE).await;
    assert!(app.fake.calls_to("sendDocument").iter().all(|c| !to_chat(chat)(c)), "nothing half-made is sent");
}

async fn a_part_that_comes_after_the_album_was_sealed_is_a_file_of_its_own(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 905;
    upload::photo(jpeg(70, 70), 70, 70).in_album("album-6").send_to(&app.fake, chat);
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    upload::photo(jpeg(50, 50), 50, 50).in_album("album-6").send_to(&app.fake, chat);
    let late = app.wait_for_job(Ticket(2), |j| j.state.is_terminal()).await;
    assert_eq!(late.state, JobState::Ready, "{late:#?}");
    assert_eq!(late.submission.operation, Operation::ToPdf, "a photo on its own becomes a PDF as any photo does");
    let first = app.store.job(Ticket(1)).await.expect("store reads").expect("ticket 1");
    assert_eq!(
        pages_of(Path::new(first.result_path().expect("a result"))),
        vec![Some(70)],
        "the album kept its one part"
    );
}

/// Sends cover.pdf (1 page) and body.pdf (20 pages) from `chat` as the album `album`, without a
/// caption, and waits for the question: its sendMessage call and its message id.
async fn two_pdfs_asked_about(app: &TestApp, chat: i64, album: &str) -> (fake_bot_api::Call, i64) {
    send_album(
        &app.fake,
        chat,
        album,
        vec![upload::pdf("pdf/text-1page.pdf", "cover.pdf"), upload::pdf("pdf/text-20pages.pdf", "body.pdf")],
    );
    let asked = app.fake.wait_for_call("sendMessage", says(chat, "Merge them into one PDF"), DEADLINE).await;
    let question =
        app.fake.last_bot_message(chat).and_then(|m| m["message_id"].as_i64()).expect("the bot wrote to the chat");
    (asked, question)
}

async fn an_album_of_pdfs_without_a_caption_asks_and_merge_makes_one_pdf(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 906;
    let (asked, question) = two_pdfs_asked_about(&app, chat, "album-7").await;
    assert!(text_of(&asked).contains("Got 2 files (cover.pdf, body.pdf"), "{asked:#?}");
    assert_eq!(app.fake.button_labels(chat, question), ["Merge into one PDF", "Each on its own"]);
    let waiting = app.store.job(Ticket(1)).await.expect("store reads").expect("ticket 1");
    assert_eq!(waiting.state, JobState::Accepted, "nothing is downloaded before the answer: {waiting:#?}");
    assert!(app.fake.calls_to("getFile").is_empty(), "nothing is downloaded before the answer");

    app.fake.press_button_labelled(chat, chat, question, "Merge into one PDF").expect("a Merge button");
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert_eq!(pages_of(Path::new(job.result_path().expect("a result"))).len(), 21, "1 + 20 pages, in album order");
    assert_eq!(all_jobs(&app).await.len(), 1, "one ticket");
    eventually(DEADLINE, async || {
        let labels = app.fake.button_labels(chat, question);
        let asking = labels.iter().any(|l| l.contains("Merge into") || l.contains("Each on"));
        if asking { Err(format!("the answered question still asks: {labels:?}")) } else { Ok(()) }
    })
    .await;
}

async fn an_album_of_pdfs_taken_each_on_its_own_gives_a_ticket_and_a_result_per_file(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 907;
    let (_, question) = two_pdfs_asked_about(&app, chat, "album-8").await;
    app.fake.press_button_labelled(chat, chat, question, "Each on its own").expect("an Each button");

    let cover = app.wait_for_job(Ticket(2), |j| j.state.is_terminal()).await;
    let body = app.wait_for_job(Ticket(3), |j| j.state.is_terminal()).await;
    for (job, name) in [(&cover, "cover.pdf"), (&body, "body.pdf")] {
        assert_eq!(job.state, JobState::Ready, "{job:#?}");
        assert_eq!(job.submission.declared_name.as_deref(), Some(name), "{job:#?}");
        assert_ne!(job.submission.operation, Operation::Merge, "each file on its own: {job:#?}");
    }
    let album = app.store.job(Ticket(1)).await.expect("store reads").expect("ticket 1");
    assert_eq!(album.state, JobState::Failed, "{album:#?}");
    assert!(album.error.as_deref().unwrap_or_default().contains("each on its own"), "{album:#?}");
    let results = app.fake.wait_for_calls("sendDocument", to_chat(chat), 2, DEADLINE).await;
    assert_eq!(results.len(), 2, "a result per file: {results:#?}");
    let edit = app.fake.wait_for_call("editMessageText", says(chat, "a ticket of its own now: #2, #3"), DEADLINE).await;
    assert_eq!(edit.params["message_id"].as_i64(), Some(question), "the question's message says so");
    assert!(edit.params.get("reply_markup").is_none(), "and keeps no buttons: {edit:#?}");
}

async fn an_album_of_pdfs_captioned_merge_is_merged_without_asking(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 908;
    send_album(
        &app.fake,
        chat,
        "album-9",
        vec![
            upload::pdf("pdf/text-1page.pdf", "cover.pdf").caption("merge"),
            upload::pdf("pdf/text-20pages.pdf", "body.pdf"),
        ],
    );
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert_eq!(pages_of(Path::new(job.result_path().expect("a result"))).len(), 21);
    let replies: Vec<_> = app.fake.calls_to("sendMessage").into_iter().filter(|c| to_chat(chat)(c)).collect();
    assert!(replies.iter().all(|c| !text_of(c).contains("Merge them")), "not asked: {replies:#?}");
    assert!(replies.iter().any(|c| text_of(c).contains("They become one PDF")), "{replies:#?}");
}

async fn status_and_jobs_show_an_albums_files_and_its_download_counts_them(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let chat = 909;
    // Slow enough (about 7 s each) for the running download to report which file it is at.
    app.fake.fail_downloads(fake_bot_api::DownloadFault::Throttle { bytes_per_sec: 6_000 }, Some(2));
    send_album(
        &app.fake,
        chat,
        "album-10",
        vec![upload::pdf("pdf/scan-2pages.pdf", "scan.pdf").caption("merge"), upload::photo(jpeg(200, 100), 200, 100)],
    );
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    let edits: Vec<String> =
        app.fake.calls_to("editMessageText").iter().filter(|c| to_chat(chat)(c)).map(text_of).collect();
    assert!(edits.iter().any(|t| t.contains("\nDownloading file 1 of 2: ")), "the download counts files: {edits:#?}");
    assert!(
        edits.iter().all(|t| t.starts_with("Got your files (")),
        "a ticket of several is named for them all: {edits:#?}"
    );

    app.send_text(chat, "/status 1");
    let status = app.fake.wait_for_call("sendMessage", says(chat, "Files:"), DEADLINE).await;
    let status = text_of(&status);
    assert!(status.contains("#1 — 2 files (scan.pdf, photo.jpg)"), "{status}");
    assert!(status.contains("Files:\n1. scan.pdf (41.5 kB)\n2. photo.jpg ("), "{status}");
    app.send_text(chat, "/jobs");
    let jobs = app.fake.wait_for_call("sendMessage", says(chat, "Your latest tickets:"), DEADLINE).await;
    assert!(text_of(&jobs).contains("#1 2 files (scan.pdf, photo.jpg) — "), "{jobs:#?}");
}
