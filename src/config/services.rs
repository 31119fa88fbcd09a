//! Each service's slice of the configuration. The services define their own settings types and
//! never see [`Config`]; the conversions live here, in the wiring layer, so a service depends on
//! nothing above it.

use std::path::PathBuf;
use std::time::Duration;

use super::Config;
use super::access::Access;
use super::outbox::OutboxConfig;
use super::processing::{ExternalToolConfig, ProcessingConfig};
use crate::domain::BotId;
use crate::intake::{AccessRules, IntakeSettings, InviteTokens};
use crate::janitor::JanitorSettings;
use crate::operations::{ExternalTool, Limits, ShrinkSettings};
use crate::outbox::{OutboxSettings, SendLimits};
use crate::pipeline::budget::Budget;
use crate::pipeline::{MAX_SOURCE_LOSSES, PipelineSettings};
use crate::sealing::SealingKey;

impl IntakeSettings {
    /// Intake's slice of the configuration, for the bot of `bot_id` and `bot_username`, with the
    /// largest source `budget` can hold.
    pub(crate) fn from_config(
        config: &Config,
        bot_id: BotId,
        bot_username: Option<String>,
        budget: &Budget,
        invites: InviteTokens,
        sealing: SealingKey,
    ) -> Self {
        Self {
            bot_id,
            bot_username,
            access: (&config.access).into(),
            download_limit: config.download_limit(),
            upload_limit: config.upload_limit(),
            result_ttl: config.retention.result_ttl,
            largest_source: budget.largest_source(),
            budget_multiplier: config.budget.multiplier,
            dead_after: config.node.dead_after,
            per_chat_queued: config.limits.per_chat_queued,
            album_quiet_window: config.limits.album_quiet_window,
            merge_files: config.limits.merge_files,
            merge_bytes: config.limits.merge_bytes,
            merge_idle: config.limits.merge_idle,
            budget_bytes: config.budget.bytes,
            invites,
            default_operation: config.processing.default_operation(),
            sealing,
        }
    }
}

impl OutboxSettings {
    /// The senders' slice of the configuration, with the pacing of idle polls and retries
    /// (`docket::app::Options`).
    pub(crate) fn from_config(config: &Config, idle_poll: Duration, retry_base: Duration) -> Self {
        Self {
            limits: config.outbox.into(),
            // A sender that dies mid-send holds its chat's queue until this lapses: keep it as
            // short as the job lease; long uploads renew it.
            lease: config.workers.lease,
            admins: config.access.admins.clone(),
            idle_poll,
            retry_base,
            upload_limit: config.upload_limit(),
        }
    }
}

impl PipelineSettings {
    /// The pipeline's slice of the configuration, with the pacing of idle polls and retries
    /// (`docket::app::Options`).
    /// `program` is what processing runs re-execute as their child (docket's own binary).
    pub fn from_config(config: &Config, idle_poll: Duration, retry_base: Duration, program: PathBuf) -> Self {
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
            limits: Limits::from(&config.processing),
            shrink: ShrinkSettings::from(&config.processing),
            program,
            tools: config.processing.tools(),
            office: crate::operations::Office::available(&config.processing.soffice),
            preview: config.processing.preview_renderer().and_then(crate::operations::Renderer::thumbnails),
            dead_after: config.node.dead_after,
            default_operation: config.processing.default_operation(),
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
            admins: config.access.admins.clone(),
            dead_after: config.node.dead_after,
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

impl From<&ProcessingConfig> for Limits {
    fn from(processing: &ProcessingConfig) -> Self {
        Self {
            memory: processing.memory_limit,
            timeout: processing.timeout,
            max_inflate: processing.max_inflate,
            // Narrowed per run to what the run may write (`pipeline::process`).
            max_file: processing.disk_limit,
            disk: processing.disk_limit,
            // Narrowed per run to its share of the memory budget (`pipeline::memory`).
            threads: super::workers::default_process(),
        }
    }
}

impl From<&ProcessingConfig> for ShrinkSettings {
    fn from(processing: &ProcessingConfig) -> Self {
        Self { dpi: processing.shrink_dpi, jpeg_quality: processing.jpeg_quality }
    }
}

impl ProcessingConfig {
    /// The external tools, as operations.
    pub fn tools(&self) -> Vec<ExternalTool> {
        self.external.iter().map(|(name, tool)| tool.to_tool(name)).collect()
    }
}

impl ExternalToolConfig {
    /// This section as the operation `name`.
    pub fn to_tool(&self, name: &str) -> ExternalTool {
        ExternalTool {
            name: name.to_owned(),
            command: self.command.clone(),
            accepts: self.accepts.clone(),
            output: self.output.clone(),
            memory_limit: self.memory_limit,
            timeout: self.timeout,
            memory_factor: self.memory_factor,
            reach: self.reach.clone(),
        }
    }
}
