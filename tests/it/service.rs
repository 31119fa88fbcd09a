//! docket as a service under systemd, run as the real binary: the metrics and health endpoint,
//! readiness and keep-alives on `NOTIFY_SOCKET`, reloading the configuration on SIGHUP, and a log
//! that carries each job's ticket and never a secret.

use std::net::SocketAddr;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::Duration;

use fake_bot_api::{FakeTelegram, TEST_TOKEN};
use prometheus_parse::{Scrape, Value};

use crate::support::calls::to_chat;
use crate::support::child::DocketProcess;
use crate::support::{DEADLINE, fixture};

/// A free loopback port's address.
fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr")
}

/// `docket run` on a folder of its own with `toml`, started, the metrics endpoint at the
/// returned address.
fn started_with_endpoint(fake: &FakeTelegram, toml: &str) -> (DocketProcess, SocketAddr) {
    let listen = free_addr();
    let toml = format!("{toml}\n[metrics]\nlisten = \"{listen}\"\n");
    let dir = tempfile::tempdir().expect("tempdir");
    let process = DocketProcess::new(dir, &toml, fake);
    process.start();
    (process, listen)
}

const QUICK: &str = "[telegram]\npoll_timeout = \"1s\"\n[workers]\nshutdown_grace = \"2s\"\n";

/// `GET http://addr/path`: status and body, or `None` while nothing answers.
async fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let resp = reqwest::get(format!("http://{addr}{path}")).await.ok()?;
    let status = resp.status().as_u16();
    Some((status, resp.text().await.ok()?))
}

/// `/metrics`, parsed by a Prometheus text-format parser.
async fn scrape(addr: SocketAddr) -> Option<Scrape> {
    let (status, body) = get(addr, "/metrics").await?;
    assert_eq!(status, 200, "{body}");
    let scrape = Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).expect("the Prometheus text format");
    Some(scrape)
}

/// The value of the series `name` whose labels include `labels` (a histogram's count).
fn series(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name)
        .find(|s| labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| match &s.value {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            Value::Histogram(buckets) => buckets.iter().map(|b| b.count).fold(0.0, f64::max),
            Value::Summary(_) => f64::NAN,
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_from_the_database_and_the_pipeline_move_after_a_job() {
    let fake = FakeTelegram::start().await;
    let (process, addr) = started_with_endpoint(&fake, QUICK);
    let before = process.until("/metrics", DEADLINE, async || scrape(addr).await).await;
    // The gauges read from the database are there before any job, at zero.
    for state in ["accepted", "fetched", "processing", "ready", "failed", "expired"] {
        assert_eq!(series(&before, "docket_jobs", &[("state", state)]), Some(0.0), "docket_jobs{{state={state}}}");
    }
    assert_eq!(series(&before, "docket_outbox_messages", &[("state", "sent")]), Some(0.0));
    assert_eq!(series(&before, "docket_dead_chats", &[]), Some(0.0));
    assert_eq!(series(&before, "docket_oldest_waiting_job_seconds", &[]), Some(0.0));
    assert!(series(&before, "docket_budget_bytes", &[]).is_some_and(|b| b > 0.0));
    assert!(series(&before, "docket_memory_budget_bytes", &[]).is_some_and(|b| b > 0.0));
    assert_eq!(series(&before, "docket_memory_budget_reserved_bytes", &[]), Some(0.0));

    let file = fake.add_file(fixture("pdf/text-1page.pdf"));
    fake.push_update(fake.document_update(95, 95, &file, Some("m.pdf"), Some("application/pdf")));
    fake.wait_for_call("sendDocument", to_chat(95), DEADLINE).await;

    let after = process
        .until("the ready job and its sent messages in /metrics", DEADLINE, async || {
            let s = scrape(addr).await?;
            (series(&s, "docket_jobs", &[("state", "ready")]) == Some(1.0)
                && series(&s, "docket_outbox_messages", &[("state", "sent")]).is_some_and(|n| n >= 2.0))
            .then_some(s)
        })
        .await;
    assert_eq!(series(&after, "docket_jobs", &[("state", "accepted")]), Some(0.0));
    let download = series(&after, "docket_download_seconds", &[("operation", "optimize"), ("result", "done")]);
    assert_eq!(download, Some(1.0), "one download timed");
    let processing = series(&after, "docket_processing_seconds", &[("operation", "optimize"), ("result", "done")]);
    assert_eq!(processing, Some(1.0), "one processing timed");
    assert!(series(&after, "docket_updates_received_total", &[]).is_some_and(|n| n >= 1.0));
    assert!(series(&after, "docket_download_bytes_total", &[]).is_some_and(|n| n > 0.0));
    assert!(series(&after, "docket_messages_sent_total", &[("kind", "result")]).is_some_and(|n| n >= 1.0));
    assert!(series(&after, "docket_sends_total", &[("outcome", "delivered")]).is_some_and(|n| n >= 2.0));
    assert!(series(&after, "docket_budget_reserved_bytes", &[]).is_some());
    assert!(series(&after, "docket_data_free_bytes", &[]).is_some_and(|free| free > 0.0));
    assert_eq!(series(&after, "docket_data_folder_low", &[]), Some(0.0), "the data folder has room");
    stops_cleanly(&process).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_turns_503_while_the_data_folder_cannot_be_written() {
    let fake = FakeTelegram::start().await;
    let (process, addr) = started_with_endpoint(&fake, QUICK);
    let (status, body) = process.until("/healthz", DEADLINE, async || get(addr, "/healthz").await).await;
    assert_eq!((status, body.as_str()), (200, "ok\n"));

    // Tests run as root, whom file modes do not stop: take the folder away instead, as a lost
    // mount would.
    let data = process.dir().join("data");
    let moved = process.dir().join("data-away");
    std::fs::rename(&data, &moved).expect("move the data folder away");
    let (status, body) = healthz_answers(&process, addr, 503, "/healthz to answer 503").await;
    assert_eq!(status, 503);
    assert!(body.contains("data folder") && body.contains("not writable"), "{body}");
    assert!(!body.contains("database unreachable"), "only the folder is wrong: {body}");

    std::fs::rename(&moved, &data).expect("bring the data folder back");
    healthz_answers(&process, addr, 200, "/healthz to answer 200 again").await;
    stops_cleanly(&process).await;
}

#[cfg(feature = "postgres-tests")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_turns_503_while_the_database_refuses_connections() {
    use sqlx::Connection;

    let db = crate::support::postgres::TestDatabase::create().await;
    let name = url::Url::parse(&db.url).expect("a URL").path().trim_start_matches('/').to_owned();
    let fake = FakeTelegram::start().await;
    let (process, addr) = started_with_endpoint(&fake, &format!("{QUICK}[storage]\ndatabase_url = \"{}\"\n", db.url));
    healthz_answers(&process, addr, 200, "/healthz 200").await;

    let admin = std::env::var("DATABASE_URL").expect("DATABASE_URL");
    let mut conn = sqlx::PgConnection::connect(&admin).await.expect("connect to the server");
    let run = async |conn: &mut sqlx::PgConnection, sql: String| {
        sqlx::query(sqlx::AssertSqlSafe(sql)).execute(conn).await.expect("admin statement");
    };
    // No new connections, and docket's open ones cut: as a server going away looks to docket.
    run(&mut conn, format!("ALTER DATABASE {name} WITH ALLOW_CONNECTIONS false")).await;
    run(&mut conn, format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")).await;
    let (_, body) = healthz_answers(&process, addr, 503, "/healthz 503").await;
    assert!(body.contains("database unreachable"), "{body}");
    assert!(!body.contains("data folder"), "only the database is wrong: {body}");

    run(&mut conn, format!("ALTER DATABASE {name} WITH ALLOW_CONNECTIONS true")).await;
    healthz_answers(&process, addr, 200, "/healthz 200 again").await;
    stops_cleanly(&process).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_names_a_silent_poller() {
    let fake = FakeTelegram::start().await;
    let (process, addr) = started_with_endpoint(&fake, QUICK);
    healthz_answers(&process, addr, 200, "/healthz 200").await;
    // getUpdates fails (a 5xx holds teloxide back 10 s each time): the poller hears nothing for
    // more than 2 × poll_timeout (1 s).
    for _ in 0..5 {
        fake.fail_next("getUpdates", fake_bot_api::Fault::ServerError(502));
    }
    let (_, body) = healthz_answers(&process, addr, 503, "/healthz 503").await;
    assert!(body.contains("poller"), "{body}");
    stops_cleanly(&process).await;
}

/// Binds a datagram socket for `NOTIFY_SOCKET` in `dir`, as systemd does.
fn notify_socket(dir: &Path) -> (UnixDatagram, String) {
    let path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&path).expect("bind the notify socket");
    socket.set_read_timeout(Some(Duration::from_millis(200))).expect("read timeout");
    (socket, path.to_string_lossy().into_owned())
}

/// Waits for a datagram on `socket` that has the line `line`; the messages read meanwhile are
/// kept in `seen`.
async fn wait_for_notice(socket: &UnixDatagram, line: &str, process: &DocketProcess, seen: &mut Vec<String>) {
    let mut buf = [0u8; 4096];
    process
        .until(&format!("{line} on NOTIFY_SOCKET (seen: {seen:?})"), DEADLINE, async || {
            let n = socket.recv(&mut buf).ok()?;
            let message = String::from_utf8_lossy(&buf[..n]).into_owned();
            let found = message.lines().any(|l| l == line);
            seen.push(message);
            found.then_some(())
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_keep_alives_and_reloads_are_told_to_systemd() {
    let fake = FakeTelegram::start().await;
    let socket_dir = tempfile::tempdir().expect("tempdir");
    let (socket, path) = notify_socket(socket_dir.path());
    let dir = tempfile::tempdir().expect("tempdir");
    let process = DocketProcess::new(dir, QUICK, &fake)
        .env("NOTIFY_SOCKET", &path)
        // A 400 ms watchdog: keep-alives every 200 ms.
        .env("WATCHDOG_USEC", "400000");
    process.start();
    let mut seen = Vec::new();
    wait_for_notice(&socket, "READY=1", &process, &mut seen).await;
    // Ready comes after migrations and the startup janitor pass: the database exists by now.
    assert!(process.dir().join("data").join("docket.db").exists());
    assert!(process.log_text().contains("docket is running"), "{}", process.log_text());
    seen.clear();
    wait_for_notice(&socket, "WATCHDOG=1", &process, &mut seen).await;
    wait_for_notice(&socket, "WATCHDOG=1", &process, &mut seen).await;

    process.signal("HUP");
    seen.clear();
    wait_for_notice(&socket, "RELOADING=1", &process, &mut seen).await;
    wait_for_notice(&socket, "READY=1", &process, &mut seen).await;
    assert!(seen.iter().any(|m| m.lines().any(|l| l.starts_with("MONOTONIC_USEC="))), "{seen:?}");

    process.terminate();
    wait_for_notice(&socket, "STOPPING=1", &process, &mut seen).await;
    let exit = process.exit_status(DEADLINE).await;
    assert!(exit.success(), "{exit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_applies_a_valid_configuration_and_keeps_the_old_one_over_an_invalid_one() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let process = DocketProcess::new(dir, QUICK, &fake);
    process.start();
    fake.wait_for_call("getUpdates", |_| true, DEADLINE).await;

    // Everyone may use the bot; after the reload only user 1 (and the admin 2).
    std::fs::write(
        process.config_path(),
        format!("{QUICK}[access]\nallowed_users = [1]\nadmins = [2]\n[storage]\ndata_dir = \"elsewhere\"\n"),
    )
    .expect("rewrite the configuration");
    process.signal("HUP");
    process
        .until("the reload in the log", DEADLINE, async || {
            process.log_text().contains("configuration reloaded").then_some(())
        })
        .await;
    let log = process.log_text();
    assert!(log.contains("need a restart") && log.contains("[storage] data_dir"), "{log}");
    assert!(!process.dir().join("elsewhere").exists(), "the data folder stays where it was until a restart");

    fake.push_update(fake.text_update(500, 500, "/start"));
    let refusal = fake.wait_for_call("sendMessage", to_chat(500), DEADLINE).await;
    assert!(refusal.params["text"].as_str().is_some_and(|t| t.contains("this bot is private")), "{:?}", refusal.params);

    // A broken file: refused with the key named, and the running settings stay.
    std::fs::write(
        process.config_path(),
        format!("{QUICK}[access]\nallowed_users = [1]\n[retention]\nresult_ttl = \"soon\"\n"),
    )
    .expect("rewrite the configuration");
    process.signal("HUP");
    process
        .until("the refusal in the log", DEADLINE, async || process.log_text().contains("is refused").then_some(()))
        .await;
    assert!(process.log_text().contains("[retention] result_ttl = \"soon\""), "{}", process.log_text());
    fake.push_update(fake.text_update(501, 501, "/start"));
    let refusal = fake.wait_for_call("sendMessage", to_chat(501), DEADLINE).await;
    assert!(refusal.params["text"].as_str().is_some_and(|t| t.contains("this bot is private")), "{:?}", refusal.params);

    // Back to everyone, and to the data folder in use: nothing needs a restart any more.
    std::fs::write(process.config_path(), QUICK).expect("rewrite the configuration");
    process.signal("HUP");
    process
        .until("the third reload in the log", DEADLINE, async || {
            process.log_text().lines().any(|l| l.ends_with("configuration reloaded")).then_some(())
        })
        .await;
    fake.push_update(fake.text_update(502, 502, "/start"));
    let welcome = fake.wait_for_call("sendMessage", to_chat(502), DEADLINE).await;
    assert!(
        !welcome.params["text"].as_str().is_some_and(|t| t.contains("this bot is private")),
        "{:?}",
        welcome.params
    );
    let exit = stop(&process).await;
    assert!(exit.success(), "SIGHUP did not end the process: {exit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_level_comes_from_the_file_and_a_reload_changes_it() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let quiet = format!("{QUICK}[log]\nlevel = \"warn\"\n");
    let process = DocketProcess::new(dir, &quiet, &fake).without_env("RUST_LOG");
    process.start();
    fake.wait_for_call("getUpdates", |_| true, DEADLINE).await;
    // At `info` this line would be there by now: it is written after getMe, before polling starts.
    assert!(!process.log_text().contains("connected to the Bot API"), "{}", process.log_text());

    std::fs::write(process.config_path(), format!("{QUICK}[log]\nlevel = \"info\"\n")).expect("rewrite");
    process.signal("HUP");
    process
        .until("an info line after the reload", DEADLINE, async || {
            process.log_text().contains("configuration reloaded").then_some(())
        })
        .await;
    stops_cleanly(&process).await;
    assert!(process.log_text().contains("shutting down"), "{}", process.log_text());
}

/// A whole job through the real binary with the given `[log] format`, at debug level for
/// everything: each line about the job carries its ticket, and neither the token, nor a file
/// download URL, nor the local server's path (which holds the token) appears anywhere in what
/// the process wrote to stdout and stderr.
async fn a_full_run_writes_no_secret(format: &str) {
    let fake = FakeTelegram::start().await;
    let server_dir = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    let toml = format!("{QUICK}[log]\nformat = \"{format}\"\n");
    let process = DocketProcess::new(dir, &toml, &fake).env("RUST_LOG", "trace").stdout_to_log();
    process.start();
    let file = fake.add_file(fixture("pdf/text-1page.pdf"));
    fake.push_update(fake.document_update(97, 97, &file, Some("remote.pdf"), Some("application/pdf")));
    fake.wait_for_call("sendDocument", to_chat(97), DEADLINE).await;
    stops_cleanly(&process).await;

    // The same with a local Bot API server, whose getFile answers a path under <dir>/<token>/.
    let local = toml.replace("poll_timeout = \"1s\"\n", "poll_timeout = \"1s\"\nlocal_api = true\n");
    std::fs::write(process.config_path(), local).expect("rewrite the configuration");
    fake.set_local_mode(server_dir.path());
    process.start();
    let file = fake.add_file(fixture("pdf/text-1page.pdf"));
    fake.push_update(fake.document_update(98, 98, &file, Some("local.pdf"), Some("application/pdf")));
    fake.wait_for_call("sendDocument", to_chat(98), DEADLINE).await;
    stops_cleanly(&process).await;

    let log = process.log_text();
    let secret = TEST_TOKEN.split(':').nth(1).expect("the token has a secret half");
    assert!(!log.contains(secret), "the bot token (or a path holding it) leaked into the output");
    assert!(!log.contains("/file/bot"), "a file download URL leaked into the output");
    assert!(!log.contains(&server_dir.path().to_string_lossy().into_owned()), "the local server's path leaked");
    // The trace level really was on (the scan saw the chattiest output there is).
    assert!(log.contains("TRACE"), "no trace lines: is RUST_LOG applied?");

    // The job's whole story is found by its ticket.
    let story: Vec<&str> = log.lines().filter(|l| l.contains("#1")).collect();
    for event in ["accepted a document", "downloaded and verified", "working on job"] {
        assert!(story.iter().any(|l| l.contains(event)), "no {event:?} line carries #1:\n{}", story.join("\n"));
    }
    if format == "json" {
        let lines: Vec<serde_json::Value> = log
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).expect("every JSON line parses"))
            .collect();
        assert!(lines.iter().any(|l| l["span"]["ticket"] == "#1" || l["fields"]["ticket"] == "#1"), "no ticket field");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_run_in_text_writes_no_secret_and_tells_a_job_by_its_ticket() {
    a_full_run_writes_no_secret("text").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_run_in_json_writes_no_secret_and_tells_a_job_by_its_ticket() {
    a_full_run_writes_no_secret("json").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigterm_while_starting_is_a_clean_stop_once_started() {
    let fake = FakeTelegram::start().await;
    // The start waits on getMe: a SIGTERM now comes before any loop runs.
    let get_me = fake.hold_next("getMe");
    let dir = tempfile::tempdir().expect("tempdir");
    let process = DocketProcess::new(dir, QUICK, &fake);
    process.start();
    get_me.arrived(DEADLINE).await;
    process.terminate();
    get_me.release();
    // Caught and kept for when the start is done: the default action would end the process by
    // the signal, before it could stop its loops and record the stop.
    let exit = process.exit_status(DEADLINE).await;
    assert!(exit.success(), "{exit:?}; its log:\n{}", process.log_text());
}

/// SIGTERM, then the exit status.
async fn stop(process: &DocketProcess) -> std::process::ExitStatus {
    process.terminate();
    process.exit_status(DEADLINE).await
}

/// SIGTERM, after which the process must end with success.
async fn stops_cleanly(process: &DocketProcess) {
    let exit = stop(process).await;
    assert!(exit.success(), "{exit:?}");
}

/// Waits until `/healthz` at `addr` answers `status` (`what` names the wait in a failure);
/// returns the answer's status and body.
async fn healthz_answers(process: &DocketProcess, addr: SocketAddr, status: u16, what: &str) -> (u16, String) {
    process.until(what, DEADLINE, async || get(addr, "/healthz").await.filter(|(s, _)| *s == status)).await
}
