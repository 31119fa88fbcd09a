//! [`start`]: opens the store and the data folder, checks the token, reserves what this host
//! still holds, reconciles its folders, and starts every loop in the order they depend on each
//! other (the update source, the pools and the janitor, then the senders, the relay and the
//! node's heartbeat, which stop last).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::{Notify, oneshot};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::cluster::{HeldRoles, ThisNode, poll_while_sole_poller, relay_changes};
use super::webhook::{self, WebhookStart, WebhookStatus, WebhookStop};
use super::{
    LiveSettings, Options, Running, invite_tokens, janitor_deps, pipeline_deps, register_commands, sealing_key,
    telegram_client,
};
use crate::config::{Config, UpdateMode};
use crate::domain::{JobState, NodeName};
use crate::intake::polling::Poller;
use crate::intake::{Intake, IntakeSettings};
use crate::janitor::JanitorDeps;
use crate::outbox::{GlobalLimit, OutboxDeps, OutboxSettings};
use crate::pipeline::PipelineDeps;
use crate::pipeline::budget::Budget;
use crate::runtime::{Heartbeat, Live, Shutdown, Wakeups};
use crate::spool::Spool;
use crate::store::{JobFilter, Role, Stage, Store};
use crate::telegram::{BotToken, TelegramClient, TelegramError};

/// Opens everything and starts every loop.
///
/// One sequence, kept whole because its order is the point: the token is checked before anything
/// is reserved, what this host holds is reserved and its folders reconciled before any worker
/// runs, and the loops start in the order they stop in reverse. Each step that is more than a
/// call is a function of its own below.
pub async fn start(config: &Config, token: BotToken, options: Options) -> anyhow::Result<Running> {
    let spool = Spool::open(&config.storage.data_dir)?;
    let node_name = ThisNode::name_of(config);
    // Everything this process does speaks for its node: the downloads it keeps are recorded as
    // this host's, and it processes and uploads only what is on its own disk.
    let store = Store::open(&config.storage.database_url)
        .await
        .with_context(|| format!("while opening {}", config.storage.database_url.redacted()))?
        .for_node(node_name.clone());
    let sealing = sealing_key(config, &options.environment, &token)?;
    let telegram = telegram_client(config, token, &options);
    let bot_username = check_the_token(&telegram).await?;

    let processing = &config.processing;
    crate::operations::announce_programs(&processing.tools(), &processing.soffice, processing.preview_renderer());
    crate::operations::confine::announce();
    let webhook = match config.telegram.mode {
        UpdateMode::Polling => None,
        UpdateMode::Webhook => Some(webhook::webhook_start(config, &options.environment).await?),
    };
    let pipeline = pipeline_deps(config, &options, store.clone(), spool.clone(), telegram.clone(), sealing.clone());
    let wake = pipeline.wake.clone();
    let budget = Arc::clone(&pipeline.budget);
    let memory = Arc::clone(&pipeline.memory);
    reserve_what_this_host_holds(&store, &budget, &node_name).await?;
    let intake = Intake::new(
        store.clone(),
        Arc::clone(&options.clock),
        IntakeSettings::from_config(
            config,
            telegram.bot_id(),
            bot_username,
            &budget,
            invite_tokens(config, &options.environment)?,
            sealing,
        ),
        Arc::clone(&wake.downloads),
        Arc::clone(&wake.outbox),
        Arc::clone(&wake.ended),
    );
    let outbox = outbox_deps(config, &options, store.clone(), telegram.clone(), Arc::clone(&wake.outbox));

    let roles = HeldRoles::default();
    let node = ThisNode::new(node_name, roles.clone(), Arc::clone(&budget), Arc::clone(&memory));
    let registered = node.register(&store, config.node.dead_after, &options.clock).await?;

    let janitor = janitor_deps(config, &options, store.clone(), spool.clone(), Arc::clone(&wake.outbox));
    // A machine that crashed comes back clean: reconcile the folders with the database before
    // any worker runs.
    // If the database is busy right now, the periodic pass does the same work later; the janitor
    // never touches files of leased jobs, so starting the workers first is safe.
    // Only this host's files: the bot-wide parts wait for the janitor role (its loop).
    if let Err(e) = crate::janitor::pass_parts(&janitor, crate::janitor::Parts::ThisHostOnly, false).await {
        warn!(error = %e, "could not reconcile the data folder at startup; the next janitor pass will");
    }

    let shutdown = Shutdown::default();
    let poll_stop = CancellationToken::new();
    let mut workers = JoinSet::new();
    let (report_fatal, fatal) = oneshot::channel();
    let live = LiveSettings {
        intake: intake.settings(),
        outbox: outbox.settings.clone(),
        pipeline: pipeline.settings.clone(),
        janitor: janitor.settings.clone(),
    };
    let webhook_stop =
        webhook.as_ref().map(|_| WebhookStop { telegram: telegram.clone(), delete: config.webhook.delete_on_stop });
    let source =
        UpdateSource { config, telegram: telegram.clone(), store: store.clone(), intake, roles: roles.clone() };
    let (poller_beat, webhook_status) = source.spawn(webhook, &poll_stop, report_fatal, &mut workers);
    spawn_pools_and_janitor(config, pipeline, janitor, telegram.bot_id(), &roles, &shutdown, &mut workers);
    let node_name = node.name.clone();
    let Senders { senders_shutdown, senders, drain } =
        Senders::spawn(outbox, wake, node, registered, config.node.dead_after, &options);
    info!(
        download_workers = config.workers.download,
        process_workers = config.workers.process,
        database = %config.storage.database_url.redacted(),
        node = %node_name,
        "docket is running"
    );
    Ok(Running {
        shutdown,
        poll_stop,
        senders_shutdown,
        workers,
        senders,
        store,
        budget,
        memory,
        grace: config.workers.shutdown_grace,
        fatal: Some(fatal),
        live,
        poller: poller_beat,
        webhook_status,
        webhook_stop,
        spool,
        options,
        drain,
    })
}

/// The outbox's dependencies as [`start`] builds them: the settings of `config` and `options`,
/// the bot-wide send limit of `[outbox] global_per_second`, and `wake` to sleep on.
fn outbox_deps(
    config: &Config,
    options: &Options,
    store: Store,
    telegram: TelegramClient,
    wake: Arc<Notify>,
) -> OutboxDeps {
    OutboxDeps {
        store,
        clock: Arc::clone(&options.clock),
        telegram,
        settings: Live::new(OutboxSettings::from_config(config, options.idle_poll, options.retry_base)),
        wake,
        global: Arc::new(GlobalLimit::new(config.outbox.global_per_second)),
    }
}

/// The loops that stop last, after the workers: the senders, the relay of change notices (it
/// wakes the senders too) and the node's heartbeat (it beats until the very end, then records
/// the clean stop).
struct Senders {
    /// Stops the senders and the relay.
    senders_shutdown: Shutdown,
    /// The senders, the relay and the heartbeat.
    senders: JoinSet<()>,
    /// Cancelled by `docket drain`: the heartbeat records the node as draining.
    drain: CancellationToken,
}

impl Senders {
    fn spawn(
        outbox: OutboxDeps,
        wake: Wakeups,
        node: ThisNode,
        registered: bool,
        dead_after: Duration,
        options: &Options,
    ) -> Self {
        let senders_shutdown = Shutdown::default();
        let mut senders = JoinSet::new();
        let store = outbox.store.clone();
        senders.spawn(crate::outbox::run(outbox, senders_shutdown.clone()));
        senders.spawn(relay_changes(store.clone(), wake, senders_shutdown.stop.clone()));
        let drain = CancellationToken::new();
        senders.spawn(node.beat_until(
            store,
            registered,
            dead_after,
            Arc::clone(&options.clock),
            drain.clone(),
            senders_shutdown.stop.clone(),
        ));
        Self { senders_shutdown, senders, drain }
    }
}

/// Asks getMe who the bot is, and registers its command list when the Bot API answers: the
/// bot's username (groups address it by name), `None` when the Bot API did not answer. A token
/// the Bot API refuses ends the start with an error that says so; a silent or failing Bot API
/// does not (Telegram may be briefly unreachable; the loops retry on their own).
async fn check_the_token(telegram: &TelegramClient) -> anyhow::Result<Option<String>> {
    match telegram.get_me().await {
        Ok(name) => {
            info!(bot = %name, "connected to the Bot API");
            // Only when the Bot API answers: a silent one would hold the start up for nothing.
            register_commands(telegram).await;
            Ok(Some(name).filter(|n| !n.is_empty()))
        }
        Err(e @ TelegramError::Unauthorized) => Err(anyhow::Error::new(e).context("while checking the token")),
        Err(e @ TelegramError::NotFound(_)) => {
            Err(anyhow::Error::new(e).context("while connecting to the Bot API (getMe)"))
        }
        Err(TelegramError::Permanent(why)) => {
            anyhow::bail!("the Bot API refused the token ({why}); check TELOXIDE_TOKEN")
        }
        Err(e) => {
            warn!(error = %e, "the Bot API did not answer getMe; starting anyway");
            Ok(None)
        }
    }
}

/// Jobs whose files are still on this machine (`fetched`, `processing`) reserve their place in
/// the byte budget again, before anything new starts.
async fn reserve_what_this_host_holds(store: &Store, budget: &Budget, node_name: &NodeName) -> anyhow::Result<()> {
    for state in [JobState::Fetched, JobState::Processing] {
        let held = store
            .jobs(&JobFilter { state: Some(state), limit: i64::MAX, ..JobFilter::default() })
            .await
            .context("while reading jobs in flight")?;
        // Only this node's: another host's jobs have their files, and their budget, there.
        for job in held.into_iter().filter(|job| job.node.as_ref().is_none_or(|node| node == node_name)) {
            // No download claim made this reservation (token 0): only the job's end gives it back.
            let size = job.source.as_ref().map_or(0, |s| u64::try_from(s.size).unwrap_or(0));
            budget.hold(job.ticket, 0, size);
        }
    }
    Ok(())
}

/// Where updates come from: the poller (while this process is the sole poller) or the webhook.
struct UpdateSource<'c> {
    config: &'c Config,
    telegram: TelegramClient,
    store: Store,
    intake: Intake,
    roles: HeldRoles,
}

impl UpdateSource<'_> {
    /// Starts polling, or (with `webhook`) setWebhook's retries and the webhook's server, on
    /// `workers`; an error that ends them for good goes to `report_fatal`. Returns the poller's
    /// heartbeat (polling) or the webhook's status (webhook), which `/healthz` reads: in webhook
    /// mode nothing polls.
    fn spawn(
        self,
        webhook: Option<WebhookStart>,
        poll_stop: &CancellationToken,
        report_fatal: oneshot::Sender<anyhow::Error>,
        workers: &mut JoinSet<()>,
    ) -> (Option<Arc<Heartbeat>>, Option<Arc<WebhookStatus>>) {
        let Self { config, telegram, store, intake, roles } = self;
        let Some(hook) = webhook else {
            let poller = Poller::new(telegram, store.clone(), intake);
            let beat = poller.heartbeat();
            let poller = poll_while_sole_poller(store, poller, roles, poll_stop.clone());
            workers.spawn(async move {
                if let Err(e) = poller.await {
                    // Whoever holds the `Running` (`run`) stops the rest in order.
                    let _ = report_fatal.send(anyhow::Error::new(e).context("while polling for updates"));
                }
            });
            return (Some(beat), None);
        };
        let status = Arc::new(WebhookStatus::default());
        workers.spawn(webhook::keep_setting(
            telegram.clone(),
            hook.url.clone(),
            hook.secret.clone(),
            config.webhook.max_connections,
            Arc::clone(&status),
            poll_stop.clone(),
        ));
        let server = crate::intake::webhook::serve(
            hook.listener,
            hook.url.path().to_owned(),
            intake,
            telegram,
            hook.secret,
            poll_stop.clone(),
        );
        workers.spawn(async move {
            if let Err(e) = server.await {
                let _ = report_fatal.send(anyhow::Error::new(e).context("while serving the webhook"));
            }
        });
        (None, Some(status))
    }
}

/// Starts the download and processing pools, the reaper of lost runs, and the janitor's loop
/// (which runs its bot-wide parts only while this process holds the janitor role).
fn spawn_pools_and_janitor(
    config: &Config,
    pipeline: PipelineDeps,
    janitor: JanitorDeps,
    bot: crate::domain::BotId,
    roles: &HeldRoles,
    shutdown: &Shutdown,
    workers: &mut JoinSet<()>,
) {
    workers.spawn(crate::pipeline::run_pool(
        Stage::Download,
        config.workers.download,
        pipeline.clone(),
        shutdown.clone(),
    ));
    workers.spawn(crate::pipeline::reap::run_reaper(pipeline.clone(), shutdown.stop.clone()));
    workers.spawn(crate::pipeline::run_pool(Stage::Process, config.workers.process, pipeline, shutdown.clone()));
    let janitor_role = roles.clone();
    workers.spawn(crate::janitor::run(
        janitor,
        bot,
        move |held| janitor_role.set(Role::Janitor, held),
        shutdown.stop.clone(),
    ));
}
