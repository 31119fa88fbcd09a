//! `[retention]`: how long results and history are kept, and the janitor that enforces it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::value::{self, Between};
use super::{DAY, YEAR};

/// `result_ttl` when not set.
pub const DEFAULT_RESULT_TTL: Duration = Duration::from_secs(7 * DAY);
/// `janitor_interval` when not set.
pub const DEFAULT_JANITOR_INTERVAL: Duration = Duration::from_secs(600);
/// `part_max_age` when not set.
pub const DEFAULT_PART_MAX_AGE: Duration = Duration::from_secs(6 * 3600);
/// `history` when not set.
pub const DEFAULT_HISTORY: Duration = Duration::from_secs(30 * DAY);
/// `prune_jobs` when not set.
pub const DEFAULT_PRUNE_JOBS: bool = false;

/// `[retention]`: how long results are kept.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Retention {
    /// `result_ttl`; 1 s to 3650 days.
    #[serde(deserialize_with = "Between::<1, { 3650 * DAY }>::duration", serialize_with = "value::write_duration")]
    pub result_ttl: Duration,
    /// `janitor_interval`: how often the janitor runs inside `docket run`; 1 s to 1 day.
    #[serde(deserialize_with = "Between::<1, DAY>::duration", serialize_with = "value::write_duration")]
    pub janitor_interval: Duration,
    /// `part_max_age`: unowned `.part` files older than this are deleted; 1 s to 365 days.
    #[serde(deserialize_with = "Between::<1, YEAR>::duration", serialize_with = "value::write_duration")]
    pub part_max_age: Duration,
    /// `history`: registered updates, delivered messages (and, with `prune_jobs`, ended jobs)
    /// older than this are deleted; 2 days to 3650 days. Telegram redelivers an unconfirmed
    /// update for up to 24 hours: the registry must remember well beyond that.
    #[serde(
        deserialize_with = "Between::<{ 2 * DAY }, { 10 * YEAR }>::duration",
        serialize_with = "value::write_duration"
    )]
    pub history: Duration,
    /// `prune_jobs`: whether `failed` and `expired` job rows older than `history` are deleted.
    #[serde(deserialize_with = "value::boolean")]
    pub prune_jobs: bool,
    /// `results_bytes`: when results exceed this, the oldest expire early.
    #[serde(with = "value::optional_size_key", skip_serializing_if = "Option::is_none")]
    pub results_bytes: Option<u64>,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            result_ttl: DEFAULT_RESULT_TTL,
            janitor_interval: DEFAULT_JANITOR_INTERVAL,
            part_max_age: DEFAULT_PART_MAX_AGE,
            history: DEFAULT_HISTORY,
            prune_jobs: DEFAULT_PRUNE_JOBS,
            results_bytes: None,
        }
    }
}
