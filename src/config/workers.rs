//! `[workers]`: pool sizes and lease behaviour.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::HOUR;
use super::value::{self, Between};

/// `download` when not set.
pub const DEFAULT_DOWNLOAD: usize = 4;
/// `lease` when not set.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);
/// `max_attempts` when not set.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// `shutdown_grace` when not set.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(20);
/// `per_chat` when not set.
pub const DEFAULT_PER_CHAT: usize = 2;

/// `process` when not set: the CPU cores this process may use.
pub fn default_process() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// `[workers]`: pool sizes and lease behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Workers {
    /// `download`: concurrent downloads; 1 to 256.
    #[serde(deserialize_with = "Between::<1, 256>::count")]
    pub download: usize,
    /// `process`: concurrent processing jobs (default: CPU cores); 1 to 256.
    #[serde(deserialize_with = "Between::<1, 256>::count")]
    pub process: usize,
    /// `lease`: how long a claim holds a job without renewal; 2 s to 1 h.
    #[serde(deserialize_with = "Between::<2, HOUR>::duration", serialize_with = "value::write_duration")]
    pub lease: Duration,
    /// `max_attempts`: attempts before a job fails for good; 1 to 1000.
    #[serde(deserialize_with = "Between::<1, 1000>::count")]
    pub max_attempts: u32,
    /// `shutdown_grace`: how long running work may finish after SIGTERM before it is released;
    /// 0 to 1 h.
    #[serde(deserialize_with = "Between::<0, HOUR>::duration", serialize_with = "value::write_duration")]
    pub shutdown_grace: Duration,
    /// `per_chat`: how many of one chat's jobs may be in flight at once; 1 to 1000.
    #[serde(deserialize_with = "Between::<1, 1000>::count")]
    pub per_chat: usize,
}

impl Default for Workers {
    fn default() -> Self {
        Self {
            download: DEFAULT_DOWNLOAD,
            process: default_process(),
            lease: DEFAULT_LEASE,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            per_chat: DEFAULT_PER_CHAT,
        }
    }
}
