//! The SQLite WAL reserve (`[storage] sqlite_wal_reserve`): `docket run` grows the WAL file as it
//! starts, never into `[storage] min_free`, and a database whose WAL holds the reserve loses no
//! commit when the process is killed.

use std::path::{Path, PathBuf};

use docket::domain::{ChatRef, JobState};
use docket::store::{DatabaseUrl, JobFilter, Store};
use fake_bot_api::FakeTelegram;
use serde_json::Value;
use sqlx::Connection as _;

use crate::support::child::DocketProcess;
use crate::support::generated::generated_pdf;
use crate::support::{Backend, DEADLINE, TestApp, eventually, logs};

/// The reserve of these tests: three steps of growth.
const RESERVE: u64 = 24 * 1024 * 1024;

fn wal_of(db: &Path) -> PathBuf {
    PathBuf::from(format!("{}-wal", db.display()))
}

fn size_of(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reserved_wal_loses_no_commit_when_docket_is_killed() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("docket.db");
    let toml = format!(
        "[telegram]\npoll_timeout = \"1s\"\n[workers]\nlease = \"3s\"\n[storage]\ndatabase_url = \"sqlite://{}\"\ndata_dir = {:?}\n\
         min_free = \"1 MiB\"\nsqlite_wal_reserve = {RESERVE}\n",
        db.display(),
        dir.path().join("data").display().to_string()
    );
    let process = DocketProcess::new(dir, &toml, &fake);
    process.start();
    eventually(DEADLINE, async || {
        if process.log_text().contains("the SQLite WAL file is reserved") {
            Ok(())
        } else {
            Err(format!("the WAL holds {} bytes", size_of(&wal_of(&db))))
        }
    })
    .await;
    assert!(size_of(&wal_of(&db)) >= RESERVE, "the WAL holds {} bytes", size_of(&wal_of(&db)));

    // Committed after the reserve: the ticket reply goes out only once the job is recorded.
    let chat = 4_100;
    let file = fake.add_file(generated_pdf(2, 2_000, 7));
    fake.push_update(fake.document_update(chat, chat, &file, Some("kept.pdf"), Some("application/pdf")));
    let to_chat = move |c: &fake_bot_api::Call| c.params.get("chat_id").and_then(Value::as_i64) == Some(chat);
    fake.wait_for_call("sendMessage", to_chat, DEADLINE).await;
    process.kill();

    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.expect("open");
    let check: String = sqlx::query_scalar("PRAGMA integrity_check").fetch_one(&mut conn).await.expect("check");
    assert_eq!(check, "ok");
    conn.close().await.expect("close");
    let store = Store::open_existing(&DatabaseUrl::Sqlite(db.clone())).await.expect("the database opens");
    let filter = JobFilter { chat: Some(ChatRef(chat)), limit: 10, ..JobFilter::default() };
    assert_eq!(store.jobs(&filter).await.expect("jobs").len(), 1, "the job recorded before the kill is there");

    process.start();
    fake.wait_for_call("sendDocument", to_chat, DEADLINE).await;
    eventually(DEADLINE, async || {
        let jobs = store.jobs(&filter).await.map_err(|e| e.to_string())?;
        match jobs.as_slice() {
            [job] if job.state == JobState::Ready => Ok(()),
            other => Err(format!("jobs: {:?}", other.iter().map(|j| j.state).collect::<Vec<_>>())),
        }
    })
    .await;
    let results = fake.calls_to("sendDocument").iter().filter(|c| to_chat(c)).count();
    assert_eq!(results, 1, "one result");
    store.close().await;
    process.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_is_not_reserved_into_min_free() {
    let mut app = TestApp::spawn_with(Backend::Sqlite, |c| {
        c.storage.sqlite_wal_reserve = RESERVE;
        // More than any test machine has free: no room above it.
        c.storage.min_free = 1 << 60;
    })
    .await;
    eventually(DEADLINE, async || {
        if logs::captured().contains("the WAL file is reserved no larger than that room") {
            Ok(())
        } else {
            Err("no word on the reserve yet".to_owned())
        }
    })
    .await;
    let DatabaseUrl::Sqlite(db) = app.config.storage.database_url.clone() else { unreachable!() };
    let size = size_of(&wal_of(&db));
    assert!(size < RESERVE, "the WAL grew to {size} bytes");
    app.stop().await;
}
