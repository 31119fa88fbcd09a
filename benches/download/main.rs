//! The download-stage benchmark ("Large files"): docket's real `pipeline::download::fetch`
//!
//! - over HTTP from nginx on loopback (local Bot API with `local_files_url`) against
//!   `curl -s -o FILE URL`, and from a local path (local Bot API without a file server) against
//!   `cp FILE COPY`, as throughput ratios, interleaved run by run;
//! - peak RSS (`VmHWM`) of a process running the stage on a 1 GiB and a 4 GiB file;
//! - accepted → first byte requested on an idle bot (`docket::app::start` against the fake Bot
//!   API of the integration tests).
//!
//! `cargo bench --bench download` prints markdown tables on stdout (progress on stderr).
//! Options after `--`: `--runs N` (5), `--size-mib N` (1024), `--big-mib N` (4096),
//! `--jobs N` (20), `--only throughput|rss|latency` (repeatable), `--dir PATH`
//! (default `target/docket-bench`; must be readable by nginx's unprivileged worker),
//! `--keep-files`. Needs `nginx`, `curl`, `cp`, `sync`, `dd`; run as root to drop the page cache.

#![allow(clippy::print_stdout, reason = "a benchmark reports its tables on stdout")]

mod latency;
mod servers;
mod sys;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use bench_support::stats::{Spread, median, min_max, percentile, ratios};
use docket::app::{self, Options};
use docket::config::{BotToken, Config, DatabaseUrl};
use docket::domain::{ChatRef, Clock, MessageId, Operation, SystemClock, UpdateId, UserId};
use docket::domain::{Job, Submission};
use docket::pipeline::{PipelineDeps, download};
use docket::spool::Spool;
use docket::store::{Stage, Store};
use serde_json::json;
use url::Url;

use servers::{FileApi, Nginx, TOKEN};
use sys::{CacheMode, MIB};

/// A part of the benchmark (`--only`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Part {
    Throughput,
    Rss,
    Latency,
}

/// The download-stage benchmark: docket's `download::fetch` against curl and cp, its peak RSS,
/// and accepted → first byte requested (see BENCHMARKS.md).
#[derive(Debug, clap::Parser)]
#[command(bin_name = "cargo bench --bench download --")]
struct Args {
    /// Interleaved runs per throughput case.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// The throughput file, and the smaller RSS file, in MiB.
    #[arg(long, default_value_t = 1024)]
    size_mib: u64,
    /// The larger RSS file, in MiB.
    #[arg(long, default_value_t = 4096)]
    big_mib: u64,
    /// Jobs in the latency part.
    #[arg(long, default_value_t = 20)]
    jobs: usize,
    /// Run only this part (repeatable); all of them by default.
    #[arg(long = "only", value_enum)]
    only: Vec<Part>,
    /// Where the test files go; must be readable by nginx's unprivileged worker.
    #[arg(long, default_value_os_t = Path::new(env!("CARGO_MANIFEST_DIR")).join("target").join("docket-bench"))]
    dir: PathBuf,
    /// Keep the generated test files for the next run.
    #[arg(long)]
    keep_files: bool,
    /// Internal: one fetch in a fresh process for the RSS part, then an `RSS {json}` line.
    #[arg(long, hide = true, num_args = 6, value_names = ["MODE", "FILE", "SIZE", "SHA256", "DATA_DIR", "FILES_URL"])]
    child_rss: Option<Vec<String>>,
}

impl Args {
    /// The throughput file's size, in bytes.
    fn size(&self) -> u64 {
        self.size_mib * MIB
    }

    /// The larger RSS file's size, in bytes.
    fn big(&self) -> u64 {
        self.big_mib * MIB
    }

    /// The parts to run.
    fn parts(&self) -> Vec<Part> {
        if self.only.is_empty() { vec![Part::Throughput, Part::Rss, Part::Latency] } else { self.only.clone() }
    }
}

fn main() -> anyhow::Result<()> {
    let args: Args = bench_support::args();
    if let Some(child) = &args.child_rss {
        return child_rss(child);
    }
    ensure!(args.runs > 0 && args.jobs > 0, "--runs and --jobs must be positive");
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    std::fs::create_dir_all(&args.dir)?;
    let dir = args.dir.canonicalize()?;
    let machine = sys::machine(&dir);
    let load_before = sys::load_average();
    let mut out = String::new();
    writeln!(out, "## Download stage — `cargo bench --bench download`\n")?;
    writeln!(
        out,
        "Machine: {} CPUs, {}, SHA-NI {}, {} RAM, kernel {}, data on {} (`{}`).",
        machine.nproc,
        machine.cpu_model,
        if machine.sha_ni { "present (`sha_ni` in /proc/cpuinfo)" } else { "absent" },
        machine.mem_total,
        machine.kernel,
        machine.filesystem,
        dir.display()
    )?;
    writeln!(out, "1-minute load average at start: {load_before}.\n")?;

    let measured = (|| {
        let parts = args.parts();
        if parts.contains(&Part::Throughput) {
            throughput(&rt, &args, &dir, &mut out)?;
        }
        if parts.contains(&Part::Rss) {
            rss(&args, &dir, &mut out)?;
        }
        if parts.contains(&Part::Latency) {
            let report = rt.block_on(latency::run(&dir.join("latency"), args.jobs))?;
            latency_table(&report, &mut out)?;
        }
        anyhow::Ok(())
    })();
    // The test files are gigabytes: remove them whatever happened.
    if !args.keep_files {
        let _ = std::fs::remove_dir_all(dir.join("files"));
    }
    for leftover in ["out", "latency", "nginx"] {
        let _ = std::fs::remove_dir_all(dir.join(leftover));
    }
    measured?;
    writeln!(out, "1-minute load average at end: {}.", sys::load_average())?;
    print!("{out}");
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// docket's download stage, wired as `app::start` wires it

fn pipeline_deps(store: &Store, spool: &Spool, api: &FileApi, files_url: Option<Url>) -> anyhow::Result<PipelineDeps> {
    // The defaults of `docket run`, with a download limit above every test file (the limit is
    // not what is measured) and a local Bot API, its files over HTTP at `files_url` if given.
    let mut config = Config::from_toml_str(
        "[telegram]\nlocal_api = true\n[limits]\nlocal_download = \"8 GiB\"\n",
        None,
        Some(api.api_url().as_str()),
    )?;
    config.telegram.local_files_url = files_url;
    let options = Options::default();
    let sealing = app::sealing_key(&config, &options.environment, &BotToken::new(TOKEN))?;
    let telegram = app::telegram_client(&config, BotToken::new(TOKEN), &options);
    Ok(app::pipeline_deps(&config, &options, store.clone(), spool.clone(), telegram, sealing))
}

/// A job in `accepted`, recorded and claimed as intake and a download worker would.
async fn claimed_job(store: &Store, size: u64) -> anyhow::Result<Job> {
    let now = SystemClock.now();
    let mut tx = store.begin().await?;
    tx.insert_job(
        &Submission {
            update_id: UpdateId(1),
            chat: ChatRef(1),
            user_id: Some(UserId(1)),
            message_id: MessageId(1),
            file_id: "BQACAgIAAxkBAAIbench".to_owned(),
            file_unique_id: "AgADbench".to_owned(),
            declared_name: Some("large.pdf".to_owned()),
            declared_mime: Some("application/pdf".to_owned()),
            declared_size: Some(i64::try_from(size)?),
            operation: Operation::Optimize,
            chosen_by_default: false,
            language_code: None,
            run_of: None,
        },
        now,
    )
    .await?;
    tx.commit().await?;
    store
        .claim_job(Stage::Download, "bench:download-0", now, Duration::from_secs(3600))
        .await?
        .context("nothing to claim")
}

/// One `fetch`: seconds, and the path it produced (already checked against size and hash).
async fn fetch_once(deps: &PipelineDeps, job: &Job, size: u64, sha256: &str) -> anyhow::Result<(f64, PathBuf)> {
    let start = Instant::now();
    let fetched =
        download::fetch(deps, job, &Arc::default()).await.map_err(|e| anyhow::anyhow!("fetch failed: {e:?}"))?;
    let secs = start.elapsed().as_secs_f64();
    ensure!(fetched.size == size, "fetched {} bytes, expected {size}", fetched.size);
    ensure!(fetched.sha256 == sha256, "fetched sha256 {} differs from the source's {sha256}", fetched.sha256);
    Ok((secs, PathBuf::from(fetched.path)))
}

// ---------------------------------------------------------------------------------------------
// Throughput

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Http,
    Local,
}

/// One docket run and one baseline run, back to back (seconds).
#[derive(Debug, Clone, Copy)]
struct Pair {
    docket: f64,
    /// `curl -s -o` / `cp` alone: the data may still be dirty in the page cache.
    base: f64,
    /// … plus `sync FILE` right after: the data on disk (docket does not sync a source; this is
    /// the stricter baseline, kept for comparison with the measurements of the fsync era).
    base_synced: f64,
}

fn throughput(rt: &tokio::runtime::Runtime, args: &Args, dir: &Path, out: &mut String) -> anyhow::Result<()> {
    let files = dir.join("files");
    std::fs::create_dir_all(&files)?;
    let source = files.join(format!("source-{}m.bin", args.size() / MIB));
    eprintln!("throughput: writing {} ({} MiB of pseudo-random bytes)", source.display(), args.size() / MIB);
    let sha256 = sys::make_file(&source, args.size())?;
    let cache = CacheMode::detect();
    let sha_speed = sys::sha256_mib_per_s();
    eprintln!("throughput: sha2 {sha_speed:.0} MiB/s; measuring the disk with dd conv=fsync");
    cache.settle(&source)?;
    let disk_speed = sys::disk_write_mib_per_s(dir, args.size())?;

    let nginx = Nginx::start(dir, &files)?;
    let url = nginx.url_of(&source);
    let outputs = dir.join("out");
    let _ = std::fs::remove_dir_all(&outputs);
    std::fs::create_dir_all(&outputs)?;
    let copy = outputs.join("baseline.bin");
    let (api, store, http_deps, local_deps, job) = rt.block_on(async {
        let api = FileApi::start().await?;
        api.serve(&source, args.size(), false);
        let store = Store::open(&DatabaseUrl::Sqlite(outputs.join("docket.db"))).await?;
        let spool = Spool::open(&outputs.join("data"))?;
        let http = pipeline_deps(&store, &spool, &api, Some(nginx.base_url()))?;
        let local = pipeline_deps(&store, &spool, &api, None)?;
        let job = claimed_job(&store, args.size()).await?;
        anyhow::Ok((api, store, http, local, job))
    })?;

    let mut pairs: Vec<(Case, Pair)> = Vec::new();
    for run in 0..args.runs {
        for case in [Case::Http, Case::Local] {
            let deps = if case == Case::Http { &http_deps } else { &local_deps };
            // A B on even runs, B A on odd ones: drift and "who goes first" hit both sides.
            let docket_first = run % 2 == 0;
            let mut pair = Pair { docket: 0.0, base: 0.0, base_synced: 0.0 };
            for docket_turn in [docket_first, !docket_first] {
                cache.settle(&source)?;
                if docket_turn {
                    let (secs, produced) = rt.block_on(fetch_once(deps, &job, args.size(), &sha256))?;
                    pair.docket = secs;
                    std::fs::remove_file(produced)?;
                } else {
                    let mut cmd = match case {
                        Case::Http => {
                            let mut c = Command::new("curl");
                            c.arg("-s").arg("-o").arg(&copy).arg(&url);
                            c
                        }
                        Case::Local => {
                            let mut c = Command::new("cp");
                            c.arg(&source).arg(&copy);
                            c
                        }
                    };
                    pair.base = sys::timed(&mut cmd)?.as_secs_f64();
                    let synced = sys::timed(Command::new("sync").arg(&copy))?.as_secs_f64();
                    pair.base_synced = pair.base + synced;
                    sys::check_size(&copy, args.size())?;
                    std::fs::remove_file(&copy)?;
                }
            }
            eprintln!(
                "throughput: run {}/{} {case:?}: docket {:.2} s, baseline {:.2} s (+sync {:.2} s)",
                run + 1,
                args.runs,
                pair.docket,
                pair.base,
                pair.base_synced
            );
            pairs.push((case, pair));
        }
    }
    let u32_probe = rt.block_on(async {
        // What getFile with a file_size of 4 GiB or more does to teloxide's u32 `file_size`.
        api.serve(&source, 4096 * MIB, true);
        let r = local_deps.telegram.get_file("BQACAgIAAxkBAAIbench").await;
        api.serve(&source, args.size(), false);
        match r {
            Ok(f) => format!("accepted (size {:?})", f.size),
            Err(e) => format!("refused: `{e}`"),
        }
    });
    drop(nginx);
    rt.block_on(store.close());
    let _ = std::fs::remove_dir_all(&outputs);

    let mib = args.size() as f64 / MIB as f64;
    writeln!(out, "### Throughput: {} MiB file, {} interleaved runs per case\n", args.size() / MIB, args.runs)?;
    writeln!(out, "Cache: {}.", cache.describe())?;
    writeln!(
        out,
        "Ratio = docket throughput / baseline throughput of the same run pair (baseline s / docket s); \
         median of the per-pair ratios, range in brackets.\n"
    )?;
    writeln!(
        out,
        "| case | docket median | baseline | baseline median | ratio (goal ≥ 0.9) | range |\n|---|---|---|---|---|---|"
    )?;
    for (case, label, base_label) in [
        (Case::Http, "HTTP via nginx", ["`curl -s -o FILE URL`", "`curl -s -o FILE URL` + `sync FILE`"]),
        (Case::Local, "local path", ["`cp FILE COPY`", "`cp FILE COPY` + `sync COPY`"]),
    ] {
        let runs: Vec<Pair> = pairs.iter().filter(|(c, _)| *c == case).map(|(_, p)| *p).collect();
        let docket: Vec<f64> = runs.iter().map(|p| p.docket).collect();
        for (synced, base_label) in [(false, base_label[0]), (true, base_label[1])] {
            let base: Vec<f64> = runs.iter().map(|p| if synced { p.base_synced } else { p.base }).collect();
            // Throughput ratio = baseline seconds / docket seconds, per run pair.
            let Spread { min: lo, median: r, max: hi } = Spread::of(&ratios(&base, &docket));
            writeln!(
                out,
                "| {label} | {:.2} s ({:.0} MiB/s) | {base_label} | {:.2} s ({:.0} MiB/s) | **{r:.2}** {} | {lo:.2}–{hi:.2} |",
                median(&docket),
                mib / median(&docket),
                median(&base),
                mib / median(&base),
                if r >= 0.9 { "met" } else { "not met" },
            )?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "Context: `sha2` (docket's hasher) from memory {sha_speed:.0} MiB/s on this CPU; \
         disk sequential write `dd bs=4M conv=fsync` {disk_speed:.0} MiB/s."
    )?;
    writeln!(out, "getFile answering `file_size` = 4 GiB (2^32): {u32_probe}.\n")?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Peak RSS: one fresh process per file and mode

#[derive(Debug)]
struct RssRow {
    size: u64,
    mode: &'static str,
    hwm_before_kib: u64,
    hwm_after_kib: u64,
    rss_after_kib: u64,
    secs: f64,
}

fn rss(args: &Args, dir: &Path, out: &mut String) -> anyhow::Result<()> {
    let files = dir.join("files");
    std::fs::create_dir_all(&files)?;
    let cache = CacheMode::detect();
    let nginx = Nginx::start(dir, &files)?;
    let exe = std::env::current_exe()?;
    let mut rows = Vec::new();
    for size in [args.size(), args.big()] {
        let source = files.join(format!("source-{}m.bin", size / MIB));
        eprintln!("rss: writing {} ({} MiB)", source.display(), size / MIB);
        let sha256 = sys::make_file(&source, size)?;
        for mode in ["http", "local"] {
            cache.settle(&source)?;
            let data = dir.join(format!("rss-{mode}-{}m", size / MIB));
            let _ = std::fs::remove_dir_all(&data);
            let output = Command::new(&exe)
                .arg("--child-rss")
                .arg(mode)
                .arg(&source)
                .arg(size.to_string())
                .arg(&sha256)
                .arg(&data)
                .arg(nginx.base_url().as_str())
                .stdin(Stdio::null())
                .stderr(Stdio::inherit())
                .output()?;
            let _ = std::fs::remove_dir_all(&data);
            ensure!(output.status.success(), "the rss child ({mode}, {size} bytes) failed: {}", output.status);
            let stdout = String::from_utf8_lossy(&output.stdout);
            let line =
                stdout.lines().find_map(|l| l.strip_prefix("RSS ")).context("the rss child printed no RSS line")?;
            let v: serde_json::Value = serde_json::from_str(line)?;
            let kib = |k: &str| v.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
            let row = RssRow {
                size,
                mode,
                hwm_before_kib: kib("hwm_before_kib"),
                hwm_after_kib: kib("hwm_after_kib"),
                rss_after_kib: kib("rss_after_kib"),
                secs: v.get("secs").and_then(serde_json::Value::as_f64).unwrap_or(f64::NAN),
            };
            eprintln!("rss: {} MiB {mode}: VmHWM {} KiB", size / MIB, row.hwm_after_kib);
            rows.push(row);
        }
        if !args.keep_files && size != args.size() {
            sys::remove_file(&source);
        }
    }
    drop(nginx);

    writeln!(out, "### Peak RSS of the download stage (one fresh process per row)\n")?;
    writeln!(
        out,
        "Each row is a new process (this bench re-executed with `--child-rss`) holding what `app::start` \
         builds for the stage — tokio runtime (default threads), SQLite store, spool, Bot API client — that \
         records and claims one job and runs `download::fetch` once. VmHWM from /proc/self/status. \
         Cache: {}. getFile leaves `file_size` out for a file of 4 GiB or more (teloxide reads it as \
         `u32`, see above); the job's declared size still checks the total.\n",
        cache.describe()
    )?;
    writeln!(
        out,
        "| file | source | VmHWM before fetch | VmHWM after fetch (peak) | VmRSS after | fetch time |\n|---|---|---|---|---|---|"
    )?;
    for r in &rows {
        writeln!(
            out,
            "| {} MiB | {} | {:.1} MiB | **{:.1} MiB** | {:.1} MiB | {:.1} s ({:.0} MiB/s) |",
            r.size / MIB,
            if r.mode == "http" { "HTTP via nginx" } else { "local path" },
            r.hwm_before_kib as f64 / 1024.0,
            r.hwm_after_kib as f64 / 1024.0,
            r.rss_after_kib as f64 / 1024.0,
            r.secs,
            r.size as f64 / MIB as f64 / r.secs
        )?;
    }
    let peak = rows.iter().map(|r| r.hwm_after_kib).max().unwrap_or(0) as f64 / 1024.0;
    writeln!(out, "\nLargest peak: {peak:.1} MiB (goal: under 64 MiB and the same for 1 GiB and 4 GiB).\n")?;
    Ok(())
}

/// `--child-rss MODE FILE SIZE SHA256 DATA_DIR FILES_URL`: one fetch, then an `RSS {json}` line.
fn child_rss(args: &[String]) -> anyhow::Result<()> {
    let [mode, file, size, sha256, data, files_url] = args else {
        bail!("--child-rss MODE FILE SIZE SHA256 DATA_DIR FILES_URL");
    };
    let size: u64 = size.parse()?;
    let data = PathBuf::from(data);
    let files_url = match mode.as_str() {
        "http" => Some(Url::parse(files_url)?),
        "local" => None,
        other => bail!("mode {other}: expected http or local"),
    };
    // As `#[tokio::main]` in src/main.rs: a multi-thread runtime with one worker per core.
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let api = FileApi::start().await?;
        api.serve(Path::new(file), size, false);
        std::fs::create_dir_all(&data)?;
        let store = Store::open(&DatabaseUrl::Sqlite(data.join("docket.db"))).await?;
        let spool = Spool::open(&data.join("data"))?;
        let deps = pipeline_deps(&store, &spool, &api, files_url)?;
        let job = claimed_job(&store, size).await?;
        let hwm_before = sys::vm_kib("VmHWM")?;
        let (secs, produced) = fetch_once(&deps, &job, size, sha256).await?;
        let hwm_after = sys::vm_kib("VmHWM")?;
        let rss_after = sys::vm_kib("VmRSS")?;
        std::fs::remove_file(produced)?;
        store.close().await;
        let line = json!({
            "hwm_before_kib": hwm_before,
            "hwm_after_kib": hwm_after,
            "rss_after_kib": rss_after,
            "secs": secs,
        });
        println!("RSS {line}");
        anyhow::Ok(())
    })
}

// ---------------------------------------------------------------------------------------------
// Latency

fn latency_table(report: &latency::Report, out: &mut String) -> anyhow::Result<()> {
    let n = report.samples.len();
    writeln!(out, "### Accepted → first byte requested, idle bot ({n} jobs)\n")?;
    writeln!(
        out,
        "The real `docket::app::start` (SystemClock, `Options::default()`: idle poll 1 s) against the \
         integration tests' fake Bot API; one 1-page PDF at a time, the next sent 0.4–1.4 s after the \
         previous result was delivered. t0 = the job's `created_at` (intake's clock while recording the \
         job, before its commit; millisecond resolution); the getFile arrival is recorded by the fake, \
         the file GET by a thread watching the fake's download counter every 0.1 ms. \
         Jobs not ending `ready`: {}.\n",
        report.not_ready
    )?;
    writeln!(out, "| interval | median | p95 | max | goal |\n|---|---|---|---|---|")?;
    type Pick = fn(&latency::Sample) -> f64;
    let rows: [(&str, Pick, &str); 3] = [
        ("update pushed → job accepted (`created_at`)", |s| s.push_to_accepted, "—"),
        ("accepted → getFile request", |s| s.accepted_to_get_file, "—"),
        ("**accepted → file GET (first byte requested)**", |s| s.accepted_to_get, "< 50 ms"),
    ];
    for (label, pick, goal) in rows {
        let v: Vec<f64> = report.samples.iter().map(pick).collect();
        let (_, max) = min_max(&v);
        let p95 = percentile(&v, 95.0);
        let verdict = if goal == "—" {
            String::new()
        } else if p95 < 50.0 {
            " (met at p95)".to_owned()
        } else if median(&v) < 50.0 {
            " (met at the median, not at p95)".to_owned()
        } else {
            " (not met)".to_owned()
        };
        writeln!(out, "| {label} | {:.1} ms | {p95:.1} ms | {max:.1} ms | {goal}{verdict} |", median(&v))?;
    }
    writeln!(out)?;
    Ok(())
}
