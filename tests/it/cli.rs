//! The real `docket` binary: its commands, its exit codes and its error messages.

use std::path::Path;
use std::process::Command;

use fake_bot_api::FakeTelegram;

use crate::support::calls::to_chat;
use crate::support::child::{self, DocketProcess, stderr};
use crate::support::{Backend, DEADLINE, TestApp, eventually, fixture, input_and_output};

/// `docket check-config` on a file holding `toml`, which it must refuse; returns its stderr.
fn check_config_refuses(toml: &str) -> String {
    let (_dir, path) = child::write_config(toml);
    let out = child::output(&["check-config"], Some(&path));
    assert!(!out.status.success(), "check-config accepted {toml:?}");
    stderr(&out)
}

/// `docket check-config` on a file holding `toml`, which it must accept; returns what it printed.
fn check_config_accepts(toml: &str) -> String {
    let (_dir, path) = child::write_config(toml);
    let out = child::output(&["check-config"], Some(&path));
    assert!(out.status.success(), "{}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn check_config_names_every_bad_key_and_fails() {
    let err = check_config_refuses("[workers]\ndownload = 0\n[retention]\nresult_ttl = \"soon\"\n");
    assert!(err.contains("[workers] download = 0: expected a whole number from 1 to 256"), "{err}");
    assert!(err.contains("[retention] result_ttl = \"soon\""), "{err}");
}

#[test]
fn check_config_accepts_the_documented_example() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/docket.toml");
    let out = child::output(&["check-config"], Some(&example));
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.starts_with("# configuration is valid"), "{shown}");
    // The effective settings, including the sections added later.
    assert!(shown.contains("\n[outbox]\nsenders = 4\nglobal_per_second = 25\nprivate_interval = \"1s\"\n"), "{shown}");
    assert!(shown.contains("\n[budget]\nbytes = "), "{shown}");
    // Whether office documents can be converted here (CI installs LibreOffice).
    assert!(shown.contains("\n# office conversion (topdf): available, LibreOffice at /"), "{shown}");
    // And previews drawn (CI installs mupdf-tools).
    assert!(shown.contains("\n# previews: available, MuPDF at /"), "{shown}");

    // Every key appears in its section: set, or `# key = (not set)` when optional and unset.
    let shown_keys = keys_in(&shown);
    for (section, keys) in docket::config::Config::keys() {
        for key in keys {
            assert!(
                shown_keys.contains(&(section.to_owned(), (*key).to_owned())),
                "[{section}] {key} missing:\n{shown}"
            );
        }
    }
    // The same, against the documented example's own list (set or commented out).
    let text = std::fs::read_to_string(&example).expect("read the example");
    let documented = keys_in(&text);
    assert!(documented.len() >= 37, "{documented:?}");
    for (section, key) in &documented {
        assert!(shown_keys.contains(&(section.clone(), key.clone())), "[{section}] {key} missing:\n{shown}");
    }
    // And it is a configuration that reads back to the same settings.
    let from_example = docket::config::Config::from_toml_str(&text, None, None).expect("valid");
    let read_back = docket::config::Config::from_toml_str(&shown, None, None).expect("check-config prints valid TOML");
    assert_eq!(read_back, from_example);
}

/// The `[section] key` pairs a TOML text sets or shows as a comment (`# key = …`). Keys of an
/// example section shown only as a comment (`# [processing.external.ocr]`) are the example's,
/// not keys of the section above it, and are left out.
fn keys_in(text: &str) -> Vec<(String, String)> {
    let mut section = String::new();
    let mut keys = Vec::new();
    let mut in_example = false;
    for line in text.lines().map(str::trim) {
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.to_owned();
            in_example = false;
        } else if line.strip_prefix("# [").is_some_and(|l| l.ends_with(']')) {
            in_example = true;
        } else if in_example {
            continue;
        } else if let Some((key, _)) = line.trim_start_matches("# ").split_once(" = ")
            && !key.is_empty()
            && key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        {
            keys.push((section.clone(), key.to_owned()));
        }
    }
    keys
}

#[test]
fn check_config_says_when_office_documents_cannot_be_converted() {
    let shown = check_config_accepts("[processing]\nsoffice = \"/opt/none/soffice\"\n");
    assert!(
        shown.contains("\n# office files cannot be converted: LibreOffice's \"/opt/none/soffice\" is not installed"),
        "{shown}"
    );
    assert!(shown.contains("libreoffice-writer-nogui"), "the hint names the packages: {shown}");
}

#[test]
fn check_config_says_whether_previews_are_off_or_cannot_be_drawn() {
    let off = check_config_accepts("[processing]\npreview = false\n");
    assert!(off.contains("\n# previews: off ([processing] preview = false)\n"), "{off}");
    let missing = check_config_accepts("[processing]\nrenderer = \"/opt/none/mutool\"\n");
    assert!(
        missing.contains("\n# results are sent without a preview: MuPDF's \"/opt/none/mutool\" is not installed"),
        "{missing}"
    );
    assert!(missing.contains("install mupdf-tools"), "the hint names the package: {missing}");
}

#[test]
fn check_config_never_prints_a_secret() {
    let (_dir, path) = child::write_config(
        "[storage]\ndatabase_url = \"postgres://docket:hunter2@db.internal/docket?password=hunter3\"\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_docket"))
        .args(["--config", path.to_str().expect("utf8"), "check-config"])
        .env_remove("DOCKET_CONFIG")
        .env_remove("TELOXIDE_API_URL")
        .env("TELOXIDE_TOKEN", "123456:SECRET-check-config")
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("database_url = \"postgres://docket:***@db.internal/docket?password=***\""), "{shown}");
    assert!(!shown.contains("hunter") && !stderr(&out).contains("hunter"), "{shown}");
    assert!(!shown.contains("SECRET") && !stderr(&out).contains("SECRET"), "{shown}");
}

#[test]
fn check_config_shows_and_checks_the_queue_cap_and_the_group_mode() {
    let shown = check_config_accepts("[limits]\nper_chat_queued = 7\n[access]\ngroups = \"all\"\n");
    assert!(shown.contains("per_chat_queued = 7"), "{shown}");
    assert!(shown.contains("groups = \"all\""), "{shown}");

    let defaults = child::output(&["check-config"], None);
    let shown = String::from_utf8_lossy(&defaults.stdout);
    assert!(shown.contains("per_chat_queued = 50") && shown.contains("groups = \"addressed\""), "{shown}");

    let err = check_config_refuses("[limits]\nper_chat_queued = 0\n[access]\ngroups = \"some\"\n");
    assert!(err.contains("[limits] per_chat_queued = 0: expected a whole number from 1 to"), "{err}");
    assert!(err.contains("[access] groups = \"some\": expected one of \"addressed\", \"all\" or \"off\""), "{err}");
}

#[test]
fn run_without_a_token_says_which_variable_is_missing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = child::command().arg("run").current_dir(dir.path()).output().expect("runs");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("$TELOXIDE_TOKEN = (not set)"), "{}", stderr(&out));
    assert!(stderr(&out).contains("$CREDENTIALS_DIRECTORY = (not set)"), "{}", stderr(&out));
}

#[test]
fn run_with_an_empty_credentials_directory_names_the_missing_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let credentials = dir.path().join("credentials");
    std::fs::create_dir(&credentials).expect("mkdir");
    let out = Command::new(env!("CARGO_BIN_EXE_docket"))
        .arg("run")
        .current_dir(dir.path())
        .env_remove("TELOXIDE_TOKEN")
        .env_remove("DOCKET_CONFIG")
        .env("CREDENTIALS_DIRECTORY", &credentials)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("$TELOXIDE_TOKEN = (not set)"), "{err}");
    assert!(err.contains(&format!("no file {}", credentials.join("telegram-token").display())), "{err}");
    assert!(!dir.path().join("data").exists(), "nothing is created without a token");
}

#[test]
fn check_config_says_where_the_token_comes_from_without_showing_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = "123456:SECRET-from-the-credential";
    std::fs::write(dir.path().join("telegram-token"), format!("{secret}\n")).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_docket"))
        .arg("check-config")
        .env_remove("TELOXIDE_TOKEN")
        .env_remove("DOCKET_CONFIG")
        .env("CREDENTIALS_DIRECTORY", dir.path())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("\n# bot token: from $CREDENTIALS_DIRECTORY/telegram-token ("), "{shown}");
    assert!(shown.contains(", bot 123456\n"), "{shown}");
    assert!(!shown.contains("SECRET"), "{shown}");
}

/// systemd's `LoadCredential=telegram-token:…` without a shell: `docket run` finds the token in
/// `$CREDENTIALS_DIRECTORY/telegram-token` (trailing newline and all), polls with it, and never
/// logs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_takes_the_token_from_the_systemd_credential() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let credentials = dir.path().join("credentials");
    std::fs::create_dir(&credentials).expect("mkdir");
    std::fs::write(credentials.join("telegram-token"), format!("{}\n", fake.token())).expect("write");
    let config =
        child::write_config_in(dir.path(), "[telegram]\npoll_timeout = \"1s\"\n[workers]\nshutdown_grace = \"1s\"\n");
    let child = Command::new(env!("CARGO_BIN_EXE_docket"))
        .args(["--config", config.to_str().expect("utf8"), "run"])
        .current_dir(dir.path())
        .env_remove("TELOXIDE_TOKEN")
        .env_remove("DOCKET_CONFIG")
        .env("CREDENTIALS_DIRECTORY", &credentials)
        .env("TELOXIDE_API_URL", fake.api_url().as_str())
        .env("RUST_LOG", "debug")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("docket run starts");
    // getUpdates comes after getMe accepted the token: a wrong one would have stopped docket.
    fake.wait_for_call("getUpdates", |_| true, crate::support::DEADLINE).await;
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill runs");
    assert!(status.success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("docket exits"))
        .await
        .expect("the waiting thread");
    let logs = stderr(&out);
    assert!(out.status.success(), "exit status after SIGTERM: {:?}\n{logs}", out.status);
    let secret = fake.token().split_once(':').expect("a token").1;
    assert!(!logs.contains(secret), "the token was logged:\n{logs}");
}

#[test]
fn run_with_an_unusable_data_dir_stops_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let blocker = dir.path().join("occupied");
    std::fs::write(&blocker, b"a file, not a folder").expect("write");
    let path =
        child::write_config_in(dir.path(), &format!("[storage]\ndata_dir = {:?}\n", blocker.display().to_string()));
    let out = child::command()
        .args(["--config", path.to_str().expect("utf8"), "run"])
        .current_dir(dir.path())
        .env("TELOXIDE_TOKEN", "1:x")
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("occupied") && err.contains("not usable"), "{err}");
}

/// `docket process INPUT --op OP -o OUTPUT`, which must succeed and write a PDF; its page count.
fn pages_processed(input: &Path, op: &str, output: &Path) -> usize {
    let out = child::process(input, Some(op), output, None);
    assert!(out.status.success(), "{}", stderr(&out));
    lopdf::Document::load(output).expect("the output is a PDF").get_pages().len()
}

#[test]
fn process_optimizes_a_local_file_and_refuses_a_non_pdf() {
    let (_dir, input, output) = input_and_output("in.pdf", "out.pdf");
    std::fs::write(&input, fixture("pdf/text-20pages.pdf")).expect("write");
    assert_eq!(pages_processed(&input, "optimize", &output), 20);

    std::fs::write(&input, fixture("other/red-8x8.png")).expect("write");
    let out = child::process(&input, None, &output, None);
    assert!(!out.status.success());
    let refusal = stderr(&out);
    assert!(
        refusal.contains("optimize takes pdf") && refusal.contains("the content looks like a PNG image"),
        "{refusal}"
    );
}

#[test]
fn process_converts_an_office_document_and_says_when_it_cannot() {
    let (dir, input, output) = input_and_output("slides.bin", "slides.pdf");
    std::fs::write(&input, fixture("office/slides.pptx")).expect("write");
    assert_eq!(pages_processed(&input, "topdf", &output), 2, "a page per slide");

    let config = child::write_config_in(dir.path(), "[processing]\nsoffice = \"/opt/none/soffice\"\n");
    let out = child::process(&input, Some("topdf"), &output, Some(&config));
    assert!(!out.status.success());
    let refusal = stderr(&out);
    assert!(
        refusal.contains("office files cannot be converted") && refusal.contains("[processing] soffice"),
        "{refusal}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_jobs_read_the_bots_database() {
    let app = TestApp::spawn_with(Backend::Sqlite, |_| {}).await;
    let (_, job) = app.first_pdf_ready(90, "cli.pdf").await;

    let (_dir, config) = child::storage_config(&app, "");

    let out = child::output(&["status", "1", "--json"], Some(&config));
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status --json is JSON");
    assert_eq!(json["ticket"], 1);
    assert_eq!(json["state"], "ready");
    assert_eq!(json["chat_id"], 90);
    assert_eq!(json["declared_name"], "cli.pdf");
    assert_eq!(json["sha256"].as_str(), job.source.as_ref().map(|s| s.sha256.as_str()));
    assert_eq!(json["attempts"], job.attempts);
    assert!(json["error"].is_null());
    assert!(json["result_expires_at"].as_str().is_some_and(|s| s.ends_with('Z')));
    assert!(json.get("size").is_some());
    // Which host's data folder holds the result: the bot's node.
    assert!(job.node.is_some(), "a ready job names the node that holds its result");
    assert_eq!(json["node"].as_str(), job.node.as_ref().map(|n| n.as_str()));
    let out = child::output(&["status", "1"], Some(&config));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("node:") && l.ends_with(json["node"].as_str().unwrap_or("?"))),
        "{text}"
    );

    let out = child::output(&["jobs", "--state", "ready", "--json"], Some(&config));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let out = child::output(&["status", "2"], Some(&config));
    assert!(!out.status.success());
    assert!(stderr(&out).contains("no such ticket: #2"));
}

/// `docket run` as a child process against a fake Bot API, with metrics on a free port.
struct Running {
    process: DocketProcess,
    metrics: std::net::SocketAddr,
}

fn run_binary(fake: &FakeTelegram, grace: &str) -> Running {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
    let metrics: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let toml = format!(
        "[telegram]\npoll_timeout = \"1s\"\n[workers]\nshutdown_grace = \"{grace}\"\n[metrics]\nlisten = \"{metrics}\"\n"
    );
    let process = DocketProcess::new(dir, &toml, fake);
    process.start();
    Running { process, metrics }
}

async fn scrape(addr: std::net::SocketAddr) -> Option<String> {
    let resp = reqwest::get(format!("http://{addr}/metrics")).await.ok()?;
    resp.status().is_success().then_some(())?;
    resp.text().await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_served_and_sigterm_drains_and_exits_zero() {
    let fake = FakeTelegram::start().await;
    let bot = run_binary(&fake, "10s");
    let file = fake.add_file(fixture("pdf/text-1page.pdf"));
    fake.push_update(fake.document_update(95, 95, &file, Some("m.pdf"), Some("application/pdf")));
    fake.wait_for_call("sendDocument", to_chat(95), DEADLINE).await;

    let body = eventually(DEADLINE, async || {
        scrape(bot.metrics).await.filter(|b| b.contains("docket_messages_sent_total")).ok_or("no metrics served".into())
    })
    .await;
    for name in ["docket_janitor_passes_total", "docket_jobs_accepted_total", "docket_jobs_ready_total"] {
        assert!(body.contains(name), "{name} missing from:\n{body}");
    }

    let exit = sigterm(&bot.process).await;
    assert!(exit.success(), "exit status after SIGTERM: {exit:?}");
}

/// SIGTERM, then the exit status once the process has ended (panics after [`DEADLINE`]).
async fn sigterm(process: &DocketProcess) -> std::process::ExitStatus {
    process.terminate();
    process.exit_status(DEADLINE).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_releases_unfinished_work_at_once_after_the_grace_period() {
    let fake = FakeTelegram::start().await;
    let bot = run_binary(&fake, "1s");
    let file = fake.add_file(fixture("pdf/text-20pages.pdf"));
    // About a minute to download: still running when SIGTERM comes and when the grace runs out.
    fake.fail_downloads_for(&file.file_id, fake_bot_api::DownloadFault::Throttle { bytes_per_sec: 300 }, None);
    fake.push_update(fake.document_update(96, 96, &file, Some("slow.pdf"), Some("application/pdf")));
    fake.wait_for_call("getFile", |_| true, DEADLINE).await;
    let started = std::time::Instant::now();
    let exit = sigterm(&bot.process).await;
    assert!(exit.success(), "exit status after SIGTERM: {exit:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(15), "stopped after {:?}", started.elapsed());

    let db = bot.process.dir().join("data").join("docket.db");
    let store = docket::store::Store::open(&docket::store::DatabaseUrl::Sqlite(db)).await.expect("open");
    let job = store.job(docket::domain::Ticket(1)).await.expect("read").expect("the job exists");
    assert_eq!(job.state, docket::domain::JobState::Accepted);
    assert!(job.lease.is_none(), "released at shutdown, not left to lapse: {:?}", job.lease);
    let parts: Vec<_> = crate::support::files_under(&bot.process.dir().join("data").join("downloads"));
    assert!(parts.is_empty(), "the interrupted download left {parts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_to_a_pipe_carry_no_colour_codes() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let toml = "[telegram]\npoll_timeout = \"1s\"\n[workers]\nshutdown_grace = \"1s\"\n";
    // RUST_LOG=info, and neither NO_COLOR nor DOCKET_LOG_FORMAT: only the pipe says "no colours".
    let process = DocketProcess::new(dir, toml, &fake).without_env("NO_COLOR").stderr_to_pipe();
    process.start();
    // Polling has started: the startup lines (levels, fields) are written by now.
    fake.wait_for_call("getUpdates", |_| true, DEADLINE).await;
    let status = sigterm(&process).await;
    assert!(status.success(), "exit status after SIGTERM: {status:?}");
    let logs = process.log_text();
    assert!(logs.contains("docket is running"), "{logs}");
    assert!(!logs.contains("\u{1b}["), "ANSI escape codes in piped logs:\n{logs:?}");
}

#[test]
fn admin_commands_on_a_missing_database_say_so_and_create_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("nowhere").join("docket.db");
    let config = child::write_config_in(dir.path(), &child::sqlite_storage(&db));
    for args in
        [&["status", "1"][..], &["status", "1", "--json"], &["jobs"], &["jobs", "--json"], &["janitor", "--dry-run"]]
    {
        let out = child::output(args, Some(&config));
        assert!(!out.status.success(), "{args:?} succeeded on a missing database");
        let err = stderr(&out);
        assert!(err.contains(&format!("no database at sqlite://{}", db.display())), "{args:?}: {err}");
        assert!(err.contains("(has docket run here?)"), "{args:?}: {err}");
        assert!(!db.exists(), "{args:?} created {}", db.display());
        assert!(!db.parent().expect("a folder").exists(), "{args:?} created the database folder");
    }
}

#[test]
fn admin_commands_refuse_a_sqlite_file_without_dockets_schema() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("other.db");
    std::fs::write(&db, b"").expect("an empty file is an empty SQLite database");
    let config = child::write_config_in(dir.path(), &child::sqlite_storage(&db));
    for args in [&["status", "1"][..], &["jobs"]] {
        let out = child::output(args, Some(&config));
        assert!(!out.status.success(), "{args:?} succeeded on a foreign database");
        let err = stderr(&out);
        assert!(err.contains("has no docket schema"), "{args:?}: {err}");
        assert_eq!(std::fs::metadata(&db).expect("still there").len(), 0, "{args:?} wrote to the file");
    }
}

#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_commands_refuse_a_postgres_database_without_dockets_schema() {
    use sqlx::Connection;

    let db = crate::support::postgres::TestDatabase::create().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = child::write_config_in(dir.path(), &format!("[storage]\ndatabase_url = \"{}\"\n", db.url));
    for args in [&["status", "1"][..], &["jobs"]] {
        let out = child::output(args, Some(&config));
        assert!(!out.status.success(), "{args:?} succeeded on a database without docket's schema");
        let err = stderr(&out);
        assert!(err.contains("has no docket schema") && err.contains("(has docket run here?)"), "{args:?}: {err}");
    }
    let mut conn = sqlx::PgConnection::connect(&db.url).await.expect("connect");
    let tables: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'public'")
            .fetch_one(&mut conn)
            .await
            .expect("count tables");
    assert_eq!(tables, 0, "nothing was migrated");

    // A database that does not exist at all.
    let mut missing = url::Url::parse(&db.url).expect("a URL");
    missing.set_path("docket_it_does_not_exist");
    std::fs::write(&config, format!("[storage]\ndatabase_url = \"{missing}\"\n")).expect("write");
    let out = child::output(&["jobs"], Some(&config));
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("no database at postgres://") && err.contains("(has docket run here?)"), "{err}");
}

/// `docket ARGS` in `process`'s folder (where its relative SQLite path points), with the token and
/// the fake Bot API it runs against.
fn beside_command(process: &DocketProcess, fake: &FakeTelegram, args: &[&str]) -> Command {
    let mut cmd = child::command();
    cmd.arg("--config").arg(process.dir().join("docket.toml")).args(args).current_dir(process.dir());
    cmd.env("TELOXIDE_TOKEN", fake_bot_api::TEST_TOKEN).env("TELOXIDE_API_URL", fake.api_url().to_string());
    cmd
}

fn beside(process: &DocketProcess, fake: &FakeTelegram, args: &[&str]) -> std::process::Output {
    beside_command(process, fake, args).output().expect("the docket binary runs")
}

/// Runs `cmd` and waits for it to end; one still running after [`DEADLINE`] was not refused, and
/// is killed.
async fn refused_at_start(mut cmd: Command) -> std::process::Output {
    let mut process = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the docket binary runs");
    let ended = crate::support::poll_until(DEADLINE, async || process.try_wait().ok().flatten().ok_or(())).await;
    if ended.is_err() {
        let _ = process.kill();
    }
    let output = process.wait_with_output().expect("its output");
    assert!(ended.is_ok(), "still running after {DEADLINE:?}: {}", stderr(&output));
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_docket_run_on_one_sqlite_database_is_refused_naming_the_first() {
    let fake = FakeTelegram::start().await;
    let bot = run_binary(&fake, "1s");
    fake.wait_for_call("getUpdates", |_| true, DEADLINE).await;

    let second = refused_at_start(beside_command(&bot.process, &fake, &["run"])).await;
    let text = stderr(&second);
    assert!(!second.status.success(), "a second docket run must not start: {text}");
    assert!(text.contains("another docket is running on the database"), "{text}");
    assert!(text.contains(&format!("pid {}", bot.process.pid())), "the message names the first: {text}");

    // The admin commands work beside the running bot, and the bot goes on polling.
    let jobs = beside(&bot.process, &fake, &["jobs"]);
    assert!(jobs.status.success(), "{}", stderr(&jobs));
    let polls = fake.calls_to("getUpdates").len();
    fake.wait_for_calls("getUpdates", |_| true, polls + 1, DEADLINE).await;

    // Stopped, it leaves the database free for the next one.
    assert!(sigterm(&bot.process).await.success());
    bot.process.start();
    let polls = fake.calls_to("getUpdates").len();
    bot.process
        .until("the restarted bot polls", DEADLINE, async || (fake.calls_to("getUpdates").len() > polls).then_some(()))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docket_nodes_lists_the_running_node_its_role_and_its_clean_stop() {
    let mut app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.node.name = docket::domain::NodeName::new("cli-node");
        c.node.dead_after = std::time::Duration::from_secs(10);
    })
    .await;
    // The first heartbeat (a quarter of dead_after after the start) carries the poller role.
    eventually(DEADLINE, async || {
        let nodes = app.store.nodes().await.map_err(|e| e.to_string())?;
        match nodes.as_slice() {
            [node] if node.beat.roles == ["poller"] => Ok(()),
            other => Err(format!("no heartbeat with the poller role yet: {other:?}")),
        }
    })
    .await;

    let (_dir, config) = child::storage_config(&app, "");
    let out = child::output(&["nodes", "--json"], Some(&config));
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("nodes --json is JSON");
    assert_eq!((json["node"].as_str(), json["status"].as_str()), (Some("cli-node"), Some("running")), "{json}");
    assert_eq!(json["roles"], serde_json::json!(["poller"]));
    assert!(json["bytes_budget"].as_u64().is_some_and(|b| b > 0), "{json}");
    let out = child::output(&["nodes"], Some(&config));
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(table.lines().nth(1).is_some_and(|l| l.starts_with("cli-node") && l.contains("running")), "{table}");

    app.stop().await;
    let out = child::output(&["nodes", "--json"], Some(&config));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("nodes --json is JSON");
    assert_eq!(json["status"].as_str(), Some("stopped"), "{json}");
    assert_eq!(json["roles"], serde_json::json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docket_drain_stops_a_running_node_in_order_from_outside() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let toml = child::run_config(dir.path(), &format!("sqlite://{}", dir.path().join("docket.db").display()))
        + "[workers]\nshutdown_grace = \"3s\"\n[node]\nname = \"drained\"\ndead_after = \"10s\"\n";
    let process = DocketProcess::new(dir, &toml, &fake);
    process.start();
    fake.wait_for_call("getUpdates", |c| c.status == 200, DEADLINE).await;
    let config = process.config_path().to_owned();

    let unknown = child::output(&["drain", "nobody"], Some(&config));
    assert!(!unknown.status.success());
    assert!(stderr(&unknown).contains("no node is named nobody"), "{}", stderr(&unknown));

    let out = child::output(&["drain", "drained"], Some(&config));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("drained drained and stopped at"));
    // It stopped as on SIGTERM, on its own, and with success.
    let status = process.exit_status(DEADLINE).await;
    let log = process.log_text();
    assert!(status.success(), "{status}: {log}");
    assert!(log.contains("docket drain asked this node to stop") && log.contains("stopped"), "{log}");
}
