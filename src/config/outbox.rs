//! `[outbox]`: how messages to people go out, within Telegram's limits.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::MINUTE;
use super::value::{self, Between};

/// `senders` when not set.
pub const DEFAULT_SENDERS: usize = 4;
/// `global_per_second` when not set (Telegram allows about 30).
pub const DEFAULT_GLOBAL_PER_SECOND: u32 = 25;
/// `private_interval` when not set.
pub const DEFAULT_PRIVATE_INTERVAL: Duration = Duration::from_secs(1);
/// `group_per_minute` when not set.
pub const DEFAULT_GROUP_PER_MINUTE: u32 = 20;
/// `max_attempts` when not set.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 8;

/// `[outbox]`: how messages to people go out, within Telegram's limits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutboxConfig {
    /// `senders`: concurrent senders (one message in flight each); 1 to 64.
    #[serde(deserialize_with = "Between::<1, 64>::count")]
    pub senders: usize,
    /// `global_per_second`: messages per second to everyone together (every process on the
    /// database: the send slots are reserved there); 1 to 1000.
    #[serde(deserialize_with = "Between::<1, 1000>::count")]
    pub global_per_second: u32,
    /// `private_interval`: least time between two messages to one private chat; 0 to 1 min.
    #[serde(deserialize_with = "Between::<0, MINUTE>::duration", serialize_with = "value::write_duration")]
    pub private_interval: Duration,
    /// `group_per_minute`: messages per minute to one group, spread evenly; 1 to 6000.
    #[serde(deserialize_with = "Between::<1, 6000>::count")]
    pub group_per_minute: u32,
    /// `max_attempts`: attempts of one message before it is `failed` and admins are alerted;
    /// 1 to 100.
    #[serde(deserialize_with = "Between::<1, 100>::count")]
    pub max_attempts: u32,
}

impl Default for OutboxConfig {
    fn default() -> Self {
        Self {
            senders: DEFAULT_SENDERS,
            global_per_second: DEFAULT_GLOBAL_PER_SECOND,
            private_interval: DEFAULT_PRIVATE_INTERVAL,
            group_per_minute: DEFAULT_GROUP_PER_MINUTE,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
        }
    }
}
