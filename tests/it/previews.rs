//! Previews: a PDF result is sent with its first page, drawn by MuPDF, as the document's
//! thumbnail; the preview lies beside the result for as long as the result is kept; previews
//! can be turned off, and a page that cannot be drawn loses only the preview.

use std::path::{Path, PathBuf};

use docket::domain::{JobState, Ticket, Timestamp};
use docket::spool::preview_path_for;

use crate::per_backend;
use crate::support::calls::to_chat;
use crate::support::child;
use crate::support::upload;
use crate::support::{Backend, DEADLINE, TestApp};

per_backend!(
    a_pdf_result_is_sent_with_its_first_page_as_the_thumbnail,
    with_previews_off_or_a_text_result_no_thumbnail_is_sent,
    a_page_the_renderer_cannot_draw_loses_only_the_preview,
);

/// The thumbnail of the one result sent to `chat`, decoded, with its size in bytes.
async fn sent_thumbnail(app: &TestApp, chat: i64) -> Option<(image::DynamicImage, usize)> {
    let sent = app.fake.wait_for_call("sendDocument", to_chat(chat), DEADLINE).await;
    let upload = sent.upload.expect("the result is uploaded");
    let thumbnail = upload.thumbnail?;
    let picture =
        image::load_from_memory_with_format(&thumbnail, image::ImageFormat::Jpeg).expect("the thumbnail is a JPEG");
    Some((picture, thumbnail.len()))
}

async fn a_pdf_result_is_sent_with_its_first_page_as_the_thumbnail(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send(800, upload::pdf("pdf/text-20pages.pdf", "report.pdf").caption("optimize"));
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    let (picture, bytes) = sent_thumbnail(&app, 800).await.expect("a thumbnail is sent with the result");
    let (width, height) = (picture.width(), picture.height());
    assert!(width <= 320 && height <= 320, "{width} × {height}: Telegram shows at most 320 a side");
    assert_eq!(height, 320, "an A4 page fills the square's height");
    assert!(width < height, "{width} × {height}: drawn upright, as the page is");
    assert!(bytes <= 200_000, "{bytes} bytes: Telegram takes at most 200 kB");
    // The page is text on white: mostly light, with some dark.
    let grey = picture.to_luma8();
    let dark = grey.pixels().filter(|p| p.0[0] < 128).count();
    assert!(dark > 0 && dark < grey.pixels().count() / 2, "{dark} dark pixels: a drawn page, not a blank or black one");
    let result = PathBuf::from(job.result_path().expect("a result"));
    assert!(preview_path_for(&result).exists(), "the preview lies beside the result");
}

async fn with_previews_off_or_a_text_result_no_thumbnail_is_sent(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.processing.preview = false).await;
    app.send(801, upload::pdf("pdf/text-1page.pdf", "plain.pdf").caption("optimize"));
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert!(sent_thumbnail(&app, 801).await.is_none(), "previews are off");
    assert!(!preview_path_for(Path::new(job.result_path().expect("a result"))).exists());

    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send(802, upload::pdf("pdf/text-1page.pdf", "words.pdf").caption("text"));
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert!(sent_thumbnail(&app, 802).await.is_none(), "a text file has no first page to show");
}

async fn a_page_the_renderer_cannot_draw_loses_only_the_preview(backend: Backend) {
    // A "renderer" that runs and draws nothing, as MuPDF does on a page it cannot read.
    let app = TestApp::spawn_with(backend, |c| c.processing.renderer = "/bin/false".into()).await;
    app.send(803, upload::pdf("pdf/text-1page.pdf", "odd.pdf").caption("optimize"));
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert!(sent_thumbnail(&app, 803).await.is_none(), "the result goes, without a preview");
    let result = PathBuf::from(job.result_path().expect("a result"));
    assert!(result.exists() && !preview_path_for(&result).exists());
    let work = app.data_dir().join("work").join("1");
    let left: Vec<_> = std::fs::read_dir(&work).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    assert!(left.is_empty(), "the failed drawing left nothing behind: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_janitor_keeps_a_ready_results_preview_and_removes_it_with_the_result() {
    let mut app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    let (_, ready) = app.first_pdf_ready(804, "kept.pdf").await;
    app.fake.wait_for_call("sendDocument", to_chat(804), DEADLINE).await;
    app.stop().await;
    let result = PathBuf::from(ready.result_path().expect("a result"));
    let preview = preview_path_for(&result);
    assert!(preview.exists(), "drawn");

    let (_dir, config) = child::janitor_config(&app, "");
    let report = child::janitor(&config, false);
    assert!(preview.exists() && result.exists(), "a ready job's preview is its own, not an orphan: {report}");

    let now = Timestamp::from_millis(i64::MAX / 2);
    assert!(app.store.expire_job(Ticket(1), now, None, now).await.expect("expire"));
    let report = child::janitor(&config, false);
    assert!(!preview.exists() && !result.exists(), "both go once the result expired: {report}");
}
