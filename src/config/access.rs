//! `[access]`: who may use the bot, and where.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::value;

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
}

impl Access {
    /// Whether `user_id` may use the bot.
    pub fn allows(&self, user_id: i64) -> bool {
        self.allowed_users.is_empty() || self.allowed_users.contains(&user_id) || self.admins.contains(&user_id)
    }
}

/// `[access] groups`: which messages docket takes in groups and supergroups. Private chats are
/// not affected: there every document and command is docket's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupMode {
    /// `"addressed"`: commands without a bot name or naming this bot (`/status@ThisBot 12`), and
    /// documents whose caption mentions the bot (`@ThisBot`) or that reply to one of its
    /// messages. Commands for other bots and everything else are ignored.
    Addressed,
    /// `"all"`: every document; commands as with `Addressed`.
    All,
    /// `"off"`: nothing from groups, not even commands.
    Off,
}

impl Default for GroupMode {
    fn default() -> Self {
        DEFAULT_GROUPS
    }
}

impl GroupMode {
    /// Every mode, in the order the documentation lists them.
    const ALL: [Self; 3] = [Self::Addressed, Self::All, Self::Off];

    /// The configuration spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Addressed => "addressed",
            Self::All => "all",
            Self::Off => "off",
        }
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
