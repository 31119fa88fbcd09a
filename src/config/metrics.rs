//! `[metrics]`: the Prometheus endpoint.

use std::net::SocketAddr;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};

use super::value;

/// `[metrics]`: the Prometheus endpoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsConfig {
    /// `listen`: address of the `/metrics` HTTP endpoint; `None` (the default) = no endpoint.
    #[serde(
        deserialize_with = "read_listen",
        serialize_with = "value::write_optional_display",
        skip_serializing_if = "Option::is_none"
    )]
    pub listen: Option<SocketAddr>,
}

fn read_listen<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
    match value::string(d)?.parse() {
        Ok(addr) => Ok(Some(addr)),
        Err(_) => Err(D::Error::custom("an address and port such as \"127.0.0.1:9464\"")),
    }
}
