//! The queue benchmark (issue "Several hosts on PostgreSQL"): docket's own `Store` on a fresh
//! SQLite file and on a PostgreSQL database, side by side; results and their reading in
//! BENCHMARKS.md.
//!
//! 1. **Throughput**: N jobs are recorded (`Tx::insert_job`, 500 to a transaction, untimed), then
//!    W workers (tokio tasks; 1, 4 and 16) take them through the pipeline's two stages with a
//!    no-op operation, one timed phase per stage:
//!    - the **download step**, as the download pool claims: under one process-wide lock (the
//!      byte budget's), `next_waiting_download` then `claim_download` with the default
//!      `[workers] per_chat` and room for any file; then `mark_fetched` with a dummy source;
//!    - the **process step**, as the processing pool claims: `claim_job(Stage::Process)`, then
//!      `complete_job` with a dummy result and no outgoing messages.
//!
//!    A phase ends when its workers find nothing left to claim. The process step is the "job
//!    claimed and completed" of the goals; the lifecycle rate is N over both phases. N is sized
//!    from an untimed warm-up run so that a run takes about `--seconds`.
//! 2. **Insert → claim, idle**: one worker waits the way docket's pools do (interest in a
//!    `tokio::sync::Notify` registered before it looks; a poll every second as the fallback);
//!    jobs are recorded one at a time, 20–60 ms apart. On SQLite the recording code notifies the
//!    worker after its commit, as intake does. On PostgreSQL the job is recorded through a second
//!    `Store` (another host) that notifies nobody, and the worker is woken by `Store::changes`
//!    (LISTEN/NOTIFY), relayed to its `Notify` as docket relays it. The time from the insert's
//!    commit returning to the worker being woken, and to its claim returning the job.
//! 3. **A long transaction**: runs as in 1 at 4 workers, longer (`--long-seconds`), paired,
//!    without and with another connection holding a transaction open across the timed phases
//!    (PostgreSQL: `BEGIN ISOLATION LEVEL REPEATABLE READ` and a `SELECT` on `jobs`, which keeps
//!    its snapshot and so holds back the removal of dead rows; SQLite: a WAL read transaction,
//!    which keeps checkpoints from recycling the WAL). The share of throughput kept, per pair.
//!
//! Parts 1 and 3 run on durable storage as docket configures it (SQLite `synchronous = FULL` on
//! the disk of `--dir`; PostgreSQL as the server is set up). With `--unsynced-runs N` (1 by
//! default; 0 skips it), part 1 runs again without the flush per commit (SQLite on /dev/shm,
//! where fsync does nothing; PostgreSQL with `synchronous_commit = off` for the benchmark's own
//! connections), to show what the flushes cost, and so does part 3, whose figures the disk's
//! varying flush times blur otherwise.
//!
//! 5. **The database's own ceiling** (`ceiling.rs`): docket's schema with durable commits, but
//!    claims and completions of k jobs per statement and transaction, written in the bench and
//!    run on connections of its own (k = 1, 100, 1000; 1 and 4 connections): how far batching
//!    inside docket could take the rate on this machine at most.
//!
//! `cargo bench --bench queue` prints markdown on stdout (progress on stderr); 3.5–4.5 minutes
//! on 2 busy cores. Options after `--`: `--runs N` (3), `--workers 1,4,16`, `--seconds S` (2),
//! `--long-seconds S` (4, the runs of part 3), `--latency-jobs N` (100), `--unsynced-runs N` (1),
//! `--ceiling-runs N` (3; 0 skips part 5), `--ceiling-batches 1,100,1000`, `--ceiling-workers 1,4`,
//! `--postgres URL` (or `DATABASE_URL`; a server where the benchmark may create and drop the
//! database `docket_bench_queue`; without one, SQLite only), `--dir PATH` (default
//! `target/docket-bench-queue`; on the disk, not tmpfs, so commits fsync).

#![allow(clippy::print_stdout, reason = "a benchmark reports its tables on stdout")]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use bench_support::stats::{Spread, median, percentile, ratios};
use docket::config::Config;
use docket::domain::{ChatRef, Clock, MessageId, Operation, Submission, SystemClock, Ticket, UpdateId, UserId};
use docket::store::{Change, ClaimLimits, Completion, DatabaseUrl, Stage, Store};
use sqlx::Connection;
use tokio::sync::{Mutex, Notify, mpsc};

#[path = "queue/ceiling.rs"]
mod ceiling;
#[path = "common/host.rs"]
mod host;

/// The goals of the issue, as it states them (published figures of other queues, not run here).
const GOAL_SQLITE_PER_SEC: f64 = 20_000.0;
const GOAL_POSTGRES_PER_SEC: f64 = 50_000.0;
const GOAL_LATENCY_MS: f64 = 4.0;
const GOAL_SHARE_KEPT: f64 = 0.95;

/// The scratch database on the PostgreSQL server.
const PG_DATABASE: &str = "docket_bench_queue";
/// Jobs recorded per transaction when filling the queue.
const FILL_BATCH: usize = 500;
/// Jobs of the untimed warm-up run that sizes N.
const WARM_UP_JOBS: usize = 100;

/// The queue benchmark (see BENCHMARKS.md).
#[derive(Debug, clap::Parser)]
#[command(bin_name = "cargo bench --bench queue --")]
struct Args {
    /// Timed runs per backend and worker count (more than 0).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Worker counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 4, 16])]
    workers: Vec<usize>,
    /// About how long one run takes (both phases): N is sized from a warm-up run to fit.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// About how long one run of the long-transaction part takes (N from part 1's rate).
    #[arg(long, default_value_t = 4.0)]
    long_seconds: f64,
    /// Jobs of the insert → claim latency part, per backend.
    #[arg(long, default_value_t = 100)]
    latency_jobs: usize,
    /// Runs per worker count without the flush per commit (0: skip that part).
    #[arg(long, default_value_t = 1)]
    unsynced_runs: usize,
    /// A PostgreSQL server where the benchmark may create and drop `docket_bench_queue`.
    #[arg(long, value_name = "URL", env = "DATABASE_URL")]
    postgres: Option<String>,
    /// Runs per cell of part 5, the database's own ceiling (0: skip that part).
    #[arg(long, default_value_t = 3)]
    ceiling_runs: usize,
    /// Batch sizes of part 5, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 100, 1000])]
    ceiling_batches: Vec<usize>,
    /// Connections of part 5, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 4])]
    ceiling_workers: Vec<usize>,
    /// Where the SQLite files go: on the disk, not tmpfs, so commits fsync.
    #[arg(long, default_value_os_t = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/docket-bench-queue"))]
    dir: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args: Args = bench_support::args();
    ensure!(args.runs > 0 && !args.workers.is_empty() && args.workers.iter().all(|w| *w > 0), "--runs, --workers > 0");
    ensure!(
        args.seconds > 0.0 && args.long_seconds > 0.0 && args.latency_jobs > 0,
        "--seconds, --long-seconds, --latency-jobs > 0"
    );
    ensure!(
        args.ceiling_batches.iter().all(|b| *b > 0) && args.ceiling_workers.iter().all(|w| *w > 0),
        "--ceiling-batches, --ceiling-workers > 0"
    );
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(run(args))
}

// ---------------------------------------------------------------------------------------------
// Where a run's store lives
// ---------------------------------------------------------------------------------------------

/// The two backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Self::Sqlite => "SQLite",
            Self::Postgres => "PostgreSQL",
        }
    }
    fn goal(self) -> f64 {
        match self {
            Self::Sqlite => GOAL_SQLITE_PER_SEC,
            Self::Postgres => GOAL_POSTGRES_PER_SEC,
        }
    }
    fn goal_label(self) -> &'static str {
        match self {
            Self::Sqlite => "20,000",
            Self::Postgres => "50,000",
        }
    }
}

/// A database a run gets a fresh, empty store on.
#[derive(Debug, Clone)]
enum Db {
    /// A new file in this folder per run.
    Sqlite(PathBuf),
    /// The scratch database, emptied per run (`TRUNCATE`), at this URL.
    Postgres(String),
}

impl Db {
    fn backend(&self) -> Backend {
        match self {
            Self::Sqlite(_) => Backend::Sqlite,
            Self::Postgres(_) => Backend::Postgres,
        }
    }

    fn sqlite_file(dir: &Path) -> PathBuf {
        dir.join("run/docket.db")
    }

    /// An empty store (docket's schema, no rows).
    async fn fresh(&self) -> anyhow::Result<Store> {
        match self {
            Self::Sqlite(dir) => {
                let run = dir.join("run");
                if run.exists() {
                    std::fs::remove_dir_all(&run)?;
                }
                Ok(Store::open(&DatabaseUrl::Sqlite(Self::sqlite_file(dir))).await?)
            }
            Self::Postgres(url) => {
                let store = Store::open(&DatabaseUrl::Postgres(url.clone())).await?;
                let mut c = sqlx::PgConnection::connect(url).await?;
                sqlx::query("TRUNCATE jobs, outbox RESTART IDENTITY CASCADE").execute(&mut c).await?;
                c.close().await?;
                Ok(store)
            }
        }
    }

    /// Another connection holding a transaction open (see part 3), until dropped.
    async fn hold_transaction(&self) -> anyhow::Result<Holder> {
        match self {
            Self::Sqlite(dir) => {
                let options = sqlx::sqlite::SqliteConnectOptions::new().filename(Self::sqlite_file(dir));
                let mut c = sqlx::SqliteConnection::connect_with(&options).await?;
                sqlx::query("BEGIN").execute(&mut c).await?;
                let _: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs").fetch_one(&mut c).await?;
                Ok(Holder::Sqlite(c))
            }
            Self::Postgres(url) => {
                let mut c = sqlx::PgConnection::connect(url).await?;
                sqlx::query("BEGIN ISOLATION LEVEL REPEATABLE READ").execute(&mut c).await?;
                let _: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs").fetch_one(&mut c).await?;
                // The snapshot is held: the server keeps the rows it might still read.
                let mut other = sqlx::PgConnection::connect(url).await?;
                let held: bool =
                    sqlx::query_scalar("SELECT backend_xmin IS NOT NULL FROM pg_stat_activity WHERE pid = $1")
                        .bind(pg_backend_pid(&mut c).await?)
                        .fetch_one(&mut other)
                        .await?;
                other.close().await?;
                ensure!(held, "the held transaction keeps no snapshot");
                Ok(Holder::Postgres(c))
            }
        }
    }

    /// The size of the SQLite WAL file now (0 on PostgreSQL).
    fn wal_bytes(&self) -> u64 {
        match self {
            Self::Sqlite(dir) => std::fs::metadata(dir.join("run/docket.db-wal")).map(|m| m.len()).unwrap_or(0),
            Self::Postgres(_) => 0,
        }
    }
}

async fn pg_backend_pid(c: &mut sqlx::PgConnection) -> anyhow::Result<i32> {
    Ok(sqlx::query_scalar("SELECT pg_backend_pid()").fetch_one(c).await?)
}

/// A connection with a transaction open; dropping it ends the session and the transaction.
enum Holder {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl Holder {
    async fn release(self) -> anyhow::Result<()> {
        match self {
            Self::Sqlite(mut c) => {
                sqlx::query("ROLLBACK").execute(&mut c).await?;
                c.close().await?;
            }
            Self::Postgres(mut c) => {
                sqlx::query("ROLLBACK").execute(&mut c).await?;
                c.close().await?;
            }
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Jobs
// ---------------------------------------------------------------------------------------------

/// Job `n`, from a chat of its own (so the per-chat bound never holds a claim back).
fn submission(n: usize) -> Submission {
    let n = n as i64;
    Submission {
        update_id: UpdateId(1_000_000 + n),
        chat: ChatRef(10_000 + n),
        user_id: Some(UserId(10_000 + n)),
        message_id: MessageId(n + 1),
        file_id: format!("BQACAgIAAxkBAAI{n}-file-id-of-telegram"),
        file_unique_id: format!("AgAD{n}"),
        declared_name: Some(format!("contract {n}.pdf")),
        declared_mime: Some("application/pdf".into()),
        declared_size: Some(150_000),
        operation: Operation::Optimize,
        chosen_by_default: false,
        language_code: None,
        run_of: None,
    }
}

/// Records jobs `from..to`, [`FILL_BATCH`] to a transaction.
async fn fill(store: &Store, from: usize, to: usize) -> anyhow::Result<()> {
    let mut n = from;
    while n < to {
        let mut tx = store.begin().await?;
        let end = (n + FILL_BATCH).min(to);
        for k in n..end {
            tx.insert_job(&submission(k), SystemClock.now()).await?;
        }
        tx.commit().await?;
        n = end;
    }
    Ok(())
}

/// What the pipeline settings give the claims: the default configuration's lease and per-chat
/// bound, and a byte budget with room for any file.
#[derive(Debug, Clone, Copy)]
struct Claims {
    lease: Duration,
    limits: ClaimLimits,
}

impl Claims {
    fn from_defaults() -> anyhow::Result<Self> {
        let config = Config::from_toml_str("", None, None)?;
        let limit = i64::try_from(config.download_limit())?;
        let limits =
            ClaimLimits { unknown_size: limit, max_size: limit, per_chat: i64::try_from(config.workers.per_chat)? };
        Ok(Self { lease: config.workers.lease, limits })
    }
}

/// The download pool's claim: under the process-wide lock, the head of the queue, then the claim.
async fn claim_download(
    store: &Store,
    lock: &Mutex<()>,
    owner: &str,
    claims: &Claims,
) -> anyhow::Result<Option<docket::domain::Job>> {
    let _claiming = lock.lock().await;
    let now = SystemClock.now();
    if store.next_waiting_download(now).await?.is_none() {
        return Ok(None);
    }
    Ok(store.claim_download(owner, now, claims.lease, &claims.limits).await?)
}

/// One timed run's rates, in jobs per second.
#[derive(Debug, Clone, Copy)]
struct Rates {
    download: f64,
    process: f64,
    lifecycle: f64,
    /// The SQLite WAL's size at the end, in bytes.
    wal_bytes: u64,
}

/// Fills a fresh store with `jobs` jobs, then takes them through both steps with `workers`
/// workers; with `hold`, another connection holds a transaction open across both phases.
async fn throughput_run(db: &Db, jobs: usize, workers: usize, hold: bool, claims: Claims) -> anyhow::Result<Rates> {
    let store = db.fresh().await?;
    fill(&store, 0, jobs).await?;
    let holder = if hold { Some(db.hold_transaction().await?) } else { None };

    // The download step.
    let lock = Arc::new(Mutex::new(()));
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..workers {
        let (store, lock, done) = (store.clone(), Arc::clone(&lock), Arc::clone(&done));
        tasks.spawn(async move {
            let owner = format!("bench:queue:download-{w}");
            while let Some(job) = claim_download(&store, &lock, &owner, &claims).await? {
                let lease = job.lease.context("a claimed job has a lease")?;
                let fetched = store
                    .mark_fetched(job.ticket, &lease, "/bench/none.source", 150_000, &"0".repeat(64), SystemClock.now())
                    .await?;
                ensure!(fetched, "lost the lease of {}", job.ticket);
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        });
    }
    join_all(tasks).await?;
    let download_secs = started.elapsed().as_secs_f64();
    ensure!(done.load(Ordering::Relaxed) == jobs, "downloaded {} of {jobs}", done.load(Ordering::Relaxed));

    // The process step.
    let done = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..workers {
        let (store, done) = (store.clone(), Arc::clone(&done));
        tasks.spawn(async move {
            let owner = format!("bench:queue:process-{w}");
            while let Some(job) = store.claim_job(Stage::Process, &owner, SystemClock.now(), claims.lease).await? {
                let lease = job.lease.context("a claimed job has a lease")?;
                let now = SystemClock.now();
                let result = Completion {
                    result_path: "/bench/none.result".into(),
                    result_size: 100_000,
                    detected_format: "pdf".into(),
                    expires_at: now.plus(Duration::from_secs(7 * 24 * 3600)),
                    parts: None,
                };
                ensure!(store.complete_job(job.ticket, &lease, &result, &[], now).await?, "lost {}", job.ticket);
                done.fetch_add(1, Ordering::Relaxed);
            }
            anyhow::Ok(())
        });
    }
    join_all(tasks).await?;
    let process_secs = started.elapsed().as_secs_f64();
    ensure!(done.load(Ordering::Relaxed) == jobs, "completed {} of {jobs}", done.load(Ordering::Relaxed));

    let wal_bytes = db.wal_bytes();
    if let Some(holder) = holder {
        holder.release().await?;
    }
    store.close().await;
    let n = jobs as f64;
    Ok(Rates {
        download: n / download_secs,
        process: n / process_secs,
        lifecycle: n / (download_secs + process_secs),
        wal_bytes,
    })
}

async fn join_all(mut tasks: tokio::task::JoinSet<anyhow::Result<()>>) -> anyhow::Result<()> {
    while let Some(joined) = tasks.join_next().await {
        joined??;
    }
    Ok(())
}

/// The number of jobs for runs of about `seconds`, from an untimed warm-up run.
async fn size_runs(db: &Db, workers: usize, seconds: f64, claims: Claims) -> anyhow::Result<usize> {
    let warm = throughput_run(db, WARM_UP_JOBS, workers, false, claims).await?;
    Ok(jobs_for(warm.lifecycle, seconds))
}

/// About `seconds` of work at `per_sec`, in tens of jobs.
fn jobs_for(per_sec: f64, seconds: f64) -> usize {
    ((per_sec * seconds / 10.0).round() as usize * 10).clamp(WARM_UP_JOBS, 50_000)
}

// ---------------------------------------------------------------------------------------------
// 1. Throughput
// ---------------------------------------------------------------------------------------------

/// The runs of one backend at one worker count.
#[derive(Debug, Clone)]
struct Cell {
    jobs: usize,
    runs: Vec<Rates>,
}

impl Cell {
    fn spread(&self, pick: impl Fn(&Rates) -> f64) -> Spread {
        Spread::of(&self.runs.iter().map(pick).collect::<Vec<_>>())
    }
}

fn rate(s: Spread) -> String {
    if s.min == s.max { format!("{:.0}", s.median) } else { format!("{:.0} ({:.0}–{:.0})", s.median, s.min, s.max) }
}

async fn throughput_part(args: &Args, dbs: &[Db], runs: usize, claims: Claims) -> anyhow::Result<Vec<Vec<Cell>>> {
    let mut cells = Vec::new();
    for db in dbs {
        let mut row = Vec::new();
        for &w in &args.workers {
            let jobs = size_runs(db, w, args.seconds, claims).await?;
            let mut rates = Vec::new();
            for r in 0..runs {
                eprintln!("{}: {w} workers, {jobs} jobs, run {}/{runs}", db.backend().name(), r + 1);
                let got = throughput_run(db, jobs, w, false, claims).await?;
                eprintln!(
                    "  download {:.0}/s, process {:.0}/s, lifecycle {:.0}/s",
                    got.download, got.process, got.lifecycle
                );
                rates.push(got);
            }
            row.push(Cell { jobs, runs: rates });
        }
        cells.push(row);
    }
    Ok(cells)
}

fn print_throughput(args: &Args, dbs: &[Db], cells: &[Vec<Cell>]) {
    println!(
        "**Claimed and completed per second** (the process step: `claim_job(Stage::Process)` + `complete_job`), \
         median (range), against the goals:\n"
    );
    let mut head = String::from("| workers |");
    let mut rule = String::from("|---|");
    for db in dbs {
        let b = db.backend();
        let _ = write!(head, " {} jobs/s | ratio to {} |", b.name(), b.goal_label());
        rule.push_str("---|---|");
    }
    println!("{head}\n{rule}");
    for (i, w) in args.workers.iter().enumerate() {
        let mut line = format!("| {w} |");
        for (db, row) in dbs.iter().zip(cells) {
            let s = row[i].spread(|r| r.process);
            let _ = write!(line, " {} | {:.4} |", rate(s), s.median / db.backend().goal());
        }
        println!("{line}");
    }
    println!("\nEach step and the whole lifecycle, jobs/s, median (range):\n");
    println!("| backend | workers | N jobs | download step | process step | lifecycle (N / both phases) |");
    println!("|---|---|---|---|---|---|");
    for (db, row) in dbs.iter().zip(cells) {
        for (w, cell) in args.workers.iter().zip(row) {
            println!(
                "| {} | {w} | {} | {} | {} | {} |",
                db.backend().name(),
                cell.jobs,
                rate(cell.spread(|r| r.download)),
                rate(cell.spread(|r| r.process)),
                rate(cell.spread(|r| r.lifecycle)),
            );
        }
    }
    println!();
}

// ---------------------------------------------------------------------------------------------
// 2. Insert → claim latency
// ---------------------------------------------------------------------------------------------

/// Milliseconds from each insert's commit returning to the idle worker being woken, and to its
/// claim returning the job.
async fn latency_part(db: &Db, jobs: usize, claims: Claims) -> anyhow::Result<(Vec<f64>, Vec<f64>)> {
    let store = db.fresh().await?;
    let idle_poll = docket::app::Options::default().idle_poll;
    let wake = Arc::new(Notify::new());
    let stop = tokio_util::sync::CancellationToken::new();

    // On PostgreSQL: another host records the jobs, and the change feed wakes this one.
    let (writer, relay) = match db {
        Db::Sqlite(_) => (store.clone(), None),
        Db::Postgres(url) => {
            let mut feed = store.changes().await?.context("PostgreSQL has a change feed")?;
            let (wake, stop) = (Arc::clone(&wake), stop.clone());
            let relay = tokio::spawn(async move {
                loop {
                    let change = tokio::select! {
                        () = stop.cancelled() => return anyhow::Ok(()),
                        change = feed.next() => change?,
                    };
                    if matches!(change, Change::Jobs | Change::Missed) {
                        wake.notify_waiters();
                    }
                }
            });
            (Store::open(&DatabaseUrl::Postgres(url.clone())).await?, Some(relay))
        }
    };

    // (the job, when the worker was woken, when its claim returned)
    let (claimed_tx, mut claimed_rx) = mpsc::unbounded_channel::<(Ticket, Option<Instant>, Instant)>();
    let worker = {
        let (store, wake, stop) = (store.clone(), Arc::clone(&wake), stop.clone());
        tokio::spawn(async move {
            let lock = Mutex::new(());
            let mut woken = None;
            loop {
                let notified = wake.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if let Some(job) = claim_download(&store, &lock, "bench:queue:download-0", &claims).await? {
                    let _ = claimed_tx.send((job.ticket, woken.take(), Instant::now()));
                    continue;
                }
                tokio::select! {
                    () = stop.cancelled() => return anyhow::Ok(()),
                    () = &mut notified => woken = Some(Instant::now()),
                    () = tokio::time::sleep(idle_poll) => woken = None,
                }
            }
        })
    };

    let (mut to_wake, mut to_claim) = (Vec::with_capacity(jobs), Vec::with_capacity(jobs));
    for n in 0..jobs {
        tokio::time::sleep(Duration::from_millis(rand::random_range(20..60))).await;
        let mut tx = writer.begin().await?;
        let ticket = tx.insert_job(&submission(n), SystemClock.now()).await?;
        tx.commit().await?;
        let committed = Instant::now();
        if matches!(db, Db::Sqlite(_)) {
            wake.notify_waiters();
        }
        let (got, woken, claimed) = tokio::time::timeout(Duration::from_secs(10), claimed_rx.recv())
            .await
            .context("the worker claimed nothing within 10 s")?
            .context("the worker stopped")?;
        ensure!(got == ticket, "claimed {got}, recorded {ticket}");
        // Woken by the idle poll instead: counted as woken when the claim began (never, here).
        to_wake.push(signed_ms(committed, woken.unwrap_or(claimed)));
        to_claim.push(signed_ms(committed, claimed));
    }
    stop.cancel();
    worker.await??;
    if let Some(relay) = relay {
        relay.await??;
        writer.close().await;
    }
    store.close().await;
    Ok((to_wake, to_claim))
}

/// `to − from` in milliseconds; negative when `to` came first (on PostgreSQL the wake-up can
/// overtake the commit's answer to the writer).
fn signed_ms(from: Instant, to: Instant) -> f64 {
    match to.checked_duration_since(from) {
        Some(d) => d.as_secs_f64() * 1e3,
        None => -(from.duration_since(to).as_secs_f64() * 1e3),
    }
}

// ---------------------------------------------------------------------------------------------
// 3. A long transaction
// ---------------------------------------------------------------------------------------------

/// `pairs` pairs of runs without and with a transaction held open, alternating which goes first.
async fn long_transaction_part(
    db: &Db,
    jobs: usize,
    workers: usize,
    pairs: usize,
    claims: Claims,
) -> anyhow::Result<(Vec<Rates>, Vec<Rates>)> {
    let (mut free, mut held) = (Vec::new(), Vec::new());
    for p in 0..pairs {
        eprintln!("{}: long transaction, pair {}/{pairs}", db.backend().name(), p + 1);
        for hold in if p % 2 == 0 { [false, true] } else { [true, false] } {
            let got = throughput_run(db, jobs, workers, hold, claims).await?;
            eprintln!("  held {hold}: process {:.0}/s, lifecycle {:.0}/s", got.process, got.lifecycle);
            if hold { held.push(got) } else { free.push(got) }
        }
    }
    Ok((free, held))
}

// ---------------------------------------------------------------------------------------------
// The whole run
// ---------------------------------------------------------------------------------------------

async fn run(args: Args) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.dir)?;
    let dir = std::fs::canonicalize(&args.dir)?;
    let claims = Claims::from_defaults()?;
    let started = Instant::now();
    let pg = match &args.postgres {
        Some(url) => Some(Scratch::create(url).await?),
        None => None,
    };
    let result = report(&args, &dir, pg.as_ref(), claims).await;
    if let Some(pg) = pg {
        pg.drop_database().await?;
    }
    let _ = std::fs::remove_dir_all(dir.join("synced"));
    result?;
    println!("Total benchmark time: {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

async fn report(args: &Args, dir: &Path, pg: Option<&Scratch>, claims: Claims) -> anyhow::Result<()> {
    println!("# docket queue benchmark\n");
    println!("{}", machine_facts(dir, pg).await?);
    if pg.is_none() {
        println!("(PostgreSQL not run: no `--postgres URL` and no `DATABASE_URL`.)\n");
    }
    println!(
        "Claims with the default configuration: lease {} s, `per_chat` = {} (every job from a chat of its own), \
         room for any file. Workers are tokio tasks in one process, on the same machine as the PostgreSQL server.\n",
        claims.lease.as_secs(),
        claims.limits.per_chat
    );
    let mut dbs = vec![Db::Sqlite(dir.join("synced"))];
    if let Some(pg) = pg {
        dbs.push(Db::Postgres(pg.url.clone()));
    }

    println!("## 1. Throughput, durable commits\n");
    let before = conditions(dir)?;
    let cells = throughput_part(args, &dbs, args.runs, claims).await?;
    println!(
        "SQLite `synchronous = FULL` on {}; PostgreSQL as configured. At the start: {before}; at the end: {}.\n",
        host::filesystem_of(dir),
        conditions(dir)?
    );
    print_throughput(args, &dbs, &cells);

    println!("## 2. Insert → claim latency, idle\n");
    println!("At the start: {}.\n", conditions(dir)?);
    println!(
        "| backend | wake-up | n | commit → woken, median / p95 | **commit → claimed**, median | p95 | max | median against 4 ms |\n|---|---|---|---|---|---|---|---|"
    );
    for db in &dbs {
        eprintln!("{}: insert → claim latency", db.backend().name());
        let (w, s) = latency_part(db, args.latency_jobs, claims).await?;
        let how = match db {
            Db::Sqlite(_) => "`Notify` from the recording code",
            Db::Postgres(_) => "LISTEN/NOTIFY (`Store::changes`), recorded by another `Store`",
        };
        println!(
            "| {} | {how} | {} | {:.2} / {:.2} ms | **{:.2} ms** | {:.2} ms | {:.2} ms | {:.2} × |",
            db.backend().name(),
            s.len(),
            median(&w),
            percentile(&w, 95.0),
            median(&s),
            percentile(&s, 95.0),
            percentile(&s, 100.0),
            median(&s) / GOAL_LATENCY_MS
        );
    }
    println!();

    println!("## 3. Throughput while a long transaction is open\n");
    long_transaction_table(args, &dbs, &cells, claims, &conditions(dir)?).await?;

    if args.unsynced_runs > 0 {
        let shm = PathBuf::from("/dev/shm").join(format!("docket-bench-queue-{}", std::process::id()));
        let mut unsynced = vec![Db::Sqlite(shm.clone())];
        if let Some(pg) = pg {
            unsynced.push(Db::Postgres(pg.unsynced_url().await?));
        }
        println!("## 4. Throughput without a flush per commit (what the flushes cost)\n");
        println!(
            "SQLite on /dev/shm (tmpfs, where fsync does nothing; `synchronous = FULL` still); PostgreSQL \
             with `synchronous_commit = off` on the benchmark's connections. {} run(s) per worker count; \
             1-minute load at the start: {}.\n",
            args.unsynced_runs,
            load()
        );
        let result = async {
            let cells = throughput_part(args, &unsynced, args.unsynced_runs, claims).await?;
            print_throughput(args, &unsynced, &cells);
            println!("### A long transaction, without a flush per commit\n");
            long_transaction_table(args, &unsynced, &cells, claims, &format!("1-minute load {}", load())).await
        }
        .await;
        let _ = std::fs::remove_dir_all(&shm);
        result?;
    }

    if args.ceiling_runs > 0 {
        println!("## 5. The database's own ceiling: claims and completions in batches\n");
        println!(
            "docket's schema, indexes and triggers and durable commits, but the bench's own statements \
             on connections of its own: one `UPDATE … WHERE id IN (the oldest k fetched jobs) RETURNING` \
             claims k jobs, one transaction completes them (fenced by lease token). Batch 1 is docket's \
             shape without its other statements; the rates bound what batching inside docket could reach. \
             {} run(s) each; at the start: {}.\n",
            args.ceiling_runs,
            conditions(dir)?
        );
        println!("| backend | batch k | connections | N jobs | claimed and completed per s | against the goal |");
        println!("|---|---|---|---|---|---|");
        for row in
            ceiling::part(&dbs, &args.ceiling_batches, &args.ceiling_workers, args.ceiling_runs, args.seconds).await?
        {
            println!("{row}");
        }
        println!();
    }
    Ok(())
}

/// Part 3 on `dbs`, N from the lifecycle rates of `cells` (part 1's, or part 4's).
async fn long_transaction_table(
    args: &Args,
    dbs: &[Db],
    cells: &[Vec<Cell>],
    claims: Claims,
    at_start: &str,
) -> anyhow::Result<()> {
    let w = if args.workers.contains(&4) { 4 } else { args.workers[0] };
    let wi = args.workers.iter().position(|x| *x == w).unwrap_or(0);
    println!(
        "{w} workers, {} pairs of runs of about {} s (without, with; the order alternates), N from the \
         lifecycle rate above. The share is per pair (with / without), median (range); goal ≥ {GOAL_SHARE_KEPT}.\n",
        args.runs, args.long_seconds
    );
    println!("At the start: {at_start}.\n");
    println!(
        "| backend | held open | N jobs | process step without | with | **share kept** (process step) | lifecycle share | WAL at the end without / with |\n|---|---|---|---|---|---|---|---|"
    );
    for (db, row) in dbs.iter().zip(cells) {
        let jobs = jobs_for(row[wi].spread(|r| r.lifecycle).median, args.long_seconds);
        let (free, held) = long_transaction_part(db, jobs, w, args.runs, claims).await?;
        let pick = |v: &[Rates], f: fn(&Rates) -> f64| v.iter().map(f).collect::<Vec<_>>();
        let process = Spread::of(&ratios(&pick(&held, |r| r.process), &pick(&free, |r| r.process)));
        let lifecycle = Spread::of(&ratios(&pick(&held, |r| r.lifecycle), &pick(&free, |r| r.lifecycle)));
        let (what, wal) = match db {
            Db::Sqlite(_) => {
                let mib = |v: &[Rates]| median(&v.iter().map(|r| r.wal_bytes as f64 / 1048576.0).collect::<Vec<_>>());
                ("a WAL read transaction", format!("{:.1} / {:.1} MiB", mib(&free), mib(&held)))
            }
            Db::Postgres(_) => ("REPEATABLE READ, after a SELECT on `jobs`", "–".to_owned()),
        };
        println!(
            "| {} | {what} | {} | {} | {} | **{:.3}** ({:.3}–{:.3}) | {:.3} ({:.3}–{:.3}) | {wal} |",
            db.backend().name(),
            jobs,
            rate(Spread::of(&pick(&free, |r| r.process))),
            rate(Spread::of(&pick(&held, |r| r.process))),
            process.median,
            process.min,
            process.max,
            lifecycle.median,
            lifecycle.min,
            lifecycle.max,
        );
    }
    println!();
    Ok(())
}

/// The benchmark's own database on the PostgreSQL server.
struct Scratch {
    admin_url: String,
    url: String,
    version: String,
    settings: String,
}

impl Scratch {
    async fn create(admin_url: &str) -> anyhow::Result<Self> {
        let mut admin = sqlx::PgConnection::connect(admin_url).await.context("connecting to PostgreSQL")?;
        let drop = format!("DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)");
        sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&mut admin).await?;
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {PG_DATABASE}"))).execute(&mut admin).await?;
        let version: String = sqlx::query_scalar("SHOW server_version").fetch_one(&mut admin).await?;
        let mut settings = Vec::new();
        for name in ["synchronous_commit", "fsync", "wal_sync_method", "shared_buffers", "max_connections"] {
            let value: String =
                sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SHOW {name}"))).fetch_one(&mut admin).await?;
            settings.push(format!("{name} = {value}"));
        }
        admin.close().await?;
        let mut url = url::Url::parse(admin_url)?;
        url.set_path(PG_DATABASE);
        Ok(Self { admin_url: admin_url.to_owned(), url: url.to_string(), version, settings: settings.join(", ") })
    }

    /// The database's URL with `synchronous_commit = off` for its connections (checked).
    async fn unsynced_url(&self) -> anyhow::Result<String> {
        let mut url = url::Url::parse(&self.url)?;
        url.query_pairs_mut().append_pair("options", "-c synchronous_commit=off");
        let mut c = sqlx::PgConnection::connect(url.as_str()).await?;
        let value: String = sqlx::query_scalar("SHOW synchronous_commit").fetch_one(&mut c).await?;
        c.close().await?;
        ensure!(value == "off", "synchronous_commit is {value} on the unsynced connections");
        Ok(url.to_string())
    }

    async fn drop_database(self) -> anyhow::Result<()> {
        let mut admin = sqlx::PgConnection::connect(&self.admin_url).await?;
        let drop = format!("DROP DATABASE IF EXISTS {PG_DATABASE} WITH (FORCE)");
        sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&mut admin).await?;
        admin.close().await?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The machine
// ---------------------------------------------------------------------------------------------

async fn machine_facts(dir: &Path, pg: Option<&Scratch>) -> anyhow::Result<String> {
    let sqlite = host::sqlite_version().await?;
    let mut out = String::new();
    host::facts_head(&mut out, dir)?;
    writeln!(out, "| fdatasync of 4 KiB there | {} |", fdatasync_ms(dir)?)?;
    writeln!(out, "| SQLite (bundled by sqlx) | {sqlite} |")?;
    if let Some(pg) = pg {
        writeln!(out, "| PostgreSQL | {} on this machine ({}) |", pg.version, pg.settings)?;
    }
    writeln!(out, "| load average at start | {} |", host::load_triple())?;
    Ok(out)
}

/// Median and p95 of 50 overwrites of 4 KiB, each followed by fdatasync, in `dir`.
fn fdatasync_ms(dir: &Path) -> anyhow::Result<String> {
    use std::os::unix::fs::FileExt;
    let path = dir.join("fdatasync-probe");
    let file = std::fs::File::create(&path)?;
    file.write_all_at(&[0; 1 << 16], 0)?;
    file.sync_all()?;
    let mut samples = Vec::new();
    for i in 0..50u64 {
        let t = Instant::now();
        file.write_all_at(&[1; 4096], (i % 16) * 4096)?;
        file.sync_data()?;
        samples.push(t.elapsed().as_secs_f64() * 1e3);
    }
    drop(file);
    std::fs::remove_file(&path)?;
    Ok(format!("median {:.2} ms, p95 {:.2} ms", median(&samples), percentile(&samples, 95.0)))
}

/// The 1-minute load and the disk's flush time now: what the figures of a part ran under.
fn conditions(dir: &Path) -> anyhow::Result<String> {
    Ok(format!("1-minute load {}, fdatasync {}", load(), fdatasync_ms(dir)?))
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|l| l.split(' ').next().unwrap_or("?").to_owned()).unwrap_or_default()
}
