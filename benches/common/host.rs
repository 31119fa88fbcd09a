//! The machine a benchmark runs on, as the janitor and queue benchmarks describe it at the top
//! of their reports. Each includes this file with `#[path = "common/host.rs"] mod host;` and
//! uses all of it.

use std::fmt::Write as _;
use std::path::Path;

use sqlx::Connection as _;

/// Writes the header of the table of machine facts and its first rows: nproc, CPU, memory,
/// kernel, and the data folder `dir` with the filesystem it is on.
pub fn facts_head(out: &mut String, dir: &Path) -> std::fmt::Result {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").map(|r| r.trim_start_matches([' ', '\t', ':']).to_owned()))
        .unwrap_or_else(|| "?".into());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<u64>().ok()))
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    writeln!(out, "| fact | value |\n|---|---|")?;
    writeln!(out, "| nproc | {} |", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0))?;
    writeln!(out, "| CPU | {model} |")?;
    writeln!(out, "| memory | {:.1} GiB |", mem as f64 / 1024.0 / 1024.0)?;
    writeln!(out, "| kernel | {} |", kernel.trim())?;
    writeln!(out, "| data folder | {} ({}) |", dir.display(), filesystem_of(dir))
}

/// The version of the SQLite that sqlx bundles.
pub async fn sqlite_version() -> anyhow::Result<String> {
    let mut conn = sqlx::SqliteConnection::connect("sqlite::memory:").await?;
    Ok(sqlx::query_scalar("SELECT sqlite_version()").fetch_one(&mut conn).await?)
}

/// The filesystem type of the longest mount point containing `dir`.
pub fn filesystem_of(dir: &Path) -> String {
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    let mut best = ("?".to_owned(), 0);
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 2 && dir.starts_with(f[1]) && f[1].len() >= best.1 {
            best = (format!("{} on {}", f[2], f[0]), f[1].len());
        }
    }
    best.0
}

/// The 1-, 5- and 15-minute load averages.
pub fn load_triple() -> String {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}
