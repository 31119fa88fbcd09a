//! `[storage]`: the database and the data folder.

use std::path::PathBuf;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::DatabaseUrl;
use super::value;

/// `database_url` when not set.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/docket.db";
/// `data_dir` when not set.
pub const DEFAULT_DATA_DIR: &str = "data";
/// `min_free` when not set: 1 GiB.
pub const DEFAULT_MIN_FREE: u64 = 1024 * 1024 * 1024;

/// `[storage]`: the database and the data folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StorageConfig {
    /// `database_url`: which database, by scheme. Written out with its passwords as `***`.
    #[serde(deserialize_with = "read_database_url", serialize_with = "write_redacted")]
    pub database_url: DatabaseUrl,
    /// `data_dir`: holds `downloads/`, `work/` and `results/`.
    #[serde(deserialize_with = "value::folder", serialize_with = "value::write_path")]
    pub data_dir: PathBuf,
    /// `min_free`: below this much free space on `data_dir`, no download starts.
    #[serde(deserialize_with = "value::size", serialize_with = "value::write_size")]
    pub min_free: u64,
    /// `secret_key_env`: the environment variable holding the secret that seals what jobs keep
    /// for a while (a decrypt's password) in the database; not set: the bot token seals it. Every
    /// host of one bot must have the same.
    #[serde(deserialize_with = "value::env_name", skip_serializing_if = "Option::is_none")]
    pub secret_key_env: Option<String>,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            database_url: DatabaseUrl::parse(DEFAULT_DATABASE_URL).expect("the default database URL is valid"),
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            min_free: DEFAULT_MIN_FREE,
            secret_key_env: None,
        }
    }
}

fn read_database_url<'de, D: Deserializer<'de>>(d: D) -> Result<DatabaseUrl, D::Error> {
    DatabaseUrl::parse(&value::string(d)?).map_err(D::Error::custom)
}

/// The URL as [`DatabaseUrl::redacted`] shows it: the effective configuration is printed, and
/// a password must not be.
fn write_redacted<S: Serializer>(url: &DatabaseUrl, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&url.redacted())
}
