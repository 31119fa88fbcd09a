//! `[access]`: who may use the bot, and where.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::value;
pub use crate::domain::incoming::GroupMode;

/// `groups` when not set.
pub const DEFAULT_GROUPS: GroupMode = GroupMode::Addressed;

/// `[access]`: who may use the bot, and where. By default everyone, with no admins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Access {
    /// `allowed_users`: empty means everyone.
    #[serde(deserialize_with = "value::user_ids")]
    pub allowed_users: Vec<i64>,
    /// `admins`: receive operational alerts.
    #[serde(deserialize_with = "value::user_ids")]
    pub admins: Vec<i64>,
    /// `groups`: which messages docket takes in group chats.
    #[serde(deserialize_with = "read_groups")]
    pub groups: GroupMode,
    /// `invite_tokens_env`: the environment variable that holds the invite tokens (separated by
    /// commas or spaces); `/start <token>` with one of them lets the sender in. `None` (the
    /// default): no invites.
    #[serde(deserialize_with = "value::env_name", skip_serializing_if = "Option::is_none")]
    pub invite_tokens_env: Option<String>,
}

impl Access {
    /// Whether `user_id` may use the bot.
    pub fn allows(&self, user_id: i64) -> bool {
        self.allowed_users.is_empty() || self.allowed_users.contains(&user_id) || self.admins.contains(&user_id)
    }
}

impl Serialize for GroupMode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

fn read_groups<'de, D: Deserializer<'de>>(d: D) -> Result<GroupMode, D::Error> {
    let written = value::string(d)?;
    GroupMode::ALL
        .into_iter()
        .find(|mode| mode.as_str() == written)
        .ok_or_else(|| D::Error::custom("one of \"addressed\", \"all\" or \"off\""))
}
