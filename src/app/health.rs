//! What `/healthz` checks and what `/metrics` reads at each scrape, for one running docket.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tracing::warn;

use crate::domain::{Clock as _, SharedClock, SystemClock, Timestamp};
use crate::pipeline::PipelineSettings;
use crate::pipeline::budget::Budget;
use crate::pipeline::memory::MemoryBudget;
use crate::runtime::{Heartbeat, Live};
use crate::store::Store;

/// How long `/healthz` and `/metrics` wait for the database: a monitor's check must get an answer
/// (503) even while a database call would hang until the pool's own 30 s timeout.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// How far this host's clock may be from the database's before `/healthz` says so. Every
/// lease and heartbeat is written in this host's time and read in the others': NTP keeps
/// clocks within milliseconds, and a skew of seconds makes another host take a lease early or
/// count a live host as dead.
pub const CLOCK_SKEW_LIMIT: Duration = Duration::from_secs(1);

/// What `/healthz` checks and what `/metrics` reads from the database.
pub(super) struct Probe {
    pub(super) store: Store,
    pub(super) data_dir: std::path::PathBuf,
    pub(super) pipeline: Live<PipelineSettings>,
    pub(super) budget: Arc<Budget>,
    pub(super) memory: Arc<MemoryBudget>,
    /// The poller's heartbeat; `None` in webhook mode, where nothing polls.
    pub(super) poller: Option<Arc<Heartbeat>>,
    pub(super) poller_silence: Duration,
    /// Whether Telegram took the webhook; `None` in polling mode.
    pub(super) webhook: Option<Arc<super::WebhookStatus>>,
    /// The clock leases and heartbeats are written with.
    pub(super) clock: SharedClock,
}

impl Probe {
    /// How far this host's clock is ahead of the database server's (behind: negative), in
    /// seconds, with the query's round trip halved; `None` on SQLite (one machine, one clock)
    /// or when the database does not answer in time.
    async fn clock_skew(&self) -> Option<f64> {
        let before = self.clock.now();
        let database = tokio::time::timeout(PROBE_TIMEOUT, self.store.database_time()).await.ok()?.ok()??;
        let after = self.clock.now();
        let here = Timestamp::from_millis(before.as_millis() + (after.as_millis() - before.as_millis()) / 2);
        Some((here.as_millis() - database.as_millis()) as f64 / 1000.0)
    }
}

impl crate::telemetry::Probe for Probe {
    fn refresh(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            metrics::gauge!("docket_budget_bytes").set(self.budget.capacity() as f64);
            metrics::gauge!("docket_budget_reserved_bytes").set(self.budget.in_use() as f64);
            metrics::gauge!("docket_memory_budget_bytes").set(self.memory.capacity() as f64);
            metrics::gauge!("docket_memory_budget_reserved_bytes").set(self.memory.in_use() as f64);
            if let Ok(free) = fs4::available_space(&self.data_dir) {
                metrics::gauge!("docket_data_free_bytes").set(free as f64);
                let low = free < self.pipeline.get().min_free;
                metrics::gauge!("docket_data_folder_low").set(f64::from(u8::from(low)));
            }
            let census = match tokio::time::timeout(PROBE_TIMEOUT, self.store.census()).await {
                Ok(Ok(census)) => census,
                Ok(Err(e)) => {
                    warn!(error = %e, "cannot read the job counts for the metrics");
                    return;
                }
                Err(_) => {
                    warn!(
                        timeout_s = PROBE_TIMEOUT.as_secs(),
                        "the database did not answer the metrics' counts in time"
                    );
                    return;
                }
            };
            for (state, n) in census.jobs {
                metrics::gauge!("docket_jobs", "state" => state.as_str()).set(n as f64);
            }
            for (state, n) in census.messages {
                metrics::gauge!("docket_outbox_messages", "state" => state.as_str()).set(n as f64);
            }
            metrics::gauge!("docket_dead_chats").set(census.dead_chats as f64);
            if let Some(skew) = self.clock_skew().await {
                metrics::gauge!("docket_clock_skew_seconds").set(skew);
            }
            let now = SystemClock.now();
            let age = census.oldest_waiting.map_or(Duration::ZERO, |since| since.until(now));
            metrics::gauge!("docket_oldest_waiting_job_seconds").set(age.as_secs_f64());
        })
    }

    fn problems(&self) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async move {
            let mut problems = Vec::new();
            match tokio::time::timeout(PROBE_TIMEOUT, self.store.census()).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => problems.push(format!("database unreachable: {e}")),
                Err(_) => problems.push(format!("database unreachable: no answer within {}s", PROBE_TIMEOUT.as_secs())),
            }
            let data_dir = self.data_dir.clone();
            let writable = tokio::task::spawn_blocking(move || tempfile::tempfile_in(&data_dir).map(drop)).await;
            match writable {
                Ok(Ok(())) => {}
                Ok(Err(e)) => problems.push(format!("data folder {} not writable: {e}", self.data_dir.display())),
                Err(e) => problems.push(format!("data folder check failed: {e}")),
            }
            let min_free = self.pipeline.get().min_free;
            if let Ok(free) = fs4::available_space(&self.data_dir)
                && free < min_free
            {
                problems.push(format!("free space {free} bytes, below [storage] min_free ({min_free} bytes)"));
            }
            if let Some(silent) = self.poller.as_ref().map(|beat| beat.silent_for())
                && silent > self.poller_silence
            {
                problems.push(format!(
                    "the poller has had no answer from getUpdates for {}s (more than twice [telegram] poll_timeout)",
                    silent.as_secs()
                ));
            }
            if let Some(Err(why)) = self.webhook.as_ref().map(|status| status.get()) {
                problems.push(why);
            }
            if let Some(skew) = self.clock_skew().await
                && skew.abs() > CLOCK_SKEW_LIMIT.as_secs_f64()
            {
                let why = format!(
                    "this host's clock is {:.1}s {} the database's: leases and heartbeats are written in this \
                     host's time and read in the others' (keep the clocks in step with NTP)",
                    skew.abs(),
                    if skew > 0.0 { "ahead of" } else { "behind" }
                );
                warn!(skew_s = skew, "{why}");
                problems.push(why);
            }
            problems
        })
    }
}
