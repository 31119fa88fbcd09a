//! The preview benchmark (issue "Documents together", point 4): page 1 of every PDF drawn by
//! docket's contained child against `pdftoppm -r 72 -jpeg -f 1 -l 1`, side by side in one run,
//! on a corpus nobody on the team wrote (`../shared/corpus.sh DIR`).
//!
//! For every PDF under `CORPUS/real` and `CORPUS/derived`, each timed as a whole process (what
//! the bot pays per result), the fastest of `--runs`:
//!
//! - **thumbnail**: `docket process FILE -o OUT.jpg --contained --renderer mutool --max-side
//!   320 --max-bytes 200000`, what every PDF result is sent with;
//! - **at 72 dpi**: the same child with no side limit that binds (`--max-side 20000`), so the
//!   page is drawn at pdftoppm's size: the like-for-like comparison;
//! - **pdftoppm**: `pdftoppm -r 72 -jpeg -f 1 -l 1 FILE OUT`.
//!
//! Reports each file's times and JPEG sizes, and the medians of docket's time over pdftoppm's.
//! `cargo bench --bench preview -- CORPUS` prints markdown on stdout (progress on stderr).
//! Options: `--runs N` (3), `--renderer PROGRAM` (`mutool`), `--dir PATH` (default
//! `target/docket-bench-preview`).

#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark reports on stdout and stderr")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use bench_support::stats::median;

#[path = "common/child.rs"]
mod child;
use child::MIB;

/// The preview benchmark.
#[derive(Debug, clap::Parser)]
#[command(bin_name = "cargo bench --bench preview --")]
struct Args {
    /// The corpus: a folder with `real/` and `derived/` (see ../shared/corpus.sh).
    #[arg(default_value = "/work/corpus")]
    corpus: PathBuf,
    /// Runs per file and tool; the fastest counts.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// MuPDF's program.
    #[arg(long, default_value = "mutool")]
    renderer: String,
    /// Where the outputs go.
    #[arg(long, default_value_os_t = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/docket-bench-preview"))]
    dir: PathBuf,
}

/// The fastest of `runs` runs of `command`, and whether the last one succeeded.
fn fastest(command: &mut Command, runs: usize) -> (Duration, bool) {
    let mut best = Duration::MAX;
    let mut ok = false;
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let status = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status();
        best = best.min(started.elapsed());
        ok = status.is_ok_and(|s| s.success());
    }
    (best, ok)
}

/// docket's child drawing `input`'s first page into `output`, fitted in `side` pixels, a JPEG of
/// at most `max_bytes`.
fn docket(input: &Path, output: &Path, renderer: &str, side: u32, max_bytes: u64, runs: usize) -> (Duration, bool) {
    let mut command = child::process(input, Some("preview"), output, 4 << 30, 256 << 20);
    // The drawn page goes in the child's TMPDIR, which must be within its reach (the output's
    // folder), as the run's scratch folder is in the service.
    command.env("TMPDIR", output.parent().unwrap_or(Path::new(".")));
    command.args(["--renderer", renderer, "--max-side", &side.to_string(), "--max-bytes", &max_bytes.to_string()]);
    fastest(&mut command, runs)
}

fn pdfs(corpus: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for class in ["real", "derived"] {
        let Ok(entries) = std::fs::read_dir(corpus.join(class)) else { continue };
        let mut class_files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "pdf"))
            .collect();
        class_files.sort();
        files.extend(class_files);
    }
    files
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> anyhow::Result<()> {
    let args: Args = bench_support::args();
    std::fs::create_dir_all(&args.dir).with_context(|| format!("creating {}", args.dir.display()))?;
    let files = pdfs(&args.corpus);
    anyhow::ensure!(!files.is_empty(), "no PDFs under {}", args.corpus.display());
    let renderer = args.renderer.as_str();

    println!(
        "| file | MiB | thumbnail ms | KB | at 72 dpi ms | KB | pdftoppm ms | KB | thumbnail / pdftoppm | 72 dpi / pdftoppm |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let (mut thumb_ratios, mut same_ratios, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for file in &files {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        eprintln!("{name}");
        let thumb_out = args.dir.join("thumbnail.jpg");
        let same_out = args.dir.join("at72.jpg");
        let poppler_stem = args.dir.join("pdftoppm");
        let poppler_out = args.dir.join("pdftoppm.jpg");
        let _ = std::fs::remove_file(&poppler_out);
        let (thumb, thumb_ok) = docket(file, &thumb_out, renderer, 320, 200_000, args.runs);
        let (same, same_ok) = docket(file, &same_out, renderer, 20_000, u64::MAX, args.runs);
        let mut poppler = Command::new("pdftoppm");
        poppler.args(["-r", "72", "-jpeg", "-singlefile", "-f", "1", "-l", "1"]).arg(file).arg(&poppler_stem);
        let (popplers, poppler_ok) = fastest(&mut poppler, args.runs);
        if !(thumb_ok && same_ok && poppler_ok) {
            failed.push(format!("{name} (docket {}, pdftoppm {})", thumb_ok && same_ok, poppler_ok));
            continue;
        }
        let (a, b) = (ms(thumb) / ms(popplers), ms(same) / ms(popplers));
        thumb_ratios.push(a);
        same_ratios.push(b);
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {a:.2} | {b:.2} |",
            size(file) as f64 / MIB,
            ms(thumb),
            size(&thumb_out) as f64 / 1000.0,
            ms(same),
            size(&same_out) as f64 / 1000.0,
            ms(popplers),
            size(&poppler_out) as f64 / 1000.0,
        );
    }
    println!();
    println!(
        "Median over {} files, time against pdftoppm's: thumbnail (320 px) {:.2}×, at pdftoppm's 72 dpi {:.2}×.",
        thumb_ratios.len(),
        median(&thumb_ratios),
        median(&same_ratios),
    );
    if !failed.is_empty() {
        println!("Not drawn by both: {}.", failed.join(", "));
    }
    Ok(())
}
