//! `docket run`: docket as a service. Holds the database's run lock, binds the metrics
//! endpoint, [`start`]s, then waits: SIGTERM, SIGINT or `docket drain` stop it in
//! order ([`Running::stop`]), and so does polling that ended for good, whose error `run` then
//! returns.
//!
//! Under systemd, `run` reports readiness once the migrations and the startup janitor pass are
//! done, sends watchdog keep-alives from its main loop, and on SIGHUP reads the configuration
//! again and hands each service its new settings ([`Running::reload`]); a file with a problem
//! is refused and the running settings stay.

use std::time::Duration;

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::{Options, Running, start};
use crate::config::Config;
use crate::domain::{Clock, SystemClock};
use crate::store::RunLock;
use crate::telegram::BotToken;

/// `docket run`: starts, waits for SIGTERM or SIGINT, stops in order.
///
/// # Errors
///
/// Starting fails, or polling stopped for good (the Bot API refused the token): then the bot
/// stops in order as on SIGTERM, and the error says why.
pub async fn run(config: &Config, config_path: Option<&std::path::Path>, token: BotToken) -> anyhow::Result<()> {
    // Held until this function returns: one `docket run` per SQLite database.
    let _sole_runner = RunLock::acquire(&config.storage.database_url, SystemClock.now())?;
    crate::telemetry::apply(&config.log);
    // Bound before anything starts, so a taken address fails the start, not a scrape.
    let endpoint = match config.metrics.listen {
        Some(listen) => Some((
            tokio::net::TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on [metrics] listen = {listen}"))?,
            crate::telemetry::install_recorder()?,
        )),
        None => None,
    };
    // Listened for before anything starts: a SIGHUP during the start is a reload once it is done,
    // and a SIGTERM or SIGINT a clean stop, never the default action (ending the process).
    let mut hangup = hangups()?;
    let shutdown = shutdown_signals()?;
    let mut running = start(config, token, Options::default()).await?;
    let endpoint_stop = CancellationToken::new();
    if let Some((listener, metrics)) = endpoint {
        let addr = listener.local_addr().ok();
        let endpoint = crate::telemetry::Endpoint { metrics, probe: running.probe(config.telegram.poll_timeout) };
        tokio::spawn(crate::telemetry::serve(listener, endpoint, endpoint_stop.clone()));
        info!(listen = ?addr, "serving /metrics and /healthz");
    }
    // Migrations and the startup janitor pass are done (`start`): systemd may go on.
    notify(&[sd_notify::NotifyState::Ready]);
    let mut watchdog = watchdog_ticker();
    tokio::pin!(shutdown);
    let drained = running.drain_requested();
    tokio::pin!(drained);
    let fatal = loop {
        let event = tokio::select! {
            () = &mut shutdown => Event::Stop,
            () = &mut drained => Event::Stop,
            e = running.failed() => Event::Failed(e),
            _ = hangup.recv() => Event::Reload,
            _ = watchdog.tick() => Event::KeepAlive,
        };
        match event {
            Event::Stop => break None,
            Event::Failed(e) => break Some(e),
            Event::KeepAlive => notify(&[sd_notify::NotifyState::Watchdog]),
            Event::Reload => {
                notify(&[sd_notify::NotifyState::Reloading, monotonic_now()]);
                reload(&running, config, config_path);
                notify(&[sd_notify::NotifyState::Ready]);
            }
        }
    };
    notify(&[sd_notify::NotifyState::Stopping]);
    match &fatal {
        None => info!("shutting down"),
        Some(e) => info!(reason = %format!("{e:#}"), "shutting down: polling cannot go on"),
    }
    running.stop().await;
    endpoint_stop.cancel();
    fatal.map_or(Ok(()), Err)
}

/// What the main loop of [`run`] reacts to.
enum Event {
    Stop,
    Failed(anyhow::Error),
    Reload,
    KeepAlive,
}

/// Reads the configuration again (SIGHUP) and applies it, or keeps the settings in force when
/// the new file is invalid. The keys that need a restart are named against `started`, the
/// configuration the process started with, which is what those keys still follow.
fn reload(running: &Running, started: &Config, path: Option<&std::path::Path>) {
    info!("SIGHUP: reading the configuration again");
    let new = match Config::load(path) {
        Ok(new) => new,
        Err(e) => {
            error!(error = %e, "the new configuration is refused; the running one stays");
            return;
        }
    };
    let restart = running.reload(started, &new);
    if restart.is_empty() {
        info!("configuration reloaded");
    } else {
        warn!(keys = %restart.join(", "), "configuration reloaded; these changes need a restart to take effect");
    }
}

/// SIGHUP (`systemctl reload`, a closed terminal): a stream of them.
#[cfg(unix)]
fn hangups() -> anyhow::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).context("cannot listen for SIGHUP")
}

/// Ticks at half systemd's watchdog interval (`WATCHDOG_USEC`), or never without a watchdog.
fn watchdog_ticker() -> tokio::time::Interval {
    let period = sd_notify::watchdog_enabled().map_or(Duration::from_secs(u64::from(u32::MAX)), |limit| limit / 2);
    tokio::time::interval(period.max(Duration::from_millis(100)))
}

fn monotonic_now() -> sd_notify::NotifyState<'static> {
    sd_notify::NotifyState::monotonic_usec_now().unwrap_or(sd_notify::NotifyState::Custom("MONOTONIC_USEC=0"))
}

/// Tells systemd (`NOTIFY_SOCKET`) how docket is; nothing without systemd.
fn notify(state: &[sd_notify::NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(state) {
        warn!(error = %e, "cannot notify systemd");
    }
}

/// SIGTERM (`systemctl stop`) and SIGINT (Ctrl-C), listened for from now on: resolves at the
/// first of either.
fn shutdown_signals() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}
