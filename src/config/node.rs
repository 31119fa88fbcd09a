//! `[node]`: this host among those running docket on one database.

use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::DAY;
use super::value::{self, Between};
use crate::domain::NodeName;

/// `dead_after` when not set.
pub const DEFAULT_DEAD_AFTER: Duration = Duration::from_secs(120);

/// `[node]`: this host's name and when a silent host counts as dead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NodeConfig {
    /// `name`: this host's name among those on the database (default: the machine's host name);
    /// 1 to 64 letters, digits, `.`, `_` or `-`.
    #[serde(deserialize_with = "read_name", serialize_with = "write_name", skip_serializing_if = "Option::is_none")]
    pub name: Option<NodeName>,
    /// `dead_after`: how long a host may be silent (no heartbeat) before it counts as dead;
    /// 10 s to 1 day. Its heartbeat is sent four times as often.
    #[serde(deserialize_with = "Between::<10, DAY>::duration", serialize_with = "value::write_duration")]
    pub dead_after: Duration,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self { name: None, dead_after: DEFAULT_DEAD_AFTER }
    }
}

fn read_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NodeName>, D::Error> {
    let name = String::deserialize(d).map_err(|_| D::Error::custom(value::STRING))?;
    NodeName::new(name.trim())
        .map(Some)
        .ok_or_else(|| D::Error::custom("a name of 1 to 64 letters, digits, '.', '_' or '-'"))
}

fn write_name<S: Serializer>(name: &Option<NodeName>, s: S) -> Result<S::Ok, S::Error> {
    match name {
        Some(name) => s.serialize_str(name.as_str()),
        None => s.serialize_none(),
    }
}
