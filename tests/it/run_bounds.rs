//! What one run may cost the service and the disk: whatever a child writes to its stdout and
//! stderr, the service keeps only the end of it; a run stops when a file it writes passes its
//! limit (a built-in's result the upload limit) or when it has more than `[processing]
//! disk_limit` on disk; and a child sees none of the service's environment.

use std::path::Path;
use std::time::Duration;

use docket::domain::{JobState, Ticket};
use docket::store::{DatabaseUrl, Store};

use crate::containment::{hostile_files, peak_rss};
use crate::support::child::{self, DocketProcess};
use crate::support::upload;
use crate::support::{Backend, DEADLINE, TestApp, files_under, fixture, sh_ocr};

/// The configuration of a `docket run` in `dir` with `extra` appended, and the store it uses.
pub(crate) async fn service(dir: &Path, extra: &str) -> (String, Store) {
    let db = dir.join("db").join("docket.db");
    let toml = format!(
        "{storage}[limits]\ncloud_download = \"64 MiB\"\n\
         [workers]\nlease = \"3s\"\n\
         [processing]\nmemory_limit = \"512 MiB\"\nmax_inflate = \"64 MiB\"\ntimeout = \"60s\"\n{extra}",
        storage = child::run_config(dir, &format!("sqlite://{}", db.display())),
    );
    let store = Store::open(&DatabaseUrl::Sqlite(db)).await.expect("the test's store opens");
    (toml, store)
}

/// A stand-in external tool: runs `script` under `sh` with the input and output paths as `$1`
/// and `$2`, configured as the `ocr` operation, which may reach the paths of `reach` too.
pub(crate) fn tool_section(script: &str, reach: &[&Path]) -> String {
    format!(
        "[processing.external.ocr]\ncommand = [\"sh\", \"-c\", {script:?}, \"ocr\", \"{{input}}\", \"{{output}}\"]\n\
         accepts = [\"pdf\"]\nreach = {reach:?}\n"
    )
}

/// One document through a real `docket run` (configured with `extra`, its environment with
/// `env`): `bytes` sent as `name` with `caption`, until its job ends. Gives the process (still
/// running, for its memory to be read) and the ended job.
struct Sent {
    docket: DocketProcess,
    job: docket::domain::Job,
    _fake: fake_bot_api::FakeTelegram,
}

async fn send_to_a_service(
    extra: &str,
    env: &[(&'static str, &str)],
    bytes: Vec<u8>,
    name: &str,
    caption: &str,
) -> Sent {
    let fake = fake_bot_api::FakeTelegram::start().await;
    fake.set_download_limit(64 * 1024 * 1024);
    let dir = tempfile::tempdir().expect("temp dir");
    let (toml, store) = service(dir.path(), extra).await;
    let docket = env.iter().fold(DocketProcess::new(dir, &toml, &fake), |d, (k, v)| d.env(k, v));
    docket.start();
    upload::document(bytes, name, "application/pdf").caption(caption).send_to(&fake, 8401);
    let job = docket
        .until("the job to end", DEADLINE, async || {
            store.job(Ticket(1)).await.expect("read a job").filter(|j| j.state.is_terminal())
        })
        .await;
    Sent { docket, job, _fake: fake }
}

/// lopdf warns once per bad entry of an object stream: 4.5 million times for a 100 KB file.
/// The child logs errors only, so the service, which reads its child's stderr, holds none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_makes_the_pdf_reader_warn_millions_of_times_costs_the_service_nothing() {
    let files = hostile_files();
    let bytes = std::fs::read(files.path().join("log-flood.pdf")).expect("the hostile file");
    let Sent { docket, job, .. } = send_to_a_service("", &[], bytes, "log-flood.pdf", "optimize").await;
    assert_eq!(job.state, JobState::Ready, "the document's pages are fine: {job:#?}");
    let peak = peak_rss(docket.pid());
    assert!(peak < 200 * 1024 * 1024, "the service's peak RSS was {peak} bytes");
}

/// An external program that writes 400 MB to stderr (which its child passes on) and then its
/// result: the run succeeds, and the service kept only the end of what it was told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_floods_its_stderr_costs_the_service_nothing() {
    let flood = tool_section("head -c 400000000 /dev/zero | tr '\\000' x >&2; cp \"$1\" \"$2\"", &[]);
    let Sent { docket, job, .. } =
        send_to_a_service(&flood, &[], fixture("pdf/text-1page.pdf"), "loud.pdf", "ocr").await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    let peak = peak_rss(docket.pid());
    assert!(peak < 200 * 1024 * 1024, "the service's peak RSS was {peak} bytes");
}

/// A run's limits are sized for it: its address space is exactly what it reserved from the
/// memory budget (here far below the tool's configured 3 GiB), and its threads and CPU time are
/// its share of the budget, as a tool sees them in its limits, its environment and `{threads}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_gets_the_memory_it_reserved_and_its_share_of_the_cores() {
    let seen_dir = tempfile::tempdir().expect("temp dir");
    let seen = seen_dir.path().join("seen-limits");
    let script = format!(
        "echo \"$(ulimit -v) $(ulimit -t) $RAYON_NUM_THREADS $OMP_THREAD_LIMIT $3\" > {seen:?}; cp \"$1\" \"$2\""
    );
    let tool = format!(
        "[processing.external.ocr]\ncommand = [\"sh\", \"-c\", {script:?}, \"ocr\", \"{{input}}\", \"{{output}}\", \"{{threads}}\"]\n\
         accepts = [\"pdf\"]\nmemory_limit = \"3 GiB\"\nreach = [{reach:?}]\n[budget]\nmemory = \"4 GiB\"\n",
        reach = seen_dir.path()
    );
    let input = fixture("pdf/text-1page.pdf");
    let input_bytes = input.len() as u64;
    let Sent { job, .. } = send_to_a_service(&tool, &[], input, "limits.pdf", "ocr").await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    let seen = std::fs::read_to_string(&seen).expect("the tool recorded its limits");
    let reserved = docket::operations::TOOL_BASE_ADDRESS_SPACE
        + (input_bytes as f64 * docket::operations::external::DEFAULT_TOOL_MEMORY_FACTOR).ceil() as u64;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let threads = (cores * reserved).div_ceil(4 << 30).clamp(1, cores);
    assert_eq!(
        seen.split_whitespace().collect::<Vec<_>>(),
        [
            (reserved / 1024).to_string(),
            (60 * threads).to_string(),
            threads.to_string(),
            threads.to_string(),
            threads.to_string()
        ],
        "address space (KiB), CPU seconds, RAYON_NUM_THREADS, OMP_THREAD_LIMIT, {{threads}}"
    );
}

/// A run reaches only its own files: a tool that tries the service's configuration, its
/// database, the downloads folder of every job, the service's environment (which holds the
/// token), a file outside, and a TCP connection is refused each, while its input, its output
/// and its own `reach` folder work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_reaches_only_its_own_files_and_no_network() {
    let confinement = docket::operations::confine::probe();
    let seen_dir = tempfile::tempdir().expect("temp dir");
    let seen = seen_dir.path().join("probes");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port to call");
    let port = listener.local_addr().expect("its address").port();
    let outside = std::env::temp_dir().join(format!("docket-escape-{}", std::process::id()));
    // The script finds the service as its parent's parent, through /proc; `$DOCKET_DIR` is the
    // service's folder.
    let script = format!(
        "try() {{ if eval \"$2\" >/dev/null 2>&1; then echo \"$1 reached\"; else echo \"$1 refused\"; fi; }}
         input=\"$1\"
         service=$(cut -d' ' -f4 /proc/$PPID/stat)
         {{
           try input 'cat \"$input\"'
           try config 'cat \"$DOCKET_DIR/docket.toml\"'
           try database 'cat \"$DOCKET_DIR/db/docket.db\"'
           try downloads 'ls \"$DOCKET_DIR/data/downloads\"'
           try environment 'cat /proc/$service/environ'
           try outside 'touch {outside:?}'
           try network 'python3 -c \"import socket; socket.create_connection((\\\"127.0.0.1\\\", {port}), 2)\"'
         }} > {seen:?}
         cp \"$1\" \"$2\""
    );
    let _ = std::fs::remove_file(&outside);
    let fake = fake_bot_api::FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let service_dir = dir.path().to_owned();
    let script = script.replace("$DOCKET_DIR", &service_dir.display().to_string());
    let (toml, store) = service(dir.path(), &tool_section(&script, &[seen_dir.path()])).await;
    let docket = DocketProcess::new(dir, &toml, &fake);
    docket.start();
    upload::pdf("pdf/text-1page.pdf", "probe.pdf").caption("ocr").send_to(&fake, 8406);
    let job = docket
        .until("the job to end", DEADLINE, async || {
            store.job(Ticket(1)).await.expect("read a job").filter(|j| j.state.is_terminal())
        })
        .await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    let probes = std::fs::read_to_string(&seen).expect("the tool recorded its probes");
    if confinement == docket::operations::confine::Confinement::None {
        assert!(docket.log_text().contains("this kernel has no Landlock"), "{}", docket.log_text());
        return;
    }
    assert_eq!(
        probes.lines().collect::<Vec<_>>(),
        [
            "input reached",
            "config refused",
            "database refused",
            "downloads refused",
            "environment refused",
            "outside refused",
            "network refused"
        ],
        "{probes}"
    );
    assert!(!outside.exists());
    drop(listener);
}

/// The child's environment is its own: not the token, not the service's secrets or log filter,
/// and its temporary folder is the run's own, inside the data folder.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_child_sees_none_of_the_services_environment() {
    let seen_dir = tempfile::tempdir().expect("temp dir");
    let seen = seen_dir.path().join("seen-env");
    let record = tool_section(&format!("env > {seen:?}; cp \"$1\" \"$2\""), &[seen_dir.path()]);
    let secret = [("DOCKET_WEBHOOK_SECRET", "hush-hush-4411")];
    let Sent { docket, job, .. } =
        send_to_a_service(&record, &secret, fixture("pdf/text-1page.pdf"), "env.pdf", "ocr").await;
    assert_eq!(job.state, JobState::Ready, "{job:#?}");
    let env = std::fs::read_to_string(&seen).expect("the tool recorded its environment");
    for secret in [fake_bot_api::TEST_TOKEN, "TELOXIDE", "hush-hush-4411", "RUST_LOG=info"] {
        assert!(!env.contains(secret), "the child saw {secret:?}:\n{env}");
    }
    let tmpdir = env.lines().find_map(|l| l.strip_prefix("TMPDIR=")).expect("a TMPDIR of its own");
    assert!(Path::new(tmpdir).starts_with(docket.dir().join("data").join("work")), "TMPDIR={tmpdir}");
}

/// `split` copies a shared page image into every part: a 1 MB file of 40 such pages would make
/// a 42 MB ZIP. With an 8 MB upload limit the run is stopped when its result reaches 8 MB, not
/// after it wrote all of it, and the person is told why.
async fn a_result_that_grows_past_the_upload_limit_stops_its_run(backend: Backend) {
    let files = hostile_files();
    let app = TestApp::spawn_with(backend, |c| c.limits.cloud_upload = 8_000_000).await;
    let shared_image = std::fs::read(files.path().join("shared-image.pdf")).expect("the hostile file");
    app.send(
        8404,
        upload::document(shared_image, "shared-image.pdf", "application/pdf").caption("split").language("en"),
    );
    assert_stopped_at_its_first_attempt(
        &app,
        "the result for shared-image.pdf grew past the 8.0 MB this bot can send, so making it was stopped; try \
         split with fewer pages per part, such as split 1-20,21-40",
    )
    .await;
}

/// A tool whose temporary files pass `[processing] disk_limit` is stopped at once and fails
/// with the reason; its scratch folder goes with it.
async fn a_run_with_more_than_its_disk_limit_on_disk_is_stopped(backend: Backend) {
    let hog = "head -c 67108864 /dev/zero > \"$TMPDIR/big\"; sleep 30; cp \"$1\" \"$2\"";
    let tool = sh_ocr(hog, &[], Vec::new());
    let app = TestApp::spawn_with(backend, |c| {
        c.processing.disk_limit = 8 * 1024 * 1024;
        c.processing.timeout = Duration::from_secs(120);
        c.processing.external.insert("ocr".into(), tool);
    })
    .await;
    app.send(8405, upload::pdf("pdf/text-1page.pdf", "hog.pdf").caption("ocr").language("en"));
    assert_stopped_at_its_first_attempt(
        &app,
        "processing hog.pdf needed more than 8.4 MB of disk space, more than one run may have, so it was stopped",
    )
    .await;
}

/// Ticket 1 failed with `reason` at its first attempt, and its run left nothing in `work/`.
async fn assert_stopped_at_its_first_attempt(app: &TestApp, reason: &str) {
    let job = app.wait_for_job(Ticket(1), |j| j.state.is_terminal()).await;
    assert_eq!((job.state, job.error.as_deref(), job.attempts), (JobState::Failed, Some(reason), 1), "{job:#?}");
    let left = files_under(&app.data_dir().join("work"));
    assert!(left.is_empty(), "the stopped run left {left:?}");
}

crate::per_backend!(
    a_result_that_grows_past_the_upload_limit_stops_its_run,
    a_run_with_more_than_its_disk_limit_on_disk_is_stopped,
);
