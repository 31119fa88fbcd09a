//! The machine around the benchmark: facts, page cache, peak RSS, test files, timed commands.
//! (Statistics are `bench_support::stats`, shared with the other benchmarks.)

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use sha2::{Digest, Sha256};

pub const MIB: u64 = 1024 * 1024;

/// What the report says about the machine.
#[derive(Debug)]
pub struct Machine {
    pub nproc: usize,
    pub cpu_model: String,
    pub sha_ni: bool,
    pub mem_total: String,
    pub filesystem: String,
    pub kernel: String,
}

pub fn machine(dir: &Path) -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name").and_then(|r| r.split_once(':')).map(|(_, v)| v.trim().to_owned()))
        .unwrap_or_else(|| "unknown".to_owned());
    let sha_ni =
        cpuinfo.lines().filter(|l| l.starts_with("flags")).take(1).any(|l| l.split_whitespace().any(|f| f == "sha_ni"));
    let mem_total = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().to_owned()))
        .unwrap_or_default();
    let filesystem = output_of(Command::new("df").args(["--output=source,fstype", "-h"]).arg(dir))
        .and_then(|s| s.lines().nth(1).map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")))
        .unwrap_or_else(|| "unknown".to_owned());
    let kernel = output_of(Command::new("uname").arg("-r")).map(|s| s.trim().to_owned()).unwrap_or_default();
    Machine {
        nproc: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        cpu_model,
        sha_ni,
        mem_total,
        filesystem,
        kernel,
    }
}

fn output_of(cmd: &mut Command) -> Option<String> {
    let out = cmd.stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The 1-minute load average, to show how busy the machine was.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(ToOwned::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// How every timed run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// `sync; echo 3 > /proc/sys/vm/drop_caches`: every run reads its source from the disk.
    Dropped,
    /// Dropping was refused: `sync`, then the source is read once so every run finds it cached.
    Warmed,
}

impl CacheMode {
    pub fn detect() -> Self {
        sync_all();
        if std::fs::write("/proc/sys/vm/drop_caches", b"3\n").is_ok() { Self::Dropped } else { Self::Warmed }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Self::Dropped => {
                "`sync; echo 3 > /proc/sys/vm/drop_caches` before every timed run (cold cache, both sides)"
            }
            Self::Warmed => {
                "dropping caches was not permitted: `sync` and the source read once before every timed run \
                 (warm cache, both sides)"
            }
        }
    }

    /// Brings the machine to the same state before a timed run: no dirty pages, cache as chosen.
    pub fn settle(self, source: &Path) -> anyhow::Result<()> {
        sync_all();
        match self {
            Self::Dropped => std::fs::write("/proc/sys/vm/drop_caches", b"3\n").context("drop_caches")?,
            Self::Warmed => {
                let mut f = File::open(source)?;
                let mut buf = vec![0u8; 4 << 20];
                while f.read(&mut buf)? > 0 {}
            }
        }
        Ok(())
    }
}

fn sync_all() {
    let _ = Command::new("sync").status();
}

/// A field of /proc/self/status in KiB (`VmHWM`, `VmRSS`).
pub fn vm_kib(field: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(field).and_then(|r| r.strip_prefix(':')))
        .with_context(|| format!("no {field} in /proc/self/status"))?;
    let kib = line.trim().trim_end_matches("kB").trim();
    Ok(kib.parse()?)
}

/// Writes `size` bytes of incompressible pseudo-random data (real blocks, no holes) and returns
/// the hex sha256. Reuses an existing file of the right size when its `.sha256` sidecar exists.
pub fn make_file(path: &Path, size: u64) -> anyhow::Result<String> {
    let sidecar = path.with_extension("sha256");
    if let (Ok(meta), Ok(hash)) = (std::fs::metadata(path), std::fs::read_to_string(&sidecar))
        && meta.len() == size
        && hash.trim().len() == 64
    {
        return Ok(hash.trim().to_owned());
    }
    let mut file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ size;
    let mut block = vec![0u8; (8 * MIB) as usize];
    let mut left = size;
    while left > 0 {
        for word in block.chunks_exact_mut(8) {
            // xorshift64*: fast and good enough to defeat compression and deduplication.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            word.copy_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        let n = usize::try_from(left.min(block.len() as u64))?;
        hasher.update(&block[..n]);
        file.write_all(&block[..n])?;
        left -= n as u64;
    }
    file.sync_all()?;
    let hash = hex::encode(hasher.finalize());
    std::fs::write(&sidecar, &hash)?;
    Ok(hash)
}

/// Removes a test file and its sidecar.
pub fn remove_file(path: &Path) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_file(path.with_extension("sha256"));
}

/// Runs a command to completion and returns its wall time; fails on a non-zero exit.
pub fn timed(cmd: &mut Command) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let status = cmd.stdin(Stdio::null()).status().with_context(|| format!("running {cmd:?}"))?;
    let took = start.elapsed();
    if !status.success() {
        bail!("{cmd:?} exited with {status}");
    }
    Ok(took)
}

/// Checks that `path` holds `size` bytes.
pub fn check_size(path: &Path, size: u64) -> anyhow::Result<()> {
    let got = std::fs::metadata(path).with_context(|| format!("{} missing", path.display()))?.len();
    ensure!(got == size, "{} has {got} bytes, expected {size}", path.display());
    Ok(())
}

/// Throughput of the `sha2` crate (the one docket uses) on this CPU, in MiB/s, from memory.
pub fn sha256_mib_per_s() -> f64 {
    let buf = vec![0x5Au8; (64 * MIB) as usize];
    let rounds = 8;
    let start = Instant::now();
    let mut hasher = Sha256::new();
    for _ in 0..rounds {
        hasher.update(&buf);
    }
    let digest = hasher.finalize();
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(digest);
    (rounds * 64) as f64 / secs
}

/// Sequential write speed of the disk with the data made durable: `dd … conv=fsync`, MiB/s.
pub fn disk_write_mib_per_s(dir: &Path, size: u64) -> anyhow::Result<f64> {
    let target = dir.join("dd-probe.bin");
    let count = (size / (4 * MIB)).to_string();
    let took = timed(Command::new("dd").arg("if=/dev/zero").arg(format!("of={}", target.display())).args([
        "bs=4M",
        &format!("count={count}"),
        "conv=fsync",
        "status=none",
    ]));
    let _ = std::fs::remove_file(&target);
    Ok(size as f64 / MIB as f64 / took?.as_secs_f64())
}
