//! `[budget]`: bytes of in-flight files (downloads, sources, intermediate output) allowed on
//! this machine, and the memory its processing runs may take together. Results kept for
//! retention are not counted.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::DAY;
use super::value::{self, Between};

/// `bytes` when not set: 16 GiB.
pub const DEFAULT_BYTES: u64 = 16 * 1024 * 1024 * 1024;
/// `multiplier` when not set.
pub const DEFAULT_MULTIPLIER: f64 = 2.0;
/// `max_wait` when not set.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(60);

/// `memory` when not set: half of the memory this process may have: the machine's (`MemTotal`
/// in `/proc/meminfo`), or less where its control group is limited (systemd's `MemoryMax=`,
/// a container's memory limit), or 4 GiB where neither can be read.
pub fn default_memory() -> u64 {
    const FALLBACK: u64 = 4 * 1024 * 1024 * 1024;
    let machine = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        text.lines()
            .find_map(|line| line.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024)
    });
    let group = std::fs::read_to_string("/proc/self/cgroup")
        .ok()
        .and_then(|membership| cgroup_memory_limit(std::path::Path::new("/sys/fs/cgroup"), &membership));
    let available = match (machine, group) {
        (Some(machine), Some(group)) => Some(machine.min(group)),
        (one, other) => one.or(other),
    };
    // Rounded down to whole MiB, so the effective configuration writes it as a readable size.
    available.map_or(FALLBACK, |bytes| bytes / 2 / (1024 * 1024) * (1024 * 1024))
}

/// The tightest `memory.max` of the cgroup-v2 group named in `membership` (the text of
/// `/proc/self/cgroup`) and of the groups above it, under `root`; `None` when none is limited
/// or the hierarchy is not cgroup v2.
fn cgroup_memory_limit(root: &std::path::Path, membership: &str) -> Option<u64> {
    let group = membership.lines().find_map(|line| line.strip_prefix("0::"))?;
    let mut dir = root.to_path_buf();
    let mut tightest: Option<u64> = None;
    for part in group.trim().trim_start_matches('/').split('/').filter(|p| !p.is_empty()) {
        dir.push(part);
        // "max" (no limit) and a missing file alike say nothing.
        let limit = std::fs::read_to_string(dir.join("memory.max")).ok().and_then(|v| v.trim().parse::<u64>().ok());
        tightest = match (tightest, limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    tightest
}

/// `[budget]`: bytes of in-flight files allowed on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    /// `bytes`: the budget.
    #[serde(deserialize_with = "value::size", serialize_with = "value::write_size")]
    pub bytes: u64,
    /// `multiplier`: bytes reserved per byte of source (source + intermediate output); 1 to 10.
    #[serde(deserialize_with = "Between::<1, 10>::ratio")]
    pub multiplier: f64,
    /// `max_wait`: after waiting this long for room, a job stops smaller ones from passing it;
    /// 0 to 1 day.
    #[serde(deserialize_with = "Between::<0, DAY>::duration", serialize_with = "value::write_duration")]
    pub max_wait: Duration,
    /// `memory`: memory the processing runs of this machine may take together; each reserves
    /// its address-space limit before it starts (a base plus its input's size × its
    /// operation's factor, at most its `memory_limit`: `operations::Limits::sized_for`).
    #[serde(deserialize_with = "value::size", serialize_with = "value::write_size")]
    pub memory: u64,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        Self {
            bytes: DEFAULT_BYTES,
            multiplier: DEFAULT_MULTIPLIER,
            max_wait: DEFAULT_MAX_WAIT,
            memory: default_memory(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tightest_memory_max_of_the_group_and_its_parents_is_the_limit() {
        let root = tempfile::tempdir().expect("temp dir");
        let service = root.path().join("system.slice/docket.service");
        std::fs::create_dir_all(&service).expect("groups");
        std::fs::write(root.path().join("system.slice/memory.max"), "8589934592\n").expect("slice");
        std::fs::write(service.join("memory.max"), "max\n").expect("service");
        let membership = "0::/system.slice/docket.service\n";
        assert_eq!(cgroup_memory_limit(root.path(), membership), Some(8 << 30));
        std::fs::write(service.join("memory.max"), "2147483648\n").expect("service");
        assert_eq!(cgroup_memory_limit(root.path(), membership), Some(2 << 30));
        // Unlimited all the way up, or cgroup v1: nothing to go by.
        std::fs::write(root.path().join("system.slice/memory.max"), "max\n").expect("slice");
        std::fs::write(service.join("memory.max"), "max\n").expect("service");
        assert_eq!(cgroup_memory_limit(root.path(), membership), None);
        assert_eq!(cgroup_memory_limit(root.path(), "12:memory:/system.slice/docket.service\n"), None);
    }
}
