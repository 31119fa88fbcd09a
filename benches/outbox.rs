//! The outbox benchmark (issue "The outbox"): the real `docket::app::start` against the fake
//! Bot API of the integration tests, which enforces Telegram's flood limits (about 30 calls a
//! second in all, one a second per private chat, 20 a minute per group) and answers 429 when
//! one is broken.
//!
//! 1. **Throughput**: N messages queued for N/2 private chats (two each, interleaved), sent by
//!    a fresh docket; the rate of successful sends (first to last arrival at the fake) against
//!    the configured `[outbox] global_per_second`, as a ratio, and the 429s the fake answered.
//! 2. **Ready → sendDocument**: documents from fresh chats, each download throttled to about
//!    2.5 s so the chat is idle (its ticket reply and first progress edit paced out) when the
//!    job turns `ready`; the time from the `ready` commit (`updated_at`) to the sendDocument
//!    request reaching the fake. Also the same for a quick job (no throttle), where the result
//!    has to wait for the chat's one-second pace after the ticket reply.
//!
//! `cargo bench --bench outbox` prints markdown on stdout (progress on stderr). Options after
//! `--`: `--runs N` (5), `--messages N` (500), `--rate N` (25), `--jobs N` (15),
//! `--dir PATH` (default `target/docket-bench-outbox`).

#![allow(clippy::print_stdout, reason = "a benchmark reports its tables on stdout")]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, ensure};
use bench_support::stats::{Spread, median, percentile};
use docket::app::Options;
use docket::config::{BotToken, Config, DatabaseUrl};
use docket::domain::NewMessage;
use docket::domain::{ChatRef, Clock, JobState, MessageKind, SystemClock};
use docket::store::{JobFilter, Store};
use fake_bot_api::{Call, DownloadFault, FakeTelegram};
use serde_json::Value;

/// The outbox benchmark: throughput under Telegram's limits, and ready → sendDocument.
#[derive(Debug, clap::Parser)]
#[command(bin_name = "cargo bench --bench outbox --")]
struct Args {
    /// Throughput runs.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Messages queued per throughput run (to half as many private chats).
    #[arg(long, default_value_t = 500)]
    messages: usize,
    /// `[outbox] global_per_second` of the throughput runs.
    #[arg(long, default_value_t = 25)]
    rate: u32,
    /// Documents per ready → sendDocument case.
    #[arg(long, default_value_t = 15)]
    jobs: usize,
    /// Where the databases and data folders go.
    #[arg(long, default_value_os_t = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/docket-bench-outbox"))]
    dir: PathBuf,
}

/// A fresh docket on a fresh SQLite database against `fake`.
async fn docket(fake: &FakeTelegram, dir: &Path, tune: impl FnOnce(&mut Config)) -> anyhow::Result<(Config, Store)> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let mut config = Config::from_toml_str("", None, Some(fake.api_url().as_str()))?;
    config.storage.database_url = DatabaseUrl::Sqlite(dir.join("docket.db"));
    config.storage.data_dir = dir.join("data");
    tune(&mut config);
    let store = Store::open(&config.storage.database_url).await?;
    Ok((config, store))
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|l| l.split(' ').next().unwrap_or("?").to_owned()).unwrap_or_default()
}

fn is_send(c: &Call) -> bool {
    c.method == "sendMessage" || c.method == "sendDocument" || c.method == "editMessageText"
}

struct Throughput {
    rate: f64,
    ratio: f64,
    answered_429: usize,
    violations: usize,
    seconds: f64,
}

async fn throughput(args: &Args, run: usize) -> anyhow::Result<Throughput> {
    let fake = FakeTelegram::start().await;
    let dir = args.dir.join(format!("throughput-{run}"));
    let rate = args.rate;
    let (config, store) = docket(&fake, &dir, |c| c.outbox.global_per_second = rate).await?;
    let now = SystemClock.now();
    let chats = (args.messages / 2).max(1);
    let mut tx = store.begin().await?;
    for n in 0..args.messages {
        let m = NewMessage {
            idempotency_key: docket::domain::IdempotencyKey::from_stored(format!("bench:{n}")),
            job: None,
            chat: ChatRef(1_000 + (n % chats) as i64),
            kind: MessageKind::Reply,
            body: format!("message {n}"),
            reply_to_message_id: None,
            buttons: Vec::new(),
            part: None,
        };
        tx.enqueue(&m, now).await?;
    }
    tx.commit().await?;
    let running = docket::app::start(&config, BotToken::new(fake.token()), Options::default()).await?;
    let deadline = Instant::now() + Duration::from_secs(60 + 3 * args.messages as u64 / u64::from(rate));
    loop {
        let ok = fake.calls_to("sendMessage").iter().filter(|c| c.status == 200).count();
        if ok >= args.messages {
            break;
        }
        ensure!(Instant::now() < deadline, "only {ok} of {} messages sent", args.messages);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    running.stop().await;
    store.close().await;
    let calls: Vec<Call> = fake.calls().into_iter().filter(is_send).collect();
    let delivered: Vec<&Call> = calls.iter().filter(|c| c.status == 200).collect();
    let (first, last) = (delivered.first().context("nothing sent")?.at, delivered.last().context("nothing")?.at);
    let seconds = last.duration_since(first).as_secs_f64();
    let achieved = (delivered.len() - 1) as f64 / seconds;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Throughput {
        rate: achieved,
        ratio: achieved / f64::from(rate),
        answered_429: calls.iter().filter(|c| c.status == 429).count(),
        violations: fake.violations().len(),
        seconds,
    })
}

/// Ready → sendDocument, in ms, for `jobs` documents from fresh chats.
async fn ready_to_send(args: &Args, throttle: Option<u64>) -> anyhow::Result<Vec<f64>> {
    let fake = FakeTelegram::start().await;
    let dir = args.dir.join("latency");
    let (config, store) = docket(&fake, &dir, |_| {}).await?;
    let running = docket::app::start(&config, BotToken::new(fake.token()), Options::default()).await?;
    // Instants (the fake's clock) → Unix milliseconds (the store's clock).
    let anchor = (Instant::now(), SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs_f64() * 1e3);
    let unix_ms = |i: Instant| anchor.1 + i.saturating_duration_since(anchor.0).as_secs_f64() * 1e3;
    let pdf = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pdf/text-1page.pdf"))?;
    let mut samples = Vec::new();
    for n in 0..args.jobs {
        let chat = 50_000 + n as i64;
        let file = fake.add_file(pdf.clone());
        if let Some(bytes_per_sec) = throttle {
            fake.fail_downloads_for(&file.file_id, DownloadFault::Throttle { bytes_per_sec }, Some(1));
        }
        fake.push_update(fake.document_update(chat, chat, &file, Some("contract.pdf"), Some("application/pdf")));
        let to_chat = move |c: &Call| c.params.get("chat_id").and_then(Value::as_i64) == Some(chat);
        let sent = fake.wait_for_call("sendDocument", to_chat, Duration::from_secs(30)).await;
        let jobs = store.jobs(&JobFilter { chat: Some(ChatRef(chat)), limit: 1, ..JobFilter::default() }).await?;
        let job = jobs.first().context("no job")?;
        ensure!(job.state == JobState::Ready, "job {} is {:?}", job.ticket, job.state);
        let ready_at = job.result.as_ref().context("no result")?.expires_at.as_millis() as f64
            - config.retention.result_ttl.as_secs_f64() * 1e3;
        samples.push(unix_ms(sent.at) - ready_at);
        tokio::time::sleep(Duration::from_millis(rand::random_range(300..900))).await;
    }
    ensure!(fake.violations().is_empty(), "limits broken: {:?}", fake.violations());
    running.stop().await;
    store.close().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(samples)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Args = bench_support::args();
    println!("## Outbox throughput under Telegram's limits\n");
    println!(
        "{} messages to {} private chats (two each), `global_per_second = {}`, `senders = 4`, the fake \
         enforcing ~30/s in all and 1/s per chat and answering 429 to a broken limit. Rate = (sends − 1) / \
         (last − first arrival at the fake).\n",
        args.messages,
        args.messages / 2,
        args.rate
    );
    println!(
        "| run | load | seconds | messages/s | ratio to the limit | 429s answered | violations |\n|---|---|---|---|---|---|---|"
    );
    let mut ratios = Vec::new();
    for run in 0..args.runs {
        eprintln!("throughput run {}/{}", run + 1, args.runs);
        let l = load();
        let t = throughput(&args, run).await?;
        println!(
            "| {} | {l} | {:.2} | {:.2} | {:.3} | {} | {} |",
            run + 1,
            t.seconds,
            t.rate,
            t.ratio,
            t.answered_429,
            t.violations
        );
        ratios.push(t.ratio);
    }
    let Spread { min: lo, median: ratio, max: hi } = Spread::of(&ratios);
    println!("\n**Median ratio {ratio:.3}** (range {lo:.3}–{hi:.3}; goal ≥ 0.95 with zero 429s).\n");

    println!("## Ready → sendDocument on an idle bot\n");
    for (label, throttle) in
        [("chat idle when the job turns ready (download throttled to ~2.5 s)", Some(1_200)), ("quick job", None)]
    {
        eprintln!("latency: {label}");
        let l = load();
        let s = ready_to_send(&args, throttle).await?;
        println!(
            "- {label}, {} jobs, load {l}: median **{:.1} ms**, p95 {:.1} ms, max {:.1} ms",
            s.len(),
            median(&s),
            percentile(&s, 95.0),
            percentile(&s, 100.0)
        );
    }
    Ok(())
}
