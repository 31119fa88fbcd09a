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

/// `memory` when not set: half of this machine's memory (`MemTotal` in `/proc/meminfo`), or
/// 4 GiB where that cannot be read.
pub fn default_memory() -> u64 {
    const FALLBACK: u64 = 4 * 1024 * 1024 * 1024;
    let total_kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        text.lines()
            .find_map(|line| line.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
    });
    // Rounded down to whole MiB, so the effective configuration writes it as a readable size.
    total_kib.map_or(FALLBACK, |kib| kib / 2 / 1024 * 1024 * 1024)
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
    /// its input's size × its operation's factor (at most its `memory_limit`) before it starts.
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
