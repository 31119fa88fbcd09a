//! Wiring: opens the store and the data folder, builds the Bot API client, starts every loop
//! (polling intake, download pool, processing pool, outbox senders), and shuts them down in
//! order on SIGTERM/SIGINT: stop claiming, let running work finish within
//! `[workers] shutdown_grace`, then interrupt and release what is left so another process can
//! resume it at once. The same orderly stop follows when polling ends for good (the Bot API
//! refused the token), and `run` then returns that error.
//!
//! [`run`] (`service.rs`) is `docket run`: signals, systemd's readiness and watchdog, and the
//! reload on SIGHUP ([`Running::reload`]). [`start`] (`startup.rs`) opens everything and starts
//! every loop; what it takes besides the configuration is in `options.rs` ([`Options`],
//! [`Environment`]).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::config::Config;
use crate::intake::IntakeSettings;
use crate::janitor::{JanitorDeps, JanitorSettings};
use crate::outbox::OutboxSettings;
use crate::pipeline::budget::Budget;
use crate::pipeline::memory::MemoryBudget;
use crate::pipeline::{PipelineDeps, PipelineSettings};
use crate::runtime::{Heartbeat, Live, Shutdown, Wakeups};
use crate::sealing::SealingKey;
use crate::spool::Spool;
use crate::store::Store;
use crate::telegram::client::ClientSettings;
use crate::telegram::{BotToken, TelegramClient};
use crate::texts::{self, Lang};

mod cluster;
mod health;
mod options;
mod service;
mod startup;
mod webhook;

use health::Probe;
use webhook::{WebhookStatus, WebhookStop};

pub use options::{Environment, Options};
pub use service::run;
pub use startup::start;

/// A started docket: every loop running.
#[derive(Debug)]
pub struct Running {
    shutdown: Shutdown,
    poll_stop: CancellationToken,
    /// The senders' own shutdown: they outlive the workers' abort, so what is due (a result that
    /// became ready during the grace period) still goes out.
    senders_shutdown: Shutdown,
    workers: JoinSet<()>,
    senders: JoinSet<()>,
    store: Store,
    budget: Arc<Budget>,
    memory: Arc<MemoryBudget>,
    grace: Duration,
    /// Receives the error of a loop that stopped for good (taken once received).
    fatal: Option<oneshot::Receiver<anyhow::Error>>,
    /// The services' settings, which a reload replaces.
    live: LiveSettings,
    /// Beats whenever getUpdates answers.
    /// The poller's heartbeat, for `/healthz`; `None` in webhook mode.
    poller: Option<Arc<Heartbeat>>,
    /// Whether Telegram took the webhook, for `/healthz`; `None` in polling mode.
    webhook_status: Option<Arc<WebhookStatus>>,
    /// What a clean stop does with the webhook; `None` in polling mode.
    webhook_stop: Option<WebhookStop>,
    spool: Spool,
    options: Options,
    /// Cancelled when `docket drain` asks this node to stop.
    drain: CancellationToken,
}

/// The settings of every running service, each where the service reads it.
#[derive(Debug, Clone)]
struct LiveSettings {
    intake: Live<IntakeSettings>,
    outbox: Live<OutboxSettings>,
    pipeline: Live<PipelineSettings>,
    janitor: Live<JanitorSettings>,
}

impl Running {
    /// The store the loops use.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Resolves when `docket drain` asked this node to stop (seen at its heartbeat); whoever holds
    /// the `Running` then stops it as on SIGTERM.
    pub fn drain_requested(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.drain.clone().cancelled_owned()
    }

    /// Bytes of this process's byte budget reserved right now.
    pub fn reserved_bytes(&self) -> u64 {
        self.budget.in_use()
    }

    /// Stops in order: no new updates or claims, running work gets the grace period, then the
    /// rest is interrupted and released. The senders keep delivering what is due meanwhile, and
    /// for a few seconds after the workers are done; the whole stop takes at most the grace
    /// period plus [`SENDERS_AFTER_WORKERS`] (and whatever a database call in flight needs).
    /// Blocking work that cannot be interrupted (lopdf, a local copy) is left behind: its worker
    /// has already released the job, and the process's exit does not wait for it.
    pub async fn stop(mut self) {
        let deadline = tokio::time::Instant::now() + self.grace;
        // First, so Telegram keeps what comes meanwhile instead of posting to a closing listener.
        if let Some(webhook) = &self.webhook_stop {
            webhook.run().await;
        }
        self.poll_stop.cancel();
        self.shutdown.stop.cancel();
        if tokio::time::timeout_at(deadline, drain(&mut self.workers)).await.is_err() {
            warn!(grace_ms = self.grace.as_millis() as u64, "work still running after the grace period; releasing it");
            self.shutdown.abort.cancel();
            drain(&mut self.workers).await;
        }
        // The workers are done: the senders deliver what is due (results of work finished
        // during the grace period included), then stop.
        self.senders_shutdown.stop.cancel();
        let senders_deadline = deadline.max(tokio::time::Instant::now() + SENDERS_AFTER_WORKERS);
        if tokio::time::timeout_at(senders_deadline, drain(&mut self.senders)).await.is_err() {
            self.senders_shutdown.abort.cancel();
            drain(&mut self.senders).await;
        }
        self.store.close().await;
        info!("stopped");
    }

    /// Waits until a loop stops for good on something only a person can fix — polling, when the
    /// Bot API refuses the token — and returns why; pends forever otherwise. The other loops
    /// keep running until [`stop`](Self::stop). Cancel-safe, for a `select!` beside a signal.
    pub async fn failed(&mut self) -> anyhow::Error {
        if let Some(fatal) = self.fatal.as_mut() {
            let received = fatal.await;
            self.fatal = None;
            if let Ok(e) = received {
                return e;
            }
        }
        std::future::pending().await
    }

    /// Applies the reloadable part of `new` to the running services: the byte budget, limits,
    /// retention, the outbox's per-chat limits and attempts, access lists, worker leases and
    /// attempts, `[storage] min_free`, and the log's level and format. Work already under way
    /// finishes with the settings it started with. Returns the keys where `new` differs from
    /// `old`, the configuration the process started with, that take effect only after a
    /// restart (they keep their old values until then).
    pub fn reload(&self, old: &Config, new: &Config) -> Vec<&'static str> {
        self.budget.set_sizing(new.budget.bytes, new.budget.multiplier, new.budget.max_wait);
        let intake = self.live.intake.get();
        // Invite tokens come from the environment, which a reload does not re-read.
        let invites = intake.invites.clone();
        // So does the sealing key.
        let sealing = intake.sealing.clone();
        self.live.intake.set(IntakeSettings::from_config(
            new,
            intake.bot_id,
            intake.bot_username.clone(),
            &self.budget,
            invites,
            sealing,
        ));
        self.live.outbox.set(OutboxSettings::from_config(new, self.options.idle_poll, self.options.retry_base));
        self.live.pipeline.set(PipelineSettings::from_config(
            new,
            self.options.idle_poll,
            self.options.retry_base,
            self.options.program.clone(),
        ));
        self.live.janitor.set(JanitorSettings::from_config(new));
        crate::telemetry::apply(&new.log);
        needs_restart(old, new)
    }

    /// The endpoint's checks and database gauges for this docket.
    pub fn probe(&self, poll_timeout: Duration) -> Arc<dyn crate::telemetry::Probe> {
        Arc::new(Probe {
            store: self.store.clone(),
            data_dir: self.spool.root().to_path_buf(),
            pipeline: self.live.pipeline.clone(),
            budget: Arc::clone(&self.budget),
            memory: Arc::clone(&self.memory),
            poller: self.poller.clone(),
            poller_silence: 2 * poll_timeout,
            webhook: self.webhook_status.clone(),
            clock: Arc::clone(&self.options.clock),
        })
    }

    /// Drops every loop at once, as a crash would (tests of recovery).
    pub async fn kill(mut self) {
        self.workers.abort_all();
        self.senders.abort_all();
        drain(&mut self.workers).await;
        drain(&mut self.senders).await;
        self.store.close().await;
    }
}

/// How long the senders may still deliver after the workers stopped, when the grace period is
/// already over.
pub const SENDERS_AFTER_WORKERS: Duration = Duration::from_secs(5);

async fn drain(set: &mut JoinSet<()>) {
    while set.join_next().await.is_some() {}
}

/// Registers the command list with setMyCommands in every catalog language: English as the
/// default (no `language_code`), each other language under its code. A refusal or a silent Bot
/// API is logged and the bot runs on: the list only helps people type commands.
async fn register_commands(telegram: &TelegramClient) {
    for lang in Lang::all() {
        let code = (lang != Lang::ENGLISH).then(|| lang.code());
        match telegram.set_commands(&texts::command_list(lang), code.as_deref()).await {
            Ok(()) => debug!(language = %lang.code(), "registered the command list"),
            Err(e) => warn!(language = %lang.code(), error = %e, "could not register the command list (setMyCommands)"),
        }
    }
}

/// The keys that differ between `old` and `new` and are read only at start: where the data is,
/// how docket reaches Telegram, the listen address, the number of workers and senders, and the
/// global send rate (its limiter is built once).
pub fn needs_restart(old: &Config, new: &Config) -> Vec<&'static str> {
    // Each key is named once: its `[section] key` text is made from the field it compares.
    macro_rules! changed {
        ($($section:ident . $key:ident),* $(,)?) => {
            [$((concat!("[", stringify!($section), "] ", stringify!($key)), old.$section.$key != new.$section.$key)),*]
        };
    }
    let checks = changed![
        storage.database_url,
        storage.data_dir,
        metrics.listen,
        telegram.api_url,
        telegram.local_api,
        telegram.local_files_url,
        telegram.poll_timeout,
        telegram.mode,
        workers.download,
        workers.process,
        workers.shutdown_grace,
        outbox.senders,
        outbox.global_per_second,
    ];
    checks.into_iter().filter(|(_, changed)| *changed).map(|(key, _)| key).collect()
}

/// The Bot API client [`start`] talks through: `config`'s `[telegram]` section, and the answer
/// timeout of `options`.
pub fn telegram_client(config: &Config, token: BotToken, options: &Options) -> TelegramClient {
    TelegramClient::new(
        token,
        ClientSettings {
            api_url: config.telegram.api_url.clone(),
            local_api: config.telegram.local_api,
            poll_timeout: config.telegram.poll_timeout,
            answer_timeout: options.answer_timeout,
            local_files_url: config.telegram.local_files_url.clone(),
        },
    )
}

/// The download and processing stages' dependencies as [`start`] builds them around an open
/// store, data folder and client: fresh wake-ups, the byte budget of `[budget]` (which wakes the
/// downloads when it frees bytes), and the settings of `config` and `options`. Benchmarks run one
/// stage alone on them.
pub fn pipeline_deps(
    config: &Config,
    options: &Options,
    store: Store,
    spool: Spool,
    telegram: TelegramClient,
    sealing: SealingKey,
) -> PipelineDeps {
    let wake = Wakeups::default();
    let budget = Arc::new(Budget::new(
        config.budget.bytes,
        config.budget.multiplier,
        config.budget.max_wait,
        Arc::clone(&wake.downloads),
    ));
    let memory = Arc::new(MemoryBudget::new(config.budget.memory));
    PipelineDeps {
        memory,
        store,
        clock: Arc::clone(&options.clock),
        telegram,
        spool,
        settings: crate::runtime::Live::new(PipelineSettings::from_config(
            config,
            options.idle_poll,
            options.retry_base,
            options.program.clone(),
        )),
        wake,
        budget,
        sealing,
    }
}

/// The janitor's dependencies as [`start`] builds them: the settings of `config`, and `outbox`
/// to wake when a pass queues messages (results expired under the cap).
pub fn janitor_deps(
    config: &Config,
    options: &Options,
    store: Store,
    spool: Spool,
    outbox: Arc<Notify>,
) -> JanitorDeps {
    JanitorDeps {
        store,
        clock: Arc::clone(&options.clock),
        spool,
        settings: crate::runtime::Live::new(JanitorSettings::from_config(config)),
        outbox,
        node: cluster::ThisNode::name_of(config).as_str().to_owned(),
        disk: Arc::new(crate::janitor::DiskWatch::default()),
    }
}

/// The key that seals a decrypt's password in the database: derived from the secret in the
/// variable `[storage] secret_key_env` names, or else from the bot token.
pub fn sealing_key(config: &Config, env: &Environment, token: &BotToken) -> anyhow::Result<SealingKey> {
    let Some(name) = &config.storage.secret_key_env else { return Ok(SealingKey::derive(token.expose().as_bytes())) };
    match env.var(name).filter(|v| !v.is_empty()) {
        Some(secret) => Ok(SealingKey::derive(secret.as_bytes())),
        None => {
            anyhow::bail!("[storage] secret_key_env names {name}, but that environment variable is not set or empty")
        }
    }
}

/// The invite tokens from the environment variable `[access] invite_tokens_env` names (none
/// without it). A named variable that is missing or empty is an error: the admin meant invites.
fn invite_tokens(config: &Config, env: &Environment) -> anyhow::Result<crate::intake::InviteTokens> {
    let Some(name) = &config.access.invite_tokens_env else { return Ok(crate::intake::InviteTokens::default()) };
    let tokens = env.var(name).map(|v| crate::intake::InviteTokens::parse(&v)).unwrap_or_default();
    if tokens.is_empty() {
        anyhow::bail!("[access] invite_tokens_env names {name}, but that environment variable is not set or empty");
    }
    info!(tokens = tokens.len(), "invites are on");
    Ok(tokens)
}
