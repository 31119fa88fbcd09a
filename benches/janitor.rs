//! The janitor and query-latency benchmark (issue "Retention and the janitor"); results and
//! their reading in BENCHMARKS.md.
//!
//! 1. **Janitor pass**: `docket::janitor::pass` over N job rows and N files (N = 10,000 and
//!    100,000 by default), in a realistic mix (see [`janitor_data`]): most jobs `ready` with a
//!    result file, 10 % of all jobs past `result_expires_at`, `failed`/`expired` ones without
//!    files, `accepted` ones with `.part` files (leased, stale, young), `fetched`/`processing` ones
//!    with sources and work output, and orphan files. Every run builds the data afresh (rows with
//!    raw SQL in one transaction, files of 1 KiB), `sync`s, then times, in this order: the listing
//!    of the data folder alone (the janitor's walk, copied), `Store::file_owners` alone,
//!    `results_due` alone, `prune` (dry) alone, a dry-run pass, the real pass (its report checked
//!    against what the data must produce), and a second real pass with nothing left to do. The
//!    first `--phase-runs` runs also replay the real pass phase by phase on a second fresh copy
//!    (same public calls, same order).
//! 2. **Query latency** at 1,000,000 job rows and 1,000,000 outbox rows (see [`query_data`]): the
//!    claims through the store (each claimed job or message is given back at once, untimed, so the
//!    table stays the same), `next_waiting_download`, `job` (status) and `jobs` (/jobs), with
//!    median and p99; the row search of each claim alone; a one-row commit (the floor of any
//!    write); the `EXPLAIN QUERY PLAN` of every statement; a "flood" (one chat with 1,000 queued
//!    jobs at the head of the queue and 2 in flight, `per_chat` = 2).
//! 3. **PostgreSQL** (`--pg URL`, optional): the same as 2 with `EXPLAIN (ANALYZE, BUFFERS)`, in a
//!    database `docket_bench_janitor` the benchmark creates and drops.
//!
//! `cargo bench --bench janitor` runs 1 and 2 (about 7 minutes on 2 cores) and prints markdown on
//! stdout (progress on stderr). Options after `--`: `--sizes 10000,100000`, `--runs N` (3),
//! `--phase-runs N` (1), `--rows N` (1000000), `--iters N` (1000 for reads; claims use a third; a
//! latency row also stops after 6 s), `--only janitor|queries|pg` (repeatable), `--pg URL` (a
//! server where the benchmark may create a database, e.g.
//! `postgres://postgres@127.0.0.1:5432/test`), `--cold` (one more dry pass per run after
//! `echo 3 > /proc/sys/vm/drop_caches`; needs root), `--keep` (keep the 1M-row SQLite file),
//! `--dir PATH` (default `target/docket-bench-janitor`; on the disk, not tmpfs, so commits fsync).
//!
//! Every statement is the store's own, from `docket::store::statements`, never a copy: the claims
//! (`statements::{sqlite, postgres}::CLAIMS`) and the other statements in [`sql`]. Each "row
//! search alone" is cut out of a claim ([`row_search`]), and so are the two per-candidate checks
//! of the claims ([`sql::PER_CHAT_COUNT`], [`sql::CHAT_ORDER_CHECK`]).

#![allow(clippy::print_stdout, reason = "a benchmark reports its tables on stdout")]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, ensure};
use bench_support::stats::Latency;
use docket::app::{self, Options};
use docket::config::Config;
use docket::domain::{ChatRef, Clock, JobEvent, SystemClock, Ticket, Timestamp};
use docket::janitor::{Cause, JanitorDeps, JanitorSettings, pass};
use docket::spool::Spool;
use docket::store::statements::ClaimSql;
use docket::store::{ClaimLimits, DatabaseUrl, History, JobFilter, MessageFilter, Release, Stage, Store};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use sqlx::Connection;
use tokio::sync::Notify;

#[path = "common/host.rs"]
mod host;

/// The struct whose every named duration is the median of that field over `runs` (the rest, after
/// `;`, taken from the struct given there).
macro_rules! medians_of {
    ($runs:expr, $kind:ident { $($field:ident),* $(; ..$rest:expr)? }) => {
        $kind {
            $($field: median(&$runs.iter().map(|r| r.$field).collect::<Vec<_>>()),)*
            $(..$rest)?
        }
    };
}

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;
/// The chat that sends 2 % of all jobs in the 1M-row data.
const HEAVY_CHAT: i64 = 42;
/// A chat whose only jobs are the three oldest rows.
const QUIET_CHAT: i64 = 7;
const LEASE: Duration = Duration::from_secs(300);
const OWNER: &str = "bench:1:worker-0";

/// A part of the benchmark (`--only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Part {
    Janitor,
    Queries,
    Pg,
}

/// The janitor and query-latency benchmark (see BENCHMARKS.md).
#[derive(Debug, clap::Parser)]
#[command(bin_name = "cargo bench --bench janitor --")]
struct Args {
    /// Job rows (and files) of the janitor passes, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = trimmed_count, default_values_t = [10_000, 100_000])]
    sizes: Vec<usize>,
    /// Janitor runs per size (more than 0).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Runs that also replay the real pass phase by phase (more than 0).
    #[arg(long, default_value_t = 1)]
    phase_runs: usize,
    /// Job rows and outbox rows of the query part (at least 10000).
    #[arg(long, default_value_t = 1_000_000)]
    rows: usize,
    /// Timed iterations per read (at least 10; claims use a third).
    #[arg(long, default_value_t = 1000)]
    iters: usize,
    /// Run only this part (repeatable); all of them by default (pg only with --pg).
    #[arg(long = "only", value_enum)]
    only: Vec<Part>,
    /// A PostgreSQL server where the benchmark may create (and drop) a database.
    #[arg(long, value_name = "URL")]
    pg: Option<String>,
    /// One more dry pass per run after dropping the page cache (needs root).
    #[arg(long)]
    cold: bool,
    /// Keep the 1M-row SQLite file.
    #[arg(long)]
    keep: bool,
    /// Where the data goes: on the disk, not tmpfs, so commits fsync.
    #[arg(long, default_value = "target/docket-bench-janitor")]
    dir: PathBuf,
}

/// A count in a comma-separated list, spaces around it allowed.
fn trimmed_count(s: &str) -> Result<usize, std::num::ParseIntError> {
    s.trim().parse()
}

impl Args {
    /// The parts to run.
    fn parts(&self) -> Vec<Part> {
        if self.only.is_empty() { vec![Part::Janitor, Part::Queries, Part::Pg] } else { self.only.clone() }
    }
}

fn main() -> anyhow::Result<()> {
    let args: Args = bench_support::args();
    ensure!(args.phase_runs > 0, "--phase-runs > 0");
    ensure!(args.runs > 0 && args.iters >= 10 && args.rows >= 10_000, "--runs > 0, --iters >= 10, --rows >= 10000");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.dir)?;
    let dir = std::fs::canonicalize(&args.dir)?;
    println!("# docket janitor and query benchmark\n");
    println!("{}", machine_facts(&dir).await?);
    let started = Instant::now();
    let parts = args.parts();
    if parts.contains(&Part::Janitor) {
        janitor_part(&args, &dir).await?;
    }
    if parts.contains(&Part::Queries) {
        let root = dir.join("queries");
        fresh_dir(&root)?;
        let db = root.join("docket.db");
        let store = Store::open(&DatabaseUrl::Sqlite(db.clone())).await?;
        let raw = Raw::Sqlite(sqlx::SqliteConnection::connect_with(&raw_sqlite_options(&db)).await?);
        query_part(&args, store, raw, "SQLite").await?;
        if !args.keep {
            std::fs::remove_dir_all(&root)?;
        }
    }
    if parts.contains(&Part::Pg) {
        match &args.pg {
            Some(url) => pg_part(&args, url).await?,
            None => eprintln!("(PostgreSQL skipped: no --pg URL)"),
        }
    }
    println!("\nTotal benchmark time: {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

async fn machine_facts(dir: &Path) -> anyhow::Result<String> {
    let load = host::load_triple();
    let version = host::sqlite_version().await?;
    let mut out = String::new();
    host::facts_head(&mut out, dir)?;
    writeln!(out, "| SQLite (bundled by sqlx) | {version} |")?;
    writeln!(out, "| load average at start | {load} |")?;
    Ok(out)
}

fn fresh_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    Ok(())
}

fn sync_all() {
    let _ = std::process::Command::new("sync").status();
}

/// "load 1-min / io pressure avg10 %", to tell a disturbed run from a quiet one.
fn load_now() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let io = std::fs::read_to_string("/proc/pressure/io").unwrap_or_default();
    let some = io.lines().next().and_then(|l| l.split_whitespace().nth(1)).and_then(|f| f.strip_prefix("avg10="));
    format!("{} / {}", load.split_whitespace().next().unwrap_or("?"), some.unwrap_or("?"))
}

fn now_ms() -> i64 {
    SystemClock.now().as_millis()
}

// ---------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------

/// A `jobs` row to insert (every column of migrations/*/0001_initial.sql is written).
#[derive(Debug, Clone)]
struct JobRow {
    id: i64,
    chat: i64,
    status: &'static str,
    declared_size: Option<i64>,
    local_path: Option<String>,
    lease_until: Option<i64>,
    lease_token: i64,
    attempts: i64,
    not_before: i64,
    result_path: Option<String>,
    result_expires_at: Option<i64>,
    created_at: i64,
    updated_at: i64,
}

impl JobRow {
    fn new(id: i64, chat: i64, status: &'static str, created_at: i64, updated_at: i64) -> Self {
        Self {
            id,
            chat,
            status,
            declared_size: Some(150_000 + (id % 7) * 1_000_000),
            local_path: None,
            lease_until: None,
            lease_token: i64::from(status != "accepted"),
            attempts: 0,
            not_before: 0,
            result_path: None,
            result_expires_at: None,
            created_at,
            updated_at,
        }
    }
    fn has_source(&self) -> bool {
        matches!(self.status, "fetched" | "processing" | "ready" | "expired")
    }
}

/// An `outbox` row to insert.
#[derive(Debug, Clone)]
struct MsgRow {
    id: i64,
    job: i64,
    chat: i64,
    kind: &'static str,
    status: &'static str,
    updated_at: i64,
}

impl MsgRow {
    fn priority(&self) -> i64 {
        i64::from(matches!(self.kind, "result" | "failure"))
    }
}

/// Inserts rows in batches of 1,000 over one connection (inside the caller's transaction).
macro_rules! insert_rows {
    ($db:ty, $conn:expr, $jobs:expr, $msgs:expr) => {{
        for chunk in $jobs.chunks(1000) {
            let mut qb = sqlx::QueryBuilder::<$db>::new(
                "INSERT INTO jobs (id, update_id, chat_id, user_id, message_id, file_id, file_unique_id, declared_name,
                   declared_mime, declared_size, operation, status, local_path, real_size, sha256, detected_format,
                   lease_owner, lease_token, lease_until, attempts, not_before, error, error_detail, result_path,
                   result_size, result_file_id, result_expires_at, created_at, updated_at) ",
            );
            qb.push_values(chunk, |mut b, r: &JobRow| {
                let source = r.has_source();
                let failed = r.status == "failed";
                b.push_bind(r.id)
                    .push_bind(r.id)
                    .push_bind(r.chat)
                    .push_bind(r.chat)
                    .push_bind(r.id * 3)
                    .push_bind(format!("BQACAgIAAxkBAAI{}-file-id-of-telegram", r.id))
                    .push_bind(format!("AgAD{}", r.id))
                    .push_bind(format!("scanned contract {}.pdf", r.id))
                    .push_bind("application/pdf")
                    .push_bind(r.declared_size)
                    .push_bind("optimize")
                    .push_bind(r.status)
                    .push_bind(r.local_path.clone())
                    .push_bind(source.then_some(r.declared_size.unwrap_or(0)))
                    .push_bind(source.then(|| format!("{:064x}", r.id)))
                    .push_bind(matches!(r.status, "ready" | "expired").then_some("pdf"))
                    .push_bind(r.lease_until.map(|_| OWNER))
                    .push_bind(r.lease_token)
                    .push_bind(r.lease_until)
                    .push_bind(r.attempts)
                    .push_bind(r.not_before)
                    .push_bind(failed.then_some("This file is not a PDF, so I cannot optimize it."))
                    .push_bind(failed.then_some("detect: no %PDF- signature in the first 1024 bytes"))
                    .push_bind(r.result_path.clone())
                    .push_bind(r.result_path.as_ref().map(|_| 1024_i64))
                    .push_bind(r.result_path.as_ref().map(|_| format!("BQACAgIAAxkDAAI{}-result", r.id)))
                    .push_bind(r.result_expires_at)
                    .push_bind(r.created_at)
                    .push_bind(r.updated_at);
            });
            qb.build().execute(&mut *$conn).await.context("inserting jobs")?;
        }
        for chunk in $msgs.chunks(1000) {
            let mut qb = sqlx::QueryBuilder::<$db>::new(
                "INSERT INTO outbox (id, idempotency_key, job_id, chat_id, kind, priority, body, reply_to_message_id,
                   status, attempts, not_before, lease_owner, lease_token, lease_until, telegram_message_id,
                   telegram_file_id, error, created_at, updated_at) ",
            );
            qb.push_values(chunk, |mut b, m: &MsgRow| {
                let sent = m.status == "sent";
                b.push_bind(m.id)
                    .push_bind(format!("job:{}:u{}:{}", m.job, m.job, m.kind))
                    .push_bind(m.job)
                    .push_bind(m.chat)
                    .push_bind(m.kind)
                    .push_bind(m.priority())
                    .push_bind(format!(
                        "Got scanned contract {}.pdf (1.2 MB) — ticket #{}, queued. I will send the result here.",
                        m.job, m.job
                    ))
                    .push_bind(m.job * 3)
                    .push_bind(m.status)
                    .push_bind(i64::from(m.status != "pending"))
                    .push_bind(0_i64)
                    .push_bind(None::<String>)
                    .push_bind(i64::from(m.status != "pending"))
                    .push_bind(None::<i64>)
                    .push_bind(sent.then_some(m.id * 5))
                    .push_bind((sent && m.kind == "result").then(|| format!("BQACAgIAAxkDAAI{}-result", m.job)))
                    .push_bind((m.status == "dead").then_some("Forbidden: bot was blocked by the user"))
                    .push_bind(m.updated_at - 1000)
                    .push_bind(m.updated_at);
            });
            qb.build().execute(&mut *$conn).await.context("inserting outbox rows")?;
        }
    }};
}

/// Inserts `updates` rows (one per job) in batches.
macro_rules! insert_updates {
    ($db:ty, $conn:expr, $jobs:expr) => {{
        for chunk in $jobs.chunks(5000) {
            let mut qb = sqlx::QueryBuilder::<$db>::new(
                "INSERT INTO updates (bot_id, update_id, outcome, reason, received_at) ",
            );
            qb.push_values(chunk, |mut b, r: &JobRow| {
                b.push_bind(1_i64)
                    .push_bind(r.id)
                    .push_bind("recorded")
                    .push_bind(None::<String>)
                    .push_bind(r.created_at);
            });
            qb.build().execute(&mut *$conn).await.context("inserting updates")?;
        }
    }};
}

fn raw_sqlite_options(db: &Path) -> sqlx::sqlite::SqliteConnectOptions {
    sqlx::sqlite::SqliteConnectOptions::new()
        .filename(db)
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
        // Bulk inserts into indexes in random order: keep the pages in memory (256 MiB).
        .pragma("cache_size", "-262144")
        .busy_timeout(Duration::from_secs(30))
}

/// A bind value for the EXPLAINed statements.
#[derive(Debug, Clone)]
enum B {
    I(i64),
    S(&'static str),
    Bool(bool),
    NullI,
    NullS,
}

macro_rules! bind_all {
    ($q:expr, $binds:expr) => {{
        let mut q = $q;
        for b in $binds.iter() {
            q = match b {
                B::I(v) => q.bind(*v),
                B::S(s) => q.bind(*s),
                B::Bool(v) => q.bind(*v),
                B::NullI => q.bind(None::<i64>),
                B::NullS => q.bind(None::<&str>),
            };
        }
        q
    }};
}

/// A connection beside the store: bulk inserts, EXPLAIN, and timing bare SELECTs.
enum Raw {
    Sqlite(sqlx::SqliteConnection),
    Pg(sqlx::PgConnection),
}

impl Raw {
    async fn insert(&mut self, jobs: &[JobRow], msgs: &[MsgRow], updates: bool) -> anyhow::Result<()> {
        match self {
            Self::Sqlite(c) => {
                let mut tx = c.begin().await?;
                insert_rows!(sqlx::Sqlite, tx, jobs, msgs);
                if updates {
                    insert_updates!(sqlx::Sqlite, tx, jobs);
                }
                tx.commit().await?;
                sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&mut *c).await?;
            }
            Self::Pg(c) => {
                let mut tx = c.begin().await?;
                insert_rows!(sqlx::Postgres, tx, jobs, msgs);
                if updates {
                    insert_updates!(sqlx::Postgres, tx, jobs);
                }
                tx.commit().await?;
                for stmt in [
                    "SELECT setval(pg_get_serial_sequence('jobs', 'id'), (SELECT max(id) FROM jobs))",
                    "SELECT setval(pg_get_serial_sequence('outbox', 'id'), (SELECT max(id) FROM outbox))",
                    "VACUUM ANALYZE jobs",
                    "VACUUM ANALYZE outbox",
                ] {
                    sqlx::query(stmt).execute(&mut *c).await?;
                }
            }
        }
        Ok(())
    }

    async fn execute(&mut self, sql: String) -> anyhow::Result<u64> {
        Ok(match self {
            Self::Sqlite(c) => sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *c).await?.rows_affected(),
            Self::Pg(c) => sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&mut *c).await?.rows_affected(),
        })
    }

    async fn close(self) -> anyhow::Result<()> {
        match self {
            Self::Sqlite(c) => c.close().await?,
            Self::Pg(c) => c.close().await?,
        }
        Ok(())
    }

    async fn counts(&mut self, table: &'static str) -> anyhow::Result<BTreeMap<String, i64>> {
        let sql = match table {
            "jobs" => "SELECT status, COUNT(*) FROM jobs GROUP BY status",
            _ => "SELECT status, COUNT(*) FROM outbox GROUP BY status",
        };
        let rows: Vec<(String, i64)> = match self {
            Self::Sqlite(c) => sqlx::query_as(sql).fetch_all(&mut *c).await?,
            Self::Pg(c) => sqlx::query_as(sql).fetch_all(&mut *c).await?,
        };
        Ok(rows.into_iter().collect())
    }

    /// The plan of `stmt` as text. SQLite: `EXPLAIN QUERY PLAN` (not run). PostgreSQL:
    /// `EXPLAIN (ANALYZE, BUFFERS)` inside a transaction that is rolled back.
    async fn plan(&mut self, stmt: &Stmt) -> anyhow::Result<String> {
        match self {
            Self::Sqlite(c) => {
                let q = format!("EXPLAIN QUERY PLAN {}", stmt.sqlite);
                let rows: Vec<(i64, i64, i64, String)> =
                    bind_all!(sqlx::query_as(sqlx::AssertSqlSafe(q)), &stmt.binds).fetch_all(&mut *c).await?;
                let mut depth: BTreeMap<i64, usize> = BTreeMap::new();
                let mut out = String::from("QUERY PLAN\n");
                for (id, parent, _, detail) in rows {
                    let d = depth.get(&parent).map_or(0, |p| p + 1);
                    depth.insert(id, d);
                    writeln!(out, "{}`--{detail}", "   ".repeat(d))?;
                }
                Ok(out)
            }
            Self::Pg(c) => {
                let q = format!("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {}", stmt.pg);
                let mut tx = c.begin().await?;
                let rows: Vec<(String,)> =
                    bind_all!(sqlx::query_as(sqlx::AssertSqlSafe(q)), &stmt.binds).fetch_all(&mut *tx).await?;
                tx.rollback().await?;
                Ok(rows.into_iter().map(|r| r.0 + "\n").collect())
            }
        }
    }

    /// Times a read-only statement `iters` times.
    async fn time_select(&mut self, sql: &str, binds: &[B], iters: usize) -> anyhow::Result<Latency> {
        let mut samples = Vec::with_capacity(iters);
        let started = Instant::now();
        while more(&samples, iters, started) {
            let t = Instant::now();
            match self {
                Self::Sqlite(c) => {
                    let _: Vec<(i64,)> = bind_all!(sqlx::query_as(sqlx::AssertSqlSafe(sql.to_owned())), binds)
                        .fetch_all(&mut *c)
                        .await?;
                }
                Self::Pg(c) => {
                    let _: Vec<(i64,)> = bind_all!(sqlx::query_as(sqlx::AssertSqlSafe(sql.to_owned())), binds)
                        .fetch_all(&mut *c)
                        .await?;
                }
            }
            samples.push(t.elapsed());
        }
        Ok(Latency::of(&samples))
    }
}

/// A statement to EXPLAIN, in both dialects, with its binds.
struct Stmt {
    name: &'static str,
    sqlite: &'static str,
    pg: &'static str,
    binds: Vec<B>,
}

/// The store's claim statements on each backend.
const SQLITE: &ClaimSql = &docket::store::statements::sqlite::CLAIMS;
const PG: &ClaimSql = &docket::store::statements::postgres::CLAIMS;

/// The row search of a claim statement alone: its `WHERE id = (SELECT …)` subquery, as a SELECT
/// that mentions `$1` and `$2` (the owner and lease binds, unused by the search) so the claim's
/// binds number the same.
fn row_search(claim: &str) -> String {
    const OPEN: &str = "WHERE id = (";
    let start = claim.find(OPEN).expect("a claim selects its row in a subquery") + OPEN.len();
    parenthesised(claim, start).replacen("WHERE ", "WHERE $1 IS NOT NULL AND $2 IS NOT NULL AND ", 1)
}

/// The text of `sql` from `start` up to the parenthesis that closes the one just before `start`.
fn parenthesised(sql: &str, start: usize) -> &str {
    let mut depth = 1;
    let len = sql[start..]
        .char_indices()
        .find(|&(_, c)| {
            depth += match c {
                '(' => 1,
                ')' => -1,
                _ => 0,
            };
            depth == 0
        })
        .expect("the subquery closes")
        .0;
    &sql[start..start + len]
}

/// The store's other SQL (see the module documentation).
mod sql {
    use std::sync::LazyLock;

    pub use docket::store::statements::jobs::{
        ALL_JOBS, CHAT_JOBS, JOB, JOB_BY_FILE, NEXT_WAITING_DOWNLOAD, RELEASE_JOB,
    };
    pub use docket::store::statements::retention::{
        COUNT_OLD_JOB_MESSAGES, COUNT_OLD_JOBS, COUNT_OLD_MESSAGES, COUNT_OLD_UPDATES, DUE_RESULTS, EXPIRE_DUE,
        FILE_OWNERS,
    };

    use super::{SQLITE, parenthesised};

    /// The per-candidate check of the download claim, for one chat: its count of the chat's jobs in
    /// flight, cut out of the claim, with $1 chat, $2 a job id, $3 now.
    pub static PER_CHAT_COUNT: LazyLock<String> = LazyLock::new(|| {
        let claim = SQLITE.download;
        let start = claim.find("SELECT COUNT(*) FROM jobs o").expect("the download claim counts a chat's jobs");
        parenthesised(claim, start).replace("j.chat_id", "$1").replace("j.id", "$2")
    });

    /// The per-candidate order check of the message claim, for one chat: its look at the chat's
    /// earlier open rows, cut out of the claim and counted, with $1 chat, $2 an outbox id.
    pub static CHAT_ORDER_CHECK: LazyLock<String> = LazyLock::new(|| {
        let claim = SQLITE.message;
        let start = claim.find("SELECT 1 FROM outbox e").expect("the message claim looks at a chat's earlier rows");
        parenthesised(claim, start)
            .replacen("SELECT 1", "SELECT COUNT(*)", 1)
            .replace("o.chat_id", "$1")
            .replace("o.id", "$2")
    });
}

fn statements(now: i64, ticket: i64, chat: i64, message_id: i64) -> Vec<Stmt> {
    use B::{Bool, I, NullI, NullS, S};
    let claim = |limits: ClaimLimits| {
        vec![S(OWNER), I(now + 300_000), I(now), I(limits.unknown_size), I(limits.max_size), I(limits.per_chat)]
    };
    let lease = vec![S(OWNER), I(now + 300_000), I(now)];
    let limited = ClaimLimits { unknown_size: 20 << 20, max_size: 1 << 30, per_chat: 2 };
    let s = |name, sqlite, pg, binds| Stmt { name, sqlite, pg, binds };
    vec![
        s("claim: download (Stage::Download, no limits)", SQLITE.download, PG.download, claim(ClaimLimits::NONE)),
        s("claim: download (claim_download, per_chat = 2)", SQLITE.download, PG.download, claim(limited)),
        s(
            "claim: process, first statement (a lapsed `processing` job)",
            SQLITE.process_lapsed,
            PG.process_lapsed,
            lease.clone(),
        ),
        s(
            "claim: process, second statement (a `fetched` job)",
            SQLITE.process_fetched,
            PG.process_fetched,
            lease.clone(),
        ),
        s("claim: message (claim_message)", SQLITE.message, PG.message, lease),
        s("next_waiting_download", sql::NEXT_WAITING_DOWNLOAD, sql::NEXT_WAITING_DOWNLOAD, vec![I(now)]),
        s("job (status, /status <ticket>)", sql::JOB, sql::JOB, vec![I(ticket)]),
        s("jobs (/jobs: chat, limit 10)", sql::CHAT_JOBS, sql::CHAT_JOBS, vec![I(chat), NullS, I(10)]),
        s("job_by_file (intake)", sql::JOB_BY_FILE, sql::JOB_BY_FILE, vec![I(chat), S("AgAD12345")]),
        s(
            "release_job",
            sql::RELEASE_JOB,
            sql::RELEASE_JOB,
            vec![I(ticket), S("accepted"), I(1), S("accepted"), I(0), NullS, I(2), Bool(true), I(now), Bool(false)],
        ),
        s("janitor: results_due(now)", sql::DUE_RESULTS, sql::DUE_RESULTS, vec![I(now)]),
        s("janitor: expire_due", sql::EXPIRE_DUE, sql::EXPIRE_DUE, vec![I(now)]),
        s("janitor: file_owners", sql::FILE_OWNERS, sql::FILE_OWNERS, vec![]),
        s("janitor: prune updates", sql::COUNT_OLD_UPDATES, sql::COUNT_OLD_UPDATES, vec![I(now - 30 * DAY)]),
        s("janitor: prune messages", sql::COUNT_OLD_MESSAGES, sql::COUNT_OLD_MESSAGES, vec![I(now - 30 * DAY)]),
        s(
            "janitor: prune job messages (prune_jobs)",
            sql::COUNT_OLD_JOB_MESSAGES,
            sql::COUNT_OLD_JOB_MESSAGES,
            vec![I(now - 30 * DAY)],
        ),
        s("janitor: prune jobs (prune_jobs)", sql::COUNT_OLD_JOBS, sql::COUNT_OLD_JOBS, vec![I(now - 30 * DAY)]),
        s(
            "per-chat count of the download claim (one candidate)",
            &sql::PER_CHAT_COUNT,
            &sql::PER_CHAT_COUNT,
            vec![I(chat), I(ticket), I(now)],
        ),
        s(
            "order check of the message claim (one candidate)",
            &sql::CHAT_ORDER_CHECK,
            &sql::CHAT_ORDER_CHECK,
            vec![I(chat), I(message_id)],
        ),
        s("jobs with no chat (admin listing: NULL chat)", sql::ALL_JOBS, sql::ALL_JOBS, vec![NullI, NullS, I(10)]),
    ]
}

// ---------------------------------------------------------------------------------------------
// Statistics (the definitions are `bench_support::stats`, shared with the other benchmarks)
// ---------------------------------------------------------------------------------------------

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 10.0 { format!("{ms:.3}") } else { format!("{ms:.1}") }
}

fn median(v: &[Duration]) -> Duration {
    Latency::of(v).median
}

// ---------------------------------------------------------------------------------------------
// 1. The janitor pass
// ---------------------------------------------------------------------------------------------

/// What a pass over the generated data must report.
#[derive(Debug, Default, Clone, Copy)]
struct Expect {
    files: usize,
    expired_jobs: usize,
    removed_expired: usize,
    removed_orphan: usize,
    removed_stale: usize,
    kept_leased: usize,
    pruned_updates: u64,
    pruned_messages: u64,
}

/// A file to create, with how old its mtime is.
struct FileSpec {
    path: PathBuf,
    age: Option<Duration>,
}

/// The janitor data: job `i` gets a role by `i % 100`.
///
/// | i % 100 | share | job | files |
/// |---|---|---|---|
/// | 0–9 | 10 % | `ready`, past `result_expires_at` | result → deleted (expired) |
/// | 10–77 | 68 % | `ready` | result, kept |
/// | 78–87 | 10 % | `failed`; 78–82 left a result folder behind | 78–82: orphan |
/// | 88–92 | 5 % | `expired`; 88–89 left a `.source` behind | 88–89: orphan |
/// | 93 | 1 % | `accepted`, queued | — |
/// | 94 | 1 % | `accepted`, leased | `.part` 8 h old, kept (leased) |
/// | 95 | 1 % | `accepted`, lease lapsed | `.part` 7 h old → deleted (stale) |
/// | 96 | 1 % | `accepted`, not leased | `.part` 10 min old, kept |
/// | 97–98 | 2 % | `fetched` | source, kept |
/// | 99 | 1 % | `processing`, leased | source (kept) + work output (kept, leased) |
///
/// plus, for i % 100 < 8, a result folder of a ticket that has no job (orphan): N files in all.
/// Every job has an `updates` row and a sent ticket reply; ended and ready jobs a sent
/// result or failure message. Ended jobs are spread over 60 days, so about half of their rows are
/// older than the 30-day history and pruned.
fn janitor_data(n: usize, now: i64, spool: &Spool, seed: u64) -> (Vec<JobRow>, Vec<MsgRow>, Vec<FileSpec>, Expect) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut jobs = Vec::with_capacity(n);
    let mut msgs = Vec::with_capacity(2 * n);
    let mut files = Vec::with_capacity(n);
    let mut e = Expect::default();
    let history = now - 30 * DAY;
    let results = spool.results_root();
    let downloads = spool.downloads();
    let work = spool.work_root();
    let result_file = |id: i64| results.join(id.to_string()).join(format!("scanned-contract-{id}.pdf"));
    for i in 1..=n as i64 {
        let chat = 1000 + rng.random_range(0..1000);
        let role = i % 100;
        let mut job;
        match role {
            0..=77 => {
                let expires = if role < 10 {
                    now - rng.random_range(MINUTE..16 * HOUR)
                } else {
                    now + rng.random_range(10 * MINUTE..7 * DAY - 16 * HOUR)
                };
                let created = expires - 7 * DAY - 2 * MINUTE;
                job = JobRow::new(i, chat, "ready", created, created + 2 * MINUTE);
                let path = result_file(i);
                job.result_path = Some(path.to_string_lossy().into_owned());
                job.result_expires_at = Some(expires);
                files.push(FileSpec { path, age: None });
                if role < 10 {
                    e.expired_jobs += 1;
                    e.removed_expired += 1;
                }
            }
            78..=92 => {
                let mut created = now - rng.random_range(HOUR..60 * DAY);
                if (created - history).abs() < 2 * HOUR {
                    // Keep clear of the history boundary, which moves while the benchmark runs.
                    created -= 4 * HOUR;
                }
                let updated = (created + rng.random_range(MINUTE..7 * DAY)).min(now - MINUTE);
                let status = if role < 88 { "failed" } else { "expired" };
                job = JobRow::new(i, chat, status, created, updated);
                if status == "expired" {
                    job.result_expires_at = Some(updated);
                }
                if role <= 82 {
                    files.push(FileSpec { path: result_file(i), age: Some(Duration::from_secs(86_400)) });
                    e.removed_orphan += 1;
                } else if (88..=89).contains(&role) {
                    let path = downloads.join(format!("{i}-k3j9x2.source"));
                    files.push(FileSpec { path, age: Some(Duration::from_secs(86_400)) });
                    e.removed_orphan += 1;
                }
                if created < history {
                    e.pruned_updates += 1;
                }
            }
            93..=96 => {
                let created = now - rng.random_range(MINUTE..30 * MINUTE);
                job = JobRow::new(i, chat, "accepted", created, created);
                let part = downloads.join(format!("{i}-q8v1m4.part"));
                match role {
                    94 => {
                        job.lease_until = Some(now + 4 * MINUTE);
                        job.lease_token = 1;
                        job.attempts = 1;
                        files.push(FileSpec { path: part, age: Some(Duration::from_secs(8 * 3600)) });
                        e.kept_leased += 1;
                    }
                    95 => {
                        job.lease_until = Some(now - 10 * MINUTE);
                        job.lease_token = 1;
                        job.attempts = 1;
                        files.push(FileSpec { path: part, age: Some(Duration::from_secs(7 * 3600)) });
                        e.removed_stale += 1;
                    }
                    96 => files.push(FileSpec { path: part, age: Some(Duration::from_secs(600)) }),
                    _ => {}
                }
            }
            _ => {
                let created = now - rng.random_range(MINUTE..30 * MINUTE);
                let status = if role == 99 { "processing" } else { "fetched" };
                job = JobRow::new(i, chat, status, created, created + MINUTE);
                let source = downloads.join(format!("{i}-z7c2p5.source"));
                job.local_path = Some(source.to_string_lossy().into_owned());
                files.push(FileSpec { path: source, age: None });
                if role == 99 {
                    job.lease_until = Some(now + 4 * MINUTE);
                    job.lease_token = 2;
                    job.attempts = 1;
                    files.push(FileSpec { path: work.join(i.to_string()).join("optimized.pdf"), age: None });
                    e.kept_leased += 1;
                }
            }
        }
        if role < 8 {
            let ghost = n as i64 + i;
            files.push(FileSpec { path: result_file(ghost), age: Some(Duration::from_secs(3600)) });
            e.removed_orphan += 1;
        }
        let mut msg = |kind, status, mut updated_at: i64| {
            let id = msgs.len() as i64 + 1;
            if (updated_at - history).abs() < 2 * HOUR {
                updated_at -= 4 * HOUR;
            }
            if status == "sent" && updated_at < history {
                e.pruned_messages += 1;
            }
            msgs.push(MsgRow { id, job: job.id, chat: job.chat, kind, status, updated_at });
        };
        msg("ticket_reply", "sent", job.created_at + 1000);
        match job.status {
            "ready" | "expired" => msg("result", "sent", job.created_at + 2 * MINUTE + 1000),
            "failed" => msg("failure", "sent", job.updated_at + 1000),
            _ => {}
        }
        jobs.push(job);
    }
    e.files = files.len();
    (jobs, msgs, files, e)
}

fn make_files(files: &[FileSpec]) -> anyhow::Result<()> {
    let body = vec![b'%'; 1024];
    let now = SystemTime::now();
    for f in files {
        if let Some(dir) = f.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&f.path, &body)?;
        if let Some(age) = f.age {
            std::fs::File::options().write(true).open(&f.path)?.set_modified(now - age)?;
        }
    }
    Ok(())
}

/// The janitor's own walk of the data folder (`list_files` in src/janitor.rs), copied: the same
/// `read_dir` and `symlink_metadata` calls, so its time is the listing share of a pass.
fn list_like_janitor(spool: &Spool) -> usize {
    let mut count = 0;
    let mut push = |path: &Path| {
        if std::fs::symlink_metadata(path).is_ok() {
            count += 1;
        }
    };
    for (downloads, root) in [(true, spool.downloads()), (false, spool.work_root()), (false, spool.results_root())] {
        let Ok(entries) = std::fs::read_dir(&root) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if downloads {
                push(&path);
            } else if path.is_dir() {
                for inner in std::fs::read_dir(&path).into_iter().flatten().flatten() {
                    push(&inner.path());
                }
            } else {
                push(&path);
            }
        }
    }
    count
}

#[derive(Debug, Default, Clone)]
struct JanitorRun {
    /// Load average (1 min) and `some avg10` of /proc/pressure/io when the timing started.
    load: String,
    fill: Duration,
    list: Duration,
    owners: Duration,
    ready: Duration,
    prune_dry: Duration,
    cold_dry: Option<Duration>,
    dry: Duration,
    real: Duration,
    again: Duration,
    commit: Duration,
    expired: usize,
    removed: usize,
    files: usize,
    outbox: usize,
}

async fn janitor_part(args: &Args, dir: &Path) -> anyhow::Result<()> {
    println!("\n## 1. Janitor pass\n");
    let mut config = Config::from_toml_str("", None, None)?;
    config.storage.min_free = 1;
    let settings = JanitorSettings::from_config(&config);
    println!(
        "Settings: the defaults (`part_max_age` {:?}, `history` {:?}, `prune_jobs` {}, `results_bytes` {:?}), \
         `min_free` lowered to 1 byte. {} runs per size, each on freshly built data.\n",
        settings.part_max_age, settings.history, settings.prune_jobs, settings.results_bytes, args.runs
    );
    let mut medians: Vec<(usize, JanitorRun)> = Vec::new();
    let mut phase_medians: Vec<(usize, Phases)> = Vec::new();
    let mut detail = String::new();
    for &n in &args.sizes {
        let mut runs = Vec::new();
        let mut phases = Vec::new();
        for run in 0..args.runs {
            eprintln!("janitor: N = {n}, run {}/{}", run + 1, args.runs);
            let r = janitor_run(args, dir, n, run, &config).await?;
            if run < args.phase_runs {
                eprintln!("janitor: N = {n}, run {}/{}, phases one by one", run + 1, args.phase_runs);
                phases.push(phases_run(dir, n, run, &config).await?);
            }
            writeln!(
                detail,
                "| {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                run + 1,
                r.load,
                ms(r.list),
                ms(r.owners),
                ms(r.ready),
                ms(r.prune_dry),
                r.cold_dry.map_or("—".into(), ms),
                ms(r.dry),
                ms(r.real),
                ms(r.again),
                ms(r.commit),
            )?;
            runs.push(r);
        }
        phase_medians.push((n, medians_of!(phases, Phases { expire, list, owners, unlink, dirs, prune })));
        let cold: Vec<Duration> = runs.iter().filter_map(|r| r.cold_dry).collect();
        let all = medians_of!(runs, JanitorRun { fill, list, owners, ready, prune_dry, dry, real, again, commit; ..runs[0].clone() });
        medians.push((n, JanitorRun { cold_dry: (!cold.is_empty()).then(|| median(&cold)), ..all }));
    }
    println!(
        "Medians in ms (\"alone\" columns time one part of the pass by itself; commit = one autocommit \
         one-row UPDATE through the store, synchronous = FULL):\n"
    );
    println!(
        "| N jobs | files | outbox rows | expired jobs | files removed | build data (s) | listing alone | \
         file_owners alone | results_due alone | prune (dry) alone | dry-run pass | cold dry-run pass | \
         **real pass** | next pass (nothing to do) | one commit |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (n, m) in &medians {
        println!(
            "| {n} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | **{}** | {} | {} |",
            m.files,
            m.outbox,
            m.expired,
            m.removed,
            m.fill.as_secs_f64(),
            ms(m.list),
            ms(m.owners),
            ms(m.ready),
            ms(m.prune_dry),
            ms(m.dry),
            m.cold_dry.map_or("—".into(), ms),
            ms(m.real),
            ms(m.again),
            ms(m.commit),
        );
    }
    if let (Some((n0, a)), Some((n1, b))) = (medians.first(), medians.last())
        && n1 > n0
    {
        let r = |x: Duration, y: Duration| y.as_secs_f64() / x.as_secs_f64();
        println!(
            "\nRatios {n1}/{n0} (linear = {:.0}): real pass {:.1}, dry-run pass {:.1}, listing {:.1}, \
             file_owners {:.1}, results_due {:.1}, prune (dry) {:.1}, next pass {:.1}.",
            *n1 as f64 / *n0 as f64,
            r(a.real, b.real),
            r(a.dry, b.dry),
            r(a.list, b.list),
            r(a.owners, b.owners),
            r(a.ready, b.ready),
            r(a.prune_dry, b.prune_dry),
            r(a.again, b.again),
        );
        for (n, m) in &medians {
            let writes = m.real.saturating_sub(m.dry);
            let expiring = m.commit * u32::try_from(m.expired).unwrap_or(u32::MAX);
            println!(
                "\nN = {n}: real − dry = {} ms of writes; {} expiries × one commit ({} ms) ≈ {} ms of it.",
                ms(writes),
                m.expired,
                ms(m.commit),
                ms(expiring)
            );
        }
    }
    println!(
        "\nThe phases of a real pass replayed one by one on a fresh copy of the data (same calls, same \
         order; medians in ms): expiry = `expire_due` (one UPDATE); deletion = `remove_file` of every file \
         the dry run listed, from {DELETERS} threads as the janitor does; folders = `remove_dir` on the \
         per-job folders of the deleted files, from as many threads.\n"
    );
    println!(
        "| N jobs | expiry | listing | file_owners | deletion | folders | prune (real) | sum |\n\
         |---|---|---|---|---|---|---|---|"
    );
    for (n, p) in &phase_medians {
        let sum = p.expire + p.list + p.owners + p.unlink + p.dirs + p.prune;
        println!(
            "| {n} | {} | {} | {} | {} | {} | {} | {} |",
            ms(p.expire),
            ms(p.list),
            ms(p.owners),
            ms(p.unlink),
            ms(p.dirs),
            ms(p.prune),
            ms(sum),
        );
    }
    println!(
        "\nEvery run (ms; load = 1-min load average / `some avg10` of /proc/pressure/io in % when the run's \
         timing started):\n\n| N | run | load | listing | file_owners | results_due | prune (dry) | cold dry | dry \
         | real | next | commit |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n{detail}"
    );
    Ok(())
}

/// A store and data folder filled with [`janitor_data`].
struct Built {
    root: PathBuf,
    store: Store,
    spool: Spool,
    expect: Expect,
    outbox: usize,
    failed_ticket: i64,
    fill: Duration,
}

async fn build(dir: &Path, n: usize, seed: u64) -> anyhow::Result<Built> {
    let root = dir.join(format!("janitor-{n}"));
    fresh_dir(&root)?;
    let db = root.join("docket.db");
    let store = Store::open(&DatabaseUrl::Sqlite(db.clone())).await?;
    let spool = Spool::open(&root.join("data"))?;
    let now = now_ms();
    let started = Instant::now();
    let (jobs, msgs, files, expect) = janitor_data(n, now, &spool, seed);
    let mut raw = Raw::Sqlite(sqlx::SqliteConnection::connect_with(&raw_sqlite_options(&db)).await?);
    raw.insert(&jobs, &msgs, true).await?;
    raw.close().await?;
    let rows = started.elapsed();
    let failed_ticket = jobs.iter().find(|j| j.status == "failed").map_or(1, |j| j.id);
    let made = tokio::task::spawn_blocking(move || make_files(&files).map(|()| files.len())).await??;
    ensure!(made == expect.files);
    let made_at = started.elapsed();
    sync_all();
    eprintln!(
        "  built N = {n}: rows {:.1} s, files {:.1} s, sync {:.1} s",
        rows.as_secs_f64(),
        (made_at - rows).as_secs_f64(),
        (started.elapsed() - made_at).as_secs_f64()
    );
    Ok(Built { root, store, spool, expect, outbox: msgs.len(), failed_ticket, fill: started.elapsed() })
}

impl Built {
    /// The janitor's dependencies on this data, as `docket run` builds them for `config`.
    fn deps(&self, config: &Config) -> JanitorDeps {
        app::janitor_deps(config, &Options::default(), self.store.clone(), self.spool.clone(), Arc::new(Notify::new()))
    }

    async fn remove(self) -> anyhow::Result<()> {
        self.store.close().await;
        std::fs::remove_dir_all(&self.root)?;
        Ok(())
    }
}

async fn janitor_run(args: &Args, dir: &Path, n: usize, run: usize, config: &Config) -> anyhow::Result<JanitorRun> {
    let b = build(dir, n, (n * 31 + run) as u64).await?;
    let (store, expect) = (b.store.clone(), b.expect);
    let deps = b.deps(config);
    let settings = deps.settings.get();
    let mut r =
        JanitorRun { fill: b.fill, files: expect.files, outbox: b.outbox, load: load_now(), ..JanitorRun::default() };
    if args.cold {
        sync_all();
        if std::fs::write("/proc/sys/vm/drop_caches", b"3\n").is_ok() {
            let t = Instant::now();
            pass(&deps, true).await?;
            r.cold_dry = Some(t.elapsed());
        } else {
            eprintln!("(--cold: dropping the page cache was refused; no cold pass)");
        }
    }
    let sp = b.spool.clone();
    let t = Instant::now();
    let listed = tokio::task::spawn_blocking(move || list_like_janitor(&sp)).await?;
    r.list = t.elapsed();
    ensure!(listed == expect.files, "listed {listed} files, expected {}", expect.files);
    let t = Instant::now();
    store.file_owners().await?;
    r.owners = t.elapsed();
    let t = Instant::now();
    let due = store.results_due(SystemClock.now()).await?.len();
    r.ready = t.elapsed();
    ensure!(due == expect.expired_jobs, "{due} results due, expected {}", expect.expired_jobs);
    let t = Instant::now();
    store
        .count_prunable(&History {
            older_than: SystemClock.now().minus(settings.history),
            ended_jobs: settings.prune_jobs,
        })
        .await?;
    r.prune_dry = t.elapsed();

    let t = Instant::now();
    let dry = pass(&deps, true).await?;
    r.dry = t.elapsed();
    let t = Instant::now();
    let real = pass(&deps, false).await?;
    r.real = t.elapsed();
    for (what, report) in [("dry", &dry), ("real", &real)] {
        let by = |c: Cause| report.removed.iter().filter(|x| x.cause == c).count();
        let got = (
            report.expired_jobs.len(),
            by(Cause::Expired),
            by(Cause::Orphan),
            by(Cause::StalePart),
            report.kept_leased,
            report.pruned.updates,
            report.pruned.messages,
        );
        let want = (
            expect.expired_jobs,
            expect.removed_expired,
            expect.removed_orphan,
            expect.removed_stale,
            expect.kept_leased,
            expect.pruned_updates,
            expect.pruned_messages,
        );
        ensure!(
            got == want,
            "{what} pass: (expired, expired files, orphans, stale, leased, updates, messages) = {got:?}, \
             expected {want:?}"
        );
    }
    r.expired = real.expired_jobs.len();
    r.removed = real.removed.len();
    let t = Instant::now();
    let again = pass(&deps, false).await?;
    r.again = t.elapsed();
    ensure!(again.removed.is_empty() && again.expired_jobs.is_empty(), "the second pass found work");
    let sp = b.spool.clone();
    let left = tokio::task::spawn_blocking(move || list_like_janitor(&sp)).await?;
    ensure!(left == expect.files - r.removed, "{left} files left after the pass");

    let mut commits = Vec::new();
    for _ in 0..100 {
        let t = Instant::now();
        store.forget_result_file_id(Ticket(b.failed_ticket), SystemClock.now()).await?;
        commits.push(t.elapsed());
    }
    r.commit = median(&commits);
    b.remove().await?;
    Ok(r)
}

/// The phases of a real pass, replayed one by one through the same public calls on a fresh copy
/// of the data: what each costs inside the pass.
#[derive(Debug, Default, Clone)]
struct Phases {
    expire: Duration,
    list: Duration,
    owners: Duration,
    unlink: Duration,
    dirs: Duration,
    prune: Duration,
}

/// How many threads the janitor deletes with (`DELETERS` in src/janitor.rs).
const DELETERS: usize = 4;

async fn phases_run(dir: &Path, n: usize, run: usize, config: &Config) -> anyhow::Result<Phases> {
    let b = build(dir, n, (n * 31 + run) as u64).await?;
    let deps = b.deps(config);
    let settings = deps.settings.get();
    // The list of files to delete, from a dry run (untimed).
    let plan = pass(&deps, true).await?;
    let mut p = Phases::default();
    let now = SystemClock.now();
    let t = Instant::now();
    let expired = b.store.expire_due(now).await?;
    p.expire = t.elapsed();
    ensure!(expired.len() == b.expect.expired_jobs);
    let sp = b.spool.clone();
    let t = Instant::now();
    tokio::task::spawn_blocking(move || list_like_janitor(&sp)).await?;
    p.list = t.elapsed();
    let t = Instant::now();
    b.store.file_owners().await?;
    p.owners = t.elapsed();
    let paths: Vec<PathBuf> = plan.removed.iter().map(|r| r.path.clone()).collect();
    let t = Instant::now();
    tokio::task::spawn_blocking(move || {
        std::thread::scope(|scope| {
            for part in paths.chunks(paths.len().div_ceil(DELETERS).max(1)) {
                scope.spawn(move || part.iter().try_for_each(std::fs::remove_file));
            }
        });
    })
    .await?;
    p.unlink = t.elapsed();
    let parents: std::collections::BTreeSet<PathBuf> = plan
        .removed
        .iter()
        .filter_map(|r| r.path.parent().map(Path::to_path_buf))
        .filter(|d| d.starts_with(b.spool.work_root()) || d.starts_with(b.spool.results_root()))
        .collect();
    let parents: Vec<PathBuf> = parents.into_iter().collect();
    let t = Instant::now();
    std::thread::scope(|scope| {
        for part in parents.chunks(parents.len().div_ceil(DELETERS).max(1)) {
            scope.spawn(move || {
                for dir in part {
                    let _ = std::fs::remove_dir(dir);
                }
            });
        }
    });
    p.dirs = t.elapsed();
    let t = Instant::now();
    b.store.prune(&History { older_than: now.minus(settings.history), ended_jobs: settings.prune_jobs }).await?;
    p.prune = t.elapsed();
    let again = pass(&deps, true).await?;
    ensure!(again.removed.is_empty() && again.expired_jobs.is_empty(), "the replayed phases left work");
    b.remove().await?;
    Ok(p)
}

// ---------------------------------------------------------------------------------------------
// 2. Query latency at 1M rows
// ---------------------------------------------------------------------------------------------

/// The 1M-row data. Ids grow with age (the newest job has the highest id); by age:
///
/// - newest 2 %: 50 % `accepted` (5 % of those waiting for a retry), 25 % `fetched`, 25 % `ready`;
///   then, as the default pools would hold them, the newest 4 `accepted` jobs are leased (being
///   downloaded) and the newest 2 `fetched` ones `processing` (leased);
/// - next 6 %: 90 % `ready`, 10 % `failed`;
/// - the rest: 85 % `expired`, 15 % `failed`.
///
/// Chats: 10,000 chats of ~100 jobs each, one heavy chat (`HEAVY_CHAT`) with 2 % of all jobs, and
/// one quiet chat (`QUIET_CHAT`) whose only jobs are the three oldest. One outbox row per job (its
/// ticket reply): the newest 0.1 % `pending`, 0.5 % `dead`, the rest `sent`.
fn query_data(n: usize, now: i64) -> (Vec<JobRow>, Vec<MsgRow>) {
    let mut rng = StdRng::seed_from_u64(1_000_003);
    let mut jobs = Vec::with_capacity(n);
    let mut msgs = Vec::with_capacity(n);
    let span = 365 * DAY;
    let n64 = n as i64;
    for i in 1..=n64 {
        let age = (n64 - i) * span / n64;
        let created = now - age - MINUTE;
        let chat = if i <= 3 {
            QUIET_CHAT
        } else if rng.random_range(0..100) < 2 {
            HEAVY_CHAT
        } else {
            100_000 + rng.random_range(0..10_000)
        };
        let band = (n64 - i) * 100 / n64;
        let x = rng.random_range(0..100);
        let status = match band {
            0..=1 => match x {
                0..50 => "accepted",
                50..75 => "fetched",
                _ => "ready",
            },
            2..=7 => {
                if x < 90 {
                    "ready"
                } else {
                    "failed"
                }
            }
            _ => {
                if x < 85 {
                    "expired"
                } else {
                    "failed"
                }
            }
        };
        // The heavy chat is held to `per_chat` like any chat would be: none of its jobs in flight
        // (the flood below puts 2 there).
        let status = if chat == HEAVY_CHAT && status == "fetched" { "ready" } else { status };
        let mut job = JobRow::new(i, chat, status, created, created + MINUTE);
        match status {
            "accepted" => {
                let y = rng.random_range(0..100);
                if y < 5 {
                    job.not_before = now + 10 * MINUTE;
                    job.attempts = 1;
                }
                if i % 5 == 0 {
                    job.declared_size = None;
                }
            }
            "fetched" | "processing" => {
                job.local_path = Some(format!("/var/lib/docket/downloads/{i}-z7c2p5.source"));
                if status == "processing" {
                    job.lease_until = Some(now + 4 * MINUTE);
                    job.attempts = 1;
                }
            }
            "ready" => {
                job.result_path = Some(format!("/var/lib/docket/results/{i}/scanned-contract-{i}.pdf"));
                job.result_expires_at = Some(created + 7 * DAY);
            }
            "expired" => job.result_expires_at = Some(created + 7 * DAY),
            _ => {}
        }
        let status = if n64 - i < n64 / 1000 {
            "pending"
        } else if rng.random_range(0..1000) < 5 {
            "dead"
        } else {
            "sent"
        };
        msgs.push(MsgRow { id: i, job: i, chat, kind: "ticket_reply", status, updated_at: created + 1000 });
        jobs.push(job);
    }
    // What the worker pools hold right now (default pools: 4 downloads, 2 processing): the newest
    // 4 `accepted` jobs are being downloaded, the newest 2 `fetched` ones processed.
    let mut held = (0, 0);
    for job in jobs.iter_mut().rev() {
        if job.chat == HEAVY_CHAT {
            continue;
        }
        if job.status == "accepted" && held.0 < 4 && job.not_before == 0 {
            held.0 += 1;
            job.lease_until = Some(now + 4 * MINUTE);
            job.attempts = 1;
        } else if job.status == "fetched" && held.1 < 2 {
            held.1 += 1;
            job.status = "processing";
            job.lease_until = Some(now + 4 * MINUTE);
            job.attempts = 1;
        }
    }
    (jobs, msgs)
}

/// Whether a timing loop goes on: fewer than `iters` samples and, after the first, less than
/// [`BUDGET`] spent (a statement that takes seconds is timed a few times, not a thousand).
fn more(samples: &[Duration], iters: usize, started: Instant) -> bool {
    samples.len() < iters && (samples.is_empty() || started.elapsed() < BUDGET)
}

/// Times `call` `iters` times, or for as long as [`BUDGET`] allows: the latency of its calls.
async fn timed(iters: usize, mut call: impl AsyncFnMut() -> anyhow::Result<()>) -> anyhow::Result<Latency> {
    let mut samples = Vec::with_capacity(iters);
    let started = Instant::now();
    while more(&samples, iters, started) {
        let t = Instant::now();
        call().await?;
        samples.push(t.elapsed());
    }
    Ok(Latency::of(&samples))
}

/// The most one latency row may take.
const BUDGET: Duration = Duration::from_secs(6);

async fn query_part(args: &Args, store: Store, mut raw: Raw, backend: &str) -> anyhow::Result<()> {
    let part = if backend == "SQLite" { "2" } else { "3" };
    println!("\n## {part}. Query latency at {} job rows and {} outbox rows ({backend})\n", args.rows, args.rows);
    let now = now_ms();
    eprintln!("{backend}: building {} jobs and outbox rows", args.rows);
    let t = Instant::now();
    let (jobs, msgs) = query_data(args.rows, now);
    raw.insert(&jobs, &msgs, false).await?;
    drop((jobs, msgs));
    println!("Data built in {:.1} s.\n", t.elapsed().as_secs_f64());
    println!("jobs by state: {:?}\n", raw.counts("jobs").await?);
    println!("outbox by state: {:?}\n", raw.counts("outbox").await?);

    // Reference rows for the binds.
    let now_ts = Timestamp::from_millis(now_ms());
    let mut typical_chat = ChatRef(0);
    for id in args.rows as i64 / 2.. {
        let job = store.job(Ticket(id)).await?.context("no job in the middle")?;
        if job.submission.chat.0 != HEAVY_CHAT {
            typical_chat = job.submission.chat;
            break;
        }
    }
    let head = store.next_waiting_download(now_ts).await?.context("no download waiting")?;
    let last_message =
        store.messages(&MessageFilter::chat(typical_chat)).await?.last().map_or(args.rows as i64, |m| m.id.0);

    println!("### Plans\n");
    if backend == "SQLite" {
        println!(
            "`EXPLAIN QUERY PLAN` of each statement as the store sends it (SQL copied from src/store), with \
             the binds it uses; the database has no `sqlite_stat1` (docket never runs `ANALYZE`). `SCAN` is a \
             full pass over a table or index; `SEARCH` uses an index for a range; `USE TEMP B-TREE FOR ORDER \
             BY` sorts every row that passes the WHERE clause before `LIMIT 1` can apply.\n"
        );
    } else {
        println!("`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)`, run in a transaction that is rolled back.\n");
    }
    let mut flagged = Vec::new();
    for stmt in statements(now_ts.as_millis(), head.ticket.0, typical_chat.0, last_message) {
        let plan = raw.plan(&stmt).await?;
        for line in plan.lines() {
            let l = line.trim_start_matches([' ', '`', '-']);
            if l.starts_with("SCAN") || l.contains("Seq Scan") || l.contains("TEMP B-TREE") || l.starts_with("Sort") {
                flagged.push(format!("{}: `{}`", stmt.name, l.trim()));
            }
        }
        println!("**{}**\n\n```text\n{}```\n", stmt.name, plan);
    }
    println!("Flagged plan lines (full scans, sorts):\n");
    for f in &flagged {
        println!("- {f}");
    }

    println!("\n### Latency\n");
    let iters = args.iters;
    let claims = (iters / 3).max(10);
    let mut table = Table::default();
    let mut rng = StdRng::seed_from_u64(7);
    let limited = ClaimLimits { unknown_size: 20 << 20, max_size: 1 << 30, per_chat: 2 };
    let lease = |now: i64| vec![B::S(OWNER), B::I(now + 300_000), B::I(now)];
    let with_limits = |l: ClaimLimits| {
        let mut b = lease(now_ms());
        b.extend([B::I(l.unknown_size), B::I(l.max_size), B::I(l.per_chat)]);
        b
    };

    table.start(backend, "claim: download, `claim_job(Stage::Download)`");
    table.push(time_claim_job(&store, Stage::Download, None, claims).await?);
    table.start(backend, "claim: download, `claim_download` with per_chat = 2");
    table.push(time_claim_job(&store, Stage::Download, Some(limited), claims).await?);
    table.start(backend, "claim: process, `claim_job(Stage::Process)`");
    table.push(time_claim_job(&store, Stage::Process, None, claims).await?);
    table.start(backend, "claim: message, `claim_message`");
    table.push(time_claim_message(&store, claims).await?);
    table.start(backend, "download claim's row search alone (SELECT, no limits)");
    table.push(raw.time_select(&row_search(SQLITE.download), &with_limits(ClaimLimits::NONE), iters).await?);
    table.start(backend, "download claim's row search alone (SELECT, per_chat = 2)");
    table.push(raw.time_select(&row_search(SQLITE.download), &with_limits(limited), iters).await?);
    table.start(backend, "process claim's row search alone, lapsed `processing` (SELECT)");
    table.push(raw.time_select(&row_search(SQLITE.process_lapsed), &lease(now_ms()), iters).await?);
    table.start(backend, "process claim's row search alone, `fetched` (SELECT)");
    table.push(raw.time_select(&row_search(SQLITE.process_fetched), &lease(now_ms()), iters).await?);
    table.start(backend, "message claim's row search alone (SELECT)");
    table.push(raw.time_select(&row_search(SQLITE.message), &lease(now_ms()), iters).await?);
    table.start(backend, "one-row UPDATE by id, autocommit (the floor of any write)");
    table.push(
        timed(claims, async || {
            store.forget_result_file_id(Ticket(1), SystemClock.now()).await?;
            Ok(())
        })
        .await?,
    );

    table.start(backend, "`next_waiting_download`");
    table.push(
        timed(iters, async || {
            store.next_waiting_download(SystemClock.now()).await?.context("none waiting")?;
            Ok(())
        })
        .await?,
    );
    table.start(backend, "`job(ticket)` (the status query), random tickets");
    // Drawn before the clock starts: only the query is timed.
    let tickets: Vec<Ticket> = (0..iters).map(|_| Ticket(rng.random_range(1..=args.rows as i64))).collect();
    let mut tickets = tickets.into_iter().cycle();
    table.push(
        timed(iters, async || {
            store.job(tickets.next().context("no tickets")?).await?.context("job missing")?;
            Ok(())
        })
        .await?,
    );
    for (what, chat) in [
        ("a typical chat (~100 jobs)", typical_chat),
        ("the heavy chat (2 % of all jobs)", ChatRef(HEAVY_CHAT)),
        ("a quiet chat (only the 3 oldest jobs)", ChatRef(QUIET_CHAT)),
    ] {
        table.start(backend, &format!("`jobs` (/jobs, chat, limit 10): {what}"));
        let filter = JobFilter { chat: Some(chat), limit: 10, ..JobFilter::default() };
        table.push(
            timed(iters, async || {
                ensure!(!store.jobs(&filter).await?.is_empty());
                Ok(())
            })
            .await?,
        );
    }
    table.start(backend, "order check of the message claim, one candidate of the heavy chat");
    table.push(raw.time_select(&sql::CHAT_ORDER_CHECK, &[B::I(HEAVY_CHAT), B::I(args.rows as i64)], iters).await?);
    table.start(backend, "per-chat count of the download claim, one candidate of the heavy chat");
    table.push(raw.time_select(&sql::PER_CHAT_COUNT, &[B::I(HEAVY_CHAT), B::I(0), B::I(now_ms())], iters).await?);

    // The flood: the heavy chat's oldest jobs queued at the head, 2 of its jobs in flight.
    eprintln!("{backend}: flood case");
    let flood_size = (args.rows / 1000).min(1000);
    let queued = raw
        .execute(format!(
            "UPDATE jobs SET status = 'accepted', not_before = 0, lease_owner = NULL, lease_until = NULL,
                 result_expires_at = NULL, declared_size = 150000
             WHERE id IN (SELECT id FROM jobs WHERE chat_id = {HEAVY_CHAT} AND status IN ('expired', 'failed')
                          ORDER BY id LIMIT {flood_size})"
        ))
        .await?;
    raw.execute(format!(
        "UPDATE jobs SET status = 'fetched', not_before = 0, local_path = '/var/lib/docket/downloads/x.source'
         WHERE id IN (SELECT id FROM jobs WHERE chat_id = {HEAVY_CHAT} AND status IN ('expired', 'failed')
                      ORDER BY id DESC LIMIT 2)"
    ))
    .await?;
    ensure!(queued == flood_size as u64, "queued {queued} of {flood_size}");
    let head = store.next_waiting_download(SystemClock.now()).await?.context("no head")?;
    ensure!(head.submission.chat == ChatRef(HEAVY_CHAT), "the flood is not at the head of the queue");
    table.start(
        backend,
        &format!("FLOOD ({flood_size} queued jobs of one chat at the head): `claim_download`, per_chat = 2"),
    );
    table.push(time_claim_job(&store, Stage::Download, Some(limited), claims).await?);
    table.start(backend, "FLOOD: `claim_job(Stage::Download)` (no limits)");
    table.push(time_claim_job(&store, Stage::Download, None, claims).await?);

    println!(
        "Milliseconds over n iterations (fewer when a statement is slow: each row stops after {} s). \
         The claims go through the store (a pool connection, autocommit, synchronous = FULL on SQLite) and \
         give each job or message back right after, untimed, so the table stays the same; \"row search \
         alone\" runs the claim's inner SELECT on a separate connection.\n",
        BUDGET.as_secs()
    );
    table.print();

    store.close().await;
    Ok(())
}

/// Latency rows, printed as a table.
#[derive(Default)]
struct Table {
    rows: Vec<(String, Latency)>,
    current: String,
}

impl Table {
    fn start(&mut self, backend: &str, name: &str) {
        eprintln!("{backend}: {name}");
        self.current = name.to_owned();
    }
    fn push(&mut self, stats: Latency) {
        self.rows.push((std::mem::take(&mut self.current), stats));
    }
    fn print(&self) {
        println!("| statement | n | median | p99 | max | p99 under 1 ms? |\n|---|---|---|---|---|---|");
        for (name, s) in &self.rows {
            let ok = if s.p99 < Duration::from_millis(1) { "yes" } else { "**no**" };
            println!("| {name} | {} | {} | {} | {} | {ok} |", s.n, ms(s.median), ms(s.p99), ms(s.max));
        }
    }
}

/// Claims of `stage` through the store (`claim_download` when `limits` are given), each job
/// given back at once, untimed, in the state it was claimed in.
async fn time_claim_job(
    store: &Store,
    stage: Stage,
    limits: Option<ClaimLimits>,
    iters: usize,
) -> anyhow::Result<Latency> {
    let mut samples = Vec::with_capacity(iters);
    let started = Instant::now();
    while more(&samples, iters, started) {
        let now = SystemClock.now();
        let t = Instant::now();
        let job = match &limits {
            Some(l) => store.claim_download(OWNER, now, LEASE, l).await?,
            None => store.claim_job(stage, OWNER, now, LEASE).await?,
        };
        samples.push(t.elapsed());
        let job = job.context("nothing to claim")?;
        let lease = job.lease.clone().context("no lease")?;
        let release = Release {
            from: job.state,
            event: JobEvent::RetryLater,
            not_before: job.not_before,
            detail: None,
            attempts: docket::store::AttemptRule::Restarted,
        };
        ensure!(store.release_job(job.ticket, &lease, &release, now).await?, "release failed");
    }
    Ok(Latency::of(&samples))
}

async fn time_claim_message(store: &Store, iters: usize) -> anyhow::Result<Latency> {
    let mut samples = Vec::with_capacity(iters);
    let started = Instant::now();
    while more(&samples, iters, started) {
        let now = SystemClock.now();
        let t = Instant::now();
        let msg = store.claim_message(OWNER, now, LEASE).await?;
        samples.push(t.elapsed());
        let msg = msg.context("no message to claim")?;
        let lease = msg.lease.clone().context("no lease")?;
        ensure!(
            store.retry_message(msg.id, &lease, Timestamp::from_millis(0), "benchmark", now).await?,
            "giving the message back failed"
        );
    }
    Ok(Latency::of(&samples))
}

// ---------------------------------------------------------------------------------------------
// 3. PostgreSQL
// ---------------------------------------------------------------------------------------------

async fn pg_part(args: &Args, url: &str) -> anyhow::Result<()> {
    const NAME: &str = "docket_bench_janitor";
    let mut admin = sqlx::PgConnection::connect(url).await.context("connecting to PostgreSQL")?;
    sqlx::query("DROP DATABASE IF EXISTS docket_bench_janitor WITH (FORCE)").execute(&mut admin).await?;
    sqlx::query("CREATE DATABASE docket_bench_janitor").execute(&mut admin).await?;
    let mut bench_url = url::Url::parse(url)?;
    bench_url.set_path(NAME);
    let version: String = sqlx::query_scalar("SHOW server_version").fetch_one(&mut admin).await?;
    let result = async {
        let store = Store::open(&DatabaseUrl::Postgres(bench_url.to_string())).await?;
        let raw = Raw::Pg(sqlx::PgConnection::connect(bench_url.as_str()).await?);
        query_part(args, store, raw, &format!("PostgreSQL {version}")).await
    }
    .await;
    sqlx::query("DROP DATABASE IF EXISTS docket_bench_janitor WITH (FORCE)").execute(&mut admin).await?;
    result
}
