//! Crashes of the real `docket run` binary: the process is SIGKILLed mid-download, mid-processing
//! and at random moments, started again on the same database and data folder, and every job must
//! still end once — one result or one reason — with nothing left on disk but the results, each
//! with its preview.
//!
//! The bot runs as a child process (`CARGO_BIN_EXE_docket`), talking over loopback to the fake
//! Bot API served by the test's own runtime; the test reads the same SQLite file through its own
//! [`Store`]. `Child::kill` is SIGKILL on Unix: no destructor, no shutdown, no release of leases.
//! Each process's stderr (docket at debug level) is appended to one log file, printed when a
//! test fails. The janitor runs every second, so files a crash orphaned go within a second of
//! their job ending.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use docket::domain::{Clock as _, JobState, MessageKind, Operation, OutboxState, SystemClock, Ticket};
use docket::domain::{Job, OutboxMessage};
use docket::spool::preview_path_for;
use docket::store::DatabaseUrl;
use docket::store::{JobFilter, MessageFilter, Store};
use fake_bot_api::{Call, DownloadFault, FakeTelegram, Fault, FileRef};
use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use sha2::{Digest as _, Sha256};

use crate::albums::{jpeg, pages_of};
use crate::support::calls::{text_of, to_chat};
use crate::support::child::{self, DocketProcess};
use crate::support::generated::generated_pdf;
use crate::support::upload;
use crate::support::{DEADLINE, files_under, fixture, poll_until};

/// `[workers] lease` of every process: the shortest allowed, so a killed process's claims lapse
/// quickly.
const LEASE: Duration = Duration::from_secs(3);

/// The real bot as a child process, on a database and data folder that outlive each process.
struct Docket {
    fake: FakeTelegram,
    /// The test's own handle on the bot's SQLite file.
    store: Store,
    data: PathBuf,
    /// `docket run`, started and killed as the test goes; its stderr (docket at debug level) is
    /// printed when the test fails.
    process: DocketProcess,
}

impl Docket {
    /// A fake Bot API, a temp folder with the configuration, the database (migrated) and the data
    /// folder; no process yet. `workers` is extra TOML for the `[workers]` table.
    async fn new(workers: &str) -> Self {
        Self::with_config(&format!("shutdown_grace = \"5s\"\n{workers}"), "").await
    }

    /// Like [`Docket::new`], with the whole `[workers]` table's extra TOML (shutdown grace
    /// included) and further tables after it.
    async fn with_config(workers: &str, tables: &str) -> Self {
        let fake = FakeTelegram::start().await;
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("db").join("docket.db");
        let data = dir.path().join("data");
        let toml = format!(
            "{storage}[workers]\nlease = \"{lease}s\"\n{workers}\n[retention]\njanitor_interval = \"1s\"\n{tables}\n",
            storage = child::run_config(dir.path(), &format!("sqlite://{}", db.display())),
            lease = LEASE.as_secs(),
        );
        let store = Store::open(&DatabaseUrl::Sqlite(db)).await.expect("the test's store opens");
        // docket's own debug lines; sqlx's per-statement lines would drown them.
        let process = DocketProcess::new(dir, &toml, &fake).env("RUST_LOG", "debug,sqlx=warn,hyper_util=info");
        Self { fake, store, data, process }
    }

    /// Starts `docket run`; its stderr goes to the shared log file.
    fn start(&self) {
        self.process.start();
    }

    /// SIGKILLs the running process and reaps it.
    fn kill(&self) {
        self.process.kill();
    }

    /// The running process's id.
    fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Polls `probe` until it gives a value; panics after `timeout`, or at once if the process
    /// exited on its own.
    async fn until<T>(&self, what: &str, timeout: Duration, probe: impl AsyncFn(&Self) -> Option<T>) -> T {
        self.process.until(what, timeout, async || probe(self).await).await
    }

    async fn job(&self, ticket: Ticket) -> Option<Job> {
        self.store.job(ticket).await.expect("read a job")
    }

    async fn jobs(&self) -> Vec<Job> {
        let mut jobs =
            self.store.jobs(&JobFilter { limit: 10_000, ..Default::default() }).await.expect("list the jobs");
        jobs.sort_by_key(|j| j.ticket);
        jobs
    }

    async fn messages(&self, ticket: Ticket) -> Vec<OutboxMessage> {
        self.store.messages(&MessageFilter::job(ticket)).await.expect("read the outbox")
    }

    /// Whether the job's message of `kind` is `sent`.
    async fn sent(&self, ticket: Ticket, kind: MessageKind) -> bool {
        self.messages(ticket).await.iter().any(|m| m.kind == kind && m.state == OutboxState::Sent)
    }

    /// The download requests the fake answered for `file_id`.
    fn downloads_of(&self, file_id: &str) -> Vec<fake_bot_api::Download> {
        self.fake.download_log().into_iter().filter(|d| d.file_id.as_deref() == Some(file_id)).collect()
    }

    /// Puts `bytes` on the fake and sends them from `chat` as the PDF `name` (docket picks the
    /// update up once a process runs).
    fn submit(&self, chat: i64, bytes: Vec<u8>, name: &str) -> FileRef {
        let file = self.fake.add_file(bytes);
        self.fake.push_update(self.fake.document_update(chat, chat, &file, Some(name), Some("application/pdf")));
        file
    }

    /// One download worker and one processing worker, a [`heavy_pdf`] sent from `chat` as
    /// `name`, and `docket run` started on it; returns the docket, the PDF and its file on the
    /// fake.
    async fn started_on_a_heavy_pdf(chat: i64, name: &str) -> (Self, Vec<u8>, FileRef) {
        let d = Self::new("download = 1\nprocess = 1").await;
        let pdf = heavy_pdf();
        let file = d.submit(chat, pdf.clone(), name);
        d.start();
        (d, pdf, file)
    }

    /// `Some` once job `ticket` is `processing` under a lease and its ticket reply is sent: the
    /// moment a kill cuts the work, not the reply.
    async fn processing_with_its_reply_out(&self, ticket: Ticket) -> Option<()> {
        let job = self.job(ticket).await?;
        (job.state == JobState::Processing && job.lease.is_some()).then_some(())?;
        self.sent(ticket, MessageKind::TicketReply).await.then_some(())
    }

    /// Waits (up to `timeout`) for job `ticket` to be ready, then for its result to be sent;
    /// returns the ready job.
    async fn ready_and_sent(&self, ticket: Ticket, timeout: Duration) -> Job {
        let job = self
            .until("the job to be ready", timeout, async |d| d.job(ticket).await.filter(|j| j.state == JobState::Ready))
            .await;
        self.until("the result to be sent", DEADLINE, async |d| {
            d.sent(ticket, MessageKind::Result).await.then_some(())
        })
        .await;
        job
    }

    /// The one result document `chat` got, checking there was exactly one and that its caption
    /// starts with `caption`.
    fn the_one_result(&self, chat: i64, caption: &str) -> fake_bot_api::Upload {
        let documents = self.fake.calls_to("sendDocument").into_iter().filter(to_chat(chat)).collect::<Vec<_>>();
        assert_eq!(documents.len(), 1, "exactly one result: {documents:#?}");
        let got = documents[0].params["caption"].as_str().unwrap_or_default();
        assert!(got.starts_with(caption), "{got}");
        documents[0].upload.clone().expect("the result is uploaded")
    }

    /// Once the janitor has had its passes, the data folder holds nothing but `job`'s recorded
    /// result (no .part, no source, no work files, no orphan of a killed attempt).
    async fn assert_only_the_result_remains(&self, job: &Job) {
        let files = self.files_when(|f| only_result_of(f, job.ticket)).await;
        assert!(only_result_of(&files, job.ticket), "only results/{}/… may remain, found {files:?}", job.ticket.0);
        let files = without_previews(&files);
        assert_eq!(
            Some(self.data.join(&files[0]).to_string_lossy().into_owned()),
            job.result_path().map(str::to_owned)
        );
    }

    /// A file in the data folder's `<folder>/<ticket>/` (`work`, `results`), relative to it.
    fn file_under(&self, folder: &str, ticket: Ticket) -> Option<PathBuf> {
        self.files().into_iter().find(|p| p.starts_with(Path::new(folder).join(ticket.0.to_string())))
    }

    /// Every file in the data folder, relative to it.
    fn files(&self) -> Vec<PathBuf> {
        files_under(&self.data)
            .into_iter()
            .map(|p| p.strip_prefix(&self.data).map(Path::to_path_buf).unwrap_or(p))
            .collect()
    }

    /// The files once `settled` holds for them, or after a few janitor passes whatever they are
    /// then: a file the commit stopped pointing at goes right after it, and one a crash orphaned
    /// goes at the next janitor pass (every second here).
    async fn files_when(&self, settled: impl Fn(&[PathBuf]) -> bool) -> Vec<PathBuf> {
        let files = poll_until(Duration::from_secs(5), async || {
            let files = self.files();
            if settled(&files) { Ok(files) } else { Err(files) }
        })
        .await;
        files.unwrap_or_else(|unsettled| unsettled)
    }
}

/// About 15 MB of uncompressed text (under the 20 MiB download limit): optimizing it takes most
/// of a second even with optimized dependencies, long enough to be caught in the act.
fn heavy_pdf() -> Vec<u8> {
    generated_pdf(1000, 15_000, 2)
}

fn page_count(pdf: &[u8]) -> usize {
    lopdf::Document::load_mem(pdf).expect("a valid PDF").get_pages().len()
}

fn is_part(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "part")
}

/// The only files a finished job may leave: its result, under `results/<ticket>/`, with the
/// preview drawn for it.
fn only_result_of(files: &[PathBuf], ticket: Ticket) -> bool {
    let results = without_previews(files);
    results.len() == 1 && results[0].starts_with(Path::new("results").join(ticket.0.to_string()))
}

/// `files` without the preview of a result among them (`spool::preview_path_for`): what is
/// left must each be a result.
fn without_previews(files: &[PathBuf]) -> Vec<PathBuf> {
    files.iter().filter(|f| !files.iter().any(|result| preview_path_for(result) == **f)).cloned().collect()
}

/// Kill while the file is still streaming in; the next process waits out the lease, asks
/// getFile afresh, downloads again, and the person gets one result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_download_then_restart_completes_once() {
    const CHAT: i64 = 7001;
    let d = Docket::new("download = 1\nprocess = 1").await;
    let pdf = generated_pdf(100, 15_000, 1);
    assert!(pdf.len() > 1_000_000, "{} bytes", pdf.len());
    let file = d.fake.add_file(pdf.clone());
    // Only the first download crawls (it would take over 7 s), so the kill finds it mid-stream;
    // the one after the restart runs at full speed.
    d.fake.fail_downloads_for(&file.file_id, DownloadFault::Throttle { bytes_per_sec: 200_000 }, Some(1));
    d.fake.push_update(d.fake.document_update(CHAT, CHAT, &file, Some("big.pdf"), Some("application/pdf")));
    d.start();
    let first_pid = d.pid();

    // The ticket reply is out (a kill mid-send would hold the chat's messages back for a minute,
    // see `sigkill_mid_send_…`), the job is leased, the fake is serving the file and the .part
    // file is growing.
    d.until("the ticket reply", DEADLINE, async |d| d.sent(Ticket(1), MessageKind::TicketReply).await.then_some(()))
        .await;
    let part = d
        .until("the download to be mid-stream", DEADLINE, async |d| {
            let job = d.job(Ticket(1)).await?;
            (job.state == JobState::Accepted && job.lease.is_some() && d.downloads_of(&file.file_id).len() == 1)
                .then_some(())?;
            d.files().into_iter().find(|p| is_part(p) && std::fs::metadata(d.data.join(p)).is_ok_and(|m| m.len() > 0))
        })
        .await;
    let get_files_before = d.fake.calls_to("getFile").len();
    d.kill();
    let (killed_at, killed_at_wall) = (Instant::now(), SystemClock.now());

    let at_kill = d.job(Ticket(1)).await.expect("the job");
    assert_eq!(at_kill.state, JobState::Accepted, "killed mid-download: {at_kill:#?}");
    let lease = at_kill.lease.clone().expect("the killed process still holds the lease");
    assert!(lease.owner.contains(&format!(":{first_pid}:")), "held by the killed process: {lease:?}");
    assert_eq!(get_files_before, 1);
    let part_len = std::fs::metadata(d.data.join(&part)).map(|m| m.len()).unwrap_or(0);
    assert!(part_len < pdf.len() as u64, "the kill came mid-stream ({part_len} of {} bytes)", pdf.len());

    d.start();
    let job = d.ready_and_sent(Ticket(1), Duration::from_secs(30)).await;

    // One result, complete and intact.
    let upload = d.the_one_result(CHAT, "#1 ready: big.pdf, ");
    assert_eq!(page_count(&upload.bytes), 100);
    assert_eq!(job.source.as_ref().map(|s| s.size), Some(pdf.len() as i64));
    assert_eq!(job.source.as_ref().map(|s| s.sha256.as_str()), Some(hex::encode(Sha256::digest(&pdf)).as_str()));
    assert_eq!(d.fake.calls_to("sendMessage").into_iter().filter(to_chat(CHAT)).count(), 1, "one ticket reply");

    // The new process waited for the lease, then asked getFile again before downloading again.
    let get_files = d.fake.calls_to("getFile");
    let downloads = d.downloads_of(&file.file_id);
    assert_eq!(get_files.len(), 2, "one getFile per attempt: {get_files:#?}");
    assert_eq!(downloads.len(), 2, "one download per attempt: {downloads:#?}");
    let lease_lapsed_at = killed_at + killed_at_wall.until(lease.until);
    assert!(get_files[1].at > killed_at, "the second getFile came from the new process");
    assert!(
        get_files[1].at + Duration::from_millis(50) >= lease_lapsed_at,
        "the new process claimed the job {:?} before the killed process's lease lapsed",
        lease_lapsed_at - get_files[1].at
    );
    assert!(get_files[1].at < downloads[1].at, "getFile afresh, then the download");

    // Nothing left but the result: no .part of the killed attempt, no source, no work files.
    d.assert_only_the_result_remains(&job).await;
    d.process.assert_no_secrets_logged();
}

/// Kill while the PDF is being optimized; the next process takes the job over once the lease
/// lapses, checks the source it already has, does the work again and sends one result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_processing_then_restart_completes_once() {
    const CHAT: i64 = 7002;
    let (d, pdf, file) = Docket::started_on_a_heavy_pdf(CHAT, "heavy.pdf").await;
    let first_pid = d.pid();

    // Processing has begun: the job is `processing` under a lease and its output file exists in
    // work/1/ (the operation fills it only when done). The ticket reply is out.
    let work_file = d
        .until("processing to be in progress", DEADLINE, async |d| {
            d.processing_with_its_reply_out(Ticket(1)).await?;
            d.file_under("work", Ticket(1))
        })
        .await;
    d.kill();
    let at_kill = d.job(Ticket(1)).await.expect("the job");
    assert_eq!(at_kill.state, JobState::Processing, "killed mid-processing: {at_kill:#?}");
    let lease = at_kill.lease.clone().expect("the killed process still holds the lease");
    assert!(lease.owner.contains(&format!(":{first_pid}:")), "held by the killed process: {lease:?}");
    assert!(d.data.join(&work_file).exists(), "the killed attempt's output is still there: {work_file:?}");

    d.start();
    let job = d.ready_and_sent(Ticket(1), Duration::from_secs(40)).await;

    let upload = d.the_one_result(CHAT, "#1 ready: heavy.pdf, ");
    assert!(upload.bytes.len() < pdf.len(), "the result is the optimized file");
    assert_eq!(page_count(&upload.bytes), page_count(&pdf));
    assert_eq!(job.result.as_ref().map(|r| r.size), Some(upload.bytes.len() as i64));
    // The verified source survived the crash: no second download.
    assert_eq!(d.fake.calls_to("getFile").len(), 1, "the source was not downloaded again");
    assert_eq!(d.downloads_of(&file.file_id).len(), 1);

    d.assert_only_the_result_remains(&job).await;
    d.process.assert_no_secrets_logged();
}

/// Kill in the narrow window between the processing stage moving its output into
/// `results/<ticket>/` and the commit that records it (held open here by taking SQLite's write
/// lock): the output of the dead attempt belongs to no row; the retry writes another, and the
/// janitor deletes the orphan at its next pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_between_writing_the_result_and_recording_it_leaves_one_result() {
    use sqlx::Connection as _;

    const CHAT: i64 = 7003;
    let (d, _, _) = Docket::started_on_a_heavy_pdf(CHAT, "window.pdf").await;
    d.until("processing to be in progress, the ticket reply out", DEADLINE, async |d| {
        d.processing_with_its_reply_out(Ticket(1)).await
    })
    .await;

    // Hold the write lock: the result is moved into results/1/, and its commit waits.
    let db = d.process.dir().join("db").join("docket.db");
    let mut blocker = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.expect("connect");
    sqlx::query("BEGIN EXCLUSIVE").execute(&mut blocker).await.expect("take the write lock");
    let orphan = d
        .until("the result to be written, not yet recorded", DEADLINE, async |d| d.file_under("results", Ticket(1)))
        .await;
    d.kill();
    sqlx::query("ROLLBACK").execute(&mut blocker).await.expect("release the write lock");
    drop(blocker);
    let at_kill = d.job(Ticket(1)).await.expect("the job");
    assert_eq!(at_kill.state, JobState::Processing, "the result was never recorded: {at_kill:#?}");
    assert!(d.data.join(&orphan).exists());

    d.start();
    let job = d.ready_and_sent(Ticket(1), Duration::from_secs(30)).await;
    assert_eq!(d.fake.calls_to("sendDocument").into_iter().filter(to_chat(CHAT)).count(), 1, "exactly one result");
    d.assert_only_the_result_remains(&job).await;
}

/// Kill while a result is being sent: the row stays `sending` under the dead process's claim,
/// and every later message to that chat waits behind it (messages go out in order per chat).
/// The chat must hear from the bot again once that claim lapses, as a job's would: the next
/// document's ticket reply and the interrupted result must arrive well within a minute.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_send_stalls_the_chat_no_longer_than_a_lease() {
    const CHAT: i64 = 7004;
    let d = Docket::new("download = 1\nprocess = 1").await;
    // The first result send hangs at the fake, so the kill finds it in flight. (Kept short: when
    // the kill cuts the upload before the fake has read it, the fault stays queued and delays
    // the resend instead.)
    d.fake.fail_next_for_chat("sendDocument", CHAT, Fault::Delay(Duration::from_secs(6)));
    d.submit(CHAT, fixture("pdf/text-20pages.pdf"), "first.pdf");
    d.start();
    d.until("the result to be in flight", DEADLINE, async |d| {
        d.messages(Ticket(1))
            .await
            .into_iter()
            .find(|m| m.kind == MessageKind::Result && m.state == OutboxState::Sending)
    })
    .await;
    d.kill();
    d.submit(CHAT, fixture("pdf/text-1page.pdf"), "second.pdf");
    d.start();

    let ticket_reply =
        |c: &Call| to_chat(CHAT)(c) && c.params["text"].as_str().is_some_and(|t| t.contains("ticket #2"));
    d.fake.wait_for_call("sendMessage", ticket_reply, DEADLINE).await;
    d.fake.wait_for_call("sendDocument", |c| to_chat(CHAT)(c) && c.status == 200, DEADLINE).await;
}

/// The folders under `data` that are an album's download in progress (`….part/`) or its
/// downloaded source (`….source/`), relative to it. `files_under` sees only files, and an empty
/// folder left behind would hide from it.
fn album_folders(data: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![data.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for path in entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()) {
            if path.extension().is_some_and(|e| e == "part" || e == "source") {
                found.push(path.strip_prefix(data).map(Path::to_path_buf).unwrap_or_else(|_| path.clone()));
            }
            stack.push(path);
        }
    }
    found
}

impl Docket {
    /// Waits (a few janitor passes at most) for no album folder to be left in the data folder.
    async fn assert_no_album_folder_remains(&self) {
        let left = poll_until(Duration::from_secs(5), async || {
            let folders = album_folders(&self.data);
            if folders.is_empty() { Ok(()) } else { Err(folders) }
        })
        .await;
        assert!(left.is_ok(), "album folders left: {left:?}");
    }

    /// The sendMessage calls to `chat` the fake answered.
    fn messages_to(&self, chat: i64) -> Vec<Call> {
        self.fake.calls_to("sendMessage").into_iter().filter(|c| to_chat(chat)(c) && c.status == 200).collect()
    }
}

/// Kill while an album is still arriving: two of its three photos are recorded, the quiet
/// window is still open, and the third comes while no process runs. The next process takes it
/// into the same ticket: one ticket, one reply listing the three files, one PDF of three pages
/// in album order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_while_an_album_is_still_arriving_then_restart_gives_one_ticket_and_one_result() {
    const CHAT: i64 = 7201;
    // Wide enough that the window cannot close between the kill and the restart's first poll;
    // were it to close, the restart's download claim would seal the album before the third part
    // is read, and the test would fail (two tickets), never pass wrongly.
    let d = Docket::with_config(
        "shutdown_grace = \"5s\"\ndownload = 1\nprocess = 1",
        "[limits]\nalbum_quiet_window = \"8s\"",
    )
    .await;
    let widths = [300, 200, 400];
    let photo = |width: u32| upload::photo(jpeg(width, 150), width, 150).in_album("crash-album");
    photo(widths[0]).send_to(&d.fake, CHAT);
    photo(widths[1]).send_to(&d.fake, CHAT);
    d.start();
    d.until("the album's first two parts to be recorded", DEADLINE, async |d| {
        let parts = d.store.source_parts(Ticket(1)).await.expect("read the sources");
        (parts.len() == 2).then_some(())
    })
    .await;
    d.kill();
    let at_kill = d.job(Ticket(1)).await.expect("the album's ticket");
    assert_eq!(at_kill.state, JobState::Accepted, "killed before the album was downloaded: {at_kill:#?}");

    photo(widths[2]).send_to(&d.fake, CHAT);
    d.start();
    let job = d.ready_and_sent(Ticket(1), Duration::from_secs(60)).await;

    let jobs = d.jobs().await;
    assert_eq!(jobs.len(), 1, "the part sent while the bot was down joined the album's ticket: {jobs:#?}");
    assert_eq!(job.submission.operation, Operation::Merge);
    assert_eq!(d.store.source_parts(Ticket(1)).await.expect("read the sources").len(), 3);
    let replies = d.messages_to(CHAT);
    assert_eq!(replies.len(), 1, "one ticket reply: {replies:#?}");
    assert!(text_of(&replies[0]).contains("Got 3 files"), "{replies:#?}");
    let upload = d.the_one_result(CHAT, "#1 ready:");
    assert_eq!(page_count(&upload.bytes), 3);
    let result = job.result_path().expect("a result");
    let expected: Vec<Option<i64>> = widths.iter().map(|w| Some(i64::from(*w))).collect();
    assert_eq!(pages_of(Path::new(result)), expected, "a page per photo, in album order");

    d.assert_only_the_result_remains(&job).await;
    d.assert_no_album_folder_remains().await;
    d.process.assert_no_secrets_logged();
}

/// Kill while an album of three large PDFs is being merged; the next process takes the job over
/// once the lease lapses, checks the source folder it already has, merges again and sends one
/// result with every page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_while_a_merge_runs_then_restart_completes_once() {
    const CHAT: i64 = 7202;
    let d = Docket::with_config(
        "shutdown_grace = \"5s\"\ndownload = 1\nprocess = 1",
        "[limits]\nalbum_quiet_window = \"1s\"",
    )
    .await;
    // About 7.5, 6 and 4.5 MB: each under the download limit, the merge of all of them under the
    // upload limit, and long enough at work to be caught in the act.
    let pdfs = [generated_pdf(500, 15_000, 21), generated_pdf(400, 15_000, 22), generated_pdf(300, 15_000, 23)];
    for (n, pdf) in pdfs.iter().enumerate() {
        let name = format!("part-{}.pdf", n + 1);
        let part = upload::document(pdf.clone(), &name, "application/pdf").in_album("crash-merge");
        // An album of PDFs merges when its caption (on its first message) says so.
        let part = if n == 0 { part.caption("merge") } else { part };
        part.send_to(&d.fake, CHAT);
    }
    d.start();
    let first_pid = d.pid();
    d.until("the merge to be running, the ticket reply out", DEADLINE, async |d| {
        d.processing_with_its_reply_out(Ticket(1)).await
    })
    .await;
    d.kill();
    let at_kill = d.job(Ticket(1)).await.expect("the job");
    assert_eq!(at_kill.state, JobState::Processing, "killed mid-merge: {at_kill:#?}");
    let lease = at_kill.lease.clone().expect("the killed process still holds the lease");
    assert!(lease.owner.contains(&format!(":{first_pid}:")), "held by the killed process: {lease:?}");

    d.start();
    let job = d.ready_and_sent(Ticket(1), Duration::from_secs(60)).await;

    let jobs = d.jobs().await;
    assert_eq!(jobs.len(), 1, "one job: {jobs:#?}");
    assert_eq!(job.submission.operation, Operation::Merge);
    let upload = d.the_one_result(CHAT, "#1 ready:");
    assert_eq!(page_count(&upload.bytes), pdfs.iter().map(|p| page_count(p)).sum::<usize>());
    assert_eq!(job.result.as_ref().map(|r| r.size), Some(upload.bytes.len() as i64));
    assert_eq!(d.messages_to(CHAT).len(), 1, "one ticket reply");
    // The album's downloaded folder survived the crash: no part was downloaded again.
    assert_eq!(d.fake.calls_to("getFile").len(), pdfs.len(), "the sources were not downloaded again");

    d.assert_only_the_result_remains(&job).await;
    d.assert_no_album_folder_remains().await;
    d.process.assert_no_secrets_logged();
}

/// How many of `jobs` are in each state.
fn by_state<'a>(jobs: impl Iterator<Item = &'a Job>) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    for job in jobs {
        *counts.entry(job.state.as_str()).or_default() += 1;
    }
    counts
}

/// What a chaos document is, and how its job must end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A valid PDF: `ready`.
    Pdf,
    /// A ZIP archive named `.pdf`: `failed`, not a PDF.
    ZipNamedPdf,
    /// The first 7000 bytes of a PDF: `failed` as damaged (or `ready` if lopdf can read it).
    Truncated,
    /// A PDF that needs a password: `failed`.
    Encrypted,
    /// The download disagrees with the announced size: `failed`.
    LyingSize,
}

/// Ticket numbers in texts: the `N` of `#N ready:` / `#N failed:` at the start, or of
/// `ticket #N, queued…` in a ticket reply.
fn ticket_in(text: &str, kind: MessageKind) -> Option<i64> {
    let digits = |s: &str| -> Option<(i64, usize)> {
        let n: String = s.chars().take_while(char::is_ascii_digit).collect();
        Some((n.parse().ok()?, n.len()))
    };
    match kind {
        MessageKind::Result | MessageKind::Failure => {
            let rest = text.strip_prefix('#')?;
            let (n, len) = digits(rest)?;
            let suffix = if kind == MessageKind::Result { " ready:" } else { " failed:" };
            rest[len..].starts_with(suffix).then_some(n)
        }
        MessageKind::TicketReply => {
            let (_, after) = text.rsplit_once("ticket #")?;
            let (n, len) = digits(after)?;
            after[len..].starts_with(", queued").then_some(n)
        }
        MessageKind::Reply | MessageKind::Progress => None,
    }
}

/// Fifty documents of every kind from ten chats; the bot is SIGKILLed ten times at random
/// moments and restarted each time. Every job must still end `ready` or `failed` (with a reason),
/// no message may reach a person twice unless its send's outcome was lost in a crash, and the
/// data folder must hold exactly one result per ready job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_random_kills_every_job_ends_ready_or_failed() {
    const DOCUMENTS: usize = 50;
    const KILLS: usize = 10;
    // A fixed seed; DOCKET_CHAOS_SEED explores others (the moments also depend on timing).
    let seed = std::env::var("DOCKET_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0xD0C_4E7_u64);
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    let d = Docket::new("download = 4\nprocess = 2").await;

    let small = generated_pdf(20, 2_000, 11);
    let medium = generated_pdf(60, 8_000, 12);
    let large = generated_pdf(120, 10_000, 13);
    let kinds_cycle = [
        (Kind::Pdf, large.clone()),
        (Kind::Pdf, fixture("pdf/text-20pages.pdf")),
        (Kind::Pdf, medium.clone()),
        (Kind::ZipNamedPdf, fixture("other/stored-pdf.zip")),
        (Kind::Pdf, small.clone()),
        (Kind::Pdf, fixture("pdf/scan-2pages.pdf")),
        (Kind::Truncated, fixture("pdf/truncated.pdf")),
        (Kind::Pdf, large),
        (Kind::Pdf, fixture("pdf/text-1page.pdf")),
        (Kind::Encrypted, fixture("pdf/aes256-userpw.pdf")),
        (Kind::Pdf, medium),
        (Kind::Pdf, small),
    ];
    // Every download crawls a little, so kills find some mid-stream; the liar's own fault wins.
    d.fake.fail_downloads(DownloadFault::Throttle { bytes_per_sec: 1_500_000 }, None);
    let mut updates = Vec::with_capacity(DOCUMENTS);
    let mut kinds = HashMap::new();
    for i in 0..DOCUMENTS {
        let chat = 8001 + (i % 10) as i64;
        let (kind, bytes) = if i == 17 {
            (Kind::LyingSize, fixture("pdf/text-20pages.pdf"))
        } else {
            kinds_cycle[i % kinds_cycle.len()].clone()
        };
        let file = d.fake.add_file(bytes.clone());
        if kind == Kind::LyingSize {
            d.fake.fail_downloads_for(
                &file.file_id,
                DownloadFault::ServeBytes(bytes[..bytes.len() / 2].to_vec()),
                None,
            );
        }
        kinds.insert(file.file_unique_id.clone(), kind);
        let name = format!("doc-{i:02}.pdf");
        updates.push(d.fake.document_update(chat, chat, &file, Some(&name), Some("application/pdf")));
    }

    // The documents arrive in five waves during the first five runs; each run lives a random
    // while after it first polls, then dies.
    let mut updates = updates.into_iter();
    let mut schedule = Vec::new();
    let mut caught_working = 0;
    for kill in 0..KILLS {
        if kill < 5 {
            for update in updates.by_ref().take(DOCUMENTS / 5) {
                d.fake.push_update(update);
            }
        }
        let polls = d.fake.calls_to("getUpdates").len();
        d.start();
        d.until("the new process to poll", DEADLINE, async |d| {
            (d.fake.calls_to("getUpdates").len() > polls).then_some(())
        })
        .await;
        // Long enough, on average, for the leases of killed processes to lapse within a few runs,
        // so later runs have work to be killed in.
        let life = Duration::from_millis(rng.random_range(200..1200));
        tokio::time::sleep(life).await;
        let owner = format!(":{}:", d.pid());
        d.kill();
        let held =
            by_state(d.jobs().await.iter().filter(|j| j.lease.as_ref().is_some_and(|l| l.owner.contains(&owner))));
        caught_working += usize::from(!held.is_empty());
        schedule.push(format!("run {} lived {life:?} after its first poll, killed holding {held:?}", kill + 1));
    }
    eprintln!("chaos (DOCKET_CHAOS_SEED={seed}):\n  {}", schedule.join("\n  "));
    assert!(caught_working >= 3, "too few kills found the bot holding a job: {schedule:#?}");

    // The last process runs until every job has ended.
    d.start();
    let jobs = d
        .until("every job to end ready or failed", Duration::from_secs(90), async |d| {
            let jobs = d.jobs().await;
            (jobs.len() == DOCUMENTS && jobs.iter().all(|j| matches!(j.state, JobState::Ready | JobState::Failed)))
                .then_some(jobs)
        })
        .await;
    let chaos_took = started.elapsed();

    // Each job ended as its content says, failures with a reason.
    for job in &jobs {
        let kind = kinds[&job.submission.file_unique_id];
        assert!(job.lease.is_none(), "an ended job holds no lease: {job:#?}");
        match job.state {
            JobState::Failed => {
                let error = job.error.as_deref().unwrap_or_default();
                assert!(!error.trim().is_empty(), "a failed job says why: {job:#?}");
                let expected = match kind {
                    Kind::Pdf => "could not be processed after",
                    Kind::ZipNamedPdf => "is not a PDF",
                    Kind::Truncated => "damaged",
                    Kind::Encrypted => "password",
                    Kind::LyingSize => "instead of",
                };
                assert!(error.contains(expected), "{kind:?} failed with {error:?}");
            }
            JobState::Ready => {
                assert!(
                    matches!(kind, Kind::Pdf | Kind::Truncated),
                    "a {kind:?} document must not become ready: {job:#?}"
                );
                assert!(job.result_path().is_some() && job.result.is_some(), "{job:#?}");
            }
            other => unreachable!("{other:?}"),
        }
    }
    let valid = jobs.iter().filter(|j| kinds[&j.submission.file_unique_id] == Kind::Pdf).collect::<Vec<_>>();
    let gave_up = valid.iter().filter(|j| j.state == JobState::Failed).map(|j| j.ticket).collect::<Vec<_>>();
    assert!(gave_up.is_empty(), "valid PDFs gave up after repeated crashes: {gave_up:?}");

    // No message reached a person twice, unless its row went through a send whose outcome a
    // crash lost (a row claimed more than once). Every delivery names a job of that chat in the
    // state it reports.
    let by_ticket: HashMap<i64, &Job> = jobs.iter().map(|j| (j.ticket.0, j)).collect();
    let mut delivered: HashMap<(i64, MessageKind), usize> = HashMap::new();
    for call in d.fake.calls().into_iter().filter(|c| c.status == 200) {
        let (text, kinds_here): (&str, &[MessageKind]) = match call.method.as_str() {
            "sendDocument" => (call.params["caption"].as_str().unwrap_or_default(), &[MessageKind::Result]),
            "sendMessage" => {
                (call.params["text"].as_str().unwrap_or_default(), &[MessageKind::TicketReply, MessageKind::Failure])
            }
            _ => continue,
        };
        let Some((ticket, kind)) = kinds_here.iter().find_map(|k| ticket_in(text, *k).map(|t| (t, *k))) else {
            panic!("an unexpected {} {text:?}", call.method);
        };
        let job = by_ticket.get(&ticket).unwrap_or_else(|| panic!("a message about an unknown ticket: {text:?}"));
        assert_eq!(call.params["chat_id"].as_i64(), Some(job.submission.chat.0), "{text:?} went to another chat");
        match kind {
            MessageKind::Result => assert_eq!(job.state, JobState::Ready, "a result for a job that is not ready"),
            MessageKind::Failure => {
                assert_eq!(job.state, JobState::Failed, "a failure notice for a job that did not fail")
            }
            _ => {}
        }
        *delivered.entry((ticket, kind)).or_default() += 1;
    }
    let mut duplicates = Vec::new();
    for (&(ticket, kind), &count) in &delivered {
        if count < 2 {
            continue;
        }
        let rows = d.messages(Ticket(ticket)).await;
        let row = rows.iter().find(|m| m.kind == kind).expect("a delivered message has a row");
        if row.attempts < 2 {
            duplicates.push(format!("#{ticket} {kind:?} delivered {count} times, its row was claimed once: {row:?}"));
        }
    }
    assert!(duplicates.is_empty(), "duplicate deliveries:\n{}", duplicates.join("\n"));

    // Exactly one result per ready job, and nothing else: no .part, no source, no work files.
    let expected: Vec<PathBuf> = jobs
        .iter()
        .filter_map(|j| j.result_path())
        .map(|p| Path::new(p).strip_prefix(&d.data).expect("results live in the data folder").to_path_buf())
        .collect();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    let files = without_previews(&d.files_when(|f| without_previews(f) == expected_sorted).await);
    let unexpected = files.iter().filter(|f| !expected.contains(f)).collect::<Vec<_>>();
    let missing = expected.iter().filter(|f| !files.contains(f)).collect::<Vec<_>>();
    assert!(missing.is_empty(), "results of ready jobs are missing: {missing:?}");
    assert!(unexpected.is_empty(), "files left beyond one result per ready job: {unexpected:?}");
    d.process.assert_no_secrets_logged();
    // Messages still on their way (a row a killed process was sending waits for its lease).
    let mut outbox: BTreeMap<&str, usize> = BTreeMap::new();
    let mut undelivered = Vec::new();
    for job in &jobs {
        for m in d.messages(job.ticket).await {
            *outbox.entry(m.state.as_str()).or_default() += 1;
            if m.state != OutboxState::Sent {
                undelivered.push(format!(
                    "{} {} {} (attempts {})",
                    job.ticket,
                    m.kind.as_str(),
                    m.state.as_str(),
                    m.attempts
                ));
            }
        }
    }
    eprintln!(
        "chaos: {} ready, {} failed after {chaos_took:?}; outbox rows by state: {outbox:?} {undelivered:?}",
        jobs.iter().filter(|j| j.state == JobState::Ready).count(),
        jobs.iter().filter(|j| j.state == JobState::Failed).count()
    );
}

/// SIGTERM while a processing run takes longer than the grace period, with another job's result
/// upload in flight: the process exits in time with status 0, the upload is finished and
/// recorded (the senders outlive the workers' abort), the long job is released without spending
/// an attempt, and it completes, once, after the next start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_long_run_exits_in_time_and_still_delivers_what_is_ready() {
    const LONG_CHAT: i64 = 7101;
    const SHORT_CHAT: i64 = 7102;
    // No grace at all: the run is interrupted at once, while the upload still has seconds to go.
    const GRACE: Duration = Duration::ZERO;
    let d = Docket::with_config(
        "shutdown_grace = \"0s\"\ndownload = 2\nprocess = 2",
        "[limits]\ncloud_download = \"256 MiB\"",
    )
    .await;
    d.fake.set_download_limit(256 * 1024 * 1024);
    // About 180 MB of text: seconds of lopdf work, well past the short job's whole way to its
    // upload (90 MB was not always, once optimize stopped syncing its result).
    let long = generated_pdf(12_000, 15_000, 3);
    let long_file = d.fake.add_file(long.clone());
    d.fake.push_update(d.fake.document_update(LONG_CHAT, LONG_CHAT, &long_file, Some("long.pdf"), None));
    let short_file = d.fake.add_file(fixture("pdf/text-1page.pdf"));
    // The short job's result upload takes 4 s: it is still in flight when the grace ends.
    d.fake.fail_next_for_chat("sendDocument", SHORT_CHAT, Fault::Delay(Duration::from_secs(4)));
    d.start();
    d.until("the long job to be processing", DEADLINE, async |d| {
        d.job(Ticket(1)).await.filter(|j| j.state == JobState::Processing && j.lease.is_some())
    })
    .await;
    d.fake.push_update(d.fake.document_update(SHORT_CHAT, SHORT_CHAT, &short_file, Some("short.pdf"), None));
    d.until("the short job's result upload to be under way", DEADLINE, async |d| {
        let messages = d.messages(Ticket(2)).await;
        messages.iter().any(|m| m.kind == MessageKind::Result && m.state == OutboxState::Sending).then_some(())
    })
    .await;
    assert_eq!(
        d.job(Ticket(1)).await.map(|j| j.state),
        Some(JobState::Processing),
        "the long run is still going when SIGTERM comes"
    );

    let sent_at = Instant::now();
    d.process.terminate();
    // Panics (with docket's log) if it does not exit within a minute of SIGTERM.
    let status = d.process.exit_status(Duration::from_secs(60)).await;
    let took = sent_at.elapsed();
    assert!(status.success(), "exit status {status}: {}", d.process.log_text());
    // The grace period, the senders' few seconds after the workers, and room for a loaded machine.
    let bound = GRACE + docket::app::SENDERS_AFTER_WORKERS + Duration::from_secs(4);
    assert!(took < bound, "exited {took:?} after SIGTERM, over {bound:?}");

    assert!(
        d.sent(Ticket(2), MessageKind::Result).await,
        "the upload in flight finished: {:#?}",
        d.messages(Ticket(2)).await
    );
    let released = d.job(Ticket(1)).await.expect("the long job");
    assert_eq!(
        (released.state, released.lease.is_some(), released.attempts),
        (JobState::Fetched, false, 0),
        "released for the next start without spending an attempt: {released:#?}"
    );

    d.start();
    d.until("the long job to be ready", Duration::from_secs(90), async |d| {
        d.job(Ticket(1)).await.filter(|j| j.state == JobState::Ready)
    })
    .await;
    d.until("its result to be sent", DEADLINE, async |d| d.sent(Ticket(1), MessageKind::Result).await.then_some(()))
        .await;
    let documents = d.fake.calls_to("sendDocument");
    assert_eq!(documents.iter().filter(|c| to_chat(LONG_CHAT)(c)).count(), 1, "one result for the long job");
    assert_eq!(documents.iter().filter(|c| to_chat(SHORT_CHAT)(c)).count(), 1, "one result for the short job");
}
