//! Each service's slice of the configuration. The services define their own settings types and
//! never see [`Config`]; the conversions live here, in the wiring layer, so a service depends on
//! nothing above it.

use std::time::Duration;

use super::Config;
use super::access::Access;
use super::outbox::OutboxConfig;
use crate::intake::AccessRules;
use crate::janitor::JanitorSettings;
use crate::outbox::SendLimits;
use crate::pipeline::{MAX_SOURCE_LOSSES, PipelineSettings};

impl PipelineSettings {
    /// The pipeline's slice of the configuration, with the pacing of idle polls and retries
    /// (`docket::app::Options`).
    pub fn from_config(config: &Config, idle_poll: Duration, retry_base: Duration) -> Self {
        Self {
            lease: config.workers.lease,
            max_attempts: config.workers.max_attempts,
            download_limit: config.download_limit(),
            upload_limit: config.upload_limit(),
            result_ttl: config.retention.result_ttl,
            idle_poll,
            retry_base,
            per_chat: config.workers.per_chat,
            min_free: config.storage.min_free,
            max_source_losses: MAX_SOURCE_LOSSES,
        }
    }
}

impl JanitorSettings {
    /// The janitor's slice of the configuration.
    pub fn from_config(config: &Config) -> Self {
        Self {
            interval: config.retention.janitor_interval,
            part_max_age: config.retention.part_max_age,
            history: config.retention.history,
            prune_jobs: config.retention.prune_jobs,
            results_bytes: config.retention.results_bytes,
            min_free: config.storage.min_free,
        }
    }
}

impl From<&Access> for AccessRules {
    fn from(access: &Access) -> Self {
        Self { allowed_users: access.allowed_users.clone(), admins: access.admins.clone(), groups: access.groups }
    }
}

impl From<OutboxConfig> for SendLimits {
    fn from(outbox: OutboxConfig) -> Self {
        Self {
            senders: outbox.senders,
            global_per_second: outbox.global_per_second,
            private_interval: outbox.private_interval,
            group_per_minute: outbox.group_per_minute,
            max_attempts: outbox.max_attempts,
        }
    }
}
