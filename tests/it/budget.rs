//! The byte budget: bytes on disk bound concurrency, big jobs are not starved, one chat cannot
//! take the whole pipeline, and a file bigger than the whole budget is refused at once.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use docket::domain::{JobState, Ticket};
use fake_bot_api::{Call, DownloadFault};
use lopdf::{Document, Object, Stream, dictionary};

use crate::support::{Backend, DEADLINE, TestApp};

const MB: u64 = 1_000_000;

/// A valid one-page PDF of about `size` bytes whose bulk is an incompressible image stream, so
/// optimizing it neither shrinks it nor takes long.
fn pdf_of_size(size: usize, seed: u64) -> Vec<u8> {
    let mut doc = Document::with_version("1.5");
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let noise: Vec<u8> = (0..size)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) as u8
        })
        .collect();
    let image = doc.add_object(Stream::new(
        dictionary! { "Type" => "XObject", "Subtype" => "Image", "Width" => 100, "Height" => 100,
        "ColorSpace" => "DeviceGray", "BitsPerComponent" => 8, "Filter" => "DCTDecode" },
        noise,
    ));
    let content = doc.add_object(Stream::new(dictionary! {}, b"q 100 0 0 100 0 0 cm /Im0 Do Q".to_vec()));
    let pages_id = doc.new_object_id();
    let page = doc.add_object(dictionary! {
        "Type" => "Page", "Parent" => pages_id, "Contents" => content,
        "Resources" => dictionary! { "XObject" => dictionary! { "Im0" => image } },
        "MediaBox" => vec![0.into(), 0.into(), 100.into(), 100.into()],
    });
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => vec![page.into()], "Count" => 1 }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    let mut out = Vec::new();
    doc.save_to(&mut out).expect("build test PDF");
    out
}

fn bytes_under(dir: &Path) -> u64 {
    crate::support::files_under(dir).iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum()
}

fn chat_of(c: &Call) -> Option<i64> {
    c.params["chat_id"].as_i64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_bytes_never_exceed_the_budget() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.budget.bytes = 64 * 1024 * 1024;
        c.budget.multiplier = 2.0;
        c.workers.download = 4;
        c.workers.process = 2;
    })
    .await;
    let data = app.data_dir();
    let (max_seen, done) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
    let sampler = {
        let (max_seen, done, data) = (Arc::clone(&max_seen), Arc::clone(&done), data.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                let in_flight = bytes_under(&data.join("downloads")) + bytes_under(&data.join("work"));
                max_seen.fetch_max(in_flight, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
        })
    };
    for n in 0..20 {
        app.send_document(
            1_000 + n,
            pdf_of_size(10 * MB as usize, n as u64),
            &format!("big-{n}.pdf"),
            "application/pdf",
        );
    }
    for n in 1..=20 {
        app.wait_for_job(Ticket(n), |j| j.state == JobState::Ready).await;
    }
    done.store(true, Ordering::SeqCst);
    sampler.await.expect("sampler");
    let max = max_seen.load(Ordering::SeqCst);
    assert!(max > 0, "the sampler saw the downloads");
    assert!(max <= 64 * 1024 * 1024, "in-flight bytes reached {max}, over the 64 MiB budget");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_big_job_starts_within_bounded_time_under_a_stream_of_small_ones() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.budget.bytes = 64 * 1024 * 1024; // 67.1 MB: the big job (2 × 28 MB) needs all but 11 MB
        c.budget.multiplier = 2.0;
        c.budget.max_wait = Duration::from_secs(1);
        c.workers.download = 4;
        c.limits.cloud_download = 64 * 1024 * 1024;
    })
    .await;
    app.fake.set_download_limit(64 * 1024 * 1024);
    let small = pdf_of_size(3 * MB as usize, 7);
    let stop = Arc::new(AtomicBool::new(false));
    // A steady stream: a new small file every 400 ms, each download taking about a second, so
    // two or three small jobs (12–18 MB reserved) are always in flight, more than the 11 MB the
    // big one leaves, while the four download workers keep up (the big job reaches the head of
    // the queue instead of drowning in a growing backlog).
    let stream = {
        let (fake, stop, small) = (app.fake.clone(), Arc::clone(&stop), small.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                let file = fake.add_file(small.clone());
                fake.fail_downloads_for(&file.file_id, DownloadFault::Throttle { bytes_per_sec: 3 * MB }, None);
                fake.push_update(fake.document_update(
                    2_000 + n,
                    2_000 + n,
                    &file,
                    Some("small.pdf"),
                    Some("application/pdf"),
                ));
                n += 1;
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
            n
        })
    };
    // Let the stream fill the pipeline, then the big one arrives.
    app.fake.wait_for_calls("getFile", |_| true, 3, DEADLINE).await;
    let big = app.fake.add_file(pdf_of_size(28 * MB as usize, 99));
    let arrived = std::time::Instant::now();
    app.fake.push_update(app.fake.document_update(2_999, 2_999, &big, Some("big.pdf"), Some("application/pdf")));
    let started =
        app.fake.wait_for_call("getFile", |c| c.params["file_id"].as_str() == Some(&big.file_id), DEADLINE).await;
    let waited = started.at.duration_since(arrived);
    stop.store(true, Ordering::SeqCst);
    let sent = stream.await.expect("stream");
    assert!(sent >= 5, "the stream kept coming ({sent} small files)");
    // max_wait (1 s) plus the small jobs in flight finishing (about 1 s each): bounded, not forever.
    assert!(waited < Duration::from_secs(8), "the big job waited {waited:?}");
    app.fake.wait_for_call("sendDocument", |c| chat_of(c) == Some(2_999), DEADLINE).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_chat_cannot_take_the_whole_pipeline() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.workers.download = 2;
        c.workers.per_chat = 1;
    })
    .await;
    let pdf = pdf_of_size(MB as usize, 3);
    for n in 0..6 {
        let file = app.fake.add_file([pdf.clone(), vec![b'\n'; n]].concat());
        app.fake.fail_downloads_for(&file.file_id, DownloadFault::Throttle { bytes_per_sec: 2 * MB }, None);
        app.fake.push_update(app.fake.document_update(3_000, 3_000, &file, Some("flood.pdf"), Some("application/pdf")));
    }
    app.fake.wait_for_calls("sendMessage", |c| chat_of(c) == Some(3_000), 6, DEADLINE).await;
    app.send_document(3_001, pdf.clone(), "other.pdf", "application/pdf");
    let other = app.fake.wait_for_call("sendDocument", |c| chat_of(c) == Some(3_001), DEADLINE).await;
    let flood_before_other =
        app.fake.calls_to("sendDocument").iter().filter(|c| chat_of(c) == Some(3_000) && c.at < other.at).count();
    assert!(flood_before_other < 3, "the other chat waited for {flood_before_other} of the flood's results");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_bigger_than_the_whole_budget_is_refused_at_intake() {
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.budget.bytes = 10 * MB;
        c.budget.multiplier = 2.0;
    })
    .await;
    let file = app.fake.add_file(pdf_of_size(1_000, 1));
    app.fake.push_update(app.fake.document_update_with_size(
        4_000,
        4_000,
        &file,
        Some("wide.pdf"),
        Some("application/pdf"),
        Some(8 * MB),
    ));
    let reply = app.fake.wait_for_call("sendMessage", |c| chat_of(c) == Some(4_000), DEADLINE).await;
    assert_eq!(
        reply.params["text"].as_str(),
        Some("wide.pdf is 8.0 MB, more than this bot can work on at once (up to 5.0 MB). Nothing was queued.")
    );
    assert!(app.store.job(Ticket(1)).await.expect("read").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_jobs_with_files_on_disk_reserve_before_anything_new_starts() {
    use docket::domain::{ChatRef, Operation, Submission};
    use docket::store::Stage;
    let mut app = TestApp::create(Backend::Sqlite, |c| {
        c.budget.bytes = 64 * 1024 * 1024;
        c.budget.multiplier = 2.0;
        c.limits.cloud_download = 64 * 1024 * 1024;
        c.workers.process = 1;
    })
    .await;
    app.fake.set_download_limit(64 * 1024 * 1024);
    // A job downloaded by the previous process: its 30 MB source is on disk, `fetched`.
    let source = pdf_of_size(30 * MB as usize, 5);
    let now = docket::domain::Clock::now(&docket::domain::SystemClock);
    let mut tx = app.store.begin().await.expect("tx");
    let job = Submission {
        update_id: docket::domain::UpdateId(1),
        chat: ChatRef(5_000),
        user_id: Some(docket::domain::UserId(5_000)),
        message_id: docket::domain::MessageId(1),
        file_id: "earlier".into(),
        file_unique_id: "earlier-u".into(),
        declared_name: Some("earlier.pdf".into()),
        declared_mime: None,
        declared_size: Some(source.len() as i64),
        operation: Operation::Optimize,
        chosen_by_default: false,
        language_code: None,
        run_of: None,
    };
    let ticket = tx.insert_job(&job, now).await.expect("insert");
    tx.commit().await.expect("commit");
    let claimed = app.store.claim_job(Stage::Download, "previous-process", now, Duration::from_secs(3)).await;
    let lease = claimed.expect("claim").expect("claimed").lease.expect("leased");
    std::fs::create_dir_all(app.data_dir().join("downloads")).expect("mkdir");
    let path = app.data_dir().join("downloads").join(format!("{}-earlier.source", ticket.0));
    std::fs::write(&path, &source).expect("write source");
    let sha = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&source))
    };
    let path_text = path.to_string_lossy().into_owned();
    assert!(app.store.mark_fetched(ticket, &lease, &path_text, source.len() as i64, &sha, now).await.expect("fetched"));

    // A new 10 MB file (20 MB reserved) arrives as the bot starts: with the earlier job's 60 MB
    // reserved first, it cannot start until that job's files are gone.
    let (_, file) = app.send_document(5_001, pdf_of_size(10 * MB as usize, 6), "new.pdf", "application/pdf");
    app.start().await;
    let started =
        app.fake.wait_for_call("getFile", |c| c.params["file_id"].as_str() == Some(&file.file_id), DEADLINE).await;
    let earlier = app.wait_for_job(ticket, |j| j.state == JobState::Ready).await;
    let ready_at = earlier.updated_at;
    let requested_at = docket::domain::Clock::now(&docket::domain::SystemClock)
        .minus(std::time::Instant::now().duration_since(started.at));
    assert!(
        requested_at.as_millis() + 50 >= ready_at.as_millis(),
        "the new download started {} ms before the earlier job's files were gone",
        ready_at.as_millis() - requested_at.as_millis()
    );
}

/// Every way a job can fail gives its reservation back: with room for three jobs, three failures
/// of each kind in a row leave the budget empty, and a good file still completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_way_a_job_fails_gives_its_reservation_back() {
    use crate::support::fixture;
    use fake_bot_api::Fault;

    const DECLARED: u64 = 8_000;
    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        // Room for three jobs of DECLARED bytes; the largest source is 24 kB.
        c.budget.bytes = 3 * 2 * DECLARED;
        c.budget.multiplier = 2.0;
        c.budget.max_wait = Duration::from_secs(1);
        c.workers.download = 1;
        c.workers.max_attempts = 2;
    })
    .await;
    let noise = |len: usize, seed: u8| (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect();
    // Each kind: the bytes on the fake, the size the document declares when it lies (else its
    // real size), what to script before it is sent, and words of the reason the person reads.
    type Script = Box<dyn Fn(&fake_bot_api::FakeTelegram, &str)>;
    let none: fn() -> Script = || Box::new(|_, _| {});
    type Kind = (&'static str, Vec<u8>, Option<u64>, Script, &'static str);
    let kinds: Vec<Kind> = vec![
        ("not a PDF", noise(7_000, 1), None, none(), "is not a PDF"),
        ("password", fixture("pdf/aes256-userpw.pdf"), None, none(), "protected by a password"),
        ("damaged", fixture("pdf/truncated.pdf"), None, none(), "is damaged"),
        ("too big", noise(30_000, 2), Some(DECLARED), none(), "over the"),
        ("size mismatch", noise(6_000, 3), Some(5_000), none(), "instead of the"),
        (
            "unavailable",
            noise(5_000, 4),
            None,
            Box::new(|fake, _| {
                let gone = "Bad Request: wrong file_id or the file is temporarily unavailable";
                fake.fail_next("getFile", Fault::BadRequest(gone.into()));
            }),
            "no longer has",
        ),
        (
            "gave up",
            noise(5_000, 5),
            None,
            Box::new(|fake, file_id| fake.fail_downloads_for(file_id, DownloadFault::CutAfter(100), None)),
            "after 2 attempts",
        ),
    ];
    let mut chat = 9_000;
    for (kind, bytes, lie, script, reason) in &kinds {
        for n in 0..3u8 {
            chat += 1;
            let file = app.fake.add_file([bytes.clone(), vec![n]].concat());
            script(&app.fake, &file.file_id);
            let declared = lie.unwrap_or(file.size);
            let update = app.fake.document_update_with_size(
                chat,
                chat,
                &file,
                Some("f.pdf"),
                Some("application/pdf"),
                Some(declared),
            );
            app.fake.push_update(update);
            let ticket = Ticket(chat - 9_000);
            let job = app.wait_for_job(ticket, |j| j.state.is_terminal()).await;
            assert_eq!(job.state, JobState::Failed, "{kind}: {job:#?}");
            assert!(job.error.as_deref().unwrap_or_default().contains(reason), "{kind}: {:?}", job.error);
        }
    }
    crate::support::eventually(DEADLINE, async || match app.reserved_bytes() {
        0 => Ok(()),
        n => Err(format!("{n} bytes still reserved after every job failed")),
    })
    .await;
    let (_, _) = app.send_document(9_999, fixture("pdf/text-1page.pdf"), "good.pdf", "application/pdf");
    let good = app.wait_for_job(Ticket(chat - 9_000 + 1), |j| j.state.is_terminal()).await;
    assert_eq!(good.state, JobState::Ready, "{good:#?}");
}

/// A file Telegram did not size reserves the download limit only until getFile says its size:
/// another file then fits beside it while it is still downloading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_without_a_declared_size_gives_back_the_excess_once_its_size_is_known() {
    use crate::support::fixture;

    let app = TestApp::spawn_with(Backend::Sqlite, |c| {
        // The largest source is 1 MB: an unsized file reserves the whole budget at first.
        c.budget.bytes = 2 * MB;
        c.budget.multiplier = 2.0;
        c.workers.download = 2;
    })
    .await;
    let unsized_file = app.fake.add_file(pdf_of_size(60_000, 11));
    // About ten seconds of download.
    app.fake.fail_downloads_for(&unsized_file.file_id, DownloadFault::Throttle { bytes_per_sec: 6_000 }, None);
    app.fake.push_update(app.fake.document_update_with_size(
        9_100,
        9_100,
        &unsized_file,
        Some("unsized.pdf"),
        Some("application/pdf"),
        None,
    ));
    app.fake.wait_for_call("getFile", |c| c.params["file_id"].as_str() == Some(&unsized_file.file_id), DEADLINE).await;
    app.send_document(9_101, fixture("pdf/text-1page.pdf"), "beside.pdf", "application/pdf");
    let beside = app.wait_for_job(Ticket(2), |j| j.state.is_terminal()).await;
    assert_eq!(beside.state, JobState::Ready, "{beside:#?}");
    // The second file gives its bytes back just after its job is ready, not in the same step.
    crate::support::eventually(DEADLINE, async || match app.reserved_bytes() {
        held if held == 2 * unsized_file.size => Ok(()),
        held => Err(format!("{held} bytes reserved; the unsized file's real size × 2 is {}", 2 * unsized_file.size)),
    })
    .await;
    let unsized_job = app.store.job(Ticket(1)).await.expect("read").expect("the unsized job");
    assert_eq!(
        (unsized_job.state, unsized_job.lease.is_some()),
        (JobState::Accepted, true),
        "the second file completed while the unsized one was still downloading"
    );
}

/// The budget was lowered after a big file was accepted: the file fails with a reason instead of
/// holding every other download back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_that_can_never_fit_the_budget_fails_with_a_reason() {
    use crate::support::fixture;

    let mut app = TestApp::create(Backend::Sqlite, |c| {
        c.budget.bytes = 8_000;
        c.budget.multiplier = 2.0;
        c.budget.max_wait = Duration::from_secs(1);
    })
    .await;
    // Accepted when the budget was larger: 19 kB needs 38 kB of the 8 kB there are now.
    let big = app.fake.add_file(fixture("pdf/text-20pages.pdf"));
    let ticket = app.insert_job(9_200, &big, "big.pdf", Some(big.size)).await;
    app.start().await;
    let failed = app.wait_for_job(ticket, |j| j.state.is_terminal()).await;
    assert_eq!(failed.state, JobState::Failed);
    assert_eq!(
        failed.error.as_deref(),
        Some("big.pdf is 18.8 kB, over the 4.0 kB this bot can download"),
        "{failed:#?}"
    );
    assert!(app.fake.calls_to("getFile").is_empty(), "it was never downloaded");
    app.send_document(9_201, fixture("pdf/text-1page.pdf"), "small.pdf", "application/pdf");
    let small = app.wait_for_job(Ticket(ticket.0 + 1), |j| j.state.is_terminal()).await;
    assert_eq!(small.state, JobState::Ready, "{small:#?}");
}
