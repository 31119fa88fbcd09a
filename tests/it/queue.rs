//! The queue: jobs are claimed in the order they became due, and attempts count only a job's
//! own failures, so a job that was delayed, released at shutdown or told to wait by Telegram is
//! neither starved nor failed for it.

use std::time::Duration;

use docket::domain::{Clock as _, JobState, SystemClock, Ticket};
use fake_bot_api::{DownloadFault, Fault};

use crate::support::{Backend, DEADLINE, TestApp, eventually, fixture};

/// One getFile answered 429 delays job 1 by a second; four files arrive meanwhile and are
/// downloaded slowly by the one download worker; three more arrive after job 1 became due.
/// Job 1 is downloaded before those three, not after everything that came later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_job_that_became_due_is_claimed_before_later_arrivals() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.workers.download = 1).await;
    let pdf = fixture("pdf/text-1page.pdf");
    app.fake.fail_next("getFile", Fault::RetryAfter(1));
    let (_, delayed) = app.send_document(100, pdf.clone(), "delayed.pdf", "application/pdf");
    let first = app.wait_for_job(Ticket(1), |j| j.attempts == 0 && j.not_before > j.created_at).await;
    for n in 0..4u8 {
        let file = app.fake.add_file([pdf.clone(), vec![b'\n'; usize::from(n) + 1]].concat());
        // About a second each: the worker is busy when the late files arrive.
        app.fake.fail_downloads_for(&file.file_id, DownloadFault::Throttle { bytes_per_sec: 3_000 }, None);
        app.fake.push_update(app.fake.document_update(101 + i64::from(n), 101 + i64::from(n), &file, None, None));
    }
    eventually(DEADLINE, async || {
        let now = SystemClock.now();
        if now > first.not_before { Ok(()) } else { Err(format!("job 1 is not due yet at {now:?}")) }
    })
    .await;
    let mut late = Vec::new();
    for n in 0..3u8 {
        let (_, file) = app.send_document(
            200 + i64::from(n),
            [pdf.clone(), vec![b' '; usize::from(n) + 1]].concat(),
            "late.pdf",
            "application/pdf",
        );
        late.push(file.file_id);
    }
    for ticket in 1..=8 {
        app.wait_for_job(Ticket(ticket), |j| j.state == JobState::Ready).await;
    }
    let order: Vec<String> =
        app.fake.calls_to("getFile").iter().filter_map(|c| c.params["file_id"].as_str().map(str::to_owned)).collect();
    let position = |file_id: &str| order.iter().rposition(|f| f == file_id).expect("downloaded");
    for file_id in &late {
        assert!(
            position(&delayed.file_id) < position(file_id),
            "job 1 became due before {file_id} arrived but was downloaded after it: {order:?}"
        );
    }
}

/// A job released at SIGTERM is given back without spending an attempt and keeps its place:
/// after the restart it is downloaded before a file that arrived later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_released_at_sigterm_keeps_its_attempts_and_its_place() {
    let mut app = TestApp::create(Backend::Sqlite, |c| {
        c.workers.download = 1;
        c.workers.shutdown_grace = Duration::from_millis(200);
    })
    .await;
    app.start().await;
    let pdf = fixture("pdf/text-20pages.pdf");
    let (_, slow) = app.send_document(300, pdf.clone(), "slow.pdf", "application/pdf");
    app.fake.fail_downloads_for(&slow.file_id, DownloadFault::Throttle { bytes_per_sec: 1_000 }, Some(1));
    let downloading = app.wait_for_job(Ticket(1), |j| j.state == JobState::Accepted && j.lease.is_some()).await;
    assert_eq!(downloading.attempts, 1);
    app.stop().await;
    let released = app.store.job(Ticket(1)).await.expect("read").expect("job 1");
    assert_eq!(
        (released.state, released.attempts, released.lease.is_some(), released.not_before),
        (JobState::Accepted, 0, false, downloading.not_before),
        "released with its attempt given back and its place kept: {released:#?}"
    );

    let later = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let ticket = app.insert_job(301, &later, "later.pdf", Some(later.size)).await;
    app.start().await;
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    app.wait_for_job(ticket, |j| j.state == JobState::Ready).await;
    let order: Vec<String> =
        app.fake.calls_to("getFile").iter().filter_map(|c| c.params["file_id"].as_str().map(str::to_owned)).collect();
    assert_eq!(order, [slow.file_id.clone(), slow.file_id, later.file_id], "job 1 goes first again");
}

/// Telegram's flood control is not the job's fault: more 429s than `max_attempts` on getFile
/// still end in a result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flood_waits_spend_no_attempt() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.workers.max_attempts = 2).await;
    for _ in 0..3 {
        app.fake.fail_next("getFile", Fault::RetryAfter(1));
    }
    app.send_document(400, fixture("pdf/text-1page.pdf"), "flooded.pdf", "application/pdf");
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert_eq!(app.fake.calls_to("getFile").len(), 4, "three 429s, then the download");
}

/// Seven files wait for one slow download worker. The last one's status message shows its place
/// in line as the queue moves, at places 5, 3, 2 and 1 only (never 4), each edit after the
/// ticket reply it edits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_position_is_shown_at_geometric_places() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.workers.download = 1).await;
    let pdf = fixture("pdf/text-1page.pdf");
    for n in 0..7u8 {
        let file = app.fake.add_file([pdf.clone(), vec![b'\n'; usize::from(n) + 1]].concat());
        // About 1.5 s each: longer than a progress edit waits to settle, so each place shows.
        app.fake.fail_downloads_for(&file.file_id, DownloadFault::Throttle { bytes_per_sec: 2_000 }, None);
        let chat = 400 + i64::from(n);
        app.fake.push_update(app.fake.document_update(chat, chat, &file, Some("q.pdf"), Some("application/pdf")));
    }
    app.wait_for_job(Ticket(7), |j| j.state == JobState::Ready).await;
    let places: Vec<String> = app
        .fake
        .calls_to("editMessageText")
        .iter()
        .filter(|c| c.params["chat_id"].as_i64() == Some(406))
        .filter_map(|c| c.params["text"].as_str())
        .filter_map(|t| t.lines().nth(1).filter(|l| l.starts_with("Queued")).map(str::to_owned))
        .collect();
    for place in &places {
        assert!(
            [
                "Queued: number 5 in line.",
                "Queued: number 3 in line.",
                "Queued: number 2 in line.",
                "Queued: next in line."
            ]
            .contains(&place.as_str()),
            "a place off the schedule was shown: {places:?}"
        );
    }
    assert_eq!(places.first().map(String::as_str), Some("Queued: number 5 in line."), "{places:?}");
    assert_eq!(places.last().map(String::as_str), Some("Queued: next in line."), "{places:?}");
}

/// On PostgreSQL, a job another host recorded wakes this host's idle workers at once (LISTEN/
/// NOTIFY): the workers here would not look again for an hour on their own.
#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_another_host_recorded_wakes_idle_workers_at_once() {
    use docket::domain::{ChatRef, MessageId, Operation, Submission, UpdateId, UserId};
    use docket::store::Store;

    let mut app = TestApp::create(Backend::Postgres, |_| {}).await;
    let idle = docket::app::Options { idle_poll: Duration::from_secs(3_600), ..crate::support::test_options() };
    app.start_with(idle).await;
    // Polling for a while: the workers have looked for work once and sleep.
    let polls = app.fake.calls_to("getUpdates").len();
    app.fake.wait_for_calls("getUpdates", |_| true, polls + 2, DEADLINE).await;

    let file = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let other_host = Store::open(&app.config.storage.database_url).await.expect("another host's store");
    let mut tx = other_host.begin().await.expect("tx");
    let job = Submission {
        update_id: UpdateId(77),
        chat: ChatRef(77),
        user_id: Some(UserId(77)),
        message_id: MessageId(1),
        file_id: file.file_id.clone(),
        file_unique_id: file.file_unique_id.clone(),
        declared_name: Some("elsewhere.pdf".into()),
        declared_mime: Some("application/pdf".into()),
        declared_size: None,
        operation: Operation::Optimize,
        chosen_by_default: false,
        language_code: None,
        run_of: None,
    };
    let ticket = tx.insert_job(&job, SystemClock.now()).await.expect("insert");
    tx.commit().await.expect("commit");
    app.wait_for_job(ticket, |j| j.state == JobState::Ready).await;
}
