//! People's own controls and the admins' tools: `/cancel` during download and during
//! processing, `/privacy`, `/forget` behind its confirmation button, `/stats`, invites, and the
//! command line's `retry`, `cancel` and `jobs --since`.

use docket::domain::{ChatRef, Clock as _, JobState, SystemClock, Ticket};
use docket::runtime::WorkerId;
use docket::store::{MessageFilter, Stage};
use fake_bot_api::DownloadFault;

use crate::per_backend;
use crate::support::calls::{says, text_of, to_chat};
use crate::support::child::{self, DocketProcess, stderr};
use crate::support::upload;
use crate::support::{Backend, DEADLINE, TestApp, eventually, files_under, fixture};

per_backend!(
    cancel_during_download_stops_the_worker_and_frees_everything,
    cancel_during_processing_revokes_the_lease_and_frees_everything,
    cancel_is_only_for_the_owner_and_for_unfinished_jobs,
    forget_deletes_everything_after_the_askers_confirmation,
    privacy_says_what_is_kept_and_for_how_long,
    stats_is_for_admins,
);

/// Files of `ticket` left in `downloads/` and `work/`.
fn in_flight_files(app: &TestApp, ticket: Ticket) -> Vec<std::path::PathBuf> {
    let prefix = format!("{}-", ticket.0);
    let mut files: Vec<_> = files_under(&app.data_dir().join("downloads"))
        .into_iter()
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(&prefix)))
        .collect();
    files.extend(files_under(&app.data_dir().join("work").join(ticket.0.to_string())));
    files
}

async fn cancel_during_download_stops_the_worker_and_frees_everything(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    // 18 KB at 1 KB/s: the download runs for many seconds unless it is stopped.
    app.fake.fail_downloads(DownloadFault::Throttle { bytes_per_sec: 1_000 }, None);
    app.send_document(110, fixture("pdf/text-20pages.pdf"), "slow.pdf", "application/pdf");
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Accepted && j.lease.is_some()).await;
    eventually(DEADLINE, async || {
        if in_flight_files(&app, Ticket(1)).is_empty() { Err("no .part yet".to_owned()) } else { Ok(()) }
    })
    .await;
    assert!(app.reserved_bytes() > 0, "a running download holds room in the budget");

    app.send_text(110, "/cancel 1");
    let answer = app.fake.wait_for_call("sendMessage", says(110, "cancelled"), DEADLINE).await;
    assert_eq!(text_of(&answer), "#1 cancelled: slow.pdf will not be processed, and its files are deleted.");
    let job = app.wait_for_job(Ticket(1), |j| j.state == JobState::Failed).await;
    assert_eq!(job.error.as_deref(), Some("slow.pdf was cancelled"));
    assert!(job.lease.is_none());

    // The worker noticed at its next renewal, stopped, and deleted what it had written.
    eventually(DEADLINE, async || {
        let logs = crate::support::logs::captured();
        let left = in_flight_files(&app, Ticket(1));
        match (logs.contains("the job was ended while it ran"), left.is_empty(), app.reserved_bytes()) {
            (true, true, 0) => Ok(()),
            state => Err(format!("worker stopped, files gone, budget free: {state:?}; files {left:?}")),
        }
    })
    .await;
    // The status message's last edit says so; no result is ever sent.
    app.wait_until_messages(ChatRef(110), |m| {
        m.iter().any(|m| {
            m.kind == docket::domain::MessageKind::Progress && m.body.ends_with("Cancelled; its files are deleted.")
        })
    })
    .await;
    assert!(app.fake.calls_to("sendDocument").is_empty());
    assert_eq!(app.store.job(Ticket(1)).await.expect("read").map(|j| j.state), Some(JobState::Failed));
}

async fn cancel_during_processing_revokes_the_lease_and_frees_everything(backend: Backend) {
    // A processing worker of another docket (the test) holds the job with its verified source
    // on disk when the person cancels; this docket's reaper deletes the source, and the holder's
    // next renewal fails, which is what stops a worker.
    let mut app = TestApp::create(backend, |_| {}).await;
    let source_bytes = fixture("pdf/text-1page.pdf");
    let file = app.fake.add_file(source_bytes.clone());
    let ticket = app.insert_job(120, &file, "busy.pdf", Some(source_bytes.len() as u64)).await;
    let now = SystemClock.now();
    let lease_len = std::time::Duration::from_secs(60);
    let other = "otherhost:1:download-1";
    let downloading = app.store.claim_job(Stage::Download, other, now, lease_len).await.expect("claim").expect("job");
    let lease = downloading.lease.expect("leased");
    std::fs::create_dir_all(app.data_dir().join("downloads")).expect("downloads/");
    let source = app.data_dir().join("downloads").join(format!("{}-{}-x.source", ticket.0, lease.token));
    std::fs::write(&source, &source_bytes).expect("write the source");
    let sha = {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(&source_bytes))
    };
    let path = source.to_str().expect("utf8");
    assert!(app.store.mark_fetched(ticket, &lease, path, source_bytes.len() as i64, &sha, now).await.expect("fetched"));
    let processing = app
        .store
        .claim_job(Stage::Process, "otherhost:1:process-1", now, lease_len)
        .await
        .expect("claim")
        .expect("the fetched job");
    let held = processing.lease.expect("leased");
    std::fs::create_dir_all(app.data_dir().join("work").join(ticket.0.to_string())).expect("work/");
    std::fs::write(
        app.data_dir().join("work").join(ticket.0.to_string()).join(format!("{}-out.pdf", held.token)),
        b"%PDF",
    )
    .expect("write intermediate output");

    app.start().await;
    // docket reserves room for every job whose files are on this machine.
    assert!(app.reserved_bytes() > 0);
    app.send_text(120, "/cancel 1");
    let answer = app.fake.wait_for_call("sendMessage", says(120, "cancelled"), DEADLINE).await;
    assert_eq!(text_of(&answer), "#1 cancelled: busy.pdf will not be processed, and its files are deleted.");
    let job = app.wait_for_job(ticket, |j| j.state == JobState::Failed).await;
    assert_eq!(job.source_path(), None, "the row forgets the source");
    // The holder can no longer renew: it stops, and writes nothing.
    let later = SystemClock.now();
    assert!(!app.store.renew_job_lease(ticket, &held, later.plus(lease_len), later).await.expect("renew"));
    eventually(DEADLINE, async || {
        let left = in_flight_files(&app, ticket);
        match (left.is_empty(), app.reserved_bytes()) {
            (true, 0) => Ok(()),
            state => Err(format!("files gone, budget free: {state:?}; files {left:?}")),
        }
    })
    .await;
    assert!(!WorkerId::process_prefix().starts_with("otherhost"));
}

async fn cancel_is_only_for_the_owner_and_for_unfinished_jobs(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.first_pdf_ready(130, "done.pdf").await;
    app.send_text(131, "/cancel 1");
    let stranger = app.fake.wait_for_call("sendMessage", to_chat(131), DEADLINE).await;
    assert_eq!(text_of(&stranger), "No such ticket: #1.");
    app.send_text(130, "/cancel 1");
    let late = app.fake.wait_for_call("sendMessage", says(130, "can be cancelled"), DEADLINE).await;
    assert_eq!(text_of(&late), "#1 is ready already; only a ticket that is not ready yet can be cancelled.");
    app.send_text(130, "/cancel");
    app.fake.wait_for_call("sendMessage", says(130, "Usage: /cancel 4812"), DEADLINE).await;
    assert_eq!(app.store.job(Ticket(1)).await.expect("read").map(|j| j.state), Some(JobState::Ready));
}

async fn forget_deletes_everything_after_the_askers_confirmation(backend: Backend) {
    let app = TestApp::spawn_with(backend, |_| {}).await;
    app.send_document(140, fixture("pdf/text-1page.pdf"), "private.pdf", "application/pdf");
    app.send_document(140, fixture("other/stored-pdf.zip"), "secret.pdf", "application/pdf");
    app.wait_for_job(Ticket(1), |j| {
        j.state == JobState::Ready && j.result.as_ref().is_some_and(|r| r.telegram_file_id.is_some())
    })
    .await;
    app.wait_for_job(Ticket(2), |j| j.state == JobState::Failed).await;
    // Someone else's document stays.
    app.send_document(141, fixture("pdf/text-1page.pdf"), "other.pdf", "application/pdf");
    app.wait_for_job(Ticket(3), |j| j.state == JobState::Ready).await;
    assert!(!files_under(&app.data_dir().join("results").join("1")).is_empty());

    app.send_text(140, "/forget");
    let question = app.fake.wait_for_call("sendMessage", says(140, "cannot be undone"), DEADLINE).await;
    let markup: serde_json::Value = match &question.params["reply_markup"] {
        serde_json::Value::String(s) => serde_json::from_str(s).expect("markup is JSON"),
        other => other.clone(),
    };
    assert_eq!(markup["inline_keyboard"][0][0]["text"], "Yes, delete everything");
    let question_id =
        app.fake.last_bot_message(140).and_then(|m| m["message_id"].as_i64()).expect("the question was sent");
    // Nothing is deleted by asking.
    assert_eq!(app.store.job(Ticket(1)).await.expect("read").map(|j| j.state), Some(JobState::Ready));

    // A press by someone else (the button's message forwarded, say) does nothing.
    let foreign = app.fake.press_button(140, 999, question_id).expect("the question has a button");
    eventually(DEADLINE, async || {
        if app.fake.press_answered(&foreign) {
            Ok(())
        } else {
            Err(format!("the press is unanswered: {:?}", app.fake.calls_to("answerCallbackQuery")))
        }
    })
    .await;
    assert_eq!(app.store.job(Ticket(1)).await.expect("read").map(|j| j.state), Some(JobState::Ready));

    let press = app.fake.press_button(140, 140, question_id).expect("the question has a button");
    let done = app.fake.wait_for_call("sendMessage", says(140, "Done:"), DEADLINE).await;
    assert_eq!(text_of(&done), "Done: 2 tickets are forgotten, with their files.");
    assert!(app.fake.press_answered(&press), "the press is answered");
    let ready = app.wait_for_job(Ticket(1), |j| j.state == JobState::Expired).await;
    let failed = app.wait_for_job(Ticket(2), |j| j.state == JobState::Failed).await;
    for job in [&ready, &failed] {
        assert_eq!(job.submission.declared_name, None, "{job:#?}");
        assert_eq!(job.submission.declared_mime, None);
        assert_eq!(job.result_path(), None);
        assert_eq!(job.result.as_ref().and_then(|r| r.telegram_file_id.as_ref()), None);
    }
    for message in app.store.messages(&MessageFilter::job(Ticket(1))).await.expect("read") {
        assert!(!message.body.contains("private.pdf"), "{message:#?}");
    }
    eventually(DEADLINE, async || {
        let left = files_under(&app.data_dir().join("results").join("1"));
        if left.is_empty() { Ok(()) } else { Err(format!("the result is still there: {left:?}")) }
    })
    .await;
    let other = app.store.job(Ticket(3)).await.expect("read").expect("job 3");
    assert_eq!((other.state, other.submission.declared_name.as_deref()), (JobState::Ready, Some("other.pdf")));
    assert!(!files_under(&app.data_dir().join("results").join("3")).is_empty());
}

async fn privacy_says_what_is_kept_and_for_how_long(backend: Backend) {
    // Even someone the bot does not serve may ask what it keeps.
    let app = TestApp::spawn_with(backend, |c| c.access.allowed_users = vec![1]).await;
    app.send_text(150, "/privacy");
    let answer = app.fake.wait_for_call("sendMessage", to_chat(150), DEADLINE).await;
    let text = text_of(&answer);
    assert!(text.starts_with("What I keep about you:"), "{text}");
    assert!(text.contains("for 7days after it is ready"), "{text}");
    assert!(text.contains("/forget deletes"), "{text}");
}

async fn stats_is_for_admins(backend: Backend) {
    let app = TestApp::spawn_with(backend, |c| c.access.admins = vec![161]).await;
    app.first_pdf_ready(160, "a.pdf").await;
    app.send_text(160, "/stats");
    let refused = app.fake.wait_for_call("sendMessage", says(160, "/stats"), DEADLINE).await;
    assert_eq!(text_of(&refused), "Only this bot's admins can use /stats.");
    app.send_text(161, "/stats");
    let stats = app.fake.wait_for_call("sendMessage", says(161, "docket now:"), DEADLINE).await;
    let text = text_of(&stats);
    assert!(text.contains("Jobs: ready 1"), "{text}");
    assert!(text.contains("Oldest waiting job: none waiting"), "{text}");
    assert!(text.contains("Dead chats: 0"), "{text}");
    assert!(text.contains("429s in the last hour: 0"), "{text}");
    assert!(text.contains("Budget: "), "{text}");
    assert!(text.contains("Hosts: "), "{text}");
}

/// The real binary, since the tokens come from its environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invite_token_lets_a_person_in_for_good() {
    let fake = fake_bot_api::FakeTelegram::start().await;
    let toml =
        "[telegram]\npoll_timeout = \"1s\"\n[access]\nallowed_users = [1]\ninvite_tokens_env = \"DOCKET_INVITES\"\n";
    let process = DocketProcess::new(tempfile::tempdir().expect("tempdir"), toml, &fake)
        .env("DOCKET_INVITES", "first-token, second-token");
    process.start();
    fake.push_update(fake.text_update(170, 170, "/start wrong-token"));
    let refused = fake.wait_for_call("sendMessage", to_chat(170), DEADLINE).await;
    assert!(text_of(&refused).starts_with("Sorry, this bot is private."), "{}", text_of(&refused));
    fake.push_update(fake.text_update(170, 170, "/start second-token"));
    let welcome = fake.wait_for_call("sendMessage", says(170, "Welcome!"), DEADLINE).await;
    assert!(text_of(&welcome).starts_with("Welcome! You can use this bot now."));
    // Stored in the database: after a restart the person is still in.
    process.terminate();
    assert!(process.exit_status(DEADLINE).await.success(), "{}", process.log_text());
    process.start();
    fake.push_update(fake.text_update(170, 170, "/jobs"));
    fake.wait_for_call("sendMessage", says(170, "No tickets yet"), DEADLINE).await;
    process.terminate();
    assert!(process.exit_status(DEADLINE).await.success(), "{}", process.log_text());
    let log = process.log_text();
    assert!(!log.contains("second-token") && !log.contains("first-token"), "{log}");
    process.assert_no_secrets_logged();

    // Invites named but not given: docket refuses to start, naming the key.
    let missing = DocketProcess::new(tempfile::tempdir().expect("tempdir"), toml, &fake);
    missing.start();
    assert!(!missing.exit_status(DEADLINE).await.success());
    let log = missing.log_text();
    assert!(log.contains("[access] invite_tokens_env names DOCKET_INVITES"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_cancel_and_jobs_since_work_from_the_command_line() {
    let mut app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    app.send_document(180, fixture("other/stored-pdf.zip"), "broken.pdf", "application/pdf");
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Failed).await;
    app.send_document(180, fixture("pdf/text-1page.pdf"), "fine.pdf", "application/pdf");
    app.wait_for_job(Ticket(2), |j| j.state == JobState::Ready).await;
    let caption = "decrypt not-the-password";
    app.send(180, upload::pdf("pdf/aes256-userpw.pdf", "locked.pdf").caption(caption).language("en"));
    app.wait_for_job(Ticket(3), |j| j.state == JobState::Failed).await;
    app.stop().await;

    let (_dir, config) = child::storage_config(&app, "");

    let out = child::output(&["jobs", "--state", "failed", "--since", "1d"], Some(&config));
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(listed.contains("#1") && listed.contains("#3") && listed.contains("failed"), "{listed}");
    // A job that failed two days ago is left out.
    app.execute("UPDATE jobs SET updated_at = updated_at - 172800000 WHERE id = 1").await;
    let out = child::output(&["jobs", "--state", "failed", "--since", "1d"], Some(&config));
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!listed.contains("#1") && listed.contains("#3"), "{listed}");

    let out = child::output(&["retry", "2"], Some(&config));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("#2 is ready, not failed; only a failed job can be retried"), "{}", stderr(&out));
    // A decrypt's password is gone with its run: retrying it could only fail again.
    let out = child::output(&["retry", "3"], Some(&config));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("#3 is a decrypt, and its password was erased"), "{}", stderr(&out));
    assert_eq!(app.store.job(Ticket(3)).await.expect("read").expect("job 3").state, JobState::Failed);
    let out = child::output(&["retry", "1"], Some(&config));
    assert!(out.status.success(), "{}", stderr(&out));
    let job = app.store.job(Ticket(1)).await.expect("read").expect("job 1");
    assert_eq!((job.state, job.attempts, job.error.as_deref()), (JobState::Accepted, 0, None));
    let notices =
        app.store.messages(&MessageFilter { chat: Some(ChatRef(180)), job: Some(Ticket(1)) }).await.expect("read");
    assert!(notices.iter().any(|m| m.body == "#1: broken.pdf is being tried again."), "{notices:#?}");

    let out = child::output(&["cancel", "1"], Some(&config));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("#1 is cancelled (it was accepted)"));
    let job = app.store.job(Ticket(1)).await.expect("read").expect("job 1");
    assert_eq!(job.state, JobState::Failed);
    let out = child::output(&["cancel", "2"], Some(&config));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("#2 is ready already"), "{}", stderr(&out));
}
