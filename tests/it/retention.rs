//! Retention and the janitor: results expire on time and their files go, orphans and stale
//! `.part` files are swept, a lease protects files in use, the results cap expires the oldest
//! first, and old rows are pruned only past the configured history.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use docket::domain::{ChatRef, JobState, ManualClock, Operation, Submission, Ticket, Timestamp};
use docket::janitor::{JanitorDeps, JanitorSettings};
use docket::spool::Spool;
use docket::store::{Stage, UpdateOutcome};
use fake_bot_api::Fault;
use tokio::sync::Notify;

use crate::support::calls::{text_of, to_chat};
use crate::support::child;
use crate::support::{Backend, DEADLINE, TestApp, eventually, fixture};

/// Whether the store still holds the outcome of update `update` of bot 1.
async fn update_recorded(app: &TestApp, update: i64) -> bool {
    let outcome = app.store.update_outcome(docket::domain::BotId(1), docket::domain::UpdateId(update)).await;
    outcome.expect("read").is_some()
}

/// The paths a janitor report lists after `verb` ("would delete" / "deleted").
fn listed(report: &str, verb: &str) -> Vec<String> {
    let mut paths: Vec<String> = report
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{verb} ")))
        .map(|rest| rest.split(" (").next().unwrap_or_default().to_owned())
        .collect();
    paths.sort();
    paths
}

fn plant(path: &Path, bytes: &[u8], age: Duration) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, bytes).expect("write");
    let f = std::fs::File::options().write(true).open(path).expect("open");
    f.set_modified(SystemTime::now() - age).expect("set mtime");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_expires_its_file_goes_and_status_says_expired_then_the_same_file_runs_again() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.retention.result_ttl = Duration::from_secs(2);
        c.retention.janitor_interval = Duration::from_secs(1);
    })
    .await;
    let (file, ready) = app.first_pdf_ready(20, "old.pdf").await;
    let result = PathBuf::from(ready.result_path().expect("a result path"));
    assert!(result.exists());
    app.fake.wait_for_call("sendDocument", to_chat(20), DEADLINE).await;

    let expired = app.wait_for_job(Ticket(1), |j| j.state == JobState::Expired).await;
    // The row says expired first, then the file goes (a crash in between leaves an orphan, never
    // a row pointing at nothing): wait for the deletion rather than expect it at once.
    eventually(DEADLINE, async || {
        if result.exists() { Err(format!("{} is still there after the job expired", result.display())) } else { Ok(()) }
    })
    .await;
    assert_eq!(expired.result_path(), None, "no row points at a deleted file");
    let until = ready.result.as_ref().expect("expiry").expires_at.date_utc();

    app.send_text(20, "/status 1");
    let status =
        app.fake.wait_for_call("sendMessage", |c| to_chat(20)(c) && text_of(c).starts_with("#1 — "), DEADLINE).await;
    assert!(text_of(&status).contains(&format!("Expired on {until}.")), "{}", text_of(&status));

    // The same file after expiry is processed again under the same ticket.
    app.fake.push_update(app.fake.document_update(20, 20, &file, Some("old.pdf"), Some("application/pdf")));
    let again = app
        .fake
        .wait_for_call("sendMessage", |c| to_chat(20)(c) && text_of(c).contains("processing it again"), DEADLINE)
        .await;
    assert_eq!(text_of(&again), format!("#1 expired on {until}; processing it again."));
    app.fake.wait_for_calls("sendDocument", to_chat(20), 2, DEADLINE).await;
    assert!(app.store.job(Ticket(2)).await.expect("read").is_none(), "same ticket, no new job");
    assert_eq!(app.fake.calls_to("getFile").len(), 2, "downloaded again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_commit_and_deletion_leaves_an_orphan_that_the_next_pass_removes() {
    let mut app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    let (_, ready) = app.first_pdf_ready(21, "kept.pdf").await;
    app.fake.wait_for_call("sendDocument", to_chat(21), DEADLINE).await;
    app.stop().await;
    let result = PathBuf::from(ready.result_path().expect("result"));
    // The state is committed, and the process dies before deleting the file.
    let now = Timestamp::from_millis(i64::MAX / 2);
    assert!(app.store.expire_job(Ticket(1), now, None, now).await.expect("expire"));
    assert!(result.exists(), "the orphan is there");
    let stray = app.data_dir().join("downloads").join("1-left.source");
    plant(&stray, b"source of a finished job", Duration::ZERO);

    let (_dir, config) = child::janitor_config(&app, "");
    let report = child::janitor(&config, false);
    let preview = docket::spool::preview_path_for(&result);
    assert!(!result.exists() && !preview.exists() && !stray.exists(), "{report}");
    assert_eq!(listed(&report, "deleted").len(), 3, "the result, its preview and the source: {report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_part_of_a_dead_job_goes_but_the_part_of_a_leased_job_stays() {
    let app = TestApp::create(Backend::Sqlite, |_| {}).await;
    let now = docket::domain::Clock::now(&docket::domain::SystemClock);
    let mut tx = app.store.begin().await.expect("tx");
    for (n, chat) in [(1, 31), (2, 32)] {
        let job = Submission {
            update_id: docket::domain::UpdateId(n),
            chat: ChatRef(chat),
            user_id: Some(docket::domain::UserId(chat)),
            message_id: docket::domain::MessageId(1),
            file_id: format!("f{n}"),
            file_unique_id: format!("u{n}"),
            declared_name: None,
            declared_mime: None,
            declared_size: Some(10),
            operation: Operation::Optimize,
            chosen_by_default: false,
            language_code: None,
            run_of: None,
        };
        tx.insert_job(&job, now).await.expect("insert");
    }
    tx.commit().await.expect("commit");
    // Ticket 1 is held by a worker for an hour; ticket 2's worker died long ago.
    let held =
        app.store.claim_job(Stage::Download, "busy-worker", now, Duration::from_secs(3600)).await.expect("claim");
    assert_eq!(held.map(|j| j.ticket), Some(Ticket(1)));
    let leased_part = app.data_dir().join("downloads").join("1-live.part");
    let dead_part = app.data_dir().join("downloads").join("2-dead.part");
    plant(&leased_part, b"in progress", Duration::from_secs(3 * 86_400));
    plant(&dead_part, b"abandoned", Duration::from_secs(3 * 86_400));

    let (_dir, config) = child::janitor_config(&app, "part_max_age = \"1h\"");
    let report = child::janitor(&config, false);
    assert!(leased_part.exists(), "a leased job's .part is kept whatever its age: {report}");
    assert!(!dead_part.exists(), "{report}");
    assert!(report.contains("stale .part"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_deletes_nothing_and_lists_everything_the_real_run_deletes() {
    let app = TestApp::create(Backend::Sqlite, |_| {}).await;
    let data = app.data_dir();
    let planted = [
        data.join("downloads").join("7-orphan.part"),
        data.join("downloads").join("8-orphan.source"),
        data.join("work").join("9").join("optimize-x.pdf"),
        data.join("results").join("10").join("ghost.pdf"),
    ];
    for p in &planted {
        plant(p, b"nobody owns me", Duration::from_secs(2 * 86_400));
    }
    let (_dir, config) = child::janitor_config(&app, "part_max_age = \"1h\"");
    let dry = child::janitor(&config, true);
    assert!(planted.iter().all(|p| p.exists()), "a dry run deletes nothing");
    let would = listed(&dry, "would delete");
    assert_eq!(would.len(), planted.len(), "{dry}");
    let real = child::janitor(&config, false);
    assert_eq!(listed(&real, "deleted"), would, "the real run deletes exactly what the dry run listed");
    assert!(planted.iter().all(|p| !p.exists()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_results_cap_expires_the_oldest_first_and_tells_their_owners() {
    // The size of one result: optimize the fixture the way the bot will.
    let tmp = tempfile::tempdir().expect("tempdir");
    let (input, output) = (tmp.path().join("in.pdf"), tmp.path().join("out.pdf"));
    std::fs::write(&input, fixture("pdf/text-1page.pdf")).expect("write");
    let size =
        docket::pdf::optimize(&input, &output, docket::pdf::DEFAULT_MAX_INFLATE_BYTES).expect("optimize").output_bytes;
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.retention.janitor_interval = Duration::from_secs(1);
        // Room for two results, not three.
        c.retention.results_bytes = Some(size * 2 + size / 2);
    })
    .await;
    for (n, chat) in [(1, 41), (2, 42), (3, 43)] {
        app.send_document(chat, fixture("pdf/text-1page.pdf"), &format!("r{n}.pdf"), "application/pdf");
        app.wait_for_job(Ticket(n), |j| j.state == JobState::Ready || j.state == JobState::Expired).await;
        app.fake.wait_for_call("sendDocument", to_chat(chat), DEADLINE).await;
    }
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Expired).await;
    let told = app
        .fake
        .wait_for_call("sendMessage", |c| to_chat(41)(c) && text_of(c).contains("removed early"), DEADLINE)
        .await;
    let today = docket::domain::Clock::now(&docket::domain::SystemClock).date_utc();
    assert_eq!(
        text_of(&told),
        format!(
            "#1: the result for r1.pdf had to be removed early, on {today}, to make room. Send the file again to process it again."
        )
    );
    for n in [2, 3] {
        let job = app.store.job(Ticket(n)).await.expect("read").expect("exists");
        assert_eq!(job.state, JobState::Ready, "the newer results stay");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pruning_never_removes_an_update_younger_than_the_history() {
    let app = TestApp::create(Backend::Sqlite, |_| {}).await;
    let t0 = Timestamp::from_millis(1_800_000_000_000);
    let day = Duration::from_secs(86_400);
    let mut tx = app.store.begin().await.expect("tx");
    tx.register_update(docket::domain::BotId(1), docket::domain::UpdateId(100), UpdateOutcome::Recorded, None, t0)
        .await
        .expect("old");
    tx.register_update(
        docket::domain::BotId(1),
        docket::domain::UpdateId(101),
        UpdateOutcome::Recorded,
        None,
        t0.plus(day),
    )
    .await
    .expect("younger");
    tx.commit().await.expect("commit");
    let clock = ManualClock::new(t0.plus(day * 2).plus(Duration::from_secs(3600)));
    let mut settings = JanitorSettings::from_config(&app.config);
    settings.history = day * 2;
    let deps = JanitorDeps {
        store: app.store.clone(),
        clock: Arc::new(clock.clone()),
        spool: Spool::open(&app.data_dir()).expect("spool"),
        settings: docket::runtime::Live::new(settings),
        outbox: Arc::new(Notify::new()),
        node: "test".to_owned(),
        disk: Arc::default(),
    };
    let report = docket::janitor::pass(&deps, false).await.expect("pass");
    assert_eq!(report.pruned.updates, 1);
    assert!(!update_recorded(&app, 100).await, "older than the history: pruned");
    assert!(update_recorded(&app, 101).await, "younger than the history: kept");
    clock.advance(day);
    docket::janitor::pass(&deps, false).await.expect("pass");
    assert!(!update_recorded(&app, 101).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_resends_by_file_id_and_falls_back_to_disk_when_telegram_refuses_it() {
    let app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    app.send_document(50, fixture("pdf/text-1page.pdf"), "get.pdf", "application/pdf");
    app.fake.wait_for_call("sendDocument", to_chat(50), DEADLINE).await;
    let first = app.wait_for_job(Ticket(1), |j| j.result.as_ref().is_some_and(|r| r.telegram_file_id.is_some())).await;

    app.send_text(50, "/get 1");
    let calls = app.fake.wait_for_calls("sendDocument", to_chat(50), 2, DEADLINE).await;
    assert!(calls[1].upload.is_none(), "/get sends by file_id");
    assert_eq!(calls[1].params["document"].as_str(), first.result.as_ref().and_then(|r| r.telegram_file_id.as_deref()));

    app.fake
        .fail_next("sendDocument", Fault::BadRequest("Bad Request: wrong file identifier/HTTP URL specified".into()));
    app.send_text(50, "/get 1");
    let calls = app.fake.wait_for_calls("sendDocument", to_chat(50), 4, DEADLINE).await;
    assert_eq!(calls[2].status, 400);
    assert!(calls[3].upload.is_some(), "refused file_id: uploaded from disk instead");
    let after = app
        .wait_for_job(Ticket(1), |j| {
            j.result.as_ref().is_some_and(|r| r.telegram_file_id.is_some())
                && j.result.as_ref().and_then(|r| r.telegram_file_id.as_deref())
                    != first.result.as_ref().and_then(|r| r.telegram_file_id.as_deref())
        })
        .await;
    assert!(after.result.as_ref().is_some_and(|r| r.telegram_file_id.is_some()), "the new file_id is stored");

    app.send_text(51, "/get 1");
    let stranger = app.fake.wait_for_call("sendMessage", to_chat(51), DEADLINE).await;
    assert_eq!(text_of(&stranger), "No such ticket: #1.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_min_free_downloads_wait_instead_of_failing() {
    let mut app = TestApp::spawn_with(Backend::Sqlite, |c| c.storage.min_free = u64::MAX / 2).await;
    app.send_document(60, fixture("pdf/text-1page.pdf"), "wait.pdf", "application/pdf");
    app.fake.wait_for_call("sendMessage", to_chat(60), DEADLINE).await;
    // Wait until a download worker has looked at the job and declined it for lack of space.
    eventually(DEADLINE, async || {
        let declined = crate::support::logs::captured().contains("too little free space; not starting downloads");
        if declined { Ok(()) } else { Err("no worker declined the download".to_owned()) }
    })
    .await;
    let job = app.store.job(Ticket(1)).await.expect("read").expect("exists");
    assert_eq!((job.state, job.attempts), (JobState::Accepted, 0), "waiting, not failing, no attempt spent");
    assert!(app.fake.calls_to("getFile").is_empty());

    // Space returns (here: the threshold is back to normal): the job goes through.
    app.stop().await;
    app.config.storage.min_free = 1;
    app.start().await;
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Ready).await;
}

/// Leftovers of a dead attempt go, but a job that can still be claimed keeps its per-job
/// folders: a worker that claims it while the pass runs must not find the folder it just made
/// gone. The folders of a job that ended go with their last file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_keeps_the_folders_of_jobs_that_can_still_be_claimed() {
    let app = TestApp::create(Backend::Sqlite, |_| {}).await;
    let waiting = app.fake.add_file(fixture("pdf/text-1page.pdf"));
    let ended = app.fake.add_file(fixture("pdf/text-20pages.pdf"));
    let claimable = app.insert_job(41, &waiting, "waiting.pdf", Some(waiting.size)).await;
    let failed = app.insert_job(42, &ended, "ended.pdf", Some(ended.size)).await;
    let now = docket::domain::Clock::now(&docket::domain::SystemClock);
    assert!(app.store.fail_job(failed, JobState::Accepted, None, "no", "test", &[], now).await.expect("fail"));
    let mut leftovers = Vec::new();
    for ticket in [claimable, failed] {
        for area in ["work", "results"] {
            let file = app.data_dir().join(area).join(ticket.0.to_string()).join("3-of-a-dead-attempt.pdf");
            plant(&file, b"left by an attempt that died", Duration::ZERO);
            leftovers.push(file);
        }
    }

    let (_dir, config) = child::janitor_config(&app, "");
    let report = child::janitor(&config, false);
    assert!(leftovers.iter().all(|f| !f.exists()), "every leftover goes: {report}");
    for area in ["work", "results"] {
        let folder = app.data_dir().join(area);
        assert!(folder.join(claimable.0.to_string()).is_dir(), "{area}/ of the claimable job stays: {report}");
        assert!(!folder.join(failed.0.to_string()).exists(), "{area}/ of the failed job goes: {report}");
    }
}
