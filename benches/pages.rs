//! The page operations benchmark (issue "Document operations", section 4): `text` against
//! `pdftotext` and `split` against `qpdf --split-pages`, side by side in one run, on a corpus
//! nobody on the team wrote (`../shared/corpus.sh DIR`).
//!
//! For every PDF under `CORPUS/real`, `CORPUS/derived` and `CORPUS/broken`:
//!
//! - **text**: `docket process FILE --op text --contained` (the child every run is) and
//!   `pdftotext FILE OUT`, timed. Words are compared page by page (pages split at form feeds):
//!   the words docket found in pdftotext's order (the longest common subsequence of the two
//!   word lists, ligatures expanded on both sides, words of control or private-use characters
//!   only left out on both sides), as a fraction of pdftotext's words.
//! - **split**: `docket process FILE --op split --contained` and `qpdf --split-pages FILE
//!   DIR/p-%d.pdf`, timed; bytes are docket's ZIP against the sum of qpdf's files.
//! - **peak RSS per MB of input** of each docket child (`VmHWM`, reported by the child).
//!
//! Files a tool could not handle are listed per tool. `cargo bench --bench pages -- CORPUS`
//! prints markdown on stdout (progress on stderr). Options: `--runs N` (1: the time of each
//! is the fastest of N), `--dir PATH` (default `target/docket-bench-pages`).

#![allow(clippy::print_stdout, clippy::print_stderr, reason = "a benchmark reports on stdout and stderr")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use bench_support::stats::median;

#[path = "common/child.rs"]
mod child;
use child::MIB;

/// The page operations benchmark.
#[derive(Debug, clap::Parser)]
#[command(bin_name = "cargo bench --bench pages --")]
struct Args {
    /// The corpus: a folder with `real/`, `derived/` and `broken/` (see ../shared/corpus.sh).
    #[arg(default_value = "/work/corpus")]
    corpus: PathBuf,
    /// Runs per file and tool; the fastest counts.
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Where the outputs go.
    #[arg(long, default_value_os_t = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/docket-bench-pages"))]
    dir: PathBuf,
}

/// A word-list pair larger than this (product of lengths) is compared as bags of words, not in
/// order: the in-order comparison is quadratic.
const MAX_LCS_CELLS: usize = 60_000_000;

/// One run of a tool: its time, and whether it succeeded.
struct Timed {
    elapsed: Duration,
    ok: bool,
    detail: String,
    stdout: Vec<u8>,
}

fn run(command: &mut Command, runs: usize) -> Timed {
    let mut best: Option<Timed> = None;
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        let output = command.stdin(Stdio::null()).output();
        let elapsed = started.elapsed();
        let timed = match output {
            Ok(output) => Timed {
                elapsed,
                ok: output.status.success(),
                detail: String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or_default().to_owned(),
                stdout: output.stdout,
            },
            Err(error) => Timed { elapsed, ok: false, detail: error.to_string(), stdout: Vec::new() },
        };
        if best.as_ref().is_none_or(|b| timed.elapsed < b.elapsed) {
            best = Some(timed);
        }
    }
    best.unwrap_or(Timed { elapsed: Duration::ZERO, ok: false, detail: "not run".into(), stdout: Vec::new() })
}

/// `docket process FILE --op OP -o OUT --contained`, without limits that could bind; its time
/// and the peak RSS the child reports.
fn docket(input: &Path, op: &str, output: &Path, runs: usize) -> (Timed, Option<u64>) {
    let mut command = child::process(input, Some(op), output, 64 << 30, 256 << 20);
    let timed = run(&mut command, runs);
    let peak = serde_json::from_slice::<serde_json::Value>(&timed.stdout)
        .ok()
        .and_then(|report| report["peak_rss_bytes"].as_u64());
    (timed, peak)
}

/// The words of each page of a text (pages split at form feeds), ligatures expanded, those
/// that [carry text](carries_text) only.
fn page_words(text: &str) -> Vec<Vec<String>> {
    let text = text
        .replace('\u{FB00}', "ff")
        .replace('\u{FB01}', "fi")
        .replace('\u{FB02}', "fl")
        .replace('\u{FB03}', "ffi")
        .replace('\u{FB04}', "ffl");
    text.split('\x0c')
        .map(|page| page.split_whitespace().filter(|word| carries_text(word)).map(str::to_owned).collect())
        .collect()
}

/// Whether `word` has a character a reader can read: not only control characters (pdftotext
/// prints a glyph's code when it knows no character for it) or private-use ones (U+E000–U+F8FF,
/// which the glyph list gives pieces of large braces and brackets).
fn carries_text(word: &str) -> bool {
    word.chars().any(|c| !c.is_control() && !('\u{E000}'..='\u{F8FF}').contains(&c))
}

/// How many of `expected`'s words `found` has in the same order (LCS), or in any order when the
/// pair is too large to compare in order.
fn words_in_order(expected: &[String], found: &[String]) -> usize {
    if expected.is_empty() || found.is_empty() {
        return 0;
    }
    if expected.len().saturating_mul(found.len()) > MAX_LCS_CELLS {
        let mut bag: BTreeMap<&str, isize> = BTreeMap::new();
        for word in found {
            *bag.entry(word).or_default() += 1;
        }
        return expected
            .iter()
            .filter(|word| {
                let count = bag.entry(word.as_str()).or_default();
                *count -= 1;
                *count >= 0
            })
            .count();
    }
    let mut previous = vec![0u32; found.len() + 1];
    let mut current = vec![0u32; found.len() + 1];
    for word in expected {
        for (j, other) in found.iter().enumerate() {
            current[j + 1] = if word == other { previous[j] + 1 } else { previous[j + 1].max(current[j]) };
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[found.len()] as usize
}

/// `(found, expected)` words over the whole document, page by page.
fn compare(expected: &str, found: &str) -> (usize, usize) {
    let (expected, found) = (page_words(expected), page_words(found));
    let mut hits = 0;
    let mut total = 0;
    for (index, page) in expected.iter().enumerate() {
        total += page.len();
        hits += found.get(index).map_or(0, |other| words_in_order(page, other));
    }
    (hits, total)
}

fn producer(input: &Path) -> String {
    let output = Command::new("pdfinfo").arg(input).stderr(Stdio::null()).output();
    let text = output.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let producer = text.lines().find_map(|l| l.strip_prefix("Producer:")).map(str::trim).unwrap_or("");
    // The program's name and major version, not its build: "GPL Ghostscript 9", "pdfTeX-1".
    let short: String = producer.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    if short.is_empty() { "(none)".to_owned() } else { short }
}

fn pdfs(corpus: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for class in ["real", "derived", "broken"] {
        let Ok(entries) = std::fs::read_dir(corpus.join(class)) else { continue };
        let mut class_files: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
        class_files.sort();
        files.extend(class_files);
    }
    files
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| entries.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0 && a.is_finite()).then(|| a / b)
}

fn cell(value: Option<f64>, digits: usize) -> String {
    value.map_or("–".to_owned(), |v| format!("{v:.digits$}"))
}

fn main() -> anyhow::Result<()> {
    let args: Args = bench_support::args();
    std::fs::create_dir_all(&args.dir).with_context(|| format!("creating {}", args.dir.display()))?;
    let files = pdfs(&args.corpus);
    anyhow::ensure!(!files.is_empty(), "no PDFs under {}", args.corpus.display());

    let mut rows = Vec::new();
    let mut failures: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut by_producer: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let (mut text_times, mut split_times, mut split_bytes) = (Vec::new(), Vec::new(), Vec::new());
    let (mut text_rss, mut split_rss, mut fractions) = (Vec::new(), Vec::new(), Vec::new());
    let (mut all_hits, mut all_words) = (0usize, 0usize);

    for file in &files {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let class = file.parent().and_then(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned());
        let name = format!("{}/{name}", class.unwrap_or_default());
        eprintln!("{name}");
        let mb = std::fs::metadata(file).map(|m| m.len() as f64 / MIB).unwrap_or(0.0);
        let work = args.dir.join("work");
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(work.join("qpdf"))?;

        let (ours, text_peak) = docket(file, "text", &work.join("docket.txt"), args.runs);
        let theirs = run(Command::new("pdftotext").arg(file).arg(work.join("poppler.txt")), args.runs);
        let (split_ours, split_peak) = docket(file, "split", &work.join("docket.zip"), args.runs);
        let split_theirs =
            run(Command::new("qpdf").arg("--split-pages").arg(file).arg(work.join("qpdf/p-%d.pdf")), args.runs);
        // qpdf exits 3 for warnings, with its output written.
        let qpdf_ok = split_theirs.ok || dir_bytes(&work.join("qpdf")) > 0;

        for (tool, timed, ok) in [
            ("docket text", &ours, ours.ok),
            ("pdftotext", &theirs, theirs.ok),
            ("docket split", &split_ours, split_ours.ok),
            ("qpdf --split-pages", &split_theirs, qpdf_ok),
        ] {
            if !ok {
                failures.entry(tool).or_default().push(format!("{name} ({})", timed.detail.trim()));
            }
        }

        let mut fraction = None;
        let mut text_ratio = None;
        if ours.ok && theirs.ok {
            let expected = std::fs::read_to_string(work.join("poppler.txt")).unwrap_or_default();
            let found = std::fs::read_to_string(work.join("docket.txt")).unwrap_or_default();
            let (hits, total) = compare(&expected, &found);
            if total > 0 {
                let f = hits as f64 / total as f64;
                fraction = Some(f);
                fractions.push(f);
                all_hits += hits;
                all_words += total;
                by_producer.entry(producer(file)).or_default().push(f);
            }
            text_ratio = ratio(ours.elapsed.as_secs_f64(), theirs.elapsed.as_secs_f64());
            text_times.extend(text_ratio);
        }
        let (mut split_ratio, mut bytes_ratio) = (None, None);
        if split_ours.ok && qpdf_ok {
            split_ratio = ratio(split_ours.elapsed.as_secs_f64(), split_theirs.elapsed.as_secs_f64());
            let zip = std::fs::metadata(work.join("docket.zip")).map(|m| m.len() as f64).unwrap_or(0.0);
            bytes_ratio = ratio(zip, dir_bytes(&work.join("qpdf")) as f64);
            split_times.extend(split_ratio);
            split_bytes.extend(bytes_ratio);
        }
        let per_mb =
            |peak: Option<u64>, ok: bool| (ok && mb > 0.0).then_some(peak).flatten().map(|p| p as f64 / MIB / mb);
        let (text_per_mb, split_per_mb) = (per_mb(text_peak, ours.ok), per_mb(split_peak, split_ours.ok));
        text_rss.extend(text_per_mb);
        split_rss.extend(split_per_mb);
        rows.push(format!(
            "| {name} | {mb:.1} | {} | {} | {} | {} | {} | {} |",
            cell(fraction, 3),
            cell(text_ratio, 2),
            cell(split_ratio, 2),
            cell(bytes_ratio, 2),
            cell(text_per_mb, 1),
            cell(split_per_mb, 1),
        ));
    }

    println!("## Page operations: `text` vs pdftotext, `split` vs qpdf --split-pages\n");
    println!(
        "{} files from {}; docket as `docket process --contained` (release build), the fastest of {} run(s) \
         per tool and file, wall-clock time including process start.\n",
        files.len(),
        args.corpus.display(),
        args.runs
    );
    println!("| File | MB | words found | text time × | split time × | split bytes × | text RSS/MB | split RSS/MB |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for row in &rows {
        println!("{row}");
    }
    println!("\n| Producer | files | median words found | worst |");
    println!("|---|---:|---:|---:|");
    for (producer, values) in &by_producer {
        let worst = values.iter().copied().fold(f64::INFINITY, f64::min);
        println!("| {producer} | {} | {:.3} | {worst:.3} |", values.len(), median(values));
    }
    println!("\n| Measure | median | files |");
    println!("|---|---:|---:|");
    println!("| words found, fraction of pdftotext's, in order | {:.3} | {} |", median(&fractions), fractions.len());
    println!("| words found over all files | {:.3} | {} words |", all_hits as f64 / all_words.max(1) as f64, all_words);
    println!("| text time ÷ pdftotext's | {:.2} | {} |", median(&text_times), text_times.len());
    println!("| split time ÷ qpdf's | {:.2} | {} |", median(&split_times), split_times.len());
    println!("| split bytes ÷ qpdf's | {:.2} | {} |", median(&split_bytes), split_bytes.len());
    println!("| text peak RSS per MB of input | {:.1} MiB | {} |", median(&text_rss), text_rss.len());
    println!("| split peak RSS per MB of input | {:.1} MiB | {} |", median(&split_rss), split_rss.len());
    let max = |values: &[f64]| values.iter().copied().fold(0.0, f64::max);
    println!("| text peak RSS per MB, worst | {:.1} MiB | |", max(&text_rss));
    println!("| split peak RSS per MB, worst | {:.1} MiB | |", max(&split_rss));
    println!("\nFiles a tool could not handle:\n");
    for tool in ["docket text", "pdftotext", "docket split", "qpdf --split-pages"] {
        let list = failures.get(tool).map(|l| l.join("; ")).unwrap_or_else(|| "none".into());
        println!("- {tool}: {list}");
    }
    Ok(())
}
