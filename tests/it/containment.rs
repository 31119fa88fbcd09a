//! Containment: no document can take the service down. Hostile files (made by
//! `scripts/hostile-pdfs` at test time) go through the real `docket run`; each fails with its
//! reason, the service's process stays the same and its memory stays small, and a normal
//! document completes after them. Runs that outlive their time or lose their lease are killed
//! with everything they started, and a built-in run dies with the process that started it. External tools: a real OCR with ocrmypdf, and a tool whose
//! program is missing.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use docket::app::Options;
use docket::domain::{JobState, Ticket};
use docket::store::DatabaseUrl;
use docket::store::Store;

use crate::support::child::{self, DocketProcess};
use crate::support::upload;
use crate::support::{Backend, DEADLINE, TestApp, fixture, poll_until, render_with_ghostscript, test_options};

/// Runs `scripts/hostile-pdfs` into a new temp folder.
pub(crate) fn hostile_files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/hostile-pdfs");
    let status = std::process::Command::new("python3")
        .arg(&script)
        .arg(dir.path())
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs scripts/hostile-pdfs");
    assert!(status.success(), "scripts/hostile-pdfs: {status}");
    dir
}

/// Peak resident memory (`VmHWM`) of process `pid`, in bytes.
pub(crate) fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/<pid>/status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/<pid>/status");
    kib * 1024
}

/// Whether process `pid` is gone (or a zombie nobody reaped yet: dead all the same).
fn is_dead(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name in parentheses, which may itself hold spaces.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// The hostile files, the reason each must fail with, and a normal document afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_files_fail_with_their_reasons_and_the_service_lives_on() {
    let files = hostile_files();
    let fake = fake_bot_api::FakeTelegram::start().await;
    fake.set_download_limit(64 * 1024 * 1024);
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("db").join("docket.db");
    let toml = child::run_config(dir.path(), &format!("sqlite://{}", db.display()))
        + "[limits]\ncloud_download = \"64 MiB\"\n\
           [workers]\nlease = \"3s\"\nprocess = 2\nper_chat = 10\n\
           [processing]\nmemory_limit = \"512 MiB\"\nmax_inflate = \"64 MiB\"\ntimeout = \"60s\"\n";
    let store = Store::open(&DatabaseUrl::Sqlite(db)).await.expect("the test's store opens");
    let docket = DocketProcess::new(dir, &toml, &fake);
    docket.start();
    let pid = docket.pid();

    // In ticket order, each from a chat of its own.
    let cases: &[(&str, &str)] = &[
        ("flate-bomb.pdf", "unpacks to more than 64 MiB"),
        ("deep-nesting.pdf", "is damaged and cannot be read as a PDF"),
        ("reference-loop.pdf", "has no pages"),
        ("truncated.pdf", "is damaged and cannot be read as a PDF"),
        ("wrong-xref.pdf", "is damaged and cannot be read as a PDF"),
        ("huge-page-count.pdf", "needs more than 512 MiB of memory to process"),
        ("zip-holding-a-pdf.pdf", "is not a PDF (the content looks like a ZIP archive)"),
    ];
    for (chat, (name, _)) in (8001..).zip(cases) {
        let file = fake.add_file(std::fs::read(files.path().join(name)).expect("a hostile file"));
        fake.push_update(fake.document_update(chat, chat, &file, Some(name), Some("application/pdf")));
    }
    let jobs = docket
        .until("every hostile file to end", Duration::from_secs(120), async || {
            let mut jobs = Vec::new();
            for ticket in 1..=cases.len() as i64 {
                let job = store.job(Ticket(ticket)).await.expect("read a job")?;
                if !job.state.is_terminal() {
                    return None;
                }
                jobs.push(job);
            }
            Some(jobs)
        })
        .await;
    for ((name, reason), job) in cases.iter().zip(&jobs) {
        let error = job.error.as_deref().unwrap_or_default();
        assert_eq!(job.state, JobState::Failed, "{name}: {job:#?}");
        assert!(error.contains(reason), "{name} failed with {error:?}, not with {reason:?}");
        assert!(error.contains(name), "{name}: the reason names the file: {error:?}");
    }
    let hungry = &jobs[5];
    assert_eq!(hungry.attempts, 1, "the run its memory limit killed is charged one attempt: {hungry:#?}");
    // No run was charged for another's death: each hostile file took exactly its own attempt.
    for ((name, _), job) in cases.iter().zip(&jobs) {
        assert_eq!(job.attempts, 1, "{name} was charged {} attempts: {job:#?}", job.attempts);
    }

    // The same process all along, and a normal document still goes through it.
    assert_eq!(docket.pid(), pid, "the service's process is the one that started");
    let file = fake.add_file(fixture("pdf/text-20pages.pdf"));
    fake.push_update(fake.document_update(8100, 8100, &file, Some("fine.pdf"), Some("application/pdf")));
    let ticket = Ticket(cases.len() as i64 + 1);
    let fine = docket
        .until("the normal document to be ready", DEADLINE, async || {
            store.job(ticket).await.expect("read a job").filter(|j| j.state == JobState::Ready)
        })
        .await;
    assert_eq!(fine.attempts, 1, "the normal document was processed at its first attempt: {fine:#?}");
    assert_eq!(docket.pid(), pid);
    // A 4 GiB bomb and a file that needs over 512 MiB went through: the service held neither.
    let peak = peak_rss(pid);
    assert!(peak < 200 * 1024 * 1024, "the service's peak RSS was {peak} bytes");
    docket.assert_no_secrets_logged();
}

/// A stand-in for docket's binary as the child of processing runs: it starts a grandchild that
/// sleeps, writes both process ids into `dir`, and waits for ever (a document that takes far
/// too long, in a tool that starts programs of its own).
fn slow_program(dir: &Path) -> PathBuf {
    let path = dir.join("slow-child");
    let script = format!(
        "#!/bin/sh\nsleep 3600 &\necho $! > {dir}/grandchild.pid.tmp\nmv {dir}/grandchild.pid.tmp {dir}/grandchild.pid\n\
         echo $$ > {dir}/child.pid.tmp\nmv {dir}/child.pid.tmp {dir}/child.pid\nwait\n",
        dir = dir.display()
    );
    std::fs::write(&path, script).expect("write the slow child");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("make it executable");
    path
}

/// The pids the slow child wrote, once it has.
async fn slow_pids(dir: &Path) -> (u32, u32) {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok().and_then(|s| s.trim().parse().ok());
    poll_until(DEADLINE, async || match (read("child.pid"), read("grandchild.pid")) {
        (Some(child), Some(grandchild)) => Ok((child, grandchild)),
        _ => Err(()),
    })
    .await
    .expect("the slow child started and wrote its pids")
}

async fn wait_dead(pids: &[u32]) {
    poll_until(DEADLINE, async || if pids.iter().all(|&p| is_dead(p)) { Ok(()) } else { Err(()) })
        .await
        .unwrap_or_else(|()| panic!("processes {pids:?} still run"));
}

/// A run whose lease is lost (the job was ended elsewhere, as `/cancel` does) has its child and
/// the child's own children killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_lease_kills_the_run_and_everything_it_started() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let mut app = TestApp::create(Backend::Sqlite, |_| {}).await;
    app.start_with(Options { program: slow_program(scratch.path()), ..test_options() }).await;
    app.send_document(8201, fixture("pdf/text-1page.pdf"), "slow.pdf", "application/pdf");
    app.wait_for_job(Ticket(1), |j| j.state == JobState::Processing).await;
    let (child, grandchild) = slow_pids(scratch.path()).await;
    assert!(!is_dead(child) && !is_dead(grandchild), "the run is under way");

    // Ended by someone else: the worker's next renewal finds the lease gone.
    app.execute(
        "UPDATE jobs SET status = 'failed', error = 'cancelled', lease_owner = NULL, lease_until = NULL, \
         local_path = NULL WHERE id = 1",
    )
    .await;
    wait_dead(&[child, grandchild]).await;
}

/// A run over `[processing] timeout` is killed with what it started, and fails with the time
/// reason after one attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_over_its_time_limit_is_killed_and_fails_with_the_reason() {
    let scratch = tempfile::tempdir().expect("temp dir");
    let mut app = TestApp::create(Backend::Sqlite, |c| c.processing.timeout = Duration::from_secs(2)).await;
    app.start_with(Options { program: slow_program(scratch.path()), ..test_options() }).await;
    app.send_document(8301, fixture("pdf/text-1page.pdf"), "slow.pdf", "application/pdf");
    let (child, grandchild) = slow_pids(scratch.path()).await;
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.error.as_deref(), Some("processing slow.pdf took longer than 2 s"), "{job:#?}");
    assert_eq!(job.attempts, 1);
    wait_dead(&[child, grandchild]).await;
}

/// A tool whose program is not installed is reported by check-config and refused by `docket
/// process` with the same clear message; nothing is run.
#[test]
fn a_missing_tool_is_reported_as_unavailable() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = child::write_config_in(
        dir.path(),
        "[processing.external.office]\ncommand = [\"docket-no-such-office-7c1\", \"{input}\", \"{output}\"]\n\
         accepts = [\"docx\", \"odt\", \"xlsx\"]\n",
    );
    let unavailable = "operation \"office\" is unavailable: its program \"docket-no-such-office-7c1\" is not installed";

    let checked = child::output(&["check-config"], Some(&config));
    assert!(checked.status.success(), "{}", child::stderr(&checked));
    let stdout = String::from_utf8_lossy(&checked.stdout);
    assert!(stdout.contains(unavailable), "{stdout}");

    let input = dir.path().join("in.docx");
    std::fs::write(&input, b"not really a document").expect("write the input");
    let out = dir.path().join("out.pdf");
    let ran = child::output(
        &["process", input.to_str().expect("utf-8"), "--op", "office", "-o", out.to_str().expect("utf-8")],
        Some(&config),
    );
    assert!(!ran.status.success());
    assert!(child::stderr(&ran).contains(unavailable), "{}", child::stderr(&ran));
    assert!(!out.exists());
}

/// A real OCR: a text PDF rendered to an image-only scan with ghostscript, then `docket process
/// --op ocr` (ocrmypdf under docket's limits) gives a PDF whose text layer has the words back.
#[test]
fn ocr_finds_the_words_of_a_scan() {
    for program in ["ocrmypdf", "gs"] {
        assert!(
            docket::operations::external::find_program(program, std::env::var_os("PATH")).is_some(),
            "{program} is not installed: apt-get install ocrmypdf tesseract-ocr-eng tesseract-ocr-rus (see .ci/run)"
        );
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let text = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pdf/text-1page.pdf");
    let scan = dir.path().join("scan.pdf");
    render_with_ghostscript("pdfimage24", 200, &text, &scan);
    assert!(text_of(&scan).trim().is_empty(), "the scan has no text layer: {:?}", text_of(&scan));

    let config = child::write_config_in(
        dir.path(),
        "[processing.external.ocr]\n\
         command = [\"ocrmypdf\", \"--quiet\", \"-l\", \"{lang}\", \"{input}\", \"{output}\"]\n\
         accepts = [\"pdf\"]\n",
    );
    let out = dir.path().join("ocr.pdf");
    let ran = child::output(
        &["process", scan.to_str().expect("utf-8"), "--op", "ocr", "--lang", "eng", "-o", out.to_str().expect("utf-8")],
        Some(&config),
    );
    assert!(ran.status.success(), "{}", child::stderr(&ran));
    let found = text_of(&out).to_lowercase();
    let expected = text_of(&text).to_lowercase();
    let words: Vec<&str> = expected.split_whitespace().filter(|w| w.len() >= 4).collect();
    assert!(!words.is_empty(), "the text fixture has words: {expected:?}");
    let recognised = words.iter().filter(|w| found.contains(*w)).count();
    assert!(recognised * 10 >= words.len() * 8, "OCR found {recognised} of {} words: {found:?}", words.len());
}

/// The text of a PDF, as ghostscript extracts it.
fn text_of(pdf: &Path) -> String {
    let out = std::process::Command::new("gs")
        .args(["-q", "-dNOPAUSE", "-dBATCH", "-dSAFER", "-sDEVICE=txtwrite", "-sOutputFile=-"])
        .arg(pdf)
        .output()
        .expect("gs runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The tool's process id, once the stand-in tool has written it into `pid_file`, and its parent's
/// (the run's child).
async fn tool_and_child(pid_file: &Path) -> (u32, u32) {
    let tool: u32 = poll_until(DEADLINE, async || {
        std::fs::read_to_string(pid_file).ok().and_then(|s| s.trim().parse().ok()).ok_or(())
    })
    .await
    .expect("the tool started and wrote its pid");
    let stat = std::fs::read_to_string(format!("/proc/{tool}/stat")).expect("the tool runs");
    let parent = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok());
    (tool, parent.expect("the tool's parent in /proc/<pid>/stat"))
}

/// A service killed outright (SIGKILL, the OOM killer) takes its runs with it: the run's child
/// and the tool it started do not go on, unwatched, for the rest of their time limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_dies_with_its_service() {
    let fake = fake_bot_api::FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let pid_file = dir.path().join("tool.pid");
    let tool = format!("echo $$ > {tmp:?} && mv {tmp:?} {pid_file:?} && exec sleep 3600", tmp = dir.path().join("t"));
    let (toml, _store) =
        crate::run_bounds::service(dir.path(), &crate::run_bounds::tool_section(&tool, &[dir.path()])).await;
    let docket = DocketProcess::new(dir, &toml, &fake);
    docket.start();
    upload::pdf("pdf/text-1page.pdf", "long.pdf").caption("ocr").send_to(&fake, 8501);
    let (tool, child) = tool_and_child(&pid_file).await;
    assert!(!is_dead(tool) && !is_dead(child), "the run is under way");
    docket.kill();
    wait_dead(&[child, tool]).await;
}

/// A package upgrade replaces docket's binary while the service runs: its runs still start the
/// binary the service runs (whose protocol they speak), not the new file at the old path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_replaced_on_disk_does_not_change_what_runs_start() {
    let fake = fake_bot_api::FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("a folder for the binary");
    let binary = bin.join("docket");
    std::fs::copy(env!("CARGO_BIN_EXE_docket"), &binary).expect("copy docket's binary");
    let (toml, store) = crate::run_bounds::service(dir.path(), "").await;
    let marker = dir.path().join("the-new-binary-ran");
    let docket = DocketProcess::new(dir, &toml, &fake).binary(binary.clone());
    docket.start();
    fake.wait_for_call("getUpdates", |_| true, DEADLINE).await;

    // As a package manager does: the new file is written beside the old and renamed over it.
    let upgraded = bin.join("docket.new");
    std::fs::write(&upgraded, format!("#!/bin/sh\ntouch {marker:?}\nexit 3\n")).expect("write the new binary");
    std::fs::set_permissions(&upgraded, std::fs::Permissions::from_mode(0o755)).expect("make it executable");
    std::fs::rename(&upgraded, &binary).expect("replace the binary");

    let file = fake.add_file(fixture("pdf/text-1page.pdf"));
    fake.push_update(fake.document_update(8502, 8502, &file, Some("after.pdf"), Some("application/pdf")));
    let job = docket
        .until("the job to end", DEADLINE, async || {
            store.job(Ticket(1)).await.expect("read a job").filter(|j| j.state.is_terminal())
        })
        .await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    assert!(!marker.exists(), "a run started the replaced binary");
}

/// Whether process `pid` is gone: no such process, or a zombie waiting for a reaper.
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Issue 29, point 5: a built-in operation's child dies with the service that started it
/// (`PR_SET_PDEATHSIG`), even when that service is SIGKILLed and nothing is left to kill the
/// child's group: once the child works (its PDF thread is up), and when the service died before
/// the child could ask for that signal. Its input here is a FIFO no one writes to, so on its own
/// it would wait for ever.
#[test]
fn a_builtin_run_dies_with_the_process_that_started_it() {
    builtin_child_outlives_no_service(true);
    builtin_child_outlives_no_service(false);
}

/// Starts a built-in run's child from a stand-in service, SIGKILLs the service (once the child's
/// PDF thread is up with `once_working`, else at once), and waits for the child to be gone.
fn builtin_child_outlives_no_service(once_working: bool) {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join("never-written.pdf");
    let made = std::process::Command::new("mkfifo").arg(&input).status().expect("mkfifo runs");
    assert!(made.success());
    let output = dir.path().join("out.pdf");
    // A stand-in for the service: a shell that starts the child, says its pid, and waits.
    let mut service = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#""$0" "$@" --parent-pid $$ & echo $!; wait"#)
        .arg(env!("CARGO_BIN_EXE_docket"))
        .args(["process", input.to_str().expect("utf8"), "--op", "optimize", "--output"])
        .arg(&output)
        .args(["--contained", "--memory-limit", "1073741824", "--timeout-secs", "600"])
        .args(["--max-inflate", "1048576", "--max-file", "1048576", "--threads", "1"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("sh starts");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(service.stdout.take().expect("piped")), &mut line)
        .expect("the child's pid");
    let child: u32 = line.trim().parse().expect("a pid");
    let threads = || std::fs::read_dir(format!("/proc/{child}/task")).map_or(0, |d| d.count());
    let deadline = std::time::Instant::now() + DEADLINE;
    // The PDF thread reads the input: the child has its limits, its parent-death signal included.
    while once_working && threads() < 3 {
        assert!(std::time::Instant::now() < deadline, "the child {child} never started working");
        std::thread::sleep(Duration::from_millis(20));
    }

    service.kill().expect("SIGKILL the stand-in service");
    service.wait().expect("reaped");
    while !is_gone(child) {
        if std::time::Instant::now() > deadline {
            let status = std::fs::read_to_string(format!("/proc/{child}/status")).unwrap_or_default();
            let _ = std::process::Command::new("kill").args(["-9", &child.to_string()]).status();
            panic!("the child {child} outlived the process that started it (once working: {once_working}): {status}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
