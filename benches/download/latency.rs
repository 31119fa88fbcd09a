//! Accepted → first byte requested, on an idle bot: the real `docket::app::start` (SystemClock,
//! production polling pace) against the fake Bot API of the integration tests.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use docket::app::Options;
use docket::config::{BotToken, Config, DatabaseUrl};
use docket::domain::Job;
use docket::domain::{ChatRef, JobState};
use docket::store::{JobFilter, Store};
use fake_bot_api::{Call, FakeTelegram};
use serde_json::Value;

const CHAT: i64 = 4242;

/// One job's timeline, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Update pushed to the fake → `created_at` of the job (intake's clock when recording it).
    pub push_to_accepted: f64,
    /// `created_at` → the getFile request reaching the fake.
    pub accepted_to_get_file: f64,
    /// `created_at` → the file's GET request reaching the fake.
    pub accepted_to_get: f64,
}

#[derive(Debug)]
pub struct Report {
    pub samples: Vec<Sample>,
    /// Jobs that did not end `ready` (they still count if they were downloaded once).
    pub not_ready: usize,
}

pub async fn run(work: &Path, jobs: usize) -> anyhow::Result<Report> {
    let _ = std::fs::remove_dir_all(work);
    std::fs::create_dir_all(work)?;
    let fake = FakeTelegram::start().await;
    let mut config = Config::from_toml_str("", None, Some(fake.api_url().as_str()))?;
    config.storage.database_url = DatabaseUrl::Sqlite(work.join("docket.db"));
    config.storage.data_dir = work.join("data");
    // The production pace: idle workers poll every second, woken at once by a new job.
    let running = docket::app::start(&config, BotToken::new(fake.token()), Options::default()).await?;
    let store = Store::open(&config.storage.database_url).await?;

    // File GETs are not recorded as calls by the fake, only counted: a thread watches the counter.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (fake, stop) = (fake.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut seen = 0;
            let mut events: Vec<Instant> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let n = fake.downloads();
                if n > seen {
                    let now = Instant::now();
                    events.extend(std::iter::repeat_n(now, n - seen));
                    seen = n;
                }
                std::thread::sleep(Duration::from_micros(100));
            }
            events
        })
    };
    // Instants (the fake's clock) → Unix milliseconds (the store's clock).
    let anchor = (Instant::now(), SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs_f64() * 1e3);
    let unix_ms = |i: Instant| anchor.1 + i.saturating_duration_since(anchor.0).as_secs_f64() * 1e3;

    fake.wait_for_call("getUpdates", |_| true, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let pdf = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pdf/text-1page.pdf"))?;

    let mut timelines = Vec::new();
    let mut not_ready = 0;
    let mut documents_sent = 0;
    for _ in 0..jobs {
        let file = fake.add_file(pdf.clone());
        let update = fake.document_update(CHAT, CHAT, &file, Some("contract.pdf"), Some("application/pdf"));
        let pushed = Instant::now();
        fake.push_update(update);
        let job = wait_until_done(&store, &file.file_unique_id).await?;
        if job.state == JobState::Ready {
            documents_sent += 1;
            let to_chat = |c: &Call| c.params.get("chat_id").and_then(Value::as_i64) == Some(CHAT);
            fake.wait_for_calls("sendDocument", to_chat, documents_sent, Duration::from_secs(20)).await;
        } else {
            not_ready += 1;
        }
        let get_file = fake
            .calls_to("getFile")
            .into_iter()
            .find(|c| c.params.get("file_id").and_then(Value::as_str) == Some(file.file_id.as_str()))
            .context("the job was done without a getFile")?;
        timelines.push((pushed, job.created_at.as_millis() as f64, get_file.at));
        // Idle again, at a random phase of the workers' one-second idle poll.
        tokio::time::sleep(Duration::from_millis(rand::random_range(400..1400))).await;
    }
    stop.store(true, Ordering::Relaxed);
    let downloads = watcher.join().map_err(|_| anyhow::anyhow!("the download watcher panicked"))?;
    running.stop().await;
    store.close().await;
    if downloads.len() != jobs {
        bail!("{} file downloads for {jobs} jobs: a download was retried, the figures would be wrong", downloads.len());
    }
    let samples = timelines
        .into_iter()
        .zip(downloads)
        .map(|((pushed, accepted, get_file), get)| Sample {
            push_to_accepted: accepted - unix_ms(pushed),
            accepted_to_get_file: unix_ms(get_file) - accepted,
            accepted_to_get: unix_ms(get) - accepted,
        })
        .collect();
    let _ = std::fs::remove_dir_all(work);
    Ok(Report { samples, not_ready })
}

async fn wait_until_done(store: &Store, file_unique_id: &str) -> anyhow::Result<Job> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let jobs = store.jobs(&JobFilter { chat: Some(ChatRef(CHAT)), limit: 5, ..JobFilter::default() }).await?;
        if let Some(job) = jobs.into_iter().find(|j| j.submission.file_unique_id == file_unique_id)
            && matches!(job.state, JobState::Ready | JobState::Failed)
        {
            return Ok(job);
        }
        if Instant::now() > deadline {
            bail!("job for {file_unique_id} not done within 30 s");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}
