//! `[metrics]`: the Prometheus endpoint.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::value;

/// `[metrics]`: the Prometheus endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// `listen`: address of the `/metrics` HTTP endpoint; `None` (the default) = no endpoint.
    #[serde(with = "value::optional_listen", skip_serializing_if = "Option::is_none")]
    pub listen: Option<SocketAddr>,
}
