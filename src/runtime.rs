//! What every long-running loop shares: how it is told to stop ([`Shutdown`]), how it is woken
//! ([`Wakeups`]), where it reads settings that a reload may replace ([`Live`]), pools of named
//! workers ([`run_pool`]), and the heartbeat that keeps a lease ([`keep_lease`]).
//!
//! The pipeline's download and processing pools and the outbox's senders are all pools of one
//! loop: register for wake-ups, claim, work on the claimed item in a span of its own, back off
//! when claiming fails, sleep until woken or until the idle wait ends. Only what a worker does
//! with an item, and how long it may sleep, differs; [`Worker`] states those parts.
//!
//! This module knows nothing of jobs, messages or Telegram. It sits below the services and above
//! the domain.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument as _, error, info, warn};

use crate::domain::retry::backoff_jittered;
use crate::domain::{SharedClock, Timestamp};

/// How loops are told to stop: first `stop` (claim nothing new, finish what is running), then,
/// after the grace period, `abort` (interrupt and release what is still running).
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    /// Stop claiming.
    pub stop: CancellationToken,
    /// Interrupt running work.
    pub abort: CancellationToken,
}

/// Settings that a reload (SIGHUP) may replace while the loops run. Cheap to clone: every clone
/// sees the same current value. A loop reads [`get`](Self::get) where it uses a setting, so the
/// next claim, send or pass after [`set`](Self::set) follows the new value; work already under
/// way finishes with the value it started with.
#[derive(Debug)]
pub struct Live<T>(Arc<arc_swap::ArcSwap<T>>);

impl<T> Clone for Live<T> {
    fn clone(&self) -> Self {
        Self(Arc::clone(&self.0))
    }
}

impl<T> Live<T> {
    /// Starts with `value`.
    pub fn new(value: T) -> Self {
        Self(Arc::new(arc_swap::ArcSwap::from_pointee(value)))
    }

    /// The current value.
    pub fn get(&self) -> Arc<T> {
        self.0.load_full()
    }

    /// Replaces the value for every clone.
    pub fn set(&self, value: T) {
        self.0.store(Arc::new(value));
    }
}

/// When a loop last showed it is alive (the poller: when getUpdates last answered). Starts at
/// its creation.
#[derive(Debug)]
pub struct Heartbeat(std::sync::Mutex<std::time::Instant>);

impl Default for Heartbeat {
    fn default() -> Self {
        Self(std::sync::Mutex::new(std::time::Instant::now()))
    }
}

impl Heartbeat {
    /// Records a sign of life now.
    pub fn beat(&self) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = std::time::Instant::now();
    }

    /// How long since the last sign of life.
    pub fn silent_for(&self) -> Duration {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).elapsed()
    }
}

/// Wakes sleeping workers when something becomes claimable.
#[derive(Debug, Clone, Default)]
pub struct Wakeups {
    /// A job became `accepted`.
    pub downloads: Arc<Notify>,
    /// A job became `fetched`.
    pub processing: Arc<Notify>,
    /// A message was queued.
    pub outbox: Arc<Notify>,
    /// Jobs were ended from outside the pipeline (cancelled, forgotten): their files can go.
    pub ended: Arc<Notify>,
}

/// A worker's name, in leases and logs: `<host>:<pid>:<role>-<n>`. Every lease of this process
/// starts with [`WorkerId::process_prefix`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkerId(String);

impl WorkerId {
    /// Worker `n` of the pool `role` of this process.
    pub fn new(role: &str, n: usize) -> Self {
        Self(format!("{}{role}-{n}", Self::process_prefix()))
    }

    /// What every worker id of this process starts with: `<host>:<pid>:`.
    pub fn process_prefix() -> String {
        format!("{}:{}:", hostname(), std::process::id())
    }

    /// The id as stored in `lease_owner`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for WorkerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The machine's name, from uname(2): the systemd unit's `ProcSubset=pid` hides
/// `/proc/sys/kernel/hostname`.
#[cfg(target_os = "linux")]
fn hostname() -> String {
    let name = rustix::system::uname().nodename().to_string_lossy().trim().to_owned();
    if name.is_empty() { "host".to_owned() } else { name }
}

#[cfg(not(target_os = "linux"))]
fn hostname() -> String {
    "host".to_owned()
}

/// When a pool's loops end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drain {
    /// At `stop`: claim nothing more; an item in progress runs on until `abort` (the pipeline).
    AtStop,
    /// After `stop`, once nothing is claimable; at `abort` at once (the outbox delivers what is
    /// due before it ends).
    WhenIdleAfterStop,
}

/// What one worker of a pool does; the loop around it is [`run_pool`]'s.
pub trait Worker: Clone + Send + Sync + 'static {
    /// What a claim hands over.
    type Item: Send;
    /// What a failed claim reports (logged, then backed off).
    type Error: std::fmt::Display + Send;

    /// The pool's role in worker ids and logs (`download`, `process`, `sender`).
    fn role(&self) -> &'static str;

    /// Notified when something may have become claimable.
    fn wakeup(&self) -> Arc<Notify>;

    /// Claims the next item for `worker`, if there is one.
    fn claim(&self, worker: &WorkerId) -> impl Future<Output = Result<Option<Self::Item>, Self::Error>> + Send;

    /// The span an item's work runs in (it carries the item's ids).
    fn span(&self, worker: &WorkerId, item: &Self::Item) -> tracing::Span;

    /// Works on one claimed item to its end; `abort` means stop now and give the item back.
    fn work(&self, worker: &WorkerId, item: Self::Item, abort: &CancellationToken) -> impl Future<Output = ()> + Send;

    /// How long an idle worker sleeps before it looks again without being woken.
    fn idle_wait(&self) -> impl Future<Output = Duration> + Send;
}

/// Runs `size` copies of `worker`'s loop until `shutdown` ends them (see [`Drain`]).
pub async fn run_pool<W: Worker>(worker: W, size: usize, drain: Drain, shutdown: Shutdown) {
    let mut loops = JoinSet::new();
    for n in 0..size {
        let id = WorkerId::new(worker.role(), n);
        loops.spawn(run_loop(worker.clone(), id, drain, shutdown.clone()));
    }
    while let Some(res) = loops.join_next().await {
        if let Err(e) = res {
            error!(error = %e, role = worker.role(), "a worker stopped unexpectedly");
        }
    }
}

async fn run_loop<W: Worker>(worker: W, id: WorkerId, drain: Drain, shutdown: Shutdown) {
    let mut errors = 0u32;
    let wakeup = worker.wakeup();
    loop {
        let ended = match drain {
            Drain::AtStop => shutdown.stop.is_cancelled(),
            Drain::WhenIdleAfterStop => shutdown.abort.is_cancelled(),
        };
        if ended {
            break;
        }
        // Register interest before looking, so a wake-up between the claim and the wait is kept.
        let notified = wakeup.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        match worker.claim(&id).await {
            Ok(Some(item)) => {
                errors = 0;
                let span = worker.span(&id, &item);
                match drain {
                    Drain::AtStop => worker.work(&id, item, &shutdown.abort).instrument(span).await,
                    Drain::WhenIdleAfterStop => tokio::select! {
                        () = worker.work(&id, item, &shutdown.abort).instrument(span) => {}
                        () = shutdown.abort.cancelled() => break,
                    },
                }
                continue;
            }
            Ok(None) if drain == Drain::WhenIdleAfterStop && shutdown.stop.is_cancelled() => break,
            Ok(None) => errors = 0,
            Err(e) => {
                errors += 1;
                error!(error = %e, worker = %id, "cannot claim work");
            }
        }
        let wait = if errors > 0 {
            backoff_jittered(errors, Duration::from_millis(200), Duration::from_secs(10))
        } else {
            worker.idle_wait().await
        };
        let stopped = async {
            match drain {
                Drain::AtStop => shutdown.stop.cancelled().await,
                Drain::WhenIdleAfterStop => shutdown.abort.cancelled().await,
            }
        };
        tokio::select! {
            () = stopped => break,
            // Woken early to drain what is due, then stop.
            () = shutdown.stop.cancelled(), if drain == Drain::WhenIdleAfterStop => {}
            () = &mut notified => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// Why a lease heartbeat ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseLost {
    /// The store says another holder has it now.
    TakenOver,
    /// The store could not be reached until the lease ran out: someone else may hold it.
    Lapsed,
}

/// What a lease holder does when the database cannot be reached until its lease runs out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenUnreachable {
    /// Stop ([`LeaseLost::Lapsed`]): for work that must never run twice at once, such as a send,
    /// whose second copy would reach the person.
    Stop,
    /// Work on and keep trying to renew: for work whose every write is fenced by the lease token
    /// (a download, a processing run), so that an outage longer than the lease does not throw
    /// away a 2 GB download or a long OCR run. Only a renewal that answers that the lease is
    /// someone else's stops it.
    WorkOn,
}

/// How often a renewal is tried again once the lease has run out and the holder works on.
const RENEW_AFTER_OUTAGE_EVERY: Duration = Duration::from_millis(500);

/// Renews a lease of length `lease` every third of it with `renew` (which returns whether the
/// lease is still held, given the new deadline and now), until the lease is lost; then returns
/// why. Run it beside the work it protects and drop the work when it returns. `until` is the
/// lease's current deadline. A renewal that fails is tried again while the last good deadline
/// has not passed; one that hangs is given up on at that deadline (with half a second's grace
/// for a renewal that only starts then, e.g. after waiting for a send slot). Past the deadline,
/// `unreachable` says whether to stop or to work on, renewing every half second until the
/// database answers.
pub async fn keep_lease<F, Fut, E>(
    lease: Duration,
    clock: SharedClock,
    mut until: Timestamp,
    unreachable: WhenUnreachable,
    mut renew: F,
) -> LeaseLost
where
    F: FnMut(Timestamp, Timestamp) -> Fut,
    Fut: Future<Output = Result<bool, E>>,
    E: std::fmt::Display,
{
    let mut working_on = false;
    loop {
        // A third of a lease after the last renewal, or when the lease ends if that is sooner.
        let wait = (lease / 3).min(clock.now().until(until));
        tokio::time::sleep(if working_on { RENEW_AFTER_OUTAGE_EVERY } else { wait }).await;
        let now = clock.now();
        let patience = now.until(until).max(Duration::from_millis(500));
        let error = match tokio::time::timeout(patience, renew(now.plus(lease), now)).await {
            Ok(Ok(true)) => {
                if working_on {
                    info!("renewed the lease after the database came back; the work went on meanwhile");
                    working_on = false;
                }
                until = now.plus(lease);
                continue;
            }
            Ok(Ok(false)) => return LeaseLost::TakenOver,
            Ok(Err(e)) if clock.now() < until => {
                warn!(error = %e, "could not renew the lease; will try again");
                continue;
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => "no answer in time".to_owned(),
        };
        match unreachable {
            // Past our deadline someone else may hold it: stop before we collide.
            WhenUnreachable::Stop => {
                warn!(error, "the lease ran out while the database was unreachable");
                return LeaseLost::Lapsed;
            }
            WhenUnreachable::WorkOn if !working_on => {
                warn!(error, "the lease ran out while the database was unreachable; working on until it answers");
                working_on = true;
            }
            WhenUnreachable::WorkOn => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::domain::ManualClock;

    /// [`keep_lease`] of a 3 s lease, taken at 0 on a clock of its own that `renew` may advance.
    async fn keep_three_seconds<F, Fut, E>(clock: Arc<ManualClock>, unreachable: WhenUnreachable, renew: F) -> LeaseLost
    where
        F: FnMut(Timestamp, Timestamp) -> Fut,
        Fut: Future<Output = Result<bool, E>>,
        E: std::fmt::Display,
    {
        keep_lease(Duration::from_secs(3), clock, Timestamp::from_millis(3_000), unreachable, renew).await
    }

    fn clock_at_zero() -> Arc<ManualClock> {
        Arc::new(ManualClock::new(Timestamp::from_millis(0)))
    }

    #[test]
    fn worker_ids_carry_host_pid_and_role() {
        let id = WorkerId::new("download", 3);
        assert!(id.as_str().starts_with(&WorkerId::process_prefix()), "{id}");
        assert!(id.as_str().ends_with(":download-3"), "{id}");
        assert!(WorkerId::process_prefix().contains(&format!(":{}:", std::process::id())));
    }

    #[tokio::test(start_paused = true)]
    async fn a_lease_is_kept_until_the_store_says_it_is_taken() {
        let clock = clock_at_zero();
        let renewals = AtomicU32::new(0);
        let lost = keep_three_seconds(clock, WhenUnreachable::Stop, |_, _| {
            let n = renewals.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, String>(n < 2) }
        })
        .await;
        assert_eq!((lost, renewals.load(Ordering::SeqCst)), (LeaseLost::TakenOver, 3));
    }

    #[tokio::test(start_paused = true)]
    async fn store_errors_are_retried_until_the_lease_runs_out() {
        let clock = clock_at_zero();
        let attempts = AtomicU32::new(0);
        let lost = keep_three_seconds(clock.clone(), WhenUnreachable::Stop, |_, _| {
            attempts.fetch_add(1, Ordering::SeqCst);
            // The store is down; time passes.
            clock.advance(Duration::from_secs(1));
            async { Err::<bool, _>("database unreachable") }
        })
        .await;
        assert_eq!(lost, LeaseLost::Lapsed);
        assert_eq!(attempts.load(Ordering::SeqCst), 3, "tried at 0, 1 and 2 s; the lease ended at 3 s");
    }

    #[tokio::test(start_paused = true)]
    async fn a_renewal_that_hangs_past_the_deadline_loses_the_lease() {
        let clock = clock_at_zero();
        let lost =
            keep_three_seconds(clock, WhenUnreachable::Stop, |_, _| std::future::pending::<Result<bool, String>>())
                .await;
        assert_eq!(lost, LeaseLost::Lapsed);
    }

    #[tokio::test(start_paused = true)]
    async fn work_fenced_by_its_lease_goes_on_through_an_outage_until_the_lease_is_someone_elses() {
        let clock = clock_at_zero();
        let attempts = AtomicU32::new(0);
        let lost = keep_three_seconds(clock.clone(), WhenUnreachable::WorkOn, |_, _| {
            let n = attempts.fetch_add(1, Ordering::SeqCst);
            clock.advance(Duration::from_secs(1));
            async move {
                match n {
                    // Ten seconds without a database: over three times the lease.
                    0..10 => Err("database unreachable"),
                    // It is back, and the lease is still this holder's; then it is not.
                    10..12 => Ok(true),
                    _ => Ok(false),
                }
            }
        })
        .await;
        assert_eq!(lost, LeaseLost::TakenOver);
        assert_eq!(attempts.load(Ordering::SeqCst), 13);
    }

    #[tokio::test(start_paused = true)]
    async fn work_fenced_by_its_lease_goes_on_while_renewals_hang() {
        let clock = clock_at_zero();
        let attempts = AtomicU32::new(0);
        let kept = tokio::time::timeout(
            Duration::from_secs(60),
            keep_three_seconds(clock, WhenUnreachable::WorkOn, |_, _| {
                attempts.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<Result<bool, String>>()
            }),
        )
        .await;
        assert!(kept.is_err(), "still working after a minute of silence: {kept:?}");
        assert!(attempts.load(Ordering::SeqCst) > 10, "and still trying to renew");
    }
}
