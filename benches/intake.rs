//! The intake benchmark (issue "Scale and faults", point 5): how many updates a fresh docket on
//! SQLite records per second, without and with another connection holding a read transaction
//! open for the whole window, as a `docket jobs` left on a pager or a backup (`sqlite3 .backup`)
//! would.
//!
//! Each run prefills the fake Bot API with `--updates` document updates from `--chats` private
//! chats (each a file of its own), starts `docket::app::start` on a fresh database in `--dir`,
//! and lets it warm up until `--warmup` updates are confirmed. Then, for `--seconds`, it counts the
//! updates Telegram (the fake) saw confirmed; in the paired run another connection opens
//! `BEGIN; SELECT COUNT(*) FROM jobs` first (a WAL read transaction: its snapshot keeps every
//! checkpoint short of it) and ends it only after the window. Downloads are throttled to a crawl
//! so that the pools' claims and lease renewals run, as they do in a busy docket, but no
//! processing child competes with intake for the CPU; ticket replies go out at Telegram's limits
//! as always. Runs alternate without/with, and the share kept is computed per pair.
//!
//! `cargo bench --bench intake` prints markdown on stdout (progress on stderr). Options after
//! `--`: `--runs N` (3 pairs), `--seconds S` (30), `--updates N` (40000), `--chats N` (200),
//! `--warmup N` (300), `--dir PATH` (default `target/docket-bench-intake`; on the disk, not
//! tmpfs, so commits fsync as in production).

#![allow(clippy::print_stdout, reason = "a benchmark reports its tables on stdout")]

#[path = "common/host.rs"]
mod host;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use bench_support::stats::Spread;
use docket::app::Options;
use docket::config::{BotToken, Config, DatabaseUrl};
use fake_bot_api::{DownloadFault, FakeTelegram};
use sqlx::{Connection as _, SqliteConnection};

/// Bytes in a MiB.
const MIB: f64 = 1024.0 * 1024.0;

/// The intake benchmark: updates recorded per second on SQLite, without and with a long reader.
#[derive(Debug, clap::Parser)]
#[command(bin_name = "cargo bench --bench intake --")]
struct Args {
    /// Pairs of runs (without, then with the reader).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// The measured window, and how long the reader holds its transaction.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
    /// Updates waiting at the fake when docket starts; more than a window can record.
    #[arg(long, default_value_t = 40_000)]
    updates: usize,
    /// Private chats the updates come from.
    #[arg(long, default_value_t = 200)]
    chats: usize,
    /// Updates confirmed before the window opens.
    #[arg(long, default_value_t = 300)]
    warmup: usize,
    /// Where the databases and data folders go.
    #[arg(long, default_value_os_t = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/docket-bench-intake"))]
    dir: PathBuf,
}

/// One window's figures.
struct Window {
    recorded: usize,
    seconds: f64,
    /// The WAL's size when the window closed, in MiB.
    wal_mib: f64,
}

impl Window {
    fn rate(&self) -> f64 {
        self.recorded as f64 / self.seconds
    }
}

/// A document made of `n`'s digits: a file of its own, so every update is a job of its own.
fn tiny_pdf(n: usize) -> Vec<u8> {
    format!("%PDF-1.4\n% intake bench document {n}\n%%EOF\n").into_bytes()
}

/// Confirmed updates so far: the fake drops an update from its queue once a getUpdates offset
/// moves past it, which docket does only after the update's transaction committed.
fn confirmed(fake: &FakeTelegram, prefilled: usize) -> usize {
    prefilled - fake.pending_updates()
}

async fn window(args: &Args, run: usize, with_reader: bool) -> anyhow::Result<Window> {
    let fake = FakeTelegram::start().await;
    let dir = args.dir.join(format!("run-{run}-{}", if with_reader { "reader" } else { "alone" }));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("docket.db");
    let mut config = Config::from_toml_str("", None, Some(fake.api_url().as_str()))?;
    config.storage.database_url = DatabaseUrl::Sqlite(db.clone());
    config.storage.data_dir = dir.join("data");
    fake.fail_downloads(DownloadFault::Throttle { bytes_per_sec: 1 }, None);
    for n in 0..args.updates {
        let chat = 10_000 + (n % args.chats) as i64;
        let file = fake.add_file(tiny_pdf(n));
        fake.push_update(fake.document_update(chat, chat, &file, Some("scan.pdf"), Some("application/pdf")));
    }
    let running = docket::app::start(&config, BotToken::new(fake.token()), Options::default()).await?;
    let warm_by = Instant::now() + Duration::from_secs(120);
    while confirmed(&fake, args.updates) < args.warmup {
        ensure!(Instant::now() < warm_by, "docket confirmed only {} updates in 2 min", confirmed(&fake, args.updates));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let wal_size = || std::fs::metadata(dir.join("docket.db-wal")).map(|m| m.len()).unwrap_or(0);
    let mut reader = None;
    if with_reader {
        let mut conn = SqliteConnection::connect(&format!("sqlite://{}", db.display())).await?;
        sqlx::query("BEGIN").execute(&mut conn).await?;
        let _: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs").fetch_one(&mut conn).await?;
        reader = Some(conn);
    }
    let (start, before) = (Instant::now(), confirmed(&fake, args.updates));
    tokio::time::sleep(Duration::from_secs(args.seconds)).await;
    let (seconds, after) = (start.elapsed().as_secs_f64(), confirmed(&fake, args.updates));
    let wal_mib = wal_size() as f64 / MIB;
    ensure!(after < args.updates, "every update was recorded before the window closed: raise --updates");
    if let Some(mut conn) = reader {
        sqlx::query("COMMIT").execute(&mut conn).await?;
        conn.close().await?;
    }
    running.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Window { recorded: after - before, seconds, wal_mib })
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Args = bench_support::args();
    std::fs::create_dir_all(&args.dir)?;
    let mut out = String::new();
    writeln!(out, "## Intake on SQLite under a long reader\n")?;
    host::facts_head(&mut out, &args.dir)?;
    writeln!(out, "| SQLite | {} |\n", host::sqlite_version().await?)?;
    writeln!(
        out,
        "{} updates from {} chats waiting, {} s windows after {} confirmed; downloads throttled to 1 B/s.\n",
        args.updates, args.chats, args.seconds, args.warmup
    )?;
    writeln!(
        out,
        "| pair | load | alone: updates/s | WAL MiB | with a reader: updates/s | WAL MiB | share kept |\n|---|---|---|---|---|---|---|"
    )?;
    let mut shares = Vec::new();
    for run in 0..args.runs {
        eprintln!("pair {}/{}: alone", run + 1, args.runs);
        let load = host::load_triple();
        let alone = window(&args, run, false).await.context("the run without a reader")?;
        eprintln!("pair {}/{}: with a reader", run + 1, args.runs);
        let read = window(&args, run, true).await.context("the run with a reader")?;
        let share = read.rate() / alone.rate();
        writeln!(
            out,
            "| {} | {load} | {:.1} | {:.1} | {:.1} | {:.1} | {share:.3} |",
            run + 1,
            alone.rate(),
            alone.wal_mib,
            read.rate(),
            read.wal_mib
        )?;
        shares.push(share);
    }
    let Spread { min, median: share, max } = Spread::of(&shares);
    writeln!(out, "\n**Median share kept {share:.3}** (range {min:.3}–{max:.3}; goal ≥ 0.9).")?;
    print!("{out}");
    Ok(())
}
