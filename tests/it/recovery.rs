//! Interruptions: crashes between receiving and recording, cut downloads, lying sizes.

use docket::domain::{JobState, Ticket};
use fake_bot_api::{Call, DownloadFault, Fault};
use sqlx::Connection;

use crate::per_backend;
use crate::support::calls::to_chat;
use crate::support::upload;
use crate::support::{Backend, DEADLINE, TestApp, eventually, files_under, fixture, sh_ocr};

per_backend!(
    a_cut_download_is_retried_with_a_fresh_get_file,
    a_lying_size_fails_with_both_sizes,
    a_restart_continues_from_the_stored_offset,
    a_429_on_get_file_waits_exactly_retry_after,
    a_wrong_file_id_fails_at_once_with_a_reason,
    a_source_whose_bytes_were_lost_is_downloaded_again,
    a_source_lost_again_and_again_fails_with_a_reason,
    a_download_longer_than_announced_stops_soon_after_the_announced_size,
    a_database_outage_longer_than_the_lease_does_not_restart_a_running_stage,
);

/// The database stops answering (its jobs table locked by another session) for longer than the
/// lease while a run works: the run goes on, fenced by its lease token, renews its lease once the
/// database is back, and its result is recorded from the same, single run of the tool.
async fn a_database_outage_longer_than_the_lease_does_not_restart_a_running_stage(backend: Backend) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (runs, go) = (dir.path().join("runs"), dir.path().join("go"));
    let tool = sh_ocr(
        "echo run >> \"$3\"; while [ ! -e \"$4\" ]; do sleep 0.1; done; cp \"$1\" \"$2\"",
        &[runs.display().to_string(), go.display().to_string()],
        vec![dir.path().to_owned()],
    );
    // One processing worker: nobody else in this process could claim the job meanwhile.
    let app = TestApp::spawn_with(backend, |c| {
        c.workers.process = 1;
        c.processing.external.insert("ocr".into(), tool);
    })
    .await;
    app.send(70, upload::pdf("pdf/text-1page.pdf", "long.pdf").caption("ocr").language("en"));
    eventually(DEADLINE, async || if runs.exists() { Ok(()) } else { Err("the tool has not started".to_owned()) })
        .await;

    let outage = hold_the_jobs_table(&app).await;
    eventually(DEADLINE, async || {
        let logs = crate::support::logs::captured();
        if logs.contains("the lease ran out while the database was unreachable; working on until it answers") {
            Ok(())
        } else {
            Err("the lease has not run out yet".to_owned())
        }
    })
    .await;
    outage.end().await;
    std::fs::write(&go, b"").expect("let the tool finish");

    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!((job.state, job.attempts), (JobState::Ready, 1), "{job:#?}");
    let started = std::fs::read_to_string(&runs).expect("the runs");
    assert_eq!(started.lines().count(), 1, "the tool ran once: {started:?}");
}

/// Another session holding the jobs table, so that no statement on it gets through.
enum Outage {
    Sqlite(sqlx::SqliteConnection),
    #[cfg(feature = "postgres-tests")]
    Postgres(sqlx::PgConnection),
}

async fn hold_the_jobs_table(app: &TestApp) -> Outage {
    match app.config.storage.database_url.clone() {
        docket::store::DatabaseUrl::Sqlite(path) => {
            let mut c =
                sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display())).await.expect("connect");
            sqlx::query("BEGIN EXCLUSIVE").execute(&mut c).await.expect("lock");
            Outage::Sqlite(c)
        }
        #[cfg(feature = "postgres-tests")]
        docket::store::DatabaseUrl::Postgres(url) => {
            let mut c = sqlx::PgConnection::connect(&url).await.expect("connect");
            sqlx::query("BEGIN").execute(&mut c).await.expect("begin");
            sqlx::query("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE").execute(&mut c).await.expect("lock");
            Outage::Postgres(c)
        }
        #[cfg(not(feature = "postgres-tests"))]
        docket::store::DatabaseUrl::Postgres(_) => panic!("PostgreSQL tests are not built"),
    }
}

impl Outage {
    async fn end(self) {
        match self {
            Self::Sqlite(mut c) => sqlx::query("ROLLBACK").execute(&mut c).await.map(drop).expect("unlock"),
            #[cfg(feature = "postgres-tests")]
            Self::Postgres(mut c) => sqlx::query("ROLLBACK").execute(&mut c).await.map(drop).expect("unlock"),
        }
    }
}

/// Stop the bot between receiving an update and recording it; on restart the update is polled
/// again from the stored offset and recorded once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_interrupted_before_recording_is_recorded_once_after_restart() {
    let mut app = TestApp::create(Backend::Sqlite, |_| {}).await;
    let file = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let update_id =
        app.fake.push_update(app.fake.document_update(50, 50, &file, Some("c.pdf"), Some("application/pdf")));

    // Hold the database's write lock so the bot receives the update but cannot record it.
    let docket::store::DatabaseUrl::Sqlite(path) = app.config.storage.database_url.clone() else { unreachable!() };
    let mut blocker = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display())).await.expect("connect");
    sqlx::query("BEGIN EXCLUSIVE").execute(&mut blocker).await.expect("lock");

    app.start().await;
    app.fake.wait_for_call("getUpdates", |c| c.params["offset"].as_i64() == Some(0), DEADLINE).await;
    app.kill().await;
    sqlx::query("ROLLBACK").execute(&mut blocker).await.expect("unlock");
    assert!(app.store.job(Ticket(1)).await.expect("read").is_none(), "nothing was recorded before the crash");
    assert_eq!(
        app.store.poll_offset(docket::domain::BotId(app.fake.bot_id())).await.expect("read"),
        None,
        "the offset did not move"
    );

    let polls_before = app.fake.calls_to("getUpdates").len();
    app.start().await;
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    let after: Vec<Call> = app.fake.calls_to("getUpdates").into_iter().skip(polls_before).collect();
    assert_eq!(after[0].params["offset"].as_i64(), Some(0), "the restarted bot asks again from the stored offset");
    assert_eq!(
        app.store.poll_offset(docket::domain::BotId(app.fake.bot_id())).await.expect("read"),
        Some(update_id + 1)
    );
    let replies = app.fake.calls_to("sendMessage");
    assert_eq!(replies.len(), 1, "one ticket reply: {replies:?}");
    assert!(app.store.job(Ticket(2)).await.expect("read").is_none());
}

/// Issue 29, point 7: a database that cannot take a document for a while (here its disk is full,
/// SQLSTATE 53100, for the job's row, while the rest of it works) never makes polling give the
/// update up: it stays unconfirmed and is polled again with a growing wait, for longer than
/// polling once allowed (5 tries, about 3 s), and once the fault clears the document gets its
/// one ticket.
#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_the_database_cannot_take_now_is_taken_once_it_can() {
    use crate::support::postgres::{CLEAR_FAULT, FAULT_HITS, refuse_jobs};
    let app = TestApp::spawn_with(Backend::Postgres, |_| {}).await;
    let bot = docket::domain::BotId(app.fake.bot_id());
    app.execute(&refuse_jobs("53100")).await;
    let (update_id, _) = app.send_document(61, fixture("pdf/text-1page.pdf"), "full.pdf", "application/pdf");
    eventually(std::time::Duration::from_secs(60), async || {
        let outcome = app.store.update_outcome(bot, docket::domain::UpdateId(update_id)).await.expect("read");
        assert_eq!(outcome, None, "the update was given up while the database could not take it");
        let hits = app.count(FAULT_HITS).await;
        if hits >= 7 { Ok(()) } else { Err(format!("the document was refused {hits} times so far")) }
    })
    .await;
    assert_eq!(app.store.poll_offset(bot).await.expect("read"), None, "the update is not confirmed");
    // Growing waits, not a retry per getUpdates answer.
    let polls = app.fake.calls_to("getUpdates").len();
    assert!(polls < 40, "{polls} polls for 7 refusals");

    app.execute(CLEAR_FAULT).await;
    // One ticket. (Its number is not 1: each refused insert took a number from the sequence.)
    let jobs = eventually(DEADLINE, async || {
        let jobs = app.store.jobs(&docket::store::JobFilter { limit: 10, ..Default::default() }).await.expect("read");
        if jobs.is_empty() { Err("no job yet".to_owned()) } else { Ok(jobs) }
    })
    .await;
    assert_eq!(jobs.len(), 1, "one ticket: {jobs:?}");
    let job = app.wait_for_job(jobs[0].ticket, |j| j.state == JobState::Ready).await;
    assert_eq!(job.submission.update_id.0, update_id);
    app.fake.wait_for_call("sendDocument", to_chat(61), DEADLINE).await;
    assert_eq!(app.count("SELECT COUNT(*) FROM jobs").await, 1, "one ticket");
    let outcome = app.store.update_outcome(bot, docket::domain::UpdateId(update_id)).await.expect("read");
    assert_eq!(outcome.map(|(o, _)| o), Some(docket::store::UpdateOutcome::Recorded));
}

async fn a_cut_download_is_retried_with_a_fresh_get_file(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.fake.fail_downloads(DownloadFault::CutAfter(1000), Some(1));
    app.send_document(60, fixture("pdf/text-20pages.pdf"), "cut.pdf", "application/pdf");
    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    assert_eq!(app.fake.calls_to("getFile").len(), 2, "each attempt calls getFile afresh");
    assert_eq!(job.source.as_ref().map(|s| s.size), Some(fixture("pdf/text-20pages.pdf").len() as i64));
    let parts: Vec<_> =
        files_under(&app.data_dir()).into_iter().filter(|p| p.extension().is_some_and(|e| e == "part")).collect();
    assert!(parts.is_empty(), "no .part left behind: {parts:?}");
}

async fn a_lying_size_fails_with_both_sizes(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let real = fixture("pdf/text-1page.pdf");
    let file = app.fake.add_file(real.clone());
    app.fake.fail_downloads(DownloadFault::ServeBytes(real[..real.len() / 2].to_vec()), None);
    app.fake.push_update(app.fake.document_update(70, 70, &file, Some("liar.pdf"), Some("application/pdf")));
    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Failed).await;
    let error = job.error.expect("a reason");
    assert!(error.contains("arrived as") && error.contains("instead of"), "{error}");
    assert!(files_under(&app.data_dir()).is_empty());
}

async fn a_restart_continues_from_the_stored_offset(backend: Backend) {
    let mut app = TestApp::spawn_with(backend, |_| {}).await;
    let first = app.send_document(80, fixture("pdf/text-1page.pdf"), "one.pdf", "application/pdf").0;
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    app.fake.wait_for_call("sendDocument", to_chat(80), DEADLINE).await;
    app.stop().await;

    let polls_before = app.fake.calls_to("getUpdates").len();
    app.start().await;
    app.send_document(80, fixture("pdf/text-20pages.pdf"), "two.pdf", "application/pdf");
    app.wait_for_job(Ticket(2), |j| j.state == JobState::Ready).await;
    let after: Vec<Call> = app.fake.calls_to("getUpdates").into_iter().skip(polls_before).collect();
    assert_eq!(after[0].params["offset"].as_i64(), Some(first + 1), "not from 0 after a restart");
    assert_eq!(
        app.store.jobs(&docket::store::JobFilter { limit: 10, ..Default::default() }).await.expect("list").len(),
        2
    );
}

async fn a_429_on_get_file_waits_exactly_retry_after(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.fake.fail_next("getFile", Fault::RetryAfter(2));
    app.send_document(85, fixture("pdf/text-1page.pdf"), "wait.pdf", "application/pdf");
    let calls = app.fake.wait_for_calls("getFile", |_| true, 2, DEADLINE).await;
    assert_eq!(calls[0].status, 429);
    let waited = calls[1].at.duration_since(calls[0].at);
    assert!(waited >= std::time::Duration::from_secs(2), "asked again after {waited:?}, before retry_after");
    assert!(waited < std::time::Duration::from_secs(4), "waited {waited:?}, far longer than retry_after");
    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    assert_eq!(job.error, None);
}

async fn a_wrong_file_id_fails_at_once_with_a_reason(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let mut update = app.fake.text_update(86, 86, "x");
    update["message"].as_object_mut().expect("message").remove("text");
    update["message"]["document"] =
        serde_json::json!({"file_id": "no-such-file", "file_unique_id": "u-none", "file_name": "gone.pdf"});
    app.fake.push_update(update);
    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Failed).await;
    assert_eq!(job.error.as_deref(), Some("Telegram no longer has gone.pdf; please send it again"));
    assert_eq!(app.fake.calls_to("getFile").len(), 1, "a permanent error is not retried");
    let notice = app
        .fake
        .wait_for_call("sendMessage", |c| c.params["text"].as_str().is_some_and(|t| t.contains("failed")), DEADLINE)
        .await;
    assert_eq!(
        notice.params["text"].as_str(),
        Some("#1 failed: Telegram no longer has gone.pdf; please send it again.")
    );
}

/// With a local Bot API server (`--local`), getFile answers an absolute path on its disk, which
/// docket reads directly with the same hashing and checks; nothing is fetched over HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_bot_api_server_file_is_read_from_its_absolute_path() {
    let server_dir = tempfile::tempdir().expect("tempdir");
    let app = TestApp::spawn_with(Backend::Sqlite, |c| c.telegram.local_api = true).await;
    app.fake.set_local_mode(server_dir.path());
    let pdf = fixture("pdf/text-20pages.pdf");
    app.send_document(87, pdf.clone(), "local.pdf", "application/pdf");
    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
    assert_eq!(job.source.as_ref().map(|s| s.size), Some(pdf.len() as i64));
    let expected = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&pdf))
    };
    assert_eq!(job.source.as_ref().map(|s| s.sha256.as_str()), Some(expected.as_str()));
    assert_eq!(app.fake.downloads(), 0, "nothing was downloaded over HTTP");
    app.fake.wait_for_call("sendDocument", to_chat(87), DEADLINE).await;
}

/// Downloads are not synced to disk; a power cut can leave a `fetched` job's source with its size
/// but not its bytes (zeros where the data never reached the disk). The processing stage checks
/// the sha256 before any use, finds it, and the job is downloaded again instead of failing as
/// "not a PDF".
/// Records job 1 as `fetched`, with a source of the right length but zeros, as a power cut
/// leaves a download that was never synced; returns the source's path and the real sha256.
async fn record_a_fetched_job_whose_bytes_were_lost(app: &TestApp) -> (std::path::PathBuf, String) {
    let pdf = fixture("pdf/text-20pages.pdf");
    let file = app.fake.add_file(pdf.clone());
    let now = docket::domain::Clock::now(&docket::domain::SystemClock);
    let mut tx = app.store.begin().await.expect("tx");
    tx.insert_job(
        &docket::domain::Submission {
            update_id: docket::domain::UpdateId(1),
            chat: docket::domain::ChatRef(70),
            user_id: Some(docket::domain::UserId(70)),
            message_id: docket::domain::MessageId(1),
            file_id: file.file_id.clone(),
            file_unique_id: file.file_unique_id.clone(),
            declared_name: Some("lost.pdf".to_owned()),
            declared_mime: Some("application/pdf".to_owned()),
            declared_size: Some(pdf.len() as i64),
            operation: docket::domain::Operation::Optimize,
            chosen_by_default: false,
            language_code: None,
            run_of: None,
        },
        now,
    )
    .await
    .expect("insert");
    tx.commit().await.expect("commit");
    let job = app
        .store
        .claim_job(docket::store::Stage::Download, "before-the-power-cut", now, std::time::Duration::from_secs(60))
        .await
        .expect("claim")
        .expect("the job is claimable");
    // What a power cut leaves of a download that was never synced: the length, but zeros.
    let downloads = app.data_dir().join("downloads");
    std::fs::create_dir_all(&downloads).expect("downloads folder");
    let source = downloads.join("1-lost.source");
    std::fs::write(&source, vec![0u8; pdf.len()]).expect("write the source");
    let sha256 = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&pdf));
    let lease = job.lease.expect("a claimed job holds a lease");
    let marked = app
        .store
        .mark_fetched(Ticket(1), &lease, &source.to_string_lossy(), pdf.len() as i64, &sha256, now)
        .await
        .expect("mark fetched");
    assert!(marked);
    (source, sha256)
}

async fn a_source_whose_bytes_were_lost_is_downloaded_again(backend: Backend) {
    let mut app = TestApp::create(backend, |_| {}).await;
    let (source, sha256) = record_a_fetched_job_whose_bytes_were_lost(&app).await;
    app.start().await;
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert_eq!(job.source.as_ref().map(|s| s.sha256.as_str()), Some(sha256.as_str()));
    assert_eq!(app.fake.calls_to("getFile").len(), 1, "downloaded again, with a fresh getFile");
    assert_eq!(app.fake.downloads(), 1);
    // Removed once the failure is committed, so after the job is seen failed.
    eventually(
        DEADLINE,
        async || {
            if source.exists() { Err("the damaged source is still there".to_owned()) } else { Ok(()) }
        },
    )
    .await;
}

async fn a_source_lost_again_and_again_fails_with_a_reason(backend: Backend) {
    let mut app = TestApp::create(backend, |_| {}).await;
    let (source, _) = record_a_fetched_job_whose_bytes_were_lost(&app).await;
    // Lost twice before: the third loss ends the job instead of a fourth download.
    app.execute("UPDATE jobs SET source_losses = 2 WHERE id = 1").await;
    app.start().await;
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Failed, "{job:#?}");
    assert_eq!(
        job.error.as_deref(),
        Some("the downloaded copy of lost.pdf was lost or damaged on this server 3 times; please try again later")
    );
    assert!(app.fake.calls_to("getFile").is_empty(), "not downloaded again");
    assert!(!source.exists(), "the damaged source was removed");
}

async fn a_download_longer_than_announced_stops_soon_after_the_announced_size(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    let real = fixture("pdf/text-1page.pdf");
    let file = app.fake.add_file(real.clone());
    // 15 MB instead of 3 kB: within the 20 MiB limit, so only the announced size can stop it.
    app.fake.fail_downloads(DownloadFault::ServeBytes(vec![b'%'; 15_000_000]), None);
    app.fake.push_update(app.fake.document_update(75, 75, &file, Some("long.pdf"), Some("application/pdf")));
    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Failed).await;
    let detail = job.error_detail.clone().unwrap_or_default();
    let stopped_at: u64 = detail.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(u64::MAX);
    assert!(stopped_at < 1_000_000, "read {stopped_at} bytes of a 3 kB file: {job:#?}");
    let error = job.error.expect("a reason");
    assert!(error.contains("instead of the 3.1 kB Telegram announced"), "{error}");
    assert!(files_under(&app.data_dir()).is_empty());
}
