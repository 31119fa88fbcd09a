//! The merge benchmark (issue "Documents together", multi-file jobs): `pdf::merge` against
//! qpdf and img2pdf, side by side in one run, on a corpus nobody on the team wrote
//! (`../shared/corpus.sh DIR`).
//!
//! Three cases, each run `--runs` times, docket and its baseline one after the other in every
//! round, each timed as a whole process:
//!
//! 1. **10 PDFs**: the first ten PDFs of `CORPUS/real` (by name) that load unencrypted, against
//!    `qpdf --empty --pages F1 … F10 -- OUT`;
//! 2. **100 PDFs**: every such PDF of `CORPUS/real`, over and over in name order until there are
//!    100, against qpdf likewise;
//! 3. **20 JPEGs**: twenty 3000×4000 photo-like pictures (a gradient with noise, quality 85,
//!    made here once and kept in `--dir`), against `img2pdf F1 … F20 -o OUT`.
//!
//! docket's side is this benchmark's own binary started again as a child (`--child OUT IN…`)
//! that calls `docket::pdf::merge::merge` once and reports its peak RSS (`VmHWM`): merge has no
//! `docket process` operation yet, and a child is timed as qpdf is, start to exit. Reports the
//! medians of time and the output sizes, their ratios (docket's median over the baseline's),
//! and the child's peak RSS per byte of input over a one-page merge's peak.
//!
//! `cargo bench --bench merge -- CORPUS` prints markdown on stdout (progress on stderr).
//! Options: `--runs N` (5), `--dir PATH` (default `target/docket-bench-merge`).

#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark reports on stdout and stderr")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, ensure};
use bench_support::stats::median;
use docket::pdf::merge::{MergeInput, merge};

#[path = "common/child.rs"]
#[expect(dead_code, reason = "only MIB is used: docket's child has no merge operation yet")]
mod child;
use child::MIB;

/// The merge benchmark.
#[derive(Debug, clap::Parser)]
#[command(bin_name = "cargo bench --bench merge --")]
struct Args {
    /// The corpus: a folder with `real/` (see ../shared/corpus.sh).
    #[arg(default_value = "/work/corpus")]
    corpus: PathBuf,
    /// Rounds per case; each round runs docket and the baseline once.
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Where the pictures and outputs go.
    #[arg(long, default_value_os_t = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/docket-bench-merge"))]
    dir: PathBuf,
    /// Run as docket's side: merge the inputs after the first into the first, report, exit.
    #[arg(long, num_args = 2.., hide = true)]
    child: Option<Vec<PathBuf>>,
}

/// The inflate cap the child merges with: the default `[processing] max_inflate`.
const MAX_INFLATE: usize = docket::pdf::DEFAULT_MAX_INFLATE_BYTES;

/// One timed run: seconds, output bytes (none when it failed), the child's peak RSS.
#[derive(Debug, Clone, Copy)]
struct Run {
    seconds: f64,
    output_bytes: Option<u64>,
    peak_rss: Option<u64>,
}

/// The child's side: `paths[0]` is the output; a `.pdf` input is a PDF, anything else a JPEG.
fn run_child(paths: &[PathBuf]) -> anyhow::Result<()> {
    let (output, inputs) = paths.split_first().context("no output")?;
    let inputs: Vec<MergeInput> = inputs
        .iter()
        .map(|path| {
            let label = if path.extension().is_some_and(|e| e == "pdf") { "pdf" } else { "jpeg" };
            MergeInput { path: path.clone(), label: label.to_owned() }
        })
        .collect();
    let produced = merge(&inputs, output, &docket::pdf::Settings::with_max_inflate(MAX_INFLATE))?;
    let status = std::fs::read_to_string("/proc/self/status")?;
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM")?;
    println!("{} {}", produced.output_bytes, peak_kib * 1024);
    Ok(())
}

/// docket's child merging `inputs` into `output`.
fn docket(inputs: &[PathBuf], output: &Path) -> Run {
    let _ = std::fs::remove_file(output);
    let started = Instant::now();
    let out = Command::new(std::env::current_exe().unwrap_or_default())
        .arg("--child")
        .arg(output)
        .args(inputs)
        .env("MALLOC_ARENA_MAX", "2")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output();
    let seconds = started.elapsed().as_secs_f64();
    let report = out.ok().filter(|o| o.status.success()).map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let mut fields = report.as_deref().unwrap_or_default().split_whitespace().map(|f| f.parse::<u64>().ok());
    Run { seconds, output_bytes: fields.next().flatten(), peak_rss: fields.next().flatten() }
}

/// `program args…`, which writes `output`.
fn baseline(program: &str, args: &[&std::ffi::OsStr], output: &Path) -> Run {
    let _ = std::fs::remove_file(output);
    let started = Instant::now();
    let status =
        Command::new(program).args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
    let seconds = started.elapsed().as_secs_f64();
    // qpdf exits 3 when it succeeded with warnings (a repaired file).
    let ok = status.is_ok_and(|s| s.success() || (program == "qpdf" && s.code() == Some(3)));
    let output_bytes = ok.then(|| std::fs::metadata(output).map(|m| m.len()).ok()).flatten();
    Run { seconds, output_bytes, peak_rss: None }
}

fn qpdf(inputs: &[PathBuf], output: &Path) -> Run {
    let mut args: Vec<&std::ffi::OsStr> = vec!["--empty".as_ref(), "--pages".as_ref()];
    args.extend(inputs.iter().map(|p| p.as_os_str()));
    args.extend(["--".as_ref(), output.as_os_str()]);
    baseline("qpdf", &args, output)
}

fn img2pdf(inputs: &[PathBuf], output: &Path) -> Run {
    let mut args: Vec<&std::ffi::OsStr> = inputs.iter().map(|p| p.as_os_str()).collect();
    args.extend(["-o".as_ref(), output.as_os_str()]);
    baseline("img2pdf", &args, output)
}

/// The PDFs of `corpus/real` that lopdf loads and that are not encrypted, by name.
fn loadable_pdfs(corpus: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let real = corpus.join("real");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&real)
        .with_context(|| format!("reading {}", real.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "pdf"))
        .collect();
    files.sort();
    files.retain(|path| {
        let loads =
            lopdf::Document::load(path).is_ok_and(|d| d.encryption_state.is_none() && !d.trailer.has(b"Encrypt"));
        if !loads {
            eprintln!("left out (does not load unencrypted): {}", path.display());
        }
        loads
    });
    Ok(files)
}

/// Twenty 3000×4000 photo-like JPEGs at quality 85 in `dir`, made once.
fn photos(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let dir = dir.join("photos");
    std::fs::create_dir_all(&dir)?;
    let (width, height) = (3000u32, 4000u32);
    let mut paths = Vec::new();
    for n in 0..20u64 {
        let path = dir.join(format!("photo-{n:02}.jpg"));
        if !path.exists() {
            eprintln!("making {}", path.display());
            let mut state = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            let mut pixels = Vec::with_capacity((width * height * 3) as usize);
            for y in 0..height {
                for x in 0..width {
                    for c in 0..3u32 {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        let noise = (state % 41) as i64 - 20;
                        let gradient = i64::from((x * 200 / width + y * 55 / height + c * 30 + n as u32 * 7) % 256);
                        pixels.push((gradient + noise).clamp(0, 255) as u8);
                    }
                }
            }
            let file = std::io::BufWriter::new(std::fs::File::create(&path)?);
            image::codecs::jpeg::JpegEncoder::new_with_quality(file, 85).encode(
                &pixels,
                width,
                height,
                image::ExtendedColorType::Rgb8,
            )?;
        }
        paths.push(path);
    }
    Ok(paths)
}

fn total_bytes(paths: &[PathBuf]) -> u64 {
    paths.iter().map(|p| std::fs::metadata(p).map_or(0, |m| m.len())).sum()
}

/// One case's rounds: docket's runs and the baseline's.
struct Case {
    name: String,
    input_bytes: u64,
    ours: Vec<Run>,
    theirs: Vec<Run>,
}

impl Case {
    fn seconds(runs: &[Run]) -> f64 {
        median(&runs.iter().map(|r| r.seconds).collect::<Vec<_>>())
    }

    fn bytes(runs: &[Run]) -> f64 {
        median(&runs.iter().filter_map(|r| r.output_bytes).map(|b| b as f64).collect::<Vec<_>>())
    }

    fn all_done(&self) -> bool {
        self.ours.iter().chain(&self.theirs).all(|r| r.output_bytes.is_some())
    }
}

/// `rounds` rounds of docket then the baseline on `inputs`.
fn run_case(name: &str, inputs: &[PathBuf], dir: &Path, rounds: usize, theirs: fn(&[PathBuf], &Path) -> Run) -> Case {
    let (ours_out, theirs_out) = (dir.join("docket.pdf"), dir.join("baseline.pdf"));
    let mut case =
        Case { name: name.to_owned(), input_bytes: total_bytes(inputs), ours: Vec::new(), theirs: Vec::new() };
    for round in 0..rounds.max(1) {
        eprintln!("{name}: round {}", round + 1);
        case.ours.push(docket(inputs, &ours_out));
        case.theirs.push(theirs(inputs, &theirs_out));
    }
    case
}

fn main() -> anyhow::Result<()> {
    let args: Args = bench_support::args();
    if let Some(paths) = &args.child {
        return run_child(paths);
    }
    std::fs::create_dir_all(&args.dir).with_context(|| format!("creating {}", args.dir.display()))?;
    let pdfs = loadable_pdfs(&args.corpus)?;
    ensure!(pdfs.len() >= 10, "fewer than 10 loadable PDFs under {}/real", args.corpus.display());
    let ten: Vec<PathBuf> = pdfs[..10].to_vec();
    let hundred: Vec<PathBuf> = pdfs.iter().cycle().take(100).cloned().collect();
    let jpegs = photos(&args.dir)?;

    // The base a factor is measured over: a merge of one one-page PDF.
    let one_page = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pdf/text-1page.pdf");
    let base = docket(&[one_page], &args.dir.join("base.pdf")).peak_rss.context("the one-page merge failed")?;

    let cases = [
        run_case("10 PDFs vs qpdf --empty --pages", &ten, &args.dir, args.runs, qpdf),
        run_case("100 PDFs vs qpdf --empty --pages", &hundred, &args.dir, args.runs, qpdf),
        run_case("20 JPEGs vs img2pdf", &jpegs, &args.dir, args.runs, img2pdf),
    ];

    println!("Rounds per case: {}. Ratios are docket's median over the baseline's.\n", args.runs);
    println!(
        "| case | input MiB | docket s | baseline s | time × | docket MiB | baseline MiB | bytes × | peak RSS MiB | RSS per input byte |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for case in &cases {
        let (ours_s, theirs_s) = (Case::seconds(&case.ours), Case::seconds(&case.theirs));
        let (ours_b, theirs_b) = (Case::bytes(&case.ours), Case::bytes(&case.theirs));
        let peak = case.ours.iter().filter_map(|r| r.peak_rss).max().unwrap_or(0);
        let factor = (peak.saturating_sub(base)) as f64 / case.input_bytes.max(1) as f64;
        println!(
            "| {}{} | {:.1} | {ours_s:.3} | {theirs_s:.3} | {:.2} | {:.1} | {:.1} | {:.4} | {:.0} | {factor:.2} |",
            case.name,
            if case.all_done() { "" } else { " (some runs failed)" },
            case.input_bytes as f64 / MIB,
            ours_s / theirs_s,
            ours_b / MIB,
            theirs_b / MIB,
            ours_b / theirs_b,
            peak as f64 / MIB,
        );
    }
    println!();
    println!("Base peak RSS (a one-page merge): {:.1} MiB.", base as f64 / MIB);
    println!("Files, 10 PDFs: {}.", names(&ten));
    println!("Files, 100 PDFs: {} loadable PDFs of real/ in name order, cycled.", pdfs.len());
    Ok(())
}

fn names(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
        .collect::<Vec<_>>()
        .join(", ")
}
