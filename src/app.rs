//! Wiring: opens the store and the data folder, builds the Bot API client, starts every loop
//! (polling intake, download pool, processing pool, outbox senders), and shuts them down in
//! order on SIGTERM/SIGINT: stop claiming, let running work finish within
//! `[workers] shutdown_grace`, then interrupt and release what is left so another process can
//! resume it at once.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::config::{BotToken, Config};
use crate::domain::JobState;
use crate::domain::{SharedClock, SystemClock};
use crate::intake::{Intake, IntakeSettings};
use crate::janitor::{JanitorDeps, JanitorSettings};
use crate::outbox::{GlobalLimit, OutboxDeps, OutboxSettings};
use crate::pipeline::budget::Budget;
use crate::pipeline::{PipelineDeps, PipelineSettings, Shutdown, Wakeups};
use crate::spool::Spool;
use crate::store::{JobFilter, Stage, Store};
use crate::telegram::client::ClientSettings;
use crate::telegram::polling::Poller;
use crate::telegram::{TelegramClient, TelegramError};

/// Knobs that are not configuration: time and polling pace (tests move them).
#[derive(Debug, Clone)]
pub struct Options {
    /// Where "now" comes from.
    pub clock: SharedClock,
    /// How often idle workers look for retries that came due.
    pub idle_poll: Duration,
    /// First retry delay of jobs and messages.
    pub retry_base: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self { clock: Arc::new(SystemClock), idle_poll: Duration::from_secs(1), retry_base: Duration::from_secs(2) }
    }
}

/// A started docket: every loop running.
#[derive(Debug)]
pub struct Running {
    shutdown: Shutdown,
    poll_stop: CancellationToken,
    senders_stop: CancellationToken,
    workers: JoinSet<()>,
    senders: JoinSet<()>,
    store: Store,
    grace: Duration,
}

impl Running {
    /// The store the loops use.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Stops in order: no new updates or claims, running work gets the grace period, then the
    /// rest is interrupted and released.
    pub async fn stop(mut self) {
        let deadline = tokio::time::Instant::now() + self.grace;
        self.poll_stop.cancel();
        self.shutdown.stop.cancel();
        if tokio::time::timeout_at(deadline, drain(&mut self.workers)).await.is_err() {
            warn!(grace_ms = self.grace.as_millis() as u64, "work still running after the grace period; releasing it");
            self.shutdown.abort.cancel();
            drain(&mut self.workers).await;
        }
        // The workers are done: the senders deliver what is due (results of work finished
        // during the grace period included), then stop.
        self.senders_stop.cancel();
        let senders_deadline = deadline.max(tokio::time::Instant::now() + Duration::from_secs(5));
        if tokio::time::timeout_at(senders_deadline, drain(&mut self.senders)).await.is_err() {
            self.shutdown.abort.cancel();
            drain(&mut self.senders).await;
        }
        self.store.close().await;
        info!("stopped");
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

async fn drain(set: &mut JoinSet<()>) {
    while set.join_next().await.is_some() {}
}

/// Opens everything and starts every loop.
pub async fn start(config: &Config, token: BotToken, options: Options) -> anyhow::Result<Running> {
    let spool = Spool::open(&config.storage.data_dir)?;
    let store = Store::open(&config.storage.database_url)
        .await
        .with_context(|| format!("while opening {}", config.storage.database_url.redacted()))?;
    let telegram = TelegramClient::new(
        token,
        ClientSettings {
            api_url: config.telegram.api_url.clone(),
            local_api: config.telegram.local_api,
            poll_timeout: config.telegram.poll_timeout,
            local_files_url: config.telegram.local_files_url.clone(),
        },
    );
    let bot_username = match telegram.get_me().await {
        Ok(name) => {
            info!(bot = %name, "connected to the Bot API");
            Some(name).filter(|n| !n.is_empty())
        }
        Err(TelegramError::Permanent(why)) => {
            anyhow::bail!("the Bot API refused the token ({why}); check TELOXIDE_TOKEN")
        }
        // Telegram may be briefly unreachable; the loops retry on their own.
        Err(e) => {
            warn!(error = %e, "the Bot API did not answer getMe; starting anyway");
            None
        }
    };

    let wake = Wakeups {
        downloads: Arc::new(Notify::new()),
        processing: Arc::new(Notify::new()),
        outbox: Arc::new(Notify::new()),
    };
    let budget = Arc::new(Budget::new(
        config.budget.bytes,
        config.budget.multiplier,
        config.budget.max_wait,
        Arc::clone(&wake.downloads),
    ));
    // Jobs whose files are still on this machine reserve again before anything new starts.
    for state in [JobState::Fetched, JobState::Processing] {
        let held = store
            .jobs(&JobFilter { chat: None, state: Some(state), limit: i64::MAX })
            .await
            .context("while reading jobs in flight")?;
        for job in held {
            budget.hold(job.ticket, job.real_size.and_then(|s| u64::try_from(s).ok()).unwrap_or(0));
        }
    }
    let intake = Intake::new(
        store.clone(),
        Arc::clone(&options.clock),
        IntakeSettings {
            bot_id: telegram.bot_id(),
            bot_username,
            access: config.access.clone(),
            download_limit: config.download_limit(),
            upload_limit: config.upload_limit(),
            result_ttl: config.retention.result_ttl,
            largest_source: budget.largest_source(),
            per_chat_queued: config.limits.per_chat_queued,
        },
        Arc::clone(&wake.downloads),
        Arc::clone(&wake.outbox),
    );
    let pipeline = PipelineDeps {
        store: store.clone(),
        clock: Arc::clone(&options.clock),
        telegram: telegram.clone(),
        spool: spool.clone(),
        settings: Arc::new(PipelineSettings::from_config(config, options.idle_poll, options.retry_base)),
        wake: wake.clone(),
        budget: Arc::clone(&budget),
    };
    let outbox = OutboxDeps {
        store: store.clone(),
        clock: Arc::clone(&options.clock),
        telegram: telegram.clone(),
        settings: Arc::new(OutboxSettings {
            limits: config.outbox,
            // A sender that dies mid-send holds its chat's queue until this lapses: keep it as
            // short as the job lease; long uploads renew it.
            lease: config.workers.lease,
            admins: config.access.admins.clone(),
            idle_poll: options.idle_poll,
            retry_base: options.retry_base,
            upload_limit: config.upload_limit(),
        }),
        wake: Arc::clone(&wake.outbox),
        global: Arc::new(GlobalLimit::new(config.outbox.global_per_second)),
    };

    let janitor = JanitorDeps {
        store: store.clone(),
        clock: Arc::clone(&options.clock),
        spool: spool.clone(),
        settings: Arc::new(JanitorSettings::from_config(config)),
        outbox: Arc::clone(&wake.outbox),
    };
    // A machine that crashed comes back clean: reconcile the folders with the database before
    // any worker runs.
    // If the database is busy right now, the periodic pass does the same work later; the janitor
    // never touches files of leased jobs, so starting the workers first is safe.
    if let Err(e) = crate::janitor::pass(&janitor, false).await {
        warn!(error = %e, "could not reconcile the data folder at startup; the next janitor pass will");
    }

    let shutdown = Shutdown::default();
    let poll_stop = CancellationToken::new();
    let mut workers = JoinSet::new();
    workers.spawn(Poller::new(telegram, store.clone(), intake).run(poll_stop.clone()));
    workers.spawn(crate::pipeline::run_pool(
        Stage::Download,
        config.workers.download,
        pipeline.clone(),
        shutdown.clone(),
    ));
    workers.spawn(crate::pipeline::run_pool(Stage::Process, config.workers.process, pipeline, shutdown.clone()));
    workers.spawn(crate::janitor::run(janitor, shutdown.stop.clone()));
    let senders_stop = CancellationToken::new();
    let mut senders = JoinSet::new();
    senders.spawn(crate::outbox::run(outbox, Shutdown { stop: senders_stop.clone(), abort: shutdown.abort.clone() }));
    info!(
        download_workers = config.workers.download,
        process_workers = config.workers.process,
        database = %config.storage.database_url.redacted(),
        "docket is running"
    );
    Ok(Running { shutdown, poll_stop, senders_stop, workers, senders, store, grace: config.workers.shutdown_grace })
}

/// `docket run`: starts, waits for SIGTERM or SIGINT, stops in order.
pub async fn run(config: &Config, token: BotToken) -> anyhow::Result<()> {
    if let Some(listen) = config.metrics.listen {
        crate::telemetry::serve_metrics(listen)?;
        info!(%listen, "serving metrics at /metrics");
    }
    let running = start(config, token, Options::default()).await?;
    shutdown_signal().await;
    info!("shutting down");
    running.stop().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            error!(error = %e, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = terminate => {}
    }
}
