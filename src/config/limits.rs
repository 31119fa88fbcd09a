//! `[limits]`: byte limits of the two Bot API modes, how much one chat may queue, how long an
//! album's ticket waits for its next part, and what one `/merge` takes.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::value::{self, Between};

/// `cloud_download` when not set: 20 MiB, Telegram's limit for getFile.
pub const DEFAULT_CLOUD_DOWNLOAD: u64 = 20 * 1024 * 1024;
/// `local_download` when not set: 2000 MB.
pub const DEFAULT_LOCAL_DOWNLOAD: u64 = 2_000_000_000;
/// `cloud_upload` when not set: 50 MB, Telegram's limit for sendDocument.
pub const DEFAULT_CLOUD_UPLOAD: u64 = 50_000_000;
/// `local_upload` when not set: 2000 MB.
pub const DEFAULT_LOCAL_UPLOAD: u64 = 2_000_000_000;
/// `per_chat_queued` when not set.
pub const DEFAULT_PER_CHAT_QUEUED: u64 = 50;
/// `album_quiet_window` when not set: Telegram sends an album's messages within a second.
pub const DEFAULT_ALBUM_QUIET_WINDOW: Duration = Duration::from_secs(2);
/// `merge_files` when not set.
pub const DEFAULT_MERGE_FILES: u64 = 50;
/// `merge_bytes` when not set: 200 MB.
pub const DEFAULT_MERGE_BYTES: u64 = 200_000_000;
/// `merge_idle` when not set.
pub const DEFAULT_MERGE_IDLE: Duration = Duration::from_secs(3600);

/// `[limits]`: byte limits of the two Bot API modes, how much one chat may queue, an album's
/// quiet window, and what one `/merge` takes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// `cloud_download`
    #[serde(deserialize_with = "value::size", serialize_with = "value::write_size")]
    pub cloud_download: u64,
    /// `local_download`
    #[serde(deserialize_with = "value::size", serialize_with = "value::write_size")]
    pub local_download: u64,
    /// `cloud_upload`
    #[serde(deserialize_with = "value::size", serialize_with = "value::write_size")]
    pub cloud_upload: u64,
    /// `local_upload`
    #[serde(deserialize_with = "value::size", serialize_with = "value::write_size")]
    pub local_upload: u64,
    /// `per_chat_queued`: how many of one chat's jobs may wait in `accepted` (not downloading
    /// yet); a document beyond it is refused, with no job. 1 to 100 000.
    #[serde(deserialize_with = "Between::<1, 100_000>::count")]
    pub per_chat_queued: u64,
    /// `album_quiet_window`: an album's ticket takes parts until none came for this long (1 s
    /// to 1 min), measured on the job's row, so it holds across hosts and restarts.
    #[serde(deserialize_with = "Between::<1, 60>::duration", serialize_with = "value::write_duration")]
    pub album_quiet_window: Duration,
    /// `merge_files`: the most files one `/merge` takes (2 to 500).
    #[serde(deserialize_with = "Between::<2, 500>::count")]
    pub merge_files: u64,
    /// `merge_bytes`: the most bytes one `/merge` takes, all its files together; the byte
    /// budget must hold them too.
    #[serde(deserialize_with = "value::size", serialize_with = "value::write_size")]
    pub merge_bytes: u64,
    /// `merge_idle`: an open `/merge` that got no file for this long (1 min to 1 day) is merged
    /// as it is, as if `/done` had come.
    #[serde(deserialize_with = "Between::<60, 86_400>::duration", serialize_with = "value::write_duration")]
    pub merge_idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cloud_download: DEFAULT_CLOUD_DOWNLOAD,
            local_download: DEFAULT_LOCAL_DOWNLOAD,
            cloud_upload: DEFAULT_CLOUD_UPLOAD,
            local_upload: DEFAULT_LOCAL_UPLOAD,
            per_chat_queued: DEFAULT_PER_CHAT_QUEUED,
            album_quiet_window: DEFAULT_ALBUM_QUIET_WINDOW,
            merge_files: DEFAULT_MERGE_FILES,
            merge_bytes: DEFAULT_MERGE_BYTES,
            merge_idle: DEFAULT_MERGE_IDLE,
        }
    }
}

impl Limits {
    /// The largest file the bot can fetch in the current mode.
    pub fn download(&self, local_api: bool) -> u64 {
        if local_api { self.local_download } else { self.cloud_download }
    }

    /// The largest file the bot can send in the current mode.
    pub fn upload(&self, local_api: bool) -> u64 {
        if local_api { self.local_upload } else { self.cloud_upload }
    }
}
