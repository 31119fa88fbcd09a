//! The lossy-operations benchmark (issue "Document operations", section 3): docket's `optimize`
//! against qpdf's best lossless setting, `shrink` against Ghostscript's `/ebook`, and the peak
//! RSS of `optimize`, `shrink` and `topdf` children per MB of input, side by side in one run
//! over a corpus of third-party files (`../shared/corpus.sh DIR` builds one).
//!
//! Every docket run is the child every bot run is (`docket process FILE --op NAME --contained`,
//! this build's binary), timed from spawn to exit; qpdf and gs are timed the same way. Sizes
//! are the files written; docket's equals the input when it kept the original.
//!
//! `cargo bench --bench lossy -- CORPUS` prints markdown on stdout (progress on stderr).
//! Options: `--runs N` (1: each run is long, the medians are over files), `--dir PATH`
//! (default `target/docket-bench-lossy`), `--gs-text N` (3: how many of the text PDFs gs also
//! shrinks, to show what it does to them).

#![allow(clippy::print_stdout, reason = "a benchmark reports its tables on stdout")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::Context;
use bench_support::stats::median;

#[path = "common/child.rs"]
mod child;
use child::MIB;

/// The lossy-operations benchmark.
#[derive(Debug, clap::Parser)]
#[command(bin_name = "cargo bench --bench lossy --")]
struct Args {
    /// The corpus: a folder with `real/`, `derived/` and `broken/` (and `formats/` for images).
    corpus: PathBuf,
    /// Runs per file and tool (the fastest is kept).
    #[arg(long, default_value_t = 1)]
    runs: usize,
    /// Where the outputs go.
    #[arg(long, default_value_os_t = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/docket-bench-lossy"))]
    dir: PathBuf,
    /// How many text PDFs Ghostscript also shrinks (the smallest first).
    #[arg(long, default_value_t = 3)]
    gs_text: usize,
}

/// One file of the corpus and its class.
#[derive(Debug, Clone)]
struct Input {
    path: PathBuf,
    class: &'static str,
    bytes: u64,
}

/// One run of one tool on one file.
#[derive(Debug, Clone, Copy)]
struct Run {
    seconds: f64,
    /// `None`: the tool could not handle the file.
    output_bytes: Option<u64>,
    peak_rss: Option<u64>,
}

fn class_of(dir: &str, name: &str) -> Option<&'static str> {
    Some(match dir {
        "real" => "text (third-party)",
        "broken" => "broken",
        "derived" if name.contains("scanlike-png") => "scan, Flate images",
        "derived" if name.contains("scanlike-jpeg") => "scan, JPEG images",
        "derived" if name.contains("userpw") => return None,
        "derived" => "encrypted (owner password)",
        _ => return None,
    })
}

fn inputs(corpus: &Path) -> anyhow::Result<Vec<Input>> {
    let mut found = Vec::new();
    for dir in ["real", "derived", "broken"] {
        let Ok(entries) = std::fs::read_dir(corpus.join(dir)) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
            if !name.ends_with(".pdf") {
                continue;
            }
            if let Some(class) = class_of(dir, &name) {
                found.push(Input { bytes: entry.metadata()?.len(), path, class });
            }
        }
    }
    found.sort_by(|a, b| (a.class, a.bytes).cmp(&(b.class, b.bytes)));
    Ok(found)
}

fn images(corpus: &Path) -> Vec<Input> {
    let mut found: Vec<Input> = std::fs::read_dir(corpus.join("formats"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let path = entry.path();
            let ext = path.extension()?.to_str()?.to_ascii_lowercase();
            matches!(ext.as_str(), "jpg" | "jpeg" | "png" | "tif" | "tiff" | "webp").then(|| Input {
                bytes: entry.metadata().map(|m| m.len()).unwrap_or(0),
                path,
                class: "image",
            })
        })
        .collect();
    found.sort_by_key(|i| i.bytes);
    found
}

fn docket(op: &str, input: &Path, output: &Path) -> Run {
    let started = Instant::now();
    let out = child::process(input, Some(op), output, 16 << 30, 1 << 30).stderr(Stdio::null()).output();
    let seconds = started.elapsed().as_secs_f64();
    let report: Option<serde_json::Value> = out.ok().and_then(|o| serde_json::from_slice(&o.stdout).ok());
    let done = report.as_ref().filter(|r| r["outcome"] == "done");
    Run {
        seconds,
        output_bytes: done.and_then(|r| r["output_bytes"].as_u64()),
        peak_rss: done.and_then(|r| r["peak_rss_bytes"].as_u64()),
    }
}

fn external(program: &str, args: &[&std::ffi::OsStr], output: &Path) -> Run {
    let _ = std::fs::remove_file(output);
    let started = Instant::now();
    let status = Command::new(program).args(args).stdout(Stdio::null()).stderr(Stdio::null()).status();
    let seconds = started.elapsed().as_secs_f64();
    // qpdf exits 3 when it succeeded with warnings (a repaired file).
    let ok = status.is_ok_and(|s| s.success() || (program == "qpdf" && s.code() == Some(3)));
    let output_bytes = ok.then(|| std::fs::metadata(output).map(|m| m.len()).ok()).flatten().filter(|&b| b > 0);
    Run { seconds, output_bytes, peak_rss: None }
}

fn qpdf(input: &Path, output: &Path) -> Run {
    let args: Vec<&std::ffi::OsStr> = vec![
        "--object-streams=generate".as_ref(),
        "--recompress-flate".as_ref(),
        "--compression-level=9".as_ref(),
        input.as_os_str(),
        output.as_os_str(),
    ];
    external("qpdf", &args, output)
}

fn ghostscript(input: &Path, output: &Path) -> Run {
    let out = format!("-sOutputFile={}", output.display());
    let args: Vec<&std::ffi::OsStr> = vec![
        "-q".as_ref(),
        "-dNOPAUSE".as_ref(),
        "-dBATCH".as_ref(),
        "-dSAFER".as_ref(),
        "-sDEVICE=pdfwrite".as_ref(),
        "-dPDFSETTINGS=/ebook".as_ref(),
        out.as_ref(),
        input.as_os_str(),
    ];
    external("gs", &args, output)
}

/// The fastest of `runs` runs (the sizes are the same every time).
fn best(runs: usize, mut run: impl FnMut() -> Run) -> Run {
    (0..runs.max(1)).map(|_| run()).min_by(|a, b| a.seconds.total_cmp(&b.seconds)).expect("one run at least")
}

struct Compared {
    input: Input,
    ours: Run,
    theirs: Run,
}

/// docket's `op` against `tool` (run by `run_tool`) on each of `inputs`, the fastest of `runs`
/// runs each; each writes to `out` of its name.
fn compare<'a>(
    inputs: impl IntoIterator<Item = &'a Input>,
    runs: usize,
    out: &dyn Fn(&str) -> PathBuf,
    op: &str,
    tool: &str,
    run_tool: fn(&Path, &Path) -> Run,
) -> Vec<Compared> {
    let mut compared = Vec::new();
    for input in inputs {
        eprintln!("{op} {}", name(input));
        let ours = best(runs, || docket(op, &input.path, &out("docket")));
        let theirs = best(runs, || run_tool(&input.path, &out(tool)));
        compared.push(Compared { input: input.clone(), ours, theirs });
    }
    compared
}

fn name(input: &Input) -> String {
    input.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Prints the size and time table of `rows` (ours vs theirs), by class and in total; returns
/// the files each side could not handle.
fn report(rows: &[Compared], ours: &str, theirs: &str) {
    println!(
        "| class | files | input MiB | {ours} MiB | {theirs} MiB | bytes ratio | median time ratio | total time ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut classes: BTreeMap<&str, Vec<&Compared>> = BTreeMap::new();
    for row in rows {
        classes.entry(row.input.class).or_default().push(row);
    }
    let mut all: Vec<&Compared> = Vec::new();
    for (class, rows) in &classes {
        line(class, rows);
        all.extend(rows.iter().copied());
    }
    line("**all**", &all);
    let failed = |pick: fn(&Compared) -> Run| -> Vec<String> {
        rows.iter().filter(|r| pick(r).output_bytes.is_none()).map(|r| name(&r.input)).collect()
    };
    let (ours_failed, theirs_failed) = (failed(|r| r.ours), failed(|r| r.theirs));
    println!(
        "\nOnly files both handled are in the sizes. Could not handle: {ours}: {}; {theirs}: {}.\n",
        if ours_failed.is_empty() { "none".to_owned() } else { ours_failed.join(", ") },
        if theirs_failed.is_empty() { "none".to_owned() } else { theirs_failed.join(", ") },
    );
}

fn line(label: &str, rows: &[&Compared]) {
    let both: Vec<&&Compared> =
        rows.iter().filter(|r| r.ours.output_bytes.is_some() && r.theirs.output_bytes.is_some()).collect();
    let sum = |f: &dyn Fn(&Compared) -> f64| both.iter().map(|r| f(r)).sum::<f64>();
    let input = sum(&|r| r.input.bytes as f64);
    let ours = sum(&|r| r.ours.output_bytes.unwrap_or(0) as f64);
    let theirs = sum(&|r| r.theirs.output_bytes.unwrap_or(0) as f64);
    let time_ratios: Vec<f64> = both.iter().map(|r| r.ours.seconds / r.theirs.seconds.max(1e-6)).collect();
    let total_time = sum(&|r| r.ours.seconds) / sum(&|r| r.theirs.seconds).max(1e-6);
    println!(
        "| {label} | {} | {:.1} | {:.2} | {:.2} | {:.3} | {:.2} | {:.2} |",
        both.len(),
        input / MIB,
        ours / MIB,
        theirs / MIB,
        ours / theirs.max(1.0),
        if time_ratios.is_empty() { f64::NAN } else { median(&time_ratios) },
        total_time
    );
}

fn main() -> anyhow::Result<()> {
    let args: Args = bench_support::args();
    std::fs::create_dir_all(&args.dir)?;
    let out = |tool: &str| args.dir.join(format!("out-{tool}.pdf"));
    let files = inputs(&args.corpus).with_context(|| format!("reading the corpus at {}", args.corpus.display()))?;
    anyhow::ensure!(!files.is_empty(), "no PDFs under {}", args.corpus.display());

    // 1. optimize vs qpdf.
    let optimized = compare(&files, args.runs, &out, "optimize", "qpdf", qpdf);
    println!("## optimize vs qpdf\n");
    println!(
        "`docket process FILE --op optimize --contained` (release build) against `qpdf --object-streams=generate \
         --recompress-flate --compression-level=9`, fastest of {} run(s) each, wall time from spawn to exit. Bytes \
         ratio: docket's total output over qpdf's; time ratios: docket's over qpdf's (median over files, and of the \
         totals).\n",
        args.runs
    );
    report(&optimized, "docket", "qpdf");
    let bigger: Vec<String> = optimized
        .iter()
        .filter(|r| r.ours.output_bytes.is_some_and(|b| b > r.input.bytes))
        .map(|r| name(&r.input))
        .collect();
    println!(
        "docket outputs bigger than their input: {}.\n",
        if bigger.is_empty() { "none".into() } else { bigger.join(", ") }
    );

    // 2. shrink vs gs /ebook on the scans, and on a few text files.
    let scans = files.iter().filter(|i| i.class.starts_with("scan"));
    let texts = files.iter().filter(|i| i.class.starts_with("text")).take(args.gs_text);
    let shrunk = compare(scans.chain(texts), args.runs, &out, "shrink", "gs", ghostscript);
    println!("## shrink vs Ghostscript /ebook\n");
    println!(
        "`docket process FILE --op shrink --contained` (150 dpi, JPEG quality 75: the defaults) against `gs \
         -sDEVICE=pdfwrite -dPDFSETTINGS=/ebook` (150 dpi), fastest of {} run(s) each.\n",
        args.runs
    );
    report(&shrunk, "docket", "gs");
    println!(
        "| file | input MiB | docket MiB | gs MiB | docket / input | gs / input | docket s | gs s |\n|---|---|---|---|---|---|---|---|"
    );
    for row in &shrunk {
        let mib = |b: Option<u64>| b.map_or("failed".to_owned(), |b| format!("{:.2}", b as f64 / MIB));
        let of_input =
            |b: Option<u64>| b.map_or("—".to_owned(), |b| format!("{:.3}", b as f64 / row.input.bytes as f64));
        println!(
            "| {} | {:.2} | {} | {} | {} | {} | {:.2} | {:.2} |",
            name(&row.input),
            row.input.bytes as f64 / MIB,
            mib(row.ours.output_bytes),
            mib(row.theirs.output_bytes),
            of_input(row.ours.output_bytes),
            of_input(row.theirs.output_bytes),
            row.ours.seconds,
            row.theirs.seconds
        );
    }
    println!();

    // 3. Peak RSS per MB of input.
    println!("## Peak RSS per MB of input: optimize, shrink, topdf\n");
    println!(
        "The child's own `VmHWM` (its report's `peak_rss_bytes`) over the input's size, from the runs above \
         (topdf: the JPEG, PNG, TIFF and WebP files of `formats/`). Factor = (peak − {} MiB base) / input.\n",
        docket::operations::CHILD_BASE_MEMORY >> 20
    );
    println!("| operation | files | median factor | worst factor | worst file |\n|---|---|---|---|---|");
    let base = docket::operations::CHILD_BASE_MEMORY as f64;
    let factor = |run: &Run, bytes: u64| run.peak_rss.map(|p| (p as f64 - base).max(0.0) / bytes.max(1) as f64);
    let mut topdf = Vec::new();
    for input in images(&args.corpus) {
        eprintln!("topdf {}", name(&input));
        let run = docket("topdf", &input.path, &out("topdf"));
        topdf.push((input, run));
    }
    let shrink_runs: Vec<(Input, Run)> = shrunk.iter().map(|r| (r.input.clone(), r.ours)).collect();
    let optimize_runs: Vec<(Input, Run)> = optimized.iter().map(|r| (r.input.clone(), r.ours)).collect();
    for (op, runs) in [("optimize", &optimize_runs), ("shrink", &shrink_runs), ("topdf", &topdf)] {
        // Files under 1 MiB say more about the base than about the factor.
        let factors: Vec<(f64, String)> = runs
            .iter()
            .filter(|(input, _)| input.bytes >= 1 << 20 || op == "topdf")
            .filter_map(|(input, run)| factor(run, input.bytes).map(|f| (f, name(input))))
            .collect();
        let values: Vec<f64> = factors.iter().map(|(f, _)| *f).collect();
        let worst = factors.iter().max_by(|a, b| a.0.total_cmp(&b.0));
        println!(
            "| {op} | {} | {:.1} | {:.1} | {} |",
            values.len(),
            if values.is_empty() { f64::NAN } else { median(&values) },
            worst.map_or(f64::NAN, |w| w.0),
            worst.map_or("—", |w| w.1.as_str())
        );
    }
    let failed: Vec<String> = topdf.iter().filter(|(_, r)| r.output_bytes.is_none()).map(|(i, _)| name(i)).collect();
    println!("\ntopdf could not handle: {}.\n", if failed.is_empty() { "none".to_owned() } else { failed.join(", ") });
    Ok(())
}
