//! The memory benchmark (issue "Containment"): what the memory budget's factors are, and that
//! the budget holds.
//!
//! 1. **Peak RSS per MB of input**: `docket process FILE --contained` (the child every run is)
//!    on typical text PDFs and on PDFs of very many small objects (`scripts/hostile-pdfs
//!    --pages N`, a flat page tree), each `--runs` times; the child reports its own peak RSS
//!    (`VmHWM`). The factor is (peak − the peak on a one-page PDF) / input size; the budget
//!    reserves the worst one (`operations::OPTIMIZE_MEMORY_FACTOR`).
//! 2. **The budget holds**: the real `docket run` (this build's binary) against the fake Bot
//!    API, 20 documents of many small objects whose reservations add up to several times
//!    `[budget] memory`, with four process workers. The service's RSS and the sum of its
//!    children's RSS are sampled every 10 ms until every job has ended.
//!
//! `cargo bench --bench memory` prints markdown on stdout (progress on stderr). Options after
//! `--`: `--runs N` (3), `--dir PATH` (default `target/docket-bench-memory`).

#![allow(clippy::print_stdout, reason = "a benchmark reports its tables on stdout")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use bench_support::stats::median;
use docket::domain::Ticket;
use docket::store::{DatabaseUrl, Store};
use fake_bot_api::FakeTelegram;

#[path = "common/child.rs"]
mod child;
use child::{DOCKET, MIB};

/// The memory benchmark.
#[derive(Debug, clap::Parser)]
#[command(bin_name = "cargo bench --bench memory --")]
struct Args {
    /// Runs per input.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Where the inputs, databases and data folders go.
    #[arg(long, default_value_os_t = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/docket-bench-memory"))]
    dir: PathBuf,
}

/// Writes `scripts/hostile-pdfs` output with `pages` small pages into `dir`; returns the file.
fn many_objects(dir: &Path, pages: usize) -> anyhow::Result<PathBuf> {
    let out = dir.join(format!("objects-{pages}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/hostile-pdfs");
    let status = Command::new("python3")
        .arg(script)
        .arg(&out)
        .args(["--pages", &pages.to_string()])
        .stdout(Stdio::null())
        .status()?;
    ensure!(status.success(), "scripts/hostile-pdfs failed");
    Ok(out.join("huge-page-count.pdf"))
}

/// A PDF of `pages` pages of uncompressed text, `bytes_per_page` each: a typical document.
fn text_pdf(path: &Path, pages: usize, bytes_per_page: usize) -> anyhow::Result<PathBuf> {
    use lopdf::{Document, Object, Stream, dictionary};
    let mut doc = Document::with_version("1.5");
    let pages_id = doc.new_object_id();
    let font = doc.add_object(dictionary! { "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Helvetica" });
    let resources = doc.add_object(dictionary! { "Font" => dictionary! { "F1" => font } });
    let mut kids = Vec::new();
    for page in 0..pages {
        let mut content = format!("BT /F1 9 Tf 40 800 Td 11 TL (page {page}) Tj\n").into_bytes();
        let mut n = page as u64;
        while content.len() < bytes_per_page {
            n = n.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            content.extend_from_slice(
                format!("T* (clause {} of the agreement, schedule {}) Tj\n", n >> 40, n % 97).as_bytes(),
            );
        }
        content.extend_from_slice(b"ET\n");
        let contents = doc.add_object(Stream::new(dictionary! {}, content));
        kids.push(Object::from(
            doc.add_object(dictionary! { "Type" => "Page", "Parent" => pages_id, "Contents" => contents }),
        ));
    }
    let count = kids.len() as i64;
    doc.objects.insert(
        pages_id,
        Object::Dictionary(dictionary! {
            "Type" => "Pages", "Kids" => kids, "Count" => count, "Resources" => resources,
            "MediaBox" => vec![0.into(), 0.into(), 595.into(), 842.into()],
        }),
    );
    let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
    doc.trailer.set("Root", catalog);
    doc.save(path)?;
    Ok(path.to_path_buf())
}

/// The peak RSS the child reports for optimizing `input`, without limits that could bind.
fn child_peak(input: &Path, output: &Path) -> anyhow::Result<u64> {
    let out = child::process(input, None, output, 64 << 30, 256 << 20).stderr(Stdio::null()).output()?;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).context("the child's report")?;
    report["peak_rss_bytes"].as_u64().with_context(|| format!("no peak in {report}"))
}

/// RSS (`VmRSS`) of `pid`, and the sum of the RSS of its children.
fn rss_of_service_and_children(pid: u32) -> (u64, u64) {
    let rss = |pid: &str| -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let kib: u64 =
            status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    };
    let own = rss(&pid.to_string()).unwrap_or(0);
    let mut children = 0;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{name}/stat")) else { continue };
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if parent == Some(pid) {
            children += rss(&name).unwrap_or(0);
        }
    }
    (own, children)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let args: Args = bench_support::args();
    let _ = std::fs::remove_dir_all(&args.dir);
    std::fs::create_dir_all(&args.dir)?;
    let dir = args.dir.as_path();

    eprintln!("building the inputs");
    let base_input = many_objects(dir, 1)?;
    let mut inputs: Vec<(String, PathBuf)> = Vec::new();
    for (pages, per_page) in [(100, 10_000), (500, 10_000), (2000, 10_000)] {
        let path = text_pdf(&dir.join(format!("text-{pages}.pdf")), pages, per_page)?;
        inputs.push((format!("text, {pages} pages"), path));
    }
    for pages in [20_000, 100_000, 300_000] {
        inputs.push((format!("small objects, {pages} pages"), many_objects(dir, pages)?));
    }
    let out = dir.join("out.pdf");
    let base: Vec<f64> =
        (0..args.runs).map(|_| child_peak(&base_input, &out).map(|b| b as f64)).collect::<anyhow::Result<_>>()?;
    let base = median(&base);

    println!("## Peak RSS of an optimize child per MB of input\n");
    println!(
        "`docket process --contained` (release build), {} runs each; the child's own `VmHWM`. Base: a one-page PDF, \
         median {:.1} MiB. Factor = (peak − base) / input.\n",
        args.runs,
        base / MIB
    );
    println!("| input | size MiB | median peak MiB | factor |\n|---|---|---|---|");
    let mut worst: f64 = 0.0;
    for (label, path) in &inputs {
        eprintln!("measuring {label}");
        let size = std::fs::metadata(path)?.len() as f64;
        let peaks: Vec<f64> =
            (0..args.runs).map(|_| child_peak(path, &out).map(|b| b as f64)).collect::<anyhow::Result<_>>()?;
        let peak = median(&peaks);
        let factor = (peak - base).max(0.0) / size;
        worst = worst.max(factor);
        println!("| {label} | {:.1} | {:.1} | {factor:.1} |", size / MIB, peak / MIB);
    }
    println!(
        "\nWorst factor {worst:.1}; a run's address-space limit, and its reservation, is {} × input + {} MiB (`OPTIMIZE_MEMORY_FACTOR`, `CHILD_BASE_ADDRESS_SPACE`).\n",
        docket::operations::OPTIMIZE_MEMORY_FACTOR,
        docket::operations::CHILD_BASE_ADDRESS_SPACE >> 20
    );

    budget_holds(dir).await
}

/// Part 2: 20 runs through a memory budget smaller than their sum.
async fn budget_holds(dir: &Path) -> anyhow::Result<()> {
    const JOBS: i64 = 20;
    const BUDGET_MIB: u64 = 2048;
    let input = many_objects(dir, 60_000)?;
    let bytes = std::fs::read(&input)?;
    let work = docket::operations::Work::Builtin(docket::domain::Operation::Optimize);
    let limits = docket::operations::Limits::from(&docket::config::ProcessingConfig::default());
    let reservation = limits.sized_for(&work, bytes.len() as u64).memory;

    let fake = FakeTelegram::start().await;
    let run_dir = dir.join("run");
    std::fs::create_dir_all(&run_dir)?;
    let db = run_dir.join("docket.db");
    let config = run_dir.join("docket.toml");
    std::fs::write(
        &config,
        format!(
            "[telegram]\npoll_timeout = \"1s\"\n[storage]\ndatabase_url = {:?}\ndata_dir = {:?}\n\
             [workers]\nprocess = 4\nper_chat = 20\n[budget]\nmemory = \"{BUDGET_MIB} MiB\"\n",
            format!("sqlite://{}", db.display()),
            run_dir.join("data").display().to_string(),
        ),
    )?;
    let store = Store::open(&DatabaseUrl::Sqlite(db)).await?;
    let mut service = Command::new(DOCKET)
        .arg("--config")
        .arg(&config)
        .arg("run")
        .env("TELOXIDE_TOKEN", fake.token())
        .env("TELOXIDE_API_URL", fake.api_url().as_str())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = service.id();
    for chat in 0..JOBS {
        let file = fake.add_file(bytes.clone());
        fake.push_update(fake.document_update(
            9000 + chat,
            9000 + chat,
            &file,
            Some("objects.pdf"),
            Some("application/pdf"),
        ));
    }
    let started = Instant::now();
    let (mut service_peak, mut children_peak, mut service_idle) = (0u64, 0u64, 0u64);
    loop {
        let (own, children) = rss_of_service_and_children(pid);
        if service_idle == 0 {
            service_idle = own;
        }
        service_peak = service_peak.max(own);
        children_peak = children_peak.max(children);
        let mut ended = 0;
        for ticket in 1..=JOBS {
            if store.job(Ticket(ticket)).await?.is_some_and(|j| j.state.is_terminal()) {
                ended += 1;
            }
        }
        if ended == JOBS {
            break;
        }
        ensure!(started.elapsed() < Duration::from_secs(600), "the jobs did not end within 10 minutes");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    let ready = store.jobs(&docket::store::JobFilter { limit: 100, ..Default::default() }).await?;
    let ready = ready.iter().filter(|j| j.state == docket::domain::JobState::Ready).count();
    service.kill()?;
    service.wait()?;

    println!("## The memory budget holds\n");
    println!(
        "The real `docket run`, 4 process workers, `[budget] memory = \"{BUDGET_MIB} MiB\"`; {JOBS} documents of {:.1} MiB \
         (60,000 small pages), each reserving {:.0} MiB, {:.0} MiB in all ({:.1} × the budget). RSS sampled every 10 ms \
         until every job ended ({seconds:.1} s, {ready} ready).\n",
        bytes.len() as f64 / MIB,
        reservation as f64 / MIB,
        (reservation * JOBS as u64) as f64 / MIB,
        (reservation * JOBS as u64) as f64 / (BUDGET_MIB as f64 * MIB),
    );
    println!("| measure | MiB | ratio to the budget |\n|---|---|---|");
    println!("| service RSS, first sample | {:.1} | — |", service_idle as f64 / MIB);
    println!(
        "| service RSS, peak | {:.1} | {:.3} |",
        service_peak as f64 / MIB,
        service_peak as f64 / (BUDGET_MIB as f64 * MIB)
    );
    println!(
        "| children's RSS together, peak | {:.1} | {:.3} |",
        children_peak as f64 / MIB,
        children_peak as f64 / (BUDGET_MIB as f64 * MIB)
    );
    println!(
        "| service + children, peak bound | {:.1} | {:.3} |",
        (service_peak + children_peak) as f64 / MIB,
        (service_peak + children_peak) as f64 / (BUDGET_MIB as f64 * MIB)
    );
    Ok(())
}
